//! More tests of the streams group, written for what `cargo mutants` found unchecked: which
//! member changes are written and which move the epoch, the epoch checks, the assignment's
//! timing, static members, memory accounting, and what the broker reads of the group.

use super::*;

use super::tests::{beat, join, settings, topics};

/// The topology the shared helpers join with (one stateless subtopology reading `in`).
fn topology() -> Topology {
    super::tests::topology(1)
}

fn owned(g: &StreamsGroup, m: &str) -> Tasks {
    g.member(m).unwrap().current.assigned.tasks()
}

fn member_records(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Member(_, Some(_))))
        .count()
}

fn bumped(records: &[Record]) -> bool {
    records
        .iter()
        .any(|r| matches!(r, Record::Metadata(Some(_))))
}

#[test]
fn each_member_field_is_written_and_only_what_the_assignment_reads_moves_the_epoch() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    type Change = fn(&mut Heartbeat);
    let cases: Vec<(&str, Change, bool)> = vec![
        ("rack", |h| h.rack_id = Some("r2".into()), true),
        ("process", |h| h.process_id = Some("p9".into()), true),
        (
            "client tags",
            |h| h.client_tags = Some([("zone".into(), "b".into())].into()),
            true,
        ),
        ("client id", |h| h.client_id = "other".into(), false),
        ("client host", |h| h.client_host = "/10.0.0.1".into(), false),
        ("rebalance timeout", |h| h.rebalance_timeout_ms = 5, false),
        (
            "endpoint",
            |h| {
                h.user_endpoint = Some(Endpoint {
                    host: "h".into(),
                    port: 9,
                })
            },
            false,
        ),
    ];
    for (what, change, moves) in cases {
        let mut g = StreamsGroup::new("app");
        let mut first = join("m1", "p1");
        first.rack_id = Some("r1".into());
        first.client_tags = Some([("zone".into(), "a".into())].into());
        g.heartbeat(first, &t, &s, 0).unwrap();
        let o = owned(&g, "m1");
        let (_, records) = g.heartbeat(beat("m1", 2, &o), &t, &s, 10).unwrap();
        assert_eq!(member_records(&records), 0, "{what}: nothing changed yet");
        let mut hb = beat("m1", 2, &o);
        change(&mut hb);
        let (_, records) = g.heartbeat(hb, &t, &s, 20).unwrap();
        assert_eq!(member_records(&records), 1, "{what}: written");
        assert_eq!(bumped(&records), moves, "{what}: moves the epoch");
    }
}

#[test]
fn an_older_epoch_is_taken_only_as_the_previous_one_with_owned_tasks_it_has() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let o = owned(&g, "m1");
    // m1 revokes one task: epoch 2 -> 3 (previous 2).
    let (r, _) = g.heartbeat(beat("m1", 2, &o), &t, &s, 10).unwrap();
    let kept = r.tasks.unwrap();
    let (r, _) = g.heartbeat(beat("m1", 2, &kept), &t, &s, 20).unwrap();
    assert_eq!(r.member_epoch, 3);
    let fenced = |g: &mut StreamsGroup, hb: Heartbeat| {
        matches!(
            g.heartbeat(hb, &t, &s, 30),
            Err(HeartbeatError::FencedMemberEpoch(_))
        )
    };
    // The previous epoch with what it has: taken.
    assert!(!fenced(&mut g, beat("m1", 2, &kept)));
    // The previous epoch without owned tasks, or owning another active, standby or warm-up
    // task than it has: fenced.
    let mut none = beat("m1", 2, &kept);
    none.owned = None;
    assert!(fenced(&mut g, none));
    let mut more = kept.clone();
    more.standby.insert("0".into(), [9].into());
    assert!(fenced(&mut g, beat("m1", 2, &more)));
    let mut more = kept.clone();
    more.warmup.insert("0".into(), [9].into());
    assert!(fenced(&mut g, beat("m1", 2, &more)));
    let mut more = kept.clone();
    more.active.insert("0".into(), [0, 1].into());
    assert!(fenced(&mut g, beat("m1", 2, &more)));
    // Two epochs back: fenced.
    assert!(fenced(&mut g, beat("m1", 1, &kept)));
}

