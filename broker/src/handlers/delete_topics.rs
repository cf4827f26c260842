//! DeleteTopics: by name (v0-5) or by name or topic id (v6). Topics of the metadata image
//! (and names this broker does not know) are deleted by the active controller; topics only
//! this broker knows, here. Refused when
//! `delete.topic.enable=false` (TOPIC_DELETION_DISABLED) and for internal topics. ACLs: DELETE
//! on the topic, else TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use samsa_cluster::controller::{DeleteTopicResult, TopicRef};

use super::{ctx_timeout, Ctx};
use crate::acl::{AclOperation, ResourceType};
use crate::controller::active::{ControllerReply, ControllerRequest};

pub async fn handle(ctx: &Ctx<'_>, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
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
    let image = broker.controller.image();
    // Topics only this broker knows are deleted here; the others (and names nobody knows,
    // which the controller answers) go to the active controller.
    let mut outcomes = Vec::with_capacity(wanted.len());
    let mut forwarded: Vec<TopicRef> = Vec::new();
    for (name, id) in wanted {
        let mut r = DeletableTopicResult::default();
        r.name = name.clone();
        r.topic_id = id;
        let local = match &name {
            Some(n) => broker.topics.get(n.as_str()),
            None => broker.topics.get_by_id(&id),
        }
        .filter(|t| !t.managed);
        let image_name = match &name {
            Some(n) => Some(n.to_string()),
            None => image.topic_by_id(&id).map(|t| t.name.to_string()),
        };
        let result = match local {
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
            None if name.is_none()
                && image_name.as_ref().is_some_and(|n| {
                    !ctx.authorize(AclOperation::Delete, ResourceType::Topic, n)
                }) =>
            {
                Err((
                    ResponseError::TopicAuthorizationFailed,
                    format!("not authorized to delete the topic with id {id}"),
                ))
            }
            None => {
                outcomes.push(Outcome::Forwarded(forwarded.len()));
                forwarded.push(match &name {
                    Some(n) => TopicRef::Name(n.to_string()),
                    None => TopicRef::Id(id),
                });
                continue;
            }
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
            r.error_message = Some(StrBytes::from_string(message));
        }
        outcomes.push(Outcome::Local(r));
    }
    let decided = if forwarded.is_empty() {
        Vec::new()
    } else {
        let request = ControllerRequest::DeleteTopics(forwarded.clone());
        let failed = |(code, message): (i16, String)| {
            forwarded
                .iter()
                .map(|t| DeleteTopicResult {
                    name: match t {
                        TopicRef::Name(n) => Some(n.clone()),
                        TopicRef::Id(_) => None,
                    },
                    topic_id: match t {
                        TopicRef::Id(id) => *id,
                        TopicRef::Name(_) => Uuid::nil(),
                    },
                    error_code: code,
                    error_message: Some(message.clone()),
                })
                .collect::<Vec<_>>()
        };
        match broker
            .controller
            .request_retrying(request, ctx_timeout(req.timeout_ms))
            .await
        {
            Ok(ControllerReply::DeleteTopics(results)) if results.len() == forwarded.len() => {
                results
            }
            Ok(_) => failed((
                ResponseError::UnknownServerError.code(),
                "the controller answered for other topics".into(),
            )),
            Err(e) => failed(e),
        }
    };
    let gone: Vec<Uuid> = decided
        .iter()
        .filter(|d| d.error_code == 0)
        .map(|d| d.topic_id)
        .collect();
    super::wait_for_topics(broker, req.timeout_ms, |topics| {
        gone.iter().all(|id| topics.get_by_id(id).is_none())
    })
    .await;
    for outcome in outcomes {
        let mut r = match outcome {
            Outcome::Local(r) => r,
            Outcome::Forwarded(i) => {
                let d = &decided[i];
                let mut r = DeletableTopicResult::default();
                r.name = d
                    .name
                    .as_ref()
                    .map(|n| TopicName(StrBytes::from_string(n.clone())));
                r.topic_id = d.topic_id;
                r.error_code = d.error_code;
                r.error_message = d
                    .error_message
                    .as_ref()
                    .map(|m| StrBytes::from_string(m.clone()));
                r
            }
        };
        if ctx.version < 5 {
            r.error_message = None;
        }
        resp.responses.push(r);
    }
    resp
}

/// A topic of the request: answered here, or the index of its answer from the controller.
enum Outcome {
    Local(DeletableTopicResult),
    Forwarded(usize),
}
