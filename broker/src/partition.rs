//! A partition as the broker serves it: the storage log behind a short lock, the offsets
//! readers need without taking that lock, and the wake-up for long-polling fetches.
//!
//! Invariants: `log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset`;
//! the cached offsets only move forward except through truncation or DeleteRecords, both done
//! under the log lock. The last stable offset is recomputed whenever the high watermark or
//! the log moves (an append may open or close a transaction).

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use samsa_storage::{
    AbortedTxn, AppendInfo, AppendOrigin, EndTxnMarker, GroupCommit, Log, LogConfig, LogError,
    LogSlice, ProducerStateEntry, TopicPartition,
};
use tokio::sync::Notify;
use uuid::Uuid;

pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: Uuid,
    log: Mutex<Log>,
    /// Woken after every append that moves the high watermark.
    data_arrived: Notify,
    log_end_offset: AtomicI64,
    log_start_offset: AtomicI64,
    high_watermark: AtomicI64,
    /// What read_committed readers may see (Kafka's last stable offset).
    last_stable_offset: AtomicI64,
    leader_epoch: AtomicI32,
    /// Whether this node leads the partition (the metadata image's `leader` is this node).
    /// Topics this node alone knows (internal topics, topics from before the metadata log)
    /// are always led here.
    leader: std::sync::atomic::AtomicBool,
    durable: std::sync::atomic::AtomicBool,
}

