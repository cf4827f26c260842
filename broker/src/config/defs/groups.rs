//! Keys of the group, share-group and transaction coordinators: the broker keys of their
//! internal topics and bounds, the broker defaults of the KIP-848 group configs, and the
//! group configs themselves ([`GROUP_CONFIGS`]).

use super::types::ConfigType::*;
use super::types::{def, inert, ConfigDef, ConfigType};

/// `__consumer_offsets`, classic groups, `__transaction_state` and transactional producers.
#[rustfmt::skip]
pub(super) const COORDINATORS: &[ConfigDef] = &[
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
];

/// `__share_group_state` and share groups (KIP-932), with their dead-letter topics.
#[rustfmt::skip]
pub(super) const SHARE: &[ConfigDef] = &[
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
];

/// The broker defaults and bounds of the group configs.
#[rustfmt::skip]
pub(super) const GROUP_DEFAULTS: &[ConfigDef] = &[
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
    def("group.streams.max.size", Int, Some("2147483647"), "most members a streams group may have (GROUP_MAX_SIZE_REACHED beyond)"),
    def("group.streams.task.offset.interval.ms", Int, Some("60000"), "default streams.task.offset.interval.ms of groups").hidden(),
    def("group.streams.min.task.offset.interval.ms", Int, Some("15000"), "smallest streams.task.offset.interval.ms a group may set").hidden(),
    def("group.streams.num.warmup.replicas", Int, Some("2"), "default streams.num.warmup.replicas of groups").hidden(),
    def("group.streams.max.warmup.replicas", Int, Some("20"), "largest streams.num.warmup.replicas a group may set").hidden(),
    def("group.streams.acceptable.recovery.lag", Long, Some("10000"), "default streams.acceptable.recovery.lag of groups").hidden(),
    def("group.streams.assignor.offload.enable", Boolean, Some("true"), "default streams.assignor.offload.enable of groups (Samsa assigns within the heartbeat either way)").hidden(),
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
