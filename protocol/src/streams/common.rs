//! The structs the streams group messages share, and the mapping between typed structs and the
//! generic codec's [`Record`]s.

use crate::newer::codec::{Record, Value};

/// A typed struct over one of the schemas' structs.
pub(crate) trait Wire: Sized {
    fn from_record(r: &Record) -> Self;
    fn to_record(&self) -> Record;
}

pub(crate) fn structs<T: Wire>(r: &Record, name: &str) -> Vec<T> {
    r.structs(name, T::from_record)
}
pub(crate) fn opt_structs<T: Wire>(r: &Record, name: &str) -> Option<Vec<T>> {
    r.opt_structs(name, T::from_record)
}
pub(crate) fn opt_struct<T: Wire>(r: &Record, name: &str) -> Option<T> {
    r.record(name).map(T::from_record)
}
/// A non-nullable struct (its defaults when absent).
pub(crate) fn one<T: Wire + Default>(r: &Record, name: &str) -> T {
    opt_struct(r, name).unwrap_or_default()
}
pub(crate) fn array<T: Wire>(items: &[T]) -> Value {
    Value::records(items.iter().map(Wire::to_record))
}
pub(crate) fn opt_array<T: Wire>(items: &Option<Vec<T>>) -> Value {
    match items {
        Some(items) => array(items),
        None => Value::Array(None),
    }
}
pub(crate) fn opt_record<T: Wire>(item: &Option<T>) -> Value {
    Value::nullable_struct(item.as_ref().map(Wire::to_record))
}

/// The longest string Kafka reads and writes.
const MAX_STRING: usize = i16::MAX as usize;

