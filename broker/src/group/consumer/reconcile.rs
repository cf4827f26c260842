//! Member reconciliation (KIP-848): given what a member has now, the group's target
//! assignment and its epoch, and which partitions other members still own, the member's next
//! state. Pure: no clock, no I/O, no group; the coordinator calls it on every heartbeat.
//!
//! The rules, as Kafka's group coordinator applies them:
//! - A member gives up partitions before it gets new ones: while it still reports owning a
//!   partition the target took away, it stays at its epoch with the partitions it keeps
//!   ([`MemberState::UnrevokedPartitions`]) and is told to revoke the others.
//! - A partition the target gives it is handed over only once no other member owns it (its
//!   previous owner has revoked it); until then the member moves to the target epoch without it
//!   ([`MemberState::UnreleasedPartitions`]) and gets it on a later heartbeat.
//! - A member that does not say what it owns is taken to own everything it was given.
//! - A member in a state this version does not know must come back empty-handed: it is fenced
//!   unless it reports owning nothing, and is then reconciled from scratch.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// Partitions by topic id.
pub type Partitions = BTreeMap<Uuid, BTreeSet<i32>>;

/// Where a member is in converging to the target assignment (the `State` field of Kafka's
/// consumer group current member assignment record: 0, 1, 2, 127).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// It has the target assignment of its epoch.
    Stable,
    /// It must revoke partitions before it moves to the next epoch.
    UnrevokedPartitions,
    /// It is at the target epoch but waits for partitions other members have not released.
    UnreleasedPartitions,
    /// A state written by a newer version.
    Unknown,
}

