//! Kafka's replication quotas (KIP-73, `ReplicationQuotaManager`): a byte rate per direction
//! (what this broker sends as a leader, what it takes in as a follower), the replicas each
//! throttles, and the rule that decides whether a partition is held back now. The clock is an
//! argument; the fetch handler (leader side) and the replica fetchers (follower side) are the
//! shells.
//!
//! Kafka's rules, kept here:
//! - A topic's `leader.replication.throttled.replicas` / `follower.replication.throttled.replicas`
//!   is `*` (every replica) or `partition:broker` pairs; each broker takes the partitions paired
//!   with its own id (Kafka's `TopicConfigHandler.parseThrottledPartitions`), for the leader
//!   quota from the first list and for the follower quota from the second.
//! - A throttled partition is held back only while its replica is out of sync and the quota's
//!   measured rate is above its bound (`shouldLeaderThrottle`, `shouldFollowerThrottle`): an
//!   in-sync replica is never held back, so that a throttle cannot shrink an ISR.
//! - Every byte of a throttled partition is recorded, in sync or not (Kafka: "traffic from both
//!   in-sync and out of sync replicas are accounted for"), without checking the quota
//!   (`record` never throttles by itself).
//! - The rate is Kafka's `SimpleRate` over `replication.quota.window.num` windows of
//!   `replication.quota.window.size.seconds` ([`Rate::measure_simple`]); the bound defaults to
//!   `Long.MAX_VALUE` bytes/s, which nothing exceeds.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::rate::{Rate, Windows};

/// The replicas of one topic a throttled-replicas list names on this broker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Throttled {
    /// `*`: every replica.
    All,
    /// These partitions (sorted, no repeats).
    Partitions(Vec<i32>),
}

impl Throttled {
    fn contains(&self, partition: i32) -> bool {
        match self {
            Throttled::All => true,
            Throttled::Partitions(p) => p.binary_search(&partition).is_ok(),
        }
    }
}

/// What a throttled-replicas value names on broker `broker_id`: `None` when nothing (an empty
/// value, or no pair for this broker). Entries that are not `partition:broker` are skipped
/// (the value was validated when it was set).
pub fn parse_throttled_replicas(value: &str, broker_id: i32) -> Option<Throttled> {
    let value = value.trim();
    if value == "*" {
        return Some(Throttled::All);
    }
    let mut partitions: Vec<i32> = value
        .split(',')
        .filter_map(|entry| {
            let (p, b) = entry.trim().split_once(':')?;
            let (p, b) = (p.trim().parse::<i32>().ok()?, b.trim().parse::<i32>().ok()?);
            (b == broker_id).then_some(p)
        })
        .collect();
    partitions.sort_unstable();
    partitions.dedup();
    (!partitions.is_empty()).then_some(Throttled::Partitions(partitions))
}

/// Bytes per second that mean "unthrottled" (Kafka's default, `Long.MAX_VALUE`).
pub const UNTHROTTLED: i64 = i64::MAX;

/// One direction's quota: its bound, its measured rate and the replicas it throttles.
#[derive(Debug)]
pub struct ReplicationQuota {
    windows: Windows,
    bound_per_s: i64,
    rate: Rate,
    topics: HashMap<String, Throttled>,
    /// Bytes of throttled partitions recorded, ever (for metrics).
    recorded_bytes: u64,
    /// Partition fetches held back by the quota, ever (for metrics).
    held_back: u64,
}

impl ReplicationQuota {
    pub fn new(windows: Windows) -> ReplicationQuota {
        ReplicationQuota {
            windows,
            bound_per_s: UNTHROTTLED,
            rate: Rate::new(),
            topics: HashMap::new(),
            recorded_bytes: 0,
            held_back: 0,
        }
    }

    /// Sets the bound in bytes per second (a negative value counts as 0: everything throttled
    /// is held back).
    pub fn set_bound(&mut self, bytes_per_s: i64) {
        self.bound_per_s = bytes_per_s.max(0);
    }

