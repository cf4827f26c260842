//! The classic group protocol, driven without sockets or clocks: each test is one rule of
//! Kafka's group coordinator, with the error code it returns.

use std::collections::HashSet;

use super::*;

const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 20_000;

fn cfg() -> GroupConfig {
    GroupConfig {
        min_session_timeout_ms: 1_000,
        max_session_timeout_ms: 60_000,
        initial_rebalance_delay_ms: 0,
        max_size: 10,
        new_member_join_timeout_ms: 300_000,
    }
}

/// A consumer-protocol subscription (version 0) to `topics`.
fn subscription(topics: &[&str]) -> Bytes {
    let mut b = Vec::new();
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in topics {
        b.extend_from_slice(&(t.len() as i16).to_be_bytes());
        b.extend_from_slice(t.as_bytes());
    }
    b.extend_from_slice(&(-1i32).to_be_bytes());
    Bytes::from(b)
}

fn range(topics: &[&str]) -> Vec<Protocol> {
    vec![Protocol {
        name: "range".into(),
        metadata: subscription(topics),
    }]
}

/// A test driver: the group, the clock, and every reply ever sent (to check that each parked
/// request is answered exactly once).
struct T {
    g: Group,
    cfg: GroupConfig,
    now: i64,
    next_waiter: WaiterId,
    joins: HashMap<WaiterId, JoinReply>,
    syncs: HashMap<WaiterId, SyncReply>,
    stores: Vec<Store>,
    events: Vec<GroupEvent>,
    /// Store failures to inject into the next records written.
    fail_stores: Option<GroupError>,
}

impl T {
    fn new(cfg: GroupConfig) -> T {
        T {
            g: Group::new("g", 0),
            cfg,
            now: 0,
            next_waiter: 1,
            joins: HashMap::new(),
            syncs: HashMap::new(),
            stores: Vec::new(),
            events: Vec::new(),
            fail_stores: None,
        }
    }

    /// Takes the effects as the coordinator would: records "stored", replies collected.
    fn apply(&mut self, mut fx: Effects) {
        loop {
            for (w, r) in fx.join_replies.drain(..) {
                assert!(
                    self.joins.insert(w, r).is_none(),
                    "join waiter {w} answered twice"
                );
            }
            for (w, r) in fx.sync_replies.drain(..) {
                assert!(
                    self.syncs.insert(w, r).is_none(),
                    "sync waiter {w} answered twice"
                );
            }
            self.events.append(&mut fx.events);
            let stores = std::mem::take(&mut fx.store);
            if stores.is_empty() {
                // As the coordinator does: deadlines already due fire at once.
                match self.g.tick_if_due(&self.cfg, self.now) {
                    Some(more) => {
                        fx = more;
                        continue;
                    }
                    None => break,
                }
            }
            for s in stores {
                self.stores.push(s.clone());
                let result = match self.fail_stores {
                    Some(e) => Err(e),
                    None => Ok(()),
                };
                fx.merge(self.g.stored(s.then, result, &self.cfg, self.now));
            }
        }
        self.g.check_invariants();
    }

    fn waiter(&mut self) -> WaiterId {
        self.next_waiter += 1;
        self.next_waiter
    }

    fn join_with(&mut self, req: JoinRequest) -> WaiterId {
        let w = self.waiter();
        let fx = self.g.join(req, w, &self.cfg, self.now);
        self.apply(fx);
        w
    }

    fn join(&mut self, member_id: &str, new_id: &str) -> WaiterId {
        self.join_with(req(member_id, new_id))
    }

    fn sync(&mut self, member_id: &str, generation: i32, assignments: &[(&str, &str)]) -> WaiterId {
        let w = self.waiter();
        let fx = self.g.sync(
            SyncRequest {
                member_id: member_id.into(),
                group_instance_id: None,
                generation_id: generation,
                protocol_type: Some("consumer".into()),
                protocol_name: Some("range".into()),
                assignments: assignments
                    .iter()
                    .map(|(m, a)| (m.to_string(), Bytes::from(a.to_string())))
                    .collect(),
            },
            w,
            self.now,
        );
        self.apply(fx);
        w
    }

    fn advance_to(&mut self, now: i64) {
        self.now = now;
        let fx = self.g.tick(&self.cfg, now);
        self.apply(fx);
    }

    fn joined(&self, w: WaiterId) -> &JoinReply {
        self.joins
            .get(&w)
            .unwrap_or_else(|| panic!("join {w} not answered"))
    }

    fn synced(&self, w: WaiterId) -> &SyncReply {
        self.syncs
            .get(&w)
            .unwrap_or_else(|| panic!("sync {w} not answered"))
    }

    fn heartbeat(&mut self, member_id: &str, generation: i32) -> Result<(), GroupError> {
        let r = self.g.heartbeat(member_id, None, generation, self.now);
        self.g.check_invariants();
        r
    }

    /// Two members, m1 (leader) and m2, joined to generation 2 and waiting for the
    /// assignment. Returns their JoinGroup waiters.
    fn completing_pair(&mut self) -> (WaiterId, WaiterId) {
        let w1 = self.join("", "m1");
        assert_eq!(self.joined(w1).generation_id, 1);
        let w2 = self.join("", "m2");
        // m1 learns of the rebalance from its heartbeat and rejoins.
        assert_eq!(
            self.heartbeat("m1", 1),
            Err(GroupError::RebalanceInProgress)
        );
        let w1 = self.join("m1", "");
        assert_eq!(self.joined(w1).generation_id, 2);
        assert_eq!(self.joined(w2).generation_id, 2);
        assert_eq!(self.g.state(), GroupState::CompletingRebalance);
        (w1, w2)
    }

