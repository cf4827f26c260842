//! Crashes: SIGKILL at any moment loses no acknowledged record; a torn tail is recovered.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use rdkafka::topic_partition_list::Offset;

#[test]
fn sigkill_then_restart_serves_every_acknowledged_record() {
    let mut broker = Broker::start();
    create_topic(&broker, "crash", 3, &[]);
    let producer = producer(&broker, &[("acks", "all")]);
    let records: Vec<_> = (0..3000)
        .map(|i| {
            (
                Some(format!("k{}", i % 11).into_bytes()),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    let acks = produce_all(&producer, "crash", &records, None);
    drop(producer);
    broker.kill();
    broker.restart();
    let consumer = assigned_consumer(&broker, "crash", &[0, 1, 2], Offset::Beginning);
    let got = consume_n(&consumer, records.len(), Duration::from_secs(60));
    let mut by_pos: std::collections::HashMap<(i32, i64), Vec<u8>> = got
        .into_iter()
        .map(|g| ((g.partition, g.offset), g.value))
        .collect();
    for ((p, o), (_, v)) in acks.iter().zip(&records) {
        assert_eq!(
            by_pos.remove(&(*p, *o)).as_ref(),
            Some(v),
            "acknowledged record at {p}/{o}"
        );
    }
    // New writes continue after the recovered end.
    let producer = common::producer(&broker, &[]);
    let next = produce_all(&producer, "crash", &[(None, b"after".to_vec())], Some(0));
    let before = acks
        .iter()
        .filter(|(p, _)| *p == 0)
        .map(|(_, o)| *o)
        .max()
        .unwrap();
    assert_eq!(next[0].1, before + 1);
}

#[test]
fn a_torn_tail_is_truncated_and_the_partition_keeps_serving() {
    let mut broker = Broker::start();
    create_topic(&broker, "torn", 1, &[]);
    let producer = producer(&broker, &[]);
    let records: Vec<_> = (0..100)
        .map(|i| (None, format!("record-{i}").into_bytes()))
        .collect();
    produce_all(&producer, "torn", &records, Some(0));
    drop(producer);
    broker.kill();
    // Half a batch at the end of the active segment: what a crash mid-write leaves.
    let segment = broker
        .data_dir
        .join("torn-0")
        .join("00000000000000000000.log");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .expect("segment file");
    f.write_all(&[
        0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 200, 0, 0, 0, 0, 2, 1, 2, 3,
    ])
    .unwrap();
    drop(f);
    broker.restart();
    let consumer = assigned_consumer(&broker, "torn", &[0], Offset::Beginning);
    let got = consume_n(&consumer, 100, Duration::from_secs(30));
    assert_eq!(got.last().unwrap().offset, 99);
    let producer = common::producer(&broker, &[]);
    let next = produce_all(&producer, "torn", &[(None, b"after".to_vec())], Some(0));
    assert_eq!(next[0], (0, 100));
    let consumer = assigned_consumer(&broker, "torn", &[0], Offset::Offset(100));
    let got = consume_n(&consumer, 1, Duration::from_secs(30));
    assert_eq!(got[0].value, b"after");
}

#[test]
fn sigterm_shuts_down_cleanly_with_exit_code_zero() {
    let mut broker = Broker::start();
    create_topic(&broker, "clean", 1, &[]);
    let producer = producer(&broker, &[]);
    produce_all(&producer, "clean", &[(None, b"x".to_vec())], Some(0));
    let status = broker.stop();
    assert!(status.success(), "exit status {status}");
    let log = broker.log_lines().join("\n");
    assert!(log.contains("clean shutdown"), "{log}");
}

#[test]
fn durable_mode_acknowledges_pipelined_produces_and_keeps_them_across_sigkill() {
    let mut broker = Broker::start_with(BrokerOptions::default().prop("log.durable", "true"));
    create_topic(&broker, "durable", 2, &[]);
    // Many requests in flight per connection: they share fsyncs and are answered in order.
    let producer = producer(
        &broker,
        &[
            ("acks", "all"),
            ("linger.ms", "0"),
            ("batch.num.messages", "10"),
        ],
    );
    let records: Vec<_> = (0..2000)
        .map(|i| (None, format!("durable-{i}").into_bytes()))
        .collect();
    let acks = produce_all(&producer, "durable", &records, None);
    let mut per_partition: std::collections::HashMap<i32, Vec<i64>> =
        std::collections::HashMap::new();
    for (p, o) in &acks {
        per_partition.entry(*p).or_default().push(*o);
    }
    for offsets in per_partition.values() {
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..offsets.len() as i64).collect::<Vec<_>>(),
            "dense offsets per partition"
        );
    }
    drop(producer);
    broker.kill();
    broker.restart();
    let consumer = assigned_consumer(&broker, "durable", &[0, 1], Offset::Beginning);
    let got = consume_n(&consumer, records.len(), Duration::from_secs(60));
    assert_eq!(got.len(), records.len());
}
