//! A KIP-848 consumer group, sans-IO: members heartbeat (ConsumerGroupHeartbeat) with their
//! epoch, their subscription and the partitions they own; the group decides a target
//! assignment with a server-side assignor whenever its epoch moves, and each member converges
//! to its part of it one heartbeat at a time ([`super::reconcile`]). The clock, the topics'
//! metadata and the group's settings are inputs; every change comes back as [`Record`]s, Kafka's
//! consumer group records in `__consumer_offsets`, which the caller writes before it answers.
//!
//! The epochs, as Kafka's group coordinator counts them:
//! - the group epoch rises when a member joins, leaves, is fenced or changes its subscription,
//!   and when a subscribed topic appears, disappears or gains partitions;
//! - the target assignment is recomputed for the group epoch at the next heartbeat after it
//!   rose (the assignment epoch follows the group epoch);
//! - a member's epoch follows the assignment epoch once it has revoked what it must give up.
//!
//! A member that misses its session timeout, or that holds on to partitions it must revoke past
//! its rebalance timeout, is fenced (removed), as one that leaves with epoch -1. A static member
//! (`group.instance.id`) that leaves with epoch -2 keeps its place and its partitions until its
//! session timeout; the same instance coming back with a new member id takes them over without
//! a new epoch.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignor::{self, Assignor, Subscriber};
use super::reconcile::{reconcile, Current, MemberState, Partitions};
pub use super::records::ClassicMemberMetadata;

/// Epoch a member leaves with.
pub const LEAVE_EPOCH: i32 = -1;
/// Epoch a static member leaves with, meaning to come back.
pub const LEAVE_STATIC_EPOCH: i32 = -2;

/// The member epoch at which each partition of a member's was given to it (KIP-1251): an
/// offset commit from an older epoch is accepted for a partition given at or before it.
pub type AssignmentEpochs = BTreeMap<(Uuid, i32), i32>;

/// A topic as the metadata image knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicMeta {
    pub id: Uuid,
    pub partitions: i32,
}

/// What the group sees of the cluster's topics.
pub trait TopicView {
    fn topic(&self, name: &str) -> Option<TopicMeta>;
    /// Every topic a regular expression may match (internal ones too, as on Kafka), and a
    /// number that changes whenever that list may have changed.
    fn names(&self) -> Vec<String>;
    fn version(&self) -> u64;
}

/// The group's settings at the time of a heartbeat (group configs over broker defaults).
#[derive(Debug, Clone)]
pub struct Settings {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub max_size: usize,
    /// `group.consumer.assignors`, the first being the default.
    pub assignors: Vec<Assignor>,
    /// `consumer.assignment.interval.ms` (KIP-1263): a new target assignment is computed at most
    /// this often; a change within it waits for a heartbeat after it (0: at once).
    pub assignment_interval_ms: i32,
    /// The classic `group.max.size` when `group.consumer.migration.policy` allows the online
    /// downgrade (`downgrade`, `bidirectional`); `None` when it does not.
    pub downgrade_max_size: Option<usize>,
}

/// A ConsumerGroupHeartbeat, as validated by the handler (Kafka's `GroupCoordinatorService`
/// checks). `None` fields did not change since the member's last heartbeat.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1: unchanged.
    pub rebalance_timeout_ms: i32,
    pub subscribed_names: Option<Vec<String>>,
    pub subscribed_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub owned: Option<Partitions>,
    pub client_id: String,
    pub client_host: String,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The member's whole assignment, when it is sent (a join, a full request, a change).
    pub assignment: Option<Partitions>,
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
    InvalidRegularExpression(String),
    #[error("{0}")]
    UnsupportedAssignor(String),
}

/// A member as the group keeps it (Kafka's `ConsumerGroupMember`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Sorted.
    pub subscribed_names: Vec<String>,
    pub subscribed_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub current: Current,
    /// Of every partition in `current` (assigned or pending revocation).
    pub assignment_epochs: AssignmentEpochs,
    /// Set for a member that joined with the classic protocol (JoinGroup) and lives in this
    /// consumer group: its session timeout and protocols.
    pub classic: Option<ClassicMemberMetadata>,
}

impl Member {
    fn new(member_id: &str) -> Member {
        Member {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_names: Vec::new(),
            subscribed_regex: None,
            server_assignor: None,
            rebalance_timeout_ms: -1,
            current: Current::joining(),
            assignment_epochs: AssignmentEpochs::new(),
            classic: None,
        }
    }

    /// Whether the member joined with the classic protocol.
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// How long the member's session lasts: its classic session timeout, or the group's.
    fn session_timeout_ms(&self, settings_ms: i32) -> i64 {
        self.classic
            .as_ref()
            .map_or(settings_ms, |c| c.session_timeout_ms)
            .max(0) as i64
    }

