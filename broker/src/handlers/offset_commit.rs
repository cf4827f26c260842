//! OffsetCommit: stores a group's consumed positions in `__consumer_offsets`, before the
//! answer. Group members commit with their member id and generation (checked: stale members
//! get ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, and members between
//! JoinGroup and SyncGroup REBALANCE_IN_PROGRESS); consumers without group management commit
//! with generation -1 while the group has no members. Partitions of unknown topics get
//! UNKNOWN_TOPIC_OR_PARTITION, metadata longer than `offset.metadata.max.bytes`
//! OFFSET_METADATA_TOO_LARGE; the metadata string is kept and returned by OffsetFetch.
//!
//! v10 (KIP-848) names topics by id: an id no topic has answers its partitions
//! UNKNOWN_TOPIC_ID, and the answer names topics by id too, as Kafka's `KafkaApis` does.
//!
//! ACLs: READ on the group (else every partition gets GROUP_AUTHORIZATION_FAILED) and on each
//! topic (TOPIC_AUTHORIZATION_FAILED).

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::{CommitRequest, OffsetToCommit};

/// The first version that names topics by id.
const TOPIC_IDS_VERSION: i16 = 10;

pub async fn handle(ctx: &Ctx<'_>, mut req: OffsetCommitRequest) -> OffsetCommitResponse {
    let by_id = ctx.version >= TOPIC_IDS_VERSION;
    if by_id {
        // An unknown id leaves the name empty: UNKNOWN_TOPIC_ID below.
        for t in &mut req.topics {
            let name = super::ctx::topic_name_by_id(ctx.node(), &t.topic_id).unwrap_or_default();
            t.name = TopicName(StrBytes::from_string(name));
        }
    }
    let group_authorized = ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id);
    // Partitions that do not exist, or that the caller may not commit, are answered here; the
    // rest go to the coordinator.
    let mut answers: Vec<(usize, Vec<(i32, i16)>)> = Vec::with_capacity(req.topics.len());
    let mut valid = Vec::new();
    // A partition is known when this broker holds it or the metadata image names it (Kafka
    // checks its metadata cache): a topic just created is in the image a moment before this
    // broker has opened its replicas, and Metadata already lists it.
    let image = ctx.controller().image();
    let in_image = |name: &str, p: i32| {
        image
            .topic_by_name(name)
            .is_some_and(|t| t.partition(p).is_some())
    };
    for (i, t) in req.topics.iter().enumerate() {
        let topic = ctx.topics().get(t.name.as_str());
        let refused = if !group_authorized {
            Some(ResponseError::GroupAuthorizationFailed)
        } else if by_id && t.name.is_empty() {
            Some(ResponseError::UnknownTopicId)
        } else if !ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.name) {
            Some(ResponseError::TopicAuthorizationFailed)
        } else {
            None
        };
        let mut pre = Vec::new();
        let mut ok = Vec::new();
        for p in &t.partitions {
            if let Some(e) = refused {
                pre.push((p.partition_index, e.code()));
            } else if !topic
                .as_ref()
                .is_some_and(|tp| tp.has_partition(p.partition_index))
                && !in_image(t.name.as_str(), p.partition_index)
            {
                pre.push((
                    p.partition_index,
                    ResponseError::UnknownTopicOrPartition.code(),
                ));
            } else {
                ok.push(OffsetToCommit {
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if ctx.version >= 6 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                });
            }
        }
        answers.push((i, pre));
        if !ok.is_empty() {
            valid.push((t.name.to_string(), ok));
        }
    }
    let commit = CommitRequest {
        group_id: req.group_id.to_string(),
        generation_id: req.generation_id_or_member_epoch,
        member_id: req.member_id.to_string(),
        group_instance_id: if ctx.version >= 7 {
            req.group_instance_id.as_ref().map(|s| s.to_string())
        } else {
            None
        },
        retention_time_ms: if ctx.version <= 4 {
            req.retention_time_ms
        } else {
            -1
        },
        topics: valid.clone(),
        api_version: ctx.version,
    };
    let result = if valid.is_empty() {
        Ok(Vec::new())
    } else {
        ctx.groups().commit_offsets(ctx.node(), commit).await
    };
    // Results in the request's order, whatever path each partition took.
    let mut by_partition: std::collections::HashMap<(String, i32), i16> = Default::default();
    match result {
        Ok(results) => {
            for (topic, ps) in results {
                for (p, r) in ps {
                    by_partition.insert((topic.clone(), p), r.err().map_or(0, |e| e.code()));
                }
            }
        }
        Err(e) => {
            for (topic, ps) in &valid {
                for p in ps {
                    by_partition.insert((topic.clone(), p.partition), e.code());
                }
            }
        }
    }
    let mut resp = OffsetCommitResponse::default();
    for (i, pre) in answers {
        let t = &req.topics[i];
        let mut tr = OffsetCommitResponseTopic::default();
        if by_id {
            tr.topic_id = t.topic_id;
        } else {
            tr.name = t.name.clone();
        }
        for p in &t.partitions {
            let code = pre
                .iter()
                .find(|(idx, _)| *idx == p.partition_index)
                .map(|(_, c)| *c)
                .or_else(|| {
                    by_partition
                        .get(&(t.name.to_string(), p.partition_index))
                        .copied()
                })
                .unwrap_or(0);
            let mut pr = OffsetCommitResponsePartition::default();
            pr.partition_index = p.partition_index;
            pr.error_code = code;
            tr.partitions.push(pr);
        }
        // A topic named twice is answered once, as Kafka's `OffsetCommitResponse.Builder`
        // keys its answer by topic (id from v10, name before).
        match resp
            .topics
            .iter_mut()
            .find(|o| o.topic_id == tr.topic_id && o.name == tr.name)
        {
            Some(o) => o.partitions.extend(tr.partitions),
            None => resp.topics.push(tr),
        }
    }
    resp
}
