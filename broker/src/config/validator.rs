//! What the active controller asks about config keys, answered from the broker's config
//! definitions (Kafka's `ControllerConfigurationValidator` and the `KafkaConfigSchema` questions
//! of `ConfigurationControlManager`). Installed on this node's controller at start
//! (`server.rs`), so that whichever node is active checks a topic's, broker's or group's
//! resulting configs with the same rules the broker's handlers apply, against its own effective
//! configuration (a topic's values are checked with the broker defaults they combine with; a
//! group's timeouts within the `group.consumer.*` bounds).

use std::collections::BTreeMap;
use std::sync::Arc;

use samsa_cluster::controller::{ConfigRefusal, ConfigValidator};
use samsa_cluster::metadata::image::{
    CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_CLIENT_METRICS, CONFIG_RESOURCE_GROUP,
    CONFIG_RESOURCE_TOPIC,
};

use super::defs::{self, ConfigType};
use super::dynamic::{
    broker_key_def, validate_broker_keys, DynamicConfigError, DynamicConfigs, GROUP_NAME_BYTES_MAX,
};
use super::topic::{self, TopicOverrides};
use super::{client_metrics, group};

/// The broker's [`ConfigValidator`].
pub struct BrokerConfigValidator {
    configs: Arc<DynamicConfigs>,
}

impl BrokerConfigValidator {
    pub fn new(configs: Arc<DynamicConfigs>) -> BrokerConfigValidator {
        BrokerConfigValidator { configs }
    }
}

/// A refusal with the code the broker's own check answers.
pub fn refusal(e: DynamicConfigError) -> ConfigRefusal {
    ConfigRefusal {
        error: e.response_error(),
        message: e.to_string(),
    }
}

impl ConfigValidator for BrokerConfigValidator {
    fn validate(
        &self,
        resource_type: i8,
        resource_name: &str,
        resulting: &BTreeMap<String, String>,
        _existing: &BTreeMap<String, String>,
    ) -> Result<(), ConfigRefusal> {
        match resource_type {
            CONFIG_RESOURCE_TOPIC => {
                topic::validate_overrides(&self.configs.effective(), resulting)
                    .map_err(ConfigRefusal::invalid_config)
            }
            CONFIG_RESOURCE_BROKER => {
                validate_broker_keys(resulting, !resource_name.is_empty()).map_err(refusal)
            }
            CONFIG_RESOURCE_GROUP => {
                if resource_name.len() > GROUP_NAME_BYTES_MAX {
                    return Err(refusal(DynamicConfigError::TooMany(format!(
                        "group name of {} bytes exceeds the limit of {GROUP_NAME_BYTES_MAX}",
                        resource_name.len()
                    ))));
                }
                group::validate(resulting, &self.configs.effective()).map_err(refusal)
            }
            CONFIG_RESOURCE_CLIENT_METRICS => {
                client_metrics::validate(resource_name, resulting).map_err(refusal)
            }
            other => Err(ConfigRefusal::invalid_request(format!(
                "Unknown resource type {other}"
            ))),
        }
    }

    fn is_list(&self, resource_type: i8, key: &str) -> bool {
        let kind = match resource_type {
            CONFIG_RESOURCE_TOPIC => defs::topic_def(key).map(|d| d.kind),
            CONFIG_RESOURCE_BROKER => broker_key_def(key).map(|d| d.kind),
            _ => None,
        };
        kind == Some(ConfigType::List)
    }

