//! The transaction coordinator on a real log directory, without sockets: commits and aborts
//! reach every partition as markers and read_committed readers see only committed data; a
//! transaction prepared but not completed before a crash is completed on restart; a
//! transaction past its timeout is aborted and its producer fenced; a new producer of the same
//! transactional id fences the old one; transactional ids and producer ids survive restarts;
//! and a transactional produce outside the transaction is refused (KIP-890).

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    produce_request, ApiKey, ProduceRequest, ProduceResponse, RequestHeader, RequestKind,
    TopicName, TransactionalId,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol::ResponseError;
use samsa_broker::broker::Broker;
use samsa_broker::config::BrokerConfig;
use samsa_broker::handlers::{self, Connection};
use samsa_broker::partition::Partition;
use samsa_broker::testing::JoinedBroker;
use samsa_broker::txn::state::{TxnError, TxnState};
use samsa_broker::txn::TRANSACTION_STATE_TOPIC;

fn open(dir: &std::path::Path) -> JoinedBroker {
    open_with(dir, &[])
}

/// A broker that has joined its cluster, with `__transaction_state` created.
fn open_with(dir: &std::path::Path, extra: &[(&str, &str)]) -> JoinedBroker {
    let mut flags = vec![
        ("log.dirs".to_string(), dir.display().to_string()),
        (
            "transaction.state.log.num.partitions".to_string(),
            "3".to_string(),
        ),
    ];
    for (k, v) in extra {
        flags.push((k.to_string(), v.to_string()));
    }
    let config = BrokerConfig::load(None, vec![], flags).unwrap();
    let broker = samsa_broker::testing::open_joined(config).unwrap();
    // As a client's FindCoordinator does.
    runtime()
        .block_on(samsa_broker::internal_topics::ensure(
            &broker.node,
            &broker.txn.state_topic_spec(),
        ))
        .unwrap();
    broker
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn partitions(list: &[(&str, i32)]) -> BTreeSet<(String, i32)> {
    list.iter().map(|(t, p)| (t.to_string(), *p)).collect()
}

fn partition(broker: &Broker, topic: &str, index: i32) -> Arc<Partition> {
    broker
        .node
        .topics
        .get(topic)
        .unwrap()
        .partition(index)
        .unwrap()
        .clone()
}

/// A transactional batch of `values` from `producer_id` at `epoch`, sequences from `seq`.
fn txn_batch(producer_id: i64, epoch: i16, seq: i32, values: &[&str]) -> Bytes {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Record {
            transactional: true,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: seq + i as i32,
            timestamp: samsa_broker::util::now_ms(),
            key: None,
            value: Some(Bytes::from(v.to_string())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    buf.freeze()
}

fn append(broker: &Broker, p: &Arc<Partition>, batch: Bytes) {
    p.append(
        batch,
        samsa_broker::util::now_ms(),
        &broker.node.group_commit,
    )
    .unwrap();
}

/// A new producer of `transactional_id` opens a transaction on `t-0` and writes `value` in
/// it. Returns its producer id and epoch.
async fn begin(
    broker: &Arc<Broker>,
    transactional_id: &str,
    timeout_ms: i32,
    value: &str,
) -> (i64, i16) {
    let txn = &broker.txn;
    let (pid, epoch) = txn
        .init_producer_id(&broker.node, transactional_id, timeout_ms, None)
        .await
        .unwrap();
    txn.add_partitions(
        &broker.node,
        transactional_id,
        pid,
        epoch,
        &partitions(&[("t", 0)]),
        false,
    )
    .await
    .unwrap();
    append(
        broker,
        &partition(broker, "t", 0),
        txn_batch(pid, epoch, 0, &[value]),
    );
    (pid, epoch)
}

/// The values a read_committed reader of `p` gets, skipping aborted transactions as a client
/// does with the fetch response's aborted list.
fn read_committed(p: &Partition) -> Vec<String> {
    let r = p.read(p.log_start_offset(), 1 << 20, true, true).unwrap();
    let bytes = r.slice.load().unwrap();
    let upper = r.last_stable_offset;
    let aborted = p.aborted_transactions(p.log_start_offset(), upper).unwrap();
    let mut out = Vec::new();
    if bytes.is_empty() {
        return out;
    }
    let mut buf = bytes;
    let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).unwrap();
    for rec in set.records {
        if rec.control {
            continue;
        }
        let skipped = aborted.iter().any(|a| {
            a.producer_id == rec.producer_id
                && a.first_offset <= rec.offset
                && rec.offset < a.last_offset
        });
        if !skipped {
            out.push(String::from_utf8(rec.value.unwrap().to_vec()).unwrap());
        }
    }
    out
}

#[test]
fn commit_and_abort_reach_every_partition_and_read_committed_sees_only_committed_data() {
    commit_and_abort(&[]);
}

#[test]
fn in_durable_mode_a_commit_is_visible_once_end_txn_returns() {
    // Every write waits for its group-commit fsync before the next step goes on.
    commit_and_abort(&[("log.durable", "true")]);
}

fn commit_and_abort(extra: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_with(dir.path(), extra);
    broker
        .node
        .topics
        .create("t", 2, 1, Default::default())
        .unwrap();
    let (p0, p1) = (partition(&broker, "t", 0), partition(&broker, "t", 1));
    let rt = runtime();
    rt.block_on(async {
        let txn = &broker.txn;
        let (pid, epoch) = txn
            .init_producer_id(&broker.node, "app", 60_000, None)
            .await
            .unwrap();
        assert_eq!(epoch, 0);
        let both = partitions(&[("t", 0), ("t", 1)]);
        txn.add_partitions(&broker.node, "app", pid, epoch, &both, false)
            .await
            .unwrap();
        append(&broker, &p0, txn_batch(pid, epoch, 0, &["a1", "a2"]));
        append(&broker, &p1, txn_batch(pid, epoch, 0, &["b1"]));
        // Open: nothing is stable yet.
        assert_eq!(p0.last_stable_offset(), 0);
        assert!(read_committed(&p0).is_empty());
        txn.end_txn(&broker.node, "app", pid, epoch, true, false)
            .await
            .unwrap();
        assert_eq!(read_committed(&p0), vec!["a1", "a2"]);
        assert_eq!(read_committed(&p1), vec!["b1"]);
        // A retried EndTxn of a completed commit is answered with success.
        txn.end_txn(&broker.node, "app", pid, epoch, true, false)
            .await
            .unwrap();
        // The next transaction aborts.
        txn.add_partitions(&broker.node, "app", pid, epoch, &both, false)
            .await
            .unwrap();
        append(&broker, &p0, txn_batch(pid, epoch, 2, &["x"]));
        txn.end_txn(&broker.node, "app", pid, epoch, false, false)
            .await
            .unwrap();
        assert_eq!(read_committed(&p0), vec!["a1", "a2"]);
        assert_eq!(p0.last_stable_offset(), p0.log_end_offset());
        assert_eq!(
            txn.end_txn(&broker.node, "app", pid, epoch, true, false)
                .await,
            Err(TxnError::InvalidTxnState)
        );
        let described = txn.describe("app").await.unwrap();
        assert_eq!(described.state, TxnState::CompleteAbort);
        assert_eq!(
            txn.describe("other").await,
            Err(TxnError::TransactionalIdNotFound)
        );
        assert_eq!(txn.list().await.len(), 1);
    });
}

#[test]
fn a_transaction_prepared_before_a_crash_is_completed_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, epoch) = {
        let broker = open(dir.path());
        broker
            .node
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        let p0 = partition(&broker, "t", 0);
        let rt = runtime();
        rt.block_on(async {
            let txn = &broker.txn;
            let (pid, epoch) = begin(&broker, "app", 60_000, "kept").await;
            // The marker write fails (a full disk): the commit is decided (PrepareCommit is
            // in the log) but not complete when the broker goes down.
            p0.with_log(|log| log.inject_append_failure(0));
            txn.end_txn(&broker.node, "app", pid, epoch, true, false)
                .await
                .unwrap();
            assert_eq!(
                txn.describe("app").await.unwrap().state,
                TxnState::PrepareCommit
            );
            assert!(read_committed(&p0).is_empty());
            (pid, epoch)
        })
    };
    let broker = open(dir.path());
    let p0 = partition(&broker, "t", 0);
    let rt = runtime();
    rt.block_on(async {
        // Loading found it prepared and woke the timers, whose pass (this) completes it: not
        // the loading itself, on the metadata publisher, since completing waits for replication.
        broker.txn.abort_timed_out(&broker.node).await;
        assert_eq!(read_committed(&p0), vec!["kept"]);
        let m = broker.txn.describe("app").await.unwrap();
        assert_eq!(m.state, TxnState::CompleteCommit);
        assert_eq!((m.producer_id, m.producer_epoch), (pid, epoch));
    });
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    broker
        .node
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    let p0 = partition(&broker, "t", 0);
    runtime().block_on(async {
        let txn = &broker.txn;
        // A second of timeout: a loaded machine stalls tens of milliseconds at times.
        let (pid, epoch) = begin(&broker, "slow", 1_000, "late").await;
        txn.abort_timed_out(&broker.node).await;
        assert_eq!(txn.describe("slow").await.unwrap().state, TxnState::Ongoing);
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        txn.abort_timed_out(&broker.node).await;
        let m = txn.describe("slow").await.unwrap();
        assert_eq!(m.state, TxnState::CompleteAbort);
        assert_eq!(m.producer_epoch, epoch + 1);
        assert!(read_committed(&p0).is_empty());
        assert_eq!(p0.last_stable_offset(), p0.log_end_offset());
        // The zombie can neither end its transaction nor write into a new one.
        assert_eq!(
            txn.end_txn(&broker.node, "slow", pid, epoch, true, false)
                .await,
            Err(TxnError::ProducerFenced)
        );
        let refused = p0.append(
            txn_batch(pid, epoch, 1, &["zombie"]),
            samsa_broker::util::now_ms(),
            &broker.node.group_commit,
        );
        assert!(matches!(
            refused,
            Err(samsa_storage::LogError::InvalidProducerEpoch(_))
        ));
    });
}

