//! Recovery. The scan walks batches from a starting position, validates length, magic and
//! CRC of each, and reports where the valid prefix ends; `Segment::recover` truncates the file
//! there and rebuilds the indexes from the batches it saw. `Log::recover` decides, at open,
//! which segments are trusted (flushed before the recovery point, or a clean shutdown) and
//! scans only the rest, starting at the index entry below the recovery point.
//!
//! Invariants: every length read from the bytes is checked against the bytes that remain
//! before it is used; a batch is accepted only if its offsets follow the previous batch's
//! (strictly increasing, no overlap) and fit the segment's 32-bit relative offsets; memory
//! use is one chunk buffer plus at most one batch, and a batch is never larger than the
//! bytes that remain in the file.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::batch::{BatchHeader, RecordBatch, HEADER_BYTES};
use crate::log::{Log, OpenHints};
use crate::segment;

/// Bytes read per syscall while scanning.
pub(crate) const SCAN_CHUNK_BYTES: usize = 1 << 20;

/// Something batches can be read from by position: a segment file, or bytes in memory.
pub(crate) trait ReadAt {
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()>;
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, pos)
    }
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        let start = usize::try_from(pos).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = self
            .get(
                start
                    ..start
                        .checked_add(buf.len())
                        .ok_or(io::ErrorKind::UnexpectedEof)?,
            )
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// Why the scan stopped before the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanStop {
    /// Reached `end` exactly after a whole batch.
    End,
    /// Fewer bytes left than the next batch needs: a torn write.
    TornTail,
    /// A batch failed validation (length, magic, codec, CRC).
    Corrupt(String),
    /// The batch's offsets do not follow the previous batch's.
    OffsetOrder {
        base_offset: i64,
        expected_at_least: i64,
    },
}

/// The outcome of a scan: the valid prefix is `[start, valid_end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanResult {
    pub valid_end: u64,
    pub batches: u64,
    /// Offset after the last valid batch, if any batch was valid.
    pub next_offset: Option<i64>,
    pub stop: ScanStop,
}

/// Scans `[start, end)` of `src`, calling `on_batch(position, batch)` for every valid batch.
/// `min_base_offset` is the lowest base offset the first batch may have; `max_last_offset` the
/// highest last offset any batch may have (relative offsets must fit the index format).
pub(crate) fn scan<R: ReadAt + ?Sized>(
    src: &R,
    start: u64,
    end: u64,
    min_base_offset: i64,
    max_last_offset: i64,
    mut on_batch: impl FnMut(u64, &RecordBatch<'_>),
) -> io::Result<ScanResult> {
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = start;
    let mut pos = start;
    let mut expected = min_base_offset;
    let mut batches = 0u64;
    let mut next_offset = None;
    let stop = loop {
        if pos >= end {
            break ScanStop::End;
        }
        let remaining = end - pos;
        if remaining < HEADER_BYTES as u64 {
            break ScanStop::TornTail;
        }
        // Make sure the header is in the buffer.
        let in_buf = |pos: u64, len: u64, buf: &Vec<u8>, buf_start: u64| {
            pos >= buf_start && pos + len <= buf_start + buf.len() as u64
        };
        if !in_buf(pos, HEADER_BYTES as u64, &buf, buf_start) {
            let n = remaining.min(SCAN_CHUNK_BYTES as u64) as usize;
            buf.resize(n, 0);
            src.read_exact_at(&mut buf, pos)?;
            buf_start = pos;
        }
        let at = (pos - buf_start) as usize;
        let header = match BatchHeader::parse(&buf[at..]) {
            Ok(h) => h,
            Err(e) => break ScanStop::Corrupt(e.to_string()),
        };
        let size = header.size_bytes() as u64;
        if size > remaining {
            break ScanStop::TornTail;
        }
        if !in_buf(pos, size, &buf, buf_start) {
            // The batch is checked to fit in the file, so this allocation is bounded by it.
            let n = remaining.min((SCAN_CHUNK_BYTES as u64).max(size)) as usize;
            buf.resize(n, 0);
            src.read_exact_at(&mut buf, pos)?;
            buf_start = pos;
        }
        let at = (pos - buf_start) as usize;
        let batch = match RecordBatch::parse(&buf[at..at + size as usize]) {
            Ok(b) => b,
            Err(e) => break ScanStop::Corrupt(e.to_string()),
        };
        if let Err(e) = batch.validate_integrity() {
            break ScanStop::Corrupt(e.to_string());
        }
        let h = batch.header();
        if h.base_offset < expected || h.last_offset() > max_last_offset {
            break ScanStop::OffsetOrder {
                base_offset: h.base_offset,
                expected_at_least: expected,
            };
        }
        on_batch(pos, &batch);
        expected = h.next_offset();
        next_offset = Some(expected);
        batches += 1;
        pos += size;
        if buf.len() > SCAN_CHUNK_BYTES {
            // Do not keep a large batch's buffer around.
            buf = Vec::new();
        }
    };
    Ok(ScanResult {
        valid_end: pos,
        batches,
        next_offset,
        stop,
    })
}

/// Scans bytes in memory from position 0 (the fuzz target and tests use it). Returns the
/// length of the valid prefix.
pub fn scan_bytes(bytes: &[u8]) -> ScanResult {
    scan(bytes, 0, bytes.len() as u64, i64::MIN, i64::MAX, |_, _| {})
        .expect("reading from memory within bounds cannot fail")
}

/// Log recovery at open: which segments to trust, which to scan, and from where.
impl Log {
    pub(crate) fn recover(&mut self, hints: OpenHints) -> io::Result<()> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let last = *bases.last().expect("a segment");
        // With a clean shutdown everything was flushed: only the active segment's tail after
        // its last index entry is looked at (headers, no CRC).
        let recovery_point = if hints.clean_shutdown {
            i64::MAX
        } else {
            hints.recovery_point.unwrap_or(0)
        };
        for (i, &base) in bases.iter().enumerate() {
            let next_base = bases.get(i + 1).copied().unwrap_or(i64::MAX);
            let config = self.config.clone();
            let seg = self.segments.get_mut(&base).expect("listed");
            if next_base <= recovery_point && base != last {
                // Flushed before the crash: trust it, learn its max timestamp cheaply.
                if !seg.load_max_timestamp()? {
                    seg.open(&config)?;
                    seg.recompute_tail()?;
                    seg.next_offset = next_base;
                    seg.close_files()?;
                }
                continue;
            }
            seg.open(&config)?;
            if base == last && hints.clean_shutdown {
                if seg.recompute_tail().is_ok() && seg.next_offset >= seg.base_offset {
                    break;
                }
                tracing::warn!(partition = %self.tp, "clean-shutdown log has a bad tail; recovering it");
            }
            let from = (recovery_point > base && !hints.clean_shutdown).then_some(recovery_point);
            let max_last = next_base.saturating_sub(1);
            let result = seg.recover(from, max_last)?;
            seg.flush()?;
            let truncated = result.valid_end < seg.log_file()?.metadata()?.len()
                || result.stop != crate::recovery::ScanStop::End;
            if base != last {
                seg.next_offset = next_base;
                seg.close_files()?;
            }
            if truncated && base != last {
                // Kafka deletes every segment after a corrupt one: their offsets can no longer
                // follow on densely.
                tracing::warn!(partition = %self.tp, segment = base, "deleting segments after a corrupt batch");
                let later: Vec<i64> = self.segments.range(base + 1..).map(|(b, _)| *b).collect();
                for b in later {
                    if let Some(s) = self.segments.remove(&b) {
                        s.delete_files()?;
                    }
                }
                let seg = self.segments.get_mut(&base).expect("kept");
                seg.open(&config)?;
                seg.recompute_tail()?;
                break;
            }
        }
        let config = self.config.clone();
        let active = self.active_mut();
        active.open(&config)?;
        Ok(())
    }
}

