//! Client-metrics subscriptions (KIP-714): CLIENT_METRICS config resources, one per
//! subscription name, with three configs: `metrics` (metric name prefixes, `*` for all),
//! `interval.ms` (how often matching clients push) and `match` (`selector=regex` pairs choosing
//! the clients). `kafka-configs.sh --entity-type client-metrics` sets and describes them with
//! IncrementalAlterConfigs and DescribeConfigs; they belong to the cluster like the other
//! dynamic configs (the active controller commits them to the metadata log).
//!
//! Samsa stores, validates and describes them as Kafka does, so that tools and operators can
//! manage them; it serves no client telemetry yet (GetTelemetrySubscriptions, PushTelemetry),
//! so no client pushes metrics because of them. A subscription that does not exist describes
//! as Kafka's defaults.

use std::collections::BTreeMap;

use super::defs::ConfigType;
use super::dynamic::DynamicConfigError;

/// One client-metrics config.
pub struct ClientMetricsConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    pub default: &'static str,
    pub doc: &'static str,
}

pub const CLIENT_METRICS_CONFIGS: &[ClientMetricsConfigDef] = &[
    ClientMetricsConfigDef {
        name: "interval.ms",
        kind: ConfigType::Int,
        default: "300000",
        doc: "how often the matching clients push their metrics, 100 to 3600000 ms",
    },
    ClientMetricsConfigDef {
        name: "match",
        kind: ConfigType::List,
        default: "",
        doc: "which clients the subscription applies to: selector=regex pairs over client_id, \
              client_instance_id, client_software_name, client_software_version, \
              client_source_address and client_source_port; empty: every client",
    },
    ClientMetricsConfigDef {
        name: "metrics",
        kind: ConfigType::List,
        default: "",
        doc: "prefixes of the metric names the clients push, * for all; empty: none",
    },
];

/// Kafka's bounds of `interval.ms`.
pub const INTERVAL_MS_MIN: i64 = 100;
pub const INTERVAL_MS_MAX: i64 = 3_600_000;
/// Subscriptions the cluster may hold at once.
pub const SUBSCRIPTIONS_MAX: usize = 10_000;

/// The client properties a `match` entry may select on.
const SELECTORS: &[&str] = &[
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
];

pub fn def(name: &str) -> Option<&'static ClientMetricsConfigDef> {
    CLIENT_METRICS_CONFIGS.iter().find(|d| d.name == name)
}

/// Kafka's `ClientMetricsConfigs.validate` of a subscription's resulting configs, with its
/// codes: an unknown name or an interval out of bounds is INVALID_REQUEST, a value of the
/// wrong type or a bad `match` entry INVALID_CONFIG.
pub fn validate(name: &str, configs: &BTreeMap<String, String>) -> Result<(), DynamicConfigError> {
    if name.is_empty() {
        return Err(DynamicConfigError::InvalidRequest(
            "Subscription name can't be empty".into(),
        ));
    }
    for key in configs.keys() {
        if def(key).is_none() {
            return Err(DynamicConfigError::InvalidRequest(format!(
                "Unknown client metrics configuration: {key}"
            )));
        }
    }
    if let Some(v) = configs.get("interval.ms") {
        let interval: i64 = v.trim().parse::<i32>().map(i64::from).map_err(|_| {
            DynamicConfigError::InvalidConfig(format!(
                "Invalid value {v} for configuration interval.ms: Not a number of type INT"
            ))
        })?;
        if !(INTERVAL_MS_MIN..=INTERVAL_MS_MAX).contains(&interval) {
            return Err(DynamicConfigError::InvalidRequest(format!(
                "Invalid value {v} for interval.ms, interval must be between {INTERVAL_MS_MIN} and {INTERVAL_MS_MAX} (1 hour)"
            )));
        }
    }
    if let Some(v) = configs.get("match") {
        for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let valid = entry.split_once('=').is_some_and(|(selector, pattern)| {
                SELECTORS.contains(&selector.trim()) && regex::Regex::new(pattern.trim()).is_ok()
            });
            if !valid {
                return Err(DynamicConfigError::InvalidConfig(format!(
                    "Illegal client matching pattern: {entry}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::pairs;

    #[test]
    fn kafkas_checks_with_kafkas_codes() {
        let ok = |c: &[(&str, &str)]| validate("sub", &pairs(c));
        assert!(ok(&[]).is_ok());
        assert!(ok(&[
            ("interval.ms", "100"),
            ("metrics", "org.apache.kafka.producer.,*"),
            ("match", "client_id=a.*,client_source_port=1")
        ])
        .is_ok());
        for (configs, request, message) in [
            (
                vec![("interval.ms", "99")],
                true,
                "must be between 100 and 3600000",
            ),
            (
                vec![("interval.ms", "3600001")],
                true,
                "must be between 100 and 3600000",
            ),
            (
                vec![("interval.ms", "soon")],
                false,
                "Not a number of type INT",
            ),
            (
                vec![("foo", "1")],
                true,
                "Unknown client metrics configuration: foo",
            ),
            (
                vec![("match", "bogus=a")],
                false,
                "Illegal client matching pattern: bogus=a",
            ),
            (
                vec![("match", "client_id=[")],
                false,
                "Illegal client matching pattern",
            ),
            (
                vec![("match", "client_id")],
                false,
                "Illegal client matching pattern",
            ),
        ] {
            let e = ok(&configs).unwrap_err();
            assert_eq!(
                matches!(e, DynamicConfigError::InvalidRequest(_)),
                request,
                "{configs:?}: {e}"
            );
            assert!(e.to_string().contains(message), "{configs:?}: {e}");
        }
        let e = validate("", &pairs(&[])).unwrap_err();
        assert_eq!(e.to_string(), "Subscription name can't be empty");
    }
}
