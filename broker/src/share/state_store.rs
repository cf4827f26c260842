//! Durable share-partition state in `__share_group_state` (KIP-932's share coordinator topic):
//! one compacted record per share-partition, keyed by group, topic id and partition, whose
//! value is the whole state (start offset and runs of available, acknowledged and archived
//! offsets with their delivery counts), as Kafka's `ShareSnapshot` record holds it. The key
//! `group:topicId:partition` hashes (Java `String.hashCode`) to the partition that holds it.
//!
//! The leader of a share-partition writes its state after every change that must survive it
//! (acknowledgements, releases, archiving, the first use that pins the start offset) and
//! answers the client only once the write is replicated. Acquisitions are not written: after
//! a crash, records acquired and not yet acknowledged are available again, with the delivery
//! count of their last written state (Kafka's persister behaves the same).
//!
//! Reading: the first read of a state partition replays its log (log start to log end, as the
//! group coordinator loads `__consumer_offsets`) into a cache of the last state per key, which
//! this broker's own writes keep current. The cache is tied to the leader epoch it was read at:
//! after a leadership change it is read again.
//!
//! This store serves the state partitions this broker leads (NOT_COORDINATOR for the others);
//! [`super::persister`] sends the rest to their leaders.

use std::collections::HashMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use parking_lot::Mutex;
use uuid::Uuid;

use super::partition::{PersistedState, StateBatch};
use super::ShareKey;
use crate::config::topic::TopicOverrides;
use crate::coordinator_write::CoordinatorWrite;
use crate::internal_topics::InternalTopicSpec;
use crate::node::Node;
use crate::partition::{Partition, Replayed};

pub use crate::topics::SHARE_STATE_TOPIC;

/// A share-partition's persisted state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Rises with every write of the key.
    pub snapshot_epoch: i32,
    /// The group epoch the state was initialized at; rises when the state is reset
    /// (AlterShareGroupOffsets). A write with a lower one is FENCED_STATE_EPOCH.
    pub state_epoch: i32,
    pub leader_epoch: i32,
    /// -1: initialized, and not used yet (no start offset chosen).
    pub start_offset: i64,
    pub create_timestamp: i64,
    pub write_timestamp: i64,
    pub batches: Vec<StateBatch>,
    /// Where a scan of the dead-letter topic starts (its partition and an offset at or before
    /// every dead letter of this share-partition still archiving), so that after a crash a
    /// record already written there is not written again (Samsa's tagged field 0).
    pub dlq_scan_from: Option<(i32, i64)>,
}

/// The cached state of one partition of `__share_group_state`.
struct Loaded {
    leader_epoch: i32,
    snapshots: HashMap<ShareKey, Snapshot>,
}

#[derive(Default)]
pub struct StateStore {
    loaded: Mutex<HashMap<i32, Loaded>>,
}

/// The partition of `__share_group_state` holding `key` among `partitions`.
pub fn state_partition(key: &ShareKey, partitions: i32) -> i32 {
    let coordinator_key = format!("{}:{}:{}", key.group, key.topic_id, key.partition);
    crate::group::records::partition_for(&coordinator_key, partitions)
}

/// How `__share_group_state` is created.
pub fn topic_spec(node: &Node) -> InternalTopicSpec {
    let cfg = node.dynamic_configs.effective();
    let mut configs = TopicOverrides::new();
    configs.insert("cleanup.policy".into(), "compact".into());
    configs.insert(
        "segment.bytes".into(),
        cfg.long("share.coordinator.state.topic.segment.bytes")
            .to_string(),
    );
    configs.insert("compression.type".into(), "producer".into());
    InternalTopicSpec {
        name: SHARE_STATE_TOPIC.to_string(),
        partitions: cfg
            .int("share.coordinator.state.topic.num.partitions")
            .max(1),
        replication_factor: cfg.int("share.coordinator.state.topic.replication.factor") as i16,
        configs,
    }
}

