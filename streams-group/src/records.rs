//! Kafka 4.4's streams group records in `__consumer_offsets`, byte for byte as Kafka writes
//! them (its `GroupCoordinatorRecordSerde`). A key is an int16 record type then its fields in
//! the classic encoding (int16 string lengths); a value is an int16 version (0: the only one
//! Kafka 4.4 knows) then its fields in the flexible encoding (compact strings and arrays, each
//! struct ending with its tagged fields). A null value is a tombstone. The bodies are read and
//! written by the generic codec of `samsa_protocol::newer::codec`, over the schemas below
//! (`common/message/StreamsGroup*.json` in kafka-group-coordinator-4.4.0.jar).
//!
//! | type | key           | value (v0)                                   | typed as                        |
//! |------|---------------|----------------------------------------------|---------------------------------|
//! | 17   | group         | epoch, metadata hash; tags 0-3: validated     | [`MetadataValue`]               |
//! |      |               | topology epoch, last assignment configs,      |                                 |
//! |      |               | stored and failed description topology epochs |                                 |
//! | 19   | group, member | instance, rack, client id and host, rebalance | [`MemberMetadataValue`]         |
//! |      |               | timeout, topology epoch, process, endpoint,   |                                 |
//! |      |               | client tags                                   |                                 |
//! | 20   | group         | assignment epoch; tag 0: assignment timestamp | [`TargetAssignmentMetadataValue`] |
//! | 21   | group, member | active, standby, warm-up tasks                | [`crate::Tasks`]                |
//! | 22   | group, member | epochs, state, the three task kinds and their | [`CurrentMemberAssignmentValue`]|
//! |      |               | pending revocations; per subtopology, tag 0:  |                                 |
//! |      |               | the partitions' assignment epochs             |                                 |
//! | 23   | group         | the topology                                  | [`crate::Topology`]             |
//!
//! Mapping to the crate's shared types: tasks by subtopology are [`crate::TaskSet`]s and topic
//! configs and client tags are maps, so they are written sorted (Kafka writes them in the
//! order of its own maps, which readers do not depend on); a subtopology's lists (source
//! topics, internal topics, copartition groups) keep their order. Record 22 keeps the wire's
//! lists ([`TaskEpochs`]), since Kafka gives assignment epochs to active tasks only.
//!
//! Tagged fields: the known ones are typed (an absent one reads as its default and is not
//! written at its default, as in Kafka); unknown tags of a value's top-level struct are kept
//! (`unknown_tags`) and written back. Decoding checks every length against the bytes present:
//! a damaged record is an error, never a panic.

use std::collections::{BTreeMap, BTreeSet};

use samsa_protocol::newer::codec::{
    self, CodecError, Default as Def, Field, Message, Record, Type, Value, Versions,
};
use samsa_protocol::streams::Endpoint;

use crate::{CopartitionGroup, Subtopology, TaskSet, Tasks, TopicInfo, Topology};

/// Kafka 4.4's record types (`CoordinatorRecordType`) of streams group records.
pub const METADATA: i16 = 17;
pub const MEMBER_METADATA: i16 = 19;
pub const TARGET_ASSIGNMENT_METADATA: i16 = 20;
pub const TARGET_ASSIGNMENT_MEMBER: i16 = 21;
pub const CURRENT_MEMBER_ASSIGNMENT: i16 = 22;
pub const TOPOLOGY: i16 = 23;

/// Whether `record_type` is one of the streams group record types above.
pub fn is_streams_record_type(record_type: i16) -> bool {
    matches!(record_type, METADATA | 19..=23)
}

/// Why a key or a value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("a record key or value of {len} bytes has no type or version")]
    TooShort { len: usize },
    #[error("record type {0} is not a streams group record")]
    NotStreams(i16),
    #[error("record type {record_type} has no value version {version} (Kafka 4.4 writes 0)")]
    UnknownVersion { record_type: i16, version: i16 },
    #[error(transparent)]
    Codec(#[from] CodecError),
}

// ---- schemas ----

const V0: Versions = Versions::from(0);
const KEY_V0: Versions = Versions::range(0, 0);

const fn f(name: &'static str, ty: Type) -> Field {
    Field::new(name, ty, V0)
}
macro_rules! array {
    ($fields:expr) => {
        Type::Array(&Type::Struct($fields))
    };
}
const STRINGS: Type = Type::Array(&Type::String);
const INT32S: Type = Type::Array(&Type::Int32);
const INT16S: Type = Type::Array(&Type::Int16);

const GROUP_KEY: &[Field] = &[Field::new("GroupId", Type::String, KEY_V0)];
const MEMBER_KEY: &[Field] = &[
    Field::new("GroupId", Type::String, KEY_V0),
    Field::new("MemberId", Type::String, KEY_V0),
];
const fn key(name: &'static str, fields: &'static [Field]) -> Message {
    Message {
        name,
        flexible: Versions::NONE,
        fields,
    }
}
static METADATA_KEY: Message = key("StreamsGroupMetadataKey", GROUP_KEY);
static MEMBER_METADATA_KEY: Message = key("StreamsGroupMemberMetadataKey", MEMBER_KEY);
static TARGET_ASSIGNMENT_METADATA_KEY: Message =
    key("StreamsGroupTargetAssignmentMetadataKey", GROUP_KEY);
static TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    key("StreamsGroupTargetAssignmentMemberKey", MEMBER_KEY);
static CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    key("StreamsGroupCurrentMemberAssignmentKey", MEMBER_KEY);
static TOPOLOGY_KEY: Message = key("StreamsGroupTopologyKey", GROUP_KEY);

const KEY_VALUE: &[Field] = &[f("Key", Type::String), f("Value", Type::String)];

// The schema says `"default": null` (not `"null"`) for LastAssignmentConfigs and
// AssignmentEpochs, which Kafka's generator reads as no default: an empty list. So an empty
// list is left out and a null is written (as a tagged null).
static METADATA_VALUE: Message = Message {
    name: "StreamsGroupMetadataValue",
    flexible: V0,
    fields: &[
        f("Epoch", Type::Int32),
        f("MetadataHash", Type::Int64),
        f("ValidatedTopologyEpoch", Type::Int32)
            .tagged(0, V0)
            .default(Def::Int(-1)),
        f("LastAssignmentConfigs", array!(KEY_VALUE))
            .tagged(1, V0)
            .nullable(V0),
        f("StoredDescriptionTopologyEpoch", Type::Int32)
            .tagged(2, V0)
            .default(Def::Int(-1)),
        f("FailedDescriptionTopologyEpoch", Type::Int32)
            .tagged(3, V0)
            .default(Def::Int(-1)),
    ],
};

const ENDPOINT: &[Field] = &[f("Host", Type::String), f("Port", Type::Uint16)];
static MEMBER_METADATA_VALUE: Message = Message {
    name: "StreamsGroupMemberMetadataValue",
    flexible: V0,
    fields: &[
        f("InstanceId", Type::String).nullable(V0),
        f("RackId", Type::String).nullable(V0),
        f("ClientId", Type::String),
        f("ClientHost", Type::String),
        f("RebalanceTimeoutMs", Type::Int32).default(Def::Int(-1)),
        f("TopologyEpoch", Type::Int32),
        f("ProcessId", Type::String),
        f("UserEndpoint", Type::Struct(ENDPOINT))
            .nullable(V0)
            .default(Def::Null),
        f("ClientTags", array!(KEY_VALUE)),
    ],
};

static TARGET_ASSIGNMENT_METADATA_VALUE: Message = Message {
    name: "StreamsGroupTargetAssignmentMetadataValue",
    flexible: V0,
    fields: &[
        f("AssignmentEpoch", Type::Int32),
        f("AssignmentTimestamp", Type::Int64).tagged(0, V0),
    ],
};

const TASK_IDS: &[Field] = &[f("SubtopologyId", Type::String), f("Partitions", INT32S)];
static TARGET_ASSIGNMENT_MEMBER_VALUE: Message = Message {
    name: "StreamsGroupTargetAssignmentMemberValue",
    flexible: V0,
    fields: &[
        f("ActiveTasks", array!(TASK_IDS)),
        f("StandbyTasks", array!(TASK_IDS)),
        f("WarmupTasks", array!(TASK_IDS)),
    ],
};

const TASK_IDS_WITH_EPOCHS: &[Field] = &[
    f("SubtopologyId", Type::String),
    f("Partitions", INT32S),
    f("AssignmentEpochs", INT32S).tagged(0, V0).nullable(V0),
];
static CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = Message {
    name: "StreamsGroupCurrentMemberAssignmentValue",
    flexible: V0,
    fields: &[
        f("MemberEpoch", Type::Int32),
        f("PreviousMemberEpoch", Type::Int32),
        f("State", Type::Int8),
        f("ActiveTasks", array!(TASK_IDS_WITH_EPOCHS)),
        f("StandbyTasks", array!(TASK_IDS_WITH_EPOCHS)),
        f("WarmupTasks", array!(TASK_IDS_WITH_EPOCHS)),
        f("ActiveTasksPendingRevocation", array!(TASK_IDS_WITH_EPOCHS)),
        f(
            "StandbyTasksPendingRevocation",
            array!(TASK_IDS_WITH_EPOCHS),
        ),
        f("WarmupTasksPendingRevocation", array!(TASK_IDS_WITH_EPOCHS)),
    ],
};

// The record's TopicConfig fields are named in lower case.
const TOPIC_CONFIG: &[Field] = &[f("key", Type::String), f("value", Type::String)];
const TOPIC_INFO: &[Field] = &[
    f("Name", Type::String),
    f("Partitions", Type::Int32),
    f("ReplicationFactor", Type::Int16),
    f("TopicConfigs", array!(TOPIC_CONFIG)),
];
const COPARTITION_GROUP: &[Field] = &[
    f("SourceTopics", INT16S),
    f("SourceTopicRegex", INT16S),
    f("RepartitionSourceTopics", INT16S),
];
const SUBTOPOLOGY: &[Field] = &[
    f("SubtopologyId", Type::String),
    f("SourceTopics", STRINGS),
    f("SourceTopicRegex", STRINGS),
    f("StateChangelogTopics", array!(TOPIC_INFO)),
    f("RepartitionSinkTopics", STRINGS),
    f("RepartitionSourceTopics", array!(TOPIC_INFO)),
    f("CopartitionGroups", array!(COPARTITION_GROUP)),
];
static TOPOLOGY_VALUE: Message = Message {
    name: "StreamsGroupTopologyValue",
    flexible: V0,
    fields: &[
        f("Epoch", Type::Int32),
        f("Subtopologies", array!(SUBTOPOLOGY)),
    ],
};

