//! Consumer groups against the real binary, with real clients: librdkafka through the rdkafka
//! crate (in-process members) and through confluent-kafka (a member in its own process, so it
//! can be SIGKILLed), and kafka-python's KafkaConsumer in the same group as librdkafka.
//!
//! Brokers here accept session timeouts from 1 s and members use 4 s, so that evictions take
//! seconds, not the 45 s of librdkafka's default.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

const SESSION_MS: &str = "4000";

fn group_broker() -> Broker {
    Broker::start_with(BrokerOptions::default().prop("group.min.session.timeout.ms", 1000))
}

/// Polls `done` until it holds; panics with `what` after `timeout`.
fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn all_partitions(n: i32) -> BTreeSet<i32> {
    (0..n).collect()
}

// ---- in-process members (rdkafka) ----

#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Assign(Vec<i32>),
    Revoke(Vec<i32>),
}

#[derive(Default)]
struct Shared {
    records: Mutex<Vec<Got>>,
    assignment: Mutex<Vec<i32>>,
    events: Mutex<Vec<Event>>,
    errors: Mutex<Vec<String>>,
}

struct Recorder(Arc<Shared>);

impl ClientContext for Recorder {}

impl ConsumerContext for Recorder {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let parts = |tpl: &TopicPartitionList| {
            let mut v: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            v.sort();
            v
        };
        let e = match rebalance {
            Rebalance::Assign(tpl) => Event::Assign(parts(tpl)),
            Rebalance::Revoke(tpl) => Event::Revoke(parts(tpl)),
            Rebalance::Error(e) => {
                self.0.errors.lock().unwrap().push(e.to_string());
                return;
            }
        };
        self.0.events.lock().unwrap().push(e);
    }
}

