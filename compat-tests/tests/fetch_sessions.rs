//! Fetch sessions (KIP-227) on real `samsa` processes. On three nodes the replica fetchers use
//! them: every broker holds a session per follower with all the partitions it follows, records
//! replicate and high watermarks reach the followers through incremental fetches, and followers
//! that have nothing to fetch for longer than replica.lag.time.max.ms stay in the ISR. On one
//! node, raw Fetch requests: an incremental fetch in a session of 20 partitions is answered with
//! only the partition that changed, its long poll wakes for any partition of the session, a wrong
//! epoch is INVALID_FETCH_SESSION_EPOCH, an unknown session FETCH_SESSION_ID_NOT_FOUND, and
//! epoch -1 closes the session.

mod common;

use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

const LAG_MS: u64 = 3_000;

/// Each partition's ISR size as `node` describes `topic`.
fn isr_sizes(node: &Broker, topic: &str) -> Vec<usize> {
    let m = metadata(node, Some(&[topic]));
    assert_eq!(m.topics[0].error_code, 0, "{m:?}");
    m.topics[0]
        .partitions
        .iter()
        .map(|p| p.isr_nodes.len())
        .collect()
}

/// Waits (at most 60 s) until `check` holds, saying `what` if it never does.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn followers_replicate_through_fetch_sessions_and_stay_in_the_isr_while_idle() {
    let options = BrokerOptions::default()
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("replica.lag.time.max.ms", LAG_MS);
    let cluster = Cluster::start_with(3, options);
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    let node = &cluster.nodes[0];
    // min.insync.replicas=3: an acks=all write succeeds only with both followers in the ISR.
    create_topic_in(
        &node.bootstrap(),
        "idle",
        20,
        rdkafka::admin::TopicReplication::Fixed(3),
        &[("min.insync.replicas", "3")],
    );
    wait_until("every partition's ISR is all three", || {
        isr_sizes(node, "idle").iter().all(|&n| n == 3)
    });
    // Each broker leads some of the partitions and holds one session per follower, which
    // holds every partition that follower replicates from it: 20 partitions x 2 followers.
    wait_until("the followers' sessions hold every partition", || {
        let sessions: Vec<f64> = cluster
            .nodes
            .iter()
            .map(|n| metric(n, "samsa_fetch_sessions "))
            .collect();
        let partitions: f64 = cluster
            .nodes
            .iter()
            .map(|n| metric(n, "samsa_fetch_session_partitions "))
            .sum();
        sessions.iter().all(|&s| s == 2.0) && partitions == 40.0
    });

    let producer = producer(node, &[("acks", "all"), ("enable.idempotence", "true")]);
    let records: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..200)
        .map(|i| {
            (
                Some(format!("k{i}").into_bytes()),
                format!("{i}").into_bytes(),
            )
        })
        .collect();
    assert_eq!(produce_all(&producer, "idle", &records, None).len(), 200);
    // Every follower has every record and the high watermark: they reach it only as the
    // partitions' news in incremental answers.
    for n in &cluster.nodes {
        wait_until(
            "every replica has the records and the high watermark",
            || {
                metric(n, "samsa_partition_log_end_offset{topic=\"idle\"") == 200.0
                    && metric(n, "samsa_partition_high_watermark{topic=\"idle\"") == 200.0
            },
        );
    }

    // Idle for three times replica.lag.time.max.ms: the followers name no partition in their
    // fetches, and the leader hears of none in its answers, yet every follower stays in sync.
    std::thread::sleep(Duration::from_millis(3 * LAG_MS));
    assert!(
        isr_sizes(node, "idle").iter().all(|&n| n == 3),
        "{:?}",
        isr_sizes(node, "idle")
    );
    for n in &cluster.nodes {
        assert_eq!(metric(n, "samsa_isr_changes_total{state=\"shrink\"}"), 0.0);
        assert_eq!(metric(n, "samsa_fetch_sessions "), 2.0);
        assert_eq!(metric(n, "samsa_fetch_session_evictions_total"), 0.0);
    }
    let more: Vec<(Option<Vec<u8>>, Vec<u8>)> = (200..220)
        .map(|i| (None, format!("{i}").into_bytes()))
        .collect();
    assert_eq!(produce_all(&producer, "idle", &more, None).len(), 20);
}

