//! The KRaft quorum's [`Message`]s as Kafka's own RPCs — Vote, BeginQuorumEpoch,
//! EndQuorumEpoch, Fetch and FetchSnapshot on `__cluster_metadata-0` (KIP-595, KIP-630, KIP-853,
//! KIP-996, KIP-1166) — in `kafka-protocol`'s structs, both ways. The caller owns framing and
//! correlation ids, and keeps each request's quorum `id` beside its correlation id: Kafka's RPCs
//! have no such field, so the id goes in and comes back as a parameter.
//!
//! Invariants: every request and response names exactly `__cluster_metadata` partition 0 (by
//! the fixed topic id from Fetch v13); anything else is refused with the error code Kafka's
//! `KafkaRaftClient` answers. Endpoint lists and directory ids are sent empty (but for the
//! leader's endpoint in Fetch responses, which observers that know only bootstrap servers need):
//! Kafka then falls back to the listeners of its voter set, and a missing directory id matches
//! any directory.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    begin_quorum_epoch_request as begin_req, begin_quorum_epoch_response as begin_resp,
    end_quorum_epoch_request as end_req, end_quorum_epoch_response as end_resp,
    fetch_request as fetch_req, fetch_response as fetch_resp, fetch_snapshot_request as snap_req,
    fetch_snapshot_response as snap_resp, vote_request as vote_req, vote_response as vote_resp,
};
use kafka_protocol::messages::{ApiKey, BrokerId, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::quorum::{
    Batch, BeginQuorumEpochRequest, EndQuorumEpochRequest, EpochResponse, FetchRequest,
    FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, Message, QuorumError, SnapshotId,
    VoteRequest, VoteResponse, METADATA_PARTITION, METADATA_TOPIC,
};
use samsa_cluster::NodeId;
use uuid::Uuid;

use super::codec;

/// Kafka's `Uuid.METADATA_TOPIC_ID` (`new Uuid(0L, 1L)`), the topic id of `__cluster_metadata`.
pub const METADATA_TOPIC_ID: Uuid = Uuid::from_u128(1);
/// What one Fetch asks for, as Kafka's `KafkaRaftClient.MAX_FETCH_SIZE_BYTES`.
const FETCH_BYTES_MAX: i32 = 8 << 20;
/// Fetch from v12 carries `last_fetched_epoch` and answers with `current_leader`: KRaft needs both.
const FETCH_VERSION_MIN: i16 = 12;
/// What Fetch v18's `HighWatermark` holds when the fetcher does not track one (KIP-1166).
const HIGH_WATERMARK_UNSUPPORTED: i64 = i64::MAX;

/// The version this node sends each quorum RPC in: the highest that both `kafka-protocol` 0.18
/// (`ApiKey::valid_versions()`) and Kafka 4.1+ support.
///
/// | RPC              | crate | Kafka 4.0 | Kafka 4.1+ | sent                           |
/// |------------------|-------|-----------|------------|--------------------------------|
/// | Vote             | 0-2   | 0-2       | 0-2        | 2 (KIP-996 `pre_vote`)         |
/// | BeginQuorumEpoch | 0-1   | 0-1       | 0-1        | 1 (KIP-853 `voter_id`)         |
/// | EndQuorumEpoch   | 0-1   | 0-1       | 0-1        | 1 (`preferred_candidates`)     |
/// | Fetch            | 4-18  | 4-17      | 4-18       | 18 (KIP-1166 `high_watermark`) |
/// | FetchSnapshot    | 0-1   | 0-1       | 0-1        | 1                              |
///
/// A Kafka 4.0 controller takes Fetch up to v17 only. The Fetch body [`request_to_kafka`] builds
/// encodes unchanged at v15..=17 (the high watermark is a tagged field, left out below v18), so a
/// caller that negotiates with ApiVersions may send it at the lower version.
///
/// Panics for an API that is not a quorum RPC.
pub fn request_version(key: ApiKey) -> i16 {
    match key {
        ApiKey::Vote => 2,
        ApiKey::BeginQuorumEpoch => 1,
        ApiKey::EndQuorumEpoch => 1,
        ApiKey::Fetch => 18,
        ApiKey::FetchSnapshot => 1,
        _ => panic!("{key:?} is not a KRaft quorum RPC"),
    }
}

/// Why a Kafka RPC is not a quorum message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("the request is for cluster {theirs}, but this is cluster {ours}")]
    ClusterIdMismatch { ours: String, theirs: String },
    #[error(
        "{api:?} for {topic}-{partition}: the metadata quorum serves __cluster_metadata-0 only"
    )]
    NotMetadataPartition {
        api: ApiKey,
        topic: String,
        partition: i32,
    },
    #[error(
        "{api:?} names {count} partitions: the metadata quorum takes one, __cluster_metadata-0"
    )]
    PartitionCount { api: ApiKey, count: usize },
    #[error("{api:?} v{version} is too old for the metadata quorum (needs v{min}+)")]
    UnsupportedVersion { api: ApiKey, version: i16, min: i16 },
    #[error("the request is not a KRaft quorum RPC")]
    NotQuorumRpc,
    #[error("malformed {api:?}: {why}")]
    Malformed { api: ApiKey, why: String },
    #[error("{api:?} response carries error code {code}, which the quorum does not act on")]
    UnhandledErrorCode { api: ApiKey, code: i16 },
}

impl WireError {
    /// The Kafka error code to answer a refused request with (through [`error_response`]); for
    /// [`WireError::UnhandledErrorCode`], the code the peer answered with.
    pub fn error_code(&self) -> i16 {
        match self {
            WireError::ClusterIdMismatch { .. } => ResponseError::InconsistentClusterId.code(),
            // Kafka refuses another partition with INVALID_REQUEST for every quorum RPC but
            // FetchSnapshot ("until we support multi-raft").
            WireError::NotMetadataPartition {
                api: ApiKey::FetchSnapshot,
                ..
            } => ResponseError::UnknownTopicOrPartition.code(),
            WireError::UnsupportedVersion { .. } => ResponseError::UnsupportedVersion.code(),
            WireError::UnhandledErrorCode { code, .. } => *code,
            WireError::NotMetadataPartition { .. }
            | WireError::PartitionCount { .. }
            | WireError::NotQuorumRpc
            | WireError::Malformed { .. } => ResponseError::InvalidRequest.code(),
        }
    }
}

