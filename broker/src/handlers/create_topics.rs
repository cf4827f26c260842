//! CreateTopics: validate every topic first (name, partitions, replication factor, configs),
//! then create those that passed unless `validate_only`. Partition count and replication
//! factor -1 take `num.partitions` and `default.replication.factor`. From v5 the answer also
//! carries the topic's effective configs, as Kafka's does.
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

use super::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::config::topic::{self as topic_config, TopicOverrides};
use crate::topics::TopicError;

/// A topic that was (or, validating only, would be) created: partitions, replication factor,
/// overrides and its id.
type Created = (i32, i16, TopicOverrides, Option<uuid::Uuid>);

pub fn handle(ctx: &Ctx<'_>, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let broker = ctx.broker;
    let mut resp = CreateTopicsResponse::default();
    // CREATE on the cluster allows every topic; otherwise each needs CREATE of its own.
    let may_create_any = ctx.authorize(AclOperation::Create, ResourceType::Cluster, CLUSTER_NAME);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in &req.topics {
        *seen.entry(t.name.to_string()).or_default() += 1;
    }
    for t in req.topics {
        let name = t.name.to_string();
        let mut r = CreatableTopicResult::default();
        r.name = t.name.clone();
        r.num_partitions = -1;
        r.replication_factor = -1;
        let result = (|| -> Result<Created, (ResponseError, String)> {
            if seen[&name] > 1 {
                return Err((
                    ResponseError::InvalidRequest,
                    format!("topic '{name}' appears more than once in the request"),
                ));
            }
            if !may_create_any && !ctx.authorize(AclOperation::Create, ResourceType::Topic, &name) {
                return Err((
                    ResponseError::TopicAuthorizationFailed,
                    ctx.denied(AclOperation::Create, ResourceType::Topic, &name),
                ));
            }
            let mut overrides = TopicOverrides::new();
            for c in &t.configs {
                let Some(v) = &c.value else { continue };
                overrides.insert(c.name.to_string(), v.to_string());
            }
            let (partitions, rf) = if t.assignments.is_empty() {
                let p = if t.num_partitions == -1 {
                    broker.config.int("num.partitions")
                } else {
                    t.num_partitions
                };
                let rf = if t.replication_factor == -1 {
                    broker.config.int("default.replication.factor") as i16
                } else {
                    t.replication_factor
                };
                (p, rf)
            } else {
                if t.num_partitions != -1 || t.replication_factor != -1 {
                    return Err((
                        ResponseError::InvalidRequest,
                        "both numPartitions or replicationFactor and replicasAssignments were set; both cannot be used at the same time".into(),
                    ));
                }
                for a in &t.assignments {
                    if a.broker_ids.len() != 1 || a.broker_ids[0].0 != broker.node_id {
                        return Err((
                            ResponseError::InvalidReplicaAssignment,
                            format!(
                                "partition {} is assigned to brokers {:?}; this cluster has only broker {}",
                                a.partition_index,
                                a.broker_ids.iter().map(|b| b.0).collect::<Vec<_>>(),
                                broker.node_id
                            ),
                        ));
                    }
                }
                (t.assignments.len() as i32, 1)
            };
            let code = |e: TopicError| {
                (
                    ResponseError::try_from_code(e.code())
                        .unwrap_or(ResponseError::UnknownServerError),
                    e.to_string(),
                )
            };
            if req.validate_only {
                broker
                    .topics
                    .validate_new(&name, partitions, rf, &overrides)
                    .map_err(code)?;
                return Ok((partitions, rf, overrides, None));
            }
            let topic = broker
                .topics
                .create(&name, partitions, rf, overrides.clone())
                .map_err(code)?;
            Ok((partitions, rf, overrides, Some(topic.id)))
        })();
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
                    r.topic_id = id.unwrap_or_default();
                }
            }
            Ok((partitions, rf, overrides, id)) if ctx.version >= 5 => {
                r.num_partitions = partitions;
                r.replication_factor = rf;
                if ctx.version >= 7 {
                    r.topic_id = id.unwrap_or_default();
                }
                r.configs = Some(
                    topic_config::all_effective(&broker.dynamic_configs.effective(), &overrides)
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
