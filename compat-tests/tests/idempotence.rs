//! Idempotent producers against the real binary: responses lost in the network (a proxy that
//! cuts the connection right after forwarding a Produce) and a broker SIGKILL in the middle of
//! a stream, with librdkafka (the rdkafka crate) retrying. Every record must end up in the log
//! exactly once and in the order it was produced. A control run without idempotence shows
//! that the proxy really does make a plain producer write duplicates.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use compat_tests::proxy::DroppingProxy;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::topic_partition_list::Offset;

const PARTITIONS: i32 = 3;

/// A broker that advertises the proxy, and the proxy forwarding to it.
fn broker_behind_proxy(every: u64, max_drops: u64) -> (Broker, DroppingProxy) {
    let mut proxy = DroppingProxy::bind(every, max_drops);
    let broker = Broker::start_with(
        BrokerOptions::default()
            .prop(
                "advertised.listeners",
                format!("PLAINTEXT://127.0.0.1:{}", proxy.port),
            )
            .prop("num.partitions", PARTITIONS),
    );
    proxy.forward_to(broker.port);
    (broker, proxy)
}

fn producer_via(bootstrap: &str, idempotent: bool) -> FutureProducer {
    rdkafka::config::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", idempotent.to_string())
        .set("acks", "all")
        .set("linger.ms", "2")
        .set("batch.num.messages", "20")
        .set("message.timeout.ms", "120000")
        .set("retry.backoff.ms", "20")
        .set("reconnect.backoff.ms", "20")
        .set("reconnect.backoff.max.ms", "200")
        .create()
        .expect("producer")
}

/// Sends `n` records per partition, value `"<partition>:<i>"`, and waits for every delivery.
fn send_all(producer: &FutureProducer, topic: &str, n: usize) {
    let values: Vec<(i32, String)> = (0..n)
        .flat_map(|i| (0..PARTITIONS).map(move |p| (p, format!("{p}:{i}"))))
        .collect();
    runtime().block_on(async {
        let mut pending = Vec::new();
        for (p, value) in &values {
            let rec: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic)
                .partition(*p)
                .payload(value.as_bytes());
            pending.push(producer.send(rec, Duration::from_secs(120)));
        }
        for f in pending {
            f.await
                .unwrap_or_else(|(e, _)| panic!("delivery failed: {e}"));
        }
    });
}

/// Every value of every partition, in log order.
fn read_back(broker: &Broker, topic: &str, at_least: usize) -> HashMap<i32, Vec<String>> {
    let partitions: Vec<i32> = (0..PARTITIONS).collect();
    let consumer = assigned_consumer(broker, topic, &partitions, Offset::Beginning);
    let mut out: HashMap<i32, Vec<String>> = HashMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut idle_since = std::time::Instant::now();
    loop {
        let total: usize = out.values().map(Vec::len).sum();
        // Past the expected count, wait a little longer to see any extra (duplicate) record.
        if total >= at_least && idle_since.elapsed() > Duration::from_secs(2) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "read {total} of {at_least} records"
        );
        if let Some(r) = consumer.poll(Duration::from_millis(100)) {
            let m = r.unwrap_or_else(|e| panic!("consume error: {e}"));
            let g = Got::from(&m);
            out.entry(g.partition)
                .or_default()
                .push(String::from_utf8(g.value).unwrap());
            idle_since = std::time::Instant::now();
        }
    }
    out
}

fn assert_exactly_once_in_order(got: &HashMap<i32, Vec<String>>, n: usize) {
    for p in 0..PARTITIONS {
        let values = got.get(&p).cloned().unwrap_or_default();
        let expected: Vec<String> = (0..n).map(|i| format!("{p}:{i}")).collect();
        if values != expected {
            let dups = values.len() as i64 - expected.len() as i64;
            let first_bad = values
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(expected.len().min(values.len()));
            panic!(
                "partition {p}: {} records for {n} produced ({dups:+}); first difference at {first_bad}: {:?}",
                values.len(),
                values.get(first_bad)
            );
        }
    }
}

fn count_duplicates(got: &HashMap<i32, Vec<String>>) -> usize {
    got.values()
        .map(|v| {
            let mut seen = std::collections::HashSet::new();
            v.iter().filter(|x| !seen.insert(*x)).count()
        })
        .sum()
}

#[test]
fn idempotent_producer_with_lost_responses_writes_every_record_once_in_order() {
    let (broker, proxy) = broker_behind_proxy(7, 25);
    create_topic(&broker, "idem-lost", PARTITIONS, &[]);
    let producer = producer_via(&proxy.bootstrap(), true);
    let n = 1500;
    send_all(&producer, "idem-lost", n);
    assert!(
        proxy.drops() >= 5,
        "the proxy cut only {} connections ({} produces)",
        proxy.drops(),
        proxy.produces()
    );
    let got = read_back(&broker, "idem-lost", n * PARTITIONS as usize);
    assert_exactly_once_in_order(&got, n);
}

#[test]
fn without_idempotence_the_same_lost_responses_duplicate_records() {
    // The control for the test above: the proxy does lose acknowledged writes.
    let (broker, proxy) = broker_behind_proxy(7, 10);
    create_topic(&broker, "idem-control", PARTITIONS, &[]);
    let producer = producer_via(&proxy.bootstrap(), false);
    let n = 600;
    send_all(&producer, "idem-control", n);
    assert!(proxy.drops() > 0);
    let got = read_back(&broker, "idem-control", n * PARTITIONS as usize);
    assert!(
        count_duplicates(&got) > 0,
        "a plain producer whose responses are lost must have written duplicates"
    );
}

#[test]
fn idempotent_producer_across_a_broker_sigkill_writes_every_record_once_in_order() {
    let mut broker =
        Broker::start_with(BrokerOptions::default().prop("num.partitions", PARTITIONS));
    create_topic(&broker, "idem-crash", PARTITIONS, &[]);
    let bootstrap = broker.bootstrap();
    let n = 3000;
    let sender = std::thread::spawn(move || {
        let producer = producer_via(&bootstrap, true);
        send_all(&producer, "idem-crash", n);
    });
    // Kill the broker while the producer has requests in flight, then bring it back.
    let probe = assigned_consumer(&broker, "idem-crash", &[0], Offset::Beginning);
    let started = std::time::Instant::now();
    while probe.poll(Duration::from_millis(50)).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing was produced"
        );
    }
    drop(probe);
    broker.kill();
    std::thread::sleep(Duration::from_millis(300));
    broker.restart();
    sender.join().expect("every record was acknowledged");
    let got = read_back(&broker, "idem-crash", n * PARTITIONS as usize);
    assert_exactly_once_in_order(&got, n);
}
