//! Client quotas on three real `samsa` nodes: a `producer_byte_rate` set through one broker
//! (AlterClientQuotas, which it forwards to the controller) reaches every broker's metadata
//! image, and each broker throttles a librdkafka producer over it (the producer writes to a
//! partition led by each node and its `throttle_cb` names the brokers that throttled it), while
//! an unquoted client beside it is not throttled. Killing the active controller loses nothing:
//! the survivors still describe and enforce the quota, and so does the killed node once
//! restarted. Quotas are per broker (as in Kafka), measured here over `quota.window.num=3`.

mod common;

use std::time::{Duration, Instant};

use common::*;
use rdkafka::admin::TopicReplication;
use serde_json::{json, Value};

const CLIENT: &str = "cluster-quota";
const QUOTA_BPS: f64 = 100_000.0;

fn want() -> DescribedQuota {
    (
        vec![("client-id".to_string(), Some(CLIENT.to_string()))],
        vec![("producer_byte_rate".to_string(), QUOTA_BPS)],
    )
}

/// Waits until `node` describes the quota.
fn wait_described(node: &Broker) {
    wait_until_none(
        &format!("node {} describes the quota", node.port),
        Duration::from_secs(20),
        || {
            let got = describe_client_quotas(node);
            (!got.contains(&want())).then(|| format!("{got:?}"))
        },
    );
}

/// Produces for 4 s as the quoted client (about 3x the quota per node) to `partitions` of "spread" (each
/// led by its own node) and, beside it, as an unquoted client at a modest rate: the broker ids
/// that throttled the quoted producer, and the unquoted one's throttle events.
fn probe(bootstrap: &str, partitions: &[i32]) -> (Vec<i32>, Value) {
    let spec = |client_id: &str, rate: Option<f64>| {
        json!({
            "kind": "produce", "client_id": client_id, "topic": "spread",
            "partitions": partitions, "rate": rate, "record_bytes": 10_000,
            "seconds": 4.0, "warmup": 0.0, "config": {"acks": "1", "linger.ms": 5},
        })
    };
    let got = quota_clients(
        bootstrap,
        &json!([
            spec(CLIENT, Some(3.0 * QUOTA_BPS * partitions.len() as f64)),
            spec("cluster-free", Some(QUOTA_BPS)),
        ]),
    );
    let by: Vec<i32> = got[0]["throttled_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_i64().unwrap() as i32)
        .collect();
    (by, got[1]["throttles"].clone())
}

/// Waits until partition `id - 1` of "spread" is led by node `id` again, as `node` sees it.
fn wait_led_by(node: &Broker, id: i32) {
    wait_until_none(
        "the partition has its leader back",
        Duration::from_secs(30),
        || {
            let m = metadata(node, Some(&["spread"]));
            let leader = m.topics[0]
                .partitions
                .iter()
                .find(|p| p.partition_index == id - 1)
                .map(|p| p.leader_id.0);
            (leader != Some(id)).then(|| format!("leader {leader:?}"))
        },
    );
}

#[test]
fn a_quota_set_through_one_broker_is_enforced_by_every_broker_and_survives_a_controller_failover() {
    let mut cluster = start_quick_cluster(BrokerOptions::default().prop("quota.window.num", 3));
    let assignment: &[&[i32]] = &[&[1], &[2], &[3]];
    create_topic_in(
        &cluster.bootstrap(),
        "spread",
        3,
        TopicReplication::Variable(assignment),
        &[],
    );
    for id in 1..=3 {
        wait_led_by(&cluster.nodes[0], id);
    }

    let set_at = Instant::now();
    alter_client_quotas(
        &cluster.nodes[1],
        &[("client-id", Some(CLIENT))],
        &[("producer_byte_rate", Some(QUOTA_BPS))],
    );
    for node in &cluster.nodes {
        wait_described(node);
    }
    println!(
        "set through node 2, described by all three nodes {:?} later",
        set_at.elapsed()
    );
    let (by, free) = probe(&cluster.bootstrap(), &[0, 1, 2]);
    assert_eq!(
        by,
        vec![1, 2, 3],
        "the brokers that throttled the quoted producer"
    );
    assert_eq!(free, 0, "the unquoted producer was throttled");

    // The active controller dies: the survivors elect another and keep the quota.
    let (controller, _, hw) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    cluster.node(controller).kill();
    let survivors: Vec<i32> = (1..=3).filter(|&id| id != controller).collect();
    let (next, _, _) = settled(cluster.node(survivors[0]), 2, hw, Duration::from_secs(30));
    assert_ne!(next, controller);
    for &id in &survivors {
        wait_described(cluster.node(id));
    }
    let partitions: Vec<i32> = survivors.iter().map(|id| id - 1).collect();
    let (by, _) = probe(&cluster.bootstrap(), &partitions);
    assert_eq!(by, survivors, "after the failover to node {next}");

    // The killed node comes back with the quota (from its own log) and enforces it too.
    cluster.node(controller).restart();
    settled(cluster.node(controller), 3, hw, Duration::from_secs(30));
    wait_described(cluster.node(controller));
    wait_led_by(cluster.node(survivors[0]), controller);
    let (by, free) = probe(&cluster.bootstrap(), &[0, 1, 2]);
    assert_eq!(by, vec![1, 2, 3], "after node {controller} restarted");
    assert_eq!(free, 0, "the unquoted producer was throttled");
    println!("node {controller} (the controller) killed, node {next} took over; quota kept");
}
