//! The two halves of a client socket, over either I/O engine. Code above this sees owned
//! buffers only (`BytesMut` in, `Bytes` out), which is what completion-based I/O needs, and
//! file ranges (log segments) that go out with `sendfile`: the kernel hands page-cache pages
//! to the socket, so fetched records are neither read into the broker nor copied by it.
//! The traits are used only inside this crate, on single-threaded shards (no `Send` bounds).
#![allow(async_fn_in_trait)]

use std::cell::OnceCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use samsa_protocol::chunk::truncated;
use samsa_protocol::FileRange;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};

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

/// Writes whole buffers and file ranges.
pub trait SocketWrite {
    /// Writes one buffer whole.
    async fn write_all(&mut self, bytes: Bytes) -> io::Result<()>;

    /// Writes every chunk, in order, with as few (vectored) writes as the socket allows.
    async fn write_all_vectored(&mut self, chunks: Vec<Bytes>) -> io::Result<()>;

    /// Sends a whole file range. A file that ends inside the range (truncated since the range
    /// was taken) is an error: the frame around it promised every byte.
    async fn send_file(&mut self, range: &FileRange) -> io::Result<()>;

    /// Writes the bytes that go just before a file range, the way the range goes: directly,
    /// with `MSG_MORE` so they leave in one segment with the range's first bytes. Empties
    /// `chunks` and leaves its capacity for the caller to reuse.
    async fn write_before_file(&mut self, chunks: &mut Vec<Bytes>) -> io::Result<()>;
}

/// Most iovecs one `send_more` passes (on the stack); the caller sends the rest next.
const SEND_MORE_IOVECS: usize = 64;

