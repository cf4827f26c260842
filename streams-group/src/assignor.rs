//! The sticky task assignor of streams groups (`group.streams.assignors`, default and only
//! built-in one: `sticky`), as Kafka 4.4 ships it: a pure function from the group's members
//! (process, current tasks, reported task offsets) and its configured topology (subtopologies
//! with their number of tasks, stateful or not) to every member's target active and standby
//! tasks.
//!
//! What Kafka 4.4 does, read from its bytecode (`StickyTaskAssignor`, `ProcessState`,
//! `TargetAssignmentBuilder`, `AssignmentRefiner`, `AssignmentConfigsImpl`,
//! `GroupMetadataManager.streamsGroupAssignmentConfigs`):
//!
//! - The member data the assignor reads is the member's *current* assignment (the tasks it
//!   owns, `StreamsGroupMember.assignedTasks`, not those pending revocation nor the previous
//!   target), its process id, and the task offsets it reported (offset sums of the tasks it has
//!   state for, `MemberTaskOffsets`). Instance id, rack id, client tags, warm-up tasks and task
//!   end offsets are handed over too but 4.4's assignor does not look at them.
//! - Active tasks (stateful and stateless alike) go, in three passes: (1) to the member that
//!   owned the task as active, while that member is under the active quota (ceil of the active
//!   tasks left over the members left, recomputed each time a member reaches it); (2) to one of
//!   the members that held the task's state (standby first, then by reported offset sum,
//!   highest first; a later candidate wins only when both its process load and its own task
//!   count are strictly lower), under the same quota; (3) the rest, one by one, to the least
//!   loaded process (tasks held over members), to its member with the fewest tasks. No quota in
//!   the third pass: it cannot fail while there is a member.
//! - Standby tasks, `num.standby.replicas` per stateful task, on processes that do not hold the
//!   task yet: to the previous active owner, then to a previous holder of the state, both under
//!   the total quota (active and standby tasks over members); the replicas left go to the least
//!   loaded process without the task. A task gets exactly `min(num.standby.replicas,
//!   processes - 1)` standbys; when processes run out Kafka logs a warning and goes on.
//! - No warm-up tasks: `AssignmentRefiner.refine` returns its input unchanged in 4.4, and
//!   `TargetAssignmentBuilder` builds every target with empty warm-ups.
//! - Not rack-aware: `rack.aware.assignment.tags` is parsed into the configs but 4.4's sticky
//!   assignor never reads it (the `RackAwareStandbyPicker` and `TagTree` of later sources are
//!   absent from the 4.4 jar); client tags only matter to the heartbeat's
//!   `MISSING_CLIENT_TAGS` status, which the group computes.
//!
//! Orders: Kafka's result depends on the order it meets members and processes in, through
//! Java `HashMap`s and `PriorityQueue`s (ties between equally loaded processes or members, two
//! members claiming the same active task, state holders of the same rank). Samsa reproduces
//! them (`assignor/java.rs`: `String.hashCode`, the map's buckets and resizes, the heap's sifts), so it
//! assigns exactly what Kafka 4.4 does, with one input it cannot know: Kafka puts the members
//! into its map in its group's own (hash table) order, Samsa in member id order, which matters
//! only for member ids sharing a bucket. The ignored test in `kafka_diff.rs` runs Kafka's own
//! assignor on random groups and finds the same assignments. Task orders are Kafka's too;
//! subtopology ids compare as strings (Samsa by UTF-8 bytes, Java by UTF-16 units: the same
//! for ids below U+E000).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::{TaskId, TaskSet, Tasks};

mod java;
use java::{hash_map_order, Heap, Insert};

#[cfg(test)]
mod kafka_diff;
#[cfg(test)]
mod tests;

/// The name clients and the `group.streams.assignors` setting know this assignor by.
pub const STICKY_ASSIGNOR_NAME: &str = "sticky";

/// The assignment config keys, as Kafka's `AssignmentConfigsImpl` has them.
pub const NUM_STANDBY_REPLICAS_CONFIG: &str = "num.standby.replicas";
pub const RACK_AWARE_ASSIGNMENT_TAGS_CONFIG: &str = "rack.aware.assignment.tags";

/// Offsets by subtopology id and partition (task), as a member reports them.
pub type TaskOffsets = BTreeMap<String, BTreeMap<i32, i64>>;

