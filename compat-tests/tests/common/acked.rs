//! Acknowledged writes under faults, for the tests that break nodes of a real cluster: an
//! idempotent acks=all librdkafka producer writing numbered records without pause and keeping
//! each acknowledgement, the ISR sizes the cluster reports, and the final read-back: every
//! acknowledged record there exactly once, where it was acknowledged, nothing that was never
//! produced, and each partition in produce order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

use super::{raw_request, runtime, settled, wait_for_brokers, Got};

/// Record value -> (partition, offset) where it was acknowledged.
pub type Acked = BTreeMap<u64, (i32, i64)>;

/// Records per produce round (one batch per partition, about).
const ROUND_RECORDS: u64 = 50;

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    c
}

/// Three nodes with `options`, quick to notice a dead one (fenced after 3 s, out of the ISR
/// after 3 s behind), and `topic` created with `partitions` partitions, replication factor 3
/// and min.insync.replicas=2, every replica in sync.
pub fn start_cluster(options: BrokerOptions, topic: &str, partitions: i32) -> Cluster {
    let cluster = super::start_quick_cluster(options);
    let admin: AdminClient<DefaultClientContext> = config(&cluster.bootstrap()).create().unwrap();
    let t = NewTopic::new(topic, partitions, TopicReplication::Fixed(3))
        .set("min.insync.replicas", "2");
    runtime()
        .block_on(admin.create_topics(&[t], &AdminOptions::new()))
        .unwrap()[0]
        .clone()
        .unwrap();
    wait_for_full_isr(&cluster, topic, 3, "after creating the topic");
    cluster
}

/// The producer thread: numbered records in rounds, each acknowledgement recorded.
pub struct Writer {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Acked>>,
    produced: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Writer {
    pub fn start(bootstrap: &str, topic: &'static str) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let acked: Arc<Mutex<Acked>> = Arc::default();
        let produced = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, acked, produced) = (stop.clone(), acked.clone(), produced.clone());
            let bootstrap = bootstrap.to_string();
            std::thread::spawn(move || {
                let producer: FutureProducer = config(&bootstrap)
                    .set("enable.idempotence", "true")
                    .set("acks", "all")
                    .set("linger.ms", "5")
                    .set("message.timeout.ms", "30000")
                    .create()
                    .unwrap();
                let rt = runtime();
                let mut next = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let values: Vec<String> = (next..next + ROUND_RECORDS)
                        .map(|i| i.to_string())
                        .collect();
                    // Keys spread the records; one key's records stay in one partition.
                    let keys: Vec<String> = (next..next + ROUND_RECORDS)
                        .map(|i| format!("k{}", i % 24))
                        .collect();
                    next += ROUND_RECORDS;
                    produced.store(next, Ordering::Relaxed);
                    let results = rt.block_on(futures::future::join_all(
                        values.iter().zip(&keys).map(|(v, k)| {
                            producer.send(
                                FutureRecord::to(topic).key(k).payload(v),
                                Duration::from_secs(30),
                            )
                        }),
                    ));
                    let mut a = acked.lock().unwrap();
                    for (v, r) in values.iter().zip(results) {
                        if let Ok(d) = r {
                            a.insert(v.parse().unwrap(), (d.partition, d.offset));
                        }
                    }
                }
            })
        };
        Writer {
            stop,
            acked,
            produced,
            thread,
        }
    }

    /// Records acknowledged so far.
    pub fn acked(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    /// Lets it write a second more, then stops after the round under way: what was
    /// acknowledged (at least one record), and how many were produced.
    pub fn finish(self) -> (Acked, u64) {
        std::thread::sleep(Duration::from_secs(1));
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        let acked = self.acked.lock().unwrap().clone();
        let produced = self.produced.load(Ordering::Relaxed);
        println!("{} of {produced} records acknowledged", acked.len());
        assert!(!acked.is_empty(), "nothing was acknowledged");
        (acked, produced)
    }
}

fn metadata_of(topic: &str) -> MetadataRequest {
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(topic.to_string())));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    req
}

/// Each partition's (leader, ISR) as `node` describes `topic` (None if it does not answer).
fn leaders_and_isrs_of(node: &compat_tests::Broker, topic: &str) -> Option<Vec<(i32, Vec<i32>)>> {
    let req = metadata_of(topic);
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        raw_request::<_, MetadataResponse>(node, ApiKey::Metadata, 12, &req)
    }));
    let m = answer.ok()?;
    let t = m.topics.first().filter(|t| t.error_code == 0)?;
    Some(
        t.partitions
            .iter()
            .map(|p| (p.leader_id.0, p.isr_nodes.iter().map(|b| b.0).collect()))
            .collect(),
    )
}

