//! IncrementalAlterConfigs and AlterConfigs rules.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;

use super::configs::java_split;
use super::tests::{cfg, three_brokers, topic, Harness, TestSchema};
use super::*;
use crate::metadata::image::{
    CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_BROKER_LOGGER, CONFIG_RESOURCE_CLIENT_METRICS,
    CONFIG_RESOURCE_GROUP, CONFIG_RESOURCE_TOPIC,
};
use crate::metadata::records::*;

fn op(name: &str, operation: AlterConfigOp, value: Option<&str>) -> AlterableConfig {
    AlterableConfig {
        name: name.into(),
        operation: operation as i8,
        value: value.map(str::to_string),
    }
}

fn set(name: &str, value: &str) -> AlterableConfig {
    op(name, AlterConfigOp::Set, Some(value))
}

fn delete(name: &str) -> AlterableConfig {
    op(name, AlterConfigOp::Delete, None)
}

fn append(name: &str, value: &str) -> AlterableConfig {
    op(name, AlterConfigOp::Append, Some(value))
}

fn subtract(name: &str, value: &str) -> AlterableConfig {
    op(name, AlterConfigOp::Subtract, Some(value))
}

fn resource(
    resource_type: i8,
    name: &str,
    configs: Vec<AlterableConfig>,
) -> IncrementalAlterConfigsResource {
    IncrementalAlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs,
    }
}

fn on_topic(name: &str, configs: Vec<AlterableConfig>) -> IncrementalAlterConfigsResource {
    resource(CONFIG_RESOURCE_TOPIC, name, configs)
}

fn legacy(resource_type: i8, name: &str, configs: &[(&str, &str)]) -> AlterConfigsResource {
    AlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs: configs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect(),
    }
}

/// Three brokers, the test schema, and a topic "orders".
fn cluster() -> Harness {
    let mut h = three_brokers();
    h.ctl.set_config_validator(Box::new(TestSchema));
    let r = h.create_topics(vec![topic("orders", 1, 1)]);
    assert_eq!(r[0].error_code, 0);
    h
}

/// Runs IncrementalAlterConfigs, applies its records, and returns them with the results.
fn incremental(
    h: &mut Harness,
    resources: Vec<IncrementalAlterConfigsResource>,
) -> (Vec<MetadataRecord>, Vec<AlterConfigsResult>) {
    let (records, results) = h
        .ctl
        .incremental_alter_configs(&h.image, resources, false)
        .unwrap();
    h.apply(&records);
    (records, results)
}

/// One resource's result, with its records.
fn incremental_one(
    h: &mut Harness,
    r: IncrementalAlterConfigsResource,
) -> (Vec<MetadataRecord>, AlterConfigsResult) {
    let (records, mut results) = incremental(h, vec![r]);
    assert_eq!(results.len(), 1);
    (records, results.pop().unwrap())
}

fn alter_legacy(
    h: &mut Harness,
    resources: Vec<AlterConfigsResource>,
) -> (Vec<MetadataRecord>, Vec<AlterConfigsResult>) {
    let (records, results) = h.ctl.alter_configs(&h.image, resources, false).unwrap();
    h.apply(&records);
    (records, results)
}

fn configs_of(h: &Harness, resource_type: i8, name: &str) -> BTreeMap<String, String> {
    h.image
        .configs(resource_type, name)
        .cloned()
        .unwrap_or_default()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn assert_ok(r: &AlterConfigsResult) {
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (0, None),
        "{r:?}"
    );
}

fn assert_refused(r: &AlterConfigsResult, e: ResponseError, message: &str) {
    assert_eq!(r.error_code, e.code(), "{r:?}");
    assert_eq!(r.error_message.as_deref(), Some(message));
}

fn config(resource_type: i8, name: &str, key: &str, value: Option<&str>) -> MetadataRecord {
    ConfigRecord {
        resource_type,
        resource_name: name.into(),
        name: key.into(),
        value: value.map(str::to_string),
        ..Default::default()
    }
    .into()
}

// ----- IncrementalAlterConfigs -----

