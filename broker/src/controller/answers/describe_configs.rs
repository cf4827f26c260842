//! DescribeConfigs' answer ([`describe`] from a [`Basis`]), which the client listeners and the
//! controller listener (KIP-919) both give: here, below both, so the controller needs no handler.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::metadata::MetadataImage;

use crate::config::client_metrics::CLIENT_METRICS_CONFIGS;
use crate::config::defs::{self, ConfigType, BROKER_CONFIGS, GROUP_CONFIGS};
use crate::config::dynamic::{broker_key_def, layer, listed_synonyms};
use crate::config::topic::{self as topic_config, source_code};
use crate::config::{group as group_config, loggers, BrokerConfig, Source};

pub use samsa_cluster::metadata::image::{
    CONFIG_RESOURCE_BROKER as RESOURCE_BROKER,
    CONFIG_RESOURCE_BROKER_LOGGER as RESOURCE_BROKER_LOGGER,
    CONFIG_RESOURCE_CLIENT_METRICS as RESOURCE_CLIENT_METRICS,
    CONFIG_RESOURCE_GROUP as RESOURCE_GROUP, CONFIG_RESOURCE_TOPIC as RESOURCE_TOPIC,
};

/// DescribeConfigs' `config_source` of a logger (Kafka's DYNAMIC_BROKER_LOGGER_CONFIG).
const DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;
/// DescribeConfigs' `config_source` of a subscription's own value (Kafka's
/// CLIENT_METRICS_CONFIG).
const CLIENT_METRICS_CONFIG: i8 = 7;

/// Which broker layer a BROKER resource name designates on the node `node_id` (the client
/// listeners' `broker_resource`).
pub fn broker_resource_of(
    node_id: i32,
    name: &str,
    describe: bool,
) -> Result<bool, (ResponseError, String)> {
    if name.is_empty() {
        return Ok(false);
    }
    let id: i32 = name.parse().map_err(|_| {
        let what = if describe { "Broker" } else { "Node" };
        (
            ResponseError::InvalidRequest,
            format!("{what} id must be an integer, but it is: {name}"),
        )
    })?;
    if id != node_id {
        let expected = if describe {
            format!("{node_id} or empty string")
        } else {
            node_id.to_string()
        };
        return Err((
            ResponseError::InvalidRequest,
            format!("Unexpected broker id, expected {expected}, but received {name}"),
        ));
    }
    Ok(true)
}

/// What one request asks to describe.
struct Wanted {
    keys: Option<Vec<String>>,
    synonyms: bool,
    documentation: bool,
}

impl Wanted {
    /// Kafka lists everything when the key list is null or empty.
    fn wants(&self, name: &str) -> bool {
        self.keys
            .as_ref()
            .is_none_or(|k| k.is_empty() || k.iter().any(|x| x == name))
    }
}

/// What a DescribeConfigs answer is made of: the client listeners' (from a handler's `Ctx`)
/// and the controller listener's (KIP-919: Kafka's tools given `--bootstrap-controller`), so
/// that both answer alike.
pub struct Basis<'a> {
    pub node_id: i32,
    /// The committed metadata image: topics, their overrides, the dynamic layers, groups.
    pub image: &'a MetadataImage,
    /// This node's configuration with the image's dynamic layers.
    pub cfg: &'a BrokerConfig,
    /// The overrides of a topic that only this node knows (from before the metadata log held
    /// topics), if `name` is one.
    pub own_topic: &'a dyn Fn(&str) -> Option<topic_config::TopicOverrides>,
    /// The ACL check of DESCRIBE_CONFIGS on a resource (type, name), as the client listeners'
    /// `handlers::describe_configs::authorize_resource` makes it.
    pub authorize: &'a dyn Fn(i8, &str) -> Result<(), (ResponseError, String)>,
}

