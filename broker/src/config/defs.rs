//! Every configuration key Samsa knows, with its type, default and meaning. Broker keys use
//! Kafka's names so that a Kafka user's `server.properties` carries over; topic keys are the
//! topic-level names with the broker-level `log.*` synonyms Kafka has.

/// The type of a configuration value, as DescribeConfigs reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Password,
}

impl ConfigType {
    /// The `config_type` code of DescribeConfigs v3+ (Kafka's `ConfigType` ordinal + 1).
    pub fn describe_code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Password => 9,
        }
    }
}

/// How a key takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Used by Samsa.
    Used,
    /// Accepted so that a Kafka `server.properties` starts unchanged; has no effect on a
    /// single Samsa node (the value is still validated and reported by DescribeConfigs).
    Accepted,
}

/// One known key.
#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// `None`: no default (null).
    pub default: Option<&'static str>,
    pub effect: Effect,
    pub doc: &'static str,
}

const fn def(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    doc: &'static str,
) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Used,
        doc,
    }
}

const fn inert(name: &'static str, kind: ConfigType, default: Option<&'static str>) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Accepted,
        doc: "accepted for compatibility",
    }
}

use ConfigType::*;

/// Broker-level keys.
pub const BROKER_CONFIGS: &[ConfigDef] = &[
    def("node.id", Int, Some("1"), "this broker's id"),
    def(
        "broker.id",
        Int,
        Some("-1"),
        "synonym of node.id when node.id is not set",
    ),
    def(
        "listeners",
        List,
        Some("PLAINTEXT://127.0.0.1:9092"),
        "listeners, NAME://host:port",
    ),
    def(
        "advertised.listeners",
        List,
        None,
        "listeners as clients should reach them (Metadata)",
    ),
    def(
        "log.dirs",
        List,
        Some("./samsa-data"),
        "data directory (one is used)",
    ),
    def(
        "log.dir",
        String,
        None,
        "synonym of log.dirs when log.dirs is not set",
    ),
    def(
        "num.partitions",
        Int,
        Some("1"),
        "partitions of an auto-created topic or CreateTopics with -1",
    ),
    def(
        "default.replication.factor",
        Short,
        Some("1"),
        "replication factor of auto-created topics",
    ),
    def(
        "auto.create.topics.enable",
        Boolean,
        Some("true"),
        "create topics named in Metadata requests",
    ),
    def(
        "delete.topic.enable",
        Boolean,
        Some("true"),
        "allow DeleteTopics",
    ),
    def(
        "socket.request.max.bytes",
        Int,
        Some("104857600"),
        "largest request frame accepted",
    ),
    def(
        "max.request.partition.size.limit",
        Int,
        Some("2000"),
        "partitions in one DescribeTopicPartitions response (KIP-966)",
    ),
    def(
        "connections.max.idle.ms",
        Long,
        Some("600000"),
        "close connections idle this long",
    ),
    def(
        "max.connections",
        Int,
        Some("10000"),
        "connections accepted at once",
    ),
    def(
        "num.shards",
        Int,
        Some("0"),
        "shards (threads with their own event loop); 0 = one per core",
    ),
    def("io.engine", String, Some("auto"), "auto, uring or epoll"),
    def(
        "cluster.id",
        String,
        None,
        "cluster id; generated and stored in meta.properties when unset",
    ),
    def(
        "log.level",
        String,
        Some("info"),
        "log level or tracing filter (RUST_LOG overrides)",
    ),
    def(
        "metrics.listener",
        String,
        Some("127.0.0.1:9644"),
        "Prometheus endpoint host:port; empty disables",
    ),
    inert("log.retention.check.interval.ms", Long, Some("300000")),
    def(
        "log.flush.scheduler.interval.ms",
        Long,
        Some("1000"),
        "how often retention, segment.ms and flush.ms are checked",
    ),
    def(
        "log.flush.offset.checkpoint.interval.ms",
        Long,
        Some("60000"),
        "how often checkpoints are written",
    ),
    def(
        "log.cleaner.enable",
        Boolean,
        Some("true"),
        "compact topics with cleanup.policy=compact",
    ),
    def(
        "log.cleaner.backoff.ms",
        Long,
        Some("15000"),
        "pause between cleaner passes",
    ),
    def(
        "log.durable",
        Boolean,
        Some("false"),
        "answer produce only after an fsync shared by concurrent writes (group commit)",
    ),
    def(
        "min.insync.replicas",
        Int,
        Some("1"),
        "default min.insync.replicas of topics",
    ),
    def(
        "message.max.bytes",
        Int,
        Some("1048588"),
        "default max.message.bytes of topics",
    ),
    def(
        "offsets.topic.num.partitions",
        Int,
        Some("50"),
        "partitions of __consumer_offsets",
    ),
    def(
        "offsets.topic.replication.factor",
        Short,
        Some("1"),
        "replication factor of __consumer_offsets",
    ),
    def(
        "offsets.topic.segment.bytes",
        Int,
        Some("104857600"),
        "segment size of __consumer_offsets",
    ),
    def(
        "offsets.retention.minutes",
        Int,
        Some("10080"),
        "committed offsets of empty groups expire after this",
    ),
    def(
        "offsets.retention.check.interval.ms",
        Long,
        Some("600000"),
        "how often expired offsets are removed",
    ),
    def(
        "group.initial.rebalance.delay.ms",
        Int,
        Some("3000"),
        "wait for more members before the first rebalance of an empty group",
    ),
    def(
        "group.min.session.timeout.ms",
        Int,
        Some("6000"),
        "smallest session timeout a member may ask for",
    ),
    def(
        "group.max.session.timeout.ms",
        Int,
        Some("1800000"),
        "largest session timeout a member may ask for",
    ),
    def(
        "group.max.size",
        Int,
        Some("2147483647"),
        "members per group",
    ),
    def(
        "offset.metadata.max.bytes",
        Int,
        Some("4096"),
        "largest metadata string of a committed offset",
    ),
    def(
        "group.coordinator.memory.max.bytes",
        Long,
        Some("1073741824"),
        "memory the group coordinator may hold for members and committed offsets; beyond it new members and offsets are refused",
    ),
    def(
        "transaction.state.log.num.partitions",
        Int,
        Some("50"),
        "partitions of __transaction_state",
    ),
    def(
        "transaction.state.log.replication.factor",
        Short,
        Some("1"),
        "replication factor of __transaction_state",
    ),
    def(
        "transaction.state.log.min.isr",
        Int,
        Some("1"),
        "min ISR of __transaction_state",
    ),
    def(
        "transaction.max.timeout.ms",
        Int,
        Some("900000"),
        "largest transaction timeout a producer may ask for",
    ),
    def(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        Int,
        Some("10000"),
        "how often timed-out transactions are aborted",
    ),
    def(
        "transactional.id.expiration.ms",
        Int,
        Some("604800000"),
        "forget idle transactional ids after this",
    ),
    def(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        Int,
        Some("3600000"),
        "how often expired transactional ids are removed",
    ),
    def(
        "transaction.state.log.segment.bytes",
        Int,
        Some("104857600"),
        "segment size of __transaction_state",
    ),
    def(
        "producer.id.expiration.ms",
        Int,
        Some("86400000"),
        "forget idle producer ids after this",
    ),
    // Broker-level defaults of topic configs (Kafka's names; see TOPIC_CONFIGS for the synonyms).
    def(
        "log.segment.bytes",
        Int,
        Some("1073741824"),
        "default segment.bytes",
    ),
    def("log.roll.ms", Long, None, "default segment.ms"),
    def(
        "log.roll.hours",
        Int,
        Some("168"),
        "default segment.ms, in hours",
    ),
    def(
        "log.index.size.max.bytes",
        Int,
        Some("10485760"),
        "default segment.index.bytes",
    ),
    def(
        "log.index.interval.bytes",
        Int,
        Some("4096"),
        "default index.interval.bytes",
    ),
    def("log.retention.ms", Long, None, "default retention.ms"),
    def(
        "log.retention.minutes",
        Int,
        None,
        "default retention.ms, in minutes",
    ),
    def(
        "log.retention.hours",
        Int,
        Some("168"),
        "default retention.ms, in hours",
    ),
    def(
        "log.retention.bytes",
        Long,
        Some("-1"),
        "default retention.bytes",
    ),
    def(
        "log.cleanup.policy",
        List,
        Some("delete"),
        "default cleanup.policy",
    ),
    def(
        "log.cleaner.delete.retention.ms",
        Long,
        Some("86400000"),
        "default delete.retention.ms",
    ),
    def(
        "log.cleaner.min.compaction.lag.ms",
        Long,
        Some("0"),
        "default min.compaction.lag.ms",
    ),
    def(
        "log.cleaner.min.cleanable.ratio",
        Double,
        Some("0.5"),
        "default min.cleanable.dirty.ratio",
    ),
    def(
        "log.message.timestamp.type",
        String,
        Some("CreateTime"),
        "default message.timestamp.type",
    ),
    def(
        "log.flush.interval.messages",
        Long,
        Some("9223372036854775807"),
        "default flush.messages",
    ),
    def("log.flush.interval.ms", Long, None, "default flush.ms"),
    def(
        "log.segment.delete.delay.ms",
        Long,
        Some("60000"),
        "default file.delete.delay.ms",
    ),
    def(
        "compression.type",
        String,
        Some("producer"),
        "default compression.type",
    ),
    // Authorization (ACLs). Any non-empty class name enables Samsa's built-in authorizer, which
    // follows Kafka's StandardAuthorizer.
    def(
        "authorizer.class.name",
        String,
        Some(""),
        "non-empty enables ACL authorization (e.g. org.apache.kafka.metadata.authorizer.StandardAuthorizer)",
    ),
    def(
        "super.users",
        String,
        None,
        "principals allowed everything, separated by ';' (User:admin;User:ops)",
    ),
    def(
        "allow.everyone.if.no.acl.found",
        Boolean,
        Some("false"),
        "allow an operation on a resource that no ACL matches",
    ),
    // Kafka keys with no effect on a single Samsa node.
    inert("process.roles", List, None),
    inert("controller.quorum.voters", List, None),
    inert("controller.quorum.bootstrap.servers", List, None),
    inert("controller.listener.names", List, None),
    inert("inter.broker.listener.name", String, None),
    inert("listener.security.protocol.map", List, None),
    inert("num.network.threads", Int, Some("3")),
    inert("num.io.threads", Int, Some("8")),
    inert("socket.send.buffer.bytes", Int, Some("102400")),
    inert("socket.receive.buffer.bytes", Int, Some("102400")),
    inert("num.recovery.threads.per.data.dir", Int, Some("1")),
    inert(
        "share.coordinator.state.topic.replication.factor",
        Short,
        Some("3"),
    ),
    inert("share.coordinator.state.topic.min.isr", Short, Some("2")),
    inert(
        "group.coordinator.rebalance.protocols",
        List,
        Some("classic,consumer"),
    ),
    inert("unclean.leader.election.enable", Boolean, Some("false")),
    inert("auto.leader.rebalance.enable", Boolean, Some("true")),
];

