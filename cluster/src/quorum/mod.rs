//! The KRaft metadata quorum: Kafka's Raft for `__cluster_metadata` (KIP-595, KIP-630,
//! KIP-996), as a sans-IO state machine ([`Quorum`]) with the messages it exchanges and the
//! in-memory view of its log. The broker's driver moves the [`Message`]s as Kafka's RPCs and
//! executes the [`Action`]s against the log on disk; `cluster/tests/quorum_simulation.rs`
//! runs whole clusters of it over a lossy simulated network with crashes, seed by seed.

mod batch;
mod log;
mod messages;
mod node;
mod voters;

pub use batch::{Batch, ControlType, Record, SnapshotId};
pub use messages::*;
pub use node::{
    Action, Durable, PersistedState, ProposeError, Quorum, QuorumConfig, QuorumDescription,
    ReplicaState, Role, VoterChangeError, OBSERVER_SESSION_MS, RECORDS_PER_BATCH_MAX,
};
pub use voters::{
    decode_voters, encode_kraft_version, encode_voters, voters_record, voters_records,
    VoterEndpoint, VoterNode, VoterSet,
};

/// The name and only partition of the metadata log, as Kafka names them.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
pub const METADATA_PARTITION: i32 = 0;
