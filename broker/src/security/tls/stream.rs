//! The TLS stream: the server handshake ([`accept`]) and the two halves of a connection
//! afterwards, over rustls used sans-IO (see the module documentation of `tls` for why).

use std::cell::RefCell;
use std::io::{self, BufRead as _, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rustls::{CertificateError, ServerConnection};
use samsa_protocol::chunk::truncated;
use samsa_protocol::FileRange;

use super::{principal_of, TlsSettings};
use crate::net::transport::{SocketRead, SocketWrite};

/// Ciphertext asked of the socket per read (several records).
const CIPHER_READ_BYTES: usize = 64 * 1024;
/// Plaintext encrypted per step; the ciphertext buffer is flushed once it holds this much.
const PLAINTEXT_PIECE: usize = 64 * 1024;
/// Bytes of a file range read into memory at a time.
const FILE_PIECE: usize = 256 * 1024;
/// Runs the server side of the TLS handshake over `reader` and `writer`, within `timeout`,
/// and names the client (see [`principal_of`]). A client that does not speak TLS fails with
/// `InvalidData`, one whose certificate is refused with `PermissionDenied`, a slow one with
/// `TimedOut`. Any alert rustls produced is written before the error is returned.
pub async fn accept<R: SocketRead, W: SocketWrite>(
    settings: &TlsSettings,
    mut reader: R,
    mut writer: W,
    timeout: Duration,
) -> io::Result<(TlsRead<R>, TlsWrite<W>, String)> {
    let mut conn = ServerConnection::new(settings.config.clone()).map_err(io::Error::other)?;
    let mut cipher = BytesMut::with_capacity(CIPHER_READ_BYTES);
    let handshake = handshake(&mut conn, &mut reader, &mut writer, &mut cipher);
    let late = format!(
        "SSL handshake not finished within {} ms",
        timeout.as_millis()
    );
    tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| io_error(io::ErrorKind::TimedOut, late))??;
    debug_assert!(!conn.is_handshaking() && !conn.wants_write());
    let principal = principal_of(settings, conn.peer_certificates())
        .map_err(|e| io_error(io::ErrorKind::PermissionDenied, e))?;
    // Writes are bounded by the pieces `TlsWrite` hands over, not by rustls's buffer limit.
    conn.set_buffer_limit(None);
    let conn = Rc::new(RefCell::new(conn));
    Ok((
        TlsRead {
            inner: reader,
            conn: conn.clone(),
            cipher,
            closed: false,
        },
        TlsWrite {
            inner: writer,
            conn,
            out: BytesMut::new(),
        },
        principal,
    ))
}

async fn handshake<R: SocketRead, W: SocketWrite>(
    conn: &mut ServerConnection,
    reader: &mut R,
    writer: &mut W,
    cipher: &mut BytesMut,
) -> io::Result<()> {
    loop {
        // Flush first: the last flight (and TLS 1.3 session tickets) goes out before we finish.
        if conn.wants_write() {
            let mut out = BytesMut::new();
            drain(conn, &mut out)?;
            writer.write_all(out.freeze()).await?;
        }
        if !conn.is_handshaking() {
            return Ok(());
        }
        if cipher.is_empty() {
            let mut buf = std::mem::take(cipher);
            buf.reserve(CIPHER_READ_BYTES);
            let (r, buf) = reader.read(buf, CIPHER_READ_BYTES).await;
            *cipher = buf;
            if r? == 0 {
                let msg = "SSL handshake failed: the client closed the connection during it";
                return Err(io_error(io::ErrorKind::UnexpectedEof, msg));
            }
        }
        let n = conn
            .read_tls(&mut &cipher[..])
            .map_err(|e| invalid(format!("SSL handshake failed: {e}")))?;
        cipher.advance(n);
        match conn.process_new_packets() {
            // n == 0: rustls takes nothing after a close_notify.
            Ok(state) if n == 0 || state.peer_has_closed() => {
                let msg = "SSL handshake failed: the client closed the session during it";
                return Err(io_error(io::ErrorKind::UnexpectedEof, msg));
            }
            Ok(_) => {}
            Err(e) => {
                if conn.wants_write() {
                    let mut out = BytesMut::new();
                    if drain(conn, &mut out).is_ok() {
                        let _ = writer.write_all(out.freeze()).await;
                    }
                }
                return Err(handshake_error(e));
            }
        }
    }
}

