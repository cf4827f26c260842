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
use samsa_protocol::FrameDecoder;
use tokio::sync::mpsc;

use super::transport::{SocketRead, SocketWrite};
use crate::handlers::{self, Connection};
use crate::server::Broker;

/// Responses waiting for the writer; beyond this the reader stops reading (backpressure).
const WRITE_QUEUE_DEPTH: usize = 64;
/// Initial read buffer; it grows to the size of the largest frame seen.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Serves one connection until the client closes it, it idles out, it breaks the protocol,
/// or the broker shuts down.
pub async fn serve<R: SocketRead, W: SocketWrite>(
    broker: Arc<Broker>,
    peer: SocketAddr,
    mut reader: R,
    writer: W,
) {
    let (tx, rx) = mpsc::channel::<Bytes>(WRITE_QUEUE_DEPTH);
    let conn = Rc::new(Connection::new(peer));
    let read_side = read_loop(&broker, &conn, &mut reader, tx);
    let write_side = write_loop(writer, rx);
    let (end, _) = tokio::join!(read_side, write_side);
    reader.shutdown();
    match end {
        End::ClientClosed | End::Shutdown => tracing::debug!(%peer, "connection closed"),
        End::Idle(ms) => {
            tracing::debug!(%peer, "closing connection idle for {ms} ms (connections.max.idle.ms)")
        }
        End::Protocol(reason) => {
            tracing::warn!(%peer, client_id = conn.client_id().as_deref().unwrap_or(""), "closing connection: {reason}")
        }
        End::Io(e) => tracing::debug!(%peer, "connection error: {e}"),
    }
}

enum End {
    ClientClosed,
    Idle(u64),
    Shutdown,
    Protocol(String),
    Io(std::io::Error),
}

async fn read_loop<R: SocketRead>(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    reader: &mut R,
    tx: mpsc::Sender<Bytes>,
) -> End {
    let decoder = FrameDecoder::new(broker.limits.socket_request_max_bytes);
    let idle = Duration::from_millis(broker.limits.connections_max_idle_ms);
    let mut shutdown = broker.shutdown_signal();
    let mut buf = BytesMut::with_capacity(READ_BUFFER_BYTES);
    loop {
        // Handle every complete frame already buffered.
        loop {
            let frame = match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => return End::Protocol(e.to_string()),
            };
            let mut out = BytesMut::new();
            match handle_frame(broker, conn, frame, &mut out).await {
                Ok(()) => {}
                Err(reason) => return End::Protocol(reason),
            }
            if !out.is_empty() && tx.send(out.freeze()).await.is_err() {
                return End::ClientClosed;
            }
            if *shutdown.borrow() {
                return End::Shutdown;
            }
        }
        // Make room for the rest of the frame (its size is known and already checked).
        let want = match decoder.check(&buf) {
            Ok(FrameStatus::Incomplete { total_bytes }) => total_bytes.max(buf.len() + 1),
            _ => buf.len() + 1,
        };
        if buf.capacity() < want.max(READ_BUFFER_BYTES) {
            buf.reserve(want.max(READ_BUFFER_BYTES) - buf.len());
        }
        let read = tokio::select! {
            r = tokio::time::timeout(idle, reader.read(buf)) => r,
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

async fn write_loop<W: SocketWrite>(mut writer: W, mut rx: mpsc::Receiver<Bytes>) {
    while let Some(first) = rx.recv().await {
        // Coalesce whatever else is already queued into one write.
        let data = match rx.try_recv() {
            Err(_) => first,
            Ok(second) => {
                let mut joined = BytesMut::with_capacity(first.len() + second.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&second);
                while let Ok(more) = rx.try_recv() {
                    joined.extend_from_slice(&more);
                    if joined.len() >= 1 << 20 {
                        break;
                    }
                }
                joined.freeze()
            }
        };
        if writer.write_all(data).await.is_err() {
            return;
        }
    }
}

/// Decodes and handles one frame, appending the response frame (if any) to `out`.
/// `Err` closes the connection with that reason.
async fn handle_frame(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    frame: Bytes,
    out: &mut BytesMut,
) -> Result<(), String> {
    match samsa_protocol::decode_request(frame.clone()) {
        Ok(req) => handlers::handle(broker, conn, req, out).await,
        Err(RequestError::UnsupportedVersion {
            api_key: ApiKey::ApiVersions,
            correlation_id,
            ..
        }) => {
            handlers::api_versions::unsupported_version(out, correlation_id);
            Ok(())
        }
        Err(RequestError::UnsupportedVersion {
            api_key: ApiKey::Produce,
            api_version,
            correlation_id,
            ..
        }) if api_version < samsa_protocol::api_table::PRODUCE_REFUSED_BELOW => {
            handlers::produce::refuse_legacy_version(&frame, api_version, correlation_id, out)
        }
        Err(e) => Err(e.to_string()),
    }
}
