//! SyncGroup: after JoinGroup, every member asks for its assignment; the leader's request
//! carries everyone's. The group stores the assignment in `__consumer_offsets` and only then
//! answers each parked SyncGroup (so an acknowledged generation survives a crash). v5+ checks
//! the protocol type and name against the group's (INCONSISTENT_GROUP_PROTOCOL). ACLs: READ
//! on the group, else GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::SyncRequest;

pub async fn handle(ctx: &Ctx<'_>, req: SyncGroupRequest) -> SyncGroupResponse {
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        let mut resp = SyncGroupResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let sync = SyncRequest {
        member_id: req.member_id.to_string(),
        group_instance_id: if ctx.version >= 3 {
            req.group_instance_id.as_ref().map(|s| s.to_string())
        } else {
            None
        },
        generation_id: req.generation_id,
        protocol_type: if ctx.version >= 5 {
            req.protocol_type.as_ref().map(|s| s.to_string())
        } else {
            None
        },
        protocol_name: if ctx.version >= 5 {
            req.protocol_name.as_ref().map(|s| s.to_string())
        } else {
            None
        },
        assignments: req
            .assignments
            .iter()
            .map(|a| (a.member_id.to_string(), a.assignment.clone()))
            .collect(),
    };
    let reply = ctx
        .groups()
        .sync(ctx.node(), req.group_id.as_str(), sync)
        .await;
    let mut resp = SyncGroupResponse::default();
    resp.error_code = reply.error.map_or(0, |e| e.code());
    resp.assignment = reply.assignment;
    if ctx.version >= 5 {
        resp.protocol_type = reply.protocol_type.map(StrBytes::from_string);
        resp.protocol_name = reply.protocol_name.map(StrBytes::from_string);
    }
    resp
}
