//! Replica placement: which brokers hold the replicas of new partitions (CreateTopics,
//! CreatePartitions without `assignments`), and validation of manual `assignments`.
//!
//! The goals are Kafka's `StripedReplicaPlacer`'s, in its order of priority:
//!
//! 1. Spread each partition's replicas across racks: a partition with replication factor RF
//!    spans `min(RF, racks)` racks. Rack spread wins over broker balance, as in Kafka: a rack with
//!    one broker gets a replica of most partitions if the other racks are big (racks are meant to
//!    be about the same size; if they are not, that is the operator's choice).
//! 2. Spread leaders (first replicas, the preferred leaders) and replicas evenly over racks, and
//!    within a rack over its brokers.
//! 3. Prefer unfenced brokers; a fenced broker gets a replica only when its rack has no unused
//!    unfenced broker left for that partition (Kafka places on fenced brokers rather than fail).
//!
//! and Kafka's two constraints, which are errors when they cannot hold: no broker holds two
//! replicas of one partition (so RF <= usable brokers, fenced ones included), and the leader of
//! each new partition is unfenced (so at least one broker is unfenced).
//!
//! "Usable" brokers are Kafka's `usableBrokers()`: registered and not in controlled shutdown,
//! fenced or not. The caller builds that list.
//!
//! How, unlike Kafka's code: Kafka strides round-robin through racks and brokers from random
//! offsets and reshuffles every `unfenced brokers` partitions, which keeps the rack stripe but lets
//! leader counts per broker drift in multi-rack clusters. Here every choice takes the least-loaded
//! candidate (fewest leaders for a leader, fewest replicas for a follower), ties broken by a
//! seeded ranking of racks and brokers. On a fresh topic that ranking *is* the stripe; counts
//! make leaders come out within one of even per rack and, with equal racks, per broker. The
//! counts start from the topic's existing partitions, so CreatePartitions continues the spread
//! (and new brokers, being empty, take the new partitions first).
//!
//! Pure: no OS randomness, the caller passes a `u64` seed (e.g. bits of the topic id), and the
//! same brokers, existing partitions, spec and seed give the same answer whatever the order of
//! the broker list.

use std::collections::{HashMap, HashSet};

use kafka_protocol::ResponseError;

use crate::NodeId;

/// A broker replicas may be placed on (Kafka's `UsableBroker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableBroker {
    pub id: NodeId,
    /// `broker.rack`; brokers without one form one rack of their own.
    pub rack: Option<String>,
    pub fenced: bool,
}

/// What to place (Kafka's `PlacementSpec`, less `startPartition`: the existing partitions are
/// passed to [`place`] whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementSpec {
    /// How many new partitions.
    pub num_partitions: i32,
    pub replication_factor: i16,
}

/// Why replicas cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("invalid partition count {num_partitions}: the number of partitions must be positive")]
    NonPositivePartitionCount { num_partitions: i32 },
    #[error(
        "invalid replication factor {replication_factor}: the replication factor must be positive"
    )]
    NonPositiveReplicationFactor { replication_factor: i16 },
    #[error("no brokers are available to place replicas on")]
    NoUsableBrokers,
    #[error("all {brokers} available brokers are fenced: a partition's leader must be unfenced")]
    AllBrokersFenced { brokers: usize },
    #[error(
        "replication factor {replication_factor} is larger than the {available} available brokers"
    )]
    ReplicationFactorTooLarge {
        replication_factor: i16,
        available: usize,
    },
}

impl PlacementError {
    /// The error code for CreateTopics / CreatePartitions, as Kafka's controller answers.
    pub fn error_code(&self) -> i16 {
        match self {
            Self::NonPositivePartitionCount { .. } => ResponseError::InvalidPartitions.code(),
            _ => ResponseError::InvalidReplicationFactor.code(),
        }
    }
}

/// Splitmix64: a small, good-enough deterministic generator for tie-break rankings (and the
/// controller's topic ids).
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (rejection sampling, so no modulo bias), `n > 0`.
    fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }

    /// A uniformly random permutation of `0..n` (Fisher-Yates).
    fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, self.below(i + 1));
        }
        p
    }
}

