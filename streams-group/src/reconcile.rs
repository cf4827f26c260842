//! One streams group member's next state towards its target assignment (Kafka 4.4's
//! `CurrentAssignmentBuilder` for streams groups), over three kinds of task:
//!
//! - an active task exists once in the group: it is given to a member only when no member has it
//!   active any more (assigned or still revoking), and not to a process that still runs it as a
//!   standby or warm-up of another member;
//! - a standby or warm-up task exists on several processes, but at most once per process: it is
//!   given once no other member of the same process holds it in any role;
//! - a member gives up what it must revoke before it receives anything new, and moves to the
//!   target epoch only then; revocation is acknowledged by the owned tasks a heartbeat reports;
//! - a role change of the member's own task happens in place, so the client recycles the task's
//!   state: an active task demoted to standby is granted as a standby at once (the active part
//!   still waits for the acknowledgement), a standby becomes a warm-up and back without any, and
//!   a standby or warm-up promoted to active is kept until the active task is granted.
//!
//! Active tasks carry the member epoch at which each was given (the assignment epoch that an
//! offset commit of an older epoch is checked against, as KIP-1251 does for partitions).

use std::collections::{BTreeMap, BTreeSet};

use crate::{TaskSet, Tasks};

/// Active tasks with the epoch each was assigned at: subtopology -> partition -> epoch.
pub type ActiveTasks = BTreeMap<String, BTreeMap<i32, i32>>;

/// A member's tasks as the group keeps them (Kafka's `TasksTupleWithEpochs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assigned {
    pub active: ActiveTasks,
    pub standby: TaskSet,
    pub warmup: TaskSet,
}

impl Assigned {
    pub fn is_empty(&self) -> bool {
        self.active.values().all(BTreeMap::is_empty)
            && self.standby.values().all(BTreeSet::is_empty)
            && self.warmup.values().all(BTreeSet::is_empty)
    }

    /// The same tasks without their epochs.
    pub fn tasks(&self) -> Tasks {
        Tasks {
            active: self
                .active
                .iter()
                .map(|(s, p)| (s.clone(), p.keys().copied().collect()))
                .collect(),
            standby: self.standby.clone(),
            warmup: self.warmup.clone(),
        }
    }

    /// Active tasks given at `epoch`.
    pub fn from_tasks(tasks: &Tasks, epoch: i32) -> Assigned {
        Assigned {
            active: tasks
                .active
                .iter()
                .filter(|(_, p)| !p.is_empty())
                .map(|(s, p)| (s.clone(), p.iter().map(|&p| (p, epoch)).collect()))
                .collect(),
            standby: without_empty(&tasks.standby),
            warmup: without_empty(&tasks.warmup),
        }
    }

    fn merge(mut self, other: Assigned) -> Assigned {
        for (s, p) in other.active {
            self.active.entry(s).or_default().extend(p);
        }
        merge_set(&mut self.standby, other.standby);
        merge_set(&mut self.warmup, other.warmup);
        self
    }
}

fn without_empty(tasks: &TaskSet) -> TaskSet {
    tasks
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(s, p)| (s.clone(), p.clone()))
        .collect()
}

fn merge_set(into: &mut TaskSet, from: TaskSet) {
    for (s, p) in from {
        into.entry(s).or_default().extend(p);
    }
}

fn contains(set: &TaskSet, s: &str, p: i32) -> bool {
    set.get(s).is_some_and(|x| x.contains(&p))
}

fn insert(set: &mut TaskSet, s: &str, p: i32) {
    set.entry(s.to_string()).or_default().insert(p);
}

fn remove(set: &mut TaskSet, s: &str, p: i32) {
    if let Some(x) = set.get_mut(s) {
        if x.remove(&p) && x.is_empty() {
            set.remove(s);
        }
    }
}

/// A member's reconciliation state (Kafka's streams `MemberState`, with its record codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    Stable,
    UnrevokedTasks,
    UnreleasedTasks,
    Unknown,
}

