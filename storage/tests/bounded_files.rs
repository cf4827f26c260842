//! Many partitions under a small file cache (`file_cache.rs`): the process holds a bounded
//! number of descriptors however many logs are open, and every log still appends, rolls,
//! reads, flushes, truncates, closes and recovers as before, its files reopened on demand.
//! One test in its own binary: it shrinks the process-wide cache.

use std::path::Path;

use samsa_storage::file_cache::FileCache;
use samsa_storage::test_support::{offsets_read, BatchBuilder};
use samsa_storage::{Log, LogConfig, LogDir, TopicPartition};

const NOW: i64 = 1_700_000_000_000;
const PARTITIONS: i32 = 400;
const CAPACITY: usize = 32;

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn config() -> LogConfig {
    LogConfig {
        // A roll every few batches: sealed segments, pending syncs and closed segments too.
        segment_bytes: 1800,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

fn open_all(dir: &Path) -> (LogDir, Vec<(TopicPartition, Log)>) {
    let (d, mut logs) = LogDir::open(dir, |_| config()).unwrap();
    logs.sort_by_key(|(tp, _)| tp.partition);
    (d, logs)
}

#[test]
fn hundreds_of_logs_work_through_a_cache_of_a_few_dozen_descriptors() {
    FileCache::global().set_capacity(CAPACITY);
    let dir = tempfile::tempdir().unwrap();
    let before = open_descriptors();
    let (d, _) = open_all(dir.path());
    let mut logs: Vec<Log> = (0..PARTITIONS)
        .map(|p| {
            d.create_log(&TopicPartition::new("t", p), config())
                .unwrap()
        })
        .collect();
    let mut peak = 0;
    // Interleaved appends: every append finds its file closed by the others'.
    for round in 0..6 {
        for log in logs.iter_mut() {
            let b = BatchBuilder::new()
                .timestamps(NOW + round)
                .records(4, 200)
                .build();
            log.append(b, 0, NOW + round).unwrap();
            peak = peak.max(open_descriptors());
        }
    }
    for log in logs.iter_mut() {
        assert!(log.segment_count() >= 3, "{} rolled", log.topic_partition());
        assert_eq!(offsets_read(log), (0..24).collect::<Vec<i64>>());
        peak = peak.max(open_descriptors());
    }
    // The cache, the directory lock and a file in use at a time: nothing per partition.
    assert!(
        peak - before <= CAPACITY + 4,
        "{} descriptors for {PARTITIONS} partitions (cache {CAPACITY})",
        peak - before
    );
    let stats = FileCache::global().stats();
    assert!(stats.evictions > PARTITIONS as u64, "{stats:?}");
    assert!(stats.open <= CAPACITY, "{stats:?}");

    // Flushes and truncations reach files the cache had closed.
    for (i, log) in logs.iter_mut().enumerate() {
        if i % 2 == 0 {
            log.truncate_to(8).unwrap();
        }
        log.flush_now().unwrap();
        assert!(!log.has_unflushed_writes());
    }
    let mut checkpoints = Vec::new();
    for log in logs {
        let tp = log.topic_partition().clone();
        checkpoints.push((tp, log.close().unwrap()));
    }
    d.write_checkpoints(&checkpoints).unwrap();
    d.mark_clean_shutdown().unwrap();
    drop(d);

    // Reopened: the same records, and still a bounded number of descriptors.
    let (d, mut logs) = open_all(dir.path());
    assert_eq!(logs.len(), PARTITIONS as usize);
    for (tp, log) in logs.iter_mut() {
        let expect = if tp.partition % 2 == 0 { 8 } else { 24 };
        assert_eq!(offsets_read(log), (0..expect).collect::<Vec<i64>>(), "{tp}");
        log.append(BatchBuilder::new().records(1, 10).build(), 0, NOW)
            .unwrap();
    }
    assert!(open_descriptors() - before <= CAPACITY + 4);
    drop(logs);
    drop(d);
}
