//! The I/O engine choice: where io_uring cannot be created (a seccomp profile, an old kernel,
//! gVisor), `auto` falls back to epoll with one clear log line and serves as usual; asking for
//! `uring` explicitly there fails at start with a message that says why.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;
use rdkafka::topic_partition_list::Offset;

fn without_io_uring() -> Option<PathBuf> {
    Some(PathBuf::from(env!("CARGO_BIN_EXE_without_io_uring")))
}

#[test]
fn auto_falls_back_to_epoll_where_io_uring_is_refused_and_serves() {
    let broker = Broker::start_with(
        BrokerOptions {
            wrapper: without_io_uring(),
            ..Default::default()
        }
        .prop("io.engine", "auto"),
    );
    let log = broker.log_lines().join("\n");
    let fallbacks: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("io_uring is unavailable"))
        .collect();
    assert_eq!(
        fallbacks.len(),
        1,
        "one clear line about the fallback:\n{log}"
    );
    assert!(fallbacks[0].contains("epoll"), "{}", fallbacks[0]);
    assert!(log.contains("engine=epoll"), "{log}");
    create_topic(&broker, "fallback", 1, &[]);
    let producer = producer(&broker, &[]);
    produce_all(
        &producer,
        "fallback",
        &[(None, b"served by epoll".to_vec())],
        Some(0),
    );
    let consumer = assigned_consumer(&broker, "fallback", &[0], Offset::Beginning);
    assert_eq!(
        consume_n(&consumer, 1, Duration::from_secs(20))[0].value,
        b"served by epoll"
    );
}

#[test]
fn explicit_uring_where_it_is_refused_fails_at_start_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_without_io_uring"))
        .arg(compat_tests::samsa_bin())
        .arg(format!(
            "--listeners=PLAINTEXT://127.0.0.1:{}",
            compat_tests::free_port()
        ))
        .arg(format!("--log.dirs={}", dir.path().join("data").display()))
        .arg("--metrics.listener=")
        .arg("--console.listener=")
        .arg("--io-engine=uring")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("io.engine=uring") && stderr.contains("unavailable"),
        "{stderr}"
    );
}