#[test]
fn a_target_is_computed_at_most_once_per_assignment_interval() {
    let t = topics(&[("in", 2)]);
    let s = Settings {
        assignment_interval_ms: 1_000,
        ..settings()
    };
    let mut g = StreamsGroup::new("app");
    // The first target is computed at once (none before).
    g.heartbeat(join("m1", "p1"), &t, &s, 10_000).unwrap();
    assert_eq!(g.assignment_epoch(), 2);
    // A join within the interval moves the group epoch, not the target.
    g.heartbeat(join("m2", "p2"), &t, &s, 10_500).unwrap();
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (3, 2));
    assert_eq!(g.state(), State::Assigning);
    let o = owned(&g, "m1");
    g.heartbeat(beat("m1", 2, &o), &t, &s, 10_999).unwrap();
    assert_eq!(g.assignment_epoch(), 2);
    // At the interval's end the next heartbeat computes it.
    g.heartbeat(beat("m1", 2, &o), &t, &s, 11_000).unwrap();
    assert_eq!(g.assignment_epoch(), 3);
}

#[test]
fn the_initial_delay_ends_at_its_deadline_exactly_and_none_is_set_without_one() {
    let t = topics(&[("in", 2)]);
    let s = Settings {
        initial_rebalance_delay_ms: 3_000,
        ..settings()
    };
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 1_000).unwrap();
    let (r, _) = g
        .heartbeat(beat("m1", 1, &Tasks::default()), &t, &s, 4_000)
        .unwrap();
    assert_eq!(
        r.member_epoch, 2,
        "assigned at the deadline by the heartbeat"
    );
    assert!(r.status.is_empty());
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &settings(), 1_000)
        .unwrap();
    assert_eq!(
        g.next_deadline(),
        Some(1_000 + 45_000),
        "only the session, no initial delay"
    );
    // A group whose members all left before the delay ended assigns nothing at its end.
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 1_000).unwrap();
    g.heartbeat(beat("m1", -1, &Tasks::default()), &t, &s, 1_500)
        .unwrap();
    let records = g.tick(&s, 4_000);
    assert!(
        !records.iter().any(|r| matches!(r, Record::TargetEpoch(_))),
        "{records:?}"
    );
}

#[test]
fn a_missed_answer_at_the_previous_epoch_or_missing_a_standby_gets_the_tasks_again() {
    let t = topics(&[("in", 2)]);
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &settings(), 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &settings(), 0).unwrap();
    let o = owned(&g, "m1");
    let (r, _) = g.heartbeat(beat("m1", 2, &o), &t, &settings(), 10).unwrap();
    let kept = r.tasks.unwrap();
    g.heartbeat(beat("m1", 2, &kept), &t, &settings(), 20)
        .unwrap();
    // The answer moving it to 3 was lost: at epoch 2 with what it has, it gets them again.
    let (r, _) = g
        .heartbeat(beat("m1", 2, &kept), &t, &settings(), 30)
        .unwrap();
    assert_eq!(r.tasks.as_ref(), Some(&kept));
    // At its epoch with all it has: nothing sent.
    let (r, _) = g
        .heartbeat(beat("m1", 3, &kept), &t, &settings(), 40)
        .unwrap();
    assert_eq!(r.tasks, None);
    // A member with a standby task that reports none gets its tasks again.
    let s = Settings {
        assignment: assignor::AssignmentConfigs {
            num_standby_replicas: 1,
            ..Default::default()
        },
        ..settings()
    };
    let mut topo = topology();
    topo.subtopologies[0].state_changelog_topics = vec![crate::TopicInfo {
        name: "app-store-changelog".into(),
        ..Default::default()
    }];
    let t = topics(&[("in", 2), ("app-store-changelog", 2)]);
    let mut g = StreamsGroup::new("app");
    let mut j = join("a", "p1");
    j.topology = Some(topo.clone());
    g.heartbeat(j, &t, &s, 0).unwrap();
    let mut j = join("b", "p2");
    j.topology = Some(topo);
    g.heartbeat(j, &t, &s, 0).unwrap();
    for _ in 0..4 {
        for m in ["a", "b"] {
            let o = owned(&g, m);
            let e = g.member(m).unwrap().current.member_epoch;
            g.heartbeat(beat(m, e, &o), &t, &s, 100).unwrap();
        }
    }
    let full = owned(&g, "a");
    assert!(!full.standby.is_empty(), "{full:?}");
    let mut without = full.clone();
    without.standby.clear();
    let e = g.member("a").unwrap().current.member_epoch;
    let (r, _) = g.heartbeat(beat("a", e, &without), &t, &s, 200).unwrap();
    assert_eq!(r.tasks.as_ref(), Some(&full));
}

