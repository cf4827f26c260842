//! The log's side of idempotence and transactions: judging each append's producer batches
//! against the producer state (`producer_state.rs`), writing transaction markers, the last
//! stable offset, the aborted transactions a read_committed Fetch reports, producer snapshots
//! and rebuilding the state when the log opens or is truncated.
//!
//! Invariants:
//! - the producer state reflects exactly the batches below `map_end_offset`, which is the log
//!   end offset after every call that returns;
//! - every aborted transaction with data in the log has an entry in the `.txnindex` of the
//!   segment holding its marker;
//! - a snapshot `<offset>.snapshot` holds the state as of `offset`; snapshots past the log
//!   end are deleted at open, so a log cut back by a crash never loads a state from its future;
//! - rebuilding reads at most the batches after the latest usable snapshot, which is written
//!   at every roll and every `flush_now`, and without any snapshot at most the last two
//!   segments (Kafka's bound for logs that predate snapshots).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use bytes::Bytes;

use crate::batch::{self, encode_batch, BatchFields, RecordBatch};
use crate::checkpoint;
use crate::error::LogError;
use crate::log::{AppendInfo, Log};
use crate::producer_state::{
    read_snapshot, AppendOrigin, EndTxnMarker, ProducerStateEntry, ProducerUpdates, StagedBatch,
};
use crate::records::encode_record;
use crate::segment::{file_name, parse_file_name};
use crate::txn_index::{self, AbortedTxn};

const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Attributes of a transaction marker batch: control and transactional.
const MARKER_ATTRIBUTES: i16 = 0x20 | 0x10;
/// Control batches are a few dozen bytes; a larger one is not read during a rebuild.
const CONTROL_BATCH_BYTES_MAX: usize = 1 << 16;
/// Expiry of idle producers runs at most this often (Kafka's
/// `producer.id.expiration.check.interval.ms` default).
const PRODUCER_EXPIRATION_CHECK_MS_MAX: i64 = 600_000;

/// What judging an append's producer batches decided.
pub(crate) enum Judged {
    /// A retry of a batch already in the log: answer with its offsets, write nothing.
    Duplicate(AppendInfo),
    /// Write the batches, then apply these updates.
    Append(ProducerUpdates),
}

/// Encodes a COMMIT or ABORT marker batch (Kafka's `EndTransactionMarker` in a control batch
/// of one record, with no sequence number).
pub fn marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    timestamp_ms: i64,
) -> Bytes {
    let (key, value) = marker.key_and_value();
    let mut payload = Vec::with_capacity(32);
    encode_record(&mut payload, 0, 0, 0, Some(&key), Some(&value), &[]);
    encode_batch(
        &BatchFields {
            base_offset: 0,
            leader_epoch: -1,
            attributes: MARKER_ATTRIBUTES,
            last_offset_delta: 0,
            base_timestamp: timestamp_ms,
            max_timestamp: timestamp_ms,
            producer_id,
            producer_epoch,
            base_sequence: -1,
            record_count: 1,
        },
        &payload,
    )
}

impl Log {
    // ------------------------------------------------------------ appends

    /// Judges the producer batches of an append whose offsets `validate` assigned (in
    /// `self.metas`, first batch at `base_offset`).
    pub(crate) fn judge_producers(
        &self,
        batches: &[u8],
        base_offset: i64,
        origin: AppendOrigin,
    ) -> Result<Judged, LogError> {
        let mut updates = ProducerUpdates::default();
        let partition = &self.tp;
        let mut first_offset = base_offset;
        for (item, meta) in batch::batches(batches).zip(self.metas.iter()) {
            let b = item.expect("validated batches are whole");
            let h = b.header();
            if h.producer_id >= 0 {
                if origin == AppendOrigin::Client && !h.is_control() {
                    if let Some(dup) = self.producers.find_duplicate(h) {
                        tracing::debug!(partition = %self.tp, producer_id = h.producer_id, sequence = h.base_sequence, "duplicate batch answered with its original offsets");
                        // Kafka reports the original batch's timestamp as its append time.
                        return Ok(Judged::Duplicate(AppendInfo {
                            base_offset: dup.first_offset,
                            last_offset: dup.last_offset,
                            log_append_time_ms: dup.timestamp_ms,
                            max_timestamp_ms: dup.timestamp_ms,
                            record_count: h.record_count.max(0) as u32,
                            duplicate: true,
                        }));
                    }
                }
                self.stage_batch(
                    &mut updates,
                    origin,
                    &b,
                    first_offset,
                    meta.last_offset,
                    meta.max_timestamp,
                    &partition,
                )?;
            }
            first_offset = meta.last_offset + 1;
        }
        Ok(Judged::Append(updates))
    }

