//! A partition as the broker serves it: the storage log behind a short lock, the offsets
//! readers need without taking that lock, and the wake-up for long-polling fetches.
//!
//! Invariants: `log_start_offset <= high_watermark <= log_end_offset`; the cached offsets only
//! move forward except through truncation or DeleteRecords, both done under the log lock.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use samsa_storage::{AppendInfo, GroupCommit, Log, LogConfig, LogError, LogSlice, TopicPartition};
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
    leader_epoch: AtomicI32,
    durable: std::sync::atomic::AtomicBool,
}

/// What a read found: the batches plus the offsets a fetch response reports beside them.
pub struct ReadResult {
    pub slice: LogSlice,
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

impl Partition {
    pub fn new(tp: TopicPartition, topic_id: Uuid, log: Log, leader_epoch: i32) -> Partition {
        let durable = log.config().durable;
        let p = Partition {
            tp,
            topic_id,
            log_end_offset: AtomicI64::new(log.log_end_offset()),
            log_start_offset: AtomicI64::new(log.log_start_offset()),
            high_watermark: AtomicI64::new(0),
            leader_epoch: AtomicI32::new(leader_epoch),
            durable: durable.into(),
            data_arrived: Notify::new(),
            log: Mutex::new(log),
        };
        // A single node's high watermark is its log end: everything written is "replicated".
        // In durable mode it is what is on disk.
        let log = p.log.lock();
        p.high_watermark.store(
            if durable {
                log.flushed_offset()
            } else {
                log.log_end_offset()
            },
            Ordering::Release,
        );
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

    /// Appends producer batches. In durable mode the returned future completes once the
    /// batches are on disk; otherwise at once (they are in the page cache, which survives a
    /// process crash).
    pub fn append(
        self: &Arc<Self>,
        batches: Bytes,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<
        (
            AppendInfo,
            Option<tokio::sync::oneshot::Receiver<Result<(), LogError>>>,
        ),
        LogError,
    > {
        let mut log = self.log.lock();
        let info = log.append(batches, self.leader_epoch(), now_ms)?;
        let end = log.log_end_offset();
        self.log_end_offset.store(end, Ordering::Release);
        if self.durable.load(Ordering::Relaxed) {
            let req = log.sync_request(end);
            drop(log);
            Ok((info, Some(group_commit.submit(req))))
        } else {
            self.high_watermark.store(end, Ordering::Release);
            drop(log);
            self.data_arrived.notify_waiters();
            Ok((info, None))
        }
    }

    /// Called when a durable append's fsync completed: the high watermark moves to what is on
    /// disk and waiting fetches wake.
    pub fn synced(&self) {
        let flushed = self.log.lock().flushed_offset();
        self.high_watermark.fetch_max(flushed, Ordering::AcqRel);
        self.data_arrived.notify_waiters();
    }

    /// Reads whole batches from `offset`, bounded by the high watermark.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, LogError> {
        let mut log = self.log.lock();
        let hw = self.high_watermark();
        let slice = log.read(offset, max_bytes, hw, min_one_batch)?;
        Ok(ReadResult {
            slice,
            high_watermark: hw,
            log_start_offset: log.log_start_offset(),
        })
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
        self.refresh(&log);
        out
    }

    fn refresh(&self, log: &Log) {
        self.log_end_offset
            .store(log.log_end_offset(), Ordering::Release);
        self.log_start_offset
            .store(log.log_start_offset(), Ordering::Release);
        let hw = if self.durable.load(Ordering::Relaxed) {
            log.flushed_offset()
        } else {
            log.log_end_offset()
        };
        self.high_watermark
            .store(hw.max(log.log_start_offset()), Ordering::Release);
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
