//! The two halves of a client socket, over either I/O engine. Code above this sees owned
//! buffers only (`BytesMut` in, `Bytes` out), which is what completion-based I/O needs.
//! The traits are used only inside this crate, on single-threaded shards (no `Send` bounds).
#![allow(async_fn_in_trait)]

use std::io;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Reads into the spare capacity of a buffer, returning the buffer with the new bytes
/// appended after its existing contents.
pub trait SocketRead {
    /// Reads at most `max` bytes (at least one) into the spare capacity of `buf`.
    async fn read(&mut self, buf: BytesMut, max: usize) -> (io::Result<usize>, BytesMut);

    /// Shuts the socket down in both directions. With io_uring a read abandoned by a timeout
    /// stays queued in the kernel and keeps the descriptor open; shutdown completes it, so the
    /// connection really closes when we are done with it.
    fn shutdown(&self);
}

/// Writes whole buffers.
pub trait SocketWrite {
    /// Writes every chunk, in order, with as few (vectored) writes as the socket allows.
    async fn write_all_vectored(&mut self, chunks: Vec<Bytes>) -> io::Result<()>;
}

/// Most iovecs one vectored write takes (Linux's IOV_MAX).
const IOV_MAX: usize = 1024;

/// Drops the first `n` written bytes from `chunks`.
fn advance(chunks: &mut Vec<Bytes>, mut n: usize) {
    let mut done = 0;
    for c in chunks.iter_mut() {
        if n >= c.len() {
            n -= c.len();
            done += 1;
        } else {
            let _ = c.split_to(n);
            break;
        }
    }
    chunks.drain(..done);
}

// ---- epoll (tokio's driver) ----

pub struct EpollRead(pub tokio::net::tcp::OwnedReadHalf);
pub struct EpollWrite(pub tokio::net::tcp::OwnedWriteHalf);

impl SocketRead for EpollRead {
    async fn read(&mut self, mut buf: BytesMut, max: usize) -> (io::Result<usize>, BytesMut) {
        use bytes::BufMut;
        let r = self.0.read_buf(&mut (&mut buf).limit(max.max(1))).await;
        (r, buf)
    }

    fn shutdown(&self) {
        // Dropping both halves closes the socket; nothing is left queued with epoll.
    }
}

impl SocketWrite for EpollWrite {
    async fn write_all_vectored(&mut self, mut chunks: Vec<Bytes>) -> io::Result<()> {
        if chunks.len() == 1 {
            return self.0.write_all(&chunks[0]).await;
        }
        while !chunks.is_empty() {
            let slices: Vec<io::IoSlice<'_>> = chunks
                .iter()
                .take(IOV_MAX)
                .map(|c| io::IoSlice::new(c))
                .collect();
            let n = self.0.write_vectored(&slices).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            drop(slices);
            advance(&mut chunks, n);
        }
        Ok(())
    }
}

// ---- io_uring (tokio-uring) ----

pub struct UringRead(pub Rc<tokio_uring::net::TcpStream>);
pub struct UringWrite(pub Rc<tokio_uring::net::TcpStream>);

impl SocketRead for UringRead {
    async fn read(&mut self, buf: BytesMut, max: usize) -> (io::Result<usize>, BytesMut) {
        use tokio_uring::buf::BoundedBuf;
        // Read into the spare capacity only: a read of the whole buffer would write from
        // offset 0 over bytes not yet consumed.
        let start = buf.len();
        let end = buf.capacity().min(start + max.max(1));
        let (r, slice) = self.0.read(buf.slice(start..end)).await;
        (r, slice.into_inner())
    }

    fn shutdown(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

impl SocketWrite for UringWrite {
    async fn write_all_vectored(&mut self, mut chunks: Vec<Bytes>) -> io::Result<()> {
        if chunks.len() == 1 {
            let (r, _) = self.0.write_all(chunks.pop().expect("one chunk")).await;
            return r;
        }
        while !chunks.is_empty() {
            let rest = chunks.split_off(chunks.len().min(IOV_MAX));
            let (r, mut written) = self.0.writev(chunks).await;
            let n = r?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            advance(&mut written, n);
            written.extend(rest);
            chunks = written;
        }
        Ok(())
    }
}
