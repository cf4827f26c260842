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
    async fn read(&mut self, buf: BytesMut) -> (io::Result<usize>, BytesMut);

    /// Shuts the socket down in both directions. With io_uring a read abandoned by a timeout
    /// stays queued in the kernel and keeps the descriptor open; shutdown completes it, so the
    /// connection really closes when we are done with it.
    fn shutdown(&self);
}

/// Writes whole buffers.
pub trait SocketWrite {
    async fn write_all(&mut self, buf: Bytes) -> io::Result<()>;
}

// ---- epoll (tokio's driver) ----

pub struct EpollRead(pub tokio::net::tcp::OwnedReadHalf);
pub struct EpollWrite(pub tokio::net::tcp::OwnedWriteHalf);

impl SocketRead for EpollRead {
    async fn read(&mut self, mut buf: BytesMut) -> (io::Result<usize>, BytesMut) {
        let r = self.0.read_buf(&mut buf).await;
        (r, buf)
    }

    fn shutdown(&self) {
        // Dropping both halves closes the socket; nothing is left queued with epoll.
    }
}

impl SocketWrite for EpollWrite {
    async fn write_all(&mut self, buf: Bytes) -> io::Result<()> {
        self.0.write_all(&buf).await
    }
}

// ---- io_uring (tokio-uring) ----

pub struct UringRead(pub Rc<tokio_uring::net::TcpStream>);
pub struct UringWrite(pub Rc<tokio_uring::net::TcpStream>);

impl SocketRead for UringRead {
    async fn read(&mut self, buf: BytesMut) -> (io::Result<usize>, BytesMut) {
        use tokio_uring::buf::BoundedBuf;
        // Read into the spare capacity only: a read of the whole buffer would write from
        // offset 0 over bytes not yet consumed.
        let start = buf.len();
        let (r, slice) = self.0.read(buf.slice(start..)).await;
        (r, slice.into_inner())
    }

    fn shutdown(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

impl SocketWrite for UringWrite {
    async fn write_all(&mut self, buf: Bytes) -> io::Result<()> {
        let (r, _) = self.0.write_all(buf).await;
        r
    }
}
