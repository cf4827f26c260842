//! Group configs (KIP-848's `GroupConfig`, Kafka 4.4's set): per-group overrides of the
//! consumer, share and streams group settings, set with IncrementalAlterConfigs or AlterConfigs
//! on a GROUP resource and described with DescribeConfigs, even for a group that does not
//! exist. Each defaults to a broker key (`group.consumer.session.timeout.ms` for
//! `consumer.session.timeout.ms`) and stays within the broker's bounds.
//!
//! They matter to KIP-848 consumer groups and KIP-932 share groups, which read theirs
//! (`crate::group::modern::consumer_settings`, `crate::share::ShareCoordinator::settings`):
//! session timeouts and heartbeat intervals, and for share groups the lock duration, delivery
//! count limit, auto offset reset, isolation level and dead-letter topic (KIP-1191).
//! `consumer.assignment.interval.ms` is stored and not used yet (a consumer group computes its
//! target assignment at once), and KIP-1071 streams groups are not served, so the `streams.*`
//! keys are validated and stored exactly as Kafka does, for admin tools and a later
//! StreamsGroupHeartbeat.

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
    (broker_default(broker, def), false)
}

/// What a group that does not set `def` gets: the broker key's value, else Kafka's default.
/// `streams.assignor.name` takes the first of the assignors the broker lists.
pub fn broker_default(broker: &BrokerConfig, def: &GroupConfigDef) -> String {
    let Some(key) = def.broker_default else {
        return def.default.to_string();
    };
    if def.name == "streams.assignor.name" {
        return broker.list(key).into_iter().next().unwrap_or_default();
    }
    broker.get(key).unwrap_or_else(|| def.default.to_string())
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
        let Some(value) = configs
            .get(def.name)
            .map(String::as_str)
            .or(match def.name {
                // No built-in default: the broker's first assignor, which needs no check.
                "streams.assignor.name" => None,
                _ => Some(def.default),
            })
        else {
            continue;
        };
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
                check_bounds(broker, def, n)?;
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
            ConfigType::List => {
                // streams.rack.aware.assignment.tags, Kafka's only list group config.
                let tags: Vec<&str> = v
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .collect();
                let unique: std::collections::BTreeSet<&str> = tags.iter().copied().collect();
                if unique.len() != tags.len() {
                    return Err(invalid(format!(
                        "{} must not contain duplicate tag keys.",
                        def.name
                    )));
                }
            }
            _ => validate_string(broker, def, value)?,
        }
    }
    for (session, heartbeat) in [
        (
            "consumer.session.timeout.ms",
            "consumer.heartbeat.interval.ms",
        ),
        ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
        (
            "streams.session.timeout.ms",
            "streams.heartbeat.interval.ms",
        ),
    ] {
        if ints[session] <= ints[heartbeat] {
            return Err(invalid(format!(
                "{session} must be greater than {heartbeat}"
            )));
        }
    }
    Ok(())
}

/// The broker's bounds of an INT group config, worded as Kafka 4.4 words them.
fn check_bounds(
    broker: &BrokerConfig,
    def: &GroupConfigDef,
    n: i64,
) -> Result<(), DynamicConfigError> {
    let min = def.min_key.map(|k| broker.long(k));
    let max = def.max_key.map(|k| broker.long(k));
    let below = min.is_some_and(|m| n < m);
    let above = max.is_some_and(|m| n > m);
    if !below && !above {
        return Ok(());
    }
    Err(invalid(match (min, max) {
        (Some(min), Some(max)) => {
            format!(
                "{} must be in the range {min} to {max} inclusive.",
                def.name
            )
        }
        (Some(min), None) => format!("{} must be greater than or equal to {min}", def.name),
        (None, Some(max)) => format!("{} must be less than or equal to {max}", def.name),
        (None, None) => unreachable!("out of bounds without bounds"),
    }))
}

/// The STRING group configs: Kafka's choices, and the dead-letter topic's naming rules.
fn validate_string(
    broker: &BrokerConfig,
    def: &GroupConfigDef,
    value: &str,
) -> Result<(), DynamicConfigError> {
    let v = value.trim();
    let one_of: &[&str] = match def.name {
        // Kafka also takes by_duration:<ISO-8601 duration>; Samsa's share groups do not
        // start from a time, so it is refused rather than read as latest.
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
    if def.name == "streams.assignor.name" {
        let assignors = broker.list("group.streams.assignors");
        if !assignors.iter().any(|a| a == v) {
            return Err(invalid(format!(
                "{} '{v}' is not a registered task assignor. Registered assignors are: [{}].",
                def.name,
                assignors.join(", ")
            )));
        }
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
            (
                vec![("session.timeout.ms", "1")],
                "Unknown group config name: session.timeout.ms",
            ),
            (
                vec![("consumer.session.timeout.ms", "soon")],
                "Not a number of type INT",
            ),
            (
                vec![("consumer.session.timeout.ms", "0")],
                "Value must be at least 1",
            ),
            (
                vec![("consumer.session.timeout.ms", "70000")],
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
            ),
            (
                vec![("consumer.session.timeout.ms", "1000")],
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
            ),
            (
                vec![("share.record.lock.duration.ms", "999")],
                "Value must be at least 1000",
            ),
            (
                vec![("share.auto.offset.reset", "none")],
                "String must be one of: latest, earliest",
            ),
            (
                vec![("share.isolation.level", "serializable")],
                "String must be one of: read_committed, read_uncommitted",
            ),
            (
                vec![("share.delivery.count.limit", "1")],
                "Value must be at least 2",
            ),
            (
                vec![("share.delivery.count.limit", "11")],
                "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
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
    fn kafka_4_4s_group_configs_are_checked_within_the_brokers_bounds() {
        let b = broker(&[]);
        for (pairs, expected) in [
            (
                vec![("consumer.assignment.interval.ms", "-1")],
                "Value must be at least 0",
            ),
            (
                vec![("consumer.assignment.interval.ms", "20000")],
                "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive.",
            ),
            (
                vec![("share.partition.max.record.locks", "5000")],
                "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.",
            ),
            (
                vec![("streams.num.standby.replicas", "3")],
                "streams.num.standby.replicas must be less than or equal to 2",
            ),
            (
                vec![("streams.assignor.name", "foo")],
                "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky].",
            ),
            (
                vec![("streams.rack.aware.assignment.tags", "a,a")],
                "must not contain duplicate tag keys",
            ),
            (
                vec![("share.renew.acknowledge.enable", "maybe")],
                "Expected value to be either true or false",
            ),
        ] {
            let e = validate(&configs(&pairs), &b).unwrap_err();
            assert!(matches!(e, DynamicConfigError::InvalidConfig(_)));
            assert!(e.to_string().contains(expected), "{pairs:?}: {e}");
        }
        assert!(validate(
            &configs(&[
                ("streams.assignor.name", "sticky"),
                ("streams.rack.aware.assignment.tags", "zone,rack"),
                ("streams.initial.rebalance.delay.ms", "999999999"),
                ("share.partition.max.record.locks", "100"),
            ]),
            &b
        )
        .is_ok());
        // The default assignor is the broker's first.
        let b = broker(&[("group.streams.assignors", "mine,sticky")]);
        let def = defs::group_def("streams.assignor.name").unwrap();
        assert_eq!(effective(&b, &BTreeMap::new(), def), ("mine".into(), false));
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