/// A quorum request sent by node `from` to node `to`, as the Kafka request (api key, version,
/// body); None for a response. `to` fills Vote's and BeginQuorumEpoch's `voter_id`, which Kafka's
/// receiver checks against its own id.
pub fn request_to_kafka(
    message: &Message,
    from: NodeId,
    to: NodeId,
    cluster_id: &str,
) -> Option<(ApiKey, i16, RequestKind)> {
    let cluster_id = Some(StrBytes::from_string(cluster_id.to_owned()));
    let (key, sender, body) = match message {
        Message::Vote(r) => {
            // KIP-996 (KAFKA-17641): a prospective Kafka voter asks in its current epoch and
            // bumps it once the pre-vote is won; the quorum names the epoch it would stand in.
            let replica_epoch = r.epoch.saturating_sub(r.pre_vote.into());
            let p = vote_req::PartitionData::default()
                .with_replica_epoch(replica_epoch)
                .with_replica_id(BrokerId(r.candidate_id))
                .with_last_offset_epoch(r.last_offset_epoch)
                .with_last_offset(r.last_offset)
                .with_pre_vote(r.pre_vote);
            let body = vote_req::VoteRequest::default()
                .with_cluster_id(cluster_id)
                .with_voter_id(BrokerId(to))
                .with_topics(vote_req::TopicData::only(p));
            (ApiKey::Vote, r.candidate_id, RequestKind::Vote(body))
        }
        Message::BeginQuorumEpoch(r) => {
            let p = begin_req::PartitionData::default()
                .with_leader_id(BrokerId(r.leader_id))
                .with_leader_epoch(r.epoch);
            let body = begin_req::BeginQuorumEpochRequest::default()
                .with_cluster_id(cluster_id)
                .with_voter_id(BrokerId(to))
                .with_topics(begin_req::TopicData::only(p));
            let body = RequestKind::BeginQuorumEpoch(body);
            (ApiKey::BeginQuorumEpoch, r.leader_id, body)
        }
        Message::EndQuorumEpoch(r) => {
            let version = request_version(ApiKey::EndQuorumEpoch);
            let body =
                RequestKind::EndQuorumEpoch(end_quorum_epoch_request(r, cluster_id, version));
            (ApiKey::EndQuorumEpoch, r.leader_id, body)
        }
        Message::Fetch(r) => {
            let body = fetch_request(r, cluster_id, request_version(ApiKey::Fetch));
            (ApiKey::Fetch, r.replica_id, RequestKind::Fetch(body))
        }
        Message::FetchSnapshot(r) => {
            let snapshot_id = snap_req::SnapshotId::default()
                .with_end_offset(r.snapshot_id.end_offset)
                .with_epoch(r.snapshot_id.epoch);
            let p = snap_req::PartitionSnapshot::default()
                .with_current_leader_epoch(r.epoch)
                .with_snapshot_id(snapshot_id)
                .with_position(i64::try_from(r.position).unwrap_or(i64::MAX));
            let body = snap_req::FetchSnapshotRequest::default()
                .with_cluster_id(cluster_id)
                .with_replica_id(BrokerId(r.replica_id))
                .with_max_bytes(i32::try_from(r.max_bytes).unwrap_or(i32::MAX))
                .with_topics(snap_req::TopicSnapshot::only(p));
            let body = RequestKind::FetchSnapshot(body);
            (ApiKey::FetchSnapshot, r.replica_id, body)
        }
        _ => return None,
    };
    debug_assert_eq!(sender, from, "{} sent by another node", message.name());
    Some((key, request_version(key), body))
}

fn end_quorum_epoch_request(
    r: &EndQuorumEpochRequest,
    cluster_id: Option<StrBytes>,
    version: i16,
) -> end_req::EndQuorumEpochRequest {
    let mut p = end_req::PartitionData::default()
        .with_leader_id(BrokerId(r.leader_id))
        .with_leader_epoch(r.epoch);
    // v1 (KIP-853) names replica keys instead; no directory id matches any directory.
    if version >= 1 {
        let candidate = |&id| end_req::ReplicaInfo::default().with_candidate_id(BrokerId(id));
        p.preferred_candidates = r.preferred_successors.iter().map(candidate).collect();
    } else {
        p.preferred_successors = r.preferred_successors.clone();
    }
    end_req::EndQuorumEpochRequest::default()
        .with_cluster_id(cluster_id)
        .with_topics(end_req::TopicData::only(p))
}

fn fetch_request(
    r: &FetchRequest,
    cluster_id: Option<StrBytes>,
    version: i16,
) -> fetch_req::FetchRequest {
    let p = fetch_req::FetchPartition::default()
        .with_current_leader_epoch(r.epoch)
        .with_fetch_offset(r.fetch_offset)
        .with_last_fetched_epoch(r.last_fetched_epoch)
        .with_partition_max_bytes(FETCH_BYTES_MAX)
        .with_high_watermark(r.high_watermark.unwrap_or(HIGH_WATERMARK_UNSUPPORTED));
    let mut body = fetch_req::FetchRequest::default()
        .with_cluster_id(cluster_id)
        .with_max_wait_ms(i32::try_from(r.max_wait_ms).unwrap_or(i32::MAX))
        .with_min_bytes(0)
        .with_max_bytes(FETCH_BYTES_MAX)
        .with_topics(fetch_req::FetchTopic::only(p));
    if version >= 15 {
        body.replica_state = fetch_req::ReplicaState::default()
            .with_replica_id(BrokerId(r.replica_id))
            .with_replica_epoch(-1);
    } else {
        body.replica_id = BrokerId(r.replica_id);
    }
    body
}

