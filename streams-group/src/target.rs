//! The target assignment of a streams group (Kafka's `TargetAssignmentBuilder`): the assignor
//! run over the group's members and its configured topology, and the hash of the topics'
//! metadata that tells the group when its topology must be configured again.

use std::collections::BTreeMap;

use crate::group::{Member, Settings, TaskOffsets};
use crate::topology::{self, ConfiguredTopology};
use crate::{assignor, TaskSet, Tasks, TopicView, Topology};

/// A hash of what the topology's configuration depends on: every topic it names or matches,
/// with its partition count (absent topics count too). Kafka hashes the topics' metadata the
/// same way in spirit (its value is its own; this one only has to change when they do).
pub(crate) fn metadata_hash(topology: &Topology, topics: &dyn TopicView) -> i64 {
    // FNV-1a, stable across builds: the hash is persisted (record 17) and compared after a
    // restart.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for n in topology::required_topics(topology, topics) {
        eat(n.as_bytes());
        eat(&[0]);
        eat(&topics.partitions(&n).unwrap_or(-1).to_be_bytes());
    }
    // Never 0, the hash of a group that has not seen its topics.
    (h as i64) | 1
}

/// The assignor over the group's members (Kafka's `TargetAssignmentBuilder`): each member's
/// process, tags and current tasks, each subtopology's task count and whether it has state.
pub(crate) fn compute_target(
    members: &BTreeMap<String, Member>,
    configured: &ConfiguredTopology,
    settings: &Settings,
    offsets: &BTreeMap<String, TaskOffsets>,
) -> Result<BTreeMap<String, Tasks>, assignor::AssignError> {
    let by_task = |m: &BTreeMap<(String, i32), i64>| {
        let mut out: assignor::TaskOffsets = BTreeMap::new();
        for ((s, p), o) in m {
            out.entry(s.clone()).or_default().insert(*p, *o);
        }
        out
    };
    let spec = assignor::GroupSpec {
        members: members
            .iter()
            .map(|(id, m)| {
                let o = offsets.get(id);
                (
                    id.clone(),
                    assignor::MemberSpec {
                        process_id: m.process_id.clone(),
                        instance_id: m.instance_id.clone(),
                        rack_id: m.rack_id.clone(),
                        client_tags: m.client_tags.clone(),
                        current: m.current.assigned.tasks(),
                        task_offsets: o.map(|o| by_task(&o.offsets)).unwrap_or_default(),
                        task_end_offsets: o.map(|o| by_task(&o.end_offsets)).unwrap_or_default(),
                    },
                )
            })
            .collect(),
        subtopologies: configured
            .tasks()
            .into_iter()
            .map(|(s, n)| {
                let stateful = configured.is_stateful(&s);
                (s, assignor::SubtopologySpec { tasks: n, stateful })
            })
            .collect(),
        configs: settings.assignment.clone(),
    };
    assignor::assign(&spec)
}

/// `t` without subtopologies that have no task.
pub(crate) fn normalize(t: &Tasks) -> Tasks {
    let clean = |s: &TaskSet| -> TaskSet {
        s.iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    Tasks {
        active: clean(&t.active),
        standby: clean(&t.standby),
        warmup: clean(&t.warmup),
    }
}