/// Fetch v12 of `partitions` of topic "sessions" (partition, fetch offset) in a session.
fn fetch(
    node: &Broker,
    session_id: i32,
    epoch: i32,
    partitions: &[(i32, i64)],
    max_wait_ms: i32,
) -> FetchResponse {
    let mut req = FetchRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.session_id = session_id;
    req.session_epoch = epoch;
    if !partitions.is_empty() {
        let mut t = FetchTopic::default();
        t.topic = TopicName(StrBytes::from_static_str("sessions"));
        t.partitions = partitions
            .iter()
            .map(|&(p, offset)| {
                let mut fp = FetchPartition::default();
                fp.partition = p;
                fp.fetch_offset = offset;
                fp.partition_max_bytes = 1 << 20;
                fp
            })
            .collect();
        req.topics = vec![t];
    }
    raw_request(node, ApiKey::Fetch, 12, &req)
}

/// The partitions an answer holds, each with whether it has records.
fn answered(resp: &FetchResponse) -> Vec<(i32, bool)> {
    resp.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                p.records.as_ref().is_some_and(|r| !r.is_empty()),
            )
        })
        .collect()
}

#[test]
fn an_incremental_fetch_is_answered_with_only_the_partitions_that_changed() {
    let node = Broker::start();
    create_topic(&node, "sessions", 20, &[]);
    let all: Vec<(i32, i64)> = (0..20).map(|p| (p, 0)).collect();
    // Partition leadership settles after creation: wait until all 20 answer without error.
    let mut full = fetch(&node, 0, -1, &all, 0);
    wait_until("every partition is led", || {
        full = fetch(&node, 0, -1, &all, 0);
        full.responses[0]
            .partitions
            .iter()
            .all(|p| p.error_code == 0)
    });
    assert_eq!(full.session_id, 0, "epoch -1 makes no session");

    let full = fetch(&node, 0, 0, &all, 0);
    assert_eq!(full.error_code, 0);
    let id = full.session_id;
    assert!(id > 0, "a full fetch at epoch 0 gets a session: {full:?}");
    assert_eq!(answered(&full).len(), 20);
    assert_eq!(metric(&node, "samsa_fetch_sessions "), 1.0);
    assert_eq!(metric(&node, "samsa_fetch_session_partitions "), 20.0);

    // Nothing changed: an empty answer, after the long poll.
    let quiet = fetch(&node, id, 1, &[], 100);
    assert_eq!((quiet.error_code, quiet.session_id), (0, id));
    assert_eq!(answered(&quiet), vec![]);

    assert_eq!(produce_raw(&node, "sessions", 7), 0);
    let news = fetch(&node, id, 2, &[], 0);
    assert_eq!((news.error_code, news.session_id), (0, id));
    assert_eq!(
        answered(&news),
        vec![(7, true)],
        "only the partition produced to"
    );
    assert_eq!(news.responses[0].partitions[0].high_watermark, 1);

    // The fetcher moves on in partition 7: nothing new anywhere.
    let quiet = fetch(&node, id, 3, &[(7, 1)], 100);
    assert_eq!(answered(&quiet), vec![]);

    // A long poll that names no partition wakes for a write to any partition of the session.
    let started = Instant::now();
    let produced = std::thread::scope(|s| {
        let t = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            produce_raw(&node, "sessions", 3)
        });
        let woke = fetch(&node, id, 4, &[], 10_000);
        (t.join().unwrap(), woke)
    });
    assert_eq!(produced.0, 0);
    assert_eq!(answered(&produced.1), vec![(3, true)]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woken by the write, not the timeout: {:?}",
        started.elapsed()
    );

    // A wrong epoch, and a session that does not exist.
    let wrong = fetch(&node, id, 9, &[], 0);
    assert_eq!(
        (wrong.error_code, answered(&wrong)),
        (ResponseError::InvalidFetchSessionEpoch.code(), vec![])
    );
    let unknown = if id == i32::MAX { id - 1 } else { id + 1 };
    let missing = fetch(&node, unknown, 1, &[], 0);
    assert_eq!(
        missing.error_code,
        ResponseError::FetchSessionIdNotFound.code()
    );
    // The session survived both.
    let quiet = fetch(&node, id, 5, &[(3, 1)], 0);
    assert_eq!((quiet.error_code, answered(&quiet)), (0, vec![]));

    // Epoch -1 closes it: answered without a session, and the id is gone.
    let closing = fetch(&node, id, -1, &[(0, 0)], 0);
    assert_eq!((closing.error_code, closing.session_id), (0, 0));
    assert_eq!(answered(&closing), vec![(0, false)]);
    let gone = fetch(&node, id, 6, &[], 0);
    assert_eq!(
        gone.error_code,
        ResponseError::FetchSessionIdNotFound.code()
    );
    assert_eq!(metric(&node, "samsa_fetch_sessions "), 0.0);
}
