//! A restarted node serves only once it has loaded its state, as Kafka opens its listeners only
//! when its broker is ready: Metadata polled from the moment the port opens never shows an
//! existing topic as unknown or leaderless, and a transactional producer whose batch reaches the
//! node as it comes back gets a retriable answer (the coordinator still loading), not a fatal
//! one, and commits.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use common::*;
use kafka_protocol::messages::{ApiKey, MetadataResponse, ResponseHeader};
use kafka_protocol::protocol::Decodable;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

const TOPICS: usize = 30;

/// One Metadata v12 request for `topics` on a new connection; None when nothing answers.
fn metadata_once(addr: &str, topics: &[String]) -> Option<MetadataResponse> {
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let req = metadata_request(Some(&names));
    let frame = encode_request(ApiKey::Metadata, 12, &req).ok()?;
    let mut s = TcpStream::connect_timeout(&addr.parse().ok()?, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    s.write_all(&frame).ok()?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    let mut buf = BytesMut::from(&body[..]);
    ResponseHeader::decode(&mut buf, ApiKey::Metadata.response_header_version(12)).ok()?;
    let resp = MetadataResponse::decode(&mut buf, 12).ok()?;
    assert_eq!(buf.remaining(), 0);
    Some(resp)
}

#[test]
fn metadata_polled_across_a_sigkill_and_restart_never_misses_a_topic() {
    let mut broker = Broker::start();
    let topics: Vec<String> = (0..TOPICS).map(|i| format!("kept-{i}")).collect();
    for t in &topics {
        create_topic(&broker, t, 2, &[]);
    }
    assert!(metadata_once(&broker.bootstrap(), &topics).is_some());
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let poller = {
        let (stop, answers, addr, topics) = (
            stop.clone(),
            answers.clone(),
            broker.bootstrap(),
            topics.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(r) = metadata_once(&addr, &topics) {
                    answers.lock().unwrap().push(r);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    broker.kill();
    answers.lock().unwrap().clear();
    broker.restart();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    poller.join().unwrap();
    let answers = answers.lock().unwrap();
    assert!(!answers.is_empty(), "no Metadata answer after the restart");
    for (i, r) in answers.iter().enumerate() {
        assert_eq!(r.topics.len(), TOPICS, "answer {i}");
        for t in &r.topics {
            let name = t.name.as_ref().map(|n| n.as_str()).unwrap_or("?");
            assert_eq!(
                t.error_code,
                0,
                "answer {i} of {}: topic {name}",
                answers.len()
            );
            assert_eq!(t.partitions.len(), 2, "answer {i}: {name}");
            for p in &t.partitions {
                assert_eq!(p.error_code, 0, "answer {i}: {name}-{}", p.partition_index);
                assert!(
                    p.leader_id.0 >= 0,
                    "answer {i}: {name}-{} leaderless",
                    p.partition_index
                );
            }
        }
    }
}

fn send(p: &BaseProducer, topic: &str, value: &str) {
    loop {
        let rec: BaseRecord<'_, [u8], [u8]> =
            BaseRecord::to(topic).partition(0).payload(value.as_bytes());
        match p.send(rec) {
            Ok(()) => return,
            Err((_, _)) => {
                p.poll(Duration::from_millis(20));
            }
        }
    }
}

#[test]
fn a_transaction_open_across_a_broker_sigkill_commits_once_the_node_is_back() {
    let mut broker = Broker::start();
    create_topic(&broker, "across", 1, &[]);
    let p: BaseProducer = client_config(&broker)
        .set("transactional.id", "across-restart")
        .set("transaction.timeout.ms", "60000")
        .set("linger.ms", "0")
        .set("reconnect.backoff.ms", "1")
        .set("reconnect.backoff.max.ms", "10")
        .create()
        .expect("transactional producer");
    p.init_transactions(Duration::from_secs(30))
        .expect("init_transactions");
    p.begin_transaction().expect("begin");
    for i in 0..10 {
        send(&p, "across", &format!("before-{i}"));
    }
    p.flush(Duration::from_secs(30))
        .expect("flush before the kill");
    broker.kill();
    // Queued while the node is down: sent the moment it accepts connections again.
    for i in 0..10 {
        send(&p, "across", &format!("after-{i}"));
    }
    broker.restart();
    p.flush(Duration::from_secs(60))
        .expect("flush after the restart");
    p.commit_transaction(Duration::from_secs(60))
        .expect("the transaction commits");

    let c: BaseConsumer = client_config(&broker)
        .set("group.id", "across-reader")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("across", 0, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let got = consume_n(&c, 20, Duration::from_secs(30));
    let values: Vec<String> = got
        .iter()
        .map(|g| String::from_utf8(g.value.clone()).unwrap())
        .collect();
    let want: Vec<String> = (0..10)
        .map(|i| format!("before-{i}"))
        .chain((0..10).map(|i| format!("after-{i}")))
        .collect();
    assert_eq!(values, want);
}
