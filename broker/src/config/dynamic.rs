//! Dynamic configs: what AlterConfigs and IncrementalAlterConfigs change while the broker runs.
//! Two kinds live here, both persisted in `samsa-dynamic-configs.json` in the log directory
//! (temp file, fsync, rename, fsync the directory) and reloaded on start:
//!
//! - Dynamic broker configs (KIP-226, incremental since KIP-339): a layer for this broker
//!   (resource name = its node id) and a cluster-wide default layer (resource name ""), above
//!   the static configuration. Lookups go dynamic per-broker, dynamic default, static, default.
//!   Which keys may change, and at which level, is Kafka's (`Update` in `defs.rs`); keys Kafka
//!   does not know are accepted as custom configs, as Kafka does. The `log.*` topic defaults
//!   take effect at once on every topic that does not override them.
//! - Group configs (KIP-848 `GroupConfig`): per-group overrides of the consumer and share group
//!   timeouts. They only matter to KIP-848 consumer groups and share groups, which Samsa does
//!   not serve yet (its groups are classic); they are validated, stored and described as Kafka
//!   does so that admin tools work.
//!
//! Invariant: the file, the stored layers and the effective configuration change together
//! under one lock, file first, so an acknowledged change survives a crash and a failed write
//! changes nothing. Readers get immutable snapshots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use super::defs::{self, ConfigType, Update};
use super::{group, topic, BrokerConfig, Source};

const FILE: &str = "samsa-dynamic-configs.json";
/// Keys one resource (a broker layer, a group) may hold.
pub const KEYS_PER_RESOURCE_MAX: usize = 1_000;
/// Longest key and value a client may store.
pub const KEY_BYTES_MAX: usize = 1_024;
pub const VALUE_BYTES_MAX: usize = 64 * 1024;
/// Groups that may have configs at once.
pub const GROUPS_WITH_CONFIGS_MAX: usize = 100_000;
/// Longest group name a config may be stored for.
pub const GROUP_NAME_BYTES_MAX: usize = 4_096;

/// Broker keys whose changes Kafka limits to between half and double the current value
/// (`DynamicThreadPool`, the log cleaner's and the network threads' own checks).
const THREAD_COUNT_KEYS: &[&str] = &[
    "num.io.threads",
    "num.network.threads",
    "num.replica.fetchers",
    "num.recovery.threads.per.data.dir",
    "background.threads",
    "log.cleaner.threads",
];

/// Listener configs that are cluster-wide even with a listener prefix (Kafka's
/// `ClusterLevelListenerConfigs`); every other `listener.name.*` key is per broker.
const CLUSTER_LEVEL_LISTENER_CONFIGS: &[&str] = &[
    "max.connections",
    "max.connection.creation.rate",
    "num.network.threads",
];

/// A dynamic config resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// This broker (resource name = node id).
    Broker,
    /// The cluster-wide broker default (resource name "").
    ClusterDefault,
    /// A consumer or share group's configs.
    Group(String),
}

/// Why a dynamic config change was refused; each maps to one Kafka error code.
#[derive(Debug, thiserror::Error)]
pub enum DynamicConfigError {
    /// Kafka answers INVALID_REQUEST for a broker change it cannot apply
    /// (`ConfigAdminManager.validateBrokerConfigChange`, KAFKA-13609) and for malformed
    /// requests (duplicate keys, null values, unknown operations).
    #[error("{0}")]
    InvalidRequest(String),
    /// INVALID_CONFIG: unknown group key, bad group value, APPEND to a key that is not a list.
    #[error("{0}")]
    InvalidConfig(String),
    /// A limit Samsa puts on what clients can store.
    #[error("{0}")]
    TooMany(String),
    #[error("cannot write {FILE}: {0}")]
    Storage(#[from] std::io::Error),
}

impl DynamicConfigError {
    pub fn response_error(&self) -> kafka_protocol::ResponseError {
        use kafka_protocol::ResponseError as E;
        match self {
            DynamicConfigError::InvalidRequest(_) => E::InvalidRequest,
            DynamicConfigError::InvalidConfig(_) => E::InvalidConfig,
            // A configured limit the request would break, like Kafka's policies.
            DynamicConfigError::TooMany(_) => E::PolicyViolation,
            DynamicConfigError::Storage(_) => E::UnknownServerError,
        }
    }
}

/// One IncrementalAlterConfigs operation (KIP-339).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpType {
    Set,
    Delete,
    Append,
    Subtract,
}

