//! The coordinator's shell around KIP-848 consumer groups ([`consumer::group::ConsumerGroup`]):
//! it runs a heartbeat on the group under the group's lock, writes the records the group asks
//! for to `__consumer_offsets` and answers once the in-sync replicas have them, fences members
//! whose deadlines pass, and rebuilds the groups when it loads a partition.
//!
//! A group id names one group: a consumer group's committed offsets live in the coordinator's
//! offsets holder for the id (the classic [`Group`] of that id, which stays Empty and has no
//! members), so OffsetFetch, offset expiry and transactional offsets work as for every group;
//! the membership lives here. An empty group changes kind when a member of the other protocol
//! joins (its old metadata tombstoned, its offsets kept), as Kafka converts it. A group with
//! members migrates online (KIP-848, as `group.consumer.migration.policy` allows): a
//! consumer-protocol member joining a classic group upgrades it, its classic members going on
//! inside the consumer group ([`classic`]); the last consumer-protocol member leaving a group
//! of classic members downgrades it back to a classic group, which rebalances.
//!
//! Locks: a consumer group's lock is taken before its offsets holder's (the downgrade moves
//! the members under both), never the other way round.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::consumer::assignor::Assignor;
use super::consumer::group::classic::Downgraded;
use super::consumer::group::{
    ConsumerGroup, Heartbeat, HeartbeatError, Record, Reply, Settings, TopicMeta, TopicView,
};
use super::records::CoordinatorRecord;
use super::state::ReturningMember;
use super::{replicated, GroupCoordinator, GroupError, GroupState, Protocol};
use crate::node::Node;

pub(super) type ConsumerHandle = Arc<Mutex<ConsumerGroup>>;

/// What a consumer group member's offset commit may commit.
#[derive(Debug, Clone)]
pub enum ConsumerCommit {
    Any,
    /// Committed with an older member epoch: only partitions given at or before it.
    OlderEpoch {
        epoch: i32,
        epochs: super::consumer::group::AssignmentEpochs,
        /// A classic member's refusal is ILLEGAL_GENERATION (its epoch is its generation).
        classic: bool,
    },
}

impl ConsumerCommit {
    /// Whether partition `partition` of topic `topic_id` may be committed.
    pub fn check(&self, topic_id: Option<uuid::Uuid>, partition: i32) -> Result<(), GroupError> {
        match self {
            ConsumerCommit::Any => Ok(()),
            ConsumerCommit::OlderEpoch {
                epoch,
                epochs,
                classic,
            } => match topic_id.and_then(|t| epochs.get(&(t, partition))) {
                Some(given) if *given <= *epoch => Ok(()),
                _ if *classic => Err(GroupError::IllegalGeneration),
                _ => Err(GroupError::StaleMemberEpoch),
            },
        }
    }
}

/// Why a heartbeat was refused: a coordinator error or the group's.
#[derive(Debug)]
pub enum HeartbeatFailure {
    Coordinator(GroupError),
    /// GROUP_ID_NOT_FOUND with its message.
    GroupIdNotFound(String),
    Group(HeartbeatError),
}

impl From<GroupError> for HeartbeatFailure {
    fn from(e: GroupError) -> Self {
        HeartbeatFailure::Coordinator(e)
    }
}

/// The topics as this broker's registry knows them.
pub struct NodeTopics<'a>(pub &'a Node);

impl TopicView for NodeTopics<'_> {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.0.topics.get(name).map(|t| TopicMeta {
            id: t.id,
            partitions: t.partition_count,
        })
    }
    fn names(&self) -> Vec<String> {
        // Internal topics too: a regex that names one gets it, as on Kafka.
        self.0
            .topics
            .all()
            .into_iter()
            .map(|t| t.name.clone())
            .collect()
    }
    fn version(&self) -> u64 {
        *self.0.topics.watch().borrow()
    }
}

/// Whether the consumer group protocol is on: `group.version` 1 or above (Kafka's
/// `GroupVersion.isConsumerRebalanceProtocolSupported`) and `consumer` listed in
/// `group.coordinator.rebalance.protocols`.
pub fn consumer_protocol_enabled(node: &Node) -> bool {
    let level = node
        .controller
        .image()
        .features()
        .get(samsa_cluster::controller::GROUP_VERSION_FEATURE)
        .copied()
        .unwrap_or(0);
    let listed = node
        .dynamic_configs
        .effective()
        .list("group.coordinator.rebalance.protocols")
        .iter()
        .any(|p| p.trim().eq_ignore_ascii_case("consumer"));
    level >= 1 && listed
}

