//! Between the group's [`Record`]s and Kafka's record types in `__consumer_offsets`
//! ([`super::records`]): what a heartbeat writes, and what a load reads back.

use std::collections::HashMap;

use super::group::{AssignmentEpochs, ConsumerGroup, Member, Record};
use super::reconcile::{Current, Partitions};
use super::records::{
    ConsumerRecordKey as K, ConsumerRecordValue as V, CurrentAssignmentValue,
    MemberSubscriptionValue, MetadataValue, PartitionEpochs, TargetAssignmentMetadataValue,
};
use crate::group::records::CoordinatorRecord;

/// The record of `group` that `r` asks written.
pub fn coordinator_record(group: &str, r: Record) -> CoordinatorRecord {
    let g = group.to_string();
    let (key, value) = match r {
        Record::GroupEpoch(epoch) => (
            K::Metadata { group: g },
            epoch.map(|epoch| {
                V::Metadata(MetadataValue {
                    epoch,
                    metadata_hash: 0,
                })
            }),
        ),
        Record::TargetEpoch(epoch) => (
            K::TargetAssignmentMetadata { group: g },
            epoch.map(|(assignment_epoch, assignment_timestamp_ms)| {
                V::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                    assignment_epoch,
                    assignment_timestamp_ms,
                })
            }),
        ),
        Record::Member(member_id, m) => (
            K::MemberMetadata {
                group: g,
                member_id,
            },
            m.map(|m| {
                V::MemberMetadata(MemberSubscriptionValue {
                    instance_id: m.instance_id,
                    rack_id: m.rack_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    subscribed_topic_names: m.subscribed_names.into_iter().collect(),
                    subscribed_topic_regex: m.subscribed_regex,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    server_assignor: m.server_assignor,
                    classic_member_metadata: m.classic,
                })
            }),
        ),
        Record::TargetMember(member_id, p) => (
            K::TargetAssignmentMember {
                group: g,
                member_id,
            },
            p.map(V::TargetAssignmentMember),
        ),
        Record::CurrentAssignment(member_id, c) => (
            K::CurrentMemberAssignment {
                group: g,
                member_id,
            },
            c.map(|(c, epochs)| {
                V::CurrentMemberAssignment(CurrentAssignmentValue {
                    member_epoch: c.member_epoch,
                    previous_member_epoch: c.previous_member_epoch,
                    state: c.state,
                    assigned: with_epochs(&c.assigned, &epochs, c.member_epoch),
                    pending_revocation: with_epochs(&c.pending_revocation, &epochs, c.member_epoch),
                })
            }),
        ),
    };
    CoordinatorRecord::consumer(key, value)
}

/// `partitions` with each one's assignment epoch (`default` for one without).
fn with_epochs(
    partitions: &Partitions,
    epochs: &AssignmentEpochs,
    default: i32,
) -> PartitionEpochs {
    partitions
        .iter()
        .map(|(t, ps)| {
            let e = ps
                .iter()
                .map(|p| (*p, epochs.get(&(*t, *p)).copied().unwrap_or(default)))
                .collect();
            (*t, e)
        })
        .collect()
}

/// Consumer groups being rebuilt from one partition's log.
#[derive(Debug, Default)]
pub struct Replay {
    pub groups: HashMap<String, ConsumerGroup>,
}

impl Replay {
    /// One record, in log order.
    pub fn apply(&mut self, key: K, value: Option<V>) {
        let id = key.group().to_string();
        if matches!((&key, &value), (K::Metadata { .. }, None)) {
            // The group was deleted.
            self.groups.remove(&id);
            return;
        }
        let record = match (key, value) {
            (K::Metadata { .. }, Some(V::Metadata(v))) => Record::GroupEpoch(Some(v.epoch)),
            (K::TargetAssignmentMetadata { .. }, v) => Record::TargetEpoch(match v {
                Some(V::TargetAssignmentMetadata(v)) => {
                    Some((v.assignment_epoch, v.assignment_timestamp_ms))
                }
                _ => None,
            }),
            (K::MemberMetadata { member_id, .. }, Some(V::MemberMetadata(v))) => Record::Member(
                member_id.clone(),
                Some(Box::new(Member {
                    member_id,
                    instance_id: v.instance_id,
                    rack_id: v.rack_id,
                    client_id: v.client_id,
                    client_host: v.client_host,
                    subscribed_names: v.subscribed_topic_names.into_iter().collect(),
                    subscribed_regex: v.subscribed_topic_regex,
                    server_assignor: v.server_assignor,
                    rebalance_timeout_ms: v.rebalance_timeout_ms,
                    current: Current::joining(),
                    assignment_epochs: AssignmentEpochs::new(),
                    classic: v.classic_member_metadata,
                })),
            ),
            (K::MemberMetadata { member_id, .. }, None) => Record::Member(member_id, None),
            (K::TargetAssignmentMember { member_id, .. }, Some(V::TargetAssignmentMember(p))) => {
                Record::TargetMember(member_id, Some(p))
            }
            (K::TargetAssignmentMember { member_id, .. }, None) => {
                Record::TargetMember(member_id, None)
            }
            (K::CurrentMemberAssignment { member_id, .. }, Some(V::CurrentMemberAssignment(v))) => {
                let epochs: AssignmentEpochs = v
                    .assigned
                    .iter()
                    .chain(&v.pending_revocation)
                    .flat_map(|(t, ps)| ps.iter().map(move |(p, e)| ((*t, *p), *e)))
                    .collect();
                Record::CurrentAssignment(
                    member_id,
                    Some((
                        Current {
                            state: v.state,
                            member_epoch: v.member_epoch,
                            previous_member_epoch: v.previous_member_epoch,
                            assigned: v.assigned_partitions(),
                            pending_revocation: v.pending_revocation_partitions(),
                        },
                        epochs,
                    )),
                )
            }
            (K::CurrentMemberAssignment { member_id, .. }, None) => {
                Record::CurrentAssignment(member_id, None)
            }
            // Partition metadata (replaced by the metadata hash) and resolved regular
            // expressions are recomputed from the metadata image.
            _ => return,
        };
        self.groups
            .entry(id.clone())
            .or_insert_with(|| ConsumerGroup::new(&id))
            .replay(record);
    }
}
