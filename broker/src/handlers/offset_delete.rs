//! OffsetDelete: removes a group's committed offsets for some partitions (KIP-496). Allowed
//! for an empty group, or for a consumer group on topics it no longer subscribes to (those
//! it does get GROUP_SUBSCRIBED_TO_TOPIC; a streams group with members, the source and
//! repartition source topics of its topology, as Kafka 4.4); a group with members of another protocol type
//! gets NON_EMPTY_GROUP. Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION. ACLs:
//! DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
//! (TOPIC_AUTHORIZATION_FAILED).

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};

pub async fn handle(ctx: &Ctx<'_>, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let mut resp = OffsetDeleteResponse::default();
    if !ctx.authorize(AclOperation::Delete, ResourceType::Group, &req.group_id) {
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    let may_read = |topic: &str| ctx.authorize(AclOperation::Read, ResourceType::Topic, topic);
    let mut known = Vec::new();
    // Partitions the topic has, by topic: another partition is UNKNOWN_TOPIC_OR_PARTITION.
    let mut counts = std::collections::HashMap::new();
    for t in &req.topics {
        let topic = ctx.topics().get(t.name.as_str());
        if let (true, Some(topic)) = (may_read(&t.name), topic) {
            counts.insert(t.name.to_string(), topic.partition_count);
            known.push((
                t.name.to_string(),
                t.partitions
                    .iter()
                    .map(|p| p.partition_index)
                    .filter(|p| (0..topic.partition_count).contains(p))
                    .collect(),
            ));
        }
    }
    let results = match ctx
        .groups()
        .delete_offsets(ctx.node(), req.group_id.as_str(), known)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            resp.error_code = e.code();
            return resp;
        }
    };
    for t in &req.topics {
        let mut rt = OffsetDeleteResponseTopic::default();
        rt.name = t.name.clone();
        let found = results.iter().find(|(name, _)| name == t.name.as_str());
        let authorized = may_read(&t.name);
        for p in &t.partitions {
            let mut rp = OffsetDeleteResponsePartition::default();
            rp.partition_index = p.partition_index;
            let exists = counts
                .get(t.name.as_str())
                .is_some_and(|n| (0..*n).contains(&p.partition_index));
            rp.error_code = match found {
                _ if !authorized => ResponseError::TopicAuthorizationFailed.code(),
                _ if !exists => ResponseError::UnknownTopicOrPartition.code(),
                None => ResponseError::UnknownTopicOrPartition.code(),
                Some((_, ps)) => ps
                    .iter()
                    .find(|(idx, _)| *idx == p.partition_index)
                    .and_then(|(_, r)| r.err())
                    .map_or(0, |e| e.code()),
            };
            rt.partitions.push(rp);
        }
        resp.topics.push(rt);
    }
    resp
}
