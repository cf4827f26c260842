//! Topic administration through librdkafka's admin client against the real binary.

mod common;

use common::*;
use rdkafka::admin::{
    AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::types::RDKafkaErrorCode;

#[test]
fn create_describe_alter_and_delete_topics() {
    let broker = Broker::start();
    let admin = admin(&broker);
    let rt = runtime();
    let opts = AdminOptions::new();

    let t = NewTopic::new("admin-a", 3, TopicReplication::Fixed(1))
        .set("retention.ms", "3600000")
        .set("cleanup.policy", "compact");
    let r = rt.block_on(admin.create_topics(&[t], &opts)).unwrap();
    assert_eq!(r, vec![Ok("admin-a".to_string())]);

    // Creating it again is TOPIC_ALREADY_EXISTS; an illegal name and a replication factor the
    // single node cannot give are refused with their own codes.
    let again = NewTopic::new("admin-a", 3, TopicReplication::Fixed(1));
    let bad_name = NewTopic::new("bad/name", 1, TopicReplication::Fixed(1));
    let bad_rf = NewTopic::new("admin-rf", 1, TopicReplication::Fixed(3));
    let bad_cfg =
        NewTopic::new("admin-cfg", 1, TopicReplication::Fixed(1)).set("cleanup.policy", "shred");
    let r = rt
        .block_on(admin.create_topics(&[again, bad_name, bad_rf, bad_cfg], &opts))
        .unwrap();
    assert_eq!(
        r[0],
        Err(("admin-a".into(), RDKafkaErrorCode::TopicAlreadyExists))
    );
    assert_eq!(
        r[1],
        Err(("bad/name".into(), RDKafkaErrorCode::InvalidTopic))
    );
    assert_eq!(
        r[2],
        Err((
            "admin-rf".into(),
            RDKafkaErrorCode::InvalidReplicationFactor
        ))
    );
    assert_eq!(
        r[3],
        Err(("admin-cfg".into(), RDKafkaErrorCode::InvalidConfig))
    );

    let configs = rt
        .block_on(admin.describe_configs(&[ResourceSpecifier::Topic("admin-a")], &opts))
        .unwrap();
    let cfg = configs[0].as_ref().unwrap();
    let get = |name: &str| cfg.get(name).unwrap_or_else(|| panic!("{name} missing"));
    assert_eq!(get("retention.ms").value.as_deref(), Some("3600000"));
    assert!(!get("retention.ms").is_default);
    assert_eq!(get("cleanup.policy").value.as_deref(), Some("compact"));
    assert_eq!(get("segment.bytes").value.as_deref(), Some("1073741824"));
    assert!(get("segment.bytes").is_default);

    let alter = AlterConfig::new(ResourceSpecifier::Topic("admin-a")).set("retention.ms", "1000");
    let r = rt.block_on(admin.alter_configs(&[alter], &opts)).unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    let configs = rt
        .block_on(admin.describe_configs(&[ResourceSpecifier::Topic("admin-a")], &opts))
        .unwrap();
    let cfg = configs[0].as_ref().unwrap();
    assert_eq!(
        cfg.get("retention.ms").unwrap().value.as_deref(),
        Some("1000")
    );
    // AlterConfigs replaces the whole set: cleanup.policy went back to its default.
    assert_eq!(
        cfg.get("cleanup.policy").unwrap().value.as_deref(),
        Some("delete")
    );

    let r = rt
        .block_on(admin.create_partitions(&[NewPartitions::new("admin-a", 5)], &opts))
        .unwrap();
    assert_eq!(r, vec![Ok("admin-a".to_string())]);
    let r = rt
        .block_on(admin.create_partitions(&[NewPartitions::new("admin-a", 2)], &opts))
        .unwrap();
    assert_eq!(
        r,
        vec![Err(("admin-a".into(), RDKafkaErrorCode::InvalidPartitions))]
    );
    let md = admin
        .inner()
        .fetch_metadata(Some("admin-a"), std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(md.topics()[0].partitions().len(), 5);

    let broker_cfg = rt
        .block_on(admin.describe_configs(&[ResourceSpecifier::Broker(1)], &opts))
        .unwrap();
    let bc = broker_cfg[0].as_ref().unwrap();
    assert_eq!(
        bc.get("num.partitions").unwrap().value.as_deref(),
        Some("1")
    );

    let r = rt
        .block_on(admin.delete_topics(&["admin-a", "never-existed"], &opts))
        .unwrap();
    assert_eq!(r[0], Ok("admin-a".to_string()));
    assert_eq!(
        r[1],
        Err((
            "never-existed".into(),
            RDKafkaErrorCode::UnknownTopicOrPartition
        ))
    );
    let md = admin
        .inner()
        .fetch_metadata(None, std::time::Duration::from_secs(10))
        .unwrap();
    assert!(md.topics().iter().all(|t| t.name() != "admin-a"));
}

#[test]
fn topics_and_their_configs_survive_a_restart() {
    let mut broker = Broker::start();
    create_topic(&broker, "durable-config", 4, &[("retention.ms", "123456")]);
    broker.stop();
    broker.restart();
    let admin = admin(&broker);
    let rt = runtime();
    let configs = rt
        .block_on(admin.describe_configs(
            &[ResourceSpecifier::Topic("durable-config")],
            &AdminOptions::new(),
        ))
        .unwrap();
    assert_eq!(
        configs[0]
            .as_ref()
            .unwrap()
            .get("retention.ms")
            .unwrap()
            .value
            .as_deref(),
        Some("123456")
    );
    let md = admin
        .inner()
        .fetch_metadata(Some("durable-config"), std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(md.topics()[0].partitions().len(), 4);
}

/// Kafka wants one replica list per added partition; a request with more (or fewer) is refused
/// with INVALID_REPLICA_ASSIGNMENT and adds nothing.
#[test]
fn create_partitions_needs_one_assignment_per_added_partition() {
    let broker = Broker::start();
    create_topic(&broker, "grow", 1, &[]);
    let admin = admin(&broker);
    let rt = runtime();
    let opts = AdminOptions::new();
    let node: &[i32] = &[1];
    let two = [node, node];
    let too_many = NewPartitions::new("grow", 2).assign(&two);
    let r = rt
        .block_on(admin.create_partitions(&[too_many], &opts))
        .unwrap();
    assert_eq!(
        r,
        vec![Err((
            "grow".into(),
            RDKafkaErrorCode::InvalidReplicaAssignment
        ))]
    );
    let exact = NewPartitions::new("grow", 3).assign(&two);
    let r = rt
        .block_on(admin.create_partitions(&[exact], &opts))
        .unwrap();
    assert_eq!(r, vec![Ok("grow".to_string())]);
    let md = admin
        .inner()
        .fetch_metadata(Some("grow"), std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(md.topics()[0].partitions().len(), 3);
}
