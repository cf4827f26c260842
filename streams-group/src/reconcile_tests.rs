use super::*;

#[derive(Default)]
struct Held {
    active: BTreeMap<(String, i32), String>,
    standby: BTreeSet<(String, i32, String)>,
    warmup: BTreeSet<(String, i32, String)>,
}

impl Owners for Held {
    fn active_process(&self, s: &str, p: i32) -> Option<&str> {
        self.active.get(&(s.to_string(), p)).map(String::as_str)
    }
    fn standby_on(&self, s: &str, p: i32, process: &str) -> bool {
        self.standby
            .contains(&(s.to_string(), p, process.to_string()))
    }
    fn warmup_on(&self, s: &str, p: i32, process: &str) -> bool {
        self.warmup
            .contains(&(s.to_string(), p, process.to_string()))
    }
}

fn set(items: &[(&str, &[i32])]) -> TaskSet {
    items
        .iter()
        .map(|(s, p)| (s.to_string(), p.iter().copied().collect()))
        .collect()
}

fn tasks(
    active: &[(&str, &[i32])],
    standby: &[(&str, &[i32])],
    warmup: &[(&str, &[i32])],
) -> Tasks {
    Tasks {
        active: set(active),
        standby: set(standby),
        warmup: set(warmup),
    }
}

fn stable(epoch: i32, assigned: Tasks) -> Current {
    Current {
        state: MemberState::Stable,
        member_epoch: epoch,
        previous_member_epoch: epoch - 1,
        assigned: Assigned::from_tasks(&assigned, epoch),
        pending_revocation: Assigned::default(),
    }
}

#[test]
fn a_joining_member_gets_free_tasks_at_the_target_epoch() {
    let target = tasks(&[("0", &[0, 1])], &[], &[]);
    let next = reconcile(
        &Current::joining(),
        "p1",
        3,
        &target,
        Some(&Tasks::default()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.member_epoch, 3);
    assert_eq!(next.previous_member_epoch, 0);
    assert_eq!(next.assigned.tasks(), target);
    assert_eq!(next.assigned.active["0"][&0], 3);
}

#[test]
fn a_stable_member_at_the_target_epoch_stays() {
    let cur = stable(4, tasks(&[("0", &[0])], &[], &[]));
    let next = reconcile(&cur, "p1", 4, &Tasks::default(), None, &Held::default()).unwrap();
    assert_eq!(next, cur);
}

#[test]
fn an_active_task_owned_elsewhere_is_unreleased() {
    let mut held = Held::default();
    held.active.insert(("0".into(), 1), "p2".into());
    let target = tasks(&[("0", &[0, 1])], &[], &[]);
    let next = reconcile(
        &Current::joining(),
        "p1",
        3,
        &target,
        Some(&Tasks::default()),
        &held,
    )
    .unwrap();
    assert_eq!(next.state, MemberState::UnreleasedTasks);
    assert_eq!(next.member_epoch, 3);
    assert_eq!(next.assigned.tasks(), tasks(&[("0", &[0])], &[], &[]));
    // Once released, the next heartbeat grants it, keeping the first task's epoch.
    let next2 = reconcile(
        &next,
        "p1",
        3,
        &target,
        Some(&next.assigned.tasks()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(next2.state, MemberState::Stable);
    assert_eq!(next2.assigned.tasks(), target);
    assert_eq!(next2.assigned.active["0"][&0], 3);
}

#[test]
fn revocation_comes_first_and_waits_for_the_acknowledgement() {
    let cur = stable(3, tasks(&[("0", &[0, 1])], &[], &[]));
    let target = tasks(&[("0", &[0, 2])], &[], &[]);
    let owned = cur.assigned.tasks();
    let next = reconcile(&cur, "p1", 5, &target, Some(&owned), &Held::default()).unwrap();
    assert_eq!(next.state, MemberState::UnrevokedTasks);
    assert_eq!(next.member_epoch, 3);
    assert_eq!(next.assigned.tasks(), tasks(&[("0", &[0])], &[], &[]));
    assert_eq!(
        next.pending_revocation.tasks(),
        tasks(&[("0", &[1])], &[], &[])
    );
    // Still owned: no progress. Not reported: no progress.
    assert_eq!(
        reconcile(&next, "p1", 5, &target, Some(&owned), &Held::default()).unwrap(),
        next
    );
    assert_eq!(
        reconcile(&next, "p1", 5, &target, None, &Held::default()).unwrap(),
        next
    );
    // Released: epoch + 1 first, then the target epoch with the new task.
    let released = tasks(&[("0", &[0])], &[], &[]);
    let after = reconcile(&next, "p1", 5, &target, Some(&released), &Held::default()).unwrap();
    assert_eq!(after.state, MemberState::Stable);
    assert_eq!(after.member_epoch, 5);
    assert_eq!(after.assigned.tasks(), target);
    assert_eq!(
        after.assigned.active["0"][&0], 3,
        "a kept task keeps its epoch"
    );
    assert_eq!(after.assigned.active["0"][&2], 5);
}

#[test]
fn a_member_that_reports_the_revoked_tasks_gone_skips_the_wait() {
    let cur = stable(3, tasks(&[("0", &[0, 1])], &[], &[]));
    let target = tasks(&[("0", &[0])], &[], &[]);
    let owned = tasks(&[("0", &[0])], &[], &[]);
    let next = reconcile(&cur, "p1", 4, &target, Some(&owned), &Held::default()).unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.member_epoch, 4);
}

#[test]
fn a_standby_is_not_given_where_the_process_runs_the_task_active() {
    let mut held = Held::default();
    held.active.insert(("0".into(), 0), "p1".into());
    let target = tasks(&[], &[("0", &[0])], &[]);
    let next = reconcile(
        &Current::joining(),
        "p1",
        2,
        &target,
        Some(&Tasks::default()),
        &held,
    )
    .unwrap();
    assert_eq!(next.state, MemberState::UnreleasedTasks);
    assert!(next.assigned.is_empty());
    // Another process running it active does not block a standby here.
    let mut held = Held::default();
    held.active.insert(("0".into(), 0), "p2".into());
    let next = reconcile(
        &Current::joining(),
        "p1",
        2,
        &target,
        Some(&Tasks::default()),
        &held,
    )
    .unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.assigned.tasks(), target);
}

#[test]
fn a_demoted_active_task_becomes_a_standby_at_once_and_the_active_part_waits() {
    let cur = stable(3, tasks(&[("0", &[0])], &[], &[]));
    let mut held = Held::default();
    held.active.insert(("0".into(), 0), "p1".into());
    let target = tasks(&[], &[("0", &[0])], &[]);
    let next = reconcile(&cur, "p1", 4, &target, Some(&cur.assigned.tasks()), &held).unwrap();
    assert_eq!(next.state, MemberState::UnrevokedTasks);
    assert_eq!(next.assigned.tasks(), tasks(&[], &[("0", &[0])], &[]));
    assert_eq!(
        next.pending_revocation.tasks(),
        tasks(&[("0", &[0])], &[], &[])
    );
}

#[test]
fn a_standby_turns_into_a_warmup_without_revocation() {
    let cur = stable(3, tasks(&[], &[("0", &[1])], &[]));
    let mut held = Held::default();
    held.standby.insert(("0".into(), 1, "p1".into()));
    let target = tasks(&[], &[], &[("0", &[1])]);
    let next = reconcile(&cur, "p1", 4, &target, Some(&cur.assigned.tasks()), &held).unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.member_epoch, 4);
    assert_eq!(next.assigned.tasks(), target);
}

