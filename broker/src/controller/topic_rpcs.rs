//! CreateTopics, DeleteTopics and CreatePartitions as the active controller takes them: the
//! Kafka requests a broker forwards to the leader's controller listener (the versions Kafka
//! 4.x brokers send), and the answers, mapped to and from the controller's own types.

use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic as KPartitionsTopic,
};
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic as KTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::{
    CreatableTopic, CreatePartitionsResult, CreatePartitionsTopic, CreateTopicResult,
    DeleteTopicResult, TopicRef,
};

use super::active::{ControllerReply, ControllerRequest, ControllerResult, ReplyError};

pub const CREATE_TOPICS_VERSION: i16 = 7;
pub const DELETE_TOPICS_VERSION: i16 = 6;
pub const CREATE_PARTITIONS_VERSION: i16 = 3;
/// The tagged field of a forwarded `CreatableTopic` that carries [`CreatableTopic::topic_id`]
/// (Samsa's own; Kafka's schema has none, and a Kafka controller would skip it).
const TOPIC_ID_TAG: i32 = 10_000;
/// How long the controller may take, as a forwarding broker tells it.
const TIMEOUT_MS: i32 = 30_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn name(v: &str) -> TopicName {
    TopicName(s(v))
}

/// A topic request as the Kafka request to send to the active controller (`None` for the
/// other requests).
pub fn to_kafka(request: &ControllerRequest) -> Option<(ApiKey, i16, RequestKind)> {
    Some(match request {
        ControllerRequest::CreateTopics {
            topics,
            validate_only,
        } => {
            let mut k = CreateTopicsRequest::default();
            k.timeout_ms = TIMEOUT_MS;
            k.validate_only = *validate_only;
            k.topics = topics
                .iter()
                .map(|t| {
                    let mut x = KTopic::default();
                    x.name = name(&t.name);
                    x.num_partitions = t.num_partitions;
                    x.replication_factor = t.replication_factor;
                    x.assignments = t
                        .assignments
                        .iter()
                        .map(|(p, brokers)| {
                            let mut a = CreatableReplicaAssignment::default();
                            a.partition_index = *p;
                            a.broker_ids = brokers.iter().map(|&b| BrokerId(b)).collect();
                            a
                        })
                        .collect();
                    x.configs = t
                        .configs
                        .iter()
                        .map(|(n, v)| {
                            let mut c = CreatableTopicConfig::default();
                            c.name = s(n);
                            c.value = v.as_deref().map(s);
                            c
                        })
                        .collect();
                    if let Some(id) = t.topic_id {
                        x.unknown_tagged_fields
                            .insert(TOPIC_ID_TAG, bytes::Bytes::copy_from_slice(id.as_bytes()));
                    }
                    x
                })
                .collect();
            (
                ApiKey::CreateTopics,
                CREATE_TOPICS_VERSION,
                RequestKind::CreateTopics(k),
            )
        }
        ControllerRequest::DeleteTopics(topics) => {
            let mut k = DeleteTopicsRequest::default();
            k.timeout_ms = TIMEOUT_MS;
            k.topics = topics
                .iter()
                .map(|t| {
                    let mut x = DeleteTopicState::default();
                    match t {
                        TopicRef::Name(n) => x.name = Some(name(n)),
                        TopicRef::Id(id) => x.topic_id = *id,
                    }
                    x
                })
                .collect();
            (
                ApiKey::DeleteTopics,
                DELETE_TOPICS_VERSION,
                RequestKind::DeleteTopics(k),
            )
        }
        ControllerRequest::CreatePartitions {
            topics,
            validate_only,
        } => {
            let mut k = CreatePartitionsRequest::default();
            k.timeout_ms = TIMEOUT_MS;
            k.validate_only = *validate_only;
            k.topics = topics
                .iter()
                .map(|t| {
                    let mut x = KPartitionsTopic::default();
                    x.name = name(&t.name);
                    x.count = t.count;
                    x.assignments = t.assignments.as_ref().map(|a| {
                        a.iter()
                            .map(|brokers| {
                                let mut y = CreatePartitionsAssignment::default();
                                y.broker_ids = brokers.iter().map(|&b| BrokerId(b)).collect();
                                y
                            })
                            .collect()
                    });
                    x
                })
                .collect();
            (
                ApiKey::CreatePartitions,
                CREATE_PARTITIONS_VERSION,
                RequestKind::CreatePartitions(k),
            )
        }
        _ => return None,
    })
}

