//! Segments over time: rolls, retention, truncation, DeleteRecords, leader epochs, faults,
//! flush policies, index rebuilds and bounded recovery.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use samsa_storage::batch::BatchHeader;
use samsa_storage::test_support::{offsets_read, open_log, BatchBuilder};
use samsa_storage::{GroupCommit, Log, LogConfig, LogDir, LogError, TopicPartition};

const NOW: i64 = 1_700_000_000_000;

fn tp() -> TopicPartition {
    TopicPartition::new("events", 0)
}

fn open(dir: &Path, config: LogConfig) -> (LogDir, Log) {
    open_log(dir, &tp(), config)
}

fn part_dir(dir: &Path) -> PathBuf {
    dir.join("events-0")
}

fn batch_at(ts: i64, n: usize, value_bytes: usize) -> Bytes {
    BatchBuilder::new()
        .timestamps(ts)
        .records(n, value_bytes)
        .build()
}

/// `config` with Samsa's durable mode.
fn durable(config: LogConfig) -> LogConfig {
    LogConfig {
        durable: true,
        ..config
    }
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 2000,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

#[test]
fn retention_by_time_deletes_old_segments_the_active_one_too() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_ms: 1000,
        ..small_segments()
    };
    let (_d, mut log) = open(dir.path(), config);
    for i in 0..10 {
        log.append(batch_at(NOW + i * 100, 1, 600), 0, NOW).unwrap();
    }
    let before = log.segment_count();
    assert!(before >= 4);
    // Nothing above the high watermark goes: every in-sync replica must have it first.
    assert_eq!(log.retention(NOW + 1_000_000).unwrap().deleted_segments, 0);
    log.set_high_watermark(log.log_end_offset());
    // At NOW + 1500 only segments whose newest record is older than NOW + 500 go.
    let r = log.retention(NOW + 1500).unwrap();
    assert!(r.deleted_segments > 0);
    assert!(!r.rolled);
    assert!(log.log_start_offset() > 0);
    assert!(log.segment_base_offsets()[0] == log.log_start_offset());
    assert_eq!(
        offsets_read(&mut log),
        (log.log_start_offset()..10).collect::<Vec<_>>()
    );
    // Far in the future everything goes, the active segment too (Kafka rolls it first): the
    // log is empty from its end on, and the next record follows the old ones.
    assert!(log.retention(NOW + 1_000_000).unwrap().rolled);
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), 10);
    assert_eq!(log.log_end_offset(), 10);
    assert_eq!(log.segment_base_offsets(), vec![10]);
    // An empty active segment stays.
    assert!(!log.retention(NOW + 2_000_000).unwrap().rolled);
    assert_eq!(
        log.append(batch_at(NOW, 1, 10), 0, NOW)
            .unwrap()
            .base_offset,
        10
    );
}

#[test]
fn the_retention_check_empties_a_single_segment_topic() {
    // The common "purge a topic by lowering retention.ms": ten fresh records in the active
    // segment go at the next check once they are older than retention.ms.
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    for i in 0..10 {
        log.append(batch_at(NOW + i, 1, 10), 0, NOW).unwrap();
    }
    log.set_high_watermark(10);
    assert_eq!(log.retention(NOW + 100).unwrap().deleted_segments, 0);
    let mut c = log.config().clone();
    c.retention_ms = 50;
    log.set_config(c);
    let r = log.retention(NOW + 100).unwrap();
    assert_eq!((r.deleted_segments, r.log_start_offset), (1, 10));
    assert_eq!(log.segment_base_offsets(), vec![10]);
    // Compacted topics are not retention's.
    let mut c = log.config().clone();
    c.cleanup_policy = samsa_storage::CleanupPolicy::Compact;
    log.set_config(c);
    log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    log.set_high_watermark(11);
    assert_eq!(log.retention(NOW + 1_000_000).unwrap().deleted_segments, 0);
}

#[test]
fn retention_by_size_keeps_at_least_retention_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: 3000,
        retention_ms: -1,
        ..small_segments()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..20 {
        log.append(batch_at(NOW, 1, 600), 0, NOW).unwrap();
    }
    log.set_high_watermark(log.log_end_offset());
    let r = log.retention(NOW).unwrap();
    assert!(r.deleted_segments > 0);
    assert!(log.size_bytes() >= 3000 - 2000, "{}", log.size_bytes());
    assert!(log.size_bytes() < 3000 + 2000);
    assert_eq!(
        offsets_read(&mut log),
        (log.log_start_offset()..20).collect::<Vec<_>>()
    );
}

