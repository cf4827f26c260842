//! DescribeQuorum on a single node: the node is the only voter and the leader; its epoch grows
//! with every start and the metadata offset with every committed topic change.

use std::rc::Rc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_broker::config::BrokerConfig;
use samsa_broker::handlers::{self, Connection, Ctx};
use samsa_broker::net::IoEngine;
use samsa_broker::server::Broker;

fn request(topic: &str, partition: i32) -> DescribeQuorumRequest {
    let mut p = describe_quorum_request::PartitionData::default();
    p.partition_index = partition;
    let mut t = describe_quorum_request::TopicData::default();
    t.topic_name = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = vec![p];
    let mut r = DescribeQuorumRequest::default();
    r.topics = vec![t];
    r
}

fn describe(
    broker: &std::sync::Arc<Broker>,
    version: i16,
    r: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let conn = Rc::new(Connection::new("127.0.0.1:40000".parse().unwrap()));
    let header = RequestHeader::default();
    let ctx = Ctx {
        broker,
        conn: &conn,
        header: &header,
        version,
    };
    handlers::describe_quorum::handle(&ctx, r)
}

fn open(dir: &std::path::Path) -> std::sync::Arc<Broker> {
    let flags = [
        ("log.dirs", dir.display().to_string()),
        ("node.id", "7".to_string()),
        ("listeners", "PLAINTEXT://127.0.0.1:19999".to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v));
    Broker::open(
        BrokerConfig::load(None, vec![], flags).unwrap(),
        IoEngine::Epoll,
    )
    .unwrap()
}

#[test]
fn the_node_is_the_only_voter_its_epoch_grows_per_start_and_its_offset_per_change() {
    let dir = tempfile::tempdir().unwrap();
    let (epoch, offset) = {
        let broker = open(dir.path());
        let r = describe(&broker, 2, request("__cluster_metadata", 0));
        assert_eq!(r.error_code, 0);
        let p = &r.topics[0].partitions[0];
        assert_eq!(r.topics[0].topic_name.0.as_str(), "__cluster_metadata");
        assert_eq!((p.error_code, p.leader_id.0), (0, 7));
        assert!(p.leader_epoch >= 1);
        assert_eq!(p.current_voters.len(), 1);
        assert!(p.observers.is_empty());
        let me = &p.current_voters[0];
        assert_eq!((me.replica_id.0, me.log_end_offset), (7, p.high_watermark));
        assert!(me.last_caught_up_timestamp > 0);
        assert_eq!(r.nodes.len(), 1);
        assert_eq!(r.nodes[0].listeners[0].port, 19999);
        let before = p.high_watermark;

        broker.topics.create("t", 2, 1, Default::default()).unwrap();
        let r = describe(&broker, 0, request("__cluster_metadata", 0));
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            p.high_watermark,
            before + 1,
            "a topic creation is one change"
        );
        assert_eq!(
            p.current_voters[0].last_fetch_timestamp, -1,
            "v0 has no timestamps"
        );
        (p.leader_epoch, p.high_watermark)
    };

    // A restart is a new election of the same node; the metadata offset is kept.
    let broker = open(dir.path());
    let r = describe(&broker, 1, request("__cluster_metadata", 0));
    let p = &r.topics[0].partitions[0];
    assert_eq!((p.leader_epoch, p.high_watermark), (epoch + 1, offset));

    // Anything but the metadata partition is unknown, as in Kafka.
    let r = describe(&broker, 2, request("__cluster_metadata", 1));
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, ResponseError::UnknownTopicOrPartition.code());
    assert!(p
        .error_message
        .as_deref()
        .unwrap_or_default()
        .contains("__cluster_metadata-0"));
    let r = describe(&broker, 2, request("t", 0));
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}