    /// Static members a-1 (instance "a", leader) and b-1 ("b") in generation 2, waiting for
    /// the assignment.
    fn completing_static_pair(&mut self) {
        self.join_with(static_req("", "a", "a-1"));
        self.join_with(static_req("", "b", "b-1"));
        self.join_with(static_req("a-1", "a", ""));
        assert_eq!(self.g.state(), GroupState::CompletingRebalance);
    }

    /// Two members, m1 (leader) and m2, Stable in generation 2 with an assignment each.
    fn stable_pair(&mut self) {
        self.completing_pair();
        let s2 = self.sync("m2", 2, &[]);
        let s1 = self.sync("m1", 2, &[("m1", "a1"), ("m2", "a2")]);
        assert_eq!(self.synced(s1).assignment, Bytes::from("a1"));
        assert_eq!(self.synced(s2).assignment, Bytes::from("a2"));
        assert_eq!(self.g.state(), GroupState::Stable);
    }
}

fn req(member_id: &str, new_id: &str) -> JoinRequest {
    JoinRequest {
        member_id: member_id.into(),
        group_instance_id: None,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        protocol_type: "consumer".into(),
        protocols: range(&["t"]),
        require_known_member_id: false,
        supports_skip_assignment: false,
        new_member_id: new_id.into(),
    }
}

fn static_req(member_id: &str, instance: &str, new_id: &str) -> JoinRequest {
    JoinRequest {
        group_instance_id: Some(instance.into()),
        ..req(member_id, new_id)
    }
}

// ---- JoinGroup ----

#[test]
fn a_first_member_waits_out_the_initial_delay_then_leads_generation_1() {
    let mut t = T::new(GroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..cfg()
    });
    let w = t.join("", "m1");
    assert!(t.joins.is_empty(), "parked until the initial delay ends");
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    assert_eq!(t.g.next_deadline(), Some(3_000));
    t.advance_to(2_999);
    assert!(t.joins.is_empty());
    t.advance_to(3_000);
    let r = t.joined(w);
    assert_eq!(r.error, None);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.member_id, "m1");
    assert_eq!(r.leader, "m1");
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(
        r.members.len(),
        1,
        "the leader gets every member's metadata"
    );
    assert_eq!(r.members[0].metadata, subscription(&["t"]));
    assert_eq!(t.g.state(), GroupState::CompletingRebalance);
}

#[test]
fn the_initial_delay_extends_while_members_keep_arriving_up_to_the_rebalance_timeout() {
    // KIP-134: delay 3 s, rebalance timeout 10 s.
    let mut t = T::new(GroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..cfg()
    });
    let short = |id: &str| JoinRequest {
        rebalance_timeout_ms: 10_000,
        ..req("", id)
    };
    let w1 = t.join_with(short("m1"));
    t.now = 2_000;
    let w2 = t.join_with(short("m2"));
    t.advance_to(3_000);
    assert!(t.joins.is_empty(), "a member arrived: wait another delay");
    assert_eq!(t.g.next_deadline(), Some(6_000));
    t.now = 5_000;
    let w3 = t.join_with(short("m3"));
    t.advance_to(6_000);
    assert!(t.joins.is_empty());
    // Only 1 s of the rebalance timeout was left after the second extension... and the
    // third delay is capped by it: 3 s min 4 s remaining.
    assert_eq!(t.g.next_deadline(), Some(9_000));
    t.advance_to(9_000);
    for w in [w1, w2, w3] {
        assert_eq!(t.joined(w).generation_id, 1);
    }
    assert_eq!(t.g.size(), 3);
}

#[test]
fn a_new_dynamic_member_first_gets_its_id_with_member_id_required() {
    let mut t = T::new(cfg());
    let w = t.join_with(JoinRequest {
        require_known_member_id: true,
        ..req("", "client-1234")
    });
    let r = t.joined(w).clone();
    assert_eq!(r.error, Some(GroupError::MemberIdRequired));
    assert_eq!(r.member_id, "client-1234");
    assert_eq!(t.g.state(), GroupState::Empty, "not a member yet");
    assert!(t.g.is_pending_member("client-1234"));
    let w = t.join_with(JoinRequest {
        require_known_member_id: true,
        ..req("client-1234", "unused")
    });
    assert_eq!(t.joined(w).error, None);
    assert_eq!(t.joined(w).member_id, "client-1234");
    assert!(!t.g.is_pending_member("client-1234"));
}

#[test]
fn pending_member_ids_are_bounded() {
    let mut t = T::new(cfg());
    let hand_out = |t: &mut T, id: &str| {
        let r = JoinRequest {
            require_known_member_id: true,
            ..req("", id)
        };
        let w = t.waiter();
        // Straight to the group: a bulk of ids, without the driver's O(members) checks.
        let fx = t.g.join(r, w, &t.cfg, t.now);
        fx.join_replies[0].1.error
    };
    for i in 0..PENDING_MEMBERS_PER_GROUP_MAX {
        assert_eq!(
            hand_out(&mut t, &format!("p{i}")),
            Some(GroupError::MemberIdRequired)
        );
    }
    assert_eq!(
        hand_out(&mut t, "one-too-many"),
        Some(GroupError::CoordinatorNotAvailable)
    );
    t.g.check_invariants();
    // Once they expire there is room again.
    t.advance_to(SESSION_MS as i64);
    assert_eq!(t.g.pending_members(), 0);
    assert_eq!(
        hand_out(&mut t, "later"),
        Some(GroupError::MemberIdRequired)
    );
}

#[test]
fn a_pending_member_id_expires_after_the_session_timeout() {
    let mut t = T::new(cfg());
    t.join_with(JoinRequest {
        require_known_member_id: true,
        ..req("", "p1")
    });
    t.advance_to(SESSION_MS as i64);
    assert!(!t.g.is_pending_member("p1"));
    let w = t.join("p1", "");
    assert_eq!(t.joined(w).error, Some(GroupError::UnknownMemberId));
}

