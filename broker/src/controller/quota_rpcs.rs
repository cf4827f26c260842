//! AlterClientQuotas as the active controller takes it: the Kafka request a broker forwards
//! to the leader's controller listener, and the answer, mapped to and from the controller's
//! own types. A request refused whole (NOT_CONTROLLER, REQUEST_TIMED_OUT) answers every entity
//! with that code, as Kafka does; read back, an answer whose every entity is NOT_CONTROLLER is
//! the whole request's, so that the forwarding broker asks again.

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as RespEntity, EntryData as RespEntry,
};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, RequestKind,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::{AlterClientQuotaResult, ClientQuotaAlteration, ClientQuotaOp};

use super::active::NOT_CONTROLLER;
use super::active::{ControllerReply, ControllerRequest, ControllerResult, ReplyError};

/// The version a broker forwards (Kafka 4's, flexible).
pub const ALTER_CLIENT_QUOTAS_VERSION: i16 = 1;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The request a broker forwards.
pub fn to_kafka(
    alterations: &[ClientQuotaAlteration],
    validate_only: bool,
) -> (ApiKey, i16, RequestKind) {
    let mut k = AlterClientQuotasRequest::default();
    k.validate_only = validate_only;
    k.entries = alterations
        .iter()
        .map(|a| {
            let mut e = EntryData::default();
            e.entity = a
                .entity
                .iter()
                .map(|(t, n)| {
                    let mut d = EntityData::default();
                    d.entity_type = s(t);
                    d.entity_name = n.as_deref().map(s);
                    d
                })
                .collect();
            e.ops = a
                .ops
                .iter()
                .map(|o| {
                    let mut op = OpData::default();
                    op.key = s(&o.key);
                    op.value = o.value;
                    op.remove = o.remove;
                    op
                })
                .collect();
            e
        })
        .collect();
    (
        ApiKey::AlterClientQuotas,
        ALTER_CLIENT_QUOTAS_VERSION,
        RequestKind::AlterClientQuotas(k),
    )
}

