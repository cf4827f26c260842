//! One partition as its leader sees it: Kafka's `Partition` on the leader, sans-IO. The leader
//! learns each follower's log end offset from the offsets it fetches at (a follower fetching
//! at offset N has every record below N), derives the high watermark from the in-sync
//! replicas, and asks the controller to shrink or expand the ISR (AlterPartition) with
//! KIP-497's rules: one change in flight at a time, and while it is, the high watermark waits
//! for the larger of the old and new ISR ("maximal ISR"), so that neither a shrink nor an
//! expansion can let it pass a record some in-sync replica lacks.
//!
//! Rules, each from Kafka's `Partition` / `Replica`:
//! - A follower is caught up at a fetch if it fetched at the leader's log end offset, or at
//!   least at the leader's log end offset of its previous fetch (then it was caught up at that
//!   previous fetch's time). It falls out of the ISR once it has not been caught up for
//!   `replica.lag.time.max.ms` (and its log end offset differs from the leader's).
//! - A follower joins the ISR once its log end offset reaches the high watermark and the start
//!   of the current leader epoch (it holds every committed record and this leader's history).
//! - The high watermark is the smallest log end offset over the maximal ISR; it never moves
//!   back and never passes the leader's own log end offset. In Samsa's durable mode the leader
//!   counts only what it has fsynced of its own log ([`LeaderPartition::on_append`]'s
//!   `local_end`), while its followers are measured against its whole log: a follower may hold
//!   records the leader has not fsynced yet, and they count as soon as the leader has.
//! - An ISR change leaves the flight only through a new partition state from the controller,
//!   or a refusal that says it was not made (Kafka's `handleAlterPartitionError`): an answer
//!   that leaves it open (no answer in time, INVALID_UPDATE_VERSION after a retry...) may hide
//!   a commit, so the change stays in flight and is sent again.
//! - acks=all: a write is refused (NOT_ENOUGH_REPLICAS) when the committed ISR is smaller than
//!   `min.insync.replicas`, and acknowledged once the high watermark passes it, unless the ISR
//!   shrank below `min.insync.replicas` meanwhile (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
//!
//! Time is the caller's (`now_ms`); nothing here reads a clock.

use std::collections::BTreeMap;

use crate::NodeId;

/// What the leader knows of one follower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The offset after the last record the follower has (its latest fetch offset), or -1
    /// before its first fetch in this leader epoch.
    pub log_end_offset: i64,
    /// The follower's own log start offset, as its latest fetch said (-1: not known).
    pub log_start_offset: i64,
    /// When the follower was last known to be caught up with this leader (0: never).
    pub last_caught_up_ms: u64,
    pub last_fetch_ms: u64,
    /// The leader's log end offset when the follower last fetched.
    pub last_fetch_leader_log_end_offset: i64,
    /// The broker epoch its last fetch named (Fetch v15's `replica_state`, KIP-903), or -1:
    /// an ISR change names each member with the epoch of the incarnation whose fetches made it
    /// a member, and the controller refuses one that has registered again since.
    pub broker_epoch: i64,
}

impl FollowerState {
    fn new() -> FollowerState {
        FollowerState {
            log_end_offset: -1,
            log_start_offset: -1,
            last_caught_up_ms: 0,
            last_fetch_ms: 0,
            last_fetch_leader_log_end_offset: -1,
            broker_epoch: -1,
        }
    }
}

/// The ISR as the leader holds it: committed, or with one change asked of the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrState {
    Committed(Vec<NodeId>),
    /// AlterPartition sent to grow (or shrink) the committed `isr` to `proposed`.
    Pending {
        isr: Vec<NodeId>,
        proposed: Vec<NodeId>,
    },
}

impl IsrState {
    /// The ISR the controller has committed.
    pub fn committed(&self) -> &[NodeId] {
        match self {
            IsrState::Committed(isr) | IsrState::Pending { isr, .. } => isr,
        }
    }