#[test]
fn a_second_producer_with_the_same_transactional_id_fences_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    broker
        .node
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    let p0 = partition(&broker, "t", 0);
    runtime().block_on(async {
        let txn = &broker.txn;
        let (pid, first) = begin(&broker, "app", 60_000, "from-the-first").await;
        // The second instance's first call aborts the open transaction and asks to retry.
        assert_eq!(
            txn.init_producer_id(&broker.node, "app", 60_000, None)
                .await,
            Err(TxnError::ConcurrentTransactions)
        );
        let (pid2, second) = txn
            .init_producer_id(&broker.node, "app", 60_000, None)
            .await
            .unwrap();
        assert_eq!(pid2, pid);
        assert!(second > first + 1);
        assert_eq!(
            txn.end_txn(&broker.node, "app", pid, first, true, false)
                .await,
            Err(TxnError::ProducerFenced)
        );
        assert!(read_committed(&p0).is_empty());
    });
}

#[test]
fn transactional_ids_and_producer_ids_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, epoch, idempotent) = {
        let broker = open(dir.path());
        runtime().block_on(async {
            let (pid, epoch) = broker
                .txn
                .init_producer_id(&broker.node, "keeper", 60_000, None)
                .await
                .unwrap();
            (
                pid,
                epoch,
                broker.txn.new_producer_id(&broker.node).await.unwrap(),
            )
        })
    };
    let broker = open(dir.path());
    assert!(broker.node.topics.get(TRANSACTION_STATE_TOPIC).is_some());
    runtime().block_on(async {
        let m = broker.txn.describe("keeper").await.unwrap();
        assert_eq!(
            (m.producer_id, m.producer_epoch, m.state),
            (pid, epoch, TxnState::Empty)
        );
        let (pid2, epoch2) = broker
            .txn
            .init_producer_id(&broker.node, "keeper", 60_000, None)
            .await
            .unwrap();
        assert_eq!((pid2, epoch2), (pid, epoch + 1));
        let fresh = broker.txn.new_producer_id(&broker.node).await.unwrap();
        assert!(
            fresh > idempotent && fresh > pid,
            "producer id {fresh} was handed out before"
        );
        assert_eq!(
            broker
                .txn
                .init_producer_id(&broker.node, "keeper", 10_000_000, None)
                .await,
            Err(TxnError::InvalidTransactionTimeout)
        );
    });
}

