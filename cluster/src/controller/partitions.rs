//! Leader and ISR changes written as `PartitionChangeRecord`s: the bridge from the image's
//! partitions to the pure rules of [`crate::partition_change`], the scans that apply a rule to
//! every partition a broker change touches (Kafka's `generateLeaderAndIsrUpdates`) and
//! AlterPartition. Elections asked for or made on timers are in `elections.rs`.
//!
//! A leader elected from outside the ISR (an unclean election) puts the partition in leader
//! recovery (`leader_recovery_state` 1, KIP-704) until its leader reports it RECOVERED through
//! AlterPartition, as Kafka's `PartitionChangeBuilder` does.

use std::collections::HashMap;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{Controller, ControllerConfig, ControllerError};
use crate::metadata::image::{
    PartitionRegistration, TopicImage, CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC,
};
use crate::metadata::records::{
    MetadataRecord, PartitionChangeRecord, NO_LEADER_CHANGE, NO_LEADER_RECOVERY_STATE_CHANGE,
};
use crate::metadata::MetadataImage;
use crate::partition_change::{
    self as pc, AlterPartitionError, BrokerLiveness, IsrMember, PartitionState, NO_LEADER,
};
use crate::NodeId;

/// `leader_recovery_state`: the leader has every committed record.
pub(super) const RECOVERED: i8 = 0;
/// `leader_recovery_state`: elected uncleanly, still recovering (KIP-704).
pub(super) const RECOVERING: i8 = 1;

/// Broker liveness as the image shows it (Kafka's `ClusterControlManager.isActive`).
pub(super) struct ImageLiveness<'a>(pub(super) &'a MetadataImage);

impl BrokerLiveness for ImageLiveness<'_> {
    fn is_active(&self, broker: NodeId) -> bool {
        self.0
            .broker(broker)
            .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
    }

    fn broker_epoch(&self, broker: NodeId) -> Option<i64> {
        self.0.broker(broker).map(|b| b.epoch)
    }
}

pub(super) fn partition_state(p: &PartitionRegistration) -> PartitionState {
    PartitionState {
        replicas: p.replicas.to_vec(),
        isr: p.isr.to_vec(),
        leader: p.leader,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        adding_replicas: p.adding_replicas.to_vec(),
        removing_replicas: p.removing_replicas.to_vec(),
    }
}

/// The record that takes `old` to `next` (which `partition_change` produced from it). Only the
/// changed fields are set, so applying it gives exactly `next`'s epochs.
pub(super) fn change_record(
    image: &MetadataImage,
    topic_id: Uuid,
    old: &PartitionRegistration,
    next: &PartitionState,
) -> PartitionChangeRecord {
    // The same leader is written when only the epoch bumps (replicas leave, see
    // `partition_change`): applying a record with a leader bumps the epoch.
    let leader = if next.leader != old.leader || next.leader_epoch != old.leader_epoch {
        next.leader
    } else {
        NO_LEADER_CHANGE
    };
    assert_eq!(
        next.partition_epoch,
        old.partition_epoch + 1,
        "a change bumps the partition epoch by one"
    );
    assert_eq!(
        next.leader_epoch,
        old.leader_epoch + i32::from(leader != NO_LEADER_CHANGE),
        "the leader epoch bumps by one at most"
    );
    assert!(
        next.leader_epoch == old.leader_epoch
            || next.leader != old.leader
            || !old.replicas.iter().all(|r| next.replicas.contains(r)),
        "the leader epoch bumps only when the leader changes or replicas leave"
    );
    let unclean =
        next.leader != NO_LEADER && leader != NO_LEADER_CHANGE && !old.isr.contains(&next.leader);
    let replicas_changed = next.replicas[..] != old.replicas[..];
    PartitionChangeRecord {
        partition_id: old.partition_id,
        topic_id,
        isr: (next.isr[..] != old.isr[..]).then(|| next.isr.clone()),
        replicas: replicas_changed.then(|| next.replicas.clone()),
        directories: replicas_changed
            .then(|| directories(image, old, &next.replicas))
            .flatten(),
        adding_replicas: (next.adding_replicas[..] != old.adding_replicas[..])
            .then(|| next.adding_replicas.clone()),
        removing_replicas: (next.removing_replicas[..] != old.removing_replicas[..])
            .then(|| next.removing_replicas.clone()),
        leader,
        leader_recovery_state: if unclean && old.leader_recovery_state != RECOVERING {
            RECOVERING
        } else {
            NO_LEADER_RECOVERY_STATE_CHANGE
        },
        ..Default::default()
    }
}

