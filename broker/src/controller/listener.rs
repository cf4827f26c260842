//! The controller listener (`controller.listener.names`): where the other controllers send
//! this node KRaft's RPCs. It answers the APIs of `samsa_protocol::CONTROLLER_APIS` only, one
//! request at a time per connection (responses go out in request order, as Kafka's protocol
//! requires), on the controller thread's own runtime, apart from the client listeners.
//!
//! Kafka's tools given `--bootstrap-controller` (KIP-919) are answered here as Kafka's
//! controllers answer them: ApiVersions with the features this node supports and those its
//! committed image finalized, DescribeCluster with the quorum's voters (any voter answers, not
//! only the leader), DescribeConfigs of this node's configs (the client listeners' code), and
//! DescribeQuorum on the leader. The delegation-token APIs are answered as Kafka's controllers
//! answer them without a secret key (`answers::delegation_tokens`), for the principal the
//! client's certificate or SASL names.
//!
//! Secured as `listener.security.protocol.map` says: TLS (rustls through tokio-rustls, the
//! listener's `ssl.*` keys, mutual TLS with `ssl.client.auth`) and SASL in its framed form
//! (SaslHandshake v1, SaslAuthenticate) with PLAIN or OAUTHBEARER, before any other request
//! but ApiVersions; sessions end after `connections.max.reauth.ms` unless re-authenticated
//! (KIP-368). SCRAM is refused at start on this listener, as in Kafka: its credentials are in
//! the metadata that the controllers serve. Controller RPCs are not checked against ACLs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::metadata::MetadataImage;
use samsa_protocol::{FrameDecoder, CONTROLLER_APIS, CONTROLLER_SASL_APIS};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use crate::acl::ANONYMOUS;
use crate::security::sasl::{Exchange, Mechanism, SaslError};
use crate::security::ListenerSecurity;

use super::active::{ControllerRequest, ReplyError, NOT_CONTROLLER};
use super::answers::delegation_tokens::{self, Requester, TokenListener};
use super::runtime::{Command, Describe, QuorumStatus, Routed};
use super::wire;
use crate::config::dynamic::DynamicConfigs;

/// Largest request frame a controller accepts (Fetch and FetchSnapshot requests are small).
const REQUEST_BYTES_MAX: usize = 8 << 20;
/// Largest frame before SASL authentication (a token; Kafka's `sasl.server.max.receive.size`).
const UNAUTHENTICATED_BYTES_MAX: usize = 512 << 10;
/// How long a connection may take to finish TLS and SASL.
const AUTHENTICATION_TIME: Duration = Duration::from_secs(10);
/// A failed authentication is answered after this (Kafka's
/// `connection.failed.authentication.delay.ms` default), to slow guessing.
const FAILED_AUTHENTICATION_DELAY: Duration = Duration::from_millis(100);

/// Why a controller connection was closed: a refusal (the peer's fault) is logged as a
/// warning, the rest at debug.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("refused request: {0}")]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Encode(String),
    #[error("the controller stopped")]
    ControllerStopped,
}

/// What the peer did that closes its connection.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    /// A frame or request that does not decode (or is too large).
    #[error("{0}")]
    Malformed(String),
    #[error("TLS handshake: {0}")]
    Tls(String),
    #[error("no TLS handshake within {AUTHENTICATION_TIME:?}")]
    NoTlsHandshake,
    /// The client's certificate names no principal (no mapping rule matches).
    #[error("{0}")]
    Principal(String),
    #[error("not authenticated within {AUTHENTICATION_TIME:?}")]
    NotAuthenticated,
    #[error("the SASL session expired without re-authentication")]
    SessionExpired,
    #[error("{key:?} out of turn in the SASL exchange (listener {listener})")]
    OutOfTurn { key: ApiKey, listener: String },
    #[error("authentication failed")]
    AuthenticationFailed,
}

/// What the listener answers from besides the controller thread: this node's identity, its
/// committed image and quorum status (ApiVersions' features), and its configuration
/// (DescribeConfigs), as Kafka's controllers answer Kafka's tools (KIP-919).
pub(super) struct Served {
    pub node_id: i32,
    pub cluster_id: Arc<str>,
    pub image: watch::Receiver<Arc<MetadataImage>>,
    pub status: watch::Receiver<QuorumStatus>,
    pub configs: Arc<DynamicConfigs>,
}

