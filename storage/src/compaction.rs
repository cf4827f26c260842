//! Log compaction (`cleanup.policy=compact`): keep the latest record for every key, drop
//! tombstones older than `delete.retention.ms`, preserve offsets, and swap each cleaned
//! segment in crash-safely.
//!
//! One pass, after Kafka's `LogCleaner`:
//! 1. The cleanable range is every closed segment up to the first one holding a record younger
//!    than `min.compaction.lag.ms`. The active segment is never cleaned. Its *dirty* part is
//!    what no earlier pass has seen (from `first_dirty_offset`, Kafka's cleaner checkpoint,
//!    kept in memory here). Nothing dirty and no tombstone waiting to expire: nothing to do.
//! 2. Build a map key -> latest offset over the dirty part (bounded by
//!    `OFFSET_MAP_KEY_BYTES_MAX`; if the map fills, only the segments up to the last one it
//!    fully covers are cleaned this time).
//! 3. Rewrite each segment into `<base>.log.cleaned`, keeping a record iff it is the latest
//!    for its key (and, for a tombstone, younger than `delete.retention.ms`). A batch with
//!    every record kept is copied byte for byte; a partly kept batch is re-encoded with its
//!    original header (base offset, last offset delta, producer id/epoch/sequence, flags) and
//!    its original compression codec; a batch with nothing left is dropped, unless it carries a
//!    producer id, in which case an empty uncompressed batch is kept so that producer state
//!    (last offset and sequence) survives, as Kafka does. Control batches are always kept.
//!    Records without a key are always kept.
//!
//!    Transactions (Kafka's cleaner does the same): the cleanable range never reaches the
//!    first offset of an open transaction; batches of aborted transactions (found through the
//!    transaction indexes) neither enter the map nor survive the rewrite (their producer's
//!    empty batch does); markers are kept, so the transaction indexes stay true.
//! 4. Swap: fsync the `.cleaned` file, rename it to `.log.swap` (the commit point), fsync the
//!    directory, delete the old indexes, rename `.swap` over `.log`, fsync the directory,
//!    rebuild the indexes. Recovery completes a `.swap` it finds and discards `.cleaned` files,
//!    so a crash at any step leaves either the old or the new segment, never a mix.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use crate::batch::{encode_batch, BatchFields, Compression, RecordBatch};
use crate::checkpoint::sync_dir;
use crate::compression;
use crate::error::LogError;
use crate::log::Log;
use crate::records::for_each_record;
use crate::recovery;
use crate::segment::file_name;

/// Bytes of keys the offset map may hold (Kafka's `log.cleaner.dedupe.buffer.size` analogue).
pub const OFFSET_MAP_KEY_BYTES_MAX: usize = 128 << 20;
/// Output is written in chunks of this size.
const WRITE_CHUNK_BYTES: usize = 1 << 20;
/// Aborted transactions one pass takes into account; a range with more is cleaned later,
/// once fewer remain below it.
pub const ABORTED_TXNS_PER_PASS_MAX: usize = 1 << 20;

/// The aborted transactions of a cleanable range, by producer: (first offset, marker offset).
#[derive(Default)]
struct AbortedRanges(HashMap<i64, Vec<(i64, i64)>>);

impl AbortedRanges {
    /// Whether the data batch of `producer_id` starting at `base_offset` belongs to an aborted
    /// transaction.
    fn contains(&self, h: &crate::batch::BatchHeader) -> bool {
        if !h.is_transactional() || h.is_control() {
            return false;
        }
        self.0.get(&h.producer_id).is_some_and(|ranges| {
            ranges
                .iter()
                .any(|&(first, last)| first <= h.base_offset && h.base_offset < last)
        })
    }
}

/// Compaction progress of one log.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CleanerState {
    /// Every offset below this has been through a pass (its keys deduplicated).
    pub first_dirty_offset: i64,
    /// The last pass kept tombstones that will expire with time.
    pub tombstones_retained: bool,
}

