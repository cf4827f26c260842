//! The console's JSON API (issue 45) of the real binary, over HTTP: what it shows of topics,
//! partitions, configs and groups that real Kafka clients (librdkafka) made, the records it
//! produces and reads back, its answers to bad input, and its security: every request is a
//! Kafka client signed in as the HTTP Basic user, judged by the ACL authorizer.

mod common;

use std::process::Command;
use std::time::Duration;

use base64::Engine;
use common::*;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use serde_json::{json, Value};

/// A node with the console on a free loopback port, and `props` besides.
fn start(props: &[(&str, &str)]) -> (Broker, String) {
    start_with(BrokerOptions::default(), props)
}

fn start_with(mut options: BrokerOptions, props: &[(&str, &str)]) -> (Broker, String) {
    let port = compat_tests::free_port();
    options = options.prop("console.listener", format!("127.0.0.1:{port}"));
    for (k, v) in props {
        options = options.prop(k, v);
    }
    (
        Broker::start_with(options),
        format!("http://127.0.0.1:{port}"),
    )
}

/// An HTTP request to the console: (status, JSON body). `auth` is Basic (user, password).
fn http(method: &str, url: &str, auth: Option<(&str, &str)>, body: Option<&Value>) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let header = auth.map(|(u, p)| {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        format!("Basic {token}")
    });
    let mut resp = match (method, body) {
        ("GET", None) => {
            let mut r = agent.get(url);
            if let Some(h) = &header {
                r = r.header("Authorization", h);
            }
            r.call()
        }
        ("POST", Some(b)) => {
            let mut r = agent.post(url).header("Content-Type", "application/json");
            if let Some(h) = &header {
                r = r.header("Authorization", h);
            }
            r.send(b.to_string())
        }
        other => panic!("no such request in these tests: {other:?}"),
    }
    .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{method} {url} answered {status} with non-JSON {text:?}: {e}"));
    (status, value)
}

fn get(url: &str) -> Value {
    let (status, v) = http("GET", url, None, None);
    assert_eq!(status, 200, "GET {url}: {v}");
    v
}

/// The status and message of a request that must fail, checked to be REST v3's error shape.
fn error(
    method: &str,
    url: &str,
    auth: Option<(&str, &str)>,
    body: Option<&Value>,
) -> (u16, String) {
    let (status, v) = http(method, url, auth, body);
    assert_eq!(v["error_code"], json!(status), "{method} {url}: {v}");
    (
        status,
        v["message"].as_str().unwrap_or_default().to_string(),
    )
}