#[test]
fn set_and_delete_change_the_topics_configs_in_the_image() {
    let mut h = cluster();
    let (records, r) = incremental_one(
        &mut h,
        on_topic(
            "orders",
            vec![set("retention.ms", "1000"), set("segment.bytes", "4096")],
        ),
    );
    assert_ok(&r);
    assert_eq!(
        (r.resource_type, r.resource_name.as_str()),
        (CONFIG_RESOURCE_TOPIC, "orders")
    );
    assert_eq!(
        records,
        vec![
            config(
                CONFIG_RESOURCE_TOPIC,
                "orders",
                "retention.ms",
                Some("1000")
            ),
            config(
                CONFIG_RESOURCE_TOPIC,
                "orders",
                "segment.bytes",
                Some("4096")
            ),
        ]
    );
    let (records, r) = incremental_one(
        &mut h,
        on_topic(
            "orders",
            vec![delete("segment.bytes"), set("retention.ms", "2000")],
        ),
    );
    assert_ok(&r);
    assert_eq!(records.len(), 2);
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders"),
        map(&[("retention.ms", "2000")])
    );
}

#[test]
fn a_topic_change_that_changes_nothing_writes_no_record() {
    let mut h = cluster();
    incremental_one(
        &mut h,
        on_topic("orders", vec![set("retention.ms", "1000")]),
    );
    let (records, r) = incremental_one(
        &mut h,
        on_topic(
            "orders",
            vec![set("retention.ms", "1000"), delete("segment.bytes")],
        ),
    );
    assert_ok(&r);
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn a_broker_resource_gets_a_record_for_every_key_named_even_unchanged() {
    // KAFKA-14136: the record is what makes a broker reload, e.g. a rewritten keystore.
    let mut h = cluster();
    let change = || {
        resource(
            CONFIG_RESOURCE_BROKER,
            "1",
            vec![
                set("ssl.keystore.location", "/k.jks"),
                delete("log.cleaner.threads"),
            ],
        )
    };
    let (first, r) = incremental_one(&mut h, change());
    assert_ok(&r);
    let (again, r) = incremental_one(&mut h, change());
    assert_ok(&r);
    assert_eq!(first, again);
    assert_eq!(
        again,
        vec![
            config(
                CONFIG_RESOURCE_BROKER,
                "1",
                "ssl.keystore.location",
                Some("/k.jks")
            ),
            config(CONFIG_RESOURCE_BROKER, "1", "log.cleaner.threads", None),
        ]
    );
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_BROKER, "1"),
        map(&[("ssl.keystore.location", "/k.jks")])
    );
}

#[test]
fn append_to_an_unset_list_starts_from_its_default() {
    let mut h = cluster();
    let (_, r) = incremental_one(
        &mut h,
        on_topic("orders", vec![append("cleanup.policy", "compact")]),
    );
    assert_ok(&r);
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders")["cleanup.policy"],
        "delete,compact"
    );
    // A list without a default starts empty.
    let (_, r) = incremental_one(
        &mut h,
        on_topic(
            "orders",
            vec![append("leader.replication.throttled.replicas", "0:1,1:2")],
        ),
    );
    assert_ok(&r);
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders")["leader.replication.throttled.replicas"],
        "0:1,1:2"
    );
}

#[test]
fn append_adds_only_values_not_there_and_subtract_removes_the_first_occurrence() {
    let mut h = cluster();
    let key = "leader.replication.throttled.replicas";
    incremental_one(&mut h, on_topic("orders", vec![set(key, "a,,b,a")]));
    let (_, r) = incremental_one(&mut h, on_topic("orders", vec![append(key, "b,c,c")]));
    assert_ok(&r);
    // The stored value's empty parts go; its repeats stay.
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders")[key],
        "a,b,a,c"
    );
    incremental_one(&mut h, on_topic("orders", vec![subtract(key, "a,x")]));
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders")[key],
        "b,a,c"
    );
    // Subtracting everything leaves the key set to the empty list, not deleted.
    incremental_one(&mut h, on_topic("orders", vec![subtract(key, "a,b,c")]));
    assert_eq!(configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders")[key], "");
    // Subtracting from an unset key with a default starts from the default.
    incremental_one(
        &mut h,
        on_topic("orders", vec![subtract("cleanup.policy", "delete")]),
    );
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders")["cleanup.policy"],
        ""
    );
}

