//! The messages quorum nodes exchange: KRaft's own RPCs (KIP-595 Vote, BeginQuorumEpoch,
//! EndQuorumEpoch and Fetch on `__cluster_metadata`; KIP-630 FetchSnapshot; KIP-996's pre-vote
//! flag), carrying the fields of Kafka's schemas that the protocol uses. The broker's driver
//! maps each one to and from `kafka-protocol`'s structs, so on the wire they are Kafka's.
//!
//! Every request carries an `id` chosen by its sender and every response echoes it (the driver
//! keeps it beside the correlation id): a node acts only on answers to the requests it is
//! still waiting for, so a late, duplicated or reordered answer changes nothing.

use bytes::Bytes;

use super::batch::{Batch, SnapshotId};
use crate::NodeId;

/// Kafka's error codes the quorum answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuorumError {
    /// The request's epoch is older than the receiver's (FENCED_LEADER_EPOCH, 74).
    #[error("the request's leader epoch is older than the quorum's")]
    FencedLeaderEpoch,
    /// The receiver is not the leader (NOT_LEADER_OR_FOLLOWER, 6).
    #[error("this node is not the leader of the metadata quorum")]
    NotLeaderOrFollower,
    /// The request's epoch is newer than the receiver knows (UNKNOWN_LEADER_EPOCH, 76).
    #[error("the request's leader epoch is newer than this node knows")]
    UnknownLeaderEpoch,
    /// The sender or receiver is not a voter where it must be one (INCONSISTENT_VOTER_SET, 86).
    #[error("the node is not a voter of the metadata quorum")]
    InconsistentVoterSet,
    /// The snapshot asked for is not the leader's (SNAPSHOT_NOT_FOUND, 98).
    #[error("the snapshot is not the leader's latest")]
    SnapshotNotFound,
    /// A snapshot position past its end (POSITION_OUT_OF_RANGE, 99).
    #[error("the snapshot position is past its end")]
    PositionOutOfRange,
}

impl QuorumError {
    /// The Kafka error code.
    pub fn code(self) -> i16 {
        match self {
            QuorumError::FencedLeaderEpoch => 74,
            QuorumError::NotLeaderOrFollower => 6,
            QuorumError::UnknownLeaderEpoch => 76,
            QuorumError::InconsistentVoterSet => 86,
            QuorumError::SnapshotNotFound => 98,
            QuorumError::PositionOutOfRange => 99,
        }
    }

    pub fn from_code(code: i16) -> Option<QuorumError> {
        [
            QuorumError::FencedLeaderEpoch,
            QuorumError::NotLeaderOrFollower,
            QuorumError::UnknownLeaderEpoch,
            QuorumError::InconsistentVoterSet,
            QuorumError::SnapshotNotFound,
            QuorumError::PositionOutOfRange,
        ]
        .into_iter()
        .find(|e| e.code() == code)
    }
}

/// VoteRequest (KIP-595; `pre_vote` from KIP-996, where `epoch` is the epoch the sender would
/// stand in and nobody changes state for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteRequest {
    pub id: u64,
    pub epoch: i32,
    pub candidate_id: NodeId,
    pub last_offset_epoch: i32,
    /// The candidate's log end offset.
    pub last_offset: i64,
    pub pre_vote: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteResponse {
    pub id: u64,
    pub error: Option<QuorumError>,
    /// The responder's epoch and the leader it knows in it.
    pub epoch: i32,
    pub leader_id: Option<NodeId>,
    pub granted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeginQuorumEpochRequest {
    pub id: u64,
    pub epoch: i32,
    pub leader_id: NodeId,
}

/// The answer to BeginQuorumEpoch and EndQuorumEpoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochResponse {
    pub id: u64,
    pub error: Option<QuorumError>,
    pub epoch: i32,
    pub leader_id: Option<NodeId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndQuorumEpochRequest {
    pub id: u64,
    pub epoch: i32,
    pub leader_id: NodeId,
    /// Voters in the order they should stand (most caught up first).
    pub preferred_successors: Vec<NodeId>,
}

/// Fetch on `__cluster_metadata` by a voter or an observer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub id: u64,
    pub replica_id: NodeId,
    /// The leader epoch the fetcher believes in (`current_leader_epoch`).
    pub epoch: i32,
    pub fetch_offset: i64,
    pub last_fetched_epoch: i32,
    /// The high watermark the fetcher knows: a leader with a higher one answers at once
    /// rather than waiting for new records (the purpose of KIP-1166's field).
    pub high_watermark: Option<i64>,
    pub max_wait_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    pub id: u64,
    pub error: Option<QuorumError>,
    pub epoch: i32,
    pub leader_id: Option<NodeId>,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// Set when the fetch position is not on the leader's log: the largest epoch at or below
    /// the fetcher's last fetched epoch and where it ends (KIP-595, as KIP-320 for partitions).
    pub diverging_epoch: Option<(i32, i64)>,
    /// Set when the fetch position is below the leader's log start: fetch this snapshot.
    pub snapshot_id: Option<SnapshotId>,
    pub batches: Vec<Batch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchSnapshotRequest {
    pub id: u64,
    pub replica_id: NodeId,
    pub epoch: i32,
    pub snapshot_id: SnapshotId,
    pub position: u64,
    pub max_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchSnapshotResponse {
    pub id: u64,
    pub error: Option<QuorumError>,
    pub epoch: i32,
    pub leader_id: Option<NodeId>,
    pub snapshot_id: SnapshotId,
    /// The snapshot's whole size and where this chunk starts.
    pub size: u64,
    pub position: u64,
    pub chunk: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Vote(VoteRequest),
    VoteResponse(VoteResponse),
    BeginQuorumEpoch(BeginQuorumEpochRequest),
    BeginQuorumEpochResponse(EpochResponse),
    EndQuorumEpoch(EndQuorumEpochRequest),
    EndQuorumEpochResponse(EpochResponse),
    Fetch(FetchRequest),
    FetchResponse(FetchResponse),
    FetchSnapshot(FetchSnapshotRequest),
    FetchSnapshotResponse(FetchSnapshotResponse),
}

impl Message {
    /// Kafka's name of the RPC, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Vote(_) => "Vote",
            Message::VoteResponse(_) => "VoteResponse",
            Message::BeginQuorumEpoch(_) => "BeginQuorumEpoch",
            Message::BeginQuorumEpochResponse(_) => "BeginQuorumEpochResponse",
            Message::EndQuorumEpoch(_) => "EndQuorumEpoch",
            Message::EndQuorumEpochResponse(_) => "EndQuorumEpochResponse",
            Message::Fetch(_) => "Fetch",
            Message::FetchResponse(_) => "FetchResponse",
            Message::FetchSnapshot(_) => "FetchSnapshot",
            Message::FetchSnapshotResponse(_) => "FetchSnapshotResponse",
        }
    }
}
