//! Every configuration key Samsa knows, with its type, default and meaning. Broker keys use
//! Kafka's names so that a Kafka user's `server.properties` carries over; topic keys are the
//! topic-level names with the broker-level `log.*` synonyms Kafka has.
//!
//! The keys live in a file per area: `broker.rs` (the node, its logs, threads), `replication.rs`
//! (followers, KRaft, leader elections), `groups.rs` (group, share and transaction
//! coordinators; the group configs), `security.rs` (authorizer, TLS, SASL), `topics.rs` (the
//! topic configs and their broker defaults), `compat.rs` (Kafka keys Samsa accepts without
//! effect or refuses). [`BROKER_CONFIGS`] joins the broker keys of all of them. Their runs of
//! broker keys are laid out by hand (`rustfmt::skip`): a short key keeps to one line.

mod broker;
mod compat;
mod groups;
mod replication;
mod security;
mod topics;
mod types;

pub use self::groups::{GroupConfigDef, GROUP_CONFIGS};
pub use self::topics::{TopicConfigDef, TOPIC_CONFIGS};
pub use self::types::{ConfigDef, ConfigType, Effect, Update};

/// Keys Kafka 3 knew and Kafka 4 removed. Kafka 4 starts with them in its properties and warns
/// that they are unknown; Samsa does the same (`BrokerConfig::retired`) and lists them nowhere.
/// Set dynamically they are custom configs, as any key Kafka does not know.
pub const RETIRED_BROKER_CONFIGS: &[&str] = &[
    "log.message.downconversion.enable",
    "leader.imbalance.per.broker.percentage",
];

use self::types::def;
use ConfigType::*;

/// Broker-level keys, in the order DescribeConfigs lists them: the runs of `BROKER_PARTS`, one
/// after the other.
pub const BROKER_CONFIGS: &[ConfigDef] = &concat::<{ total_len(BROKER_PARTS) }>(BROKER_PARTS);

/// The broker keys of each area, in runs that keep the order DescribeConfigs has always
/// listed them in.
const BROKER_PARTS: &[&[ConfigDef]] = &[
    broker::NODE,
    replication::REPLICAS,
    topics::MESSAGE_MAX_BYTES,
    groups::COORDINATORS,
    topics::BROKER_DEFAULTS,
    security::AUTHORIZATION,
    replication::KRAFT,
    broker::THREADS,
    groups::SHARE,
    replication::LEADER_ELECTION,
    groups::GROUP_DEFAULTS,
    topics::ACCEPTED_DEFAULTS,
    compat::DYNAMIC,
    security::LISTENERS,
    compat::CATALOGUE,
    compat::UNSUPPORTED,
];

/// How many keys `parts` hold together.
const fn total_len(parts: &[&[ConfigDef]]) -> usize {
    let (mut len, mut i) = (0, 0);
    while i < parts.len() {
        len += parts[i].len();
        i += 1;
    }
    len
}

/// The keys of `parts` in one array, in order; `N` is [`total_len`] of `parts`.
const fn concat<const N: usize>(parts: &[&[ConfigDef]]) -> [ConfigDef; N] {
    let mut all = [def("", String, None, ""); N];
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            all[n] = parts[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(n == N, "N is the parts' total length");
    all
}

pub fn group_def(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|d| d.name == name)
}

pub fn broker_def(name: &str) -> Option<&'static ConfigDef> {
    BROKER_CONFIGS.iter().find(|d| d.name == name)
}

pub fn topic_def(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Checks that `value` parses as `kind`; the message names the key.
pub fn validate(name: &str, kind: ConfigType, value: &str) -> Result<(), std::string::String> {
    let ok = match kind {
        Boolean => matches!(value.to_ascii_lowercase().as_str(), "true" | "false"),
        Int => value.trim().parse::<i32>().is_ok(),
        Short => value.trim().parse::<i16>().is_ok(),
        Long => value.trim().parse::<i64>().is_ok(),
        Double => value.trim().parse::<f64>().is_ok(),
        String | List | Class | Password => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid value '{value}' for {name}: expected {}",
            kind_name(kind)
        ))
    }
}

