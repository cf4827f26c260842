//! Specifications of the metadata record codec: exact byte layouts, round trips of every type,
//! version handling, and malformed input that must fail cleanly.

use bytes::Bytes;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use uuid::Uuid;

use super::records::*;

fn uuid_of(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

// ------------------------------------------------------------------------------------------
// Byte layouts derived by hand from the JSON schemas
// ------------------------------------------------------------------------------------------

/// TopicRecord (TopicRecord.json, api key 2, version 0, flexible): frame version 1, api key 2,
/// version 0 (each a 1-byte unsigned varint), then `Name` as a compact string (varint length+1
/// = 4, then "foo"), `TopicId` as 16 raw bytes, then an empty tagged-field section (count 0).
#[test]
fn topic_record_has_the_schema_byte_layout() {
    let record = MetadataRecord::Topic(TopicRecord {
        name: "foo".into(),
        topic_id: uuid_of(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10),
        ..Default::default()
    });
    let mut expected = vec![0x01, 0x02, 0x00, 0x04, b'f', b'o', b'o'];
    expected.extend(1u8..=16);
    expected.push(0x00);
    assert_eq!(record.encode(), Bytes::from(expected.clone()));
    assert_eq!(MetadataRecord::decode(&expected), Ok(record));
}

/// PartitionChangeRecord (PartitionChangeRecord.json, api key 5, latest version 2): frame 1, key
/// 5, version 2; `PartitionId` int32 big-endian; `TopicId` 16 bytes; then the tagged section
/// with only the non-default fields, ascending by tag: count 2; tag 0 `Isr` = compact array
/// [1, 2] (length+1 = 3, two int32s: 9 bytes); tag 1 `Leader` = int32 3 (4 bytes).
#[test]
fn partition_change_record_writes_only_changed_fields_as_tags_in_order() {
    let record = MetadataRecord::PartitionChange(PartitionChangeRecord {
        partition_id: 1,
        topic_id: uuid_of(0),
        isr: Some(vec![1, 2]),
        leader: 3,
        ..Default::default()
    });
    let mut expected = vec![0x01, 0x05, 0x02, 0, 0, 0, 1];
    expected.extend([0u8; 16]);
    expected.extend([0x02]); // two tagged fields
    expected.extend([0x00, 0x09, 0x03, 0, 0, 0, 1, 0, 0, 0, 2]); // tag 0, size 9, Isr
    expected.extend([0x01, 0x04, 0, 0, 0, 3]); // tag 1, size 4, Leader
    assert_eq!(record.encode(), Bytes::from(expected.clone()));
    assert_eq!(MetadataRecord::decode(&expected), Ok(record));
}

/// FeatureLevelRecord (FeatureLevelRecord.json, api key 12, version 0): `Name` compact string,
/// `FeatureLevel` int16, empty tag section.
#[test]
fn feature_level_record_has_the_schema_byte_layout() {
    let record = MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "metadata.version".into(),
        feature_level: 25,
        ..Default::default()
    });
    let mut expected = vec![0x01, 0x0c, 0x00, 17];
    expected.extend(b"metadata.version");
    expected.extend([0x00, 25, 0x00]);
    assert_eq!(record.encode(), Bytes::from(expected));
}

#[test]
fn a_partition_change_without_a_leader_field_decodes_as_no_leader_change() {
    let mut bytes = vec![0x01, 0x05, 0x00, 0, 0, 0, 7];
    bytes.extend([0u8; 16]);
    bytes.push(0x00);
    let MetadataRecord::PartitionChange(change) = MetadataRecord::decode(&bytes).unwrap() else {
        panic!("not a PartitionChangeRecord");
    };
    assert_eq!(change.leader, NO_LEADER_CHANGE);
    assert_eq!(
        change.leader_recovery_state,
        NO_LEADER_RECOVERY_STATE_CHANGE
    );
    assert_eq!(change.isr, None);
    assert_eq!(change.partition_id, 7);
}

// ------------------------------------------------------------------------------------------
// Versions and unknown tagged fields
// ------------------------------------------------------------------------------------------

