//! The control plane of a Samsa cluster as sans-IO state machines (see `docs/design-notes.md`,
//! "The cluster's state machines live in a crate that cannot do I/O").
//!
//! - [`quorum`]: the KRaft metadata quorum (KIP-595 elections and pull-based replication of
//!   `__cluster_metadata`, KIP-996 pre-vote, KIP-630 snapshots).
//! - [`metadata`]: KRaft's metadata record types and the metadata image every broker serves from.
//! - [`placement`]: where the replicas of new partitions go.
//! - [`partition_change`]: leader and ISR changes of one partition.
//! - [`reassignment`]: moving a partition's replicas (KIP-455).
//! - [`controller`]: the active controller's decisions (registrations, heartbeats, topics,
//!   producer ids, configs, ACLs, SCRAM credentials, features) as records to propose.
//! - [`acl`]: ACL bindings and filters, as the controller, DescribeAcls and the authorizer
//!   match them.
//! - [`replication`]: the data plane's replication of a partition (its leader's high watermark
//!   and ISR changes, its followers' handling of fetch answers).
//!
//! Nothing here reads a clock, opens a socket or a file, or draws randomness from the OS: the
//! caller passes the time in milliseconds and a seed, and executes the actions returned.

pub mod acl;
pub mod controller;
pub mod metadata;
pub mod partition_change;
pub mod placement;
pub mod quorum;
pub mod reassignment;
pub mod replication;

/// A node's `node.id`.
pub type NodeId = i32;