/// A received Kafka request on `__cluster_metadata-0` as the quorum message (carrying `id`) and
/// the node that sent it. A null cluster id is accepted, as Kafka does. Vote's and
/// BeginQuorumEpoch's `voter_id` is not checked here: the caller knows its own id.
pub fn request_from_kafka(
    body: RequestKind,
    version: i16,
    id: u64,
    cluster_id: &str,
) -> Result<(NodeId, Message), WireError> {
    match body {
        RequestKind::Vote(r) => {
            check_cluster_id(&r.cluster_id, cluster_id)?;
            let p = only_partition(ApiKey::Vote, r.topics, version)?;
            let pre_vote = version >= 2 && p.pre_vote;
            let epoch = p.replica_epoch.saturating_add(pre_vote.into());
            let candidate_id = p.replica_id.0;
            let message = Message::Vote(VoteRequest {
                id,
                epoch,
                candidate_id,
                last_offset_epoch: p.last_offset_epoch,
                last_offset: p.last_offset,
                pre_vote,
            });
            Ok((candidate_id, message))
        }
        RequestKind::BeginQuorumEpoch(r) => {
            check_cluster_id(&r.cluster_id, cluster_id)?;
            let p = only_partition(ApiKey::BeginQuorumEpoch, r.topics, version)?;
            let (epoch, leader_id) = (p.leader_epoch, p.leader_id.0);
            let message = BeginQuorumEpochRequest {
                id,
                epoch,
                leader_id,
            };
            Ok((leader_id, Message::BeginQuorumEpoch(message)))
        }
        RequestKind::EndQuorumEpoch(r) => {
            check_cluster_id(&r.cluster_id, cluster_id)?;
            let p = only_partition(ApiKey::EndQuorumEpoch, r.topics, version)?;
            let preferred_successors = match version {
                0 => p.preferred_successors,
                _ => p
                    .preferred_candidates
                    .iter()
                    .map(|c| c.candidate_id.0)
                    .collect(),
            };
            let (epoch, leader_id) = (p.leader_epoch, p.leader_id.0);
            let message = EndQuorumEpochRequest {
                id,
                epoch,
                leader_id,
                preferred_successors,
            };
            Ok((leader_id, Message::EndQuorumEpoch(message)))
        }
        RequestKind::Fetch(r) => {
            check_cluster_id(&r.cluster_id, cluster_id)?;
            check_fetch_version(version)?;
            let p = only_partition(ApiKey::Fetch, r.topics, version)?;
            let replica_id = match version {
                ..=14 => r.replica_id.0,
                _ => r.replica_state.replica_id.0,
            };
            let hw = p.high_watermark;
            let message = Message::Fetch(FetchRequest {
                id,
                replica_id,
                epoch: p.current_leader_epoch,
                fetch_offset: p.fetch_offset,
                last_fetched_epoch: p.last_fetched_epoch,
                high_watermark: (version >= 18 && hw != HIGH_WATERMARK_UNSUPPORTED).then_some(hw),
                max_wait_ms: non_negative(ApiKey::Fetch, "max_wait_ms", r.max_wait_ms.into())?,
            });
            Ok((replica_id, message))
        }
        RequestKind::FetchSnapshot(r) => {
            check_cluster_id(&r.cluster_id, cluster_id)?;
            let api = ApiKey::FetchSnapshot;
            let p = only_partition(api, r.topics, version)?;
            let message = Message::FetchSnapshot(FetchSnapshotRequest {
                id,
                replica_id: r.replica_id.0,
                epoch: p.current_leader_epoch,
                snapshot_id: SnapshotId {
                    end_offset: p.snapshot_id.end_offset,
                    epoch: p.snapshot_id.epoch,
                },
                position: non_negative(api, "position", p.position)?,
                max_bytes: non_negative(api, "max_bytes", r.max_bytes.into())? as usize,
            });
            Ok((r.replica_id.0, message))
        }
        _ => Err(WireError::NotQuorumRpc),
    }
}

/// A quorum response as the Kafka response to `key` at `version`. Kafka's KRaft answers with the
/// top-level error NONE and the quorum's error on the partition. A request, or a response to
/// another API, is the caller's bug: it panics in debug builds and answers UNKNOWN_SERVER_ERROR
/// otherwise.
///
/// `leader_address` is the controller endpoint of the leader the response names, when known: a Fetch
/// response carries it in `NodeEndpoints` (v16+), which is how an observer that asked a
/// bootstrap server learns where the leader listens (KIP-853).
pub fn response_to_kafka(
    message: &Message,
    key: ApiKey,
    version: i16,
    leader_address: Option<SocketAddr>,
) -> ResponseKind {
    let leader = |epoch: i32, leader_id: Option<NodeId>| (epoch, BrokerId(leader_id.unwrap_or(-1)));
    match message {
        Message::VoteResponse(r) if key == ApiKey::Vote => {
            let (epoch, leader_id) = leader(r.epoch, r.leader_id);
            let p = vote_resp::PartitionData::default()
                .with_error_code(code_of(r.error))
                .with_leader_id(leader_id)
                .with_leader_epoch(epoch)
                .with_vote_granted(r.granted);
            let topics = vote_resp::TopicData::only(p);
            ResponseKind::Vote(vote_resp::VoteResponse::default().with_topics(topics))
        }
        Message::BeginQuorumEpochResponse(r) if key == ApiKey::BeginQuorumEpoch => {
            let (epoch, leader_id) = leader(r.epoch, r.leader_id);
            let p = begin_resp::PartitionData::default()
                .with_error_code(code_of(r.error))
                .with_leader_id(leader_id)
                .with_leader_epoch(epoch);
            let topics = begin_resp::TopicData::only(p);
            let body = begin_resp::BeginQuorumEpochResponse::default().with_topics(topics);
            ResponseKind::BeginQuorumEpoch(body)
        }
        Message::EndQuorumEpochResponse(r) if key == ApiKey::EndQuorumEpoch => {
            let (epoch, leader_id) = leader(r.epoch, r.leader_id);
            let p = end_resp::PartitionData::default()
                .with_error_code(code_of(r.error))
                .with_leader_id(leader_id)
                .with_leader_epoch(epoch);
            let topics = end_resp::TopicData::only(p);
            ResponseKind::EndQuorumEpoch(
                end_resp::EndQuorumEpochResponse::default().with_topics(topics),
            )
        }
        Message::FetchResponse(r) if key == ApiKey::Fetch => {
            debug_assert!(version >= FETCH_VERSION_MIN, "KRaft Fetch v{version}");
            let (epoch, leader_id) = leader(r.epoch, r.leader_id);
            let mut p = fetch_resp::PartitionData::default()
                .with_error_code(code_of(r.error))
                .with_high_watermark(r.high_watermark)
                .with_log_start_offset(r.log_start_offset)
                .with_current_leader(
                    fetch_resp::LeaderIdAndEpoch::default()
                        .with_leader_id(leader_id)
                        .with_leader_epoch(epoch),
                )
                .with_records(Some(fetch_records(&r.batches)));
            if let Some((epoch, end_offset)) = r.diverging_epoch {
                p.diverging_epoch.epoch = epoch;
                p.diverging_epoch.end_offset = end_offset;
            }
            if let Some(s) = r.snapshot_id {
                p.snapshot_id.end_offset = s.end_offset;
                p.snapshot_id.epoch = s.epoch;
            }
            let topics = fetch_resp::FetchableTopicResponse::only(p);
            let mut body = fetch_resp::FetchResponse::default().with_responses(topics);
            if let (Some(id), Some(addr), true) = (r.leader_id, leader_address, version >= 16) {
                body.node_endpoints = vec![fetch_resp::NodeEndpoint::default()
                    .with_node_id(BrokerId(id))
                    .with_host(StrBytes::from_string(addr.ip().to_string()))
                    .with_port(i32::from(addr.port()))];
            }
            ResponseKind::Fetch(body)
        }
        Message::FetchSnapshotResponse(r) if key == ApiKey::FetchSnapshot => {
            let (epoch, leader_id) = leader(r.epoch, r.leader_id);
            let mut p = snap_resp::PartitionSnapshot::default()
                .with_error_code(code_of(r.error))
                .with_size(i64::try_from(r.size).unwrap_or(i64::MAX))
                .with_position(i64::try_from(r.position).unwrap_or(i64::MAX))
                .with_unaligned_records(r.chunk.clone());
            p.snapshot_id.end_offset = r.snapshot_id.end_offset;
            p.snapshot_id.epoch = r.snapshot_id.epoch;
            p.current_leader.leader_id = leader_id;
            p.current_leader.leader_epoch = epoch;
            let topics = snap_resp::TopicSnapshot::only(p);
            ResponseKind::FetchSnapshot(
                snap_resp::FetchSnapshotResponse::default().with_topics(topics),
            )
        }
        _ => {
            debug_assert!(false, "{} is not a {key:?} response", message.name());
            error_response(key, version, ResponseError::UnknownServerError.code())
        }
    }
}

