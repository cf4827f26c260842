//! The log's core contract: append, read, offsets, validation, recovery and durability.

use std::fs;
use std::path::Path;

use bytes::Bytes;
use samsa_storage::batch::{BatchHeader, RecordBatch};
use samsa_storage::test_support::{open_log, BatchBuilder};
use samsa_storage::{
    CleanupPolicy, GroupCommit, Log, LogConfig, LogDir, LogError, TimestampType, TopicPartition,
};

const NOW: i64 = 1_700_000_000_000;

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 3)
}

fn open(dir: &Path, config: LogConfig) -> (LogDir, Log) {
    open_log(dir, &tp(), config)
}

fn batch(n: usize, value_bytes: usize) -> Bytes {
    BatchBuilder::new()
        .timestamps(NOW)
        .records(n, value_bytes)
        .build()
}

fn headers(bytes: &[u8]) -> Vec<BatchHeader> {
    samsa_storage::batch::batches(bytes)
        .map(|b| *b.unwrap().header())
        .collect()
}

fn read_all(log: &mut Log, from: i64) -> Vec<BatchHeader> {
    let mut out = Vec::new();
    let mut next = from;
    while next < log.log_end_offset() {
        let bytes = log
            .read(next, 1 << 20, i64::MAX, true)
            .unwrap()
            .load()
            .unwrap();
        let hs = headers(&bytes);
        assert!(!hs.is_empty(), "read at {next} returned nothing");
        next = hs.last().unwrap().next_offset();
        out.extend(hs);
    }
    out
}

#[test]
fn appends_assign_dense_offsets_and_read_back_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    let a = log.append(batch(3, 10), 5, NOW).unwrap();
    assert_eq!((a.base_offset, a.last_offset, a.record_count), (0, 2, 3));
    assert_eq!(a.log_append_time_ms, -1);
    let b_bytes = batch(2, 10);
    let b = log.append(b_bytes.clone(), 5, NOW).unwrap();
    assert_eq!((b.base_offset, b.last_offset), (3, 4));
    assert_eq!(log.log_end_offset(), 5);
    let read = log
        .read(3, 1 << 20, i64::MAX, true)
        .unwrap()
        .load()
        .unwrap();
    let h = BatchHeader::parse(&read).unwrap();
    assert_eq!(h.base_offset, 3);
    assert_eq!(h.partition_leader_epoch, 5);
    // Only the base offset and leader epoch differ from what the producer sent.
    assert_eq!(&read[16..], &b_bytes[16..]);
    RecordBatch::parse(&read)
        .unwrap()
        .validate(usize::MAX)
        .unwrap();
}

#[test]
fn fetch_from_the_middle_of_a_batch_returns_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(
        dir.path(),
        LogConfig {
            tail_cache_bytes: 0,
            ..LogConfig::default()
        },
    );
    log.append(batch(10, 10), 0, NOW).unwrap();
    log.append(batch(10, 10), 0, NOW).unwrap();
    let hs = headers(
        &log.read(15, 1 << 20, i64::MAX, true)
            .unwrap()
            .load()
            .unwrap(),
    );
    assert_eq!(hs.len(), 1);
    assert_eq!(hs[0].base_offset, 10);
}