/// The assignment configs (Kafka's `AssignmentConfigs`). The coordinator builds them from the
/// group's configs, falling back to the broker's: `num.standby.replicas` from
/// `streams.num.standby.replicas` / `group.streams.num.standby.replicas`, and
/// `rack.aware.assignment.tags` (only when not empty) from the rack-aware tags settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentConfigs {
    /// `num.standby.replicas`: standby replicas of each stateful task (0: none).
    pub num_standby_replicas: i32,
    /// `rack.aware.assignment.tags`: parsed, but not used by 4.4's sticky assignor.
    pub rack_aware_assignment_tags: Vec<String>,
}

impl AssignmentConfigs {
    /// Kafka's `AssignmentConfigsImpl.fromMap`: an empty map gives the defaults (no standbys,
    /// no tags); otherwise `num.standby.replicas` must be there and parse as an int, and
    /// `rack.aware.assignment.tags` is a comma-separated list (Java's `split(",")`: trailing
    /// empty items dropped).
    pub fn from_map(configs: &BTreeMap<String, String>) -> Result<Self, AssignError> {
        if configs.is_empty() {
            return Ok(Self::default());
        }
        let standbys = configs.get(NUM_STANDBY_REPLICAS_CONFIG).ok_or_else(|| {
            AssignError::InvalidConfig(format!("{NUM_STANDBY_REPLICAS_CONFIG} is missing"))
        })?;
        let num_standby_replicas = standbys.parse::<i32>().map_err(|_| {
            AssignError::InvalidConfig(format!(
                "{NUM_STANDBY_REPLICAS_CONFIG} is not an int: {standbys:?}"
            ))
        })?;
        let tags = configs
            .get(RACK_AWARE_ASSIGNMENT_TAGS_CONFIG)
            .map(String::as_str)
            .unwrap_or("");
        let mut rack_aware_assignment_tags: Vec<String> = if tags.is_empty() {
            Vec::new()
        } else {
            tags.split(',').map(str::to_string).collect()
        };
        while rack_aware_assignment_tags
            .last()
            .is_some_and(String::is_empty)
        {
            rack_aware_assignment_tags.pop();
        }
        Ok(Self {
            num_standby_replicas,
            rack_aware_assignment_tags,
        })
    }

    /// The map the coordinator hands Kafka's assignor (`streamsGroupAssignmentConfigs`).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        map.insert(
            NUM_STANDBY_REPLICAS_CONFIG.to_string(),
            self.num_standby_replicas.to_string(),
        );
        if !self.rack_aware_assignment_tags.is_empty() {
            map.insert(
                RACK_AWARE_ASSIGNMENT_TAGS_CONFIG.to_string(),
                self.rack_aware_assignment_tags.join(","),
            );
        }
        map
    }
}

/// A member as the assignor sees it (Kafka's `MemberAssignmentMetadata` and
/// `MemberAssignmentState`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSpec {
    /// The Kafka Streams instance (process) the member is a thread of.
    pub process_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_tags: BTreeMap<String, String>,
    /// The member's current assignment: the tasks it owns now (Kafka passes
    /// `StreamsGroupMember.assignedTasks`, without the tasks pending revocation).
    pub current: Tasks,
    /// Offset sums of the tasks the member has local state for (the heartbeat's
    /// `TaskOffsets`), by subtopology and partition.
    pub task_offsets: TaskOffsets,
    /// End offset sums the member reported (the heartbeat's `TaskEndOffsets`); unused by 4.4.
    pub task_end_offsets: TaskOffsets,
}

/// A subtopology as the assignor sees it (Kafka's `TopologyDescriber`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubtopologySpec {
    /// The number of tasks: the partition count of the subtopology's input topics
    /// (`maxNumInputPartitions`, Kafka's `ConfiguredSubtopology.numberOfTasks`).
    pub tasks: i32,
    /// Kafka: the subtopology has state changelog topics. Only stateful tasks get standbys.
    pub stateful: bool,
}

/// Everything the assignor reads (Kafka's `GroupSpec` with the `TopologyDescriber`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSpec {
    /// The members by member id.
    pub members: BTreeMap<String, MemberSpec>,
    /// The configured topology's subtopologies by id (Kafka iterates them sorted by id).
    pub subtopologies: BTreeMap<String, SubtopologySpec>,
    pub configs: AssignmentConfigs,
}

