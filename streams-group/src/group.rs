//! A KIP-1071 streams group, sans-IO: Kafka Streams instances heartbeat
//! (StreamsGroupHeartbeat) with their epoch, the application's topology when they join, and
//! the tasks they own; the group configures the topology against the cluster's topics, decides
//! a target assignment of active, standby and warm-up tasks whenever its epoch moves, and each
//! member converges to its part one heartbeat at a time ([`crate::reconcile`]). The clock, the
//! topics and the settings are inputs; every change comes back as [`Record`]s (Kafka's streams
//! group records in `__consumer_offsets`), which the caller writes before it answers.
//!
//! Epochs, as Kafka 4.4's coordinator counts them: the group epoch rises when a member joins,
//! leaves, is fenced or changes what the assignment depends on (process, rack, client tags,
//! topology epoch), when the topics the topology reads change (the metadata hash), when a
//! topology is validated, and when the assignment configs change; the target assignment
//! follows the group epoch at a heartbeat (at most once per `assignment.interval.ms`; a new
//! group waits `initial.rebalance.delay.ms` for more members); a member's epoch follows the
//! assignment epoch once it revoked what it must give up.

use std::collections::{BTreeMap, BTreeSet};

use crate::holders::Holders;
use crate::reconcile::{self, Assigned, Current, MemberState};
use crate::target::{compute_target, metadata_hash, normalize};
use crate::topology::{self, ConfiguredTopology};
use crate::{assignor, Status, StatusDetail, TaskSet, Tasks, TopicInfo, TopicView, Topology};

/// Epoch a member leaves with.
pub const LEAVE_EPOCH: i32 = -1;
/// Epoch a static member leaves with, meaning to come back.
pub const LEAVE_STATIC_EPOCH: i32 = -2;

/// The group's settings at the time of a heartbeat (group configs `streams.*` over the
/// broker's `group.streams.*`).
#[derive(Debug, Clone)]
pub struct Settings {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub max_size: usize,
    /// What the assignor is given (`num.standby.replicas`, `rack.aware.assignment.tags`);
    /// record 17 keeps them, and a change moves the group epoch.
    pub assignment: assignor::AssignmentConfigs,
    pub num_warmup_replicas: i32,
    pub acceptable_recovery_lag: i64,
    pub task_offset_interval_ms: i32,
    pub initial_rebalance_delay_ms: i32,
    pub assignment_interval_ms: i32,
}

impl Default for Settings {
    /// Kafka 4.4's defaults.
    fn default() -> Settings {
        Settings {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: i32::MAX as usize,
            assignment: assignor::AssignmentConfigs::default(),
            num_warmup_replicas: 2,
            acceptable_recovery_lag: 10_000,
            task_offset_interval_ms: 60_000,
            initial_rebalance_delay_ms: 3_000,
            assignment_interval_ms: 1_000,
        }
    }
}

impl Settings {
    /// The configs the assignment depends on, as record 17 keeps them.
    pub fn assignment_configs(&self) -> BTreeMap<String, String> {
        self.assignment.to_map()
    }
}

/// An endpoint for interactive queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// A StreamsGroupHeartbeat as the handler validated it (Kafka's `GroupCoordinatorService`
/// checks). `None` fields did not change since the member's last heartbeat.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub endpoint_information_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1: unchanged.
    pub rebalance_timeout_ms: i32,
    pub topology: Option<Topology>,
    pub owned: Option<Tasks>,
    pub process_id: Option<String>,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: Option<BTreeMap<String, String>>,
    pub task_offsets: Option<Vec<(String, i32, i64)>>,
    pub task_end_offsets: Option<Vec<(String, i32, i64)>>,
    pub shutdown_application: bool,
    pub client_id: String,
    pub client_host: String,
}

/// The topic partitions one member's endpoint serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPartitions {
    pub endpoint: Endpoint,
    pub active: Vec<(String, Vec<i32>)>,
    pub standby: Vec<(String, Vec<i32>)>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub acceptable_recovery_lag: i32,
    pub task_offset_interval_ms: i32,
    pub status: Vec<StatusDetail>,
    /// The member's whole assignment, when it is sent (a join, a change).
    pub tasks: Option<Tasks>,
    pub endpoint_information_epoch: i32,
    pub partitions_by_user_endpoint: Option<Vec<EndpointPartitions>>,
    /// Internal topics the broker is to create (the topology needs them and they are missing).
    pub topics_to_create: Vec<TopicInfo>,
}

/// A heartbeat the group refuses, with Kafka's error and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeartbeatError {
    #[error("{0}")]
    UnknownMemberId(String),
    #[error("{0}")]
    FencedMemberEpoch(String),
    #[error("{0}")]
    UnreleasedInstanceId(String),
    #[error("{0}")]
    FencedInstanceId(String),
    #[error("{0}")]
    GroupMaxSizeReached(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    GroupIdNotFound(String),
    /// A topology Kafka rejects outright (STREAMS_INVALID_TOPOLOGY and its kin).
    #[error("{0}")]
    InvalidTopology(topology::InvalidTopology),
}

/// A member as the group keeps it (Kafka's `StreamsGroupMember`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
    pub current: Current,
}

impl Member {
    fn new(member_id: &str) -> Member {
        Member {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            topology_epoch: -1,
            process_id: String::new(),
            user_endpoint: None,
            client_tags: BTreeMap::new(),
            current: Current::joining(),
        }
    }

