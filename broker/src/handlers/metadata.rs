//! Metadata: live brokers, cluster id, controller, and for each topic asked for its partitions
//! with leader, leader epoch, replicas, ISR and offline replicas, from the committed metadata
//! image (see [`crate::cluster_view`]), so that every broker answers alike. Topics named here are
//! created when `auto.create.topics.enable` is on and the client allows it (always before v4),
//! as Kafka does, through the active controller; unlike Kafka, the answer waits for the
//! creation, so the first answer already has the partitions instead of LEADER_NOT_AVAILABLE.
//! As in Kafka, topic ids before v12 fail the whole request (INVALID_REQUEST), a topic named
//! twice is answered once, and a topic that does not exist is still internal by its name.
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
use samsa_cluster::controller::CreatableTopic;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::cluster_view::{ClusterView, TopicView};
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::topics::is_internal_topic;

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_OMITTED: i32 = i32::MIN;

pub async fn handle(ctx: &Ctx<'_>, req: MetadataRequest) -> MetadataResponse {
    let node = ctx.node();
    let mut resp = MetadataResponse::default();
    let mut view = ClusterView::for_listener(node, &ctx.conn.listener.name);
    // Fields a version lacks must stay at their defaults, or the encoder refuses the response.
    if ctx.version >= 2 {
        resp.cluster_id = Some(StrBytes::from_string(node.cluster_id.clone()));
    }
    if ctx.version >= 1 {
        resp.controller_id = BrokerId(view.controller_id());
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
        resp.topics = view
            .topics()
            .iter()
            .filter(|t| ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.name()))
            .map(|t| describe(ctx, &view, t, include_ops))
            .collect();
        resp.brokers = brokers(&view);
        return resp;
    }
    let wanted = req.topics.unwrap_or_default();
    // Kafka refuses topic ids (and the null names they come with) before v12 for the whole
    // request, with its generic error answer: every topic named back with INVALID_REQUEST,
    // no brokers, no cluster id, no controller.
    if ctx.version < 12
        && wanted
            .iter()
            .any(|t| t.name.is_none() || !t.topic_id.is_nil())
    {
        return topic_ids_refused(ctx.version, &wanted);
    }
    // Kafka looks topics up by id as soon as one id is given (entries without one are then
    // ignored), and by name otherwise; either way a topic named twice is answered once.
    if wanted.iter().any(|t| !t.topic_id.is_nil()) {
        let mut ids: Vec<uuid::Uuid> = wanted
            .iter()
            .map(|t| t.topic_id)
            .filter(|id| !id.is_nil())
            .collect();
        dedup_in_order(&mut ids);
        for id in ids {
            resp.topics.push(match view.topic_by_id(&id) {
                // Topic ids are not secret (Kafka answers TOPIC_AUTHORIZATION_FAILED with the id).
                Some(t)
                    if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.name()) =>
                {
                    refused_by_id(ResponseError::TopicAuthorizationFailed, id)
                }
                Some(t) => describe(ctx, &view, &t, include_ops),
                None => refused_by_id(ResponseError::UnknownTopicId, id),
            });
        }
        resp.brokers = brokers(&view);
        return resp;
    }
    let mut names: Vec<Option<TopicName>> = wanted.into_iter().map(|t| t.name).collect();
    dedup_in_order(&mut names);

    let allow_auto_create = (ctx.version < 4 || req.allow_auto_topic_creation)
        && node.config.bool("auto.create.topics.enable");
    // Topics to create first, through the controller, all in one request.
    let missing: Vec<String> = names
        .iter()
        .filter_map(|n| n.as_ref().map(|n| n.to_string()))
        .filter(|name| {
            allow_auto_create
                && view.topic(name).is_none()
                && !is_internal_topic(name)
                && samsa_storage::is_valid_topic_name(name)
                && ctx.authorize(AclOperation::Describe, ResourceType::Topic, name)
                && (ctx.authorize(AclOperation::Create, ResourceType::Cluster, CLUSTER_NAME)
                    || ctx.authorize(AclOperation::Create, ResourceType::Topic, name))
        })
        .collect();
    let mut not_created = std::collections::HashMap::new();
    if !missing.is_empty() {
        not_created = auto_create(ctx, &missing).await;
        view = ClusterView::for_listener(node, &ctx.conn.listener.name);
    }
    for name in names {
        let Some(name) = name else {
            // A v12+ entry with neither name nor id.
            resp.topics.push(refused_by_id(
                ResponseError::UnknownTopicId,
                uuid::Uuid::nil(),
            ));
            continue;
        };
        let name_str = name.as_str();
        // Named topics the caller may not describe are refused whether they exist or not,
        // and without a word on whether they are internal.
        if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, name_str) {
            resp.topics.push(refused(
                ctx,
                name,
                ResponseError::TopicAuthorizationFailed,
                false,
            ));
            continue;
        }
        let error = match view.topic(name_str) {
            Some(t) => {
                resp.topics.push(describe(ctx, &view, &t, include_ops));
                continue;
            }
            None if not_created.contains_key(name_str) => not_created[name_str],
            None if !samsa_storage::is_valid_topic_name(name_str) => {
                ResponseError::InvalidTopicException
            }
            // Auto-creation needs CREATE on the cluster or on the topic.
            None if allow_auto_create && !is_internal_topic(name_str) => {
                ResponseError::TopicAuthorizationFailed
            }
            None => ResponseError::UnknownTopicOrPartition,
        };
        // As Kafka, a topic that does not exist is still judged internal by its name, and
        // (unless refused for lack of CREATE) gets the caller's operations on it.
        let internal = is_internal_topic(name_str);
        let mut t = refused(ctx, name.clone(), error, internal);
        if include_ops && error != ResponseError::TopicAuthorizationFailed {
            t.topic_authorized_operations =
                ctx.authorized_operations(ResourceType::Topic, name_str);
        }
        resp.topics.push(t);
    }
    resp.brokers = brokers(&view);
    resp
}

