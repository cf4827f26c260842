//! Kafka 4.4's own tools given `--bootstrap-controller` (KIP-919) against Samsa's controller
//! listener: kafka-features (describe, upgrade and downgrade dry runs), kafka-metadata-quorum
//! (describe --status, --replication), kafka-cluster cluster-id and kafka-configs (describe and
//! alter of broker configs), each run as its `bin/kafka-*.sh` script would run it and judged by
//! its output and exit status. Their admin client reads the controllers by DescribeCluster,
//! features by ApiVersions, configs by DescribeConfigs there, and sends DescribeQuorum to the
//! active controller it names; any voter can be the bootstrap. kafka-features is also run
//! through a broker (`--bootstrap-server`), where metadata.version downgrades go as in Kafka.
//!
//! Kafka's tools come from Maven Central through `compat_tests::kafka_java` (installed once by
//! `scripts/reference/kafka install`); Java 17 is a prerequisite of the test suite.

mod common;

use std::time::Duration;

use common::*;
use compat_tests::Cluster;
use kafka_protocol::messages::*;

/// What a tool run gave: exit status, stdout, stderr.
struct Ran {
    ok: bool,
    code: Option<i32>,
    out: String,
    err: String,
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.out, self.err
        )
    }
}

/// Runs Kafka's tool `class` (e.g. `org.apache.kafka.tools.FeatureCommand`) with `args`, as
/// its `bin/kafka-*.sh` script would.
fn tool(class: &str, args: &[&str]) -> Ran {
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = compat_tests::kafka_java::kafka_tool(class, logs.path());
    cmd.args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
    let ran = Ran {
        ok: status.success(),
        code: status.code(),
        out,
        err,
    };
    eprintln!("$ {class} {}\n{ran}", args.join(" "));
    ran
}

const FEATURES: &str = "org.apache.kafka.tools.FeatureCommand";
const QUORUM: &str = "org.apache.kafka.tools.MetadataQuorumCommand";
const CLUSTER: &str = "org.apache.kafka.tools.ClusterTool";
const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";

/// The line of kafka-features' describe about `feature`, its fields split on whitespace.
fn feature_line(out: &str, feature: &str) -> Option<Vec<String>> {
    out.lines()
        .find(|l| l.starts_with(&format!("Feature: {feature} ")))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
}

/// The value after `field` (e.g. `FinalizedVersionLevel:`) in a kafka-features line.
fn field<'a>(line: &'a [String], name: &str) -> &'a str {
    let i = line
        .iter()
        .position(|w| w == name)
        .unwrap_or_else(|| panic!("{name} in {line:?}"));
    &line[i + 1]
}

/// The value of `Key:` in kafka-metadata-quorum's describe --status.
fn status_field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("{key} in {out}"))
        .trim()
}

/// Each voter's controller address, by node id, from `controller.quorum.voters`.
fn controllers(cluster: &Cluster) -> Vec<(i32, String)> {
    cluster
        .voters
        .split(',')
        .map(|v| {
            let (id, addr) = v.split_once('@').unwrap();
            (id.parse().unwrap(), addr.to_string())
        })
        .collect()
}