/// Why there is no assignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignError {
    /// There are tasks but no member (Kafka's `TaskAssignorException`).
    #[error("no process available to assign active task {}_{}", .0.subtopology, .0.partition)]
    NoProcess(TaskId),
    /// A malformed assignment config (Kafka's `fromMap` throws).
    #[error("invalid streams assignment config: {0}")]
    InvalidConfig(String),
    /// The assignment breaks an invariant (a bug in the assignor).
    #[error("streams assignment breaks an invariant: {0}")]
    Invariant(String),
}

/// Every member's target active and standby tasks (warm-ups always empty in 4.4); every member
/// of the spec is in the answer, those with nothing with an empty [`Tasks`].
pub fn assign(spec: &GroupSpec) -> Result<BTreeMap<String, Tasks>, AssignError> {
    let mut state = State::new(spec);
    state.assign_active()?;
    if state.num_standby_replicas > 0 {
        state.assign_standby();
    }
    let result = state.into_assignment();
    if let Err(e) = check_assignment(spec, &result) {
        if cfg!(debug_assertions) {
            panic!("{e}");
        }
        return Err(AssignError::Invariant(e));
    }
    Ok(result)
}

/// The invariants of an assignment, checked in O(tasks): every task of the topology active on
/// exactly one member of the spec and nothing else active; standbys only of stateful tasks,
/// at most `num.standby.replicas` of each; a process never holds a task twice (active and
/// standby, or two standbys); no warm-ups; every member of the spec and no other.
pub fn check_assignment(
    spec: &GroupSpec,
    assignment: &BTreeMap<String, Tasks>,
) -> Result<(), String> {
    if assignment.len() != spec.members.len()
        || !assignment.keys().all(|m| spec.members.contains_key(m))
    {
        return Err("the assignment's members are not the spec's".into());
    }
    let mut active: HashSet<(&str, i32)> = HashSet::new();
    let mut held: HashSet<(&str, &str, i32)> = HashSet::new();
    let mut standbys: HashMap<(&str, i32), i32> = HashMap::new();
    for (member_id, tasks) in assignment {
        let process = spec.members[member_id].process_id.as_str();
        if !tasks.warmup.values().all(BTreeSet::is_empty) {
            return Err(format!("member {member_id} has warm-up tasks"));
        }
        for (standby, set) in [(false, &tasks.active), (true, &tasks.standby)] {
            for (sub, partitions) in set {
                let Some(s) = spec.subtopologies.get(sub) else {
                    return Err(format!("member {member_id} has a task of unknown {sub}"));
                };
                if standby && !s.stateful && !partitions.is_empty() {
                    return Err(format!(
                        "member {member_id} has standbys of stateless {sub}"
                    ));
                }
                for &p in partitions {
                    if p < 0 || p >= s.tasks {
                        return Err(format!("member {member_id} has unknown task {sub}_{p}"));
                    }
                    if !held.insert((process, sub, p)) {
                        return Err(format!("process {process} holds task {sub}_{p} twice"));
                    }
                    if standby {
                        let n = standbys.entry((sub, p)).or_default();
                        *n += 1;
                        if *n > spec.configs.num_standby_replicas {
                            return Err(format!("task {sub}_{p} has too many standbys"));
                        }
                    } else if !active.insert((sub, p)) {
                        return Err(format!("task {sub}_{p} is active on two members"));
                    }
                }
            }
        }
    }
    let expected: usize = spec
        .subtopologies
        .values()
        .map(|s| s.tasks.max(0) as usize)
        .sum();
    if active.len() != expected {
        return Err(format!(
            "{} of {expected} tasks are active on a member",
            active.len()
        ));
    }
    Ok(())
}

/// A task of the topology (an index into `State::tasks` stands for it).
struct Task<'a> {
    subtopology: &'a str,
    partition: i32,
    stateful: bool,
}

/// A member (an index into `State::members`, in Kafka's order of the group's members).
struct Member<'a> {
    id: &'a str,
    process: usize,
    /// Active and standby tasks assigned so far (Kafka's `memberToTaskCounts`).
    count: i64,
    active: Vec<usize>,
    standby: Vec<usize>,
}

