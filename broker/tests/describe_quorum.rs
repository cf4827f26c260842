//! DescribeQuorum on a node that is its quorum's only voter: it leads, its epoch grows with
//! every start (a restarted leader resigns and stands again), and the high watermark covers
//! every batch of its metadata log, which survives the restart.

use std::rc::Rc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_broker::broker::Broker;
use samsa_broker::config::BrokerConfig;
use samsa_broker::handlers::{self, Connection, Ctx};
use samsa_broker::net::IoEngine;

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
    let conn = Rc::new(Connection::plaintext("127.0.0.1:40000".parse().unwrap()));
    let header = RequestHeader::default();
    let ctx = Ctx::new(broker, &conn, &header, version);
    futures::executor::block_on(handlers::describe_quorum::handle(&ctx, r))
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

/// Waits until the leader's LeaderChange batch of its epoch is committed.
fn committed(broker: &std::sync::Arc<Broker>, version: i16) -> DescribeQuorumResponse {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = describe(broker, version, request("__cluster_metadata", 0));
        let p = &r.topics[0].partitions[0];
        if p.high_watermark > 0 && p.current_voters[0].log_end_offset == p.high_watermark {
            return r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never committed: {r:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn the_node_is_the_only_voter_and_leads_a_new_epoch_per_start() {
    let dir = tempfile::tempdir().unwrap();
    let (epoch, offset) = {
        let broker = open(dir.path());
        let r = committed(&broker, 2);
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

        let r = describe(&broker, 0, request("__cluster_metadata", 0));
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            p.current_voters[0].last_fetch_timestamp, -1,
            "v0 has no timestamps"
        );
        (p.leader_epoch, p.high_watermark)
    };

    // A restart is a new election of the same node, which appends its LeaderChange batch
    // after everything the log held.
    let broker = open(dir.path());
    let r = committed(&broker, 1);
    let p = &r.topics[0].partitions[0];
    assert!(p.leader_epoch > epoch, "{} after {epoch}", p.leader_epoch);
    assert!(
        p.high_watermark > offset,
        "{} after {offset}",
        p.high_watermark
    );

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