#[test]
fn minus_one_means_keep_forever() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: -1,
        retention_ms: -1,
        ..small_segments()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..10 {
        log.append(batch_at(0, 1, 600), 0, NOW).unwrap();
    }
    let n = log.segment_count();
    log.set_high_watermark(log.log_end_offset());
    assert_eq!(log.retention(i64::MAX / 2).unwrap().deleted_segments, 0);
    assert!(log.segment_count() >= n);
}

#[test]
fn segment_ms_rolls_at_a_record_stamped_that_long_after_the_segments_first() {
    // Kafka's `LogSegment.shouldRoll`: in record time, from the first batch's largest
    // timestamp to the new batch's, whatever the clock says.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config.clone());
    log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    // The clock alone rolls nothing: neither at append nor in maintenance.
    log.append(batch_at(NOW + 1000, 1, 10), 0, NOW + 60_000)
        .unwrap();
    assert!(!log.maintenance(NOW + 120_000).unwrap().rolled);
    assert_eq!(log.segment_base_offsets(), vec![0]);
    // A record stamped more than segment.ms after the first rolls the segment before it.
    log.append(batch_at(NOW + 1001, 1, 10), 0, NOW).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    // Reopened, the active segment's first timestamp is read back from its file.
    drop(log);
    drop(_d);
    let (_d, mut log) = open(dir.path(), config);
    log.append(batch_at(NOW + 2001, 1, 10), 0, NOW).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    log.append(batch_at(NOW + 2002, 1, 10), 0, NOW).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2, 4]);
}

#[test]
fn a_full_index_rolls_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    // Room for 2 offset entries (16 bytes) and 1 time entry; index every batch.
    let config = LogConfig {
        segment_index_bytes: 16,
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..10 {
        log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    }
    assert!(log.segment_count() >= 3, "{}", log.segment_count());
    assert_eq!(offsets_read(&mut log), (0..10).collect::<Vec<_>>());
}

#[test]
fn truncate_to_removes_the_tail_and_the_log_continues() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    for e in 0..10 {
        log.append(batch_at(NOW, 2, 300), e / 3, NOW).unwrap();
    }
    assert_eq!(log.log_end_offset(), 20);
    // Offset 9 is inside the batch 8..9: the whole batch goes (Kafka truncates to batch starts).
    log.truncate_to(9).unwrap();
    assert_eq!(log.log_end_offset(), 8);
    assert_eq!(offsets_read(&mut log), (0..8).collect::<Vec<_>>());
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 8)));
    assert_eq!(log.end_offset_for_epoch(3), None);
    assert_eq!(
        log.append(batch_at(NOW, 1, 10), 7, NOW)
            .unwrap()
            .base_offset,
        8
    );
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 8)));
    assert_eq!(log.end_offset_for_epoch(7), Some((7, 9)));
    // Survives a reopen.
    drop(log);
    drop(_d);
    let (_d, mut log) = open(dir.path(), small_segments());
    assert_eq!(log.log_end_offset(), 9);
    assert_eq!(offsets_read(&mut log), (0..9).collect::<Vec<_>>());
    assert_eq!(log.leader_epochs(), &[(0, 0), (1, 6), (7, 8)]);
}

#[test]
fn truncating_at_the_log_end_drops_an_epoch_that_never_wrote() {
    // This broker led epoch 4 from its log end and wrote nothing before losing it; its new
    // leader never had epoch 4 and names the end as where they diverge.
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    log.append(batch_at(NOW, 2, 10), 3, NOW).unwrap();
    log.assign_leader_epoch(4, 2).unwrap();
    assert_eq!(log.latest_epoch(), Some(4));
    log.truncate_to(2).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.latest_epoch(), Some(3));
    assert_eq!(log.leader_epochs(), &[(3, 0)]);
}

