//! Per-partition configuration: Kafka's topic-level log settings, with Kafka's defaults.
//!
//! Names follow Kafka's property names (`segment.bytes` is `segment_bytes`), so a Kafka user's
//! knowledge carries over. `LogConfig::set` accepts the property names themselves; the broker
//! uses it for topic configs from CreateTopics / IncrementalAlterConfigs and `server.properties`.

use std::fmt;

/// One partition of one topic. Its directory in a log dir is `<topic>-<partition>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

/// Kafka's limit on topic name length (`Topic.MAX_NAME_LENGTH`).
pub const TOPIC_NAME_BYTES_MAX: usize = 249;

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// The partition's directory name inside a log dir: `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses a directory name written by `dir_name`. Topic names may contain `-`, so the
    /// partition is whatever follows the last one (as Kafka's `UnifiedLog.parseTopicPartitionName`).
    pub fn parse_dir_name(name: &str) -> Option<TopicPartition> {
        let (topic, partition) = name.rsplit_once('-')?;
        if !is_valid_topic_name(topic) {
            return None;
        }
        let number: i32 = partition.parse().ok()?;
        // Only the canonical spelling, so one partition has exactly one directory name.
        if number < 0 || number.to_string() != partition {
            return None;
        }
        Some(TopicPartition::new(topic, number))
    }
}

/// Kafka's legal topic names: 1..=249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn is_valid_topic_name(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= TOPIC_NAME_BYTES_MAX
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// `cleanup.policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CleanupPolicy {
    Delete,
    Compact,
    CompactDelete,
}

impl CleanupPolicy {
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }
}

/// `message.timestamp.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// Topic-level log settings. `Default` is Kafka's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// `segment.bytes`: roll the active segment before it would grow past this.
    pub segment_bytes: u64,
    /// `segment.ms`: roll the active segment once its first append is this old.
    pub segment_ms: i64,
    /// `segment.index.bytes`: size limit of each index file; a full index rolls the segment.
    pub segment_index_bytes: u64,
    /// `index.interval.bytes`: bytes of log between two offset-index entries.
    pub index_interval_bytes: u64,
    /// `max.message.bytes`: largest record batch accepted (header included).
    pub max_message_bytes: u32,
    /// `retention.ms`: delete segments whose newest record is older; -1 keeps forever.
    pub retention_ms: i64,
    /// `retention.bytes`: delete oldest segments while the log is larger; -1 keeps everything.
    pub retention_bytes: i64,
    /// `cleanup.policy`.
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms`: how long compaction keeps tombstones.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: records younger than this are never compacted away.
    pub min_compaction_lag_ms: i64,
    /// `message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `flush.messages`: fdatasync after this many unflushed records (u64::MAX = never).
    pub flush_messages: u64,
    /// `flush.ms`: fdatasync when the oldest unflushed append is this old (i64::MAX = never).
    pub flush_ms: i64,
    /// `file.delete.delay.ms`: kept for Kafka compatibility. Deleted segments stay readable
    /// through open handles (`Arc<File>`), so files are unlinked at once.
    pub file_delete_delay_ms: i64,
    /// Samsa's durable mode: the broker acknowledges a produce only after group commit has
    /// fdatasync'd it (`Log::sync_request` + `GroupCommit::submit`).
    pub durable: bool,
    /// Samsa: bytes of recently appended batches kept in memory so tail reads cost no syscall.
    pub tail_cache_bytes: u64,
    /// The broker's `producer.id.expiration.ms`: a producer with no open transaction and no
    /// write for this long is forgotten (its next batch is judged as an unknown producer's).
    pub producer_id_expiration_ms: i64,
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            segment_bytes: 1_073_741_824,
            segment_ms: 604_800_000,
            segment_index_bytes: 10_485_760,
            index_interval_bytes: 4096,
            max_message_bytes: 1_048_588,
            retention_ms: 604_800_000,
            retention_bytes: -1,
            cleanup_policy: CleanupPolicy::Delete,
            delete_retention_ms: 86_400_000,
            min_compaction_lag_ms: 0,
            message_timestamp_type: TimestampType::CreateTime,
            flush_messages: i64::MAX as u64,
            flush_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            durable: false,
            tail_cache_bytes: 4 * 1024 * 1024,
            producer_id_expiration_ms: 86_400_000,
        }
    }
}

/// Smallest `segment.bytes` Kafka accepts (`LegacyRecord.RECORD_OVERHEAD_V0` + 1 is 14 bytes).
pub const SEGMENT_BYTES_MIN: u64 = 14;
/// Smallest `segment.index.bytes` Kafka accepts: room for at least one 12-byte time-index entry.
pub const SEGMENT_INDEX_BYTES_MIN: u64 = 12;
/// The tail cache is bounded regardless of configuration.
pub const TAIL_CACHE_BYTES_MAX: u64 = 256 * 1024 * 1024;