// ---- typed records ----

/// A streams group record's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamsRecordKey {
    /// `StreamsGroupMetadataKey`: the group exists, with its epoch.
    Metadata { group: String },
    /// `StreamsGroupMemberMetadataKey`: a member's metadata.
    MemberMetadata { group: String, member_id: String },
    /// `StreamsGroupTargetAssignmentMetadataKey`: the target assignment's epoch.
    TargetAssignmentMetadata { group: String },
    /// `StreamsGroupTargetAssignmentMemberKey`: a member's target tasks.
    TargetAssignmentMember { group: String, member_id: String },
    /// `StreamsGroupCurrentMemberAssignmentKey`: a member's epoch, state and tasks.
    CurrentMemberAssignment { group: String, member_id: String },
    /// `StreamsGroupTopologyKey`: the group's topology.
    Topology { group: String },
}

impl StreamsRecordKey {
    pub fn record_type(&self) -> i16 {
        match self {
            StreamsRecordKey::Metadata { .. } => METADATA,
            StreamsRecordKey::MemberMetadata { .. } => MEMBER_METADATA,
            StreamsRecordKey::TargetAssignmentMetadata { .. } => TARGET_ASSIGNMENT_METADATA,
            StreamsRecordKey::TargetAssignmentMember { .. } => TARGET_ASSIGNMENT_MEMBER,
            StreamsRecordKey::CurrentMemberAssignment { .. } => CURRENT_MEMBER_ASSIGNMENT,
            StreamsRecordKey::Topology { .. } => TOPOLOGY,
        }
    }

    pub fn group(&self) -> &str {
        match self {
            StreamsRecordKey::Metadata { group }
            | StreamsRecordKey::MemberMetadata { group, .. }
            | StreamsRecordKey::TargetAssignmentMetadata { group }
            | StreamsRecordKey::TargetAssignmentMember { group, .. }
            | StreamsRecordKey::CurrentMemberAssignment { group, .. }
            | StreamsRecordKey::Topology { group } => group,
        }
    }

    /// The member of a per-member record.
    pub fn member_id(&self) -> Option<&str> {
        match self {
            StreamsRecordKey::MemberMetadata { member_id, .. }
            | StreamsRecordKey::TargetAssignmentMember { member_id, .. }
            | StreamsRecordKey::CurrentMemberAssignment { member_id, .. } => Some(member_id),
            _ => None,
        }
    }

    /// The key's bytes: the record type, then the group (and member) id.
    pub fn encode(&self) -> Vec<u8> {
        let mut record = Record::new().with("GroupId", string(self.group()));
        if let Some(member) = self.member_id() {
            record.set("MemberId", string(member));
        }
        let body = codec::write(key_schema(self.record_type()), &record, 0)
            .expect("a key fits its schema");
        let mut out = Vec::with_capacity(2 + body.len());
        out.extend_from_slice(&self.record_type().to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Reads a key; a record type other than the six is [`RecordError::NotStreams`].
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let (record_type, body) = split_i16(bytes)?;
        if !is_streams_record_type(record_type) {
            return Err(RecordError::NotStreams(record_type));
        }
        let r = codec::read(key_schema(record_type), body, 0)?;
        let group = r.string("GroupId");
        let member_id = r.string("MemberId");
        Ok(match record_type {
            METADATA => StreamsRecordKey::Metadata { group },
            MEMBER_METADATA => StreamsRecordKey::MemberMetadata { group, member_id },
            TARGET_ASSIGNMENT_METADATA => StreamsRecordKey::TargetAssignmentMetadata { group },
            TARGET_ASSIGNMENT_MEMBER => {
                StreamsRecordKey::TargetAssignmentMember { group, member_id }
            }
            CURRENT_MEMBER_ASSIGNMENT => {
                StreamsRecordKey::CurrentMemberAssignment { group, member_id }
            }
            _ => StreamsRecordKey::Topology { group },
        })
    }
}

fn key_schema(record_type: i16) -> &'static Message {
    match record_type {
        METADATA => &METADATA_KEY,
        MEMBER_METADATA => &MEMBER_METADATA_KEY,
        TARGET_ASSIGNMENT_METADATA => &TARGET_ASSIGNMENT_METADATA_KEY,
        TARGET_ASSIGNMENT_MEMBER => &TARGET_ASSIGNMENT_MEMBER_KEY,
        CURRENT_MEMBER_ASSIGNMENT => &CURRENT_MEMBER_ASSIGNMENT_KEY,
        _ => &TOPOLOGY_KEY,
    }
}

fn value_schema(record_type: i16) -> &'static Message {
    match record_type {
        METADATA => &METADATA_VALUE,
        MEMBER_METADATA => &MEMBER_METADATA_VALUE,
        TARGET_ASSIGNMENT_METADATA => &TARGET_ASSIGNMENT_METADATA_VALUE,
        TARGET_ASSIGNMENT_MEMBER => &TARGET_ASSIGNMENT_MEMBER_VALUE,
        CURRENT_MEMBER_ASSIGNMENT => &CURRENT_MEMBER_ASSIGNMENT_VALUE,
        _ => &TOPOLOGY_VALUE,
    }
}

