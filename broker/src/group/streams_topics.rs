//! The internal topics of streams groups (repartition and changelog topics), created by the
//! coordinator when a heartbeat finds them missing, as Kafka 4.4's
//! `AutoTopicCreationManager.createStreamsInternalTopics` does: with the partition count the
//! topology configuration derived, the topology's replication factor (0: the broker's
//! `default.replication.factor`) and the topology's topic configs. The member is told
//! MISSING_INTERNAL_TOPICS meanwhile and heartbeats again; a topic another member's heartbeat
//! is creating is not asked for twice.

use std::collections::HashSet;
use std::sync::Mutex;

use samsa_cluster::controller::CreatableTopic;
use samsa_streams_group::TopicInfo;

use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::node::Node;

/// Topics being created now (by node and name: tests run several nodes in one process), so
/// concurrent heartbeats ask once.
static IN_FLIGHT: Mutex<Option<HashSet<(i32, String)>>> = Mutex::new(None);

/// Asks the controller for `topics`; failures are logged (the next heartbeat asks again).
pub async fn create_internal_topics(node: &Node, group_id: &str, topics: &[TopicInfo]) {
    let mine: Vec<&TopicInfo> = {
        let mut guard = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
        let set = guard.get_or_insert_with(HashSet::new);
        topics
            .iter()
            .filter(|t| {
                node.topics.get(&t.name).is_none() && set.insert((node.node_id, t.name.clone()))
            })
            .collect()
    };
    if mine.is_empty() {
        return;
    }
    let request = ControllerRequest::CreateTopics {
        topics: mine
            .iter()
            .map(|t| CreatableTopic {
                name: t.name.clone(),
                num_partitions: t.partitions,
                replication_factor: if t.replication_factor > 0 {
                    t.replication_factor
                } else {
                    -1
                },
                assignments: Vec::new(),
                configs: t
                    .configs
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone())))
                    .collect(),
                topic_id: None,
            })
            .collect(),
        validate_only: false,
    };
    let timeout = std::time::Duration::from_secs(10);
    match node.controller.request_retrying(request, timeout).await {
        Ok(ControllerReply::CreateTopics(results)) => {
            for r in results {
                if r.error_code == 0 {
                    tracing::info!(group = group_id, topic = %r.name, "created an internal topic of the streams group");
                } else if r.error_code != kafka_protocol::ResponseError::TopicAlreadyExists.code() {
                    tracing::warn!(group = group_id, topic = %r.name, code = r.error_code, message = ?r.error_message, "could not create an internal topic of the streams group");
                }
            }
        }
        Ok(_) | Err(_) => {
            tracing::warn!(
                group = group_id,
                "could not create the streams group's internal topics: no controller answered"
            );
        }
    }
    let mut guard = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(set) = guard.as_mut() {
        for t in mine {
            set.remove(&(node.node_id, t.name.clone()));
        }
    }
}
