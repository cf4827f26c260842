//! OffsetFetch: a group's committed offsets (offset, leader epoch, metadata) for the
//! partitions asked for, or for every partition with one when the topic list is null (v2+).
//! A partition without a committed offset answers -1 with no error. v8+ batches groups, each
//! with its own error. `require_stable` (v7+) would wait out pending transactional commits;
//! this broker has none, so every offset is stable.

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::Ctx;
use crate::group::records::OffsetCommitValue;
use crate::group::{FetchedOffsets, GroupError};

/// One partition's answer: (offset, leader epoch, metadata, error code).
type Answer = (i64, i32, String, i16);

fn answer(v: Option<OffsetCommitValue>) -> Answer {
    match v {
        Some(v) => (v.offset, v.leader_epoch, v.metadata, 0),
        None => (-1, -1, String::new(), 0),
    }
}

pub fn handle(ctx: &Ctx<'_>, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let mut resp = OffsetFetchResponse::default();
    if ctx.version >= 8 {
        for g in &req.groups {
            let topics = g.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(|t| (t.name.to_string(), t.partition_indexes.clone()))
                    .collect()
            });
            let mut rg = OffsetFetchResponseGroup::default();
            rg.group_id = g.group_id.clone();
            match ctx.broker.groups.fetch_offsets(g.group_id.as_str(), topics) {
                Ok(found) => rg.topics = batched_topics(ctx, found),
                Err(e) => rg.error_code = e.code(),
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
    match ctx
        .broker
        .groups
        .fetch_offsets(req.group_id.as_str(), topics.clone())
    {
        Ok(found) => resp.topics = single_topics(ctx, found, None),
        // v1 has no top-level error: every partition asked for carries it.
        Err(e) if ctx.version < 2 => {
            let asked: FetchedOffsets = topics
                .unwrap_or_default()
                .into_iter()
                .map(|(t, ps)| (t, ps.into_iter().map(|p| (p, None)).collect()))
                .collect();
            resp.topics = single_topics(ctx, asked, Some(e));
        }
        Err(e) => resp.error_code = e.code(),
    }
    resp
}

fn single_topics(
    ctx: &Ctx<'_>,
    found: FetchedOffsets,
    error: Option<GroupError>,
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
                    rp.error_code = error.map_or(code, |e| e.code());
                    rp
                })
                .collect();
            rt
        })
        .collect()
}

fn batched_topics(ctx: &Ctx<'_>, found: FetchedOffsets) -> Vec<OffsetFetchResponseTopics> {
    let _ = ctx;
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
