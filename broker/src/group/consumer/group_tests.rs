use super::*;

struct Topics {
    topics: BTreeMap<String, TopicMeta>,
    version: u64,
}

impl Topics {
    fn new(spec: &[(&str, u128, i32)]) -> Topics {
        let mut t = Topics {
            topics: BTreeMap::new(),
            version: 1,
        };
        for (name, id, n) in spec {
            t.add(name, *id, *n);
        }
        t
    }

    fn add(&mut self, name: &str, id: u128, partitions: i32) {
        self.topics.insert(
            name.to_string(),
            TopicMeta {
                id: Uuid::from_u128(id),
                partitions,
            },
        );
        self.version += 1;
    }
}

impl TopicView for Topics {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.topics.get(name).copied()
    }
    fn names(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }
    fn version(&self) -> u64 {
        self.version
    }
}

fn settings() -> Settings {
    Settings {
        session_timeout_ms: 45_000,
        heartbeat_interval_ms: 5_000,
        max_size: 10,
        assignors: vec![Assignor::Uniform, Assignor::Range],
        assignment_interval_ms: 0,
        downgrade_max_size: None,
    }
}

fn t(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn parts(spec: &[(u128, &[i32])]) -> Partitions {
    spec.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(topic, ps)| (t(*topic), ps.iter().copied().collect()))
        .collect()
}

fn join(member: &str, topics: &[&str]) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(topics.iter().map(|s| s.to_string()).collect()),
        owned: Some(Partitions::new()),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        ..Heartbeat::default()
    }
}

fn beat(member: &str, epoch: i32, owned: Partitions) -> Heartbeat {
    Heartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        ..Heartbeat::default()
    }
}

fn count(p: &Partitions) -> usize {
    p.values().map(|s| s.len()).sum()
}

#[test]
fn the_first_member_gets_every_partition_at_epoch_two_with_kafkas_records() {
    let topics = Topics::new(&[("a", 1, 3)]);
    let mut g = ConsumerGroup::new("g");
    let (reply, records) = g
        .heartbeat(join("m1", &["a"]), &topics, &settings(), 0)
        .unwrap();
    assert_eq!(reply.member_epoch, 2);
    assert_eq!(reply.heartbeat_interval_ms, 5_000);
    assert_eq!(reply.assignment, Some(parts(&[(1, &[0, 1, 2])])));
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| match r {
            Record::Member(..) => "member",
            Record::GroupEpoch(..) => "epoch",
            Record::TargetMember(..) => "target-member",
            Record::TargetEpoch(..) => "target-epoch",
            Record::CurrentAssignment(..) => "current",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "member",
            "epoch",
            "target-member",
            "target-epoch",
            "current"
        ]
    );
    assert_eq!(g.state(), State::Stable);
    // A heartbeat with nothing new changes nothing and sends no assignment.
    let (reply, records) = g
        .heartbeat(
            beat("m1", 2, parts(&[(1, &[0, 1, 2])])),
            &topics,
            &settings(),
            10,
        )
        .unwrap();
    assert_eq!((reply.member_epoch, reply.assignment), (2, None));
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn a_second_member_waits_for_the_first_to_revoke_before_it_gets_partitions() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let (r2, _) = g.heartbeat(join("m2", &["a"]), &topics, &s, 1).unwrap();
    // m2 is at epoch 3 but its partitions are still m1's.
    assert_eq!(r2.member_epoch, 3);
    assert_eq!(r2.assignment, Some(Partitions::new()));
    assert_eq!(g.state(), State::Reconciling);
    let target2 = g.target_of("m2").cloned().unwrap();
    assert_eq!(count(&target2), 2);
    // m1 is told to keep two; it stays at epoch 2 until it has revoked the others.
    let (r1, _) = g
        .heartbeat(beat("m1", 2, parts(&[(1, &[0, 1, 2, 3])])), &topics, &s, 2)
        .unwrap();
    assert_eq!(r1.member_epoch, 2);
    let kept = r1.assignment.clone().unwrap();
    assert_eq!(count(&kept), 2);
    assert_eq!(
        g.member("m1").unwrap().current.state,
        MemberState::UnrevokedPartitions
    );
    // Still unreleased for m2.
    let (r2, _) = g
        .heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, 3)
        .unwrap();
    assert_eq!(r2.assignment, None);
    // m1 revokes: it moves to epoch 3; m2 then gets its partitions.
    let (r1, _) = g
        .heartbeat(beat("m1", 2, kept.clone()), &topics, &s, 4)
        .unwrap();
    assert_eq!((r1.member_epoch, r1.assignment), (3, None));
    let (r2, _) = g
        .heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, 5)
        .unwrap();
    assert_eq!(r2.assignment, Some(target2));
    assert_eq!(g.state(), State::Stable);
}

