//! AlterClientQuotas: Kafka's `ClientQuotaControlManager`; and DescribeClientQuotas as any
//! broker answers it from its image (Kafka's `ClientQuotasImage.describe`).
//!
//! A client quota entity (KIP-546) is a `user`, a `client-id`, a `user` with a `client-id`, or
//! an `ip`; each part named, or `None` for that type's default. Its quotas are
//! `producer_byte_rate` and `consumer_byte_rate` (whole bytes per second), `request_percentage`
//! and `controller_mutation_rate` for users and client ids, `connection_creation_rate` (whole
//! connections per second) for IPs. Each set quota is a `ClientQuotaRecord`; a removal is one
//! with `remove`. An entity refused (bad type, combination, key or value) writes nothing; the
//! others of the request still apply, all in one batch.
//!
//! One difference from Kafka, deliberately: an `ip` entity must be an IP address. Kafka also
//! accepts a host name that resolves (`InetAddress.getByName`); the controller's decisions do
//! no name lookups, which would make a replayed decision depend on the DNS of the moment.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use kafka_protocol::ResponseError;

use super::{Controller, ControllerError};
use crate::metadata::image::{client_quota_record, ClientQuotaEntity, QuotaValue};
use crate::metadata::records::MetadataRecord;
use crate::metadata::MetadataImage;

pub const ENTITY_USER: &str = "user";
pub const ENTITY_CLIENT_ID: &str = "client-id";
pub const ENTITY_IP: &str = "ip";

/// The quota keys (Kafka's `QuotaConfig`).
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// Entities with quotas at most. Kafka has no limit, but every broker keeps every quota in its
/// image.
pub const CLIENT_QUOTA_ENTITIES_MAX: usize = 100_000;

/// The type a quota key's value must have (Kafka's `ConfigDef.Type` of the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueType {
    Double,
    Int,
    Long,
}

/// The value type of each key an entity type may have.
type KeyTypes = fn(&str) -> Option<ValueType>;

fn user_and_client_keys(key: &str) -> Option<ValueType> {
    match key {
        PRODUCER_BYTE_RATE | CONSUMER_BYTE_RATE => Some(ValueType::Long),
        REQUEST_PERCENTAGE | CONTROLLER_MUTATION_RATE => Some(ValueType::Double),
        _ => None,
    }
}

fn ip_keys(key: &str) -> Option<ValueType> {
    (key == CONNECTION_CREATION_RATE).then_some(ValueType::Int)
}

/// One operation of an alteration: set `key` to `value`, or remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientQuotaOp {
    pub key: String,
    pub value: f64,
    pub remove: bool,
}

/// One entry of AlterClientQuotas: an entity as the request lists its parts, and its ops.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientQuotaAlteration {
    pub entity: Vec<(String, Option<String>)>,
    pub ops: Vec<ClientQuotaOp>,
}

/// The answer for one entry, with the entity as the request listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterClientQuotaResult {
    pub entity: Vec<(String, Option<String>)>,
    pub error_code: i16,
    pub error_message: Option<String>,
}

type Refusal = (i16, String);

fn invalid(message: impl Into<String>) -> Refusal {
    (ResponseError::InvalidRequest.code(), message.into())
}

/// Kafka's `ClientQuotaEntity.toString`, for messages.
fn entity_text(entity: &[(String, Option<String>)]) -> String {
    let parts: Vec<String> = entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", parts.join(", "))
}

/// The entity as the image keys it, after Kafka's `validateEntity` and the combination check
/// (`configKeysForEntityType`); with the value type of each key the entity may have.
fn validate_entity(
    entity: &[(String, Option<String>)],
) -> Result<(ClientQuotaEntity, KeyTypes), Refusal> {
    if entity.is_empty() {
        return Err(invalid("Invalid empty client quota entity"));
    }
    let mut validated = ClientQuotaEntity::new();
    for (entity_type, name) in entity {
        if validated.contains_key(entity_type) {
            return Err(invalid(format!(
                "Invalid client quota entity, duplicate entity entry {entity_type}"
            )));
        }
        if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&entity_type.as_str()) {
            return Err(invalid(format!(
                "Unhandled client quota entity type: {entity_type}"
            )));
        }
        validated.insert(entity_type.clone(), name.clone());
        if name.as_deref() == Some("") {
            return Err(invalid(format!("Empty {entity_type} not supported")));
        }
    }
    let has = |t: &str| validated.contains_key(t);
    if has(ENTITY_IP) {
        if has(ENTITY_USER) || has(ENTITY_CLIENT_ID) {
            return Err(invalid(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or \
                 ClientId",
            ));
        }
        if let Some(Some(ip)) = validated.get(ENTITY_IP) {
            if ip.parse::<IpAddr>().is_err() {
                return Err(invalid(format!(
                    "{ip} is not a valid IP or resolvable host."
                )));
            }
        }
        return Ok((validated, ip_keys));
    }
    Ok((validated, user_and_client_keys))
}

