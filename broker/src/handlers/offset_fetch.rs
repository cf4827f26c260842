//! OffsetFetch: a group's committed offsets (offset, leader epoch, metadata) for the
//! partitions asked for, or for every partition with one when the topic list is null (v2+).
//! A partition without a committed offset answers -1 with no error. v8+ batches groups, each
//! with its own error. With `require_stable` (v7+, KIP-447; read_committed consumers set it)
//! a partition whose offset an open transaction is about to change answers
//! UNSTABLE_OFFSET_COMMIT, and the client asks again once the transaction ended.
//!
//! v10 (KIP-848) names topics by id: an id no topic has answers UNKNOWN_TOPIC_ID for its
//! partitions, after the group's other topics (as Kafka's `KafkaApis` appends it); an
//! all-topics answer names each topic by its id and leaves out offsets of topics that no
//! longer exist.
//!
//! ACLs: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on each topic (else its
//! partitions answer TOPIC_AUTHORIZATION_FAILED, or it is left out of an all-topics answer).

use std::collections::HashSet;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::records::OffsetCommitValue;
use crate::group::FetchedOffsets;

/// One partition's answer: (offset, leader epoch, metadata, error code).
type Answer = (i64, i32, String, i16);

fn answer(v: Option<OffsetCommitValue>) -> Answer {
    match v {
        Some(v) => (v.offset, v.leader_epoch, v.metadata, 0),
        None => (-1, -1, String::new(), 0),
    }
}

/// The first version that names topics by id.
const TOPIC_IDS_VERSION: i16 = 10;

pub fn handle(ctx: &Ctx<'_>, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let mut resp = OffsetFetchResponse::default();
    let by_id = ctx.version >= TOPIC_IDS_VERSION;
    if ctx.version >= 8 {
        for g in &req.groups {
            // v10: topics whose id no topic has, answered after the others.
            let mut unknown_ids = Vec::new();
            let topics = g.topics.as_ref().map(|ts| {
                ts.iter()
                    .filter_map(|t| {
                        if !by_id {
                            return Some((t.name.to_string(), t.partition_indexes.clone()));
                        }
                        match super::ctx::topic_name_by_id(ctx.node(), &t.topic_id) {
                            Some(name) => Some((name, t.partition_indexes.clone())),
                            None => {
                                unknown_ids.push(unknown_topic_id(t));
                                None
                            }
                        }
                    })
                    .collect()
            });
            let mut rg = OffsetFetchResponseGroup::default();
            rg.group_id = g.group_id.clone();
            if !ctx.authorize(AclOperation::Describe, ResourceType::Group, &g.group_id) {
                rg.error_code = ResponseError::GroupAuthorizationFailed.code();
                resp.groups.push(rg);
                continue;
            }
            // v9+: a consumer or streams group member's fetch carries its id and epoch
            // (KIP-848, KIP-1071).
            if ctx.version >= 9 {
                let (id, member) = (g.group_id.as_str(), g.member_id.as_deref());
                let checked = ctx
                    .groups()
                    .validate_consumer_fetch(id, member, g.member_epoch)
                    .and_then(|()| {
                        ctx.groups()
                            .validate_streams_fetch(id, member, g.member_epoch)
                    });
                if let Err(e) = checked {
                    rg.error_code = e.code();
                    resp.groups.push(rg);
                    continue;
                }
            }
            let all_topics = topics.is_none();
            match ctx.groups().fetch_offsets(g.group_id.as_str(), topics) {
                Ok(mut found) => {
                    let denied = hide_unauthorized(ctx, &mut found, all_topics);
                    let unstable = unstable(ctx, &req, g.group_id.as_str(), &found);
                    rg.topics = batched_topics(found);
                    if by_id {
                        for t in &mut rg.topics {
                            t.topic_id = super::ctx::topic_id_by_name(ctx.node(), t.name.as_str());
                        }
                        // Offsets of a topic that is gone cannot be named by id.
                        if all_topics {
                            rg.topics.retain(|t| !t.topic_id.is_nil());
                        }
                    }
                    for t in &mut rg.topics {
                        for p in &mut t.partitions {
                            if denied.contains(t.name.as_str()) {
                                p.committed_offset = -1;
                                p.error_code = ResponseError::TopicAuthorizationFailed.code();
                            } else if unstable.contains(&(t.name.to_string(), p.partition_index)) {
                                p.committed_offset = -1;
                                p.error_code = ResponseError::UnstableOffsetCommit.code();
                            }
                        }
                    }
                }
                Err(e) => rg.error_code = e.code(),
            }
            if rg.error_code == 0 {
                rg.topics.extend(unknown_ids);
            }
            resp.groups.push(rg);
        }
        return resp;
    }
    // v1 has no null topic list (an empty one asks for nothing).
    let topics: Option<Vec<(String, Vec<i32>)>> = req.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    if !ctx.authorize(AclOperation::Describe, ResourceType::Group, &req.group_id) {
        let e = ResponseError::GroupAuthorizationFailed.code();
        if ctx.version < 2 {
            // v1 has no top-level error: every partition asked for carries it.
            let asked: FetchedOffsets = topics
                .unwrap_or_default()
                .into_iter()
                .map(|(t, ps)| (t, ps.into_iter().map(|p| (p, None)).collect()))
                .collect();
            resp.topics = single_topics(ctx, asked, Some(e));
        } else {
            resp.error_code = e;
        }
        return resp;
    }
    let all_topics = topics.is_none();
    match ctx
        .groups()
        .fetch_offsets(req.group_id.as_str(), topics.clone())
    {
        Ok(mut found) => {
            let denied = hide_unauthorized(ctx, &mut found, all_topics);
            let unstable = unstable(ctx, &req, req.group_id.as_str(), &found);
            resp.topics = single_topics(ctx, found, None);
            for t in &mut resp.topics {
                for p in &mut t.partitions {
                    if denied.contains(t.name.as_str()) {
                        p.committed_offset = -1;
                        p.error_code = ResponseError::TopicAuthorizationFailed.code();
                    } else if unstable.contains(&(t.name.to_string(), p.partition_index)) {
                        p.committed_offset = -1;
                        p.error_code = ResponseError::UnstableOffsetCommit.code();
                    }
                }
            }
        }
        // v1 has no top-level error: every partition asked for carries it.
        Err(e) if ctx.version < 2 => {
            let asked: FetchedOffsets = topics
                .unwrap_or_default()
                .into_iter()
                .map(|(t, ps)| (t, ps.into_iter().map(|p| (p, None)).collect()))
                .collect();
            resp.topics = single_topics(ctx, asked, Some(e.code()));
        }
        Err(e) => resp.error_code = e.code(),
    }
    resp
}

