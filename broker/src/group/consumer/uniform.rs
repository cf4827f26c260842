//! The server-side `uniform` assignor, Kafka's default for KIP-848 consumer groups: every member
//! gets a balanced share of the partitions of the topics it subscribes to, and partitions stay
//! with their current owners whenever balance allows (balance first, then stickiness).
//!
//! Two paths, as in Kafka 4.4:
//! - Homogeneous (every member subscribes to the same topics): each member's quota is the total
//!   divided by the member count, the remainder going one each to the members that already hold
//!   the most. Members keep what fits their quota; the rest fills the others. Kafka hands the
//!   remainder out in member order (passing it on when a member cannot use it); giving it to the
//!   biggest holders moves the fewest partitions any balanced assignment can.
//! - Heterogeneous: members keep every partition of a topic they still subscribe to; the free
//!   partitions go, topic by topic, to the least loaded subscribers (topics with the most
//!   partitions per subscriber first: their subscribers have the fewest alternatives); then,
//!   topic by topic, holders with two partitions more than the least loaded subscriber hand
//!   partitions over, repeated while that changes anything (at most [`MAX_BALANCE_ROUNDS`]
//!   passes, Kafka's bound). Loads count the whole assignment, so once the passes settle,
//!   members with the same subscriptions are within one of each other; along chains of
//!   overlapping subscriptions the loads may still climb by one per link, as Kafka's do.
//!
//! Every order is fixed (members by id, topics by id, partitions by number), so the same inputs
//! give the same assignment. Racks are not considered (Kafka 4.4's assignor ignores them too).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use uuid::Uuid;

use super::assignor::{Subscriber, UnknownTopic};
use super::reconcile::Partitions;

/// An unowned partition.
const NONE: usize = usize::MAX;

/// Passes over the topics in the heterogeneous balancing phase. Each pass roughly halves what
/// imbalance is left where subscriptions overlap; the bound keeps pathological groups cheap.
pub const MAX_BALANCE_ROUNDS: usize = 16;

struct Topic {
    id: Uuid,
    /// Each partition's owner (an index into the sorted members), [`NONE`] when free.
    owners: Vec<usize>,
    /// The members subscribed to it, ascending.
    subscribers: Vec<usize>,
}

