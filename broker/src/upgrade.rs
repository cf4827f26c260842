//! What a node kept in files of its own before the metadata log held it, imported into the
//! metadata log on its first start under a release that has the log, so that no user loses a
//! topic to the upgrade. A node's own topics (`samsa-topics.json`: the user's, and the
//! internal `__consumer_offsets` and `__transaction_state`) become topics of the cluster with
//! the same ids, names, partition counts and configs, every partition placed on this node; the
//! publisher then adopts the logs already on disk. Producer ids this node handed out itself
//! are skipped by the blocks the controller gives (`txn::producer_ids`).
//!
//! The import runs once the broker is registered and unfenced (placement needs a live broker),
//! before a single node serves and in the background on a node of a larger cluster. It is
//! idempotent: a topic the image already has under the same id is not asked for again, and one
//! whose name the cluster already uses for another topic stays this node's own, with a warning,
//! until an operator deletes one of them.

use std::time::Duration;

use samsa_cluster::controller::{CreatableTopic, MAX_PARTITIONS_PER_REQUEST};

use crate::controller::active::{ControllerReply, ControllerRequest};
use crate::server::Broker;

/// How long one import request may take.
const IMPORT_TIMEOUT: Duration = Duration::from_secs(30);

/// Imports this node's own topics; returns how many the metadata log took.
pub async fn import_topics(broker: &Broker) -> usize {
    let image = broker.controller.image();
    let mut batches: Vec<Vec<CreatableTopic>> = vec![Vec::new()];
    let mut partitions_in_batch = 0usize;
    for t in broker.topics.all().into_iter().filter(|t| !t.managed) {
        if image.topic_by_id(&t.id).is_some() {
            continue;
        }
        if let Some(other) = image.topic_by_name(&t.name) {
            tracing::warn!(
                topic = %t.name,
                id = %t.id,
                cluster_id_of_name = %other.id,
                "this node's own topic has the name of another topic of the cluster: it stays this node's alone (delete one of them to resolve it)"
            );
            continue;
        }
        let count = t.partition_count.max(0) as usize;
        if partitions_in_batch + count > MAX_PARTITIONS_PER_REQUEST && partitions_in_batch > 0 {
            batches.push(Vec::new());
            partitions_in_batch = 0;
        }
        partitions_in_batch += count;
        batches.last_mut().expect("one batch").push(CreatableTopic {
            name: t.name.clone(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: (0..t.partition_count)
                .map(|i| (i, vec![broker.node_id]))
                .collect(),
            configs: t
                .overrides
                .read()
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
            topic_id: Some(t.id),
        });
    }
    let mut imported = Vec::new();
    for batch in batches.into_iter().filter(|b| !b.is_empty()) {
        let request = ControllerRequest::CreateTopics {
            topics: batch,
            validate_only: false,
        };
        match broker
            .controller
            .request_retrying(request, IMPORT_TIMEOUT)
            .await
        {
            Ok(ControllerReply::CreateTopics(results)) => {
                for r in results {
                    if r.error_code == 0 {
                        tracing::info!(topic = %r.name, id = %r.topic_id, partitions = r.num_partitions, "imported this node's topic into the metadata log");
                        imported.push(r.topic_id);
                    } else {
                        tracing::warn!(topic = %r.name, code = r.error_code, message = ?r.error_message, "cannot import this node's topic into the metadata log; it stays this node's alone");
                    }
                }
            }
            other => {
                tracing::warn!(answer = ?other.err(), "cannot import this node's topics into the metadata log now; the next start tries again")
            }
        }
    }
    // Answered once the logs are adopted here, so that the broker serves them as the cluster's.
    crate::handlers::wait_for_image(broker, IMPORT_TIMEOUT.as_millis() as u64, |image| {
        imported.iter().all(|id| image.topic_by_id(id).is_some())
    })
    .await;
    crate::publisher::caught_up(broker, IMPORT_TIMEOUT).await;
    imported.len()
}
