//! JoinGroup: a member enters the group or re-enters it for a rebalance. The response is
//! parked until the join phase completes (every member rejoined, or the rebalance timeout
//! passed); the leader's response lists every member's metadata so that it can compute the
//! assignment. A new dynamic member first gets MEMBER_ID_REQUIRED with its id (v4+,
//! KIP-394); a static member (`group.instance.id`, v5+, KIP-345) takes its place back without
//! a rebalance. See `crate::group::state` for every rule and error code. ACLs: READ on the
//! group, else GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::{JoinRequest, Protocol};

pub async fn handle(ctx: &Ctx<'_>, req: JoinGroupRequest) -> JoinGroupResponse {
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        // Kafka's error response: no generation, member or leader.
        let mut resp = JoinGroupResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        resp.generation_id = -1;
        resp.protocol_name = (ctx.version < 7).then(StrBytes::default);
        return resp;
    }
    if ctx.shares().has_group(&req.group_id) && !ctx.groups().exists(&req.group_id) {
        // A share group has this id: a group id cannot be both (Kafka's answer).
        let mut resp = JoinGroupResponse::default();
        resp.error_code = ResponseError::InconsistentGroupProtocol.code();
        resp.generation_id = -1;
        resp.protocol_name = (ctx.version < 7).then(StrBytes::default);
        return resp;
    }
    let client_id = ctx.header.client_id.as_deref().unwrap_or("").to_string();
    let group_instance_id = if ctx.version >= 5 {
        req.group_instance_id.as_ref().map(|s| s.to_string())
    } else {
        None
    };
    // Kafka's member ids: "<group.instance.id or client.id>-<uuid>".
    let new_member_id = format!(
        "{}-{}",
        group_instance_id.as_deref().unwrap_or(&client_id),
        uuid::Uuid::new_v4()
    );
    let join = JoinRequest {
        member_id: req.member_id.to_string(),
        group_instance_id,
        client_id,
        client_host: format!("/{}", ctx.conn.peer.ip()),
        session_timeout_ms: req.session_timeout_ms,
        // v0 has no rebalance timeout: the session timeout serves as both.
        rebalance_timeout_ms: if ctx.version >= 1 {
            req.rebalance_timeout_ms
        } else {
            req.session_timeout_ms
        },
        protocol_type: req.protocol_type.to_string(),
        protocols: req
            .protocols
            .iter()
            .map(|p| Protocol {
                name: p.name.to_string(),
                metadata: p.metadata.clone(),
            })
            .collect(),
        require_known_member_id: ctx.version >= 4,
        supports_skip_assignment: ctx.version >= 9,
        new_member_id,
    };
    let reply = ctx
        .groups()
        .join(ctx.node(), req.group_id.as_str(), join)
        .await;

    let mut resp = JoinGroupResponse::default();
    resp.error_code = reply.error.map_or(0, |e| e.code());
    resp.generation_id = reply.generation_id;
    resp.member_id = StrBytes::from_string(reply.member_id);
    resp.leader = StrBytes::from_string(reply.leader);
    // Before v7 the protocol name is not nullable: Kafka sends "" for none.
    resp.protocol_name = if ctx.version >= 7 {
        reply.protocol_name.map(StrBytes::from_string)
    } else {
        Some(StrBytes::from_string(
            reply.protocol_name.unwrap_or_default(),
        ))
    };
    if ctx.version >= 7 {
        resp.protocol_type = reply.protocol_type.map(StrBytes::from_string);
    }
    if ctx.version >= 9 {
        resp.skip_assignment = reply.skip_assignment;
    }
    resp.members = reply
        .members
        .into_iter()
        .map(|m| {
            let mut rm = JoinGroupResponseMember::default();
            rm.member_id = StrBytes::from_string(m.member_id);
            if ctx.version >= 5 {
                rm.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
            }
            rm.metadata = m.metadata;
            rm
        })
        .collect();
    resp
}
