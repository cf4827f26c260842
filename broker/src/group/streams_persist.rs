//! Between a streams group's [`Record`]s and Kafka's streams group records in
//! `__consumer_offsets` (types 17 and 19-23, `samsa_streams_group::records`): what a heartbeat
//! writes, and what a load reads back.

use std::collections::BTreeMap;

use samsa_streams_group::group::{Endpoint, GroupMeta, Member, Record, StreamsGroup};
use samsa_streams_group::reconcile::{ActiveTasks, Assigned, Current, MemberState};
use samsa_streams_group::records::{
    CurrentMemberAssignmentValue, MemberMetadataValue, MetadataValue, StreamsRecordKey as K,
    StreamsRecordValue as V, TargetAssignmentMemberValue, TargetAssignmentMetadataValue,
    TaskEpochs, TopologyValue,
};
use samsa_streams_group::TaskSet;

use super::records::CoordinatorRecord;

/// The record of `group` that `r` asks written.
pub fn coordinator_record(group: &str, r: Record) -> CoordinatorRecord {
    let g = group.to_string();
    let (key, value) = match r {
        Record::Metadata(m) => (
            K::Metadata { group: g },
            m.map(|m| {
                V::Metadata(MetadataValue {
                    epoch: m.epoch,
                    metadata_hash: m.metadata_hash,
                    validated_topology_epoch: m.validated_topology_epoch,
                    last_assignment_configs: Some(m.assignment_configs),
                    ..Default::default()
                })
            }),
        ),
        Record::Member(member_id, m) => (
            K::MemberMetadata {
                group: g,
                member_id,
            },
            m.map(|m| {
                V::MemberMetadata(MemberMetadataValue {
                    instance_id: m.instance_id,
                    rack_id: m.rack_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    topology_epoch: m.topology_epoch,
                    process_id: m.process_id,
                    user_endpoint: m.user_endpoint.map(|e| samsa_protocol::streams::Endpoint {
                        host: e.host,
                        port: e.port,
                    }),
                    client_tags: m.client_tags,
                    ..Default::default()
                })
            }),
        ),
        Record::TargetEpoch(e) => (
            K::TargetAssignmentMetadata { group: g },
            e.map(|(assignment_epoch, assignment_timestamp_ms)| {
                V::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                    assignment_epoch,
                    assignment_timestamp_ms,
                    ..Default::default()
                })
            }),
        ),
        Record::TargetMember(member_id, t) => (
            K::TargetAssignmentMember {
                group: g,
                member_id,
            },
            t.map(|tasks| {
                V::TargetAssignmentMember(TargetAssignmentMemberValue {
                    tasks,
                    ..Default::default()
                })
            }),
        ),
        Record::CurrentAssignment(member_id, c) => (
            K::CurrentMemberAssignment {
                group: g,
                member_id,
            },
            c.map(|c| V::CurrentMemberAssignment(current_value(&c))),
        ),
        Record::Topology(t) => (
            K::Topology { group: g },
            t.map(|topology| {
                V::Topology(TopologyValue {
                    topology,
                    ..Default::default()
                })
            }),
        ),
    };
    CoordinatorRecord::streams(key, value)
}

fn active_epochs(active: &ActiveTasks) -> Vec<TaskEpochs> {
    let set: TaskSet = active
        .iter()
        .map(|(s, p)| (s.clone(), p.keys().copied().collect()))
        .collect();
    TaskEpochs::from_set(&set, |s, p| active.get(s).and_then(|x| x.get(&p)).copied())
}

fn plain(set: &TaskSet) -> Vec<TaskEpochs> {
    TaskEpochs::from_set(set, |_, _| None)
}

fn current_value(c: &Current) -> CurrentMemberAssignmentValue {
    CurrentMemberAssignmentValue {
        member_epoch: c.member_epoch,
        previous_member_epoch: c.previous_member_epoch,
        state: c.state.code(),
        active_tasks: active_epochs(&c.assigned.active),
        standby_tasks: plain(&c.assigned.standby),
        warmup_tasks: plain(&c.assigned.warmup),
        active_tasks_pending_revocation: active_epochs(&c.pending_revocation.active),
        standby_tasks_pending_revocation: plain(&c.pending_revocation.standby),
        warmup_tasks_pending_revocation: plain(&c.pending_revocation.warmup),
        ..Default::default()
    }
}

fn active_from(items: &[TaskEpochs], member_epoch: i32) -> ActiveTasks {
    let mut out = ActiveTasks::new();
    for ((s, p), e) in TaskEpochs::epochs(items, member_epoch) {
        out.entry(s).or_default().insert(p, e);
    }
    out
}

fn current_from(v: &CurrentMemberAssignmentValue) -> Current {
    Current {
        state: MemberState::from_code(v.state),
        member_epoch: v.member_epoch,
        previous_member_epoch: v.previous_member_epoch,
        assigned: Assigned {
            active: active_from(&v.active_tasks, v.member_epoch),
            standby: TaskEpochs::to_set(&v.standby_tasks),
            warmup: TaskEpochs::to_set(&v.warmup_tasks),
        },
        pending_revocation: Assigned {
            active: active_from(&v.active_tasks_pending_revocation, v.member_epoch),
            standby: TaskEpochs::to_set(&v.standby_tasks_pending_revocation),
            warmup: TaskEpochs::to_set(&v.warmup_tasks_pending_revocation),
        },
    }
}