fn split_i16(bytes: &[u8]) -> Result<(i16, &[u8]), RecordError> {
    match bytes {
        [a, b, rest @ ..] => Ok((i16::from_be_bytes([*a, *b]), rest)),
        _ => Err(RecordError::TooShort { len: bytes.len() }),
    }
}

/// Tagged fields a value's schema does not know: (tag, bytes), kept and written back.
pub type UnknownTags = Vec<(i32, Vec<u8>)>;

/// `StreamsGroupMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataValue {
    /// The group epoch.
    pub epoch: i32,
    /// The hash of the group's topics' metadata.
    pub metadata_hash: i64,
    /// The topology epoch whose topics were validated (tag 0; -1 none).
    pub validated_topology_epoch: i32,
    /// The configs the last assignment used (tag 1; empty when absent, `None` for Kafka's
    /// explicit null).
    pub last_assignment_configs: Option<BTreeMap<String, String>>,
    /// The topology epoch of the stored description (tag 2; -1 none, -2 uncertain).
    pub stored_description_topology_epoch: i32,
    /// The topology epoch whose description was permanently refused (tag 3; -1 none).
    pub failed_description_topology_epoch: i32,
    pub unknown_tags: UnknownTags,
}

impl Default for MetadataValue {
    /// Kafka's defaults.
    fn default() -> Self {
        MetadataValue {
            epoch: 0,
            metadata_hash: 0,
            validated_topology_epoch: -1,
            last_assignment_configs: Some(BTreeMap::new()),
            stored_description_topology_epoch: -1,
            failed_description_topology_epoch: -1,
            unknown_tags: Vec::new(),
        }
    }
}

/// `StreamsGroupMemberMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadataValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
    pub unknown_tags: UnknownTags,
}

impl Default for MemberMetadataValue {
    /// Kafka's defaults.
    fn default() -> Self {
        MemberMetadataValue {
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            topology_epoch: 0,
            process_id: String::new(),
            user_endpoint: None,
            client_tags: BTreeMap::new(),
            unknown_tags: Vec::new(),
        }
    }
}

/// `StreamsGroupTargetAssignmentMetadataValue`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
    /// When the target assignment was computed (tag 0, KIP-1263); 0, and then not written,
    /// when unknown.
    pub assignment_timestamp_ms: i64,
    pub unknown_tags: UnknownTags,
}

/// `StreamsGroupTargetAssignmentMemberValue`: a member's target tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetAssignmentMemberValue {
    pub tasks: Tasks,
    pub unknown_tags: UnknownTags,
}

/// `TaskIds` of record 22: a subtopology's partitions and, for active tasks, the epoch at
/// which each was assigned (tag 0, in the partitions' order; empty when absent, which
/// Kafka's default is; `None` for an explicit null). When the epochs are missing or do not
/// match the partitions, Kafka takes the member epoch for each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEpochs {
    pub subtopology_id: String,
    pub partitions: Vec<i32>,
    pub assignment_epochs: Option<Vec<i32>>,
}

impl TaskEpochs {
    /// The tasks of `set`, sorted, each with the epoch `epoch_of` gives (`None`: no epochs,
    /// as Kafka writes standby and warm-up tasks).
    pub fn from_set(set: &TaskSet, epoch_of: impl Fn(&str, i32) -> Option<i32>) -> Vec<Self> {
        set.iter()
            .map(|(id, partitions)| {
                let epochs: Option<Vec<i32>> =
                    partitions.iter().map(|p| epoch_of(id, *p)).collect();
                TaskEpochs {
                    subtopology_id: id.clone(),
                    partitions: partitions.iter().copied().collect(),
                    assignment_epochs: Some(epochs.unwrap_or_default()),
                }
            })
            .collect()
    }

    /// The tasks as a [`TaskSet`].
    pub fn to_set(items: &[TaskEpochs]) -> TaskSet {
        let mut set = TaskSet::new();
        for t in items {
            set.entry(t.subtopology_id.clone())
                .or_default()
                .extend(t.partitions.iter().copied());
        }
        set
    }

    /// Task -> assignment epoch, `member_epoch` where the record has no (or mismatched)
    /// epochs, as Kafka replays it.
    pub fn epochs(items: &[TaskEpochs], member_epoch: i32) -> BTreeMap<(String, i32), i32> {
        let mut out = BTreeMap::new();
        for t in items {
            let epochs = t
                .assignment_epochs
                .as_ref()
                .filter(|e| e.len() == t.partitions.len());
            for (i, p) in t.partitions.iter().enumerate() {
                let epoch = epochs.map_or(member_epoch, |e| e[i]);
                out.insert((t.subtopology_id.clone(), *p), epoch);
            }
        }
        out
    }
}

