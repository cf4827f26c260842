//! AlterPartition (KIP-497, v3 with KIP-903's broker epochs) and ElectLeaders (KIP-460) as
//! Kafka's wire structs: what a partition leader sends the active controller to shrink or
//! expand an ISR, what a broker forwards when a client asks for leader elections, and the
//! answers.

use kafka_protocol::messages::alter_partition_request::{
    BrokerState, PartitionData as KPartition, TopicData as KTopic,
};
use kafka_protocol::messages::alter_partition_response::{
    PartitionData as KPartitionResult, TopicData as KTopicResult,
};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions as KElectTopic;
use kafka_protocol::messages::elect_leaders_response::{
    PartitionResult as KElectPartitionResult, ReplicaElectionResult as KElectTopicResult,
};
use kafka_protocol::messages::{
    AlterPartitionRequest as KRequest, AlterPartitionResponse, ApiKey, BrokerId,
    ElectLeadersRequest as KElectLeadersRequest, ElectLeadersResponse, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::{
    AlterPartitionData, AlterPartitionPartitionResult, AlterPartitionRequest, AlterPartitionTopic,
    AlterPartitionTopicResult, ElectLeadersRequest, ElectLeadersTopic, PartitionElectionResult,
    ReplicaElectionResult, ELECTION_TYPE_PREFERRED,
};
use samsa_cluster::partition_change::IsrMember;

use super::active::{ControllerReply, ControllerRequest, ControllerResult, ReplyError};

/// Kafka 4.x's version: topics by id, ISR members with their broker epochs.
pub const ALTER_PARTITION_VERSION: i16 = 3;
/// The version a broker forwards ElectLeaders in (Kafka 4.x's latest).
pub const ELECT_LEADERS_VERSION: i16 = 2;
/// How long the controller may take, as a forwarding broker tells it.
const ELECT_LEADERS_TIMEOUT_MS: i32 = 30_000;

/// The request as Kafka's, to send to the active controller.
pub fn to_kafka(r: &AlterPartitionRequest) -> (ApiKey, i16, RequestKind) {
    let mut k = KRequest::default();
    k.broker_id = BrokerId(r.broker_id);
    k.broker_epoch = r.broker_epoch;
    k.topics = r
        .topics
        .iter()
        .map(|t| {
            let mut kt = KTopic::default();
            kt.topic_id = t.topic_id;
            kt.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut kp = KPartition::default();
                    kp.partition_index = p.partition_index;
                    kp.leader_epoch = p.leader_epoch;
                    kp.partition_epoch = p.partition_epoch;
                    kp.leader_recovery_state = p.leader_recovery_state;
                    kp.new_isr_with_epochs = p
                        .new_isr
                        .iter()
                        .map(|m| {
                            let mut b = BrokerState::default();
                            b.broker_id = BrokerId(m.broker_id);
                            b.broker_epoch = m.broker_epoch;
                            b
                        })
                        .collect();
                    kp
                })
                .collect();
            kt
        })
        .collect();
    (
        ApiKey::AlterPartition,
        ALTER_PARTITION_VERSION,
        RequestKind::AlterPartition(k),
    )
}

/// A received AlterPartition (v2 names ISR members without epochs, v3 with them).
pub fn from_kafka(k: KRequest, version: i16) -> ControllerRequest {
    ControllerRequest::AlterPartition(AlterPartitionRequest {
        broker_id: k.broker_id.0,
        broker_epoch: k.broker_epoch,
        version,
        topics: k
            .topics
            .into_iter()
            .map(|t| AlterPartitionTopic {
                topic_id: t.topic_id,
                topic_name: String::new(),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| AlterPartitionData {
                        partition_index: p.partition_index,
                        leader_epoch: p.leader_epoch,
                        partition_epoch: p.partition_epoch,
                        leader_recovery_state: p.leader_recovery_state,
                        new_isr: if version >= 3 {
                            p.new_isr_with_epochs
                                .iter()
                                .map(|b| IsrMember {
                                    broker_id: b.broker_id.0,
                                    broker_epoch: b.broker_epoch,
                                })
                                .collect()
                        } else {
                            p.new_isr
                                .iter()
                                .map(|b| IsrMember {
                                    broker_id: b.0,
                                    broker_epoch: -1,
                                })
                                .collect()
                        },
                    })
                    .collect(),
            })
            .collect(),
    })
}

