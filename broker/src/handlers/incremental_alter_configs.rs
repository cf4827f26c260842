//! IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's overrides. APPEND and
//! SUBTRACT work on list configs (`cleanup.policy`) starting from the effective value, as
//! Kafka's do. All operations of one resource apply together or not at all. ACLs: ALTER_CONFIGS
//! on the topic (TOPIC_AUTHORIZATION_FAILED), or on the cluster (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::alter_configs::{apply_topic_overrides, static_broker_configs};
use super::describe_configs::{authorize_resource, RESOURCE_BROKER, RESOURCE_TOPIC};
use super::Ctx;
use crate::acl::AclOperation;
use crate::config::defs::{self, ConfigType};
use crate::config::topic;

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

pub fn handle(
    ctx: &Ctx<'_>,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut resp = IncrementalAlterConfigsResponse::default();
    for res in req.resources {
        let mut r = AlterConfigsResourceResponse::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        let authorized = authorize_resource(
            ctx,
            AclOperation::AlterConfigs,
            res.resource_type,
            &res.resource_name,
        );
        let result = match res.resource_type {
            _ if authorized.is_err() => authorized,
            RESOURCE_TOPIC => match ctx.broker.topics.get(res.resource_name.as_str()) {
                None => Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("topic '{}' does not exist", res.resource_name.as_str()),
                )),
                Some(t) => {
                    let mut overrides = t.overrides.read().clone();
                    let mut outcome = Ok(());
                    for c in &res.configs {
                        let name = c.name.to_string();
                        let Some(def) = defs::topic_def(&name) else {
                            outcome = Err((
                                ResponseError::InvalidConfig,
                                format!("unknown topic config '{name}'"),
                            ));
                            break;
                        };
                        let value = c.value.as_ref().map(|v| v.to_string());
                        match (c.config_operation, value) {
                            (SET, Some(v)) => {
                                overrides.insert(name, v);
                            }
                            (SET, None) => {
                                outcome = Err((
                                    ResponseError::InvalidRequest,
                                    format!("SET of {name} needs a value"),
                                ));
                                break;
                            }
                            (DELETE, _) => {
                                overrides.remove(&name);
                            }
                            (op @ (APPEND | SUBTRACT), Some(v)) => {
                                if def.kind != ConfigType::List {
                                    outcome = Err((
                                        ResponseError::InvalidConfig,
                                        format!("{name} is not a list; APPEND and SUBTRACT apply to lists only"),
                                    ));
                                    break;
                                }
                                let current =
                                    topic::effective(&ctx.broker.config, &overrides, &name)
                                        .0
                                        .unwrap_or_default();
                                let mut items: Vec<String> = current
                                    .split(',')
                                    .map(|s| s.trim().to_string())
                                    .filter(|s| !s.is_empty())
                                    .collect();
                                for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                                    if op == APPEND && !items.iter().any(|i| i == item) {
                                        items.push(item.to_string());
                                    } else if op == SUBTRACT {
                                        items.retain(|i| i != item);
                                    }
                                }
                                overrides.insert(name, items.join(","));
                            }
                            (op, _) => {
                                outcome = Err((
                                    ResponseError::InvalidRequest,
                                    format!("invalid config operation {op} for {name}"),
                                ));
                                break;
                            }
                        }
                    }
                    outcome.and_then(|()| {
                        apply_topic_overrides(
                            ctx,
                            res.resource_name.as_str(),
                            overrides,
                            req.validate_only,
                        )
                    })
                }
            },
            RESOURCE_BROKER => Err(static_broker_configs()),
            other => Err((
                ResponseError::InvalidRequest,
                format!("unsupported resource type {other}"),
            )),
        };
        if let Err((code, message)) = result {
            r.error_code = code.code();
            r.error_message = Some(StrBytes::from_string(message));
        }
        resp.responses.push(r);
    }
    resp
}