/// Topic-level keys and their broker-level synonyms, most specific first (Kafka's order in
/// DescribeConfigs' `synonyms`).
pub struct TopicConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// Broker keys that supply the default, in priority order, with a conversion factor to the
    /// topic unit (hours -> ms is 3_600_000).
    pub synonyms: &'static [(&'static str, i64)],
    pub doc: &'static str,
}

const fn topic(
    name: &'static str,
    kind: ConfigType,
    synonyms: &'static [(&'static str, i64)],
    doc: &'static str,
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        kind,
        synonyms,
        doc,
    }
}

pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    topic(
        "cleanup.policy",
        List,
        &[("log.cleanup.policy", 1)],
        "delete, compact or both",
    ),
    topic(
        "compression.type",
        String,
        &[("compression.type", 1)],
        "producer, uncompressed, gzip, snappy, lz4 or zstd",
    ),
    topic(
        "delete.retention.ms",
        Long,
        &[("log.cleaner.delete.retention.ms", 1)],
        "how long tombstones survive compaction",
    ),
    topic(
        "file.delete.delay.ms",
        Long,
        &[("log.segment.delete.delay.ms", 1)],
        "delay before a deleted segment's files go",
    ),
    topic(
        "flush.messages",
        Long,
        &[("log.flush.interval.messages", 1)],
        "fsync after this many messages",
    ),
    topic(
        "flush.ms",
        Long,
        &[("log.flush.interval.ms", 1)],
        "fsync after this long",
    ),
    topic(
        "index.interval.bytes",
        Int,
        &[("log.index.interval.bytes", 1)],
        "bytes between offset index entries",
    ),
    topic(
        "max.message.bytes",
        Int,
        &[("message.max.bytes", 1)],
        "largest record batch",
    ),
    topic(
        "message.timestamp.type",
        String,
        &[("log.message.timestamp.type", 1)],
        "CreateTime or LogAppendTime",
    ),
    topic(
        "min.cleanable.dirty.ratio",
        Double,
        &[("log.cleaner.min.cleanable.ratio", 1)],
        "dirty ratio that triggers compaction",
    ),
    topic(
        "min.compaction.lag.ms",
        Long,
        &[("log.cleaner.min.compaction.lag.ms", 1)],
        "records younger than this are not compacted",
    ),
    topic(
        "min.insync.replicas",
        Int,
        &[("min.insync.replicas", 1)],
        "replicas that must have an acks=all write",
    ),
    topic(
        "retention.bytes",
        Long,
        &[("log.retention.bytes", 1)],
        "size a partition is trimmed to (-1: unlimited)",
    ),
    topic(
        "retention.ms",
        Long,
        &[
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ],
        "age after which segments are deleted (-1: forever)",
    ),
    topic(
        "segment.bytes",
        Int,
        &[("log.segment.bytes", 1)],
        "segment file size",
    ),
    topic(
        "segment.index.bytes",
        Int,
        &[("log.index.size.max.bytes", 1)],
        "offset index size",
    ),
    topic(
        "segment.ms",
        Long,
        &[("log.roll.ms", 1), ("log.roll.hours", 3_600_000)],
        "roll the active segment after this long",
    ),
    topic(
        "unclean.leader.election.enable",
        Boolean,
        &[("unclean.leader.election.enable", 1)],
        "accepted for compatibility",
    ),
    topic(
        "message.downconversion.enable",
        Boolean,
        &[],
        "accepted for compatibility",
    ),
    topic("preallocate", Boolean, &[], "accepted for compatibility"),
];

pub fn broker_def(name: &str) -> Option<&'static ConfigDef> {
    BROKER_CONFIGS.iter().find(|d| d.name == name)
}

pub fn topic_def(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Checks that `value` parses as `kind`; the message names the key.
pub fn validate(name: &str, kind: ConfigType, value: &str) -> Result<(), std::string::String> {
    let ok = match kind {
        Boolean => matches!(value.to_ascii_lowercase().as_str(), "true" | "false"),
        Int => value.trim().parse::<i32>().is_ok(),
        Short => value.trim().parse::<i16>().is_ok(),
        Long => value.trim().parse::<i64>().is_ok(),
        Double => value.trim().parse::<f64>().is_ok(),
        String | List | Password => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid value '{value}' for {name}: expected {}",
            kind_name(kind)
        ))
    }
}

fn kind_name(kind: ConfigType) -> &'static str {
    match kind {
        Boolean => "true or false",
        Int => "a 32-bit integer",
        Short => "a 16-bit integer",
        Long => "a 64-bit integer",
        Double => "a number",
        String => "a string",
        List => "a comma-separated list",
        Password => "a password",
    }
}
