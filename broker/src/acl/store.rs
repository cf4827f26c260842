//! The ACLs, persisted in `samsa-acls.json` in the log directory and reloaded on start. A change
//! is validated, written atomically (temp file, fsync, rename, fsync the directory), and only
//! then made visible, so an acknowledged CreateAcls or DeleteAcls survives a crash and a failed
//! write changes nothing. Readers see an immutable snapshot (bindings and lookup index); a change
//! swaps in a new one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use super::authorizer::AclIndex;
use super::{AclBinding, AclError, AclFilter};

const ACL_FILE: &str = "samsa-acls.json";
/// ACLs the broker holds at most (Kafka has no limit; every one is checked in memory and
/// rewritten to disk on each change, so there must be one).
pub const ACLS_MAX: usize = 100_000;

#[derive(Serialize, Deserialize)]
struct AclFile {
    version: u32,
    acls: Vec<AclBinding>,
}

/// One consistent view of the ACLs.
#[derive(Debug, Default)]
pub struct AclSet {
    /// Every binding, ordered by resource type, name and pattern type.
    pub bindings: BTreeSet<AclBinding>,
    pub index: AclIndex,
}

impl AclSet {
    fn new(bindings: BTreeSet<AclBinding>) -> AclSet {
        let index = AclIndex::build(&bindings);
        AclSet { bindings, index }
    }
}

pub struct AclStore {
    dir: PathBuf,
    current: RwLock<Arc<AclSet>>,
    /// Serialises changes, so that the file and the snapshot agree.
    admin: Mutex<()>,
    limit: usize,
}

impl AclStore {
    /// Loads the ACLs stored in `dir` (none when there is no file yet). A file that does not
    /// parse, or holds a binding CreateAcls would refuse, stops the start: serving with fewer
    /// ACLs than the operator created could allow what they meant to deny.
    pub fn open(dir: &Path) -> anyhow::Result<AclStore> {
        AclStore::open_with_limit(dir, ACLS_MAX)
    }

    pub fn open_with_limit(dir: &Path, limit: usize) -> anyhow::Result<AclStore> {
        let path = dir.join(ACL_FILE);
        let bindings: BTreeSet<AclBinding> = match std::fs::read(&path) {
            Ok(bytes) => {
                let file: AclFile = serde_json::from_slice(&bytes)
                    .map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display()))?;
                for b in &file.acls {
                    b.validate().map_err(|e| {
                        anyhow::anyhow!("{} holds an invalid ACL {b:?}: {e}", path.display())
                    })?;
                }
                file.acls.into_iter().collect()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        Ok(AclStore {
            dir: dir.to_path_buf(),
            current: RwLock::new(Arc::new(AclSet::new(bindings))),
            admin: Mutex::new(()),
            limit,
        })
    }

    pub fn snapshot(&self) -> Arc<AclSet> {
        self.current.read().clone()
    }

    /// The bindings `filter` selects, in the snapshot's order.
    pub fn describe(&self, filter: &AclFilter) -> Result<Vec<AclBinding>, AclError> {
        filter.validate()?;
        Ok(self
            .snapshot()
            .bindings
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect())
    }

    /// Creates bindings; one result per binding, in order. Creating a binding that exists
    /// succeeds and changes nothing (Kafka's behaviour).
    pub fn create(&self, bindings: Vec<AclBinding>) -> Vec<Result<(), AclError>> {
        let _admin = self.admin.lock();
        let current = self.snapshot();
        let mut results: Vec<Result<(), AclError>> = Vec::with_capacity(bindings.len());
        let mut added: BTreeSet<AclBinding> = BTreeSet::new();
        let mut added_at: Vec<usize> = Vec::new();
        for (i, b) in bindings.into_iter().enumerate() {
            results.push(b.validate());
            if results[i].is_ok() && !current.bindings.contains(&b) && added.insert(b) {
                added_at.push(i);
            }
        }
        if added.is_empty() {
            return results;
        }
        let existing = current.bindings.len();
        let failure = if existing + added.len() > self.limit {
            Some(AclError::TooMany {
                wanted: added.len(),
                existing,
                limit: self.limit,
            })
        } else {
            let mut next = current.bindings.clone();
            next.extend(added.iter().cloned());
            match self.replace(next) {
                Ok(()) => {
                    tracing::info!(
                        created = added.len(),
                        total = existing + added.len(),
                        "ACLs created"
                    );
                    None
                }
                Err(e) => Some(e),
            }
        };
        if let Some(e) = failure {
            for i in added_at {
                results[i] = Err(same_error(&e));
            }
        }
        results
    }

