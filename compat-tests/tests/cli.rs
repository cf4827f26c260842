//! The admin CLI (`samsa topic|produce|consume|cluster|dump-log ...`) run as the real binary
//! against a real broker. JSON output is parsed and checked field by field, and what the CLI
//! writes is read back with librdkafka (and the other way round), so the CLI is held to what
//! real clients see.

mod common;

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use common::*;
use rdkafka::message::{Headers, Message};
use rdkafka::topic_partition_list::Offset;
use serde_json::Value;

const CLI_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `samsa -b <broker> ARGS` with `stdin` as its input; returns (status, stdout, stderr).
fn samsa_in(bootstrap: &str, args: &[&str], stdin: &[u8]) -> (ExitStatus, String, String) {
    compat_tests::run_with_input(
        Command::new(compat_tests::samsa_bin())
            .arg("-b")
            .arg(bootstrap)
            .args(args),
        stdin,
        CLI_TIMEOUT,
    )
    .unwrap_or_else(|e| panic!("samsa {args:?}: {e}"))
}

fn samsa(broker: &Broker, args: &[&str]) -> (ExitStatus, String, String) {
    samsa_in(&broker.bootstrap(), args, b"")
}

/// Runs a command that must succeed with `--format json` and returns its parsed output.
fn samsa_json(broker: &Broker, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (status, out, err) = samsa(broker, &all);
    assert!(status.success(), "samsa {args:?} failed: {err}");
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("samsa {args:?} printed no JSON ({e}): {out}"))
}

/// Runs a command that must fail; returns its stderr.
fn samsa_fails(broker: &Broker, args: &[&str]) -> String {
    let (status, out, err) = samsa(broker, args);
    assert_eq!(
        status.code(),
        Some(1),
        "samsa {args:?} should fail: {out} {err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one clear line, got: {err}");
    err
}