#[test]
fn flush_now_has_nothing_to_do_until_the_files_change_again() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    assert!(log.has_unflushed_writes(), "a log never flushed");
    log.flush_now().unwrap();
    assert!(!log.has_unflushed_writes());
    for e in 0..3 {
        log.append(batch_at(NOW, 2, 300), e, NOW).unwrap();
        assert!(log.has_unflushed_writes(), "an append");
        log.flush_now().unwrap();
        assert!(!log.has_unflushed_writes());
        assert_eq!(log.flushed_offset(), log.log_end_offset());
    }
    // Appends that roll segments: the rolled ones wait for their sync too.
    for _ in 0..10 {
        log.append(batch_at(NOW, 2, 300), 3, NOW).unwrap();
    }
    assert!(log.segment_count() > 1);
    assert!(log.has_unflushed_writes());
    log.flush_now().unwrap();
    assert!(!log.has_unflushed_writes());
    assert_eq!(log.flushed_offset(), 26);
    // A truncation changes the files even when the log then ends where it ended before.
    log.truncate_to(24).unwrap();
    assert!(log.has_unflushed_writes(), "a truncation");
    log.flush_now().unwrap();
    log.append(batch_at(NOW, 2, 300), 4, NOW).unwrap();
    log.flush_now().unwrap();
    assert_eq!(log.log_end_offset(), 26);
    log.truncate_to(24).unwrap();
    log.append(batch_at(NOW, 2, 300), 5, NOW).unwrap();
    assert_eq!(log.log_end_offset(), 26);
    assert!(log.has_unflushed_writes(), "rewritten up to the same end");
    log.flush_now().unwrap();
    assert!(!log.has_unflushed_writes());
    // And what was flushed is what a reopen finds.
    drop(log);
    drop(_d);
    let (_d, mut log) = open(dir.path(), small_segments());
    assert_eq!(offsets_read(&mut log), (0..26).collect::<Vec<_>>());
}

/// The files of the partition's directory whose names end with `suffix`, sorted.
fn files_ending(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(part_dir(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

#[test]
fn a_detached_flush_covers_what_was_there_when_it_began_while_appends_go_on() {
    let dir = tempfile::tempdir().unwrap();
    // Segments that do not roll meanwhile (a roll flushes the rolled segment on its own).
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..small_segments()
    };
    let (_d, mut log) = open(dir.path(), config.clone());
    for e in 0..3 {
        log.append(batch_at(NOW, 2, 300), e, NOW).unwrap();
    }
    let mut flush = log.begin_flush().unwrap().expect("writes to flush");
    assert_eq!(flush.up_to(), 6);
    // Appends while the flush syncs without the log.
    for _ in 0..8 {
        log.append(batch_at(NOW, 2, 300), 3, NOW).unwrap();
    }
    flush.sync().unwrap();
    assert_eq!(log.flushed_offset(), 6, "only what the flush began with");
    log.finish_flush(flush).unwrap();
    assert!(
        log.has_unflushed_writes(),
        "the appends made meanwhile are not flushed"
    );
    assert!(
        files_ending(dir.path(), ".snapshot").contains(&format!("{:020}.snapshot", 6)),
        "the producer snapshot as of the flush's start: {:?}",
        files_ending(dir.path(), ".snapshot")
    );
    assert!(files_ending(dir.path(), ".tmp").is_empty());
    let mut flush = log.begin_flush().unwrap().expect("the later appends");
    flush.sync().unwrap();
    log.finish_flush(flush).unwrap();
    assert_eq!(log.flushed_offset(), 22);
    assert!(!log.has_unflushed_writes());
    assert!(
        log.begin_flush().unwrap().is_none(),
        "nothing left to flush"
    );
    drop(log);
    drop(_d);
    let (_d, mut log) = open(dir.path(), config);
    assert_eq!(offsets_read(&mut log), (0..22).collect::<Vec<_>>());
}

#[test]
fn a_truncation_during_a_detached_flush_keeps_its_offset_and_snapshot_out() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..small_segments()
    };
    let (_d, mut log) = open(dir.path(), config);
    log.flush_now().unwrap();
    for e in 0..5 {
        log.append(batch_at(NOW, 2, 300), e, NOW).unwrap();
    }
    let mut flush = log.begin_flush().unwrap().expect("writes to flush");
    assert_eq!(flush.up_to(), 10);
    // A follower meets a divergence while the flush syncs: the log is cut to 4 and grows
    // past 10 again with other batches.
    log.truncate_to(4).unwrap();
    for _ in 0..4 {
        log.append(batch_at(NOW, 2, 300), 7, NOW).unwrap();
    }
    assert_eq!(log.log_end_offset(), 12);
    flush.sync().unwrap();
    log.finish_flush(flush).unwrap();
    assert!(
        log.flushed_offset() <= 4,
        "flushed {} past the truncation",
        log.flushed_offset()
    );
    assert!(
        !files_ending(dir.path(), ".snapshot").contains(&format!("{:020}.snapshot", 10)),
        "a snapshot of the truncated history: {:?}",
        files_ending(dir.path(), ".snapshot")
    );
    assert!(files_ending(dir.path(), ".tmp").is_empty());
    assert!(
        log.has_unflushed_writes(),
        "the truncation is not flushed yet"
    );
    let mut flush = log.begin_flush().unwrap().expect("the truncation");
    flush.sync().unwrap();
    log.finish_flush(flush).unwrap();
    assert_eq!(log.flushed_offset(), 12);
}