    pub fn bound(&self) -> i64 {
        self.bound_per_s
    }

    /// Replaces what `topic`'s list throttles here (`None`: nothing), as Kafka's
    /// `markThrottled` / `removeThrottle`.
    pub fn set_topic(&mut self, topic: &str, throttled: Option<Throttled>) {
        match throttled {
            Some(t) => {
                self.topics.insert(topic.to_string(), t);
            }
            None => {
                self.topics.remove(topic);
            }
        }
    }

    /// Whether any replica is throttled in this direction.
    pub fn throttles_any(&self) -> bool {
        !self.topics.is_empty()
    }

    /// Whether the list of `topic` names `partition` on this broker.
    pub fn is_throttled(&self, topic: &str, partition: i32) -> bool {
        self.topics
            .get(topic)
            .is_some_and(|t| t.contains(partition))
    }

    /// Whether the measured rate is above the bound at `now_ms` (Kafka's `isQuotaExceeded`).
    pub fn is_exceeded(&mut self, now_ms: i64) -> bool {
        if self.bound_per_s == UNTHROTTLED {
            return false;
        }
        self.rate.measure_simple(self.windows, now_ms) > self.bound_per_s as f64
    }

    /// Whether to hold back `partition` of `topic` now: throttled here, its replica out of sync,
    /// and the quota exceeded. Counted when it is.
    pub fn should_throttle(
        &mut self,
        topic: &str,
        partition: i32,
        in_sync: bool,
        now_ms: i64,
    ) -> bool {
        let hold = !in_sync && self.is_throttled(topic, partition) && self.is_exceeded(now_ms);
        self.held_back += u64::from(hold);
        hold
    }

    /// Adds `bytes` of throttled partitions at `now_ms` (never checks the bound).
    pub fn record(&mut self, bytes: u64, now_ms: i64) {
        if bytes == 0 {
            return;
        }
        self.rate.record(self.windows, bytes as f64, now_ms);
        self.recorded_bytes += bytes;
    }

    /// The measured rate in bytes per second at `now_ms`.
    pub fn rate(&mut self, now_ms: i64) -> f64 {
        self.rate.measure_simple(self.windows, now_ms)
    }

    /// (bytes recorded, partition fetches held back), since the broker started.
    pub fn totals(&self) -> (u64, u64) {
        (self.recorded_bytes, self.held_back)
    }
}

/// The two quotas of a broker, each behind its own lock (the fetch handler takes the leader's,
/// the fetchers the follower's).
#[derive(Debug)]
pub struct ReplicationQuotas {
    pub leader: Mutex<ReplicationQuota>,
    pub follower: Mutex<ReplicationQuota>,
}

impl ReplicationQuotas {
    pub fn new(windows: Windows) -> ReplicationQuotas {
        ReplicationQuotas {
            leader: Mutex::new(ReplicationQuota::new(windows)),
            follower: Mutex::new(ReplicationQuota::new(windows)),
        }
    }

    /// Takes `leader.replication.throttled.rate` and `follower.replication.throttled.rate`.
    pub fn set_bounds(&self, leader_per_s: i64, follower_per_s: i64) {
        self.leader.lock().set_bound(leader_per_s);
        self.follower.lock().set_bound(follower_per_s);
    }

    /// Takes `topic`'s two throttled-replicas lists (`None`: unset) as broker `broker_id`.
    pub fn set_topic(
        &self,
        topic: &str,
        leader_list: Option<&str>,
        follower_list: Option<&str>,
        broker_id: i32,
    ) {
        let parse = |v: Option<&str>| v.and_then(|v| parse_throttled_replicas(v, broker_id));
        self.leader.lock().set_topic(topic, parse(leader_list));
        self.follower.lock().set_topic(topic, parse(follower_list));
    }