#[test]
fn group_max_size_refuses_a_new_member_not_one_that_is_in() {
    let t = topics(&[("in", 2)]);
    let s = Settings {
        max_size: 1,
        ..settings()
    };
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    assert!(matches!(
        g.heartbeat(join("m2", "p2"), &t, &s, 10),
        Err(HeartbeatError::GroupMaxSizeReached(_))
    ));
    // The member itself joining again is no new member.
    assert!(g.heartbeat(join("m1", "p1"), &t, &s, 20).is_ok());
}

#[test]
fn a_static_member_rejoins_under_its_id_and_a_stranger_with_its_instance_is_fenced() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let mut j = join("m1", "p1");
    j.instance_id = Some("i1".into());
    g.heartbeat(j.clone(), &t, &s, 0).unwrap();
    // The same member id joining again with its instance: itself.
    assert!(g.heartbeat(j, &t, &s, 10).is_ok());
    assert_eq!(g.members().count(), 1);
    // A heartbeat from another member id with the instance: fenced.
    let mut other = beat("m9", 2, &Tasks::default());
    other.instance_id = Some("i1".into());
    assert!(matches!(
        g.heartbeat(other, &t, &s, 20),
        Err(HeartbeatError::FencedInstanceId(_))
    ));
    // Leaving with -2 but no instance id is an ordinary leave.
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(beat("m1", -2, &Tasks::default()), &t, &s, 10)
        .unwrap();
    assert!(g.is_empty());
}

#[test]
fn a_removed_static_member_frees_its_instance_only_if_it_still_held_it() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let mut j = join("m1", "p1");
    j.instance_id = Some("i1".into());
    g.heartbeat(j, &t, &s, 0).unwrap();
    let mut leave = beat("m1", -2, &Tasks::default());
    leave.instance_id = Some("i1".into());
    g.heartbeat(leave, &t, &s, 10).unwrap();
    let mut back = join("m2", "p1");
    back.instance_id = Some("i1".into());
    let (_, records) = g.heartbeat(back, &t, &s, 20).unwrap();
    // m2 holds i1 now; a replay of the same records agrees (m1's tombstone does not free it).
    let mut copy = StreamsGroup::new("app");
    let mut j = join("m1", "p1");
    j.instance_id = Some("i1".into());
    let mut g2 = StreamsGroup::new("app");
    let (_, first) = g2.heartbeat(j, &t, &s, 0).unwrap();
    for r in first.into_iter().chain(records) {
        copy.replay(r);
    }
    copy.loaded(&t, &s, 30);
    let mut stranger = beat("m3", 2, &Tasks::default());
    stranger.instance_id = Some("i1".into());
    assert!(matches!(
        copy.heartbeat(stranger, &t, &s, 40),
        Err(HeartbeatError::FencedInstanceId(_))
    ));
}

#[test]
fn a_reload_gives_every_member_a_full_session() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let (_, records) = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let mut copy = StreamsGroup::new("app");
    for r in records {
        copy.replay(r);
    }
    copy.loaded(&t, &s, 100_000);
    assert_eq!(copy.next_deadline(), Some(100_000 + 45_000));
    assert!(copy.tick(&s, 144_999).is_empty());
    assert!(!copy.tick(&s, 145_000).is_empty());
}