/// Each member's partitions by member id, with an entry (possibly empty) for every member;
/// `current` is the group's previous target assignment.
pub fn assign(
    members: &[Subscriber<'_>],
    partitions: impl Fn(Uuid) -> Option<i32>,
    current: &BTreeMap<String, Partitions>,
) -> Result<BTreeMap<String, Partitions>, UnknownTopic> {
    // Members by id, so the caller's order does not matter (a repeated id counts once).
    let mut members: Vec<&Subscriber<'_>> = members.iter().collect();
    members.sort_by(|a, b| a.member_id.cmp(b.member_id));
    members.dedup_by(|a, b| a.member_id == b.member_id);
    if members.is_empty() {
        return Ok(BTreeMap::new());
    }

    let mut by_id: BTreeMap<Uuid, (usize, Vec<usize>)> = BTreeMap::new();
    for (m, member) in members.iter().enumerate() {
        for &id in member.topics {
            if let Some((_, subscribers)) = by_id.get_mut(&id) {
                subscribers.push(m);
                continue;
            }
            let count = partitions(id).ok_or_else(|| UnknownTopic {
                member: member.member_id.to_string(),
                topic: id,
            })?;
            by_id.insert(id, (usize::try_from(count).unwrap_or(0), vec![m]));
        }
    }
    let index: BTreeMap<Uuid, usize> = by_id.keys().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut topics: Vec<Topic> = by_id
        .into_iter()
        .map(|(id, (count, subscribers))| Topic {
            id,
            owners: vec![NONE; count],
            subscribers,
        })
        .collect();

    // What each member may keep: partitions of topics it still subscribes to that still exist.
    // Should `current` give a partition to two members, the first by member id keeps it.
    let mut sizes = vec![0usize; members.len()];
    for (m, member) in members.iter().enumerate() {
        let Some(owned) = current.get(member.member_id) else {
            continue;
        };
        for (id, parts) in owned {
            if !member.topics.contains(id) {
                continue;
            }
            let owners = &mut topics[index[id]].owners;
            for &p in parts {
                let Some(owner) = usize::try_from(p).ok().and_then(|p| owners.get_mut(p)) else {
                    continue;
                };
                if *owner == NONE {
                    *owner = m;
                    sizes[m] += 1;
                }
            }
        }
    }

    if members.windows(2).all(|w| w[0].topics == w[1].topics) {
        homogeneous(&mut topics, &mut sizes);
    } else {
        heterogeneous(&mut topics, &mut sizes);
    }

    let mut assigned = vec![Partitions::new(); members.len()];
    for topic in &topics {
        for (p, &owner) in topic.owners.iter().enumerate() {
            debug_assert_ne!(owner, NONE, "every partition is assigned");
            if let Some(a) = assigned.get_mut(owner) {
                a.entry(topic.id).or_default().insert(p as i32);
            }
        }
    }
    Ok(members
        .iter()
        .zip(assigned)
        .map(|(m, a)| (m.member_id.to_string(), a))
        .collect())
}

/// Every member subscribes to every topic: quotas differ by at most one, and the members keeping
/// the most get the larger quotas, so only what exceeds a quota moves.
fn homogeneous(topics: &mut [Topic], sizes: &mut [usize]) {
    let total: usize = topics.iter().map(|t| t.owners.len()).sum();
    let (quota, extra) = (total / sizes.len(), total % sizes.len());
    let mut by_kept: Vec<usize> = (0..sizes.len()).collect();
    by_kept.sort_by_key(|&m| (Reverse(sizes[m]), m));
    let mut quotas = vec![quota; sizes.len()];
    for &m in &by_kept[..extra] {
        quotas[m] += 1;
    }

    // A member over its quota gives up its highest partitions.
    for topic in topics.iter_mut().rev() {
        for owner in topic.owners.iter_mut().rev() {
            if *owner != NONE && sizes[*owner] > quotas[*owner] {
                sizes[*owner] -= 1;
                *owner = NONE;
            }
        }
    }

    // The free partitions, in order, fill the members under their quota, in order. Quotas add
    // up to the partition count, so the two run out together.
    let mut free = topics
        .iter_mut()
        .flat_map(|t| t.owners.iter_mut())
        .filter(|o| **o == NONE);
    for (m, size) in sizes.iter_mut().enumerate() {
        while *size < quotas[m] {
            let owner = free.next().expect("quotas add up to the partitions");
            *owner = m;
            *size += 1;
        }
    }
    debug_assert!(free.next().is_none());
}

/// Members subscribe to different topics: place the free partitions on the least loaded
/// subscribers, then move partitions from the most to the least loaded subscribers of each topic.
fn heterogeneous(topics: &mut [Topic], sizes: &mut [usize]) {
    // Topics with the most partitions per subscriber first (their subscribers have the fewest
    // alternatives), then the fewer subscribers, then by id.
    let mut order: Vec<usize> = (0..topics.len()).collect();
    order.sort_by(|&a, &b| {
        let (ta, tb) = (&topics[a], &topics[b]);
        let (pa, sa) = (ta.owners.len() as u64, ta.subscribers.len() as u64);
        let (pb, sb) = (tb.owners.len() as u64, tb.subscribers.len() as u64);
        (pb * sa)
            .cmp(&(pa * sb))
            .then(sa.cmp(&sb))
            .then(ta.id.cmp(&tb.id))
    });

    for &t in &order {
        let topic = &mut topics[t];
        if !topic.owners.contains(&NONE) {
            continue;
        }
        let mut least: BinaryHeap<Reverse<(usize, usize)>> = topic
            .subscribers
            .iter()
            .map(|&m| Reverse((sizes[m], m)))
            .collect();
        for owner in topic.owners.iter_mut().filter(|o| **o == NONE) {
            let Reverse((size, m)) = least.pop().expect("a topic has a subscriber");
            *owner = m;
            sizes[m] = size + 1;
            least.push(Reverse((size + 1, m)));
        }
    }

    // Only topics with two subscribers or more can move. Stop once a whole pass over them
    // moved nothing since the last topic that did.
    let movable: Vec<usize> = order
        .into_iter()
        .filter(|&t| topics[t].subscribers.len() >= 2)
        .collect();
    let mut last_moved = None;
    'rounds: for _ in 0..MAX_BALANCE_ROUNDS {
        for (i, &t) in movable.iter().enumerate() {
            if last_moved == Some(i) {
                break 'rounds;
            }
            if balance_topic(&mut topics[t], sizes) > 0 || last_moved.is_none() {
                last_moved = Some(i);
            }
        }
    }
}

