use super::classic::*;
use super::*;

struct Topics(BTreeMap<String, TopicMeta>);

impl TopicView for Topics {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.0.get(name).copied()
    }
    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
    fn version(&self) -> u64 {
        1
    }
}

fn topics() -> Topics {
    Topics(BTreeMap::from([(
        "a".to_string(),
        TopicMeta {
            id: Uuid::from_u128(1),
            partitions: 4,
        },
    )]))
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

fn parts(ps: &[i32]) -> Partitions {
    match ps {
        [] => Partitions::new(),
        _ => Partitions::from([(Uuid::from_u128(1), ps.iter().copied().collect())]),
    }
}

fn join_new(g: &mut ConsumerGroup, member: &str, now: i64) -> i32 {
    let hb = Heartbeat {
        member_id: member.to_string(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["a".to_string()]),
        owned: Some(Partitions::new()),
        ..Heartbeat::default()
    };
    g.heartbeat(hb, &topics(), &settings(), now)
        .unwrap()
        .0
        .member_epoch
}

fn beat(g: &mut ConsumerGroup, member: &str, epoch: i32, owned: &[i32], now: i64) -> Reply {
    let hb = Heartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(parts(owned)),
        ..Heartbeat::default()
    };
    g.heartbeat(hb, &topics(), &settings(), now).unwrap().0
}

fn classic(member_id: &str, protocol: &str, owned: &[i32]) -> ClassicJoin {
    ClassicJoin {
        member_id: member_id.to_string(),
        new_member_id: "c-new".to_string(),
        instance_id: None,
        requires_known_member_id: false,
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 20_000,
        protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
        protocols: vec![(protocol.to_string(), bytes::Bytes::from_static(&[0, 3]))],
        topics: vec!["a".to_string()],
        owned: parts(owned),
        rack: None,
        client_id: "classic".to_string(),
        client_host: "/127.0.0.1".to_string(),
    }
}

fn joined(r: (ClassicJoined, Vec<Record>)) -> (String, i32, String) {
    match r.0 {
        ClassicJoined::Joined {
            member_id,
            generation,
            protocol_name,
        } => (member_id, generation, protocol_name),
        other => panic!("not joined: {other:?}"),
    }
}

#[test]
fn a_classic_member_joins_a_consumer_group_and_gets_its_share_once_released() {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    assert_eq!(join_new(&mut g, "m1", 1_000), 2);
    // JoinGroup v4+ without a member id: told to come back with one.
    let first = ClassicJoin {
        member_id: String::new(),
        requires_known_member_id: true,
        ..classic("", "range", &[])
    };
    let (r, records) = g.classic_join(first, &t, &s, 1_100).unwrap();
    assert_eq!(r, ClassicJoined::MemberIdRequired("c-new".into()));
    assert!(records.is_empty() && g.classic_members() == 0);
    // Joined: a new epoch; its partitions are still m1's, so it has none yet.
    let (id, generation, protocol) = joined(
        g.classic_join(classic("c-new", "range", &[]), &t, &s, 1_200)
            .unwrap(),
    );
    assert_eq!(
        (id.as_str(), generation, protocol.as_str()),
        ("c-new", 3, "range")
    );
    assert_eq!(g.group_epoch(), 3);
    let sync = g
        .classic_sync("c-new", None, 3, (Some("consumer"), Some("range")), 1_300)
        .unwrap();
    assert_eq!(sync.assigned, Partitions::new());
    assert_eq!(&sync.first_protocol_metadata[..], &[0, 3]);
    // Nothing released yet: no rejoin.
    assert_eq!(g.classic_heartbeat("c-new", None, 3, 1_400), Ok(()));
    // m1 revokes two: c-new is told to rejoin, and gets them.
    let r1 = beat(&mut g, "m1", 2, &[0, 1, 2, 3], 1_500);
    let kept: Vec<i32> = r1.assignment.unwrap()[&Uuid::from_u128(1)]
        .iter()
        .copied()
        .collect();
    assert_eq!(kept.len(), 2);
    beat(&mut g, "m1", 2, &kept, 1_600);
    assert!(matches!(
        g.classic_heartbeat("c-new", None, 3, 1_700),
        Err(ClassicError::RebalanceInProgress(_))
    ));
    let (_, generation, _) = joined(
        g.classic_join(classic("c-new", "range", &[]), &t, &s, 1_800)
            .unwrap(),
    );
    assert_eq!(generation, 3);
    let sync = g
        .classic_sync("c-new", None, 3, (Some("consumer"), Some("range")), 1_900)
        .unwrap();
    assert_eq!(sync.assigned.values().map(|p| p.len()).sum::<usize>(), 2);
    assert_eq!(g.state(), State::Stable);
    // Its metadata record says it is a classic member, and a reload keeps it so.
    let member = g.member("c-new").unwrap().clone();
    assert_eq!(member.classic.as_ref().unwrap().session_timeout_ms, 10_000);
    assert_eq!(member.server_assignor, None);
}

