//! Kafka's internal topics (`__consumer_offsets`, `__transaction_state`): created on first use
//! (FindCoordinator, AddOffsetsToTxn), as Kafka's coordinators create them, through the active
//! controller like any topic, so that every broker agrees on where each partition lives and
//! so on which broker coordinates each group and transactional id.

use std::time::Duration;

use kafka_protocol::ResponseError;
use samsa_cluster::controller::CreatableTopic;

use crate::config::topic::TopicOverrides;
use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::node::Node;

/// A coordinator's states of a partition of its internal topic: another broker leads it, it
/// is being loaded (or unloaded), or this broker coordinates its keys. Whoever moves a
/// partition to [`LOADING`] owns it until it moves it on.
pub const NOT_COORDINATOR: u8 = 0;
pub const LOADING: u8 = 1;
pub const LOADED: u8 = 2;

/// How long a first use may wait for the topic to be created and installed here.
const CREATE_TIMEOUT: Duration = Duration::from_secs(10);

/// How an internal topic is created.
#[derive(Debug, Clone)]
pub struct InternalTopicSpec {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: TopicOverrides,
}

/// Makes sure the internal topic exists: known to this node (the metadata image, or its own
/// registry for a topic from before the metadata log held topics), else created through the
/// controller and waited for until this broker has installed it. Errors are
/// COORDINATOR_NOT_AVAILABLE, which clients retry, with the reason logged.
pub async fn ensure(node: &Node, spec: &InternalTopicSpec) -> Result<(), ResponseError> {
    let known = |node: &Node| {
        node.topics.get(&spec.name).is_some()
            || node.controller.image().topic_by_name(&spec.name).is_some()
    };
    if known(node) {
        return Ok(());
    }
    // Kafka's default of 3 replicas, but never more than the cluster has nodes (its brokers,
    // or, on a node that is broker and controller, its voters while brokers are still
    // registering): a single node gets one, and a cluster still starting waits for its brokers
    // (the client retries) rather than getting fewer replicas than it will have. A broker-only
    // node does not count the voters, which may be controller-only nodes that never hold a
    // partition.
    let voters = node.controller.voters();
    let voter_brokers = if voters.contains_key(&node.node_id) {
        voters.len()
    } else {
        0
    };
    let nodes = node
        .controller
        .image()
        .brokers()
        .len()
        .max(voter_brokers)
        .max(1) as i16;
    let request = ControllerRequest::CreateTopics {
        topics: vec![CreatableTopic {
            name: spec.name.clone(),
            num_partitions: spec.partitions,
            replication_factor: spec.replication_factor.min(nodes).max(1),
            assignments: Vec::new(),
            configs: spec
                .configs
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
            topic_id: None,
        }],
        validate_only: false,
    };
    let created = node
        .controller
        .request_retrying(request, CREATE_TIMEOUT)
        .await;
    match created {
        Ok(ControllerReply::CreateTopics(r))
            if r.iter().all(|t| {
                t.error_code == 0 || t.error_code == ResponseError::TopicAlreadyExists.code()
            }) => {}
        Ok(ControllerReply::CreateTopics(r)) => {
            for t in r {
                tracing::warn!(topic = %t.name, code = t.error_code, message = ?t.error_message, "cannot create an internal topic");
            }
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        other => {
            tracing::warn!(topic = %spec.name, answer = ?other.err(), "cannot create an internal topic: no answer from the controller");
            return Err(ResponseError::CoordinatorNotAvailable);
        }
    }
    // Installed here, with the coordinators following its leaders, before the first use.
    crate::metadata_wait::wait_for_image(
        &node.controller,
        CREATE_TIMEOUT.as_millis() as u64,
        |image| image.topic_by_name(&spec.name).is_some(),
    )
    .await;
    crate::metadata_wait::caught_up(node, CREATE_TIMEOUT).await;
    if known(node) {
        Ok(())
    } else {
        Err(ResponseError::CoordinatorNotAvailable)
    }
}
