//! AlterPartitionReassignments (KIP-455, v1 with KIP-860's `allow_replication_factor_change`)
//! as Kafka's wire structs: what a broker forwards to the active controller, what the
//! controller listener receives, and the answers both ways.

use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition as KPartition, ReassignableTopic as KTopic,
};
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest as KRequest, AlterPartitionReassignmentsResponse, ApiKey,
    BrokerId, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::{
    AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic,
    ReassignmentResult, ReassignmentTopicResult,
};

use super::active::{ControllerReply, ControllerResult, ReplyError};

/// The version a broker forwards in (Kafka 4.x's latest).
pub const ALTER_PARTITION_REASSIGNMENTS_VERSION: i16 = 1;
/// How long the controller may take, as a forwarding broker tells it.
const TIMEOUT_MS: i32 = 30_000;

/// The request as Kafka's, to send to the active controller.
pub fn to_kafka(r: &AlterPartitionReassignmentsRequest) -> (ApiKey, i16, RequestKind) {
    let mut k = KRequest::default();
    k.timeout_ms = TIMEOUT_MS;
    k.allow_replication_factor_change = r.allow_replication_factor_change;
    k.topics = r
        .topics
        .iter()
        .map(|t| {
            let mut x = KTopic::default();
            x.name = TopicName(StrBytes::from_string(t.name.clone()));
            x.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut y = KPartition::default();
                    y.partition_index = p.partition_index;
                    y.replicas = p
                        .replicas
                        .as_ref()
                        .map(|r| r.iter().map(|&b| BrokerId(b)).collect());
                    y
                })
                .collect();
            x
        })
        .collect();
    (
        ApiKey::AlterPartitionReassignments,
        ALTER_PARTITION_REASSIGNMENTS_VERSION,
        RequestKind::AlterPartitionReassignments(k),
    )
}

/// A received request of any version: version 0 has no `allow_replication_factor_change`,
/// which then allows the change (the field's default).
pub fn from_kafka(k: KRequest, version: i16) -> AlterPartitionReassignmentsRequest {
    AlterPartitionReassignmentsRequest {
        allow_replication_factor_change: version < 1 || k.allow_replication_factor_change,
        topics: k
            .topics
            .into_iter()
            .map(|t| ReassignableTopic {
                name: t.name.to_string(),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| ReassignablePartition {
                        partition_index: p.partition_index,
                        replicas: p.replicas.map(|r| r.into_iter().map(|b| b.0).collect()),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The answer as Kafka's response of `version`. A request refused whole (NOT_CONTROLLER, the
/// cluster authorization...) gets the code at the top, with no partitions, as Kafka answers.
pub fn response(
    request: &AlterPartitionReassignmentsRequest,
    result: &ControllerResult,
    version: i16,
) -> AlterPartitionReassignmentsResponse {
    let mut r = AlterPartitionReassignmentsResponse::default();
    r.error_message = None;
    if version >= 1 {
        r.allow_replication_factor_change = request.allow_replication_factor_change;
    }
    match result {
        Ok(ControllerReply::AlterPartitionReassignments(topics)) => {
            r.responses = topics
                .iter()
                .map(|t| {
                    let mut x = ReassignableTopicResponse::default();
                    x.name = TopicName(StrBytes::from_string(t.name.clone()));
                    x.partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let mut y = ReassignablePartitionResponse::default();
                            y.partition_index = p.partition_index;
                            y.error_code = p.error_code;
                            y.error_message = p.error_message.clone().map(StrBytes::from_string);
                            y
                        })
                        .collect();
                    x
                })
                .collect();
        }
        Ok(_) => {
            r.error_code = kafka_protocol::ResponseError::UnknownServerError.code();
            r.error_message = Some(StrBytes::from_static_str(
                "the controller answered another request",
            ));
        }
        Err(ReplyError { code, message }) => {
            r.error_code = *code;
            r.error_message = Some(StrBytes::from_string(message.clone()));
        }
    }
    r
}

/// The active controller's response as the answer: a top-level error is the whole request's
/// (NOT_CONTROLLER among them, so that the forwarding broker asks again).
pub fn response_from_kafka(r: AlterPartitionReassignmentsResponse) -> ControllerResult {
    if r.error_code != 0 {
        let message = r.error_message.map(|m| m.to_string()).unwrap_or_else(|| {
            format!(
                "AlterPartitionReassignments refused: error {}",
                r.error_code
            )
        });
        return Err(ReplyError::new(r.error_code, message));
    }
    Ok(ControllerReply::AlterPartitionReassignments(
        r.responses
            .into_iter()
            .map(|t| ReassignmentTopicResult {
                name: t.name.to_string(),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| ReassignmentResult {
                        partition_index: p.partition_index,
                        error_code: p.error_code,
                        error_message: p.error_message.map(|m| m.to_string()),
                    })
                    .collect(),
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::{Decodable, Encodable};

    #[test]
    fn forwarded_request_and_answer_survive_the_wire() {
        let request = AlterPartitionReassignmentsRequest {
            allow_replication_factor_change: false,
            topics: vec![ReassignableTopic {
                name: "t".into(),
                partitions: vec![
                    ReassignablePartition {
                        partition_index: 0,
                        replicas: Some(vec![2, 3]),
                    },
                    ReassignablePartition {
                        partition_index: 1,
                        replicas: None,
                    },
                ],
            }],
        };
        let (_, version, RequestKind::AlterPartitionReassignments(k)) = to_kafka(&request) else {
            unreachable!()
        };
        let mut buf = bytes::BytesMut::new();
        k.encode(&mut buf, version).unwrap();
        let decoded = KRequest::decode(&mut buf.freeze(), version).unwrap();
        assert_eq!(from_kafka(decoded.clone(), version), request);
        assert!(from_kafka(decoded, 0).allow_replication_factor_change);

        let result: ControllerResult = Ok(ControllerReply::AlterPartitionReassignments(vec![
            ReassignmentTopicResult {
                name: "t".into(),
                partitions: vec![ReassignmentResult {
                    partition_index: 0,
                    error_code: 60,
                    error_message: Some("why".into()),
                }],
            },
        ]));
        let answer = response(&request, &result, version);
        let mut buf = bytes::BytesMut::new();
        answer.encode(&mut buf, version).unwrap();
        let back = AlterPartitionReassignmentsResponse::decode(&mut buf.freeze(), version).unwrap();
        let Ok(ControllerReply::AlterPartitionReassignments(topics)) = response_from_kafka(back)
        else {
            panic!("an answer expected")
        };
        assert_eq!(topics[0].partitions[0].error_code, 60);
        let refused = response_from_kafka(response(
            &request,
            &Err(ReplyError::new(41, "no".into())),
            version,
        ));
        assert!(matches!(refused, Err(ReplyError { code: 41, .. })));
    }
}
