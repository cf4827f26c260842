//! Replication on real processes under faults: three `samsa` nodes, a topic with replication
//! factor 3 and min.insync.replicas=2, an idempotent acks=all librdkafka producer writing
//! numbered records without pause, while a nemesis SIGKILLs, SIGSTOPs or SIGTERMs one random
//! node at a time and brings it back. Afterwards every node is back in every ISR and everything
//! is read back: every acknowledged record is there exactly once, nothing is there that was
//! never produced, and each partition holds its records in the order they were produced.
//!
//! The default suite runs a short version (three faults); `scripts/chaos` runs the long one
//! (`CHAOS_ROUNDS`, default 20, and `CHAOS_SEED` to replay a run's choice of faults).

mod common;

use std::time::Duration;

use common::acked::{check_read_back, start_cluster, wait_for_full_isr, Writer};
use compat_tests::BrokerOptions;
use rand::{Rng, SeedableRng};

const TOPIC: &str = "chaos";
const PARTITIONS: i32 = 6;

fn run(rounds: usize) {
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("replication chaos: {rounds} rounds, CHAOS_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut cluster = start_cluster(BrokerOptions::default(), TOPIC, PARTITIONS);
    let writer = Writer::start(&cluster.bootstrap(), TOPIC);

    for round in 0..rounds {
        std::thread::sleep(Duration::from_millis(rng.gen_range(500..2_000)));
        let victim = rng.gen_range(1..=3);
        let fault = rng.gen_range(0..3);
        let name = ["SIGKILL", "SIGSTOP", "SIGTERM"][fault];
        println!(
            "round {round}: {name} node {victim} ({} acknowledged so far)",
            writer.acked()
        );
        match fault {
            0 => {
                cluster.node(victim).kill();
                std::thread::sleep(Duration::from_millis(rng.gen_range(500..5_000)));
                cluster.node(victim).restart();
            }
            1 => {
                cluster.node(victim).pause();
                std::thread::sleep(Duration::from_millis(rng.gen_range(500..5_000)));
                cluster.node(victim).resume();
            }
            _ => {
                cluster.node(victim).stop();
                std::thread::sleep(Duration::from_millis(rng.gen_range(500..3_000)));
                cluster.node(victim).restart();
            }
        }
        // Healed before the next fault: at most one node is ever faulty.
        wait_for_full_isr(&cluster, TOPIC, 3, &format!("round {round} (seed {seed})"));
    }
    let (acked, produced) = writer.finish();
    check_read_back(
        &cluster,
        TOPIC,
        PARTITIONS,
        &acked,
        produced,
        &format!("chaos-seed-{seed}"),
    );
}

#[test]
fn acknowledged_records_survive_three_faults() {
    run(3);
}

#[test]
#[ignore = "long: scripts/chaos runs it"]
fn acknowledged_records_survive_many_faults() {
    run(std::env::var("CHAOS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20));
}
