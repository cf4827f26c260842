//! AlterPartitionReassignments through the controller: the records written, Kafka's answers,
//! completion by AlterPartition (NEW_LEADER_ELECTED to a removed leader), cancellation and
//! ListPartitionReassignments.

use kafka_protocol::ResponseError;

use super::tests::{alter_request, three_brokers, topic, Harness};
use super::*;
use crate::metadata::records::PartitionChangeRecord;

fn create(h: &mut Harness, name: &str, replicas: &[NodeId]) {
    let mut t = topic(name, -1, -1);
    t.assignments = vec![(0, replicas.to_vec())];
    assert_eq!(h.create_topics(vec![t])[0].error_code, 0);
}

fn request(
    name: &str,
    partition: i32,
    replicas: Option<&[NodeId]>,
    allow_rf_change: bool,
) -> AlterPartitionReassignmentsRequest {
    AlterPartitionReassignmentsRequest {
        allow_replication_factor_change: allow_rf_change,
        topics: vec![ReassignableTopic {
            name: name.into(),
            partitions: vec![ReassignablePartition {
                partition_index: partition,
                replicas: replicas.map(<[NodeId]>::to_vec),
            }],
        }],
    }
}

/// Runs the request and applies its records: the partition's (code, records written).
fn reassign(
    h: &mut Harness,
    request: &AlterPartitionReassignmentsRequest,
) -> (i16, Vec<MetadataRecord>) {
    let (records, results) = h
        .ctl
        .alter_partition_reassignments(&h.image, request)
        .expect("active");
    h.apply(&records);
    (results[0].partitions[0].error_code, records)
}

fn change(records: &[MetadataRecord]) -> &PartitionChangeRecord {
    match records {
        [MetadataRecord::PartitionChange(r)] => r,
        other => panic!("one PartitionChangeRecord expected, got {other:?}"),
    }
}

#[test]
fn reassignment_writes_target_then_removing_with_adding_and_removing() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2]);
    let (code, records) = reassign(&mut h, &request("t", 0, Some(&[2, 3]), false));
    assert_eq!(code, 0);
    let r = change(&records);
    assert_eq!(r.replicas.as_deref(), Some(&[2, 3, 1][..]));
    assert_eq!(r.adding_replicas.as_deref(), Some(&[3][..]));
    assert_eq!(r.removing_replicas.as_deref(), Some(&[1][..]));
    assert_eq!(r.isr, None);
    assert_eq!(r.leader, crate::metadata::records::NO_LEADER_CHANGE);
    let p = h.partition("t", 0);
    assert_eq!(p.directories.len(), 3, "a directory per replica");
    let listed = list_partition_reassignments(&h.image, None);
    assert_eq!(
        listed,
        vec![(
            "t".to_string(),
            vec![OngoingReassignment {
                partition_index: 0,
                replicas: vec![2, 3, 1],
                adding_replicas: vec![3],
                removing_replicas: vec![1],
            }]
        )]
    );
    assert_eq!(
        list_partition_reassignments(&h.image, Some(&[("t".into(), vec![0, 7])])).len(),
        1
    );
    assert!(list_partition_reassignments(&h.image, Some(&[("nope".into(), vec![0])])).is_empty());
}

#[test]
fn isr_expansion_completes_and_a_removed_leader_gets_new_leader_elected() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2]);
    assert_eq!(h.partition("t", 0).leader, 1);
    reassign(&mut h, &request("t", 0, Some(&[3, 2]), false));
    let epoch = h.partition("t", 0).leader_epoch;
    let alter = alter_request(&h, "t", 0, &[1, 2, 3]);
    let (records, results) = h.ctl.alter_partition(&h.image, &alter).unwrap();
    assert_eq!(
        results[0].partitions[0].error_code,
        ResponseError::NewLeaderElected.code()
    );
    h.apply(&records);
    let p = h.partition("t", 0);
    assert_eq!(
        (&p.replicas[..], &p.isr[..], p.leader),
        (&[3, 2][..], &[2, 3][..], 3)
    );
    assert!(p.adding_replicas.is_empty() && p.removing_replicas.is_empty());
    assert_eq!(p.leader_epoch, epoch + 1);
    assert_eq!(p.directories.len(), 2);
    assert!(list_partition_reassignments(&h.image, None).is_empty());
}

#[test]
fn completion_keeping_the_leader_answers_the_new_state() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2]);
    reassign(&mut h, &request("t", 0, Some(&[1, 3]), false));
    let alter = alter_request(&h, "t", 0, &[1, 2, 3]);
    let (records, results) = h.ctl.alter_partition(&h.image, &alter).unwrap();
    let answer = &results[0].partitions[0];
    assert_eq!(answer.error_code, 0);
    assert_eq!((answer.leader_id, &answer.isr[..]), (1, &[1, 3][..]));
    h.apply(&records);
    let p = h.partition("t", 0);
    assert_eq!(
        (&p.replicas[..], p.leader_epoch),
        (&[1, 3][..], answer.leader_epoch)
    );
}

#[test]
fn refusals_get_kafkas_codes() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2]);
    let code = |h: &mut Harness, r| reassign(h, &r).0;
    let invalid = ResponseError::InvalidReplicaAssignment.code();
    assert_eq!(code(&mut h, request("t", 0, Some(&[]), true)), invalid);
    assert_eq!(code(&mut h, request("t", 0, Some(&[2, 2]), true)), invalid);
    assert_eq!(code(&mut h, request("t", 0, Some(&[2, 9]), true)), invalid);
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(code(&mut h, request("t", 5, Some(&[1, 2]), true)), unknown);
    assert_eq!(
        code(&mut h, request("nope", 0, Some(&[1, 2]), true)),
        unknown
    );
    assert_eq!(
        code(&mut h, request("t", 0, None, true)),
        ResponseError::NoReassignmentInProgress.code()
    );
    assert_eq!(
        code(&mut h, request("t", 0, Some(&[1, 2, 3]), false)),
        ResponseError::InvalidReplicationFactor.code()
    );
    assert!(h.log.iter().all(|r| !matches!(
        r,
        MetadataRecord::PartitionChange(c) if c.replicas.is_some()
    )));
    // The current assignment again: accepted, nothing written.
    assert_eq!(
        reassign(&mut h, &request("t", 0, Some(&[1, 2]), false)),
        (0, vec![])
    );
}

#[test]
fn cancel_reverts_to_the_original_replicas() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2]);
    reassign(&mut h, &request("t", 0, Some(&[2, 3]), false));
    let (code, records) = reassign(&mut h, &request("t", 0, None, false));
    assert_eq!(code, 0);
    let r = change(&records);
    // Kafka's revert keeps the order of the replicas while moving, without the adding ones.
    assert_eq!(r.replicas.as_deref(), Some(&[2, 1][..]));
    assert_eq!(r.adding_replicas.as_deref(), Some(&[][..]));
    assert_eq!(r.removing_replicas.as_deref(), Some(&[][..]));
    let p = h.partition("t", 0);
    assert_eq!(
        (&p.replicas[..], &p.isr[..], p.leader),
        (&[2, 1][..], &[1, 2][..], 1)
    );
}

#[test]
fn an_inactive_controller_reassigns_nothing() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2]);
    h.ctl.deactivate();
    assert!(matches!(
        h.ctl
            .alter_partition_reassignments(&h.image, &request("t", 0, Some(&[2, 3]), true)),
        Err(ControllerError::NotController)
    ));
}
