//! Client quotas (KIP-13, KIP-55, KIP-219) met by real clients: librdkafka producers and
//! consumers (confluent-kafka, compat-tests/python/quotas.py) against one `samsa` node, the
//! quotas set with AlterClientQuotas on the wire (the client libraries do not wrap it).
//! - A producer offered three times its `producer_byte_rate` achieves the quota within 10%
//!   (delivery reports over a span after a warm-up) and sees throttle events (`throttle_cb`).
//! - A consumer over its `consumer_byte_rate` reads at the quota within 10%, throttled.
//! - An unquoted producer on the same node keeps its throughput within 10% of running alone
//!   while the quoted one is held back (a fixed target rate the machine sustains with room).
//! - A client with a small `request_percentage` is throttled and served fewer requests than an
//!   unquoted one beside it.
//!
//! By default the node measures quotas over `quota.window.num=3` windows of 1 s, so that the
//! first burst (Kafka lets `quota.window.num - 1` windows' worth of bytes go at once) and the
//! sawtooth of the sliding window settle within a few seconds: each rate is measured from 4 s
//! to 20 s (over 10 s the sawtooth's phase alone moved a producer's figure by 10%). `QUOTA_TEST_LONG=1` runs with Kafka's default windows (11 of 1 s) and measures
//! from 15 s to 75 s instead (not `SAMSA_...`: the broker reads every `SAMSA_*` variable as a
//! config key and refuses unknown ones). The figures are printed (`--nocapture`).

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::*;
use rdkafka::producer::FutureProducer;
use serde_json::{json, Value};

/// The tests measure throughput on a shared machine: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Every quota here, in bytes per second.
const QUOTA_BPS: f64 = 1_000_000.0;
/// The unquoted producer's fixed offer: what a debug build serves here with room to spare.
const FREE_BPS: f64 = 2_000_000.0;
const RECORD_BYTES: usize = 10_000;

/// The quota windows and the span measured.
struct Settings {
    window_num: u32,
    warmup_s: f64,
    seconds: f64,
}

fn settings() -> Settings {
    if std::env::var("QUOTA_TEST_LONG").is_ok_and(|v| v == "1") {
        Settings {
            window_num: 11,
            warmup_s: 15.0,
            seconds: 75.0,
        }
    } else {
        Settings {
            window_num: 3,
            warmup_s: 4.0,
            seconds: 20.0,
        }
    }
}

fn start(s: &Settings) -> Broker {
    Broker::start_with(BrokerOptions::default().prop("quota.window.num", s.window_num))
}

/// Sets `key` of the client id's entity and waits until the node's image has it.
fn set_client_quota(broker: &Broker, client_id: &str, key: &str, value: f64) {
    alter_client_quotas(
        broker,
        &[("client-id", Some(client_id))],
        &[(key, Some(value))],
    );
    let want = (
        vec![("client-id".to_string(), Some(client_id.to_string()))],
        vec![(key.to_string(), value)],
    );
    wait_until_none("the quota is described", Duration::from_secs(10), || {
        let got = describe_client_quotas(broker);
        (!got.contains(&want)).then(|| format!("{got:?}"))
    });
}

/// A producer client of the script's plan.
fn producer_spec(s: &Settings, client_id: &str, topic: &str, rate: Option<f64>) -> Value {
    json!({
        "kind": "produce", "client_id": client_id, "topic": topic, "rate": rate,
        "record_bytes": RECORD_BYTES, "seconds": s.seconds, "warmup": s.warmup_s,
        // Requests of at most about a tenth of the quota's second, for a smooth measure.
        "config": {"batch.size": 131072, "linger.ms": 5, "acks": "1"},
    })
}

fn rate(r: &Value) -> f64 {
    r["rate"].as_f64().unwrap()
}

fn throttles(r: &Value) -> u64 {
    r["throttles"].as_u64().unwrap()
}

fn within(achieved: f64, target: f64, share: f64) -> bool {
    (achieved - target).abs() <= share * target
}

#[test]
fn a_producer_over_its_byte_rate_gets_the_quota_and_an_unquoted_producer_keeps_its_pace() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = settings();
    let broker = start(&s);
    create_topic(&broker, "quoted", 1, &[]);
    create_topic(&broker, "free", 1, &[]);

    // The unquoted producer alone (its fixed offer needs no long span).
    let mut alone = producer_spec(&s, "free-producer", "free", Some(FREE_BPS));
    alone["seconds"] = json!(8.0);
    alone["warmup"] = json!(2.0);
    let alone = quota_clients(&broker.bootstrap(), &json!([alone]));
    let alone_bps = rate(&alone[0]);

    set_client_quota(&broker, "quota-producer", "producer_byte_rate", QUOTA_BPS);
    let together = quota_clients(
        &broker.bootstrap(),
        &json!([
            producer_spec(&s, "quota-producer", "quoted", Some(3.0 * QUOTA_BPS)),
            producer_spec(&s, "free-producer", "free", Some(FREE_BPS)),
        ]),
    );
    let (quoted, free) = (&together[0], &together[1]);
    println!(
        "quota.window.num={} measured {}-{} s: producer offered {:.0} B/s under \
         producer_byte_rate={QUOTA_BPS:.0} achieved {:.0} B/s ({:.3}x), {} throttle events \
         ({} ms); unquoted producer at {FREE_BPS:.0} B/s alone {alone_bps:.0} B/s, beside it \
         {:.0} B/s ({:.3}x), {} throttle events",
        s.window_num,
        s.warmup_s,
        s.seconds,
        3.0 * QUOTA_BPS,
        rate(quoted),
        rate(quoted) / QUOTA_BPS,
        throttles(quoted),
        quoted["throttle_ms_total"],
        rate(free),
        rate(free) / alone_bps,
        throttles(free),
    );
    assert!(
        within(rate(quoted), QUOTA_BPS, 0.10),
        "the quoted producer achieved {:.0} B/s, not {QUOTA_BPS} +-10%: {quoted}",
        rate(quoted)
    );
    assert!(throttles(quoted) > 0, "no throttle event: {quoted}");
    assert!(
        within(alone_bps, FREE_BPS, 0.10),
        "the unquoted producer alone did not keep its offer of {FREE_BPS} B/s: {}",
        alone[0]
    );
    assert!(
        within(rate(free), alone_bps, 0.10),
        "the unquoted producer went from {alone_bps:.0} B/s alone to {:.0} B/s: {free}",
        rate(free)
    );
    assert_eq!(
        throttles(free),
        0,
        "the unquoted producer was throttled: {free}"
    );
}