/// `group.consumer.migration.policy`: which way a group with members may change protocol
/// online (KIP-848).
pub struct MigrationPolicy(String);

impl MigrationPolicy {
    pub fn allows_upgrade(&self) -> bool {
        matches!(self.0.as_str(), "upgrade" | "bidirectional")
    }
    pub fn allows_downgrade(&self) -> bool {
        matches!(self.0.as_str(), "downgrade" | "bidirectional")
    }
}

pub fn migration_policy(node: &Node) -> MigrationPolicy {
    MigrationPolicy(
        node.dynamic_configs
            .effective()
            .get("group.consumer.migration.policy")
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase(),
    )
}

/// The group's effective settings: its group configs over the broker's defaults.
pub fn consumer_settings(node: &Node, group_id: &str) -> Settings {
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
    let mut assignors: Vec<Assignor> = cfg
        .list("group.consumer.assignors")
        .iter()
        .filter_map(|a| Assignor::by_name(a.trim()))
        .collect();
    if assignors.is_empty() {
        assignors = vec![Assignor::Uniform, Assignor::Range];
    }
    Settings {
        session_timeout_ms: int("consumer.session.timeout.ms", 45_000) as i32,
        heartbeat_interval_ms: int("consumer.heartbeat.interval.ms", 5_000) as i32,
        max_size: cfg.long("group.consumer.max.size").max(1) as usize,
        assignors,
        assignment_interval_ms: int("consumer.assignment.interval.ms", 1_000) as i32,
        downgrade_max_size: migration_policy(node)
            .allows_downgrade()
            .then(|| cfg.long("group.max.size").max(1) as usize),
    }
}

impl GroupCoordinator {
    pub(super) fn consumer_group(&self, group_id: &str) -> Option<ConsumerHandle> {
        self.consumer_groups.read().get(group_id).cloned()
    }

    /// Whether `group_id` is a consumer group here.
    pub fn is_consumer_group(&self, group_id: &str) -> bool {
        self.consumer_group(group_id).is_some()
    }

    /// ConsumerGroupHeartbeat, after the handler's checks.
    pub async fn consumer_heartbeat(
        &self,
        node: &Node,
        group_id: &str,
        hb: Heartbeat,
    ) -> Result<Reply, HeartbeatFailure> {
        self.check_member_group(group_id)?;
        self.offsets_partition(node, group_id)?;
        let now = crate::util::now_ms();
        if self.is_streams_group(group_id) {
            return Err(HeartbeatFailure::GroupIdNotFound(format!(
                "Group {group_id} is not a consumer group."
            )));
        }
        if self.consumer_group(group_id).is_none() {
            self.convert_empty_classic_group(node, group_id, hb.member_epoch, now)
                .await?;
        }
        let created = self.consumer_group(group_id).is_none();
        let group = match self.consumer_group(group_id) {
            Some(g) => g,
            None if hb.member_epoch == 0 => {
                self.check_budget(group_id, "a new group")?;
                let mut groups = self.consumer_groups.write();
                groups
                    .entry(group_id.to_string())
                    .or_insert_with(|| Arc::new(Mutex::new(ConsumerGroup::new(group_id))))
                    .clone()
            }
            None => {
                return Err(HeartbeatFailure::GroupIdNotFound(format!(
                    "Consumer group {group_id} not found."
                )))
            }
        };
        let settings = consumer_settings(node, group_id);
        let topics = NodeTopics(node);
        let write = {
            let mut g = group.lock();
            if !self.is_current(group_id, &group) {
                // Downgraded or deleted meanwhile: the client asks again and finds what the id
                // is now.
                return Err(HeartbeatFailure::Coordinator(
                    GroupError::CoordinatorNotAvailable,
                ));
            }
            let before = g.bytes();
            let result = g.heartbeat(hb, &topics, &settings, now);
            self.account(before, g.bytes());
            let (reply, records) = match result {
                Ok(r) => r,
                Err(e) => {
                    // A refused join leaves no group behind (removed under the group's lock,
                    // so no join can slip in between).
                    if created && g.is_empty() {
                        self.consumer_groups.write().remove(group_id);
                        self.account(g.bytes(), 0);
                        self.consumer_timers.lock().set(group_id, None);
                    }
                    return Err(HeartbeatFailure::Group(e));
                }
            };
            self.schedule_consumer(&g);
            let write = self.write_consumer_records(node, &mut g, records, now)?;
            (reply, write)
        };
        let (reply, write) = write;
        if let Some(w) = write {
            replicated(group_id, w).await?;
        }
        Ok(reply)
    }

