use super::*;
use bytes::Bytes;

fn tasks(id: &str, partitions: &[i32]) -> TaskIds {
    TaskIds {
        subtopology_id: id.into(),
        partitions: partitions.to_vec(),
    }
}

fn full_heartbeat() -> StreamsGroupHeartbeatRequest {
    StreamsGroupHeartbeatRequest {
        group_id: "app".into(),
        member_id: "m1".into(),
        member_epoch: 0,
        endpoint_information_epoch: 3,
        instance_id: Some("i".into()),
        rack_id: None,
        rebalance_timeout_ms: 30000,
        topology: Some(Topology {
            epoch: 2,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["in".into()],
                source_topic_regex: vec!["in-.*".into()],
                state_changelog_topics: vec![TopicInfo {
                    name: "app-store-changelog".into(),
                    partitions: 0,
                    replication_factor: 3,
                    topic_configs: vec![KeyValue {
                        key: "cleanup.policy".into(),
                        value: "compact".into(),
                    }],
                }],
                repartition_sink_topics: vec!["app-rep".into()],
                repartition_source_topics: vec![],
                copartition_groups: vec![CopartitionGroup {
                    source_topics: vec![0],
                    source_topic_regex: vec![],
                    repartition_source_topics: vec![1, 2],
                }],
            }],
        }),
        active_tasks: Some(vec![tasks("0", &[0, 1])]),
        standby_tasks: Some(vec![]),
        warmup_tasks: None,
        process_id: Some("p".into()),
        user_endpoint: Some(Endpoint {
            host: "h".into(),
            port: 65535,
        }),
        client_tags: Some(vec![KeyValue {
            key: "zone".into(),
            value: "a".into(),
        }]),
        task_offsets: Some(vec![TaskOffset {
            subtopology_id: "0".into(),
            partition: 1,
            offset: 42,
        }]),
        task_end_offsets: None,
        shutdown_application: true,
    }
}

#[test]
fn a_heartbeat_request_round_trips_and_its_versions_are_the_same_bytes() {
    let request = full_heartbeat();
    let v0 = request.encode(0);
    assert_eq!(v0, request.encode(1));
    assert_eq!(
        StreamsGroupHeartbeatRequest::decode(&v0, 0).unwrap(),
        request
    );
    let defaults = StreamsGroupHeartbeatRequest::default();
    let bytes = defaults.encode(1);
    assert_eq!(
        StreamsGroupHeartbeatRequest::decode(&bytes, 1).unwrap(),
        defaults
    );
}

#[test]
fn heartbeat_response_versions_place_the_recovery_lag_differently() {
    let response = StreamsGroupHeartbeatResponse {
        member_id: "m".into(),
        acceptable_recovery_lag_legacy: 7,
        acceptable_recovery_lag: 10_000_000_000,
        topology_description_required: true,
        status: Some(vec![HeartbeatStatus {
            status_code: 1,
            status_detail: "missing".into(),
        }]),
        active_tasks: Some(vec![tasks("1", &[3])]),
        partitions_by_user_endpoint: Some(vec![EndpointToPartitions {
            user_endpoint: Endpoint {
                host: "h".into(),
                port: 8080,
            },
            active_partitions: vec![TopicPartitions {
                topic: "t".into(),
                partitions: vec![0],
            }],
            standby_partitions: vec![],
        }]),
        ..Default::default()
    };
    let v0 = response.encode(0);
    let v1 = response.encode(1);
    // v1: int64 lag instead of int32, and one bool more.
    assert_eq!(v1.len(), v0.len() + 4 + 1);
    let back0 = StreamsGroupHeartbeatResponse::decode(&v0, 0).unwrap();
    assert_eq!(back0.acceptable_recovery_lag_legacy, 7);
    assert_eq!(back0.acceptable_recovery_lag, -1);
    assert!(!back0.topology_description_required);
    let back1 = StreamsGroupHeartbeatResponse::decode(&v1, 1).unwrap();
    assert_eq!(back1.acceptable_recovery_lag_legacy, 0);
    assert_eq!(
        back1,
        StreamsGroupHeartbeatResponse {
            acceptable_recovery_lag_legacy: 0,
            ..response
        }
    );
}