#[test]
fn reads_honour_max_bytes_max_offset_and_min_one_batch() {
    for cache in [0, 1 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let (_d, mut log) = open(
            dir.path(),
            LogConfig {
                tail_cache_bytes: cache,
                ..LogConfig::default()
            },
        );
        for _ in 0..10 {
            log.append(batch(1, 1000), 0, NOW).unwrap();
        }
        let one = batch(1, 1000).len();
        // max_bytes cuts at whole batches, found before anything is loaded: from a segment
        // the slice is a file range of exactly those batches.
        let s = log.read(0, one * 3 + 10, i64::MAX, true).unwrap();
        assert_eq!(s.len(), one * 3, "cache {cache}");
        assert_eq!(s.file_range().is_some(), cache == 0);
        assert_eq!(s.offsets(), Some((0, 3)));
        assert_eq!(headers(&s.load().unwrap()).len(), 3, "cache {cache}");
        // The first batch alone exceeds max_bytes: returned only with min_one_batch.
        assert_eq!(
            headers(&log.read(0, 10, i64::MAX, true).unwrap().load().unwrap()).len(),
            1
        );
        assert!(log
            .read(0, 10, i64::MAX, false)
            .unwrap()
            .load()
            .unwrap()
            .is_empty());
        // Nothing at or past max_offset (the high watermark).
        let hs = headers(&log.read(2, 1 << 20, 5, true).unwrap().load().unwrap());
        assert_eq!(
            hs.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
        assert!(log.read(5, 1 << 20, 5, true).unwrap().is_empty());
        // At the log end: empty. Past it or below the start: out of range.
        assert!(log.read(10, 1 << 20, i64::MAX, true).unwrap().is_empty());
        assert!(matches!(
            log.read(11, 100, i64::MAX, true),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert!(matches!(
            log.read(-1, 100, i64::MAX, true),
            Err(LogError::OffsetOutOfRange { .. })
        ));
    }
}

#[test]
fn invalid_batches_are_refused_before_touching_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(
        dir.path(),
        LogConfig {
            max_message_bytes: 2000,
            ..LogConfig::default()
        },
    );
    let mut bad = batch(1, 10).to_vec();
    let n = bad.len();
    bad[n - 1] ^= 1;
    assert!(matches!(
        log.append(Bytes::from(bad), 0, NOW),
        Err(LogError::CorruptBatch(_))
    ));
    let mut magic1 = batch(1, 10).to_vec();
    magic1[16] = 1;
    assert!(matches!(
        log.append(Bytes::from(magic1), 0, NOW),
        Err(LogError::CorruptBatch(_))
    ));
    let torn = batch(1, 10).slice(..30);
    assert!(matches!(
        log.append(torn, 0, NOW),
        Err(LogError::CorruptBatch(_))
    ));
    let err = log.append(batch(1, 3000), 0, NOW).unwrap_err();
    assert!(matches!(err, LogError::MessageTooLarge { .. }));
    assert!(
        err.to_string()
            .contains("max.message.bytes=2000 for orders-3"),
        "{err}"
    );
    // A valid batch followed by a bad one: nothing is appended.
    let mut two = batch(1, 10).to_vec();
    two.extend_from_slice(&batch(1, 10)[..40]);
    assert!(log.append(Bytes::from(two), 0, NOW).is_err());
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size_bytes(), 0);
}

#[test]
fn keyless_records_are_refused_on_compacted_topics() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    let keyless = BatchBuilder::new()
        .record(Some(b"k"), Some(b"v"))
        .record(None, Some(b"v"))
        .build();
    assert!(matches!(
        log.append(keyless, 0, NOW),
        Err(LogError::InvalidRecord { .. })
    ));
    let compressed_keyless = BatchBuilder::new()
        .compression(samsa_storage::batch::Compression::Zstd)
        .record(None, Some(b"v"))
        .build();
    assert!(matches!(
        log.append(compressed_keyless, 0, NOW),
        Err(LogError::InvalidRecord { .. })
    ));
    log.append(BatchBuilder::new().record(Some(b"k"), None).build(), 0, NOW)
        .unwrap();
}

#[test]
fn log_append_time_rewrites_max_timestamp_and_crc() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    let info = log.append(batch(2, 10), 0, NOW + 5).unwrap();
    assert_eq!(info.log_append_time_ms, NOW + 5);
    assert_eq!(info.max_timestamp_ms, NOW + 5);
    let bytes = log
        .read(0, 1 << 20, i64::MAX, true)
        .unwrap()
        .load()
        .unwrap();
    let b = RecordBatch::parse(&bytes).unwrap();
    b.validate(usize::MAX).unwrap();
    assert!(b.header().is_log_append_time());
    assert_eq!(b.header().max_timestamp, NOW + 5);
}

