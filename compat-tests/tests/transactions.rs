//! Transactions against the real binary with librdkafka (the rdkafka crate): commit, abort and
//! commit again seen by read_committed and read_uncommitted consumers; an open transaction
//! holding read_committed readers at the last stable offset; a second producer with the same
//! transactional id fencing the first; a consume-transform-produce processor (a child process,
//! `src/bin/eos_processor.rs`) SIGKILLed mid-stream and restarted, processing its input exactly
//! once; a broker SIGKILL in the middle of a transaction, which ends with the transaction
//! committed or aborted as a whole; the operator APIs (DescribeTransactions,
//! ListTransactions, DescribeProducers) over the raw protocol; and a transaction whose Produce
//! (v13) names its topic by id only, over the raw protocol.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

fn txn_producer(broker: &Broker, transactional_id: &str, timeout_ms: u32) -> BaseProducer {
    let p: BaseProducer = client_config(broker)
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", timeout_ms.to_string())
        .set("linger.ms", "2")
        .create()
        .expect("transactional producer");
    p.init_transactions(Duration::from_secs(30))
        .expect("init_transactions");
    p
}

fn send(p: &BaseProducer, topic: &str, partition: i32, value: &str) {
    loop {
        let rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic)
            .partition(partition)
            .payload(value.as_bytes());
        match p.send(rec) {
            Ok(()) => return,
            Err((KafkaError::MessageProduction(_), _)) => {
                p.poll(Duration::from_millis(20));
            }
            Err((e, _)) => panic!("send: {e}"),
        }
    }
}

