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
    Class,
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
            ConfigType::Class => 8,
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

/// Whether and where a broker key may change while the broker runs (KIP-226's dynamic broker
/// configs; Kafka's "update mode" in its documentation, `DynamicBrokerConfig` in its code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// Read at start only (properties file, environment, flags): AlterConfigs refuses it with
    /// "Cannot update these configs dynamically".
    ReadOnly,
    /// Dynamic for one broker (resource name = its node id), never as the cluster-wide default
    /// (Kafka's `PerBrokerConfigs`: listener, SSL and SASL settings).
    PerBroker,
    /// Dynamic for one broker or as the cluster-wide default (resource name "").
    ClusterWide,
    /// Dynamic only with a listener prefix, `listener.name.<listener>.<key>` (Kafka's
    /// `DynamicSecurityConfigs`: keystores and truststores belong to a listener).
    PerListener,
}

/// One known key.
#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// `None`: no default (null).
    pub default: Option<&'static str>,
    pub effect: Effect,
    pub update: Update,
    pub doc: &'static str,
}

impl ConfigDef {
    /// Dynamic per broker and as the cluster-wide default.
    const fn cluster_wide(self) -> ConfigDef {
        ConfigDef {
            update: Update::ClusterWide,
            ..self
        }
    }

    /// Dynamic per broker only.
    const fn per_broker(self) -> ConfigDef {
        ConfigDef {
            update: Update::PerBroker,
            ..self
        }
    }

    /// Dynamic only as `listener.name.<listener>.<key>`.
    const fn per_listener(self) -> ConfigDef {
        ConfigDef {
            update: Update::PerListener,
            ..self
        }
    }

    /// Whether AlterConfigs may change the key at all (DescribeConfigs' `read_only` is the
    /// opposite).
    pub fn is_dynamic(&self) -> bool {
        self.update != Update::ReadOnly
    }
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
        update: Update::ReadOnly,
        doc,
    }
}