#[test]
fn join_errors_invalid_session_timeout_unknown_member_and_inconsistent_protocols() {
    let mut t = T::new(cfg());
    let w = t.join_with(JoinRequest {
        session_timeout_ms: 500,
        ..req("", "m1")
    });
    assert_eq!(t.joined(w).error, Some(GroupError::InvalidSessionTimeout));
    let w = t.join_with(JoinRequest {
        session_timeout_ms: 60_001,
        ..req("", "m1")
    });
    assert_eq!(t.joined(w).error, Some(GroupError::InvalidSessionTimeout));
    let w = t.join("ghost", "");
    assert_eq!(t.joined(w).error, Some(GroupError::UnknownMemberId));
    // An empty protocol type or list is refused by an empty group.
    let w = t.join_with(JoinRequest {
        protocol_type: String::new(),
        ..req("", "m1")
    });
    assert_eq!(
        t.joined(w).error,
        Some(GroupError::InconsistentGroupProtocol)
    );
    t.join("", "m1");
    let w = t.join_with(JoinRequest {
        protocol_type: "connect".into(),
        ..req("", "m2")
    });
    assert_eq!(
        t.joined(w).error,
        Some(GroupError::InconsistentGroupProtocol)
    );
    let w = t.join_with(JoinRequest {
        protocols: vec![Protocol {
            name: "roundrobin".into(),
            metadata: Bytes::new(),
        }],
        ..req("", "m2")
    });
    assert_eq!(
        t.joined(w).error,
        Some(GroupError::InconsistentGroupProtocol)
    );
}

#[test]
fn the_protocol_is_chosen_by_vote_among_those_every_member_supports() {
    let mut t = T::new(GroupConfig {
        initial_rebalance_delay_ms: 1_000,
        ..cfg()
    });
    let p = |names: &[&str]| {
        names
            .iter()
            .map(|n| Protocol {
                name: n.to_string(),
                metadata: Bytes::from(n.to_string()),
            })
            .collect::<Vec<_>>()
    };
    t.join_with(JoinRequest {
        protocols: p(&["sticky", "roundrobin", "range"]),
        ..req("", "m1")
    });
    t.join_with(JoinRequest {
        protocols: p(&["roundrobin", "range"]),
        ..req("", "m2")
    });
    let w = t.join_with(JoinRequest {
        protocols: p(&["range", "roundrobin"]),
        ..req("", "m3")
    });
    t.advance_to(1_000);
    // Members kept arriving during the first delay: it is extended once.
    t.advance_to(2_000);
    // sticky is not supported by all; roundrobin wins 2 votes to 1.
    assert_eq!(t.joined(w).protocol_name.as_deref(), Some("roundrobin"));
    assert_eq!(t.g.protocol_name(), Some("roundrobin"));
}

#[test]
fn group_max_size_refuses_more_members() {
    let mut t = T::new(GroupConfig {
        max_size: 2,
        ..cfg()
    });
    t.stable_pair();
    let w = t.join("", "m3");
    assert_eq!(t.joined(w).error, Some(GroupError::GroupMaxSizeReached));
    assert_eq!(t.joined(w).member_id, "");
    assert_eq!(t.g.size(), 2);
    assert_eq!(
        t.g.state(),
        GroupState::Stable,
        "a refused member starts no rebalance"
    );
}

#[test]
fn a_follower_that_lost_its_join_response_gets_it_again() {
    let mut t = T::new(cfg());
    let (w1, w2) = t.completing_pair();
    let again = t.join("m2", "");
    assert_eq!(t.joined(again), t.joined(w2));
    // The leader asking again gets the member list again.
    let again = t.join("m1", "");
    assert_eq!(t.joined(again).members.len(), 2);
    assert_eq!(t.joined(again).generation_id, t.joined(w1).generation_id);
    assert_eq!(
        t.g.state(),
        GroupState::CompletingRebalance,
        "no new rebalance"
    );
}

#[test]
fn in_a_stable_group_a_follower_rejoining_unchanged_gets_the_current_generation() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let w = t.join("m2", "");
    let r = t.joined(w);
    assert_eq!((r.error, r.generation_id), (None, 2));
    assert!(r.members.is_empty());
    assert_eq!(r.leader, "m1");
    assert_eq!(t.g.state(), GroupState::Stable);
}

#[test]
fn the_leader_rejoining_or_a_changed_subscription_starts_a_rebalance() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let w1 = t.join("m1", "");
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    assert!(!t.joins.contains_key(&w1));
    let w2 = t.join_with(JoinRequest {
        protocols: range(&["t", "u"]),
        ..req("m2", "")
    });
    assert_eq!(t.joined(w1).generation_id, 3);
    assert_eq!(t.joined(w2).generation_id, 3);
    assert_eq!(t.joined(w1).members.len(), 2);

    // A changed subscription while members wait for their assignment: they must rejoin.
    let s2 = t.sync("m2", 3, &[]);
    t.join_with(JoinRequest {
        protocols: range(&["t"]),
        ..req("m2", "")
    });
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    assert_eq!(t.synced(s2).error, Some(GroupError::RebalanceInProgress));
}

#[test]
fn a_superseded_join_request_is_answered_with_rebalance_in_progress() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let first = t.join("m1", "");
    let second = t.join("m1", "");
    assert_eq!(t.joined(first).error, Some(GroupError::RebalanceInProgress));
    assert!(!t.joins.contains_key(&second));
    t.join("m2", "");
    assert_eq!(t.joined(second).generation_id, 3);
}

// ---- SyncGroup ----

