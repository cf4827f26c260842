use super::*;
use crate::Subtopology;

pub(super) struct Topics(BTreeMap<String, i32>);

impl TopicView for Topics {
    fn partitions(&self, name: &str) -> Option<i32> {
        self.0.get(name).copied()
    }
    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

pub(super) fn topics(list: &[(&str, i32)]) -> Topics {
    Topics(list.iter().map(|(n, p)| (n.to_string(), *p)).collect())
}

/// One stateless subtopology reading `in`.
pub(super) fn topology(epoch: i32) -> Topology {
    Topology {
        epoch,
        subtopologies: vec![Subtopology {
            id: "0".into(),
            source_topics: vec!["in".into()],
            ..Default::default()
        }],
    }
}

pub(super) fn settings() -> Settings {
    Settings {
        initial_rebalance_delay_ms: 0,
        assignment_interval_ms: 0,
        ..Settings::default()
    }
}

pub(super) fn join(member: &str, process: &str) -> Heartbeat {
    Heartbeat {
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(topology(1)),
        owned: Some(Tasks::default()),
        process_id: Some(process.into()),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        ..Default::default()
    }
}

pub(super) fn beat(member: &str, epoch: i32, owned: &Tasks) -> Heartbeat {
    Heartbeat {
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned.clone()),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        ..Default::default()
    }
}

fn active(tasks: &Tasks) -> Vec<i32> {
    tasks
        .active
        .get("0")
        .map(|p| p.iter().copied().collect())
        .unwrap_or_default()
}

#[test]
fn the_first_member_initializes_the_topology_and_gets_every_task() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 4)]);
    let (reply, records) = g
        .heartbeat(join("m1", "p1"), &t, &settings(), 1_000)
        .unwrap();
    assert_eq!(reply.member_epoch, 2, "a new group's first epoch is 2");
    assert_eq!(active(reply.tasks.as_ref().unwrap()), vec![0, 1, 2, 3]);
    assert!(reply.status.is_empty(), "{:?}", reply.status);
    assert!(records.contains(&Record::Topology(Some(topology(1)))));
    assert!(records
        .iter()
        .any(|r| matches!(r, Record::Metadata(Some(m)) if m.epoch == 2 && m.validated_topology_epoch == 1)));
    assert!(records.contains(&Record::TargetEpoch(Some((2, 1_000)))));
    assert_eq!(g.state(), State::Stable);
    // A heartbeat with nothing new sends no tasks and writes nothing.
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    let (reply, records) = g
        .heartbeat(beat("m1", 2, &owned), &t, &settings(), 2_000)
        .unwrap();
    assert_eq!(reply.tasks, None);
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn the_initial_rebalance_delay_holds_the_first_assignment_back() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 4)]);
    let s = Settings {
        initial_rebalance_delay_ms: 3_000,
        ..settings()
    };
    let (reply, _) = g.heartbeat(join("m1", "p1"), &t, &s, 1_000).unwrap();
    assert_eq!(reply.member_epoch, 1);
    assert!(reply.tasks.as_ref().unwrap().is_empty());
    assert_eq!(reply.status[0].status, Status::AssignmentDelayed);
    assert_eq!(g.next_deadline(), Some(4_000));
    assert!(g.tick(&s, 3_999).is_empty());
    let records = g.tick(&s, 4_000);
    assert!(records.contains(&Record::TargetEpoch(Some((2, 4_000)))));
    let (reply, _) = g
        .heartbeat(beat("m1", 1, &Tasks::default()), &t, &s, 4_100)
        .unwrap();
    assert_eq!(reply.member_epoch, 2);
    assert_eq!(active(reply.tasks.as_ref().unwrap()), vec![0, 1, 2, 3]);
}