fn names(list: &Value, field: &str) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_api_shows_the_cluster_topics_in_pages_partitions_configs_and_group_lag() {
    let (broker, base) = start(&[]);
    let clusters = get(&format!("{base}/v3/clusters"));
    assert_eq!(clusters["kind"], "KafkaClusterList");
    let cluster = &clusters["data"][0];
    let id = cluster["cluster_id"].as_str().unwrap().to_string();
    let c = format!("{base}/v3/clusters/{id}");
    assert_eq!(cluster["metadata"]["self"], json!(c));
    assert_eq!(
        get(&c)["controller"]["related"],
        json!(format!("{c}/brokers/1"))
    );
    let brokers = get(&format!("{c}/brokers"));
    assert_eq!(brokers["data"][0]["broker_id"], 1);
    assert_eq!(brokers["data"][0]["port"], json!(broker.port));
    assert_eq!(get(&format!("{c}/brokers/1"))["host"], "127.0.0.1");

    // 25 topics in pages of 10, followed by their `next` links: every topic once, in order.
    for i in 0..25 {
        create_topic(&broker, &format!("page-{i:02}"), 1, &[]);
    }
    create_topic(&broker, "orders", 3, &[("retention.ms", "3600000")]);
    let mut seen = Vec::new();
    let mut url = format!("{c}/topics?page_size=10");
    let mut pages = 0;
    loop {
        let page = get(&url);
        seen.extend(names(&page, "topic_name"));
        pages += 1;
        match page["metadata"]["next"].as_str() {
            Some(next) => url = next.to_string(),
            None => break,
        }
    }
    let mut expected: Vec<String> = (0..25).map(|i| format!("page-{i:02}")).collect();
    expected.insert(0, "orders".into());
    seen.retain(|t| !t.starts_with("__"));
    assert_eq!(seen, expected);
    assert_eq!(pages, 3);

    let topic = get(&format!("{c}/topics/orders"));
    assert_eq!(
        (
            topic["partitions_count"].clone(),
            topic["replication_factor"].clone()
        ),
        (json!(3), json!(1))
    );
    let producer = producer(&broker, &[]);
    let records: Vec<_> = (0..10)
        .map(|i| (None, format!("{{\"n\":{i}}}").into_bytes()))
        .collect();
    produce_all(&producer, "orders", &records, Some(2));
    let partitions = get(&format!("{c}/topics/orders/partitions"));
    assert_eq!(partitions["data"].as_array().unwrap().len(), 3);
    let p2 = get(&format!("{c}/topics/orders/partitions/2"));
    assert_eq!(
        (
            p2["leader_id"].clone(),
            p2["isr_ids"].clone(),
            p2["latest_offset"].clone()
        ),
        (json!(1), json!([1]), json!(10))
    );
    let configs = get(&format!("{c}/topics/orders/configs"));
    let retention = configs["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "retention.ms")
        .unwrap();
    assert_eq!(
        (
            retention["value"].clone(),
            retention["source"].clone(),
            retention["is_default"].clone()
        ),
        (
            json!("3600000"),
            json!("DYNAMIC_TOPIC_CONFIG"),
            json!(false)
        )
    );

    // The records librdkafka produced, read back from offset 7: JSON values.
    let read = get(&format!(
        "{c}/topics/orders/partitions/2/records?offset=7&limit=2"
    ));
    let offsets: Vec<i64> = read["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, [7, 8]);
    assert_eq!(read["data"][0]["value"]["type"], "JSON");
    assert_eq!(read["data"][0]["value"]["data"], json!({"n": 7}));
    assert_eq!(read["next_offset"], 9);
    assert!(read["metadata"]["next"]
        .as_str()
        .unwrap()
        .contains("offset=9"));
    // Without a position: the last `limit` records.
    let last = get(&format!("{c}/topics/orders/partitions/2/records?limit=3"));
    assert_eq!(last["data"][0]["offset"], 7);

    // A group member consumes and commits 4 of the 10 records: lag 6 on partition 2.
    let consumer = group_consumer(&broker, "billing", "orders");
    let got = consume_n(&consumer, 4, Duration::from_secs(30));
    assert!(got.iter().all(|g| g.partition == 2));
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("orders", 2, Offset::Offset(4))
        .unwrap();
    consumer.commit(&tpl, CommitMode::Sync).unwrap();
    let groups = get(&format!("{c}/consumer-groups"));
    assert!(
        names(&groups, "consumer_group_id").contains(&"billing".to_string()),
        "{groups}"
    );
    let group = get(&format!("{c}/consumer-groups/billing"));
    assert_eq!(
        (group["state"].clone(), group["type"].clone()),
        (json!("Stable"), json!("CLASSIC"))
    );
    let consumers = get(&format!("{c}/consumer-groups/billing/consumers"));
    let member = consumers["data"][0]["consumer_id"]
        .as_str()
        .unwrap()
        .to_string();
    let summary = get(&format!("{c}/consumer-groups/billing/lag-summary"));
    assert_eq!(
        (summary["max_lag"].clone(), summary["total_lag"].clone()),
        (json!(6), json!(6))
    );
    assert_eq!(summary["max_lag_topic_name"], "orders");
    assert_eq!(summary["max_lag_partition_id"], 2);
    assert_eq!(summary["max_lag_consumer_id"], json!(member));
    let lags = get(&format!("{c}/consumer-groups/billing/lags"));
    assert_eq!(lags["data"][0]["current_offset"], 4);
    assert_eq!(lags["data"][0]["log_end_offset"], 10);
    drop(consumer);

    // Writes are off by default: produce is refused before anything is written.
    let record = json!({"value": {"type": "STRING", "data": "x"}});
    let (status, message) = error(
        "POST",
        &format!("{c}/topics/orders/records"),
        None,
        Some(&record),
    );
    assert_eq!(status, 403);
    assert!(message.contains("console.writes.enable"), "{message}");
    assert_eq!(
        get(&format!("{c}/topics/orders/partitions/2"))["latest_offset"],
        10
    );

    // Bad input: a clear 4xx, never a hang or a 500.
    let bad = [
        (
            format!("{c}/topics/orders/partitions/2/records?offset=11"),
            400,
            "outside",
        ),
        (
            format!("{c}/topics/orders/partitions/2/records?limit=100000"),
            400,
            "limit",
        ),
        (
            format!("{c}/topics/orders/partitions/2/records?offset=x"),
            400,
            "offset",
        ),
        (
            format!("{c}/topics/orders/partitions/2/records?offset=1&timestamp=1"),
            400,
            "not both",
        ),
        (
            format!("{c}/topics/orders/partitions/2/records?timestamp=yesterday"),
            400,
            "timestamp",
        ),
        (
            format!("{c}/topics/orders/partitions/x/records"),
            400,
            "whole number",
        ),
        (
            format!("{c}/topics/orders/partitions/9"),
            404,
            "no partition 9",
        ),
        (format!("{c}/topics?page_size=100000"), 400, "page_size"),
        (
            format!("{c}/topics?pagesize=10"),
            400,
            "unknown query parameter",
        ),
        (format!("{c}/topics/missing"), 404, "missing"),
        (
            format!("{c}/consumer-groups/missing/lag-summary"),
            404,
            "missing",
        ),
        (
            format!("{base}/v3/clusters/not-this-one/topics"),
            404,
            "not this cluster",
        ),
        (format!("{c}/acls"), 400, "no authorizer"),
        (format!("{base}/v3/nothing"), 404, "no such resource"),
    ];
    for (url, want, says) in bad {
        let (status, message) = error("GET", &url, None, None);
        assert_eq!(status, want, "{url}: {message}");
        assert!(message.contains(says), "{url}: {message}");
    }
}

#[test]
fn with_writes_enabled_a_produced_record_is_read_back_by_the_api_and_by_librdkafka() {
    let (broker, base) = start(&[("console.writes.enable", "true")]);
    create_topic(&broker, "events", 2, &[]);
    let id = get(&format!("{base}/v3/clusters"))["data"][0]["cluster_id"]
        .as_str()
        .unwrap()
        .to_string();
    let c = format!("{base}/v3/clusters/{id}");
    let header = base64::engine::general_purpose::STANDARD.encode("web");
    let long = "x".repeat(5000);
    let mut produced = Vec::new();
    for value in [
        json!({"type": "JSON", "data": {"user": "ann", "n": 1}}),
        json!({"type": "STRING", "data": long}),
    ] {
        let record = json!({
            "partition_id": 1,
            "key": {"type": "STRING", "data": "ann"},
            "value": value,
            "headers": [{"name": "source", "value": header}],
        });
        let (status, v) = http(
            "POST",
            &format!("{c}/topics/events/records"),
            None,
            Some(&record),
        );
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["partition_id"], 1);
        produced.push(v["offset"].as_i64().unwrap());
    }
    assert_eq!(produced, [0, 1]);
    let read = get(&format!(
        "{c}/topics/events/partitions/1/records?offset=0&max_value_bytes=100"
    ));
    let first = &read["data"][0];
    assert_eq!(first["key"]["data"], "ann");
    assert_eq!(first["value"]["data"], json!({"user": "ann", "n": 1}));
    assert_eq!(first["headers"][0]["name"], "source");
    assert_eq!(first["headers"][0]["value"]["data"], "web");
    let second = &read["data"][1]["value"];
    assert_eq!(
        (second["size"].clone(), second["truncated"].clone()),
        (json!(5000), json!(true))
    );
    assert_eq!(second["data"].as_str().unwrap().len(), 100);
    // By time: from a timestamp after both records there is nothing; from 0, both.
    let ts = read["data"][1]["timestamp_ms"].as_i64().unwrap();
    let later = get(&format!(
        "{c}/topics/events/partitions/1/records?timestamp={}",
        ts + 60_000
    ));
    assert_eq!(later["data"], json!([]));
    assert_eq!(
        get(&format!(
            "{c}/topics/events/partitions/1/records?timestamp=0"
        ))["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A real consumer sees the console's record as it was produced.
    let consumer = assigned_consumer(&broker, "events", &[1], Offset::Beginning);
    let got = consume_n(&consumer, 2, Duration::from_secs(30));
    assert_eq!(got[0].key.as_deref(), Some(&b"ann"[..]));
    assert_eq!(
        serde_json::from_slice::<Value>(&got[0].value).unwrap(),
        json!({"user": "ann", "n": 1})
    );
    assert_eq!(got[1].value.len(), 5000);
    // Malformed records are 400s that say what is wrong.
    let bad = [
        (json!({"value": {"type": "AVRO", "data": 1}}), "AVRO"),
        (json!({"value": {"type": "BINARY", "data": "%%"}}), "base64"),
        (
            json!({"partition_id": 7, "value": {"type": "STRING", "data": "x"}}),
            "no partition 7",
        ),
        (
            json!({"valeu": {"type": "STRING", "data": "x"}}),
            "unknown field",
        ),
        (json!([1, 2]), "JSON object"),
    ];
    for (body, says) in bad {
        let (status, message) = error(
            "POST",
            &format!("{c}/topics/events/records"),
            None,
            Some(&body),
        );
        assert_eq!(status, 400, "{body}: {message}");
        assert!(message.contains(says), "{body}: {message}");
    }
    // A body one byte past the 1 MiB limit is refused, in the same error shape. (Exactly one
    // byte: the server reads all of it, so its close cannot reset the connection under the
    // answer, as unread bytes would.)
    let wrapped = |n: usize| json!({"value": {"type": "STRING", "data": "x".repeat(n)}});
    let overhead = wrapped(0).to_string().len();
    let huge = wrapped((1 << 20) + 1 - overhead);
    assert_eq!(huge.to_string().len(), (1 << 20) + 1);
    let (status, message) = error(
        "POST",
        &format!("{c}/topics/events/records"),
        None,
        Some(&huge),
    );
    assert_eq!(status, 413, "{message}");
    let (status, _) = error(
        "POST",
        &format!("{c}/topics/nowhere/records"),
        None,
        Some(&json!({"value": null})),
    );
    assert_eq!(status, 404);
}

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_alice=\"alice-secret\" \
    user_root=\"root-secret\";";

#[test]
fn with_an_authorizer_the_console_shows_a_signed_in_user_what_the_acls_allow_and_nothing_anonymously(
) {
    let [plain, sasl] = [(); 2].map(|_| compat_tests::free_port());
    let options = BrokerOptions {
        port: Some(plain),
        ..Default::default()
    };
    let listeners = format!("PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}");
    let (broker, base) = start_with(
        options,
        &[
            ("listeners", &listeners),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            ),
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
            (
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                PLAIN_JAAS,
            ),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            // The test's own PLAINTEXT clients set things up as a super user; root is one.
            ("super.users", "User:ANONYMOUS;User:root"),
            ("console.writes.enable", "true"),
        ],
    );
    create_topic(&broker, "visible", 1, &[]);
    create_topic(&broker, "hidden", 1, &[]);
    for op in [8i8 /* describe */, 3 /* read */] {
        create_acl(&broker, "User:alice", "visible", op);
    }
    create_acl(&broker, "User:carol", "hidden", 8);
    // carol signs in with SCRAM-SHA-512; alice has no SCRAM credential and falls back to PLAIN.
    let (ok, _, err) = samsa_on(
        &broker,
        &[
            "user",
            "scram-set",
            "carol",
            "--password",
            "carol-secret",
            "--mechanism",
            "SCRAM-SHA-512",
        ],
    );
    assert!(ok, "{err}");
    produce_all(
        &producer(&broker, &[]),
        "visible",
        &[(None, b"for alice".to_vec())],
        None,
    );

    // No sign-in: 401 everywhere (with a Basic challenge), although ANONYMOUS is a super user
    // on the Kafka listener.
    let (status, message) = error("GET", &format!("{base}/v3/clusters"), None, None);
    assert_eq!(status, 401, "{message}");
    let alice = Some(("alice", "alice-secret"));
    let (status, _) = error(
        "GET",
        &format!("{base}/v3/clusters"),
        Some(("alice", "wrong")),
        None,
    );
    assert_eq!(status, 401);
    let (status, v) = http("GET", &format!("{base}/v3/clusters"), alice, None);
    assert_eq!(status, 200, "{v}");
    let c = format!(
        "{base}/v3/clusters/{}",
        v["data"][0]["cluster_id"].as_str().unwrap()
    );

    let (_, topics) = http("GET", &format!("{c}/topics"), alice, None);
    assert_eq!(names(&topics, "topic_name"), ["visible"]);
    let (_, topics) = http(
        "GET",
        &format!("{c}/topics"),
        Some(("carol", "carol-secret")),
        None,
    );
    assert_eq!(names(&topics, "topic_name"), ["hidden"]);
    let (status, _) = error(
        "GET",
        &format!("{c}/topics/hidden/partitions/0/records"),
        alice,
        None,
    );
    assert!(status == 403 || status == 404, "{status}");
    let (status, read) = http(
        "GET",
        &format!("{c}/topics/visible/partitions/0/records?offset=0"),
        alice,
        None,
    );
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["data"][0]["value"]["data"], "for alice");
    // Writes are enabled, but alice may not write `visible`: the authorizer refuses her.
    let record = json!({"value": {"type": "STRING", "data": "from alice"}});
    let (status, message) = error(
        "POST",
        &format!("{c}/topics/visible/records"),
        alice,
        Some(&record),
    );
    assert_eq!(status, 403, "{message}");
    let (_, p) = http(
        "GET",
        &format!("{c}/topics/visible/partitions/0"),
        alice,
        None,
    );
    assert_eq!(p["latest_offset"], 1);
    // The ACLs: hidden from alice (no DESCRIBE on the cluster), shown to the super user root.
    let (status, _) = error("GET", &format!("{c}/acls"), alice, None);
    assert_eq!(status, 403);
    let root = Some(("root", "root-secret"));
    let (status, acls) = http("GET", &format!("{c}/acls?principal=User:alice"), root, None);
    assert_eq!(status, 200, "{acls}");
    let mut granted: Vec<String> = acls["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!(
                "{} {} {} {}",
                a["resource_name"], a["operation"], a["permission"], a["pattern_type"]
            )
        })
        .collect();
    granted.sort();
    assert_eq!(
        granted,
        [
            r#""visible" "DESCRIBE" "ALLOW" "LITERAL""#,
            r#""visible" "READ" "ALLOW" "LITERAL""#,
        ]
    );
    let (status, message) = error("GET", &format!("{c}/acls?operation=FLY"), root, None);
    assert_eq!(status, 400, "{message}");
}