#[test]
fn the_assignment_is_stored_before_any_member_receives_it() {
    let mut t = T::new(cfg());
    t.completing_pair();
    let s2 = t.sync("m2", 2, &[]);
    assert!(t.syncs.is_empty(), "the follower waits for the leader");
    assert!(t.stores.is_empty());
    let s1 = t.sync("m1", 2, &[("m1", "a1"), ("m2", "a2"), ("stranger", "x")]);
    let stored = t.stores.last().expect("the assignment was written");
    assert_eq!(stored.value.generation, 2);
    assert_eq!(stored.value.leader.as_deref(), Some("m1"));
    assert_eq!(stored.value.protocol.as_deref(), Some("range"));
    let assigned: Vec<(&str, &[u8])> = stored
        .value
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), &m.assignment[..]))
        .collect();
    assert_eq!(assigned, vec![("m1", &b"a1"[..]), ("m2", &b"a2"[..])]);
    assert_eq!(t.synced(s1).assignment, Bytes::from("a1"));
    assert_eq!(t.synced(s2).assignment, Bytes::from("a2"));
    assert_eq!(t.synced(s2).protocol_name.as_deref(), Some("range"));
    assert_eq!(t.g.state(), GroupState::Stable);
    // Late syncs in Stable get the stored assignment.
    let again = t.sync("m2", 2, &[]);
    assert_eq!(t.synced(again).assignment, Bytes::from("a2"));
}

#[test]
fn members_the_leader_left_out_get_an_empty_assignment() {
    let mut t = T::new(cfg());
    t.completing_pair();
    let s2 = t.sync("m2", 2, &[]);
    t.sync("m1", 2, &[("m1", "a1")]);
    assert_eq!(t.synced(s2).error, None);
    assert!(t.synced(s2).assignment.is_empty());
}

#[test]
fn sync_errors_unknown_member_illegal_generation_inconsistent_protocol_rebalancing() {
    let mut t = T::new(cfg());
    let w = t.sync("m1", 1, &[]);
    assert_eq!(t.synced(w).error, Some(GroupError::UnknownMemberId));
    t.stable_pair();
    let w = t.sync("m1", 1, &[]);
    assert_eq!(t.synced(w).error, Some(GroupError::IllegalGeneration));
    let w = t.waiter();
    let fx = t.g.sync(
        SyncRequest {
            member_id: "m1".into(),
            group_instance_id: None,
            generation_id: 2,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("roundrobin".into()),
            assignments: vec![],
        },
        w,
        t.now,
    );
    t.apply(fx);
    assert_eq!(
        t.synced(w).error,
        Some(GroupError::InconsistentGroupProtocol)
    );
    t.join("m1", "");
    let w = t.sync("m2", 2, &[]);
    assert_eq!(t.synced(w).error, Some(GroupError::RebalanceInProgress));
}

#[test]
fn a_failed_assignment_write_fails_the_syncs_and_starts_a_rebalance() {
    let mut t = T::new(cfg());
    t.completing_pair();
    let s2 = t.sync("m2", 2, &[]);
    t.fail_stores = Some(GroupError::NotCoordinator);
    let s1 = t.sync("m1", 2, &[("m1", "a1"), ("m2", "a2")]);
    assert_eq!(t.synced(s1).error, Some(GroupError::NotCoordinator));
    assert_eq!(t.synced(s2).error, Some(GroupError::NotCoordinator));
    assert!(t.synced(s2).assignment.is_empty());
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
}

#[test]
fn members_that_miss_the_sync_deadline_are_removed() {
    let mut t = T::new(cfg());
    t.completing_pair();
    // m2 syncs; the leader m1 never does. Both keep their sessions with heartbeats.
    let s2 = t.sync("m2", 2, &[]);
    for at in (5_000..REBALANCE_MS as i64).step_by(5_000) {
        t.now = at;
        t.heartbeat("m1", 2).unwrap();
        t.heartbeat("m2", 2).unwrap();
        t.advance_to(at);
    }
    assert!(!t.syncs.contains_key(&s2));
    t.advance_to(REBALANCE_MS as i64);
    assert!(
        t.g.member("m1").is_none(),
        "the leader missed the sync deadline"
    );
    assert_eq!(t.synced(s2).error, Some(GroupError::RebalanceInProgress));
    assert!(t.events.contains(&GroupEvent::MemberRemoved {
        member_id: "m1".into(),
        reason: "did not send SyncGroup within the rebalance timeout",
    }));
}

// ---- Heartbeat and sessions ----

#[test]
fn heartbeat_errors_follow_the_group_state() {
    let mut t = T::new(cfg());
    assert_eq!(t.heartbeat("m1", 0), Err(GroupError::UnknownMemberId));
    t.join("", "m1");
    t.join("", "m2");
    assert_eq!(t.heartbeat("m1", 0), Err(GroupError::IllegalGeneration));
    assert_eq!(t.heartbeat("m1", 1), Err(GroupError::RebalanceInProgress));
    t.join("m1", "");
    assert_eq!(t.g.state(), GroupState::CompletingRebalance);
    assert_eq!(
        t.heartbeat("m2", 2),
        Ok(()),
        "heartbeats between JoinGroup and SyncGroup"
    );
    assert_eq!(t.heartbeat("ghost", 2), Err(GroupError::UnknownMemberId));
    t.g.mark_dead(t.now);
    assert_eq!(
        t.heartbeat("m1", 2),
        Err(GroupError::CoordinatorNotAvailable)
    );
}

#[test]
fn a_silent_member_is_evicted_after_its_session_timeout_and_the_rest_rebalance() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let start = t.now;
    // m1 heartbeats every 3 s; m2 is silent.
    for at in [3_000, 6_000, 9_000] {
        t.now = start + at;
        assert_eq!(t.heartbeat("m1", 2), Ok(()));
        t.advance_to(start + at);
    }
    t.advance_to(start + SESSION_MS as i64 - 1);
    assert!(t.g.member("m2").is_some(), "within its session, m2 stays");
    t.advance_to(start + SESSION_MS as i64);
    assert!(t.g.member("m2").is_none());
    assert!(t.events.contains(&GroupEvent::MemberRemoved {
        member_id: "m2".into(),
        reason: "session timeout expired",
    }));
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    assert_eq!(t.heartbeat("m1", 2), Err(GroupError::RebalanceInProgress));
    // The survivor rejoins and the generation completes at once: everyone is back.
    let w = t.join("m1", "");
    assert_eq!(t.joined(w).generation_id, 3);
    assert_eq!(t.joined(w).members.len(), 1);
}