    /// Record 19's fields are the same.
    fn same_metadata(&self, o: &Member) -> bool {
        self.instance_id == o.instance_id
            && self.rack_id == o.rack_id
            && self.client_id == o.client_id
            && self.client_host == o.client_host
            && self.rebalance_timeout_ms == o.rebalance_timeout_ms
            && self.topology_epoch == o.topology_epoch
            && self.process_id == o.process_id
            && self.user_endpoint == o.user_endpoint
            && self.client_tags == o.client_tags
    }

    /// What the assignment depends on changed (Kafka's `hasEpochRelevantMemberConfigChanged`:
    /// topology epoch, rack, client tags, process).
    fn epoch_relevant_change(&self, o: &Member) -> bool {
        self.topology_epoch != o.topology_epoch
            || self.rack_id != o.rack_id
            || self.client_tags != o.client_tags
            || self.process_id != o.process_id
    }

    fn bytes(&self) -> usize {
        256 + self.member_id.len()
            + self.client_id.len()
            + self.client_host.len()
            + self.process_id.len()
            + 16 * (count(&self.current.assigned) + count(&self.current.pending_revocation))
    }
}

fn count(a: &Assigned) -> usize {
    a.active.values().map(BTreeMap::len).sum::<usize>()
        + a.standby.values().map(BTreeSet::len).sum::<usize>()
        + a.warmup.values().map(BTreeSet::len).sum::<usize>()
}

/// Record 17's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMeta {
    pub epoch: i32,
    pub metadata_hash: i64,
    pub validated_topology_epoch: i32,
    pub assignment_configs: BTreeMap<String, String>,
}

/// Kafka's streams group records, as the group asks them written (`None`: a tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// StreamsGroupMetadata (type 17).
    Metadata(Option<GroupMeta>),
    /// StreamsGroupMemberMetadata (19).
    Member(String, Option<Box<Member>>),
    /// StreamsGroupTargetAssignmentMetadata (20): the assignment epoch and when it was
    /// computed.
    TargetEpoch(Option<(i32, i64)>),
    /// StreamsGroupTargetAssignmentMember (21).
    TargetMember(String, Option<Tasks>),
    /// StreamsGroupCurrentMemberAssignment (22).
    CurrentAssignment(String, Option<Current>),
    /// StreamsGroupTopology (23).
    Topology(Option<Topology>),
}

/// Kafka's streams group states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Empty,
    NotReady,
    Assigning,
    Reconciling,
    Stable,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::NotReady => "NotReady",
            State::Assigning => "Assigning",
            State::Reconciling => "Reconciling",
            State::Stable => "Stable",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Deadlines {
    session_ms: Option<i64>,
    /// (deadline, the member epoch it revokes at).
    rebalance: Option<(i64, i32)>,
}

/// A member's last reported task offsets (in memory only, as on Kafka).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskOffsets {
    pub offsets: BTreeMap<(String, i32), i64>,
    pub end_offsets: BTreeMap<(String, i32), i64>,
}

/// A streams group.
#[derive(Debug)]
pub struct StreamsGroup {
    pub group_id: String,
    group_epoch: i32,
    assignment_epoch: i32,
    /// When the target of `assignment_epoch` was computed (0: never).
    assignment_ms: i64,
    metadata_hash: i64,
    validated_topology_epoch: i32,
    assignment_configs: BTreeMap<String, String>,
    topology: Option<Topology>,
    configured: Option<ConfiguredTopology>,
    members: BTreeMap<String, Member>,
    /// Instance id -> member id.
    static_members: BTreeMap<String, String>,
    target: BTreeMap<String, Tasks>,
    holders: Holders,
    deadlines: BTreeMap<String, Deadlines>,
    task_offsets: BTreeMap<String, TaskOffsets>,
    /// A new group waits for more members until then before its first assignment.
    initial_delay_until: Option<i64>,
    shutdown_requested_by: Option<String>,
    endpoint_information_epoch: i32,
    members_bytes: usize,
}

/// Whether a new target may be computed at `now_ms`, the last computed at `last_ms`.
fn may_assign(last_ms: i64, interval_ms: i32, now_ms: i64) -> bool {
    last_ms == 0 || interval_ms <= 0 || now_ms >= last_ms.saturating_add(interval_ms as i64)
}

impl StreamsGroup {
    pub fn new(group_id: &str) -> StreamsGroup {
        StreamsGroup {
            group_id: group_id.to_string(),
            group_epoch: 0,
            assignment_epoch: 0,
            assignment_ms: 0,
            metadata_hash: 0,
            validated_topology_epoch: -1,
            assignment_configs: BTreeMap::new(),
            topology: None,
            configured: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            target: BTreeMap::new(),
            holders: Holders::default(),
            deadlines: BTreeMap::new(),
            task_offsets: BTreeMap::new(),
            initial_delay_until: None,
            shutdown_requested_by: None,
            endpoint_information_epoch: 0,
            members_bytes: 0,
        }
    }