#[test]
fn a_tag_unknown_at_the_records_version_is_kept_and_written_back() {
    // PartitionChangeRecord v0 does not know tag 8 (Directories arrived in v1), nor tag 42.
    let mut bytes = vec![0x01, 0x05, 0x00, 0, 0, 0, 0];
    bytes.extend([0u8; 16]);
    bytes.extend([0x02, 0x08, 0x01, 0x01, 0x2a, 0x02, 0xab, 0xcd]);
    let (record, version) = MetadataRecord::decode_with_version(&bytes).unwrap();
    assert_eq!(version, 0);
    let MetadataRecord::PartitionChange(change) = &record else {
        panic!("not a PartitionChangeRecord");
    };
    assert_eq!(change.directories, None);
    assert_eq!(change.unknown_tagged_fields.len(), 2);
    assert_eq!(record.encode_version(0).unwrap(), Bytes::from(bytes));
}

#[test]
fn an_older_version_refuses_a_field_it_cannot_carry() {
    let record = MetadataRecord::Partition(PartitionRecord {
        directories: vec![uuid_of(5)],
        ..Default::default()
    });
    assert_eq!(
        record.encode_version(0),
        Err(RecordError::FieldNotInVersion {
            record: "PartitionRecord",
            version: 0,
            field: "Directories"
        })
    );
    assert!(record.encode_version(1).is_ok());
    assert!(matches!(
        record.encode_version(3),
        Err(RecordError::UnsupportedVersion { .. })
    ));
}

#[test]
fn register_broker_v0_decodes_with_schema_defaults_for_later_fields() {
    let record = MetadataRecord::RegisterBroker(RegisterBrokerRecord {
        broker_id: 4,
        broker_epoch: 10,
        rack: Some("r1".into()),
        fenced: false,
        ..Default::default()
    });
    let v0 = record.encode_version(0).unwrap();
    assert_eq!(
        MetadataRecord::decode_with_version(&v0),
        Ok((record.clone(), 0))
    );
    assert!(v0.len() < record.encode().len());
}

// ------------------------------------------------------------------------------------------
// Malformed input
// ------------------------------------------------------------------------------------------

#[test]
fn frame_version_zero_is_refused() {
    assert_eq!(
        MetadataRecord::decode(&[0x00, 0x02, 0x00]),
        Err(RecordError::UnsupportedFrameVersion(0))
    );
}

#[test]
fn an_unknown_or_unsupported_api_key_is_named() {
    assert_eq!(
        MetadataRecord::decode(&[0x01, 0x0a, 0x00]),
        Err(RecordError::UnknownRecordType(10))
    );
}

