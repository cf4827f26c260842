//! One segment: a `.log` file of whole v2 batches named by its base offset, with its offset
//! and time indexes.
//!
//! A segment is *open* when its indexes are loaded and its `.log` is a [`CachedFile`] (a
//! descriptor while the process-wide file cache holds one, reopened by path on use; index
//! files are opened only to be written); closed segments keep only metadata (size, largest
//! timestamp), so a log with many segments holds bounded memory, and a broker with many logs
//! a bounded number of descriptors. The active segment is always open.
//!
//! Invariants: `size` is the length of the valid prefix of the file, made of whole batches
//! with strictly increasing offsets that all lie in `[base_offset, base_offset + 2^32)`;
//! index entries point at batch starts inside `[0, size)`; `max_timestamp` is the largest
//! batch max-timestamp in the segment (-1 when it has none).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::{BatchHeader, RecordBatch, HEADER_BYTES};
use crate::config::LogConfig;
use crate::file_cache::{CachedFile, FileCache};
use crate::group_commit::SyncFile;
use crate::index::{read_last_time_entry, Index, OffsetEntry, TimeEntry};
use crate::recovery::{self, ScanResult, ScanStop};
use crate::txn_index::{self, AbortedTxn};

/// Kafka's "no timestamp" value.
pub const NO_TIMESTAMP: i64 = -1;

/// Header scans for reads fetch this many bytes per syscall.
const HEADER_SCAN_BYTES: usize = 4096;

/// Disk blocks are reserved ahead of the active segment's end once it holds this much, so that
/// appends land in allocated (unwritten) extents: ext4's delayed allocation otherwise reserves
/// and accounts every page on the appending thread (about a seventh of the write syscall's
/// cost in a 1 KiB produce profile). Small logs reserve nothing.
const PREALLOCATE_FROM_BYTES: u64 = 1 << 20;
/// The most reserved ahead at once; each reservation is as large as the segment already is.
const PREALLOCATE_MAX_BYTES: u64 = 64 << 20;

pub(crate) fn file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

/// Parses `00000000000000000123.log` (any of Kafka's suffixes) into its base offset.
pub(crate) fn parse_file_name(name: &str) -> Option<(i64, &str)> {
    let digits = name.get(..20)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, &name[20..]))
}

fn open_rw(path: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
}

/// A simulated write failure (tests): write `partial_bytes`, fail with ENOSPC, and leave the
/// partial bytes in place when `cut_back_fails`, as if the truncate had failed too.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WriteFault {
    pub partial_bytes: usize,
    pub cut_back_fails: bool,
}

/// What one appended batch contributes to the indexes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchMeta {
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub size: u32,
}

pub(crate) struct OpenFiles {
    /// The `.log`, open while the process-wide file cache holds it (see `file_cache.rs`).
    pub log: Arc<CachedFile>,
    pub offset_index: Index<OffsetEntry>,
    pub time_index: Index<TimeEntry>,
    /// The aborted transactions whose markers lie in this segment (`.txnindex`).
    pub aborted: Vec<AbortedTxn>,
}

pub(crate) struct Segment {
    pub base_offset: i64,
    dir: PathBuf,
    /// Bytes of whole valid batches.
    pub size: u64,
    /// Offset after the last batch (exact for the active segment; for a closed one the next
    /// segment's base offset, an upper bound that compaction gaps make inexact).
    pub next_offset: i64,
    pub max_timestamp: i64,
    /// Last offset of the batch holding `max_timestamp` (Kafka's "shallow" offset).
    pub offset_of_max_timestamp: i64,
    /// When the first batch was appended (wall clock): `segment.ms` counts from here when the
    /// first batch carries no timestamp, and time retention uses it for a segment without any.
    pub created_ms: i64,
    /// The first batch's largest timestamp (Kafka's `rollingBasedTimestamp`), from which
    /// `segment.ms` counts in record time; None until known (read from the file on first need).
    rolling_timestamp: Option<i64>,
    bytes_since_last_index_entry: u64,
    index_interval_bytes: u64,
    /// `segment.bytes`: reservations never reach past it.
    segment_bytes: u64,
    /// The file's blocks are reserved up to here (`fallocate` with KEEP_SIZE: the file's
    /// length stays `size`); `seal` and truncation release what lies past the end.
    reserved_to: u64,
    pub(crate) files: Option<OpenFiles>,
}

