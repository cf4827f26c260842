//! Outbound Kafka-protocol connections from this node to another node: to the other
//! controllers (the quorum's RPCs, forwarded broker requests) and to other brokers
//! (`inter_broker.rs`). One TCP connection per peer, requests pipelined on it and answered in
//! order (Kafka's protocol answers a connection's requests in the order they were sent),
//! reconnected with a backoff after any failure.
//!
//! A request whose connection fails is answered with an error; the caller's own timeouts and
//! retries decide what happens next, so nothing here retries.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// Largest response frame accepted from a peer (a Fetch of the metadata log, a snapshot chunk).
const RESPONSE_BYTES_MAX: usize = 64 << 20;
/// Wait before reconnecting after a failure, so a dead peer costs one attempt per period.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(200);
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

pub type Reply = Result<ResponseKind, String>;

/// One request for a peer.
pub struct Outbound {
    pub key: ApiKey,
    pub version: i16,
    pub body: RequestKind,
    pub reply: oneshot::Sender<Reply>,
}

/// A handle to the connection task of one peer.
#[derive(Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    tx: mpsc::UnboundedSender<Outbound>,
}

impl Peer {
    /// Starts the connection task of a peer on the current tokio runtime (it connects on the
    /// first request).
    /// A request unanswered after `timeout` fails, and so does its connection (responses
    /// come in order, so a peer that stopped answering one answers none behind it).
    pub fn spawn(addr: SocketAddr, client_id: String, timeout: Duration) -> Peer {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(addr, client_id, timeout, rx));
        Peer { addr, tx }
    }

    /// Queues a request; the answer (or why there is none) comes on the returned channel.
    pub fn send(&self, key: ApiKey, version: i16, body: RequestKind) -> oneshot::Receiver<Reply> {
        let (reply, rx) = oneshot::channel();
        let _ = self.tx.send(Outbound {
            key,
            version,
            body,
            reply,
        });
        rx
    }
}

/// What a sent request waits for.
struct InFlight {
    correlation_id: i32,
    deadline: tokio::time::Instant,
    key: ApiKey,
    version: i16,
    reply: oneshot::Sender<Reply>,
}

