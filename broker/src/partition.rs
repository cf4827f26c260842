//! A partition as the broker serves it: the storage log behind a short lock, the offsets
//! readers need without taking that lock, and the wake-up for long-polling fetches.
//!
//! Invariants: `log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset`;
//! the cached offsets only move forward except through truncation or DeleteRecords, both done
//! under the log lock. The last stable offset is recomputed whenever the high watermark or
//! the log moves (an append may open or close a transaction).
//!
//! Replication: as the partition's leader, the broker keeps the leader's replication state
//! ([`LeaderPartition`]): the high watermark is the smallest log end offset of the in-sync
//! replicas (with no follower, the leader's own, as a single node has it), learnt from the
//! followers' fetches. As a follower, the high watermark is what its leader last reported,
//! capped at its own log end; it bounds what consumers read here too (KIP-392's fetch from
//! follower reads with [`Partition::read`], as on the leader). Locks: the log's, then the
//! replication state's, never the other way round.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use samsa_cluster::replication::leader::{
    AcksAll, AlterIsr, AlterIsrFailure, FetchedBy, FollowerFetchError, LeaderConfig,
    LeaderPartition,
};
use samsa_cluster::replication::selector::{ReplicaSelector, ReplicaView};
use samsa_storage::{
    AbortedTxn, AppendInfo, AppendOrigin, EndTxnMarker, GroupCommit, Log, LogConfig, LogError,
    LogSlice, ProducerStateEntry, TopicPartition,
};
use tokio::sync::Notify;
use uuid::Uuid;

pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: Uuid,
    log: Mutex<Log>,
    /// Woken after every append that moves the high watermark.
    data_arrived: Notify,
    log_end_offset: AtomicI64,
    log_start_offset: AtomicI64,
    high_watermark: AtomicI64,
    /// What read_committed readers may see (Kafka's last stable offset).
    last_stable_offset: AtomicI64,
    leader_epoch: AtomicI32,
    /// Whether this node leads the partition (the metadata image's `leader` is this node).
    /// Topics this node alone knows (internal topics, topics from before the metadata log)
    /// are always led here.
    leader: std::sync::atomic::AtomicBool,
    /// Whether the metadata image places a replica of the partition on this broker (false
    /// once it was moved away, [`Partition::resign`]): only then may it serve consumers as a
    /// follower (KIP-392).
    assigned: std::sync::atomic::AtomicBool,
    durable: std::sync::atomic::AtomicBool,
    replica: Mutex<Replica>,
}

/// This broker's part in the partition's replication.
#[derive(Debug)]
pub enum Replica {
    /// The leader, with its followers' state (`replicas` of one: a single node's partition).
    Leader(LeaderPartition),
    /// A follower of `leader`; `high_watermark` is what the leader last reported.
    Follower { leader: i32, high_watermark: i64 },
}

/// `replica.lag.time.max.ms` until the broker's configuration says otherwise.
const REPLICA_LAG_TIME_MAX_MS: u64 = 30_000;

/// A partition's leadership as the metadata image has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    /// The leader, -1 for none.
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

/// What [`Partition::apply_leadership`] changed for the replica fetchers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Unchanged,
    /// Follow `leader` from now on, at `leader_epoch`.
    Follow {
        leader: i32,
        leader_epoch: i32,
    },
    /// No longer follow anyone (this broker leads, or the partition has no leader).
    StoppedFollowing,
}

/// What a read found: the batches plus the offsets a fetch response reports beside them.
pub struct ReadResult {
    pub slice: LogSlice,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

/// A durable append's fsync, to await before answering (None when not in durable mode).
pub type SyncWait = Option<tokio::sync::oneshot::Receiver<Result<(), LogError>>>;

impl Partition {
    pub fn new(tp: TopicPartition, topic_id: Uuid, log: Log, leader_epoch: i32) -> Partition {
        let durable = log.config().durable;
        let local_end = if durable {
            log.flushed_offset()
        } else {
            log.log_end_offset()
        };
        let p = Partition {
            tp,
            topic_id,
            log_end_offset: AtomicI64::new(log.log_end_offset()),
            log_start_offset: AtomicI64::new(log.log_start_offset()),
            high_watermark: AtomicI64::new(0),
            last_stable_offset: AtomicI64::new(0),
            leader_epoch: AtomicI32::new(leader_epoch),
            leader: true.into(),
            assigned: true.into(),
            durable: durable.into(),
            data_arrived: Notify::new(),
            // Until the metadata image says otherwise, the only replica (a node's own topics).
            replica: Mutex::new(Replica::Leader(LeaderPartition::new(
                0,
                LeaderConfig {
                    replica_lag_time_max_ms: REPLICA_LAG_TIME_MAX_MS,
                },
                vec![0],
                vec![0],
                leader_epoch,
                0,
                local_end,
                0,
                0,
            ))),
            log: Mutex::new(log),
        };
        // A single node's high watermark is its log end: everything written is "replicated".
        // In durable mode it is what is on disk.
        let mut log = p.log.lock();
        p.refresh(&mut log);
        drop(log);
        p
    }

