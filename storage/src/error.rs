//! `LogError`: every way a storage call can fail, in terms the broker maps once to Kafka error
//! codes. Each message names the partition and, where there is one, the limit that was broken.
//!
//! | variant            | Kafka error code      |
//! | ------------------ | --------------------- |
//! | `OffsetOutOfRange` | OFFSET_OUT_OF_RANGE   |
//! | `CorruptBatch`     | CORRUPT_MESSAGE       |
//! | `InvalidRecord`    | INVALID_RECORD        |
//! | `MessageTooLarge`  | MESSAGE_TOO_LARGE     |
//! | `Storage`          | KAFKA_STORAGE_ERROR   |
//! | `InvalidRequest`   | INVALID_REQUEST       |

use std::io;

use crate::config::TopicPartition;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("offset {offset} is out of range for {partition} (log start offset {log_start_offset}, log end offset {log_end_offset})")]
    OffsetOutOfRange {
        partition: String,
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    /// A batch failed length, magic or CRC checks.
    #[error("corrupt record batch: {0}")]
    CorruptBatch(String),
    /// A well-formed batch that breaks a rule (keyless record on a compacted topic,
    /// record count inconsistent with the offset range).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error(
        "batch of {size_bytes} bytes exceeds max.message.bytes={max_message_bytes} for {partition}"
    )]
    MessageTooLarge {
        partition: String,
        size_bytes: usize,
        max_message_bytes: u32,
    },
    /// An I/O error (full disk included). The message names the partition and the operation.
    #[error("storage error: {0}")]
    Storage(#[from] io::Error),
    /// A call the log cannot honour with these arguments (e.g. a negative start offset).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl LogError {
    /// Wraps an I/O error with the partition and the operation that failed, keeping its kind.
    pub(crate) fn io(tp: &TopicPartition, what: &str, e: io::Error) -> LogError {
        LogError::Storage(io::Error::new(e.kind(), format!("{what} for {tp}: {e}")))
    }
}
