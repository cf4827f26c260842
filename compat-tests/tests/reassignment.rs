//! Partition reassignment (KIP-455) on three real `samsa` nodes, one cluster:
//! - a partition with replication factor 2 on nodes {1, 2} moves to {2, 3} (asked of node 1,
//!   which forwards it to the active controller): ListPartitionReassignments shows it in
//!   progress (replicas [2, 3, 1], adding [3], removing [1]) or already done, Metadata ends at
//!   replicas {2, 3} and ISR {2, 3}, node 3's log holds every record produced before and during
//!   the move, node 1's partition directory is gone, and producing and consuming work
//!   throughout;
//! - a replication factor change needs `allow_replication_factor_change` (v1):
//!   INVALID_REPLICATION_FACTOR without it, and with it {1, 2} grows to {1, 2, 3} (asked with
//!   `samsa topic reassign`, whose `--keep-replication-factor` clears the flag);
//! - `samsa topic describe --format json` shows the adding and removing replicas of a move in
//!   progress (none once done);
//! - refusals answer with Kafka's codes: an unregistered broker INVALID_REPLICA_ASSIGNMENT, an
//!   unknown partition UNKNOWN_TOPIC_OR_PARTITION, a cancel with nothing in progress
//!   NO_REASSIGNMENT_IN_PROGRESS.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::acked::records_on_disk;
use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::admin::TopicReplication;
use rdkafka::topic_partition_list::Offset;
use serde_json::json;

fn options() -> BrokerOptions {
    BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("replica.lag.time.max.ms", 3000)
}

/// AlterPartitionReassignments v1 of partition 0 of `topic` to `replicas` (None: cancel), asked
/// of `node`: (top-level code, the partition's code and message).
fn reassign(
    node: &Broker,
    topic: &str,
    partition: i32,
    replicas: Option<&[i32]>,
    allow_replication_factor_change: bool,
) -> (i16, i16, String) {
    let mut p = alter_partition_reassignments_request::ReassignablePartition::default();
    p.partition_index = partition;
    p.replicas = replicas.map(|r| r.iter().map(|&b| BrokerId(b)).collect());
    let mut t = alter_partition_reassignments_request::ReassignableTopic::default();
    t.name = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = vec![p];
    let mut r = AlterPartitionReassignmentsRequest::default();
    r.topics = vec![t];
    r.timeout_ms = 10_000;
    r.allow_replication_factor_change = allow_replication_factor_change;
    let resp: AlterPartitionReassignmentsResponse =
        raw_request(node, ApiKey::AlterPartitionReassignments, 1, &r);
    let p = &resp.responses[0].partitions[0];
    (
        resp.error_code,
        p.error_code,
        p.error_message.as_deref().unwrap_or("").to_string(),
    )
}

/// A reassignment in progress: (replicas, adding, removing).
type Ongoing = (Vec<i32>, Vec<i32>, Vec<i32>);

/// ListPartitionReassignments for every partition, asked of `node`, by (topic, partition).
fn ongoing(node: &Broker) -> BTreeMap<(String, i32), Ongoing> {
    let r = ListPartitionReassignmentsRequest::default();
    let resp: ListPartitionReassignmentsResponse =
        raw_request(node, ApiKey::ListPartitionReassignments, 0, &r);
    assert_eq!(resp.error_code, 0, "{resp:?}");
    let ids = |v: &[BrokerId]| v.iter().map(|b| b.0).collect::<Vec<i32>>();
    resp.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    (t.name.to_string(), p.partition_index),
                    (
                        ids(&p.replicas),
                        ids(&p.adding_replicas),
                        ids(&p.removing_replicas),
                    ),
                )
            })
        })
        .collect()
}

/// Partition 0 of `topic` as `node` describes it: (leader, replicas in order, ISR sorted).
fn partition(node: &Broker, topic: &str) -> (i32, Vec<i32>, Vec<i32>) {
    let m = metadata(node, Some(&[topic]));
    let p = &m.topics[0].partitions[0];
    let mut isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
    isr.sort();
    (
        p.leader_id.0,
        p.replica_nodes.iter().map(|b| b.0).collect(),
        isr,
    )
}

fn values(from: usize, to: usize) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
    (from..to)
        .map(|i| (None, i.to_string().into_bytes()))
        .collect()
}