/// The answer to `req` from `source`.
pub fn describe(source: &Basis<'_>, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let mut resp = DescribeConfigsResponse::default();
    let (image, cfg) = (source.image, source.cfg);
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        let wanted = Wanted {
            keys: res
                .configuration_keys
                .map(|k| k.iter().map(|s| s.to_string()).collect()),
            synonyms: req.include_synonyms,
            documentation: req.include_documentation,
        };
        let name = res.resource_name.as_str();
        let authorized = (source.authorize)(res.resource_type, name);
        let configs = match res.resource_type {
            _ if authorized.is_err() => authorized.map(|()| Vec::new()),
            RESOURCE_TOPIC => describe_topic(source, name, &wanted),
            RESOURCE_BROKER => broker_resource_of(source.node_id, name, true)
                .map(|per_broker| describe_broker(cfg, per_broker, &wanted)),
            RESOURCE_BROKER_LOGGER => logger_resource(source.node_id, name)
                .map(|()| describe_loggers(&loggers::loggers().describe(), &wanted)),
            RESOURCE_GROUP => describe_group(image, cfg, name, &wanted),
            RESOURCE_CLIENT_METRICS => describe_client_metrics(image, name, &wanted),
            other => Err((
                ResponseError::InvalidRequest,
                format!("Unsupported resource type: {other}"),
            )),
        };
        match configs {
            Ok(c) => {
                r.configs = c;
                r.error_message = Some(StrBytes::default());
            }
            Err((code, message)) => {
                r.error_code = code.code();
                r.error_message = Some(StrBytes::from_string(message));
            }
        }
        resp.results.push(r);
    }
    resp
}

fn entry(
    name: &str,
    value: Option<String>,
    source: i8,
    kind: Option<ConfigType>,
    doc: Option<&'static str>,
    wanted: &Wanted,
) -> DescribeConfigsResourceResult {
    let mut c = DescribeConfigsResourceResult::default();
    c.name = StrBytes::from_string(name.to_string());
    c.value = value.map(StrBytes::from_string);
    c.config_source = source;
    // Kafka's type codes; 0 (UNKNOWN) for custom keys.
    c.config_type = kind.map_or(0, ConfigType::describe_code);
    // Null unless asked for, as Kafka sends it (the message's default is "").
    c.documentation = doc
        .filter(|_| wanted.documentation)
        .map(StrBytes::from_static_str);
    c
}

fn synonym(name: &str, value: Option<String>, source: i8) -> DescribeConfigsSynonym {
    let mut s = DescribeConfigsSynonym::default();
    s.name = StrBytes::from_string(name.to_string());
    s.value = value.map(StrBytes::from_string);
    s.source = source;
    s
}

fn describe_topic(
    source: &Basis<'_>,
    name: &str,
    wanted: &Wanted,
) -> Result<Vec<DescribeConfigsResourceResult>, (ResponseError, String)> {
    if !samsa_storage::is_valid_topic_name(name) {
        return Err((
            ResponseError::InvalidTopicException,
            if name.is_empty() {
                "Topic name is illegal, it can't be empty".to_string()
            } else {
                format!("Topic name \"{name}\" is illegal: a topic name is 1 to 249 of ASCII letters, digits, '.', '_' and '-', and neither '.' nor '..'")
            },
        ));
    }
    let overrides = if source.image.topic_by_name(name).is_some() {
        layer(source.image, RESOURCE_TOPIC, name)
    } else {
        // Kafka answers an unknown topic with an empty message.
        (source.own_topic)(name).ok_or((ResponseError::UnknownTopicOrPartition, String::new()))?
    };
    Ok(topic_entries(source.cfg, &overrides, wanted))
}