/// A group member polling in its own thread.
struct Member {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Member {
    fn start(broker: &Broker, group: &str, topic: &str, extra: &[(&str, &str)]) -> Member {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", broker.bootstrap())
            .set("group.id", group);
        // A KIP-848 member's session and heartbeat are the broker's to set.
        if !extra.contains(&("group.protocol", "consumer")) {
            c.set("session.timeout.ms", SESSION_MS)
                .set("heartbeat.interval.ms", "500");
        }
        c.set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "true")
            .set("auto.commit.interval.ms", "500")
            .set("enable.partition.eof", "false");
        for (k, v) in extra {
            c.set(*k, *v);
        }
        let shared = Arc::new(Shared::default());
        let consumer: BaseConsumer<Recorder> = c
            .create_with_context(Recorder(shared.clone()))
            .expect("consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (shared.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match consumer.poll(Duration::from_millis(100)) {
                    Some(Ok(m)) => s.records.lock().unwrap().push(Got::from(&m)),
                    Some(Err(e)) => s.errors.lock().unwrap().push(e.to_string()),
                    None => {}
                }
                if let Ok(tpl) = consumer.assignment() {
                    let mut v: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
                    v.sort();
                    *s.assignment.lock().unwrap() = v;
                }
            }
            // Dropping the consumer closes it (a dynamic member sends LeaveGroup).
        });
        Member {
            shared,
            stop,
            thread: Some(thread),
        }
    }

    fn assigned(&self) -> Vec<i32> {
        self.shared.assignment.lock().unwrap().clone()
    }
    fn records(&self) -> Vec<Got> {
        self.shared.records.lock().unwrap().clone()
    }
    fn events(&self) -> Vec<Event> {
        self.shared.events.lock().unwrap().clone()
    }
    fn errors(&self) -> Vec<String> {
        self.shared.errors.lock().unwrap().clone()
    }

    /// Closes the consumer the way an application would.
    fn close(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("member thread");
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ---- members in child processes (Python) ----

/// A member run by a script in `compat-tests/python`, reporting one line per event.
struct ScriptMember {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Arc<Mutex<Vec<String>>>,
}

impl ScriptMember {
    fn spawn(script: &str, args: &[&str]) -> ScriptMember {
        let path = compat_tests::workspace_root()
            .join("compat-tests/python")
            .join(script);
        let mut child = Command::new(compat_tests::python())
            .arg("-u")
            .arg(&path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run a python member");
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        ScriptMember {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn has_line(&self, prefix: &str) -> bool {
        self.lines().iter().any(|l| l.starts_with(prefix))
    }

    /// Its latest assignment.
    fn assigned(&self) -> Vec<i32> {
        self.lines()
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("ASSIGNED "))
            .map(|s| {
                s.split(',')
                    .filter(|p| *p != "-")
                    .map(|p| p.parse().unwrap())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The records it reported, as (partition, offset, value).
    fn records(&self) -> Vec<(i32, i64, String)> {
        self.lines()
            .iter()
            .filter_map(|l| parse_record(l))
            .collect()
    }

    fn kill(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }

    /// Closes its stdin (it leaves the group and exits) and checks that it exited cleanly.
    fn close(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "member exited with {status}:\n{}",
                    self.lines().join("\n")
                );
                return;
            }
            assert!(Instant::now() < deadline, "member did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ScriptMember {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn parse_record(line: &str) -> Option<(i32, i64, String)> {
    let mut it = line.strip_prefix("RECORD ")?.splitn(3, ' ');
    Some((
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.to_string(),
    ))
}

fn values(records: &[Got]) -> BTreeSet<String> {
    records
        .iter()
        .map(|g| String::from_utf8(g.value.clone()).unwrap())
        .collect()
}

/// Produces `count` records "<prefix>-<i>" round-robin over `partitions`.
fn produce_values(
    broker: &Broker,
    topic: &str,
    partitions: i32,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let producer = producer(broker, &[]);
    let vals: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for p in 0..partitions {
        let recs: Vec<_> = vals
            .iter()
            .enumerate()
            .filter(|(i, _)| (*i as i32) % partitions == p)
            .map(|(_, v)| (None, v.clone().into_bytes()))
            .collect();
        produce_all(&producer, topic, &recs, Some(p));
    }
    vals
}

/// Produces 150 values over the three partitions of `topic` and waits until `member` has read
/// them all (`what` names the wait).
fn produce_and_read(broker: &Broker, member: &Member, topic: &str, prefix: &str, what: &str) {
    let vals: BTreeSet<String> = produce_values(broker, topic, 3, prefix, 150)
        .into_iter()
        .collect();
    wait_until(what, Duration::from_secs(60), || {
        vals.is_subset(&values(&member.records()))
    });
}

// ---- the tests ----

#[test]
fn three_members_split_eight_partitions_and_a_killed_members_partitions_move_to_the_survivors() {
    let broker = group_broker();
    create_topic(&broker, "split", 8, &[]);
    let a = Member::start(&broker, "split-group", "split", &[]);
    let b = Member::start(&broker, "split-group", "split", &[]);
    let mut c = ScriptMember::spawn(
        "group_member.py",
        &[
            &broker.bootstrap(),
            "split-group",
            "split",
            "--session-ms",
            SESSION_MS,
        ],
    );
    let sizes = |a: &Member, b: &Member, c: &ScriptMember| {
        let mut all: Vec<i32> = a.assigned();
        all.extend(b.assigned());
        all.extend(c.assigned());
        let mut sizes = vec![a.assigned().len(), b.assigned().len(), c.assigned().len()];
        sizes.sort();
        (all.into_iter().collect::<BTreeSet<i32>>(), sizes)
    };
    wait_until(
        "three members own 3/3/2 of the 8 partitions",
        Duration::from_secs(60),
        || sizes(&a, &b, &c) == (all_partitions(8), vec![2, 3, 3]),
    );

    // Keep producing while a member dies and the survivors take over.
    let stop = Arc::new(AtomicBool::new(false));
    let produced = Arc::new(Mutex::new(Vec::<String>::new()));
    let producer_thread = {
        let (stop, produced) = (stop.clone(), produced.clone());
        let producer = producer(&broker, &[("linger.ms", "0")]);
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let v = format!("live-{i}");
                produce_all(
                    &producer,
                    "split",
                    &[(None, v.clone().into_bytes())],
                    Some(i % 8),
                );
                produced.lock().unwrap().push(v);
                i += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    wait_until(
        "the killable member consumed something",
        Duration::from_secs(30),
        || !c.records().is_empty(),
    );
    c.kill();
    let killed_at = Instant::now();
    wait_until(
        "the survivors own all 8 partitions, 4 each",
        Duration::from_secs(40),
        || {
            let (a_p, b_p) = (a.assigned(), b.assigned());
            a_p.len() == 4 && b_p.len() == 4 && {
                let all: BTreeSet<i32> = a_p.into_iter().chain(b_p).collect();
                all == all_partitions(8)
            }
        },
    );
    // Evicted by its session timeout, not earlier (it never left).
    assert!(
        killed_at.elapsed() >= Duration::from_millis(3500),
        "{:?}",
        killed_at.elapsed()
    );
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    producer_thread.join().unwrap();

    let produced: BTreeSet<String> = produced.lock().unwrap().iter().cloned().collect();
    assert!(produced.len() > 50, "produced {}", produced.len());
    wait_until(
        "every produced record reached a live member",
        Duration::from_secs(30),
        || {
            let mut got = values(&a.records());
            got.extend(values(&b.records()));
            got.extend(c.records().into_iter().map(|(_, _, v)| v));
            produced.is_subset(&got)
        },
    );
    assert!(a.errors().is_empty(), "{:?}", a.errors());
    assert!(b.errors().is_empty(), "{:?}", b.errors());
}

#[test]
fn two_groups_each_receive_every_record() {
    let broker = group_broker();
    create_topic(&broker, "shared", 4, &[]);
    let g1a = Member::start(&broker, "group-one", "shared", &[]);
    let g1b = Member::start(&broker, "group-one", "shared", &[]);
    let g2 = Member::start(&broker, "group-two", "shared", &[]);
    wait_until(
        "group one's members split the partitions",
        Duration::from_secs(60),
        || g1a.assigned().len() == 2 && g1b.assigned().len() == 2 && g2.assigned().len() == 4,
    );
    let produced: BTreeSet<String> = produce_values(&broker, "shared", 4, "rec", 400)
        .into_iter()
        .collect();
    wait_until(
        "both groups have every record",
        Duration::from_secs(60),
        || {
            let mut one = values(&g1a.records());
            one.extend(values(&g1b.records()));
            produced.is_subset(&one) && produced.is_subset(&values(&g2.records()))
        },
    );
    // Each group read each record; the two members of group one shared the work.
    assert!(!g1a.records().is_empty() && !g1b.records().is_empty());
}

#[test]
fn committed_offsets_and_metadata_survive_a_broker_sigkill_and_the_group_resumes_exactly_after_them(
) {
    let mut broker = group_broker();
    create_topic(&broker, "resume", 4, &[]);
    produce_values(&broker, "resume", 4, "r", 400);
    let consumer_config = |broker: &Broker| {
        let mut c = client_config(broker);
        c.set("group.id", "resumer")
            .set("session.timeout.ms", SESSION_MS)
            .set("heartbeat.interval.ms", "500")
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false");
        c
    };
    let first: BaseConsumer = consumer_config(&broker).create().unwrap();
    first.subscribe(&["resume"]).unwrap();
    let got = consume_n(&first, 150, Duration::from_secs(60));
    // Commit the position after what was processed, with metadata, per partition.
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for g in &got {
        let n = next.entry(g.partition).or_insert(0);
        *n = (*n).max(g.offset + 1);
    }
    let mut tpl = TopicPartitionList::new();
    for (p, o) in &next {
        tpl.add_partition_offset("resume", *p, Offset::Offset(*o))
            .unwrap();
    }
    for mut e in tpl.elements() {
        let p = e.partition();
        e.set_metadata(format!("checkpoint-{p}"));
    }
    first.commit(&tpl, CommitMode::Sync).expect("commit");
    drop(first);

    broker.kill();
    broker.restart();

    let second: BaseConsumer = consumer_config(&broker).create().unwrap();
    let mut ask = TopicPartitionList::new();
    for p in 0..4 {
        ask.add_partition("resume", p);
    }
    let committed = second
        .committed_offsets(ask, Duration::from_secs(30))
        .expect("committed offsets after the restart");
    for e in committed.elements() {
        match next.get(&e.partition()) {
            Some(o) => {
                assert_eq!(
                    e.offset(),
                    Offset::Offset(*o),
                    "partition {}",
                    e.partition()
                );
                assert_eq!(e.metadata(), format!("checkpoint-{}", e.partition()));
            }
            None => assert_eq!(e.offset(), Offset::Invalid, "partition {}", e.partition()),
        }
    }
    second.subscribe(&["resume"]).unwrap();
    let rest = consume_n(&second, 400 - 150, Duration::from_secs(60));
    let mut first_seen: BTreeMap<i32, i64> = BTreeMap::new();
    for g in &rest {
        first_seen.entry(g.partition).or_insert(g.offset);
        assert!(
            g.offset >= next.get(&g.partition).copied().unwrap_or(0),
            "record {}/{} below the committed offset was redelivered",
            g.partition,
            g.offset
        );
    }
    for (p, o) in &next {
        if *o < 100 {
            assert_eq!(
                first_seen.get(p),
                Some(o),
                "partition {p} resumes at its commit"
            );
        }
    }
    assert!(
        second.poll(Duration::from_millis(500)).is_none(),
        "nothing beyond the 400 records"
    );
}

#[test]
fn a_live_member_carries_on_across_a_broker_sigkill_and_restart() {
    let mut broker = group_broker();
    create_topic(&broker, "survive", 3, &[]);
    let member = Member::start(&broker, "survivors", "survive", &[]);
    produce_and_read(
        &broker,
        &member,
        "survive",
        "before",
        "the member read the first records",
    );
    // Let an auto-commit land, then crash the broker under the live member.
    std::thread::sleep(Duration::from_millis(1200));
    broker.kill();
    broker.restart();
    produce_and_read(
        &broker,
        &member,
        "survive",
        "after",
        "the member reads on after the restart",
    );
    // Its group and its commits came back from __consumer_offsets: nothing from before the
    // crash is read twice beyond the last auto-commit interval.
    let firsts = member
        .records()
        .iter()
        .filter(|g| String::from_utf8_lossy(&g.value).starts_with("before"))
        .count();
    assert!(
        firsts < 2 * 150,
        "read {firsts} records for 150 before the crash"
    );
    assert_eq!(member.assigned().len(), 3);
}

#[test]
fn cooperative_sticky_moves_only_the_partitions_that_must_move() {
    let broker = group_broker();
    create_topic(&broker, "coop", 8, &[]);
    let coop = [("partition.assignment.strategy", "cooperative-sticky")];
    let a = Member::start(&broker, "coop-group", "coop", &coop);
    wait_until(
        "the first member owns all 8 partitions",
        Duration::from_secs(30),
        || a.assigned().len() == 8,
    );
    let b = Member::start(&broker, "coop-group", "coop", &coop);
    wait_until(
        "the members own 4 partitions each",
        Duration::from_secs(60),
        || a.assigned().len() == 4 && b.assigned().len() == 4,
    );
    let a_final: BTreeSet<i32> = a.assigned().into_iter().collect();
    let b_final: BTreeSet<i32> = b.assigned().into_iter().collect();
    assert!(a_final.is_disjoint(&b_final));
    // The incremental protocol: the first member only ever gave up what the second took, and
    // never had its whole assignment revoked.
    let mut revoked: BTreeSet<i32> = BTreeSet::new();
    for e in a.events() {
        if let Event::Revoke(ps) = e {
            revoked.extend(ps);
        }
    }
    assert_eq!(
        revoked,
        b_final,
        "events of the first member: {:?}",
        a.events()
    );
    assert!(
        !a.events()
            .iter()
            .any(|e| matches!(e, Event::Revoke(ps) if ps.len() == 8)),
        "{:?}",
        a.events()
    );
    let mut b_revoked = 0;
    for e in b.events() {
        if let Event::Revoke(ps) = e {
            b_revoked += ps.len();
        }
    }
    assert_eq!(
        b_revoked,
        0,
        "events of the second member: {:?}",
        b.events()
    );
}

#[test]
fn a_static_member_restarts_without_a_rebalance_and_a_second_instance_is_fenced() {
    let broker = group_broker();
    create_topic(&broker, "static", 4, &[]);
    let static_member = |id: &str| {
        Member::start(
            &broker,
            "static-group",
            "static",
            &[("group.instance.id", id), ("session.timeout.ms", "6000")],
        )
    };
    let a = static_member("instance-a");
    let b = static_member("instance-b");
    wait_until(
        "two static members own 2 partitions each",
        Duration::from_secs(60),
        || a.assigned().len() == 2 && b.assigned().len() == 2,
    );
    let a_before = a.events();
    let b_partitions = b.assigned();

    // librdkafka does not send LeaveGroup for a static member: the group keeps its place.
    b.close();
    let b2 = static_member("instance-b");
    wait_until(
        "the restarted member has its partitions back",
        Duration::from_secs(30),
        || b2.assigned() == b_partitions,
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(a.events(), a_before, "the other member saw no rebalance");
    assert_eq!(a.assigned().len(), 2);

    // A second live instance with the same id takes over; the older one is fenced.
    let b3 = static_member("instance-b");
    wait_until(
        "the older instance is fenced",
        Duration::from_secs(30),
        || {
            b2.errors()
                .iter()
                .any(|e| e.to_lowercase().contains("fenced"))
        },
    );
    wait_until(
        "the newest instance owns the partitions",
        Duration::from_secs(30),
        || b3.assigned() == b_partitions,
    );
    assert_eq!(a.events(), a_before, "fencing caused no rebalance either");
}

#[test]
fn at_least_once_a_member_killed_between_processing_and_commit_has_its_records_redelivered() {
    let broker = group_broker();
    create_topic(&broker, "alo", 2, &[]);
    let produced: BTreeSet<String> = produce_values(&broker, "alo", 2, "alo", 300)
        .into_iter()
        .collect();
    let mut worker = ScriptMember::spawn(
        "group_member.py",
        &[
            &broker.bootstrap(),
            "alo-group",
            "alo",
            "--session-ms",
            SESSION_MS,
            "--commit",
            "batch",
            "--hold-after",
            "100",
        ],
    );
    wait_until(
        "the worker processed records it will not commit",
        Duration::from_secs(60),
        || worker.has_line("HOLDING"),
    );
    worker.kill();
    let lines = worker.lines();
    // What was committed last, and what was processed after it.
    let last_commit = lines
        .iter()
        .rposition(|l| l.starts_with("COMMITTED "))
        .expect("the worker committed before it held");
    let mut committed: HashMap<i32, i64> = HashMap::new();
    for l in &lines[..=last_commit] {
        if let Some(list) = l.strip_prefix("COMMITTED ") {
            for entry in list.split(',').filter(|e| !e.is_empty()) {
                let (p, o) = entry.split_once(':').unwrap();
                let o: i64 = o.parse().unwrap();
                // librdkafka lists partitions without a position with a negative offset.
                if o >= 0 {
                    committed.insert(p.parse().unwrap(), o);
                }
            }
        }
    }
    let uncommitted: Vec<(i32, i64, String)> = lines[last_commit..]
        .iter()
        .filter_map(|l| parse_record(l))
        .collect();
    assert!(!uncommitted.is_empty(), "{lines:?}");

    let successor = Member::start(
        &broker,
        "alo-group",
        "alo",
        &[("enable.auto.commit", "false")],
    );
    let expected: usize = (0..2)
        .map(|p| 150 - committed.get(&p).copied().unwrap_or(0) as usize)
        .sum();
    wait_until(
        "the successor read everything after the commits",
        Duration::from_secs(60),
        || successor.records().len() >= expected,
    );
    let got = successor.records();
    for p in 0..2 {
        let first = got.iter().find(|g| g.partition == p).map(|g| g.offset);
        let from = committed.get(&p).copied().unwrap_or(0);
        if from < 150 {
            assert_eq!(
                first,
                Some(from),
                "partition {p} resumes exactly at its commit"
            );
        }
    }
    let successor_values = values(&got);
    for (p, o, v) in &uncommitted {
        assert!(
            successor_values.contains(v),
            "processed but uncommitted record {p}/{o} was not redelivered"
        );
    }
    let mut all = successor_values;
    all.extend(
        lines[..last_commit]
            .iter()
            .filter_map(|l| parse_record(l))
            .map(|(_, _, v)| v),
    );
    assert!(produced.is_subset(&all), "no record is lost");
}

#[test]
fn kafka_python_consumer_shares_a_group_with_a_librdkafka_member() {
    let broker = group_broker();
    create_topic(&broker, "mixed", 6, &[]);
    let rd = Member::start(&broker, "mixed-group", "mixed", &[]);
    let py = ScriptMember::spawn(
        "kafka_python_group.py",
        &[&broker.bootstrap(), "mixed-group", "mixed"],
    );
    wait_until(
        "both clients own part of the topic",
        Duration::from_secs(60),
        || {
            let (r, p) = (rd.assigned(), py.assigned());
            !r.is_empty()
                && !p.is_empty()
                && r.iter().chain(&p).copied().collect::<BTreeSet<i32>>() == all_partitions(6)
                && r.len() + p.len() == 6
        },
    );
    let produced: BTreeSet<String> = produce_values(&broker, "mixed", 6, "mix", 300)
        .into_iter()
        .collect();
    wait_until(
        "the two clients together read every record",
        Duration::from_secs(60),
        || {
            let mut got = values(&rd.records());
            got.extend(py.records().into_iter().map(|(_, _, v)| v));
            produced.is_subset(&got)
        },
    );
    py.close();
    wait_until(
        "the librdkafka member takes over every partition",
        Duration::from_secs(30),
        || rd.assigned().len() == 6,
    );
    assert!(rd.errors().is_empty(), "{:?}", rd.errors());
}

// ---- the group APIs on the wire (kafka-protocol codec over a plain socket) ----

mod wire {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use bytes::{Buf, BufMut, Bytes, BytesMut};
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    pub struct Conn {
        s: TcpStream,
        correlation_id: i32,
    }

    pub fn s(v: &str) -> StrBytes {
        StrBytes::from_string(v.to_string())
    }

    pub fn group(v: &str) -> GroupId {
        GroupId(s(v))
    }

    impl Conn {
        pub fn open(bootstrap: &str) -> Conn {
            let s = TcpStream::connect(bootstrap).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            Conn {
                s,
                correlation_id: 0,
            }
        }

        pub fn call<Req: Encodable, Resp: Decodable>(
            &mut self,
            key: ApiKey,
            version: i16,
            req: &Req,
        ) -> Resp {
            self.correlation_id += 1;
            let mut buf = BytesMut::new();
            buf.put_i32(0);
            let mut h = RequestHeader::default();
            h.request_api_key = key as i16;
            h.request_api_version = version;
            h.correlation_id = self.correlation_id;
            h.client_id = Some(s("wire-test"));
            h.encode(&mut buf, key.request_header_version(version))
                .unwrap();
            req.encode(&mut buf, version).unwrap();
            let len = (buf.len() - 4) as i32;
            buf[..4].copy_from_slice(&len.to_be_bytes());
            self.s.write_all(&buf).unwrap();
            let mut size = [0u8; 4];
            self.s.read_exact(&mut size).unwrap();
            let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
            self.s.read_exact(&mut body).unwrap();
            let mut body = Bytes::from(body);
            let header =
                ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
            assert_eq!(header.correlation_id, self.correlation_id);
            let resp = Resp::decode(&mut body, version)
                .unwrap_or_else(|e| panic!("{key:?} v{version} response: {e}"));
            assert_eq!(body.remaining(), 0, "{key:?} v{version}: trailing bytes");
            resp
        }
    }
}

#[test]
fn group_apis_answer_with_kafkas_error_codes_on_the_wire() {
    use bytes::Bytes;
    use kafka_protocol::messages::*;
    use kafka_protocol::ResponseError as E;
    use wire::{group, s, Conn};

    let broker = group_broker();
    create_topic(&broker, "t", 2, &[]);
    let mut c = Conn::open(&broker.bootstrap());

    // FindCoordinator: batched keys from v4; transactional ids (key type 1) too.
    let mut fc = FindCoordinatorRequest::default();
    fc.coordinator_keys = vec![s("wire"), s("other")];
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 4, &fc);
    assert_eq!(r.coordinators.len(), 2);
    for co in &r.coordinators {
        assert_eq!(co.error_code, 0);
        assert_eq!(co.node_id.0, 1);
        assert_eq!(co.port as u16, broker.port);
    }
    let mut fc = FindCoordinatorRequest::default();
    fc.key = s("txn");
    fc.key_type = 1;
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 3, &fc);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.node_id.0, 1);

    let subscription = Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff]);
    let join = |member_id: &str| {
        let mut p = join_group_request::JoinGroupRequestProtocol::default();
        p.name = s("range");
        p.metadata = subscription.clone();
        let mut j = JoinGroupRequest::default();
        j.group_id = group("wire");
        j.session_timeout_ms = 6_000;
        j.rebalance_timeout_ms = 6_000;
        j.member_id = s(member_id);
        j.protocol_type = s("consumer");
        j.protocols = vec![p];
        j
    };
    let mut bad = join("");
    bad.session_timeout_ms = 10;
    let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &bad);
    assert_eq!(r.error_code, E::InvalidSessionTimeout.code());
    let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &join("nobody"));
    assert_eq!(r.error_code, E::UnknownMemberId.code());
    // KIP-394: the first JoinGroup only hands out the member id.
    let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &join(""));
    assert_eq!(r.error_code, E::MemberIdRequired.code());
    let member = r.member_id.to_string();
    assert!(member.starts_with("wire-test-"), "{member}");
    let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &join(&member));
    assert_eq!(r.error_code, 0);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.leader.as_str(), member);
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].metadata, subscription);

    let mut sync = SyncGroupRequest::default();
    sync.group_id = group("wire");
    sync.member_id = s(&member);
    sync.generation_id = 1;
    sync.protocol_type = Some(s("consumer"));
    sync.protocol_name = Some(s("roundrobin"));
    let r: SyncGroupResponse = c.call(ApiKey::SyncGroup, 5, &sync);
    assert_eq!(r.error_code, E::InconsistentGroupProtocol.code());
    sync.protocol_name = Some(s("range"));
    let mut a = sync_group_request::SyncGroupRequestAssignment::default();
    a.member_id = s(&member);
    a.assignment = Bytes::from_static(b"assignment");
    sync.assignments = vec![a];
    let r: SyncGroupResponse = c.call(ApiKey::SyncGroup, 5, &sync);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.assignment, Bytes::from_static(b"assignment"));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));

    let heartbeat = |member_id: &str, generation: i32| {
        let mut h = HeartbeatRequest::default();
        h.group_id = group("wire");
        h.member_id = s(member_id);
        h.generation_id = generation;
        h
    };
    let r: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, &heartbeat(&member, 1));
    assert_eq!(r.error_code, 0);
    let r: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, &heartbeat(&member, 7));
    assert_eq!(r.error_code, E::IllegalGeneration.code());
    let r: HeartbeatResponse = c.call(ApiKey::Heartbeat, 0, &heartbeat("ghost", 1));
    assert_eq!(r.error_code, E::UnknownMemberId.code());

    // OffsetCommit: members by generation; metadata kept; unknown partitions refused.
    let commit = |generation: i32, metadata: &str| {
        let mut p = offset_commit_request::OffsetCommitRequestPartition::default();
        p.partition_index = 0;
        p.committed_offset = 17;
        p.committed_leader_epoch = 0;
        p.committed_metadata = Some(s(metadata));
        let mut missing = p.clone();
        missing.partition_index = 5;
        let mut t = offset_commit_request::OffsetCommitRequestTopic::default();
        t.name = TopicName(s("t"));
        t.partitions = vec![p, missing];
        let mut r = OffsetCommitRequest::default();
        r.group_id = group("wire");
        r.generation_id_or_member_epoch = generation;
        r.member_id = s(&member);
        r.topics = vec![t];
        r
    };
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit(0, "x"));
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        E::IllegalGeneration.code()
    );
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit(1, &"m".repeat(5000)));
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        E::OffsetMetadataTooLarge.code()
    );
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &commit(1, "checkpoint"));
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    assert_eq!(
        r.topics[0].partitions[1].error_code,
        E::UnknownTopicOrPartition.code()
    );
    let mut fetch = OffsetFetchRequest::default();
    let mut g = offset_fetch_request::OffsetFetchRequestGroup::default();
    g.group_id = group("wire");
    g.topics = None;
    let mut unknown = offset_fetch_request::OffsetFetchRequestGroup::default();
    unknown.group_id = group("never-heard-of");
    let mut ft = offset_fetch_request::OffsetFetchRequestTopics::default();
    ft.name = TopicName(s("t"));
    ft.partition_indexes = vec![0];
    unknown.topics = Some(vec![ft]);
    fetch.groups = vec![g, unknown];
    let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 8, &fetch);
    let p = &r.groups[0].topics[0].partitions[0];
    assert_eq!((p.committed_offset, p.committed_leader_epoch), (17, 0));
    assert_eq!(p.metadata.as_deref(), Some("checkpoint"));
    let p = &r.groups[1].topics[0].partitions[0];
    assert_eq!((p.committed_offset, p.error_code), (-1, 0));

    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![group("wire"), group("never-heard-of")];
    let r: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 5, &describe);
    assert_eq!(r.groups[0].group_state.as_str(), "Stable");
    assert_eq!(r.groups[0].protocol_data.as_str(), "range");
    assert_eq!(r.groups[0].members[0].client_host.as_str(), "/127.0.0.1");
    assert_eq!(
        r.groups[0].members[0].member_assignment,
        Bytes::from_static(b"assignment")
    );
    assert_eq!(
        (r.groups[1].group_state.as_str(), r.groups[1].error_code),
        ("Dead", 0)
    );

    // OffsetDelete refuses the topics the group consumes.
    let offset_delete = || {
        let mut p = offset_delete_request::OffsetDeleteRequestPartition::default();
        p.partition_index = 0;
        let mut t = offset_delete_request::OffsetDeleteRequestTopic::default();
        t.name = TopicName(s("t"));
        t.partitions = vec![p];
        let mut r = OffsetDeleteRequest::default();
        r.group_id = group("wire");
        r.topics = vec![t];
        r
    };
    let r: OffsetDeleteResponse = c.call(ApiKey::OffsetDelete, 0, &offset_delete());
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        E::GroupSubscribedToTopic.code()
    );
    let mut del = DeleteGroupsRequest::default();
    del.groups_names = vec![group("wire"), group("never-heard-of")];
    let r: DeleteGroupsResponse = c.call(ApiKey::DeleteGroups, 2, &del);
    assert_eq!(r.results[0].error_code, E::NonEmptyGroup.code());
    assert_eq!(r.results[1].error_code, E::GroupIdNotFound.code());

    let mut leave = LeaveGroupRequest::default();
    leave.group_id = group("wire");
    let mut m = leave_group_request::MemberIdentity::default();
    m.member_id = s(&member);
    let mut ghost = leave_group_request::MemberIdentity::default();
    ghost.member_id = s("ghost");
    leave.members = vec![m, ghost];
    let r: LeaveGroupResponse = c.call(ApiKey::LeaveGroup, 5, &leave);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(r.members[1].error_code, E::UnknownMemberId.code());

    let mut list = ListGroupsRequest::default();
    list.states_filter = vec![s("EMPTY")];
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, &list);
    assert_eq!(r.groups.len(), 1);
    assert_eq!(r.groups[0].group_id.as_str(), "wire");
    assert_eq!(r.groups[0].group_state.as_str(), "Empty");
    let r: OffsetDeleteResponse = c.call(ApiKey::OffsetDelete, 0, &offset_delete());
    assert_eq!((r.error_code, r.topics[0].partitions[0].error_code), (0, 0));
    let r: DeleteGroupsResponse = c.call(ApiKey::DeleteGroups, 2, &del);
    assert_eq!(r.results[0].error_code, 0);
    let r: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 6, &describe);
    assert_eq!(r.groups[0].error_code, E::GroupIdNotFound.code());
    assert_eq!(r.groups[0].group_state.as_str(), "Dead");
}