    /// Forgets a deleted topic.
    pub fn remove_topic(&self, topic: &str) {
        self.leader.lock().set_topic(topic, None);
        self.follower.lock().set_topic(topic, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows::KAFKA_DEFAULT;

    #[test]
    fn a_list_names_the_partitions_paired_with_this_broker() {
        assert_eq!(parse_throttled_replicas("*", 3), Some(Throttled::All));
        assert_eq!(parse_throttled_replicas(" * ", 3), Some(Throttled::All));
        assert_eq!(parse_throttled_replicas("", 3), None);
        assert_eq!(
            parse_throttled_replicas("0:1,0:2,1:3,2:2, 4 : 2,0:2", 2),
            Some(Throttled::Partitions(vec![0, 2, 4]))
        );
        assert_eq!(parse_throttled_replicas("0:1,1:3", 2), None);
        assert_eq!(
            parse_throttled_replicas("x:2,3:2", 2),
            Some(Throttled::Partitions(vec![3]))
        );
    }

    #[test]
    fn nothing_is_held_back_without_a_bound() {
        let mut q = ReplicationQuota::new(W);
        q.set_topic("t", Some(Throttled::All));
        q.record(u64::MAX / 2, 0);
        assert!(!q.is_exceeded(0));
        assert!(!q.should_throttle("t", 0, false, 0));
    }

    #[test]
    fn a_throttled_replica_out_of_sync_is_held_back_once_the_rate_passes_the_bound() {
        let mut q = ReplicationQuota::new(W);
        q.set_bound(1_000);
        q.set_topic("t", parse_throttled_replicas("0:1,1:2", 1));
        assert!(!q.should_throttle("t", 0, false, 0));
        // 1,000 bytes in the first window: at the bound, not above it.
        q.record(1_000, 0);
        assert!(!q.should_throttle("t", 0, false, 100));
        q.record(1, 100);
        assert!(q.should_throttle("t", 0, false, 100));
        // In sync: never held back.
        assert!(!q.should_throttle("t", 0, true, 100));
        // Not named for this broker, or another topic: never held back.
        assert!(!q.should_throttle("t", 1, false, 100));
        assert!(!q.should_throttle("u", 0, false, 100));
        assert_eq!(q.totals(), (1_001, 1));
        // Two seconds on, 1,001 bytes over 2 s is within the bound again.
        assert!(!q.should_throttle("t", 0, false, 2_000));
    }

    #[test]
    fn a_replica_fetched_whenever_the_quota_allows_averages_the_bound() {
        // The leader's loop: a fetch every 100 ms, answered with up to 1 MB unless held back.
        let mut q = ReplicationQuota::new(W);
        q.set_bound(2_000_000);
        q.set_topic("t", Some(Throttled::All));
        let mut sent = 0u64;
        for t in (0..60_000).step_by(100) {
            if !q.should_throttle("t", 0, false, t) {
                q.record(1_000_000, t);
                sent += 1_000_000;
            }
        }
        let rate = sent as f64 / 60.0;
        assert!(
            (1_800_000.0..=2_300_000.0).contains(&rate),
            "{rate} B/s against a bound of 2,000,000"
        );
    }

    #[test]
    fn a_list_removed_or_a_topic_deleted_throttles_nothing() {
        let q = ReplicationQuotas::new(W);
        q.set_topic("t", Some("0:1"), Some("0:2"), 2);
        assert!(!q.leader.lock().is_throttled("t", 0));
        assert!(q.follower.lock().is_throttled("t", 0));
        q.set_topic("t", Some("*"), None, 2);
        assert!(q.leader.lock().is_throttled("t", 7));
        assert!(!q.follower.lock().throttles_any());
        q.remove_topic("t");
        assert!(!q.leader.lock().throttles_any());
    }

    #[test]
    fn bounds_follow_the_broker_keys() {
        let q = ReplicationQuotas::new(W);
        assert_eq!(q.leader.lock().bound(), UNTHROTTLED);
        q.set_bounds(4_000_000, -5);
        assert_eq!(q.leader.lock().bound(), 4_000_000);
        assert_eq!(q.follower.lock().bound(), 0);
    }
}
