//! What every handler gets besides its request: the [`Ctx`] (the broker's node and services
//! through accessors, the connection, the request header), the per-connection state, and the
//! topic-id lookups the id-addressed versions need. Handlers import it from here, not from
//! the dispatch in `mod.rs`, so that no handler depends on the dispatch that calls it.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::StrBytes;
use samsa_protocol::Chunk;

use crate::broker::Broker;
use crate::node::Node;

/// Per-connection state a handler may read or change.
pub struct Connection {
    pub peer: SocketAddr,
    /// The listener the connection came in on, with its TLS and SASL settings.
    pub listener: Arc<crate::security::ListenerSecurity>,
    /// Where the connection is in SASL authentication (always `Open` without SASL).
    pub auth: RefCell<AuthState>,
    /// When the SASL session ends (KIP-368): past it, only re-authentication is served.
    pub session_expires: std::cell::Cell<Option<std::time::Instant>>,
    /// The principal being re-authenticated, which the new exchange must prove again.
    pub reauthenticating: RefCell<Option<String>>,
    /// The client id of the connection's last request, owned (not a slice of a frame).
    pub(super) client_id: RefCell<Option<StrBytes>>,
    /// Who the ACLs see: `User:ANONYMOUS` until an authentication layer sets it.
    principal: RefCell<String>,
    /// The peer's IP address as ACLs name hosts.
    host: String,
    /// Where responses are encoded: each is split off as it is finished, and the memory is
    /// reused once the writer has sent it, so a response allocates nothing here in steady state.
    pub(super) encode_buf: RefCell<BytesMut>,
    /// The size of the request frame being handled (a Produce's counts against its quota).
    pub frame_bytes: std::cell::Cell<usize>,
    /// The client quotas this connection's user and client id fall under, as last resolved.
    pub(super) quotas: RefCell<Option<crate::quota::client::Resolution>>,
    /// Until when the connection reads no request (KIP-219: a throttled client's channel is
    /// muted for the throttle time).
    pub muted_until: std::cell::Cell<Option<std::time::Instant>>,
}

impl Connection {
    /// A connection on `listener`; `principal` is the TLS layer's (`User:ANONYMOUS` without a
    /// client certificate), replaced by the SASL user once authenticated.
    pub fn new(
        peer: SocketAddr,
        listener: Arc<crate::security::ListenerSecurity>,
        principal: String,
    ) -> Connection {
        let auth = if listener.uses_sasl() {
            AuthState::AwaitingHandshake
        } else {
            AuthState::Open
        };
        Connection {
            peer,
            listener,
            auth: RefCell::new(auth),
            session_expires: std::cell::Cell::new(None),
            reauthenticating: RefCell::new(None),
            client_id: RefCell::new(None),
            principal: RefCell::new(principal),
            host: peer.ip().to_string(),
            encode_buf: RefCell::new(BytesMut::new()),
            frame_bytes: std::cell::Cell::new(0),
            quotas: RefCell::new(None),
            muted_until: std::cell::Cell::new(None),
        }
    }
    /// A connection on a PLAINTEXT listener named PLAINTEXT, as `User:ANONYMOUS` (tests).
    pub fn plaintext(peer: SocketAddr) -> Connection {
        Connection::new(
            peer,
            Arc::new(crate::security::ListenerSecurity::plaintext("PLAINTEXT")),
            crate::acl::ANONYMOUS.to_string(),
        )
    }

    pub fn client_id(&self) -> Option<String> {
        self.client_id.borrow().as_ref().map(|id| id.to_string())
    }
    pub fn principal(&self) -> std::cell::Ref<'_, String> {
        self.principal.borrow()
    }
    /// For an authentication layer (SASL, TLS client certificates): `Type:name`.
    pub fn set_principal(&self, principal: String) {
        *self.principal.borrow_mut() = principal;
    }
    pub fn host(&self) -> &str {
        &self.host
    }
}

/// Where a connection is in SASL authentication (Kafka's `SaslServerAuthenticator` states).
pub enum AuthState {
    /// No SASL on this listener: every request is served.
    Open,
    /// Waiting for SaslHandshake; ApiVersions is answered meanwhile.
    AwaitingHandshake,
    /// After SaslHandshake v1: SaslAuthenticate requests carry the exchange's tokens.
    Authenticating(crate::security::sasl::Exchange),
    /// After SaslHandshake v0: the next frames are the exchange's tokens, without a request
    /// header, answered the same way (a size and the token).
    RawTokens(crate::security::sasl::Exchange),
    /// Authenticated: every request is served.
    Authenticated,
    /// Failed or broke the exchange: the connection closes once its answer is written.
    Failed,
}

impl AuthState {
    /// Whether requests other than the SASL exchange's are served.
    pub fn serves_requests(&self) -> bool {
        matches!(self, AuthState::Open | AuthState::Authenticated)
    }
}

