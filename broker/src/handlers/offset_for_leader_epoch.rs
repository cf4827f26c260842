//! OffsetForLeaderEpoch: the end offset of a leader epoch, from the log's leader-epoch cache.
//! Clients use it to detect log truncation after a leader change (KIP-320); followers use it
//! to find where to truncate (KIP-101). Only the leader answers, consumers too (Kafka's
//! `fetchOnlyFromLeader`, whatever replica they fetch from, KIP-392); the client's current
//! leader epoch is checked first, as Kafka's `Partition.getLocalLog` does, so a follower tells
//! a client with another epoch FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH, and one with its
//! own NOT_LEADER_OR_FOLLOWER. ACLs: DESCRIBE on the topic, else TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::topics::replica_partition;

pub fn handle(ctx: &Ctx<'_>, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let mut resp = OffsetForLeaderEpochResponse::default();
    for t in req.topics {
        let authorized = ctx.authorize(AclOperation::Describe, ResourceType::Topic, &t.topic);
        let topic = ctx.topics().get(t.topic.as_str());
        let mut tr = OffsetForLeaderTopicResult::default();
        tr.topic = t.topic.clone();
        for p in t.partitions {
            let mut e = EpochEndOffset::default();
            e.partition = p.partition;
            e.leader_epoch = -1;
            e.end_offset = -1;
            match replica_partition(topic.as_ref(), p.partition) {
                _ if !authorized => e.error_code = ResponseError::TopicAuthorizationFailed.code(),
                Err(err) => e.error_code = err.code(),
                // Only -1 means "no epoch": any other value is compared, as Kafka does.
                Ok(part)
                    if p.current_leader_epoch != -1
                        && p.current_leader_epoch < part.leader_epoch() =>
                {
                    e.error_code = ResponseError::FencedLeaderEpoch.code();
                }
                Ok(part) if p.current_leader_epoch > part.leader_epoch() => {
                    e.error_code = ResponseError::UnknownLeaderEpoch.code();
                }
                Ok(part) if !part.is_leader() => {
                    e.error_code = ResponseError::NotLeaderOrFollower.code();
                }
                Ok(part) => match part.with_log(|log| log.end_offset_for_epoch(p.leader_epoch)) {
                    Some((epoch, end)) => {
                        e.leader_epoch = epoch;
                        e.end_offset = end;
                    }
                    None => {
                        // No epoch at or below the one asked for: Kafka answers undefined.
                    }
                },
            }
            tr.partitions.push(e);
        }
        resp.topics.push(tr);
    }
    resp
}