/// A topic's entries given its overrides.
fn topic_entries(
    cfg: &BrokerConfig,
    overrides: &topic_config::TopicOverrides,
    wanted: &Wanted,
) -> Vec<DescribeConfigsResourceResult> {
    topic_config::all_effective(cfg, overrides)
        .into_iter()
        .filter(|(d, _, _)| wanted.wants(d.name))
        .map(|(d, value, _)| {
            // As Kafka's ConfigHelper: the topic's override, then what DescribeConfigs lists
            // for the key's broker synonym (the first of `d.synonyms`, e.g. log.retention.ms
            // for retention.ms); the source is the first entry's, DEFAULT_CONFIG without one.
            // So a value that comes from a less specific broker key alone (log.retention.hours
            // while log.retention.ms is unset) shows as a default without synonyms, as in Kafka.
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.get(d.name) {
                synonyms.push(synonym(
                    d.name,
                    Some(v.clone()),
                    source_code::DYNAMIC_TOPIC_CONFIG,
                ));
            }
            if let Some((broker_key, _)) = d.synonyms.first() {
                for (n, v, s) in listed_synonyms(cfg, broker_key) {
                    synonyms.push(synonym(&n, v, s.code()));
                }
            }
            let source = synonyms
                .first()
                .map_or(source_code::DEFAULT_CONFIG, |s| s.source);
            let mut c = entry(d.name, value, source, Some(d.kind), Some(d.doc), wanted);
            if wanted.synonyms {
                c.synonyms = synonyms;
            }
            c
        })
        .collect()
}

/// Kafka's `KafkaConfig.maybeSensitive`: passwords, and keys of unknown type (custom keys).
fn sensitive(kind: Option<ConfigType>) -> bool {
    kind.is_none_or(|k| k == ConfigType::Password)
}

fn describe_broker(
    cfg: &BrokerConfig,
    per_broker: bool,
    wanted: &Wanted,
) -> Vec<DescribeConfigsResourceResult> {
    let defaults = cfg.dynamic_layer(Source::DynamicDefault);
    let names: Vec<String> = if per_broker {
        let custom = cfg
            .dynamic_layer(Source::DynamicBroker)
            .keys()
            .chain(defaults.keys())
            .filter(|k| defs::broker_def(k).is_none())
            .cloned()
            .collect::<std::collections::BTreeSet<_>>();
        // Kafka's internal and dynamic-only keys only once some level sets them.
        BROKER_CONFIGS
            .iter()
            .filter(|d| !d.hidden || cfg.is_set(d.name))
            .map(|d| d.name.to_string())
            .chain(custom)
            .collect()
    } else {
        defaults.keys().cloned().collect()
    };
    names
        .iter()
        .filter(|n| wanted.wants(n))
        .map(|name| {
            let def = broker_key_def(name);
            let kind = def.map(|d| d.kind);
            let hide = sensitive(kind);
            // At the cluster level only the entries of the dynamic default layer, picked from
            // the list Kafka makes for a broker (first the list, then the level).
            let mut levels = listed_synonyms(cfg, name);
            if !per_broker {
                levels.retain(|(_, _, s)| *s == Source::DynamicDefault);
            }
            // In KRaft, broker.id is node.id's synonym: Kafka reports the node id there, at
            // the level node.id was set.
            let node_id_set = cfg.source("node.id") != Source::Default;
            if per_broker && name == "broker.id" && node_id_set {
                levels = vec![(
                    name.clone(),
                    Some(cfg.node_id().to_string()),
                    cfg.source("node.id"),
                )];
                levels.extend(
                    cfg.get_at(name, Source::Default)
                        .map(|d| (name.clone(), Some(d), Source::Default)),
                );
            }
            let source = levels
                .first()
                .map_or(source_code::DEFAULT_CONFIG, |(_, _, s)| s.code());
            let value = if hide {
                None
            } else if per_broker && name == "broker.id" {
                Some(cfg.node_id().to_string())
            } else if per_broker {
                cfg.get(name)
            } else {
                cfg.get_at(name, Source::DynamicDefault)
            };
            let mut c = entry(name, value, source, kind, def.map(|d| d.doc), wanted);
            c.is_sensitive = hide;
            c.read_only = !def.is_none_or(|d| d.is_dynamic());
            if wanted.synonyms {
                c.synonyms = levels
                    .into_iter()
                    .map(|(n, v, s)| synonym(&n, if hide { None } else { v }, s.code()))
                    .collect();
            }
            c
        })
        .collect()
}

