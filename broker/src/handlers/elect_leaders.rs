//! ElectLeaders (KIP-460): move leadership back to each partition's preferred replica
//! (PREFERRED), or give a partition that has no leader and no live in-sync replica a leader from
//! outside the ISR (UNCLEAN, at the price of the records only the former ISR had). The caller
//! needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED; an election type other than
//! PREFERRED and UNCLEAN is INVALID_REQUEST ("Unknown election type 2"). Both fail the whole
//! request: the code at the top (from v1) and on every partition named.
//!
//! The elections are the active controller's (`Controller::elect_leaders`, Kafka's
//! `ReplicationControlManager.electLeaders`), to which the request goes as Kafka 4.x brokers
//! forward it; it is answered once this broker's image shows the new leaders, so that the
//! client's next Metadata here does too. A null topic list elects for every partition and
//! lists only the partitions that needed an election, as Kafka's controller does. Topics only
//! this broker knows have one replica, led here: their partitions never need an election.

use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};
use kafka_protocol::ResponseError;
use samsa_cluster::controller::{
    ElectLeadersTopic, PartitionElectionResult, ReplicaElectionResult, ELECTION_TYPE_PREFERRED,
    ELECTION_TYPE_UNCLEAN,
};
use samsa_cluster::metadata::MetadataImage;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::active::{ControllerReply, ControllerRequest, ControllerResult};
use crate::controller::partition_rpcs;
use crate::metadata_wait::ctx_timeout;
use crate::topics::Topic;

pub async fn handle(ctx: &Ctx<'_>, req: ElectLeadersRequest) -> ElectLeadersResponse {
    let timeout = ctx_timeout(req.timeout_ms);
    let asked = partition_rpcs::elect_leaders_from_kafka(req, ctx.version);
    let result = elect(ctx, &asked, timeout).await;
    partition_rpcs::elect_leaders_response(&asked, &result, ctx.version)
}

/// The checks made here, the controller's elections, and this broker's own topics' answers.
async fn elect(
    ctx: &Ctx<'_>,
    asked: &samsa_cluster::controller::ElectLeadersRequest,
    timeout: std::time::Duration,
) -> ControllerResult {
    ctx.authorize_cluster(AclOperation::Alter)
        .map_err(|(code, message)| {
            crate::controller::active::ReplyError::new(code.code(), message)
        })?;
    if !matches!(
        asked.election_type,
        ELECTION_TYPE_PREFERRED | ELECTION_TYPE_UNCLEAN
    ) {
        return Err(crate::controller::active::ReplyError::new(
            ResponseError::InvalidRequest.code(),
            format!("Unknown election type {}", asked.election_type),
        ));
    }
    let node = ctx.node();
    let own = |name: &str| node.topics.get(name).filter(|t| !t.managed);
    let forwarded = samsa_cluster::controller::ElectLeadersRequest {
        election_type: asked.election_type,
        topic_partitions: asked.topic_partitions.as_ref().map(|topics| {
            topics
                .iter()
                .filter(|t| own(&t.topic).is_none())
                .cloned()
                .collect()
        }),
    };
    // Kafka's controller answers an empty list at once, without electing anything.
    let decided = if forwarded
        .topic_partitions
        .as_ref()
        .is_some_and(Vec::is_empty)
    {
        Vec::new()
    } else {
        let request = ControllerRequest::ElectLeaders(forwarded.clone());
        match node.controller.request_retrying(request, timeout).await? {
            ControllerReply::ElectLeaders(results) => results,
            other => {
                return Err(crate::controller::active::ReplyError::new(
                    ResponseError::UnknownServerError.code(),
                    format!("the controller answered another request: {other:?}"),
                ))
            }
        }
    };
    let elected: Vec<(String, i32)> = decided
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .filter(|p| p.error_code == 0)
                .map(|p| (t.topic.clone(), p.partition_id))
        })
        .collect();
    if !elected.is_empty() {
        let preferred = asked.election_type == ELECTION_TYPE_PREFERRED;
        crate::metadata_wait::wait_until_published(node, |image| {
            elected
                .iter()
                .all(|(t, p)| shows_election(image, t, *p, preferred))
        })
        .await;
    }
    let mut decided = decided.into_iter();
    let results = match &asked.topic_partitions {
        // In request order: this broker's topics answered here, the others by the controller.
        Some(topics) => topics
            .iter()
            .map(|t| match own(&t.topic) {
                Some(topic) => own_topic(&topic, t),
                None => decided.next().unwrap_or_else(|| ReplicaElectionResult {
                    topic: t.topic.clone(),
                    partitions: Vec::new(),
                }),
            })
            .collect(),
        None => {
            let mut all: Vec<ReplicaElectionResult> = decided.collect();
            all.extend(
                node.topics
                    .all()
                    .into_iter()
                    .filter(|t| !t.managed)
                    .map(|t| ReplicaElectionResult {
                        topic: t.name.clone(),
                        partitions: Vec::new(),
                    }),
            );
            all.sort_by(|a, b| a.topic.cmp(&b.topic));
            all
        }
    };
    Ok(ControllerReply::ElectLeaders(results))
}

/// Whether `image` has the election of `topic`-`partition`: the preferred replica leads, or
/// (unclean) some broker does.
fn shows_election(image: &MetadataImage, topic: &str, partition: i32, preferred: bool) -> bool {
    let Some(p) = image
        .topic_by_name(topic)
        .and_then(|t| t.partition(partition))
    else {
        // Deleted meanwhile: nothing to wait for.
        return true;
    };
    if preferred {
        p.replicas.first() == Some(&p.leader)
    } else {
        p.leader >= 0
    }
}

/// The answer for a topic only this broker knows: each partition has one replica, led here.
fn own_topic(topic: &Topic, asked: &ElectLeadersTopic) -> ReplicaElectionResult {
    let partitions = asked
        .partitions
        .iter()
        .map(|&partition_id| {
            let (code, message) = if topic.partition(partition_id).is_some() {
                (
                    ResponseError::ElectionNotNeeded,
                    format!(
                        "{}-{partition_id}: leader election not needed: its only replica leads",
                        topic.name
                    ),
                )
            } else {
                (
                    ResponseError::UnknownTopicOrPartition,
                    format!("No such partition as {}-{partition_id}", topic.name),
                )
            };
            PartitionElectionResult {
                partition_id,
                error_code: code.code(),
                error_message: Some(message),
            }
        })
        .collect();
    ReplicaElectionResult {
        topic: asked.topic.clone(),
        partitions,
    }
}