/// Says why a handshake failed, in the words a broker operator needs.
fn handshake_error(e: rustls::Error) -> io::Error {
    use io::ErrorKind::{InvalidData, PermissionDenied};
    use CertificateError as C;
    let (kind, why) = match &e {
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => (
            InvalidData,
            "the peer did not speak TLS (a plaintext client on a TLS listener? it should use \
             security.protocol=SSL)",
        ),
        rustls::Error::NoCertificatesPresented => (
            PermissionDenied,
            "the client presented no certificate, and ssl.client.auth=required",
        ),
        rustls::Error::InvalidCertificate(c) => (
            PermissionDenied,
            match c {
                C::UnknownIssuer => {
                    "client certificate refused: untrusted (no CA of the truststore signed it)"
                }
                C::Expired | C::ExpiredContext { .. } => {
                    "client certificate refused: it has expired"
                }
                C::NotValidYet | C::NotValidYetContext { .. } => {
                    "client certificate refused: it is not valid yet"
                }
                C::Revoked => "client certificate refused: it is revoked",
                _ => "client certificate refused",
            },
        ),
        rustls::Error::PeerIncompatible(_) => (
            InvalidData,
            "no protocol version or cipher suite in common with the client",
        ),
        rustls::Error::AlertReceived(_) => (
            InvalidData,
            "the client gave up (does it trust the broker's certificate?)",
        ),
        _ => (InvalidData, "TLS error"),
    };
    io_error(kind, format!("SSL handshake failed: {why}: {e}"))
}

fn io_error(kind: io::ErrorKind, msg: impl ToString) -> io::Error {
    io::Error::new(kind, msg.to_string())
}

fn invalid(msg: impl ToString) -> io::Error {
    io_error(io::ErrorKind::InvalidData, msg)
}