#[test]
fn append_or_subtract_on_a_key_that_is_not_a_list_is_invalid_config() {
    let mut h = cluster();
    for (operation, name) in [
        (AlterConfigOp::Append, "APPEND"),
        (AlterConfigOp::Subtract, "SUBTRACT"),
    ] {
        let (records, r) = incremental_one(
            &mut h,
            on_topic(
                "orders",
                vec![
                    set("segment.bytes", "1"),
                    op("retention.ms", operation, Some("5")),
                ],
            ),
        );
        assert_refused(
            &r,
            ResponseError::InvalidConfig,
            &format!("Can't {name} to key retention.ms because its type is not LIST."),
        );
        assert!(records.is_empty(), "the whole resource fails");
    }
}

#[test]
fn java_split_drops_trailing_empty_parts_but_keeps_a_lone_empty_string() {
    assert_eq!(java_split("a,b"), vec!["a", "b"]);
    assert_eq!(java_split("a,,b,,"), vec!["a", "", "b"]);
    assert_eq!(java_split(",a"), vec!["", "a"]);
    assert_eq!(java_split(","), Vec::<&str>::new());
    assert_eq!(java_split(""), vec![""]);
    assert_eq!(java_split("a"), vec!["a"]);
}

#[test]
fn a_missing_topic_is_unknown_topic_or_partition_after_its_configs_are_validated() {
    let mut h = cluster();
    let (_, r) = incremental_one(&mut h, on_topic("nope", vec![set("retention.ms", "1")]));
    assert_refused(
        &r,
        ResponseError::UnknownTopicOrPartition,
        "The topic 'nope' does not exist.",
    );
    // Kafka validates the values first.
    let (_, r) = incremental_one(&mut h, on_topic("nope", vec![set("retention.ms", "x")]));
    assert_refused(
        &r,
        ResponseError::InvalidConfig,
        "Invalid value x for configuration retention.ms",
    );
    assert!(h.image.configs(CONFIG_RESOURCE_TOPIC, "nope").is_none());
}

#[test]
fn bad_topic_names_are_refused_before_anything_else() {
    let mut h = cluster();
    let (_, r) = incremental_one(&mut h, on_topic("", vec![set("retention.ms", "x")]));
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Default topic resources are not allowed.",
    );
    let (_, r) = incremental_one(&mut h, on_topic("no way", vec![set("retention.ms", "x")]));
    assert_eq!(r.error_code, ResponseError::InvalidTopicException.code());
}

#[test]
fn broker_resources_are_the_cluster_default_or_a_registered_node_id() {
    let mut h = cluster();
    let change = |name: &str| resource(CONFIG_RESOURCE_BROKER, name, vec![set("k", "v")]);
    let (_, r) = incremental_one(&mut h, change(""));
    assert_ok(&r);
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_BROKER, ""),
        map(&[("k", "v")])
    );
    let (_, r) = incremental_one(&mut h, change("3"));
    assert_ok(&r);
    let (_, r) = incremental_one(&mut h, change("one"));
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Unable to parse broker name as a base 10 number.",
    );
    let (_, r) = incremental_one(&mut h, change("-1"));
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Invalid negative broker ID.",
    );
    let (_, r) = incremental_one(&mut h, change("4"));
    assert_refused(
        &r,
        ResponseError::BrokerIdNotRegistered,
        "No node with id 4 found.",
    );
    // Zero is a node id like any other.
    let (_, r) = incremental_one(&mut h, change("0"));
    assert_refused(
        &r,
        ResponseError::BrokerIdNotRegistered,
        "No node with id 0 found.",
    );
    // A registered controller's id is a node too.
    h.apply(&[RegisterControllerRecord {
        controller_id: 4,
        ..Default::default()
    }
    .into()]);
    let (_, r) = incremental_one(&mut h, change("4"));
    assert_ok(&r);
}

