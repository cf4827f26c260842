//! A flush of everything appended so far whose disk work runs without the log's lock: the
//! periodic checkpoint of every partition (`log.flush.offset.checkpoint.interval.ms`).
//!
//! [`Log::flush_now`] fdatasyncs while its caller holds the log, so an append to the same
//! partition waits for the disk, and with it the shard thread that serves the append and every
//! connection on that shard. Once a minute the checkpoint pass did that to every partition
//! written since the last one; on a busy disk each wait is milliseconds to tens of them (a
//! 1,000 records/s acks=all producer on three nodes saw 29 ms). Here the log is held only to
//! say what to sync ([`Log::begin_flush`]) and to record that it was ([`Log::finish_flush`]);
//! the fdatasyncs and the producer snapshot's write happen in between, while appends go on.
//! Kafka's `UnifiedLog.flush` likewise syncs segments outside the log's lock.
//!
//! Invariants: the flushed offset advances only to the log end offset as of
//! [`Log::begin_flush`], whose data the synced files hold, and only within the generation the
//! flush began in (a truncation meanwhile starts a new one, and `FlushState::advance` ignores
//! the old); a producer snapshot written meanwhile is renamed into place only under the lock,
//! only if the log was not truncated since and no newer snapshot exists.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::LogError;
use crate::group_commit::SyncRequest;
use crate::log::Log;

/// The name a checkpoint's producer snapshot is written under before it is installed (a
/// `.tmp`, which opening a log removes; distinct from a roll's, which may write the same
/// offset's snapshot meanwhile).
const SNAPSHOT_TMP_SUFFIX: &str = "checkpoint.tmp";

/// A flush begun under the log's lock, to be synced without it and finished under it again.
#[must_use = "a begun flush does nothing until it is synced and finished"]
pub struct DetachedFlush {
    req: SyncRequest,
    /// The log's flush mark when the flush began.
    mark: (u64, i64, i64),
    snapshot: Option<PendingSnapshot>,
}

struct PendingSnapshot {
    offset: i64,
    path: PathBuf,
    tmp: PathBuf,
    bytes: Vec<u8>,
    written: bool,
}

impl Log {
    /// Says what a flush of everything appended so far must sync, writing the active
    /// segment's pending index entries (cheap: no fdatasync). `None` when nothing was written
    /// since the last flush. Call [`DetachedFlush::sync`] without the log, then
    /// [`Log::finish_flush`] with it.
    pub fn begin_flush(&mut self) -> Result<Option<DetachedFlush>, LogError> {
        if !self.has_unflushed_writes() {
            return Ok(None);
        }
        // Left after the prune: the rolled segments not yet known to be synced (a group commit
        // may sync one meanwhile; syncing it again is harmless).
        self.prune_pending_sync();
        let leo = self.log_end_offset();
        let mut files: Vec<_> = self
            .pending_sync
            .iter()
            .flat_map(|(_, fs)| fs.iter().cloned())
            .collect();
        if self.active().is_open() {
            let active = self
                .active_mut()
                .sync_files()
                .map_err(|e| self.io("write index entries", e))?;
            files.extend(active);
        }
        let dir = self
            .flush
            .names_unsynced()
            .map(|created| (Arc::from(self.dir.as_path()), created));
        let snapshot = (self.last_snapshot_offset != Some(leo)).then(|| {
            let path = self.snapshot_path(leo);
            let tmp = path.with_extension(format!("snapshot.{SNAPSHOT_TMP_SUFFIX}"));
            PendingSnapshot {
                offset: leo,
                path,
                tmp,
                bytes: self.producers.encode_snapshot(),
                written: false,
            }
        });
        Ok(Some(DetachedFlush {
            req: SyncRequest {
                partition: self.tp.to_string(),
                files,
                dir,
                up_to: leo,
                generation: self.flush.generation(),
                state: self.flush.clone(),
            },
            mark: self.flush_mark(),
            snapshot,
        }))
    }

    /// Records a synced [`DetachedFlush`]: installs its producer snapshot if it still
    /// describes this log, and forgets the synced segments.
    pub fn finish_flush(&mut self, done: DetachedFlush) -> Result<(), LogError> {
        self.prune_pending_sync();
        if self.flush_mark() == done.mark {
            self.unflushed_messages = 0;
        }
        // The mark as of the flush's start: any write since makes the next flush sync again.
        self.flushed_at = Some(done.mark);
        let Some(s) = done.snapshot else {
            return Ok(());
        };
        let current = s.written
            && self.flush.generation() == done.req.generation
            && s.offset <= self.log_end_offset()
            && self.last_snapshot_offset.is_none_or(|o| o < s.offset);
        if !current {
            let _ = fs::remove_file(&s.tmp);
            return Ok(());
        }
        match fs::rename(&s.tmp, &s.path) {
            // The partition was deleted since the snapshot was written.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io("install a producer snapshot", e)),
            Ok(()) => {
                self.last_snapshot_offset = Some(s.offset);
                self.remove_stale_snapshots(s.offset)
            }
        }
    }
}

