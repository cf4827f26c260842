//! Clients on a cluster of three real `samsa` processes: librdkafka, kcat and kafka-python see
//! all three brokers from whichever node they bootstrap from, topics are placed across the
//! brokers and every node describes them alike, records go to each partition's leader (a
//! broker that does not lead answers NOT_LEADER_OR_FOLLOWER and says who does, KIP-951),
//! consumer groups, idempotent producers and transactions work across brokers; killing the active controller
//! leaves a quorum that still creates topics, the killed node comes back knowing them, and with
//! two of three nodes down a topic creation fails with an error instead of hanging.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureProducer;

/// Quick fencing, so that a killed broker stops being offered within seconds.
fn options() -> BrokerOptions {
    BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("group.initial.rebalance.delay.ms", 0)
}

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    c
}

/// Each partition's (leader, replicas, isr) as `node` describes `topic`.
fn placement(node: &Broker, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)> {
    let m = metadata(node, Some(&[topic]));
    assert_eq!(
        m.topics[0].error_code, 0,
        "{topic} from node {}: {m:?}",
        node.port
    );
    m.topics[0]
        .partitions
        .iter()
        .map(|p| {
            let ids = |v: &[BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
            (
                p.partition_index,
                (p.leader_id.0, ids(&p.replica_nodes), ids(&p.isr_nodes)),
            )
        })
        .collect()
}

fn create(bootstrap: &str, name: &str, partitions: i32) -> Result<(), String> {
    let admin: AdminClient<DefaultClientContext> = config(bootstrap).create().unwrap();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(5)));
    let t = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    let r = runtime()
        .block_on(admin.create_topics(&[t], &opts))
        .map_err(|e| e.to_string())?;
    r[0].clone().map(|_| ()).map_err(|(_, e)| format!("{e:?}"))
}

fn run_python(script: &str, args: &[&str]) {
    let path = compat_tests::workspace_root()
        .join("compat-tests/python")
        .join(script);
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&path).args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
    assert!(
        status.success(),
        "{script} failed ({status}):\n{out}\n{err}"
    );
}