/// `batches` as Fetch's records field: one as encoded, several back to back.
fn fetch_records(batches: &[Batch]) -> Bytes {
    match batches {
        [] => Bytes::new(),
        [one] => codec::encode(one),
        many => {
            let mut buf = BytesMut::with_capacity(many.iter().map(|b| b.size_bytes()).sum());
            for b in many {
                buf.extend_from_slice(&codec::encode(b));
            }
            buf.freeze()
        }
    }
}

/// The leader's endpoint a Fetch response names (`CurrentLeader` and its entry in
/// `NodeEndpoints`), if it has one that resolves.
pub fn fetch_leader_endpoint(body: &ResponseKind) -> Option<(NodeId, SocketAddr)> {
    let ResponseKind::Fetch(r) = body else {
        return None;
    };
    let leader = r
        .responses
        .first()?
        .partitions
        .first()?
        .current_leader
        .leader_id
        .0;
    let e = r.node_endpoints.iter().find(|e| e.node_id.0 == leader)?;
    let port = u16::try_from(e.port).ok()?;
    let addr = crate::net::peer::resolve(&e.host, port)?;
    (leader >= 0).then_some((leader, addr))
}

/// A received Kafka response to the request with quorum id `id` as the quorum message. A
/// top-level error, or an error code the quorum does not know (BROKER_NOT_AVAILABLE,
/// INVALID_VOTER_KEY, ...), is [`WireError::UnhandledErrorCode`]: treat it as a lost answer.
pub fn response_from_kafka(
    key: ApiKey,
    version: i16,
    body: ResponseKind,
    id: u64,
) -> Result<Message, WireError> {
    let epoch_response = |code, epoch, leader_id| -> Result<EpochResponse, WireError> {
        let error = error_of(key, code)?;
        Ok(EpochResponse {
            id,
            error,
            epoch,
            leader_id: leader_of(leader_id),
        })
    };
    match body {
        ResponseKind::Vote(r) if key == ApiKey::Vote => {
            top_level(key, r.error_code)?;
            let p = only_partition(key, r.topics, version)?;
            Ok(Message::VoteResponse(VoteResponse {
                id,
                error: error_of(key, p.error_code)?,
                epoch: p.leader_epoch,
                leader_id: leader_of(p.leader_id),
                granted: p.vote_granted,
            }))
        }
        ResponseKind::BeginQuorumEpoch(r) if key == ApiKey::BeginQuorumEpoch => {
            top_level(key, r.error_code)?;
            let p = only_partition(key, r.topics, version)?;
            epoch_response(p.error_code, p.leader_epoch, p.leader_id)
                .map(Message::BeginQuorumEpochResponse)
        }
        ResponseKind::EndQuorumEpoch(r) if key == ApiKey::EndQuorumEpoch => {
            top_level(key, r.error_code)?;
            let p = only_partition(key, r.topics, version)?;
            epoch_response(p.error_code, p.leader_epoch, p.leader_id)
                .map(Message::EndQuorumEpochResponse)
        }
        ResponseKind::Fetch(r) if key == ApiKey::Fetch => {
            check_fetch_version(version)?;
            top_level(key, r.error_code)?;
            let p = only_partition(key, r.responses, version)?;
            let batches = match &p.records {
                Some(records) if !records.is_empty() => {
                    codec::decode_all(records).map_err(|e| WireError::Malformed {
                        api: key,
                        why: format!("records: {e}"),
                    })?
                }
                _ => Vec::new(),
            };
            let (d, s) = (&p.diverging_epoch, &p.snapshot_id);
            Ok(Message::FetchResponse(FetchResponse {
                id,
                error: error_of(key, p.error_code)?,
                epoch: p.current_leader.leader_epoch,
                leader_id: leader_of(p.current_leader.leader_id),
                high_watermark: p.high_watermark,
                log_start_offset: p.log_start_offset,
                diverging_epoch: ((d.epoch, d.end_offset) != (-1, -1))
                    .then_some((d.epoch, d.end_offset)),
                snapshot_id: ((s.end_offset, s.epoch) != (-1, -1)).then_some(SnapshotId {
                    end_offset: s.end_offset,
                    epoch: s.epoch,
                }),
                batches,
            }))
        }
        ResponseKind::FetchSnapshot(r) if key == ApiKey::FetchSnapshot => {
            top_level(key, r.error_code)?;
            let p = only_partition(key, r.topics, version)?;
            let error = error_of(key, p.error_code)?;
            // An error answer need not fill the sizes in.
            let unsigned = |what, v: i64| match error {
                Some(_) => Ok(v.max(0) as u64),
                None => non_negative(key, what, v),
            };
            Ok(Message::FetchSnapshotResponse(FetchSnapshotResponse {
                id,
                error,
                epoch: p.current_leader.leader_epoch,
                leader_id: leader_of(p.current_leader.leader_id),
                snapshot_id: SnapshotId {
                    end_offset: p.snapshot_id.end_offset,
                    epoch: p.snapshot_id.epoch,
                },
                size: unsigned("size", p.size)?,
                position: unsigned("position", p.position)?,
                chunk: p.unaligned_records,
            }))
        }
        _ => Err(WireError::Malformed {
            api: key,
            why: format!("not a {key:?} response"),
        }),
    }
}

