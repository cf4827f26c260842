//! cleanup.policy=compact: latest record per key, tombstones, offsets preserved, codecs.

use std::collections::HashMap;
use std::path::Path;

use samsa_storage::batch::{batches, Compression};
use samsa_storage::test_support::{open_log, read_keyed_records, BatchBuilder, KeyedRecord};
use samsa_storage::{CleanupPolicy, Log, LogConfig, LogDir, TopicPartition};

const NOW: i64 = 1_700_000_000_000;

fn open(dir: &Path, config: LogConfig) -> (LogDir, Log) {
    open_log(dir, &TopicPartition::new("__consumer_offsets", 7), config)
}

fn compacted() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        segment_bytes: 600,
        tail_cache_bytes: 0,
        delete_retention_ms: 1000,
        ..LogConfig::default()
    }
}

fn contents(log: &mut Log) -> Vec<KeyedRecord> {
    read_keyed_records(log)
}

fn put(log: &mut Log, key: &str, value: Option<&str>, codec: Compression) {
    let b = BatchBuilder::new()
        .timestamps(NOW)
        .compression(codec)
        .record(Some(key.as_bytes()), value.map(str::as_bytes))
        .build();
    log.append(b, 0, NOW).unwrap();
}

#[test]
fn compaction_keeps_the_latest_value_per_key_at_its_original_offset() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_d, mut log) = open(dir.path(), compacted());
        let mut latest: HashMap<String, (i64, String)> = HashMap::new();
        for i in 0..60 {
            let key = format!("key-{}", i % 7);
            let value = format!("value-{i}");
            put(&mut log, &key, Some(&value), codec);
            latest.insert(key, (i, value));
        }
        assert!(log.segment_count() > 3);
        let before = log.size_bytes();
        let report = log.compact_with_report(NOW).unwrap();
        assert!(report.segments_cleaned > 0, "{codec:?}");
        assert!(report.records_removed > 0);
        assert!(log.size_bytes() < before);
        let after = contents(&mut log);
        // Offsets strictly increase and every latest value is present at its own offset.
        assert!(after.windows(2).all(|w| w[0].0 < w[1].0));
        for (key, (offset, value)) in &latest {
            assert!(
                after.contains(&(
                    *offset,
                    key.as_bytes().to_vec(),
                    Some(value.as_bytes().to_vec())
                )),
                "{codec:?} {key}"
            );
        }
        // In the cleaned range each key appears once.
        let active = *log.segment_base_offsets().last().unwrap();
        let mut seen = HashMap::new();
        for (o, k, _) in after.iter().filter(|(o, _, _)| *o < active) {
            assert!(
                seen.insert(k.clone(), *o).is_none(),
                "{codec:?}: duplicate key in cleaned segments"
            );
        }
        assert_eq!(log.log_end_offset(), 60);
        // The cleaned log survives a restart.
        drop(log);
        drop(_d);
        let (_d, mut log) = open(dir.path(), compacted());
        assert_eq!(contents(&mut log), after);
    }
}

#[test]
fn tombstones_are_kept_for_delete_retention_ms_then_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    put(&mut log, "gone", Some("v1"), Compression::None);
    put(&mut log, "gone", None, Compression::None);
    for i in 0..30 {
        put(
            &mut log,
            &format!("filler-{i}"),
            Some("x"),
            Compression::None,
        );
    }
    log.compact(NOW + 10).unwrap();
    let c = contents(&mut log);
    assert!(
        !c.iter().any(|(o, _, _)| *o == 0),
        "the overwritten value goes"
    );
    assert!(
        c.iter()
            .any(|(o, k, v)| *o == 1 && k == b"gone" && v.is_none()),
        "a young tombstone stays"
    );
    log.compact(NOW + 2000).unwrap();
    let c = contents(&mut log);
    assert!(
        !c.iter().any(|(_, k, _)| k == b"gone"),
        "an old tombstone goes"
    );
}