/// What a read found: the batches plus the offsets a fetch response reports beside them.
pub struct ReadResult {
    pub slice: LogSlice,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

/// A durable append's fsync, to await before answering (None when not in durable mode).
pub type SyncWait = Option<tokio::sync::oneshot::Receiver<Result<(), LogError>>>;

impl Partition {
    pub fn new(tp: TopicPartition, topic_id: Uuid, log: Log, leader_epoch: i32) -> Partition {
        let durable = log.config().durable;
        let p = Partition {
            tp,
            topic_id,
            log_end_offset: AtomicI64::new(log.log_end_offset()),
            log_start_offset: AtomicI64::new(log.log_start_offset()),
            high_watermark: AtomicI64::new(0),
            last_stable_offset: AtomicI64::new(0),
            leader_epoch: AtomicI32::new(leader_epoch),
            leader: true.into(),
            durable: durable.into(),
            data_arrived: Notify::new(),
            log: Mutex::new(log),
        };
        // A single node's high watermark is its log end: everything written is "replicated".
        // In durable mode it is what is on disk.
        let mut log = p.log.lock();
        p.refresh(&mut log);
        drop(log);
        p
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset.load(Ordering::Acquire)
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }
    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::Acquire)
    }

    /// Takes the leadership the metadata image gives this node: whether it leads, and the
    /// leader epoch that new batches carry. Epochs never go back (the image's only grow).
    pub fn set_leadership(&self, leader: bool, leader_epoch: i32) {
        let log = self.log.lock();
        let current = self.leader_epoch();
        debug_assert!(
            leader_epoch >= current,
            "leader epoch {current} -> {leader_epoch}"
        );
        self.leader_epoch
            .store(leader_epoch.max(current), Ordering::Release);
        self.leader.store(leader, Ordering::Release);
        drop(log);
    }

    pub fn last_stable_offset(&self) -> i64 {
        self.last_stable_offset.load(Ordering::Acquire)
    }

    /// Appends producer batches. In durable mode the returned future completes once the
    /// batches are on disk; otherwise at once (they are in the page cache, which survives a
    /// process crash). A producer's retry of a batch already in the log comes back with the
    /// original offsets and `duplicate` set, writing nothing.
    pub fn append(
        self: &Arc<Self>,
        batches: Bytes,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        self.append_with(group_commit, |log, epoch| {
            log.append(batches, epoch, now_ms)
        })
    }

    /// `append` for the broker's own coordinators (transactional offset commits), whose
    /// batches are judged by epoch but carry no sequence numbers.
    pub fn append_as_coordinator(
        self: &Arc<Self>,
        batches: Bytes,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        self.append_with(group_commit, |log, epoch| {
            log.append_with_origin(batches, epoch, now_ms, AppendOrigin::Coordinator)
        })
    }

    /// Writes a transaction marker for `producer_id` (the transaction coordinator's
    /// WriteTxnMarkers, in process).
    pub fn append_marker(
        self: &Arc<Self>,
        producer_id: i64,
        producer_epoch: i16,
        marker: EndTxnMarker,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        self.append_with(group_commit, |log, epoch| {
            log.append_control(producer_id, producer_epoch, marker, epoch, now_ms)
        })
    }

    fn append_with(
        self: &Arc<Self>,
        group_commit: &GroupCommit,
        f: impl FnOnce(&mut Log, i32) -> Result<AppendInfo, LogError>,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        let mut log = self.log.lock();
        let info = f(&mut log, self.leader_epoch())?;
        if info.duplicate {
            // A retry is answered like the original (Kafka waits for the original's offsets
            // to be committed): in durable mode, once they are on disk.
            if self.durable.load(Ordering::Relaxed) && log.flushed_offset() <= info.last_offset {
                let req = log.sync_request(info.last_offset + 1);
                drop(log);
                return Ok((info, Some(group_commit.submit(req))));
            }
            return Ok((info, None));
        }
        let end = log.log_end_offset();
        self.log_end_offset.store(end, Ordering::Release);
        if self.durable.load(Ordering::Relaxed) {
            let req = log.sync_request(end);
            drop(log);
            Ok((info, Some(group_commit.submit(req))))
        } else {
            self.high_watermark.store(end, Ordering::Release);
            self.last_stable_offset
                .store(log.last_stable_offset(end), Ordering::Release);
            drop(log);
            self.data_arrived.notify_waiters();
            Ok((info, None))
        }
    }

    /// Called when a durable append's fsync completed: the high watermark moves to what is on
    /// disk and waiting fetches wake.
    pub fn synced(&self) {
        let mut log = self.log.lock();
        let flushed = log.flushed_offset();
        let hw = self
            .high_watermark
            .fetch_max(flushed, Ordering::AcqRel)
            .max(flushed);
        self.last_stable_offset
            .store(log.last_stable_offset(hw), Ordering::Release);
        drop(log);
        self.data_arrived.notify_waiters();
    }

    /// Reads whole batches from `offset`, bounded by the high watermark, or by the last
    /// stable offset for a read_committed reader.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
    ) -> Result<ReadResult, LogError> {
        let mut log = self.log.lock();
        let hw = self.high_watermark();
        let lso = self.last_stable_offset();
        let bound = if read_committed { lso } else { hw };
        let slice = log.read(offset, max_bytes, bound, min_one_batch)?;
        Ok(ReadResult {
            slice,
            high_watermark: hw,
            last_stable_offset: lso,
            log_start_offset: log.log_start_offset(),
        })
    }

    /// The aborted transactions a read_committed reader of `[from, upper)` must skip.
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Result<Vec<AbortedTxn>, LogError> {
        self.log.lock().aborted_transactions(from, upper)
    }

    /// Every producer the partition knows (DescribeProducers).
    pub fn active_producers(&self) -> Vec<ProducerStateEntry> {
        self.log.lock().active_producers()
    }

    /// Whether `producer_id` at `producer_epoch` has a transaction open in this partition.
    pub fn in_transaction(&self, producer_id: i64, producer_epoch: i16) -> bool {
        self.log.lock().in_transaction(producer_id, producer_epoch)
    }

    /// A future that completes at the next append. Create it before reading, so an append
    /// between the read and the wait is not missed.
    pub fn data_arrived(&self) -> tokio::sync::futures::Notified<'_> {
        self.data_arrived.notified()
    }

    /// Runs `f` with the log locked, then refreshes the cached offsets (for truncation,
    /// DeleteRecords, retention and config changes).
    pub fn with_log<T>(&self, f: impl FnOnce(&mut Log) -> T) -> T {
        let mut log = self.log.lock();
        let out = f(&mut log);
        self.refresh(&mut log);
        out
    }

    fn refresh(&self, log: &mut Log) {
        self.log_end_offset
            .store(log.log_end_offset(), Ordering::Release);
        self.log_start_offset
            .store(log.log_start_offset(), Ordering::Release);
        let hw = if self.durable.load(Ordering::Relaxed) {
            log.flushed_offset()
        } else {
            log.log_end_offset()
        };
        let hw = hw.max(log.log_start_offset());
        self.high_watermark.store(hw, Ordering::Release);
        self.last_stable_offset
            .store(log.last_stable_offset(hw), Ordering::Release);
    }

    pub fn set_config(&self, config: LogConfig) {
        self.durable.store(config.durable, Ordering::Relaxed);
        self.with_log(|log| log.set_config(config));
    }
}

impl Partition {
    /// Removes the partition's files; later appends and reads on this handle fail.
    pub fn delete_log(&self, log_dir: &samsa_storage::LogDir) -> Result<(), LogError> {
        let _log = self.log.lock();
        log_dir.delete_partition_dir(&self.tp)
    }