/// An error response to `key` at `version` with the top-level error `code` and no partitions, as
/// Kafka answers a quorum request it cannot take (see [`WireError::error_code`]).
pub fn error_response(key: ApiKey, version: i16, code: i16) -> ResponseKind {
    let v = key.valid_versions();
    debug_assert!((v.min..=v.max).contains(&version), "{key:?} v{version}");
    match key {
        ApiKey::Vote => {
            ResponseKind::Vote(vote_resp::VoteResponse::default().with_error_code(code))
        }
        ApiKey::BeginQuorumEpoch => ResponseKind::BeginQuorumEpoch(
            begin_resp::BeginQuorumEpochResponse::default().with_error_code(code),
        ),
        ApiKey::EndQuorumEpoch => ResponseKind::EndQuorumEpoch(
            end_resp::EndQuorumEpochResponse::default().with_error_code(code),
        ),
        // Fetch has a top-level error from v7; below, the error goes on the partition.
        ApiKey::Fetch if version < 7 => {
            let p = fetch_resp::PartitionData::default().with_error_code(code);
            let topics = fetch_resp::FetchableTopicResponse::only(p);
            ResponseKind::Fetch(fetch_resp::FetchResponse::default().with_responses(topics))
        }
        ApiKey::Fetch => {
            ResponseKind::Fetch(fetch_resp::FetchResponse::default().with_error_code(code))
        }
        ApiKey::FetchSnapshot => ResponseKind::FetchSnapshot(
            snap_resp::FetchSnapshotResponse::default().with_error_code(code),
        ),
        _ => panic!("{key:?} is not a KRaft quorum RPC"),
    }
}

/// A topic as a quorum RPC names it: by name, or from Fetch v13 by id.
enum Topic {
    Name(TopicName),
    Id(Uuid),
}

/// The topic list of a quorum RPC, which holds `__cluster_metadata` with its one partition.
trait MetadataTopic: Sized {
    type Partition;
    /// The list of `__cluster_metadata` alone, holding `p` as partition 0.
    fn only(p: Self::Partition) -> Vec<Self>;
    /// This entry's topic, as `version` names it, and partitions.
    fn split(self, version: i16) -> (Topic, Vec<Self::Partition>);
    fn index(p: &Self::Partition) -> i32;
}

/// [`MetadataTopic`] for `topic` (named by its `name` field, or its `id` field from Fetch v13)
/// whose partitions are `partition`s (with their `index` field).
macro_rules! metadata_topic {
    ($($topic:ty, $partition:ty: $name:ident $(/ $id:ident)?, $index:ident;)*) => {$(
        impl MetadataTopic for $topic {
            type Partition = $partition;
            fn only(mut p: $partition) -> Vec<Self> {
                p.$index = METADATA_PARTITION;
                let mut topic = <$topic>::default();
                topic.$name = TopicName(StrBytes::from_static_str(METADATA_TOPIC));
                $(topic.$id = METADATA_TOPIC_ID;)?
                topic.partitions = vec![p];
                vec![topic]
            }
            fn split(self, version: i16) -> (Topic, Vec<$partition>) {
                let _ = version;
                $(if version >= 13 {
                    return (Topic::Id(self.$id), self.partitions);
                })?
                (Topic::Name(self.$name), self.partitions)
            }
            fn index(p: &$partition) -> i32 {
                p.$index
            }
        }
    )*};
}

metadata_topic! {
    vote_req::TopicData, vote_req::PartitionData: topic_name, partition_index;
    vote_resp::TopicData, vote_resp::PartitionData: topic_name, partition_index;
    begin_req::TopicData, begin_req::PartitionData: topic_name, partition_index;
    begin_resp::TopicData, begin_resp::PartitionData: topic_name, partition_index;
    end_req::TopicData, end_req::PartitionData: topic_name, partition_index;
    end_resp::TopicData, end_resp::PartitionData: topic_name, partition_index;
    fetch_req::FetchTopic, fetch_req::FetchPartition: topic / topic_id, partition;
    fetch_resp::FetchableTopicResponse, fetch_resp::PartitionData: topic / topic_id, partition_index;
    snap_req::TopicSnapshot, snap_req::PartitionSnapshot: name, partition;
    snap_resp::TopicSnapshot, snap_resp::PartitionSnapshot: name, index;
}