#[test]
fn a_console_beyond_loopback_is_refused_at_start_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let port = compat_tests::free_port();
    let mut cmd = Command::new(compat_tests::samsa_bin());
    cmd.arg(format!("--listeners=PLAINTEXT://127.0.0.1:{port}"))
        .arg(format!("--log.dirs={}", dir.path().display()))
        .arg("--metrics.listener=")
        .arg("--console.listener=0.0.0.0:0");
    let (status, _, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
    assert!(!status.success());
    assert!(err.contains("console.listener.insecure.enable"), "{err}");
}

#[test]
fn on_three_nodes_one_console_reaches_every_partition_leader_and_group_coordinator() {
    let port = compat_tests::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let cluster = compat_tests::Cluster::start_each(3, |id| match id {
        1 => BrokerOptions::default()
            .prop("console.listener", format!("127.0.0.1:{port}"))
            .prop("console.writes.enable", "true"),
        _ => BrokerOptions::default(),
    });
    let node = &cluster.nodes[0];
    wait_for_brokers(node, 3, Duration::from_secs(30));
    create_topic_in(
        &cluster.bootstrap(),
        "spread",
        3,
        rdkafka::admin::TopicReplication::Fixed(3),
        &[],
    );
    let id = get(&format!("{base}/v3/clusters"))["data"][0]["cluster_id"]
        .as_str()
        .unwrap()
        .to_string();
    let c = format!("{base}/v3/clusters/{id}");
    let brokers = get(&format!("{c}/brokers"));
    let ids: Vec<i64> = brokers["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["broker_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3]);
    let partitions = get(&format!("{c}/topics/spread/partitions"));
    let mut leaders: Vec<i64> = partitions["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["leader_id"].as_i64().unwrap())
        .collect();
    leaders.sort();
    leaders.dedup();
    assert!(
        leaders.len() > 1,
        "every partition led by one node: {partitions}"
    );
    // Produced through node 1's console to each partition, wherever its leader is, and read
    // back from it.
    for p in 0..3 {
        let record =
            json!({"partition_id": p, "value": {"type": "STRING", "data": format!("to {p}")}});
        let (status, v) = http(
            "POST",
            &format!("{c}/topics/spread/records"),
            None,
            Some(&record),
        );
        assert_eq!(status, 200, "{v}");
        let read = get(&format!(
            "{c}/topics/spread/partitions/{p}/records?offset=0"
        ));
        assert_eq!(read["data"][0]["value"]["data"], json!(format!("to {p}")));
    }
    // Groups whose coordinators are spread over the nodes, each committed at offset 0 of
    // partition 0 by librdkafka: lag 1 each, found at its own coordinator.
    let mut coordinators = Vec::new();
    for g in 0..6 {
        let group = format!("spread-{g}");
        let consumer = assigned_consumer_with(
            node,
            "spread",
            &[0],
            Offset::Beginning,
            &[("group.id", &group)],
        );
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("spread", 0, Offset::Offset(0))
            .unwrap();
        // The offsets topic of a new cluster may still be loading at its coordinators: a
        // client retries the commit then, as this one does.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while let Err(e) = consumer.commit(&tpl, CommitMode::Sync) {
            assert!(
                std::time::Instant::now() < deadline,
                "commit of {group}: {e}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let summary = get(&format!("{c}/consumer-groups/{group}/lag-summary"));
        assert_eq!(summary["total_lag"], 1, "{summary}");
        let described = get(&format!("{c}/consumer-groups/{group}"));
        coordinators.push(
            described["coordinator"]["related"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    coordinators.sort();
    coordinators.dedup();
    assert!(
        coordinators.len() > 1,
        "every group at one coordinator: {coordinators:?}"
    );
    let groups = get(&format!("{c}/consumer-groups"));
    assert_eq!(
        names(&groups, "consumer_group_id"),
        (0..6).map(|g| format!("spread-{g}")).collect::<Vec<_>>()
    );
}

#[test]
fn with_tls_the_console_may_listen_beyond_loopback_and_answers_https() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let keystore = dir.path().join("console.pem");
    std::fs::write(&keystore, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, cert.pem()).unwrap();
    let port = compat_tests::free_port();
    let _broker = Broker::start_with(
        BrokerOptions::default()
            .prop("console.listener", format!("0.0.0.0:{port}"))
            .prop("console.ssl.keystore.location", keystore.display()),
    );
    // Python's HTTPS client, verifying the certificate against its CA.
    let script = "import ssl, sys, urllib.request\n\
                  ctx = ssl.create_default_context(cafile=sys.argv[2])\n\
                  print(urllib.request.urlopen(sys.argv[1], context=ctx, timeout=30).read().decode())";
    let url = format!("https://127.0.0.1:{port}/v3/clusters");
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg("-c").arg(script).arg(&url).arg(&ca);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(60)).unwrap();
    assert!(status.success(), "{out}\n{err}");
    let clusters: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(clusters["kind"], "KafkaClusterList");
    let link = clusters["data"][0]["metadata"]["self"].as_str().unwrap();
    assert!(
        link.starts_with(&format!("https://127.0.0.1:{port}/v3/clusters/")),
        "{link}"
    );
}
