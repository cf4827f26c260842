//! Share groups (KIP-932): queue semantics on Kafka topics. Members of a share group take
//! records from the same partitions; each record is acquired by one member under a time lock,
//! acknowledged one by one, and redelivered when released, when its lock expires or when its
//! member leaves, until its delivery count reaches the group's limit and it is archived (and
//! dead-lettered, KIP-1191, when the group names a dead-letter topic).
//!
//! The state machines are sans-IO: [`group::ShareGroup`] (membership, on the group's
//! coordinator: the leader of its `__consumer_offsets` partition, as for classic groups) and
//! [`partition::SharePartition`] (delivery state, on the leader of the topic partition, which
//! serves ShareFetch and ShareAcknowledge). This module holds them, the members' share
//! sessions, the timers (member sessions, record locks), and reads the group configs.
//!
//! Bounds: `group.share.max.size` members per group, `group.share.partition.max.record.locks`
//! records in flight per share-partition, one share session per member and broker and
//! `group.share.max.share.sessions` per broker (unused ones dropped after
//! [`SESSION_IDLE_MS`]).

pub mod admin;
pub mod dlq;
pub mod group;
pub mod partition;
pub mod persister;
pub mod state_store;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use parking_lot::Mutex;
use samsa_cluster::metadata::image::CONFIG_RESOURCE_GROUP;
use samsa_storage::AbortedTxn;
use tokio::sync::Notify;
use uuid::Uuid;

use self::group::{ShareGroup, TopicMeta};
use self::partition::{Archived, BatchSpan, ShareLimits, SharePartition};
use self::state_store::{Snapshot, StateStore};
use crate::config::defs::group_def;
use crate::node::Node;

/// A share-partition's identity: group, topic and partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShareKey {
    pub group: Arc<str>,
    pub topic_id: Uuid,
    pub partition: i32,
}

/// A share-partition and what its persisted state needs.
pub struct ShareState {
    pub sp: SharePartition,
    /// The snapshot epoch of the last state written (0: none yet).
    snapshot_epoch: i32,
    state_epoch: i32,
    created_ms: i64,
    /// See [`Snapshot::dlq_scan_from`].
    pub dlq_scan_from: Option<(i32, i64)>,
    /// The topic partition's leader epoch when this state was opened: under another
    /// leadership it is stale (another leader may have changed the persisted state since).
    leader_epoch: i32,
    /// The group has had no share session on this broker since (Kafka's share-partition
    /// manager drops a group's share-partitions when it becomes empty there): its persisted
    /// state may have been changed meanwhile (AlterShareGroupOffsets, DeleteShareGroupOffsets
    /// on the group coordinator), so the next fetch reads it again. Acknowledgements still
    /// arriving with the closes of the last sessions apply to this copy and are written.
    unused: bool,
}

impl std::ops::Deref for ShareState {
    type Target = SharePartition;
    fn deref(&self) -> &SharePartition {
        &self.sp
    }
}

impl std::ops::DerefMut for ShareState {
    fn deref_mut(&mut self) -> &mut SharePartition {
        &mut self.sp
    }
}

pub type SharePartitionHandle = Arc<Mutex<ShareState>>;

/// A member's share session on this broker (KIP-932): the partitions it fetches and the epoch
/// its next request must carry.
#[derive(Debug, Default)]
pub struct ShareSession {
    pub epoch: i32,
    pub partitions: BTreeSet<(Uuid, i32)>,
    /// When a request last used it: a session unused for [`SESSION_IDLE_MS`] is dropped (its
    /// member is gone without closing it; its records' locks expire on their own).
    pub used_ms: i64,
}

