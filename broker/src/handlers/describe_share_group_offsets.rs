//! DescribeShareGroupOffsets (KIP-932): each share-partition's start offset (SPSO) for the
//! groups asked, all of the group's share-partitions when no topics are named, -1 for a
//! partition that has no state yet (or of a topic that does not exist: no error, as Kafka
//! answers). The leader epoch is 0, as Kafka's group coordinator fills it. Samsa adds two tagged fields to each partition it holds in
//! memory (Kafka clients skip unknown tags): 10000, the records acquired now, and 10001, the
//! records archived within the in-flight window (each an unsigned varint), which
//! `samsa group describe` shows. ACLs: DESCRIBE on the group, DESCRIBE on each topic.
//!
//! v1 (KIP-1226) adds each partition's lag, as Kafka's `GroupCoordinatorService` computes it:
//! the partition's high watermark, less the start offset, less the records past it whose
//! delivery is complete; -1 for a partition without a start offset (or not led here, where the
//! high watermark is not known). `kafka-share-groups --describe` shows it. The field is outside
//! `kafka-protocol`'s struct: it goes beside the answer (`samsa_protocol::newer`).

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use samsa_protocol::newer::{Record, Value};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::share::admin::OffsetsView;

/// The first version with a partition's lag.
const LAG_VERSION: i16 = 1;

/// A partition's lag (Kafka's `computeShareGroupLagAndBuildResponse`): the partition leader's
/// high watermark (this broker's when it leads, else asked of the leader with ListOffsets, as
/// Kafka's coordinator asks for the latest offsets) less the start offset and the records
/// delivered past it; -1 without a start offset or an answer from the leader, and for v0.
async fn lag(ctx: &Ctx<'_>, topic_id: &uuid::Uuid, index: i32, view: Option<&OffsetsView>) -> i64 {
    let Some(v) = view.filter(|v| v.start_offset >= 0) else {
        return -1;
    };
    if ctx.version < LAG_VERSION {
        return -1;
    }
    let node = ctx.node();
    let local = node.topics.get_by_id(topic_id).and_then(|t| {
        t.partition(index)
            .filter(|p| p.is_leader())
            .map(|p| p.high_watermark())
    });
    let high_watermark = match local {
        Some(hw) => Some(hw),
        None => {
            let image = node.controller.image();
            let leader = image
                .topic_by_id(topic_id)
                .and_then(|t| t.partition(index).map(|p| (t.name.clone(), p.leader)));
            match leader {
                Some((name, leader)) if leader >= 0 && leader != node.node_id => {
                    crate::share::dlq::remote_high_watermark(node, leader, &name, index)
                        .await
                        .map_err(|e| {
                            tracing::debug!(topic = %name, partition = index, leader, "no high watermark for a share group's lag: {e}")
                        })
                        .ok()
                }
                _ => None,
            }
        }
    };
    match high_watermark {
        Some(hw) => hw - v.start_offset - v.delivery_complete as i64,
        None => -1,
    }
}

/// Samsa's tagged fields of a partition: records acquired, and archived in the window.
pub const TAG_ACQUIRED: i32 = 10_000;
pub const TAG_ARCHIVED: i32 = 10_001;

fn uvarint(v: u64) -> Bytes {
    let mut b = BytesMut::new();
    let mut v = v;
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
    b.freeze()
}

fn partition(index: i32, view: Option<&OffsetsView>) -> DescribeShareGroupOffsetsResponsePartition {
    let mut p = DescribeShareGroupOffsetsResponsePartition::default();
    p.partition_index = index;
    p.leader_epoch = 0;
    p.start_offset = view.map_or(-1, |v| v.start_offset);
    if let Some(v) = view {
        if let Some(a) = v.acquired {
            p.unknown_tagged_fields.insert(TAG_ACQUIRED, uvarint(a));
        }
        if let Some(a) = v.archived {
            p.unknown_tagged_fields.insert(TAG_ARCHIVED, uvarint(a));
        }
    }
    p
}

