//! CreateTopics, DeleteTopics, CreatePartitions and AlterPartition rules.

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::tests::{alter_request, three_brokers, topic, Harness, TestSchema};
use super::*;
use crate::metadata::image::CONFIG_RESOURCE_TOPIC;
use crate::metadata::records::*;

fn create_one(h: &mut Harness, t: CreatableTopic) -> CreateTopicResult {
    let mut r = h.create_topics(vec![t]);
    assert_eq!(r.len(), 1);
    r.pop().unwrap()
}

fn assert_refused(r: &CreateTopicResult, e: ResponseError, message: &str) {
    assert_eq!(r.error_code, e.code(), "{r:?}");
    assert_eq!(r.error_message.as_deref(), Some(message));
    assert_eq!((r.topic_id, r.num_partitions), (Uuid::nil(), -1));
}

#[test]
fn a_new_topic_is_a_topic_record_its_configs_and_its_partitions() {
    let mut h = three_brokers();
    let before = h.log.len();
    let mut t = topic("orders", 3, 3);
    t.configs = vec![
        ("retention.ms".into(), Some("1000".into())),
        ("cleanup.policy".into(), Some("compact".into())),
    ];
    let r = create_one(&mut h, t);
    assert_eq!(
        (r.error_code, r.num_partitions, r.replication_factor),
        (0, 3, 3)
    );
    let records = &h.log[before..];
    assert!(
        matches!(&records[0], MetadataRecord::Topic(t) if t.name == "orders" && t.topic_id == r.topic_id)
    );
    assert!(
        matches!(&records[1], MetadataRecord::Config(c) if c.name == "cleanup.policy" && c.resource_type == CONFIG_RESOURCE_TOPIC)
    );
    assert!(matches!(&records[2], MetadataRecord::Config(c) if c.name == "retention.ms"));
    let mut leaders = Vec::new();
    for (i, rec) in records[3..].iter().enumerate() {
        let MetadataRecord::Partition(p) = rec else {
            panic!("{rec:?}")
        };
        assert_eq!(p.partition_id, i as i32);
        assert_eq!(p.isr, p.replicas, "every replica is live");
        assert_eq!(p.leader, p.replicas[0]);
        assert_eq!((p.leader_epoch, p.partition_epoch), (0, 0));
        assert_eq!(p.directories.len(), 3, "each broker's only log directory");
        leaders.push(p.leader);
    }
    leaders.sort();
    assert_eq!(leaders, vec![1, 2, 3], "leaders are spread");
    assert_eq!(
        h.image
            .configs(CONFIG_RESOURCE_TOPIC, "orders")
            .unwrap()
            .get("retention.ms")
            .map(String::as_str),
        Some("1000")
    );
}

#[test]
fn new_partitions_lead_on_the_first_live_replica_and_leave_fenced_ones_out_of_the_isr() {
    let mut h = three_brokers();
    let epoch = h.image.broker(1).unwrap().epoch;
    h.heartbeat_with(BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: epoch,
        current_metadata_offset: h.offset - 1,
        want_fence: true,
        want_shut_down: false,
    })
    .unwrap();
    let mut t = topic("m", -1, -1);
    t.assignments = vec![(0, vec![1, 2, 3]), (1, vec![3, 1, 2])];
    assert_eq!(create_one(&mut h, t).error_code, 0);
    let p0 = h.partition("m", 0);
    assert_eq!((p0.leader, &p0.isr[..]), (2, &[2, 3][..]));
    let p1 = h.partition("m", 1);
    assert_eq!((p1.leader, &p1.isr[..]), (3, &[3, 2][..]));
    // Fenced brokers still count towards the replication factor, as in Kafka.
    assert_eq!(create_one(&mut h, topic("f", 1, 3)).error_code, 0);
}

#[test]
fn topic_ids_come_from_the_seed_and_are_never_reserved_or_reused() {
    let h = three_brokers();
    let ids = |seed| {
        let topics = (0..50).map(|i| topic(&format!("t{i}"), 1, 1)).collect();
        let (_, r) = h.ctl.create_topics(&h.image, topics, true, seed).unwrap();
        r.into_iter().map(|r| r.topic_id).collect::<Vec<_>>()
    };
    let a = ids(7);
    assert_eq!(a, ids(7));
    assert_ne!(a, ids(8));
    let mut unique = a.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), a.len());
    for id in a {
        assert!(id.as_u64_pair() > (0, 1));
        assert_eq!(id.get_version_num(), 4);
    }
}