/// A received topic request for the active controller, of any version.
pub fn from_kafka(body: RequestKind) -> Option<ControllerRequest> {
    Some(match body {
        RequestKind::CreateTopics(k) => ControllerRequest::CreateTopics {
            validate_only: k.validate_only,
            topics: k
                .topics
                .into_iter()
                .map(|t| CreatableTopic {
                    name: t.name.to_string(),
                    num_partitions: t.num_partitions,
                    replication_factor: t.replication_factor,
                    assignments: t
                        .assignments
                        .into_iter()
                        .map(|a| {
                            (
                                a.partition_index,
                                a.broker_ids.into_iter().map(|b| b.0).collect(),
                            )
                        })
                        .collect(),
                    configs: t
                        .configs
                        .into_iter()
                        .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                        .collect(),
                    topic_id: t
                        .unknown_tagged_fields
                        .get(&TOPIC_ID_TAG)
                        .and_then(|b| uuid::Uuid::from_slice(b).ok()),
                })
                .collect(),
        },
        RequestKind::DeleteTopics(k) => {
            let mut topics: Vec<TopicRef> = k
                .topic_names
                .into_iter()
                .map(|n| TopicRef::Name(n.to_string()))
                .collect();
            topics.extend(k.topics.into_iter().map(|t| match t.name {
                Some(n) => TopicRef::Name(n.to_string()),
                None => TopicRef::Id(t.topic_id),
            }));
            ControllerRequest::DeleteTopics(topics)
        }
        RequestKind::CreatePartitions(k) => ControllerRequest::CreatePartitions {
            validate_only: k.validate_only,
            topics: k
                .topics
                .into_iter()
                .map(|t| CreatePartitionsTopic {
                    name: t.name.to_string(),
                    count: t.count,
                    assignments: t.assignments.map(|a| {
                        a.into_iter()
                            .map(|x| x.broker_ids.into_iter().map(|b| b.0).collect())
                            .collect()
                    }),
                })
                .collect(),
        },
        _ => return None,
    })
}

