//! The pieces a response frame is written as: bytes in memory, or a range of a file that the
//! connection hands to the kernel (`sendfile`), so log bytes reach the socket without being
//! read into this process. A frame is the concatenation of its chunks.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

/// One piece of a response frame.
#[derive(Clone, Debug)]
pub enum Chunk {
    Bytes(Bytes),
    File(FileRange),
}

/// `len` bytes of `file` from `position`.
#[derive(Clone, Debug)]
pub struct FileRange {
    pub file: Arc<File>,
    pub position: u64,
    pub len: usize,
}

impl Chunk {
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::File(r) => r.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk's bytes, reading a file range (for tests and for paths that need them in
    /// memory).
    pub fn to_bytes(&self) -> io::Result<Bytes> {
        match self {
            Chunk::Bytes(b) => Ok(b.clone()),
            Chunk::File(r) => r.read(),
        }
    }
}

impl From<Bytes> for Chunk {
    fn from(b: Bytes) -> Chunk {
        Chunk::Bytes(b)
    }
}

impl FileRange {
    /// Reads the whole range. A file now shorter than the range (truncated since the range was
    /// taken) is an error: the frame around the range already promised `len` bytes.
    pub fn read(&self) -> io::Result<Bytes> {
        let mut buf = BytesMut::new();
        self.read_into(&mut buf)?;
        Ok(buf.freeze())
    }

    /// Appends the whole range to `out` (which is left as it was on error).
    pub fn read_into(&self, out: &mut BytesMut) -> io::Result<()> {
        let start = out.len();
        out.resize(start + self.len, 0);
        self.file
            .read_exact_at(&mut out[start..], self.position)
            .map_err(|e| {
                out.truncate(start);
                match e.kind() {
                    io::ErrorKind::UnexpectedEof => truncated(self),
                    _ => e,
                }
            })
    }
}

/// The error for a file range that the file no longer holds whole.
pub fn truncated(r: &FileRange) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "log file shorter than the {} bytes at position {} a response promised (truncated while being sent)",
            r.len, r.position
        ),
    )
}

/// Concatenates chunks, reading file ranges: a whole frame as bytes (tests and tools).
pub fn concat(chunks: &[Chunk]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(chunks.iter().map(Chunk::len).sum());
    for c in chunks {
        out.extend_from_slice(&c.to_bytes()?);
    }
    Ok(out)
}
