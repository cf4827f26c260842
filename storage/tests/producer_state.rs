//! Idempotence and transactions in the log: duplicate and sequence checks through `append`,
//! producer snapshots and the rebuild after a restart or a crash, the last stable offset, the
//! transaction index, truncation, expiry, and compaction around transactions.

use std::fs;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use samsa_storage::test_support::{open_log, wall_clock_ms, BatchBuilder};
use samsa_storage::{
    AbortedTxn, CleanupPolicy, EndTxnMarker, Log, LogConfig, LogDir, LogError, TopicPartition,
};

const NOW: i64 = 1_700_000_000_000;

fn tp() -> TopicPartition {
    TopicPartition::new("payments", 0)
}

fn open(dir: &Path, config: LogConfig) -> (LogDir, Log) {
    open_log(dir, &tp(), config)
}

fn part_dir(dir: &Path) -> PathBuf {
    dir.join("payments-0")
}

/// A batch of `n` records from producer `pid` at `epoch`, sequences from `seq`.
fn produced(pid: i64, epoch: i16, seq: i32, n: usize) -> Bytes {
    BatchBuilder::new()
        .timestamps(wall_clock_ms())
        .producer(pid, epoch, seq)
        .records(n, 10)
        .build()
}

fn transactional(pid: i64, epoch: i16, seq: i32, n: usize) -> Bytes {
    BatchBuilder::new()
        .timestamps(wall_clock_ms())
        .producer(pid, epoch, seq)
        .transactional(true)
        .records(n, 10)
        .build()
}

fn commit(log: &mut Log, pid: i64, epoch: i16) -> i64 {
    marker(log, pid, epoch, true)
}

fn abort(log: &mut Log, pid: i64, epoch: i16) -> i64 {
    marker(log, pid, epoch, false)
}

fn marker(log: &mut Log, pid: i64, epoch: i16, commit: bool) -> i64 {
    let m = EndTxnMarker {
        commit,
        coordinator_epoch: 0,
    };
    log.append_control(pid, epoch, m, 0, NOW)
        .unwrap()
        .base_offset
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 600,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

fn snapshots(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(part_dir(dir))
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.ends_with(".snapshot"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_retried_batch_gets_its_original_offsets_and_is_not_written_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    let first = log.append(produced(7, 0, 0, 3), 0, NOW).unwrap();
    let second = log.append(produced(7, 0, 3, 2), 0, NOW).unwrap();
    assert_eq!((second.base_offset, second.last_offset), (3, 4));
    assert!(!second.duplicate);
    let retry = log.append(produced(7, 0, 0, 3), 0, NOW).unwrap();
    assert!(retry.duplicate);
    assert_eq!(
        (retry.base_offset, retry.last_offset),
        (first.base_offset, first.last_offset)
    );
    // Kafka reports the original batch's timestamp as the duplicate's append time.
    assert_eq!(retry.log_append_time_ms, first.max_timestamp_ms);
    assert_eq!(log.log_end_offset(), 5);
    log.append(produced(7, 0, 5, 1), 0, NOW).unwrap();
    assert_eq!(log.log_end_offset(), 6);
}

#[test]
fn a_sequence_gap_is_out_of_order_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    log.append(produced(7, 0, 0, 2), 0, NOW).unwrap();
    let err = log.append(produced(7, 0, 3, 1), 0, NOW).unwrap_err();
    assert!(matches!(err, LogError::OutOfOrderSequence(_)), "{err}");
    assert_eq!(log.log_end_offset(), 2);
    // A zombie's older epoch is fenced; a bumped epoch must start at sequence 0.
    log.append(produced(7, 1, 0, 1), 0, NOW).unwrap();
    let zombie = log.append(produced(7, 0, 2, 1), 0, NOW).unwrap_err();
    assert!(
        matches!(zombie, LogError::InvalidProducerEpoch(_)),
        "{zombie}"
    );
    let bad_bump = log.append(produced(7, 2, 5, 1), 0, NOW).unwrap_err();
    assert!(matches!(bad_bump, LogError::OutOfOrderSequence(_)));
    assert_eq!(log.log_end_offset(), 3);
}

#[test]
fn clients_may_not_write_markers_or_unsequenced_producer_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    let (key, value) = EndTxnMarker {
        commit: true,
        coordinator_epoch: 0,
    }
    .key_and_value();
    let forged = BatchBuilder::new()
        .producer(1, 0, -1)
        .transactional(true)
        .control(true)
        .record(Some(&key), Some(&value))
        .build();
    assert!(matches!(
        log.append(forged, 0, NOW),
        Err(LogError::InvalidRecord { .. })
    ));
    assert!(matches!(
        log.append(produced(1, 0, -1, 1), 0, NOW),
        Err(LogError::InvalidRecord { .. })
    ));
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn a_retry_after_a_clean_restart_is_recognised_for_each_of_the_last_five_batches() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_d, mut log) = open(dir.path(), LogConfig::default());
        for i in 0..6 {
            log.append(produced(3, 0, i * 2, 2), 0, NOW).unwrap();
        }
        log.close().unwrap();
    }
    assert_eq!(snapshots(dir.path()), vec!["00000000000000000012.snapshot"]);
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    for i in 1..6 {
        let retry = log.append(produced(3, 0, i * 2, 2), 0, NOW).unwrap();
        assert!(retry.duplicate, "batch {i}");
        assert_eq!(retry.base_offset, i as i64 * 2);
    }
    assert_eq!(log.log_end_offset(), 12);
    log.append(produced(3, 0, 12, 1), 0, NOW).unwrap();
}