/// The one partition of `topics`, which must be `__cluster_metadata-0`.
fn only_partition<T: MetadataTopic>(
    api: ApiKey,
    topics: Vec<T>,
    version: i16,
) -> Result<T::Partition, WireError> {
    let mut count = 0;
    let mut found = None;
    for (topic, partitions) in topics.into_iter().map(|t| t.split(version)) {
        count += partitions.len();
        found = partitions.into_iter().next().map(|p| (topic, p)).or(found);
    }
    let Some((topic, p)) = found.filter(|_| count == 1) else {
        return Err(WireError::PartitionCount { api, count });
    };
    let partition = T::index(&p);
    let ours = match &topic {
        Topic::Name(name) => name.0.as_str() == METADATA_TOPIC,
        Topic::Id(id) => *id == METADATA_TOPIC_ID,
    };
    if !ours || partition != METADATA_PARTITION {
        let topic = match topic {
            Topic::Name(name) => name.0.to_string(),
            Topic::Id(id) => format!("topic id {id}"),
        };
        return Err(WireError::NotMetadataPartition {
            api,
            topic,
            partition,
        });
    }
    Ok(p)
}

fn check_cluster_id(theirs: &Option<StrBytes>, ours: &str) -> Result<(), WireError> {
    match theirs {
        Some(theirs) if theirs.as_str() != ours => Err(WireError::ClusterIdMismatch {
            ours: ours.to_owned(),
            theirs: theirs.to_string(),
        }),
        _ => Ok(()),
    }
}

fn check_fetch_version(version: i16) -> Result<(), WireError> {
    if version < FETCH_VERSION_MIN {
        let (api, min) = (ApiKey::Fetch, FETCH_VERSION_MIN);
        return Err(WireError::UnsupportedVersion { api, version, min });
    }
    Ok(())
}

fn top_level(api: ApiKey, code: i16) -> Result<(), WireError> {
    match code {
        0 => Ok(()),
        code => Err(WireError::UnhandledErrorCode { api, code }),
    }
}

fn non_negative(api: ApiKey, what: &str, v: i64) -> Result<u64, WireError> {
    u64::try_from(v).map_err(|_| WireError::Malformed {
        api,
        why: format!("{what} {v} is negative"),
    })
}

fn leader_of(leader_id: BrokerId) -> Option<NodeId> {
    (leader_id.0 >= 0).then_some(leader_id.0)
}

fn code_of(error: Option<QuorumError>) -> i16 {
    error.map_or(0, QuorumError::code)
}

fn error_of(api: ApiKey, code: i16) -> Result<Option<QuorumError>, WireError> {
    match code {
        0 => Ok(None),
        code => QuorumError::from_code(code)
            .map(Some)
            .ok_or(WireError::UnhandledErrorCode { api, code }),
    }
}

#[cfg(test)]
mod tests {
    use samsa_cluster::quorum::Record;

    use super::*;

    const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";
    const ID: u64 = 7;
    /// The sender of every request below.
    const FROM: NodeId = 3;
    const SNAPSHOT: SnapshotId = SnapshotId {
        end_offset: 100,
        epoch: 4,
    };

    #[rustfmt::skip]
    fn requests() -> Vec<Message> {
        let vote = VoteRequest { id: ID, epoch: 9, candidate_id: FROM, last_offset_epoch: 8,
            last_offset: 1234, pre_vote: false };
        vec![
            Message::Vote(vote.clone()),
            Message::Vote(VoteRequest { pre_vote: true, ..vote }),
            Message::BeginQuorumEpoch(BeginQuorumEpochRequest { id: ID, epoch: 9, leader_id: FROM }),
            Message::EndQuorumEpoch(EndQuorumEpochRequest { id: ID, epoch: 9, leader_id: FROM,
                preferred_successors: vec![1, 2] }),
            Message::Fetch(fetch(Some(100))),
            Message::Fetch(fetch(None)),
            Message::FetchSnapshot(FetchSnapshotRequest { id: ID, replica_id: FROM, epoch: 5,
                snapshot_id: SNAPSHOT, position: 4096, max_bytes: 1 << 20 }),
        ]
    }

    #[rustfmt::skip]
    fn responses() -> Vec<(ApiKey, Message)> {
        let vote = VoteResponse { id: ID, error: None, epoch: 9, leader_id: None, granted: true };
        let refused = VoteResponse { error: Some(QuorumError::FencedLeaderEpoch), epoch: 10,
            leader_id: Some(2), granted: false, ..vote.clone() };
        let epoch = EpochResponse { id: ID, error: None, epoch: 9, leader_id: Some(1) };
        let stale = EpochResponse { error: Some(QuorumError::InconsistentVoterSet), leader_id: None,
            ..epoch.clone() };
        let chunk = FetchSnapshotResponse { id: ID, error: None, epoch: 5, leader_id: Some(1),
            snapshot_id: SNAPSHOT, size: 10_000, position: 4096, chunk: Bytes::from_static(b"ab") };
        let snapshot_error = |e| FetchSnapshotResponse { error: Some(e), chunk: Bytes::new(),
            ..chunk.clone() };
        let fetched = fetch_response(None, vec![batch(100, 4, &[b"a", b"b"]), batch(102, 5, &[b"c"])]);
        let empty = fetch_response(None, vec![]);
        vec![
            (ApiKey::Vote, Message::VoteResponse(vote)),
            (ApiKey::Vote, Message::VoteResponse(refused)),
            (ApiKey::BeginQuorumEpoch, Message::BeginQuorumEpochResponse(epoch.clone())),
            (ApiKey::EndQuorumEpoch, Message::EndQuorumEpochResponse(stale)),
            (ApiKey::Fetch, Message::FetchResponse(fetched)),
            (ApiKey::Fetch, Message::FetchResponse(FetchResponse { diverging_epoch: Some((3, 90)),
                ..empty.clone() })),
            (ApiKey::Fetch, Message::FetchResponse(FetchResponse { snapshot_id: Some(SNAPSHOT),
                ..empty.clone() })),
            (ApiKey::Fetch, Message::FetchResponse(FetchResponse { leader_id: None,
                ..fetch_response(Some(QuorumError::NotLeaderOrFollower), vec![]) })),
            (ApiKey::Fetch, Message::FetchResponse(fetch_response(Some(QuorumError::FencedLeaderEpoch),
                vec![]))),
            (ApiKey::FetchSnapshot, Message::FetchSnapshotResponse(chunk.clone())),
            (ApiKey::FetchSnapshot, Message::FetchSnapshotResponse(snapshot_error(
                QuorumError::PositionOutOfRange))),
            (ApiKey::FetchSnapshot, Message::FetchSnapshotResponse(snapshot_error(
                QuorumError::SnapshotNotFound))),
        ]
    }

