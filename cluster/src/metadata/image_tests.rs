//! Specifications of the metadata image: apply semantics as Kafka's `MetadataDelta`, sharing
//! between successive images, snapshots (`to_records`) that rebuild the image exactly, and the
//! memory a partition costs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use uuid::Uuid;

use super::image::*;
use super::records::*;

fn tid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn topic(name: &str, id: u128) -> MetadataRecord {
    TopicRecord {
        name: name.into(),
        topic_id: tid(id),
        ..Default::default()
    }
    .into()
}

fn partition(id: u128, partition_id: i32, replicas: &[i32]) -> MetadataRecord {
    PartitionRecord {
        partition_id,
        topic_id: tid(id),
        replicas: replicas.to_vec(),
        isr: replicas.to_vec(),
        leader: replicas[0],
        leader_epoch: 0,
        partition_epoch: 0,
        ..Default::default()
    }
    .into()
}

fn broker(id: i32, epoch: i64) -> MetadataRecord {
    RegisterBrokerRecord {
        broker_id: id,
        broker_epoch: epoch,
        end_points: vec![BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: format!("b{id}"),
            port: 9092,
            security_protocol: 0,
            ..Default::default()
        }],
        ..Default::default()
    }
    .into()
}

fn image_of(records: &[MetadataRecord]) -> MetadataImage {
    MetadataImage::new().with_records(records).unwrap()
}

#[test]
fn partition_change_without_leader_field_keeps_the_leader() {
    let img = image_of(&[
        topic("t", 1),
        partition(1, 0, &[1, 2, 3]),
        PartitionChangeRecord {
            topic_id: tid(1),
            partition_id: 0,
            isr: Some(vec![1, 2]),
            ..Default::default()
        }
        .into(),
    ]);
    let p = img
        .topic_by_name("t")
        .unwrap()
        .partition(0)
        .unwrap()
        .clone();
    assert_eq!((p.leader, p.leader_epoch), (1, 0));
    assert_eq!(&*p.isr, &[1, 2]);
    assert_eq!(&*p.replicas, &[1, 2, 3], "absent replicas mean unchanged");
    assert_eq!(
        p.partition_epoch, 1,
        "every change bumps the partition epoch"
    );
}

#[test]
fn partition_change_with_a_leader_bumps_the_leader_epoch() {
    let img = image_of(&[
        topic("t", 1),
        partition(1, 0, &[1, 2]),
        PartitionChangeRecord {
            topic_id: tid(1),
            partition_id: 0,
            leader: NO_LEADER,
            ..Default::default()
        }
        .into(),
    ]);
    let p = img
        .topic_by_id(&tid(1))
        .unwrap()
        .partition(0)
        .unwrap()
        .clone();
    assert_eq!(
        (p.leader, p.leader_epoch, p.partition_epoch),
        (NO_LEADER, 1, 1)
    );
}

#[test]
fn remove_topic_removes_its_partitions_and_its_configs() {
    let img = image_of(&[
        topic("t", 1),
        partition(1, 0, &[1]),
        ConfigRecord {
            resource_type: CONFIG_RESOURCE_TOPIC,
            resource_name: "t".into(),
            name: "retention.ms".into(),
            value: Some("1000".into()),
            ..Default::default()
        }
        .into(),
        RemoveTopicRecord {
            topic_id: tid(1),
            ..Default::default()
        }
        .into(),
    ]);
    assert!(img.topic_by_name("t").is_none());
    assert!(img.topic_by_id(&tid(1)).is_none());
    assert!(img.configs(CONFIG_RESOURCE_TOPIC, "t").is_none());
    assert_eq!(img, MetadataImage::new());
}

