//! The per-segment transaction index (`<base>.txnindex`, Kafka's `TransactionIndex`): one
//! entry per aborted transaction whose abort marker lies in the segment, so that a
//! read_committed Fetch can tell its consumer which producers' batches to skip.
//!
//! Entry layout (34 bytes, big-endian, as Kafka's `AbortedTxn`):
//!
//! ```text
//! version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64
//! ```
//!
//! `lastOffset` is the abort marker's offset; `lastStableOffset` is the log's last stable
//! offset right after the transaction completed. Entries are appended in marker order, so
//! `lastOffset` increases through a file, and so does `lastStableOffset`.
//!
//! Invariants: a file holds whole entries only (a torn tail is ignored when read and cut when
//! the file is next rewritten); every entry's `lastOffset` lies in its segment.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// Bytes of one entry.
pub const ENTRY_BYTES: usize = 34;
const VERSION: i16 = 0;
/// A txnindex larger than this is refused when read (about 30 million aborted transactions
/// in one segment), so a damaged file cannot make a read allocate without bound.
pub const TXN_INDEX_BYTES_MAX: u64 = 1 << 30;

/// One aborted transaction, as a read_committed Fetch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    /// Offset of the transaction's first batch in this partition.
    pub first_offset: i64,
    /// Offset of its abort marker.
    pub last_offset: i64,
    /// The partition's last stable offset once the transaction completed.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[0..2].copy_from_slice(&VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> io::Result<AbortedTxn> {
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let version = i16::from_be_bytes([b[0], b[1]]);
        if version != VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unknown txnindex entry version {version}"),
            ));
        }
        Ok(AbortedTxn {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        })
    }
}

/// Reads every whole entry of the file at `path` (none if it does not exist).
pub(crate) fn read(path: &Path) -> io::Result<Vec<AbortedTxn>> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    if len > TXN_INDEX_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is {len} bytes, above the limit of {TXN_INDEX_BYTES_MAX}",
                path.display()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    f.read_to_end(&mut bytes)?;
    bytes
        .chunks_exact(ENTRY_BYTES)
        .map(AbortedTxn::decode)
        .collect()
}

/// Appends one entry to the file at `path`, creating it.
pub(crate) fn append(path: &Path, entry: &AbortedTxn) -> io::Result<()> {
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    let len = f.metadata()?.len();
    if len % ENTRY_BYTES as u64 != 0 {
        // A torn entry from a crash: cut it so that the new one stays aligned.
        f.set_len(len - len % ENTRY_BYTES as u64)?;
    }
    f.write_all(&entry.encode())
}

/// Rewrites the file at `path` to hold exactly `entries` (removing it when there are none).
pub(crate) fn rewrite(path: &Path, entries: &[AbortedTxn]) -> io::Result<()> {
    if entries.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let mut bytes = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for e in entries {
        bytes.extend_from_slice(&e.encode());
    }
    let tmp = path.with_extension("txnindex.tmp");
    fs::write(&tmp, &bytes)?;
    fs::rename(&tmp, path)
}

/// The aborted transactions of one segment's entries that overlap `[from, upper)`, in Kafka's
/// `TransactionIndex.collectAbortedTxns` manner. Returns them and whether the search is
/// complete: an entry whose last stable offset is at or past `upper` proves that no later
/// entry (in this or any later segment) can have started below `upper`.
pub(crate) fn collect(entries: &[AbortedTxn], from: i64, upper: i64) -> (Vec<AbortedTxn>, bool) {
    let mut out = Vec::new();
    for e in entries {
        if e.last_offset >= from && e.first_offset < upper {
            out.push(*e);
        }
        if e.last_stable_offset >= upper {
            return (out, true);
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entries_are_kafkas_34_bytes_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000000.txnindex");
        let a = txn(7, 10, 20, 21);
        let b = txn(8, 15, 30, 31);
        append(&p, &a).unwrap();
        append(&p, &b).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), 68);
        let bytes = fs::read(&p).unwrap();
        assert_eq!(&bytes[0..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &7i64.to_be_bytes());
        assert_eq!(read(&p).unwrap(), vec![a, b]);
    }

    #[test]
    fn a_torn_entry_is_ignored_and_cut_by_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.txnindex");
        append(&p, &txn(1, 0, 5, 6)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&[0u8; 10]).unwrap();
        assert_eq!(read(&p).unwrap().len(), 1);
        append(&p, &txn(2, 6, 9, 10)).unwrap();
        assert_eq!(read(&p).unwrap(), vec![txn(1, 0, 5, 6), txn(2, 6, 9, 10)]);
    }

    #[test]
    fn collect_stops_once_the_last_stable_offset_passes_the_upper_bound() {
        let entries = [txn(1, 0, 5, 3), txn(2, 3, 8, 9), txn(3, 20, 25, 26)];
        let (found, complete) = collect(&entries, 4, 9);
        assert_eq!(found, vec![txn(1, 0, 5, 3), txn(2, 3, 8, 9)]);
        assert!(complete);
        let (found, complete) = collect(&entries, 6, 30);
        assert_eq!(found, vec![txn(2, 3, 8, 9), txn(3, 20, 25, 26)]);
        assert!(!complete);
    }

    #[test]
    fn rewrite_with_nothing_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("y.txnindex");
        append(&p, &txn(1, 0, 5, 6)).unwrap();
        rewrite(&p, &[]).unwrap();
        assert!(!p.exists());
        rewrite(&p, &[txn(3, 1, 2, 3)]).unwrap();
        assert_eq!(read(&p).unwrap(), vec![txn(3, 1, 2, 3)]);
    }
}