#[test]
fn describe_v0_leaves_out_what_v1_adds() {
    let request = StreamsGroupDescribeRequest {
        group_ids: vec!["a".into(), "b".into()],
        include_authorized_operations: true,
        include_topology_description: true,
    };
    assert_eq!(request.encode(0), [3, 2, b'a', 2, b'b', 1, 0]);
    assert_eq!(request.encode(1), [3, 2, b'a', 2, b'b', 1, 1, 0]);
    let group = DescribedGroup {
        group_id: "g".into(),
        group_state: "Stable".into(),
        topology: Some(DescribedTopology {
            epoch: 1,
            subtopologies: None,
        }),
        members: vec![DescribedMember {
            member_id: "m".into(),
            user_endpoint: Some(Endpoint {
                host: "x".into(),
                port: 1,
            }),
            assignment: Assignment {
                active_tasks: vec![tasks("0", &[0])],
                ..Default::default()
            },
            ..Default::default()
        }],
        topology_description: Some(TopologyDescription {
            subtopologies: vec![],
            global_stores: vec![TopologyDescriptionGlobalStore::default()],
        }),
        topology_description_status: description_status::AVAILABLE,
        assignor_name: Some("sticky".into()),
        ..Default::default()
    };
    let response = StreamsGroupDescribeResponse {
        throttle_time_ms: 0,
        groups: vec![group.clone()],
    };
    let v1 = response.encode(1);
    assert_eq!(
        StreamsGroupDescribeResponse::decode(&v1, 1).unwrap(),
        response
    );
    let back0 = StreamsGroupDescribeResponse::decode(&response.encode(0), 0).unwrap();
    assert_eq!(
        back0.groups[0],
        DescribedGroup {
            topology_description: None,
            topology_description_status: 0,
            assignor_name: None,
            ..group
        }
    );
}

#[test]
fn a_frame_decodes_with_its_header() {
    let body = full_heartbeat().encode(1);
    let frame = encode_request_frame(STREAMS_GROUP_HEARTBEAT, 1, 17, Some("client"), &body);
    let request = decode_frame(&frame).unwrap();
    assert_eq!(request.api_key(), 88);
    assert_eq!(request.api_version(), 1);
    assert_eq!(request.correlation_id(), 17);
    assert_eq!(request.client_id(), Some("client"));
    let StreamsRequest::Heartbeat(_, heartbeat) = request else {
        panic!("a heartbeat")
    };
    assert_eq!(heartbeat, full_heartbeat());

    // a null client id, and a header tagged field the broker does not know
    let mut frame = encode_request_frame(STREAMS_GROUP_DESCRIBE, 0, 1, None, &[]);
    frame.truncate(frame.len() - 1);
    frame.extend_from_slice(&[1, 5, 2, 0xaa, 0xbb]);
    frame.extend_from_slice(&StreamsGroupDescribeRequest::default().encode(0));
    let request = decode_frame(&frame).unwrap();
    assert_eq!(request.client_id(), None);
    assert!(matches!(request, StreamsRequest::Describe(..)));

    let update = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: "g".into(),
        topology_epoch: 4,
        ..Default::default()
    };
    let frame = encode_request_frame(93, 0, 2, Some(""), &update.encode(0));
    assert_eq!(
        decode_frame(&frame).unwrap(),
        StreamsRequest::TopologyDescriptionUpdate(
            StreamsHeader {
                api_key: 93,
                api_version: 0,
                correlation_id: 2,
                client_id: Some(String::new()),
            },
            update
        )
    );
}

