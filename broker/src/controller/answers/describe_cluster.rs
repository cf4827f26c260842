//! DescribeCluster's answer on the controller listener (KIP-919) and the endpoint-type check both
//! listeners make: here, below the handlers, so the controller needs no handler.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::acl::ResourceType;
use crate::controller::runtime::Controllers;

/// `endpoint_type` values (KIP-919): 1 brokers, 2 controllers.
pub const ENDPOINT_BROKERS: i8 = 1;
pub const ENDPOINT_CONTROLLERS: i8 = 2;

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
pub fn wrong_endpoint_type(
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