impl MemberState {
    pub fn code(self) -> i8 {
        match self {
            MemberState::Stable => 1,
            MemberState::UnrevokedTasks => 2,
            MemberState::UnreleasedTasks => 3,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_code(code: i8) -> MemberState {
        match code {
            1 => MemberState::Stable,
            2 => MemberState::UnrevokedTasks,
            3 => MemberState::UnreleasedTasks,
            _ => MemberState::Unknown,
        }
    }
}

/// A member's current assignment (record 22's content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    pub state: MemberState,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub assigned: Assigned,
    pub pending_revocation: Assigned,
}

impl Current {
    /// A member that just joined: nothing assigned, epoch 0.
    pub fn joining() -> Current {
        Current {
            state: MemberState::Stable,
            member_epoch: 0,
            previous_member_epoch: -1,
            assigned: Assigned::default(),
            pending_revocation: Assigned::default(),
        }
    }

    fn next(
        &self,
        state: MemberState,
        epoch: i32,
        assigned: Assigned,
        pending: Assigned,
    ) -> Current {
        Current {
            state,
            previous_member_epoch: self.member_epoch,
            member_epoch: epoch,
            assigned,
            pending_revocation: pending,
        }
    }

    pub fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }
}

/// Who holds each task across the group, as the group tracks it from every member's assigned
/// and pending-revocation tasks.
pub trait Owners {
    /// The process of the member that has the task active, if any.
    fn active_process(&self, subtopology: &str, partition: i32) -> Option<&str>;
    /// Whether a member of `process` has the task as a standby.
    fn standby_on(&self, subtopology: &str, partition: i32, process: &str) -> bool;
    /// Whether a member of `process` has the task as a warm-up.
    fn warmup_on(&self, subtopology: &str, partition: i32, process: &str) -> bool;
}

/// The member must abandon its tasks and rejoin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced(pub String);

/// A member's tasks as its heartbeat reports them, and whether any of `pending` is among them.
fn still_owns(owned: Option<&Tasks>, pending: &Assigned) -> bool {
    let Some(owned) = owned else {
        // Without a report, nothing is proven released.
        return true;
    };
    pending
        .active
        .iter()
        .any(|(s, p)| p.keys().any(|&p| contains(&owned.active, s, p)))
        || pending
            .standby
            .iter()
            .any(|(s, p)| p.iter().any(|&p| contains(&owned.standby, s, p)))
        || pending
            .warmup
            .iter()
            .any(|(s, p)| p.iter().any(|&p| contains(&owned.warmup, s, p)))
}

/// The member's next state towards `target` at `target_epoch`. `owned` is what the heartbeat
/// reported (`None`: not reported).
pub fn reconcile(
    current: &Current,
    process: &str,
    target_epoch: i32,
    target: &Tasks,
    owned: Option<&Tasks>,
    owners: &dyn Owners,
) -> Result<Current, Fenced> {
    let step = Step {
        current,
        process,
        target_epoch,
        target,
        owned,
        owners,
    };
    match current.state {
        MemberState::Stable if current.member_epoch == target_epoch => Ok(current.clone()),
        MemberState::Stable => Ok(step.next(current.member_epoch)),
        MemberState::UnrevokedTasks => {
            if still_owns(owned, &current.pending_revocation) {
                Ok(current.clone())
            } else {
                Ok(step.next(current.member_epoch + 1))
            }
        }
        MemberState::UnreleasedTasks => Ok(step.next(current.member_epoch)),
        MemberState::Unknown => {
            if owned.is_none_or(|o| !o.is_empty()) {
                return Err(Fenced(
                    "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin."
                        .to_string(),
                ));
            }
            Ok(step.next(target_epoch))
        }
    }
}

struct Step<'a> {
    current: &'a Current,
    process: &'a str,
    target_epoch: i32,
    target: &'a Tasks,
    owned: Option<&'a Tasks>,
    owners: &'a dyn Owners,
}

