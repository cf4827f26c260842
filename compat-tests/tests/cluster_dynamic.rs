//! A dynamic metadata quorum (KIP-853, kraft.version 1) on real `samsa` processes: the first
//! controller formatted with `samsa storage format --standalone`, two more started with only
//! `controller.quorum.bootstrap.servers` (observers until added), added with `samsa cluster
//! add-controller`; the first killed, the others elect a leader and create topics, and remove
//! it; then the leader removes itself and the one voter left leads. A fixed voter set refuses
//! voter changes.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{free_port, Broker, BrokerOptions};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

struct Node {
    id: i32,
    port: u16,
    controller_port: u16,
    dir: std::path::PathBuf,
}

impl Node {
    fn new(id: i32, root: &Path) -> Node {
        Node {
            id,
            port: free_port(),
            controller_port: free_port(),
            dir: root.join(format!("node-{id}")),
        }
    }

    /// The properties of a combined node of the dynamic quorum whose bootstrap server is
    /// `bootstrap` (a controller address).
    fn props(&self, bootstrap: &str) -> Vec<(String, String)> {
        [
            ("node.id", self.id.to_string()),
            ("process.roles", "broker,controller".into()),
            (
                "listeners",
                format!(
                    "PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
                    self.port, self.controller_port
                ),
            ),
            ("controller.listener.names", "CONTROLLER".into()),
            ("controller.quorum.bootstrap.servers", bootstrap.into()),
            ("log.dirs", self.dir.display().to_string()),
            ("broker.session.timeout.ms", "3000".into()),
            ("broker.heartbeat.interval.ms", "500".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn start(&self, bootstrap: &str, cluster_id: &str) -> Broker {
        let mut o = BrokerOptions {
            port: Some(self.port),
            data_dir: Some(self.dir.clone()),
            ..Default::default()
        };
        for (k, v) in self.props(bootstrap) {
            o = o.prop(&k, v);
        }
        Broker::start_with(o.prop("cluster.id", cluster_id))
    }
}

fn samsa(args: &[String]) -> (bool, String) {
    let mut cmd = Command::new(compat_tests::samsa_bin());
    cmd.args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(60)).unwrap();
    (status.success(), format!("{out}{err}"))
}

/// `samsa cluster <args>` against `node`, retried while the quorum says "not now" (the new
/// controller has not caught up yet, or the last change is not committed).
fn cluster_cli(node: &Broker, args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut all = vec!["cluster".to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        all.extend(["-b".to_string(), node.bootstrap()]);
        let (ok, out) = samsa(&all);
        if ok {
            return out;
        }
        assert!(
            out.contains("RequestTimedOut") || out.contains("NotController"),
            "samsa cluster {args:?}: {out}"
        );
        assert!(Instant::now() < deadline, "samsa cluster {args:?}: {out}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The voters' ids and the leader, as `node` reports the quorum once it names a leader.
fn quorum(node: &Broker) -> (Vec<i32>, i32, DescribeQuorumResponse) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = describe(node);
        let p = &r.topics[0].partitions[0];
        if p.error_code == 0 && p.leader_id.0 >= 0 {
            let mut ids: Vec<i32> = p.current_voters.iter().map(|v| v.replica_id.0).collect();
            ids.sort();
            let leader = p.leader_id.0;
            return (ids, leader, r);
        }
        assert!(
            Instant::now() < deadline,
            "no leader via {}: {r:?}",
            node.port
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_for_voters(node: &Broker, want: &[i32]) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ids, leader, r) = quorum(node);
        if ids == want && want.contains(&leader) {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "voters {ids:?} (leader {leader}) via {}, not {want:?}: {r:?}",
            node.port
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn create_topic_cli(node: &Broker, name: &str, replicas: i32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, out) = samsa(&[
            "topic".into(),
            "create".into(),
            name.into(),
            "--partitions".into(),
            "2".into(),
            "--replicas".into(),
            replicas.to_string(),
            "-b".into(),
            node.bootstrap(),
        ]);
        if ok {
            return;
        }
        assert!(Instant::now() < deadline, "topic create {name}: {out}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn controllers_join_and_leave_a_dynamic_quorum_that_keeps_serving() {
    let root = tempfile::tempdir().unwrap();
    let nodes: Vec<Node> = (1..=3).map(|i| Node::new(i, root.path())).collect();
    let bootstrap = format!("127.0.0.1:{}", nodes[0].controller_port);

    // Format the first controller: the only voter of a new quorum. Formatting twice is refused.
    let format = |n: &Node| {
        let mut args = vec![
            "storage".to_string(),
            "format".into(),
            "--standalone".into(),
        ];
        args.extend(
            n.props(&bootstrap)
                .into_iter()
                .map(|(k, v)| format!("--{k}={v}")),
        );
        args.push("--metrics.listener=".into());
        samsa(&args)
    };
    let (ok, out) = format(&nodes[0]);
    assert!(ok, "format: {out}");
    assert!(out.contains("only voter"), "{out}");
    let (ok, out) = format(&nodes[0]);
    assert!(
        !ok && out.contains("already holds"),
        "formatted twice: {out}"
    );
    let meta = std::fs::read_to_string(nodes[0].dir.join("meta.properties")).unwrap();
    let cluster_id = meta
        .lines()
        .find_map(|l| l.strip_prefix("cluster.id="))
        .unwrap()
        .to_string();

    let mut brokers: Vec<Broker> = nodes
        .iter()
        .map(|n| n.start(&bootstrap, &cluster_id))
        .collect();
    assert_eq!(wait_for_voters(&brokers[1], &[1]), 1);

    // The others follow as observers and join; asking twice is DUPLICATE_VOTER.
    for n in &nodes[1..] {
        let out = cluster_cli(
            &brokers[2],
            &[
                "add-controller",
                "--id",
                &n.id.to_string(),
                "--endpoint",
                &format!("127.0.0.1:{}", n.controller_port),
            ],
        );
        assert!(out.contains("is a voter"), "{out}");
    }
    assert_eq!(wait_for_voters(&brokers[2], &[1, 2, 3]), 1);
    let (_, _, r) = quorum(&brokers[1]);
    assert_eq!(r.nodes.len(), 3, "every voter's endpoint: {r:?}");
    let mut listener = add_raft_voter_request::Listener::default();
    listener.name = StrBytes::from_static_str("CONTROLLER");
    listener.host = StrBytes::from_static_str("127.0.0.1");
    listener.port = nodes[1].controller_port;
    let mut again = AddRaftVoterRequest::default();
    again.voter_id = 2;
    again.timeout_ms = 5000;
    again.listeners = vec![listener];
    let resp: AddRaftVoterResponse = raw_request(&brokers[0], ApiKey::AddRaftVoter, 0, &again);
    assert_eq!(resp.error_code, 126, "{resp:?}");
    let mut unknown = RemoveRaftVoterRequest::default();
    unknown.voter_id = 9;
    let resp: RemoveRaftVoterResponse =
        raw_request(&brokers[0], ApiKey::RemoveRaftVoter, 0, &unknown);
    assert_eq!(resp.error_code, 127, "{resp:?}");
    create_topic_cli(&brokers[1], "before", 3);
    // ApiVersions names the quorum's kraft.version as finalized.
    let versions: ApiVersionsResponse =
        raw_request(&brokers[1], ApiKey::ApiVersions, 3, &api_versions_request());
    assert!(
        versions
            .finalized_features
            .iter()
            .any(|f| f.name.as_str() == "kraft.version" && f.max_version_level == 1),
        "{:?}",
        versions.finalized_features
    );

    // The first controller dies: the two others elect one of themselves and go on.
    brokers[0].kill();
    let leader = {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (ids, leader, _) = quorum(&brokers[1]);
            if leader != 1 {
                assert_eq!(ids, vec![1, 2, 3]);
                break leader;
            }
            assert!(Instant::now() < deadline, "still led by the killed node");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    create_topic_cli(&brokers[2], "after-kill", 2);
    let out = cluster_cli(&brokers[1], &["remove-controller", "--id", "1"]);
    assert!(out.contains("no longer a voter"), "{out}");
    assert_eq!(wait_for_voters(&brokers[2], &[2, 3]), leader);

    // The leader removes itself: it resigns once that is committed and the other leads, and
    // the removed node finds it as an observer.
    let other = if leader == 2 { 3 } else { 2 };
    let out = cluster_cli(
        &brokers[1],
        &["remove-controller", "--id", &leader.to_string()],
    );
    assert!(out.contains("no longer a voter"), "{out}");
    for b in &brokers[1..] {
        assert_eq!(wait_for_voters(b, &[other]), other);
    }
    create_topic_cli(&brokers[(leader - 1) as usize], "after-removal", 2);

    // The first node comes back on its data: it learns it is no voter and follows.
    brokers[0] = nodes[0].start(&bootstrap, &cluster_id);
    assert_eq!(wait_for_voters(&brokers[0], &[other]), other);
}

#[test]
fn a_fixed_voter_set_refuses_voter_changes() {
    let node = Broker::start();
    let mut r = RemoveRaftVoterRequest::default();
    r.voter_id = 1;
    let resp: RemoveRaftVoterResponse = raw_request(&node, ApiKey::RemoveRaftVoter, 0, &r);
    assert_eq!(resp.error_code, 35, "{resp:?}");
    assert!(
        resp.error_message
            .as_deref()
            .unwrap_or_default()
            .contains("controller.quorum.voters"),
        "{resp:?}"
    );
}
