//! Replays a partition of `__consumer_offsets` when this broker starts leading it: every
//! record from the log start to the log end, in order, so that the last write of each key wins
//! (as compaction would leave it). To the log end, not the high watermark, as Kafka's
//! coordinators load and as the transaction coordinator does (see [`Partition::replay`]): a new
//! leader learns its high watermark only from its followers' next fetches, so its own lags
//! what the former coordinator had replicated and acknowledged. Group metadata and committed
//! offsets come back at least as they were acknowledged; a record this broker cannot decode is
//! skipped with a warning rather than stopping the broker.
//!
//! Transactional offset commits (TxnOffsetCommit writes them as transactional batches) are
//! held per producer until that producer's COMMIT marker (then they apply, in log order) or
//! ABORT marker (then they are dropped); those still open at the end of the log come back as
//! the groups' pending transactional offsets.

use std::collections::HashMap;

use samsa_storage::LogError;

use super::offsets::GroupOffsets;
use super::records::{self, GroupMetadataValue, OffsetCommitValue, RecordKey, RecordValue};
use crate::partition::{Partition, Replayed};

/// The state of the groups of one partition, as its log describes it.
#[derive(Debug, Default)]
pub struct LoadedPartition {
    /// The last metadata record of each group (tombstoned groups are absent).
    pub groups: HashMap<String, GroupMetadataValue>,
    /// Committed offsets per group (including groups without metadata: simple consumers).
    pub offsets: HashMap<String, GroupOffsets>,
    /// Offset commits of transactions still open at the end of the log, by producer id:
    /// (group, topic, partition, value) in log order.
    pub pending: HashMap<i64, Vec<(String, String, i32, OffsetCommitValue)>>,
    /// Share groups (KIP-932) and their epochs, as last written.
    pub share_groups: HashMap<String, i32>,
    /// KIP-848 consumer groups, rebuilt from their records.
    pub consumer_groups: super::consumer::persist::Replay,
    /// KIP-1071 streams groups, rebuilt from their records.
    pub streams_groups: super::streams_persist::Replay,
    pub records: u64,
    pub skipped: u64,
}

impl LoadedPartition {
    /// A record of a transactional batch of `producer_id`: pending until its marker.
    fn apply_transactional(&mut self, producer_id: i64, record: records::CoordinatorRecord) {
        match (record.key, record.value) {
            (
                RecordKey::OffsetCommit {
                    group,
                    topic,
                    partition,
                },
                Some(RecordValue::OffsetCommit(v)),
            ) => self
                .pending
                .entry(producer_id)
                .or_default()
                .push((group, topic, partition, v)),
            _ => self.skipped += 1,
        }
    }

    /// A COMMIT or ABORT marker of `producer_id`.
    fn end_transaction(&mut self, producer_id: i64, commit: bool) {
        let Some(pending) = self.pending.remove(&producer_id) else {
            return;
        };
        if commit {
            for (group, topic, partition, v) in pending {
                self.offsets
                    .entry(group)
                    .or_default()
                    .commit(&topic, partition, v);
            }
        }
    }

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
            (
                RecordKey::ShareGroupMetadata { group },
                Some(RecordValue::ShareGroupMetadata { epoch }),
            ) => {
                self.share_groups.insert(group, epoch);
            }
            (RecordKey::ShareGroupMetadata { group }, None) => {
                self.share_groups.remove(&group);
            }
            (RecordKey::Consumer(key), value) => {
                let value = match value {
                    Some(RecordValue::Consumer(v)) => Some(v),
                    None => None,
                    Some(_) => {
                        self.skipped += 1;
                        return;
                    }
                };
                self.consumer_groups.apply(key, value);
            }
            (RecordKey::Streams(key), value) => {
                let value = match value {
                    Some(RecordValue::Streams(v)) => Some(v),
                    None => None,
                    Some(_) => {
                        self.skipped += 1;
                        return;
                    }
                };
                self.streams_groups.apply(key, value);
            }
            // decode_record pairs keys with their own value type.
            _ => self.skipped += 1,
        }
    }
}

/// Reads a partition of `__consumer_offsets` from its log start to its log end.
pub fn load_partition(partition: &Partition) -> Result<LoadedPartition, LogError> {
    let mut loaded = LoadedPartition::default();
    let unreadable = partition.replay(|r| match r {
        Replayed::Marker {
            producer_id,
            commit,
        } => loaded.end_transaction(producer_id, commit),
        Replayed::Record {
            offset,
            transactional,
            key,
            value,
        } => {
            let Some(key) = key else {
                loaded.skipped += 1;
                return;
            };
            match records::decode_record(key, value) {
                Ok(rec) => {
                    loaded.records += 1;
                    match transactional {
                        Some(pid) => loaded.apply_transactional(pid, rec),
                        None => loaded.apply(rec),
                    }
                }
                Err(e) => {
                    tracing::warn!(partition = %partition.tp, offset, "{e}; skipped");
                    loaded.skipped += 1;
                }
            }
        }
    })?;
    loaded.skipped += unreadable;
    Ok(loaded)
}