#[test]
fn truncate_fully_and_start_at_resets_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    for _ in 0..10 {
        log.append(batch_at(NOW, 2, 300), 2, NOW).unwrap();
    }
    log.truncate_fully_and_start_at(500).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (500, 500));
    assert_eq!(log.segment_base_offsets(), vec![500]);
    assert!(log.leader_epochs().is_empty());
    assert!(matches!(
        log.read(0, 100, i64::MAX, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert_eq!(
        log.append(batch_at(NOW, 1, 10), 3, NOW)
            .unwrap()
            .base_offset,
        500
    );
    assert!(part_dir(dir.path())
        .join("00000000000000000500.log")
        .exists());
    assert!(!part_dir(dir.path())
        .join("00000000000000000000.log")
        .exists());
}

#[test]
fn delete_records_moves_the_log_start_and_drops_whole_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    for _ in 0..10 {
        log.append(batch_at(NOW, 2, 300), 0, NOW).unwrap();
    }
    let segments = log.segment_count();
    assert_eq!(log.delete_records_before(9).unwrap(), 9);
    assert_eq!(log.log_start_offset(), 9);
    assert!(log.segment_count() < segments);
    assert!(matches!(
        log.read(7, 100, i64::MAX, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // Reading at the new start returns the batch holding it.
    let bytes = log
        .read(9, 1 << 20, i64::MAX, true)
        .unwrap()
        .load()
        .unwrap();
    assert_eq!(BatchHeader::parse(&bytes).unwrap().base_offset, 8);
    assert_eq!(log.delete_records_before(3).unwrap(), 9);
    assert!(log.delete_records_before(21).is_err());
    assert_eq!(log.checkpoint().log_start_offset, 9);
}

#[test]
fn a_failed_append_leaves_no_partial_batch_and_the_log_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(
        dir.path(),
        LogConfig {
            tail_cache_bytes: 0,
            ..LogConfig::default()
        },
    );
    log.append(batch_at(NOW, 2, 100), 0, NOW).unwrap();
    let size = log.size_bytes();
    log.inject_append_failure(50);
    let err = log.append(batch_at(NOW, 2, 100), 0, NOW).unwrap_err();
    assert!(matches!(err, LogError::Storage(_)));
    assert!(err.to_string().contains("events-0"), "{err}");
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.size_bytes(), size);
    assert_eq!(
        fs::metadata(part_dir(dir.path()).join("00000000000000000000.log"))
            .unwrap()
            .len(),
        size
    );
    assert_eq!(offsets_read(&mut log), vec![0, 1]);
    // Space is back: appends continue at the same offset.
    assert_eq!(
        log.append(batch_at(NOW, 1, 100), 0, NOW)
            .unwrap()
            .base_offset,
        2
    );
    drop(log);
    drop(_d);
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    assert_eq!(offsets_read(&mut log), vec![0, 1, 2]);
}

#[test]
fn flush_messages_flushes_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(
        dir.path(),
        LogConfig {
            flush_messages: 5,
            ..LogConfig::default()
        },
    );
    let gc = GroupCommit::new();
    log.set_group_commit(gc.clone());
    for _ in 0..4 {
        log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    }
    assert_eq!(log.flushed_offset(), 0);
    log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    wait_for(|| log.flushed_offset() == 5);
    assert!(gc.syncs() >= 1);
}

#[test]
fn flush_ms_flushes_from_maintenance() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_ms: 1000,
        segment_ms: i64::MAX,
        retention_ms: -1,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    log.set_group_commit(GroupCommit::new());
    log.append(batch_at(NOW, 3, 10), 0, NOW).unwrap();
    // flush.ms counts from the last flush (the open, by the wall clock).
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(!log.maintenance(wall + 10).unwrap().flush_submitted);
    assert!(log.maintenance(wall + 2000).unwrap().flush_submitted);
    wait_for(|| log.flushed_offset() == 3);
}