fn consumer(broker: &Broker, topic: &str, partitions: &[i32], isolation: &str) -> BaseConsumer {
    let c: BaseConsumer = client_config(broker)
        .set("group.id", "txn-test-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in partitions {
        tpl.add_partition_offset(topic, *p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    c
}

/// Every value a consumer gets within `quiet` of the last one (or until `expected` arrived and
/// nothing more came for `quiet`).
fn drain(c: &BaseConsumer, expected: usize, quiet: Duration) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Instant::now();
    while Instant::now() < deadline {
        if out.len() >= expected && last.elapsed() > quiet {
            break;
        }
        if let Some(r) = c.poll(Duration::from_millis(50)) {
            let m = r.unwrap_or_else(|e| panic!("consume error: {e}"));
            let g = Got::from(&m);
            out.push((g.partition, String::from_utf8(g.value).unwrap()));
            last = Instant::now();
        }
    }
    out
}

fn values(got: &[(i32, String)]) -> Vec<String> {
    got.iter().map(|(_, v)| v.clone()).collect()
}

#[test]
fn commit_abort_commit_is_seen_by_read_committed_and_read_uncommitted_consumers() {
    let broker = Broker::start();
    create_topic(&broker, "txn-cac", 1, &[]);
    let p = txn_producer(&broker, "cac", 60_000);
    let round = |prefix: &str, commit: bool| {
        p.begin_transaction().unwrap();
        for i in 0..5 {
            send(&p, "txn-cac", 0, &format!("{prefix}{i}"));
        }
        p.flush(Duration::from_secs(30)).unwrap();
        if commit {
            p.commit_transaction(Duration::from_secs(30)).unwrap();
        } else {
            p.abort_transaction(Duration::from_secs(30)).unwrap();
        }
    };
    round("first-", true);
    round("aborted-", false);
    round("second-", true);
    let committed = values(&drain(
        &consumer(&broker, "txn-cac", &[0], "read_committed"),
        10,
        Duration::from_millis(500),
    ));
    let expected: Vec<String> = (0..5)
        .map(|i| format!("first-{i}"))
        .chain((0..5).map(|i| format!("second-{i}")))
        .collect();
    assert_eq!(committed, expected);
    let everything = values(&drain(
        &consumer(&broker, "txn-cac", &[0], "read_uncommitted"),
        15,
        Duration::from_millis(500),
    ));
    assert_eq!(everything.len(), 15, "{everything:?}");
    assert!(
        everything
            .iter()
            .filter(|v| v.starts_with("aborted-"))
            .count()
            == 5
    );
}

#[test]
fn an_open_transaction_holds_read_committed_readers_at_the_last_stable_offset() {
    let broker = Broker::start();
    create_topic(&broker, "txn-lso", 1, &[]);
    let p = txn_producer(&broker, "lso", 60_000);
    p.begin_transaction().unwrap();
    send(&p, "txn-lso", 0, "in-txn");
    p.flush(Duration::from_secs(30)).unwrap();
    // A plain producer writes after the open transaction.
    let plain = producer(&broker, &[]);
    produce_all(&plain, "txn-lso", &[(None, b"plain".to_vec())], Some(0));
    let rc = consumer(&broker, "txn-lso", &[0], "read_committed");
    assert!(drain(&rc, 0, Duration::from_millis(800)).is_empty());
    let (_, high) = rc
        .fetch_watermarks("txn-lso", 0, Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        high, 0,
        "read_committed ListOffsets latest is the last stable offset"
    );
    let ru = consumer(&broker, "txn-lso", &[0], "read_uncommitted");
    assert_eq!(drain(&ru, 2, Duration::from_millis(300)).len(), 2);
    p.commit_transaction(Duration::from_secs(30)).unwrap();
    assert_eq!(
        values(&drain(&rc, 2, Duration::from_millis(300))),
        vec!["in-txn", "plain"]
    );
}

#[test]
fn a_second_producer_with_the_same_transactional_id_fences_the_first() {
    let broker = Broker::start();
    create_topic(&broker, "txn-fence", 1, &[]);
    let first = txn_producer(&broker, "shared-id", 60_000);
    first.begin_transaction().unwrap();
    send(&first, "txn-fence", 0, "zombie");
    first.flush(Duration::from_secs(30)).unwrap();
    let second = txn_producer(&broker, "shared-id", 60_000);
    let err = first
        .commit_transaction(Duration::from_secs(30))
        .expect_err("a fenced producer cannot commit");
    let fenced = matches!(&err, KafkaError::Transaction(e) if e.is_fatal());
    assert!(fenced, "expected a fatal fencing error, got {err}");
    second.begin_transaction().unwrap();
    send(&second, "txn-fence", 0, "winner");
    second.commit_transaction(Duration::from_secs(30)).unwrap();
    let got = values(&drain(
        &consumer(&broker, "txn-fence", &[0], "read_committed"),
        1,
        Duration::from_millis(500),
    ));
    assert_eq!(got, vec!["winner"]);
}

/// A running `eos_processor` child and what it last reported.
struct Processor {
    child: Child,
    committed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Transactions opened (output written and flushed, not yet committed).
    opened: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Processor {
    fn start(broker: &Broker, pause_ms: u64) -> Processor {
        let mut child = Command::new(env!("CARGO_BIN_EXE_eos_processor"))
            .args([
                &broker.bootstrap(),
                "ctp-in",
                "ctp-out",
                "ctp-group",
                "ctp-processor",
                &pause_ms.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the processor");
        let committed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (seen, open) = (committed.clone(), opened.clone());
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("committed ") {
                    seen.store(n.parse().unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
                } else if line.starts_with("open ") {
                    open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        Processor {
            child,
            committed,
            opened,
        }
    }

    fn opened(&self) -> usize {
        self.opened.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn committed(&self) -> usize {
        self.committed.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn consume_transform_produce_is_exactly_once_across_a_sigkill_of_the_processor() {
    let broker = Broker::start();
    create_topic(&broker, "ctp-in", 3, &[]);
    create_topic(&broker, "ctp-out", 3, &[]);
    let n = 900;
    let input: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..n)
        .map(|i| (None, format!("v{i}").into_bytes()))
        .collect();
    let plain = producer(&broker, &[]);
    for p in 0..3 {
        let part: Vec<_> = input.iter().skip(p as usize).step_by(3).cloned().collect();
        produce_all(&plain, "ctp-in", &part, Some(p));
    }
    // The first processor commits a few transactions and is killed in the middle of one
    // (it pauses before each commit, with records already written).
    // It pauses before each commit with its output written and flushed, and says so: the
    // kill lands in that pause, once it has committed a few transactions.
    let first = Processor::start(&broker, 1_000);
    let started = Instant::now();
    let mut opened_before = None;
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the first processor committed only {}",
            first.committed()
        );
        match opened_before {
            None if first.committed() >= 100 => opened_before = Some(first.opened()),
            Some(n) if first.opened() > n => break,
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    first.kill();
    let second = Processor::start(&broker, 0);
    let reader = consumer(&broker, "ctp-out", &[0, 1, 2], "read_committed");
    let got = drain(&reader, n, Duration::from_secs(3));
    second.kill();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, v) in &got {
        *counts.entry(v.clone()).or_default() += 1;
    }
    let missing: Vec<usize> = (0..n)
        .filter(|i| !counts.contains_key(&format!("out:v{i}")))
        .collect();
    let duplicated: Vec<(&String, &usize)> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(
        missing.is_empty() && duplicated.is_empty(),
        "{} outputs for {n} inputs; missing {:?}...; duplicated {:?}...",
        got.len(),
        &missing[..missing.len().min(10)],
        &duplicated[..duplicated.len().min(10)]
    );
    // The output of the killed transaction is in the log, but aborted.
    let everything = drain(
        &consumer(&broker, "ctp-out", &[0, 1, 2], "read_uncommitted"),
        n + 1,
        Duration::from_secs(1),
    );
    assert!(
        everything.len() > n,
        "the killed transaction left no output to abort"
    );
}

#[test]
fn a_broker_sigkill_in_the_middle_of_a_transaction_leaves_it_whole_or_absent() {
    let mut broker = Broker::start();
    create_topic(&broker, "txn-crash", 3, &[]);
    let p = txn_producer(&broker, "crash-app", 5_000);
    p.begin_transaction().unwrap();
    for i in 0..30 {
        send(&p, "txn-crash", i % 3, &format!("before-{i}"));
    }
    p.commit_transaction(Duration::from_secs(30)).unwrap();
    p.begin_transaction().unwrap();
    for i in 0..30 {
        send(&p, "txn-crash", i % 3, &format!("during-{i}"));
    }
    p.flush(Duration::from_secs(30)).unwrap();
    broker.kill();
    broker.restart();
    // The producer finds out what became of its transaction.
    match p.commit_transaction(Duration::from_secs(30)) {
        Ok(()) => {}
        Err(KafkaError::Transaction(e)) if e.txn_requires_abort() => {
            p.abort_transaction(Duration::from_secs(30)).unwrap();
        }
        Err(e) => eprintln!("commit after the crash failed: {e}; the coordinator aborts it"),
    }
    drop(p);
    // Whatever the outcome, read_committed readers must not stay stuck behind it: a record
    // written afterwards becomes visible once the transaction is resolved (at the latest by the
    // 5 s transaction timeout).
    let plain = producer(&broker, &[]);
    for part in 0..3 {
        produce_all(
            &plain,
            "txn-crash",
            &[(None, b"after".to_vec())],
            Some(part),
        );
    }
    let reader = consumer(&broker, "txn-crash", &[0, 1, 2], "read_committed");
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    while got
        .iter()
        .filter(|(_, v): &&(i32, String)| v == "after")
        .count()
        < 3
    {
        assert!(
            Instant::now() < deadline,
            "read_committed is stuck: {got:?}"
        );
        got.extend(drain(&reader, 0, Duration::from_millis(200)));
    }
    let by_kind: BTreeMap<&str, usize> = got.iter().fold(BTreeMap::new(), |mut m, (_, v)| {
        *m.entry(v.split('-').next().unwrap()).or_default() += 1;
        m
    });
    assert_eq!(by_kind.get("before"), Some(&30), "{by_kind:?}");
    let during = by_kind.get("during").copied().unwrap_or(0);
    assert!(
        during == 0 || during == 30,
        "the interrupted transaction is half visible: {during} of 30 records"
    );
}

mod operator_apis {
    //! DescribeTransactions, ListTransactions and DescribeProducers over the raw protocol
    //! (the Kafka CLI's `kafka-transactions.sh` sends these; librdkafka has no API for them).

    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;

    use super::*;

    #[test]
    fn operators_see_open_transactions_and_the_producers_of_a_partition() {
        let broker = Broker::start();
        create_topic(&broker, "txn-ops", 2, &[]);
        let p = txn_producer(&broker, "ops-app", 60_000);
        p.begin_transaction().unwrap();
        send(&p, "txn-ops", 1, "x");
        p.flush(Duration::from_secs(30)).unwrap();

        let mut req = DescribeTransactionsRequest::default();
        req.transactional_ids = vec![
            TransactionalId(StrBytes::from_static_str("ops-app")),
            TransactionalId(StrBytes::from_static_str("nobody")),
        ];
        let resp: DescribeTransactionsResponse =
            raw_request(&broker, ApiKey::DescribeTransactions, 0, &req);
        let app = &resp.transaction_states[0];
        assert_eq!(app.error_code, 0);
        assert_eq!(app.transaction_state.as_str(), "Ongoing");
        assert_eq!(app.topics.len(), 1);
        assert_eq!(app.topics[0].partitions, vec![1]);
        let producer_id = app.producer_id;
        assert_eq!(
            resp.transaction_states[1].error_code,
            kafka_protocol::ResponseError::TransactionalIdNotFound.code()
        );

        let mut req = ListTransactionsRequest::default();
        req.state_filters = vec![
            StrBytes::from_static_str("Ongoing"),
            StrBytes::from_static_str("Nonsense"),
        ];
        let resp: ListTransactionsResponse =
            raw_request(&broker, ApiKey::ListTransactions, 1, &req);
        assert_eq!(resp.transaction_states.len(), 1);
        assert_eq!(
            resp.transaction_states[0].transactional_id.0.as_str(),
            "ops-app"
        );
        assert_eq!(resp.unknown_state_filters.len(), 1);

        let mut t = describe_producers_request::TopicRequest::default();
        t.name = TopicName(StrBytes::from_static_str("txn-ops"));
        t.partition_indexes = vec![0, 1];
        let mut req = DescribeProducersRequest::default();
        req.topics = vec![t];
        let resp: DescribeProducersResponse =
            raw_request(&broker, ApiKey::DescribeProducers, 0, &req);
        let parts = &resp.topics[0].partitions;
        assert!(parts[0].active_producers.is_empty());
        let active = &parts[1].active_producers;
        assert_eq!(active.len(), 1);
        assert_eq!(active[0].producer_id, producer_id);
        assert_eq!(active[0].current_txn_start_offset, 0);
        p.commit_transaction(Duration::from_secs(30)).unwrap();
    }

    /// Produce v13 names topics by id only (KIP-516): a transactional batch sent that way is
    /// checked against its transaction by the topic's name, which the request does not carry.
    #[test]
    fn a_transactional_produce_naming_its_topic_by_id_is_accepted_and_committed() {
        use kafka_protocol::records::{
            Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
        };
        let broker = Broker::start();
        create_topic(&broker, "txn-by-id", 1, &[]);
        let name = || TopicName(StrBytes::from_static_str("txn-by-id"));
        let tid = || TransactionalId(StrBytes::from_static_str("by-id-app"));

        let mut t = metadata_request::MetadataRequestTopic::default();
        t.name = Some(name());
        let mut req = MetadataRequest::default();
        req.topics = Some(vec![t]);
        let meta: MetadataResponse = raw_request(&broker, ApiKey::Metadata, 12, &req);
        let topic_id = meta.topics[0].topic_id;
        assert!(!topic_id.is_nil());

        let mut req = InitProducerIdRequest::default();
        req.transactional_id = Some(tid());
        req.transaction_timeout_ms = 60_000;
        req.producer_id = ProducerId(-1);
        req.producer_epoch = -1;
        let init: InitProducerIdResponse = raw_request(&broker, ApiKey::InitProducerId, 4, &req);
        assert_eq!(init.error_code, 0);

        let mut topic = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
        topic.name = name();
        topic.partitions = vec![0];
        let mut req = AddPartitionsToTxnRequest::default();
        req.v3_and_below_transactional_id = tid();
        req.v3_and_below_producer_id = init.producer_id;
        req.v3_and_below_producer_epoch = init.producer_epoch;
        req.v3_and_below_topics = vec![topic];
        let added: AddPartitionsToTxnResponse =
            raw_request(&broker, ApiKey::AddPartitionsToTxn, 3, &req);
        let result = &added.results_by_topic_v3_and_below[0].results_by_partition[0];
        assert_eq!(result.partition_error_code, 0);

        let record = Record {
            transactional: true,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: init.producer_id.0,
            producer_epoch: init.producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: 0,
            sequence: 0,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(bytes::Bytes::from_static(b"by id")),
            headers: Default::default(),
        };
        let mut records = bytes::BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut records, [record].iter(), &options).unwrap();
        let mut pd = produce_request::PartitionProduceData::default();
        pd.index = 0;
        pd.records = Some(records.freeze());
        let mut td = produce_request::TopicProduceData::default();
        td.topic_id = topic_id;
        td.partition_data = vec![pd];
        let mut req = ProduceRequest::default();
        req.transactional_id = Some(tid());
        req.acks = -1;
        req.timeout_ms = 10_000;
        req.topic_data = vec![td];
        let produced: ProduceResponse = raw_request(&broker, ApiKey::Produce, 13, &req);
        let pr = &produced.responses[0].partition_responses[0];
        assert_eq!(pr.error_code, 0, "{:?}", pr.error_message);
        assert_eq!(pr.base_offset, 0);

        let mut req = EndTxnRequest::default();
        req.transactional_id = tid();
        req.producer_id = init.producer_id;
        req.producer_epoch = init.producer_epoch;
        req.committed = true;
        let ended: EndTxnResponse = raw_request(&broker, ApiKey::EndTxn, 3, &req);
        assert_eq!(ended.error_code, 0);

        let c = consumer(&broker, "txn-by-id", &[0], "read_committed");
        assert_eq!(
            values(&drain(&c, 1, Duration::from_millis(500))),
            vec!["by id"]
        );
    }
}
