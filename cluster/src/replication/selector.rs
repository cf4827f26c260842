//! Which replica a consumer should read a partition from (KIP-392, fetch from follower): the
//! leader's choice, sent back as a Fetch response's `preferred_read_replica`. The broker's
//! `replica.selector.class` names the rule; Kafka ships one, `RackAwareReplicaSelector`, and
//! that is the one Samsa has.
//!
//! The leader offers only replicas that can serve the consumer's next fetch at once (Kafka's
//! `ReplicaManager.findPreferredReadReplica`): members of the ISR whose log holds the fetch
//! offset (see [`crate::replication::leader::LeaderPartition::read_replica_candidates`]), on a
//! live broker, and itself. A lagging replica outside the ISR is never named, or a consumer
//! sent to it could fall behind for good (the leader would name it again at every refresh).

use crate::NodeId;

/// `replica.selector.class`'s value for the one rule Samsa has.
pub const RACK_AWARE_REPLICA_SELECTOR: &str =
    "org.apache.kafka.common.replica.RackAwareReplicaSelector";

/// A rule that picks the replica a consumer reads from (Kafka's `ReplicaSelector`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// A replica in the consumer's rack (`client.rack` = the broker's `broker.rack`), else the
    /// leader (Kafka's `RackAwareReplicaSelector`).
    RackAware,
}

/// A replica as the selector sees it (Kafka's `ReplicaView`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaView<'a> {
    pub id: NodeId,
    /// The broker's `broker.rack`; `None` when it has none, or is not live.
    pub rack: Option<&'a str>,
    pub log_end_offset: i64,
    /// How long since the replica was last caught up with the leader (0 for the leader).
    pub time_since_caught_up_ms: u64,
}

impl ReplicaSelector {
    /// The selector `replica.selector.class` names: `None` for no value (Kafka's default: every
    /// consumer reads from the leader); an error for a class Samsa does not have.
    pub fn from_class_name(class: Option<&str>) -> Result<Option<ReplicaSelector>, String> {
        match class.map(str::trim) {
            None | Some("") => Ok(None),
            Some(RACK_AWARE_REPLICA_SELECTOR) => Ok(Some(ReplicaSelector::RackAware)),
            Some(other) => Err(format!(
                "replica.selector.class={other} is not available: Samsa has \
                 {RACK_AWARE_REPLICA_SELECTOR} only (or leave it unset to serve consumers \
                 from leaders)"
            )),
        }
    }

