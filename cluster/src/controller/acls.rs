//! CreateAcls and DeleteAcls: Kafka's `AclControlManager`. The bindings, their validation and
//! the filters' matching are [`crate::acl`]'s, shared with DescribeAcls and the authorizer.
//!
//! A created ACL is an `AccessControlEntryRecord` under a new random id; a binding that exists
//! already, or comes twice in one request, is created once and succeeds every time (Kafka keeps
//! ACLs as a set). A deleted ACL is a `RemoveAccessControlEntryRecord` of its id. Every filter of
//! a DeleteAcls sees the ACLs as they were before the request, so a binding two filters select is
//! reported by both and removed once.

use std::collections::HashSet;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{random_uuid, Controller, ControllerError, MAX_RECORDS_PER_USER_OP};
use crate::acl::{matching_acls, AclBinding, AclFilter};
use crate::metadata::records::{MetadataRecord, RemoveAccessControlEntryRecord};
use crate::metadata::MetadataImage;
use crate::placement::SplitMix64;

/// ACLs the cluster holds at most. Kafka has no limit, but every broker keeps every ACL in its
/// image and checks requests against them.
pub const ACLS_MAX: usize = 100_000;

/// The answer for one binding of a CreateAcls request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateAclResult {
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// The answer for one filter of a DeleteAcls request: the bindings it selected (and deleted),
/// in binding order, or why the filter was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsFilterResult {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub matching_acls: Vec<AclBinding>,
}

impl Controller {
    /// CreateAcls: one result per binding, in order. A binding [`AclBinding::validate`] refuses
    /// is INVALID_REQUEST and the others go ahead. New ACLs that would take the cluster past
    /// [`ACLS_MAX`] are all POLICY_VIOLATION; more than [`MAX_RECORDS_PER_USER_OP`] new ones
    /// refuse the whole request ([`ControllerError::BatchTooLarge`]). `seed` is the caller's
    /// randomness, which the new ids derive from. O(ACLs in the image).
    pub fn create_acls(
        &self,
        image: &MetadataImage,
        bindings: Vec<AclBinding>,
        seed: u64,
    ) -> Result<(Vec<MetadataRecord>, Vec<CreateAclResult>), ControllerError> {
        self.check_active()?;
        let mut ids: HashSet<Uuid> = HashSet::new();
        let mut existing: HashSet<AclBinding> = HashSet::new();
        for (id, acl) in image.acls() {
            ids.insert(*id);
            existing.insert(AclBinding::from(&**acl));
        }
        let mut rng = SplitMix64(seed);
        let mut results = Vec::with_capacity(bindings.len());
        let mut records: Vec<MetadataRecord> = Vec::new();
        let mut created_at = Vec::new();
        for (i, b) in bindings.into_iter().enumerate() {
            results.push(match b.validate() {
                Err(e) => CreateAclResult {
                    error_code: e.error_code(),
                    error_message: Some(e.0),
                },
                Ok(()) => CreateAclResult {
                    error_code: 0,
                    error_message: None,
                },
            });
            if results[i].error_code == 0 && !existing.contains(&b) {
                // Kafka's `newAclId`: random until unused.
                let id = loop {
                    let id = random_uuid(&mut rng);
                    if ids.insert(id) {
                        break id;
                    }
                };
                records.push(b.to_record(id).into());
                created_at.push(i);
                existing.insert(b);
            }
        }
        if records.len() > MAX_RECORDS_PER_USER_OP {
            return Err(ControllerError::BatchTooLarge {
                records: records.len(),
            });
        }
        let before = existing.len() - records.len();
        if existing.len() > ACLS_MAX {
            let message = format!(
                "cannot create {} more ACLs: the cluster holds {before} of at most {ACLS_MAX}",
                records.len()
            );
            for i in created_at {
                results[i] = CreateAclResult {
                    error_code: ResponseError::PolicyViolation.code(),
                    error_message: Some(message.clone()),
                };
            }
            records.clear();
        }
        Ok((records, results))
    }

    /// DeleteAcls: one result per filter, in order, with the bindings it selected. A filter
    /// with an unknown code is INVALID_REQUEST (Kafka's `validateFilter`). A filter that would
    /// take the ACLs removed by the request past [`MAX_RECORDS_PER_USER_OP`] is refused alone
    /// with POLICY_VIOLATION and removes nothing. O(ACLs in the image) per filter.
    pub fn delete_acls(
        &self,
        image: &MetadataImage,
        filters: Vec<AclFilter>,
    ) -> Result<(Vec<MetadataRecord>, Vec<DeleteAclsFilterResult>), ControllerError> {
        self.check_active()?;
        let mut removed: HashSet<Uuid> = HashSet::new();
        let mut records: Vec<MetadataRecord> = Vec::new();
        let mut results = Vec::with_capacity(filters.len());
        for f in &filters {
            let refuse = |error_code: i16, message: String| DeleteAclsFilterResult {
                error_code,
                error_message: Some(message),
                matching_acls: Vec::new(),
            };
            if let Err(e) = f.validate() {
                results.push(refuse(e.error_code(), e.0));
                continue;
            }
            let matching = matching_acls(image, f);
            let new: Vec<Uuid> = matching
                .iter()
                .map(|(id, _)| *id)
                .filter(|id| !removed.contains(id))
                .collect();
            // Kafka's bounded list throws here, which fails this filter only (it answers
            // UNKNOWN_SERVER_ERROR, and keeps the removals it had added before the throw);
            // the limit is a policy, so Samsa says so and removes none of them.
            if removed.len() + new.len() > MAX_RECORDS_PER_USER_OP {
                results.push(refuse(
                    ResponseError::PolicyViolation.code(),
                    format!(
                        "Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single \
                         delete operation."
                    ),
                ));
                continue;
            }
            for id in new {
                removed.insert(id);
                records.push(
                    RemoveAccessControlEntryRecord {
                        id,
                        ..Default::default()
                    }
                    .into(),
                );
            }
            let mut bindings: Vec<AclBinding> = matching.into_iter().map(|(_, b)| b).collect();
            bindings.dedup();
            results.push(DeleteAclsFilterResult {
                error_code: 0,
                error_message: None,
                matching_acls: bindings,
            });
        }
        Ok((records, results))
    }
}
