//! Samsa's storage engine: one append-only log per partition, in Kafka's on-disk format.
//!
//! API CONTRACT (the broker is written against it; implement it, extend it, keep these names
//! and meanings). No network code and no async runtime in here: every call is a plain
//! blocking call that touches the page cache only; fsync happens on the group-commit thread.
//! The broker keeps each `Log` behind its own mutex and holds it only for the call.
//!
//! ```ignore
//! pub struct TopicPartition { pub topic: String, pub partition: i32 }   // dir "<topic>-<partition>"
//! pub struct LogConfig { segment_bytes: u64, segment_ms: i64, segment_index_bytes: u64,
//!     index_interval_bytes: u64, max_message_bytes: u32, retention_ms: i64, retention_bytes: i64,
//!     cleanup_policy: CleanupPolicy, delete_retention_ms: i64, min_compaction_lag_ms: i64,
//!     message_timestamp_type: TimestampType, flush_messages: u64, flush_ms: i64,
//!     durable: bool, file_delete_delay_ms: i64, .. }                  // Default = Kafka's defaults
//! pub enum CleanupPolicy { Delete, Compact, CompactDelete }
//! pub enum TimestampType { CreateTime, LogAppendTime }
//!
//! pub struct LogDir;   // one log directory (log.dirs entry)
//! impl LogDir {
//!     pub fn open(path: &Path, configs: impl Fn(&TopicPartition) -> LogConfig)
//!         -> Result<(LogDir, Vec<(TopicPartition, Log)>), LogError>;   // recovers every partition
//!     pub fn create_log(&self, tp: &TopicPartition, config: LogConfig) -> Result<Log, LogError>;
//!     pub fn delete_log(&self, tp: &TopicPartition, log: Log) -> Result<(), LogError>;
//!     pub fn write_checkpoints(&self, parts: &[(TopicPartition, PartitionCheckpoint)]) -> Result<(), LogError>;
//!     pub fn mark_clean_shutdown(&self) -> Result<(), LogError>;
//! }
//! pub struct PartitionCheckpoint { pub recovery_point: i64, pub high_watermark: i64, pub log_start_offset: i64 }
//!
//! pub struct Log;
//! impl Log {
//!     /// Validates every v2 batch in `batches` (one or more, back to back) and appends them.
//!     pub fn append(&mut self, batches: Bytes, leader_epoch: i32, now_ms: i64) -> Result<AppendInfo, LogError>;
//!     /// Whole batches starting with the one containing `from_offset`, none at or past `max_offset`.
//!     pub fn read(&mut self, from_offset: i64, max_bytes: usize, max_offset: i64, min_one_batch: bool)
//!         -> Result<LogSlice, LogError>;   // OffsetOutOfRange { log_start_offset, log_end_offset }
//!     pub fn log_start_offset(&self) -> i64;  pub fn log_end_offset(&self) -> i64;
//!     pub fn flushed_offset(&self) -> i64;    // everything below is on disk (fdatasync'd)
//!     pub fn offset_for_timestamp(&mut self, ts_ms: i64) -> Result<Option<(i64 /*offset*/, i64 /*ts*/)>, LogError>;
//!     pub fn max_timestamp(&self) -> Option<(i64 /*offset*/, i64 /*ts*/)>;
//!     pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)>;
//!     pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError>;
//!     pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<(), LogError>;
//!     pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, LogError>;  // new log start
//!     pub fn set_config(&mut self, config: LogConfig);
//!     pub fn config(&self) -> &LogConfig;
//!     pub fn size_bytes(&self) -> u64;
//!     /// What the group-commit thread must fdatasync so that every offset below `up_to` is durable.
//!     pub fn sync_request(&self, up_to: i64) -> SyncRequest;
//!     pub fn maintenance(&mut self, now_ms: i64) -> Result<MaintenanceReport, LogError>; // retention, segment.ms roll, flush.ms/flush.messages
//!     pub fn compact(&mut self, now_ms: i64) -> Result<(), LogError>;  // cleanup.policy=compact
//!     pub fn close(self) -> Result<PartitionCheckpoint, LogError>;       // flushes
//! }
//! pub struct AppendInfo { pub base_offset: i64, pub last_offset: i64, pub log_append_time_ms: i64 /* -1 for CreateTime */,
//!                         pub max_timestamp_ms: i64, pub record_count: u32 }
//! /// Bytes of whole batches; `load()` reads them (pread) without holding the log's mutex.
//! pub struct LogSlice { .. }  impl LogSlice { pub fn load(&self) -> io::Result<Bytes>; pub fn len(&self) -> usize; pub fn is_empty(&self) -> bool }
//! pub struct GroupCommit;  // one background thread shared by every log
//! impl GroupCommit { pub fn new() -> Arc<GroupCommit>;
//!     pub fn submit(&self, req: SyncRequest) -> tokio::sync::oneshot::Receiver<Result<(), LogError>>; }
//! pub mod batch { /* zero-copy RecordBatch v2 header view + validation (crc32c), used by the broker too */ }
//! pub enum LogError { OffsetOutOfRange{..}, CorruptBatch(String), InvalidRecord(String),
//!     MessageTooLarge{..}, Storage(io::Error), .. }   // thiserror; messages name the partition and the limit
//! ```
//!
//! ## As built (additions to the contract above; nothing in it was renamed or re-typed)
//!
//! - `LogConfig` has public fields, `LogConfig::set(kafka_name, value)` and a
//!   `tail_cache_bytes` field (bytes of recent appends served from memory, default 4 MiB).
//! - `LogError` also has `InvalidRequest(String)` (negative offsets and the like).
//!   `OffsetOutOfRange` and `MessageTooLarge` carry `partition` plus the numbers.
//! - `Log` adds: `append_as_follower` (replication: offsets and epochs kept), `high_watermark`
//!   / `set_high_watermark` (restored from `replication-offset-checkpoint`), `checkpoint()`
//!   (what to pass to `LogDir::write_checkpoints`), `flush_now` (`sync_now`: without the
//!   producer snapshot), `begin_flush` / `DetachedFlush::sync` / `finish_flush` (the same
//!   flush with the fdatasyncs outside the log's lock: the periodic checkpoint), `set_group_commit`,
//!   `compact_with_report`, `leader_epochs`, `latest_epoch`, `segment_count`,
//!   `segment_base_offsets`. `offset_for_timestamp` also answers ListOffsets' special
//!   timestamps -2 (earliest), -1 (latest) and -3 (max timestamp).
//! - `LogSlice::len` is exact: a read finds the last whole batch under `max_bytes` in the
//!   headers (from the offset index entry at or below the limit). `LogSlice::file_range` gives
//!   a segment slice as (file, position, length) for sending unread (sendfile), and
//!   `LogSlice::offsets` its first base offset and the offset after it.
//! - `GroupCommit::shared()` is the process-wide instance used for flush.messages / flush.ms /
//!   roll flushes of logs that were not given one; `syncs()` and `rounds()` count its work.
//! - `LogDir::read_checkpoints`; the directory is `flock`ed against a second owner.
//!   `LogDir::open` skips KRaft's `__cluster_metadata-0`, which the controller opens itself
//!   with `Log::open_standalone`; `batch::encode_batch` / `BatchFields` encode a v2 batch.
//! - Idempotence and transactions (`producer_state`, `producers`, `txn_index`): `append`
//!   judges producer batches (duplicates come back with the original offsets and
//!   `AppendInfo::duplicate`; gaps, zombie epochs and transaction misuse are
//!   `LogError::OutOfOrderSequence` / `InvalidProducerEpoch` / `InvalidTxnState`);
//!   `append_with_origin` (coordinator writes), `append_control` (COMMIT/ABORT markers,
//!   `LogError::CoordinatorFenced`), `last_stable_offset(high_watermark)`,
//!   `aborted_transactions(from, upper)` (per-segment `.txnindex`), `has_ongoing_transaction`,
//!   `first_open_transaction_offset`, `active_producers`, `write_producer_snapshot`
//!   (`<offset>.snapshot`, also written at every roll, `flush_now` and a detached flush). `LogConfig` gains
//!   `producer_id_expiration_ms`; `maintenance` expires idle producers.
//! - `LogError::InvalidRecord` is `{ message, record_errors }`: KIP-467's per-record errors
//!   (keyless records on a compacted topic).
//!
//! ## Files
//!
//! `batch` (v2 header views, validation, in-place rewrites), `records` (record varints),
//! `compression` (codecs), `index` (offset and time index files), `segment` (one segment),
//! `recovery` (the validating scan and what `open` scans), `log` (the partition log: open,
//! append, roll, flush, truncate, close), `read` (Fetch, ListOffsets, OffsetForLeaderEpoch),
//! `slice` (`LogSlice`), `retention` (maintenance, DeleteRecords), `compaction`, `tail_cache`,
//! `leader_epoch`, `checkpoint` (Kafka's checkpoint text files), `log_dir`, `group_commit`,
//! `config`, `error`, `producer_state` (Kafka's ProducerStateManager: sequence and epoch checks,
//! transactions, snapshots), `producers` (the log's side of it: markers, LSO, rebuild),
//! `txn_index` (`.txnindex`); `test_support` and `fuzzing` (hidden) serve tests, benches and
//! fuzzing.

