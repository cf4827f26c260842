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
//! | `InvalidProducerEpoch` | INVALID_PRODUCER_EPOCH |
//! | `OutOfOrderSequence`   | OUT_OF_ORDER_SEQUENCE_NUMBER |
//! | `InvalidTxnState`      | INVALID_TXN_STATE     |
//! | `CoordinatorFenced`    | TRANSACTION_COORDINATOR_FENCED |

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
    /// record count inconsistent with the offset range). `record_errors` names the records at
    /// fault by their index in their batch, which ProduceResponse v8+ reports (KIP-467); it is
    /// empty when the batch as a whole is at fault.
    #[error("invalid record: {message}")]
    InvalidRecord {
        message: String,
        record_errors: Vec<RecordError>,
    },
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
    /// A producer batch (or marker) carries an epoch older than the producer's last one: a
    /// zombie (Kafka's `InvalidProducerEpochException`).
    #[error("invalid producer epoch: {0}")]
    InvalidProducerEpoch(String),
    /// A producer batch does not follow the producer's last sequence number.
    #[error("out of order sequence number: {0}")]
    OutOfOrderSequence(String),
    /// A producer with an open transaction wrote a non-transactional batch, or the reverse.
    #[error("invalid transaction state: {0}")]
    InvalidTxnState(String),
    /// A transaction marker from a coordinator epoch older than one already seen.
    #[error("transaction coordinator fenced: {0}")]
    CoordinatorFenced(String),
}

/// One record a batch was refused for (KIP-467): its index in its batch and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub message: String,
}

impl LogError {
    /// An `InvalidRecord` about a whole batch (no record-level errors).
    pub fn invalid_record(message: impl Into<String>) -> LogError {
        LogError::InvalidRecord {
            message: message.into(),
            record_errors: Vec::new(),
        }
    }

    /// Wraps an I/O error with the partition and the operation that failed, keeping its kind.
    pub(crate) fn io(tp: &TopicPartition, what: &str, e: io::Error) -> LogError {
        LogError::Storage(io::Error::new(e.kind(), format!("{what} for {tp}: {e}")))
    }
}
