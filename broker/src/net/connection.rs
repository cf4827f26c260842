//! One client connection: frames in, responses out, in request order.
//!
//! Requests on a connection are handled one at a time, as Kafka does (it mutes a channel while
//! a request is in flight): that keeps produce order per connection, which idempotent
//! producers rely on. Pipelined frames already in the buffer are decoded back to back and
//! their responses written in one go by the writer half, which runs beside the reader so a
//! long poll never delays responses already computed.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use samsa_protocol::frame::FrameStatus;
use samsa_protocol::header::RequestError;
use samsa_protocol::{Chunk, FrameDecoder};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::transport::{SocketRead, SocketWrite};
use crate::broker::Broker;
use crate::handlers::{self, AuthState, Connection, Reply};
use crate::security::sasl::SaslError;
use crate::security::ListenerSecurity;

/// Responses waiting for the writer; beyond this the reader stops reading (backpressure).
const WRITE_QUEUE_DEPTH: usize = 64;
/// How long a connection may wait between reads before SASL authentication completes.
const UNAUTHENTICATED_IDLE: Duration = Duration::from_secs(30);
/// Read size while the next frame's size is unknown, and the smallest read buffer.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// How far a read may go past the end of the frame being assembled (pipelined small frames
/// come in with it). Bytes read past a frame are copied into the next frame's buffer, so a
/// large frame is never followed by more than this.
const READ_AHEAD_BYTES: usize = 16 * 1024;

/// Serves one connection until the client closes it, it idles out, it breaks the protocol,
/// or the broker shuts down.
pub async fn serve<R: SocketRead, W: SocketWrite>(
    broker: Arc<Broker>,
    peer: SocketAddr,
    listener: Arc<ListenerSecurity>,
    principal: String,
    mut reader: R,
    writer: W,
) {
    let (tx, rx) = mpsc::channel::<Reply>(WRITE_QUEUE_DEPTH);
    let conn = Rc::new(Connection::new(peer, listener, principal));
    let read_side = read_loop(&broker, &conn, &mut reader, tx);
    let write_side = write_loop(writer, rx);
    let (end, write_failure) = tokio::join!(read_side, write_side);
    reader.shutdown();
    let end = match write_failure {
        Some(reason) => End::Protocol(reason),
        None => end,
    };
    match end {
        End::ClientClosed | End::Shutdown => tracing::debug!(%peer, "connection closed"),
        End::Idle(ms) => {
            tracing::debug!(%peer, "closing connection idle for {ms} ms (connections.max.idle.ms)")
        }
        End::AuthenticationFailed(reason) => {
            tracing::info!(%peer, listener = %conn.listener.name, "closing connection: {reason}")
        }
        End::Protocol(reason) => {
            tracing::warn!(%peer, client_id = conn.client_id().as_deref().unwrap_or(""), "closing connection: {reason}")
        }
        End::Io(e) => tracing::debug!(%peer, "connection error: {e}"),
    }
}

enum End {
    ClientClosed,
    /// SASL failed, or the client broke the exchange.
    AuthenticationFailed(String),
    Idle(u64),
    Shutdown,
    Protocol(String),
    Io(std::io::Error),
}