/// Continues the share session in `sessions` under `key` with a request at epoch `epoch`
/// (positive): SHARE_SESSION_NOT_FOUND without one, INVALID_SHARE_SESSION_EPOCH for another
/// epoch; else the session's next epoch is set and it counts as used now.
pub fn continue_session<'a>(
    sessions: &'a mut HashMap<(String, String), ShareSession>,
    key: &(String, String),
    epoch: i32,
) -> Result<&'a mut ShareSession, (ResponseError, String)> {
    let Some(s) = sessions.get_mut(key) else {
        return Err((
            ResponseError::ShareSessionNotFound,
            "no such share session".into(),
        ));
    };
    if s.epoch != epoch {
        return Err((
            ResponseError::InvalidShareSessionEpoch,
            format!("share session epoch {epoch}, expected {}", s.epoch),
        ));
    }
    s.epoch = if s.epoch == i32::MAX { 1 } else { s.epoch + 1 };
    s.used_ms = crate::util::now_ms();
    Ok(s)
}

/// How long a share session may go unused (twice the longest member session timeout Kafka
/// allows by default, `group.share.max.session.timeout.ms`).
pub const SESSION_IDLE_MS: i64 = 120_000;

/// A share group's effective configs: its overrides, else the broker's defaults.
#[derive(Debug, Clone)]
pub struct GroupSettings {
    pub session_ms: i64,
    pub heartbeat_ms: i32,
    pub limits: ShareLimits,
    pub earliest: bool,
    pub read_committed: bool,
    pub dlq_topic: Option<String>,
    pub dlq_copy: bool,
    pub max_size: usize,
}

/// Counters per group, for metrics and describe.
#[derive(Debug, Default, Clone, Copy)]
pub struct GroupCounters {
    pub archived: u64,
    pub dead_lettered: u64,
    /// Archived records whose dead letter could not be written.
    pub dead_letter_failed: u64,
}

#[derive(Default)]
pub struct ShareCoordinator {
    groups: Mutex<HashMap<String, ShareGroup>>,
    partitions: Mutex<HashMap<ShareKey, SharePartitionHandle>>,
    sessions: Mutex<HashMap<(String, String), ShareSession>>,
    counters: Mutex<HashMap<String, GroupCounters>>,
    store: StateStore,
    dead_letters: dlq::DeadLetters,
    /// Woken when records become acquirable without an append (released, lock expired,
    /// member gone), for long-polling ShareFetches.
    released: Notify,
}

/// The cluster's finalized `share.version`: 0 when the metadata log has none (a cluster
/// formatted before Samsa knew the feature, until `kafka-features upgrade`).
pub fn share_version(image: &samsa_cluster::metadata::MetadataImage) -> i16 {
    image
        .features()
        .get(samsa_cluster::controller::SHARE_VERSION_FEATURE)
        .copied()
        .unwrap_or(0)
}

/// Whether share groups are on: `share.version` 1 or above (Kafka's
/// `ShareVersion.supportsShareGroups`). Below it the share-group APIs answer
/// UNSUPPORTED_VERSION, as Kafka 4.4's do; `group.coordinator.rebalance.protocols` has no say
/// (see [`listed_in_protocols`]).
pub fn enabled(image: &samsa_cluster::metadata::MetadataImage) -> bool {
    share_version(image) >= 1
}

/// Whether dead letters are written: `share.version` 2 or above (Kafka's
/// `ShareVersion.supportsShareGroupDLQ`); below it a group's `errors.deadletterqueue.topic.name`
/// is kept but archived records are archived without a dead letter, as on Kafka 4.4.
pub fn dead_letters_enabled(image: &samsa_cluster::metadata::MetadataImage) -> bool {
    share_version(image) >= 2
}

/// Whether `group.coordinator.rebalance.protocols` lists `share`: accepted, as Kafka 4.4 accepts
/// it, with its deprecation warning at start, and without effect.
pub fn listed_in_protocols(config: &crate::config::BrokerConfig) -> bool {
    config
        .get("group.coordinator.rebalance.protocols")
        .unwrap_or_default()
        .split(',')
        .any(|p| p.trim().eq_ignore_ascii_case("share"))
}

impl ShareCoordinator {
    pub fn new() -> ShareCoordinator {
        ShareCoordinator::default()
    }

