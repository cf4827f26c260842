//! ListGroups: every group this broker coordinates, with its protocol type, state (v4+,
//! filtered by `states_filter`, case-insensitively) and type (v5+: all groups here are
//! "classic"; `types_filter` selects them). While groups are loading the answer is
//! COORDINATOR_LOAD_IN_PROGRESS. ACLs: every group with DESCRIBE on the cluster, else only the
//! groups the caller may DESCRIBE.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};

const GROUP_TYPE_CLASSIC: &str = "classic";

pub fn handle(ctx: &Ctx<'_>, req: ListGroupsRequest) -> ListGroupsResponse {
    let mut resp = ListGroupsResponse::default();
    let groups = match ctx.broker.groups.list() {
        Ok(g) => g,
        Err(e) => {
            resp.error_code = e.code();
            return resp;
        }
    };
    let states: Vec<String> = if ctx.version >= 4 {
        req.states_filter.iter().map(|s| s.to_lowercase()).collect()
    } else {
        Vec::new()
    };
    let types_ok = ctx.version < 5
        || req.types_filter.is_empty()
        || req
            .types_filter
            .iter()
            .any(|t| t.eq_ignore_ascii_case(GROUP_TYPE_CLASSIC));
    if !types_ok {
        return resp;
    }
    // DESCRIBE on the cluster shows every group; otherwise those the caller may describe.
    let all_visible = ctx.authorize(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    for g in groups {
        if !all_visible && !ctx.authorize(AclOperation::Describe, ResourceType::Group, &g.group_id)
        {
            continue;
        }
        if !states.is_empty() && !states.contains(&g.state.as_str().to_lowercase()) {
            continue;
        }
        let mut lg = ListedGroup::default();
        lg.group_id = GroupId(StrBytes::from_string(g.group_id));
        lg.protocol_type = StrBytes::from_string(g.protocol_type);
        if ctx.version >= 4 {
            lg.group_state = StrBytes::from_static_str(g.state.as_str());
        }
        if ctx.version >= 5 {
            lg.group_type = StrBytes::from_static_str(GROUP_TYPE_CLASSIC);
        }
        resp.groups.push(lg);
    }
    resp
}