async fn run(
    addr: SocketAddr,
    client_id: String,
    timeout: Duration,
    mut rx: mpsc::UnboundedReceiver<Outbound>,
) {
    let client_id = StrBytes::from_string(client_id);
    let mut correlation_id: i32 = 0;
    // The first request of the next connection, taken off the queue while disconnected.
    let mut first: Option<Outbound> = None;
    loop {
        let Some(req) = (match first.take() {
            Some(r) => Some(r),
            None => rx.recv().await,
        }) else {
            return; // the runtime is gone
        };
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                let _ = req
                    .reply
                    .send(Err(format!("cannot connect to {addr}: {e}")));
                fail_queued(&mut rx, addr, "not connected");
                tokio::time::sleep(RECONNECT_BACKOFF).await;
                continue;
            }
            Err(_) => {
                let _ = req
                    .reply
                    .send(Err(format!("connecting to {addr} timed out")));
                fail_queued(&mut rx, addr, "not connected");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tracing::debug!(peer = %addr, "connected to a peer");
        let (mut reader, mut writer) = stream.into_split();
        let mut in_flight: VecDeque<InFlight> = VecDeque::new();
        let mut read_buf = BytesMut::with_capacity(64 << 10);
        let mut pending = Some(req);
        let why = 'conn: loop {
            // Write every queued request, then wait for either a response or another request.
            while let Some(req) = pending.take().or_else(|| rx.try_recv().ok()) {
                correlation_id = correlation_id.wrapping_add(1);
                let frame = match encode_request(&req, correlation_id, &client_id) {
                    Ok(f) => f,
                    Err(e) => {
                        let _ = req.reply.send(Err(e));
                        continue;
                    }
                };
                if let Err(e) = writer.write_all(&frame).await {
                    let _ = req.reply.send(Err(format!("cannot send to {addr}: {e}")));
                    break 'conn format!("write failed: {e}");
                }
                in_flight.push_back(InFlight {
                    correlation_id,
                    deadline: tokio::time::Instant::now() + timeout,
                    key: req.key,
                    version: req.version,
                    reply: req.reply,
                });
            }
            let oldest = in_flight
                .front()
                .map(|w| w.deadline)
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                _ = tokio::time::sleep_until(oldest) => {
                    break 'conn format!("no answer within {timeout:?}");
                }
                next = rx.recv() => match next {
                    Some(req) => pending = Some(req),
                    None => return,
                },
                read = reader.read_buf(&mut read_buf) => {
                    match read {
                        Ok(0) => break 'conn "the peer closed the connection".to_string(),
                        Err(e) => break 'conn format!("read failed: {e}"),
                        Ok(_) => {}
                    }
                    loop {
                        match take_frame(&mut read_buf) {
                            Err(e) => break 'conn e,
                            Ok(None) => break,
                            Ok(Some(frame)) => {
                                let Some(waiting) = in_flight.pop_front() else {
                                    break 'conn "a response to no request".to_string();
                                };
                                match decode_response(frame, &waiting) {
                                    Ok(body) => { let _ = waiting.reply.send(Ok(body)); }
                                    Err(e) => {
                                        let _ = waiting.reply.send(Err(e.clone()));
                                        break 'conn e;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
        tracing::debug!(peer = %addr, reason = %why, "connection to a peer closed");
        for w in in_flight.drain(..) {
            let _ = w
                .reply
                .send(Err(format!("connection to {addr} lost: {why}")));
        }
        tokio::time::sleep(RECONNECT_BACKOFF).await;
    }
}

/// Answers everything already queued with an error, so that the quorum's requests to a dead
/// peer do not pile up while it is unreachable.
fn fail_queued(rx: &mut mpsc::UnboundedReceiver<Outbound>, addr: SocketAddr, why: &str) {
    while let Ok(req) = rx.try_recv() {
        let _ = req.reply.send(Err(format!("{addr}: {why}")));
    }
}

fn encode_request(
    req: &Outbound,
    correlation_id: i32,
    client_id: &StrBytes,
) -> Result<Bytes, String> {
    let mut header = RequestHeader::default();
    header.request_api_key = req.key as i16;
    header.request_api_version = req.version;
    header.correlation_id = correlation_id;
    header.client_id = Some(client_id.clone());
    let mut out = BytesMut::with_capacity(128);
    out.put_i32(0);
    header
        .encode(&mut out, req.key.request_header_version(req.version))
        .map_err(|e| format!("{:?} v{} header: {e}", req.key, req.version))?;
    req.body
        .encode(&mut out, req.version)
        .map_err(|e| format!("{:?} v{}: {e}", req.key, req.version))?;
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out.freeze())
}

/// Splits one whole frame (without its size prefix) off the front of `buf`, if there is one.
fn take_frame(buf: &mut BytesMut) -> Result<Option<Bytes>, String> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 || size as usize > RESPONSE_BYTES_MAX {
        return Err(format!("invalid response size {size}"));
    }
    if buf.len() < 4 + size as usize {
        buf.reserve(4 + size as usize - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(size as usize).freeze()))
}

fn decode_response(mut frame: Bytes, waiting: &InFlight) -> Result<ResponseKind, String> {
    let header_version =
        samsa_protocol::response::response_header_version(waiting.key, waiting.version);
    let header = ResponseHeader::decode(&mut frame, header_version)
        .map_err(|e| format!("{:?} response header: {e}", waiting.key))?;
    if header.correlation_id != waiting.correlation_id {
        return Err(format!(
            "response correlation id {} where {} was expected",
            header.correlation_id, waiting.correlation_id
        ));
    }
    ResponseKind::decode(waiting.key, &mut frame, waiting.version)
        .map_err(|e| format!("{:?} v{} response: {e}", waiting.key, waiting.version))
}
