//! ListGroups: every group this broker coordinates, with its protocol type, state (v4+,
//! filtered by `states_filter`, case-insensitively) and type (v5+: "classic", "consumer" for
//! KIP-848 consumer groups, "streams" for KIP-1071 streams groups, or "share" for share groups,
//! whose protocol types are "consumer", "streams" and "share"; `types_filter` selects them). While groups
//! are loading the answer is COORDINATOR_LOAD_IN_PROGRESS. ACLs: every group with DESCRIBE on the cluster, else only the
//! groups the caller may DESCRIBE.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};

const GROUP_TYPE_CLASSIC: &str = "classic";
const GROUP_TYPE_SHARE: &str = "share";
const GROUP_TYPE_CONSUMER: &str = "consumer";
const GROUP_TYPE_STREAMS: &str = "streams";

pub fn handle(ctx: &Ctx<'_>, req: ListGroupsRequest) -> ListGroupsResponse {
    let mut resp = ListGroupsResponse::default();
    let groups = match ctx.groups().list() {
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
    let type_ok = |t: &str| {
        ctx.version < 5
            || req.types_filter.is_empty()
            || req.types_filter.iter().any(|f| f.eq_ignore_ascii_case(t))
    };
    // DESCRIBE on the cluster shows every group; otherwise those the caller may describe.
    let all_visible = ctx.authorize(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    let visible =
        |id: &str| all_visible || ctx.authorize(AclOperation::Describe, ResourceType::Group, id);
    let state_ok = |state: &str| states.is_empty() || states.contains(&state.to_lowercase());
    let mut listed = |id: String, protocol_type: String, state: &'static str, group_type| {
        let mut lg = ListedGroup::default();
        lg.group_id = GroupId(StrBytes::from_string(id));
        lg.protocol_type = StrBytes::from_string(protocol_type);
        if ctx.version >= 4 {
            lg.group_state = StrBytes::from_static_str(state);
        }
        if ctx.version >= 5 {
            lg.group_type = StrBytes::from_static_str(group_type);
        }
        resp.groups.push(lg);
    };
    if type_ok(GROUP_TYPE_CLASSIC) {
        for g in groups {
            if visible(&g.group_id) && state_ok(g.state.as_str()) {
                listed(
                    g.group_id,
                    g.protocol_type,
                    g.state.as_str(),
                    GROUP_TYPE_CLASSIC,
                );
            }
        }
    }
    if type_ok(GROUP_TYPE_CONSUMER) {
        for (id, state) in ctx.groups().consumer_group_states() {
            if visible(&id) && state_ok(state) {
                listed(id, "consumer".to_string(), state, GROUP_TYPE_CONSUMER);
            }
        }
    }
    if type_ok(GROUP_TYPE_STREAMS) {
        for (id, state) in ctx.groups().streams_group_states() {
            if visible(&id) && state_ok(state) {
                listed(
                    id,
                    GROUP_TYPE_STREAMS.to_string(),
                    state,
                    GROUP_TYPE_STREAMS,
                );
            }
        }
    }
    if type_ok(GROUP_TYPE_SHARE) {
        for id in ctx.shares().group_ids() {
            if !ctx.groups().is_loaded(&id) || !visible(&id) {
                continue;
            }
            let Some(state) = ctx.shares().with_group(&id, false, |g| g.state()) else {
                continue;
            };
            if state_ok(state) {
                listed(id, GROUP_TYPE_SHARE.to_string(), state, GROUP_TYPE_SHARE);
            }
        }
    }
    resp
}