fn describe_group(
    image: &MetadataImage,
    cfg: &BrokerConfig,
    name: &str,
    wanted: &Wanted,
) -> Result<Vec<DescribeConfigsResourceResult>, (ResponseError, String)> {
    if name.is_empty() {
        return Err((
            ResponseError::InvalidRequest,
            "Group name must not be empty".into(),
        ));
    }
    let overrides = layer(image, RESOURCE_GROUP, name);
    Ok(GROUP_CONFIGS
        .iter()
        .filter(|d| wanted.wants(d.name))
        .map(|d| {
            let (value, set) = group_config::effective(cfg, &overrides, d);
            // As Kafka lists them: the group's own value, then the broker key that supplies
            // the default at each level it has a value, or, for a key with no broker key,
            // the key itself with its default.
            let mut synonyms = Vec::new();
            if set {
                synonyms.push(synonym(
                    d.name,
                    Some(value.clone()),
                    source_code::GROUP_CONFIG,
                ));
            }
            match d.broker_default {
                Some(key) => synonyms.extend(
                    listed_synonyms(cfg, key)
                        .into_iter()
                        .map(|(n, v, s)| synonym(&n, v, s.code())),
                ),
                None => synonyms.push(synonym(
                    d.name,
                    Some(d.default.to_string()),
                    source_code::DEFAULT_CONFIG,
                )),
            }
            let source = synonyms
                .first()
                .map_or(source_code::DEFAULT_CONFIG, |s| s.source);
            let mut c = entry(
                d.name,
                Some(value),
                source,
                Some(d.kind),
                Some(d.doc),
                wanted,
            );
            if wanted.synonyms {
                c.synonyms = synonyms;
            }
            c
        })
        .collect())
}

/// Which loggers a BROKER_LOGGER resource name designates: this broker's, by its node id
/// (Kafka's words for the others).
fn logger_resource(node_id: i32, name: &str) -> Result<(), (ResponseError, String)> {
    if name.is_empty() {
        return Err((
            ResponseError::InvalidRequest,
            "Broker id must not be empty".into(),
        ));
    }
    match name.parse::<i32>() {
        Ok(id) if id == node_id => Ok(()),
        Ok(_) => Err((
            ResponseError::InvalidRequest,
            format!("Unexpected broker id, expected {node_id}, but received {name}"),
        )),
        Err(_) => Err((
            ResponseError::InvalidRequest,
            format!("Broker id must be an integer, but it is: {name}"),
        )),
    }
}

/// The loggers and their levels, as Kafka lists them: each from DYNAMIC_BROKER_LOGGER_CONFIG,
/// of unknown type, with empty documentation and no synonyms.
fn describe_loggers(
    loggers: &[(String, String)],
    wanted: &Wanted,
) -> Vec<DescribeConfigsResourceResult> {
    loggers
        .iter()
        .filter(|(name, _)| wanted.wants(name))
        .map(|(name, level)| {
            let mut c = entry(
                name,
                Some(level.clone()),
                DYNAMIC_BROKER_LOGGER_CONFIG,
                None,
                None,
                wanted,
            );
            c.documentation = Some(StrBytes::default());
            c
        })
        .collect()
}