#[test]
fn every_client_sees_three_brokers_and_topics_spread_over_them() {
    let cluster = Cluster::start_with(3, options());
    let (leader, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let bootstrap = cluster.bootstrap();

    // librdkafka, bootstrapped from one node, learns the other two.
    let admin: AdminClient<DefaultClientContext> =
        config(&cluster.nodes[1].bootstrap()).create().unwrap();
    let md = admin
        .inner()
        .fetch_metadata(None, Duration::from_secs(10))
        .unwrap();
    let ids: BTreeSet<i32> = md.brokers().iter().map(|b| b.id()).collect();
    assert_eq!(ids, BTreeSet::from([1, 2, 3]));
    let ports: BTreeSet<u16> = md.brokers().iter().map(|b| b.port() as u16).collect();
    let expected: BTreeSet<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    assert_eq!(
        ports, expected,
        "each broker at its own advertised listener"
    );

    // Six partitions, placed by the controller: two led by each broker, and every node says so.
    create(&cluster.nodes[1].bootstrap(), "spread", 6).unwrap();
    let seen = placement(&cluster.nodes[0], "spread");
    let mut led: BTreeMap<i32, usize> = BTreeMap::new();
    for (leader, replicas, isr) in seen.values() {
        *led.entry(*leader).or_default() += 1;
        assert_eq!((replicas, isr), (&vec![*leader], &vec![*leader]));
    }
    assert_eq!(led, BTreeMap::from([(1, 2), (2, 2), (3, 2)]));
    for node in &cluster.nodes[1..] {
        assert_eq!(placement(node, "spread"), seen, "node {}", node.port);
    }

    // kcat sees the three brokers and the placement too.
    let out = Command::new(compat_tests::kcat())
        .args(["-b", &cluster.nodes[2].bootstrap(), "-L", "-t", "spread"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" 3 brokers:"), "{text}");
    for (p, (leader, _, _)) in &seen {
        assert!(
            text.contains(&format!("partition {p}, leader {leader},")),
            "{text}"
        );
    }

    // An idempotent producer (its producer id comes from the controller) writes to every
    // leader; a group consumer reads each record once through its coordinator.
    let producer: FutureProducer = config(&bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .create()
        .unwrap();
    let records: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..300)
        .map(|i| {
            (
                Some(format!("k{i}").into_bytes()),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    let written = produce_all(&producer, "spread", &records, None);
    let partitions: BTreeSet<i32> = written.iter().map(|(p, _)| *p).collect();
    assert_eq!(partitions.len(), 6, "keys spread over every partition");
    let consumer: BaseConsumer = config(&cluster.nodes[2].bootstrap())
        .set("group.id", "spread-readers")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    consumer.subscribe(&["spread"]).unwrap();
    let got = consume_n(&consumer, 300, Duration::from_secs(60));
    let values: BTreeSet<Vec<u8>> = got.iter().map(|g| g.value.clone()).collect();
    assert_eq!(values.len(), 300, "every record once");
    consumer
        .commit_consumer_state(rdkafka::consumer::CommitMode::Sync)
        .unwrap();

    // A broker that does not lead a partition refuses a write to it and names the leader.
    let (&index, &(p_leader, _, _)) = seen.iter().next().unwrap();
    let other = cluster
        .nodes
        .iter()
        .find(|n| n.port != cluster.nodes[(p_leader - 1) as usize].port)
        .unwrap();
    let mut pd = produce_request::PartitionProduceData::default();
    pd.index = index;
    pd.records = Some(one_record_batch());
    let mut td = produce_request::TopicProduceData::default();
    td.name = TopicName(StrBytes::from_static_str("spread"));
    td.partition_data = vec![pd];
    let mut req = ProduceRequest::default();
    req.acks = 1;
    req.timeout_ms = 5000;
    req.topic_data = vec![td];
    let resp: ProduceResponse = raw_request(other, ApiKey::Produce, 11, &req);
    let pr = &resp.responses[0].partition_responses[0];
    assert_eq!(
        pr.error_code,
        kafka_protocol::ResponseError::NotLeaderOrFollower.code()
    );
    assert_eq!(pr.current_leader.leader_id.0, p_leader);
    assert_eq!(
        resp.node_endpoints
            .iter()
            .map(|e| (e.node_id.0, e.port))
            .collect::<Vec<_>>(),
        vec![(p_leader, cluster.nodes[(p_leader - 1) as usize].port as i32)]
    );

    // kafka-python: the cluster, a topic over every broker, a group across them, and the
    // metadata quorum with its three voters (its own describe_metadata_quorum).
    run_python("kafka_python_cluster.py", &[&bootstrap, "3"]);
    let (leader_now, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    assert_eq!(leader_now, leader);
    run_python(
        "kafka_python_quorum.py",
        &[&bootstrap, &leader.to_string(), "3"],
    );

    // Transactions whose partitions, group and coordinator are on different brokers: the
    // coordinator verifies remotely (KIP-890) and writes its markers through the leaders.
    run_python("confluent_kafka_txn.py", &[&bootstrap]);
}

#[test]
fn topics_are_created_after_the_controller_dies_and_not_without_a_majority() {
    let mut cluster = Cluster::start_with(3, options());
    let (leader, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    create(&cluster.bootstrap(), "before", 3).unwrap();

    // SIGKILL of the active controller: the other two elect a leader and go on.
    cluster.node(leader).kill();
    let survivor = (1..=3).find(|&i| i != leader).unwrap();
    let (new_leader, _, _) = settled(cluster.node(survivor), 2, 1, Duration::from_secs(30));
    assert_ne!(new_leader, leader);
    wait_for_brokers(cluster.node(survivor), 2, Duration::from_secs(30));
    create(&cluster.bootstrap(), "after", 3).unwrap();
    let placed = placement(cluster.node(survivor), "after");
    assert!(
        placed.values().all(|(l, _, _)| *l != leader),
        "no partition on the fenced broker: {placed:?}"
    );
    // Its partitions of the earlier topic are offline, not silently moved.
    let m = metadata(cluster.node(survivor), Some(&["before"]));
    for p in &m.topics[0].partitions {
        if p.replica_nodes == [BrokerId(leader)] {
            assert_eq!(
                p.error_code,
                kafka_protocol::ResponseError::LeaderNotAvailable.code()
            );
            assert_eq!(p.offline_replicas, vec![BrokerId(leader)]);
        }
    }

    // The killed node, restarted, knows what was created without it.
    cluster.node(leader).restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = metadata(cluster.node(leader), Some(&["after"]));
        if m.topics[0].error_code == 0 {
            assert_eq!(m.topics[0].partitions.len(), 3);
            break;
        }
        assert!(Instant::now() < deadline, "restarted node: {m:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_brokers(cluster.node(leader), 3, Duration::from_secs(30));

    // Two of three down: a creation is refused within its timeout, and reads go on.
    let keep = leader;
    for id in (1..=3).filter(|&i| i != keep) {
        cluster.node(id).kill();
    }
    let started = Instant::now();
    let mut req = CreateTopicsRequest::default();
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = TopicName(StrBytes::from_static_str("no-majority"));
    t.num_partitions = 1;
    t.replication_factor = 1;
    req.topics = vec![t];
    req.timeout_ms = 3000;
    let resp: CreateTopicsResponse = raw_request(cluster.node(keep), ApiKey::CreateTopics, 7, &req);
    let elapsed = started.elapsed();
    let r = &resp.topics[0];
    assert!(
        r.error_code == kafka_protocol::ResponseError::RequestTimedOut.code()
            || r.error_code == kafka_protocol::ResponseError::NotController.code(),
        "{r:?}"
    );
    assert!(
        r.error_message.as_ref().is_some_and(|m| !m.is_empty()),
        "a message says why: {r:?}"
    );
    assert!(elapsed < Duration::from_secs(10), "answered in {elapsed:?}");
    let m = metadata(cluster.node(keep), Some(&["before", "after"]));
    assert!(m.topics.iter().all(|t| t.error_code == 0), "{m:?}");
}