#[test]
fn classic_requests_are_checked_as_kafka_checks_them() {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    joined(
        g.classic_join(classic("c1", "range", &[]), &t, &s, 1_100)
            .unwrap(),
    );
    let sync = |g: &mut ConsumerGroup, id: &str, generation, name| {
        g.classic_sync(id, None, generation, (Some("consumer"), Some(name)), 1_200)
    };
    assert!(matches!(
        sync(&mut g, "c1", 2, "range"),
        Err(ClassicError::IllegalGeneration(_))
    ));
    assert!(matches!(
        sync(&mut g, "c1", 3, "roundrobin"),
        Err(ClassicError::InconsistentGroupProtocol(_))
    ));
    assert!(matches!(
        sync(&mut g, "m1", 2, "range"),
        Err(ClassicError::UnknownMemberId(m)) if m.contains("does not use the classic protocol")
    ));
    assert!(matches!(
        g.classic_heartbeat("nobody", None, 3, 1_200),
        Err(ClassicError::UnknownMemberId(_))
    ));
    // A protocol the classic members do not all support, or another protocol type.
    assert!(matches!(
        g.classic_join(classic("c2", "roundrobin", &[]), &t, &s, 1_300),
        Err(ClassicError::InconsistentGroupProtocol(_))
    ));
    let other = ClassicJoin {
        protocol_type: "connect".into(),
        ..classic("c2", "range", &[])
    };
    assert!(matches!(
        g.classic_join(other, &t, &s, 1_300),
        Err(ClassicError::InconsistentGroupProtocol(_))
    ));
    // The group's size.
    let small = Settings {
        max_size: 2,
        ..settings()
    };
    assert!(matches!(
        g.classic_join(classic("c2", "range", &[]), &t, &small, 1_300),
        Err(ClassicError::GroupMaxSizeReached(_))
    ));
    // LeaveGroup removes the classic member and a consumer-protocol one alike (Kafka 4.4), an
    // unknown one is refused, and the epoch moves once.
    let before = g.group_epoch();
    let (results, records) = g.classic_leave(
        &[("m1".into(), None), ("c1".into(), None), ("x".into(), None)],
        &t,
        &settings(),
    );
    assert_eq!(results[0], Ok("m1".to_string()));
    assert_eq!(results[1], Ok("c1".to_string()));
    assert!(matches!(&results[2], Err(ClassicError::UnknownMemberId(_))));
    assert_eq!(g.group_epoch(), before + 1);
    assert!(records.contains(&Record::Member("c1".into(), None)));
    assert!(records.contains(&Record::Member("m1".into(), None)));
    assert!(g.is_empty());
}

#[test]
fn a_classic_member_lives_by_its_own_session_and_must_sync_and_rejoin_in_time() {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    // Joined, but no SyncGroup within its rebalance timeout (5 s here): fenced.
    let quick = ClassicJoin {
        rebalance_timeout_ms: 5_000,
        ..classic("c1", "range", &[])
    };
    joined(g.classic_join(quick, &t, &s, 1_000).unwrap());
    let (_, fenced) = g.tick(&t, &settings(), 5_999);
    assert!(fenced.is_empty());
    let (_, fenced) = g.tick(&t, &settings(), 6_000);
    assert_eq!(
        fenced,
        vec![("c1".to_string(), "the classic member did not sync in time")]
    );
    // Synced, its session is its classic one (10 s), not the group's (45 s).
    joined(
        g.classic_join(classic("c2", "range", &[]), &t, &s, 30_000)
            .unwrap(),
    );
    let generation = g.member("c2").unwrap().current.member_epoch;
    g.classic_sync("c2", None, generation, (None, None), 30_100)
        .unwrap();
    let e1 = g.member("m1").unwrap().current.member_epoch;
    beat(&mut g, "m1", e1, &[0, 1, 2, 3], 39_000);
    let (_, fenced) = g.tick(&t, &settings(), 40_100);
    assert_eq!(
        fenced,
        vec![("c2".to_string(), "the member session expired")]
    );
    // Told to rejoin and not rejoining within the rebalance timeout: fenced.
    joined(
        g.classic_join(classic("c3", "range", &[]), &t, &s, 50_000)
            .unwrap(),
    );
    let generation = g.member("c3").unwrap().current.member_epoch;
    g.classic_sync("c3", None, generation, (None, None), 50_100)
        .unwrap();
    join_new(&mut g, "m2", 50_200);
    assert!(matches!(
        g.classic_heartbeat("c3", None, generation, 50_300),
        Err(ClassicError::RebalanceInProgress(_))
    ));
    for now in [55_000, 60_000, 65_000] {
        let _ = g.classic_heartbeat("c3", None, generation, now);
        for m in ["m1", "m2"] {
            let e = g.member(m).unwrap().current.member_epoch;
            let owned: Vec<i32> = g
                .member(m)
                .unwrap()
                .current
                .assigned
                .values()
                .flatten()
                .copied()
                .collect();
            beat(&mut g, m, e, &owned, now);
        }
        assert!(g.tick(&t, &settings(), now).1.is_empty());
    }
    let (_, fenced) = g.tick(&t, &settings(), 70_300);
    assert_eq!(
        fenced,
        vec![(
            "c3".to_string(),
            "the classic member did not rejoin in time"
        )]
    );
}

