//! A small blocking Kafka client for the admin CLI, built on `kafka-protocol`'s message
//! structs and nothing Samsa-specific, so every command also works against Apache Kafka.
//!
//! Each connection negotiates versions with ApiVersions once (falling back to v0 when the
//! broker answers UNSUPPORTED_VERSION, as KIP-511 prescribes); a call then picks the highest
//! version both sides know, capped where a newer layout would need topic ids. Requests are
//! built by a closure that gets the chosen version, because the codec refuses fields that a
//! version lacks. Partition requests go to the partition leader and group requests to the
//! group coordinator, as Kafka's clients route them.
//!
//! Connections are secured as `--command-config` says ([`super::security`]): TLS right after
//! the TCP connect, SASL after ApiVersions (SaslHandshake v1, SaslAuthenticate), renewed on the
//! connection before the session the broker gave ends (KIP-368).
//!
//! Limits: a response frame above [`RESPONSE_BYTES_MAX`] is refused before it is buffered;
//! every socket operation has a timeout.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest, MetadataRequest,
    MetadataResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslHandshakeRequest,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use kafka_protocol::ResponseError;

use super::security::{self, Security, Stream};
use crate::security::sasl::client::{Next, SaslClient};

/// Largest response frame the CLI accepts (a fetch is asked for far less).
pub const RESPONSE_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Connect and per-request timeout when the caller sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Highest versions the CLI sends, where the codec knows newer layouts it does not use:
/// Produce v13 and Fetch v13+ name topics by id, OffsetFetch v8+ and FindCoordinator v4+
/// batch several groups, Metadata v13 adds nothing the CLI reads.
fn version_cap(key: ApiKey) -> i16 {
    match key {
        ApiKey::Produce => 12,
        ApiKey::Fetch => 12,
        ApiKey::OffsetFetch => 7,
        ApiKey::FindCoordinator => 3,
        ApiKey::Metadata => 12,
        _ => i16::MAX,
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach {addr}: {reason}; is samsa running?")]
    Connect { addr: String, reason: String },
    #[error("connection to {addr} failed: {source}")]
    Io {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr} does not serve {api:?} in a version this client speaks (broker: {broker})")]
    Unsupported {
        addr: String,
        api: ApiKey,
        broker: String,
    },
    #[error("bad response from {addr}: {reason}")]
    Protocol { addr: String, reason: String },
    #[error("TLS with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    #[error("authentication with {addr} failed: {reason}")]
    Auth { addr: String, reason: String },
    #[error("{addr} closed the connection ({reason})")]
    Closed { addr: String, reason: String },
    #[error(transparent)]
    Kafka(#[from] KafkaError),
}

/// A Kafka error code with the thing it is about and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{message} ({name})")]
pub struct KafkaError {
    pub code: i16,
    pub name: String,
    pub message: String,
}

impl KafkaError {
    /// `what` names the subject (`topic 'orders'`); the message adds the error's meaning.
    pub fn new(code: i16, what: &str, server_message: Option<&str>) -> KafkaError {
        let name = crate::util::error_name(code);
        // Errors whose meaning is complete without the broker's words (which only repeat
        // the subject) are told in ours; for the rest the broker's message says what broke.
        let (explain, complete) = match ResponseError::try_from_code(code) {
            Some(ResponseError::TopicAlreadyExists) => ("already exists".to_string(), true),
            Some(ResponseError::UnknownTopicOrPartition) => (
                "does not exist (`samsa topic list` shows the topics)".to_string(),
                true,
            ),
            Some(ResponseError::GroupIdNotFound) => (
                "does not exist (`samsa group list` shows the groups)".to_string(),
                true,
            ),
            Some(ResponseError::NonEmptyGroup) => (
                "still has members; stop its consumers first".to_string(),
                true,
            ),
            Some(ResponseError::CoordinatorNotAvailable | ResponseError::NotCoordinator) => (
                "has no coordinator available right now; retry in a moment".to_string(),
                true,
            ),
            Some(ResponseError::InvalidPartitions) => {
                ("cannot take that partition count".into(), false)
            }
            Some(ResponseError::InvalidReplicationFactor) => {
                ("cannot have that replication factor".into(), false)
            }
            Some(ResponseError::InvalidConfig) => ("has an invalid configuration".into(), false),
            Some(ResponseError::PolicyViolation) => {
                ("was refused by the broker's policy".into(), false)
            }
            Some(
                ResponseError::TopicAuthorizationFailed | ResponseError::GroupAuthorizationFailed,
            ) => ("is not accessible to this client".into(), true),
            Some(e) => (format!("failed: {e}"), false),
            None => ("succeeded".into(), true),
        };
        let mut message = format!("{what} {explain}");
        if let Some(m) = server_message.filter(|m| !m.is_empty() && !complete) {
            message.push_str(": ");
            message.push_str(m);
        }
        KafkaError {
            code,
            name,
            message,
        }
    }
}

/// `Err` for a non-zero error code.
pub fn check(code: i16, what: &str, server_message: Option<&StrBytes>) -> Result<(), ClientError> {
    if code == 0 {
        Ok(())
    } else {
        Err(KafkaError::new(code, what, server_message.map(|s| s.as_str())).into())
    }
}

/// The error of a result that carries its own message (the admin APIs of KIP-546 and
/// KIP-554): the broker's message after `what` when it gave one, else the error's meaning.
pub fn refused(code: i16, what: &str, message: Option<&StrBytes>) -> anyhow::Error {
    let error = match message.map(|m| m.as_str()).filter(|m| !m.is_empty()) {
        Some(m) => KafkaError {
            code,
            name: crate::util::error_name(code),
            message: format!("{what}: {m}"),
        },
        None => KafkaError::new(code, what, None),
    };
    error.into()
}

/// One broker connection with its negotiated API versions.
struct Conn {
    addr: String,
    stream: Box<dyn Stream>,
    correlation_id: i32,
    /// api key -> (min, max) the broker serves.
    versions: HashMap<i16, (i16, i16)>,
    security: Arc<Security>,
    /// When to renew the SASL session: 85% into the lifetime the broker gave (Kafka's clients
    /// pick 85-95%).
    reauth_at: Option<Instant>,
}

impl Conn {
    fn connect(
        addr: &str,
        client_id: &str,
        timeout: Duration,
        security: &Arc<Security>,
    ) -> Result<Conn, ClientError> {
        let connect_err = |reason: String| ClientError::Connect {
            addr: addr.to_string(),
            reason,
        };
        let targets: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| connect_err(format!("cannot resolve: {e}")))?
            .collect();
        let mut last = String::from("no address");
        let mut stream = None;
        for t in targets {
            match TcpStream::connect_timeout(&t, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = io_reason(&e),
            }
        }
        let stream = stream.ok_or_else(|| connect_err(last))?;
        let io = |source| ClientError::Io {
            addr: addr.to_string(),
            source,
        };
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let stream = security
            .secure(stream, addr)
            .map_err(|reason| ClientError::Tls {
                addr: addr.to_string(),
                reason,
            })?;
        let mut conn = Conn {
            addr: addr.to_string(),
            stream,
            correlation_id: 0,
            versions: HashMap::new(),
            security: security.clone(),
            reauth_at: None,
        };
        conn.negotiate(client_id)?;
        conn.authenticate(client_id)?;
        Ok(conn)
    }

    /// SaslHandshake v1 then SaslAuthenticate until the exchange is complete; remembers when
    /// to renew the session.
    fn authenticate(&mut self, client_id: &str) -> Result<(), ClientError> {
        let security = self.security.clone();
        let Some(login) = security.sasl() else {
            return Ok(());
        };
        let what = format!(
            "SASL {} authentication of '{}' with {}",
            login.mechanism.name(),
            login.username,
            self.addr
        );
        let addr = self.addr.clone();
        let fail = |reason: String| ClientError::Auth {
            addr: addr.clone(),
            reason,
        };
        let refused = |code: i16, said: String| {
            ClientError::Kafka(KafkaError {
                code,
                name: crate::util::error_name(code),
                message: format!("{what} failed: {said}"),
            })
        };
        let version = self.version_for::<SaslHandshakeRequest>()?;
        if version < 1 {
            return Err(fail("the broker serves SaslHandshake v0 only".into()));
        }
        let mut req = SaslHandshakeRequest::default();
        req.mechanism = StrBytes::from_static_str(login.mechanism.name());
        let resp = self.call(client_id, version, &req)?;
        if resp.error_code == ResponseError::IllegalSaslState.code() {
            let msg = "this listener does not use SASL (security.protocol PLAINTEXT or SSL)";
            return Err(fail(msg.into()));
        }
        if resp.error_code != 0 {
            let offered: Vec<&str> = resp.mechanisms.iter().map(|m| m.as_str()).collect();
            let said = format!("the listener offers {}", offered.join(", "));
            return Err(refused(resp.error_code, said));
        }
        let version = self.version_for::<SaslAuthenticateRequest>()?;
        let mut exchange = SaslClient::new(login.clone());
        let mut token = exchange.first(crate::util::now_ms());
        let lifetime_ms = loop {
            let mut req = SaslAuthenticateRequest::default();
            req.auth_bytes = std::mem::take(&mut token).into();
            let resp = self.call(client_id, version, &req)?;
            if resp.error_code != 0 {
                let said = resp.error_message.map(|m| m.to_string());
                return Err(refused(resp.error_code, said.unwrap_or_default()));
            }
            match exchange.step(&resp.auth_bytes).map_err(fail)? {
                Next::Send(t) => token = t,
                Next::Done if version >= 1 => break resp.session_lifetime_ms,
                Next::Done => break 0,
            }
        };
        self.reauth_at = (lifetime_ms > 0)
            .then(|| Instant::now() + Duration::from_millis(lifetime_ms as u64).mul_f64(0.85));
        Ok(())
    }

    /// Re-authenticates on this connection when its SASL session is about to end (KIP-368).
    fn renew_session(&mut self, client_id: &str) -> Result<(), ClientError> {
        match self.reauth_at {
            Some(at) if Instant::now() >= at => self.authenticate(client_id),
            _ => Ok(()),
        }
    }

    /// ApiVersions v3, or v0 when the broker says it does not know v3 (KIP-511).
    fn negotiate(&mut self, client_id: &str) -> Result<(), ClientError> {
        let mut req = ApiVersionsRequest::default();
        req.client_software_name = StrBytes::from_static_str("samsa-cli");
        req.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
        let mut resp: ApiVersionsResponse = self.call(client_id, 3, &req)?;
        if resp.error_code == ResponseError::UnsupportedVersion.code() {
            resp = self.call(client_id, 0, &ApiVersionsRequest::default())?;
        }
        check(
            resp.error_code,
            &format!("ApiVersions on {}", self.addr),
            None,
        )?;
        self.versions = resp
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        Ok(())
    }

    /// The version to use for `R`, or why there is none.
    fn version_for<R: Request>(&self) -> Result<i16, ClientError> {
        let key = ApiKey::try_from(R::KEY).expect("kafka-protocol request key");
        let ours = (R::VERSIONS.min, R::VERSIONS.max.min(version_cap(key)));
        match self.versions.get(&R::KEY) {
            Some(&(min, max)) if max.min(ours.1) >= min.max(ours.0) => Ok(max.min(ours.1)),
            other => Err(ClientError::Unsupported {
                addr: self.addr.clone(),
                api: key,
                broker: match other {
                    Some((min, max)) => format!("versions {min}-{max}"),
                    None => "not served".into(),
                },
            }),
        }
    }

    fn send<R: Request>(
        &mut self,
        client_id: &str,
        version: i16,
        req: &R,
    ) -> Result<i32, ClientError> {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let mut header = RequestHeader::default();
        header.request_api_key = R::KEY;
        header.request_api_version = version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(StrBytes::from_string(client_id.to_string()));
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        let encode_err = |e: anyhow::Error| ClientError::Protocol {
            addr: self.addr.clone(),
            reason: format!("cannot encode request: {e}"),
        };
        header
            .encode(&mut buf, R::header_version(version))
            .map_err(encode_err)?;
        req.encode(&mut buf, version).map_err(encode_err)?;
        let size = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&size.to_be_bytes());
        self.stream
            .write_all(&buf)
            .and_then(|()| self.stream.flush())
            .map_err(|source| ClientError::Io {
                addr: self.addr.clone(),
                source,
            })?;
        Ok(self.correlation_id)
    }

    fn receive<R: Request>(
        &mut self,
        correlation_id: i32,
        version: i16,
    ) -> Result<R::Response, ClientError> {
        let io = |addr: &str, source: std::io::Error| ClientError::Io {
            addr: addr.to_string(),
            source,
        };
        let mut size = [0u8; 4];
        self.stream
            .read_exact(&mut size)
            .map_err(|e| io(&self.addr, e))?;
        let tls_record = matches!(size, [0x15 | 0x16, 3, ..]);
        let size = i32::from_be_bytes(size);
        if size < 4 || size as usize > RESPONSE_BYTES_MAX {
            return Err(ClientError::Protocol {
                addr: self.addr.clone(),
                reason: match tls_record {
                    true => "it answers in TLS: give --command-config with security.protocol \
                             SSL or SASL_SSL"
                        .into(),
                    false => format!("response frame of {size} bytes (limit {RESPONSE_BYTES_MAX})"),
                },
            });
        }
        let mut body = vec![0u8; size as usize];
        self.stream
            .read_exact(&mut body)
            .map_err(|e| io(&self.addr, e))?;
        let mut body = Bytes::from(body);
        let protocol = |reason: String| ClientError::Protocol {
            addr: self.addr.clone(),
            reason,
        };
        let header = ResponseHeader::decode(&mut body, R::Response::header_version(version))
            .map_err(|e| protocol(format!("response header: {e}")))?;
        if header.correlation_id != correlation_id {
            return Err(protocol(format!(
                "correlation id {} answers request {correlation_id}",
                header.correlation_id
            )));
        }
        R::Response::decode(&mut body, version).map_err(|e| {
            protocol(format!(
                "cannot decode {:?} v{version}: {e}",
                ApiKey::try_from(R::KEY).ok()
            ))
        })
    }

    fn call<R: Request>(
        &mut self,
        client_id: &str,
        version: i16,
        req: &R,
    ) -> Result<R::Response, ClientError> {
        let id = self.send(client_id, version, req)?;
        self.receive::<R>(id, version)
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => "timed out".into(),
        _ => e.to_string(),
    }
}