    #[allow(clippy::too_many_arguments)]
    fn stage_batch(
        &self,
        updates: &mut ProducerUpdates,
        origin: AppendOrigin,
        b: &RecordBatch<'_>,
        first_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
        partition: &dyn std::fmt::Display,
    ) -> Result<(), LogError> {
        let h = b.header();
        if h.is_control() {
            let marker = EndTxnMarker::parse(b).map_err(|e| {
                LogError::invalid_record(format!("unreadable control batch for {partition}: {e}"))
            })?;
            match marker {
                Some(m) => self.producers.stage_marker(
                    updates,
                    origin,
                    h.producer_id,
                    h.producer_epoch,
                    m,
                    first_offset,
                    max_timestamp,
                    partition,
                ),
                None => Ok(()),
            }
        } else {
            self.producers.stage_data(
                updates,
                origin,
                StagedBatch::of(h, first_offset, last_offset, max_timestamp),
                partition,
            )
        }
    }

    /// Applies an append's producer updates once its bytes are in the log, recording each
    /// aborted transaction in the active segment's transaction index.
    pub(crate) fn apply_producer_updates(&mut self, updates: ProducerUpdates) {
        let leo = self.log_end_offset();
        if updates.is_empty() {
            self.producers.set_map_end_offset(leo);
            return;
        }
        for (txn, lso) in self.producers.apply(updates, leo) {
            if !txn.is_aborted {
                continue;
            }
            let entry = AbortedTxn {
                producer_id: txn.producer_id,
                first_offset: txn.first_offset,
                last_offset: txn.last_offset,
                last_stable_offset: lso,
            };
            if let Err(e) = self.active_mut().append_aborted(entry) {
                // Without the entry a read_committed reader would see aborted data: stop
                // appending until a reopen rebuilds the index from the log.
                let why = format!("cannot write the transaction index: {e}");
                tracing::error!(partition = %self.tp, "{why}");
                self.failed = Some(why);
            }
        }
    }

    /// Judges batches a leader already accepted (replication): nothing is refused, the state
    /// follows them.
    pub(crate) fn judge_replicated(&self, batches: &[u8]) -> ProducerUpdates {
        let mut updates = ProducerUpdates::default();
        let partition = &self.tp;
        for b in batch::batches(batches).flatten() {
            let h = b.header();
            if h.producer_id >= 0 {
                if let Err(e) = self.stage_batch(
                    &mut updates,
                    AppendOrigin::Replication,
                    &b,
                    h.base_offset,
                    h.last_offset(),
                    h.max_timestamp,
                    &partition,
                ) {
                    tracing::warn!(partition = %self.tp, "replicated batch: {e}");
                }
            }
        }
        updates
    }

    /// Writes a transaction marker (COMMIT or ABORT) for `producer_id`, as the transaction
    /// coordinator does at the end of a transaction. The producer's epoch and the
    /// coordinator epoch are checked against the state (a zombie coordinator or producer is
    /// refused).
    pub fn append_control(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        marker: EndTxnMarker,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        let bytes = marker_batch(producer_id, producer_epoch, marker, now_ms);
        self.append_with_origin(bytes, leader_epoch, now_ms, AppendOrigin::Coordinator)
    }

