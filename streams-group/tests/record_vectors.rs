//! Records 17-23 against Kafka 4.4's own bytes: `record_vectors.txt` holds keys and values
//! Kafka's `GroupCoordinatorRecordSerde` wrote, every field set, nulls and defaults in other
//! cases, and a tombstone of every type
//! (`scripts/reference/vectors/StreamsVectors.java records` prints them). Each must decode
//! into the typed record with the values Kafka was given and encode back to Kafka's bytes.

use std::collections::BTreeMap;

use samsa_protocol::streams::Endpoint;
use samsa_streams_group::records::*;
use samsa_streams_group::{CopartitionGroup, Subtopology, TaskSet, Tasks, TopicInfo, Topology};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// (record type, key, value) of every vector, in file order; each checked to re-encode to
/// Kafka's bytes.
fn records() -> Vec<(i16, StreamsRecord)> {
    include_str!("record_vectors.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split(' ');
            let record_type: i16 = parts.next().unwrap().parse().unwrap();
            let key = hex(parts.next().unwrap());
            let value = match parts.next().unwrap() {
                "null" => None,
                v => Some(hex(v)),
            };
            let record = StreamsRecord::decode(&key, value.as_deref())
                .unwrap_or_else(|e| panic!("{l}: {e}"));
            assert_eq!(record.key.record_type(), record_type);
            let (k, v) = record.encode();
            assert_eq!(k, key, "key of {l}");
            assert_eq!(v, value, "value of {l}");
            (record_type, record)
        })
        .collect()
}

fn s(x: &str) -> String {
    x.to_string()
}
fn group() -> String {
    s("app")
}
fn tasks(items: &[(&str, &[i32])]) -> TaskSet {
    items
        .iter()
        .map(|(id, ps)| (s(id), ps.iter().copied().collect()))
        .collect()
}
fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items.iter().map(|(k, v)| (s(k), s(v))).collect()
}
fn epochs(id: &str, partitions: &[i32], epochs: Option<&[i32]>) -> TaskEpochs {
    TaskEpochs {
        subtopology_id: s(id),
        partitions: partitions.to_vec(),
        assignment_epochs: epochs.map(<[i32]>::to_vec),
    }
}