/// Moves every TLS byte rustls has queued to the end of `out`.
fn drain(conn: &mut ServerConnection, out: &mut BytesMut) -> io::Result<()> {
    let mut w = out.writer();
    while conn.wants_write() {
        if conn.write_tls(&mut w)? == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// The reading half of a TLS connection.
pub struct TlsRead<R> {
    inner: R,
    conn: Rc<RefCell<ServerConnection>>,
    /// Ciphertext read and not yet given to rustls. Empty whenever a read of the socket is in
    /// flight, so a read abandoned at an `.await` (an idle timeout) loses nothing.
    cipher: BytesMut,
    /// The peer closed (close_notify or end of stream): reads return 0 from now on.
    closed: bool,
}

impl<R> TlsRead<R> {
    /// Moves up to `want` bytes of plaintext into `buf`, feeding rustls the buffered
    /// ciphertext as needed: how many (0 once the peer has closed), None if rustls needs more
    /// ciphertext for any. Synchronous: the connection is borrowed only here.
    fn decrypt(&mut self, buf: &mut BytesMut, want: usize) -> io::Result<Option<usize>> {
        let mut conn = self.conn.borrow_mut();
        let mut copied = 0;
        loop {
            while copied < want {
                let mut reader = conn.reader();
                let n = match reader.fill_buf() {
                    Ok([]) => {
                        self.closed = true; // close_notify and nothing left
                        break;
                    }
                    Ok(chunk) => {
                        let n = chunk.len().min(want - copied);
                        buf.extend_from_slice(&chunk[..n]);
                        n
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                };
                reader.consume(n);
                copied += n;
            }
            if copied == want || self.closed || self.cipher.is_empty() {
                break;
            }
            // Plaintext is drained, so rustls takes more (its plaintext buffer is not full).
            let n = conn.read_tls(&mut &self.cipher[..]).map_err(invalid)?;
            if n == 0 {
                // Ciphertext after close_notify: ignored.
                self.cipher.clear();
                self.closed = true;
                break;
            }
            self.cipher.advance(n);
            if let Err(e) = conn.process_new_packets() {
                return Err(invalid(format!("TLS error from the client: {e}")));
            }
        }
        debug_assert!(copied <= want);
        Ok((copied > 0 || self.closed).then_some(copied))
    }
}

impl<R: SocketRead> SocketRead for TlsRead<R> {
    async fn read(&mut self, mut buf: BytesMut, max: usize) -> (io::Result<usize>, BytesMut) {
        // Into the spare capacity, or past it (as the epoll engine does) if there is none.
        let spare = buf.capacity() - buf.len();
        let want = max.max(1).min(if spare > 0 { spare } else { usize::MAX });
        loop {
            match self.decrypt(&mut buf, want) {
                Ok(Some(n)) => return (Ok(n), buf),
                Ok(None) => {}
                Err(e) => return (Err(e), buf),
            }
            debug_assert!(self.cipher.is_empty());
            let mut cipher = std::mem::take(&mut self.cipher);
            cipher.reserve(CIPHER_READ_BYTES);
            let (r, cipher) = self.inner.read(cipher, CIPHER_READ_BYTES).await;
            self.cipher = cipher;
            match r {
                Ok(0) => {
                    self.closed = true;
                    return (Ok(0), buf);
                }
                Ok(_) => {}
                Err(e) => return (Err(e), buf),
            }
        }
    }

    /// Queues a close_notify (best effort: only a later write would send it, and after
    /// shutdown there is none; Kafka clients do not need it) and shuts the socket down.
    fn shutdown(&self) {
        if let Ok(mut conn) = self.conn.try_borrow_mut() {
            conn.send_close_notify();
        }
        self.inner.shutdown();
    }
}

/// The writing half of a TLS connection.
pub struct TlsWrite<W> {
    inner: W,
    conn: Rc<RefCell<ServerConnection>>,
    /// Ciphertext not yet written; its allocation is reused once the socket is done with it.
    out: BytesMut,
}

impl<W: SocketWrite> TlsWrite<W> {
    /// Encrypts `data` into `out`, in pieces, writing `out` out whenever it holds a piece's
    /// worth.
    async fn push(&mut self, data: &[u8]) -> io::Result<()> {
        for piece in data.chunks(PLAINTEXT_PIECE) {
            self.encrypt(piece)?;
            if self.out.len() >= PLAINTEXT_PIECE {
                self.flush().await?;
            }
        }
        Ok(())
    }

    /// Encrypts `piece` and moves what rustls queued (including TLS bytes the reading half
    /// left there, which come first) to `out`.
    fn encrypt(&mut self, piece: &[u8]) -> io::Result<()> {
        debug_assert!(piece.len() <= PLAINTEXT_PIECE);
        let mut conn = self.conn.borrow_mut();
        let mut rest = piece;
        while !rest.is_empty() {
            let n = conn.writer().write(rest)?;
            if n == 0 {
                return Err(io_error(
                    io::ErrorKind::BrokenPipe,
                    "the TLS session is closed",
                ));
            }
            rest = &rest[n..];
        }
        // Records add a few dozen bytes per 16 KiB.
        self.out.reserve(piece.len() + piece.len() / 256 + 256);
        drain(&mut conn, &mut self.out)
    }

    /// Writes `out` (and whatever rustls has queued) to the socket.
    async fn flush(&mut self) -> io::Result<()> {
        drain(&mut self.conn.borrow_mut(), &mut self.out)?;
        if self.out.is_empty() {
            return Ok(());
        }
        let bytes = self.out.split().freeze();
        self.inner.write_all(bytes).await
    }
}

impl<W: SocketWrite> SocketWrite for TlsWrite<W> {
    async fn write_all(&mut self, bytes: Bytes) -> io::Result<()> {
        self.push(&bytes).await?;
        self.flush().await
    }

    async fn write_all_vectored(&mut self, chunks: Vec<Bytes>) -> io::Result<()> {
        for c in &chunks {
            self.push(c).await?;
        }
        self.flush().await
    }

    /// Reads the range piecewise and encrypts it: sendfile cannot encrypt.
    async fn send_file(&mut self, range: &FileRange) -> io::Result<()> {
        let mut plain = vec![0u8; range.len.min(FILE_PIECE)];
        let mut done = 0;
        while done < range.len {
            let n = (range.len - done).min(FILE_PIECE);
            range
                .file
                .read_exact_at(&mut plain[..n], range.position + done as u64)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => truncated(range),
                    _ => e,
                })?;
            self.push(&plain[..n]).await?;
            done += n;
        }
        debug_assert_eq!(done, range.len);
        self.flush().await
    }

    /// Encrypts the chunks and, like `MSG_MORE` on a plain socket, keeps a small result to go
    /// out with the first bytes of the range that follows (the next write flushes it).
    async fn write_before_file(&mut self, chunks: &mut Vec<Bytes>) -> io::Result<()> {
        for c in chunks.iter() {
            self.push(c).await?;
        }
        chunks.clear();
        Ok(())
    }
}

/// Whether this kernel offers kernel TLS (the `tls` upper-layer protocol on TCP sockets),
/// probed once on a loopback connection.
pub fn ktls_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| probe_ktls().unwrap_or(false))
}

fn probe_ktls() -> io::Result<bool> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let client = std::net::TcpStream::connect(listener.local_addr()?)?;
    let _server = listener.accept()?;
    let name = b"tls";
    // SAFETY: a plain setsockopt on a socket we own, with a buffer that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_ULP,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    Ok(r == 0)
}
