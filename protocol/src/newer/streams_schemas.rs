//! Field descriptions of the KIP-1071 streams group APIs, which `kafka-protocol` 0.18 does not
//! know at all: StreamsGroupHeartbeat (key 88, v0-1), StreamsGroupDescribe (key 89, v0-1) and
//! StreamsGroupTopologyDescriptionUpdate (key 93, v0), written from Kafka 4.4's schemas
//! (`common/message/StreamsGroup*.json` in kafka-clients-4.4.0.jar; `scripts/reference/schemas`
//! prints them). Every version is flexible. Field names are the schemas' own; the typed structs
//! over them are in [`crate::streams`].

use super::codec::{Default, Field, Message, Type, Versions};

const V0: Versions = Versions::from(0);
const V1: Versions = Versions::from(1);

const fn f(name: &'static str, ty: Type, versions: Versions) -> Field {
    Field::new(name, ty, versions)
}
/// A field nullable in every version it has, null by default.
const fn null(name: &'static str, ty: Type, versions: Versions) -> Field {
    Field::new(name, ty, versions)
        .nullable(versions)
        .default(Default::Null)
}
/// `[]Struct` of the given fields.
macro_rules! array {
    ($fields:expr) => {
        Type::Array(&Type::Struct($fields))
    };
}
const STRINGS: Type = Type::Array(&Type::String);
const INT32S: Type = Type::Array(&Type::Int32);
const INT16S: Type = Type::Array(&Type::Int16);

// ---- common structs ----

pub(crate) const KEY_VALUE: &[Field] = &[f("Key", Type::String, V0), f("Value", Type::String, V0)];
pub(crate) const TOPIC_INFO: &[Field] = &[
    f("Name", Type::String, V0),
    f("Partitions", Type::Int32, V0),
    f("ReplicationFactor", Type::Int16, V0),
    f("TopicConfigs", array!(KEY_VALUE), V0),
];
pub(crate) const ENDPOINT: &[Field] = &[f("Host", Type::String, V0), f("Port", Type::Uint16, V0)];
pub(crate) const TASK_OFFSET: &[Field] = &[
    f("SubtopologyId", Type::String, V0),
    f("Partition", Type::Int32, V0),
    f("Offset", Type::Int64, V0),
];
pub(crate) const TASK_IDS: &[Field] = &[
    f("SubtopologyId", Type::String, V0),
    f("Partitions", INT32S, V0),
];
pub(crate) const COPARTITION_GROUP: &[Field] = &[
    f("SourceTopics", INT16S, V0),
    f("SourceTopicRegex", INT16S, V0),
    f("RepartitionSourceTopics", INT16S, V0),
];
pub(crate) const SUBTOPOLOGY: &[Field] = &[
    f("SubtopologyId", Type::String, V0),
    f("SourceTopics", STRINGS, V0),
    f("SourceTopicRegex", STRINGS, V0),
    f("StateChangelogTopics", array!(TOPIC_INFO), V0),
    f("RepartitionSinkTopics", STRINGS, V0),
    f("RepartitionSourceTopics", array!(TOPIC_INFO), V0),
    f("CopartitionGroups", array!(COPARTITION_GROUP), V0),
];
const TOPOLOGY: &[Field] = &[
    f("Epoch", Type::Int32, V0),
    f("Subtopologies", array!(SUBTOPOLOGY), V0),
];

// The topology description (KIP-1331): a node, a subtopology of nodes, a global store. The
// same in StreamsGroupTopologyDescriptionUpdateRequest v0 and StreamsGroupDescribeResponse
// v1; a struct's fields carry the versions of the message that holds them, and the describe
// response holds the description only from v1, so "0+" serves both.
const DESCRIPTION_NODE: &[Field] = &[
    f("Name", Type::String, V0),
    f("NodeType", Type::Int8, V0),
    f("SourceTopics", STRINGS, V0),
    null("SinkTopic", Type::String, V0),
    f("Stores", STRINGS, V0),
    f("Successors", STRINGS, V0),
];
const DESCRIPTION_SUBTOPOLOGY: &[Field] = &[
    f("SubtopologyId", Type::String, V0),
    f("Nodes", array!(DESCRIPTION_NODE), V0),
];
const DESCRIPTION_GLOBAL_STORE: &[Field] = &[
    f("Source", Type::Struct(DESCRIPTION_NODE), V0),
    f("Processor", Type::Struct(DESCRIPTION_NODE), V0),
];
const TOPOLOGY_DESCRIPTION: &[Field] = &[
    f("Subtopologies", array!(DESCRIPTION_SUBTOPOLOGY), V0),
    f("GlobalStores", array!(DESCRIPTION_GLOBAL_STORE), V0),
];