impl MemberState {
    pub fn code(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_code(code: i8) -> MemberState {
        match code {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }
}

/// A member's current assignment: what the coordinator last gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    pub state: MemberState,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// The partitions it may consume now.
    pub assigned: Partitions,
    /// The partitions it has been told to give up and has not yet.
    pub pending_revocation: Partitions,
}

impl Current {
    /// A member that has just joined (epoch 0, nothing assigned).
    pub fn joining() -> Current {
        Current {
            state: MemberState::Stable,
            member_epoch: 0,
            previous_member_epoch: 0,
            assigned: Partitions::new(),
            pending_revocation: Partitions::new(),
        }
    }
}

/// The member is in a state this version cannot reconcile and still owns partitions: it is
/// answered FENCED_MEMBER_EPOCH and must rejoin with nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the consumer group member is in an unknown state; it must give up all its partitions and rejoin")]
pub struct Fenced;

/// The member's next state. `target_epoch` and `target` are the group's target assignment
/// epoch and this member's part of it; `owned` is what the member's heartbeat says it owns
/// (`None` when the heartbeat did not say); `owner_epoch(topic, partition)` is the epoch of the
/// member that owns the partition now, `None` when no member does.
pub fn reconcile(
    member: &Current,
    target_epoch: i32,
    target: &Partitions,
    owned: Option<&Partitions>,
    owner_epoch: impl Fn(Uuid, i32) -> Option<i32>,
) -> Result<Current, Fenced> {
    let next =
        |epoch: i32| next_assignment(member, epoch, target_epoch, target, owned, &owner_epoch);
    let result = match member.state {
        MemberState::Stable if member.member_epoch == target_epoch => member.clone(),
        MemberState::Stable | MemberState::UnreleasedPartitions => next(member.member_epoch),
        MemberState::UnrevokedPartitions => {
            if still_owns(owned, &member.pending_revocation) {
                member.clone()
            } else {
                // Revoked: the member moves on to the next epoch, towards the target.
                next(member.member_epoch + 1)
            }
        }
        MemberState::Unknown => {
            if owned.is_none_or(|o| o.values().any(|p| !p.is_empty())) {
                return Err(Fenced);
            }
            next(target_epoch)
        }
    };
    debug_assert!(disjoint(&result.assigned, &result.pending_revocation));
    Ok(result)
}

/// Whether `owned` (as the member reported it; `None`: everything) includes any of `partitions`.
fn still_owns(owned: Option<&Partitions>, partitions: &Partitions) -> bool {
    let Some(owned) = owned else {
        return true;
    };
    owned.iter().any(|(topic, ps)| {
        partitions
            .get(topic)
            .is_some_and(|revoke| ps.iter().any(|p| revoke.contains(p)))
    })
}

fn disjoint(a: &Partitions, b: &Partitions) -> bool {
    a.iter()
        .all(|(t, ps)| b.get(t).is_none_or(|other| ps.is_disjoint(other)))
}

fn next_assignment(
    member: &Current,
    member_epoch: i32,
    target_epoch: i32,
    target: &Partitions,
    owned: Option<&Partitions>,
    owner_epoch: &impl Fn(Uuid, i32) -> Option<i32>,
) -> Current {
    let empty = BTreeSet::new();
    let mut keep = Partitions::new();
    let mut revoke = Partitions::new();
    let mut gain = Partitions::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = target
        .keys()
        .chain(member.assigned.keys())
        .copied()
        .collect();
    for topic in topics {
        let wanted = target.get(&topic).unwrap_or(&empty);
        let had = member.assigned.get(&topic).unwrap_or(&empty);
        let kept: BTreeSet<i32> = had.intersection(wanted).copied().collect();
        let given_up: BTreeSet<i32> = had.difference(&kept).copied().collect();
        let mut new: BTreeSet<i32> = wanted.difference(&kept).copied().collect();
        let before = new.len();
        new.retain(|&p| owner_epoch(topic, p).is_none());
        unreleased |= new.len() < before;
        for (map, set) in [(&mut keep, kept), (&mut revoke, given_up), (&mut gain, new)] {
            if !set.is_empty() {
                map.insert(topic, set);
            }
        }
    }
    let moved =
        |state: MemberState, epoch: i32, assigned: Partitions, pending: Partitions| Current {
            state,
            member_epoch: epoch,
            previous_member_epoch: member.member_epoch,
            assigned,
            pending_revocation: pending,
        };
    if !revoke.is_empty() && still_owns(owned, &revoke) {
        // First the revocation, at the member's epoch.
        return moved(MemberState::UnrevokedPartitions, member_epoch, keep, revoke);
    }
    for (topic, ps) in gain {
        keep.entry(topic).or_default().extend(ps);
    }
    let state = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    moved(state, target_epoch, keep, Partitions::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn parts(spec: &[(u128, &[i32])]) -> Partitions {
        spec.iter()
            .filter(|(_, ps)| !ps.is_empty())
            .map(|(topic, ps)| (t(*topic), ps.iter().copied().collect()))
            .collect()
    }

    fn free(_: Uuid, _: i32) -> Option<i32> {
        None
    }

    fn stable(epoch: i32, assigned: Partitions) -> Current {
        Current {
            state: MemberState::Stable,
            member_epoch: epoch,
            previous_member_epoch: epoch - 1,
            assigned,
            pending_revocation: Partitions::new(),
        }
    }

    #[test]
    fn a_stable_member_at_the_target_epoch_stays_as_it_is() {
        let m = stable(5, parts(&[(1, &[0, 1])]));
        let next = reconcile(&m, 5, &parts(&[(1, &[0, 1, 2])]), None, free).unwrap();
        assert_eq!(next, m);
    }

    #[test]
    fn a_joining_member_gets_free_partitions_and_the_target_epoch() {
        let next = reconcile(
            &Current::joining(),
            3,
            &parts(&[(1, &[0, 1]), (2, &[4])]),
            Some(&Partitions::new()),
            free,
        )
        .unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!((next.member_epoch, next.previous_member_epoch), (3, 0));
        assert_eq!(next.assigned, parts(&[(1, &[0, 1]), (2, &[4])]));
        assert!(next.pending_revocation.is_empty());
    }

    #[test]
    fn partitions_are_revoked_at_the_old_epoch_before_any_is_assigned() {
        let m = stable(4, parts(&[(1, &[0, 1, 2])]));
        let target = parts(&[(1, &[0]), (2, &[7])]);
        let owned = parts(&[(1, &[0, 1, 2])]);
        let next = reconcile(&m, 5, &target, Some(&owned), free).unwrap();
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.member_epoch, 4, "the epoch waits for the revocation");
        assert_eq!(next.assigned, parts(&[(1, &[0])]), "nothing new yet");
        assert_eq!(next.pending_revocation, parts(&[(1, &[1, 2])]));
        // Still owning one of them: no progress.
        let again = reconcile(&next, 5, &target, Some(&parts(&[(1, &[0, 2])])), free).unwrap();
        assert_eq!(again, next);
        // Revoked: the target epoch, with the new partition.
        let done = reconcile(&next, 5, &target, Some(&parts(&[(1, &[0])])), free).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.member_epoch, done.previous_member_epoch), (5, 4));
        assert_eq!(done.assigned, parts(&[(1, &[0]), (2, &[7])]));
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn a_member_that_does_not_say_what_it_owns_is_taken_to_own_everything() {
        let m = stable(4, parts(&[(1, &[0, 1])]));
        let next = reconcile(&m, 5, &parts(&[(1, &[0])]), None, free).unwrap();
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        let still = reconcile(&next, 5, &parts(&[(1, &[0])]), None, free).unwrap();
        assert_eq!(still, next);
    }