#[test]
fn leaving_moves_the_partitions_to_the_others_at_a_new_epoch() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap();
    let (r1, _) = g
        .heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, 0)
        .unwrap();
    g.heartbeat(beat("m1", 2, r1.assignment.unwrap()), &topics, &s, 0)
        .unwrap();
    let mut leave = beat("m2", LEAVE_EPOCH, Partitions::new());
    leave.owned = None;
    let (reply, records) = g.heartbeat(leave, &topics, &s, 1).unwrap();
    assert_eq!(reply.member_epoch, LEAVE_EPOCH);
    assert!(records.contains(&Record::Member("m2".into(), None)));
    assert!(records.contains(&Record::GroupEpoch(Some(4))));
    let (r1, _) = g
        .heartbeat(
            beat("m1", 3, g.member("m1").unwrap().current.assigned.clone()),
            &topics,
            &s,
            2,
        )
        .unwrap();
    assert_eq!(r1.member_epoch, 4);
    assert_eq!(r1.assignment, Some(parts(&[(1, &[0, 1])])));
}

#[test]
fn a_member_missing_its_session_is_fenced_and_one_holding_partitions_past_its_rebalance_timeout_too(
) {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap();
    // m1 is told to revoke (rebalance timeout 30 s) and never does.
    g.heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, 1_000)
        .unwrap();
    assert_eq!(g.next_deadline(), Some(31_000));
    // m2 keeps heartbeating; at 31 s m1 is fenced for the revocation.
    g.heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, 30_000)
        .unwrap();
    let (_, fenced) = g.tick(&topics, &s, 31_000);
    assert_eq!(
        fenced,
        vec![(
            "m1".to_string(),
            "the member did not revoke its partitions in time"
        )]
    );
    let (r2, _) = g
        .heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, 31_001)
        .unwrap();
    assert_eq!(r2.assignment, Some(parts(&[(1, &[0, 1])])));
    // m2 then misses its session.
    let (_, fenced) = g.tick(&topics, &s, 31_001 + 45_000);
    assert_eq!(fenced.len(), 1);
    assert_eq!(g.state(), State::Empty);
    assert!(g.next_deadline().is_none());
}

#[test]
fn epochs_the_coordinator_did_not_give_are_fenced_and_the_previous_one_is_accepted() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let err = g
        .heartbeat(beat("m1", 5, Partitions::new()), &topics, &s, 1)
        .unwrap_err();
    assert!(
        matches!(err, HeartbeatError::FencedMemberEpoch(ref m) if m.contains("greater member epoch (5)")),
        "{err:?}"
    );
    g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap();
    g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap();
    // m1 at epoch 2, m2 at 3: m2 heartbeating with 2 (its previous epoch was 0) is fenced.
    let err = g
        .heartbeat(beat("m2", 2, Partitions::new()), &topics, &s, 1)
        .unwrap_err();
    assert!(
        matches!(err, HeartbeatError::FencedMemberEpoch(ref m) if m.contains("smaller member epoch (2)")),
        "{err:?}"
    );
    let err = g
        .heartbeat(beat("nobody", 1, Partitions::new()), &topics, &s, 1)
        .unwrap_err();
    assert_eq!(
        err,
        HeartbeatError::UnknownMemberId("Member nobody is not a member of group g.".into())
    );
    // A member whose answer was lost comes back with its previous epoch and a subset.
    let (r1, _) = g
        .heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, 2)
        .unwrap();
    let kept = r1.assignment.unwrap();
    g.heartbeat(beat("m1", 2, kept.clone()), &topics, &s, 3)
        .unwrap();
    assert_eq!(g.member("m1").unwrap().current.member_epoch, 3);
    let (r, _) = g.heartbeat(beat("m1", 2, kept), &topics, &s, 4).unwrap();
    assert_eq!(r.member_epoch, 3);
}