fn wait_for(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "condition not met in time");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn group_commit_shares_one_fdatasync_between_waiting_appenders() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), durable(LogConfig::default()));
    let gc = GroupCommit::new();
    let mut waits = Vec::new();
    for _ in 0..200 {
        let info = log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
        waits.push(gc.submit(log.sync_request(info.last_offset + 1)));
    }
    for w in waits {
        w.blocking_recv().unwrap().unwrap();
    }
    assert_eq!(log.flushed_offset(), 200);
    // 200 waiters, far fewer fdatasyncs: they were grouped.
    assert!(gc.rounds() < 200, "rounds {}", gc.rounds());
}

#[test]
fn a_sync_after_a_roll_also_fsyncs_the_directory_once() {
    // The new segment's fdatasync'd records are durable only once its name is.
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), durable(small_segments()));
    let gc = GroupCommit::new();
    let first = log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    // The first segment came with the log; its name is not durable yet either.
    let req = log.sync_request(first.last_offset + 1);
    assert!(req.syncs_dir());
    gc.submit(req).blocking_recv().unwrap().unwrap();
    let next = log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    assert!(!log.sync_request(next.last_offset + 1).syncs_dir());
    // Everything synced before each append, so that the roll has nothing of its own to sync.
    let segments = log.segment_count();
    while log.segment_count() == segments {
        let req = log.sync_request(log.log_end_offset());
        gc.submit(req).blocking_recv().unwrap().unwrap();
        log.append(batch_at(NOW, 10, 100), 0, NOW).unwrap();
    }
    let req = log.sync_request(log.log_end_offset());
    assert!(req.syncs_dir(), "a roll created files");
    gc.submit(req).blocking_recv().unwrap().unwrap();
    log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    assert!(!log.sync_request(log.log_end_offset()).syncs_dir());
}

#[test]
fn a_log_restarted_past_its_unflushed_records_has_nothing_left_to_sync() {
    // A durable follower syncs until its flushed offset reaches its log end before fetching
    // again: a log that starts over past unflushed records must get there without a file.
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), durable(LogConfig::default()));
    log.append(batch_at(NOW, 5, 10), 0, NOW).unwrap();
    log.truncate_fully_and_start_at(1_000).unwrap();
    let gc = GroupCommit::new();
    gc.submit(log.sync_request(log.log_end_offset()))
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert_eq!(log.flushed_offset(), 1_000);
}

#[test]
fn missing_and_wrong_indexes_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 100,
        segment_bytes: 20_000,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    };
    {
        let (d, mut log) = open(dir.path(), config.clone());
        for i in 0..60 {
            log.append(batch_at(NOW + i, 1, 300), 0, NOW).unwrap();
        }
        let cp = log.close().unwrap();
        d.write_checkpoints(&[(tp(), cp)]).unwrap();
        d.mark_clean_shutdown().unwrap();
    }
    let p = part_dir(dir.path());
    let first_index = p.join("00000000000000000000.index");
    let good = fs::read(&first_index).unwrap();
    assert!(good.len() >= 16);
    // Missing offset index in the first segment, garbage in the second's.
    fs::remove_file(&first_index).unwrap();
    let bases: Vec<String> = {
        let mut v: Vec<String> = fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".index"))
            .collect();
        v.sort();
        v
    };
    fs::write(p.join(&bases[0]), [0xffu8; 24]).unwrap();
    let (_d, mut log) = open(dir.path(), config);
    assert_eq!(offsets_read(&mut log), (0..60).collect::<Vec<_>>());
    assert_eq!(
        log.offset_for_timestamp(NOW + 30).unwrap(),
        Some((30, NOW + 30))
    );
    assert_eq!(fs::read(&first_index).unwrap(), good);
}

