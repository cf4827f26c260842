//! ConsumerGroupHeartbeat (KIP-848): a consumer joins (epoch 0, with its subscription), shows
//! it is alive, reports the partitions it owns and learns its assignment, or leaves (epoch -1,
//! or -2 for a static member that will come back). Served by the group's coordinator, the leader
//! of its `__consumer_offsets` partition (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS
//! while it loads), when `group.version` is 1 or above and
//! `group.coordinator.rebalance.protocols` lists `consumer` (else UNSUPPORTED_VERSION, as
//! Kafka answers). The request is checked as Kafka's `GroupCoordinatorService` checks it
//! (INVALID_REQUEST with Kafka's messages); the group itself is [`crate::group::consumer::group`].
//! ACLs: READ on the group, DESCRIBE on each subscribed topic (TOPIC_AUTHORIZATION_FAILED).

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::consumer::group::{Heartbeat, HeartbeatError, LEAVE_STATIC_EPOCH};
use crate::group::consumer::reconcile::Partitions;
use crate::group::modern::HeartbeatFailure;

fn error(e: ResponseError, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    let mut resp = ConsumerGroupHeartbeatResponse::default();
    resp.error_code = e.code();
    resp.error_message = message.map(StrBytes::from_string);
    resp
}

/// Kafka's checks of a heartbeat before it reaches the group
/// (`throwIfConsumerGroupHeartbeatRequestIsInvalid`), with its messages.
fn invalid(req: &ConsumerGroupHeartbeatRequest, version: i16) -> Option<&'static str> {
    if (version >= 1 || req.member_epoch > 0 || req.member_epoch == -1) && req.member_id.is_empty()
    {
        return Some("MemberId can't be empty.");
    }
    if req.group_id.is_empty() {
        return Some("GroupId can't be empty.");
    }
    if req.instance_id.as_ref().is_some_and(|i| i.is_empty()) {
        return Some("InstanceId can't be empty.");
    }
    if req.rack_id.as_ref().is_some_and(|r| r.is_empty()) {
        return Some("RackId can't be empty.");
    }
    if req.member_epoch == 0 {
        if req.rebalance_timeout_ms == -1 {
            return Some("RebalanceTimeoutMs must be provided in first request.");
        }
        if req.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
            return Some("TopicPartitions must be empty when (re-)joining.");
        }
        if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
            return Some(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if req.member_epoch == LEAVE_STATIC_EPOCH {
        if req.instance_id.is_none() {
            return Some("InstanceId can't be null.");
        }
    } else if req.member_epoch < LEAVE_STATIC_EPOCH {
        return Some("MemberEpoch is invalid.");
    }
    None
}

pub async fn handle(
    ctx: &Ctx<'_>,
    req: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let node = ctx.node();
    if !crate::group::modern::consumer_protocol_enabled(node) {
        return error(ResponseError::UnsupportedVersion, None);
    }
    let group_id = req.group_id.as_str();
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, group_id) {
        return error(ResponseError::GroupAuthorizationFailed, None);
    }
    if let Some(topics) = &req.subscribed_topic_names {
        if topics
            .iter()
            .any(|t| !ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.as_str()))
        {
            return error(ResponseError::TopicAuthorizationFailed, None);
        }
    }
    if let Some(m) = invalid(&req, ctx.version) {
        return error(ResponseError::InvalidRequest, Some(m.to_string()));
    }
    // Version 0 lets the coordinator name a new member.
    let member_id = if req.member_id.is_empty() {
        crate::meta::new_cluster_id()
    } else {
        req.member_id.to_string()
    };
    let owned: Option<Partitions> = req.topic_partitions.as_ref().map(|tps| {
        let mut p = Partitions::new();
        for tp in tps {
            p.entry(tp.topic_id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
        p
    });
    let hb = Heartbeat {
        member_id,
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_names: req
            .subscribed_topic_names
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.to_string()).collect()),
        subscribed_regex: req.subscribed_topic_regex.as_ref().map(|s| s.to_string()),
        server_assignor: req.server_assignor.as_ref().map(|s| s.to_string()),
        owned,
        client_id: ctx
            .header
            .client_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        client_host: format!("/{}", ctx.conn.peer.ip()),
    };
    let joining = req.member_epoch == 0;
    let reply = match ctx.groups().consumer_heartbeat(node, group_id, hb).await {
        Ok(r) => r,
        Err(HeartbeatFailure::Coordinator(e)) => return error(e.response_error(), None),
        Err(HeartbeatFailure::GroupIdNotFound(m)) => {
            return error(ResponseError::GroupIdNotFound, Some(m))
        }
        Err(HeartbeatFailure::Group(e)) => {
            let code = match &e {
                HeartbeatError::UnknownMemberId(_) => ResponseError::UnknownMemberId,
                HeartbeatError::FencedMemberEpoch(_) => ResponseError::FencedMemberEpoch,
                HeartbeatError::UnreleasedInstanceId(_) => ResponseError::UnreleasedInstanceId,
                HeartbeatError::FencedInstanceId(_) => ResponseError::FencedInstanceId,
                HeartbeatError::GroupMaxSizeReached(_) => ResponseError::GroupMaxSizeReached,
                HeartbeatError::InvalidRegularExpression(_) => {
                    ResponseError::InvalidRegularExpression
                }
                HeartbeatError::UnsupportedAssignor(_) => ResponseError::UnsupportedAssignor,
            };
            return error(code, Some(e.to_string()));
        }
    };
    if joining {
        tracing::debug!(group = group_id, member = %reply.member_id, epoch = reply.member_epoch, "consumer group member joined");
    }
    let mut resp = ConsumerGroupHeartbeatResponse::default();
    resp.member_id = Some(StrBytes::from_string(reply.member_id));
    resp.member_epoch = reply.member_epoch;
    resp.heartbeat_interval_ms = reply.heartbeat_interval_ms;
    resp.assignment = reply.assignment.map(|a| {
        let mut assignment = Assignment::default();
        assignment.topic_partitions = a
            .into_iter()
            .map(|(id, partitions)| {
                let mut tp = TopicPartitions::default();
                tp.topic_id = id;
                tp.partitions = partitions.into_iter().collect();
                tp
            })
            .collect();
        assignment
    });
    resp
}