#[test]
fn a_static_member_that_leaves_to_come_back_keeps_its_partitions_without_a_new_epoch() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut j = join("m1", &["a"]);
    j.instance_id = Some("i1".into());
    g.heartbeat(j.clone(), &topics, &s, 0).unwrap();
    let mut leave = beat("m1", LEAVE_STATIC_EPOCH, Partitions::new());
    leave.instance_id = Some("i1".into());
    let (r, _) = g.heartbeat(leave, &topics, &s, 1).unwrap();
    assert_eq!(r.member_epoch, LEAVE_STATIC_EPOCH);
    assert_eq!(g.group_epoch(), 2);
    // Another process with the same instance id comes back under a new member id.
    let mut back = join("m1b", &["a"]);
    back.instance_id = Some("i1".into());
    let (r, records) = g.heartbeat(back, &topics, &s, 2).unwrap();
    assert_eq!(g.group_epoch(), 2, "{records:?}");
    assert_eq!(r.member_epoch, 2);
    assert_eq!(r.assignment, Some(parts(&[(1, &[0, 1])])));
    assert!(g.member("m1").is_none());
    assert!(records.contains(&Record::Member("m1".into(), None)));
    // While m1b holds the instance id, a third process cannot take it.
    let mut third = join("m1c", &["a"]);
    third.instance_id = Some("i1".into());
    let err = g.heartbeat(third, &topics, &s, 3).unwrap_err();
    assert!(
        matches!(err, HeartbeatError::UnreleasedInstanceId(_)),
        "{err:?}"
    );
    // And the old member id is fenced.
    let mut old = beat("m1", 2, Partitions::new());
    old.instance_id = Some("i1".into());
    let err = g.heartbeat(old, &topics, &s, 3).unwrap_err();
    assert!(
        matches!(err, HeartbeatError::FencedInstanceId(_)),
        "{err:?}"
    );
}