    /// Whether `handle` is still the group of `group_id` (a downgrade or a deletion leaves
    /// stale handles to callers that waited for its lock).
    pub(super) fn is_current(&self, group_id: &str, handle: &ConsumerHandle) -> bool {
        self.consumer_groups
            .read()
            .get(group_id)
            .is_some_and(|h| Arc::ptr_eq(h, handle))
    }

    /// A join (epoch 0) to the id of a classic group: an empty one becomes a consumer group
    /// (its classic metadata is tombstoned, its offsets stay), as Kafka converts it; one with
    /// members is upgraded online when `group.consumer.migration.policy` allows (its members
    /// become classic members of the consumer group), else refused with Kafka's reasons. Any
    /// other epoch: not a consumer group.
    async fn convert_empty_classic_group(
        &self,
        node: &Node,
        group_id: &str,
        member_epoch: i32,
        now_ms: i64,
    ) -> Result<(), HeartbeatFailure> {
        let Some(classic) = self.group(group_id) else {
            return Ok(());
        };
        let write = {
            let mut g = classic.lock();
            if g.state() == GroupState::Dead {
                return Ok(());
            }
            let empty = g.size() == 0 && g.pending_members() == 0;
            if member_epoch != 0 {
                // A simple group's offsets alone are no group yet.
                if empty && g.protocol_type().is_none() {
                    return Ok(());
                }
                return Err(HeartbeatFailure::GroupIdNotFound(format!(
                    "Group {group_id} is not a consumer group."
                )));
            }
            if !empty {
                if let Some(why) = self.upgrade_refusal(node, group_id, &g) {
                    return Err(HeartbeatFailure::GroupIdNotFound(why));
                }
                // The online upgrade: the members go on as classic members of a consumer
                // group at the group's generation; the join is then processed as any.
                let members = classic::classic_group_members(node, &g).map_err(|()| {
                    HeartbeatFailure::GroupIdNotFound(format!("Cannot upgrade the classic group {group_id} to consumer group because the embedded consumer protocol is malformed."))
                })?;
                let (consumer, records) = ConsumerGroup::from_classic(
                    group_id,
                    g.generation_id(),
                    members,
                    &NodeTopics(node),
                    now_ms,
                );
                let mut encoded = vec![CoordinatorRecord::group_tombstone(group_id)];
                encoded.extend(
                    records
                        .into_iter()
                        .map(|r| super::consumer::persist::coordinator_record(group_id, r)),
                );
                let write = self.append(node, group_id, &encoded, now_ms)?;
                let before = g.bytes();
                let (_, join, sync) = g.hand_over_membership(now_ms);
                self.account(before, g.bytes());
                self.send(join, sync);
                self.account(0, consumer.bytes());
                self.schedule_consumer(&consumer);
                self.consumer_groups
                    .write()
                    .insert(group_id.to_string(), Arc::new(Mutex::new(consumer)));
                tracing::info!(
                    group = group_id,
                    "upgraded the classic group to a consumer group online"
                );
                write
            } else {
                if g.protocol_type().is_none() {
                    return Ok(());
                }
                let record = CoordinatorRecord::group_tombstone(group_id);
                let write = self.append(node, group_id, &[record], now_ms)?;
                let before = g.bytes();
                g.forget_membership(now_ms);
                self.account(before, g.bytes());
                tracing::info!(
                    group = group_id,
                    "converted the empty classic group to a consumer group"
                );
                write
            }
        };
        replicated(group_id, write).await?;
        Ok(())
    }

    /// Why a classic group with members is not upgraded online (Kafka's reasons in its words),
    /// or `None` when it is.
    fn upgrade_refusal(&self, node: &Node, group_id: &str, g: &super::Group) -> Option<String> {
        let prefix = format!("Cannot upgrade classic group {group_id} to consumer group");
        if !migration_policy(node).allows_upgrade() {
            Some(format!("{prefix} because online upgrade is disabled."))
        } else if !g.uses_consumer_protocol() {
            Some(format!(
                "{prefix} because the group does not use the consumer embedded protocol."
            ))
        } else if g.size() > consumer_settings(node, group_id).max_size {
            Some(format!(
                "{prefix} because the group size exceeds the consumer group maximum size."
            ))
        } else {
            None
        }
    }