#[test]
fn topic_names_are_checked_as_kafka_checks_them() {
    let mut h = three_brokers();
    create_one(&mut h, topic("a.b", 1, 1));
    let long = "x".repeat(250);
    let cases = [
        ("", "Topic name is illegal, it can't be empty"),
        (".", "Topic name cannot be \".\" or \"..\""),
        ("..", "Topic name cannot be \".\" or \"..\""),
        (
            "a b",
            "Topic name \"a b\" is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'",
        ),
        ("a_b", "Topic 'a_b' collides with existing topic: a.b"),
    ];
    for (name, message) in cases {
        let r = create_one(&mut h, topic(name, 1, 1));
        assert_refused(&r, ResponseError::InvalidTopicException, message);
    }
    let r = create_one(&mut h, topic(&long, 1, 1));
    assert_eq!(r.error_code, ResponseError::InvalidTopicException.code());
    assert_eq!(
        create_one(&mut h, topic(&"x".repeat(249), 1, 1)).error_code,
        0
    );
    let r = create_one(&mut h, topic("a.b", 1, 1));
    assert_refused(
        &r,
        ResponseError::TopicAlreadyExists,
        "Topic 'a.b' already exists.",
    );
    let r = create_one(&mut h, topic("__cluster_metadata", 1, 1));
    assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
}

#[test]
fn a_name_given_twice_is_refused_once_and_the_rest_go_ahead() {
    let mut h = three_brokers();
    let r = h.create_topics(vec![topic("d", 1, 1), topic("ok", 1, 1), topic("d", 2, 1)]);
    assert_eq!(r.len(), 2);
    assert_refused(
        &r[0],
        ResponseError::InvalidRequest,
        "Duplicate topic name.",
    );
    assert_eq!((r[1].name.as_str(), r[1].error_code), ("ok", 0));
    assert!(h.image.topic_by_name("d").is_none());
    assert!(h.image.topic_by_name("ok").is_some());
}

#[test]
fn counts_and_replication_factors_are_checked() {
    let mut h = three_brokers();
    let r = create_one(&mut h, topic("t", 1, 4));
    assert_refused(
        &r,
        ResponseError::InvalidReplicationFactor,
        "Unable to replicate the partition 4 time(s): replication factor 4 is larger than the \
         3 available brokers",
    );
    for rf in [0, -2] {
        let r = create_one(&mut h, topic("t", 1, rf));
        assert_refused(
            &r,
            ResponseError::InvalidReplicationFactor,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        );
    }
    for n in [0, -2] {
        let r = create_one(&mut h, topic("t", n, 1));
        assert_refused(
            &r,
            ResponseError::InvalidPartitions,
            "Number of partitions was set to an invalid non-positive value.",
        );
    }
    // Defaults: num.partitions 1, default.replication.factor 1.
    let r = create_one(&mut h, topic("t", -1, -1));
    assert_eq!((r.num_partitions, r.replication_factor), (1, 1));
}

#[test]
fn no_topic_is_created_when_every_broker_is_fenced() {
    let mut h = Harness::new(super::tests::cfg());
    h.register(super::tests::registration(1, 1)).unwrap();
    let r = create_one(&mut h, topic("t", 1, 1));
    assert_eq!(r.error_code, ResponseError::InvalidReplicationFactor.code());
    let r = create_one(&mut h, topic("t", 1, 1));
    assert!(r.error_message.unwrap().contains("fenced"));
}

#[test]
fn manual_assignments_need_counts_of_minus_one_and_valid_replicas() {
    let mut h = three_brokers();
    let mut t = topic("m", 1, -1);
    t.assignments = vec![(0, vec![1, 2])];
    let r = create_one(&mut h, t.clone());
    assert_refused(
        &r,
        ResponseError::InvalidRequest,
        "A manual partition assignment was specified, but numPartitions was not set to -1.",
    );
    t.num_partitions = -1;
    t.replication_factor = 2;
    assert_eq!(
        create_one(&mut h, t.clone()).error_code,
        ResponseError::InvalidRequest.code()
    );
    t.replication_factor = -1;
    for bad in [
        vec![(0, vec![1, 1])],
        vec![(0, vec![1, 9])],
        vec![(1, vec![1])],
        vec![(0, vec![1]), (1, vec![1, 2])],
    ] {
        t.assignments = bad;
        let r = create_one(&mut h, t.clone());
        assert_eq!(
            r.error_code,
            ResponseError::InvalidReplicaAssignment.code(),
            "{r:?}"
        );
    }
    t.assignments = vec![(1, vec![3, 1]), (0, vec![1, 2])];
    let r = create_one(&mut h, t);
    assert_eq!(
        (r.error_code, r.num_partitions, r.replication_factor),
        (0, 2, 2)
    );
    assert_eq!(&h.partition("m", 1).replicas[..], &[3, 1]);
}