/// Sends a Produce v8 through the handlers and returns the error code of its one partition.
fn produce(broker: &Arc<Broker>, transactional_id: &str, batch: Bytes) -> i16 {
    let mut pd = produce_request::PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(batch);
    let mut td = produce_request::TopicProduceData::default();
    td.name = TopicName(StrBytes::from_static_str("t"));
    td.partition_data = vec![pd];
    let mut req = ProduceRequest::default();
    req.transactional_id = Some(TransactionalId(StrBytes::from_string(
        transactional_id.to_string(),
    )));
    req.acks = -1;
    req.timeout_ms = 1000;
    req.topic_data = vec![td];
    let mut frame = BytesMut::new();
    let mut h = RequestHeader::default();
    h.request_api_key = ApiKey::Produce as i16;
    h.request_api_version = 8;
    h.correlation_id = 7;
    h.encode(&mut frame, ApiKey::Produce.request_header_version(8))
        .unwrap();
    RequestKind::Produce(req).encode(&mut frame, 8).unwrap();
    let decoded = samsa_protocol::decode_request(frame.freeze()).unwrap();
    let conn = Rc::new(Connection::plaintext("127.0.0.1:1".parse().unwrap()));
    let mut chunks = Vec::new();
    let rt = runtime();
    let local = tokio::task::LocalSet::new();
    local
        .block_on(&rt, handlers::handle(broker, &conn, decoded, &mut chunks))
        .unwrap();
    let out: Vec<u8> = samsa_protocol::chunk::concat(&chunks).unwrap();
    // Size, correlation id (header v0), then the body.
    let mut body = Bytes::from(out).slice(8..);
    let resp = ProduceResponse::decode(&mut body, 8).unwrap();
    resp.responses[0].partition_responses[0].error_code
}