// ---- KIP-848: librdkafka members with group.protocol=consumer ----

const CONSUMER_PROTOCOL: &[(&str, &str)] = &[("group.protocol", "consumer")];

/// A broker whose consumer groups fence a silent member after 4 s and ask for heartbeats
/// every 500 ms.
fn kip848_broker() -> Broker {
    Broker::start_with(
        BrokerOptions::default()
            .prop("group.consumer.min.session.timeout.ms", 1000)
            .prop("group.consumer.session.timeout.ms", 4000)
            .prop("group.consumer.min.heartbeat.interval.ms", 500)
            .prop("group.consumer.heartbeat.interval.ms", 500),
    )
}

/// The consumer group's epoch and each member's epoch, from ConsumerGroupDescribe.
fn describe_consumer_group(broker: &Broker, group: &str) -> (String, i32, Vec<i32>) {
    use kafka_protocol::messages::{
        ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId,
    };
    let mut req = ConsumerGroupDescribeRequest::default();
    req.group_ids = vec![GroupId(group.to_string().into())];
    let resp: ConsumerGroupDescribeResponse =
        raw_request(broker, ApiKey::ConsumerGroupDescribe, 1, &req);
    let g = &resp.groups[0];
    assert_eq!(g.error_code, 0, "{g:?}");
    let mut epochs: Vec<i32> = g.members.iter().map(|m| m.member_epoch).collect();
    epochs.sort();
    (g.group_state.to_string(), g.group_epoch, epochs)
}

