//! BrokerRegistration and BrokerHeartbeat (KIP-631) as Kafka's wire structs: what a broker
//! sends the active controller over its controller listener, and the answers. UnregisterBroker
//! too, which a broker forwards for an admin client (`kafka-cluster.sh unregister`).

use kafka_protocol::messages::broker_registration_request::{Feature, Listener};
use kafka_protocol::messages::{
    AllocateProducerIdsRequest, AllocateProducerIdsResponse, ApiKey,
    BrokerHeartbeatRequest as KHeartbeat, BrokerHeartbeatResponse, BrokerId,
    BrokerRegistrationRequest as KRegistration, BrokerRegistrationResponse, ProducerId,
    RequestKind, ResponseKind, UnregisterBrokerRequest, UnregisterBrokerResponse,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::{
    BrokerHeartbeatReply, BrokerHeartbeatRequest, BrokerRegistrationReply,
    BrokerRegistrationRequest, ProducerIdsBlock,
};
use samsa_cluster::metadata::records::{BrokerEndpoint, BrokerFeature};

use super::active::{ControllerReply, ControllerRequest, ControllerResult, ReplyError};

/// Kafka 4.x's versions: BrokerRegistration v4 (log directories, previous epoch), heartbeat v1.
pub const REGISTRATION_VERSION: i16 = 4;
pub const HEARTBEAT_VERSION: i16 = 1;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A request as the Kafka request to send to the active controller.
pub fn to_kafka(request: &ControllerRequest) -> (ApiKey, i16, RequestKind) {
    match request {
        ControllerRequest::RegisterBroker(r) => {
            let mut k = KRegistration::default();
            k.broker_id = BrokerId(r.broker_id);
            k.cluster_id = s(&r.cluster_id);
            k.incarnation_id = r.incarnation_id;
            k.listeners = r
                .listeners
                .iter()
                .map(|l| {
                    let mut x = Listener::default();
                    x.name = s(&l.name);
                    x.host = s(&l.host);
                    x.port = l.port;
                    x.security_protocol = l.security_protocol;
                    x
                })
                .collect();
            k.features = r
                .features
                .iter()
                .map(|f| {
                    let mut x = Feature::default();
                    x.name = s(&f.name);
                    x.min_supported_version = f.min_supported_version;
                    x.max_supported_version = f.max_supported_version;
                    x
                })
                .collect();
            k.rack = r.rack.as_deref().map(s);
            k.is_migrating_zk_broker = r.is_migrating_zk_broker;
            k.log_dirs = r.log_dirs.clone();
            k.previous_broker_epoch = -1;
            (
                ApiKey::BrokerRegistration,
                REGISTRATION_VERSION,
                RequestKind::BrokerRegistration(k),
            )
        }
        ControllerRequest::BrokerHeartbeat(r) => {
            let mut k = KHeartbeat::default();
            k.broker_id = BrokerId(r.broker_id);
            k.broker_epoch = r.broker_epoch;
            k.current_metadata_offset = r.current_metadata_offset;
            k.want_fence = r.want_fence;
            k.want_shut_down = r.want_shut_down;
            (
                ApiKey::BrokerHeartbeat,
                HEARTBEAT_VERSION,
                RequestKind::BrokerHeartbeat(k),
            )
        }
        ControllerRequest::AllocateProducerIds {
            broker_id,
            broker_epoch,
        } => {
            let mut k = AllocateProducerIdsRequest::default();
            k.broker_id = BrokerId(*broker_id);
            k.broker_epoch = *broker_epoch;
            (
                ApiKey::AllocateProducerIds,
                0,
                RequestKind::AllocateProducerIds(k),
            )
        }
        ControllerRequest::UnregisterBroker { broker_id } => {
            let mut k = UnregisterBrokerRequest::default();
            k.broker_id = BrokerId(*broker_id);
            (
                ApiKey::UnregisterBroker,
                0,
                RequestKind::UnregisterBroker(k),
            )
        }
        ControllerRequest::AlterPartition(r) => super::partition_rpcs::to_kafka(r),
        ControllerRequest::ElectLeaders(r) => super::partition_rpcs::elect_leaders_to_kafka(r),
        ControllerRequest::AlterPartitionReassignments(r) => super::reassignment_rpcs::to_kafka(r),
        ControllerRequest::AlterClientQuotas {
            alterations,
            validate_only,
        } => super::quota_rpcs::to_kafka(alterations, *validate_only),
        other => super::topic_rpcs::to_kafka(other)
            .or_else(|| super::admin_rpcs::to_kafka(other))
            .expect("a topic or admin request"),
    }
}

/// A received Kafka request for the active controller.
pub fn from_kafka(body: RequestKind) -> Option<ControllerRequest> {
    match body {
        RequestKind::BrokerRegistration(k) => Some(ControllerRequest::RegisterBroker(
            BrokerRegistrationRequest {
                broker_id: k.broker_id.0,
                cluster_id: k.cluster_id.to_string(),
                incarnation_id: k.incarnation_id,
                listeners: k
                    .listeners
                    .iter()
                    .map(|l| BrokerEndpoint {
                        name: l.name.to_string(),
                        host: l.host.to_string(),
                        port: l.port,
                        security_protocol: l.security_protocol,
                        unknown_tagged_fields: Default::default(),
                    })
                    .collect(),
                features: k
                    .features
                    .iter()
                    .map(|f| BrokerFeature {
                        name: f.name.to_string(),
                        min_supported_version: f.min_supported_version,
                        max_supported_version: f.max_supported_version,
                        unknown_tagged_fields: Default::default(),
                    })
                    .collect(),
                rack: k.rack.as_ref().map(|r| r.to_string()),
                is_migrating_zk_broker: k.is_migrating_zk_broker,
                log_dirs: k.log_dirs.clone(),
            },
        )),
        RequestKind::BrokerHeartbeat(k) => {
            Some(ControllerRequest::BrokerHeartbeat(BrokerHeartbeatRequest {
                broker_id: k.broker_id.0,
                broker_epoch: k.broker_epoch,
                current_metadata_offset: k.current_metadata_offset,
                want_fence: k.want_fence,
                want_shut_down: k.want_shut_down,
            }))
        }
        RequestKind::AllocateProducerIds(k) => Some(ControllerRequest::AllocateProducerIds {
            broker_id: k.broker_id.0,
            broker_epoch: k.broker_epoch,
        }),
        RequestKind::UnregisterBroker(k) => Some(ControllerRequest::UnregisterBroker {
            broker_id: k.broker_id.0,
        }),
        body @ (RequestKind::IncrementalAlterConfigs(_)
        | RequestKind::AlterConfigs(_)
        | RequestKind::CreateAcls(_)
        | RequestKind::DeleteAcls(_)
        | RequestKind::AlterUserScramCredentials(_)
        | RequestKind::UpdateFeatures(_)) => super::admin_rpcs::from_kafka(body),
        RequestKind::AlterClientQuotas(k) => Some(super::quota_rpcs::from_kafka(k)),
        body => super::topic_rpcs::from_kafka(body),
    }
}

/// The answer as the Kafka response to `key` (`request`: what was asked).
pub fn response_to_kafka(
    key: ApiKey,
    request: &ControllerRequest,
    result: &ControllerResult,
) -> ResponseKind {
    match key {
        ApiKey::CreateTopics | ApiKey::DeleteTopics | ApiKey::CreatePartitions => {
            super::topic_rpcs::response_to_kafka(
                key,
                &super::topic_rpcs::request_topics(request),
                result,
            )
        }
        ApiKey::AlterPartition => super::partition_rpcs::response_to_kafka(result),
        ApiKey::ElectLeaders => {
            let ControllerRequest::ElectLeaders(r) = request else {
                unreachable!("an ElectLeaders answer to {request:?}")
            };
            ResponseKind::ElectLeaders(super::partition_rpcs::elect_leaders_response(
                r,
                result,
                super::partition_rpcs::ELECT_LEADERS_VERSION,
            ))
        }
        ApiKey::AlterPartitionReassignments => {
            let ControllerRequest::AlterPartitionReassignments(r) = request else {
                unreachable!("an AlterPartitionReassignments answer to {request:?}")
            };
            ResponseKind::AlterPartitionReassignments(super::reassignment_rpcs::response(
                r,
                result,
                super::reassignment_rpcs::ALTER_PARTITION_REASSIGNMENTS_VERSION,
            ))
        }
        ApiKey::IncrementalAlterConfigs
        | ApiKey::AlterConfigs
        | ApiKey::CreateAcls
        | ApiKey::DeleteAcls
        | ApiKey::AlterUserScramCredentials
        | ApiKey::UpdateFeatures => super::admin_rpcs::response_to_kafka(key, request, result),
        ApiKey::AlterClientQuotas => {
            let ControllerRequest::AlterClientQuotas { alterations, .. } = request else {
                unreachable!("an AlterClientQuotas answer to {request:?}")
            };
            ResponseKind::AlterClientQuotas(super::quota_rpcs::response_to_kafka(
                alterations,
                result,
            ))
        }
        ApiKey::UnregisterBroker => ResponseKind::UnregisterBroker(unregister_response(result)),
        ApiKey::AllocateProducerIds => {
            let mut r = AllocateProducerIdsResponse::default();
            match result {
                Ok(ControllerReply::AllocateProducerIds(b)) => {
                    r.producer_id_start = ProducerId(b.first_producer_id);
                    r.producer_id_len = b.size;
                }
                Ok(_) => r.error_code = kafka_protocol::ResponseError::UnknownServerError.code(),
                Err(ReplyError { code, .. }) => {
                    r.error_code = *code;
                    r.producer_id_start = ProducerId(-1);
                }
            }
            ResponseKind::AllocateProducerIds(r)
        }
        ApiKey::BrokerRegistration => {
            let mut r = BrokerRegistrationResponse::default();
            match result {
                Ok(ControllerReply::RegisterBroker(x)) => r.broker_epoch = x.broker_epoch,
                Ok(_) => r.error_code = kafka_protocol::ResponseError::UnknownServerError.code(),
                Err(ReplyError { code, .. }) => {
                    r.error_code = *code;
                    r.broker_epoch = -1;
                }
            }
            ResponseKind::BrokerRegistration(r)
        }
        _ => {
            debug_assert_eq!(key, ApiKey::BrokerHeartbeat);
            let mut r = BrokerHeartbeatResponse::default();
            match result {
                Ok(ControllerReply::BrokerHeartbeat(x)) => {
                    r.is_caught_up = x.is_caught_up;
                    r.is_fenced = x.is_fenced;
                    r.should_shut_down = x.should_shut_down;
                }
                Ok(_) => r.error_code = kafka_protocol::ResponseError::UnknownServerError.code(),
                Err(ReplyError { code, .. }) => {
                    r.error_code = *code;
                    r.is_fenced = true;
                }
            }
            ResponseKind::BrokerHeartbeat(r)
        }
    }
}

/// UnregisterBroker's answer: the error and its message (Kafka's controller sends the message
/// of the exception, null on success).
pub fn unregister_response(result: &ControllerResult) -> UnregisterBrokerResponse {
    let mut r = UnregisterBrokerResponse::default();
    match result {
        Ok(ControllerReply::UnregisterBroker) => r.error_message = None,
        Ok(_) => r.error_code = kafka_protocol::ResponseError::UnknownServerError.code(),
        Err(ReplyError { code, message }) => {
            r.error_code = *code;
            r.error_message = Some(s(message));
        }
    }
    r
}

/// The active controller's Kafka response as the answer.
pub fn response_from_kafka(body: ResponseKind) -> ControllerResult {
    let failed = |code: i16| {
        Err(ReplyError::new(
            code,
            kafka_protocol::ResponseError::try_from_code(code)
                .map(|e| format!("{e:?}"))
                .unwrap_or_else(|| format!("error {code}")),
        ))
    };
    match body {
        ResponseKind::BrokerRegistration(r) if r.error_code != 0 => failed(r.error_code),
        ResponseKind::BrokerRegistration(r) => {
            Ok(ControllerReply::RegisterBroker(BrokerRegistrationReply {
                broker_epoch: r.broker_epoch,
            }))
        }
        ResponseKind::AlterPartition(r) => super::partition_rpcs::response_from_kafka(r),
        ResponseKind::ElectLeaders(r) => {
            super::partition_rpcs::elect_leaders_response_from_kafka(r)
        }
        ResponseKind::AlterPartitionReassignments(r) => {
            super::reassignment_rpcs::response_from_kafka(r)
        }
        ResponseKind::AlterClientQuotas(r) => super::quota_rpcs::response_from_kafka(r),
        ResponseKind::AllocateProducerIds(r) if r.error_code != 0 => failed(r.error_code),
        ResponseKind::AllocateProducerIds(r) => {
            Ok(ControllerReply::AllocateProducerIds(ProducerIdsBlock {
                first_producer_id: r.producer_id_start.0,
                size: r.producer_id_len,
            }))
        }
        ResponseKind::UnregisterBroker(r) if r.error_code != 0 => match r.error_message {
            Some(message) => Err(ReplyError::new(r.error_code, message.to_string())),
            None => failed(r.error_code),
        },
        ResponseKind::UnregisterBroker(_) => Ok(ControllerReply::UnregisterBroker),
        ResponseKind::BrokerHeartbeat(r) if r.error_code != 0 => failed(r.error_code),
        ResponseKind::BrokerHeartbeat(r) => {
            Ok(ControllerReply::BrokerHeartbeat(BrokerHeartbeatReply {
                is_caught_up: r.is_caught_up,
                is_fenced: r.is_fenced,
                in_controlled_shutdown: false,
                should_shut_down: r.should_shut_down,
            }))
        }
        body @ (ResponseKind::IncrementalAlterConfigs(_)
        | ResponseKind::AlterConfigs(_)
        | ResponseKind::CreateAcls(_)
        | ResponseKind::DeleteAcls(_)
        | ResponseKind::AlterUserScramCredentials(_)
        | ResponseKind::UpdateFeatures(_)) => super::admin_rpcs::response_from_kafka(body)
            .unwrap_or_else(|| Err(ReplyError::new(-1, "an answer of the wrong type".into()))),
        body => super::topic_rpcs::response_from_kafka(body)
            .unwrap_or_else(|| Err(ReplyError::new(-1, "an answer of the wrong type".into()))),
    }
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

    /// UnregisterBroker as a broker forwards it and reads the controller's answer back: the
    /// id, and the refusal with its message (which Kafka's admin client shows).
    #[test]
    fn unregister_broker_goes_to_the_controller_and_back() {
        let request = ControllerRequest::UnregisterBroker { broker_id: 7 };
        let (key, version, body) = to_kafka(&request);
        assert_eq!((key, version), (ApiKey::UnregisterBroker, 0));
        let RequestKind::UnregisterBroker(body) = body else {
            unreachable!()
        };
        let decoded = from_kafka(RequestKind::UnregisterBroker(wire(body, version)));
        assert!(matches!(
            decoded,
            Some(ControllerRequest::UnregisterBroker { broker_id: 7 })
        ));
        let back = |result: ControllerResult| {
            let ResponseKind::UnregisterBroker(r) = response_to_kafka(key, &request, &result)
            else {
                unreachable!()
            };
            let r = wire(r, version);
            let message = r.error_message.as_ref().map(|m| m.to_string());
            (
                response_from_kafka(ResponseKind::UnregisterBroker(r)),
                message,
            )
        };
        let (ok, message) = back(Ok(ControllerReply::UnregisterBroker));
        assert!(matches!(ok, Ok(ControllerReply::UnregisterBroker)));
        assert_eq!(message, None);
        let refused = "Broker ID 7 is not currently registered".to_string();
        let (err, message) = back(Err(ReplyError::new(102, refused.clone())));
        assert_eq!(err.unwrap_err(), ReplyError::new(102, refused.clone()));
        assert_eq!(message, Some(refused));
    }
}
