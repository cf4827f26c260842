//! AlterPartitionReassignments (KIP-455): move partitions to other replicas. Moving a partition
//! means copying it to its new replicas, which needs replication (not built yet), so no
//! reassignment is ever in progress and the only target that can be honoured is the current
//! replica set of the metadata image. As Kafka's controller checks them: that target is already
//! in place (NONE); an empty list, a repeated broker or a broker that is not registered is
//! INVALID_REPLICA_ASSIGNMENT, and so is any other target, with the reason; cancelling (null
//! replicas) finds nothing to cancel, NO_REASSIGNMENT_IN_PROGRESS. ACLs: ALTER on the cluster,
//! else CLUSTER_AUTHORIZATION_FAILED for the whole request.

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::cluster_view::ClusterView;
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
    let view = ClusterView::new(ctx.broker);
    for t in req.topics {
        let topic = view.topic(t.name.as_str());
        let mut result = ReassignableTopicResponse::default();
        result.name = t.name.clone();
        for p in t.partitions {
            let mut pr = ReassignablePartitionResponse::default();
            pr.partition_index = p.partition_index;
            let current = topic
                .as_ref()
                .and_then(|topic| view.partition(topic, p.partition_index));
            let outcome = match (current, &p.replicas) {
                (None, _) => Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("no partition {}-{}", t.name.as_str(), p.partition_index),
                )),
                (Some(_), None) => Err((
                    ResponseError::NoReassignmentInProgress,
                    "no reassignment is in progress for this partition".to_string(),
                )),
                (Some(current), Some(replicas)) => check_target(replicas, &current.replicas, |b| {
                    view.image.broker(b).is_some() || b == ctx.broker.node_id
                }),
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

/// The replicas a partition is asked to move to, against its current ones.
fn check_target(
    replicas: &[BrokerId],
    current: &[i32],
    registered: impl Fn(i32) -> bool,
) -> Result<(), (ResponseError, String)> {
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
        if !registered(b.0) {
            return Err((
                ResponseError::InvalidReplicaAssignment,
                format!("broker {} is not registered", b.0),
            ));
        }
    }
    let target: Vec<i32> = replicas.iter().map(|b| b.0).collect();
    if target != current {
        return Err((
            ResponseError::InvalidReplicaAssignment,
            format!(
                "moving the partition from replicas {current:?} to {target:?} needs replication, which Samsa does not have yet"
            ),
        ));
    }
    Ok(())
}
