//! `Log`: one partition's log — a sequence of segments and the offsets that describe it —
//! with opening, appending (as leader and as follower), rolling, flushing, truncation and
//! close. The other operations are `impl Log` blocks beside it: `read.rs` (Fetch, ListOffsets,
//! OffsetForLeaderEpoch), `retention.rs` (maintenance, DeleteRecords), `compaction.rs`, and
//! `recovery.rs` (what `open` scans).
//!
//! Invariants:
//! - segments are keyed by base offset; the last is the *active* segment, always open;
//!   every other segment is closed or in the bounded LRU of open ones (open: indexes loaded;
//!   descriptors are the process-wide file cache's business, `file_cache.rs`);
//! - `log_start_offset <= log_end_offset`, `log_start_offset` lies in the first segment's range
//!   or at its base, and the log end offset is the active segment's `next_offset`;
//! - appended bytes reach the file with one `pwrite` before `append` returns (a SIGKILL after
//!   it returns loses nothing); a failed write is cut back, so no partial batch is visible;
//! - the flushed offset (everything below is fdatasync'd) never exceeds the log end offset.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::batch::{self, RecordBatch};
use crate::checkpoint::LEADER_EPOCH_CHECKPOINT;
use crate::config::{LogConfig, TimestampType, TopicPartition};
use crate::error::LogError;
use crate::error::RecordError;
use crate::group_commit::{FlushState, GroupCommit, SyncFile, SyncRequest};
use crate::leader_epoch::LeaderEpochCache;
use crate::producer_state::{AppendOrigin, ProducerStateManager};
use crate::producers::Judged;
use crate::segment::{BatchMeta, Segment, WriteFault, NO_TIMESTAMP};
use crate::tail_cache::TailCache;

/// Closed segments a log keeps open at once (loaded indexes) besides the active one; older
/// ones are closed least-recently-used first.
pub const OPEN_CLOSED_SEGMENTS_MAX: usize = 8;
/// Decompressed size limit when the log must look inside a compressed batch (key checks on
/// compacted topics, record-level timestamp lookups, compaction).
pub const DECOMPRESSED_BYTES_MAX: usize = 256 << 20;
/// Batches in one append call.
pub const APPEND_BATCHES_MAX: usize = 1 << 16;

/// `ListOffsets` special timestamps.
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const LATEST_TIMESTAMP: i64 = -1;
pub const MAX_TIMESTAMP: i64 = -3;

/// The offsets the broker checkpoints for a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionCheckpoint {
    pub recovery_point: i64,
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

/// The result of an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    /// The append time for LogAppendTime topics, -1 for CreateTime.
    pub log_append_time_ms: i64,
    pub max_timestamp_ms: i64,
    pub record_count: u32,
    /// The append was a producer's retry of a batch already in the log (idempotence):
    /// nothing was written and the offsets are the original batch's.
    pub duplicate: bool,
}

/// Hints from the log directory's checkpoints for opening a log.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpenHints {
    pub recovery_point: Option<i64>,
    pub log_start_offset: Option<i64>,
    pub high_watermark: Option<i64>,
    pub clean_shutdown: bool,
}

