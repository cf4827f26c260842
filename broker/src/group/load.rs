//! Replays a partition of `__consumer_offsets` on start: every record from the log start to
//! the high watermark, in order, so that the last write of each key wins (as compaction
//! would leave it). Group metadata and committed offsets come back exactly as they were
//! acknowledged; a record this broker cannot decode is skipped with a warning rather than
//! stopping the broker.

use std::collections::HashMap;

use samsa_storage::batch::{self, Compression};
use samsa_storage::{compression, records as log_records, LogError};

use super::offsets::GroupOffsets;
use super::records::{self, GroupMetadataValue, RecordKey, RecordValue};
use crate::partition::Partition;

/// Bytes read from the log per step (a larger batch is still read whole).
const READ_BYTES: usize = 1 << 20;
/// The largest decompressed batch accepted (Samsa writes these batches uncompressed).
const DECOMPRESSED_BATCH_BYTES_MAX: usize = 64 << 20;

/// The state of the groups of one partition, as its log describes it.
#[derive(Debug, Default)]
pub struct LoadedPartition {
    /// The last metadata record of each group (tombstoned groups are absent).
    pub groups: HashMap<String, GroupMetadataValue>,
    /// Committed offsets per group (including groups without metadata: simple consumers).
    pub offsets: HashMap<String, GroupOffsets>,
    pub records: u64,
    pub skipped: u64,
}

impl LoadedPartition {
    fn apply(&mut self, record: records::CoordinatorRecord) {
        match (record.key, record.value) {
            (
                RecordKey::OffsetCommit {
                    group,
                    topic,
                    partition,
                },
                Some(RecordValue::OffsetCommit(v)),
            ) => {
                self.offsets
                    .entry(group)
                    .or_default()
                    .commit(&topic, partition, v);
            }
            (
                RecordKey::OffsetCommit {
                    group,
                    topic,
                    partition,
                },
                None,
            ) => {
                if let Some(o) = self.offsets.get_mut(&group) {
                    o.remove(&topic, partition);
                    if o.is_empty() {
                        self.offsets.remove(&group);
                    }
                }
            }
            (RecordKey::GroupMetadata { group }, Some(RecordValue::GroupMetadata(v))) => {
                self.groups.insert(group, v);
            }
            (RecordKey::GroupMetadata { group }, None) => {
                self.groups.remove(&group);
            }
            // decode_record pairs keys with their own value type.
            _ => self.skipped += 1,
        }
    }
}

/// Reads a partition of `__consumer_offsets` from its log start to its high watermark.
pub fn load_partition(partition: &Partition) -> Result<LoadedPartition, LogError> {
    let mut loaded = LoadedPartition::default();
    let mut offset = partition.log_start_offset();
    let end = partition.high_watermark();
    while offset < end {
        let read = match partition.read(offset, READ_BYTES, true) {
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
                    tracing::warn!(partition = %partition.tp, offset = next, "unreadable batch while loading groups: {e}");
                    break;
                }
            };
            let h = *b.header();
            next = h.next_offset();
            if h.is_control() || h.last_offset() < offset {
                continue;
            }
            let codec = h.compression().unwrap_or(Compression::None);
            let decompressed;
            let payload = if codec == Compression::None {
                b.records_bytes()
            } else {
                match compression::decompress(
                    codec,
                    b.records_bytes(),
                    DECOMPRESSED_BATCH_BYTES_MAX,
                ) {
                    Ok(v) => {
                        decompressed = v;
                        &decompressed[..]
                    }
                    Err(e) => {
                        tracing::warn!(partition = %partition.tp, offset = h.base_offset, "cannot decompress a batch while loading groups: {e}");
                        loaded.skipped += h.record_count.max(0) as u64;
                        continue;
                    }
                }
            };
            for r in log_records::records(payload, h.record_count) {
                let r = match r {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(partition = %partition.tp, offset = h.base_offset, "malformed record while loading groups: {e}");
                        loaded.skipped += 1;
                        break;
                    }
                };
                if h.base_offset + (r.offset_delta as i64) < offset {
                    continue;
                }
                let Some(key) = r.key else {
                    loaded.skipped += 1;
                    continue;
                };
                match records::decode_record(key, r.value) {
                    Ok(rec) => {
                        loaded.records += 1;
                        loaded.apply(rec);
                    }
                    Err(e) => {
                        tracing::warn!(partition = %partition.tp, offset = h.base_offset + r.offset_delta as i64, "{e}; skipped");
                        loaded.skipped += 1;
                    }
                }
            }
        }
        if next <= offset {
            break;
        }
        offset = next;
    }
    Ok(loaded)
}