impl Segment {
    pub fn log_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, ".log"))
    }
    pub fn offset_index_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, ".index"))
    }
    pub fn time_index_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, ".timeindex"))
    }
    pub fn txn_index_path(&self) -> PathBuf {
        self.dir.join(file_name(self.base_offset, ".txnindex"))
    }

    /// Creates an empty segment (replacing leftover files of the same name).
    pub fn create(
        dir: &Path,
        base_offset: i64,
        now_ms: i64,
        config: &LogConfig,
    ) -> io::Result<Segment> {
        let mut seg = Segment::closed(dir, base_offset, 0, now_ms);
        for p in [
            seg.log_path(),
            seg.offset_index_path(),
            seg.time_index_path(),
        ] {
            let f = open_rw(&p, true)?;
            f.set_len(0)?;
        }
        txn_index::rewrite(&seg.txn_index_path(), &[])?;
        seg.next_offset = base_offset;
        seg.open(config)?;
        Ok(seg)
    }

    /// A segment known only by its metadata; `open` loads it.
    pub fn closed(dir: &Path, base_offset: i64, size: u64, created_ms: i64) -> Segment {
        Segment {
            base_offset,
            dir: dir.to_path_buf(),
            size,
            next_offset: base_offset,
            max_timestamp: NO_TIMESTAMP,
            offset_of_max_timestamp: base_offset,
            created_ms,
            rolling_timestamp: None,
            bytes_since_last_index_entry: 0,
            index_interval_bytes: LogConfig::default().index_interval_bytes,
            segment_bytes: LogConfig::default().segment_bytes,
            reserved_to: 0,
            files: None,
        }
    }

    /// Learns a closed segment's largest timestamp from the last time-index entry. Returns
    /// false when the time index is missing or unreadable (the segment then needs a rebuild).
    pub fn load_max_timestamp(&mut self) -> io::Result<bool> {
        let f = match File::open(self.time_index_path()) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        match read_last_time_entry(&f)? {
            Some(e) => {
                self.max_timestamp = e.timestamp;
                self.offset_of_max_timestamp = self.base_offset + e.relative_offset as i64;
                Ok(true)
            }
            None => Ok(f.metadata()?.len() == 0 && self.size == 0),
        }
    }

    pub fn is_open(&self) -> bool {
        self.files.is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Opens the files and loads the indexes, dropping index entries that disagree with the
    /// log. If the indexes were invalid, rebuilds them from the log.
    pub fn open(&mut self, config: &LogConfig) -> io::Result<()> {
        self.index_interval_bytes = config.index_interval_bytes;
        self.segment_bytes = config.segment_bytes;
        if self.files.is_some() {
            return Ok(());
        }
        let log = CachedFile::open(self.log_path(), FileCache::global())?;
        let size = self.size;
        let base = self.base_offset;
        let (offset_index, offsets_clean) = Index::<OffsetEntry>::open(
            &self.offset_index_path(),
            config.offset_index_entries_max(),
            |e| (e.position as u64) < size,
        )?;
        let (time_index, times_clean) = Index::<TimeEntry>::open(
            &self.time_index_path(),
            config.time_index_entries_max(),
            |e| e.timestamp >= NO_TIMESTAMP,
        )?;
        let aborted = txn_index::read(&self.txn_index_path())?;
        self.files = Some(OpenFiles {
            log,
            offset_index,
            time_index,
            aborted,
        });
        // Kafka's sanity check: the last offset-index entry must point at a batch whose last
        // offset is the entry's offset. A wrong index is rebuilt rather than trusted.
        let last_ok = match self
            .files
            .as_ref()
            .and_then(|f| f.offset_index.last().copied())
        {
            None => true,
            Some(e) => {
                let h = self.header_at(e.position as u64)?;
                h.is_some_and(|h| h.last_offset() == base + e.relative_offset as i64)
            }
        };
        // Data past one index interval but an empty index: the index file was lost.
        let index_missing = size > config.index_interval_bytes
            && self
                .files
                .as_ref()
                .is_some_and(|f| f.time_index.len() == 0 || f.offset_index.len() == 0);
        if !offsets_clean || !times_clean || !last_ok || index_missing {
            tracing::warn!(segment = %self.log_path().display(), "rebuilding index files that disagree with the log");
            self.recover(None, i64::MAX)?;
        }
        Ok(())
    }

    /// Closes the files (flushing pending index entries); outstanding `Arc<File>`s stay valid.
    pub fn close_files(&mut self) -> io::Result<()> {
        if let Some(mut f) = self.files.take() {
            f.offset_index.write_pending()?;
            f.time_index.write_pending()?;
        }
        Ok(())
    }

    pub fn files(&self) -> &OpenFiles {
        self.files.as_ref().expect("segment is open")
    }
    fn files_mut(&mut self) -> &mut OpenFiles {
        self.files.as_mut().expect("segment is open")
    }
    /// The `.log` file, reopened if the file cache had closed it; the descriptor stays open
    /// while the `Arc` lives.
    pub fn log_file(&self) -> io::Result<Arc<File>> {
        self.files().log.get()
    }

    /// Whether appending `bytes` more, whose largest timestamp is `max_timestamp`, would need a
    /// roll first (Kafka's `LogSegment.shouldRoll`). `segment.ms` is counted in record time:
    /// from the first batch's largest timestamp to the new batches' (a record stamped
    /// `segment.ms` after the segment's first rolls it, whatever the clock says); in wall time
    /// since the first append only when the first batch has no timestamp.
    pub fn should_roll(
        &mut self,
        config: &LogConfig,
        bytes: u64,
        last_offset: i64,
        max_timestamp: i64,
        now_ms: i64,
    ) -> io::Result<bool> {
        if self.is_empty() {
            return Ok(false);
        }
        let rolling = match self.rolling_timestamp {
            Some(ts) => ts,
            None => {
                let ts = self.header_at(0)?.map_or(NO_TIMESTAMP, |h| h.max_timestamp);
                self.rolling_timestamp = Some(ts);
                ts
            }
        };
        let waited_ms = if rolling >= 0 {
            max_timestamp.saturating_sub(rolling)
        } else {
            now_ms.saturating_sub(self.created_ms)
        };
        let f = self.files();
        Ok(self.size > config.segment_bytes.saturating_sub(bytes)
            || waited_ms > config.segment_ms
            || f.offset_index.is_full()
            || f.time_index.is_full()
            || last_offset - self.base_offset > i32::MAX as i64)
    }

    /// Writes `buf` (whole batches, offsets assigned) at the end of the file in one syscall and
    /// indexes it. On error the file is cut back to its old size; `Err((e, rolled_back))`.
    pub fn append(
        &mut self,
        buf: &[u8],
        metas: &[BatchMeta],
        now_ms: i64,
        fault: Option<WriteFault>,
    ) -> Result<(), (io::Error, bool)> {
        let position = self.size;
        // A file the cache cannot reopen (descriptors exhausted) fails the append before any
        // byte is written: nothing to cut back.
        let file = self.log_file().map_err(|e| (e, true))?;
        self.reserve_ahead(&file, position + buf.len() as u64);
        let result = match fault {
            None => file.write_all_at(buf, position),
            Some(f) => {
                let n = f.partial_bytes.min(buf.len());
                let _ = file.write_all_at(&buf[..n], position);
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            }
        };
        if let Err(e) = result {
            // Leave no partial batch visible: Kafka would mark the directory offline; we cut
            // the tail so the log stays usable for reads and later appends.
            let cut_back_fails = fault.is_some_and(|f| f.cut_back_fails);
            let rolled_back = !cut_back_fails && file.set_len(position).is_ok();
            self.reserved_to = 0;
            return Err((e, rolled_back));
        }
        if self.is_empty() {
            self.created_ms = now_ms;
            self.rolling_timestamp = metas.first().map(|m| m.max_timestamp);
        }
        let mut pos = position;
        let index_interval = self.index_interval_bytes;
        for m in metas {
            if m.max_timestamp > self.max_timestamp {
                self.max_timestamp = m.max_timestamp;
                self.offset_of_max_timestamp = m.last_offset;
            }
            // Kafka's rule (LogSegment.append): index a batch once more than
            // index.interval.bytes have been appended since the last entry.
            if self.bytes_since_last_index_entry > index_interval {
                self.add_index_entries(m.last_offset, pos);
                self.bytes_since_last_index_entry = 0;
            }
            pos += m.size as u64;
            self.bytes_since_last_index_entry += m.size as u64;
        }
        assert_eq!(
            pos,
            position + buf.len() as u64,
            "batch metadata must cover the written bytes"
        );
        self.size = pos;
        if let Some(m) = metas.last() {
            self.next_offset = m.last_offset + 1;
        }
        let f = self.files_mut();
        // Index writes failing is not fatal: the index is a prefix of the truth, and recovery
        // rebuilds what is missing.
        if let Err(e) = f
            .offset_index
            .maybe_write()
            .and_then(|_| f.time_index.maybe_write())
        {
            tracing::warn!(error = %e, "could not write index entries; recovery will rebuild them");
        }
        Ok(())
    }

    /// One index point: the offset entry for the batch at `position`, and a time entry if the
    /// largest timestamp so far grew (Kafka's `timeIndex.maybeAppend`).
    fn push_index_entries(&mut self, last_offset: i64, position: u64, max_ts: i64, max_off: i64) {
        let base = self.base_offset;
        let f = self.files_mut();
        f.offset_index.push(OffsetEntry {
            relative_offset: (last_offset - base) as u32,
            position: position as u32,
        });
        if max_ts > f.time_index.last().map_or(NO_TIMESTAMP, |e| e.timestamp) {
            f.time_index.push(TimeEntry {
                timestamp: max_ts,
                relative_offset: (max_off - base) as u32,
            });
        }
    }

    fn add_index_entries(&mut self, last_offset: i64, position: u64) {
        let (max_ts, max_off) = (self.max_timestamp, self.offset_of_max_timestamp);
        self.push_index_entries(last_offset, position, max_ts, max_off);
    }

    /// Reserves disk blocks past `end` (see [`PREALLOCATE_FROM_BYTES`]). Best effort: a file
    /// system without `fallocate`, or a full disk, just appends without a reservation.
    fn reserve_ahead(&mut self, file: &File, end: u64) {
        if end <= self.reserved_to || self.size < PREALLOCATE_FROM_BYTES {
            return;
        }
        let to = (end + self.size.min(PREALLOCATE_MAX_BYTES)).min(self.segment_bytes.max(end));
        let from = self.size.max(self.reserved_to);
        if to <= from {
            return;
        }
        use std::os::fd::AsRawFd;
        // SAFETY: fallocate on an open descriptor with in-range arguments touches no memory.
        let r = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                from as libc::off_t,
                (to - from) as libc::off_t,
            )
        };
        // On failure, try again only past the range asked for now.
        self.reserved_to = if r == 0 { to } else { end };
    }

    /// Gives back blocks reserved past the end of the file (a truncate to its own length).
    fn release_reservation(&mut self) -> io::Result<()> {
        if self.reserved_to > self.size {
            self.log_file()?.set_len(self.size)?;
        }
        self.reserved_to = 0;
        Ok(())
    }

    /// Called when the segment stops being active (roll, close): records the final largest
    /// timestamp in the time index (Kafka's `onBecomeInactiveSegment`), writes pending entries
    /// and releases reserved blocks.
    pub fn seal(&mut self) -> io::Result<()> {
        if self.files.is_none() {
            return Ok(());
        }
        self.release_reservation()?;
        let base = self.base_offset;
        let (max_ts, max_off) = (self.max_timestamp, self.offset_of_max_timestamp);
        let f = self.files_mut();
        if max_ts > f.time_index.last().map_or(NO_TIMESTAMP, |e| e.timestamp) {
            // Forced even when the index is "full": the entry lets open() learn the max timestamp.
            f.time_index.set_entries_max(usize::MAX);
            f.time_index.push(TimeEntry {
                timestamp: max_ts,
                relative_offset: (max_off - base) as u32,
            });
        }
        f.offset_index.write_pending()?;
        f.time_index.write_pending()
    }

    /// Writes pending index entries and fdatasyncs the log and both indexes.
    pub fn flush(&mut self) -> io::Result<()> {
        let Some(f) = self.files.as_mut() else {
            return Ok(());
        };
        f.offset_index.write_pending()?;
        f.time_index.write_pending()?;
        f.log.get()?.sync_data()?;
        f.offset_index.sync()?;
        f.time_index.sync()?;
        if !f.aborted.is_empty() {
            File::open(self.txn_index_path())?.sync_data()?;
        }
        Ok(())
    }

    /// Files that must be fdatasync'd for this segment to be durable (log first).
    pub fn sync_files(&mut self) -> io::Result<Vec<SyncFile>> {
        let txn_index = self.txn_index_path();
        let (offsets, times) = (self.offset_index_path(), self.time_index_path());
        let f = self.files_mut();
        f.offset_index.write_pending()?;
        f.time_index.write_pending()?;
        let mut files = vec![
            SyncFile::Log(f.log.clone()),
            SyncFile::Index(Arc::from(offsets)),
            SyncFile::Index(Arc::from(times)),
        ];
        if !f.aborted.is_empty() {
            files.push(SyncFile::Index(Arc::from(txn_index)));
        }
        Ok(files)
    }

    /// Records an aborted transaction whose marker was just appended to this segment.
    pub fn append_aborted(&mut self, txn: AbortedTxn) -> io::Result<()> {
        txn_index::append(&self.txn_index_path(), &txn)?;
        self.files_mut().aborted.push(txn);
        Ok(())
    }

    /// Drops the aborted transactions whose markers are at or after `offset`.
    pub fn truncate_aborted(&mut self, offset: i64) -> io::Result<()> {
        let path = self.txn_index_path();
        let mut from_file;
        let entries: &mut Vec<AbortedTxn> = match self.files.as_mut() {
            Some(f) => &mut f.aborted,
            None => {
                from_file = txn_index::read(&path)?;
                &mut from_file
            }
        };
        if entries.iter().any(|t| t.last_offset >= offset) {
            entries.retain(|t| t.last_offset < offset);
            txn_index::rewrite(&path, entries)?;
        }
        Ok(())
    }

    /// Reads the header of the batch at `position`, if a whole header lies before `size`.
    pub fn header_at(&self, position: u64) -> io::Result<Option<BatchHeader>> {
        if position + HEADER_BYTES as u64 > self.size {
            return Ok(None);
        }
        let mut b = [0u8; HEADER_BYTES];
        self.log_file()?.read_exact_at(&mut b, position)?;
        Ok(BatchHeader::parse(&b).ok())
    }

    /// Walks batch headers from `position` to `end` (reading a block per syscall) until `stop`
    /// says yes; returns that batch's position and header.
    pub fn scan_headers(
        &self,
        position: u64,
        end: u64,
        mut stop: impl FnMut(&BatchHeader) -> bool,
    ) -> io::Result<Option<(u64, BatchHeader)>> {
        self.scan_headers_at(position, end, |_, h| stop(h))
    }

    /// `scan_headers`, telling `stop` each batch's position too.
    pub fn scan_headers_at(
        &self,
        mut position: u64,
        end: u64,
        mut stop: impl FnMut(u64, &BatchHeader) -> bool,
    ) -> io::Result<Option<(u64, BatchHeader)>> {
        let file = self.log_file()?;
        let mut buf = [0u8; HEADER_SCAN_BYTES];
        let mut buf_pos = 0u64;
        let mut buf_len = 0usize;
        while position + HEADER_BYTES as u64 <= end {
            if !(position >= buf_pos && position + HEADER_BYTES as u64 <= buf_pos + buf_len as u64)
            {
                buf_len = (end - position).min(HEADER_SCAN_BYTES as u64) as usize;
                file.read_exact_at(&mut buf[..buf_len], position)?;
                buf_pos = position;
            }
            let at = (position - buf_pos) as usize;
            let h = BatchHeader::parse(&buf[at..buf_len]).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} at position {position}: {e}", self.log_path().display()),
                )
            })?;
            if position + h.size_bytes() as u64 > end {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: batch at {position} runs past the end of the segment",
                        self.log_path().display()
                    ),
                ));
            }
            if stop(position, &h) {
                return Ok(Some((position, h)));
            }
            position += h.size_bytes() as u64;
        }
        Ok(None)
    }

    /// The first batch whose last offset is at or above `offset`: its position and header.
    /// Starts at the index entry below `offset`, so it never scans the whole segment.
    pub fn find_batch(&self, offset: i64) -> io::Result<Option<(u64, BatchHeader)>> {
        let start = self.index_position_for(offset);
        self.scan_headers(start, self.size, |h| h.last_offset() >= offset)
    }

    /// Position from which a forward scan reaches the batch holding `offset`.
    pub fn index_position_for(&self, offset: i64) -> u64 {
        if offset <= self.base_offset {
            return 0;
        }
        let rel = (offset - self.base_offset).min(u32::MAX as i64) as u32;
        self.files()
            .offset_index
            .lookup(rel)
            .map_or(0, |e| e.position as u64)
    }

    /// A batch start at or below `position` (0 when the index has none), from which a forward
    /// header scan finds the last batch boundary below `position` within one index interval.
    pub fn index_position_at_or_below(&self, position: u64) -> u64 {
        self.files()
            .offset_index
            .lookup_position(position)
            .map_or(0, |e| e.position as u64)
    }

    /// The entry in the time index at or below `timestamp`, as (timestamp, absolute offset).
    pub fn time_lookup(&self, timestamp: i64) -> Option<(i64, i64)> {
        self.files()
            .time_index
            .lookup(timestamp)
            .map(|e| (e.timestamp, self.base_offset + e.relative_offset as i64))
    }

    /// Removes every batch whose last offset is at or above `offset` (Kafka truncates at the
    /// start of the batch holding `offset`). Returns the bytes removed.
    pub fn truncate_to(&mut self, offset: i64) -> io::Result<u64> {
        let Some((position, h)) = self.find_batch(offset)? else {
            return Ok(0);
        };
        let removed = self.size - position;
        self.log_file()?.set_len(position)?;
        self.size = position;
        self.reserved_to = 0;
        let base = self.base_offset;
        let f = self.files_mut();
        f.offset_index.truncate_to_position(position)?;
        f.time_index
            .truncate_to_offset((h.base_offset - base).max(0) as u32)?;
        self.truncate_aborted(h.base_offset)?;
        self.recompute_tail()?;
        Ok(removed)
    }

    /// The largest timestamp the time index knows, and its offset ((-1, base) when empty).
    fn indexed_max_timestamp(&self) -> (i64, i64) {
        let base = self.base_offset;
        self.files()
            .time_index
            .last()
            .map_or((NO_TIMESTAMP, base), |e| {
                (e.timestamp, base + e.relative_offset as i64)
            })
    }

    /// Re-derives `next_offset`, `max_timestamp` and the index cursor from the last index
    /// entry and the batches after it (a bounded scan).
    pub fn recompute_tail(&mut self) -> io::Result<()> {
        let base = self.base_offset;
        let f = self.files();
        let start = f.offset_index.last().map_or(0, |e| e.position as u64);
        let (mut max_ts, mut max_off) = self.indexed_max_timestamp();
        let mut next = if start == 0 {
            base
        } else {
            f.offset_index
                .last()
                .map_or(base, |e| base + e.relative_offset as i64 + 1)
        };
        self.scan_headers(start, self.size, |h| {
            if h.max_timestamp > max_ts {
                max_ts = h.max_timestamp;
                max_off = h.last_offset();
            }
            next = h.next_offset();
            false
        })?;
        self.next_offset = next;
        self.max_timestamp = max_ts;
        self.offset_of_max_timestamp = max_off;
        self.bytes_since_last_index_entry = self.size - start;
        Ok(())
    }

    /// Recovery: validates batches from the index entry below `recovery_point` (or from the
    /// start when `None`), truncates the file at the first bad batch, and rebuilds index
    /// entries for what it scanned. `max_last_offset` bounds the offsets a batch may carry.
    pub fn recover(
        &mut self,
        recovery_point: Option<i64>,
        max_last_offset: i64,
    ) -> io::Result<ScanResult> {
        let base = self.base_offset;
        let file_len = self.log_file()?.metadata()?.len();
        // The scan may use only index entries for batches wholly below the recovery point.
        let (start, kept_entry) = {
            let f = self.files_mut();
            match recovery_point {
                Some(rp) if rp > base => {
                    let rel = (rp - 1 - base).min(u32::MAX as i64) as u32;
                    let keep = f
                        .offset_index
                        .entries()
                        .partition_point(|e| e.relative_offset <= rel);
                    f.offset_index.truncate_entries(keep)?;
                    match f.offset_index.last().copied() {
                        Some(e) => {
                            f.time_index
                                .truncate_to_offset(e.relative_offset.saturating_add(1))?;
                            (e.position as u64, true)
                        }
                        None => {
                            f.time_index.clear()?;
                            (0, false)
                        }
                    }
                }
                _ => {
                    f.offset_index.clear()?;
                    f.time_index.clear()?;
                    (0, false)
                }
            }
        };
        if start > file_len {
            // The index claims more than the file holds: rebuild from scratch.
            return self.recover(None, max_last_offset);
        }
        let (mut max_ts, mut max_off) = self.indexed_max_timestamp();
        self.max_timestamp = max_ts;
        self.offset_of_max_timestamp = max_off;
        self.bytes_since_last_index_entry = 0;
        let log = self.log_file()?;
        let interval = self.index_interval_bytes;
        let mut first = true;
        let mut pending: Vec<(i64, u64, i64, i64)> = Vec::new();
        let mut since = 0u64;
        let max_last = max_last_offset.min(base + i32::MAX as i64);
        let result = recovery::scan(
            &*log,
            start,
            file_len,
            base,
            max_last,
            |pos, b: &RecordBatch<'_>| {
                let h = b.header();
                if h.max_timestamp > max_ts {
                    max_ts = h.max_timestamp;
                    max_off = h.last_offset();
                }
                // The batch at a kept entry's position is already indexed.
                let skip = first && kept_entry;
                first = false;
                if !skip && since > interval {
                    pending.push((h.last_offset(), pos, max_ts, max_off));
                    since = 0;
                }
                since += h.size_bytes() as u64;
            },
        )?;
        if result.batches == 0 && kept_entry {
            // The batch under the kept index entry is itself bad (a torn flush after power
            // loss): nothing at or after it can be trusted; rebuild from the start.
            return self.recover(None, max_last_offset);
        }
        for (last, pos, ts, off) in pending {
            self.push_index_entries(last, pos, ts, off);
        }
        if result.valid_end < file_len {
            tracing::warn!(
                segment = %self.log_path().display(),
                valid_bytes = result.valid_end,
                file_bytes = file_len,
                reason = ?result.stop,
                "truncating a torn or corrupt tail"
            );
            self.log_file()?.set_len(result.valid_end)?;
        }
        let f = self.files_mut();
        f.offset_index.write_pending()?;
        f.time_index.write_pending()?;
        self.size = result.valid_end;
        self.max_timestamp = max_ts;
        self.offset_of_max_timestamp = max_off;
        self.bytes_since_last_index_entry = since;
        self.next_offset = result.next_offset.unwrap_or(base);
        if result.stop != ScanStop::End && result.stop != ScanStop::TornTail {
            tracing::warn!(reason = ?result.stop, "recovery stopped at a bad batch");
        }
        Ok(result)
    }

    /// Re-reads the segment after its `.log` was replaced (compaction swap): rebuilds both
    /// indexes from the new bytes and syncs them.
    pub fn reload(&mut self, config: &LogConfig, max_last_offset: i64) -> io::Result<()> {
        self.files = None;
        self.size = fs::metadata(self.log_path())?.len();
        let next_offset = self.next_offset;
        self.open(config)?;
        self.recover(None, max_last_offset)?;
        self.flush()?;
        // A closed segment's `next_offset` stays the next segment's base (gaps are fine).
        self.next_offset = next_offset;
        Ok(())
    }

    /// Deletes the segment's files. Open handles (`LogSlice`s) keep the data readable.
    pub fn delete_files(mut self) -> io::Result<()> {
        self.files = None;
        for p in [
            self.log_path(),
            self.offset_index_path(),
            self.time_index_path(),
            self.txn_index_path(),
        ] {
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
