//! DescribeConfigs: every topic or broker config with its value, source, type, documentation
//! and (when asked) synonyms, as Kafka reports them. Tools rely on it (Schema Registry reads
//! `cleanup.policy`; Kafka's admin tools list what differs from defaults by `config_source`).
//! ACLs: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED), or on the cluster for broker
//! configs (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::config::defs::{self, BROKER_CONFIGS};
use crate::config::topic::{self as topic_config, source_code, TopicValueSource};
use crate::config::{BrokerConfig, Source};

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

/// Group configs (KIP-848); not served yet, but authorized as Kafka does.
const RESOURCE_GROUP: i8 = 32;

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

pub fn handle(ctx: &Ctx<'_>, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        let keys: Option<Vec<String>> = res
            .configuration_keys
            .map(|k| k.iter().map(|s| s.to_string()).collect());
        let wanted = |name: &str| keys.as_ref().is_none_or(|k| k.iter().any(|x| x == name));
        let authorized = authorize_resource(
            ctx,
            AclOperation::DescribeConfigs,
            res.resource_type,
            &res.resource_name,
        );
        let configs = match res.resource_type {
            _ if authorized.is_err() => authorized.map(|()| Vec::new()),
            RESOURCE_TOPIC => match ctx.broker.topics.get(res.resource_name.as_str()) {
                None => Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("topic '{}' does not exist", res.resource_name.as_str()),
                )),
                Some(topic) => {
                    let overrides = topic.overrides.read().clone();
                    Ok(topic_config::all_effective(&ctx.broker.config, &overrides)
                        .into_iter()
                        .filter(|(d, _, _)| wanted(d.name))
                        .map(|(d, value, source)| {
                            let mut c = DescribeConfigsResourceResult::default();
                            c.name = StrBytes::from_static_str(d.name);
                            c.value = value.clone().map(StrBytes::from_string);
                            c.config_source = source.code();
                            c.config_type = d.kind.describe_code();
                            if req.include_documentation {
                                c.documentation = Some(StrBytes::from_static_str(d.doc));
                            }
                            if req.include_synonyms {
                                c.synonyms = topic_synonyms(
                                    &ctx.broker.config,
                                    d.name,
                                    overrides.get(d.name),
                                    &source,
                                );
                            }
                            c
                        })
                        .collect())
                }
            },
            RESOURCE_BROKER => {
                let name = res.resource_name.as_str();
                if !name.is_empty() && name != ctx.broker.node_id.to_string() {
                    Err((
                        ResponseError::InvalidRequest,
                        format!(
                            "unexpected broker id '{name}'; this is broker {}",
                            ctx.broker.node_id
                        ),
                    ))
                } else {
                    Ok(BROKER_CONFIGS
                        .iter()
                        .filter(|d| wanted(d.name))
                        .map(|d| {
                            let cfg = &ctx.broker.config;
                            let mut c = DescribeConfigsResourceResult::default();
                            c.name = StrBytes::from_static_str(d.name);
                            c.value = cfg.get(d.name).map(StrBytes::from_string);
                            c.read_only = true;
                            c.config_source = broker_source(cfg, d.name);
                            c.config_type = d.kind.describe_code();
                            if req.include_documentation {
                                c.documentation = Some(StrBytes::from_static_str(d.doc));
                            }
                            if req.include_synonyms {
                                c.synonyms =
                                    vec![synonym(d.name, c.value.clone(), c.config_source)];
                            }
                            c
                        })
                        .collect())
                }
            }
            RESOURCE_BROKER_LOGGER => Ok(Vec::new()),
            other => Err((
                ResponseError::InvalidRequest,
                format!("unsupported resource type {other}"),
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

fn broker_source(cfg: &BrokerConfig, name: &str) -> i8 {
    match cfg.source(name) {
        Source::Static => source_code::STATIC_BROKER_CONFIG,
        Source::Default => source_code::DEFAULT_CONFIG,
    }
}

fn synonym(name: &str, value: Option<StrBytes>, source: i8) -> DescribeConfigsSynonym {
    let mut s = DescribeConfigsSynonym::default();
    s.name = StrBytes::from_string(name.to_string());
    s.value = value;
    s.source = source;
    s
}

/// Kafka's synonym list for a topic key: the topic override, then each broker synonym that is
/// set, then the default, most specific first.
fn topic_synonyms(
    cfg: &BrokerConfig,
    name: &str,
    override_value: Option<&String>,
    source: &TopicValueSource,
) -> Vec<DescribeConfigsSynonym> {
    let mut out = Vec::new();
    if let Some(v) = override_value {
        out.push(synonym(
            name,
            Some(StrBytes::from_string(v.clone())),
            source_code::DYNAMIC_TOPIC_CONFIG,
        ));
    }
    let Some(def) = defs::topic_def(name) else {
        return out;
    };
    for (syn, _) in def.synonyms {
        if cfg.is_set(syn) {
            out.push(synonym(
                syn,
                cfg.get(syn).map(StrBytes::from_string),
                source_code::STATIC_BROKER_CONFIG,
            ));
        }
    }
    if let TopicValueSource::Default(Some(syn)) = source {
        out.push(synonym(
            syn,
            cfg.get(syn).map(StrBytes::from_string),
            source_code::DEFAULT_CONFIG,
        ));
    }
    out
}