struct Broker {
    id: NodeId,
    rack: usize,
    fenced: bool,
    /// Tie-break rank from the seed; lower goes first.
    rank: usize,
    leaders: u64,
    replicas: u64,
}

struct Rack {
    brokers: Vec<usize>,
    rank: usize,
    has_unfenced: bool,
    leaders: u64,
    replicas: u64,
}

/// Places `spec.num_partitions` new partitions and returns each one's replica list, the first
/// replica being the preferred leader. `existing` holds the topic's current partitions' replica
/// lists (empty for CreateTopics); their replicas on usable brokers count as load so the new
/// partitions continue the spread. Duplicate ids in `brokers` are ignored after the first.
pub fn place(
    brokers: &[UsableBroker],
    existing: &[Vec<NodeId>],
    spec: PlacementSpec,
    seed: u64,
) -> Result<Vec<Vec<NodeId>>, PlacementError> {
    let PlacementSpec {
        num_partitions,
        replication_factor,
    } = spec;
    if num_partitions < 1 {
        return Err(PlacementError::NonPositivePartitionCount { num_partitions });
    }
    if replication_factor < 1 {
        return Err(PlacementError::NonPositiveReplicationFactor { replication_factor });
    }
    // Sort so that the answer does not depend on the order the caller listed brokers in.
    let mut sorted: Vec<&UsableBroker> = brokers.iter().collect();
    sorted.sort_by_key(|b| b.id);
    sorted.dedup_by_key(|b| b.id);
    if sorted.is_empty() {
        return Err(PlacementError::NoUsableBrokers);
    }
    if sorted.iter().all(|b| b.fenced) {
        return Err(PlacementError::AllBrokersFenced {
            brokers: sorted.len(),
        });
    }
    let rf = replication_factor as usize;
    if rf > sorted.len() {
        return Err(PlacementError::ReplicationFactorTooLarge {
            replication_factor,
            available: sorted.len(),
        });
    }

    let mut rack_names: Vec<&Option<String>> = sorted.iter().map(|b| &b.rack).collect();
    rack_names.sort();
    rack_names.dedup();
    let rack_index: HashMap<&Option<String>, usize> = rack_names
        .iter()
        .enumerate()
        .map(|(i, r)| (*r, i))
        .collect();

    let mut rng = SplitMix64(seed);
    let rack_ranks = rng.permutation(rack_names.len());
    let broker_ranks = rng.permutation(sorted.len());
    let mut racks: Vec<Rack> = rack_ranks
        .into_iter()
        .map(|rank| Rack {
            brokers: Vec::new(),
            rank,
            has_unfenced: false,
            leaders: 0,
            replicas: 0,
        })
        .collect();
    let mut all: Vec<Broker> = Vec::with_capacity(sorted.len());
    for (i, (b, rank)) in sorted.iter().zip(broker_ranks).enumerate() {
        let rack = rack_index[&b.rack];
        racks[rack].brokers.push(i);
        racks[rack].has_unfenced |= !b.fenced;
        all.push(Broker {
            id: b.id,
            rack,
            fenced: b.fenced,
            rank,
            leaders: 0,
            replicas: 0,
        });
    }
    let by_id: HashMap<NodeId, usize> = all.iter().enumerate().map(|(i, b)| (b.id, i)).collect();

    // Load from the topic's existing partitions; replicas on brokers that are gone or shutting
    // down do not count (those brokers get nothing new anyway).
    for replicas in existing {
        for (pos, id) in replicas.iter().enumerate() {
            if let Some(&i) = by_id.get(id) {
                let rack = all[i].rack;
                all[i].replicas += 1;
                racks[rack].replicas += 1;
                if pos == 0 {
                    all[i].leaders += 1;
                    racks[rack].leaders += 1;
                }
            }
        }
    }

    let mut out = Vec::with_capacity(num_partitions as usize);
    let mut chosen: Vec<usize> = Vec::with_capacity(rf);
    let mut in_partition: HashSet<usize> = HashSet::with_capacity(rf);
    let mut rack_use = vec![0usize; racks.len()];
    for _ in 0..num_partitions {
        chosen.clear();
        in_partition.clear();
        rack_use.iter_mut().for_each(|n| *n = 0);

        // The leader: the rack with the fewest leaders among racks with an unfenced broker
        // (Kafka's constraint that a new leader is unfenced), then that rack's unfenced broker
        // with the fewest leaders, then the fewest replicas.
        let leader_rack = (0..racks.len())
            .filter(|&r| racks[r].has_unfenced)
            .min_by_key(|&r| (racks[r].leaders, racks[r].replicas, racks[r].rank))
            .expect("checked above: some broker is unfenced");
        let leader = racks[leader_rack]
            .brokers
            .iter()
            .copied()
            .filter(|&b| !all[b].fenced)
            .min_by_key(|&b| (all[b].leaders, all[b].replicas, all[b].rank))
            .expect("the rack has an unfenced broker");
        all[leader].leaders += 1;
        racks[leader_rack].leaders += 1;
        chosen.push(leader);
        in_partition.insert(leader);
        rack_use[leader_rack] += 1;

        // Followers: the rack holding the fewest of this partition's replicas (so the partition
        // spans min(RF, racks) racks), then the rack with the fewest replicas overall; in it,
        // an unfenced broker before a fenced one, then the fewest replicas.
        for _ in 1..rf {
            let rack = (0..racks.len())
                .filter(|&r| racks[r].brokers.iter().any(|b| !in_partition.contains(b)))
                .min_by_key(|&r| (rack_use[r], racks[r].replicas, racks[r].rank))
                .expect("RF <= brokers, so some broker is unused");
            let broker = racks[rack]
                .brokers
                .iter()
                .copied()
                .filter(|b| !in_partition.contains(b))
                .min_by_key(|&b| {
                    (
                        all[b].fenced,
                        all[b].replicas,
                        std::cmp::Reverse(all[b].leaders),
                        all[b].rank,
                    )
                })
                .expect("the rack has an unused broker");
            chosen.push(broker);
            in_partition.insert(broker);
            rack_use[rack] += 1;
        }
        for &b in &chosen {
            all[b].replicas += 1;
            racks[all[b].rack].replicas += 1;
        }
        debug_assert_eq!(in_partition.len(), rf);
        out.push(chosen.iter().map(|&b| all[b].id).collect());
    }
    Ok(out)
}