/// A string cut to Kafka's limit of 32767 bytes (at a character boundary), so that encoding
/// a typed struct cannot fail; strings a decode gave never are that long.
pub(crate) fn bounded(s: &str) -> &str {
    if s.len() <= MAX_STRING {
        return s;
    }
    let mut end = MAX_STRING;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
pub(crate) fn string(s: &str) -> Value {
    Value::Str(Some(bounded(s).to_string()))
}
pub(crate) fn opt_string(s: &Option<String>) -> Value {
    Value::Str(s.as_deref().map(|s| bounded(s).to_string()))
}
pub(crate) fn strings(items: &[String]) -> Value {
    Value::strs(items.iter().map(|s| bounded(s)))
}
pub(crate) fn int(i: impl Into<i64>) -> Value {
    Value::Int(i.into())
}

/// `KeyValue`: a topic config or a client tag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

impl Wire for KeyValue {
    fn from_record(r: &Record) -> Self {
        KeyValue {
            key: r.string("Key"),
            value: r.string("Value"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Key", string(&self.key))
            .with("Value", string(&self.value))
    }
}

/// `TopicInfo`: an internal topic of a topology (a changelog or a repartition topic).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    /// 0 when the broker derives the count (always for changelog topics).
    pub partitions: i32,
    /// 0 for the broker's default.
    pub replication_factor: i16,
    pub topic_configs: Vec<KeyValue>,
}

impl Wire for TopicInfo {
    fn from_record(r: &Record) -> Self {
        TopicInfo {
            name: r.string("Name"),
            partitions: r.int("Partitions", 0) as i32,
            replication_factor: r.int("ReplicationFactor", 0) as i16,
            topic_configs: structs(r, "TopicConfigs"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Name", string(&self.name))
            .with("Partitions", int(self.partitions))
            .with("ReplicationFactor", int(self.replication_factor))
            .with("TopicConfigs", array(&self.topic_configs))
    }
}

/// `Endpoint`: a member's user endpoint for interactive queries.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Wire for Endpoint {
    fn from_record(r: &Record) -> Self {
        Endpoint {
            host: r.string("Host"),
            port: r.int("Port", 0) as u16,
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Host", string(&self.host))
            .with("Port", int(self.port))
    }
}

/// `TaskOffset`: a task's cumulative changelog offset (or end offset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskOffset {
    pub subtopology_id: String,
    pub partition: i32,
    pub offset: i64,
}

impl Wire for TaskOffset {
    fn from_record(r: &Record) -> Self {
        TaskOffset {
            subtopology_id: r.string("SubtopologyId"),
            partition: r.int("Partition", 0) as i32,
            offset: r.int("Offset", 0),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("SubtopologyId", string(&self.subtopology_id))
            .with("Partition", int(self.partition))
            .with("Offset", int(self.offset))
    }
}

/// `TaskIds`: the tasks of one subtopology (its partitions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskIds {
    pub subtopology_id: String,
    pub partitions: Vec<i32>,
}

impl Wire for TaskIds {
    fn from_record(r: &Record) -> Self {
        TaskIds {
            subtopology_id: r.string("SubtopologyId"),
            partitions: r.ints("Partitions").into_iter().map(|p| p as i32).collect(),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("SubtopologyId", string(&self.subtopology_id))
            .with("Partitions", Value::ints(self.partitions.iter().copied()))
    }
}

/// `TopologyDescriptionNode` (KIP-1331): a source, processor or sink node of a topology's
/// description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyDescriptionNode {
    pub name: String,
    pub node_type: i8,
    pub source_topics: Vec<String>,
    pub sink_topic: Option<String>,
    pub stores: Vec<String>,
    pub successors: Vec<String>,
}

impl Wire for TopologyDescriptionNode {
    fn from_record(r: &Record) -> Self {
        TopologyDescriptionNode {
            name: r.string("Name"),
            node_type: r.int("NodeType", 0) as i8,
            source_topics: r.strings("SourceTopics"),
            sink_topic: r.opt_string("SinkTopic"),
            stores: r.strings("Stores"),
            successors: r.strings("Successors"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Name", string(&self.name))
            .with("NodeType", int(self.node_type))
            .with("SourceTopics", strings(&self.source_topics))
            .with("SinkTopic", opt_string(&self.sink_topic))
            .with("Stores", strings(&self.stores))
            .with("Successors", strings(&self.successors))
    }
}

/// `TopologyDescriptionSubtopology`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyDescriptionSubtopology {
    pub subtopology_id: String,
    pub nodes: Vec<TopologyDescriptionNode>,
}

impl Wire for TopologyDescriptionSubtopology {
    fn from_record(r: &Record) -> Self {
        TopologyDescriptionSubtopology {
            subtopology_id: r.string("SubtopologyId"),
            nodes: structs(r, "Nodes"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("SubtopologyId", string(&self.subtopology_id))
            .with("Nodes", array(&self.nodes))
    }
}

/// `TopologyDescriptionGlobalStore`: a global store's source and processor nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyDescriptionGlobalStore {
    pub source: TopologyDescriptionNode,
    pub processor: TopologyDescriptionNode,
}

impl Wire for TopologyDescriptionGlobalStore {
    fn from_record(r: &Record) -> Self {
        TopologyDescriptionGlobalStore {
            source: one(r, "Source"),
            processor: one(r, "Processor"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Source", Value::Struct(self.source.to_record()))
            .with("Processor", Value::Struct(self.processor.to_record()))
    }
}

/// `TopologyDescription` (KIP-1331): what a client sends with
/// StreamsGroupTopologyDescriptionUpdate and StreamsGroupDescribe v1 gives back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyDescription {
    pub subtopologies: Vec<TopologyDescriptionSubtopology>,
    pub global_stores: Vec<TopologyDescriptionGlobalStore>,
}

impl Wire for TopologyDescription {
    fn from_record(r: &Record) -> Self {
        TopologyDescription {
            subtopologies: structs(r, "Subtopologies"),
            global_stores: structs(r, "GlobalStores"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("Subtopologies", array(&self.subtopologies))
            .with("GlobalStores", array(&self.global_stores))
    }
}
