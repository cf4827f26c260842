//! ListConfigResources (KIP-1142; v0 was KIP-714's ListClientMetricsResources): the resources
//! DescribeConfigs and AlterConfigs can name, from this broker's metadata image. v0 lists client-metrics subscriptions only; v1
//! filters by `resource_types` (empty: every type) and lists, in Kafka's order, the cluster's brokers
//! as broker-loggers and as broker resources, then every topic. GROUP lists the groups that have
//! dynamic configs (KIP-1142: a group's configs may be set before the group has members, so
//! `kafka-configs.sh --entity-type groups --describe` adds these to ListGroups' answer), not every
//! group. CLIENT_METRICS lists the subscriptions that have configs (`config::client_metrics`). A type Kafka does not list
//! refuses the whole request with UNSUPPORTED_VERSION, as Kafka does. ACLs: DESCRIBE_CONFIGS on
//! the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use samsa_cluster::metadata::image::CONFIG_RESOURCE_CLIENT_METRICS as RESOURCE_CLIENT_METRICS;

use super::ctx::Ctx;
use super::describe_configs::{
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::config::dynamic::groups_with_configs;
/// What v1 lists (Kafka's `ListConfigResourcesRequest.supportedResourceTypes`).
const V1_TYPES: [i8; 5] = [
    RESOURCE_GROUP,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
];

pub fn handle(ctx: &Ctx<'_>, req: ListConfigResourcesRequest) -> ListConfigResourcesResponse {
    let mut resp = ListConfigResourcesResponse::default();
    if !ctx.authorize(
        AclOperation::DescribeConfigs,
        ResourceType::Cluster,
        CLUSTER_NAME,
    ) {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    let image = ctx.controller().image();
    let subscriptions = || -> Vec<String> {
        let mut names: Vec<String> = image
            .config_resources()
            .filter(|(r, _)| r.resource_type == RESOURCE_CLIENT_METRICS)
            .map(|(r, _)| r.resource_name.clone())
            .collect();
        names.sort();
        names
    };
    if ctx.version == 0 {
        // Client-metrics subscriptions only.
        for name in subscriptions() {
            let mut r = ConfigResource::default();
            r.resource_name = StrBytes::from_string(name);
            r.resource_type = RESOURCE_CLIENT_METRICS;
            resp.config_resources.push(r);
        }
        return resp;
    }
    let wanted: Vec<i8> = if req.resource_types.is_empty() {
        V1_TYPES.to_vec()
    } else {
        req.resource_types
    };
    if wanted.iter().any(|t| !V1_TYPES.contains(t)) {
        resp.error_code = ResponseError::UnsupportedVersion.code();
        return resp;
    }
    // Every broker of the cluster (Kafka 4.4 lists each registered one), this one if the image
    // has not registered it yet.
    let mut nodes: Vec<i32> = image.brokers().keys().copied().collect();
    if !nodes.contains(&ctx.node().node_id) {
        nodes.push(ctx.node().node_id);
        nodes.sort_unstable();
    }
    let mut push = |name: String, resource_type: i8| {
        let mut r = ConfigResource::default();
        r.resource_name = StrBytes::from_string(name);
        r.resource_type = resource_type;
        resp.config_resources.push(r);
    };
    for t in V1_TYPES {
        if !wanted.contains(&t) {
            continue;
        }
        match t {
            RESOURCE_GROUP => {
                for group in groups_with_configs(&image) {
                    push(group, t);
                }
            }
            RESOURCE_CLIENT_METRICS => {
                for name in subscriptions() {
                    push(name, t);
                }
            }
            RESOURCE_BROKER_LOGGER | RESOURCE_BROKER => {
                for node in &nodes {
                    push(node.to_string(), t);
                }
            }
            RESOURCE_TOPIC => {
                // The cluster's topics, and those only this node knows (not imported yet).
                let mut topics: Vec<String> = image.topics().map(|t| t.name.to_string()).collect();
                topics.extend(
                    ctx.topics()
                        .all()
                        .into_iter()
                        .filter(|t| !t.managed && image.topic_by_name(&t.name).is_none())
                        .map(|t| t.name.clone()),
                );
                topics.sort();
                for topic in topics {
                    push(topic, t);
                }
            }
            _ => {}
        }
    }
    resp
}
