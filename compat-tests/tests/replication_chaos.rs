//! Replication on real processes under faults: three `samsa` nodes, topics with replication
//! factor 3 and min.insync.replicas=2, and three librdkafka workloads writing without pause
//! while a nemesis strikes one node at a time and heals it before the next round:
//!
//! - an idempotent acks=all producer of numbered records (`chaos`): every acknowledged record
//!   is read back exactly once, where it was acknowledged, each partition in produce order;
//! - a non-idempotent acks=all producer (`chaos-plain`): every acknowledged record is read back
//!   where it was acknowledged, copies allowed (retries may write twice), order not required;
//! - a transactional producer (`chaos-txn`) writing transactions of 1 to 8 records over random
//!   partitions, committing most and aborting one in five on purpose: a read_committed reader
//!   sees every committed transaction whole, nothing of one never asked to commit, and a
//!   transaction whose commit returned an error whole or not at all, never in part.
//!
//! Nothing is ever read that was never produced. The nemesis's faults: SIGKILL, SIGSTOP or
//! SIGTERM of a random node or SIGKILL of the transaction coordinator (process faults, on
//! 127.0.0.1); and network partitions, with each node in a network namespace of its own
//! (`compat_tests::NetLab`, root only): the node leading the most partitions, a follower, the
//! active controller or the transaction coordinator cut off from its peers while clients still
//! reach it, or a random node cut off from everyone.
//!
//! The default suite runs two short versions (three process faults; three partitions, skipped
//! without root), one at a time; `scripts/chaos` runs the long one with every fault
//! (`CHAOS_ROUNDS`, default 20, and `CHAOS_SEED` to replay a run's choice of faults).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::acked::{show_partition, KeepLog};
use common::*;
use compat_tests::{BrokerOptions, Cluster, NetLab};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

/// The idempotent producer's topic.
const TOPIC: &str = "chaos";
/// The non-idempotent producer's topic.
const PLAIN_TOPIC: &str = "chaos-plain";
/// The transactional producer's topic.
const TXN_TOPIC: &str = "chaos-txn";
const TOPICS: [&str; 3] = [TOPIC, PLAIN_TOPIC, TXN_TOPIC];
const TRANSACTIONAL_ID: &str = "chaos-txn";
const PARTITIONS: i32 = 6;
const NODES: usize = 3;
/// How long reading everything back may take.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// One cluster at a time: two on two cores would slow each other into timeouts.
static ONE_CLUSTER: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// SIGKILL a random node, restart it.
    Kill,
    /// SIGSTOP a random node (a pause, a partition from everyone), SIGCONT it.
    Stop,
    /// SIGTERM a random node (the clean shutdown path), restart it.
    Term,
    /// SIGKILL the transaction coordinator of [`TRANSACTIONAL_ID`], restart it.
    KillCoordinator,
    /// The node leading the most partitions of the workloads' topics loses its peers.
    CutLeader,
    /// A follower of a random partition (not the active controller when another will do)
    /// loses its peers.
    CutFollower,
    /// The active controller loses its peers.
    CutController,
    /// The transaction coordinator loses its peers.
    CutCoordinator,
    /// A random node loses everyone, clients included.
    Isolate,
}

const PROCESS_FAULTS: [Fault; 4] = [
    Fault::Kill,
    Fault::Stop,
    Fault::Term,
    Fault::KillCoordinator,
];
const PARTITION_FAULTS: [Fault; 5] = [
    Fault::CutLeader,
    Fault::CutFollower,
    Fault::CutController,
    Fault::CutCoordinator,
    Fault::Isolate,
];

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        // A request to a node cut off by a partition is given up on after this, not 60 s.
        .set("socket.timeout.ms", "10000");
    c
}

/// `req` asked of the running nodes in turn: the first answer (None if none answers).
fn ask<Req: kafka_protocol::protocol::Encodable, Resp: kafka_protocol::protocol::Decodable>(
    cluster: &Cluster,
    key: ApiKey,
    version: i16,
    req: &Req,
) -> Option<Resp> {
    cluster
        .nodes
        .iter()
        .filter(|n| n.is_running())
        .find_map(|n| try_raw_request_to(&n.bootstrap(), key, version, req).ok())
}

/// A partition as a node describes it.
#[derive(Debug)]
struct PartitionState {
    topic: String,
    index: i32,
    leader: i32,
    isr: Vec<i32>,
}