#[test]
fn kafkas_records_decode_to_what_it_was_given_and_encode_back() {
    let member = |k: fn(String, String) -> StreamsRecordKey| k(group(), s("m1"));
    let expected: Vec<StreamsRecord> = vec![
        StreamsRecord {
            key: StreamsRecordKey::Metadata { group: group() },
            value: Some(StreamsRecordValue::Metadata(MetadataValue {
                epoch: 9,
                metadata_hash: -1234567890123,
                validated_topology_epoch: 2,
                last_assignment_configs: Some(map(&[("num.standby.replicas", "1")])),
                stored_description_topology_epoch: 2,
                failed_description_topology_epoch: -2,
                unknown_tags: vec![],
            })),
        },
        StreamsRecord {
            key: StreamsRecordKey::Metadata { group: group() },
            value: Some(StreamsRecordValue::Metadata(MetadataValue {
                epoch: 1,
                last_assignment_configs: None,
                ..Default::default()
            })),
        },
        StreamsRecord {
            key: StreamsRecordKey::Metadata { group: group() },
            value: Some(StreamsRecordValue::Metadata(MetadataValue {
                epoch: 1,
                metadata_hash: 7,
                ..Default::default()
            })),
        },
        StreamsRecord::tombstone(StreamsRecordKey::Metadata { group: group() }),
        StreamsRecord {
            key: member(|group, member_id| StreamsRecordKey::MemberMetadata { group, member_id }),
            value: Some(StreamsRecordValue::MemberMetadata(MemberMetadataValue {
                instance_id: Some(s("i")),
                rack_id: None,
                client_id: s("c"),
                client_host: s("/127.0.0.1"),
                rebalance_timeout_ms: 30000,
                topology_epoch: 2,
                process_id: s("p"),
                user_endpoint: Some(Endpoint {
                    host: s("h"),
                    port: 65535,
                }),
                client_tags: map(&[("rack", "r1"), ("zone", "a")]),
                unknown_tags: vec![],
            })),
        },
        StreamsRecord {
            key: member(|group, member_id| StreamsRecordKey::MemberMetadata { group, member_id }),
            value: Some(StreamsRecordValue::MemberMetadata(MemberMetadataValue {
                rack_id: Some(s("r")),
                ..Default::default()
            })),
        },
        StreamsRecord::tombstone(member(|group, member_id| {
            StreamsRecordKey::MemberMetadata { group, member_id }
        })),
        StreamsRecord {
            key: StreamsRecordKey::TargetAssignmentMetadata { group: group() },
            value: Some(StreamsRecordValue::TargetAssignmentMetadata(
                TargetAssignmentMetadataValue {
                    assignment_epoch: 9,
                    assignment_timestamp_ms: 1733500000000,
                    unknown_tags: vec![],
                },
            )),
        },
        StreamsRecord {
            key: StreamsRecordKey::TargetAssignmentMetadata { group: group() },
            value: Some(StreamsRecordValue::TargetAssignmentMetadata(
                TargetAssignmentMetadataValue::default(),
            )),
        },
        StreamsRecord::tombstone(StreamsRecordKey::TargetAssignmentMetadata { group: group() }),
        StreamsRecord {
            key: member(
                |group, member_id| StreamsRecordKey::TargetAssignmentMember { group, member_id },
            ),
            value: Some(StreamsRecordValue::TargetAssignmentMember(
                TargetAssignmentMemberValue {
                    tasks: Tasks {
                        active: tasks(&[("0", &[0, 1]), ("1", &[2])]),
                        standby: tasks(&[("1", &[0])]),
                        warmup: TaskSet::new(),
                    },
                    unknown_tags: vec![],
                },
            )),
        },
        StreamsRecord::tombstone(member(|group, member_id| {
            StreamsRecordKey::TargetAssignmentMember { group, member_id }
        })),
        StreamsRecord {
            key: member(
                |group, member_id| StreamsRecordKey::CurrentMemberAssignment { group, member_id },
            ),
            value: Some(StreamsRecordValue::CurrentMemberAssignment(
                CurrentMemberAssignmentValue {
                    member_epoch: 9,
                    previous_member_epoch: 8,
                    state: 1,
                    active_tasks: vec![epochs("0", &[0, 1], Some(&[7, 9]))],
                    standby_tasks: vec![epochs("1", &[0], None)],
                    warmup_tasks: vec![epochs("1", &[1], Some(&[]))],
                    active_tasks_pending_revocation: vec![epochs("1", &[2], Some(&[5]))],
                    standby_tasks_pending_revocation: vec![],
                    warmup_tasks_pending_revocation: vec![],
                    unknown_tags: vec![],
                },
            )),
        },
        StreamsRecord::tombstone(member(|group, member_id| {
            StreamsRecordKey::CurrentMemberAssignment { group, member_id }
        })),
        StreamsRecord {
            key: StreamsRecordKey::Topology { group: group() },
            value: Some(StreamsRecordValue::Topology(TopologyValue {
                topology: Topology {
                    epoch: 2,
                    subtopologies: vec![
                        Subtopology {
                            id: s("0"),
                            source_topics: vec![s("in")],
                            source_topic_regex: vec![s("in-.*")],
                            state_changelog_topics: vec![TopicInfo {
                                name: s("app-store-changelog"),
                                partitions: 0,
                                replication_factor: 3,
                                configs: map(&[
                                    ("cleanup.policy", "compact"),
                                    ("retention.ms", "1"),
                                ]),
                            }],
                            repartition_sink_topics: vec![s("app-rep")],
                            repartition_source_topics: vec![],
                            copartition_groups: vec![],
                        },
                        Subtopology {
                            id: s("1"),
                            repartition_source_topics: vec![TopicInfo {
                                name: s("app-rep"),
                                partitions: 4,
                                replication_factor: -1,
                                configs: BTreeMap::new(),
                            }],
                            copartition_groups: vec![CopartitionGroup {
                                source_topics: vec![],
                                source_topic_regex: vec![],
                                repartition_source_topics: vec![0],
                            }],
                            ..Default::default()
                        },
                    ],
                },
                unknown_tags: vec![],
            })),
        },
        StreamsRecord::tombstone(StreamsRecordKey::Topology { group: group() }),
    ];
    let got: Vec<StreamsRecord> = records().into_iter().map(|(_, r)| r).collect();
    assert_eq!(got.len(), expected.len());
    for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "vector {i}");
    }
}

#[test]
fn every_record_type_has_a_vector_and_a_tombstone() {
    let all = records();
    for t in [17, 19, 20, 21, 22, 23] {
        assert!(
            all.iter().any(|(rt, r)| *rt == t && r.value.is_some()),
            "{t}"
        );
        assert!(
            all.iter().any(|(rt, r)| *rt == t && r.value.is_none()),
            "{t} tombstone"
        );
    }
}
