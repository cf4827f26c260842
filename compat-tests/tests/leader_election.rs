//! Leader elections on three real `samsa` voters and one broker-only node, one cluster:
//! - ElectLeaders PREFERRED gives leadership back to a restarted preferred replica once it is in
//!   sync again (Metadata shows it at once, one leader epoch later), and says
//!   ELECTION_NOT_NEEDED when asked again; `samsa topic elect-leaders --preferred --all` finds
//!   nothing left to do;
//! - a partition whose only in-sync replica shut down stays without a leader when its live
//!   replica is out of sync, unless its topic has `unclean.leader.election.enable` (the replica
//!   leads as soon as it is back) or someone asks for an UNCLEAN election
//!   (`samsa topic elect-leaders --unclean`); either way the records only the old leader had are
//!   gone, the unclean elections are counted (`samsa_leader_elections_total`) and logged;
//! - with `auto.leader.rebalance.enable=true` and a one-second
//!   `leader.imbalance.check.interval.seconds`, leadership returns to a restarted preferred
//!   replica without being asked.
//!
//! The voters start with `auto.leader.rebalance.enable=false`, so that nothing but the test moves
//! leadership back; each non-active voter is restarted with it on along the way, so that when
//! the active controller is shut down at the end, its successor rebalances. The unclean part
//! needs a follower that is alive but out of sync when the partition's last in-sync replica goes:
//! that is the broker-only node, whose restart does not cost the metadata quorum its majority.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::admin::TopicReplication;
use rdkafka::consumer::{BaseConsumer, Consumer};

const AUTO_REBALANCE: &str = "auto.leader.rebalance.enable";

fn options() -> BrokerOptions {
    BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("replica.lag.time.max.ms", 3000)
        .prop(AUTO_REBALANCE, false)
        .prop("leader.imbalance.check.interval.seconds", 1)
}

/// A partition as `node` describes it: (leader, leader epoch, replicas in order, ISR sorted).
fn partition(node: &Broker, topic: &str, p: i32) -> (i32, i32, Vec<i32>, Vec<i32>) {
    let m = metadata(node, Some(&[topic]));
    let t = &m.topics[0];
    assert_eq!(t.error_code, 0, "{topic} from node {}: {m:?}", node.port);
    let x = t
        .partitions
        .iter()
        .find(|x| x.partition_index == p)
        .unwrap_or_else(|| panic!("no {topic}-{p}: {m:?}"));
    let mut isr: Vec<i32> = x.isr_nodes.iter().map(|b| b.0).collect();
    isr.sort();
    (
        x.leader_id.0,
        x.leader_epoch,
        x.replica_nodes.iter().map(|b| b.0).collect(),
        isr,
    )
}