impl StateStore {
    /// The state partition of `key` if this broker leads it, creating the topic on first use.
    pub async fn led_partition(
        &self,
        node: &Node,
        key: &ShareKey,
    ) -> Result<std::sync::Arc<Partition>, ResponseError> {
        crate::internal_topics::ensure(node, &topic_spec(node)).await?;
        let topic = node
            .topics
            .get(SHARE_STATE_TOPIC)
            .ok_or(ResponseError::CoordinatorNotAvailable)?;
        let index = state_partition(key, topic.partition_count);
        topic.led_partition(index).cloned().map_err(|e| match e {
            ResponseError::NotLeaderOrFollower => ResponseError::NotCoordinator,
            other => other,
        })
    }

    /// The persisted state of `key`, if any. Errors: NOT_COORDINATOR when another broker leads
    /// its state partition, COORDINATOR_NOT_AVAILABLE when the topic cannot be made.
    pub async fn read(
        &self,
        node: &Node,
        key: &ShareKey,
    ) -> Result<Option<Snapshot>, ResponseError> {
        let p = self.led_partition(node, key).await?;
        self.load(&p).await?;
        Ok(self
            .loaded
            .lock()
            .get(&p.tp.partition)
            .and_then(|l| l.snapshots.get(key).cloned()))
    }