#[test]
fn segments_roll_by_size_and_reads_cross_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 5000,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    for _ in 0..20 {
        log.append(batch(2, 500), 0, NOW).unwrap();
    }
    assert!(log.segment_count() > 3, "{}", log.segment_count());
    let hs = read_all(&mut log, 0);
    let offsets: Vec<i64> = hs.iter().map(|h| h.base_offset).collect();
    assert_eq!(offsets, (0..20).map(|i| i * 2).collect::<Vec<_>>());
    for base in log.segment_base_offsets() {
        assert!(dir
            .path()
            .join("orders-3")
            .join(format!("{base:020}.log"))
            .exists());
        assert!(dir
            .path()
            .join("orders-3")
            .join(format!("{base:020}.index"))
            .exists());
        assert!(dir
            .path()
            .join("orders-3")
            .join(format!("{base:020}.timeindex"))
            .exists());
    }
}

#[test]
fn torn_tail_is_truncated_on_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let seg = dir.path().join("orders-3").join("00000000000000000000.log");
    {
        let (_d, mut log) = open(dir.path(), LogConfig::default());
        for _ in 0..5 {
            log.append(batch(2, 100), 0, NOW).unwrap();
        }
        // Crash: drop without close.
    }
    let len = fs::metadata(&seg).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len - 7).unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), 8);
    assert_eq!(read_all(&mut log, 0).len(), 4);
    // The log keeps working at the cut.
    assert_eq!(log.append(batch(1, 10), 0, NOW).unwrap().base_offset, 8);
}

#[test]
fn a_corrupt_batch_truncates_everything_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let seg = dir.path().join("orders-3").join("00000000000000000000.log");
    let one = batch(2, 100).len() as u64;
    {
        let (_d, mut log) = open(dir.path(), LogConfig::default());
        for _ in 0..5 {
            log.append(batch(2, 100), 0, NOW).unwrap();
        }
    }
    let mut bytes = fs::read(&seg).unwrap();
    bytes[(one * 2 + 80) as usize] ^= 0xff;
    fs::write(&seg, &bytes).unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), 4);
    assert_eq!(fs::metadata(&seg).unwrap().len(), one * 2);
    assert_eq!(read_all(&mut log, 0).len(), 2);
}

#[test]
fn clean_shutdown_and_checkpoints_restore_offsets() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (d, mut log) = open(dir.path(), LogConfig::default());
        for _ in 0..5 {
            log.append(batch(2, 100), 1, NOW).unwrap();
        }
        log.set_high_watermark(6);
        let cp = log.close().unwrap();
        assert_eq!(cp.recovery_point, 10);
        d.write_checkpoints(&[(tp(), cp)]).unwrap();
        d.mark_clean_shutdown().unwrap();
        assert!(dir.path().join(".kafka_cleanshutdown").exists());
    }
    let text = fs::read_to_string(dir.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(text, "0\n1\norders 3 10\n");
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    assert!(!dir.path().join(".kafka_cleanshutdown").exists());
    assert_eq!(log.log_end_offset(), 10);
    assert_eq!(log.high_watermark(), 6);
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 10)));
    assert_eq!(read_all(&mut log, 0).len(), 5);
}

#[test]
fn log_dir_is_locked_against_a_second_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, _log) = open(dir.path(), LogConfig::default());
    assert!(LogDir::open(dir.path(), |_| LogConfig::default()).is_err());
}

#[test]
fn delete_log_removes_the_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (d, log) = open(dir.path(), LogConfig::default());
    d.delete_log(&tp(), log).unwrap();
    assert!(!dir.path().join("orders-3").exists());
    drop(d);
    let (_d, logs) = LogDir::open(dir.path(), |_| LogConfig::default()).unwrap();
    assert!(logs.is_empty());
}

