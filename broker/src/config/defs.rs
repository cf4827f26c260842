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
    /// Listed with Kafka's default so that tools see Kafka's catalogue, but refused at start and
    /// in AlterConfigs when set to anything else: Samsa does not do what the key asks (validate
    /// JWTs against a JWKS endpoint, load a Java policy class, tier segments to remote storage,
    /// ...), and accepting it without doing it would mislead about security or durability.
    Unsupported,
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
    /// Left out of DescribeConfigs unless some level sets it: Kafka's internal keys and the
    /// dynamic-only keys that Kafka's broker catalogue does not list.
    pub hidden: bool,
    pub doc: &'static str,
}

impl ConfigDef {
    /// Not listed by DescribeConfigs until set.
    const fn hidden(self) -> ConfigDef {
        ConfigDef {
            hidden: true,
            ..self
        }
    }

    /// Why `value` is refused for this key, if it is: an [`Effect::Unsupported`] key may only
    /// keep its default (or, without one, be left empty).
    pub fn unsupported_value(&self, value: &str) -> Option<std::string::String> {
        if self.effect != Effect::Unsupported {
            return None;
        }
        let value = value.trim();
        let default = self.default.unwrap_or("");
        let same = if self.kind == ConfigType::Boolean {
            value.eq_ignore_ascii_case(default)
        } else {
            value == default
        };
        (!same).then(|| {
            format!(
                "{} is not supported by Samsa (only its default, {}, is accepted): {}",
                self.name,
                if default.is_empty() { "unset" } else { default },
                self.doc
            )
        })
    }

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
        hidden: false,
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
        hidden: false,
        doc: "accepted for compatibility",
    }
}

/// A Kafka key Samsa cannot honour: listed with Kafka's default, refused when set otherwise.
const fn unsupported(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    doc: &'static str,
) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Unsupported,
        update: Update::ReadOnly,
        hidden: false,
        doc,
    }
}

/// Keys Kafka 3 knew and Kafka 4 removed. Kafka 4 starts with them in its properties and warns
/// that they are unknown; Samsa does the same (`BrokerConfig::retired`) and lists them nowhere.
/// Set dynamically they are custom configs, as any key Kafka does not know.
pub const RETIRED_BROKER_CONFIGS: &[&str] = &[
    "log.message.downconversion.enable",
    "leader.imbalance.per.broker.percentage",
];

use ConfigType::*;