#[test]
fn dynamic_members_that_do_not_rejoin_in_the_rebalance_timeout_are_dropped() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let start = t.now;
    let w1 = t.join("m1", "");
    // m2 keeps heartbeating (so its session holds) but never rejoins.
    for at in (start + 5_000..start + REBALANCE_MS as i64).step_by(5_000) {
        t.now = at;
        assert_eq!(t.heartbeat("m2", 2), Err(GroupError::RebalanceInProgress));
        t.advance_to(at);
    }
    assert!(!t.joins.contains_key(&w1));
    t.advance_to(start + REBALANCE_MS as i64);
    assert_eq!(t.joined(w1).generation_id, 3);
    assert!(t.g.member("m2").is_none());
    assert_eq!(t.heartbeat("m2", 3), Err(GroupError::UnknownMemberId));
}

#[test]
fn static_members_keep_their_place_through_a_rebalance_they_miss() {
    let mut t = T::new(cfg());
    t.completing_static_pair();
    t.sync("a-1", 2, &[]);
    t.sync("b-1", 2, &[]);
    assert_eq!(t.g.state(), GroupState::Stable);
    // The leader rejoins; b does not, but heartbeats: at the rebalance timeout it stays.
    let a = t.join_with(static_req("a-1", "a", ""));
    for at in (5_000..REBALANCE_MS as i64).step_by(5_000) {
        t.now = at;
        assert_eq!(
            t.g.heartbeat("b-1", Some("b"), 2, at),
            Err(GroupError::RebalanceInProgress)
        );
        t.advance_to(at);
    }
    t.advance_to(REBALANCE_MS as i64);
    assert_eq!(t.joined(a).generation_id, 3);
    assert_eq!(
        t.joined(a).members.len(),
        2,
        "the absent static member is still listed"
    );
    assert!(t.g.member("b-1").is_some());
}

#[test]
fn a_new_member_whose_join_waits_too_long_is_dropped() {
    let mut t = T::new(cfg());
    t.stable_pair();
    // m3 joins; m1 and m2 never rejoin nor heartbeat: their sessions end first, then the
    // join phase completes with m3 alone.
    let w3 = t.join("", "m3");
    t.advance_to(SESSION_MS as i64);
    assert_eq!(t.joined(w3).generation_id, 3);
    assert_eq!(t.g.size(), 1);
    // A new member that never completes a join phase is dropped after the join timeout.
    let mut t = T::new(GroupConfig {
        new_member_join_timeout_ms: 5_000,
        ..cfg()
    });
    t.stable_pair();
    let w3 = t.join("", "m3");
    for at in (1_000..=5_000).step_by(1_000) {
        t.now = at;
        let _ = t.heartbeat("m1", 2);
        let _ = t.heartbeat("m2", 2);
        t.advance_to(at);
    }
    assert_eq!(t.joined(w3).error, Some(GroupError::UnknownMemberId));
    assert!(t.g.member("m3").is_none());
}

// ---- LeaveGroup ----

#[test]
fn leaving_members_trigger_a_rebalance_and_the_last_one_empties_the_group() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let (results, fx) =
        t.g.leave(
            &[("m1".into(), None), ("ghost".into(), None)],
            &t.cfg,
            t.now,
        )
        .unwrap();
    t.apply(fx);
    assert_eq!(results, vec![Ok(()), Err(GroupError::UnknownMemberId)]);
    assert_eq!(
        t.g.leader_id(),
        Some("m2"),
        "leadership moves to a remaining member"
    );
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    let (results, fx) = t.g.leave(&[("m2".into(), None)], &t.cfg, t.now).unwrap();
    t.apply(fx);
    assert_eq!(results, vec![Ok(())]);
    assert_eq!(t.g.state(), GroupState::Empty);
    assert_eq!(t.g.generation_id(), 3);
    let last = t.stores.last().unwrap();
    assert!(
        last.value.members.is_empty(),
        "the empty generation is written"
    );
    assert_eq!(last.value.generation, 3);
}

#[test]
fn leave_by_instance_id_removes_a_static_member_and_a_stale_member_id_is_fenced() {
    let mut t = T::new(cfg());
    t.join_with(static_req("", "a", "a-1"));
    let (results, fx) =
        t.g.leave(
            &[
                ("old-id".into(), Some("a".into())),
                (String::new(), Some("nobody".into())),
            ],
            &t.cfg,
            t.now,
        )
        .unwrap();
    t.apply(fx);
    assert_eq!(
        results,
        vec![
            Err(GroupError::FencedInstanceId),
            Err(GroupError::UnknownMemberId)
        ]
    );
    let (results, fx) =
        t.g.leave(&[(String::new(), Some("a".into()))], &t.cfg, t.now)
            .unwrap();
    t.apply(fx);
    assert_eq!(results, vec![Ok(())]);
    assert_eq!(t.g.size(), 0);
    t.g.mark_dead(t.now);
    assert_eq!(
        t.g.leave(&[("x".into(), None)], &t.cfg, t.now).err(),
        Some(GroupError::CoordinatorNotAvailable)
    );
}

