//! The transaction coordinator across its own failover, on three real nodes: a coordinator
//! paused (SIGSTOP) long enough for another node to take its partition of `__transaction_state`
//! still holds the EndTxn a producer sent it; when it resumes it must not answer that commit
//! with success, since what it wrote of it cannot be replicated any more (the chaos test found
//! a transaction committed in some partitions and aborted in others that way). Whatever the
//! answer, the transaction ends whole or not at all. And a node that does not coordinate the
//! id answers an EndTxn with NOT_COORDINATOR, so that the client looks for the one that does.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::BrokerOptions;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

const TOPIC: &str = "failover";
const PARTITIONS: i32 = 6;

/// The node that coordinates `transactional_id`, as `node` answers.
fn find_coordinator(node: &Broker, transactional_id: &str) -> Option<i32> {
    let mut req = FindCoordinatorRequest::default();
    req.key = StrBytes::from_string(transactional_id.to_string());
    req.key_type = 1;
    let r: FindCoordinatorResponse =
        try_raw_request_to(&node.bootstrap(), ApiKey::FindCoordinator, 3, &req).ok()?;
    (r.error_code == 0).then_some(r.node_id.0)
}

/// A transactional producer of `transactional_id`, initialized (which fences an older one
/// and ends its open transaction), retried while the coordinator moves.
fn txn_producer(bootstrap: &str, transactional_id: &str) -> BaseProducer {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p: BaseProducer = rdkafka::config::ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("transactional.id", transactional_id)
            .set("transaction.timeout.ms", "60000")
            .create()
            .unwrap();
        match p.init_transactions(Duration::from_secs(30)) {
            Ok(()) => return p,
            Err(e) => assert!(Instant::now() < deadline, "init_transactions: {e}"),
        }
    }
}

/// One record with `value` in every partition, in the producer's open transaction.
fn send_everywhere(p: &BaseProducer, value: &str) {
    for partition in 0..PARTITIONS {
        loop {
            let r: BaseRecord<'_, str, str> =
                BaseRecord::to(TOPIC).partition(partition).payload(value);
            match p.send(r) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(_), _)) => {
                    p.poll(Duration::from_millis(20));
                }
                Err((e, _)) => panic!("send: {e}"),
            }
        }
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

