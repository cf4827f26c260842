//! Kafka's own Java client (4.4, from Maven Central) against the real binary: the programs of
//! `compat-tests/java`, each run as a child process that exits non-zero with a message when a
//! check fails.

mod common;

use std::time::Duration;

use common::*;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, DescribeTransactionsRequest, DescribeTransactionsResponse,
};
use kafka_protocol::protocol::StrBytes;

fn run_java(bootstrap: &str, nodes: &[&Broker], class: &str, args: &[&str]) -> String {
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = compat_tests::kafka_java::java_client(class, logs.path());
    cmd.arg(bootstrap).args(args);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(180)).unwrap();
    if !status.success() {
        let client_log =
            std::fs::read_to_string(logs.path().join("server.log")).unwrap_or_default();
        let mut broker_logs = String::new();
        for (i, node) in nodes.iter().enumerate() {
            let lines = node.log_lines();
            let tail = lines[lines.len().saturating_sub(100)..].join("\n");
            broker_logs.push_str(&format!("--- node {}:\n{tail}\n", i + 1));
        }
        panic!("{class} failed ({status}):\nstdout:\n{out}\nstderr:\n{err}\nclient log:\n{client_log}\nbroker logs:\n{broker_logs}");
    }
    out
}

/// The producer epoch the coordinator holds for `transactional_id`.
fn producer_epoch(broker: &Broker, transactional_id: &str) -> i16 {
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![kafka_protocol::messages::TransactionalId(
        StrBytes::from_string(transactional_id.to_string()),
    )];
    let resp: DescribeTransactionsResponse =
        raw_request(broker, ApiKey::DescribeTransactions, 0, &req);
    assert_eq!(resp.transaction_states[0].error_code, 0, "{resp:?}");
    resp.transaction_states[0].producer_epoch
}

/// A new cluster finalizes transaction.version 2, as Kafka 4.4 formats one; Kafka's Java
/// producer then uses it (KIP-890 part 2): the partitions join each transaction through the
/// produce, offsets go straight to the group coordinator, and every commit and abort bumps the
/// producer epoch. Three transactions (commit, abort, commit) leave epoch 3; a read_committed
/// consumer sees the committed records only.
#[test]
fn kafkas_java_producer_runs_transactions_with_transaction_version_2() {
    let broker = Broker::start();
    let versions: ApiVersionsResponse =
        raw_request(&broker, ApiKey::ApiVersions, 3, &api_versions_request());
    let tv = versions
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| f.max_version_level);
    assert_eq!(tv, Some(2), "{:?}", versions.finalized_features);
    let out = run_java(
        &broker.bootstrap(),
        &[&broker],
        "TransactionalProducer",
        &["tv2", "tv2-app", "tv2-group"],
    );
    assert!(out.contains("committed 10"), "{out}");
    assert_eq!(
        producer_epoch(&broker, "tv2-app"),
        3,
        "an epoch bump per transaction"
    );
}

/// The same on three nodes, where the transaction's coordinator, the group's and the
/// partition's leader are different brokers for some of the ids: a leader asks the coordinator
/// to add its partition (AddPartitionsToTxn v4 without verify_only) before it appends.
#[test]
fn kafkas_java_producer_runs_transaction_version_2_across_three_brokers() {
    let cluster = compat_tests::Cluster::start(3);
    let nodes: Vec<&Broker> = cluster.nodes.iter().collect();
    for app in ["spread-a", "spread-b", "spread-c"] {
        let out = run_java(
            &cluster.bootstrap(),
            &nodes,
            "TransactionalProducer",
            &[app, &format!("{app}-txn"), &format!("{app}-group")],
        );
        assert!(out.contains("committed 10"), "{out}");
    }
}

/// INVALID_RECORD is not retriable: Kafka's Java producer fails a keyless record sent to a
/// compacted topic at once (no retry, long before its two-minute delivery timeout) and goes on
/// to write the next record.
#[test]
fn kafkas_java_producer_fails_fast_on_invalid_record() {
    let broker = Broker::start();
    let out = run_java(
        &broker.bootstrap(),
        &[&broker],
        "InvalidRecordFailsFast",
        &["compacted-keyless"],
    );
    assert!(out.contains("failed fast: InvalidRecordException"), "{out}");
    assert!(out.contains("retries 0"), "{out}");
    assert!(out.contains("ok"), "{out}");
}
