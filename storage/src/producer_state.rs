//! Producer state beside the log (Kafka's `ProducerStateManager`): for every producer id that
//! wrote to the partition, its epoch, the sequence and offset ranges of its last five batches,
//! its coordinator epoch and the first offset of its open transaction. Idempotence (duplicate
//! and gap detection), zombie fencing and the last stable offset all read it.
//!
//! An append is judged in two steps, as Kafka's `ProducerAppendInfo` does: every batch of the
//! request is checked against a staged copy of its producer's entry (`ProducerUpdates`), and
//! only once the bytes are in the log are the staged entries applied. A refused request leaves
//! the state untouched.
//!
//! The rules (Kafka 4's `ProducerAppendInfo` / `UnifiedLog.analyzeAndValidateProducerState`):
//! - a batch whose epoch is below the producer's is a zombie's: INVALID_PRODUCER_EPOCH;
//! - a batch with exactly the sequence range of one of the five cached batches (same epoch)
//!   is a retry: it is answered with the original offsets and not written again;
//! - a new epoch must start at sequence 0 unless the producer is unknown; within an epoch the
//!   first sequence must follow the last one (wrapping at `i32::MAX`), else
//!   OUT_OF_ORDER_SEQUENCE_NUMBER;
//! - an unknown producer (never seen, or expired) is accepted at any sequence (Kafka 4 no
//!   longer answers UNKNOWN_PRODUCER_ID; KIP-360);
//! - a transactional batch opens a transaction for its producer, a non-transactional batch
//!   while one is open is INVALID_TXN_STATE, and a COMMIT or ABORT marker closes it;
//! - a marker from an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED.
//!
//! Snapshots (`<offset>.snapshot`, Kafka's naming) hold the state as of `offset`; the log
//! rebuilds the state on open from the latest snapshot at or below its end plus the batches
//! after it. The format is Kafka's version 1 layout extended to keep all cached batches
//! (version 2), so that a retry after a restart is still recognised; version 1 files (Kafka's)
//! are read too.
//!
//! Bounds: `BATCHES_PER_PRODUCER` batches per producer; at most `PRODUCERS_MAX` producers per
//! partition (beyond it the least recently active ones without an open transaction are
//! forgotten, as expiry would forget them later).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::path::Path;

use crate::batch::{BatchHeader, RecordBatch};
use crate::error::LogError;
use crate::records::for_each_record;

pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;
pub const NO_SEQUENCE: i32 = -1;
/// Batches remembered per producer for duplicate detection (Kafka's `NUM_BATCHES_TO_RETAIN`,
/// which is also the most in-flight requests an idempotent producer may have).
pub const BATCHES_PER_PRODUCER: usize = 5;
/// Producers one partition tracks at most.
pub const PRODUCERS_MAX: usize = 100_000;
/// A snapshot file larger than this is refused when read.
pub const SNAPSHOT_BYTES_MAX: u64 = 256 << 20;

/// Who is appending, which decides how much is checked (Kafka's `AppendOrigin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer: every check.
    Client,
    /// A coordinator of this broker (transaction markers, transactional offset commits):
    /// epochs are checked, sequences are not (its batches carry none).
    Coordinator,
    /// Replayed or replicated batches, already judged once: nothing is refused.
    Replication,
}

/// One appended batch, as remembered for duplicate detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// The batch's max timestamp (what a duplicate's response reports as its append time).
    pub timestamp_ms: i64,
}

/// What the partition knows about one producer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerStateEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The last batches of the current epoch, oldest first.
    pub batches: VecDeque<BatchMetadata>,
    /// Timestamp of the producer's last batch or marker (for `producer.id.expiration.ms`).
    pub last_timestamp_ms: i64,
    /// Epoch of the coordinator that wrote this producer's last marker (-1: none yet).
    pub coordinator_epoch: i32,
    /// First offset of the producer's open transaction in this partition.
    pub current_txn_first_offset: Option<i64>,
}

impl ProducerStateEntry {
    fn empty(producer_id: i64) -> ProducerStateEntry {
        ProducerStateEntry {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::new(),
            last_timestamp_ms: -1,
            coordinator_epoch: -1,
            current_txn_first_offset: None,
        }
    }

    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    /// Offset of the producer's last data batch (-1 when none is cached).
    pub fn last_data_offset(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.last_offset)
    }

    /// A new epoch forgets the old epoch's batches (their sequences no longer apply).
    fn maybe_update_epoch(&mut self, epoch: i16) {
        if self.producer_epoch != epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
    }

    fn add_batch(&mut self, epoch: i16, batch: BatchMetadata) {
        self.maybe_update_epoch(epoch);
        self.batches.push_back(batch);
        while self.batches.len() > BATCHES_PER_PRODUCER {
            self.batches.pop_front();
        }
        self.last_timestamp_ms = batch.timestamp_ms;
    }

    /// The cached batch with exactly this epoch and sequence range (Kafka's
    /// `findDuplicateBatch`).
    fn find_duplicate(&self, epoch: i16, first_seq: i32, last_seq: i32) -> Option<BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
            .copied()
    }
}