/// The name of the topic `id` names, from this node's registry or the metadata image (as
/// Kafka's metadata cache answers `getTopicName`): how the versions that name topics by id
/// (OffsetCommit v10, OffsetFetch v10, TxnOffsetCommit v6) find the topic.
pub fn topic_name_by_id(node: &Node, id: &uuid::Uuid) -> Option<String> {
    if id.is_nil() {
        return None;
    }
    node.topics
        .get_by_id(id)
        .map(|t| t.name.clone())
        .or_else(|| {
            node.controller
                .image()
                .topic_by_id(id)
                .map(|t| t.name.to_string())
        })
}

/// The id of topic `name` (nil when unknown), the reverse of [`topic_name_by_id`].
pub fn topic_id_by_name(node: &Node, name: &str) -> uuid::Uuid {
    node.topics.get(name).map(|t| t.id).unwrap_or_else(|| {
        node.controller
            .image()
            .topic_by_name(name)
            .map_or(uuid::Uuid::nil(), |t| t.id)
    })
}

/// What every handler gets besides its request.
pub struct Ctx<'a> {
    pub(super) broker: &'a Arc<Broker>,
    pub conn: &'a Rc<Connection>,
    pub header: &'a RequestHeader,
    pub version: i16,
}

/// What a handler may use of the broker: the [`Node`] below the services, and the services.
impl<'a> Ctx<'a> {
    pub fn new(
        broker: &'a Arc<Broker>,
        conn: &'a Rc<Connection>,
        header: &'a RequestHeader,
        version: i16,
    ) -> Ctx<'a> {
        Ctx {
            broker,
            conn,
            header,
            version,
        }
    }

    /// This node: identity, configuration, topics, quorum, membership, metrics.
    pub fn node(&self) -> &'a Arc<Node> {
        &self.broker.node
    }

    /// The topics and partitions this node has.
    pub fn topics(&self) -> &'a crate::topics::TopicRegistry {
        &self.broker.node.topics
    }

    /// This node's controller: the metadata quorum and its image.
    pub fn controller(&self) -> &'a crate::controller::runtime::Controller {
        &self.broker.node.controller
    }

    pub fn groups(&self) -> &'a Arc<crate::group::GroupCoordinator> {
        &self.broker.groups
    }

    pub fn txn(&self) -> &'a Arc<crate::txn::TransactionCoordinator> {
        &self.broker.txn
    }

    pub fn shares(&self) -> &'a Arc<crate::share::ShareCoordinator> {
        &self.broker.shares
    }

    /// ACL authorization; `None` when `authorizer.class.name` is empty.
    pub fn authorizer(&self) -> Option<&'a crate::acl::Authorizer> {
        self.broker.authorizer.as_ref()
    }

    /// Fetch sessions (KIP-227).
    pub fn fetch_sessions(
        &self,
    ) -> &'a parking_lot::Mutex<crate::fetch_session::cache::FetchSessionCache> {
        &self.broker.fetch_sessions
    }

    /// The client quota of `kind` this request falls under, `None` without one (Kafka's
    /// `ClientQuotaManager` keyed by the principal's name and the header's client id).
    pub fn client_quota(
        &self,
        kind: crate::quota::client::QuotaKind,
    ) -> Option<crate::quota::client::Resolved> {
        let quotas = self.node().client_quotas.current()?;
        let principal = self.conn.principal();
        let user = principal
            .split_once(':')
            .map_or(principal.as_str(), |(_, name)| name);
        let client_id = self.header.client_id.as_deref().unwrap_or("");
        let mut cache = self.conn.quotas.borrow_mut();
        let resolution =
            crate::quota::client::Resolution::of(cache.take(), &quotas, user, client_id);
        let out = resolution.get(kind).cloned();
        *cache = Some(resolution);
        out
    }

    /// Mutes the connection for `throttle_ms` from now (KIP-219), longer only.
    pub fn mute_for(&self, throttle_ms: i64) {
        if throttle_ms <= 0 {
            return;
        }
        let until =
            std::time::Instant::now() + std::time::Duration::from_millis(throttle_ms as u64);
        if self.conn.muted_until.get().is_none_or(|u| u < until) {
            self.conn.muted_until.set(Some(until));
        }
    }

    /// How a leader picks the replica a consumer reads from (KIP-392).
    pub fn replica_selector(
        &self,
    ) -> Option<&'a samsa_cluster::replication::selector::ReplicaSelector> {
        self.broker.replica_selector.as_ref()
    }
}

/// A response frame as chunks, or one still waiting for something (an fsync) that the
/// connection can await while it goes on reading and handling the requests behind it.
pub enum Reply {
    Ready(Vec<Chunk>),
    Deferred(std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<Chunk>, String>>>>),
}
