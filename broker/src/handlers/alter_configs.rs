//! AlterConfigs (the legacy, non-incremental form): a topic's overrides are replaced by exactly
//! the configs in the request. Broker configs are static (server.properties, flags,
//! environment) and are refused here with a message that says so. ACLs: ALTER_CONFIGS on the
//! topic (TOPIC_AUTHORIZATION_FAILED), or on the cluster (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::describe_configs::{authorize_resource, RESOURCE_BROKER, RESOURCE_TOPIC};
use super::Ctx;
use crate::acl::AclOperation;
use crate::config::topic::TopicOverrides;

pub fn handle(ctx: &Ctx<'_>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut resp = AlterConfigsResponse::default();
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
            RESOURCE_TOPIC => {
                let overrides: TopicOverrides = res
                    .configs
                    .iter()
                    .filter_map(|c| {
                        c.value
                            .as_ref()
                            .map(|v| (c.name.to_string(), v.to_string()))
                    })
                    .collect();
                apply_topic_overrides(
                    ctx,
                    res.resource_name.as_str(),
                    overrides,
                    req.validate_only,
                )
            }
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

/// Validates and applies a topic's complete new set of overrides.
pub fn apply_topic_overrides(
    ctx: &Ctx<'_>,
    topic: &str,
    overrides: TopicOverrides,
    validate_only: bool,
) -> Result<(), (ResponseError, String)> {
    if topic.is_empty() {
        return Err((ResponseError::InvalidRequest, "topic name is empty".into()));
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

pub fn static_broker_configs() -> (ResponseError, String) {
    (
        ResponseError::InvalidRequest,
        "broker configs are static in samsa: set them in server.properties, a --flag or SAMSA_* and restart".into(),
    )
}