#[test]
fn a_second_process_takes_half_once_the_first_revoked_it() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 4)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let (r2, _) = g.heartbeat(join("m2", "p2"), &t, &s, 10).unwrap();
    assert_eq!(g.group_epoch(), 3);
    // m2's tasks are still m1's: nothing yet.
    assert_eq!(r2.member_epoch, 3);
    assert!(r2.tasks.as_ref().unwrap().is_empty());
    assert_eq!(g.state(), State::Reconciling);
    let m1_owned = g.member("m1").unwrap().current.assigned.tasks();
    let (r1, _) = g.heartbeat(beat("m1", 2, &m1_owned), &t, &s, 20).unwrap();
    // Told to give up two tasks, at its old epoch.
    assert_eq!(r1.member_epoch, 2);
    let kept = active(r1.tasks.as_ref().unwrap());
    assert_eq!(kept.len(), 2);
    let m1_kept = r1.tasks.clone().unwrap();
    let (r1, _) = g.heartbeat(beat("m1", 2, &m1_kept), &t, &s, 30).unwrap();
    assert_eq!(r1.member_epoch, 3);
    let (r2, _) = g
        .heartbeat(beat("m2", 3, &Tasks::default()), &t, &s, 40)
        .unwrap();
    let got = active(r2.tasks.as_ref().unwrap());
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|p| !kept.contains(p)));
    assert_eq!(g.state(), State::Stable);
}

#[test]
fn a_missing_source_topic_is_reported_and_nothing_is_assigned() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[]);
    let (reply, _) = g.heartbeat(join("m1", "p1"), &t, &settings(), 0).unwrap();
    assert!(reply.tasks.as_ref().unwrap().is_empty());
    assert_eq!(reply.status[0].status, Status::MissingSourceTopics);
    assert_eq!(g.state(), State::NotReady);
    // The topic appears: the next heartbeat configures it and assigns.
    let t = topics(&[("in", 2)]);
    let (reply, _) = g
        .heartbeat(
            beat("m1", reply.member_epoch, &Tasks::default()),
            &t,
            &settings(),
            10,
        )
        .unwrap();
    assert!(reply.status.is_empty(), "{:?}", reply.status);
    assert_eq!(active(reply.tasks.as_ref().unwrap()), vec![0, 1]);
    assert_eq!(g.state(), State::Stable);
}

#[test]
fn a_member_behind_the_topology_is_told_and_a_changed_topology_is_refused() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 1)]);
    let mut first = join("m1", "p1");
    first.topology = Some(topology(2));
    g.heartbeat(first, &t, &settings(), 0).unwrap();
    let (reply, _) = g.heartbeat(join("m2", "p2"), &t, &settings(), 10).unwrap();
    assert_eq!(reply.status[0].status, Status::StaleTopology);
    assert_eq!(
        reply.status[0].detail,
        "The member's topology epoch 1 is behind the group's topology epoch 2."
    );
    let mut changed = join("m3", "p3");
    let mut t3 = topology(3);
    t3.subtopologies[0].source_topics.push("other".into());
    changed.topology = Some(t3);
    assert_eq!(
        g.heartbeat(changed, &t, &settings(), 20).unwrap_err(),
        HeartbeatError::InvalidRequest("Topology updates are not supported yet.".into())
    );
    assert!(g.member("m3").is_none());
}

#[test]
fn epochs_are_checked_as_kafka_does() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    assert!(matches!(
        g.heartbeat(beat("m1", 3, &owned), &t, &s, 1),
        Err(HeartbeatError::FencedMemberEpoch(_))
    ));
    assert!(matches!(
        g.heartbeat(beat("m9", 2, &owned), &t, &s, 1),
        Err(HeartbeatError::UnknownMemberId(_))
    ));
    // Its previous epoch with owned tasks it has: accepted (a lost answer).
    assert!(g
        .heartbeat(beat("m1", 0, &Tasks::default()), &t, &s, 1)
        .is_ok());
}