#[test]
fn unserved_versions_other_keys_and_damaged_frames_are_errors() {
    let frame = encode_request_frame(93, 1, 9, None, &[]);
    assert_eq!(
        decode_frame(&frame),
        Err(StreamsFrameError::UnsupportedVersion {
            api_key: 93,
            api_version: 1,
            correlation_id: 9,
            min_version: 0,
            max_version: 0
        })
    );
    assert!(matches!(
        decode_frame(&encode_request_frame(89, -1, 9, None, &[])),
        Err(StreamsFrameError::UnsupportedVersion { .. })
    ));
    assert!(matches!(
        decode_frame(&encode_request_frame(3, 12, 9, None, &[])),
        Err(StreamsFrameError::NotStreams { api_key: 3, .. })
    ));
    assert!(matches!(
        decode_frame(&[0, 88, 0]),
        Err(StreamsFrameError::TooShort { len: 3 })
    ));
    let body = full_heartbeat().encode(0);
    let frame = encode_request_frame(88, 0, 1, Some("c"), &body);
    for cut in 0..frame.len() {
        assert!(decode_frame(&frame[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn the_kafka_protocol_path_still_refuses_these_keys() {
    for key in [88, 89, 93] {
        let frame = encode_request_frame(key, 0, 4, Some("c"), &[0, 0]);
        assert!(matches!(
            crate::decode_request(Bytes::from(frame)),
            Err(crate::RequestError::UnknownApiKey { api_key, correlation_id: 4 }) if api_key == key
        ));
    }
}

#[test]
fn a_response_has_header_v1_and_a_size_prefix_when_written() {
    let response =
        StreamsResponse::TopologyDescriptionUpdate(StreamsGroupTopologyDescriptionUpdateResponse {
            throttle_time_ms: 0,
            error_code: 69,
            error_message: None,
        });
    let bytes = encode_response(0x01020304, 0, &response);
    assert_eq!(bytes, [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 69, 0, 0]);
    let mut out = BytesMut::new();
    write_response(&mut out, 0x01020304, 0, &response);
    assert_eq!(&out[..4], &[0, 0, 0, 13]);
    assert_eq!(&out[4..], &bytes[..]);
    assert_eq!(response.api_key(), 93);
}

#[test]
fn over_long_strings_are_cut_so_encoding_cannot_fail() {
    let response = StreamsGroupHeartbeatResponse {
        error_message: Some("é".repeat(20_000)),
        ..Default::default()
    };
    let back = StreamsGroupHeartbeatResponse::decode(&response.encode(1), 1).unwrap();
    let message = back.error_message.unwrap();
    assert_eq!(message.len(), 32766);
    // A body claiming a longer string is refused, as Kafka refuses it.
    let mut body = vec![0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&[0x81, 0x80, 0x02]); // compact length 32768 + 1
    body.extend(std::iter::repeat_n(b'x', 32768));
    assert!(StreamsGroupHeartbeatResponse::decode(&body, 1).is_err());
}

proptest::proptest! {
    /// Whatever follows a streams header prefix, decoding answers (an error or a request) and
    /// never panics or allocates what the bytes do not hold.
    #[test]
    fn arbitrary_frames_never_panic(
        key in proptest::sample::select(vec![88i16, 89, 93]),
        version in 0i16..2,
        tail in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
    ) {
        let mut frame = encode_request_frame(key, version, 1, Some("c"), &[]);
        frame.truncate(crate::header::HEADER_PREFIX_BYTES);
        frame.extend_from_slice(&tail);
        let _ = decode_frame(&frame);
    }

    /// A heartbeat body with any of its bytes flipped decodes or fails, never panics; what
    /// decodes encodes again.
    #[test]
    fn damaged_heartbeats_never_panic(at in 0usize..200, byte in proptest::num::u8::ANY) {
        let mut body = full_heartbeat().encode(1);
        let at = at % body.len();
        body[at] = byte;
        if let Ok(request) = StreamsGroupHeartbeatRequest::decode(&body, 1) {
            let _ = request.encode(1);
        }
    }
}
