//! One consumer group under Kafka's classic protocol, as a sans-IO state machine: every
//! method takes the request and the current time and returns what must happen next — replies
//! to parked JoinGroup/SyncGroup requests, a group metadata record to persist — and the group
//! exposes its next deadline. No sockets, clocks, randomness or logs live here, so tests drive
//! every transition deterministically (see the tests at the end, and `GroupMetadataManager`
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
//! member whenever there are members.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

use super::offsets::{ExpiryBase, GroupOffsets};
use super::records::{GroupMetadataValue, MemberMetadataValue};

/// Identifies a parked JoinGroup or SyncGroup request; chosen by the caller.
pub type WaiterId = u64;

/// The protocol type of Kafka consumers (KIP-62's embedded consumer protocol).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Why a group operation was refused; each is one Kafka error code (mapped at the handler
/// boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
    #[error("the coordinator is loading the group's partition of __consumer_offsets")]
    CoordinatorLoadInProgress,
    #[error("this broker is not the group's coordinator")]
    NotCoordinator,
    #[error("the group id is empty")]
    InvalidGroupId,
    #[error("the member id is not a member of the group")]
    UnknownMemberId,
    #[error("a member id is required: rejoin with the id assigned")]
    MemberIdRequired,
    #[error("the generation id is not the group's")]
    IllegalGeneration,
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    #[error("the member's protocol type or protocols do not match the group's")]
    InconsistentGroupProtocol,
    #[error(
        "the session timeout is outside group.min.session.timeout.ms..group.max.session.timeout.ms"
    )]
    InvalidSessionTimeout,
    #[error("the group has reached group.max.size members")]
    GroupMaxSizeReached,
    #[error("another member with the same group.instance.id has replaced this one")]
    FencedInstanceId,
    #[error("the group does not exist")]
    GroupIdNotFound,
    #[error("the group has members")]
    NonEmptyGroup,
    #[error("the group is subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("the offset metadata is larger than offset.metadata.max.bytes")]
    OffsetMetadataTooLarge,
    #[error("the topic or partition does not exist")]
    UnknownTopicOrPartition,
    #[error("the request is invalid")]
    InvalidRequest,
    #[error("unexpected server error")]
    UnknownServerError,
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