    /// Every persisted state of `group` in the state partitions this broker leads.
    pub async fn group_states(
        &self,
        node: &Node,
        group: &str,
    ) -> Result<Vec<(ShareKey, Snapshot)>, ResponseError> {
        crate::internal_topics::ensure(node, &topic_spec(node)).await?;
        let Some(topic) = node.topics.get(SHARE_STATE_TOPIC) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for p in topic.partitions.iter().filter(|p| p.is_leader()) {
            self.load(p).await?;
            if let Some(l) = self.loaded.lock().get(&p.tp.partition) {
                out.extend(
                    l.snapshots
                        .iter()
                        .filter(|(k, _)| &*k.group == group)
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Makes sure the cache holds state partition `p` as of its current leader epoch.
    async fn load(&self, p: &std::sync::Arc<Partition>) -> Result<(), ResponseError> {
        let index = p.tp.partition;
        let epoch = p.leader_epoch();
        if self
            .loaded
            .lock()
            .get(&index)
            .is_some_and(|l| l.leader_epoch == epoch)
        {
            return Ok(());
        }
        let replayed = {
            let p = p.clone();
            tokio::task::spawn_blocking(move || load(&p))
                .await
                .map_err(|_| ResponseError::UnknownServerError)?
        };
        let snapshots = replayed.map_err(|e| {
            tracing::warn!(partition = %p.tp, "cannot read share group state: {e}");
            ResponseError::CoordinatorNotAvailable
        })?;
        let mut loaded = self.loaded.lock();
        // Writes made while the replay ran are in both; the cache keeps its own.
        let l = loaded.entry(index).or_insert_with(|| Loaded {
            leader_epoch: epoch,
            snapshots: HashMap::new(),
        });
        if l.leader_epoch != epoch {
            l.leader_epoch = epoch;
            l.snapshots.clear();
        }
        for (k, v) in snapshots {
            l.snapshots.entry(k).or_insert(v);
        }
        Ok(())
    }

    /// Initializes `key`'s state unless it has one (Kafka's InitializeShareGroupState, as the
    /// group coordinator asks before it assigns a share-partition): at `state_epoch`, without a
    /// start offset (-1: its leader resolves `share.auto.offset.reset` on first use).
    pub async fn initialize(
        &self,
        node: &Node,
        key: &ShareKey,
        state_epoch: i32,
    ) -> Result<(), ResponseError> {
        if self.read(node, key).await?.is_some() {
            return Ok(());
        }
        let now = crate::util::now_ms();
        let snapshot = Snapshot {
            snapshot_epoch: 0,
            state_epoch,
            leader_epoch: 0,
            start_offset: -1,
            create_timestamp: now,
            write_timestamp: now,
            batches: Vec::new(),
            dlq_scan_from: None,
        };
        self.write(node, key, snapshot).await
    }

    /// Removes `key`'s state (a tombstone): its next use starts from `share.auto.offset.reset`.
    pub async fn delete(&self, node: &Node, key: &ShareKey) -> Result<(), ResponseError> {
        let p = self.led_partition(node, key).await?;
        let now = crate::util::now_ms();
        let batch = encode_batch(key, None, now);
        let write =
            CoordinatorWrite::append(p.clone(), |p| p.append(batch, now, &node.group_commit))
                .map_err(|e| {
                    tracing::warn!(partition = %p.tp, "cannot write share group state: {e}");
                    ResponseError::CoordinatorNotAvailable
                })?;
        if let Some(l) = self.loaded.lock().get_mut(&p.tp.partition) {
            l.snapshots.remove(key);
        }
        write.replicated().await.map_err(|e| e.coordinator_error())
    }

    /// Writes `key`'s state `snapshot` to its state partition, which this broker leads, and
    /// waits until it is replicated. A snapshot of a lower state epoch than the one stored (a
    /// share-partition leader that has not seen the state reset by AlterShareGroupOffsets) is
    /// FENCED_STATE_EPOCH; one of the same state epoch and not newer (a lower or equal snapshot
    /// epoch: writes that crossed on the way) is dropped as done; one of a higher state epoch
    /// (the reset itself) is written whatever its snapshot epoch.
    pub async fn write(
        &self,
        node: &Node,
        key: &ShareKey,
        snapshot: Snapshot,
    ) -> Result<(), ResponseError> {
        let p = self.led_partition(node, key).await?;
        self.load(&p).await?;
        let write = {
            let mut loaded = self.loaded.lock();
            let l = loaded
                .get_mut(&p.tp.partition)
                .ok_or(ResponseError::CoordinatorLoadInProgress)?;
            match admit(l.snapshots.get(key), &snapshot) {
                Admit::Write => {}
                Admit::Done => return Ok(()),
                Admit::Fenced => return Err(ResponseError::FencedStateEpoch),
            }
            let now = crate::util::now_ms();
            let batch = encode_batch(key, Some(&snapshot), now);
            let write =
                CoordinatorWrite::append(p.clone(), |p| p.append(batch, now, &node.group_commit))
                    .map_err(|e| {
                    tracing::warn!(partition = %p.tp, "cannot write share group state: {e}");
                    ResponseError::CoordinatorNotAvailable
                })?;
            if l.leader_epoch == write.leader_epoch {
                l.snapshots.insert(key.clone(), snapshot);
            }
            write
        };
        write.replicated().await.map_err(|e| e.coordinator_error())
    }
}

/// What [`StateStore::write`] does with a snapshot, given the one stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admit {
    Write,
    /// Not newer than the stored one: nothing to write.
    Done,
    /// Of an older state epoch: FENCED_STATE_EPOCH.
    Fenced,
}

fn admit(stored: Option<&Snapshot>, new: &Snapshot) -> Admit {
    match stored {
        None => Admit::Write,
        Some(old) if old.state_epoch > new.state_epoch => Admit::Fenced,
        Some(old)
            if old.state_epoch == new.state_epoch && old.snapshot_epoch >= new.snapshot_epoch =>
        {
            Admit::Done
        }
        Some(_) => Admit::Write,
    }
}

/// Replays a state partition: the last state of each key (tombstones remove it).
fn load(p: &Partition) -> Result<HashMap<ShareKey, Snapshot>, samsa_storage::LogError> {
    let mut out = HashMap::new();
    let mut skipped = 0u64;
    p.replay(|r| {
        let Replayed::Record { key, value, .. } = r else {
            return;
        };
        let Some(k) = key.and_then(|k| decode_key(k).ok()) else {
            skipped += 1;
            return;
        };
        match value {
            None => {
                out.remove(&k);
            }
            Some(v) => match decode_value(v) {
                Ok(s) => {
                    out.insert(k, s);
                }
                Err(_) => skipped += 1,
            },
        }
    })?;
    if skipped > 0 {
        tracing::warn!(partition = %p.tp, skipped, "records of __share_group_state this broker cannot read were skipped");
    }
    Ok(out)
}

// ---- record format ----
//
// Key: record type (i16, 0 = ShareSnapshot), group id (i16 length + UTF-8), topic id (16
// bytes), partition (i32). Value: version (i16, 0), snapshot epoch (i32), state epoch (i32),
// leader epoch (i32), start offset (i64), create and write timestamps (i64 each), then the
// state batches as a compact array (unsigned varint count + 1) of first offset (i64), last
// offset (i64), delivery state (i8: 0 available, 2 acknowledged, 4 archived) and delivery count
// (i16), each followed by an empty tagged-field section, and one closing the value: Kafka's
// `ShareSnapshotValue` field order, flexible-version framing.

const SNAPSHOT_KEY: i16 = 0;
const DLQ_SCAN_FROM_TAG: u8 = 0;

pub fn encode_key(key: &ShareKey) -> Bytes {
    let mut b = BytesMut::with_capacity(2 + 2 + key.group.len() + 16 + 4);
    b.put_i16(SNAPSHOT_KEY);
    b.put_i16(key.group.len() as i16);
    b.put_slice(key.group.as_bytes());
    b.put_slice(key.topic_id.as_bytes());
    b.put_i32(key.partition);
    b.freeze()
}

pub fn decode_key(mut b: &[u8]) -> Result<ShareKey, &'static str> {
    if b.remaining() < 4 || b.get_i16() != SNAPSHOT_KEY {
        return Err("not a share snapshot key");
    }
    let n = b.get_i16();
    if n < 0 || b.remaining() < n as usize + 20 {
        return Err("truncated key");
    }
    let group = std::str::from_utf8(&b[..n as usize]).map_err(|_| "group id not UTF-8")?;
    let group: std::sync::Arc<str> = std::sync::Arc::from(group);
    b.advance(n as usize);
    let topic_id = Uuid::from_slice(&b[..16]).map_err(|_| "bad topic id")?;
    b.advance(16);
    Ok(ShareKey {
        group,
        topic_id,
        partition: b.get_i32(),
    })
}

fn put_uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

fn get_uvarint(b: &mut &[u8]) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        if !b.has_remaining() {
            return Err("truncated varint");
        }
        let byte = b.get_u8();
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long")
}

pub fn encode_value(s: &Snapshot) -> Bytes {
    let mut b = BytesMut::with_capacity(2 + 12 + 24 + 2 + s.batches.len() * 20);
    b.put_i16(0);
    b.put_i32(s.snapshot_epoch);
    b.put_i32(s.state_epoch);
    b.put_i32(s.leader_epoch);
    b.put_i64(s.start_offset);
    b.put_i64(s.create_timestamp);
    b.put_i64(s.write_timestamp);
    put_uvarint(&mut b, s.batches.len() as u64 + 1);
    for batch in &s.batches {
        b.put_i64(batch.first);
        b.put_i64(batch.last);
        b.put_i8(batch.state as i8);
        b.put_i16(batch.delivery_count);
        b.put_u8(0);
    }
    match s.dlq_scan_from {
        None => b.put_u8(0),
        Some((partition, offset)) => {
            b.put_u8(1); // one tagged field
            b.put_u8(DLQ_SCAN_FROM_TAG);
            b.put_u8(12);
            b.put_i32(partition);
            b.put_i64(offset);
        }
    }
    b.freeze()
}

pub fn decode_value(mut b: &[u8]) -> Result<Snapshot, &'static str> {
    if b.remaining() < 2 + 12 + 24 || b.get_i16() != 0 {
        return Err("unknown share snapshot version");
    }
    let snapshot_epoch = b.get_i32();
    let state_epoch = b.get_i32();
    let leader_epoch = b.get_i32();
    let start_offset = b.get_i64();
    let create_timestamp = b.get_i64();
    let write_timestamp = b.get_i64();
    let n = get_uvarint(&mut b)?
        .checked_sub(1)
        .ok_or("null state batches")? as usize;
    if b.remaining() < n.saturating_mul(20) {
        return Err("truncated state batches");
    }
    let mut batches = Vec::with_capacity(n);
    for _ in 0..n {
        let first = b.get_i64();
        let last = b.get_i64();
        let state = match b.get_i8() {
            0 => PersistedState::Available,
            2 => PersistedState::Acknowledged,
            3 => PersistedState::Archiving,
            4 => PersistedState::Archived,
            _ => return Err("unknown delivery state"),
        };
        let delivery_count = b.get_i16();
        if b.get_u8() != 0 {
            return Err("tagged fields in a state batch");
        }
        if last < first {
            return Err("state batch ends before it starts");
        }
        batches.push(StateBatch {
            first,
            last,
            state,
            delivery_count,
        });
    }
    let mut dlq_scan_from = None;
    let tags = get_uvarint(&mut b)?;
    for _ in 0..tags {
        let tag = get_uvarint(&mut b)?;
        let size = get_uvarint(&mut b)? as usize;
        if b.remaining() < size {
            return Err("truncated tagged field");
        }
        if tag == DLQ_SCAN_FROM_TAG as u64 && size == 12 {
            let mut f = &b[..12];
            dlq_scan_from = Some((f.get_i32(), f.get_i64()));
        }
        b.advance(size);
    }
    Ok(Snapshot {
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        create_timestamp,
        write_timestamp,
        batches,
        dlq_scan_from,
    })
}