#[test]
fn a_classic_member_comes_back_from_the_records() {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    let mut log = Vec::new();
    let hb = Heartbeat {
        member_id: "m1".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["a".into()]),
        owned: Some(Partitions::new()),
        ..Heartbeat::default()
    };
    log.extend(g.heartbeat(hb, &t, &s, 1_000).unwrap().1);
    let (r, records) = g
        .classic_join(classic("c1", "range", &[]), &t, &s, 1_100)
        .unwrap();
    log.extend(records);
    let (_, generation, _) = joined((r, Vec::new()));
    let mut back = ConsumerGroup::new("g");
    for r in &log {
        back.replay(r.clone());
    }
    back.loaded(&t, 45_000, 2_000);
    let c1 = back.member("c1").unwrap();
    assert!(c1.uses_classic_protocol());
    assert_eq!(c1.classic, g.member("c1").unwrap().classic);
    assert_eq!(
        back.classic_sync("c1", None, generation, (None, Some("range")), 2_100)
            .map(|s| s.assigned),
        Ok(Partitions::new())
    );
    // Its session after the load is its own 10 s.
    let (_, fenced) = back.tick(&t, &settings(), 12_100);
    assert!(fenced.iter().any(|(id, _)| id == "c1"));
}

#[test]
fn a_classic_group_becomes_a_consumer_group_at_its_generation_and_its_members_rejoin() {
    let (t, s) = (topics(), settings());
    let member = |id: &str, ps: &[i32]| ClassicGroupMember {
        member_id: id.to_string(),
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 20_000,
        protocols: vec![("range".into(), bytes::Bytes::from_static(&[0, 3]))],
        topics: vec!["a".into()],
        assigned: parts(ps),
        ..ClassicGroupMember::default()
    };
    // Generation 7, two members with two partitions each (one of them claimed twice).
    let (mut g, records) = ConsumerGroup::from_classic(
        "g",
        7,
        vec![member("c1", &[0, 1]), member("c2", &[1, 2, 3])],
        &t,
        0,
    );
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (7, 7));
    assert_eq!(g.state(), State::Stable);
    assert_eq!(g.classic_members(), 2);
    assert_eq!(g.member("c2").unwrap().current.assigned, parts(&[2, 3]));
    assert_eq!(g.target_of("c1"), Some(&parts(&[0, 1])));
    // Kafka's order of records: members, group epoch, targets, target epoch, assignments.
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| match r {
            Record::Member(..) => "member",
            Record::GroupEpoch(..) => "epoch",
            Record::TargetMember(..) => "target",
            Record::TargetEpoch(..) => "target-epoch",
            Record::CurrentAssignment(..) => "current",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "member",
            "member",
            "epoch",
            "target",
            "target",
            "target-epoch",
            "current",
            "current"
        ]
    );
    // The classic members go on as they were: a heartbeat at generation 7 is fine.
    assert_eq!(g.classic_heartbeat("c1", None, 7, 100), Ok(()));
    // A consumer-protocol member joins: a new epoch; the classic members are told to rejoin,
    // and rejoin with what they own, giving up what the new target takes.
    let hb = Heartbeat {
        member_id: "m1".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["a".into()]),
        owned: Some(Partitions::new()),
        ..Heartbeat::default()
    };
    g.heartbeat(hb, &t, &s, 200).unwrap();
    assert_eq!(g.group_epoch(), 8);
    assert!(matches!(
        g.classic_heartbeat("c1", None, 7, 300),
        Err(ClassicError::RebalanceInProgress(_))
    ));
    let rejoin = ClassicJoin {
        owned: parts(&[0, 1]),
        ..classic("c1", "range", &[0, 1])
    };
    joined(g.classic_join(rejoin, &t, &s, 400).unwrap());
    let c1 = g.member("c1").unwrap();
    assert!(c1.uses_classic_protocol());
    let total: usize = ["c1", "c2", "m1"]
        .iter()
        .filter_map(|m| g.target_of(m))
        .map(|p| p.values().map(|s| s.len()).sum::<usize>())
        .sum();
    assert_eq!(total, 4);
    assert!(g.target_of("m1").is_some_and(|p| !p.is_empty()));
    // A reload from the records is the same group.
    let mut back = ConsumerGroup::new("g");
    for r in records {
        back.replay(r);
    }
    back.loaded(&t, 45_000, 500);
    assert_eq!((back.group_epoch(), back.assignment_epoch()), (7, 7));
    assert_eq!(back.classic_members(), 2);
    // c2, silent since the upgrade, is fenced by its own 10 s session.
    assert!(g
        .tick(&t, &settings(), 10_000)
        .1
        .iter()
        .any(|(id, _)| id == "c2"));
}