    /// The replica a consumer in `client_rack` should read from, when not `leader`: one of
    /// `candidates` (the other replicas that may serve it), or `None` for the leader itself.
    pub fn select(
        &self,
        client_rack: &str,
        leader: &ReplicaView<'_>,
        candidates: &[ReplicaView<'_>],
    ) -> Option<NodeId> {
        match self {
            ReplicaSelector::RackAware => rack_aware(client_rack, leader, candidates),
        }
    }
}

/// Kafka's `RackAwareReplicaSelector`: the leader when the client names no rack, when no
/// replica is in its rack, or when the leader is; else the most caught-up replica of that rack
/// (largest log end offset, then the most recently caught up, then the largest id, as Kafka's
/// `ReplicaView.comparator` breaks ties).
fn rack_aware(
    client_rack: &str,
    leader: &ReplicaView<'_>,
    candidates: &[ReplicaView<'_>],
) -> Option<NodeId> {
    if client_rack.is_empty() || leader.rack == Some(client_rack) {
        return None;
    }
    candidates
        .iter()
        .filter(|r| r.id != leader.id && r.rack == Some(client_rack))
        .max_by(|a, b| {
            a.log_end_offset
                .cmp(&b.log_end_offset)
                .then(b.time_since_caught_up_ms.cmp(&a.time_since_caught_up_ms))
                .then(a.id.cmp(&b.id))
        })
        .map(|r| r.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(id: NodeId, rack: Option<&str>, leo: i64, since_ms: u64) -> ReplicaView<'_> {
        ReplicaView {
            id,
            rack,
            log_end_offset: leo,
            time_since_caught_up_ms: since_ms,
        }
    }

    fn select(
        client_rack: &str,
        leader: ReplicaView<'_>,
        others: &[ReplicaView<'_>],
    ) -> Option<i32> {
        ReplicaSelector::RackAware.select(client_rack, &leader, others)
    }

    #[test]
    fn a_consumer_is_sent_to_the_in_sync_replica_of_its_rack() {
        let leader = replica(1, Some("a"), 100, 0);
        let others = [replica(2, Some("b"), 100, 0), replica(3, Some("c"), 100, 0)];
        assert_eq!(select("b", leader, &others), Some(2));
        assert_eq!(select("c", leader, &others), Some(3));
    }

    #[test]
    fn a_consumer_in_the_leaders_rack_reads_from_the_leader() {
        let leader = replica(1, Some("a"), 100, 0);
        // Another replica in rack "a" too: the leader still wins (Kafka prefers it).
        let others = [replica(2, Some("a"), 100, 0), replica(3, Some("c"), 100, 0)];
        assert_eq!(select("a", leader, &others), None);
    }

    #[test]
    fn no_replica_in_the_consumers_rack_means_the_leader() {
        let leader = replica(1, Some("a"), 100, 0);
        let others = [replica(2, Some("b"), 100, 0)];
        assert_eq!(select("z", leader, &others), None);
        assert_eq!(select("z", leader, &[]), None);
    }

    #[test]
    fn a_consumer_without_a_rack_reads_from_the_leader() {
        let leader = replica(1, None, 100, 0);
        // A broker without broker.rack is not in the rack "" either.
        let others = [replica(2, None, 100, 0), replica(3, Some(""), 100, 0)];
        assert_eq!(select("", leader, &others), None);
    }

    #[test]
    fn a_replica_without_a_known_rack_is_never_chosen() {
        // A broker that is not live is offered without its rack (Kafka: an empty endpoint).
        let leader = replica(1, Some("a"), 100, 0);
        let others = [replica(2, None, 100, 0)];
        assert_eq!(select("b", leader, &others), None);
    }

    #[test]
    fn among_replicas_of_one_rack_the_most_caught_up_wins() {
        let leader = replica(1, Some("a"), 100, 0);
        let others = [
            replica(2, Some("b"), 90, 0),
            replica(3, Some("b"), 100, 500),
            replica(4, Some("b"), 100, 20),
            replica(5, Some("c"), 200, 0),
        ];
        // Largest log end offset first, then the shortest time since caught up.
        assert_eq!(select("b", leader, &others), Some(4));
        let tie = [
            replica(2, Some("b"), 100, 20),
            replica(4, Some("b"), 100, 20),
        ];
        assert_eq!(select("b", leader, &tie), Some(4), "then the largest id");
    }

    #[test]
    fn the_leader_among_the_candidates_is_not_named() {
        let leader = replica(1, Some("a"), 100, 0);
        let others = [replica(1, Some("b"), 100, 0)];
        assert_eq!(select("b", leader, &others), None);
    }

    #[test]
    fn only_kafkas_rack_aware_class_is_accepted() {
        assert_eq!(ReplicaSelector::from_class_name(None), Ok(None));
        assert_eq!(ReplicaSelector::from_class_name(Some("")), Ok(None));
        assert_eq!(
            ReplicaSelector::from_class_name(Some(RACK_AWARE_REPLICA_SELECTOR)),
            Ok(Some(ReplicaSelector::RackAware))
        );
        let e = ReplicaSelector::from_class_name(Some("com.example.NearestSelector")).unwrap_err();
        assert!(e.contains("com.example.NearestSelector"), "{e}");
        assert!(e.contains(RACK_AWARE_REPLICA_SELECTOR), "{e}");
    }
}