fn ndjson(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

#[test]
fn topic_commands_create_describe_alter_grow_and_delete() {
    let broker = Broker::start();
    let created = samsa_json(
        &broker,
        &[
            "topic",
            "create",
            "orders",
            "-p",
            "3",
            "-c",
            "retention.ms=86400000",
        ],
    );
    assert_eq!(created["topic"], "orders");
    assert_eq!(created["partitions"], 3);
    assert_eq!(created["replication_factor"], 1);

    let err = samsa_fails(&broker, &["topic", "create", "orders"]);
    assert!(
        err.contains("topic 'orders' already exists") && err.contains("TOPIC_ALREADY_EXISTS"),
        "{err}"
    );

    let listed = samsa_json(&broker, &["topic", "list"]);
    let orders: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "orders")
        .collect();
    assert_eq!(orders.len(), 1, "{listed}");
    assert_eq!(orders[0]["partitions"], 3);

    // Records written by a real client show up as log end offsets.
    let producer = producer(&broker, &[]);
    let records: Vec<_> = (0..5)
        .map(|i| (None, format!("v{i}").into_bytes()))
        .collect();
    produce_all(&producer, "orders", &records, Some(1));

    let d = samsa_json(&broker, &["topic", "describe", "orders"]);
    assert_eq!(d["topic"], "orders");
    let parts = d["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 3);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p["partition"], i);
        assert_eq!(p["leader"], 1);
        assert_eq!(p["replicas"], serde_json::json!([1]));
        assert_eq!(p["isr"], serde_json::json!([1]));
        assert_eq!(p["log_start_offset"], 0);
        assert_eq!(p["log_end_offset"], if i == 1 { 5 } else { 0 });
    }
    // Only the configs that differ from the broker's defaults.
    assert_eq!(
        d["configs"],
        serde_json::json!({"retention.ms": "86400000"})
    );

    let altered = samsa_json(
        &broker,
        &[
            "topic",
            "alter-config",
            "orders",
            "-s",
            "cleanup.policy=compact",
            "-d",
            "retention.ms",
        ],
    );
    assert_eq!(
        altered["configs"],
        serde_json::json!({"cleanup.policy": "compact"})
    );
    let err = samsa_fails(
        &broker,
        &["topic", "alter-config", "orders", "-s", "retention.ms=soon"],
    );
    assert!(
        err.contains("INVALID_CONFIG") && err.contains("retention.ms"),
        "{err}"
    );

    samsa_json(&broker, &["topic", "add-partitions", "orders", "-n", "5"]);
    let d = samsa_json(&broker, &["topic", "describe", "orders"]);
    assert_eq!(d["partitions"].as_array().unwrap().len(), 5);
    let err = samsa_fails(&broker, &["topic", "add-partitions", "orders", "-n", "2"]);
    assert!(err.contains("INVALID_PARTITIONS"), "{err}");

    // One replica per partition: leader elections are never needed, and the answer says so.
    let elected = samsa_json(
        &broker,
        &["topic", "elect-leaders", "--preferred", "--topic", "orders"],
    );
    assert_eq!(elected["election"], "preferred");
    let answers = elected["partitions"].as_array().unwrap();
    assert_eq!(answers.len(), 5, "{elected}");
    assert!(
        answers
            .iter()
            .all(|p| p["topic"] == "orders" && p["error"] == "ELECTION_NOT_NEEDED"),
        "{elected}"
    );
    let err = samsa_fails(
        &broker,
        &[
            "topic",
            "elect-leaders",
            "--unclean",
            "-t",
            "orders",
            "-p",
            "0",
            "-p",
            "9",
        ],
    );
    assert!(
        err.contains("the unclean election failed for 1 of 2 partition(s)"),
        "{err}"
    );
    let (status, _, err) = samsa(&broker, &["topic", "elect-leaders", "--topic", "orders"]);
    assert_eq!(
        status.code(),
        Some(2),
        "--preferred or --unclean is required: {err}"
    );

    // The table form is aligned columns with a header.
    let (status, table, _) = samsa(&broker, &["topic", "describe", "orders"]);
    assert!(status.success());
    assert!(
        table.contains("PARTITION  LEADER  REPLICAS  ISR"),
        "{table}"
    );

    let deleted = samsa_json(&broker, &["topic", "delete", "orders"]);
    assert_eq!(deleted["deleted"], true);
    let listed = samsa_json(&broker, &["topic", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "orders"),
        "{listed}"
    );
    let err = samsa_fails(&broker, &["topic", "delete", "orders"]);
    assert!(
        err.contains("topic 'orders' does not exist") && err.contains("UNKNOWN_TOPIC_OR_PARTITION"),
        "{err}"
    );
    let err = samsa_fails(&broker, &["topic", "describe", "orders"]);
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn unreachable_broker_is_one_clear_message() {
    let port = compat_tests::free_port();
    let (status, out, err) = samsa_in(&format!("127.0.0.1:{port}"), &["topic", "list"], b"");
    assert_eq!(status.code(), Some(1), "{out}");
    assert_eq!(
        err.trim(),
        format!("samsa: cannot reach 127.0.0.1:{port}: connection refused; is samsa running?")
    );
    // A command line clap cannot parse is a usage error (exit 2), not a broker error.
    let (status, _, err) = samsa_in(&format!("127.0.0.1:{port}"), &["topic", "create"], b"");
    assert_eq!(status.code(), Some(2), "{err}");
}

#[test]
fn produce_and_consume_round_trip_with_keys_headers_and_compression() {
    let broker = Broker::start();
    create_topic(&broker, "events", 4, &[]);
    let input = b"alice:hello\nbob:world\nalice:again\nno separator here\n";
    let (status, out, err) = samsa_in(
        &broker.bootstrap(),
        &[
            "produce",
            "events",
            "--key-separator",
            ":",
            "-H",
            "source=cli",
            "-H",
            "trace=1",
            "--compression",
            "zstd",
            "--format",
            "json",
        ],
        input,
    );
    assert!(status.success(), "{err}");
    assert!(err.is_empty(), "no progress output in a pipe: {err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["records"], 4);

    // librdkafka reads back what the CLI wrote, headers and keys included.
    let consumer = assigned_consumer(&broker, "events", &[0, 1, 2, 3], Offset::Beginning);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < 4 {
        assert!(Instant::now() < deadline, "consumed {got:?}");
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            let headers: Vec<(String, String)> = m
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|h| {
                            (
                                h.key.to_string(),
                                String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            got.push((
                m.partition(),
                m.key().map(|k| String::from_utf8_lossy(k).into_owned()),
                String::from_utf8_lossy(m.payload().unwrap()).into_owned(),
                headers,
            ));
        }
    }
    let want_headers = vec![
        ("source".to_string(), "cli".to_string()),
        ("trace".to_string(), "1".to_string()),
    ];
    for g in &got {
        assert_eq!(g.3, want_headers);
    }
    let mut pairs: Vec<_> = got.iter().map(|g| (g.1.clone(), g.2.clone())).collect();
    pairs.sort();
    assert_eq!(
        pairs,
        vec![
            (None, "no separator here".to_string()),
            (Some("alice".into()), "again".into()),
            (Some("alice".into()), "hello".into()),
            (Some("bob".into()), "world".into()),
        ]
    );
    let alice: Vec<i32> = got
        .iter()
        .filter(|g| g.1.as_deref() == Some("alice"))
        .map(|g| g.0)
        .collect();
    assert_eq!(alice[0], alice[1], "one key, one partition");

    // consume prints the same records: JSON lines, then a kcat-style template.
    let (status, out, err) = samsa(&broker, &["consume", "events", "-e", "--format", "json"]);
    assert!(status.success(), "{err}");
    let lines = ndjson(&out);
    assert_eq!(lines.len(), 4, "{out}");
    for l in &lines {
        assert_eq!(l["topic"], "events");
        assert_eq!(
            l["headers"],
            serde_json::json!({"source": "cli", "trace": "1"})
        );
        assert!(l["timestamp"].as_i64().unwrap() > 1_600_000_000_000);
    }
    let (status, out, _) = samsa(
        &broker,
        &["consume", "events", "-e", "-f", "%k=%v@%t %h\\n"],
    );
    assert!(status.success());
    let mut printed: Vec<&str> = out.lines().collect();
    printed.sort();
    assert_eq!(
        printed,
        vec![
            "=no separator here@events source=cli,trace=1",
            "alice=again@events source=cli,trace=1",
            "alice=hello@events source=cli,trace=1",
            "bob=world@events source=cli,trace=1",
        ]
    );
}

#[test]
fn keyed_records_land_where_javas_partitioner_puts_them() {
    let broker = Broker::start();
    create_topic(&broker, "keyed", 6, &[]);
    let keys: Vec<String> = (0..40).map(|i| format!("user-{i}")).collect();
    // librdkafka's murmur2_random partitioner is the Java client's default for keyed records.
    let producer = producer(&broker, &[("partitioner", "murmur2_random")]);
    let records: Vec<_> = keys
        .iter()
        .map(|k| (Some(k.clone().into_bytes()), b"java".to_vec()))
        .collect();
    let java: Vec<(i32, i64)> = produce_all(&producer, "keyed", &records, None);
    let input: String = keys.iter().map(|k| format!("{k}|samsa\n")).collect();
    let (status, _, err) = samsa_in(
        &broker.bootstrap(),
        &[
            "produce",
            "keyed",
            "--key-separator",
            "|",
            "--compression",
            "gzip",
        ],
        input.as_bytes(),
    );
    assert!(status.success(), "{err}");
    let (status, out, _) = samsa(&broker, &["consume", "keyed", "-e", "-f", "%k %p %v\\n"]);
    assert!(status.success());
    let mut samsa_partition = std::collections::HashMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f[2] == "samsa" {
            samsa_partition.insert(f[0].to_string(), f[1].parse::<i32>().unwrap());
        }
    }
    assert_eq!(samsa_partition.len(), keys.len(), "{out}");
    for (k, (p, _)) in keys.iter().zip(&java) {
        assert_eq!(samsa_partition[k], *p, "key {k}");
    }
}

#[test]
fn consume_starts_where_asked_and_stops_at_count() {
    let broker = Broker::start();
    create_topic(&broker, "seq", 1, &[]);
    let input: String = (0..100).map(|i| format!("r{i}\n")).collect();
    let (status, _, err) = samsa_in(&broker.bootstrap(), &["produce", "seq"], input.as_bytes());
    assert!(status.success(), "{err}");
    let (_, out, _) = samsa(
        &broker,
        &["consume", "seq", "--from", "90", "-e", "-f", "%o:%v\\n"],
    );
    let want: Vec<String> = (90..100).map(|i| format!("{i}:r{i}")).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    let (_, out, _) = samsa(&broker, &["consume", "seq", "-n", "3", "-f", "%v,"]);
    assert_eq!(out, "r0,r1,r2,");
    // A time after every record: nothing to read from there.
    let (status, out, _) = samsa(
        &broker,
        &["consume", "seq", "--from", "2999-01-01T00:00:00Z", "-e"],
    );
    assert!(status.success());
    assert_eq!(out, "");
    // A time before every record: everything.
    let (_, out, _) = samsa(&broker, &["consume", "seq", "--from", "2000-01-01", "-e"]);
    assert_eq!(out.lines().count(), 100);
    let err = samsa_fails(&broker, &["consume", "seq", "--from", "yesterday"]);
    assert!(err.contains("ISO 8601"), "{err}");
    // An end-of-topic consumer sees what is produced after it started.
    let (_, out, _) = samsa(&broker, &["consume", "seq", "--from", "end", "-e"]);
    assert_eq!(out, "");
}

#[test]
fn produce_reads_a_large_stdin_in_batches_and_acks_zero_works() {
    let broker = Broker::start();
    create_topic(&broker, "bulk", 3, &[]);
    let input: String = (0..20_000)
        .map(|i| format!("record number {i}\n"))
        .collect();
    let (status, out, err) = samsa_in(
        &broker.bootstrap(),
        &[
            "produce",
            "bulk",
            "--compression",
            "lz4",
            "--format",
            "json",
        ],
        input.as_bytes(),
    );
    assert!(status.success(), "{err}");
    assert!(err.is_empty(), "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["records"], 20_000);
    let parts = summary["partitions"].as_array().unwrap();
    assert!(
        parts.len() > 1,
        "unkeyed records spread over partitions: {summary}"
    );
    let d = samsa_json(&broker, &["topic", "describe", "bulk"]);
    let total: i64 = d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["log_end_offset"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 20_000);
    for p in parts {
        let end = d["partitions"][p["partition"].as_u64().unwrap() as usize]["log_end_offset"]
            .as_i64()
            .unwrap();
        assert_eq!(p["last_offset"].as_i64().unwrap(), end - 1, "{summary}");
    }
    let (status, _, err) = samsa_in(
        &broker.bootstrap(),
        &["produce", "bulk", "--acks", "0", "-p", "0"],
        b"fire\nand\nforget\n",
    );
    assert!(status.success(), "{err}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, out, _) = samsa(
            &broker,
            &["consume", "bulk", "-p", "0", "--from", "end", "-e"],
        );
        assert_eq!(out, "");
        let (_, out, _) = samsa(
            &broker,
            &["consume", "bulk", "-p", "0", "-e", "-f", "%v\\n"],
        );
        if out.ends_with("fire\nand\nforget\n") {
            break;
        }
        assert!(Instant::now() < deadline, "acks=0 records never arrived");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn cluster_info_reports_brokers_listeners_and_api_versions() {
    let broker = Broker::start();
    let info = samsa_json(&broker, &["cluster", "info"]);
    assert!(!info["cluster_id"].as_str().unwrap().is_empty());
    assert_eq!(info["controller_id"], 1);
    let brokers = info["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 1);
    assert_eq!(brokers[0]["node_id"], 1);
    assert_eq!(brokers[0]["listener"], broker.bootstrap());
    let apis = info["apis"].as_array().unwrap();
    let find = |name: &str| apis.iter().find(|a| a["name"] == name).cloned();
    let produce = find("Produce").expect("Produce listed");
    assert_eq!(produce["api_key"], 0);
    assert_eq!(produce["max_version"], 13);
    let versions = find("ApiVersions").expect("ApiVersions listed");
    assert_eq!(
        (
            versions["min_version"].as_i64(),
            versions["max_version"].as_i64()
        ),
        (Some(0), Some(5))
    );
    // The quorum of one: node 1 leads, no lag.
    let quorum = &info["quorum"];
    assert_eq!(quorum["leader_id"], 1, "{info}");
    let replicas = quorum["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 1);
    assert_eq!(replicas[0]["status"], "leader");
    assert_eq!(replicas[0]["lag"], 0);
    let (status, table, _) = samsa(&broker, &["cluster", "info"]);
    assert!(status.success());
    assert!(
        table.contains(&format!("1 (controller)  {}", broker.bootstrap())),
        "{table}"
    );
    assert!(
        table.contains("metadata quorum   leader 1  epoch "),
        "{table}"
    );
}

fn segment(data_dir: &Path, topic: &str, partition: i32) -> std::path::PathBuf {
    data_dir
        .join(format!("{topic}-{partition}"))
        .join("00000000000000000000.log")
}

/// Compressible values: librdkafka sends a batch uncompressed when compression gains nothing.
fn dumped_value(i: usize) -> String {
    format!("value {i} {}", "abc".repeat(100))
}

#[test]
fn dump_log_reads_a_segment_written_by_a_real_client_and_catches_a_flipped_byte() {
    let mut broker = Broker::start();
    create_topic(&broker, "dumped", 1, &[]);
    let producer = producer(
        &broker,
        &[("compression.type", "zstd"), ("linger.ms", "50")],
    );
    let records: Vec<_> = (0..30)
        .map(|i| {
            (
                Some(format!("k{i}").into_bytes()),
                dumped_value(i).into_bytes(),
            )
        })
        .collect();
    produce_all(&producer, "dumped", &records, Some(0));
    drop(producer);
    assert!(broker.stop().success());
    let path = segment(&broker.data_dir, "dumped", 0);
    let path_str = path.to_str().unwrap();

    let dump = samsa_json(&broker, &["dump-log", path_str, "--records"]);
    let batches = dump["batches"].as_array().unwrap();
    assert!(!batches.is_empty());
    assert_eq!(dump["invalid_batches"], 0);
    let mut next = 0;
    let mut values = Vec::new();
    for b in batches {
        assert_eq!(b["valid"], true, "{b}");
        assert_eq!(b["base_offset"], next);
        assert_eq!(b["compression"], "zstd");
        // librdkafka without idempotence writes no producer id, epoch or sequence.
        assert_eq!(b["producer_id"], -1);
        assert_eq!(b["producer_epoch"], -1);
        assert_eq!(b["base_sequence"], -1);
        next = b["last_offset"].as_i64().unwrap() + 1;
        for r in b["records"].as_array().unwrap() {
            values.push((
                r["offset"].as_i64().unwrap(),
                r["key"].as_str().unwrap().to_string(),
                r["value"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert_eq!(next, 30);
    let want: Vec<_> = (0..30)
        .map(|i| (i as i64, format!("k{i}"), dumped_value(i)))
        .collect();
    assert_eq!(values, want);

    // Flip one byte inside the last batch's records: its CRC no longer matches.
    let mut bytes = std::fs::read(&path).unwrap();
    let last = batches.last().unwrap();
    let at =
        last["position"].as_u64().unwrap() as usize + last["size"].as_u64().unwrap() as usize - 3;
    bytes[at] ^= 0x40;
    let corrupt = broker.data_dir.join("corrupt.log");
    std::fs::write(&corrupt, &bytes).unwrap();
    let corrupt_str = corrupt.to_str().unwrap();
    let (status, out, err) = samsa(&broker, &["dump-log", corrupt_str, "--format", "json"]);
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(err.contains("1 batch(es) failed"), "{err}");
    let dump: Value = serde_json::from_str(&out).unwrap();
    let batches = dump["batches"].as_array().unwrap();
    let bad: Vec<&Value> = batches.iter().filter(|b| b["valid"] == false).collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["base_offset"], last["base_offset"]);
    assert!(
        bad[0]["error"]
            .as_str()
            .unwrap()
            .contains("crc32c mismatch"),
        "{}",
        bad[0]
    );
    assert_ne!(bad[0]["crc"], bad[0]["computed_crc"]);

    // A torn tail (half a batch) is reported too.
    let torn = broker.data_dir.join("torn.log");
    std::fs::write(&torn, &std::fs::read(&path).unwrap()[..at]).unwrap();
    let (status, _, err) = samsa(&broker, &["dump-log", torn.to_str().unwrap()]);
    assert_eq!(status.code(), Some(1));
    assert!(err.contains("torn"), "{err}");
}

fn commit(consumer: &rdkafka::consumer::BaseConsumer, topic: &str, offsets: &[(i32, i64)]) {
    use rdkafka::consumer::{CommitMode, Consumer};
    let mut tpl = rdkafka::TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))
            .unwrap();
    }
    consumer.commit(&tpl, CommitMode::Sync).expect("commit");
}

/// `group describe` until `check` accepts it (group state changes are asynchronous).
fn describe_until(broker: &Broker, group: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, out, err) = samsa(broker, &["group", "describe", group, "--format", "json"]);
        if status.success() {
            let v: Value = serde_json::from_str(&out).unwrap();
            if check(&v) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "group never reached the expected state: {v}"
            );
        } else {
            assert!(Instant::now() < deadline, "describe kept failing: {err}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn offsets_of(described: &Value) -> Vec<(i64, Value, Value, Value)> {
    described["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["partition"].as_i64().unwrap(),
                o["committed_offset"].clone(),
                o["log_end_offset"].clone(),
                o["lag"].clone(),
            )
        })
        .collect()
}

#[test]
fn group_describe_shows_members_and_lag_and_reset_offsets_moves_the_group() {
    use serde_json::json;
    let broker = Broker::start();
    create_topic(&broker, "ledger", 2, &[]);
    let producer = producer(&broker, &[]);
    let records: Vec<_> = (0..10)
        .map(|i| (None, format!("r{i}").into_bytes()))
        .collect();
    produce_all(&producer, "ledger", &records, Some(0));
    produce_all(&producer, "ledger", &records[..6], Some(1));

    let consumer = group_consumer(&broker, "billing", "ledger");
    let got = consume_n(&consumer, 16, Duration::from_secs(30));
    assert_eq!(got.len(), 16);
    // What the consumer leaves uncommitted is the lag: 10 - 7 and 6 - 2.
    commit(&consumer, "ledger", &[(0, 7), (1, 2)]);

    let d = describe_until(&broker, "billing", |v| v["state"] == "Stable");
    assert_eq!(d["protocol_type"], "consumer");
    let members = d["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "{d}");
    let mut assigned: Vec<i64> = members[0]["assignment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            assert_eq!(a["topic"], "ledger");
            a["partition"].as_i64().unwrap()
        })
        .collect();
    assigned.sort();
    assert_eq!(assigned, vec![0, 1]);
    assert_eq!(
        offsets_of(&d),
        vec![
            (0, json!(7), json!(10), json!(3)),
            (1, json!(2), json!(6), json!(4)),
        ]
    );
    assert_eq!(d["total_lag"], 7);

    let listed = samsa_json(&broker, &["group", "list"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group"] == "billing" && g["state"] == "Stable"),
        "{listed}"
    );

    // A live member would overwrite a reset with its next commit: refused, as Kafka does.
    let err = samsa_fails(
        &broker,
        &[
            "group",
            "reset-offsets",
            "billing",
            "--topic",
            "ledger",
            "--to-earliest",
            "--execute",
        ],
    );
    assert!(err.contains("live member"), "{err}");
    let err = samsa_fails(&broker, &["group", "delete", "billing"]);
    assert!(err.contains("NON_EMPTY_GROUP"), "{err}");

    {
        use rdkafka::consumer::Consumer;
        consumer.unsubscribe();
    }
    drop(consumer);
    describe_until(&broker, "billing", |v| v["state"] == "Empty");

    // A dry run shows the plan and commits nothing.
    let plan = samsa_json(
        &broker,
        &[
            "group",
            "reset-offsets",
            "billing",
            "--topic",
            "ledger",
            "--to-offset",
            "5",
        ],
    );
    assert_eq!(plan["executed"], false);
    let new: Vec<_> = plan["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["partition"].clone(),
                o["current_offset"].clone(),
                o["new_offset"].clone(),
            )
        })
        .collect();
    assert_eq!(
        new,
        vec![
            (json!(0), json!(7), json!(5)),
            (json!(1), json!(2), json!(5))
        ]
    );
    let d = samsa_json(&broker, &["group", "describe", "billing"]);
    assert_eq!(offsets_of(&d)[0].1, json!(7));

    // --shift-by moves from the committed offsets, clamped to the log.
    samsa_json(
        &broker,
        &[
            "group",
            "reset-offsets",
            "billing",
            "--topic",
            "ledger",
            "--shift-by",
            "-3",
            "--execute",
        ],
    );
    let d = samsa_json(&broker, &["group", "describe", "billing"]);
    assert_eq!(
        offsets_of(&d),
        vec![
            (0, json!(4), json!(10), json!(6)),
            (1, json!(0), json!(6), json!(6)),
        ]
    );
    // One partition only, to the end.
    samsa_json(
        &broker,
        &[
            "group",
            "reset-offsets",
            "billing",
            "--topic",
            "ledger:1",
            "--to-latest",
            "--execute",
        ],
    );
    let d = samsa_json(&broker, &["group", "describe", "billing"]);
    assert_eq!(offsets_of(&d)[1], (1, json!(6), json!(6), json!(0)));
    assert_eq!(offsets_of(&d)[0].1, json!(4));
    // A time before every record is the start of each partition.
    samsa_json(
        &broker,
        &[
            "group",
            "reset-offsets",
            "billing",
            "--topic",
            "ledger",
            "--to-datetime",
            "2001-01-01T00:00:00Z",
            "--execute",
        ],
    );
    let d = samsa_json(&broker, &["group", "describe", "billing"]);
    assert_eq!(offsets_of(&d)[0].1, json!(0));
    assert_eq!(offsets_of(&d)[1].1, json!(0));

    // A consumer of the group resumes exactly where the reset put it.
    samsa_json(
        &broker,
        &[
            "group",
            "reset-offsets",
            "billing",
            "--topic",
            "ledger",
            "--to-offset",
            "4",
            "--execute",
        ],
    );
    let consumer = group_consumer(&broker, "billing", "ledger");
    let got = consume_n(&consumer, 8, Duration::from_secs(30));
    let mut first = std::collections::BTreeMap::new();
    for g in &got {
        first.entry(g.partition).or_insert(g.offset);
    }
    assert_eq!(first, [(0, 4), (1, 4)].into_iter().collect());
    assert!(
        consumer.poll(Duration::from_millis(300)).is_none(),
        "nothing before offset 4"
    );
    {
        use rdkafka::consumer::Consumer;
        consumer.unsubscribe();
    }
    drop(consumer);
    describe_until(&broker, "billing", |v| v["state"] == "Empty");

    let deleted = samsa_json(&broker, &["group", "delete", "billing"]);
    assert_eq!(deleted["deleted"], true);
    let listed = samsa_json(&broker, &["group", "list"]);
    assert!(listed
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["group"] != "billing"));
    let err = samsa_fails(&broker, &["group", "delete", "billing"]);
    assert!(err.contains("GROUP_ID_NOT_FOUND"), "{err}");
}

#[test]
fn consume_with_a_group_commits_what_it_printed_and_resumes_there() {
    let broker = Broker::start();
    create_topic(&broker, "feed", 2, &[]);
    let input: String = (0..30).map(|i| format!("item-{i}\n")).collect();
    let (status, _, err) = samsa_in(&broker.bootstrap(), &["produce", "feed"], input.as_bytes());
    assert!(status.success(), "{err}");

    let (status, first, err) = samsa(&broker, &["consume", "feed", "-g", "readers", "-n", "12"]);
    assert!(status.success(), "{err}");
    assert_eq!(first.lines().count(), 12);
    let d = samsa_json(&broker, &["group", "describe", "readers"]);
    assert_eq!(d["total_lag"], 18, "{d}");

    let (status, rest, err) = samsa(&broker, &["consume", "feed", "-g", "readers", "-e"]);
    assert!(status.success(), "{err}");
    let mut all: Vec<&str> = first.lines().chain(rest.lines()).collect();
    all.sort();
    let mut want: Vec<String> = (0..30).map(|i| format!("item-{i}")).collect();
    want.sort();
    assert_eq!(all, want, "every record exactly once across the two runs");
    let d = samsa_json(&broker, &["group", "describe", "readers"]);
    assert_eq!(d["total_lag"], 0);
    assert_eq!(d["state"], "Empty");
}

#[test]
fn a_long_produce_shows_progress_on_a_terminal_only() {
    let broker = Broker::start();
    create_topic(&broker, "progress", 1, &[]);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("lines.txt");
    let lines: String = (0..400_000).map(|i| format!("{i}\n")).collect();
    std::fs::write(&input, lines).unwrap();
    // `script` (util-linux) gives the command a pseudo-terminal for stdout and stderr, while
    // stdin stays the file, as with `samsa produce t < file` typed in a shell.
    let cmd = format!(
        "{} -b {} produce progress < {}",
        compat_tests::samsa_bin().display(),
        broker.bootstrap(),
        input.display()
    );
    let (status, out, err) = compat_tests::run_with_timeout(
        Command::new("script").args(["-qec", &cmd, "/dev/null"]),
        CLI_TIMEOUT,
    )
    .expect("run script (util-linux)");
    assert!(status.success(), "{out} {err}");
    assert!(
        out.contains("\r\u{1b}[2Kproduced "),
        "no progress line on a terminal: {out:?}"
    );
    assert!(out.contains("produced 400000 records"), "{out:?}");
    // The same produce in a pipe prints the summary alone.
    let (status, out, err) = samsa_in(
        &broker.bootstrap(),
        &["produce", "progress"],
        &std::fs::read(&input).unwrap(),
    );
    assert!(status.success());
    assert!(err.is_empty(), "{err:?}");
    assert_eq!(
        out,
        "produced 400000 records (2288890 bytes) to 'progress'\n"
    );
}

/// `samsa cluster local` run as a process, its stdout and stderr collected line by line.
struct Launcher {
    child: std::process::Child,
    out: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    err: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Launcher {
    fn start(dir: &Path, args: &[&str]) -> Launcher {
        use std::io::BufRead;
        let mut child = Command::new(compat_tests::samsa_bin())
            .args(["cluster", "local", "--dir"])
            .arg(dir)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run samsa cluster local");
        let collect = |pipe: Box<dyn std::io::Read + Send>| {
            let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let sink = lines.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    sink.lock().unwrap().push(line);
                }
            });
            lines
        };
        let out = collect(Box::new(child.stdout.take().unwrap()));
        let err = collect(Box::new(child.stderr.take().unwrap()));
        Launcher { child, out, err }
    }

    fn output(&self) -> String {
        let out = self.out.lock().unwrap().join("\n");
        format!(
            "stdout:\n{out}\nstderr:\n{}",
            self.err.lock().unwrap().join("\n")
        )
    }

    /// Waits for a line of stdout (`err`: of stderr) containing `needle`; `None` if the
    /// launcher exits first.
    fn wait_for(&mut self, needle: &str, err: bool) -> Option<String> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let lines = if err { &self.err } else { &self.out };
            if let Some(l) = lines.lock().unwrap().iter().find(|l| l.contains(needle)) {
                return Some(l.clone());
            }
            if self.child.try_wait().unwrap().is_some() {
                std::thread::sleep(Duration::from_millis(100));
                return None;
            }
            assert!(
                Instant::now() < deadline,
                "no '{needle}' line:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The pid of each node, from its `node <id>  pid <pid>  client ...` line.
    fn pids(&self) -> Vec<i32> {
        let out = self.out.lock().unwrap();
        let pid = |l: &String| l.split_whitespace().nth(3).unwrap().parse().unwrap();
        out.iter()
            .filter(|l| l.contains("  pid "))
            .map(pid)
            .collect()
    }

    fn sigterm_and_wait(&mut self) -> ExitStatus {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "launcher still running:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // The nodes die with the launcher (they get SIGTERM when their parent dies).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A base port whose plan for three nodes (base + 100*i + 0..=2) is free right now.
fn free_base_port() -> u16 {
    loop {
        let base = compat_tests::free_port();
        let ports =
            (0..3u16).flat_map(|i| (0..3u16).map(move |k| base as u32 + 100 * i as u32 + k as u32));
        let free =
            |p: u32| p <= 65535 && std::net::TcpListener::bind(("127.0.0.1", p as u16)).is_ok();
        if ports.clone().all(free) {
            return base;
        }
    }
}

/// (leader, voters) of the metadata quorum as the node on `port` reports it.
fn quorum(port: u16) -> (i32, usize) {
    use kafka_protocol::messages::*;
    let mut p = describe_quorum_request::PartitionData::default();
    p.partition_index = 0;
    let mut t = describe_quorum_request::TopicData::default();
    t.topic_name = TopicName(kafka_protocol::protocol::StrBytes::from_static_str(
        "__cluster_metadata",
    ));
    t.partitions = vec![p];
    let mut r = DescribeQuorumRequest::default();
    r.topics = vec![t];
    let addr = format!("127.0.0.1:{port}");
    let resp: DescribeQuorumResponse = raw_request_to(&addr, ApiKey::DescribeQuorum, 2, &r);
    let p = &resp.topics[0].partitions[0];
    (p.leader_id.0, p.current_voters.len())
}

/// Waits until every node in `ports` reports the same leader among three voters; returns it.
fn one_leader_of_three(ports: &[u16]) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen: Vec<_> = ports.iter().map(|p| quorum(*p)).collect();
        let leader = seen[0].0;
        if (1..=3).contains(&leader) && seen.iter().all(|q| *q == (leader, 3)) {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "no single leader of 3 voters: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn gone(pid: i32) -> bool {
    unsafe { libc::kill(pid, 0) == -1 && *libc::__errno_location() == libc::ESRCH }
}

/// Starts, stops and restarts `samsa cluster local --nodes 3` with real processes: one leader
/// among three voters, every node gone after the launcher's SIGTERM, the same cluster (id,
/// ports) on a second run, a node that dies alone reported while the others go on, and a
/// different node count refused.
#[test]
fn cluster_local_runs_a_three_node_cluster_from_one_command() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("cluster");
    // A plan port can be taken between our check and the launcher's: it then refuses
    // before starting anything, and we try another base.
    let (mut launcher, base) = (0..5)
        .find_map(|_| {
            let base = free_base_port();
            let port = base.to_string();
            let mut l = Launcher::start(&dir, &["--nodes", "3", "--port", &port]);
            match l.wait_for("node(s) serving", false) {
                Some(_) => Some((l, base)),
                None if l.output().contains("is not free") => None,
                None => panic!("samsa cluster local failed:\n{}", l.output()),
            }
        })
        .expect("a free base port");
    let ports = [base, base + 100, base + 200];
    let out = launcher.output();
    let first = out
        .lines()
        .find(|l| l.starts_with("cluster "))
        .unwrap()
        .to_string();
    assert!(
        first.contains("(new)") && first.contains("3 node(s)"),
        "{out}"
    );
    let bootstrap = format!(
        "bootstrap 127.0.0.1:{},127.0.0.1:{},127.0.0.1:{}",
        ports[0], ports[1], ports[2]
    );
    assert!(out.lines().any(|l| l == bootstrap), "{out}");
    for (i, p) in ports.iter().enumerate() {
        let line = format!("client 127.0.0.1:{p}  controller 127.0.0.1:{}", p + 1);
        assert!(
            out.contains(&line) && out.contains(&format!("node {} serving", i + 1)),
            "{out}"
        );
    }
    let id = std::fs::read_to_string(dir.join("cluster.id")).unwrap();
    assert!(
        first.starts_with(&format!("cluster {} ", id.trim())),
        "{first}"
    );
    one_leader_of_three(&ports);

    let pids = launcher.pids();
    assert_eq!(pids.len(), 3, "{}", launcher.output());
    let status = launcher.sigterm_and_wait();
    assert!(status.success(), "{status}:\n{}", launcher.output());
    for pid in &pids {
        assert!(
            gone(*pid),
            "node pid {pid} outlived the launcher:\n{}",
            launcher.output()
        );
    }
    assert_eq!(
        launcher
            .output()
            .matches("stopped (exit status: 0)")
            .count(),
        3
    );

    // Another node count for the same directory: refused, nothing started.
    let (status, _, err) = compat_tests::run_with_timeout(
        Command::new(compat_tests::samsa_bin())
            .args(["cluster", "local", "--nodes", "5", "--dir"])
            .arg(&dir),
        CLI_TIMEOUT,
    )
    .unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(
        err.contains("holds a cluster with --nodes 3, not 5"),
        "{err}"
    );

    // The same command again: the same cluster, on the stored ports.
    let mut launcher = Launcher::start(&dir, &[]);
    launcher
        .wait_for("node(s) serving", false)
        .unwrap_or_else(|| panic!("restart failed:\n{}", launcher.output()));
    let first = launcher.out.lock().unwrap()[0].clone();
    assert!(
        first.starts_with(&format!("cluster {} (restarted)", id.trim())),
        "{}",
        launcher.output()
    );
    one_leader_of_three(&ports);
    // A node that dies alone is reported; the others keep serving.
    let pids = launcher.pids();
    unsafe { libc::kill(pids[2], libc::SIGKILL) };
    let line = launcher
        .wait_for("exited on its own", true)
        .expect("launcher still runs");
    assert!(
        line.contains(&format!("node 3 (pid {})", pids[2]))
            && line.contains("2 node(s) still running"),
        "{line}"
    );
    assert!(launcher.child.try_wait().unwrap().is_none());
    quorum(ports[0]);
    assert!(
        launcher.sigterm_and_wait().success(),
        "{}",
        launcher.output()
    );
    assert!(pids.iter().all(|p| gone(*p)), "{}", launcher.output());
}

/// A KIP-848 consumer group (librdkafka with group.protocol=consumer): `group describe` shows
/// its assignor, epochs, each member's epoch and target, and the committed offsets and lag.
#[test]
fn group_describe_shows_a_consumer_protocol_group_with_its_epochs() {
    use rdkafka::consumer::Consumer;
    let broker = Broker::start();
    create_topic(&broker, "kip848-ledger", 2, &[]);
    let producer = producer(&broker, &[]);
    let records: Vec<_> = (0..4)
        .map(|i| (None, format!("r{i}").into_bytes()))
        .collect();
    produce_all(&producer, "kip848-ledger", &records, Some(0));
    produce_all(&producer, "kip848-ledger", &records, Some(1));
    let mut c = client_config(&broker);
    c.set("group.id", "kip848-billing")
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false");
    let consumer: rdkafka::consumer::BaseConsumer = c.create().expect("consumer");
    consumer.subscribe(&["kip848-ledger"]).expect("subscribe");
    let got = consume_n(&consumer, 8, Duration::from_secs(30));
    assert_eq!(got.len(), 8);
    commit(&consumer, "kip848-ledger", &[(0, 3), (1, 4)]);

    let d = describe_until(&broker, "kip848-billing", |v| v["state"] == "Stable");
    assert_eq!(d["protocol_type"], "consumer", "{d}");
    assert_eq!(d["protocol"], "uniform", "{d}");
    let epoch = d["group_epoch"].as_i64().expect("a group epoch");
    assert_eq!(d["assignment_epoch"].as_i64(), Some(epoch), "{d}");
    let members = d["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "{d}");
    assert_eq!(members[0]["member_epoch"].as_i64(), Some(epoch), "{d}");
    assert_eq!(
        members[0]["target_assignment"].as_array().unwrap().len(),
        2,
        "{d}"
    );
    assert_eq!(members[0]["assignment"].as_array().unwrap().len(), 2, "{d}");
    let lags: Vec<Value> = offsets_of(&d).into_iter().map(|o| o.3).collect();
    assert_eq!(lags, vec![Value::from(1), Value::from(0)], "{d}");
    let (status, out, _) = samsa(&broker, &["group", "describe", "kip848-billing"]);
    assert!(status.success());
    assert!(
        out.starts_with("group kip848-billing  state Stable  type consumer  assignor uniform"),
        "{out}"
    );
}

#[test]
fn quota_commands_set_list_describe_and_delete_client_quotas() {
    let broker = Broker::start();
    let set = samsa_json(
        &broker,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--producer-byte-rate",
            "1048576",
            "--consumer-byte-rate",
            "20000000",
        ],
    );
    assert_eq!(set["entity"], serde_json::json!({"user": "alice"}), "{set}");
    samsa_json(
        &broker,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--client-id-default",
            "--request-percentage",
            "12.5",
        ],
    );
    samsa_json(
        &broker,
        &[
            "quota",
            "set",
            "--ip-default",
            "--connection-creation-rate",
            "50",
        ],
    );
    // Checked, not applied.
    let checked = samsa_json(
        &broker,
        &[
            "quota",
            "set",
            "--user",
            "bob",
            "--producer-byte-rate",
            "1",
            "--validate-only",
        ],
    );
    assert_eq!(checked["validate_only"], true);

    let all = samsa_json(&broker, &["quota", "list"]);
    assert_eq!(
        all,
        serde_json::json!([
            {"entity": {"user": "alice"},
             "quotas": {"consumer_byte_rate": 20000000.0, "producer_byte_rate": 1048576.0}},
            {"entity": {"user": "alice", "client-id": null},
             "quotas": {"request_percentage": 12.5}},
            {"entity": {"ip": null}, "quotas": {"connection_creation_rate": 50.0}},
        ])
    );
    // Kafka's filters: exact, strict, any-specified, default.
    let alice = samsa_json(&broker, &["quota", "list", "--user", "alice"]);
    assert_eq!(alice.as_array().unwrap().len(), 2, "{alice}");
    let only = samsa_json(&broker, &["quota", "list", "--user", "alice", "--strict"]);
    assert_eq!(only.as_array().unwrap().len(), 1, "{only}");
    let any_client = samsa_json(&broker, &["quota", "list", "--client-id"]);
    assert_eq!(
        any_client[0]["entity"],
        serde_json::json!({"user": "alice", "client-id": null}),
        "{any_client}"
    );
    let ip = samsa_json(&broker, &["quota", "list", "--ip-default"]);
    assert_eq!(ip.as_array().unwrap().len(), 1, "{ip}");

    let (status, out, err) = samsa(&broker, &["quota", "list"]);
    assert!(status.success(), "{err}");
    assert!(
        out.starts_with("ENTITY") && out.contains("user=alice,client-id=<default>"),
        "{out}"
    );
    // As `kafka-configs --describe --entity-type users --entity-name alice` prints it.
    let (status, out, err) = samsa(&broker, &["quota", "describe", "--user", "alice"]);
    assert!(status.success(), "{err}");
    assert_eq!(
        out,
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2.0E7, \
         producer_byte_rate=1048576.0\n"
    );

    samsa_json(
        &broker,
        &[
            "quota",
            "delete",
            "--user",
            "alice",
            "--key",
            "producer_byte_rate",
        ],
    );
    let only = samsa_json(&broker, &["quota", "describe", "--user", "alice"]);
    assert_eq!(
        only,
        serde_json::json!([{"entity": {"user": "alice"},
                            "quotas": {"consumer_byte_rate": 20000000.0}}])
    );

    // Refusals carry Kafka's words.
    let err = samsa_fails(
        &broker,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--producer-byte-rate",
            "-5",
        ],
    );
    assert!(
        err.contains("quotas of user 'alice'")
            && err.contains("Quota producer_byte_rate must be greater than 0")
            && err.contains("INVALID_REQUEST"),
        "{err}"
    );
    let err = samsa_fails(
        &broker,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--producer-byte-rate",
            "1.5",
        ],
    );
    assert!(
        err.contains("producer_byte_rate cannot be a fractional value"),
        "{err}"
    );
    let err = samsa_fails(
        &broker,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "--ip",
            "10.0.0.1",
            "--producer-byte-rate",
            "1",
        ],
    );
    assert!(err.contains("IP entity shouldnot be combined"), "{err}");
    let err = samsa_fails(&broker, &["quota", "list", "--ip", "--user"]);
    assert!(
        err.contains("Invalid entity filter component combination"),
        "{err}"
    );
    // A refused value changed nothing.
    let all = samsa_json(&broker, &["quota", "list", "--user", "alice", "--strict"]);
    assert_eq!(
        all[0]["quotas"],
        serde_json::json!({"consumer_byte_rate": 20000000.0})
    );
}
