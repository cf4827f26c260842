//! AlterConfigs (the legacy, non-incremental form): a resource's configs are replaced by exactly
//! the configs in the request, as Kafka's controller does (`legacyAlterConfigResource`).
//!
//! - A topic: its overrides.
//! - A broker (KIP-226): this broker's dynamic layer (resource name = node id) or the
//!   cluster-wide default layer (empty name). Static-only keys are refused with INVALID_REQUEST,
//!   as Kafka refuses them; dynamic `log.*` topic defaults apply to every topic at once.
//! - A group (KIP-848): its group configs.
//!
//! Kafka's request checks come first: a resource named twice, a key named twice in a resource
//! or a null value is INVALID_REQUEST. ACLs: ALTER_CONFIGS on the topic
//! (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED) or the cluster
//! (CLUSTER_AUTHORIZATION_FAILED).

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::describe_configs::{
    authorize_resource, broker_resource, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use super::Ctx;
use crate::acl::AclOperation;
use crate::config::dynamic::{check_ops, AlterOp, DynamicConfigError, OpType, Resource};
use crate::config::topic::TopicOverrides;

pub fn handle(ctx: &Ctx<'_>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut resp = AlterConfigsResponse::default();
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
        let ops: Vec<AlterOp> = res
            .configs
            .iter()
            .map(|c| AlterOp {
                name: c.name.to_string(),
                op: OpType::Set,
                value: c.value.as_ref().map(|v| v.to_string()),
            })
            .collect();
        let result = authorize_resource(ctx, AclOperation::AlterConfigs, res.resource_type, name)
            .and_then(|()| {
                if repeated.contains(&(res.resource_type, name.to_string())) {
                    return Err(repeated_resource());
                }
                check_ops(&ops).map_err(to_response)?;
                let configs: BTreeMap<String, String> = ops
                    .into_iter()
                    .map(|o| (o.name, o.value.unwrap_or_default()))
                    .collect();
                match res.resource_type {
                    RESOURCE_TOPIC => apply_topic_overrides(
                        ctx,
                        name,
                        configs.into_iter().collect(),
                        req.validate_only,
                    ),
                    RESOURCE_BROKER => alter_broker(ctx, name, req.validate_only, |_| Ok(configs)),
                    RESOURCE_GROUP => alter_group(ctx, name, req.validate_only, |_| Ok(configs)),
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

/// The (type, name) pairs that appear more than once in a request: Kafka refuses every one of
/// their entries (`ConfigAdminManager.preprocess`).
pub fn repeated_resources<'a>(
    resources: impl Iterator<Item = (i8, &'a StrBytes)>,
) -> std::collections::HashSet<(i8, String)> {
    let mut count: HashMap<(i8, String), usize> = HashMap::new();
    for (t, n) in resources {
        *count.entry((t, n.to_string())).or_default() += 1;
    }
    count
        .into_iter()
        .filter(|(_, c)| *c > 1)
        .map(|(k, _)| k)
        .collect()
}

pub fn repeated_resource() -> (ResponseError, String) {
    (
        ResponseError::InvalidRequest,
        "Each resource must appear at most once.".into(),
    )
}

pub fn to_response(e: DynamicConfigError) -> (ResponseError, String) {
    (e.response_error(), e.to_string())
}

/// Validates and applies a topic's complete new set of overrides.
pub fn apply_topic_overrides(
    ctx: &Ctx<'_>,
    topic: &str,
    overrides: TopicOverrides,
    validate_only: bool,
) -> Result<(), (ResponseError, String)> {
    if topic.is_empty() {
        return Err((
            ResponseError::InvalidRequest,
            "Default topic resources are not allowed.".into(),
        ));
    }
    ctx.broker
        .topics
        .set_overrides(topic, overrides, validate_only)
        .map_err(|e| {
            (
                ResponseError::try_from_code(e.code()).unwrap_or(ResponseError::UnknownServerError),
                e.to_string(),
            )
        })
}

/// Changes this broker's dynamic configs (`name` = node id) or the cluster-wide defaults
/// (`name` empty): `change` computes the layer's new configs from its current ones. The new
/// effective configuration reaches every topic's logs before this returns.
pub fn alter_broker(
    ctx: &Ctx<'_>,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(
        &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
) -> Result<(), (ResponseError, String)> {
    let resource = if broker_resource(ctx, name, false)? {
        Resource::Broker
    } else {
        Resource::ClusterDefault
    };
    let topics = &ctx.broker.topics;
    ctx.broker
        .dynamic_configs
        .alter(&resource, validate_only, change, |effective| {
            topics.set_broker_config((**effective).clone())
        })
        .map_err(to_response)
}

/// Changes a group's configs (KIP-848); the group need not exist.
pub fn alter_group(
    ctx: &Ctx<'_>,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(
        &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, DynamicConfigError>,
) -> Result<(), (ResponseError, String)> {
    if name.is_empty() {
        return Err((
            ResponseError::InvalidRequest,
            "Default group resources are not allowed.".into(),
        ));
    }
    ctx.broker
        .dynamic_configs
        .alter(
            &Resource::Group(name.to_string()),
            validate_only,
            change,
            |_| {},
        )
        .map_err(to_response)
}