/// Why a manual replica assignment (CreateTopics / CreatePartitions `assignments`) is refused.
/// Every case answers INVALID_REPLICA_ASSIGNMENT, as Kafka's KRaft controller does: an
/// unregistered broker is INVALID_REPLICA_ASSIGNMENT, not BROKER_NOT_AVAILABLE (that was the
/// ZooKeeper-era admin path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignmentError {
    #[error("the manual assignment of partition {partition} has an empty replica list")]
    EmptyReplicaList { partition: i32 },
    #[error(
        "the manual assignment of partition {partition} includes broker {broker}, \
         but no such broker is registered"
    )]
    UnregisteredBroker { partition: i32, broker: NodeId },
    #[error(
        "the manual assignment of partition {partition} includes broker {broker} more than once"
    )]
    DuplicateBroker { partition: i32, broker: NodeId },
    #[error(
        "the manual assignment of partition {partition} has {replicas} replica(s), \
         but the topic's other partitions have {expected}"
    )]
    InconsistentReplicationFactor {
        partition: i32,
        replicas: usize,
        expected: usize,
    },
    #[error(
        "every broker in the manual assignment of partition {partition} is fenced \
         or in controlled shutdown"
    )]
    NoActiveReplica { partition: i32 },
    #[error("partition {partition} has more than one manual assignment")]
    DuplicatePartition { partition: i32 },
    #[error(
        "the {count} manual assignment(s) do not cover partition {missing}: partitions must be \
         numbered consecutively from 0"
    )]
    NonConsecutivePartitions { missing: i32, count: usize },
    #[error(
        "{additional} partition(s) are being added, but {assignments} assignment(s) were given"
    )]
    AssignmentCountMismatch {
        additional: usize,
        assignments: usize,
    },
}

impl AssignmentError {
    /// The error code for CreateTopics / CreatePartitions.
    pub fn error_code(&self) -> i16 {
        ResponseError::InvalidReplicaAssignment.code()
    }
}