    /// A replica of a partition of the metadata image, before [`Partition::apply_leadership`]
    /// gives it its role: it neither leads nor follows, and its high watermark is the one
    /// checkpointed (a follower's log may hold records above it that were never committed, and
    /// a new leader must not show them before its followers have them).
    pub fn new_replica(
        tp: TopicPartition,
        topic_id: Uuid,
        log: Log,
        leader_epoch: i32,
    ) -> Partition {
        let hw = log.high_watermark();
        let p = Partition::new(tp, topic_id, log, leader_epoch);
        let mut log = p.log.lock();
        *p.replica.lock() = Replica::Follower {
            leader: -1,
            high_watermark: hw,
        };
        p.leader.store(false, Ordering::Release);
        p.refresh(&mut log);
        drop(log);
        p
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset.load(Ordering::Acquire)
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset.load(Ordering::Acquire)
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }
    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::Acquire)
    }
    /// Whether this broker hosts one of the partition's replicas, leader or follower.
    pub fn is_replica(&self) -> bool {
        self.assigned.load(Ordering::Acquire)
    }

    /// Takes the role the metadata image gives broker `me` (Kafka's `makeLeader` and
    /// `makeFollower`): leader of a new epoch (its followers' state starts afresh and the epoch
    /// starts at the log end), the same leader with a committed ISR change, or a follower of
    /// `leader` (-1: none). Returns whether the broker now follows another one at a new epoch
    /// (its fetcher must start or restart), or stopped following.
    pub fn apply_leadership(
        &self,
        me: i32,
        role: &Leadership,
        replica_lag_time_max_ms: u64,
        now_ms: u64,
    ) -> Result<Transition, LogError> {
        let mut log = self.log.lock();
        let current_epoch = self.leader_epoch();
        if role.leader_epoch < current_epoch {
            return Ok(Transition::Unchanged); // an older image than one already applied
        }
        let mut replica = self.replica.lock();
        let transition = if role.leader == me {
            match &mut *replica {
                Replica::Leader(l)
                    if l.leader_epoch() == role.leader_epoch && l.replicas().contains(&me) =>
                {
                    l.on_partition_change(
                        role.replicas.clone(),
                        role.isr.clone(),
                        role.leader_epoch,
                        role.partition_epoch,
                    );
                    Transition::Unchanged
                }
                was => {
                    let following = matches!(was, Replica::Follower { .. });
                    let local_end = if self.durable.load(Ordering::Relaxed) {
                        log.flushed_offset()
                    } else {
                        log.log_end_offset()
                    };
                    let log_end = log.log_end_offset();
                    log.assign_leader_epoch(role.leader_epoch, log_end)?;
                    *was = Replica::Leader(LeaderPartition::new(
                        me,
                        LeaderConfig {
                            replica_lag_time_max_ms,
                        },
                        role.replicas.clone(),
                        role.isr.clone(),
                        role.leader_epoch,
                        role.partition_epoch,
                        local_end,
                        self.high_watermark().min(local_end),
                        now_ms,
                    ));
                    if following {
                        Transition::StoppedFollowing
                    } else {
                        Transition::Unchanged
                    }
                }
            }
        } else {
            match &*replica {
                Replica::Follower { leader, .. }
                    if *leader == role.leader && current_epoch == role.leader_epoch =>
                {
                    Transition::Unchanged
                }
                _ => {
                    *replica = Replica::Follower {
                        leader: role.leader,
                        high_watermark: self.high_watermark(),
                    };
                    if role.leader >= 0 {
                        Transition::Follow {
                            leader: role.leader,
                            leader_epoch: role.leader_epoch,
                        }
                    } else {
                        Transition::StoppedFollowing
                    }
                }
            }
        };
        self.leader_epoch
            .store(role.leader_epoch.max(current_epoch), Ordering::Release);
        self.leader.store(role.leader == me, Ordering::Release);
        self.assigned.store(true, Ordering::Release);
        drop(replica);
        let local_end = if self.durable.load(Ordering::Relaxed) {
            log.flushed_offset()
        } else {
            log.log_end_offset()
        };
        self.leader_progress(&mut log, local_end);
        drop(log);
        self.data_arrived.notify_waiters();
        Ok(transition)
    }

    /// A follower of this leader fetched at `fetch_offset` (it holds every record below it;
    /// its own log starts at `log_start_offset`): the high watermark may move (waiting readers
    /// and acks=all writes wake), and an ISR change may be due, for the caller to send to the
    /// controller. `by`: the follower's broker epoch and whether it may join the ISR
    /// (registered, unfenced, not shutting down).
    pub fn on_follower_fetch(
        &self,
        replica: i32,
        fetch_offset: i64,
        log_start_offset: i64,
        now_ms: u64,
        by: FetchedBy,
    ) -> Result<Option<AlterIsr>, FollowerFetchError> {
        let mut log = self.log.lock();
        let mut state = self.replica.lock();
        let Replica::Leader(l) = &mut *state else {
            return Err(FollowerFetchError::NotAReplica);
        };
        let (moved, alter) =
            l.on_follower_fetch_of(replica, fetch_offset, log_start_offset, now_ms, by)?;
        drop(state);
        if let Some(hw) = moved {
            self.store_high_watermark(&mut log, hw);
            drop(log);
            self.data_arrived.notify_waiters();
        }
        Ok(alter)
    }

    /// The replica a consumer in `client_rack`, fetching at `fetch_offset`, should read from
    /// instead of this leader (KIP-392): `selector`'s pick among the in-sync followers that
    /// hold that offset. `None` for this leader itself, and when this broker does not lead.
    /// `me` is this broker; `rack_of` gives a broker's rack if it is live.
    pub fn preferred_read_replica<'r>(
        &self,
        selector: &ReplicaSelector,
        me: i32,
        client_rack: &str,
        fetch_offset: i64,
        now_ms: u64,
        rack_of: impl Fn(i32) -> Option<&'r str>,
    ) -> Option<i32> {
        let state = self.replica.lock();
        let Replica::Leader(l) = &*state else {
            return None;
        };
        let candidates: Vec<ReplicaView<'r>> = l
            .read_replica_candidates(fetch_offset, now_ms)
            .map(|(id, f, since_ms)| ReplicaView {
                id,
                rack: rack_of(id),
                log_end_offset: f.log_end_offset,
                time_since_caught_up_ms: since_ms,
            })
            .collect();
        let leader = ReplicaView {
            id: me,
            rack: rack_of(me),
            log_end_offset: l.log_end_offset(),
            time_since_caught_up_ms: 0,
        };
        let chosen = selector.select(client_rack, &leader, &candidates);
        // Only an in-sync follower, never this leader, is named.
        assert!(
            chosen.is_none_or(|c| c != me && l.isr().committed().contains(&c)),
            "preferred read replica {chosen:?} of {} is not an in-sync follower",
            self.tp
        );
        chosen
    }

    /// The periodic ISR check of a leader: a shrink to send to the controller, if a follower
    /// fell behind for `replica.lag.time.max.ms`, or the change in flight again when the
    /// controller's answer left open whether it was made.
    pub fn check_isr(&self, now_ms: u64) -> Option<AlterIsr> {
        let _log = self.log.lock();
        match &mut *self.replica.lock() {
            Replica::Leader(l) => l.tick(now_ms),
            Replica::Follower { .. } => None,
        }
    }

    /// The controller did not commit the ISR change `alter` (see
    /// [`LeaderPartition::on_alter_isr_failed`]: only a sure refusal goes back to the committed
    /// ISR).
    pub fn alter_isr_failed(&self, alter: &AlterIsr, failure: AlterIsrFailure) {
        let _log = self.log.lock();
        if let Replica::Leader(l) = &mut *self.replica.lock() {
            l.on_alter_isr_failed(alter, failure);
        }
    }

    /// Whether a write with acks=all may be appended: the ISR has at least
    /// `min_insync_replicas` members (NOT_ENOUGH_REPLICAS otherwise).
    pub fn enough_replicas(&self, min_insync_replicas: usize) -> bool {
        match &*self.replica.lock() {
            Replica::Leader(l) => l.enough_replicas(min_insync_replicas),
            Replica::Follower { .. } => false,
        }
    }

    /// Where an acks=all write ending at `end_offset` (exclusive), appended while this broker
    /// led `leader_epoch`, stands; `None` once it leads that epoch no more (the write may or
    /// may not survive, and a high watermark of a later epoch says nothing of it).
    pub fn acks_all(
        &self,
        end_offset: i64,
        min_insync_replicas: usize,
        leader_epoch: i32,
    ) -> Option<AcksAll> {
        match &*self.replica.lock() {
            Replica::Leader(l) if l.leader_epoch() == leader_epoch => {
                Some(l.acks_all(end_offset, min_insync_replicas))
            }
            _ => None,
        }
    }

    /// Reads whole batches for a follower: up to the log end, not the high watermark.
    pub fn read_for_follower(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, LogError> {
        let mut log = self.log.lock();
        let hw = self.high_watermark();
        let end = log.log_end_offset();
        let slice = log.read(offset, max_bytes, end, min_one_batch)?;
        Ok(ReadResult {
            slice,
            high_watermark: hw,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: log.log_start_offset(),
        })
    }

    /// A follower appends what its leader fetched it: batches with the leader's offsets.
    pub fn append_as_follower(
        &self,
        leader: i32,
        leader_epoch: i32,
        batches: Bytes,
        now_ms: i64,
    ) -> Result<Option<AppendInfo>, LogError> {
        self.with_log_as_follower(leader, leader_epoch, |log| {
            log.append_as_follower(batches, now_ms)
        })
    }

    /// Runs `f` on the log (then refreshes the cached offsets) only while this replica follows
    /// `leader` at `leader_epoch`; `None` when it does not. The role cannot change meanwhile:
    /// `apply_leadership` holds the log's lock too. An answer to a fetch sent under an earlier
    /// role must not touch the log: a broker that has just become leader would append its old
    /// leader's records after the start of its own epoch, and its followers, told to diverge
    /// there, would truncate and fetch the same records again forever.
    pub fn with_log_as_follower<T>(
        &self,
        leader: i32,
        leader_epoch: i32,
        f: impl FnOnce(&mut Log) -> Result<T, LogError>,
    ) -> Result<Option<T>, LogError> {
        let mut log = self.log.lock();
        let follows = matches!(&*self.replica.lock(), Replica::Follower { leader: l, .. } if *l == leader)
            && self.leader_epoch() == leader_epoch;
        if !follows {
            return Ok(None);
        }
        let out = f(&mut log);
        self.refresh(&mut log);
        drop(log);
        out.map(Some)
    }

    /// In durable mode, the fsync a follower waits for before its next fetch: a fetch offset
    /// tells the leader that this replica holds everything below it, and the leader counts it
    /// toward the high watermark, so it must not name records that are only in the page cache
    /// (KRaft's voters flush before fetching again for the same reason; Redpanda's followers
    /// fsync before acknowledging). None when everything appended is on disk, or without
    /// durable mode, where the page caches of the ISR are trusted as Kafka trusts them.
    pub fn follower_sync(&self, group_commit: &GroupCommit) -> SyncWait {
        if !self.durable.load(Ordering::Relaxed) {
            return None;
        }
        let log = self.log.lock();
        let end = log.log_end_offset();
        if log.flushed_offset() >= end {
            return None;
        }
        let req = log.sync_request(end);
        drop(log);
        Some(group_commit.submit(req))
    }

    /// A follower takes its leader's high watermark (capped at its own log end).
    pub fn set_follower_high_watermark(&self, hw: i64) {
        let mut log = self.log.lock();
        if let Replica::Follower { high_watermark, .. } = &mut *self.replica.lock() {
            *high_watermark = hw;
        }
        self.refresh(&mut log);
        drop(log);
        self.data_arrived.notify_waiters();
    }

    /// The largest leader epoch of this log not above `epoch` and where it ends.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        self.log.lock().end_offset_for_epoch(epoch)
    }

    /// The leader epoch of the log's last record, if any.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.log.lock().latest_epoch()
    }

    /// This broker no longer hosts the partition's replica (it was moved away): it neither
    /// leads nor follows.
    pub fn resign(&self) {
        let _log = self.log.lock();
        *self.replica.lock() = Replica::Follower {
            leader: -1,
            high_watermark: self.high_watermark(),
        };
        self.leader.store(false, Ordering::Release);
        self.assigned.store(false, Ordering::Release);
    }

    /// Whether `replica` is in the committed ISR of this leader (false when not leading).
    pub fn isr_contains(&self, replica: i32) -> bool {
        match &*self.replica.lock() {
            Replica::Leader(l) => l.isr().committed().contains(&replica),
            Replica::Follower { .. } => false,
        }
    }

    /// What the replication state says now (for metrics, DescribeQuorum-like views, tests).
    pub fn with_replica<T>(&self, f: impl FnOnce(&Replica) -> T) -> T {
        f(&self.replica.lock())
    }

    pub fn last_stable_offset(&self) -> i64 {
        self.last_stable_offset.load(Ordering::Acquire)
    }

    /// Appends producer batches. In durable mode the returned future completes once the
    /// batches are on disk; otherwise at once (they are in the page cache, which survives a
    /// process crash). A producer's retry of a batch already in the log comes back with the
    /// original offsets and `duplicate` set, writing nothing.
    pub fn append(
        self: &Arc<Self>,
        batches: Bytes,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        self.append_with(group_commit, |log, epoch| {
            log.append(batches, epoch, now_ms)
        })
    }

    /// `append` for the broker's own coordinators (transactional offset commits), whose
    /// batches are judged by epoch but carry no sequence numbers.
    pub fn append_as_coordinator(
        self: &Arc<Self>,
        batches: Bytes,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        self.append_with(group_commit, |log, epoch| {
            log.append_with_origin(batches, epoch, now_ms, AppendOrigin::Coordinator)
        })
    }

    /// Writes a transaction marker for `producer_id` (the transaction coordinator's
    /// WriteTxnMarkers, in process).
    pub fn append_marker(
        self: &Arc<Self>,
        producer_id: i64,
        producer_epoch: i16,
        marker: EndTxnMarker,
        now_ms: i64,
        group_commit: &GroupCommit,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        self.append_with(group_commit, |log, epoch| {
            log.append_control(producer_id, producer_epoch, marker, epoch, now_ms)
        })
    }

    fn append_with(
        self: &Arc<Self>,
        group_commit: &GroupCommit,
        f: impl FnOnce(&mut Log, i32) -> Result<AppendInfo, LogError>,
    ) -> Result<(AppendInfo, SyncWait), LogError> {
        let mut log = self.log.lock();
        let info = f(&mut log, self.leader_epoch())?;
        if info.duplicate {
            // A retry is answered like the original (Kafka waits for the original's offsets
            // to be committed): in durable mode, once they are on disk.
            if self.durable.load(Ordering::Relaxed) && log.flushed_offset() <= info.last_offset {
                let req = log.sync_request(info.last_offset + 1);
                drop(log);
                return Ok((info, Some(group_commit.submit(req))));
            }
            return Ok((info, None));
        }
        let end = log.log_end_offset();
        self.log_end_offset.store(end, Ordering::Release);
        if self.durable.load(Ordering::Relaxed) {
            let req = log.sync_request(end);
            // Followers may fetch these records before the fsync lands: they count once it has.
            let flushed = log.flushed_offset();
            self.leader_progress(&mut log, flushed);
            drop(log);
            Ok((info, Some(group_commit.submit(req))))
        } else {
            self.leader_progress(&mut log, end);
            drop(log);
            self.data_arrived.notify_waiters();
            Ok((info, None))
        }
    }

    /// The leader's own log reached `local_end` (its log end, or in durable mode what is on
    /// disk): the high watermark may follow. Followers are measured against the whole log,
    /// which they may hold before this leader has fsynced it. Callers hold the log lock.
    fn leader_progress(&self, log: &mut Log, local_end: i64) {
        let hw = match &mut *self.replica.lock() {
            Replica::Leader(l) => {
                let log_end = log.log_end_offset();
                if log_end > l.log_end_offset() || local_end > l.local_end() {
                    l.on_append(log_end, local_end);
                }
                l.high_watermark()
            }
            Replica::Follower { high_watermark, .. } => (*high_watermark).min(local_end),
        };
        self.store_high_watermark(log, hw);
    }

    /// Publishes `hw` (never back, except through `truncate`), with the last stable offset.
    fn store_high_watermark(&self, log: &mut Log, hw: i64) {
        let hw = hw.max(log.log_start_offset()).min(log.log_end_offset());
        log.set_high_watermark(hw);
        self.high_watermark.store(hw, Ordering::Release);
        self.last_stable_offset
            .store(log.last_stable_offset(hw), Ordering::Release);
    }

    /// Called when a durable append's fsync completed: the high watermark moves to what is on
    /// disk and waiting fetches wake.
    pub fn synced(&self) {
        let mut log = self.log.lock();
        let flushed = log.flushed_offset();
        self.leader_progress(&mut log, flushed);
        drop(log);
        self.data_arrived.notify_waiters();
    }

    /// Reads whole batches from `offset`, bounded by the high watermark, or by the last
    /// stable offset for a read_committed reader.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        read_committed: bool,
    ) -> Result<ReadResult, LogError> {
        let mut log = self.log.lock();
        let hw = self.high_watermark();
        let lso = self.last_stable_offset();
        let bound = if read_committed { lso } else { hw };
        let slice = log.read(offset, max_bytes, bound, min_one_batch)?;
        Ok(ReadResult {
            slice,
            high_watermark: hw,
            last_stable_offset: lso,
            log_start_offset: log.log_start_offset(),
        })
    }

    /// The aborted transactions a read_committed reader of `[from, upper)` must skip.
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Result<Vec<AbortedTxn>, LogError> {
        self.log.lock().aborted_transactions(from, upper)
    }

    /// Every producer the partition knows (DescribeProducers).
    pub fn active_producers(&self) -> Vec<ProducerStateEntry> {
        self.log.lock().active_producers()
    }

    /// Whether `producer_id` at `producer_epoch` has a transaction open in this partition.
    pub fn in_transaction(&self, producer_id: i64, producer_epoch: i16) -> bool {
        self.log.lock().in_transaction(producer_id, producer_epoch)
    }

    /// A future that completes at the next append. Create it before reading, so an append
    /// between the read and the wait is not missed.
    pub fn data_arrived(&self) -> tokio::sync::futures::Notified<'_> {
        self.data_arrived.notified()
    }

    /// Runs `f` with the log locked, then refreshes the cached offsets (for truncation,
    /// DeleteRecords, retention and config changes).
    pub fn with_log<T>(&self, f: impl FnOnce(&mut Log) -> T) -> T {
        let mut log = self.log.lock();
        let out = f(&mut log);
        self.refresh(&mut log);
        out
    }

    fn refresh(&self, log: &mut Log) {
        self.log_end_offset
            .store(log.log_end_offset(), Ordering::Release);
        self.log_start_offset
            .store(log.log_start_offset(), Ordering::Release);
        let local_end = if self.durable.load(Ordering::Relaxed) {
            log.flushed_offset()
        } else {
            log.log_end_offset()
        };
        self.leader_progress(log, local_end);
    }

    pub fn set_config(&self, config: LogConfig) {
        self.durable.store(config.durable, Ordering::Relaxed);
        self.with_log(|log| log.set_config(config));
    }
}

