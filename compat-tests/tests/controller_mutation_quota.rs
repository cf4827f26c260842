//! The controller mutation quota (KIP-599) on a real broker: `controller_mutation_rate` set
//! through AlterClientQuotas limits the partitions CreateTopics, CreatePartitions and
//! DeleteTopics create or delete. A client that knows THROTTLING_QUOTA_EXCEEDED (CreateTopics
//! v6+, CreatePartitions v3+, DeleteTopics v5+) is refused once its token bucket is below zero,
//! with the time to wait; an older one is served, its answer held back for that time.

mod common;

use std::time::{Duration, Instant};

use common::*;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const THROTTLED: i16 = 89; // THROTTLING_QUOTA_EXCEEDED

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Sets `controller_mutation_rate` for the default user (every client of this test).
fn set_rate(broker: &Broker, rate: f64) {
    let mut d = EntityData::default();
    d.entity_type = s("user");
    d.entity_name = None;
    let mut op = OpData::default();
    op.key = s("controller_mutation_rate");
    op.value = rate;
    let mut e = EntryData::default();
    e.entity = vec![d];
    e.ops = vec![op];
    let mut req = AlterClientQuotasRequest::default();
    req.entries = vec![e];
    let resp: AlterClientQuotasResponse = raw_request(broker, ApiKey::AlterClientQuotas, 1, &req);
    assert_eq!(resp.entries[0].error_code, 0, "{:?}", resp.entries[0]);
}

/// CreateTopics of one topic: its error code and the answer's throttle time.
fn create(broker: &Broker, version: i16, name: &str, partitions: i32) -> (i16, i32) {
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(name));
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 10_000;
    let resp: CreateTopicsResponse = raw_request(broker, ApiKey::CreateTopics, version, &req);
    (resp.topics[0].error_code, resp.throttle_time_ms)
}

fn add_partitions(broker: &Broker, version: i16, name: &str, count: i32) -> (i16, i32) {
    let mut t = CreatePartitionsTopic::default();
    t.name = TopicName(s(name));
    t.count = count;
    t.assignments = None;
    let mut req = CreatePartitionsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 10_000;
    let resp: CreatePartitionsResponse =
        raw_request(broker, ApiKey::CreatePartitions, version, &req);
    (resp.results[0].error_code, resp.throttle_time_ms)
}

fn delete(broker: &Broker, version: i16, name: &str) -> (i16, i32) {
    let mut req = DeleteTopicsRequest::default();
    if version >= 6 {
        let mut t = DeleteTopicState::default();
        t.name = Some(TopicName(s(name)));
        req.topics = vec![t];
    } else {
        req.topic_names = vec![TopicName(s(name))];
    }
    req.timeout_ms = 10_000;
    let resp: DeleteTopicsResponse = raw_request(broker, ApiKey::DeleteTopics, version, &req);
    (resp.responses[0].error_code, resp.throttle_time_ms)
}

#[test]
fn partitions_created_and_deleted_beyond_the_rate_are_refused_or_held_back() {
    // 5 partitions a second with a burst of two windows of one second: 10 at once.
    let broker = Broker::start_with(
        BrokerOptions::default()
            .prop("controller.quota.window.num", 2)
            .prop("controller.quota.window.size.seconds", 1),
    );
    // Without a quota nothing is counted.
    assert_eq!(create(&broker, 7, "free", 30), (0, 0));
    set_rate(&broker, 5.0);

    // 14 partitions from a full bucket of 10 are taken whole (Kafka's strict quota admits
    // while the bucket is not below zero) and leave it at -4: 0.8 s to wait.
    assert_eq!(create(&broker, 7, "big", 14), (0, 0));
    let (code, throttle) = create(&broker, 7, "refused", 1);
    assert_eq!(
        code, THROTTLED,
        "a new client is refused while the bucket is below zero"
    );
    assert!((1..=800).contains(&throttle), "throttle {throttle} ms");
    let (code, throttle) = add_partitions(&broker, 3, "big", 16);
    assert_eq!(code, THROTTLED);
    assert!(throttle > 0);
    let (code, throttle) = delete(&broker, 6, "big");
    assert_eq!(code, THROTTLED);
    assert!(throttle > 0);

    // An older client is never refused: its answer waits until the bucket is back at zero.
    let started = Instant::now();
    let (code, throttle) = create(&broker, 5, "older", 1);
    let took = started.elapsed();
    assert_eq!(code, 0);
    assert!(throttle > 0, "the held-back answer still says why");
    assert!(
        took >= Duration::from_millis(throttle as u64 * 9 / 10),
        "answered after {took:?}, throttle {throttle} ms"
    );

    // Once the bucket has refilled, the same requests pass.
    std::thread::sleep(Duration::from_millis(2_100));
    assert_eq!(add_partitions(&broker, 3, "big", 16).0, 0);
    std::thread::sleep(Duration::from_millis(2_100));
    assert_eq!(delete(&broker, 6, "big").0, 0);
    assert_eq!(
        create(&broker, 7, "refused", 1).0,
        THROTTLED,
        "the delete took 16"
    );
}
