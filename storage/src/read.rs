//! Reading a log: Fetch (`read`), ListOffsets by timestamp (`offset_for_timestamp`,
//! `max_timestamp`) and OffsetForLeaderEpoch (`end_offset_for_epoch`).
//!
//! Invariants: a read returns whole batches starting with the one holding `from_offset`, none
//! with an offset at or past the upper bound, and never crosses a segment boundary; it reaches
//! its first batch through the offset index (a bounded header scan), never a scan of the
//! segment; the tail cache answers when it holds `from_offset`.

use std::io;
use std::os::unix::fs::FileExt;

use crate::batch::{BatchHeader, RecordBatch};
use crate::error::LogError;
use crate::log::{Log, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::records::for_each_record;
use crate::segment::NO_TIMESTAMP;
use crate::slice::LogSlice;
use crate::tail_cache::ReadBounds;

impl Log {
    /// Whole batches starting with the one containing `from_offset`, none with an offset at or
    /// past `max_offset`, at most `max_bytes` of them unless the first alone is larger and
    /// `min_one_batch` is set. Never crosses a segment boundary (the next read continues).
    pub fn read(
        &mut self,
        from_offset: i64,
        max_bytes: usize,
        max_offset: i64,
        min_one_batch: bool,
    ) -> Result<LogSlice, LogError> {
        let leo = self.log_end_offset();
        debug_assert!(
            self.log_start_offset <= leo,
            "log start past log end for {}",
            self.tp
        );
        if from_offset < self.log_start_offset || from_offset > leo {
            return Err(LogError::OffsetOutOfRange {
                partition: self.tp.to_string(),
                offset: from_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        let max_offset = max_offset.min(leo);
        if from_offset >= max_offset {
            return Ok(LogSlice::empty());
        }
        let bounds = ReadBounds {
            from_offset,
            max_bytes,
            max_offset,
            min_one_batch,
        };
        if let Some(bytes) = self.tail.read(bounds) {
            return Ok(LogSlice::memory(bytes));
        }
        let mut base = *self
            .segments
            .range(..=from_offset)
            .next_back()
            .map(|(b, _)| b)
            .unwrap_or_else(|| self.segments.keys().next().expect("a segment"));
        loop {
            self.open_segment(base)?;
            let seg = &self.segments[&base];
            let found = seg
                .find_batch(from_offset)
                .map_err(|e| self.io("read", e))?;
            let Some((position, h)) = found else {
                // Nothing at or after `from_offset` here (a compaction gap): try the next one.
                match self.segments.range(base + 1..).next() {
                    Some((&next, _)) => {
                        base = next;
                        continue;
                    }
                    None => return Ok(LogSlice::empty()),
                }
            };
            return self.slice_from(base, position, &h, bounds);
        }
    }

    fn slice_from(
        &self,
        base: i64,
        position: u64,
        first: &BatchHeader,
        b: ReadBounds,
    ) -> Result<LogSlice, LogError> {
        let seg = &self.segments[&base];
        if first.last_offset() >= b.max_offset {
            return Ok(LogSlice::empty());
        }
        let first_size = first.size_bytes();
        let file = seg.log_file().map_err(|e| self.io("open a segment", e))?;
        if first_size > b.max_bytes {
            if !b.min_one_batch {
                return Ok(LogSlice::empty());
            }
            return Ok(LogSlice::segment(
                file,
                position,
                first_size,
                first.base_offset,
                first.next_offset(),
            ));
        }
        // `end` is always a batch boundary and `upper` the offset after the batches before it,
        // so the slice holds whole batches exactly and can go to a socket unread.
        let mut end = seg.size;
        let mut upper = seg.next_offset;
        let limit = position + b.max_bytes as u64;
        if b.max_offset < seg.next_offset && seg.index_position_for(b.max_offset) < limit.min(end) {
            // The upper offset lies in this segment: stop at the batch that contains it.
            let stop = seg
                .scan_headers(
                    seg.index_position_for(b.max_offset).max(position),
                    end,
                    |h| h.last_offset() >= b.max_offset,
                )
                .map_err(|e| self.io("read", e))?;
            if let Some((p, h)) = stop {
                end = p;
                upper = h.base_offset;
            }
        }
        if limit < end {
            // The byte limit falls inside a batch: stop at the last boundary at or below it,
            // scanning from the index entry just below (one index interval of headers). The
            // first batch fits (checked above), so the scan never stops at `position`.
            let from = seg.index_position_at_or_below(limit).max(position);
            let stop = seg
                .scan_headers_at(from, end, |p, h| p + h.size_bytes() as u64 > limit)
                .map_err(|e| self.io("read", e))?;
            if let Some((p, h)) = stop {
                end = p;
                upper = h.base_offset;
            }
        }
        Ok(LogSlice::segment(
            file,
            position,
            (end - position) as usize,
            first.base_offset,
            upper,
        ))
    }

    /// The first record whose timestamp is at or after `ts_ms` (ListOffsets by timestamp):
    /// `(offset, timestamp)`. Also answers Kafka's special timestamps: -2 earliest, -1 latest
    /// (timestamp -1), -3 max timestamp.
    pub fn offset_for_timestamp(&mut self, ts_ms: i64) -> Result<Option<(i64, i64)>, LogError> {
        match ts_ms {
            EARLIEST_TIMESTAMP => return Ok(Some((self.log_start_offset, NO_TIMESTAMP))),
            LATEST_TIMESTAMP => return Ok(Some((self.log_end_offset(), NO_TIMESTAMP))),
            MAX_TIMESTAMP => return self.exact_max_timestamp(),
            t if t < 0 => return Ok(None),
            _ => {}
        }
        let candidates: Vec<i64> = self
            .segments
            .iter()
            .filter(|(_, s)| {
                s.max_timestamp >= ts_ms && s.size > 0 && s.next_offset > self.log_start_offset
            })
            .map(|(b, _)| *b)
            .collect();
        for base in candidates {
            self.open_segment(base)?;
            if let Some(found) = self
                .offset_for_timestamp_in(base, ts_ms)
                .map_err(|e| self.io("search by timestamp", e))?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    fn offset_for_timestamp_in(&self, base: i64, ts_ms: i64) -> io::Result<Option<(i64, i64)>> {
        let seg = &self.segments[&base];
        let start_offset = seg
            .time_lookup(ts_ms)
            .map_or(base, |(_, off)| off)
            .max(self.log_start_offset);
        let position = seg.index_position_for(start_offset);
        let log_start = self.log_start_offset;
        let Some((pos, h)) = seg.scan_headers(position, seg.size, |h| {
            h.max_timestamp >= ts_ms && h.last_offset() >= log_start
        })?
        else {
            return Ok(None);
        };
        let mut buf = vec![0u8; h.size_bytes()];
        seg.log_file()?.read_exact_at(&mut buf, pos)?;
        let fallback = Some((h.base_offset.max(log_start), h.max_timestamp));
        let Ok(b) = RecordBatch::parse(&buf) else {
            return Ok(fallback);
        };
        let found = for_each_record(&b, |offset, timestamp, _| {
            (timestamp >= ts_ms && offset >= log_start).then_some((offset, timestamp))
        });
        Ok(found.ok().flatten().or(fallback))
    }

    /// ListOffsets' max timestamp (-3): the largest timestamp in the log and the offset of the
    /// first record that carries it, found inside its batch (KIP-734; a batch's
    /// max timestamp need not be its last record's, e.g. timestamps 100, 400, 250 answer the
    /// second record).
    fn exact_max_timestamp(&mut self) -> Result<Option<(i64, i64)>, LogError> {
        let Some((batch_offset, ts)) = self.max_timestamp() else {
            return Ok(None);
        };
        let Some((&base, _)) = self.segments.range(..=batch_offset).next_back() else {
            return Ok(Some((batch_offset, ts)));
        };
        self.open_segment(base)?;
        let found = self
            .offset_for_timestamp_in(base, ts)
            .map_err(|e| self.io("search by timestamp", e))?;
        Ok(Some(
            found
                .filter(|(_, t)| *t == ts)
                .unwrap_or((batch_offset, ts)),
        ))
    }

    /// The largest timestamp in the log and the (last) offset of the batch holding it; see
    /// `offset_for_timestamp(MAX_TIMESTAMP)` for the exact record.
    pub fn max_timestamp(&self) -> Option<(i64, i64)> {
        let mut best: Option<(i64, i64)> = None;
        for s in self.segments.values() {
            if s.size == 0
                || s.max_timestamp == NO_TIMESTAMP
                || s.next_offset <= self.log_start_offset
            {
                continue;
            }
            if best.is_none_or(|(_, ts)| s.max_timestamp > ts) {
                best = Some((s.offset_of_max_timestamp, s.max_timestamp));
            }
        }
        best
    }

    /// OffsetForLeaderEpoch: `(epoch, end offset)` of the largest epoch at or below `epoch`.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }
}