pub(super) fn spawn(
    listener: std::net::TcpListener,
    security: Arc<ListenerSecurity>,
    tx: mpsc::UnboundedSender<Command>,
    ids: Arc<AtomicU64>,
    served: Served,
) {
    let node: Arc<Served> = Arc::new(served);
    tokio::spawn(async move {
        let _ = listener.set_nonblocking(true);
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "controller listener cannot start");
                return;
            }
        };
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let tx = tx.clone();
                    let ids = ids.clone();
                    let node = node.clone();
                    let security = security.clone();
                    tokio::spawn(async move {
                        let served = match &security.tls {
                            None => {
                                serve(stream, &security, ANONYMOUS.into(), tx, ids, &node).await
                            }
                            Some(tls) => {
                                let settings = tls.get();
                                let config = settings.server_config().clone();
                                let accept = tokio_rustls::TlsAcceptor::from(config).accept(stream);
                                match tokio::time::timeout(AUTHENTICATION_TIME, accept).await {
                                    // The client's certificate names it, as on the client
                                    // listeners (refused when no mapping rule matches).
                                    Ok(Ok(s)) => match crate::security::tls::principal_of(
                                        &settings,
                                        s.get_ref().1.peer_certificates(),
                                    ) {
                                        Ok(principal) => {
                                            serve(s, &security, principal, tx, ids, &node).await
                                        }
                                        Err(e) => Err(Refusal::Principal(e).into()),
                                    },
                                    Ok(Err(e)) => Err(Refusal::Tls(e.to_string()).into()),
                                    Err(_) => Err(Refusal::NoTlsHandshake.into()),
                                }
                            }
                        };
                        match served {
                            Err(e @ ServeError::Refused(_)) => {
                                tracing::warn!(%peer, listener = %security.name, error = %e, "controller connection closed")
                            }
                            Err(e) => {
                                tracing::debug!(%peer, error = %e, "controller connection closed")
                            }
                            Ok(()) => {}
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "controller listener accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    });
}

/// Where a connection is in SASL (Kafka's `SaslServerAuthenticator` states, framed form only).
enum Sasl {
    /// No SASL on this listener.
    Open,
    /// Waiting for SaslHandshake (ApiVersions may come first).
    Handshake,
    Authenticating(Exchange),
    /// Authenticated as this principal; a SaslHandshake starts re-authentication (KIP-368).
    Authenticated(String),
    /// Re-authenticating: the exchange, and the principal it must prove again.
    Reauthenticating(Exchange, String),
}

/// `tls_principal`: who the client's certificate names (ANONYMOUS without one, or without TLS),
/// until SASL authenticates another.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    security: &ListenerSecurity,
    tls_principal: String,
    tx: mpsc::UnboundedSender<Command>,
    ids: Arc<AtomicU64>,
    node: &Served,
) -> Result<(), ServeError> {
    let mut sasl = match &security.sasl {
        Some(_) => Sasl::Handshake,
        None => Sasl::Open,
    };
    // Unauthenticated connections hold a small buffer and may not stay long.
    let authenticate_by = tokio::time::Instant::now() + AUTHENTICATION_TIME;
    let mut session_ends: Option<tokio::time::Instant> = None;
    let mut buf = BytesMut::with_capacity(16 << 10);
    let mut out = BytesMut::new();
    loop {
        // A connection re-authenticating (KIP-368) is still the authenticated principal's:
        // only a first authentication is bounded in time and frame size.
        let authenticated = matches!(
            sasl,
            Sasl::Open | Sasl::Authenticated(_) | Sasl::Reauthenticating(..)
        );
        let decoder = FrameDecoder::new(if authenticated {
            REQUEST_BYTES_MAX
        } else {
            UNAUTHENTICATED_BYTES_MAX
        });
        let frame = loop {
            if let Some(f) = decoder
                .decode(&mut buf)
                .map_err(|e| Refusal::Malformed(e.to_string()))?
            {
                break f;
            }
            let read = stream.read_buf(&mut buf);
            let n = if authenticated {
                read.await
            } else {
                tokio::time::timeout_at(authenticate_by, read)
                    .await
                    .map_err(|_| Refusal::NotAuthenticated)?
            };
            if n? == 0 {
                return Ok(());
            }
        };
        let is_sasl = samsa_protocol::header::peek_prefix(&frame).is_some_and(|(key, _, _)| {
            key == ApiKey::SaslHandshake as i16 || key == ApiKey::SaslAuthenticate as i16
        });
        let served = if is_sasl && !matches!(sasl, Sasl::Open) {
            CONTROLLER_SASL_APIS
        } else {
            CONTROLLER_APIS
        };
        let mut req = match samsa_protocol::decode_request_served(frame, served) {
            Ok(req) => req,
            // A client newer than this listener (Kafka's tools with --bootstrap-controller) is
            // told the versions it may use, as on the client listeners (KIP-511).
            Err(samsa_protocol::RequestError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => {
                out.clear();
                super::answers::api_versions::unsupported_version(
                    &mut out,
                    correlation_id,
                    CONTROLLER_APIS,
                );
                stream.write_all(&out).await?;
                continue;
            }
            Err(e) => return Err(Refusal::Malformed(e.to_string()).into()),
        };
        let key = req.api_key;
        let version = req.api_version();
        let correlation_id = req.correlation_id();
        // KIP-368: a session that ended closes its connection at the next request that is not
        // re-authentication.
        if session_ends.is_some_and(|t| tokio::time::Instant::now() >= t) && !is_sasl {
            return Err(Refusal::SessionExpired.into());
        }
        let mut close = false;
        let added = std::mem::take(&mut req.added);
        let mut response = match (&mut sasl, req.body) {
            (_, RequestKind::ApiVersions(r)) => {
                // Before authentication too, as Kafka's controllers answer it.
                let mut apis = samsa_protocol::api_table::api_versions(CONTROLLER_APIS);
                if security.sasl.is_some() {
                    apis.extend(samsa_protocol::api_table::api_versions(
                        CONTROLLER_SASL_APIS,
                    ));
                    apis.sort_by_key(|k| k.api_key);
                }
                // The image before the status, as on the client listeners.
                let image = node.image.borrow().clone();
                let status = *node.status.borrow();
                let mut resp =
                    super::answers::api_versions::answer(&r, version, apis, &image, &status);
                // v5 (KIP-1242): checked as Kafka's ControllerApis does, which does not compare
                // the cluster and node named with its own.
                if !super::answers::api_versions::addressed_validly(&added) {
                    resp = Default::default();
                    resp.error_code = kafka_protocol::ResponseError::InvalidRequest.code();
                }
                ResponseKind::ApiVersions(resp)
            }
            (state @ (Sasl::Handshake | Sasl::Authenticated(_)), RequestKind::SaslHandshake(r)) => {
                let settings = security.sasl.as_ref().expect("a SASL listener");
                let mut resp = SaslHandshakeResponse::default();
                resp.mechanisms = settings
                    .mechanism_names()
                    .into_iter()
                    .map(StrBytes::from_static_str)
                    .collect();
                match Mechanism::parse(r.mechanism.as_str()).filter(|m| settings.offers(*m)) {
                    Some(m) => {
                        *state = match std::mem::replace(state, Sasl::Open) {
                            Sasl::Authenticated(p) => Sasl::Reauthenticating(Exchange::new(m), p),
                            _ => Sasl::Authenticating(Exchange::new(m)),
                        };
                    }
                    None => {
                        resp.error_code = ResponseError::UnsupportedSaslMechanism.code();
                        close = matches!(state, Sasl::Handshake);
                    }
                }
                ResponseKind::SaslHandshake(resp)
            }
            (
                state @ (Sasl::Authenticating(_) | Sasl::Reauthenticating(..)),
                RequestKind::SaslAuthenticate(r),
            ) => {
                let settings = security.sasl.as_ref().expect("a SASL listener");
                let (exchange, previous) = match state {
                    Sasl::Authenticating(e) => (e, None),
                    Sasl::Reauthenticating(e, p) => (e, Some(p.clone())),
                    _ => unreachable!("matched above"),
                };
                // No SCRAM here: its credentials live in the metadata this listener serves.
                let step = exchange.step(&r.auth_bytes, settings, &|_, _| None);
                let step = match (step, previous) {
                    (Ok(s), Some(p)) if s.principal.as_ref().is_some_and(|n| *n != p) => {
                        Err(SaslError::AuthenticationFailed(format!(
                            "Cannot change principals during re-authentication from {p} to {}",
                            s.principal.unwrap_or_default()
                        )))
                    }
                    (step, _) => step,
                };
                let mut resp = SaslAuthenticateResponse::default();
                match step {
                    Ok(s) => {
                        resp.auth_bytes = Bytes::from(s.response);
                        if let Some(principal) = s.principal {
                            tracing::debug!(listener = %security.name, %principal, "authenticated");
                            *state = Sasl::Authenticated(principal);
                            session_ends = None;
                            if security.reauth_ms > 0 && version >= 1 {
                                resp.session_lifetime_ms = security.reauth_ms as i64;
                                session_ends = Some(
                                    tokio::time::Instant::now()
                                        + Duration::from_millis(security.reauth_ms),
                                );
                            }
                        }
                    }
                    Err(e) => {
                        tracing::info!(listener = %security.name, "failed authentication: {}", e.message());
                        tokio::time::sleep(FAILED_AUTHENTICATION_DELAY).await;
                        resp.error_code = match e {
                            SaslError::AuthenticationFailed(_) => {
                                ResponseError::SaslAuthenticationFailed.code()
                            }
                            SaslError::IllegalState(_) => ResponseError::IllegalSaslState.code(),
                        };
                        resp.error_message = Some(StrBytes::from_string(e.message().to_string()));
                        close = true;
                    }
                }
                ResponseKind::SaslAuthenticate(resp)
            }
            (Sasl::Open | Sasl::Authenticated(_), body) if !is_sasl => {
                let principal = match &sasl {
                    Sasl::Authenticated(p) => p.as_str(),
                    _ => tls_principal.as_str(),
                };
                let caller = Caller {
                    listener: security,
                    principal,
                };
                answer(key, version, body, &tx, &ids, node, caller).await?
            }
            (_, _) => {
                // Kafka's authenticator closes the connection on a request out of turn.
                return Err(Refusal::OutOfTurn {
                    key,
                    listener: security.name.clone(),
                }
                .into());
            }
        };
        samsa_protocol::nulls::null_where_kafka_does(&mut response, version);
        out.clear();
        samsa_protocol::encode_response(&mut out, key, version, correlation_id, &response)
            .map_err(|e| ServeError::Encode(e.to_string()))?;
        stream.write_all(&out).await?;
        if close {
            let _ = stream.shutdown().await;
            return Err(Refusal::AuthenticationFailed.into());
        }
    }
}

/// Who sent a request: the listener it came in on, and the principal it authenticated as.
#[derive(Clone, Copy)]
struct Caller<'a> {
    listener: &'a ListenerSecurity,
    principal: &'a str,
}

async fn answer(
    key: ApiKey,
    version: i16,
    body: RequestKind,
    tx: &mpsc::UnboundedSender<Command>,
    ids: &AtomicU64,
    node: &Served,
    caller: Caller<'_>,
) -> Result<ResponseKind, ServeError> {
    let cluster_id: &str = &node.cluster_id;
    let listener_name = caller.listener.name.as_str();
    let asker = Requester {
        protocol: caller.listener.protocol,
        principal: caller.principal,
    };
    match body {
        // KIP-48, as Kafka's controllers answer without a secret key (see the handlers).
        RequestKind::CreateDelegationToken(r) => {
            let listener = TokenListener::Controller {
                active: node.status.borrow().leader_id == Some(node.node_id),
            };
            // Controller RPCs are not checked against ACLs (see above).
            Ok(ResponseKind::CreateDelegationToken(
                delegation_tokens::create(&r, version, asker, listener, |_| true),
            ))
        }
        RequestKind::RenewDelegationToken(_) => {
            let listener = TokenListener::Controller {
                active: node.status.borrow().leader_id == Some(node.node_id),
            };
            Ok(ResponseKind::RenewDelegationToken(
                delegation_tokens::renew(asker, listener),
            ))
        }
        RequestKind::ExpireDelegationToken(_) => {
            let listener = TokenListener::Controller {
                active: node.status.borrow().leader_id == Some(node.node_id),
            };
            Ok(ResponseKind::ExpireDelegationToken(
                delegation_tokens::expire(asker, listener),
            ))
        }
        RequestKind::DescribeDelegationToken(_) => Ok(ResponseKind::DescribeDelegationToken(
            delegation_tokens::describe(asker, TokenListener::Controller { active: false }),
        )),
        // KIP-919: the controllers, for Kafka's tools given --bootstrap-controller.
        RequestKind::DescribeCluster(r) => {
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Controllers(reply))
                .map_err(|_| ServeError::ControllerStopped)?;
            let controllers = rx.await.map_err(|_| ServeError::ControllerStopped)?;
            let metadata_version = node.image.borrow().metadata_version();
            Ok(ResponseKind::DescribeCluster(
                super::answers::describe_cluster::answer_controllers(
                    &r,
                    version,
                    cluster_id,
                    &controllers,
                    listener_name,
                    metadata_version,
                ),
            ))
        }
        // This node's configs (and any topic's or group's), as its client listeners answer.
        RequestKind::DescribeConfigs(r) => {
            let image = node.image.borrow().clone();
            let cfg = node.configs.effective_in(&image);
            let source = super::answers::describe_configs::Basis {
                node_id: node.node_id,
                image: &image,
                cfg: &cfg,
                // Only topics in the metadata log: a broker's pre-KRaft topics are its own.
                own_topic: &|_| None,
                // Controller RPCs are not checked against ACLs (see above).
                authorize: &|_, _| Ok(()),
            };
            Ok(ResponseKind::DescribeConfigs(
                super::answers::describe_configs::describe(&source, r),
            ))
        }
        RequestKind::DescribeQuorum(r) => {
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Describe(reply))
                .map_err(|_| ServeError::ControllerStopped)?;
            let describe = match rx.await.map_err(|_| ServeError::ControllerStopped)? {
                // Kafka's controllers answer only when they lead; brokers forward.
                Describe::Forward(..) => Describe::NotLeader,
                d => d,
            };
            Ok(ResponseKind::DescribeQuorum(
                super::answers::describe_quorum::answer(describe, r, version).await,
            ))
        }
        body @ (RequestKind::AddRaftVoter(_) | RequestKind::RemoveRaftVoter(_)) => {
            let change = match &body {
                RequestKind::AddRaftVoter(r) => super::voter_rpcs::add_from_kafka(r, cluster_id),
                RequestKind::RemoveRaftVoter(r) => {
                    super::voter_rpcs::remove_from_kafka(r, cluster_id)
                }
                _ => unreachable!("matched above"),
            };
            let change = match change {
                Ok(c) => c,
                Err(e) => return Ok(super::voter_rpcs::response(key, Err(e))),
            };
            let (reply, rx) = oneshot::channel();
            tx.send(Command::ChangeVoters { change, reply })
                .map_err(|_| ServeError::ControllerStopped)?;
            let routed = rx.await.map_err(|_| ServeError::ControllerStopped)?;
            Ok(super::voter_rpcs::finish(routed, key, version, body).await)
        }
        body @ (RequestKind::BrokerRegistration(_)
        | RequestKind::BrokerHeartbeat(_)
        | RequestKind::CreateTopics(_)
        | RequestKind::DeleteTopics(_)
        | RequestKind::CreatePartitions(_)
        | RequestKind::AllocateProducerIds(_)
        | RequestKind::AlterPartition(_)
        | RequestKind::IncrementalAlterConfigs(_)
        | RequestKind::AlterConfigs(_)
        | RequestKind::CreateAcls(_)
        | RequestKind::DeleteAcls(_)
        | RequestKind::AlterUserScramCredentials(_)
        | RequestKind::AlterClientQuotas(_)
        | RequestKind::UpdateFeatures(_)
        | RequestKind::ElectLeaders(_)
        | RequestKind::AlterPartitionReassignments(_)
        | RequestKind::UnregisterBroker(_)) => {
            let request = match body {
                RequestKind::AlterPartitionReassignments(k) => {
                    ControllerRequest::AlterPartitionReassignments(
                        super::reassignment_rpcs::from_kafka(k, version),
                    )
                }
                RequestKind::AlterPartition(k) => super::partition_rpcs::from_kafka(k, version),
                RequestKind::ElectLeaders(k) => ControllerRequest::ElectLeaders(
                    super::partition_rpcs::elect_leaders_from_kafka(k, version),
                ),
                body => super::broker_rpcs::from_kafka(body).expect("a controller request"),
            };
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Request {
                request: request.clone(),
                reply,
            })
            .map_err(|_| ServeError::ControllerStopped)?;
            let result = match rx.await.map_err(|_| ServeError::ControllerStopped)? {
                Routed::Done(r) => r,
                // Brokers ask the leader; a node that does not lead sends them on their way.
                Routed::Forward { .. } => Err(ReplyError::new(
                    NOT_CONTROLLER,
                    "not the active controller".into(),
                )),
            };
            Ok(match &request {
                // Answered in the version asked (v0 has no top-level error code).
                ControllerRequest::ElectLeaders(r) => ResponseKind::ElectLeaders(
                    super::partition_rpcs::elect_leaders_response(r, &result, version),
                ),
                ControllerRequest::AlterPartitionReassignments(r) => {
                    ResponseKind::AlterPartitionReassignments(super::reassignment_rpcs::response(
                        r, &result, version,
                    ))
                }
                _ => super::broker_rpcs::response_to_kafka(key, &request, &result),
            })
        }
        body => {
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let (from, message) = match wire::request_from_kafka(body, version, id, cluster_id) {
                Ok(m) => m,
                Err(e) => {
                    tracing::debug!(api = ?key, error = %e, "refused quorum request");
                    return Ok(wire::error_response(key, version, e.error_code()));
                }
            };
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Inbound {
                from,
                message,
                reply,
            })
            .map_err(|_| ServeError::ControllerStopped)?;
            let (response, leader) = rx.await.map_err(|_| ServeError::ControllerStopped)?;
            Ok(wire::response_to_kafka(&response, key, version, leader))
        }
    }
}