/// What one compaction pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub segments_cleaned: usize,
    pub records_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl Log {
    /// Compacts the log if its cleanup policy includes `compact`.
    pub fn compact(&mut self, now_ms: i64) -> Result<(), LogError> {
        self.compact_with_report(now_ms).map(|_| ())
    }

    /// `compact`, reporting what it did.
    pub fn compact_with_report(&mut self, now_ms: i64) -> Result<CompactionReport, LogError> {
        let mut report = CompactionReport::default();
        if !self.config.cleanup_policy.compacts() {
            return Ok(report);
        }
        let lag_cutoff = now_ms.saturating_sub(self.config.min_compaction_lag_ms);
        let active = self.active_base();
        // An open transaction may still abort: nothing from its first offset on is cleaned.
        let open_txn = self.first_open_transaction_offset().unwrap_or(i64::MAX);
        let mut cleanable: Vec<i64> = Vec::new();
        for (&base, seg) in &self.segments {
            if base == active || seg.max_timestamp > lag_cutoff || self.segment_end(base) > open_txn
            {
                break;
            }
            cleanable.push(base);
        }
        // A segment is dirty if it holds offsets at or above `first_dirty_offset`.
        let first_dirty = self.cleaner.first_dirty_offset;
        let dirty_from = cleanable
            .iter()
            .position(|&b| self.segment_end(b) > first_dirty);
        if cleanable.is_empty() || (dirty_from.is_none() && !self.cleaner.tombstones_retained) {
            return Ok(report);
        }
        let range_end = self.segment_end(*cleanable.last().expect("non-empty"));
        let mut aborted = AbortedRanges::default();
        let found = self.aborted_transactions(self.log_start_offset, range_end)?;
        if found.len() > ABORTED_TXNS_PER_PASS_MAX {
            tracing::warn!(partition = %self.tp, aborted = found.len(), "too many aborted transactions to compact past; skipping this pass");
            return Ok(report);
        }
        for t in found {
            aborted
                .0
                .entry(t.producer_id)
                .or_default()
                .push((t.first_offset, t.last_offset));
        }
        // Pass 1: the latest offset of every key in the dirty part.
        let mut map: HashMap<Vec<u8>, i64> = HashMap::new();
        let mut key_bytes = 0usize;
        let mut mapped_through = dirty_from.map_or(cleanable.len(), |d| d);
        for &base in &cleanable[mapped_through..] {
            self.open_segment(base)?;
            let seg = &self.segments[&base];
            let file = seg.log_file()?;
            let mut full = false;
            recovery::scan(&*file, 0, seg.size, i64::MIN, i64::MAX, |_, b| {
                if b.header().is_control() || full || aborted.contains(b.header()) {
                    return;
                }
                let _ = for_each_record(b, |offset, _, r| {
                    if let Some(k) = r.key {
                        if key_bytes >= OFFSET_MAP_KEY_BYTES_MAX {
                            full = true;
                            return Some(());
                        }
                        if map.insert(k.to_vec(), offset).is_none() {
                            key_bytes += k.len();
                        }
                    }
                    None::<()>
                });
            })
            .map_err(|e| self.io("compaction scan", e))?;
            if full {
                break;
            }
            mapped_through += 1;
        }
        cleanable.truncate(mapped_through);
        // Pass 2: rewrite and swap each segment.
        let mut tombstones_retained = false;
        let delete_horizon = now_ms.saturating_sub(self.config.delete_retention_ms);
        for &base in &cleanable {
            self.open_segment(base)?;
            let next_base = *self
                .segments
                .range(base + 1..)
                .next()
                .map(|(b, _)| b)
                .expect("the active segment follows");
            let (before, after, removed, tombstones) = self
                .clean_segment(base, &map, &aborted, delete_horizon)
                .map_err(|e| self.io("compaction", e))?;
            report.segments_cleaned += 1;
            tombstones_retained |= tombstones;
            report.records_removed += removed;
            report.bytes_before += before;
            report.bytes_after += after;
            let config = self.config.clone();
            let seg = self.segments.get_mut(&base).expect("segment");
            seg.reload(&config, next_base - 1)
                .map_err(|e| LogError::io(&self.tp, "reload a cleaned segment", e))?;
            self.open_closed.retain(|&b| b != base);
            self.segments
                .get_mut(&base)
                .expect("segment")
                .close_files()
                .map_err(|e| self.io("compaction", e))?;
        }
        if let Some(&last) = cleanable.last() {
            self.cleaner.first_dirty_offset =
                self.cleaner.first_dirty_offset.max(self.segment_end(last));
        }
        self.cleaner.tombstones_retained = tombstones_retained;
        // The cache may hold records that were just cleaned away.
        self.tail.clear();
        Ok(report)
    }

    /// The offset where the segment at `base` ends: the next segment's base offset.
    fn segment_end(&self, base: i64) -> i64 {
        self.segments
            .range(base + 1..)
            .next()
            .map_or(self.log_end_offset(), |(b, _)| *b)
    }

    /// Writes the cleaned copy of segment `base` and swaps it in. Returns (bytes before,
    /// bytes after, records removed, whether tombstones were kept).
    fn clean_segment(
        &self,
        base: i64,
        map: &HashMap<Vec<u8>, i64>,
        aborted: &AbortedRanges,
        delete_horizon: i64,
    ) -> io::Result<(u64, u64, u64, bool)> {
        let seg = &self.segments[&base];
        let file = seg.log_file()?;
        let dir = &self.dir;
        let cleaned_path = dir.join(file_name(base, ".log.cleaned"));
        let mut out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&cleaned_path)?;
        let mut buf: Vec<u8> = Vec::with_capacity(WRITE_CHUNK_BYTES);
        let mut written = 0u64;
        let mut removed = 0u64;
        let mut tombstones = false;
        let mut failure: Option<io::Error> = None;
        recovery::scan(&*file, 0, seg.size, i64::MIN, i64::MAX, |_, b| {
            if failure.is_some() {
                return;
            }
            match clean_batch(b, map, aborted.contains(b.header()), delete_horizon) {
                Ok((Cleaned::Keep, t)) => {
                    buf.extend_from_slice(b.as_bytes());
                    tombstones |= t;
                }
                Ok((Cleaned::Rewritten(bytes, n), t)) => {
                    buf.extend_from_slice(&bytes);
                    removed += n;
                    tombstones |= t;
                }
                Ok((Cleaned::Drop(n), _)) => removed += n,
                Err(e) => failure = Some(e),
            }
            if buf.len() >= WRITE_CHUNK_BYTES {
                if let Err(e) = out.write_all(&buf) {
                    failure = Some(e);
                }
                written += buf.len() as u64;
                buf.clear();
            }
        })?;
        if let Some(e) = failure {
            let _ = fs::remove_file(&cleaned_path);
            return Err(e);
        }
        out.write_all(&buf)?;
        written += buf.len() as u64;
        out.sync_all()?;
        drop(out);
        swap_in(dir, base)?;
        Ok((seg.size, written, removed, tombstones))
    }
}

