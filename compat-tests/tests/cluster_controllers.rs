//! A cluster with separate controllers, as Kafka runs one: three `process.roles=controller`
//! nodes form the metadata quorum and serve nothing to clients; two `process.roles=broker`
//! nodes follow it as observers, register, and hold every partition. Clients see only the
//! brokers; DescribeQuorum shows the three voters and the brokers as observers; the active
//! controller's SIGKILL leaves the cluster able to change metadata; and a broker that knows the
//! quorum only through `controller.quorum.bootstrap.servers` (KIP-853) joins it. One cluster
//! start for all of it: each costs seconds, and CI runs this file on two I/O engines.

mod common;

use std::time::{Duration, Instant};

use common::*;
use compat_tests::Cluster;
use kafka_protocol::messages::*;
use rdkafka::admin::{AdminOptions, NewTopic, TopicReplication};
use rdkafka::topic_partition_list::Offset;

fn broker_ids(node: &Broker) -> Vec<i32> {
    let mut ids: Vec<i32> = metadata(node, Some(&[]))
        .brokers
        .iter()
        .map(|b| b.node_id.0)
        .collect();
    ids.sort();
    ids
}

/// DescribeQuorum's partition, as `addr` answers it.
fn quorum_at(addr: &str) -> describe_quorum_response::PartitionData {
    let r: DescribeQuorumResponse =
        raw_request_to(addr, ApiKey::DescribeQuorum, 2, &describe_quorum_request());
    r.topics[0].partitions[0].clone()
}