/// Checks one partition's manual replica list, in Kafka's order: non-empty, then over the
/// brokers in id order each registered and not repeated, then the replication factor matching
/// `expected_rf` (the topic's other partitions) when given, then at least one replica
/// `is_active` (unfenced, not shutting down) so the partition can have an ISR and a leader.
pub fn validate_manual_assignment(
    partition: i32,
    replicas: &[NodeId],
    expected_rf: Option<usize>,
    is_registered: impl Fn(NodeId) -> bool,
    is_active: impl Fn(NodeId) -> bool,
) -> Result<(), AssignmentError> {
    if replicas.is_empty() {
        return Err(AssignmentError::EmptyReplicaList { partition });
    }
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    for (i, &broker) in sorted.iter().enumerate() {
        if !is_registered(broker) {
            return Err(AssignmentError::UnregisteredBroker { partition, broker });
        }
        if i > 0 && sorted[i - 1] == broker {
            return Err(AssignmentError::DuplicateBroker { partition, broker });
        }
    }
    if let Some(expected) = expected_rf {
        if replicas.len() != expected {
            return Err(AssignmentError::InconsistentReplicationFactor {
                partition,
                replicas: replicas.len(),
                expected,
            });
        }
    }
    if !replicas.iter().any(|&b| is_active(b)) {
        return Err(AssignmentError::NoActiveReplica { partition });
    }
    Ok(())
}

/// Checks CreateTopics `assignments` (`(partition_index, broker_ids)` in request order) and
/// returns the replica lists by partition index. All partitions must have the first one's
/// replication factor, and the indexes must be exactly `0..assignments.len()`. (The caller
/// rejects, with INVALID_REQUEST, assignments sent with `num_partitions` or
/// `replication_factor` other than -1.)
pub fn validate_create_topic_assignments(
    assignments: &[(i32, Vec<NodeId>)],
    is_registered: impl Fn(NodeId) -> bool,
    is_active: impl Fn(NodeId) -> bool,
) -> Result<Vec<Vec<NodeId>>, AssignmentError> {
    let mut by_index: HashMap<i32, &Vec<NodeId>> = HashMap::with_capacity(assignments.len());
    let mut expected_rf = None;
    for (partition, replicas) in assignments {
        let partition = *partition;
        if by_index.contains_key(&partition) {
            return Err(AssignmentError::DuplicatePartition { partition });
        }
        validate_manual_assignment(partition, replicas, expected_rf, &is_registered, &is_active)?;
        expected_rf = Some(replicas.len());
        by_index.insert(partition, replicas);
    }
    let count = assignments.len();
    (0..count as i32)
        .map(|i| {
            by_index
                .get(&i)
                .map(|r| (*r).clone())
                .ok_or(AssignmentError::NonConsecutivePartitions { missing: i, count })
        })
        .collect()
}

