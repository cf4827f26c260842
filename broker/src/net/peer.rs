//! Outbound Kafka-protocol connections from this node to another node: to the other
//! controllers (the quorum's RPCs, forwarded broker requests) and to other brokers
//! (`inter_broker.rs`). One TCP connection per peer, requests pipelined on it and answered in
//! order (Kafka's protocol answers a connection's requests in the order they were sent),
//! reconnected with a backoff after any failure.
//!
//! A request whose connection fails is answered with an error; the caller's own timeouts and
//! retries decide what happens next, so nothing here retries.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind, SaslAuthenticateRequest,
    SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use parking_lot::Mutex;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::security::outbound::PeerSecurity;
use crate::security::sasl::client::{Credentials, Next, SaslClient};

/// Largest response frame accepted from a peer (a Fetch of the metadata log, a snapshot chunk).
const RESPONSE_BYTES_MAX: usize = 64 << 20;
/// Wait before reconnecting after a failure, so a dead peer costs one attempt per period.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(200);
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the TLS handshake and the SASL exchange may take together (a peer delays its
/// answer to a failed authentication, as Samsa and Kafka do, to slow guessing).
const SECURE_TIMEOUT: Duration = Duration::from_secs(10);
/// Wait before trying again a peer that refused TLS or SASL (a configuration error, which
/// more attempts do not fix quickly).
const REFUSED_BACKOFF: Duration = Duration::from_secs(1);

/// The host names addresses were resolved from, so that TLS checks a peer's certificate for
/// the name it was configured by (Kafka's `ssl.endpoint.identification.algorithm=https`), not
/// only for its address.
static NAMES: OnceLock<Mutex<HashMap<SocketAddr, String>>> = OnceLock::new();

/// Resolves a peer's `host:port`, remembering the host name it came from.
pub fn resolve(host: &str, port: u16) -> Option<SocketAddr> {
    let addr = (host, port).to_socket_addrs().ok()?.next()?;
    if host.parse::<IpAddr>().is_err() {
        let names = NAMES.get_or_init(Default::default);
        names.lock().insert(addr, host.to_string());
    }
    Some(addr)
}

/// The name a peer's certificate must carry: the host it was configured by, else its address.
fn server_name(addr: SocketAddr) -> ServerName<'static> {
    let host = NAMES.get().and_then(|n| n.lock().get(&addr).cloned());
    host.and_then(|h| ServerName::try_from(h).ok())
        .unwrap_or_else(|| ServerName::IpAddress(addr.ip().into()))
}

pub type Reply = Result<ResponseKind, PeerError>;

/// Why a request to a peer has no answer. The texts are those the log and the callers'
/// messages show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// The peer is not there (not worth a warning: peers restart).
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: SocketAddr, reason: String },
    /// The peer did not accept the connection within [`CONNECT_TIMEOUT`].
    #[error("connecting to {addr} timed out")]
    ConnectTimeout { addr: SocketAddr },
    /// The peer is there but TLS or SASL failed: a configuration error an operator must see.
    #[error(transparent)]
    Security(#[from] SecureError),
    /// Queued while a connection could not be opened.
    #[error("{addr}: not connected")]
    NotConnected { addr: SocketAddr },
    /// The request or its answer could not be encoded or decoded.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// Writing the request failed (the connection is closed).
    #[error("cannot send to {addr}: {reason}")]
    Send { addr: SocketAddr, reason: String },
    /// The connection closed before the answer came.
    #[error("connection to {addr} lost: {why}")]
    Lost { addr: SocketAddr, why: Closed },
}

