//! The coordinator's shell around KIP-1071 streams groups
//! ([`samsa_streams_group::group::StreamsGroup`]), as [`super::modern`] is around consumer
//! groups: a heartbeat runs on the group under its lock, the records it asks for are written
//! to `__consumer_offsets` and replicated before the answer, deadlines fence members, and a
//! partition's load rebuilds its groups. A streams group's committed offsets live in the
//! offsets holder of its id (the classic [`super::Group`], which stays Empty), as a consumer
//! group's do.
//!
//! A group id names one kind of group: a streams heartbeat to the id of a consumer group, or
//! of a classic group that has members, is GROUP_ID_NOT_FOUND ("Group g is not a streams
//! group."), as on Kafka; an empty classic group's metadata is tombstoned and the id becomes a
//! streams group.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use samsa_streams_group::group::{
    Heartbeat, HeartbeatError, Record, Reply, Settings, StreamsGroup,
};
use samsa_streams_group::TopicView;

use super::modern::ConsumerCommit;
use super::records::CoordinatorRecord;
use super::{replicated, GroupCoordinator, GroupError, GroupState, Timers};
use crate::node::Node;

pub(super) type StreamsHandle = Arc<Mutex<StreamsGroup>>;

/// The streams groups this coordinator holds, and their deadlines.
#[derive(Default)]
pub(super) struct StreamsGroups {
    groups: RwLock<HashMap<String, StreamsHandle>>,
    timers: Mutex<Timers>,
    /// The ids of the topics streams groups read, by name, as the heartbeats found them: an
    /// offset commit with an older member epoch is checked per partition by topic id.
    topic_ids: RwLock<HashMap<String, uuid::Uuid>>,
}

/// Why a streams heartbeat was refused.
#[derive(Debug)]
pub enum StreamsFailure {
    Coordinator(GroupError),
    /// GROUP_ID_NOT_FOUND with its message.
    GroupIdNotFound(String),
    Group(HeartbeatError),
}

impl From<GroupError> for StreamsFailure {
    fn from(e: GroupError) -> Self {
        StreamsFailure::Coordinator(e)
    }
}

/// The topics as this broker's registry knows them.
pub struct NodeStreamsTopics<'a>(pub &'a Node);

impl TopicView for NodeStreamsTopics<'_> {
    fn partitions(&self, name: &str) -> Option<i32> {
        self.0.topics.get(name).map(|t| t.partition_count)
    }
    fn names(&self) -> Vec<String> {
        self.0
            .topics
            .all()
            .into_iter()
            .map(|t| t.name.clone())
            .collect()
    }
}

/// Whether streams groups are on: `streams.version` 1 or above, as Kafka 4.4 decides it.
pub fn streams_protocol_enabled(node: &Node) -> bool {
    node.controller
        .image()
        .features()
        .get(samsa_cluster::controller::STREAMS_VERSION_FEATURE)
        .is_some_and(|level| *level >= 1)
}

/// The group's effective settings: its group configs (`streams.*`) over the broker's
/// (`group.streams.*`).
pub fn streams_settings(node: &Node, group_id: &str) -> Settings {
    let cfg = node.dynamic_configs.effective();
    let image = node.controller.image();
    let overrides = crate::config::dynamic::layer(
        &image,
        samsa_cluster::metadata::image::CONFIG_RESOURCE_GROUP,
        group_id,
    );
    let get = |name: &str| {
        let def = crate::config::defs::group_def(name).expect("a group config Samsa defines");
        crate::config::group::effective(&cfg, &overrides, def).0
    };
    let int = |name: &str, default: i64| get(name).trim().parse::<i64>().unwrap_or(default);
    let tags: Vec<String> = get("streams.rack.aware.assignment.tags")
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    Settings {
        session_timeout_ms: int("streams.session.timeout.ms", 45_000) as i32,
        heartbeat_interval_ms: int("streams.heartbeat.interval.ms", 5_000) as i32,
        max_size: cfg.long("group.streams.max.size").max(1) as usize,
        assignment: samsa_streams_group::assignor::AssignmentConfigs {
            num_standby_replicas: int("streams.num.standby.replicas", 0) as i32,
            rack_aware_assignment_tags: tags,
        },
        initial_rebalance_delay_ms: int("streams.initial.rebalance.delay.ms", 3_000) as i32,
        assignment_interval_ms: int("streams.assignment.interval.ms", 1_000) as i32,
        // Kafka 4.4 takes these as group configs but does not describe them; Samsa keeps
        // the broker's (hidden) defaults.
        task_offset_interval_ms: cfg.long("group.streams.task.offset.interval.ms") as i32,
        num_warmup_replicas: cfg.long("group.streams.num.warmup.replicas") as i32,
        acceptable_recovery_lag: cfg.long("group.streams.acceptable.recovery.lag"),
    }
}