#[test]
fn a_removed_member_with_a_parked_request_is_answered_unknown_member_id() {
    let mut t = T::new(cfg());
    t.completing_static_pair();
    let s = t.waiter();
    let fx = t.g.sync(
        SyncRequest {
            member_id: "b-1".into(),
            group_instance_id: Some("b".into()),
            generation_id: 2,
            protocol_type: None,
            protocol_name: None,
            assignments: vec![],
        },
        s,
        t.now,
    );
    t.apply(fx);
    let (_, fx) =
        t.g.leave(&[(String::new(), Some("b".into()))], &t.cfg, t.now)
            .unwrap();
    t.apply(fx);
    assert_eq!(t.synced(s).error, Some(GroupError::UnknownMemberId));
}

// ---- static membership (KIP-345) ----

#[test]
fn a_static_member_that_restarts_gets_its_assignment_back_without_a_rebalance() {
    let mut t = T::new(cfg());
    t.completing_static_pair();
    t.sync("a-1", 2, &[("a-1", "A"), ("b-1", "B")]);
    t.sync("b-1", 2, &[]);
    assert_eq!(t.g.state(), GroupState::Stable);
    let stores_before = t.stores.len();

    // b restarts: a new process, same group.instance.id, no member id.
    let w = t.join_with(static_req("", "b", "b-2"));
    assert_eq!(
        t.stores.len(),
        stores_before + 1,
        "the new member id is persisted"
    );
    let r = t.joined(w).clone();
    assert_eq!(r.error, None);
    assert_eq!(r.member_id, "b-2");
    assert_eq!(r.generation_id, 2, "no new generation");
    assert_eq!(r.leader, "a-1");
    assert_eq!(t.g.state(), GroupState::Stable);
    let s = t.sync("b-2", 2, &[]);
    assert_eq!(t.synced(s).assignment, Bytes::from("B"));
    // The old incarnation is fenced.
    assert_eq!(
        t.g.heartbeat("b-1", Some("b"), 2, t.now),
        Err(GroupError::FencedInstanceId)
    );
    assert_eq!(t.g.heartbeat("b-2", Some("b"), 2, t.now), Ok(()));
    assert!(!t
        .events
        .iter()
        .skip_while(|e| !matches!(e, GroupEvent::StaticMemberReplaced { .. }))
        .any(|e| matches!(e, GroupEvent::PreparingRebalance { .. })));
}

#[test]
fn a_returning_static_leader_on_v9_learns_it_leads_but_skips_the_assignment() {
    let mut t = T::new(cfg());
    t.join_with(static_req("", "a", "a-1"));
    t.sync("a-1", 1, &[("a-1", "A")]);
    let w = t.join_with(JoinRequest {
        supports_skip_assignment: true,
        ..static_req("", "a", "a-2")
    });
    let r = t.joined(w);
    assert_eq!(r.leader, "a-2");
    assert!(r.skip_assignment);
    assert_eq!(r.members.len(), 1);
    // Before v9 the old leader id is reported, so the member does not run the assignor.
    let w = t.join_with(static_req("", "a", "a-3"));
    let r = t.joined(w);
    assert_eq!(r.leader, "a-2");
    assert!(!r.skip_assignment && r.members.is_empty());
}

#[test]
fn a_failed_write_of_a_replaced_static_member_restores_the_old_member_id() {
    let mut t = T::new(cfg());
    t.join_with(static_req("", "a", "a-1"));
    t.sync("a-1", 1, &[("a-1", "A")]);
    t.fail_stores = Some(GroupError::NotCoordinator);
    let w = t.join_with(static_req("", "a", "a-2"));
    assert_eq!(t.joined(w).error, Some(GroupError::NotCoordinator));
    assert_eq!(t.joined(w).member_id, "");
    assert_eq!(t.g.static_member_id("a"), Some("a-1"));
    assert!(t.g.member("a-2").is_none());
    assert_eq!(t.g.heartbeat("a-1", Some("a"), 1, t.now), Ok(()));
}

#[test]
fn a_second_instance_fences_the_parked_join_of_the_first() {
    let mut t = T::new(cfg());
    t.completing_static_pair();
    t.sync("a-1", 2, &[]);
    t.sync("b-1", 2, &[]);
    // The leader rejoins (a rebalance), and is parked waiting for b.
    let parked = t.join_with(static_req("a-1", "a", ""));
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    let w = t.join_with(static_req("", "a", "a-2"));
    assert_eq!(t.joined(parked).error, Some(GroupError::FencedInstanceId));
    assert_eq!(t.joined(parked).member_id, "a-1");
    assert!(
        !t.joins.contains_key(&w),
        "the new instance waits for the rebalance"
    );
    t.join_with(static_req("b-1", "b", ""));
    assert_eq!(t.joined(w).generation_id, 3);
    assert_eq!(t.joined(w).member_id, "a-2");
    assert_eq!(
        t.joined(w).leader,
        "a-2",
        "leadership followed the instance id"
    );
}

#[test]
fn a_static_member_rejoining_during_assignment_forces_a_new_rebalance() {
    let mut t = T::new(cfg());
    t.completing_static_pair();
    assert_eq!(t.g.state(), GroupState::CompletingRebalance);
    t.join_with(static_req("", "b", "b-2"));
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
}

// ---- offsets ----

