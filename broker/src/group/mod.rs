//! The group coordinator: Kafka's classic consumer-group protocol for every group whose
//! partition of `__consumer_offsets` this broker leads (on a single node: all of them).
//!
//! Each group is a sans-IO [`state::Group`] behind its own short mutex; this module does the
//! I/O around it: it writes the records a group asks for to `__consumer_offsets` before any
//! answer that depends on them goes out, parks JoinGroup/SyncGroup requests on oneshot
//! channels until the group answers them, runs the group timers (sessions, rebalance and sync
//! deadlines, the initial rebalance delay) on the control runtime, expires committed offsets,
//! and reloads everything from the log on start, answering COORDINATOR_LOAD_IN_PROGRESS for a
//! partition until its groups are back.
//!
//! The group of an id lives in partition `abs(java hashCode(id)) % partitions` of
//! `__consumer_offsets`, as in Kafka, so the data is where a Kafka broker would look for it.
//!
//! Offsets committed inside a transaction (TxnOffsetCommit) are written as the producer's
//! transactional batch and held per producer id until the transaction coordinator reports its
//! marker on the group's partition ([`GroupCoordinator::complete_txn`]): COMMIT makes them the
//! committed offsets, ABORT drops them.
//!
//! Bounds: `group.max.size` members per group and
//! [`state::PENDING_MEMBERS_PER_GROUP_MAX`] member ids handed out but not yet used; JoinGroup
//! protocol lists of at most [`PROTOCOLS_PER_MEMBER_MAX`] entries and
//! [`PROTOCOL_METADATA_BYTES_MAX`] bytes; `offset.metadata.max.bytes` per committed offset;
//! group metadata records within `__consumer_offsets`' `max.message.bytes` (as in Kafka, a
//! larger assignment fails SyncGroup); and `group.coordinator.memory.max.bytes`
//! over everything the coordinator holds (members, pending member ids, committed offsets):
//! beyond it new members, new groups and offsets of new partitions are refused with
//! COORDINATOR_NOT_AVAILABLE (retriable) until groups leave or offsets expire.

pub mod consumer;
mod expiry;
pub mod load;
pub mod modern;
pub mod offsets;
pub mod records;
pub mod state;
mod streams_persist;
pub mod streams_shell;
mod streams_topics;
mod timers;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use parking_lot::{Mutex, RwLock};
use samsa_storage::LogError;
use tokio::sync::{oneshot, Notify};

use self::offsets::PendingTxnOffsets;
use self::records::{CoordinatorRecord, OffsetCommitValue};
use self::state::{Effects, Group};
pub use self::state::{
    GroupConfig, GroupDescription, GroupError, GroupState, JoinReply, JoinRequest, Protocol,
    SyncReply, SyncRequest, WaiterId,
};
use self::timers::Timers;
use crate::config::topic::TopicOverrides;
use crate::config::BrokerConfig;
use crate::coordinator_write::{CoordinatorWrite, WriteError};
use crate::node::Node;
use crate::partition::Partition;

/// The internal topic that holds group metadata and committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// Protocols one JoinGroup may list (clients send one per configured assignor).
pub const PROTOCOLS_PER_MEMBER_MAX: usize = 64;
/// Bytes of protocol metadata one JoinGroup may carry.
pub const PROTOCOL_METADATA_BYTES_MAX: usize = 1 << 20;

impl GroupError {
    /// The Kafka error code of this error.
    pub fn code(&self) -> i16 {
        self.response_error().code()
    }

    pub fn response_error(&self) -> ResponseError {
        use GroupError as G;
        use ResponseError as E;
        match self {
            G::CoordinatorNotAvailable => E::CoordinatorNotAvailable,
            G::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress,
            G::NotCoordinator => E::NotCoordinator,
            G::InvalidGroupId => E::InvalidGroupId,
            G::UnknownMemberId => E::UnknownMemberId,
            G::MemberIdRequired => E::MemberIdRequired,
            G::IllegalGeneration => E::IllegalGeneration,
            G::RebalanceInProgress => E::RebalanceInProgress,
            G::InconsistentGroupProtocol => E::InconsistentGroupProtocol,
            G::InvalidSessionTimeout => E::InvalidSessionTimeout,
            G::GroupMaxSizeReached => E::GroupMaxSizeReached,
            G::FencedInstanceId => E::FencedInstanceId,
            G::GroupIdNotFound => E::GroupIdNotFound,
            G::NonEmptyGroup => E::NonEmptyGroup,
            G::StaleMemberEpoch => E::StaleMemberEpoch,
            G::UnsupportedVersion => E::UnsupportedVersion,
            G::GroupSubscribedToTopic => E::GroupSubscribedToTopic,
            G::OffsetMetadataTooLarge => E::OffsetMetadataTooLarge,
            G::UnknownTopicOrPartition => E::UnknownTopicOrPartition,
            G::InvalidRequest => E::InvalidRequest,
            G::InvalidProducerEpoch => E::InvalidProducerEpoch,
            G::UnknownServerError => E::UnknownServerError,
        }
    }
}

/// A failed write to `__consumer_offsets`, as the group APIs report it (Kafka's
/// `appendGroupMetadataErrorToResponseError`).
fn append_error(e: &LogError) -> GroupError {
    match e {
        LogError::Storage(_) => GroupError::NotCoordinator,
        _ => GroupError::UnknownServerError,
    }
}

/// A write to `__consumer_offsets` that did not reach every in-sync replica, as the group APIs
/// report it (the same mapping: NOT_COORDINATOR when this broker stopped leading the partition,
/// COORDINATOR_NOT_AVAILABLE when the replicas did not take it in time).
fn write_error(e: WriteError) -> GroupError {
    match e.coordinator_error() {
        ResponseError::NotCoordinator => GroupError::NotCoordinator,
        _ => GroupError::CoordinatorNotAvailable,
    }
}

/// Waits until `write` is in every in-sync replica's log (and on disk in durable mode): what a
/// group's answer may depend on.
async fn replicated(group_id: &str, write: CoordinatorWrite) -> Result<(), GroupError> {
    let tp = write.partition.tp.clone();
    write.replicated().await.map_err(|e| {
        tracing::warn!(group = group_id, partition = %tp, "group records were written but not replicated: {e}");
        write_error(e)
    })
}