#[test]
fn a_retry_after_a_crash_is_recognised_from_the_snapshot_plus_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_d, mut log) = open(dir.path(), small_segments());
        for i in 0..20 {
            log.append(produced(3, 0, i, 1), 0, NOW).unwrap();
        }
        assert!(log.segment_count() >= 3);
        // Crash: no close, no clean-shutdown marker; snapshots exist only at the rolls.
    }
    let (_d, mut log) = open(dir.path(), small_segments());
    for i in 15..20 {
        assert!(log.append(produced(3, 0, i, 1), 0, NOW).unwrap().duplicate);
    }
    assert!(matches!(
        log.append(produced(3, 0, 21, 1), 0, NOW),
        Err(LogError::OutOfOrderSequence(_))
    ));
    log.append(produced(3, 0, 20, 1), 0, NOW).unwrap();
}

#[test]
fn a_torn_snapshot_falls_back_to_an_older_one() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_d, mut log) = open(dir.path(), small_segments());
        for i in 0..12 {
            log.append(produced(3, 0, i, 1), 0, NOW).unwrap();
        }
        log.flush_now().unwrap();
        log.append(produced(3, 0, 12, 1), 0, NOW).unwrap();
    }
    let latest = snapshots(dir.path()).pop().unwrap();
    let path = part_dir(dir.path()).join(&latest);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    assert!(log.append(produced(3, 0, 12, 1), 0, NOW).unwrap().duplicate);
    assert!(!snapshots(dir.path()).contains(&latest));
}

#[test]
fn snapshots_past_the_log_end_are_ignored_after_the_tail_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_d, mut log) = open(dir.path(), LogConfig::default());
        log.append(produced(3, 0, 0, 1), 0, NOW).unwrap();
        log.flush_now().unwrap();
        log.append(produced(3, 0, 1, 1), 0, NOW).unwrap();
        log.flush_now().unwrap();
    }
    // Power loss took the second batch, but its snapshot survived.
    let seg = part_dir(dir.path()).join("00000000000000000000.log");
    let len = fs::metadata(&seg).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len / 2).unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), 1);
    // The state is the one before the lost batch: its retry is written, not a duplicate.
    let again = log.append(produced(3, 0, 1, 1), 0, NOW).unwrap();
    assert!(!again.duplicate);
    assert_eq!(again.base_offset, 1);
}

