//! What the controller does to one partition's leader and ISR when brokers come and go, when a
//! client asks for a leader election (ElectLeaders) and when a leader asks to change its ISR
//! (AlterPartition): Kafka's `PartitionChangeBuilder` and the callers in
//! `ReplicationControlManager`, as pure functions from a [`PartitionState`] and a view of broker
//! liveness to the next state. The caller writes the result as a `PartitionChangeRecord`.
//!
//! Every function returns `None` (or `Ok(None)`) when nothing changes, else the new state with
//! `partition_epoch` bumped by one.
//!
//! Epoch rule (Kafka 4.x, metadata.version >= 3.6-IV0): `leader_epoch` bumps exactly when the
//! leader changes, to another broker, to none (-1) or from none. An ISR shrink or expansion
//! alone does not bump it; older metadata versions bumped on shrinks to work around
//! KAFKA-15021, which Samsa's brokers do not have. It also bumps, with the same leader, when a
//! change drops replicas (a reassignment completing or cancelled), so that the dropped replicas'
//! fetches are fenced (Kafka's `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`).
//! `partition_epoch` bumps on every change.
//!
//! Reassignments (KIP-455, see [`crate::reassignment`]): every change completes an ongoing
//! reassignment once its ISR allows it (Kafka's `completeReassignmentIfNeeded`, which
//! `PartitionChangeBuilder.build` runs first), so an ISR expansion through AlterPartition that
//! brings the last adding replica in also drops the removing ones, and may elect a new leader
//! from the target replicas.
//!
//! Invariants of every state produced, asserted on the way out:
//! - `leader` is [`NO_LEADER`] or a member of `isr`;
//! - `isr` is a subset of `replicas`, without duplicates;
//! - `isr` is non-empty unless `leader` is [`NO_LEADER`]. Without ELR (KIP-966) it is never
//!   empty at all: when the last ISR member goes away it stays in the ISR, the partition goes
//!   leaderless, and only that member (or an unclean election) can bring it back, because only
//!   it is known to have every committed record.
//!
//! ELR is left out: Kafka 4.x enables it only with `eligible.leader.replicas.version=1`. It
//! would enter where [`build`] computes the target ISR (an ISR below min.insync.replicas moves
//! its departing members into the ELR, and elections may then pick from the ELR).

use kafka_protocol::ResponseError;

use crate::NodeId;

/// The `leader` of a partition that has none.
pub const NO_LEADER: NodeId = -1;

/// The replication state of one partition (the fields of Kafka's `PartitionRegistration` that
/// elections and ISR changes touch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// The assigned replicas; the first is the preferred leader.
    pub replicas: Vec<NodeId>,
    pub isr: Vec<NodeId>,
    /// The leader, or [`NO_LEADER`].
    pub leader: NodeId,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// Replicas an ongoing reassignment adds (they are in `replicas`), sorted; else empty.
    pub adding_replicas: Vec<NodeId>,
    /// Replicas an ongoing reassignment removes (they are in `replicas`, after the target
    /// ones), sorted; else empty.
    pub removing_replicas: Vec<NodeId>,
}

impl PartitionState {
    /// The state of a newly created partition (Kafka's `buildPartitionRegistration`): the ISR is
    /// the active replicas in replica order and the leader its first member; epochs start at 0.
    /// `None` if no replica is active, which CreateTopics refuses.
    pub fn new_partition(replicas: Vec<NodeId>, liveness: &impl BrokerLiveness) -> Option<Self> {
        let isr: Vec<NodeId> = replicas
            .iter()
            .copied()
            .filter(|&r| liveness.is_active(r))
            .collect();
        let leader = *isr.first()?;
        let state = Self {
            replicas,
            isr,
            leader,
            leader_epoch: 0,
            partition_epoch: 0,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
        };
        state.check_invariants();
        Some(state)
    }

    /// Whether a reassignment is in progress (Kafka's `isReassignmentInProgress`).
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    pub fn has_leader(&self) -> bool {
        self.leader != NO_LEADER
    }

    /// The preferred leader: the first replica, or [`NO_LEADER`] with no replicas.
    pub fn preferred_replica(&self) -> NodeId {
        self.replicas.first().copied().unwrap_or(NO_LEADER)
    }

    pub fn has_preferred_leader(&self) -> bool {
        self.has_leader() && self.leader == self.preferred_replica()
    }

