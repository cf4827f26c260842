//! Admin answers in the shape Apache Kafka 4.4 gives them, for the requests where the
//! differential run (`scripts/reference/compare`) found Samsa answering otherwise: topic ids
//! before Metadata v12, topics named twice, DescribeTopicPartitions' paging limits, the leader
//! epoch -2, log directories of partitions that do not exist. One node that is its quorum's
//! only voter; topic `t` (3 partitions) is this node's own.

use std::rc::Rc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::ResponseError;
use samsa_broker::config::BrokerConfig;
use samsa_broker::handlers::{self, Connection, Ctx};
use samsa_broker::testing::JoinedBroker;
use uuid::Uuid;

struct Node {
    broker: JoinedBroker,
    _dir: tempfile::TempDir,
    conn: Rc<Connection>,
    header: RequestHeader,
}

impl Node {
    fn open() -> Node {
        let dir = tempfile::tempdir().unwrap();
        let flags = [("log.dirs", dir.path().join("data").display().to_string())]
            .map(|(k, v)| (k.to_string(), v));
        let config = BrokerConfig::load(None, vec![], flags).unwrap();
        let broker = samsa_broker::testing::open_joined(config).unwrap();
        broker
            .node
            .topics
            .create("t", 3, 1, Default::default())
            .unwrap();
        Node {
            broker,
            _dir: dir,
            conn: Rc::new(Connection::plaintext("127.0.0.1:40000".parse().unwrap())),
            header: RequestHeader::default(),
        }
    }

    fn ctx(&self, version: i16) -> Ctx<'_> {
        Ctx::new(&self.broker, &self.conn, &self.header, version)
    }

    fn topic_id(&self, name: &str) -> Uuid {
        self.broker.node.topics.get(name).expect("the topic").id
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn name(v: &str) -> TopicName {
    TopicName(s(v))
}

/// A Metadata request for topics given by name, id, or both.
fn metadata(topics: &[(Option<&str>, Uuid)]) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    r.topics = Some(
        topics
            .iter()
            .map(|(n, id)| {
                let mut t = metadata_request::MetadataRequestTopic::default();
                t.name = n.map(name);
                t.topic_id = *id;
                t
            })
            .collect(),
    );
    r.allow_auto_topic_creation = false;
    r
}

fn encodes(resp: &MetadataResponse, version: i16) {
    let mut buf = bytes::BytesMut::new();
    resp.encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("Metadata v{version} answer encodes: {e}"));
}

#[test]
fn metadata_before_v12_refuses_topic_ids_as_a_whole_request() {
    let node = Node::open();
    let id = node.topic_id("t");
    for version in [10, 11] {
        for (asked, answered_name) in [
            ((None, id), ""),
            ((None, Uuid::from_u128(1)), ""),
            ((Some("t"), id), "t"),
        ] {
            let resp = block_on(handlers::metadata::handle(
                &node.ctx(version),
                metadata(&[asked]),
            ));
            encodes(&resp, version);
            assert!(resp.brokers.is_empty(), "v{version} {asked:?}");
            assert_eq!(resp.cluster_id, None);
            assert_eq!(resp.controller_id.0, -1);
            assert_eq!(resp.topics.len(), 1);
            let t = &resp.topics[0];
            assert_eq!(t.error_code, ResponseError::InvalidRequest.code());
            assert_eq!(t.name.as_ref().map(|n| n.as_str()), Some(answered_name));
            assert_eq!(t.topic_id, asked.1);
            assert!(t.partitions.is_empty());
        }
    }
    // From v12 the id is looked up.
    let resp = block_on(handlers::metadata::handle(
        &node.ctx(12),
        metadata(&[(None, id)]),
    ));
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].partitions.len(), 3);
}

#[test]
fn metadata_answers_a_topic_named_twice_once() {
    let node = Node::open();
    for version in [1, 9, 12] {
        let resp = block_on(handlers::metadata::handle(
            &node.ctx(version),
            metadata(&[(Some("t"), Uuid::nil()), (Some("t"), Uuid::nil())]),
        ));
        assert_eq!(resp.topics.len(), 1, "v{version}");
    }
    let id = node.topic_id("t");
    let resp = block_on(handlers::metadata::handle(
        &node.ctx(12),
        metadata(&[(None, id), (None, id)]),
    ));
    assert_eq!(resp.topics.len(), 1);
}