#[test]
fn min_compaction_lag_protects_young_segments_and_the_active_segment_is_never_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_compaction_lag_ms: 60_000,
        ..compacted()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..20 {
        put(&mut log, "k", Some("v"), Compression::None);
    }
    assert_eq!(
        log.compact_with_report(NOW + 1000)
            .unwrap()
            .segments_cleaned,
        0
    );
    let report = log.compact_with_report(NOW + 120_000).unwrap();
    assert!(report.segments_cleaned > 0);
    let c = contents(&mut log);
    // The latest "k" lives in the active segment; cleaned segments keep their own latest only.
    assert_eq!(c.last().unwrap().0, 19);
}

#[test]
fn batches_with_a_producer_id_leave_an_empty_batch_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    let idempotent = BatchBuilder::new()
        .timestamps(NOW)
        .producer(77, 1, 0)
        .record(Some(b"k"), Some(b"old"))
        .build();
    log.append(idempotent, 0, NOW).unwrap();
    for i in 0..20 {
        put(&mut log, "k", Some(&format!("new-{i}")), Compression::Zstd);
    }
    log.compact(NOW).unwrap();
    let bytes = log
        .read(0, 1 << 20, i64::MAX, true)
        .unwrap()
        .load()
        .unwrap();
    let first = batches(&bytes).next().unwrap().unwrap();
    let h = first.header();
    assert_eq!(
        (
            h.base_offset,
            h.record_count,
            h.producer_id,
            h.base_sequence
        ),
        (0, 0, 77, 0)
    );
    assert_eq!(h.compression(), Some(Compression::None));
    first.validate_integrity().unwrap();
}

#[test]
fn control_batches_survive_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    let marker = BatchBuilder::new()
        .timestamps(NOW)
        .producer(5, 0, -1)
        .transactional(true)
        .control(true)
        .record(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]))
        .build();
    put(&mut log, "k", Some("v"), Compression::None);
    log.append(marker, 0, NOW).unwrap();
    for _ in 0..20 {
        put(&mut log, "k", Some("v2"), Compression::None);
    }
    log.compact(NOW).unwrap();
    let bytes = log
        .read(0, 1 << 20, i64::MAX, true)
        .unwrap()
        .load()
        .unwrap();
    assert!(batches(&bytes).any(|b| b.unwrap().header().is_control()));
}

#[test]
fn delete_policy_logs_are_not_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::Delete,
        ..compacted()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..20 {
        put(&mut log, "k", Some("v"), Compression::None);
    }
    assert_eq!(log.compact_with_report(NOW).unwrap().segments_cleaned, 0);
    assert_eq!(contents(&mut log).len(), 20);
}

#[test]
fn a_pass_with_nothing_dirty_does_nothing_and_new_data_supersedes_cleaned_records() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    for i in 0..30 {
        put(
            &mut log,
            &format!("k{}", i % 3),
            Some("first"),
            Compression::None,
        );
    }
    assert!(log.compact_with_report(NOW).unwrap().segments_cleaned > 0);
    assert_eq!(
        log.compact_with_report(NOW).unwrap().segments_cleaned,
        0,
        "nothing new to clean"
    );
    let k0_before: Vec<i64> = contents(&mut log)
        .iter()
        .filter(|(_, k, _)| k == b"k0")
        .map(|(o, _, _)| *o)
        .collect();
    // New values for k0 roll into new segments; the next pass removes the cleaned k0.
    for _ in 0..30 {
        put(&mut log, "k0", Some("second"), Compression::None);
    }
    assert!(log.compact_with_report(NOW).unwrap().segments_cleaned > 0);
    let after = contents(&mut log);
    for o in k0_before
        .iter()
        .filter(|&&o| o < *log.segment_base_offsets().last().unwrap())
    {
        assert!(
            !after
                .iter()
                .any(|(x, k, v)| x == o && k == b"k0" && v.as_deref() == Some(&b"first"[..])),
            "offset {o}"
        );
    }
    assert!(after.iter().any(|(_, k, _)| k == b"k1"), "other keys stay");
}
