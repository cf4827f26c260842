//! DescribeCluster: cluster id, controller and live brokers (the admin client's view of
//! Metadata), from the committed metadata image as Metadata answers.
//! `cluster_authorized_operations` comes from the authorizer (0 without DESCRIBE on the
//! cluster, as Kafka answers).

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::cluster_view::ClusterView;
use super::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};

/// `endpoint_type` values (KIP-919): 1 brokers, 2 controllers.
const ENDPOINT_BROKERS: i8 = 1;

pub fn handle(ctx: &Ctx<'_>, req: DescribeClusterRequest) -> DescribeClusterResponse {
    let mut resp = DescribeClusterResponse::default();
    resp.endpoint_type = req.endpoint_type;
    if ctx.version >= 1 && req.endpoint_type != ENDPOINT_BROKERS {
        resp.error_code = ResponseError::UnsupportedEndpointType.code();
        resp.error_message = Some(StrBytes::from_static_str(
            "only broker endpoints (endpoint_type=1) are served",
        ));
        return resp;
    }
    resp.cluster_id = StrBytes::from_string(ctx.broker.cluster_id.clone());
    let view = ClusterView::for_listener(ctx.broker, &ctx.conn.listener.name);
    resp.controller_id = BrokerId(view.controller_id());
    // Kafka reports no operations to a caller that may not describe the cluster.
    resp.cluster_authorized_operations = if !req.include_cluster_authorized_operations {
        i32::MIN
    } else if ctx.authorize(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
    } else {
        0
    };
    resp.brokers = view
        .live_brokers()
        .map(|n| {
            let mut b = DescribeClusterBroker::default();
            b.broker_id = BrokerId(n.id);
            b.host = StrBytes::from_string(n.host.clone());
            b.port = n.port;
            b.rack = n.rack.clone().map(StrBytes::from_string);
            b
        })
        .collect();
    resp
}