/// Kafka's `validateQuotaKeyValue`.
fn validate_value(keys: KeyTypes, key: &str, value: f64) -> Result<(), Refusal> {
    let Some(value_type) = keys(key) else {
        return Err(invalid(format!("Invalid configuration key {key}")));
    };
    if !value.is_finite() {
        return Err(invalid(format!("Quota {key} must be a finite number")));
    }
    if value <= 0.0 {
        return Err(invalid(format!("Quota {key} must be greater than 0")));
    }
    let (max, name) = match value_type {
        ValueType::Double => return Ok(()),
        ValueType::Int => (i32::MAX as f64, "an INT"),
        ValueType::Long => (i64::MAX as f64, "a LONG"),
    };
    if value > max {
        return Err(invalid(format!(
            "Proposed value for {key} is too large for {name}."
        )));
    }
    if (value % 1.0).abs() > 1e-6 {
        return Err(invalid(format!("{key} cannot be a fractional value.")));
    }
    Ok(())
}

fn record(entity: &ClientQuotaEntity, key: &str, value: f64, remove: bool) -> MetadataRecord {
    client_quota_record(entity, key, value, remove).into()
}

impl Controller {
    /// AlterClientQuotas, with Kafka's rules: an entity named twice in one request, or one
    /// key twice for an entity, is INVALID_REQUEST ("Ignoring duplicate entity ...") for that
    /// entity, after what an earlier entry for it wrote; an entity refused writes nothing.
    /// Only changed values are written; removing a key that is not set writes nothing.
    /// `validate_only` decides the same and returns no records.
    pub fn alter_client_quotas(
        &self,
        image: &MetadataImage,
        alterations: &[ClientQuotaAlteration],
        validate_only: bool,
    ) -> Result<(Vec<MetadataRecord>, Vec<AlterClientQuotaResult>), ControllerError> {
        self.check_active()?;
        let current = image.client_quotas();
        let mut records = Vec::new();
        let mut results: Vec<AlterClientQuotaResult> = Vec::new();
        let mut new_entities = 0usize;
        for a in alterations {
            let entity: ClientQuotaEntity = a.entity.iter().cloned().collect();
            // Kafka answers once per entity: a later entry for the same entity replaces the
            // earlier one's answer (not what it wrote).
            let earlier = results
                .iter()
                .position(|r| r.entity.iter().cloned().collect::<ClientQuotaEntity>() == entity);
            let mut duplicate_key = false;
            let mut ops: BTreeMap<&str, Option<f64>> = BTreeMap::new();
            for op in &a.ops {
                if ops.contains_key(op.key.as_str()) {
                    duplicate_key = true;
                } else {
                    ops.insert(&op.key, (!op.remove).then_some(op.value));
                }
            }
            let outcome = if earlier.is_some() || duplicate_key {
                Err(invalid(format!(
                    "Ignoring duplicate entity {}",
                    entity_text(&a.entity)
                )))
            } else {
                self.alter_entity(current, &a.entity, &ops, &mut records, &mut new_entities)
            };
            let (error_code, error_message) = match outcome {
                Ok(()) => (0, None),
                Err((code, message)) => (code, Some(message)),
            };
            let result = AlterClientQuotaResult {
                entity: a.entity.clone(),
                error_code,
                error_message,
            };
            match earlier {
                Some(i) => results[i] = result,
                None => results.push(result),
            }
        }
        if validate_only {
            records.clear();
        }
        Ok((records, results))
    }