    /// The effective configs of `group`.
    pub fn settings(&self, node: &Node, group: &str) -> GroupSettings {
        let cfg = node.dynamic_configs.effective();
        let image = node.controller.image();
        let overrides = crate::config::dynamic::layer(&image, CONFIG_RESOURCE_GROUP, group);
        let get = |name: &str| {
            let def = group_def(name).expect("a group config Samsa defines");
            crate::config::group::effective(&cfg, &overrides, def).0
        };
        let int = |name: &str, default: i64| get(name).trim().parse::<i64>().unwrap_or(default);
        // Kafka's `isDLQEnabledForGroup`: the group names a topic and share.version allows it.
        let dlq = match dead_letters_enabled(&image) {
            true => get("errors.deadletterqueue.topic.name").trim().to_string(),
            false => String::new(),
        };
        GroupSettings {
            session_ms: int("share.session.timeout.ms", 45_000),
            heartbeat_ms: int("share.heartbeat.interval.ms", 5_000) as i32,
            limits: ShareLimits {
                lock_ms: int("share.record.lock.duration.ms", 30_000).max(1),
                delivery_limit: int("share.delivery.count.limit", 5).clamp(1, i16::MAX as i64)
                    as i16,
                max_in_flight: cfg.long("group.share.partition.max.record.locks").max(1) as usize,
                dead_letter: !dlq.is_empty(),
            },
            earliest: get("share.auto.offset.reset").eq_ignore_ascii_case("earliest"),
            read_committed: get("share.isolation.level").eq_ignore_ascii_case("read_committed"),
            dlq_topic: (!dlq.is_empty()).then_some(dlq),
            dlq_copy: get("errors.deadletterqueue.copy.record.enable").eq_ignore_ascii_case("true"),
            max_size: cfg.long("group.share.max.size").max(1) as usize,
        }
    }

    /// This broker's share coordinator store (the partitions of `__share_group_state` it leads).
    pub fn store(&self) -> &StateStore {
        &self.store
    }

    // ---- groups ----

    /// Whether `group` is a share group here.
    pub fn has_group(&self, group: &str) -> bool {
        self.groups.lock().contains_key(group)
    }

    /// Runs `f` on the share group `group`, created when `create`.
    pub fn with_group<R>(
        &self,
        group: &str,
        create: bool,
        f: impl FnOnce(&mut ShareGroup) -> R,
    ) -> Option<R> {
        let mut groups = self.groups.lock();
        if !groups.contains_key(group) {
            if !create {
                return None;
            }
            groups.insert(group.to_string(), ShareGroup::new(group));
        }
        Some(f(groups.get_mut(group).expect("inserted above")))
    }

    /// The share groups here, by id.
    pub fn group_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.groups.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Share groups read back from `__consumer_offsets` (this broker now coordinates their
    /// partition): known again, without members (those join again), at their last epoch.
    pub fn load_groups(&self, groups: HashMap<String, i32>) {
        let mut map = self.groups.lock();
        for (id, epoch) in groups {
            map.entry(id.clone())
                .or_insert_with(|| ShareGroup::restored(&id, epoch));
        }
    }

    /// Forgets the share groups `owned` selects (another broker coordinates them now); returns
    /// how many.
    pub fn unload_groups(&self, owned: impl Fn(&str) -> bool) -> usize {
        let mut map = self.groups.lock();
        let before = map.len();
        map.retain(|id, _| !owned(id));
        before - map.len()
    }

    /// Every share group this broker knows: coordinated here, or with share-partitions or
    /// counters here.
    pub fn known_groups(&self) -> Vec<String> {
        let mut ids: BTreeSet<String> = self.groups.lock().keys().cloned().collect();
        ids.extend(self.counters.lock().keys().cloned());
        ids.extend(self.partitions.lock().keys().map(|k| k.group.to_string()));
        ids.into_iter().collect()
    }

    /// A topic of the metadata as share groups see it.
    pub fn topic_meta(node: &Node, name: &str) -> Option<TopicMeta> {
        node.topics.get(name).map(|t| TopicMeta {
            id: t.id,
            partitions: t.partition_count,
        })
    }

    /// `member` left `group` with a heartbeat. When it still has a share session here its
    /// records are released when that session closes, after the acknowledgements the close
    /// carries (librdkafka sends the leave and the close at the same time); else now.
    pub async fn member_left(&self, node: &Node, group: &str, member: &str) {
        let has_session = self
            .sessions
            .lock()
            .contains_key(&(group.to_string(), member.to_string()));
        if !has_session {
            self.release_member(node, group, member).await;
        }
    }

    /// Releases every record `member` holds in `group`'s share-partitions here, and writes
    /// the states that changed.
    pub async fn release_member(&self, node: &Node, group: &str, member: &str) {
        for key in self.release_member_now(group, member) {
            if let Err(e) = self.persist(node, &key).await {
                tracing::warn!(group, member, partition = key.partition, "cannot write the share-partition state after releasing a member's records: {e:?}");
            }
        }
        self.mark_unused_if_no_session(group);
    }

    /// Releases `member`'s records; returns the share-partitions that changed.
    fn release_member_now(&self, group: &str, member: &str) -> Vec<ShareKey> {
        let handles: Vec<(ShareKey, SharePartitionHandle)> = self
            .partitions
            .lock()
            .iter()
            .filter(|(k, _)| &*k.group == group)
            .map(|(k, h)| (k.clone(), h.clone()))
            .collect();
        let mut changed = Vec::new();
        for (key, h) in handles {
            let mut st = h.lock();
            let before = st.counts().0;
            let archived = st.release_member(member);
            if st.counts().0 != before {
                changed.push(key.clone());
            }
            drop(st);
            self.archived(&key, archived);
        }
        if !changed.is_empty() {
            self.released.notify_waiters();
        }
        changed
    }

    // ---- share sessions ----

    pub fn sessions(&self) -> parking_lot::MutexGuard<'_, HashMap<(String, String), ShareSession>> {
        self.sessions.lock()
    }

