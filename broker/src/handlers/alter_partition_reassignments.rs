//! AlterPartitionReassignments (KIP-455): move partitions to other replicas, or cancel a move
//! (null replicas). The request goes to the active controller, as Kafka 4.x brokers forward it;
//! its decisions are `Controller::alter_partition_reassignments` (Kafka's
//! `ReplicationControlManager`): an empty list, a repeated broker or an unregistered broker is
//! INVALID_REPLICA_ASSIGNMENT, an unknown partition UNKNOWN_TOPIC_OR_PARTITION, cancelling
//! where nothing moves NO_REASSIGNMENT_IN_PROGRESS, and a target of another size with v1's
//! `allow_replication_factor_change` false INVALID_REPLICATION_FACTOR (KIP-860). The brokers
//! added then copy the partition from its leader; the controller finishes the move once they
//! are all in the ISR (see `samsa_cluster::reassignment`).
//!
//! Answered once this broker's image shows each accepted move, so that a
//! ListPartitionReassignments or Metadata sent here next sees it. Topics only this broker knows
//! have one replica, here: the only target they accept is that one. ACLs: ALTER on the cluster,
//! else CLUSTER_AUTHORIZATION_FAILED for the whole request.

use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
};
use kafka_protocol::ResponseError;
use samsa_cluster::controller::{
    AlterPartitionReassignmentsRequest as Reassign, ReassignableTopic, ReassignmentResult,
    ReassignmentTopicResult,
};
use samsa_cluster::metadata::MetadataImage;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::active::{ControllerReply, ControllerRequest, ControllerResult};
use crate::controller::reassignment_rpcs;
use crate::metadata_wait::ctx_timeout;
use crate::topics::Topic;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let timeout = ctx_timeout(req.timeout_ms);
    let asked = reassignment_rpcs::from_kafka(req, ctx.version);
    let result = reassign(ctx, &asked, timeout).await;
    reassignment_rpcs::response(&asked, &result, ctx.version)
}

async fn reassign(
    ctx: &Ctx<'_>,
    asked: &Reassign,
    timeout: std::time::Duration,
) -> ControllerResult {
    ctx.authorize_cluster(AclOperation::Alter)
        .map_err(|(code, message)| {
            crate::controller::active::ReplyError::new(code.code(), message)
        })?;
    let node = ctx.node();
    let own = |name: &str| node.topics.get(name).filter(|t| !t.managed);
    let forwarded = Reassign {
        allow_replication_factor_change: asked.allow_replication_factor_change,
        topics: asked
            .topics
            .iter()
            .filter(|t| own(&t.name).is_none())
            .cloned()
            .collect(),
    };
    let decided = if forwarded.topics.is_empty() {
        Vec::new()
    } else {
        let request = ControllerRequest::AlterPartitionReassignments(forwarded.clone());
        match node.controller.request_retrying(request, timeout).await? {
            ControllerReply::AlterPartitionReassignments(r) => r,
            other => {
                return Err(crate::controller::active::ReplyError::new(
                    ResponseError::UnknownServerError.code(),
                    format!("the controller answered another request: {other:?}"),
                ))
            }
        }
    };
    let accepted: Vec<(String, i32, Option<Vec<i32>>)> = forwarded
        .topics
        .iter()
        .zip(&decided)
        .flat_map(|(t, d)| {
            t.partitions
                .iter()
                .zip(&d.partitions)
                .filter(|(_, r)| r.error_code == 0)
                .map(|(p, _)| (t.name.clone(), p.partition_index, p.replicas.clone()))
        })
        .collect();
    if !accepted.is_empty() {
        crate::metadata_wait::wait_until_published(node, |image| {
            accepted
                .iter()
                .all(|(t, p, target)| shows_reassignment(image, t, *p, target.as_deref()))
        })
        .await;
    }
    let mut decided = decided.into_iter();
    let results = asked
        .topics
        .iter()
        .map(|t| match own(&t.name) {
            Some(topic) => own_topic(&topic, t, node.node_id),
            None => decided.next().unwrap_or_else(|| ReassignmentTopicResult {
                name: t.name.clone(),
                partitions: Vec::new(),
            }),
        })
        .collect();
    Ok(ControllerReply::AlterPartitionReassignments(results))
}

/// Whether `image` shows the move of `topic`-`partition` to `target` (in progress, its
/// replicas start with the target; done, they are the target) or its cancellation.
fn shows_reassignment(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
    target: Option<&[i32]>,
) -> bool {
    let Some(p) = image
        .topic_by_name(topic)
        .and_then(|t| t.partition(partition))
    else {
        return true; // deleted meanwhile: nothing to wait for
    };
    match target {
        Some(target) => p.replicas.starts_with(target),
        None => p.adding_replicas.is_empty() && p.removing_replicas.is_empty(),
    }
}

/// The answer for a topic only this broker knows: its partitions have one replica, here.
fn own_topic(topic: &Topic, asked: &ReassignableTopic, node_id: i32) -> ReassignmentTopicResult {
    let partitions = asked
        .partitions
        .iter()
        .map(|p| {
            let outcome = match (topic.partition(p.partition_index), &p.replicas) {
                (None, _) => Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("Unable to find partition {}:{}.", topic.name, p.partition_index),
                )),
                // Kafka answers this one without a message.
                (Some(_), None) => Err((ResponseError::NoReassignmentInProgress, String::new())),
                (Some(_), Some(target)) if target[..] == [node_id] => Ok(()),
                (Some(_), Some(target)) => Err((
                    ResponseError::InvalidReplicaAssignment,
                    format!(
                        "topic '{}' is known only to broker {node_id}, its only replica: it cannot move to {target:?}",
                        topic.name
                    ),
                )),
            };
            let (error_code, error_message) = match outcome {
                Ok(()) => (0, None),
                Err((code, message)) => (code.code(), (!message.is_empty()).then_some(message)),
            };
            ReassignmentResult {
                partition_index: p.partition_index,
                error_code,
                error_message,
            }
        })
        .collect();
    ReassignmentTopicResult {
        name: asked.name.clone(),
        partitions,
    }
}
