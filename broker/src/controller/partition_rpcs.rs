//! AlterPartition (KIP-497, v3 with KIP-903's broker epochs) as Kafka's wire structs: what a
//! partition leader sends the active controller to shrink or expand an ISR, and the answer.

use kafka_protocol::messages::alter_partition_request::{
    BrokerState, PartitionData as KPartition, TopicData as KTopic,
};
use kafka_protocol::messages::alter_partition_response::{
    PartitionData as KPartitionResult, TopicData as KTopicResult,
};
use kafka_protocol::messages::{
    AlterPartitionRequest as KRequest, AlterPartitionResponse, ApiKey, BrokerId, RequestKind,
    ResponseKind,
};
use samsa_cluster::controller::{
    AlterPartitionData, AlterPartitionPartitionResult, AlterPartitionRequest, AlterPartitionTopic,
    AlterPartitionTopicResult,
};
use samsa_cluster::partition_change::IsrMember;

use super::active::{ControllerReply, ControllerRequest, ControllerResult};

/// Kafka 4.x's version: topics by id, ISR members with their broker epochs.
pub const ALTER_PARTITION_VERSION: i16 = 3;

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
        Err((code, _)) => r.error_code = *code,
    }
    ResponseKind::AlterPartition(r)
}

/// The active controller's response as the answer.
pub fn response_from_kafka(r: AlterPartitionResponse) -> ControllerResult {
    if r.error_code != 0 {
        return Err((
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
        let back = response_from_kafka(r).unwrap();
        assert_eq!(format!("{back:?}"), format!("{:?}", answer.unwrap()));
    }
}