    // ------------------------------------------------------------ readers

    /// The last stable offset for a high watermark: read_committed readers stop at the first
    /// offset of the oldest transaction not yet complete below `high_watermark`, or at the
    /// high watermark (Kafka's `fetchLastStableOffsetMetadata`).
    pub fn last_stable_offset(&mut self, high_watermark: i64) -> i64 {
        let unstable = self.producers.first_unstable_offset(high_watermark);
        let lso = unstable.map_or(high_watermark, |u| u.min(high_watermark));
        lso.max(self.log_start_offset.min(high_watermark))
    }

    /// First offset of the oldest open transaction (compaction never passes it).
    pub fn first_open_transaction_offset(&self) -> Option<i64> {
        self.producers.first_ongoing_offset()
    }

    /// Whether `producer_id` has a transaction open in this partition.
    pub fn has_ongoing_transaction(&self, producer_id: i64) -> bool {
        self.producers.has_ongoing_txn(producer_id)
    }

    /// Every producer the partition knows (DescribeProducers).
    pub fn active_producers(&self) -> Vec<ProducerStateEntry> {
        self.producers.entries()
    }

    /// Whether `producer_id` at `producer_epoch` has a transaction open in this log (a batch of
    /// it appended since its last marker).
    pub fn in_transaction(&self, producer_id: i64, producer_epoch: i16) -> bool {
        self.producers.entry(producer_id).is_some_and(|e| {
            e.producer_epoch == producer_epoch && e.current_txn_first_offset.is_some()
        })
    }

    /// The aborted transactions that overlap `[from_offset, upper_offset)`, for a
    /// read_committed Fetch that returned the batches in that range (Kafka's
    /// `collectAbortedTransactions`). Reads the transaction indexes from the segment holding
    /// `from_offset` on, until an entry proves no later one can matter.
    pub fn aborted_transactions(
        &self,
        from_offset: i64,
        upper_offset: i64,
    ) -> Result<Vec<AbortedTxn>, LogError> {
        let mut out = Vec::new();
        if upper_offset <= from_offset {
            return Ok(out);
        }
        let start = self
            .segments
            .range(..=from_offset)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        for (_, seg) in self.segments.range(start..) {
            let read_from_file;
            let entries: &[AbortedTxn] = match &seg.files {
                Some(f) => &f.aborted,
                None => {
                    read_from_file = txn_index::read(&seg.txn_index_path())
                        .map_err(|e| self.io("read a transaction index", e))?;
                    &read_from_file
                }
            };
            let (found, complete) = txn_index::collect(entries, from_offset, upper_offset);
            out.extend(found);
            if complete {
                break;
            }
        }
        Ok(out)
    }

    // ------------------------------------------------------------ snapshots

    pub(crate) fn snapshot_path(&self, offset: i64) -> PathBuf {
        self.dir.join(file_name(offset, SNAPSHOT_SUFFIX))
    }