#[test]
fn a_regex_subscription_follows_topic_creation() {
    let mut topics = Topics::new(&[("orders-1", 1, 1), ("other", 2, 1)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut j = join("m1", &[]);
    j.subscribed_names = None;
    j.subscribed_regex = Some("orders-.*".into());
    // As on Kafka, the regex is resolved after the heartbeat that brought it: the member joins
    // with nothing and gets the matched topics at its next heartbeat, at a new epoch.
    let (r, _) = g.heartbeat(j, &topics, &s, 0).unwrap();
    assert_eq!((r.member_epoch, r.assignment), (2, Some(Partitions::new())));
    let (r, records) = g
        .heartbeat(beat("m1", 2, Partitions::new()), &topics, &s, 1)
        .unwrap();
    assert!(
        records.contains(&Record::GroupEpoch(Some(3))),
        "{records:?}"
    );
    assert_eq!(
        (r.member_epoch, r.assignment),
        (3, Some(parts(&[(1, &[0])])))
    );
    topics.add("orders-2", 3, 2);
    let records = g.metadata_changed(&topics);
    assert_eq!(records, vec![Record::GroupEpoch(Some(4))]);
    let (r, _) = g
        .heartbeat(beat("m1", 3, parts(&[(1, &[0])])), &topics, &s, 1)
        .unwrap();
    assert_eq!(r.member_epoch, 4);
    assert_eq!(r.assignment, Some(parts(&[(1, &[0]), (3, &[0, 1])])));
    // A topic that does not match changes nothing.
    topics.add("unrelated", 4, 1);
    assert!(g.metadata_changed(&topics).is_empty());
    let mut bad = join("m2", &[]);
    bad.subscribed_regex = Some("(".into());
    assert!(matches!(
        g.heartbeat(bad, &topics, &s, 2),
        Err(HeartbeatError::InvalidRegularExpression(_))
    ));
}

#[test]
fn the_group_comes_back_from_its_records() {
    let topics = Topics::new(&[("a", 1, 3), ("b", 2, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut log = Vec::new();
    log.extend(
        g.heartbeat(join("m1", &["a", "b"]), &topics, &s, 0)
            .unwrap()
            .1,
    );
    let mut j = join("m2", &["a"]);
    j.instance_id = Some("i2".into());
    log.extend(g.heartbeat(j, &topics, &s, 0).unwrap().1);
    let (r1, rec) = g
        .heartbeat(
            beat("m1", 2, parts(&[(1, &[0, 1, 2]), (2, &[0, 1])])),
            &topics,
            &s,
            1,
        )
        .unwrap();
    log.extend(rec);
    log.extend(
        g.heartbeat(beat("m1", 2, r1.assignment.unwrap()), &topics, &s, 2)
            .unwrap()
            .1,
    );
    let mut back = ConsumerGroup::new("g");
    for r in log {
        back.replay(r);
    }
    back.loaded(&topics, 45_000, 10);
    assert_eq!(back.group_epoch(), g.group_epoch());
    assert_eq!(back.assignment_epoch(), g.assignment_epoch());
    assert_eq!(back.state(), g.state());
    for m in g.members() {
        assert_eq!(back.member(&m.member_id), Some(m));
        assert_eq!(back.target_of(&m.member_id), g.target_of(&m.member_id));
    }
    // The reloaded group carries on: m2 heartbeats and gets what was released.
    let (r2, _) = back
        .heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, 11)
        .unwrap();
    assert_eq!(r2.member_epoch, 3);
    assert!(r2.assignment.is_some_and(|a| count(&a) > 0));
}

#[test]
fn joins_beyond_the_maximum_size_and_unknown_assignors_are_refused() {
    let topics = Topics::new(&[("a", 1, 1)]);
    let mut s = settings();
    s.max_size = 1;
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    assert_eq!(
        g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap_err(),
        HeartbeatError::GroupMaxSizeReached(
            "The consumer group has reached its maximum capacity of 1 members.".into()
        )
    );
    // The member itself may rejoin.
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let mut j = join("m1", &["a"]);
    j.server_assignor = Some("sticky".into());
    assert_eq!(
        g.heartbeat(j, &topics, &s, 0).unwrap_err(),
        HeartbeatError::UnsupportedAssignor(
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.".into()
        )
    );
}

#[test]
fn the_range_assignor_is_used_when_members_ask_for_it() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut j = join("m1", &["a"]);
    j.server_assignor = Some("range".into());
    g.heartbeat(j, &topics, &s, 0).unwrap();
    assert_eq!(g.assignor(&s), Assignor::Range);
    let mut j = join("m2", &["a"]);
    j.server_assignor = Some("range".into());
    g.heartbeat(j, &topics, &s, 0).unwrap();
    // Range: m1 the first half, m2 the second.
    assert_eq!(g.target_of("m1"), Some(&parts(&[(1, &[0, 1])])));
    assert_eq!(g.target_of("m2"), Some(&parts(&[(1, &[2, 3])])));
}

#[test]
fn a_member_subscribing_to_nothing_joins_without_a_new_epoch_and_an_emptied_group_catches_up() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (1, 1));
    let (r, _) = g.heartbeat(join("idle", &[]), &topics, &s, 0).unwrap();
    assert_eq!((r.member_epoch, g.group_epoch()), (1, 1));
    assert_eq!(g.state(), State::Stable);
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    assert_eq!(g.group_epoch(), 2);
    let mut leave = beat("m1", LEAVE_EPOCH, Partitions::new());
    leave.owned = None;
    g.heartbeat(leave, &topics, &s, 1).unwrap();
    let mut leave = beat("idle", LEAVE_EPOCH, Partitions::new());
    leave.owned = None;
    let (_, records) = g.heartbeat(leave, &topics, &s, 1).unwrap();
    // The last member gone: the (empty) target is the group epoch's.
    assert_eq!(
        records[records.len() - 2..],
        [
            Record::GroupEpoch(Some(4)),
            Record::TargetEpoch(Some((4, 0)))
        ]
    );
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (4, 4));
}