impl OpType {
    pub fn from_code(code: i8) -> Result<OpType, DynamicConfigError> {
        match code {
            0 => Ok(OpType::Set),
            1 => Ok(OpType::Delete),
            2 => Ok(OpType::Append),
            3 => Ok(OpType::Subtract),
            other => Err(DynamicConfigError::InvalidRequest(format!(
                "Unknown operations type {other}"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OpType::Set => "SET",
            OpType::Delete => "DELETE",
            OpType::Append => "APPEND",
            OpType::Subtract => "SUBTRACT",
        }
    }
}

/// An operation on one key.
#[derive(Debug, Clone)]
pub struct AlterOp {
    pub name: String,
    pub op: OpType,
    pub value: Option<String>,
}

/// Applies incremental operations to a resource's current configs. `list_base` is asked for
/// the value an APPEND or SUBTRACT starts from when the key is not set, and refuses keys that
/// are not lists.
pub fn apply_incremental(
    current: &BTreeMap<String, String>,
    ops: &[AlterOp],
    list_base: impl Fn(&str, OpType) -> Result<Option<String>, DynamicConfigError>,
) -> Result<BTreeMap<String, String>, DynamicConfigError> {
    let mut next = current.clone();
    for op in ops {
        let value = || op.value.clone().unwrap_or_default();
        match op.op {
            OpType::Set => {
                next.insert(op.name.clone(), value());
            }
            OpType::Delete => {
                next.remove(&op.name);
            }
            OpType::Append | OpType::Subtract => {
                let base = match next.get(&op.name) {
                    Some(v) => Some(v.clone()),
                    None => list_base(&op.name, op.op)?,
                };
                let mut items: Vec<String> = base
                    .unwrap_or_default()
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                for item in value().split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if op.op == OpType::Append {
                        if !items.iter().any(|i| i == item) {
                            items.push(item.to_string());
                        }
                    } else {
                        items.retain(|i| i != item);
                    }
                }
                next.insert(op.name.clone(), items.join(","));
            }
        }
    }
    Ok(next)
}

/// The request-level checks Kafka makes on every altered resource (`ConfigAdminManager`):
/// no key twice, and a value for everything but DELETE.
pub fn check_ops(ops: &[AlterOp]) -> Result<(), DynamicConfigError> {
    let mut seen = std::collections::HashSet::new();
    if !ops.iter().all(|o| seen.insert(o.name.as_str())) {
        return Err(DynamicConfigError::InvalidRequest(
            "Error due to duplicate config keys".into(),
        ));
    }
    let nulls: Vec<&str> = ops
        .iter()
        .filter(|o| o.op != OpType::Delete && o.value.is_none())
        .map(|o| o.name.as_str())
        .collect();
    if !nulls.is_empty() {
        return Err(DynamicConfigError::InvalidRequest(format!(
            "Null value not supported for : {}",
            nulls.join(", ")
        )));
    }
    Ok(())
}

/// `listener.name.<listener>.<key>`: the key.
pub fn listener_base(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("listener.name.")?;
    let (_listener, base) = rest.split_once('.')?;
    Some(base)
}

/// The definition that types a broker key: its own, or its base key's for a listener prefix.
pub fn broker_key_def(name: &str) -> Option<&'static defs::ConfigDef> {
    defs::broker_def(name).or_else(|| listener_base(name).and_then(defs::broker_def))
}

/// The value an APPEND or SUBTRACT on a broker key starts from when the layer lacks it: the
/// key's default (Kafka's `prepareIncrementalConfigs`), for list keys only.
pub fn broker_list_base(name: &str, op: OpType) -> Result<Option<String>, DynamicConfigError> {
    let def = broker_key_def(name)
        .ok_or_else(|| DynamicConfigError::InvalidConfig(format!("Unknown config name: {name}")))?;
    if def.kind != ConfigType::List {
        return Err(DynamicConfigError::InvalidConfig(format!(
            "Config value {} is not allowed for config key: {name}",
            op.name().to_lowercase()
        )));
    }
    Ok(def.default.map(str::to_string))
}

/// Kafka's way of naming a set of keys in its messages (`Set(a, b)`).
fn key_set(keys: &[&str]) -> String {
    format!("Set({})", keys.join(", "))
}

/// Checks one broker layer key by key, as Kafka's `DynamicBrokerConfig.validateConfigs` does,
/// in its order: keys that are not dynamic, security keys without their listener prefix,
/// values, then per-broker keys in the cluster-wide default.
pub fn validate_broker_keys(
    layer: &BTreeMap<String, String>,
    per_broker: bool,
) -> Result<(), DynamicConfigError> {
    if layer.len() > KEYS_PER_RESOURCE_MAX {
        return Err(DynamicConfigError::TooMany(format!(
            "{} dynamic broker configs exceed the limit of {KEYS_PER_RESOURCE_MAX}",
            layer.len()
        )));
    }
    for (k, v) in layer {
        if k.len() > KEY_BYTES_MAX || v.len() > VALUE_BYTES_MAX {
            return Err(DynamicConfigError::TooMany(format!(
                "config {k} of {} bytes with a value of {} bytes exceeds the limits of {KEY_BYTES_MAX} and {VALUE_BYTES_MAX} bytes",
                k.len(),
                v.len()
            )));
        }
    }
    let with = |pred: &dyn Fn(&str) -> bool| -> Vec<&str> {
        layer
            .keys()
            .map(String::as_str)
            .filter(|k| pred(k))
            .collect()
    };
    let not_dynamic = with(&|k| defs::broker_def(k).is_some_and(|d| !d.is_dynamic()));
    if !not_dynamic.is_empty() {
        return Err(DynamicConfigError::InvalidRequest(format!(
            "Cannot update these configs dynamically: {}",
            key_set(&not_dynamic)
        )));
    }
    let unprefixed =
        with(&|k| defs::broker_def(k).is_some_and(|d| d.update == Update::PerListener));
    if !unprefixed.is_empty() {
        return Err(DynamicConfigError::InvalidRequest(format!(
            "These security configs can be dynamically updated only per-listener using the listener prefix: {}",
            key_set(&unprefixed)
        )));
    }
    for (k, v) in layer {
        if let Some(def) = broker_key_def(k) {
            defs::validate(k, def.kind, v).map_err(DynamicConfigError::InvalidRequest)?;
            topic::validate_broker_synonym(def.name, v)
                .map_err(|m| DynamicConfigError::InvalidRequest(format!("{k}: {m}")))?;
        }
    }
    if !per_broker {
        let per_broker_keys = with(&|k| match listener_base(k) {
            Some(base) => !CLUSTER_LEVEL_LISTENER_CONFIGS.contains(&base),
            None => defs::broker_def(k).is_some_and(|d| d.update == Update::PerBroker),
        });
        if !per_broker_keys.is_empty() {
            return Err(DynamicConfigError::InvalidRequest(format!(
                "Cannot update these configs at default cluster level, broker id must be specified: {}",
                key_set(&per_broker_keys)
            )));
        }
    }
    Ok(())
}

/// The checks Kafka's reconfigurable components make on the configuration a change would
/// produce (`processReconfiguration`): thread counts move by at most a factor of two.
pub fn validate_reconfiguration(
    current: &BrokerConfig,
    candidate: &BrokerConfig,
) -> Result<(), DynamicConfigError> {
    for key in THREAD_COUNT_KEYS {
        let old = current.long(key);
        let new = candidate.long(key);
        if new == old {
            continue;
        }
        let reason = if new <= 0 {
            "value should be at least 1".to_string()
        } else if new < old / 2 {
            format!("value should be at least half the current value {old}")
        } else if new > old.saturating_mul(2) {
            format!("value should not be greater than double the current value {old}")
        } else {
            continue;
        };
        return Err(DynamicConfigError::InvalidRequest(format!(
            "Invalid dynamic configuration: Dynamic thread count update validation failed for {key}={new}, {reason}"
        )));
    }
    Ok(())
}

#[derive(Serialize, Deserialize, Default, Clone, Debug)]
struct Stored {
    version: u32,
    /// This broker's layer.
    #[serde(default)]
    broker: BTreeMap<String, String>,
    /// The cluster-wide default layer.
    #[serde(default)]
    cluster_default: BTreeMap<String, String>,
    #[serde(default)]
    groups: BTreeMap<String, BTreeMap<String, String>>,
}

impl Stored {
    fn layer(&self, resource: &Resource) -> BTreeMap<String, String> {
        match resource {
            Resource::Broker => self.broker.clone(),
            Resource::ClusterDefault => self.cluster_default.clone(),
            Resource::Group(g) => self.groups.get(g).cloned().unwrap_or_default(),
        }
    }

