//! A member of a group, with what the state machine tracks about it besides what the member
//! sent: its parked requests and its session.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::{Protocol, WaiterId};

/// A member of the group.
#[derive(Debug, Clone)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    pub(super) join_waiter: Option<WaiterId>,
    pub(super) sync_waiter: Option<WaiterId>,
    /// Joined but not yet through a completed JoinGroup phase.
    pub(super) is_new: bool,
    /// When the session (or a new member's join timeout) expires.
    pub(super) heartbeat_deadline_ms: Option<i64>,
}

impl Member {
    pub fn is_awaiting_join(&self) -> bool {
        self.join_waiter.is_some()
    }
    pub fn is_awaiting_sync(&self) -> bool {
        self.sync_waiter.is_some()
    }
    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// Same protocols with the same metadata, in the same order.
    pub(super) fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// The first of this member's protocols (its preference order) among `candidates`.
    pub(super) fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|n| candidates.contains(n))
    }

    /// Members awaiting a join or sync response are covered by the rebalance timeouts, so a
    /// missed heartbeat does not evict them; new members are evicted by their join timeout.
    pub(super) fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.is_awaiting_join() || self.is_awaiting_sync())
    }

    /// Approximate memory held, for the coordinator's budget.
    pub fn bytes(&self) -> usize {
        const OVERHEAD_BYTES: usize = 256;
        OVERHEAD_BYTES
            + self.member_id.len()
            + self.group_instance_id.as_ref().map_or(0, String::len)
            + self.client_id.len()
            + self.client_host.len()
            + self.protocol_type.len()
            + self
                .protocols
                .iter()
                .map(|p| p.name.len() + p.metadata.len() + 32)
                .sum::<usize>()
            + self.assignment.len()
    }
}