/// A JoinGroup, as the state machine needs it.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// Empty for a member joining for the first time.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    /// JoinGroup v4+: a new dynamic member must first get its id (KIP-394).
    pub require_known_member_id: bool,
    /// JoinGroup v9+: a static leader rejoining a stable group may skip the assignment.
    pub supports_skip_assignment: bool,
    /// The id the member gets if it is new (the caller generates it:
    /// `<client.id or group.instance.id>-<uuid>`, as Kafka does).
    pub new_member_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinReply {
    pub error: Option<GroupError>,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub skip_assignment: bool,
    /// Every member's metadata for the selected protocol, for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinReply {
    pub fn error(member_id: &str, error: GroupError) -> JoinReply {
        JoinReply {
            error: Some(error),
            member_id: member_id.to_string(),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReply {
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncReply {
    pub fn error(error: GroupError) -> SyncReply {
        SyncReply {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// A group metadata record the caller must append to `__consumer_offsets`, then report with
/// [`Group::stored`].
#[derive(Debug, Clone)]
pub struct Store {
    pub value: GroupMetadataValue,
    pub then: AfterStore,
}

/// What the group does once its record is (or failed to be) written.
#[derive(Debug, Clone)]
pub enum AfterStore {
    /// The group became empty: nothing waits on it (a failure is only logged, as in Kafka:
    /// the previous generation would come back after a crash, with no members to use it).
    Nothing,
    /// The leader's SyncGroup: on success every member gets its assignment and the group is
    /// Stable.
    Assignment {
        generation_id: i32,
        assignment: HashMap<String, Bytes>,
    },
    /// A static member rejoined a stable group under a new member id (KIP-345): on success it
    /// gets the current generation without a rebalance; on failure the old id is restored.
    StaticReplace(Box<StaticReplace>),
}

#[derive(Debug, Clone)]
pub struct StaticReplace {
    pub group_instance_id: String,
    pub old_member_id: String,
    pub new_member_id: String,
    pub old_protocols: Vec<Protocol>,
    pub old_rebalance_timeout_ms: i32,
    pub old_session_timeout_ms: i32,
    pub current_leader: Option<String>,
    pub supports_skip_assignment: bool,
    pub waiter: WaiterId,
}

/// Something worth a line in the broker's log (the coordinator logs them; tests read them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEvent {
    PreparingRebalance {
        reason: &'static str,
    },
    /// The join phase completed: the members wait for the leader's assignment.
    Stabilized {
        generation_id: i32,
        members: usize,
    },
    /// The join phase completed with nobody left.
    Emptied {
        generation_id: i32,
    },
    MemberRemoved {
        member_id: String,
        reason: &'static str,
    },
    StaticMemberReplaced {
        group_instance_id: String,
        old_member_id: String,
        new_member_id: String,
    },
}

impl std::fmt::Display for GroupEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupEvent::PreparingRebalance { reason } => {
                write!(f, "preparing to rebalance: {reason}")
            }
            GroupEvent::Stabilized {
                generation_id,
                members,
            } => write!(
                f,
                "stabilized generation {generation_id} with {members} members"
            ),
            GroupEvent::Emptied { generation_id } => {
                write!(f, "generation {generation_id} is empty")
            }
            GroupEvent::MemberRemoved { member_id, reason } => {
                write!(f, "removed member {member_id}: {reason}")
            }
            GroupEvent::StaticMemberReplaced {
                group_instance_id,
                old_member_id,
                new_member_id,
            } => write!(
                f,
                "static member {group_instance_id} rejoined as {new_member_id}, fencing {old_member_id}"
            ),
        }
    }
}

/// What an operation asks the caller to do.
#[derive(Debug, Default)]
pub struct Effects {
    pub join_replies: Vec<(WaiterId, JoinReply)>,
    pub sync_replies: Vec<(WaiterId, SyncReply)>,
    pub store: Vec<Store>,
    pub events: Vec<GroupEvent>,
}

impl Effects {
    fn join(&mut self, waiter: WaiterId, reply: JoinReply) {
        self.join_replies.push((waiter, reply));
    }
    pub fn merge(&mut self, other: Effects) {
        self.join_replies.extend(other.join_replies);
        self.sync_replies.extend(other.sync_replies);
        self.store.extend(other.store);
        self.events.extend(other.events);
    }
    fn removed(&mut self, member_id: &str, reason: &'static str) {
        self.events.push(GroupEvent::MemberRemoved {
            member_id: member_id.to_string(),
            reason,
        });
    }
}

/// A member of the group.
#[derive(Debug, Clone)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    join_waiter: Option<WaiterId>,
    sync_waiter: Option<WaiterId>,
    /// Joined but not yet through a completed JoinGroup phase.
    is_new: bool,
    /// When the session (or a new member's join timeout) expires.
    heartbeat_deadline_ms: Option<i64>,
}

impl Member {
    pub fn is_awaiting_join(&self) -> bool {
        self.join_waiter.is_some()
    }
    pub fn is_awaiting_sync(&self) -> bool {
        self.sync_waiter.is_some()
    }
    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// Same protocols with the same metadata, in the same order.
    fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// The first of this member's protocols (its preference order) among `candidates`.
    fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|n| candidates.contains(n))
    }

    /// Members awaiting a join or sync response are covered by the rebalance timeouts, so a
    /// missed heartbeat does not evict them; new members are evicted by their join timeout.
    fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.is_awaiting_join() || self.is_awaiting_sync())
    }

    /// Approximate memory held, for the coordinator's budget.
    pub fn bytes(&self) -> usize {
        const OVERHEAD_BYTES: usize = 256;
        OVERHEAD_BYTES
            + self.member_id.len()
            + self.group_instance_id.as_ref().map_or(0, String::len)
            + self.client_id.len()
            + self.client_host.len()
            + self.protocol_type.len()
            + self
                .protocols
                .iter()
                .map(|p| p.name.len() + p.metadata.len() + 32)
                .sum::<usize>()
            + self.assignment.len()
    }
}

#[derive(Debug, Clone, Copy)]
struct JoinTimer {
    deadline_ms: i64,
    /// The first rebalance of an empty group waits `group.initial.rebalance.delay.ms`, again
    /// and again while new members keep arriving, up to the rebalance timeout (KIP-134).
    initial: Option<(i64, i64)>,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol_data: String,
    pub members: Vec<DescribedMember>,
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
}