pub struct Log {
    pub(crate) tp: TopicPartition,
    pub(crate) dir: PathBuf,
    pub(crate) config: LogConfig,
    /// Boxed: a B-tree node holds room for eleven values, and a log has one segment or a few,
    /// so unboxed every log's map took a 3.4 KB node (34 MB over 10,000 partitions).
    pub(crate) segments: BTreeMap<i64, Box<Segment>>,
    pub(crate) log_start_offset: i64,
    pub(crate) high_watermark: i64,
    pub(crate) flush: Arc<FlushState>,
    /// Segments that rolled before they were flushed: (their end offset, files to sync).
    pub(crate) pending_sync: Vec<(i64, Vec<SyncFile>)>,
    pub(crate) epochs: LeaderEpochCache,
    pub(crate) tail: TailCache,
    pub(crate) unflushed_messages: u64,
    pub(crate) last_flush_ms: i64,
    pub(crate) group_commit: Option<Arc<GroupCommit>>,
    /// Set when a failed append could not be rolled back; appends are refused until reopen.
    pub(crate) failed: Option<String>,
    pub(crate) open_closed: VecDeque<i64>,
    pub(crate) fault_next_append: Option<WriteFault>,
    pub(crate) metas: Vec<BatchMeta>,
    /// Compaction's progress (in memory; after a restart the first pass reads everything).
    pub(crate) cleaner: crate::compaction::CleanerState,
    /// Idempotence and transaction state of the producers writing here.
    pub(crate) producers: ProducerStateManager,
    /// Offset of the newest producer snapshot on disk.
    pub(crate) last_snapshot_offset: Option<i64>,
    pub(crate) last_producer_expiry_ms: i64,
    /// [`Log::flush_mark`] as of the last [`Log::flush_now`] that completed.
    pub(crate) flushed_at: Option<(u64, i64, i64)>,
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Log {
    // ---------------------------------------------------------------- open and recovery

    /// Opens (creating if needed) the log in `dir`, recovering it: see `recovery.rs`.
    pub(crate) fn open(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        hints: OpenHints,
    ) -> Result<Log, LogError> {
        let io = |what: &str, e| LogError::io(&tp, what, e);
        fs::create_dir_all(dir).map_err(|e| io("create the partition directory", e))?;
        let now_ms = wall_clock_ms();
        let bases =
            crate::recovery::prepare_directory(dir).map_err(|e| io("list segment files", e))?;
        let mut segments = BTreeMap::new();
        for (i, &(base, size, mtime_ms)) in bases.iter().enumerate() {
            let mut seg = Segment::closed(dir, base, size, mtime_ms);
            seg.next_offset = bases.get(i + 1).map_or(base, |n| n.0);
            segments.insert(base, Box::new(seg));
        }
        let created_first = segments.is_empty();
        if created_first {
            let base = hints.log_start_offset.unwrap_or(0).max(0);
            let seg = Segment::create(dir, base, now_ms, &config)
                .map_err(|e| io("create a segment", e))?;
            segments.insert(base, Box::new(seg));
        }
        let mut log = Log {
            dir: dir.to_path_buf(),
            config: config.clone(),
            segments,
            log_start_offset: 0,
            high_watermark: 0,
            flush: FlushState::new(0),
            pending_sync: Vec::new(),
            epochs: LeaderEpochCache::load(dir.join(LEADER_EPOCH_CHECKPOINT))
                .map_err(|e| io("read leader-epoch-checkpoint", e))?,
            tail: TailCache::new(config.tail_cache_bytes),
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            group_commit: None,
            failed: None,
            open_closed: VecDeque::new(),
            fault_next_append: None,
            metas: Vec::new(),
            cleaner: Default::default(),
            producers: ProducerStateManager::new(0),
            last_snapshot_offset: None,
            last_producer_expiry_ms: now_ms,
            flushed_at: None,
            tp,
        };
        log.recover(hints)
            .map_err(|e| LogError::io(&log.tp, "recover", e))?;
        let first_base = *log.segments.keys().next().expect("a segment");
        let leo = log.log_end_offset();
        log.log_start_offset = hints
            .log_start_offset
            .unwrap_or(first_base)
            .max(first_base)
            .min(leo);
        log.high_watermark = hints
            .high_watermark
            .unwrap_or(log.log_start_offset)
            .clamp(log.log_start_offset, leo);
        log.flush = FlushState::new(leo);
        if created_first {
            log.flush.name_created();
        }
        log.epochs
            .truncate_from_end(leo)
            .map_err(|e| LogError::io(&log.tp, "write leader-epoch-checkpoint", e))?;
        log.epochs
            .truncate_from_start(log.log_start_offset)
            .map_err(|e| LogError::io(&log.tp, "write leader-epoch-checkpoint", e))?;
        log.load_producer_state(now_ms)?;
        Ok(log)
    }

    /// Opens (creating if needed) a log that no [`crate::LogDir`] manages: KRaft's metadata log
    /// (`__cluster_metadata-0`), whose start offset is its latest snapshot's end offset rather
    /// than a log directory checkpoint. Recovery scans every segment (no recovery point), as
    /// Kafka does for the metadata log; `log_start_offset` is clamped into the log's range.
    pub fn open_standalone(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        log_start_offset: Option<i64>,
    ) -> Result<Log, LogError> {
        let hints = OpenHints {
            log_start_offset,
            ..OpenHints::default()
        };
        Log::open(dir, tp, config, hints)
    }

    // ---------------------------------------------------------------- accessors

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset
    }
    /// Everything below this offset has been fdatasync'd.
    pub fn flushed_offset(&self) -> i64 {
        self.flush.flushed().min(self.log_end_offset())
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    /// Stores the high watermark (the broker owns its meaning), clamped to the log's range.
    pub fn set_high_watermark(&mut self, hw: i64) {
        self.high_watermark = hw.clamp(self.log_start_offset, self.log_end_offset());
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    pub fn set_config(&mut self, config: LogConfig) {
        self.tail.set_limit(
            config
                .tail_cache_bytes
                .min(crate::config::TAIL_CACHE_BYTES_MAX),
        );
        self.config = config;
    }
    /// Bytes of all segments.
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.size).sum()
    }
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    /// Base offsets of the segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }
    /// Leader-epoch cache entries (epoch, start offset).
    pub fn leader_epochs(&self) -> &[(i32, i64)] {
        self.epochs.entries()
    }
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.latest_epoch()
    }
    /// Records that leader epoch `epoch` starts at `start_offset` (a new leader's epoch starts
    /// at its log end, before it appends anything: Kafka's `maybeAssignEpochStartOffset`), so
    /// that followers asking for that epoch's end learn where the logs agree.
    pub fn assign_leader_epoch(&mut self, epoch: i32, start_offset: i64) -> Result<(), LogError> {
        self.epochs
            .assign(epoch, start_offset)
            .map(|_| ())
            .map_err(|e| LogError::io(&self.tp, "write leader-epoch-checkpoint", e))
    }
    /// The offsets to checkpoint now (recovery point = flushed offset).
    pub fn checkpoint(&self) -> PartitionCheckpoint {
        PartitionCheckpoint {
            recovery_point: self.flushed_offset(),
            high_watermark: self.high_watermark,
            log_start_offset: self.log_start_offset,
        }
    }
    /// Uses `gc` for flush.messages / flush.ms flushes (else the process-wide instance).
    pub fn set_group_commit(&mut self, gc: Arc<GroupCommit>) {
        self.group_commit = Some(gc);
    }

    pub(crate) fn active(&self) -> &Segment {
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }
    pub(crate) fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }
    pub(crate) fn active_base(&self) -> i64 {
        *self
            .segments
            .keys()
            .next_back()
            .expect("a log always has an active segment")
    }
    pub(crate) fn io(&self, what: &str, e: io::Error) -> LogError {
        LogError::io(&self.tp, what, e)
    }

    /// Test hook: the next append writes `partial_bytes` of its data and then fails with
    /// ENOSPC, as a full disk would.
    #[doc(hidden)]
    pub fn inject_append_failure(&mut self, partial_bytes: usize) {
        self.fault_next_append = Some(WriteFault {
            partial_bytes,
            cut_back_fails: false,
        });
    }

    /// Test hook: like `inject_append_failure`, and cutting the partial bytes back fails too.
    #[doc(hidden)]
    pub fn inject_unrecoverable_append_failure(&mut self, partial_bytes: usize) {
        self.fault_next_append = Some(WriteFault {
            partial_bytes,
            cut_back_fails: true,
        });
    }

    // ---------------------------------------------------------------- append

    /// Validates every v2 batch in `batches` (one or more, back to back) and appends them,
    /// assigning offsets from the log end offset and stamping `leader_epoch`. Producer
    /// batches are judged against the producer state (`producer_state.rs`): a retry of one of
    /// a producer's last five batches is answered with its original offsets and
    /// `duplicate: true`, without writing anything.
    pub fn append(
        &mut self,
        batches: Bytes,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.append_with_origin(batches, leader_epoch, now_ms, AppendOrigin::Client)
    }

    /// `append` for a given origin: `Coordinator` for the broker's own coordinators
    /// (transactional offset commits, markers), whose batches carry no sequence numbers.
    pub fn append_with_origin(
        &mut self,
        batches: Bytes,
        leader_epoch: i32,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<AppendInfo, LogError> {
        self.check_writable()?;
        if batches.is_empty() {
            return Err(LogError::invalid_record(format!(
                "produce to {} carries no record batches",
                self.tp
            )));
        }
        let base_offset = self.log_end_offset();
        let info = self.validate(&batches, base_offset, now_ms, origin)?;
        let updates = match self.judge_producers(&batches, base_offset, origin)? {
            Judged::Duplicate(original) => return Ok(original),
            Judged::Append(updates) => updates,
        };
        // Rewrite offsets (and LogAppendTime) in place: no copy when we hold the only reference.
        let mut buf = match batches.try_into_mut() {
            Ok(m) => m,
            Err(shared) => BytesMut::from(&shared[..]),
        };
        let log_append_time = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let mut pos = 0usize;
        let mut next = base_offset;
        for m in self.metas.iter() {
            let b = &mut buf[pos..pos + m.size as usize];
            batch::set_base_offset(b, next);
            batch::set_partition_leader_epoch(b, leader_epoch);
            if log_append_time {
                batch::set_log_append_time(b, now_ms);
            }
            next = m.last_offset + 1;
            pos += m.size as usize;
        }
        let last_offset = next - 1;
        self.write_batches(
            buf.freeze(),
            base_offset,
            last_offset,
            info.record_count,
            now_ms,
        )?;
        self.apply_producer_updates(updates);
        if leader_epoch >= 0 {
            if let Err(e) = self.epochs.assign(leader_epoch, base_offset) {
                tracing::error!(partition = %self.tp, error = %e, "could not write leader-epoch-checkpoint");
            }
        }
        Ok(AppendInfo {
            last_offset,
            ..info
        })
    }

    /// After a failed append that could not be rolled back, or a failed fdatasync, what is on
    /// disk is unknown: refuse appends until the log is reopened (recovery then validates and
    /// truncates the tail). Reads go on. Kafka takes the whole log directory offline instead.
    fn check_writable(&self) -> Result<(), LogError> {
        let reason = self.failed.clone().or_else(|| self.flush.failure());
        match reason {
            None => Ok(()),
            Some(reason) => Err(LogError::Storage(io::Error::other(format!(
                "{} refuses appends until it is reopened, after: {reason}",
                self.tp
            )))),
        }
    }

    /// Why appends are refused, if they are (see `append`).
    pub fn failure(&self) -> Option<String> {
        self.failed.clone().or_else(|| self.flush.failure())
    }

    /// Appends batches a leader already assigned offsets to (replication, Kafka's
    /// `appendAsFollower`): checks length, magic and CRC, requires offsets to start at or past
    /// the log end and to increase, writes the bytes unchanged, and records each batch's leader
    /// epoch in the epoch cache. Compacted batches (fewer records than offsets) are accepted.
    pub fn append_as_follower(
        &mut self,
        batches: Bytes,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.check_writable()?;
        self.metas.clear();
        let mut expected = self.log_end_offset();
        let mut first_offset = None;
        let mut record_count = 0u32;
        let mut max_timestamp = NO_TIMESTAMP;
        let mut epochs: Vec<(i32, i64)> = Vec::new();
        for item in batch::batches(&batches) {
            let b = item.map_err(|e| {
                LogError::CorruptBatch(format!("{e} in replica fetch for {}", self.tp))
            })?;
            b.validate_integrity().map_err(|e| {
                LogError::CorruptBatch(format!("{e} in replica fetch for {}", self.tp))
            })?;
            let h = *b.header();
            if h.base_offset < expected {
                return Err(LogError::invalid_record(format!(
                    "replicated batch at offset {} is below the expected offset {expected} for {}",
                    h.base_offset, self.tp
                )));
            }
            if self.metas.len() >= APPEND_BATCHES_MAX {
                return Err(LogError::invalid_record(format!(
                    "replica fetch for {} has more than {APPEND_BATCHES_MAX} batches",
                    self.tp
                )));
            }
            first_offset.get_or_insert(h.base_offset);
            if h.partition_leader_epoch >= 0
                && epochs
                    .last()
                    .is_none_or(|&(e, _)| h.partition_leader_epoch > e)
            {
                epochs.push((h.partition_leader_epoch, h.base_offset));
            }
            self.metas.push(BatchMeta {
                last_offset: h.last_offset(),
                max_timestamp: h.max_timestamp,
                size: b.size_bytes() as u32,
            });
            record_count = record_count.saturating_add(h.record_count.max(0) as u32);
            max_timestamp = max_timestamp.max(h.max_timestamp);
            expected = h.next_offset();
        }
        let Some(first_offset) = first_offset else {
            return Err(LogError::invalid_record(format!(
                "replica fetch for {} carries no record batches",
                self.tp
            )));
        };
        let updates = self.judge_replicated(&batches);
        self.write_batches(batches, first_offset, expected - 1, record_count, now_ms)?;
        self.apply_producer_updates(updates);
        for (epoch, start) in epochs {
            if let Err(e) = self.epochs.assign(epoch, start) {
                tracing::error!(partition = %self.tp, error = %e, "could not write leader-epoch-checkpoint");
            }
        }
        Ok(AppendInfo {
            base_offset: first_offset,
            last_offset: expected - 1,
            log_append_time_ms: -1,
            max_timestamp_ms: max_timestamp,
            record_count,
            duplicate: false,
        })
    }

    /// Writes whole batches described by `self.metas` at the log end (rolling first if needed)
    /// with one write, then caches them and applies flush.messages.
    fn write_batches(
        &mut self,
        bytes: Bytes,
        first_offset: i64,
        last_offset: i64,
        record_count: u32,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let leo = self.log_end_offset();
        let max_timestamp = self
            .metas
            .iter()
            .map(|m| m.max_timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP);
        let should_roll = self
            .segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
            .should_roll(
                &self.config,
                bytes.len() as u64,
                last_offset,
                max_timestamp,
                now_ms,
            )
            .map_err(|e| self.io("read the active segment's first batch", e))?;
        let needs_roll = should_roll
            // A follower's batch may start past the end (a compacted leader): the active
            // segment must still be able to express its offsets relative to its base.
            || (first_offset > leo && last_offset - self.active_base() > i32::MAX as i64);
        if needs_roll {
            self.roll_at(first_offset.max(leo), now_ms)?;
        }
        let fault = self.fault_next_append.take();
        let metas = std::mem::take(&mut self.metas);
        let result = self.active_mut().append(&bytes, &metas, now_ms, fault);
        self.metas = metas;
        if let Err((e, rolled_back)) = result {
            if !rolled_back {
                self.failed = Some(e.to_string());
            }
            return Err(self.io("append", e));
        }
        assert_eq!(
            self.log_end_offset(),
            last_offset + 1,
            "the log end must follow the last appended batch of {}",
            self.tp
        );
        self.tail.push(first_offset, bytes);
        self.unflushed_messages += record_count as u64;
        if self.unflushed_messages >= self.config.flush_messages {
            self.request_flush(now_ms);
        }
        Ok(())
    }

    /// Checks every batch and fills `self.metas` with offsets assigned from `base_offset`.
    fn validate(
        &mut self,
        batches: &[u8],
        base_offset: i64,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<AppendInfo, LogError> {
        let max = self.config.max_message_bytes as usize;
        let compacted = self.config.cleanup_policy.compacts();
        let log_append_time = self.config.message_timestamp_type == TimestampType::LogAppendTime;
        self.metas.clear();
        let mut next = base_offset;
        let mut record_count: u32 = 0;
        let mut max_timestamp = NO_TIMESTAMP;
        for item in batch::batches(batches) {
            let b =
                item.map_err(|e| LogError::CorruptBatch(format!("{e} in produce to {}", self.tp)))?;
            if b.size_bytes() > max {
                return Err(LogError::MessageTooLarge {
                    partition: self.tp.to_string(),
                    size_bytes: b.size_bytes(),
                    max_message_bytes: self.config.max_message_bytes,
                });
            }
            b.validate(max).map_err(|e| {
                if e.is_corrupt() {
                    LogError::CorruptBatch(format!("{e} in produce to {}", self.tp))
                } else {
                    LogError::invalid_record(format!("{e} in produce to {}", self.tp))
                }
            })?;
            if self.metas.len() >= APPEND_BATCHES_MAX {
                return Err(LogError::invalid_record(format!(
                    "produce to {} has more than {APPEND_BATCHES_MAX} batches",
                    self.tp
                )));
            }
            let h = *b.header();
            if origin == AppendOrigin::Client {
                // Kafka's `LogValidator` rules for what clients may write.
                if h.is_control() {
                    return Err(LogError::invalid_record(format!(
                        "clients are not allowed to write control records (produce to {})",
                        self.tp
                    )));
                }
                if h.producer_id >= 0 && h.base_sequence < 0 {
                    return Err(LogError::invalid_record(format!(
                        "invalid sequence number {} in record batch with producerId {} for {}",
                        h.base_sequence, h.producer_id, self.tp
                    )));
                }
            }
            if h.is_transactional() && h.producer_id < 0 {
                return Err(LogError::invalid_record(format!(
                    "transactional batch without a producer id for {}",
                    self.tp
                )));
            }
            if compacted && !h.is_control() {
                self.check_keys(&b)?;
            }
            let last_offset = next + h.last_offset_delta as i64;
            let ts = if log_append_time {
                now_ms
            } else {
                h.max_timestamp
            };
            max_timestamp = max_timestamp.max(ts);
            self.metas.push(BatchMeta {
                last_offset,
                max_timestamp: ts,
                size: b.size_bytes() as u32,
            });
            record_count = record_count.saturating_add(h.record_count as u32);
            next = last_offset + 1;
        }
        Ok(AppendInfo {
            base_offset,
            last_offset: next - 1,
            log_append_time_ms: if log_append_time { now_ms } else { -1 },
            max_timestamp_ms: max_timestamp,
            record_count,
            duplicate: false,
        })
    }

    /// Starts a new active segment at the log end offset.
    pub(crate) fn roll(&mut self, now_ms: i64) -> Result<(), LogError> {
        self.roll_at(self.log_end_offset(), now_ms)
    }

    /// Starts a new active segment at `base` (the log end offset, or past it for a follower).
    fn roll_at(&mut self, base: i64, now_ms: i64) -> Result<(), LogError> {
        let leo = self.log_end_offset();
        let flushed = self.flush.flushed();
        let active_base = self.active_base();
        let tp = self.tp.clone();
        let old = self.active_mut();
        old.seal()
            .map_err(|e| LogError::io(&tp, "seal a segment", e))?;
        if leo > flushed {
            let files = old
                .sync_files()
                .map_err(|e| LogError::io(&tp, "write index entries", e))?;
            self.pending_sync.push((leo, files));
        }
        debug_assert!(base >= leo && base > active_base);
        let seg = Segment::create(&self.dir, base, now_ms, &self.config)
            .map_err(|e| self.io("roll a segment", e))?;
        self.flush.name_created();
        self.segments.insert(base, Box::new(seg));
        self.note_open(active_base);
        // Kafka snapshots producer state at every roll: a rebuild then replays at most the
        // active segment. Not synced (the append path must not wait for a disk); a torn one
        // fails its CRC at the next open and an older one is used.
        if let Err(e) = self.write_producer_snapshot(false) {
            tracing::warn!(partition = %self.tp, "cannot write a producer snapshot at a roll: {e}");
        }
        // Like Kafka's roll, flush the finished segment in the background: the recovery point
        // keeps up with rolls even when flush.messages / flush.ms never fire.
        self.prune_pending_sync();
        let req = self.sync_request(leo);
        if !req.is_noop() {
            let gc = self
                .group_commit
                .clone()
                .unwrap_or_else(GroupCommit::shared);
            drop(gc.submit(req));
        }
        tracing::debug!(partition = %self.tp, base_offset = base, "rolled a new segment");
        Ok(())
    }

    /// Records that closed segment `base` was opened; closes the least recently used beyond
    /// the limit.
    pub(crate) fn note_open(&mut self, base: i64) {
        if base == self.active_base() {
            return;
        }
        self.open_closed.retain(|&b| b != base);
        self.open_closed.push_back(base);
        while self.open_closed.len() > OPEN_CLOSED_SEGMENTS_MAX {
            let evict = self.open_closed.pop_front().expect("non-empty");
            if let Some(s) = self.segments.get_mut(&evict) {
                if let Err(e) = s.close_files() {
                    tracing::warn!(partition = %self.tp, error = %e, "closing a segment");
                }
            }
        }
    }

    pub(crate) fn open_segment(&mut self, base: i64) -> Result<(), LogError> {
        let config = self.config.clone();
        let seg = self.segments.get_mut(&base).expect("segment exists");
        if !seg.is_open() {
            seg.open(&config)
                .map_err(|e| LogError::io(&self.tp, "open a segment", e))?;
        }
        self.note_open(base);
        Ok(())
    }

    // ---------------------------------------------------------------- flushing

    /// What the group-commit thread must fdatasync so that every offset below `up_to` is
    /// durable.
    pub fn sync_request(&self, up_to: i64) -> SyncRequest {
        let up_to = up_to.min(self.log_end_offset());
        let flushed = self.flush.flushed();
        let mut files = Vec::new();
        if up_to > flushed {
            for (end, fs) in &self.pending_sync {
                if *end > flushed {
                    files.extend(fs.iter().cloned());
                }
            }
            if up_to > self.active_base() {
                files.push(SyncFile::Log(self.active().files().log.clone()));
            }
        }
        let dir = (up_to > flushed)
            .then(|| self.flush.names_unsynced())
            .flatten()
            .map(|created| (Arc::from(self.dir.as_path()), created));
        SyncRequest {
            partition: self.tp.to_string(),
            files,
            dir,
            up_to,
            generation: self.flush.generation(),
            state: self.flush.clone(),
        }
    }

    /// Submits an asynchronous flush of everything appended so far (flush.messages, flush.ms).
    pub(crate) fn request_flush(&mut self, now_ms: i64) -> bool {
        self.unflushed_messages = 0;
        self.last_flush_ms = now_ms;
        self.prune_pending_sync();
        let req = self.sync_request(self.log_end_offset());
        if req.is_noop() {
            return false;
        }
        let gc = self
            .group_commit
            .clone()
            .unwrap_or_else(GroupCommit::shared);
        drop(gc.submit(req));
        true
    }

    pub(crate) fn prune_pending_sync(&mut self) {
        let flushed = self.flush.flushed();
        self.pending_sync.retain(|(end, _)| *end > flushed);
    }

    /// fdatasyncs everything now, on the calling thread (close, checkpoints, tests, tools).
    /// A log with nothing written since the last call has nothing to sync: the checkpoints
    /// call this for every partition every `log.flush.offset.checkpoint.interval.ms`, and
    /// three fdatasyncs per idle partition made that pass (and a shutdown) take a second per
    /// ~2,000 partitions.
    pub fn flush_now(&mut self) -> Result<(), LogError> {
        if !self.has_unflushed_writes() {
            return Ok(());
        }
        self.sync_now()?;
        // Everything is durable here; so is the producer state as of here, which bounds the
        // rebuild after a crash to what is appended from now on.
        self.write_producer_snapshot(true)
    }

    /// [`Log::flush_now`] without the producer snapshot: for a log no producer writes to (the
    /// metadata quorum's, flushed at every append, where a snapshot cost two more fsyncs each
    /// time and recorded nothing).
    pub fn sync_now(&mut self) -> Result<(), LogError> {
        if !self.has_unflushed_writes() {
            return Ok(());
        }
        for (_, files) in &self.pending_sync {
            for f in files {
                f.sync_data()
                    .map_err(|e| LogError::io(&self.tp, "fdatasync", e))?;
            }
        }
        let tp = self.tp.clone();
        self.active_mut()
            .flush()
            .map_err(|e| LogError::io(&tp, "fdatasync", e))?;
        if let Some(created) = self.flush.names_unsynced() {
            crate::checkpoint::sync_dir(&self.dir)
                .map_err(|e| LogError::io(&tp, "fsync the partition directory", e))?;
            self.flush.names_synced(created);
        }
        let leo = self.log_end_offset();
        self.flush.advance(self.flush.generation(), leo);
        self.pending_sync.clear();
        self.unflushed_messages = 0;
        self.flushed_at = Some(self.flush_mark());
        Ok(())
    }

    /// Whether the files changed since the last [`Log::flush_now`] (or it never ran): an
    /// append, a roll, or a truncation (which starts a new flush generation), even one that
    /// ends at the same offset.
    pub fn has_unflushed_writes(&self) -> bool {
        !self.pending_sync.is_empty() || self.flushed_at != Some(self.flush_mark())
    }

    /// What changes with every write to the files: (flush generation, log end offset, base
    /// offset of the active segment).
    pub(crate) fn flush_mark(&self) -> (u64, i64, i64) {
        (
            self.flush.generation(),
            self.log_end_offset(),
            self.active_base(),
        )
    }
}

impl Log {
    // ---------------------------------------------------------------- read

    // ---------------------------------------------------------------- offsets by time and epoch

    // ---------------------------------------------------------------- truncation

    /// Removes every batch at or after `offset` (a follower diverged from its leader). As in
    /// Kafka, a batch straddling `offset` goes entirely, so the new log end may be lower.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(LogError::InvalidRequest(format!(
                "cannot truncate {} to negative offset {offset}",
                self.tp
            )));
        }
        if offset >= self.log_end_offset() {
            // No record to remove, but maybe an epoch that starts at the end without one: a
            // broker that became leader records its epoch there before it writes. A follower
            // whose new leader never had that epoch truncates here to drop it, as Kafka's
            // `UnifiedLog.truncateTo` does; kept, it names the follower's last epoch in every
            // fetch (diverging at the same offset forever), and the older epochs' batches
            // appended after it are taken for its own.
            let leo = self.log_end_offset();
            return self
                .epochs
                .truncate_from_end(leo)
                .map_err(|e| self.io("write leader-epoch-checkpoint", e));
        }
        let first_base = *self.segments.keys().next().expect("a segment");
        if offset < self.log_start_offset || offset < first_base {
            return self.truncate_fully_and_start_at(offset);
        }
        self.tail.clear();
        let later: Vec<i64> = self.segments.range(offset + 1..).map(|(b, _)| *b).collect();
        for b in later {
            self.remove_segment(b)?;
        }
        let base = self.active_base();
        self.open_closed.retain(|&b| b != base);
        let config = self.config.clone();
        let tp = self.tp.clone();
        let seg = self.active_mut();
        seg.open(&config)
            .map_err(|e| LogError::io(&tp, "open a segment", e))?;
        seg.truncate_to(offset)
            .map_err(|e| LogError::io(&tp, "truncate", e))?;
        seg.recompute_tail()
            .map_err(|e| LogError::io(&tp, "truncate", e))?;
        self.after_truncation()
    }

    /// Deletes everything and restarts the log empty at `offset` (a follower far behind).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(LogError::InvalidRequest(format!(
                "cannot start {} at negative offset {offset}",
                self.tp
            )));
        }
        self.tail.clear();
        let all: Vec<i64> = self.segments.keys().copied().collect();
        // Create first so the log always has an active segment, even if a delete fails.
        let seg = Segment::create(&self.dir, offset, wall_clock_ms(), &self.config)
            .map_err(|e| self.io("create a segment", e))?;
        self.flush.name_created();
        let old_same_base = self.segments.insert(offset, Box::new(seg));
        if let Some(s) = old_same_base {
            drop(s);
        }
        for b in all.into_iter().filter(|&b| b != offset) {
            self.remove_segment(b)?;
        }
        self.log_start_offset = offset;
        self.epochs
            .clear()
            .map_err(|e| self.io("write leader-epoch-checkpoint", e))?;
        self.pending_sync.clear();
        self.reset_producer_state(offset)?;
        self.after_truncation()
    }

    fn after_truncation(&mut self) -> Result<(), LogError> {
        self.sync_truncation()?;
        let leo = self.log_end_offset();
        // A batch straddling the log start can take the end below it (Kafka lowers the start).
        self.log_start_offset = self.log_start_offset.min(leo);
        self.epochs
            .truncate_from_end(leo)
            .map_err(|e| self.io("write leader-epoch-checkpoint", e))?;
        self.flush.reset(self.flush.flushed().min(leo));
        self.pending_sync.retain(|(end, _)| *end <= leo);
        self.high_watermark = self.high_watermark.clamp(self.log_start_offset, leo);
        self.failed = None;
        // Offsets at and above the new end will be written again: they are dirty.
        self.cleaner.first_dirty_offset = self.cleaner.first_dirty_offset.min(leo);
        self.load_producer_state(wall_clock_ms())
    }

    /// Makes a truncation durable at once (it is rare: a follower that diverged from its leader,
    /// or one behind its leader's log start). A follower appends its leader's records where the
    /// cut-off ones were and records their epoch in the leader-epoch checkpoint, which is
    /// durable; if a power cut brought the cut-off records back, the follower would hold
    /// records its leader never had under offsets the checkpoint gives to the leader's epoch,
    /// and no later fetch would find the divergence.
    fn sync_truncation(&mut self) -> Result<(), LogError> {
        let tp = self.tp.clone();
        self.active_mut()
            .flush()
            .map_err(|e| LogError::io(&tp, "fdatasync a truncated segment", e))?;
        let created = self.flush.names_unsynced();
        crate::checkpoint::sync_dir(&self.dir)
            .map_err(|e| LogError::io(&tp, "fsync the partition directory", e))?;
        if let Some(created) = created {
            self.flush.names_synced(created);
        }
        Ok(())
    }

    pub(crate) fn remove_segment(&mut self, base: i64) -> Result<u64, LogError> {
        self.open_closed.retain(|&b| b != base);
        let Some(seg) = self.segments.remove(&base) else {
            return Ok(0);
        };
        let size = seg.size;
        seg.delete_files()
            .map_err(|e| self.io("delete a segment", e))?;
        self.remove_snapshot_at(base);
        Ok(size)
    }

    // ---------------------------------------------------------------- maintenance

    /// Closes the log: records the final index entries and fdatasyncs everything.
    pub fn close(mut self) -> Result<PartitionCheckpoint, LogError> {
        let tp = self.tp.clone();
        self.active_mut()
            .seal()
            .map_err(|e| LogError::io(&tp, "close", e))?;
        self.flush_now()?;
        for s in self.segments.values_mut() {
            s.close_files().map_err(|e| LogError::io(&tp, "close", e))?;
        }
        Ok(PartitionCheckpoint {
            recovery_point: self.log_end_offset(),
            high_watermark: self.high_watermark,
            log_start_offset: self.log_start_offset,
        })
    }
}

impl Log {
    /// Compacted topics need a key on every record (Kafka's `LogValidator`: "Compacted topic
    /// cannot accept message without key"). Every keyless record is named by its index in the
    /// batch (KIP-467's `record_errors`).
    fn check_keys(&self, b: &RecordBatch<'_>) -> Result<(), LogError> {
        let mut record_errors = Vec::new();
        let mut index = 0i32;
        crate::records::for_each_record(b, |_, _, r| {
            if r.key.is_none() {
                record_errors.push(RecordError {
                    batch_index: index,
                    message: format!(
                        "Compacted topic cannot accept message without key in topic partition {}.",
                        self.tp
                    ),
                });
            }
            index += 1;
            None::<()>
        })
        .map_err(|why| LogError::invalid_record(format!("{why} for {}", self.tp)))?;
        if record_errors.is_empty() {
            return Ok(());
        }
        Err(LogError::InvalidRecord {
            message: format!(
                "compacted topic {} cannot accept {} record(s) without a key (first: record {} of its batch)",
                self.tp,
                record_errors.len(),
                record_errors[0].batch_index
            ),
            record_errors,
        })
    }
}