#[test]
fn offset_commit_rules_for_members_and_simple_consumers() {
    let mut t = T::new(cfg());
    // Simple consumers (generation -1, no member id) commit to an empty group.
    assert_eq!(t.g.validate_offset_commit("", None, -1, 0), Ok(()));
    t.completing_pair();
    assert_eq!(
        t.g.validate_offset_commit("", None, -1, 0),
        Err(GroupError::UnknownMemberId),
        "only members commit to a group with members"
    );
    assert_eq!(
        t.g.validate_offset_commit("m1", None, 2, 0),
        Err(GroupError::RebalanceInProgress),
        "between JoinGroup and SyncGroup"
    );
    t.sync("m2", 2, &[]);
    t.sync("m1", 2, &[]);
    assert_eq!(t.g.validate_offset_commit("m1", None, 2, 0), Ok(()));
    assert_eq!(
        t.g.validate_offset_commit("m1", None, 1, 0),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(
        t.g.validate_offset_commit("ghost", None, 2, 0),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(
        t.g.validate_offset_commit("m1", Some("i"), 2, 0),
        Err(GroupError::UnknownMemberId)
    );
    // A commit during a rebalance is accepted and keeps the session.
    t.now = 9_000;
    t.join("m1", "");
    assert_eq!(t.g.validate_offset_commit("m2", None, 2, 9_000), Ok(()));
    t.advance_to(SESSION_MS as i64 + 1_000);
    assert!(
        t.g.member("m2").is_some(),
        "the commit at 9 s extended m2's session"
    );
    t.g.mark_dead(t.now);
    assert_eq!(
        t.g.validate_offset_commit("m1", None, 2, 0),
        Err(GroupError::CoordinatorNotAvailable)
    );
}

#[test]
fn subscriptions_decide_offset_deletion_and_expiry() {
    let mut t = T::new(cfg());
    assert_eq!(
        t.g.offset_expiry_base(),
        Some(ExpiryBase::CommitTime),
        "a simple group"
    );
    assert_eq!(t.g.validate_delete(), Ok(()));
    t.stable_pair();
    assert!(t.g.is_subscribed_to_topic("t"));
    assert!(!t.g.is_subscribed_to_topic("other"));
    assert_eq!(
        t.g.validate_offset_delete(),
        Ok(()),
        "consumer groups may drop other topics"
    );
    assert_eq!(t.g.validate_delete(), Err(GroupError::NonEmptyGroup));
    assert_eq!(t.g.offset_expiry_base(), Some(ExpiryBase::CommitTime));
    let (_, fx) =
        t.g.leave(&[("m1".into(), None), ("m2".into(), None)], &t.cfg, 5_000)
            .unwrap();
    t.apply(fx);
    assert_eq!(t.g.state(), GroupState::Empty);
    assert_eq!(
        t.g.offset_expiry_base(),
        Some(ExpiryBase::GroupEmptySince(Some(5_000)))
    );
    assert!(!t.g.is_subscribed_to_topic("t"));
    t.g.mark_dead(t.now);
    assert_eq!(t.g.validate_delete(), Err(GroupError::GroupIdNotFound));
    assert_eq!(
        t.g.validate_offset_delete(),
        Err(GroupError::GroupIdNotFound)
    );

    // Another protocol type: members block offset deletion altogether.
    let mut t = T::new(cfg());
    t.join_with(JoinRequest {
        protocol_type: "connect".into(),
        ..req("", "w1")
    });
    assert_eq!(t.g.validate_offset_delete(), Err(GroupError::NonEmptyGroup));
    assert_eq!(t.g.offset_expiry_base(), None);
}

// ---- persistence ----

#[test]
fn a_loaded_group_resumes_stable_and_evicts_members_that_do_not_come_back() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let value = t.stores.last().unwrap().value.clone();
    let (g, fx) = Group::loaded("g", value, GroupOffsets::default(), &cfg(), 100_000);
    assert!(fx.events.is_empty());
    let mut t = T {
        g,
        now: 100_000,
        ..T::new(cfg())
    };
    t.g.check_invariants();
    assert_eq!(t.g.state(), GroupState::Stable);
    assert_eq!(t.g.generation_id(), 2);
    assert_eq!(t.g.leader_id(), Some("m1"));
    let s = t.sync("m2", 2, &[]);
    assert_eq!(t.synced(s).assignment, Bytes::from("a2"));
    t.now = 105_000;
    assert_eq!(t.heartbeat("m1", 2), Ok(()));
    // m2 never heartbeats after the restart: its session (from the load) ends.
    t.advance_to(110_000);
    assert!(t.g.member("m2").is_none());
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
}

#[test]
fn a_loaded_group_over_the_size_limit_rebalances() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let value = t.stores.last().unwrap().value.clone();
    let small = GroupConfig {
        max_size: 1,
        ..cfg()
    };
    let (g, fx) = Group::loaded("g", value, GroupOffsets::default(), &small, 0);
    assert_eq!(g.state(), GroupState::PreparingRebalance);
    assert!(matches!(
        fx.events[0],
        GroupEvent::PreparingRebalance { .. }
    ));
}

// ---- description ----

#[test]
fn describe_shows_member_metadata_only_when_stable_and_the_assignment_always() {
    let mut t = T::new(cfg());
    t.stable_pair();
    let d = t.g.describe();
    assert_eq!(d.state, GroupState::Stable);
    assert_eq!(d.protocol_type, "consumer");
    assert_eq!(d.protocol_data, "range");
    assert_eq!(d.members.len(), 2);
    assert_eq!(d.members[0].assignment, Bytes::from("a1"));
    assert_eq!(d.members[0].metadata, subscription(&["t"]));
    t.join("m1", "");
    let d = t.g.describe();
    assert_eq!(d.state.as_str(), "PreparingRebalance");
    assert_eq!(d.protocol_data, "");
    // No metadata outside Stable, but the last assignment (Kafka's `describeNoMetadata`).
    assert!(d.members.iter().all(|m| m.metadata.is_empty()));
    assert_eq!(d.members[0].assignment, Bytes::from("a1"));
}

#[test]
fn subscriptions_parse_only_when_well_formed() {
    assert_eq!(
        parse_subscription_topics(&subscription(&["a", "bc"])),
        Some(vec!["a".to_string(), "bc".to_string()])
    );
    assert_eq!(
        parse_subscription_topics(&[0, 0, 0x7f, 0xff, 0xff, 0xff]),
        None
    );
    assert_eq!(parse_subscription_topics(&[0]), None);
    assert_eq!(parse_subscription_topics(&[0xff, 0xff, 0, 0, 0, 0]), None);
}