/// One non-blocking `sendmsg` of (the first `SEND_MORE_IOVECS` of) `chunks` with `MSG_MORE`.
fn send_more(socket: RawFd, chunks: &[Bytes]) -> io::Result<usize> {
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; SEND_MORE_IOVECS];
    let mut count = 0;
    for (slot, c) in iov.iter_mut().zip(chunks) {
        *slot = libc::iovec {
            iov_base: c.as_ptr() as *mut libc::c_void,
            iov_len: c.len(),
        };
        count += 1;
    }
    // SAFETY: a zeroed msghdr is valid; it points at the first `count` entries of `iov`, which
    // outlives the call, and those point into `chunks`, which the kernel only reads.
    let n = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = count as _;
        libc::sendmsg(
            socket,
            &msg,
            libc::MSG_MORE | libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Most bytes one `sendfile` call is asked to move.
const SENDFILE_MAX: usize = 1 << 30;

/// One `sendfile` of what is left of `r` after `done` bytes; the socket should be
/// non-blocking.
fn sendfile_once(socket: RawFd, r: &FileRange, done: usize) -> io::Result<usize> {
    let mut offset = (r.position + done as u64) as libc::off_t;
    let count = (r.len - done).min(SENDFILE_MAX);
    // SAFETY: both descriptors are open for the duration of the call (the socket by its
    // owner, the file by the range's Arc); the kernel writes only `offset`.
    let n = unsafe { libc::sendfile(socket, r.file.as_raw_fd(), &mut offset, count) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
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
    async fn write_all(&mut self, bytes: Bytes) -> io::Result<()> {
        self.0.write_all(&bytes).await
    }

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

    async fn send_file(&mut self, r: &FileRange) -> io::Result<()> {
        let mut done = 0;
        epoll_until_done(self.0.as_ref(), |fd| sendfile_step(fd, r, &mut done)).await
    }

    async fn write_before_file(&mut self, chunks: &mut Vec<Bytes>) -> io::Result<()> {
        epoll_until_done(self.0.as_ref(), |fd| send_more_step(fd, chunks)).await
    }
}

/// Repeats `attempt` (one non-blocking call; `Ok(true)` once everything is out) whenever
/// the socket is writable.
async fn epoll_until_done(
    stream: &tokio::net::TcpStream,
    mut attempt: impl FnMut(RawFd) -> io::Result<bool>,
) -> io::Result<()> {
    loop {
        stream.writable().await?;
        match stream.try_io(Interest::WRITABLE, || attempt(stream.as_raw_fd())) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// `epoll_until_done` over a readiness handle of the io_uring engine.
async fn uring_until_done(
    ready: &AsyncFd<OwnedFd>,
    mut attempt: impl FnMut(RawFd) -> io::Result<bool>,
) -> io::Result<()> {
    loop {
        let mut guard = ready.writable().await?;
        match guard.try_io(|fd| attempt(fd.as_raw_fd())) {
            Ok(Ok(true)) => return Ok(()),
            Ok(Ok(false)) => {}
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            // Not writable after all: readiness was cleared, wait for the next.
            Err(_would_block) => {}
        }
    }
}

/// One `sendfile` step of `r` with `done` bytes already sent: true once all are.
fn sendfile_step(socket: RawFd, r: &FileRange, done: &mut usize) -> io::Result<bool> {
    if *done < r.len {
        match sendfile_once(socket, r, *done)? {
            0 => return Err(truncated(r)),
            n => *done += n,
        }
    }
    Ok(*done >= r.len)
}

/// One `send_more` step: true once every chunk is out.
fn send_more_step(socket: RawFd, chunks: &mut Vec<Bytes>) -> io::Result<bool> {
    if !chunks.is_empty() {
        match send_more(socket, chunks)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => advance(chunks, n),
        }
    }
    Ok(chunks.is_empty())
}

// ---- io_uring (tokio-uring) ----

pub struct UringRead(pub Rc<tokio_uring::net::TcpStream>);
pub struct UringWrite {
    stream: Rc<tokio_uring::net::TcpStream>,
    /// The socket's readiness from tokio's epoll driver, for `sendfile` (which io_uring
    /// offers only through a pipe): a duplicate descriptor registered on the first range sent.
    ready: OnceCell<AsyncFd<OwnedFd>>,
}

impl UringWrite {
    pub fn new(stream: Rc<tokio_uring::net::TcpStream>) -> UringWrite {
        UringWrite {
            stream,
            ready: OnceCell::new(),
        }
    }

    /// The readiness handle, created on first use. It makes the socket non-blocking (the
    /// flag belongs to the open socket, so the ring's reads and writes see it too; since
    /// Linux 5.12 io_uring still waits for sockets marked so instead of failing with EAGAIN,
    /// and `zero_copy_sends` says whether this kernel is one of those).
    fn ready(&self) -> io::Result<&AsyncFd<OwnedFd>> {
        if let Some(r) = self.ready.get() {
            return Ok(r);
        }
        let fd = self.stream.as_raw_fd();
        // SAFETY: duplicating a descriptor we own; the new one is owned by `OwnedFd` below.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `dup` is a fresh descriptor nobody else owns.
        let dup = unsafe { OwnedFd::from_raw_fd(dup) };
        // SAFETY: plain flag calls on a descriptor we own.
        let flags = unsafe { libc::fcntl(dup.as_raw_fd(), libc::F_GETFL) };
        if flags < 0
            || unsafe { libc::fcntl(dup.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `OwnedFd` keeps the descriptor open and unchanged while the AsyncFd owns it.
        let ready = unsafe { AsyncFd::register_with_interest(dup, Interest::WRITABLE) }
            .map_err(|e| e.into_parts().1)?;
        Ok(self.ready.get_or_init(|| ready))
    }
}

/// Whether the io_uring engine may send file ranges with `sendfile` here: it needs the
/// socket non-blocking, which io_uring before Linux 5.12 answers with EAGAIN instead of
/// waiting. Elsewhere ranges are read and written like other bytes.
pub fn zero_copy_sends() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
        let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        (major, minor) >= (5, 12)
    })
}

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
    async fn send_file(&mut self, r: &FileRange) -> io::Result<()> {
        if !zero_copy_sends() {
            return self.write_all_vectored(vec![r.read()?]).await;
        }
        let mut done = 0;
        uring_until_done(self.ready()?, |fd| sendfile_step(fd, r, &mut done)).await
    }

    async fn write_before_file(&mut self, chunks: &mut Vec<Bytes>) -> io::Result<()> {
        if !zero_copy_sends() {
            return self.write_all_vectored(std::mem::take(chunks)).await;
        }
        // Directly, like the range after it: a write through the ring would complete only on
        // a later turn of the event loop (measured: 3.6 ring entries and epoll waits per fetch
        // of 1 MiB instead of 1.3), which a consumer waiting for the response pays in latency.
        uring_until_done(self.ready()?, |fd| send_more_step(fd, chunks)).await
    }

    async fn write_all(&mut self, bytes: Bytes) -> io::Result<()> {
        self.stream.write_all(bytes).await.0
    }

    async fn write_all_vectored(&mut self, mut chunks: Vec<Bytes>) -> io::Result<()> {
        if chunks.len() == 1 {
            return self.write_all(chunks.pop().expect("one chunk")).await;
        }
        while !chunks.is_empty() {
            let rest = chunks.split_off(chunks.len().min(IOV_MAX));
            let (r, mut written) = self.stream.writev(chunks).await;
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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::fs::FileExt;
    use std::sync::Arc;

    use super::*;

    /// A file holding `len` patterned bytes from position 10, and the range of them.
    fn range(len: usize) -> (tempfile::TempDir, FileRange, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("segment"))
            .unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        file.write_all_at(&bytes, 10).unwrap();
        let r = FileRange {
            file: Arc::new(file),
            position: 10,
            len,
        };
        (dir, r, bytes)
    }

    /// Reads everything the peer sends until it closes, on a thread.
    fn drain(mut s: std::net::TcpStream) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            s.read_to_end(&mut out).unwrap();
            out
        })
    }

    #[test]
    fn epoll_sends_a_file_range_whole_and_refuses_a_truncated_one() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().await.unwrap();
            let received = drain(client);
            let (_r, w) = server.into_split();
            let mut w = EpollWrite(w);
            // Larger than the socket buffers, so sendfile hits EAGAIN and waits.
            let (_dir, r, bytes) = range(8 << 20);
            w.write_before_file(&mut vec![
                Bytes::from_static(b"he"),
                Bytes::from_static(b"ad"),
            ])
            .await
            .unwrap();
            w.send_file(&r).await.unwrap();
            r.file.set_len(10 + 100).unwrap();
            let err = w.send_file(&r).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
            drop(w);
            drop(_r);
            let got = received.join().unwrap();
            assert_eq!(&got[..4], b"head");
            assert_eq!(&got[4..4 + bytes.len()], &bytes[..]);
            assert_eq!(&got[4 + bytes.len()..], &bytes[..100]);
        });
    }

    #[test]
    fn uring_sends_a_file_range_and_its_ring_still_reads_and_writes_the_socket_after() {
        if io_uring::IoUring::new(8).is_err() || !zero_copy_sends() {
            eprintln!("io_uring unavailable here: skipped");
            return;
        }
        tokio_uring::start(async {
            let listener =
                tokio_uring::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().await.unwrap();
            let server = Rc::new(server);
            let mut reader = UringRead(server.clone());
            let mut w = UringWrite::new(server);
            let (_dir, r, bytes) = range(8 << 20);
            let peer = client.try_clone().unwrap();
            let received = std::thread::spawn(move || {
                let mut got = vec![0u8; 4 + bytes.len()];
                let mut peer = peer;
                peer.read_exact(&mut got).unwrap();
                (got, bytes)
            });
            w.write_before_file(&mut vec![Bytes::from_static(b"head")])
                .await
                .unwrap();
            w.send_file(&r).await.unwrap();
            let (got, bytes) = received.join().unwrap();
            assert_eq!(&got[..4], b"head");
            assert_eq!(&got[4..], &bytes[..]);
            // The socket is non-blocking now: the ring's reads must still wait for data
            // rather than fail with EAGAIN.
            let pending = reader.read(BytesMut::with_capacity(64), 64);
            let writer = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                client.write_all(b"after").unwrap();
                client
            });
            let (n, buf) = pending.await;
            assert_eq!(n.unwrap(), 5);
            assert_eq!(&buf[..], b"after");
            let client = writer.join().unwrap();
            // Nor may the ring's writes fail when the socket buffer fills: 8 MiB to a peer
            // that starts reading only later.
            let big = Bytes::from(vec![7u8; 8 << 20]);
            let mut peer = client.try_clone().unwrap();
            let slow = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let mut got = vec![0u8; 1 + (8 << 20)];
                peer.read_exact(&mut got).unwrap();
                got[0] == b'x' && got[1..].iter().all(|b| *b == 7)
            });
            w.write_all_vectored(vec![Bytes::from_static(b"x"), big])
                .await
                .unwrap();
            assert!(slow.join().unwrap());
            // A truncated file is an error, not a short frame.
            r.file.set_len(10 + 100).unwrap();
            let err = w.send_file(&r).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
            drop(client);
        });
    }
}