    /// Flushes the log and returns what the log-directory checkpoints record for it.
    /// The flush also snapshots the producer state, so a restart replays little.
    pub fn checkpoint(&self) -> Result<samsa_storage::PartitionCheckpoint, LogError> {
        let mut log = self.log.lock();
        log.flush_now()?;
        Ok(samsa_storage::PartitionCheckpoint {
            recovery_point: log.flushed_offset(),
            high_watermark: self.high_watermark(),
            log_start_offset: log.log_start_offset(),
        })
    }
}

/// What replaying an internal topic's partition meets, in log order (see [`Partition::replay`]).
pub enum Replayed<'a> {
    /// A transaction marker (COMMIT or ABORT) of `producer_id`.
    Marker { producer_id: i64, commit: bool },
    /// A record of a data batch; `transactional` is the batch's producer id when the batch
    /// belongs to a transaction.
    Record {
        offset: i64,
        transactional: Option<i64>,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
    },
}

/// Bytes read from the log per step of a replay (a larger batch is still read whole).
const REPLAY_READ_BYTES: usize = 1 << 20;
/// The largest decompressed batch a replay accepts (coordinators write theirs uncompressed).
const REPLAY_DECOMPRESSED_BYTES_MAX: usize = 64 << 20;

impl Partition {
    /// Visits every record and transaction marker from the log start to the high watermark,
    /// in order (how the group and transaction coordinators load their internal topics).
    /// What cannot be read is skipped with a warning; returns how many records that was.
    pub fn replay(&self, mut visit: impl FnMut(Replayed<'_>)) -> Result<u64, LogError> {
        use samsa_storage::batch::{self, Compression};
        let mut skipped = 0u64;
        let mut offset = self.log_start_offset();
        let end = self.high_watermark();
        while offset < end {
            let read = match self.read(offset, REPLAY_READ_BYTES, true, false) {
                Ok(r) => r,
                // Retention or DeleteRecords moved the start while we read: continue from it.
                Err(LogError::OffsetOutOfRange {
                    log_start_offset, ..
                }) if log_start_offset > offset => {
                    offset = log_start_offset;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if read.slice.is_empty() {
                break;
            }
            let bytes = read.slice.load().map_err(LogError::Storage)?;
            let mut next = offset;
            for b in batch::batches(&bytes) {
                let b = match b {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(partition = %self.tp, offset = next, "unreadable batch while replaying: {e}");
                        break;
                    }
                };
                let h = *b.header();
                next = h.next_offset();
                if h.last_offset() < offset {
                    continue;
                }
                if h.is_control() {
                    if h.producer_id >= 0 {
                        match EndTxnMarker::parse(&b) {
                            Ok(Some(m)) => visit(Replayed::Marker {
                                producer_id: h.producer_id,
                                commit: m.commit,
                            }),
                            Ok(None) => {}
                            Err(e) => {
                                tracing::warn!(partition = %self.tp, offset = h.base_offset, "unreadable transaction marker while replaying: {e}")
                            }
                        }
                    }
                    continue;
                }
                let transactional =
                    (h.is_transactional() && h.producer_id >= 0).then_some(h.producer_id);
                let codec = h.compression().unwrap_or(Compression::None);
                let decompressed;
                let payload = if codec == Compression::None {
                    b.records_bytes()
                } else {
                    match samsa_storage::compression::decompress(
                        codec,
                        b.records_bytes(),
                        REPLAY_DECOMPRESSED_BYTES_MAX,
                    ) {
                        Ok(v) => {
                            decompressed = v;
                            &decompressed[..]
                        }
                        Err(e) => {
                            tracing::warn!(partition = %self.tp, offset = h.base_offset, "cannot decompress a batch while replaying: {e}");
                            skipped += h.record_count.max(0) as u64;
                            continue;
                        }
                    }
                };
                for r in samsa_storage::records::records(payload, h.record_count) {
                    let r = match r {
                        Ok(r) => r,
                        Err(e) => {
                            tracing::warn!(partition = %self.tp, offset = h.base_offset, "malformed record while replaying: {e}");
                            skipped += 1;
                            break;
                        }
                    };
                    let record_offset = h.base_offset + r.offset_delta as i64;
                    if record_offset < offset {
                        continue;
                    }
                    visit(Replayed::Record {
                        offset: record_offset,
                        transactional,
                        key: r.key,
                        value: r.value,
                    });
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        Ok(skipped)
    }
}
