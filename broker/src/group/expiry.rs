//! Committed offsets that go without a commit: expired by `offsets.retention.minutes` (with the
//! empty groups they leave), and removed with a deleted topic.

use std::sync::Arc;
use std::time::Duration;

use super::records::CoordinatorRecord;
use super::{GroupCoordinator, GroupHandle, GroupState};
use crate::node::Node;

impl GroupCoordinator {
    /// Expires committed offsets every `offsets.retention.check.interval.ms`, until shutdown.
    pub async fn run_offset_expiry(self: Arc<Self>, node: Arc<Node>) {
        let mut interval =
            tokio::time::interval(Duration::from_millis(self.retention_check_interval_ms));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        loop {
            interval.tick().await;
            let this = self.clone();
            let b = node.clone();
            let work = tokio::task::spawn_blocking(move || {
                this.expire_offsets(&b, crate::util::now_ms(), this.offsets_retention_ms)
            });
            if let Err(e) = work.await {
                tracing::error!("offset expiry panicked: {e}");
            }
        }
    }

    /// A topic was deleted (Kafka's `onPartitionsDeleted`): the committed offsets of its
    /// partitions go from every group this broker coordinates, tombstoned, so that a topic made
    /// again under the name (a Streams application's repartition topic after a reset) is read
    /// from where the consumer's reset policy says, not from the old topic's offsets. Nobody
    /// waits for the writes. The number of offsets removed.
    pub fn delete_topic_offsets(&self, node: &Node, topic: &str) -> usize {
        let handles: Vec<GroupHandle> = self.groups.read().values().cloned().collect();
        let now_ms = crate::util::now_ms();
        let mut removed = 0;
        for handle in handles {
            let mut g = handle.lock();
            if g.state() == GroupState::Dead || self.check_loaded(&g.group_id).is_err() {
                continue;
            }
            let partitions: Vec<i32> = g
                .offsets
                .iter()
                .filter(|(t, _, _)| *t == topic)
                .map(|(_, p, _)| p)
                .collect();
            if partitions.is_empty() {
                continue;
            }
            let records: Vec<CoordinatorRecord> = partitions
                .iter()
                .map(|p| CoordinatorRecord::offset_tombstone(&g.group_id, topic, *p))
                .collect();
            let group_id = g.group_id.clone();
            match self.append(node, &group_id, &records, now_ms) {
                Ok(written) => drop(written),
                Err(e) => {
                    tracing::warn!(group = %group_id, topic, "cannot delete a deleted topic's offsets: {e}");
                    continue;
                }
            }
            let before = g.bytes();
            for p in &partitions {
                g.offsets.remove(topic, *p);
            }
            self.account(before, g.bytes());
            removed += partitions.len();
        }
        if removed > 0 {
            tracing::info!(
                topic,
                offsets = removed,
                "deleted the committed offsets of a deleted topic"
            );
        }
        removed
    }

    /// One expiry pass: tombstones expired offsets, and deletes empty groups left without
    /// offsets (Kafka's `cleanupGroupMetadata`). Returns (offsets expired, groups deleted).
    pub fn expire_offsets(&self, node: &Node, now_ms: i64, retention_ms: i64) -> (usize, usize) {
        let handles: Vec<GroupHandle> = self.groups.read().values().cloned().collect();
        let (mut offsets_expired, mut groups_deleted) = (0, 0);
        for handle in handles {
            let mut g = handle.lock();
            if g.state() == GroupState::Dead || self.check_loaded(&g.group_id).is_err() {
                continue;
            }
            let (expired, all) = if g.offsets.is_empty() {
                (Vec::new(), true)
            } else {
                match g.offset_expiry_base() {
                    None => continue,
                    Some(base) => g
                        .offsets
                        .expired(now_ms, retention_ms, base, |t| g.is_subscribed_to_topic(t)),
                }
            };
            let delete_group = all && g.state() == GroupState::Empty && g.pending_txn.is_empty();
            let mut records: Vec<CoordinatorRecord> = expired
                .iter()
                .map(|(t, p)| CoordinatorRecord::offset_tombstone(&g.group_id, t, *p))
                .collect();
            if delete_group {
                records.push(CoordinatorRecord::group_tombstone(&g.group_id));
            }
            if records.is_empty() {
                continue;
            }
            let group_id = g.group_id.clone();
            // Nobody waits for the cleanup, as nobody asked for it: a tombstone a new
            // coordinator lacks brings the offsets back until its own next pass.
            match self.append(node, &group_id, &records, now_ms) {
                Ok(written) => drop(written),
                Err(e) => {
                    tracing::warn!(group = %group_id, "cannot expire offsets: {e}");
                    continue;
                }
            }
            let before = g.bytes();
            for (t, p) in &expired {
                g.offsets.remove(t, *p);
            }
            self.account(before, g.bytes());
            offsets_expired += expired.len();
            if delete_group {
                g.mark_dead(now_ms);
                self.drop_group(&g);
                groups_deleted += 1;
            }
        }
        if offsets_expired + groups_deleted > 0 {
            tracing::info!(offsets_expired, groups_deleted, "expired committed offsets");
        }
        (offsets_expired, groups_deleted)
    }
}