/// One partition's committed offset, as an OffsetCommit asks to store it.
#[derive(Debug, Clone)]
pub struct OffsetToCommit {
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// An OffsetCommit, after the handler dropped partitions that do not exist.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// OffsetCommit v2-4's `retention_time_ms` (-1: the broker's retention).
    pub retention_time_ms: i64,
    pub topics: Vec<(String, Vec<OffsetToCommit>)>,
    pub api_version: i16,
}

pub type PartitionResults = Vec<(String, Vec<(i32, Result<(), GroupError>)>)>;
pub type FetchedOffsets = Vec<(String, Vec<(i32, Option<OffsetCommitValue>)>)>;

/// A group as ListGroups shows it.
#[derive(Debug, Clone)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub state: GroupState,
}

/// Replies that an operation produced, and the group records it wrote whose outcome the group
/// has not heard yet ([`Group::stored`] once they are replicated, or not), delivered after the
/// group lock is released.
#[derive(Default)]
struct Outcome {
    join: Vec<(WaiterId, JoinReply)>,
    sync: Vec<(WaiterId, SyncReply)>,
    stores: Vec<(CoordinatorWrite, state::AfterStore)>,
}

type GroupHandle = Arc<Mutex<Group>>;

use crate::internal_topics::{LOADED, LOADING, NOT_COORDINATOR};

pub struct GroupCoordinator {
    cfg: GroupConfig,
    /// The partition count of `__consumer_offsets`: the topic's once it exists (keys hash over
    /// it), `offsets.topic.num.partitions` to create it.
    partitions: std::sync::atomic::AtomicI32,
    offset_metadata_max_bytes: usize,
    offsets_retention_ms: i64,
    retention_check_interval_ms: u64,
    memory_max_bytes: i64,
    segment_bytes: i64,
    /// `offsets.topic.replication.factor`.
    replication_factor: i16,
    groups: RwLock<HashMap<String, GroupHandle>>,
    /// Per partition of `__consumer_offsets`: whether this broker coordinates its groups
    /// ([`NOT_COORDINATOR`], [`LOADING`], [`LOADED`]).
    coordinating: Vec<AtomicU8>,
    join_waiters: Mutex<HashMap<WaiterId, oneshot::Sender<JoinReply>>>,
    sync_waiters: Mutex<HashMap<WaiterId, oneshot::Sender<SyncReply>>>,
    next_waiter: AtomicU64,
    timers: Mutex<Timers>,
    timer_wake: Notify,
    memory_bytes: AtomicI64,
    /// Groups holding pending transactional offsets, by producer id.
    txn_groups: Mutex<HashMap<i64, BTreeSet<String>>>,
    /// KIP-848 consumer groups (their offsets are in `groups`, see [`modern`]).
    consumer_groups: RwLock<HashMap<String, modern::ConsumerHandle>>,
    consumer_timers: Mutex<Timers>,
    /// KIP-1071 streams groups (their offsets are in `groups` too, see [`streams_shell`]).
    streams: streams_shell::StreamsGroups,
}

impl GroupCoordinator {
    /// Builds the coordinator. When `__consumer_offsets` already exists its partitions are
    /// "loading" until [`load_all`](Self::load_all) has replayed them.
    pub fn new(config: &BrokerConfig, existing_partitions: Option<i32>) -> GroupCoordinator {
        let partitions = existing_partitions
            .unwrap_or_else(|| config.int("offsets.topic.num.partitions"))
            .max(1);
        GroupCoordinator {
            cfg: GroupConfig {
                min_session_timeout_ms: config.int("group.min.session.timeout.ms"),
                max_session_timeout_ms: config.int("group.max.session.timeout.ms"),
                initial_rebalance_delay_ms: config.int("group.initial.rebalance.delay.ms").max(0),
                max_size: config.int("group.max.size").max(1) as usize,
                new_member_join_timeout_ms: 300_000,
            },
            partitions: partitions.into(),
            offset_metadata_max_bytes: config.int("offset.metadata.max.bytes").max(0) as usize,
            offsets_retention_ms: config
                .long("offsets.retention.minutes")
                .max(1)
                .saturating_mul(60_000),
            retention_check_interval_ms: config.long("offsets.retention.check.interval.ms").max(1)
                as u64,
            memory_max_bytes: config.long("group.coordinator.memory.max.bytes"),
            segment_bytes: config.long("offsets.topic.segment.bytes"),
            replication_factor: config.int("offsets.topic.replication.factor") as i16,
            groups: RwLock::new(HashMap::new()),
            // No partition is this broker's until the metadata image says it leads it; room for
            // as many partitions as a topic may have.
            coordinating: (0..crate::topics::PARTITIONS_PER_TOPIC_MAX)
                .map(|_| AtomicU8::new(NOT_COORDINATOR))
                .collect(),
            join_waiters: Mutex::new(HashMap::new()),
            sync_waiters: Mutex::new(HashMap::new()),
            next_waiter: AtomicU64::new(1),
            timers: Mutex::new(Timers::default()),
            timer_wake: Notify::new(),
            memory_bytes: AtomicI64::new(0),
            txn_groups: Mutex::new(HashMap::new()),
            consumer_groups: RwLock::new(HashMap::new()),
            consumer_timers: Mutex::new(Timers::default()),
            streams: Default::default(),
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.cfg
    }

    /// The partition of `__consumer_offsets` that owns `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        records::partition_for(group_id, self.partitions.load(Ordering::Acquire))
    }

    pub fn offset_metadata_max_bytes(&self) -> usize {
        self.offset_metadata_max_bytes
    }

    /// Memory the coordinator accounts for (members, pending ids, offsets).
    pub fn memory_bytes(&self) -> i64 {
        self.memory_bytes.load(Ordering::Relaxed)
    }

    fn over_budget(&self) -> bool {
        self.memory_bytes() > self.memory_max_bytes
    }

    /// COORDINATOR_NOT_AVAILABLE (retriable) for something new while the budget is used up.
    fn check_budget(&self, group_id: &str, what: &str) -> Result<(), GroupError> {
        if !self.over_budget() {
            return Ok(());
        }
        tracing::warn!(
            group = group_id,
            "refusing {what}: group.coordinator.memory.max.bytes={} is used up",
            self.memory_max_bytes
        );
        Err(GroupError::CoordinatorNotAvailable)
    }

    fn account(&self, before: usize, after: usize) {
        self.memory_bytes
            .fetch_add(after as i64 - before as i64, Ordering::Relaxed);
    }

    /// Refuses the empty group id where Kafka does: it takes it for committed offsets, their
    /// fetch, listing, describing and deleting the group (a "simple" group), never for
    /// membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the heartbeats of the newer
    /// protocols), a transaction's offsets or OffsetDelete.
    pub fn check_member_group(&self, group_id: &str) -> Result<(), GroupError> {
        if group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        self.check_loaded(group_id)
    }