/// The answer, with each partition's lag for v1 (in the answer's order).
pub async fn handle(
    ctx: &Ctx<'_>,
    req: DescribeShareGroupOffsetsRequest,
) -> (DescribeShareGroupOffsetsResponse, Option<Record>) {
    let node = ctx.node();
    let mut resp = DescribeShareGroupOffsetsResponse::default();
    // Lags by group, topic and partition, as the answer lists them.
    let mut lags: Vec<Vec<Vec<i64>>> = Vec::new();
    for g in req.groups {
        let mut group_lags: Vec<Vec<i64>> = Vec::new();
        let group_id = g.group_id.to_string();
        let mut out = DescribeShareGroupOffsetsResponseGroup::default();
        out.group_id = g.group_id.clone();
        let refused = if !crate::share::enabled(&node.controller.image()) {
            Some(ResponseError::UnsupportedVersion)
        } else if !ctx.authorize(AclOperation::Describe, ResourceType::Group, &group_id) {
            Some(ResponseError::GroupAuthorizationFailed)
        } else if let Err(e) = ctx.groups().check_loaded(&group_id) {
            Some(e.response_error())
        } else if ctx.groups().exists(&group_id) {
            Some(ResponseError::GroupIdNotFound)
        } else {
            None
        };
        if let Some(e) = refused {
            out.error_code = e.code();
            resp.groups.push(out);
            lags.push(group_lags);
            continue;
        }
        let views = match ctx.shares().describe_offsets(node, &group_id).await {
            Ok(v) => v,
            Err(e) => {
                out.error_code = e.code();
                resp.groups.push(out);
                lags.push(group_lags);
                continue;
            }
        };
        // By topic id, then partition.
        let mut by_topic: BTreeMap<uuid::Uuid, BTreeMap<i32, OffsetsView>> = BTreeMap::new();
        for (k, v) in views {
            by_topic
                .entry(k.topic_id)
                .or_default()
                .insert(k.partition, v);
        }
        match g.topics {
            Some(topics) => {
                for t in topics {
                    let mut ot = DescribeShareGroupOffsetsResponseTopic::default();
                    ot.topic_name = t.topic_name.clone();
                    let topic = node.topics.get(t.topic_name.as_str());
                    let authorized =
                        ctx.authorize(AclOperation::Describe, ResourceType::Topic, &t.topic_name);
                    let mut topic_lags = Vec::new();
                    for index in t.partitions {
                        let mut p = match (&topic, authorized) {
                            (_, false) => {
                                let mut p = partition(index, None);
                                p.error_code = ResponseError::TopicAuthorizationFailed.code();
                                p
                            }
                            (None, true) => partition(index, None),
                            (Some(topic), true) => {
                                ot.topic_id = topic.id;
                                let view = by_topic.get(&topic.id).and_then(|m| m.get(&index));
                                topic_lags.push(lag(ctx, &topic.id, index, view).await);
                                partition(index, view)
                            }
                        };
                        if topic_lags.len() < ot.partitions.len() + 1 {
                            topic_lags.push(-1);
                        }
                        p.error_message = None::<StrBytes>;
                        ot.partitions.push(p);
                    }
                    out.topics.push(ot);
                    group_lags.push(topic_lags);
                }
            }
            None => {
                for (topic_id, parts) in by_topic {
                    let Some(topic) = node.topics.get_by_id(&topic_id) else {
                        continue;
                    };
                    if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, &topic.name) {
                        continue;
                    }
                    let mut ot = DescribeShareGroupOffsetsResponseTopic::default();
                    ot.topic_name = TopicName(topic.wire_name.clone());
                    ot.topic_id = topic_id;
                    ot.partitions = parts.iter().map(|(i, v)| partition(*i, Some(v))).collect();
                    let mut topic_lags = Vec::with_capacity(parts.len());
                    for (i, v) in &parts {
                        topic_lags.push(lag(ctx, &topic_id, *i, Some(v)).await);
                    }
                    group_lags.push(topic_lags);
                    out.topics.push(ot);
                }
            }
        }
        resp.groups.push(out);
        lags.push(group_lags);
    }
    let added = (ctx.version >= LAG_VERSION).then(|| lags_record(lags));
    (resp, added)
}

/// The lags as the fields v1 adds: Groups[].Topics[].Partitions[].Lag.
fn lags_record(lags: Vec<Vec<Vec<i64>>>) -> Record {
    let partitions = |ps: Vec<i64>| {
        Value::records(
            ps.into_iter()
                .map(|l| Record::new().with("Lag", Value::Int(l))),
        )
    };
    let topics = |ts: Vec<Vec<i64>>| {
        Value::records(
            ts.into_iter()
                .map(|ps| Record::new().with("Partitions", partitions(ps))),
        )
    };
    Record::new().with(
        "Groups",
        Value::records(
            lags.into_iter()
                .map(|ts| Record::new().with("Topics", topics(ts))),
        ),
    )
}
