//! CreateAcls and DeleteAcls rules.

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::tests::{cfg, Harness};
use super::*;
use crate::acl::{
    describe_acls, AclBinding, AclFilter, AclOperation, PatternType, PermissionType, ResourceType,
};
use crate::metadata::records::*;

fn binding(name: &str, principal: &str, operation: AclOperation) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::Topic,
        resource_name: name.into(),
        pattern_type: PatternType::Literal,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: PermissionType::Allow,
    }
}

fn read(name: &str) -> AclBinding {
    binding(name, "User:alice", AclOperation::Read)
}

/// Runs CreateAcls and applies its records.
fn create(
    h: &mut Harness,
    bindings: Vec<AclBinding>,
    seed: u64,
) -> (Vec<MetadataRecord>, Vec<CreateAclResult>) {
    let (records, results) = h.ctl.create_acls(&h.image, bindings, seed).unwrap();
    h.apply(&records);
    (records, results)
}

fn delete(
    h: &mut Harness,
    filters: Vec<AclFilter>,
) -> (Vec<MetadataRecord>, Vec<DeleteAclsFilterResult>) {
    let (records, results) = h.ctl.delete_acls(&h.image, filters).unwrap();
    h.apply(&records);
    (records, results)
}

fn described(h: &Harness) -> Vec<AclBinding> {
    describe_acls(&h.image, &AclFilter::any()).unwrap()
}

fn ok() -> CreateAclResult {
    CreateAclResult {
        error_code: 0,
        error_message: None,
    }
}

/// An image holding `n` distinct ACLs, applied directly (as a log would replay them).
fn with_acls(n: usize) -> Harness {
    let mut h = Harness::new(cfg());
    let records: Vec<MetadataRecord> = (0..n)
        .map(|i| {
            read(&format!("t{i}"))
                .to_record(Uuid::from_u128(i as u128 + 1))
                .into()
        })
        .collect();
    h.apply(&records);
    h
}

