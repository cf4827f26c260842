//! A share group's membership (KIP-932's ShareGroupHeartbeat), sans-IO: members join with
//! epoch 0 and the topics they subscribe to, heartbeat with the epoch they were given, and
//! leave with -1 or by missing their session timeout. The clock and the topics' metadata are
//! inputs.
//!
//! Assignment: every member gets every *initialized* partition of the topics it subscribes to.
//! Records are shared by acquisition locks in each share-partition, not by partition
//! ownership, so members never wait for a revocation and a topic of one partition is consumed
//! by all members at once (Kafka's `SimpleAssignor` spreads partitions across members when
//! there are more of them; Samsa's choice is in docs/design-notes.md).
//!
//! Initialization (Kafka 4.4's flow): a share-partition is assigned only once the group
//! coordinator has had its state initialized by the share coordinator, at the group epoch of
//! the heartbeat that asked for it (the state epoch) and with no start offset yet (the
//! share-partition leader resolves `share.auto.offset.reset` on first use). A heartbeat's reply
//! names the share-partitions to initialize; the caller initializes them and reports back with
//! [`ShareGroup::initialized`], and the next heartbeat assigns them.
//!
//! Epochs, as Kafka's group coordinator counts them: a new group is at epoch 1, so its first
//! member joins at 2. The group epoch rises (once per heartbeat) when a member joins, leaves or
//! changes its subscription, when a subscribed topic appears, disappears or gains partitions,
//! and when share-partitions become assignable (a round of initialization); each member takes
//! the group epoch at its next heartbeat. A member may still heartbeat with its previous epoch
//! (its answer crossed the heartbeat on the way). The assignment is sent with a join, with a
//! heartbeat that repeats the subscription, and whenever it changed.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// A topic as the metadata image knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicMeta {
    pub id: Uuid,
    pub partitions: i32,
}

/// What a heartbeat carries.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    /// `None`: unchanged since the last heartbeat.
    pub topics: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// Partitions by topic id.
pub type Assignment = Vec<(Uuid, Vec<i32>)>;