/// The answer as Kafka's response.
pub fn response_to_kafka(result: &ControllerResult) -> ResponseKind {
    let mut r = AlterPartitionResponse::default();
    match result {
        Ok(ControllerReply::AlterPartition(topics)) => {
            r.topics = topics
                .iter()
                .map(|t| {
                    let mut kt = KTopicResult::default();
                    kt.topic_id = t.topic_id;
                    kt.partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let mut kp = KPartitionResult::default();
                            kp.partition_index = p.partition_index;
                            kp.error_code = p.error_code;
                            kp.leader_id = BrokerId(p.leader_id);
                            kp.leader_epoch = p.leader_epoch;
                            kp.isr = p.isr.iter().map(|&b| BrokerId(b)).collect();
                            kp.leader_recovery_state = p.leader_recovery_state;
                            kp.partition_epoch = p.partition_epoch;
                            kp
                        })
                        .collect();
                    kt
                })
                .collect();
        }
        Ok(_) => r.error_code = kafka_protocol::ResponseError::UnknownServerError.code(),
        Err(ReplyError { code, .. }) => r.error_code = *code,
    }
    ResponseKind::AlterPartition(r)
}

/// The active controller's response as the answer.
pub fn response_from_kafka(r: AlterPartitionResponse) -> ControllerResult {
    if r.error_code != 0 {
        return Err(ReplyError::new(
            r.error_code,
            format!("AlterPartition refused: error {}", r.error_code),
        ));
    }
    Ok(ControllerReply::AlterPartition(
        r.topics
            .into_iter()
            .map(|t| AlterPartitionTopicResult {
                topic_id: t.topic_id,
                topic_name: String::new(),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| AlterPartitionPartitionResult {
                        partition_index: p.partition_index,
                        error_code: p.error_code,
                        leader_id: p.leader_id.0,
                        leader_epoch: p.leader_epoch,
                        isr: p.isr.iter().map(|b| b.0).collect(),
                        leader_recovery_state: p.leader_recovery_state,
                        partition_epoch: p.partition_epoch,
                    })
                    .collect(),
            })
            .collect(),
    ))
}

/// An ElectLeaders request as Kafka's, to send to the active controller.
pub fn elect_leaders_to_kafka(r: &ElectLeadersRequest) -> (ApiKey, i16, RequestKind) {
    let mut k = KElectLeadersRequest::default();
    k.election_type = r.election_type;
    k.timeout_ms = ELECT_LEADERS_TIMEOUT_MS;
    k.topic_partitions = r.topic_partitions.as_ref().map(|topics| {
        topics
            .iter()
            .map(|t| {
                let mut x = KElectTopic::default();
                x.topic = TopicName(StrBytes::from_string(t.topic.clone()));
                x.partitions = t.partitions.clone();
                x
            })
            .collect()
    });
    (
        ApiKey::ElectLeaders,
        ELECT_LEADERS_VERSION,
        RequestKind::ElectLeaders(k),
    )
}

/// A received ElectLeaders of any version (v0 has no election type: it is PREFERRED).
pub fn elect_leaders_from_kafka(k: KElectLeadersRequest, version: i16) -> ElectLeadersRequest {
    ElectLeadersRequest {
        election_type: if version == 0 {
            ELECTION_TYPE_PREFERRED
        } else {
            k.election_type
        },
        topic_partitions: k.topic_partitions.map(|topics| {
            topics
                .into_iter()
                .map(|t| ElectLeadersTopic {
                    topic: t.topic.to_string(),
                    partitions: t.partitions,
                })
                .collect()
        }),
    }
}