#[test]
fn a_transactional_produce_outside_the_transaction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    broker
        .node
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    let (pid, epoch) = runtime().block_on(async {
        broker
            .txn
            .init_producer_id(&broker.node, "app", 60_000, None)
            .await
            .unwrap()
    });
    // Not added with AddPartitionsToTxn: KIP-890 verification refuses it.
    assert_eq!(
        produce(&broker, "app", txn_batch(pid, epoch, 0, &["x"])),
        ResponseError::InvalidTxnState.code()
    );
    assert_eq!(
        produce(&broker, "unknown", txn_batch(pid, epoch, 0, &["x"])),
        ResponseError::InvalidProducerIdMapping.code()
    );
    runtime().block_on(async {
        broker
            .txn
            .add_partitions(
                &broker.node,
                "app",
                pid,
                epoch,
                &partitions(&[("t", 0)]),
                false,
            )
            .await
            .unwrap()
    });
    assert_eq!(produce(&broker, "app", txn_batch(pid, epoch, 0, &["x"])), 0);
    // A stale epoch is INVALID_PRODUCER_EPOCH for a producer (not PRODUCER_FENCED).
    assert_eq!(
        produce(&broker, "app", txn_batch(pid, epoch - 1, 1, &["x"])),
        ResponseError::InvalidProducerEpoch.code()
    );
    assert_eq!(partition(&broker, "t", 0).log_end_offset(), 1);
}

/// The offset of `t-0` that group `g` has committed (None: no offset visible).
fn committed_offset(broker: &Broker) -> Option<i64> {
    let found = broker
        .groups
        .fetch_offsets("g", Some(vec![("t".into(), vec![0])]))
        .unwrap();
    found[0].1[0].1.as_ref().map(|v| v.offset)
}

/// A TxnOffsetCommit of `offset` for `t-0` in group `g` (as AddOffsetsToTxn then
/// TxnOffsetCommit do it).
async fn txn_commit_offset(broker: &Arc<Broker>, pid: i64, epoch: i16, offset: i64) {
    use samsa_broker::group::{CommitRequest, OffsetToCommit, OFFSETS_TOPIC};
    samsa_broker::internal_topics::ensure(&broker.node, &broker.groups.offsets_topic_spec())
        .await
        .unwrap();
    let offsets = partitions(&[(OFFSETS_TOPIC, broker.groups.partition_for("g"))]);
    broker
        .txn
        .add_partitions(&broker.node, "app", pid, epoch, &offsets, false)
        .await
        .unwrap();
    let req = CommitRequest {
        group_id: "g".into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![OffsetToCommit {
                partition: 0,
                offset,
                leader_epoch: -1,
                metadata: None,
            }],
        )],
        api_version: 3,
    };
    let results = broker
        .groups
        .commit_txn_offsets(&broker.node, req, (pid, epoch))
        .await
        .unwrap();
    assert!(results[0].1[0].1.is_ok());
}

#[test]
fn transactional_offsets_show_on_commit_vanish_on_abort_and_stay_pending_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, epoch) = {
        let broker = open(dir.path());
        broker
            .node
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        runtime().block_on(async {
            let (pid, epoch) = broker
                .txn
                .init_producer_id(&broker.node, "app", 60_000, None)
                .await
                .unwrap();
            txn_commit_offset(&broker, pid, epoch, 42).await;
            assert_eq!(committed_offset(&broker), None, "pending until the commit");
            let found = broker
                .groups
                .fetch_offsets("g", Some(vec![("t".into(), vec![0])]))
                .unwrap();
            assert_eq!(
                broker.groups.unstable_partitions("g", &found),
                vec![("t".to_string(), 0)]
            );
            (pid, epoch)
        })
    };
    // A restart with the transaction open: the offset comes back pending, not committed.
    let broker = open(dir.path());
    assert_eq!(committed_offset(&broker), None);
    runtime().block_on(async {
        broker
            .txn
            .end_txn(&broker.node, "app", pid, epoch, true, false)
            .await
            .unwrap();
        assert_eq!(committed_offset(&broker), Some(42));
        let found = broker.groups.fetch_offsets("g", None).unwrap();
        assert!(broker.groups.unstable_partitions("g", &found).is_empty());
        // The next transaction's offset is dropped by its abort.
        txn_commit_offset(&broker, pid, epoch, 50).await;
        broker
            .txn
            .end_txn(&broker.node, "app", pid, epoch, false, false)
            .await
            .unwrap();
        assert_eq!(committed_offset(&broker), Some(42));
    });
    // And the log says the same after another restart.
    drop(broker);
    let broker = open(dir.path());
    assert_eq!(committed_offset(&broker), Some(42));
}