    // ---- share-partitions ----

    /// The share-partition of `key`: from memory, else from its persisted state. A state the
    /// group coordinator initialized without a start offset starts at `start` (the caller's
    /// reading of `share.auto.offset.reset`), written first so that a restart does not read
    /// `latest` again. A share-partition never initialized (no member of the group was
    /// assigned it) is UNKNOWN_SERVER_ERROR, as Kafka's share-partition answers when its state
    /// read fails so.
    pub async fn open_partition(
        &self,
        node: &Node,
        key: &ShareKey,
        limits: ShareLimits,
        leader_epoch: i32,
        start: impl FnOnce() -> i64,
    ) -> Result<SharePartitionHandle, ResponseError> {
        if let Some(h) = self.current(key, leader_epoch) {
            let mut st = h.lock();
            if !st.unused {
                if st.limits() != limits {
                    st.set_limits(limits);
                }
                drop(st);
                return Ok(h);
            }
            drop(st);
            self.drop_partition(key, &h, "unused since its group had no share session here");
        }
        let Some(s) = persister::read(&self.store, node, key).await? else {
            return Err(ResponseError::UnknownServerError);
        };
        let fresh = s.start_offset < 0;
        let st = ShareState {
            sp: if fresh {
                SharePartition::new(start().max(0), limits)
            } else {
                SharePartition::restore(s.start_offset, &s.batches, limits)
            },
            snapshot_epoch: s.snapshot_epoch,
            state_epoch: s.state_epoch,
            created_ms: if fresh || s.create_timestamp == 0 {
                crate::util::now_ms()
            } else {
                s.create_timestamp
            },
            dlq_scan_from: s.dlq_scan_from,
            leader_epoch,
            unused: false,
        };
        let h = {
            let mut parts = self.partitions.lock();
            // Another fetch may have opened it meanwhile: the first one wins.
            if let Some(h) = parts.get(key) {
                return Ok(h.clone());
            }
            let h = Arc::new(Mutex::new(st));
            parts.insert(key.clone(), h.clone());
            h
        };
        if fresh {
            self.persist(node, key).await?;
        }
        // Dead letters that were pending at a crash: written now unless found written.
        let archiving = h.lock().archiving();
        for (offset, delivery_count) in archiving {
            self.dead_letters.push(dlq::Letter {
                key: key.clone(),
                offset,
                delivery_count,
                reason: None,
                recovered: true,
                attempts: 0,
            });
        }
        Ok(h)
    }

