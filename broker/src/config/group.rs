//! Group configs (KIP-848's `GroupConfig`, Kafka 4.0): per-group overrides of the consumer and
//! share group timeouts, set with IncrementalAlterConfigs or AlterConfigs on a GROUP resource
//! and described with DescribeConfigs, even for a group that does not exist.
//!
//! They matter to KIP-848 consumer groups and KIP-932 share groups. Share groups read theirs
//! (`crate::share::ShareCoordinator::settings`): timeouts, lock duration, delivery count limit,
//! auto offset reset, isolation level and dead-letter topic (KIP-1191). Samsa serves no KIP-848
//! consumer groups yet (classic members send their own session timeout), so the `consumer.*`
//! keys are validated and stored exactly as Kafka does, for admin tools and a later
//! ConsumerGroupHeartbeat.

use std::collections::BTreeMap;

use super::defs::{self, ConfigType, GroupConfigDef, GROUP_CONFIGS};
use super::dynamic::DynamicConfigError;
use super::BrokerConfig;

/// A group's effective value of a group config: its override, else the broker's default.
pub fn effective(
    broker: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
    def: &GroupConfigDef,
) -> (String, bool) {
    if let Some(v) = overrides.get(def.name) {
        return (v.clone(), true);
    }
    let default = def
        .broker_default
        .and_then(|k| broker.get(k))
        .unwrap_or_else(|| def.default.to_string());
    (default, false)
}

fn invalid(message: String) -> DynamicConfigError {
    DynamicConfigError::InvalidConfig(message)
}