    /// Moves the member to `next`, keeping the assignment epoch of each partition it keeps and
    /// giving the new ones the new member epoch.
    fn advance(&mut self, next: Current) {
        let mut epochs = AssignmentEpochs::new();
        for (t, ps) in next.assigned.iter().chain(&next.pending_revocation) {
            for p in ps {
                let e = self
                    .assignment_epochs
                    .get(&(*t, *p))
                    .copied()
                    .unwrap_or(next.member_epoch);
                epochs.insert((*t, *p), e);
            }
        }
        self.assignment_epochs = epochs;
        self.current = next;
    }

    /// The current-assignment record's value.
    fn assignment_record(&self) -> Record {
        Record::CurrentAssignment(
            self.member_id.clone(),
            Some((self.current.clone(), self.assignment_epochs.clone())),
        )
    }

    /// The parts of the member its metadata record holds.
    fn same_metadata(&self, other: &Member) -> bool {
        self.instance_id == other.instance_id
            && self.rack_id == other.rack_id
            && self.client_id == other.client_id
            && self.client_host == other.client_host
            && self.subscribed_names == other.subscribed_names
            && self.subscribed_regex == other.subscribed_regex
            && self.server_assignor == other.server_assignor
            && self.rebalance_timeout_ms == other.rebalance_timeout_ms
            && self.classic == other.classic
    }

    fn bytes(&self) -> usize {
        let parts = |p: &Partitions| p.values().map(|s| 16 + 4 * s.len()).sum::<usize>();
        256 + self.member_id.len()
            + self.client_id.len()
            + self.client_host.len()
            + self
                .subscribed_names
                .iter()
                .map(|n| n.len() + 24)
                .sum::<usize>()
            + parts(&self.current.assigned)
            + parts(&self.current.pending_revocation)
            + 32 * self.assignment_epochs.len()
            + self.classic.as_ref().map_or(0, |c| {
                c.supported_protocols
                    .iter()
                    .map(|(n, m)| 32 + n.len() + m.len())
                    .sum::<usize>()
            })
    }
}

/// Kafka's consumer group records, as the group asks them written (keys are the group id and,
/// for member records, the member id; `None` values are tombstones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// ConsumerGroupMetadata: the group epoch (a tombstone deletes the group).
    GroupEpoch(Option<i32>),
    /// ConsumerGroupMemberMetadata.
    Member(String, Option<Box<Member>>),
    /// ConsumerGroupTargetAssignmentMember.
    TargetMember(String, Option<Partitions>),
    /// ConsumerGroupTargetAssignmentMetadata: the assignment epoch and when it was computed
    /// (0: to be computed again at once).
    TargetEpoch(Option<(i32, i64)>),
    /// ConsumerGroupCurrentMemberAssignment, with the partitions' assignment epochs.
    CurrentAssignment(String, Option<(Current, AssignmentEpochs)>),
}

/// Kafka's consumer group states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Empty,
    Assigning,
    Reconciling,
    Stable,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Empty => "Empty",
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
    /// A classic member told to rejoin must JoinGroup by then (its rebalance timeout).
    join_ms: Option<i64>,
    /// A classic member that joined must SyncGroup by then (its rebalance timeout).
    sync_ms: Option<i64>,
}

/// A consumer group.
#[derive(Debug)]
pub struct ConsumerGroup {
    pub group_id: String,
    group_epoch: i32,
    assignment_epoch: i32,
    /// When the target of `assignment_epoch` was computed (0: never, or the group emptied):
    /// the next is computed `consumer.assignment.interval.ms` after it at the earliest.
    assignment_ms: i64,
    members: BTreeMap<String, Member>,
    /// Instance id -> member id.
    static_members: BTreeMap<String, String>,
    /// The target assignment of every member (members with nothing have no entry).
    target: BTreeMap<String, Partitions>,
    /// The epoch of the member that owns (is assigned or still revoking) each partition.
    owners: BTreeMap<(Uuid, i32), (String, i32)>,
    /// The subscribed topics (names and regex matches) as they were at the last epoch.
    subscribed: BTreeMap<String, Option<TopicMeta>>,
    /// Each regular expression in use and the topics it matched at `regex_version`.
    regexes: BTreeMap<String, BTreeSet<String>>,
    regex_version: Option<u64>,
    /// Regular expressions a heartbeat brought that the next heartbeat resolves: as on Kafka,
    /// whose coordinator resolves them off the heartbeat, a member subscribing to names and a
    /// regex gets the named topics first and the matched ones one heartbeat later.
    pending_regexes: BTreeSet<String>,
    /// A load found the target computed from other topic metadata than the topics have now
    /// (they changed while no coordinator watched): the next heartbeat starts a new epoch.
    stale_metadata: bool,
    deadlines: BTreeMap<String, Deadlines>,
    members_bytes: usize,
    /// Set when the group became a classic group (the online downgrade): what the shell builds
    /// the classic group of. The group itself is then empty and gone.
    downgraded: Option<classic::Downgraded>,
}