#[test]
fn a_consumer_over_its_byte_rate_reads_at_the_quota() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = settings();
    let broker = start(&s);
    create_topic(&broker, "stored", 1, &[]);
    // Half again what the quota lets it read in the whole run, produced unquoted first.
    let records =
        (1.5 * QUOTA_BPS * (s.seconds + f64::from(s.window_num)) / RECORD_BYTES as f64) as usize;
    // Batches (and so fetches, which return whole batches) of about a tenth of the quota's
    // second, as for the producer: a throttled fetch is answered empty and read again whole, so
    // coarse fetches waste part of the quota (see the module's doc).
    let producer: FutureProducer = producer(&broker, &[("batch.size", "131072")]);
    let values: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..records)
        .map(|i| (None, vec![b'a' + (i % 26) as u8; RECORD_BYTES]))
        .collect();
    for chunk in values.chunks(500) {
        produce_all(&producer, "stored", chunk, Some(0));
    }
    drop(producer);

    set_client_quota(&broker, "quota-consumer", "consumer_byte_rate", QUOTA_BPS);
    let got = quota_clients(
        &broker.bootstrap(),
        &json!([{
            "kind": "consume", "client_id": "quota-consumer", "topic": "stored",
            "record_bytes": RECORD_BYTES, "seconds": s.seconds, "warmup": s.warmup_s,
            "config": {"max.partition.fetch.bytes": 131072},
        }]),
    );
    let c = &got[0];
    println!(
        "quota.window.num={} measured {}-{} s: consumer of {} stored bytes under \
         consumer_byte_rate={QUOTA_BPS:.0} achieved {:.0} B/s ({:.3}x), {} records in all, {} \
         throttle events ({} ms)",
        s.window_num,
        s.warmup_s,
        s.seconds,
        records * RECORD_BYTES,
        rate(c),
        rate(c) / QUOTA_BPS,
        c["records_total"],
        throttles(c),
        c["throttle_ms_total"],
    );
    assert!(
        (c["records_total"].as_u64().unwrap() as usize) < records,
        "the consumer read everything stored: the offer was not above the quota: {c}"
    );
    // Never above the quota by more than 10%. Below it, a consumer loses a round trip per
    // throttle (the empty answer, the wait, the fetch again), which a loaded machine lengthens:
    // two copies of this test side by side measured 0.897x and 1.022x. The short run allows
    // 20% below; the long run (QUOTA_TEST_LONG=1, 60 s measured) holds 10% both ways.
    let below = if s.window_num == 3 { 0.20 } else { 0.10 };
    assert!(
        rate(c) <= QUOTA_BPS * 1.10 && rate(c) >= QUOTA_BPS * (1.0 - below),
        "the consumer achieved {:.0} B/s, not within {QUOTA_BPS} -{below}/+0.10: {c}",
        rate(c)
    );
    assert!(throttles(c) > 0, "no throttle event: {c}");
}

#[test]
fn a_small_request_percentage_is_throttled_and_served_fewer_requests() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = settings();
    let broker = start(&s);
    create_topic(&broker, "requests", 1, &[]);
    set_client_quota(&broker, "quota-requests", "request_percentage", 1.0);
    // One record per Produce and one Produce at a time, as fast as answers come: each client's
    // delivered records are the requests it was served.
    let spec = |client_id: &str| {
        json!({
            "kind": "produce", "client_id": client_id, "topic": "requests", "rate": null,
            "record_bytes": 100, "seconds": 8.0, "warmup": 2.0,
            "config": {"linger.ms": 0, "batch.num.messages": 1, "acks": "1",
                       "max.in.flight.requests.per.connection": 1},
        })
    };
    let got = quota_clients(
        &broker.bootstrap(),
        &json!([spec("quota-requests"), spec("free-requests")]),
    );
    let (quoted, free) = (&got[0], &got[1]);
    let served = |r: &Value| r["records"].as_u64().unwrap();
    println!(
        "request_percentage=1: the quoted client was served {} produce requests in 6 s, {} \
         throttle events ({} ms); the unquoted one beside it {}, {} throttle events",
        served(quoted),
        throttles(quoted),
        quoted["throttle_ms_total"],
        served(free),
        throttles(free),
    );
    assert!(throttles(quoted) > 0, "no throttle event: {quoted}");
    assert_eq!(
        throttles(free),
        0,
        "the unquoted client was throttled: {free}"
    );
    assert!(
        served(quoted) * 2 < served(free),
        "the quoted client was served {} requests, the unquoted {}",
        served(quoted),
        served(free)
    );
}