#[test]
fn a_record_for_a_missing_topic_is_an_error_and_changes_nothing() {
    let before = image_of(&[topic("t", 1)]);
    let mut img = before.clone();
    assert_eq!(
        img.apply(&partition(2, 0, &[1])),
        Err(ImageError::UnknownTopicId(tid(2)))
    );
    let change = PartitionChangeRecord {
        topic_id: tid(1),
        partition_id: 5,
        ..Default::default()
    };
    assert_eq!(
        img.apply(&change.into()),
        Err(ImageError::UnknownPartition {
            topic_id: tid(1),
            partition_id: 5
        })
    );
    assert_eq!(img, before);
}

#[test]
fn fencing_needs_the_registered_epoch() {
    let mut img = image_of(&[broker(1, 10)]);
    let fence = |epoch| FenceBrokerRecord {
        id: 1,
        epoch,
        ..Default::default()
    };
    assert!(matches!(
        img.apply(&fence(9).into()),
        Err(ImageError::BrokerEpochMismatch { .. })
    ));
    let unfence = UnfenceBrokerRecord {
        id: 1,
        epoch: 10,
        ..Default::default()
    };
    img.apply(&unfence.into()).unwrap();
    assert!(!img.broker(1).unwrap().fenced);
    img.apply(&fence(10).into()).unwrap();
    assert!(img.broker(1).unwrap().fenced);
    assert!(matches!(
        img.apply(
            &FenceBrokerRecord {
                id: 2,
                ..Default::default()
            }
            .into()
        ),
        Err(ImageError::BrokerNotRegistered { broker_id: 2, .. })
    ));
}

#[test]
fn broker_registration_change_applies_only_the_fields_it_sets() {
    let mut img = image_of(&[broker(1, 3)]);
    let change = BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 3,
        fenced: -1,
        in_controlled_shutdown: 1,
        ..Default::default()
    };
    img.apply(&change.into()).unwrap();
    let b = img.broker(1).unwrap();
    assert!(!b.fenced && b.in_controlled_shutdown);
    let bad = BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 3,
        fenced: 2,
        ..Default::default()
    };
    assert!(matches!(
        img.apply(&bad.into()),
        Err(ImageError::InvalidBrokerChange {
            field: "Fenced",
            value: 2
        })
    ));
}

#[test]
fn a_null_config_value_deletes_the_key_and_an_empty_resource_goes() {
    let set = |v: Option<&str>| -> MetadataRecord {
        ConfigRecord {
            resource_type: CONFIG_RESOURCE_BROKER,
            resource_name: "".into(),
            name: "log.retention.ms".into(),
            value: v.map(Into::into),
            ..Default::default()
        }
        .into()
    };
    let img = image_of(&[set(Some("5"))]);
    assert_eq!(
        img.configs(CONFIG_RESOURCE_BROKER, "")
            .unwrap()
            .get("log.retention.ms"),
        Some(&"5".to_string())
    );
    let img = img.with_records(&[set(None)]).unwrap();
    assert!(img.configs(CONFIG_RESOURCE_BROKER, "").is_none());
}

