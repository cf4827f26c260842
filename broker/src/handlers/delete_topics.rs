//! DeleteTopics: by name (v0-5) or by name or topic id (v6). Refused when
//! `delete.topic.enable=false` (TOPIC_DELETION_DISABLED) and for internal topics. ACLs: DELETE
//! on the topic, else TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType};

pub fn handle(ctx: &Ctx<'_>, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let broker = ctx.broker;
    let mut resp = DeleteTopicsResponse::default();
    let wanted: Vec<(Option<TopicName>, Uuid)> = if ctx.version >= 6 {
        req.topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n), Uuid::nil()))
            .collect()
    };
    for (name, id) in wanted {
        let mut r = DeletableTopicResult::default();
        r.name = name.clone();
        r.topic_id = id;
        let topic = match &name {
            Some(n) => broker.topics.get(n.as_str()),
            None => broker.topics.get_by_id(&id),
        };
        let result = match topic {
            // By name the check comes before the lookup (no hint whether the topic exists); by
            // id, a topic the caller may not even describe is refused the same way.
            _ if name
                .as_ref()
                .is_some_and(|n| !ctx.authorize(AclOperation::Delete, ResourceType::Topic, n)) =>
            {
                let n = name.as_ref().map(|n| n.as_str()).unwrap_or("");
                Err((
                    ResponseError::TopicAuthorizationFailed,
                    ctx.denied(AclOperation::Delete, ResourceType::Topic, n),
                ))
            }
            Some(t)
                if name.is_none()
                    && !ctx.authorize(AclOperation::Delete, ResourceType::Topic, &t.name) =>
            {
                Err((
                    ResponseError::TopicAuthorizationFailed,
                    format!("not authorized to delete the topic with id {id}"),
                ))
            }
            None if name.is_none() => Err((
                ResponseError::UnknownTopicId,
                format!("no topic has id {id}"),
            )),
            None => Err((
                ResponseError::UnknownTopicOrPartition,
                format!(
                    "topic '{}' does not exist",
                    name.as_ref().map(|n| n.as_str()).unwrap_or("")
                ),
            )),
            Some(_) if !broker.config.bool("delete.topic.enable") => Err((
                ResponseError::TopicDeletionDisabled,
                "topic deletion is disabled (delete.topic.enable=false)".to_string(),
            )),
            Some(t) if t.is_internal() => Err((
                ResponseError::InvalidTopicException,
                format!("internal topic '{}' cannot be deleted", t.name),
            )),
            Some(t) => {
                r.name = Some(TopicName(StrBytes::from_string(t.name.clone())));
                r.topic_id = t.id;
                broker.topics.delete(&t.name).map(|_| ()).map_err(|e| {
                    (
                        ResponseError::try_from_code(e.code())
                            .unwrap_or(ResponseError::UnknownServerError),
                        e.to_string(),
                    )
                })
            }
        };
        if let Err((code, message)) = result {
            r.error_code = code.code();
            if ctx.version >= 5 {
                r.error_message = Some(StrBytes::from_string(message));
            }
        }
        resp.responses.push(r);
    }
    resp
}