/// Why a connection could not be secured (TLS, then SASL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecureError {
    /// The listener's security settings could not be used ([`PeerSecurity::refused`]).
    #[error("{0}")]
    Refused(String),
    #[error("TLS handshake with {addr} (as {name:?}) failed: {reason}")]
    Tls {
        addr: SocketAddr,
        name: ServerName<'static>,
        reason: String,
    },
    #[error("{key:?}: write failed: {reason}")]
    Write { key: ApiKey, reason: String },
    #[error("{key:?}: read failed: {reason}")]
    Read { key: ApiKey, reason: String },
    #[error("the peer closed the connection during {0:?}")]
    Closed(ApiKey),
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("{0:?} was answered with another response")]
    WrongAnswer(ApiKey),
    /// SaslHandshake refused the mechanism; `offered` are those the peer offers.
    #[error("{addr} does not offer {mechanism} (error {code}); it offers {offered:?}")]
    MechanismNotOffered {
        addr: SocketAddr,
        mechanism: &'static str,
        code: i16,
        offered: Vec<String>,
    },
    /// SaslAuthenticate refused the credentials.
    #[error("{addr} refused {user} with {mechanism} (error {code}): {message}")]
    AuthenticationFailed {
        addr: SocketAddr,
        user: String,
        mechanism: &'static str,
        code: i16,
        message: String,
    },
    /// The peer's SASL answer did not satisfy this side's exchange.
    #[error("authenticating to {addr} with {mechanism}: {reason}")]
    Exchange {
        addr: SocketAddr,
        mechanism: &'static str,
        reason: String,
    },
    #[error("securing the connection to {addr} ({security}) took over {SECURE_TIMEOUT:?}")]
    Timeout { addr: SocketAddr, security: String },
}

/// A request that could not be encoded, or an answer that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("{key:?} v{version} header: {reason}")]
    RequestHeader {
        key: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("{key:?} v{version}: {reason}")]
    Request {
        key: ApiKey,
        version: i16,
        reason: String,
    },
    /// A response frame's size prefix is negative or over [`RESPONSE_BYTES_MAX`].
    #[error("invalid response size {0}")]
    FrameSize(i32),
    #[error("{key:?} response header: {reason}")]
    ResponseHeader { key: ApiKey, reason: String },
    #[error("response correlation id {got} where {expected} was expected")]
    CorrelationId { got: i32, expected: i32 },
    #[error("{key:?} v{version} response: {reason}")]
    Response {
        key: ApiKey,
        version: i16,
        reason: String,
    },
}

/// Why a connection to a peer was closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Closed {
    /// The session is due for re-authentication (KIP-368): opened afresh at once.
    #[error("re-authenticate")]
    Reauthenticate,
    #[error("write failed: {0}")]
    Write(String),
    #[error("no answer within {0:?}")]
    NoAnswer(Duration),
    #[error("the peer closed the connection")]
    ByPeer,
    #[error("read failed: {0}")]
    Read(String),
    #[error("a response to no request")]
    Unrequested,
    #[error(transparent)]
    Codec(#[from] CodecError),
}

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
    /// `security` says how the connection is secured (TLS, SASL) for the listener it reaches.
    pub fn spawn(
        addr: SocketAddr,
        client_id: String,
        timeout: Duration,
        security: Arc<PeerSecurity>,
    ) -> Peer {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(addr, client_id, timeout, security, rx));
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