#[test]
fn memory_is_counted_for_members_and_tasks_and_given_back() {
    let t = topics(&[("in", 4)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let empty = g.bytes();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let one = g.bytes();
    assert!(one > empty + 256, "{empty} -> {one}");
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    assert!(g.bytes() > one);
    // m1 gives two tasks up: fewer bytes.
    let before = g.bytes();
    let o = owned(&g, "m1");
    let (r, _) = g.heartbeat(beat("m1", 2, &o), &t, &s, 10).unwrap();
    g.heartbeat(beat("m1", 2, &r.tasks.unwrap()), &t, &s, 20)
        .unwrap();
    assert!(g.bytes() < before);
    for m in ["m1", "m2"] {
        let o = owned(&g, m);
        let e = g.member(m).unwrap().current.member_epoch;
        g.heartbeat(beat(m, e, &o), &t, &s, 30).unwrap();
    }
    g.heartbeat(beat("m1", -1, &Tasks::default()), &t, &s, 40)
        .unwrap();
    g.heartbeat(beat("m2", -1, &Tasks::default()), &t, &s, 40)
        .unwrap();
    assert_eq!(g.bytes(), empty, "all given back");
}

#[test]
fn what_the_broker_reads_of_a_group() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    assert!(g.topology().is_none() && g.configured_topology().is_none());
    assert!(g.is_empty());
    let mut j = join("m1", "p1");
    j.task_offsets = Some(vec![("0".into(), 0, 5)]);
    j.task_end_offsets = Some(vec![("0".into(), 0, 9)]);
    g.heartbeat(j, &t, &s, 0).unwrap();
    assert!(!g.is_empty());
    assert_eq!(g.topology(), Some(&topology()));
    assert_eq!(g.configured_topology().unwrap().tasks()["0"], 2);
    assert_eq!(g.target_of("m1").unwrap().active["0"].len(), 2);
    assert_eq!(g.target_of("m9"), None);
    let offsets = g.task_offsets("m1").unwrap();
    assert_eq!(offsets.offsets[&("0".to_string(), 0)], 5);
    assert_eq!(offsets.end_offsets[&("0".to_string(), 0)], 9);
    assert_eq!(g.task_offsets("m9"), None);
    assert_eq!(g.validate_offset_commit("m1", 2), Ok(()));
    assert_eq!(
        g.validate_offset_commit("m1", 3),
        Err(OffsetError::StaleMemberEpoch)
    );
    assert_eq!(
        g.validate_offset_commit("m9", 2),
        Err(OffsetError::UnknownMemberId)
    );
    assert_eq!(g.state().as_str(), "Stable");
    assert_eq!(State::NotReady.as_str(), "NotReady");
    assert_eq!(State::Assigning.as_str(), "Assigning");
    assert_eq!(State::Reconciling.as_str(), "Reconciling");
    assert_eq!(State::Empty.as_str(), "Empty");
    // The assignment configs are in the metadata record.
    assert_eq!(
        settings().assignment_configs(),
        BTreeMap::from([("num.standby.replicas".to_string(), "0".to_string())])
    );
    // An empty group's tombstones: every record it has, the metadata last.
    g.heartbeat(beat("m1", -1, &Tasks::default()), &t, &s, 10)
        .unwrap();
    let tombs = g.tombstones();
    assert_eq!(tombs.last(), Some(&Record::Metadata(None)));
    assert!(tombs.contains(&Record::Topology(None)));
    assert!(tombs.contains(&Record::TargetEpoch(None)));
}

#[test]
fn a_topic_that_appears_with_one_partition_is_seen() {
    let mut g = StreamsGroup::new("app");
    let (r, _) = g
        .heartbeat(join("m1", "p1"), &topics(&[]), &settings(), 0)
        .unwrap();
    assert_eq!(r.status[0].status, Status::MissingSourceTopics);
    let (r, _) = g
        .heartbeat(
            beat("m1", r.member_epoch, &Tasks::default()),
            &topics(&[("in", 1)]),
            &settings(),
            10,
        )
        .unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    assert_eq!(r.tasks.unwrap().active["0"].len(), 1);
}

#[test]
#[should_panic(expected = "active on two members")]
fn the_invariants_check_catches_a_task_active_twice() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let (_, mut records) = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    // A second member's current assignment with m1's task: a log no coordinator writes.
    let c = g.member("m1").unwrap().current.clone();
    records.push(Record::CurrentAssignment("m2".into(), Some(c)));
    let mut copy = StreamsGroup::new("app");
    for r in records {
        copy.replay(r);
    }
    copy.loaded(&t, &s, 10);
}

#[test]
fn a_rejoin_with_another_topology_epoch_moves_the_group_epoch() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let mut older = join("m1", "p1");
    older.topology = Some(Topology {
        epoch: 0,
        ..topology()
    });
    let (r, records) = g.heartbeat(older, &t, &s, 10).unwrap();
    assert!(bumped(&records));
    assert_eq!(r.status[0].status, Status::StaleTopology);
}