impl Partition {
    /// Removes the partition's files; later appends and reads on this handle fail.
    pub fn delete_log(&self, log_dir: &samsa_storage::LogDir) -> Result<(), LogError> {
        let _log = self.log.lock();
        log_dir.delete_partition_dir(&self.tp)
    }

    /// Flushes the log and returns what the log-directory checkpoints record for it.
    /// The flush also snapshots the producer state, so a restart replays little.
    pub fn checkpoint(&self) -> Result<samsa_storage::PartitionCheckpoint, LogError> {
        // The fdatasyncs run without the log: appends to this partition (and the shard thread
        // serving them) do not wait for the disk (see samsa_storage's detached_flush.rs).
        let begun = self.log.lock().begin_flush()?;
        if let Some(mut flush) = begun {
            flush.sync()?;
            self.log.lock().finish_flush(flush)?;
        }
        let log = self.log.lock();
        Ok(samsa_storage::PartitionCheckpoint {
            recovery_point: log.flushed_offset(),
            high_watermark: self.high_watermark(),
            log_start_offset: log.log_start_offset(),
        })
    }
}

/// What replaying an internal topic's partition meets, in log order (see [`Partition::replay`]).
pub enum Replayed<'a> {
    /// A transaction marker (COMMIT or ABORT) of `producer_id`.
    Marker { producer_id: i64, commit: bool },
    /// A record of a data batch; `transactional` is the batch's producer id when the batch
    /// belongs to a transaction.
    Record {
        offset: i64,
        transactional: Option<i64>,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
    },
}