/// A transaction that a marker completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub is_aborted: bool,
}

/// A COMMIT or ABORT marker: the one record of a control batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndTxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// Control record types (Kafka's `ControlRecordType`).
const CONTROL_ABORT: i16 = 0;
const CONTROL_COMMIT: i16 = 1;

impl EndTxnMarker {
    /// The record key and value of this marker (Kafka's `EndTransactionMarker`): key is
    /// (version 0, type), value is (version 0, coordinator epoch).
    pub fn key_and_value(&self) -> ([u8; 4], [u8; 6]) {
        let kind = if self.commit {
            CONTROL_COMMIT
        } else {
            CONTROL_ABORT
        };
        let mut key = [0u8; 4];
        key[2..4].copy_from_slice(&kind.to_be_bytes());
        let mut value = [0u8; 6];
        value[2..6].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        (key, value)
    }

    /// Reads the marker of a control batch. `Ok(None)` for an empty control batch (compaction
    /// removed it) or a control record that is not a transaction marker.
    pub fn parse(b: &RecordBatch<'_>) -> Result<Option<EndTxnMarker>, String> {
        let found = for_each_record(b, |_, _, r| {
            let key = r.key?;
            if key.len() < 4 {
                return Some(Err("control record key is shorter than 4 bytes".to_string()));
            }
            let kind = i16::from_be_bytes([key[2], key[3]]);
            let commit = match kind {
                CONTROL_COMMIT => true,
                CONTROL_ABORT => false,
                // Other control records (e.g. KRaft's) are not transaction markers.
                _ => return Some(Ok(None)),
            };
            let coordinator_epoch = match r.value {
                Some(v) if v.len() >= 6 => i32::from_be_bytes([v[2], v[3], v[4], v[5]]),
                _ => {
                    return Some(Err(
                        "transaction marker value is shorter than 6 bytes".into()
                    ))
                }
            };
            Some(Ok(Some(EndTxnMarker {
                commit,
                coordinator_epoch,
            })))
        })?;
        found.unwrap_or(Ok(None))
    }
}

/// Staged changes of one append, applied once its bytes are in the log.
#[derive(Default)]
pub(crate) struct ProducerUpdates {
    entries: HashMap<i64, ProducerStateEntry>,
    started: Vec<(i64, i64)>,
    completed: Vec<CompletedTxn>,
}

impl ProducerUpdates {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A producer batch to judge: its header with the offsets the log assigned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StagedBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub transactional: bool,
}

impl StagedBatch {
    pub fn of(h: &BatchHeader, first_offset: i64, last_offset: i64, max_timestamp: i64) -> Self {
        StagedBatch {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            first_offset,
            last_offset,
            max_timestamp,
            transactional: h.is_transactional(),
        }
    }
}

/// Kafka's `inSequence`: `next` directly follows `last`, wrapping at `i32::MAX`.
fn in_sequence(last: i32, next: i32) -> bool {
    next as i64 == last as i64 + 1 || (next == 0 && last == i32::MAX)
}

/// The state of one partition's producers.
#[derive(Default)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerStateEntry>,
    /// Open transactions by first offset.
    ongoing: BTreeMap<i64, i64>,
    /// Completed transactions whose marker is not yet below the high watermark, by first
    /// offset: until it is, they still hold the last stable offset back (Kafka's
    /// `unreplicatedTxns`).
    unreplicated: BTreeMap<i64, CompletedTxn>,
    /// Every offset below this has been applied.
    map_end_offset: i64,
}