#[test]
fn recovery_reads_only_the_unflushed_tail() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        tail_cache_bytes: 0,
        ..LogConfig::default()
    };
    let seg = part_dir(dir.path()).join("00000000000000000000.log");
    let one = batch_at(NOW, 2, 500).len();
    {
        let (d, mut log) = open(dir.path(), config.clone());
        for _ in 0..100 {
            log.append(batch_at(NOW, 2, 500), 0, NOW).unwrap();
        }
        log.flush_now().unwrap();
        d.write_checkpoints(&[(tp(), log.checkpoint())]).unwrap();
        for _ in 0..5 {
            log.append(batch_at(NOW, 2, 500), 0, NOW).unwrap();
        }
        // Crash: no close, no clean-shutdown marker.
    }
    // Damage a flushed batch far below the recovery point and tear the unflushed tail. A
    // recovery that scanned the flushed part would truncate at the damage.
    let mut bytes = fs::read(&seg).unwrap();
    bytes[one * 3 + 100] ^= 0xff;
    bytes.truncate(bytes.len() - 10);
    fs::write(&seg, &bytes).unwrap();
    let (_d, log) = open(dir.path(), config);
    assert_eq!(log.log_end_offset(), 208);
}

#[test]
fn a_crash_after_writing_a_compaction_swap_completes_the_swap() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_d, mut log) = open(dir.path(), small_segments());
        for _ in 0..10 {
            log.append(batch_at(NOW, 2, 300), 0, NOW).unwrap();
        }
    }
    let p = part_dir(dir.path());
    // Pretend compaction cleaned the first segment to its first batch and crashed after the
    // commit point (the `.swap` rename), and left a stray `.cleaned` from an earlier attempt.
    let log0 = fs::read(p.join("00000000000000000000.log")).unwrap();
    let first = BatchHeader::parse(&log0).unwrap().size_bytes();
    fs::write(p.join("00000000000000000000.log.swap"), &log0[..first]).unwrap();
    fs::write(p.join("00000000000000000002.log.cleaned"), b"junk").unwrap();
    let (_d, mut log) = open(dir.path(), small_segments());
    assert!(!p.join("00000000000000000000.log.swap").exists());
    assert!(!p.join("00000000000000000002.log.cleaned").exists());
    let offsets = offsets_read(&mut log);
    assert_eq!(offsets[..2], [0, 1]);
    assert!(
        offsets[2] > 2,
        "the swapped segment holds only offsets 0 and 1: {offsets:?}"
    );
    assert_eq!(*offsets.last().unwrap(), 19);
}

#[test]
fn closed_segments_are_opened_lazily_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 500,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    };
    {
        let (d, mut log) = open(dir.path(), config.clone());
        for _ in 0..40 {
            log.append(batch_at(NOW, 1, 400), 0, NOW).unwrap();
        }
        let cp = log.close().unwrap();
        d.write_checkpoints(&[(tp(), cp)]).unwrap();
        d.mark_clean_shutdown().unwrap();
    }
    let (_d, mut log) = open(dir.path(), config);
    assert_eq!(log.segment_count(), 40);
    // Only this log's files: tests running alongside open and close their own.
    let fds = || {
        fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir.path()))
            .count()
    };
    let before = fds();
    assert_eq!(offsets_read(&mut log), (0..40).collect::<Vec<_>>());
    // Reading every segment keeps at most OPEN_CLOSED_SEGMENTS_MAX of them open (3 files each).
    assert!(
        fds() <= before + 3 * samsa_storage::OPEN_CLOSED_SEGMENTS_MAX + 3,
        "{} -> {}",
        before,
        fds()
    );
}

#[test]
fn an_append_whose_partial_write_cannot_be_cut_back_fences_the_log_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (d, mut log) = open(dir.path(), LogConfig::default());
    log.append(batch_at(NOW, 2, 100), 0, NOW).unwrap();
    log.inject_unrecoverable_append_failure(70);
    assert!(matches!(
        log.append(batch_at(NOW, 2, 100), 0, NOW),
        Err(LogError::Storage(_))
    ));
    assert!(log.failure().is_some());
    let refused = log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap_err();
    assert!(refused.to_string().contains("reopened"), "{refused}");
    // Reads still serve the acknowledged data and never the partial bytes.
    assert_eq!(offsets_read(&mut log), vec![0, 1]);
    drop(log);
    drop(d);
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    assert!(log.failure().is_none());
    assert_eq!(
        log.append(batch_at(NOW, 1, 10), 0, NOW)
            .unwrap()
            .base_offset,
        2
    );
    assert_eq!(offsets_read(&mut log), vec![0, 1, 2]);
}

