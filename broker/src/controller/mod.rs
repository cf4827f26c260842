//! The controller's disk side: what executes the KRaft quorum's actions (the sans-IO state
//! machine in `samsa_cluster::quorum`) against the metadata log `__cluster_metadata-0`.
//!
//! - [`store`]: [`MetadataLogStore`], the log, snapshots and quorum state of one node.
//! - [`codec`]: the quorum's `Batch` as a Kafka record batch v2 and back.
//! - [`snapshot`]: KIP-630 `.checkpoint` files (names, layout, header and footer).
//! - [`quorum_state`]: the `quorum-state` file in Kafka's JSON shape.

pub mod active;
pub mod admin_rpcs;
pub mod answers;
pub mod broker_rpcs;
pub mod codec;
mod listener;

pub mod partition_rpcs;
pub mod quorum_state;
pub mod quota_rpcs;
pub mod reassignment_rpcs;
pub mod runtime;
pub mod settings;
pub mod snapshot;
pub mod store;
pub mod topic_rpcs;
pub mod voter_rpcs;
pub mod wire;

pub use quorum_state::QuorumStateFile;
pub use snapshot::Snapshot;
pub use store::{Loaded, MetadataLogConfig, MetadataLogStore, StoreError};
