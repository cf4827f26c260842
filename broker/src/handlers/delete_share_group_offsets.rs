//! DeleteShareGroupOffsets (KIP-932): forgets a share group's share-partitions of the topics
//! named, for a group without members (NON_EMPTY_GROUP otherwise); their next use starts from
//! `share.auto.offset.reset` again (the group coordinator initializes them again before it
//! assigns them). As Kafka: a group that does not exist is GROUP_ID_NOT_FOUND for the whole
//! request; a topic without state for the group is UNKNOWN_TOPIC_OR_PARTITION ("no offset
//! information"), named without its id. ACLs: DELETE on the group, READ on each topic.

use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::{DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};

pub async fn handle(
    ctx: &Ctx<'_>,
    req: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    let node = ctx.node();
    let group_id = req.group_id.to_string();
    let mut resp = DeleteShareGroupOffsetsResponse::default();
    let refused = if !crate::share::enabled(&node.controller.image()) {
        Some(ResponseError::UnsupportedVersion)
    } else if !ctx.authorize(AclOperation::Delete, ResourceType::Group, &group_id) {
        Some(ResponseError::GroupAuthorizationFailed)
    } else if let Err(e) = ctx.groups().check_loaded(&group_id) {
        Some(e.response_error())
    } else if ctx.groups().exists(&group_id) {
        Some(ResponseError::GroupIdNotFound)
    } else if !ctx.shares().has_group(&group_id) {
        resp.error_code = ResponseError::GroupIdNotFound.code();
        resp.error_message = Some(StrBytes::from_string(format!(
            "Group {group_id} not found."
        )));
        return resp;
    } else if ctx.shares().has_members(&group_id) {
        Some(ResponseError::NonEmptyGroup)
    } else {
        None
    };
    if let Some(e) = refused {
        resp.error_code = e.code();
        resp.error_message = Some(StrBytes::from_string(e.to_string()));
        return resp;
    }
    let known = match ctx.shares().describe_offsets(node, &group_id).await {
        Ok(v) => v,
        Err(e) => {
            resp.error_code = e.code();
            return resp;
        }
    };
    for t in req.topics {
        let mut out = DeleteShareGroupOffsetsResponseTopic::default();
        out.topic_name = t.topic_name.clone();
        let result = match node.topics.get(t.topic_name.as_str()) {
            _ if !ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.topic_name) => {
                Err(ResponseError::TopicAuthorizationFailed)
            }
            None => Err(ResponseError::UnknownTopicOrPartition),
            Some(topic) if !known.keys().any(|k| k.topic_id == topic.id) => {
                out.error_code = ResponseError::UnknownTopicOrPartition.code();
                out.error_message = Some(StrBytes::from_static_str(
                    "There is no offset information to delete.",
                ));
                resp.responses.push(out);
                continue;
            }
            Some(topic) => {
                out.topic_id = topic.id;
                ctx.shares()
                    .with_group(&group_id, false, |g| g.forget_initialized(topic.id));
                let mut r = Ok(());
                for key in known.keys().filter(|k| k.topic_id == topic.id) {
                    if let Err(e) = ctx.shares().forget(node, key).await {
                        r = Err(e);
                    }
                }
                r
            }
        };
        if let Err(e) = result {
            out.error_code = e.code();
            out.error_message = Some(StrBytes::from_string(e.to_string()));
        }
        resp.responses.push(out);
    }
    resp
}
