//! DescribeConfigs: every topic, broker or group config with its value, source, type,
//! documentation and (when asked) synonyms, as Kafka reports them. Tools rely on it (Schema
//! Registry reads `cleanup.policy`; Kafka's admin tools list what differs from defaults by
//! `config_source`). Answered from this broker's metadata image, which holds every topic's
//! overrides, every broker's dynamic layer, the cluster default and the group configs, so every
//! broker describes a resource alike (a topic only this node knows, from before the metadata
//! log held topics, from its own registry).
//!
//! - A topic: every topic config, from the topic's override or the broker key that supplies it
//!   (dynamic per-broker, dynamic cluster-wide default, static, default: KIP-226's order).
//! - A broker by node id: every broker config with the level its value comes from; `read_only`
//!   unless it may change dynamically. By the empty name (the cluster-wide default): only the
//!   keys set in the dynamic default layer, as Kafka answers.
//! - A group (KIP-848), existing or not: its group configs, overridden or the broker defaults.
//!
//! The controller listener answers the same from this node's image and configuration
//! ([`describe`] with a [`Basis`]), as Kafka's controllers serve DescribeConfigs to tools given
//! `--bootstrap-controller` (KIP-919).
//!
//! Sensitive values (passwords, and custom keys whose type is unknown) are never returned, as
//! in Kafka. ACLs: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED), the group
//! (GROUP_AUTHORIZATION_FAILED), or the cluster for broker configs (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::metadata::MetadataImage;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::config::defs::{self, ConfigType, BROKER_CONFIGS, GROUP_CONFIGS};
use crate::config::dynamic::{broker_key_def, layer, listed_synonyms};
use crate::config::topic::{self as topic_config, source_code};
use crate::config::{group as group_config, BrokerConfig, Source};

pub use samsa_cluster::metadata::image::{
    CONFIG_RESOURCE_BROKER as RESOURCE_BROKER,
    CONFIG_RESOURCE_BROKER_LOGGER as RESOURCE_BROKER_LOGGER,
    CONFIG_RESOURCE_GROUP as RESOURCE_GROUP, CONFIG_RESOURCE_TOPIC as RESOURCE_TOPIC,
};

/// The ACL check of the config APIs (Kafka's `ConfigHelper` and `ConfigAdminManager`): a
/// topic's configs need `operation` on the topic, a group's on the group, a broker's and its
/// loggers' on the cluster. Other resource types are left to the caller's own refusal.
pub fn authorize_resource(
    ctx: &Ctx<'_>,
    operation: AclOperation,
    resource_type: i8,
    name: &str,
) -> Result<(), (ResponseError, String)> {
    let (acl_type, acl_name) = match resource_type {
        RESOURCE_TOPIC => (ResourceType::Topic, name),
        RESOURCE_GROUP => (ResourceType::Group, name),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER => (ResourceType::Cluster, CLUSTER_NAME),
        _ => return Ok(()),
    };
    if ctx.authorize(operation, acl_type, acl_name) {
        Ok(())
    } else {
        Err((
            acl_type.authorization_error(),
            ctx.denied(operation, acl_type, acl_name),
        ))
    }
}

/// Which broker layer a BROKER resource name designates: this broker (`true`) or the
/// cluster-wide default (the empty name, `false`). Anything else is INVALID_REQUEST, with the
/// words Kafka uses in DescribeConfigs (`ConfigHelper`) or in the alter APIs
/// (`ConfigAdminManager.validateResourceNameIsCurrentNodeId`).
pub fn broker_resource(
    ctx: &Ctx<'_>,
    name: &str,
    describe: bool,
) -> Result<bool, (ResponseError, String)> {
    broker_resource_of(ctx.broker.node_id, name, describe)
}

/// [`broker_resource`] on the node `node_id`.
fn broker_resource_of(
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

/// What a DescribeConfigs answer is made of: the client listeners' (from a [`Ctx`]) and the
/// controller listener's (KIP-919: Kafka's tools given `--bootstrap-controller`), so that both
/// answer alike.
pub struct Basis<'a> {
    pub node_id: i32,
    /// The committed metadata image: topics, their overrides, the dynamic layers, groups.
    pub image: &'a MetadataImage,
    /// This node's configuration with the image's dynamic layers.
    pub cfg: &'a BrokerConfig,
    /// The overrides of a topic that only this node knows (from before the metadata log held
    /// topics), if `name` is one.
    pub own_topic: &'a dyn Fn(&str) -> Option<topic_config::TopicOverrides>,
    /// The ACL check of DESCRIBE_CONFIGS on a resource (type, name), as
    /// [`authorize_resource`] makes it.
    pub authorize: &'a dyn Fn(i8, &str) -> Result<(), (ResponseError, String)>,
}

pub fn handle(ctx: &Ctx<'_>, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let image = ctx.broker.controller.image();
    let cfg = ctx.broker.dynamic_configs.effective_in(&image);
    let source = Basis {
        node_id: ctx.broker.node_id,
        image: &image,
        cfg: &cfg,
        own_topic: &|name| {
            let topic = ctx.broker.topics.get(name).filter(|t| !t.managed)?;
            let overrides = topic.overrides.read().clone();
            Some(overrides)
        },
        authorize: &|resource_type, name| {
            authorize_resource(ctx, AclOperation::DescribeConfigs, resource_type, name)
        },
    };
    describe(&source, req)
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
            RESOURCE_BROKER_LOGGER => Ok(Vec::new()),
            RESOURCE_GROUP => describe_group(image, cfg, name, &wanted),
            other => Err((
                ResponseError::InvalidRequest,
                format!("Unsupported resource type: {other}"),
            )),
        };
        match configs {
            Ok(c) => r.configs = c,
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
    if wanted.documentation {
        c.documentation = doc.map(StrBytes::from_static_str);
    }
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
    let overrides = if source.image.topic_by_name(name).is_some() {
        layer(source.image, RESOURCE_TOPIC, name)
    } else {
        (source.own_topic)(name).ok_or_else(|| {
            (
                ResponseError::UnknownTopicOrPartition,
                format!("topic '{name}' does not exist"),
            )
        })?
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
        BROKER_CONFIGS
            .iter()
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
            let source = levels
                .first()
                .map_or(source_code::DEFAULT_CONFIG, |(_, _, s)| s.code());
            let value = if hide {
                None
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
            let source = if set {
                source_code::GROUP_CONFIG
            } else {
                source_code::DEFAULT_CONFIG
            };
            let mut c = entry(
                d.name,
                Some(value.clone()),
                source,
                Some(d.kind),
                Some(d.doc),
                wanted,
            );
            if wanted.synonyms {
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
            "message.downconversion.enable",
            "log.message.downconversion.enable",
        ),
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
                // Samsa's default (1000) is its scheduler's tick, not Kafka's Long.MAX.
                own(
                    "log.flush.scheduler.interval.ms",
                    "1000",
                    source_code::DEFAULT_CONFIG
                ),
            ]
        );
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
