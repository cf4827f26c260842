//! IncrementalAlterConfigs (KIP-339): SET, DELETE, APPEND and SUBTRACT on a topic's overrides,
//! a broker's dynamic configs (KIP-226: node id, or "" for the cluster-wide default) or a
//! group's configs (KIP-848). APPEND and SUBTRACT work on list configs only (`cleanup.policy`,
//! `log.cleanup.policy`); on a topic they start from the effective value, on a broker from the
//! dynamic value or Kafka's default. All operations of one resource apply together or not at
//! all. Kafka's request checks come first: a resource named twice, a key named twice, a null
//! value for anything but DELETE, or an unknown operation is INVALID_REQUEST. ACLs:
//! ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED), the group
//! (GROUP_AUTHORIZATION_FAILED) or the cluster (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::alter_configs::{
    alter_broker, alter_group, apply_topic_overrides, repeated_resource, repeated_resources,
    to_response,
};
use super::describe_configs::{
    authorize_resource, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use super::Ctx;
use crate::acl::AclOperation;
use crate::config::defs::{self, ConfigType};
use crate::config::dynamic::{
    apply_incremental, broker_list_base, check_ops, AlterOp, DynamicConfigError, OpType,
};
use crate::config::topic;

pub fn handle(
    ctx: &Ctx<'_>,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut resp = IncrementalAlterConfigsResponse::default();
    let repeated = repeated_resources(
        req.resources
            .iter()
            .map(|r| (r.resource_type, &r.resource_name)),
    );
    for res in req.resources {
        let mut r = AlterConfigsResourceResponse::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        let name = res.resource_name.as_str();
        let result = authorize_resource(ctx, AclOperation::AlterConfigs, res.resource_type, name)
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
                match res.resource_type {
                    RESOURCE_TOPIC => alter_topic(ctx, name, &ops, req.validate_only),
                    RESOURCE_BROKER => alter_broker(ctx, name, req.validate_only, |current| {
                        apply_incremental(current, &ops, broker_list_base)
                    }),
                    RESOURCE_GROUP => alter_group(ctx, name, req.validate_only, |current| {
                        // No group config is a list (Kafka's controller words the refusal so).
                        apply_incremental(current, &ops, |key, op| {
                            Err(DynamicConfigError::InvalidConfig(format!(
                                "Can't {} to key {key} because its type is not LIST.",
                                op.name()
                            )))
                        })
                    }),
                    other => Err((
                        ResponseError::InvalidRequest,
                        format!("Unknown resource type {other}"),
                    )),
                }
            });
        if let Err((code, message)) = result {
            r.error_code = code.code();
            r.error_message = Some(StrBytes::from_string(message));
        }
        resp.responses.push(r);
    }
    resp
}

/// Applies the operations to a topic's overrides; APPEND and SUBTRACT start from the topic's
/// effective value.
fn alter_topic(
    ctx: &Ctx<'_>,
    name: &str,
    ops: &[AlterOp],
    validate_only: bool,
) -> Result<(), (ResponseError, String)> {
    let Some(t) = ctx.broker.topics.get(name) else {
        return Err((
            ResponseError::UnknownTopicOrPartition,
            format!("topic '{name}' does not exist"),
        ));
    };
    let cfg = ctx.broker.dynamic_configs.effective();
    let current = t.overrides.read().clone();
    let overrides = apply_incremental(&current, ops, |key, op| {
        let def = defs::topic_def(key).ok_or_else(|| {
            DynamicConfigError::InvalidConfig(format!("unknown topic config '{key}'"))
        })?;
        if def.kind != ConfigType::List {
            return Err(DynamicConfigError::InvalidConfig(format!(
                "{key} is not a list; {} applies to lists only",
                op.name()
            )));
        }
        Ok(topic::effective(&cfg, &current, key).0)
    })
    .map_err(to_response)?;
    apply_topic_overrides(ctx, name, overrides, validate_only)
}