/// Tidies a partition directory before loading: finishes or discards compaction swaps, removes
/// temporary and deleted files. Returns the segments as (base offset, size, mtime ms).
pub(crate) fn prepare_directory(dir: &Path) -> io::Result<Vec<(i64, u64, i64)>> {
    let mut names: Vec<String> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    // A `.swap` is a cleaned segment that was fully written and synced: complete the swap.
    for name in &names {
        if let Some(stem) = name.strip_suffix(".swap") {
            fs::rename(dir.join(name), dir.join(stem))?;
            if let Some(base) = stem.strip_suffix(".log") {
                // The replaced segment's indexes no longer match: drop them to be rebuilt.
                for suffix in [".index", ".timeindex"] {
                    let p = dir.join(format!("{base}{suffix}"));
                    if !names.iter().any(|n| n == &format!("{base}{suffix}.swap")) {
                        let _ = fs::remove_file(p);
                    }
                }
            }
        }
    }
    let mut segments = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.ends_with(".cleaned") || name.ends_with(".deleted") || name.ends_with(".tmp") {
            fs::remove_file(entry.path())?;
            continue;
        }
        if let Some((base, ".log")) = segment::parse_file_name(&name) {
            let meta = entry.metadata()?;
            let mtime_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as i64);
            segments.push((base, meta.len(), mtime_ms));
        }
    }
    segments.sort_unstable();
    // Orphan indexes of missing logs are harmless; they are overwritten when a segment of that
    // base is created.
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::BatchBuilder;

    fn log_of(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            out.extend_from_slice(
                &BatchBuilder::new()
                    .base_offset(i as i64 * 2)
                    .records(2, 10)
                    .build(),
            );
        }
        out
    }

    #[test]
    fn valid_log_scans_to_the_end() {
        let bytes = log_of(5);
        let r = scan_bytes(&bytes);
        assert_eq!(r.stop, ScanStop::End);
        assert_eq!(r.valid_end, bytes.len() as u64);
        assert_eq!(r.batches, 5);
        assert_eq!(r.next_offset, Some(10));
    }

    #[test]
    fn every_cut_point_stops_at_the_last_whole_batch() {
        let bytes = log_of(3);
        let one = bytes.len() / 3;
        for cut in 0..bytes.len() {
            let r = scan_bytes(&bytes[..cut]);
            assert_eq!(r.valid_end as usize, cut / one * one, "cut at {cut}");
        }
    }

    #[test]
    fn a_flipped_byte_stops_the_scan_at_that_batch() {
        let mut bytes = log_of(3);
        let one = bytes.len() / 3;
        bytes[one + 70] ^= 0x40;
        let r = scan_bytes(&bytes);
        assert_eq!(r.valid_end as usize, one);
        assert!(matches!(r.stop, ScanStop::Corrupt(_)));
    }

    #[test]
    fn overlapping_offsets_stop_the_scan() {
        let mut bytes = log_of(2);
        bytes.extend_from_slice(&BatchBuilder::new().base_offset(1).records(1, 1).build());
        let r = scan_bytes(&bytes);
        assert_eq!(r.batches, 2);
        assert!(matches!(r.stop, ScanStop::OffsetOrder { .. }));
    }

    #[test]
    fn a_huge_claimed_length_is_a_torn_tail_not_an_allocation() {
        let mut bytes = log_of(1);
        bytes[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        let r = scan_bytes(&bytes);
        assert_eq!(r.valid_end, 0);
        assert_eq!(r.stop, ScanStop::TornTail);
    }
}