#[test]
fn consumer_protocol_members_split_the_partitions_and_the_survivor_takes_over_when_one_leaves() {
    let broker = kip848_broker();
    create_topic(&broker, "kip848-split", 4, &[]);
    let a = Member::start(&broker, "kip848-split", "kip848-split", CONSUMER_PROTOCOL);
    let b = Member::start(&broker, "kip848-split", "kip848-split", CONSUMER_PROTOCOL);
    wait_until(
        "each member has two partitions",
        Duration::from_secs(60),
        || a.assigned().len() == 2 && b.assigned().len() == 2,
    );
    let mut both: Vec<i32> = a.assigned().into_iter().chain(b.assigned()).collect();
    both.sort();
    assert_eq!(both, vec![0, 1, 2, 3]);
    let first: BTreeSet<String> = produce_values(&broker, "kip848-split", 4, "first", 200)
        .into_iter()
        .collect();
    wait_until("every record read", Duration::from_secs(60), || {
        let mut got = values(&a.records());
        got.extend(values(&b.records()));
        first.is_subset(&got)
    });
    assert_eq!(
        a.records().len() + b.records().len(),
        200,
        "each record read once"
    );
    let (state, _, epochs) = describe_consumer_group(&broker, "kip848-split");
    assert_eq!(state, "Stable");
    assert_eq!(epochs.len(), 2);
    // b leaves (librdkafka sends epoch -1 when it closes): a takes every partition.
    drop(b);
    wait_until(
        "the survivor has every partition",
        Duration::from_secs(30),
        || a.assigned() == vec![0, 1, 2, 3],
    );
    let second: BTreeSet<String> = produce_values(&broker, "kip848-split", 4, "second", 100)
        .into_iter()
        .collect();
    wait_until("the survivor reads on", Duration::from_secs(60), || {
        second.is_subset(&values(&a.records()))
    });
    assert!(a.errors().is_empty(), "{:?}", a.errors());
}

