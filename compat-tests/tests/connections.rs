//! Connection limits: idle connections are reaped after `connections.max.idle.ms`, and
//! connections beyond `max.connections` are refused while the others keep working.

mod common;

use std::io::Read;
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
fn connections_beyond_max_connections_are_refused() {
    let broker = Broker::start_with(BrokerOptions::default().prop("max.connections", 3));
    // Let the harness's readiness probe connection close first: it counts while open.
    std::thread::sleep(Duration::from_millis(300));
    let held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(broker.bootstrap()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(broker.bootstrap()).unwrap();
    assert!(
        closed_within(&mut extra, Duration::from_secs(5)),
        "a fourth connection was accepted"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    create_topic(&broker, "after-cap", 1, &[]);
    let log = broker.log_lines().join("\n");
    assert!(
        log.contains("max.connections=3"),
        "the refusal is logged with the limit:\n{log}"
    );
}