#[test]
fn a_member_past_its_session_is_fenced_and_its_tasks_move() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    g.heartbeat(beat("m1", 2, &owned), &t, &s, 40_000).unwrap();
    let records = g.tick(&s, 45_000);
    assert!(records.contains(&Record::Member("m2".into(), None)));
    assert!(g.member("m2").is_none());
    assert!(g.member("m1").is_some());
    let epoch = g.group_epoch();
    // m1 was revoking a task for m2: it acknowledges (owns only what it keeps) and gets both.
    assert_eq!(
        g.member("m1").unwrap().current.state,
        MemberState::UnrevokedTasks
    );
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    let e = g.member("m1").unwrap().current.member_epoch;
    let (reply, _) = g.heartbeat(beat("m1", e, &owned), &t, &s, 46_000).unwrap();
    assert_eq!(reply.member_epoch, epoch);
    // The task it just released was still its own when it reconciled (as on Kafka): the next
    // heartbeat takes it back.
    assert_eq!(
        g.member("m1").unwrap().current.state,
        MemberState::UnreleasedTasks
    );
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    g.heartbeat(beat("m1", epoch, &owned), &t, &s, 47_000)
        .unwrap();
    assert_eq!(
        g.member("m1").unwrap().current.assigned.tasks().active["0"].len(),
        2
    );
    assert_eq!(g.state(), State::Stable);
}

#[test]
fn leaving_removes_the_member_and_moves_the_epoch() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let (reply, records) = g
        .heartbeat(beat("m1", -1, &Tasks::default()), &t, &s, 1)
        .unwrap();
    assert_eq!(reply.member_epoch, -1);
    assert!(g.is_empty());
    assert_eq!(g.state(), State::Empty);
    assert!(records.contains(&Record::CurrentAssignment("m1".into(), None)));
    assert!(records.contains(&Record::TargetMember("m1".into(), None)));
    assert!(records
        .iter()
        .any(|r| matches!(r, Record::Metadata(Some(m)) if m.epoch == 3)));
    // The last member gone, the (empty) assignment is at the new group epoch, as Kafka writes
    // it (timestamp 0).
    assert_eq!(g.assignment_epoch(), 3);
    assert!(records.contains(&Record::TargetEpoch(Some((3, 0)))));
}

#[test]
fn a_member_leaving_a_group_that_keeps_members_leaves_the_assignment_epoch() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let (_, records) = g
        .heartbeat(beat("m2", -1, &Tasks::default()), &t, &s, 1)
        .unwrap();
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (4, 3));
    assert!(!records.iter().any(|r| matches!(r, Record::TargetEpoch(_))));
}

fn endpoint(host: &str) -> Option<Endpoint> {
    Some(Endpoint {
        host: host.into(),
        port: 8080,
    })
}

#[test]
fn the_endpoint_epoch_moves_as_kafka_moves_it() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    // The heartbeat that creates the group answers 0 (Kafka drops what it moved then), with
    // the endpoints since the client's epoch 0 is not the moved one.
    let (r, _) = g
        .heartbeat(
            Heartbeat {
                user_endpoint: endpoint("a"),
                ..join("m1", "p1")
            },
            &t,
            &s,
            0,
        )
        .unwrap();
    assert_eq!(r.endpoint_information_epoch, 0);
    assert_eq!(
        r.partitions_by_user_endpoint.as_ref().map(Vec::len),
        Some(1)
    );
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    let (r, _) = g.heartbeat(beat("m1", 2, &owned), &t, &s, 1).unwrap();
    assert_eq!(r.endpoint_information_epoch, 0);
    assert_eq!(r.partitions_by_user_endpoint, None);
    // A new endpoint moves it though the member's tasks stay as they are (none yet).
    let (r, _) = g
        .heartbeat(
            Heartbeat {
                user_endpoint: endpoint("b"),
                ..join("m2", "p2")
            },
            &t,
            &s,
            2,
        )
        .unwrap();
    assert!(r.tasks.as_ref().unwrap().is_empty());
    assert_eq!(r.endpoint_information_epoch, 1);
    assert_eq!(
        r.partitions_by_user_endpoint.as_ref().map(Vec::len),
        Some(2)
    );
    // Tasks of a member without an endpoint do not move it.
    let (r, _) = g.heartbeat(join("m3", "p3"), &t, &s, 3).unwrap();
    assert_eq!(r.endpoint_information_epoch, 1);
}