/// A received AlterClientQuotas as the controller's request.
pub fn from_kafka(k: AlterClientQuotasRequest) -> ControllerRequest {
    ControllerRequest::AlterClientQuotas {
        validate_only: k.validate_only,
        alterations: k
            .entries
            .into_iter()
            .map(|e| ClientQuotaAlteration {
                entity: e
                    .entity
                    .into_iter()
                    .map(|d| {
                        (
                            d.entity_type.to_string(),
                            d.entity_name.map(|n| n.to_string()),
                        )
                    })
                    .collect(),
                ops: e
                    .ops
                    .into_iter()
                    .map(|o| ClientQuotaOp {
                        key: o.key.to_string(),
                        value: o.value,
                        remove: o.remove,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The parts of an entity in the order Kafka answers them: its `ClientQuotaEntity` keeps them
/// in a `HashMap` sized for the request's parts, so a client sees them in the order of their
/// type names' hash buckets (`client-id`, then `user`, then `ip`), ties in request order. A
/// one-part entity is as it came.
fn kafka_order(entity: &[(String, Option<String>)]) -> Vec<(String, Option<String>)> {
    fn java_hash(s: &str) -> u32 {
        s.encode_utf16()
            .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)))
    }
    // `HashMap(n)` for 2 or 3 parts ends with a table of 4 buckets.
    let bucket = |t: &str| {
        let h = java_hash(t);
        (h ^ (h >> 16)) & 3
    };
    let mut parts = entity.to_vec();
    if parts.len() > 1 {
        parts.sort_by_key(|(t, _)| bucket(t));
    }
    parts
}

/// The answer to `alterations` (every entity with the whole request's error if it failed
/// whole).
pub fn response_to_kafka(
    alterations: &[ClientQuotaAlteration],
    result: &ControllerResult,
) -> AlterClientQuotasResponse {
    let results: Vec<AlterClientQuotaResult> = match result {
        Ok(ControllerReply::AlterClientQuotas(results)) => results.clone(),
        Ok(other) => unreachable!("an AlterClientQuotas answer, not {other:?}"),
        Err(e) => alterations
            .iter()
            .map(|a| AlterClientQuotaResult {
                entity: a.entity.clone(),
                error_code: e.code,
                error_message: Some(e.message.clone()),
            })
            .collect(),
    };
    let mut r = AlterClientQuotasResponse::default();
    r.entries = results
        .into_iter()
        .map(|x| {
            let mut e = RespEntry::default();
            e.error_code = x.error_code;
            e.error_message = x.error_message.as_deref().map(s);
            e.entity = kafka_order(&x.entity)
                .iter()
                .map(|(t, n)| {
                    let mut d = RespEntity::default();
                    d.entity_type = s(t);
                    d.entity_name = n.as_deref().map(s);
                    d
                })
                .collect();
            e
        })
        .collect();
    r
}

/// The controller's answer as the forwarding broker reads it.
pub fn response_from_kafka(r: AlterClientQuotasResponse) -> ControllerResult {
    if !r.entries.is_empty() && r.entries.iter().all(|e| e.error_code == NOT_CONTROLLER) {
        let message = r.entries[0]
            .error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_else(|| "not the active controller".into());
        return Err(ReplyError::new(NOT_CONTROLLER, message));
    }
    Ok(ControllerReply::AlterClientQuotas(
        r.entries
            .into_iter()
            .map(|e| AlterClientQuotaResult {
                entity: e
                    .entity
                    .into_iter()
                    .map(|d| {
                        (
                            d.entity_type.to_string(),
                            d.entity_name.map(|n| n.to_string()),
                        )
                    })
                    .collect(),
                error_code: e.error_code,
                error_message: e.error_message.map(|m| m.to_string()),
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    fn wire<T: Encodable + Decodable>(value: T, version: i16) -> T {
        let mut buf = bytes::BytesMut::new();
        value.encode(&mut buf, version).unwrap();
        T::decode(&mut buf.freeze(), version).unwrap()
    }

    #[test]
    fn a_forwarded_alteration_and_its_answer_survive_the_wire() {
        let alterations = vec![ClientQuotaAlteration {
            entity: vec![
                ("user".into(), Some("alice".into())),
                ("client-id".into(), None),
            ],
            ops: vec![
                ClientQuotaOp {
                    key: "producer_byte_rate".into(),
                    value: 1024.0,
                    remove: false,
                },
                ClientQuotaOp {
                    key: "request_percentage".into(),
                    value: 0.0,
                    remove: true,
                },
            ],
        }];
        let (_, version, body) = to_kafka(&alterations, true);
        let RequestKind::AlterClientQuotas(k) = body else {
            unreachable!()
        };
        let ControllerRequest::AlterClientQuotas {
            alterations: back,
            validate_only,
        } = from_kafka(wire(k, version))
        else {
            unreachable!()
        };
        assert_eq!(back, alterations);
        assert!(validate_only);
        let refused: ControllerResult = Err(ReplyError::new(
            NOT_CONTROLLER,
            "not the active controller".into(),
        ));
        let answer = wire(response_to_kafka(&alterations, &refused), version);
        assert_eq!(
            response_from_kafka(answer).unwrap_err().code,
            NOT_CONTROLLER,
            "a whole refusal is read back as one"
        );
        let done: ControllerResult = Ok(ControllerReply::AlterClientQuotas(vec![
            AlterClientQuotaResult {
                entity: alterations[0].entity.clone(),
                error_code: 42,
                error_message: Some("Invalid configuration key x".into()),
            },
        ]));
        let Ok(ControllerReply::AlterClientQuotas(results)) =
            response_from_kafka(wire(response_to_kafka(&alterations, &done), version))
        else {
            unreachable!()
        };
        assert_eq!(
            results[0].error_message.as_deref(),
            Some("Invalid configuration key x")
        );
        assert_eq!(results[0].entity, kafka_order(&alterations[0].entity));
    }

    #[test]
    fn entity_parts_are_answered_in_kafkas_hash_order() {
        let e = |parts: &[&str]| -> Vec<(String, Option<String>)> {
            parts.iter().map(|t| (t.to_string(), None)).collect()
        };
        let types = |v: Vec<(String, Option<String>)>| -> Vec<String> {
            v.into_iter().map(|(t, _)| t).collect()
        };
        assert_eq!(
            types(kafka_order(&e(&["user", "client-id"]))),
            ["client-id", "user"]
        );
        assert_eq!(types(kafka_order(&e(&["ip", "user"]))), ["user", "ip"]);
        assert_eq!(types(kafka_order(&e(&["group", "ip"]))), ["group", "ip"]);
    }
}
