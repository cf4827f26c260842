//! DeleteTopics: by name (v0-5) or by name or topic id (v6; not both in one entry, and no topic
//! twice: see [`references`]). Topics of the metadata image
//! (and names this broker does not know) are deleted by the active controller; topics only
//! this broker knows, here. Refused when
//! `delete.topic.enable=false` (TOPIC_DELETION_DISABLED) and for internal topics. ACLs: DELETE
//! on the topic, else TOPIC_AUTHORIZATION_FAILED.

use std::collections::{HashMap, HashSet};

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use samsa_cluster::controller::{DeleteTopicResult, TopicRef};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::cluster_view::ClusterView;
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::metadata_wait::ctx_timeout;

pub async fn handle(ctx: &Ctx<'_>, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let node = ctx.node();
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
    let image = node.controller.image();
    let refs = references(ctx, &ClusterView::new(node), &wanted);
    // Topics only this broker knows are deleted here; the others (and names nobody knows,
    // which the controller answers) go to the active controller.
    let mut outcomes = Vec::with_capacity(wanted.len());
    let mut forwarded: Vec<TopicRef> = Vec::new();
    let mut mutations = super::quotas::Mutations::new(ctx, 5);
    // The partitions each forwarded topic deletes (refunded if the controller refuses it).
    let mut deleting: Vec<i64> = Vec::new();
    for ((name, id), reference) in wanted.into_iter().zip(refs) {
        let mut r = DeletableTopicResult::default();
        r.name = name.clone();
        r.topic_id = id;
        match reference {
            Reference::Valid => {}
            Reference::Answered => continue,
            Reference::Invalid(id, message) => {
                r.topic_id = id;
                r.error_code = ResponseError::InvalidRequest.code();
                r.error_message = Some(StrBytes::from_static_str(message));
                outcomes.push(Outcome::Local(r));
                continue;
            }
        }
        let local = match &name {
            Some(n) => node.topics.get(n.as_str()),
            None => node.topics.get_by_id(&id),
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
                // KIP-599: the partitions of a topic the image has count against the
                // controller mutation quota; an unknown one costs nothing.
                let partitions = match &name {
                    Some(n) => image.topic_by_name(n.as_str()),
                    None => image.topic_by_id(&id),
                }
                .map_or(0, |t| t.partitions().len() as i64);
                let admitted = if partitions > 0 {
                    mutations.admit(ctx, partitions)
                } else {
                    Ok(())
                };
                if let Err((code, message)) = admitted {
                    r.error_code = code.code();
                    r.error_message = Some(StrBytes::from_string(message));
                    outcomes.push(Outcome::Local(r));
                    continue;
                }
                deleting.push(partitions);
                outcomes.push(Outcome::Forwarded(forwarded.len()));
                forwarded.push(match &name {
                    Some(n) => TopicRef::Name(n.to_string()),
                    None => TopicRef::Id(id),
                });
                continue;
            }
            Some(_) if !node.config.bool("delete.topic.enable") => Err((
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
                let deleted = node.topics.delete(&t.name).map(|_| ()).map_err(|e| {
                    (
                        ResponseError::try_from_code(e.code())
                            .unwrap_or(ResponseError::UnknownServerError),
                        e.to_string(),
                    )
                });
                if deleted.is_ok() {
                    ctx.groups().delete_topic_offsets(node, &t.name);
                }
                deleted
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
        match node
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
            Err(e) => failed((e.code, e.message)),
        }
    };
    for (partitions, d) in deleting.iter().zip(&decided) {
        if d.error_code != 0 {
            mutations.refund(ctx, *partitions);
        }
    }
    let throttle_time_ms = mutations.finish(ctx).await;
    let gone: Vec<Uuid> = decided
        .iter()
        .filter(|d| d.error_code == 0)
        .map(|d| d.topic_id)
        .collect();
    crate::metadata_wait::wait_for_topics(&node.topics, req.timeout_ms, |topics| {
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
    resp.throttle_time_ms = throttle_time_ms;
    resp
}

/// How an entry of the request refers to its topic, judged as Kafka's controller does before
/// looking anything up.
enum Reference {
    /// By name alone or by id alone, and only once.
    Valid,
    /// Refused with INVALID_REQUEST: the id to answer with, and why.
    Invalid(Uuid, &'static str),
    /// A repeat of an entry answered already.
    Answered,
}

/// Kafka's checks of the references (`ControllerApis.deleteTopics`): an entry needs a name or
/// an id but not both; a name or an id given twice is answered once, refused; and a name whose
/// topic's id the request also gives (to a caller that may delete it) is refused, with that id,
/// and the id's own entry goes unanswered.
fn references(
    ctx: &Ctx<'_>,
    view: &ClusterView<'_>,
    wanted: &[(Option<TopicName>, Uuid)],
) -> Vec<Reference> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut ids: HashMap<Uuid, usize> = HashMap::new();
    for (name, id) in wanted {
        match (name, id.is_nil()) {
            (Some(n), true) => *names.entry(n.as_str()).or_default() += 1,
            (None, false) => *ids.entry(*id).or_default() += 1,
            _ => {}
        }
    }
    // Ids also reached through a name, each with the name that reaches it.
    let named_ids: HashMap<Uuid, &str> = names
        .iter()
        .filter(|(_, &count)| count == 1)
        .filter_map(|(&n, _)| Some((view.topic(n)?.id(), n)))
        .filter(|(id, n)| {
            ids.contains_key(id) && ctx.authorize(AclOperation::Delete, ResourceType::Topic, n)
        })
        .collect();
    let id_of_name: HashMap<&str, Uuid> = named_ids.iter().map(|(&id, &n)| (n, id)).collect();
    let mut answered_names = HashSet::new();
    let mut answered_ids = HashSet::new();
    wanted
        .iter()
        .map(|(name, id)| match (name, id.is_nil()) {
            (None, true) => Reference::Invalid(*id, "Neither topic name nor id were specified."),
            (Some(_), false) => {
                Reference::Invalid(*id, "You may not specify both topic name and topic id.")
            }
            (Some(n), true) if !answered_names.insert(n.as_str()) => Reference::Answered,
            (Some(n), true) if names[n.as_str()] > 1 => {
                Reference::Invalid(*id, "Duplicate topic name.")
            }
            (Some(n), true) => match id_of_name.get(n.as_str()) {
                Some(&id) => Reference::Invalid(
                    id,
                    "The provided topic name maps to an ID that was already supplied.",
                ),
                None => Reference::Valid,
            },
            (None, false) if !answered_ids.insert(*id) => Reference::Answered,
            (None, false) if ids[id] > 1 => Reference::Invalid(*id, "Duplicate topic id."),
            (None, false) if named_ids.contains_key(id) => Reference::Answered,
            (None, false) => Reference::Valid,
        })
        .collect()
}

/// A topic of the request: answered here, or the index of its answer from the controller.
enum Outcome {
    Local(DeletableTopicResult),
    Forwarded(usize),
}