/// Creates `name` through `bootstrap`, asking again while the quorum elects a new leader.
fn create_topic_retrying(bootstrap: &str, name: &str, replicas: i32, timeout: Duration) {
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        rdkafka::config::ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .create()
            .expect("admin client");
    let deadline = Instant::now() + timeout;
    loop {
        let topic = NewTopic::new(name, 2, TopicReplication::Fixed(replicas));
        let result = runtime()
            .block_on(admin.create_topics(&[topic], &AdminOptions::new()))
            .map_err(|e| e.to_string())
            .and_then(|mut r| r.remove(0).map_err(|(_, e)| e.to_string()));
        match result {
            Ok(_) => return,
            Err(e) if e.contains("TopicAlreadyExists") => return,
            Err(e) if Instant::now() > deadline => panic!("create {name}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

#[test]
fn brokers_follow_separate_controllers_and_survive_the_active_controllers_death() {
    let mut cluster = Cluster::start_separate(3, 2, BrokerOptions::default());
    let b4 = &cluster.nodes[3];
    wait_for_brokers(b4, 2, Duration::from_secs(30));

    // Clients see the brokers only: Metadata and DescribeCluster list 4 and 5.
    assert_eq!(broker_ids(b4), vec![4, 5]);
    let dc: DescribeClusterResponse = raw_request(
        b4,
        ApiKey::DescribeCluster,
        0,
        &DescribeClusterRequest::default(),
    );
    let mut ids: Vec<i32> = dc.brokers.iter().map(|b| b.broker_id.0).collect();
    ids.sort();
    assert_eq!(ids, vec![4, 5], "{dc:?}");

    // An RF=2 topic, written and read with librdkafka.
    let bootstrap = cluster.bootstrap();
    create_topic_retrying(&bootstrap, "orders", 2, Duration::from_secs(30));
    let producer = producer(b4, &[("acks", "all")]);
    let records: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..20)
        .map(|i| (None, format!("order-{i}").into_bytes()))
        .collect();
    let acked = produce_all(&producer, "orders", &records, Some(0));
    assert_eq!(acked.len(), 20);
    let consumer = assigned_consumer(&cluster.nodes[4], "orders", &[0], Offset::Beginning);
    let got = consume_n(&consumer, 20, Duration::from_secs(30));
    let values: Vec<&[u8]> = got.iter().map(|g| &g.value[..]).collect();
    let sent: Vec<&[u8]> = records.iter().map(|(_, v)| &v[..]).collect();
    assert_eq!(values, sent);
    let partitions = metadata(b4, Some(&["orders"])).topics[0].partitions.clone();
    for p in &partitions {
        let mut replicas: Vec<i32> = p.replica_nodes.iter().map(|r| r.0).collect();
        replicas.sort();
        assert_eq!(replicas, vec![4, 5], "every replica on a broker: {p:?}");
    }

    // DescribeQuorum through a broker: three voters, the brokers as observers.
    let deadline = Instant::now() + Duration::from_secs(30);
    let quorum = loop {
        let p = quorum_at(&b4.bootstrap());
        let mut observers: Vec<i32> = p.observers.iter().map(|o| o.replica_id.0).collect();
        observers.sort();
        if p.error_code == 0 && observers == vec![4, 5] {
            break p;
        }
        assert!(Instant::now() < deadline, "no observers 4 and 5 in {p:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut voters: Vec<i32> = quorum
        .current_voters
        .iter()
        .map(|v| v.replica_id.0)
        .collect();
    voters.sort();
    assert_eq!(voters, vec![1, 2, 3]);
    let leader = quorum.leader_id.0;
    assert!((1..=3).contains(&leader), "{quorum:?}");

    // Each controller answers on its controller listener: the leader with the quorum, the
    // others NOT_LEADER_OR_FOLLOWER (6), as Kafka's controllers do.
    for id in 1..=3 {
        let p = quorum_at(&cluster.nodes[id as usize - 1].bootstrap());
        if id == leader {
            assert_eq!((p.error_code, p.leader_id.0), (0, leader), "{p:?}");
            assert_eq!(p.current_voters.len(), 3);
        } else {
            assert_eq!(p.error_code, 6, "controller {id}: {p:?}");
        }
    }

    // `samsa cluster info` shows the voters with their controller endpoints, and observers.
    let mut cmd = std::process::Command::new(compat_tests::samsa_bin());
    cmd.args(["-b", &b4.bootstrap(), "cluster", "info", "--format", "json"]);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
    assert!(status.success(), "samsa cluster info: {err}");
    let info: serde_json::Value = serde_json::from_str(&out).unwrap();
    let replicas = info["quorum"]["replicas"].as_array().unwrap();
    for id in 1..=3 {
        let r = replicas.iter().find(|r| r["node_id"] == id).expect("voter");
        let endpoint = cluster.nodes[id as usize - 1].bootstrap();
        assert_eq!(r["endpoint"], endpoint.as_str(), "{info}");
        assert_ne!(r["status"], "observer");
    }
    for id in [4, 5] {
        let r = replicas
            .iter()
            .find(|r| r["node_id"] == id)
            .expect("observer");
        assert_eq!(r["status"], "observer", "{info}");
    }
    let brokers: Vec<&serde_json::Value> = info["brokers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["node_id"])
        .collect();
    assert_eq!(brokers, [4, 5], "{info}");

    // A broker given only one controller's address (a follower's) as its bootstrap server
    // finds the leader through it and joins.
    let follower = (1..=3).find(|&id| id != leader).unwrap();
    let follower_addr = cluster.nodes[follower as usize - 1].bootstrap();
    cluster.add_bootstrap_observer(6, &follower_addr);
    wait_for_brokers(&cluster.nodes[3], 3, Duration::from_secs(30));

    // SIGKILL of the active controller: the other two elect a leader, and the brokers, the
    // bootstrap-only one included, go on creating topics through it.
    cluster.node(leader).kill();
    let bootstrap = cluster.bootstrap();
    create_topic_retrying(&bootstrap, "after-failover", 3, Duration::from_secs(60));
    // The bootstrap-only broker learns of the topic when it replays the metadata log, which
    // may be a moment after CreateTopics answered through another broker (as in Kafka).
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    let partitions = loop {
        let t = metadata(&cluster.nodes[5], Some(&["after-failover"])).topics[0].clone();
        if t.error_code == 0 && t.partitions.len() == 2 {
            eprintln!("broker 6 saw the topic after {:?}", started.elapsed());
            break t.partitions;
        }
        assert!(
            Instant::now() < deadline,
            "broker 6 never saw the topic: {t:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for p in &partitions {
        let mut replicas: Vec<i32> = p.replica_nodes.iter().map(|r| r.0).collect();
        replicas.sort();
        assert_eq!(replicas, vec![4, 5, 6], "{p:?}");
    }
    let p = quorum_at(&cluster.nodes[5].bootstrap());
    assert_eq!(p.error_code, 0, "{p:?}");
    assert!(p.leader_id.0 != leader && (1..=3).contains(&p.leader_id.0));
}
