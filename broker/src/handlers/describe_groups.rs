//! DescribeGroups: state, protocol and members of each group. Member metadata and
//! assignments, and the protocol name, are shown only for a Stable group (as Kafka does:
//! otherwise they are in flux). A group that does not exist is reported as "Dead" with no
//! error, or GROUP_ID_NOT_FOUND from v6 (KIP-1043). ACLs: DESCRIBE on the group, else
//! GROUP_AUTHORIZATION_FAILED; `authorized_operations` (v3+) comes from the authorizer.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::{GroupError, GroupState};

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_OMITTED: i32 = i32::MIN;

pub fn handle(ctx: &Ctx<'_>, req: DescribeGroupsRequest) -> DescribeGroupsResponse {
    let mut resp = DescribeGroupsResponse::default();
    for group_id in &req.groups {
        let mut g = DescribedGroup::default();
        g.group_id = group_id.clone();
        g.authorized_operations = OPERATIONS_OMITTED;
        if !ctx.authorize(AclOperation::Describe, ResourceType::Group, group_id) {
            g.error_code = ResponseError::GroupAuthorizationFailed.code();
            if ctx.version >= 6 {
                g.error_message = Some(StrBytes::from_string(ctx.denied(
                    AclOperation::Describe,
                    ResourceType::Group,
                    group_id,
                )));
            }
            resp.groups.push(g);
            continue;
        }
        if ctx.version >= 3 && req.include_authorized_operations {
            g.authorized_operations = ctx.authorized_operations(ResourceType::Group, group_id);
        }
        if (ctx.shares().has_group(group_id) && !ctx.groups().exists(group_id))
            || ctx.groups().is_consumer_group(group_id)
            || ctx.groups().is_streams_group(group_id)
        {
            // Kafka answers so for a group of another type (share groups: ShareGroupDescribe,
            // consumer groups: ConsumerGroupDescribe, streams groups: StreamsGroupDescribe):
            // Dead, and GROUP_ID_NOT_FOUND from v6.
            g.group_state = StrBytes::from_static_str(GroupState::Dead.as_str());
            if ctx.version >= 6 {
                g.error_code = ResponseError::GroupIdNotFound.code();
                g.error_message = Some(StrBytes::from_string(format!(
                    "Group {} is not a classic group.",
                    group_id.as_str()
                )));
            }
            resp.groups.push(g);
            continue;
        }
        match ctx.groups().describe(group_id.as_str()) {
            Ok(d) => {
                g.group_state = StrBytes::from_static_str(d.state.as_str());
                g.protocol_type = StrBytes::from_string(d.protocol_type);
                g.protocol_data = StrBytes::from_string(d.protocol_data);
                g.members = d
                    .members
                    .into_iter()
                    .map(|m| {
                        let mut dm = DescribedGroupMember::default();
                        dm.member_id = StrBytes::from_string(m.member_id);
                        if ctx.version >= 4 {
                            dm.group_instance_id = m.group_instance_id.map(StrBytes::from_string);
                        }
                        dm.client_id = StrBytes::from_string(m.client_id);
                        dm.client_host = StrBytes::from_string(m.client_host);
                        dm.member_metadata = m.metadata;
                        dm.member_assignment = m.assignment;
                        dm
                    })
                    .collect();
            }
            // An empty id is described like any unknown group (Kafka keeps this for old
            // clients).
            Err(GroupError::GroupIdNotFound | GroupError::InvalidGroupId) => {
                g.group_state = StrBytes::from_static_str(GroupState::Dead.as_str());
                if ctx.version >= 6 {
                    g.error_code = GroupError::GroupIdNotFound.code();
                    g.error_message = Some(StrBytes::from_string(format!(
                        "Group {} not found.",
                        group_id.as_str()
                    )));
                }
            }
            Err(e) => {
                g.error_code = e.code();
                if ctx.version >= 6 {
                    g.error_message = Some(StrBytes::from_string(e.to_string()));
                }
            }
        }
        resp.groups.push(g);
    }
    resp
}