#[test]
fn configs_with_null_values_or_refused_by_the_validator_are_invalid_config() {
    let mut h = three_brokers();
    let mut t = topic("c", 1, 1);
    t.configs = vec![
        ("a".into(), None),
        ("b".into(), None),
        ("ok".into(), Some("1".into())),
    ];
    let r = create_one(&mut h, t);
    assert_refused(
        &r,
        ResponseError::InvalidConfig,
        "Null value not supported for topic configs: a,b",
    );
    h.ctl.set_config_validator(Box::new(TestSchema));
    let mut t = topic("c", 1, 1);
    t.configs = vec![("retention.ms".into(), Some("soon".into()))];
    let r = create_one(&mut h, t);
    assert_refused(
        &r,
        ResponseError::InvalidConfig,
        "Invalid value soon for configuration retention.ms",
    );
}

#[test]
fn validate_only_answers_the_same_and_writes_nothing() {
    let h = three_brokers();
    let topics = vec![topic("v", 2, 2), topic("v2", 1, 9)];
    let (records, results) = h
        .ctl
        .create_topics(&h.image, topics.clone(), true, 3)
        .unwrap();
    assert!(records.is_empty());
    let (records2, results2) = h.ctl.create_topics(&h.image, topics, false, 3).unwrap();
    assert!(!records2.is_empty());
    assert_eq!(results, results2);
}

#[test]
fn more_than_10_000_partitions_in_one_request_is_a_policy_violation() {
    let mut h = three_brokers();
    let r = h.create_topics(vec![topic("a", 5_000, 1), topic("b", 5_001, 1)]);
    for r in &r {
        assert_refused(
            r,
            ResponseError::PolicyViolation,
            "Excessively large number of partitions per request.",
        );
    }
    assert_eq!(h.image.topic_count(), 0);
    // 10,000 partitions pass that check, but with their topics' records they are more than the
    // 10,000 records Kafka's controller takes in one operation, validate-only too.
    for validate_only in [true, false] {
        let (records, r) = h
            .ctl
            .create_topics(
                &h.image,
                vec![topic("a", 5_000, 1), topic("b", 5_000, 1)],
                validate_only,
                1,
            )
            .unwrap();
        assert!(records.is_empty());
        for r in &r {
            assert_refused(
                r,
                ResponseError::PolicyViolation,
                "Unable to perform excessively large batch operation.",
            );
        }
    }
    let r = h.create_topics(vec![topic("a", 10_000, 1)]);
    assert_eq!(r[0].error_code, ResponseError::PolicyViolation.code());
    let r = h.create_topics(vec![topic("a", 4_999, 1), topic("b", 4_999, 1)]);
    assert!(r.iter().all(|r| r.error_code == 0));
    // A count of -1 counts as num.partitions.
    h.ctl.cfg.default_num_partitions = 4_000;
    let r = h.create_topics(vec![
        topic("c", -1, 1),
        topic("d", -1, 1),
        topic("e", -1, 1),
    ]);
    assert!(
        r.iter()
            .all(|r| r.error_code == ResponseError::PolicyViolation.code()),
        "{r:?}"
    );
}

#[test]
fn delete_topics_by_name_or_id_with_kafkas_errors() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("a", 2, 1), topic("b", 1, 1), topic("c", 1, 1)]);
    let a = h.image.topic_by_name("a").unwrap().id;
    let b = h.image.topic_by_name("b").unwrap().id;
    let refs = vec![
        TopicRef::Name("a".into()),
        TopicRef::Id(a),
        TopicRef::Id(b),
        TopicRef::Name("c".into()),
        TopicRef::Name("c".into()),
        TopicRef::Name("nope".into()),
        TopicRef::Id(Uuid::from_u128(42)),
        TopicRef::Id(Uuid::nil()),
    ];
    let (records, results) = h.ctl.delete_topics(&h.image, refs).unwrap();
    assert_eq!(records.len(), 2, "one RemoveTopicRecord for a, one for b");
    let codes: Vec<i16> = results.iter().map(|r| r.error_code).collect();
    assert_eq!(
        codes,
        vec![
            0,
            0,
            0,
            ResponseError::InvalidRequest.code(),
            ResponseError::UnknownTopicOrPartition.code(),
            ResponseError::UnknownTopicId.code(),
            ResponseError::InvalidRequest.code(),
        ]
    );
    assert_eq!(results[1].name.as_deref(), Some("a"));
    h.apply(&records);
    assert_eq!(h.image.topic_count(), 1);

    let mut c = super::tests::cfg();
    c.delete_topic_enable = false;
    let mut h2 = Harness::new(c);
    h2.start_broker(1, 1);
    h2.create_topics(vec![topic("a", 1, 1)]);
    let (records, results) = h2
        .ctl
        .delete_topics(&h2.image, vec![TopicRef::Name("a".into())])
        .unwrap();
    assert!(records.is_empty());
    assert_eq!(
        results[0].error_code,
        ResponseError::TopicDeletionDisabled.code()
    );
}