    /// Initializes `key`'s state at `state_epoch` unless it has one (the group coordinator, before
    /// it assigns the share-partition).
    pub async fn initialize_state(
        &self,
        node: &Node,
        key: &ShareKey,
        state_epoch: i32,
    ) -> Result<(), ResponseError> {
        persister::initialize(&self.store, node, key, state_epoch).await
    }

    /// Writes `key`'s current state to `__share_group_state` (through its share coordinator)
    /// and waits until it is replicated.
    pub async fn persist(&self, node: &Node, key: &ShareKey) -> Result<(), ResponseError> {
        let Some(h) = self.existing(key) else {
            return Ok(());
        };
        // Only the leader of the topic partition, in the leadership the state was opened in,
        // writes it: a former leader's timers must not overwrite its successor's state.
        let led_epoch = node.topics.get_by_id(&key.topic_id).and_then(|t| {
            t.partition(key.partition)
                .filter(|p| p.is_leader())
                .map(|p| p.leader_epoch())
        });
        let snapshot = {
            let mut st = h.lock();
            if led_epoch != Some(st.leader_epoch) {
                drop(st);
                self.current(key, led_epoch.unwrap_or(-1));
                return Err(ResponseError::NotLeaderOrFollower);
            }
            let (start_offset, batches) = st.snapshot();
            st.snapshot_epoch += 1;
            Snapshot {
                snapshot_epoch: st.snapshot_epoch,
                state_epoch: st.state_epoch,
                leader_epoch: st.leader_epoch,
                start_offset,
                create_timestamp: st.created_ms,
                write_timestamp: crate::util::now_ms(),
                batches,
                dlq_scan_from: st.dlq_scan_from,
            }
        };
        let written = persister::write(&self.store, node, key, snapshot).await;
        if matches!(written, Err(ResponseError::FencedStateEpoch)) {
            // The state was reset (AlterShareGroupOffsets) since this copy was read: it is
            // dropped, and the next fetch reads the new one (Kafka's share-partition manager
            // removes a share-partition fenced so).
            self.drop_partition(key, &h, "fenced: its state epoch was reset");
        }
        written
    }

    /// Forgets the share-partition `h` of `key` (unless another copy replaced it already).
    fn drop_partition(&self, key: &ShareKey, h: &SharePartitionHandle, why: &str) {
        let mut parts = self.partitions.lock();
        if parts.get(key).is_some_and(|held| Arc::ptr_eq(held, h)) {
            parts.remove(key);
            tracing::info!(group = %key.group, topic_id = %key.topic_id, partition = key.partition, "share-partition state dropped: {why}");
        }
    }

    /// When `group` has no share session left on this broker, marks its share-partitions here
    /// to be read again on their next use (see [`ShareState::unused`]); those with records
    /// still being dead-lettered keep theirs until that is done.
    fn mark_unused_if_no_session(&self, group: &str) {
        if self.sessions.lock().keys().any(|(g, _)| g == group) {
            return;
        }
        for (_, h) in self.partitions_of(group) {
            let mut st = h.lock();
            if st.archiving().is_empty() {
                st.unused = true;
            }
        }
    }

    /// The share-partition of `key` as opened under the partition's `leader_epoch`; one opened
    /// under another leadership is dropped (its next use reads the persisted state again).
    pub fn current(&self, key: &ShareKey, leader_epoch: i32) -> Option<SharePartitionHandle> {
        let mut parts = self.partitions.lock();
        let h = parts.get(key)?.clone();
        if h.lock().leader_epoch == leader_epoch {
            return Some(h);
        }
        parts.remove(key);
        tracing::info!(group = %key.group, topic_id = %key.topic_id, partition = key.partition, "share-partition state from an earlier leadership dropped");
        None
    }

    /// The share-partition of `key`, if it exists.
    pub fn existing(&self, key: &ShareKey) -> Option<SharePartitionHandle> {
        self.partitions.lock().get(key).cloned()
    }