    fn check_invariants(&self) {
        assert!(
            self.leader == NO_LEADER || self.isr.contains(&self.leader),
            "leader {} is not in the ISR {:?}",
            self.leader,
            self.isr
        );
        assert!(
            !self.isr.is_empty() || self.leader == NO_LEADER,
            "empty ISR with leader {}",
            self.leader
        );
        debug_assert!(
            self.isr
                .iter()
                .enumerate()
                .all(|(i, r)| { self.replicas.contains(r) && !self.isr[..i].contains(r) }),
            "ISR {:?} is not a set of replicas {:?}",
            self.isr,
            self.replicas
        );
        assert!(
            self.adding_replicas
                .iter()
                .chain(&self.removing_replicas)
                .all(|r| self.replicas.contains(r))
                && self
                    .adding_replicas
                    .iter()
                    .all(|r| !self.removing_replicas.contains(r)),
            "adding {:?} and removing {:?} must be disjoint subsets of the replicas {:?}",
            self.adding_replicas,
            self.removing_replicas,
            self.replicas
        );
    }
}

/// The assignment a change aims at (Kafka's `targetReplicas`, `targetAdding` and
/// `targetRemoving`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetAssignment {
    pub replicas: Vec<NodeId>,
    pub adding: Vec<NodeId>,
    pub removing: Vec<NodeId>,
}

impl TargetAssignment {
    /// The partition's current assignment: a change that only moves the leader or the ISR.
    pub fn of(state: &PartitionState) -> Self {
        Self {
            replicas: state.replicas.clone(),
            adding: state.adding_replicas.clone(),
            removing: state.removing_replicas.clone(),
        }
    }

    /// Kafka's `maybeCompleteReassignment`: once every replica that stays is in `isr` (and at
    /// least one ISR member stays), the final replicas and ISR, without the removing ones.
    pub fn completed(&self, isr: &[NodeId]) -> Option<(Vec<NodeId>, Vec<NodeId>)> {
        if self.adding.is_empty() && self.removing.is_empty() {
            return None;
        }
        let stays = |r: &NodeId| !self.removing.contains(r);
        let new_isr: Vec<NodeId> = isr.iter().copied().filter(stays).collect();
        let new_replicas: Vec<NodeId> = self.replicas.iter().copied().filter(stays).collect();
        if new_isr.is_empty() || new_replicas.is_empty() {
            return None;
        }
        if !new_replicas.iter().all(|r| new_isr.contains(r)) {
            return None;
        }
        Some((new_replicas, new_isr))
    }
}

/// The controller's view of a broker, as Kafka's `ClusterControlManager.isActive` and the
/// AlterPartition eligibility check see it.
pub trait BrokerLiveness {
    /// Registered, unfenced and not in controlled shutdown (KIP-631 `want_shut_down`): may lead
    /// and may be in an ISR.
    fn is_active(&self, broker: NodeId) -> bool;

    /// The broker's registration epoch, for AlterPartition's check of the ISR members' epochs
    /// (KIP-903). `None` skips that check.
    fn broker_epoch(&self, _broker: NodeId) -> Option<i64> {
        None
    }
}

impl<F: Fn(NodeId) -> bool> BrokerLiveness for F {
    fn is_active(&self, broker: NodeId) -> bool {
        self(broker)
    }
}

/// How to choose a leader (Kafka's `PartitionChangeBuilder.Election`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    /// The preferred replica if it is an active ISR member; else keep a valid leader; else the
    /// first active ISR member in replica order.
    Preferred,
    /// Keep a valid leader, else the first active ISR member in replica order.
    Online,
    /// As `Online`, but if no ISR member is active, the first active replica outside the ISR,
    /// and the ISR becomes just it: records only it had may be lost (topic config
    /// `unclean.leader.election.enable`, or ElectLeaders UNCLEAN).
    Unclean,
}

impl Election {
    pub(crate) fn online(unclean_leader_election_enable: bool) -> Self {
        if unclean_leader_election_enable {
            Election::Unclean
        } else {
            Election::Online
        }
    }
}

/// Kafka's `PartitionChangeBuilder.build` for a change of the ISR only (see [`build_assignment`]).
fn build(
    state: &PartitionState,
    target_isr: Vec<NodeId>,
    election: Election,
    acceptable: impl Fn(NodeId) -> bool,
) -> Option<PartitionState> {
    build_assignment(
        state,
        TargetAssignment::of(state),
        target_isr,
        election,
        acceptable,
    )
}

