//! The committed offsets of one group, and the rule that expires them.
//!
//! Expiry follows Kafka's (KIP-211): offsets of a group with members never expire while it
//! is subscribed to their topic; once the group is empty, all of them expire
//! `offsets.retention.minutes` after it became empty; a group without a protocol (a "simple"
//! consumer that only commits) expires each offset that long after its last commit. An offset
//! committed by OffsetCommit v2-4 with an explicit retention time expires at that time instead.
//!
//! Invariant: `bytes` is the sum of [`entry_bytes`] over the entries, so the coordinator can
//! account memory in O(1).

use std::collections::BTreeMap;

use super::records::OffsetCommitValue;

/// Approximate memory of one committed offset besides its strings.
const ENTRY_OVERHEAD_BYTES: usize = 96;

/// Committed offsets keyed by (topic, partition), in order (OffsetFetch of all topics lists
/// them sorted, which makes answers stable).
#[derive(Debug, Default, Clone)]
pub struct GroupOffsets {
    by_partition: BTreeMap<(String, i32), OffsetCommitValue>,
    bytes: usize,
}

fn entry_bytes(topic: &str, v: &OffsetCommitValue) -> usize {
    ENTRY_OVERHEAD_BYTES + topic.len() + v.metadata.len()
}

/// Which timestamp an offset's retention counts from (Kafka's `OffsetExpirationCondition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryBase {
    /// From the moment the group became empty (falling back to the commit time when the
    /// group's state timestamp is unknown).
    GroupEmptySince(Option<i64>),
    /// From each offset's own commit time.
    CommitTime,
}

impl GroupOffsets {
    pub fn get(&self, topic: &str, partition: i32) -> Option<&OffsetCommitValue> {
        self.by_partition.get(&(topic.to_string(), partition))
    }

    pub fn commit(&mut self, topic: &str, partition: i32, value: OffsetCommitValue) {
        self.bytes += entry_bytes(topic, &value);
        if let Some(old) = self
            .by_partition
            .insert((topic.to_string(), partition), value)
        {
            self.bytes -= entry_bytes(topic, &old);
        }
    }

    pub fn remove(&mut self, topic: &str, partition: i32) -> Option<OffsetCommitValue> {
        let old = self.by_partition.remove(&(topic.to_string(), partition))?;
        self.bytes -= entry_bytes(topic, &old);
        Some(old)
    }

    pub fn is_empty(&self) -> bool {
        self.by_partition.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_partition.len()
    }

    /// Approximate memory held, for the coordinator's budget.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, &OffsetCommitValue)> {
        self.by_partition
            .iter()
            .map(|((t, p), v)| (t.as_str(), *p, v))
    }

    /// The partitions of `topic` that have an offset.
    pub fn partitions_of(&self, topic: &str) -> Vec<i32> {
        self.by_partition
            .range((topic.to_string(), i32::MIN)..=(topic.to_string(), i32::MAX))
            .map(|((_, p), _)| *p)
            .collect()
    }

    /// The offsets that have expired at `now_ms`, skipping topics the group is subscribed to.
    /// Returns (expired, all_expired): `all_expired` tells whether nothing would be left.
    pub fn expired(
        &self,
        now_ms: i64,
        retention_ms: i64,
        base: ExpiryBase,
        is_subscribed: impl Fn(&str) -> bool,
    ) -> (Vec<(String, i32)>, bool) {
        let mut expired = Vec::new();
        let mut all = true;
        for ((topic, partition), v) in &self.by_partition {
            if is_subscribed(topic) {
                all = false;
                continue;
            }
            let is_expired = match v.expire_timestamp_ms {
                Some(at) => now_ms >= at,
                None => {
                    let from = match base {
                        ExpiryBase::GroupEmptySince(Some(t)) => t,
                        ExpiryBase::GroupEmptySince(None) | ExpiryBase::CommitTime => {
                            v.commit_timestamp_ms
                        }
                    };
                    now_ms.saturating_sub(from) >= retention_ms
                }
            };
            if is_expired {
                expired.push((topic.clone(), *partition));
            } else {
                all = false;
            }
        }
        (expired, all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: i64, commit_ms: i64, expire: Option<i64>) -> OffsetCommitValue {
        OffsetCommitValue {
            offset,
            leader_epoch: -1,
            metadata: "m".into(),
            commit_timestamp_ms: commit_ms,
            expire_timestamp_ms: expire,
        }
    }

    #[test]
    fn byte_accounting_follows_inserts_replacements_and_removals() {
        let mut o = GroupOffsets::default();
        o.commit("t", 0, at(1, 0, None));
        let one = o.bytes();
        o.commit("t", 0, at(2, 0, None));
        assert_eq!(
            o.bytes(),
            one,
            "replacing an offset does not grow the account"
        );
        o.commit("other", 1, at(3, 0, None));
        assert!(o.bytes() > one);
        o.remove("other", 1);
        o.remove("t", 0);
        assert_eq!(o.bytes(), 0);
        assert!(o.is_empty());
    }

    #[test]
    fn empty_groups_expire_from_when_they_became_empty() {
        let mut o = GroupOffsets::default();
        o.commit("t", 0, at(1, 0, None));
        o.commit("t", 1, at(1, 500, None));
        let base = ExpiryBase::GroupEmptySince(Some(1_000));
        let (e, all) = o.expired(1_999, 1_000, base, |_| false);
        assert!(
            e.is_empty() && !all,
            "retention counts from the empty time, not the commit"
        );
        let (e, all) = o.expired(2_000, 1_000, base, |_| false);
        assert_eq!(e.len(), 2);
        assert!(all);
    }

    #[test]
    fn simple_groups_expire_each_offset_from_its_commit() {
        let mut o = GroupOffsets::default();
        o.commit("t", 0, at(1, 0, None));
        o.commit("t", 1, at(1, 900, None));
        let (e, all) = o.expired(1_000, 1_000, ExpiryBase::CommitTime, |_| false);
        assert_eq!(e, vec![("t".to_string(), 0)]);
        assert!(!all);
    }

    #[test]
    fn subscribed_topics_and_explicit_expire_times_are_honoured() {
        let mut o = GroupOffsets::default();
        o.commit("kept", 0, at(1, 0, None));
        o.commit("old", 0, at(1, 0, Some(50)));
        let (e, all) = o.expired(60, 1_000_000, ExpiryBase::CommitTime, |t| t == "kept");
        assert_eq!(e, vec![("old".to_string(), 0)]);
        assert!(!all);
        assert_eq!(o.partitions_of("kept"), vec![0]);
    }
}