/// The answer as the Kafka response to `key` (a topic API); `request_topics` are the
/// request's topic names, for the error answer of a request that failed whole.
pub fn response_to_kafka(
    key: ApiKey,
    request_topics: &[TopicRef],
    result: &ControllerResult,
) -> ResponseKind {
    let failed = match result {
        Err(ReplyError { code, message }) => Some((*code, message.clone())),
        Ok(_) => None,
    };
    let names = || {
        request_topics.iter().map(|t| match t {
            TopicRef::Name(n) => (Some(n.clone()), uuid::Uuid::nil()),
            TopicRef::Id(id) => (None, *id),
        })
    };
    match key {
        ApiKey::CreateTopics => {
            let mut r = CreateTopicsResponse::default();
            r.topics = match (result, &failed) {
                (Ok(ControllerReply::CreateTopics(results)), _) => results
                    .iter()
                    .map(|t| {
                        let mut x = CreatableTopicResult::default();
                        x.name = name(&t.name);
                        x.topic_id = t.topic_id;
                        x.error_code = t.error_code;
                        x.error_message = t.error_message.as_deref().map(s);
                        x.num_partitions = t.num_partitions;
                        x.replication_factor = t.replication_factor;
                        x.configs = None;
                        x
                    })
                    .collect(),
                (_, failed) => names()
                    .map(|(n, _)| {
                        let mut x = CreatableTopicResult::default();
                        x.name = name(n.as_deref().unwrap_or(""));
                        let (code, message) = failed.clone().unwrap_or((-1, String::new()));
                        x.error_code = code;
                        x.error_message = Some(s(&message));
                        x.num_partitions = -1;
                        x.replication_factor = -1;
                        x
                    })
                    .collect(),
            };
            ResponseKind::CreateTopics(r)
        }
        ApiKey::DeleteTopics => {
            let mut r = DeleteTopicsResponse::default();
            r.responses = match (result, &failed) {
                (Ok(ControllerReply::DeleteTopics(results)), _) => results
                    .iter()
                    .map(|t| {
                        let mut x = DeletableTopicResult::default();
                        x.name = t.name.as_deref().map(name);
                        x.topic_id = t.topic_id;
                        x.error_code = t.error_code;
                        x.error_message = t.error_message.as_deref().map(s);
                        x
                    })
                    .collect(),
                (_, failed) => names()
                    .map(|(n, id)| {
                        let mut x = DeletableTopicResult::default();
                        x.name = n.as_deref().map(name);
                        x.topic_id = id;
                        let (code, message) = failed.clone().unwrap_or((-1, String::new()));
                        x.error_code = code;
                        x.error_message = Some(s(&message));
                        x
                    })
                    .collect(),
            };
            ResponseKind::DeleteTopics(r)
        }
        _ => {
            let mut r = CreatePartitionsResponse::default();
            r.results = match (result, &failed) {
                (Ok(ControllerReply::CreatePartitions(results)), _) => results
                    .iter()
                    .map(|t| {
                        let mut x = CreatePartitionsTopicResult::default();
                        x.name = name(&t.name);
                        x.error_code = t.error_code;
                        x.error_message = t.error_message.as_deref().map(s);
                        x
                    })
                    .collect(),
                (_, failed) => names()
                    .map(|(n, _)| {
                        let mut x = CreatePartitionsTopicResult::default();
                        x.name = name(n.as_deref().unwrap_or(""));
                        let (code, message) = failed.clone().unwrap_or((-1, String::new()));
                        x.error_code = code;
                        x.error_message = Some(s(&message));
                        x
                    })
                    .collect(),
            };
            ResponseKind::CreatePartitions(r)
        }
    }
}

