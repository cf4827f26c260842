//! `LogSlice`: the answer to a read — whole batches, either `Bytes` from the tail cache or a
//! range of a segment file that `load()` reads without the log's mutex, or that a connection
//! sends to its socket unread (`file_range`, for sendfile).
//!
//! Invariants: a slice holds an `Arc<File>`, so it stays loadable after its segment is deleted;
//! a segment slice's range is exactly whole batches (the read found their boundaries in the
//! headers); `load` returns only whole batches and only if they still start with the batch the
//! read found (a concurrent truncation makes it fail instead of serving other offsets).

use std::fs::File;
use std::io;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::batch::{self, BatchHeader};

/// Whole batches of a log. `load()` reads them without the log (and its mutex).
#[derive(Clone, Debug)]
pub struct LogSlice {
    repr: SliceRepr,
}

#[derive(Clone, Debug)]
enum SliceRepr {
    Memory(Bytes),
    File {
        file: Arc<File>,
        position: u64,
        len: usize,
        base_offset: i64,
        /// The offset after the last batch in the range.
        next_offset: i64,
    },
}

impl LogSlice {
    pub fn empty() -> LogSlice {
        LogSlice {
            repr: SliceRepr::Memory(Bytes::new()),
        }
    }

    /// The batches' bytes. From memory this is free; from a segment it is one `pread`, after
    /// which a trailing partial batch (the read limit fell inside it) is dropped.
    pub fn load(&self) -> io::Result<Bytes> {
        match &self.repr {
            SliceRepr::Memory(b) => Ok(b.clone()),
            SliceRepr::File {
                file,
                position,
                len,
                base_offset,
                ..
            } => {
                // Read into uninitialised capacity: zeroing a fresh buffer first would touch
                // every page twice (the profile of a consumer showed most time in page faults).
                let mut buf = BytesMut::with_capacity(*len);
                let n = read_at_most(file, buf.spare_capacity_mut(), *position)?;
                // SAFETY: `read_at_most` initialised exactly the first `n` bytes.
                unsafe { buf.set_len(n) };
                // The log may have been truncated (and rewritten) between read() and load():
                // serve nothing rather than other offsets or half a batch.
                let first = BatchHeader::parse(&buf).ok();
                if first.is_none_or(|h| h.base_offset != *base_offset) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "segment changed under a pending read; retry the fetch",
                    ));
                }
                // Whole batches only: the limit may fall inside the last one, and a concurrent
                // truncation may have moved batch boundaries. (A header walk in memory.)
                let keep = batch::whole_batches_len(&buf);
                buf.truncate(keep);
                Ok(buf.freeze())
            }
        }
    }

    /// A segment slice as the file, position and length of its whole batches, for sending
    /// them to a socket without reading them here (`None` for memory). Unlike `load`, nothing
    /// checks them again at send time: a truncation of the segment in between shortens what
    /// the file holds, which the sender must treat as an error (as Kafka does).
    pub fn file_range(&self) -> Option<(&Arc<File>, u64, usize)> {
        match &self.repr {
            SliceRepr::File {
                file,
                position,
                len,
                ..
            } => Some((file, *position, *len)),
            SliceRepr::Memory(_) => None,
        }
    }

    /// The offset after the slice's last batch and the base offset of its first, or `None`
    /// when empty. From a segment these are known from the read; in memory they come from the
    /// batch headers.
    pub fn offsets(&self) -> Option<(i64, i64)> {
        match &self.repr {
            SliceRepr::File {
                base_offset,
                next_offset,
                len,
                ..
            } => (*len > 0).then_some((*base_offset, *next_offset)),
            SliceRepr::Memory(b) => {
                let mut first = None;
                let mut next = None;
                for x in batch::batches(b).map_while(Result::ok) {
                    first.get_or_insert(x.header().base_offset);
                    next = Some(x.header().next_offset());
                }
                Some((first?, next?))
            }
        }
    }

    /// The bytes `load` returns: exact for memory and, as reads find batch boundaries, for
    /// segments too (less only if the segment was truncated meanwhile).
    pub fn len(&self) -> usize {
        match &self.repr {
            SliceRepr::Memory(b) => b.len(),
            SliceRepr::File { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when `load` will not touch the disk.
    pub fn is_in_memory(&self) -> bool {
        matches!(self.repr, SliceRepr::Memory(_))
    }
}

/// Reads up to `buf.len()` bytes at `position`, returning how many were read; the first that
/// many bytes of `buf` are then initialised.
fn read_at_most(
    file: &File,
    buf: &mut [std::mem::MaybeUninit<u8>],
    position: u64,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: pread writes at most `rest.len()` bytes into memory we own; uninitialised
        // bytes are only read after pread reports them written.
        let r = unsafe {
            libc::pread(
                file.as_raw_fd(),
                rest.as_mut_ptr().cast(),
                rest.len(),
                (position + done as u64) as libc::off_t,
            )
        };
        let r = if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        };
        match r {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

impl LogSlice {
    pub(crate) fn memory(bytes: Bytes) -> LogSlice {
        LogSlice {
            repr: SliceRepr::Memory(bytes),
        }
    }

    pub(crate) fn segment(
        file: Arc<File>,
        position: u64,
        len: usize,
        base_offset: i64,
        next_offset: i64,
    ) -> LogSlice {
        LogSlice {
            repr: SliceRepr::File {
                file,
                position,
                len,
                base_offset,
                next_offset,
            },
        }
    }
}