#[test]
fn metadata_judges_a_missing_topic_internal_by_its_name() {
    let node = Node::open();
    let resp = block_on(handlers::metadata::handle(
        &node.ctx(12),
        metadata(&[(Some("__transaction_state"), Uuid::nil())]),
    ));
    let t = &resp.topics[0];
    assert_eq!(t.error_code, ResponseError::UnknownTopicOrPartition.code());
    assert!(t.is_internal, "Kafka's Topic.isInternal");
    let resp = block_on(handlers::metadata::handle(
        &node.ctx(12),
        metadata(&[(Some("nope"), Uuid::nil())]),
    ));
    assert!(!resp.topics[0].is_internal);
}

fn describe_topic_partitions(
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsRequest {
    let mut r = DescribeTopicPartitionsRequest::default();
    r.topics = topics
        .iter()
        .map(|n| {
            let mut t = describe_topic_partitions_request::TopicRequest::default();
            t.name = name(n);
            t
        })
        .collect();
    r.response_partition_limit = limit;
    r.cursor = cursor.map(|(n, p)| {
        let mut c = describe_topic_partitions_request::Cursor::default();
        c.topic_name = name(n);
        c.partition_index = p;
        c
    });
    r
}

#[test]
fn describe_topic_partitions_takes_a_limit_of_0_as_1_and_refuses_a_negative_cursor() {
    let node = Node::open();
    // A paging client moves on one partition at a time rather than loop on the same page.
    let resp = handlers::describe_topic_partitions::handle(
        &node.ctx(0),
        describe_topic_partitions(&["t"], 0, None),
    );
    assert_eq!(resp.topics.len(), 1);
    let partitions: Vec<i32> = resp.topics[0]
        .partitions
        .iter()
        .map(|p| p.partition_index)
        .collect();
    assert_eq!(partitions, vec![0]);
    let next = resp.next_cursor.expect("a next page");
    assert_eq!((next.topic_name.as_str(), next.partition_index), ("t", 1));

    let resp = handlers::describe_topic_partitions::handle(
        &node.ctx(0),
        describe_topic_partitions(&["t"], 2000, Some(("t", -1))),
    );
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(
        resp.topics[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    assert!(resp.topics[0].partitions.is_empty());
    assert!(resp.topics[0].topic_id.is_nil());
    assert!(resp.next_cursor.is_none());
}

#[test]
fn describe_topic_partitions_gives_a_missing_topic_the_callers_operations() {
    let node = Node::open();
    let resp = handlers::describe_topic_partitions::handle(
        &node.ctx(0),
        describe_topic_partitions(&["nope", "bad/name"], 2000, None),
    );
    assert_eq!(resp.topics.len(), 2);
    for t in &resp.topics {
        assert_ne!(t.error_code, 0);
        assert_ne!(t.topic_authorized_operations, i32::MIN, "{t:?}");
    }
}

#[test]
fn create_topics_answers_a_name_given_twice_once() {
    let node = Node::open();
    let mut topic = create_topics_request::CreatableTopic::default();
    topic.name = name("twice");
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![topic.clone(), topic];
    req.timeout_ms = 10_000;
    let resp = block_on(handlers::create_topics::handle(&node.ctx(7), req));
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(
        resp.topics[0].error_code,
        ResponseError::InvalidRequest.code()
    );
}

#[test]
fn create_partitions_answers_a_name_given_twice_once() {
    let node = Node::open();
    let mut grow = create_partitions_request::CreatePartitionsTopic::default();
    grow.name = name("t");
    grow.count = 4;
    let mut req = CreatePartitionsRequest::default();
    req.topics = vec![grow.clone(), grow];
    req.timeout_ms = 10_000;
    let resp = block_on(handlers::create_partitions::handle(&node.ctx(3), req));
    assert_eq!(resp.results.len(), 1);
    assert_eq!(
        resp.results[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    assert_eq!(node.broker.node.topics.get("t").unwrap().partition_count, 3);
}

fn delete_topics(topics: &[(Option<&str>, Uuid)]) -> DeleteTopicsRequest {
    let mut req = DeleteTopicsRequest::default();
    req.topics = topics
        .iter()
        .map(|(n, id)| {
            let mut t = delete_topics_request::DeleteTopicState::default();
            t.name = n.map(name);
            t.topic_id = *id;
            t
        })
        .collect();
    req.timeout_ms = 10_000;
    req
}

#[test]
fn delete_topics_refuses_a_name_with_an_id_and_a_topic_given_twice() {
    let node = Node::open();
    let id = node.topic_id("t");
    let invalid = ResponseError::InvalidRequest.code();
    let cases: [&[(Option<&str>, Uuid)]; 4] = [
        &[(Some("t"), id)],
        &[(Some("t"), Uuid::nil()), (Some("t"), Uuid::nil())],
        &[(None, id), (None, id)],
        &[(None, Uuid::nil())],
    ];
    for asked in cases {
        let resp = block_on(handlers::delete_topics::handle(
            &node.ctx(6),
            delete_topics(asked),
        ));
        assert_eq!(resp.responses.len(), 1, "{asked:?}");
        assert_eq!(resp.responses[0].error_code, invalid, "{asked:?}");
        assert!(resp.responses[0].error_message.is_some());
        assert!(node.broker.node.topics.get("t").is_some(), "{asked:?}");
    }
    // A name and the id of the same topic: refused once, with the id, and nothing deleted.
    let resp = block_on(handlers::delete_topics::handle(
        &node.ctx(6),
        delete_topics(&[(Some("t"), Uuid::nil()), (None, id)]),
    ));
    assert_eq!(resp.responses.len(), 1);
    assert_eq!(resp.responses[0].error_code, invalid);
    assert_eq!(resp.responses[0].topic_id, id);
    assert!(node.broker.node.topics.get("t").is_some());
}

#[test]
fn a_current_leader_epoch_of_minus_2_is_fenced_only_minus_1_means_none() {
    let node = Node::open();
    let fenced = ResponseError::FencedLeaderEpoch.code();
    let epoch_request = |current: i32| {
        let mut p = offset_for_leader_epoch_request::OffsetForLeaderPartition::default();
        p.partition = 0;
        p.current_leader_epoch = current;
        p.leader_epoch = 0;
        let mut t = offset_for_leader_epoch_request::OffsetForLeaderTopic::default();
        t.topic = name("t");
        t.partitions = vec![p];
        let mut r = OffsetForLeaderEpochRequest::default();
        r.replica_id = BrokerId(-1);
        r.topics = vec![t];
        r
    };
    let resp = handlers::offset_for_leader_epoch::handle(&node.ctx(4), epoch_request(-2));
    let p = &resp.topics[0].partitions[0];
    assert_eq!(
        (p.error_code, p.leader_epoch, p.end_offset),
        (fenced, -1, -1)
    );
    let resp = handlers::offset_for_leader_epoch::handle(&node.ctx(4), epoch_request(-1));
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);

    let offsets_request = |current: i32| {
        let mut p = list_offsets_request::ListOffsetsPartition::default();
        p.partition_index = 0;
        p.current_leader_epoch = current;
        p.timestamp = -1;
        let mut t = list_offsets_request::ListOffsetsTopic::default();
        t.name = name("t");
        t.partitions = vec![p];
        let mut r = ListOffsetsRequest::default();
        r.replica_id = BrokerId(-1);
        r.topics = vec![t];
        r
    };
    let resp = handlers::list_offsets::handle(&node.ctx(7), offsets_request(-2));
    assert_eq!(resp.topics[0].partitions[0].error_code, fenced);
    let resp = handlers::list_offsets::handle(&node.ctx(7), offsets_request(-1));
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
}

#[test]
fn log_dirs_of_partitions_that_do_not_exist() {
    let node = Node::open();
    // DescribeLogDirs leaves out a topic none of whose asked partitions is here.
    let mut t = describe_log_dirs_request::DescribableLogDirTopic::default();
    t.topic = name("t");
    t.partitions = vec![99];
    let mut req = DescribeLogDirsRequest::default();
    req.topics = Some(vec![t]);
    let resp = handlers::describe_log_dirs::handle(&node.ctx(4), req);
    assert_eq!(resp.results.len(), 1);
    assert!(resp.results[0].topics.is_empty(), "{resp:?}");

    // AlterReplicaLogDirs to the current directory: an unknown topic or partition is
    // UNKNOWN_TOPIC_OR_PARTITION, a partition here NONE.
    let dir = std::fs::canonicalize(node.broker.node.topics.dir()).unwrap();
    let mut d = alter_replica_log_dirs_request::AlterReplicaLogDir::default();
    d.path = s(&dir.display().to_string());
    for (topic, partitions) in [("t", vec![0, 99]), ("nope", vec![0])] {
        let mut t = alter_replica_log_dirs_request::AlterReplicaLogDirTopic::default();
        t.name = name(topic);
        t.partitions = partitions;
        d.topics.push(t);
    }
    let mut req = AlterReplicaLogDirsRequest::default();
    req.dirs = vec![d];
    let resp = handlers::alter_replica_log_dirs::handle(&node.ctx(2), req);
    let codes: Vec<(String, i32, i16)> = resp
        .results
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.topic_name.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(
        codes,
        vec![
            ("t".to_string(), 0, 0),
            ("t".to_string(), 99, unknown),
            ("nope".to_string(), 0, unknown)
        ]
    );
}