/// `StreamsGroupCurrentMemberAssignmentValue`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurrentMemberAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// The member's state code (Kafka's `MemberState`: 1 stable, 2 unrevoked tasks,
    /// 3 unreleased tasks, 127 unknown).
    pub state: i8,
    pub active_tasks: Vec<TaskEpochs>,
    pub standby_tasks: Vec<TaskEpochs>,
    pub warmup_tasks: Vec<TaskEpochs>,
    pub active_tasks_pending_revocation: Vec<TaskEpochs>,
    pub standby_tasks_pending_revocation: Vec<TaskEpochs>,
    pub warmup_tasks_pending_revocation: Vec<TaskEpochs>,
    pub unknown_tags: UnknownTags,
}

/// `StreamsGroupTopologyValue`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyValue {
    pub topology: Topology,
    pub unknown_tags: UnknownTags,
}

/// A streams group record's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamsRecordValue {
    Metadata(MetadataValue),
    MemberMetadata(MemberMetadataValue),
    TargetAssignmentMetadata(TargetAssignmentMetadataValue),
    TargetAssignmentMember(TargetAssignmentMemberValue),
    CurrentMemberAssignment(CurrentMemberAssignmentValue),
    Topology(TopologyValue),
}

impl StreamsRecordValue {
    pub fn record_type(&self) -> i16 {
        match self {
            StreamsRecordValue::Metadata(_) => METADATA,
            StreamsRecordValue::MemberMetadata(_) => MEMBER_METADATA,
            StreamsRecordValue::TargetAssignmentMetadata(_) => TARGET_ASSIGNMENT_METADATA,
            StreamsRecordValue::TargetAssignmentMember(_) => TARGET_ASSIGNMENT_MEMBER,
            StreamsRecordValue::CurrentMemberAssignment(_) => CURRENT_MEMBER_ASSIGNMENT,
            StreamsRecordValue::Topology(_) => TOPOLOGY,
        }
    }

    /// The value's bytes: version 0, then the body.
    pub fn encode(&self) -> Vec<u8> {
        let body = codec::write(value_schema(self.record_type()), &to_record(self), 0)
            .expect("a value fits its schema");
        let mut out = Vec::with_capacity(2 + body.len());
        out.extend_from_slice(&0i16.to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Reads a value of a record of `record_type`.
    pub fn decode(record_type: i16, bytes: &[u8]) -> Result<Self, RecordError> {
        if !is_streams_record_type(record_type) {
            return Err(RecordError::NotStreams(record_type));
        }
        let (version, body) = split_i16(bytes)?;
        if version != 0 {
            return Err(RecordError::UnknownVersion {
                record_type,
                version,
            });
        }
        let r = codec::read(value_schema(record_type), body, 0)?;
        Ok(from_record(record_type, &r))
    }
}

/// A key and its value; `None` is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsRecord {
    pub key: StreamsRecordKey,
    pub value: Option<StreamsRecordValue>,
}

impl StreamsRecord {
    pub fn tombstone(key: StreamsRecordKey) -> Self {
        StreamsRecord { key, value: None }
    }

    /// The key's bytes and the value's (`None` for a tombstone).
    pub fn encode(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        (
            self.key.encode(),
            self.value.as_ref().map(StreamsRecordValue::encode),
        )
    }

    /// Reads a record from `__consumer_offsets`; `value` is `None` for a tombstone.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<Self, RecordError> {
        let key = StreamsRecordKey::decode(key)?;
        let value = value
            .map(|v| StreamsRecordValue::decode(key.record_type(), v))
            .transpose()?;
        Ok(StreamsRecord { key, value })
    }
}

// ---- mapping to and from the codec's records ----

