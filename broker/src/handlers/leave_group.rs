//! LeaveGroup: members leave at once instead of waiting for their session to expire, which
//! starts the rebalance that hands their partitions to the others. v3+ takes a batch, and a
//! member named only by its `group.instance.id` is removed administratively (KIP-345).
//! Before v3 there is one member and one error code. ACLs: READ on the group, else
//! GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use kafka_protocol::ResponseError;

pub async fn handle(ctx: &Ctx<'_>, req: LeaveGroupRequest) -> LeaveGroupResponse {
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        let mut resp = LeaveGroupResponse::default();
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let members: Vec<(String, Option<String>)> = if ctx.version >= 3 {
        req.members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|s| s.to_string()),
                )
            })
            .collect()
    } else {
        vec![(req.member_id.to_string(), None)]
    };
    // Members of a consumer group that use the classic protocol (online migration).
    let consumer = match ctx.groups().check_member_group(req.group_id.as_str()) {
        Ok(()) => {
            ctx.groups()
                .classic_leave_consumer(ctx.node(), req.group_id.as_str(), &members)
                .await
        }
        Err(_) => None,
    };
    let result = match consumer {
        Some(r) => r,
        None => ctx
            .groups()
            .leave(ctx.node(), req.group_id.as_str(), &members),
    };
    let mut resp = LeaveGroupResponse::default();
    match result {
        Err(e) => resp.error_code = e.code(),
        Ok(results) if ctx.version < 3 => {
            resp.error_code = results.iter().find_map(|r| r.err()).map_or(0, |e| e.code());
        }
        Ok(results) => {
            resp.members = members
                .into_iter()
                .zip(results)
                .map(|((member_id, instance), r)| {
                    let mut m = MemberResponse::default();
                    m.member_id = StrBytes::from_string(member_id);
                    m.group_instance_id = instance.map(StrBytes::from_string);
                    m.error_code = r.err().map_or(0, |e| e.code());
                    m
                })
                .collect();
        }
    }
    resp
}
