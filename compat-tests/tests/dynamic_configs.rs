//! Dynamic broker configs (KIP-226, KIP-339), group configs (KIP-848), this broker's log levels
//! (KIP-412) and SCRAM credentials (KIP-554) through real clients: the rdkafka crate's admin client (AlterConfigs and
//! DescribeConfigs on a broker), confluent-kafka's (IncrementalAlterConfigs, SCRAM), and the raw
//! wire for the cluster-wide default, which the clients cannot name. Changes take effect at
//! once (a dynamic `log.retention.ms` deletes old segments) and survive a restart.

mod common;

use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::{
    alter_configs_request, describe_configs_request, incremental_alter_configs_request,
    AlterConfigsRequest, AlterConfigsResponse, ApiKey, DescribeConfigsRequest,
    DescribeConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::admin::{AdminOptions, AlterConfig, ConfigSource, ResourceSpecifier};
use rdkafka::consumer::{BaseConsumer, Consumer};

const TIMEOUT: Duration = Duration::from_secs(10);

/// AlterConfigs through librdkafka (legacy: the broker's dynamic layer becomes exactly these
/// configs). The rdkafka crate reports every resource as altered whatever the broker answered,
/// so refusals are checked on the wire ([`alter_raw`]) and successes by describing.
fn alter_broker(broker: &Broker, node: i32, configs: &[(&str, &str)]) {
    let mut alter = AlterConfig::new(ResourceSpecifier::Broker(node));
    for (k, v) in configs {
        alter = alter.set(k, v);
    }
    runtime()
        .block_on(admin(broker).alter_configs(&[alter], &AdminOptions::new()))
        .expect("alter_configs");
}

/// AlterConfigs (legacy) on a BROKER resource, on the wire: the code and message of the answer.
fn alter_raw(broker: &Broker, name: &str, configs: &[(&str, &str)]) -> (i16, String) {
    let mut res = alter_configs_request::AlterConfigsResource::default();
    res.resource_type = 4;
    res.resource_name = s(name);
    res.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = alter_configs_request::AlterableConfig::default();
            c.name = s(k);
            c.value = Some(s(v));
            c
        })
        .collect();
    let mut req = AlterConfigsRequest::default();
    req.resources = vec![res];
    let resp: AlterConfigsResponse = raw_request(broker, ApiKey::AlterConfigs, 2, &req);
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_deref().unwrap_or("").to_string(),
    )
}

/// DescribeConfigs of a resource as (name -> (value, source, read only, sensitive)).
fn describe(
    broker: &Broker,
    resource: ResourceSpecifier<'_>,
) -> std::collections::HashMap<String, (Option<String>, ConfigSource, bool, bool)> {
    let results = runtime()
        .block_on(admin(broker).describe_configs(&[resource], &AdminOptions::new()))
        .expect("describe_configs");
    let resource = results.into_iter().next().unwrap().expect("described");
    resource
        .entries
        .into_iter()
        .map(|e| (e.name, (e.value, e.source, e.is_read_only, e.is_sensitive)))
        .collect()
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// DescribeConfigs v4 with synonyms, on the wire (the clients cannot name the cluster default).
fn describe_raw(
    broker: &Broker,
    resource_type: i8,
    name: &str,
) -> Vec<DescribeConfigsResourceResult> {
    let mut res = describe_configs_request::DescribeConfigsResource::default();
    res.resource_type = resource_type;
    res.resource_name = s(name);
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![res];
    req.include_synonyms = true;
    let resp: DescribeConfigsResponse = raw_request(broker, ApiKey::DescribeConfigs, 4, &req);
    let r = resp.results.into_iter().next().unwrap();
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    r.configs
}

fn entry<'a>(
    configs: &'a [DescribeConfigsResourceResult],
    name: &str,
) -> &'a DescribeConfigsResourceResult {
    configs
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} is not described"))
}

/// Synonyms as (name, value, source) for comparison.
fn synonyms(c: &DescribeConfigsResourceResult) -> Vec<(String, String, i8)> {
    c.synonyms
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                s.value.as_deref().unwrap_or("").to_string(),
                s.source,
            )
        })
        .collect()
}