enum Cleaned {
    Keep,
    Rewritten(bytes::Bytes, u64),
    Drop(u64),
}

fn clean_batch(
    b: &RecordBatch<'_>,
    map: &HashMap<Vec<u8>, i64>,
    aborted: bool,
    delete_horizon: i64,
) -> io::Result<(Cleaned, bool)> {
    let h = *b.header();
    if h.is_control() {
        return Ok((Cleaned::Keep, false));
    }
    let mut kept_payload: Vec<u8> = Vec::new();
    let mut kept = 0i32;
    let mut max_timestamp = i64::MIN;
    let mut tombstones = false;
    let parsed = for_each_record(b, |offset, timestamp, r| {
        let keep = !aborted
            && match r.key {
                None => true,
                Some(k) => {
                    map.get(k).is_none_or(|&latest| latest == offset)
                        && !(r.value.is_none() && timestamp < delete_horizon)
                }
            };
        if keep {
            tombstones |= r.key.is_some() && r.value.is_none();
            kept_payload.extend_from_slice(r.encoded);
            kept += 1;
            max_timestamp = max_timestamp.max(timestamp);
        }
        None::<()>
    });
    if parsed.is_err() {
        // Records we cannot read are kept as they are: compaction never loses what it cannot judge.
        return Ok((Cleaned::Keep, false));
    }
    if kept == h.record_count {
        return Ok((Cleaned::Keep, tombstones));
    }
    let removed = (h.record_count - kept) as u64;
    let mut fields = BatchFields {
        base_offset: h.base_offset,
        leader_epoch: h.partition_leader_epoch,
        attributes: h.attributes,
        last_offset_delta: h.last_offset_delta,
        base_timestamp: h.base_timestamp,
        max_timestamp: if h.is_log_append_time() || kept == 0 {
            h.max_timestamp
        } else {
            max_timestamp
        },
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        record_count: kept,
    };
    if kept == 0 {
        if h.producer_id < 0 {
            return Ok((Cleaned::Drop(removed), false));
        }
        // Empty batches are written uncompressed, as Kafka's `writeEmptyHeader` does.
        fields.attributes &= !0x07;
        return Ok((
            Cleaned::Rewritten(encode_batch(&fields, &[]), removed),
            false,
        ));
    }
    let codec = h.compression().unwrap_or(Compression::None);
    let payload = compression::compress(codec, &kept_payload)?;
    Ok((
        Cleaned::Rewritten(encode_batch(&fields, &payload), removed),
        tombstones,
    ))
}

/// The crash-safe swap of `<base>.log.cleaned` over `<base>.log`.
fn swap_in(dir: &Path, base: i64) -> io::Result<()> {
    let cleaned = dir.join(file_name(base, ".log.cleaned"));
    let swap = dir.join(file_name(base, ".log.swap"));
    fs::rename(&cleaned, &swap)?;
    sync_dir(dir)?;
    for suffix in [".index", ".timeindex"] {
        match fs::remove_file(dir.join(file_name(base, suffix))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    fs::rename(&swap, dir.join(file_name(base, ".log")))?;
    sync_dir(dir)?;
    File::open(dir.join(file_name(base, ".log")))?.sync_all()
}
