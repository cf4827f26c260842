//! ShareGroupHeartbeat (KIP-932): a share group member joins (epoch 0, with the topics it
//! subscribes to), shows it is alive and learns its assignment, or leaves (epoch -1). Served by
//! the group's coordinator, the leader of its `__consumer_offsets` partition, as classic groups
//! are (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads). A group id in
//! use by a classic group is GROUP_ID_NOT_FOUND ("not a share group"), as Kafka answers, and so
//! is a heartbeat other than a join to a group that does not exist. Before it assigns a
//! share-partition the coordinator has its state initialized by the share coordinator (see
//! [`crate::share::group`]). ACLs: READ on the group, DESCRIBE on each subscribed topic.

use std::sync::Arc;

use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::share::group::{Heartbeat, HeartbeatReply, ShareGroupError};
use crate::share::{ShareCoordinator, ShareKey};

fn error(e: ResponseError, message: Option<&str>) -> ShareGroupHeartbeatResponse {
    let mut resp = ShareGroupHeartbeatResponse::default();
    resp.error_code = e.code();
    resp.error_message = message.map(|m| StrBytes::from_string(m.to_string()));
    resp
}

/// Kafka's checks of a heartbeat before it reaches the group (`GroupCoordinatorService`).
fn invalid(req: &ShareGroupHeartbeatRequest) -> Option<&'static str> {
    if req.group_id.is_empty() {
        return Some("GroupId can't be empty.");
    }
    if req.rack_id.as_ref().is_some_and(|r| r.is_empty()) {
        return Some("RackId can't be empty.");
    }
    match req.member_epoch {
        0 if req
            .subscribed_topic_names
            .as_ref()
            .is_none_or(|t| t.is_empty()) =>
        {
            Some("SubscribedTopicNames must be set in first request.")
        }
        e if e < -1 => Some("MemberEpoch is invalid."),
        _ => None,
    }
}

