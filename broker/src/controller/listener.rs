//! The controller listener (`controller.listener.names`): where the other controllers send
//! this node KRaft's RPCs. It answers the APIs of `samsa_protocol::CONTROLLER_APIS` only, one
//! request at a time per connection (responses go out in request order, as Kafka's protocol
//! requires), on the controller thread's own runtime, apart from the client listeners.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, RequestKind, ResponseKind};
use samsa_protocol::{FrameDecoder, CONTROLLER_APIS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::active::{ControllerRequest, NOT_CONTROLLER};
use super::runtime::{Command, Describe, Routed};
use super::wire;

/// How errors that are the peer's fault begin (logged as warnings; I/O errors are not).
const REFUSED: &str = "refused request";

/// Largest request frame a controller accepts (Fetch and FetchSnapshot requests are small).
const REQUEST_BYTES_MAX: usize = 8 << 20;

pub(super) fn spawn(
    listener: std::net::TcpListener,
    tx: mpsc::UnboundedSender<Command>,
    ids: Arc<AtomicU64>,
    cluster_id: String,
) {
    let cluster_id: Arc<str> = cluster_id.into();
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
                    let cluster_id = cluster_id.clone();
                    tokio::spawn(async move {
                        match serve(stream, tx, ids, cluster_id).await {
                            Err(e) if e.starts_with(REFUSED) => {
                                tracing::warn!(%peer, error = %e, "controller connection closed")
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

async fn serve(
    mut stream: TcpStream,
    tx: mpsc::UnboundedSender<Command>,
    ids: Arc<AtomicU64>,
    cluster_id: Arc<str>,
) -> Result<(), String> {
    let decoder = FrameDecoder::new(REQUEST_BYTES_MAX);
    let mut buf = BytesMut::with_capacity(16 << 10);
    let mut out = BytesMut::new();
    loop {
        let frame = loop {
            if let Some(f) = decoder
                .decode(&mut buf)
                .map_err(|e| format!("{REFUSED}: {e}"))?
            {
                break f;
            }
            if stream.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
                return Ok(());
            }
        };
        let req = samsa_protocol::decode_request_served(frame, CONTROLLER_APIS)
            .map_err(|e| format!("{REFUSED}: {e}"))?;
        let key = req.api_key;
        let version = req.api_version();
        let correlation_id = req.correlation_id();
        let mut response = answer(key, version, req.body, &tx, &ids, &cluster_id).await?;
        samsa_protocol::nulls::null_where_kafka_does(&mut response, version);
        out.clear();
        samsa_protocol::encode_response(&mut out, key, version, correlation_id, &response)
            .map_err(|e| e.to_string())?;
        stream.write_all(&out).await.map_err(|e| e.to_string())?;
    }
}

async fn answer(
    key: ApiKey,
    version: i16,
    body: RequestKind,
    tx: &mpsc::UnboundedSender<Command>,
    ids: &AtomicU64,
    cluster_id: &str,
) -> Result<ResponseKind, String> {
    match body {
        RequestKind::ApiVersions(_) => {
            let mut resp = ApiVersionsResponse::default();
            resp.api_keys = samsa_protocol::api_table::api_versions(CONTROLLER_APIS);
            Ok(ResponseKind::ApiVersions(resp))
        }
        RequestKind::DescribeQuorum(r) => {
            let (reply, rx) = oneshot::channel();
            tx.send(Command::Describe(reply))
                .map_err(|_| "the controller stopped".to_string())?;
            let describe = match rx.await.map_err(|_| "the controller stopped".to_string())? {
                // Kafka's controllers answer only when they lead; brokers forward.
                Describe::Forward(..) => Describe::NotLeader,
                d => d,
            };
            Ok(ResponseKind::DescribeQuorum(
                crate::handlers::describe_quorum::answer(describe, r, version).await,
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
                .map_err(|_| "the controller stopped".to_string())?;
            let routed = rx.await.map_err(|_| "the controller stopped".to_string())?;
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
        | RequestKind::UpdateFeatures(_)
        | RequestKind::ElectLeaders(_)
        | RequestKind::AlterPartitionReassignments(_)) => {
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
            .map_err(|_| "the controller stopped".to_string())?;
            let result = match rx.await.map_err(|_| "the controller stopped".to_string())? {
                Routed::Done(r) => r,
                // Brokers ask the leader; a node that does not lead sends them on their way.
                Routed::Forward { .. } => Err((NOT_CONTROLLER, "not the active controller".into())),
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
            .map_err(|_| "the controller stopped".to_string())?;
            let (response, leader) = rx.await.map_err(|_| "the controller stopped".to_string())?;
            Ok(wire::response_to_kafka(&response, key, version, leader))
        }
    }
}
