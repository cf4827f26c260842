//! Share groups (KIP-932) through confluent-kafka's ShareConsumer (librdkafka's share
//! consumer, from PyPI) against the real binary: compat-tests/python/share_groups.py runs each
//! scenario and exits non-zero with a message when a check fails.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use compat_tests::Cluster;

/// A broker whose groups may hold records for as little as a second, so that lock expiry is
/// seen within a test, and that creates dead-letter topics on first use (Kafka's default is
/// not to).
fn broker() -> Broker {
    Broker::start_with(
        BrokerOptions::default()
            .prop("group.share.min.record.lock.duration.ms", 1000)
            .prop("errors.deadletterqueue.auto.create.topics.enable", true),
    )
}

fn scenario(broker: &Broker, name: &str) -> String {
    run_scenario(&broker.bootstrap(), 1, name, || broker.log_lines())
}

/// Runs one scenario against `bootstrap`, its topics with `replication_factor` replicas;
/// `logs` gives the broker log shown when it fails.
fn run_scenario(
    bootstrap: &str,
    replication_factor: usize,
    name: &str,
    logs: impl Fn() -> Vec<String>,
) -> String {
    let path = compat_tests::workspace_root().join("compat-tests/python/share_groups.py");
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&path)
        .arg(bootstrap)
        .arg(name)
        .env("SG_REPLICATION_FACTOR", replication_factor.to_string());
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(180)).unwrap();
    if !status.success() {
        let log = logs();
        let tail = log[log.len().saturating_sub(200)..].join("\n");
        panic!("share_groups.py {name} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}\nbroker log (last 200 lines):\n{tail}");
    }
    out
}

#[test]
fn two_share_consumers_split_one_partition_and_no_accepted_record_reaches_both() {
    scenario(&broker(), "two-consumers");
}

#[test]
fn records_of_a_killed_member_are_redelivered_after_their_lock() {
    scenario(&broker(), "killed-member");
}

#[test]
fn a_record_released_every_time_is_delivered_delivery_limit_times() {
    scenario(&broker(), "delivery-limit");
}

#[test]
fn a_rejected_record_is_never_redelivered() {
    scenario(&broker(), "reject");
}

#[test]
fn read_committed_share_groups_skip_aborted_transactions() {
    scenario(&broker(), "read-committed");
}

#[test]
fn acknowledgements_survive_a_broker_crash_and_held_records_come_back() {
    let mut broker = broker();
    scenario(&broker, "before-restart");
    broker.kill();
    broker.restart();
    // The group is known again before any member returns (its record in __consumer_offsets).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let listed = samsa(&broker, &["group", "list"], b"");
        if listed
            .lines()
            .any(|l| l.starts_with("sg-restart-g ") && l.ends_with("share"))
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{listed}");
        std::thread::sleep(Duration::from_millis(200));
    }
    scenario(&broker, "after-restart");
}

