//! A cluster of real `samsa` processes: three nodes, each broker and controller, elect one
//! leader of the KRaft metadata quorum over their controller listeners, report it the same way
//! through DescribeQuorum (asked of any node, as kafka-python's admin client asks), elect
//! another when the leader is killed or paused, refuse cleanly with no majority, and catch up
//! when they come back.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::Cluster;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

#[test]
fn three_nodes_elect_one_leader_that_every_node_reports() {
    let cluster = Cluster::start(3);
    let (leader, epoch, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    assert!((1..=3).contains(&leader));
    for node in &cluster.nodes {
        let r = describe(node);
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (p.leader_id.0, p.leader_epoch),
            (leader, epoch),
            "asked node {}",
            node.port
        );
        let mut ids: Vec<i32> = p.current_voters.iter().map(|v| v.replica_id.0).collect();
        ids.sort();
        assert_eq!(ids, vec![1, 2, 3]);
        for v in &p.current_voters {
            assert!(v.last_fetch_timestamp > 0, "{v:?}");
            assert!(v.last_caught_up_timestamp > 0, "{v:?}");
        }
        assert_eq!(r.nodes.len(), 3, "every voter's controller endpoint");
    }
    // kafka-python's admin client sees the same quorum.
    let script = compat_tests::workspace_root().join("compat-tests/python/kafka_python_quorum.py");
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&script)
        .arg(cluster.bootstrap())
        .arg(leader.to_string())
        .arg("3");
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
    assert!(status.success(), "kafka_python_quorum.py: {out}\n{err}");

    // A broker-only node follows the quorum as an observer, and says so in the leader's view.
    let mut cluster = cluster;
    let observer = cluster.add_observer(4);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = describe(observer);
        let p = &r.topics[0].partitions[0];
        if p.observers
            .iter()
            .any(|o| o.replica_id.0 == 4 && o.log_end_offset > 0)
        {
            assert!(p.current_voters.iter().all(|v| v.replica_id.0 != 4));
            break;
        }
        assert!(Instant::now() < deadline, "no observer 4 in {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    while !observer
        .log_lines()
        .iter()
        .any(|l| l.contains("the controller unfenced this broker"))
    {
        assert!(Instant::now() < deadline, "observer 4 never unfenced");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_killed_or_paused_leader_is_replaced_and_no_majority_means_no_leader() {
    let mut cluster = Cluster::start(3);
    let (first, epoch, hw) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));

    // Kill the leader: the other two elect one of themselves in a later epoch.
    cluster.node(first).kill();
    let survivor = (1..=3).find(|&i| i != first).unwrap();
    let (second, epoch2, hw2) = settled(cluster.node(survivor), 2, hw, Duration::from_secs(30));
    assert_ne!(second, first);
    assert!(epoch2 > epoch, "epoch {epoch2} after {epoch}");
    assert!(hw2 > hw, "the new leader commits its LeaderChange batch");

    // Pause the new leader too: one node of three is no majority; it answers, and says there
    // is no leader rather than naming a dead one forever.
    cluster.node(second).pause();
    let last = (1..=3).find(|&i| i != first && i != second).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = describe(cluster.node(last));
        let p = &r.topics[0].partitions[0];
        if p.error_code == ResponseError::NotLeaderOrFollower.code() {
            assert!(p
                .error_message
                .as_deref()
                .unwrap_or_default()
                .contains("leader"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still a leader without a majority: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Both come back: one leader again, and the restarted node catches up.
    cluster.node(second).resume();
    cluster.node(first).restart();
    // It was away while the others committed past `hw2`: it holds that much again.
    let (_, epoch3, _) = settled(cluster.node(first), 3, hw2, Duration::from_secs(30));
    assert!(epoch3 >= epoch2);
}

use kafka_protocol::ResponseError;

#[test]
fn a_node_away_while_the_others_snapshotted_catches_up_from_the_leaders_snapshot() {
    // Snapshots after every few records, so the log the paused node needs is gone by the time
    // it comes back: it must fetch the leader's snapshot (FetchSnapshot) and go on from there.
    let options = compat_tests::BrokerOptions::default()
        .prop("metadata.log.max.record.bytes.between.snapshots", 20)
        .prop("metadata.log.segment.bytes", 1024);
    let mut cluster = Cluster::start_with(3, options);
    let (leader, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    let away = (1..=3).find(|&i| i != leader).unwrap();
    cluster.node(away).pause();
    // The leader writes a no-op record every 500 ms; wait for a few snapshots past the node.
    let (_, _, hw) = settled(cluster.node(leader), 2, 1, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(4));
    cluster.node(away).resume();
    let (_, _, now) = settled(cluster.node(leader), 3, hw + 4, Duration::from_secs(30));
    assert!(now > hw);
    let log = cluster.node(away).log_lines();
    assert!(
        log.iter()
            .any(|l| l.contains("metadata snapshot installed from the leader")),
        "node {away} caught up without the snapshot:\n{}",
        log.join("\n")
    );
}

#[test]
fn the_controller_listener_serves_only_the_controller_apis_and_survives_bad_input() {
    use std::io::{Read, Write};
    let cluster = Cluster::start(1);
    let node = &cluster.nodes[0];
    settled(node, 1, 1, Duration::from_secs(30));
    let controller = cluster.voters.split_once('@').unwrap().1.to_string();

    // ApiVersions there lists the controllers' RPCs and DescribeQuorum, not the client APIs.
    let versions: ApiVersionsResponse =
        raw_request_to(&controller, ApiKey::ApiVersions, 3, &api_versions_request());
    let keys: Vec<i16> = versions.api_keys.iter().map(|k| k.api_key).collect();
    for k in [
        ApiKey::Vote,
        ApiKey::Fetch,
        ApiKey::DescribeQuorum,
        ApiKey::BrokerHeartbeat,
    ] {
        assert!(keys.contains(&(k as i16)), "{k:?} missing from {keys:?}");
    }
    assert!(!keys.contains(&(ApiKey::Produce as i16)), "{keys:?}");
    // What Kafka's tools given --bootstrap-controller ask (KIP-919) is served there too, with
    // the features this controller supports and those finalized.
    for k in [ApiKey::DescribeCluster, ApiKey::DescribeConfigs] {
        assert!(keys.contains(&(k as i16)), "{k:?} missing from {keys:?}");
    }
    let finalized: Vec<(String, i16)> = versions
        .finalized_features
        .iter()
        .map(|f| (f.name.to_string(), f.max_version_level))
        .collect();
    assert_eq!(
        finalized,
        vec![
            ("metadata.version".to_string(), 25),
            ("group.version".to_string(), 1),
            ("share.version".to_string(), 2),
            ("streams.version".to_string(), 1),
            ("transaction.version".to_string(), 2),
        ]
    );
    assert!(versions.finalized_features_epoch > 0);
    let v4: ApiVersionsResponse =
        raw_request_to(&controller, ApiKey::ApiVersions, 4, &api_versions_request());
    let supported: Vec<(String, i16, i16)> = v4
        .supported_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version, f.max_version))
        .collect();
    assert_eq!(
        supported,
        vec![
            ("metadata.version".to_string(), 7, 25),
            ("group.version".to_string(), 0, 1),
            ("share.version".to_string(), 0, 2),
            ("streams.version".to_string(), 0, 1),
            ("transaction.version".to_string(), 0, 2),
            ("kraft.version".to_string(), 0, 1)
        ]
    );
    // DescribeCluster: the voters by their controller endpoints, the leader; brokers are the
    // client listeners' to tell.
    let mut dc = DescribeClusterRequest::default();
    dc.endpoint_type = 2;
    let r: DescribeClusterResponse = raw_request_to(&controller, ApiKey::DescribeCluster, 1, &dc);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(
        (r.endpoint_type, r.controller_id.0, r.cluster_id.as_str()),
        (2, 1, cluster.cluster_id.as_str())
    );
    let listed: Vec<(i32, String)> = r
        .brokers
        .iter()
        .map(|b| (b.broker_id.0, format!("{}:{}", b.host, b.port)))
        .collect();
    assert_eq!(listed, vec![(1, controller.clone())]);
    dc.endpoint_type = 1;
    let r: DescribeClusterResponse = raw_request_to(&controller, ApiKey::DescribeCluster, 1, &dc);
    assert_eq!(r.error_code, ResponseError::MismatchedEndpointType.code());
    // DescribeConfigs: this node's configs, as its client listener describes them.
    let mut resource = describe_configs_request::DescribeConfigsResource::default();
    resource.resource_type = 4;
    resource.resource_name = StrBytes::from_static_str("1");
    resource.configuration_keys = Some(vec![StrBytes::from_static_str("log.dirs")]);
    let mut other = resource.clone();
    other.resource_name = StrBytes::from_static_str("2");
    let mut configs = DescribeConfigsRequest::default();
    configs.resources = vec![resource, other];
    let r: DescribeConfigsResponse =
        raw_request_to(&controller, ApiKey::DescribeConfigs, 4, &configs);
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    assert_eq!(
        r.results[0].configs[0].value.as_deref(),
        Some(node.data_dir.to_str().unwrap())
    );
    assert_eq!(
        r.results[1].error_code,
        ResponseError::InvalidRequest.code()
    );
    let from_client: DescribeConfigsResponse =
        raw_request(node, ApiKey::DescribeConfigs, 4, &configs);
    assert_eq!(r, from_client);
    // And the client listener does not list the controllers' RPCs.
    let versions: ApiVersionsResponse =
        raw_request(node, ApiKey::ApiVersions, 3, &api_versions_request());
    assert!(!versions
        .api_keys
        .iter()
        .any(|k| k.api_key == ApiKey::Vote as i16));

    // A vote from another cluster is refused with INCONSISTENT_CLUSTER_ID.
    let mut p = vote_request::PartitionData::default();
    p.partition_index = 0;
    p.replica_epoch = 1000;
    p.replica_id = BrokerId(7);
    let mut t = vote_request::TopicData::default();
    t.topic_name = TopicName(StrBytes::from_static_str("__cluster_metadata"));
    t.partitions = vec![p];
    let mut vote = VoteRequest::default();
    vote.cluster_id = Some(StrBytes::from_static_str("someOtherClusterId0000"));
    vote.topics = vec![t];
    let r: VoteResponse = raw_request_to(&controller, ApiKey::Vote, 2, &vote);
    assert_eq!(r.error_code, ResponseError::InconsistentClusterId.code());

    // A client request, and bytes that are no request at all, close only that connection.
    for junk in [
        {
            let mut produce = vec![0, 0, 0, 12];
            produce.extend_from_slice(&[0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0, 0]);
            produce
        },
        vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3],
    ] {
        let mut s = std::net::TcpStream::connect(&controller).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&junk).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "closed without an answer");
    }
    // The quorum goes on: still led, still committing.
    let (leader, _, hw) = settled(node, 1, 1, Duration::from_secs(10));
    assert_eq!(leader, 1);
    settled(node, 1, hw + 1, Duration::from_secs(10));
}
