//! DeleteGroups: removes empty groups with their committed offsets (tombstones in
//! `__consumer_offsets`, so compaction drops them), and empty share groups with the state of
//! their share-partitions (tombstones in `__share_group_state`). A group with members gets
//! NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND. ACLs: DELETE on the group, else
//! GROUP_AUTHORIZATION_FAILED.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use kafka_protocol::ResponseError;

pub async fn handle(ctx: &Ctx<'_>, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut resp = DeleteGroupsResponse::default();
    for group_id in &req.groups_names {
        let mut r = DeletableGroupResult::default();
        r.group_id = group_id.clone();
        if !ctx.authorize(AclOperation::Delete, ResourceType::Group, group_id) {
            r.error_code = ResponseError::GroupAuthorizationFailed.code();
            resp.results.push(r);
            continue;
        }
        if ctx.shares().has_group(group_id) && !ctx.groups().exists(group_id) {
            r.error_code = match ctx.groups().check_loaded(group_id) {
                Err(e) => e.code(),
                Ok(()) => match delete_share_group(ctx, group_id).await {
                    Ok(()) => 0,
                    Err(e) => e.code(),
                },
            };
            resp.results.push(r);
            continue;
        }
        r.error_code = match ctx
            .groups()
            .delete_group(ctx.node(), group_id.as_str())
            .await
        {
            Ok(()) => 0,
            Err(e) => e.code(),
        };
        resp.results.push(r);
    }
    resp
}

/// Deletes a share group: its share-partitions' state, its tombstone in `__consumer_offsets`,
/// then the share coordinator's record of it.
async fn delete_share_group(ctx: &Ctx<'_>, group: &str) -> Result<(), ResponseError> {
    ctx.shares().delete_state(ctx.node(), group).await?;
    ctx.groups()
        .write_share_group(ctx.node(), group, None)
        .await
        .map_err(|e| e.response_error())?;
    ctx.shares().forget_group(group);
    Ok(())
}