impl ProducerStateManager {
    pub fn new(map_end_offset: i64) -> ProducerStateManager {
        ProducerStateManager {
            map_end_offset,
            ..Default::default()
        }
    }

    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }
    pub(crate) fn set_map_end_offset(&mut self, offset: i64) {
        self.map_end_offset = offset;
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    pub fn entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// Every producer, in producer id order (DescribeProducers).
    pub fn entries(&self) -> Vec<ProducerStateEntry> {
        let mut v: Vec<_> = self.producers.values().cloned().collect();
        v.sort_by_key(|e| e.producer_id);
        v
    }

    /// Whether `producer_id` has a transaction open in this partition.
    pub fn has_ongoing_txn(&self, producer_id: i64) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some())
    }

    /// The cached batch that `h` retries, if it is one.
    pub(crate) fn find_duplicate(&self, h: &BatchHeader) -> Option<BatchMetadata> {
        self.producers
            .get(&h.producer_id)
            .and_then(|e| e.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence()))
    }

    fn staged<'a>(
        &self,
        updates: &'a mut ProducerUpdates,
        producer_id: i64,
    ) -> &'a mut ProducerStateEntry {
        updates.entries.entry(producer_id).or_insert_with(|| {
            self.producers
                .get(&producer_id)
                .cloned()
                .unwrap_or_else(|| ProducerStateEntry::empty(producer_id))
        })
    }

    fn check_epoch(
        origin: AppendOrigin,
        entry: &ProducerStateEntry,
        epoch: i16,
        offset: i64,
        partition: &dyn std::fmt::Display,
    ) -> Result<(), LogError> {
        if epoch < entry.producer_epoch {
            let message = format!(
                "epoch of producer {} at offset {offset} in {partition} is {epoch}, which is smaller than the last seen epoch {}",
                entry.producer_id, entry.producer_epoch
            );
            if origin == AppendOrigin::Replication {
                tracing::warn!("{message}");
            } else {
                return Err(LogError::InvalidProducerEpoch(message));
            }
        }
        Ok(())
    }

    /// Judges one data batch and stages its effect.
    pub(crate) fn stage_data(
        &self,
        updates: &mut ProducerUpdates,
        origin: AppendOrigin,
        b: StagedBatch,
        partition: &dyn std::fmt::Display,
    ) -> Result<(), LogError> {
        let current = self.producers.get(&b.producer_id);
        let current_epoch = current.map_or(NO_PRODUCER_EPOCH, |e| e.producer_epoch);
        let updated = self.staged(updates, b.producer_id);
        Self::check_epoch(origin, updated, b.producer_epoch, b.first_offset, partition)?;
        if origin == AppendOrigin::Client {
            if b.producer_epoch != updated.producer_epoch {
                // A new epoch (KIP-360's bump, or a fresh InitProducerId) starts over at 0.
                if b.first_seq != 0 && updated.producer_epoch != NO_PRODUCER_EPOCH {
                    return Err(LogError::OutOfOrderSequence(format!(
                        "invalid sequence number for new epoch of producer {} at offset {} in {partition}: {} (request epoch), {} (seq. number), {} (current producer epoch)",
                        b.producer_id, b.first_offset, b.producer_epoch, b.first_seq, updated.producer_epoch
                    )));
                }
            } else {
                let last_seq = updated.last_seq();
                // An entry without an epoch (all its data gone) accepts any sequence.
                if current_epoch != NO_PRODUCER_EPOCH && !in_sequence(last_seq, b.first_seq) {
                    return Err(LogError::OutOfOrderSequence(format!(
                        "out of order sequence number for producer {} at offset {} in {partition}: {} (incoming seq. number), {last_seq} (current end sequence number)",
                        b.producer_id, b.first_offset, b.first_seq
                    )));
                }
            }
        }
        updated.add_batch(
            b.producer_epoch,
            BatchMetadata {
                first_seq: b.first_seq,
                last_seq: b.last_seq,
                first_offset: b.first_offset,
                last_offset: b.last_offset,
                timestamp_ms: b.max_timestamp,
            },
        );
        match (updated.current_txn_first_offset, b.transactional) {
            (Some(_), false) => {
                return Err(LogError::InvalidTxnState(format!(
                    "expected a transactional write from producer {} at offset {} in {partition}: it has a transaction open",
                    b.producer_id, b.first_offset
                )))
            }
            (None, true) => {
                updated.current_txn_first_offset = Some(b.first_offset);
                updates.started.push((b.first_offset, b.producer_id));
            }
            _ => {}
        }
        Ok(())
    }

    /// Judges one transaction marker and stages its effect.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stage_marker(
        &self,
        updates: &mut ProducerUpdates,
        origin: AppendOrigin,
        producer_id: i64,
        producer_epoch: i16,
        marker: EndTxnMarker,
        offset: i64,
        timestamp_ms: i64,
        partition: &dyn std::fmt::Display,
    ) -> Result<(), LogError> {
        let updated = self.staged(updates, producer_id);
        Self::check_epoch(origin, updated, producer_epoch, offset, partition)?;
        if updated.coordinator_epoch > marker.coordinator_epoch {
            let message = format!(
                "invalid coordinator epoch for producer {producer_id} at offset {offset} in {partition}: {} (zombie), {} (current)",
                marker.coordinator_epoch, updated.coordinator_epoch
            );
            if origin == AppendOrigin::Replication {
                tracing::info!("{message}");
            } else {
                return Err(LogError::CoordinatorFenced(message));
            }
        }
        // A marker without data before it changes nothing for readers: no completed
        // transaction, no index entry (Kafka emits none either).
        let completed = updated
            .current_txn_first_offset
            .map(|first_offset| CompletedTxn {
                producer_id,
                first_offset,
                last_offset: offset,
                is_aborted: !marker.commit,
            });
        updated.maybe_update_epoch(producer_epoch);
        updated.coordinator_epoch = marker.coordinator_epoch;
        updated.last_timestamp_ms = timestamp_ms;
        updated.current_txn_first_offset = None;
        updates.completed.extend(completed);
        Ok(())
    }

    /// Applies what an append staged, now that its bytes are in the log. Returns the
    /// transactions it completed with the last stable offset each left behind (for the
    /// transaction index).
    pub(crate) fn apply(
        &mut self,
        updates: ProducerUpdates,
        map_end_offset: i64,
    ) -> Vec<(CompletedTxn, i64)> {
        for (pid, entry) in updates.entries {
            self.producers.insert(pid, entry);
        }
        for (first_offset, pid) in updates.started {
            self.ongoing.insert(first_offset, pid);
        }
        let mut completed = Vec::with_capacity(updates.completed.len());
        for txn in updates.completed {
            // Kafka's `lastStableOffset(completedTxn)`: the first offset of the oldest other
            // open transaction, else just past this one's marker.
            let lso = self
                .ongoing
                .iter()
                .find(|(_, &pid)| pid != txn.producer_id)
                .map_or(txn.last_offset + 1, |(&first, _)| first);
            self.ongoing.remove(&txn.first_offset);
            self.unreplicated.insert(txn.first_offset, txn);
            completed.push((txn, lso));
        }
        self.map_end_offset = self.map_end_offset.max(map_end_offset);
        if self.producers.len() > PRODUCERS_MAX {
            self.evict_least_recent();
        }
        completed
    }

    /// Forgets the least recently active tenth of the producers that have no open
    /// transaction (the limit is a guard against clients minting producer ids without end).
    fn evict_least_recent(&mut self) {
        let mut idle: Vec<(i64, i64)> = self
            .producers
            .values()
            .filter(|e| e.current_txn_first_offset.is_none())
            .map(|e| (e.last_timestamp_ms, e.producer_id))
            .collect();
        idle.sort_unstable();
        let n = (PRODUCERS_MAX / 10).max(self.producers.len() - PRODUCERS_MAX);
        for (_, pid) in idle.into_iter().take(n) {
            self.producers.remove(&pid);
        }
    }

    /// The first offset a read_committed reader may not pass: the first offset of the oldest
    /// open transaction, or of a completed one whose marker is not yet below the high
    /// watermark (Kafka's `firstUnstableOffset`).
    pub fn first_unstable_offset(&mut self, high_watermark: i64) -> Option<i64> {
        self.unreplicated
            .retain(|_, txn| txn.last_offset >= high_watermark);
        let ongoing = self.ongoing.keys().next().copied();
        let unreplicated = self.unreplicated.keys().next().copied();
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// First offset of the oldest open transaction.
    pub fn first_ongoing_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// Forgets producers idle for `expiration_ms` with no open transaction (Kafka's
    /// `removeExpiredProducers`). Returns how many were removed.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(e.last_timestamp_ms) < expiration_ms
        });
        before - self.producers.len()
    }

    /// Forgets everything (the log was emptied).
    pub(crate) fn clear(&mut self, map_end_offset: i64) {
        *self = ProducerStateManager::new(map_end_offset);
    }

    /// Replaces the state with a snapshot's entries taken at `offset`, dropping expired ones.
    pub(crate) fn load(
        &mut self,
        entries: Vec<ProducerStateEntry>,
        offset: i64,
        now_ms: i64,
        expiration_ms: i64,
    ) {
        self.clear(offset);
        for e in entries {
            if let Some(first) = e.current_txn_first_offset {
                self.ongoing.insert(first, e.producer_id);
            } else if now_ms.saturating_sub(e.last_timestamp_ms) >= expiration_ms {
                continue;
            }
            self.producers.insert(e.producer_id, e);
        }
    }

    // ------------------------------------------------------------ snapshots

    /// Encodes the state as a snapshot (version 2; see the module comment).
    pub fn encode_snapshot(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(4 + self.producers.len() * 80);
        body.extend_from_slice(&(self.producers.len() as i32).to_be_bytes());
        let mut entries: Vec<&ProducerStateEntry> = self.producers.values().collect();
        entries.sort_by_key(|e| e.producer_id);
        for e in entries {
            body.extend_from_slice(&e.producer_id.to_be_bytes());
            body.extend_from_slice(&e.producer_epoch.to_be_bytes());
            body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            body.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
            body.extend_from_slice(&e.last_timestamp_ms.to_be_bytes());
            body.push(e.batches.len() as u8);
            for b in &e.batches {
                body.extend_from_slice(&b.last_seq.to_be_bytes());
                body.extend_from_slice(&b.last_offset.to_be_bytes());
                body.extend_from_slice(
                    &(b.last_offset.wrapping_sub(b.first_offset) as i32).to_be_bytes(),
                );
                body.extend_from_slice(&b.timestamp_ms.to_be_bytes());
            }
        }
        let mut out = Vec::with_capacity(6 + body.len());
        out.extend_from_slice(&SNAPSHOT_VERSION_SAMSA.to_be_bytes());
        out.extend_from_slice(&crate::batch::crc32c(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }
}

/// Kafka's snapshot version (one batch per producer).
const SNAPSHOT_VERSION_KAFKA: i16 = 1;
/// Samsa's: every cached batch per producer.
const SNAPSHOT_VERSION_SAMSA: i16 = 2;

/// Kafka's `DefaultRecordBatch.decrementSequence`-style wrap: the first sequence of a batch
/// given its last and its offset delta.
fn first_seq_of(last_seq: i32, offset_delta: i32) -> i32 {
    if last_seq < 0 {
        return NO_SEQUENCE;
    }
    let first = last_seq as i64 - offset_delta as i64;
    if first < 0 {
        (first + i32::MAX as i64 + 1) as i32
    } else {
        first as i32
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| "snapshot ends in the middle of an entry".to_string())?;
        let out = self.buf[self.pos..end].try_into().expect("N bytes");
        self.pos = end;
        Ok(out)
    }
    fn i16(&mut self) -> Result<i16, String> {
        Ok(i16::from_be_bytes(self.take()?))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(self.take()?))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_be_bytes(self.take()?))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }
    /// One batch as both versions store it: last sequence, last offset, offset delta,
    /// timestamp.
    fn batch(&mut self) -> Result<BatchMetadata, String> {
        let last_seq = self.i32()?;
        let last_offset = self.i64()?;
        let offset_delta = self.i32()?;
        let timestamp_ms = self.i64()?;
        Ok(BatchMetadata {
            first_seq: first_seq_of(last_seq, offset_delta),
            last_seq,
            first_offset: last_offset.wrapping_sub(offset_delta as i64),
            last_offset,
            timestamp_ms,
        })
    }
}