/// Moves partitions of one topic from its most loaded holders to its least loaded subscribers
/// until no move would narrow the gap; returns how many moved. Loads are whole-assignment sizes.
fn balance_topic(topic: &mut Topic, sizes: &mut [usize]) -> usize {
    let least = topic.subscribers.iter().map(|&m| sizes[m]).min();
    let most = topic.owners.iter().map(|&o| sizes[o]).max();
    match (least, most) {
        (Some(least), Some(most)) if most > least + 1 => {}
        _ => return 0,
    }

    // Each holder's partitions of the topic, ascending; it gives up its highest first. What a
    // member receives here is not handed on again in this pass.
    let mut held: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (p, &o) in topic.owners.iter().enumerate() {
        held.entry(o).or_default().push(p);
    }
    let mut loads: BTreeSet<(usize, usize)> =
        topic.subscribers.iter().map(|&m| (sizes[m], m)).collect();
    let mut givers: BTreeSet<(usize, usize)> = held.keys().map(|&m| (sizes[m], m)).collect();

    let mut moved = 0;
    while let (Some(&(high, from)), Some(&(low, to))) = (givers.last(), loads.first()) {
        if high <= low + 1 {
            break;
        }
        let stack = held.get_mut(&from).expect("a giver holds partitions");
        let p = stack.pop().expect("a giver holds partitions");
        topic.owners[p] = to;

        givers.remove(&(high, from));
        loads.remove(&(high, from));
        sizes[from] -= 1;
        loads.insert((high - 1, from));
        if !stack.is_empty() {
            givers.insert((high - 1, from));
        }

        loads.remove(&(low, to));
        sizes[to] += 1;
        loads.insert((low + 1, to));
        if givers.remove(&(low, to)) {
            givers.insert((low + 1, to));
        }
        moved += 1;
    }
    moved
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

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

    fn sub<'a>(member_id: &'a str, topics: &'a BTreeSet<Uuid>) -> Subscriber<'a> {
        Subscriber {
            member_id,
            instance_id: None,
            rack: None,
            topics,
        }
    }

    /// Members with their `(topic, [partitions])`.
    type Plan<'a> = [(&'a str, &'a [(u128, &'a [i32])])];

    fn plan(a: &Plan<'_>) -> BTreeMap<String, Partitions> {
        a.iter()
            .map(|(m, ts)| {
                let parts = ts
                    .iter()
                    .filter(|(_, ps)| !ps.is_empty())
                    .map(|(id, ps)| (t(*id), ps.iter().copied().collect()))
                    .collect();
                (m.to_string(), parts)
            })
            .collect()
    }

    fn none() -> BTreeMap<String, Partitions> {
        BTreeMap::new()
    }

    #[test]
    fn two_members_three_partitions() {
        let topics = set(&[1]);
        let members = [sub("m1", &topics), sub("m0", &topics)];
        let out = assign(&members, counts(&[(1, 3)]), &none()).unwrap();
        assert_eq!(out, plan(&[("m0", &[(1, &[0, 1])]), ("m1", &[(1, &[2])])]));
    }

    #[test]
    fn a_joining_member_takes_one_partition_from_the_fullest() {
        let topics = set(&[1]);
        let current = plan(&[("m0", &[(1, &[0, 1])]), ("m1", &[(1, &[2])])]);
        let members = [sub("m0", &topics), sub("m1", &topics), sub("m2", &topics)];
        let out = assign(&members, counts(&[(1, 3)]), &current).unwrap();
        assert_eq!(
            out,
            plan(&[
                ("m0", &[(1, &[0])]),
                ("m1", &[(1, &[2])]),
                ("m2", &[(1, &[1])])
            ])
        );
    }

    #[test]
    fn a_leaving_members_partitions_go_to_the_others_and_nothing_else_moves() {
        let topics = set(&[1, 2]);
        let current = plan(&[
            ("m0", &[(1, &[0, 3]), (2, &[1])]),
            ("m1", &[(1, &[1]), (2, &[0, 3])]),
            ("m2", &[(1, &[2]), (2, &[2])]),
        ]);
        let members = [sub("m0", &topics), sub("m2", &topics)];
        let out = assign(&members, counts(&[(1, 4), (2, 4)]), &current).unwrap();
        // m0 keeps its 3 and takes 1, m2 keeps its 2 and takes 2: m1's three spread in order.
        assert_eq!(
            out,
            plan(&[
                ("m0", &[(1, &[0, 1, 3]), (2, &[1])]),
                ("m2", &[(1, &[2]), (2, &[0, 2, 3])]),
            ])
        );
    }

    #[test]
    fn the_larger_quotas_go_to_the_members_keeping_the_most() {
        // 7 partitions over 3 members: quotas 3, 2, 2. The 3 goes to m2, which holds 3, not
        // to m0 first by id: nothing moves but the free partitions.
        let topics = set(&[1]);
        let current = plan(&[("m0", &[(1, &[0, 1])]), ("m2", &[(1, &[3, 4, 5])])]);
        let members = [sub("m0", &topics), sub("m1", &topics), sub("m2", &topics)];
        let out = assign(&members, counts(&[(1, 7)]), &current).unwrap();
        assert_eq!(
            out,
            plan(&[
                ("m0", &[(1, &[0, 1])]),
                ("m1", &[(1, &[2, 6])]),
                ("m2", &[(1, &[3, 4, 5])])
            ])
        );
        // Both hold 3 of 6 and every quota is 2: each gives up its highest.
        let current = plan(&[("m0", &[(1, &[0, 1, 2])]), ("m2", &[(1, &[3, 4, 5])])]);
        let out = assign(&members, counts(&[(1, 6)]), &current).unwrap();
        assert_eq!(
            out,
            plan(&[
                ("m0", &[(1, &[0, 1])]),
                ("m1", &[(1, &[2, 5])]),
                ("m2", &[(1, &[3, 4])])
            ])
        );
    }

    #[test]
    fn a_static_member_keeps_its_partitions_when_its_assignment_is_filed_under_its_new_id() {
        let topics = set(&[1]);
        let before = plan(&[("a", &[(1, &[0, 1])]), ("b", &[(1, &[2, 3])])]);
        // Instance "i-a" restarted as member "c": the group files a's assignment under "c".
        let members = [
            Subscriber {
                member_id: "c",
                instance_id: Some("i-a"),
                rack: None,
                topics: &topics,
            },
            Subscriber {
                member_id: "b",
                instance_id: Some("i-b"),
                rack: None,
                topics: &topics,
            },
        ];
        let rekeyed = plan(&[("c", &[(1, &[0, 1])]), ("b", &[(1, &[2, 3])])]);
        let out = assign(&members, counts(&[(1, 4)]), &rekeyed).unwrap();
        assert_eq!(out, rekeyed);
        // Left under the old id, a's partitions are free: b keeps its own, c gets a's anyway.
        let out = assign(&members, counts(&[(1, 4)]), &before).unwrap();
        assert_eq!(out, rekeyed);
    }

    #[test]
    fn unsubscribed_missing_and_doubly_owned_partitions_are_not_kept() {
        let both = set(&[1]);
        let current = plan(&[
            // m0 no longer subscribes to topic 2, and topic 1 has no partition 9.
            ("m0", &[(1, &[0, 9]), (2, &[0])]),
            // m1 claims 0 too: m0 comes first by id and keeps it.
            ("m1", &[(1, &[0, 1])]),
        ]);
        let members = [sub("m0", &both), sub("m1", &both)];
        let out = assign(&members, counts(&[(1, 4), (2, 1)]), &current).unwrap();
        assert_eq!(
            out,
            plan(&[("m0", &[(1, &[0, 2])]), ("m1", &[(1, &[1, 3])])])
        );
    }

    #[test]
    fn heterogeneous_fresh_assignment() {
        // Topics 1 and 2 tie on partitions per subscriber and subscriber count: 1 goes first.
        let (t1, t12, t2) = (set(&[1]), set(&[1, 2]), set(&[2]));
        let members = [sub("a", &t1), sub("b", &t12), sub("c", &t2)];
        let out = assign(&members, counts(&[(1, 3), (2, 3)]), &none()).unwrap();
        assert_eq!(
            out,
            plan(&[
                ("a", &[(1, &[0, 2])]),
                ("b", &[(1, &[1]), (2, &[1])]),
                ("c", &[(2, &[0, 2])]),
            ])
        );
    }

    #[test]
    fn heterogeneous_topics_with_fewer_options_go_first() {
        // b alone reads topic 2 (3 partitions per subscriber), so topic 2 goes first and a,
        // the other reader of topic 1, takes all of topic 1.
        let (t1, t12) = (set(&[1]), set(&[1, 2]));
        let members = [sub("a", &t1), sub("b", &t12)];
        let out = assign(&members, counts(&[(1, 3), (2, 3)]), &none()).unwrap();
        assert_eq!(
            out,
            plan(&[("a", &[(1, &[0, 1, 2])]), ("b", &[(2, &[0, 1, 2])])])
        );
    }

    #[test]
    fn heterogeneous_balancing_moves_the_highest_partitions_of_the_fullest() {
        // b holds everything; a can only take topic 1, and takes all of it.
        let (t1, t12) = (set(&[1]), set(&[1, 2]));
        let members = [sub("a", &t1), sub("b", &t12)];
        let current = plan(&[("b", &[(1, &[0, 1]), (2, &[0, 1])])]);
        let out = assign(&members, counts(&[(1, 2), (2, 2)]), &current).unwrap();
        assert_eq!(out, plan(&[("a", &[(1, &[0, 1])]), ("b", &[(2, &[0, 1])])]));
        // With three of topic 1 and four of topic 2, a takes all of topic 1: 3 and 4 is as even
        // as it gets.
        let current = plan(&[("b", &[(1, &[0, 1, 2]), (2, &[0, 1, 2, 3])])]);
        let out = assign(&members, counts(&[(1, 3), (2, 4)]), &current).unwrap();
        assert_eq!(
            out,
            plan(&[("a", &[(1, &[0, 1, 2])]), ("b", &[(2, &[0, 1, 2, 3])])])
        );
    }

    #[test]
    fn heterogeneous_keeps_current_owners_when_balanced() {
        let (t1, t12, t2) = (set(&[1]), set(&[1, 2]), set(&[2]));
        let members = [sub("a", &t1), sub("b", &t12), sub("c", &t2)];
        let current = plan(&[
            ("a", &[(1, &[1, 2])]),
            ("b", &[(1, &[0]), (2, &[2])]),
            ("c", &[(2, &[0, 1])]),
        ]);
        let out = assign(&members, counts(&[(1, 3), (2, 3)]), &current).unwrap();
        assert_eq!(out, current);
    }

    #[test]
    fn unknown_topics_and_empty_groups() {
        let (topics, one) = (set(&[1, 5]), set(&[1]));
        let members = [sub("m1", &topics), sub("m0", &one)];
        assert_eq!(
            assign(&members, counts(&[(1, 2)]), &none()),
            Err(UnknownTopic {
                member: "m1".into(),
                topic: t(5)
            })
        );
        assert!(assign(&[], counts(&[]), &none()).unwrap().is_empty());
        let nothing = set(&[]);
        let out = assign(&[sub("m0", &nothing)], counts(&[]), &none()).unwrap();
        assert_eq!(out, plan(&[("m0", &[])]));
    }

    // ---- properties over random groups ----

    struct Group {
        ids: Vec<String>,
        instance: Vec<Option<String>>,
        subs: Vec<BTreeSet<Uuid>>,
        counts: Vec<(u128, i32)>,
    }

    impl Group {
        fn members(&self) -> Vec<Subscriber<'_>> {
            (0..self.ids.len())
                .map(|i| Subscriber {
                    member_id: &self.ids[i],
                    instance_id: self.instance[i].as_deref(),
                    rack: None,
                    topics: &self.subs[i],
                })
                .collect()
        }

        fn run(&self, current: &BTreeMap<String, Partitions>) -> BTreeMap<String, Partitions> {
            assign(&self.members(), counts(&self.counts), current).unwrap()
        }

        fn without(&self, i: usize) -> Group {
            fn drop_at<T: Clone>(v: &[T], i: usize) -> Vec<T> {
                let mut v = v.to_vec();
                v.remove(i);
                v
            }
            Group {
                ids: drop_at(&self.ids, i),
                instance: drop_at(&self.instance, i),
                subs: drop_at(&self.subs, i),
                counts: self.counts.clone(),
            }
        }

        fn homogeneous(&self) -> bool {
            self.subs.windows(2).all(|w| w[0] == w[1])
        }
    }

    fn random_group(rng: &mut StdRng, homogeneous: bool) -> Group {
        let topics = rng.gen_range(1..=4u128);
        let counts: Vec<(u128, i32)> = (1..=topics).map(|id| (id, rng.gen_range(0..=12))).collect();
        let n = rng.gen_range(1..=9);
        let pick = |rng: &mut StdRng| -> BTreeSet<Uuid> {
            (1..=topics).filter(|_| rng.gen_bool(0.6)).map(t).collect()
        };
        let shared = pick(rng);
        let subs = (0..n)
            .map(|_| {
                if homogeneous {
                    shared.clone()
                } else {
                    pick(rng)
                }
            })
            .collect();
        Group {
            // Unique, and not in id order.
            ids: (0..n).map(|i| format!("m{}", i * 7 % 10)).collect(),
            instance: (0..n)
                .map(|i| rng.gen_bool(0.3).then(|| format!("i{i}")))
                .collect(),
            subs,
            counts,
        }
    }

    /// A previous assignment that need not make sense: departed members, out-of-range and
    /// doubly owned partitions, topics nobody subscribes to.
    fn random_current(rng: &mut StdRng, g: &Group) -> BTreeMap<String, Partitions> {
        let mut ids = g.ids.clone();
        ids.push("gone".into());
        let mut out = BTreeMap::new();
        for id in ids {
            if rng.gen_bool(0.2) {
                continue;
            }
            let mut parts = Partitions::new();
            for &(topic, _) in &g.counts {
                let ps: BTreeSet<i32> = (0..rng.gen_range(0..4))
                    .map(|_| rng.gen_range(0..14))
                    .collect();
                if !ps.is_empty() {
                    parts.insert(t(topic), ps);
                }
            }
            out.insert(id, parts);
        }
        out
    }

    /// Every partition of a subscribed topic goes to exactly one of its subscribers, nothing
    /// else is assigned, and every member has an entry.
    fn check_valid(g: &Group, out: &BTreeMap<String, Partitions>) {
        let ids: BTreeSet<&String> = g.ids.iter().collect();
        assert_eq!(out.keys().collect::<BTreeSet<_>>(), ids);
        for (&(topic, count), id) in g.counts.iter().zip(g.counts.iter().map(|c| t(c.0))) {
            let subscribed = g.subs.iter().any(|s| s.contains(&id));
            let mut seen = Vec::new();
            for (i, m) in g.ids.iter().enumerate() {
                if let Some(ps) = out[m].get(&id) {
                    assert!(
                        g.subs[i].contains(&id),
                        "{m} got topic {topic} without subscribing"
                    );
                    assert!(!ps.is_empty());
                    seen.extend(ps.iter().copied());
                }
            }
            seen.sort();
            let want: Vec<i32> = if subscribed {
                (0..count).collect()
            } else {
                vec![]
            };
            assert_eq!(seen, want, "topic {topic}");
        }
    }

    fn size(p: &Partitions) -> usize {
        p.values().map(|s| s.len()).sum()
    }

    /// Which member owns each partition.
    fn owners(out: &BTreeMap<String, Partitions>) -> BTreeMap<(Uuid, i32), &str> {
        out.iter()
            .flat_map(|(m, a)| {
                a.iter()
                    .flat_map(move |(id, ps)| ps.iter().map(move |&p| ((*id, p), m.as_str())))
            })
            .collect()
    }

    #[test]
    fn random_groups_are_valid_deterministic_and_stable() {
        let mut rng = StdRng::seed_from_u64(848);
        for case in 0..3000 {
            let g = random_group(&mut rng, case % 2 == 0);
            let current = if rng.gen_bool(0.5) {
                random_current(&mut rng, &g)
            } else {
                none()
            };
            let out = g.run(&current);
            check_valid(&g, &out);

            // The caller's member order does not matter.
            let mut shuffled = g.members();
            shuffled.shuffle(&mut rng);
            assert_eq!(assign(&shuffled, counts(&g.counts), &current).unwrap(), out);

            // Run again on its own result: nothing moves.
            assert_eq!(g.run(&out), out, "case {case}");

            if g.homogeneous() {
                let sizes: Vec<usize> = out.values().map(size).collect();
                let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(max - min <= 1, "case {case}: {sizes:?}");
            } else {
                // Kafka's balance: no subscriber of a topic holds two more than another
                // subscriber of it while holding some of that topic. Hence members with the
                // same subscriptions differ by at most one.
                for &(topic, _) in &g.counts {
                    let subs: Vec<&String> = (0..g.ids.len())
                        .filter(|&i| g.subs[i].contains(&t(topic)))
                        .map(|i| &g.ids[i])
                        .collect();
                    let Some(least) = subs.iter().map(|m| size(&out[*m])).min() else {
                        continue;
                    };
                    for m in &subs {
                        if out[*m].contains_key(&t(topic)) {
                            assert!(size(&out[*m]) <= least + 1, "case {case}, topic {topic}");
                        }
                    }
                }
            }
        }
    }

    /// The fewest moves any balanced homogeneous assignment needs from `current`: what each
    /// member may keep beyond the base quota, less the larger quotas that can absorb it.
    fn fewest_moves(g: &Group, current: &BTreeMap<String, Partitions>) -> usize {
        let total: usize = g
            .counts
            .iter()
            .filter(|c| g.subs[0].contains(&t(c.0)))
            .map(|c| c.1 as usize)
            .sum();
        let (quota, extra) = (total / g.ids.len(), total % g.ids.len());
        let mut taken = BTreeSet::new();
        let mut ids = g.ids.clone();
        ids.sort();
        let mut over = 0;
        let mut above = 0;
        for id in &ids {
            let mut kept = 0usize;
            for (topic, ps) in current.get(id).into_iter().flatten() {
                let Some(&(_, count)) = g.counts.iter().find(|c| t(c.0) == *topic) else {
                    continue;
                };
                if !g.subs[0].contains(topic) {
                    continue;
                }
                for &p in ps {
                    if p < count && taken.insert((*topic, p)) {
                        kept += 1;
                    }
                }
            }
            over += kept.saturating_sub(quota);
            above += usize::from(kept > quota);
        }
        over - above.min(extra)
    }

    #[test]
    fn homogeneous_groups_move_the_fewest_partitions() {
        let mut rng = StdRng::seed_from_u64(41);
        for case in 0..3000 {
            let g = random_group(&mut rng, true);
            let current = random_current(&mut rng, &g);
            let out = g.run(&current);
            let after = owners(&out);
            // Kept: owned before by a member of the group (first by id when owned twice),
            // subscribed and existing; moved: kept partitions that changed hands.
            let mut claimed = BTreeSet::new();
            let mut moved = 0;
            let mut ids = g.ids.clone();
            ids.sort();
            for id in &ids {
                for (topic, ps) in current.get(id).into_iter().flatten() {
                    for &p in ps {
                        if after.contains_key(&(*topic, p))
                            && claimed.insert((*topic, p))
                            && after[&(*topic, p)] != id
                        {
                            moved += 1;
                        }
                    }
                }
            }
            assert_eq!(moved, fewest_moves(&g, &current), "case {case}");
        }
    }

    #[test]
    fn homogeneous_leave_and_join_move_only_what_they_must() {
        let mut rng = StdRng::seed_from_u64(7);
        for case in 0..3000 {
            let g = random_group(&mut rng, true);
            let start = g.run(&random_current(&mut rng, &g));

            if g.ids.len() > 1 {
                let leaver = rng.gen_range(0..g.ids.len());
                let smaller = g.without(leaver);
                let out = smaller.run(&start);
                check_valid(&smaller, &out);
                // Everything the others held stays with them.
                for id in &smaller.ids {
                    for (topic, ps) in &start[id] {
                        let now = out[id].get(topic);
                        assert!(
                            now.is_some_and(|now| ps.is_subset(now)),
                            "case {case}: {id}"
                        );
                    }
                }
            }

            let mut bigger = Group {
                ids: g.ids.clone(),
                instance: g.instance.clone(),
                subs: g.subs.clone(),
                counts: g.counts.clone(),
            };
            bigger.ids.push("new".into());
            bigger.instance.push(None);
            bigger.subs.push(g.subs[0].clone());
            let out = bigger.run(&start);
            check_valid(&bigger, &out);
            // The others only give up partitions, and exactly what the newcomer takes.
            let mut given = 0;
            for id in &g.ids {
                for (topic, ps) in &out[id] {
                    let before = start[id].get(topic);
                    assert!(
                        before.is_some_and(|b| ps.is_subset(b)),
                        "case {case}: {id} gained"
                    );
                }
                given += size(&start[id]) - size(&out[id]);
            }
            assert_eq!(given, size(&out["new"]), "case {case}");
        }
    }

    #[test]
    fn heterogeneous_leave_is_valid_and_stable() {
        // No promise that the others keep everything here: balance comes first, and evening out
        // overlapping subscriptions can take partitions along a chain of members.
        let mut rng = StdRng::seed_from_u64(99);
        for case in 0..2000 {
            let g = random_group(&mut rng, false);
            let start = g.run(&none());
            if g.ids.len() < 2 {
                continue;
            }
            let smaller = g.without(rng.gen_range(0..g.ids.len()));
            let out = smaller.run(&start);
            check_valid(&smaller, &out);
            assert_eq!(smaller.run(&out), out, "case {case}");
        }
    }

    #[test]
    fn a_thousand_members_and_ten_thousand_partitions() {
        let counts: Vec<(u128, i32)> = (1..=10).map(|id| (id, 1000)).collect();
        let all = set(&(1..=10).collect::<Vec<_>>());
        let ids: Vec<String> = (0..1000).map(|i| format!("member-{i:04}")).collect();
        let mut rng = StdRng::seed_from_u64(1);
        let mixed: Vec<BTreeSet<Uuid>> = (0..1000)
            .map(|_| {
                (1..=10u128)
                    .filter(|_| rng.gen_bool(0.5))
                    .map(t)
                    .chain([t(1)])
                    .collect()
            })
            .collect();
        for homogeneous in [true, false] {
            let g = Group {
                ids: ids.clone(),
                instance: vec![None; 1000],
                subs: if homogeneous {
                    vec![all.clone(); 1000]
                } else {
                    mixed.clone()
                },
                counts: counts.clone(),
            };
            // From nothing, after a member left, and from one member holding everything.
            let hoard = BTreeMap::from([(
                ids[0].clone(),
                counts
                    .iter()
                    .map(|&(id, n)| (t(id), (0..n).collect()))
                    .collect(),
            )]);
            let started = std::time::Instant::now();
            let first = g.run(&none());
            let smaller = g.without(500);
            let second = smaller.run(&first);
            let third = g.run(&hoard);
            let elapsed = started.elapsed();
            eprintln!("homogeneous {homogeneous}: three runs in {elapsed:?}");
            check_valid(&g, &first);
            check_valid(&smaller, &second);
            check_valid(&g, &third);
            if homogeneous {
                assert!(first.values().all(|a| size(a) == 10));
                assert!(third.values().all(|a| size(a) == 10));
            }
        }
    }
}
