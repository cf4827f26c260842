//! Fetch from follower (KIP-392) on three real `samsa` processes, each in a rack of its own
//! (`broker.rack`): with `replica.selector.class` set to Kafka's rack-aware selector, a librdkafka
//! consumer whose `client.rack` is a follower's rack is sent there by the leader and reads every
//! record from that follower; without it, the same consumer reads from the leader. Which broker
//! served the records is read from each broker's `samsa_topic_records_out_total` (only a
//! consumer fetches from a follower) and the leader's `samsa_preferred_read_replicas_total`.
//! Raw requests then check the follower's answers to consumers: reads up to its high watermark,
//! Kafka's errors for old fetch versions, offsets past its log, and leader epochs it does not
//! have; ListOffsets and OffsetForLeaderEpoch left to the leader.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::admin::TopicReplication;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

const RACK_AWARE: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
const TOPIC: &str = "racked";
const RECORDS: usize = 300;

fn rack(id: i32) -> String {
    format!("rack-{id}")
}

/// Three nodes, node `id` in rack `rack-<id>`, with or without the rack-aware selector.
fn start(selector: bool) -> Cluster {
    let cluster = Cluster::start_each(3, |id| {
        let o = BrokerOptions::default()
            .prop("broker.rack", rack(id))
            .prop("broker.session.timeout.ms", 3000)
            .prop("broker.heartbeat.interval.ms", 500);
        if selector {
            o.prop("replica.selector.class", RACK_AWARE)
        } else {
            o
        }
    });
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    cluster
}

/// Creates the topic (one partition, three replicas), waits for all three in sync, and
/// produces `RECORDS` records with acks=all. Returns the partition's leader and leader epoch.
fn create_and_produce(cluster: &Cluster) -> (i32, i32) {
    let bootstrap = cluster.bootstrap();
    create_topic_in(&bootstrap, TOPIC, 1, TopicReplication::Fixed(3), &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (leader, epoch) = loop {
        let m = metadata(&cluster.nodes[0], Some(&[TOPIC]));
        let p = &m.topics[0].partitions;
        if m.topics[0].error_code == 0 && p.len() == 1 && p[0].isr_nodes.len() == 3 {
            break (p[0].leader_id.0, p[0].leader_epoch);
        }
        assert!(Instant::now() < deadline, "the ISR never filled: {m:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let producer = producer(&cluster.nodes[0], &[("acks", "all")]);
    let records: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..RECORDS)
        .map(|i| (None, format!("record-{i}").into_bytes()))
        .collect();
    let acked = produce_all(&producer, TOPIC, &records, Some(0));
    assert_eq!(acked.last(), Some(&(0, RECORDS as i64 - 1)));
    (leader, epoch)
}

/// A librdkafka consumer of the whole cluster in rack `client_rack`, reading partition 0 from
/// the start.
fn consumer(cluster: &Cluster, client_rack: &str) -> BaseConsumer {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", cluster.bootstrap())
        .set("client.rack", client_rack)
        .set("group.id", "fetch-from-follower")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(TOPIC, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).expect("assign");
    consumer
}

fn consume_everything(consumer: &BaseConsumer) {
    let got = consume_n(consumer, RECORDS, Duration::from_secs(20));
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            (g.offset, g.value.as_slice()),
            (i as i64, format!("record-{i}").as_bytes())
        );
    }
}

/// Records of the topic each node has returned to fetchers, by node id.
fn records_out(cluster: &Cluster) -> BTreeMap<i32, f64> {
    let series = format!("samsa_topic_records_out_total{{topic=\"{TOPIC}\"}}");
    (1..=3)
        .map(|id| (id, metric(&cluster.nodes[id as usize - 1], &series)))
        .collect()
}