/// The answer as Kafka's ElectLeaders response of `version`. A request refused whole gets the
/// code at the top (from v1, which has it) and on every partition it named, as Kafka's
/// `ElectLeadersRequest.getErrorResponse` answers.
pub fn elect_leaders_response(
    request: &ElectLeadersRequest,
    result: &ControllerResult,
    version: i16,
) -> ElectLeadersResponse {
    let s = |m: &Option<String>| m.as_ref().map(|m| StrBytes::from_string(m.clone()));
    let topic_result = |topic: &str, partitions: Vec<KElectPartitionResult>| {
        let mut t = KElectTopicResult::default();
        t.topic = TopicName(StrBytes::from_string(topic.to_string()));
        t.partition_result = partitions;
        t
    };
    let partition_result = |p: &PartitionElectionResult| {
        let mut x = KElectPartitionResult::default();
        x.partition_id = p.partition_id;
        x.error_code = p.error_code;
        x.error_message = s(&p.error_message);
        x
    };
    let mut r = ElectLeadersResponse::default();
    match result {
        Ok(ControllerReply::ElectLeaders(topics)) => {
            r.replica_election_results = topics
                .iter()
                .map(|t| {
                    topic_result(
                        &t.topic,
                        t.partitions.iter().map(partition_result).collect(),
                    )
                })
                .collect();
        }
        other => {
            let (code, message) = match other {
                Err(ReplyError { code, message }) => (*code, message.clone()),
                Ok(_) => (
                    kafka_protocol::ResponseError::UnknownServerError.code(),
                    "the controller answered another request".to_string(),
                ),
            };
            if version >= 1 {
                r.error_code = code;
            }
            r.replica_election_results = request
                .topic_partitions
                .iter()
                .flatten()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|&partition_id| {
                            partition_result(&PartitionElectionResult {
                                partition_id,
                                error_code: code,
                                error_message: Some(message.clone()),
                            })
                        })
                        .collect();
                    topic_result(&t.topic, partitions)
                })
                .collect();
        }
    }
    r
}