#[test]
fn broker_configs_change_at_runtime_with_kafkas_sources_and_refusals_and_survive_a_restart() {
    let mut broker = Broker::start();
    create_topic(&broker, "plain", 1, &[]);

    // 0081's AlterConfigs on the broker, plus a topic default.
    alter_broker(
        &broker,
        1,
        &[
            ("sasl.kerberos.min.time.before.relogin", "58000"),
            ("log.retention.ms", "3600000"),
        ],
    );
    let configs = describe(&broker, ResourceSpecifier::Broker(1));
    let relogin = &configs["sasl.kerberos.min.time.before.relogin"];
    assert_eq!(relogin.0.as_deref(), Some("58000"));
    assert_eq!(relogin.1, ConfigSource::DynamicBroker);
    assert!(!relogin.2, "a dynamic config is not read-only");
    let partitions = &configs["num.partitions"];
    assert_eq!(partitions.1, ConfigSource::Default);
    assert!(partitions.2, "num.partitions is read-only");
    assert!(configs["sasl.jaas.config"].3, "passwords are sensitive");
    assert_eq!(configs["sasl.jaas.config"].0, None);
    // The topic default reaches the topic at once.
    let topic = describe(&broker, ResourceSpecifier::Topic("plain"));
    assert_eq!(topic["retention.ms"].0.as_deref(), Some("3600000"));
    assert_eq!(topic["retention.ms"].1, ConfigSource::DynamicBroker);

    // Kafka's refusals: static-only keys, another broker's id, thread counts out of range.
    let invalid_request = ResponseError::InvalidRequest.code();
    assert_eq!(
        alter_raw(&broker, "1", &[("log.retention.hours", "1")]),
        (
            invalid_request,
            "Cannot update these configs dynamically: [log.retention.hours]".into()
        )
    );
    assert_eq!(
        alter_raw(&broker, "2", &[("background.threads", "9")]),
        (
            invalid_request,
            "Unexpected broker id, expected 1, but received 2".into()
        )
    );
    let (code, message) = alter_raw(&broker, "1", &[("background.threads", "21")]);
    assert_eq!(code, invalid_request);
    assert!(
        message.contains("not be greater than double the current value 10"),
        "{message}"
    );
    assert_eq!(
        alter_raw(&broker, "1", &[("ssl.keystore.location", "/etc/k.jks")]).0,
        invalid_request,
        "keystores are per listener"
    );
    // A refused request changed nothing.
    let configs = describe(&broker, ResourceSpecifier::Broker(1));
    assert_eq!(configs["log.retention.ms"].0.as_deref(), Some("3600000"));

    // Legacy AlterConfigs replaces the whole layer: what is not named goes back to default.
    alter_broker(&broker, 1, &[("background.threads", "12")]);
    let configs = describe(&broker, ResourceSpecifier::Broker(1));
    assert_eq!(configs["background.threads"].0.as_deref(), Some("12"));
    assert_eq!(configs["background.threads"].1, ConfigSource::DynamicBroker);
    let relogin = &configs["sasl.kerberos.min.time.before.relogin"];
    assert_eq!(relogin.0.as_deref(), Some("60000"));
    assert_eq!(relogin.1, ConfigSource::Default);
    assert_eq!(configs["log.retention.ms"].1, ConfigSource::Default);

    broker.kill();
    broker.restart();
    let configs = describe(&broker, ResourceSpecifier::Broker(1));
    assert_eq!(configs["background.threads"].0.as_deref(), Some("12"));
    assert_eq!(configs["background.threads"].1, ConfigSource::DynamicBroker);
}

fn log_start_offset(consumer: &BaseConsumer, topic: &str) -> i64 {
    consumer
        .fetch_watermarks(topic, 0, TIMEOUT)
        .expect("watermarks")
        .0
}

