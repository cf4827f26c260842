//! CreatePartitions: grow a topic to a new total. Topics of the metadata image (and names this
//! broker does not know) go to the active controller, which places the new partitions on the
//! brokers or checks the explicit assignments (one replica list per added partition, naming
//! registered brokers) and commits them; topics only this broker knows grow here, where the
//! only broker to assign is this one. ACLs: ALTER on the topic, else TOPIC_AUTHORIZATION_FAILED.

use std::collections::{HashMap, HashSet};

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic as CreatePartitionsTopicRequest;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::controller::{CreatePartitionsResult, CreatePartitionsTopic};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::metadata_wait::ctx_timeout;

pub async fn handle(ctx: &Ctx<'_>, req: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let node = ctx.node();
    let mut resp = CreatePartitionsResponse::default();
    let mut outcomes: Vec<Result<Result<(), (ResponseError, String)>, usize>> = Vec::new();
    let mut forwarded: Vec<CreatePartitionsTopic> = Vec::new();
    // A name given twice is answered once, refused before anything else (Kafka's
    // `ControllerApis.createPartitions`).
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &req.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    let mut answered = HashSet::new();
    let topics: Vec<&CreatePartitionsTopicRequest> = req
        .topics
        .iter()
        .filter(|t| answered.insert(t.name.as_str()))
        .collect();
    let mut mutations = super::quotas::Mutations::new(ctx, 3);
    // The partitions each forwarded topic would add (refunded if the controller refuses it).
    let mut added: Vec<i64> = Vec::new();
    for &t in &topics {
        if counts[t.name.as_str()] > 1 {
            outcomes.push(Ok(Err((
                ResponseError::InvalidRequest,
                "Duplicate topic name.".into(),
            ))));
            continue;
        }
        if !ctx.authorize(AclOperation::Alter, ResourceType::Topic, &t.name) {
            outcomes.push(Ok(Err((
                ResponseError::TopicAuthorizationFailed,
                ctx.denied(AclOperation::Alter, ResourceType::Topic, &t.name),
            ))));
            continue;
        }
        let local = node.topics.get(t.name.as_str()).filter(|t| !t.managed);
        let Some(local) = local else {
            // KIP-599: the partitions it adds count against the controller mutation quota.
            let now = ctx
                .controller()
                .image()
                .topic_by_name(t.name.as_str())
                .map_or(0, |tp| tp.partitions().len() as i64);
            let more = (i64::from(t.count) - now).max(0);
            if let Err(e) = mutations.admit(ctx, more) {
                outcomes.push(Ok(Err(e)));
                continue;
            }
            added.push(more);
            outcomes.push(Err(forwarded.len()));
            forwarded.push(CreatePartitionsTopic {
                name: t.name.to_string(),
                count: t.count,
                assignments: t.assignments.as_ref().map(|a| {
                    a.iter()
                        .map(|x| x.broker_ids.iter().map(|b| b.0).collect())
                        .collect()
                }),
            });
            continue;
        };
        // Kafka checks the topic and the new total first (add_partitions reports those), then
        // that there is one assignment per added partition, then the brokers named.
        let current = local.partition_count;
        let bad_assignment = match &t.assignments {
            Some(a) if t.count > current => {
                let added = (t.count - current) as usize;
                if a.len() != added {
                    Some(format!(
                        "{added} partitions would be added but {} assignments were given",
                        a.len()
                    ))
                } else {
                    a.iter()
                        .find(|x| x.broker_ids.len() != 1 || x.broker_ids[0].0 != node.node_id)
                        .map(|x| {
                            format!(
                                "assignment {:?} names brokers other than {}, the only one that has topic '{}'",
                                x.broker_ids.iter().map(|b| b.0).collect::<Vec<_>>(),
                                node.node_id,
                                t.name.as_str()
                            )
                        })
                }
            }
            _ => None,
        };
        outcomes.push(Ok(match bad_assignment {
            Some(m) => Err((ResponseError::InvalidReplicaAssignment, m)),
            None => node
                .topics
                .add_partitions(t.name.as_str(), t.count, req.validate_only)
                .map_err(|e| {
                    (
                        ResponseError::try_from_code(e.code())
                            .unwrap_or(ResponseError::UnknownServerError),
                        e.to_string(),
                    )
                }),
        }));
    }
    let decided: Vec<CreatePartitionsResult> = if forwarded.is_empty() {
        Vec::new()
    } else {
        let request = ControllerRequest::CreatePartitions {
            topics: forwarded.clone(),
            validate_only: req.validate_only,
        };
        let failed = |(code, message): (i16, String)| -> Vec<CreatePartitionsResult> {
            forwarded
                .iter()
                .map(|t| CreatePartitionsResult {
                    name: t.name.clone(),
                    error_code: code,
                    error_message: Some(message.clone()),
                })
                .collect()
        };
        match node
            .controller
            .request_retrying(request, ctx_timeout(req.timeout_ms))
            .await
        {
            Ok(ControllerReply::CreatePartitions(r)) if r.len() == forwarded.len() => r,
            Ok(_) => failed((
                ResponseError::UnknownServerError.code(),
                "the controller answered for other topics".into(),
            )),
            Err(e) => failed((e.code, e.message)),
        }
    };
    for (more, d) in added.iter().zip(&decided) {
        if d.error_code != 0 {
            mutations.refund(ctx, *more);
        }
    }
    resp.throttle_time_ms = mutations.finish(ctx).await;
    // Answered once this broker has the new partitions too, so that the client's next
    // Metadata here shows them (bounded: the controller has committed them either way).
    if !req.validate_only {
        let grown: Vec<(String, i32)> = forwarded
            .iter()
            .zip(&decided)
            .filter(|(_, d)| d.error_code == 0)
            .map(|(t, _)| (t.name.clone(), t.count))
            .collect();
        crate::metadata_wait::wait_for_topics(&node.topics, req.timeout_ms, |topics| {
            grown
                .iter()
                .all(|(n, count)| topics.get(n).is_some_and(|t| t.partition_count >= *count))
        })
        .await;
    }
    for (t, outcome) in topics.iter().zip(outcomes) {
        let mut r = CreatePartitionsTopicResult::default();
        r.name = t.name.clone();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err((code, message))) => {
                r.error_code = code.code();
                r.error_message = Some(StrBytes::from_string(message));
            }
            Err(i) => {
                r.error_code = decided[i].error_code;
                r.error_message = decided[i]
                    .error_message
                    .as_ref()
                    .map(|m| StrBytes::from_string(m.clone()));
            }
        }
        resp.results.push(r);
    }
    resp
}