/// A process (an index into `State::processes`, in Kafka's order of its `processIdToState`;
/// Kafka's `ProcessState`).
struct Process {
    /// Its members, in Kafka's order of its `memberToTaskCounts`; their number is the
    /// process's capacity.
    members: Vec<usize>,
    /// Kafka's `membersByLoad`: its members by task count, built when a task goes to the least
    /// loaded member, dropped when a task goes to a given member.
    members_by_load: Option<Heap>,
    /// Active and standby tasks assigned to its members.
    task_count: i64,
    /// The tasks it holds, active or standby.
    held: HashSet<usize>,
}

impl Process {
    /// Kafka's `ProcessState.load`: tasks over members, as a double.
    fn load(&self) -> f64 {
        if self.members.is_empty() {
            -1.0
        } else {
            self.task_count as f64 / self.members.len() as f64
        }
    }
}

/// Kafka's `LocalState`, over indexes.
struct State<'a> {
    tasks: Vec<Task<'a>>,
    members: Vec<Member<'a>>,
    processes: Vec<Process>,
    /// Per task: the member that owns it as active now (Kafka's `activeTaskToPrevMember`).
    prev_active: Vec<Option<usize>>,
    /// Per task: the members holding its state, best first (`standbyTaskToPrevMember`).
    prev_holders: Vec<Vec<usize>>,
    num_standby_replicas: i32,
    // The quotas and what they are computed from, as Kafka keeps them (ints there; i64 here,
    // the same values short of overflow).
    total_active_tasks: i64,
    total_tasks: i64,
    members_with_active_capacity: i64,
    members_with_capacity: i64,
    active_tasks_per_member: i64,
    total_tasks_per_member: i64,
}

/// Kafka's `computeTasksPerMember`: the ceiling of tasks over members, 0 without members.
fn tasks_per_member(tasks: i64, members: i64) -> i64 {
    if members == 0 {
        return 0;
    }
    tasks / members + i64::from(tasks % members > 0)
}

/// Processes by load (Kafka's `comparingDouble(ProcessState::load)`).
fn by_load(processes: &[Process]) -> impl Fn(usize, usize) -> Ordering + '_ {
    |a, b| {
        processes[a]
            .load()
            .partial_cmp(&processes[b].load())
            .unwrap_or(Ordering::Equal)
    }
}

