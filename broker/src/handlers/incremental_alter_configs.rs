//! IncrementalAlterConfigs (KIP-339): SET, DELETE, APPEND and SUBTRACT on a topic's overrides,
//! a broker's dynamic configs (KIP-226: node id, or "" for the cluster-wide default), a group's
//! configs (KIP-848) or a client-metrics subscription (KIP-714). APPEND and SUBTRACT work on
//! list configs only (`cleanup.policy`, `log.cleanup.policy`); on a topic they start from the
//! value it has without an override, on a broker from the dynamic value or Kafka's default.
//! All operations of one resource apply together or not at all.
//!
//! This broker's loggers (BROKER_LOGGER, KIP-412) are changed here, not through the
//! controller, as in Kafka: SET gives a logger a level, DELETE takes its own away
//! (`config::loggers`).
//!
//! As AlterConfigs (`alter_configs.rs`): this broker makes Kafka's broker-side checks and
//! forwards the operations to the active controller, which applies them to the configs of its
//! image, checks the result and commits it; answered once this broker's image has the changes.
//! Kafka's request checks come first: a resource named twice, a key named twice, a null value
//! for anything but DELETE, or an unknown operation is INVALID_REQUEST. ACLs: ALTER_CONFIGS on
//! the topic (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED) or the
//! cluster (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use samsa_cluster::controller::{AlterConfigOp, AlterableConfig, IncrementalAlterConfigsResource};
use samsa_cluster::metadata::MetadataImage;

use super::alter_configs::{
    forward, outcome, repeated_resource, repeated_resources, route, to_response,
};
use super::ctx::Ctx;
use super::describe_configs::{
    authorize_resource, broker_resource, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use crate::acl::AclOperation;
use crate::config::defs::{self, ConfigType};
use crate::config::dynamic::{
    apply_incremental, broker_list_base, check_ops, AlterOp, DynamicConfigError, OpType,
};
use crate::config::topic::{self, TopicOverrides};
use crate::controller::active::ControllerRequest;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let image = ctx.controller().image();
    let repeated = repeated_resources(
        req.resources
            .iter()
            .map(|r| (r.resource_type, &r.resource_name)),
    );
    let mut routes = Vec::with_capacity(req.resources.len());
    let mut forwarded: Vec<IncrementalAlterConfigsResource> = Vec::new();
    for res in &req.resources {
        let name = res.resource_name.as_str();
        let route = authorize_resource(ctx, AclOperation::AlterConfigs, res.resource_type, name)
            .and_then(|()| {
                if repeated.contains(&(res.resource_type, name.to_string())) {
                    return Err(repeated_resource());
                }
                let ops = res
                    .configs
                    .iter()
                    .map(|c| {
                        Ok(AlterOp {
                            name: c.name.to_string(),
                            op: OpType::from_code(c.config_operation)?,
                            value: c.value.as_ref().map(|v| v.to_string()),
                        })
                    })
                    .collect::<Result<Vec<_>, DynamicConfigError>>()
                    .and_then(|ops| check_ops(&ops).map(|()| ops))
                    .map_err(to_response)?;
                if res.resource_type == RESOURCE_BROKER_LOGGER {
                    // Kafka's check that the name is this node's id, then the loggers'.
                    if !broker_resource(ctx, name, false)? {
                        return Err((
                            kafka_protocol::ResponseError::InvalidRequest,
                            format!("Node id must be an integer, but it is: {name}"),
                        ));
                    }
                    let loggers = crate::config::loggers::loggers();
                    if req.validate_only {
                        loggers.validate(&ops)
                    } else {
                        loggers.alter(&ops)
                    }
                    .map_err(to_response)?;
                    return Ok(None);
                }
                let cfg = ctx.node().dynamic_configs.effective();
                route(
                    ctx,
                    &image,
                    res.resource_type,
                    name,
                    req.validate_only,
                    |current| match res.resource_type {
                        RESOURCE_TOPIC => apply_incremental(current, &ops, |key, op| {
                            topic_list_base(&cfg, current, key, op)
                        }),
                        RESOURCE_BROKER => apply_incremental(current, &ops, broker_list_base),
                        // Kafka's controller knows no group or client-metrics config as a list,
                        // and words the refusal so.
                        RESOURCE_GROUP | RESOURCE_CLIENT_METRICS => {
                            apply_incremental(current, &ops, |key, op| {
                                Err(DynamicConfigError::InvalidConfig(format!(
                                    "Can't {} to key {key} because its type is not LIST.",
                                    op.name()
                                )))
                            })
                        }
                        _ => Ok(current.clone()),
                    },
                )
            });
        routes.push(route.map(|r| {
            r.map(|resource_name| {
                forwarded.push(IncrementalAlterConfigsResource {
                    resource_type: res.resource_type,
                    resource_name,
                    configs: res
                        .configs
                        .iter()
                        .map(|c| AlterableConfig {
                            name: c.name.to_string(),
                            operation: c.config_operation,
                            value: c.value.as_ref().map(|v| v.to_string()),
                        })
                        .collect(),
                });
                forwarded.len() - 1
            })
        }));
    }
    let results = forward(
        ctx,
        &forwarded,
        req.validate_only,
        |resources, validate_only| ControllerRequest::IncrementalAlterConfigs {
            resources,
            validate_only,
        },
        applied,
    )
    .await;
    let mut resp = IncrementalAlterConfigsResponse::default();
    for (res, route) in req.resources.into_iter().zip(routes) {
        let mut r = AlterConfigsResourceResponse::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name;
        (r.error_code, r.error_message) = outcome(route, &results);
        resp.responses.push(r);
    }
    resp
}

/// The value an APPEND or SUBTRACT on a topic key starts from when the topic does not set it:
/// the key's value without an override. Refuses keys that are not lists.
fn topic_list_base(
    cfg: &crate::config::BrokerConfig,
    current: &TopicOverrides,
    key: &str,
    op: OpType,
) -> Result<Option<String>, DynamicConfigError> {
    let def = defs::topic_def(key).ok_or_else(|| {
        DynamicConfigError::InvalidConfig(format!("Unknown topic config name: {key}"))
    })?;
    if def.kind != ConfigType::List {
        return Err(DynamicConfigError::InvalidConfig(format!(
            "Can't {} to key {key} because its type is not LIST.",
            op.name()
        )));
    }
    Ok(topic::effective(cfg, current, key).0)
}

/// Whether `image` has what the operations of `r` asked for (the controller applied them).
fn applied(image: &MetadataImage, r: &IncrementalAlterConfigsResource) -> bool {
    let configs = image.configs(r.resource_type, &r.resource_name);
    r.configs.iter().all(|c| {
        let value = configs.and_then(|m| m.get(&c.name));
        let items = |v: &str| -> Vec<String> {
            v.split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        };
        let asked = items(c.value.as_deref().unwrap_or(""));
        let has = items(value.map(String::as_str).unwrap_or(""));
        match AlterConfigOp::from_code(c.operation) {
            Some(AlterConfigOp::Set) => value == c.value.as_ref(),
            Some(AlterConfigOp::Delete) => value.is_none(),
            Some(AlterConfigOp::Append) => asked.iter().all(|a| has.contains(a)),
            Some(AlterConfigOp::Subtract) => asked.iter().all(|a| !has.contains(a)),
            None => true,
        }
    })
}
