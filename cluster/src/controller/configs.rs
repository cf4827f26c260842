//! IncrementalAlterConfigs and AlterConfigs: Kafka's `ConfigurationControlManager`
//! (`incrementalAlterConfigs`, `legacyAlterConfigs`), with the checks Kafka makes before it:
//! the forwarding broker's (`ConfigAdminManager.preprocess`: a resource named twice, a key named
//! twice, a null value, an unknown resource type or operation), `ControllerConfigurationValidator`'s
//! (the resource's name) and the controller's existence check (`ConfigResourceExistenceChecker`).
//!
//! Resources are topics (2), brokers (4; the name "" is the cluster-wide default, else a broker
//! id in decimal), client-metrics subscriptions (16) and groups (32): Kafka's
//! `ConfigResource.Type` ids. Each gets one result, in request order; a resource that fails
//! writes nothing and the others go ahead, as in Kafka. Which keys exist, what values they take
//! and which are lists is the broker's knowledge, asked through the [`ConfigValidator`]
//! (see [`Controller::set_config_validator`]).
//!
//! A change writes a `ConfigRecord` per key whose value changes (value `None` deletes the key);
//! a resource whose keys all keep their values writes nothing. Broker resources are the
//! exception, as in Kafka (KAFKA-14136): every key named gets a record, changed or not, because
//! a broker reloads what a record names (a keystore file rewritten under the same path is
//! picked up by setting the same path again).

use std::collections::{BTreeMap, HashMap, HashSet};

use kafka_protocol::ResponseError;

use super::topics::{error, validate_topic_name, TopicError as Refusal};
use super::{Controller, ControllerError, MAX_RECORDS_PER_USER_OP};
use crate::metadata::image::{
    CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_CLIENT_METRICS, CONFIG_RESOURCE_GROUP,
    CONFIG_RESOURCE_TOPIC,
};
use crate::metadata::records::{ConfigRecord, MetadataRecord};
use crate::metadata::MetadataImage;

/// IncrementalAlterConfigs' operations (Kafka's `AlterConfigOp.OpType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterConfigOp {
    Set = 0,
    Delete = 1,
    /// Adds values to a list-type key, each unless it is there already.
    Append = 2,
    /// Removes values from a list-type key.
    Subtract = 3,
}

impl AlterConfigOp {
    pub fn from_code(code: i8) -> Option<AlterConfigOp> {
        match code {
            0 => Some(AlterConfigOp::Set),
            1 => Some(AlterConfigOp::Delete),
            2 => Some(AlterConfigOp::Append),
            3 => Some(AlterConfigOp::Subtract),
            _ => None,
        }
    }

    /// Kafka's name, as its messages print it.
    pub fn name(self) -> &'static str {
        match self {
            AlterConfigOp::Set => "SET",
            AlterConfigOp::Delete => "DELETE",
            AlterConfigOp::Append => "APPEND",
            AlterConfigOp::Subtract => "SUBTRACT",
        }
    }
}

/// One key of an IncrementalAlterConfigs resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterableConfig {
    pub name: String,
    /// An [`AlterConfigOp`] code, as the request carries it (others are refused).
    pub operation: i8,
    /// Ignored by DELETE; required by the others.
    pub value: Option<String>,
}

/// One resource of an IncrementalAlterConfigs request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalAlterConfigsResource {
    pub resource_type: i8,
    pub resource_name: String,
    pub configs: Vec<AlterableConfig>,
}

/// One resource of a (legacy) AlterConfigs request: its whole set of dynamic configs, which
/// replaces the current one (keys not named are deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResource {
    pub resource_type: i8,
    pub resource_name: String,
    /// A `None` value is refused.
    pub configs: Vec<(String, Option<String>)>,
}

/// The answer for one resource of either request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResult {
    pub resource_type: i8,
    pub resource_name: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// A resource as Kafka's `ConfigResource` identifies it.
type ResourceKey<'a> = (i8, &'a str);

