//! ListOffsets: the offset for a timestamp per partition. Special timestamps, as Kafka:
//! -2 earliest (log start), -1 latest (high watermark, or the last stable offset under
//! read_committed), -3 the record with the largest timestamp (v7+), -4 earliest local (the log
//! start: nothing is tiered), -5 latest tiered and -6 earliest pending upload (v11, KIP-1023;
//! without tiered storage none: -1, as Kafka's `UnifiedLog`). Other negative timestamps are
//! UNSUPPORTED_VERSION, as Kafka answers. A real timestamp finds the
//! first record at or after it through the time index; none found is offset -1. Only the
//! leader answers, consumers that fetch from a follower too (KIP-392); the client's current
//! leader epoch is checked first, as Kafka's `Partition.getLocalLog` does (a follower answers
//! a stale epoch FENCED_LEADER_EPOCH). ACLs: DESCRIBE on the topic, else
//! TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use super::produce::log_error_code;
use crate::acl::{AclOperation, ResourceType};
use crate::topics::replica_partition;

pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL: i64 = -4;
pub const LATEST_TIERED: i64 = -5;
pub const EARLIEST_PENDING_UPLOAD: i64 = -6;

pub fn handle(ctx: &Ctx<'_>, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let mut resp = ListOffsetsResponse::default();
    // isolation_level exists from v2; 1 is read_committed.
    let read_committed = ctx.version >= 2 && req.isolation_level == 1;
    // A partition named twice is answered once, INVALID_REQUEST, as Kafka does.
    let mut named = std::collections::HashMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            *named
                .entry((t.name.clone(), p.partition_index))
                .or_insert(0u32) += 1;
        }
    }
    for t in req.topics {
        let authorized = ctx.authorize(AclOperation::Describe, ResourceType::Topic, &t.name);
        let topic = ctx.topics().get(t.name.as_str());
        let mut tr = ListOffsetsTopicResponse::default();
        tr.name = t.name.clone();
        for p in t.partitions {
            let mut pr = ListOffsetsPartitionResponse::default();
            pr.partition_index = p.partition_index;
            pr.timestamp = -1;
            pr.offset = -1;
            pr.leader_epoch = -1;
            let times = named
                .get_mut(&(t.name.clone(), p.partition_index))
                .expect("counted above");
            if *times == 0 {
                continue;
            }
            let duplicate = *times > 1;
            *times = 0;
            match replica_partition(topic.as_ref(), p.partition_index) {
                _ if duplicate => pr.error_code = ResponseError::InvalidRequest.code(),
                _ if !authorized => pr.error_code = ResponseError::TopicAuthorizationFailed.code(),
                Err(e) => pr.error_code = e.code(),
                Ok(part)
                    // Only -1 means "no epoch": any other value is compared, as Kafka does.
                    if p.current_leader_epoch != -1
                        && p.current_leader_epoch != part.leader_epoch() =>
                {
                    pr.error_code = if p.current_leader_epoch > part.leader_epoch() {
                        ResponseError::UnknownLeaderEpoch.code()
                    } else {
                        ResponseError::FencedLeaderEpoch.code()
                    };
                }
                Ok(part) if !part.is_leader() => {
                    pr.error_code = ResponseError::NotLeaderOrFollower.code();
                }
                Ok(part) => {
                    // leader_epoch exists from v4; older versions must leave it at its default.
                    let epoch = if ctx.version >= 4 {
                        part.leader_epoch()
                    } else {
                        -1
                    };
                    // Kafka's `lastFetchableOffset`: what this isolation level may read.
                    let fetchable = if read_committed {
                        part.last_stable_offset()
                    } else {
                        part.high_watermark()
                    };
                    match p.timestamp {
                        LATEST => {
                            pr.offset = fetchable;
                            pr.leader_epoch = epoch;
                        }
                        // The latest tiered offset (KIP-1005): nothing is tiered here, so
                        // there is none, which Kafka answers with -1 and no epoch.
                        LATEST_TIERED | EARLIEST_PENDING_UPLOAD => {}
                        EARLIEST | EARLIEST_LOCAL => {
                            pr.offset = part.log_start_offset();
                            pr.leader_epoch = epoch;
                        }
                        MAX_TIMESTAMP => {
                            match part.with_log(|log| log.offset_for_timestamp(MAX_TIMESTAMP)) {
                                Ok(Some((offset, ts))) => {
                                    pr.offset = offset;
                                    pr.timestamp = ts;
                                    pr.leader_epoch = epoch;
                                }
                                Ok(None) => {}
                                Err(e) => pr.error_code = log_error_code(&e).code(),
                            }
                        }
                        ts if ts >= 0 => match part.with_log(|log| log.offset_for_timestamp(ts)) {
                            Ok(Some((offset, found_ts))) if offset < fetchable => {
                                pr.offset = offset;
                                pr.timestamp = found_ts;
                                pr.leader_epoch = epoch;
                            }
                            Ok(_) => {}
                            Err(e) => pr.error_code = log_error_code(&e).code(),
                        },
                        // A special timestamp this broker does not know: Kafka's answer.
                        _ => pr.error_code = ResponseError::UnsupportedVersion.code(),
                    }
                }
            }
            tr.partitions.push(pr);
        }
        resp.topics.push(tr);
    }
    resp
}
