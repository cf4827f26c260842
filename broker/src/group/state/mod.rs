//! One consumer group under Kafka's classic protocol, as a sans-IO state machine: every
//! method takes the request and the current time and returns what must happen next — replies
//! to parked JoinGroup/SyncGroup requests, a group metadata record to persist — and the group
//! exposes its next deadline. No sockets, clocks, randomness or logs live here, so tests drive
//! every transition deterministically (see `state_tests.rs`, and `GroupMetadataManager`
//! and `ClassicGroup` in Kafka's group coordinator for the behaviour matched).
//!
//! States: Empty -> PreparingRebalance -> CompletingRebalance -> Stable, any of them back to
//! PreparingRebalance when membership changes, PreparingRebalance -> Empty when nobody is
//! left, and Dead once the group is deleted. Parked requests are identified by a
//! [`WaiterId`] the caller chose; each is answered exactly once (a member that is removed or
//! replaced has its parked requests answered with an error, never dropped).
//!
//! Invariants: `awaiting_join` counts the members with a parked JoinGroup;
//! `supported_protocols[name]` counts the members that list `name`; `members_bytes` is the
//! sum of [`Member::bytes`]; a static member's id is in `static_members`; `leader_id` names a
//! member whenever there are members. Debug builds assert them at the end of every operation
//! that changes the group.
//!
//! The state machine's core is here: the group's fields, their bookkeeping and the checks of
//! the invariants. Each protocol flow lives in its own file: `join.rs` (JoinGroup and the
//! rebalance), `static_member.rs` (`group.instance.id`), `sync.rs` (SyncGroup and stored
//! records), `liveness.rs` (Heartbeat, LeaveGroup, the timers); `messages.rs` holds the
//! requests, replies and [`Effects`], and `member.rs` a [`Member`].

mod join;
mod liveness;
mod member;
mod messages;
mod static_member;
mod sync;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

pub use self::member::Member;
pub use self::messages::{
    AfterStore, DescribedMember, Effects, GroupDescription, GroupError, GroupEvent, JoinReply,
    JoinRequest, JoinedMember, Protocol, Store, SyncReply, SyncRequest, WaiterId,
    CONSUMER_PROTOCOL_TYPE,
};
pub use self::static_member::StaticReplace;
use super::offsets::{ExpiryBase, GroupOffsets, PendingTxnOffsets};
use super::records::{GroupMetadataValue, MemberMetadataValue};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// Kafka's names, as DescribeGroups and ListGroups report them.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    fn valid_previous(self) -> &'static [GroupState] {
        use GroupState::*;
        match self {
            Empty => &[PreparingRebalance],
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Stable, PreparingRebalance, CompletingRebalance, Empty, Dead],
        }
    }
}

/// The broker settings a group obeys.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i32,
    pub max_size: usize,
    /// How long a new member's parked JoinGroup may wait (Kafka: 5 minutes). New members
    /// cannot heartbeat, and a client that gave up and retried would otherwise leave a
    /// defunct member behind for every retry.
    pub new_member_join_timeout_ms: i32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: i32::MAX as usize,
            new_member_join_timeout_ms: 300_000,
        }
    }
}
#[derive(Debug, Clone, Copy)]
struct JoinTimer {
    deadline_ms: i64,
    /// The first rebalance of an empty group waits `group.initial.rebalance.delay.ms`, again
    /// and again while new members keep arriving, up to the rebalance timeout (KIP-134).
    initial: Option<(i64, i64)>,
}
/// A consumer group.
#[derive(Debug)]
pub struct Group {
    pub group_id: String,
    state: GroupState,
    previous_state: GroupState,
    state_timestamp_ms: Option<i64>,
    generation_id: i32,
    protocol_type: Option<String>,
    protocol_name: Option<String>,
    leader_id: Option<String>,
    members: BTreeMap<String, Member>,
    static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, with their expiry.
    pending_join: BTreeMap<String, i64>,
    pending_join_bytes: usize,
    pending_sync: BTreeSet<String>,
    awaiting_join: usize,
    supported_protocols: HashMap<String, usize>,
    subscribed_topics: Option<BTreeSet<String>>,
    new_member_added: bool,
    join_timer: Option<JoinTimer>,
    /// (deadline, generation) by which every member must have sent SyncGroup.
    sync_timer: Option<(i64, i32)>,
    members_bytes: usize,
    pub offsets: GroupOffsets,
    /// Offsets of transactions not yet ended (TxnOffsetCommit).
    pub pending_txn: PendingTxnOffsets,
}