/// Whether a new target may be computed at `now_ms`, the last one computed at `last_ms` (0:
/// never) with an assignment interval of `interval_ms` (Kafka's
/// `canComputeNextTargetAssignment`).
fn may_assign(last_ms: i64, interval_ms: i32, now_ms: i64) -> bool {
    last_ms == 0 || interval_ms <= 0 || now_ms >= last_ms.saturating_add(interval_ms as i64)
}

impl ConsumerGroup {
    pub fn new(group_id: &str) -> ConsumerGroup {
        // A new group is at epoch 1 with an empty target (Kafka 4.4, KAFKA-20268): its first
        // member joins at 2.
        ConsumerGroup {
            group_id: group_id.to_string(),
            group_epoch: 1,
            assignment_epoch: 1,
            assignment_ms: 0,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            target: BTreeMap::new(),
            owners: BTreeMap::new(),
            subscribed: BTreeMap::new(),
            regexes: BTreeMap::new(),
            regex_version: None,
            pending_regexes: BTreeSet::new(),
            stale_metadata: false,
            deadlines: BTreeMap::new(),
            members_bytes: 0,
            downgraded: None,
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
    pub fn target_of(&self, member_id: &str) -> Option<&Partitions> {
        self.target.get(member_id)
    }

    pub fn state(&self) -> State {
        if self.members.is_empty() {
            State::Empty
        } else if self.group_epoch > self.assignment_epoch {
            State::Assigning
        } else if self.members.values().any(|m| {
            m.current.state != MemberState::Stable
                || m.current.member_epoch != self.assignment_epoch
        }) {
            State::Reconciling
        } else {
            State::Stable
        }
    }

    /// Every topic name a member subscribes to (by name or through a regex), as of the last epoch.
    pub fn subscribed_topics(&self) -> impl Iterator<Item = &str> {
        self.subscribed.keys().map(String::as_str)
    }

    /// The assignor the group uses: the one most members ask for, else the default.
    pub fn assignor(&self, settings: &Settings) -> Assignor {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = &m.server_assignor {
                *counts.entry(a.as_str()).or_default() += 1;
            }
        }
        let preferred = counts
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .and_then(|(name, _)| Assignor::by_name(name));
        preferred
            .or_else(|| settings.assignors.first().copied())
            .unwrap_or(Assignor::Uniform)
    }

    /// Approximate memory held, for the coordinator's budget.
    pub fn bytes(&self) -> usize {
        512 + self.group_id.len() + self.members_bytes + 24 * self.owners.len()
    }

    /// The earliest time [`tick`](Self::tick) has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        self.deadlines
            .values()
            .flat_map(|d| {
                d.session_ms
                    .into_iter()
                    .chain(d.rebalance.map(|r| r.0))
                    .chain(d.join_ms)
                    .chain(d.sync_ms)
            })
            .min()
    }

    // ---- heartbeats ----