#[test]
fn archived_records_are_dead_lettered_once_with_their_context() {
    let broker = broker();
    scenario(&broker, "dlq");
    // The metrics count them per group (the dead letters are written by a task of their own:
    // polled until they show).
    let want = [
        "samsa_share_group_records_archived_total{group=\"sg-dlq-g\"} 2",
        "samsa_share_group_records_dead_lettered_total{group=\"sg-dlq-g\"} 2",
        "samsa_share_group_records_archived_total{group=\"sg-dlq2-g\"} 1",
        "samsa_share_group_dead_letters_failed_total{group=\"sg-dlq2-g\"} 1",
        "samsa_share_group_records_dead_lettered_total{group=\"sg-dlq2-g\"} 0",
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = broker.scrape_metrics().unwrap();
        let missing: Vec<&&str> = want
            .iter()
            .filter(|w| !text.lines().any(|l| l == **w))
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "metrics lack {missing:?}:\n{}",
            text.lines()
                .filter(|l| l.contains("share_group"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn dead_letters_are_written_once_across_a_broker_crash() {
    let mut broker = broker();
    scenario(&broker, "dlq-before-restart");
    broker.kill();
    broker.restart();
    scenario(&broker, "dlq-after-restart");
}

/// Runs the CLI against `broker`; returns stdout, panicking with stderr when it fails.
fn samsa(broker: &Broker, args: &[&str], stdin: &[u8]) -> String {
    samsa_at(&broker.bootstrap(), args, stdin)
}

/// Runs the CLI against the brokers at `bootstrap`; returns stdout, panicking with stderr when
/// it fails.
fn samsa_at(bootstrap: &str, args: &[&str], stdin: &[u8]) -> String {
    samsa_result(bootstrap, args, stdin)
        .unwrap_or_else(|err| panic!("samsa {args:?} failed: {err}"))
}

/// Runs the CLI against the brokers at `bootstrap`: stdout, or stderr when it fails.
fn samsa_result(bootstrap: &str, args: &[&str], stdin: &[u8]) -> Result<String, String> {
    let (status, out, err) = compat_tests::run_with_input(
        Command::new(compat_tests::samsa_bin())
            .arg("-b")
            .arg(bootstrap)
            .args(args),
        stdin,
        Duration::from_secs(60),
    )
    .unwrap();
    if status.success() {
        Ok(out)
    } else {
        Err(err)
    }
}

#[test]
fn the_cli_consumes_as_a_share_member_describes_and_resets_share_groups() {
    let broker = broker();
    samsa(
        &broker,
        &["topic", "create", "cli-sq", "--partitions", "1"],
        b"",
    );
    samsa(&broker, &["produce", "cli-sq"], b"a\nb\nc\nd\ne\n");
    // The group starts at the end by default: move it to the beginning first, as an operator
    // would (a group that does not exist yet is created without members).
    samsa(
        &broker,
        &[
            "group",
            "reset-offsets",
            "cli-g",
            "--share",
            "--topic",
            "cli-sq",
            "--to-earliest",
            "--execute",
        ],
        b"",
    );
    let out = samsa(
        &broker,
        &[
            "consume",
            "cli-sq",
            "--share-group",
            "cli-g",
            "-n",
            "2",
            "-e",
        ],
        b"",
    );
    assert_eq!(out, "a\nb\n");
    // Released records come back; accepted ones never do.
    let out = samsa(
        &broker,
        &[
            "consume",
            "cli-sq",
            "--share-group",
            "cli-g",
            "-n",
            "1",
            "--ack",
            "release",
            "-e",
            "-f",
            "%o:%v\\n",
        ],
        b"",
    );
    assert_eq!(out, "2:c\n");
    let out = samsa(
        &broker,
        &[
            "consume",
            "cli-sq",
            "--share-group",
            "cli-g",
            "-e",
            "-f",
            "%o:%v\\n",
        ],
        b"",
    );
    assert_eq!(out, "2:c\n3:d\n4:e\n");
    let described: serde_json::Value = serde_json::from_str(&samsa(
        &broker,
        &["group", "describe", "cli-g", "--format", "json"],
        b"",
    ))
    .unwrap();
    assert_eq!(described["type"], "share", "{described}");
    assert_eq!(described["state"], "Empty", "{described}");
    let row = &described["offsets"][0];
    assert_eq!(
        (
            row["topic"].as_str(),
            row["start_offset"].as_i64(),
            row["lag"].as_i64()
        ),
        (Some("cli-sq"), Some(5), Some(0)),
        "{described}"
    );
    assert_eq!(row["acquired"].as_u64(), Some(0), "{described}");
    // Back to offset 3: d and e again.
    samsa(
        &broker,
        &[
            "group",
            "reset-offsets",
            "cli-g",
            "--topic",
            "cli-sq",
            "--to-offset",
            "3",
            "--execute",
        ],
        b"",
    );
    let out = samsa(
        &broker,
        &["consume", "cli-sq", "--share-group", "cli-g", "-e"],
        b"",
    );
    assert_eq!(out, "d\ne\n");
    let listed = samsa(&broker, &["group", "list"], b"");
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("cli-g ") && l.ends_with("share")),
        "{listed}"
    );
    // A classic group on the same topic has its own progress: every record, from the start.
    let out = samsa(
        &broker,
        &["consume", "cli-sq", "-g", "cli-classic", "-e"],
        b"",
    );
    assert_eq!(out, "a\nb\nc\nd\ne\n");
    // Deleted with its state: a new member starts at the end (share.auto.offset.reset=latest).
    samsa(&broker, &["group", "delete", "cli-g"], b"");
    let listed = samsa(&broker, &["group", "list"], b"");
    assert!(!listed.contains("cli-g"), "{listed}");
    let out = samsa(
        &broker,
        &["consume", "cli-sq", "--share-group", "cli-g", "-e"],
        b"",
    );
    assert_eq!(out, "");
    samsa(&broker, &["produce", "cli-sq"], b"f\n");
    let out = samsa(
        &broker,
        &[
            "consume",
            "cli-sq",
            "--share-group",
            "cli-g",
            "-e",
            "-f",
            "%o:%v\\n",
        ],
        b"",
    );
    assert_eq!(out, "5:f\n");
}

/// Three nodes: AlterShareGroupOffsets of an empty share group moves the start offset of every
/// share-partition, whichever broker leads its topic partition (the group coordinator writes
/// the new state through each share-partition's share coordinator, at a new state epoch);
/// DescribeShareGroupOffsets shows the new offsets, and a member joining again is delivered
/// the records from there, not from the state the share-partition leaders held in memory.
#[test]
fn altering_an_empty_share_groups_offsets_on_three_nodes_moves_every_share_partition() {
    let cluster = Cluster::start_with(3, BrokerOptions::default());
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let bootstrap = cluster.bootstrap();
    let cli = |args: &[&str], stdin: &[u8]| samsa_at(&bootstrap, args, stdin);
    const PARTITIONS: i32 = 6;
    cli(
        &[
            "topic",
            "create",
            "ao-sq",
            "--partitions",
            &PARTITIONS.to_string(),
            "--replicas",
            "1",
        ],
        b"",
    );
    for p in 0..PARTITIONS {
        let records = format!("{p}a\n{p}b\n{p}c\n");
        cli(
            &["produce", "ao-sq", "-p", &p.to_string()],
            records.as_bytes(),
        );
    }
    // Leaders on at least two brokers: some share-partitions are led by a broker that is not
    // the group's coordinator.
    let leaders: std::collections::BTreeSet<i32> =
        common::acked::leaders_and_isrs(&cluster, "ao-sq")
            .expect("described")
            .into_iter()
            .map(|(leader, _)| leader)
            .collect();
    assert!(leaders.len() >= 2, "leaders {leaders:?}");
    // Retried while the group's coordinator is being elected (a cluster just started).
    let reset = |to: &[&str]| {
        let mut args = vec![
            "group",
            "reset-offsets",
            "ao-g",
            "--share",
            "--topic",
            "ao-sq",
        ];
        args.extend_from_slice(to);
        args.push("--execute");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match samsa_result(&bootstrap, &args, b"") {
                Ok(_) => break,
                Err(e)
                    if e.contains("retry in a moment") && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(200))
                }
                Err(e) => panic!("samsa {args:?} failed: {e}"),
            }
        }
    };
    let consume = || {
        let out = cli(
            &[
                "consume",
                "ao-sq",
                "--share-group",
                "ao-g",
                "-e",
                "-f",
                "%p:%o:%v\\n",
            ],
            b"",
        );
        let mut lines: Vec<String> = out.lines().map(String::from).collect();
        lines.sort();
        lines
    };
    let expected = |from: i64| {
        let mut v: Vec<String> = (0..PARTITIONS)
            .flat_map(|p| {
                (from..3).map(move |o| format!("{p}:{o}:{p}{}", (b'a' + o as u8) as char))
            })
            .collect();
        v.sort();
        v
    };
    let start_offsets = || {
        let described: serde_json::Value = serde_json::from_str(&cli(
            &["group", "describe", "ao-g", "--format", "json"],
            b"",
        ))
        .unwrap();
        assert_eq!(described["state"], "Empty", "{described}");
        described["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap() as i32,
                    r["start_offset"].as_i64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    // Everything read and accepted; the group left empty with its members' states in memory
    // on the partitions' leaders.
    reset(&["--to-earliest"]);
    assert_eq!(consume(), expected(0));
    assert_eq!(
        start_offsets(),
        (0..PARTITIONS).map(|p| (p, 3)).collect::<Vec<_>>()
    );
    // Back to offset 1 everywhere.
    reset(&["--to-offset", "1"]);
    assert_eq!(
        start_offsets(),
        (0..PARTITIONS).map(|p| (p, 1)).collect::<Vec<_>>()
    );
    assert_eq!(consume(), expected(1));
    assert_eq!(
        start_offsets(),
        (0..PARTITIONS).map(|p| (p, 3)).collect::<Vec<_>>()
    );
}

/// Three nodes: share-partitions are led by one broker, their state kept by the leader of
/// their `__share_group_state` partition (often another), and dead letters written to
/// partitions led elsewhere. When the leader of a share-partition dies, the new leader reads
/// its state: accepted and rejected records are not delivered again, held ones are.
#[test]
fn share_groups_on_three_nodes_survive_the_death_of_a_share_partition_leader() {
    let mut cluster = Cluster::start_with(
        3,
        BrokerOptions::default()
            .prop("group.share.min.record.lock.duration.ms", 1000)
            .prop("errors.deadletterqueue.auto.create.topics.enable", true)
            .prop("broker.session.timeout.ms", 3000)
            .prop("broker.heartbeat.interval.ms", 500),
    );
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let bootstrap = cluster.bootstrap();
    let logs = |c: &Cluster| {
        c.nodes
            .iter()
            .flat_map(|n| n.log_lines())
            .collect::<Vec<_>>()
    };
    run_scenario(&bootstrap, 3, "two-consumers", || logs(&cluster));
    run_scenario(&bootstrap, 3, "dlq", || logs(&cluster));
    run_scenario(&bootstrap, 3, "before-restart", || logs(&cluster));
    let leader = common::acked::leaders_and_isrs(&cluster, "sg-restart")
        .expect("the topic is described")[0]
        .0;
    cluster.node(leader).kill();
    // A new leader, from the ISR.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = common::acked::leaders_and_isrs(&cluster, "sg-restart");
        if now
            .as_ref()
            .is_some_and(|l| l[0].0 >= 0 && l[0].0 != leader)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no new leader of sg-restart-0 after node {leader} died: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    run_scenario(&bootstrap, 3, "after-restart", || logs(&cluster));

    // Dead letters to a partition led by another broker, across the death of the
    // share-partition's leader: the new leader looks for the letters pending at the crash in
    // that partition (by Fetch at its leader) and writes only those it does not find.
    cluster.node(leader).restart();
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    run_scenario(&bootstrap, 3, "dlq-before-restart", || logs(&cluster));
    let leaders = common::acked::leaders_and_isrs(&cluster, "sg-dlqr").expect("described");
    let (share_leader, dlq_leader) = (
        leaders[0].0,
        common::acked::leaders_and_isrs(&cluster, "dlq.sg-dlqr").expect("described")[0].0,
    );
    assert_ne!(
        share_leader, dlq_leader,
        "the dead letters go to another broker"
    );
    cluster.node(share_leader).kill();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !common::acked::leaders_and_isrs(&cluster, "sg-dlqr")
        .is_some_and(|l| l[0].0 >= 0 && l[0].0 != share_leader)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no new leader of sg-dlqr-0 after node {share_leader} died"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    run_scenario(&bootstrap, 3, "dlq-after-restart", || logs(&cluster));
}

/// Share groups follow the `share.version` feature, as on Kafka 4.4: on in a new cluster (2)
/// even when `group.coordinator.rebalance.protocols` does not list `share` (Kafka 4.4's
/// default lists none); Kafka's `kafka-features downgrade --feature share.version=0` turns them
/// off (the share-group APIs stay advertised and answer UNSUPPORTED_VERSION) and `upgrade`
/// back on.
#[test]
fn share_groups_follow_the_share_version_feature() {
    use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ShareGroupHeartbeatRequest};
    use kafka_protocol::messages::{GroupId, ShareGroupHeartbeatResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let broker = Broker::start_with(
        BrokerOptions::default().prop("group.coordinator.rebalance.protocols", "classic,consumer"),
    );
    let advertised = || -> Vec<i16> {
        let resp: ApiVersionsResponse =
            raw_request(&broker, ApiKey::ApiVersions, 3, &api_versions_request());
        resp.api_keys.iter().map(|k| k.api_key).collect()
    };
    let share = [
        ApiKey::ShareGroupHeartbeat,
        ApiKey::ShareFetch,
        ApiKey::ShareAcknowledge,
        ApiKey::ShareGroupDescribe,
    ];
    let heartbeat = |member: &str| -> i16 {
        let mut r = ShareGroupHeartbeatRequest::default();
        r.group_id = GroupId(StrBytes::from_static_str("sg-feature"));
        r.member_id = StrBytes::from_string(member.to_string());
        r.member_epoch = 0;
        r.subscribed_topic_names = Some(vec![TopicName(StrBytes::from_static_str("sg-feature"))]);
        let resp: ShareGroupHeartbeatResponse =
            raw_request(&broker, ApiKey::ShareGroupHeartbeat, 1, &r);
        resp.error_code
    };
    let features = |args: &[&str]| -> String {
        let logs = tempfile::tempdir().unwrap();
        let out = compat_tests::kafka_java::kafka_tool(
            "org.apache.kafka.tools.FeatureCommand",
            logs.path(),
        )
        .args(["--bootstrap-server", &broker.bootstrap()])
        .args(args)
        .output()
        .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kafka-features {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let share_line = |describe: &str| -> String {
        describe
            .lines()
            .find(|l| {
                l.starts_with("Feature: share.version\t")
                    || l.starts_with("Feature: share.version ")
            })
            .unwrap_or_else(|| panic!("no share.version in {describe}"))
            .to_string()
    };
    let unsupported = kafka_protocol::ResponseError::UnsupportedVersion.code();
    let keys = advertised();
    assert!(
        share.iter().all(|k| keys.contains(&(*k as i16))),
        "{keys:?}"
    );
    assert!(
        share_line(&features(&["describe"])).contains("FinalizedVersionLevel: 2"),
        "a new cluster finalizes share.version 2"
    );
    assert_ne!(heartbeat("sg-feature-member-0000001"), unsupported);

    let out = features(&["downgrade", "--feature", "share.version=0"]);
    assert!(out.contains("share.version was downgraded to 0."), "{out}");
    let line = share_line(&features(&["describe"]));
    assert!(line.contains("FinalizedVersionLevel: 0"), "{line}");
    assert_eq!(heartbeat("sg-feature-member-0000002"), unsupported);
    let keys = advertised();
    assert!(
        share.iter().all(|k| keys.contains(&(*k as i16))),
        "{keys:?}"
    );

    let out = features(&["upgrade", "--feature", "share.version=2"]);
    assert!(out.contains("share.version was upgraded to 2."), "{out}");
    assert_ne!(heartbeat("sg-feature-member-0000003"), unsupported);
}

/// A member that keeps polling while the broker is SIGKILLed and restarted joins again and
/// reads what is produced before and after.
#[test]
fn a_share_consumer_rides_through_a_broker_crash() {
    let mut broker = broker();
    samsa(
        &broker,
        &["topic", "create", "sg-live", "--partitions", "1"],
        b"",
    );
    samsa(
        &broker,
        &[
            "group",
            "reset-offsets",
            "sg-live-g",
            "--share",
            "--topic",
            "sg-live",
            "--to-earliest",
            "--execute",
        ],
        b"",
    );
    let path = compat_tests::workspace_root().join("compat-tests/python/share_groups.py");
    let mut child = Command::new(compat_tests::python())
        .arg(&path)
        .arg(broker.bootstrap())
        .arg("survivor")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let batch = |from: u32| -> Vec<u8> {
        (from..from + 10)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .into_bytes()
    };
    std::thread::sleep(Duration::from_secs(3));
    samsa(&broker, &["produce", "sg-live"], &batch(1));
    std::thread::sleep(Duration::from_secs(2));
    broker.kill();
    broker.restart();
    samsa(&broker, &["produce", "sg-live"], &batch(11));
    // Drain the pipes while waiting (librdkafka logs every refused connection meanwhile).
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "survivor ({status}): {out}\n{err}");
}

/// Runs a program of compat-tests/java (Kafka 4.4's Java client) against `broker`.
fn run_java(broker: &Broker, class: &str, args: &[&str]) -> String {
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = compat_tests::kafka_java::java_client(class, logs.path());
    cmd.arg(broker.bootstrap()).args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(240)).unwrap();
    if !status.success() {
        let client_log =
            std::fs::read_to_string(logs.path().join("server.log")).unwrap_or_default();
        let lines = broker.log_lines();
        let tail = lines[lines.len().saturating_sub(100)..].join("\n");
        panic!("{class} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}\nclient log:\n{client_log}\nbroker log:\n{tail}");
    }
    out
}

/// Kafka 4.4's KafkaShareConsumer with share.acquire.mode=record_limit and max.poll.records=3
/// (ShareFetch v2, KIP-1206): of ten records in one batch a member acquires exactly three, and
/// another member of the group gets records of that batch while the first still holds its three,
/// and the other seven once each in the end (the first member's client may fetch ahead; its
/// close releases what it did not deliver).
#[test]
fn kafkas_share_consumer_acquires_record_limit_records_inside_a_batch() {
    let broker = broker();
    let out = run_java(
        &broker,
        "ShareAcquireModeAndRenew",
        &["record-limit", "share-record-limit", "sg-record-limit"],
    );
    assert!(out.lines().any(|l| l == "ok"), "{out}");
}

/// Kafka 4.4's KafkaShareConsumer renewing its records' locks with AcknowledgeType.RENEW
/// (ShareAcknowledge v2, KIP-1222): held for three locks' time, the records never reach the
/// other member; accepted at the end, they are done. The consumer sees the group's lock
/// duration in AcquisitionLockTimeoutMs.
#[test]
fn kafkas_share_consumer_renews_its_locks_and_keeps_its_records() {
    let broker = broker();
    let out = run_java(
        &broker,
        "ShareAcquireModeAndRenew",
        &["renew", "share-renew", "sg-renew", "4000"],
    );
    assert!(out.lines().any(|l| l == "ok"), "{out}");
}