#[test]
fn each_partition_keeps_the_epoch_it_was_given_at() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let epochs = |g: &ConsumerGroup| g.member("m1").unwrap().assignment_epochs.clone();
    assert_eq!(
        epochs(&g),
        [((t(1), 0), 2), ((t(1), 1), 2)].into_iter().collect()
    );
    // m2 comes and goes: m1 keeps partition 0 from epoch 2 throughout; partition 1 comes
    // back to it at epoch 4.
    g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap();
    let (r1, _) = g
        .heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, 0)
        .unwrap();
    let kept = r1.assignment.unwrap();
    g.heartbeat(beat("m1", 2, kept.clone()), &topics, &s, 0)
        .unwrap();
    let mut leave = beat("m2", LEAVE_EPOCH, Partitions::new());
    leave.owned = None;
    g.heartbeat(leave, &topics, &s, 1).unwrap();
    g.heartbeat(beat("m1", 3, kept.clone()), &topics, &s, 2)
        .unwrap();
    let e = epochs(&g);
    let (kept_p, _) = e
        .iter()
        .find(|(_, e)| **e == 2)
        .map(|(k, e)| (*k, *e))
        .unwrap();
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(kept_p.0, t(1));
    assert_eq!(e.values().filter(|e| **e == 4).count(), 1, "{e:?}");
    assert_eq!(g.member("m1").unwrap().current.member_epoch, 4);
}

/// Rebuilds a group from the records `log` holds, as a coordinator loading it at `now_ms`.
fn reload(log: &[Record], topics: &Topics, now_ms: i64) -> ConsumerGroup {
    let mut g = ConsumerGroup::new("g");
    for r in log {
        g.replay(r.clone());
    }
    g.loaded(topics, 45_000, now_ms);
    g
}

#[test]
fn a_member_still_revoking_when_the_group_is_loaded_is_fenced_after_its_rebalance_timeout() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut log = Vec::new();
    log.extend(g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap().1);
    log.extend(g.heartbeat(join("m2", &["a"]), &topics, &s, 0).unwrap().1);
    // m1 is told to revoke one partition, and never does.
    log.extend(
        g.heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, 1_000)
            .unwrap()
            .1,
    );
    assert_eq!(
        g.member("m1").unwrap().current.state,
        MemberState::UnrevokedPartitions
    );
    // The coordinator moves; m1 keeps heartbeating without revoking.
    let mut g = reload(&log, &topics, 10_000);
    assert_eq!(
        g.next_deadline(),
        Some(40_000),
        "the rebalance timeout again"
    );
    for now in [15_000, 20_000, 25_000, 30_000, 35_000] {
        g.heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, now)
            .unwrap();
        g.heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, now)
            .unwrap();
    }
    let (_, fenced) = g.tick(&topics, &s, 40_000);
    assert_eq!(
        fenced,
        vec![(
            "m1".to_string(),
            "the member did not revoke its partitions in time"
        )]
    );
    let (r2, _) = g
        .heartbeat(beat("m2", 3, Partitions::new()), &topics, &s, 40_001)
        .unwrap();
    assert_eq!(r2.assignment, Some(parts(&[(1, &[0, 1])])));
}

