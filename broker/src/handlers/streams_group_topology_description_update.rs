//! StreamsGroupTopologyDescriptionUpdate (KIP-1331, API key 93): a streams member pushes its
//! topology's description for the broker to store through a plugin
//! (`group.streams.topology.description.plugin.class`), which StreamsGroupDescribe v1 then gives
//! back. Samsa has no such plugin, so it answers as Kafka 4.4 without one: UNSUPPORTED_VERSION,
//! "The broker has no streams group topology description plugin configured." (after the checks
//! Kafka makes first: `streams.version` below 1 is UNSUPPORTED_VERSION, no READ on the group is
//! GROUP_AUTHORIZATION_FAILED). Heartbeats never ask a member for its description
//! (`TopologyDescriptionRequired` false), so clients send this only on their own.

use kafka_protocol::ResponseError;
use samsa_protocol::streams::{
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};

/// Kafka's message when no description plugin is configured.
pub const NO_PLUGIN: &str =
    "The broker has no streams group topology description plugin configured.";

fn error(e: ResponseError, message: Option<&str>) -> StreamsGroupTopologyDescriptionUpdateResponse {
    StreamsGroupTopologyDescriptionUpdateResponse {
        error_code: e.code(),
        error_message: message.map(str::to_string),
        ..Default::default()
    }
}

pub fn handle(
    ctx: &Ctx<'_>,
    req: StreamsGroupTopologyDescriptionUpdateRequest,
) -> StreamsGroupTopologyDescriptionUpdateResponse {
    if !crate::group::streams_shell::streams_protocol_enabled(ctx.node()) {
        return error(ResponseError::UnsupportedVersion, None);
    }
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        return error(ResponseError::GroupAuthorizationFailed, None);
    }
    error(ResponseError::UnsupportedVersion, Some(NO_PLUGIN))
}
