//! Partition reassignment (KIP-455) as the controller decides it, as pure functions from a
//! [`PartitionState`] to the next: Kafka's `ReplicationControlManager.alterPartitionReassignment`
//! with `PartitionReassignmentReplicas` and `PartitionReassignmentRevert`.
//!
//! A reassignment to `target` goes in two steps, each one `PartitionChangeRecord`:
//! 1. [`reassign`] widens the replicas to `target` followed by the current replicas it drops
//!    (`removing_replicas`, sorted), and names the new ones (`adding_replicas`, sorted). The
//!    brokers added start following the leader, which takes them into the ISR once caught up.
//! 2. The change that brings every target replica into the ISR (an AlterPartition expansion,
//!    usually) completes it: replicas = target, the removing ones leave the ISR, adding and
//!    removing are cleared, and if the leader was removed a target replica of the ISR leads
//!    ([`crate::partition_change`] does this on every change, as Kafka's builder does).
//!
//! A target the ISR already allows (only dropping or reordering replicas) completes at once.
//! [`cancel`] goes back to the replicas the reassignment started from (the current replicas
//! without the adding ones); the adding ones leave the ISR.
//!
//! Invariant (asserted by [`PartitionState`]'s checks on every state produced): adding and
//! removing are disjoint subsets of the replicas.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;

use crate::partition_change::{
    build_assignment, BrokerLiveness, Election, PartitionState, TargetAssignment,
};
use crate::NodeId;

/// Why a reassignment (or its cancellation) was refused for a partition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReassignmentError {
    #[error("The manual partition assignment includes an empty replica list.")]
    EmptyTarget,
    #[error(
        "The manual partition assignment includes broker {0}, but no such broker is registered."
    )]
    UnregisteredBroker(NodeId),
    #[error("The manual partition assignment includes the broker {0} more than once.")]
    DuplicateBroker(NodeId),
    #[error("The replication factor is changed from {from} to {to}")]
    ReplicationFactorChanged { from: usize, to: usize },
    #[error("No partition reassignment is in progress for this topic partition.")]
    NoReassignmentInProgress,
    #[error("Unable to revert the partition assignment because it would require an unclean leader election.")]
    RevertNeedsUncleanElection,
}

impl ReassignmentError {
    /// The partition's error code in the AlterPartitionReassignments response, as Kafka answers.
    pub fn error_code(&self) -> i16 {
        match self {
            Self::EmptyTarget
            | Self::UnregisteredBroker(_)
            | Self::DuplicateBroker(_)
            | Self::RevertNeedsUncleanElection => ResponseError::InvalidReplicaAssignment.code(),
            Self::ReplicationFactorChanged { .. } => ResponseError::InvalidReplicationFactor.code(),
            Self::NoReassignmentInProgress => ResponseError::NoReassignmentInProgress.code(),
        }
    }
}

/// Kafka's `validateManualPartitionAssignment` (without a replication factor to match): a
/// non-empty list of distinct registered brokers, checked in broker-id order as Kafka does, so
/// the broker named in the error is the same.
pub fn validate_target(
    target: &[NodeId],
    registered: impl Fn(NodeId) -> bool,
) -> Result<(), ReassignmentError> {
    if target.is_empty() {
        return Err(ReassignmentError::EmptyTarget);
    }
    let mut sorted = target.to_vec();
    sorted.sort_unstable();
    let mut previous = None;
    for b in sorted {
        if !registered(b) {
            return Err(ReassignmentError::UnregisteredBroker(b));
        }
        if previous == Some(b) {
            return Err(ReassignmentError::DuplicateBroker(b));
        }
        previous = Some(b);
    }
    Ok(())
}

/// The number of replicas the partition has, or is headed for while a reassignment runs: what
/// a target must match when the replication factor may not change (KIP-860, Kafka's
/// `validatePartitionReplicationFactorUnchanged`).
pub fn replication_factor(state: &PartitionState) -> usize {
    if !state.is_reassigning() {
        return state.replicas.len();
    }
    let mut heading: BTreeSet<NodeId> = state.replicas.iter().copied().collect();
    heading.extend(&state.adding_replicas);
    for r in &state.removing_replicas {
        heading.remove(r);
    }
    heading.len()
}