/// Decodes a snapshot (Kafka's version 1 or Samsa's version 2), checking its CRC-32C.
pub fn decode_snapshot(bytes: &[u8]) -> Result<Vec<ProducerStateEntry>, String> {
    if bytes.len() < 10 {
        return Err("snapshot is shorter than its header".into());
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != SNAPSHOT_VERSION_KAFKA && version != SNAPSHOT_VERSION_SAMSA {
        return Err(format!("unknown snapshot version {version}"));
    }
    let stored = u32::from_be_bytes(bytes[2..6].try_into().expect("4 bytes"));
    let body = &bytes[6..];
    let computed = crate::batch::crc32c(body);
    if stored != computed {
        return Err(format!(
            "snapshot crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    let mut r = Reader { buf: body, pos: 0 };
    let count = r.i32()?;
    let entry_bytes_min = if version == SNAPSHOT_VERSION_KAFKA {
        46
    } else {
        31
    };
    if count < 0 || count as usize > body.len() / entry_bytes_min {
        return Err(format!("snapshot claims {count} producers"));
    }
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let producer_id = r.i64()?;
        let producer_epoch = r.i16()?;
        let mut batches = VecDeque::new();
        let (coordinator_epoch, txn_first, last_timestamp_ms) = match version {
            SNAPSHOT_VERSION_KAFKA => {
                let batch = r.batch()?;
                let coordinator_epoch = r.i32()?;
                let txn_first = r.i64()?;
                if batch.last_offset >= 0 {
                    batches.push_back(batch);
                }
                (coordinator_epoch, txn_first, batch.timestamp_ms)
            }
            SNAPSHOT_VERSION_SAMSA => {
                let coordinator_epoch = r.i32()?;
                let txn_first = r.i64()?;
                let last_timestamp_ms = r.i64()?;
                let n = r.u8()? as usize;
                if n > BATCHES_PER_PRODUCER {
                    return Err(format!("snapshot entry claims {n} batches"));
                }
                for _ in 0..n {
                    batches.push_back(r.batch()?);
                }
                (coordinator_epoch, txn_first, last_timestamp_ms)
            }
            other => return Err(format!("unknown snapshot version {other}")),
        };
        out.push(ProducerStateEntry {
            producer_id,
            producer_epoch,
            batches,
            last_timestamp_ms,
            coordinator_epoch,
            current_txn_first_offset: (txn_first >= 0).then_some(txn_first),
        });
    }
    if r.pos != body.len() {
        return Err("snapshot has bytes after its last entry".into());
    }
    Ok(out)
}

/// Reads a snapshot file.
pub(crate) fn read_snapshot(path: &Path) -> io::Result<Vec<ProducerStateEntry>> {
    let len = std::fs::metadata(path)?.len();
    if len > SNAPSHOT_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is larger than {SNAPSHOT_BYTES_MAX} bytes",
                path.display()
            ),
        ));
    }
    let bytes = std::fs::read(path)?;
    decode_snapshot(&bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &dyn std::fmt::Display = &"t-0";

    fn batch(pid: i64, epoch: i16, first_seq: i32, n: i32, first_offset: i64) -> StagedBatch {
        StagedBatch {
            producer_id: pid,
            producer_epoch: epoch,
            first_seq,
            last_seq: ((first_seq as i64 + n as i64 - 1) % (i32::MAX as i64 + 1)) as i32,
            first_offset,
            last_offset: first_offset + n as i64 - 1,
            max_timestamp: 1000 + first_offset,
            transactional: false,
        }
    }

    fn append(
        s: &mut ProducerStateManager,
        origin: AppendOrigin,
        b: StagedBatch,
    ) -> Result<Vec<(CompletedTxn, i64)>, LogError> {
        let mut u = ProducerUpdates::default();
        s.stage_data(&mut u, origin, b, P)?;
        Ok(s.apply(u, b.last_offset + 1))
    }

    fn marker(
        s: &mut ProducerStateManager,
        pid: i64,
        epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
        offset: i64,
    ) -> Result<Vec<(CompletedTxn, i64)>, LogError> {
        let mut u = ProducerUpdates::default();
        s.stage_marker(
            &mut u,
            AppendOrigin::Coordinator,
            pid,
            epoch,
            EndTxnMarker {
                commit,
                coordinator_epoch,
            },
            offset,
            5000,
            P,
        )?;
        Ok(s.apply(u, offset + 1))
    }

    fn header(pid: i64, epoch: i16, first_seq: i32, n: i32) -> BatchHeader {
        let bytes = crate::test_support::BatchBuilder::new()
            .producer(pid, epoch, first_seq)
            .records(n as usize, 1)
            .build();
        *RecordBatch::parse(&bytes).unwrap().header()
    }

    #[test]
    fn sequences_must_follow_on_within_an_epoch() {
        let mut s = ProducerStateManager::new(0);
        append(&mut s, AppendOrigin::Client, batch(1, 0, 0, 3, 0)).unwrap();
        append(&mut s, AppendOrigin::Client, batch(1, 0, 3, 2, 3)).unwrap();
        let gap = append(&mut s, AppendOrigin::Client, batch(1, 0, 6, 1, 5)).unwrap_err();
        assert!(matches!(gap, LogError::OutOfOrderSequence(_)), "{gap}");
        // A refused batch changes nothing: the right next sequence is still accepted.
        append(&mut s, AppendOrigin::Client, batch(1, 0, 5, 1, 5)).unwrap();
        assert_eq!(s.entry(1).unwrap().last_seq(), 5);
    }

    #[test]
    fn a_retry_of_any_of_the_last_five_batches_is_a_duplicate_with_its_offsets() {
        let mut s = ProducerStateManager::new(0);
        for i in 0..7 {
            append(
                &mut s,
                AppendOrigin::Client,
                batch(9, 2, i * 2, 2, i as i64 * 2),
            )
            .unwrap();
        }
        // Batches 2..=6 are cached; 0 and 1 fell out.
        let dup = s.find_duplicate(&header(9, 2, 4, 2)).unwrap();
        assert_eq!((dup.first_offset, dup.last_offset), (4, 5));
        assert_eq!(
            s.find_duplicate(&header(9, 2, 12, 2)).unwrap().last_offset,
            13
        );
        assert_eq!(s.find_duplicate(&header(9, 2, 2, 2)), None);
        // Same range under another epoch, or a different range, is not a duplicate.
        assert_eq!(s.find_duplicate(&header(9, 3, 4, 2)), None);
        assert_eq!(s.find_duplicate(&header(9, 2, 4, 3)), None);
    }

    #[test]
    fn a_stale_epoch_is_fenced_and_a_new_epoch_starts_at_zero() {
        let mut s = ProducerStateManager::new(0);
        append(&mut s, AppendOrigin::Client, batch(1, 3, 0, 1, 0)).unwrap();
        let zombie = append(&mut s, AppendOrigin::Client, batch(1, 2, 1, 1, 1)).unwrap_err();
        assert!(matches!(zombie, LogError::InvalidProducerEpoch(_)));
        let bad_bump = append(&mut s, AppendOrigin::Client, batch(1, 4, 1, 1, 1)).unwrap_err();
        assert!(matches!(bad_bump, LogError::OutOfOrderSequence(_)));
        // KIP-360: an idempotent producer bumps its own epoch and restarts at sequence 0.
        append(&mut s, AppendOrigin::Client, batch(1, 4, 0, 1, 1)).unwrap();
        assert_eq!(s.entry(1).unwrap().producer_epoch, 4);
        assert_eq!(s.entry(1).unwrap().batches.len(), 1);
    }

    #[test]
    fn an_unknown_producer_is_accepted_at_any_sequence() {
        let mut s = ProducerStateManager::new(0);
        append(&mut s, AppendOrigin::Client, batch(5, 0, 42, 1, 0)).unwrap();
        append(&mut s, AppendOrigin::Client, batch(5, 0, 43, 1, 1)).unwrap();
        assert!(append(&mut s, AppendOrigin::Client, batch(5, 0, 45, 1, 2)).is_err());
    }

    #[test]
    fn sequences_wrap_at_i32_max() {
        let mut s = ProducerStateManager::new(0);
        append(&mut s, AppendOrigin::Client, batch(1, 0, i32::MAX, 1, 0)).unwrap();
        append(&mut s, AppendOrigin::Client, batch(1, 0, 0, 1, 1)).unwrap();
        assert_eq!(first_seq_of(1, 3), i32::MAX - 1);
    }

    #[test]
    fn coordinator_batches_skip_sequence_checks_but_not_epochs() {
        let mut s = ProducerStateManager::new(0);
        append(&mut s, AppendOrigin::Coordinator, batch(1, 1, -1, 1, 0)).unwrap();
        append(&mut s, AppendOrigin::Coordinator, batch(1, 1, -1, 1, 1)).unwrap();
        assert!(append(&mut s, AppendOrigin::Coordinator, batch(1, 0, -1, 1, 2)).is_err());
        // Replication warns and accepts.
        append(&mut s, AppendOrigin::Replication, batch(1, 0, 99, 1, 2)).unwrap();
    }

    #[test]
    fn transactions_hold_the_last_stable_offset_until_their_marker() {
        let mut s = ProducerStateManager::new(0);
        let mut a = batch(1, 0, 0, 2, 0);
        a.transactional = true;
        append(&mut s, AppendOrigin::Client, a).unwrap();
        append(&mut s, AppendOrigin::Client, batch(3, 0, 0, 1, 2)).unwrap();
        let mut b = batch(2, 0, 0, 1, 3);
        b.transactional = true;
        append(&mut s, AppendOrigin::Client, b).unwrap();
        assert_eq!(s.first_unstable_offset(4), Some(0));
        assert!(s.has_ongoing_txn(1));
        // Producer 1 aborts: the LSO it leaves is producer 2's first offset.
        let done = marker(&mut s, 1, 0, false, 0, 4).unwrap();
        assert_eq!(
            done,
            vec![(
                CompletedTxn {
                    producer_id: 1,
                    first_offset: 0,
                    last_offset: 4,
                    is_aborted: true
                },
                3
            )]
        );
        // Until the marker is below the high watermark, the completed one still counts.
        assert_eq!(s.first_unstable_offset(4), Some(0));
        assert_eq!(s.first_unstable_offset(5), Some(3));
        let done = marker(&mut s, 2, 0, true, 0, 5).unwrap();
        assert_eq!(done[0].1, 6);
        assert_eq!(s.first_unstable_offset(6), None);
    }

    #[test]
    fn non_transactional_data_inside_a_transaction_is_invalid() {
        let mut s = ProducerStateManager::new(0);
        let mut a = batch(1, 0, 0, 1, 0);
        a.transactional = true;
        append(&mut s, AppendOrigin::Client, a).unwrap();
        let e = append(&mut s, AppendOrigin::Client, batch(1, 0, 1, 1, 1)).unwrap_err();
        assert!(matches!(e, LogError::InvalidTxnState(_)));
    }

    #[test]
    fn markers_check_producer_and_coordinator_epochs() {
        let mut s = ProducerStateManager::new(0);
        let mut a = batch(1, 2, 0, 1, 0);
        a.transactional = true;
        append(&mut s, AppendOrigin::Client, a).unwrap();
        assert!(matches!(
            marker(&mut s, 1, 1, true, 0, 1),
            Err(LogError::InvalidProducerEpoch(_))
        ));
        // A timed-out transaction is aborted with a bumped epoch, which fences the producer.
        marker(&mut s, 1, 3, false, 5, 1).unwrap();
        assert!(matches!(
            append(&mut s, AppendOrigin::Client, batch(1, 2, 1, 1, 2)),
            Err(LogError::InvalidProducerEpoch(_))
        ));
        assert!(matches!(
            marker(&mut s, 1, 3, false, 4, 2),
            Err(LogError::CoordinatorFenced(_))
        ));
        // A marker with no transaction open completes nothing.
        assert!(marker(&mut s, 1, 3, true, 5, 2).unwrap().is_empty());
    }

    #[test]
    fn idle_producers_expire_unless_in_a_transaction() {
        let mut s = ProducerStateManager::new(0);
        append(&mut s, AppendOrigin::Client, batch(1, 0, 0, 1, 0)).unwrap();
        let mut t = batch(2, 0, 0, 1, 1);
        t.transactional = true;
        append(&mut s, AppendOrigin::Client, t).unwrap();
        assert_eq!(s.remove_expired(1000 + 1 + 500, 500), 1);
        assert!(s.entry(1).is_none());
        assert!(s.entry(2).is_some());
    }

    #[test]
    fn snapshots_round_trip_every_cached_batch() {
        let mut s = ProducerStateManager::new(0);
        for i in 0..7 {
            append(
                &mut s,
                AppendOrigin::Client,
                batch(9, 2, i * 2, 2, i as i64 * 2),
            )
            .unwrap();
        }
        let mut t = batch(4, 1, 0, 1, 14);
        t.transactional = true;
        append(&mut s, AppendOrigin::Client, t).unwrap();
        let bytes = s.encode_snapshot();
        let entries = decode_snapshot(&bytes).unwrap();
        assert_eq!(entries, s.entries());
        let mut loaded = ProducerStateManager::default();
        loaded.load(entries, 15, 0, i64::MAX);
        assert_eq!(loaded.entries(), s.entries());
        assert_eq!(loaded.first_unstable_offset(15), Some(14));
        let mut corrupt = bytes.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert!(decode_snapshot(&corrupt).unwrap_err().contains("crc32c"));
        assert!(decode_snapshot(&bytes[..bytes.len() - 3]).is_err());
    }

    #[test]
    fn kafkas_version_1_snapshots_are_read() {
        let mut body = Vec::new();
        body.extend_from_slice(&1i32.to_be_bytes());
        body.extend_from_slice(&77i64.to_be_bytes()); // producer id
        body.extend_from_slice(&3i16.to_be_bytes()); // epoch
        body.extend_from_slice(&10i32.to_be_bytes()); // last sequence
        body.extend_from_slice(&104i64.to_be_bytes()); // last offset
        body.extend_from_slice(&4i32.to_be_bytes()); // offset delta
        body.extend_from_slice(&999i64.to_be_bytes()); // timestamp
        body.extend_from_slice(&2i32.to_be_bytes()); // coordinator epoch
        body.extend_from_slice(&(-1i64).to_be_bytes()); // no open transaction
        let mut bytes = 1i16.to_be_bytes().to_vec();
        bytes.extend_from_slice(&crate::batch::crc32c(&body).to_be_bytes());
        bytes.extend_from_slice(&body);
        let e = &decode_snapshot(&bytes).unwrap()[0];
        assert_eq!(e.producer_id, 77);
        assert_eq!(e.coordinator_epoch, 2);
        assert_eq!(
            e.batches[0],
            BatchMetadata {
                first_seq: 6,
                last_seq: 10,
                first_offset: 100,
                last_offset: 104,
                timestamp_ms: 999
            }
        );
    }
}