/// One record batch holding `key`'s state (a tombstone when `None`).
pub fn encode_batch(key: &ShareKey, snapshot: Option<&Snapshot>, now_ms: i64) -> Bytes {
    crate::coordinator_write::one_record_batch(
        now_ms,
        Some(encode_key(key)),
        snapshot.map(encode_value),
        Default::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_round_trip() {
        let key = ShareKey {
            group: "g".into(),
            topic_id: Uuid::from_u128(7),
            partition: 3,
        };
        assert_eq!(decode_key(&encode_key(&key)), Ok(key));
        let s = Snapshot {
            snapshot_epoch: 4,
            state_epoch: 1,
            leader_epoch: 2,
            start_offset: 10,
            create_timestamp: 5,
            write_timestamp: 6,
            batches: vec![
                StateBatch {
                    first: 10,
                    last: 12,
                    state: PersistedState::Available,
                    delivery_count: 2,
                },
                StateBatch {
                    first: 13,
                    last: 13,
                    state: PersistedState::Archived,
                    delivery_count: 5,
                },
            ],
            dlq_scan_from: None,
        };
        assert_eq!(decode_value(&encode_value(&s)), Ok(s.clone()));
        let with_hint = Snapshot {
            dlq_scan_from: Some((2, 99)),
            ..s.clone()
        };
        assert_eq!(decode_value(&encode_value(&with_hint)), Ok(with_hint));
        let bytes = encode_value(&s);
        for cut in 0..bytes.len() {
            assert!(decode_value(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn writes_of_an_older_state_epoch_are_fenced_and_a_reset_always_lands() {
        let at = |state_epoch, snapshot_epoch| Snapshot {
            snapshot_epoch,
            state_epoch,
            leader_epoch: 0,
            start_offset: 0,
            create_timestamp: 0,
            write_timestamp: 0,
            batches: Vec::new(),
            dlq_scan_from: None,
        };
        assert_eq!(admit(None, &at(1, 0)), Admit::Write);
        // The same state epoch: only newer snapshots.
        assert_eq!(admit(Some(&at(1, 3)), &at(1, 4)), Admit::Write);
        assert_eq!(admit(Some(&at(1, 3)), &at(1, 3)), Admit::Done);
        assert_eq!(admit(Some(&at(1, 3)), &at(1, 2)), Admit::Done);
        // A leader that has not seen the reset, even with a newer snapshot epoch.
        assert_eq!(admit(Some(&at(2, 4)), &at(1, 9)), Admit::Fenced);
        assert_eq!(admit(Some(&at(2, 4)), &at(1, 4)), Admit::Fenced);
        // The reset (AlterShareGroupOffsets), even when a leader's write took its snapshot
        // epoch meanwhile.
        assert_eq!(admit(Some(&at(1, 4)), &at(2, 4)), Admit::Write);
        assert_eq!(admit(Some(&at(1, 5)), &at(2, 4)), Admit::Write);
    }
}
