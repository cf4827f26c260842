//! kafka-python and confluent-kafka (from PyPI, installed into .venv by scripts/test) against
//! the real binary. Each Python script exits non-zero with a message when a check fails.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

fn run_script(broker: &Broker, script: &str, args: &[&str]) {
    let path = compat_tests::workspace_root()
        .join("compat-tests/python")
        .join(script);
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&path).arg(broker.bootstrap()).args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(180)).unwrap();
    if !status.success() {
        let log = broker.log_lines();
        let tail = log[log.len().saturating_sub(3000)..].join("\n");
        panic!("{script} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}\nbroker log (last 200 lines):\n{tail}");
    }
}

#[test]
fn kafka_python_produces_consumes_and_administers() {
    let broker = Broker::start();
    run_script(&broker, "kafka_python_basic.py", &[]);
}

#[test]
fn confluent_kafka_produces_consumes_and_administers() {
    let broker = Broker::start();
    run_script(&broker, "confluent_kafka_basic.py", &[]);
}

#[test]
fn confluent_kafka_transactions_commit_abort_fence_and_send_offsets() {
    let broker = Broker::start();
    run_script(&broker, "confluent_kafka_txn.py", &[]);
}

/// INVALID_RECORD is not retriable: librdkafka reports a keyless record sent to a compacted
/// topic as a permanent error at once, and writes the next record.
#[test]
fn confluent_kafka_fails_fast_on_invalid_record() {
    let broker = Broker::start();
    run_script(&broker, "confluent_kafka_invalid_record.py", &[]);
}

#[test]
fn kafka_python_administers_consumer_groups() {
    let broker = Broker::start();
    run_script(&broker, "kafka_python_group_admin.py", &[]);
}

#[test]
fn kafka_python_administers_the_cluster_of_one_node() {
    let broker = Broker::start_with(BrokerOptions::default().prop("node.id", 7));
    run_script(&broker, "kafka_python_cluster_admin.py", &["7"]);
}

#[test]
fn kafka_python_sees_null_where_kafka_sends_null_and_kafkas_synonyms() {
    let broker = Broker::start_with(BrokerOptions::default().prop("log.retention.hours", 24));
    run_script(&broker, "kafka_python_wire_nulls.py", &[]);
}