// ---- StreamsGroupHeartbeat (88) ----

// v1 is v0's bytes; it tells the broker that the client understands the response's v1.
pub static STREAMS_GROUP_HEARTBEAT_REQUEST: Message = Message {
    name: "StreamsGroupHeartbeatRequest",
    flexible: V0,
    fields: &[
        f("GroupId", Type::String, V0),
        f("MemberId", Type::String, V0),
        f("MemberEpoch", Type::Int32, V0),
        f("EndpointInformationEpoch", Type::Int32, V0),
        null("InstanceId", Type::String, V0),
        null("RackId", Type::String, V0),
        f("RebalanceTimeoutMs", Type::Int32, V0).default(Default::Int(-1)),
        null("Topology", Type::Struct(TOPOLOGY), V0),
        null("ActiveTasks", array!(TASK_IDS), V0),
        null("StandbyTasks", array!(TASK_IDS), V0),
        null("WarmupTasks", array!(TASK_IDS), V0),
        null("ProcessId", Type::String, V0),
        null("UserEndpoint", Type::Struct(ENDPOINT), V0),
        null("ClientTags", array!(KEY_VALUE), V0),
        null("TaskOffsets", array!(TASK_OFFSET), V0),
        null("TaskEndOffsets", array!(TASK_OFFSET), V0),
        f("ShutdownApplication", Type::Bool, V0),
    ],
};

const STATUS: &[Field] = &[
    f("StatusCode", Type::Int8, V0),
    f("StatusDetail", Type::String, V0),
];
const TOPIC_PARTITION: &[Field] = &[f("Topic", Type::String, V0), f("Partitions", INT32S, V0)];
const ENDPOINT_TO_PARTITIONS: &[Field] = &[
    f("UserEndpoint", Type::Struct(ENDPOINT), V0),
    f("ActivePartitions", array!(TOPIC_PARTITION), V0),
    f("StandbyPartitions", array!(TOPIC_PARTITION), V0),
];

// v1 replaces the int32 AcceptableRecoveryLagLegacy (before TaskOffsetIntervalMs) by an int64
// AcceptableRecoveryLag (after it), and adds TopologyDescriptionRequired (KIP-1331).
pub static STREAMS_GROUP_HEARTBEAT_RESPONSE: Message = Message {
    name: "StreamsGroupHeartbeatResponse",
    flexible: V0,
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f("ErrorCode", Type::Int16, V0),
        null("ErrorMessage", Type::String, V0),
        f("MemberId", Type::String, V0),
        f("MemberEpoch", Type::Int32, V0),
        f("HeartbeatIntervalMs", Type::Int32, V0),
        f(
            "AcceptableRecoveryLagLegacy",
            Type::Int32,
            Versions::range(0, 0),
        ),
        f("TaskOffsetIntervalMs", Type::Int32, V0),
        f("AcceptableRecoveryLag", Type::Int64, V1).default(Default::Int(-1)),
        // Nullable, but an empty array by default.
        f("Status", array!(STATUS), V0).nullable(V0),
        null("ActiveTasks", array!(TASK_IDS), V0),
        null("StandbyTasks", array!(TASK_IDS), V0),
        null("WarmupTasks", array!(TASK_IDS), V0),
        f("TopologyDescriptionRequired", Type::Bool, V1),
        f("EndpointInformationEpoch", Type::Int32, V0),
        null(
            "PartitionsByUserEndpoint",
            array!(ENDPOINT_TO_PARTITIONS),
            V0,
        ),
    ],
};

// ---- StreamsGroupDescribe (89) ----

