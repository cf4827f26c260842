//! AlterPartitionReassignments (KIP-455): move partitions to other replicas. A single node has
//! one possible replica set, itself, and no reassignment is ever in progress. So, as Kafka's
//! controller checks them: a target of exactly this broker is already in place (NONE); an
//! empty list, a repeated broker or a broker that is not registered is
//! INVALID_REPLICA_ASSIGNMENT (so no valid target changes the replication factor, and v1's
//! `allow_replication_factor_change` never matters); cancelling (null replicas) finds nothing
//! to cancel, NO_REASSIGNMENT_IN_PROGRESS. ACLs: ALTER on the cluster, else
//! CLUSTER_AUTHORIZATION_FAILED for the whole request.

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::AclOperation;

pub fn handle(
    ctx: &Ctx<'_>,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let mut resp = AlterPartitionReassignmentsResponse::default();
    resp.error_message = None;
    if ctx.version >= 1 {
        resp.allow_replication_factor_change = req.allow_replication_factor_change;
    }
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Alter) {
        resp.error_code = code.code();
        resp.error_message = Some(StrBytes::from_string(message));
        return resp;
    }
    let node = ctx.broker.node_id;
    for t in req.topics {
        let topic = ctx.broker.topics.get(t.name.as_str());
        let mut result = ReassignableTopicResponse::default();
        result.name = t.name.clone();
        for p in t.partitions {
            let mut pr = ReassignablePartitionResponse::default();
            pr.partition_index = p.partition_index;
            let exists = topic
                .as_ref()
                .and_then(|t| t.partition(p.partition_index))
                .is_some();
            let outcome = if !exists {
                Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("no partition {}-{}", t.name.as_str(), p.partition_index),
                ))
            } else {
                match &p.replicas {
                    None => Err((
                        ResponseError::NoReassignmentInProgress,
                        "no reassignment is in progress for this partition".to_string(),
                    )),
                    Some(replicas) => check_target(replicas, node),
                }
            };
            pr.error_message = None;
            if let Err((code, message)) = outcome {
                pr.error_code = code.code();
                pr.error_message = Some(StrBytes::from_string(message));
            }
            result.partitions.push(pr);
        }
        resp.responses.push(result);
    }
    resp
}

/// The replicas a partition is asked to move to, against the one replica set there is.
fn check_target(replicas: &[BrokerId], node: i32) -> Result<(), (ResponseError, String)> {
    if replicas.is_empty() {
        return Err((
            ResponseError::InvalidReplicaAssignment,
            "the target replica list is empty".to_string(),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for b in replicas {
        if !seen.insert(b.0) {
            return Err((
                ResponseError::InvalidReplicaAssignment,
                format!("broker {} appears twice in the target replicas", b.0),
            ));
        }
        if b.0 != node {
            return Err((
                ResponseError::InvalidReplicaAssignment,
                format!(
                    "broker {} is not registered; this cluster has only broker {node}",
                    b.0
                ),
            ));
        }
    }
    // The target is exactly [node]: the current replica set.
    Ok(())
}