/// A client-metrics subscription (KIP-714), set or not: its configs, the subscription's own
/// values first-hand (CLIENT_METRICS_CONFIG, listed as their own synonym) and Kafka's defaults
/// for the rest (without synonyms).
fn describe_client_metrics(
    image: &MetadataImage,
    name: &str,
    wanted: &Wanted,
) -> Result<Vec<DescribeConfigsResourceResult>, (ResponseError, String)> {
    if name.is_empty() {
        return Err((
            ResponseError::InvalidRequest,
            "Subscription name can't be empty".into(),
        ));
    }
    let set = layer(image, RESOURCE_CLIENT_METRICS, name);
    Ok(CLIENT_METRICS_CONFIGS
        .iter()
        .filter(|d| wanted.wants(d.name))
        .map(|d| {
            let own = set.get(d.name);
            let (value, source) = match own {
                Some(v) => (v.clone(), CLIENT_METRICS_CONFIG),
                None => (d.default.to_string(), source_code::DEFAULT_CONFIG),
            };
            let mut c = entry(
                d.name,
                Some(value.clone()),
                source,
                Some(d.kind),
                Some(d.doc),
                wanted,
            );
            if wanted.synonyms && own.is_some() {
                c.synonyms = vec![synonym(d.name, Some(value), source)];
            }
            c
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::test_support::{broker, pairs};

    /// Kafka's `ServerTopicConfigSynonyms`: each topic config and the broker key whose
    /// synonyms DescribeConfigs lists for it.
    const KAFKA_BROKER_SYNONYM: &[(&str, &str)] = &[
        ("segment.bytes", "log.segment.bytes"),
        ("segment.ms", "log.roll.ms"),
        ("segment.jitter.ms", "log.roll.jitter.ms"),
        ("segment.index.bytes", "log.index.size.max.bytes"),
        ("flush.messages", "log.flush.interval.messages"),
        ("flush.ms", "log.flush.interval.ms"),
        ("retention.bytes", "log.retention.bytes"),
        ("retention.ms", "log.retention.ms"),
        ("max.message.bytes", "message.max.bytes"),
        ("index.interval.bytes", "log.index.interval.bytes"),
        ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
        ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
        ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
        ("file.delete.delay.ms", "log.segment.delete.delay.ms"),
        (
            "min.cleanable.dirty.ratio",
            "log.cleaner.min.cleanable.ratio",
        ),
        ("cleanup.policy", "log.cleanup.policy"),
        (
            "unclean.leader.election.enable",
            "unclean.leader.election.enable",
        ),
        ("min.insync.replicas", "min.insync.replicas"),
        ("compression.type", "compression.type"),
        ("compression.gzip.level", "compression.gzip.level"),
        ("compression.lz4.level", "compression.lz4.level"),
        ("compression.zstd.level", "compression.zstd.level"),
        ("preallocate", "log.preallocate"),
        (
            "max.decompressed.message.bytes",
            "max.decompressed.message.bytes",
        ),
        ("remote.copy.lag.bytes", "log.remote.copy.lag.bytes"),
        ("remote.copy.lag.ms", "log.remote.copy.lag.ms"),
        ("message.timestamp.type", "log.message.timestamp.type"),
        (
            "message.timestamp.before.max.ms",
            "log.message.timestamp.before.max.ms",
        ),
        (
            "message.timestamp.after.max.ms",
            "log.message.timestamp.after.max.ms",
        ),
        ("local.retention.ms", "log.local.retention.ms"),
        ("local.retention.bytes", "log.local.retention.bytes"),
    ];

    /// The broker keys above whose Kafka default is null: with nothing set they have no
    /// synonym of their own, so the topic config lists none.
    const NULL_BY_DEFAULT: &[&str] = &[
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.flush.interval.ms",
        "log.retention.ms",
    ];

    fn all() -> Wanted {
        Wanted {
            keys: None,
            synonyms: true,
            documentation: false,
        }
    }

    fn listed(c: &DescribeConfigsResourceResult) -> Vec<(String, Option<String>, i8)> {
        c.synonyms
            .iter()
            .map(|s| {
                (
                    s.name.to_string(),
                    s.value.as_ref().map(|v| v.to_string()),
                    s.source,
                )
            })
            .collect()
    }

    fn describe_topic_config(
        cfg: &BrokerConfig,
        overrides: &[(&str, &str)],
        name: &str,
    ) -> DescribeConfigsResourceResult {
        topic_entries(cfg, &pairs(overrides), &all())
            .into_iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("{name} is described"))
    }

    fn own(name: &str, value: &str, source: i8) -> (String, Option<String>, i8) {
        (name.to_string(), Some(value.to_string()), source)
    }

    #[test]
    fn every_topic_config_with_a_broker_synonym_lists_it_as_kafka_does() {
        let cfg = broker(&[]);
        let entries = topic_entries(&cfg, &pairs(&[]), &all());
        let mut checked = 0;
        for c in &entries {
            let name = c.name.as_str();
            let Some(def) = defs::topic_def(name) else {
                panic!("{name} has a definition")
            };
            let Some((_, key)) = KAFKA_BROKER_SYNONYM.iter().find(|(t, _)| *t == name) else {
                assert!(
                    def.synonyms.is_empty(),
                    "{name}: Kafka has no broker synonym"
                );
                assert!(c.synonyms.is_empty(), "{name}: {:?}", c.synonyms);
                continue;
            };
            assert_eq!(def.synonyms.first().map(|s| s.0), Some(*key), "{name}");
            checked += 1;
            // Nothing set: the broker key's default, unless it has none (then the value
            // comes from a less specific key, or the topic default, and nothing is listed).
            let expected = if NULL_BY_DEFAULT.contains(key) {
                vec![]
            } else {
                vec![own(
                    key,
                    c.value.as_deref().unwrap(),
                    source_code::DEFAULT_CONFIG,
                )]
            };
            assert_eq!(listed(c), expected, "{name}");
            assert_eq!(c.config_source, source_code::DEFAULT_CONFIG, "{name}");
            // Overridden on the topic: the override first, the same list after it.
            let over = describe_topic_config(&cfg, &[(name, "1")], name);
            let mut with_override = vec![own(name, "1", source_code::DYNAMIC_TOPIC_CONFIG)];
            with_override.extend(expected);
            assert_eq!(listed(&over), with_override, "{name}");
            assert_eq!(over.config_source, source_code::DYNAMIC_TOPIC_CONFIG);
        }
        assert_eq!(
            checked,
            KAFKA_BROKER_SYNONYM.len(),
            "every synonym is served"
        );
    }

    #[test]
    fn retention_ms_lists_synonyms_from_log_retention_ms_on() {
        // Unset: the default of log.retention.hours gives the value, nothing is listed.
        let c = describe_topic_config(&broker(&[]), &[], "retention.ms");
        assert_eq!(c.value.as_deref(), Some("604800000"));
        assert_eq!(listed(&c), vec![]);
        assert_eq!(c.config_source, source_code::DEFAULT_CONFIG);
        // Only log.retention.hours set: it gives the value, yet Kafka lists nothing and
        // calls it a default (its list starts at log.retention.ms).
        let c = describe_topic_config(
            &broker(&[("log.retention.hours", "24")]),
            &[],
            "retention.ms",
        );
        assert_eq!(c.value.as_deref(), Some("86400000"));
        assert_eq!(listed(&c), vec![]);
        assert_eq!(c.config_source, source_code::DEFAULT_CONFIG);
        // log.retention.ms set: it and every less specific synonym with a value.
        let cfg = broker(&[("log.retention.ms", "1000"), ("log.retention.minutes", "5")]);
        let c = describe_topic_config(&cfg, &[], "retention.ms");
        assert_eq!(c.value.as_deref(), Some("1000"));
        assert_eq!(
            listed(&c),
            vec![
                own(
                    "log.retention.ms",
                    "1000",
                    source_code::STATIC_BROKER_CONFIG
                ),
                own(
                    "log.retention.minutes",
                    "5",
                    source_code::STATIC_BROKER_CONFIG
                ),
                own("log.retention.hours", "168", source_code::DEFAULT_CONFIG),
            ]
        );
        assert_eq!(c.config_source, source_code::STATIC_BROKER_CONFIG);
        // A dynamic cluster default of log.retention.ms comes before the static values.
        let cfg = cfg.with_dynamic(BTreeMap::new(), pairs(&[("log.retention.ms", "2000")]));
        let c = describe_topic_config(&cfg, &[], "retention.ms");
        assert_eq!(c.value.as_deref(), Some("2000"));
        assert_eq!(
            listed(&c)[..2],
            [
                own(
                    "log.retention.ms",
                    "2000",
                    source_code::DYNAMIC_DEFAULT_BROKER_CONFIG
                ),
                own(
                    "log.retention.ms",
                    "1000",
                    source_code::STATIC_BROKER_CONFIG
                ),
            ]
        );
        assert_eq!(c.config_source, source_code::DYNAMIC_DEFAULT_BROKER_CONFIG);
    }

    #[test]
    fn flush_ms_lists_the_scheduler_interval_only_after_log_flush_interval_ms() {
        let c = describe_topic_config(&broker(&[]), &[], "flush.ms");
        assert_eq!(listed(&c), vec![]);
        let c = describe_topic_config(&broker(&[("log.flush.interval.ms", "10")]), &[], "flush.ms");
        assert_eq!(
            listed(&c),
            vec![
                own(
                    "log.flush.interval.ms",
                    "10",
                    source_code::STATIC_BROKER_CONFIG
                ),
                own(
                    "log.flush.scheduler.interval.ms",
                    "9223372036854775807",
                    source_code::DEFAULT_CONFIG
                ),
            ]
        );
    }

    fn group_entry(
        cfg: &BrokerConfig,
        image: &MetadataImage,
        name: &str,
    ) -> DescribeConfigsResourceResult {
        describe_group(image, cfg, "g", &all())
            .unwrap()
            .into_iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("{name} is described"))
    }

    #[test]
    fn a_group_config_lists_its_broker_key_as_kafka_does() {
        use samsa_cluster::metadata::records::ConfigRecord;
        let cfg = broker(&[("group.consumer.session.timeout.ms", "50000")]);
        let image = MetadataImage::new();
        // Unset: the broker key at each level it has a value, the source the first's.
        let c = group_entry(&cfg, &image, "consumer.session.timeout.ms");
        assert_eq!(c.value.as_deref(), Some("50000"));
        assert_eq!(c.config_source, source_code::STATIC_BROKER_CONFIG);
        assert_eq!(
            listed(&c),
            vec![
                own(
                    "group.consumer.session.timeout.ms",
                    "50000",
                    source_code::STATIC_BROKER_CONFIG
                ),
                own(
                    "group.consumer.session.timeout.ms",
                    "45000",
                    source_code::DEFAULT_CONFIG
                ),
            ]
        );
        // A key with no broker key lists itself with its default.
        let c = group_entry(&cfg, &image, "share.isolation.level");
        assert_eq!(
            listed(&c),
            vec![own(
                "share.isolation.level",
                "read_uncommitted",
                source_code::DEFAULT_CONFIG
            )]
        );
        // streams.assignor.name takes the broker's first assignor.
        let c = group_entry(&cfg, &image, "streams.assignor.name");
        assert_eq!(c.value.as_deref(), Some("sticky"));
        assert_eq!(
            listed(&c),
            vec![own(
                "group.streams.assignors",
                "sticky",
                source_code::DEFAULT_CONFIG
            )]
        );
        // Set on the group: its own value first, then the broker key's.
        let image = image
            .with_records(&[ConfigRecord {
                resource_type: RESOURCE_GROUP,
                resource_name: "g".into(),
                name: "consumer.heartbeat.interval.ms".into(),
                value: Some("6000".into()),
                ..Default::default()
            }
            .into()])
            .unwrap();
        let c = group_entry(&cfg, &image, "consumer.heartbeat.interval.ms");
        assert_eq!(c.config_source, source_code::GROUP_CONFIG);
        assert_eq!(
            listed(&c),
            vec![
                own(
                    "consumer.heartbeat.interval.ms",
                    "6000",
                    source_code::GROUP_CONFIG
                ),
                own(
                    "group.consumer.heartbeat.interval.ms",
                    "5000",
                    source_code::DEFAULT_CONFIG
                ),
            ]
        );
    }

    fn broker_entry(cfg: &BrokerConfig, name: &str) -> Option<DescribeConfigsResourceResult> {
        describe_broker(cfg, true, &all())
            .into_iter()
            .find(|c| c.name.as_str() == name)
    }

    #[test]
    fn broker_id_is_the_node_id_and_kafkas_unlisted_keys_show_once_set() {
        let c = broker_entry(&broker(&[("node.id", "3")]), "broker.id").unwrap();
        assert_eq!(c.value.as_deref(), Some("3"));
        assert_eq!(c.config_source, source_code::STATIC_BROKER_CONFIG);
        assert_eq!(
            listed(&c),
            vec![
                own("broker.id", "3", source_code::STATIC_BROKER_CONFIG),
                own("broker.id", "-1", source_code::DEFAULT_CONFIG),
            ]
        );
        let cfg = broker(&[]);
        assert!(broker_entry(&cfg, "unclean.leader.election.interval.ms").is_none());
        assert!(broker_entry(&cfg, "leader.replication.throttled.rate").is_none());
        assert!(broker_entry(&cfg, "sasl.oauthbearer.jwks.endpoint.url").is_some());
        let cfg = cfg.with_dynamic(
            pairs(&[("leader.replication.throttled.rate", "1000")]),
            BTreeMap::new(),
        );
        let c = broker_entry(&cfg, "leader.replication.throttled.rate").unwrap();
        assert_eq!(c.config_source, source_code::DYNAMIC_BROKER_CONFIG);
    }

    #[test]
    fn loggers_are_described_as_kafka_describes_them() {
        let loggers = vec![
            ("root".to_string(), "INFO".to_string()),
            ("samsa_broker".to_string(), "DEBUG".to_string()),
        ];
        let wanted = Wanted {
            keys: Some(vec!["root".into()]),
            synonyms: true,
            documentation: false,
        };
        let described = describe_loggers(&loggers, &wanted);
        assert_eq!(described.len(), 1);
        let root = &described[0];
        assert_eq!(root.value.as_deref(), Some("INFO"));
        assert_eq!(root.config_source, DYNAMIC_BROKER_LOGGER_CONFIG);
        assert_eq!(root.config_type, 0, "UNKNOWN");
        assert_eq!(root.documentation.as_deref(), Some(""));
        assert!(!root.read_only && root.synonyms.is_empty());
        assert!(logger_resource(1, "1").is_ok());
        for name in ["", "2", "one"] {
            assert_eq!(
                logger_resource(1, name).unwrap_err().0,
                ResponseError::InvalidRequest,
                "{name:?}"
            );
        }
    }

    #[test]
    fn a_broker_key_lists_its_own_synonyms_first_and_at_the_cluster_level_only_dynamic_defaults() {
        let cfg = broker(&[("log.retention.ms", "1000")]).with_dynamic(
            pairs(&[("log.retention.hours", "3")]),
            pairs(&[("log.retention.hours", "2")]),
        );
        let hours = |per_broker| {
            describe_broker(&cfg, per_broker, &all())
                .into_iter()
                .find(|c| c.name.as_str() == "log.retention.hours")
                .unwrap()
        };
        // Kafka drops what comes before the key's own first entry, not what comes after.
        assert_eq!(
            listed(&hours(true)),
            vec![
                own(
                    "log.retention.hours",
                    "3",
                    source_code::DYNAMIC_BROKER_CONFIG
                ),
                own(
                    "log.retention.hours",
                    "2",
                    source_code::DYNAMIC_DEFAULT_BROKER_CONFIG
                ),
                own(
                    "log.retention.ms",
                    "1000",
                    source_code::STATIC_BROKER_CONFIG
                ),
                own("log.retention.hours", "168", source_code::DEFAULT_CONFIG),
            ]
        );
        assert_eq!(
            listed(&hours(false)),
            vec![own(
                "log.retention.hours",
                "2",
                source_code::DYNAMIC_DEFAULT_BROKER_CONFIG
            )]
        );
    }
}