#[test]
fn topics_that_changed_while_the_group_was_not_loaded_start_a_new_epoch_at_the_next_heartbeat() {
    let mut topics = Topics::new(&[("a", 1, 2), ("orders-1", 2, 1)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut j = join("m1", &["a"]);
    j.subscribed_regex = Some("orders-.*".into());
    let (r, mut log) = g.heartbeat(j, &topics, &s, 0).unwrap();
    // The named topic at once, the matched one at the next heartbeat.
    assert_eq!(r.assignment, Some(parts(&[(1, &[0, 1])])));
    let (r, more) = g
        .heartbeat(beat("m1", 2, parts(&[(1, &[0, 1])])), &topics, &s, 1)
        .unwrap();
    log.extend(more);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(r.assignment, Some(parts(&[(1, &[0, 1]), (2, &[0])])));
    let owned = r.assignment.unwrap();
    // Unchanged topics: the reloaded group carries on at its epoch.
    let mut back = reload(&log, &topics, 10);
    let (r, records) = back
        .heartbeat(beat("m1", 3, owned.clone()), &topics, &s, 11)
        .unwrap();
    assert_eq!((r.member_epoch, r.assignment), (3, None));
    assert!(records.is_empty(), "{records:?}");
    // While no coordinator has the group, "a" grows and a topic matching the regex appears.
    topics.add("a", 1, 4);
    topics.add("orders-2", 3, 1);
    let mut back = reload(&log, &topics, 20);
    let (r, records) = back
        .heartbeat(beat("m1", 3, owned.clone()), &topics, &s, 21)
        .unwrap();
    assert!(
        records.contains(&Record::GroupEpoch(Some(4))),
        "{records:?}"
    );
    assert_eq!(r.member_epoch, 4);
    assert_eq!(
        r.assignment,
        Some(parts(&[(1, &[0, 1, 2, 3]), (2, &[0]), (3, &[0])]))
    );
    // The new epoch is written: a group loaded from the records knows it.
    let mut all = log.clone();
    all.extend(records);
    let again = reload(&all, &topics, 30);
    assert_eq!((again.group_epoch(), again.assignment_epoch()), (4, 4));
    let (r, records) = back
        .heartbeat(beat("m1", 4, r.assignment.unwrap()), &topics, &s, 31)
        .unwrap();
    assert_eq!((r.member_epoch, r.assignment), (4, None));
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn a_static_member_taken_over_under_a_new_member_id_leaves_no_target_in_the_records() {
    let topics = Topics::new(&[("a", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let mut log = Vec::new();
    let mut j = join("m1", &["a"]);
    j.instance_id = Some("i1".into());
    log.extend(g.heartbeat(j, &topics, &s, 0).unwrap().1);
    let mut leave = beat("m1", LEAVE_STATIC_EPOCH, Partitions::new());
    leave.instance_id = Some("i1".into());
    log.extend(g.heartbeat(leave, &topics, &s, 1).unwrap().1);
    let mut back = join("m1b", &["a"]);
    back.instance_id = Some("i1".into());
    let (_, records) = g.heartbeat(back, &topics, &s, 2).unwrap();
    assert!(
        records.contains(&Record::TargetMember("m1".into(), None)),
        "{records:?}"
    );
    log.extend(records);
    let loaded = reload(&log, &topics, 3);
    assert_eq!(loaded.target_of("m1"), None);
    assert_eq!(loaded.target_of("m1b"), Some(&parts(&[(1, &[0, 1])])));
    assert_eq!(loaded.group_epoch(), 2);
    assert!(loaded.member("m1").is_none());
}

#[test]
fn a_new_target_is_computed_at_most_once_per_assignment_interval_and_a_load_keeps_its_time() {
    // KIP-1263 (Kafka 4.4's default consumer.assignment.interval.ms, 1 s).
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = Settings {
        assignment_interval_ms: 1_000,
        downgrade_max_size: None,
        ..settings()
    };
    let mut g = ConsumerGroup::new("g");
    let mut log = Vec::new();
    // The first target is computed at once, and says when.
    let (r1, records) = g
        .heartbeat(join("m1", &["a"]), &topics, &s, 10_000)
        .unwrap();
    assert_eq!((r1.member_epoch, count(&r1.assignment.unwrap())), (2, 4));
    assert!(records.contains(&Record::TargetEpoch(Some((2, 10_000)))));
    log.extend(records);
    // A join 400 ms later moves the group epoch but not the target: m2 is at the target's
    // epoch with nothing, m1 keeps everything.
    let (r2, records) = g
        .heartbeat(join("m2", &["a"]), &topics, &s, 10_400)
        .unwrap();
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (3, 2));
    assert_eq!(
        (r2.member_epoch, r2.assignment),
        (2, Some(Partitions::new()))
    );
    assert!(!records.iter().any(|r| matches!(r, Record::TargetEpoch(_))));
    log.extend(records);
    let all = parts(&[(1, &[0, 1, 2, 3])]);
    let (r1, records) = g
        .heartbeat(beat("m1", 2, all.clone()), &topics, &s, 10_999)
        .unwrap();
    assert_eq!((r1.member_epoch, r1.assignment), (2, None));
    assert_eq!(g.assignment_epoch(), 2);
    log.extend(records);
    // The first heartbeat once the interval has passed computes it.
    let (r1, records) = g
        .heartbeat(beat("m1", 2, all.clone()), &topics, &s, 11_000)
        .unwrap();
    assert_eq!(g.assignment_epoch(), 3);
    assert_eq!(count(&r1.assignment.unwrap()), 2);
    assert!(records.contains(&Record::TargetEpoch(Some((3, 11_000)))));
    log.extend(records);
    // Reloaded, the group remembers when: a join within the interval waits, one after it not.
    let mut g = reload(&log, &topics, 11_100);
    let (_, records) = g
        .heartbeat(join("m3", &["a"]), &topics, &s, 11_500)
        .unwrap();
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (4, 3));
    assert!(!records.iter().any(|r| matches!(r, Record::TargetEpoch(_))));
    g.heartbeat(beat("m3", 3, Partitions::new()), &topics, &s, 12_000)
        .unwrap();
    assert_eq!(g.assignment_epoch(), 4);
    // With 0 every change is assigned at once.
    let s0 = Settings {
        assignment_interval_ms: 0,
        downgrade_max_size: None,
        ..settings()
    };
    g.heartbeat(join("m4", &["a"]), &topics, &s0, 12_001)
        .unwrap();
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (5, 5));
}

#[test]
fn the_assignor_most_members_ask_for_wins_and_the_group_reads_back_its_state() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    assert!(g.is_empty());
    for (id, assignor) in [("m1", "uniform"), ("m2", "range"), ("m3", "uniform")] {
        let mut j = join(id, &["a"]);
        j.server_assignor = Some(assignor.into());
        g.heartbeat(j, &topics, &s, 0).unwrap();
    }
    // Two ask for uniform, one for range (a tie would go to the first name).
    assert_eq!(g.assignor(&s), Assignor::Uniform);
    assert!(!g.is_empty());
    assert_eq!(g.subscribed_topics().collect::<Vec<_>>(), ["a"]);
}

#[test]
fn a_group_whose_epoch_moved_before_its_target_is_assigning() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = Settings {
        assignment_interval_ms: 1_000,
        ..settings()
    };
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 1_000).unwrap();
    g.heartbeat(join("m2", &["a"]), &topics, &s, 1_500).unwrap();
    assert!(g.group_epoch() > g.assignment_epoch());
    assert_eq!(g.state(), State::Assigning);
}