#[test]
fn a_dynamic_log_retention_default_deletes_old_segments_of_topics_that_do_not_override_it() {
    // Retention runs every log.retention.check.interval.ms: short here, so the test is quick.
    let mut broker =
        Broker::start_with(BrokerOptions::default().prop("log.retention.check.interval.ms", 100));
    create_topic(&broker, "aged", 1, &[("segment.bytes", "1024")]);
    create_topic(
        &broker,
        "kept",
        1,
        &[("segment.bytes", "1024"), ("retention.ms", "-1")],
    );
    produce_old_records(&broker, "aged", 1, 20);
    produce_old_records(&broker, "kept", 1, 20);
    let consumer: BaseConsumer = client_config(&broker).create().unwrap();
    assert_eq!(log_start_offset(&consumer, "aged"), 0);

    // A static-only key, and a per-broker key, are refused at the cluster-wide default.
    let (code, message) = set_configs(&broker, 4, "", &[("log.retention.hours", "1")]);
    assert_eq!(code, ResponseError::InvalidRequest.code());
    assert_eq!(
        message,
        "Cannot update these configs dynamically: [log.retention.hours]"
    );
    let (code, message) = set_configs(
        &broker,
        4,
        "",
        &[("sasl.kerberos.min.time.before.relogin", "1")],
    );
    assert_eq!(code, ResponseError::InvalidRequest.code());
    assert!(message.contains("broker id must be specified"), "{message}");

    // One hour of retention, cluster-wide: the two-hour-old segments of "aged" go.
    assert_eq!(
        set_configs(&broker, 4, "", &[("log.retention.ms", "3600000")]),
        (0, String::new())
    );
    let deadline = Instant::now() + TIMEOUT;
    while log_start_offset(&consumer, "aged") == 0 {
        assert!(
            Instant::now() < deadline,
            "retention never deleted a segment"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        log_start_offset(&consumer, "kept"),
        0,
        "a topic with its own retention.ms keeps its records"
    );

    // DescribeConfigs: the topic's value comes from the dynamic default, with Kafka's synonyms;
    // the cluster default resource lists only what is set on it.
    let topic = describe_raw(&broker, 2, "aged");
    let retention = entry(&topic, "retention.ms");
    assert_eq!(retention.value.as_deref(), Some("3600000"));
    assert_eq!(retention.config_source, 3, "DYNAMIC_DEFAULT_BROKER_CONFIG");
    assert_eq!(
        synonyms(retention),
        vec![
            ("log.retention.ms".into(), "3600000".into(), 3),
            ("log.retention.hours".into(), "168".into(), 5),
        ]
    );
    let defaults = describe_raw(&broker, 4, "");
    let names: Vec<&str> = defaults.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["log.retention.ms"]);
    assert_eq!(defaults[0].config_source, 3);

    broker.kill();
    broker.restart();
    let topic = describe_raw(&broker, 2, "aged");
    assert_eq!(
        entry(&topic, "retention.ms").config_source,
        3,
        "kept across a restart"
    );
}

#[test]
fn group_configs_describe_defaults_even_for_a_group_that_does_not_exist() {
    let broker = Broker::start_with(
        BrokerOptions::default().prop("group.consumer.session.timeout.ms", 50000),
    );
    let configs = describe(&broker, ResourceSpecifier::Group("no-such-group"));
    let mut names: Vec<&str> = configs.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        // Kafka 4.4's group configs (as it describes them).
        vec![
            "consumer.assignment.interval.ms",
            "consumer.heartbeat.interval.ms",
            "consumer.session.timeout.ms",
            "errors.deadletterqueue.copy.record.enable",
            "errors.deadletterqueue.topic.name",
            "share.assignment.interval.ms",
            "share.auto.offset.reset",
            "share.delivery.count.limit",
            "share.heartbeat.interval.ms",
            "share.isolation.level",
            "share.partition.max.record.locks",
            "share.record.lock.duration.ms",
            "share.renew.acknowledge.enable",
            "share.session.timeout.ms",
            "streams.assignment.interval.ms",
            "streams.assignor.name",
            "streams.heartbeat.interval.ms",
            "streams.initial.rebalance.delay.ms",
            "streams.num.standby.replicas",
            "streams.rack.aware.assignment.tags",
            "streams.session.timeout.ms",
        ]
    );
    // The broker's default, from where the broker key got it (as Kafka reports it: the
    // source of the first synonym, group.consumer.session.timeout.ms).
    let timeout = &configs["consumer.session.timeout.ms"];
    assert_eq!(timeout.0.as_deref(), Some("50000"), "the broker's default");
    assert_eq!(timeout.1, ConfigSource::StaticBroker);
    assert!(!timeout.2, "group configs are not read-only");
}

#[test]
fn confluent_kafka_alters_scram_credentials_broker_and_group_configs_kept_across_a_restart() {
    let mut broker = Broker::start();
    let script = compat_tests::workspace_root()
        .join("compat-tests/python/confluent_kafka_dynamic_configs.py");
    for phase in ["alter", "restarted"] {
        let mut cmd = std::process::Command::new(compat_tests::python());
        cmd.arg(&script).arg(broker.bootstrap()).arg(phase);
        let (status, out, err) =
            compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
        assert!(
            status.success(),
            "confluent_kafka_dynamic_configs.py {phase} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}"
        );
        if phase == "alter" {
            broker.kill();
            broker.restart();
        }
    }
}

