//! The sparse offset index (`.index`) and time index (`.timeindex`) of one segment, in
//! Kafka's file formats.
//!
//! - Offset index entry, 8 bytes: relative offset u32 (the *last* offset of the indexed batch
//!   minus the segment's base offset, as Kafka's `LogSegment.append` records it), then the
//!   byte position u32 of that batch in the `.log` file.
//! - Time index entry, 12 bytes: timestamp i64, then relative offset u32 of the batch that
//!   holds the largest timestamp seen so far.
//!
//! Entries live in memory (a `Vec`) and are written to the file in order with positional
//! writes; `pending` entries are not yet in the file. No descriptor is kept: the file is opened
//! for each write, truncation or sync (every 64 entries, at roll, flush and close), so an index
//! costs no file handle between them (see `file_cache.rs`). An index on disk is always a prefix of
//! the in-memory one, so a crash leaves a short index, never a wrong one; recovery validates
//! what it loads and rebuilds from the last trustworthy entry.
//!
//! Invariants: offsets and positions strictly increase in the offset index; timestamps strictly
//! and offsets weakly increase in the time index; the entry count never exceeds the limit
//! derived from `segment.index.bytes`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// An index file may never hold more entries than this, whatever its size on disk claims
/// (1 GiB of 8-byte entries); larger files are treated as corrupt.
pub const INDEX_ENTRIES_HARD_MAX: usize = 1 << 27;

/// How an entry is laid out on disk.
pub(crate) trait Entry: Copy + std::fmt::Debug {
    const BYTES: usize;
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(b: &[u8]) -> Self;
    /// Whether `next` may follow `self`.
    fn precedes(&self, next: &Self) -> bool;
}

/// Offset-index entry (relative to the segment's base offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

impl Entry for OffsetEntry {
    const BYTES: usize = 8;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        OffsetEntry {
            relative_offset: u32::from_be_bytes(b[0..4].try_into().expect("4 bytes")),
            position: u32::from_be_bytes(b[4..8].try_into().expect("4 bytes")),
        }
    }
    fn precedes(&self, next: &Self) -> bool {
        self.relative_offset < next.relative_offset && self.position < next.position
    }
}

/// Time-index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

impl Entry for TimeEntry {
    const BYTES: usize = 12;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        TimeEntry {
            timestamp: i64::from_be_bytes(b[0..8].try_into().expect("8 bytes")),
            relative_offset: u32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
        }
    }
    fn precedes(&self, next: &Self) -> bool {
        self.timestamp < next.timestamp && self.relative_offset <= next.relative_offset
    }
}

/// One index file and its entries.
pub(crate) struct Index<E: Entry> {
    path: PathBuf,
    entries: Vec<E>,
    /// Entries `[..written]` are in the file.
    written: usize,
    /// Bytes the file holds (`written * E::BYTES` once consistent).
    file_bytes: u64,
    entries_max: usize,
}

/// Pending entries are written once this many accumulate (or at roll, flush and close), so an
/// append usually costs one write syscall and recovery rescans at most this many entries.
pub(crate) const PENDING_ENTRIES_MAX: usize = 64;

