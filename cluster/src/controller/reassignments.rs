//! AlterPartitionReassignments (KIP-455) as the active controller takes it (Kafka's
//! `ReplicationControlManager.alterPartitionReassignments`), and ListPartitionReassignments,
//! which any node answers from its image. The rules for one partition are
//! [`crate::reassignment`]'s.
//!
//! Each partition is answered on its own (an error for one does not stop the others); the
//! records of the successful ones are written together. A partition named twice in one request
//! is checked against the change made for it earlier in the request (Kafka checks both against
//! the state before the request and writes both records, the second relative to a state the
//! first has already changed).

use super::partitions::{
    change_record, partition_state, unclean_leader_election_enabled, ImageLiveness,
};
use super::{Controller, ControllerError};
use crate::metadata::image::PartitionRegistration;
use crate::metadata::records::{MetadataRecord, PartitionChangeRecord};
use crate::metadata::MetadataImage;
use crate::reassignment::{self, ReassignmentError};
use crate::NodeId;

/// One partition to move: `replicas` the target, or `None` to cancel its reassignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignablePartition {
    pub partition_index: i32,
    pub replicas: Option<Vec<NodeId>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignableTopic {
    pub name: String,
    pub partitions: Vec<ReassignablePartition>,
}

/// An AlterPartitionReassignments request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsRequest {
    /// KIP-860 (request version 1): false refuses a target whose size differs from the
    /// replication factor. Always true for version 0.
    pub allow_replication_factor_change: bool,
    pub topics: Vec<ReassignableTopic>,
}

/// One partition's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentResult {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentTopicResult {
    pub name: String,
    pub partitions: Vec<ReassignmentResult>,
}

/// A reassignment in progress, as ListPartitionReassignments reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OngoingReassignment {
    pub partition_index: i32,
    pub replicas: Vec<NodeId>,
    pub adding_replicas: Vec<NodeId>,
    pub removing_replicas: Vec<NodeId>,
}

impl Controller {
    /// AlterPartitionReassignments: starts, replaces or cancels the reassignment of each
    /// partition named. Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION; the
    /// other refusals are [`ReassignmentError`]'s.
    pub fn alter_partition_reassignments(
        &self,
        image: &MetadataImage,
        request: &AlterPartitionReassignmentsRequest,
    ) -> Result<(Vec<MetadataRecord>, Vec<ReassignmentTopicResult>), ControllerError> {
        self.check_active()?;
        // Each change applies to `work` at once, so that a partition named again is checked
        // against the first change (whose record the second one follows).
        let mut work = image.clone();
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(request.topics.len());
        for t in &request.topics {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let outcome =
                    self.reassign_one(&work, &t.name, p, request.allow_replication_factor_change);
                partitions.push(match outcome {
                    Ok(record) => {
                        if let Some(record) = record {
                            let record: MetadataRecord = record.into();
                            work.apply(&record).expect(
                                "a reassignment's record applies to the image it came from",
                            );
                            records.push(record);
                        }
                        ReassignmentResult {
                            partition_index: p.partition_index,
                            error_code: 0,
                            error_message: None,
                        }
                    }
                    Err((error_code, message)) => ReassignmentResult {
                        partition_index: p.partition_index,
                        error_code,
                        error_message: (!message.is_empty()).then_some(message),
                    },
                });
            }
            results.push(ReassignmentTopicResult {
                name: t.name.clone(),
                partitions,
            });
        }
        if records.len() > super::MAX_RECORDS_PER_USER_OP {
            return Err(ControllerError::BatchTooLarge {
                records: records.len(),
            });
        }
        Ok((records, results))
    }

    /// One partition of AlterPartitionReassignments: its record, if anything changes.
    fn reassign_one(
        &self,
        image: &MetadataImage,
        topic_name: &str,
        p: &ReassignablePartition,
        allow_replication_factor_change: bool,
    ) -> Result<Option<PartitionChangeRecord>, (i16, String)> {
        let unknown = |message: String| {
            (
                kafka_protocol::ResponseError::UnknownTopicOrPartition.code(),
                message,
            )
        };
        let topic = image
            .topic_by_name(topic_name)
            .ok_or_else(|| unknown(format!("Unable to find a topic named {topic_name}.")))?;
        let reg = topic.partition(p.partition_index).ok_or_else(|| {
            unknown(format!(
                "Unable to find partition {topic_name}:{}.",
                p.partition_index
            ))
        })?;
        let liveness = ImageLiveness(image);
        let state = partition_state(reg);
        let next = match &p.replicas {
            Some(target) => reassignment::reassign(
                &state,
                target,
                allow_replication_factor_change,
                |b| image.broker(b).is_some(),
                &liveness,
            ),
            None => reassignment::cancel(
                &state,
                unclean_leader_election_enabled(image, &self.cfg, topic_name),
                &liveness,
            ),
        }
        .map_err(|e: ReassignmentError| {
            // Kafka drops a message that only repeats its error's own description (its
            // `ApiError.fromThrowable`), as for a cancellation with nothing in progress.
            let message = match e {
                ReassignmentError::NoReassignmentInProgress => String::new(),
                _ => e.to_string(),
            };
            (e.error_code(), message)
        })?;
        Ok(next.map(|next| change_record(image, topic.id, reg, &next)))
    }
}

/// ListPartitionReassignments from `image` (Kafka's `listPartitionReassignments`): every
/// partition being reassigned (`topics` `None`), or those of the partitions asked for that are;
/// unknown topics and partitions are left out. Topics with none are not listed.
pub fn list_partition_reassignments(
    image: &MetadataImage,
    topics: Option<&[(String, Vec<i32>)]>,
) -> Vec<(String, Vec<OngoingReassignment>)> {
    let ongoing = |p: &PartitionRegistration| OngoingReassignment {
        partition_index: p.partition_id,
        replicas: p.replicas.to_vec(),
        adding_replicas: p.adding_replicas.to_vec(),
        removing_replicas: p.removing_replicas.to_vec(),
    };
    let reassigning = |p: &PartitionRegistration| {
        !p.adding_replicas.is_empty() || !p.removing_replicas.is_empty()
    };
    let mut out = Vec::new();
    match topics {
        None => {
            for t in image.topics() {
                let parts: Vec<OngoingReassignment> = t
                    .partitions()
                    .iter()
                    .filter(|p| reassigning(p))
                    .map(ongoing)
                    .collect();
                if !parts.is_empty() {
                    out.push((t.name.to_string(), parts));
                }
            }
        }
        Some(asked) => {
            for (name, indexes) in asked {
                let Some(t) = image.topic_by_name(name) else {
                    continue;
                };
                let parts: Vec<OngoingReassignment> = indexes
                    .iter()
                    .filter_map(|&i| t.partition(i))
                    .filter(|p| reassigning(p))
                    .map(ongoing)
                    .collect();
                if !parts.is_empty() {
                    out.push((t.name.to_string(), parts));
                }
            }
        }
    }
    out
}