async fn read_loop<R: SocketRead>(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    reader: &mut R,
    tx: mpsc::Sender<Reply>,
) -> End {
    let decoder = FrameDecoder::new(broker.node.limits.socket_request_max_bytes);
    // Before SASL authentication a frame is at most `sasl.server.max.receive.size` and the
    // connection may idle only briefly: an unauthenticated peer holds little, and not long.
    let unauthenticated = FrameDecoder::new(
        (broker
            .node
            .config
            .long("sasl.server.max.receive.size")
            .max(1024) as usize)
            .min(broker.node.limits.socket_request_max_bytes),
    );
    let idle_authenticated = Duration::from_millis(broker.node.limits.connections_max_idle_ms);
    let mut shutdown = broker.node.shutdown_signal();
    // Accepted as shutdown began: `changed()` would never fire for it.
    if *shutdown.borrow_and_update() {
        return End::Shutdown;
    }
    let mut buf = BytesMut::with_capacity(READ_BUFFER_BYTES);
    // The request memory a large frame's buffer holds until its request has been handled.
    let mut held: Option<OwnedSemaphorePermit> = None;
    loop {
        // Handle every complete frame already buffered.
        loop {
            // KIP-219: a throttled client's connection reads nothing until its throttle time
            // has passed (its answer went out at once).
            if let Some(until) = conn.muted_until.take() {
                tokio::select! {
                    _ = tokio::time::sleep_until(until.into()) => {}
                    _ = shutdown.changed() => return End::Shutdown,
                }
            }
            let decoder = if conn.auth.borrow().serves_requests() {
                &decoder
            } else {
                &unauthenticated
            };
            let frame = match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => return End::Protocol(e.to_string()),
            };
            conn.frame_bytes.set(frame.len() + 4);
            // Leave a large frame the only holder of its buffer, so that the log rewrites its
            // batches in place instead of copying them and the buffer is freed (and reused
            // while still in the CPU's caches) as soon as they are written: a fresh buffer for
            // what follows (the bytes read past a large frame are few). Small frames share
            // one buffer; the log copies their batches.
            if frame.len() >= READ_BUFFER_BYTES {
                if buf.is_empty() {
                    buf = BytesMut::new();
                } else if buf.len() <= frame.len() / 4 {
                    let mut rest = BytesMut::with_capacity(buf.len().max(READ_BUFFER_BYTES));
                    rest.extend_from_slice(&buf);
                    buf = rest;
                }
            }
            let handled = handle_frame(broker, conn, frame).await;
            // The frame's bytes are appended (or copied) by now: its memory goes back.
            drop(held.take());
            let reply = match handled {
                Ok(reply) => reply,
                Err(reason) if !conn.auth.borrow().serves_requests() => {
                    return End::AuthenticationFailed(reason)
                }
                Err(reason) => return End::Protocol(reason),
            };
            let empty = matches!(&reply, Reply::Ready(chunks) if chunks.is_empty());
            if !empty && tx.send(reply).await.is_err() {
                return End::ClientClosed;
            }
            // A failed SASL exchange closes the connection once its answer is written (the
            // writer drains what is queued before it stops).
            if matches!(*conn.auth.borrow(), AuthState::Failed) {
                return End::AuthenticationFailed("SASL authentication failed".into());
            }
            if *shutdown.borrow() {
                return End::Shutdown;
            }
        }
        // Make room for the rest of the frame (its size is known and already checked), reading
        // no further than a little past its end. A frame's buffer is shared with the frozen
        // request (the tail cache keeps produced batches), so whatever follows the frame in it
        // is copied into a new buffer for the next frame: bounded reads keep that copy small,
        // and a new buffer sized like the last frame usually needs no second one.
        let (decoder, idle) = if conn.auth.borrow().serves_requests() {
            (&decoder, idle_authenticated)
        } else {
            (
                &unauthenticated,
                idle_authenticated.min(UNAUTHENTICATED_IDLE),
            )
        };
        // A frame larger than the read buffer takes its size from the request memory before
        // its buffer is reserved; until its size is known, a read buffer is at most
        // READ_BUFFER_BYTES (a connection between frames holds no more than that).
        let (want, max_read) = match decoder.check(&buf) {
            Ok(FrameStatus::Incomplete { total_bytes }) if buf.len() >= 4 => {
                if total_bytes > READ_BUFFER_BYTES && held.is_none() {
                    let pool = &broker.node.limits.request_memory;
                    held = Some(match pool.try_take(total_bytes) {
                        Some(permit) => permit,
                        None => tokio::select! {
                            permit = pool.take(total_bytes) => permit,
                            _ = shutdown.changed() => return End::Shutdown,
                        },
                    });
                }
                (total_bytes, total_bytes - buf.len() + READ_AHEAD_BYTES)
            }
            _ => (buf.len() + READ_BUFFER_BYTES, READ_BUFFER_BYTES),
        };
        let want = want.max(READ_BUFFER_BYTES);
        if buf.capacity() < want {
            buf.reserve(want - buf.len());
        }
        let read = tokio::select! {
            r = tokio::time::timeout(idle, reader.read(buf, max_read)) => r,
            _ = shutdown.changed() => return End::Shutdown,
        };
        match read {
            Err(_) => return End::Idle(idle.as_millis() as u64),
            Ok((Ok(0), _)) => return End::ClientClosed,
            Ok((Ok(_), b)) => buf = b,
            Ok((Err(e), _)) => return End::Io(e),
        }
    }
}