#[test]
fn kafkas_tools_with_bootstrap_controller_describe_and_change_a_single_node() {
    let cluster = Cluster::start(1);
    settled(&cluster.nodes[0], 1, 1, Duration::from_secs(30));
    let controller = controllers(&cluster)[0].1.clone();
    let bootstrap = ["--bootstrap-controller", controller.as_str()];

    // kafka-features: the features this controller supports and the levels finalized, as
    // ApiVersions on the controller listener reports them. Samsa claims metadata.version up to
    // 4.0-IV3, kraft.version, group.version, share.version, streams.version and
    // transaction.version, nothing else (no eligible.leader.replicas.version, ...).
    let describe = tool(FEATURES, &[&bootstrap[..], &["describe"]].concat());
    assert!(describe.ok, "{describe}");
    let mv = feature_line(&describe.out, "metadata.version").expect("metadata.version");
    assert_eq!(field(&mv, "SupportedMinVersion:"), "3.3-IV3", "{describe}");
    assert_eq!(field(&mv, "SupportedMaxVersion:"), "4.0-IV3", "{describe}");
    assert_eq!(
        field(&mv, "FinalizedVersionLevel:"),
        "4.0-IV3",
        "{describe}"
    );
    let epoch: i64 = field(&mv, "Epoch:").parse().unwrap();
    assert!(epoch > 0, "{describe}");
    let kraft = feature_line(&describe.out, "kraft.version").expect("kraft.version");
    assert_eq!(field(&kraft, "SupportedMinVersion:"), "0");
    assert_eq!(field(&kraft, "SupportedMaxVersion:"), "1");
    let tv = feature_line(&describe.out, "transaction.version").expect("transaction.version");
    assert_eq!(field(&tv, "SupportedMaxVersion:"), "2");
    assert_eq!(field(&tv, "FinalizedVersionLevel:"), "2", "{describe}");
    let sv = feature_line(&describe.out, "share.version").expect("share.version");
    assert_eq!(field(&sv, "SupportedMinVersion:"), "0");
    assert_eq!(field(&sv, "SupportedMaxVersion:"), "2");
    assert_eq!(field(&sv, "FinalizedVersionLevel:"), "2", "{describe}");
    let gv = feature_line(&describe.out, "group.version").expect("group.version");
    assert_eq!(field(&gv, "SupportedMaxVersion:"), "1");
    assert_eq!(field(&gv, "FinalizedVersionLevel:"), "1", "{describe}");
    let stv = feature_line(&describe.out, "streams.version").expect("streams.version");
    assert_eq!(field(&stv, "SupportedMaxVersion:"), "1");
    assert_eq!(field(&stv, "FinalizedVersionLevel:"), "1", "{describe}");
    assert_eq!(describe.out.lines().count(), 6, "{describe}");

    // A dry run to the level in force is fine; a downgrade that loses metadata is refused.
    let upgrade = tool(
        FEATURES,
        &[
            &bootstrap[..],
            &["upgrade", "--metadata", "4.0-IV3", "--dry-run"],
        ]
        .concat(),
    );
    assert!(upgrade.ok, "{upgrade}");
    assert!(
        upgrade
            .out
            .contains("metadata.version can be upgraded to 25."),
        "{upgrade}"
    );
    let downgrade = tool(
        FEATURES,
        &[
            &bootstrap[..],
            &["downgrade", "--metadata", "3.9-IV0", "--dry-run"],
        ]
        .concat(),
    );
    assert!(!downgrade.ok, "{downgrade}");
    assert!(
        downgrade
            .out
            .contains("Can not downgrade metadata.version to 21.")
            && downgrade.out.contains("might delete metadata information"),
        "{downgrade}"
    );
    // Levels of features Samsa does not have are refused by its controller, not ignored.
    let unknown = tool(
        FEATURES,
        &[
            &bootstrap[..],
            &[
                "upgrade",
                "--feature",
                "eligible.leader.replicas.version=1",
                "--dry-run",
            ],
        ]
        .concat(),
    );
    assert!(!unknown.ok, "{unknown}");
    assert!(
        unknown
            .out
            .contains("Can not upgrade eligible.leader.replicas.version to 1."),
        "{unknown}"
    );

    // kafka-metadata-quorum: DescribeCluster names the active controller, which describes
    // the quorum.
    let status = tool(
        QUORUM,
        &[&bootstrap[..], &["describe", "--status"]].concat(),
    );
    assert!(status.ok, "{status}");
    assert_eq!(status_field(&status.out, "ClusterId"), cluster.cluster_id);
    assert_eq!(status_field(&status.out, "LeaderId"), "1");
    let voters = status_field(&status.out, "CurrentVoters");
    assert!(
        voters.contains(r#""id": 1"#) && voters.contains(&format!("CONTROLLER://{controller}")),
        "{status}"
    );
    let replication = tool(
        QUORUM,
        &[&bootstrap[..], &["describe", "--replication"]].concat(),
    );
    assert!(replication.ok, "{replication}");
    let leader_row = replication
        .out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("1"))
        .unwrap_or_else(|| panic!("no row for node 1: {replication}"));
    assert!(leader_row.contains("Leader"), "{replication}");

    // kafka-cluster cluster-id.
    let id = tool(
        CLUSTER,
        &["cluster-id", "--bootstrap-controller", &controller],
    );
    assert!(id.ok, "{id}");
    assert_eq!(id.out.trim(), format!("Cluster ID: {}", cluster.cluster_id));

    // kafka-configs: nothing dynamic yet; then a cluster default and a per-broker value set
    // through the controller are described by it with their sources.
    let broker_1 = [
        "--describe",
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
    ];
    let empty = tool(CONFIGS, &[&bootstrap[..], &broker_1[..]].concat());
    assert!(empty.ok, "{empty}");
    assert_eq!(
        empty.out.trim(),
        "Dynamic configs for broker 1 are:",
        "{empty}"
    );
    let alter_default = tool(
        CONFIGS,
        &[
            &bootstrap[..],
            &[
                "--alter",
                "--entity-type",
                "brokers",
                "--entity-default",
                "--add-config",
                "min.insync.replicas=1",
            ],
        ]
        .concat(),
    );
    assert!(alter_default.ok, "{alter_default}");
    let alter_1 = tool(
        CONFIGS,
        &[
            &bootstrap[..],
            &[
                "--alter",
                "--entity-type",
                "brokers",
                "--entity-name",
                "1",
                "--add-config",
                "log.cleaner.threads=2",
            ],
        ]
        .concat(),
    );
    assert!(alter_1.ok, "{alter_1}");
    // The controller answers from its committed image: wait for the change to be in it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let described = loop {
        let d = tool(CONFIGS, &[&bootstrap[..], &broker_1[..]].concat());
        assert!(d.ok, "{d}");
        if d.out.contains("log.cleaner.threads=2") || std::time::Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        described.out.contains(
            "log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}"
        ),
        "{described}"
    );
    let defaults = tool(
        CONFIGS,
        &[
            &bootstrap[..],
            &["--describe", "--entity-type", "brokers", "--entity-default"],
        ]
        .concat(),
    );
    assert!(defaults.ok, "{defaults}");
    assert!(
        defaults.out.contains(
            "min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}"
        ),
        "{defaults}"
    );
    // Every broker config, read-only ones too, with --all.
    let all = tool(
        CONFIGS,
        &[&bootstrap[..], &broker_1[..], &["--all"]].concat(),
    );
    assert!(all.ok, "{all}");
    assert!(
        all.out.starts_with("All configs for broker 1 are:"),
        "{all}"
    );
    assert!(
        all.out
            .lines()
            .any(|l| l.trim_start().starts_with("log.dirs=")),
        "{all}"
    );
    // The client listener tells the same.
    let via_broker = tool(
        CONFIGS,
        &[
            &["--bootstrap-server", cluster.nodes[0].bootstrap().as_str()][..],
            &broker_1[..],
        ]
        .concat(),
    );
    assert!(via_broker.ok, "{via_broker}");
    assert_eq!(via_broker.out, described.out);
}