    /// A classic JoinGroup to the id of an empty consumer group: it is removed (its records
    /// tombstoned, its offsets kept), so the classic group can form, as Kafka converts it. One
    /// that has members again is INCONSISTENT_GROUP_PROTOCOL: the caller then joins the member
    /// into it (`classic_join_consumer`).
    pub(super) async fn make_way_for_classic(
        &self,
        node: &Node,
        group_id: &str,
    ) -> Result<(), GroupError> {
        self.streams_make_way_for_classic(node, group_id).await?;
        let Some(group) = self.consumer_group(group_id) else {
            return Ok(());
        };
        let write = {
            let g = group.lock();
            if !g.is_empty() {
                // A member joined since the caller looked: the caller takes the classic member
                // into the consumer group instead.
                return Err(GroupError::InconsistentGroupProtocol);
            }
            let records = vec![
                super::consumer::persist::coordinator_record(group_id, Record::TargetEpoch(None)),
                super::consumer::persist::coordinator_record(group_id, Record::GroupEpoch(None)),
            ];
            let write = self.append(node, group_id, &records, crate::util::now_ms())?;
            drop(g);
            self.forget_consumer_group(group_id);
            tracing::info!(
                group = group_id,
                "converted the empty consumer group to a classic group"
            );
            write
        };
        replicated(group_id, write).await
    }

    /// Writes a group's records; on a failed append the group is forgotten here (its log is
    /// what it was before this change) and reloaded with the partition. A group the change
    /// downgraded becomes the classic group of its id in the same write.
    fn write_consumer_records(
        &self,
        node: &Node,
        g: &mut ConsumerGroup,
        records: Vec<Record>,
        now_ms: i64,
    ) -> Result<Option<crate::coordinator_write::CoordinatorWrite>, GroupError> {
        if records.is_empty() {
            return Ok(None);
        }
        let encoded: Vec<CoordinatorRecord> = records
            .into_iter()
            .map(|r| super::consumer::persist::coordinator_record(&g.group_id, r))
            .collect();
        if let Some(d) = g.take_downgraded() {
            return self.downgrade(node, g, d, encoded, now_ms).map(Some);
        }
        match self.append(node, &g.group_id, &encoded, now_ms) {
            Ok(w) => Ok(Some(w)),
            Err(e) => {
                self.drop_consumer_group(g, &e);
                Err(e)
            }
        }
    }

    /// Forgets a consumer group whose records could not be written (its partition's next
    /// load brings back what its log holds), under its lock.
    fn drop_consumer_group(&self, g: &ConsumerGroup, e: &GroupError) {
        tracing::warn!(group = %g.group_id, "consumer group records not written ({e}); the group is dropped here until its partition is loaded again");
        self.consumer_groups.write().remove(&g.group_id);
        self.account(g.bytes(), 0);
        self.consumer_timers.lock().set(&g.group_id, None);
    }