/// Io errors explained: TLS alerts (a refused client certificate), and a connection closed on a
/// client without SASL (a SASL or TLS listener).
fn hint(security: &Security, e: ClientError) -> ClientError {
    use std::io::ErrorKind::{ConnectionReset, UnexpectedEof};
    match e {
        ClientError::Io { addr, source }
            if matches!(source.kind(), UnexpectedEof | ConnectionReset)
                && !security.protocol().name().starts_with("SASL_") =>
        {
            let name = security.protocol().name();
            let reason = format!(
                "{source}; security.protocol is {name}: if the listener's is another, give \
                 --command-config with it"
            );
            ClientError::Closed { addr, reason }
        }
        ClientError::Io { addr, source }
            if source.get_ref().is_some_and(|e| e.is::<rustls::Error>()) =>
        {
            let reason = security::tls_failure(&source, security::host_of(&addr));
            ClientError::Tls { addr, reason }
        }
        e => e,
    }
}

/// ListOffsets answers: (topic, partition) -> (offset, timestamp).
pub type ListedOffsets = HashMap<(String, i32), (i64, i64)>;

/// ListOffsets' special timestamps.
pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;

/// Which broker a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    /// Whichever broker the client is connected to first (admin requests; Kafka forwards
    /// them to its controller).
    Any,
    /// A broker by node id, as Metadata names it.
    Id(i32),
}