/// Every partition of `topics` (None: all) as some running node describes it.
fn partitions(cluster: &Cluster, topics: Option<&[&str]>) -> Option<Vec<PartitionState>> {
    let m: MetadataResponse = ask(cluster, ApiKey::Metadata, 12, &metadata_request(topics))?;
    if m.topics.iter().any(|t| t.error_code != 0) {
        return None;
    }
    Some(
        m.topics
            .iter()
            .flat_map(|t| {
                let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
                t.partitions.iter().map(move |p| PartitionState {
                    topic: name.clone(),
                    index: p.partition_index,
                    leader: p.leader_id.0,
                    isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                })
            })
            .collect(),
    )
}

/// The active controller (the metadata quorum's leader).
fn active_controller(cluster: &Cluster) -> Option<i32> {
    let r: DescribeQuorumResponse = ask(
        cluster,
        ApiKey::DescribeQuorum,
        2,
        &describe_quorum_request(),
    )?;
    let leader = r.topics.first()?.partitions.first()?.leader_id.0;
    (leader > 0).then_some(leader)
}

/// The transaction coordinator of [`TRANSACTIONAL_ID`].
fn coordinator(cluster: &Cluster) -> Option<i32> {
    let mut req = FindCoordinatorRequest::default();
    req.key = StrBytes::from_static_str(TRANSACTIONAL_ID);
    req.key_type = 1;
    let r: FindCoordinatorResponse = ask(cluster, ApiKey::FindCoordinator, 3, &req)?;
    (r.error_code == 0 && r.node_id.0 > 0).then_some(r.node_id.0)
}

/// The node leading the most partitions of the workloads' topics.
fn busiest_leader(cluster: &Cluster) -> Option<i32> {
    let mut led: BTreeMap<i32, usize> = BTreeMap::new();
    for p in partitions(cluster, Some(&TOPICS))? {
        *led.entry(p.leader).or_default() += 1;
    }
    led.into_iter()
        .filter(|(id, _)| *id > 0)
        .max_by_key(|(_, n)| *n)
        .map(|(id, _)| id)
}

/// A follower of a random partition of [`TOPIC`], not the active controller if another is.
fn a_follower(cluster: &Cluster, rng: &mut StdRng) -> Option<i32> {
    let all = partitions(cluster, Some(&[TOPIC]))?;
    let leader = &all.choose(rng)?.leader;
    let controller = active_controller(cluster);
    let followers: Vec<i32> = (1..=NODES as i32).filter(|id| id != leader).collect();
    let preferred: Vec<i32> = followers
        .iter()
        .copied()
        .filter(|id| Some(*id) != controller)
        .collect();
    preferred.choose(rng).or(followers.choose(rng)).copied()
}

