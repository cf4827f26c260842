//! The streams group APIs (88, 89, 93) against Kafka 4.4's own encodings:
//! `streams_vectors.txt` holds bodies Kafka's generated classes wrote, every field set and,
//! in a second case, every nullable field null
//! (`scripts/reference/vectors/StreamsVectors.java messages` prints them). Each must decode
//! into the typed struct with the values Kafka was given and encode back to Kafka's bytes.

use samsa_protocol::streams::*;

struct Vector {
    message: String,
    version: i16,
    body: Vec<u8>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn vectors(message: &str) -> Vec<Vector> {
    include_str!("streams_vectors.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split(' ');
            Vector {
                message: parts.next().unwrap().to_string(),
                version: parts.next().unwrap().parse().unwrap(),
                body: hex(parts.next().unwrap_or("")),
            }
        })
        .filter(|v| v.message == message)
        .collect()
}

/// Decodes every vector of `message` and checks that it encodes back to Kafka's bytes.
fn round_trip<T>(
    message: &str,
    decode: impl Fn(&[u8], i16) -> T,
    encode: impl Fn(&T, i16) -> Vec<u8>,
) -> Vec<(i16, T)> {
    let found = vectors(message);
    assert!(!found.is_empty(), "vectors of {message}");
    found
        .into_iter()
        .map(|v| {
            let decoded = decode(&v.body, v.version);
            assert_eq!(
                encode(&decoded, v.version),
                v.body,
                "{message} v{} encoded back",
                v.version
            );
            (v.version, decoded)
        })
        .collect()
}

fn s(x: &str) -> String {
    x.to_string()
}
fn tasks(id: &str, partitions: &[i32]) -> TaskIds {
    TaskIds {
        subtopology_id: s(id),
        partitions: partitions.to_vec(),
    }
}
fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: s(k),
        value: s(v),
    }
}
fn changelog() -> TopicInfo {
    TopicInfo {
        name: s("app-store-changelog"),
        partitions: 0,
        replication_factor: 3,
        topic_configs: vec![kv("cleanup.policy", "compact")],
    }
}
fn endpoint(host: &str, port: u16) -> Endpoint {
    Endpoint {
        host: s(host),
        port,
    }
}

#[test]
fn heartbeat_requests() {
    let decoded = round_trip(
        "StreamsGroupHeartbeatRequest",
        |b, v| StreamsGroupHeartbeatRequest::decode(b, v).unwrap(),
        StreamsGroupHeartbeatRequest::encode,
    );
    let full = StreamsGroupHeartbeatRequest {
        group_id: s("app"),
        member_id: s("m1"),
        member_epoch: 0,
        endpoint_information_epoch: 3,
        instance_id: Some(s("i")),
        rack_id: Some(s("r")),
        rebalance_timeout_ms: 30000,
        topology: Some(Topology {
            epoch: 2,
            subtopologies: vec![Subtopology {
                subtopology_id: s("0"),
                source_topics: vec![s("in"), s("in2")],
                source_topic_regex: vec![s("in-.*")],
                state_changelog_topics: vec![changelog()],
                repartition_sink_topics: vec![s("app-rep")],
                repartition_source_topics: vec![TopicInfo {
                    name: s("app-rep2"),
                    partitions: 4,
                    replication_factor: -1,
                    topic_configs: vec![],
                }],
                copartition_groups: vec![CopartitionGroup {
                    source_topics: vec![0, 1],
                    source_topic_regex: vec![0],
                    repartition_source_topics: vec![0],
                }],
            }],
        }),
        active_tasks: Some(vec![tasks("0", &[0, 1])]),
        standby_tasks: Some(vec![tasks("1", &[2])]),
        warmup_tasks: Some(vec![]),
        process_id: Some(s("p")),
        user_endpoint: Some(endpoint("h", 65535)),
        client_tags: Some(vec![kv("zone", "a")]),
        task_offsets: Some(vec![TaskOffset {
            subtopology_id: s("0"),
            partition: 1,
            offset: 42,
        }]),
        task_end_offsets: Some(vec![TaskOffset {
            subtopology_id: s("0"),
            partition: 1,
            offset: 9_000_000_000,
        }]),
        shutdown_application: true,
    };
    let nulls = StreamsGroupHeartbeatRequest {
        group_id: s("app"),
        member_id: s("m1"),
        member_epoch: -1,
        ..Default::default()
    };
    let expected = [(0, &full), (1, &full), (0, &nulls), (1, &nulls)];
    assert_eq!(decoded.len(), expected.len());
    for ((version, got), (v, want)) in decoded.iter().zip(expected) {
        assert_eq!(*version, v);
        assert_eq!(got, want, "v{v}");
    }
}