#[test]
fn an_offset_commit_with_an_older_epoch_is_checked_per_task() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let all = g.member("m1").unwrap().current.assigned.tasks();
    let (r, _) = g.heartbeat(beat("m1", 2, &all), &t, &s, 1).unwrap();
    let kept = r.tasks.unwrap();
    g.heartbeat(beat("m1", 2, &kept), &t, &s, 2).unwrap();
    g.heartbeat(beat("m2", 3, &Tasks::default()), &t, &s, 3)
        .unwrap();
    assert_eq!(g.offset_commit_epochs("m1", 3), Ok(None));
    assert_eq!(
        g.offset_commit_epochs("m1", 4),
        Err(OffsetError::StaleMemberEpoch)
    );
    assert_eq!(
        g.offset_commit_epochs("nobody", 3),
        Err(OffsetError::UnknownMemberId)
    );
    // m1 holds its kept task since epoch 2; m2 got its task at epoch 3.
    let k = active(&kept)[0];
    let m1 = g.offset_commit_epochs("m1", 2).unwrap().unwrap();
    assert_eq!(m1, BTreeMap::from([(("in".to_string(), k), 2)]));
    let m2 = g.offset_commit_epochs("m2", 2).unwrap().unwrap();
    assert_eq!(m2, BTreeMap::from([(("in".to_string(), 1 - k), 3)]));
}

#[test]
fn a_static_member_keeps_its_tasks_across_a_restart() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    let mut j = join("m1", "p1");
    j.instance_id = Some("i1".into());
    g.heartbeat(j, &t, &s, 0).unwrap();
    let mut leave = beat("m1", -2, &Tasks::default());
    leave.instance_id = Some("i1".into());
    g.heartbeat(leave, &t, &s, 10).unwrap();
    assert_eq!(g.member("m1").unwrap().current.member_epoch, -2);
    let mut back = join("m1b", "p1");
    back.instance_id = Some("i1".into());
    let epoch = g.group_epoch();
    let (reply, _) = g.heartbeat(back, &t, &s, 20).unwrap();
    assert!(g.member("m1").is_none());
    assert_eq!(
        reply.member_epoch, epoch,
        "no new epoch for the same instance"
    );
    assert_eq!(active(reply.tasks.as_ref().unwrap()), vec![0, 1]);
    // Another member id with the same instance while it is there: refused.
    let mut other = join("m1c", "p1");
    other.instance_id = Some("i1".into());
    assert!(matches!(
        g.heartbeat(other, &t, &s, 30),
        Err(HeartbeatError::UnreleasedInstanceId(_))
    ));
}

#[test]
fn a_shutdown_request_is_passed_to_every_member() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    g.heartbeat(join("m2", "p2"), &t, &s, 0).unwrap();
    let mut hb = beat("m1", 2, &g.member("m1").unwrap().current.assigned.tasks());
    hb.shutdown_application = true;
    g.heartbeat(hb, &t, &s, 10).unwrap();
    let (reply, _) = g
        .heartbeat(beat("m2", 3, &Tasks::default()), &t, &s, 20)
        .unwrap();
    assert!(reply.status.iter().any(|st| st.status == Status::ShutdownApplication
        && st.detail == "Streams group member m1 encountered a fatal error and requested a shutdown for the entire application."));
}