    /// The snapshot files in the partition directory, by offset.
    fn list_snapshots(&self) -> io::Result<BTreeMap<i64, PathBuf>> {
        let mut out = BTreeMap::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if let Some((offset, SNAPSHOT_SUFFIX)) = parse_file_name(&name) {
                out.insert(offset, entry.path());
            }
        }
        Ok(out)
    }

    /// Writes a snapshot of the producer state at the log end offset (skipped when the last
    /// one is already there). With `sync`, it is durable on return; without, a crash may leave
    /// it torn, which its CRC reveals at the next open (an older one is used then). Snapshots
    /// that are neither at a segment base nor the newest are removed.
    pub fn write_producer_snapshot(&mut self, sync: bool) -> Result<(), LogError> {
        let offset = self.log_end_offset();
        if self.last_snapshot_offset == Some(offset) {
            return Ok(());
        }
        let path = self.snapshot_path(offset);
        let bytes = self.producers.encode_snapshot();
        let written = if sync {
            checkpoint::write_atomic(&path, &bytes)
        } else {
            let tmp = path.with_extension("snapshot.tmp");
            fs::write(&tmp, &bytes).and_then(|()| fs::rename(&tmp, &path))
        };
        written.map_err(|e| self.io("write a producer snapshot", e))?;
        self.last_snapshot_offset = Some(offset);
        self.remove_stale_snapshots(offset)
    }

    /// Removes the snapshots that are neither at `newest` nor at a segment base.
    pub(crate) fn remove_stale_snapshots(&self, newest: i64) -> Result<(), LogError> {
        let stale: Vec<PathBuf> = self
            .list_snapshots()
            .map_err(|e| self.io("list producer snapshots", e))?
            .into_iter()
            .filter(|(o, _)| *o != newest && !self.segments.contains_key(o))
            .map(|(_, p)| p)
            .collect();
        for p in stale {
            if let Err(e) = fs::remove_file(&p) {
                tracing::warn!(partition = %self.tp, file = %p.display(), "cannot remove a producer snapshot: {e}");
            }
        }
        Ok(())
    }

    /// Removes the snapshot at `offset`, if any (its segment was deleted).
    pub(crate) fn remove_snapshot_at(&mut self, offset: i64) {
        let p = self.snapshot_path(offset);
        match fs::remove_file(&p) {
            Ok(()) => {
                if self.last_snapshot_offset == Some(offset) {
                    self.last_snapshot_offset = None;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(partition = %self.tp, file = %p.display(), "cannot remove a producer snapshot: {e}")
            }
        }
    }

    /// Forgets the producer state and every snapshot (the log was emptied).
    pub(crate) fn reset_producer_state(&mut self, offset: i64) -> Result<(), LogError> {
        let snaps = self
            .list_snapshots()
            .map_err(|e| self.io("list producer snapshots", e))?;
        for (_, p) in snaps {
            fs::remove_file(&p).map_err(|e| self.io("remove a producer snapshot", e))?;
        }
        self.last_snapshot_offset = None;
        self.producers.clear(offset);
        Ok(())
    }

    /// Expires idle producers when the check is due (from `maintenance`).
    pub(crate) fn expire_producers(&mut self, now_ms: i64) {
        let expiration_ms = self.config.producer_id_expiration_ms;
        let every = (expiration_ms / 2).clamp(1, PRODUCER_EXPIRATION_CHECK_MS_MAX);
        if now_ms.saturating_sub(self.last_producer_expiry_ms) < every {
            return;
        }
        self.last_producer_expiry_ms = now_ms;
        let removed = self.producers.remove_expired(now_ms, expiration_ms);
        if removed > 0 {
            tracing::debug!(partition = %self.tp, removed, "expired idle producer ids");
        }
    }

    // ------------------------------------------------------------ rebuild

    /// Rebuilds the producer state from the latest usable snapshot at or below the log end
    /// plus the batches after it, and the transaction indexes from the same point (at open
    /// and after truncation).
    pub(crate) fn load_producer_state(&mut self, now_ms: i64) -> Result<(), LogError> {
        let leo = self.log_end_offset();
        let first_base = *self.segments.keys().next().expect("a segment");
        let snaps = self
            .list_snapshots()
            .map_err(|e| self.io("list producer snapshots", e))?;
        let mut loaded = None;
        for (&offset, path) in snaps.iter().rev() {
            if offset > leo {
                // The log lost what this snapshot describes (a crash cut the tail).
                let _ = fs::remove_file(path);
                continue;
            }
            if offset < first_base {
                break;
            }
            match read_snapshot(path) {
                Ok(entries) => {
                    loaded = Some((offset, entries));
                    break;
                }
                Err(e) => {
                    tracing::warn!(partition = %self.tp, "ignoring an unreadable producer snapshot: {e}");
                    let _ = fs::remove_file(path);
                }
            }
        }
        let expiration_ms = self.config.producer_id_expiration_ms;
        let replay_from = match loaded {
            Some((offset, entries)) => {
                self.producers.load(entries, offset, now_ms, expiration_ms);
                self.last_snapshot_offset = Some(offset);
                offset
            }
            None => {
                let bases: Vec<i64> = self.segments.keys().copied().collect();
                let from = bases[bases.len().saturating_sub(2)].max(self.log_start_offset);
                self.producers.clear(from);
                self.last_snapshot_offset = None;
                from
            }
        };
        // Index entries from the replayed range are derived again by the replay.
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        for base in bases {
            if self.segment_end_offset(base) <= replay_from {
                continue;
            }
            self.segments
                .get_mut(&base)
                .expect("listed")
                .truncate_aborted(replay_from)
                .map_err(|e| LogError::io(&self.tp, "truncate a transaction index", e))?;
        }
        self.replay_producers(replay_from)?;
        self.producers.set_map_end_offset(leo);
        Ok(())
    }

    /// The offset where segment `base` ends (the next base, or the log end).
    fn segment_end_offset(&self, base: i64) -> i64 {
        self.segments
            .range(base + 1..)
            .next()
            .map_or(self.log_end_offset(), |(b, _)| *b)
    }

    /// Applies every producer batch at or after `from` to the state, as replication would.
    fn replay_producers(&mut self, from: i64) -> Result<(), LogError> {
        let bases: Vec<i64> = self
            .segments
            .keys()
            .copied()
            .filter(|&b| self.segment_end_offset(b) > from)
            .collect();
        let partition = self.tp.to_string();
        for base in bases {
            self.open_segment(base)?;
            let Log {
                segments,
                producers,
                tp,
                ..
            } = self;
            let seg = &segments[&base];
            let file = seg
                .log_file()
                .map_err(|e| LogError::io(tp, "open a segment", e))?;
            let start = if from > base {
                seg.index_position_for(from)
            } else {
                0
            };
            let mut aborted = Vec::new();
            let mut failure: Option<io::Error> = None;
            let mut buf = Vec::new();
            seg.scan_headers_at(start, seg.size, |pos, h| {
                if h.producer_id < 0 || h.last_offset() < from {
                    return false;
                }
                let mut updates = ProducerUpdates::default();
                let staged = if h.is_control() {
                    let size = h.size_bytes();
                    if size > CONTROL_BATCH_BYTES_MAX {
                        return false;
                    }
                    buf.resize(size, 0);
                    if let Err(e) = file.read_exact_at(&mut buf, pos) {
                        failure = Some(e);
                        return true;
                    }
                    match RecordBatch::parse(&buf).map(|b| EndTxnMarker::parse(&b)) {
                        Ok(Ok(Some(m))) => producers.stage_marker(
                            &mut updates,
                            AppendOrigin::Replication,
                            h.producer_id,
                            h.producer_epoch,
                            m,
                            h.base_offset,
                            h.max_timestamp,
                            &partition,
                        ),
                        _ => Ok(()),
                    }
                } else {
                    producers.stage_data(
                        &mut updates,
                        AppendOrigin::Replication,
                        StagedBatch::of(h, h.base_offset, h.last_offset(), h.max_timestamp),
                        &partition,
                    )
                };
                if let Err(e) = staged {
                    tracing::warn!(partition = %partition, "while rebuilding producer state: {e}");
                }
                for (txn, lso) in producers.apply(updates, h.next_offset()) {
                    if txn.is_aborted {
                        aborted.push(AbortedTxn {
                            producer_id: txn.producer_id,
                            first_offset: txn.first_offset,
                            last_offset: txn.last_offset,
                            last_stable_offset: lso,
                        });
                    }
                }
                false
            })
            .map_err(|e| LogError::io(&self.tp, "rebuild producer state", e))?;
            if let Some(e) = failure {
                return Err(self.io("rebuild producer state", e));
            }
            let seg = self.segments.get_mut(&base).expect("listed");
            for txn in aborted {
                seg.append_aborted(txn)
                    .map_err(|e| LogError::io(&self.tp, "write a transaction index", e))?;
            }
        }
        Ok(())
    }
}