#[test]
fn a_consumer_protocol_group_comes_back_from_its_records_after_a_broker_sigkill() {
    let mut broker = kip848_broker();
    create_topic(&broker, "kip848-survive", 3, &[]);
    let member = Member::start(
        &broker,
        "kip848-survive",
        "kip848-survive",
        CONSUMER_PROTOCOL,
    );
    produce_and_read(
        &broker,
        &member,
        "kip848-survive",
        "before",
        "the member read the first records",
    );
    // A second member comes and goes, so the group's epoch is one a new group would not have.
    let other = Member::start(
        &broker,
        "kip848-survive",
        "kip848-survive",
        CONSUMER_PROTOCOL,
    );
    wait_until(
        "the second member has a partition",
        Duration::from_secs(60),
        || !other.assigned().is_empty(),
    );
    drop(other);
    wait_until(
        "the first member has every partition again",
        Duration::from_secs(30),
        || member.assigned().len() == 3,
    );
    let (_, epoch, members) = describe_consumer_group(&broker, "kip848-survive");
    assert!(epoch >= 3, "{epoch}");
    assert_eq!(members, vec![epoch]);
    std::thread::sleep(Duration::from_millis(1200));
    broker.kill();
    broker.restart();
    produce_and_read(
        &broker,
        &member,
        "kip848-survive",
        "after",
        "the member reads on after the restart",
    );
    // The group was loaded from __consumer_offsets: the same member at the same epoch, with no
    // new epoch for a rejoin.
    let (state, epoch_after, members_after) = describe_consumer_group(&broker, "kip848-survive");
    assert_eq!((state.as_str(), epoch_after), ("Stable", epoch));
    assert_eq!(members_after, vec![epoch]);
    assert_eq!(member.assigned().len(), 3);
}