/// A client for one cluster.
pub struct Client {
    bootstrap: Vec<String>,
    client_id: String,
    timeout: Duration,
    security: Arc<Security>,
    /// Connections by node id; the bootstrap connection is kept under `Node::Any`.
    conns: HashMap<Node, Conn>,
    /// node id -> host:port, from the last Metadata response.
    brokers: HashMap<i32, String>,
    /// (topic, partition) -> leader node id, from the last Metadata response.
    leaders: HashMap<(String, i32), i32>,
}

impl Client {
    /// Connects to the first reachable address of a comma-separated bootstrap list.
    pub fn connect(bootstrap: &str, timeout: Duration) -> Result<Client, ClientError> {
        Client::connect_with(bootstrap, timeout, Arc::new(Security::plaintext()))
    }

    /// [`Client::connect`] with every connection secured by `security`.
    pub fn connect_with(
        bootstrap: &str,
        timeout: Duration,
        security: Arc<Security>,
    ) -> Result<Client, ClientError> {
        let bootstrap: Vec<String> = bootstrap
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let mut client = Client {
            bootstrap,
            client_id: "samsa-cli".into(),
            timeout,
            security,
            conns: HashMap::new(),
            brokers: HashMap::new(),
            leaders: HashMap::new(),
        };
        client.conn(Node::Any)?;
        Ok(client)
    }

