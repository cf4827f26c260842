//! Topic configuration: per-topic overrides over broker defaults, the checks CreateTopics and
//! the AlterConfigs APIs apply, and the translation into the storage engine's `LogConfig`.

use std::collections::BTreeMap;

use samsa_storage::{CleanupPolicy, LogConfig, TimestampType};

use super::defs::{self, TopicConfigDef};
use super::{BrokerConfig, Source};

/// Per-topic overrides (only what was set on the topic).
pub type TopicOverrides = BTreeMap<String, String>;

/// Where an effective topic value came from (DescribeConfigs' `config_source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicValueSource {
    /// Set on the topic.
    Topic,
    /// From this broker key, set at this level (dynamic per-broker, dynamic cluster-wide
    /// default, or static).
    Broker(&'static str, Source),
    /// From the default of this broker key, or a built-in default.
    Default(Option<&'static str>),
}

/// A value given in `unit`-scaled broker form (hours, minutes) converted to the topic unit.
pub fn scale(value: &str, factor: i64) -> String {
    if factor == 1 {
        return value.to_string();
    }
    match value.trim().parse::<i64>() {
        Ok(v) if v < 0 => v.to_string(),
        Ok(v) => v.saturating_mul(factor).to_string(),
        Err(_) => value.to_string(),
    }
}

/// Checks one topic value; the message names the key and what was expected (Kafka's
/// `LogConfig` validators).
pub fn validate_value(name: &str, value: &str) -> Result<(), String> {
    let def = defs::topic_def(name).ok_or_else(|| format!("Unknown topic config name: {name}"))?;
    defs::validate(name, def.kind, value)?;
    let v = value.trim();
    let at_least = |min: i64| v.parse::<i64>().map(|n| n >= min).unwrap_or(false);
    let within = |min: i64, max: i64| {
        v.parse::<i64>()
            .map(|n| (min..=max).contains(&n))
            .unwrap_or(false)
    };
    let ok = match name {
        // Kafka 4.4: an empty list is valid (neither policy: segments are kept forever), an
        // empty entry in a list is not.
        "cleanup.policy" if v.is_empty() => true,
        "cleanup.policy" => {
            if v.split(',').any(|p| p.trim().is_empty()) {
                return Err(format!(
                    "invalid value '{value}' for topic config cleanup.policy: values must not be empty"
                ));
            }
            v.split(',')
                .map(str::trim)
                .all(|p| matches!(p, "delete" | "compact"))
        }
        "compression.type" => matches!(
            v,
            "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd"
        ),
        // Kafka's CompressionType level ranges (gzip: -1 is zlib's default).
        "compression.gzip.level" => within(1, 9) || v == "-1",
        "compression.lz4.level" => within(1, 17),
        "compression.zstd.level" => within(-131_072, 22),
        "message.timestamp.type" => matches!(v, "CreateTime" | "LogAppendTime"),
        // Kafka 4.4 asks for 1 MiB segments (and has an internal key for smaller ones); Samsa
        // takes small segments, which its tests and small deployments use.
        "segment.bytes" => at_least(14),
        "segment.index.bytes" => at_least(4),
        "max.message.bytes" | "index.interval.bytes" => at_least(0),
        "min.insync.replicas" => at_least(1),
        "segment.ms" | "flush.messages" | "max.compaction.lag.ms" => at_least(1),
        "max.decompressed.message.bytes" => within(1, 2_147_483_639),
        "delete.retention.ms"
        | "min.compaction.lag.ms"
        | "file.delete.delay.ms"
        | "segment.jitter.ms"
        | "message.timestamp.before.max.ms"
        | "message.timestamp.after.max.ms"
        | "flush.ms" => at_least(0),
        "retention.ms" | "remote.copy.lag.bytes" | "remote.copy.lag.ms" => at_least(-1),
        "local.retention.ms" | "local.retention.bytes" => at_least(-2),
        "min.cleanable.dirty.ratio" => v
            .parse::<f64>()
            .map(|r| (0.0..=1.0).contains(&r))
            .unwrap_or(false),
        "leader.replication.throttled.replicas" | "follower.replication.throttled.replicas" => {
            throttled_replicas_valid(v)
        }
        "remote.storage.enable" if v.eq_ignore_ascii_case("true") => {
            // Kafka's answer when remote.log.storage.system.enable is off, which it always is
            // here: Samsa has no tiered storage.
            return Err("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.".into());
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("invalid value '{value}' for topic config {name}"))
    }
}

/// Checks a broker key that supplies a topic default (`log.retention.hours`, `message.max.bytes`,
/// ...) as the topic value it becomes; other keys pass.
pub fn validate_broker_synonym(key: &str, value: &str) -> Result<(), String> {
    for tdef in defs::TOPIC_CONFIGS {
        if let Some((_, factor)) = tdef.synonyms.iter().find(|(s, _)| *s == key) {
            return validate_value(tdef.name, &scale(value, *factor));
        }
    }
    Ok(())
}

/// Kafka's `ThrottledReplicaListValidator`: `*`, or `partition:broker` pairs.
fn throttled_replicas_valid(v: &str) -> bool {
    if v.is_empty() || v == "*" {
        return true;
    }
    v.split(',')
        .all(|entry| match entry.trim().split_once(':') {
            Some((p, b)) => p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok(),
            None => false,
        })
}

/// Checks a topic's complete set of overrides: every value, then the rules between keys that
/// Kafka's `LogConfig.validate` applies.
pub fn validate_overrides(broker: &BrokerConfig, overrides: &TopicOverrides) -> Result<(), String> {
    for (k, v) in overrides {
        validate_value(k, v)?;
    }
    let long = |name: &str| {
        effective(broker, overrides, name)
            .0
            .and_then(|v| v.trim().parse::<i64>().ok())
    };
    if let (Some(min), Some(max)) = (long("min.compaction.lag.ms"), long("max.compaction.lag.ms")) {
        if min > max {
            return Err(format!(
                "conflict topic config setting min.compaction.lag.ms ({min}) > max.compaction.lag.ms ({max})"
            ));
        }
    }
    Ok(())
}

/// The effective value of a topic key and its source. `None` value means null (Kafka shows
/// `flush.ms` as Long.MAX; we do the same through the storage defaults below).
pub fn effective(
    broker: &BrokerConfig,
    overrides: &TopicOverrides,
    name: &str,
) -> (Option<String>, TopicValueSource) {
    if let Some(v) = overrides.get(name) {
        return (Some(v.clone()), TopicValueSource::Topic);
    }
    let Some(def) = defs::topic_def(name) else {
        return (None, TopicValueSource::Default(None));
    };
    // The first synonym set at any level wins, at its highest level: only the first synonym
    // of each topic key is dynamic in Kafka, so a dynamic value always beats a static one.
    for (syn, factor) in def.synonyms {
        let source = broker.source(syn);
        if source != Source::Default {
            return (
                broker.get(syn).map(|v| scale(&v, *factor)),
                TopicValueSource::Broker(syn, source),
            );
        }
    }
    for (syn, factor) in def.synonyms {
        if let Some(v) = broker.get(syn) {
            return (
                Some(scale(&v, *factor)),
                TopicValueSource::Default(Some(syn)),
            );
        }
    }
    (
        def.default.map(str::to_string),
        TopicValueSource::Default(None),
    )
}

/// Every topic key with its effective value, for DescribeConfigs.
pub fn all_effective(
    broker: &BrokerConfig,
    overrides: &TopicOverrides,
) -> Vec<(&'static TopicConfigDef, Option<String>, TopicValueSource)> {
    defs::TOPIC_CONFIGS
        .iter()
        .map(|d| {
            let (v, s) = effective(broker, overrides, d.name);
            (d, v, s)
        })
        .collect()
}

/// The storage engine's configuration for a topic.
pub fn log_config(broker: &BrokerConfig, overrides: &TopicOverrides) -> LogConfig {
    let long = |name: &str, fallback: i64| -> i64 {
        effective(broker, overrides, name)
            .0
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(fallback)
    };
    let mut c = LogConfig::default();
    c.segment_bytes = long("segment.bytes", c.segment_bytes as i64).max(14) as u64;
    c.segment_ms = long("segment.ms", c.segment_ms);
    c.segment_index_bytes = long("segment.index.bytes", c.segment_index_bytes as i64).max(8) as u64;
    c.index_interval_bytes =
        long("index.interval.bytes", c.index_interval_bytes as i64).max(0) as u64;
    c.max_message_bytes =
        long("max.message.bytes", c.max_message_bytes as i64).clamp(0, u32::MAX as i64) as u32;
    c.retention_ms = long("retention.ms", c.retention_ms);
    c.retention_bytes = long("retention.bytes", c.retention_bytes);
    c.delete_retention_ms = long("delete.retention.ms", c.delete_retention_ms);
    c.min_compaction_lag_ms = long("min.compaction.lag.ms", c.min_compaction_lag_ms);
    c.flush_messages = long("flush.messages", i64::MAX).max(1) as u64;
    c.flush_ms = long("flush.ms", c.flush_ms);
    c.file_delete_delay_ms = long("file.delete.delay.ms", c.file_delete_delay_ms);
    let policy = effective(broker, overrides, "cleanup.policy")
        .0
        .unwrap_or_else(|| "delete".into());
    let compact = policy.split(',').any(|p| p.trim() == "compact");
    let delete = policy.split(',').any(|p| p.trim() == "delete");
    c.cleanup_policy = match (compact, delete) {
        (true, true) => CleanupPolicy::CompactDelete,
        (true, false) => CleanupPolicy::Compact,
        (false, true) => CleanupPolicy::Delete,
        // An empty cleanup.policy (Kafka 4.4): neither compaction nor deletion, so segments
        // are kept forever whatever retention.ms and retention.bytes say. The storage engine
        // has no such policy; deletion with no limit is the same.
        (false, false) => {
            c.retention_ms = -1;
            c.retention_bytes = -1;
            CleanupPolicy::Delete
        }
    };
    let ts = effective(broker, overrides, "message.timestamp.type")
        .0
        .unwrap_or_default();
    c.message_timestamp_type = if ts == "LogAppendTime" {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    c.durable = broker.bool("log.durable");
    c.producer_id_expiration_ms = broker.long("producer.id.expiration.ms").max(1);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::broker;

    #[test]
    fn retention_hours_become_milliseconds_and_overrides_win() {
        let b = broker(&[("log.retention.hours", "2")]);
        assert_eq!(
            effective(&b, &TopicOverrides::new(), "retention.ms"),
            (
                Some("7200000".into()),
                TopicValueSource::Broker("log.retention.hours", Source::Static)
            )
        );
        let mut o = TopicOverrides::new();
        o.insert("retention.ms".into(), "5".into());
        assert_eq!(
            effective(&b, &o, "retention.ms"),
            (Some("5".into()), TopicValueSource::Topic)
        );
        assert_eq!(log_config(&b, &o).retention_ms, 5);
    }

    #[test]
    fn defaults_match_kafka() {
        let b = broker(&[]);
        let o = TopicOverrides::new();
        assert_eq!(
            effective(&b, &o, "retention.ms").0.as_deref(),
            Some("604800000")
        );
        assert_eq!(
            effective(&b, &o, "cleanup.policy").0.as_deref(),
            Some("delete")
        );
        assert_eq!(
            effective(&b, &o, "max.message.bytes").0.as_deref(),
            Some("1048588")
        );
        assert_eq!(
            effective(&b, &o, "segment.ms").0.as_deref(),
            Some("604800000")
        );
        let lc = log_config(&b, &o);
        assert_eq!(lc.segment_bytes, 1_073_741_824);
        assert_eq!(lc.cleanup_policy, CleanupPolicy::Delete);
    }

    #[test]
    fn kafka_4_topic_configs_are_known_with_kafkas_defaults_and_checks() {
        let b = broker(&[]);
        let o = TopicOverrides::new();
        for (name, default) in [
            ("max.compaction.lag.ms", "9223372036854775807"),
            ("message.timestamp.after.max.ms", "3600000"),
            ("message.timestamp.before.max.ms", "9223372036854775807"),
            ("segment.jitter.ms", "0"),
            ("local.retention.ms", "-2"),
            ("local.retention.bytes", "-2"),
            ("remote.storage.enable", "false"),
            ("leader.replication.throttled.replicas", ""),
            ("compression.zstd.level", "3"),
        ] {
            assert_eq!(
                effective(&b, &o, name).0.as_deref(),
                Some(default),
                "{name}"
            );
        }
        assert!(validate_value("max.compaction.lag.ms", "3600000").is_ok());
        assert!(validate_value("max.compaction.lag.ms", "0").is_err());
        assert!(validate_value("follower.replication.throttled.replicas", "0:1,1:1").is_ok());
        assert!(validate_value("follower.replication.throttled.replicas", "0-1").is_err());
        assert!(validate_value("compression.gzip.level", "10").is_err());
        let e = validate_value("remote.storage.enable", "true").unwrap_err();
        assert!(
            e.contains("Tiered Storage functionality is disabled"),
            "{e}"
        );
        let mut conflict = TopicOverrides::new();
        conflict.insert("min.compaction.lag.ms".into(), "10".into());
        conflict.insert("max.compaction.lag.ms".into(), "5".into());
        let e = validate_overrides(&b, &conflict).unwrap_err();
        assert!(
            e.contains("min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
            "{e}"
        );
    }

    #[test]
    fn dynamic_broker_defaults_beat_static_ones_and_report_their_level() {
        let b = broker(&[
            ("log.retention.hours", "2"),
            ("log.cleanup.policy", "compact"),
        ]);
        let dynamic = b.with_dynamic(
            [("log.retention.ms".to_string(), "1000".to_string())].into(),
            [("log.cleanup.policy".to_string(), "delete".to_string())].into(),
        );
        let o = TopicOverrides::new();
        let (value, source) = effective(&dynamic, &o, "retention.ms");
        assert_eq!(value.as_deref(), Some("1000"));
        assert_eq!(source.code(), source_code::DYNAMIC_BROKER_CONFIG);
        let (value, source) = effective(&dynamic, &o, "cleanup.policy");
        assert_eq!(value.as_deref(), Some("delete"));
        assert_eq!(source.code(), source_code::DYNAMIC_DEFAULT_BROKER_CONFIG);
        assert_eq!(log_config(&dynamic, &o).retention_ms, 1000);
        assert_eq!(
            log_config(&dynamic, &o).cleanup_policy,
            CleanupPolicy::Delete
        );
    }

    #[test]
    fn an_empty_cleanup_policy_keeps_segments_forever() {
        let b = broker(&[("log.retention.ms", "1000"), ("log.retention.bytes", "10")]);
        assert!(validate_value("cleanup.policy", "").is_ok());
        assert!(validate_value("cleanup.policy", " ").is_ok());
        let e = validate_value("cleanup.policy", ",delete").unwrap_err();
        assert!(e.contains("values must not be empty"), "{e}");
        let mut o = TopicOverrides::new();
        o.insert("cleanup.policy".into(), "".into());
        let lc = log_config(&b, &o);
        assert_eq!(lc.cleanup_policy, CleanupPolicy::Delete);
        assert_eq!((lc.retention_ms, lc.retention_bytes), (-1, -1));
        assert!(!lc.cleanup_policy.compacts());
        // The broker-wide default may be empty too.
        let b = broker(&[("log.cleanup.policy", "")]);
        assert_eq!(log_config(&b, &TopicOverrides::new()).retention_ms, -1);
    }

    #[test]
    fn kafka_4_4_topic_configs_take_their_broker_defaults_and_bounds() {
        let b = broker(&[]);
        let o = TopicOverrides::new();
        for (name, default) in [
            ("max.decompressed.message.bytes", "2147483639"),
            ("remote.copy.lag.bytes", "-1"),
            ("remote.copy.lag.ms", "0"),
        ] {
            assert_eq!(
                effective(&b, &o, name).0.as_deref(),
                Some(default),
                "{name}"
            );
        }
        assert!(validate_value("max.decompressed.message.bytes", "0").is_err());
        assert!(validate_value("max.decompressed.message.bytes", "2147483640").is_err());
        assert!(validate_value("remote.copy.lag.ms", "-1").is_ok());
        assert!(validate_value("remote.copy.lag.bytes", "-2").is_err());
        assert!(validate_value("message.downconversion.enable", "true").is_err());
        // Kafka's bounds: flush.ms from 0, retention.bytes any.
        assert!(validate_value("flush.ms", "0").is_ok());
        assert!(validate_value("retention.bytes", "-5").is_ok());
    }

    #[test]
    fn bad_topic_values_are_refused() {
        assert!(validate_value("cleanup.policy", "compact,delete").is_ok());
        assert!(validate_value("cleanup.policy", "shred").is_err());
        assert!(validate_value("retention.ms", "-2").is_err());
        assert!(validate_value("segment.bytes", "abc").is_err());
        assert!(validate_value("no.such.key", "1").is_err());
    }
}

/// DescribeConfigs' `config_source` codes (Kafka's `DescribeConfigsResponse.ConfigSource`).
pub mod source_code {
    pub const UNKNOWN: i8 = 0;
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
    pub const GROUP_CONFIG: i8 = 8;
}

impl TopicValueSource {
    pub fn code(&self) -> i8 {
        match self {
            TopicValueSource::Topic => source_code::DYNAMIC_TOPIC_CONFIG,
            TopicValueSource::Broker(_, source) => source.code(),
            TopicValueSource::Default(_) => source_code::DEFAULT_CONFIG,
        }
    }
}
