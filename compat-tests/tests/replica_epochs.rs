//! KIP-903 on three real `samsa` processes: a follower's Fetch (v15) names the broker epoch of
//! its incarnation in `replica_state`, and a leader refuses one that names an epoch older than
//! the follower's registration in its metadata image (NOT_LEADER_OR_FOLLOWER), so that what a
//! former incarnation fetched (before a restart that may have cut its log short) is never
//! counted toward the high watermark or the ISR. The replica fetchers name their epoch: the
//! followers replicate and stay in the ISR through a restart of one of them.

mod common;

use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, FetchResponse};
use kafka_protocol::ResponseError;
use rdkafka::admin::TopicReplication;

/// The broker epoch `node` last registered with, from its log.
fn broker_epoch(node: &Broker) -> i64 {
    node.log_lines()
        .iter()
        .rev()
        .find_map(|l| {
            l.contains("registered with the active controller")
                .then(|| l.split("broker_epoch=").nth(1))
                .flatten()
                .and_then(|e| e.split_whitespace().next())
                .and_then(|e| e.parse().ok())
        })
        .expect("the node logged its registration")
}

/// A Fetch v15 of partition 0 of `topic` (by id) as follower `replica` at `epoch`.
fn follower_fetch(
    leader: &Broker,
    topic_id: uuid::Uuid,
    replica: i32,
    epoch: i64,
    offset: i64,
) -> i16 {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1 << 20;
    p.current_leader_epoch = -1;
    p.last_fetched_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic_id = topic_id;
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.replica_state.replica_id = BrokerId(replica);
    req.replica_state.replica_epoch = epoch;
    req.max_wait_ms = 0;
    req.max_bytes = 1 << 20;
    req.session_epoch = -1;
    req.topics = vec![t];
    let r: FetchResponse = raw_request(leader, ApiKey::Fetch, 15, &req);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.responses[0].partitions[0].error_code
}

/// Partition 0 of `topic` as `node` describes it: (topic id, leader, ISR).
fn partition_0(node: &Broker, topic: &str) -> (uuid::Uuid, i32, Vec<i32>) {
    let m = metadata(node, Some(&[topic]));
    let t = &m.topics[0];
    assert_eq!(t.error_code, 0, "{m:?}");
    let p = &t.partitions[0];
    (
        t.topic_id,
        p.leader_id.0,
        p.isr_nodes.iter().map(|b| b.0).collect(),
    )
}

#[test]
fn a_leader_refuses_the_fetches_of_a_former_incarnation_of_its_follower() {
    let options = BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500);
    let mut cluster = Cluster::start_with(3, options);
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let topic = "epochs";
    create_topic_in(
        &cluster.bootstrap(),
        topic,
        1,
        TopicReplication::Fixed(3),
        &[],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let (id, leader, _) = loop {
        let (id, leader, isr) = partition_0(&cluster.nodes[0], topic);
        if leader > 0 && isr.len() == 3 {
            break (id, leader, isr);
        }
        assert!(Instant::now() < deadline, "the ISR never filled");
        std::thread::sleep(Duration::from_millis(200));
    };
    let follower = (1..=3).find(|&n| n != leader).unwrap();
    let epoch = broker_epoch(cluster.node(follower));

    // The follower's own epoch is accepted, an older one refused; one the leader does not know
    // yet (a registration its image has not reached) is served but not counted for the ISR.
    let l = &cluster.nodes[(leader - 1) as usize];
    assert_eq!(follower_fetch(l, id, follower, epoch, 0), 0);
    assert_eq!(
        follower_fetch(l, id, follower, epoch - 1, 0),
        ResponseError::NotLeaderOrFollower.code()
    );
    assert_eq!(follower_fetch(l, id, follower, -1, 0), 0, "no epoch named");

    // The follower restarts and registers anew: its former epoch is now refused, and the
    // replica fetchers of the new incarnation bring it back into the ISR.
    cluster.node(follower).kill();
    cluster.node(follower).restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let node = cluster.node(follower);
        let new_epoch = node
            .log_lines()
            .iter()
            .any(|l| l.contains("registered with the active controller"))
            .then(|| broker_epoch(node));
        if let Some(new_epoch) = new_epoch.filter(|&e| e > epoch) {
            let l = &cluster.nodes[(leader - 1) as usize];
            // The leader's image may not hold the new registration yet.
            if follower_fetch(l, id, follower, epoch, 0)
                == ResponseError::NotLeaderOrFollower.code()
            {
                assert!(new_epoch > epoch);
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the leader still takes the former incarnation's fetches"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while partition_0(&cluster.nodes[(leader - 1) as usize], topic)
        .2
        .len()
        < 3
    {
        assert!(
            Instant::now() < deadline,
            "the restarted follower never rejoined the ISR"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
