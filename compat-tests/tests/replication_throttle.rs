//! Replication throttles (KIP-73) on three real `samsa` nodes: two topics of 32 MiB each on
//! nodes {1, 2}, one partition each, move to {2, 3}.
//! - Without a throttle the copy to node 3 runs at full speed.
//! - With `samsa topic reassign --throttle 4194304` (4 MiB/s, set as
//!   `kafka-reassign-partitions.sh --throttle` sets it: both rates on brokers 1, 2, 3, the
//!   topic's leader list naming the current replicas and its follower list the new one) it
//!   takes about size / rate: the test asks for at least 60% of that, never an upper bound.
//!   The leader's and the follower's throttles both held partitions back (their metrics say
//!   so), and every record reached node 3.
//! - `samsa topic reassign --verify` with no move left removes the throttle: the topic's lists
//!   and the brokers' rates are gone.
//!
//! The figures are printed (`--nocapture`), e.g. "unthrottled 32 MiB in 1.2 s, throttled at 4
//! MiB/s in 8.4 s". `THROTTLE_TEST_MIB` makes the topics larger for a longer run.

mod common;

use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::TopicReplication;

const RATE: u64 = 4 * 1024 * 1024;
const RECORD_BYTES: usize = 64 * 1024;

/// Partition 0 of `topic` as `node` describes it: (replicas sorted, ISR sorted).
fn replicas_and_isr(node: &Broker, topic: &str) -> (Vec<i32>, Vec<i32>) {
    let m = metadata(node, Some(&[topic]));
    let p = &m.topics[0].partitions[0];
    let mut replicas: Vec<i32> = p.replica_nodes.iter().map(|b| b.0).collect();
    let mut isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
    replicas.sort();
    isr.sort();
    (replicas, isr)
}

/// Node `id` (1-based) of `cluster`.
fn at(cluster: &compat_tests::Cluster, id: i32) -> &Broker {
    &cluster.nodes[(id - 1) as usize]
}