/// The log directories of a new replica list (KIP-858): a replica that stays keeps its
/// directory, a new one gets its broker's default (Kafka's `setDefaultDirProvider`). `None`
/// where the partition records none (metadata versions before directory assignment).
fn directories(
    image: &MetadataImage,
    old: &PartitionRegistration,
    replicas: &[NodeId],
) -> Option<Vec<Uuid>> {
    let assigned = image
        .metadata_version()
        .is_some_and(|v| v >= super::METADATA_VERSION_DIRECTORY_ASSIGNMENT);
    if !assigned && old.directories.is_empty() {
        return None;
    }
    Some(
        replicas
            .iter()
            .map(|r| {
                old.replicas
                    .iter()
                    .position(|x| x == r)
                    .and_then(|i| old.directories.get(i).copied())
                    .unwrap_or_else(|| super::topics::default_dir(image, *r))
            })
            .collect(),
    )
}

/// `unclean.leader.election.enable` for `topic`: the topic's config, else this controller's own
/// dynamic broker config, else the cluster-wide broker default, else the static config (Kafka's
/// `uncleanLeaderElectionEnabledForTopic`, through `resolveEffectiveTopicConfig`).
pub(super) fn unclean_leader_election_enabled(
    image: &MetadataImage,
    cfg: &ControllerConfig,
    topic: &str,
) -> bool {
    const KEY: &str = "unclean.leader.election.enable";
    let lookup = |resource_type, name: &str| {
        image
            .configs(resource_type, name)
            .and_then(|c| c.get(KEY))
            .map(|v| v.eq_ignore_ascii_case("true"))
    };
    lookup(CONFIG_RESOURCE_TOPIC, topic)
        .or_else(|| lookup(CONFIG_RESOURCE_BROKER, &cfg.node_id.to_string()))
        .or_else(|| lookup(CONFIG_RESOURCE_BROKER, ""))
        .unwrap_or(cfg.unclean_leader_election_enable)
}

/// Kafka's `generateLeaderAndIsrUpdates`: runs `change` (given the partition's state and
/// whether unclean elections are enabled for its topic) over every partition `select` picks,
/// appending a `PartitionChangeRecord` for each that changes.
pub(super) fn change_partitions(
    image: &MetadataImage,
    cfg: &ControllerConfig,
    select: impl Fn(&PartitionRegistration) -> bool,
    change: impl Fn(&PartitionState, bool) -> Option<PartitionState>,
    out: &mut Vec<MetadataRecord>,
) {
    for topic in image.topics() {
        let mut unclean: Option<bool> = None;
        for p in topic.partitions().iter().filter(|p| select(p)) {
            let unclean = *unclean
                .get_or_insert_with(|| unclean_leader_election_enabled(image, cfg, &topic.name));
            if let Some(next) = change(&partition_state(p), unclean) {
                out.push(change_record(image, topic.id, p, &next).into());
            }
        }
    }
}

/// Moves leadership off `broker` and takes it out of every ISR (except as the last member):
/// what fencing, controlled shutdown, unregistration and a new incarnation all do.
pub(super) fn remove_broker_from_partitions(
    image: &MetadataImage,
    cfg: &ControllerConfig,
    broker: NodeId,
    controlled_shutdown: bool,
    out: &mut Vec<MetadataRecord>,
) {
    let liveness = ImageLiveness(image);
    change_partitions(
        image,
        cfg,
        |p| p.isr.contains(&broker),
        |s, unclean| {
            if controlled_shutdown {
                pc::handle_broker_in_controlled_shutdown(s, broker, unclean, &liveness)
            } else {
                pc::handle_broker_fenced(s, broker, unclean, &liveness)
            }
        },
        out,
    );
}

/// Elects leaders for leaderless partitions `broker` can now lead (Kafka's
/// `handleBrokerUnfenced` over `partitionsWithNoLeader`).
pub(super) fn elect_leaders_for_unfenced(
    image: &MetadataImage,
    cfg: &ControllerConfig,
    broker: NodeId,
    out: &mut Vec<MetadataRecord>,
) {
    let liveness = ImageLiveness(image);
    change_partitions(
        image,
        cfg,
        |p| p.leader == NO_LEADER && p.replicas.contains(&broker),
        |s, unclean| pc::handle_broker_unfenced(s, broker, unclean, &liveness),
        out,
    );
}

/// Whether `broker` leads any partition (Kafka's `BrokersToIsrs.hasLeaderships`).
pub(super) fn has_leaderships(image: &MetadataImage, broker: NodeId) -> bool {
    image
        .topics()
        .any(|t| t.partitions().iter().any(|p| p.leader == broker))
}