/// Rounds of share-partition initialization one heartbeat runs at most (a topic that grows
/// while it runs asks for another).
const INITIALIZE_ROUNDS: usize = 3;
/// How long a heartbeat waits for share-partitions another heartbeat is initializing.
const INITIALIZE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub async fn handle(ctx: &Ctx<'_>, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse {
    let node = ctx.node();
    let group_id = req.group_id.as_str();
    if !crate::share::enabled(&node.controller.image()) {
        return error(ResponseError::UnsupportedVersion, None);
    }
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, group_id) {
        return error(ResponseError::GroupAuthorizationFailed, None);
    }
    // Kafka's KafkaApis: a member id is 1 to 36 characters (no message).
    if req.member_id.is_empty() || req.member_id.chars().count() > 36 {
        return error(ResponseError::InvalidRequest, None);
    }
    if let Some(topics) = &req.subscribed_topic_names {
        if topics
            .iter()
            .any(|t| !ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.as_str()))
        {
            return error(ResponseError::TopicAuthorizationFailed, None);
        }
    }
    if let Some(m) = invalid(&req) {
        return error(ResponseError::InvalidRequest, Some(m));
    }
    if let Err(e) = ctx.groups().check_member_group(group_id) {
        return error(e.response_error(), None);
    }
    if ctx.groups().exists(group_id) {
        return error(
            ResponseError::GroupIdNotFound,
            Some(&format!("Group {group_id} is not a share group.")),
        );
    }
    let settings = ctx.shares().settings(node, group_id);
    let member_id = req.member_id.to_string();
    let client_id = ctx
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default();
    let client_host = format!("/{}", ctx.conn.peer.ip());
    let heartbeat = |member_epoch: i32, topics: Option<Vec<String>>| Heartbeat {
        member_id: member_id.clone(),
        member_epoch,
        rack_id: req.rack_id.as_ref().map(|r| r.to_string()),
        topics,
        client_id: client_id.clone(),
        client_host: client_host.clone(),
    };
    let topic = |name: &str| ShareCoordinator::topic_meta(node, name);
    let created = req.member_epoch == 0 && !ctx.shares().has_group(group_id);
    // Only a join creates the group.
    let result = ctx
        .shares()
        .with_group(group_id, req.member_epoch == 0, |g| {
            g.heartbeat(
                heartbeat(
                    req.member_epoch,
                    req.subscribed_topic_names
                        .as_ref()
                        .map(|t| t.iter().map(|n| n.to_string()).collect()),
                ),
                &topic,
                settings.session_ms,
                settings.max_size,
                crate::util::now_ms(),
            )
        });
    let Some(result) = result else {
        return error(
            ResponseError::GroupIdNotFound,
            Some(&format!("Share group {group_id} not found.")),
        );
    };
    let mut reply = match result {
        Ok(r) => r,
        Err(e) => {
            let (code, message) = match e {
                ShareGroupError::InvalidRequest(m) => (ResponseError::InvalidRequest, m.to_string()),
                ShareGroupError::UnknownMemberId(m) => (ResponseError::UnknownMemberId, m),
                ShareGroupError::FencedMemberEpoch(m) => (ResponseError::FencedMemberEpoch, m),
                ShareGroupError::GroupMaxSizeReached => (
                    ResponseError::GroupMaxSizeReached,
                    format!("The share group {group_id} has reached its maximum capacity of {} members.", settings.max_size),
                ),
            };
            return error(code, Some(&message));
        }
    };
    if created {
        // The id is a share group's from now on, whichever broker coordinates it later.
        if let Err(e) = ctx
            .groups()
            .write_share_group(node, group_id, Some(reply.member_epoch))
            .await
        {
            ctx.shares().unload_groups(|g| g == group_id);
            return error(e.response_error(), None);
        }
    }
    // Share-partitions are assigned once their state is initialized (Kafka 4.4): done here,
    // before the answer, so that the member gets them with this heartbeat (Kafka's member gets
    // them with a later one), at the epoch Kafka's group reaches.
    for round in 0..=INITIALIZE_ROUNDS {
        if reply.initialize.is_empty() {
            break;
        }
        let last = round == INITIALIZE_ROUNDS;
        let mut outcomes = Vec::new();
        for (topic_id, partitions) in std::mem::take(&mut reply.initialize) {
            let mut ok = Vec::new();
            let mut failed = Vec::new();
            for partition in partitions {
                let key = ShareKey {
                    group: Arc::from(group_id),
                    topic_id,
                    partition,
                };
                let done = !last
                    && match ctx
                        .shares()
                        .initialize_state(node, &key, reply.state_epoch)
                        .await
                    {
                        Ok(()) => true,
                        Err(e) => {
                            tracing::warn!(group = group_id, %topic_id, partition, "cannot initialize the share-partition's state: {e:?}");
                            false
                        }
                    };
                if done {
                    ok.push(partition)
                } else {
                    failed.push(partition)
                }
            }
            outcomes.push((topic_id, ok, failed));
        }
        let next = ctx.shares().with_group(group_id, false, |g| {
            for (topic_id, ok, failed) in &outcomes {
                g.initialized(*topic_id, ok, true);
                g.initialized(*topic_id, failed, false);
            }
            if last || outcomes.iter().all(|(_, ok, _)| ok.is_empty()) {
                return None;
            }
            g.heartbeat(
                heartbeat(reply.member_epoch, None),
                &topic,
                settings.session_ms,
                settings.max_size,
                crate::util::now_ms(),
            )
            .ok()
        });
        if let Some(Some(next)) = next {
            reply = HeartbeatReply {
                assignment: next.assignment.or(reply.assignment),
                ..next
            };
        }
    }
    // Share-partitions another member's heartbeat is initializing: waited for (briefly), so
    // that members joining together all get them now rather than a heartbeat interval later.
    if req.member_epoch != -1 {
        let deadline = tokio::time::Instant::now() + INITIALIZE_WAIT;
        let mut waited = false;
        while ctx
            .shares()
            .with_group(group_id, false, |g| {
                g.awaits_initialization(&member_id, &topic)
            })
            .unwrap_or(false)
            && tokio::time::Instant::now() < deadline
        {
            waited = true;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        if waited {
            let next = ctx.shares().with_group(group_id, false, |g| {
                g.heartbeat(
                    heartbeat(reply.member_epoch, None),
                    &topic,
                    settings.session_ms,
                    settings.max_size,
                    crate::util::now_ms(),
                )
                .ok()
            });
            if let Some(Some(next)) = next {
                // What this heartbeat would now ask to initialize is left to the next one.
                ctx.shares().with_group(group_id, false, |g| {
                    for (topic_id, parts) in &next.initialize {
                        g.initialized(*topic_id, parts, false);
                    }
                });
                reply = HeartbeatReply {
                    assignment: next.assignment.or(reply.assignment),
                    ..next
                };
            }
        }
    }
    if req.member_epoch == -1 {
        ctx.shares().member_left(node, group_id, &member_id).await;
    } else if req.member_epoch == 0 {
        tracing::info!(group = group_id, member = %member_id, epoch = reply.member_epoch, "share group member joined");
    }
    let mut resp = ShareGroupHeartbeatResponse::default();
    resp.member_id = Some(req.member_id.clone());
    resp.member_epoch = reply.member_epoch;
    // A member that left is told no interval (Kafka's answer to a leave).
    resp.heartbeat_interval_ms = if req.member_epoch == -1 {
        0
    } else {
        settings.heartbeat_ms
    };
    resp.assignment = reply.assignment.map(|a| {
        let mut assignment = Assignment::default();
        assignment.topic_partitions = a
            .into_iter()
            .map(|(id, partitions)| {
                let mut tp = TopicPartitions::default();
                tp.topic_id = id;
                tp.partitions = partitions;
                tp
            })
            .collect();
        assignment
    });
    resp
}