#[test]
fn groups_and_client_metrics_need_a_name_and_the_validators_consent() {
    let mut h = cluster();
    let (_, r) = incremental_one(
        &mut h,
        resource(
            CONFIG_RESOURCE_GROUP,
            "",
            vec![set("consumer.session.timeout.ms", "45000")],
        ),
    );
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Default group resources are not allowed.",
    );
    // Groups need not exist: their configs may come first.
    let (_, r) = incremental_one(
        &mut h,
        resource(
            CONFIG_RESOURCE_GROUP,
            "g",
            vec![set("consumer.session.timeout.ms", "45000")],
        ),
    );
    assert_ok(&r);
    assert_eq!(configs_of(&h, CONFIG_RESOURCE_GROUP, "g").len(), 1);

    let (_, r) = incremental_one(
        &mut h,
        resource(
            CONFIG_RESOURCE_CLIENT_METRICS,
            "",
            vec![set("metrics", "a")],
        ),
    );
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Subscription name can't be empty",
    );
    let (_, r) = incremental_one(
        &mut h,
        resource(
            CONFIG_RESOURCE_CLIENT_METRICS,
            "sub",
            vec![set("colour", "red")],
        ),
    );
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Unknown client metrics configuration: colour",
    );
    let (_, r) = incremental_one(
        &mut h,
        resource(
            CONFIG_RESOURCE_CLIENT_METRICS,
            "sub",
            vec![set("metrics", "a"), append("metrics", "b")],
        ),
    );
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "Error due to duplicate config keys",
    );
    let (_, r) = incremental_one(
        &mut h,
        resource(
            CONFIG_RESOURCE_CLIENT_METRICS,
            "sub",
            vec![append("metrics", "a,b")],
        ),
    );
    assert_ok(&r);
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_CLIENT_METRICS, "sub"),
        map(&[("metrics", "a,b")])
    );
}

#[test]
fn the_validator_sees_the_configs_before_and_after() {
    let mut h = cluster();
    incremental_one(
        &mut h,
        on_topic("orders", vec![set("remote.storage.enable", "true")]),
    );
    let (records, r) = incremental_one(
        &mut h,
        on_topic("orders", vec![delete("remote.storage.enable")]),
    );
    assert_refused(
        &r,
        ResponseError::InvalidConfig,
        "It is invalid to disable remote storage without deleting remote data.",
    );
    assert!(records.is_empty());
}

#[test]
fn malformed_resources_are_invalid_request_and_the_others_go_ahead() {
    let mut h = cluster();
    let (records, results) = incremental(
        &mut h,
        vec![
            resource(CONFIG_RESOURCE_BROKER, "", vec![set("a", "1")]),
            on_topic(
                "orders",
                vec![set("retention.ms", "1"), delete("retention.ms")],
            ),
            on_topic("orders", vec![set("retention.ms", "1")]),
            resource(CONFIG_RESOURCE_BROKER, "", vec![set("b", "1")]),
            resource(
                CONFIG_RESOURCE_BROKER,
                "1",
                vec![
                    op("a", AlterConfigOp::Set, None),
                    op("b", AlterConfigOp::Append, None),
                    delete("c"),
                ],
            ),
            resource(
                CONFIG_RESOURCE_BROKER,
                "2",
                vec![
                    set("a", "1"),
                    AlterableConfig {
                        name: "b".into(),
                        operation: 7,
                        value: Some("x".into()),
                    },
                ],
            ),
            resource(
                CONFIG_RESOURCE_BROKER_LOGGER,
                "1",
                vec![set("kafka", "DEBUG")],
            ),
            resource(99, "x", vec![set("a", "1")]),
            resource(
                CONFIG_RESOURCE_GROUP,
                "g",
                vec![set("consumer.heartbeat.interval.ms", "5000")],
            ),
        ],
    );
    let duplicate = "Each resource must appear at most once.";
    assert_refused(&results[0], ResponseError::InvalidRequest, duplicate);
    assert_refused(&results[1], ResponseError::InvalidRequest, duplicate);
    assert_refused(&results[2], ResponseError::InvalidRequest, duplicate);
    assert_refused(&results[3], ResponseError::InvalidRequest, duplicate);
    assert_refused(
        &results[4],
        ResponseError::InvalidRequest,
        "Null value not supported for : a, b",
    );
    assert_refused(
        &results[5],
        ResponseError::InvalidRequest,
        "Unknown operations type 7",
    );
    assert_refused(
        &results[6],
        ResponseError::InvalidRequest,
        "Unknown resource type 8",
    );
    assert_refused(
        &results[7],
        ResponseError::InvalidRequest,
        "Unknown resource type 99",
    );
    assert_ok(&results[8]);
    assert_eq!(results.len(), 9, "one result per resource named");
    assert_eq!(
        records,
        vec![config(
            CONFIG_RESOURCE_GROUP,
            "g",
            "consumer.heartbeat.interval.ms",
            Some("5000")
        )]
    );
}