/// Kafka's `PartitionReassignmentReplicas` from the current replicas to `target`: the replicas
/// while moving (target, then the dropped ones), the adding and the removing ones (sorted).
pub fn reassignment_replicas(current: &[NodeId], target: &[NodeId]) -> TargetAssignment {
    let removing: BTreeSet<NodeId> = current
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    let adding: BTreeSet<NodeId> = target
        .iter()
        .copied()
        .filter(|r| !current.contains(r))
        .collect();
    let mut replicas = target.to_vec();
    replicas.extend(&removing);
    TargetAssignment {
        replicas,
        adding: adding.into_iter().collect(),
        removing: removing.into_iter().collect(),
    }
}

/// Starts (or replaces) a reassignment of `state` to `target` (Kafka's
/// `changePartitionReassignment`). `registered`: whether a broker id is registered;
/// `allow_replication_factor_change`: KIP-860's flag (true before v1 of the request).
/// `Ok(None)`: nothing changes (the target is already in place).
pub fn reassign(
    state: &PartitionState,
    target: &[NodeId],
    allow_replication_factor_change: bool,
    registered: impl Fn(NodeId) -> bool,
    liveness: &impl BrokerLiveness,
) -> Result<Option<PartitionState>, ReassignmentError> {
    validate_target(target, registered)?;
    if !allow_replication_factor_change {
        let from = replication_factor(state);
        if from != target.len() {
            return Err(ReassignmentError::ReplicationFactorChanged {
                from,
                to: target.len(),
            });
        }
    }
    let next = build_assignment(
        state,
        reassignment_replicas(&state.replicas, target),
        state.isr.clone(),
        Election::Online,
        |r| liveness.is_active(r),
    );
    Ok(next)
}