const fn inert(name: &'static str, kind: ConfigType, default: Option<&'static str>) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Accepted,
        update: Update::ReadOnly,
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
    ).cluster_wide(),
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
    def(
        "metrics.partition.level",
        String,
        Some("partition"),
        "partition: offsets, ISR and follower lag per partition; topic: summed per topic, for \
         brokers with so many partitions that a scrape of per-partition series is too large",
    ),
    def(
        "log.retention.check.interval.ms",
        Long,
        Some("300000"),
        "how often time and size retention delete old segments (the active one too)",
    ),
    def(
        "log.flush.scheduler.interval.ms",
        Long,
        Some("1000"),
        "how often flush.ms and the log start offset are checked",
    ),
    def(
        "log.open.files.max",
        Int,
        None,
        "segment files held open at once over all partitions (idle ones close and reopen on \
         use); default a quarter of the process's file-handle limit, at most 8192",
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
    ).cluster_wide(),
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
    ).cluster_wide(),
    def(
        "replica.lag.time.max.ms",
        Long,
        Some("30000"),
        "a follower not caught up with its leader for this long leaves the ISR",
    ),
    def(
        "replica.fetch.max.bytes",
        Int,
        Some("1048576"),
        "bytes a follower asks for per partition and fetch",
    ),
    def(
        "replica.fetch.response.max.bytes",
        Int,
        Some("10485760"),
        "bytes a follower asks for per fetch",
    ),
    def(
        "replica.fetch.wait.max.ms",
        Int,
        Some("500"),
        "how long a follower's fetch waits at the leader for new records",
    ),
    def(
        "replica.selector.class",
        Class,
        None,
        "org.apache.kafka.common.replica.RackAwareReplicaSelector: a leader sends a consumer whose client.rack matches an in-sync replica's broker.rack to that replica (KIP-392); unset: consumers read from leaders",
    ),
    def(
        "max.incremental.fetch.session.cache.slots",
        Int,
        Some("1000"),
        "fetch sessions (KIP-227) this broker keeps at most (0: none)",
    ),
    def(
        "replica.fetch.backoff.ms",
        Int,
        Some("1000"),
        "pause after a follower's fetch failed",
    ),
    def(
        "message.max.bytes",
        Int,
        Some("1048588"),
        "default max.message.bytes of topics",
    ).cluster_wide(),
    def(
        "offsets.topic.num.partitions",
        Int,
        Some("50"),
        "partitions of __consumer_offsets",
    ),
    def(
        "offsets.topic.replication.factor",
        Short,
        Some("3"),
        "replication factor of __consumer_offsets (at most the registered brokers)",
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
        Some("3"),
        "replication factor of __transaction_state (at most the registered brokers)",
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
    ).cluster_wide(),
    // Broker-level defaults of topic configs (Kafka's names; see TOPIC_CONFIGS for the synonyms).
    def(
        "log.segment.bytes",
        Int,
        Some("1073741824"),
        "default segment.bytes",
    ).cluster_wide(),
    def("log.roll.ms", Long, None, "default segment.ms").cluster_wide(),
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
    ).cluster_wide(),
    def(
        "log.index.interval.bytes",
        Int,
        Some("4096"),
        "default index.interval.bytes",
    ).cluster_wide(),
    def("log.retention.ms", Long, None, "default retention.ms").cluster_wide(),
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
    ).cluster_wide(),
    def(
        "log.cleanup.policy",
        List,
        Some("delete"),
        "default cleanup.policy",
    ).cluster_wide(),
    def(
        "log.cleaner.delete.retention.ms",
        Long,
        Some("86400000"),
        "default delete.retention.ms",
    ).cluster_wide(),
    def(
        "log.cleaner.min.compaction.lag.ms",
        Long,
        Some("0"),
        "default min.compaction.lag.ms",
    ).cluster_wide(),
    def(
        "log.cleaner.min.cleanable.ratio",
        Double,
        Some("0.5"),
        "default min.cleanable.dirty.ratio",
    ).cluster_wide(),
    def(
        "log.message.timestamp.type",
        String,
        Some("CreateTime"),
        "default message.timestamp.type",
    ).cluster_wide(),
    def(
        "log.flush.interval.messages",
        Long,
        Some("9223372036854775807"),
        "default flush.messages",
    ).cluster_wide(),
    def("log.flush.interval.ms", Long, None, "default flush.ms").cluster_wide(),
    def(
        "log.segment.delete.delay.ms",
        Long,
        Some("60000"),
        "default file.delete.delay.ms",
    ).cluster_wide(),
    def(
        "compression.type",
        String,
        Some("producer"),
        "default compression.type",
    ).cluster_wide(),
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
    // KRaft (controller/settings.rs checks them together).
    def(
        "process.roles",
        List,
        None,
        "broker,controller (the default when unset), broker or controller",
    ),
    def(
        "controller.quorum.voters",
        List,
        None,
        "the metadata quorum's voters, id@host:port; unset: this node alone",
    ),
    def(
        "controller.quorum.bootstrap.servers",
        List,
        None,
        "host:port of controllers a broker-only node asks for the quorum's leader (KIP-853), instead of controller.quorum.voters; refused on controllers (dynamic voter sets are not supported yet)",
    ),
    def(
        "controller.listener.names",
        List,
        None,
        "the listener the controllers talk on (served apart from clients)",
    ),
    def(
        "controller.quorum.election.timeout.ms",
        Int,
        Some("1000"),
        "a voter that hears no leader for this long stands for election",
    ),
    def(
        "controller.quorum.election.backoff.max.ms",
        Int,
        Some("1000"),
        "longest wait before standing again after a failed election",
    ),
    def(
        "controller.quorum.fetch.timeout.ms",
        Int,
        Some("2000"),
        "a follower that cannot fetch from its leader for this long starts an election",
    ),
    def(
        "controller.quorum.request.timeout.ms",
        Int,
        Some("2000"),
        "how long a controller waits for another's answer",
    ),
    def(
        "controller.quorum.retry.backoff.ms",
        Int,
        Some("20"),
        "wait before retrying a failed controller request",
    ),
    def(
        "broker.rack",
        String,
        None,
        "this broker's rack: registered with the controller, reported in Metadata",
    ),
    def(
        "broker.session.timeout.ms",
        Int,
        Some("9000"),
        "a broker that has not heartbeated to the controller for this long is fenced",
    ),
    def(
        "broker.heartbeat.interval.ms",
        Int,
        Some("2000"),
        "how often a broker heartbeats to the active controller",
    ),
    def(
        "metadata.max.idle.interval.ms",
        Int,
        Some("500"),
        "the active controller writes a no-op record this often when idle (0: never)",
    ),
    def(
        "metadata.log.segment.bytes",
        Int,
        Some("1073741824"),
        "segment size of the metadata log",
    ),
    def(
        "metadata.log.segment.ms",
        Long,
        Some("604800000"),
        "age after which the metadata log rolls a segment",
    ),
    def(
        "metadata.log.max.record.bytes.between.snapshots",
        Long,
        Some("20971520"),
        "committed metadata bytes after which a snapshot is written",
    ),
    def(
        "metadata.log.max.snapshot.interval.ms",
        Long,
        Some("3600000"),
        "a metadata snapshot at least this often while records are committed (0: by size only)",
    ),
    inert("inter.broker.listener.name", String, None),
    inert("listener.security.protocol.map", List, None).per_broker(),
    inert("num.network.threads", Int, Some("3")).cluster_wide(),
    inert("num.io.threads", Int, Some("8")).cluster_wide(),
    inert("socket.send.buffer.bytes", Int, Some("102400")),
    inert("socket.receive.buffer.bytes", Int, Some("102400")),
    def(
        "num.recovery.threads.per.data.dir",
        Int,
        Some("8"),
        "threads that open (recover) partition logs and apply their leadership as the metadata \
         image names them, at start and for large topics; Samsa's default is 8, not Kafka's 2, \
         as the work waits on fsync, which a disk serves better several at a time",
    )
    .cluster_wide(),
    def(
        "share.coordinator.state.topic.replication.factor",
        Short,
        Some("3"),
        "replicas of __share_group_state (at most the brokers in the cluster when it is created)",
    ),
    def(
        "share.coordinator.state.topic.num.partitions",
        Int,
        Some("50"),
        "partitions of __share_group_state, where share groups keep their delivery state",
    ),
    def(
        "share.coordinator.state.topic.segment.bytes",
        Int,
        Some("104857600"),
        "segment size of __share_group_state",
    ),
    inert("share.coordinator.state.topic.min.isr", Short, Some("2")),
    def(
        "group.coordinator.rebalance.protocols",
        List,
        Some("classic,consumer,share"),
        "group protocols served: classic always; share (KIP-932 share groups) when listed; consumer is accepted",
    ),
    def("group.share.delivery.count.limit", Int, Some("5"), "default share.delivery.count.limit of groups"),
    def("group.share.min.delivery.count.limit", Int, Some("2"), "smallest share.delivery.count.limit a group may set"),
    def("group.share.max.delivery.count.limit", Int, Some("10"), "largest share.delivery.count.limit a group may set"),
    def(
        "group.share.partition.max.record.locks",
        Int,
        Some("2000"),
        "records in flight (between the share-partition start and end offsets) per share-partition",
    ),
    def("group.share.max.size", Int, Some("200"), "members per share group"),
    def(
        "group.share.max.share.sessions",
        Int,
        Some("2000"),
        "share sessions (one per member fetching here) a broker keeps; more are SHARE_SESSION_LIMIT_REACHED",
    ),
    def(
        "errors.deadletterqueue.topic.name.prefix",
        String,
        Some("dlq."),
        "every share group's dead-letter topic name starts with this (KIP-1191)",
    )
    .cluster_wide(),
    def(
        "errors.deadletterqueue.auto.create.topics.enable",
        Boolean,
        Some("true"),
        "create a share group's dead-letter topic on its first dead letter (KIP-1191)",
    )
    .cluster_wide(),
    def(
        "unclean.leader.election.enable",
        Boolean,
        Some("false"),
        "elect a replica outside the ISR when no in-sync one is live (records only the ISR had are lost); topics may override it",
    )
    .cluster_wide(),
    def(
        "unclean.leader.election.interval.ms",
        Long,
        Some("300000"),
        "how often the active controller elects leaders uncleanly for leaderless partitions of topics that allow it",
    ),
    def(
        "auto.leader.rebalance.enable",
        Boolean,
        Some("true"),
        "the active controller moves leadership back to preferred replicas every leader.imbalance.check.interval.seconds",
    ),
    def(
        "leader.imbalance.check.interval.seconds",
        Long,
        Some("300"),
        "how often the active controller moves leadership back to preferred replicas",
    ),
    // Read by Kafka's ZooKeeper controller only: a KRaft controller rebalances every partition
    // whose preferred replica can lead, whatever the share per broker.
    inert("leader.imbalance.per.broker.percentage", Int, Some("10")),
    // Defaults and bounds of the KIP-848 group configs (`consumer.session.timeout.ms`, ...):
    // what DescribeConfigs on a GROUP resource reports and IncrementalAlterConfigs checks, and
    // for share groups (KIP-932) what they run with.
    def("group.consumer.session.timeout.ms", Int, Some("45000"), "default consumer.session.timeout.ms of groups"),
    def("group.consumer.min.session.timeout.ms", Int, Some("45000"), "smallest consumer.session.timeout.ms a group may set"),
    def("group.consumer.max.session.timeout.ms", Int, Some("60000"), "largest consumer.session.timeout.ms a group may set"),
    def("group.consumer.heartbeat.interval.ms", Int, Some("5000"), "default consumer.heartbeat.interval.ms of groups"),
    def("group.consumer.min.heartbeat.interval.ms", Int, Some("5000"), "smallest consumer.heartbeat.interval.ms a group may set"),
    def("group.consumer.max.heartbeat.interval.ms", Int, Some("15000"), "largest consumer.heartbeat.interval.ms a group may set"),
    def("group.share.session.timeout.ms", Int, Some("45000"), "default share.session.timeout.ms of groups"),
    def("group.share.min.session.timeout.ms", Int, Some("45000"), "smallest share.session.timeout.ms a group may set"),
    def("group.share.max.session.timeout.ms", Int, Some("60000"), "largest share.session.timeout.ms a group may set"),
    def("group.share.heartbeat.interval.ms", Int, Some("5000"), "default share.heartbeat.interval.ms of groups"),
    def("group.share.min.heartbeat.interval.ms", Int, Some("5000"), "smallest share.heartbeat.interval.ms a group may set"),
    def("group.share.max.heartbeat.interval.ms", Int, Some("15000"), "largest share.heartbeat.interval.ms a group may set"),
    def("group.share.record.lock.duration.ms", Int, Some("30000"), "default share.record.lock.duration.ms of groups"),
    def("group.share.min.record.lock.duration.ms", Int, Some("15000"), "smallest share.record.lock.duration.ms a group may set"),
    def("group.share.max.record.lock.duration.ms", Int, Some("60000"), "largest share.record.lock.duration.ms a group may set"),
    // Broker-level defaults of Kafka 4 topic configs that Samsa accepts but does not enforce
    // (see TOPIC_CONFIGS); dynamic like every primary topic-config synonym (DynamicLogConfig).
    inert("log.roll.jitter.ms", Long, None).cluster_wide(),
    inert("log.roll.jitter.hours", Int, Some("0")),
    inert("log.cleaner.max.compaction.lag.ms", Long, Some("9223372036854775807")).cluster_wide(),
    inert("compression.gzip.level", Int, Some("-1")).cluster_wide(),
    inert("compression.lz4.level", Int, Some("9")).cluster_wide(),
    inert("compression.zstd.level", Int, Some("3")).cluster_wide(),
    inert("log.preallocate", Boolean, Some("false")).cluster_wide(),
    inert("log.message.downconversion.enable", Boolean, Some("true")).cluster_wide(),
    inert("log.message.timestamp.before.max.ms", Long, Some("9223372036854775807")).cluster_wide(),
    inert("log.message.timestamp.after.max.ms", Long, Some("3600000")).cluster_wide(),
    inert("log.local.retention.ms", Long, Some("-2")).cluster_wide(),
    inert("log.local.retention.bytes", Long, Some("-2")).cluster_wide(),
    // Kafka's other dynamically updatable broker configs (`DynamicBrokerConfig.AllDynamicConfigs`):
    // stored, persisted and described with Kafka's defaults, without effect on a single Samsa
    // node. Thread counts follow Kafka's rule (DynamicThreadPool): at least half and at most
    // double the current value.
    inert("background.threads", Int, Some("10")).cluster_wide(),
    inert("num.replica.fetchers", Int, Some("1")).cluster_wide(),
    inert("log.cleaner.threads", Int, Some("1")).cluster_wide(),
    inert("log.cleaner.dedupe.buffer.size", Long, Some("134217728")).cluster_wide(),
    inert("log.cleaner.io.buffer.load.factor", Double, Some("0.9")).cluster_wide(),
    inert("log.cleaner.io.buffer.size", Int, Some("524288")).cluster_wide(),
    inert("log.cleaner.io.max.bytes.per.second", Double, Some("1.7976931348623157E308")).cluster_wide(),
    inert("metric.reporters", List, Some("org.apache.kafka.common.metrics.JmxReporter")).cluster_wide(),
    inert("max.connections.per.ip", Int, Some("2147483647")).cluster_wide(),
    inert("max.connections.per.ip.overrides", String, Some("")).cluster_wide(),
    inert("max.connection.creation.rate", Int, Some("2147483647")).cluster_wide(),
    inert("transaction.partition.verification.enable", Boolean, Some("true")).cluster_wide(),
    inert("remote.log.index.file.cache.total.size.bytes", Long, Some("1073741824")).cluster_wide(),
    inert("remote.fetch.max.wait.ms", Int, Some("500")).cluster_wide(),
    inert("remote.log.manager.copy.max.bytes.per.second", Long, Some("9223372036854775807")).cluster_wide(),
    inert("remote.log.manager.fetch.max.bytes.per.second", Long, Some("9223372036854775807")).cluster_wide(),
    inert("remote.list.offsets.request.timeout.ms", Long, Some("30000")).cluster_wide(),
    inert("config.providers", List, Some("")).cluster_wide(),
    inert("leader.replication.throttled.rate", Long, Some("9223372036854775807")).cluster_wide(),
    inert("follower.replication.throttled.rate", Long, Some("9223372036854775807")).cluster_wide(),
    inert("replica.alter.log.dirs.io.max.bytes.per.second", Long, Some("9223372036854775807")).cluster_wide(),
    // Listener security (TLS and SASL), dynamic per broker in Kafka (DynamicListenerConfig).
    // Samsa serves PLAINTEXT only for now; these are stored for the day it does more.
    inert("principal.builder.class", Class, Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder")).per_broker(),
    inert("ssl.protocol", String, Some("TLSv1.3")).per_broker(),
    inert("ssl.provider", String, None).per_broker(),
    def("ssl.cipher.suites", List, Some(""), "TLS cipher suites by IANA name (empty: rustls's defaults)").per_broker(),
    def("ssl.enabled.protocols", List, Some("TLSv1.2,TLSv1.3"), "TLS versions a TLS listener accepts (TLSv1.2, TLSv1.3)").per_broker(),
    inert("ssl.keymanager.algorithm", String, Some("SunX509")).per_broker(),
    inert("ssl.trustmanager.algorithm", String, Some("PKIX")).per_broker(),
    def("ssl.endpoint.identification.algorithm", String, Some("https"), "https: this node checks that the certificate of a node it connects to names the host or address it was reached at; empty: it does not").per_listener(),
    inert("ssl.secure.random.implementation", String, None).per_broker(),
    def("ssl.client.auth", String, Some("none"), "none, requested or required: client certificates on TLS listeners (mutual TLS)").per_broker(),
    inert("ssl.engine.factory.class", Class, None).per_broker(),
    def("ssl.keystore.type", String, Some("JKS"), "PEM or PKCS12 (JKS is refused: convert it to PKCS12 with keytool)").per_listener(),
    def("ssl.keystore.location", String, None, "a PEM file with the listener's private key and certificate chain, or a PKCS12 store").per_listener(),
    def("ssl.keystore.password", Password, None, "the password of a PKCS12 keystore").per_listener(),
    def("ssl.key.password", Password, None, "the private key's password (encrypted keys are refused at start)").per_listener(),
    def("ssl.keystore.key", Password, None, "the listener's private key, inline PEM").per_listener(),
    def("ssl.keystore.certificate.chain", Password, None, "the listener's certificate chain, inline PEM").per_listener(),
    def("ssl.truststore.type", String, Some("JKS"), "PEM or PKCS12").per_listener(),
    def("ssl.truststore.location", String, None, "a PEM file (or a PKCS12 store) of the CA certificates that client certificates, and the certificates of other nodes this node connects to, must chain to").per_listener(),
    def("ssl.truststore.password", Password, None, "the password of a PKCS12 truststore").per_listener(),
    def("ssl.truststore.certificates", Password, None, "the trusted CA certificates, inline PEM").per_listener(),
    def("sasl.mechanism.inter.broker.protocol", String, Some("GSSAPI"), "the SASL mechanism brokers authenticate to each other with on a SASL inter-broker listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, with the username and password of that listener's JAAS config for it"),
    def("sasl.mechanism.controller.protocol", String, Some("GSSAPI"), "the SASL mechanism nodes authenticate to controllers with on a SASL controller listener: PLAIN or OAUTHBEARER"),
    def("sasl.jaas.config", Password, None, "JAAS login module config; on a broker as listener.name.<listener>.<mechanism>.sasl.jaas.config (PLAIN's users: user_<name>=\"<password>\")").per_broker(),
    def("sasl.enabled.mechanisms", List, Some("GSSAPI"), "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512").per_broker(),
    def("sasl.server.callback.handler.class", Class, None, "on a broker as listener.name.<l>.<mechanism>.sasl.server.callback.handler.class; only Kafka's unsecured OAUTHBEARER validator (the default) is served").per_broker(),
    def("ssl.principal.mapping.rules", String, Some("DEFAULT"), "rules mapping a client certificate's subject to a principal name (RULE:pattern/replacement/[LU], DEFAULT)").per_listener(),
    def("security.inter.broker.protocol", String, Some("PLAINTEXT"), "the inter-broker listener's protocol when inter.broker.listener.name is not set"),
    def("connections.max.reauth.ms", Long, Some("0"), "SASL re-authentication (KIP-368): how long a session lasts before the client must re-authenticate; 0 for as long as the connection").per_listener(),
    def("connection.failed.authentication.delay.ms", Int, Some("100"), "how long a failed authentication waits before its answer and the close, to slow guessing"),
    def("sasl.server.max.receive.size", Int, Some("524288"), "the largest SASL token accepted before authentication"),
    inert("sasl.kerberos.service.name", String, None).per_broker(),
    inert("sasl.kerberos.kinit.cmd", String, Some("/usr/bin/kinit")).per_broker(),
    inert("sasl.kerberos.ticket.renew.window.factor", Double, Some("0.8")).per_broker(),
    inert("sasl.kerberos.ticket.renew.jitter", Double, Some("0.05")).per_broker(),
    inert("sasl.kerberos.min.time.before.relogin", Long, Some("60000")).per_broker(),
    inert("sasl.kerberos.principal.to.local.rules", List, Some("DEFAULT")).per_broker(),
    inert("sasl.login.refresh.window.factor", Double, Some("0.8")).per_broker(),
    inert("sasl.login.refresh.window.jitter", Double, Some("0.05")).per_broker(),
    inert("sasl.login.refresh.min.period.seconds", Short, Some("60")).per_broker(),
    inert("sasl.login.refresh.buffer.seconds", Short, Some("300")).per_broker(),
];