#[test]
fn read_committed_stops_at_the_first_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    log.append(produced(1, 0, 0, 2), 0, NOW).unwrap(); // 0-1
    log.append(transactional(2, 0, 0, 2), 0, NOW).unwrap(); // 2-3
    log.append(transactional(3, 0, 0, 1), 0, NOW).unwrap(); // 4
    log.append(produced(1, 0, 2, 1), 0, NOW).unwrap(); // 5
    assert_eq!(log.last_stable_offset(6), 2);
    assert!(log.has_ongoing_transaction(2));
    assert_eq!(commit(&mut log, 2, 0), 6);
    // A high watermark below the marker keeps the completed transaction unstable.
    assert_eq!(log.last_stable_offset(6), 2);
    // Producer 3's transaction still holds the LSO at its first offset.
    assert_eq!(log.last_stable_offset(7), 4);
    assert_eq!(abort(&mut log, 3, 0), 7);
    assert_eq!(log.last_stable_offset(8), 8);
    assert_eq!(
        log.aborted_transactions(0, 8).unwrap(),
        vec![AbortedTxn {
            producer_id: 3,
            first_offset: 4,
            last_offset: 7,
            last_stable_offset: 8
        }]
    );
    assert!(log.aborted_transactions(8, 9).unwrap().is_empty());
    assert_eq!(log.aborted_transactions(5, 6).unwrap().len(), 1);
}

#[test]
fn a_transactional_producer_cannot_write_outside_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    log.append(transactional(2, 0, 0, 1), 0, NOW).unwrap();
    assert!(matches!(
        log.append(produced(2, 0, 1, 1), 0, NOW),
        Err(LogError::InvalidTxnState(_))
    ));
    commit(&mut log, 2, 0);
    log.append(produced(2, 0, 1, 1), 0, NOW).unwrap();
    // A marker from an older coordinator epoch is a zombie coordinator's.
    log.append(transactional(2, 0, 2, 1), 0, NOW).unwrap();
    let m = EndTxnMarker {
        commit: true,
        coordinator_epoch: 3,
    };
    log.append_control(2, 0, m, 0, NOW).unwrap();
    let stale = EndTxnMarker {
        commit: true,
        coordinator_epoch: 2,
    };
    assert!(matches!(
        log.append_control(2, 0, stale, 0, NOW),
        Err(LogError::CoordinatorFenced(_))
    ));
}

#[test]
fn the_transaction_index_survives_restarts_and_is_rebuilt_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let active_base;
    {
        let (_d, mut log) = open(dir.path(), small_segments());
        for round in 0..10i32 {
            log.append(transactional(9, 0, round * 2, 2), 0, NOW)
                .unwrap();
            if round % 2 == 0 {
                abort(&mut log, 9, 0);
            } else {
                commit(&mut log, 9, 0);
            }
        }
        assert!(log.segment_count() > 2);
        // The last abort lands in the active segment; one more transaction stays open.
        log.append(transactional(9, 0, 20, 1), 0, NOW).unwrap();
        abort(&mut log, 9, 0);
        log.append(transactional(9, 0, 21, 1), 0, NOW).unwrap();
        active_base = *log.segment_base_offsets().last().unwrap();
        let all = log.aborted_transactions(0, log.log_end_offset()).unwrap();
        assert_eq!(all.len(), 6);
        assert!(all[5].last_offset >= active_base);
        // Crash, losing the active segment's index write (it is not synced on append).
    }
    let lost = part_dir(dir.path()).join(format!("{active_base:020}.txnindex"));
    fs::remove_file(&lost).unwrap();
    let (d, mut log) = open(dir.path(), small_segments());
    let leo = log.log_end_offset();
    assert_eq!(log.aborted_transactions(0, leo).unwrap().len(), 6);
    assert!(lost.exists());
    // The open transaction is open again, and holds the LSO.
    assert_eq!(log.last_stable_offset(leo), leo - 1);
    abort(&mut log, 9, 0);
    assert_eq!(log.aborted_transactions(0, leo + 1).unwrap().len(), 7);
    log.close().unwrap();
    drop(d);
    let (_d, log) = open(dir.path(), small_segments());
    assert_eq!(log.aborted_transactions(0, leo + 1).unwrap().len(), 7);
}

#[test]
fn truncation_rewinds_producer_state_and_the_transaction_index() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    for i in 0..6 {
        log.append(produced(4, 0, i, 1), 0, NOW).unwrap();
    }
    log.append(transactional(5, 0, 0, 1), 0, NOW).unwrap(); // 6
    abort(&mut log, 5, 0); // 7
    log.truncate_to(4).unwrap();
    assert_eq!(log.log_end_offset(), 4);
    assert!(log.aborted_transactions(0, 10).unwrap().is_empty());
    assert!(!log.has_ongoing_transaction(5));
    // Sequence 4 was cut off: it is written again, not answered as a duplicate.
    let again = log.append(produced(4, 0, 4, 1), 0, NOW).unwrap();
    assert!(!again.duplicate);
    assert_eq!(again.base_offset, 4);
    log.truncate_fully_and_start_at(100).unwrap();
    assert!(log.active_producers().is_empty());
    assert!(snapshots(dir.path()).is_empty());
    log.append(produced(4, 0, 77, 1), 0, NOW).unwrap();
}