    /// A topic key starts from its value with no override (the broker's `log.*` default, as the
    /// broker's IncrementalAlterConfigs always did); a broker key from Kafka's default.
    fn default_value(&self, resource_type: i8, key: &str) -> Option<String> {
        match resource_type {
            CONFIG_RESOURCE_TOPIC => {
                topic::effective(&self.configs.effective(), &TopicOverrides::new(), key).0
            }
            CONFIG_RESOURCE_BROKER => {
                broker_key_def(key).and_then(|d| d.default.map(str::to_string))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::ResponseError;

    use super::*;
    use crate::config::test_support::{broker, pairs};

    fn validator(flags: &[(&str, &str)]) -> BrokerConfigValidator {
        BrokerConfigValidator::new(Arc::new(DynamicConfigs::new(&broker(flags), 1)))
    }

    #[test]
    fn each_resource_type_is_checked_with_the_brokers_rules_and_codes() {
        let v = validator(&[]);
        let none = BTreeMap::new();
        let check = |t, name: &str, configs: &[(&str, &str)]| {
            v.validate(t, name, &pairs(configs), &none)
                .map_err(|r| (r.error, r.message))
        };
        assert!(check(CONFIG_RESOURCE_TOPIC, "t", &[("retention.ms", "5")]).is_ok());
        let (code, message) =
            check(CONFIG_RESOURCE_TOPIC, "t", &[("retention.ms", "-2")]).unwrap_err();
        assert_eq!(code, ResponseError::InvalidConfig);
        assert!(message.contains("retention.ms"), "{message}");

        assert!(check(CONFIG_RESOURCE_BROKER, "", &[("log.retention.ms", "5")]).is_ok());
        let (code, message) =
            check(CONFIG_RESOURCE_BROKER, "1", &[("log.retention.hours", "1")]).unwrap_err();
        assert_eq!(code, ResponseError::InvalidRequest);
        assert_eq!(
            message,
            "Cannot update these configs dynamically: [log.retention.hours]"
        );
        let (_, message) = check(
            CONFIG_RESOURCE_BROKER,
            "",
            &[("sasl.kerberos.min.time.before.relogin", "1")],
        )
        .unwrap_err();
        assert!(message.contains("broker id must be specified"), "{message}");

        assert!(check(
            CONFIG_RESOURCE_GROUP,
            "g",
            &[("consumer.session.timeout.ms", "50000")]
        )
        .is_ok());
        let (code, _) = check(
            CONFIG_RESOURCE_GROUP,
            "g",
            &[("consumer.session.timeout.ms", "70000")],
        )
        .unwrap_err();
        assert_eq!(code, ResponseError::InvalidConfig);
        let (code, _) = check(CONFIG_RESOURCE_GROUP, &"g".repeat(5000), &[]).unwrap_err();
        assert_eq!(code, ResponseError::PolicyViolation);
        assert!(check(
            CONFIG_RESOURCE_CLIENT_METRICS,
            "sub",
            &[("interval.ms", "1000")]
        )
        .is_ok());
        let (code, _) = check(
            CONFIG_RESOURCE_CLIENT_METRICS,
            "sub",
            &[("interval.ms", "1")],
        )
        .unwrap_err();
        assert_eq!(code, ResponseError::InvalidRequest);
        let (code, _) =
            check(CONFIG_RESOURCE_CLIENT_METRICS, "sub", &[("match", "x=y")]).unwrap_err();
        assert_eq!(code, ResponseError::InvalidConfig);
    }

    #[test]
    fn lists_and_their_defaults_are_the_brokers() {
        let v = validator(&[("log.cleanup.policy", "compact")]);
        assert!(v.is_list(CONFIG_RESOURCE_TOPIC, "cleanup.policy"));
        assert!(!v.is_list(CONFIG_RESOURCE_TOPIC, "retention.ms"));
        assert!(v.is_list(CONFIG_RESOURCE_BROKER, "log.cleanup.policy"));
        assert!(!v.is_list(CONFIG_RESOURCE_BROKER, "background.threads"));
        assert!(!v.is_list(CONFIG_RESOURCE_GROUP, "consumer.session.timeout.ms"));
        // A topic's list starts from the broker's default for it; a broker key from Kafka's.
        assert_eq!(
            v.default_value(CONFIG_RESOURCE_TOPIC, "cleanup.policy")
                .as_deref(),
            Some("compact")
        );
        assert_eq!(
            v.default_value(CONFIG_RESOURCE_BROKER, "log.cleanup.policy")
                .as_deref(),
            Some("delete")
        );
        assert_eq!(v.default_value(CONFIG_RESOURCE_GROUP, "x"), None);
    }
}