#[test]
fn a_target_is_computed_at_most_once_per_interval() {
    // Never computed, or no interval: at once.
    assert!(may_assign(0, 1_000, 500));
    assert!(may_assign(1_000, 0, 1_001));
    assert!(may_assign(1_000, -1, 1_000));
    // Else from the last computation plus the interval.
    assert!(!may_assign(1_000, 1_000, 1_999));
    assert!(may_assign(1_000, 1_000, 2_000));
}

#[test]
fn a_member_in_a_state_this_version_does_not_know_must_come_back_empty_handed() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    // Its current assignment as a newer Kafka wrote it (a state code unknown here).
    let mut m = g.member("m1").unwrap().clone();
    m.current.state = MemberState::Unknown;
    g.replay(Record::CurrentAssignment(
        "m1".into(),
        Some((m.current.clone(), m.assignment_epochs.clone())),
    ));
    let epoch = m.current.member_epoch;
    assert!(matches!(
        g.heartbeat(beat("m1", epoch, parts(&[(1, &[0])])), &topics, &s, 100),
        Err(HeartbeatError::FencedMemberEpoch(_))
    ));
    // Owning nothing (topics listed without partitions count as nothing) it goes on.
    let listed_empty: Partitions = [(t(1), Default::default())].into_iter().collect();
    g.heartbeat(beat("m1", epoch, listed_empty), &topics, &s, 200)
        .unwrap();
}