    /// Deletes what each filter selects; one result per filter, with the bindings it deleted.
    /// Every filter sees the ACLs as they were before the request, so a binding two filters
    /// select is reported by both (as Kafka reports it).
    pub fn delete(&self, filters: &[AclFilter]) -> Vec<Result<Vec<AclBinding>, AclError>> {
        let _admin = self.admin.lock();
        let current = self.snapshot();
        let mut results: Vec<Result<Vec<AclBinding>, AclError>> = filters
            .iter()
            .map(|f| {
                f.validate()?;
                Ok(current
                    .bindings
                    .iter()
                    .filter(|b| f.matches(b))
                    .cloned()
                    .collect())
            })
            .collect();
        let doomed: BTreeSet<&AclBinding> = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .flatten()
            .collect();
        if doomed.is_empty() {
            return results;
        }
        let next: BTreeSet<AclBinding> = current
            .bindings
            .iter()
            .filter(|b| !doomed.contains(b))
            .cloned()
            .collect();
        let deleted = doomed.len();
        match self.replace(next) {
            Ok(()) => {
                tracing::info!(
                    deleted,
                    total = current.bindings.len() - deleted,
                    "ACLs deleted"
                );
            }
            Err(e) => {
                for r in results.iter_mut().filter(|r| r.is_ok()) {
                    *r = Err(same_error(&e));
                }
            }
        }
        results
    }

    /// Writes `bindings` to disk, then makes them the current snapshot.
    fn replace(&self, bindings: BTreeSet<AclBinding>) -> Result<(), AclError> {
        let file = AclFile {
            version: 1,
            acls: bindings.iter().cloned().collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file).expect("ACLs serialise");
        crate::topics::write_atomically(&self.dir, ACL_FILE, &bytes).map_err(|e| {
            tracing::error!(dir = %self.dir.display(), "cannot write {ACL_FILE}: {e}");
            AclError::Storage(e)
        })?;
        *self.current.write() = Arc::new(AclSet::new(bindings));
        Ok(())
    }
}