/// Topic-level keys and their broker-level synonyms, most specific first (Kafka's order in
/// DescribeConfigs' `synonyms`). Every topic config of Kafka 4.0 is here: `effect` says which
/// Samsa enforces and which it accepts, validates and reports without acting on them.
pub struct TopicConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// Broker keys that supply the default, in priority order, with a conversion factor to the
    /// topic unit (hours -> ms is 3_600_000). Kafka's `ServerTopicConfigSynonyms`.
    pub synonyms: &'static [(&'static str, i64)],
    /// The default when no broker synonym has a value (Kafka's `LogConfig` default).
    pub default: Option<&'static str>,
    pub effect: Effect,
    pub doc: &'static str,
}

impl TopicConfigDef {
    const fn with_default(self, value: &'static str) -> TopicConfigDef {
        TopicConfigDef {
            default: Some(value),
            ..self
        }
    }
}

/// A topic key Samsa enforces.
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
        default: None,
        effect: Effect::Used,
        doc,
    }
}

/// A topic key Samsa accepts for compatibility: validated, stored and described, but without
/// effect (a single replica, no tiered storage, no recompression, no timestamp bounds).
const fn topic_accepted(
    name: &'static str,
    kind: ConfigType,
    synonyms: &'static [(&'static str, i64)],
    doc: &'static str,
) -> TopicConfigDef {
    TopicConfigDef {
        effect: Effect::Accepted,
        ..topic(name, kind, synonyms, doc)
    }
}

