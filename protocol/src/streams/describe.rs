//! StreamsGroupDescribe (API key 89, v0-1): groups, their topologies, members and assignments;
//! v1 adds the topology description (KIP-1331) and the assignor's name (KIP-1357).

use super::common::*;
use crate::newer::codec::{Record, Value};
use crate::newer::streams_schemas::{
    STREAMS_GROUP_DESCRIBE_REQUEST as REQUEST, STREAMS_GROUP_DESCRIBE_RESPONSE as RESPONSE,
};

/// `StreamsGroupDescribeRequest`; `include_topology_description` is v1's (false at v0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsGroupDescribeRequest {
    pub group_ids: Vec<String>,
    pub include_authorized_operations: bool,
    pub include_topology_description: bool,
}

impl Wire for StreamsGroupDescribeRequest {
    fn from_record(r: &Record) -> Self {
        StreamsGroupDescribeRequest {
            group_ids: r.strings("GroupIds"),
            include_authorized_operations: r.bool("IncludeAuthorizedOperations", false),
            include_topology_description: r.bool("IncludeTopologyDescription", false),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("GroupIds", strings(&self.group_ids))
            .with(
                "IncludeAuthorizedOperations",
                Value::Bool(self.include_authorized_operations),
            )
            .with(
                "IncludeTopologyDescription",
                Value::Bool(self.include_topology_description),
            )
    }
}

/// `Subtopology` as described: no regexes or copartition groups, topics as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedSubtopology {
    pub subtopology_id: String,
    pub source_topics: Vec<String>,
    pub repartition_sink_topics: Vec<String>,
    pub state_changelog_topics: Vec<TopicInfo>,
    pub repartition_source_topics: Vec<TopicInfo>,
}