/// An AlterPartition request (Kafka's `AlterPartitionRequestData`), one leader's ISR changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionRequest {
    pub broker_id: NodeId,
    pub broker_epoch: i64,
    /// The request version: up to 1 topics are named, from 2 they are identified by id; up to 1
    /// ineligible replicas answer OPERATION_NOT_ATTEMPTED.
    pub version: i16,
    pub topics: Vec<AlterPartitionTopic>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionTopic {
    /// Version 2+.
    pub topic_id: Uuid,
    /// Versions 0-1.
    pub topic_name: String,
    pub partitions: Vec<AlterPartitionData>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionData {
    pub partition_index: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// Before version 3, `new_isr` with broker epoch -1.
    pub new_isr: Vec<IsrMember>,
    /// 0 RECOVERED, 1 RECOVERING.
    pub leader_recovery_state: i8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionTopicResult {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub partitions: Vec<AlterPartitionPartitionResult>,
}

/// One partition's answer: on success, its state once the change (if any) is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionPartitionResult {
    pub partition_index: i32,
    pub error_code: i16,
    pub leader_id: NodeId,
    pub leader_epoch: i32,
    pub isr: Vec<NodeId>,
    pub leader_recovery_state: i8,
    pub partition_epoch: i32,
}

impl AlterPartitionPartitionResult {
    fn error(partition_index: i32, error_code: i16) -> Self {
        AlterPartitionPartitionResult {
            partition_index,
            error_code,
            leader_id: NO_LEADER,
            leader_epoch: -1,
            isr: Vec::new(),
            leader_recovery_state: RECOVERED,
            partition_epoch: -1,
        }
    }
}

impl Controller {
    /// AlterPartition (Kafka's `ReplicationControlManager.alterPartition`): checks the leader's
    /// broker epoch (STALE_BROKER_EPOCH for the whole request), then each partition with
    /// [`pc::alter_partition`] plus Kafka's leader-recovery rules (a RECOVERING leader keeps
    /// the ISR to itself; RECOVERED never goes back to RECOVERING). A partition named twice is
    /// checked against the first change.
    pub fn alter_partition(
        &self,
        image: &MetadataImage,
        request: &AlterPartitionRequest,
    ) -> Result<(Vec<MetadataRecord>, Vec<AlterPartitionTopicResult>), ControllerError> {
        self.check_active()?;
        check_broker_epoch(image, request.broker_id, request.broker_epoch)?;
        let liveness = ImageLiveness(image);
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(request.topics.len());
        // Changes made earlier in this request, by (topic, partition): (state, recovery state).
        let mut changed: HashMap<(Uuid, i32), (PartitionState, i8)> = HashMap::new();
        for t in &request.topics {
            let topic: Option<&TopicImage> = if request.version > 1 {
                image.topic_by_id(&t.topic_id).map(|t| &**t)
            } else {
                image.topic_by_name(&t.topic_name).map(|t| &**t)
            };
            let mut out = AlterPartitionTopicResult {
                topic_id: t.topic_id,
                topic_name: t.topic_name.clone(),
                partitions: Vec::with_capacity(t.partitions.len()),
            };
            let Some(topic) = topic else {
                let e = if request.version > 1 {
                    ResponseError::UnknownTopicId.code()
                } else {
                    ResponseError::UnknownTopicOrPartition.code()
                };
                out.partitions.extend(
                    t.partitions
                        .iter()
                        .map(|p| AlterPartitionPartitionResult::error(p.partition_index, e)),
                );
                results.push(out);
                continue;
            };
            for data in &t.partitions {
                let Some(reg) = topic.partition(data.partition_index) else {
                    out.partitions.push(AlterPartitionPartitionResult::error(
                        data.partition_index,
                        ResponseError::UnknownTopicOrPartition.code(),
                    ));
                    continue;
                };
                let key = (topic.id, data.partition_index);
                let (state, recovery) = changed
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| (partition_state(reg), reg.leader_recovery_state));
                match alter_one(&state, recovery, request, data, &liveness) {
                    Err(code) => out.partitions.push(AlterPartitionPartitionResult::error(
                        data.partition_index,
                        code,
                    )),
                    Ok(next) => {
                        let (next_state, next_recovery) = match next {
                            Some(n) => n,
                            None => (state.clone(), recovery),
                        };
                        if next_state != state || next_recovery != recovery {
                            records.push(
                                alter_record(
                                    image,
                                    reg,
                                    key,
                                    (&state, recovery),
                                    (&next_state, next_recovery),
                                )
                                .into(),
                            );
                            changed.insert(key, (next_state.clone(), next_recovery));
                        }
                        if next_state.leader != state.leader {
                            // The change completed a reassignment that removed the leader
                            // (Kafka answers NEW_LEADER_ELECTED from version 2, before that
                            // FENCED_LEADER_EPOCH): the leader learns its successor from the
                            // metadata.
                            let code = if request.version > 1 {
                                ResponseError::NewLeaderElected.code()
                            } else {
                                ResponseError::FencedLeaderEpoch.code()
                            };
                            out.partitions.push(AlterPartitionPartitionResult::error(
                                data.partition_index,
                                code,
                            ));
                            continue;
                        }
                        out.partitions.push(AlterPartitionPartitionResult {
                            partition_index: data.partition_index,
                            error_code: 0,
                            leader_id: next_state.leader,
                            leader_epoch: next_state.leader_epoch,
                            isr: next_state.isr,
                            leader_recovery_state: next_recovery,
                            partition_epoch: next_state.partition_epoch,
                        });
                    }
                }
            }
            results.push(out);
        }
        Ok((records, results))
    }
}