#[test]
fn a_standby_promoted_to_active_is_kept_until_the_active_task_is_free() {
    let cur = stable(3, tasks(&[], &[("0", &[1])], &[]));
    let mut held = Held::default();
    held.active.insert(("0".into(), 1), "p2".into());
    held.standby.insert(("0".into(), 1, "p1".into()));
    let target = tasks(&[("0", &[1])], &[], &[]);
    let next = reconcile(&cur, "p1", 4, &target, Some(&cur.assigned.tasks()), &held).unwrap();
    assert_eq!(next.state, MemberState::UnreleasedTasks);
    assert_eq!(next.assigned.tasks(), tasks(&[], &[("0", &[1])], &[]));
    // The other process released it: promoted in place.
    let mut held = Held::default();
    held.standby.insert(("0".into(), 1, "p1".into()));
    let after = reconcile(&next, "p1", 4, &target, Some(&next.assigned.tasks()), &held).unwrap();
    assert_eq!(after.state, MemberState::Stable);
    assert_eq!(after.assigned.tasks(), target);
}

#[test]
fn an_unknown_state_fences_unless_the_member_owns_nothing() {
    let mut cur = stable(3, tasks(&[("0", &[0])], &[], &[]));
    cur.state = MemberState::Unknown;
    let target = tasks(&[("0", &[0])], &[], &[]);
    assert!(reconcile(&cur, "p1", 3, &target, None, &Held::default()).is_err());
    assert!(reconcile(
        &cur,
        "p1",
        3,
        &target,
        Some(&cur.assigned.tasks()),
        &Held::default()
    )
    .is_err());
    let next = reconcile(
        &cur,
        "p1",
        3,
        &target,
        Some(&Tasks::default()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.member_epoch, 3);
}

#[test]
fn member_state_codes_are_kafkas() {
    for s in [
        MemberState::Stable,
        MemberState::UnrevokedTasks,
        MemberState::UnreleasedTasks,
        MemberState::Unknown,
    ] {
        assert_eq!(MemberState::from_code(s.code()), s);
    }
    assert_eq!(MemberState::Stable.code(), 1);
    assert_eq!(MemberState::Unknown.code(), 127);
}

#[test]
fn a_joining_member_is_at_epoch_zero_with_no_previous_epoch() {
    let j = Current::joining();
    assert_eq!((j.member_epoch, j.previous_member_epoch), (0, -1));
    assert_eq!(j.state, MemberState::Stable);
    assert!(j.assigned.is_empty() && j.pending_revocation.is_empty());
}

#[test]
fn converting_one_replica_keeps_the_others_of_its_subtopology() {
    let cur = stable(3, tasks(&[], &[("0", &[1, 2])], &[]));
    let target = tasks(&[], &[("0", &[2])], &[("0", &[1])]);
    let next = reconcile(
        &cur,
        "p1",
        4,
        &target,
        Some(&cur.assigned.tasks()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(next.assigned.tasks(), target);
    assert_eq!(next.state, MemberState::Stable);
}

#[test]
fn an_unacknowledged_standby_revocation_is_still_owned() {
    // Pending: an active and a standby task; the member reports only the standby still owned.
    let cur = stable(3, tasks(&[("0", &[0])], &[("1", &[0])], &[]));
    let target = Tasks::default();
    let next = reconcile(
        &cur,
        "p1",
        4,
        &target,
        Some(&cur.assigned.tasks()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(next.state, MemberState::UnrevokedTasks);
    let standby_only = tasks(&[], &[("1", &[0])], &[]);
    let after = reconcile(
        &next,
        "p1",
        4,
        &target,
        Some(&standby_only),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(after, next, "the standby is still there: no progress");
}

#[test]
fn a_member_that_revoked_for_an_older_target_moves_one_epoch_and_revokes_again() {
    // At epoch 3 it was told to give up task 1 for the target of epoch 5; meanwhile the target
    // of epoch 6 takes task 2 as well.
    let cur = stable(3, tasks(&[("0", &[0, 1, 2])], &[], &[]));
    let t5 = tasks(&[("0", &[0, 2])], &[], &[]);
    let revoking = reconcile(
        &cur,
        "p1",
        5,
        &t5,
        Some(&cur.assigned.tasks()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(revoking.member_epoch, 3);
    let t6 = tasks(&[("0", &[0])], &[], &[]);
    let acked = tasks(&[("0", &[0, 2])], &[], &[]);
    let next = reconcile(&revoking, "p1", 6, &t6, Some(&acked), &Held::default()).unwrap();
    assert_eq!(next.state, MemberState::UnrevokedTasks);
    assert_eq!(
        next.member_epoch, 4,
        "the epoch after the one it acknowledged"
    );
    assert_eq!(next.previous_member_epoch, 3);
    assert_eq!(
        next.pending_revocation.tasks(),
        tasks(&[("0", &[2])], &[], &[])
    );
}

/// Another member of the member's own process holds the task: in each role, which of the
/// member's roles it blocks.
#[test]
fn a_task_held_by_another_member_of_the_same_process_blocks_each_role() {
    let join = Current::joining();
    let empty = Tasks::default();
    let blocked = |held: &Held, target: &Tasks| {
        reconcile(&join, "p1", 2, target, Some(&empty), held)
            .unwrap()
            .state
            == MemberState::UnreleasedTasks
    };
    let active = tasks(&[("0", &[0])], &[], &[]);
    let standby = tasks(&[], &[("0", &[0])], &[]);
    let warmup = tasks(&[], &[], &[("0", &[0])]);
    let mut standby_here = Held::default();
    standby_here.standby.insert(("0".into(), 0, "p1".into()));
    let mut warmup_here = Held::default();
    warmup_here.warmup.insert(("0".into(), 0, "p1".into()));
    let mut active_here = Held::default();
    active_here.active.insert(("0".into(), 0), "p1".into());
    let mut standby_elsewhere = Held::default();
    standby_elsewhere
        .standby
        .insert(("0".into(), 0, "p2".into()));
    let mut warmup_elsewhere = Held::default();
    warmup_elsewhere.warmup.insert(("0".into(), 0, "p2".into()));

    assert!(blocked(&standby_here, &active));
    assert!(blocked(&warmup_here, &active));
    assert!(!blocked(&standby_elsewhere, &active));
    assert!(!blocked(&warmup_elsewhere, &active));

    assert!(blocked(&active_here, &standby));
    assert!(blocked(&standby_here, &standby));
    assert!(blocked(&warmup_here, &standby));
    assert!(!blocked(&warmup_elsewhere, &standby));

    assert!(blocked(&active_here, &warmup));
    assert!(blocked(&standby_here, &warmup));
    assert!(blocked(&warmup_here, &warmup));
    assert!(!blocked(&standby_elsewhere, &warmup));
}

#[test]
fn every_replica_of_a_subtopology_converts_at_once() {
    let cur = stable(3, tasks(&[], &[("0", &[1, 2])], &[]));
    let target = tasks(&[], &[], &[("0", &[1, 2])]);
    let next = reconcile(
        &cur,
        "p1",
        4,
        &target,
        Some(&cur.assigned.tasks()),
        &Held::default(),
    )
    .unwrap();
    assert_eq!(next.assigned.tasks(), target);
    assert!(next.pending_revocation.is_empty());
    assert_eq!(next.state, MemberState::Stable);
}