impl DetachedFlush {
    /// fdatasyncs what [`Log::begin_flush`] named (each file once, then the directory when
    /// names were created in it), advances the flushed offset, and writes the producer
    /// snapshot's temporary file durably. A failed fdatasync marks the log failed, as a
    /// group commit's does: the page cache may have dropped the data.
    pub fn sync(&mut self) -> Result<(), LogError> {
        let req = &self.req;
        let fail = |what: &Path, e: std::io::Error| {
            let why = format!("fdatasync of {} for {}: {e}", what.display(), req.partition);
            req.state.fail(why.clone());
            LogError::Storage(std::io::Error::new(e.kind(), why))
        };
        let mut seen = HashSet::new();
        for f in &req.files {
            if seen.insert(f.path()) {
                f.sync_data().map_err(|e| fail(f.path(), e))?;
            }
        }
        if let Some((dir, created)) = &req.dir {
            match crate::checkpoint::sync_dir(dir) {
                // The partition was deleted meanwhile: nothing of it is left to make durable.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(fail(dir, e)),
                Ok(()) => req.state.names_synced(*created),
            }
        }
        req.state.advance(req.generation, req.up_to);
        if let Some(s) = &mut self.snapshot {
            let written = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&s.tmp)
                .and_then(|mut f| f.write_all(&s.bytes).and_then(|()| f.sync_data()));
            match written {
                Ok(()) => s.written = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // The snapshot only bounds a rebuild after a crash: the data is durable.
                Err(e) => {
                    tracing::warn!(partition = %req.partition, file = %s.tmp.display(), "cannot write a producer snapshot: {e}")
                }
            }
        }
        Ok(())
    }

    /// The offset below which everything is durable once synced.
    pub fn up_to(&self) -> i64 {
        self.req.up_to
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{open_log, BatchBuilder};
    use crate::{LogConfig, TopicPartition};

    const NOW: i64 = 1_700_000_000_000;

    fn config() -> LogConfig {
        LogConfig {
            segment_bytes: 1 << 20,
            tail_cache_bytes: 0,
            ..LogConfig::default()
        }
    }

    fn append(log: &mut crate::Log, batches: usize) {
        for _ in 0..batches {
            let b = BatchBuilder::new().timestamps(NOW).records(2, 100).build();
            log.append(b, 0, NOW).unwrap();
        }
    }

    /// A log of partition `t-0` in a new directory (alive while the guards are).
    fn new_log() -> (tempfile::TempDir, crate::LogDir, crate::Log) {
        let dir = tempfile::tempdir().unwrap();
        let (d, log) = open_log(dir.path(), &TopicPartition::new("t", 0), config());
        (dir, d, log)
    }

    /// One detached flush, with `meanwhile` done to the log between its start and its sync.
    fn flush_with(log: &mut crate::Log, meanwhile: impl FnOnce(&mut crate::Log)) {
        let mut flush = log.begin_flush().unwrap().expect("something to flush");
        meanwhile(log);
        flush.sync().unwrap();
        log.finish_flush(flush).unwrap();
    }

    #[test]
    fn the_flush_messages_count_restarts_only_when_nothing_was_appended_meanwhile() {
        let (_dir, _d, mut log) = new_log();
        append(&mut log, 2);
        flush_with(&mut log, |_| {});
        assert_eq!(log.unflushed_messages, 0);
        append(&mut log, 2);
        flush_with(&mut log, |log| append(log, 1));
        assert_eq!(
            log.unflushed_messages, 6,
            "the records appended since the first flush"
        );
    }

    #[test]
    fn each_flush_installs_a_newer_snapshot_and_never_an_older_one() {
        let (_dir, _d, mut log) = new_log();
        append(&mut log, 2);
        flush_with(&mut log, |_| {});
        assert_eq!(log.last_snapshot_offset, Some(4));
        append(&mut log, 1);
        flush_with(&mut log, |_| {});
        assert_eq!(log.last_snapshot_offset, Some(6), "a newer one replaces it");
        assert!(!log.snapshot_path(4).exists(), "the older one is removed");
        // A roll writes a newer snapshot while a flush that began earlier syncs.
        append(&mut log, 1);
        flush_with(&mut log, |log| {
            append(log, 1);
            log.write_producer_snapshot(false).unwrap();
        });
        assert_eq!(log.last_snapshot_offset, Some(10));
        assert!(
            !log.snapshot_path(8).exists(),
            "the flush's older snapshot is not installed"
        );
    }

    #[test]
    fn two_flushes_of_one_log_at_once_both_finish() {
        // A shutdown's checkpoint while the periodic one is still syncing.
        let (_dir, _d, mut log) = new_log();
        append(&mut log, 2);
        let mut a = log.begin_flush().unwrap().unwrap();
        let mut b = log.begin_flush().unwrap().unwrap();
        a.sync().unwrap();
        b.sync().unwrap();
        log.finish_flush(a).unwrap();
        log.finish_flush(b).unwrap();
        assert_eq!(log.flushed_offset(), 4);
        assert_eq!(log.last_snapshot_offset, Some(4));
        assert!(log.snapshot_path(4).exists());
    }

    #[test]
    fn a_partition_deleted_while_its_flush_syncs_is_not_an_error() {
        let (dir, _d, mut log) = new_log();
        append(&mut log, 2);
        let mut flush = log.begin_flush().unwrap().unwrap();
        assert!(
            flush.req.dir.is_some(),
            "the new segment's name is not synced yet"
        );
        std::fs::remove_dir_all(dir.path().join("t-0")).unwrap();
        flush.sync().unwrap();
        log.finish_flush(flush).unwrap();
        assert_eq!(
            log.flush.failure(),
            None,
            "a deleted partition is not a failed disk"
        );

        // Deleted after the sync wrote the snapshot, before it is installed.
        let (dir, _d, mut log) = new_log();
        append(&mut log, 2);
        let mut flush = log.begin_flush().unwrap().unwrap();
        flush.sync().unwrap();
        std::fs::remove_dir_all(dir.path().join("t-0")).unwrap();
        log.finish_flush(flush).unwrap();
        assert_eq!(log.last_snapshot_offset, None);
    }
}