/// A connection to a peer, TLS or not.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn run(
    addr: SocketAddr,
    client_id: String,
    timeout: Duration,
    security: Arc<PeerSecurity>,
    mut rx: mpsc::UnboundedReceiver<Outbound>,
) {
    let client_id = StrBytes::from_string(client_id);
    let mut correlation_id: i32 = 0;
    // The first request of the next connection, taken off the queue while disconnected.
    let mut first: Option<Outbound> = None;
    // The last security failure logged, so that a peer refusing every attempt logs once.
    let mut last_refusal: Option<SecureError> = None;
    loop {
        let Some(req) = (match first.take() {
            Some(r) => Some(r),
            None => rx.recv().await,
        }) else {
            return; // the runtime is gone
        };
        let (stream, session) = match open(addr, &security, &client_id, &mut correlation_id).await {
            Ok(s) => s,
            Err(PeerError::Security(e)) => {
                if last_refusal.as_ref() != Some(&e) {
                    tracing::warn!(peer = %addr, listener = %security.listener, error = %e, "cannot open a secured connection to another node");
                    last_refusal = Some(e.clone());
                }
                let _ = req.reply.send(Err(e.into()));
                fail_queued(&mut rx, addr);
                tokio::time::sleep(REFUSED_BACKOFF).await;
                continue;
            }
            Err(e) => {
                let _ = req.reply.send(Err(e));
                fail_queued(&mut rx, addr);
                tokio::time::sleep(RECONNECT_BACKOFF).await;
                continue;
            }
        };
        if last_refusal.take().is_some() {
            tracing::info!(peer = %addr, listener = %security.listener, "connected to the other node after all");
        }
        tracing::debug!(peer = %addr, security = %security.describe(), "connected to a peer");
        // KIP-368: re-authenticate (here: reconnect, which authenticates afresh) at 85 to 95 %
        // of the session's lifetime, as Kafka's clients pick the moment.
        let reauth_at = session.map(|lifetime| {
            let share = rand::Rng::gen_range(&mut rand::thread_rng(), 0.85..0.95);
            tokio::time::Instant::now() + lifetime.mul_f64(share)
        });
        let mut reauth_due = false;
        let (mut reader, mut writer) = tokio::io::split(stream);
        let mut in_flight: VecDeque<InFlight> = VecDeque::new();
        let mut read_buf = BytesMut::with_capacity(64 << 10);
        let mut pending = Some(req);
        let why = 'conn: loop {
            // Write every queued request, then wait for either a response or another request.
            // Once re-authentication is due, nothing more is sent: what is in flight is
            // answered, then the connection is opened afresh.
            while let Some(req) = pending
                .take()
                .or_else(|| (!reauth_due).then(|| rx.try_recv().ok()).flatten())
            {
                correlation_id = correlation_id.wrapping_add(1);
                let frame = match encode_request(
                    req.key,
                    req.version,
                    &req.body,
                    correlation_id,
                    &client_id,
                ) {
                    Ok(f) => f,
                    Err(e) => {
                        let _ = req.reply.send(Err(e.into()));
                        continue;
                    }
                };
                if let Err(e) = writer.write_all(&frame).await {
                    let _ = req.reply.send(Err(PeerError::Send {
                        addr,
                        reason: e.to_string(),
                    }));
                    break 'conn Closed::Write(e.to_string());
                }
                in_flight.push_back(InFlight {
                    correlation_id,
                    deadline: tokio::time::Instant::now() + timeout,
                    key: req.key,
                    version: req.version,
                    reply: req.reply,
                });
            }
            if reauth_due && in_flight.is_empty() {
                break 'conn Closed::Reauthenticate;
            }
            let far = tokio::time::Instant::now() + Duration::from_secs(3600);
            let oldest = in_flight.front().map(|w| w.deadline).unwrap_or(far);
            let reauth = reauth_at.filter(|_| !reauth_due).unwrap_or(far);
            tokio::select! {
                _ = tokio::time::sleep_until(oldest) => {
                    break 'conn Closed::NoAnswer(timeout);
                }
                _ = tokio::time::sleep_until(reauth) => reauth_due = true,
                next = rx.recv(), if !reauth_due => match next {
                    Some(req) => pending = Some(req),
                    None => return,
                },
                read = reader.read_buf(&mut read_buf) => {
                    match read {
                        Ok(0) => break 'conn Closed::ByPeer,
                        Err(e) => break 'conn Closed::Read(e.to_string()),
                        Ok(_) => {}
                    }
                    loop {
                        match take_frame(&mut read_buf) {
                            Err(e) => break 'conn e.into(),
                            Ok(None) => break,
                            Ok(Some(frame)) => {
                                let Some(waiting) = in_flight.pop_front() else {
                                    break 'conn Closed::Unrequested;
                                };
                                match decode_response(frame, waiting.key, waiting.version, waiting.correlation_id) {
                                    Ok(body) => { let _ = waiting.reply.send(Ok(body)); }
                                    Err(e) => {
                                        let _ = waiting.reply.send(Err(e.clone().into()));
                                        break 'conn e.into();
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
        // A TLS close_notify, bounded: a peer that stopped reading must not hold this task.
        let _ = tokio::time::timeout(Duration::from_secs(1), writer.shutdown()).await;
        if why == Closed::Reauthenticate {
            tracing::debug!(peer = %addr, "re-authenticating: opening the connection afresh");
            continue;
        }
        tracing::debug!(peer = %addr, reason = %why, "connection to a peer closed");
        for w in in_flight.drain(..) {
            let _ = w.reply.send(Err(PeerError::Lost {
                addr,
                why: why.clone(),
            }));
        }
        tokio::time::sleep(RECONNECT_BACKOFF).await;
    }
}

/// Connects to `addr` and secures the connection as `security` says: TLS, then SASL. The
/// SASL session's lifetime (KIP-368) when the peer gave one.
async fn open(
    addr: SocketAddr,
    security: &PeerSecurity,
    client_id: &StrBytes,
    correlation_id: &mut i32,
) -> Result<(Box<dyn Stream>, Option<Duration>), PeerError> {
    if let Some(why) = &security.refused {
        return Err(SecureError::Refused(why.clone()).into());
    }
    let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(PeerError::Connect {
                addr,
                reason: e.to_string(),
            })
        }
        Err(_) => return Err(PeerError::ConnectTimeout { addr }),
    };
    let _ = tcp.set_nodelay(true);
    let secure = async {
        let mut stream: Box<dyn Stream> = match security.tls() {
            None => Box::new(tcp),
            Some(config) => {
                let name = server_name(addr);
                let tls = tokio_rustls::TlsConnector::from(config)
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| SecureError::Tls {
                        addr,
                        name,
                        reason: e.to_string(),
                    })?;
                Box::new(tls)
            }
        };
        let session = match &security.sasl {
            None => None,
            Some(creds) => {
                authenticate(&mut stream, addr, creds, client_id, correlation_id).await?
            }
        };
        Ok::<_, SecureError>((stream, session))
    };
    match tokio::time::timeout(SECURE_TIMEOUT, secure).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(SecureError::Timeout {
            addr,
            security: security.describe(),
        }
        .into()),
    }
}

/// SaslHandshake v1, then SaslAuthenticate v2 until the exchange is complete: the session
/// lifetime the peer gave, if any.
async fn authenticate(
    stream: &mut Box<dyn Stream>,
    addr: SocketAddr,
    creds: &Credentials,
    client_id: &StrBytes,
    correlation_id: &mut i32,
) -> Result<Option<Duration>, SecureError> {
    let mech = creds.mechanism.name();
    let mut handshake = SaslHandshakeRequest::default();
    handshake.mechanism = StrBytes::from_static_str(mech);
    let body = RequestKind::SaslHandshake(handshake);
    let ResponseKind::SaslHandshake(r) = round_trip(
        stream,
        ApiKey::SaslHandshake,
        1,
        body,
        client_id,
        correlation_id,
    )
    .await?
    else {
        return Err(SecureError::WrongAnswer(ApiKey::SaslHandshake));
    };
    if r.error_code != 0 {
        return Err(SecureError::MechanismNotOffered {
            addr,
            mechanism: mech,
            code: r.error_code,
            offered: r.mechanisms.iter().map(|m| m.to_string()).collect(),
        });
    }
    let mut client = SaslClient::new(creds.clone());
    let mut token = client.first(crate::util::now_ms());
    loop {
        let mut auth = SaslAuthenticateRequest::default();
        auth.auth_bytes = Bytes::from(std::mem::take(&mut token));
        let body = RequestKind::SaslAuthenticate(auth);
        let ResponseKind::SaslAuthenticate(r) = round_trip(
            stream,
            ApiKey::SaslAuthenticate,
            2,
            body,
            client_id,
            correlation_id,
        )
        .await?
        else {
            return Err(SecureError::WrongAnswer(ApiKey::SaslAuthenticate));
        };
        if r.error_code != 0 {
            return Err(SecureError::AuthenticationFailed {
                addr,
                user: creds.username.clone(),
                mechanism: mech,
                code: r.error_code,
                message: r
                    .error_message
                    .as_deref()
                    .unwrap_or("no message")
                    .to_string(),
            });
        }
        match client
            .step(&r.auth_bytes)
            .map_err(|reason| SecureError::Exchange {
                addr,
                mechanism: mech,
                reason,
            })? {
            Next::Send(t) => token = t,
            Next::Done => {
                let lifetime = u64::try_from(r.session_lifetime_ms).unwrap_or(0);
                return Ok((lifetime > 0).then(|| Duration::from_millis(lifetime)));
            }
        }
    }
}

/// Sends one request on a connection nothing else uses yet and reads its answer.
async fn round_trip(
    stream: &mut Box<dyn Stream>,
    key: ApiKey,
    version: i16,
    body: RequestKind,
    client_id: &StrBytes,
    correlation_id: &mut i32,
) -> Result<ResponseKind, SecureError> {
    *correlation_id = correlation_id.wrapping_add(1);
    let frame = encode_request(key, version, &body, *correlation_id, client_id)?;
    stream
        .write_all(&frame)
        .await
        .map_err(|e| SecureError::Write {
            key,
            reason: e.to_string(),
        })?;
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        if let Some(frame) = take_frame(&mut buf)? {
            return Ok(decode_response(frame, key, version, *correlation_id)?);
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) => return Err(SecureError::Closed(key)),
            Ok(_) => {}
            Err(e) => {
                return Err(SecureError::Read {
                    key,
                    reason: e.to_string(),
                })
            }
        }
    }
}

/// Answers everything already queued with an error, so that the quorum's requests to a dead
/// peer do not pile up while it is unreachable.
fn fail_queued(rx: &mut mpsc::UnboundedReceiver<Outbound>, addr: SocketAddr) {
    while let Ok(req) = rx.try_recv() {
        let _ = req.reply.send(Err(PeerError::NotConnected { addr }));
    }
}

fn encode_request(
    key: ApiKey,
    version: i16,
    body: &RequestKind,
    correlation_id: i32,
    client_id: &StrBytes,
) -> Result<Bytes, CodecError> {
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(client_id.clone());
    let mut out = BytesMut::with_capacity(128);
    out.put_i32(0);
    header
        .encode(&mut out, key.request_header_version(version))
        .map_err(|e| CodecError::RequestHeader {
            key,
            version,
            reason: e.to_string(),
        })?;
    body.encode(&mut out, version)
        .map_err(|e| CodecError::Request {
            key,
            version,
            reason: e.to_string(),
        })?;
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out.freeze())
}