/// Cancels the reassignment in progress (Kafka's `cancelPartitionReassignment`): back to the
/// replicas it started from, the adding replicas out of the ISR. If only adding replicas are
/// in the ISR, the first original replica becomes the ISR, which is an unclean election: refused
/// unless `unclean_leader_election_enable` for the topic.
pub fn cancel(
    state: &PartitionState,
    unclean_leader_election_enable: bool,
    liveness: &impl BrokerLiveness,
) -> Result<Option<PartitionState>, ReassignmentError> {
    if !state.is_reassigning() {
        return Err(ReassignmentError::NoReassignmentInProgress);
    }
    let adding = &state.adding_replicas;
    let replicas: Vec<NodeId> = state
        .replicas
        .iter()
        .copied()
        .filter(|r| !adding.contains(r))
        .collect();
    let mut isr: Vec<NodeId> = state
        .isr
        .iter()
        .copied()
        .filter(|r| !adding.contains(r))
        .collect();
    let unclean = isr.is_empty();
    if unclean {
        // Unreachable in practice: the reassignment started from a non-empty replica set.
        let Some(&first) = replicas.first() else {
            return Err(ReassignmentError::EmptyTarget);
        };
        if !unclean_leader_election_enable {
            return Err(ReassignmentError::RevertNeedsUncleanElection);
        }
        isr.push(first);
    }
    Ok(build_assignment(
        state,
        TargetAssignment {
            replicas,
            adding: Vec::new(),
            removing: Vec::new(),
        },
        isr,
        Election::online(unclean_leader_election_enable),
        |r| liveness.is_active(r),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition_change::tests::{state, up};
    use crate::partition_change::{alter_partition, AlterPartitionRequest, IsrMember, NO_LEADER};

    fn registered(b: NodeId) -> bool {
        (1..=4).contains(&b)
    }

    fn expand(s: &PartitionState, isr: &[NodeId]) -> Option<PartitionState> {
        let request = AlterPartitionRequest {
            broker_id: s.leader,
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
        };
        alter_partition(s, &request, &up(&[1, 2, 3, 4, 5, 6])).unwrap()
    }

    #[test]
    fn targets_are_checked_as_kafka_checks_them() {
        let code = |t: &[NodeId]| validate_target(t, registered).unwrap_err().error_code();
        let invalid = ResponseError::InvalidReplicaAssignment.code();
        assert_eq!(code(&[]), invalid);
        assert_eq!(code(&[2, 3, 2]), invalid);
        assert_eq!(code(&[2, 9]), invalid);
        assert_eq!(
            validate_target(&[9, 2, 2], registered),
            Err(ReassignmentError::DuplicateBroker(2)),
            "brokers are checked in id order"
        );
        assert_eq!(validate_target(&[3, 1], registered), Ok(()));
    }

    #[test]
    fn reassignment_record_widens_replicas_to_target_then_removing() {
        let s = state(&[1, 2], &[1, 2], 1);
        let next = reassign(&s, &[3, 2], false, registered, &up(&[1, 2, 3]))
            .unwrap()
            .unwrap();
        assert_eq!(next.replicas, vec![3, 2, 1]);
        assert_eq!(next.adding_replicas, vec![3]);
        assert_eq!(next.removing_replicas, vec![1]);
        assert_eq!((next.leader, next.isr.clone()), (1, vec![1, 2]));
        // Nothing leaves yet: no new leader epoch.
        assert_eq!((next.leader_epoch, next.partition_epoch), (5, 10));
        assert_eq!(replication_factor(&next), 2);
    }

    #[test]
    fn isr_expansion_completes_the_reassignment() {
        let s = state(&[1, 2], &[1, 2], 2);
        let moving = reassign(&s, &[2, 3], false, registered, &up(&[1, 2, 3]))
            .unwrap()
            .unwrap();
        assert_eq!(moving.replicas, vec![2, 3, 1]);
        let done = expand(&moving, &[1, 2, 3]).unwrap();
        assert_eq!(done.replicas, vec![2, 3]);
        assert_eq!(done.isr, vec![2, 3]);
        assert!(!done.is_reassigning());
        assert_eq!(done.leader, 2);
        // Broker 1 left: the leader epoch bumps to fence it, with the same leader.
        assert_eq!(
            (done.leader_epoch, done.partition_epoch),
            (moving.leader_epoch + 1, moving.partition_epoch + 1)
        );
    }

    #[test]
    fn removed_leader_hands_over_to_a_target_replica_on_completion() {
        let s = state(&[1, 2], &[1, 2], 1);
        let moving = reassign(&s, &[3, 2], false, registered, &up(&[1, 2, 3]))
            .unwrap()
            .unwrap();
        let done = expand(&moving, &[1, 2, 3]).unwrap();
        assert_eq!(done.replicas, vec![3, 2]);
        assert_eq!(done.isr, vec![2, 3]);
        // The first target replica in the ISR leads.
        assert_eq!(done.leader, 3);
        assert_eq!(done.leader_epoch, moving.leader_epoch + 1);
    }

    #[test]
    fn reassignment_waits_for_every_adding_replica() {
        let s = state(&[1, 2], &[1, 2], 1);
        let moving = reassign(&s, &[2, 3, 4], true, registered, &up(&[1, 2, 3, 4]))
            .unwrap()
            .unwrap();
        assert_eq!(moving.adding_replicas, vec![3, 4]);
        let partly = expand(&moving, &[1, 2, 3]).unwrap();
        assert!(partly.is_reassigning());
        assert_eq!(partly.replicas, vec![2, 3, 4, 1]);
        let done = expand(&partly, &[1, 2, 3, 4]).unwrap();
        assert_eq!(
            (done.replicas.clone(), done.isr.clone(), done.leader),
            (vec![2, 3, 4], vec![2, 3, 4], 2)
        );
    }

    #[test]
    fn shrinking_the_replicas_completes_at_once() {
        let s = state(&[1, 2, 3], &[1, 2, 3], 1);
        let next = reassign(&s, &[1, 2], true, registered, &up(&[1, 2, 3]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (next.replicas.clone(), next.isr.clone()),
            (vec![1, 2], vec![1, 2])
        );
        assert!(!next.is_reassigning());
        assert_eq!(next.leader_epoch, s.leader_epoch + 1);
        // The current target again: nothing to do.
        assert_eq!(
            reassign(&next, &[1, 2], false, registered, &up(&[1, 2])),
            Ok(None)
        );
    }

    #[test]
    fn replication_factor_change_needs_the_flag() {
        let s = state(&[1, 2], &[1, 2], 1);
        let e = reassign(&s, &[1, 2, 3], false, registered, &up(&[1, 2, 3])).unwrap_err();
        assert_eq!(
            e,
            ReassignmentError::ReplicationFactorChanged { from: 2, to: 3 }
        );
        assert_eq!(
            e.error_code(),
            ResponseError::InvalidReplicationFactor.code()
        );
        assert!(reassign(&s, &[1, 2, 3], true, registered, &up(&[1, 2, 3]))
            .unwrap()
            .is_some());
        // Validation comes first.
        assert_eq!(
            reassign(&s, &[1, 9, 3], false, registered, &up(&[1])).unwrap_err(),
            ReassignmentError::UnregisteredBroker(9)
        );
    }

    #[test]
    fn cancel_reverts_to_the_original_replicas() {
        let s = state(&[1, 2], &[1, 2], 1);
        let moving = reassign(&s, &[3, 4], false, registered, &up(&[1, 2, 3, 4]))
            .unwrap()
            .unwrap();
        let partly = expand(&moving, &[1, 2, 3]).unwrap();
        let back = cancel(&partly, false, &up(&[1, 2, 3, 4])).unwrap().unwrap();
        assert_eq!(back.replicas, vec![1, 2]);
        assert_eq!(back.isr, vec![1, 2]);
        assert!(!back.is_reassigning());
        assert_eq!(back.leader, 1);
        // 3 and 4 leave: new leader epoch.
        assert_eq!(back.leader_epoch, partly.leader_epoch + 1);
        assert_eq!(
            cancel(&back, false, &up(&[1, 2])),
            Err(ReassignmentError::NoReassignmentInProgress)
        );
    }

    #[test]
    fn cancel_that_needs_an_unclean_election_is_refused_unless_enabled() {
        let mut s = state(&[3, 1], &[3], 3);
        s.adding_replicas = vec![3];
        s.removing_replicas = vec![1];
        assert_eq!(
            cancel(&s, false, &up(&[1, 3])),
            Err(ReassignmentError::RevertNeedsUncleanElection)
        );
        let back = cancel(&s, true, &up(&[1, 3])).unwrap().unwrap();
        assert_eq!(
            (back.replicas.clone(), back.isr.clone(), back.leader),
            (vec![1], vec![1], 1)
        );
    }

    /// Distinct broker ids from 1..=6, 1 to 4 of them.
    fn brokers() -> impl proptest::strategy::Strategy<Value = Vec<NodeId>> {
        use proptest::prelude::*;
        proptest::sample::subsequence((1..=6).collect::<Vec<NodeId>>(), 1..=4).prop_shuffle()
    }

    proptest::proptest! {
        #[test]
        fn every_move_ends_on_its_target_once_the_isr_has_it(
            current in brokers(),
            target in brokers(),
        ) {
            let everyone = [1, 2, 3, 4, 5, 6];
            let s = state(&current, &current, current[0]);
            let registered = |b: NodeId| (1..=6).contains(&b);
            let moving = reassign(&s, &target, true, registered, &up(&everyone))
                .unwrap()
                .unwrap_or(s.clone());
            proptest::prop_assert!(moving.replicas.starts_with(&target));
            let mut done = moving.clone();
            if moving.is_reassigning() {
                let mut isr = moving.isr.clone();
                isr.extend(&moving.adding_replicas);
                done = expand(&moving, &isr).unwrap();
            }
            proptest::prop_assert_eq!(&done.replicas, &target);
            proptest::prop_assert!(!done.is_reassigning());
            let mut isr = done.isr.clone();
            isr.sort_unstable();
            let mut want = target.clone();
            want.sort_unstable();
            proptest::prop_assert_eq!(isr, want);
            proptest::prop_assert!(target.contains(&done.leader));
            // A leader epoch bump exactly when the leader changed or replicas left.
            let left = current.iter().any(|r| !target.contains(r));
            proptest::prop_assert_eq!(
                done.leader_epoch > s.leader_epoch,
                left || done.leader != s.leader
            );
        }
    }

    #[test]
    fn a_removed_leader_with_no_target_in_the_isr_keeps_waiting() {
        // {1} -> {2}: until 2 is in the ISR the reassignment cannot complete.
        let s = state(&[1], &[1], 1);
        let moving = reassign(&s, &[2], false, registered, &up(&[1, 2]))
            .unwrap()
            .unwrap();
        assert_eq!(moving.replicas, vec![2, 1]);
        assert_eq!(moving.leader, 1);
        let done = expand(&moving, &[1, 2]).unwrap();
        assert_eq!(
            (done.replicas.clone(), done.isr.clone(), done.leader),
            (vec![2], vec![2], 2)
        );
        assert_ne!(done.leader, NO_LEADER);
    }
}