/// The configs of one resource that are set (not defaults), as `node` describes them.
fn set_configs_of(node: &Broker, resource_type: i8, name: &str) -> Vec<(String, String)> {
    let mut r = DescribeConfigsResource::default();
    r.resource_type = resource_type;
    r.resource_name = StrBytes::from_string(name.to_string());
    r.configuration_keys = None;
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    let resp: DescribeConfigsResponse = raw_request(node, ApiKey::DescribeConfigs, 4, &req);
    let r = &resp.results[0];
    assert_eq!(r.error_code, 0, "{r:?}");
    // 5: DEFAULT_CONFIG.
    r.configs
        .iter()
        .filter(|c| c.config_source != 5 && c.name.contains("replication.throttled"))
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_deref().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Moves partition 0 of `topic` from {1, 2} to {2, 3} with `samsa topic reassign` (and
/// `extra` arguments); the time until node 3 is a replica in the ISR and node 1 is gone.
fn move_and_time(cluster: &compat_tests::Cluster, topic: &str, extra: &[&str]) -> Duration {
    let node1 = at(cluster, 1);
    let mut args = vec!["topic", "reassign", topic, "-p", "0", "-r", "2,3"];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let (ok, out, err) = samsa_on(node1, &args);
    assert!(ok, "{out} {err}");
    wait_until_none("the move completes", Duration::from_secs(120), || {
        let s = replicas_and_isr(at(cluster, 2), topic);
        (s != (vec![2, 3], vec![2, 3])).then(|| format!("{topic}: {s:?}"))
    });
    started.elapsed()
}

#[test]
fn a_throttled_reassignment_copies_at_about_the_throttle_rate() {
    let mib: usize = std::env::var("THROTTLE_TEST_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let cluster = start_quick_cluster(compat_tests::BrokerOptions::default());
    let bootstrap = cluster.bootstrap();
    let assignment: &[&[i32]] = &[&[1, 2]];
    for t in ["free", "throttled"] {
        create_topic_in(
            &bootstrap,
            t,
            1,
            TopicReplication::Variable(assignment),
            &[],
        );
    }
    let producer = producer(
        at(&cluster, 2),
        &[
            ("acks", "all"),
            ("linger.ms", "5"),
            ("batch.size", "1048576"),
        ],
    );
    let records = mib * 1024 * 1024 / RECORD_BYTES;
    let values: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..records)
        .map(|i| (None, vec![(i % 251) as u8; RECORD_BYTES]))
        .collect();
    for t in ["free", "throttled"] {
        for chunk in values.chunks(64) {
            produce_all(&producer, t, chunk, Some(0));
        }
        wait_until_none("both replicas in sync", Duration::from_secs(30), || {
            let s = replicas_and_isr(at(&cluster, 1), t);
            (s.1 != [1, 2]).then(|| format!("{t}: {s:?}"))
        });
    }

    let unthrottled = move_and_time(&cluster, "free", &[]);
    let rate = RATE.to_string();
    let throttled = move_and_time(&cluster, "throttled", &["--throttle", &rate]);
    let size = (records * RECORD_BYTES) as f64;
    let expected = size / RATE as f64;
    println!(
        "unthrottled {mib} MiB in {:.1} s ({:.0} MiB/s); throttled at {} MiB/s in {:.1} s \
         (size / rate = {expected:.1} s, {:.2} MiB/s achieved)",
        unthrottled.as_secs_f64(),
        mib as f64 / unthrottled.as_secs_f64(),
        RATE / (1024 * 1024),
        throttled.as_secs_f64(),
        mib as f64 / throttled.as_secs_f64(),
    );
    assert!(
        throttled.as_secs_f64() >= 0.6 * expected,
        "the throttled copy of {mib} MiB at {RATE} B/s took {throttled:?}, under 60% of {expected:.1} s"
    );

    // Both ends held the copy back, and recorded its bytes.
    let leader = metadata(at(&cluster, 2), Some(&["throttled"])).topics[0].partitions[0]
        .leader_id
        .0;
    let held_leader = metric(
        at(&cluster, leader),
        "samsa_replication_throttle_held_back_total{direction=\"leader\"}",
    );
    let held_follower = metric(
        at(&cluster, 3),
        "samsa_replication_throttle_held_back_total{direction=\"follower\"}",
    );
    let leader_bytes = (1..=2)
        .map(|n| {
            metric(
                at(&cluster, n),
                "samsa_replication_throttled_bytes_total{direction=\"leader\"}",
            )
        })
        .sum::<f64>();
    let follower_bytes = metric(
        at(&cluster, 3),
        "samsa_replication_throttled_bytes_total{direction=\"follower\"}",
    );
    println!(
        "held back: leader {held_leader}, follower {held_follower}; recorded: leader {leader_bytes} B, follower {follower_bytes} B"
    );
    assert!(held_leader + held_follower > 0.0, "nothing was held back");
    assert!(follower_bytes >= size, "{follower_bytes} of {size} bytes");
    assert!(leader_bytes >= size, "{leader_bytes} of {size} bytes");
    // The unthrottled topic's copy counted against no quota.
    assert!(follower_bytes < 2.0 * size, "{follower_bytes}");

    // Node 3 has every record.
    let hw = |n: i32| {
        metric(
            at(&cluster, n),
            "samsa_partition_high_watermark{topic=\"throttled\",partition=\"0\"}",
        )
    };
    wait_until_none("node 3 has every record", Duration::from_secs(10), || {
        (hw(3) < records as f64).then(|| format!("{} of {records}", hw(3)))
    });

    // The throttle is set until --verify finds no move left, then gone.
    assert_eq!(
        set_configs_of(at(&cluster, 1), 2, "throttled"),
        vec![
            (
                "follower.replication.throttled.replicas".to_string(),
                "0:3".to_string()
            ),
            (
                "leader.replication.throttled.replicas".to_string(),
                "0:1,0:2".to_string()
            ),
        ]
    );
    assert_eq!(set_configs_of(at(&cluster, 3), 4, "3").len(), 2);
    let (ok, out, err) = samsa_on(
        at(&cluster, 1),
        &[
            "topic",
            "reassign",
            "throttled",
            "--verify",
            "--format",
            "json",
        ],
    );
    assert!(ok, "{out} {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["in_progress"], serde_json::json!([]), "{v}");
    assert_eq!(
        v["throttle_cleared_on"],
        serde_json::json!([1, 2, 3]),
        "{v}"
    );
    wait_until_none("the throttle is gone", Duration::from_secs(10), || {
        let left: Vec<_> = [(1, 2i8, "throttled"), (1, 4, "1"), (2, 4, "2"), (3, 4, "3")]
            .iter()
            .flat_map(|(node, t, n)| set_configs_of(at(&cluster, *node), *t, n))
            .collect();
        (!left.is_empty()).then(|| format!("{left:?}"))
    });
}