#[test]
fn the_records_rebuild_the_same_group() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 4)]);
    let s = settings();
    let mut log = Vec::new();
    log.extend(g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap().1);
    log.extend(g.heartbeat(join("m2", "p2"), &t, &s, 10).unwrap().1);
    let owned = g.member("m1").unwrap().current.assigned.tasks();
    log.extend(g.heartbeat(beat("m1", 2, &owned), &t, &s, 20).unwrap().1);
    let mut copy = StreamsGroup::new("app");
    for r in log {
        copy.replay(r);
    }
    copy.loaded(&t, &s, 30);
    assert_eq!(copy.group_epoch(), g.group_epoch());
    assert_eq!(copy.assignment_epoch(), g.assignment_epoch());
    assert_eq!(copy.topology(), g.topology());
    assert_eq!(copy.state(), g.state());
    for m in g.members() {
        assert_eq!(copy.member(&m.member_id), Some(m));
        assert_eq!(copy.target_of(&m.member_id), g.target_of(&m.member_id));
    }
    assert_eq!(copy.members().count(), 2);
}

#[test]
fn owned_tasks_outside_the_topology_are_refused() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let mut bad = Tasks::default();
    bad.active.insert("0".into(), [5].into());
    let err = g.heartbeat(beat("m1", 2, &bad), &t, &s, 1).unwrap_err();
    assert!(matches!(err, HeartbeatError::InvalidRequest(_)), "{err:?}");
}

#[test]
fn a_client_that_missed_an_answer_gets_its_tasks_again() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2)]);
    let s = settings();
    // The join's answer (epoch 2, both tasks) is lost: the client reports owning nothing.
    g.heartbeat(join("m1", "p1"), &t, &s, 0).unwrap();
    let (reply, _) = g
        .heartbeat(beat("m1", 2, &Tasks::default()), &t, &s, 10)
        .unwrap();
    assert_eq!(active(reply.tasks.as_ref().unwrap()), vec![0, 1]);
    // Reporting what it has: no tasks in the answer, as Kafka's.
    let owned = reply.tasks.unwrap();
    let (reply, _) = g.heartbeat(beat("m1", 2, &owned), &t, &s, 20).unwrap();
    assert_eq!(reply.tasks, None);
    // Still owning more than it keeps while revoking is no missed answer either.
    g.heartbeat(join("m2", "p2"), &t, &s, 30).unwrap();
    let (reply, _) = g.heartbeat(beat("m1", 2, &owned), &t, &s, 40).unwrap();
    assert_eq!(
        active(reply.tasks.as_ref().unwrap()).len(),
        1,
        "told to revoke one"
    );
    let (reply, _) = g.heartbeat(beat("m1", 2, &owned), &t, &s, 50).unwrap();
    assert_eq!(reply.tasks, None);
}

#[test]
fn offsets_of_the_topics_it_reads_are_kept_while_the_group_has_members() {
    let mut g = StreamsGroup::new("app");
    let t = topics(&[("in", 2), ("app-r-repartition", 2)]);
    let mut topo = topology(1);
    topo.subtopologies.push(Subtopology {
        id: "1".into(),
        repartition_source_topics: vec![crate::TopicInfo {
            name: "app-r-repartition".into(),
            partitions: 2,
            ..Default::default()
        }],
        ..Default::default()
    });
    assert!(!g.is_subscribed_to_topic("in"), "no topology yet");
    let hb = Heartbeat {
        topology: Some(topo),
        ..join("m1", "p1")
    };
    g.heartbeat(hb, &t, &settings(), 0).unwrap();
    assert!(g.is_subscribed_to_topic("in"));
    assert!(g.is_subscribed_to_topic("app-r-repartition"));
    assert!(!g.is_subscribed_to_topic("out"));
    // Once the last member left, the group (Empty) reads nothing: its offsets may go.
    let leave = Heartbeat {
        member_epoch: -1,
        ..beat("m1", -1, &Tasks::default())
    };
    g.heartbeat(leave, &t, &settings(), 10).unwrap();
    assert_eq!(g.state(), State::Empty);
    assert!(g.topology().is_some());
    assert!(!g.is_subscribed_to_topic("in"));
}