/// Members by task count (Kafka's `Map.Entry.comparingByValue()` over `memberToTaskCounts`).
fn by_count<'m>(members: &'m [Member<'_>]) -> impl Fn(usize, usize) -> Ordering + 'm {
    |a, b| members[a].count.cmp(&members[b].count)
}

impl<'a> State<'a> {
    fn new(spec: &'a GroupSpec) -> Self {
        let num_standby_replicas = spec.configs.num_standby_replicas;
        let mut tasks = Vec::new();
        let mut index: HashMap<(&str, i32), usize> = HashMap::new();
        let mut total_active_tasks = 0i64;
        let mut total_tasks = 0i64;
        for (sub, s) in &spec.subtopologies {
            for partition in 0..s.tasks {
                index.insert((sub.as_str(), partition), tasks.len());
                tasks.push(Task {
                    subtopology: sub,
                    partition,
                    stateful: s.stateful,
                });
            }
            total_active_tasks += i64::from(s.tasks);
            total_tasks += i64::from(s.tasks);
            if s.stateful {
                total_tasks += i64::from(s.tasks) * i64::from(num_standby_replicas);
            }
        }
        let member_count = spec.members.len() as i64;

        // Kafka's members come in the order of the `HashMap` its `TargetAssignmentBuilder`
        // puts them into; they are put here in member id order.
        let ids: Vec<&str> = spec.members.keys().map(String::as_str).collect();
        let specs: Vec<&MemberSpec> = spec.members.values().collect();
        let member_order = hash_map_order(&ids, None, Insert::Put);
        // Processes as `initialize` meets them, member after member, into
        // `new HashMap<>(members)` with `computeIfAbsent`.
        let member_processes: Vec<&str> = member_order
            .iter()
            .map(|&i| specs[i].process_id.as_str())
            .collect();
        let process_ids: Vec<&str> = hash_map_order(
            &member_processes,
            Some(spec.members.len()),
            Insert::ComputeIfAbsent,
        )
        .into_iter()
        .map(|call| member_processes[call])
        .collect();
        let process_index: HashMap<&str, usize> = process_ids
            .iter()
            .enumerate()
            .map(|(position, &p)| (p, position))
            .collect();
        let mut processes: Vec<Process> = process_ids
            .iter()
            .map(|_| Process {
                members: Vec::new(),
                members_by_load: None,
                task_count: 0,
                held: HashSet::new(),
            })
            .collect();

        let mut members = Vec::with_capacity(spec.members.len());
        let mut prev_active = vec![None; tasks.len()];
        // Per task: (member, holds it as standby now, reported offset sum), in the order Kafka
        // gathers them (member by member: standbys, then other tasks with offsets).
        let mut candidates: Vec<Vec<(usize, bool, i64)>> = vec![Vec::new(); tasks.len()];
        for (m, &i) in member_order.iter().enumerate() {
            let spec_member = specs[i];
            let process = process_index[spec_member.process_id.as_str()];
            processes[process].members.push(m);
            members.push(Member {
                id: ids[i],
                process,
                count: 0,
                active: Vec::new(),
                standby: Vec::new(),
            });
            // Tasks outside the topology are ignored (Kafka keeps them in its maps but never
            // looks them up).
            let task = |sub: &str, p: i32| index.get(&(sub, p)).copied();
            for (sub, partitions) in &spec_member.current.active {
                for &p in partitions {
                    if let Some(t) = task(sub, p) {
                        // Two members claiming the task: the last one wins, as in Kafka.
                        prev_active[t] = Some(m);
                    }
                }
            }
            let offsets = &spec_member.task_offsets;
            let offset_of = |sub: &str, p: i32| {
                offsets
                    .get(sub)
                    .and_then(|o| o.get(&p))
                    .copied()
                    .unwrap_or(0)
            };
            let standby = &spec_member.current.standby;
            for (sub, partitions) in standby {
                for &p in partitions {
                    if let Some(t) = task(sub, p) {
                        candidates[t].push((m, true, offset_of(sub, p)));
                    }
                }
            }
            for (sub, partitions) in offsets {
                for (&p, &offset) in partitions {
                    let is_standby = standby.get(sub).is_some_and(|s| s.contains(&p));
                    if is_standby {
                        continue;
                    }
                    if let Some(t) = task(sub, p) {
                        candidates[t].push((m, false, offset));
                    }
                }
            }
        }
        // A process's members, as its `memberToTaskCounts` (a `new HashMap<>()`) iterates them.
        for p in &mut processes {
            let member_ids: Vec<&str> = p.members.iter().map(|&m| members[m].id).collect();
            let order = hash_map_order(&member_ids, None, Insert::Put);
            p.members = order.iter().map(|&i| p.members[i]).collect();
        }
        // Standbys first, then the highest offset sum; a stable sort, as Java's.
        let prev_holders = candidates
            .into_iter()
            .map(|mut c| {
                c.sort_by_key(|&(_, standby, offset)| (!standby, std::cmp::Reverse(offset)));
                c.into_iter().map(|(m, _, _)| m).collect()
            })
            .collect();

        State {
            tasks,
            members,
            processes,
            prev_active,
            prev_holders,
            num_standby_replicas,
            total_active_tasks,
            total_tasks,
            members_with_active_capacity: member_count,
            members_with_capacity: member_count,
            active_tasks_per_member: tasks_per_member(total_active_tasks, member_count),
            total_tasks_per_member: tasks_per_member(total_tasks, member_count),
        }
    }

    /// Kafka's `ProcessState.addTaskInternal`: the member's task count after.
    fn add_internal(&mut self, member: usize, task: usize, active: bool) -> i64 {
        let m = &mut self.members[member];
        m.count += 1;
        if active {
            m.active.push(task);
        } else {
            m.standby.push(task);
        }
        let p = &mut self.processes[m.process];
        p.task_count += 1;
        p.held.insert(task);
        m.count
    }

    /// Kafka's `ProcessState.addTask`: to a given member, which drops the process's members by
    /// load.
    fn add(&mut self, member: usize, task: usize, active: bool) -> i64 {
        self.processes[self.members[member].process].members_by_load = None;
        self.add_internal(member, task, active)
    }

    /// Kafka's `ProcessState.addTaskToLeastLoadedMember`: to the process's member with the
    /// fewest tasks; `None` for a process without members.
    fn add_to_least_loaded_member(
        &mut self,
        process: usize,
        task: usize,
        active: bool,
    ) -> Option<i64> {
        let p = &mut self.processes[process];
        match p.members.len() {
            0 => return None,
            1 => {
                let member = p.members[0];
                return Some(self.add_internal(member, task, active));
            }
            _ => {}
        }
        let mut heap = p.members_by_load.take().unwrap_or_else(|| {
            let mut heap = Heap::default();
            for &m in &self.processes[process].members {
                heap.offer(m, by_count(&self.members));
            }
            heap
        });
        let member = heap.poll(by_count(&self.members))?;
        let count = self.add_internal(member, task, active);
        heap.offer(member, by_count(&self.members));
        self.processes[process].members_by_load = Some(heap);
        Some(count)
    }

    fn has_active_quota(&self, member: usize) -> bool {
        self.members[member].count < self.active_tasks_per_member
    }

    fn has_total_quota(&self, member: usize) -> bool {
        self.members[member].count < self.total_tasks_per_member
    }

    /// Kafka's `maybeUpdateActiveTasksPerMember`: a member that just reached the active quota
    /// leaves the pool, and the quota is recomputed over the tasks and members left.
    fn maybe_update_active_quota(&mut self, count: i64) {
        if count == self.active_tasks_per_member {
            self.members_with_active_capacity -= 1;
            self.total_active_tasks -= count;
            self.active_tasks_per_member =
                tasks_per_member(self.total_active_tasks, self.members_with_active_capacity);
        }
    }

    /// Kafka's `maybeUpdateTotalTasksPerMember`, the same over active and standby tasks.
    fn maybe_update_total_quota(&mut self, count: i64) {
        if count == self.total_tasks_per_member {
            self.members_with_capacity -= 1;
            self.total_tasks -= count;
            self.total_tasks_per_member =
                tasks_per_member(self.total_tasks, self.members_with_capacity);
        }
    }

    /// Kafka's `findPrevMemberWithLeastLoad`: the first candidate (skipping processes holding
    /// `task` when given), replaced by a later one only when both its process's load and its own
    /// task count are strictly lower.
    fn find_prev_member_with_least_load(
        &self,
        candidates: &[usize],
        task: Option<usize>,
    ) -> Option<usize> {
        let mut best: Option<(usize, f64, f64)> = None;
        for &m in candidates {
            let process = &self.processes[self.members[m].process];
            if task.is_some_and(|t| process.held.contains(&t)) {
                continue;
            }
            let load = process.load();
            let count = self.members[m].count as f64;
            if best.is_none_or(|(_, l, c)| load < l && count < c) {
                best = Some((m, load, count));
            }
        }
        best.map(|(m, _, _)| m)
    }

    /// The processes in a fresh queue by load (Kafka's `PriorityQueue` over its
    /// `processIdToState.values()`).
    fn processes_by_load(&self) -> Heap {
        let mut heap = Heap::default();
        for p in 0..self.processes.len() {
            heap.offer(p, by_load(&self.processes));
        }
        heap
    }

    /// Kafka's `assignActive`, over every task, stateful or not.
    fn assign_active(&mut self) -> Result<(), AssignError> {
        let mut order: Vec<usize> = (0..self.tasks.len()).collect();
        // By partition, then subtopology.
        order.sort_by(|&a, &b| {
            let (a, b) = (&self.tasks[a], &self.tasks[b]);
            (a.partition, a.subtopology).cmp(&(b.partition, b.subtopology))
        });

        // 1. To the member that owns the task as active, under the active quota.
        let mut left = Vec::with_capacity(order.len());
        for t in order {
            match self.prev_active[t] {
                Some(m) if self.has_active_quota(m) => {
                    let count = self.add(m, t, true);
                    self.maybe_update_active_quota(count);
                    self.maybe_update_total_quota(count);
                }
                _ => left.push(t),
            }
        }

        // 2. To a member holding the task's state, under the active quota.
        let mut rest = Vec::with_capacity(left.len());
        for t in left {
            match self.find_prev_member_with_least_load(&self.prev_holders[t], None) {
                Some(m) if self.has_active_quota(m) => {
                    let count = self.add(m, t, true);
                    self.maybe_update_active_quota(count);
                    self.maybe_update_total_quota(count);
                }
                _ => rest.push(t),
            }
        }

        // 3. By subtopology, then partition, to the least loaded process (no quota).
        rest.sort_by(|&a, &b| {
            let (a, b) = (&self.tasks[a], &self.tasks[b]);
            (a.subtopology, a.partition).cmp(&(b.subtopology, b.partition))
        });
        let mut heap = self.processes_by_load();
        for t in rest {
            let no_process = AssignError::NoProcess(TaskId {
                subtopology: self.tasks[t].subtopology.to_string(),
                partition: self.tasks[t].partition,
            });
            let process = heap
                .poll(by_load(&self.processes))
                .ok_or(no_process.clone())?;
            // Every process has a member, so this cannot fail.
            let count = self
                .add_to_least_loaded_member(process, t, true)
                .ok_or(no_process)?;
            self.maybe_update_active_quota(count);
            self.maybe_update_total_quota(count);
            heap.offer(process, by_load(&self.processes));
        }
        Ok(())
    }

    /// Kafka's `assignStandby`, over the stateful tasks.
    fn assign_standby(&mut self) {
        let mut order: Vec<usize> = (0..self.tasks.len())
            .filter(|&t| self.tasks[t].stateful)
            .collect();
        // By partition, then subtopology, descending.
        order.sort_by(|&a, &b| {
            let (a, b) = (&self.tasks[a], &self.tasks[b]);
            (b.partition, b.subtopology).cmp(&(a.partition, a.subtopology))
        });

        // 1. Sticky: to the previous active owner, then to previous holders of the state, on
        // processes without the task and under the total quota; at the first replica that
        // cannot be placed so, the task's remaining replicas wait for the second pass.
        let mut to_assign: Vec<(usize, i32)> = Vec::new();
        for t in order {
            for i in 0..self.num_standby_replicas {
                if let Some(m) = self.prev_active[t] {
                    let process = &self.processes[self.members[m].process];
                    if !process.held.contains(&t) && self.has_total_quota(m) {
                        let count = self.add(m, t, false);
                        self.maybe_update_total_quota(count);
                        continue;
                    }
                }
                let holder = self.find_prev_member_with_least_load(&self.prev_holders[t], Some(t));
                match holder {
                    Some(m) if self.has_total_quota(m) => {
                        let count = self.add(m, t, false);
                        self.maybe_update_total_quota(count);
                    }
                    _ => {
                        to_assign.push((t, self.num_standby_replicas - i));
                        break;
                    }
                }
            }
        }

        // 2. By subtopology, then partition, descending: each replica to the least loaded
        // process that does not hold the task yet (no quota). Without one, Kafka logs that
        // there is not enough capacity and goes on to the next task.
        to_assign.sort_by(|&(a, _), &(b, _)| {
            let (a, b) = (&self.tasks[a], &self.tasks[b]);
            (b.subtopology, b.partition).cmp(&(a.subtopology, a.partition))
        });
        let mut heap = self.processes_by_load();
        for (t, replicas) in to_assign {
            for _ in 0..replicas {
                if !self.assign_standby_to_member_with_least_load(&mut heap, t) {
                    break;
                }
            }
        }
    }

    /// Kafka's `assignStandbyToMemberWithLeastLoad`, its recursion unrolled: processes come
    /// off the queue until one does not hold the task, which takes it; they go back in the
    /// reverse order.
    fn assign_standby_to_member_with_least_load(&mut self, heap: &mut Heap, task: usize) -> bool {
        let mut polled = Vec::new();
        let mut found = false;
        while let Some(process) = heap.poll(by_load(&self.processes)) {
            polled.push(process);
            if !self.processes[process].held.contains(&task) {
                if let Some(count) = self.add_to_least_loaded_member(process, task, false) {
                    found = true;
                    self.maybe_update_total_quota(count);
                }
                break;
            }
        }
        for process in polled.into_iter().rev() {
            heap.offer(process, by_load(&self.processes));
        }
        found
    }

    fn into_assignment(self) -> BTreeMap<String, Tasks> {
        let tasks = &self.tasks;
        let to_set = |indexes: &[usize]| {
            let mut set = TaskSet::new();
            for &t in indexes {
                set.entry(tasks[t].subtopology.to_string())
                    .or_default()
                    .insert(tasks[t].partition);
            }
            set
        };
        self.members
            .iter()
            .map(|m| {
                (
                    m.id.to_string(),
                    Tasks {
                        active: to_set(&m.active),
                        standby: to_set(&m.standby),
                        warmup: TaskSet::new(),
                    },
                )
            })
            .collect()
    }
}
