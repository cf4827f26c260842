//! Time and size retention as Kafka 4.4 applies them, through librdkafka's producer, admin
//! client and consumer: the retention check (every `log.retention.check.interval.ms`) takes
//! the active segment too, so lowering `retention.ms` purges a topic; `segment.ms` rolls in
//! record time.

mod common;

use std::time::{Duration, Instant};

use common::*;
use compat_tests::BrokerOptions;
use rdkafka::admin::{AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureRecord;

const TIMEOUT: Duration = Duration::from_secs(30);

fn watermarks(consumer: &BaseConsumer, topic: &str) -> (i64, i64) {
    consumer
        .fetch_watermarks(topic, 0, TIMEOUT)
        .expect("watermarks")
}

fn produce_fresh(broker: &Broker, topic: &str, n: usize) {
    let producer = producer(broker, &[("linger.ms", "0")]);
    runtime().block_on(async {
        for i in 0..n {
            producer
                .send(
                    FutureRecord::<(), _>::to(topic)
                        .partition(0)
                        .payload(&format!("record {i}")),
                    Duration::from_secs(10),
                )
                .await
                .expect("delivered");
        }
    });
}

fn alter_topic(broker: &Broker, topic: &str, key: &str, value: &str) {
    let admin = admin(broker);
    let r = runtime()
        .block_on(admin.alter_configs(
            &[AlterConfig::new(ResourceSpecifier::Topic(topic)).set(key, value)],
            &AdminOptions::new(),
        ))
        .unwrap();
    assert!(r[0].is_ok(), "{r:?}");
}

/// `retention.ms` lowered on a topic of fresh records in one segment: at the next retention
/// check its log start offset is its end (Kafka rolls the active segment and deletes it); new
/// records follow at the old end offset.
#[test]
fn lowering_retention_ms_purges_a_topic_at_the_next_check() {
    let broker =
        Broker::start_with(BrokerOptions::default().prop("log.retention.check.interval.ms", 200));
    create_topic(&broker, "purge", 1, &[]);
    produce_fresh(&broker, "purge", 10);
    let consumer: BaseConsumer = client_config(&broker).create().unwrap();
    // Under the default retention (7 days) nothing goes.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(watermarks(&consumer, "purge"), (0, 10));

    alter_topic(&broker, "purge", "retention.ms", "1000");
    let deadline = Instant::now() + TIMEOUT;
    while watermarks(&consumer, "purge").0 != 10 {
        assert!(Instant::now() < deadline, "the topic was never purged");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(watermarks(&consumer, "purge"), (10, 10));
    produce_fresh(&broker, "purge", 1);
    assert_eq!(watermarks(&consumer, "purge"), (10, 11));
}

/// The retention check runs on `log.retention.check.interval.ms`, not before: with Kafka's
/// default (five minutes) a topic whose records are past retention keeps them for now.
#[test]
fn retention_waits_for_the_check_interval() {
    let broker = Broker::start();
    create_topic(&broker, "later", 1, &[("retention.ms", "1000")]);
    produce_old_records(&broker, "later", 1, 5);
    let consumer: BaseConsumer = client_config(&broker).create().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(watermarks(&consumer, "later"), (0, 5));
}

/// Records stamped two hours ago are past a one-hour retention at once, the active segment's
/// too; `retention.bytes` trims by whole segments from the oldest.
#[test]
fn old_timestamps_and_retention_bytes_delete_whole_segments() {
    let broker =
        Broker::start_with(BrokerOptions::default().prop("log.retention.check.interval.ms", 200));
    create_topic(&broker, "aged", 1, &[("retention.ms", "3600000")]);
    create_topic(
        &broker,
        "sized",
        1,
        &[
            ("segment.bytes", "1024"),
            ("retention.ms", "-1"),
            ("retention.bytes", "2048"),
        ],
    );
    produce_old_records(&broker, "aged", 1, 5);
    produce_fresh(&broker, "sized", 40);
    let consumer: BaseConsumer = client_config(&broker).create().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while watermarks(&consumer, "aged").0 != 5 || watermarks(&consumer, "sized").0 == 0 {
        assert!(Instant::now() < deadline, "retention deleted nothing");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (start, end) = watermarks(&consumer, "sized");
    assert_eq!(end, 40);
    assert!(start > 0 && start < 40, "{start}");
}