/// Waits until every node is back in the ISR of every partition of every topic; if they do not
/// within 90 s, shows what each node logged about the partitions that lack one and keeps the
/// data directories.
fn wait_until_healed(cluster: &Cluster, round: usize, seed: u64) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let now = partitions(cluster, None);
        let lacking: Option<Vec<_>> =
            now.map(|ps| ps.into_iter().filter(|p| p.isr.len() < NODES).collect());
        if lacking.as_ref().is_some_and(|l| l.is_empty()) {
            return;
        }
        if Instant::now() > deadline {
            let names: Vec<String> = lacking
                .iter()
                .flatten()
                .map(|p| format!("{}-{}", p.topic, p.index))
                .collect();
            for (i, n) in cluster.nodes.iter().enumerate() {
                let lines = n.log_lines();
                let about: Vec<&String> = lines
                    .iter()
                    .filter(|l| {
                        names.iter().any(|name| l.contains(name.as_str()))
                            || l.contains("WARN")
                            || l.contains("ERROR")
                    })
                    .collect();
                eprintln!(
                    "--- node {}: its last warnings and lines about {names:?}:",
                    i + 1
                );
                for l in collapse_repeats(&about).iter().rev().take(60).rev() {
                    eprintln!("{l}");
                }
            }
            let kept = keep_data_dirs(cluster, seed);
            panic!(
                "round {round} (seed {seed}): the ISR did not heal within 90 s: {lacking:?}; data directories copied to {}",
                kept.display()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Log lines with each message once, at its last place, with how often it came (a loop
/// repeats a few messages thousands of times, which would hide the rest).
fn collapse_repeats(lines: &[&String]) -> Vec<String> {
    // "2026-12-03T13:23:09.281091Z  INFO message": the message is what repeats.
    let message = |l: &str| l.split_once(' ').map_or(l, |(_, m)| m).to_string();
    let mut last: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        let e = last.entry(message(l)).or_insert((i, 0));
        *e = (i, e.1 + 1);
    }
    let mut kept: Vec<(usize, usize)> = last.into_values().collect();
    kept.sort();
    kept.into_iter()
        .map(|(i, n)| match n {
            1 => lines[i].to_string(),
            n => format!("{} ({n} times)", lines[i]),
        })
        .collect()
}

/// Copies every node's data directory (for `samsa dump-log`); returns where.
fn keep_data_dirs(cluster: &Cluster, seed: u64) -> PathBuf {
    let keep = std::env::temp_dir().join(format!("samsa-chaos-{seed}"));
    let _ = std::fs::remove_dir_all(&keep);
    let _ = std::fs::create_dir_all(&keep);
    for (i, n) in cluster.nodes.iter().enumerate() {
        let _ = std::process::Command::new("cp")
            .arg("-a")
            .arg(&n.data_dir)
            .arg(keep.join(format!("node-{}", i + 1)))
            .status();
    }
    keep
}

/// Strikes with `fault`, waits, heals; says what it did.
fn strike(fault: Fault, cluster: &mut Cluster, lab: Option<&NetLab>, rng: &mut StdRng) -> String {
    let random = rng.gen_range(1..=NODES as i32);
    let lasting = Duration::from_millis(rng.gen_range(500..5_000));
    let (victim, why) = match fault {
        Fault::KillCoordinator | Fault::CutCoordinator => {
            (coordinator(cluster), "the transaction coordinator")
        }
        Fault::CutLeader => (busiest_leader(cluster), "leading the most partitions"),
        Fault::CutFollower => (a_follower(cluster, rng), "a follower"),
        Fault::CutController => (active_controller(cluster), "the active controller"),
        _ => (Some(random), "at random"),
    };
    let (victim, why) = match victim {
        Some(v) => (v, why),
        None => (random, "at random, no node answered who"),
    };
    let ms = lasting.as_millis();
    let node = cluster.node(victim);
    match fault {
        Fault::Kill | Fault::KillCoordinator => {
            node.kill();
            std::thread::sleep(lasting);
            node.restart();
            format!("SIGKILL node {victim} ({why}) for {ms} ms")
        }
        Fault::Stop => {
            node.pause();
            std::thread::sleep(lasting);
            node.resume();
            format!("SIGSTOP node {victim} ({why}) for {ms} ms")
        }
        Fault::Term => {
            node.stop();
            std::thread::sleep(lasting);
            node.restart();
            format!("SIGTERM node {victim} ({why}) for {ms} ms")
        }
        Fault::CutLeader | Fault::CutFollower | Fault::CutController | Fault::CutCoordinator => {
            let lab = lab.expect("partitions need a NetLab");
            lab.cut_from_peers(victim);
            std::thread::sleep(lasting);
            lab.heal();
            format!("node {victim} ({why}) cut from its peers for {ms} ms")
        }
        Fault::Isolate => {
            let lab = lab.expect("partitions need a NetLab");
            lab.isolate(victim);
            std::thread::sleep(lasting);
            lab.heal();
            format!("node {victim} ({why}) cut from everyone for {ms} ms")
        }
    }
}

/// What a producer of numbered records got acknowledged: value -> (partition, offset).
#[derive(Default)]
struct Acks {
    acked: Mutex<BTreeMap<u64, (i32, i64)>>,
    /// Values below this were handed to the producer.
    produced: AtomicU64,
}

/// The key of record `v`: keys spread the records, one key's records stay in one partition.
fn key_of(v: u64) -> String {
    format!("k{}", v % 24)
}

/// An acks=all producer writing numbered records to `topic` in batches of 50 until `stop`.
fn numbered_records(
    bootstrap: &str,
    topic: &'static str,
    idempotent: bool,
    stop: Arc<AtomicBool>,
    acks: Arc<Acks>,
) -> JoinHandle<()> {
    let producer: FutureProducer = config(bootstrap)
        .set("enable.idempotence", idempotent.to_string())
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "30000")
        .create()
        .unwrap();
    std::thread::spawn(move || {
        let rt = runtime();
        let mut next = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let values: Vec<String> = (next..next + 50).map(|i| i.to_string()).collect();
            let keys: Vec<String> = (next..next + 50).map(key_of).collect();
            next += 50;
            acks.produced.store(next, Ordering::Relaxed);
            let results = rt.block_on(futures::future::join_all(values.iter().zip(&keys).map(
                |(v, k)| {
                    producer.send(
                        FutureRecord::to(topic).key(k).payload(v),
                        Duration::from_secs(30),
                    )
                },
            )));
            let mut a = acks.acked.lock().unwrap();
            for (v, r) in values.iter().zip(results) {
                if let Ok(d) = r {
                    a.insert(v.parse().unwrap(), (d.partition, d.offset));
                }
            }
        }
    })
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    /// Never asked to commit (aborted on purpose, or after a failed send): must not be read.
    NotCommitted,
    /// The commit returned an error: whole or absent.
    Unknown,
    /// The commit returned success: must be read whole.
    Committed,
}