impl Controller {
    /// IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on the named keys of each
    /// resource. With `validate_only` the results are the same but there are no records.
    ///
    /// Refused per resource, in Kafka's order: a resource named twice (INVALID_REQUEST for each
    /// time it is named); a key named twice, or a null value for an operation other than DELETE
    /// (INVALID_REQUEST); a resource type other than topic, broker, client metrics and group
    /// (INVALID_REQUEST: BROKER_LOGGER is the broker's own business and never reaches the
    /// log); an unknown operation (INVALID_REQUEST); APPEND or SUBTRACT on a key that is not a
    /// list (INVALID_CONFIG); a bad name: an empty or illegal topic name (INVALID_REQUEST,
    /// INVALID_TOPIC_EXCEPTION), a broker name that is not a non-negative decimal id, an empty
    /// group or subscription name (INVALID_REQUEST); configs the validator refuses (its code,
    /// usually INVALID_CONFIG); a topic that does not exist (UNKNOWN_TOPIC_OR_PARTITION) or a
    /// broker id no broker or controller is registered with (BROKER_ID_NOT_REGISTERED). More
    /// than [`MAX_RECORDS_PER_USER_OP`] records in all refuses the whole request
    /// ([`ControllerError::BatchTooLarge`]).
    pub fn incremental_alter_configs(
        &self,
        image: &MetadataImage,
        resources: Vec<IncrementalAlterConfigsResource>,
        validate_only: bool,
    ) -> Result<(Vec<MetadataRecord>, Vec<AlterConfigsResult>), ControllerError> {
        self.check_active()?;
        alter_each(
            resources.iter().map(|r| {
                let key = (r.resource_type, r.resource_name.as_str());
                (key, move || self.incremental_alter_resource(image, r))
            }),
            validate_only,
        )
    }