    fn set_layer(&mut self, resource: &Resource, layer: BTreeMap<String, String>) {
        match resource {
            Resource::Broker => self.broker = layer,
            Resource::ClusterDefault => self.cluster_default = layer,
            Resource::Group(g) => {
                if layer.is_empty() {
                    self.groups.remove(g);
                } else {
                    self.groups.insert(g.clone(), layer);
                }
            }
        }
    }
}

struct State {
    stored: Arc<Stored>,
    effective: Arc<BrokerConfig>,
}

/// The dynamic configs and the effective broker configuration they produce.
pub struct DynamicConfigs {
    dir: PathBuf,
    static_config: BrokerConfig,
    state: RwLock<State>,
    /// Serialises changes, so that the file and the snapshot agree.
    admin: Mutex<()>,
}

impl DynamicConfigs {
    /// Loads the dynamic configs stored in `dir` (none when there is no file yet). A file that
    /// does not parse stops the start; a stored key that is no longer valid is dropped with a
    /// warning, as Kafka ignores invalid persisted dynamic configs (`fromPersistentProps`).
    pub fn open(dir: &Path, static_config: &BrokerConfig) -> anyhow::Result<DynamicConfigs> {
        let path = dir.join(FILE);
        let mut stored: Stored = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored {
                version: 1,
                ..Stored::default()
            },
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        for (per_broker, layer) in [
            (true, &mut stored.broker),
            (false, &mut stored.cluster_default),
        ] {
            layer.retain(|k, v| {
                let one = BTreeMap::from([(k.clone(), v.clone())]);
                match validate_broker_keys(&one, per_broker) {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!("ignoring the stored dynamic broker config {k}: {e}");
                        false
                    }
                }
            });
        }
        stored
            .groups
            .retain(|g, configs| match group::validate(configs, static_config) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("ignoring the stored configs of group {g}: {e}");
                    false
                }
            });
        let effective =
            static_config.with_dynamic(stored.broker.clone(), stored.cluster_default.clone());
        if !stored.broker.is_empty() || !stored.cluster_default.is_empty() {
            tracing::info!(
                broker = ?stored.broker.keys().collect::<Vec<_>>(),
                cluster_default = ?stored.cluster_default.keys().collect::<Vec<_>>(),
                "dynamic broker configs loaded"
            );
        }
        Ok(DynamicConfigs {
            dir: dir.to_path_buf(),
            static_config: static_config.clone(),
            state: RwLock::new(State {
                stored: Arc::new(stored),
                effective: Arc::new(effective),
            }),
            admin: Mutex::new(()),
        })
    }

    /// The effective broker configuration: static keys with the dynamic layers on top.
    pub fn effective(&self) -> Arc<BrokerConfig> {
        self.state.read().effective.clone()
    }

    /// The configs stored for a resource.
    pub fn layer(&self, resource: &Resource) -> BTreeMap<String, String> {
        self.state.read().stored.layer(resource)
    }

    /// The groups that have configs, by name (what ListConfigResources lists as GROUP
    /// resources: in Kafka a group config may exist before the group has any member).
    pub fn groups_with_configs(&self) -> Vec<String> {
        self.state.read().stored.groups.keys().cloned().collect()
    }

    /// Changes one resource's configs: `change` computes the new configs from the current
    /// ones, they are validated as Kafka validates them, and unless `validate_only` they are
    /// persisted and made visible; `applied` then runs, still under the lock, with the new
    /// effective configuration (to apply it to the logs).
    pub fn alter(
        &self,
        resource: &Resource,
        validate_only: bool,
        change: impl FnOnce(
            &BTreeMap<String, String>,
        ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
        applied: impl FnOnce(&Arc<BrokerConfig>),
    ) -> Result<(), DynamicConfigError> {
        let _admin = self.admin.lock();
        let (stored, current) = {
            let s = self.state.read();
            (s.stored.clone(), s.effective.clone())
        };
        let layer = change(&stored.layer(resource))?;
        let mut next = (*stored).clone();
        next.set_layer(resource, layer.clone());
        let candidate = self
            .static_config
            .with_dynamic(next.broker.clone(), next.cluster_default.clone());
        match resource {
            Resource::Broker | Resource::ClusterDefault => {
                validate_broker_keys(&layer, *resource == Resource::Broker)?;
                validate_reconfiguration(&current, &candidate)?;
            }
            Resource::Group(name) => {
                group::validate(&layer, &current)?;
                if name.len() > GROUP_NAME_BYTES_MAX {
                    return Err(DynamicConfigError::TooMany(format!(
                        "group name of {} bytes exceeds the limit of {GROUP_NAME_BYTES_MAX}",
                        name.len()
                    )));
                }
                if next.groups.len() > GROUPS_WITH_CONFIGS_MAX {
                    return Err(DynamicConfigError::TooMany(format!(
                        "configs for {} groups would exceed the limit of {GROUPS_WITH_CONFIGS_MAX}",
                        next.groups.len()
                    )));
                }
            }
        }
        if validate_only {
            return Ok(());
        }
        next.version = 1;
        let bytes = serde_json::to_vec_pretty(&next).expect("serialisable");
        // Private: dynamic configs may hold passwords (sasl.jaas.config, keystore passwords).
        crate::topics::write_atomically_private(&self.dir, FILE, &bytes)?;
        let effective = Arc::new(candidate);
        {
            let mut s = self.state.write();
            s.stored = Arc::new(next);
            s.effective = effective.clone();
        }
        tracing::info!(resource = ?resource, configs = ?layer.keys().collect::<Vec<_>>(), "dynamic configs changed");
        applied(&effective);
        Ok(())
    }
}