#[test]
fn only_a_changed_subscription_moves_the_epoch_and_a_full_heartbeat_gets_the_assignment() {
    let topics = Topics::new(&[("a", 1, 4), ("b", 2, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let (r, _) = g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let epoch = g.group_epoch();
    let owned = r.assignment.clone().unwrap();
    // A new rack is new metadata, not a new subscription: no new epoch.
    let rack = Heartbeat {
        rack_id: Some("r1".into()),
        ..beat("m1", r.member_epoch, owned.clone())
    };
    let (plain, records) = g.heartbeat(rack, &topics, &s, 100).unwrap();
    assert_eq!(g.group_epoch(), epoch);
    assert!(records.iter().any(|r| matches!(r, Record::Member(..))));
    // A heartbeat that is not full, with nothing new, carries no assignment; a full one (the
    // rebalance timeout, the subscription and the owned partitions, as a client sends after
    // an error) does.
    assert_eq!(plain.assignment, None);
    let names_no_timeout = Heartbeat {
        subscribed_names: Some(vec!["a".into()]),
        ..beat("m1", r.member_epoch, owned.clone())
    };
    assert_eq!(
        g.heartbeat(names_no_timeout, &topics, &s, 150)
            .unwrap()
            .0
            .assignment,
        None
    );
    let full = Heartbeat {
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["a".into()]),
        ..beat("m1", r.member_epoch, owned.clone())
    };
    let (full_reply, _) = g.heartbeat(full, &topics, &s, 200).unwrap();
    assert_eq!(full_reply.assignment, Some(owned.clone()));
    // A regex alone changing is a new subscription: a new epoch.
    let regex = Heartbeat {
        subscribed_regex: Some("b".into()),
        ..beat("m1", r.member_epoch, owned)
    };
    g.heartbeat(regex, &topics, &s, 300).unwrap();
    assert_eq!(g.group_epoch(), epoch + 1);
}

#[test]
fn a_static_member_rejoins_under_its_own_id_and_leaving_with_minus_one_leaves_for_good() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let static_join = || Heartbeat {
        instance_id: Some("i1".into()),
        ..join("m1", &["a"])
    };
    g.heartbeat(static_join(), &topics, &s, 0).unwrap();
    // Epoch 0 again under its own member id (a client starting over): still its place.
    g.heartbeat(static_join(), &topics, &s, 100).unwrap();
    assert_eq!(g.members().count(), 1);
    // -1 from a static member is a leave for good, not -2's leave to come back.
    let leave = Heartbeat {
        instance_id: Some("i1".into()),
        ..beat("m1", LEAVE_EPOCH, Partitions::new())
    };
    g.heartbeat(leave, &topics, &s, 200).unwrap();
    assert!(g.is_empty());
}

#[test]
fn a_regex_matching_topics_others_already_subscribe_to_still_moves_the_epoch() {
    let topics = Topics::new(&[("orders-1", 1, 2)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("a", &["orders-1"]), &topics, &s, 0)
        .unwrap();
    let b = Heartbeat {
        subscribed_names: None,
        subscribed_regex: Some("orders-.*".into()),
        ..join("b", &[])
    };
    let (r, _) = g.heartbeat(b, &topics, &s, 100).unwrap();
    // The regex is resolved off the join, at the next heartbeat; it matches a topic `a`
    // subscribes to already, so the subscribed topics do not change, but b's subscription
    // does: a new epoch, and b gets a partition.
    let before = g.group_epoch();
    g.heartbeat(
        beat("b", r.member_epoch, Partitions::new()),
        &topics,
        &s,
        200,
    )
    .unwrap();
    assert_eq!(g.group_epoch(), before + 1);
    assert_eq!(g.target_of("b").map(count), Some(1));
}

#[test]
fn a_member_record_read_back_keeps_the_assignment_and_epochs_its_assignment_record_gave() {
    let topics = Topics::new(&[("a", 1, 4)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let (_, log) = g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let epochs = g.member("m1").unwrap().assignment_epochs.clone();
    assert!(!epochs.is_empty());
    let mut back = ConsumerGroup::new("g");
    for r in log {
        back.replay(r);
    }
    // A later metadata record, as read from its bytes (Kafka's member metadata holds no
    // assignment epochs), must not drop them.
    let mut later = g.member("m1").unwrap().clone();
    later.rack_id = Some("r1".into());
    later.assignment_epochs = AssignmentEpochs::new();
    later.current = Current::joining();
    back.replay(Record::Member("m1".into(), Some(Box::new(later))));
    assert_eq!(back.member("m1").unwrap().assignment_epochs, epochs);
    assert_eq!(
        back.member("m1").unwrap().current,
        g.member("m1").unwrap().current
    );
}

#[test]
fn a_subscribed_topic_without_partitions_does_not_make_a_loaded_target_stale() {
    let topics = Topics::new(&[("a", 1, 0)]);
    let s = settings();
    let mut g = ConsumerGroup::new("g");
    let (_, log) = g.heartbeat(join("m1", &["a"]), &topics, &s, 0).unwrap();
    let mut back = ConsumerGroup::new("g");
    for r in log {
        back.replay(r);
    }
    back.loaded(&topics, 45_000, 10);
    assert_eq!(back.metadata_changed(&topics), Vec::new());
}

#[test]
#[should_panic(expected = "above group epoch")]
fn the_invariants_catch_an_assignment_epoch_above_the_group_epoch() {
    let mut g = ConsumerGroup::new("g");
    g.replay(Record::GroupEpoch(Some(3)));
    g.replay(Record::TargetEpoch(Some((5, 0))));
    // Checked when the load ends (debug builds check after every change).
    g.loaded(&Topics::new(&[]), 45_000, 0);
}