#[test]
fn a_consumer_reads_from_the_follower_in_its_rack_when_the_leader_says_so() {
    let cluster = start(true);
    let (leader, epoch) = create_and_produce(&cluster);
    let follower = leader % 3 + 1;
    let other = follower % 3 + 1;
    assert!(leader != follower && leader != other && follower != other);

    let c = consumer(&cluster, &rack(follower));
    consume_everything(&c);
    drop(c);
    let out = records_out(&cluster);
    assert!(
        out[&follower] >= RECORDS as f64,
        "the follower in the consumer's rack served only {} records: {out:?}",
        out[&follower]
    );
    assert_eq!(
        out[&other], 0.0,
        "nobody else reads from the other follower: {out:?}"
    );
    let named = metric(
        &cluster.nodes[leader as usize - 1],
        "samsa_preferred_read_replicas_total",
    );
    assert!(named >= 1.0, "the leader never named a preferred replica");

    // What the consumer's fetches were answered, one by one.
    let node = |id: i32| &cluster.nodes[id as usize - 1];
    let at_leader = fetch(node(leader), 12, 0, -1, &rack(follower));
    assert_eq!(
        (at_leader.error_code, at_leader.preferred_read_replica.0),
        (0, follower),
        "the leader names the follower in the client's rack"
    );
    assert!(at_leader.records.as_ref().is_none_or(|r| r.is_empty()));
    assert_eq!(at_leader.high_watermark, RECORDS as i64);
    let own_rack = fetch(node(leader), 12, 0, -1, &rack(leader));
    assert_eq!(
        own_rack.preferred_read_replica.0, -1,
        "a client in the leader's rack stays"
    );
    assert!(own_rack.records.is_some_and(|r| !r.is_empty()));
    let elsewhere = fetch(node(leader), 12, 0, -1, "rack-9");
    assert_eq!(
        elsewhere.preferred_read_replica.0, -1,
        "no replica in rack-9"
    );

    // The follower serves any consumer of v11+, up to its high watermark, which reaches the
    // leader's with its next fetch.
    let deadline = Instant::now() + Duration::from_secs(10);
    let served = loop {
        let p = fetch(node(other), 12, 0, epoch, "");
        if p.high_watermark == RECORDS as i64 {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "follower's high watermark: {p:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(served.error_code, 0);
    assert!(served.records.is_some_and(|r| !r.is_empty()));
    assert_eq!(
        served.preferred_read_replica.0, -1,
        "only a leader names a replica"
    );
    let at_end = fetch(node(other), 12, RECORDS as i64, epoch, "");
    assert_eq!(at_end.error_code, 0);
    assert!(at_end.records.is_none_or(|r| r.is_empty()));
    let past_end = fetch(node(other), 12, RECORDS as i64 + 1, epoch, "");
    assert_eq!(past_end.error_code, ResponseError::OffsetOutOfRange.code());
    let newer_epoch = fetch(node(other), 12, 0, epoch + 1, "");
    assert_eq!(
        newer_epoch.error_code,
        ResponseError::UnknownLeaderEpoch.code()
    );
    if epoch > 0 {
        let older_epoch = fetch(node(other), 12, 0, epoch - 1, "");
        assert_eq!(
            older_epoch.error_code,
            ResponseError::FencedLeaderEpoch.code()
        );
    }
    // Before v11 a consumer's fetch carries no client metadata: leaders only, as in Kafka.
    let old = fetch(node(other), 10, 0, epoch, "");
    assert_eq!(old.error_code, ResponseError::NotLeaderOrFollower.code());
    // ListOffsets and OffsetForLeaderEpoch from a consumer stay with the leader; a follower
    // checks the client's leader epoch first, as Kafka's do.
    assert_eq!(
        list_latest(node(other), -1),
        ResponseError::NotLeaderOrFollower.code()
    );
    assert_eq!(
        list_latest(node(other), epoch + 1),
        ResponseError::UnknownLeaderEpoch.code()
    );
    assert_eq!(list_latest(node(leader), epoch), 0);
    assert_eq!(
        epoch_end(node(other), epoch),
        (ResponseError::NotLeaderOrFollower.code(), -1)
    );
    assert_eq!(
        epoch_end(node(other), epoch + 1).0,
        ResponseError::UnknownLeaderEpoch.code()
    );
    assert_eq!(epoch_end(node(leader), epoch), (0, RECORDS as i64));
}

#[test]
fn without_a_replica_selector_a_consumer_reads_from_the_leader() {
    let cluster = start(false);
    let (leader, _) = create_and_produce(&cluster);
    let follower = leader % 3 + 1;
    let c = consumer(&cluster, &rack(follower));
    consume_everything(&c);
    drop(c);
    let out = records_out(&cluster);
    for id in (1..=3).filter(|&id| id != leader) {
        assert_eq!(out[&id], 0.0, "node {id} is a follower: {out:?}");
    }
    // Two followers replicated every record, and the consumer read them all from here.
    assert!(out[&leader] >= 3.0 * RECORDS as f64, "{out:?}");
    let node = &cluster.nodes[leader as usize - 1];
    assert_eq!(metric(node, "samsa_preferred_read_replicas_total"), 0.0);
    let p = fetch(node, 12, 0, -1, &rack(follower));
    assert_eq!(p.preferred_read_replica.0, -1);
}

/// A consumer's Fetch of partition 0 of the topic at `offset`, as version `version` sends it.
fn fetch(
    node: &Broker,
    version: i16,
    offset: i64,
    current_leader_epoch: i32,
    rack_id: &str,
) -> fetch_response::PartitionData {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1 << 20;
    p.current_leader_epoch = current_leader_epoch;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_static_str(TOPIC));
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = 0;
    req.max_bytes = 1 << 20;
    req.session_epoch = -1;
    req.topics = vec![t];
    if version >= 11 {
        req.rack_id = StrBytes::from_string(rack_id.to_string());
    }
    let resp: FetchResponse = raw_request(node, ApiKey::Fetch, version, &req);
    assert_eq!(resp.error_code, 0, "{resp:?}");
    resp.responses[0].partitions[0].clone()
}

/// The error code of a consumer's ListOffsets (latest) of partition 0 of the topic.
fn list_latest(node: &Broker, current_leader_epoch: i32) -> i16 {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = 0;
    p.timestamp = -1;
    p.current_leader_epoch = current_leader_epoch;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(StrBytes::from_static_str(TOPIC));
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: ListOffsetsResponse = raw_request(node, ApiKey::ListOffsets, 7, &req);
    resp.topics[0].partitions[0].error_code
}

/// A consumer's OffsetForLeaderEpoch of partition 0 of the topic for its current leader epoch
/// `epoch`: the error code and the epoch's end offset.
fn epoch_end(node: &Broker, epoch: i32) -> (i16, i64) {
    let mut p = OffsetForLeaderPartition::default();
    p.partition = 0;
    p.current_leader_epoch = epoch;
    p.leader_epoch = epoch;
    let mut t = OffsetForLeaderTopic::default();
    t.topic = TopicName(StrBytes::from_static_str(TOPIC));
    t.partitions = vec![p];
    let mut req = OffsetForLeaderEpochRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: OffsetForLeaderEpochResponse =
        raw_request(node, ApiKey::OffsetForLeaderEpoch, 4, &req);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.end_offset)
}