/// Bytes read from the log per step of a replay (a larger batch is still read whole).
const REPLAY_READ_BYTES: usize = 1 << 20;
/// The largest decompressed batch a replay accepts (coordinators write theirs uncompressed).
const REPLAY_DECOMPRESSED_BYTES_MAX: usize = 64 << 20;

impl Partition {
    /// Visits every record and transaction marker from the log start to the log end, in order
    /// (how the group and transaction coordinators load their internal topics when this
    /// replica starts leading them). To the log end, not the high watermark, as Kafka's
    /// coordinators load: a new leader learns the high watermark from its followers' next
    /// fetches, so its own lags what the former leader had committed and answered clients on,
    /// and everything in a leader's log stays. (Loading to it, a new transaction coordinator
    /// missed an open transaction, gave its producer a new epoch without aborting it, and the
    /// next commit marker in its partitions committed it.) What cannot be read is skipped with
    /// a warning; returns how many records that was.
    pub fn replay(&self, mut visit: impl FnMut(Replayed<'_>)) -> Result<u64, LogError> {
        use samsa_storage::batch::{self, Compression};
        let mut skipped = 0u64;
        let mut offset = self.log_start_offset();
        let end = self.log_end_offset();
        while offset < end {
            let read = match self.read_for_follower(offset, REPLAY_READ_BYTES, true) {
                Ok(r) => r,
                // Retention or DeleteRecords moved the start while we read: continue from it.
                Err(LogError::OffsetOutOfRange {
                    log_start_offset, ..
                }) if log_start_offset > offset => {
                    offset = log_start_offset;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if read.slice.is_empty() {
                break;
            }
            let bytes = read.slice.load().map_err(LogError::Storage)?;
            let mut next = offset;
            for b in batch::batches(&bytes) {
                let b = match b {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::warn!(partition = %self.tp, offset = next, "unreadable batch while replaying: {e}");
                        break;
                    }
                };
                let h = *b.header();
                next = h.next_offset();
                if h.last_offset() < offset {
                    continue;
                }
                if h.is_control() {
                    if h.producer_id >= 0 {
                        match EndTxnMarker::parse(&b) {
                            Ok(Some(m)) => visit(Replayed::Marker {
                                producer_id: h.producer_id,
                                commit: m.commit,
                            }),
                            Ok(None) => {}
                            Err(e) => {
                                tracing::warn!(partition = %self.tp, offset = h.base_offset, "unreadable transaction marker while replaying: {e}")
                            }
                        }
                    }
                    continue;
                }
                let transactional =
                    (h.is_transactional() && h.producer_id >= 0).then_some(h.producer_id);
                let codec = h.compression().unwrap_or(Compression::None);
                let decompressed;
                let payload = if codec == Compression::None {
                    b.records_bytes()
                } else {
                    match samsa_storage::compression::decompress(
                        codec,
                        b.records_bytes(),
                        REPLAY_DECOMPRESSED_BYTES_MAX,
                    ) {
                        Ok(v) => {
                            decompressed = v;
                            &decompressed[..]
                        }
                        Err(e) => {
                            tracing::warn!(partition = %self.tp, offset = h.base_offset, "cannot decompress a batch while replaying: {e}");
                            skipped += h.record_count.max(0) as u64;
                            continue;
                        }
                    }
                };
                for r in samsa_storage::records::records(payload, h.record_count) {
                    let r = match r {
                        Ok(r) => r,
                        Err(e) => {
                            tracing::warn!(partition = %self.tp, offset = h.base_offset, "malformed record while replaying: {e}");
                            skipped += 1;
                            break;
                        }
                    };
                    let record_offset = h.base_offset + r.offset_delta as i64;
                    if record_offset < offset {
                        continue;
                    }
                    visit(Replayed::Record {
                        offset: record_offset,
                        transactional,
                        key: r.key,
                        value: r.value,
                    });
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        Ok(skipped)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use samsa_storage::test_support::{open_log, BatchBuilder};
    use samsa_storage::LogConfig;

    pub(crate) fn led_by(leader: i32, leader_epoch: i32) -> Leadership {
        Leadership {
            leader,
            leader_epoch,
            partition_epoch: leader_epoch,
            replicas: vec![1, 2],
            isr: vec![1, 2],
        }
    }

    fn batch(base_offset: i64, leader_epoch: i32) -> Bytes {
        BatchBuilder::new()
            .base_offset(base_offset)
            .leader_epoch(leader_epoch)
            .records(2, 10)
            .build()
    }

    #[test]
    fn a_former_leaders_batch_is_not_appended_once_this_replica_leads() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("t", 0);
        let (_d, log) = open_log(dir.path(), &tp, LogConfig::default());
        let p = Partition::new_replica(tp, Uuid::nil(), log, 0);
        p.apply_leadership(1, &led_by(2, 0), 30_000, 0).unwrap();
        assert!(p
            .append_as_follower(2, 0, batch(0, 0), 0)
            .unwrap()
            .is_some());
        // Broker 1 leads epoch 1 from its log end; the replica fetcher's answer from broker 2,
        // the former leader, comes after.
        p.apply_leadership(1, &led_by(1, 1), 30_000, 0).unwrap();
        assert!(p
            .append_as_follower(2, 0, batch(2, 0), 0)
            .unwrap()
            .is_none());
        assert_eq!(p.log_end_offset(), 2);
        assert_eq!(p.end_offset_for_epoch(0), Some((0, 2)));
        assert_eq!(p.latest_epoch(), Some(1));
    }

    #[test]
    fn a_follower_serves_consumers_up_to_its_own_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("t", 0);
        let (_d, log) = open_log(dir.path(), &tp, LogConfig::default());
        let p = Partition::new_replica(tp, Uuid::nil(), log, 0);
        p.apply_leadership(1, &led_by(2, 0), 30_000, 0).unwrap();
        assert!(p.is_replica() && !p.is_leader());
        for base in [0, 2] {
            p.append_as_follower(2, 0, batch(base, 0), 0).unwrap();
        }
        p.set_follower_high_watermark(2);
        assert_eq!((p.high_watermark(), p.log_end_offset()), (2, 4));
        assert_eq!(p.last_stable_offset(), 2, "read_committed stops there too");
        let r = p.read(0, 1 << 20, true, false).unwrap();
        assert_eq!(r.slice.offsets(), Some((0, 2)));
        assert_eq!(r.high_watermark, 2);
        let r = p.read(0, 1 << 20, true, true).unwrap();
        assert_eq!(r.slice.offsets(), Some((0, 2)));
        // Above the high watermark but within the log: nothing yet (the fetch waits).
        for offset in [2, 3, 4] {
            assert!(p
                .read(offset, 1 << 20, true, false)
                .unwrap()
                .slice
                .is_empty());
        }
        assert!(matches!(
            p.read(5, 1 << 20, true, false),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        // Moved away: no longer a replica that may serve anyone.
        p.resign();
        assert!(!p.is_replica());
    }

    #[test]
    fn the_leader_names_the_in_sync_follower_of_the_consumers_rack_once_it_holds_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("t", 0);
        let (_d, log) = open_log(dir.path(), &tp, LogConfig::default());
        let p = Partition::new_replica(tp, Uuid::nil(), log, 0);
        let role = Leadership {
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
        };
        p.apply_leadership(1, &role, 30_000, 0).unwrap();
        let racks = |id: i32| ["a", "b", "c"].get(id as usize - 1).copied();
        let pick = |client_rack: &str| {
            p.preferred_read_replica(&ReplicaSelector::RackAware, 1, client_rack, 0, 10, racks)
        };
        assert_eq!(
            pick("b"),
            None,
            "follower 2 has not fetched from this leader yet"
        );
        p.on_follower_fetch(2, 0, 0, 5, FetchedBy::eligible(-1))
            .unwrap();
        assert_eq!(pick("b"), Some(2));
        assert_eq!(pick("a"), None, "the leader's own rack");
        assert_eq!(pick("c"), None, "follower 3 has not fetched yet");
        assert_eq!(pick(""), None, "a client without a rack");
        // A follower does not choose.
        p.apply_leadership(1, &led_by(2, 1), 30_000, 0).unwrap();
        assert_eq!(pick("b"), None);
    }

    #[test]
    fn a_new_leader_replays_its_log_to_the_end_above_its_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("__transaction_state", 0);
        let (_d, mut log) = open_log(dir.path(), &tp, LogConfig::default());
        // Fetched from the former leader, which had them committed; this replica had not heard
        // so (its high watermark is 0) when it became leader.
        log.append_as_follower(batch(0, 0), 0).unwrap();
        let p = Partition::new_replica(tp, Uuid::nil(), log, 0);
        p.apply_leadership(1, &led_by(1, 1), 30_000, 0).unwrap();
        assert_eq!(p.high_watermark(), 0);
        let mut offsets = Vec::new();
        p.replay(|r| {
            if let Replayed::Record { offset, .. } = r {
                offsets.push(offset);
            }
        })
        .unwrap();
        assert_eq!(offsets, vec![0, 1]);
    }
}