impl LogConfig {
    /// Sets one property by its Kafka name. Unknown names and unparsable values are errors
    /// naming the property, as Kafka's `InvalidConfigurationException` does.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
            value
                .trim()
                .parse::<T>()
                .map_err(|_| format!("invalid value {value:?} for {key}"))
        }
        fn at_least<T: PartialOrd + fmt::Display + Copy>(
            key: &str,
            v: T,
            min: T,
        ) -> Result<T, String> {
            if v < min {
                return Err(format!("{key}={v} is below the minimum {min}"));
            }
            Ok(v)
        }
        let v = value.trim();
        match key {
            "segment.bytes" => self.segment_bytes = at_least(key, num(key, v)?, SEGMENT_BYTES_MIN)?,
            "segment.ms" => self.segment_ms = at_least(key, num(key, v)?, 1)?,
            "segment.index.bytes" => {
                self.segment_index_bytes = at_least(key, num(key, v)?, SEGMENT_INDEX_BYTES_MIN)?
            }
            "index.interval.bytes" => self.index_interval_bytes = num(key, v)?,
            "max.message.bytes" => self.max_message_bytes = num(key, v)?,
            "retention.ms" => self.retention_ms = at_least(key, num(key, v)?, -1)?,
            "retention.bytes" => self.retention_bytes = at_least(key, num(key, v)?, -1)?,
            "cleanup.policy" => {
                let mut delete = false;
                let mut compact = false;
                for part in v.split(',').map(str::trim) {
                    match part {
                        "delete" => delete = true,
                        "compact" => compact = true,
                        _ => return Err(format!("invalid value {value:?} for {key}")),
                    }
                }
                self.cleanup_policy = match (compact, delete) {
                    (true, true) => CleanupPolicy::CompactDelete,
                    (true, false) => CleanupPolicy::Compact,
                    _ => CleanupPolicy::Delete,
                };
            }
            "delete.retention.ms" => self.delete_retention_ms = at_least(key, num(key, v)?, 0)?,
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = at_least(key, num(key, v)?, 0)?,
            "message.timestamp.type" => {
                self.message_timestamp_type = match v {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err(format!("invalid value {value:?} for {key}")),
                }
            }
            "flush.messages" => self.flush_messages = at_least(key, num(key, v)?, 1)?,
            "flush.ms" => self.flush_ms = at_least(key, num(key, v)?, 0)?,
            "file.delete.delay.ms" => self.file_delete_delay_ms = at_least(key, num(key, v)?, 0)?,
            "samsa.durable" => {
                self.durable = match v {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("invalid value {value:?} for {key}")),
                }
            }
            "producer.id.expiration.ms" => {
                self.producer_id_expiration_ms = at_least(key, num(key, v)?, 1)?
            }
            "samsa.tail.cache.bytes" => {
                self.tail_cache_bytes = num::<u64>(key, v)?.min(TAIL_CACHE_BYTES_MAX)
            }
            _ => return Err(format!("unknown log config {key}")),
        }
        Ok(())
    }

    /// Offset-index entries that fit in `segment.index.bytes` (8 bytes each).
    pub fn offset_index_entries_max(&self) -> usize {
        ((self.segment_index_bytes / 8).max(1)).min(u32::MAX as u64) as usize
    }

    /// Time-index entries that fit in `segment.index.bytes` (12 bytes each).
    pub fn time_index_entries_max(&self) -> usize {
        ((self.segment_index_bytes / 12).max(1)).min(u32::MAX as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let c = LogConfig::default();
        assert_eq!(c.segment_bytes, 1_073_741_824);
        assert_eq!(c.segment_ms, 604_800_000);
        assert_eq!(c.segment_index_bytes, 10_485_760);
        assert_eq!(c.index_interval_bytes, 4096);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert_eq!(c.retention_ms, 604_800_000);
        assert_eq!(c.retention_bytes, -1);
        assert_eq!(c.cleanup_policy, CleanupPolicy::Delete);
        assert_eq!(c.delete_retention_ms, 86_400_000);
        assert_eq!(c.min_compaction_lag_ms, 0);
        assert_eq!(c.message_timestamp_type, TimestampType::CreateTime);
        assert_eq!(c.flush_messages, i64::MAX as u64);
        assert_eq!(c.flush_ms, i64::MAX);
        assert_eq!(c.file_delete_delay_ms, 60_000);
        assert!(!c.durable);
    }

    #[test]
    fn properties_are_set_by_kafka_name() {
        let mut c = LogConfig::default();
        c.set("cleanup.policy", "compact,delete").unwrap();
        assert_eq!(c.cleanup_policy, CleanupPolicy::CompactDelete);
        c.set("segment.bytes", "1024").unwrap();
        assert_eq!(c.segment_bytes, 1024);
        c.set("message.timestamp.type", "LogAppendTime").unwrap();
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert!(c.set("retention.ms", "-2").is_err());
        assert!(c.set("no.such.thing", "1").is_err());
        assert!(c
            .set("segment.bytes", "lots")
            .unwrap_err()
            .contains("segment.bytes"));
    }

    #[test]
    fn dir_names_round_trip_with_dashes_in_topics() {
        let tp = TopicPartition::new("my-topic.v2", 12);
        assert_eq!(tp.dir_name(), "my-topic.v2-12");
        assert_eq!(TopicPartition::parse_dir_name("my-topic.v2-12"), Some(tp));
        assert_eq!(TopicPartition::parse_dir_name("nodash"), None);
        assert_eq!(TopicPartition::parse_dir_name("t-01"), None);
        assert_eq!(
            TopicPartition::parse_dir_name("t--1"),
            Some(TopicPartition::new("t-", 1))
        );
        assert_eq!(TopicPartition::parse_dir_name("t-1.abc-delete"), None);
    }
}