#[test]
fn config_resources_list_every_resource_with_configs_and_same_acls_sees_acl_changes_only() {
    let config = |resource_type, name: &str| -> MetadataRecord {
        ConfigRecord {
            resource_type,
            resource_name: name.into(),
            name: "k".into(),
            value: Some("v".into()),
            ..Default::default()
        }
        .into()
    };
    let img = image_of(&[
        config(CONFIG_RESOURCE_GROUP, "g"),
        config(CONFIG_RESOURCE_BROKER, ""),
    ]);
    let mut listed: Vec<(i8, &str)> = img
        .config_resources()
        .map(|(r, configs)| {
            assert_eq!(configs.get("k").map(String::as_str), Some("v"));
            (r.resource_type, r.resource_name.as_str())
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![(CONFIG_RESOURCE_BROKER, ""), (CONFIG_RESOURCE_GROUP, "g")]
    );

    let acl: MetadataRecord = AccessControlEntryRecord {
        id: tid(1),
        resource_type: 2,
        resource_name: "t".into(),
        pattern_type: 3,
        principal: "User:a".into(),
        host: "*".into(),
        operation: 3,
        permission_type: 3,
        ..Default::default()
    }
    .into();
    let configs_changed = img
        .with_records(&[config(CONFIG_RESOURCE_GROUP, "h")])
        .unwrap();
    assert!(img.same_acls(&configs_changed));
    let acls_changed = img.with_records(&[acl]).unwrap();
    assert!(!img.same_acls(&acls_changed));
    assert!(acls_changed.same_acls(&acls_changed.clone()));
}

#[test]
fn feature_level_zero_removes_a_feature_but_metadata_version_is_kept() {
    let level = |name: &str, feature_level| -> MetadataRecord {
        FeatureLevelRecord {
            name: name.into(),
            feature_level,
            ..Default::default()
        }
        .into()
    };
    let img = image_of(&[
        level("metadata.version", 25),
        level("kraft.version", 1),
        level("kraft.version", 0),
    ]);
    assert_eq!(img.metadata_version(), Some(25));
    assert!(img.features().is_empty());
}

#[test]
fn removing_an_unknown_acl_or_credential_is_an_error() {
    let mut img = MetadataImage::new();
    let acl = RemoveAccessControlEntryRecord {
        id: tid(9),
        ..Default::default()
    };
    assert_eq!(img.apply(&acl.into()), Err(ImageError::UnknownAcl(tid(9))));
    let scram = RemoveUserScramCredentialRecord {
        name: "alice".into(),
        mechanism: 1,
        ..Default::default()
    };
    assert!(matches!(
        img.apply(&scram.into()),
        Err(ImageError::UnknownScramCredential { .. })
    ));
}

#[test]
fn a_topic_name_cannot_be_taken_twice() {
    let mut img = image_of(&[topic("t", 1)]);
    assert_eq!(
        img.apply(&topic("t", 2)),
        Err(ImageError::TopicNameExists("t".into()))
    );
}

#[test]
fn the_next_image_shares_every_untouched_topic() {
    let mut records = Vec::new();
    for i in 0..1000u128 {
        records.push(topic(&format!("t{i}"), i + 1));
        records.push(partition(i + 1, 0, &[1, 2, 3]));
    }
    let old = Arc::new(image_of(&records));
    let change = PartitionChangeRecord {
        topic_id: tid(1),
        partition_id: 0,
        leader: 2,
        ..Default::default()
    };
    let new = Arc::new(old.with_records(&[change.into()]).unwrap());
    let shared = old
        .topics()
        .filter(|t| Arc::ptr_eq(t, new.topic_by_id(&t.id).unwrap()))
        .count();
    assert_eq!(shared, 999);
    assert_eq!(
        old.topic_by_id(&tid(1))
            .unwrap()
            .partition(0)
            .unwrap()
            .leader,
        1
    );
    assert_eq!(
        new.topic_by_id(&tid(1))
            .unwrap()
            .partition(0)
            .unwrap()
            .leader,
        2
    );
}

// ------------------------------------------------------------------------------------------
// Snapshots: apply(to_records(image)) == image for images built from random records
// ------------------------------------------------------------------------------------------

/// Records over small id spaces, so that most of them refer to things that exist.
fn any_image_record() -> impl Strategy<Value = MetadataRecord> {
    let ids = || proptest::collection::vec(0i32..4, 0..4);
    let opt_ids = move || proptest::option::of(ids());
    prop_oneof![
        (
            0i32..4,
            0i64..3,
            any::<bool>(),
            proptest::option::of("[a-c]")
        )
            .prop_map(|(id, epoch, fenced, rack)| {
                let mut r = match broker(id, epoch) {
                    MetadataRecord::RegisterBroker(r) => r,
                    _ => unreachable!(),
                };
                r.fenced = fenced;
                r.rack = rack;
                r.into()
            }),
        (0i32..4, 0i64..3).prop_map(|(id, epoch)| UnregisterBrokerRecord {
            broker_id: id,
            broker_epoch: epoch,
            ..Default::default()
        }
        .into()),
        (0i32..4, 0i64..3).prop_map(|(id, epoch)| FenceBrokerRecord {
            id,
            epoch,
            ..Default::default()
        }
        .into()),
        (0i32..4, 0i64..3).prop_map(|(id, epoch)| UnfenceBrokerRecord {
            id,
            epoch,
            ..Default::default()
        }
        .into()),
        (0i32..4, 0i64..3, -1i8..2, 0i8..2).prop_map(|(id, epoch, f, ics)| {
            BrokerRegistrationChangeRecord {
                broker_id: id,
                broker_epoch: epoch,
                fenced: f,
                in_controlled_shutdown: ics,
                ..Default::default()
            }
            .into()
        }),
        (0u128..4).prop_map(|i| topic(&format!("t{i}"), i)),
        (0u128..4, 0i32..3, ids(), ids(), -1i32..4, 0i8..2, opt_ids()).prop_map(
            |(t, p, replicas, isr, leader, lrs, elr)| PartitionRecord {
                partition_id: p,
                topic_id: tid(t),
                replicas,
                isr,
                leader,
                leader_recovery_state: lrs,
                leader_epoch: 0,
                partition_epoch: 0,
                eligible_leader_replicas: elr,
                ..Default::default()
            }
            .into()
        ),
        (
            0u128..4,
            0i32..3,
            opt_ids(),
            -2i32..4,
            opt_ids(),
            opt_ids(),
            -1i8..2
        )
            .prop_map(
                |(t, p, isr, leader, replicas, elr, lrs)| PartitionChangeRecord {
                    partition_id: p,
                    topic_id: tid(t),
                    isr,
                    leader,
                    replicas,
                    eligible_leader_replicas: elr,
                    leader_recovery_state: lrs,
                    ..Default::default()
                }
                .into()
            ),
        (0u128..4).prop_map(|t| RemoveTopicRecord {
            topic_id: tid(t),
            ..Default::default()
        }
        .into()),
        proptest::option::of(0u128..4).prop_map(|t| ClearElrRecord {
            topic_name: t.map(|t| format!("t{t}")).unwrap_or_default(),
            ..Default::default()
        }
        .into()),
        (
            prop_oneof![Just(CONFIG_RESOURCE_TOPIC), Just(CONFIG_RESOURCE_BROKER)],
            "t[0-3]|",
            "[ab]",
            proptest::option::of("[0-9]")
        )
            .prop_map(|(rt, rn, name, value)| ConfigRecord {
                resource_type: rt,
                resource_name: rn,
                name,
                value,
                ..Default::default()
            }
            .into()),
        (0u128..4, "[a-c]").prop_map(|(id, principal)| AccessControlEntryRecord {
            id: tid(id),
            resource_type: 2,
            resource_name: "t0".into(),
            pattern_type: 3,
            principal: format!("User:{principal}"),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        }
        .into()),
        (0u128..4).prop_map(|id| RemoveAccessControlEntryRecord {
            id: tid(id),
            ..Default::default()
        }
        .into()),
        ("[ab]", 1i8..3, 4096i32..5000).prop_map(|(name, mechanism, iterations)| {
            UserScramCredentialRecord {
                name,
                mechanism,
                salt: bytes::Bytes::from_static(b"salt"),
                iterations,
                ..Default::default()
            }
            .into()
        }),
        ("[ab]", 1i8..3).prop_map(|(name, mechanism)| RemoveUserScramCredentialRecord {
            name,
            mechanism,
            ..Default::default()
        }
        .into()),
        (
            prop_oneof![Just("metadata.version"), Just("kraft.version")],
            0i16..3
        )
            .prop_map(|(name, level)| FeatureLevelRecord {
                name: name.into(),
                feature_level: level,
                ..Default::default()
            }
            .into()),
        (0i64..10_000).prop_map(|n| ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 0,
            next_producer_id: n,
            ..Default::default()
        }
        .into()),
        Just(NoOpRecord::default().into()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn applying_to_records_of_an_image_rebuilds_the_image(
        records in proptest::collection::vec(any_image_record(), 0..60),
    ) {
        let mut img = MetadataImage::new();
        for r in &records {
            let before = img.clone();
            if img.apply(r).is_err() {
                prop_assert_eq!(&img, &before, "a failed apply must leave the image unchanged");
            }
        }
        let snapshot = img.to_records();
        prop_assert_eq!(&MetadataImage::new().with_records(&snapshot).unwrap(), &img);
        // And through the wire format, as a snapshot file would carry it.
        let decoded: Vec<MetadataRecord> = snapshot
            .iter()
            .map(|r| MetadataRecord::decode(&r.encode()).unwrap())
            .collect();
        prop_assert_eq!(MetadataImage::new().with_records(&decoded).unwrap(), img);
    }
}

// ------------------------------------------------------------------------------------------
// Memory: bytes per partition
// ------------------------------------------------------------------------------------------

/// Counts live heap bytes, for the measurement below (which must run alone to be exact).
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Run with `cargo test -p samsa-cluster bytes_per_partition -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run alone for an exact figure"]
fn bytes_per_partition_of_100_000_single_partition_topics() {
    const N: u128 = 100_000;
    let before = LIVE.load(Ordering::Relaxed);
    let mut img = MetadataImage::new();
    for i in 0..N {
        img.apply(&topic(&format!("topic-{i:05}"), i + 1)).unwrap();
        img.apply(&partition(i + 1, 0, &[1, 2, 3])).unwrap();
    }
    let after = LIVE.load(Ordering::Relaxed);
    let per = (after - before) as f64 / N as f64;
    println!("{per:.0} heap bytes per single-partition topic (3 replicas, 11-byte name)");
    assert_eq!(img.topic_count(), N as usize);
    assert!(per < 1024.0, "{per} bytes per partition");
}

fn quota(entity: &[(&str, Option<&str>)], key: &str, value: f64, remove: bool) -> MetadataRecord {
    ClientQuotaRecord {
        entity: entity
            .iter()
            .map(|(t, n)| ClientQuotaEntityData {
                entity_type: t.to_string(),
                entity_name: n.map(str::to_string),
            })
            .collect(),
        key: key.into(),
        value,
        remove,
        ..Default::default()
    }
    .into()
}

#[test]
fn client_quotas_are_kept_by_entity_whatever_its_parts_order_and_go_with_their_last_key() {
    let alice_app = [("user", Some("alice")), ("client-id", Some("app"))];
    let app_alice = [("client-id", Some("app")), ("user", Some("alice"))];
    let image = image_of(&[
        quota(&alice_app, "producer_byte_rate", 1024.0, false),
        quota(&app_alice, "consumer_byte_rate", 2048.0, false),
        quota(&[("user", None)], "request_percentage", 50.0, false),
        // Removing what is not set is no error.
        quota(
            &[("ip", Some("10.0.0.1"))],
            "connection_creation_rate",
            0.0,
            true,
        ),
    ]);
    let quotas = image.client_quotas();
    assert_eq!(quotas.len(), 2);
    let entity: ClientQuotaEntity = alice_app
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect();
    assert_eq!(quotas[&entity].len(), 2);
    assert_eq!(quotas[&entity]["consumer_byte_rate"], QuotaValue(2048.0));
    // A snapshot rebuilds the same quotas.
    assert_eq!(image_of(&image.to_records()), image);
    let image = image
        .with_records(&[
            quota(&alice_app, "producer_byte_rate", 0.0, true),
            quota(&app_alice, "consumer_byte_rate", 0.0, true),
        ])
        .unwrap();
    assert_eq!(image.client_quotas().len(), 1);
}
