//! Retention and the log start offset: `retention` (retention.ms and retention.bytes),
//! `maintenance` (segments below the log start, flush.ms) and DeleteRecords.
//!
//! Invariants: only whole segments are deleted, oldest first, only below the high watermark
//! (Kafka's `deleteRetentionMsBreachedSegments` / `deleteRetentionSizeBreachedSegments` /
//! `deleteLogStartOffsetBreachedSegments`); retention may take the active segment, rolling a
//! new one first, so a log always has one; the log start offset only moves forward here and
//! the leader-epoch cache and high watermark follow it.

use crate::error::LogError;
use crate::log::Log;
use crate::segment::NO_TIMESTAMP;

/// What `maintenance` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceReport {
    pub rolled: bool,
    pub deleted_segments: usize,
    pub deleted_bytes: u64,
    pub log_start_offset: i64,
    pub flush_submitted: bool,
}

impl Log {
    /// DeleteRecords: moves the log start offset up to `offset` and deletes segments wholly
    /// below it. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, LogError> {
        let leo = self.log_end_offset();
        if offset > leo || offset < 0 {
            return Err(LogError::OffsetOutOfRange {
                partition: self.tp.to_string(),
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        if offset <= self.log_start_offset {
            return Ok(self.log_start_offset);
        }
        self.log_start_offset = offset;
        self.delete_segments_below_log_start()?;
        self.epochs
            .truncate_from_start(offset)
            .map_err(|e| self.io("write leader-epoch-checkpoint", e))?;
        self.high_watermark = self.high_watermark.max(offset).min(leo);
        Ok(self.log_start_offset)
    }

    /// Deletes segments whose every offset is below the log start offset (never the active).
    fn delete_segments_below_log_start(&mut self) -> Result<(usize, u64), LogError> {
        let mut deleted = (0, 0);
        loop {
            let bases: Vec<i64> = self.segments.keys().take(2).copied().collect();
            let [first, second] = bases[..] else { break };
            if second > self.log_start_offset {
                break;
            }
            deleted.1 += self.remove_segment(first)?;
            deleted.0 += 1;
        }
        Ok(deleted)
    }

    /// Periodic work, every tick: segments wholly below the log start offset go, `flush.ms`
    /// flushes, idle producers expire, the tail cache gives back what is over its share. Time
    /// and size retention is `retention`, on its own interval
    /// (`log.retention.check.interval.ms`), as in Kafka; `segment.ms` rolls at append
    /// (`Segment::should_roll`).
    pub fn maintenance(&mut self, now_ms: i64) -> Result<MaintenanceReport, LogError> {
        let mut report = MaintenanceReport::default();
        let (n, bytes) = self.delete_segments_below_log_start()?;
        report.deleted_segments += n;
        report.deleted_bytes += bytes;
        self.prune_pending_sync();
        if self.log_end_offset() > self.flush.flushed()
            && now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms
        {
            report.flush_submitted = self.request_flush(now_ms);
        }
        self.expire_producers(now_ms);
        // A cache that has not appended since other caches filled holds more than its share.
        self.tail.shrink_to_share();
        report.log_start_offset = self.log_start_offset;
        Ok(report)
    }

    /// The retention check (Kafka's `deleteOldSegments`): with `cleanup.policy` delete, whole
    /// segments go from the oldest while their newest record is older than `retention.ms` or
    /// the log without them is still at least `retention.bytes`, the active segment too (it is
    /// rolled first, so "purge by lowering retention.ms" empties a topic). Only segments every
    /// in-sync replica has (below the high watermark) go.
    pub fn retention(&mut self, now_ms: i64) -> Result<MaintenanceReport, LogError> {
        let mut report = MaintenanceReport::default();
        if self.config.cleanup_policy.deletes() {
            let (n, bytes, rolled) = self.apply_retention(now_ms)?;
            report.deleted_segments = n;
            report.deleted_bytes = bytes;
            report.rolled = rolled;
        }
        report.log_start_offset = self.log_start_offset;
        Ok(report)
    }

    fn apply_retention(&mut self, now_ms: i64) -> Result<(usize, u64, bool), LogError> {
        let mut deleted = (0usize, 0u64);
        let mut rolled = false;
        let retention_ms = self.config.retention_ms;
        let retention_bytes = self.config.retention_bytes;
        let mut size = self.size_bytes() as i64;
        loop {
            let active = self.active_base();
            let leo = self.log_end_offset();
            let Some((&base, seg)) = self.segments.iter().next() else {
                break;
            };
            let is_active = base == active;
            if is_active && seg.is_empty() {
                break;
            }
            let upper = match self.segments.range(base + 1..).next() {
                Some((&next, _)) => next,
                None => leo,
            };
            if self.high_watermark < upper {
                break;
            }
            let newest = if seg.max_timestamp == NO_TIMESTAMP {
                seg.created_ms
            } else {
                seg.max_timestamp
            };
            let by_time = retention_ms >= 0 && now_ms.saturating_sub(newest) > retention_ms;
            let by_size = retention_bytes >= 0 && size - seg.size as i64 >= retention_bytes;
            if !by_time && !by_size {
                break;
            }
            if is_active {
                // Kafka rolls when every segment is to go, so the log keeps an active one.
                self.roll(now_ms)?;
                rolled = true;
                continue;
            }
            let bytes = self.remove_segment(base)?;
            size -= bytes as i64;
            deleted.0 += 1;
            deleted.1 += bytes;
            self.log_start_offset = self.log_start_offset.max(upper);
        }
        if deleted.0 > 0 {
            self.epochs
                .truncate_from_start(self.log_start_offset)
                .map_err(|e| self.io("write leader-epoch-checkpoint", e))?;
            self.high_watermark = self.high_watermark.max(self.log_start_offset);
        }
        assert!(
            !self.segments.is_empty() && self.log_start_offset <= self.log_end_offset(),
            "retention keeps an active segment and the log start within the log of {}",
            self.tp
        );
        Ok((deleted.0, deleted.1, rolled))
    }
}