#[test]
fn a_partition_moves_to_other_brokers_and_leaves_the_old_one() {
    let mut cluster = Cluster::start_with(3, options());
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let bootstrap = cluster.bootstrap();
    let assignment: &[&[i32]] = &[&[1, 2]];
    create_topic_in(
        &bootstrap,
        "moving",
        1,
        TopicReplication::Variable(assignment),
        &[],
    );
    create_topic_in(
        &bootstrap,
        "growing",
        1,
        TopicReplication::Variable(assignment),
        &[],
    );
    for t in ["moving", "growing"] {
        wait_until_none("both replicas in sync", Duration::from_secs(15), || {
            let s = partition(cluster.node(1), t);
            (s.2 != [1, 2]).then(|| format!("{t}: {s:?}"))
        });
    }
    let producer = producer(cluster.node(2), &[("acks", "all")]);
    produce_all(&producer, "moving", &values(0, 100), Some(0));

    // Refusals, with Kafka's codes, and nothing moves.
    let node1 = cluster.node(1);
    let code = |r: (i16, i16, String)| {
        assert_eq!(r.0, 0, "{r:?}");
        r.1
    };
    assert_eq!(
        code(reassign(node1, "moving", 0, Some(&[2, 9]), true)),
        ResponseError::InvalidReplicaAssignment.code()
    );
    assert_eq!(
        code(reassign(node1, "moving", 0, Some(&[2, 2]), true)),
        ResponseError::InvalidReplicaAssignment.code()
    );
    assert_eq!(
        code(reassign(node1, "moving", 7, Some(&[2, 3]), true)),
        ResponseError::UnknownTopicOrPartition.code()
    );
    assert_eq!(
        code(reassign(node1, "moving", 0, None, true)),
        ResponseError::NoReassignmentInProgress.code()
    );
    assert_eq!(
        code(reassign(node1, "growing", 0, Some(&[1, 2, 3]), false)),
        ResponseError::InvalidReplicationFactor.code()
    );
    let (ok, out, err) = samsa_on(
        node1,
        &[
            "topic",
            "reassign",
            "growing",
            "-p",
            "0",
            "-r",
            "1,2,3",
            "--keep-replication-factor",
        ],
    );
    assert!(
        !ok && err.contains("INVALID_REPLICATION_FACTOR"),
        "{out} {err}"
    );
    assert!(ongoing(node1).is_empty());

    // The move, asked of node 1 (which forwards it), and the growth, with the flag.
    let r = reassign(node1, "moving", 0, Some(&[2, 3]), false);
    assert_eq!((r.0, r.1), (0, 0), "{r:?}");
    let (ok, out, err) = samsa_on(
        node1,
        &["topic", "reassign", "growing", "-p", "0", "-r", "1,2,3"],
    );
    assert!(ok, "{out} {err}");
    // In progress, or already done: never anything else.
    if let Some(m) = ongoing(node1).get(&("moving".to_string(), 0)) {
        assert_eq!(m, &(vec![2, 3, 1], vec![3], vec![1]));
    }
    // Asked again if leadership moves between its Metadata and its ListOffsets (the move may
    // complete meanwhile: NOT_LEADER_OR_FOLLOWER, as kafka-topics.sh would meet it too).
    let mut tries = 0;
    let out = loop {
        let (ok, out, err) = samsa_on(node1, &["topic", "describe", "moving", "--format", "json"]);
        tries += 1;
        if ok {
            break out;
        }
        assert!(tries < 5 && err.contains("NOT_LEADER_OR_FOLLOWER"), "{err}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &d["partitions"][0];
    let moving = (
        &p["replicas"],
        &p["adding_replicas"],
        &p["removing_replicas"],
    );
    // `topic describe` reads the replicas (Metadata) and the moves (ListPartitionReassignments)
    // in two requests, as kafka-topics.sh --describe does: a move that completes between them
    // shows the replicas from before it with no move left.
    assert!(
        moving == (&json!([2, 3, 1]), &json!([3]), &json!([1]))
            || moving == (&json!([2, 3]), &json!([]), &json!([]))
            || moving == (&json!([2, 3, 1]), &json!([]), &json!([])),
        "{p}"
    );
    // Producing goes on during the move.
    produce_all(&producer, "moving", &values(100, 200), Some(0));

    for (t, want) in [("moving", vec![2, 3]), ("growing", vec![1, 2, 3])] {
        wait_until_none("the move completes", Duration::from_secs(20), || {
            let s = partition(cluster.node(2), t);
            let mut replicas = s.1.clone();
            replicas.sort();
            (replicas != want || s.2 != want).then(|| format!("{t}: {s:?}"))
        });
    }
    assert!(ongoing(cluster.node(3)).is_empty());
    assert_eq!(partition(cluster.node(3), "moving").1, vec![2, 3]);
    produce_all(&producer, "moving", &values(200, 250), Some(0));

    // Node 1 stopped being a replica: its copy is deleted.
    let gone = cluster.node(1).data_dir.join("moving-0");
    wait_until_none("node 1 deletes its copy", Duration::from_secs(10), || {
        gone.exists()
            .then(|| format!("{} still exists", gone.display()))
    });
    assert!(cluster.node(1).data_dir.join("growing-0").exists());

    // Node 3 holds every record (its own log, read from disk), and a consumer reads them all.
    let want: BTreeMap<i64, u64> = (0..250).map(|i| (i as i64, i as u64)).collect();
    let node3_dir = cluster.node(3).data_dir.clone();
    wait_until_none("node 3 has every record", Duration::from_secs(10), || {
        let got = records_on_disk(&node3_dir, "moving", 0);
        (got != want).then(|| format!("{} records of 250", got.len()))
    });
    let consumer = assigned_consumer(cluster.node(3), "moving", &[0], Offset::Beginning);
    let got = consume_n(&consumer, 250, Duration::from_secs(15));
    let got: Vec<String> = got
        .iter()
        .map(|g| String::from_utf8_lossy(&g.value).into_owned())
        .collect();
    let expected: Vec<String> = (0..250).map(|i| i.to_string()).collect();
    assert_eq!(got, expected);
}