/// A group of a consumer-protocol member ("m1") and two classic ones ("c1", "c2"), reconciled:
/// each holds its target share of the four partitions.
fn mixed_group(s: &Settings) -> ConsumerGroup {
    mixed_group_of(s, None)
}

/// `mixed_group`, m1 static with `instance` when given.
fn mixed_group_of(s: &Settings, instance: Option<&str>) -> ConsumerGroup {
    let t = topics();
    let mut g = ConsumerGroup::new("g");
    let hb = Heartbeat {
        member_id: "m1".to_string(),
        member_epoch: 0,
        instance_id: instance.map(String::from),
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["a".to_string()]),
        owned: Some(Partitions::new()),
        ..Heartbeat::default()
    };
    g.heartbeat(hb, &t, s, 1_000).unwrap();
    let join = |g: &mut ConsumerGroup, id: &str, owned: &[i32], now: i64| {
        let (_, generation, _) = joined(
            g.classic_join(classic(id, "range", owned), &t, s, now)
                .unwrap(),
        );
        // Syncs at once, or is told to rejoin (it still has partitions to give up).
        let _ = g.classic_sync(id, None, generation, (Some("consumer"), Some("range")), now);
    };
    for (id, now) in [("c1", 1_100), ("c2", 1_200)] {
        join(&mut g, id, &[], now);
    }
    let held = |g: &ConsumerGroup, id: &str| -> Vec<i32> {
        let m = g.member(id).unwrap();
        m.current.assigned.values().flatten().copied().collect()
    };
    for now in (1_300..2_000).step_by(100) {
        let epoch = g.member("m1").unwrap().current.member_epoch;
        let owned = held(&g, "m1");
        beat(&mut g, "m1", epoch, &owned, now);
        for id in ["c1", "c2"] {
            let epoch = g.member(id).unwrap().current.member_epoch;
            if g.classic_heartbeat(id, None, epoch, now).is_err() {
                let owned = held(&g, id);
                join(&mut g, id, &owned, now);
            }
        }
    }
    for id in ["m1", "c1", "c2"] {
        let m = g.member(id).unwrap();
        assert_eq!(m.current.member_epoch, g.group_epoch(), "{id} reconciled");
        assert!(!m.current.assigned.is_empty(), "{id} holds partitions");
    }
    g
}

fn downgrading() -> Settings {
    Settings {
        downgrade_max_size: Some(10),
        ..settings()
    }
}

#[test]
fn the_last_consumer_protocol_member_leaving_downgrades_the_group_to_its_classic_members() {
    let (t, s) = (topics(), downgrading());
    let mut g = mixed_group(&s);
    let epoch = g.group_epoch();
    let targets: BTreeMap<String, Partitions> = ["c1", "c2"]
        .iter()
        .map(|id| (id.to_string(), g.target_of(id).cloned().unwrap_or_default()))
        .collect();
    assert!(targets.values().all(|p| !p.is_empty()), "{targets:?}");
    let leave = Heartbeat {
        member_id: "m1".to_string(),
        member_epoch: LEAVE_EPOCH,
        ..Heartbeat::default()
    };
    let (reply, records) = g.heartbeat(leave, &t, &s, 2_000).unwrap();
    assert_eq!(reply.member_epoch, LEAVE_EPOCH);
    // Kafka's tombstones, in its order, and nothing else.
    let mut expected: Vec<Record> = ["c1", "c2", "m1"]
        .iter()
        .map(|id| Record::CurrentAssignment(id.to_string(), None))
        .collect();
    expected.extend(
        ["c1", "c2", "m1"]
            .iter()
            .map(|id| Record::TargetMember(id.to_string(), None)),
    );
    expected.push(Record::TargetEpoch(None));
    expected.extend(
        ["c1", "c2", "m1"]
            .iter()
            .map(|id| Record::Member(id.to_string(), None)),
    );
    expected.push(Record::GroupEpoch(None));
    assert_eq!(records, expected);
    let d = g.take_downgraded().expect("downgraded");
    assert_eq!(
        d.generation, epoch,
        "the classic generation is the group epoch"
    );
    let ids: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
    for m in &d.members {
        assert_eq!(m.assigned, targets[&m.member_id]);
        assert_eq!(m.session_timeout_ms, 10_000, "the classic session timeout");
        assert_eq!(m.rebalance_timeout_ms, 20_000);
        assert_eq!(m.protocols[0].0, "range");
        assert_eq!(m.client_id, "classic");
    }
    assert!(g.is_empty());
    assert_eq!(g.next_deadline(), None);
    assert_eq!(g.take_downgraded(), None, "handed out once");
}