/// One transaction: the partition of each of its records (record i's value is "txn:i:n"),
/// where its records were acknowledged, and how it ended.
struct Txn {
    partitions: Vec<i32>,
    delivered: Vec<(i32, i64)>,
    outcome: Outcome,
}

const TXN_TIMEOUT: Duration = Duration::from_secs(30);

fn txn_producer(bootstrap: &str) -> FutureProducer {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let p: FutureProducer = config(bootstrap)
            .set("transactional.id", TRANSACTIONAL_ID)
            .set("transaction.timeout.ms", "30000")
            .set("message.timeout.ms", "30000")
            .set("linger.ms", "5")
            .create()
            .unwrap();
        // Fences the previous producer and ends its open transaction, if any.
        match p.init_transactions(TXN_TIMEOUT) {
            Ok(()) => return p,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "init_transactions kept failing: {e}"
                );
                println!("init_transactions: {e}; again");
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

/// Whether an error leaves the producer usable (else it is replaced, which fences it).
fn usable_after(e: &KafkaError) -> bool {
    match e {
        KafkaError::Transaction(e) => !e.is_fatal(),
        _ => true,
    }
}

/// Aborts the open transaction; false if the producer must be replaced to end it.
fn abort(p: &FutureProducer) -> bool {
    for _ in 0..5 {
        match p.abort_transaction(TXN_TIMEOUT) {
            Ok(()) => return true,
            Err(KafkaError::Transaction(e)) if e.is_retriable() => continue,
            Err(_) => return false,
        }
    }
    false
}

/// Runs transaction `txn` (its records to `partitions`) and records how it ended; true when
/// it committed.
fn transaction(
    producer: &mut FutureProducer,
    bootstrap: &str,
    txns: &Mutex<Vec<Txn>>,
    partitions: Vec<i32>,
    commit: bool,
    rt: &tokio::runtime::Runtime,
) -> bool {
    let n = partitions.len();
    let k = {
        let mut t = txns.lock().unwrap();
        t.push(Txn {
            partitions: partitions.clone(),
            delivered: Vec::new(),
            outcome: Outcome::NotCommitted,
        });
        t.len() - 1
    };
    if let Err(e) = producer.begin_transaction() {
        println!("transaction {k}: begin: {e}");
        *producer = txn_producer(bootstrap);
        return false;
    }
    let values: Vec<String> = (0..n).map(|i| format!("{k}:{i}:{n}")).collect();
    let results = rt.block_on(futures::future::join_all(
        values.iter().zip(&partitions).map(|(v, p)| {
            producer.send(
                FutureRecord::<str, str>::to(TXN_TOPIC)
                    .partition(*p)
                    .payload(v.as_str()),
                Duration::from_secs(30),
            )
        }),
    ));
    let delivered: Vec<(i32, i64)> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|d| (d.partition, d.offset)))
        .collect();
    let all_sent = delivered.len() == n;
    txns.lock().unwrap()[k].delivered = delivered;
    if !commit || !all_sent {
        if !abort(producer) {
            *producer = txn_producer(bootstrap);
        }
        return false;
    }
    txns.lock().unwrap()[k].outcome = Outcome::Unknown;
    let mut tries = 0;
    loop {
        tries += 1;
        match producer.commit_transaction(TXN_TIMEOUT) {
            Ok(()) => {
                // A commit that failed before and succeeded on retry is committed all the same.
                txns.lock().unwrap()[k].outcome = Outcome::Committed;
                return true;
            }
            Err(KafkaError::Transaction(e)) if e.is_retriable() && tries < 5 => {
                println!("transaction {k}: commit: {e}; again");
            }
            Err(e) => {
                println!("transaction {k}: commit: {e}");
                let requires_abort =
                    matches!(&e, KafkaError::Transaction(e) if e.txn_requires_abort());
                if !usable_after(&e) || !requires_abort || !abort(producer) {
                    *producer = txn_producer(bootstrap);
                }
                return false;
            }
        }
    }
}