    /// The online downgrade's write (Kafka's `convertToClassicGroup`): the consumer group's
    /// tombstones (`encoded`) and the classic group's metadata go in one write; the members
    /// come back to the classic group of the id (its offsets holder), which then prepares a
    /// rebalance, and the consumer group is forgotten. Under the consumer group's lock.
    fn downgrade(
        &self,
        node: &Node,
        g: &mut ConsumerGroup,
        d: Downgraded,
        mut encoded: Vec<CoordinatorRecord>,
        now_ms: i64,
    ) -> Result<crate::coordinator_write::CoordinatorWrite, GroupError> {
        let group_id = g.group_id.clone();
        let holder = match self.get_or_create(&group_id, now_ms) {
            Ok(h) => h,
            Err(e) => {
                self.drop_consumer_group(g, &e);
                return Err(e);
            }
        };
        let mut h = holder.lock();
        if h.state() == GroupState::Dead || h.size() > 0 || h.pending_members() > 0 {
            // Not reachable while the consumer group lives (its holder has no members), but
            // never merge two memberships.
            let e = GroupError::CoordinatorNotAvailable;
            self.drop_consumer_group(g, &e);
            return Err(e);
        }
        let assigned: HashMap<String, super::consumer::reconcile::Partitions> = d
            .members
            .iter()
            .map(|m| (m.member_id.clone(), m.assigned.clone()))
            .collect();
        let returning: Vec<ReturningMember> = d
            .members
            .into_iter()
            .map(|m| ReturningMember {
                member_id: m.member_id,
                instance_id: m.instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocols: m
                    .protocols
                    .into_iter()
                    .map(|(name, metadata)| Protocol { name, metadata })
                    .collect(),
            })
            .collect();
        let before = h.bytes();
        let (value, fx) = h.take_members_back(
            d.generation,
            returning,
            |r, metadata| classic::assignment_bytes(node, &assigned[&r.member_id], metadata),
            d.rebalance,
            &self.cfg,
            now_ms,
        );
        encoded.push(CoordinatorRecord::group_metadata(&group_id, value));
        let write = match self.append(node, &group_id, &encoded, now_ms) {
            Ok(w) => w,
            Err(e) => {
                let _ = h.hand_over_membership(now_ms);
                self.account(before, h.bytes());
                self.drop_consumer_group(g, &e);
                return Err(e);
            }
        };
        let out = self.settle(node, &mut h, fx, now_ms);
        debug_assert!(
            out.stores.is_empty(),
            "preparing a rebalance writes nothing"
        );
        self.send(out.join, out.sync);
        self.account(before, h.bytes());
        drop(h);
        self.consumer_groups.write().remove(&group_id);
        self.account(g.bytes(), 0);
        self.consumer_timers.lock().set(&group_id, None);
        tracing::info!(
            group = %group_id,
            generation = d.generation,
            "downgraded the consumer group to a classic group: its last consumer-protocol member is gone"
        );
        Ok(write)
    }

    fn schedule_consumer(&self, g: &ConsumerGroup) {
        if self
            .consumer_timers
            .lock()
            .set(&g.group_id, g.next_deadline())
        {
            self.timer_wake.notify_one();
        }
    }

    /// Fires the due deadlines of consumer groups (session and rebalance timeouts).
    pub(super) fn tick_consumer_groups(&self, node: &Node, now_ms: i64) {
        let due = self.consumer_timers.lock().pop_due(now_ms);
        for id in due {
            let Some(group) = self.consumer_group(&id) else {
                continue;
            };
            let settings = consumer_settings(node, &id);
            let mut g = group.lock();
            if !self.is_current(&id, &group) {
                continue;
            }
            let before = g.bytes();
            let (records, fenced) = g.tick(&NodeTopics(node), &settings, now_ms);
            self.account(before, g.bytes());
            for (member, why) in &fenced {
                tracing::info!(group = %id, member = %member, "consumer group member removed: {why}");
            }
            self.schedule_consumer(&g);
            if let Ok(Some(w)) = self.write_consumer_records(node, &mut g, records, now_ms) {
                let id = id.clone();
                tokio::spawn(async move {
                    let _ = replicated(&id, w).await;
                });
            }
        }
    }

    /// The next consumer group deadline, for the timer task.
    pub(super) fn next_consumer_deadline(&self) -> Option<i64> {
        self.consumer_timers.lock().queue.first().map(|(d, _)| *d)
    }

    /// The consumer groups here with their states (ListGroups), by id.
    pub fn consumer_group_states(&self) -> Vec<(String, &'static str)> {
        let handles: Vec<ConsumerHandle> = self.consumer_groups.read().values().cloned().collect();
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

    /// Runs `f` on the consumer group `group_id`, if it is one here.
    pub fn with_consumer_group<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(&ConsumerGroup) -> R,
    ) -> Option<R> {
        self.consumer_group(group_id).map(|g| f(&g.lock()))
    }