/// Kafka's `PartitionChangeBuilder.build`, without ELR: complete a reassignment the target
/// ISR allows, elect a leader from `target_isr` in the order of the target replicas with
/// `acceptable` deciding who may lead, and return the changed state.
pub(crate) fn build_assignment(
    state: &PartitionState,
    mut target: TargetAssignment,
    mut target_isr: Vec<NodeId>,
    election: Election,
    acceptable: impl Fn(NodeId) -> bool,
) -> Option<PartitionState> {
    if let Some((replicas, isr)) = target.completed(&target_isr) {
        target = TargetAssignment {
            replicas,
            adding: Vec::new(),
            removing: Vec::new(),
        };
        target_isr = isr;
    }
    let valid = |r: NodeId| r != NO_LEADER && target_isr.contains(&r) && acceptable(r);
    let first_valid = |skip: usize| {
        target
            .replicas
            .iter()
            .skip(skip)
            .copied()
            .find(|&r| valid(r))
    };
    let preferred = target.replicas.first().copied().unwrap_or(NO_LEADER);
    let (leader, unclean) = match election {
        Election::Preferred if valid(preferred) => (preferred, false),
        Election::Preferred if valid(state.leader) => (state.leader, false),
        Election::Preferred => (first_valid(1).unwrap_or(NO_LEADER), false),
        _ if valid(state.leader) => (state.leader, false),
        _ => match first_valid(0) {
            Some(r) => (r, false),
            None if election == Election::Unclean => {
                match target.replicas.iter().copied().find(|&r| acceptable(r)) {
                    Some(r) => (r, true),
                    None => (NO_LEADER, false),
                }
            }
            None => (NO_LEADER, false),
        },
    };

    let mut next = state.clone();
    let mut changed = false;
    if leader != state.leader {
        next.leader = leader;
        next.leader_epoch += 1;
        changed = true;
    } else if !state.replicas.iter().all(|r| target.replicas.contains(r)) {
        // Replicas leave: a new leader epoch fences their fetches.
        next.leader_epoch += 1;
        changed = true;
    }
    if target.replicas != state.replicas {
        next.replicas = target.replicas;
        changed = true;
    }
    if target.adding != state.adding_replicas {
        next.adding_replicas = target.adding;
        changed = true;
    }
    if target.removing != state.removing_replicas {
        next.removing_replicas = target.removing;
        changed = true;
    }
    if unclean {
        next.isr = vec![leader];
        changed |= next.isr != state.isr;
    } else if !target_isr.is_empty() && target_isr != state.isr {
        // An empty target ISR is not written: without ELR the last member stays (see the
        // module doc), which is Kafka's rule when ELR is disabled.
        next.isr = target_isr;
        changed = true;
    }
    if !changed {
        return None;
    }
    next.partition_epoch += 1;
    next.check_invariants();
    Some(next)
}

/// `broker` was fenced (missed heartbeats, or a clean shutdown finished): Kafka's
/// `handleBrokerFenced`. It leaves the ISR unless it is the last member, and loses leadership
/// to the first active ISR member in replica order, or to nobody.
pub fn handle_broker_fenced(
    state: &PartitionState,
    broker: NodeId,
    unclean_leader_election_enable: bool,
    liveness: &impl BrokerLiveness,
) -> Option<PartitionState> {
    remove_broker(state, broker, unclean_leader_election_enable, liveness)
}

/// `broker` asked to shut down (heartbeat with `want_shut_down`, KIP-631): Kafka's
/// `handleBrokerInControlledShutdown`. The same change as fencing, made while the broker is
/// still up so that the new leaders take over before it exits.
pub fn handle_broker_in_controlled_shutdown(
    state: &PartitionState,
    broker: NodeId,
    unclean_leader_election_enable: bool,
    liveness: &impl BrokerLiveness,
) -> Option<PartitionState> {
    remove_broker(state, broker, unclean_leader_election_enable, liveness)
}

fn remove_broker(
    state: &PartitionState,
    broker: NodeId,
    unclean_leader_election_enable: bool,
    liveness: &impl BrokerLiveness,
) -> Option<PartitionState> {
    let target_isr: Vec<NodeId> = state.isr.iter().copied().filter(|&r| r != broker).collect();
    // `broker` never leads again here even if the caller's view still shows it active: Kafka
    // builds these records before the fencing record is applied.
    build(
        state,
        target_isr,
        Election::online(unclean_leader_election_enable),
        |r| r != broker && liveness.is_active(r),
    )
}