    fn alter_entity(
        &self,
        current: &BTreeMap<ClientQuotaEntity, BTreeMap<String, QuotaValue>>,
        entity: &[(String, Option<String>)],
        ops: &BTreeMap<&str, Option<f64>>,
        records: &mut Vec<MetadataRecord>,
        new_entities: &mut usize,
    ) -> Result<(), Refusal> {
        let (validated, keys) = validate_entity(entity)?;
        let existing = current.get(&validated);
        let mut out = Vec::new();
        for (key, value) in ops {
            match value {
                None => {
                    if existing.is_some_and(|q| q.contains_key(*key)) {
                        out.push(record(&validated, key, 0.0, true));
                    }
                }
                Some(v) => {
                    validate_value(keys, key, *v)?;
                    if existing.and_then(|q| q.get(*key)) != Some(&QuotaValue(*v)) {
                        out.push(record(&validated, key, *v, false));
                    }
                }
            }
        }
        if existing.is_none() && !out.is_empty() {
            if current.len() + *new_entities >= CLIENT_QUOTA_ENTITIES_MAX {
                return Err((
                    ResponseError::PolicyViolation.code(),
                    format!(
                        "Samsa keeps at most {CLIENT_QUOTA_ENTITIES_MAX} client quota entities"
                    ),
                ));
            }
            *new_entities += 1;
        }
        records.extend(out);
        Ok(())
    }
}

/// How a DescribeClientQuotas component matches an entity type (the request's `match_type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientQuotaFilterComponent {
    pub entity_type: String,
    pub match_type: i8,
    pub r#match: Option<String>,
}

pub const MATCH_TYPE_EXACT: i8 = 0;
pub const MATCH_TYPE_DEFAULT: i8 = 1;
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// One entity described, its parts by type name, and its quotas by key.
pub type DescribedClientQuota = (ClientQuotaEntity, BTreeMap<String, f64>);

/// DescribeClientQuotas from an image, with Kafka's filter rules (`ClientQuotasImage.describe`):
/// exact names and defaults narrow by type, "specified" asks for the type to be present;
/// `strict` keeps only entities with no other parts; no components and not strict is every
/// entity. A malformed filter is the whole request's error.
pub fn describe_client_quotas(
    image: &MetadataImage,
    components: &[ClientQuotaFilterComponent],
    strict: bool,
) -> Result<Vec<DescribedClientQuota>, (i16, String)> {
    let mut exact: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    let mut specified: BTreeSet<&str> = BTreeSet::new();
    for c in components {
        let t = c.entity_type.as_str();
        if t.is_empty() {
            return Err(invalid("Invalid empty entity type."));
        }
        if exact.contains_key(t) || specified.contains(t) {
            return Err(invalid(format!(
                "Entity type {t} cannot appear more than once in the filter."
            )));
        }
        if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&t) {
            return Err((
                ResponseError::UnsupportedVersion.code(),
                format!("Unsupported entity type {t}"),
            ));
        }
        match c.match_type {
            MATCH_TYPE_EXACT => match &c.r#match {
                None => {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                    ))
                }
                Some(m) => {
                    exact.insert(t, Some(m));
                }
            },
            MATCH_TYPE_DEFAULT => {
                if c.r#match.is_some() {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                    ));
                }
                exact.insert(t, None);
            }
            MATCH_TYPE_SPECIFIED => {
                if c.r#match.is_some() {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match \
                         string.",
                    ));
                }
                specified.insert(t);
            }
            other => return Err(invalid(format!("Unknown match type {other}"))),
        }
    }
    let named = |t: &str| exact.contains_key(t) || specified.contains(t);
    if named(ENTITY_IP) && (named(ENTITY_USER) || named(ENTITY_CLIENT_ID)) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component.",
        ));
    }
    let filtered = !exact.is_empty() || !specified.is_empty();
    if !filtered && strict {
        return Ok(Vec::new());
    }
    let parts = exact.len() + specified.len();
    let matches = |entity: &ClientQuotaEntity| {
        exact
            .iter()
            .all(|(t, name)| entity.get(*t).is_some_and(|n| n.as_deref() == *name))
            && specified.iter().all(|t| entity.contains_key(*t))
            && (!strict || !filtered || entity.len() == parts)
    };
    Ok(image
        .client_quotas()
        .iter()
        .filter(|(entity, _)| matches(entity))
        .map(|(entity, quotas)| {
            (
                entity.clone(),
                quotas.iter().map(|(k, v)| (k.clone(), v.0)).collect(),
            )
        })
        .collect())
}