    /// Every share-partition of `group`.
    pub fn partitions_of(&self, group: &str) -> Vec<(ShareKey, SharePartitionHandle)> {
        let mut v: Vec<(ShareKey, SharePartitionHandle)> = self
            .partitions
            .lock()
            .iter()
            .filter(|(k, _)| &*k.group == group)
            .map(|(k, h)| (k.clone(), h.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// A future woken when records become acquirable again without an append.
    pub fn released(&self) -> tokio::sync::futures::Notified<'_> {
        self.released.notified()
    }

    pub fn notify_released(&self) {
        self.released.notify_waiters();
    }

    /// Counts what `key`'s share-partition archived, and hands those still archiving to the
    /// dead-letter task.
    pub fn archived(&self, key: &ShareKey, archived: Vec<Archived>) {
        if archived.is_empty() {
            return;
        }
        self.counters
            .lock()
            .entry(key.group.to_string())
            .or_default()
            .archived += archived.len() as u64;
        let dead_letter = self
            .existing(key)
            .is_some_and(|h| h.lock().limits().dead_letter);
        for a in archived {
            tracing::debug!(group = %key.group, topic_id = %key.topic_id, partition = key.partition, offset = a.offset, delivery_count = a.delivery_count, reason = ?a.reason, "share group archived a record");
            if dead_letter {
                self.dead_letters.push(dlq::Letter {
                    key: key.clone(),
                    offset: a.offset,
                    delivery_count: a.delivery_count,
                    reason: Some(a.reason),
                    recovered: false,
                    attempts: 0,
                });
            }
        }
    }

    fn count_dead_lettered(&self, group: &str) {
        self.counters
            .lock()
            .entry(group.to_string())
            .or_default()
            .dead_lettered += 1;
    }

    fn count_dead_letter_failed(&self, group: &str) {
        self.counters
            .lock()
            .entry(group.to_string())
            .or_default()
            .dead_letter_failed += 1;
    }

    pub fn counters(&self, group: &str) -> GroupCounters {
        self.counters.lock().get(group).copied().unwrap_or_default()
    }

    // ---- timers ----

    /// One timer pass at `now_ms`: members whose session expired leave their groups (their
    /// share sessions end), and record locks that expired release their records. Returns the
    /// share-partitions whose state changed.
    pub fn tick(&self, now_ms: i64) -> Vec<ShareKey> {
        let gone: Vec<(String, Vec<String>)> = self
            .groups
            .lock()
            .iter_mut()
            .map(|(id, g)| (id.clone(), g.expire(now_ms)))
            .filter(|(_, m)| !m.is_empty())
            .collect();
        let mut changed = Vec::new();
        let mut left: BTreeSet<String> = BTreeSet::new();
        for (group, members) in gone {
            for m in members {
                tracing::info!(group = %group, member = %m, "share group member's session expired");
                self.sessions.lock().remove(&(group.clone(), m.clone()));
                changed.extend(self.release_member_now(&group, &m));
            }
            left.insert(group);
        }
        self.sessions.lock().retain(|(group, member), s| {
            let keep = now_ms - s.used_ms < SESSION_IDLE_MS;
            if !keep {
                tracing::info!(group = %group, member = %member, "share session unused for {} s: dropped", SESSION_IDLE_MS / 1000);
                left.insert(group.clone());
            }
            keep
        });
        for group in &left {
            self.mark_unused_if_no_session(group);
        }
        let handles: Vec<(ShareKey, SharePartitionHandle)> = self
            .partitions
            .lock()
            .iter()
            .map(|(k, h)| (k.clone(), h.clone()))
            .collect();
        let mut released = false;
        for (key, h) in handles {
            let mut st = h.lock();
            if st.next_deadline().is_some_and(|d| d <= now_ms) {
                let archived = st.expire(now_ms);
                drop(st);
                released = true;
                self.archived(&key, archived);
                changed.push(key);
            }
        }
        if released {
            self.released.notify_waiters();
        }
        changed.sort();
        changed.dedup();
        changed
    }

    /// Runs the timers every 100 ms until shutdown (a lock lasts at least a second), writing
    /// the states they change.
    pub async fn run_timers(self: Arc<Self>, node: Arc<Node>) {
        let mut interval = tokio::time::interval(Duration::from_millis(100));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            for key in self.tick(crate::util::now_ms()) {
                if let Err(e) = self.persist(&node, &key).await {
                    tracing::warn!(group = %key.group, partition = key.partition, "cannot write the share-partition state after its locks expired: {e:?}");
                }
            }
        }
    }
}

/// The batches in `bytes` (whole record batches as the log returned them), with those not to
/// deliver marked: control batches, and for read_committed the batches of `aborted`
/// transactions; and where each lies in `bytes`.
pub fn batch_spans(
    bytes: &[u8],
    aborted: Option<&[AbortedTxn]>,
) -> Vec<(BatchSpan, std::ops::Range<usize>)> {
    const HEADER: usize = 61;
    let mut out = Vec::new();
    let mut at = 0usize;
    while bytes.len() - at >= HEADER {
        let b = &bytes[at..];
        let base = i64::from_be_bytes(b[0..8].try_into().expect("8 bytes"));
        let len = i32::from_be_bytes(b[8..12].try_into().expect("4 bytes"));
        if len < 49 || b.len() < 12 + len as usize {
            break;
        }
        let attributes = i16::from_be_bytes(b[21..23].try_into().expect("2 bytes"));
        let last_delta = i32::from_be_bytes(b[23..27].try_into().expect("4 bytes"));
        let producer_id = i64::from_be_bytes(b[43..51].try_into().expect("8 bytes"));
        let control = attributes & 0x20 != 0;
        let transactional = attributes & 0x10 != 0;
        let last = base + last_delta.max(0) as i64;
        let aborted = transactional
            && aborted.is_some_and(|list| {
                list.iter().any(|t| {
                    t.producer_id == producer_id && t.first_offset <= base && base <= t.last_offset
                })
            });
        let end = at + 12 + len as usize;
        out.push((
            BatchSpan {
                first: base,
                last,
                skip: control || aborted,
            },
            at..end,
        ));
        at = end;
    }
    out
}

/// The part of `bytes` a member needs for what it acquired: from the first batch holding an
/// acquired offset to the last one (batches between stay whole; the client keeps only the
/// acquired offsets).
pub fn acquired_bytes(
    bytes: &bytes::Bytes,
    spans: &[(BatchSpan, std::ops::Range<usize>)],
    acquired: &[partition::Acquired],
) -> bytes::Bytes {
    let (Some(first), Some(last)) = (acquired.first(), acquired.last()) else {
        return bytes::Bytes::new();
    };
    let holds = |s: &BatchSpan| s.last >= first.first && s.first <= last.last;
    let from = spans.iter().find(|(s, _)| holds(s)).map(|(_, r)| r.start);
    let to = spans
        .iter()
        .rev()
        .find(|(s, _)| holds(s))
        .map(|(_, r)| r.end);
    match (from, to) {
        (Some(f), Some(t)) => bytes.slice(f..t),
        _ => bytes::Bytes::new(),
    }
}

/// Why an acknowledgement batch of a partition was refused, as ShareFetch and
/// ShareAcknowledge report it per partition (an empty message is sent as none, as Kafka does
/// for an unknown acknowledge type).
pub fn ack_error(e: &partition::AckError) -> (kafka_protocol::ResponseError, String) {
    use kafka_protocol::ResponseError as E;
    match e {
        partition::AckError::InvalidRecordState(o) => (
            E::InvalidRecordState,
            format!("offset {o} is not acquired by this member"),
        ),
        partition::AckError::InvalidRequest(m) => (E::InvalidRequest, m.to_string()),
        partition::AckError::InvalidType(_) => (E::InvalidRequest, String::new()),
    }
}

impl ShareCoordinator {
    /// Applies `member`'s acknowledgement batches (first, last, types) to `key`'s
    /// share-partition, all or none (Kafka's share-partition rolls back the batches before a
    /// refused one).
    pub fn acknowledge(
        &self,
        key: &ShareKey,
        leader_epoch: i32,
        member: &str,
        batches: &[(i64, i64, &[i8])],
    ) -> Result<(), (kafka_protocol::ResponseError, String)> {
        let Some(h) = self.current(key, leader_epoch) else {
            return Err((
                kafka_protocol::ResponseError::InvalidRecordState,
                "nothing was delivered from this share-partition".into(),
            ));
        };
        let now = crate::util::now_ms();
        let applied = h.lock().acknowledge_all(member, batches, now);
        let archived = applied.map_err(|e| ack_error(&e))?;
        self.archived(key, archived);
        if batches.iter().any(|(_, _, types)| types.contains(&2)) {
            self.released.notify_waiters();
        }
        Ok(())
    }