#[test]
fn any_voter_of_three_answers_kafkas_tools_for_the_whole_quorum() {
    let cluster = Cluster::start(3);
    let (leader, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    let all = controllers(&cluster);

    // DescribeCluster on a follower lists every voter by its controller endpoint and names
    // the leader.
    let (follower, follower_addr) = all.iter().find(|(id, _)| *id != leader).unwrap().clone();
    let mut req = DescribeClusterRequest::default();
    req.endpoint_type = 2;
    let r: DescribeClusterResponse =
        raw_request_to(&follower_addr, ApiKey::DescribeCluster, 1, &req);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.endpoint_type, 2);
    assert_eq!(r.controller_id.0, leader, "asked node {follower}");
    let mut listed: Vec<(i32, String)> = r
        .brokers
        .iter()
        .map(|b| (b.broker_id.0, format!("{}:{}", b.host, b.port)))
        .collect();
    listed.sort();
    assert_eq!(listed, all);

    // kafka-metadata-quorum bootstrapped from a follower reaches the leader through it.
    let status = tool(
        QUORUM,
        &[
            "--bootstrap-controller",
            &follower_addr,
            "describe",
            "--status",
        ],
    );
    assert!(status.ok, "{status}");
    assert_eq!(status_field(&status.out, "LeaderId"), leader.to_string());
    // The leader describes itself as caught up now, as Kafka's does: no negative lag.
    let lag: i64 = status_field(&status.out, "MaxFollowerLagTimeMs")
        .parse()
        .unwrap();
    assert!(lag >= 0, "{status}");
    let voters = status_field(&status.out, "CurrentVoters");
    for (id, addr) in &all {
        assert!(
            voters.contains(&format!(r#""id": {id}"#))
                && voters.contains(&format!("CONTROLLER://{addr}")),
            "voter {id}: {status}"
        );
    }
    let replication = tool(
        QUORUM,
        &[
            "--bootstrap-controller",
            &follower_addr,
            "describe",
            "--replication",
        ],
    );
    assert!(replication.ok, "{replication}");
    for (id, _) in &all {
        let row = replication
            .out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no row for node {id}: {replication}"));
        let role = if *id == leader { "Leader" } else { "Follower" };
        assert!(row.contains(role), "node {id}: {replication}");
    }

    // Every voter, bootstrapped from all of them at once, tells the same features and id.
    let every: Vec<&str> = all.iter().map(|(_, a)| a.as_str()).collect();
    let every = every.join(",");
    let features = tool(FEATURES, &["--bootstrap-controller", &every, "describe"]);
    assert!(features.ok, "{features}");
    let mv = feature_line(&features.out, "metadata.version").expect("metadata.version");
    assert_eq!(
        field(&mv, "FinalizedVersionLevel:"),
        "4.0-IV3",
        "{features}"
    );
    let id = tool(CLUSTER, &["cluster-id", "--bootstrap-controller", &every]);
    assert!(id.ok, "{id}");
    assert_eq!(id.out.trim(), format!("Cluster ID: {}", cluster.cluster_id));
    // Each node describes its own configs; a voter asked for another's refuses.
    let other = tool(
        CONFIGS,
        &[
            "--bootstrap-controller",
            &follower_addr,
            "--describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            &leader.to_string(),
        ],
    );
    // The admin client sends a broker's DescribeConfigs to that node itself.
    assert!(other.ok, "{other}");
    assert!(
        other
            .out
            .starts_with(&format!("Dynamic configs for broker {leader} are:")),
        "{other}"
    );
}

/// Through a broker (`--bootstrap-server`, which forwards UpdateFeatures to the active
/// controller), kafka-features changes `metadata.version` as Kafka 4.4 does at 4.0-IV3: a safe
/// downgrade to 4.0-IV2 goes through (4.0-IV3 and -IV2 kept the metadata format; a Kafka 4.4
/// formatted at 4.0-IV3 takes it too), one past 4.0-IV1, which changed the format, is refused,
/// unsafe or not, and an upgrade back is taken.
#[test]
fn kafka_features_through_a_broker_downgrades_metadata_version_only_where_kafka_does() {
    let cluster = Cluster::start(1);
    settled(&cluster.nodes[0], 1, 1, Duration::from_secs(30));
    let broker = cluster.nodes[0].bootstrap();
    let bootstrap = ["--bootstrap-server", broker.as_str()];
    let finalized = || {
        let describe = tool(FEATURES, &[&bootstrap[..], &["describe"]].concat());
        assert!(describe.ok, "{describe}");
        let mv = feature_line(&describe.out, "metadata.version").expect("metadata.version");
        field(&mv, "FinalizedVersionLevel:").to_string()
    };
    assert_eq!(finalized(), "4.0-IV3");

    for unsafe_flag in [&[][..], &["--unsafe"][..]] {
        let refused = tool(
            FEATURES,
            &[
                &bootstrap[..],
                &["downgrade", "--feature", "metadata.version=22"],
                unsafe_flag,
            ]
            .concat(),
        );
        assert!(!refused.ok, "{refused}");
        assert!(
            refused
                .out
                .contains("Could not downgrade metadata.version to 22.")
                && refused
                    .out
                    .contains("Unsupported metadata.version downgrade from 25 to 22."),
            "{refused}"
        );
    }
    assert_eq!(finalized(), "4.0-IV3");

    let downgrade = tool(
        FEATURES,
        &[&bootstrap[..], &["downgrade", "--metadata", "4.0-IV2"]].concat(),
    );
    assert!(downgrade.ok, "{downgrade}");
    assert!(
        downgrade
            .out
            .contains("metadata.version was downgraded to 24."),
        "{downgrade}"
    );
    assert_eq!(finalized(), "4.0-IV2");
    let upgrade = tool(
        FEATURES,
        &[&bootstrap[..], &["upgrade", "--metadata", "4.0-IV3"]].concat(),
    );
    assert!(upgrade.ok, "{upgrade}");
    assert_eq!(finalized(), "4.0-IV3");
}