/// A copy of an error for each binding it applies to (`io::Error` is not `Clone`).
fn same_error(e: &AclError) -> AclError {
    match e {
        AclError::InvalidRequest(m) => AclError::InvalidRequest(m.clone()),
        AclError::TooMany {
            wanted,
            existing,
            limit,
        } => AclError::TooMany {
            wanted: *wanted,
            existing: *existing,
            limit: *limit,
        },
        AclError::Storage(io) => AclError::Storage(std::io::Error::new(io.kind(), io.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{AclOperation, PatternType, PermissionType, ResourceType};

    fn acl(name: &str, principal: &str, op: AclOperation) -> AclBinding {
        crate::acl::binding::acl(
            ResourceType::Topic,
            name,
            PatternType::Literal,
            principal,
            "*",
            op,
            PermissionType::Allow,
        )
    }

    #[test]
    fn created_acls_are_described_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::open(dir.path()).unwrap();
        let a = acl("orders", "User:alice", AclOperation::Read);
        let b = acl("orders", "User:bob", AclOperation::Write);
        let results = store.create(vec![a.clone(), b.clone(), a.clone()]);
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(
            store.describe(&AclFilter::any()).unwrap(),
            vec![a.clone(), b.clone()]
        );
        drop(store);
        let reopened = AclStore::open(dir.path()).unwrap();
        assert_eq!(reopened.describe(&AclFilter::any()).unwrap(), vec![a, b]);
    }

    #[test]
    fn invalid_bindings_fail_alone_and_the_others_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::open(dir.path()).unwrap();
        let mut bad = acl("orders", "User:alice", AclOperation::Read);
        bad.pattern_type = PatternType::Match;
        let good = acl("orders", "User:bob", AclOperation::Read);
        let results = store.create(vec![bad, good.clone()]);
        assert!(matches!(results[0], Err(AclError::InvalidRequest(_))));
        assert!(results[1].is_ok());
        assert_eq!(store.describe(&AclFilter::any()).unwrap(), vec![good]);
    }

    #[test]
    fn deleting_reports_each_filters_matches_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::open(dir.path()).unwrap();
        let a = acl("orders", "User:alice", AclOperation::Read);
        let b = acl("orders", "User:bob", AclOperation::Write);
        let c = acl("payments", "User:bob", AclOperation::Write);
        for r in store.create(vec![a.clone(), b.clone(), c.clone()]) {
            r.unwrap();
        }
        let mut by_bob = AclFilter::any();
        by_bob.principal = Some("User:bob".into());
        let mut writes_to_orders = AclFilter::any();
        writes_to_orders.resource_name = Some("orders".into());
        writes_to_orders.operation = AclOperation::Write;
        let mut broken = AclFilter::any();
        broken.operation = AclOperation::Unknown;
        let results = store.delete(&[by_bob, writes_to_orders, broken]);
        assert_eq!(results[0].as_ref().unwrap(), &vec![b.clone(), c.clone()]);
        assert_eq!(results[1].as_ref().unwrap(), &vec![b]);
        assert!(matches!(results[2], Err(AclError::InvalidRequest(_))));
        drop(store);
        let reopened = AclStore::open(dir.path()).unwrap();
        assert_eq!(reopened.describe(&AclFilter::any()).unwrap(), vec![a]);
    }

    #[test]
    fn the_acl_count_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::open_with_limit(dir.path(), 2).unwrap();
        let results = store.create(vec![
            acl("a", "User:x", AclOperation::Read),
            acl("b", "User:x", AclOperation::Read),
        ]);
        assert!(results.iter().all(Result::is_ok));
        let results = store.create(vec![
            acl("a", "User:x", AclOperation::Read),
            acl("c", "User:x", AclOperation::Read),
        ]);
        assert!(results[0].is_ok(), "an existing binding is no new ACL");
        let Err(e) = &results[1] else {
            panic!("a third ACL must be refused")
        };
        assert_eq!(
            e.to_string(),
            "cannot create 1 more ACLs: the broker holds 2 of at most 2"
        );
        assert_eq!(store.snapshot().bindings.len(), 2);
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = AclStore::open(dir.path()).unwrap();
        // A directory where the temp file goes makes the write fail.
        std::fs::create_dir(dir.path().join(format!("{ACL_FILE}.tmp"))).unwrap();
        let results = store.create(vec![acl("a", "User:x", AclOperation::Read)]);
        assert!(
            matches!(results[0], Err(AclError::Storage(_))),
            "{results:?}"
        );
        assert!(store.snapshot().bindings.is_empty());
    }

    #[test]
    fn a_corrupt_or_invalid_file_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(ACL_FILE), b"{not json").unwrap();
        let e = AclStore::open(dir.path())
            .err()
            .expect("corrupt file refused");
        assert!(e.to_string().contains("is corrupt"), "{e}");
        let mut bad = acl("a", "User:x", AclOperation::Read);
        bad.operation = AclOperation::Any;
        let file = AclFile {
            version: 1,
            acls: vec![bad],
        };
        std::fs::write(
            dir.path().join(ACL_FILE),
            serde_json::to_vec(&file).unwrap(),
        )
        .unwrap();
        let e = AclStore::open(dir.path())
            .err()
            .expect("invalid ACL refused");
        assert!(e.to_string().contains("Invalid operation ANY"), "{e}");
    }
}