#[test]
fn group_commit_makes_appends_durable_and_advances_the_flushed_offset() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        durable: true,
        segment_bytes: 3000,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    let gc = GroupCommit::new();
    let mut waits = Vec::new();
    for _ in 0..10 {
        let info = log.append(batch(1, 500), 0, NOW).unwrap();
        waits.push(gc.submit(log.sync_request(info.last_offset + 1)));
    }
    assert!(log.segment_count() > 1);
    for w in waits {
        w.blocking_recv().unwrap().unwrap();
    }
    assert_eq!(log.flushed_offset(), 10);
    assert!(gc.syncs() >= 1);
    // Nothing left to sync: completes at once.
    gc.submit(log.sync_request(10))
        .blocking_recv()
        .unwrap()
        .unwrap();
}

#[test]
fn offsets_for_timestamps_go_through_the_time_index() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 100,
        segment_bytes: 4000,
        ..LogConfig::default()
    };
    let (_d, mut log) = open(dir.path(), config);
    for i in 0..30i64 {
        let b = BatchBuilder::new()
            .record_at(Some(b"a"), Some(&[0u8; 100]), NOW + i * 10)
            .record_at(Some(b"b"), Some(&[0u8; 100]), NOW + i * 10 + 5)
            .build();
        log.append(b, 0, NOW).unwrap();
    }
    assert_eq!(log.offset_for_timestamp(NOW).unwrap(), Some((0, NOW)));
    assert_eq!(
        log.offset_for_timestamp(NOW + 103).unwrap(),
        Some((21, NOW + 105))
    );
    assert_eq!(
        log.offset_for_timestamp(NOW + 150).unwrap(),
        Some((30, NOW + 150))
    );
    assert_eq!(log.offset_for_timestamp(NOW + 10_000).unwrap(), None);
    assert_eq!(log.max_timestamp(), Some((59, NOW + 295)));
    assert_eq!(log.offset_for_timestamp(-2).unwrap(), Some((0, -1)));
    assert_eq!(log.offset_for_timestamp(-1).unwrap(), Some((60, -1)));
}

#[test]
fn followers_append_leader_batches_unchanged_and_learn_epochs() {
    let leader_dir = tempfile::tempdir().unwrap();
    let follower_dir = tempfile::tempdir().unwrap();
    let (_ld, mut leader) = open(leader_dir.path(), LogConfig::default());
    leader.append(batch(2, 10), 1, NOW).unwrap();
    leader.append(batch(3, 10), 4, NOW).unwrap();
    let fetched = leader
        .read(0, 1 << 20, i64::MAX, true)
        .unwrap()
        .load()
        .unwrap();
    let (_fd, mut follower) = open(follower_dir.path(), LogConfig::default());
    let info = follower.append_as_follower(fetched.clone(), NOW).unwrap();
    assert_eq!(
        (info.base_offset, info.last_offset, info.record_count),
        (0, 4, 5)
    );
    assert_eq!(
        follower
            .read(0, 1 << 20, i64::MAX, true)
            .unwrap()
            .load()
            .unwrap(),
        fetched
    );
    assert_eq!(follower.leader_epochs(), &[(1, 0), (4, 2)]);
    assert_eq!(follower.end_offset_for_epoch(1), Some((1, 2)));
    // The same batches again overlap what the follower has: refused.
    assert!(matches!(
        follower.append_as_follower(fetched, NOW),
        Err(LogError::InvalidRecord { .. })
    ));
}

#[test]
fn truncating_at_the_log_end_drops_an_epoch_begun_there_without_records() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    log.append(batch(3, 10), 0, NOW).unwrap();
    // Leader of epoch 1 for a moment, at its log end, appending nothing; then a follower
    // whose new leader has epoch 0 end at 3 (where epoch 2 starts).
    log.assign_leader_epoch(1, 3).unwrap();
    log.truncate_to(3).unwrap();
    assert_eq!(log.log_end_offset(), 3);
    assert_eq!(log.leader_epochs(), &[(0, 0)]);
    assert_eq!(log.latest_epoch(), Some(0));
    // Beyond the log end likewise.
    log.assign_leader_epoch(3, 3).unwrap();
    log.truncate_to(10).unwrap();
    assert_eq!(log.leader_epochs(), &[(0, 0)]);
}