#[test]
fn validate_only_answers_the_same_and_writes_nothing() {
    let h = cluster();
    let resources = vec![
        on_topic("orders", vec![set("retention.ms", "1")]),
        on_topic("nope", vec![set("retention.ms", "1")]),
    ];
    let (records, results) = h
        .ctl
        .incremental_alter_configs(&h.image, resources.clone(), true)
        .unwrap();
    assert!(records.is_empty());
    let (records2, results2) = h
        .ctl
        .incremental_alter_configs(&h.image, resources, false)
        .unwrap();
    assert_eq!(records2.len(), 1);
    assert_eq!(results, results2);
    assert_eq!(
        results[1].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );

    let resources = vec![legacy(
        CONFIG_RESOURCE_TOPIC,
        "orders",
        &[("retention.ms", "1")],
    )];
    let (records, results) = h
        .ctl
        .alter_configs(&h.image, resources.clone(), true)
        .unwrap();
    assert!(records.is_empty());
    let (records2, results2) = h.ctl.alter_configs(&h.image, resources, false).unwrap();
    assert_eq!(records2.len(), 1);
    assert_eq!(results, results2);
}

#[test]
fn more_than_max_records_per_user_op_refuses_the_whole_request() {
    let h = cluster();
    let keys = |n: usize| {
        (0..n)
            .map(|i| set(&format!("k{i}"), "v"))
            .collect::<Vec<_>>()
    };
    let (records, _) = h
        .ctl
        .incremental_alter_configs(
            &h.image,
            vec![resource(
                CONFIG_RESOURCE_BROKER,
                "",
                keys(MAX_RECORDS_PER_USER_OP),
            )],
            false,
        )
        .unwrap();
    assert_eq!(records.len(), MAX_RECORDS_PER_USER_OP);
    for validate_only in [false, true] {
        let e = h
            .ctl
            .incremental_alter_configs(
                &h.image,
                vec![
                    resource(CONFIG_RESOURCE_BROKER, "", keys(MAX_RECORDS_PER_USER_OP)),
                    resource(CONFIG_RESOURCE_BROKER, "1", keys(1)),
                ],
                validate_only,
            )
            .unwrap_err();
        assert_eq!(
            e,
            ControllerError::BatchTooLarge {
                records: MAX_RECORDS_PER_USER_OP + 1
            }
        );
        assert_eq!(e.error_code(), ResponseError::PolicyViolation.code());
    }
    let big: Vec<(String, Option<String>)> = (0..=MAX_RECORDS_PER_USER_OP)
        .map(|i| (format!("k{i}"), Some("v".into())))
        .collect();
    let e = h
        .ctl
        .alter_configs(
            &h.image,
            vec![AlterConfigsResource {
                resource_type: CONFIG_RESOURCE_BROKER,
                resource_name: String::new(),
                configs: big,
            }],
            false,
        )
        .unwrap_err();
    assert!(matches!(e, ControllerError::BatchTooLarge { .. }));
}

#[test]
fn an_inactive_controller_refuses_config_changes() {
    let mut h = Harness::new(cfg());
    h.ctl.deactivate();
    assert_eq!(
        h.ctl.incremental_alter_configs(&h.image, vec![], false),
        Err(ControllerError::NotController)
    );
    assert_eq!(
        h.ctl.alter_configs(&h.image, vec![], false),
        Err(ControllerError::NotController)
    );
}

// ----- AlterConfigs (legacy) -----

#[test]
fn alter_configs_replaces_the_whole_set_of_a_resources_configs() {
    let mut h = cluster();
    incremental_one(
        &mut h,
        on_topic(
            "orders",
            vec![
                set("retention.ms", "1"),
                set("segment.bytes", "2"),
                set("flush.ms", "3"),
            ],
        ),
    );
    let (records, results) = alter_legacy(
        &mut h,
        vec![legacy(
            CONFIG_RESOURCE_TOPIC,
            "orders",
            &[
                ("segment.bytes", "2"),
                ("retention.ms", "10"),
                ("max.message.bytes", "9"),
            ],
        )],
    );
    assert_ok(&results[0]);
    // The changed and new keys, in request order, then the deletions.
    assert_eq!(
        records,
        vec![
            config(CONFIG_RESOURCE_TOPIC, "orders", "retention.ms", Some("10")),
            config(
                CONFIG_RESOURCE_TOPIC,
                "orders",
                "max.message.bytes",
                Some("9")
            ),
            config(CONFIG_RESOURCE_TOPIC, "orders", "flush.ms", None),
        ]
    );
    assert_eq!(
        configs_of(&h, CONFIG_RESOURCE_TOPIC, "orders"),
        map(&[
            ("max.message.bytes", "9"),
            ("retention.ms", "10"),
            ("segment.bytes", "2")
        ])
    );
    let (records, results) =
        alter_legacy(&mut h, vec![legacy(CONFIG_RESOURCE_TOPIC, "orders", &[])]);
    assert_ok(&results[0]);
    assert_eq!(records.len(), 3);
    assert!(h.image.configs(CONFIG_RESOURCE_TOPIC, "orders").is_none());
}