/// Kafka's `GroupConfig.validate`: known names only, values of the right type and range, and
/// (with Kafka's built-in defaults filled in for what the group does not set) within the
/// broker's bounds, each session timeout above its heartbeat interval. Every refusal is
/// INVALID_CONFIG, as Kafka's controller answers.
pub fn validate(
    configs: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Result<(), DynamicConfigError> {
    for name in configs.keys() {
        if defs::group_def(name).is_none() {
            return Err(invalid(format!("Unknown group config name: {name}")));
        }
    }
    let mut ints = BTreeMap::new();
    for def in GROUP_CONFIGS {
        let value = configs
            .get(def.name)
            .map(String::as_str)
            .unwrap_or(def.default);
        let v = value.trim();
        match def.kind {
            ConfigType::Int => {
                let n: i64 = v.parse::<i32>().map(i64::from).map_err(|_| {
                    invalid(format!(
                        "Invalid value {value} for configuration {}: Not a number of type INT",
                        def.name
                    ))
                })?;
                if n < def.min {
                    return Err(invalid(format!(
                        "Invalid value {value} for configuration {}: Value must be at least {}",
                        def.name, def.min
                    )));
                }
                if let Some((min_key, max_key)) = def.bounds {
                    if n < broker.long(min_key) {
                        return Err(invalid(format!(
                            "{} must be greater than or equal to {min_key}",
                            def.name
                        )));
                    }
                    if n > broker.long(max_key) {
                        return Err(invalid(format!(
                            "{} must be less than or equal to {max_key}",
                            def.name
                        )));
                    }
                }
                ints.insert(def.name, n);
            }
            ConfigType::Boolean => {
                if !matches!(v.to_ascii_lowercase().as_str(), "true" | "false") {
                    return Err(invalid(format!(
                        "Invalid value {value} for configuration {}: Expected value to be either true or false",
                        def.name
                    )));
                }
            }
            _ => {
                let one_of: &[&str] = match def.name {
                    "share.auto.offset.reset" => &["latest", "earliest"],
                    "share.isolation.level" => &["read_committed", "read_uncommitted"],
                    _ => &[],
                };
                if !one_of.is_empty() && !one_of.contains(&v.to_ascii_lowercase().as_str()) {
                    return Err(invalid(format!(
                        "Invalid value {value} for configuration {}: String must be one of: {}",
                        def.name,
                        one_of.join(", ")
                    )));
                }
                if def.name == "errors.deadletterqueue.topic.name" && !v.is_empty() {
                    let prefix = broker
                        .get("errors.deadletterqueue.topic.name.prefix")
                        .unwrap_or_default();
                    if v.starts_with("__") {
                        return Err(invalid(format!(
                            "Invalid value {value} for configuration {}: a dead-letter topic name may not start with __",
                            def.name
                        )));
                    }
                    if !v.starts_with(&prefix) {
                        return Err(invalid(format!(
                            "Invalid value {value} for configuration {}: the name must start with errors.deadletterqueue.topic.name.prefix ({prefix})",
                            def.name
                        )));
                    }
                    if !samsa_storage::is_valid_topic_name(v) {
                        return Err(invalid(format!(
                            "Invalid value {value} for configuration {}: not a legal topic name",
                            def.name
                        )));
                    }
                }
            }
        }
    }
    for (session, heartbeat) in [
        (
            "consumer.session.timeout.ms",
            "consumer.heartbeat.interval.ms",
        ),
        ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ] {
        if ints[session] <= ints[heartbeat] {
            return Err(invalid(format!(
                "{session} must be greater than {heartbeat}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::{broker, pairs as configs};

    #[test]
    fn values_within_the_broker_bounds_are_accepted() {
        let b = broker(&[]);
        assert!(validate(&configs(&[("consumer.session.timeout.ms", "50000")]), &b).is_ok());
        assert!(validate(&configs(&[("share.auto.offset.reset", "earliest")]), &b).is_ok());
        assert!(validate(
            &configs(&[
                ("errors.deadletterqueue.topic.name", "dlq.orders"),
                ("errors.deadletterqueue.copy.record.enable", "true"),
                ("share.delivery.count.limit", "3"),
                ("share.isolation.level", "read_committed"),
            ]),
            &b
        )
        .is_ok());
        assert!(validate(&BTreeMap::new(), &b).is_ok());
    }

    #[test]
    fn unknown_names_bad_values_and_out_of_bounds_values_are_invalid_config() {
        let b = broker(&[]);
        for (pairs, expected) in [
            (vec![("session.timeout.ms", "1")], "Unknown group config name: session.timeout.ms"),
            (vec![("consumer.session.timeout.ms", "soon")], "Not a number of type INT"),
            (vec![("consumer.session.timeout.ms", "0")], "Value must be at least 1"),
            (
                vec![("consumer.session.timeout.ms", "70000")],
                "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
            ),
            (
                vec![("consumer.session.timeout.ms", "1000")],
                "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (vec![("share.record.lock.duration.ms", "999")], "Value must be at least 1000"),
            (vec![("share.auto.offset.reset", "none")], "String must be one of: latest, earliest"),
            (
                vec![("share.isolation.level", "serializable")],
                "String must be one of: read_committed, read_uncommitted",
            ),
            (vec![("share.delivery.count.limit", "1")], "Value must be at least 2"),
            (
                vec![("share.delivery.count.limit", "11")],
                "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit",
            ),
            (
                vec![("errors.deadletterqueue.topic.name", "__dlq.x")],
                "may not start with __",
            ),
            (
                vec![("errors.deadletterqueue.topic.name", "failed")],
                "must start with errors.deadletterqueue.topic.name.prefix (dlq.)",
            ),
            (
                vec![("errors.deadletterqueue.copy.record.enable", "yes")],
                "Expected value to be either true or false",
            ),
        ] {
            let e = validate(&configs(&pairs), &b).unwrap_err();
            assert!(matches!(e, DynamicConfigError::InvalidConfig(_)));
            assert!(e.to_string().contains(expected), "{pairs:?}: {e}");
        }
        // The broker's bounds decide: a broker allowing shorter timeouts accepts them.
        let relaxed = broker(&[
            ("group.consumer.min.session.timeout.ms", "1000"),
            ("group.consumer.min.heartbeat.interval.ms", "500"),
        ]);
        assert!(validate(
            &configs(&[
                ("consumer.session.timeout.ms", "6000"),
                ("consumer.heartbeat.interval.ms", "1000")
            ]),
            &relaxed
        )
        .is_ok());
        let e = validate(
            &configs(&[
                ("consumer.session.timeout.ms", "5000"),
                ("consumer.heartbeat.interval.ms", "5000"),
            ]),
            &relaxed,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("must be greater than consumer.heartbeat.interval.ms"),
            "{e}"
        );
    }

    #[test]
    fn defaults_come_from_the_broker() {
        let b = broker(&[("group.consumer.session.timeout.ms", "50000")]);
        let def = defs::group_def("consumer.session.timeout.ms").unwrap();
        assert_eq!(
            effective(&b, &BTreeMap::new(), def),
            ("50000".into(), false)
        );
        let set = configs(&[("consumer.session.timeout.ms", "55000")]);
        assert_eq!(effective(&b, &set, def), ("55000".into(), true));
        let reset = defs::group_def("share.auto.offset.reset").unwrap();
        assert_eq!(
            effective(&b, &BTreeMap::new(), reset),
            ("latest".into(), false)
        );
    }
}
