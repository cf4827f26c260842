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
//! - A group (KIP-848), existing or not: its group configs, overridden or the broker defaults,
//!   with the broker key that supplies the default as the synonym, as Kafka lists it.
//! - This broker's loggers (BROKER_LOGGER, KIP-412): `root` and the tracing targets, each with
//!   its effective level (`config::loggers`).
//! - A client-metrics subscription (KIP-714), existing or not: its three configs.
//!
//! Every result that succeeds carries an empty error message, as Kafka's do, and so does an
//! unknown topic's; an invalid topic name is INVALID_TOPIC_EXCEPTION.
//!
//! The controller listener answers the same from this node's image and configuration
//! ([`describe`] with a [`Basis`], in `controller::answers`), as Kafka's controllers serve
//! DescribeConfigs to tools given `--bootstrap-controller` (KIP-919).
//!
//! Sensitive values (passwords, and custom keys whose type is unknown) are never returned, as
//! in Kafka. ACLs: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED), the group
//! (GROUP_AUTHORIZATION_FAILED), or the cluster for broker configs (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::controller::answers::describe_configs::{broker_resource_of, describe, Basis};

pub use crate::controller::answers::describe_configs::{
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};

/// The ACL check of the config APIs (Kafka's `ConfigHelper` and `ConfigAdminManager`): a
/// topic's configs need `operation` on the topic, a group's on the group, a broker's, its
/// loggers' and the client-metrics subscriptions' on the cluster. Other resource types are left
/// to the caller's own refusal.
pub fn authorize_resource(
    ctx: &Ctx<'_>,
    operation: AclOperation,
    resource_type: i8,
    name: &str,
) -> Result<(), (ResponseError, String)> {
    let (acl_type, acl_name) = match resource_type {
        RESOURCE_TOPIC => (ResourceType::Topic, name),
        RESOURCE_GROUP => (ResourceType::Group, name),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS => {
            (ResourceType::Cluster, CLUSTER_NAME)
        }
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
    broker_resource_of(ctx.node().node_id, name, describe)
}

pub fn handle(ctx: &Ctx<'_>, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let image = ctx.controller().image();
    let cfg = ctx.node().dynamic_configs.effective_in(&image);
    let source = Basis {
        node_id: ctx.node().node_id,
        image: &image,
        cfg: &cfg,
        own_topic: &|name| {
            let topic = ctx.topics().get(name).filter(|t| !t.managed)?;
            let overrides = topic.overrides.read().clone();
            Some(overrides)
        },
        authorize: &|resource_type, name| {
            authorize_resource(ctx, AclOperation::DescribeConfigs, resource_type, name)
        },
    };
    describe(&source, req)
}