/// Kept, to revoke and to assign, of one kind of task.
struct Diff<T> {
    kept: T,
    revoke: T,
    assign: T,
    unreleased: bool,
}

impl Step<'_> {
    fn next(&self, epoch: i32) -> Current {
        let mine = &self.current.assigned;
        let active = self.diff_active(mine);
        let mut standby = self.diff_set(&mine.standby, &self.target.standby, |s, p| {
            self.standby_unreleased(s, p)
        });
        let mut warmup = self.diff_set(&mine.warmup, &self.target.warmup, |s, p| {
            self.warmup_unreleased(s, p)
        });
        let unreleased = active.unreleased || standby.unreleased || warmup.unreleased;

        // Role changes of the member's own tasks that depend on nobody else take effect now.
        for (s, parts) in &mine.active {
            for &p in parts.keys() {
                if contains(&standby.assign, s, p) {
                    remove(&mut standby.assign, s, p);
                    insert(&mut standby.kept, s, p);
                }
            }
        }
        convert(
            &mine.standby,
            &mut standby.revoke,
            &mut warmup.assign,
            &mut warmup.kept,
        );
        convert(
            &mine.warmup,
            &mut warmup.revoke,
            &mut standby.assign,
            &mut standby.kept,
        );

        // A standby or warm-up promoted to active needs no revocation, and stays until the
        // active task is granted.
        self.drop_promoted(&mine.standby, &mut standby.revoke);
        self.drop_promoted(&mine.warmup, &mut warmup.revoke);
        let pending = Assigned {
            active: active.revoke,
            standby: standby.revoke,
            warmup: warmup.revoke,
        };
        let revoking = !pending.is_empty() && still_owns(self.owned, &pending);
        self.keep_promoted(&mine.standby, &mut standby.kept, &active.assign, revoking);
        self.keep_promoted(&mine.warmup, &mut warmup.kept, &active.assign, revoking);

        let kept = Assigned {
            active: active.kept,
            standby: standby.kept,
            warmup: warmup.kept,
        };
        let assign = Assigned {
            active: active.assign,
            standby: standby.assign,
            warmup: warmup.assign,
        };
        let c = self.current;
        if revoking {
            c.next(MemberState::UnrevokedTasks, epoch, kept, pending)
        } else if !assign.is_empty() {
            let state = if unreleased {
                MemberState::UnreleasedTasks
            } else {
                MemberState::Stable
            };
            c.next(
                state,
                self.target_epoch,
                kept.merge(assign),
                Assigned::default(),
            )
        } else if unreleased {
            c.next(
                MemberState::UnreleasedTasks,
                self.target_epoch,
                kept,
                Assigned::default(),
            )
        } else {
            c.next(
                MemberState::Stable,
                self.target_epoch,
                kept,
                Assigned::default(),
            )
        }
    }

    fn diff_active(&self, mine: &Assigned) -> Diff<ActiveTasks> {
        let mut d = Diff {
            kept: ActiveTasks::new(),
            revoke: ActiveTasks::new(),
            assign: ActiveTasks::new(),
            unreleased: false,
        };
        let subtopologies: BTreeSet<&String> = mine
            .active
            .keys()
            .chain(self.target.active.keys())
            .collect();
        for s in subtopologies {
            let cur = mine.active.get(s);
            let tgt = self.target.active.get(s);
            for (&p, &e) in cur.into_iter().flatten() {
                let side = if tgt.is_some_and(|t| t.contains(&p)) {
                    &mut d.kept
                } else {
                    &mut d.revoke
                };
                side.entry(s.clone()).or_default().insert(p, e);
            }
            for &p in tgt.into_iter().flatten() {
                if cur.is_some_and(|c| c.contains_key(&p)) {
                    continue;
                }
                if self.active_unreleased(s, p) {
                    d.unreleased = true;
                } else {
                    d.assign
                        .entry(s.clone())
                        .or_default()
                        .insert(p, self.target_epoch);
                }
            }
        }
        d
    }

    fn diff_set(
        &self,
        cur: &TaskSet,
        tgt: &TaskSet,
        unreleased: impl Fn(&str, i32) -> bool,
    ) -> Diff<TaskSet> {
        let mut d = Diff {
            kept: TaskSet::new(),
            revoke: TaskSet::new(),
            assign: TaskSet::new(),
            unreleased: false,
        };
        let subtopologies: BTreeSet<&String> = cur.keys().chain(tgt.keys()).collect();
        for s in subtopologies {
            let c = cur.get(s);
            let t = tgt.get(s);
            for &p in c.into_iter().flatten() {
                if t.is_some_and(|t| t.contains(&p)) {
                    insert(&mut d.kept, s, p);
                } else {
                    insert(&mut d.revoke, s, p);
                }
            }
            for &p in t.into_iter().flatten() {
                if c.is_some_and(|c| c.contains(&p)) {
                    continue;
                }
                if unreleased(s, p) {
                    d.unreleased = true;
                } else {
                    insert(&mut d.assign, s, p);
                }
            }
        }
        d
    }

    /// Another member of this process holds the task in a role this member does not.
    fn held_here_by_another(&self, mine: &TaskSet, on: bool, s: &str, p: i32) -> bool {
        on && !contains(mine, s, p)
    }

    fn active_unreleased(&self, s: &str, p: i32) -> bool {
        let mine = &self.current.assigned;
        self.owners.active_process(s, p).is_some()
            || self.held_here_by_another(
                &mine.standby,
                self.owners.standby_on(s, p, self.process),
                s,
                p,
            )
            || self.held_here_by_another(
                &mine.warmup,
                self.owners.warmup_on(s, p, self.process),
                s,
                p,
            )
    }

    fn standby_unreleased(&self, s: &str, p: i32) -> bool {
        let mine = &self.current.assigned;
        let active_here = self.owners.active_process(s, p) == Some(self.process)
            && !mine.active.get(s).is_some_and(|x| x.contains_key(&p));
        active_here
            || self.owners.standby_on(s, p, self.process)
            || self.held_here_by_another(
                &mine.warmup,
                self.owners.warmup_on(s, p, self.process),
                s,
                p,
            )
    }

    fn warmup_unreleased(&self, s: &str, p: i32) -> bool {
        let mine = &self.current.assigned;
        self.owners.active_process(s, p) == Some(self.process)
            || self.held_here_by_another(
                &mine.standby,
                self.owners.standby_on(s, p, self.process),
                s,
                p,
            )
            || self.owners.warmup_on(s, p, self.process)
    }

    fn drop_promoted(&self, mine: &TaskSet, revoke: &mut TaskSet) {
        for (s, parts) in mine {
            for &p in parts {
                if contains(&self.target.active, s, p) {
                    remove(revoke, s, p);
                }
            }
        }
    }

    fn keep_promoted(
        &self,
        mine: &TaskSet,
        kept: &mut TaskSet,
        granted: &ActiveTasks,
        revoking: bool,
    ) {
        for (s, parts) in mine {
            for &p in parts {
                let promoted_now = !revoking && granted.get(s).is_some_and(|g| g.contains_key(&p));
                if contains(&self.target.active, s, p) && !promoted_now {
                    insert(kept, s, p);
                }
            }
        }
    }
}

/// A replica role (standby, warm-up) of the member's own task turned into the other: granted
/// now, and the old role needs no revocation.
fn convert(outgoing: &TaskSet, revoke: &mut TaskSet, assign: &mut TaskSet, kept: &mut TaskSet) {
    for (s, parts) in outgoing {
        for &p in parts {
            if contains(assign, s, p) {
                remove(assign, s, p);
                insert(kept, s, p);
                remove(revoke, s, p);
            }
        }
    }
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