/// The answer to a request Kafka refuses as a whole (INVALID_REQUEST): each topic asked for, by
/// its name ("" when it has none) and id, with the error, and nothing else.
fn topic_ids_refused(
    version: i16,
    wanted: &[kafka_protocol::messages::metadata_request::MetadataRequestTopic],
) -> MetadataResponse {
    let mut resp = MetadataResponse::default();
    resp.topics = wanted
        .iter()
        .map(|w| {
            let mut t = MetadataResponseTopic::default();
            t.error_code = ResponseError::InvalidRequest.code();
            t.name = Some(w.name.clone().unwrap_or_default());
            if version >= 10 {
                t.topic_id = w.topic_id;
            }
            t
        })
        .collect();
    resp
}

/// A topic asked for by id and not described: no name, the id, the error.
fn refused_by_id(error: ResponseError, id: uuid::Uuid) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.error_code = error.code();
    t.name = None;
    t.topic_id = id;
    t
}

/// A topic asked for by name and not described (its id stays zero, as Kafka's).
fn refused(
    ctx: &Ctx<'_>,
    name: TopicName,
    error: ResponseError,
    internal: bool,
) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.error_code = error.code();
    t.name = Some(name);
    if ctx.version >= 1 {
        t.is_internal = internal;
    }
    t
}

/// Keeps the first of equal entries, in request order (Kafka collects them in a set).
fn dedup_in_order<T: Eq + std::hash::Hash + Clone>(items: &mut Vec<T>) {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.retain(|i| seen.insert(i.clone()));
}

