//! The metadata quorum on real processes under faults: three `samsa` nodes writing metadata
//! records fast (a no-op every 20 ms, plus the brokers' registrations and heartbeats) while
//! a random node is killed with SIGKILL, paused with SIGSTOP or stopped with SIGTERM and brought
//! back, round after round. After every round a leader must be elected; at the end every node
//! must hold the same batches (offsets, leader epochs, CRCs) wherever their logs overlap, and
//! each must reach the final high watermark. A fault that made two nodes commit different
//! records, or lose a committed one, shows as a mismatch.
//!
//! Long by design: `scripts/chaos` runs it (`CHAOS_ROUNDS`, default 20, `CHAOS_NODES`, default
//! 3, and `CHAOS_SEED`); the default suite does not.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use rand::{Rng, SeedableRng};

fn describe(node: &Broker) -> Option<DescribeQuorumResponse> {
    let r = describe_quorum_request();
    // A node may be paused or restarting: a failed request is "no answer", not a failure.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        raw_request(node, ApiKey::DescribeQuorum, 2, &r)
    }))
    .ok()
}

/// Waits for a leader seen from any running node; returns (leader, epoch, high watermark).
fn leader(cluster: &Cluster, timeout: Duration) -> (i32, i32, i64) {
    let deadline = Instant::now() + timeout;
    loop {
        for n in cluster.nodes.iter().filter(|n| n.is_running()) {
            if let Some(r) = describe(n) {
                let p = &r.topics[0].partitions[0];
                if p.error_code == 0 && p.leader_id.0 >= 0 {
                    return (p.leader_id.0, p.leader_epoch, p.high_watermark);
                }
            }
        }
        assert!(Instant::now() < deadline, "no leader within {timeout:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// (base offset) -> (last offset, partition leader epoch, crc) of every batch of a node's
/// metadata log, read with `samsa dump-log`.
fn batches(data_dir: &Path) -> BTreeMap<i64, (i64, i64, i64)> {
    let dir = data_dir.join("__cluster_metadata-0");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("log") {
            continue;
        }
        let output = Command::new(compat_tests::samsa_bin())
            .arg("dump-log")
            .arg(&path)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "dump-log {}: {output:?}",
            path.display()
        );
        let v: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        for b in v["batches"].as_array().unwrap() {
            assert_eq!(b["valid"], true, "{}: {b}", path.display());
            out.insert(
                b["base_offset"].as_i64().unwrap(),
                (
                    b["last_offset"].as_i64().unwrap(),
                    b["partition_leader_epoch"].as_i64().unwrap(),
                    b["crc"].as_i64().unwrap(),
                ),
            );
        }
    }
    out
}

#[test]
#[ignore = "long: run by scripts/chaos"]
fn the_quorum_agrees_on_every_batch_through_kills_pauses_and_restarts() {
    let rounds: usize = std::env::var("CHAOS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random);
    let nodes: i32 = std::env::var("CHAOS_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    eprintln!("chaos: {nodes} nodes, {rounds} rounds, CHAOS_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let options = BrokerOptions::default()
        .prop("metadata.max.idle.interval.ms", 20)
        .prop("metadata.log.max.record.bytes.between.snapshots", 20_000);
    let mut cluster = Cluster::start_with(nodes as usize, options);
    let (_, mut epoch, _) = leader(&cluster, Duration::from_secs(30));
    for round in 0..rounds {
        let victim = rng.gen_range(1..=nodes);
        let fault = rng.gen_range(0..3);
        let away = Duration::from_millis(rng.gen_range(200..4000));
        eprintln!("round {round}: node {victim}, fault {fault}, {away:?}");
        match fault {
            0 => {
                cluster.node(victim).kill();
                std::thread::sleep(away);
                cluster.node(victim).restart();
            }
            1 => {
                cluster.node(victim).pause();
                std::thread::sleep(away);
                cluster.node(victim).resume();
            }
            _ => {
                cluster.node(victim).stop();
                std::thread::sleep(away);
                cluster.node(victim).restart();
            }
        }
        let (_, e, _) = leader(&cluster, Duration::from_secs(30));
        assert!(
            e >= epoch,
            "round {round}: epoch went back from {epoch} to {e}"
        );
        epoch = e;
    }
    // Let everyone catch up to one high watermark, then compare the logs at rest.
    let (_, _, hw) = leader(&cluster, Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = describe(&cluster.nodes[0]).expect("node 1 answers");
        let p = &r.topics[0].partitions[0];
        if p.current_voters.iter().all(|v| v.log_end_offset >= hw) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every voter reached {hw}: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for n in &mut cluster.nodes {
        n.stop();
    }
    let logs: Vec<_> = cluster.nodes.iter().map(|n| batches(&n.data_dir)).collect();
    for (i, log) in logs.iter().enumerate() {
        let end = log.values().map(|(last, _, _)| last + 1).max().unwrap_or(0);
        assert!(
            end >= hw,
            "node {} ends at {end}, below the high watermark {hw}",
            i + 1
        );
    }
    let mut compared = 0;
    for (base, batch) in &logs[0] {
        for (j, other) in logs.iter().enumerate().skip(1) {
            if let Some(b) = other.get(base) {
                if *base < hw {
                    assert_eq!(
                        b,
                        batch,
                        "node {} differs from node 1 at offset {base}",
                        j + 1
                    );
                    compared += 1;
                }
            }
        }
    }
    eprintln!("chaos: high watermark {hw}, {compared} committed batches compared");
    assert!(
        compared > 0,
        "the logs never overlapped: nothing was compared"
    );
}

#[test]
#[ignore = "a measurement: run by scripts/chaos"]
fn how_long_a_cluster_is_without_a_leader_after_the_leader_is_killed() {
    // SIGKILL the leader, time until another node reports a new leader (polled every 10 ms),
    // restart the killed node, repeat. Printed as milliseconds and as a ratio of
    // controller.quorum.election.timeout.ms, which bounds what a follower waits before it stands
    // (after controller.quorum.fetch.timeout.ms without the leader).
    let rounds: usize = std::env::var("CHAOS_FAILOVERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let mut cluster = Cluster::start(3);
    let mut took = Vec::new();
    for _ in 0..rounds {
        let (old, epoch, _) = leader(&cluster, Duration::from_secs(30));
        cluster.node(old).kill();
        let started = Instant::now();
        loop {
            let (l, e, _) = leader(&cluster, Duration::from_secs(30));
            if l != old && e > epoch {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        took.push(started.elapsed());
        cluster.node(old).restart();
        let _ = leader(&cluster, Duration::from_secs(30));
        std::thread::sleep(Duration::from_secs(1));
    }
    took.sort();
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let median = ms(&took[took.len() / 2]);
    let max = ms(took.last().unwrap());
    eprintln!(
        "failover: {rounds} kills of the leader; median {median:.0} ms, max {max:.0} ms without a leader; {:.2}x / {:.2}x of fetch timeout + election timeout (3000 ms)",
        median / 3000.0,
        max / 3000.0
    );
}