    fn incremental_alter_resource(
        &self,
        image: &MetadataImage,
        r: &IncrementalAlterConfigsResource,
    ) -> Result<Vec<MetadataRecord>, Refusal> {
        check_duplicate_keys(r.configs.iter().map(|c| c.name.as_str()))?;
        check_null_values(r.configs.iter().filter_map(|c| {
            (c.operation != AlterConfigOp::Delete as i8 && c.value.is_none())
                .then_some(c.name.as_str())
        }))?;
        check_resource_type(r.resource_type)?;
        let ops = r
            .configs
            .iter()
            .map(|c| {
                AlterConfigOp::from_code(c.operation).ok_or_else(|| {
                    error(
                        ResponseError::InvalidRequest,
                        format!("Unknown operations type {}", c.operation),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let existing = image
            .configs(r.resource_type, &r.resource_name)
            .cloned()
            .unwrap_or_default();
        let mut changes: Vec<(&str, Option<String>)> = Vec::with_capacity(r.configs.len());
        for (c, op) in r.configs.iter().zip(ops) {
            let current = existing.get(&c.name);
            let value = c.value.as_deref();
            let new = match op {
                AlterConfigOp::Set => value.map(str::to_owned),
                AlterConfigOp::Delete => None,
                AlterConfigOp::Append | AlterConfigOp::Subtract => {
                    if !self.config_validator.is_list(r.resource_type, &c.name) {
                        return Err(error(
                            ResponseError::InvalidConfig,
                            format!(
                                "Can't {} to key {} because its type is not LIST.",
                                op.name(),
                                c.name
                            ),
                        ));
                    }
                    // Kafka starts from the key's default when the resource does not set it,
                    // so APPEND compact to an unset cleanup.policy gives "delete,compact".
                    let base = current.cloned().or_else(|| {
                        self.config_validator
                            .default_value(r.resource_type, &c.name)
                    });
                    let values = java_split(value.expect("nulls refused above"));
                    Some(alter_list(base.as_deref(), &values, op))
                }
            };
            changes.push((&c.name, new));
        }
        let mut resulting = existing.clone();
        for (key, value) in &changes {
            match value {
                Some(v) => resulting.insert((*key).to_owned(), v.clone()),
                None => resulting.remove(*key),
            };
        }
        self.validate_resource(
            image,
            r.resource_type,
            &r.resource_name,
            &resulting,
            &existing,
        )?;
        let always = r.resource_type == CONFIG_RESOURCE_BROKER;
        Ok(changes
            .into_iter()
            .filter(|(key, value)| always || existing.get(*key) != value.as_ref())
            .map(|(key, value)| config_record(r.resource_type, &r.resource_name, key, value))
            .collect())
    }

    /// AlterConfigs (the legacy API): each resource's dynamic configs become exactly the ones
    /// given. With `validate_only` the results are the same but there are no records.
    ///
    /// Refused per resource as [`Self::incremental_alter_configs`] refuses them (a null value is
    /// INVALID_REQUEST; there are no operations). The records set the keys whose values change
    /// (every key named, for a broker resource) and then delete the keys not named.
    pub fn alter_configs(
        &self,
        image: &MetadataImage,
        resources: Vec<AlterConfigsResource>,
        validate_only: bool,
    ) -> Result<(Vec<MetadataRecord>, Vec<AlterConfigsResult>), ControllerError> {
        self.check_active()?;
        alter_each(
            resources.iter().map(|r| {
                let key = (r.resource_type, r.resource_name.as_str());
                (key, move || self.replace_resource_configs(image, r))
            }),
            validate_only,
        )
    }

    fn replace_resource_configs(
        &self,
        image: &MetadataImage,
        r: &AlterConfigsResource,
    ) -> Result<Vec<MetadataRecord>, Refusal> {
        check_duplicate_keys(r.configs.iter().map(|(k, _)| k.as_str()))?;
        check_null_values(
            r.configs
                .iter()
                .filter_map(|(k, v)| v.is_none().then_some(k.as_str())),
        )?;
        check_resource_type(r.resource_type)?;
        let existing = image
            .configs(r.resource_type, &r.resource_name)
            .cloned()
            .unwrap_or_default();
        let resulting: BTreeMap<String, String> = r
            .configs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().expect("nulls refused above")))
            .collect();
        self.validate_resource(
            image,
            r.resource_type,
            &r.resource_name,
            &resulting,
            &existing,
        )?;
        let always = r.resource_type == CONFIG_RESOURCE_BROKER;
        let set = r
            .configs
            .iter()
            .filter(|(key, value)| always || existing.get(key) != value.as_ref())
            .map(|(key, value)| {
                config_record(r.resource_type, &r.resource_name, key, value.clone())
            });
        let deleted = existing
            .keys()
            .filter(|key| !resulting.contains_key(*key))
            .map(|key| config_record(r.resource_type, &r.resource_name, key, None));
        Ok(set.chain(deleted).collect())
    }

    /// Kafka's `validateAlterConfig`: the resource's name (`ControllerConfigurationValidator`),
    /// then the configs it would have, then that it exists. The order is Kafka's: a refused
    /// value on a missing topic is INVALID_CONFIG, not UNKNOWN_TOPIC_OR_PARTITION.
    fn validate_resource(
        &self,
        image: &MetadataImage,
        resource_type: i8,
        resource_name: &str,
        resulting: &BTreeMap<String, String>,
        existing: &BTreeMap<String, String>,
    ) -> Result<(), Refusal> {
        let invalid = |m: &str| Err(error(ResponseError::InvalidRequest, m));
        let broker_id = match resource_type {
            CONFIG_RESOURCE_TOPIC if resource_name.is_empty() => {
                return invalid("Default topic resources are not allowed.")
            }
            CONFIG_RESOURCE_TOPIC => {
                validate_topic_name(resource_name)?;
                None
            }
            CONFIG_RESOURCE_BROKER if resource_name.is_empty() => None,
            CONFIG_RESOURCE_BROKER => match resource_name.parse::<i32>() {
                Err(_) => return invalid("Unable to parse broker name as a base 10 number."),
                Ok(id) if id < 0 => return invalid("Invalid negative broker ID."),
                Ok(id) => Some(id),
            },
            CONFIG_RESOURCE_GROUP if resource_name.is_empty() => {
                return invalid("Default group resources are not allowed.")
            }
            CONFIG_RESOURCE_CLIENT_METRICS if resource_name.is_empty() => {
                return invalid("Subscription name can't be empty")
            }
            _ => None,
        };
        self.config_validator
            .validate(resource_type, resource_name, resulting, existing)
            .map_err(|r| (r.error.code(), r.message))?;
        if resource_type == CONFIG_RESOURCE_TOPIC && image.topic_by_name(resource_name).is_none() {
            return Err(error(
                ResponseError::UnknownTopicOrPartition,
                format!("The topic '{resource_name}' does not exist."),
            ));
        }
        // A controller's configs live in the log too (Kafka accepts any quorum voter's id).
        if let Some(id) = broker_id {
            if image.broker(id).is_none() && !image.controllers().contains_key(&id) {
                return Err(error(
                    ResponseError::BrokerIdNotRegistered,
                    format!("No node with id {id} found."),
                ));
            }
        }
        Ok(())
    }
}

/// Runs each resource's change (the closure) unless the resource is named more than once, and
/// gathers the records and one result per resource, in request order.
fn alter_each<'a, F>(
    resources: impl Iterator<Item = (ResourceKey<'a>, F)> + Clone,
    validate_only: bool,
) -> Result<(Vec<MetadataRecord>, Vec<AlterConfigsResult>), ControllerError>
where
    F: FnOnce() -> Result<Vec<MetadataRecord>, Refusal>,
{
    let mut counts: HashMap<ResourceKey<'a>, usize> = HashMap::new();
    for (key, _) in resources.clone() {
        *counts.entry(key).or_insert(0) += 1;
    }
    let mut records = Vec::new();
    let mut results = Vec::new();
    for ((resource_type, resource_name), alter) in resources {
        let outcome = if counts[&(resource_type, resource_name)] > 1 {
            Err(duplicate_resource())
        } else {
            alter()
        };
        let (error_code, error_message) = match outcome {
            Ok(r) => {
                records.extend(r);
                (0, None)
            }
            Err((code, message)) => (code, Some(message)),
        };
        results.push(AlterConfigsResult {
            resource_type,
            resource_name: resource_name.to_owned(),
            error_code,
            error_message,
        });
    }
    // Kafka builds the records in a list bounded by `MAX_RECORDS_PER_USER_OP`, also when it
    // only validates.
    if records.len() > MAX_RECORDS_PER_USER_OP {
        return Err(ControllerError::BatchTooLarge {
            records: records.len(),
        });
    }
    if validate_only {
        records.clear();
    }
    Ok((records, results))
}

/// Kafka's forwarding broker answers every occurrence of a resource named twice with this.
fn duplicate_resource() -> Refusal {
    error(
        ResponseError::InvalidRequest,
        "Each resource must appear at most once.",
    )
}

fn check_duplicate_keys<'a>(keys: impl Iterator<Item = &'a str>) -> Result<(), Refusal> {
    let mut seen = HashSet::new();
    for k in keys {
        if !seen.insert(k) {
            return Err(error(
                ResponseError::InvalidRequest,
                "Error due to duplicate config keys",
            ));
        }
    }
    Ok(())
}

fn check_null_values<'a>(null_keys: impl Iterator<Item = &'a str>) -> Result<(), Refusal> {
    let nulls: Vec<&str> = null_keys.collect();
    if nulls.is_empty() {
        return Ok(());
    }
    Err(error(
        ResponseError::InvalidRequest,
        format!("Null value not supported for : {}", nulls.join(", ")),
    ))
}

fn check_resource_type(resource_type: i8) -> Result<(), Refusal> {
    match resource_type {
        CONFIG_RESOURCE_TOPIC
        | CONFIG_RESOURCE_BROKER
        | CONFIG_RESOURCE_CLIENT_METRICS
        | CONFIG_RESOURCE_GROUP => Ok(()),
        other => Err(error(
            ResponseError::InvalidRequest,
            format!("Unknown resource type {other}"),
        )),
    }
}

fn config_record(
    resource_type: i8,
    resource_name: &str,
    key: &str,
    value: Option<String>,
) -> MetadataRecord {
    ConfigRecord {
        resource_type,
        resource_name: resource_name.to_owned(),
        name: key.to_owned(),
        value,
        ..Default::default()
    }
    .into()
}

/// Java's `String.split(",")`, which Kafka applies to APPEND and SUBTRACT values: trailing empty
/// parts are dropped, but a string without a comma is itself (so "" is one empty part).
pub(super) fn java_split(s: &str) -> Vec<&str> {
    if !s.contains(',') {
        return vec![s];
    }
    let mut parts: Vec<&str> = s.split(',').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// APPEND or SUBTRACT `values` to or from the list `base` (Kafka's `getParts`: the current
/// value's non-empty parts), joined back with commas.
fn alter_list(base: Option<&str>, values: &[&str], op: AlterConfigOp) -> String {
    let mut list: Vec<&str> = base
        .map(|b| b.split(',').filter(|p| !p.is_empty()).collect())
        .unwrap_or_default();
    for v in values {
        match op {
            AlterConfigOp::Append if !list.contains(v) => list.push(v),
            // Java's `List.remove(Object)`: the first occurrence only.
            AlterConfigOp::Subtract => {
                if let Some(i) = list.iter().position(|x| x == v) {
                    list.remove(i);
                }
            }
            _ => {}
        }
    }
    list.join(",")
}