const I64_MAX: &str = "9223372036854775807";

pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    TopicConfigDef {
        default: Some("false"),
        ..topic(
            "errors.deadletterqueue.group.enable",
            Boolean,
            &[],
            "share groups may write dead letters to this topic (KIP-1191)",
        )
    },
    topic(
        "cleanup.policy",
        List,
        &[("log.cleanup.policy", 1)],
        "delete, compact or both",
    ),
    topic_accepted(
        "compression.gzip.level",
        Int,
        &[("compression.gzip.level", 1)],
        "gzip level when the broker recompresses (accepted: Samsa stores batches as sent)",
    ),
    topic_accepted(
        "compression.lz4.level",
        Int,
        &[("compression.lz4.level", 1)],
        "lz4 level when the broker recompresses (accepted: Samsa stores batches as sent)",
    ),
    topic_accepted(
        "compression.type",
        String,
        &[("compression.type", 1)],
        "producer, uncompressed, gzip, snappy, lz4 or zstd (accepted: Samsa stores batches as sent)",
    ),
    topic_accepted(
        "compression.zstd.level",
        Int,
        &[("compression.zstd.level", 1)],
        "zstd level when the broker recompresses (accepted: Samsa stores batches as sent)",
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
    )
    .with_default(I64_MAX),
    topic(
        "flush.ms",
        Long,
        &[("log.flush.interval.ms", 1)],
        "fsync after this long",
    )
    .with_default(I64_MAX),
    topic_accepted(
        "follower.replication.throttled.replicas",
        List,
        &[],
        "replicas throttled on followers, partition:broker or * (accepted: one replica)",
    )
    .with_default(""),
    topic(
        "index.interval.bytes",
        Int,
        &[("log.index.interval.bytes", 1)],
        "bytes between offset index entries",
    ),
    topic_accepted(
        "leader.replication.throttled.replicas",
        List,
        &[],
        "replicas throttled on leaders, partition:broker or * (accepted: one replica)",
    )
    .with_default(""),
    topic_accepted(
        "local.retention.bytes",
        Long,
        &[("log.local.retention.bytes", 1)],
        "local size with tiered storage, -2: retention.bytes (accepted: no tiered storage)",
    ),
    topic_accepted(
        "local.retention.ms",
        Long,
        &[("log.local.retention.ms", 1)],
        "local age with tiered storage, -2: retention.ms (accepted: no tiered storage)",
    ),
    topic_accepted(
        "max.compaction.lag.ms",
        Long,
        &[("log.cleaner.max.compaction.lag.ms", 1)],
        "longest a record stays uncompacted (accepted: Samsa compacts every log.cleaner.backoff.ms)",
    ),
    topic(
        "max.message.bytes",
        Int,
        &[("message.max.bytes", 1)],
        "largest record batch",
    ),
    topic_accepted(
        "message.downconversion.enable",
        Boolean,
        &[("log.message.downconversion.enable", 1)],
        "accepted for compatibility (message format v2 only)",
    ),
    topic_accepted(
        "message.timestamp.after.max.ms",
        Long,
        &[("log.message.timestamp.after.max.ms", 1)],
        "how far in the future a CreateTime timestamp may be (accepted, not enforced)",
    ),
    topic_accepted(
        "message.timestamp.before.max.ms",
        Long,
        &[("log.message.timestamp.before.max.ms", 1)],
        "how far in the past a CreateTime timestamp may be (accepted, not enforced)",
    ),
    topic(
        "message.timestamp.type",
        String,
        &[("log.message.timestamp.type", 1)],
        "CreateTime or LogAppendTime",
    ),
    topic_accepted(
        "min.cleanable.dirty.ratio",
        Double,
        &[("log.cleaner.min.cleanable.ratio", 1)],
        "dirty ratio that triggers compaction (accepted: Samsa compacts whatever is dirty)",
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
        "in-sync replicas an acks=all write needs (fewer: NOT_ENOUGH_REPLICAS)",
    ),
    topic_accepted(
        "preallocate",
        Boolean,
        &[("log.preallocate", 1)],
        "preallocate segment files (accepted)",
    ),
    topic_accepted(
        "remote.log.copy.disable",
        Boolean,
        &[],
        "stop copying to tiered storage (accepted: no tiered storage)",
    )
    .with_default("false"),
    topic_accepted(
        "remote.log.delete.on.disable",
        Boolean,
        &[],
        "delete tiered data when tiering is disabled (accepted: no tiered storage)",
    )
    .with_default("false"),
    topic_accepted(
        "remote.storage.enable",
        Boolean,
        &[],
        "tiered storage; only false is accepted (no tiered storage)",
    )
    .with_default("false"),
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
    topic_accepted(
        "segment.jitter.ms",
        Long,
        &[("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)],
        "random jitter subtracted from segment.ms (accepted, not applied)",
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
        "elect a replica outside the ISR when no in-sync one is live (records only the ISR had are lost)",
    ),
];

/// A group config (KIP-848 `GroupConfig`, Kafka 4.0): a per-group override of a broker default.
pub struct GroupConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The broker key whose value is the group's default, when there is one.
    pub broker_default: Option<&'static str>,
    /// Kafka's built-in default, which its validation fills in for keys a group does not set.
    pub default: &'static str,
    /// The smallest value the key's own definition allows (Kafka's `atLeast`).
    pub min: i64,
    /// The broker keys bounding the value (`group.consumer.min.session.timeout.ms`, ...).
    pub bounds: Option<(&'static str, &'static str)>,
    pub doc: &'static str,
}

