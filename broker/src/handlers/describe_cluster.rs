//! DescribeCluster: cluster id, controller and live brokers (the admin client's view of
//! Metadata), from the committed metadata image as Metadata answers; from v2 the fenced ones
//! too when asked (`include_fenced_brokers`).
//! `cluster_authorized_operations` comes from the authorizer (0 without DESCRIBE on the
//! cluster, as Kafka answers).
//!
//! A controller listener answers it too (KIP-919, for Kafka's tools given
//! `--bootstrap-controller`): the quorum's voters by their endpoints on that listener and the
//! quorum's leader (`answer_controllers`, in `controller::answers`). Each listener refuses the
//! other kind of endpoint as Kafka's `AuthHelper.computeDescribeClusterResponse` does:
//! MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST in v0, which cannot name a type), and
//! UNSUPPORTED_ENDPOINT_TYPE for a type that is neither.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::cluster_view::{ClusterView, Node};
use crate::controller::answers::describe_cluster::{wrong_endpoint_type, ENDPOINT_BROKERS};

pub fn handle(ctx: &Ctx<'_>, req: DescribeClusterRequest) -> DescribeClusterResponse {
    if let Some(refused) = wrong_endpoint_type(&req, ctx.version, ENDPOINT_BROKERS) {
        return refused;
    }
    let mut resp = DescribeClusterResponse::default();
    resp.endpoint_type = ENDPOINT_BROKERS;
    resp.cluster_id = StrBytes::from_string(ctx.node().cluster_id.clone());
    let view = ClusterView::for_listener(ctx.node(), &ctx.conn.listener.name);
    resp.controller_id = BrokerId(view.controller_id());
    // Kafka reports no operations to a caller that may not describe the cluster.
    resp.cluster_authorized_operations = if !req.include_cluster_authorized_operations {
        i32::MIN
    } else if ctx.authorize(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
    } else {
        0
    };
    let broker = |n: &Node, fenced: bool| {
        let mut b = DescribeClusterBroker::default();
        b.broker_id = BrokerId(n.id);
        b.host = StrBytes::from_string(n.host.clone());
        b.port = n.port;
        b.rack = n.rack.clone().map(StrBytes::from_string);
        b.is_fenced = fenced;
        b
    };
    resp.brokers = view.live_brokers().map(|n| broker(n, false)).collect();
    // v2 (KIP-1073): every registered broker, the fenced ones marked, as Kafka lists them (a
    // broker that stopped stays registered until UnregisterBroker removes it).
    if ctx.version >= 2 && req.include_fenced_brokers {
        resp.brokers
            .extend(view.fenced_brokers().iter().map(|n| broker(n, true)));
        resp.brokers.sort_by_key(|b| b.broker_id.0);
    }
    resp
}