#[test]
fn heartbeat_responses() {
    let decoded = round_trip(
        "StreamsGroupHeartbeatResponse",
        |b, v| StreamsGroupHeartbeatResponse::decode(b, v).unwrap(),
        StreamsGroupHeartbeatResponse::encode,
    );
    let full = StreamsGroupHeartbeatResponse {
        throttle_time_ms: 5,
        error_code: 0,
        error_message: Some(s("fine")),
        member_id: s("m1"),
        member_epoch: 7,
        heartbeat_interval_ms: 5000,
        acceptable_recovery_lag_legacy: 0,
        task_offset_interval_ms: 60000,
        acceptable_recovery_lag: -1,
        status: Some(vec![
            HeartbeatStatus {
                status_code: 1,
                status_detail: s("missing: in"),
            },
            HeartbeatStatus {
                status_code: 6,
                status_detail: s(""),
            },
        ]),
        active_tasks: Some(vec![tasks("0", &[0, 1])]),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![tasks("1", &[3])]),
        topology_description_required: false,
        endpoint_information_epoch: 2,
        partitions_by_user_endpoint: Some(vec![EndpointToPartitions {
            user_endpoint: endpoint("h", 8080),
            active_partitions: vec![TopicPartitions {
                topic: s("in"),
                partitions: vec![0, 1],
            }],
            standby_partitions: vec![TopicPartitions {
                topic: s("in"),
                partitions: vec![2],
            }],
        }]),
    };
    let full_v0 = StreamsGroupHeartbeatResponse {
        acceptable_recovery_lag_legacy: 10000,
        ..full.clone()
    };
    let full_v1 = StreamsGroupHeartbeatResponse {
        acceptable_recovery_lag: 10_000_000_000,
        topology_description_required: true,
        ..full
    };
    let nulls = StreamsGroupHeartbeatResponse {
        error_code: 25,
        member_epoch: -1,
        status: None,
        ..Default::default()
    };
    let expected = [(0, &full_v0), (1, &full_v1), (0, &nulls), (1, &nulls)];
    assert_eq!(decoded.len(), expected.len());
    for ((version, got), (v, want)) in decoded.iter().zip(expected) {
        assert_eq!(*version, v);
        assert_eq!(got, want, "v{v}");
    }
}

#[test]
fn describe_requests() {
    let decoded = round_trip(
        "StreamsGroupDescribeRequest",
        |b, v| StreamsGroupDescribeRequest::decode(b, v).unwrap(),
        StreamsGroupDescribeRequest::encode,
    );
    let ab = |include_topology_description| StreamsGroupDescribeRequest {
        group_ids: vec![s("a"), s("b")],
        include_authorized_operations: true,
        include_topology_description,
    };
    assert_eq!(
        decoded,
        vec![
            (0, ab(false)),
            (1, ab(true)),
            (1, StreamsGroupDescribeRequest::default())
        ]
    );
}

fn source_node() -> TopologyDescriptionNode {
    TopologyDescriptionNode {
        name: s("KSTREAM-SOURCE-0000000000"),
        node_type: 0,
        source_topics: vec![s("in")],
        sink_topic: None,
        stores: vec![],
        successors: vec![s("KSTREAM-AGGREGATE-0000000001")],
    }
}
fn sink_node() -> TopologyDescriptionNode {
    TopologyDescriptionNode {
        name: s("KSTREAM-SINK-0000000003"),
        node_type: 2,
        source_topics: vec![],
        sink_topic: Some(s("out")),
        stores: vec![s("store")],
        successors: vec![],
    }
}
fn description() -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![TopologyDescriptionSubtopology {
            subtopology_id: s("0"),
            nodes: vec![source_node(), sink_node()],
        }],
        global_stores: vec![TopologyDescriptionGlobalStore {
            source: source_node(),
            processor: sink_node(),
        }],
    }
}

