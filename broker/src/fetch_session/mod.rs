//! Fetch sessions (KIP-227): a fetcher that asks one broker for the same partitions again and
//! again names only the partitions whose fetch position changed, and hears only of those whose
//! state changed. [`cache`] is the broker's side (Kafka's `FetchSessionCache` and
//! `FetchManager`), [`client`] the fetcher's (Kafka's `FetchSessionHandler`), which the replica
//! fetchers use. Both are sans-IO: time is the caller's, and nothing here touches a socket.
//!
//! A request's session id and epoch say what it is (Kafka's `FetchMetadata`):
//! - session 0, epoch 0: a full fetch that asks for a new session;
//! - epoch -1: a full fetch without a session, closing the one it names (if any);
//! - session N, epoch E > 0: an incremental fetch in session N, whose epoch must be E. Both
//!   sides advance the epoch by one per request, from `i32::MAX` back to 1. A full fetch that
//!   names a session (epoch 0) closes it and asks for a new one.

pub mod cache;
pub mod client;

#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod client_tests;

use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

/// No session: the id the protocol reserves.
pub const INVALID_SESSION_ID: i32 = 0;
/// The epoch of a full fetch that asks for a session.
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch of a full fetch without a session (closing the one named, if any).
pub const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch`: one more, from `i32::MAX` back to 1 (0 would ask for a new
/// session); -1 stays -1.
pub fn next_epoch(epoch: i32) -> i32 {
    match epoch {
        e if e < 0 => FINAL_EPOCH,
        i32::MAX => 1,
        e => e + 1,
    }
}

/// A topic as a session names it: by id from Fetch v13, by name before.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TopicKey {
    Id(Uuid),
    Name(StrBytes),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    pub topic: TopicKey,
    pub partition: i32,
}

/// What a fetcher asks of one partition: the request's fields, which a session keeps between
/// requests so that an incremental request need not repeat them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchParams {
    pub fetch_offset: i64,
    /// The fetcher's own log start offset (a follower's; -1 from consumers).
    pub log_start_offset: i64,
    pub partition_max_bytes: i32,
    /// -1: not checked.
    pub current_leader_epoch: i32,
    /// The epoch of the fetcher's last record (KIP-320; -1: none or not a follower).
    pub last_fetched_epoch: i32,
}
