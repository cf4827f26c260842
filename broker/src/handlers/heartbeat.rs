//! Heartbeat: a member shows it is alive (its session timeout starts again) and learns
//! whether a rebalance started (REBALANCE_IN_PROGRESS: rejoin). Members that stop
//! heartbeating are removed when their session expires, which triggers a rebalance. ACLs: READ
//! on the group, else GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use kafka_protocol::ResponseError;

pub fn handle(ctx: &Ctx<'_>, req: HeartbeatRequest) -> HeartbeatResponse {
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        let mut resp = HeartbeatResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let instance = if ctx.version >= 3 {
        req.group_instance_id.as_deref()
    } else {
        None
    };
    let result = ctx.groups().heartbeat(
        req.group_id.as_str(),
        req.member_id.as_str(),
        instance,
        req.generation_id,
    );
    let mut resp = HeartbeatResponse::default();
    resp.error_code = result.err().map_or(0, |e| e.code());
    resp
}