/// Each partition's (leader, ISR) as some running node describes `topic` (None if none
/// answers).
pub fn leaders_and_isrs(cluster: &Cluster, topic: &str) -> Option<Vec<(i32, Vec<i32>)>> {
    cluster
        .nodes
        .iter()
        .filter(|n| n.is_running())
        .find_map(|n| leaders_and_isrs_of(n, topic))
}

/// Waits until every partition of `topic` has `replicas` in-sync replicas and a leader, as
/// every running node describes it (a node just restarted answers from the image it had
/// before, until it has caught up: the others' say whether the ISR healed).
pub fn wait_for_full_isr(cluster: &Cluster, topic: &str, replicas: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let views: Vec<_> = cluster
            .nodes
            .iter()
            .filter(|n| n.is_running())
            .map(|n| leaders_and_isrs_of(n, topic))
            .collect();
        let healed = views.iter().all(|v| {
            v.as_ref().is_some_and(|ps| {
                ps.iter()
                    .all(|(leader, isr)| *leader >= 0 && isr.len() >= replicas)
            })
        });
        let now = views.into_iter().flatten().next();
        if healed {
            return;
        }
        if Instant::now() >= deadline {
            // What the nodes said of the partitions short of replicas, and their warnings: why
            // a follower does not catch up.
            let short: Vec<String> = now
                .iter()
                .flatten()
                .enumerate()
                .filter(|(_, (leader, isr))| *leader < 0 || isr.len() < replicas)
                .map(|(p, _)| format!("{topic}-{p}"))
                .collect();
            for (i, n) in cluster.nodes.iter().enumerate() {
                let lines = n.log_lines();
                let said: Vec<&String> = lines
                    .iter()
                    .filter(|l| {
                        l.contains("WARN")
                            || l.contains("ERROR")
                            || short.iter().any(|p| l.contains(&format!("{p} ")))
                    })
                    .collect();
                eprintln!("--- node {}: of {short:?}, and its warnings", i + 1);
                for l in said.iter().rev().take(40).rev() {
                    eprintln!("{l}");
                }
                for p in &short {
                    let epochs = n.data_dir.join(p).join("leader-epoch-checkpoint");
                    let epochs = std::fs::read_to_string(epochs).unwrap_or_default();
                    eprintln!("--- node {}: {p}'s leader epochs: {epochs:?}", i + 1);
                }
            }
            panic!("{what}: the ISR did not heal: {now:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The records of partition `partition` of `topic` in a node's data directory, read from its
/// segment files (`samsa dump-log`, no broker needed): offset -> value (a record number).
pub fn records_on_disk(
    data_dir: &std::path::Path,
    topic: &str,
    partition: i32,
) -> BTreeMap<i64, u64> {
    let dir = data_dir.join(format!("{topic}-{partition}"));
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return out;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "log") {
            continue;
        }
        let dump = std::process::Command::new(compat_tests::samsa_bin())
            .args(["dump-log", "--records", "--format", "json"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            dump.status.success(),
            "dump-log {}: {dump:?}",
            path.display()
        );
        let doc: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
        for b in doc["batches"].as_array().into_iter().flatten() {
            for r in b["records"].as_array().into_iter().flatten() {
                if let (Some(offset), Some(value)) = (r["offset"].as_i64(), r["value"].as_str()) {
                    if let Ok(v) = value.parse() {
                        out.insert(offset, v);
                    }
                }
            }
        }
    }
    out
}

/// Keeps the consumer's last librdkafka log lines (its fetch decisions), shown when a record
/// is missing.
#[derive(Default)]
pub struct KeepLog(pub Mutex<std::collections::VecDeque<String>>);

impl ClientContext for KeepLog {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        let mut lines = self.0.lock().unwrap();
        if lines.len() == 200_000 {
            lines.pop_front();
        }
        lines.push_back(format!("{level:?} {fac} {message}"));
    }
}

impl ConsumerContext for KeepLog {}

/// Reads `topic` back from every partition's start and checks it against what was
/// acknowledged: every acknowledged record exactly once where it was acknowledged, nothing
/// never produced (`produced` values were sent), each partition in produce order. On a loss it
/// shows what the consumer logged and what kcat reads there now, and copies every node's data
/// directory to `samsa-<tag>` in the temporary directory. `tag` names the run in messages.
pub fn check_read_back(
    cluster: &Cluster,
    topic: &str,
    partitions: i32,
    acked: &Acked,
    produced: u64,
    tag: &str,
) {
    let consumer: BaseConsumer<KeepLog> = config(&cluster.bootstrap())
        .set("group.id", "read-back")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("debug", "fetch,consumer,topic")
        .set_log_level(RDKafkaLogLevel::Debug)
        .create_with_context(KeepLog::default())
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut seen: BTreeMap<u64, (i32, i64)> = BTreeMap::new();
    let mut duplicates = Vec::new();
    let mut by_partition: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    // Counted, not searched for: a scan of `acked` per record read made reading quadratic,
    // and at 160,000 records the deadline passed before a debug build had read them all.
    let mut unread = acked.len();
    while unread > 0 && Instant::now() < deadline {
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = Got::from(&m.unwrap());
            let v: u64 = String::from_utf8_lossy(&m.value).parse().unwrap();
            by_partition.entry(m.partition).or_default().push(v);
            if seen.insert(v, (m.partition, m.offset)).is_some() {
                duplicates.push(v);
            } else if acked.contains_key(&v) {
                unread -= 1;
            }
        }
    }
    let read_for = Instant::now() + Duration::from_secs(120) - deadline;
    println!(
        "read {} records in {:.1} s",
        seen.len(),
        read_for.as_secs_f64()
    );
    let lost: Vec<u64> = acked
        .keys()
        .filter(|v| !seen.contains_key(v))
        .copied()
        .collect();
    if !lost.is_empty() {
        report_loss(cluster, topic, &consumer, acked, &seen, &lost, tag);
    }
    for (v, at) in acked {
        assert_eq!(
            &seen[v], at,
            "record {v} is not where it was acknowledged ({tag})"
        );
    }
    assert!(
        duplicates.is_empty(),
        "records read twice ({tag}): {duplicates:?}"
    );
    let invented: BTreeSet<u64> = seen.keys().filter(|&&v| v >= produced).copied().collect();
    assert!(
        invented.is_empty(),
        "records never produced ({tag}): {invented:?}"
    );
    for (p, values) in by_partition {
        // One producer with idempotence: each partition holds its records in produce order.
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "partition {p} out of order ({tag})"
        );
    }
}