impl<E: Entry> Index<E> {
    /// Opens (creating if missing) and loads an index file. Entries are kept up to the first
    /// one that breaks the ordering invariant or `accept`; the rest of the file is dropped.
    /// Returns the index and whether the file was entirely valid.
    pub fn open(
        path: &Path,
        entries_max: usize,
        accept: impl Fn(&E) -> bool,
    ) -> io::Result<(Index<E>, bool)> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        let whole_entries = (len / E::BYTES as u64) as usize;
        let mut clean = len % E::BYTES as u64 == 0;
        if whole_entries > INDEX_ENTRIES_HARD_MAX {
            clean = false;
        }
        // Read no more than the configured size allows (+1 for the entry `seal` may force in).
        let count = whole_entries
            .min(entries_max.saturating_add(1))
            .min(INDEX_ENTRIES_HARD_MAX);
        if count < whole_entries {
            clean = false;
        }
        let mut raw = vec![0u8; count * E::BYTES];
        file.read_exact_at(&mut raw, 0)?;
        let mut entries: Vec<E> = Vec::with_capacity(count);
        for chunk in raw.chunks_exact(E::BYTES) {
            let e = E::decode(chunk);
            let ordered = entries.last().is_none_or(|last| last.precedes(&e));
            if !ordered || !accept(&e) {
                clean = false;
                break;
            }
            entries.push(e);
        }
        drop(file);
        let mut index = Index {
            path: path.to_path_buf(),
            written: entries.len(),
            entries,
            file_bytes: len,
            entries_max,
        };
        if !clean {
            index.truncate_entries(index.entries.len())?;
        }
        Ok((index, clean))
    }

    pub fn entries(&self) -> &[E] {
        &self.entries
    }
    pub fn last(&self) -> Option<&E> {
        self.entries.last()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.entries_max
    }
    pub fn set_entries_max(&mut self, entries_max: usize) {
        self.entries_max = entries_max;
    }

    /// Appends an entry if it keeps the ordering invariant; returns whether it was added.
    pub fn push(&mut self, e: E) -> bool {
        if self.entries.last().is_some_and(|last| !last.precedes(&e)) {
            return false;
        }
        self.entries.push(e);
        true
    }

    /// Writes pending entries if enough have accumulated.
    pub fn maybe_write(&mut self) -> io::Result<()> {
        if self.entries.len() - self.written >= PENDING_ENTRIES_MAX {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes every pending entry to the file with one positional write.
    pub fn write_pending(&mut self) -> io::Result<()> {
        if self.written == self.entries.len() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity((self.entries.len() - self.written) * E::BYTES);
        for e in &self.entries[self.written..] {
            e.encode(&mut buf);
        }
        let at = (self.written * E::BYTES) as u64;
        self.file()?.write_all_at(&buf, at)?;
        self.written = self.entries.len();
        self.file_bytes = self.file_bytes.max(at + buf.len() as u64);
        Ok(())
    }

    /// Keeps the first `n` entries, in memory and in the file.
    pub fn truncate_entries(&mut self, n: usize) -> io::Result<()> {
        self.entries.truncate(n);
        self.written = self.written.min(n);
        let bytes = (self.written * E::BYTES) as u64;
        if self.file_bytes != bytes {
            self.file()?.set_len(bytes)?;
            self.file_bytes = bytes;
        }
        Ok(())
    }

    /// Drops every entry (for a rebuild).
    pub fn clear(&mut self) -> io::Result<()> {
        self.truncate_entries(0)
    }

    /// The file, opened for writing (never created: a missing file means the segment was
    /// deleted, and writing it again would leave a stray).
    pub fn file(&self) -> io::Result<File> {
        OpenOptions::new().write(true).open(&self.path)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.file()?.sync_data()
    }
}

impl Index<OffsetEntry> {
    /// The entry with the largest offset at or below `relative_offset`: a position from which
    /// a forward scan reaches the batch holding that offset.
    pub fn lookup(&self, relative_offset: u32) -> Option<OffsetEntry> {
        let n = self
            .entries
            .partition_point(|e| e.relative_offset <= relative_offset);
        n.checked_sub(1).map(|i| self.entries[i])
    }
    /// The entry with the largest position at or below `position`: the start of a batch from
    /// which a forward scan reaches the batch boundaries just below `position`.
    pub fn lookup_position(&self, position: u64) -> Option<OffsetEntry> {
        let n = self
            .entries
            .partition_point(|e| e.position as u64 <= position);
        n.checked_sub(1).map(|i| self.entries[i])
    }

    /// Keeps only entries for batches that start before `position`.
    pub fn truncate_to_position(&mut self, position: u64) -> io::Result<()> {
        let n = self
            .entries
            .partition_point(|e| (e.position as u64) < position);
        self.truncate_entries(n)
    }
}

impl Index<TimeEntry> {
    /// The entry with the largest timestamp at or below `timestamp`.
    pub fn lookup(&self, timestamp: i64) -> Option<TimeEntry> {
        let n = self.entries.partition_point(|e| e.timestamp <= timestamp);
        n.checked_sub(1).map(|i| self.entries[i])
    }
    /// Keeps only entries whose offset is below `relative_offset`.
    pub fn truncate_to_offset(&mut self, relative_offset: u32) -> io::Result<()> {
        let n = self
            .entries
            .partition_point(|e| e.relative_offset < relative_offset);
        self.truncate_entries(n)
    }
}

/// Reads the last entry of a time index file without loading it (12 bytes), to learn a closed
/// segment's largest timestamp at open. `None` if the file is missing, empty or misaligned.
pub(crate) fn read_last_time_entry(file: &File) -> io::Result<Option<TimeEntry>> {
    let len = file.metadata()?.len();
    if len == 0 || len % TimeEntry::BYTES as u64 != 0 {
        return Ok(None);
    }
    let mut b = [0u8; TimeEntry::BYTES];
    file.read_exact_at(&mut b, len - TimeEntry::BYTES as u64)?;
    Ok(Some(TimeEntry::decode(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.index");
        (dir, p)
    }

    #[test]
    fn offset_lookup_finds_the_floor_entry() {
        let (_d, f) = temp_file();
        let (mut idx, clean) = Index::<OffsetEntry>::open(&f, 100, |_| true).unwrap();
        assert!(clean);
        assert!(idx.push(OffsetEntry {
            relative_offset: 9,
            position: 0
        }));
        assert!(idx.push(OffsetEntry {
            relative_offset: 19,
            position: 4200
        }));
        assert!(!idx.push(OffsetEntry {
            relative_offset: 19,
            position: 9000
        }));
        assert_eq!(idx.lookup(5), None);
        assert_eq!(idx.lookup(9).unwrap().position, 0);
        assert_eq!(idx.lookup(18).unwrap().position, 0);
        assert_eq!(idx.lookup(100).unwrap().position, 4200);
    }

    #[test]
    fn written_entries_reload_and_a_torn_entry_is_dropped() {
        let (d, f) = temp_file();
        let (mut idx, _) = Index::<OffsetEntry>::open(&f, 100, |_| true).unwrap();
        for i in 0..10u32 {
            idx.push(OffsetEntry {
                relative_offset: i * 10,
                position: i * 100,
            });
        }
        idx.write_pending().unwrap();
        drop(idx);
        // Tear the last entry and append garbage that breaks ordering.
        File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_len(10 * 8 - 3)
            .unwrap();
        let (idx, clean) = Index::<OffsetEntry>::open(&f, 100, |_| true).unwrap();
        assert!(!clean);
        assert_eq!(idx.len(), 9);
        assert_eq!(
            std::fs::metadata(d.path().join("0.index")).unwrap().len(),
            72
        );
        let (idx, clean) = Index::<OffsetEntry>::open(&f, 100, |e| e.position < 500).unwrap();
        assert!(!clean);
        assert_eq!(idx.len(), 5);
    }

    #[test]
    fn time_lookup_and_last_entry() {
        let (_d, f) = temp_file();
        let (mut idx, _) = Index::<TimeEntry>::open(&f, 100, |_| true).unwrap();
        idx.push(TimeEntry {
            timestamp: 100,
            relative_offset: 1,
        });
        idx.push(TimeEntry {
            timestamp: 200,
            relative_offset: 5,
        });
        assert!(!idx.push(TimeEntry {
            timestamp: 150,
            relative_offset: 6
        }));
        assert_eq!(idx.lookup(99), None);
        assert_eq!(idx.lookup(150).unwrap().relative_offset, 1);
        idx.write_pending().unwrap();
        let file = File::open(&f).unwrap();
        assert_eq!(read_last_time_entry(&file).unwrap().unwrap().timestamp, 200);
    }
}
