//! KIP-1071 streams groups, sans-IO (issue 42): the broker keeps a Kafka Streams
//! application's topology, configures its internal topics, assigns active, standby and warm-up
//! tasks, and members converge to their assignment one StreamsGroupHeartbeat at a time.
//!
//! - [`topology`]: a topology configured against the cluster's topics (Kafka's
//!   `InternalTopicManager`): the partition count of every subtopology, the internal topics to
//!   create, the status the client is told when something is missing or misshapen;
//! - [`assignor`]: Kafka's sticky task assignor (`group.streams.assignors`);
//! - [`records`]: Kafka 4.4's streams group records in `__consumer_offsets` (types 17, 19-23),
//!   byte for byte.
//!
//! Nothing here does IO: the clock, the topics' metadata and the group's settings are inputs,
//! and every change comes back as records the caller writes. The types below are what the
//! modules share.

pub mod assignor;
pub mod group;
mod holders;
pub mod reconcile;
pub mod records;
mod target;
pub mod topology;

#[cfg(test)]
mod sim_tests;

use std::collections::{BTreeMap, BTreeSet};

/// Tasks of one kind: subtopology id -> the partitions (task numbers) of it.
pub type TaskSet = BTreeMap<String, BTreeSet<i32>>;

/// A task: a subtopology and one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub subtopology: String,
    pub partition: i32,
}

/// Active, standby and warm-up tasks (Kafka's `TasksTuple`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tasks {
    pub active: TaskSet,
    pub standby: TaskSet,
    pub warmup: TaskSet,
}

impl Tasks {
    pub fn is_empty(&self) -> bool {
        self.active.values().all(BTreeSet::is_empty)
            && self.standby.values().all(BTreeSet::is_empty)
            && self.warmup.values().all(BTreeSet::is_empty)
    }
}

/// An internal topic as a topology describes it (a changelog or a repartition topic); as the
/// client sends it, `partitions` is 0 when the broker is to derive the count, and
/// `replication_factor` 0 when the broker's default applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
}

/// Topics of a subtopology that must have the same number of partitions, as indexes into the
/// subtopology's `source_topics`, `source_topic_regex` and `repartition_source_topics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopartitionGroup {
    pub source_topics: Vec<i16>,
    pub source_topic_regex: Vec<i16>,
    pub repartition_source_topics: Vec<i16>,
}

/// A subtopology, as StreamsGroupHeartbeat sends it and record 23 keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subtopology {
    pub id: String,
    /// Source topics that are not repartition topics.
    pub source_topics: Vec<String>,
    pub source_topic_regex: Vec<String>,
    pub state_changelog_topics: Vec<TopicInfo>,
    /// Repartition topics this subtopology writes to.
    pub repartition_sink_topics: Vec<String>,
    /// Repartition topics this subtopology reads from.
    pub repartition_source_topics: Vec<TopicInfo>,
    pub copartition_groups: Vec<CopartitionGroup>,
}

/// A streams application's topology, at its epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    pub epoch: i32,
    pub subtopologies: Vec<Subtopology>,
}

/// What the group sees of the cluster's topics.
pub trait TopicView {
    /// The number of partitions of a topic, `None` when it does not exist.
    fn partitions(&self, name: &str) -> Option<i32>;
    /// Every topic name, for source topic regular expressions.
    fn names(&self) -> Vec<String>;
}

/// The statuses a StreamsGroupHeartbeat answer carries (Kafka 4.4's
/// `StreamsGroupHeartbeatResponse.Status`), with the codes and texts the client reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    StaleTopology,
    MissingSourceTopics,
    IncorrectlyPartitionedTopics,
    MissingInternalTopics,
    ShutdownApplication,
    AssignmentDelayed,
    MissingClientTags,
}

impl Status {
    pub fn code(self) -> i8 {
        match self {
            Status::StaleTopology => 0,
            Status::MissingSourceTopics => 1,
            Status::IncorrectlyPartitionedTopics => 2,
            Status::MissingInternalTopics => 3,
            Status::ShutdownApplication => 4,
            Status::AssignmentDelayed => 5,
            Status::MissingClientTags => 6,
        }
    }

    /// Kafka's description of the status (a status detail says more).
    pub fn message(self) -> &'static str {
        match self {
            Status::StaleTopology => {
                "The topology epoch supplied is inconsistent with the topology for this streams group."
            }
            Status::MissingSourceTopics => {
                "One or more source topics are missing or a source topic regex resolves to zero topics."
            }
            Status::IncorrectlyPartitionedTopics => {
                "One or more topics expected to be copartitioned are not copartitioned."
            }
            Status::MissingInternalTopics => "One or more internal topics are missing.",
            Status::ShutdownApplication => {
                "A client requested the shutdown of the whole application."
            }
            Status::AssignmentDelayed => "The assignment was delayed by the coordinator.",
            Status::MissingClientTags => {
                "One or more required client tags for rack-aware standby task assignment are missing."
            }
        }
    }
}

/// A status with its detail, as the heartbeat answer's `Status` array carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusDetail {
    pub status: Status,
    pub detail: String,
}