#[test]
fn a_huge_array_length_is_refused_before_allocating() {
    // PartitionRecord whose Replicas claims 2^32 - 2 elements.
    let mut bytes = vec![0x01, 0x03, 0x00, 0, 0, 0, 0];
    bytes.extend([0u8; 16]);
    bytes.extend([0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(matches!(
        MetadataRecord::decode(&bytes),
        Err(RecordError::LengthTooLarge {
            field: "Replicas",
            ..
        })
    ));
}

#[test]
fn a_six_byte_varint_is_refused() {
    assert_eq!(
        MetadataRecord::decode(&[0x81, 0x80, 0x80, 0x80, 0x80, 0x00]),
        Err(RecordError::VarintTooLong {
            field: "frame version"
        })
    );
}

#[test]
fn bytes_after_the_record_are_garbage() {
    let mut bytes = MetadataRecord::NoOp(NoOpRecord::default())
        .encode()
        .to_vec();
    bytes.push(0);
    assert_eq!(
        MetadataRecord::decode(&bytes),
        Err(RecordError::TrailingBytes {
            record: "NoOpRecord",
            count: 1
        })
    );
}

#[test]
fn a_known_tag_with_the_wrong_declared_size_is_refused() {
    // PartitionChangeRecord, tag 1 (Leader, an int32) declared as 5 bytes.
    let mut bytes = vec![0x01, 0x05, 0x02, 0, 0, 0, 0];
    bytes.extend([0u8; 16]);
    bytes.extend([0x01, 0x01, 0x05, 0, 0, 0, 3, 9]);
    assert!(matches!(
        MetadataRecord::decode(&bytes),
        Err(RecordError::TaggedFieldSize { tag: 1, .. })
    ));
}

// ------------------------------------------------------------------------------------------
// Strategies: arbitrary values of every record type
// ------------------------------------------------------------------------------------------

fn any_uuid() -> impl Strategy<Value = Uuid> {
    any::<u128>().prop_map(Uuid::from_u128)
}
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9._é-]{0,12}"
}
fn ids() -> impl Strategy<Value = Vec<i32>> {
    vec(-1i32..10, 0..5)
}
fn unknown_tags(first_free: u32) -> impl Strategy<Value = UnknownTaggedFields> {
    btree_map(
        first_free..first_free + 100,
        vec(any::<u8>(), 0..4).prop_map(Bytes::from),
        0..2,
    )
}
fn endpoint() -> impl Strategy<Value = BrokerEndpoint> {
    (name(), name(), any::<u16>(), any::<i16>(), unknown_tags(0)).prop_map(
        |(name, host, port, security_protocol, unknown_tagged_fields)| BrokerEndpoint {
            name,
            host,
            port,
            security_protocol,
            unknown_tagged_fields,
        },
    )
}
fn feature() -> impl Strategy<Value = BrokerFeature> {
    (name(), any::<i16>(), any::<i16>()).prop_map(|(name, lo, hi)| BrokerFeature {
        name,
        min_supported_version: lo,
        max_supported_version: hi,
        unknown_tagged_fields: Default::default(),
    })
}
fn bytes_field() -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..8).prop_map(Bytes::from)
}