    /// [`acknowledge`](Self::acknowledge), then the state written: the answer waits for it, as
    /// Kafka's share-partition answers after its persister.
    pub async fn acknowledge_durably(
        &self,
        node: &Node,
        key: &ShareKey,
        leader_epoch: i32,
        member: &str,
        batches: &[(i64, i64, &[i8])],
    ) -> Result<(), (ResponseError, String)> {
        let applied = self.acknowledge(key, leader_epoch, member, batches);
        // Renewals change no persisted state (locks are not persisted).
        let renewals_only = batches
            .iter()
            .all(|(_, _, types)| types.iter().all(|t| *t == partition::RENEW));
        if renewals_only {
            return applied;
        }
        if let Err(e) = self.persist(node, key).await {
            return Err((e, "the acknowledgement could not be written durably".into()));
        }
        applied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &str, partition: i32) -> ShareKey {
        ShareKey {
            group: Arc::from(group),
            topic_id: Uuid::from_u128(1),
            partition,
        }
    }

    fn open(c: &ShareCoordinator, key: &ShareKey) -> SharePartitionHandle {
        let limits = ShareLimits {
            lock_ms: 1000,
            delivery_limit: 5,
            max_in_flight: 10,
            dead_letter: false,
        };
        let h = Arc::new(Mutex::new(ShareState {
            sp: SharePartition::new(0, limits),
            snapshot_epoch: 0,
            state_epoch: 0,
            created_ms: 0,
            dlq_scan_from: None,
            leader_epoch: 0,
            unused: false,
        }));
        c.partitions.lock().insert(key.clone(), h.clone());
        h
    }