#[test]
fn alter_configs_rewrites_every_key_of_a_broker_resource() {
    let mut h = cluster();
    alter_legacy(
        &mut h,
        vec![legacy(CONFIG_RESOURCE_BROKER, "", &[("a", "1")])],
    );
    let (records, results) = alter_legacy(
        &mut h,
        vec![legacy(CONFIG_RESOURCE_BROKER, "", &[("a", "1")])],
    );
    assert_ok(&results[0]);
    assert_eq!(
        records,
        vec![config(CONFIG_RESOURCE_BROKER, "", "a", Some("1"))]
    );
    // For a topic the same call writes nothing.
    alter_legacy(
        &mut h,
        vec![legacy(
            CONFIG_RESOURCE_TOPIC,
            "orders",
            &[("retention.ms", "1")],
        )],
    );
    let (records, _) = alter_legacy(
        &mut h,
        vec![legacy(
            CONFIG_RESOURCE_TOPIC,
            "orders",
            &[("retention.ms", "1")],
        )],
    );
    assert!(records.is_empty());
}

#[test]
fn alter_configs_refuses_what_incremental_alter_configs_refuses() {
    let mut h = cluster();
    let mut with_null = legacy(CONFIG_RESOURCE_TOPIC, "orders", &[("retention.ms", "1")]);
    with_null.configs.push(("flush.ms".into(), None));
    let (records, results) = alter_legacy(
        &mut h,
        vec![
            with_null,
            legacy(CONFIG_RESOURCE_TOPIC, "gone", &[("retention.ms", "1")]),
            legacy(CONFIG_RESOURCE_TOPIC, "orders2", &[("retention.ms", "x")]),
            legacy(CONFIG_RESOURCE_BROKER, "7", &[("a", "1")]),
            legacy(CONFIG_RESOURCE_BROKER_LOGGER, "1", &[("kafka", "INFO")]),
            legacy(CONFIG_RESOURCE_GROUP, "g", &[("a", "1"), ("a", "2")]),
            legacy(CONFIG_RESOURCE_GROUP, "h", &[("a", "1")]),
            legacy(CONFIG_RESOURCE_GROUP, "h", &[("a", "1")]),
        ],
    );
    assert_refused(
        &results[0],
        ResponseError::InvalidRequest,
        "Null value not supported for : flush.ms",
    );
    assert_refused(
        &results[1],
        ResponseError::UnknownTopicOrPartition,
        "The topic 'gone' does not exist.",
    );
    assert_refused(
        &results[2],
        ResponseError::InvalidConfig,
        "Invalid value x for configuration retention.ms",
    );
    assert_refused(
        &results[3],
        ResponseError::BrokerIdNotRegistered,
        "No node with id 7 found.",
    );
    assert_refused(
        &results[4],
        ResponseError::InvalidRequest,
        "Unknown resource type 8",
    );
    assert_refused(
        &results[5],
        ResponseError::InvalidRequest,
        "Error due to duplicate config keys",
    );
    for r in &results[6..] {
        assert_refused(
            r,
            ResponseError::InvalidRequest,
            "Each resource must appear at most once.",
        );
    }
    assert!(records.is_empty());
}

#[test]
fn a_new_topics_configs_are_validated_as_one_set() {
    let mut h = three_brokers();
    h.ctl.set_config_validator(Box::new(TestSchema));
    let mut t = topic("t", 1, 1);
    t.configs = vec![
        ("cleanup.policy".into(), Some("compact".into())),
        ("flush.ms".into(), Some("often".into())),
    ];
    let r = h.create_topics(vec![t]);
    assert_eq!(r[0].error_code, ResponseError::InvalidConfig.code());
    assert_eq!(
        r[0].error_message.as_deref(),
        Some("Invalid value often for configuration flush.ms")
    );
    let mut t = topic("t", 1, 1);
    t.configs = vec![("interval.ms".into(), Some("5".into()))];
    assert_eq!(h.create_topics(vec![t])[0].error_code, 0);
}
