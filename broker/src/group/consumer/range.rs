//! The server-side `range` assignor (KIP-848's `group.consumer.assignors`): per topic, the
//! members subscribed to it take consecutive ranges of its partitions, the first members one
//! more partition each while the division leaves a remainder. Members are ordered static ones
//! first by instance id, then the others by member id, so a rolling restart of static members
//! gives each the same ranges; when every member subscribes to the same topics and the topics
//! have as many partitions each, every member gets the same partition numbers of every topic
//! (co-partitioning, for joins).
//!
//! Not sticky: like Kafka 4.4's `RangeAssignor`, which never reads the current assignment, the
//! ranges depend only on the members and the partition counts.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::assignor::{Subscriber, UnknownTopic};
use super::reconcile::Partitions;

/// Each member's partitions, by member id (members with nothing get an empty assignment).
pub fn assign(
    members: &[Subscriber<'_>],
    partitions: impl Fn(Uuid) -> Option<i32>,
) -> Result<BTreeMap<String, Partitions>, UnknownTopic> {
    let mut order: Vec<&Subscriber<'_>> = members.iter().collect();
    order.sort_by(|a, b| match (a.instance_id, b.instance_id) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.member_id.cmp(b.member_id),
    });
    // Per topic: its partition count, how many members subscribe, and where the next range starts.
    struct Topic {
        count: i32,
        subscribers: i32,
        quota: i32,
        extra: i32,
        next: i32,
    }
    let mut topics: BTreeMap<Uuid, Topic> = BTreeMap::new();
    for m in &order {
        for &id in m.topics {
            if let Some(t) = topics.get_mut(&id) {
                t.subscribers += 1;
                continue;
            }
            let count = partitions(id).ok_or_else(|| UnknownTopic {
                member: m.member_id.to_string(),
                topic: id,
            })?;
            topics.insert(
                id,
                Topic {
                    count: count.max(0),
                    subscribers: 1,
                    quota: 0,
                    extra: 0,
                    next: 0,
                },
            );
        }
    }
    for t in topics.values_mut() {
        t.quota = t.count / t.subscribers;
        t.extra = t.count % t.subscribers;
    }
    let mut out = BTreeMap::new();
    for m in &order {
        let mut assignment = Partitions::new();
        for id in m.topics {
            let t = topics
                .get_mut(id)
                .expect("every subscribed topic was counted");
            let mut quota = t.quota;
            if t.extra > 0 {
                quota += 1;
                t.extra -= 1;
            }
            let start = t.next;
            let end = (start + quota).min(t.count);
            t.next = end;
            if start < end {
                assignment.insert(*id, (start..end).collect());
            }
        }
        out.insert(m.member_id.to_string(), assignment);
    }
    debug_assert!(topics.values().all(|t| t.next == t.count || t.count == 0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn t(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn set(ids: &[u128]) -> BTreeSet<Uuid> {
        ids.iter().map(|&n| t(n)).collect()
    }

    fn counts(n: &[(u128, i32)]) -> impl Fn(Uuid) -> Option<i32> + '_ {
        move |id| n.iter().find(|(x, _)| t(*x) == id).map(|(_, c)| *c)
    }

    /// Members without instance ids, each subscribed to `topics`.
    fn dynamic<'a>(ids: &'a [String], topics: &'a BTreeSet<Uuid>) -> Vec<Subscriber<'a>> {
        ids.iter()
            .map(|id| Subscriber {
                member_id: id,
                instance_id: None,
                rack: None,
                topics,
            })
            .collect()
    }

    fn ranges(a: &Partitions) -> Vec<(u128, Vec<i32>)> {
        a.iter()
            .map(|(id, ps)| (id.as_u128(), ps.iter().copied().collect()))
            .collect()
    }

    #[test]
    fn equal_topics_are_co_partitioned_with_the_remainder_to_the_first_members() {
        let topics = set(&[1, 2]);
        let members = [
            Subscriber {
                member_id: "m1",
                instance_id: None,
                rack: None,
                topics: &topics,
            },
            Subscriber {
                member_id: "m0",
                instance_id: None,
                rack: None,
                topics: &topics,
            },
        ];
        let out = assign(&members, counts(&[(1, 3), (2, 3)])).unwrap();
        assert_eq!(ranges(&out["m0"]), vec![(1, vec![0, 1]), (2, vec![0, 1])]);
        assert_eq!(ranges(&out["m1"]), vec![(1, vec![2]), (2, vec![2])]);
    }

    #[test]
    fn static_members_come_first_in_instance_id_order() {
        let topics = set(&[1]);
        let members = [
            Subscriber {
                member_id: "a",
                instance_id: None,
                rack: None,
                topics: &topics,
            },
            Subscriber {
                member_id: "z2",
                instance_id: Some("i1"),
                rack: None,
                topics: &topics,
            },
            Subscriber {
                member_id: "z1",
                instance_id: Some("i0"),
                rack: None,
                topics: &topics,
            },
        ];
        let out = assign(&members, counts(&[(1, 4)])).unwrap();
        assert_eq!(ranges(&out["z1"]), vec![(1, vec![0, 1])]);
        assert_eq!(ranges(&out["z2"]), vec![(1, vec![2])]);
        assert_eq!(ranges(&out["a"]), vec![(1, vec![3])]);
    }

    #[test]
    fn each_topic_is_divided_among_its_own_subscribers() {
        let both = set(&[1, 2]);
        let one = set(&[1]);
        let members = [
            Subscriber {
                member_id: "m0",
                instance_id: None,
                rack: None,
                topics: &both,
            },
            Subscriber {
                member_id: "m1",
                instance_id: None,
                rack: None,
                topics: &one,
            },
            Subscriber {
                member_id: "m2",
                instance_id: None,
                rack: None,
                topics: &both,
            },
        ];
        let out = assign(&members, counts(&[(1, 3), (2, 4)])).unwrap();
        assert_eq!(ranges(&out["m0"]), vec![(1, vec![0]), (2, vec![0, 1])]);
        assert_eq!(ranges(&out["m1"]), vec![(1, vec![1])]);
        assert_eq!(ranges(&out["m2"]), vec![(1, vec![2]), (2, vec![2, 3])]);
    }

    #[test]
    fn more_members_than_partitions_leaves_the_last_members_empty() {
        let topics = set(&[1]);
        let ids = ["m0", "m1", "m2"].map(String::from);
        let members = dynamic(&ids, &topics);
        let out = assign(&members, counts(&[(1, 2)])).unwrap();
        assert_eq!(ranges(&out["m0"]), vec![(1, vec![0])]);
        assert_eq!(ranges(&out["m1"]), vec![(1, vec![1])]);
        assert!(out["m2"].is_empty());
    }

    #[test]
    fn every_partition_goes_to_exactly_one_member() {
        for members_n in 1..7 {
            for parts in 0..13 {
                let topics = set(&[1, 2]);
                let ids: Vec<String> = (0..members_n).map(|i| format!("m{i:02}")).collect();
                let members = dynamic(&ids, &topics);
                let out = assign(&members, counts(&[(1, parts), (2, parts + 1)])).unwrap();
                for (topic, count) in [(1, parts), (2, parts + 1)] {
                    let mut all: Vec<i32> = out
                        .values()
                        .flat_map(|a| a.get(&t(topic)).into_iter().flatten().copied())
                        .collect();
                    all.sort();
                    assert_eq!(
                        all,
                        (0..count).collect::<Vec<_>>(),
                        "{members_n} members, {count}"
                    );
                    let sizes: Vec<usize> = out
                        .values()
                        .map(|a| a.get(&t(topic)).map_or(0, |p| p.len()))
                        .collect();
                    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                    assert!(max - min <= 1, "balanced: {sizes:?}");
                }
            }
        }
    }

    #[test]
    fn a_topic_without_a_partition_count_is_refused() {
        let topics = set(&[9]);
        let members = [Subscriber {
            member_id: "m0",
            instance_id: None,
            rack: None,
            topics: &topics,
        }];
        assert_eq!(
            assign(&members, counts(&[])),
            Err(UnknownTopic {
                member: "m0".into(),
                topic: t(9)
            })
        );
    }

    #[test]
    fn no_members_no_assignment() {
        assert!(assign(&[], counts(&[])).unwrap().is_empty());
    }
}