    #[test]
    fn a_revocation_the_member_already_made_is_not_asked_for() {
        let m = stable(4, parts(&[(1, &[0, 1])]));
        let owned = parts(&[(1, &[0])]);
        let next = reconcile(&m, 5, &parts(&[(1, &[0])]), Some(&owned), free).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 5);
        assert_eq!(next.assigned, parts(&[(1, &[0])]));
    }

    #[test]
    fn a_partition_another_member_still_owns_waits_for_its_release() {
        let m = stable(2, parts(&[(1, &[0])]));
        let target = parts(&[(1, &[0, 1, 2])]);
        let owned = parts(&[(1, &[0])]);
        // Partition 1 is still another member's (at epoch 2).
        let held = |topic: Uuid, p: i32| (topic == t(1) && p == 1).then_some(2);
        let next = reconcile(&m, 3, &target, Some(&owned), held).unwrap();
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(
            next.member_epoch, 3,
            "it moves to the target epoch meanwhile"
        );
        assert_eq!(next.assigned, parts(&[(1, &[0, 2])]));
        // Still held: nothing changes.
        let waiting = reconcile(&next, 3, &target, Some(&owned), held).unwrap();
        assert_eq!(
            waiting,
            Current {
                previous_member_epoch: 3,
                ..next.clone()
            }
        );
        // Released: the member gets it and is stable.
        let done = reconcile(&next, 3, &target, Some(&owned), free).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned, target);
    }

    #[test]
    fn only_unreleased_partitions_leave_the_member_waiting_at_the_target_epoch() {
        let m = stable(2, parts(&[(1, &[0])]));
        let held = |_: Uuid, p: i32| (p == 1).then_some(2);
        let next = reconcile(
            &m,
            3,
            &parts(&[(1, &[0, 1])]),
            Some(&parts(&[(1, &[0])])),
            held,
        )
        .unwrap();
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(
            (next.member_epoch, next.assigned.clone()),
            (3, parts(&[(1, &[0])]))
        );
    }

    #[test]
    fn a_member_in_an_unknown_state_is_fenced_unless_it_owns_nothing() {
        let m = Current {
            state: MemberState::Unknown,
            ..stable(7, parts(&[(1, &[0])]))
        };
        let target = parts(&[(1, &[0, 1])]);
        assert_eq!(reconcile(&m, 8, &target, None, free), Err(Fenced));
        assert_eq!(
            reconcile(&m, 8, &target, Some(&parts(&[(1, &[0])])), free),
            Err(Fenced)
        );
        let next = reconcile(&m, 8, &target, Some(&Partitions::new()), free).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!((next.member_epoch, next.assigned.clone()), (8, target));
    }

    #[test]
    fn a_member_that_revoked_while_the_target_moved_again_revokes_more_at_the_next_epoch() {
        // Kafka's CurrentAssignmentBuilder: having revoked, the member goes on from its epoch
        // plus one; a target that now takes another of its partitions is a new revocation there.
        let m = Current {
            state: MemberState::UnrevokedPartitions,
            member_epoch: 5,
            previous_member_epoch: 4,
            assigned: parts(&[(1, &[0, 2])]),
            pending_revocation: parts(&[(1, &[1])]),
        };
        let owned = parts(&[(1, &[0, 2])]);
        let next = reconcile(&m, 7, &parts(&[(1, &[0])]), Some(&owned), free).unwrap();
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!((next.member_epoch, next.previous_member_epoch), (6, 5));
        assert_eq!(next.assigned, parts(&[(1, &[0])]));
        assert_eq!(next.pending_revocation, parts(&[(1, &[2])]));
    }

    #[test]
    fn assigned_and_pending_partitions_are_told_apart() {
        assert!(disjoint(
            &parts(&[(1, &[0, 1])]),
            &parts(&[(1, &[2]), (2, &[0])])
        ));
        assert!(!disjoint(&parts(&[(1, &[0, 1])]), &parts(&[(1, &[1])])));
    }

    #[test]
    fn states_keep_their_record_codes() {
        for s in [
            MemberState::Stable,
            MemberState::UnrevokedPartitions,
            MemberState::UnreleasedPartitions,
            MemberState::Unknown,
        ] {
            assert_eq!(MemberState::from_code(s.code()), s);
        }
        assert_eq!(MemberState::from_code(42), MemberState::Unknown);
    }
}