#[test]
fn max_timestamp_answers_the_exact_record_inside_its_batch() {
    // KIP-734: ListOffsets(-3) names the record with the largest timestamp, even when it is
    // not the last record of its batch (librdkafka's 0081 produces 100, 400, 250).
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(dir.path(), LogConfig::default());
    let b = BatchBuilder::new()
        .record_at(None, Some(b"a"), NOW + 100)
        .record_at(None, Some(b"b"), NOW + 400)
        .record_at(None, Some(b"c"), NOW + 250)
        .build();
    log.append(b, 0, NOW).unwrap();
    assert_eq!(log.offset_for_timestamp(-3).unwrap(), Some((1, NOW + 400)));
    let compressed = BatchBuilder::new()
        .compression(samsa_storage::batch::Compression::Lz4)
        .record_at(None, Some(b"d"), NOW + 900)
        .record_at(None, Some(b"e"), NOW + 300)
        .build();
    log.append(compressed, 0, NOW).unwrap();
    assert_eq!(log.offset_for_timestamp(-3).unwrap(), Some((3, NOW + 900)));
}

#[test]
fn an_append_too_large_for_the_tail_cache_is_read_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut log) = open(
        dir.path(),
        LogConfig {
            tail_cache_bytes: 4 << 20,
            ..LogConfig::default()
        },
    );
    log.append(batch(1, 1000), 0, NOW).unwrap();
    log.append(batch(1, 300_000), 0, NOW).unwrap();
    let s = log.read(0, 1 << 20, i64::MAX, true).unwrap();
    assert!(!s.is_in_memory(), "the large append emptied the cache");
    let h = headers(&s.load().unwrap());
    assert_eq!(h.iter().map(|h| h.base_offset).collect::<Vec<_>>(), [0, 1]);
    // Small appends are cached again from the next one on.
    log.append(batch(1, 1000), 0, NOW).unwrap();
    let s = log.read(2, 1 << 20, i64::MAX, true).unwrap();
    assert!(s.is_in_memory());
    assert_eq!(headers(&s.load().unwrap())[0].base_offset, 2);
    let s = log.read(1, 1 << 20, i64::MAX, true).unwrap();
    assert!(!s.is_in_memory());
    let h = headers(&s.load().unwrap());
    assert_eq!(h.iter().map(|h| h.base_offset).collect::<Vec<_>>(), [1, 2]);
}

/// Blocks a file holds on disk (what `du` counts).
fn allocated_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn a_growing_segment_reserves_blocks_ahead_and_gives_them_back_when_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let (d, mut log) = open(dir.path(), LogConfig::default());
    let segment = log.dir().join(format!("{:020}.log", 0));
    for _ in 0..24 {
        log.append(batch(100, 1000), 0, NOW).unwrap();
    }
    let len = fs::metadata(&segment).unwrap().len();
    assert!(len > 2 << 20, "{len}");
    let reserved = allocated_bytes(&segment);
    // Where the file system has fallocate (ext4, xfs, tmpfs), blocks lie past the end while
    // the file's length stays that of its batches.
    if reserved <= len + 4096 {
        eprintln!("no blocks reserved ahead here (no fallocate?): {reserved} for {len}");
    }
    log.close().unwrap();
    drop(d);
    assert_eq!(
        fs::metadata(&segment).unwrap().len(),
        len,
        "the length never changes"
    );
    assert!(
        allocated_bytes(&segment) <= len + 64 * 1024,
        "closing gives reserved blocks back: {} allocated for {len}",
        allocated_bytes(&segment)
    );
    // And the log reads back whole after reopening.
    let (_d, log) = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), 2400);
}