pub static STREAMS_GROUP_DESCRIBE_REQUEST: Message = Message {
    name: "StreamsGroupDescribeRequest",
    flexible: V0,
    fields: &[
        f("GroupIds", STRINGS, V0),
        f("IncludeAuthorizedOperations", Type::Bool, V0),
        f("IncludeTopologyDescription", Type::Bool, V1),
    ],
};

const DESCRIBED_SUBTOPOLOGY: &[Field] = &[
    f("SubtopologyId", Type::String, V0),
    f("SourceTopics", STRINGS, V0),
    f("RepartitionSinkTopics", STRINGS, V0),
    f("StateChangelogTopics", array!(TOPIC_INFO), V0),
    f("RepartitionSourceTopics", array!(TOPIC_INFO), V0),
];
const DESCRIBED_TOPOLOGY: &[Field] = &[
    f("Epoch", Type::Int32, V0),
    null("Subtopologies", array!(DESCRIBED_SUBTOPOLOGY), V0),
];
const ASSIGNMENT: &[Field] = &[
    f("ActiveTasks", array!(TASK_IDS), V0),
    f("StandbyTasks", array!(TASK_IDS), V0),
    f("WarmupTasks", array!(TASK_IDS), V0),
];
const DESCRIBED_MEMBER: &[Field] = &[
    f("MemberId", Type::String, V0),
    f("MemberEpoch", Type::Int32, V0),
    null("InstanceId", Type::String, V0),
    null("RackId", Type::String, V0),
    f("ClientId", Type::String, V0),
    f("ClientHost", Type::String, V0),
    f("TopologyEpoch", Type::Int32, V0),
    f("ProcessId", Type::String, V0),
    null("UserEndpoint", Type::Struct(ENDPOINT), V0),
    f("ClientTags", array!(KEY_VALUE), V0),
    f("TaskOffsets", array!(TASK_OFFSET), V0),
    f("TaskEndOffsets", array!(TASK_OFFSET), V0),
    f("Assignment", Type::Struct(ASSIGNMENT), V0),
    f("TargetAssignment", Type::Struct(ASSIGNMENT), V0),
    f("IsClassic", Type::Bool, V0),
];
const DESCRIBED_GROUP: &[Field] = &[
    f("ErrorCode", Type::Int16, V0),
    null("ErrorMessage", Type::String, V0),
    f("GroupId", Type::String, V0),
    f("GroupState", Type::String, V0),
    f("GroupEpoch", Type::Int32, V0),
    f("AssignmentEpoch", Type::Int32, V0),
    null("Topology", Type::Struct(DESCRIBED_TOPOLOGY), V0),
    f("Members", array!(DESCRIBED_MEMBER), V0),
    f("AuthorizedOperations", Type::Int32, V0).default(Default::Int(i32::MIN as i64)),
    null(
        "TopologyDescription",
        Type::Struct(TOPOLOGY_DESCRIPTION),
        V1,
    ),
    f("TopologyDescriptionStatus", Type::Int8, V1),
    null("AssignorName", Type::String, V1),
];

// v1 adds the topology description and its status (KIP-1331) and the assignor's name
// (KIP-1357) to each group.
pub static STREAMS_GROUP_DESCRIBE_RESPONSE: Message = Message {
    name: "StreamsGroupDescribeResponse",
    flexible: V0,
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f("Groups", array!(DESCRIBED_GROUP), V0),
    ],
};

// ---- StreamsGroupTopologyDescriptionUpdate (93) ----

pub static STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_REQUEST: Message = Message {
    name: "StreamsGroupTopologyDescriptionUpdateRequest",
    flexible: V0,
    fields: &[
        f("GroupId", Type::String, V0),
        f("MemberId", Type::String, V0),
        f("TopologyEpoch", Type::Int32, V0),
        f(
            "TopologyDescription",
            Type::Struct(TOPOLOGY_DESCRIPTION),
            V0,
        ),
    ],
};

pub static STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_RESPONSE: Message = Message {
    name: "StreamsGroupTopologyDescriptionUpdateResponse",
    flexible: V0,
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f("ErrorCode", Type::Int16, V0),
        null("ErrorMessage", Type::String, V0),
    ],
};