/// STALE_BROKER_EPOCH unless `broker_id` is registered at `broker_epoch` (Kafka's
/// `checkBrokerEpoch`, which also answers an unregistered broker so).
pub(super) fn check_broker_epoch(
    image: &MetadataImage,
    broker_id: NodeId,
    broker_epoch: i64,
) -> Result<(), ControllerError> {
    match image.broker(broker_id) {
        Some(b) if b.epoch == broker_epoch => Ok(()),
        b => Err(ControllerError::StaleBrokerEpoch {
            broker_id,
            expected: b.map(|b| b.epoch),
            got: broker_epoch,
        }),
    }
}

/// One partition of AlterPartition: `Ok(None)` accepted without change, `Ok(Some((state,
/// recovery)))` the new state (which may differ only in recovery state).
#[allow(clippy::type_complexity)]
fn alter_one(
    state: &PartitionState,
    recovery: i8,
    request: &AlterPartitionRequest,
    data: &AlterPartitionData,
    liveness: &ImageLiveness<'_>,
) -> Result<Option<(PartitionState, i8)>, i16> {
    let one = pc::AlterPartitionRequest {
        broker_id: request.broker_id,
        version: request.version,
        leader_epoch: data.leader_epoch,
        partition_epoch: data.partition_epoch,
        new_isr: data.new_isr.clone(),
    };
    let result = pc::alter_partition(state, &one, liveness);
    // Kafka checks the recovery state after the ISR's shape and before its members' eligibility.
    if matches!(
        result,
        Ok(_) | Err(AlterPartitionError::IneligibleReplica { .. })
    ) {
        let target = data.leader_recovery_state;
        let invalid = match target {
            RECOVERED => false,
            // A recovering leader keeps the ISR to itself, and RECOVERED is final.
            RECOVERING => data.new_isr.len() > 1 || recovery == RECOVERED,
            _ => true,
        };
        if invalid {
            return Err(ResponseError::InvalidRequest.code());
        }
    }
    let target = data.leader_recovery_state;
    match result.map_err(|e| e.error_code())? {
        Some(next) => Ok(Some((next, target))),
        None if target != recovery => {
            let mut next = state.clone();
            next.partition_epoch += 1;
            Ok(Some((next, target)))
        }
        None => Ok(None),
    }
}

/// The record of an AlterPartition change: the ISR and recovery state, and when the change
/// completes a reassignment, the replicas and the leader too (see [`change_record`]).
fn alter_record(
    image: &MetadataImage,
    reg: &PartitionRegistration,
    (topic_id, partition_id): (Uuid, i32),
    (old, old_recovery): (&PartitionState, i8),
    (next, next_recovery): (&PartitionState, i8),
) -> PartitionChangeRecord {
    debug_assert_eq!(next.partition_epoch, old.partition_epoch + 1);
    debug_assert!(
        next.leader == old.leader || old.removing_replicas.contains(&old.leader),
        "AlterPartition changes the leader only when completing a reassignment that removes it"
    );
    let replicas_changed = next.replicas != old.replicas;
    PartitionChangeRecord {
        partition_id,
        topic_id,
        isr: (next.isr != old.isr).then(|| next.isr.clone()),
        leader: if next.leader_epoch != old.leader_epoch {
            next.leader
        } else {
            NO_LEADER_CHANGE
        },
        replicas: replicas_changed.then(|| next.replicas.clone()),
        directories: replicas_changed
            .then(|| directories(image, reg, &next.replicas))
            .flatten(),
        adding_replicas: (next.adding_replicas != old.adding_replicas)
            .then(|| next.adding_replicas.clone()),
        removing_replicas: (next.removing_replicas != old.removing_replicas)
            .then(|| next.removing_replicas.clone()),
        leader_recovery_state: if next_recovery != old_recovery {
            next_recovery
        } else {
            NO_LEADER_RECOVERY_STATE_CHANGE
        },
        ..Default::default()
    }
}
