//! The data plane's replication of a partition, sans-IO: what its leader decides from the
//! fetches of its followers ([`leader`]), what a follower does with its leader's answers
//! ([`follower`]), and which replica a consumer should read from ([`selector`], KIP-392). The
//! broker drives it with the offsets its logs report and the fetches it receives, and carries
//! out what it returns (a new high watermark to publish, an AlterPartition to send to the
//! controller, a preferred read replica to name).

pub mod follower;
pub mod leader;
pub mod selector;

#[cfg(test)]
mod follower_tests;
#[cfg(test)]
mod leader_tests;