// ---- every parked request is answered exactly once ----

#[test]
fn random_operations_keep_the_invariants_and_answer_every_parked_request() {
    use rand::{Rng, SeedableRng};
    for seed in 0..40u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut t = T::new(GroupConfig {
            initial_rebalance_delay_ms: 100,
            max_size: 4,
            ..cfg()
        });
        let mut asked_join: HashSet<WaiterId> = HashSet::new();
        let mut asked_sync: HashSet<WaiterId> = HashSet::new();
        let ids = ["", "m-1", "m-2", "m-3", "m-4", "m-5"];
        for _ in 0..300 {
            let id = ids[rng.gen_range(0..ids.len())];
            let instance = if rng.gen_bool(0.3) {
                Some(["s1", "s2"][rng.gen_range(0..2)].to_string())
            } else {
                None
            };
            let generation = t.g.generation_id() - rng.gen_range(0..2);
            match rng.gen_range(0..7) {
                0 | 1 => {
                    let r = JoinRequest {
                        group_instance_id: instance,
                        require_known_member_id: rng.gen_bool(0.5),
                        ..req(id, &format!("m-{}", rng.gen_range(1..6)))
                    };
                    let new_id = r.new_member_id.clone();
                    if t.g.member(&new_id).is_some() || t.g.is_pending_member(&new_id) {
                        continue; // ids are unique (UUIDs) in real life
                    }
                    asked_join.insert(t.join_with(r));
                }
                2 => {
                    let assignments: Vec<(&str, &str)> =
                        ids[1..].iter().map(|m| (*m, "x")).collect();
                    asked_sync.insert(t.sync(id, generation, &assignments));
                }
                3 => {
                    let _ = t.g.heartbeat(id, instance.as_deref(), generation, t.now);
                }
                4 => {
                    if let Ok((_, fx)) = t.g.leave(&[(id.to_string(), instance)], &t.cfg, t.now) {
                        t.apply(fx);
                    }
                }
                _ => {
                    let at = t.now + rng.gen_range(0..8_000);
                    t.advance_to(at);
                }
            }
            t.g.check_invariants();
        }
        // Let every timer run out: nothing stays parked forever.
        for _ in 0..20 {
            let at = t.now + 400_000;
            t.advance_to(at);
        }
        let parked_join: usize = t.g.members().filter(|m| m.is_awaiting_join()).count();
        let parked_sync: usize = t.g.members().filter(|m| m.is_awaiting_sync()).count();
        let answered_join = asked_join
            .iter()
            .filter(|w| t.joins.contains_key(w))
            .count();
        let answered_sync = asked_sync
            .iter()
            .filter(|w| t.syncs.contains_key(w))
            .count();
        assert_eq!(answered_join + parked_join, asked_join.len(), "seed {seed}");
        assert_eq!(answered_sync + parked_sync, asked_sync.len(), "seed {seed}");
        assert_eq!(
            parked_join + parked_sync,
            0,
            "seed {seed}: requests still parked"
        );
    }
}

// ---- the online downgrade (KIP-848) ----

#[test]
fn members_back_from_a_consumer_group_rejoin_at_the_next_generation_with_their_assignments() {
    let mut t = T::new(cfg());
    t.now = 1_000;
    let back = |id: &str, protocols: Vec<Protocol>| ReturningMember {
        member_id: id.into(),
        instance_id: None,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout_ms: REBALANCE_MS,
        session_timeout_ms: SESSION_MS,
        protocols,
    };
    let both = vec![
        Protocol {
            name: "cooperative-sticky".into(),
            metadata: subscription(&["t"]),
        },
        range(&["t"]).remove(0),
    ];
    let (value, fx) = t.g.take_members_back(
        7,
        vec![back("c1", both), back("c2", range(&["t"]))],
        |r, metadata| {
            assert_eq!(metadata, &subscription(&["t"])[..]);
            Bytes::from(format!("{} assigned", r.member_id))
        },
        true,
        &t.cfg,
        t.now,
    );
    // Written as Kafka writes it: Stable at the consumer group's epoch, the protocol every
    // member supports, the first member leading, the assignments the consumer group had.
    assert_eq!(value.generation, 7);
    assert_eq!(value.protocol_type, "consumer");
    assert_eq!(value.protocol.as_deref(), Some("range"));
    assert_eq!(value.leader.as_deref(), Some("c1"));
    assert_eq!(value.members.len(), 2);
    assert_eq!(value.members[0].assignment, Bytes::from("c1 assigned"));
    assert_eq!(value.members[1].session_timeout_ms, SESSION_MS);
    t.apply(fx);
    // Then a rebalance: the members hear it on their heartbeat and rejoin.
    assert_eq!(t.g.state(), GroupState::PreparingRebalance);
    assert_eq!(t.heartbeat("c1", 7), Err(GroupError::RebalanceInProgress));
    let w1 = t.join("c1", "");
    let w2 = t.join("c2", "");
    assert_eq!(t.joined(w1).generation_id, 8);
    assert_eq!(t.joined(w1).leader, "c1");
    assert_eq!(t.joined(w2).generation_id, 8);
    assert_eq!(t.g.state(), GroupState::CompletingRebalance);
    // A member that does not rejoin within the rebalance timeout is gone, as in any rebalance.
    let mut t2 = T::new(cfg());
    let (_, fx) = t2.g.take_members_back(
        3,
        vec![back("c1", range(&["t"])), back("c2", range(&["t"]))],
        |_, _| Bytes::new(),
        true,
        &t2.cfg,
        0,
    );
    t2.apply(fx);
    let w = t2.join("c1", "");
    t2.advance_to(REBALANCE_MS as i64);
    assert_eq!(t2.joined(w).generation_id, 4);
    assert_eq!(t2.g.size(), 1);
}