/// The transactional workload: transactions of 1 to 8 records over random partitions until
/// `stop`, one in five aborted on purpose; then one committed transaction with a record in
/// every partition, whose offsets it returns (a read_committed reader that reached them has
/// seen every transaction before decided).
fn transactions(
    bootstrap: &str,
    stop: Arc<AtomicBool>,
    txns: Arc<Mutex<Vec<Txn>>>,
    seed: u64,
) -> JoinHandle<Vec<(i32, i64)>> {
    let bootstrap = bootstrap.to_string();
    std::thread::spawn(move || {
        let rt = runtime();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut producer = txn_producer(&bootstrap);
        while !stop.load(Ordering::Relaxed) {
            let n = rng.gen_range(1..=8);
            let partitions = (0..n).map(|_| rng.gen_range(0..PARTITIONS)).collect();
            let commit = !rng.gen_ratio(1, 5);
            transaction(&mut producer, &bootstrap, &txns, partitions, commit, &rt);
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while !transaction(
            &mut producer,
            &bootstrap,
            &txns,
            (0..PARTITIONS).collect(),
            true,
            &rt,
        ) {
            assert!(
                Instant::now() < deadline,
                "the last transaction did not commit"
            );
        }
        let t = txns.lock().unwrap();
        let mut last = t.last().unwrap().delivered.clone();
        last.sort();
        last
    })
}

/// A record read back.
struct Read {
    topic: String,
    partition: i32,
    offset: i64,
    key: Option<String>,
    value: String,
}

/// What reading back found.
struct ReadBack {
    /// Each offset once.
    records: Vec<Read>,
    consumer: BaseConsumer<KeepLog>,
    /// Partitions not read to their end: (topic, partition) -> the next offset to read.
    short: BTreeMap<(String, i32), i64>,
    /// Offsets read twice with different records.
    changed: Vec<String>,
}

/// Reads every partition of [`TOPICS`] with a read_committed consumer until it reaches
/// `until` (topic, partition) -> offset, or [`READ_TIMEOUT`] passes.
fn read_back(bootstrap: &str, until: &BTreeMap<(String, i32), i64>) -> ReadBack {
    let consumer: BaseConsumer<KeepLog> = config(bootstrap)
        .set("group.id", "chaos-check")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("isolation.level", "read_committed")
        .set("debug", "fetch,consumer,topic")
        .set_log_level(RDKafkaLogLevel::Debug)
        .create_with_context(KeepLog::default())
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for t in TOPICS {
        for p in 0..PARTITIONS {
            tpl.add_partition_offset(t, p, Offset::Beginning).unwrap();
        }
    }
    consumer.assign(&tpl).unwrap();
    let mut short: BTreeMap<(String, i32), i64> = until
        .iter()
        .filter(|(_, &end)| end > 0)
        .map(|(tp, _)| (tp.clone(), 0))
        .collect();
    let mut at: BTreeMap<(String, i32, i64), (Option<String>, String)> = BTreeMap::new();
    let (mut rereads, mut changed) = (0, Vec::new());
    let started = Instant::now();
    while !short.is_empty() && started.elapsed() < READ_TIMEOUT {
        let Some(m) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = m.unwrap();
        let tp = (m.topic().to_string(), m.partition());
        let key = m.key().map(|k| String::from_utf8_lossy(k).into_owned());
        let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
        if let Some(next) = short.get_mut(&tp) {
            *next = m.offset() + 1;
            if *next >= until[&tp] {
                short.remove(&tp);
            }
        }
        match at.entry((tp.0, tp.1, m.offset())) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert((key, value));
            }
            std::collections::btree_map::Entry::Occupied(e) => {
                rereads += 1;
                if e.get() != &(key.clone(), value.clone()) {
                    changed.push(format!(
                        "{:?}: {:?} then {:?}",
                        e.key(),
                        e.get(),
                        (key, value)
                    ));
                }
            }
        }
    }
    println!(
        "read {} records ({rereads} offsets again) in {:.1} s",
        at.len(),
        started.elapsed().as_secs_f64()
    );
    let records = at
        .into_iter()
        .map(|((topic, partition, offset), (key, value))| Read {
            topic,
            partition,
            offset,
            key,
            value,
        })
        .collect();
    ReadBack {
        records,
        consumer,
        short,
        changed,
    }
}

/// Shows what went wrong where: for each (topic, partition) -> first offset of interest, the
/// consumer's last log lines about it and what kcat reads there now; copies every node's data
/// directory (for `samsa dump-log`) and returns where.
fn post_mortem(
    cluster: &Cluster,
    consumer: &BaseConsumer<KeepLog>,
    at: &BTreeMap<(String, i32), i64>,
    seed: u64,
) -> PathBuf {
    let lines: Vec<String> = consumer
        .context()
        .0
        .lock()
        .unwrap()
        .iter()
        .cloned()
        .collect();
    for ((topic, p), first) in at {
        show_partition(cluster, &lines, topic, *p, *first);
    }
    eprintln!(
        "--- partitions now: {:?}",
        partitions(cluster, Some(&TOPICS))
    );
    keep_data_dirs(cluster, seed)
}