    fn session(c: &ShareCoordinator, group: &str, member: &str, used_ms: i64) {
        c.sessions().insert(
            (group.to_string(), member.to_string()),
            ShareSession {
                epoch: 1,
                partitions: BTreeSet::new(),
                used_ms,
            },
        );
    }

    #[test]
    fn a_groups_share_partitions_are_read_again_once_it_has_no_share_session_here() {
        let c = ShareCoordinator::new();
        let (a, b, other) = (key("g", 0), key("g", 1), key("h", 0));
        let (ha, hb, hother) = (open(&c, &a), open(&c, &b), open(&c, &other));
        let now = 10 * SESSION_IDLE_MS;
        session(&c, "g", "m1", now);
        session(&c, "g", "m2", 0);
        session(&c, "h", "m3", 0);
        session(&c, "h", "m4", now);
        // m2 and m3 are dropped as idle; each group still has a session here.
        c.tick(now);
        assert_eq!(c.sessions().len(), 2);
        assert!(!ha.lock().unused && !hb.lock().unused && !hother.lock().unused);
        // Then g has none: its share-partitions are kept (acknowledgements of the last closes
        // still apply to them) but read again on their next use; h's are untouched.
        c.sessions()
            .get_mut(&("g".into(), "m1".into()))
            .unwrap()
            .used_ms = 0;
        c.tick(now);
        assert!(ha.lock().unused && hb.lock().unused && !hother.lock().unused);
        assert!(c.existing(&a).is_some_and(|h| Arc::ptr_eq(&h, &ha)));
    }

    #[test]
    fn only_the_copy_found_stale_is_dropped() {
        let c = ShareCoordinator::new();
        let k = key("g", 0);
        let old = open(&c, &k);
        c.drop_partition(&k, &old, "test");
        assert!(c.existing(&k).is_none());
        // A copy read again meanwhile is not dropped for its predecessor.
        let new = open(&c, &k);
        c.drop_partition(&k, &old, "test");
        assert!(c.existing(&k).is_some_and(|h| Arc::ptr_eq(&h, &new)));
    }
}
