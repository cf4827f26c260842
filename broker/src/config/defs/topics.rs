//! Topic keys: the topic configs with their broker-level synonyms ([`TOPIC_CONFIGS`]), and the
//! broker keys that give them their defaults.

use super::types::ConfigType::*;
use super::types::{def, inert, ConfigDef, ConfigType, Effect};

/// The broker default of `max.message.bytes`.
#[rustfmt::skip]
pub(super) const MESSAGE_MAX_BYTES: &[ConfigDef] = &[
    def(
        "message.max.bytes",
        Int,
        Some("1048588"),
        "default max.message.bytes of topics",
    ).cluster_wide(),
];

/// The broker defaults of the topic configs Samsa enforces.
#[rustfmt::skip]
pub(super) const BROKER_DEFAULTS: &[ConfigDef] = &[
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
];

/// The broker defaults of the topic configs Samsa accepts without enforcing.
#[rustfmt::skip]
pub(super) const ACCEPTED_DEFAULTS: &[ConfigDef] = &[
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
    topic(
        "follower.replication.throttled.replicas",
        List,
        &[],
        "replicas whose fetches follower.replication.throttled.rate bounds on the follower, partition:broker or *",
    )
    .with_default(""),
    topic(
        "index.interval.bytes",
        Int,
        &[("log.index.interval.bytes", 1)],
        "bytes between offset index entries",
    ),
    topic(
        "leader.replication.throttled.replicas",
        List,
        &[],
        "replicas whose followers' fetches leader.replication.throttled.rate bounds on the leader, partition:broker or *",
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