    /// KIP-497's maximal ISR: the committed ISR together with a proposed one in flight.
    pub fn maximal(&self) -> Vec<NodeId> {
        match self {
            IsrState::Committed(isr) => isr.clone(),
            IsrState::Pending { isr, proposed } => {
                let mut all = isr.clone();
                for r in proposed {
                    if !all.contains(r) {
                        all.push(*r);
                    }
                }
                all
            }
        }
    }

    pub fn is_pending(&self) -> bool {
        matches!(self, IsrState::Pending { .. })
    }
}

/// An ISR change for the controller (AlterPartition of this one partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterIsr {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<NodeId>,
}

/// Who sent a follower's fetch, as the leader's metadata sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedBy {
    /// The broker epoch the fetch names (-1: none, before Fetch v15).
    pub broker_epoch: i64,
    /// Whether that broker may join the ISR: registered (at that epoch, when one is named),
    /// unfenced, not shutting down.
    pub isr_eligible: bool,
}

impl FetchedBy {
    pub fn eligible(broker_epoch: i64) -> FetchedBy {
        FetchedBy {
            broker_epoch,
            isr_eligible: true,
        }
    }
}

/// How an ISR change asked of the controller ended without being committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterIsrFailure {
    /// The controller did not make the change, and no attempt of it was ever made: it answered
    /// OPERATION_NOT_ATTEMPTED or INELIGIBLE_REPLICA, which it checks after the partition epoch,
    /// so the request's epoch was the current one (an earlier attempt would have bumped it). Also
    /// a request never sent.
    Refused,
    /// Whether this or an earlier attempt was committed is not known: no answer in time, or
    /// another error (INVALID_UPDATE_VERSION after a retry that the controller had already
    /// committed, NOT_CONTROLLER, FENCED_LEADER_EPOCH, STALE_BROKER_EPOCH...).
    Unknown,
}

impl AlterIsrFailure {
    /// The failure an AlterPartition error code means.
    pub fn from_error_code(code: i16) -> AlterIsrFailure {
        use kafka_protocol::ResponseError;
        if code == ResponseError::OperationNotAttempted.code()
            || code == ResponseError::IneligibleReplica.code()
        {
            AlterIsrFailure::Refused
        } else {
            AlterIsrFailure::Unknown
        }
    }
}

/// Why a follower's fetch is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowerFetchError {
    /// The fetching broker is not a replica of this partition (Kafka: NOT_LEADER_OR_FOLLOWER
    /// to a follower that is not one).
    NotAReplica,
}

/// The outcome of an acks=all wait at some moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcksAll {
    /// The high watermark has not passed the write yet.
    Waiting,
    Done,
    /// Replicated, but the ISR is below `min.insync.replicas` now.
    NotEnoughReplicasAfterAppend,
}

/// Settings of the leader side (Kafka's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderConfig {
    /// `replica.lag.time.max.ms` (30000).
    pub replica_lag_time_max_ms: u64,
}

/// One partition led by this broker.
#[derive(Debug, Clone)]
pub struct LeaderPartition {
    node: NodeId,
    config: LeaderConfig,
    replicas: Vec<NodeId>,
    leader_epoch: i32,
    partition_epoch: i32,
    /// The first offset written in this leader epoch.
    leader_epoch_start_offset: i64,
    isr: IsrState,
    /// The ISR change in flight met an unknown fate: the next tick sends it again.
    resend_isr_change: bool,
    followers: BTreeMap<NodeId, FollowerState>,
    log_end_offset: i64,
    /// What of its own log the leader counts toward the high watermark (at most
    /// `log_end_offset`).
    local_end: i64,
    high_watermark: i64,
}