impl GroupCoordinator {
    pub(super) fn streams_group(&self, group_id: &str) -> Option<StreamsHandle> {
        self.streams.groups.read().get(group_id).cloned()
    }

    /// Whether `group_id` is a streams group here.
    pub fn is_streams_group(&self, group_id: &str) -> bool {
        self.streams_group(group_id).is_some()
    }

    /// StreamsGroupHeartbeat, after the handler's checks.
    pub async fn streams_heartbeat(
        &self,
        node: &Node,
        group_id: &str,
        hb: Heartbeat,
    ) -> Result<Reply, StreamsFailure> {
        self.check_member_group(group_id)?;
        self.offsets_partition(node, group_id)?;
        let now = crate::util::now_ms();
        if self.streams_group(group_id).is_none() {
            if self.is_consumer_group(group_id) {
                return Err(StreamsFailure::GroupIdNotFound(format!(
                    "Group {group_id} is not a streams group."
                )));
            }
            self.convert_empty_classic_to_streams(node, group_id, hb.member_epoch, now)
                .await?;
        }
        let created = self.streams_group(group_id).is_none();
        let group = match self.streams_group(group_id) {
            Some(g) => g,
            None if hb.member_epoch == 0 => {
                self.check_budget(group_id, "a new group")?;
                let mut groups = self.streams.groups.write();
                groups
                    .entry(group_id.to_string())
                    .or_insert_with(|| Arc::new(Mutex::new(StreamsGroup::new(group_id))))
                    .clone()
            }
            None => {
                return Err(StreamsFailure::GroupIdNotFound(format!(
                    "Streams group {group_id} not found."
                )))
            }
        };
        let settings = streams_settings(node, group_id);
        let topics = NodeStreamsTopics(node);
        let (reply, write) = {
            let mut g = group.lock();
            if !self.is_current_streams(group_id, &group) {
                return Err(StreamsFailure::Coordinator(
                    GroupError::CoordinatorNotAvailable,
                ));
            }
            let before = g.bytes();
            let result = g.heartbeat(hb, &topics, &settings, now);
            self.account(before, g.bytes());
            let (reply, records) = match result {
                Ok(r) => r,
                Err(e) => {
                    if created && g.is_empty() {
                        self.streams.groups.write().remove(group_id);
                        self.account(g.bytes(), 0);
                        self.streams.timers.lock().set(group_id, None);
                    }
                    return Err(StreamsFailure::Group(e));
                }
            };
            self.schedule_streams(&g);
            if let Some(t) = g.topology() {
                let mut ids = self.streams.topic_ids.write();
                for s in &t.subtopologies {
                    let names = s
                        .source_topics
                        .iter()
                        .chain(s.repartition_source_topics.iter().map(|r| &r.name));
                    for name in names {
                        if let Some(topic) = node.topics.get(name) {
                            ids.insert(name.clone(), topic.id);
                        }
                    }
                }
            }
            let write = self.write_streams_records(node, &g, records, now)?;
            (reply, write)
        };
        if let Some(w) = write {
            replicated(group_id, w).await?;
        }
        if !reply.topics_to_create.is_empty() {
            crate::group::streams_topics::create_internal_topics(
                node,
                group_id,
                &reply.topics_to_create,
            )
            .await;
        }
        Ok(reply)
    }

    fn is_current_streams(&self, group_id: &str, handle: &StreamsHandle) -> bool {
        self.streams
            .groups
            .read()
            .get(group_id)
            .is_some_and(|h| Arc::ptr_eq(h, handle))
    }

    /// A join to the id of a classic group: an empty one becomes a streams group (its
    /// metadata tombstoned, its offsets kept), as Kafka converts it; one with members, or any
    /// other epoch than a join, is not a streams group.
    async fn convert_empty_classic_to_streams(
        &self,
        node: &Node,
        group_id: &str,
        member_epoch: i32,
        now_ms: i64,
    ) -> Result<(), StreamsFailure> {
        let Some(classic) = self.group(group_id) else {
            return Ok(());
        };
        let write = {
            let mut g = classic.lock();
            if g.state() == GroupState::Dead {
                return Ok(());
            }
            let empty = g.size() == 0 && g.pending_members() == 0;
            // A simple group's offsets alone are no group yet.
            if empty && g.protocol_type().is_none() {
                return Ok(());
            }
            if member_epoch != 0 || !empty {
                return Err(StreamsFailure::GroupIdNotFound(format!(
                    "Group {group_id} is not a streams group."
                )));
            }
            let record = CoordinatorRecord::group_tombstone(group_id);
            let write = self.append(node, group_id, &[record], now_ms)?;
            let before = g.bytes();
            g.forget_membership(now_ms);
            self.account(before, g.bytes());
            tracing::info!(
                group = group_id,
                "converted the empty classic group to a streams group"
            );
            write
        };
        replicated(group_id, write).await?;
        Ok(())
    }