/// Waits (up to 30 s) until `check` holds for `topic`-`p` as `node` describes it.
fn wait_for(
    node: &Broker,
    topic: &str,
    p: i32,
    what: &str,
    check: impl Fn(&(i32, i32, Vec<i32>, Vec<i32>)) -> bool,
) -> (i32, i32, Vec<i32>, Vec<i32>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = partition(node, topic, p);
        if check(&state) {
            return state;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}-{p}: {what}; (leader, epoch, replicas, isr) = {state:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Creates `name` with one partition per replica list, the first replica preferred.
fn create(bootstrap: &str, name: &str, assignment: &[&[i32]], configs: &[(&str, &str)]) {
    let count = assignment.len() as i32;
    create_topic_in(
        bootstrap,
        name,
        count,
        TopicReplication::Variable(assignment),
        configs,
    );
}

/// ElectLeaders v2 for `topic`'s `partitions`, asked of `node`.
fn elect(
    node: &Broker,
    election_type: i8,
    topic: &str,
    partitions: &[i32],
) -> ElectLeadersResponse {
    let mut t = elect_leaders_request::TopicPartitions::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = partitions.to_vec();
    let mut r = ElectLeadersRequest::default();
    r.election_type = election_type;
    r.topic_partitions = Some(vec![t]);
    r.timeout_ms = 10_000;
    raw_request(node, ApiKey::ElectLeaders, 2, &r)
}

/// The one partition answer of an ElectLeaders response: (top-level code, code, message).
fn answer(r: &ElectLeadersResponse) -> (i16, i16, String) {
    let p = &r.replica_election_results[0].partition_result[0];
    (
        r.error_code,
        p.error_code,
        p.error_message.as_deref().unwrap_or("").to_string(),
    )
}

/// `samsa topic elect-leaders ARGS -b NODE`: (success, stdout, stderr).
fn cli(node: &Broker, args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(compat_tests::samsa_bin());
    cmd.args(["topic", "elect-leaders"])
        .args(args)
        .args(["-b", &node.bootstrap()]);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
    (status.success(), out, err)
}

/// The sum over running nodes of the series that start with `series` (0 where absent).
fn metric_sum(cluster: &Cluster, series: &str) -> f64 {
    cluster
        .nodes
        .iter()
        .filter(|n| n.is_running())
        .map(|n| metric(n, series))
        .sum()
}

/// The active controller, as `node` knows it.
fn active_controller(node: &Broker) -> i32 {
    describe(node).topics[0].partitions[0].leader_id.0
}

/// Restarts a stopped node with `auto.leader.rebalance.enable=true`.
fn restart_rebalancing(node: &mut Broker) {
    node.options.props.retain(|(k, _)| k != AUTO_REBALANCE);
    node.options
        .props
        .push((AUTO_REBALANCE.into(), "true".into()));
    node.restart();
}

fn watermarks(node: &Broker, topic: &str) -> (i64, i64) {
    let c: BaseConsumer = client_config(node).create().unwrap();
    c.fetch_watermarks(topic, 0, Duration::from_secs(10))
        .unwrap()
}

#[test]
fn preferred_and_unclean_elections_when_asked_and_on_their_own() {
    let mut cluster = Cluster::start_with(3, options());
    let (z, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    // X and Y: the voters that are not the active controller Z.
    let others: Vec<i32> = (1..=3).filter(|&i| i != z).collect();
    let (x, y) = (others[0], others[1]);
    let mut assignment: Vec<[i32; 3]> = Vec::new();
    for first in [x, y, z] {
        let rest: Vec<i32> = (1..=3).filter(|&i| i != first).collect();
        assignment.push([first, rest[0], rest[1]]);
    }
    let assignment: Vec<&[i32]> = assignment.iter().map(|a| &a[..]).collect();
    create(&cluster.bootstrap(), "elect", &assignment, &[]);
    for p in 0..3 {
        wait_for(cluster.node(z), "elect", p, "every replica in sync", |s| {
            s.3.len() == 3
        });
    }

    // PREFERRED, asked for: X shuts down (its partition 0 fails over), comes back, catches up.
    cluster.node(x).stop();
    let (_, failover_epoch, _, _) =
        wait_for(cluster.node(z), "elect", 0, "leadership off X", |s| {
            s.0 != x && s.0 >= 0
        });
    restart_rebalancing(cluster.node(x));
    wait_for(cluster.node(y), "elect", 0, "X in sync again", |s| {
        s.3.contains(&x)
    });
    assert_eq!(
        active_controller(cluster.node(y)),
        z,
        "the active controller is still the one that does not rebalance"
    );
    assert_ne!(
        partition(cluster.node(y), "elect", 0).0,
        x,
        "nothing moved leadership back by itself"
    );
    // Asked of a broker that is not the controller: it forwards, and its own Metadata shows the
    // new leader as soon as it answers.
    let r = elect(cluster.node(y), 0, "elect", &[0]);
    assert_eq!(answer(&r), (0, 0, String::new()), "{r:?}");
    let (leader, epoch, _, _) = partition(cluster.node(y), "elect", 0);
    assert_eq!((leader, epoch), (x, failover_epoch + 1));
    let (top, code, message) = answer(&elect(cluster.node(x), 0, "elect", &[0]));
    assert_eq!(
        (top, code),
        (0, ResponseError::ElectionNotNeeded.code()),
        "{message}"
    );
    let (ok, out, err) = cli(cluster.node(x), &["--preferred", "--all"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out, "no partition needed a preferred election\n");
    assert!(
        metric_sum(
            &cluster,
            "samsa_leader_elections_total{election_type=\"preferred\"}"
        ) >= 1.0
    );

    // UNCLEAN: two partitions on [Y, 4], broker 4 a broker-only node. It shuts down, so Y is
    // the only replica in sync; records go to Y alone; then Y shuts down.
    cluster.add_observer(4);
    wait_for_brokers(cluster.node(z), 4, Duration::from_secs(30));
    let lenient = [("unclean.leader.election.enable", "true")];
    create(&cluster.bootstrap(), "lossy", &[&[y, 4]], &[]);
    create(&cluster.bootstrap(), "lenient", &[&[y, 4]], &lenient);
    for t in ["lossy", "lenient"] {
        wait_for(cluster.node(z), t, 0, "both replicas in sync", |s| {
            s.3.len() == 2
        });
    }
    cluster.node(4).stop();
    let producer = producer(cluster.node(y), &[("acks", "all")]);
    for t in ["lossy", "lenient"] {
        wait_for(cluster.node(z), t, 0, "broker 4 out of the ISR", |s| {
            s.3 == [y]
        });
        let values: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..5)
            .map(|i| (None, format!("only on {y}: {i}").into_bytes()))
            .collect();
        produce_all(&producer, t, &values, Some(0));
        assert_eq!(watermarks(cluster.node(y), t), (0, 5));
    }
    drop(producer);
    cluster.node(y).stop();
    for t in ["lossy", "lenient"] {
        wait_for(cluster.node(z), t, 0, "no leader once Y is gone", |s| {
            s.0 == -1 && s.3 == [y]
        });
    }
    // Broker 4 comes back out of sync: the topic that allows it elects it at once.
    cluster.node(4).restart();
    let (_, epoch, _, isr) = wait_for(cluster.node(z), "lenient", 0, "broker 4 leads", |s| {
        s.0 == 4
    });
    assert_eq!(isr, [4]);
    std::thread::sleep(Duration::from_millis(500));
    let (leader, lossy_epoch, _, isr) = partition(cluster.node(z), "lossy", 0);
    assert_eq!((leader, isr), (-1, vec![y]), "the other topic waits for Y");
    let r = elect(cluster.node(4), 0, "lossy", &[0]);
    assert_eq!(
        answer(&r).1,
        ResponseError::PreferredLeaderNotAvailable.code(),
        "{r:?}"
    );
    // Unless asked.
    let (ok, out, err) = cli(cluster.node(4), &["--unclean", "--topic", "lossy"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().eq(["lossy", "0", "elected"])),
        "{out}"
    );
    let (leader, epoch_after, _, isr) = partition(cluster.node(4), "lossy", 0);
    assert_eq!((leader, epoch_after, isr), (4, lossy_epoch + 1, vec![4]));
    assert!(epoch >= 1);
    for t in ["lossy", "lenient"] {
        assert_eq!(
            watermarks(cluster.node(4), t),
            (0, 0),
            "{t}: Y's records are lost"
        );
    }
    assert_eq!(
        metric_sum(
            &cluster,
            "samsa_leader_elections_total{election_type=\"unclean\"}"
        ),
        2.0
    );
    let warned = cluster.node(z).log_lines();
    for t in ["lenient", "lossy"] {
        assert!(
            warned.iter().any(|l| l.contains("WARN")
                && l.contains(&format!(
                    "broker 4 now leads {t}-0 from outside the ISR [{y}]"
                ))
                && l.contains("records that only the former ISR had are lost")),
            "no warning for {t}-0 on the active controller:\n{}",
            warned.join("\n")
        );
    }
    let (ok, out, _) = cli(cluster.node(4), &["--unclean", "--topic", "lossy"]);
    assert!(
        ok && out.lines().any(|l| l.ends_with("not needed")),
        "{out}"
    );
    restart_rebalancing(cluster.node(y));

    // Rebalancing on its own: Z, the active controller, shuts down; its successor rebalances
    // every second; Z comes back, and leads its partition again without being asked.
    cluster.node(z).stop();
    wait_for(cluster.node(x), "elect", 2, "leadership off Z", |s| {
        s.0 != z && s.0 >= 0
    });
    cluster.node(z).restart();
    wait_for(cluster.node(x), "elect", 2, "Z leads again", |s| s.0 == z);
    let successor = active_controller(cluster.node(x));
    assert!(successor == x || successor == y, "{successor}");
    assert!(
        metric(
            cluster.node(successor),
            "samsa_leader_elections_total{election_type=\"preferred\"}"
        ) >= 1.0
    );
    for p in 0..3 {
        let (leader, _, replicas, _) = partition(cluster.node(z), "elect", p);
        assert_eq!(
            leader, replicas[0],
            "elect-{p} led by its preferred replica"
        );
    }
}