    // ---- read access ----

    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }
    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }
    pub fn member(&self, member_id: &str) -> Option<&Member> {
        self.members.get(member_id)
    }
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    /// The topology as configured against the topics at the last heartbeat.
    pub fn configured_topology(&self) -> Option<&ConfiguredTopology> {
        self.configured.as_ref()
    }
    pub fn topology(&self) -> Option<&Topology> {
        self.topology.as_ref()
    }
    /// Whether OffsetDelete must refuse `topic` with GROUP_SUBSCRIBED_TO_TOPIC (Kafka 4.4's
    /// `StreamsGroup.isSubscribedToTopic`): the group has members and its topology reads the
    /// topic, as a source topic or a repartition source topic. An empty group reads nothing.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        !self.members.is_empty()
            && self.topology.as_ref().is_some_and(|t| {
                t.subtopologies.iter().any(|s| {
                    s.source_topics.iter().any(|n| n == topic)
                        || s.repartition_source_topics.iter().any(|r| r.name == topic)
                })
            })
    }
    pub fn target_of(&self, member_id: &str) -> Option<&Tasks> {
        self.target.get(member_id)
    }
    pub fn task_offsets(&self, member_id: &str) -> Option<&TaskOffsets> {
        self.task_offsets.get(member_id)
    }
    pub fn bytes(&self) -> usize {
        512 + self.group_id.len() + self.members_bytes + 32 * self.holders.active.len()
    }

    pub fn state(&self) -> State {
        if self.members.is_empty() {
            State::Empty
        } else if self
            .topology
            .as_ref()
            .is_none_or(|t| t.epoch != self.validated_topology_epoch)
        {
            State::NotReady
        } else if self.group_epoch > self.assignment_epoch {
            State::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.current.is_reconciled_to(self.assignment_epoch))
        {
            State::Reconciling
        } else {
            State::Stable
        }
    }

    /// The earliest time [`tick`](Self::tick) has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        self.deadlines
            .values()
            .flat_map(|d| d.session_ms.into_iter().chain(d.rebalance.map(|r| r.0)))
            .chain(self.initial_delay_until)
            .min()
    }

    // ---- heartbeats ----

    /// One heartbeat at `now_ms` (epochs -1 and -2 leave). On success the records to write
    /// come with the reply; on error nothing changed.
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topics: &dyn TopicView,
        settings: &Settings,
        now_ms: i64,
    ) -> Result<(Reply, Vec<Record>), HeartbeatError> {
        let mut records = Vec::new();
        if hb.member_epoch == LEAVE_EPOCH || hb.member_epoch == LEAVE_STATIC_EPOCH {
            let reply = self.leave(&hb, settings, &mut records)?;
            self.check_invariants();
            return Ok((reply, records));
        }
        let joining = hb.member_epoch == 0;
        let hb_epoch = hb.member_epoch;
        let owned_report = hb.owned.clone();
        // A group this heartbeat creates (Kafka 4.4 keeps it apart from its groups until the
        // heartbeat's records are replayed, see the endpoint epoch below).
        let created = self.group_epoch == 0 && self.members.is_empty() && self.topology.is_none();
        if !joining && self.members.is_empty() && self.topology.is_none() {
            return Err(HeartbeatError::GroupIdNotFound(format!(
                "Streams group {} not found.",
                self.group_id
            )));
        }
        let existing = self.existing_member(&hb, settings)?;
        // Checks that can fail come before any change.
        if let (Some(t), Some(cur)) = (&hb.topology, &self.topology) {
            if t.epoch >= cur.epoch && t != cur {
                return Err(HeartbeatError::InvalidRequest(
                    "Topology updates are not supported yet.".to_string(),
                ));
            }
        }
        if let Some(m) = &existing {
            if m.current.state == MemberState::Unknown
                && hb.owned.as_ref().is_none_or(|o| !o.is_empty())
            {
                return Err(HeartbeatError::FencedMemberEpoch(
                    "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin."
                        .to_string(),
                ));
            }
        }

        let mut status = Vec::new();
        let old = existing.clone();
        let mut member = existing.unwrap_or_else(|| Member::new(&hb.member_id));
        let replaced = match &old {
            Some(o) if o.member_id != hb.member_id => Some(o.clone()),
            _ => None,
        };
        if replaced.is_some() {
            member.member_id = hb.member_id.clone();
        }
        if hb.instance_id.is_some() {
            member.instance_id = hb.instance_id.clone();
        }
        if hb.rack_id.is_some() {
            member.rack_id = hb.rack_id.clone();
        }
        if hb.rebalance_timeout_ms != -1 {
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms;
        }
        if let Some(t) = &hb.topology {
            member.topology_epoch = t.epoch;
        }
        if let Some(p) = &hb.process_id {
            member.process_id = p.clone();
        }
        if let Some(tags) = &hb.client_tags {
            member.client_tags = tags.clone();
        }
        if let Some(e) = &hb.user_endpoint {
            member.user_endpoint = Some(e.clone());
        }
        member.client_id = hb.client_id.clone();
        member.client_host = hb.client_host.clone();

        let mut bump = false;
        // 2. The topology: the first member's initializes it; a member behind is told.
        let mut new_topology = None;
        let topology = match (&hb.topology, &self.topology) {
            (Some(t), None) => {
                new_topology = Some(t.clone());
                t.clone()
            }
            (_, Some(cur)) => cur.clone(),
            (None, None) => {
                return Err(HeartbeatError::InvalidRequest(
                    "The topology is null and the group topology is also null.".to_string(),
                ))
            }
        };
        if member.topology_epoch < topology.epoch {
            status.push(StatusDetail {
                status: Status::StaleTopology,
                detail: format!(
                    "The member's topology epoch {} is behind the group's topology epoch {}.",
                    member.topology_epoch, topology.epoch
                ),
            });
        }

        // 3. Configure it against the topics when they changed.
        let hash = metadata_hash(&topology, topics);
        if hash != self.metadata_hash {
            bump = true;
        }
        let configured = match &self.configured {
            Some(c) if new_topology.is_none() && hash == self.metadata_hash => c.clone(),
            _ => topology::configure(&topology, topics).map_err(HeartbeatError::InvalidTopology)?,
        };
        let validated = if configured.is_ready() {
            for owned in hb.owned.iter() {
                check_tasks(&configured, owned)?;
            }
            topology.epoch
        } else {
            -1
        };
        if validated != self.validated_topology_epoch {
            bump = true;
        }
        let configs = settings.assignment_configs();
        if configs != self.assignment_configs {
            bump = true;
        }

        // 1. The member: a new or changed one is written; what the assignment depends on
        // moves the epoch.
        if let Some(prev) = &replaced {
            // A static member back under a new id takes its predecessor's place, target and
            // tasks, at epoch 0 as a join.
            self.remove_member(&prev.member_id, &mut records);
            if let Some(t) = self.target.remove(&prev.member_id) {
                records.push(Record::TargetMember(prev.member_id.clone(), None));
                records.push(Record::TargetMember(
                    member.member_id.clone(),
                    Some(t.clone()),
                ));
                self.target.insert(member.member_id.clone(), t);
            }
            member.current = prev.current.clone();
            member.current.member_epoch = 0;
            member.current.previous_member_epoch = 0;
            bump |= prev.epoch_relevant_change(&member);
            records.push(Record::Member(
                member.member_id.clone(),
                Some(Box::new(member.clone())),
            ));
            records.push(Record::CurrentAssignment(
                member.member_id.clone(),
                Some(member.current.clone()),
            ));
        } else if old.as_ref().is_none_or(|o| !o.same_metadata(&member)) {
            records.push(Record::Member(
                member.member_id.clone(),
                Some(Box::new(member.clone())),
            ));
            bump |= old
                .as_ref()
                .is_none_or(|o| o.epoch_relevant_change(&member));
        }

        // The member is in (nothing below fails but the reconciliation's fencing of a member
        // in an unknown state, checked above).
        if let Some(t) = new_topology {
            records.push(Record::Topology(Some(t.clone())));
            self.topology = Some(t);
        }
        self.configured = Some(configured.clone());
        if replaced.is_none() {
            if let Some(o) = &old {
                self.members_bytes -= o.bytes();
                self.holders.remove(&o.current.assigned, &o.process_id);
                self.holders
                    .remove(&o.current.pending_revocation, &o.process_id);
            }
        }
        // Who holds what, under the member's (possibly new) process.
        self.holders
            .add(&member.current.assigned, &member.process_id);
        self.holders
            .add(&member.current.pending_revocation, &member.process_id);
        self.members_bytes += member.bytes();
        if let Some(i) = &member.instance_id {
            self.static_members
                .insert(i.clone(), member.member_id.clone());
        }
        let was_empty = self.members.is_empty();
        self.members
            .insert(member.member_id.clone(), member.clone());

        if bump {
            self.group_epoch = if self.group_epoch == 0 {
                2
            } else {
                self.group_epoch + 1
            };
            self.metadata_hash = hash;
            self.validated_topology_epoch = validated;
            self.assignment_configs = configs;
            records.push(Record::Metadata(Some(self.meta())));
        }
        if was_empty
            && settings.initial_rebalance_delay_ms > 0
            && self.initial_delay_until.is_none()
        {
            self.initial_delay_until = Some(now_ms + settings.initial_rebalance_delay_ms as i64);
        }

        // 4. The target assignment, when due.
        let delayed = self.initial_delay_until.is_some_and(|t| now_ms < t);
        if self.group_epoch > self.assignment_epoch {
            if delayed {
                status.push(StatusDetail {
                    status: Status::AssignmentDelayed,
                    detail: "Assignment delayed due to the configured initial rebalance delay."
                        .to_string(),
                });
            } else if may_assign(self.assignment_ms, settings.assignment_interval_ms, now_ms) {
                self.initial_delay_until = None;
                self.assign(settings, now_ms, &mut records);
            }
        }
        let (target_epoch, target) = if delayed && self.assignment_epoch < self.group_epoch {
            (self.assignment_epoch.max(1), Tasks::default())
        } else {
            (
                self.assignment_epoch,
                self.target
                    .get(&member.member_id)
                    .cloned()
                    .unwrap_or_default(),
            )
        };

        // 5. The member converges.
        let before = member.current.clone();
        self.reconcile_member(
            &member.member_id,
            target_epoch,
            &target,
            hb.owned.as_ref(),
            &mut records,
        )?;
        let member = self.members[&member.member_id].clone();
        if let (Some(o), Some(e)) = (&hb.task_offsets, &hb.task_end_offsets) {
            let entry = self
                .task_offsets
                .entry(member.member_id.clone())
                .or_default();
            entry.offsets = o.iter().map(|(s, p, x)| ((s.clone(), *p), *x)).collect();
            entry.end_offsets = e.iter().map(|(s, p, x)| ((s.clone(), *p), *x)).collect();
        }
        let session = now_ms + settings.session_timeout_ms as i64;
        self.deadlines
            .entry(member.member_id.clone())
            .or_default()
            .session_ms = Some(session);
        self.update_rebalance_deadline(&member.member_id, now_ms);
        if hb.shutdown_application {
            self.shutdown_requested_by = Some(member.member_id.clone());
        }

        // The answer. Kafka sends the tasks to a joining member and when they changed; Samsa
        // also when the client evidently missed an answer (a lost response): it heartbeats
        // with the member's previous epoch, or reports owning less than the group gave it.
        // Otherwise it would never learn what that answer gave it (docs/design-notes.md).
        let changed = before.assigned != member.current.assigned;
        let assigned = member.current.assigned.tasks();
        let missed = !joining
            && (hb_epoch < before.member_epoch
                || owned_report.as_ref().is_some_and(|o| {
                    !subset(&assigned.active, &o.active)
                        || !subset(&assigned.standby, &o.standby)
                        || !subset(&assigned.warmup, &o.warmup)
                }));
        let tasks = (joining || changed || missed).then(|| member.current.assigned.tasks());
        // The endpoint epoch moves when the member's endpoint changed, or its tasks did and it
        // has an endpoint (Kafka's rule).
        let old_endpoint = old.as_ref().and_then(|o| o.user_endpoint.as_ref());
        let mut endpoint_epoch = self.endpoint_information_epoch;
        if old_endpoint != member.user_endpoint.as_ref()
            || (changed && member.user_endpoint.is_some())
        {
            endpoint_epoch += 1;
        }
        let partitions_by_user_endpoint = (endpoint_epoch != hb.endpoint_information_epoch)
            .then(|| self.endpoint_partitions(&configured, topics));
        // Kafka 4.4 moves the endpoint epoch of a group the heartbeat creates on an object it
        // then drops (the group is rebuilt from the records, and the epoch is not in them), and
        // answers 0: the group starts at 0 after its first heartbeat.
        let endpoint_epoch = if created { 0 } else { endpoint_epoch };
        self.endpoint_information_epoch = endpoint_epoch;
        let mut topics_to_create = Vec::new();
        if let Some(err) = &configured.error {
            topics_to_create = configured.internal_topics_to_create.clone();
            status.push(err.clone());
        }
        if let Some(by) = &self.shutdown_requested_by {
            status.push(StatusDetail {
                status: Status::ShutdownApplication,
                detail: format!("Streams group member {by} encountered a fatal error and requested a shutdown for the entire application."),
            });
        }
        self.check_invariants();
        Ok((
            Reply {
                member_id: member.member_id.clone(),
                member_epoch: member.current.member_epoch,
                heartbeat_interval_ms: settings.heartbeat_interval_ms,
                acceptable_recovery_lag: settings.acceptable_recovery_lag.min(i32::MAX as i64)
                    as i32,
                task_offset_interval_ms: settings.task_offset_interval_ms,
                status,
                tasks,
                endpoint_information_epoch: endpoint_epoch,
                partitions_by_user_endpoint,
                topics_to_create,
            },
            records,
        ))
    }

    fn meta(&self) -> GroupMeta {
        GroupMeta {
            epoch: self.group_epoch,
            metadata_hash: self.metadata_hash,
            validated_topology_epoch: self.validated_topology_epoch,
            assignment_configs: self.assignment_configs.clone(),
        }
    }

    /// The member a heartbeat comes from, after Kafka's checks (`None`: a new member).
    fn existing_member(
        &self,
        hb: &Heartbeat,
        settings: &Settings,
    ) -> Result<Option<Member>, HeartbeatError> {
        let full = |id: &str| {
            if !self.members.contains_key(id) && self.members.len() >= settings.max_size {
                return Err(HeartbeatError::GroupMaxSizeReached(format!(
                    "The streams group has reached its maximum capacity of {} members.",
                    settings.max_size
                )));
            }
            Ok(())
        };
        match &hb.instance_id {
            None => {
                let member = self.members.get(&hb.member_id);
                if hb.member_epoch == 0 {
                    full(&hb.member_id)?;
                    return Ok(member.cloned());
                }
                let member = member.ok_or_else(|| {
                    HeartbeatError::UnknownMemberId(format!(
                        "Member {} is not a member of group {}.",
                        hb.member_id, self.group_id
                    ))
                })?;
                check_epoch(member, hb)?;
                Ok(Some(member.clone()))
            }
            Some(instance) => {
                let existing = self
                    .static_members
                    .get(instance)
                    .and_then(|id| self.members.get(id));
                if hb.member_epoch == 0 {
                    return match existing {
                        None => {
                            full(&hb.member_id)?;
                            Ok(self.members.get(&hb.member_id).cloned())
                        }
                        Some(e) if e.member_id == hb.member_id => Ok(Some(e.clone())),
                        Some(e) if e.current.member_epoch != LEAVE_STATIC_EPOCH => {
                            Err(HeartbeatError::UnreleasedInstanceId(format!(
                                "Static member {} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                                hb.member_id, e.member_id
                            )))
                        }
                        Some(e) => Ok(Some(e.clone())),
                    };
                }
                let e = existing.ok_or_else(|| {
                    HeartbeatError::UnknownMemberId(format!("Instance id {instance} is unknown."))
                })?;
                if e.member_id != hb.member_id {
                    return Err(HeartbeatError::FencedInstanceId(format!(
                        "Static member {} with instance id {instance} was fenced by member {}.",
                        hb.member_id, e.member_id
                    )));
                }
                check_epoch(e, hb)?;
                Ok(Some(e.clone()))
            }
        }
    }

    /// Epoch -1 (leave) or -2 (a static member leaving to come back).
    fn leave(
        &mut self,
        hb: &Heartbeat,
        settings: &Settings,
        records: &mut Vec<Record>,
    ) -> Result<Reply, HeartbeatError> {
        let member_id = match &hb.instance_id {
            None => {
                if !self.members.contains_key(&hb.member_id) {
                    return Err(HeartbeatError::UnknownMemberId(format!(
                        "Member {} is not a member of group {}.",
                        hb.member_id, self.group_id
                    )));
                }
                hb.member_id.clone()
            }
            Some(instance) => {
                let id = self.static_members.get(instance).cloned().ok_or_else(|| {
                    HeartbeatError::UnknownMemberId(format!("Instance id {instance} is unknown."))
                })?;
                if id != hb.member_id {
                    return Err(HeartbeatError::FencedInstanceId(format!(
                        "Static member {} with instance id {instance} was fenced by member {id}.",
                        hb.member_id
                    )));
                }
                id
            }
        };
        if hb.shutdown_application {
            self.shutdown_requested_by = Some(member_id.clone());
        }
        if hb.member_epoch == LEAVE_STATIC_EPOCH && hb.instance_id.is_some() {
            // Keeps its place and tasks until its session times out.
            let m = self.members.get_mut(&member_id).expect("member");
            m.current.previous_member_epoch = m.current.member_epoch;
            m.current.member_epoch = LEAVE_STATIC_EPOCH;
            records.push(Record::CurrentAssignment(
                member_id.clone(),
                Some(m.current.clone()),
            ));
            if let Some(d) = self.deadlines.get_mut(&member_id) {
                d.rebalance = None;
            }
        } else {
            self.fence(&member_id, records);
        }
        Ok(Reply {
            member_id,
            member_epoch: hb.member_epoch,
            heartbeat_interval_ms: settings.heartbeat_interval_ms,
            acceptable_recovery_lag: 0,
            task_offset_interval_ms: 0,
            status: Vec::new(),
            tasks: None,
            endpoint_information_epoch: 0,
            partitions_by_user_endpoint: None,
            topics_to_create: Vec::new(),
        })
    }

    /// Removes a member (left or fenced): its records tombstoned, the group epoch moved.
    fn fence(&mut self, member_id: &str, records: &mut Vec<Record>) {
        self.remove_member(member_id, records);
        if self.target.remove(member_id).is_some() {
            records.push(Record::TargetMember(member_id.to_string(), None));
        }
        if self.members.is_empty() {
            self.shutdown_requested_by = None;
            self.initial_delay_until = None;
        }
        self.group_epoch += 1;
        records.push(Record::Metadata(Some(self.meta())));
        if self.members.is_empty() {
            // The last member gone: the (empty) assignment is at the group epoch, as Kafka
            // writes it (with timestamp 0).
            self.assignment_epoch = self.group_epoch;
            self.assignment_ms = 0;
            records.push(Record::TargetEpoch(Some((self.group_epoch, 0))));
        }
    }

    fn remove_member(&mut self, member_id: &str, records: &mut Vec<Record>) {
        let Some(m) = self.members.remove(member_id) else {
            return;
        };
        self.members_bytes -= m.bytes();
        self.holders.remove(&m.current.assigned, &m.process_id);
        self.holders
            .remove(&m.current.pending_revocation, &m.process_id);
        if let Some(i) = &m.instance_id {
            if self.static_members.get(i).is_some_and(|x| x == member_id) {
                self.static_members.remove(i);
            }
        }
        self.deadlines.remove(member_id);
        self.task_offsets.remove(member_id);
        records.push(Record::CurrentAssignment(member_id.to_string(), None));
        records.push(Record::Member(member_id.to_string(), None));
    }

    /// Computes the target assignment for the group epoch.
    fn assign(&mut self, settings: &Settings, now_ms: i64, records: &mut Vec<Record>) {
        let configured = self.configured.as_ref();
        let new_target: BTreeMap<String, Tasks> = match configured {
            Some(c) if c.is_ready() => {
                match compute_target(&self.members, c, settings, &self.task_offsets) {
                    Ok(t) => t,
                    // The assignor refused (an invariant it checks failed): the previous
                    // target stays, and the next heartbeat tries again.
                    Err(_) => return,
                }
            }
            // Nothing to assign until the topology is ready: every member gets nothing.
            _ => self
                .members
                .keys()
                .map(|m| (m.clone(), Tasks::default()))
                .collect(),
        };
        for (m, t) in &new_target {
            let t = normalize(t);
            if self.target.get(m) != Some(&t) {
                records.push(Record::TargetMember(m.clone(), Some(t.clone())));
                self.target.insert(m.clone(), t);
            }
        }
        let gone: Vec<String> = self
            .target
            .keys()
            .filter(|m| !new_target.contains_key(*m))
            .cloned()
            .collect();
        for m in gone {
            self.target.remove(&m);
            records.push(Record::TargetMember(m, None));
        }
        self.assignment_epoch = self.group_epoch;
        self.assignment_ms = now_ms;
        records.push(Record::TargetEpoch(Some((self.assignment_epoch, now_ms))));
    }

    fn reconcile_member(
        &mut self,
        member_id: &str,
        target_epoch: i32,
        target: &Tasks,
        owned: Option<&Tasks>,
        records: &mut Vec<Record>,
    ) -> Result<(), HeartbeatError> {
        let m = &self.members[member_id];
        let next = reconcile::reconcile(
            &m.current,
            &m.process_id,
            target_epoch,
            target,
            owned,
            &self.holders,
        )
        .map_err(|f| HeartbeatError::FencedMemberEpoch(f.0))?;
        if next != m.current {
            let process = m.process_id.clone();
            let old = m.current.clone();
            self.holders.remove(&old.assigned, &process);
            self.holders.remove(&old.pending_revocation, &process);
            self.holders.add(&next.assigned, &process);
            self.holders.add(&next.pending_revocation, &process);
            let m = self.members.get_mut(member_id).expect("member");
            self.members_bytes -= m.bytes();
            m.current = next.clone();
            self.members_bytes += m.bytes();
            records.push(Record::CurrentAssignment(member_id.to_string(), Some(next)));
        }
        Ok(())
    }

    fn update_rebalance_deadline(&mut self, member_id: &str, now_ms: i64) {
        let m = &self.members[member_id];
        let d = self.deadlines.entry(member_id.to_string()).or_default();
        if m.current.state == MemberState::UnrevokedTasks {
            let epoch = m.current.member_epoch;
            if d.rebalance.is_none_or(|(_, e)| e != epoch) {
                d.rebalance = Some((now_ms + m.rebalance_timeout_ms.max(0) as i64, epoch));
            }
        } else {
            d.rebalance = None;
        }
    }

    fn endpoint_partitions(
        &self,
        configured: &ConfiguredTopology,
        topics: &dyn TopicView,
    ) -> Vec<EndpointPartitions> {
        self.members
            .values()
            .filter_map(|m| {
                let endpoint = m.user_endpoint.clone()?;
                let tasks = m.current.assigned.tasks();
                let (active, standby) = topology::endpoint_partitions(
                    &tasks.active,
                    &tasks.standby,
                    &tasks.warmup,
                    configured,
                    topics,
                );
                Some(EndpointPartitions {
                    endpoint,
                    active,
                    standby,
                })
            })
            .collect()
    }

    // ---- the clock ----

    /// Fences members past their session or rebalance deadline and runs a delayed first
    /// assignment; returns the records to write.
    pub fn tick(&mut self, settings: &Settings, now_ms: i64) -> Vec<Record> {
        let mut records = Vec::new();
        let expired: Vec<String> = self
            .deadlines
            .iter()
            .filter(|(id, d)| {
                d.session_ms.is_some_and(|t| now_ms >= t)
                    || d.rebalance.is_some_and(|(t, e)| {
                        now_ms >= t
                            && self
                                .members
                                .get(*id)
                                .is_some_and(|m| m.current.member_epoch == e)
                    })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.fence(&id, &mut records);
        }
        if self.initial_delay_until.is_some_and(|t| now_ms >= t) {
            self.initial_delay_until = None;
            if self.group_epoch > self.assignment_epoch && !self.members.is_empty() {
                self.assign(settings, now_ms, &mut records);
            }
        }
        self.check_invariants();
        records
    }

    // ---- loading ----

    /// Applies one record read back from `__consumer_offsets` (in log order); [`loaded`]
    /// (Self::loaded) follows the last.
    pub fn replay(&mut self, record: Record) {
        match record {
            Record::Metadata(Some(m)) => {
                self.group_epoch = m.epoch;
                self.metadata_hash = m.metadata_hash;
                self.validated_topology_epoch = m.validated_topology_epoch;
                self.assignment_configs = m.assignment_configs;
            }
            Record::Metadata(None) => *self = StreamsGroup::new(&self.group_id),
            Record::Member(id, Some(m)) => {
                let mut m = *m;
                if let Some(old) = self.members.remove(&id) {
                    m.current = old.current;
                }
                if let Some(i) = &m.instance_id {
                    self.static_members.insert(i.clone(), id.clone());
                }
                self.members.insert(id, m);
            }
            Record::Member(id, None) => {
                if let Some(m) = self.members.remove(&id) {
                    if let Some(i) = &m.instance_id {
                        if self.static_members.get(i) == Some(&id) {
                            self.static_members.remove(i);
                        }
                    }
                }
            }
            Record::TargetEpoch(Some((epoch, ms))) => {
                self.assignment_epoch = epoch;
                self.assignment_ms = ms;
            }
            Record::TargetEpoch(None) => {}
            Record::TargetMember(id, Some(t)) => {
                self.target.insert(id, t);
            }
            Record::TargetMember(id, None) => {
                self.target.remove(&id);
            }
            Record::CurrentAssignment(id, Some(c)) => {
                let m = self
                    .members
                    .entry(id.clone())
                    .or_insert_with(|| Member::new(&id));
                m.current = c;
            }
            Record::CurrentAssignment(_, None) => {}
            Record::Topology(t) => {
                self.topology = t;
                self.configured = None;
            }
        }
    }

    /// After the last record: rebuilds who holds what, and gives every member a session.
    pub fn loaded(&mut self, topics: &dyn TopicView, settings: &Settings, now_ms: i64) {
        // Replay does not count members' bytes as it goes (a member's record and its
        // assignment's come apart): counted once here.
        self.members_bytes = self.members.values().map(Member::bytes).sum();
        self.holders = Holders::default();
        for m in self.members.values() {
            self.holders.add(&m.current.assigned, &m.process_id);
            self.holders
                .add(&m.current.pending_revocation, &m.process_id);
        }
        if let Some(t) = &self.topology {
            self.configured = topology::configure(t, topics).ok();
        }
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            self.deadlines.entry(id.clone()).or_default().session_ms =
                Some(now_ms + settings.session_timeout_ms as i64);
            self.update_rebalance_deadline(&id, now_ms);
        }
        self.check_invariants();
    }

    /// An offset commit of a streams member (Kafka's `validateOffsetCommit`): `Ok` when the
    /// member exists and its epoch is current.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
    ) -> Result<(), OffsetError> {
        let m = self
            .members
            .get(member_id)
            .ok_or(OffsetError::UnknownMemberId)?;
        if member_epoch != m.current.member_epoch {
            return Err(OffsetError::StaleMemberEpoch);
        }
        Ok(())
    }

    /// An offset commit of a streams member (Kafka's `validateOffsetCommit`): `None` when
    /// the epoch is the member's own; for an older epoch, the epoch at which the member was
    /// given the active task of each source partition it holds or is revoking, by topic and
    /// partition (a partition missing, or given after the epoch, is refused: KIP-1251's rule,
    /// as Kafka applies it to streams groups); a newer epoch is stale.
    pub fn offset_commit_epochs(
        &self,
        member_id: &str,
        member_epoch: i32,
    ) -> Result<Option<TaskEpochs>, OffsetError> {
        let m = self
            .members
            .get(member_id)
            .ok_or(OffsetError::UnknownMemberId)?;
        if member_epoch == m.current.member_epoch {
            return Ok(None);
        }
        if member_epoch > m.current.member_epoch {
            return Err(OffsetError::StaleMemberEpoch);
        }
        let topology = self
            .topology
            .as_ref()
            .ok_or(OffsetError::StaleMemberEpoch)?;
        let mut epochs = BTreeMap::new();
        for s in &topology.subtopologies {
            let topics: Vec<&String> = s
                .source_topics
                .iter()
                .chain(s.repartition_source_topics.iter().map(|r| &r.name))
                .collect();
            // A task the member holds wins over one it is revoking.
            for held in [&m.current.pending_revocation, &m.current.assigned] {
                for (p, e) in held.active.get(&s.id).into_iter().flatten() {
                    for t in &topics {
                        epochs.insert(((*t).clone(), *p), *e);
                    }
                }
            }
        }
        Ok(Some(epochs))
    }

    /// Records that delete the group (DeleteGroups on an empty group).
    pub fn tombstones(&self) -> Vec<Record> {
        let mut records = Vec::new();
        for id in self.members.keys() {
            records.push(Record::CurrentAssignment(id.clone(), None));
        }
        for id in self.target.keys() {
            records.push(Record::TargetMember(id.clone(), None));
        }
        records.push(Record::TargetEpoch(None));
        for id in self.members.keys() {
            records.push(Record::Member(id.clone(), None));
        }
        records.push(Record::Topology(None));
        records.push(Record::Metadata(None));
        records
    }

    /// The group's invariants (cheap enough to check after every change).
    pub fn check_invariants(&self) {
        let mut active = BTreeSet::new();
        for m in self.members.values() {
            for a in [&m.current.assigned, &m.current.pending_revocation] {
                for (s, parts) in &a.active {
                    for &p in parts.keys() {
                        assert!(
                            active.insert((s.clone(), p)),
                            "streams group {}: task {s}_{p} active on two members",
                            self.group_id
                        );
                    }
                }
            }
            if m.current.member_epoch >= 0 {
                assert!(
                    m.current.member_epoch <= self.group_epoch.max(self.assignment_epoch),
                    "streams group {}: member {} at epoch {} beyond the group's {}",
                    self.group_id,
                    m.member_id,
                    m.current.member_epoch,
                    self.group_epoch
                );
            }
        }
        assert!(self.assignment_epoch <= self.group_epoch || self.members.is_empty());
    }
}

