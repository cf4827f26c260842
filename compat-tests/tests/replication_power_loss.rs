//! Replication through power cuts, on three real `samsa` nodes under the power-loss shim
//! (`compat_tests::power_loss`: SIGKILL, then each data directory keeps only what was
//! fsynced). A topic with replication factor 3 and min.insync.replicas=2 takes an idempotent
//! acks=all producer's numbered records.
//!
//! With `log.durable=true`: a partition's leader, then a follower, loses power (one node at a
//! time, each brought back and caught up before the next); then the whole cluster loses power
//! at once. Every in-sync replica, read from its disk while all are down, still holds every
//! acknowledged record (which needs followers that fsync before their fetches report records
//! to the leader: followers that only wrote to the page cache lost them), and once the nodes
//! are back every acknowledged record is read back exactly once, where it was acknowledged, in
//! order.
//!
//! Without it (Kafka's default, which relies on replication rather than fsync): the same whole-
//! cluster power cut loses acknowledged records from every disk; the test asserts that it does
//! (no fsync runs in between: no segment rolls, checkpoints are an hour apart), and prints how
//! many the cluster still serves once it is back.
//!
//! The default suite runs two single-node cuts; `scripts/chaos` runs more (`POWER_ROUNDS`,
//! default 10; `CHAOS_SEED` replays a run's choice of followers).

mod common;

use std::time::Duration;

use common::acked::{
    check_read_back, leaders_and_isrs, records_on_disk, start_cluster, wait_for_full_isr, Acked,
    Writer,
};
use compat_tests::{BrokerOptions, Cluster};
use rand::{Rng, SeedableRng};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

const TOPIC: &str = "power";
const PARTITIONS: i32 = 3;

/// Three nodes under the shim, the periodic checkpoints (which flush every log) out of the
/// way; the topic created.
fn start(durable: bool) -> Cluster {
    let mut options = BrokerOptions::default()
        .prop("log.durable", durable)
        .prop("log.flush.offset.checkpoint.interval.ms", 3_600_000);
    options.power_loss = true;
    start_cluster(options, TOPIC, PARTITIONS)
}