/// `broker` was unfenced: Kafka's `handleBrokerUnfenced`, which revisits only leaderless
/// partitions (a partition with a leader gives `None`). The partition gets a leader if an ISR
/// member is now active, `broker` counting as active whatever the caller's view says (Kafka
/// builds these records before the unfencing record is applied).
pub fn handle_broker_unfenced(
    state: &PartitionState,
    broker: NodeId,
    unclean_leader_election_enable: bool,
    liveness: &impl BrokerLiveness,
) -> Option<PartitionState> {
    if state.has_leader() {
        return None;
    }
    build(
        state,
        state.isr.clone(),
        Election::online(unclean_leader_election_enable),
        |r| r == broker || liveness.is_active(r),
    )
}

/// ElectLeaders' `election_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    Preferred,
    Unclean,
}

/// Why ElectLeaders changed nothing for a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ElectLeadersError {
    #[error("leader election not needed: broker {leader} already leads")]
    ElectionNotNeeded { leader: NodeId },
    #[error("the preferred replica {preferred} cannot lead: it is {why}")]
    PreferredLeaderNotAvailable {
        preferred: NodeId,
        why: &'static str,
    },
    #[error("no eligible leader: none of the {replicas} replica(s) is live")]
    EligibleLeadersNotAvailable { replicas: usize },
}

impl ElectLeadersError {
    pub fn error_code(&self) -> i16 {
        match self {
            Self::ElectionNotNeeded { .. } => ResponseError::ElectionNotNeeded.code(),
            Self::PreferredLeaderNotAvailable { .. } => {
                ResponseError::PreferredLeaderNotAvailable.code()
            }
            Self::EligibleLeadersNotAvailable { .. } => {
                ResponseError::EligibleLeadersNotAvailable.code()
            }
        }
    }
}

/// ElectLeaders for one partition (Kafka's `ReplicationControlManager.electLeader`). PREFERRED
/// is not needed when the preferred replica leads, UNCLEAN when any broker leads. PREFERRED
/// can also move leadership to another ISR member when the current leader is not active.
pub fn elect_leaders(
    state: &PartitionState,
    election_type: ElectionType,
    liveness: &impl BrokerLiveness,
) -> Result<PartitionState, ElectLeadersError> {
    let (election, not_needed) = match election_type {
        ElectionType::Preferred => (Election::Preferred, state.has_preferred_leader()),
        ElectionType::Unclean => (Election::Unclean, state.has_leader()),
    };
    if not_needed {
        return Err(ElectLeadersError::ElectionNotNeeded {
            leader: state.leader,
        });
    }
    build(state, state.isr.clone(), election, |r| {
        liveness.is_active(r)
    })
    .ok_or(match election_type {
        ElectionType::Preferred => ElectLeadersError::PreferredLeaderNotAvailable {
            preferred: state.preferred_replica(),
            why: if state.isr.contains(&state.preferred_replica()) {
                "fenced, shutting down or not registered"
            } else {
                "not in the ISR"
            },
        },
        ElectionType::Unclean => ElectLeadersError::EligibleLeadersNotAvailable {
            replicas: state.replicas.len(),
        },
    })
}

/// One member of AlterPartition's `new_isr_with_epochs` (Kafka's `BrokerState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsrMember {
    pub broker_id: NodeId,
    /// -1 skips the epoch check (requests before version 3 carry no epochs).
    pub broker_epoch: i64,
}

/// One partition of an AlterPartition request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionRequest {
    /// The request's `broker_id`: the leader asking.
    pub broker_id: NodeId,
    /// The AlterPartition request version, which picks between error codes.
    pub version: i16,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<IsrMember>,
}

/// Why an AlterPartition is refused; the leader keeps its current state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlterPartitionError {
    /// The request is ahead of this controller's state: likely a new controller took over.
    #[error(
        "the request's leader epoch {leader_epoch} / partition epoch {partition_epoch} are \
         ahead of this controller's {current_leader_epoch} / {current_partition_epoch}"
    )]
    NotController {
        leader_epoch: i32,
        partition_epoch: i32,
        current_leader_epoch: i32,
        current_partition_epoch: i32,
    },
    #[error("leader epoch {leader_epoch} is older than the current {current}")]
    FencedLeaderEpoch { leader_epoch: i32, current: i32 },
    #[error("broker {broker} is not the leader; broker {leader} is")]
    NotLeader { broker: NodeId, leader: NodeId },
    #[error("partition epoch {partition_epoch} is not the current {current}")]
    InvalidUpdateVersion { partition_epoch: i32, current: i32 },
    #[error("the new ISR {isr:?} is not a set of the replicas {replicas:?}")]
    InvalidIsr {
        isr: Vec<NodeId>,
        replicas: Vec<NodeId>,
    },
    #[error("the new ISR {isr:?} does not include the leader {leader}")]
    IsrWithoutLeader { isr: Vec<NodeId>, leader: NodeId },
    #[error("the new ISR includes broker {broker}, which is {reason}")]
    IneligibleReplica {
        broker: NodeId,
        reason: &'static str,
        version: i16,
    },
}

