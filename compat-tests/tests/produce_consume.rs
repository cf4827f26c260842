//! Produce and fetch through librdkafka (the `rdkafka` crate) against the real binary.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use rdkafka::consumer::Consumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::FutureRecord;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

#[test]
fn keyed_records_keep_per_key_order_across_eight_partitions() {
    let broker = Broker::start();
    create_topic(&broker, "orders", 8, &[]);
    let producer = producer(&broker, &[]);
    let records: Vec<_> = (0..2000)
        .map(|i| {
            (
                Some(format!("key-{}", i % 37).into_bytes()),
                format!("{i}").into_bytes(),
            )
        })
        .collect();
    let acks = produce_all(&producer, "orders", &records, None);
    let used: std::collections::HashSet<i32> = acks.iter().map(|(p, _)| *p).collect();
    assert!(
        used.len() > 1,
        "keys should spread over partitions, got {used:?}"
    );

    let consumer = assigned_consumer(
        &broker,
        "orders",
        &(0..8).collect::<Vec<_>>(),
        Offset::Beginning,
    );
    let got = consume_n(&consumer, records.len(), Duration::from_secs(60));
    let mut last_seen: HashMap<Vec<u8>, (i32, i64)> = HashMap::new();
    for g in &got {
        let key = g.key.clone().unwrap();
        let value: i64 = String::from_utf8(g.value.clone()).unwrap().parse().unwrap();
        if let Some((partition, prev)) = last_seen.get(&key) {
            assert_eq!(*partition, g.partition, "one key, one partition");
            assert!(
                value > *prev,
                "key {:?}: {value} after {prev}",
                String::from_utf8_lossy(&key)
            );
        }
        last_seen.insert(key, (g.partition, value));
    }
    assert_eq!(last_seen.len(), 37);
}

#[test]
fn every_compression_codec_round_trips() {
    let broker = Broker::start();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        create_topic(&broker, &topic, 1, &[]);
        let producer = producer(&broker, &[("compression.type", codec), ("linger.ms", "20")]);
        let records: Vec<_> = (0..500)
            .map(|i| {
                (
                    None,
                    format!("{codec} record {i} {}", "x".repeat(i % 100)).into_bytes(),
                )
            })
            .collect();
        let acks = produce_all(&producer, &topic, &records, Some(0));
        assert_eq!(
            acks.last().unwrap().1,
            499,
            "{codec}: offsets are dense from 0"
        );
        let consumer = assigned_consumer(&broker, &topic, &[0], Offset::Beginning);
        let got = consume_n(&consumer, records.len(), Duration::from_secs(30));
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.offset, i as i64, "{codec}");
            assert_eq!(g.value, records[i].1, "{codec}: record {i}");
        }
    }
}

#[test]
fn one_megabyte_records_round_trip() {
    let broker =
        Broker::start_with(BrokerOptions::default().prop("message.max.bytes", 3 * 1024 * 1024));
    create_topic(&broker, "big", 1, &[]);
    let producer = producer(&broker, &[("message.max.bytes", "4000000")]);
    let records: Vec<_> = (0..5u8).map(|i| (None, vec![i; 1024 * 1024])).collect();
    produce_all(&producer, "big", &records, Some(0));
    let consumer = assigned_consumer_with(
        &broker,
        "big",
        &[0],
        Offset::Beginning,
        &[("fetch.message.max.bytes", "1048576")],
    );
    let got = consume_n(&consumer, 5, Duration::from_secs(30));
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.value.len(), 1024 * 1024);
        assert!(g.value.iter().all(|b| *b == i as u8));
    }
}