#[test]
fn no_downgrade_without_the_policy_above_the_classic_size_or_while_a_consumer_member_stays() {
    let t = topics();
    let leave = |g: &mut ConsumerGroup, s: &Settings| {
        let hb = Heartbeat {
            member_id: "m1".to_string(),
            member_epoch: LEAVE_EPOCH,
            ..Heartbeat::default()
        };
        g.heartbeat(hb, &t, s, 2_000).unwrap().1
    };
    // The policy does not allow it (`upgrade`, `disabled`): m1 is just removed.
    let mut g = mixed_group(&settings());
    let epoch = g.group_epoch();
    let records = leave(&mut g, &settings());
    assert!(records.contains(&Record::GroupEpoch(Some(epoch + 1))));
    assert_eq!(g.take_downgraded(), None);
    assert_eq!(g.members().count(), 2);
    // Two classic members do not fit in a classic group of one.
    let one = Settings {
        downgrade_max_size: Some(1),
        ..settings()
    };
    let mut g = mixed_group(&one);
    leave(&mut g, &one);
    assert_eq!(g.take_downgraded(), None);
    assert_eq!(g.members().count(), 2);
    // In one of two they fit (the limit counts those that stay).
    let two = Settings {
        downgrade_max_size: Some(2),
        ..settings()
    };
    let mut g = mixed_group(&two);
    leave(&mut g, &two);
    assert_eq!(g.take_downgraded().map(|d| d.members.len()), Some(2));
    // A classic member leaving while the consumer-protocol member stays.
    let s = downgrading();
    let mut g = mixed_group(&s);
    let (results, _) = g.classic_leave(&[("c1".into(), None)], &t, &s);
    assert_eq!(results, vec![Ok("c1".to_string())]);
    assert_eq!(g.take_downgraded(), None);
    assert!(g.member("m1").is_some());
    // The only member leaving empties the group; nothing to downgrade to.
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    leave(&mut g, &s);
    assert_eq!(g.take_downgraded(), None);
    assert!(g.is_empty());
}

#[test]
fn a_fenced_or_classic_leaving_last_consumer_member_downgrades_the_group_too() {
    let (t, s) = (topics(), downgrading());
    // Its session expires (the classic members keep theirs alive).
    let mut g = mixed_group(&s);
    let epoch = g.group_epoch();
    // m1's last heartbeat was at 1.9 s.
    let expiry = 1_900 + 45_000;
    let mut now = 1_900;
    while now + 5_000 < expiry {
        now += 5_000;
        for id in ["c1", "c2"] {
            let e = g.member(id).unwrap().current.member_epoch;
            g.classic_heartbeat(id, None, e, now).unwrap();
        }
        let (_, fenced) = g.tick(&t, &s, now);
        assert!(fenced.is_empty(), "{fenced:?} at {now}");
    }
    let (records, fenced) = g.tick(&t, &s, expiry);
    assert_eq!(
        fenced,
        vec![("m1".to_string(), "the member session expired")]
    );
    assert_eq!(records.last(), Some(&Record::GroupEpoch(None)));
    let d = g.take_downgraded().expect("downgraded");
    assert_eq!((d.generation, d.members.len()), (epoch, 2));
    // LeaveGroup naming the consumer-protocol member (and a classic one): the one left stays.
    let mut g = mixed_group(&s);
    let (results, records) = g.classic_leave(&[("m1".into(), None), ("c2".into(), None)], &t, &s);
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(records.last(), Some(&Record::GroupEpoch(None)));
    let d = g.take_downgraded().expect("downgraded");
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].member_id, "c1");
}

