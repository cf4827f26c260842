//! What the share-group admin APIs (Describe/Alter/DeleteShareGroupOffsets) do to the
//! share-partitions: read their start offsets (and, for those this broker holds, the records in
//! flight and archived), move their start offsets, and forget them.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use parking_lot::Mutex;

use super::partition::SharePartition;
use super::{ShareCoordinator, ShareKey, ShareState};
use crate::server::Broker;

/// One share-partition as DescribeShareGroupOffsets shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetsView {
    pub start_offset: i64,
    /// Records acquired now, and records archived within the window (only for a
    /// share-partition this broker holds in memory).
    pub acquired: Option<u64>,
    pub archived: Option<u64>,
    /// Records past the start offset whose delivery is complete (acknowledged or archived),
    /// Kafka's `DeliveryCompleteCount` (KIP-1226): what the lag leaves out.
    pub delivery_complete: u64,
}

/// The records of `snapshot` past its start offset whose delivery is complete.
fn delivery_complete(snapshot: &super::state_store::Snapshot) -> u64 {
    use super::partition::PersistedState;
    snapshot
        .batches
        .iter()
        .filter(|b| {
            matches!(
                b.state,
                PersistedState::Acknowledged | PersistedState::Archived
            )
        })
        .map(|b| (b.last - b.first.max(snapshot.start_offset) + 1).max(0) as u64)
        .sum()
}

impl ShareCoordinator {
    /// Whether `group` is a share group with members here (its offsets may not be changed).
    pub fn has_members(&self, group: &str) -> bool {
        self.with_group(group, false, |g| !g.is_empty())
            .unwrap_or(false)
    }

    /// Every share-partition of `group` this broker can see: those it holds in memory (with
    /// their counts), those in the state partitions it leads, and those of the topics the
    /// group's members subscribe to, asked of their share coordinators.
    pub async fn describe_offsets(
        &self,
        broker: &Broker,
        group: &str,
    ) -> Result<BTreeMap<ShareKey, OffsetsView>, ResponseError> {
        let mut out = BTreeMap::new();
        let view = |s: &super::state_store::Snapshot| OffsetsView {
            start_offset: s.start_offset,
            acquired: None,
            archived: None,
            delivery_complete: delivery_complete(s),
        };
        for (k, s) in self.store.group_states(broker, group).await? {
            out.insert(k, view(&s));
        }
        // The topics members subscribe to and those the group initialized share-partitions of
        // (an empty group's states may be on other brokers' share coordinators).
        let (names, ids) = self
            .with_group(group, false, |g| {
                (g.subscribed_topics(), g.initialized_topics())
            })
            .unwrap_or_default();
        let mut topics: Vec<_> = names
            .iter()
            .filter_map(|n| broker.topics.get(n))
            .chain(ids.iter().filter_map(|id| broker.topics.get_by_id(id)))
            .collect();
        topics.sort_by_key(|t| t.id);
        topics.dedup_by_key(|t| t.id);
        for t in topics {
            for partition in 0..t.partition_count {
                let key = ShareKey {
                    group: Arc::from(group),
                    topic_id: t.id,
                    partition,
                };
                if out.contains_key(&key) {
                    continue;
                }
                if let Some(s) = super::persister::read(&self.store, broker, &key).await? {
                    out.insert(key, view(&s));
                }
            }
        }
        for (k, h) in self.partitions_of(group) {
            let st = h.lock();
            let (acquired, archived) = st.counts();
            out.insert(
                k,
                OffsetsView {
                    start_offset: st.start_offset(),
                    acquired: Some(acquired as u64),
                    archived: Some(archived as u64),
                    delivery_complete: st.delivery_complete() as u64,
                },
            );
        }
        Ok(out)
    }

    /// Moves `key`'s start offset to `offset` (the group has no members): everything in flight
    /// is dropped, and the state epoch rises.
    pub async fn alter_start(
        &self,
        broker: &Broker,
        key: &ShareKey,
        offset: i64,
    ) -> Result<(), ResponseError> {
        if offset < 0 {
            return Err(ResponseError::InvalidRequest);
        }
        let h = match self.existing(key) {
            Some(h) => h,
            None => {
                let settings = self.settings(broker, &key.group);
                let mut persisted = super::persister::read(&self.store, broker, key).await?;
                if persisted.is_none() {
                    // Kafka initializes a share-partition its offsets are altered for.
                    super::persister::initialize(&self.store, broker, key, 0).await?;
                    persisted = super::persister::read(&self.store, broker, key).await?;
                }
                let st = ShareState {
                    sp: SharePartition::new(offset, settings.limits),
                    snapshot_epoch: persisted.as_ref().map_or(0, |s| s.snapshot_epoch),
                    state_epoch: persisted.as_ref().map_or(0, |s| s.state_epoch),
                    created_ms: crate::util::now_ms(),
                    dlq_scan_from: None,
                    leader_epoch: broker
                        .topics
                        .get_by_id(&key.topic_id)
                        .and_then(|t| t.partition(key.partition).map(|p| p.leader_epoch()))
                        .unwrap_or(-1),
                };
                let mut parts = self.partitions.lock();
                parts
                    .entry(key.clone())
                    .or_insert_with(|| Arc::new(Mutex::new(st)))
                    .clone()
            }
        };
        {
            let mut st = h.lock();
            st.reset(offset);
            st.state_epoch += 1;
        }
        self.persist(broker, key).await
    }

    /// Forgets `key`: its next use starts from `share.auto.offset.reset`.
    pub async fn forget(&self, broker: &Broker, key: &ShareKey) -> Result<(), ResponseError> {
        self.partitions.lock().remove(key);
        super::persister::delete(&self.store, broker, key).await
    }
}

impl ShareCoordinator {
    /// Deletes the share group `group` (it has no members): the state of every share-partition
    /// it has here or in the state partitions this broker leads, then the group.
    pub async fn delete_group(&self, broker: &Broker, group: &str) -> Result<(), ResponseError> {
        if self.has_members(group) {
            return Err(ResponseError::NonEmptyGroup);
        }
        for key in self.describe_offsets(broker, group).await?.keys() {
            self.forget(broker, key).await?;
        }
        broker
            .groups
            .write_share_group(broker, group, None)
            .await
            .map_err(|e| e.response_error())?;
        self.groups.lock().remove(group);
        self.counters.lock().remove(group);
        tracing::info!(group, "share group deleted");
        Ok(())
    }
}