impl LeaderPartition {
    /// Becoming leader at `leader_epoch` (Kafka's `makeLeader`): the log holds records up to
    /// `log_end_offset` (exclusive), all of which count toward the high watermark until
    /// [`LeaderPartition::on_append`] says otherwise, and `high_watermark` is the last one
    /// known. Followers are
    /// assumed caught up as of now, so that none is dropped from the ISR before it had a chance
    /// to fetch from this leader.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        node: NodeId,
        config: LeaderConfig,
        replicas: Vec<NodeId>,
        isr: Vec<NodeId>,
        leader_epoch: i32,
        partition_epoch: i32,
        log_end_offset: i64,
        high_watermark: i64,
        now_ms: u64,
    ) -> LeaderPartition {
        assert!(isr.contains(&node), "leader {node} outside its ISR {isr:?}");
        assert!(high_watermark <= log_end_offset);
        let followers = replicas
            .iter()
            .filter(|&&r| r != node)
            .map(|&r| {
                let mut f = FollowerState::new();
                if isr.contains(&r) {
                    f.last_caught_up_ms = now_ms;
                }
                (r, f)
            })
            .collect();
        let mut p = LeaderPartition {
            node,
            config,
            replicas,
            leader_epoch,
            partition_epoch,
            leader_epoch_start_offset: log_end_offset,
            isr: IsrState::Committed(isr),
            resend_isr_change: false,
            followers,
            log_end_offset,
            local_end: log_end_offset,
            high_watermark,
        };
        p.maybe_advance_high_watermark();
        p
    }

    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }
    /// What of its own log the leader counts toward the high watermark.
    pub fn local_end(&self) -> i64 {
        self.local_end
    }
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }
    pub fn partition_epoch(&self) -> i32 {
        self.partition_epoch
    }
    pub fn isr(&self) -> &IsrState {
        &self.isr
    }
    pub fn follower(&self, replica: NodeId) -> Option<&FollowerState> {
        self.followers.get(&replica)
    }
    pub fn replicas(&self) -> &[NodeId] {
        &self.replicas
    }

    /// The followers a consumer fetching at `fetch_offset` may be sent to instead of this
    /// leader (KIP-392), with how long since each was caught up: members of the committed ISR
    /// whose log holds that offset, as their last fetches said (Kafka's
    /// `findPreferredReadReplica`). One that has not fetched in this leader epoch is not known
    /// to hold anything.
    pub fn read_replica_candidates(
        &self,
        fetch_offset: i64,
        now_ms: u64,
    ) -> impl Iterator<Item = (NodeId, &FollowerState, u64)> + '_ {
        let isr = self.isr.committed();
        self.followers
            .iter()
            .filter(move |(r, f)| {
                isr.contains(r)
                    && f.log_end_offset >= fetch_offset
                    && f.log_start_offset <= fetch_offset
            })
            .map(move |(&r, f)| (r, f, now_ms.saturating_sub(f.last_caught_up_ms)))
    }

    /// The leader appended, or fsynced: its log now ends at `log_end_offset`, and everything
    /// below `local_end` counts toward the high watermark as the leader's own (its log end, or
    /// in durable mode what it has fsynced). Returns the high watermark if it moved (with an
    /// ISR of the leader alone it follows `local_end`).
    pub fn on_append(&mut self, log_end_offset: i64, local_end: i64) -> Option<i64> {
        assert!(
            log_end_offset >= self.log_end_offset,
            "log end offset {} -> {log_end_offset}",
            self.log_end_offset
        );
        assert!(
            local_end <= log_end_offset,
            "local end {local_end} past the log end offset {log_end_offset}"
        );
        self.log_end_offset = log_end_offset;
        self.local_end = self.local_end.max(local_end);
        self.maybe_advance_high_watermark()
    }

    /// Whether a write may be appended with acks=all (`min_insync_replicas` from the topic):
    /// the committed ISR must be at least that large.
    pub fn enough_replicas(&self, min_insync_replicas: usize) -> bool {
        self.isr.committed().len() >= min_insync_replicas
    }

    /// Where an acks=all write that ends at `end_offset` (exclusive) stands.
    pub fn acks_all(&self, end_offset: i64, min_insync_replicas: usize) -> AcksAll {
        if self.high_watermark < end_offset {
            AcksAll::Waiting
        } else if self.isr.committed().len() < min_insync_replicas {
            AcksAll::NotEnoughReplicasAfterAppend
        } else {
            AcksAll::Done
        }
    }

    /// A follower fetched at `fetch_offset` at `now_ms`. Returns the high watermark if it moved,
    /// and an ISR expansion to ask the controller for, if the follower may join now.
    pub fn on_follower_fetch(
        &mut self,
        replica: NodeId,
        fetch_offset: i64,
        now_ms: u64,
    ) -> Result<(Option<i64>, Option<AlterIsr>), FollowerFetchError> {
        self.on_follower_fetch_of(replica, fetch_offset, -1, now_ms, FetchedBy::eligible(-1))
    }

    /// [`Self::on_follower_fetch`] of a follower that may join the ISR only if `by` is
    /// eligible: as far as the leader's metadata says, its broker is registered (at the epoch
    /// the fetch names, KIP-903), unfenced and not shutting down (KIP-841). The controller would
    /// refuse an expansion to any other (INELIGIBLE_REPLICA), and asking at every fetch of such
    /// a follower would only load it. `log_start_offset` is the follower's own (-1: not known).
    pub fn on_follower_fetch_of(
        &mut self,
        replica: NodeId,
        fetch_offset: i64,
        log_start_offset: i64,
        now_ms: u64,
        by: FetchedBy,
    ) -> Result<(Option<i64>, Option<AlterIsr>), FollowerFetchError> {
        let leader_end = self.log_end_offset;
        let f = self
            .followers
            .get_mut(&replica)
            .ok_or(FollowerFetchError::NotAReplica)?;
        // Kafka's `Replica.updateFetchStateOrThrow`.
        if fetch_offset >= leader_end {
            f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_log_end_offset {
            f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
        }
        f.log_end_offset = fetch_offset.min(leader_end);
        f.log_start_offset = log_start_offset;
        f.last_fetch_leader_log_end_offset = leader_end;
        f.last_fetch_ms = now_ms;
        f.broker_epoch = by.broker_epoch;
        let hw = self.maybe_advance_high_watermark();
        let expand = if by.isr_eligible {
            self.maybe_expand(replica)
        } else {
            None
        };
        Ok((hw, expand))
    }

    /// Periodic check (Kafka's `maybeShrinkIsr`, every `replica.lag.time.max.ms / 2`): an ISR
    /// shrink to ask the controller for, if a follower fell behind; or the change in flight
    /// again, when the controller's answer to it left open whether it was made.
    pub fn tick(&mut self, now_ms: u64) -> Option<AlterIsr> {
        if let IsrState::Pending { proposed, .. } = &self.isr {
            if !std::mem::take(&mut self.resend_isr_change) {
                return None;
            }
            return Some(AlterIsr {
                leader_epoch: self.leader_epoch,
                partition_epoch: self.partition_epoch,
                new_isr: proposed.clone(),
            });
        }
        let isr = self.isr.committed().to_vec();
        let out_of_sync: Vec<NodeId> = isr
            .iter()
            .copied()
            .filter(|&r| r != self.node && !self.is_caught_up(r, now_ms))
            .collect();
        if out_of_sync.is_empty() {
            return None;
        }
        let proposed: Vec<NodeId> = isr
            .iter()
            .copied()
            .filter(|r| !out_of_sync.contains(r))
            .collect();
        debug_assert!(proposed.contains(&self.node));
        Some(self.propose(isr, proposed))
    }

    /// The controller committed a change of this partition (the image's registration): the
    /// committed ISR and epochs are now these. Returns the high watermark if it moved. A
    /// registration whose leader epoch is not this one's is not for this leader (the caller
    /// makes a new [`LeaderPartition`] or a follower).
    ///
    /// Every change the controller commits bumps the partition epoch, so a registration at the
    /// partition epoch this leader has is one it has seen already (the broker applies each
    /// partition of a topic again whenever anything of the topic changes). It must not replace
    /// an ISR change in flight with the committed ISR: the controller may commit the change,
    /// and the high watermark would meanwhile pass the log end of a replica joining the ISR.
    pub fn on_partition_change(
        &mut self,
        replicas: Vec<NodeId>,
        isr: Vec<NodeId>,
        leader_epoch: i32,
        partition_epoch: i32,
    ) -> Option<i64> {
        assert_eq!(leader_epoch, self.leader_epoch, "another leadership");
        if partition_epoch <= self.partition_epoch {
            return None; // a state already seen, or an older one
        }
        for &r in &replicas {
            if r != self.node {
                self.followers.entry(r).or_insert_with(FollowerState::new);
            }
        }
        self.followers.retain(|r, _| replicas.contains(r));
        self.replicas = replicas;
        self.partition_epoch = partition_epoch;
        self.isr = IsrState::Committed(isr);
        self.resend_isr_change = false;
        self.maybe_advance_high_watermark()
    }

    /// The controller did not commit the ISR change `alter` (Kafka's
    /// `handleAlterPartitionError`). Refused: back to the committed ISR, and the next fetch or
    /// tick proposes again if still needed. Unknown: the change stays in flight, since the
    /// controller may have committed it or may yet (a request it took before a failover, an
    /// answer lost): going back would let the high watermark pass the log end of a replica that
    /// joins the ISR after all. The next tick sends it again; a new partition state from the
    /// controller settles it. An answer about another change than the one in flight (an older
    /// one of this leadership, answered late) changes nothing.
    pub fn on_alter_isr_failed(&mut self, alter: &AlterIsr, failure: AlterIsrFailure) {
        let IsrState::Pending { isr, proposed } = &self.isr else {
            return;
        };
        if alter.leader_epoch != self.leader_epoch
            || alter.partition_epoch != self.partition_epoch
            || *proposed != alter.new_isr
        {
            return;
        }
        match failure {
            AlterIsrFailure::Refused => self.isr = IsrState::Committed(isr.clone()),
            AlterIsrFailure::Unknown => self.resend_isr_change = true,
        }
    }

    fn propose(&mut self, isr: Vec<NodeId>, proposed: Vec<NodeId>) -> AlterIsr {
        self.resend_isr_change = false;
        self.isr = IsrState::Pending {
            isr,
            proposed: proposed.clone(),
        };
        AlterIsr {
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr: proposed,
        }
    }

    fn is_caught_up(&self, replica: NodeId, now_ms: u64) -> bool {
        match self.followers.get(&replica) {
            None => false,
            Some(f) => {
                f.log_end_offset == self.log_end_offset
                    || f.last_caught_up_ms + self.config.replica_lag_time_max_ms >= now_ms
            }
        }
    }

    /// Kafka's `needsExpandIsr` and `isFollowerInSync`.
    fn maybe_expand(&mut self, replica: NodeId) -> Option<AlterIsr> {
        if self.isr.is_pending() || self.isr.committed().contains(&replica) {
            return None;
        }
        let f = self.followers.get(&replica)?;
        if f.log_end_offset < self.high_watermark
            || f.log_end_offset < self.leader_epoch_start_offset
        {
            return None;
        }
        let isr = self.isr.committed().to_vec();
        let mut proposed = isr.clone();
        proposed.push(replica);
        Some(self.propose(isr, proposed))
    }

    /// Kafka's `maybeIncrementLeaderHW`.
    fn maybe_advance_high_watermark(&mut self) -> Option<i64> {
        let mut hw = self.local_end;
        for r in self.isr.maximal() {
            if r == self.node {
                continue;
            }
            let leo = self.followers.get(&r).map_or(-1, |f| f.log_end_offset);
            hw = hw.min(leo);
        }
        if hw > self.high_watermark {
            self.high_watermark = hw;
            Some(hw)
        } else {
            None
        }
    }
}