/// Splits one whole frame (without its size prefix) off the front of `buf`, if there is one.
fn take_frame(buf: &mut BytesMut) -> Result<Option<Bytes>, CodecError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 || size as usize > RESPONSE_BYTES_MAX {
        return Err(CodecError::FrameSize(size));
    }
    if buf.len() < 4 + size as usize {
        buf.reserve(4 + size as usize - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(size as usize).freeze()))
}

fn decode_response(
    mut frame: Bytes,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<ResponseKind, CodecError> {
    let header_version = samsa_protocol::response::response_header_version(key, version);
    let header = ResponseHeader::decode(&mut frame, header_version).map_err(|e| {
        CodecError::ResponseHeader {
            key,
            reason: e.to_string(),
        }
    })?;
    if header.correlation_id != correlation_id {
        return Err(CodecError::CorrelationId {
            got: header.correlation_id,
            expected: correlation_id,
        });
    }
    ResponseKind::decode(key, &mut frame, version).map_err(|e| CodecError::Response {
        key,
        version,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors read as the log and the callers' messages have always shown them.
    #[test]
    fn errors_keep_their_texts() {
        let addr: SocketAddr = "10.0.0.7:9093".parse().unwrap();
        let lost = PeerError::Lost {
            addr,
            why: Closed::NoAnswer(Duration::from_secs(30)),
        };
        assert_eq!(
            lost.to_string(),
            "connection to 10.0.0.7:9093 lost: no answer within 30s"
        );
        let refused = PeerError::from(SecureError::MechanismNotOffered {
            addr,
            mechanism: "SCRAM-SHA-512",
            code: 33,
            offered: vec!["PLAIN".into()],
        });
        assert_eq!(
            refused.to_string(),
            "10.0.0.7:9093 does not offer SCRAM-SHA-512 (error 33); it offers [\"PLAIN\"]"
        );
        let wrong = SecureError::WrongAnswer(ApiKey::SaslHandshake);
        assert_eq!(
            wrong.to_string(),
            "SaslHandshake was answered with another response"
        );
        let decode = PeerError::from(CodecError::Response {
            key: ApiKey::Fetch,
            version: 12,
            reason: "short".into(),
        });
        assert_eq!(decode.to_string(), "Fetch v12 response: short");
        assert_eq!(
            PeerError::NotConnected { addr }.to_string(),
            "10.0.0.7:9093: not connected"
        );
    }
}