/// Streams groups being rebuilt from one partition's log.
#[derive(Debug, Default)]
pub struct Replay {
    groups: BTreeMap<String, StreamsGroup>,
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
            (K::Metadata { .. }, Some(V::Metadata(v))) => Record::Metadata(Some(GroupMeta {
                epoch: v.epoch,
                metadata_hash: v.metadata_hash,
                validated_topology_epoch: v.validated_topology_epoch,
                assignment_configs: v.last_assignment_configs.unwrap_or_default(),
            })),
            (K::MemberMetadata { member_id, .. }, Some(V::MemberMetadata(v))) => Record::Member(
                member_id.clone(),
                Some(Box::new(Member {
                    member_id,
                    instance_id: v.instance_id,
                    rack_id: v.rack_id,
                    client_id: v.client_id,
                    client_host: v.client_host,
                    rebalance_timeout_ms: v.rebalance_timeout_ms,
                    topology_epoch: v.topology_epoch,
                    process_id: v.process_id,
                    user_endpoint: v.user_endpoint.map(|e| Endpoint {
                        host: e.host,
                        port: e.port,
                    }),
                    client_tags: v.client_tags,
                    current: Current::joining(),
                })),
            ),
            (K::MemberMetadata { member_id, .. }, None) => Record::Member(member_id, None),
            (K::TargetAssignmentMetadata { .. }, v) => Record::TargetEpoch(match v {
                Some(V::TargetAssignmentMetadata(v)) => {
                    Some((v.assignment_epoch, v.assignment_timestamp_ms))
                }
                _ => None,
            }),
            (K::TargetAssignmentMember { member_id, .. }, Some(V::TargetAssignmentMember(v))) => {
                Record::TargetMember(member_id, Some(v.tasks))
            }
            (K::TargetAssignmentMember { member_id, .. }, None) => {
                Record::TargetMember(member_id, None)
            }
            (K::CurrentMemberAssignment { member_id, .. }, Some(V::CurrentMemberAssignment(v))) => {
                Record::CurrentAssignment(member_id, Some(current_from(&v)))
            }
            (K::CurrentMemberAssignment { member_id, .. }, None) => {
                Record::CurrentAssignment(member_id, None)
            }
            (K::Topology { .. }, Some(V::Topology(v))) => Record::Topology(Some(v.topology)),
            (K::Topology { .. }, None) => Record::Topology(None),
            // A key with another type's value: decode pairs them, so never.
            _ => return,
        };
        self.groups
            .entry(id.clone())
            .or_insert_with(|| StreamsGroup::new(&id))
            .replay(record);
    }

    /// The groups rebuilt so far.
    pub fn take(&mut self) -> BTreeMap<String, StreamsGroup> {
        std::mem::take(&mut self.groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::records::{decode_record, encode_key, encode_value, RecordKey, RecordValue};

    fn roundtrip(r: CoordinatorRecord) -> (K, Option<V>) {
        let key = encode_key(&r.key);
        let value = r.value.as_ref().map(encode_value);
        let back = decode_record(&key, value.as_deref()).expect("decodes");
        assert_eq!(back, r);
        match (back.key, back.value) {
            (RecordKey::Streams(k), Some(RecordValue::Streams(v))) => (k, Some(v)),
            (RecordKey::Streams(k), None) => (k, None),
            other => panic!("not a streams record: {other:?}"),
        }
    }

    #[test]
    fn a_members_current_assignment_survives_the_bytes_with_its_epochs() {
        let mut active = ActiveTasks::new();
        active.entry("0".into()).or_default().insert(1, 3);
        active.entry("0".into()).or_default().insert(2, 5);
        let c = Current {
            state: MemberState::UnrevokedTasks,
            member_epoch: 5,
            previous_member_epoch: 4,
            assigned: Assigned {
                active,
                standby: [("1".to_string(), [0].into())].into(),
                warmup: TaskSet::new(),
            },
            pending_revocation: Assigned {
                active: [("0".to_string(), [(7, 2)].into())].into(),
                ..Default::default()
            },
        };
        let (k, v) = roundtrip(coordinator_record(
            "app",
            Record::CurrentAssignment("m".into(), Some(c.clone())),
        ));
        let Some(V::CurrentMemberAssignment(v)) = v else {
            panic!("{k:?}")
        };
        assert_eq!(current_from(&v), c);
        assert_eq!(v.state, 2, "Kafka's code of UNREVOKED_TASKS");
    }

    #[test]
    fn replaying_a_groups_records_and_its_deletion() {
        let mut replay = Replay::default();
        let meta = GroupMeta {
            epoch: 4,
            metadata_hash: 99,
            validated_topology_epoch: 1,
            assignment_configs: [("num.standby.replicas".into(), "0".into())].into(),
        };
        let (k, v) = roundtrip(coordinator_record("app", Record::Metadata(Some(meta))));
        replay.apply(k, v);
        let (k, v) = roundtrip(coordinator_record(
            "app",
            Record::TargetEpoch(Some((4, 1_000))),
        ));
        replay.apply(k, v);
        let groups = replay.take();
        assert_eq!(groups["app"].group_epoch(), 4);
        assert_eq!(groups["app"].assignment_epoch(), 4);
        let mut replay = Replay::default();
        let (k, v) = roundtrip(coordinator_record(
            "app",
            Record::TargetEpoch(Some((4, 1_000))),
        ));
        replay.apply(k, v);
        let (k, v) = roundtrip(coordinator_record("app", Record::Metadata(None)));
        replay.apply(k, v);
        assert!(replay.take().is_empty());
    }
}