/// Bytes of a group besides its members and offsets.
const GROUP_OVERHEAD_BYTES: usize = 512;

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
            pending_sync: BTreeSet::new(),
            awaiting_join: 0,
            supported_protocols: HashMap::new(),
            subscribed_topics: None,
            new_member_added: false,
            join_timer: None,
            sync_timer: None,
            members_bytes: 0,
            offsets: GroupOffsets::default(),
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
            + self
                .pending_join
                .keys()
                .map(|k| k.len() + 64)
                .sum::<usize>()
            + self.offsets.bytes()
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

    /// Marks the group deleted; later operations on a stale handle see COORDINATOR_NOT_AVAILABLE.
    pub fn mark_dead(&mut self, now_ms: i64) {
        self.transition(GroupState::Dead, now_ms);
        self.join_timer = None;
        self.sync_timer = None;
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
        self.pending_join.remove(&member.member_id);
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
        self.pending_join.remove(member_id);
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

    // -- JoinGroup --

    /// Handles a JoinGroup. The answer (now or when the rebalance completes) comes as a join
    /// reply for `waiter` in the effects of this or a later call.
    pub fn join(
        &mut self,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> Effects {
        let mut fx = Effects::default();
        if req.session_timeout_ms < cfg.min_session_timeout_ms
            || req.session_timeout_ms > cfg.max_session_timeout_ms
        {
            fx.join(
                waiter,
                JoinReply::error(&req.member_id, GroupError::InvalidSessionTimeout),
            );
            return fx;
        }
        if !self.accept_joining_member(&req.member_id, cfg) {
            if self.members.contains_key(&req.member_id) {
                fx.removed(&req.member_id, "group.max.size reached");
            }
            self.remove(&req.member_id, &mut fx);
            fx.join(
                waiter,
                JoinReply::error("", GroupError::GroupMaxSizeReached),
            );
            return fx;
        }
        if req.member_id.is_empty() {
            self.join_new_member(req, waiter, cfg, now_ms, &mut fx);
        } else {
            self.join_existing_member(req, waiter, cfg, now_ms, &mut fx);
        }
        fx
    }

    fn accept_joining_member(&self, member_id: &str, cfg: &GroupConfig) -> bool {
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            // Awaiting members are counted: they are the ones that will be in the next
            // generation, and counting them lets the last joiners be refused.
            GroupState::PreparingRebalance => {
                self.members
                    .get(member_id)
                    .is_some_and(Member::is_awaiting_join)
                    || self.awaiting_join < cfg.max_size
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members.contains_key(member_id) || self.members.len() < cfg.max_size
            }
        }
    }

    fn join_new_member(
        &mut self,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        if self.state == GroupState::Dead {
            // The group was just deleted: let the member find the coordinator again.
            fx.join(
                waiter,
                JoinReply::error("", GroupError::CoordinatorNotAvailable),
            );
            return;
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            fx.join(
                waiter,
                JoinReply::error("", GroupError::InconsistentGroupProtocol),
            );
            return;
        }
        let new_id = req.new_member_id.clone();
        match req.group_instance_id.clone() {
            Some(instance) => match self.static_members.get(&instance).cloned() {
                Some(old_id) => {
                    self.update_static_member_and_rebalance(
                        &instance, &old_id, &new_id, req, waiter, cfg, now_ms, fx,
                    );
                }
                None => self.add_member_and_rebalance(new_id, req, waiter, cfg, now_ms, fx),
            },
            None if req.require_known_member_id => {
                // KIP-394: hand out the id first, so that a client that times out and retries
                // does not leave a member behind for every attempt.
                self.pending_join
                    .insert(new_id.clone(), now_ms + req.session_timeout_ms as i64);
                fx.join(
                    waiter,
                    JoinReply::error(&new_id, GroupError::MemberIdRequired),
                );
            }
            None => self.add_member_and_rebalance(new_id, req, waiter, cfg, now_ms, fx),
        }
    }

    fn join_existing_member(
        &mut self,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let member_id = req.member_id.clone();
        if self.state == GroupState::Dead {
            fx.join(
                waiter,
                JoinReply::error(&member_id, GroupError::CoordinatorNotAvailable),
            );
            return;
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            fx.join(
                waiter,
                JoinReply::error(&member_id, GroupError::InconsistentGroupProtocol),
            );
            return;
        }
        if self.pending_join.contains_key(&member_id) {
            if req.group_instance_id.is_some() {
                // Pending ids are only handed to dynamic members; Kafka fails this request.
                fx.join(
                    waiter,
                    JoinReply::error(&member_id, GroupError::UnknownServerError),
                );
                return;
            }
            self.add_member_and_rebalance(member_id, req, waiter, cfg, now_ms, fx);
            return;
        }
        if let Err(e) = self.validate_member(&member_id, req.group_instance_id.as_deref()) {
            fx.join(waiter, JoinReply::error(&member_id, e));
            return;
        }
        let matches = self.members[&member_id].matches(&req.protocols);
        let is_leader = self.leader_id.as_deref() == Some(member_id.as_str());
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(&member_id, req, waiter, cfg, now_ms, fx)
            }
            GroupState::CompletingRebalance if matches => {
                // The member lost the JoinGroup response: answer it again.
                let reply = self.current_reply(&member_id, self.leader_id.clone(), is_leader);
                fx.join(waiter, reply);
            }
            GroupState::Stable if matches && !is_leader => {
                // A follower with unchanged metadata just needs the current generation to sync.
                let reply = self.current_reply(&member_id, self.leader_id.clone(), false);
                fx.join(waiter, reply);
            }
            // A changed subscription, or the leader asking for a rebalance (e.g. for topic
            // metadata changes that its metadata does not show).
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(&member_id, req, waiter, cfg, now_ms, fx)
            }
            GroupState::Empty | GroupState::Dead => fx.join(
                waiter,
                JoinReply::error(&member_id, GroupError::UnknownMemberId),
            ),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        member_id: String,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let member = Member {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type,
            protocols: req.protocols,
            assignment: Bytes::new(),
            join_waiter: Some(waiter),
            sync_waiter: None,
            is_new: true,
            heartbeat_deadline_ms: Some(now_ms + cfg.new_member_join_timeout_ms as i64),
        };
        if self.state == GroupState::PreparingRebalance && self.previous_state == GroupState::Empty
        {
            self.new_member_added = true;
        }
        self.add(member);
        self.maybe_prepare_rebalance_or_complete_join("a member joined", cfg, now_ms, fx);
    }

    fn update_member_and_rebalance(
        &mut self,
        member_id: &str,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        self.update_member(
            member_id,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(waiter),
            fx,
        );
        self.maybe_prepare_rebalance_or_complete_join(
            "a member rejoined with new metadata, or the leader rejoined",
            cfg,
            now_ms,
            fx,
        );
    }

    /// KIP-345: a static member that comes back with an unknown member id takes over its
    /// instance id. Its old id is fenced (parked requests answered FENCED_INSTANCE_ID); in a
    /// Stable group whose protocol would not change, it gets the current generation back
    /// without a rebalance once the new member id is persisted.
    #[allow(clippy::too_many_arguments)]
    fn update_static_member_and_rebalance(
        &mut self,
        instance: &str,
        old_id: &str,
        new_id: &str,
        req: JoinRequest,
        waiter: WaiterId,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let current_leader = self.leader_id.clone();
        let (old_protocols, old_rebalance, old_session) = {
            let m = &self.members[old_id];
            (
                m.protocols.clone(),
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
            )
        };
        self.replace_static_member(instance, old_id, new_id, fx);
        fx.events.push(GroupEvent::StaticMemberReplaced {
            group_instance_id: instance.to_string(),
            old_member_id: old_id.to_string(),
            new_member_id: new_id.to_string(),
        });
        self.reschedule_heartbeat(new_id, now_ms);
        self.update_member(
            new_id,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(waiter),
            fx,
        );
        match self.state {
            GroupState::Stable => {
                if self.protocol_name.is_some() && self.select_protocol() == self.protocol_name {
                    fx.store.push(Store {
                        value: self.metadata_value(None),
                        then: AfterStore::StaticReplace(Box::new(StaticReplace {
                            group_instance_id: instance.to_string(),
                            old_member_id: old_id.to_string(),
                            new_member_id: new_id.to_string(),
                            old_protocols,
                            old_rebalance_timeout_ms: old_rebalance,
                            old_session_timeout_ms: old_session,
                            current_leader,
                            supports_skip_assignment: req.supports_skip_assignment,
                            waiter,
                        })),
                    });
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(
                        "a static member rejoined with protocols that change the selection",
                        cfg,
                        now_ms,
                        fx,
                    );
                }
            }
            // The leader may already be assigning with the old member id, which the new one
            // would not match: rebalance.
            GroupState::CompletingRebalance => self.prepare_rebalance(
                "a static member rejoined while the assignment was computed",
                cfg,
                now_ms,
                fx,
            ),
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(cfg, now_ms, fx),
            // Unreachable: a group with a static member is neither Empty nor Dead here.
            GroupState::Empty | GroupState::Dead => {
                self.reply_join(
                    new_id,
                    JoinReply::error("", GroupError::UnknownServerError),
                    fx,
                );
            }
        }
    }

    fn replace_static_member(
        &mut self,
        instance: &str,
        old_id: &str,
        new_id: &str,
        fx: &mut Effects,
    ) {
        let Some(mut m) = self.members.remove(old_id) else {
            return;
        };
        if let Some(w) = m.join_waiter.take() {
            self.awaiting_join -= 1;
            fx.join(w, JoinReply::error(old_id, GroupError::FencedInstanceId));
        }
        if let Some(w) = m.sync_waiter.take() {
            fx.sync_replies
                .push((w, SyncReply::error(GroupError::FencedInstanceId)));
        }
        self.members_bytes -= m.bytes();
        m.member_id = new_id.to_string();
        m.is_new = false;
        self.members_bytes += m.bytes();
        self.members.insert(new_id.to_string(), m);
        if self.leader_id.as_deref() == Some(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        // The new incarnation owes the SyncGroup the old one had not sent yet.
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.to_string());
        }
        self.static_members
            .insert(instance.to_string(), new_id.to_string());
    }

    fn reply_join(&mut self, member_id: &str, reply: JoinReply, fx: &mut Effects) -> bool {
        let Some(m) = self.members.get_mut(member_id) else {
            return false;
        };
        let Some(w) = m.join_waiter.take() else {
            return false;
        };
        self.awaiting_join -= 1;
        fx.join(w, reply);
        true
    }

    fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        reason: &'static str,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        if self.can_rebalance() {
            self.prepare_rebalance(reason, cfg, now_ms, fx);
        } else {
            self.maybe_complete_join_phase(cfg, now_ms, fx);
        }
    }

    /// Completes the join phase early when everyone has joined, except during the initial
    /// delay of a new group, which always runs its course.
    fn maybe_complete_join_phase(&mut self, cfg: &GroupConfig, now_ms: i64, fx: &mut Effects) {
        if self.state == GroupState::PreparingRebalance
            && self.has_all_members_joined()
            && self.previous_state != GroupState::Empty
        {
            self.complete_join(cfg, now_ms, fx);
        }
    }

    fn prepare_rebalance(
        &mut self,
        reason: &'static str,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        fx.events.push(GroupEvent::PreparingRebalance { reason });
        if self.state == GroupState::CompletingRebalance {
            // Members waiting for their assignment must rejoin instead.
            self.reset_and_propagate_assignment_error(GroupError::RebalanceInProgress, now_ms, fx);
        }
        self.sync_timer = None;
        let initial = self.state == GroupState::Empty;
        if initial {
            let delay = cfg.initial_rebalance_delay_ms.max(0) as i64;
            let remaining = (self.rebalance_timeout_ms() as i64 - delay).max(0);
            self.join_timer = Some(JoinTimer {
                deadline_ms: now_ms + delay,
                initial: Some((delay, remaining)),
            });
        }
        self.transition(GroupState::PreparingRebalance, now_ms);
        if !initial {
            if self.has_all_members_joined() {
                self.complete_join(cfg, now_ms, fx);
            } else {
                self.join_timer = Some(JoinTimer {
                    deadline_ms: now_ms + self.rebalance_timeout_ms() as i64,
                    initial: None,
                });
            }
        }
    }

    fn complete_join(&mut self, cfg: &GroupConfig, now_ms: i64, fx: &mut Effects) {
        let _ = cfg;
        self.join_timer = None;
        // Dynamic members that did not rejoin in time are gone; static members keep their
        // place (KIP-345) until their session expires.
        let not_rejoined: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.is_awaiting_join() && !m.is_static())
            .map(|m| m.member_id.clone())
            .collect();
        for id in not_rejoined {
            fx.removed(&id, "did not rejoin within the rebalance timeout");
            self.remove(&id, fx);
        }
        if self.state == GroupState::Dead {
            return;
        }
        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            // Nobody rejoined: wait another rebalance timeout for the session timeouts to
            // remove the silent members.
            self.join_timer = Some(JoinTimer {
                deadline_ms: now_ms + self.rebalance_timeout_ms() as i64,
                initial: None,
            });
            return;
        }
        self.init_next_generation(now_ms);
        if self.state == GroupState::Empty {
            fx.events.push(GroupEvent::Emptied {
                generation_id: self.generation_id,
            });
            fx.store.push(Store {
                value: self.metadata_value(Some(&HashMap::new())),
                then: AfterStore::Nothing,
            });
            return;
        }
        fx.events.push(GroupEvent::Stabilized {
            generation_id: self.generation_id,
            members: self.members.len(),
        });
        let leader = self.leader_id.clone();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let is_leader = leader.as_deref() == Some(id.as_str());
            let reply = self.current_reply(&id, leader.clone(), is_leader);
            self.reply_join(&id, reply, fx);
            self.reschedule_heartbeat(&id, now_ms);
            if let Some(m) = self.members.get_mut(&id) {
                m.is_new = false;
            }
            self.pending_sync.insert(id);
        }
        self.sync_timer = Some((
            now_ms + self.rebalance_timeout_ms() as i64,
            self.generation_id,
        ));
    }

    /// Keeps the leader if it rejoined, else picks a member that did. False when the group
    /// has no leader or nobody rejoined.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        if self
            .members
            .get(&leader)
            .is_some_and(Member::is_awaiting_join)
        {
            return true;
        }
        match self.members.values().find(|m| m.is_awaiting_join()) {
            Some(m) => {
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(GroupState::Empty, now_ms);
        } else {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(GroupState::CompletingRebalance, now_ms);
        }
        self.pending_sync.clear();
    }

    // -- SyncGroup --

    /// Handles a SyncGroup; the answer comes as a sync reply for `waiter` (the leader's
    /// assignment is first stored: see [`stored`](Self::stored)).
    pub fn sync(&mut self, req: SyncRequest, waiter: WaiterId, now_ms: i64) -> Effects {
        let mut fx = Effects::default();
        if let Err(e) = self.validate_sync(&req) {
            fx.sync_replies.push((waiter, SyncReply::error(e)));
            return fx;
        }
        let member_id = req.member_id.as_str();
        match self.state {
            GroupState::Empty => fx
                .sync_replies
                .push((waiter, SyncReply::error(GroupError::UnknownMemberId))),
            GroupState::PreparingRebalance => fx
                .sync_replies
                .push((waiter, SyncReply::error(GroupError::RebalanceInProgress))),
            GroupState::CompletingRebalance => {
                let m = self.members.get_mut(member_id).expect("validated member");
                if let Some(old) = m.sync_waiter.replace(waiter) {
                    fx.sync_replies
                        .push((old, SyncReply::error(GroupError::RebalanceInProgress)));
                }
                self.remove_pending_sync(member_id);
                if self.leader_id.as_deref() == Some(member_id) {
                    let mut assignment: HashMap<String, Bytes> = HashMap::new();
                    for (id, a) in req.assignments {
                        if self.members.contains_key(&id) {
                            assignment.insert(id, a);
                        }
                    }
                    for id in self.members.keys() {
                        assignment.entry(id.clone()).or_default();
                    }
                    fx.store.push(Store {
                        value: self.metadata_value(Some(&assignment)),
                        then: AfterStore::Assignment {
                            generation_id: self.generation_id,
                            assignment,
                        },
                    });
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync(member_id);
                let m = &self.members[member_id];
                fx.sync_replies.push((
                    waiter,
                    SyncReply {
                        error: None,
                        protocol_type: self.protocol_type.clone(),
                        protocol_name: self.protocol_name.clone(),
                        assignment: m.assignment.clone(),
                    },
                ));
                self.reschedule_heartbeat(member_id, now_ms);
            }
            GroupState::Dead => unreachable!("validate_sync refuses dead groups"),
        }
        fx
    }

    fn validate_sync(&self, req: &SyncRequest) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        self.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let inconsistent = |asked: &Option<String>, ours: &Option<String>| matches!((asked, ours), (Some(a), Some(o)) if a != o);
        if inconsistent(&req.protocol_type, &self.protocol_type)
            || inconsistent(&req.protocol_name, &self.protocol_name)
        {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        Ok(())
    }

    fn remove_pending_sync(&mut self, member_id: &str) {
        self.pending_sync.remove(member_id);
        let cancel = match self.state {
            GroupState::Dead | GroupState::Empty | GroupState::PreparingRebalance => true,
            GroupState::CompletingRebalance | GroupState::Stable => self.pending_sync.is_empty(),
        };
        if cancel {
            self.sync_timer = None;
        }
    }

    fn propagate_assignment(&mut self, error: Option<GroupError>, now_ms: i64, fx: &mut Effects) {
        let (protocol_type, protocol_name) = match error {
            None => (self.protocol_type.clone(), self.protocol_name.clone()),
            Some(_) => (None, None),
        };
        for m in self.members.values_mut() {
            if let Some(w) = m.sync_waiter.take() {
                fx.sync_replies.push((
                    w,
                    SyncReply {
                        error,
                        protocol_type: protocol_type.clone(),
                        protocol_name: protocol_name.clone(),
                        assignment: m.assignment.clone(),
                    },
                ));
                // A session that expired while the member waited was ignored: start it again.
                m.heartbeat_deadline_ms = Some(now_ms + m.session_timeout_ms as i64);
            }
        }
    }

    fn reset_and_propagate_assignment_error(
        &mut self,
        error: GroupError,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            self.set_assignment(&id, Bytes::new());
        }
        self.propagate_assignment(Some(error), now_ms, fx);
    }

    /// Reports the outcome of writing a [`Store`]'s record.
    pub fn stored(
        &mut self,
        then: AfterStore,
        result: Result<(), GroupError>,
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> Effects {
        let mut fx = Effects::default();
        match then {
            AfterStore::Nothing => {}
            AfterStore::Assignment {
                generation_id,
                assignment,
            } => {
                // A member may have joined meanwhile (in Kafka the write is asynchronous).
                if self.state != GroupState::CompletingRebalance
                    || generation_id != self.generation_id
                {
                    return fx;
                }
                match result {
                    Err(e) => {
                        self.reset_and_propagate_assignment_error(e, now_ms, &mut fx);
                        self.maybe_prepare_rebalance_or_complete_join(
                            "the assignment could not be stored",
                            cfg,
                            now_ms,
                            &mut fx,
                        );
                    }
                    Ok(()) => {
                        for (id, a) in assignment {
                            self.set_assignment(&id, a);
                        }
                        self.propagate_assignment(None, now_ms, &mut fx);
                        self.transition(GroupState::Stable, now_ms);
                    }
                }
            }
            AfterStore::StaticReplace(r) => {
                let r = *r;
                match result {
                    Err(e) => {
                        // Restore the old member id; the newcomer is told to retry.
                        self.update_member(
                            &r.new_member_id,
                            r.old_protocols.clone(),
                            r.old_rebalance_timeout_ms,
                            r.old_session_timeout_ms,
                            None,
                            &mut fx,
                        );
                        self.replace_static_member(
                            &r.group_instance_id,
                            &r.new_member_id,
                            &r.old_member_id,
                            &mut fx,
                        );
                        self.reschedule_heartbeat(&r.old_member_id, now_ms);
                        let mut reply = self.current_reply("", r.current_leader.clone(), false);
                        reply.error = Some(e);
                        fx.join(r.waiter, reply);
                    }
                    Ok(()) if r.supports_skip_assignment => {
                        // JoinGroup v9+: a static leader learns it leads but must not run the
                        // assignor again (the group stays Stable with its assignment).
                        let is_leader = self.leader_id.as_deref() == Some(r.new_member_id.as_str());
                        let mut reply =
                            self.current_reply(&r.new_member_id, self.leader_id.clone(), is_leader);
                        reply.skip_assignment = is_leader;
                        self.reply_join(&r.new_member_id, reply, &mut fx);
                    }
                    Ok(()) => {
                        // Older clients: report the previous leader id, so that a returning
                        // static leader does not think it must assign (its assignment would
                        // not be used by a Stable group).
                        let reply =
                            self.current_reply(&r.new_member_id, r.current_leader.clone(), false);
                        self.reply_join(&r.new_member_id, reply, &mut fx);
                    }
                }
            }
        }
        fx
    }

    // -- Heartbeat --

    pub fn heartbeat(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        self.validate_member(member_id, group_instance_id)?;
        if generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        match self.state {
            GroupState::Empty => Err(GroupError::UnknownMemberId),
            GroupState::PreparingRebalance => {
                self.reschedule_heartbeat(member_id, now_ms);
                Err(GroupError::RebalanceInProgress)
            }
            // Members may heartbeat between their JoinGroup and SyncGroup responses.
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.reschedule_heartbeat(member_id, now_ms);
                Ok(())
            }
            GroupState::Dead => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    // -- LeaveGroup --

    /// Removes members: by member id, or (with an empty member id) administratively by
    /// `group.instance.id`. Returns one result per member, in order.
    pub fn leave(
        &mut self,
        leaving: &[(String, Option<String>)],
        cfg: &GroupConfig,
        now_ms: i64,
    ) -> Result<(Vec<Result<(), GroupError>>, Effects), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let mut fx = Effects::default();
        let mut results = Vec::with_capacity(leaving.len());
        for (member_id, instance) in leaving {
            let r = if member_id.is_empty() {
                match instance
                    .as_deref()
                    .and_then(|i| self.static_members.get(i).cloned())
                {
                    Some(current) => {
                        fx.removed(&current, "removed by its group.instance.id (LeaveGroup)");
                        self.remove(&current, &mut fx);
                        Ok(())
                    }
                    None => Err(GroupError::UnknownMemberId),
                }
            } else if self.pending_join.contains_key(member_id) {
                self.remove(member_id, &mut fx);
                Ok(())
            } else {
                self.validate_member(member_id, instance.as_deref())
                    .map(|()| {
                        fx.removed(member_id, "left the group (LeaveGroup)");
                        self.remove(member_id, &mut fx)
                    })
            };
            results.push(r);
        }
        if results.iter().any(Result::is_ok) {
            match self.state {
                GroupState::Stable | GroupState::CompletingRebalance => self
                    .maybe_prepare_rebalance_or_complete_join("members left", cfg, now_ms, &mut fx),
                GroupState::PreparingRebalance => {
                    self.maybe_complete_join_phase(cfg, now_ms, &mut fx)
                }
                GroupState::Empty | GroupState::Dead => {}
            }
        }
        Ok((results, fx))
    }

    // -- timers --

    /// Fires every deadline at or before `now_ms`: the join phase's end, the SyncGroup
    /// deadline, pending member ids, and member sessions.
    pub fn tick(&mut self, cfg: &GroupConfig, now_ms: i64) -> Effects {
        let mut fx = Effects::default();
        // Each pass fires what is due; a handler may schedule something due at once (an
        // initial delay of 0), which the next pass fires. Bounded: every pass either removes
        // a member or moves a timer forward.
        for _ in 0..1_000 {
            let mut fired = false;
            if let Some(t) = self.join_timer.filter(|t| t.deadline_ms <= now_ms) {
                fired = true;
                self.join_timer = None;
                self.on_join_timer(t, cfg, now_ms, &mut fx);
            }
            if let Some((deadline, generation)) = self.sync_timer.filter(|(d, _)| *d <= now_ms) {
                let _ = deadline;
                fired = true;
                self.sync_timer = None;
                self.expire_pending_sync(generation, cfg, now_ms, &mut fx);
            }
            let pending: Vec<String> = self
                .pending_join
                .iter()
                .filter(|(_, d)| **d <= now_ms)
                .map(|(id, _)| id.clone())
                .collect();
            for id in pending {
                fired = true;
                self.remove(&id, &mut fx);
                if self.state == GroupState::PreparingRebalance && self.has_all_members_joined() {
                    self.complete_join(cfg, now_ms, &mut fx);
                }
            }
            let expired: Vec<String> = self
                .members
                .values()
                .filter(|m| m.heartbeat_deadline_ms.is_some_and(|d| d <= now_ms))
                .map(|m| m.member_id.clone())
                .collect();
            for id in expired {
                fired = true;
                let Some(m) = self.members.get_mut(&id) else {
                    continue;
                };
                m.heartbeat_deadline_ms = None;
                if !m.has_satisfied_heartbeat() {
                    let reason = if m.is_new {
                        "a new member's JoinGroup waited too long"
                    } else {
                        "session timeout expired"
                    };
                    fx.removed(&id, reason);
                    self.remove_member_and_update(&id, cfg, now_ms, &mut fx);
                }
            }
            if !fired {
                break;
            }
        }
        fx
    }

    fn on_join_timer(&mut self, t: JoinTimer, cfg: &GroupConfig, now_ms: i64, fx: &mut Effects) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        match t.initial {
            Some((delay, remaining)) if self.new_member_added && remaining != 0 => {
                self.new_member_added = false;
                let next_delay = (cfg.initial_rebalance_delay_ms as i64).min(remaining);
                let next_remaining = (remaining - delay).max(0);
                self.join_timer = Some(JoinTimer {
                    deadline_ms: now_ms + next_delay,
                    initial: Some((next_delay, next_remaining)),
                });
            }
            _ => self.complete_join(cfg, now_ms, fx),
        }
    }

    fn expire_pending_sync(
        &mut self,
        generation: i32,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        if generation != self.generation_id {
            return;
        }
        if matches!(
            self.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) && !self.pending_sync.is_empty()
        {
            let late: Vec<String> = self.pending_sync.iter().cloned().collect();
            for id in late {
                fx.removed(&id, "did not send SyncGroup within the rebalance timeout");
                self.remove(&id, fx);
            }
            self.prepare_rebalance("members missed the SyncGroup deadline", cfg, now_ms, fx);
        }
    }

    fn remove_member_and_update(
        &mut self,
        member_id: &str,
        cfg: &GroupConfig,
        now_ms: i64,
        fx: &mut Effects,
    ) {
        self.remove(member_id, fx);
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => self
                .maybe_prepare_rebalance_or_complete_join(
                    "a member's session expired",
                    cfg,
                    now_ms,
                    fx,
                ),
            GroupState::PreparingRebalance if self.has_all_members_joined() => {
                self.complete_join(cfg, now_ms, fx)
            }
            _ => {}
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
            self.validate_member(member_id, group_instance_id)?;
            if generation_id != self.generation_id {
                return Err(GroupError::IllegalGeneration);
            }
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
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Bytes::new()
                    },
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
#[path = "state_tests.rs"]
mod tests;