#[test]
fn a_failed_fdatasync_is_reported_to_waiters_and_fences_appends() {
    let dir = tempfile::tempdir().unwrap();
    let (d, mut log) = open(dir.path(), durable(LogConfig::default()));
    let gc = GroupCommit::new();
    let info = log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    gc.inject_sync_failure();
    let err = gc
        .submit(log.sync_request(info.last_offset + 1))
        .blocking_recv()
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("events-0"), "{err}");
    assert_eq!(log.flushed_offset(), 0);
    assert!(log.append(batch_at(NOW, 1, 10), 0, NOW).is_err());
    assert_eq!(offsets_read(&mut log), vec![0]);
    drop(log);
    drop(d);
    let (_d, mut log) = open(dir.path(), durable(LogConfig::default()));
    let info = log.append(batch_at(NOW, 1, 10), 0, NOW).unwrap();
    gc.submit(log.sync_request(info.last_offset + 1))
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert_eq!(log.flushed_offset(), 2);
}

#[test]
fn logs_and_slices_can_move_between_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Log>();
    send_sync::<samsa_storage::LogSlice>();
    send_sync::<LogDir>();
    send_sync::<GroupCommit>();
    send::<samsa_storage::SyncRequest>();
    send_sync::<LogError>();
}

#[test]
fn a_slice_stays_loadable_after_its_segment_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: 0,
        retention_ms: -1,
        ..small_segments()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..10 {
        log.append(batch_at(NOW, 1, 600), 0, NOW).unwrap();
    }
    let slice = log.read(0, 1 << 20, i64::MAX, true).unwrap();
    assert!(!slice.is_in_memory());
    log.set_high_watermark(log.log_end_offset());
    assert!(log.retention(NOW).unwrap().deleted_segments > 0);
    assert!(!part_dir(dir.path())
        .join("00000000000000000000.log")
        .exists());
    let bytes = slice.load().unwrap();
    assert_eq!(BatchHeader::parse(&bytes).unwrap().base_offset, 0);
}

#[test]
fn a_slice_of_truncated_and_rewritten_bytes_fails_to_load_instead_of_lying() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(
        dir.path(),
        LogConfig {
            tail_cache_bytes: 0,
            ..LogConfig::default()
        },
    );
    for _ in 0..4 {
        log.append(batch_at(NOW, 2, 100), 0, NOW).unwrap();
    }
    let slice = log.read(4, 1 << 20, i64::MAX, true).unwrap();
    log.truncate_to(2).unwrap();
    log.append(batch_at(NOW, 1, 100), 0, NOW).unwrap();
    log.append(batch_at(NOW, 1, 100), 0, NOW).unwrap();
    // The bytes at the slice's position now belong to other offsets.
    assert!(slice.load().is_err());
}

#[test]
fn the_metadata_log_opens_standalone_and_log_dir_open_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let meta_tp = TopicPartition::new(samsa_storage::METADATA_TOPIC, 0);
    let meta_dir = dir.path().join(meta_tp.dir_name());
    {
        let mut log =
            Log::open_standalone(&meta_dir, meta_tp.clone(), LogConfig::default(), None).unwrap();
        for i in 0..3 {
            let b = BatchBuilder::new()
                .base_offset(i * 2)
                .leader_epoch(1)
                .records(2, 10)
                .build();
            log.append_as_follower(b, 0).unwrap();
        }
        log.flush_now().unwrap();
    }
    // The start offset given is kept (the latest snapshot's end), clamped to the log end.
    let log =
        Log::open_standalone(&meta_dir, meta_tp.clone(), LogConfig::default(), Some(4)).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (4, 6));
    drop(log);
    let log = Log::open_standalone(&meta_dir, meta_tp, LogConfig::default(), Some(99)).unwrap();
    assert_eq!(log.log_start_offset(), 6);
    drop(log);
    let (_d, logs) = LogDir::open(dir.path(), |_| LogConfig::default()).unwrap();
    assert!(
        logs.is_empty(),
        "LogDir::open must skip __cluster_metadata-0"
    );
}
