//! ShareGroupHeartbeat (KIP-932): a share group member joins (epoch 0, with the topics it
//! subscribes to), shows it is alive and learns its assignment, or leaves (epoch -1). Served by
//! the group's coordinator, the leader of its `__consumer_offsets` partition, as classic groups
//! are (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads). A group id in
//! use by a classic group is GROUP_ID_NOT_FOUND ("not a share group"), as Kafka answers.
//! ACLs: READ on the group, DESCRIBE on each subscribed topic.

use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::share::group::{Heartbeat, ShareGroupError};
use crate::share::ShareCoordinator;

fn error(e: ResponseError, message: Option<&str>) -> ShareGroupHeartbeatResponse {
    let mut resp = ShareGroupHeartbeatResponse::default();
    resp.error_code = e.code();
    resp.error_message = message.map(|m| StrBytes::from_string(m.to_string()));
    resp
}

pub async fn handle(ctx: &Ctx<'_>, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse {
    let broker = ctx.broker;
    let group_id = req.group_id.as_str();
    if !crate::share::enabled(&broker.dynamic_configs.effective()) {
        return error(
            ResponseError::UnsupportedVersion,
            Some("share groups are off: group.coordinator.rebalance.protocols does not list share"),
        );
    }
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
    if let Err(e) = broker.groups.check_member_group(group_id) {
        return error(e.response_error(), None);
    }
    if broker.groups.exists(group_id) {
        return error(
            ResponseError::GroupIdNotFound,
            Some(&format!("Group {group_id} is not a share group.")),
        );
    }
    let settings = broker.shares.settings(broker, group_id);
    let member_id = req.member_id.to_string();
    let hb = Heartbeat {
        member_id: member_id.clone(),
        member_epoch: req.member_epoch,
        rack_id: req.rack_id.as_ref().map(|r| r.to_string()),
        topics: req
            .subscribed_topic_names
            .as_ref()
            .map(|t| t.iter().map(|n| n.to_string()).collect()),
        client_id: ctx
            .header
            .client_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        client_host: format!("/{}", ctx.conn.peer.ip()),
    };
    let topic = |name: &str| ShareCoordinator::topic_meta(broker, name);
    let created = req.member_epoch == 0 && !broker.shares.has_group(group_id);
    // Only a join creates the group; a leave of an unknown group is UNKNOWN_MEMBER_ID.
    let result = broker
        .shares
        .with_group(group_id, req.member_epoch == 0, |g| {
            g.heartbeat(
                hb,
                &topic,
                settings.session_ms,
                settings.max_size,
                crate::util::now_ms(),
            )
        })
        .unwrap_or(Err(ShareGroupError::UnknownMemberId));
    let reply = match result {
        Ok(r) => r,
        Err(e) => {
            let (code, message) = match e {
                ShareGroupError::InvalidRequest(m) => (ResponseError::InvalidRequest, Some(m)),
                ShareGroupError::UnknownMemberId => (ResponseError::UnknownMemberId, None),
                ShareGroupError::FencedMemberEpoch => (ResponseError::FencedMemberEpoch, None),
                ShareGroupError::GroupMaxSizeReached => (
                    ResponseError::GroupMaxSizeReached,
                    Some("the share group has group.share.max.size members"),
                ),
            };
            return error(code, message);
        }
    };
    if created {
        // The id is a share group's from now on, whichever broker coordinates it later.
        if let Err(e) = broker
            .groups
            .write_share_group(broker, group_id, Some(reply.member_epoch))
            .await
        {
            broker.shares.unload_groups(|g| g == group_id);
            return error(e.response_error(), None);
        }
    }
    if req.member_epoch == -1 {
        broker
            .shares
            .member_left(broker, group_id, &member_id)
            .await;
    } else if req.member_epoch == 0 {
        tracing::info!(group = group_id, member = %member_id, epoch = reply.member_epoch, "share group member joined");
    }
    let mut resp = ShareGroupHeartbeatResponse::default();
    resp.member_id = Some(req.member_id.clone());
    resp.member_epoch = reply.member_epoch;
    resp.heartbeat_interval_ms = settings.heartbeat_ms;
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