    pub fn bootstrap_addr(&self) -> &str {
        self.conns
            .get(&Node::Any)
            .map(|c| c.addr.as_str())
            .unwrap_or("")
    }

    /// The API versions the bootstrap broker serves: (api key, min, max), sorted by key.
    pub fn served_versions(&self) -> Vec<(i16, i16, i16)> {
        let mut v: Vec<_> = self
            .conns
            .get(&Node::Any)
            .map(|c| c.versions.iter().map(|(k, (a, b))| (*k, *a, *b)).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    fn conn(&mut self, node: Node) -> Result<&mut Conn, ClientError> {
        if !self.conns.contains_key(&node) {
            let conn =
                match node {
                    Node::Any => {
                        let mut last = None;
                        let mut found = None;
                        for addr in &self.bootstrap {
                            match Conn::connect(addr, &self.client_id, self.timeout, &self.security)
                                .map_err(|e| hint(&self.security, e))
                            {
                                Ok(c) => {
                                    found = Some(c);
                                    break;
                                }
                                Err(e) => last = Some(e),
                            }
                        }
                        match found {
                            Some(c) => c,
                            None => {
                                return Err(last.unwrap_or_else(|| ClientError::Connect {
                                    addr: "(none)".into(),
                                    reason: "the bootstrap list is empty".into(),
                                }))
                            }
                        }
                    }
                    Node::Id(id) => {
                        if !self.brokers.contains_key(&id) {
                            self.metadata(Some(&[]))?;
                        }
                        let addr = self.brokers.get(&id).cloned().ok_or_else(|| {
                            ClientError::Protocol {
                                addr: self.bootstrap.join(","),
                                reason: format!("metadata names no broker with node id {id}"),
                            }
                        })?;
                        Conn::connect(&addr, &self.client_id, self.timeout, &self.security)?
                    }
                };
            self.conns.insert(node, conn);
        }
        Ok(self.conns.get_mut(&node).expect("inserted above"))
    }

    /// The version `node` would get for `R`.
    pub fn version<R: Request>(&mut self, node: Node) -> Result<i16, ClientError> {
        self.conn(node)?.version_for::<R>()
    }

    /// Sends a request built for the negotiated version and waits for its response.
    pub fn call<R: Request>(
        &mut self,
        node: Node,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(i16, R::Response), ClientError> {
        let client_id = self.client_id.clone();
        let result = (|| {
            let conn = self.conn(node)?;
            conn.renew_session(&client_id)?;
            let version = conn.version_for::<R>()?;
            let req = build(version);
            conn.call(&client_id, version, &req).map(|r| (version, r))
        })();
        if matches!(
            result,
            Err(ClientError::Io { .. }
                | ClientError::Protocol { .. }
                | ClientError::Auth { .. }
                | ClientError::Kafka(_))
        ) {
            // The stream may be mid-frame, or closed after a failed re-authentication: never
            // reuse it. (Requests report Kafka errors in their responses, not as call errors.)
            self.conns.remove(&node);
        }
        result.map_err(|e| hint(&self.security, e))
    }

    /// Sends a request that gets no response (Produce with acks=0).
    pub fn send_only<R: Request>(
        &mut self,
        node: Node,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(), ClientError> {
        let client_id = self.client_id.clone();
        let conn = self.conn(node)?;
        conn.renew_session(&client_id)?;
        let version = conn.version_for::<R>()?;
        conn.send(&client_id, version, &build(version)).map(|_| ())
    }

    /// Metadata for some topics (`None`: all topics; `Some(&[])`: none, brokers only).
    /// Never creates topics. Remembers broker addresses for routing.
    pub fn metadata(&mut self, topics: Option<&[String]>) -> Result<MetadataResponse, ClientError> {
        self.metadata_with(topics, false)
    }

    /// Metadata that may auto-create the named topics, as a producer's does.
    pub fn metadata_with(
        &mut self,
        topics: Option<&[String]>,
        allow_auto_topic_creation: bool,
    ) -> Result<MetadataResponse, ClientError> {
        let (_, resp) = self.call(Node::Any, |v| {
            let mut req = MetadataRequest::default();
            req.topics = topics.map(|names| {
                names
                    .iter()
                    .map(|n| {
                        let mut t = kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
                        t.name = Some(TopicName(StrBytes::from_string(n.clone())));
                        t
                    })
                    .collect()
            });
            if v >= 4 {
                req.allow_auto_topic_creation = allow_auto_topic_creation;
            }
            req
        })?;
        for b in &resp.brokers {
            self.brokers
                .insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        for t in &resp.topics {
            if let Some(name) = &t.name {
                for p in &t.partitions {
                    self.leaders
                        .insert((name.to_string(), p.partition_index), p.leader_id.0);
                }
            }
        }
        Ok(resp)
    }

    /// The partition ids of a topic, sorted; UNKNOWN_TOPIC_OR_PARTITION when it does not
    /// exist. Refreshes the partition leaders.
    pub fn partitions(&mut self, topic: &str) -> Result<Vec<i32>, ClientError> {
        let resp = self.metadata(Some(&[topic.to_string()]))?;
        let t = resp.topics.first().ok_or_else(|| ClientError::Protocol {
            addr: self.bootstrap_addr().to_string(),
            reason: format!("metadata answered nothing for topic '{topic}'"),
        })?;
        check(t.error_code, &format!("topic '{topic}'"), None)?;
        let mut ids: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The leader of a partition (call [`Client::metadata`] or [`Client::partitions`] first).
    pub fn leader(&self, topic: &str, partition: i32) -> Node {
        match self.leaders.get(&(topic.to_string(), partition)) {
            Some(&id) if id >= 0 => Node::Id(id),
            _ => Node::Any,
        }
    }

    /// ListOffsets for each (topic, partition, timestamp), sent to each partition's leader.
    /// `timestamp` is [`LATEST`], [`EARLIEST`] or milliseconds since the epoch. Answers
    /// offset and timestamp per partition; a timestamp past every record gives offset -1, as
    /// Kafka does.
    pub fn list_offsets(
        &mut self,
        wanted: &[(String, i32, i64)],
    ) -> Result<ListedOffsets, ClientError> {
        use kafka_protocol::messages::list_offsets_request::{
            ListOffsetsPartition, ListOffsetsTopic,
        };
        use kafka_protocol::messages::ListOffsetsRequest;
        let mut by_leader: HashMap<Node, Vec<&(String, i32, i64)>> = HashMap::new();
        for w in wanted {
            by_leader.entry(self.leader(&w.0, w.1)).or_default().push(w);
        }
        let mut out = HashMap::new();
        let timeout_ms = self.timeout.as_millis().min(i32::MAX as u128) as i32;
        for (node, items) in by_leader {
            let (_, resp) = self.call(node, |v| {
                let mut req = ListOffsetsRequest::default();
                req.replica_id = kafka_protocol::messages::BrokerId(-1);
                let mut topics: Vec<ListOffsetsTopic> = Vec::new();
                for (topic, partition, ts) in items.iter().map(|w| (&w.0, w.1, w.2)) {
                    let i = match topics.iter().position(|t| t.name.as_str() == topic) {
                        Some(i) => i,
                        None => {
                            let mut t = ListOffsetsTopic::default();
                            t.name = TopicName(StrBytes::from_string(topic.clone()));
                            topics.push(t);
                            topics.len() - 1
                        }
                    };
                    let mut p = ListOffsetsPartition::default();
                    p.partition_index = partition;
                    p.timestamp = ts;
                    if v >= 4 {
                        p.current_leader_epoch = -1;
                    }
                    topics[i].partitions.push(p);
                }
                req.topics = topics;
                if v >= 10 {
                    req.timeout_ms = timeout_ms;
                }
                req
            })?;
            for t in resp.topics {
                for p in t.partitions {
                    check(
                        p.error_code,
                        &format!("partition {}-{}", t.name.as_str(), p.partition_index),
                        None,
                    )?;
                    out.insert(
                        (t.name.to_string(), p.partition_index),
                        (p.offset, p.timestamp),
                    );
                }
            }
        }
        Ok(out)
    }

    /// The coordinator of a consumer group (FindCoordinator, key type 0).
    pub fn group_coordinator(&mut self, group: &str) -> Result<Node, ClientError> {
        let what = format!("group '{group}'");
        let (version, resp) = self.call(Node::Any, |v| {
            let mut req = FindCoordinatorRequest::default();
            if v >= 4 {
                req.coordinator_keys = vec![StrBytes::from_string(group.to_string())];
            } else {
                req.key = StrBytes::from_string(group.to_string());
            }
            req
        })?;
        let (node_id, host, port) = if version >= 4 {
            let c = resp
                .coordinators
                .first()
                .ok_or_else(|| ClientError::Protocol {
                    addr: self.bootstrap_addr().to_string(),
                    reason: "FindCoordinator answered no coordinator".into(),
                })?;
            check(c.error_code, &what, c.error_message.as_ref())?;
            (c.node_id.0, c.host.to_string(), c.port)
        } else {
            check(resp.error_code, &what, resp.error_message.as_ref())?;
            (resp.node_id.0, resp.host.to_string(), resp.port)
        };
        self.brokers.insert(node_id, format!("{host}:{port}"));
        Ok(Node::Id(node_id))
    }
}

/// Reads a big-endian i16 version prefix and decodes a consumer-protocol struct after it
/// (the member assignment bytes of DescribeGroups).
pub fn decode_versioned<T: Decodable>(mut bytes: Bytes) -> Option<T> {
    if bytes.len() < 2 {
        return None;
    }
    let version = bytes.get_i16();
    T::decode(&mut bytes, version).ok()
}