/// The synonyms Kafka lists for a broker key (`DynamicBrokerConfig.brokerConfigSynonyms`):
/// the keys that define the same setting, most specific first.
pub fn broker_synonyms(name: &str) -> Vec<String> {
    const GROUPS: &[&[&str]] = &[
        &["log.roll.ms", "log.roll.hours"],
        &["log.roll.jitter.ms", "log.roll.jitter.hours"],
        &[
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
    ];
    if let Some(g) = GROUPS.iter().find(|g| g.contains(&name)) {
        return g.iter().map(|s| s.to_string()).collect();
    }
    if name == "log.flush.interval.ms" {
        return vec![name.into(), "log.flush.scheduler.interval.ms".into()];
    }
    if let Some(base) = listener_base(name) {
        return vec![name.into(), base.into()];
    }
    vec![name.into()]
}

/// Every value of `names` at every level, in Kafka's order: each level (dynamic per-broker,
/// dynamic default, static, default) in turn, each name in turn within a level.
pub fn synonym_values(
    cfg: &BrokerConfig,
    names: &[String],
) -> Vec<(String, Option<String>, Source)> {
    let mut out = Vec::new();
    for source in Source::PRECEDENCE {
        for n in names {
            if let Some(v) = cfg.get_at(n, source) {
                out.push((n.clone(), Some(v), source));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{broker, pairs as layer};

    fn op(name: &str, op: OpType, value: Option<&str>) -> AlterOp {
        AlterOp {
            name: name.into(),
            op,
            value: value.map(str::to_string),
        }
    }

    #[test]
    fn static_only_keys_are_refused_with_kafkas_message() {
        let e = validate_broker_keys(
            &layer(&[("log.retention.hours", "1"), ("num.partitions", "3")]),
            true,
        )
        .unwrap_err();
        assert!(matches!(e, DynamicConfigError::InvalidRequest(_)));
        assert_eq!(
            e.to_string(),
            "Cannot update these configs dynamically: Set(log.retention.hours, num.partitions)"
        );
    }

    #[test]
    fn per_broker_keys_need_a_broker_id_and_keystores_a_listener_prefix() {
        let relogin = layer(&[("sasl.kerberos.min.time.before.relogin", "58000")]);
        assert!(validate_broker_keys(&relogin, true).is_ok());
        let e = validate_broker_keys(&relogin, false).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Cannot update these configs at default cluster level"),
            "{e}"
        );
        let e = validate_broker_keys(&layer(&[("ssl.keystore.location", "/k")]), true).unwrap_err();
        assert!(e.to_string().contains("only per-listener"), "{e}");
        assert!(validate_broker_keys(
            &layer(&[("listener.name.plaintext.ssl.keystore.location", "/k")]),
            true
        )
        .is_ok());
        assert!(validate_broker_keys(
            &layer(&[("listener.name.plaintext.max.connections", "5")]),
            false
        )
        .is_ok());
    }

    #[test]
    fn values_are_checked_by_type_and_as_the_topic_defaults_they_are() {
        let e = validate_broker_keys(&layer(&[("background.threads", "many")]), true).unwrap_err();
        assert!(e.to_string().contains("background.threads"), "{e}");
        let e =
            validate_broker_keys(&layer(&[("log.cleanup.policy", "shred")]), false).unwrap_err();
        assert!(e.to_string().contains("cleanup.policy"), "{e}");
        assert!(validate_broker_keys(&layer(&[("log.retention.ms", "60000")]), false).is_ok());
        // Unknown keys are custom configs, accepted as Kafka accepts them.
        assert!(validate_broker_keys(&layer(&[("my.reporter.endpoint", "x")]), false).is_ok());
    }

    #[test]
    fn thread_counts_move_by_at_most_a_factor_of_two() {
        let current = broker(&[]);
        let ok = current.with_dynamic(layer(&[("background.threads", "9")]), BTreeMap::new());
        assert!(validate_reconfiguration(&current, &ok).is_ok());
        let too_many =
            current.with_dynamic(layer(&[("background.threads", "21")]), BTreeMap::new());
        let e = validate_reconfiguration(&current, &too_many).unwrap_err();
        assert!(e.to_string().contains("double the current value 10"), "{e}");
        let zero = current.with_dynamic(BTreeMap::new(), layer(&[("num.io.threads", "0")]));
        assert!(validate_reconfiguration(&current, &zero).is_err());
    }

    #[test]
    fn append_and_subtract_start_from_the_default_of_list_keys() {
        let ops = [
            op("log.cleanup.policy", OpType::Append, Some("compact")),
            op("background.threads", OpType::Set, Some("9")),
        ];
        let next = apply_incremental(&BTreeMap::new(), &ops, broker_list_base).unwrap();
        assert_eq!(
            next,
            layer(&[
                ("log.cleanup.policy", "delete,compact"),
                ("background.threads", "9")
            ])
        );
        let ops = [
            op("log.cleanup.policy", OpType::Subtract, Some("compact")),
            op("background.threads", OpType::Delete, None),
        ];
        let next = apply_incremental(&next, &ops, broker_list_base).unwrap();
        assert_eq!(next, layer(&[("log.cleanup.policy", "delete")]));
        let e = apply_incremental(
            &next,
            &[op("background.threads", OpType::Append, Some("1"))],
            broker_list_base,
        )
        .unwrap_err();
        assert!(matches!(e, DynamicConfigError::InvalidConfig(_)), "{e}");
    }

    #[test]
    fn duplicate_keys_and_null_values_are_invalid_requests() {
        let e = check_ops(&[
            op("a", OpType::Set, Some("1")),
            op("a", OpType::Delete, None),
        ])
        .unwrap_err();
        assert_eq!(e.to_string(), "Error due to duplicate config keys");
        let e = check_ops(&[op("a", OpType::Set, None)]).unwrap_err();
        assert_eq!(e.to_string(), "Null value not supported for : a");
        assert!(check_ops(&[op("a", OpType::Delete, None)]).is_ok());
    }

    #[test]
    fn changes_persist_and_take_precedence_in_kafkas_order() {
        let dir = tempfile::tempdir().unwrap();
        let static_cfg = broker(&[("log.retention.ms", "1000")]);
        let store = DynamicConfigs::open(dir.path(), &static_cfg).unwrap();
        store
            .alter(
                &Resource::ClusterDefault,
                false,
                |_| Ok(layer(&[("log.retention.ms", "2000")])),
                |_| {},
            )
            .unwrap();
        assert_eq!(
            store.effective().get("log.retention.ms").as_deref(),
            Some("2000")
        );
        assert_eq!(
            store.effective().source("log.retention.ms"),
            Source::DynamicDefault
        );
        store
            .alter(
                &Resource::Broker,
                false,
                |_| Ok(layer(&[("log.retention.ms", "3000")])),
                |_| {},
            )
            .unwrap();
        // validate_only changes nothing.
        store
            .alter(
                &Resource::Broker,
                true,
                |_| Ok(layer(&[("log.retention.ms", "4000")])),
                |_| panic!("applied"),
            )
            .unwrap();
        let reopened = DynamicConfigs::open(dir.path(), &static_cfg).unwrap();
        let eff = reopened.effective();
        assert_eq!(eff.get("log.retention.ms").as_deref(), Some("3000"));
        assert_eq!(eff.source("log.retention.ms"), Source::DynamicBroker);
        let values = synonym_values(&eff, &broker_synonyms("log.retention.ms"));
        let sources: Vec<_> = values
            .iter()
            .map(|(n, v, s)| (n.as_str(), v.as_deref().unwrap(), *s))
            .collect();
        assert_eq!(
            sources,
            vec![
                ("log.retention.ms", "3000", Source::DynamicBroker),
                ("log.retention.ms", "2000", Source::DynamicDefault),
                ("log.retention.ms", "1000", Source::Static),
                ("log.retention.hours", "168", Source::Default),
            ]
        );
    }
}
