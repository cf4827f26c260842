//! Dynamic configs: what AlterConfigs and IncrementalAlterConfigs change while the broker runs.
//! They belong to the cluster: the active controller commits them to the metadata log as
//! `ConfigRecord`s, every broker's image holds them, and each broker follows its image
//! ([`DynamicConfigs::follow`], called by the metadata publisher). Two kinds:
//!
//! - Dynamic broker configs (KIP-226, incremental since KIP-339): a layer per broker (resource
//!   name = its node id) and a cluster-wide default layer (resource name ""), above the static
//!   configuration. Lookups go dynamic per-broker, dynamic default, static, default. Which keys
//!   may change, and at which level, is Kafka's (`Update` in `defs.rs`); keys Kafka does not
//!   know are accepted as custom configs, as Kafka does. The `log.*` topic defaults take effect
//!   on every topic that does not override them as soon as the broker's image has them.
//! - Group configs (KIP-848 `GroupConfig`): per-group overrides of the consumer and share group
//!   timeouts. They only matter to KIP-848 consumer groups and share groups, which Samsa does
//!   not serve yet (its groups are classic); they are validated, stored and described as Kafka
//!   does so that admin tools work.
//!
//! The rules here are checked twice, as Kafka checks them: by the broker a request reaches
//! (the handlers, against its own configuration) and by the active controller before it
//! commits (through `config::validator`). A node's `samsa-dynamic-configs.json` from before the
//! metadata log held configs is imported once ([`LegacyDynamicConfigs`], `upgrade.rs`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::RwLock;
use samsa_cluster::metadata::image::{CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_GROUP};
use samsa_cluster::metadata::MetadataImage;
use serde::Deserialize;

use super::defs::{self, ConfigType, Update};
use super::{group, topic, BrokerConfig, Source};

/// Where a node kept its dynamic configs before the metadata log held them.
pub const LEGACY_FILE: &str = "samsa-dynamic-configs.json";
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
}