/// The active controller's ElectLeaders response as the answer: a top-level error is the whole
/// request's (NOT_CONTROLLER among them, so that the forwarding broker asks again).
pub fn elect_leaders_response_from_kafka(r: ElectLeadersResponse) -> ControllerResult {
    if r.error_code != 0 {
        let message = r
            .replica_election_results
            .iter()
            .flat_map(|t| t.partition_result.iter())
            .find_map(|p| p.error_message.as_ref().map(|m| m.to_string()))
            .unwrap_or_else(|| format!("ElectLeaders refused: error {}", r.error_code));
        return Err(ReplyError::new(r.error_code, message));
    }
    Ok(ControllerReply::ElectLeaders(
        r.replica_election_results
            .into_iter()
            .map(|t| ReplicaElectionResult {
                topic: t.topic.to_string(),
                partitions: t
                    .partition_result
                    .into_iter()
                    .map(|p| PartitionElectionResult {
                        partition_id: p.partition_id,
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
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    #[test]
    fn an_isr_change_and_its_answer_survive_the_wire() {
        let request = AlterPartitionRequest {
            broker_id: 2,
            broker_epoch: 17,
            version: ALTER_PARTITION_VERSION,
            topics: vec![AlterPartitionTopic {
                topic_id: uuid::Uuid::from_u64_pair(3, 4),
                topic_name: String::new(),
                partitions: vec![AlterPartitionData {
                    partition_index: 5,
                    leader_epoch: 6,
                    partition_epoch: 7,
                    new_isr: vec![
                        IsrMember {
                            broker_id: 2,
                            broker_epoch: 17,
                        },
                        IsrMember {
                            broker_id: 3,
                            broker_epoch: 21,
                        },
                    ],
                    leader_recovery_state: 0,
                }],
            }],
        };
        let (_, version, RequestKind::AlterPartition(k)) = to_kafka(&request) else {
            panic!()
        };
        let mut buf = bytes::BytesMut::new();
        k.encode(&mut buf, version).unwrap();
        let decoded = KRequest::decode(&mut buf.freeze(), version).unwrap();
        let ControllerRequest::AlterPartition(back) = from_kafka(decoded, version) else {
            panic!()
        };
        assert_eq!(back, request);

        let answer: ControllerResult = Ok(ControllerReply::AlterPartition(vec![
            AlterPartitionTopicResult {
                topic_id: uuid::Uuid::from_u64_pair(3, 4),
                topic_name: String::new(),
                partitions: vec![AlterPartitionPartitionResult {
                    partition_index: 5,
                    error_code: 0,
                    leader_id: 2,
                    leader_epoch: 6,
                    isr: vec![2, 3],
                    leader_recovery_state: 0,
                    partition_epoch: 8,
                }],
            },
        ]));
        let ResponseKind::AlterPartition(r) = response_to_kafka(&answer) else {
            panic!()
        };
        let back = response_from_kafka(r);
        assert_eq!(format!("{back:?}"), format!("{answer:?}"));
    }

    #[test]
    fn an_election_request_and_its_answers_survive_the_wire() {
        let request = ElectLeadersRequest {
            election_type: 1,
            topic_partitions: Some(vec![ElectLeadersTopic {
                topic: "orders".into(),
                partitions: vec![0, 3],
            }]),
        };
        let (_, version, RequestKind::ElectLeaders(k)) = elect_leaders_to_kafka(&request) else {
            panic!()
        };
        let mut buf = bytes::BytesMut::new();
        k.encode(&mut buf, version).unwrap();
        let decoded = KElectLeadersRequest::decode(&mut buf.freeze(), version).unwrap();
        assert_eq!(elect_leaders_from_kafka(decoded.clone(), version), request);
        // Version 0 has no election type: PREFERRED.
        assert_eq!(
            elect_leaders_from_kafka(decoded, 0).election_type,
            ELECTION_TYPE_PREFERRED
        );
        let all = ElectLeadersRequest {
            election_type: 0,
            topic_partitions: None,
        };
        let (_, _, RequestKind::ElectLeaders(k)) = elect_leaders_to_kafka(&all) else {
            panic!()
        };
        let mut buf = bytes::BytesMut::new();
        k.encode(&mut buf, version).unwrap();
        let decoded = KElectLeadersRequest::decode(&mut buf.freeze(), version).unwrap();
        assert_eq!(elect_leaders_from_kafka(decoded, version), all);

        let wire = |r: ElectLeadersResponse| {
            let mut buf = bytes::BytesMut::new();
            r.encode(&mut buf, version).unwrap();
            ElectLeadersResponse::decode(&mut buf.freeze(), version).unwrap()
        };
        let answer: ControllerResult =
            Ok(ControllerReply::ElectLeaders(vec![ReplicaElectionResult {
                topic: "orders".into(),
                partitions: vec![
                    PartitionElectionResult {
                        partition_id: 0,
                        error_code: 0,
                        error_message: None,
                    },
                    PartitionElectionResult {
                        partition_id: 3,
                        error_code: 84,
                        error_message: Some("not needed".into()),
                    },
                ],
            }]));
        let back = elect_leaders_response_from_kafka(wire(elect_leaders_response(
            &request, &answer, version,
        )));
        assert_eq!(format!("{back:?}"), format!("{answer:?}"));
        // Refused whole: the code at the top and on each partition named; read back as the
        // whole request's, so that NOT_CONTROLLER is asked again.
        let refused: ControllerResult = Err(ReplyError::new(41, "no leader".into()));
        let r = wire(elect_leaders_response(&request, &refused, version));
        assert_eq!(r.error_code, 41);
        assert!(r.replica_election_results[0]
            .partition_result
            .iter()
            .all(|p| p.error_code == 41));
        assert!(matches!(
            elect_leaders_response_from_kafka(r),
            Err(ReplyError { code: 41, message: m }) if m == "no leader"
        ));
        let v0 = elect_leaders_response(&request, &refused, 0);
        assert_eq!(v0.error_code, 0, "version 0 has no top-level error code");
    }
}