    /// A classic JoinGroup to the id of an empty streams group: the streams group is removed
    /// (its records tombstoned, its offsets kept), as Kafka converts it; one with members is
    /// INCONSISTENT_GROUP_PROTOCOL.
    pub(super) async fn streams_make_way_for_classic(
        &self,
        node: &Node,
        group_id: &str,
    ) -> Result<(), GroupError> {
        let Some(group) = self.streams_group(group_id) else {
            return Ok(());
        };
        let write = {
            let g = group.lock();
            if !g.is_empty() {
                return Err(GroupError::InconsistentGroupProtocol);
            }
            let records: Vec<CoordinatorRecord> = g
                .tombstones()
                .into_iter()
                .map(|r| super::streams_persist::coordinator_record(group_id, r))
                .collect();
            let write = self.append(node, group_id, &records, crate::util::now_ms())?;
            drop(g);
            self.forget_streams_group(group_id);
            tracing::info!(
                group = group_id,
                "converted the empty streams group to a classic group"
            );
            write
        };
        replicated(group_id, write).await
    }

    /// Writes a group's records; on a failed append the group is forgotten here (its log is
    /// what it was before the change) and reloaded with its partition.
    fn write_streams_records(
        &self,
        node: &Node,
        g: &StreamsGroup,
        records: Vec<Record>,
        now_ms: i64,
    ) -> Result<Option<crate::coordinator_write::CoordinatorWrite>, GroupError> {
        if records.is_empty() {
            return Ok(None);
        }
        let encoded: Vec<CoordinatorRecord> = records
            .into_iter()
            .map(|r| super::streams_persist::coordinator_record(&g.group_id, r))
            .collect();
        match self.append(node, &g.group_id, &encoded, now_ms) {
            Ok(w) => Ok(Some(w)),
            Err(e) => {
                tracing::warn!(group = %g.group_id, "streams group records not written ({e}); the group is dropped here until its partition is loaded again");
                self.streams.groups.write().remove(&g.group_id);
                self.account(g.bytes(), 0);
                self.streams.timers.lock().set(&g.group_id, None);
                Err(e)
            }
        }
    }

    fn schedule_streams(&self, g: &StreamsGroup) {
        if self
            .streams
            .timers
            .lock()
            .set(&g.group_id, g.next_deadline())
        {
            self.timer_wake.notify_one();
        }
    }

    /// Fires the due deadlines of streams groups (sessions, rebalance timeouts, a delayed first
    /// assignment).
    pub(super) fn tick_streams_groups(&self, node: &Node, now_ms: i64) {
        let due = self.streams.timers.lock().pop_due(now_ms);
        for id in due {
            let Some(group) = self.streams_group(&id) else {
                continue;
            };
            let settings = streams_settings(node, &id);
            let g = &mut *group.lock();
            if !self.is_current_streams(&id, &group) {
                continue;
            }
            let before = g.bytes();
            let records = g.tick(&settings, now_ms);
            self.account(before, g.bytes());
            self.schedule_streams(g);
            if let Ok(Some(w)) = self.write_streams_records(node, g, records, now_ms) {
                let id = id.clone();
                tokio::spawn(async move {
                    let _ = replicated(&id, w).await;
                });
            }
        }
    }

    /// The next streams group deadline, for the timer task.
    pub(super) fn next_streams_deadline(&self) -> Option<i64> {
        self.streams.timers.lock().queue.first().map(|(d, _)| *d)
    }

    /// The streams groups here with their states (ListGroups), by id.
    pub fn streams_group_states(&self) -> Vec<(String, &'static str)> {
        let handles: Vec<StreamsHandle> = self.streams.groups.read().values().cloned().collect();
        let mut out: Vec<(String, &'static str)> = handles
            .iter()
            .map(|h| {
                let g = h.lock();
                (g.group_id.clone(), g.state().as_str())
            })
            .collect();
        out.sort();
        out
    }

    /// Runs `f` on the streams group `group_id`, if it is one here.
    pub fn with_streams_group<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(&StreamsGroup) -> R,
    ) -> Option<R> {
        self.streams_group(group_id).map(|g| f(&g.lock()))
    }