/// The problems of one workload's records, as messages; the positions that deserve a look.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
    look_at: BTreeMap<(String, i32), i64>,
}

impl Findings {
    fn problem(&mut self, p: String) {
        self.problems.push(p);
    }

    /// Each partition's records, as read, in the order they were produced.
    fn in_order<T: PartialOrd + std::fmt::Debug>(
        &mut self,
        topic: &str,
        by_partition: BTreeMap<i32, Vec<T>>,
    ) {
        for (p, records) in by_partition {
            if let Some(w) = records.windows(2).find(|w| w[0] >= w[1]) {
                self.problem(format!(
                    "{topic}: partition {p} out of order: {:?} before {:?}",
                    w[0], w[1]
                ));
            }
        }
    }

    /// Acknowledged records not read: counted per partition, with the first offset.
    fn lost(&mut self, topic: &str, what: &str, lost: &[(i32, i64)], read: &[&Read]) {
        if lost.is_empty() {
            return;
        }
        let mut summary: BTreeMap<i32, (usize, i64, i64)> = BTreeMap::new();
        for &(p, o) in lost {
            let e = summary.entry(p).or_insert((0, i64::MAX, -1));
            e.0 += 1;
            e.1 = e.1.min(o);
        }
        for r in read {
            if let Some(e) = summary.get_mut(&r.partition) {
                e.2 = e.2.max(r.offset);
            }
        }
        for (p, (_, first, _)) in &summary {
            self.look_at.insert((topic.to_string(), *p), *first);
        }
        self.problem(format!(
            "{topic}: {} {what} lost; per partition (lost, first lost offset, last offset read): {summary:?}",
            lost.len()
        ));
    }
}

/// Checks a producer of numbered records: every acknowledged record read where it was
/// acknowledged, nothing never produced (or under another key); with idempotence, nothing
/// twice and each partition in produce order.
fn check_numbered(topic: &str, idempotent: bool, acks: &Acks, read: &[Read], f: &mut Findings) {
    let acked = acks.acked.lock().unwrap();
    let produced = acks.produced.load(Ordering::Relaxed);
    let read: Vec<&Read> = read.iter().filter(|r| r.topic == topic).collect();
    let mut at: BTreeMap<(i32, i64), u64> = BTreeMap::new();
    let mut copies: BTreeMap<u64, usize> = BTreeMap::new();
    let mut by_partition: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
    let mut invented = Vec::new();
    for r in &read {
        match r.value.parse::<u64>() {
            Ok(v) if v < produced && r.key.as_deref() == Some(&key_of(v)) => {
                at.insert((r.partition, r.offset), v);
                *copies.entry(v).or_default() += 1;
                by_partition.entry(r.partition).or_default().push(v);
            }
            _ => invented.push(format!(
                "{:?}={} at {}@{}",
                r.key, r.value, r.partition, r.offset
            )),
        }
    }
    println!(
        "{topic}: {} of {produced} records acknowledged, {} read",
        acked.len(),
        read.len()
    );
    if acked.is_empty() {
        f.problem(format!("{topic}: nothing acknowledged"));
    }
    let mut lost = Vec::new();
    let mut moved = Vec::new();
    for (v, &(p, o)) in acked.iter() {
        match at.get(&(p, o)) {
            Some(w) if w == v => {}
            Some(w) => moved.push(format!("{v} acknowledged at {p}@{o}, where {w} is")),
            None if copies.contains_key(v) => {
                moved.push(format!("{v} acknowledged at {p}@{o}, read elsewhere"))
            }
            None => lost.push((p, o)),
        }
    }
    f.lost(topic, "acknowledged records", &lost, &read);
    if !moved.is_empty() {
        f.problem(format!(
            "{topic}: records not where they were acknowledged: {moved:?}"
        ));
    }
    if !invented.is_empty() {
        f.problem(format!("{topic}: records never produced: {invented:?}"));
    }
    if idempotent {
        let twice: Vec<u64> = copies
            .iter()
            .filter(|(_, &n)| n > 1)
            .map(|(&v, _)| v)
            .collect();
        if !twice.is_empty() {
            f.problem(format!("{topic}: records read twice: {twice:?}"));
        }
        // One producer with idempotence: each partition in produce order, so each key too.
        f.in_order(topic, by_partition);
    }
}

