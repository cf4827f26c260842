//! The server-side assignors of KIP-848 consumer groups behind one entry point: the group state
//! machine names the assignor (`group.consumer.assignors`, or the one a member asks for) and
//! gets every member's target partitions back.
//!
//! Both follow Kafka 4.4's group coordinator: [`Assignor::Uniform`] (Kafka's default) balances
//! and keeps partitions with their current owners; [`Assignor::Range`] gives consecutive ranges
//! and ignores the current assignment, as Kafka's does. Neither looks at racks (Kafka 4.4's
//! built-in assignors do not either).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::reconcile::Partitions;
use super::{range, uniform};

/// What an assignor sees of one member.
#[derive(Debug, Clone, Copy)]
pub struct Subscriber<'a> {
    pub member_id: &'a str,
    /// Set for static members (`group.instance.id`).
    pub instance_id: Option<&'a str>,
    pub rack: Option<&'a str>,
    /// The topics it subscribes to that exist (by id).
    pub topics: &'a BTreeSet<Uuid>,
}

/// The server-side assignors a consumer group can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assignor {
    Uniform,
    Range,
}

impl Assignor {
    /// The assignor a member or the configuration names, if it is one we have.
    pub fn by_name(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    /// The name on the wire (ConsumerGroupHeartbeat's ServerAssignor) and in configuration.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }
}

/// A member subscribes to a topic the assignor was not told the partitions of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("member {member} is subscribed to a topic that does not exist ({topic})")]
pub struct UnknownTopic {
    pub member: String,
    pub topic: Uuid,
}

/// The group's new target assignment: each member's partitions by member id, with an entry
/// (possibly empty) for every member. `partitions` gives a topic's partition count, `current`
/// is the previous target assignment by member id (entries of members that left are ignored;
/// a static member that rejoined under a new member id keeps its partitions only if the caller
/// files them under the new id). Member ids are expected to be unique.
pub fn assign(
    assignor: Assignor,
    members: &[Subscriber<'_>],
    partitions: impl Fn(Uuid) -> Option<i32>,
    current: &BTreeMap<String, Partitions>,
) -> Result<BTreeMap<String, Partitions>, UnknownTopic> {
    match assignor {
        Assignor::Uniform => uniform::assign(members, partitions, current),
        Assignor::Range => range::assign(members, partitions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in [Assignor::Uniform, Assignor::Range] {
            assert_eq!(Assignor::by_name(a.name()), Some(a));
        }
        assert_eq!(Assignor::Uniform.name(), "uniform");
        assert_eq!(Assignor::Range.name(), "range");
        assert_eq!(Assignor::by_name("sticky"), None);
        assert_eq!(Assignor::by_name("Uniform"), None);
    }

    fn one_topic_members<'a>(topics: &'a BTreeSet<Uuid>) -> [Subscriber<'a>; 2] {
        [
            Subscriber {
                member_id: "m0",
                instance_id: None,
                rack: None,
                topics,
            },
            Subscriber {
                member_id: "m1",
                instance_id: None,
                rack: None,
                topics,
            },
        ]
    }

    #[test]
    fn uniform_keeps_current_owners_and_range_does_not() {
        let t = Uuid::from_u128(1);
        let topics = BTreeSet::from([t]);
        let members = one_topic_members(&topics);
        // m0 owns the upper half: the uniform assignor leaves it there, range gives m0 the
        // lower half whatever it owned.
        let current = BTreeMap::from([
            (
                "m0".to_string(),
                Partitions::from([(t, BTreeSet::from([2, 3]))]),
            ),
            (
                "m1".to_string(),
                Partitions::from([(t, BTreeSet::from([0, 1]))]),
            ),
        ]);
        let count = |id: Uuid| (id == t).then_some(4);
        let uniform = assign(Assignor::Uniform, &members, count, &current).unwrap();
        assert_eq!(uniform, current);
        let range = assign(Assignor::Range, &members, count, &current).unwrap();
        assert_eq!(range["m0"], Partitions::from([(t, BTreeSet::from([0, 1]))]));
        assert_eq!(range["m1"], Partitions::from([(t, BTreeSet::from([2, 3]))]));
    }

    #[test]
    fn both_refuse_an_unknown_topic() {
        let topics = BTreeSet::from([Uuid::from_u128(7)]);
        let members = one_topic_members(&topics);
        for a in [Assignor::Uniform, Assignor::Range] {
            assert_eq!(
                assign(a, &members, |_| None, &BTreeMap::new()),
                Err(UnknownTopic {
                    member: "m0".into(),
                    topic: Uuid::from_u128(7)
                }),
                "{a:?}"
            );
        }
    }

    #[test]
    fn every_member_gets_an_entry() {
        let none = BTreeSet::new();
        let members = one_topic_members(&none);
        for a in [Assignor::Uniform, Assignor::Range] {
            let out = assign(a, &members, |_| None, &BTreeMap::new()).unwrap();
            assert_eq!(out.keys().collect::<Vec<_>>(), ["m0", "m1"], "{a:?}");
            assert!(out.values().all(|p| p.is_empty()), "{a:?}");
        }
    }
}
