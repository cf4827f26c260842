//! Samsa's broker: the network layer, one handler per Kafka API, and the state they share.
//! The `samsa` binary (src/main.rs) serves it and carries the admin CLI.

pub mod acl;
pub mod alloc_count;
pub mod broker;
pub mod cli;
pub mod cluster_view;
pub mod config;
pub mod controller;
pub mod coordinator_write;
pub mod fetch_session;
pub mod follow;
pub mod group;
pub mod handlers;
pub mod inter_broker;
pub mod internal_topics;
pub mod lifecycle;
pub mod maintenance;
pub mod meta;
pub mod metadata_wait;
pub mod metrics;
pub mod net;
pub mod node;
pub mod partition;
pub mod publisher;
pub mod replication;
pub mod scram;
pub mod security;
pub mod server;
pub mod share;
pub mod start;
#[doc(hidden)]
pub mod testing;
pub mod topics;
pub mod txn;
pub mod upgrade;
pub mod util;