impl DynamicConfigError {
    pub fn response_error(&self) -> kafka_protocol::ResponseError {
        use kafka_protocol::ResponseError as E;
        match self {
            DynamicConfigError::InvalidRequest(_) => E::InvalidRequest,
            DynamicConfigError::InvalidConfig(_) => E::InvalidConfig,
            // A configured limit the request would break, like Kafka's policies.
            DynamicConfigError::TooMany(_) => E::PolicyViolation,
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

/// Kafka 4.4's way of naming a set of keys in its messages (a Java set: `[a, b]`).
fn key_set(keys: &[&str]) -> String {
    format!("[{}]", keys.join(", "))
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
            if let Some(why) = def.unsupported_value(v) {
                return Err(DynamicConfigError::InvalidRequest(format!("{k}: {why}")));
            }
            topic::validate_broker_synonym(def.name, v)
                .map_err(|m| DynamicConfigError::InvalidRequest(format!("{k}: {m}")))?;
            super::connection_limits::check_value(def.name, v, listener_base(k).is_some())
                .map_err(DynamicConfigError::InvalidRequest)?;
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
    // Kafka's DynamicListenerConfig: a listener keeps its security protocol. (Samsa's listeners
    // are static, so a changed `listener.security.protocol.map` could only change that.)
    for l in current.listeners() {
        let (old, new) = (
            current.security_protocol(&l.name),
            candidate.security_protocol(&l.name),
        );
        if old != new {
            return Err(DynamicConfigError::InvalidRequest(format!(
                "Invalid dynamic configuration: Security protocol cannot be updated for existing listener {}",
                l.name
            )));
        }
    }
    super::connection_limits::check_per_ip(
        candidate.long("max.connections.per.ip"),
        candidate.get("max.connections.per.ip.overrides").as_deref(),
    )
    .map_err(|m| {
        DynamicConfigError::InvalidRequest(format!("Invalid dynamic configuration: {m}"))
    })?;
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

/// The layers of `samsa-dynamic-configs.json`, the file a node kept its dynamic configs in
/// before they moved into the metadata log: read once, by the import (`upgrade.rs`).
#[derive(Deserialize, Default, Clone, Debug, PartialEq, Eq)]
pub struct LegacyDynamicConfigs {
    /// This broker's layer.
    #[serde(default)]
    pub broker: BTreeMap<String, String>,
    /// The cluster-wide default layer.
    #[serde(default)]
    pub cluster_default: BTreeMap<String, String>,
    #[serde(default)]
    pub groups: BTreeMap<String, BTreeMap<String, String>>,
}

impl LegacyDynamicConfigs {
    /// Reads `dir`'s file (`None` without one). A stored key that is no longer valid is dropped
    /// with a warning, as Kafka ignores invalid persisted dynamic configs
    /// (`fromPersistentProps`).
    pub fn read(dir: &Path, static_config: &BrokerConfig) -> anyhow::Result<Option<Self>> {
        let Some(mut stored) = crate::util::read_legacy_json::<Self>(dir, LEGACY_FILE)? else {
            return Ok(None);
        };
        for (per_broker, layer) in [
            (true, &mut stored.broker),
            (false, &mut stored.cluster_default),
        ] {
            *layer = valid_keys(layer, per_broker, true);
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
        Ok(Some(stored))
    }
}

/// The keys of a broker layer that are valid one by one (the others are left out, and logged
/// when `warn`).
fn valid_keys(
    layer: &BTreeMap<String, String>,
    per_broker: bool,
    warn: bool,
) -> BTreeMap<String, String> {
    layer
        .iter()
        .filter(|(k, v)| {
            let one = BTreeMap::from([((*k).clone(), (*v).clone())]);
            match validate_broker_keys(&one, per_broker) {
                Ok(()) => true,
                Err(e) => {
                    if warn {
                        tracing::warn!("ignoring the dynamic broker config {k}: {e}");
                    }
                    false
                }
            }
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The configs the metadata image holds for a resource (empty if none).
pub fn layer(image: &MetadataImage, resource_type: i8, name: &str) -> BTreeMap<String, String> {
    image
        .configs(resource_type, name)
        .cloned()
        .unwrap_or_default()
}

/// The groups that have configs, by name (what ListConfigResources lists as GROUP resources: in
/// Kafka a group config may exist before the group has any member). O(config resources).
pub fn groups_with_configs(image: &MetadataImage) -> Vec<String> {
    let mut groups: Vec<String> = image
        .config_resources()
        .filter(|(r, _)| r.resource_type == CONFIG_RESOURCE_GROUP)
        .map(|(r, _)| r.resource_name.clone())
        .collect();
    groups.sort();
    groups
}

/// The dynamic layers of one broker as an image holds them: its own and the cluster default.
#[derive(Debug, Default, PartialEq, Eq)]
struct Layers {
    broker: BTreeMap<String, String>,
    cluster_default: BTreeMap<String, String>,
}

/// The effective broker configuration of this node: the static one, with the dynamic layers
/// of the metadata image this broker last published on top.
pub struct DynamicConfigs {
    node_id: i32,
    static_config: BrokerConfig,
    /// The layers `effective` was made of, as the image held them (to tell a change from the
    /// same layers again), and the effective configuration.
    state: RwLock<(Layers, Arc<BrokerConfig>)>,
}

impl DynamicConfigs {
    /// The static configuration alone, until [`Self::follow`] sees an image.
    pub fn new(static_config: &BrokerConfig, node_id: i32) -> DynamicConfigs {
        DynamicConfigs {
            node_id,
            static_config: static_config.clone(),
            state: RwLock::new((Layers::default(), Arc::new(static_config.clone()))),
        }
    }

    /// The effective broker configuration: static keys with the dynamic layers on top.
    pub fn effective(&self) -> Arc<BrokerConfig> {
        self.state.read().1.clone()
    }

    /// This broker's layers in `image`: its own (resource name = node id) and the cluster-wide
    /// default ("").
    fn layers_in(&self, image: &MetadataImage) -> Layers {
        Layers {
            broker: layer(image, CONFIG_RESOURCE_BROKER, &self.node_id.to_string()),
            cluster_default: layer(image, CONFIG_RESOURCE_BROKER, ""),
        }
    }

    /// The configuration `layers` make, without the keys that are not valid at their level
    /// (logged when `warn`).
    fn make(&self, layers: &Layers, warn: bool) -> BrokerConfig {
        let keep = |layer: &BTreeMap<String, String>, per_broker| {
            // Valid as a whole (what the controller let in): no need to look key by key.
            if validate_broker_keys(layer, per_broker).is_ok() {
                layer.clone()
            } else {
                valid_keys(layer, per_broker, warn)
            }
        };
        self.static_config.with_dynamic(
            keep(&layers.broker, true),
            keep(&layers.cluster_default, false),
        )
    }

    /// The effective configuration `image`'s layers make (for answers read from one image).
    pub fn effective_in(&self, image: &MetadataImage) -> Arc<BrokerConfig> {
        let layers = self.layers_in(image);
        let s = self.state.read();
        if s.0 == layers {
            return s.1.clone();
        }
        drop(s);
        Arc::new(self.make(&layers, false))
    }

    /// The configuration `broker` and `cluster_default` would make of this node's.
    pub fn with_layers(
        &self,
        broker: BTreeMap<String, String>,
        cluster_default: BTreeMap<String, String>,
    ) -> BrokerConfig {
        self.static_config.with_dynamic(broker, cluster_default)
    }

    /// Takes the layers of `image` (Kafka's `DynamicConfigPublisher`); returns the new
    /// effective configuration when they changed.
    pub fn follow(&self, image: &MetadataImage) -> Option<Arc<BrokerConfig>> {
        let layers = self.layers_in(image);
        if self.state.read().0 == layers {
            return None;
        }
        let effective = Arc::new(self.make(&layers, true));
        tracing::info!(
            broker = ?layers.broker.keys().collect::<Vec<_>>(),
            cluster_default = ?layers.cluster_default.keys().collect::<Vec<_>>(),
            "dynamic broker configs in force"
        );
        *self.state.write() = (layers, effective.clone());
        Some(effective)
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

/// The synonyms DescribeConfigs lists for broker key `name`, as Kafka's `ConfigHelper` lists
/// them: every value of the key's synonyms at every level ([`synonym_values`]), then from the
/// key's own first entry on. More specific synonyms before it (`log.retention.ms` when
/// describing `log.retention.hours`, a listener's override of a base key) are dropped, and a
/// key without a value of its own has none at all, even where a less specific synonym has one
/// (`log.retention.hours` has a default while `log.retention.ms` has none).
pub fn listed_synonyms(cfg: &BrokerConfig, name: &str) -> Vec<(String, Option<String>, Source)> {
    let mut levels = synonym_values(cfg, &broker_synonyms(name));
    let own = levels
        .iter()
        .position(|(n, _, _)| n == name)
        .unwrap_or(levels.len());
    levels.drain(..own);
    levels
}

#[cfg(test)]
mod tests {
    use samsa_cluster::metadata::records::ConfigRecord;
    use samsa_cluster::metadata::MetadataRecord;

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
    fn a_listeners_security_protocol_cannot_change_dynamically() {
        let current = broker(&[]);
        let e = validate_reconfiguration(
            &current,
            &current.with_dynamic(
                layer(&[("listener.security.protocol.map", "PLAINTEXT:SSL")]),
                BTreeMap::new(),
            ),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("Security protocol cannot be updated for existing listener PLAINTEXT"),
            "{e}"
        );
        validate_reconfiguration(
            &current,
            &current.with_dynamic(
                layer(&[(
                    "listener.security.protocol.map",
                    "PLAINTEXT:PLAINTEXT,SSL:SSL",
                )]),
                BTreeMap::new(),
            ),
        )
        .unwrap();
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
            "Cannot update these configs dynamically: [log.retention.hours, num.partitions]"
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

    fn config(resource_type: i8, name: &str, key: &str, value: &str) -> MetadataRecord {
        ConfigRecord {
            resource_type,
            resource_name: name.into(),
            name: key.into(),
            value: Some(value.into()),
            ..Default::default()
        }
        .into()
    }

    #[test]
    fn the_images_layers_take_precedence_in_kafkas_order() {
        let static_cfg = broker(&[("log.retention.ms", "1000")]);
        let configs = DynamicConfigs::new(&static_cfg, 1);
        let image = MetadataImage::new()
            .with_records(&[
                config(CONFIG_RESOURCE_BROKER, "", "log.retention.ms", "2000"),
                // Another broker's layer is not this one's.
                config(CONFIG_RESOURCE_BROKER, "2", "log.retention.ms", "9"),
            ])
            .unwrap();
        let effective = configs.follow(&image).expect("the default layer changed");
        assert_eq!(effective.get("log.retention.ms").as_deref(), Some("2000"));
        assert_eq!(effective.source("log.retention.ms"), Source::DynamicDefault);
        assert!(configs.follow(&image).is_none(), "the same layers again");

        let image = image
            .with_records(&[config(
                CONFIG_RESOURCE_BROKER,
                "1",
                "log.retention.ms",
                "3000",
            )])
            .unwrap();
        // Read from an image before the broker follows it.
        let eff = configs.effective_in(&image);
        assert_eq!(eff.get("log.retention.ms").as_deref(), Some("3000"));
        assert_eq!(
            configs.effective().get("log.retention.ms").as_deref(),
            Some("2000")
        );
        configs.follow(&image).unwrap();
        let eff = configs.effective();
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

    #[test]
    fn keys_no_longer_valid_at_their_level_are_left_out() {
        let configs = DynamicConfigs::new(&broker(&[]), 1);
        let image = MetadataImage::new()
            .with_records(&[
                config(CONFIG_RESOURCE_BROKER, "", "log.retention.ms", "2000"),
                config(CONFIG_RESOURCE_BROKER, "", "num.partitions", "7"),
            ])
            .unwrap();
        let eff = configs.follow(&image).unwrap();
        assert_eq!(eff.get("log.retention.ms").as_deref(), Some("2000"));
        assert_eq!(eff.source("num.partitions"), Source::Default);
    }

    #[test]
    fn the_legacy_file_is_read_without_what_is_no_longer_valid() {
        let dir = tempfile::tempdir().unwrap();
        let static_cfg = broker(&[]);
        assert_eq!(
            LegacyDynamicConfigs::read(dir.path(), &static_cfg).unwrap(),
            None
        );
        std::fs::write(
            dir.path().join(LEGACY_FILE),
            r#"{"version": 1,
                "broker": {"log.retention.ms": "86400000", "num.partitions": "3"},
                "cluster_default": {"background.threads": "12"},
                "groups": {"g": {"consumer.session.timeout.ms": "50000"},
                           "bad": {"session.timeout.ms": "1"}}}"#,
        )
        .unwrap();
        let read = LegacyDynamicConfigs::read(dir.path(), &static_cfg)
            .unwrap()
            .unwrap();
        assert_eq!(read.broker, layer(&[("log.retention.ms", "86400000")]));
        assert_eq!(read.cluster_default, layer(&[("background.threads", "12")]));
        assert_eq!(
            read.groups.keys().collect::<Vec<_>>(),
            vec!["g"],
            "a group with an unknown key is left out"
        );
        std::fs::write(dir.path().join(LEGACY_FILE), b"{not json").unwrap();
        assert!(LegacyDynamicConfigs::read(dir.path(), &static_cfg).is_err());
    }
}