    #[rustfmt::skip]
    fn fetch(high_watermark: Option<i64>) -> FetchRequest {
        FetchRequest { id: ID, replica_id: FROM, epoch: 5, fetch_offset: 120, last_fetched_epoch: 4,
            high_watermark, max_wait_ms: 500 }
    }

    #[rustfmt::skip]
    fn fetch_response(error: Option<QuorumError>, batches: Vec<Batch>) -> FetchResponse {
        FetchResponse { id: ID, error, epoch: 5, leader_id: Some(1), high_watermark: 110,
            log_start_offset: 10, diverging_epoch: None, snapshot_id: None, batches }
    }

    fn batch(base_offset: i64, epoch: i32, values: &[&'static [u8]]) -> Batch {
        let records = values
            .iter()
            .map(|v| Record::value(Bytes::from_static(v)))
            .collect();
        Batch {
            base_offset,
            epoch,
            control: false,
            append_time_ms: 1_700_000_000_000,
            records,
        }
    }

    /// `body` through its bytes at `version`, as the peer decodes it.
    fn over_the_wire(key: ApiKey, version: i16, body: RequestKind) -> RequestKind {
        let mut buf = BytesMut::new();
        body.encode(&mut buf, version).unwrap();
        RequestKind::decode(key, &mut buf.freeze(), version).unwrap()
    }

    fn response_over_the_wire(key: ApiKey, version: i16, body: ResponseKind) -> ResponseKind {
        let mut buf = BytesMut::new();
        body.encode(&mut buf, version).unwrap();
        ResponseKind::decode(key, &mut buf.freeze(), version).unwrap()
    }

    fn refusal(body: RequestKind) -> WireError {
        let version = request_version(ApiKey::Fetch);
        request_from_kafka(body, version, ID, CLUSTER).unwrap_err()
    }

    #[test]
    fn sent_versions_are_the_highest_the_crate_and_kafka_share() {
        use ApiKey::*;
        for (key, version) in [
            (Vote, 2),
            (BeginQuorumEpoch, 1),
            (EndQuorumEpoch, 1),
            (Fetch, 18),
            (FetchSnapshot, 1),
        ] {
            let range = key.valid_versions();
            assert_eq!(request_version(key), version);
            assert!(
                range.min <= version && version <= range.max,
                "{key:?} v{version}"
            );
        }
    }

    #[test]
    fn every_request_round_trips_through_the_wire() {
        for message in requests() {
            let (key, version, body) = request_to_kafka(&message, FROM, 1, CLUSTER).unwrap();
            let body = over_the_wire(key, version, body);
            let received = request_from_kafka(body, version, ID, CLUSTER).unwrap();
            assert_eq!(received, (FROM, message));
        }
    }

    #[test]
    fn every_response_round_trips_through_the_wire() {
        for (key, message) in responses() {
            let version = request_version(key);
            let body = response_to_kafka(&message, key, version, None);
            let body = response_over_the_wire(key, version, body);
            assert_eq!(
                response_from_kafka(key, version, body, ID).unwrap(),
                message
            );
        }
        assert!(request_to_kafka(&responses()[0].1, FROM, 1, CLUSTER).is_none());
    }

    #[test]
    fn fetch_names_the_metadata_topic_by_id_and_the_fetcher_in_replica_state() {
        let (_, _, body) =
            request_to_kafka(&Message::Fetch(fetch(Some(100))), FROM, 1, CLUSTER).unwrap();
        let RequestKind::Fetch(r) = body else {
            panic!("not a Fetch")
        };
        let topic_id = Uuid::parse_str("00000000-0000-0000-0000-000000000001").unwrap();
        assert_eq!(
            (r.topics[0].topic_id, r.topics[0].topic.0.as_str()),
            (topic_id, METADATA_TOPIC)
        );
        assert_eq!(
            (r.replica_state.replica_id.0, r.replica_state.replica_epoch),
            (FROM, -1)
        );
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (
                p.current_leader_epoch,
                p.high_watermark,
                p.partition_max_bytes
            ),
            (5, 100, 8 << 20)
        );
        assert_eq!(
            (r.min_bytes, r.max_bytes, r.cluster_id.unwrap().as_str()),
            (0, 8 << 20, CLUSTER)
        );
        let answer =
            Message::FetchResponse(fetch_response(Some(QuorumError::FencedLeaderEpoch), vec![]));
        let ResponseKind::Fetch(r) = response_to_kafka(&answer, ApiKey::Fetch, 18, None) else {
            panic!()
        };
        assert_eq!(
            (r.error_code, r.responses[0].topic_id),
            (0, METADATA_TOPIC_ID)
        );
        assert_eq!(r.responses[0].partitions[0].error_code, 74);
    }

    #[test]
    fn a_fetch_response_tells_an_observer_where_the_leader_listens() {
        let answer =
            Message::FetchResponse(fetch_response(Some(QuorumError::FencedLeaderEpoch), vec![]));
        let Message::FetchResponse(f) = &answer else {
            unreachable!()
        };
        let leader = f.leader_id.expect("the test response names a leader");
        let addr: SocketAddr = "127.0.0.1:9193".parse().unwrap();
        for version in [16, 17, 18] {
            let body = response_to_kafka(&answer, ApiKey::Fetch, version, Some(addr));
            let body = response_over_the_wire(ApiKey::Fetch, version, body);
            assert_eq!(
                fetch_leader_endpoint(&body),
                Some((leader, addr)),
                "v{version}"
            );
        }
        // Before v16 there is no NodeEndpoints field, and without an address none is sent.
        let body = response_to_kafka(&answer, ApiKey::Fetch, 15, Some(addr));
        let body = response_over_the_wire(ApiKey::Fetch, 15, body);
        assert_eq!(fetch_leader_endpoint(&body), None);
        let body = response_to_kafka(&answer, ApiKey::Fetch, 18, None);
        assert_eq!(fetch_leader_endpoint(&body), None);
    }