#[test]
fn each_byte_of_a_members_strings_is_counted_once() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let size = |client_id: &str, process: &str| {
        let mut g = StreamsGroup::new("app");
        let mut j = join("m1", process);
        j.client_id = client_id.into();
        j.client_host = format!("/{client_id}");
        g.heartbeat(j, &t, &s, 0).unwrap();
        g.bytes()
    };
    let base = size("c", "p");
    assert_eq!(
        size(&"c".repeat(101), "p"),
        base + 2 * 100,
        "client id and host"
    );
    assert_eq!(size("c", &"p".repeat(51)), base + 50, "process id");
}

#[test]
fn a_member_in_an_unknown_state_must_come_back_empty_handed() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let (_, mut records) = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    // A state this version does not know (a newer coordinator wrote it).
    let mut c = g.member("m1").unwrap().current.clone();
    c.state = MemberState::Unknown;
    records.push(Record::CurrentAssignment("m1".into(), Some(c)));
    let mut copy = StreamsGroup::new("app");
    for r in records {
        copy.replay(r);
    }
    copy.loaded(&t, &s, 10);
    let o = owned(&g, "m1");
    assert!(matches!(
        copy.heartbeat(beat("m1", 2, &o), &t, &s, 20),
        Err(HeartbeatError::FencedMemberEpoch(_))
    ));
    let (r, _) = copy
        .heartbeat(beat("m1", 2, &Tasks::default()), &t, &s, 30)
        .unwrap();
    assert_eq!(r.member_epoch, 2);
    assert_eq!(r.tasks.unwrap().active["0"].len(), 2);
}

#[test]
fn a_static_member_back_on_another_process_moves_the_epoch() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let mut j = join("m1", "p1");
    j.instance_id = Some("i1".into());
    g.heartbeat(j, &t, &s, 0).unwrap();
    let mut leave = beat("m1", -2, &Tasks::default());
    leave.instance_id = Some("i1".into());
    g.heartbeat(leave, &t, &s, 10).unwrap();
    let epoch = g.group_epoch();
    let mut back = join("m2", "p2");
    back.instance_id = Some("i1".into());
    let (_, records) = g.heartbeat(back, &t, &s, 20).unwrap();
    assert!(bumped(&records));
    assert_eq!(g.group_epoch(), epoch + 1);
}

#[test]
fn a_member_waiting_for_the_next_target_keeps_its_tasks() {
    let t = topics(&[("in", 2)]);
    let s = Settings {
        assignment_interval_ms: 1_000,
        ..settings()
    };
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 10_000).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 10_100).unwrap();
    let o = owned(&g, "m1");
    let (r, _) = g.heartbeat(beat("m1", 2, &o), &t, &s, 10_200).unwrap();
    assert_eq!(r.tasks, None, "nothing to revoke before the next target");
    assert_eq!(owned(&g, "m1"), o);
}

#[test]
#[should_panic(expected = "beyond the group's")]
fn the_invariants_check_catches_a_member_ahead_of_the_group() {
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut g = StreamsGroup::new("app");
    let (_, mut records) = g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let mut c = g.member("m1").unwrap().current.clone();
    c.member_epoch = 99;
    records.push(Record::CurrentAssignment("m1".into(), Some(c)));
    let mut copy = StreamsGroup::new("app");
    for r in records {
        copy.replay(r);
    }
    copy.loaded(&t, &s, 10);
}

#[test]
fn only_a_new_group_waits_for_the_initial_delay() {
    let t = topics(&[("in", 2)]);
    let s = Settings {
        initial_rebalance_delay_ms: 3_000,
        ..settings()
    };
    let mut g = StreamsGroup::new("app");
    g.heartbeat(join("m1", "p1"), &t, &s, 1_000).unwrap();
    g.tick(&s, 4_000);
    assert_eq!(g.assignment_epoch(), g.group_epoch());
    // A member joining the formed group is assigned at once, no delay.
    let (r, _) = g.heartbeat(join("m2", "p2"), &t, &s, 5_000).unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    assert_eq!(g.assignment_epoch(), g.group_epoch());
}
