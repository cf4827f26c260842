//! Replication on three real `samsa` processes: a topic with replication factor 3 has every
//! partition on every broker and all of them in sync; an idempotent acks=all producer loses
//! nothing and duplicates nothing when a partition's leader is SIGKILLed (a follower in the ISR
//! takes over); min.insync.replicas refuses acks=all writes once too few replicas are left; the
//! killed broker, restarted, catches up and rejoins every ISR.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::TopicReplication;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureProducer;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

fn options() -> BrokerOptions {
    BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("replica.lag.time.max.ms", 3000)
        .prop("group.initial.rebalance.delay.ms", 0)
}

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    c
}

/// Each partition's (leader, replicas, isr) as `node` describes `topic`.
fn placement(node: &Broker, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)> {
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(topic.to_string())));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    let m: MetadataResponse = raw_request(node, ApiKey::Metadata, 12, &req);
    assert_eq!(m.topics[0].error_code, 0, "{m:?}");
    let ids = |v: &[BrokerId]| {
        let mut v: Vec<i32> = v.iter().map(|b| b.0).collect();
        v.sort();
        v
    };
    m.topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                (p.leader_id.0, ids(&p.replica_nodes), ids(&p.isr_nodes)),
            )
        })
        .collect()
}

/// Waits until `check` holds for `topic`'s placement as `node` describes it.
fn wait_for_placement(
    node: &Broker,
    topic: &str,
    what: &str,
    check: impl Fn(&BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)>) -> bool,
) -> BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = placement(node, topic);
        if check(&p) {
            return p;
        }
        assert!(Instant::now() < deadline, "{what}: {p:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn create(bootstrap: &str, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    create_topic_in(
        bootstrap,
        name,
        partitions,
        TopicReplication::Fixed(3),
        configs,
    );
}

fn records(from: usize, to: usize) -> Vec<(Option<Vec<u8>>, Vec<u8>)> {
    (from..to)
        .map(|i| {
            (
                Some(format!("key-{}", i % 50).into_bytes()),
                format!("{i}").into_bytes(),
            )
        })
        .collect()
}

#[test]
fn acks_all_writes_survive_the_leaders_sigkill_and_the_restarted_broker_rejoins_the_isr() {
    let mut cluster = Cluster::start_with(3, options());
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let bootstrap = cluster.bootstrap();
    create(&bootstrap, "replicated", 3, &[("min.insync.replicas", "2")]);
    let all = BTreeSet::from([1, 2, 3]);
    let start = wait_for_placement(
        &cluster.nodes[0],
        "replicated",
        "every replica in sync",
        |p| p.values().all(|(_, r, isr)| r.len() == 3 && isr.len() == 3),
    );
    assert!(start
        .values()
        .all(|(_, r, _)| r.iter().copied().collect::<BTreeSet<_>>() == all));

    let producer: FutureProducer = config(&bootstrap)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "60000")
        .create()
        .unwrap();
    let first = produce_all(&producer, "replicated", &records(0, 300), None);
    assert_eq!(first.len(), 300);

    // SIGKILL of partition 0's leader: one of its in-sync followers takes over.
    let (victim, _, _) = start[&0];
    cluster.node(victim).kill();
    let survivor = (1..=3).find(|&i| i != victim).unwrap();
    let after = wait_for_placement(cluster.node(survivor), "replicated", "a new leader", |p| {
        p.values()
            .all(|(l, _, isr)| *l != victim && *l >= 0 && !isr.contains(&victim))
    });
    assert!(after.values().all(|(_, _, isr)| isr.len() == 2));
    // The leaders report what is under-replicated.
    let leaders: BTreeSet<i32> = after.values().map(|(l, _, _)| *l).collect();
    let under: f64 = leaders
        .iter()
        .map(|&l| metric(cluster.node(l), "samsa_under_replicated_partitions"))
        .sum();
    assert!(
        under >= 3.0,
        "every partition of the topic is under-replicated: {under}"
    );
    let mut cli = std::process::Command::new(compat_tests::samsa_bin());
    cli.args(["topic", "describe", "--under-replicated", "-b"])
        .arg(cluster.node(survivor).bootstrap());
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cli, Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{err}");
    for p in 0..3 {
        assert!(
            out.lines().any(|l| l
                .split_whitespace()
                .take(2)
                .eq(["replicated", &p.to_string()])),
            "partition {p} listed as under-replicated:\n{out}"
        );
    }
    let second = produce_all(&producer, "replicated", &records(300, 600), None);
    assert_eq!(second.len(), 300);

    // min.insync.replicas=3 refuses acks=all writes with two replicas in sync.
    create(
        &cluster.bootstrap(),
        "strict",
        1,
        &[("min.insync.replicas", "3")],
    );
    let strict = wait_for_placement(cluster.node(survivor), "strict", "a leader", |p| {
        p[&0].0 >= 0
    });
    let leader = strict[&0].0;
    assert_eq!(
        produce_raw(cluster.node(leader), "strict", 0),
        kafka_protocol::ResponseError::NotEnoughReplicas.code()
    );

    // Every acknowledged record once, offsets dense, each key's records in order.
    let consumer: BaseConsumer = config(&cluster.bootstrap())
        .set("group.id", "replicated-check")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..3 {
        tpl.add_partition_offset("replicated", p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let got = consume_n(&consumer, 600, Duration::from_secs(60));
    let values: BTreeSet<u32> = got
        .iter()
        .map(|g| String::from_utf8_lossy(&g.value).parse().unwrap())
        .collect();
    assert_eq!(
        values,
        (0..600).collect::<BTreeSet<u32>>(),
        "every record once"
    );
    let mut by_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let mut by_key: BTreeMap<Vec<u8>, Vec<u32>> = BTreeMap::new();
    for g in &got {
        by_partition.entry(g.partition).or_default().push(g.offset);
        by_key
            .entry(g.key.clone().unwrap())
            .or_default()
            .push(String::from_utf8_lossy(&g.value).parse().unwrap());
    }
    for (p, offsets) in by_partition {
        assert!(
            offsets.windows(2).all(|w| w[1] == w[0] + 1) && offsets[0] == 0,
            "partition {p}: offsets {offsets:?}"
        );
    }
    for (k, vs) in by_key {
        assert!(vs.windows(2).all(|w| w[0] < w[1]), "key {k:?}: {vs:?}");
    }

    // The killed broker comes back, catches up, and is in every ISR again.
    cluster.node(victim).restart();
    let healed = wait_for_placement(
        cluster.node(survivor),
        "replicated",
        "the ISR back to three",
        |p| p.values().all(|(_, _, isr)| isr.len() == 3),
    );
    let leaders: BTreeSet<i32> = healed.values().map(|(l, _, _)| *l).collect();
    let expands: f64 = leaders
        .iter()
        .map(|&l| metric(cluster.node(l), "samsa_isr_changes_total{state=\"expand\"}"))
        .sum();
    assert!(
        expands >= 1.0,
        "the rejoining follower was counted: {expands}"
    );
}