    /// Checks an offset commit of a consumer group member (Kafka 4.4's
    /// `ConsumerGroup.validateOffsetCommit`); `None` when `group_id` is neither a consumer nor
    /// a streams group.
    /// A commit with the member's epoch may commit anything; one with an older epoch only
    /// partitions the member was given at or before that epoch (KIP-1251), checked per
    /// partition with [`ConsumerCommit::check`].
    pub(super) fn validate_consumer_commit(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        member_epoch: i32,
        transactional: bool,
        api_version: i16,
    ) -> Option<Result<ConsumerCommit, GroupError>> {
        let Some(group) = self.consumer_group(group_id) else {
            // A streams group checks its members' epochs the same way (KIP-1071).
            return self.validate_streams_commit(
                group_id,
                member_id,
                member_epoch,
                transactional,
                api_version,
            );
        };
        let g = group.lock();
        // The admin client and consumers without group management commit with epoch -1, to a
        // group without members; a transactional producer without a group's metadata too.
        if member_epoch < 0 && g.is_empty() {
            return Some(Ok(ConsumerCommit::Any));
        }
        if transactional
            && member_epoch == -1
            && member_id.is_empty()
            && group_instance_id.is_none()
        {
            return Some(Ok(ConsumerCommit::Any));
        }
        let Some(m) = g.member(member_id) else {
            return Some(Err(GroupError::UnknownMemberId));
        };
        // A classic member (online migration) commits with its generation at any version.
        let classic = m.uses_classic_protocol();
        if !transactional && api_version < 9 && !classic {
            return Some(Err(GroupError::UnsupportedVersion));
        }
        let current = m.current.member_epoch;
        Some(match member_epoch {
            e if e == current => Ok(ConsumerCommit::Any),
            e if e > current && classic => Err(GroupError::IllegalGeneration),
            e if e > current => Err(GroupError::StaleMemberEpoch),
            e => Ok(ConsumerCommit::OlderEpoch {
                epoch: e,
                epochs: m.assignment_epochs.clone(),
                classic,
            }),
        })
    }

    /// Checks an offset fetch of a consumer group member (Kafka's
    /// `ConsumerGroup.validateOffsetFetch`): without a member id and epoch it is an admin's.
    pub fn validate_consumer_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), GroupError> {
        let Some(group) = self.consumer_group(group_id) else {
            return Ok(());
        };
        let g = group.lock();
        let Some(member_id) = member_id else {
            if member_epoch < 0 {
                return Ok(());
            }
            return Err(GroupError::UnknownMemberId);
        };
        let m = g.member(member_id).ok_or(GroupError::UnknownMemberId)?;
        if member_epoch != m.current.member_epoch {
            return Err(match m.uses_classic_protocol() {
                true => GroupError::IllegalGeneration,
                false => GroupError::StaleMemberEpoch,
            });
        }
        Ok(())
    }

    /// Deletes an empty consumer group (its records are tombstoned by the caller's write).
    pub(super) fn consumer_group_tombstones(
        &self,
        group_id: &str,
    ) -> Result<Option<Vec<CoordinatorRecord>>, GroupError> {
        let Some(group) = self.consumer_group(group_id) else {
            return Ok(None);
        };
        let g = group.lock();
        if !g.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        let mut records = vec![super::consumer::persist::coordinator_record(
            group_id,
            Record::TargetEpoch(None),
        )];
        records.push(super::consumer::persist::coordinator_record(
            group_id,
            Record::GroupEpoch(None),
        ));
        Ok(Some(records))
    }

    pub(super) fn forget_consumer_group(&self, group_id: &str) {
        // The map's lock is released before the group's is taken.
        let removed = self.consumer_groups.write().remove(group_id);
        if let Some(g) = removed {
            self.account(g.lock().bytes(), 0);
        }
        self.consumer_timers.lock().set(group_id, None);
    }

    /// Installs the consumer groups a partition's log holds.
    pub(super) fn install_consumer_groups(
        &self,
        node: &Node,
        groups: HashMap<String, ConsumerGroup>,
        now_ms: i64,
    ) -> usize {
        let count = groups.len();
        for (id, mut g) in groups {
            let settings = consumer_settings(node, &id);
            g.loaded(&NodeTopics(node), settings.session_timeout_ms, now_ms);
            self.account(0, g.bytes());
            tracing::info!(group = %id, members = g.members().count(), epoch = g.group_epoch(), "loaded consumer group");
            let handle = Arc::new(Mutex::new(g));
            self.consumer_groups.write().insert(id, handle.clone());
            self.schedule_consumer(&handle.lock());
        }
        count
    }

    /// Forgets the consumer groups of partition `index`.
    pub(super) fn unload_consumer_groups(&self, index: i32) -> usize {
        let gone: Vec<(String, ConsumerHandle)> = {
            let mut groups = self.consumer_groups.write();
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
            self.consumer_timers.lock().set(id, None);
        }
        gone.len()
    }
}

#[path = "modern_classic.rs"]
mod classic;