#[test]
fn idle_producers_expire_but_not_while_a_transaction_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        producer_id_expiration_ms: 1000,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    log.append(produced(1, 0, 0, 1), 0, NOW).unwrap();
    log.append(transactional(2, 0, 0, 1), 0, NOW).unwrap();
    log.maintenance(wall_clock_ms() + 10_000).unwrap();
    let left: Vec<i64> = log
        .active_producers()
        .iter()
        .map(|p| p.producer_id)
        .collect();
    assert_eq!(left, vec![2]);
    // An expired producer is unknown: any sequence is accepted (Kafka 4).
    log.append(produced(1, 0, 500, 1), 0, NOW).unwrap();
}

fn compacted() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        segment_bytes: 400,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

fn keyed(pid: i64, epoch: i16, seq: i32, key: &str, value: &str, txn: bool) -> Bytes {
    BatchBuilder::new()
        .timestamps(NOW)
        .producer(pid, epoch, seq)
        .transactional(txn)
        .record(Some(key.as_bytes()), Some(value.as_bytes()))
        .build()
}

fn values(log: &mut Log) -> Vec<(i64, String, String)> {
    samsa_storage::test_support::read_keyed_records(log)
        .into_iter()
        .map(|(o, k, v)| {
            (
                o,
                String::from_utf8(k).unwrap(),
                String::from_utf8(v.unwrap_or_default()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn compaction_drops_aborted_records_instead_of_the_committed_values_they_shadow() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    log.append(keyed(1, 0, 0, "k", "committed", true), 0, NOW)
        .unwrap();
    commit(&mut log, 1, 0);
    log.append(keyed(1, 0, 1, "k", "aborted", true), 0, NOW)
        .unwrap();
    abort(&mut log, 1, 0);
    for i in 0..10 {
        log.append(keyed(2, 0, i, &format!("filler{i}"), "x", false), 0, NOW)
            .unwrap();
    }
    log.compact(NOW).unwrap();
    let all = values(&mut log);
    assert!(
        all.iter().any(|(_, k, v)| k == "k" && v == "committed"),
        "{all:?}"
    );
    assert!(!all.iter().any(|(_, _, v)| v == "aborted"), "{all:?}");
    // The markers stay, and so does the index entry.
    assert_eq!(
        log.aborted_transactions(0, log.log_end_offset())
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn compaction_stops_at_an_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    log.append(keyed(1, 0, 0, "k", "old", true), 0, NOW)
        .unwrap();
    for i in 0..10 {
        log.append(keyed(2, 0, i, "k", &format!("v{i}"), false), 0, NOW)
            .unwrap();
    }
    assert!(log.segment_count() > 2);
    let report = log.compact_with_report(NOW).unwrap();
    assert_eq!(report.segments_cleaned, 0);
    commit(&mut log, 1, 0);
    for i in 10..14 {
        log.append(keyed(2, 0, i, "k", &format!("v{i}"), false), 0, NOW)
            .unwrap();
    }
    assert!(log.compact_with_report(NOW).unwrap().segments_cleaned > 0);
    assert!(!values(&mut log).iter().any(|(_, _, v)| v == "old"));
}

#[test]
fn keyless_records_on_a_compacted_topic_are_reported_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), compacted());
    let b = BatchBuilder::new()
        .record(Some(b"a"), Some(b"1"))
        .record(None, Some(b"2"))
        .record(Some(b"c"), Some(b"3"))
        .record(None, Some(b"4"))
        .build();
    match log.append(b, 0, NOW) {
        Err(LogError::InvalidRecord { record_errors, .. }) => {
            let idx: Vec<i32> = record_errors.iter().map(|e| e.batch_index).collect();
            assert_eq!(idx, vec![1, 3]);
            assert!(record_errors[0].message.contains("without key"));
        }
        other => panic!("expected INVALID_RECORD, got {other:?}"),
    }
}
