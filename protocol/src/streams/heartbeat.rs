//! StreamsGroupHeartbeat (API key 88, v0-1): a member joins, heartbeats, reports its tasks and
//! leaves; the answer carries its target tasks, the group's statuses and the endpoints of
//! every member for interactive queries.

use super::common::*;
use crate::newer::codec::{Record, Value};
use crate::newer::streams_schemas::{
    STREAMS_GROUP_HEARTBEAT_REQUEST as REQUEST, STREAMS_GROUP_HEARTBEAT_RESPONSE as RESPONSE,
};

/// `CopartitionGroup`: topics of a subtopology that must have the same number of partitions,
/// as indexes into its `source_topics`, `source_topic_regex` and `repartition_source_topics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopartitionGroup {
    pub source_topics: Vec<i16>,
    pub source_topic_regex: Vec<i16>,
    pub repartition_source_topics: Vec<i16>,
}

fn int16s(r: &Record, name: &str) -> Vec<i16> {
    r.ints(name).into_iter().map(|i| i as i16).collect()
}

impl Wire for CopartitionGroup {
    fn from_record(r: &Record) -> Self {
        CopartitionGroup {
            source_topics: int16s(r, "SourceTopics"),
            source_topic_regex: int16s(r, "SourceTopicRegex"),
            repartition_source_topics: int16s(r, "RepartitionSourceTopics"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with(
                "SourceTopics",
                Value::ints(self.source_topics.iter().copied()),
            )
            .with(
                "SourceTopicRegex",
                Value::ints(self.source_topic_regex.iter().copied()),
            )
            .with(
                "RepartitionSourceTopics",
                Value::ints(self.repartition_source_topics.iter().copied()),
            )
    }
}

/// `Subtopology` of the request's topology.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subtopology {
    pub subtopology_id: String,
    pub source_topics: Vec<String>,
    pub source_topic_regex: Vec<String>,
    pub state_changelog_topics: Vec<TopicInfo>,
    pub repartition_sink_topics: Vec<String>,
    pub repartition_source_topics: Vec<TopicInfo>,
    pub copartition_groups: Vec<CopartitionGroup>,
}

impl Wire for Subtopology {
    fn from_record(r: &Record) -> Self {
        Subtopology {
            subtopology_id: r.string("SubtopologyId"),
            source_topics: r.strings("SourceTopics"),
            source_topic_regex: r.strings("SourceTopicRegex"),
            state_changelog_topics: structs(r, "StateChangelogTopics"),
            repartition_sink_topics: r.strings("RepartitionSinkTopics"),
            repartition_source_topics: structs(r, "RepartitionSourceTopics"),
            copartition_groups: structs(r, "CopartitionGroups"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("SubtopologyId", string(&self.subtopology_id))
            .with("SourceTopics", strings(&self.source_topics))
            .with("SourceTopicRegex", strings(&self.source_topic_regex))
            .with("StateChangelogTopics", array(&self.state_changelog_topics))
            .with(
                "RepartitionSinkTopics",
                strings(&self.repartition_sink_topics),
            )
            .with(
                "RepartitionSourceTopics",
                array(&self.repartition_source_topics),
            )
            .with("CopartitionGroups", array(&self.copartition_groups))
    }
}

/// `Topology`: sent when the member joins (epoch 0), null otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    pub epoch: i32,
    pub subtopologies: Vec<Subtopology>,
}

impl Wire for Topology {
    fn from_record(r: &Record) -> Self {
        Topology {
            epoch: r.int("Epoch", 0) as i32,
            subtopologies: structs(r, "Subtopologies"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Epoch", int(self.epoch))
            .with("Subtopologies", array(&self.subtopologies))
    }
}

/// `StreamsGroupHeartbeatRequest`; v0 and v1 are the same bytes. The nullable fields are null
/// when unchanged since the member's last heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupHeartbeatRequest {
    pub group_id: String,
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member that will rejoin.
    pub member_epoch: i32,
    pub endpoint_information_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    pub topology: Option<Topology>,
    pub active_tasks: Option<Vec<TaskIds>>,
    pub standby_tasks: Option<Vec<TaskIds>>,
    pub warmup_tasks: Option<Vec<TaskIds>>,
    pub process_id: Option<String>,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: Option<Vec<KeyValue>>,
    pub task_offsets: Option<Vec<TaskOffset>>,
    pub task_end_offsets: Option<Vec<TaskOffset>>,
    pub shutdown_application: bool,
}

impl Default for StreamsGroupHeartbeatRequest {
    /// The schema's defaults.
    fn default() -> Self {
        StreamsGroupHeartbeatRequest {
            group_id: String::new(),
            member_id: String::new(),
            member_epoch: 0,
            endpoint_information_epoch: 0,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: -1,
            topology: None,
            active_tasks: None,
            standby_tasks: None,
            warmup_tasks: None,
            process_id: None,
            user_endpoint: None,
            client_tags: None,
            task_offsets: None,
            task_end_offsets: None,
            shutdown_application: false,
        }
    }
}

impl Wire for StreamsGroupHeartbeatRequest {
    fn from_record(r: &Record) -> Self {
        StreamsGroupHeartbeatRequest {
            group_id: r.string("GroupId"),
            member_id: r.string("MemberId"),
            member_epoch: r.int("MemberEpoch", 0) as i32,
            endpoint_information_epoch: r.int("EndpointInformationEpoch", 0) as i32,
            instance_id: r.opt_string("InstanceId"),
            rack_id: r.opt_string("RackId"),
            rebalance_timeout_ms: r.int("RebalanceTimeoutMs", -1) as i32,
            topology: opt_struct(r, "Topology"),
            active_tasks: opt_structs(r, "ActiveTasks"),
            standby_tasks: opt_structs(r, "StandbyTasks"),
            warmup_tasks: opt_structs(r, "WarmupTasks"),
            process_id: r.opt_string("ProcessId"),
            user_endpoint: opt_struct(r, "UserEndpoint"),
            client_tags: opt_structs(r, "ClientTags"),
            task_offsets: opt_structs(r, "TaskOffsets"),
            task_end_offsets: opt_structs(r, "TaskEndOffsets"),
            shutdown_application: r.bool("ShutdownApplication", false),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("GroupId", string(&self.group_id))
            .with("MemberId", string(&self.member_id))
            .with("MemberEpoch", int(self.member_epoch))
            .with(
                "EndpointInformationEpoch",
                int(self.endpoint_information_epoch),
            )
            .with("InstanceId", opt_string(&self.instance_id))
            .with("RackId", opt_string(&self.rack_id))
            .with("RebalanceTimeoutMs", int(self.rebalance_timeout_ms))
            .with("Topology", opt_record(&self.topology))
            .with("ActiveTasks", opt_array(&self.active_tasks))
            .with("StandbyTasks", opt_array(&self.standby_tasks))
            .with("WarmupTasks", opt_array(&self.warmup_tasks))
            .with("ProcessId", opt_string(&self.process_id))
            .with("UserEndpoint", opt_record(&self.user_endpoint))
            .with("ClientTags", opt_array(&self.client_tags))
            .with("TaskOffsets", opt_array(&self.task_offsets))
            .with("TaskEndOffsets", opt_array(&self.task_end_offsets))
            .with(
                "ShutdownApplication",
                Value::Bool(self.shutdown_application),
            )
    }
}

/// `Status`: one of the group's statuses (codes as `samsa_streams_group::Status`), with its
/// detail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeartbeatStatus {
    pub status_code: i8,
    pub status_detail: String,
}

impl Wire for HeartbeatStatus {
    fn from_record(r: &Record) -> Self {
        HeartbeatStatus {
            status_code: r.int("StatusCode", 0) as i8,
            status_detail: r.string("StatusDetail"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("StatusCode", int(self.status_code))
            .with("StatusDetail", string(&self.status_detail))
    }
}

/// `TopicPartition`: partitions of one topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicPartitions {
    pub topic: String,
    pub partitions: Vec<i32>,
}

impl Wire for TopicPartitions {
    fn from_record(r: &Record) -> Self {
        TopicPartitions {
            topic: r.string("Topic"),
            partitions: r.ints("Partitions").into_iter().map(|p| p as i32).collect(),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Topic", string(&self.topic))
            .with("Partitions", Value::ints(self.partitions.iter().copied()))
    }
}

/// `EndpointToPartitions`: the partitions a member's endpoint serves (interactive queries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointToPartitions {
    pub user_endpoint: Endpoint,
    pub active_partitions: Vec<TopicPartitions>,
    pub standby_partitions: Vec<TopicPartitions>,
}

impl Wire for EndpointToPartitions {
    fn from_record(r: &Record) -> Self {
        EndpointToPartitions {
            user_endpoint: one(r, "UserEndpoint"),
            active_partitions: structs(r, "ActivePartitions"),
            standby_partitions: structs(r, "StandbyPartitions"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with(
                "UserEndpoint",
                Value::Struct(self.user_endpoint.to_record()),
            )
            .with("ActivePartitions", array(&self.active_partitions))
            .with("StandbyPartitions", array(&self.standby_partitions))
    }
}

/// `StreamsGroupHeartbeatResponse`. Fields a version lacks are left out when encoding it and
/// read as their defaults: `acceptable_recovery_lag_legacy` (int32) is v0's only,
/// `acceptable_recovery_lag` (int64, default -1) and `topology_description_required` v1's.
/// A handler sets both recovery lags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupHeartbeatResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub acceptable_recovery_lag_legacy: i32,
    pub task_offset_interval_ms: i32,
    pub acceptable_recovery_lag: i64,
    /// Nullable on the wire, empty by default.
    pub status: Option<Vec<HeartbeatStatus>>,
    /// Null when unchanged since the last answer.
    pub active_tasks: Option<Vec<TaskIds>>,
    pub standby_tasks: Option<Vec<TaskIds>>,
    pub warmup_tasks: Option<Vec<TaskIds>>,
    pub topology_description_required: bool,
    pub endpoint_information_epoch: i32,
    pub partitions_by_user_endpoint: Option<Vec<EndpointToPartitions>>,
}

impl Default for StreamsGroupHeartbeatResponse {
    /// The schema's defaults.
    fn default() -> Self {
        StreamsGroupHeartbeatResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            member_id: String::new(),
            member_epoch: 0,
            heartbeat_interval_ms: 0,
            acceptable_recovery_lag_legacy: 0,
            task_offset_interval_ms: 0,
            acceptable_recovery_lag: -1,
            status: Some(Vec::new()),
            active_tasks: None,
            standby_tasks: None,
            warmup_tasks: None,
            topology_description_required: false,
            endpoint_information_epoch: 0,
            partitions_by_user_endpoint: None,
        }
    }
}

impl Wire for StreamsGroupHeartbeatResponse {
    fn from_record(r: &Record) -> Self {
        StreamsGroupHeartbeatResponse {
            throttle_time_ms: r.int("ThrottleTimeMs", 0) as i32,
            error_code: r.int("ErrorCode", 0) as i16,
            error_message: r.opt_string("ErrorMessage"),
            member_id: r.string("MemberId"),
            member_epoch: r.int("MemberEpoch", 0) as i32,
            heartbeat_interval_ms: r.int("HeartbeatIntervalMs", 0) as i32,
            acceptable_recovery_lag_legacy: r.int("AcceptableRecoveryLagLegacy", 0) as i32,
            task_offset_interval_ms: r.int("TaskOffsetIntervalMs", 0) as i32,
            acceptable_recovery_lag: r.int("AcceptableRecoveryLag", -1),
            status: opt_structs(r, "Status"),
            active_tasks: opt_structs(r, "ActiveTasks"),
            standby_tasks: opt_structs(r, "StandbyTasks"),
            warmup_tasks: opt_structs(r, "WarmupTasks"),
            topology_description_required: r.bool("TopologyDescriptionRequired", false),
            endpoint_information_epoch: r.int("EndpointInformationEpoch", 0) as i32,
            partitions_by_user_endpoint: opt_structs(r, "PartitionsByUserEndpoint"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("ThrottleTimeMs", int(self.throttle_time_ms))
            .with("ErrorCode", int(self.error_code))
            .with("ErrorMessage", opt_string(&self.error_message))
            .with("MemberId", string(&self.member_id))
            .with("MemberEpoch", int(self.member_epoch))
            .with("HeartbeatIntervalMs", int(self.heartbeat_interval_ms))
            .with(
                "AcceptableRecoveryLagLegacy",
                int(self.acceptable_recovery_lag_legacy),
            )
            .with("TaskOffsetIntervalMs", int(self.task_offset_interval_ms))
            .with("AcceptableRecoveryLag", int(self.acceptable_recovery_lag))
            .with("Status", opt_array(&self.status))
            .with("ActiveTasks", opt_array(&self.active_tasks))
            .with("StandbyTasks", opt_array(&self.standby_tasks))
            .with("WarmupTasks", opt_array(&self.warmup_tasks))
            .with(
                "TopologyDescriptionRequired",
                Value::Bool(self.topology_description_required),
            )
            .with(
                "EndpointInformationEpoch",
                int(self.endpoint_information_epoch),
            )
            .with(
                "PartitionsByUserEndpoint",
                opt_array(&self.partitions_by_user_endpoint),
            )
    }
}

super::codec_methods!(StreamsGroupHeartbeatRequest, REQUEST);
super::codec_methods!(StreamsGroupHeartbeatResponse, RESPONSE);