    /// Checks an offset commit of a streams group member (Kafka's
    /// `StreamsGroup.validateOffsetCommit`); `None` when `group_id` is not a streams group.
    pub(super) fn validate_streams_commit(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        transactional: bool,
        api_version: i16,
    ) -> Option<Result<ConsumerCommit, GroupError>> {
        let group = self.streams_group(group_id)?;
        let g = group.lock();
        if member_epoch < 0 && g.is_empty() {
            return Some(Ok(ConsumerCommit::Any));
        }
        if g.member(member_id).is_none() {
            return Some(Err(GroupError::UnknownMemberId));
        }
        if !transactional && api_version < 9 {
            return Some(Err(GroupError::UnsupportedVersion));
        }
        Some(match g.offset_commit_epochs(member_id, member_epoch) {
            Ok(None) => Ok(ConsumerCommit::Any),
            Ok(Some(by_name)) => {
                let ids = self.streams.topic_ids.read();
                Ok(ConsumerCommit::OlderEpoch {
                    epoch: member_epoch,
                    epochs: by_name
                        .into_iter()
                        .filter_map(|((t, p), e)| ids.get(&t).map(|id| ((*id, p), e)))
                        .collect(),
                    classic: false,
                })
            }
            Err(e) => Err(streams_offset_error(e)),
        })
    }

    /// Checks an offset fetch of a streams group member (Kafka's
    /// `StreamsGroup.validateOffsetFetch`): without a member id and epoch it is an admin's.
    pub fn validate_streams_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), GroupError> {
        let Some(group) = self.streams_group(group_id) else {
            return Ok(());
        };
        let g = group.lock();
        let Some(member_id) = member_id else {
            if member_epoch < 0 {
                return Ok(());
            }
            return Err(GroupError::UnknownMemberId);
        };
        g.validate_offset_commit(member_id, member_epoch)
            .map_err(streams_offset_error)
    }

    /// Deletes an empty streams group (its records are tombstoned by the caller's write).
    pub(super) fn streams_group_tombstones(
        &self,
        group_id: &str,
    ) -> Result<Option<Vec<CoordinatorRecord>>, GroupError> {
        let Some(group) = self.streams_group(group_id) else {
            return Ok(None);
        };
        let g = group.lock();
        if !g.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        Ok(Some(
            g.tombstones()
                .into_iter()
                .map(|r| super::streams_persist::coordinator_record(group_id, r))
                .collect(),
        ))
    }

    pub(super) fn forget_streams_group(&self, group_id: &str) {
        let removed = self.streams.groups.write().remove(group_id);
        if let Some(g) = removed {
            self.account(g.lock().bytes(), 0);
        }
        self.streams.timers.lock().set(group_id, None);
    }

    /// Installs the streams groups a partition's log holds.
    pub(super) fn install_streams_groups(
        &self,
        node: &Node,
        groups: BTreeMap<String, StreamsGroup>,
        now_ms: i64,
    ) -> usize {
        let count = groups.len();
        for (id, mut g) in groups {
            let settings = streams_settings(node, &id);
            g.loaded(&NodeStreamsTopics(node), &settings, now_ms);
            self.account(0, g.bytes());
            tracing::info!(group = %id, members = g.members().count(), epoch = g.group_epoch(), "loaded streams group");
            let handle = Arc::new(Mutex::new(g));
            self.streams.groups.write().insert(id, handle.clone());
            self.schedule_streams(&handle.lock());
        }
        count
    }

    /// Forgets the streams groups of partition `index`.
    pub(super) fn unload_streams_groups(&self, index: i32) -> usize {
        let gone: Vec<(String, StreamsHandle)> = {
            let mut groups = self.streams.groups.write();
            let ids: Vec<String> = groups
                .keys()
                .filter(|g| self.partition_for(g) == index)
                .cloned()
                .collect();
            ids.into_iter()
                .filter_map(|id| groups.remove(&id).map(|g| (id, g)))
                .collect()
        };
        for (id, g) in &gone {
            self.account(g.lock().bytes(), 0);
            self.streams.timers.lock().set(id, None);
        }
        gone.len()
    }
}

fn streams_offset_error(e: samsa_streams_group::group::OffsetError) -> GroupError {
    match e {
        samsa_streams_group::group::OffsetError::UnknownMemberId => GroupError::UnknownMemberId,
        samsa_streams_group::group::OffsetError::StaleMemberEpoch => GroupError::StaleMemberEpoch,
    }
}