#[test]
fn a_classic_member_is_told_to_rejoin_only_once_the_new_target_is_computed() {
    let t = topics();
    let s = Settings {
        assignment_interval_ms: 1_000,
        ..settings()
    };
    let mut g = ConsumerGroup::new("g");
    let hb = |member: &str, epoch: i32| Heartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: 30_000,
        subscribed_names: (epoch == 0).then(|| vec!["a".to_string()]),
        owned: Some(Partitions::new()),
        ..Heartbeat::default()
    };
    g.heartbeat(hb("m1", 0), &t, &s, 1_000).unwrap();
    let (_, generation, _) = joined(
        g.classic_join(classic("c1", "range", &[]), &t, &s, 3_000)
            .unwrap(),
    );
    assert_eq!(g.assignment_epoch(), generation);
    g.classic_sync("c1", None, generation, (None, None), 3_000)
        .unwrap();
    // m2 joins within the interval: a new group epoch, its target not computed yet.
    g.heartbeat(hb("m2", 0), &t, &s, 3_500).unwrap();
    assert_eq!(g.group_epoch(), generation + 1);
    assert_eq!(g.assignment_epoch(), generation);
    assert_eq!(g.classic_heartbeat("c1", None, generation, 3_600), Ok(()));
    // Once a heartbeat past the interval computes it, c1 must rejoin.
    let m1 = g.member("m1").unwrap().current.member_epoch;
    g.heartbeat(hb("m1", m1), &t, &s, 4_100).unwrap();
    assert_eq!(g.assignment_epoch(), generation + 1);
    assert!(matches!(
        g.classic_heartbeat("c1", None, generation, 4_200),
        Err(ClassicError::RebalanceInProgress(_))
    ));
}

#[test]
fn a_static_classic_member_replacing_the_last_consumer_protocol_member_downgrades_the_group() {
    let t = topics();
    let s = downgrading();
    let static_join = |topics: &[&str]| ClassicJoin {
        member_id: String::new(),
        new_member_id: "c-new".to_string(),
        instance_id: Some("i1".to_string()),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..classic("", "range", &[])
    };
    // The same subscription: the group becomes a classic group at once, Stable, the joining
    // member with the replaced member's target, at the assignment epoch.
    let mut g = mixed_group_of(&s, Some("i1"));
    let (epoch, target) = (g.group_epoch(), g.target_of("m1").cloned().unwrap());
    let (joined_as, records) = g.classic_join(static_join(&["a"]), &t, &s, 3_000).unwrap();
    assert_eq!(
        joined_as,
        ClassicJoined::Joined {
            member_id: "c-new".to_string(),
            generation: epoch,
            protocol_name: "range".to_string(),
        }
    );
    assert_eq!(records.last(), Some(&Record::GroupEpoch(None)));
    assert!(records.contains(&Record::Member("m1".into(), None)));
    let d = g.take_downgraded().expect("downgraded");
    assert_eq!((d.generation, d.rebalance), (epoch, false));
    let ids: Vec<&str> = d.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c-new"]);
    let joining = &d.members[2];
    assert_eq!(joining.assigned, target);
    assert_eq!(joining.instance_id.as_deref(), Some("i1"));
    assert!(g.is_empty());
    // A changed subscription: a new epoch whose targets are stale, so the classic group
    // rebalances; the member is answered with the replaced member's epoch.
    let mut g = mixed_group_of(&s, Some("i1"));
    let (epoch, m1_epoch) = (
        g.group_epoch(),
        g.member("m1").unwrap().current.member_epoch,
    );
    let (joined_as, _) = g
        .classic_join(static_join(&["a", "b"]), &t, &s, 3_000)
        .unwrap();
    assert!(
        matches!(joined_as, ClassicJoined::Joined { generation, .. } if generation == m1_epoch)
    );
    let d = g.take_downgraded().expect("downgraded");
    assert_eq!((d.generation, d.rebalance), (epoch + 1, true));
    // Without the policy the member replaces m1 inside the consumer group, as before.
    let mut g = mixed_group_of(&settings(), Some("i1"));
    g.classic_join(static_join(&["a"]), &t, &settings(), 3_000)
        .unwrap();
    assert_eq!(g.take_downgraded(), None);
    assert!(g.member("c-new").is_some() && g.member("m1").is_none());
}

#[test]
fn a_consumer_protocol_member_takes_a_classic_static_members_place_unreleased_and_is_no_classic_member(
) {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    let static_classic = ClassicJoin {
        instance_id: Some("i1".to_string()),
        ..classic("c1", "range", &[])
    };
    joined(g.classic_join(static_classic, &t, &s, 1_100).unwrap());
    // The classic member never leaves (Kafka's classic static members do not): its place is
    // taken all the same, by a consumer-protocol member (Kafka refuses that only between two
    // consumer-protocol members, UNRELEASED_INSTANCE_ID).
    let hb = Heartbeat {
        member_id: "m2".to_string(),
        member_epoch: 0,
        instance_id: Some("i1".to_string()),
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["a".to_string()]),
        owned: Some(Partitions::new()),
        ..Heartbeat::default()
    };
    g.heartbeat(hb.clone(), &t, &s, 1_200).unwrap();
    assert!(g.member("c1").is_none());
    assert!(!g.member("m2").unwrap().uses_classic_protocol());
    assert_eq!(g.classic_members(), 0);
    // Between two consumer-protocol members the instance must be released first.
    let again = Heartbeat {
        member_id: "m3".to_string(),
        ..hb
    };
    assert!(matches!(
        g.heartbeat(again, &t, &s, 1_300),
        Err(HeartbeatError::UnreleasedInstanceId(_))
    ));
}