#[test]
fn created_acls_get_fresh_random_ids_and_the_image_describes_them() {
    let mut h = Harness::new(cfg());
    let a = read("orders");
    let b = binding("orders", "User:bob", AclOperation::Write);
    let (records, results) = create(&mut h, vec![a.clone(), b.clone()], 7);
    assert_eq!(results, vec![ok(), ok()]);
    let ids: Vec<Uuid> = records
        .iter()
        .map(|r| match r {
            MetadataRecord::AccessControlEntry(e) => e.id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        assert_eq!(id.get_version_num(), 4, "{id}");
    }
    assert_eq!(records[0], MetadataRecord::from(a.to_record(ids[0])));
    assert_eq!(described(&h), vec![a, b]);
}

#[test]
fn ids_derive_from_the_seed_and_skip_ids_in_use() {
    let h = Harness::new(cfg());
    let first = |h: &Harness, seed: u64| -> Uuid {
        let (records, _) = h.ctl.create_acls(&h.image, vec![read("x")], seed).unwrap();
        match &records[0] {
            MetadataRecord::AccessControlEntry(e) => e.id,
            other => panic!("{other:?}"),
        }
    };
    let id = first(&h, 1);
    assert_eq!(first(&h, 1), id, "the same seed gives the same id");
    assert_ne!(first(&h, 2), id);
    // Another ACL already has that id: the next one drawn is used.
    let mut h = h;
    h.apply(&[read("y").to_record(id).into()]);
    let next = first(&h, 1);
    assert_ne!(next, id);
    assert!(h.image.acls().all(|(taken, _)| *taken != next));
}

#[test]
fn an_acl_that_exists_or_repeats_is_created_once_and_succeeds_every_time() {
    let mut h = Harness::new(cfg());
    let a = read("orders");
    let (records, results) = create(&mut h, vec![a.clone(), a.clone()], 1);
    assert_eq!(records.len(), 1);
    assert_eq!(results, vec![ok(), ok()]);
    let (records, results) = create(&mut h, vec![a.clone()], 2);
    assert!(records.is_empty());
    assert_eq!(results, vec![ok()]);
    assert_eq!(h.image.acls().count(), 1);
}

#[test]
fn invalid_bindings_are_invalid_request_and_the_others_are_created() {
    let mut h = Harness::new(cfg());
    let mut bad = read("orders");
    bad.pattern_type = PatternType::Match;
    let good = binding("orders", "User:bob", AclOperation::Read);
    let mut no_colon = read("orders");
    no_colon.principal = "bob".into();
    let (records, results) = create(&mut h, vec![bad, good.clone(), no_colon], 1);
    assert_eq!(records.len(), 1);
    assert_eq!(
        results[0],
        CreateAclResult {
            error_code: ResponseError::InvalidRequest.code(),
            error_message: Some("Invalid patternType MATCH".into()),
        }
    );
    assert_eq!(results[1], ok());
    assert_eq!(results[2].error_code, ResponseError::InvalidRequest.code());
    assert_eq!(described(&h), vec![good]);
}

#[test]
fn new_acls_past_acls_max_are_all_policy_violation() {
    let mut h = with_acls(ACLS_MAX - 1);
    let (records, results) = create(&mut h, vec![read("new1"), read("t0"), read("new2")], 1);
    assert!(records.is_empty());
    let refused = CreateAclResult {
        error_code: ResponseError::PolicyViolation.code(),
        error_message: Some(format!(
            "cannot create 2 more ACLs: the cluster holds {} of at most {ACLS_MAX}",
            ACLS_MAX - 1
        )),
    };
    assert_eq!(results, vec![refused.clone(), ok(), refused]);
    let (records, results) = create(&mut h, vec![read("new1"), read("t0")], 1);
    assert_eq!((records.len(), results), (1, vec![ok(), ok()]));
    assert_eq!(h.image.acls().count(), ACLS_MAX);
}

#[test]
fn more_than_max_records_per_user_op_new_acls_refuse_the_whole_request() {
    let h = Harness::new(cfg());
    let many = |n: usize| (0..n).map(|i| read(&format!("t{i}"))).collect::<Vec<_>>();
    let (records, _) = h
        .ctl
        .create_acls(&h.image, many(MAX_RECORDS_PER_USER_OP), 1)
        .unwrap();
    assert_eq!(records.len(), MAX_RECORDS_PER_USER_OP);
    let mut too_many = many(MAX_RECORDS_PER_USER_OP + 1);
    // Repeats are no new records.
    too_many.push(read("t0"));
    assert_eq!(
        h.ctl.create_acls(&h.image, too_many, 1),
        Err(ControllerError::BatchTooLarge {
            records: MAX_RECORDS_PER_USER_OP + 1
        })
    );
}

#[test]
fn delete_acls_reports_each_filters_matches_and_removes_each_acl_once() {
    let mut h = Harness::new(cfg());
    let a = read("orders");
    let b = binding("orders", "User:bob", AclOperation::Write);
    let c = binding("payments", "User:bob", AclOperation::Write);
    create(&mut h, vec![a.clone(), b.clone(), c.clone()], 3);
    let mut by_bob = AclFilter::any();
    by_bob.principal = Some("User:bob".into());
    let mut writes_to_orders = AclFilter::any();
    writes_to_orders.resource_name = Some("orders".into());
    writes_to_orders.operation = AclOperation::Write;
    let mut broken = AclFilter::any();
    broken.operation = AclOperation::Unknown;
    let mut nothing = AclFilter::any();
    nothing.principal = Some("User:carol".into());
    let (records, results) = delete(&mut h, vec![by_bob, writes_to_orders, broken, nothing]);
    assert_eq!(records.len(), 2, "b once, c: {records:?}");
    assert!(records
        .iter()
        .all(|r| matches!(r, MetadataRecord::RemoveAccessControlEntry(_))));
    assert_eq!(results[0].matching_acls, vec![b.clone(), c]);
    assert_eq!(results[1].matching_acls, vec![b]);
    assert_eq!(
        results[2],
        DeleteAclsFilterResult {
            error_code: ResponseError::InvalidRequest.code(),
            error_message: Some("Unknown operation in the ACL filter".into()),
            matching_acls: vec![],
        }
    );
    assert_eq!(
        results[3],
        DeleteAclsFilterResult {
            error_code: 0,
            error_message: None,
            matching_acls: vec![],
        }
    );
    assert_eq!(described(&h), vec![a]);
}

#[test]
fn a_match_filter_deletes_every_acl_that_applies_to_the_resource() {
    let mut h = Harness::new(cfg());
    let literal = read("orders");
    let wildcard = read("*");
    let mut prefix = read("ord");
    prefix.pattern_type = PatternType::Prefixed;
    let other = read("payments");
    create(
        &mut h,
        vec![
            literal.clone(),
            wildcard.clone(),
            prefix.clone(),
            other.clone(),
        ],
        5,
    );
    let mut f = AclFilter::any();
    f.pattern_type = PatternType::Match;
    f.resource_name = Some("orders".into());
    let (records, results) = delete(&mut h, vec![f]);
    assert_eq!(records.len(), 3);
    assert_eq!(results[0].matching_acls, vec![wildcard, prefix, literal]);
    assert_eq!(described(&h), vec![other]);
}

#[test]
fn a_binding_held_under_two_ids_is_removed_under_both() {
    let mut h = Harness::new(cfg());
    let a = read("orders");
    h.apply(&[
        a.to_record(Uuid::from_u128(1)).into(),
        a.to_record(Uuid::from_u128(2)).into(),
    ]);
    let (records, results) = delete(&mut h, vec![AclFilter::any()]);
    assert_eq!(records.len(), 2);
    assert_eq!(results[0].matching_acls, vec![a]);
    assert_eq!(h.image.acls().count(), 0);
}

#[test]
fn a_filter_that_would_remove_more_than_max_records_per_user_op_is_refused_alone() {
    let mut h = with_acls(MAX_RECORDS_PER_USER_OP + 1);
    let mut one = AclFilter::any();
    one.resource_name = Some("t0".into());
    let (records, results) = delete(&mut h, vec![one.clone(), AclFilter::any(), one]);
    assert_eq!(records.len(), 1);
    assert_eq!(results[0].matching_acls, vec![read("t0")]);
    assert_eq!(
        (results[1].error_code, results[1].error_message.as_deref()),
        (
            ResponseError::PolicyViolation.code(),
            Some("Cannot remove more than 10000 acls in a single delete operation.")
        )
    );
    assert!(results[1].matching_acls.is_empty());
    assert_eq!(
        results[2].matching_acls,
        vec![read("t0")],
        "already counted"
    );
    assert_eq!(h.image.acls().count(), MAX_RECORDS_PER_USER_OP);
    // Exactly the limit is allowed.
    let (records, results) = delete(&mut h, vec![AclFilter::any()]);
    assert_eq!(records.len(), MAX_RECORDS_PER_USER_OP);
    assert_eq!(results[0].error_code, 0);
}

#[test]
fn an_inactive_controller_refuses_acl_changes() {
    let mut h = Harness::new(cfg());
    h.ctl.deactivate();
    assert_eq!(
        h.ctl.create_acls(&h.image, vec![read("x")], 1),
        Err(ControllerError::NotController)
    );
    assert_eq!(
        h.ctl.delete_acls(&h.image, vec![AclFilter::any()]),
        Err(ControllerError::NotController)
    );
}