async fn write_loop<W: SocketWrite>(
    mut writer: W,
    mut rx: mpsc::Receiver<Reply>,
) -> Option<String> {
    let mut next = rx.recv().await;
    // Runs of bytes between file ranges, gathered here so the memory is the connection's.
    let mut run: Vec<Bytes> = Vec::new();
    while let Some(reply) = next.take() {
        let first = match reply {
            Reply::Ready(chunks) => chunks,
            // In request order: later responses wait behind this one.
            Reply::Deferred(later) => match later.await {
                Ok(chunks) => chunks,
                Err(reason) => return Some(reason),
            },
        };
        // Everything already queued and ready goes out in one vectored write: small chunks
        // (most responses) are copied together, large ones (fetched records) passed as they are.
        // A response with nothing queued behind it goes out as it is.
        let lone_bytes: usize = first.iter().map(Chunk::len).sum();
        let mut lone = Some(first);
        let mut batch = Coalescer::default();
        while batch.bytes + lone.as_ref().map_or(0, |_| lone_bytes) < COALESCE_MAX_BYTES {
            match rx.try_recv() {
                Ok(Reply::Ready(more)) => {
                    if let Some(first) = lone.take() {
                        batch.extend(first);
                    }
                    batch.extend(more);
                }
                Ok(deferred) => {
                    next = Some(deferred);
                    break;
                }
                Err(_) => break,
            }
        }
        let chunks = match lone {
            Some(first) => first,
            None => batch.finish(),
        };
        if let Err(e) = write_chunks(&mut writer, chunks, &mut run).await {
            // A log file cut short under a pending response leaves the client a frame it
            // cannot finish: close, as Kafka does, and say why.
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                return Some(e.to_string());
            }
            return None;
        }
        if next.is_none() {
            next = rx.recv().await;
        }
    }
    None
}

/// Stop gathering queued responses past this many bytes and write.
const COALESCE_MAX_BYTES: usize = 4 << 20;
/// Chunks smaller than this are copied into a shared buffer rather than given their own iovec.
const COPY_BELOW_BYTES: usize = 16 * 1024;

#[derive(Default)]
struct Coalescer {
    chunks: Vec<Chunk>,
    small: BytesMut,
    bytes: usize,
}

impl Coalescer {
    fn extend(&mut self, chunks: Vec<Chunk>) {
        for c in chunks {
            self.bytes += c.len();
            match c {
                Chunk::Bytes(b) if b.len() < COPY_BELOW_BYTES => self.small.extend_from_slice(&b),
                c => {
                    if !self.small.is_empty() {
                        self.chunks.push(Chunk::Bytes(self.small.split().freeze()));
                    }
                    self.chunks.push(c);
                }
            }
        }
    }

    fn finish(mut self) -> Vec<Chunk> {
        if !self.small.is_empty() {
            self.chunks.push(Chunk::Bytes(self.small.split().freeze()));
        }
        self.chunks
    }
}

/// Writes chunks in order: runs of bytes with vectored writes, file ranges with sendfile (the
/// bytes just before a range written the same direct way, marked as having more to follow).
/// `run` is an empty vector to gather runs of bytes in (kept by the caller for its capacity).
async fn write_chunks<W: SocketWrite>(
    writer: &mut W,
    mut chunks: Vec<Chunk>,
    run: &mut Vec<Bytes>,
) -> std::io::Result<()> {
    if chunks.len() == 1 && matches!(chunks[0], Chunk::Bytes(_)) {
        let Some(Chunk::Bytes(b)) = chunks.pop() else {
            unreachable!("checked: one chunk of bytes")
        };
        return writer.write_all(b).await;
    }
    run.clear();
    for c in chunks {
        match c {
            Chunk::Bytes(b) => run.push(b),
            Chunk::File(r) => {
                if !run.is_empty() {
                    writer.write_before_file(run).await?;
                }
                writer.send_file(&r).await?;
            }
        }
    }
    match run.len() {
        0 => Ok(()),
        1 => writer.write_all(run.pop().expect("one run")).await,
        _ => writer.write_all_vectored(std::mem::take(run)).await,
    }
}

/// Decodes and handles one frame, appending the response frame (if any) to `out`.
/// `Err` closes the connection with that reason.
async fn handle_frame(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    frame: Bytes,
) -> Result<Reply, String> {
    if !conn.auth.borrow().serves_requests() {
        return handle_unauthenticated(broker, conn, frame).await;
    }
    // KIP-368: past the session's end only re-authentication is served; anything else closes
    // the connection, as Kafka does.
    if let Some(end) = conn.session_expires.get() {
        let sasl = samsa_protocol::header::peek_prefix(&frame).is_some_and(|(key, _, _)| {
            key == ApiKey::SaslHandshake as i16 || key == ApiKey::SaslAuthenticate as i16
        });
        if !sasl && std::time::Instant::now() >= end {
            *conn.auth.borrow_mut() = AuthState::Failed;
            return Err(format!(
                "the SASL session ended (connections.max.reauth.ms={}) and the client did not \
                 re-authenticate",
                conn.listener.reauth_ms
            ));
        }
    }
    // Produce v0-2 is advertised but refused, in that version's own layout: decided from the
    // header prefix, so the frame is not cloned (a clone would force the log to copy every
    // produced batch before rewriting its offsets).
    if let Some((key, version, correlation_id)) = samsa_protocol::header::peek_prefix(&frame) {
        if key == ApiKey::Produce as i16
            && (0..samsa_protocol::api_table::PRODUCE_REFUSED_BELOW).contains(&version)
        {
            let mut body = BytesMut::new();
            handlers::produce::refuse_legacy_version(&frame, version, correlation_id, &mut body)?;
            return Ok(Reply::Ready(vec![Chunk::Bytes(body.freeze())]));
        }
    }
    decode_and_handle(broker, conn, frame).await
}

