//! The group coordinator answers an OffsetCommit only once every in-sync replica of its
//! partition of `__consumer_offsets` has it (Kafka's coordinator appends with acks=all), on
//! three real nodes: with one follower paused, the commit waits until the ISR no longer names
//! that follower (it could not have the commit), and a commit answered with success survives
//! the coordinator's SIGKILL right after the answer: the node that takes the group over returns
//! it. Answering after the local append only, the coordinator acknowledged commits that a
//! crash then lost.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::BrokerOptions;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const TOPIC: &str = "consumed";
const OFFSETS_PARTITIONS: i32 = 3;

/// The node that coordinates `group_id`, as `node` answers.
fn find_coordinator(node: &Broker, group_id: &str) -> Option<i32> {
    let mut req = FindCoordinatorRequest::default();
    req.key = StrBytes::from_string(group_id.to_string());
    req.key_type = 0;
    let r: FindCoordinatorResponse =
        try_raw_request_to(&node.bootstrap(), ApiKey::FindCoordinator, 3, &req).ok()?;
    (r.error_code == 0).then_some(r.node_id.0)
}

/// Kafka's partition of `__consumer_offsets` for a group: abs(Java hashCode) % partitions.
fn offsets_partition(group_id: &str) -> i32 {
    let mut h: i32 = 0;
    for unit in group_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    (if h == i32::MIN { 0 } else { h.abs() }) % OFFSETS_PARTITIONS
}

/// OffsetCommit v8 of a simple consumer (generation -1): `offset` for partition 0 of TOPIC.
fn commit_request(group_id: &str, offset: i64) -> OffsetCommitRequest {
    let mut p = offset_commit_request::OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = offset;
    p.committed_leader_epoch = -1;
    let mut t = offset_commit_request::OffsetCommitRequestTopic::default();
    t.name = TopicName(StrBytes::from_static_str(TOPIC));
    t.partitions = vec![p];
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(StrBytes::from_string(group_id.to_string()));
    req.generation_id_or_member_epoch = -1;
    req.topics = vec![t];
    req
}

/// The partition's error code in an OffsetCommit answer.
fn commit_error(r: &OffsetCommitResponse) -> i16 {
    r.topics[0].partitions[0].error_code
}

/// The group's committed offset of partition 0 of TOPIC, as `node` answers OffsetFetch v7.
fn fetch_offset(node: &Broker, group_id: &str) -> anyhow::Result<(i16, i64)> {
    let mut t = offset_fetch_request::OffsetFetchRequestTopic::default();
    t.name = TopicName(StrBytes::from_static_str(TOPIC));
    t.partition_indexes = vec![0];
    let mut req = OffsetFetchRequest::default();
    req.group_id = GroupId(StrBytes::from_string(group_id.to_string()));
    req.topics = Some(vec![t]);
    let r: OffsetFetchResponse =
        try_raw_request_to(&node.bootstrap(), ApiKey::OffsetFetch, 7, &req)?;
    if r.error_code != 0 {
        return Ok((r.error_code, -1));
    }
    let p = &r.topics[0].partitions[0];
    Ok((p.error_code, p.committed_offset))
}

/// The ISR of `__consumer_offsets`-`partition` in `node`'s metadata image.
fn offsets_isr(node: &Broker, partition: i32) -> Vec<i32> {
    let m = metadata(node, Some(&["__consumer_offsets"]));
    let p = m.topics[0]
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .unwrap_or_else(|| panic!("no __consumer_offsets-{partition}: {m:?}"));
    let mut isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
    isr.sort();
    isr
}

#[test]
fn an_offset_commit_is_answered_once_replicated_and_survives_its_coordinators_crash() {
    let mut cluster = start_quick_cluster(
        BrokerOptions::default().prop("offsets.topic.num.partitions", OFFSETS_PARTITIONS),
    );
    create_topic_in(
        &cluster.bootstrap(),
        TOPIC,
        1,
        rdkafka::admin::TopicReplication::Fixed(3),
        &[],
    );

    // A group whose coordinator is not the active controller, and the third node, which only
    // follows the group's partition: pausing it leaves the quorum its majority.
    let controller = describe(&cluster.nodes[0]).topics[0].partitions[0]
        .leader_id
        .0;
    let (group, coordinator) = (0..100)
        .map(|i| format!("commit-failover-{i}"))
        .find_map(|g| {
            let c = find_coordinator(&cluster.nodes[0], &g)?;
            (c != controller).then_some((g, c))
        })
        .expect("a group coordinated by a node that is not the controller");
    let follower = (1..=3)
        .find(|&n| n != coordinator && n != controller)
        .unwrap();
    let partition = offsets_partition(&group);
    // The group's partition is fully replicated before the test starts.
    let deadline = Instant::now() + Duration::from_secs(30);
    while offsets_isr(cluster.node(coordinator), partition) != vec![1, 2, 3] {
        assert!(
            Instant::now() < deadline,
            "__consumer_offsets-{partition} never had all three replicas in sync: {:?}",
            offsets_isr(cluster.node(coordinator), partition)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // As a client does, the first commit is retried while the coordinator is still loading the
    // partition it was just given (COORDINATOR_LOAD_IN_PROGRESS) or not yet serving it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let first: OffsetCommitResponse = raw_request(
            cluster.node(coordinator),
            ApiKey::OffsetCommit,
            8,
            &commit_request(&group, 10),
        );
        if commit_error(&first) == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first commit to node {coordinator} kept failing: {first:?}"
        );
        eprintln!("first commit: error {}; retrying", commit_error(&first));
        std::thread::sleep(Duration::from_millis(200));
    }

    // The follower stops fetching: the coordinator cannot replicate the next commit until the
    // ISR drops it (replica.lag.time.max.ms, or its session timeout).
    cluster.node(follower).pause();
    std::thread::sleep(Duration::from_millis(200));
    let mut s = TcpStream::connect(cluster.node(coordinator).bootstrap()).unwrap();
    s.write_all(&encode_request(ApiKey::OffsetCommit, 8, &commit_request(&group, 20)).unwrap())
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let answer: OffsetCommitResponse = read_response(&mut s, ApiKey::OffsetCommit, 8).unwrap();
    let isr_at_answer = offsets_isr(cluster.node(coordinator), partition);
    assert_eq!(
        commit_error(&answer),
        0,
        "the commit failed although the ISR could shrink: {answer:?}"
    );
    assert!(
        !isr_at_answer.contains(&follower),
        "the commit was answered while the ISR {isr_at_answer:?} still named node {follower}, which is paused and cannot have it"
    );

    // The coordinator crashes right after the answer; the other in-sync replica takes the
    // group over and must have the commit. (The paused node comes back so that the quorum
    // has its majority without the crashed one.)
    cluster.node(coordinator).kill();
    cluster.node(follower).resume();
    let others: Vec<i32> = (1..=3).filter(|&n| n != coordinator).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (new_coordinator, fetched) = loop {
        let found = others.iter().find_map(|&n| {
            let c = find_coordinator(cluster.node(n), &group).filter(|&c| c != coordinator)?;
            match fetch_offset(cluster.node(c), &group) {
                Ok((0, offset)) => Some((c, offset)),
                _ => None,
            }
        });
        if let Some(f) = found {
            break f;
        }
        assert!(
            Instant::now() < deadline,
            "no other node took group {group} over from node {coordinator} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        fetched, 20,
        "node {new_coordinator}, the new coordinator of {group}, lost the commit that node {coordinator} acknowledged"
    );
}
