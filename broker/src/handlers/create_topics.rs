//! CreateTopics: this broker checks what it alone can (ACLs, configs against its
//! configuration, topics only it knows), and forwards the rest to the active controller, which validates the
//! names and counts against the whole cluster, places the partitions on the brokers and
//! commits the topics to the metadata log (`validate_only`: decides without committing).
//! Partition count and replication factor -1 take `num.partitions` and
//! `default.replication.factor`. From v5 the answer also carries the topic's effective
//! configs, as Kafka's does.
//!
//! ACLs: CREATE on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED); the configs
//! in the answer need DESCRIBE_CONFIGS on the topic (else `topic_config_error_code`).

use std::collections::HashMap;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use kafka_protocol::messages::TopicName;
use samsa_cluster::controller::{CreatableTopic, CreateTopicResult};
use uuid::Uuid;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::config::topic::{self as topic_config, TopicOverrides};
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::metadata_wait::ctx_timeout;
use crate::topics::PARTITIONS_PER_TOPIC_MAX;

pub async fn handle(ctx: &Ctx<'_>, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let node = ctx.node();
    let mut resp = CreateTopicsResponse::default();
    // CREATE on the cluster allows every topic; otherwise each needs CREATE of its own.
    let may_create_any = ctx.authorize(AclOperation::Create, ResourceType::Cluster, CLUSTER_NAME);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in &req.topics {
        *seen.entry(t.name.to_string()).or_default() += 1;
    }
    // Checked here: what needs this broker (ACLs, its configuration, the topics only it
    // knows); the rest goes to the active controller, which decides for the whole cluster.
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(req.topics.len());
    let mut forwarded: Vec<CreatableTopic> = Vec::new();
    let mut answered = std::collections::HashSet::new();
    let mut mutations = super::quotas::Mutations::new(ctx, 6);
    let default_partitions = i64::from(node.dynamic_configs.effective().int("num.partitions"));
    for t in req.topics {
        let name = t.name.to_string();
        // A name given twice is answered once, refused, as Kafka's controller does.
        if !answered.insert(name.clone()) {
            continue;
        }
        let checked = (|| -> Result<CreatableTopic, (ResponseError, String)> {
            if seen[&name] > 1 {
                return Err((
                    ResponseError::InvalidRequest,
                    "Duplicate topic name.".into(),
                ));
            }
            if !may_create_any && !ctx.authorize(AclOperation::Create, ResourceType::Topic, &name) {
                return Err((
                    ResponseError::TopicAuthorizationFailed,
                    ctx.denied(AclOperation::Create, ResourceType::Topic, &name),
                ));
            }
            if node.topics.get(&name).is_some_and(|t| !t.managed) {
                return Err((
                    ResponseError::TopicAlreadyExists,
                    format!("topic '{name}' already exists"),
                ));
            }
            let mut overrides = TopicOverrides::new();
            for c in &t.configs {
                let Some(v) = &c.value else { continue };
                overrides.insert(c.name.to_string(), v.to_string());
            }
            topic_config::validate_overrides(&node.dynamic_configs.effective(), &overrides)
                .map_err(|m| (ResponseError::InvalidConfig, m))?;
            if t.num_partitions > PARTITIONS_PER_TOPIC_MAX {
                return Err((ResponseError::InvalidPartitions, format!(
                    "number of partitions must be between 1 and {PARTITIONS_PER_TOPIC_MAX}, got {}", t.num_partitions
                )));
            }
            Ok(CreatableTopic {
                name: name.clone(),
                num_partitions: t.num_partitions,
                replication_factor: t.replication_factor,
                assignments: t
                    .assignments
                    .iter()
                    .map(|a| {
                        (
                            a.partition_index,
                            a.broker_ids.iter().map(|b| b.0).collect(),
                        )
                    })
                    .collect(),
                configs: t
                    .configs
                    .iter()
                    .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                    .collect(),
                topic_id: None,
            })
        })();
        // The partitions it would create count against the client's controller mutation
        // quota (KIP-599), once the topic passed every check here.
        let checked = checked.and_then(|topic| {
            mutations.admit(ctx, partitions_asked(&topic, default_partitions))?;
            Ok(topic)
        });
        match checked {
            Ok(topic) => {
                outcomes.push(Outcome::Forwarded(forwarded.len()));
                forwarded.push(topic);
            }
            Err(e) => outcomes.push(Outcome::Refused(name, e)),
        }
    }
    let decided = if forwarded.is_empty() {
        Vec::new()
    } else {
        let request = ControllerRequest::CreateTopics {
            topics: forwarded.clone(),
            validate_only: req.validate_only,
        };
        match node
            .controller
            .request_retrying(request, ctx_timeout(req.timeout_ms))
            .await
        {
            Ok(ControllerReply::CreateTopics(results)) if results.len() == forwarded.len() => {
                results
            }
            Ok(_) => failed_whole(
                &forwarded,
                (
                    ResponseError::UnknownServerError.code(),
                    "the controller answered for other topics".into(),
                ),
            ),
            Err(e) => failed_whole(&forwarded, (e.code, e.message)),
        }
    };
    for (topic, d) in forwarded.iter().zip(&decided) {
        if d.error_code != 0 {
            mutations.refund(ctx, partitions_asked(topic, default_partitions));
        }
    }
    resp.throttle_time_ms = mutations.finish(ctx).await;
    // The new topics are answered once this broker has them too, so that the client's next
    // request here finds them (bounded: the controller has committed them either way).
    if !req.validate_only {
        let ids: Vec<Uuid> = decided
            .iter()
            .filter(|d| d.error_code == 0)
            .map(|d| d.topic_id)
            .collect();
        crate::metadata_wait::wait_for_topics(&node.topics, req.timeout_ms, |topics| {
            ids.iter()
                .all(|id| topics.get_by_id(id).is_some() || topics.install_failure(id).is_some())
        })
        .await;
    }
    for outcome in outcomes {
        let mut r = CreatableTopicResult::default();
        r.num_partitions = -1;
        r.replication_factor = -1;
        let (name, result) = match outcome {
            Outcome::Refused(name, e) => (name, Err(e)),
            Outcome::Forwarded(i) => {
                let d = &decided[i];
                let failed_here = (d.error_code == 0 && !req.validate_only)
                    .then(|| node.topics.install_failure(&d.topic_id))
                    .flatten();
                let result = if let Some(why) = failed_here {
                    // The controller created the topic; this node, one of its replicas,
                    // could not create its logs (and left none): say so, as the partitions
                    // here are offline until it can.
                    Err((
                        ResponseError::KafkaStorageError,
                        format!("the topic was created, but this broker cannot hold its partitions: {why}"),
                    ))
                } else if d.error_code == 0 {
                    let overrides: TopicOverrides = forwarded[i]
                        .configs
                        .iter()
                        .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
                        .collect();
                    Ok((
                        d.num_partitions,
                        d.replication_factor,
                        overrides,
                        d.topic_id,
                    ))
                } else {
                    Err((
                        ResponseError::try_from_code(d.error_code)
                            .unwrap_or(ResponseError::UnknownServerError),
                        d.error_message.clone().unwrap_or_default(),
                    ))
                };
                (d.name.clone(), result)
            }
        };
        r.name = TopicName(StrBytes::from_string(name.clone()));
        match result {
            // Configs, partitions and replication factor are shown only to a caller that may
            // describe the topic's configs (Kafka's `topic_config_error_code`).
            Ok((_, _, _, id))
                if ctx.version >= 5
                    && !ctx.authorize(
                        AclOperation::DescribeConfigs,
                        ResourceType::Topic,
                        &name,
                    ) =>
            {
                r.topic_config_error_code = ResponseError::TopicAuthorizationFailed.code();
                if ctx.version >= 7 {
                    r.topic_id = id;
                }
            }
            Ok((partitions, rf, overrides, id)) if ctx.version >= 5 => {
                r.num_partitions = partitions;
                r.replication_factor = rf;
                if ctx.version >= 7 {
                    r.topic_id = id;
                }
                r.configs = Some(
                    topic_config::all_effective(&node.dynamic_configs.effective(), &overrides)
                        .into_iter()
                        .map(|(def, value, source)| {
                            let mut c = CreatableTopicConfigs::default();
                            c.name = StrBytes::from_static_str(def.name);
                            c.value = value.map(StrBytes::from_string);
                            c.config_source = source.code();
                            c
                        })
                        .collect(),
                );
            }
            Ok(_) => {}
            Err((code, message)) => {
                r.error_code = code.code();
                r.error_message = Some(StrBytes::from_string(message));
            }
        }
        resp.topics.push(r);
    }
    resp
}

/// A topic of the request: refused here, or the index of its answer from the controller.
enum Outcome {
    Refused(String, (ResponseError, String)),
    Forwarded(usize),
}

/// Every forwarded topic's answer when the controller could not be asked.
fn failed_whole(
    topics: &[CreatableTopic],
    (code, message): (i16, String),
) -> Vec<CreateTopicResult> {
    topics
        .iter()
        .map(|t| CreateTopicResult {
            name: t.name.clone(),
            topic_id: Uuid::nil(),
            error_code: code,
            error_message: Some(message.clone()),
            num_partitions: -1,
            replication_factor: -1,
        })
        .collect()
}

/// The partitions a topic asks for: its assignments, else its count, else the default.
fn partitions_asked(topic: &CreatableTopic, default_partitions: i64) -> i64 {
    if !topic.assignments.is_empty() {
        topic.assignments.len() as i64
    } else if topic.num_partitions > 0 {
        i64::from(topic.num_partitions)
    } else {
        default_partitions
    }
}