/// m1 (consumer protocol, 45 s session) holds the four partitions; c1 (classic, 10 s session,
/// 20 s rebalance timeout) joins at 1.1 s (generation 3) and syncs at 1.2 s.
fn synced_pair() -> ConsumerGroup {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    let (_, generation, _) = joined(
        g.classic_join(classic("c1", "range", &[]), &t, &s, 1_100)
            .unwrap(),
    );
    assert_eq!(generation, 3);
    g.classic_sync("c1", None, 3, (None, None), 1_200).unwrap();
    g
}

#[test]
fn a_classic_sync_and_each_classic_heartbeat_restart_the_members_session() {
    let (t, s) = (topics(), settings());
    let mut g = synced_pair();
    // Joined at 1.1 s, synced at 1.2 s: its 10 s session runs from the sync.
    assert!(g.tick(&t, &s, 11_150).1.is_empty());
    let (_, fenced) = g.tick(&t, &s, 11_200);
    assert_eq!(
        fenced,
        vec![("c1".to_string(), "the member session expired")]
    );
    // And from each heartbeat.
    let mut g = synced_pair();
    g.classic_heartbeat("c1", None, 3, 5_000).unwrap();
    assert!(g.tick(&t, &s, 14_999).1.is_empty());
    let (_, fenced) = g.tick(&t, &s, 15_000);
    assert_eq!(
        fenced,
        vec![("c1".to_string(), "the member session expired")]
    );
}

#[test]
fn a_classic_sync_behind_a_newer_target_is_told_to_rejoin_within_its_rebalance_timeout() {
    let (t, s) = (topics(), settings());
    let mut g = synced_pair();
    join_new(&mut g, "m2", 2_000);
    assert_eq!(g.assignment_epoch(), 4);
    assert!(matches!(
        g.classic_sync("c1", None, 3, (None, None), 2_100),
        Err(ClassicError::RebalanceInProgress(_))
    ));
    // It keeps its session alive but does not rejoin: fenced 20 s after it was told.
    for now in (7_100..22_100).step_by(5_000) {
        let _ = g.classic_heartbeat("c1", None, 3, now);
        assert!(g.tick(&t, &s, now).1.is_empty(), "at {now}");
    }
    assert!(g.tick(&t, &s, 22_099).1.is_empty());
    let (_, fenced) = g.tick(&t, &s, 22_100);
    assert_eq!(
        fenced,
        vec![(
            "c1".to_string(),
            "the classic member did not rejoin in time"
        )]
    );
}

#[test]
fn a_classic_heartbeat_behind_a_newer_target_gives_the_member_its_rebalance_timeout_to_rejoin() {
    let (t, s) = (topics(), settings());
    let mut g = synced_pair();
    join_new(&mut g, "m2", 2_000);
    assert!(matches!(
        g.classic_heartbeat("c1", None, 3, 2_500),
        Err(ClassicError::RebalanceInProgress(_))
    ));
    for now in (7_500..22_500).step_by(5_000) {
        let _ = g.classic_heartbeat("c1", None, 3, now);
    }
    assert!(g.tick(&t, &s, 22_499).1.is_empty());
    let (_, fenced) = g.tick(&t, &s, 22_500);
    assert_eq!(
        fenced,
        vec![(
            "c1".to_string(),
            "the classic member did not rejoin in time"
        )]
    );
}

#[test]
fn a_classic_member_still_revoking_may_sync_behind_a_newer_target() {
    let (t, s) = (topics(), settings());
    let mut g = mixed_group(&s);
    let c1 = g.member("c1").unwrap().clone();
    let owned: Vec<i32> = c1.current.assigned.values().flatten().copied().collect();
    assert!(!owned.is_empty());
    // c1 rejoins subscribed to nothing: a new target without its partitions, which it must
    // revoke first (after its SyncGroup, as the classic protocol does).
    let nothing = ClassicJoin {
        topics: Vec::new(),
        ..classic("c1", "range", &owned)
    };
    let (_, generation, _) = joined(g.classic_join(nothing, &t, &s, 3_000).unwrap());
    assert!(g.assignment_epoch() > generation);
    assert_eq!(
        g.member("c1").unwrap().current.state,
        MemberState::UnrevokedPartitions
    );
    let synced = g
        .classic_sync("c1", None, generation, (None, None), 3_100)
        .unwrap();
    assert_eq!(synced.assigned, Partitions::new());
}