#[test]
fn a_deposed_coordinator_does_not_answer_a_commit_it_could_not_replicate() {
    let mut cluster = start_quick_cluster(BrokerOptions::default());
    let bootstrap = cluster.bootstrap();
    let admin = admin(&cluster.nodes[0]);
    let t = rdkafka::admin::NewTopic::new(
        TOPIC,
        PARTITIONS,
        rdkafka::admin::TopicReplication::Fixed(3),
    )
    .set("min.insync.replicas", "2");
    runtime()
        .block_on(admin.create_topics(&[t], &rdkafka::admin::AdminOptions::new()))
        .unwrap()[0]
        .clone()
        .unwrap();

    // A transactional id whose coordinator is not the active controller: pausing that one
    // would move the controller too, which is not what this test is about (the chaos test
    // does both at once).
    let controller = describe(&cluster.nodes[0]).topics[0].partitions[0]
        .leader_id
        .0;
    let (id, coordinator) = (0..100)
        .map(|i| format!("failover-app-{i}"))
        .find_map(|id| {
            let c = find_coordinator(&cluster.nodes[0], &id)?;
            (c != controller).then_some((id, c))
        })
        .expect("a transactional id coordinated by a node that is not the controller");

    // A transaction with a record in every partition, then its producer id and epoch.
    let p = txn_producer(&bootstrap, &id);
    p.begin_transaction().unwrap();
    send_everywhere(&p, "in doubt");
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![TransactionalId(StrBytes::from_string(id.clone()))];
    let described: DescribeTransactionsResponse = raw_request(
        cluster.node(coordinator),
        ApiKey::DescribeTransactions,
        0,
        &req,
    );
    let state = &described.transaction_states[0];
    assert_eq!(state.transaction_state.as_str(), "Ongoing", "{state:?}");
    let mut end = EndTxnRequest::default();
    end.transactional_id = TransactionalId(StrBytes::from_string(id.clone()));
    end.producer_id = state.producer_id;
    end.producer_epoch = state.producer_epoch;
    end.committed = true;

    // A node that does not coordinate the id says so, as a former coordinator must to a
    // client that has not looked the coordinator up again (not that it does not know the
    // producer, which fails the transaction).
    let other = (1..=3).find(|&n| n != coordinator).unwrap();
    let answer: EndTxnResponse = raw_request(cluster.node(other), ApiKey::EndTxn, 3, &end);
    assert_eq!(
        answer.error_code,
        kafka_protocol::ResponseError::NotCoordinator.code()
    );

    // The commit reaches the paused coordinator's socket; it reads it once another node has
    // taken over its transactional ids.
    cluster.node(coordinator).pause();
    let mut s = TcpStream::connect(cluster.node(coordinator).bootstrap()).unwrap();
    s.write_all(&encode_request(ApiKey::EndTxn, 3, &end).unwrap())
        .unwrap();
    let others: Vec<i32> = (1..=3).filter(|&n| n != coordinator).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !others
        .iter()
        .any(|&other| find_coordinator(cluster.node(other), &id).is_some_and(|c| c != coordinator))
    {
        if Instant::now() > deadline {
            let asked = cluster.node(others[0]);
            let quorum = describe(asked);
            let m = metadata(asked, Some(&["__transaction_state"]));
            let isr: Vec<_> = m.topics[0]
                .partitions
                .iter()
                .map(|p| {
                    let isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
                    (p.partition_index, p.leader_id.0, isr)
                })
                .collect();
            panic!(
                "no other node took over the transactional id from node {coordinator} within 60 s; node {} sees the quorum {:?} and __transaction_state's partitions (index, leader, isr) {isr:?}; node logs:\n{}",
                others[0],
                quorum.topics[0].partitions[0],
                cluster
                    .nodes
                    .iter()
                    .map(|n| n.log_lines().join("\n"))
                    .collect::<Vec<_>>()
                    .join("\n-----\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cluster.node(coordinator).resume();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let answer: EndTxnResponse = read_response(&mut s, ApiKey::EndTxn, 3).unwrap();
    println!(
        "the deposed coordinator answered the commit with error {}",
        answer.error_code
    );

    // A new producer fences the old one (aborting the transaction unless it is committed)
    // and commits one more record in every partition, behind which everything is decided.
    drop(p);
    let p = txn_producer(&bootstrap, &id);
    p.begin_transaction().unwrap();
    send_everywhere(&p, "after");
    p.commit_transaction(Duration::from_secs(30)).unwrap();

    let reader: BaseConsumer = rdkafka::config::ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("group.id", "failover-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for partition in 0..PARTITIONS {
        tpl.add_partition_offset(TOPIC, partition, Offset::Beginning)
            .unwrap();
    }
    reader.assign(&tpl).unwrap();
    let (mut in_doubt, mut after) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while after < PARTITIONS && Instant::now() < deadline {
        if let Some(m) = reader.poll(Duration::from_millis(100)) {
            match m.unwrap().payload() {
                Some(b"in doubt") => in_doubt += 1,
                Some(b"after") => after += 1,
                other => panic!("a record never produced: {other:?}"),
            }
        }
    }
    assert_eq!(after, PARTITIONS, "the last transaction was not read whole");
    assert!(
        in_doubt == 0 || in_doubt == PARTITIONS,
        "the transaction was committed in {in_doubt} of {PARTITIONS} partitions (EndTxn answered {})",
        answer.error_code
    );
    assert!(
        answer.error_code != 0 || in_doubt == PARTITIONS,
        "the commit was answered with success, but its records are not there"
    );
}