#[test]
fn describe_responses() {
    let decoded = round_trip(
        "StreamsGroupDescribeResponse",
        |b, v| StreamsGroupDescribeResponse::decode(b, v).unwrap(),
        StreamsGroupDescribeResponse::encode,
    );
    let member = DescribedMember {
        member_id: s("m1"),
        member_epoch: 7,
        instance_id: Some(s("i")),
        rack_id: None,
        client_id: s("c"),
        client_host: s("/127.0.0.1"),
        topology_epoch: 2,
        process_id: s("p"),
        user_endpoint: Some(endpoint("h", 65535)),
        client_tags: vec![kv("zone", "a")],
        task_offsets: vec![TaskOffset {
            subtopology_id: s("0"),
            partition: 0,
            offset: 5,
        }],
        task_end_offsets: vec![TaskOffset {
            subtopology_id: s("0"),
            partition: 0,
            offset: 9,
        }],
        assignment: Assignment {
            active_tasks: vec![tasks("0", &[0])],
            standby_tasks: vec![],
            warmup_tasks: vec![],
        },
        target_assignment: Assignment {
            active_tasks: vec![tasks("0", &[0, 1])],
            standby_tasks: vec![tasks("1", &[1])],
            warmup_tasks: vec![tasks("1", &[0])],
        },
        is_classic: false,
    };
    let member_nulls = DescribedMember {
        member_id: s("m2"),
        rack_id: Some(s("r")),
        is_classic: true,
        ..Default::default()
    };
    let stable = DescribedGroup {
        group_id: s("app"),
        group_state: s("Stable"),
        group_epoch: 9,
        assignment_epoch: 9,
        topology: Some(DescribedTopology {
            epoch: 2,
            subtopologies: Some(vec![DescribedSubtopology {
                subtopology_id: s("0"),
                source_topics: vec![s("in")],
                repartition_sink_topics: vec![s("app-rep")],
                state_changelog_topics: vec![changelog()],
                repartition_source_topics: vec![],
            }]),
        }),
        members: vec![member, member_nulls],
        authorized_operations: 4096,
        ..Default::default()
    };
    let dead = DescribedGroup {
        error_code: 69,
        error_message: Some(s("not found")),
        group_id: s("x"),
        group_state: s("Dead"),
        group_epoch: -1,
        assignment_epoch: -1,
        ..Default::default()
    };
    let unconfigured = DescribedGroup {
        group_id: s("y"),
        group_state: s("NotReady"),
        group_epoch: 1,
        topology: Some(DescribedTopology {
            epoch: 1,
            subtopologies: None,
        }),
        ..Default::default()
    };
    let v0 = StreamsGroupDescribeResponse {
        throttle_time_ms: 3,
        groups: vec![stable.clone(), dead.clone(), unconfigured.clone()],
    };
    let v1 = StreamsGroupDescribeResponse {
        throttle_time_ms: 3,
        groups: vec![
            DescribedGroup {
                topology_description: Some(description()),
                topology_description_status: description_status::AVAILABLE,
                assignor_name: Some(s("sticky")),
                ..stable
            },
            DescribedGroup {
                topology_description_status: description_status::ERROR,
                ..dead
            },
            DescribedGroup {
                topology_description_status: description_status::NOT_STORED,
                assignor_name: Some(s("sticky")),
                ..unconfigured
            },
        ],
    };
    assert_eq!(decoded, vec![(0, v0), (1, v1)]);
}

#[test]
fn topology_description_updates() {
    let requests = round_trip(
        "StreamsGroupTopologyDescriptionUpdateRequest",
        |b, v| StreamsGroupTopologyDescriptionUpdateRequest::decode(b, v).unwrap(),
        StreamsGroupTopologyDescriptionUpdateRequest::encode,
    );
    assert_eq!(
        requests,
        vec![(
            0,
            StreamsGroupTopologyDescriptionUpdateRequest {
                group_id: s("app"),
                member_id: s("m1"),
                topology_epoch: 2,
                topology_description: description(),
            }
        )]
    );
    let responses = round_trip(
        "StreamsGroupTopologyDescriptionUpdateResponse",
        |b, v| StreamsGroupTopologyDescriptionUpdateResponse::decode(b, v).unwrap(),
        StreamsGroupTopologyDescriptionUpdateResponse::encode,
    );
    assert_eq!(
        responses,
        vec![
            (
                0,
                StreamsGroupTopologyDescriptionUpdateResponse {
                    throttle_time_ms: 1,
                    error_code: 25,
                    error_message: Some(s("unknown member")),
                }
            ),
            (0, StreamsGroupTopologyDescriptionUpdateResponse::default())
        ]
    );
}

#[test]
fn kafkas_request_bodies_decode_through_the_frame_path() {
    for v in vectors("StreamsGroupHeartbeatRequest")
        .into_iter()
        .chain(vectors("StreamsGroupDescribeRequest"))
        .chain(vectors("StreamsGroupTopologyDescriptionUpdateRequest"))
    {
        let key = match v.message.as_str() {
            "StreamsGroupHeartbeatRequest" => STREAMS_GROUP_HEARTBEAT,
            "StreamsGroupDescribeRequest" => STREAMS_GROUP_DESCRIBE,
            _ => STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
        };
        let frame = encode_request_frame(key, v.version, 11, Some("streams-client"), &v.body);
        let request = decode_frame(&frame).unwrap();
        assert_eq!(request.api_key(), key);
        assert_eq!(request.api_version(), v.version);
        assert_eq!(request.correlation_id(), 11);
        assert_eq!(request.client_id(), Some("streams-client"));
    }
}