/// Partition 0's leader and its followers (the other two nodes: replication factor 3).
fn leader_and_followers(cluster: &Cluster) -> (i32, Vec<i32>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let leader = leaders_and_isrs(cluster, TOPIC).map_or(-1, |ps| ps[0].0);
        if leader > 0 {
            return (leader, (1..=3).filter(|&n| n != leader).collect());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "partition 0 has no leader"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every node loses power at once: all are SIGKILLed before any data directory is rolled
/// back. Returns each partition's ISR as it was.
fn whole_cluster_power_cut(cluster: &mut Cluster) -> Vec<Vec<i32>> {
    let isrs: Vec<Vec<i32>> = leaders_and_isrs(cluster, TOPIC)
        .expect("metadata")
        .into_iter()
        .map(|(_, isr)| isr)
        .collect();
    for node in &mut cluster.nodes {
        node.kill();
    }
    for (i, node) in cluster.nodes.iter().enumerate() {
        let lost = compat_tests::power_loss::apply(
            &node.data_dir,
            &compat_tests::power_loss::journal_dir(&node.data_dir),
        )
        .unwrap();
        println!("node {}: the power cut took {lost:?}", i + 1);
    }
    isrs
}

/// The acknowledged records one in-sync replica's disk no longer holds.
struct Missing {
    partition: i32,
    node: i32,
    /// (record number, offset), in record order.
    records: Vec<(u64, i64)>,
}

/// For every partition and member of its ISR, what its disk lacks of the acknowledged records,
/// read from the segment files while every node is down.
fn missing_on_disk(cluster: &mut Cluster, isrs: &[Vec<i32>], acked: &Acked) -> Vec<Missing> {
    let mut out = Vec::new();
    for (partition, isr) in (0..).zip(isrs) {
        for &node in isr {
            let disk = records_on_disk(&cluster.node(node).data_dir, TOPIC, partition);
            let records = acked
                .iter()
                .filter(|(v, (p, offset))| *p == partition && disk.get(offset) != Some(*v))
                .map(|(v, (_, offset))| (*v, *offset))
                .collect();
            out.push(Missing {
                partition,
                node,
                records,
            });
        }
    }
    out
}

fn restart_all(cluster: &mut Cluster) {
    // Together: a voter serves once a majority of voters runs and it has caught up.
    compat_tests::Broker::restart_together(&mut cluster.nodes.iter_mut().collect::<Vec<_>>());
    wait_for_full_isr(cluster, TOPIC, 3, "after the whole-cluster power cut");
}

fn durable_run(rounds: usize) {
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("power cuts with log.durable=true: {rounds} rounds, CHAOS_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut cluster = start(true);
    let writer = Writer::start(&cluster.bootstrap(), TOPIC);
    for round in 0..rounds {
        std::thread::sleep(Duration::from_millis(rng.gen_range(1_000..2_000)));
        let (leader, followers) = leader_and_followers(&cluster);
        let (role, victim) = if round % 2 == 0 {
            ("leader", leader)
        } else {
            ("follower", followers[rng.gen_range(0..followers.len())])
        };
        let lost = cluster.node(victim).power_off();
        println!(
            "round {round}: power cut of node {victim}, partition 0's {role} ({} acknowledged so far): {lost:?}",
            writer.acked()
        );
        std::thread::sleep(Duration::from_millis(rng.gen_range(200..1_500)));
        cluster.node(victim).restart();
        // Back and caught up before the next cut: at most one node is ever without power.
        wait_for_full_isr(&cluster, TOPIC, 3, &format!("round {round} (seed {seed})"));
    }
    let (acked, produced) = writer.finish();
    // Every in-sync replica, followers too, still holds every acknowledged record on disk:
    // with followers that did not fsync before their fetches counted, they did not.
    let isrs = whole_cluster_power_cut(&mut cluster);
    for m in missing_on_disk(&mut cluster, &isrs, &acked) {
        assert!(
            m.records.is_empty(),
            "after a whole-cluster power cut, node {} (in the ISR of partition {}) lacks {} acknowledged records, from offset {:?} (seed {seed})",
            m.node,
            m.partition,
            m.records.len(),
            m.records.iter().map(|r| r.1).min()
        );
    }
    restart_all(&mut cluster);
    check_read_back(
        &cluster,
        TOPIC,
        PARTITIONS,
        &acked,
        produced,
        &format!("power-seed-{seed}"),
    );
}

#[test]
fn durable_acknowledged_records_survive_power_cuts_of_one_node_and_of_all() {
    durable_run(2);
}

#[test]
#[ignore = "long: scripts/chaos runs it"]
fn durable_acknowledged_records_survive_many_power_cuts() {
    durable_run(
        std::env::var("POWER_ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10),
    );
}

#[test]
fn without_durable_a_whole_cluster_power_cut_loses_acknowledged_records() {
    let mut cluster = start(false);
    let writer = Writer::start(&cluster.bootstrap(), TOPIC);
    std::thread::sleep(Duration::from_secs(1));
    let (acked, _) = writer.finish();
    let isrs = whole_cluster_power_cut(&mut cluster);
    // Acknowledged records that no in-sync replica of their partition holds on disk any more.
    let missing = missing_on_disk(&mut cluster, &isrs, &acked);
    let on_no_disk = acked
        .iter()
        .filter(|(v, (p, offset))| {
            missing
                .iter()
                .filter(|m| m.partition == *p)
                .all(|m| m.records.binary_search(&(**v, *offset)).is_ok())
        })
        .count();
    println!(
        "without log.durable, {on_no_disk} of {} acknowledged records are on no disk after a whole-cluster power cut",
        acked.len()
    );
    assert!(
        on_no_disk > 0,
        "every acknowledged record survived on some disk through a power cut without fsync: the shim did not bite"
    );
    restart_all(&mut cluster);
    // Nodes answer from their images before they have re-registered, and a client keeps the
    // leaders it learnt first: ask with a fresh client until the leader answers.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let kept: i64 = (0..PARTITIONS)
        .map(|p| loop {
            let consumer: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", cluster.bootstrap())
                .create()
                .unwrap();
            match consumer.fetch_watermarks(TOPIC, p, Duration::from_secs(10)) {
                Ok((low, high)) => break high - low,
                Err(e) if std::time::Instant::now() < deadline => {
                    println!("watermarks of partition {p}: {e}; asking again");
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => panic!("no watermarks of partition {p}: {e}"),
            }
        })
        .sum();
    println!(
        "without log.durable, {kept} records are left of {} acknowledged after a whole-cluster power cut",
        acked.len()
    );
    assert!(
        (kept as usize) < acked.len(),
        "every acknowledged record survived a whole-cluster power cut without fsync: the shim did not bite"
    );
}