/// Kafka's longest string; longer ones are cut (at a character boundary), so that encoding
/// cannot fail. A decoded string never is that long.
fn string(s: &str) -> Value {
    let mut end = s.len().min(i16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Value::Str(Some(s[..end].to_string()))
}

fn strings(items: &[String]) -> Value {
    Value::Array(Some(items.iter().map(|s| string(s)).collect()))
}

fn key_values(map: &BTreeMap<String, String>, key: &'static str, value: &'static str) -> Value {
    Value::records(
        map.iter()
            .map(|(k, v)| Record::new().with(key, string(k)).with(value, string(v))),
    )
}

fn read_map(items: &[Value], key: &str, value: &str) -> BTreeMap<String, String> {
    items
        .iter()
        .filter_map(Value::as_record)
        .map(|r| (r.string(key), r.string(value)))
        .collect()
}

fn task_set_value(set: &TaskSet) -> Value {
    Value::records(set.iter().map(|(id, partitions)| {
        Record::new()
            .with("SubtopologyId", string(id))
            .with("Partitions", Value::ints(partitions.iter().copied()))
    }))
}

fn read_task_set(r: &Record, name: &str) -> TaskSet {
    let mut set = TaskSet::new();
    for t in r.items(name).iter().filter_map(Value::as_record) {
        set.entry(t.string("SubtopologyId"))
            .or_default()
            .extend(t.ints("Partitions").into_iter().map(|p| p as i32));
    }
    set
}

fn task_epochs_value(items: &[TaskEpochs]) -> Value {
    Value::records(items.iter().map(|t| {
        Record::new()
            .with("SubtopologyId", string(&t.subtopology_id))
            .with("Partitions", Value::ints(t.partitions.iter().copied()))
            .with(
                "AssignmentEpochs",
                match &t.assignment_epochs {
                    Some(e) => Value::ints(e.iter().copied()),
                    None => Value::Array(None),
                },
            )
    }))
}

fn read_task_epochs(r: &Record, name: &str) -> Vec<TaskEpochs> {
    r.structs(name, |t| TaskEpochs {
        subtopology_id: t.string("SubtopologyId"),
        partitions: ints32(t, "Partitions"),
        assignment_epochs: match t.get("AssignmentEpochs") {
            None => Some(Vec::new()),
            Some(_) => t
                .opt_items("AssignmentEpochs")
                .map(|_| ints32(t, "AssignmentEpochs")),
        },
    })
}

fn ints32(r: &Record, name: &str) -> Vec<i32> {
    r.ints(name).into_iter().map(|i| i as i32).collect()
}

fn ints16(r: &Record, name: &str) -> Vec<i16> {
    r.ints(name).into_iter().map(|i| i as i16).collect()
}

fn topic_info_value(topics: &[TopicInfo]) -> Value {
    Value::records(topics.iter().map(|t| {
        Record::new()
            .with("Name", string(&t.name))
            .with("Partitions", Value::Int(t.partitions.into()))
            .with("ReplicationFactor", Value::Int(t.replication_factor.into()))
            .with("TopicConfigs", key_values(&t.configs, "key", "value"))
    }))
}

fn read_topic_infos(r: &Record, name: &str) -> Vec<TopicInfo> {
    r.structs(name, |t| TopicInfo {
        name: t.string("Name"),
        partitions: t.int("Partitions", 0) as i32,
        replication_factor: t.int("ReplicationFactor", 0) as i16,
        configs: read_map(t.items("TopicConfigs"), "key", "value"),
    })
}

fn subtopology_record(s: &Subtopology) -> Record {
    Record::new()
        .with("SubtopologyId", string(&s.id))
        .with("SourceTopics", strings(&s.source_topics))
        .with("SourceTopicRegex", strings(&s.source_topic_regex))
        .with(
            "StateChangelogTopics",
            topic_info_value(&s.state_changelog_topics),
        )
        .with("RepartitionSinkTopics", strings(&s.repartition_sink_topics))
        .with(
            "RepartitionSourceTopics",
            topic_info_value(&s.repartition_source_topics),
        )
        .with(
            "CopartitionGroups",
            Value::records(s.copartition_groups.iter().map(|g| {
                Record::new()
                    .with("SourceTopics", Value::ints(g.source_topics.iter().copied()))
                    .with(
                        "SourceTopicRegex",
                        Value::ints(g.source_topic_regex.iter().copied()),
                    )
                    .with(
                        "RepartitionSourceTopics",
                        Value::ints(g.repartition_source_topics.iter().copied()),
                    )
            })),
        )
}

fn read_subtopology(r: &Record) -> Subtopology {
    Subtopology {
        id: r.string("SubtopologyId"),
        source_topics: r.strings("SourceTopics"),
        source_topic_regex: r.strings("SourceTopicRegex"),
        state_changelog_topics: read_topic_infos(r, "StateChangelogTopics"),
        repartition_sink_topics: r.strings("RepartitionSinkTopics"),
        repartition_source_topics: read_topic_infos(r, "RepartitionSourceTopics"),
        copartition_groups: r.structs("CopartitionGroups", |g| CopartitionGroup {
            source_topics: ints16(g, "SourceTopics"),
            source_topic_regex: ints16(g, "SourceTopicRegex"),
            repartition_source_topics: ints16(g, "RepartitionSourceTopics"),
        }),
    }
}

fn to_record(value: &StreamsRecordValue) -> Record {
    let int = |i: i64| Value::Int(i);
    let (mut r, unknown) = match value {
        StreamsRecordValue::Metadata(v) => (
            Record::new()
                .with("Epoch", int(v.epoch.into()))
                .with("MetadataHash", int(v.metadata_hash))
                .with(
                    "ValidatedTopologyEpoch",
                    int(v.validated_topology_epoch.into()),
                )
                .with(
                    "LastAssignmentConfigs",
                    match &v.last_assignment_configs {
                        Some(configs) => key_values(configs, "Key", "Value"),
                        None => Value::Array(None),
                    },
                )
                .with(
                    "StoredDescriptionTopologyEpoch",
                    int(v.stored_description_topology_epoch.into()),
                )
                .with(
                    "FailedDescriptionTopologyEpoch",
                    int(v.failed_description_topology_epoch.into()),
                ),
            &v.unknown_tags,
        ),
        StreamsRecordValue::MemberMetadata(v) => (
            Record::new()
                .with(
                    "InstanceId",
                    v.instance_id.as_deref().map_or(Value::Str(None), string),
                )
                .with(
                    "RackId",
                    v.rack_id.as_deref().map_or(Value::Str(None), string),
                )
                .with("ClientId", string(&v.client_id))
                .with("ClientHost", string(&v.client_host))
                .with("RebalanceTimeoutMs", int(v.rebalance_timeout_ms.into()))
                .with("TopologyEpoch", int(v.topology_epoch.into()))
                .with("ProcessId", string(&v.process_id))
                .with(
                    "UserEndpoint",
                    Value::nullable_struct(v.user_endpoint.as_ref().map(|e| {
                        Record::new()
                            .with("Host", string(&e.host))
                            .with("Port", int(e.port.into()))
                    })),
                )
                .with("ClientTags", key_values(&v.client_tags, "Key", "Value")),
            &v.unknown_tags,
        ),
        StreamsRecordValue::TargetAssignmentMetadata(v) => (
            Record::new()
                .with("AssignmentEpoch", int(v.assignment_epoch.into()))
                .with("AssignmentTimestamp", int(v.assignment_timestamp_ms)),
            &v.unknown_tags,
        ),
        StreamsRecordValue::TargetAssignmentMember(v) => (
            Record::new()
                .with("ActiveTasks", task_set_value(&v.tasks.active))
                .with("StandbyTasks", task_set_value(&v.tasks.standby))
                .with("WarmupTasks", task_set_value(&v.tasks.warmup)),
            &v.unknown_tags,
        ),
        StreamsRecordValue::CurrentMemberAssignment(v) => (
            Record::new()
                .with("MemberEpoch", int(v.member_epoch.into()))
                .with("PreviousMemberEpoch", int(v.previous_member_epoch.into()))
                .with("State", int(v.state.into()))
                .with("ActiveTasks", task_epochs_value(&v.active_tasks))
                .with("StandbyTasks", task_epochs_value(&v.standby_tasks))
                .with("WarmupTasks", task_epochs_value(&v.warmup_tasks))
                .with(
                    "ActiveTasksPendingRevocation",
                    task_epochs_value(&v.active_tasks_pending_revocation),
                )
                .with(
                    "StandbyTasksPendingRevocation",
                    task_epochs_value(&v.standby_tasks_pending_revocation),
                )
                .with(
                    "WarmupTasksPendingRevocation",
                    task_epochs_value(&v.warmup_tasks_pending_revocation),
                ),
            &v.unknown_tags,
        ),
        StreamsRecordValue::Topology(v) => (
            Record::new()
                .with("Epoch", int(v.topology.epoch.into()))
                .with(
                    "Subtopologies",
                    Value::records(v.topology.subtopologies.iter().map(subtopology_record)),
                ),
            &v.unknown_tags,
        ),
    };
    r.unknown_tags = unknown.clone();
    r
}

fn from_record(record_type: i16, r: &Record) -> StreamsRecordValue {
    let unknown_tags = r.unknown_tags.clone();
    let i32_of = |name: &str, default: i64| r.int(name, default) as i32;
    match record_type {
        METADATA => StreamsRecordValue::Metadata(MetadataValue {
            epoch: i32_of("Epoch", 0),
            metadata_hash: r.int("MetadataHash", 0),
            validated_topology_epoch: i32_of("ValidatedTopologyEpoch", -1),
            last_assignment_configs: match r.get("LastAssignmentConfigs") {
                None => Some(BTreeMap::new()),
                Some(_) => r
                    .opt_items("LastAssignmentConfigs")
                    .map(|items| read_map(items, "Key", "Value")),
            },
            stored_description_topology_epoch: i32_of("StoredDescriptionTopologyEpoch", -1),
            failed_description_topology_epoch: i32_of("FailedDescriptionTopologyEpoch", -1),
            unknown_tags,
        }),
        MEMBER_METADATA => StreamsRecordValue::MemberMetadata(MemberMetadataValue {
            instance_id: r.opt_string("InstanceId"),
            rack_id: r.opt_string("RackId"),
            client_id: r.string("ClientId"),
            client_host: r.string("ClientHost"),
            rebalance_timeout_ms: i32_of("RebalanceTimeoutMs", -1),
            topology_epoch: i32_of("TopologyEpoch", 0),
            process_id: r.string("ProcessId"),
            user_endpoint: r.record("UserEndpoint").map(|e| Endpoint {
                host: e.string("Host"),
                port: e.int("Port", 0) as u16,
            }),
            client_tags: read_map(r.items("ClientTags"), "Key", "Value"),
            unknown_tags,
        }),
        TARGET_ASSIGNMENT_METADATA => {
            StreamsRecordValue::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                assignment_epoch: i32_of("AssignmentEpoch", 0),
                assignment_timestamp_ms: r.int("AssignmentTimestamp", 0),
                unknown_tags,
            })
        }
        TARGET_ASSIGNMENT_MEMBER => {
            StreamsRecordValue::TargetAssignmentMember(TargetAssignmentMemberValue {
                tasks: Tasks {
                    active: read_task_set(r, "ActiveTasks"),
                    standby: read_task_set(r, "StandbyTasks"),
                    warmup: read_task_set(r, "WarmupTasks"),
                },
                unknown_tags,
            })
        }
        CURRENT_MEMBER_ASSIGNMENT => {
            StreamsRecordValue::CurrentMemberAssignment(CurrentMemberAssignmentValue {
                member_epoch: i32_of("MemberEpoch", 0),
                previous_member_epoch: i32_of("PreviousMemberEpoch", 0),
                state: r.int("State", 0) as i8,
                active_tasks: read_task_epochs(r, "ActiveTasks"),
                standby_tasks: read_task_epochs(r, "StandbyTasks"),
                warmup_tasks: read_task_epochs(r, "WarmupTasks"),
                active_tasks_pending_revocation: read_task_epochs(
                    r,
                    "ActiveTasksPendingRevocation",
                ),
                standby_tasks_pending_revocation: read_task_epochs(
                    r,
                    "StandbyTasksPendingRevocation",
                ),
                warmup_tasks_pending_revocation: read_task_epochs(
                    r,
                    "WarmupTasksPendingRevocation",
                ),
                unknown_tags,
            })
        }
        _ => StreamsRecordValue::Topology(TopologyValue {
            topology: Topology {
                epoch: i32_of("Epoch", 0),
                subtopologies: r.structs("Subtopologies", read_subtopology),
            },
            unknown_tags,
        }),
    }
}

