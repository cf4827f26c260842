//! Topic configuration: per-topic overrides over broker defaults, the checks CreateTopics and
//! the AlterConfigs APIs apply, and the translation into the storage engine's `LogConfig`.

use std::collections::BTreeMap;

use samsa_storage::{CleanupPolicy, LogConfig, TimestampType};

use super::defs::{self, TopicConfigDef};
use super::BrokerConfig;

/// Per-topic overrides (only what was set on the topic).
pub type TopicOverrides = BTreeMap<String, String>;

/// Where an effective topic value came from (DescribeConfigs' `config_source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicValueSource {
    /// Set on the topic.
    Topic,
    /// From this broker key (static broker config).
    Broker(&'static str),
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

/// Checks one topic value; the message names the key and what was expected.
pub fn validate_value(name: &str, value: &str) -> Result<(), String> {
    let def = defs::topic_def(name).ok_or_else(|| format!("unknown topic config '{name}'"))?;
    defs::validate(name, def.kind, value)?;
    let v = value.trim();
    let ok = match name {
        "cleanup.policy" => {
            !v.is_empty()
                && v.split(',')
                    .map(str::trim)
                    .all(|p| matches!(p, "delete" | "compact"))
        }
        "compression.type" => matches!(
            v,
            "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd"
        ),
        "message.timestamp.type" => matches!(v, "CreateTime" | "LogAppendTime"),
        "segment.bytes" => v.parse::<i64>().map(|n| n >= 14).unwrap_or(false),
        "segment.index.bytes" => v.parse::<i64>().map(|n| n >= 8).unwrap_or(false),
        "max.message.bytes" | "index.interval.bytes" => {
            v.parse::<i64>().map(|n| n >= 0).unwrap_or(false)
        }
        "min.insync.replicas" => v.parse::<i64>().map(|n| n >= 1).unwrap_or(false),
        "segment.ms" | "flush.ms" | "flush.messages" => {
            v.parse::<i64>().map(|n| n >= 1).unwrap_or(false)
        }
        "delete.retention.ms" | "min.compaction.lag.ms" | "file.delete.delay.ms" => {
            v.parse::<i64>().map(|n| n >= 0).unwrap_or(false)
        }
        "retention.ms" | "retention.bytes" => v.parse::<i64>().map(|n| n >= -1).unwrap_or(false),
        "min.cleanable.dirty.ratio" => v
            .parse::<f64>()
            .map(|r| (0.0..=1.0).contains(&r))
            .unwrap_or(false),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("invalid value '{value}' for topic config {name}"))
    }
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
    for (syn, factor) in def.synonyms {
        if broker.is_set(syn) {
            return (
                broker.get(syn).map(|v| scale(&v, *factor)),
                TopicValueSource::Broker(syn),
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
    (builtin_default(def), TopicValueSource::Default(None))
}

/// Defaults of topic keys whose broker synonyms have none (Kafka's values).
fn builtin_default(def: &TopicConfigDef) -> Option<String> {
    let v = match def.name {
        "flush.ms" | "flush.messages" => "9223372036854775807",
        "unclean.leader.election.enable" | "preallocate" => "false",
        "message.downconversion.enable" => "true",
        _ => return None,
    };
    Some(v.to_string())
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
        _ => CleanupPolicy::Delete,
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

    fn broker(pairs: &[(&str, &str)]) -> BrokerConfig {
        BrokerConfig::load(
            None,
            vec![],
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap()
    }

    #[test]
    fn retention_hours_become_milliseconds_and_overrides_win() {
        let b = broker(&[("log.retention.hours", "2")]);
        assert_eq!(
            effective(&b, &TopicOverrides::new(), "retention.ms"),
            (
                Some("7200000".into()),
                TopicValueSource::Broker("log.retention.hours")
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
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
}

impl TopicValueSource {
    pub fn code(&self) -> i8 {
        match self {
            TopicValueSource::Topic => source_code::DYNAMIC_TOPIC_CONFIG,
            TopicValueSource::Broker(_) => source_code::STATIC_BROKER_CONFIG,
            TopicValueSource::Default(_) => source_code::DEFAULT_CONFIG,
        }
    }
}
