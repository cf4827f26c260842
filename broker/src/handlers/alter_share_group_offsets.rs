//! AlterShareGroupOffsets (KIP-932): moves share-partitions' start offsets, for a share group
//! without members (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for a classic group's id).
//! What was in flight is dropped; the next fetch reads from the new start. A group that does
//! not exist yet is created empty, so that its first members start there. ACLs: READ on the
//! group, READ on each topic.

use std::sync::Arc;

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::share::ShareKey;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    let node = ctx.node();
    let group_id = req.group_id.to_string();
    let mut resp = AlterShareGroupOffsetsResponse::default();
    let refused = if !crate::share::enabled(&node.controller.image()) {
        Some(ResponseError::UnsupportedVersion)
    } else if !ctx.authorize(AclOperation::Read, ResourceType::Group, &group_id) {
        Some(ResponseError::GroupAuthorizationFailed)
    } else if let Err(e) = ctx.groups().check_loaded(&group_id) {
        Some(e.response_error())
    } else if ctx.groups().exists(&group_id) {
        Some(ResponseError::GroupIdNotFound)
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
    if !ctx.shares().has_group(&group_id) {
        ctx.shares().with_group(&group_id, true, |_| ());
        if let Err(e) = ctx
            .groups()
            .write_share_group(node, &group_id, Some(0))
            .await
        {
            ctx.shares().unload_groups(|g| g == group_id);
            resp.error_code = e.response_error().code();
            return resp;
        }
    }
    for t in req.topics {
        let mut out = AlterShareGroupOffsetsResponseTopic::default();
        out.topic_name = t.topic_name.clone();
        let topic = node.topics.get(t.topic_name.as_str());
        let authorized = ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.topic_name);
        if let Some(topic) = &topic {
            out.topic_id = topic.id;
        }
        for p in t.partitions {
            let mut op = AlterShareGroupOffsetsResponsePartition::default();
            op.partition_index = p.partition_index;
            let result = match &topic {
                _ if !authorized => Err(ResponseError::TopicAuthorizationFailed),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(topic) if !topic.has_partition(p.partition_index) => {
                    Err(ResponseError::UnknownTopicOrPartition)
                }
                Some(topic) => {
                    let key = ShareKey {
                        group: Arc::from(group_id.as_str()),
                        topic_id: topic.id,
                        partition: p.partition_index,
                    };
                    ctx.shares().alter_start(node, &key, p.start_offset).await
                }
            };
            if let Err(e) = result {
                op.error_code = e.code();
                op.error_message = Some(StrBytes::from_string(e.to_string()));
            } else {
                tracing::info!(group = %group_id, topic = %t.topic_name.as_str(), partition = p.partition_index, start_offset = p.start_offset, "share group start offset altered");
            }
            out.partitions.push(op);
        }
        resp.responses.push(out);
    }
    resp
}