    /// Refuses requests for a group this broker does not coordinate (NOT_COORDINATOR) or
    /// whose partition is still loading.
    pub fn check_loaded(&self, group_id: &str) -> Result<(), GroupError> {
        match self.coordinating[self.partition_for(group_id) as usize].load(Ordering::Acquire) {
            LOADED => Ok(()),
            LOADING => Err(GroupError::CoordinatorLoadInProgress),
            _ => Err(GroupError::NotCoordinator),
        }
    }

    /// Whether no partition is loading.
    pub fn all_loaded(&self) -> bool {
        self.coordinating
            .iter()
            .all(|l| l.load(Ordering::Acquire) != LOADING)
    }

    /// Whether this broker coordinates `group_id` and has loaded its partition.
    pub fn is_loaded(&self, group_id: &str) -> bool {
        self.check_loaded(group_id).is_ok()
    }

    /// Whether a classic group `group_id` exists here (in any state but dead).
    pub fn exists(&self, group_id: &str) -> bool {
        self.group(group_id)
            .is_some_and(|g| g.lock().state() != GroupState::Dead)
    }

    fn group(&self, group_id: &str) -> Option<GroupHandle> {
        self.groups.read().get(group_id).cloned()
    }

    fn get_or_create(&self, group_id: &str, now_ms: i64) -> Result<GroupHandle, GroupError> {
        if let Some(g) = self.group(group_id) {
            return Ok(g);
        }
        self.check_budget(group_id, "a new group")?;
        let mut groups = self.groups.write();
        let g = groups.entry(group_id.to_string()).or_insert_with(|| {
            let g = Group::new(group_id, now_ms);
            self.account(0, g.bytes());
            Arc::new(Mutex::new(g))
        });
        Ok(g.clone())
    }

    /// Forgets a dead group (its records are already tombstoned).
    fn drop_group(&self, g: &Group) {
        let mut groups = self.groups.write();
        groups.remove(&g.group_id);
        drop(groups);
        self.account(g.bytes(), 0);
        self.timers.lock().set(&g.group_id, None);
    }

    // ---- __consumer_offsets ----