/// A member coming back from a consumer group (the online downgrade).
#[derive(Debug, Clone)]
pub struct ReturningMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// In the member's order of preference.
    pub protocols: Vec<Protocol>,
}

/// Bytes of a group besides its members and offsets.
const GROUP_OVERHEAD_BYTES: usize = 512;
/// Bytes of one pending member id besides the id itself.
const PENDING_OVERHEAD_BYTES: usize = 64;
/// Member ids handed out with MEMBER_ID_REQUIRED and not yet used, per group. Each lives for
/// its session timeout; without a bound, a client looping on JoinGroup would grow the group
/// (and every operation on it) without limit. Beyond it new members get
/// COORDINATOR_NOT_AVAILABLE and retry once older ids have expired.
pub const PENDING_MEMBERS_PER_GROUP_MAX: usize = 10_000;
/// The largest group (members and pending member ids) whose invariants debug builds check
/// after every operation. The check walks the whole group, so above this size a run of joins
/// (a test filling the pending ids, a load test on a debug build) would grow quadratic.
#[cfg(debug_assertions)]
const DEBUG_CHECKED_ENTRIES_MAX: usize = 1_000;

impl Group {
    pub fn new(group_id: &str, now_ms: i64) -> Group {
        Group {
            group_id: group_id.to_string(),
            state: GroupState::Empty,
            previous_state: GroupState::Dead,
            state_timestamp_ms: Some(now_ms),
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_join: BTreeMap::new(),
            pending_join_bytes: 0,
            pending_sync: BTreeSet::new(),
            awaiting_join: 0,
            supported_protocols: HashMap::new(),
            subscribed_topics: None,
            new_member_added: false,
            join_timer: None,
            sync_timer: None,
            members_bytes: 0,
            offsets: GroupOffsets::default(),
            pending_txn: PendingTxnOffsets::default(),
        }
    }

