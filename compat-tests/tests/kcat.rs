//! kcat (librdkafka's command-line client, from Debian) against the real binary.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

#[test]
fn kcat_lists_produces_and_consumes() {
    let broker = Broker::start_with(BrokerOptions::default().prop("num.partitions", 2));
    let kcat = compat_tests::kcat();

    let mut p = Command::new(&kcat)
        .args([
            "-b",
            &broker.bootstrap(),
            "-P",
            "-t",
            "kcat-topic",
            "-K",
            ":",
            "-p",
            "0",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let stdin = p.stdin.as_mut().unwrap();
        for i in 0..50 {
            writeln!(stdin, "k{i}:value {i}").unwrap();
        }
    }
    assert!(p.wait().unwrap().success());

    let (status, out, err) = compat_tests::run_with_timeout(
        Command::new(&kcat).args(["-b", &broker.bootstrap(), "-L", "-t", "kcat-topic"]),
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(status.success(), "{err}");
    assert!(
        out.contains("topic \"kcat-topic\" with 2 partitions"),
        "{out}"
    );
    assert!(out.contains("broker 1 at 127.0.0.1:"), "{out}");

    let (status, out, err) = compat_tests::run_with_timeout(
        Command::new(&kcat).args([
            "-b",
            &broker.bootstrap(),
            "-C",
            "-t",
            "kcat-topic",
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%k=%s@%o\n",
        ]),
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(status.success(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 50, "{out}");
    assert_eq!(lines[0], "k0=value 0@0");
    assert_eq!(lines[49], "k49=value 49@49");
}