/// Decodes a request frame and hands it to its handler; an ApiVersions of a version this
/// broker does not know gets the v0 answer KIP-511 asks for.
async fn decode_and_handle(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    frame: Bytes,
) -> Result<Reply, String> {
    // The streams group APIs are outside `kafka-protocol`'s key table: routed by key first.
    if let Some((key, _, _)) = samsa_protocol::header::peek_prefix(&frame) {
        if handlers::streams_dispatch::serves(key) {
            return handlers::streams_dispatch::handle_frame(broker, conn, &frame).await;
        }
    }
    match samsa_protocol::decode_request(frame) {
        Ok(req) => handlers::handle_request(broker, conn, req).await,
        Err(RequestError::UnsupportedVersion {
            api_key: ApiKey::ApiVersions,
            correlation_id,
            ..
        }) => {
            let mut body = BytesMut::new();
            crate::controller::answers::api_versions::unsupported_version(
                &mut body,
                correlation_id,
                samsa_protocol::SUPPORTED_APIS,
            );
            Ok(Reply::Ready(vec![Chunk::Bytes(body.freeze())]))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// A frame on a SASL listener before authentication: a raw token after SaslHandshake v0, else
/// one of the requests the SASL state allows (ApiVersions and SaslHandshake, then
/// SaslAuthenticate). Anything else closes the connection, as Kafka's authenticator does
/// ("Unexpected Kafka request of type ... during SASL handshake").
async fn handle_unauthenticated(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    frame: Bytes,
) -> Result<Reply, String> {
    let raw = {
        let mut auth = conn.auth.borrow_mut();
        match &mut *auth {
            AuthState::RawTokens(exchange) => {
                let settings = conn
                    .listener
                    .sasl
                    .as_ref()
                    .expect("an exchange runs on a SASL listener only");
                let image = broker.node.controller.image();
                let step = exchange.step(&frame, settings, &|m, user| {
                    image.scram_credential(m.code(), user).cloned()
                });
                match &step {
                    Ok(s) if s.principal.is_some() => *auth = AuthState::Authenticated,
                    Ok(_) => {}
                    Err(_) => *auth = AuthState::Failed,
                }
                Some(step)
            }
            _ => None,
        }
    };
    if let Some(step) = raw {
        return match step {
            Ok(step) => {
                if let Some(principal) = step.principal {
                    tracing::debug!(peer = %conn.peer, listener = %conn.listener.name, %principal, "authenticated");
                    broker
                        .node
                        .metrics
                        .authentication(&conn.listener.name, "success");
                    conn.set_principal(principal);
                }
                let mut out = BytesMut::with_capacity(4 + step.response.len());
                out.extend_from_slice(&(step.response.len() as u32).to_be_bytes());
                out.extend_from_slice(&step.response);
                Ok(Reply::Ready(vec![Chunk::Bytes(out.freeze())]))
            }
            // SaslHandshake v0 has no way to carry an error: the connection closes.
            Err(e) => {
                broker
                    .node
                    .metrics
                    .authentication(&conn.listener.name, "failure");
                let ms = broker
                    .node
                    .config
                    .long("connection.failed.authentication.delay.ms")
                    .max(0) as u64;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Err(match e {
                    SaslError::AuthenticationFailed(m) | SaslError::IllegalState(m) => m,
                })
            }
        };
    }
    let allowed = match samsa_protocol::header::peek_prefix(&frame) {
        Some((key, _, _)) => {
            let awaiting = matches!(*conn.auth.borrow(), AuthState::AwaitingHandshake);
            let authenticating = matches!(*conn.auth.borrow(), AuthState::Authenticating(_));
            (awaiting && (key == ApiKey::ApiVersions as i16 || key == ApiKey::SaslHandshake as i16))
                || (authenticating && key == ApiKey::SaslAuthenticate as i16)
        }
        None => false,
    };
    if !allowed {
        let what = samsa_protocol::header::peek_prefix(&frame)
            .and_then(|(key, _, _)| ApiKey::try_from(key).ok())
            .map(|k| format!("{k:?}"))
            .unwrap_or_else(|| "a frame that is not a Kafka request".into());
        *conn.auth.borrow_mut() = AuthState::Failed;
        return Err(format!(
            "unexpected {what} before SASL authentication completed (listener {})",
            conn.listener.name
        ));
    }
    let handled = decode_and_handle(broker, conn, frame).await;
    if handled.is_err() {
        *conn.auth.borrow_mut() = AuthState::Failed;
    }
    handled
}