/// The partitions of `found` with pending transactional offsets, when the client asked for
/// stable offsets only.
fn unstable(
    ctx: &Ctx<'_>,
    req: &OffsetFetchRequest,
    group_id: &str,
    found: &FetchedOffsets,
) -> Vec<(String, i32)> {
    if ctx.version >= 7 && req.require_stable {
        ctx.groups().unstable_partitions(group_id, found)
    } else {
        Vec::new()
    }
}

/// Offsets of topics the caller may not describe are not shown: left out of an all-topics
/// answer, or (asked for by name) answered TOPIC_AUTHORIZATION_FAILED. Returns the latter.
fn hide_unauthorized(
    ctx: &Ctx<'_>,
    found: &mut FetchedOffsets,
    all_topics: bool,
) -> HashSet<String> {
    let may = |topic: &str| ctx.authorize(AclOperation::Describe, ResourceType::Topic, topic);
    if all_topics {
        found.retain(|(topic, _)| may(topic));
        return HashSet::new();
    }
    let mut denied = HashSet::new();
    for (topic, partitions) in found.iter_mut() {
        if !may(topic) {
            for (_, value) in partitions.iter_mut() {
                *value = None;
            }
            denied.insert(topic.clone());
        }
    }
    denied
}

fn single_topics(
    ctx: &Ctx<'_>,
    found: FetchedOffsets,
    error: Option<i16>,
) -> Vec<OffsetFetchResponseTopic> {
    found
        .into_iter()
        .map(|(topic, ps)| {
            let mut rt = OffsetFetchResponseTopic::default();
            rt.name = TopicName(StrBytes::from_string(topic));
            rt.partitions = ps
                .into_iter()
                .map(|(p, v)| {
                    let (offset, epoch, metadata, code) = answer(v);
                    let mut rp = OffsetFetchResponsePartition::default();
                    rp.partition_index = p;
                    rp.committed_offset = offset;
                    if ctx.version >= 5 {
                        rp.committed_leader_epoch = epoch;
                    }
                    rp.metadata = Some(StrBytes::from_string(metadata));
                    rp.error_code = error.unwrap_or(code);
                    rp
                })
                .collect();
            rt
        })
        .collect()
}

/// The answer for a v10 topic whose id no topic has: every partition asked for
/// UNKNOWN_TOPIC_ID, offset -1.
fn unknown_topic_id(
    t: &kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopics,
) -> OffsetFetchResponseTopics {
    let mut rt = OffsetFetchResponseTopics::default();
    rt.topic_id = t.topic_id;
    rt.partitions = t
        .partition_indexes
        .iter()
        .map(|p| {
            let mut rp = OffsetFetchResponsePartitions::default();
            rp.partition_index = *p;
            rp.committed_offset = -1;
            rp.committed_leader_epoch = -1;
            rp.metadata = Some(StrBytes::from_static_str(""));
            rp.error_code = ResponseError::UnknownTopicId.code();
            rp
        })
        .collect();
    rt
}

fn batched_topics(found: FetchedOffsets) -> Vec<OffsetFetchResponseTopics> {
    found
        .into_iter()
        .map(|(topic, ps)| {
            let mut rt = OffsetFetchResponseTopics::default();
            rt.name = TopicName(StrBytes::from_string(topic));
            rt.partitions = ps
                .into_iter()
                .map(|(p, v)| {
                    let (offset, epoch, metadata, code) = answer(v);
                    let mut rp = OffsetFetchResponsePartitions::default();
                    rp.partition_index = p;
                    rp.committed_offset = offset;
                    rp.committed_leader_epoch = epoch;
                    rp.metadata = Some(StrBytes::from_string(metadata));
                    rp.error_code = code;
                    rp
                })
                .collect();
            rt
        })
        .collect()
}
