//! What the share-group admin APIs (Describe/Alter/DeleteShareGroupOffsets) do to the
//! share-partitions: read their start offsets (and, for those this broker holds, the records in
//! flight and archived), move their start offsets, and forget them.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::state_store::Snapshot;
use super::{ShareCoordinator, ShareKey};
use crate::node::Node;

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

/// The state AlterShareGroupOffsets writes over `persisted`: start `offset`, nothing in
/// flight, state and snapshot epochs one past the persisted ones (a share-partition leader
/// holding the old state is fenced by the first, and the second keeps the store's order of
/// writes).
fn reset_snapshot(persisted: Option<&Snapshot>, offset: i64, now_ms: i64) -> Snapshot {
    Snapshot {
        snapshot_epoch: persisted.map_or(0, |s| s.snapshot_epoch.saturating_add(1)),
        state_epoch: persisted.map_or(0, |s| s.state_epoch.saturating_add(1)),
        leader_epoch: persisted.map_or(-1, |s| s.leader_epoch),
        start_offset: offset,
        create_timestamp: now_ms,
        write_timestamp: now_ms,
        batches: Vec::new(),
        dlq_scan_from: None,
    }
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
        node: &Node,
        group: &str,
    ) -> Result<BTreeMap<ShareKey, OffsetsView>, ResponseError> {
        let mut out = BTreeMap::new();
        let view = |s: &super::state_store::Snapshot| OffsetsView {
            start_offset: s.start_offset,
            acquired: None,
            archived: None,
            delivery_complete: delivery_complete(s),
        };
        for (k, s) in self.store.group_states(node, group).await? {
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
            .filter_map(|n| node.topics.get(n))
            .chain(ids.iter().filter_map(|id| node.topics.get_by_id(id)))
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
                if let Some(s) = super::persister::read(&self.store, node, &key).await? {
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

    /// Moves `key`'s start offset to `offset` (the group has no members), as Kafka's group
    /// coordinator does: the new state (that start, nothing in flight) is written through the
    /// key's share coordinator at a state epoch above the persisted one, whichever broker leads
    /// the topic partition. That leader drops a copy it still holds when its group has had no
    /// share session there (the next fetch reads the new state), or when a write of it is
    /// fenced by the new state epoch.
    pub async fn alter_start(
        &self,
        node: &Node,
        key: &ShareKey,
        offset: i64,
    ) -> Result<(), ResponseError> {
        if offset < 0 {
            return Err(ResponseError::InvalidRequest);
        }
        let mut persisted = super::persister::read(&self.store, node, key).await?;
        if persisted.is_none() {
            // Kafka initializes a share-partition its offsets are altered for.
            super::persister::initialize(&self.store, node, key, 0).await?;
            persisted = super::persister::read(&self.store, node, key).await?;
        }
        let snapshot = reset_snapshot(persisted.as_ref(), offset, crate::util::now_ms());
        // A copy held here (this broker leads the topic partition) is stale from now on.
        self.partitions.lock().remove(key);
        super::persister::write(&self.store, node, key, snapshot).await?;
        self.partitions.lock().remove(key);
        // Initialized: assignable without asking again, and found by DescribeShareGroupOffsets
        // of the empty group whichever broker holds its state.
        self.with_group(&key.group, false, |g| {
            g.initialized(key.topic_id, &[key.partition], true)
        });
        Ok(())
    }

    /// Forgets `key`: its next use starts from `share.auto.offset.reset`.
    pub async fn forget(&self, node: &Node, key: &ShareKey) -> Result<(), ResponseError> {
        self.partitions.lock().remove(key);
        super::persister::delete(&self.store, node, key).await
    }
}

impl ShareCoordinator {
    /// The first half of deleting the share group `group` (it has no members): forgets the
    /// state of every share-partition it has here or in the state partitions this broker
    /// leads. The caller then writes the group's tombstone with the group coordinator and
    /// calls [`forget_group`](Self::forget_group), so that this coordinator never calls the
    /// group coordinator (which loads share groups into it).
    pub async fn delete_state(&self, node: &Node, group: &str) -> Result<(), ResponseError> {
        if self.has_members(group) {
            return Err(ResponseError::NonEmptyGroup);
        }
        for key in self.describe_offsets(node, group).await?.keys() {
            self.forget(node, key).await?;
        }
        Ok(())
    }

    /// The second half of deleting the share group `group`, once its tombstone is written.
    pub fn forget_group(&self, group: &str) {
        self.groups.lock().remove(group);
        self.counters.lock().remove(group);
        tracing::info!(group, "share group deleted");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::partition::{PersistedState, StateBatch};

    #[test]
    fn a_reset_drops_what_was_in_flight_and_fences_the_old_state_epoch() {
        let old = Snapshot {
            snapshot_epoch: 7,
            state_epoch: 3,
            leader_epoch: 2,
            start_offset: 10,
            create_timestamp: 1,
            write_timestamp: 2,
            batches: vec![StateBatch {
                first: 10,
                last: 12,
                state: PersistedState::Acknowledged,
                delivery_count: 1,
            }],
            dlq_scan_from: Some((0, 5)),
        };
        let s = reset_snapshot(Some(&old), 4, 99);
        assert_eq!(
            (
                s.state_epoch,
                s.snapshot_epoch,
                s.leader_epoch,
                s.start_offset
            ),
            (4, 8, 2, 4)
        );
        assert!(s.batches.is_empty());
        assert_eq!(s.dlq_scan_from, None);
        assert_eq!((s.create_timestamp, s.write_timestamp), (99, 99));
        assert_eq!(delivery_complete(&s), 0);
        // Nothing persisted (not reachable after initializing): epochs from zero.
        let s = reset_snapshot(None, 0, 1);
        assert_eq!((s.state_epoch, s.snapshot_epoch, s.start_offset), (0, 0, 0));
    }
}