impl AlterPartitionError {
    /// The partition's error code in the AlterPartition response, as Kafka answers.
    pub fn error_code(&self) -> i16 {
        match self {
            Self::NotController { .. } => ResponseError::NotController.code(),
            Self::FencedLeaderEpoch { .. } => ResponseError::FencedLeaderEpoch.code(),
            Self::InvalidUpdateVersion { .. } => ResponseError::InvalidUpdateVersion.code(),
            Self::NotLeader { .. } | Self::InvalidIsr { .. } | Self::IsrWithoutLeader { .. } => {
                ResponseError::InvalidRequest.code()
            }
            // Versions 0 and 1 predate INELIGIBLE_REPLICA (KIP-903).
            Self::IneligibleReplica { version, .. } if *version <= 1 => {
                ResponseError::OperationNotAttempted.code()
            }
            Self::IneligibleReplica { .. } => ResponseError::IneligibleReplica.code(),
        }
    }
}

/// An ISR change asked for by the leader (Kafka's `alterPartition` and
/// `validateAlterPartitionData`, checks in Kafka's order). `Ok(None)`: accepted, nothing
/// changes (answer with the current state); `Ok(Some(next))`: accepted, answer with `next`.
///
/// The requester stays leader after an accepted change (it is in the new ISR and, like every
/// member, active) unless the change completes a reassignment that removes it: then the
/// controller answers NEW_LEADER_ELECTED, as Kafka does.
pub fn alter_partition(
    state: &PartitionState,
    request: &AlterPartitionRequest,
    liveness: &impl BrokerLiveness,
) -> Result<Option<PartitionState>, AlterPartitionError> {
    if request.leader_epoch > state.leader_epoch || request.partition_epoch > state.partition_epoch
    {
        return Err(AlterPartitionError::NotController {
            leader_epoch: request.leader_epoch,
            partition_epoch: request.partition_epoch,
            current_leader_epoch: state.leader_epoch,
            current_partition_epoch: state.partition_epoch,
        });
    }
    if request.leader_epoch < state.leader_epoch {
        return Err(AlterPartitionError::FencedLeaderEpoch {
            leader_epoch: request.leader_epoch,
            current: state.leader_epoch,
        });
    }
    if request.broker_id != state.leader {
        return Err(AlterPartitionError::NotLeader {
            broker: request.broker_id,
            leader: state.leader,
        });
    }
    if request.partition_epoch < state.partition_epoch {
        return Err(AlterPartitionError::InvalidUpdateVersion {
            partition_epoch: request.partition_epoch,
            current: state.partition_epoch,
        });
    }
    let isr: Vec<NodeId> = request.new_isr.iter().map(|m| m.broker_id).collect();
    let is_set = isr
        .iter()
        .enumerate()
        .all(|(i, r)| *r >= 0 && state.replicas.contains(r) && !isr[..i].contains(r));
    if !is_set {
        return Err(AlterPartitionError::InvalidIsr {
            isr,
            replicas: state.replicas.clone(),
        });
    }
    if !isr.contains(&state.leader) {
        return Err(AlterPartitionError::IsrWithoutLeader {
            isr,
            leader: state.leader,
        });
    }
    for member in &request.new_isr {
        let reason = if !liveness.is_active(member.broker_id) {
            Some("fenced, shutting down or not registered")
        } else {
            match liveness.broker_epoch(member.broker_id) {
                Some(epoch) if member.broker_epoch != -1 && member.broker_epoch != epoch => {
                    Some("registered with a different broker epoch")
                }
                _ => None,
            }
        };
        if let Some(reason) = reason {
            return Err(AlterPartitionError::IneligibleReplica {
                broker: member.broker_id,
                reason,
                version: request.version,
            });
        }
    }
    // The leader stays unless the change completes a reassignment that removes it.
    let next = build(state, isr, Election::Online, |r| liveness.is_active(r));
    debug_assert!(next.as_ref().is_none_or(
        |n| n.leader == state.leader || state.removing_replicas.contains(&state.leader)
    ));
    Ok(next)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    pub(crate) fn state(replicas: &[NodeId], isr: &[NodeId], leader: NodeId) -> PartitionState {
        PartitionState {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader,
            leader_epoch: 5,
            partition_epoch: 9,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
        }
    }

    /// Liveness where the listed brokers are active.
    pub(crate) fn up(active: &[NodeId]) -> impl Fn(NodeId) -> bool + '_ {
        move |b| active.contains(&b)
    }

    #[test]
    fn new_partition_leads_on_first_active_replica() {
        let s = PartitionState::new_partition(vec![1, 2, 3], &up(&[2, 3])).unwrap();
        assert_eq!(
            (s.isr.clone(), s.leader, s.leader_epoch),
            (vec![2, 3], 2, 0)
        );
        assert_eq!(PartitionState::new_partition(vec![1], &up(&[])), None);
    }

    #[test]
    fn fenced_leader_moves_to_the_next_isr_member() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let next = handle_broker_fenced(&s, 1, false, &up(&[2, 3])).unwrap();
        assert_eq!(next.leader, 2);
        assert_eq!(next.isr, vec![2, 3]);
        assert_eq!((next.leader_epoch, next.partition_epoch), (6, 10));
    }

    #[test]
    fn new_leader_is_chosen_in_replica_order_not_isr_order() {
        let s = state(&[1, 3, 2], &[1, 2, 3], 1);
        let next = handle_broker_fenced(&s, 1, false, &up(&[2, 3])).unwrap();
        assert_eq!(next.leader, 3);
    }

    #[test]
    fn fenced_follower_leaves_the_isr_without_a_leader_epoch_bump() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let next = handle_broker_fenced(&s, 3, false, &up(&[1, 2])).unwrap();
        assert_eq!((next.leader, next.isr.clone()), (1, vec![1, 2]));
        assert_eq!((next.leader_epoch, next.partition_epoch), (5, 10));
    }

    #[test]
    fn last_isr_member_stays_in_isr_when_fenced() {
        let s = state(&[1, 2], &[1], 1);
        let next = handle_broker_fenced(&s, 1, false, &up(&[2])).unwrap();
        assert_eq!(next.isr, vec![1]);
        assert_eq!(next.leader, NO_LEADER);
        assert_eq!((next.leader_epoch, next.partition_epoch), (6, 10));
        // Fenced again while leaderless: nothing left to change.
        assert_eq!(handle_broker_fenced(&next, 1, false, &up(&[2])), None);
    }

    #[test]
    fn broker_outside_the_isr_changes_nothing_when_fenced() {
        let s = state(&[1, 2, 3], &[1, 2], 1);
        assert_eq!(handle_broker_fenced(&s, 3, false, &up(&[1, 2])), None);
    }

    #[test]
    fn unclean_election_picks_a_live_replica_outside_the_isr() {
        let s = state(&[1, 2, 3], &[1], 1);
        let clean = handle_broker_fenced(&s, 1, false, &up(&[3])).unwrap();
        assert_eq!(clean.leader, NO_LEADER);
        let unclean = handle_broker_fenced(&s, 1, true, &up(&[3])).unwrap();
        assert_eq!((unclean.leader, unclean.isr.clone()), (3, vec![3]));
        assert_eq!(unclean.leader_epoch, 6);
    }

    #[test]
    fn controlled_shutdown_moves_leadership_before_exit() {
        // The shutting-down broker is still in the caller's active set: it must not be kept.
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let next = handle_broker_in_controlled_shutdown(&s, 1, false, &up(&[1, 2, 3])).unwrap();
        assert_eq!((next.leader, next.isr.clone()), (2, vec![2, 3]));
        let alone = state(&[1, 2], &[1], 1);
        let next = handle_broker_in_controlled_shutdown(&alone, 1, false, &up(&[1, 2])).unwrap();
        assert_eq!((next.leader, next.isr.clone()), (NO_LEADER, vec![1]));
    }

    #[test]
    fn unfenced_isr_member_takes_leadership_of_a_leaderless_partition() {
        let s = state(&[1, 2], &[1], NO_LEADER);
        // The caller's view may not show broker 1 as unfenced yet.
        let next = handle_broker_unfenced(&s, 1, false, &up(&[])).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.partition_epoch),
            (1, 6, 10)
        );
    }

    #[test]
    fn unfenced_broker_outside_the_isr_does_not_lead_cleanly() {
        let s = state(&[1, 2], &[1], NO_LEADER);
        assert_eq!(handle_broker_unfenced(&s, 2, false, &up(&[2])), None);
        let next = handle_broker_unfenced(&s, 2, true, &up(&[2])).unwrap();
        assert_eq!((next.leader, next.isr.clone()), (2, vec![2]));
        // Partitions with a leader are not revisited.
        assert_eq!(
            handle_broker_unfenced(&state(&[1, 2], &[1], 1), 2, true, &up(&[1, 2])),
            None
        );
    }

    #[test]
    fn preferred_election_moves_leadership_to_the_first_replica() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 2);
        let next = elect_leaders(&s, ElectionType::Preferred, &up(&[1, 2, 3])).unwrap();
        assert_eq!((next.leader, next.leader_epoch), (1, 6));
        assert_eq!(
            elect_leaders(&next, ElectionType::Preferred, &up(&[1, 2, 3])),
            Err(ElectLeadersError::ElectionNotNeeded { leader: 1 })
        );
        // Preferred replica down, or out of the ISR: not available.
        let e = elect_leaders(&s, ElectionType::Preferred, &up(&[2, 3])).unwrap_err();
        assert_eq!(
            e.error_code(),
            ResponseError::PreferredLeaderNotAvailable.code()
        );
        let out = state(&[1, 2, 3], &[2, 3], 2);
        assert!(elect_leaders(&out, ElectionType::Preferred, &up(&[1, 2, 3])).is_err());
    }

    #[test]
    fn unclean_election_request_needs_a_leaderless_partition() {
        let s = state(&[1, 2], &[1], 1);
        assert_eq!(
            elect_leaders(&s, ElectionType::Unclean, &up(&[2]))
                .unwrap_err()
                .error_code(),
            ResponseError::ElectionNotNeeded.code()
        );
        let leaderless = state(&[1, 2], &[1], NO_LEADER);
        let next = elect_leaders(&leaderless, ElectionType::Unclean, &up(&[2])).unwrap();
        assert_eq!((next.leader, next.isr.clone()), (2, vec![2]));
        assert_eq!(
            elect_leaders(&leaderless, ElectionType::Unclean, &up(&[]))
                .unwrap_err()
                .error_code(),
            ResponseError::EligibleLeadersNotAvailable.code()
        );
    }

    fn alter(s: &PartitionState, broker: NodeId, isr: &[NodeId]) -> AlterPartitionRequest {
        AlterPartitionRequest {
            broker_id: broker,
            version: 3,
            leader_epoch: s.leader_epoch,
            partition_epoch: s.partition_epoch,
            new_isr: isr
                .iter()
                .map(|&b| IsrMember {
                    broker_id: b,
                    broker_epoch: -1,
                })
                .collect(),
        }
    }

    #[test]
    fn alter_partition_expands_and_shrinks_the_isr() {
        let s = state(&[1, 2, 3], &[1], 1);
        let live = up(&[1, 2, 3]);
        let grown = alter_partition(&s, &alter(&s, 1, &[1, 2, 3]), &live)
            .unwrap()
            .unwrap();
        assert_eq!(grown.isr, vec![1, 2, 3]);
        assert_eq!((grown.leader_epoch, grown.partition_epoch), (5, 10));
        let shrunk = alter_partition(&grown, &alter(&grown, 1, &[1, 3]), &live)
            .unwrap()
            .unwrap();
        assert_eq!((shrunk.isr.clone(), shrunk.leader_epoch), (vec![1, 3], 5));
        assert_eq!(
            alter_partition(&shrunk, &alter(&shrunk, 1, &[1, 3]), &live),
            Ok(None)
        );
    }

    #[test]
    fn alter_partition_rejects_stale_or_foreign_requests_with_kafkas_codes() {
        let s = state(&[1, 2, 3], &[1, 2], 1);
        let live = up(&[1, 2, 3]);
        let code =
            |r: &AlterPartitionRequest| alter_partition(&s, r, &live).unwrap_err().error_code();
        let mut r = alter(&s, 1, &[1, 2, 3]);
        r.partition_epoch -= 1;
        assert_eq!(code(&r), ResponseError::InvalidUpdateVersion.code());
        let mut r = alter(&s, 1, &[1, 2, 3]);
        r.leader_epoch -= 1;
        assert_eq!(code(&r), ResponseError::FencedLeaderEpoch.code());
        let mut r = alter(&s, 1, &[1, 2, 3]);
        r.leader_epoch += 1;
        assert_eq!(code(&r), ResponseError::NotController.code());
        assert_eq!(
            code(&alter(&s, 2, &[1, 2])),
            ResponseError::InvalidRequest.code()
        );
        assert_eq!(
            code(&alter(&s, 1, &[1, 4])),
            ResponseError::InvalidRequest.code()
        );
        assert_eq!(
            code(&alter(&s, 1, &[1, 1])),
            ResponseError::InvalidRequest.code()
        );
        assert_eq!(
            code(&alter(&s, 1, &[2, 3])),
            ResponseError::InvalidRequest.code()
        );
    }

    #[test]
    fn alter_partition_rejects_fenced_or_shutting_down_replicas() {
        let s = state(&[1, 2, 3], &[1, 2], 1);
        let e = alter_partition(&s, &alter(&s, 1, &[1, 2, 3]), &up(&[1, 2])).unwrap_err();
        assert_eq!(e.error_code(), ResponseError::IneligibleReplica.code());
        let mut old = alter(&s, 1, &[1, 2, 3]);
        old.version = 1;
        let e = alter_partition(&s, &old, &up(&[1, 2])).unwrap_err();
        assert_eq!(e.error_code(), ResponseError::OperationNotAttempted.code());
    }

    struct Epochs;
    impl BrokerLiveness for Epochs {
        fn is_active(&self, _: NodeId) -> bool {
            true
        }
        fn broker_epoch(&self, broker: NodeId) -> Option<i64> {
            Some(100 + broker as i64)
        }
    }

    #[test]
    fn alter_partition_checks_isr_members_broker_epochs() {
        let s = state(&[1, 2], &[1], 1);
        let mut r = alter(&s, 1, &[1, 2]);
        r.new_isr[1].broker_epoch = 7;
        assert!(matches!(
            alter_partition(&s, &r, &Epochs),
            Err(AlterPartitionError::IneligibleReplica { broker: 2, .. })
        ));
        r.new_isr[1].broker_epoch = 102;
        assert!(alter_partition(&s, &r, &Epochs).unwrap().is_some());
    }

    /// A random partition: 1..5 distinct replicas, a non-empty ISR among them, a leader in it
    /// or none, and a random active set.
    fn scenario() -> impl Strategy<Value = (PartitionState, Vec<NodeId>, NodeId, bool)> {
        (1usize..6).prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec(any::<bool>(), n),
                proptest::collection::vec(any::<bool>(), n),
                0..n + 1,
                0..n,
                any::<bool>(),
            )
                .prop_map(|(n, in_isr, active, leader, subject, unclean)| {
                    let replicas: Vec<NodeId> = (0..n as NodeId).map(|i| i * 2 + 1).collect();
                    let mut isr: Vec<NodeId> = replicas
                        .iter()
                        .zip(&in_isr)
                        .filter(|(_, b)| **b)
                        .map(|(r, _)| *r)
                        .collect();
                    if isr.is_empty() {
                        isr.push(replicas[0]);
                    }
                    let leader = isr.get(leader).copied().unwrap_or(NO_LEADER);
                    let live = replicas
                        .iter()
                        .zip(&active)
                        .filter(|(_, b)| **b)
                        .map(|(r, _)| *r)
                        .collect();
                    (
                        state(&replicas, &isr, leader),
                        live,
                        replicas[subject],
                        unclean,
                    )
                })
        })
    }

    proptest! {
        #[test]
        fn changes_keep_the_invariants_and_the_epoch_rule(
            (s, live, broker, unclean) in scenario()
        ) {
            let liveness = |b: NodeId| live.contains(&b);
            let results = [
                handle_broker_fenced(&s, broker, unclean, &liveness),
                handle_broker_unfenced(&s, broker, unclean, &liveness),
                elect_leaders(&s, ElectionType::Preferred, &liveness).ok(),
                elect_leaders(&s, ElectionType::Unclean, &liveness).ok(),
            ];
            for next in results.into_iter().flatten() {
                // build() asserted the invariants; here the epoch rule and the "changed" claim.
                prop_assert_eq!(next.partition_epoch, s.partition_epoch + 1);
                let bump = if next.leader != s.leader { 1 } else { 0 };
                prop_assert_eq!(next.leader_epoch, s.leader_epoch + bump);
                prop_assert!(next.leader != s.leader || next.isr != s.isr);
                prop_assert_eq!(&next.replicas, &s.replicas);
                let isr: HashSet<NodeId> = next.isr.iter().copied().collect();
                prop_assert_eq!(isr.len(), next.isr.len());
                // A new leader is live; a clean one comes from the old ISR.
                if next.leader != s.leader && next.leader != NO_LEADER {
                    prop_assert!(live.contains(&next.leader) || next.leader == broker);
                    prop_assert!(s.isr.contains(&next.leader) || next.isr == vec![next.leader]);
                }
            }
            if let Some(next) = handle_broker_fenced(&s, broker, unclean, &liveness) {
                prop_assert_ne!(next.leader, broker);
                prop_assert!(!next.isr.contains(&broker) || next.isr == vec![broker]);
            }
        }
    }
}
