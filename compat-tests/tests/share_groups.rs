//! Share groups (KIP-932) through confluent-kafka's ShareConsumer (librdkafka's share
//! consumer, from PyPI) against the real binary: compat-tests/python/share_groups.py runs each
//! scenario and exits non-zero with a message when a check fails.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// A broker whose groups may hold records for as little as a second, so that lock expiry is
/// seen within a test.
fn broker() -> Broker {
    Broker::start_with(
        BrokerOptions::default().prop("group.share.min.record.lock.duration.ms", 1000),
    )
}

fn scenario(broker: &Broker, name: &str) -> String {
    let path = compat_tests::workspace_root().join("compat-tests/python/share_groups.py");
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&path).arg(broker.bootstrap()).arg(name);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(180)).unwrap();
    if !status.success() {
        let log = broker.log_lines();
        let tail = log[log.len().saturating_sub(200)..].join("\n");
        panic!("share_groups.py {name} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}\nbroker log (last 200 lines):\n{tail}");
    }
    out
}

#[test]
fn two_share_consumers_split_one_partition_and_no_accepted_record_reaches_both() {
    scenario(&broker(), "two-consumers");
}

#[test]
fn records_of_a_killed_member_are_redelivered_after_their_lock() {
    scenario(&broker(), "killed-member");
}

#[test]
fn a_record_released_every_time_is_delivered_delivery_limit_times() {
    scenario(&broker(), "delivery-limit");
}

#[test]
fn a_rejected_record_is_never_redelivered() {
    scenario(&broker(), "reject");
}

#[test]
fn read_committed_share_groups_skip_aborted_transactions() {
    scenario(&broker(), "read-committed");
}

#[test]
fn acknowledgements_survive_a_broker_crash_and_held_records_come_back() {
    let mut broker = broker();
    scenario(&broker, "before-restart");
    broker.kill();
    broker.restart();
    scenario(&broker, "after-restart");
}

#[test]
fn archived_records_are_dead_lettered_once_with_their_context() {
    scenario(&broker(), "dlq");
}

#[test]
fn dead_letters_are_written_once_across_a_broker_crash() {
    let mut broker = broker();
    scenario(&broker, "dlq-before-restart");
    broker.kill();
    broker.restart();
    scenario(&broker, "dlq-after-restart");
}
