//! ShareAcknowledge (KIP-932): a share group member acknowledges records it acquired (ACCEPT,
//! RELEASE, REJECT, or GAP for offsets without a record) without fetching more, within its
//! share session: a positive epoch continues the session (SHARE_SESSION_NOT_FOUND without one,
//! INVALID_SHARE_SESSION_EPOCH for another epoch), -1 closes it after the acknowledgements,
//! releasing what the member still holds; 0 is INVALID_SHARE_SESSION_EPOCH (a session is opened
//! by ShareFetch). Each partition answers its own error: INVALID_RECORD_STATE for an offset the
//! member does not hold. ACLs: READ on the group and on each topic.
//!
//! Version 2 (translated, `samsa_protocol::newer`) adds IsRenewAck to the request (KIP-1222:
//! RENEW acknowledgements only in a request that says so, INVALID_REQUEST for the partition
//! otherwise and for RENEW in v1) and AcquisitionLockTimeoutMs to the response: the group's
//! `share.record.lock.duration.ms`, which a renewed record's lock lasts from now.

use std::sync::Arc;

use kafka_protocol::messages::share_acknowledge_response::{
    PartitionData, ShareAcknowledgeTopicResponse,
};
use kafka_protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_protocol::newer::{Record, Value};

use super::ctx::Ctx;
use super::share_fetch::{renew_ack, RENEW_VERSION};
use crate::acl::{AclOperation, ResourceType};
use crate::share::partition::acknowledgements_valid;
use crate::share::ShareKey;

fn top_error(e: ResponseError, message: &str) -> ShareAcknowledgeResponse {
    let mut resp = ShareAcknowledgeResponse::default();
    resp.error_code = e.code();
    // Kafka answers request-level errors without a message; the reason goes to the log.
    tracing::debug!(error = ?e, "{message}");
    resp
}

/// Answers a ShareAcknowledge, with the fields v2 adds to the response (None below v2).
pub async fn handle(
    ctx: &Ctx<'_>,
    req: ShareAcknowledgeRequest,
    added: &Record,
) -> (ShareAcknowledgeResponse, Option<Record>) {
    let group = req.group_id.as_ref().map(|g| g.to_string());
    let resp = answer(ctx, req, added).await;
    if ctx.version < RENEW_VERSION {
        return (resp, None);
    }
    // Kafka answers request-level errors with the field's default.
    let lock_ms = match group {
        Some(g) if resp.error_code == 0 => ctx.shares().settings(ctx.node(), &g).limits.lock_ms,
        _ => 0,
    };
    let lock_ms = lock_ms.min(i32::MAX as i64);
    let added = Record::new().with("AcquisitionLockTimeoutMs", Value::Int(lock_ms));
    (resp, Some(added))
}

async fn answer(
    ctx: &Ctx<'_>,
    req: ShareAcknowledgeRequest,
    added: &Record,
) -> ShareAcknowledgeResponse {
    let node = ctx.node();
    if !crate::share::enabled(&node.controller.image()) {
        return top_error(
            ResponseError::UnsupportedVersion,
            "share groups are off: share.version is below 1",
        );
    }
    let (Some(group_id), Some(member_id)) = (req.group_id.as_ref(), req.member_id.as_ref()) else {
        return top_error(
            ResponseError::InvalidRequest,
            "GroupId and MemberId are required",
        );
    };
    let group_id = group_id.to_string();
    let member = member_id.to_string();
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &group_id) {
        return top_error(
            ResponseError::GroupAuthorizationFailed,
            "not authorized to read the group",
        );
    }
    let epoch = req.share_session_epoch;
    let renew = renew_ack(added);
    {
        let mut sessions = ctx.shares().sessions();
        let key = (group_id.clone(), member.clone());
        match epoch {
            0 => {
                return top_error(
                    ResponseError::InvalidShareSessionEpoch,
                    "ShareAcknowledge cannot open a share session",
                )
            }
            -1 => {
                if sessions.remove(&key).is_none() {
                    return top_error(
                        ResponseError::ShareSessionNotFound,
                        "no share session to close",
                    );
                }
            }
            e => {
                if let Err((code, m)) = crate::share::continue_session(&mut sessions, &key, e) {
                    return top_error(code, &m);
                }
            }
        }
    }
    let mut resp = ShareAcknowledgeResponse::default();
    for t in &req.topics {
        let topic = node.topics.get_by_id(&t.topic_id);
        let mut out = ShareAcknowledgeTopicResponse::default();
        out.topic_id = t.topic_id;
        for p in &t.partitions {
            let mut pd = PartitionData::default();
            pd.partition_index = p.partition_index;
            let refused = match &topic {
                None => Some(ResponseError::UnknownTopicId),
                Some(t) if !ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.name) => {
                    Some(ResponseError::TopicAuthorizationFailed)
                }
                Some(t) => t.led_partition(p.partition_index).err(),
            };
            let leader_epoch = topic
                .as_ref()
                .and_then(|t| t.partition(p.partition_index))
                .map_or(-1, |p| p.leader_epoch());
            let batches: Vec<(i64, i64, &[i8])> = p
                .acknowledgement_batches
                .iter()
                .map(|b| {
                    (
                        b.first_offset,
                        b.last_offset,
                        b.acknowledge_types.as_slice(),
                    )
                })
                .collect();
            // Unknown topics first, then the batches' shape, then the rest, as Kafka checks.
            let refused = match refused {
                Some(ResponseError::UnknownTopicId) => refused,
                _ if !acknowledgements_valid(&batches, ctx.version >= RENEW_VERSION, renew) => {
                    Some(ResponseError::InvalidRequest)
                }
                _ => refused,
            };
            if let Some(e) = refused {
                pd.error_code = e.code();
                out.partitions.push(pd);
                continue;
            }
            let key = ShareKey {
                group: Arc::from(group_id.as_str()),
                topic_id: t.topic_id,
                partition: p.partition_index,
            };
            if let Err((e, m)) = ctx
                .shares()
                .acknowledge_durably(node, &key, leader_epoch, &member, &batches)
                .await
                .map_err(|(e, m)| (super::share_fetch::retriable(e), m))
            {
                pd.error_code = e.code();
                pd.error_message = (!m.is_empty()).then(|| StrBytes::from_string(m));
            }
            out.partitions.push(pd);
        }
        resp.responses.push(out);
    }
    if epoch == -1 {
        ctx.shares().release_member(node, &group_id, &member).await;
    }
    resp
}
