//! Metadata: brokers, cluster id, controller, and for each topic asked for its partitions with
//! leader, replicas and ISR. Topics named here are created when `auto.create.topics.enable` is
//! on and the client allows it (always before v4), as Kafka does; unlike Kafka, creation is
//! synchronous, so the first answer already has the partitions instead of LEADER_NOT_AVAILABLE.
//!
//! ACLs: a topic needs DESCRIBE (named ones get TOPIC_AUTHORIZATION_FAILED, the all-topics
//! answer leaves them out), auto-creation needs CREATE on the cluster or the topic, and the
//! `*_authorized_operations` fields (v8+) come from the authorizer.

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::config::topic::TopicOverrides;
use crate::topics::{is_internal_topic, Topic, TopicError};

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_OMITTED: i32 = i32::MIN;

pub fn handle(ctx: &Ctx<'_>, req: MetadataRequest) -> MetadataResponse {
    let broker = ctx.broker;
    let mut resp = MetadataResponse::default();
    resp.brokers = brokers(ctx);
    // Fields a version lacks must stay at their defaults, or the encoder refuses the response.
    if ctx.version >= 2 {
        resp.cluster_id = Some(StrBytes::from_string(broker.cluster_id.clone()));
    }
    if ctx.version >= 1 {
        resp.controller_id = BrokerId(broker.node_id);
    }
    if (8..=10).contains(&ctx.version) && req.include_cluster_authorized_operations {
        // Kafka reports none to a caller that may not describe the cluster.
        resp.cluster_authorized_operations =
            if ctx.authorize(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
                ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
            } else {
                0
            };
    }
    let include_ops = req.include_topic_authorized_operations;

    // v0: an empty list means every topic. v1+: null means every topic, empty means none.
    let all = match &req.topics {
        None => true,
        Some(t) => t.is_empty() && ctx.version == 0,
    };
    if all {
        // Topics the caller may not describe are left out, as if they did not exist.
        resp.topics = broker
            .topics
            .all()
            .iter()
            .filter(|t| ctx.authorize(AclOperation::Describe, ResourceType::Topic, &t.name))
            .map(|t| describe(ctx, t, include_ops))
            .collect();
        return resp;
    }
    let allow_auto_create = (ctx.version < 4 || req.allow_auto_topic_creation)
        && broker.config.bool("auto.create.topics.enable");
    for wanted in req.topics.unwrap_or_default() {
        let topic = match &wanted.name {
            // Named topics the caller may not describe are refused whether they exist or not.
            Some(name) if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, name) => {
                Err(ResponseError::TopicAuthorizationFailed)
            }
            Some(name) => {
                let name = name.as_str();
                match broker.topics.get(name) {
                    Some(t) => Ok(t),
                    // Auto-creation needs CREATE on the cluster or on the topic.
                    None if allow_auto_create
                        && !is_internal_topic(name)
                        && !ctx.authorize(
                            AclOperation::Create,
                            ResourceType::Cluster,
                            CLUSTER_NAME,
                        )
                        && !ctx.authorize(AclOperation::Create, ResourceType::Topic, name) =>
                    {
                        Err(ResponseError::TopicAuthorizationFailed)
                    }
                    None if allow_auto_create && !is_internal_topic(name) => {
                        let partitions = broker.config.int("num.partitions");
                        let rf = broker.config.int("default.replication.factor") as i16;
                        match broker
                            .topics
                            .create(name, partitions, rf, TopicOverrides::new())
                        {
                            Ok(t) => Ok(t),
                            Err(TopicError::AlreadyExists(_)) => broker
                                .topics
                                .get(name)
                                .ok_or(ResponseError::UnknownTopicOrPartition),
                            Err(e) => Err(ResponseError::try_from_code(e.code())
                                .unwrap_or(ResponseError::UnknownServerError)),
                        }
                    }
                    None if !samsa_storage::is_valid_topic_name(name) => {
                        Err(ResponseError::InvalidTopicException)
                    }
                    None => Err(ResponseError::UnknownTopicOrPartition),
                }
            }
            // Topic ids are not secret (Kafka answers TOPIC_AUTHORIZATION_FAILED with the id).
            None => match broker.topics.get_by_id(&wanted.topic_id) {
                Some(t) if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, &t.name) => {
                    Err(ResponseError::TopicAuthorizationFailed)
                }
                Some(t) => Ok(t),
                None => Err(ResponseError::UnknownTopicId),
            },
        };
        resp.topics.push(match topic {
            Ok(t) => describe(ctx, &t, include_ops),
            Err(e) => {
                let mut t = MetadataResponseTopic::default();
                t.error_code = e.code();
                t.name = wanted.name.clone();
                if ctx.version >= 10 && wanted.name.is_none() {
                    t.topic_id = wanted.topic_id;
                }
                t.topic_authorized_operations = OPERATIONS_OMITTED;
                t
            }
        });
    }
    resp
}

fn brokers(ctx: &Ctx<'_>) -> Vec<MetadataResponseBroker> {
    let listener = ctx.broker.config.advertised_listeners().into_iter().next();
    let mut b = MetadataResponseBroker::default();
    b.node_id = BrokerId(ctx.broker.node_id);
    if let Some(l) = listener {
        b.host = StrBytes::from_string(l.host);
        b.port = l.port as i32;
    }
    b.rack = ctx
        .broker
        .config
        .get("broker.rack")
        .filter(|r| !r.is_empty())
        .map(StrBytes::from_string);
    vec![b]
}

fn describe(ctx: &Ctx<'_>, topic: &Topic, include_ops: bool) -> MetadataResponseTopic {
    let node = BrokerId(ctx.broker.node_id);
    let mut t = MetadataResponseTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(topic.name.clone())));
    if ctx.version >= 10 {
        t.topic_id = topic.id;
    }
    if ctx.version >= 1 {
        t.is_internal = topic.is_internal();
    }
    t.topic_authorized_operations = if include_ops {
        ctx.authorized_operations(ResourceType::Topic, &topic.name)
    } else {
        OPERATIONS_OMITTED
    };
    t.partitions = topic
        .partitions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut mp = MetadataResponsePartition::default();
            mp.partition_index = i as i32;
            mp.leader_id = node;
            if ctx.version >= 7 {
                mp.leader_epoch = p.leader_epoch();
            }
            mp.replica_nodes = vec![node];
            mp.isr_nodes = vec![node];
            mp
        })
        .collect();
    t
}