pub const GROUP_CONFIGS: &[GroupConfigDef] = &[
    GroupConfigDef {
        name: "consumer.session.timeout.ms",
        kind: Int,
        broker_default: Some("group.consumer.session.timeout.ms"),
        default: "45000",
        min: 1,
        bounds: Some((
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
        )),
        doc: "timeout to detect a failed consumer of a consumer group (KIP-848)",
    },
    GroupConfigDef {
        name: "consumer.heartbeat.interval.ms",
        kind: Int,
        broker_default: Some("group.consumer.heartbeat.interval.ms"),
        default: "5000",
        min: 1,
        bounds: Some((
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
        )),
        doc: "heartbeat interval given to the members of a consumer group (KIP-848)",
    },
    GroupConfigDef {
        name: "share.session.timeout.ms",
        kind: Int,
        broker_default: Some("group.share.session.timeout.ms"),
        default: "45000",
        min: 1,
        bounds: Some((
            "group.share.min.session.timeout.ms",
            "group.share.max.session.timeout.ms",
        )),
        doc: "timeout to detect a failed member of a share group (KIP-932)",
    },
    GroupConfigDef {
        name: "share.heartbeat.interval.ms",
        kind: Int,
        broker_default: Some("group.share.heartbeat.interval.ms"),
        default: "5000",
        min: 1,
        bounds: Some((
            "group.share.min.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
        )),
        doc: "heartbeat interval given to the members of a share group (KIP-932)",
    },
    GroupConfigDef {
        name: "share.record.lock.duration.ms",
        kind: Int,
        broker_default: Some("group.share.record.lock.duration.ms"),
        default: "30000",
        min: 1000,
        bounds: Some((
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        )),
        doc: "how long a share group member holds a record it fetched (KIP-932)",
    },
    GroupConfigDef {
        name: "share.delivery.count.limit",
        kind: Int,
        broker_default: Some("group.share.delivery.count.limit"),
        default: "5",
        min: 2,
        bounds: Some((
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
        )),
        doc: "deliveries of a record before a share group archives it (KIP-932)",
    },
    GroupConfigDef {
        name: "share.isolation.level",
        kind: String,
        broker_default: None,
        default: "read_uncommitted",
        min: 0,
        bounds: None,
        doc: "read_committed share groups never deliver records of aborted transactions (KIP-932)",
    },
    GroupConfigDef {
        name: "errors.deadletterqueue.topic.name",
        kind: String,
        broker_default: None,
        default: "",
        min: 0,
        bounds: None,
        doc: "where a share group writes the records it archives (KIP-1191); empty: nowhere",
    },
    GroupConfigDef {
        name: "errors.deadletterqueue.copy.record.enable",
        kind: Boolean,
        broker_default: None,
        default: "false",
        min: 0,
        bounds: None,
        doc: "dead letters carry the archived record's key, value and headers (KIP-1191)",
    },
    GroupConfigDef {
        name: "share.auto.offset.reset",
        kind: String,
        broker_default: None,
        default: "latest",
        min: 0,
        bounds: None,
        doc: "where a share group starts reading a partition: latest or earliest (KIP-932)",
    },
];

pub fn group_def(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|d| d.name == name)
}

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
        String | List | Class | Password => true,
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
        Class => "a class name",
        Password => "a password",
    }
}