impl Wire for DescribedSubtopology {
    fn from_record(r: &Record) -> Self {
        DescribedSubtopology {
            subtopology_id: r.string("SubtopologyId"),
            source_topics: r.strings("SourceTopics"),
            repartition_sink_topics: r.strings("RepartitionSinkTopics"),
            state_changelog_topics: structs(r, "StateChangelogTopics"),
            repartition_source_topics: structs(r, "RepartitionSourceTopics"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("SubtopologyId", string(&self.subtopology_id))
            .with("SourceTopics", strings(&self.source_topics))
            .with(
                "RepartitionSinkTopics",
                strings(&self.repartition_sink_topics),
            )
            .with("StateChangelogTopics", array(&self.state_changelog_topics))
            .with(
                "RepartitionSourceTopics",
                array(&self.repartition_source_topics),
            )
    }
}

/// `Topology` as described; `subtopologies` is null when the topology is not configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedTopology {
    pub epoch: i32,
    pub subtopologies: Option<Vec<DescribedSubtopology>>,
}

impl Wire for DescribedTopology {
    fn from_record(r: &Record) -> Self {
        DescribedTopology {
            epoch: r.int("Epoch", 0) as i32,
            subtopologies: opt_structs(r, "Subtopologies"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Epoch", int(self.epoch))
            .with("Subtopologies", opt_array(&self.subtopologies))
    }
}

/// `Assignment`: a member's active, standby and warm-up tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    pub active_tasks: Vec<TaskIds>,
    pub standby_tasks: Vec<TaskIds>,
    pub warmup_tasks: Vec<TaskIds>,
}

impl Wire for Assignment {
    fn from_record(r: &Record) -> Self {
        Assignment {
            active_tasks: structs(r, "ActiveTasks"),
            standby_tasks: structs(r, "StandbyTasks"),
            warmup_tasks: structs(r, "WarmupTasks"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("ActiveTasks", array(&self.active_tasks))
            .with("StandbyTasks", array(&self.standby_tasks))
            .with("WarmupTasks", array(&self.warmup_tasks))
    }
}

/// `Member` of a described group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: Vec<KeyValue>,
    pub task_offsets: Vec<TaskOffset>,
    pub task_end_offsets: Vec<TaskOffset>,
    pub assignment: Assignment,
    pub target_assignment: Assignment,
    pub is_classic: bool,
}

impl Wire for DescribedMember {
    fn from_record(r: &Record) -> Self {
        DescribedMember {
            member_id: r.string("MemberId"),
            member_epoch: r.int("MemberEpoch", 0) as i32,
            instance_id: r.opt_string("InstanceId"),
            rack_id: r.opt_string("RackId"),
            client_id: r.string("ClientId"),
            client_host: r.string("ClientHost"),
            topology_epoch: r.int("TopologyEpoch", 0) as i32,
            process_id: r.string("ProcessId"),
            user_endpoint: opt_struct(r, "UserEndpoint"),
            client_tags: structs(r, "ClientTags"),
            task_offsets: structs(r, "TaskOffsets"),
            task_end_offsets: structs(r, "TaskEndOffsets"),
            assignment: one(r, "Assignment"),
            target_assignment: one(r, "TargetAssignment"),
            is_classic: r.bool("IsClassic", false),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("MemberId", string(&self.member_id))
            .with("MemberEpoch", int(self.member_epoch))
            .with("InstanceId", opt_string(&self.instance_id))
            .with("RackId", opt_string(&self.rack_id))
            .with("ClientId", string(&self.client_id))
            .with("ClientHost", string(&self.client_host))
            .with("TopologyEpoch", int(self.topology_epoch))
            .with("ProcessId", string(&self.process_id))
            .with("UserEndpoint", opt_record(&self.user_endpoint))
            .with("ClientTags", array(&self.client_tags))
            .with("TaskOffsets", array(&self.task_offsets))
            .with("TaskEndOffsets", array(&self.task_end_offsets))
            .with("Assignment", Value::Struct(self.assignment.to_record()))
            .with(
                "TargetAssignment",
                Value::Struct(self.target_assignment.to_record()),
            )
            .with("IsClassic", Value::Bool(self.is_classic))
    }
}

/// `TopologyDescriptionStatus` values (v1): why `topology_description` is null, or not.
pub mod description_status {
    /// The client did not ask (`include_topology_description` false).
    pub const NOT_REQUESTED: i8 = 0;
    /// No description is recorded for the group.
    pub const NOT_STORED: i8 = 1;
    /// The broker failed to fetch it.
    pub const ERROR: i8 = 2;
    /// `topology_description` carries it.
    pub const AVAILABLE: i8 = 3;
}

/// `DescribedGroup`. The last three fields are v1's: left out of a v0 answer, read as their
/// defaults from one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub group_id: String,
    pub group_state: String,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub topology: Option<DescribedTopology>,
    pub members: Vec<DescribedMember>,
    /// `i32::MIN` when not asked for.
    pub authorized_operations: i32,
    pub topology_description: Option<TopologyDescription>,
    /// One of [`description_status`].
    pub topology_description_status: i8,
    pub assignor_name: Option<String>,
}

impl Default for DescribedGroup {
    /// The schema's defaults.
    fn default() -> Self {
        DescribedGroup {
            error_code: 0,
            error_message: None,
            group_id: String::new(),
            group_state: String::new(),
            group_epoch: 0,
            assignment_epoch: 0,
            topology: None,
            members: Vec::new(),
            authorized_operations: i32::MIN,
            topology_description: None,
            topology_description_status: description_status::NOT_REQUESTED,
            assignor_name: None,
        }
    }
}

impl Wire for DescribedGroup {
    fn from_record(r: &Record) -> Self {
        DescribedGroup {
            error_code: r.int("ErrorCode", 0) as i16,
            error_message: r.opt_string("ErrorMessage"),
            group_id: r.string("GroupId"),
            group_state: r.string("GroupState"),
            group_epoch: r.int("GroupEpoch", 0) as i32,
            assignment_epoch: r.int("AssignmentEpoch", 0) as i32,
            topology: opt_struct(r, "Topology"),
            members: structs(r, "Members"),
            authorized_operations: r.int("AuthorizedOperations", i32::MIN as i64) as i32,
            topology_description: opt_struct(r, "TopologyDescription"),
            topology_description_status: r.int("TopologyDescriptionStatus", 0) as i8,
            assignor_name: r.opt_string("AssignorName"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("ErrorCode", int(self.error_code))
            .with("ErrorMessage", opt_string(&self.error_message))
            .with("GroupId", string(&self.group_id))
            .with("GroupState", string(&self.group_state))
            .with("GroupEpoch", int(self.group_epoch))
            .with("AssignmentEpoch", int(self.assignment_epoch))
            .with("Topology", opt_record(&self.topology))
            .with("Members", array(&self.members))
            .with("AuthorizedOperations", int(self.authorized_operations))
            .with(
                "TopologyDescription",
                opt_record(&self.topology_description),
            )
            .with(
                "TopologyDescriptionStatus",
                int(self.topology_description_status),
            )
            .with("AssignorName", opt_string(&self.assignor_name))
    }
}

/// `StreamsGroupDescribeResponse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsGroupDescribeResponse {
    pub throttle_time_ms: i32,
    pub groups: Vec<DescribedGroup>,
}

impl Wire for StreamsGroupDescribeResponse {
    fn from_record(r: &Record) -> Self {
        StreamsGroupDescribeResponse {
            throttle_time_ms: r.int("ThrottleTimeMs", 0) as i32,
            groups: structs(r, "Groups"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("ThrottleTimeMs", int(self.throttle_time_ms))
            .with("Groups", array(&self.groups))
    }
}

super::codec_methods!(StreamsGroupDescribeRequest, REQUEST);
super::codec_methods!(StreamsGroupDescribeResponse, RESPONSE);
