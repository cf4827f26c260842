//! Connection limits: idle connections are reaped after `connections.max.idle.ms`, and
//! connections beyond `max.connections` are refused while the others keep working.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 8];
    matches!(s.read(&mut buf), Ok(0))
        || matches!(s.read(&mut buf), Err(ref e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

#[test]
fn idle_connections_are_closed_after_connections_max_idle_ms() {
    let broker = Broker::start_with(BrokerOptions::default().prop("connections.max.idle.ms", 300));
    let mut s = TcpStream::connect(broker.bootstrap()).unwrap();
    let start = Instant::now();
    assert!(
        closed_within(&mut s, Duration::from_secs(10)),
        "idle connection was not closed"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(250),
        "closed too early: {:?}",
        start.elapsed()
    );
    // A client that keeps talking is not affected.
    create_topic(&broker, "idle", 1, &[]);
    let producer = producer(&broker, &[]);
    for i in 0..5 {
        produce_all(
            &producer,
            "idle",
            &[(None, format!("{i}").into_bytes())],
            Some(0),
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn connections_beyond_max_connections_wait_for_one_to_close() {
    // Kafka's acceptor waits for a slot: the fourth connection is held, unanswered and open,
    // until one of the first three closes, and is then served.
    let broker = Broker::start_with(BrokerOptions::default().prop("max.connections", 3));
    // Let the harness's readiness probe connection close first: it counts while open.
    std::thread::sleep(Duration::from_millis(300));
    let mut held: Vec<TcpStream> = (0..3).map(|_| connect(&broker)).collect();
    for s in &mut held {
        assert!(api_versions_answered(s), "one of the first three is served");
    }
    let mut extra = connect(&broker);
    send_api_versions(&mut extra);
    extra
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut buf = [0u8; 4];
    match extra.read(&mut buf) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) => {}
        other => panic!("the fourth connection was not held: {other:?}"),
    }
    drop(held.pop());
    extra
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let answer: kafka_protocol::messages::ApiVersionsResponse =
        read_response(&mut extra, kafka_protocol::messages::ApiKey::ApiVersions, 3)
            .expect("the held connection is served once a slot frees");
    assert_eq!(answer.error_code, 0);
    assert!(
        throttled(&broker, "max_connections") >= 1.0,
        "the wait is counted:\n{}",
        broker.scrape_metrics().unwrap()
    );
}

fn connect(broker: &Broker) -> TcpStream {
    let s = TcpStream::connect(broker.bootstrap()).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn send_api_versions(s: &mut TcpStream) {
    let frame = encode_request(
        kafka_protocol::messages::ApiKey::ApiVersions,
        3,
        &api_versions_request(),
    )
    .unwrap();
    // A broker may have closed it already: the read says so.
    let _ = s.write_all(&frame);
}

/// Sends ApiVersions and reads the answer (within 10 s): whether it came.
fn api_versions_answered(s: &mut TcpStream) -> bool {
    send_api_versions(s);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    read_response::<kafka_protocol::messages::ApiVersionsResponse>(
        s,
        kafka_protocol::messages::ApiKey::ApiVersions,
        3,
    )
    .is_ok_and(|r| r.error_code == 0)
}

/// What became of connections that each sent ApiVersions: (answered, closed by the broker).
/// Panics on one that is neither within 10 s.
fn answered_and_closed(conns: &mut [TcpStream]) -> (usize, usize) {
    let (mut answered, mut closed) = (0, 0);
    for s in conns {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut size = [0u8; 4];
        match s.read_exact(&mut size) {
            Ok(()) => answered += 1,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                closed += 1
            }
            Err(e) => panic!("a connection neither answered nor closed: {e}"),
        }
    }
    (answered, closed)
}

fn counter(broker: &Broker, name: &str, reason: &str) -> f64 {
    broker
        .scrape_metrics()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(name) && l.contains(&format!("reason=\"{reason}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn throttled(broker: &Broker, reason: &str) -> f64 {
    counter(broker, "samsa_connections_throttled_total", reason)
}

fn rejected(broker: &Broker, reason: &str) -> f64 {
    counter(broker, "samsa_connections_rejected_total", reason)
}

/// Opens `n` connections from 127.0.0.1 and checks the broker serves the first `serves` and
/// closes the next one at once.
fn first_served_next_closed(broker: &Broker, serves: usize) -> Vec<TcpStream> {
    let mut held: Vec<TcpStream> = (0..serves).map(|_| connect(broker)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = connect(broker);
    assert!(
        closed_within(&mut extra, Duration::from_secs(5)),
        "connection {} from 127.0.0.1 was not closed",
        serves + 1
    );
    for (i, s) in held.iter_mut().enumerate() {
        assert!(api_versions_answered(s), "connection {} is served", i + 1);
    }
    held
}

#[test]
fn connections_beyond_max_connections_per_ip_are_closed_while_the_first_serve() {
    let broker = Broker::start_with(BrokerOptions::default().prop("max.connections.per.ip", 3));
    std::thread::sleep(Duration::from_millis(300));
    let held = first_served_next_closed(&broker, 3);
    let log = broker.log_lines().join("\n");
    assert!(
        log.contains(
            "Rejected connection from /127.0.0.1, address already has the configured maximum of 3 connections."
        ),
        "the refusal is logged as Kafka logs it:\n{log}"
    );
    assert!(rejected(&broker, "max_connections_per_ip") >= 1.0);
    drop(held);
    // Closed connections give their places back.
    std::thread::sleep(Duration::from_millis(300));
    drop(first_served_next_closed(&broker, 3));
}

#[test]
fn an_override_gives_its_address_its_own_maximum() {
    let broker = Broker::start_with(
        BrokerOptions::default()
            .prop("max.connections.per.ip", 3)
            .prop("max.connections.per.ip.overrides", "127.0.0.1:5"),
    );
    std::thread::sleep(Duration::from_millis(300));
    drop(first_served_next_closed(&broker, 5));
}

#[test]
fn max_connections_per_ip_changes_dynamically_and_bad_overrides_are_refused() {
    let broker = Broker::start();
    const BROKER: i8 = 4;
    let (code, message) = set_configs(
        &broker,
        BROKER,
        "",
        &[("max.connections.per.ip.overrides", "127.0.0.1")],
    );
    assert_eq!(code, 42, "INVALID_REQUEST: {message}");
    assert!(
        message.contains("max.connections.per.ip.overrides"),
        "{message}"
    );
    let (code, message) = set_configs(&broker, BROKER, "", &[("max.connections.per.ip", "0")]);
    assert_eq!(code, 42, "INVALID_REQUEST: {message}");
    assert!(message.contains("can be set to zero only if"), "{message}");
    let (code, message) = set_configs(&broker, BROKER, "", &[("max.connections.per.ip", "2")]);
    assert_eq!(code, 0, "{message}");
    std::thread::sleep(Duration::from_millis(300));
    drop(first_served_next_closed(&broker, 2));
}

/// AlterClientQuotas of one `ip` entity's `connection_creation_rate`.
fn set_ip_connection_rate(broker: &Broker, ip: &str, rate: f64) {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
    use kafka_protocol::protocol::StrBytes;
    let mut entity = EntityData::default();
    entity.entity_type = StrBytes::from_static_str("ip");
    entity.entity_name = Some(StrBytes::from_string(ip.to_string()));
    let mut op = OpData::default();
    op.key = StrBytes::from_static_str("connection_creation_rate");
    op.value = rate;
    let mut entry = EntryData::default();
    entry.entity = vec![entity];
    entry.ops = vec![op];
    let mut req = AlterClientQuotasRequest::default();
    req.entries = vec![entry];
    let resp: AlterClientQuotasResponse = raw_request(
        broker,
        kafka_protocol::messages::ApiKey::AlterClientQuotas,
        1,
        &req,
    );
    let e = &resp.entries[0];
    assert_eq!(e.error_code, 0, "{:?}", e.error_message);
}

/// Opens `n` connections at once, each sending ApiVersions: (answered, closed).
fn burst(broker: &Broker, n: usize) -> (usize, usize) {
    let mut conns: Vec<TcpStream> = (0..n)
        .map(|_| {
            let mut s = connect(broker);
            send_api_versions(&mut s);
            s
        })
        .collect();
    answered_and_closed(&mut conns)
}

#[test]
fn an_ip_connection_rate_quota_closes_connections_beyond_it() {
    let broker = Broker::start();
    // Without a quota every connection is served.
    assert_eq!(burst(&broker, 30), (30, 0));
    // 2 per second, measured over Kafka's 10 s at the least: about 20 of a burst get in, and
    // the others are closed unserved after the throttle time.
    set_ip_connection_rate(&broker, "127.0.0.1", 2.0);
    let (answered, closed) = burst(&broker, 30);
    assert!(answered >= 1, "some connections are served");
    assert!(
        closed >= 1,
        "some connections are closed: {answered} answered"
    );
    assert!(throttled(&broker, "connection_creation_rate") >= closed as f64);
}
