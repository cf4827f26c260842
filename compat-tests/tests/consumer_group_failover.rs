//! A KIP-848 consumer group across its coordinator's crash, on three real nodes: two
//! librdkafka 2.12 members (`group.protocol=consumer`) split a replicated topic, the node that
//! coordinates their group is SIGKILLed, and the node that takes its partition of
//! `__consumer_offsets` over rebuilds the group from the records the old one replicated: the
//! members carry on at the same group epoch (no rejoin, no new assignment), and every record
//! produced before and after the crash is read.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::BrokerOptions;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;

const TOPIC: &str = "kip848-failover";
const GROUP: &str = "kip848-failover-group";
const PARTITIONS: i32 = 6;

/// A consumer-protocol member polling in its own thread: the values it read and its partitions.
struct Member {
    values: Arc<Mutex<Vec<String>>>,
    assigned: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Member {
    fn start(bootstrap: &str) -> Member {
        Member::start_in(bootstrap, GROUP, "consumer")
    }

    /// A member of `group` with `group.protocol=protocol`.
    fn start_in(bootstrap: &str, group: &str, protocol: &str) -> Member {
        let consumer: BaseConsumer = rdkafka::config::ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", group)
            .set("group.protocol", protocol)
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "true")
            .set("auto.commit.interval.ms", "500")
            .create()
            .expect("consumer");
        consumer.subscribe(&[TOPIC]).expect("subscribe");
        let values = Arc::new(Mutex::new(Vec::new()));
        let assigned = Arc::new(Mutex::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (v, a, s) = (values.clone(), assigned.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                    if let Some(payload) = m.payload() {
                        v.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(payload).into_owned());
                    }
                }
                if let Ok(tpl) = consumer.assignment() {
                    *a.lock().unwrap() = tpl.count();
                }
            }
        });
        Member {
            values,
            assigned,
            stop,
            thread: Some(thread),
        }
    }

    fn values(&self) -> BTreeSet<String> {
        self.values.lock().unwrap().iter().cloned().collect()
    }

    fn assigned(&self) -> usize {
        *self.assigned.lock().unwrap()
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

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The node that coordinates GROUP, as `node` answers.
fn coordinator(node: &compat_tests::Broker) -> Option<i32> {
    coordinator_of(node, GROUP)
}

fn coordinator_of(node: &compat_tests::Broker, group: &str) -> Option<i32> {
    let mut req = FindCoordinatorRequest::default();
    req.key = StrBytes::from_string(group.to_string());
    let r: FindCoordinatorResponse =
        try_raw_request_to(&node.bootstrap(), ApiKey::FindCoordinator, 3, &req).ok()?;
    (r.error_code == 0).then_some(r.node_id.0)
}

/// The group's state, epoch and member epochs, as its coordinator describes it.
fn describe_group(node: &compat_tests::Broker) -> Option<(String, i32, Vec<i32>)> {
    describe_group_of(node, GROUP)
}

fn describe_group_of(node: &compat_tests::Broker, group: &str) -> Option<(String, i32, Vec<i32>)> {
    let mut req = ConsumerGroupDescribeRequest::default();
    req.group_ids = vec![GroupId(StrBytes::from_string(group.to_string()))];
    let r: ConsumerGroupDescribeResponse =
        try_raw_request_to(&node.bootstrap(), ApiKey::ConsumerGroupDescribe, 1, &req).ok()?;
    let g = r.groups.into_iter().next()?;
    if g.error_code != 0 {
        return None;
    }
    let mut epochs: Vec<i32> = g.members.iter().map(|m| m.member_epoch).collect();
    epochs.sort();
    Some((g.group_state.to_string(), g.group_epoch, epochs))
}

/// Lets the members' last heartbeats and commits land, SIGKILLs node `old` (the coordinator of
/// `group`), and waits until another node coordinates it. Returns that node and the bootstrap
/// servers of the nodes left.
fn kill_coordinator(cluster: &mut compat_tests::Cluster, group: &str, old: i32) -> (i32, String) {
    std::thread::sleep(Duration::from_millis(1500));
    cluster.node(old).kill();
    let survivor = (1..=3).find(|&n| n != old).unwrap();
    let mut new = None;
    wait_until(
        "another node coordinates the group",
        Duration::from_secs(60),
        || {
            new = coordinator_of(cluster.node(survivor), group).filter(|&c| c != old);
            new.is_some()
        },
    );
    let survivors = (1..=3)
        .filter(|&n| n != old)
        .map(|n| cluster.node(n).bootstrap())
        .collect::<Vec<_>>()
        .join(",");
    (new.unwrap(), survivors)
}

fn produce_values(bootstrap: &str, prefix: &str, n: usize) -> BTreeSet<String> {
    let producer: rdkafka::producer::FutureProducer = rdkafka::config::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("message.timeout.ms", "60000")
        .create()
        .expect("producer");
    let values: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
    let records: Vec<_> = values
        .iter()
        .map(|v| (None, v.clone().into_bytes()))
        .collect();
    produce_all(&producer, TOPIC, &records, None);
    values.into_iter().collect()
}

#[test]
fn a_consumer_group_carries_on_at_its_epoch_when_its_coordinator_is_killed() {
    let mut cluster = start_quick_cluster(BrokerOptions::default());
    create_topic_in(
        &cluster.bootstrap(),
        TOPIC,
        PARTITIONS,
        rdkafka::admin::TopicReplication::Fixed(3),
        &[],
    );
    let bootstrap = cluster.bootstrap();
    let a = Member::start(&bootstrap);
    let b = Member::start(&bootstrap);
    wait_until(
        "both members have partitions",
        Duration::from_secs(60),
        || {
            a.assigned() > 0
                && b.assigned() > 0
                && a.assigned() + b.assigned() == PARTITIONS as usize
        },
    );
    let before = produce_values(&bootstrap, "before", 300);
    wait_until("every record read", Duration::from_secs(60), || {
        let mut got = a.values();
        got.extend(b.values());
        before.is_subset(&got)
    });
    let old = (1..=3)
        .find_map(|_| coordinator(&cluster.nodes[0]))
        .expect("a coordinator");
    let (state, epoch, members) = describe_group(cluster.node(old)).expect("the group");
    assert_eq!((state.as_str(), members.len()), ("Stable", 2));
    let (new, survivors) = kill_coordinator(&mut cluster, GROUP, old);
    let mut described = None;
    wait_until(
        "the new coordinator has loaded the group",
        Duration::from_secs(60),
        || {
            described = describe_group(cluster.node(new));
            described.is_some()
        },
    );
    let after = produce_values(&survivors, "after", 300);
    wait_until("the members read on", Duration::from_secs(90), || {
        let mut got = a.values();
        got.extend(b.values());
        after.is_subset(&got)
    });
    // The group came back from its records at the epoch it had: the members were not fenced
    // and did not rejoin.
    let (state, epoch_after, members_after) =
        describe_group(cluster.node(new)).expect("the group on its new coordinator");
    assert_eq!((state.as_str(), epoch_after), ("Stable", epoch));
    assert_eq!(members_after, members);
    assert_eq!(a.assigned() + b.assigned(), PARTITIONS as usize);
    drop(a);
    drop(b);
    cluster.node(old).restart();
}

/// A classic group as its coordinator describes it: state, protocol type and members.
fn describe_classic(node: &compat_tests::Broker, group: &str) -> Option<(String, String, usize)> {
    let mut req = DescribeGroupsRequest::default();
    req.groups = vec![GroupId(StrBytes::from_string(group.to_string()))];
    let r: DescribeGroupsResponse =
        try_raw_request_to(&node.bootstrap(), ApiKey::DescribeGroups, 5, &req).ok()?;
    let g = r.groups.into_iter().next()?;
    (g.error_code == 0).then(|| {
        (
            g.group_state.to_string(),
            g.protocol_type.to_string(),
            g.members.len(),
        )
    })
}

/// KIP-848's online migration on three real nodes with librdkafka 2.12: a classic member's
/// group is upgraded when a consumer-protocol member joins, downgraded when that member
/// leaves (the classic member then has every partition), and the classic group survives its
/// coordinator's SIGKILL: the node that takes over loads it from the records (the consumer
/// group's tombstones and the classic metadata, written together), and the member reads on.
#[test]
fn a_group_migrated_online_and_back_survives_its_coordinators_crash() {
    const GROUP: &str = "kip848-migration-group";
    let mut cluster = start_quick_cluster(BrokerOptions::default());
    create_topic_in(
        &cluster.bootstrap(),
        TOPIC,
        PARTITIONS,
        rdkafka::admin::TopicReplication::Fixed(3),
        &[],
    );
    let bootstrap = cluster.bootstrap();
    let classic = Member::start_in(&bootstrap, GROUP, "classic");
    wait_until(
        "the classic member has every partition",
        Duration::from_secs(60),
        || classic.assigned() == PARTITIONS as usize,
    );
    let at = (1..=3)
        .find_map(|_| coordinator_of(&cluster.nodes[0], GROUP))
        .expect("a coordinator");
    assert_eq!(
        describe_classic(cluster.node(at), GROUP).map(|d| d.1),
        Some("consumer".to_string())
    );
    let modern = Member::start_in(&bootstrap, GROUP, "consumer");
    wait_until(
        "the two members share the partitions",
        Duration::from_secs(60),
        || {
            classic.assigned() > 0
                && modern.assigned() > 0
                && classic.assigned() + modern.assigned() == PARTITIONS as usize
        },
    );
    let (state, _, members) = describe_group_of(cluster.node(at), GROUP).expect("a consumer group");
    assert_eq!((state.as_str(), members.len()), ("Stable", 2));
    let before = produce_values(&bootstrap, "mixed", 300);
    wait_until("every record read", Duration::from_secs(60), || {
        let mut got = classic.values();
        got.extend(modern.values());
        before.is_subset(&got)
    });
    // The consumer-protocol member leaves: the group is a classic group again.
    drop(modern);
    wait_until(
        "the classic member has every partition again",
        Duration::from_secs(60),
        || {
            classic.assigned() == PARTITIONS as usize
                && describe_classic(cluster.node(at), GROUP)
                    .is_some_and(|(state, _, members)| state == "Stable" && members == 1)
        },
    );
    assert!(
        describe_group_of(cluster.node(at), GROUP).is_none(),
        "no consumer group left"
    );
    let (new, survivors) = kill_coordinator(&mut cluster, GROUP, at);
    wait_until(
        "the new coordinator has loaded the classic group",
        Duration::from_secs(60),
        || {
            describe_classic(cluster.node(new), GROUP)
                .is_some_and(|(_, protocol, members)| protocol == "consumer" && members == 1)
        },
    );
    let after = produce_values(&survivors, "classic-again", 300);
    wait_until(
        "the classic member reads on",
        Duration::from_secs(90),
        || after.is_subset(&classic.values()),
    );
    drop(classic);
    cluster.node(at).restart();
}
