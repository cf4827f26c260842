//! SIGSTOP of the active controller, which is also a broker, on three real nodes: another
//! voter becomes the active controller, and the two brokers still running must stay unfenced
//! (their heartbeats reach the new controller within its session timeout), so that every
//! partition keeps a leader throughout (those the paused node led move to the others) and
//! producers carry on. Brokers whose heartbeats were stuck with the paused controller, and a
//! new controller that fenced them for heartbeats it never had the chance to receive, took
//! every partition offline.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::BrokerOptions;
use rdkafka::producer::{FutureProducer, FutureRecord};

const TOPIC: &str = "through-the-pause";
const PARTITIONS: i32 = 6;
/// How long the controller stays paused: several session timeouts.
const PAUSE: Duration = Duration::from_secs(12);

/// Each partition's leader, and the brokers, as `node` answers Metadata.
fn leaders_and_brokers(node: &Broker) -> Option<(Vec<i32>, BTreeSet<i32>)> {
    let req = metadata_request(Some(&[TOPIC]));
    let m: kafka_protocol::messages::MetadataResponse = try_raw_request_to(
        &node.bootstrap(),
        kafka_protocol::messages::ApiKey::Metadata,
        12,
        &req,
    )
    .ok()?;
    let mut partitions: Vec<_> = m.topics.first()?.partitions.iter().collect();
    partitions.sort_by_key(|p| p.partition_index);
    let leaders = partitions.iter().map(|p| p.leader_id.0).collect();
    let brokers = m.brokers.iter().map(|b| b.node_id.0).collect();
    Some((leaders, brokers))
}

#[test]
fn pausing_the_active_controller_leaves_every_partition_a_leader() {
    let mut cluster = start_quick_cluster(BrokerOptions::default());
    create_topic_in(
        &cluster.bootstrap(),
        TOPIC,
        PARTITIONS,
        rdkafka::admin::TopicReplication::Fixed(3),
        &[],
    );
    let controller = describe(&cluster.nodes[0]).topics[0].partitions[0]
        .leader_id
        .0;
    let others: Vec<i32> = (1..=3).filter(|&n| n != controller).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while leaders_and_brokers(cluster.node(others[0])).is_none_or(|(l, _)| l.contains(&-1)) {
        assert!(Instant::now() < deadline, "{TOPIC} never had every leader");
        std::thread::sleep(Duration::from_millis(100));
    }

    cluster.node(controller).pause();
    let paused_at = Instant::now();
    let mut offline = Vec::new();
    let mut fenced = Vec::new();
    while paused_at.elapsed() < PAUSE {
        for &n in &others {
            let Some((leaders, brokers)) = leaders_and_brokers(cluster.node(n)) else {
                continue;
            };
            let at = paused_at.elapsed();
            for (p, &leader) in leaders.iter().enumerate() {
                if leader < 0 {
                    offline.push((at, n, p));
                }
            }
            for &live in &others {
                if !brokers.contains(&live) {
                    fenced.push((at, n, live));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The new controller moved every leadership off the paused node.
    let (leaders, _) = leaders_and_brokers(cluster.node(others[0])).unwrap();
    let producer: FutureProducer = rdkafka::config::ClientConfig::new()
        .set(
            "bootstrap.servers",
            others
                .iter()
                .map(|&n| cluster.nodes[(n - 1) as usize].bootstrap())
                .collect::<Vec<_>>()
                .join(","),
        )
        .set("message.timeout.ms", "10000")
        .create()
        .unwrap();
    let produced: Vec<_> = runtime().block_on(async {
        let sends = (0..PARTITIONS).map(|p| {
            producer.send(
                FutureRecord::<str, str>::to(TOPIC)
                    .partition(p)
                    .payload("during the pause"),
                Duration::from_secs(10),
            )
        });
        futures::future::join_all(sends).await
    });
    cluster.node(controller).resume();

    let logs = |n: i32| -> Vec<String> {
        cluster.nodes[(n - 1) as usize]
            .log_lines()
            .into_iter()
            .filter(|l| l.contains("fenced") || l.contains("active controller"))
            .collect()
    };
    assert!(
        offline.is_empty() && fenced.is_empty(),
        "with node {controller}, the active controller, paused: partitions without a leader (time, asked node, partition) {:?}..., running brokers fenced (time, asked node, broker) {:?}...; logs of the running nodes:\n{}\n-----\n{}",
        &offline[..offline.len().min(10)],
        &fenced[..fenced.len().min(10)],
        logs(others[0]).join("\n"),
        logs(others[1]).join("\n"),
    );
    assert!(
        leaders.iter().all(|l| others.contains(l)),
        "after {PAUSE:?} some partition is still led by paused node {controller}: {leaders:?}"
    );
    for (p, r) in produced.iter().enumerate() {
        assert!(
            r.is_ok(),
            "producing to partition {p} during the pause: {r:?}"
        );
    }
}