pub mod batch;
mod checkpoint;
pub mod compaction;
pub mod compression;
mod config;
mod crc32c;
mod detached_flush;
mod error;
pub mod file_cache;
#[doc(hidden)]
pub mod fuzzing;
mod group_commit;
mod index;
mod leader_epoch;
mod log;
mod log_dir;
pub mod producer_state;
mod producers;
mod read;
pub mod records;
pub mod recovery;
mod retention;
mod segment;
mod slice;
mod tail_cache;
pub use tail_cache::{process_cached_bytes, set_process_budget as set_tail_cache_budget};
#[doc(hidden)]
pub mod test_support;
pub mod txn_index;

pub use checkpoint::{
    LEADER_EPOCH_CHECKPOINT, LOG_START_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
};
pub use config::{is_valid_topic_name, CleanupPolicy, LogConfig, TimestampType, TopicPartition};
pub use detached_flush::DetachedFlush;
pub use error::{LogError, RecordError};
pub use group_commit::{GroupCommit, SyncRequest};
pub use log::OPEN_CLOSED_SEGMENTS_MAX;
pub use log::{
    AppendInfo, Log, PartitionCheckpoint, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
};
pub use log_dir::{
    kafka_uuid_string, parse_kafka_uuid, LogDir, UnopenedLog, CLEAN_SHUTDOWN_FILE, METADATA_TOPIC,
    PARTITION_METADATA_FILE,
};
pub use producer_state::{AppendOrigin, EndTxnMarker, ProducerStateEntry};
pub use producers::marker_batch;
pub use retention::MaintenanceReport;
pub use slice::LogSlice;
pub use txn_index::AbortedTxn;