/// KIP-74, as librdkafka's 0082 checks it: only the first partition with data may go past
/// `fetch.max.bytes`; a consumer whose `receive.message.max.bytes` is just above it never gets a
/// response it must refuse, however large `max.partition.fetch.bytes` is.
#[test]
fn a_fetch_stays_within_fetch_max_bytes_across_partitions() {
    let broker = Broker::start_with(BrokerOptions::default().prop("message.max.bytes", 2_000_000));
    create_topic(&broker, "wide", 3, &[]);
    let producer = producer(
        &broker,
        &[
            ("message.max.bytes", "2000000"),
            ("compression.type", "none"),
        ],
    );
    for p in 0..3 {
        let records: Vec<_> = (0..4u8).map(|i| (None, vec![i; 900 * 1024])).collect();
        produce_all(&producer, "wide", &records, Some(p));
    }
    let mut c = client_config(&broker);
    c.set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .set("max.partition.fetch.bytes", "20000000")
        .set("fetch.max.bytes", "1000000")
        .set("receive.message.max.bytes", "1000512");
    let consumer: rdkafka::consumer::BaseConsumer = c.create().unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..3 {
        tpl.add_partition_offset("wide", p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let got = consume_n(&consumer, 12, Duration::from_secs(60));
    for p in 0..3 {
        let offsets: Vec<i64> = got
            .iter()
            .filter(|g| g.partition == p)
            .map(|g| g.offset)
            .collect();
        assert_eq!(offsets, vec![0, 1, 2, 3], "partition {p}");
    }
}

#[test]
fn a_record_over_max_message_bytes_is_refused_and_the_broker_keeps_serving() {
    let broker = Broker::start();
    create_topic(&broker, "small", 1, &[("max.message.bytes", "10000")]);
    let producer = producer(
        &broker,
        &[
            ("message.max.bytes", "2000000"),
            ("compression.type", "none"),
        ],
    );
    let big = vec![7u8; 50_000];
    let rt = runtime();
    let result = rt.block_on(producer.send(
        FutureRecord::<(), [u8]>::to("small").payload(&big[..]),
        Duration::from_secs(10),
    ));
    match result {
        Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => {}
        other => panic!("expected MESSAGE_TOO_LARGE, got {other:?}"),
    }
    let acks = produce_all(&producer, "small", &[(None, b"fits".to_vec())], Some(0));
    assert_eq!(acks, vec![(0, 0)]);
}

#[test]
fn list_offsets_by_timestamp_finds_the_first_record_at_or_after_it() {
    let broker = Broker::start();
    create_topic(&broker, "times", 1, &[]);
    let producer = producer(&broker, &[("linger.ms", "0")]);
    let rt = runtime();
    let base = 1_700_000_000_000i64;
    for i in 0..100i64 {
        let payload = format!("{i}");
        let rec = FutureRecord::<(), str>::to("times")
            .payload(&payload)
            .partition(0)
            .timestamp(base + i * 1000);
        rt.block_on(producer.send(rec, Duration::from_secs(10)))
            .unwrap();
    }
    let consumer = assigned_consumer(&broker, "times", &[0], Offset::Beginning);
    let ask = |ts: i64| {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("times", 0, Offset::Offset(ts))
            .unwrap();
        let r = consumer
            .offsets_for_times(tpl, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}\n{}", broker.log_lines().join("\n")));
        r.find_partition("times", 0).unwrap().offset()
    };
    assert_eq!(ask(base), Offset::Offset(0));
    assert_eq!(ask(base + 42_000), Offset::Offset(42));
    assert_eq!(ask(base + 41_500), Offset::Offset(42));
    assert_eq!(ask(base + 1_000_000), Offset::End);
    let (low, high) = consumer
        .fetch_watermarks("times", 0, Duration::from_secs(10))
        .unwrap();
    assert_eq!((low, high), (0, 100));
}

/// Kafka auto-creates any valid topic name a producer asks for, including names starting with
/// `__` (rust-rdkafka's own tests name theirs `__test_...`); only its internal topics are
/// left to their coordinators.
#[test]
fn a_topic_whose_name_starts_with_two_underscores_is_auto_created() {
    let broker = Broker::start();
    let producer = producer(&broker, &[("message.timeout.ms", "10000")]);
    let records = vec![(None, b"first".to_vec()), (None, b"second".to_vec())];
    let acks = produce_all(&producer, "__app_events", &records, Some(0));
    assert_eq!(acks, vec![(0, 0), (0, 1)]);
    let consumer = assigned_consumer(&broker, "__app_events", &[0], Offset::Beginning);
    let got = consume_n(&consumer, 2, Duration::from_secs(30));
    assert_eq!(got[1].value, b"second");
}

/// A produce to a topic whose name Kafka forbids fails with INVALID_TOPIC_EXCEPTION, as
/// librdkafka's 0057 expects, not as if auto-creation had been refused.
#[test]
fn a_produce_to_an_invalid_topic_name_is_invalid_topic() {
    let broker = Broker::start();
    let producer = producer(&broker, &[("message.timeout.ms", "10000")]);
    let delivery = runtime().block_on(producer.send(
        FutureRecord::<(), str>::to("bad$#!").payload("v"),
        Duration::from_secs(10),
    ));
    match delivery {
        Err((KafkaError::MessageProduction(code), _)) => {
            assert_eq!(code, RDKafkaErrorCode::InvalidTopic)
        }
        other => panic!("expected INVALID_TOPIC_EXCEPTION, got {other:?}"),
    }
}

/// Records older than the partition's tail cache (4 MiB) are read from the segment and go to
/// the socket with sendfile, unread by the broker: every byte arrives in order, for both
/// isolation levels (read_committed lists aborted transactions from the range's offsets) and
/// for a consumer that starts in the middle of the log.
#[test]
fn records_past_the_tail_cache_come_from_the_segment_byte_for_byte() {
    let broker = Broker::start();
    create_topic(&broker, "cold", 1, &[]);
    let producer = producer(&broker, &[]);
    let value = |i: usize| -> Vec<u8> {
        let mut v = (i as u64).to_be_bytes().to_vec();
        v.extend((0..1016).map(|j| ((i * 31 + j) % 251) as u8));
        v
    };
    let n = 12_000; // about 12 MiB: most of it only in the segment
    let records: Vec<_> = (0..n).map(|i| (None, value(i))).collect();
    produce_all(&producer, "cold", &records, Some(0));
    for (isolation, from) in [
        ("read_committed", 0),
        ("read_uncommitted", 0),
        ("read_uncommitted", 4_321),
    ] {
        let consumer = assigned_consumer_with(
            &broker,
            "cold",
            &[0],
            Offset::Offset(from),
            &[("isolation.level", isolation)],
        );
        let got = consume_n(&consumer, n - from as usize, Duration::from_secs(60));
        for (k, g) in got.iter().enumerate() {
            let i = from as usize + k;
            assert_eq!(g.offset, i as i64, "{isolation} from {from}");
            assert!(
                g.value == value(i),
                "{isolation} from {from}: record {i} differs"
            );
        }
    }
}

/// A fetch long-polling an empty partition is answered by the append that gives it a record,
/// not by its max wait: with fetch.wait.max.ms at 20 s, a consumer whose fetch is already
/// waiting gets the record long before that (a lost wake-up would cost the whole 20 s).
#[test]
fn a_waiting_fetch_is_answered_by_the_append_not_by_its_max_wait() {
    let broker = Broker::start();
    create_topic(&broker, "tailed", 1, &[]);
    let consumer = assigned_consumer_with(
        &broker,
        "tailed",
        &[0],
        Offset::Beginning,
        &[("fetch.wait.max.ms", "20000")],
    );
    // Long enough for the consumer to connect, find offset 0 and send a fetch that waits.
    let settle = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < settle {
        assert!(
            consumer.poll(Duration::from_millis(100)).is_none(),
            "nothing was produced yet"
        );
    }
    let producer = producer(&broker, &[]);
    let sent = std::time::Instant::now();
    produce_all(&producer, "tailed", &[(None, b"wake".to_vec())], Some(0));
    let got = consume_n(&consumer, 1, Duration::from_secs(60));
    let waited = sent.elapsed();
    assert_eq!(got[0].value, b"wake");
    assert!(
        waited < Duration::from_secs(10),
        "the record reached the consumer {waited:?} after it was produced: the waiting fetch \
         was answered by fetch.wait.max.ms=20000, not woken by the append"
    );
}

/// `queued.max.request.bytes`: a request larger than 64 KiB takes its size from a pool of that
/// many bytes before it is received; those that do not fit wait, and one larger than the whole
/// pool waits until it is alone. Eight producers sending 200 KB records at once through a
/// 300 KB pool, and a 1 MB record, are all stored byte for byte, some requests having waited,
/// and the pool is whole again afterwards.
#[test]
fn large_requests_share_the_request_memory_and_all_are_served() {
    let broker = Broker::start_with(
        BrokerOptions::default()
            .prop("queued.max.request.bytes", 300_000)
            .prop("message.max.bytes", 2_000_000),
    );
    create_topic(&broker, "pooled", 8, &[]);
    let config = [("linger.ms", "0"), ("message.max.bytes", "2000000")];
    let per_partition = 20usize;
    let record = |p: usize, i: usize| vec![(p * 31 + i) as u8; 200_000];
    let producers: Vec<_> = (0..8).map(|_| producer(&broker, &config)).collect();
    std::thread::scope(|s| {
        for (p, producer) in producers.iter().enumerate() {
            s.spawn(move || {
                let records: Vec<_> = (0..per_partition).map(|i| (None, record(p, i))).collect();
                produce_all(producer, "pooled", &records, Some(p as i32));
            });
        }
        s.spawn(|| {
            let big = producer(&broker, &config);
            produce_all(&big, "pooled", &[(None, vec![0xAB; 1_000_000])], Some(7));
        });
    });
    let partitions: Vec<i32> = (0..8).collect();
    let consumer = assigned_consumer_with(
        &broker,
        "pooled",
        &partitions,
        Offset::Beginning,
        &[("fetch.message.max.bytes", "2000000")],
    );
    let got = consume_n(&consumer, 8 * per_partition + 1, Duration::from_secs(60));
    let mut seen: HashMap<i32, Vec<Vec<u8>>> = HashMap::new();
    for g in got {
        seen.entry(g.partition).or_default().push(g.value);
    }
    for p in 0..8usize {
        let values = &seen[&(p as i32)];
        let expected: Vec<Vec<u8>> = (0..per_partition).map(|i| record(p, i)).collect();
        let mine: Vec<Vec<u8>> = values
            .iter()
            .filter(|v| v.len() == 200_000)
            .cloned()
            .collect();
        assert_eq!(mine, expected, "partition {p} in order, byte for byte");
    }
    assert!(
        seen[&7]
            .iter()
            .any(|v| v.len() == 1_000_000 && v.iter().all(|b| *b == 0xAB)),
        "the request larger than the pool was served"
    );
    assert!(
        metric(&broker, "samsa_request_memory_waits_total") > 0.0,
        "nine producers through a 300 KB pool: some requests waited"
    );
    assert_eq!(
        metric(&broker, "samsa_request_memory_held_bytes"),
        0.0,
        "all given back"
    );
}