    /// The partition of `__consumer_offsets` that owns `group_id`, if this broker leads it.
    /// The topic is created by FindCoordinator (through the controller), as Kafka does.
    pub fn offsets_partition(
        &self,
        node: &Node,
        group_id: &str,
    ) -> Result<Arc<Partition>, GroupError> {
        let topic = node
            .topics
            .get(OFFSETS_TOPIC)
            .ok_or(GroupError::CoordinatorNotAvailable)?;
        match topic.led_partition(self.partition_for(group_id)) {
            Ok(p) => Ok(p.clone()),
            Err(ResponseError::NotLeaderOrFollower) => Err(GroupError::NotCoordinator),
            Err(_) => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    /// How `__consumer_offsets` is created: partitions, replication factor and configs.
    pub fn offsets_topic_spec(&self) -> crate::internal_topics::InternalTopicSpec {
        let mut configs = TopicOverrides::new();
        configs.insert("cleanup.policy".into(), "compact".into());
        configs.insert("segment.bytes".into(), self.segment_bytes.to_string());
        configs.insert("compression.type".into(), "producer".into());
        crate::internal_topics::InternalTopicSpec {
            name: OFFSETS_TOPIC.to_string(),
            partitions: self.partitions.load(Ordering::Acquire),
            replication_factor: self.replication_factor,
            configs,
        }
    }

    /// Appends `records` to the group's partition, as this broker leads it. Nothing that
    /// depends on them may be answered before the write is replicated
    /// ([`CoordinatorWrite::replicated`]): Kafka's coordinator appends with acks=all.
    fn append(
        &self,
        node: &Node,
        group_id: &str,
        records: &[CoordinatorRecord],
        now_ms: i64,
    ) -> Result<CoordinatorWrite, GroupError> {
        self.append_for(node, group_id, records, now_ms, None)
    }

    /// `append`, as a transactional batch of `producer` (id, epoch) when given, which the
    /// log checks against the producer's epoch.
    fn append_for(
        &self,
        node: &Node,
        group_id: &str,
        records: &[CoordinatorRecord],
        now_ms: i64,
        producer: Option<(i64, i16)>,
    ) -> Result<CoordinatorWrite, GroupError> {
        let partition = self.offsets_partition(node, group_id)?;
        let tp = partition.tp.clone();
        let batch = records::encode_producer_batch(records, now_ms, producer);
        let appended = CoordinatorWrite::append(partition, |p| match producer {
            None => p.append(batch, now_ms, &node.group_commit),
            Some(_) => p.append_as_coordinator(batch, now_ms, &node.group_commit),
        });
        match appended {
            Ok(write) => Ok(write),
            Err(LogError::InvalidProducerEpoch(e)) => {
                tracing::debug!(group = group_id, "transactional offset commit fenced: {e}");
                Err(GroupError::InvalidProducerEpoch)
            }
            Err(e) => {
                tracing::error!(group = group_id, partition = %tp, "cannot write group records: {e}");
                Err(append_error(&e))
            }
        }
    }

    // ---- effects ----

    /// Carries out what a group operation asked for, under the group's lock: writes the
    /// records it needs (an append that fails is fed back at once; one that succeeds is fed
    /// back once replicated, by [`complete_stores`](Self::complete_stores)), and reschedules
    /// the group's timer (which fires deadlines already due). Replies are returned for delivery
    /// after the lock.
    fn settle(&self, node: &Node, g: &mut Group, mut fx: Effects, now_ms: i64) -> Outcome {
        let mut out = Outcome::default();
        for _ in 0..1_000 {
            for e in fx.events.drain(..) {
                tracing::info!(group = %g.group_id, "{e}");
            }
            out.join.append(&mut fx.join_replies);
            out.sync.append(&mut fx.sync_replies);
            let stores = std::mem::take(&mut fx.store);
            if stores.is_empty() {
                // A deadline already due (an initial rebalance delay of 0) is the timer task's,
                // not this request's: as in Kafka, whose join completes when its timer fires,
                // members that join at about the same time all make the first generation.
                break;
            }
            for s in stores {
                let record = CoordinatorRecord::group_metadata(&g.group_id, s.value);
                let result = match self.append(node, &g.group_id, &[record], now_ms) {
                    // Already replicated (a single replica), or never to be: told at once.
                    Ok(write) => match write.replicated_now() {
                        Some(r) => r.map_err(write_error),
                        None => {
                            out.stores.push((write, s.then));
                            continue;
                        }
                    },
                    Err(e) => Err(e),
                };
                if let (Err(e), state::AfterStore::Nothing) = (&result, &s.then) {
                    tracing::warn!(group = %g.group_id, "cannot write the empty group's metadata: {e}");
                }
                fx.merge(g.stored(s.then, result, &self.cfg, now_ms));
            }
        }
        self.schedule(g);
        out
    }

    fn schedule(&self, g: &Group) {
        let earliest = self.timers.lock().set(&g.group_id, g.next_deadline());
        if earliest {
            self.timer_wake.notify_one();
        }
    }

    /// Runs `op` on the group under its lock, carries out its effects, keeps the memory
    /// account, and delivers the replies once the lock is released.
    fn operate<R>(
        self: &Arc<Self>,
        node: &Arc<Node>,
        group: &GroupHandle,
        now_ms: i64,
        op: impl FnOnce(&mut Group) -> (R, Effects),
    ) -> R {
        let (result, out) = {
            let mut g = group.lock();
            let before = g.bytes();
            let (result, fx) = op(&mut g);
            let out = self.settle(node, &mut g, fx, now_ms);
            self.account(before, g.bytes());
            (result, out)
        };
        self.deliver(node, group, out);
        result
    }

    /// Sends the replies: at once when the operation wrote nothing, else once its records are
    /// replicated (or failed to be) and the group has heard so.
    fn deliver(self: &Arc<Self>, node: &Arc<Node>, group: &GroupHandle, out: Outcome) {
        if out.stores.is_empty() {
            self.send(out.join, out.sync);
            return;
        }
        let (this, node, group) = (self.clone(), node.clone(), group.clone());
        tokio::spawn(async move { this.complete_stores(&node, &group, out).await });
    }

    /// Waits until the group records of `out` are in every in-sync replica's log (Kafka's
    /// coordinator appends them with acks=all), tells the group each outcome (an assignment
    /// becomes the members' only then; a failure makes them rejoin), sends the replies, and
    /// carries on while what the group does next writes again.
    async fn complete_stores(
        self: &Arc<Self>,
        node: &Arc<Node>,
        group: &GroupHandle,
        out: Outcome,
    ) {
        let mut out = out;
        loop {
            let mut outcomes = Vec::with_capacity(out.stores.len());
            for (write, then) in std::mem::take(&mut out.stores) {
                let group_id = group.lock().group_id.clone();
                outcomes.push((then, replicated(&group_id, write).await));
            }
            self.send(std::mem::take(&mut out.join), std::mem::take(&mut out.sync));
            if outcomes.is_empty() {
                return;
            }
            let now = crate::util::now_ms();
            out = {
                let mut g = group.lock();
                let before = g.bytes();
                let mut fx = Effects::default();
                for (then, result) in outcomes {
                    fx.merge(g.stored(then, result, &self.cfg, now));
                }
                let next = self.settle(node, &mut g, fx, now);
                self.account(before, g.bytes());
                next
            };
        }
    }

    fn send(&self, join: Vec<(WaiterId, JoinReply)>, sync: Vec<(WaiterId, SyncReply)>) {
        if !join.is_empty() {
            let mut waiters = self.join_waiters.lock();
            for (w, reply) in join {
                if let Some(tx) = waiters.remove(&w) {
                    let _ = tx.send(reply);
                }
            }
        }
        if !sync.is_empty() {
            let mut waiters = self.sync_waiters.lock();
            for (w, reply) in sync {
                if let Some(tx) = waiters.remove(&w) {
                    let _ = tx.send(reply);
                }
            }
        }
    }

    fn waiter(&self) -> WaiterId {
        self.next_waiter.fetch_add(1, Ordering::Relaxed)
    }

    // ---- the APIs ----

    /// FindCoordinator for a group: this broker, once `__consumer_offsets` exists.
    /// JoinGroup: resolves when the group answers (at once, or when the rebalance completes).
    pub async fn join(
        self: &Arc<Self>,
        node: &Arc<Node>,
        group_id: &str,
        req: JoinRequest,
    ) -> JoinReply {
        let now = crate::util::now_ms();
        let member_id = req.member_id.clone();
        let refuse = |e| JoinReply::error(&member_id, e);
        if let Err(e) = self.check_member_group(group_id) {
            return refuse(e);
        }
        if req.session_timeout_ms < self.cfg.min_session_timeout_ms
            || req.session_timeout_ms > self.cfg.max_session_timeout_ms
        {
            return refuse(GroupError::InvalidSessionTimeout);
        }
        let metadata_bytes: usize = req
            .protocols
            .iter()
            .map(|p| p.name.len() + p.metadata.len())
            .sum();
        if req.protocols.len() > PROTOCOLS_PER_MEMBER_MAX
            || metadata_bytes > PROTOCOL_METADATA_BYTES_MAX
        {
            tracing::warn!(group = group_id, protocols = req.protocols.len(), metadata_bytes, "JoinGroup refused: at most {PROTOCOLS_PER_MEMBER_MAX} protocols and {PROTOCOL_METADATA_BYTES_MAX} bytes of metadata");
            return refuse(GroupError::InvalidRequest);
        }
        if let Err(e) = self.offsets_partition(node, group_id) {
            return refuse(e);
        }
        // A consumer group with members takes the member in with the classic protocol; an
        // empty one gives way to a classic group (once more if a member came meanwhile).
        for again in [false, true] {
            if let Some(reply) = self.classic_join_consumer(node, group_id, &req).await {
                return reply;
            }
            match self.make_way_for_classic(node, group_id).await {
                Ok(()) => break,
                Err(GroupError::InconsistentGroupProtocol) if !again => continue,
                Err(e) => return refuse(e),
            }
        }
        let group = if req.member_id.is_empty() {
            if let Err(e) = self.check_budget(group_id, "a new member") {
                return refuse(e);
            }
            match self.get_or_create(group_id, now) {
                Ok(g) => g,
                Err(e) => return refuse(e),
            }
        } else {
            match self.group(group_id) {
                Some(g) => g,
                None => return refuse(GroupError::UnknownMemberId),
            }
        };
        let waiter = self.waiter();
        let (tx, rx) = oneshot::channel();
        self.join_waiters.lock().insert(waiter, tx);
        self.operate(node, &group, now, |g| {
            ((), g.join(req, waiter, &self.cfg, now))
        });
        match wait_or_shutdown(node, rx).await {
            Some(reply) => reply,
            None => {
                self.join_waiters.lock().remove(&waiter);
                refuse(GroupError::NotCoordinator)
            }
        }
    }

    /// SyncGroup: resolves when the member's assignment is known.
    pub async fn sync(
        self: &Arc<Self>,
        node: &Arc<Node>,
        group_id: &str,
        req: SyncRequest,
    ) -> SyncReply {
        let now = crate::util::now_ms();
        match self.check_member_group(group_id) {
            Ok(()) => {}
            // The rebalance in progress was lost with the old state: make the member rejoin
            // (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here).
            Err(GroupError::CoordinatorLoadInProgress) => {
                return SyncReply::error(GroupError::RebalanceInProgress)
            }
            Err(e) => return SyncReply::error(e),
        }
        if let Some(reply) = self.classic_sync_consumer(node, group_id, &req) {
            return reply;
        }
        let Some(group) = self.group(group_id) else {
            return SyncReply::error(GroupError::UnknownMemberId);
        };
        let waiter = self.waiter();
        let (tx, rx) = oneshot::channel();
        self.sync_waiters.lock().insert(waiter, tx);
        self.operate(node, &group, now, |g| ((), g.sync(req, waiter, now)));
        match wait_or_shutdown(node, rx).await {
            Some(reply) => reply,
            None => {
                self.sync_waiters.lock().remove(&waiter);
                SyncReply::error(GroupError::NotCoordinator)
            }
        }
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), GroupError> {
        match self.check_member_group(group_id) {
            Ok(()) => {}
            // The group is loading: answer blindly, as Kafka does.
            Err(GroupError::CoordinatorLoadInProgress) => return Ok(()),
            Err(e) => return Err(e),
        }
        if let Some(result) =
            self.classic_heartbeat_consumer(group_id, member_id, group_instance_id, generation_id)
        {
            return result;
        }
        let group = self.group(group_id).ok_or(GroupError::UnknownMemberId)?;
        let mut g = group.lock();
        // A heartbeat only moves deadlines later: the scheduled timer stays valid.
        g.heartbeat(
            member_id,
            group_instance_id,
            generation_id,
            crate::util::now_ms(),
        )
    }

    /// LeaveGroup for a batch of members (member id, group.instance.id).
    pub fn leave(
        self: &Arc<Self>,
        node: &Arc<Node>,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        self.check_member_group(group_id)?;
        // An unknown group has none of the members: Kafka answers each of them
        // UNKNOWN_MEMBER_ID (the request itself succeeds from v3).
        let Some(group) = self.group(group_id) else {
            return Ok(members
                .iter()
                .map(|_| Err(GroupError::UnknownMemberId))
                .collect());
        };
        let now = crate::util::now_ms();
        self.operate(node, &group, now, |g| {
            match g.leave(members, &self.cfg, now) {
                Ok((results, fx)) => (Ok(results), fx),
                Err(e) => (Err(e), Effects::default()),
            }
        })
    }

    /// OffsetCommit: the offsets are written to `__consumer_offsets` before this returns.
    pub async fn commit_offsets(
        &self,
        node: &Node,
        req: CommitRequest,
    ) -> Result<PartitionResults, GroupError> {
        self.store_offsets(node, req, None).await
    }

    /// TxnOffsetCommit: the offsets are written to `__consumer_offsets` as a transactional
    /// batch of `producer` (id, epoch) and stay pending until the transaction ends
    /// ([`complete_txn`](Self::complete_txn)).
    pub async fn commit_txn_offsets(
        &self,
        node: &Node,
        req: CommitRequest,
        producer: (i64, i16),
    ) -> Result<PartitionResults, GroupError> {
        self.store_offsets(node, req, Some(producer)).await
    }

    async fn store_offsets(
        &self,
        node: &Node,
        req: CommitRequest,
        producer: Option<(i64, i16)>,
    ) -> Result<PartitionResults, GroupError> {
        if producer.is_some() {
            self.check_member_group(&req.group_id)?;
        } else {
            self.check_loaded(&req.group_id)?;
        }
        let now = crate::util::now_ms();
        // A KIP-848 consumer group checks its members' epochs; its offsets holder is created
        // on the first commit.
        let consumer = match self.validate_consumer_commit(
            &req.group_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            producer.is_some(),
            req.api_version,
        ) {
            Some(Err(e)) => return Err(e),
            Some(Ok(c)) => Some(c),
            None => None,
        };
        let group = match self.group(&req.group_id) {
            Some(g) => g,
            None if consumer.is_some() => self.get_or_create(&req.group_id, now)?,
            // Consumers that manage partitions themselves (and admin tools) commit with
            // generation -1: their "simple" group is created on the first commit; Kafka
            // creates the group of a transactional commit in any case.
            None if req.generation_id < 0 || producer.is_some() => {
                self.get_or_create(&req.group_id, now)?
            }
            // KIP-848 era clients (v9+) learn that the group is gone; older ones get the
            // error they always got.
            None if req.api_version >= 9 => return Err(GroupError::GroupIdNotFound),
            None => return Err(GroupError::IllegalGeneration),
        };
        let expire_timestamp_ms =
            (req.retention_time_ms >= 0).then(|| now.saturating_add(req.retention_time_ms));
        // The offsets are the group's as soon as they are in its log, as a load to the log end
        // would make them; the commit is answered once the in-sync replicas have them too.
        let mut written = None;
        let mut results = {
            let mut g = group.lock();
            match producer {
                _ if consumer.is_some() => {}
                None => g.validate_offset_commit(
                    &req.member_id,
                    req.group_instance_id.as_deref(),
                    req.generation_id,
                    now,
                )?,
                Some(_) => g.validate_txn_offset_commit(
                    &req.member_id,
                    req.group_instance_id.as_deref(),
                    req.generation_id,
                )?,
            }
            // Checked (and logged) once, when the request holds a partition new to the group.
            let mut budget: Option<Result<(), GroupError>> = None;
            let mut results: PartitionResults = Vec::with_capacity(req.topics.len());
            let mut records = Vec::new();
            for (topic, partitions) in &req.topics {
                let mut tr = Vec::with_capacity(partitions.len());
                let topic_id = node.topics.get(topic).map(|t| t.id);
                for p in partitions {
                    let metadata = p.metadata.clone().unwrap_or_default();
                    let allowed = match &consumer {
                        Some(c) => c.check(topic_id, p.partition),
                        None => Ok(()),
                    };
                    let r = if metadata.len() > self.offset_metadata_max_bytes {
                        Err(GroupError::OffsetMetadataTooLarge)
                    } else if let Err(e) = allowed {
                        Err(e)
                    } else if g.offsets.get(topic, p.partition).is_none()
                        && budget
                            .get_or_insert_with(|| {
                                self.check_budget(&req.group_id, "offsets of new partitions")
                            })
                            .is_err()
                    {
                        Err(GroupError::CoordinatorNotAvailable)
                    } else {
                        records.push(CoordinatorRecord::offset_commit(
                            &req.group_id,
                            topic,
                            p.partition,
                            OffsetCommitValue {
                                offset: p.offset,
                                leader_epoch: p.leader_epoch,
                                metadata,
                                commit_timestamp_ms: now,
                                expire_timestamp_ms,
                            },
                        ));
                        Ok(())
                    };
                    tr.push((p.partition, r));
                }
                results.push((topic.clone(), tr));
            }
            if !records.is_empty() {
                match self.append_for(node, &req.group_id, &records, now, producer) {
                    Ok(w) => {
                        written = Some(w);
                        let before = g.bytes();
                        for r in records {
                            if let (
                                records::RecordKey::OffsetCommit {
                                    topic, partition, ..
                                },
                                Some(records::RecordValue::OffsetCommit(v)),
                            ) = (r.key, r.value)
                            {
                                match producer {
                                    None => g.offsets.commit(&topic, partition, v),
                                    Some((pid, _)) => g.pending_txn.add(pid, &topic, partition, v),
                                }
                            }
                        }
                        if let Some((pid, _)) = producer {
                            self.txn_groups
                                .lock()
                                .entry(pid)
                                .or_default()
                                .insert(req.group_id.clone());
                        }
                        self.account(before, g.bytes());
                    }
                    Err(e) => fail_written(&mut results, e),
                }
            }
            results
        };
        if let Some(w) = written {
            if let Err(e) = replicated(&req.group_id, w).await {
                fail_written(&mut results, e);
            }
        }
        Ok(results)
    }

    /// OffsetFetch: the committed offset of each partition asked for (`None`: every
    /// partition with an offset).
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
    ) -> Result<FetchedOffsets, GroupError> {
        self.check_loaded(group_id)?;
        let group = self.group(group_id);
        let g = group.as_ref().map(|g| g.lock());
        let g = g.as_deref().filter(|g| g.state() != GroupState::Dead);
        Ok(match topics {
            Some(topics) => topics
                .into_iter()
                .map(|(topic, partitions)| {
                    let ps = partitions
                        .into_iter()
                        .map(|p| (p, g.and_then(|g| g.offsets.get(&topic, p).cloned())))
                        .collect();
                    (topic, ps)
                })
                .collect(),
            None => {
                let mut out: FetchedOffsets = Vec::new();
                if let Some(g) = g {
                    for (topic, p, v) in g.offsets.iter() {
                        match out.last_mut() {
                            Some((t, ps)) if t == topic => ps.push((p, Some(v.clone()))),
                            _ => out.push((topic.to_string(), vec![(p, Some(v.clone()))])),
                        }
                    }
                }
                out
            }
        })
    }

    pub fn describe(&self, group_id: &str) -> Result<GroupDescription, GroupError> {
        self.check_loaded(group_id)?;
        let group = self.group(group_id).ok_or(GroupError::GroupIdNotFound)?;
        let g = group.lock();
        if g.state() == GroupState::Dead {
            return Err(GroupError::GroupIdNotFound);
        }
        Ok(g.describe())
    }

    /// ListGroups; COORDINATOR_LOAD_IN_PROGRESS while any partition is loading.
    pub fn list(&self) -> Result<Vec<ListedGroup>, GroupError> {
        if !self.all_loaded() {
            return Err(GroupError::CoordinatorLoadInProgress);
        }
        let handles: Vec<GroupHandle> = self.groups.read().values().cloned().collect();
        let mut out: Vec<ListedGroup> = handles
            .iter()
            .filter_map(|h| {
                let g = h.lock();
                let holder =
                    self.is_consumer_group(&g.group_id) || self.is_streams_group(&g.group_id);
                (g.state() != GroupState::Dead && !holder).then(|| ListedGroup {
                    group_id: g.group_id.clone(),
                    protocol_type: g.protocol_type().unwrap_or_default().to_string(),
                    state: g.state(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Ok(out)
    }

    /// DeleteGroups: an empty group's offsets and metadata are tombstoned, then forgotten.
    pub async fn delete_group(&self, node: &Node, group_id: &str) -> Result<(), GroupError> {
        self.check_loaded(group_id)?;
        // A consumer group (KIP-848) must be empty; its records go with its offsets'.
        let consumer = match self.consumer_group_tombstones(group_id)? {
            None => self.streams_group_tombstones(group_id)?,
            c => c,
        };
        let group = match (self.group(group_id), &consumer) {
            (Some(g), _) => g,
            (None, Some(_)) => self.get_or_create(group_id, crate::util::now_ms())?,
            (None, None) => return Err(GroupError::GroupIdNotFound),
        };
        let now = crate::util::now_ms();
        let written = {
            let mut g = group.lock();
            g.validate_delete()?;
            let mut records: Vec<CoordinatorRecord> = g
                .offsets
                .iter()
                .map(|(t, p, _)| CoordinatorRecord::offset_tombstone(group_id, t, p))
                .collect();
            records.extend(consumer.iter().flatten().cloned());
            records.push(CoordinatorRecord::group_tombstone(group_id));
            let written = self.append(node, group_id, &records, now)?;
            g.mark_dead(now);
            self.drop_group(&g);
            written
        };
        if consumer.is_some() {
            self.forget_consumer_group(group_id); // after the classic group's lock
            self.forget_streams_group(group_id);
        }
        replicated(group_id, written).await
    }

    /// OffsetDelete: removes committed offsets of topics the group does not consume.
    pub async fn delete_offsets(
        &self,
        node: &Node,
        group_id: &str,
        topics: Vec<(String, Vec<i32>)>,
    ) -> Result<PartitionResults, GroupError> {
        self.check_member_group(group_id)?;
        let group = self.group(group_id).ok_or(GroupError::GroupIdNotFound)?;
        let now = crate::util::now_ms();
        // Before the classic group's lock: a consumer group's comes first (see `downgrade`), and
        // a streams group's: the topics its topology reads while it has members.
        let consumer_topics: BTreeSet<String> = self
            .with_consumer_group(group_id, |c| {
                c.subscribed_topics().map(String::from).collect()
            })
            .or_else(|| {
                self.with_streams_group(group_id, |s| {
                    topics
                        .iter()
                        .filter(|(t, _)| s.is_subscribed_to_topic(t))
                        .map(|(t, _)| t.clone())
                        .collect()
                })
            })
            .unwrap_or_default();
        let (mut results, written) = {
            let mut g = group.lock();
            g.validate_offset_delete()?;
            let mut results: PartitionResults = Vec::with_capacity(topics.len());
            let mut records = Vec::new();
            for (topic, partitions) in topics {
                let subscribed =
                    g.is_subscribed_to_topic(&topic) || consumer_topics.contains(&topic);
                let mut tr = Vec::with_capacity(partitions.len());
                for p in partitions {
                    if subscribed {
                        tr.push((p, Err(GroupError::GroupSubscribedToTopic)));
                        continue;
                    }
                    if g.offsets.get(&topic, p).is_some() {
                        records.push(CoordinatorRecord::offset_tombstone(group_id, &topic, p));
                    }
                    tr.push((p, Ok(())));
                }
                results.push((topic, tr));
            }
            let mut written = None;
            if !records.is_empty() {
                written = Some(self.append(node, group_id, &records, now)?);
                let before = g.bytes();
                for r in records {
                    if let records::RecordKey::OffsetCommit {
                        topic, partition, ..
                    } = r.key
                    {
                        g.offsets.remove(&topic, partition);
                    }
                }
                self.account(before, g.bytes());
            }
            (results, written)
        };
        if let Some(w) = written {
            if let Err(e) = replicated(group_id, w).await {
                fail_written(&mut results, e);
            }
        }
        Ok(results)
    }

    // ---- transactions ----

    /// A transaction marker of `producer_id` landed on partition `offsets_partition` of
    /// `__consumer_offsets` (Kafka's `scheduleHandleTxnCompletion`): on COMMIT the producer's
    /// pending offsets of the groups in that partition become their committed offsets (a
    /// transactional commit replaces the offset in place), on ABORT they are dropped.
    pub fn complete_txn(&self, producer_id: i64, offsets_partition: i32, commit: bool) {
        let ids: Vec<String> = {
            let mut index = self.txn_groups.lock();
            let Some(groups) = index.get_mut(&producer_id) else {
                return;
            };
            let (here, elsewhere): (BTreeSet<String>, BTreeSet<String>) = std::mem::take(groups)
                .into_iter()
                .partition(|g| self.partition_for(g) == offsets_partition);
            if elsewhere.is_empty() {
                index.remove(&producer_id);
            } else {
                *groups = elsewhere;
            }
            here.into_iter().collect()
        };
        for id in ids {
            let Some(group) = self.group(&id) else {
                continue;
            };
            let mut g = group.lock();
            let before = g.bytes();
            if let Some(offsets) = g.pending_txn.take(producer_id) {
                if commit {
                    for (topic, partition, v) in offsets.iter() {
                        g.offsets.commit(topic, partition, v.clone());
                    }
                }
                tracing::debug!(group = %id, producer_id, commit, "transactional offsets completed");
            }
            self.account(before, g.bytes());
        }
    }

    /// The partitions of `topics` whose offsets an open transaction is about to change
    /// (OffsetFetch with `require_stable` answers UNSTABLE_OFFSET_COMMIT for them).
    pub fn unstable_partitions(
        &self,
        group_id: &str,
        topics: &FetchedOffsets,
    ) -> Vec<(String, i32)> {
        let Some(group) = self.group(group_id) else {
            return Vec::new();
        };
        let g = group.lock();
        if g.pending_txn.is_empty() {
            return Vec::new();
        }
        topics
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |(p, _)| (t.clone(), *p)))
            .filter(|(t, p)| g.pending_txn.is_pending(t, *p))
            .collect()
    }

    // ---- background work ----

    /// Follows the leadership of `__consumer_offsets` partitions (Kafka's `onElection` and
    /// `onResignation`): loads the groups of a partition this broker now leads and forgets
    /// those of one it no longer leads. Called whenever the metadata image changed here, the
    /// first time before the broker serves, so a restarted broker has its groups back (and
    /// answers COORDINATOR_LOAD_IN_PROGRESS while a partition loads).
    pub fn follow_leadership(&self, node: &Node, shares: &crate::share::ShareCoordinator) {
        let Some(topic) = node.topics.get(OFFSETS_TOPIC) else {
            return;
        };
        // Keys hash over the topic's own partition count, whatever the configuration says now.
        let count = topic
            .partition_count
            .clamp(1, self.coordinating.len() as i32);
        self.partitions.store(count, Ordering::Release);
        let (mut taken, mut given_up, mut groups_loaded, mut groups_unloaded) = (0, 0, 0, 0);
        for (index, state) in self.coordinating[..count as usize].iter().enumerate() {
            let led = topic.led_partition(index as i32).ok();
            match (led, state.load(Ordering::Acquire)) {
                (Some(p), NOT_COORDINATOR) => {
                    if state
                        .compare_exchange(
                            NOT_COORDINATOR,
                            LOADING,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        groups_loaded += self.load_partition(node, p, shares);
                        state.store(LOADED, Ordering::Release);
                        taken += 1;
                    }
                }
                (None, LOADED) => {
                    if state
                        .compare_exchange(LOADED, LOADING, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        groups_unloaded += self.unload_partition(index as i32, shares);
                        state.store(NOT_COORDINATOR, Ordering::Release);
                        given_up += 1;
                    }
                }
                _ => {}
            }
        }
        if taken > 0 {
            tracing::info!(
                partitions = taken,
                groups = groups_loaded,
                "now coordinating the groups of more partitions of {OFFSETS_TOPIC}"
            );
        }
        if given_up > 0 {
            tracing::info!(
                partitions = given_up,
                groups = groups_unloaded,
                "no longer coordinating the groups of some partitions of {OFFSETS_TOPIC}"
            );
        }
    }

    /// Replays one partition into the coordinator; returns the groups it held.
    fn load_partition(
        &self,
        node: &Node,
        p: &Partition,
        shares: &crate::share::ShareCoordinator,
    ) -> usize {
        let now = crate::util::now_ms();
        match load::load_partition(p) {
            Ok(mut loaded) => {
                if loaded.skipped > 0 {
                    tracing::warn!(partition = %p.tp, skipped = loaded.skipped, "records of __consumer_offsets could not be read");
                }
                let share_groups = std::mem::take(&mut loaded.share_groups);
                let share_count = share_groups.len();
                shares.load_groups(share_groups);
                let consumer = std::mem::take(&mut loaded.consumer_groups.groups);
                let consumer_count = self.install_consumer_groups(node, consumer, now)
                    + self.install_streams_groups(node, loaded.streams_groups.take(), now);
                self.install(loaded, now) + share_count + consumer_count
            }
            Err(e) => {
                tracing::error!(partition = %p.tp, "cannot load groups: {e}");
                0
            }
        }
    }

    /// Forgets the groups of partition `index` (another broker coordinates them now); their
    /// members' waiting requests are answered NOT_COORDINATOR when they time out or retry.
    fn unload_partition(&self, index: i32, shares: &crate::share::ShareCoordinator) -> usize {
        let share_count = shares.unload_groups(|g| self.partition_for(g) == index)
            + self.unload_consumer_groups(index)
            + self.unload_streams_groups(index);
        let gone: Vec<GroupHandle> = {
            let mut groups = self.groups.write();
            let ids: Vec<String> = groups
                .keys()
                .filter(|g| self.partition_for(g) == index)
                .cloned()
                .collect();
            ids.iter().filter_map(|id| groups.remove(id)).collect()
        };
        for g in &gone {
            let g = g.lock();
            self.account(g.bytes(), 0);
            self.timers.lock().set(&g.group_id, None);
        }
        gone.len() + share_count
    }

    fn install(&self, mut loaded: load::LoadedPartition, now_ms: i64) -> usize {
        let mut ids: BTreeSet<String> = loaded.groups.keys().cloned().collect();
        ids.extend(loaded.offsets.keys().cloned());
        let mut pending: HashMap<String, PendingTxnOffsets> = HashMap::new();
        for (pid, entries) in std::mem::take(&mut loaded.pending) {
            for (group, topic, partition, v) in entries {
                self.txn_groups
                    .lock()
                    .entry(pid)
                    .or_default()
                    .insert(group.clone());
                pending
                    .entry(group)
                    .or_default()
                    .add(pid, &topic, partition, v);
            }
        }
        ids.extend(pending.keys().cloned());
        let count = ids.len();
        for id in ids {
            let offsets = loaded.offsets.remove(&id).unwrap_or_default();
            let g = match loaded.groups.remove(&id) {
                Some(value) => {
                    let (g, fx) = Group::loaded(&id, value, offsets, &self.cfg, now_ms);
                    for e in fx.events {
                        tracing::info!(group = %id, "{e}");
                    }
                    g
                }
                None => {
                    let mut g = Group::new(&id, now_ms);
                    g.offsets = offsets;
                    g
                }
            };
            let mut g = g;
            g.pending_txn = pending.remove(&id).unwrap_or_default();
            self.account(0, g.bytes());
            // In the map before its timer is set: the timer task looks groups up by id.
            let handle = Arc::new(Mutex::new(g));
            self.groups.write().insert(id, handle.clone());
            self.schedule(&handle.lock());
        }
        count
    }

    /// Writes that `group_id` is a share group (KIP-932), at `epoch`, or with `None` that it
    /// is no more, to its partition of `__consumer_offsets`, and waits until it is replicated:
    /// a coordinator that takes the partition over knows the id is a share group's.
    pub async fn write_share_group(
        &self,
        node: &Node,
        group_id: &str,
        epoch: Option<i32>,
    ) -> Result<(), GroupError> {
        let now = crate::util::now_ms();
        let record = CoordinatorRecord::share_group(group_id, epoch);
        let write = self.append(node, group_id, &[record], now)?;
        replicated(group_id, write).await
    }

    /// Fires group deadlines as they come due, until shutdown.
    pub async fn run_timers(self: Arc<Self>, node: Arc<Node>) {
        loop {
            let now = crate::util::now_ms();
            let classic = self.timers.lock().queue.first().map(|(d, _)| *d);
            let next = [
                classic,
                self.next_consumer_deadline(),
                self.next_streams_deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            // At least a millisecond, Kafka's timer tick: requests already on their way to a
            // group whose deadline is due (joins of a new group with no initial delay) get in
            // first.
            let wait_ms = match next {
                Some(d) => (d - now).clamp(1, 60_000) as u64,
                None => 60_000,
            };
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(wait_ms)) => {}
                _ = self.timer_wake.notified() => {}
            }
            let now = crate::util::now_ms();
            let due = self.timers.lock().pop_due(now);
            for id in due {
                let Some(group) = self.group(&id) else {
                    continue;
                };
                self.operate(&node, &group, now, |g| ((), g.tick(&self.cfg, now)));
            }
            self.tick_consumer_groups(&node, now);
            self.tick_streams_groups(&node, now);
        }
    }
}

/// Every partition result that was written fails with `e` (its write did not replicate).
fn fail_written(results: &mut PartitionResults, e: GroupError) {
    for (_, tr) in results.iter_mut() {
        for (_, r) in tr.iter_mut() {
            if r.is_ok() {
                *r = Err(e);
            }
        }
    }
}

/// Waits for a parked request's answer; `None` when the broker shuts down first (clients
/// then look for the coordinator again).
async fn wait_or_shutdown<T>(node: &Node, rx: oneshot::Receiver<T>) -> Option<T> {
    let mut shutdown = node.shutdown_signal();
    tokio::select! {
        r = rx => r.ok(),
        _ = shutdown.wait_for(|s| *s) => None,
    }
}

#[cfg(test)]
mod coordinating_tests {
    use super::*;

    #[test]
    fn a_group_is_served_only_where_its_partition_is_led_and_loaded() {
        let config = crate::config::test_support::broker(&[("offsets.topic.num.partitions", "4")]);
        let c = GroupCoordinator::new(&config, None);
        let p = c.partition_for("g") as usize;
        assert_eq!(c.check_loaded("g"), Err(GroupError::NotCoordinator));
        c.coordinating[p].store(LOADING, Ordering::Release);
        assert_eq!(
            c.check_loaded("g"),
            Err(GroupError::CoordinatorLoadInProgress)
        );
        assert!(!c.all_loaded(), "ListGroups waits while a partition loads");
        c.coordinating[p].store(LOADED, Ordering::Release);
        assert_eq!(c.check_loaded("g"), Ok(()));
        assert!(c.all_loaded());
        assert_eq!(c.check_member_group(""), Err(GroupError::InvalidGroupId));
    }
}