pub(super) fn any_record() -> impl Strategy<Value = MetadataRecord> {
    prop_oneof![
        (
            (any::<i32>(), any::<bool>(), any_uuid(), any::<i64>()),
            (
                vec(endpoint(), 0..3),
                vec(feature(), 0..3),
                option::of(name())
            ),
            (
                any::<bool>(),
                any::<bool>(),
                vec(any_uuid(), 0..3),
                unknown_tags(1)
            ),
        )
            .prop_map(|((id, zk, inc, ep), (eps, fs, rack), (f, ics, dirs, u))| {
                RegisterBrokerRecord {
                    broker_id: id,
                    is_migrating_zk_broker: zk,
                    incarnation_id: inc,
                    broker_epoch: ep,
                    end_points: eps,
                    features: fs,
                    rack,
                    fenced: f,
                    in_controlled_shutdown: ics,
                    log_dirs: dirs,
                    unknown_tagged_fields: u,
                }
                .into()
            }),
        (any::<i32>(), any::<i64>()).prop_map(|(broker_id, broker_epoch)| {
            UnregisterBrokerRecord {
                broker_id,
                broker_epoch,
                ..Default::default()
            }
            .into()
        }),
        (name(), any_uuid()).prop_map(|(name, topic_id)| TopicRecord {
            name,
            topic_id,
            ..Default::default()
        }
        .into()),
        (
            (any::<i32>(), any_uuid(), ids(), ids(), ids(), ids()),
            (any::<i32>(), any::<i8>(), any::<i32>(), any::<i32>()),
            (
                vec(any_uuid(), 0..3),
                option::of(ids()),
                option::of(ids()),
                unknown_tags(3)
            ),
        )
            .prop_map(
                |((p, t, r, isr, rm, add), (l, lrs, le, pe), (d, elr, lke, u))| {
                    PartitionRecord {
                        partition_id: p,
                        topic_id: t,
                        replicas: r,
                        isr,
                        removing_replicas: rm,
                        adding_replicas: add,
                        leader: l,
                        leader_recovery_state: lrs,
                        leader_epoch: le,
                        partition_epoch: pe,
                        directories: d,
                        eligible_leader_replicas: elr,
                        last_known_elr: lke,
                        unknown_tagged_fields: u,
                    }
                    .into()
                }
            ),
        (any::<i8>(), name(), name(), option::of(name())).prop_map(|(t, rn, n, v)| {
            ConfigRecord {
                resource_type: t,
                resource_name: rn,
                name: n,
                value: v,
                ..Default::default()
            }
            .into()
        }),
        (
            (
                any::<i32>(),
                any_uuid(),
                option::of(ids()),
                any::<i32>(),
                option::of(ids())
            ),
            (option::of(ids()), option::of(ids()), any::<i8>()),
            (
                option::of(vec(any_uuid(), 0..3)),
                option::of(ids()),
                option::of(ids()),
                unknown_tags(9)
            ),
        )
            .prop_map(|((p, t, isr, l, r), (rm, add, lrs), (d, elr, lke, u))| {
                PartitionChangeRecord {
                    partition_id: p,
                    topic_id: t,
                    isr,
                    leader: l,
                    replicas: r,
                    removing_replicas: rm,
                    adding_replicas: add,
                    leader_recovery_state: lrs,
                    directories: d,
                    eligible_leader_replicas: elr,
                    last_known_elr: lke,
                    unknown_tagged_fields: u,
                }
                .into()
            }),
        (any::<i32>(), any::<i64>()).prop_map(|(id, epoch)| FenceBrokerRecord {
            id,
            epoch,
            ..Default::default()
        }
        .into()),
        (any::<i32>(), any::<i64>()).prop_map(|(id, epoch)| UnfenceBrokerRecord {
            id,
            epoch,
            ..Default::default()
        }
        .into()),
        any_uuid().prop_map(|topic_id| RemoveTopicRecord {
            topic_id,
            ..Default::default()
        }
        .into()),
        (
            name(),
            any::<i8>(),
            bytes_field(),
            bytes_field(),
            bytes_field(),
            any::<i32>()
        )
            .prop_map(|(name, m, salt, sk, svk, it)| UserScramCredentialRecord {
                name,
                mechanism: m,
                salt,
                stored_key: sk,
                server_key: svk,
                iterations: it,
                ..Default::default()
            }
            .into()),
        (name(), any::<i16>()).prop_map(|(name, feature_level)| FeatureLevelRecord {
            name,
            feature_level,
            ..Default::default()
        }
        .into()),
        (any::<i32>(), any::<i64>(), any::<i64>()).prop_map(|(b, e, n)| ProducerIdsRecord {
            broker_id: b,
            broker_epoch: e,
            next_producer_id: n,
            ..Default::default()
        }
        .into()),
        (
            any::<i32>(),
            any::<i64>(),
            any::<i8>(),
            any::<i8>(),
            vec(any_uuid(), 0..3),
            unknown_tags(3)
        )
            .prop_map(|(b, e, f, ics, dirs, u)| BrokerRegistrationChangeRecord {
                broker_id: b,
                broker_epoch: e,
                fenced: f,
                in_controlled_shutdown: ics,
                log_dirs: dirs,
                unknown_tagged_fields: u,
            }
            .into()),
        (
            any_uuid(),
            any::<i8>(),
            name(),
            any::<i8>(),
            name(),
            name(),
            any::<i8>(),
            any::<i8>()
        )
            .prop_map(|(id, rt, rn, pt, p, h, o, pm)| AccessControlEntryRecord {
                id,
                resource_type: rt,
                resource_name: rn,
                pattern_type: pt,
                principal: p,
                host: h,
                operation: o,
                permission_type: pm,
                ..Default::default()
            }
            .into()),
        any_uuid().prop_map(|id| RemoveAccessControlEntryRecord {
            id,
            ..Default::default()
        }
        .into()),
        unknown_tags(0).prop_map(|u| NoOpRecord {
            unknown_tagged_fields: u
        }
        .into()),
        any::<i8>().prop_map(|s| ZkMigrationStateRecord {
            zk_migration_state: s,
            ..Default::default()
        }
        .into()),
        (name(), any::<i8>()).prop_map(|(name, mechanism)| {
            RemoveUserScramCredentialRecord {
                name,
                mechanism,
                ..Default::default()
            }
            .into()
        }),
        (
            vec(
                (name(), option::of(name())).prop_map(|(entity_type, entity_name)| {
                    ClientQuotaEntityData {
                        entity_type,
                        entity_name,
                    }
                }),
                0..3
            ),
            name(),
            any::<f64>(),
            any::<bool>()
        )
            .prop_map(|(entity, key, value, remove)| {
                ClientQuotaRecord {
                    entity,
                    key,
                    value,
                    remove,
                    ..Default::default()
                }
                .into()
            }),
        option::of(name()).prop_map(|name| BeginTransactionRecord {
            name,
            ..Default::default()
        }
        .into()),
        Just(EndTransactionRecord::default().into()),
        option::of(name()).prop_map(|reason| AbortTransactionRecord {
            reason,
            ..Default::default()
        }
        .into()),
        (
            any::<i32>(),
            any_uuid(),
            any::<bool>(),
            vec(endpoint(), 0..3),
            vec(feature(), 0..3)
        )
            .prop_map(|(id, inc, zk, eps, fs)| RegisterControllerRecord {
                controller_id: id,
                incarnation_id: inc,
                zk_migration_ready: zk,
                end_points: eps,
                features: fs,
                ..Default::default()
            }
            .into()),
        name().prop_map(|topic_name| ClearElrRecord {
            topic_name,
            ..Default::default()
        }
        .into()),
    ]
}