/// Checks CreatePartitions `assignments` for the partitions `existing..existing + additional`:
/// one assignment per new partition, each with the topic's `replication_factor`.
pub fn validate_create_partitions_assignments(
    existing: i32,
    additional: usize,
    replication_factor: usize,
    assignments: &[Vec<NodeId>],
    is_registered: impl Fn(NodeId) -> bool,
    is_active: impl Fn(NodeId) -> bool,
) -> Result<(), AssignmentError> {
    if assignments.len() != additional {
        return Err(AssignmentError::AssignmentCountMismatch {
            additional,
            assignments: assignments.len(),
        });
    }
    for (i, replicas) in assignments.iter().enumerate() {
        validate_manual_assignment(
            existing + i as i32,
            replicas,
            Some(replication_factor),
            &is_registered,
            &is_active,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn broker(id: NodeId, rack: Option<&str>, fenced: bool) -> UsableBroker {
        UsableBroker {
            id,
            rack: rack.map(str::to_owned),
            fenced,
        }
    }

    fn no_racks(n: i32) -> Vec<UsableBroker> {
        (0..n).map(|id| broker(id, None, false)).collect()
    }

    fn spec(num_partitions: i32, replication_factor: i16) -> PlacementSpec {
        PlacementSpec {
            num_partitions,
            replication_factor,
        }
    }

    fn counts(parts: &[Vec<NodeId>], leaders_only: bool) -> HashMap<NodeId, usize> {
        let mut c = HashMap::new();
        for p in parts {
            let take = if leaders_only { 1 } else { p.len() };
            for &b in &p[..take] {
                *c.entry(b).or_insert(0) += 1;
            }
        }
        c
    }

    /// max - min over `ids` (absent ids count 0).
    fn spread(c: &HashMap<NodeId, usize>, ids: impl Iterator<Item = NodeId>) -> usize {
        let v: Vec<usize> = ids.map(|i| *c.get(&i).unwrap_or(&0)).collect();
        v.iter().max().unwrap() - v.iter().min().unwrap()
    }

    #[test]
    fn errors_name_the_numbers_and_map_to_kafka_codes() {
        let e = place(&no_racks(2), &[], spec(1, 3), 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "replication factor 3 is larger than the 2 available brokers"
        );
        assert_eq!(
            e.error_code(),
            ResponseError::InvalidReplicationFactor.code()
        );
        let e = place(&no_racks(2), &[], spec(1, 0), 0).unwrap_err();
        assert_eq!(
            e,
            PlacementError::NonPositiveReplicationFactor {
                replication_factor: 0
            }
        );
        let e = place(&no_racks(2), &[], spec(0, 1), 0).unwrap_err();
        assert_eq!(e.error_code(), ResponseError::InvalidPartitions.code());
        assert_eq!(
            place(&[], &[], spec(1, 1), 0),
            Err(PlacementError::NoUsableBrokers)
        );
        let fenced = vec![broker(1, None, true), broker(2, None, true)];
        assert_eq!(
            place(&fenced, &[], spec(1, 1), 0),
            Err(PlacementError::AllBrokersFenced { brokers: 2 })
        );
    }

    #[test]
    fn fenced_brokers_only_take_followers_when_unfenced_ones_run_out() {
        // Kafka's testPlacementOnFencedReplicaOnSingleRack, in spirit: RF 3 on 2 unfenced + 1
        // fenced places on the fenced one, never as leader.
        let brokers = vec![
            broker(3, None, false),
            broker(1, None, true),
            broker(2, None, false),
        ];
        for p in place(&brokers, &[], spec(20, 3), 7).unwrap() {
            assert_ne!(p[0], 1);
            assert_eq!(p[2], 1, "{p:?}");
        }
        // With room to spare the fenced broker gets nothing.
        let brokers = vec![
            broker(0, None, false),
            broker(1, None, true),
            broker(2, None, false),
            broker(3, None, false),
        ];
        let parts = place(&brokers, &[], spec(30, 3), 7).unwrap();
        assert!(parts.iter().all(|p| !p.contains(&1)));
    }

    #[test]
    fn single_unfenced_broker_leads_everything() {
        let brokers = vec![broker(0, None, false), broker(1, None, true)];
        let parts = place(&brokers, &[], spec(3, 1), 1).unwrap();
        assert_eq!(parts, vec![vec![0], vec![0], vec![0]]);
    }

    #[test]
    fn same_input_in_any_order_gives_the_same_placement() {
        let mut brokers: Vec<UsableBroker> = (0..6)
            .map(|id| broker(id, Some(["a", "b", "c"][id as usize % 3]), false))
            .collect();
        let a = place(&brokers, &[], spec(12, 3), 42).unwrap();
        brokers.reverse();
        assert_eq!(a, place(&brokers, &[], spec(12, 3), 42).unwrap());
    }

    #[test]
    fn seeds_change_the_stripe() {
        let brokers = no_racks(10);
        let firsts: HashSet<NodeId> = (0..20)
            .map(|seed| place(&brokers, &[], spec(1, 1), seed).unwrap()[0][0])
            .collect();
        assert!(firsts.len() > 3, "{firsts:?}");
    }

    #[test]
    fn adding_partitions_continues_the_spread() {
        let brokers: Vec<UsableBroker> = (0..6)
            .map(|id| broker(id, Some(["a", "b"][id as usize % 2]), false))
            .collect();
        let mut parts = place(&brokers, &[], spec(5, 2), 3).unwrap();
        for _ in 0..4 {
            let more = place(&brokers, &parts, spec(7, 2), 3).unwrap();
            parts.extend(more);
            assert!(spread(&counts(&parts, true), 0..6) <= 1, "{parts:?}");
        }
        // A new broker takes new partitions' leadership first.
        let mut grown = brokers.clone();
        grown.push(broker(6, Some("a"), false));
        let more = place(&grown, &parts, spec(3, 2), 3).unwrap();
        assert!(more.iter().any(|p| p[0] == 6), "{more:?}");
    }

    #[test]
    fn uneven_racks_still_get_a_replica_of_every_partition() {
        // Kafka's documented trade-off: rack spread beats broker balance.
        let mut brokers: Vec<UsableBroker> = (0..10)
            .map(|id| broker(id, Some(["a", "b"][id as usize % 2]), false))
            .collect();
        brokers.push(broker(99, Some("c"), false));
        let parts = place(&brokers, &[], spec(30, 3), 5).unwrap();
        assert!(parts.iter().all(|p| p.contains(&99)));
    }

    #[test]
    fn manual_assignment_validation_follows_kafka() {
        let registered = |b: NodeId| (0..4).contains(&b);
        let active = |b: NodeId| b != 3;
        let ok = validate_create_topic_assignments(
            &[(1, vec![2, 0]), (0, vec![0, 1])],
            registered,
            active,
        );
        assert_eq!(ok, Ok(vec![vec![0, 1], vec![2, 0]]));
        let check = |a: &[(i32, Vec<NodeId>)]| {
            validate_create_topic_assignments(a, registered, active).unwrap_err()
        };
        assert_eq!(
            check(&[(0, vec![])]),
            AssignmentError::EmptyReplicaList { partition: 0 }
        );
        let e = check(&[(0, vec![0, 7])]);
        assert_eq!(
            e.to_string(),
            "the manual assignment of partition 0 includes broker 7, but no such broker is registered"
        );
        assert_eq!(
            e.error_code(),
            ResponseError::InvalidReplicaAssignment.code()
        );
        assert_eq!(
            check(&[(0, vec![1, 0, 1])]),
            AssignmentError::DuplicateBroker {
                partition: 0,
                broker: 1
            }
        );
        assert_eq!(
            check(&[(0, vec![0, 1]), (1, vec![2])]),
            AssignmentError::InconsistentReplicationFactor {
                partition: 1,
                replicas: 1,
                expected: 2
            }
        );
        assert_eq!(
            check(&[(0, vec![3])]),
            AssignmentError::NoActiveReplica { partition: 0 }
        );
        assert_eq!(
            check(&[(0, vec![0]), (0, vec![1])]),
            AssignmentError::DuplicatePartition { partition: 0 }
        );
        assert_eq!(
            check(&[(0, vec![0]), (2, vec![1])]),
            AssignmentError::NonConsecutivePartitions {
                missing: 1,
                count: 2
            }
        );
        assert_eq!(
            validate_create_partitions_assignments(3, 2, 2, &[vec![0, 1]], registered, active),
            Err(AssignmentError::AssignmentCountMismatch {
                additional: 2,
                assignments: 1
            })
        );
        assert_eq!(
            validate_create_partitions_assignments(
                3,
                2,
                2,
                &[vec![0, 1], vec![2]],
                registered,
                active
            ),
            Err(AssignmentError::InconsistentReplicationFactor {
                partition: 4,
                replicas: 1,
                expected: 2
            })
        );
    }

    /// Random clusters: 1..12 brokers over 0..4 named racks (0 = no racks), some fenced.
    fn cluster() -> impl Strategy<Value = Vec<UsableBroker>> {
        (1usize..12, 0usize..5).prop_flat_map(|(n, racks)| {
            proptest::collection::vec((0..racks.max(1), proptest::bool::weighted(0.2)), n).prop_map(
                move |v| {
                    v.into_iter()
                        .enumerate()
                        .map(|(i, (r, fenced))| UsableBroker {
                            id: i as NodeId * 3 + 1,
                            rack: (racks > 0).then(|| format!("r{r}")),
                            fenced,
                        })
                        .collect()
                },
            )
        })
    }

    proptest! {
        #[test]
        fn placements_hold_kafkas_constraints(
            brokers in cluster(),
            rf in 1i16..5,
            partitions in 1i32..60,
            seed: u64,
        ) {
            let unfenced = brokers.iter().filter(|b| !b.fenced).count();
            let result = place(&brokers, &[], spec(partitions, rf), seed);
            if unfenced == 0 {
                prop_assert_eq!(result, Err(PlacementError::AllBrokersFenced { brokers: brokers.len() }));
                return Ok(());
            }
            if rf as usize > brokers.len() {
                prop_assert!(
                    matches!(result, Err(PlacementError::ReplicationFactorTooLarge { .. })),
                    "expected ReplicationFactorTooLarge, got {:?}", result
                );
                return Ok(());
            }
            let parts = result.unwrap();
            prop_assert_eq!(parts.len(), partitions as usize);
            let info: HashMap<NodeId, &UsableBroker> = brokers.iter().map(|b| (b.id, b)).collect();
            let racks: HashSet<&Option<String>> = brokers.iter().map(|b| &b.rack).collect();
            for p in &parts {
                let distinct: HashSet<NodeId> = p.iter().copied().collect();
                prop_assert_eq!(distinct.len(), rf as usize);
                prop_assert!(!info[&p[0]].fenced, "fenced leader in {:?}", p);
                let spanned: HashSet<&Option<String>> = p.iter().map(|b| &info[b].rack).collect();
                prop_assert_eq!(spanned.len(), (rf as usize).min(racks.len()));
                // Fenced only when the rack's unfenced brokers are used up for this partition.
                for b in p.iter().filter(|b| info[b].fenced) {
                    let rack = &info[b].rack;
                    prop_assert!(brokers.iter().filter(|o| &o.rack == rack && !o.fenced)
                        .all(|o| p.contains(&o.id)), "{:?} used fenced {}", p, b);
                }
            }
            // Leaders: within one of even per rack (racks with an unfenced broker), and within
            // one inside each rack over its unfenced brokers.
            let leaders = counts(&parts, true);
            let mut per_rack: HashMap<&Option<String>, usize> = HashMap::new();
            for (id, n) in &leaders {
                *per_rack.entry(&info[id].rack).or_insert(0) += n;
            }
            let leader_racks: HashSet<&Option<String>> =
                brokers.iter().filter(|b| !b.fenced).map(|b| &b.rack).collect();
            let rack_counts: Vec<usize> = leader_racks.iter().map(|r| *per_rack.get(r).unwrap_or(&0)).collect();
            prop_assert!(rack_counts.iter().max().unwrap() - rack_counts.iter().min().unwrap() <= 1);
            for rack in &leader_racks {
                let ids = brokers.iter().filter(|b| &b.rack == *rack && !b.fenced).map(|b| b.id);
                prop_assert!(spread(&leaders, ids) <= 1, "leaders {:?}", leaders);
            }
        }

        #[test]
        fn equal_racks_spread_leaders_and_replicas_over_brokers(
            racks in 1usize..5,
            per_rack in 1usize..5,
            rf in 1i16..4,
            partitions in 1i32..100,
            split in 0i32..100,
            seed: u64,
        ) {
            let brokers: Vec<UsableBroker> = (0..racks * per_rack)
                .map(|i| broker(i as NodeId, Some(&format!("r{}", i % racks)), false))
                .collect();
            prop_assume!(rf as usize <= brokers.len());
            // Placing in two CreatePartitions steps spreads as well as one CreateTopics.
            let first = (split % partitions).max(1);
            let mut parts = place(&brokers, &[], spec(first, rf), seed).unwrap();
            if partitions > first {
                let more = place(&brokers, &parts, spec(partitions - first, rf), seed).unwrap();
                parts.extend(more);
            }
            let ids = || brokers.iter().map(|b| b.id);
            prop_assert!(spread(&counts(&parts, true), ids()) <= 1, "leaders {:?}", parts);
            prop_assert!(spread(&counts(&parts, false), ids()) <= 1, "replicas {:?}", parts);
        }
    }
}