#[test]
fn leave_group_by_instance_id_removes_the_static_member_holding_it_and_fences_another() {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    for (id, instance) in [("c1", "i1"), ("c2", "i2")] {
        let join = ClassicJoin {
            instance_id: Some(instance.to_string()),
            ..classic(id, "range", &[])
        };
        joined(g.classic_join(join, &t, &s, 1_100).unwrap());
    }
    let (results, _) = g.classic_leave(
        &[
            // The instance's holder under another member id: fenced, stays.
            ("c9".into(), Some("i1".into())),
            // An instance nobody holds.
            ("c3".into(), Some("i3".into())),
            // By instance id alone.
            ("".into(), Some("i2".into())),
        ],
        &t,
        &s,
    );
    assert!(matches!(
        &results[0],
        Err(ClassicError::FencedInstanceId(_))
    ));
    assert!(matches!(&results[1], Err(ClassicError::UnknownMemberId(_))));
    assert_eq!(results[2], Ok("c2".to_string()));
    assert!(g.member("c1").is_some() && g.member("c2").is_none());
    // By member and instance id.
    let (results, _) = g.classic_leave(&[("c1".into(), Some("i1".into()))], &t, &s);
    assert_eq!(results, vec![Ok("c1".to_string())]);
    assert!(g.member("c1").is_none());
}

#[test]
fn upgraded_classic_members_live_by_their_classic_sessions_from_the_upgrade() {
    let (t, s) = (topics(), settings());
    let member = |id: &str, session_ms: i32| ClassicGroupMember {
        member_id: id.to_string(),
        session_timeout_ms: session_ms,
        rebalance_timeout_ms: 20_000,
        protocols: vec![("range".into(), bytes::Bytes::from_static(&[0, 3]))],
        topics: vec!["a".into()],
        ..ClassicGroupMember::default()
    };
    let (mut g, _) = ConsumerGroup::from_classic(
        "g",
        3,
        vec![member("c1", 10_000), member("c2", 30_000)],
        &t,
        5_000,
    );
    assert!(g.tick(&t, &s, 14_999).1.is_empty());
    let (_, fenced) = g.tick(&t, &s, 15_000);
    assert_eq!(
        fenced,
        vec![("c1".to_string(), "the member session expired")]
    );
    assert!(g.tick(&t, &s, 34_999).1.is_empty());
    assert_eq!(g.tick(&t, &s, 35_000).1.len(), 1);
}

#[test]
fn classic_protocols_are_checked_against_an_empty_group_too() {
    let (t, s) = (topics(), settings());
    // Kafka's supportsClassicProtocols: any protocol will do in an empty group, none will not.
    let mut g = ConsumerGroup::new("g");
    let none = ClassicJoin {
        protocols: Vec::new(),
        ..classic("c1", "range", &[])
    };
    assert!(matches!(
        g.classic_join(none, &t, &s, 1_000),
        Err(ClassicError::InconsistentGroupProtocol(_))
    ));
    joined(
        g.classic_join(classic("c1", "range", &[]), &t, &s, 1_000)
            .unwrap(),
    );
}

#[test]
fn a_static_classic_member_rejoins_under_its_id_and_another_id_for_its_instance_is_fenced() {
    let (t, s) = (topics(), settings());
    let mut g = ConsumerGroup::new("g");
    join_new(&mut g, "m1", 1_000);
    let static_join = |member_id: &str| ClassicJoin {
        instance_id: Some("i1".to_string()),
        ..classic(member_id, "range", &[])
    };
    let (_, generation, _) = joined(g.classic_join(static_join("c1"), &t, &s, 1_100).unwrap());
    // The same member again: still itself, at its epoch.
    let (id, again, _) = joined(g.classic_join(static_join("c1"), &t, &s, 1_200).unwrap());
    assert_eq!((id.as_str(), again), ("c1", generation));
    // A known member id that does not hold the instance: fenced; the holder stays.
    assert!(matches!(
        g.classic_join(static_join("c7"), &t, &s, 1_300),
        Err(ClassicError::FencedInstanceId(_))
    ));
    assert!(g.member("c1").is_some() && g.member("c7").is_none());
    // Heartbeats and syncs are checked the same way.
    assert_eq!(
        g.classic_heartbeat("c1", Some("i1"), generation, 1_400),
        Ok(())
    );
    assert!(matches!(
        g.classic_heartbeat("c7", Some("i1"), generation, 1_400),
        Err(ClassicError::FencedInstanceId(_))
    ));
    assert!(matches!(
        g.classic_heartbeat("c1", Some("i9"), generation, 1_400),
        Err(ClassicError::UnknownMemberId(_))
    ));
}