/// Api key and latest version of every supported type, to aim random bodies at real decoders.
const SUPPORTED: &[(u8, u8)] = &[
    (0, 3),
    (1, 0),
    (2, 0),
    (3, 2),
    (4, 0),
    (5, 2),
    (7, 0),
    (8, 0),
    (9, 0),
    (11, 0),
    (12, 0),
    (15, 0),
    (17, 2),
    (18, 0),
    (19, 0),
    (20, 0),
    (21, 0),
    (22, 0),
    (23, 0),
    (24, 0),
    (25, 0),
    (27, 0),
    (28, 0),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_record_round_trips_at_its_latest_version(record in any_record()) {
        let bytes = record.encode();
        prop_assert_eq!(
            MetadataRecord::decode_with_version(&bytes),
            Ok((record.clone(), record.latest_version()))
        );
    }

    #[test]
    fn every_record_round_trips_at_every_version_that_can_carry_it(
        record in any_record(), version in 0u16..4,
    ) {
        if let Ok(bytes) = record.encode_version(version) {
            let (decoded, v) = MetadataRecord::decode_with_version(&bytes).unwrap();
            prop_assert_eq!(v, version);
            // Re-encoding at the same version gives the same bytes.
            prop_assert_eq!(decoded.encode_version(version).unwrap(), bytes);
        }
    }

    #[test]
    fn every_truncation_of_a_valid_record_is_an_error(record in any_record(), cut in any::<prop::sample::Index>()) {
        let bytes = record.encode();
        let at = cut.index(bytes.len());
        prop_assert!(MetadataRecord::decode(&bytes[..at]).is_err());
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..64)) {
        let _ = MetadataRecord::decode(&bytes);
    }

    #[test]
    fn random_bodies_of_real_types_never_panic_and_reencode_consistently(
        which in 0..SUPPORTED.len(), body in vec(any::<u8>(), 0..96),
    ) {
        let (key, version) = SUPPORTED[which];
        let mut bytes = vec![1, key, version];
        bytes.extend(body);
        if let Ok(record) = MetadataRecord::decode(&bytes) {
            prop_assert_eq!(MetadataRecord::decode(&record.encode()), Ok(record));
        }
    }

    #[test]
    fn flipping_a_byte_of_a_valid_record_never_panics(
        record in any_record(), at in any::<prop::sample::Index>(), value in any::<u8>(),
    ) {
        let mut bytes = record.encode().to_vec();
        let i = at.index(bytes.len());
        bytes[i] = value;
        let _ = MetadataRecord::decode(&bytes);
    }
}
