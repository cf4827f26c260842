//! DescribeCluster: cluster id, controller and live brokers (the admin client's view of
//! Metadata), from the committed metadata image as Metadata answers; from v2 the fenced ones
//! too when asked (`include_fenced_brokers`).
//! `cluster_authorized_operations` comes from the authorizer (0 without DESCRIBE on the
//! cluster, as Kafka answers).
//!
//! A controller listener answers it too (KIP-919, for Kafka's tools given
//! `--bootstrap-controller`): the quorum's voters by their endpoints on that listener and the
//! quorum's leader ([`answer_controllers`]). Each listener refuses the other kind of endpoint as
//! Kafka's `AuthHelper.computeDescribeClusterResponse` does: MISMATCHED_ENDPOINT_TYPE
//! (INVALID_REQUEST in v0, which cannot name a type), and UNSUPPORTED_ENDPOINT_TYPE for a type
//! that is neither.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::cluster_view::{ClusterView, Node};
use crate::controller::runtime::Controllers;

/// `endpoint_type` values (KIP-919): 1 brokers, 2 controllers.
const ENDPOINT_BROKERS: i8 = 1;
const ENDPOINT_CONTROLLERS: i8 = 2;

/// Kafka's name of an endpoint type (`EndpointType`), for its error messages.
fn endpoint_type_name(t: i8) -> &'static str {
    if t == ENDPOINT_CONTROLLERS {
        "CONTROLLER"
    } else {
        "BROKER"
    }
}

/// The refusal of a request for endpoints other than `served`'s, as Kafka words it; `None`
/// when the request asks for `served`. (v0 has no `endpoint_type`: it asks for brokers.)
fn wrong_endpoint_type(
    req: &DescribeClusterRequest,
    version: i16,
    served: i8,
) -> Option<DescribeClusterResponse> {
    let wanted = req.endpoint_type;
    let (error, message) = if wanted != ENDPOINT_BROKERS && wanted != ENDPOINT_CONTROLLERS {
        (
            ResponseError::UnsupportedEndpointType,
            format!("Unsupported endpoint type {wanted}"),
        )
    } else if wanted != served {
        (
            ResponseError::MismatchedEndpointType,
            format!(
                "The request was sent to an endpoint of type {}, but we wanted an endpoint of type {}",
                endpoint_type_name(served),
                endpoint_type_name(wanted)
            ),
        )
    } else {
        return None;
    };
    // The answer's other fields keep their defaults (endpoint_type 1), as in Kafka's.
    let mut resp = DescribeClusterResponse::default();
    resp.error_code = if version == 0 {
        ResponseError::InvalidRequest.code()
    } else {
        error.code()
    };
    resp.error_message = Some(StrBytes::from_string(message));
    Some(resp)
}

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

/// DescribeCluster on the controller listener `listener` (Kafka's `ControllerApis`): the voters
/// with an endpoint on that listener (as Kafka lists the controllers registered with one),
/// rack null; the quorum's leader as `controller_id` (-1 if none, or if it has no endpoint
/// listed); `endpoint_type` 2. Not before `metadata.version` 3.7-IV0, in which controllers
/// register (UNSUPPORTED_VERSION, as Kafka answers). Controller RPCs are not checked against
/// ACLs, so the authorized operations are all of the cluster's (Kafka's without an authorizer).
pub fn answer_controllers(
    req: &DescribeClusterRequest,
    version: i16,
    cluster_id: &str,
    controllers: &Controllers,
    listener: &str,
    metadata_version: Option<i16>,
) -> DescribeClusterResponse {
    if metadata_version
        .is_none_or(|mv| mv < samsa_cluster::controller::METADATA_VERSION_CONTROLLER_REGISTRATION)
    {
        let mut resp = DescribeClusterResponse::default();
        resp.error_code = ResponseError::UnsupportedVersion.code();
        resp.error_message = Some(StrBytes::from_static_str(
            "Direct-to-controller communication is not supported with the current MetadataVersion.",
        ));
        return resp;
    }
    if let Some(refused) = wrong_endpoint_type(req, version, ENDPOINT_CONTROLLERS) {
        return refused;
    }
    let mut resp = DescribeClusterResponse::default();
    resp.endpoint_type = ENDPOINT_CONTROLLERS;
    resp.cluster_id = StrBytes::from_string(cluster_id.to_string());
    resp.brokers = controllers
        .endpoints
        .iter()
        .filter(|e| e.listener == listener)
        .map(|e| {
            let mut b = DescribeClusterBroker::default();
            b.broker_id = BrokerId(e.node_id);
            b.host = StrBytes::from_string(e.host.clone());
            b.port = i32::from(e.port);
            b.rack = None;
            b
        })
        .collect();
    resp.controller_id = BrokerId(
        controllers
            .leader_id
            .filter(|l| resp.brokers.iter().any(|b| b.broker_id.0 == *l))
            .unwrap_or(-1),
    );
    resp.cluster_authorized_operations = if req.include_cluster_authorized_operations {
        ResourceType::Cluster
            .supported_operations()
            .iter()
            .fold(0, |bits, op| bits | (1 << op.code()))
    } else {
        i32::MIN
    };
    resp
}