/// Broker-level keys.
pub const BROKER_CONFIGS: &[ConfigDef] = &[
    def("node.id", Int, Some("1"), "this broker's id"),
    def(
        "broker.id",
        Int,
        Some("-1"),
        "synonym of node.id when node.id is not set; DescribeConfigs reports the node id",
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
    def("log.dirs", List, None, "data directory (one is used); log.dir when unset"),
    def(
        "log.dir",
        List,
        Some("./samsa-data"),
        "data directory when log.dirs is not set",
    ),
    def(
        "num.partitions",
        Int,
        Some("1"),
        "partitions of an auto-created topic or CreateTopics with -1",
    ),
    def(
        "default.replication.factor",
        Int,
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
        Some("2147483647"),
        "connections accepted at once (the process's file-handle limit bounds them too)",
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
        Some("9223372036854775807"),
        "how often logs are checked for flush.ms; Samsa checks at least every second anyway \
         (its maintenance tick), so only a shorter interval changes anything",
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
        Int,
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
        String,
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
        Some("broker,controller"),
        "broker,controller, broker or controller (Kafka has no default; Samsa's node is both)",
    ),
    def(
        "controller.quorum.voters",
        List,
        Some(""),
        "the metadata quorum's voters, id@host:port; unset: this node alone",
    ),
    def(
        "controller.quorum.bootstrap.servers",
        List,
        Some(""),
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
    def(
        "listener.security.protocol.map",
        String,
        Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"),
        "each listener's security protocol, LISTENER:PROTOCOL,...; a controller listener not \
         named is PLAINTEXT",
    )
    .per_broker(),
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
        Some("classic,consumer,streams"),
        "deprecated in Kafka 4.4; Kafka's default; must list classic; share is accepted with a warning and has no effect (share groups follow the share.version feature)",
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
        Some("false"),
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
    )
    .hidden(),
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
    // Defaults and bounds of the KIP-848 assignment interval, the share-partition record locks
    // and KIP-1071 streams groups: what the GROUP resource's configs default to and are checked
    // against. Samsa serves no streams groups yet; the configs are stored for when it does.
    def("group.consumer.assignment.interval.ms", Int, Some("1000"), "default consumer.assignment.interval.ms of groups").cluster_wide(),
    def("group.consumer.min.assignment.interval.ms", Int, Some("0"), "smallest consumer.assignment.interval.ms a group may set"),
    def("group.consumer.max.assignment.interval.ms", Int, Some("15000"), "largest consumer.assignment.interval.ms a group may set"),
    def("group.share.assignment.interval.ms", Int, Some("1000"), "default share.assignment.interval.ms of groups").cluster_wide(),
    def("group.share.min.assignment.interval.ms", Int, Some("0"), "smallest share.assignment.interval.ms a group may set"),
    def("group.share.max.assignment.interval.ms", Int, Some("15000"), "largest share.assignment.interval.ms a group may set"),
    def("group.share.min.partition.max.record.locks", Int, Some("100"), "smallest share.partition.max.record.locks a group may set"),
    def("group.share.max.partition.max.record.locks", Int, Some("4000"), "largest share.partition.max.record.locks a group may set"),
    def("group.streams.assignors", List, Some("sticky"), "task assignors of streams groups; the first is a group's default streams.assignor.name"),
    def("group.streams.session.timeout.ms", Int, Some("45000"), "default streams.session.timeout.ms of groups"),
    def("group.streams.min.session.timeout.ms", Int, Some("45000"), "smallest streams.session.timeout.ms a group may set"),
    def("group.streams.max.session.timeout.ms", Int, Some("60000"), "largest streams.session.timeout.ms a group may set"),
    def("group.streams.heartbeat.interval.ms", Int, Some("5000"), "default streams.heartbeat.interval.ms of groups"),
    def("group.streams.min.heartbeat.interval.ms", Int, Some("5000"), "smallest streams.heartbeat.interval.ms a group may set"),
    def("group.streams.max.heartbeat.interval.ms", Int, Some("15000"), "largest streams.heartbeat.interval.ms a group may set"),
    def("group.streams.assignment.interval.ms", Int, Some("1000"), "default streams.assignment.interval.ms of groups").cluster_wide(),
    def("group.streams.min.assignment.interval.ms", Int, Some("0"), "smallest streams.assignment.interval.ms a group may set"),
    def("group.streams.max.assignment.interval.ms", Int, Some("15000"), "largest streams.assignment.interval.ms a group may set"),
    def("group.streams.initial.rebalance.delay.ms", Int, Some("3000"), "default streams.initial.rebalance.delay.ms of groups"),
    def("group.streams.num.standby.replicas", Int, Some("0"), "default streams.num.standby.replicas of groups"),
    def("group.streams.max.standby.replicas", Int, Some("2"), "largest streams.num.standby.replicas a group may set"),
    def("group.streams.rack.aware.assignment.tags", List, Some(""), "default streams.rack.aware.assignment.tags of groups"),
    // Broker-level defaults of Kafka 4 topic configs that Samsa accepts but does not enforce
    // (see TOPIC_CONFIGS); dynamic like every primary topic-config synonym (DynamicLogConfig).
    inert("log.roll.jitter.ms", Long, None).cluster_wide(),
    inert("log.roll.jitter.hours", Int, Some("0")),
    inert("log.cleaner.max.compaction.lag.ms", Long, Some("9223372036854775807")).cluster_wide(),
    inert("compression.gzip.level", Int, Some("-1")).cluster_wide(),
    inert("compression.lz4.level", Int, Some("9")).cluster_wide(),
    inert("compression.zstd.level", Int, Some("3")).cluster_wide(),
    inert("log.preallocate", Boolean, Some("false")).cluster_wide(),
    inert("log.message.timestamp.before.max.ms", Long, Some("9223372036854775807")).cluster_wide(),
    inert("log.message.timestamp.after.max.ms", Long, Some("3600000")).cluster_wide(),
    inert("log.local.retention.ms", Long, Some("-2")).cluster_wide(),
    inert("log.local.retention.bytes", Long, Some("-2")).cluster_wide(),
    inert("log.remote.copy.lag.bytes", Long, Some("-1")).cluster_wide(),
    inert("log.remote.copy.lag.ms", Long, Some("0")).cluster_wide(),
    inert("max.decompressed.message.bytes", Int, Some("2147483639")).cluster_wide(),
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
    // Kafka's dynamic-only keys (`DynamicConfig.Broker`): not in its broker catalogue, so
    // described only once set.
    inert("leader.replication.throttled.rate", Long, Some("9223372036854775807")).cluster_wide().hidden(),
    inert("follower.replication.throttled.rate", Long, Some("9223372036854775807")).cluster_wide().hidden(),
    inert("replica.alter.log.dirs.io.max.bytes.per.second", Long, Some("9223372036854775807")).cluster_wide().hidden(),
    // Listener security (TLS and SASL), dynamic per broker in Kafka (DynamicListenerConfig).
    // Samsa serves PLAINTEXT only for now; these are stored for the day it does more.
    unsupported(
        "principal.builder.class",
        Class,
        Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"),
        "Samsa builds principals as Kafka's default builder does and loads no other class",
    )
    .per_broker(),
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
    def("sasl.mechanism.inter.broker.protocol", String, Some("GSSAPI"), "read at start (Kafka changes it per broker at run time): the SASL mechanism brokers authenticate to each other with on a SASL inter-broker listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, with the username and password of that listener's JAAS config for it"),
    def("sasl.mechanism.controller.protocol", String, Some("GSSAPI"), "the SASL mechanism nodes authenticate to controllers with on a SASL controller listener: PLAIN or OAUTHBEARER"),
    def("sasl.jaas.config", Password, None, "JAAS login module config; on a broker as listener.name.<listener>.<mechanism>.sasl.jaas.config (PLAIN's users: user_<name>=\"<password>\")").per_broker(),
    def("sasl.enabled.mechanisms", List, Some("GSSAPI"), "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512").per_broker(),
    // Read-only unprefixed, as in Kafka; a listener's override (listener.name.<l>....) is
    // dynamic per broker, as every listener-prefixed key is.
    def("sasl.server.callback.handler.class", Class, None, "on a broker as listener.name.<l>.<mechanism>.sasl.server.callback.handler.class; only Kafka's unsecured OAUTHBEARER validator (the default) is served"),
    def("ssl.principal.mapping.rules", String, Some("DEFAULT"), "rules mapping a client certificate's subject to a principal name (RULE:pattern/replacement/[LU], DEFAULT)"),
    def("security.inter.broker.protocol", String, Some("PLAINTEXT"), "the inter-broker listener's protocol when inter.broker.listener.name is not set"),
    def("connections.max.reauth.ms", Long, Some("0"), "SASL re-authentication (KIP-368): how long a session lasts before the client must re-authenticate; 0 for as long as the connection"),
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
    // The rest of Kafka 4.4's broker catalogue: tuning of Kafka's own threads, purgatories,
    // quotas, metrics and tiered storage, with no counterpart in Samsa. Accepted, validated by
    // type, described with Kafka's defaults and dynamic where Kafka's are.
    inert("add.partitions.to.txn.retry.backoff.max.ms", Int, Some("100")),
    inert("add.partitions.to.txn.retry.backoff.ms", Int, Some("20")),
    inert("alter.log.dirs.replication.quota.window.num", Int, Some("11")),
    inert("alter.log.dirs.replication.quota.window.size.seconds", Int, Some("1")),
    inert("controlled.shutdown.enable", Boolean, Some("true")),
    inert("controller.quorum.append.linger.ms", Int, Some("25")),
    inert("controller.quorum.auto.join.enable", Boolean, Some("false")),
    inert("controller.quorum.fetch.max.bytes", Int, Some("1048576")),
    inert("controller.quorum.fetch.snapshot.max.bytes", Int, Some("1048576")),
    inert("controller.quota.window.num", Int, Some("11")),
    inert("controller.quota.window.size.seconds", Int, Some("1")),
    inert("controller.socket.timeout.ms", Int, Some("30000")),
    inert("cordoned.log.dirs", List, Some("")).per_broker(),
    inert("delegation.token.expiry.check.interval.ms", Long, Some("3600000")),
    inert("delegation.token.expiry.time.ms", Long, Some("86400000")),
    inert("delegation.token.max.lifetime.ms", Long, Some("604800000")),
    inert("delete.records.purgatory.purge.interval.requests", Int, Some("1")),
    inert("early.start.listeners", List, None),
    inert("fetch.max.bytes", Int, Some("57671680")),
    inert("fetch.purgatory.purge.interval.requests", Int, Some("1000")),
    inert("follower.fetch.last.tiered.offset.enable", Boolean, Some("false")).cluster_wide(),
    inert("group.consumer.assignors", List, Some("uniform,range")),
    inert("group.consumer.max.size", Int, Some("2147483647")),
    inert("group.consumer.migration.policy", String, Some("bidirectional")),
    inert("group.coordinator.append.linger.ms", Int, Some("-1")),
    inert("group.coordinator.background.threads", Int, Some("2")),
    inert("group.coordinator.cached.buffer.max.bytes", Int, Some("1048588")).cluster_wide(),
    inert("group.coordinator.threads", Int, Some("4")),
    inert("group.share.assignors", List, Some("simple")),
    inert("group.streams.max.size", Int, Some("2147483647")),
    inert("group.streams.topology.description.plugin.class", Class, None),
    inert("initial.broker.registration.timeout.ms", Int, Some("60000")),
    inert("kafka.metrics.polling.interval.secs", Int, Some("10")),
    inert("kafka.metrics.reporters", List, Some("")),
    inert("log.dir.failure.timeout.ms", Long, Some("30000")),
    inert("log.flush.start.offset.checkpoint.interval.ms", Int, Some("60000")),
    inert("metadata.max.retention.bytes", Long, Some("104857600")),
    inert("metadata.max.retention.ms", Long, Some("604800000")),
    inert("metrics.num.samples", Int, Some("2")),
    inert("metrics.recording.level", String, Some("INFO")),
    inert("metrics.sample.window.ms", Long, Some("30000")),
    inert("num.replica.alter.log.dirs.threads", Int, None),
    inert("offsets.commit.timeout.ms", Int, Some("5000")),
    inert("offsets.load.buffer.size", Int, Some("5242880")),
    inert("offsets.topic.compression.codec", Int, Some("0")),
    inert("producer.purgatory.purge.interval.requests", Int, Some("1000")),
    inert("queued.max.request.bytes", Long, Some("-1")),
    inert("queued.max.requests", Int, Some("500")),
    inert("quota.window.num", Int, Some("11")),
    inert("quota.window.size.seconds", Int, Some("1")),
    inert("remote.log.manager.copier.thread.pool.size", Int, Some("10")).cluster_wide(),
    inert("remote.log.manager.copy.quota.window.num", Int, Some("11")),
    inert("remote.log.manager.copy.quota.window.size.seconds", Int, Some("1")),
    inert("remote.log.manager.expiration.thread.pool.size", Int, Some("10")).cluster_wide(),
    inert("remote.log.manager.fetch.quota.window.num", Int, Some("11")),
    inert("remote.log.manager.fetch.quota.window.size.seconds", Int, Some("1")),
    inert("remote.log.manager.follower.thread.pool.size", Int, Some("2")).cluster_wide(),
    inert("remote.log.manager.task.interval.ms", Long, Some("30000")),
    inert("remote.log.manager.thread.pool.size", Int, Some("2")),
    inert("remote.log.metadata.custom.metadata.max.bytes", Int, Some("128")),
    inert("remote.log.metadata.manager.class.name", String, Some("org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager")),
    inert("remote.log.metadata.manager.class.path", String, None),
    inert("remote.log.metadata.manager.impl.prefix", String, Some("rlmm.config.")),
    inert("remote.log.metadata.manager.listener.name", String, None),
    inert("remote.log.reader.max.pending.tasks", Int, Some("100")),
    inert("remote.log.reader.threads", Int, Some("10")).cluster_wide(),
    inert("remote.log.storage.manager.class.name", String, None),
    inert("remote.log.storage.manager.class.path", String, None),
    inert("remote.log.storage.manager.impl.prefix", String, Some("rsm.config.")),
    inert("replica.fetch.min.bytes", Int, Some("1")),
    inert("replica.high.watermark.checkpoint.interval.ms", Long, Some("5000")),
    inert("replica.socket.receive.buffer.bytes", Int, Some("65536")),
    inert("replica.socket.timeout.ms", Int, Some("30000")),
    inert("replication.quota.window.num", Int, Some("11")),
    inert("replication.quota.window.size.seconds", Int, Some("1")),
    inert("request.timeout.ms", Int, Some("30000")),
    inert("sasl.login.connect.timeout.ms", Int, None),
    inert("sasl.login.read.timeout.ms", Int, None),
    inert("sasl.login.retry.backoff.max.ms", Long, Some("10000")),
    inert("sasl.login.retry.backoff.ms", Long, Some("100")),
    inert("share.coordinator.append.linger.ms", Int, Some("-1")),
    inert("share.coordinator.cached.buffer.max.bytes", Int, Some("1048588")).cluster_wide(),
    inert("share.coordinator.load.buffer.size", Int, Some("5242880")),
    inert("share.coordinator.snapshot.update.records.per.snapshot", Int, Some("500")),
    inert("share.coordinator.state.topic.compression.codec", Int, Some("0")),
    inert("share.coordinator.threads", Int, Some("1")),
    inert("share.coordinator.write.timeout.ms", Int, Some("5000")),
    inert("share.fetch.purgatory.purge.interval.requests", Int, Some("1000")),
    inert("socket.connection.setup.timeout.max.ms", Long, Some("30000")),
    inert("socket.connection.setup.timeout.ms", Long, Some("10000")),
    inert("socket.listen.backlog.size", Int, Some("50")),
    inert("ssl.allow.dn.changes", Boolean, Some("false")),
    inert("ssl.allow.san.changes", Boolean, Some("false")),
    inert("telemetry.max.bytes", Int, Some("1048576")),
    inert("transaction.state.log.load.buffer.size", Int, Some("5242880")),
    // Keys whose meaning Samsa cannot honour (see `Effect::Unsupported`).
    unsupported("alter.config.policy.class.name", Class, None, "Samsa applies no pluggable policy (it loads no Java class)"),
    unsupported("client.quota.callback.class", Class, None, "Samsa loads no quota callback class"),
    unsupported("create.topic.policy.class.name", Class, None, "Samsa applies no pluggable policy (it loads no Java class)"),
    unsupported("delegation.token.secret.key", Password, None, "Samsa issues no delegation tokens"),
    unsupported("metadata.log.dir", String, None, "Samsa keeps the metadata log in the first log directory"),
    unsupported("remote.log.storage.system.enable", Boolean, Some("false"), "Samsa has no tiered storage"),
    unsupported("sasl.client.callback.handler.class", Class, None, "Samsa loads no Java login or callback class"),
    unsupported("sasl.login.callback.handler.class", Class, None, "Samsa loads no Java login or callback class"),
    unsupported("sasl.login.class", Class, None, "Samsa loads no Java login or callback class"),
    unsupported("sasl.oauthbearer.allow.unverified.audience", Boolean, Some("false"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.allow.unverified.issuer", Boolean, Some("false"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.algorithm", String, Some("RS256"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.claim.aud", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.claim.exp.seconds", Int, Some("300"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.claim.iss", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.claim.jti.include", Boolean, Some("false"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.claim.nbf.seconds", Int, Some("60"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.claim.sub", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.file", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.private.key.file", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.private.key.passphrase", Password, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.assertion.template.file", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.client.credentials.client.id", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.client.credentials.client.secret", Password, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.clock.skew.seconds", Int, Some("30"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.expected.audience", List, Some(""), OAUTHBEARER),
    unsupported("sasl.oauthbearer.expected.issuer", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, Some("3600000"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, Some("10000"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, Some("100"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.jwks.endpoint.url", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.jwt.retriever.class", Class, Some("org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.jwt.validator.class", Class, Some("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.scope", String, None, OAUTHBEARER),
    unsupported("sasl.oauthbearer.scope.claim.name", String, Some("scope"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.sub.claim.name", String, Some("sub"), OAUTHBEARER),
    unsupported("sasl.oauthbearer.token.endpoint.url", String, None, OAUTHBEARER),
    unsupported("security.providers", String, None, "Samsa uses rustls's cryptography and loads no Java security provider"),
    unsupported("transaction.two.phase.commit.enable", Boolean, Some("false"), "Samsa serves no two-phase-commit transactions (KIP-939)"),
];

const OAUTHBEARER: &str = "Samsa checks OAUTHBEARER tokens as Kafka's unsecured validator does \
    (no JWKS, audience or issuer checks) and logs in to other nodes with unsecured tokens";

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
        "delete, compact, both, or empty: neither, so segments are kept forever",
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
    topic_accepted(
        "max.decompressed.message.bytes",
        Int,
        &[("max.decompressed.message.bytes", 1)],
        "largest record once decompressed (accepted: Samsa stores batches as sent and \
         decompresses none)",
    ),
    topic(
        "max.message.bytes",
        Int,
        &[("message.max.bytes", 1)],
        "largest record batch",
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
        "remote.copy.lag.bytes",
        Long,
        &[("log.remote.copy.lag.bytes", 1)],
        "bytes of newer data after which a segment may be tiered (accepted: no tiered storage)",
    ),
    topic_accepted(
        "remote.copy.lag.ms",
        Long,
        &[("log.remote.copy.lag.ms", 1)],
        "age after which a segment may be tiered (accepted: no tiered storage)",
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

/// A group config (KIP-848 `GroupConfig`): a per-group override of a broker default.
pub struct GroupConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The broker key whose value is the group's default, when there is one (DescribeConfigs
    /// lists it as the synonym).
    pub broker_default: Option<&'static str>,
    /// Kafka's built-in default, which its validation fills in for keys a group does not set.
    pub default: &'static str,
    /// The smallest value the key's own definition allows (Kafka's `atLeast`).
    pub min: i64,
    /// The broker keys bounding the value (`group.consumer.min.session.timeout.ms`, ...).
    pub min_key: Option<&'static str>,
    pub max_key: Option<&'static str>,
    pub doc: &'static str,
}

/// An INT group config defaulting to `broker_default` and kept within `bounds` (broker keys).
const fn group_int(
    name: &'static str,
    broker_default: &'static str,
    default: &'static str,
    min: i64,
    bounds: (Option<&'static str>, Option<&'static str>),
    doc: &'static str,
) -> GroupConfigDef {
    GroupConfigDef {
        name,
        kind: Int,
        broker_default: Some(broker_default),
        default,
        min,
        min_key: bounds.0,
        max_key: bounds.1,
        doc,
    }
}

/// A group config of another type, with no bounds.
const fn group_other(
    name: &'static str,
    kind: ConfigType,
    broker_default: Option<&'static str>,
    default: &'static str,
    doc: &'static str,
) -> GroupConfigDef {
    GroupConfigDef {
        name,
        kind,
        broker_default,
        default,
        min: 0,
        min_key: None,
        max_key: None,
        doc,
    }
}

pub const GROUP_CONFIGS: &[GroupConfigDef] = &[
    group_int(
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
        "45000",
        1,
        (
            Some("group.consumer.min.session.timeout.ms"),
            Some("group.consumer.max.session.timeout.ms"),
        ),
        "timeout to detect a failed consumer of a consumer group (KIP-848)",
    ),
    group_int(
        "consumer.heartbeat.interval.ms",
        "group.consumer.heartbeat.interval.ms",
        "5000",
        1,
        (
            Some("group.consumer.min.heartbeat.interval.ms"),
            Some("group.consumer.max.heartbeat.interval.ms"),
        ),
        "heartbeat interval given to the members of a consumer group (KIP-848)",
    ),
    group_int(
        "consumer.assignment.interval.ms",
        "group.consumer.assignment.interval.ms",
        "1000",
        0,
        (
            Some("group.consumer.min.assignment.interval.ms"),
            Some("group.consumer.max.assignment.interval.ms"),
        ),
        "least time between two assignments of a consumer group (KIP-848)",
    ),
    group_int(
        "share.session.timeout.ms",
        "group.share.session.timeout.ms",
        "45000",
        1,
        (
            Some("group.share.min.session.timeout.ms"),
            Some("group.share.max.session.timeout.ms"),
        ),
        "timeout to detect a failed member of a share group (KIP-932)",
    ),
    group_int(
        "share.heartbeat.interval.ms",
        "group.share.heartbeat.interval.ms",
        "5000",
        1,
        (
            Some("group.share.min.heartbeat.interval.ms"),
            Some("group.share.max.heartbeat.interval.ms"),
        ),
        "heartbeat interval given to the members of a share group (KIP-932)",
    ),
    group_int(
        "share.assignment.interval.ms",
        "group.share.assignment.interval.ms",
        "1000",
        0,
        (
            Some("group.share.min.assignment.interval.ms"),
            Some("group.share.max.assignment.interval.ms"),
        ),
        "least time between two assignments of a share group (KIP-932)",
    ),
    group_int(
        "share.record.lock.duration.ms",
        "group.share.record.lock.duration.ms",
        "30000",
        1000,
        (
            Some("group.share.min.record.lock.duration.ms"),
            Some("group.share.max.record.lock.duration.ms"),
        ),
        "how long a share group member holds a record it fetched (KIP-932)",
    ),
    group_int(
        "share.delivery.count.limit",
        "group.share.delivery.count.limit",
        "5",
        2,
        (
            Some("group.share.min.delivery.count.limit"),
            Some("group.share.max.delivery.count.limit"),
        ),
        "deliveries of a record before a share group archives it (KIP-932)",
    ),
    group_int(
        "share.partition.max.record.locks",
        "group.share.partition.max.record.locks",
        "2000",
        100,
        (
            Some("group.share.min.partition.max.record.locks"),
            Some("group.share.max.partition.max.record.locks"),
        ),
        "records a share group may have in flight per share-partition (KIP-932)",
    ),
    group_other(
        "share.isolation.level",
        String,
        None,
        "read_uncommitted",
        "read_committed share groups never deliver records of aborted transactions (KIP-932)",
    ),
    group_other(
        "share.renew.acknowledge.enable",
        Boolean,
        None,
        "true",
        "members of the share group may renew the lock of a record they hold (KIP-932)",
    ),
    group_other(
        "errors.deadletterqueue.topic.name",
        String,
        None,
        "",
        "where a share group writes the records it archives (KIP-1191); empty: nowhere",
    ),
    group_other(
        "errors.deadletterqueue.copy.record.enable",
        Boolean,
        None,
        "false",
        "dead letters carry the archived record's key, value and headers (KIP-1191)",
    ),
    group_other(
        "share.auto.offset.reset",
        String,
        None,
        "latest",
        "where a share group starts reading a partition: latest or earliest (KIP-932)",
    ),
    group_int(
        "streams.session.timeout.ms",
        "group.streams.session.timeout.ms",
        "45000",
        1,
        (
            Some("group.streams.min.session.timeout.ms"),
            Some("group.streams.max.session.timeout.ms"),
        ),
        "timeout to detect a failed member of a streams group (KIP-1071)",
    ),
    group_int(
        "streams.heartbeat.interval.ms",
        "group.streams.heartbeat.interval.ms",
        "5000",
        1,
        (
            Some("group.streams.min.heartbeat.interval.ms"),
            Some("group.streams.max.heartbeat.interval.ms"),
        ),
        "heartbeat interval given to the members of a streams group (KIP-1071)",
    ),
    group_int(
        "streams.assignment.interval.ms",
        "group.streams.assignment.interval.ms",
        "1000",
        0,
        (
            Some("group.streams.min.assignment.interval.ms"),
            Some("group.streams.max.assignment.interval.ms"),
        ),
        "least time between two assignments of a streams group (KIP-1071)",
    ),
    group_int(
        "streams.initial.rebalance.delay.ms",
        "group.streams.initial.rebalance.delay.ms",
        "3000",
        0,
        (None, None),
        "how long a new streams group waits for more members before its first assignment \
         (KIP-1071)",
    ),
    group_int(
        "streams.num.standby.replicas",
        "group.streams.num.standby.replicas",
        "0",
        0,
        (None, Some("group.streams.max.standby.replicas")),
        "standby replicas of each task of a streams group (KIP-1071)",
    ),
    // Kafka's built-in default is null: the first of group.streams.assignors.
    group_other(
        "streams.assignor.name",
        String,
        Some("group.streams.assignors"),
        "",
        "the task assignor of a streams group, one of group.streams.assignors (KIP-1071)",
    ),
    group_other(
        "streams.rack.aware.assignment.tags",
        List,
        Some("group.streams.rack.aware.assignment.tags"),
        "",
        "client tags a streams group spreads standby replicas over (KIP-1071)",
    ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_defined_once() {
        let mut seen = std::collections::BTreeSet::new();
        for d in BROKER_CONFIGS {
            assert!(seen.insert(d.name), "{} is defined twice", d.name);
            assert!(
                !RETIRED_BROKER_CONFIGS.contains(&d.name),
                "{} is retired",
                d.name
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in TOPIC_CONFIGS {
            assert!(
                seen.insert(d.name),
                "topic config {} is defined twice",
                d.name
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in GROUP_CONFIGS {
            assert!(
                seen.insert(d.name),
                "group config {} is defined twice",
                d.name
            );
            for key in [d.broker_default, d.min_key, d.max_key]
                .into_iter()
                .flatten()
            {
                assert!(
                    broker_def(key).is_some(),
                    "{}: broker key {key} is defined",
                    d.name
                );
            }
        }
        for d in TOPIC_CONFIGS {
            for (key, _) in d.synonyms {
                assert!(
                    broker_def(key).is_some(),
                    "{}: synonym {key} is defined",
                    d.name
                );
            }
        }
    }

    /// Kafka 4.4's own answer (DescribeConfigs of a broker, `scripts/reference/compare`): type,
    /// default and whether the key may change dynamically, for keys whose Samsa definition once
    /// differed or that Kafka 4.4 added.
    #[test]
    fn keys_have_kafka_4_4s_types_defaults_and_update_modes() {
        use Update::*;
        let max = "9223372036854775807";
        for (name, kind, default, update) in [
            ("max.connections", Int, Some("2147483647"), ClusterWide),
            ("default.replication.factor", Int, Some("1"), ReadOnly),
            (
                "listener.security.protocol.map",
                String,
                Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"),
                PerBroker,
            ),
            ("log.dir", List, Some("./samsa-data"), ReadOnly),
            ("log.dirs", List, None, ReadOnly),
            (
                "log.flush.offset.checkpoint.interval.ms",
                Int,
                Some("60000"),
                ReadOnly,
            ),
            ("log.flush.scheduler.interval.ms", Long, Some(max), ReadOnly),
            ("replica.selector.class", String, None, ReadOnly),
            (
                "errors.deadletterqueue.auto.create.topics.enable",
                Boolean,
                Some("false"),
                ClusterWide,
            ),
            ("connections.max.reauth.ms", Long, Some("0"), ReadOnly),
            (
                "ssl.principal.mapping.rules",
                String,
                Some("DEFAULT"),
                ReadOnly,
            ),
            ("sasl.server.callback.handler.class", Class, None, ReadOnly),
            ("controller.quorum.voters", List, Some(""), ReadOnly),
            (
                "controller.quorum.bootstrap.servers",
                List,
                Some(""),
                ReadOnly,
            ),
            (
                "group.consumer.assignment.interval.ms",
                Int,
                Some("1000"),
                ClusterWide,
            ),
            (
                "group.streams.session.timeout.ms",
                Int,
                Some("45000"),
                ReadOnly,
            ),
            (
                "max.decompressed.message.bytes",
                Int,
                Some("2147483639"),
                ClusterWide,
            ),
            ("log.remote.copy.lag.ms", Long, Some("0"), ClusterWide),
            ("cordoned.log.dirs", List, Some(""), PerBroker),
            ("remote.log.reader.threads", Int, Some("10"), ClusterWide),
            ("request.timeout.ms", Int, Some("30000"), ReadOnly),
            ("delegation.token.secret.key", Password, None, ReadOnly),
            (
                "sasl.oauthbearer.expected.audience",
                List,
                Some(""),
                ReadOnly,
            ),
        ] {
            let d = broker_def(name).unwrap_or_else(|| panic!("{name} is defined"));
            assert_eq!(
                (d.kind, d.default, d.update),
                (kind, default, update),
                "{name}"
            );
            assert!(!d.hidden, "{name} is listed");
        }
        // Kafka 4.4 lists no message down-conversion any more.
        assert!(topic_def("message.downconversion.enable").is_none());
        assert!(broker_def("log.message.downconversion.enable").is_none());
        for (name, default) in [
            ("max.decompressed.message.bytes", None),
            ("remote.copy.lag.bytes", None),
            ("remote.copy.lag.ms", None),
        ] {
            let d = topic_def(name).unwrap_or_else(|| panic!("topic config {name}"));
            assert_eq!(
                d.default, default,
                "{name} takes its broker synonym's default"
            );
        }
    }

    #[test]
    fn unsupported_keys_keep_only_their_default() {
        let jwks = broker_def("sasl.oauthbearer.jwks.endpoint.url").unwrap();
        assert_eq!(jwks.unsupported_value(""), None);
        let why = jwks.unsupported_value("https://idp.example/jwks").unwrap();
        assert!(why.contains("sasl.oauthbearer.jwks.endpoint.url"), "{why}");
        let tiered = broker_def("remote.log.storage.system.enable").unwrap();
        assert_eq!(tiered.unsupported_value("FALSE"), None);
        assert!(tiered.unsupported_value("true").is_some());
        // Keys Samsa has no use for but nothing to hide are accepted.
        assert_eq!(
            broker_def("queued.max.requests")
                .unwrap()
                .unsupported_value("7"),
            None
        );
    }
}