fn kind_name(kind: ConfigType) -> &'static str {
    match kind {
        Boolean => "true or false",
        Int => "a 32-bit integer",
        Short => "a 16-bit integer",
        Long => "a 64-bit integer",
        Double => "a number",
        String => "a string",
        List => "a comma-separated list",
        Class => "a class name",
        Password => "a password",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_defined_once() {
        let mut seen = std::collections::BTreeSet::new();
        for d in BROKER_CONFIGS {
            assert!(seen.insert(d.name), "{} is defined twice", d.name);
            assert!(
                !RETIRED_BROKER_CONFIGS.contains(&d.name),
                "{} is retired",
                d.name
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in TOPIC_CONFIGS {
            assert!(
                seen.insert(d.name),
                "topic config {} is defined twice",
                d.name
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in GROUP_CONFIGS {
            assert!(
                seen.insert(d.name),
                "group config {} is defined twice",
                d.name
            );
            for key in [d.broker_default, d.min_key, d.max_key]
                .into_iter()
                .flatten()
            {
                assert!(
                    broker_def(key).is_some(),
                    "{}: broker key {key} is defined",
                    d.name
                );
            }
        }
        for d in TOPIC_CONFIGS {
            for (key, _) in d.synonyms {
                assert!(
                    broker_def(key).is_some(),
                    "{}: synonym {key} is defined",
                    d.name
                );
            }
        }
    }

    /// Kafka 4.4's own answer (DescribeConfigs of a broker, `scripts/reference/compare`): type,
    /// default and whether the key may change dynamically, for keys whose Samsa definition once
    /// differed or that Kafka 4.4 added.
    #[test]
    fn keys_have_kafka_4_4s_types_defaults_and_update_modes() {
        use Update::*;
        let max = "9223372036854775807";
        for (name, kind, default, update) in [
            ("max.connections", Int, Some("2147483647"), ClusterWide),
            ("default.replication.factor", Int, Some("1"), ReadOnly),
            (
                "listener.security.protocol.map",
                String,
                Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"),
                PerBroker,
            ),
            ("log.dir", List, Some("./samsa-data"), ReadOnly),
            ("log.dirs", List, None, ReadOnly),
            (
                "log.flush.offset.checkpoint.interval.ms",
                Int,
                Some("60000"),
                ReadOnly,
            ),
            ("log.flush.scheduler.interval.ms", Long, Some(max), ReadOnly),
            ("replica.selector.class", String, None, ReadOnly),
            (
                "errors.deadletterqueue.auto.create.topics.enable",
                Boolean,
                Some("false"),
                ClusterWide,
            ),
            ("connections.max.reauth.ms", Long, Some("0"), ReadOnly),
            (
                "ssl.principal.mapping.rules",
                String,
                Some("DEFAULT"),
                ReadOnly,
            ),
            ("sasl.server.callback.handler.class", Class, None, ReadOnly),
            ("controller.quorum.voters", List, Some(""), ReadOnly),
            (
                "controller.quorum.bootstrap.servers",
                List,
                Some(""),
                ReadOnly,
            ),
            (
                "group.consumer.assignment.interval.ms",
                Int,
                Some("1000"),
                ClusterWide,
            ),
            (
                "group.streams.session.timeout.ms",
                Int,
                Some("45000"),
                ReadOnly,
            ),
            (
                "max.decompressed.message.bytes",
                Int,
                Some("2147483639"),
                ClusterWide,
            ),
            ("log.remote.copy.lag.ms", Long, Some("0"), ClusterWide),
            ("cordoned.log.dirs", List, Some(""), PerBroker),
            ("remote.log.reader.threads", Int, Some("10"), ClusterWide),
            ("request.timeout.ms", Int, Some("30000"), ReadOnly),
            ("delegation.token.secret.key", Password, None, ReadOnly),
            (
                "sasl.oauthbearer.expected.audience",
                List,
                Some(""),
                ReadOnly,
            ),
        ] {
            let d = broker_def(name).unwrap_or_else(|| panic!("{name} is defined"));
            assert_eq!(
                (d.kind, d.default, d.update),
                (kind, default, update),
                "{name}"
            );
            assert!(!d.hidden, "{name} is listed");
        }
        // Kafka 4.4 lists no message down-conversion any more.
        assert!(topic_def("message.downconversion.enable").is_none());
        assert!(broker_def("log.message.downconversion.enable").is_none());
        for (name, default) in [
            ("max.decompressed.message.bytes", None),
            ("remote.copy.lag.bytes", None),
            ("remote.copy.lag.ms", None),
        ] {
            let d = topic_def(name).unwrap_or_else(|| panic!("topic config {name}"));
            assert_eq!(
                d.default, default,
                "{name} takes its broker synonym's default"
            );
        }
    }

    #[test]
    fn unsupported_keys_keep_only_their_default() {
        let jwks = broker_def("sasl.oauthbearer.jwks.endpoint.url").unwrap();
        assert_eq!(jwks.unsupported_value(""), None);
        let why = jwks.unsupported_value("https://idp.example/jwks").unwrap();
        assert!(why.contains("sasl.oauthbearer.jwks.endpoint.url"), "{why}");
        let tiered = broker_def("remote.log.storage.system.enable").unwrap();
        assert_eq!(tiered.unsupported_value("FALSE"), None);
        assert!(tiered.unsupported_value("true").is_some());
        // Keys Samsa has no use for but nothing to hide are accepted.
        assert_eq!(
            broker_def("queued.max.requests")
                .unwrap()
                .unsupported_value("7"),
            None
        );
    }
}
