//! Broker configuration: Kafka's property names, from a properties file, `SAMSA_*` environment
//! variables and `--key=value` flags (later sources win). Unknown keys and unparsable values
//! are refused at start with a message naming the key.

pub mod client_metrics;
pub mod connection_limits;
pub mod defs;
pub mod dynamic;
pub mod group;
pub mod listeners;
pub mod loggers;
pub mod topic;
pub mod validator;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use defs::{ConfigDef, ConfigType};

/// Where a broker value came from (DescribeConfigs' `config_source`), highest priority first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Set dynamically for this broker (AlterConfigs on resource name = node id, KIP-226).
    DynamicBroker,
    /// Set dynamically as the cluster-wide default (AlterConfigs on resource name "").
    DynamicDefault,
    /// Set in the properties file, the environment or a flag.
    Static,
    /// Kafka's (or Samsa's) default.
    Default,
}

impl Source {
    /// Every source, in Kafka's order of precedence (and of DescribeConfigs' synonyms).
    pub const PRECEDENCE: [Source; 4] = [
        Source::DynamicBroker,
        Source::DynamicDefault,
        Source::Static,
        Source::Default,
    ];

    /// DescribeConfigs' `config_source` code (Kafka's `ConfigSource`).
    pub fn code(self) -> i8 {
        match self {
            Source::DynamicBroker => topic::source_code::DYNAMIC_BROKER_CONFIG,
            Source::DynamicDefault => topic::source_code::DYNAMIC_DEFAULT_BROKER_CONFIG,
            Source::Static => topic::source_code::STATIC_BROKER_CONFIG,
            Source::Default => topic::source_code::DEFAULT_CONFIG,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown configuration key '{key}' (from {origin})")]
    Unknown { key: String, origin: String },
    #[error("{message} (from {origin})")]
    Invalid { message: String, origin: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One listener: `NAME://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl Listener {
    pub fn parse(s: &str) -> Result<Listener, String> {
        let (name, rest) = s
            .split_once("://")
            .ok_or_else(|| format!("listener '{s}' is not NAME://host:port"))?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("listener '{s}' has no port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("listener '{s}' has an invalid port"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        Ok(Listener {
            name: name.to_string(),
            host,
            port,
        })
    }

    pub fn socket_addr(&self) -> Result<SocketAddr, String> {
        let host = if self.host.is_empty() {
            "0.0.0.0"
        } else {
            self.host.as_str()
        };
        use std::net::ToSocketAddrs;
        (host, self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve listener host '{host}': {e}"))?
            .next()
            .ok_or_else(|| format!("listener host '{host}' resolves to nothing"))
    }
}

/// The broker's configuration: the static keys (file, environment, flags) and, in the
/// effective configuration that `config::dynamic::DynamicConfigs` keeps, the dynamic layers
/// above them. A value is looked up in Kafka's order: dynamic per-broker, dynamic cluster-wide
/// default, static, default.
#[derive(Debug, Clone, Default)]
pub struct BrokerConfig {
    /// Keys set explicitly, with the origin that set them last.
    explicit: BTreeMap<String, (String, String)>,
    /// Dynamic configs of this broker (empty in the static configuration).
    dynamic_broker: BTreeMap<String, String>,
    /// Dynamic cluster-wide defaults (empty in the static configuration).
    dynamic_default: BTreeMap<String, String>,
    /// Keys Kafka 4 removed that the static sources set, with where (`defs::RETIRED_BROKER_CONFIGS`).
    retired: Vec<(String, String)>,
}

impl BrokerConfig {
    /// Builds the configuration from its three sources, in increasing priority.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: impl IntoIterator<Item = (String, String)>,
    ) -> Result<BrokerConfig, ConfigError> {
        BrokerConfig::load_over(&[], "", file, env, flags)
    }

    /// [`BrokerConfig::load`] over a layer of presets below the three sources, set from
    /// `origin` (`samsa dev`'s settings: any source may override each).
    pub fn load_over(
        presets: &[(&str, String)],
        origin: &str,
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: impl IntoIterator<Item = (String, String)>,
    ) -> Result<BrokerConfig, ConfigError> {
        let mut cfg = BrokerConfig::default();
        for (key, value) in presets {
            cfg.set(key, value, origin)?;
        }
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            for (lineno, key, value) in parse_properties(&text) {
                cfg.set(&key, &value, &format!("{}:{}", path.display(), lineno))?;
            }
        }
        for (name, value) in env {
            if let Some(rest) = name.strip_prefix("SAMSA_") {
                let key = rest.to_ascii_lowercase().replace('_', ".");
                cfg.set(&key, &value, &format!("environment variable {name}"))?;
            }
        }
        for (key, value) in flags {
            cfg.set(&key, &value, &format!("flag --{key}"))?;
        }
        cfg.check()?;
        Ok(cfg)
    }

    /// Sets one key after validating it.
    pub fn set(&mut self, key: &str, value: &str, origin: &str) -> Result<(), ConfigError> {
        if defs::RETIRED_BROKER_CONFIGS.contains(&key) {
            self.retired.push((key.to_string(), origin.to_string()));
            return Ok(());
        }
        let def = defs::broker_def(key)
            .or_else(|| listeners::listener_key_def(key))
            .ok_or_else(|| ConfigError::Unknown {
                key: key.into(),
                origin: origin.into(),
            })?;
        defs::validate(key, def.kind, value)
            .and_then(|()| def.unsupported_value(value).map_or(Ok(()), Err))
            .map_err(|message| ConfigError::Invalid {
                message,
                origin: origin.into(),
            })?;
        self.explicit.insert(
            key.to_string(),
            (value.trim().to_string(), origin.to_string()),
        );
        Ok(())
    }

    /// Cross-key checks that need the whole configuration.
    fn check(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            message,
            origin: self.origin(key).unwrap_or("default").to_string(),
        };
        for l in self.list("listeners") {
            let l =
                Listener::parse(&l).map_err(|m| invalid("listeners", format!("listeners: {m}")))?;
            l.socket_addr()
                .map_err(|m| invalid("listeners", format!("listeners: {m}")))?;
        }
        for l in self.list("advertised.listeners") {
            Listener::parse(&l).map_err(|m| {
                invalid("advertised.listeners", format!("advertised.listeners: {m}"))
            })?;
        }
        if self.listeners().is_empty() {
            return Err(invalid(
                "listeners",
                "listeners: at least one listener is required".into(),
            ));
        }
        self.check_listener_security()
            .map_err(|(key, m)| invalid(&key, m))?;
        let engine = self.get("io.engine").unwrap_or_default();
        if !matches!(engine.as_str(), "auto" | "uring" | "epoll") {
            return Err(invalid(
                "io.engine",
                format!("invalid value '{engine}' for io.engine: expected auto, uring or epoll"),
            ));
        }
        samsa_cluster::replication::selector::ReplicaSelector::from_class_name(
            self.get("replica.selector.class").as_deref(),
        )
        .map_err(|m| invalid("replica.selector.class", m))?;
        let level = self.get("metrics.partition.level").unwrap_or_default();
        if !matches!(level.as_str(), "partition" | "topic") {
            return Err(invalid(
                "metrics.partition.level",
                format!(
                    "invalid value '{level}' for metrics.partition.level: expected partition or topic"
                ),
            ));
        }
        let protocols = self
            .get("group.coordinator.rebalance.protocols")
            .unwrap_or_default();
        let listed: Vec<String> = protocols
            .split(',')
            .map(|p| p.trim().to_ascii_lowercase())
            .filter(|p| !p.is_empty())
            .collect();
        if let Some(bad) = listed
            .iter()
            .find(|p| !matches!(p.as_str(), "classic" | "consumer" | "share" | "streams"))
        {
            return Err(invalid(
                "group.coordinator.rebalance.protocols",
                format!("invalid value '{protocols}' for group.coordinator.rebalance.protocols: unknown protocol '{bad}' (expected classic, consumer, share or streams)"),
            ));
        }
        if !listed.iter().any(|p| p == "classic") {
            return Err(invalid(
                "group.coordinator.rebalance.protocols",
                format!("invalid value '{protocols}' for group.coordinator.rebalance.protocols: it must list classic, as Kafka requires"),
            ));
        }
        if self.int("num.partitions") < 1 {
            return Err(invalid(
                "num.partitions",
                "num.partitions must be at least 1".into(),
            ));
        }
        if self.int("socket.request.max.bytes") < 1024 {
            return Err(invalid(
                "socket.request.max.bytes",
                "socket.request.max.bytes must be at least 1024".into(),
            ));
        }
        for key in [
            "offsets.topic.num.partitions",
            "transaction.state.log.num.partitions",
            "max.connections",
            "max.request.partition.size.limit",
        ] {
            if self.int(key) < 1 {
                return Err(invalid(key, format!("{key} must be at least 1")));
            }
        }
        for (key, (value, _)) in &self.explicit {
            topic::validate_broker_synonym(key, value)
                .map_err(|m| invalid(key, format!("{key}: {m}")))?;
            let (base, prefixed) = match key
                .strip_prefix("listener.name.")
                .and_then(|rest| rest.split_once('.'))
            {
                Some((_listener, base)) => (base, true),
                None => (key.as_str(), false),
            };
            connection_limits::check_value(base, value, prefixed).map_err(|m| invalid(key, m))?;
        }
        connection_limits::check_per_ip(
            self.long("max.connections.per.ip"),
            self.get("max.connections.per.ip.overrides").as_deref(),
        )
        .map_err(|m| invalid("max.connections.per.ip", m))?;
        Ok(())
    }

    /// This static configuration with dynamic layers on top: the effective configuration.
    pub fn with_dynamic(
        &self,
        dynamic_broker: BTreeMap<String, String>,
        dynamic_default: BTreeMap<String, String>,
    ) -> BrokerConfig {
        BrokerConfig {
            explicit: self.explicit.clone(),
            dynamic_broker,
            dynamic_default,
            retired: self.retired.clone(),
        }
    }

    /// The effective value of a broker key (dynamic, explicit or default), `None` when null.
    pub fn get(&self, key: &str) -> Option<String> {
        Source::PRECEDENCE.iter().find_map(|s| self.get_at(key, *s))
    }

    /// The key's value at one level only (`Default`: the built-in default).
    pub fn get_at(&self, key: &str, source: Source) -> Option<String> {
        match source {
            Source::DynamicBroker => self.dynamic_broker.get(key).cloned(),
            Source::DynamicDefault => self.dynamic_default.get(key).cloned(),
            Source::Static => self.explicit.get(key).map(|(v, _)| v.clone()),
            Source::Default => defs::broker_def(key)
                .and_then(|d| d.default)
                .map(str::to_string),
        }
    }

    /// Whether the key was set explicitly (statically), and by what.
    pub fn origin(&self, key: &str) -> Option<&str> {
        self.explicit.get(key).map(|(_, o)| o.as_str())
    }

    /// The level the effective value comes from.
    pub fn source(&self, key: &str) -> Source {
        Source::PRECEDENCE
            .iter()
            .copied()
            .find(|s| *s == Source::Default || self.get_at(key, *s).is_some())
            .unwrap_or(Source::Default)
    }

    /// Whether the key was set, statically or dynamically.
    pub fn is_set(&self, key: &str) -> bool {
        self.source(key) != Source::Default
    }

    /// The keys set in one dynamic layer.
    pub fn dynamic_layer(&self, source: Source) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        match source {
            Source::DynamicBroker => &self.dynamic_broker,
            Source::DynamicDefault => &self.dynamic_default,
            Source::Static | Source::Default => &EMPTY,
        }
    }

    /// Keys Kafka 4 removed that the properties, environment or flags set, with where: they
    /// have no effect (Kafka 4 warns about them as unknown keys; so does `main`).
    pub fn retired(&self) -> &[(String, String)] {
        &self.retired
    }

    /// Every explicitly set key, for the start-up log line.
    pub fn explicit(&self) -> impl Iterator<Item = (&str, &str)> {
        self.explicit
            .iter()
            .map(|(k, (v, _))| (k.as_str(), v.as_str()))
    }

    pub fn long(&self, key: &str) -> i64 {
        self.get(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("config key {key} has no numeric value"))
    }

    pub fn int(&self, key: &str) -> i32 {
        self.long(key) as i32
    }

    pub fn bool(&self, key: &str) -> bool {
        self.get(key)
            .map(|v| v.eq_ignore_ascii_case("true"))
            .unwrap_or(false)
    }

    pub fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn node_id(&self) -> i32 {
        if !self.is_set("node.id") && self.is_set("broker.id") && self.int("broker.id") >= 0 {
            return self.int("broker.id");
        }
        self.int("node.id")
    }

    pub fn listeners(&self) -> Vec<Listener> {
        self.list("listeners")
            .iter()
            .filter_map(|l| Listener::parse(l).ok())
            .collect()
    }

    /// What Metadata advertises: `advertised.listeners` when set, else the listeners, with a
    /// wildcard host replaced by 127.0.0.1 (a client cannot connect to 0.0.0.0).
    /// Whether `key`'s value is a secret (Kafka's PASSWORD type: keys, passwords, JAAS
    /// configs): never logged nor returned.
    pub fn is_sensitive(key: &str) -> bool {
        defs::broker_def(key)
            .or_else(|| listeners::listener_key_def(key))
            .is_some_and(|d| d.kind == defs::ConfigType::Password)
    }

    /// The listener brokers reach each other on: `inter.broker.listener.name`, else the
    /// listener named like `security.inter.broker.protocol` (Kafka's rule) when there is one,
    /// else the first advertised listener that is not a controller listener.
    pub fn inter_broker_listener_name(&self) -> String {
        if let Some(name) = self
            .get("inter.broker.listener.name")
            .filter(|n| !n.is_empty())
        {
            return name;
        }
        let controller = self.list("controller.listener.names");
        let advertised: Vec<Listener> = self
            .advertised_listeners()
            .into_iter()
            .filter(|l| !controller.iter().any(|c| c.eq_ignore_ascii_case(&l.name)))
            .collect();
        let by_protocol = self
            .get("security.inter.broker.protocol")
            .unwrap_or_else(|| "PLAINTEXT".into());
        advertised
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(&by_protocol))
            .or(advertised.first())
            .map(|l| l.name.clone())
            .unwrap_or_default()
    }

    pub fn advertised_listeners(&self) -> Vec<Listener> {
        let mut ls: Vec<Listener> = if self.is_set("advertised.listeners") {
            self.list("advertised.listeners")
                .iter()
                .filter_map(|l| Listener::parse(l).ok())
                .collect()
        } else {
            // Kafka's default: the listeners, less the controller's (clients never get those).
            let controller = self.list("controller.listener.names");
            self.listeners()
                .into_iter()
                .filter(|l| {
                    !controller
                        .iter()
                        .any(|c| c.trim().eq_ignore_ascii_case(&l.name))
                })
                .collect()
        };
        for l in &mut ls {
            if l.host.is_empty() || l.host == "0.0.0.0" || l.host == "::" {
                l.host = "127.0.0.1".into();
            }
        }
        ls
    }

    /// The data directory: the first of `log.dirs`, else of `log.dir` (Kafka's pair; Samsa's
    /// default is `./samsa-data`).
    pub fn log_dir(&self) -> PathBuf {
        let dirs = if self.is_set("log.dirs") {
            self.list("log.dirs")
        } else {
            self.list("log.dir")
        };
        PathBuf::from(
            dirs.into_iter()
                .next()
                .unwrap_or_else(|| "./samsa-data".into()),
        )
    }
}

/// Java-properties lines: `key=value`, `key: value` or `key value`; `#` and `!` comments;
/// trailing-backslash continuation. Returns (line number, key, value).
pub fn parse_properties(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        let (start, mut acc) = match pending.take() {
            Some((start, acc)) => (start, acc),
            None => {
                if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                    continue;
                }
                (i + 1, String::new())
            }
        };
        if let Some(stripped) = line.strip_suffix('\\') {
            acc.push_str(stripped);
            pending = Some((start, acc));
            continue;
        }
        acc.push_str(line);
        let sep = acc
            .find(['=', ':'])
            .or_else(|| acc.find(char::is_whitespace));
        let (k, v) = match sep {
            Some(p) => (acc[..p].trim().to_string(), acc[p + 1..].trim().to_string()),
            None => (acc.trim().to_string(), String::new()),
        };
        out.push((start, k, v));
    }
    out
}

/// Builders shared by the unit tests of the config modules.
#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::BTreeMap;

    use super::BrokerConfig;

    /// Owned key-value pairs (a topic's overrides, a dynamic layer, a group's configs).
    pub fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A broker configured by command-line properties only.
    pub fn broker(flags: &[(&str, &str)]) -> BrokerConfig {
        BrokerConfig::load(None, vec![], pairs(flags)).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_serve_one_node_on_9092() {
        let c = BrokerConfig::load(None, vec![], vec![]).unwrap();
        assert_eq!(
            c.listeners(),
            vec![Listener {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092
            }]
        );
        assert_eq!(c.log_dir(), PathBuf::from("./samsa-data"));
        assert!(c.bool("auto.create.topics.enable"));
        assert_eq!(c.node_id(), 1);
    }

    #[test]
    fn flags_override_env_which_overrides_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(
            &path,
            "# comment\nnum.partitions=2\nlog.dirs = /tmp/a\nnode.id: 4\n",
        )
        .unwrap();
        let env = vec![
            ("SAMSA_NUM_PARTITIONS".to_string(), "5".to_string()),
            ("HOME".into(), "/root".into()),
        ];
        let c = BrokerConfig::load(Some(&path), env, flags(&[("log.dirs", "/tmp/b")])).unwrap();
        assert_eq!(c.int("num.partitions"), 5);
        assert_eq!(c.log_dir(), PathBuf::from("/tmp/b"));
        assert_eq!(c.node_id(), 4);
        assert!(c
            .origin("node.id")
            .unwrap()
            .ends_with("server.properties:4"));
    }

    #[test]
    fn unknown_and_invalid_keys_are_refused_naming_the_key() {
        let e = BrokerConfig::load(None, vec![], flags(&[("num.partitons", "3")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown configuration key 'num.partitons' (from flag --num.partitons)"
        );
        let e =
            BrokerConfig::load(None, vec![], flags(&[("num.partitions", "three")])).unwrap_err();
        assert!(e.to_string().contains("num.partitions"), "{e}");
        let e = BrokerConfig::load(None, vec![], flags(&[("listeners", "127.0.0.1:9092")]))
            .unwrap_err();
        assert!(e.to_string().contains("listeners"), "{e}");
        let e = BrokerConfig::load(None, vec![], flags(&[("log.cleanup.policy", "shred")]))
            .unwrap_err();
        assert!(e.to_string().contains("log.cleanup.policy"), "{e}");
        // Samsa cannot load Java classes: a selector it does not have is refused at start.
        let e = BrokerConfig::load(
            None,
            vec![],
            flags(&[(
                "replica.selector.class",
                "com.example.NearestReplicaSelector",
            )]),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("com.example.NearestReplicaSelector")
                && e.to_string().contains("--replica.selector.class"),
            "{e}"
        );
        BrokerConfig::load(
            None,
            vec![],
            flags(&[(
                "replica.selector.class",
                "org.apache.kafka.common.replica.RackAwareReplicaSelector",
            )]),
        )
        .unwrap();
    }

    #[test]
    fn kafka_keys_samsa_cannot_honour_are_listed_but_refused_when_set() {
        let c = BrokerConfig::load(None, vec![], vec![]).unwrap();
        assert_eq!(
            c.get("sasl.oauthbearer.scope.claim.name").as_deref(),
            Some("scope")
        );
        for (key, value) in [
            (
                "sasl.oauthbearer.jwks.endpoint.url",
                "https://idp.example/jwks",
            ),
            (
                "listener.name.sasl_ssl.sasl.oauthbearer.expected.audience",
                "samsa",
            ),
            ("remote.log.storage.system.enable", "true"),
            ("create.topic.policy.class.name", "com.example.Policy"),
            ("metadata.log.dir", "/fast/metadata"),
        ] {
            let e = BrokerConfig::load(None, vec![], flags(&[(key, value)])).unwrap_err();
            assert!(
                e.to_string().contains("not supported by Samsa") && e.to_string().contains(key),
                "{key}: {e}"
            );
        }
        // Set to their defaults, they start.
        BrokerConfig::load(
            None,
            vec![],
            flags(&[
                ("remote.log.storage.system.enable", "false"),
                ("sasl.oauthbearer.sub.claim.name", "sub"),
            ]),
        )
        .unwrap();
    }

    #[test]
    fn keys_kafka_4_removed_start_with_no_effect_and_unknown_keys_do_not() {
        let c = BrokerConfig::load(
            None,
            vec![],
            flags(&[("log.message.downconversion.enable", "false")]),
        )
        .unwrap();
        assert_eq!(
            c.retired(),
            &[(
                "log.message.downconversion.enable".to_string(),
                "flag --log.message.downconversion.enable".to_string()
            )]
        );
        assert_eq!(c.get("log.message.downconversion.enable"), None);
        assert!(
            BrokerConfig::load(None, vec![], flags(&[("log.message.upconversion", "x")])).is_err()
        );
    }

    #[test]
    fn log_dirs_falls_back_to_log_dir_and_its_default() {
        let dir = |f: &[(&str, &str)]| {
            BrokerConfig::load(None, vec![], flags(f))
                .unwrap()
                .log_dir()
        };
        assert_eq!(dir(&[]), PathBuf::from("./samsa-data"));
        assert_eq!(dir(&[("log.dir", "/a")]), PathBuf::from("/a"));
        assert_eq!(
            dir(&[("log.dir", "/a"), ("log.dirs", "/b,/c")]),
            PathBuf::from("/b")
        );
    }

    #[test]
    fn advertised_listeners_replace_wildcards() {
        let c = BrokerConfig::load(
            None,
            vec![],
            flags(&[("listeners", "PLAINTEXT://0.0.0.0:19092")]),
        )
        .unwrap();
        assert_eq!(c.advertised_listeners()[0].host, "127.0.0.1");
        let c = BrokerConfig::load(
            None,
            vec![],
            flags(&[
                ("listeners", "PLAINTEXT://0.0.0.0:19092"),
                ("advertised.listeners", "PLAINTEXT://kafka.example:9092"),
            ]),
        )
        .unwrap();
        assert_eq!(c.advertised_listeners()[0].host, "kafka.example");
    }

    #[test]
    fn properties_parser_handles_separators_and_continuations() {
        let p = parse_properties("a=1\nb : 2\nc 3\nd=x,\\\n  y\n#e=5\n");
        let kv: Vec<_> = p.into_iter().map(|(_, k, v)| (k, v)).collect();
        assert_eq!(
            kv,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "2".into()),
                ("c".into(), "3".into()),
                ("d".into(), "x,y".into())
            ]
        );
    }

    #[test]
    fn clients_are_never_advertised_the_controller_listener() {
        let flags: Vec<(String, String)> = [
            (
                "listeners",
                "CONTROLLER://127.0.0.1:9093,PLAINTEXT://0.0.0.0:9092",
            ),
            ("controller.listener.names", "CONTROLLER"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = BrokerConfig::load(None, vec![], flags).unwrap();
        let ls = c.advertised_listeners();
        assert_eq!(ls.len(), 1, "{ls:?}");
        assert_eq!(
            (ls[0].name.as_str(), ls[0].host.as_str(), ls[0].port),
            ("PLAINTEXT", "127.0.0.1", 9092)
        );
    }
}