    /// Rebuilds a group from its last metadata record (members resume in Stable and must
    /// heartbeat within their session timeout).
    pub fn loaded(
        group_id: &str,
        value: GroupMetadataValue,
        offsets: GroupOffsets,
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> (Group, Effects) {
        let mut g = Group::new(group_id, now_ms);
        g.offsets = offsets;
        g.generation_id = value.generation;
        g.protocol_type = Some(value.protocol_type.clone()).filter(|t| !t.is_empty());
        g.protocol_name = value.protocol.clone();
        g.leader_id = value.leader.clone();
        g.state_timestamp_ms = Some(value.current_state_timestamp_ms).filter(|t| *t >= 0);
        g.state = if value.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        let protocol = value.protocol.clone().unwrap_or_default();
        for m in value.members {
            let member = Member {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                rebalance_timeout_ms: if m.rebalance_timeout_ms < 0 {
                    m.session_timeout_ms
                } else {
                    m.rebalance_timeout_ms
                },
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: value.protocol_type.clone(),
                protocols: vec![Protocol {
                    name: protocol.clone(),
                    metadata: m.subscription,
                }],
                assignment: m.assignment,
                join_waiter: None,
                sync_waiter: None,
                is_new: false,
                heartbeat_deadline_ms: Some(now_ms + m.session_timeout_ms as i64),
            };
            g.add(member);
        }
        if g.leader_id
            .as_ref()
            .is_some_and(|l| !g.members.contains_key(l))
        {
            g.leader_id = g.members.keys().next().cloned();
        }
        g.subscribed_topics = g.compute_subscribed_topics();
        let mut fx = Effects::default();
        if g.members.len() > cfg.max_size {
            // group.max.size was lowered since the group formed: rebalance so that members
            // can commit before the excess is refused.
            g.prepare_rebalance("more members than group.max.size", cfg, now_ms, &mut fx);
        }
        g.debug_check_invariants();
        (g, fx)
    }

    // ---- read access ----

    pub fn state(&self) -> GroupState {
        self.state
    }
    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }
    pub fn leader_id(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }
    pub fn member(&self, member_id: &str) -> Option<&Member> {
        self.members.get(member_id)
    }
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }
    pub fn size(&self) -> usize {
        self.members.len()
    }
    pub fn pending_members(&self) -> usize {
        self.pending_join.len()
    }
    pub fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_join.contains_key(member_id)
    }
    pub fn static_member_id(&self, group_instance_id: &str) -> Option<&str> {
        self.static_members
            .get(group_instance_id)
            .map(String::as_str)
    }
    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// Approximate memory held by the group, for the coordinator's budget.
    pub fn bytes(&self) -> usize {
        GROUP_OVERHEAD_BYTES
            + self.group_id.len()
            + self.members_bytes
            + self.pending_join_bytes
            + self.offsets.bytes()
            + self.pending_txn.bytes()
    }

    /// The earliest time at which [`tick`](Self::tick) has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        let members = self
            .members
            .values()
            .filter_map(|m| m.heartbeat_deadline_ms);
        let pending = self.pending_join.values().copied();
        members
            .chain(pending)
            .chain(self.join_timer.map(|t| t.deadline_ms))
            .chain(self.sync_timer.map(|(d, _)| d))
            .min()
    }

    // ---- the membership state machine ----

    fn transition(&mut self, to: GroupState, now_ms: i64) {
        debug_assert!(
            to.valid_previous().contains(&self.state),
            "group {} cannot move from {:?} to {to:?}",
            self.group_id,
            self.state
        );
        self.previous_state = self.state;
        self.state = to;
        self.state_timestamp_ms = Some(now_ms);
    }

    /// Forgets the classic membership of an empty group (its protocol, generation, leader),
    /// keeping its committed and pending offsets: the id becomes a consumer group's (KIP-848),
    /// as Kafka converts an empty classic group.
    pub fn forget_membership(&mut self, now_ms: i64) {
        assert!(
            self.members.is_empty() && self.pending_join.is_empty(),
            "group {}: only an empty group's membership is forgotten",
            self.group_id
        );
        let offsets = std::mem::take(&mut self.offsets);
        let pending_txn = std::mem::take(&mut self.pending_txn);
        *self = Group::new(&self.group_id, now_ms);
        self.offsets = offsets;
        self.pending_txn = pending_txn;
        self.debug_check_invariants();
    }

    /// The online upgrade (KIP-848): the members leave this classic group for a consumer group.
    /// Their waiting JoinGroup and SyncGroup calls are answered REBALANCE_IN_PROGRESS (returned
    /// for the caller to send), as Kafka completes them; the group keeps its offsets, like an
    /// empty group that forgot its membership.
    #[allow(clippy::type_complexity)]
    pub fn hand_over_membership(
        &mut self,
        now_ms: i64,
    ) -> (
        Vec<Member>,
        Vec<(WaiterId, JoinReply)>,
        Vec<(WaiterId, SyncReply)>,
    ) {
        let members: Vec<Member> = std::mem::take(&mut self.members).into_values().collect();
        let mut join = Vec::new();
        let mut sync = Vec::new();
        for m in &members {
            if let Some(w) = m.join_waiter {
                join.push((
                    w,
                    JoinReply::error(&m.member_id, GroupError::RebalanceInProgress),
                ));
            }
            if let Some(w) = m.sync_waiter {
                sync.push((w, SyncReply::error(GroupError::RebalanceInProgress)));
            }
        }
        self.pending_join.clear();
        self.forget_membership(now_ms);
        (members, join, sync)
    }

    /// The online downgrade (KIP-848, Kafka's `ClassicGroup.fromConsumerGroup`): the classic
    /// members of a consumer group come back to this empty group at `generation`, with the
    /// protocol type `consumer`, their protocols, and their partitions as assignments
    /// (`assignment` serializes a member's, given the metadata of the protocol the group
    /// selected); Stable, the first member the leader, each member's session from `now_ms`.
    /// Returns the metadata to write; with `rebalance`, a rebalance is then prepared so that
    /// they rejoin through the classic protocol (Kafka writes the Stable group, then prepares
    /// the rebalance).
    pub fn take_members_back(
        &mut self,
        generation: i32,
        members: Vec<ReturningMember>,
        mut assignment: impl FnMut(&ReturningMember, &[u8]) -> Bytes,
        rebalance: bool,
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> (GroupMetadataValue, Effects) {
        assert!(
            self.members.is_empty() && self.pending_join.is_empty(),
            "group {}: members come back only to an empty group",
            self.group_id
        );
        assert!(!members.is_empty(), "a downgrade brings members back");
        self.forget_membership(now_ms);
        self.generation_id = generation;
        for r in &members {
            self.add(Member {
                member_id: r.member_id.clone(),
                group_instance_id: r.instance_id.clone(),
                client_id: r.client_id.clone(),
                client_host: r.client_host.clone(),
                rebalance_timeout_ms: r.rebalance_timeout_ms,
                session_timeout_ms: r.session_timeout_ms,
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                protocols: r.protocols.clone(),
                assignment: Bytes::new(),
                join_waiter: None,
                sync_waiter: None,
                is_new: false,
                heartbeat_deadline_ms: Some(now_ms + r.session_timeout_ms.max(0) as i64),
            });
        }
        // Created Stable, as Kafka creates it (no rebalance led here).
        self.previous_state = self.state;
        self.state = GroupState::Stable;
        self.state_timestamp_ms = Some(now_ms);
        self.protocol_name = self.select_protocol();
        let protocol = self.protocol_name.clone().unwrap_or_default();
        for r in &members {
            let metadata = self.members[&r.member_id].metadata(&protocol);
            self.set_assignment(&r.member_id, assignment(r, &metadata));
        }
        self.subscribed_topics = self.compute_subscribed_topics();
        let value = self.metadata_value(None);
        let mut fx = Effects::default();
        if rebalance {
            self.prepare_rebalance(
                "the group was downgraded from a consumer group",
                cfg,
                now_ms,
                &mut fx,
            );
        }
        self.debug_check_invariants();
        (value, fx)
    }

    /// Marks the group deleted; later operations on a stale handle see COORDINATOR_NOT_AVAILABLE.
    pub fn mark_dead(&mut self, now_ms: i64) {
        self.transition(GroupState::Dead, now_ms);
        self.join_timer = None;
        self.sync_timer = None;
        self.debug_check_invariants();
    }

    fn can_rebalance(&self) -> bool {
        GroupState::PreparingRebalance
            .valid_previous()
            .contains(&self.state)
    }

    fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.awaiting_join && self.pending_join.is_empty()
    }

    /// The longest rebalance timeout of the members.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.state == GroupState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols.iter().any(|p| {
                    self.supported_protocols.get(&p.name).copied().unwrap_or(0)
                        == self.members.len()
                })
        }
    }

    fn count_protocols(&mut self, protocols: &[Protocol], up: bool) {
        for p in protocols {
            let n = self.supported_protocols.entry(p.name.clone()).or_insert(0);
            if up {
                *n += 1;
            } else {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.supported_protocols.remove(&p.name);
                }
            }
        }
    }

    fn add(&mut self, member: Member) {
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.count_protocols(&member.protocols, true);
        if member.is_awaiting_join() {
            self.awaiting_join += 1;
        }
        self.members_bytes += member.bytes();
        self.remove_pending(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member (or a pending member id). Parked requests of a removed member are
    /// answered with UNKNOWN_MEMBER_ID, so that its client rejoins if it is still alive.
    fn remove(&mut self, member_id: &str, fx: &mut Effects) {
        if let Some(mut m) = self.members.remove(member_id) {
            self.count_protocols(&m.protocols, false);
            self.members_bytes -= m.bytes();
            if let Some(w) = m.join_waiter.take() {
                self.awaiting_join -= 1;
                fx.join(w, JoinReply::error("", GroupError::UnknownMemberId));
            }
            if let Some(w) = m.sync_waiter.take() {
                fx.sync_replies
                    .push((w, SyncReply::error(GroupError::UnknownMemberId)));
            }
            if let Some(instance) = &m.group_instance_id {
                self.static_members.remove(instance);
            }
        }
        if self.leader_id.as_deref() == Some(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.remove_pending(member_id);
        self.pending_sync.remove(member_id);
    }

    /// Changes a member's protocols, timeouts and parked JoinGroup. A JoinGroup that
    /// supersedes one still parked answers the old one with REBALANCE_IN_PROGRESS (its client
    /// rejoins) instead of leaving it unanswered.
    fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<Protocol>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        waiter: Option<WaiterId>,
        fx: &mut Effects,
    ) {
        let Some(mut m) = self.members.remove(member_id) else {
            return;
        };
        self.count_protocols(&m.protocols, false);
        self.members_bytes -= m.bytes();
        m.protocols = protocols;
        m.rebalance_timeout_ms = rebalance_timeout_ms;
        m.session_timeout_ms = session_timeout_ms;
        match (m.join_waiter.take(), waiter) {
            (Some(old), Some(_)) => fx.join(
                old,
                JoinReply::error(member_id, GroupError::RebalanceInProgress),
            ),
            (Some(_), None) => self.awaiting_join -= 1,
            (None, Some(_)) => self.awaiting_join += 1,
            (None, None) => {}
        }
        m.join_waiter = waiter;
        self.count_protocols(&m.protocols, true);
        self.members_bytes += m.bytes();
        self.members.insert(member_id.to_string(), m);
    }

    fn remove_pending(&mut self, member_id: &str) {
        if self.pending_join.remove(member_id).is_some() {
            self.pending_join_bytes -= member_id.len() + PENDING_OVERHEAD_BYTES;
        }
    }

    fn set_assignment(&mut self, member_id: &str, assignment: Bytes) {
        if let Some(m) = self.members.get_mut(member_id) {
            self.members_bytes -= m.assignment.len();
            self.members_bytes += assignment.len();
            m.assignment = assignment;
        }
    }

    fn reschedule_heartbeat(&mut self, member_id: &str, now_ms: i64) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.heartbeat_deadline_ms = Some(now_ms + m.session_timeout_ms as i64);
        }
    }

    /// Checks that a request's member is this group's member (and, for a static member, the
    /// current holder of its instance id).
    pub fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), GroupError> {
        if let Some(instance) = group_instance_id {
            match self.static_members.get(instance) {
                None => return Err(GroupError::UnknownMemberId),
                Some(current) if current != member_id => return Err(GroupError::FencedInstanceId),
                Some(_) => {}
            }
        }
        if !self.members.contains_key(member_id) {
            return Err(GroupError::UnknownMemberId);
        }
        Ok(())
    }

    fn select_protocol(&self) -> Option<String> {
        let n = self.members.len();
        let candidates: BTreeSet<&str> = self
            .supported_protocols
            .iter()
            .filter(|(_, c)| **c == n)
            .map(|(p, _)| p.as_str())
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(p) = m.vote(&candidates) {
                *votes.entry(p).or_insert(0) += 1;
            }
        }
        let best = votes.values().copied().max()?;
        // Ties (Kafka leaves them to hash order) go to the leader's preference, then by name.
        let tied: BTreeSet<&str> = votes
            .iter()
            .filter(|(_, v)| **v == best)
            .map(|(p, _)| *p)
            .collect();
        let leader_choice = self
            .leader_id
            .as_ref()
            .and_then(|l| self.members.get(l))
            .and_then(|l| l.vote(&tied));
        leader_choice
            .or_else(|| tied.iter().next().copied())
            .map(str::to_string)
    }

    /// The topics the members subscribe to, when the group speaks the consumer protocol and
    /// every member's subscription parses (its version-0 prefix: version, topics).
    fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if !self.uses_consumer_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            topics.extend(parse_subscription_topics(&m.metadata(protocol))?);
        }
        Some(topics)
    }

    /// Whether offsets of `topic` are in use (OffsetDelete refuses them; expiry keeps them).
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(topics) => topics.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    /// The group as its metadata record stores it, with `assignment` per member.
    pub fn metadata_value(
        &self,
        assignment: Option<&HashMap<String, Bytes>>,
    ) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            current_state_timestamp_ms: self.state_timestamp_ms.unwrap_or(-1),
            members: self
                .members
                .values()
                .map(|m| MemberMetadataValue {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: match assignment {
                        Some(a) => a.get(&m.member_id).cloned().unwrap_or_default(),
                        None => m.assignment.clone(),
                    },
                })
                .collect(),
        }
    }

    fn joined_members(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(&protocol),
            })
            .collect()
    }

    /// The reply for a member of the current generation (members only for the leader).
    fn current_reply(&self, member_id: &str, leader: Option<String>, members: bool) -> JoinReply {
        JoinReply {
            error: None,
            member_id: member_id.to_string(),
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: leader.unwrap_or_default(),
            skip_assignment: false,
            members: if members {
                self.joined_members()
            } else {
                Vec::new()
            },
        }
    }

    // -- invariants --

    /// Asserts the invariants listed in the module documentation. Debug builds check them
    /// after every operation that changes the group's membership or state (see
    /// [`debug_check_invariants`](Self::debug_check_invariants)); tests also call it directly.
    #[cfg(any(test, debug_assertions))]
    fn check_invariants(&self) {
        let awaiting = self
            .members
            .values()
            .filter(|m| m.is_awaiting_join())
            .count();
        assert_eq!(self.awaiting_join, awaiting, "awaiting_join");
        let mut counts: HashMap<String, usize> = HashMap::new();
        for m in self.members.values() {
            for p in &m.protocols {
                *counts.entry(p.name.clone()).or_insert(0) += 1;
            }
        }
        assert_eq!(self.supported_protocols, counts, "supported_protocols");
        let bytes: usize = self.members.values().map(Member::bytes).sum();
        assert_eq!(self.members_bytes, bytes, "members_bytes");
        let pending: usize = self
            .pending_join
            .keys()
            .map(|k| k.len() + PENDING_OVERHEAD_BYTES)
            .sum();
        assert_eq!(self.pending_join_bytes, pending, "pending_join_bytes");
        for (instance, id) in &self.static_members {
            assert_eq!(
                self.members[id].group_instance_id.as_deref(),
                Some(instance.as_str())
            );
        }
        if !self.members.is_empty() && self.state != GroupState::Dead {
            let leader = self
                .leader_id
                .as_ref()
                .expect("a group with members has a leader");
            assert!(
                self.members.contains_key(leader),
                "leader {leader} is a member"
            );
        }
        for id in &self.pending_sync {
            assert!(self.members.contains_key(id));
        }
    }

    /// Runs [`check_invariants`](Self::check_invariants) in debug builds, at the end of each
    /// public operation that changes the group, for groups of at most
    /// [`DEBUG_CHECKED_ENTRIES_MAX`] members and pending member ids; release builds skip it.
    fn debug_check_invariants(&self) {
        #[cfg(debug_assertions)]
        if self.members.len() + self.pending_join.len() <= DEBUG_CHECKED_ENTRIES_MAX {
            self.check_invariants();
        }
    }

    // -- offsets --

    /// Checks an OffsetCommit against the group; a member's commit also counts as a sign of
    /// life in Stable and PreparingRebalance (it keeps the session).
    pub fn validate_offset_commit(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        // Admin clients and consumers without group management commit with generation -1,
        // which is allowed while the group has no members.
        if generation_id < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        if generation_id >= 0 || !member_id.is_empty() || group_instance_id.is_some() {
            self.validate_generation(member_id, group_instance_id, generation_id)?;
        } else if self.state != GroupState::Empty {
            return Err(GroupError::UnknownMemberId);
        }
        match self.state {
            // The member has its generation but not yet its assignment.
            GroupState::CompletingRebalance => Err(GroupError::RebalanceInProgress),
            GroupState::Stable | GroupState::PreparingRebalance => {
                self.reschedule_heartbeat(member_id, now_ms);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Checks a TxnOffsetCommit against the group (Kafka's `doTxnCommitOffsets`): a named
    /// member must belong to the group (KIP-447 fences zombies by generation), a static
    /// member's instance id must be its own, and a given generation must be the group's.
    pub fn validate_txn_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if !member_id.is_empty() {
            self.validate_member(member_id, group_instance_id)?;
        }
        if generation_id >= 0 && generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(())
    }

    pub fn validate_offset_delete(&self) -> Result<(), GroupError> {
        match self.state {
            GroupState::Dead => Err(GroupError::GroupIdNotFound),
            GroupState::Stable
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
                if !self.uses_consumer_protocol() =>
            {
                Err(GroupError::NonEmptyGroup)
            }
            _ => Ok(()),
        }
    }

    pub fn validate_delete(&self) -> Result<(), GroupError> {
        match self.state {
            GroupState::Dead => Err(GroupError::GroupIdNotFound),
            GroupState::Empty => Ok(()),
            _ => Err(GroupError::NonEmptyGroup),
        }
    }

    /// How this group's offsets expire now, if at all (Kafka's `offsetExpirationCondition`).
    pub fn offset_expiry_base(&self) -> Option<ExpiryBase> {
        match &self.protocol_type {
            None => Some(ExpiryBase::CommitTime),
            Some(_) if self.state == GroupState::Empty => {
                Some(ExpiryBase::GroupEmptySince(self.state_timestamp_ms))
            }
            Some(_)
                if self.uses_consumer_protocol()
                    && self.subscribed_topics.is_some()
                    && self.state == GroupState::Stable =>
            {
                Some(ExpiryBase::CommitTime)
            }
            Some(_) => None,
        }
    }

    // -- description --

    pub fn describe(&self) -> GroupDescription {
        let stable = self.state == GroupState::Stable;
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupDescription {
            state: self.state,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol_data: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: self
                .members
                .values()
                .map(|m| DescribedMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: if stable {
                        m.metadata(&protocol)
                    } else {
                        Bytes::new()
                    },
                    // Kafka's `describeNoMetadata` keeps the assignment outside Stable too.
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }
}

/// The topics of a consumer-protocol subscription (ConsumerProtocolSubscription's version-0
/// prefix: int16 version, then an array of strings), or None if it does not parse.
pub fn parse_subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut pos = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = metadata.get(pos..pos.checked_add(n)?)?;
        pos += n;
        Some(s)
    };
    let version = i16::from_be_bytes(take(2)?.try_into().ok()?);
    if version < 0 {
        return None;
    }
    let count = i32::from_be_bytes(take(4)?.try_into().ok()?);
    if count < 0 || count as usize > metadata.len() / 2 {
        return None;
    }
    let mut topics = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let len = i16::from_be_bytes(take(2)?.try_into().ok()?);
        if len < 0 {
            return None;
        }
        topics.push(String::from_utf8(take(len as usize)?.to_vec()).ok()?);
    }
    Some(topics)
}

#[cfg(test)]
#[path = "../state_tests.rs"]
mod tests;