/// Per partition: how many acknowledged records were not read, from which offset, how far
/// reading got, what the cluster says of the partition now, the consumer's last words about it
/// and what a fresh reader gets there; the nodes' data directories are kept. Panics.
fn report_loss(
    cluster: &Cluster,
    topic: &str,
    consumer: &BaseConsumer<KeepLog>,
    acked: &Acked,
    seen: &BTreeMap<u64, (i32, i64)>,
    lost: &[u64],
    tag: &str,
) -> ! {
    let mut summary: BTreeMap<i32, (usize, i64, i64)> = BTreeMap::new();
    for v in lost {
        let (p, o) = acked[v];
        let e = summary.entry(p).or_insert((0, i64::MAX, -1));
        e.0 += 1;
        e.1 = e.1.min(o);
    }
    for (p, offset) in seen.values() {
        if let Some(e) = summary.get_mut(p) {
            e.2 = e.2.max(*offset);
        }
    }
    let now = leaders_and_isrs(cluster, topic);
    let lines: Vec<String> = consumer
        .context()
        .0
        .lock()
        .unwrap()
        .iter()
        .cloned()
        .collect();
    for (p, (_, first, _)) in &summary {
        show_partition(cluster, &lines, topic, *p, *first);
    }
    // Kept for a post-mortem (samsa dump-log reads the segments).
    let keep = std::env::temp_dir().join(format!("samsa-{}", tag.replace([' ', '='], "-")));
    let _ = std::fs::remove_dir_all(&keep);
    let _ = std::fs::create_dir_all(&keep);
    for (i, n) in cluster.nodes.iter().enumerate() {
        let _ = std::process::Command::new("cp")
            .arg("-a")
            .arg(&n.data_dir)
            .arg(keep.join(format!("node-{}", i + 1)))
            .status();
    }
    panic!(
        "{} acknowledged records lost ({tag}); per partition (lost, first lost offset, last offset read): {summary:?}; partitions now (leader, isr): {now:?}; data directories copied to {}",
        lost.len(),
        keep.display()
    );
}

/// For a post-mortem of `topic`'s partition `p`: the consumer's last log `lines` about it (not
/// the routine "Fetch topic ... at offset" lines: what changed its position) and what a fresh
/// reader (kcat) gets there from offset `first` now.
pub fn show_partition(cluster: &Cluster, lines: &[String], topic: &str, p: i32, first: i64) {
    let tag = format!("{topic} [{p}]");
    let about: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(&tag) && !l.contains("Fetch topic"))
        .collect();
    eprintln!("--- the consumer's last log lines about {tag}:");
    for l in about.iter().rev().take(40).rev() {
        eprintln!("{l}");
    }
    let probe = std::process::Command::new("timeout")
        .args(["20", "kcat", "-b", &cluster.bootstrap(), "-C", "-t", topic])
        .args([
            "-p",
            &p.to_string(),
            "-o",
            &first.to_string(),
            "-c",
            "3",
            "-e",
        ])
        .args(["-f", "%o %k %s\\n"])
        .output();
    eprintln!("--- kcat from offset {first} of {tag} now: {probe:?}");
}