/// Checks the transactional workload as a read_committed reader saw it.
fn check_transactions(txns: &[Txn], read: &[Read], f: &mut Findings) {
    let read: Vec<&Read> = read.iter().filter(|r| r.topic == TXN_TOPIC).collect();
    let mut seen: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    let mut by_partition: BTreeMap<i32, Vec<(usize, usize)>> = BTreeMap::new();
    let (mut invented, mut twice, mut aborted) = (Vec::new(), Vec::new(), BTreeSet::new());
    for r in &read {
        let parsed: Option<(usize, usize, usize)> = (|| {
            let mut it = r.value.split(':').map(|s| s.parse().ok());
            Some((it.next()??, it.next()??, it.next()??))
        })();
        let Some((k, i, _)) = parsed.filter(|&(k, i, n)| {
            txns.get(k).is_some_and(|t| {
                t.partitions.len() == n && t.partitions.get(i) == Some(&r.partition)
            })
        }) else {
            invented.push(format!("{} at {}@{}", r.value, r.partition, r.offset));
            continue;
        };
        if txns[k].outcome == Outcome::NotCommitted {
            aborted.insert(k);
        }
        if !seen.entry(k).or_default().insert(i) {
            twice.push(r.value.clone());
        }
        by_partition.entry(r.partition).or_default().push((k, i));
    }
    let count = |o: Outcome| txns.iter().filter(|t| t.outcome == o).count();
    println!(
        "{TXN_TOPIC}: {} transactions, {} committed, {} not committed, {} of unknown outcome; {} records read",
        txns.len(),
        count(Outcome::Committed),
        count(Outcome::NotCommitted),
        count(Outcome::Unknown),
        read.len()
    );
    if count(Outcome::Committed) < 2 {
        f.problem(format!("{TXN_TOPIC}: hardly a transaction committed"));
    }
    let mut lost = Vec::new();
    let mut partial = Vec::new();
    let mut unknown_seen = 0;
    for (k, t) in txns.iter().enumerate() {
        let got = seen.get(&k).map_or(0, |s| s.len());
        let n = t.partitions.len();
        match t.outcome {
            Outcome::Committed if got < n => {
                // Where the missing records were acknowledged, for the post-mortem.
                let missing = (0..n).filter(|i| !seen.get(&k).is_some_and(|s| s.contains(i)));
                lost.extend(missing.filter_map(|i| t.delivered.get(i).copied()));
                partial.push(format!(
                    "committed transaction {k}: {got} of {n} records read"
                ));
            }
            Outcome::Unknown if got > 0 && got < n => {
                partial.push(format!(
                    "transaction {k} (commit failed): {got} of {n} records read"
                ));
            }
            Outcome::Unknown if got == n => unknown_seen += 1,
            _ => {}
        }
    }
    if count(Outcome::Unknown) > 0 {
        println!(
            "{TXN_TOPIC}: of {} transactions whose commit failed, {unknown_seen} were committed whole",
            count(Outcome::Unknown)
        );
    }
    f.lost(TXN_TOPIC, "records of committed transactions", &lost, &read);
    if !partial.is_empty() {
        f.problem(format!(
            "{TXN_TOPIC}: transactions read in part: {partial:?}"
        ));
    }
    if !aborted.is_empty() {
        f.problem(format!(
            "{TXN_TOPIC}: records of transactions never committed read: {aborted:?}"
        ));
    }
    if !invented.is_empty() {
        f.problem(format!("{TXN_TOPIC}: records never produced: {invented:?}"));
    }
    if !twice.is_empty() {
        f.problem(format!("{TXN_TOPIC}: records read twice: {twice:?}"));
    }
    // One producer at a time, one transaction at a time: each partition in order.
    f.in_order(TXN_TOPIC, by_partition);
}

