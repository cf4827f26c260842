//! The data plane's replication of a partition, sans-IO: what its leader decides from the
//! fetches of its followers ([`leader`]), and what a follower does with its leader's answers
//! ([`follower`]). The broker drives it with the offsets its logs report
//! and the fetches it receives, and carries out what it returns (a new high watermark to
//! publish, an AlterPartition to send to the controller).

pub mod follower;
pub mod leader;

#[cfg(test)]
mod follower_tests;
#[cfg(test)]
mod leader_tests;