/// Tasks as a set of (subtopology, partition), for tests and callers that compare them.
pub fn task_ids(set: &TaskSet) -> BTreeSet<crate::TaskId> {
    set.iter()
        .flat_map(|(id, ps)| {
            ps.iter().map(move |p| crate::TaskId {
                subtopology: id.clone(),
                partition: *p,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_types_are_kafkas() {
        for t in [17, 19, 20, 21, 22, 23] {
            assert!(is_streams_record_type(t));
        }
        for t in [0, 1, 2, 3, 8, 16, 18, 24] {
            assert!(!is_streams_record_type(t));
        }
    }

    #[test]
    fn damaged_keys_and_values_are_errors_not_panics() {
        let key = StreamsRecordKey::CurrentMemberAssignment {
            group: "g".into(),
            member_id: "m".into(),
        };
        let value = StreamsRecordValue::CurrentMemberAssignment(CurrentMemberAssignmentValue {
            member_epoch: 3,
            active_tasks: vec![TaskEpochs {
                subtopology_id: "0".into(),
                partitions: vec![1, 2],
                assignment_epochs: Some(vec![3, 3]),
            }],
            ..Default::default()
        });
        let (k, v) = StreamsRecord {
            key: key.clone(),
            value: Some(value.clone()),
        }
        .encode();
        let v = v.unwrap();
        for cut in 0..k.len() {
            assert!(
                StreamsRecordKey::decode(&k[..cut]).is_err(),
                "key cut at {cut}"
            );
        }
        for cut in 0..v.len() {
            assert!(
                StreamsRecordValue::decode(CURRENT_MEMBER_ASSIGNMENT, &v[..cut]).is_err(),
                "value cut at {cut}"
            );
        }
        assert_eq!(
            StreamsRecord::decode(&k, Some(&v)).unwrap().value,
            Some(value)
        );
        assert_eq!(
            StreamsRecordKey::decode(&[0, 3, 0, 1, b'g']),
            Err(RecordError::NotStreams(3))
        );
        let mut v1 = v.clone();
        v1[1] = 1;
        assert_eq!(
            StreamsRecordValue::decode(CURRENT_MEMBER_ASSIGNMENT, &v1),
            Err(RecordError::UnknownVersion {
                record_type: 22,
                version: 1
            })
        );
    }

    #[test]
    fn epochs_fall_back_to_the_member_epoch() {
        let items = vec![
            TaskEpochs {
                subtopology_id: "0".into(),
                partitions: vec![0, 1],
                assignment_epochs: Some(vec![4, 5]),
            },
            TaskEpochs {
                subtopology_id: "1".into(),
                partitions: vec![0],
                assignment_epochs: Some(vec![]),
            },
        ];
        let epochs = TaskEpochs::epochs(&items, 9);
        assert_eq!(epochs[&("0".to_string(), 1)], 5);
        assert_eq!(epochs[&("1".to_string(), 0)], 9);
        let set = TaskEpochs::to_set(&items);
        assert_eq!(task_ids(&set).len(), 3);
        let back = TaskEpochs::from_set(&set, |id, _| (id == "0").then_some(7));
        assert_eq!(back[0].assignment_epochs, Some(vec![7, 7]));
        assert_eq!(back[1].assignment_epochs, Some(vec![]));
    }

    proptest::proptest! {
        /// Whatever a key or value holds, decoding answers and never panics.
        #[test]
        fn arbitrary_records_never_panic(
            record_type in 15i16..25,
            key in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            value in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
        ) {
            let mut k = record_type.to_be_bytes().to_vec();
            k.extend_from_slice(&key);
            let mut v = vec![0, 0];
            v.extend_from_slice(&value);
            if let Ok(record) = StreamsRecord::decode(&k, Some(&v)) {
                let _ = record.encode();
            }
        }
    }

    #[test]
    fn unknown_tags_survive() {
        // MetadataValue v0: epoch 1, hash 0, one tag 9 of two bytes.
        let mut value = vec![0, 0, 0, 0, 0, 1];
        value.extend_from_slice(&[0; 8]);
        value.extend_from_slice(&[1, 9, 2, 0xab, 0xcd]);
        let decoded = StreamsRecordValue::decode(METADATA, &value).unwrap();
        let StreamsRecordValue::Metadata(m) = &decoded else {
            panic!("metadata")
        };
        assert_eq!(m.unknown_tags, vec![(9, vec![0xab, 0xcd])]);
        assert_eq!(decoded.encode(), value);
    }
}