/// The three workloads against three nodes (each in a namespace of `lab`'s if given) while
/// the nemesis strikes `rounds` times, drawing from `faults` in a seeded order; then heal and
/// read everything back.
fn run(rounds: usize, faults: &[Fault], lab: Option<NetLab>) {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("replication chaos: {rounds} rounds of {faults:?}, CHAOS_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let options = BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("replica.lag.time.max.ms", 3000);
    let mut cluster = match &lab {
        Some(lab) => Cluster::start_in(lab, options),
        None => Cluster::start_with(NODES, options),
    };
    settled(&cluster.nodes[0], NODES, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, NODES, Duration::from_secs(30));
    }
    let bootstrap = cluster.bootstrap();
    let admin: AdminClient<DefaultClientContext> = config(&bootstrap).create().unwrap();
    let new_topics: Vec<NewTopic> = TOPICS
        .iter()
        .map(|t| {
            NewTopic::new(t, PARTITIONS, TopicReplication::Fixed(NODES as i32))
                .set("min.insync.replicas", "2")
        })
        .collect();
    for r in runtime()
        .block_on(admin.create_topics(&new_topics, &AdminOptions::new()))
        .unwrap()
    {
        r.unwrap();
    }

    let stop = Arc::new(AtomicBool::new(false));
    let idempotent = Arc::new(Acks::default());
    let plain = Arc::new(Acks::default());
    let txns: Arc<Mutex<Vec<Txn>>> = Arc::default();
    let writers = [
        numbered_records(&bootstrap, TOPIC, true, stop.clone(), idempotent.clone()),
        numbered_records(&bootstrap, PLAIN_TOPIC, false, stop.clone(), plain.clone()),
    ];
    let txn_writer = transactions(&bootstrap, stop.clone(), txns.clone(), seed);

    // Every kind of fault in turn, in a seeded order: a short run strikes with different ones.
    let mut order = faults.to_vec();
    order.shuffle(&mut rng);
    for round in 0..rounds {
        std::thread::sleep(Duration::from_millis(rng.gen_range(500..2_000)));
        let fault = order[round % order.len()];
        let (a, b, t) = (
            idempotent.acked.lock().unwrap().len(),
            plain.acked.lock().unwrap().len(),
            txns.lock().unwrap().len(),
        );
        let done = strike(fault, &mut cluster, lab.as_ref(), &mut rng);
        println!("round {round}: {done} ({a} + {b} acknowledged, {t} transactions before)");
        // Healed before the next fault: at most one node is ever faulty.
        wait_until_healed(&cluster, round, seed);
    }
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let last_txn = txn_writer.join().unwrap();

    // Where reading ends: every partition's high watermark now that the producers of numbered
    // records are done, and the last transaction's records (behind which all are decided).
    let mut until: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let probe: BaseConsumer = config(&bootstrap).create().unwrap();
    for t in [TOPIC, PLAIN_TOPIC] {
        for p in 0..PARTITIONS {
            let (_, high) = probe
                .fetch_watermarks(t, p, Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("watermarks of {t} [{p}]: {e}"));
            until.insert((t.to_string(), p), high);
        }
    }
    for (p, offset) in last_txn {
        until.insert((TXN_TOPIC.to_string(), p), offset + 1);
    }
    let back = read_back(&bootstrap, &until);

    let mut f = Findings::default();
    if !back.short.is_empty() {
        for (tp, next) in &back.short {
            f.look_at.insert(tp.clone(), *next);
        }
        f.problem(format!(
            "reading stopped short within {READ_TIMEOUT:?}: (topic, partition) -> next offset: {:?}; to read up to {until:?}",
            back.short
        ));
    }
    if !back.changed.is_empty() {
        f.problem(format!(
            "offsets read twice with different records: {:?}",
            back.changed
        ));
    }
    check_numbered(TOPIC, true, &idempotent, &back.records, &mut f);
    check_numbered(PLAIN_TOPIC, false, &plain, &back.records, &mut f);
    check_transactions(&txns.lock().unwrap(), &back.records, &mut f);
    if !f.problems.is_empty() {
        let kept = post_mortem(&cluster, &back.consumer, &f.look_at, seed);
        panic!(
            "seed {seed}:\n{}\ndata directories copied to {}",
            f.problems.join("\n"),
            kept.display()
        );
    }
}

/// A lab for partition tests, or None (and why, printed) where namespaces need root and the
/// test is not root.
fn lab() -> Option<NetLab> {
    match NetLab::create(NODES) {
        Ok(lab) => Some(lab),
        Err(why) if unsafe { libc::geteuid() } != 0 => {
            println!("network partitions skipped: {why}");
            None
        }
        Err(why) => panic!("network namespaces unusable as root: {why}"),
    }
}

#[test]
fn acknowledged_records_survive_three_process_faults() {
    run(3, &PROCESS_FAULTS, None);
}

#[test]
fn acknowledged_records_survive_three_network_partitions() {
    if let Some(lab) = lab() {
        run(3, &PARTITION_FAULTS, Some(lab));
    }
}

#[test]
#[ignore = "long: scripts/chaos runs it"]
fn acknowledged_records_survive_many_faults() {
    let rounds = std::env::var("CHAOS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    match lab() {
        Some(lab) => {
            let all: Vec<Fault> = PROCESS_FAULTS.into_iter().chain(PARTITION_FAULTS).collect();
            run(rounds, &all, Some(lab));
        }
        None => run(rounds, &PROCESS_FAULTS, None),
    }
}