/// The heartbeat's answer: the member's epoch and, when it is sent, its whole assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatReply {
    pub member_epoch: i32,
    pub assignment: Option<Assignment>,
    /// Share-partitions whose state must be initialized before they are assigned, at state
    /// epoch `state_epoch` (the caller reports back with [`ShareGroup::initialized`]).
    pub initialize: Assignment,
    pub state_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareGroupError {
    InvalidRequest(&'static str),
    UnknownMemberId(String),
    FencedMemberEpoch(String),
    GroupMaxSizeReached,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub id: String,
    pub epoch: i32,
    /// The epoch before the last one the member was given (a heartbeat with it is accepted).
    pub previous_epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topics: Vec<String>,
    pub deadline_ms: i64,
    /// The assignment last computed for the member.
    assigned: Assignment,
}

/// A subscribed topic as the group last saw it: its metadata and its assignable partitions.
type Seen = Option<(TopicMeta, BTreeSet<i32>)>;

pub struct ShareGroup {
    pub id: String,
    epoch: i32,
    members: BTreeMap<String, Member>,
    /// The subscribed topics as they were at the last epoch: a change bumps the epoch.
    seen: BTreeMap<String, Seen>,
    /// Share-partitions whose state is initialized (assignable), and those being initialized.
    initialized: BTreeMap<Uuid, BTreeSet<i32>>,
    initializing: BTreeMap<Uuid, BTreeSet<i32>>,
}

impl ShareGroup {
    pub fn new(id: &str) -> ShareGroup {
        ShareGroup {
            id: id.to_string(),
            epoch: 1,
            members: BTreeMap::new(),
            seen: BTreeMap::new(),
            initialized: BTreeMap::new(),
            initializing: BTreeMap::new(),
        }
    }

    /// A share group read back from its coordinator's log: no members, at `epoch`. Which of
    /// its share-partitions are initialized is not on record: the next heartbeats initialize
    /// them again (which keeps a state that exists).
    pub fn restored(id: &str, epoch: i32) -> ShareGroup {
        ShareGroup {
            epoch: epoch.max(1),
            ..ShareGroup::new(id)
        }
    }

    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's share group states: Empty or Stable (no rebalance is ever in progress).
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    /// Every topic some member subscribes to.
    pub fn subscribed_topics(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .members
            .values()
            .flat_map(|m| m.topics.iter().cloned())
            .collect();
        t.sort();
        t.dedup();
        t
    }

    /// One heartbeat at `now_ms`. `session_ms` is the group's session timeout, `max_size` its
    /// member limit; `topic` resolves a topic name in the current metadata.
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topic: &dyn Fn(&str) -> Option<TopicMeta>,
        session_ms: i64,
        max_size: usize,
        now_ms: i64,
    ) -> Result<HeartbeatReply, ShareGroupError> {
        if hb.member_id.is_empty() {
            return Err(ShareGroupError::InvalidRequest("MemberId can't be empty."));
        }
        let deadline_ms = now_ms.saturating_add(session_ms);
        let mut changed = false;
        match hb.member_epoch {
            -1 => {
                if self.members.remove(&hb.member_id).is_none() {
                    return Err(self.unknown_member(&hb.member_id));
                }
                self.refresh(topic);
                self.bump();
                return Ok(HeartbeatReply {
                    member_epoch: -1,
                    assignment: None,
                    initialize: Vec::new(),
                    state_epoch: self.epoch,
                });
            }
            0 => {
                let topics = match &hb.topics {
                    Some(t) if !t.is_empty() => t.clone(),
                    _ => {
                        return Err(ShareGroupError::InvalidRequest(
                            "SubscribedTopicNames must be set in first request.",
                        ))
                    }
                };
                match self.members.get_mut(&hb.member_id) {
                    // A member joining again keeps its epoch; only a new subscription counts.
                    Some(m) => {
                        m.deadline_ms = deadline_ms;
                        if hb.rack_id.is_some() {
                            m.rack_id = hb.rack_id.clone();
                        }
                        if topics != m.topics {
                            m.topics = topics;
                            changed = true;
                        }
                    }
                    None => {
                        if self.members.len() >= max_size {
                            return Err(ShareGroupError::GroupMaxSizeReached);
                        }
                        self.members.insert(
                            hb.member_id.clone(),
                            Member {
                                id: hb.member_id.clone(),
                                epoch: 0,
                                previous_epoch: 0,
                                rack_id: hb.rack_id.clone(),
                                client_id: hb.client_id.clone(),
                                client_host: hb.client_host.clone(),
                                topics,
                                deadline_ms,
                                assigned: Vec::new(),
                            },
                        );
                        changed = true;
                    }
                }
            }
            e if e < -1 => {
                return Err(ShareGroupError::InvalidRequest("MemberEpoch is invalid."));
            }
            e => {
                let Some(m) = self.members.get_mut(&hb.member_id) else {
                    return Err(self.unknown_member(&hb.member_id));
                };
                if e > m.epoch {
                    return Err(ShareGroupError::FencedMemberEpoch(format!(
                        "The share group member has a greater member epoch ({e}) than the one \
                         known by the group coordinator ({}). The member must abandon all its \
                         partitions and rejoin.",
                        m.epoch
                    )));
                }
                if e < m.epoch && e != m.previous_epoch {
                    return Err(ShareGroupError::FencedMemberEpoch(format!(
                        "The share group member has a smaller member epoch ({e}) than the one \
                         known by the group coordinator ({}), and it does not match the previous \
                         member epoch ({}). The member must abandon all its partitions and \
                         rejoin.",
                        m.epoch, m.previous_epoch
                    )));
                }
                if let Some(t) = &hb.topics {
                    if t.is_empty() {
                        return Err(ShareGroupError::InvalidRequest(
                            "SubscribedTopicNames must not be empty.",
                        ));
                    }
                }
                m.deadline_ms = deadline_ms;
                if hb.rack_id.is_some() {
                    m.rack_id = hb.rack_id.clone();
                }
                if let Some(t) = &hb.topics {
                    if *t != m.topics {
                        m.topics = t.clone();
                        changed = true;
                    }
                }
            }
        }
        if self.refresh(topic) || changed {
            self.bump();
        }
        let initialize = self.to_initialize(topic);
        let epoch = self.epoch;
        let assignment = {
            let m = &self.members[&hb.member_id];
            self.assignable(&m.topics, topic)
        };
        let m = self
            .members
            .get_mut(&hb.member_id)
            .expect("the member joined or was found above");
        if m.epoch != epoch {
            m.previous_epoch = m.epoch;
            m.epoch = epoch;
        }
        assert!(epoch > 1, "a member's epoch is above a new group's");
        let send = hb.member_epoch == 0 || hb.topics.is_some() || m.assigned != assignment;
        m.assigned = assignment.clone();
        Ok(HeartbeatReply {
            member_epoch: epoch,
            assignment: send.then_some(assignment),
            initialize,
            state_epoch: epoch,
        })
    }

    /// The share-partitions of `topic_id` in `partitions` have their state initialized: they
    /// become assignable at the next heartbeat (`ok`), or are asked for again (`!ok`).
    pub fn initialized(&mut self, topic_id: Uuid, partitions: &[i32], ok: bool) {
        if let Some(set) = self.initializing.get_mut(&topic_id) {
            for p in partitions {
                set.remove(p);
            }
            if set.is_empty() {
                self.initializing.remove(&topic_id);
            }
        }
        if ok {
            self.initialized
                .entry(topic_id)
                .or_default()
                .extend(partitions.iter().copied());
        }
    }

    /// Whether a share-partition `member_id` subscribes to is being initialized (by another
    /// heartbeat).
    pub fn awaits_initialization(
        &self,
        member_id: &str,
        topic: &dyn Fn(&str) -> Option<TopicMeta>,
    ) -> bool {
        self.members.get(member_id).is_some_and(|m| {
            m.topics.iter().filter_map(|t| topic(t)).any(|meta| {
                self.initializing
                    .get(&meta.id)
                    .is_some_and(|p| !p.is_empty())
            })
        })
    }

    /// The topics with share-partitions initialized for the group (their states may be held by
    /// other brokers' share coordinators).
    pub fn initialized_topics(&self) -> Vec<Uuid> {
        self.initialized.keys().copied().collect()
    }

    /// The state of `topic_id`'s share-partitions was deleted (DeleteShareGroupOffsets): they
    /// are initialized again before they are assigned again.
    pub fn forget_initialized(&mut self, topic_id: Uuid) {
        self.initialized.remove(&topic_id);
    }

    /// A member's current assignment (for ShareGroupDescribe).
    pub fn assignment(
        &self,
        member_id: &str,
        topic: &dyn Fn(&str) -> Option<TopicMeta>,
    ) -> Assignment {
        self.members
            .get(member_id)
            .map(|m| self.assignable(&m.topics, topic))
            .unwrap_or_default()
    }

    /// Removes the members whose session expired by `now_ms`; returns their ids.
    pub fn expire(&mut self, now_ms: i64) -> Vec<String> {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.deadline_ms <= now_ms)
            .map(|m| m.id.clone())
            .collect();
        for id in &gone {
            self.members.remove(id);
        }
        if !gone.is_empty() {
            self.bump();
        }
        gone
    }

    fn unknown_member(&self, member_id: &str) -> ShareGroupError {
        ShareGroupError::UnknownMemberId(format!(
            "Member {member_id} is not a member of group {}.",
            self.id
        ))
    }

    /// The initialized partitions of `topics` (those the metadata knows), by topic id.
    fn assignable(
        &self,
        topics: &[String],
        topic: &dyn Fn(&str) -> Option<TopicMeta>,
    ) -> Assignment {
        let mut out: Assignment = topics
            .iter()
            .filter_map(|t| topic(t))
            .map(|m| {
                let ready = self.initialized.get(&m.id);
                let parts = (0..m.partitions)
                    .filter(|p| ready.is_some_and(|r| r.contains(p)))
                    .collect();
                (m.id, parts)
            })
            .filter(|(_, parts): &(Uuid, Vec<i32>)| !parts.is_empty())
            .collect();
        out.sort_by_key(|(id, _)| *id);
        out.dedup_by_key(|(id, _)| *id);
        out
    }

    /// The subscribed share-partitions neither initialized nor being initialized; they are
    /// marked as being initialized.
    fn to_initialize(&mut self, topic: &dyn Fn(&str) -> Option<TopicMeta>) -> Assignment {
        let mut out = Assignment::new();
        for name in self.subscribed_topics() {
            let Some(m) = topic(&name) else {
                continue;
            };
            let done = self.initialized.get(&m.id);
            let pending = self.initializing.get(&m.id);
            let parts: Vec<i32> = (0..m.partitions)
                .filter(|p| !done.is_some_and(|d| d.contains(p)))
                .filter(|p| !pending.is_some_and(|d| d.contains(p)))
                .collect();
            if parts.is_empty() {
                continue;
            }
            self.initializing
                .entry(m.id)
                .or_default()
                .extend(parts.iter().copied());
            out.push((m.id, parts));
        }
        out
    }

    /// Whether a subscribed topic was created, deleted or grew since it was last seen, or
    /// share-partitions of one became assignable (or the subscribed set changed); remembers
    /// what it sees.
    fn refresh(&mut self, topic: &dyn Fn(&str) -> Option<TopicMeta>) -> bool {
        let now: BTreeMap<String, Seen> = self
            .subscribed_topics()
            .into_iter()
            .map(|t| {
                let seen = topic(&t).map(|meta| {
                    let ready = self
                        .initialized
                        .get(&meta.id)
                        .map(|r| r.iter().copied().filter(|p| *p < meta.partitions).collect())
                        .unwrap_or_default();
                    (meta, ready)
                });
                (t, seen)
            })
            .collect();
        if now == self.seen {
            return false;
        }
        self.seen = now;
        true
    }

    fn bump(&mut self) {
        self.epoch = self.epoch.checked_add(1).expect("group epoch overflow");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(member: &str, epoch: i32, topics: Option<&[&str]>) -> Heartbeat {
        Heartbeat {
            member_id: member.into(),
            member_epoch: epoch,
            rack_id: None,
            topics: topics.map(|t| t.iter().map(|s| s.to_string()).collect()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn meta(name: &str) -> Option<TopicMeta> {
        match name {
            "t" => Some(TopicMeta {
                id: id(1),
                partitions: 2,
            }),
            "u" => Some(TopicMeta {
                id: id(2),
                partitions: 1,
            }),
            _ => None,
        }
    }

    /// What the heartbeat handler does with a reply: initializes what it names.
    fn initialize_all(g: &mut ShareGroup, r: &HeartbeatReply) {
        for (topic_id, parts) in &r.initialize {
            g.initialized(*topic_id, parts, true);
        }
    }

    /// Joins `member` to `topics` and runs the round of initialization; returns its epoch.
    fn join(g: &mut ShareGroup, member: &str, topics: &[&str]) -> i32 {
        let r = g
            .heartbeat(hb(member, 0, Some(topics)), &meta, 45_000, 10, 0)
            .unwrap();
        initialize_all(g, &r);
        g.heartbeat(hb(member, r.member_epoch, None), &meta, 45_000, 10, 0)
            .unwrap()
            .member_epoch
    }

    #[test]
    fn a_new_group_is_at_epoch_1_and_assigns_partitions_once_initialized() {
        let mut g = ShareGroup::new("g");
        assert_eq!(g.epoch(), 1);
        let a = g
            .heartbeat(hb("a", 0, Some(&["t"])), &meta, 45_000, 10, 0)
            .unwrap();
        // Kafka 4.4: the join answers epoch 2 with nothing assigned yet, and asks for the
        // share-partitions' state at state epoch 2.
        assert_eq!(a.member_epoch, 2);
        assert_eq!(a.assignment, Some(vec![]));
        assert_eq!(a.initialize, vec![(id(1), vec![0, 1])]);
        assert_eq!(a.state_epoch, 2);
        // Asked once: a heartbeat while they are being initialized does not ask again.
        let again = g.heartbeat(hb("a", 2, None), &meta, 45_000, 10, 0).unwrap();
        assert_eq!(again.initialize, vec![]);
        assert_eq!(again.assignment, None);
        assert!(g.awaits_initialization("a", &meta));
        initialize_all(&mut g, &a);
        assert!(!g.awaits_initialization("a", &meta));
        // The round of initialization is an epoch of its own.
        let a = g.heartbeat(hb("a", 2, None), &meta, 45_000, 10, 1).unwrap();
        assert_eq!(a.member_epoch, 3);
        assert_eq!(a.assignment, Some(vec![(id(1), vec![0, 1])]));
        assert_eq!(g.assignment("a", &meta), vec![(id(1), vec![0, 1])]);
        assert!(g.assignment("nobody", &meta).is_empty());
        // Nothing changed since: no assignment sent.
        let a = g.heartbeat(hb("a", 3, None), &meta, 45_000, 10, 2).unwrap();
        assert_eq!((a.member_epoch, a.assignment), (3, None));
        assert_eq!(g.state(), "Stable");
    }

    #[test]
    fn a_second_member_bumps_the_epoch_and_the_first_keeps_its_assignment_unsent() {
        let mut g = ShareGroup::new("g");
        assert_eq!(join(&mut g, "a", &["t"]), 3);
        let b = g
            .heartbeat(
                hb("b", 0, Some(&["t", "u", "missing"])),
                &meta,
                45_000,
                10,
                0,
            )
            .unwrap();
        assert_eq!(b.member_epoch, 4);
        assert_eq!(b.assignment, Some(vec![(id(1), vec![0, 1])]));
        assert_eq!(b.initialize, vec![(id(2), vec![0])]);
        initialize_all(&mut g, &b);
        let b = g.heartbeat(hb("b", 4, None), &meta, 45_000, 10, 0).unwrap();
        assert_eq!(b.member_epoch, 5);
        assert_eq!(
            b.assignment,
            Some(vec![(id(1), vec![0, 1]), (id(2), vec![0])])
        );
        // a takes the new epoch; its assignment did not change, so it is not sent.
        let a = g.heartbeat(hb("a", 3, None), &meta, 45_000, 10, 1).unwrap();
        assert_eq!((a.member_epoch, a.assignment), (5, None));
    }

    #[test]
    fn a_heartbeat_with_the_previous_epoch_is_accepted_and_older_or_newer_ones_fenced() {
        let mut g = ShareGroup::new("g");
        assert_eq!(join(&mut g, "a", &["t"]), 3);
        let prev = g.heartbeat(hb("a", 2, None), &meta, 45_000, 10, 0).unwrap();
        assert_eq!(prev.member_epoch, 3);
        assert!(matches!(
            g.heartbeat(hb("a", 1, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::FencedMemberEpoch(_))
        ));
        assert!(matches!(
            g.heartbeat(hb("a", 7, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::FencedMemberEpoch(_))
        ));
    }

    #[test]
    fn rejoining_or_repeating_the_subscription_keeps_the_epoch_and_sends_the_assignment() {
        let mut g = ShareGroup::new("g");
        assert_eq!(join(&mut g, "a", &["t"]), 3);
        let same = g
            .heartbeat(hb("a", 3, Some(&["t"])), &meta, 45_000, 10, 1)
            .unwrap();
        assert_eq!(same.member_epoch, 3);
        assert_eq!(same.assignment, Some(vec![(id(1), vec![0, 1])]));
        let rejoin = g
            .heartbeat(hb("a", 0, Some(&["t"])), &meta, 45_000, 10, 2)
            .unwrap();
        assert_eq!(rejoin.member_epoch, 3);
        assert_eq!(rejoin.assignment, Some(vec![(id(1), vec![0, 1])]));
        assert_eq!(g.epoch(), 3);
        // A new subscription is a new epoch.
        let moved = g
            .heartbeat(hb("a", 3, Some(&["u"])), &meta, 45_000, 10, 3)
            .unwrap();
        assert_eq!(moved.member_epoch, 4);
        assert_eq!(moved.assignment, Some(vec![]));
        assert_eq!(moved.initialize, vec![(id(2), vec![0])]);
        assert_eq!(g.subscribed_topics(), vec!["u".to_string()]);
    }

    #[test]
    fn wrong_requests_and_unknown_members_are_refused_and_change_nothing() {
        let mut g = ShareGroup::new("g");
        join(&mut g, "a", &["t"]);
        assert!(matches!(
            g.heartbeat(hb("x", 1, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::UnknownMemberId(_))
        ));
        for bad in [
            hb("", 0, Some(&["t"])),
            hb("b", 0, None),
            hb("b", 0, Some(&[])),
            hb("a", -2, None),
            hb("a", 3, Some(&[])),
        ] {
            assert!(matches!(
                g.heartbeat(bad, &meta, 45_000, 10, 0),
                Err(ShareGroupError::InvalidRequest(_))
            ));
        }
        assert_eq!(
            g.members().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(g.epoch(), 3);
        assert_eq!(
            g.heartbeat(hb("b", 0, Some(&["t"])), &meta, 45_000, 1, 0),
            Err(ShareGroupError::GroupMaxSizeReached)
        );
    }

    #[test]
    fn leaving_and_expiring_remove_members_and_bump_the_epoch() {
        let mut g = ShareGroup::new("g");
        g.heartbeat(hb("a", 0, Some(&["u"])), &meta, 1_000, 10, 0)
            .unwrap();
        g.heartbeat(hb("b", 0, Some(&["u"])), &meta, 1_000, 10, 500)
            .unwrap();
        assert_eq!(g.epoch(), 3);
        let left = g
            .heartbeat(hb("b", -1, None), &meta, 1_000, 10, 600)
            .unwrap();
        assert_eq!(left.member_epoch, -1);
        assert_eq!(g.epoch(), 4);
        assert_eq!(g.expire(999), Vec::<String>::new());
        assert_eq!(g.epoch(), 4, "nothing expired: no new epoch");
        assert_eq!(g.expire(1_000), vec!["a".to_string()]);
        assert_eq!(g.epoch(), 5);
        assert!(g.is_empty());
        assert_eq!(g.state(), "Empty");
        assert!(matches!(
            g.heartbeat(hb("a", -1, None), &meta, 1_000, 10, 0),
            Err(ShareGroupError::UnknownMemberId(_))
        ));
    }

    #[test]
    fn a_topic_that_appears_or_grows_is_initialized_then_assigned() {
        let mut g = ShareGroup::new("g");
        let a = g
            .heartbeat(hb("a", 0, Some(&["v"])), &meta, 45_000, 10, 0)
            .unwrap();
        // A topic that does not exist: nothing to initialize, no extra epoch (Kafka: 2).
        assert_eq!((a.member_epoch, a.initialize.len()), (2, 0));
        assert_eq!(a.assignment, Some(vec![]));
        let parts = std::cell::Cell::new(1);
        let with_v = |name: &str| {
            (name == "v").then(|| TopicMeta {
                id: id(3),
                partitions: parts.get(),
            })
        };
        let a = g
            .heartbeat(hb("a", 2, None), &with_v, 45_000, 10, 1)
            .unwrap();
        assert_eq!(a.member_epoch, 3);
        assert_eq!(a.initialize, vec![(id(3), vec![0])]);
        assert_eq!(a.assignment, None);
        initialize_all(&mut g, &a);
        let a = g
            .heartbeat(hb("a", 3, None), &with_v, 45_000, 10, 1)
            .unwrap();
        assert_eq!(a.member_epoch, 4);
        assert_eq!(a.assignment, Some(vec![(id(3), vec![0])]));
        parts.set(3);
        let a = g
            .heartbeat(hb("a", 4, None), &with_v, 45_000, 10, 2)
            .unwrap();
        assert_eq!(a.member_epoch, 5);
        assert_eq!(a.initialize, vec![(id(3), vec![1, 2])]);
        assert_eq!(
            a.assignment, None,
            "the new partitions wait for their state"
        );
    }

    #[test]
    fn failed_or_forgotten_initializations_are_asked_for_again() {
        let mut g = ShareGroup::new("g");
        let a = g
            .heartbeat(hb("a", 0, Some(&["u"])), &meta, 45_000, 10, 0)
            .unwrap();
        assert_eq!(a.initialize, vec![(id(2), vec![0])]);
        g.initialized(id(2), &[0], false);
        let a = g.heartbeat(hb("a", 2, None), &meta, 45_000, 10, 0).unwrap();
        assert_eq!(
            (a.member_epoch, a.initialize.clone()),
            (2, vec![(id(2), vec![0])])
        );
        g.initialized(id(2), &[0], true);
        let a = g.heartbeat(hb("a", 2, None), &meta, 45_000, 10, 0).unwrap();
        assert_eq!(a.assignment, Some(vec![(id(2), vec![0])]));
        // DeleteShareGroupOffsets dropped the state: initialized again before it is assigned.
        g.forget_initialized(id(2));
        let a = g.heartbeat(hb("a", 3, None), &meta, 45_000, 10, 0).unwrap();
        assert_eq!(a.initialize, vec![(id(2), vec![0])]);
        assert_eq!(a.assignment, Some(vec![]));
    }
}