    #[test]
    fn pre_vote_asks_in_the_current_epoch_and_names_the_voter() {
        let Message::Vote(vote) = requests().remove(1) else {
            panic!("not a Vote")
        };
        assert!(vote.pre_vote);
        let (_, _, body) =
            request_to_kafka(&Message::Vote(vote.clone()), FROM, 2, CLUSTER).unwrap();
        let RequestKind::Vote(r) = body else {
            panic!("not a Vote")
        };
        assert_eq!(
            (r.voter_id.0, r.topics[0].partitions[0].replica_epoch),
            (2, vote.epoch - 1)
        );
    }

    #[test]
    fn older_fetch_versions_decode_without_the_high_watermark() {
        // Kafka 4.0 fetches at v17; v13 is the first by topic id, v14 the last with replica_id.
        for version in [17, 14, 12] {
            let body = RequestKind::Fetch(fetch_request(&fetch(Some(100)), None, version));
            let body = over_the_wire(ApiKey::Fetch, version, body);
            let received = request_from_kafka(body, version, ID, CLUSTER).unwrap();
            assert_eq!(received, (FROM, Message::Fetch(fetch(None))), "v{version}");
        }
        let body = RequestKind::Fetch(fetch_request(&fetch(None), None, 11));
        let refused = request_from_kafka(body, 11, ID, CLUSTER).unwrap_err();
        assert_eq!(
            refused.error_code(),
            ResponseError::UnsupportedVersion.code()
        );
    }

    #[test]
    fn end_quorum_epoch_v0_carries_preferred_successors() {
        let Message::EndQuorumEpoch(end) = requests().remove(3) else {
            panic!("not an End")
        };
        let body = RequestKind::EndQuorumEpoch(end_quorum_epoch_request(&end, None, 0));
        let body = over_the_wire(ApiKey::EndQuorumEpoch, 0, body);
        let received = request_from_kafka(body, 0, ID, CLUSTER).unwrap();
        assert_eq!(received, (FROM, Message::EndQuorumEpoch(end)));
    }

    #[test]
    fn a_request_for_another_partition_is_refused() {
        let r = fetch_request(&fetch(None), None, request_version(ApiKey::Fetch));
        let mut other = r.clone();
        other.topics[0].partitions[0].partition = 1;
        let refused = refusal(RequestKind::Fetch(other));
        assert!(
            matches!(
                refused,
                WireError::NotMetadataPartition { partition: 1, .. }
            ),
            "{refused}"
        );
        assert_eq!(refused.error_code(), ResponseError::InvalidRequest.code());

        let mut other = r.clone();
        other.topics[0].topic_id = Uuid::from_u128(2);
        let refused = refusal(RequestKind::Fetch(other));
        assert!(
            matches!(refused, WireError::NotMetadataPartition { .. }),
            "{refused}"
        );

        let mut two = r.clone();
        two.topics.push(r.topics[0].clone());
        assert_eq!(
            refusal(RequestKind::Fetch(two)),
            WireError::PartitionCount {
                api: ApiKey::Fetch,
                count: 2
            }
        );

        let snapshot = requests().pop().unwrap();
        let Some((_, _, RequestKind::FetchSnapshot(mut other))) =
            request_to_kafka(&snapshot, FROM, 1, CLUSTER)
        else {
            panic!("not a FetchSnapshot")
        };
        other.topics[0].name = TopicName(StrBytes::from_static_str("orders"));
        let refused = refusal(RequestKind::FetchSnapshot(other));
        assert_eq!(
            refused.error_code(),
            ResponseError::UnknownTopicOrPartition.code()
        );
    }

    #[test]
    fn a_cluster_id_mismatch_is_inconsistent_cluster_id_and_a_null_one_is_accepted() {
        let message = Message::Fetch(fetch(None));
        let (key, version, body) = request_to_kafka(&message, FROM, 1, "another-cluster").unwrap();
        let refused = request_from_kafka(body, version, ID, CLUSTER).unwrap_err();
        assert_eq!(refused.error_code(), 104);
        let answer = error_response(key, version, refused.error_code());
        let ResponseKind::Fetch(answer) = response_over_the_wire(key, version, answer) else {
            panic!()
        };
        assert_eq!(answer.error_code, 104);

        let body = RequestKind::Fetch(fetch_request(&fetch(None), None, version));
        assert_eq!(
            request_from_kafka(body, version, ID, CLUSTER).unwrap().1,
            message
        );
    }

    #[test]
    fn corrupt_fetch_records_are_malformed() {
        let message = Message::FetchResponse(fetch_response(None, vec![batch(100, 4, &[b"a"])]));
        let ResponseKind::Fetch(mut r) = response_to_kafka(&message, ApiKey::Fetch, 18, None)
        else {
            panic!()
        };
        let p = &mut r.responses[0].partitions[0];
        let mut records = p.records.take().unwrap().to_vec();
        *records.last_mut().unwrap() ^= 0xff;
        p.records = Some(Bytes::from(records));
        let refused =
            response_from_kafka(ApiKey::Fetch, 18, ResponseKind::Fetch(r), ID).unwrap_err();
        assert!(matches!(refused, WireError::Malformed { .. }), "{refused}");
    }

    #[test]
    fn error_codes_the_quorum_does_not_know_are_wire_errors() {
        let (key, message) = responses().remove(0);
        let ResponseKind::Vote(mut r) = response_to_kafka(&message, key, 2, None) else {
            panic!()
        };
        r.topics[0].partitions[0].error_code = 8; // BROKER_NOT_AVAILABLE
        let refused = response_from_kafka(key, 2, ResponseKind::Vote(r), ID).unwrap_err();
        assert_eq!(refused, WireError::UnhandledErrorCode { api: key, code: 8 });

        for (key, _) in responses() {
            let version = request_version(key);
            let body = response_over_the_wire(key, version, error_response(key, version, 42));
            let refused = response_from_kafka(key, version, body, ID).unwrap_err();
            assert_eq!(
                refused,
                WireError::UnhandledErrorCode { api: key, code: 42 },
                "{key:?}"
            );
        }
    }
}