/// IncrementalAlterConfigs v1 of one resource on the wire: (name, operation, value) each; the
/// code and message of the answer.
fn incremental_raw(
    broker: &Broker,
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, String) {
    let mut res = incremental_alter_configs_request::AlterConfigsResource::default();
    res.resource_type = resource_type;
    res.resource_name = s(name);
    res.configs = ops
        .iter()
        .map(|(k, op, v)| {
            let mut c = incremental_alter_configs_request::AlterableConfig::default();
            c.name = s(k);
            c.config_operation = *op;
            c.value = v.map(s);
            c
        })
        .collect();
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![res];
    req.validate_only = validate_only;
    let resp: IncrementalAlterConfigsResponse =
        raw_request(broker, ApiKey::IncrementalAlterConfigs, 1, &req);
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_deref().unwrap_or("").to_string(),
    )
}

/// A client connection opened and closed at once (the broker logs its end at DEBUG).
fn connect_and_close(broker: &Broker) {
    let addr = broker.bootstrap();
    drop(std::net::TcpStream::connect(addr.as_str()).expect("connect"));
}

/// How many lines of the broker's log contain `text`.
fn logged(broker: &Broker, text: &str) -> usize {
    broker
        .log_lines()
        .iter()
        .filter(|l| l.contains(text))
        .count()
}

#[test]
fn broker_logger_levels_change_at_runtime_through_incremental_alter_configs() {
    const SET: i8 = 0;
    const DELETE: i8 = 1;
    const APPEND: i8 = 2;
    let broker = Broker::start_with(BrokerOptions::default().prop("log.level", "info"));
    // Kafka's view of the loggers: root at log.level's level, every target the node has
    // logged under, each from DYNAMIC_BROKER_LOGGER_CONFIG.
    let loggers = describe_raw(&broker, 8, "1");
    let root = entry(&loggers, "root");
    assert_eq!(root.value.as_deref(), Some("INFO"));
    assert_eq!(root.config_source, 6, "DYNAMIC_BROKER_LOGGER_CONFIG");
    assert!(!root.read_only);
    assert_eq!(
        entry(&loggers, "samsa_broker").value.as_deref(),
        Some("INFO")
    );

    // Connections close quietly at INFO.
    connect_and_close(&broker);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(logged(&broker, "connection closed"), 0);

    // Kafka's refusals: validate only, nothing changes.
    let refused = [
        (("root", SET, Some("LOUD")), 40),
        (("root", SET, Some("debug")), 40),
        (("kafka.server.ReplicaManager", SET, Some("DEBUG")), 40),
        (("root", DELETE, None), 42),
        (("root", APPEND, Some("DEBUG")), 42),
    ];
    for ((name, op, value), code) in refused {
        let (got, message) = incremental_raw(&broker, 8, "1", &[(name, op, value)], false);
        assert_eq!(got, code, "{name} {op} {value:?}: {message}");
    }
    assert_eq!(
        incremental_raw(&broker, 8, "2", &[("root", SET, Some("DEBUG"))], false).0,
        42
    );
    assert_eq!(
        incremental_raw(
            &broker,
            8,
            "1",
            &[("samsa_broker::net", SET, Some("DEBUG"))],
            true
        )
        .0,
        0
    );
    connect_and_close(&broker);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        logged(&broker, "connection closed"),
        0,
        "validate only changes nothing"
    );

    // SET takes effect at once, for the module and those below it.
    let (code, message) = incremental_raw(
        &broker,
        8,
        "1",
        &[("samsa_broker::net", SET, Some("DEBUG"))],
        false,
    );
    assert_eq!(code, 0, "{message}");
    let loggers = describe_raw(&broker, 8, "1");
    assert_eq!(
        entry(&loggers, "samsa_broker::net").value.as_deref(),
        Some("DEBUG")
    );
    assert_eq!(entry(&loggers, "root").value.as_deref(), Some("INFO"));
    connect_and_close(&broker);
    let deadline = Instant::now() + TIMEOUT;
    while logged(&broker, "connection closed") == 0 {
        assert!(Instant::now() < deadline, "no DEBUG line after SET");
        std::thread::sleep(Duration::from_millis(50));
    }

    // DELETE gives the logger root's level back.
    let (code, message) = incremental_raw(
        &broker,
        8,
        "1",
        &[("samsa_broker::net", DELETE, None)],
        false,
    );
    assert_eq!(code, 0, "{message}");
    let loggers = describe_raw(&broker, 8, "1");
    assert_eq!(
        entry(&loggers, "samsa_broker::net::connection")
            .value
            .as_deref(),
        Some("INFO")
    );
    // The connections of the requests above close as the broker notices it; a close seen
    // before the DELETE (while DEBUG was on) may be logged a moment later: let them settle.
    std::thread::sleep(Duration::from_millis(300));
    let before = logged(&broker, "connection closed");
    connect_and_close(&broker);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(logged(&broker, "connection closed"), before);
}