    /// One heartbeat at `now_ms` (epoch -1 and -2 leave). On success the records to write
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
            let reply = self.leave(&hb, topics, settings, &mut records)?;
            self.debug_check_invariants();
            return Ok((reply, records));
        }
        if let Some(name) = &hb.server_assignor {
            if !settings.assignors.iter().any(|a| a.name() == name) {
                let names: Vec<&str> = settings.assignors.iter().map(|a| a.name()).collect();
                return Err(HeartbeatError::UnsupportedAssignor(format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    names.join(", ")
                )));
            }
        }
        if let Some(regex) = &hb.subscribed_regex {
            if let Err(e) = compile(regex) {
                return Err(HeartbeatError::InvalidRegularExpression(format!(
                    "SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}."
                )));
            }
        }
        let existing = self.existing_member(&hb, settings)?;
        self.apply_member(hb, existing, None, topics, settings, now_ms)
    }

    /// A heartbeat or a classic join from a member whose checks passed (`existing`: the member
    /// it is from, `None` for a new one): the member is updated, a changed subscription moves
    /// the group epoch, the target is computed when due, and the member reconciles.
    fn apply_member(
        &mut self,
        hb: Heartbeat,
        existing: Option<Member>,
        classic: Option<ClassicMemberMetadata>,
        topics: &dyn TopicView,
        settings: &Settings,
        now_ms: i64,
    ) -> Result<(Reply, Vec<Record>), HeartbeatError> {
        let mut records = Vec::new();
        let old = existing.clone();
        let mut member = existing.unwrap_or_else(|| Member::new(&hb.member_id));
        // A static member coming back under a new member id takes its predecessor's place.
        let replaced = match &old {
            Some(o) if o.member_id != hb.member_id => Some(o.member_id.clone()),
            _ => None,
        };
        if replaced.is_some() {
            member.member_id = hb.member_id.clone();
            member.current.member_epoch = 0;
            member.current.previous_member_epoch = 0;
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
        if let Some(a) = &hb.server_assignor {
            member.server_assignor = Some(a.clone());
        }
        if let Some(names) = &hb.subscribed_names {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            member.subscribed_names = names;
        }
        if let Some(regex) = &hb.subscribed_regex {
            // An empty regex is no regex.
            member.subscribed_regex = Some(regex.clone()).filter(|r| !r.is_empty());
        }
        member.client_id = hb.client_id.clone();
        member.client_host = hb.client_host.clone();
        if classic.is_some() {
            // A classic member names no server assignor (Kafka clears it).
            member.server_assignor = None;
        }
        // A consumer-protocol heartbeat makes the member (or the static member whose place it
        // takes) a consumer-protocol one, as Kafka clears the classic metadata.
        member.classic = classic;

        // A member in a state this version cannot reconcile must come back empty-handed.
        if member.current.state == MemberState::Unknown
            && hb
                .owned
                .as_ref()
                .is_none_or(|o| o.values().any(|p| !p.is_empty()))
        {
            return Err(HeartbeatError::FencedMemberEpoch(
                super::reconcile::Fenced.to_string(),
            ));
        }
        let mut bump = false;
        if let Some(old_id) = &replaced {
            let old = old.as_ref().expect("replaced a member");
            self.remove_member(old_id, &mut records);
            // The newcomer inherits the target and the partitions of the instance (the old
            // member's target is tombstoned, as Kafka does, or a load would bring it back).
            if let Some(t) = self.target.remove(old_id) {
                records.push(Record::TargetMember(old_id.clone(), None));
                records.push(Record::TargetMember(
                    member.member_id.clone(),
                    Some(t.clone()),
                ));
                self.target.insert(member.member_id.clone(), t);
            }
            member.current.assigned = old.current.assigned.clone();
            member.current.pending_revocation = old.current.pending_revocation.clone();
            member.assignment_epochs = old.assignment_epochs.clone();
            bump |= old.subscribed_names != member.subscribed_names
                || old.subscribed_regex != member.subscribed_regex;
            records.push(Record::Member(
                member.member_id.clone(),
                Some(Box::new(member.clone())),
            ));
            records.push(member.assignment_record());
        } else if old.as_ref().is_none_or(|o| !o.same_metadata(&member)) {
            records.push(Record::Member(
                member.member_id.clone(),
                Some(Box::new(member.clone())),
            ));
            // Only a subscription that changed moves the epoch (a new member counts as one
            // that subscribed to nothing before).
            bump |= match &old {
                None => !member.subscribed_names.is_empty() || member.subscribed_regex.is_some(),
                Some(o) => {
                    o.subscribed_names != member.subscribed_names
                        || o.subscribed_regex != member.subscribed_regex
                }
            };
        }
        self.put_member(member.clone());
        // Regexes a previous heartbeat brought are resolved now; one this heartbeat brings, at
        // the next.
        let resolve = !self.pending_regexes.is_empty();
        self.pending_regexes.clear();
        if let Some(r) = &member.subscribed_regex {
            if !resolve && !self.regexes.contains_key(r) {
                self.pending_regexes.insert(r.clone());
            }
        }
        // The subscribed topics and their metadata, when a subscription or the topics changed:
        // a change is a new epoch.
        if bump || resolve || self.regex_version != Some(topics.version()) {
            bump |= self.refresh_subscriptions(topics);
        }
        bump |= std::mem::take(&mut self.stale_metadata);
        if bump {
            self.group_epoch += 1;
            records.push(Record::GroupEpoch(Some(self.group_epoch)));
        }
        // Kafka 4.4 (KIP-1263): at most one new target per assignment interval; within it the
        // members keep reconciling towards the last one, and a heartbeat after it computes.
        if self.group_epoch > self.assignment_epoch
            && may_assign(self.assignment_ms, settings.assignment_interval_ms, now_ms)
        {
            self.assign(settings, now_ms, &mut records);
        }
        // Reconcile the member towards its target.
        let target = self.target.get(&hb.member_id).cloned().unwrap_or_default();
        let member_id = hb.member_id.clone();
        let next = {
            let owners = &self.owners;
            reconcile(
                &member.current,
                self.assignment_epoch,
                &target,
                hb.owned.as_ref(),
                |t, p| {
                    owners
                        .get(&(t, p))
                        .filter(|(owner, _)| *owner != member_id)
                        .map(|(_, e)| *e)
                },
            )
        };
        let next = next.expect("a member in an unknown state was refused above");
        let assigned_changed = next.assigned != member.current.assigned;
        if next != member.current {
            let d = self.deadlines.entry(member_id.clone()).or_default();
            d.rebalance = (next.state == MemberState::UnrevokedPartitions).then(|| {
                (
                    now_ms + member.rebalance_timeout_ms.max(0) as i64,
                    next.member_epoch,
                )
            });
            member.advance(next);
            records.push(member.assignment_record());
            self.put_member(member.clone());
        }
        self.deadlines
            .entry(member_id.clone())
            .or_default()
            .session_ms = Some(now_ms + member.session_timeout_ms(settings.session_timeout_ms));
        let full = hb.rebalance_timeout_ms != -1
            && (hb.subscribed_names.is_some() || hb.subscribed_regex.is_some())
            && hb.owned.is_some();
        let reply = Reply {
            member_id: member_id.clone(),
            member_epoch: member.current.member_epoch,
            heartbeat_interval_ms: settings.heartbeat_interval_ms,
            assignment: (hb.member_epoch == 0 || full || assigned_changed)
                .then(|| member.current.assigned.clone()),
        };
        self.debug_check_invariants();
        Ok((reply, records))
    }

    /// The member a heartbeat is from, checked against its epoch, or `None` for a new one.
    fn existing_member(
        &self,
        hb: &Heartbeat,
        settings: &Settings,
    ) -> Result<Option<Member>, HeartbeatError> {
        let full = |id: &str| {
            if !self.members.contains_key(id) && self.members.len() >= settings.max_size {
                return Err(HeartbeatError::GroupMaxSizeReached(format!(
                    "The consumer group has reached its maximum capacity of {} members.",
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
                        // A classic member's place is taken whether it left or not (it
                        // never says so: Kafka's classic static members do not leave).
                        Some(e)
                            if e.current.member_epoch != LEAVE_STATIC_EPOCH
                                && !e.uses_classic_protocol() =>
                        {
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

    /// Epoch -1 (leave) or -2 (a static member leaving to come back). The last
    /// consumer-protocol member leaving a group of classic members downgrades it.
    fn leave(
        &mut self,
        hb: &Heartbeat,
        topics: &dyn TopicView,
        settings: &Settings,
        records: &mut Vec<Record>,
    ) -> Result<Reply, HeartbeatError> {
        let member_id = match &hb.instance_id {
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
            None => {
                if !self.members.contains_key(&hb.member_id) {
                    return Err(HeartbeatError::UnknownMemberId(format!(
                        "Member {} is not a member of group {}.",
                        hb.member_id, self.group_id
                    )));
                }
                hb.member_id.clone()
            }
        };
        if hb.member_epoch == LEAVE_STATIC_EPOCH && hb.instance_id.is_some() {
            // It keeps its place and its partitions until its session times out.
            let mut m = self.members[&member_id].clone();
            m.current.previous_member_epoch = m.current.member_epoch;
            m.current.member_epoch = LEAVE_STATIC_EPOCH;
            records.push(m.assignment_record());
            self.put_member(m);
            self.deadlines
                .entry(member_id.clone())
                .or_default()
                .rebalance = None;
        } else {
            self.fence_or_downgrade(&[member_id.as_str()], topics, settings, records);
        }
        Ok(Reply {
            member_id,
            member_epoch: hb.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    }

    /// After members were removed: the subscriptions are recomputed and the group moves to a
    /// new epoch (an emptied one's target takes it at once).
    fn after_removal(&mut self, topics: &dyn TopicView, records: &mut Vec<Record>) {
        self.refresh_subscriptions(topics);
        self.stale_metadata = false;
        self.group_epoch += 1;
        records.push(Record::GroupEpoch(Some(self.group_epoch)));
        if self.members.is_empty() {
            // Nothing to assign: the (empty) target is the new epoch's at once, as Kafka 4.4
            // has it (KAFKA-20442).
            self.assignment_epoch = self.group_epoch;
            self.assignment_ms = 0;
            records.push(Record::TargetEpoch(Some((self.assignment_epoch, 0))));
        }
    }

    /// Fires due deadlines: members past their session timeout, or still holding partitions
    /// they must revoke past their rebalance timeout, are fenced (the last consumer-protocol
    /// member fenced in a group of classic members downgrades it). Returns the records and the
    /// members fenced (with why).
    pub fn tick(
        &mut self,
        topics: &dyn TopicView,
        settings: &Settings,
        now_ms: i64,
    ) -> (Vec<Record>, Vec<(String, &'static str)>) {
        let mut records = Vec::new();
        let mut fenced = Vec::new();
        let due: Vec<(String, &'static str)> = self
            .deadlines
            .iter()
            .filter_map(|(id, d)| {
                if d.session_ms.is_some_and(|s| s <= now_ms) {
                    return Some((id.clone(), "the member session expired"));
                }
                let member = self.members.get(id)?;
                if d.join_ms.is_some_and(|at| at <= now_ms) {
                    return Some((id.clone(), "the classic member did not rejoin in time"));
                }
                if d.sync_ms.is_some_and(|at| at <= now_ms) {
                    return Some((id.clone(), "the classic member did not sync in time"));
                }
                match d.rebalance {
                    Some((at, epoch))
                        if at <= now_ms
                            && member.current.state == MemberState::UnrevokedPartitions
                            && member.current.member_epoch == epoch =>
                    {
                        Some((
                            id.clone(),
                            "the member did not revoke its partitions in time",
                        ))
                    }
                    _ => None,
                }
            })
            .collect();
        for (id, why) in due {
            self.fence_or_downgrade(&[id.as_str()], topics, settings, &mut records);
            fenced.push((id, why));
            if self.downgraded.is_some() {
                break;
            }
        }
        // Deadlines that passed without cause (a rebalance timer of a member that revoked).
        for d in self.deadlines.values_mut() {
            if d.rebalance.is_some_and(|(at, _)| at <= now_ms) {
                d.rebalance = None;
            }
        }
        self.debug_check_invariants();
        (records, fenced)
    }

    /// The metadata changed (a topic created, deleted or grown): when the group's subscribed
    /// topics changed, a new epoch, whose target the next heartbeat computes. Returns the
    /// records to write.
    pub fn metadata_changed(&mut self, topics: &dyn TopicView) -> Vec<Record> {
        let mut records = Vec::new();
        let stale = std::mem::take(&mut self.stale_metadata);
        if !self.members.is_empty() && (self.refresh_subscriptions(topics) || stale) {
            self.group_epoch += 1;
            records.push(Record::GroupEpoch(Some(self.group_epoch)));
        }
        records
    }

    // ---- internals ----

    /// Recomputes the subscribed topics (names and regex matches) and their metadata; true
    /// when they differ from those of the last epoch.
    fn refresh_subscriptions(&mut self, topics: &dyn TopicView) -> bool {
        let regexes: BTreeSet<String> = self
            .members
            .values()
            .filter_map(|m| m.subscribed_regex.clone())
            .collect();
        let version = topics.version();
        let stale = self.regex_version != Some(version);
        self.regexes.retain(|r, _| regexes.contains(r));
        let names = if stale || regexes.iter().any(|r| !self.regexes.contains_key(r)) {
            topics.names()
        } else {
            Vec::new()
        };
        // A regex that matches other topics than before changes its members' subscriptions,
        // even when other members subscribed to those topics already.
        let mut regex_changed = false;
        for r in &regexes {
            if self.pending_regexes.contains(r) {
                continue;
            }
            if stale || !self.regexes.contains_key(r) {
                let matched: BTreeSet<String> = match compile(r) {
                    Ok(re) => names.iter().filter(|n| re.is_match(n)).cloned().collect(),
                    Err(_) => BTreeSet::new(),
                };
                // (A regex new to the group matched nothing before.)
                regex_changed |= self
                    .regexes
                    .get(r)
                    .map_or(!matched.is_empty(), |before| *before != matched);
                self.regexes.insert(r.clone(), matched);
            }
        }
        self.regex_version = Some(version);
        let mut subscribed: BTreeMap<String, Option<TopicMeta>> = BTreeMap::new();
        for m in self.members.values() {
            for n in &m.subscribed_names {
                subscribed.entry(n.clone()).or_insert(None);
            }
            if let Some(matched) = m
                .subscribed_regex
                .as_ref()
                .and_then(|r| self.regexes.get(r))
            {
                for n in matched {
                    subscribed.entry(n.clone()).or_insert(None);
                }
            }
        }
        for (name, meta) in subscribed.iter_mut() {
            *meta = topics.topic(name);
        }
        let changed = subscribed != self.subscribed || regex_changed;
        self.subscribed = subscribed;
        changed
    }

    /// The topic ids a member subscribes to that exist, as of the last epoch.
    fn member_topics(&self, m: &Member) -> BTreeSet<Uuid> {
        let by_name = m.subscribed_names.iter();
        let by_regex = m
            .subscribed_regex
            .as_ref()
            .and_then(|r| self.regexes.get(r))
            .into_iter()
            .flatten();
        by_name
            .chain(by_regex)
            .filter_map(|n| self.subscribed.get(n).copied().flatten())
            .map(|t| t.id)
            .collect()
    }

    /// A new target assignment for the group epoch.
    fn assign(&mut self, settings: &Settings, now_ms: i64, records: &mut Vec<Record>) {
        let assignor = self.assignor(settings);
        type Seen = (String, Option<String>, Option<String>, BTreeSet<Uuid>);
        let topic_sets: Vec<Seen> = self
            .members
            .values()
            .map(|m| {
                (
                    m.member_id.clone(),
                    m.instance_id.clone(),
                    m.rack_id.clone(),
                    self.member_topics(m),
                )
            })
            .collect();
        let subscribers: Vec<Subscriber<'_>> = topic_sets
            .iter()
            .map(|(id, instance, rack, topics)| Subscriber {
                member_id: id,
                instance_id: instance.as_deref(),
                rack: rack.as_deref(),
                topics,
            })
            .collect();
        let partitions: BTreeMap<Uuid, i32> = self
            .subscribed
            .values()
            .flatten()
            .map(|t| (t.id, t.partitions))
            .collect();
        let new = assignor::assign(
            assignor,
            &subscribers,
            |id| partitions.get(&id).copied(),
            &self.target,
        )
        .expect("every subscribed topic id has its partition count");
        let mut target = BTreeMap::new();
        for (member, parts) in new {
            let parts: Partitions = parts.into_iter().filter(|(_, p)| !p.is_empty()).collect();
            let before = self.target.get(&member);
            if before.map_or(!parts.is_empty(), |b| *b != parts) {
                records.push(Record::TargetMember(member.clone(), Some(parts.clone())));
            }
            if !parts.is_empty() {
                target.insert(member, parts);
            }
        }
        for gone in self.target.keys().filter(|m| !target.contains_key(*m)) {
            if self.members.contains_key(gone) {
                records.push(Record::TargetMember(gone.clone(), Some(Partitions::new())));
            }
        }
        self.target = target;
        self.assignment_epoch = self.group_epoch;
        self.assignment_ms = now_ms;
        records.push(Record::TargetEpoch(Some((self.assignment_epoch, now_ms))));
    }

    /// Inserts or replaces a member, keeping the indexes (owners, static ids, bytes).
    fn put_member(&mut self, m: Member) {
        if let Some(old) = self.members.remove(&m.member_id) {
            self.unindex(&old);
        }
        self.members_bytes += m.bytes();
        for (t, ps) in m
            .current
            .assigned
            .iter()
            .chain(&m.current.pending_revocation)
        {
            for p in ps {
                self.owners
                    .insert((*t, *p), (m.member_id.clone(), m.current.member_epoch));
            }
        }
        if let Some(i) = &m.instance_id {
            self.static_members.insert(i.clone(), m.member_id.clone());
        }
        self.members.insert(m.member_id.clone(), m);
    }

    fn unindex(&mut self, m: &Member) {
        self.members_bytes -= m.bytes();
        for (t, ps) in m
            .current
            .assigned
            .iter()
            .chain(&m.current.pending_revocation)
        {
            for p in ps {
                if self
                    .owners
                    .get(&(*t, *p))
                    .is_some_and(|(o, _)| *o == m.member_id)
                {
                    self.owners.remove(&(*t, *p));
                }
            }
        }
        if let Some(i) = &m.instance_id {
            if self.static_members.get(i) == Some(&m.member_id) {
                self.static_members.remove(i);
            }
        }
    }

    /// Removes a member and writes its tombstones (its target is the caller's business).
    fn remove_member(&mut self, member_id: &str, records: &mut Vec<Record>) {
        if let Some(m) = self.members.remove(member_id) {
            self.unindex(&m);
            records.push(Record::CurrentAssignment(member_id.to_string(), None));
            records.push(Record::Member(member_id.to_string(), None));
        }
        self.deadlines.remove(member_id);
    }

    // ---- loading ----

    /// Rebuilds a group from its records, in log order (the last write of each key wins).
    /// Members come back with a fresh session, from `now_ms`.
    pub fn replay(&mut self, record: Record) {
        match record {
            Record::GroupEpoch(Some(e)) => self.group_epoch = e,
            Record::GroupEpoch(None) => *self = ConsumerGroup::new(&self.group_id),
            Record::TargetEpoch(Some((e, at))) => {
                self.assignment_epoch = e;
                self.assignment_ms = at;
            }
            Record::TargetEpoch(None) => {
                self.assignment_epoch = 0;
                self.assignment_ms = 0;
            }
            Record::TargetMember(id, Some(p)) => {
                self.target.insert(id, p);
            }
            Record::TargetMember(id, None) => {
                self.target.remove(&id);
            }
            Record::Member(id, Some(m)) => {
                let current = self
                    .members
                    .get(&id)
                    .map(|o| o.current.clone())
                    .unwrap_or_else(Current::joining);
                let epochs = self
                    .members
                    .get(&id)
                    .map(|o| o.assignment_epochs.clone())
                    .unwrap_or_default();
                self.put_member(Member {
                    current,
                    assignment_epochs: epochs,
                    ..*m
                });
            }
            Record::Member(id, None) => {
                if let Some(m) = self.members.remove(&id) {
                    self.unindex(&m);
                }
                self.deadlines.remove(&id);
            }
            Record::CurrentAssignment(id, Some((c, epochs))) => {
                let mut m = self
                    .members
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| Member::new(&id));
                m.current = c;
                m.assignment_epochs = epochs;
                self.put_member(m);
            }
            Record::CurrentAssignment(_, None) => {}
        }
    }

    /// After a replay: members must heartbeat within their session timeout, and those still
    /// revoking must revoke within their rebalance timeout; the subscribed topics are read from
    /// the metadata now, and when they changed since the target was computed, the next
    /// heartbeat starts a new epoch.
    pub fn loaded(&mut self, topics: &dyn TopicView, session_timeout_ms: i32, now_ms: i64) {
        self.target.retain(|_, p| !p.is_empty());
        for (id, m) in &self.members {
            let d = self.deadlines.entry(id.clone()).or_default();
            d.session_ms = Some(now_ms + m.session_timeout_ms(session_timeout_ms));
            // A member still revoking gets its rebalance timeout again, as on Kafka's load:
            // otherwise one that keeps heartbeating without revoking would hold its partitions
            // for ever.
            if m.current.state == MemberState::UnrevokedPartitions {
                d.rebalance = Some((
                    now_ms + m.rebalance_timeout_ms.max(0) as i64,
                    m.current.member_epoch,
                ));
            }
        }
        self.refresh_subscriptions(topics);
        // The records do not say which metadata the target was computed from; it assigns every
        // partition of the subscribed topics, so partitions it misses or has too many of mean the
        // topics changed since.
        if self.group_epoch == self.assignment_epoch {
            let mut targeted: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
            for (t, ps) in self.target.values().flatten() {
                targeted.entry(*t).or_default().extend(ps);
            }
            let subscribed: BTreeMap<Uuid, BTreeSet<i32>> = self
                .subscribed
                .values()
                .flatten()
                .filter(|t| t.partitions > 0)
                .map(|t| (t.id, (0..t.partitions).collect()))
                .collect();
            self.stale_metadata = targeted != subscribed;
        }
        self.debug_check_invariants();
    }

    // ---- invariants ----

    /// Panics when the group's indexes disagree with its members (debug builds check after
    /// every change; cheap enough for the group sizes tests use).
    pub fn check_invariants(&self) {
        assert!(
            self.assignment_epoch <= self.group_epoch,
            "group {}: assignment epoch {} above group epoch {}",
            self.group_id,
            self.assignment_epoch,
            self.group_epoch
        );
        let mut owners = BTreeMap::new();
        let mut bytes = 0;
        for m in self.members.values() {
            bytes += m.bytes();
            assert!(m.current.member_epoch <= self.group_epoch || self.group_epoch == 0);
            for (t, ps) in m
                .current
                .assigned
                .iter()
                .chain(&m.current.pending_revocation)
            {
                for p in ps {
                    let prev =
                        owners.insert((*t, *p), (m.member_id.clone(), m.current.member_epoch));
                    assert!(
                        prev.is_none(),
                        "group {}: partition {t}-{p} owned by two members",
                        self.group_id
                    );
                }
            }
            if let Some(i) = &m.instance_id {
                assert_eq!(self.static_members.get(i), Some(&m.member_id));
            }
        }
        assert_eq!(owners, self.owners, "group {}: owner index", self.group_id);
        assert_eq!(bytes, self.members_bytes);
        assert!(self
            .static_members
            .values()
            .all(|id| self.members.contains_key(id)));
        assert!(self
            .deadlines
            .keys()
            .all(|id| self.members.contains_key(id)));
    }

    fn debug_check_invariants(&self) {
        #[cfg(debug_assertions)]
        if self.members.len() <= 1_000 {
            self.check_invariants();
        }
    }
}

/// Kafka's checks of a heartbeat's epoch against the member's (`throwIfMemberEpochIsInvalid`):
/// a newer epoch than the coordinator gave is fenced; an older one only when it is not the
/// previous epoch with a subset of the member's partitions (its last answer may have been lost).
fn check_epoch(member: &Member, hb: &Heartbeat) -> Result<(), HeartbeatError> {
    let known = member.current.member_epoch;
    if hb.member_epoch > known {
        return Err(HeartbeatError::FencedMemberEpoch(format!(
            "The consumer group member has a greater member epoch ({}) than the one known by the group coordinator ({known}). The member must abandon all its partitions and rejoin.",
            hb.member_epoch
        )));
    }
    if hb.member_epoch < known {
        let subset = hb.owned.as_ref().is_some_and(|owned| {
            owned.iter().all(|(t, ps)| {
                ps.is_empty()
                    || member
                        .current
                        .assigned
                        .get(t)
                        .is_some_and(|a| ps.is_subset(a))
            })
        });
        if hb.member_epoch != member.current.previous_member_epoch || !subset {
            return Err(HeartbeatError::FencedMemberEpoch(format!(
                "The consumer group member has a smaller member epoch ({}) than the one known by the group coordinator ({known}). The member must abandon all its partitions and rejoin.",
                hb.member_epoch
            )));
        }
    }
    Ok(())
}

/// A subscription regex, matched against whole topic names as Kafka's RE2J `matches()` does.
pub fn compile(regex: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{regex})$"))
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;

#[path = "classic.rs"]
pub mod classic;

#[cfg(test)]
#[path = "classic_tests.rs"]
mod classic_tests;