/// The topic names (or ids) a topic request names, in order.
pub fn request_topics(request: &ControllerRequest) -> Vec<TopicRef> {
    match request {
        ControllerRequest::CreateTopics { topics, .. } => topics
            .iter()
            .map(|t| TopicRef::Name(t.name.clone()))
            .collect(),
        ControllerRequest::DeleteTopics(t) => t.clone(),
        ControllerRequest::CreatePartitions { topics, .. } => topics
            .iter()
            .map(|t| TopicRef::Name(t.name.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The active controller's Kafka response to a topic request as the answer (`None` for
/// other responses).
pub fn response_from_kafka(body: ResponseKind) -> Option<ControllerResult> {
    let text = |m: Option<StrBytes>| m.map(|m| m.to_string());
    Some(Ok(match body {
        ResponseKind::CreateTopics(r) => ControllerReply::CreateTopics(
            r.topics
                .into_iter()
                .map(|t| CreateTopicResult {
                    name: t.name.to_string(),
                    topic_id: t.topic_id,
                    error_code: t.error_code,
                    error_message: text(t.error_message),
                    num_partitions: t.num_partitions,
                    replication_factor: t.replication_factor,
                })
                .collect(),
        ),
        ResponseKind::DeleteTopics(r) => ControllerReply::DeleteTopics(
            r.responses
                .into_iter()
                .map(|t| DeleteTopicResult {
                    name: t.name.map(|n| n.to_string()),
                    topic_id: t.topic_id,
                    error_code: t.error_code,
                    error_message: text(t.error_message),
                })
                .collect(),
        ),
        ResponseKind::CreatePartitions(r) => ControllerReply::CreatePartitions(
            r.results
                .into_iter()
                .map(|t| CreatePartitionsResult {
                    name: t.name.to_string(),
                    error_code: t.error_code,
                    error_message: text(t.error_message),
                })
                .collect(),
        ),
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a broker forwards is what the controller decodes, through the wire encoding.
    fn round_trip(request: ControllerRequest) -> ControllerRequest {
        use kafka_protocol::protocol::{Decodable, Encodable};
        let (key, version, body) = to_kafka(&request).expect("a topic request");
        let mut buf = bytes::BytesMut::new();
        let decoded = match body {
            RequestKind::CreateTopics(r) => {
                r.encode(&mut buf, version).unwrap();
                RequestKind::CreateTopics(
                    CreateTopicsRequest::decode(&mut buf.freeze(), version).unwrap(),
                )
            }
            RequestKind::DeleteTopics(r) => {
                r.encode(&mut buf, version).unwrap();
                RequestKind::DeleteTopics(
                    DeleteTopicsRequest::decode(&mut buf.freeze(), version).unwrap(),
                )
            }
            RequestKind::CreatePartitions(r) => {
                r.encode(&mut buf, version).unwrap();
                RequestKind::CreatePartitions(
                    CreatePartitionsRequest::decode(&mut buf.freeze(), version).unwrap(),
                )
            }
            _ => unreachable!("{key:?}"),
        };
        from_kafka(decoded).expect("a topic request")
    }

    #[test]
    fn topic_requests_survive_forwarding() {
        let create = ControllerRequest::CreateTopics {
            validate_only: true,
            topics: vec![CreatableTopic {
                name: "orders".into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: vec![(0, vec![1]), (1, vec![2])],
                configs: vec![
                    ("cleanup.policy".into(), Some("compact".into())),
                    ("x".into(), None),
                ],
                topic_id: Some(uuid::Uuid::from_u64_pair(7, 8)),
            }],
        };
        assert_eq!(
            format!("{:?}", round_trip(create.clone())),
            format!("{create:?}")
        );
        let delete = ControllerRequest::DeleteTopics(vec![
            TopicRef::Name("a".into()),
            TopicRef::Id(uuid::Uuid::from_u64_pair(1, 2)),
        ]);
        assert_eq!(
            format!("{:?}", round_trip(delete.clone())),
            format!("{delete:?}")
        );
        let grow = ControllerRequest::CreatePartitions {
            validate_only: false,
            topics: vec![
                CreatePartitionsTopic {
                    name: "a".into(),
                    count: 4,
                    assignments: Some(vec![vec![1], vec![3]]),
                },
                CreatePartitionsTopic {
                    name: "b".into(),
                    count: 2,
                    assignments: None,
                },
            ],
        };
        assert_eq!(
            format!("{:?}", round_trip(grow.clone())),
            format!("{grow:?}")
        );
    }

    #[test]
    fn a_request_that_failed_whole_answers_every_topic_with_its_error() {
        let topics = vec![TopicRef::Name("a".into()), TopicRef::Name("b".into())];
        let failed: ControllerResult = Err(ReplyError::new(41, "no leader".into()));
        let ResponseKind::CreateTopics(r) =
            response_to_kafka(ApiKey::CreateTopics, &topics, &failed)
        else {
            panic!()
        };
        assert_eq!(r.topics.len(), 2);
        assert!(r.topics.iter().all(|t| t.error_code == 41));
        let back = response_from_kafka(ResponseKind::CreateTopics(r))
            .unwrap()
            .unwrap();
        let ControllerReply::CreateTopics(results) = back else {
            panic!()
        };
        assert_eq!(results[1].name, "b");
        assert_eq!(results[1].error_message.as_deref(), Some("no leader"));
    }
}