#[test]
fn create_partitions_adds_partitions_continuing_the_spread() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("p", 1, 2)]);
    let grow = |count, assignments| CreatePartitionsTopic {
        name: "p".into(),
        count,
        assignments,
    };
    let (records, results) = h
        .ctl
        .create_partitions(&h.image, vec![grow(4, None)], false, 1)
        .unwrap();
    assert_eq!(results[0].error_code, 0);
    assert_eq!(records.len(), 3);
    h.apply(&records);
    let t = h.image.topic_by_name("p").unwrap().clone();
    assert_eq!(t.partitions().len(), 4);
    let mut leaders: Vec<NodeId> = t.partitions().iter().map(|p| p.leader).collect();
    leaders.sort();
    assert!(leaders.windows(3).all(|w| w[0] != w[2]), "{leaders:?}");
    for p in t.partitions() {
        assert_eq!(
            (p.replicas.len(), p.leader_epoch, p.partition_epoch),
            (2, 0, 0)
        );
    }

    let cases = [
        (
            grow(4, None),
            ResponseError::InvalidPartitions,
            "Topic already has 4 partition(s).",
        ),
        (
            grow(2, None),
            ResponseError::InvalidPartitions,
            "The topic p currently has 4 partition(s); 2 would not be an increase.",
        ),
        (
            grow(6, Some(vec![vec![1, 2]])),
            ResponseError::InvalidReplicaAssignment,
            "2 partition(s) are being added, but 1 assignment(s) were given",
        ),
        (
            grow(5, Some(vec![vec![1, 2, 3]])),
            ResponseError::InvalidReplicaAssignment,
            "the manual assignment of partition 4 has 3 replica(s), but the topic's other \
             partitions have 2",
        ),
        (
            CreatePartitionsTopic {
                name: "q".into(),
                count: 2,
                assignments: None,
            },
            // Kafka's answer to an unknown topic has no message.
            ResponseError::UnknownTopicOrPartition,
            "",
        ),
    ];
    for (t, e, message) in cases {
        let (records, results) = h
            .ctl
            .create_partitions(&h.image, vec![t], false, 1)
            .unwrap();
        assert!(records.is_empty());
        assert_eq!(results[0].error_code, e.code());
        assert_eq!(
            results[0].error_message.as_deref(),
            (!message.is_empty()).then_some(message)
        );
    }
    let (records, results) = h
        .ctl
        .create_partitions(&h.image, vec![grow(5, Some(vec![vec![3, 1]]))], true, 1)
        .unwrap();
    assert!(
        records.is_empty() && results[0].error_code == 0,
        "validate only"
    );
    let (records, _) = h
        .ctl
        .create_partitions(&h.image, vec![grow(5, Some(vec![vec![3, 1]]))], false, 1)
        .unwrap();
    h.apply(&records);
    assert_eq!(&h.partition("p", 4).replicas[..], &[3, 1]);
}

#[test]
fn alter_partition_shrinks_and_expands_the_isr_and_answers_the_new_state() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 1, 3)]);
    let p = h.partition("t", 0);
    let followers: Vec<NodeId> = p
        .replicas
        .iter()
        .copied()
        .filter(|&r| r != p.leader)
        .collect();
    let req = alter_request(&h, "t", 0, &[p.leader, followers[0]]);
    let (records, results) = h.ctl.alter_partition(&h.image, &req).unwrap();
    h.apply(&records);
    let now = h.partition("t", 0);
    assert_eq!(now.isr.len(), 2);
    assert_eq!((now.leader_epoch, now.partition_epoch), (0, 1));
    let r = &results[0].partitions[0];
    assert_eq!(
        (r.error_code, r.leader_id, r.leader_epoch, r.partition_epoch),
        (0, p.leader, 0, 1)
    );
    assert_eq!(r.isr, now.isr.to_vec());

    // The same request again is stale; a request naming the partition twice sees its own
    // first change.
    let (records, results) = h.ctl.alter_partition(&h.image, &req).unwrap();
    assert!(records.is_empty());
    assert_eq!(
        results[0].partitions[0].error_code,
        ResponseError::InvalidUpdateVersion.code()
    );
    let mut twice = alter_request(&h, "t", 0, &p.replicas);
    let again = twice.topics[0].partitions[0].clone();
    twice.topics[0].partitions.push(again);
    let (records, results) = h.ctl.alter_partition(&h.image, &twice).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        results[0].partitions[1].error_code,
        ResponseError::InvalidUpdateVersion.code()
    );
    h.apply(&records);
    assert_eq!(h.partition("t", 0).isr.len(), 3);
}