/// The epoch at which a member was given the active task of each source partition, by topic
/// name and partition.
pub type TaskEpochs = BTreeMap<(String, i32), i32>;

/// Why an offset commit from a streams member is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetError {
    UnknownMemberId,
    StaleMemberEpoch,
}

/// Kafka's `throwIfStreamsGroupMemberEpochIsInvalid`.
fn check_epoch(member: &Member, hb: &Heartbeat) -> Result<(), HeartbeatError> {
    let known = member.current.member_epoch;
    if hb.member_epoch > known {
        return Err(HeartbeatError::FencedMemberEpoch(format!(
            "The streams group member has a greater member epoch ({}) than the one known by the group coordinator ({known}). The member must abandon all its partitions and rejoin.",
            hb.member_epoch
        )));
    }
    if hb.member_epoch < known {
        let contained = hb.owned.as_ref().is_some_and(|o| {
            let a = member.current.assigned.tasks();
            subset(&o.active, &a.active)
                && subset(&o.standby, &a.standby)
                && subset(&o.warmup, &a.warmup)
        });
        if hb.member_epoch != member.current.previous_member_epoch || !contained {
            return Err(HeartbeatError::FencedMemberEpoch(format!(
                "The streams group member has a smaller member epoch ({}) than the one known by the group coordinator ({known}). The member must abandon all its partitions and rejoin.",
                hb.member_epoch
            )));
        }
    }
    Ok(())
}

fn subset(a: &TaskSet, b: &TaskSet) -> bool {
    a.iter()
        .all(|(s, p)| p.is_empty() || b.get(s).is_some_and(|q| p.is_subset(q)))
}

/// Kafka's `throwIfRequestContainsInvalidTasks`: owned tasks must exist in the topology.
fn check_tasks(configured: &ConfiguredTopology, owned: &Tasks) -> Result<(), HeartbeatError> {
    let tasks = configured.tasks();
    for set in [&owned.active, &owned.standby, &owned.warmup] {
        for (s, parts) in set {
            let Some(&n) = tasks.get(s) else {
                return Err(HeartbeatError::InvalidRequest(format!(
                    "Subtopology {s} does not exist in the topology."
                )));
            };
            if let Some(&p) = parts.iter().find(|&&p| p < 0 || p >= n) {
                return Err(HeartbeatError::InvalidRequest(format!(
                    "Task {p} for subtopology {s} is invalid. Number of tasks for this subtopology: {n}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "group_more_tests.rs"]
mod more_tests;