/// Creates `names` with the broker's defaults through the active controller and waits until
/// this broker's image has them; returns the error of each topic that was not created (a topic
/// created meanwhile by someone else counts as created).
async fn auto_create(
    ctx: &Ctx<'_>,
    names: &[String],
) -> std::collections::HashMap<String, ResponseError> {
    let node = ctx.node();
    let request = ControllerRequest::CreateTopics {
        topics: names
            .iter()
            .map(|n| CreatableTopic {
                name: n.clone(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: Vec::new(),
                configs: Vec::new(),
                topic_id: None,
            })
            .collect(),
        validate_only: false,
    };
    let timeout = std::time::Duration::from_secs(10);
    let mut failed = std::collections::HashMap::new();
    match node.controller.request_retrying(request, timeout).await {
        Ok(ControllerReply::CreateTopics(results)) => {
            for r in results {
                if r.error_code != 0 && r.error_code != ResponseError::TopicAlreadyExists.code() {
                    tracing::debug!(topic = %r.name, code = r.error_code, message = ?r.error_message, "auto-creation refused");
                    failed.insert(
                        r.name,
                        ResponseError::try_from_code(r.error_code)
                            .unwrap_or(ResponseError::UnknownServerError),
                    );
                }
            }
        }
        Ok(_) | Err(_) => {
            // No controller to ask (a majority of voters down): the client retries.
            for n in names {
                failed.insert(n.clone(), ResponseError::LeaderNotAvailable);
            }
        }
    }
    crate::metadata_wait::wait_for_image(&node.controller, 5_000, |image| {
        names
            .iter()
            .all(|n| failed.contains_key(n) || image.topic_by_name(n).is_some())
    })
    .await;
    // And until the partitions placed here are installed, so that a Produce right after
    // this answer finds them.
    let image = node.controller.image();
    let hosted: Vec<&String> = names
        .iter()
        .filter(|n| {
            image.topic_by_name(n).is_some_and(|t| {
                t.partitions()
                    .iter()
                    .any(|p| p.replicas.contains(&node.node_id))
            })
        })
        .collect();
    crate::metadata_wait::wait_for_topics(&node.topics, 5_000, |topics| {
        hosted.iter().all(|n| topics.get(n).is_some())
    })
    .await;
    failed
}

fn brokers(view: &ClusterView<'_>) -> Vec<MetadataResponseBroker> {
    view.live_brokers()
        .map(|n| {
            let mut b = MetadataResponseBroker::default();
            b.node_id = BrokerId(n.id);
            b.host = StrBytes::from_string(n.host.clone());
            b.port = n.port;
            b.rack = n.rack.clone().map(StrBytes::from_string);
            b
        })
        .collect()
}

fn describe(
    ctx: &Ctx<'_>,
    view: &ClusterView<'_>,
    topic: &TopicView,
    include_ops: bool,
) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(topic.name().to_string())));
    if ctx.version >= 10 {
        t.topic_id = topic.id();
    }
    if ctx.version >= 1 {
        t.is_internal = topic.is_internal();
    }
    t.topic_authorized_operations = if include_ops {
        ctx.authorized_operations(ResourceType::Topic, topic.name())
    } else {
        OPERATIONS_OMITTED
    };
    let ids = |v: &[i32]| v.iter().map(|&b| BrokerId(b)).collect::<Vec<_>>();
    t.partitions = view
        .partitions(topic)
        .into_iter()
        .map(|p| {
            let mut mp = MetadataResponsePartition::default();
            mp.partition_index = p.index;
            match p.leader {
                Some(l) => mp.leader_id = BrokerId(l),
                None => {
                    mp.error_code = ResponseError::LeaderNotAvailable.code();
                    mp.leader_id = BrokerId(-1);
                }
            }
            if ctx.version >= 7 {
                mp.leader_epoch = p.leader_epoch;
            }
            mp.replica_nodes = ids(&p.replicas);
            mp.isr_nodes = ids(&p.isr);
            if ctx.version >= 5 {
                mp.offline_replicas = ids(&p.offline);
            }
            mp
        })
        .collect();
    t
}