#[test]
fn alter_partition_checks_the_leaders_epoch_and_the_topic() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 1, 3)]);
    let mut req = alter_request(&h, "t", 0, &[1, 2, 3]);
    req.broker_epoch -= 1;
    assert_eq!(
        h.ctl
            .alter_partition(&h.image, &req)
            .unwrap_err()
            .error_code(),
        77
    );
    let mut req = alter_request(&h, "t", 0, &[1, 2, 3]);
    req.topics[0].topic_id = Uuid::from_u128(5);
    let (_, results) = h.ctl.alter_partition(&h.image, &req).unwrap();
    assert_eq!(
        results[0].partitions[0].error_code,
        ResponseError::UnknownTopicId.code()
    );
    req.version = 1;
    req.topics[0].topic_name = "nope".into();
    let (_, results) = h.ctl.alter_partition(&h.image, &req).unwrap();
    assert_eq!(
        results[0].partitions[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let mut req = alter_request(&h, "t", 0, &[1, 2, 3]);
    req.topics[0].partitions[0].partition_index = 7;
    let (_, results) = h.ctl.alter_partition(&h.image, &req).unwrap();
    assert_eq!(
        results[0].partitions[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

#[test]
fn create_partitions_refuses_duplicates_and_more_than_10_000_new_partitions_per_request() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("a", 1, 1), topic("b", 1, 1), topic("c", 1, 1)]);
    let grow = |name: &str, count: i32| CreatePartitionsTopic {
        name: name.into(),
        count,
        assignments: None,
    };
    let (records, results) = h
        .ctl
        .create_partitions(
            &h.image,
            vec![grow("a", 2), grow("a", 3), grow("b", 2)],
            false,
            1,
        )
        .unwrap();
    let code = |n: &str| results.iter().find(|r| r.name == n).unwrap().error_code;
    assert_eq!(
        code("a"),
        ResponseError::InvalidRequest.code(),
        "{results:?}"
    );
    assert_eq!(code("b"), 0);
    assert_eq!(results.len(), 2, "one result per distinct name");
    h.apply(&records);
    // 5,000 + 5,000 new partitions fit; one more on a third topic does not.
    let (_, results) = h
        .ctl
        .create_partitions(
            &h.image,
            vec![grow("a", 5_001), grow("b", 5_002), grow("c", 2)],
            true,
            1,
        )
        .unwrap();
    let code = |n: &str| results.iter().find(|r| r.name == n).unwrap().error_code;
    assert_eq!((code("a"), code("b")), (0, 0), "{results:?}");
    assert_eq!(
        code("c"),
        ResponseError::PolicyViolation.code(),
        "{results:?}"
    );
}

#[test]
fn a_refused_topic_reports_minus_one_partitions_and_replication_factor() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("a", 1, 1)]);
    let r = h.create_topics(vec![topic("a", 3, 1)]);
    assert_eq!(r[0].error_code, ResponseError::TopicAlreadyExists.code());
    assert_eq!((r[0].num_partitions, r[0].replication_factor), (-1, -1));
    assert!(r[0].topic_id.is_nil());
}

#[test]
fn an_imported_topic_keeps_its_id_unless_the_id_is_taken_or_reserved() {
    let mut h = three_brokers();
    let id = Uuid::from_u64_pair(0x1234, 0x5678);
    let mut t = topic("legacy", -1, -1);
    t.assignments = vec![(0, vec![2]), (1, vec![2])];
    t.topic_id = Some(id);
    let r = create_one(&mut h, t);
    assert_eq!((r.error_code, r.topic_id), (0, id));
    assert_eq!(h.partition("legacy", 1).replicas.as_ref(), [2]);

    let mut again = topic("other", 1, 1);
    again.topic_id = Some(id);
    assert_refused(
        &create_one(&mut h, again),
        ResponseError::TopicAlreadyExists,
        &format!("Topic id {id} is reserved or already in use."),
    );
    let mut reserved = topic("other", 1, 1);
    reserved.topic_id = Some(Uuid::from_u64_pair(0, 1));
    assert_eq!(
        create_one(&mut h, reserved).error_code,
        ResponseError::TopicAlreadyExists.code()
    );
}
