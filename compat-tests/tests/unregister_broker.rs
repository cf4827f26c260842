//! UnregisterBroker with Kafka 4.4's own tool: `kafka-cluster.sh unregister` (ClusterTool, the
//! admin client's `unregisterBroker`) removes a stopped broker's registration from a cluster of
//! three, through a broker (`--bootstrap-server`, which forwards it to the active controller) or
//! a controller (`--bootstrap-controller`). Afterwards no node lists the broker, fenced or not
//! (DescribeCluster with fenced brokers, `kafka-cluster.sh list-endpoints
//! --include-fenced-brokers`, Metadata), and no ISR holds it. An id that is not registered is
//! refused with Kafka's exception and message.
//!
//! Kafka's tools come from Maven Central through `compat_tests::kafka_java` (installed once by
//! `scripts/reference/kafka install`); Java 17 is a prerequisite of the test suite.

mod common;

use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::*;
use rdkafka::admin::TopicReplication;

const CLUSTER_TOOL: &str = "org.apache.kafka.tools.ClusterTool";

/// What a tool run gave: exit status, stdout, stderr.
struct Ran {
    ok: bool,
    out: String,
    err: String,
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ok {}\n--- stdout\n{}--- stderr\n{}",
            self.ok, self.out, self.err
        )
    }
}

/// `kafka-cluster.sh` with `args`, as its script runs it.
fn cluster_tool(args: &[&str]) -> Ran {
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = compat_tests::kafka_java::kafka_tool(CLUSTER_TOOL, logs.path());
    cmd.args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
    let ran = Ran {
        ok: status.success(),
        out,
        err,
    };
    eprintln!("$ kafka-cluster {}\n{ran}", args.join(" "));
    ran
}

/// The broker ids `node` describes, fenced ones included (DescribeCluster v2).
fn described_brokers(node: &compat_tests::Broker) -> Vec<i32> {
    let mut req = DescribeClusterRequest::default();
    req.endpoint_type = 1;
    req.include_fenced_brokers = true;
    let r: DescribeClusterResponse = raw_request(node, ApiKey::DescribeCluster, 2, &req);
    assert_eq!(r.error_code, 0, "{r:?}");
    let mut ids: Vec<i32> = r.brokers.iter().map(|b| b.broker_id.0).collect();
    ids.sort();
    ids
}

/// The ids `list-endpoints --include-fenced-brokers` prints, one line per broker after its
/// header (`ID HOST PORT RACK STATE ENDPOINT_TYPE`).
fn listed_endpoints(bootstrap: &str) -> Vec<i32> {
    let ran = cluster_tool(&[
        "list-endpoints",
        "--bootstrap-server",
        bootstrap,
        "--include-fenced-brokers",
    ]);
    assert!(ran.ok, "{ran}");
    let mut ids: Vec<i32> = ran
        .out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    ids.sort();
    ids
}

fn eventually(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn kafkas_cluster_tool_unregisters_a_stopped_broker_and_refuses_an_unknown_id() {
    let mut cluster = start_quick_cluster(compat_tests::BrokerOptions::default());
    create_topic_in(
        &cluster.bootstrap(),
        "unregistered",
        3,
        TopicReplication::Fixed(3),
        &[],
    );
    cluster.nodes[2].stop();
    let (one, two) = (&cluster.nodes[0], &cluster.nodes[1]);
    // Node 3 is fenced once its session ends: still registered, listed as fenced.
    wait_for_brokers(one, 2, Duration::from_secs(30));
    assert_eq!(described_brokers(one), vec![1, 2, 3]);
    assert_eq!(listed_endpoints(&one.bootstrap()), vec![1, 2, 3]);

    let ran = cluster_tool(&[
        "unregister",
        "--bootstrap-server",
        &one.bootstrap(),
        "--id",
        "3",
    ]);
    assert!(ran.ok, "{ran}");
    assert_eq!(ran.out.trim(), "Broker 3 is no longer registered.", "{ran}");
    // Answered once the broker that forwarded it no longer holds the registration; every
    // other node learns it from the metadata log.
    assert_eq!(described_brokers(one), vec![1, 2]);
    eventually("node 2 forgets broker 3", Duration::from_secs(10), || {
        described_brokers(two) == vec![1, 2]
    });
    assert_eq!(listed_endpoints(&two.bootstrap()), vec![1, 2]);
    for node in [one, two] {
        let m = metadata(node, Some(&["unregistered"]));
        assert!(m.brokers.iter().all(|b| b.node_id.0 != 3), "{m:?}");
        for p in &m.topics[0].partitions {
            assert!(!p.isr_nodes.iter().any(|b| b.0 == 3), "{p:?}");
            assert!(p.leader_id.0 == 1 || p.leader_id.0 == 2, "{p:?}");
        }
    }

    // Ids that are not registered (any more), as Kafka refuses them.
    let controller = cluster
        .voters
        .split(',')
        .next()
        .and_then(|v| v.split_once('@'))
        .map(|(_, addr)| addr.to_string())
        .unwrap();
    for (bootstrap, id) in [
        (["--bootstrap-server", &one.bootstrap()], "99"),
        (["--bootstrap-server", &two.bootstrap()], "3"),
        (["--bootstrap-controller", controller.as_str()], "99"),
    ] {
        let ran = cluster_tool(&[&["unregister"], &bootstrap[..], &["--id", id]].concat());
        assert!(!ran.ok, "{ran}");
        let expected = format!(
            "org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID {id} is \
             not currently registered"
        );
        assert!(ran.err.lines().next() == Some(expected.as_str()), "{ran}");
    }
    assert_eq!(described_brokers(one), vec![1, 2]);
}
