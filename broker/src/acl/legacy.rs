//! `samsa-acls.json`: where a node kept its ACLs before the metadata log held them (every
//! binding by Kafka's enum names). Read once, by the import (`upgrade.rs`); never written.

use std::path::Path;

use serde::Deserialize;

use super::{AclBinding, AclOperation, PatternType, PermissionType, ResourceType};

pub const LEGACY_FILE: &str = "samsa-acls.json";

#[derive(Deserialize)]
struct AclFile {
    acls: Vec<StoredAcl>,
}

#[derive(Deserialize)]
struct StoredAcl {
    resource_type: String,
    resource_name: String,
    pattern_type: String,
    principal: String,
    host: String,
    operation: String,
    permission_type: String,
}

/// The value of one of Kafka's ACL enums named `name` (`TOPIC`, `DESCRIBE_CONFIGS`, ...);
/// `UNKNOWN` (code 0) for a name this version does not know, which the controller refuses.
fn by_name<T>(name: &str, from_code: fn(i8) -> T, name_of: fn(&T) -> &'static str) -> T {
    (1..=i8::MAX)
        .map(from_code)
        .find(|v| name_of(v) == name)
        .unwrap_or_else(|| from_code(0))
}

/// The bindings of `dir`'s file, in its order (`None` without one).
pub fn read(dir: &Path) -> anyhow::Result<Option<Vec<AclBinding>>> {
    let Some(file) = crate::util::read_legacy_json::<AclFile>(dir, LEGACY_FILE)? else {
        return Ok(None);
    };
    Ok(Some(
        file.acls
            .into_iter()
            .map(|a| AclBinding {
                resource_type: by_name(&a.resource_type, ResourceType::from_code, |v| v.name()),
                resource_name: a.resource_name,
                pattern_type: by_name(&a.pattern_type, PatternType::from_code, |v| v.name()),
                principal: a.principal,
                host: a.host,
                operation: by_name(&a.operation, AclOperation::from_code, |v| v.name()),
                permission_type: by_name(&a.permission_type, PermissionType::from_code, |v| {
                    v.name()
                }),
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_bindings_are_read_by_kafkas_names() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
        // As the release before the metadata log held ACLs wrote it.
        std::fs::write(
            dir.path().join(LEGACY_FILE),
            r#"{"version": 1, "acls": [
                {"resource_type": "TRANSACTIONAL_ID", "resource_name": "billing-",
                 "pattern_type": "PREFIXED", "principal": "User:alice", "host": "*",
                 "operation": "DESCRIBE_CONFIGS", "permission_type": "DENY"},
                {"resource_type": "TOPIC", "resource_name": "t", "pattern_type": "LITERAL",
                 "principal": "User:bob", "host": "10.0.0.9", "operation": "SOMETHING_NEW",
                 "permission_type": "ALLOW"}]}"#,
        )
        .unwrap();
        let read = read(dir.path()).unwrap().unwrap();
        assert_eq!(
            read[0],
            AclBinding {
                resource_type: ResourceType::TransactionalId,
                resource_name: "billing-".into(),
                pattern_type: PatternType::Prefixed,
                principal: "User:alice".into(),
                host: "*".into(),
                operation: AclOperation::DescribeConfigs,
                permission_type: PermissionType::Deny,
            }
        );
        assert_eq!(read[1].operation, AclOperation::Unknown);
        assert!(read[1].validate().is_err(), "refused when imported");
        std::fs::write(dir.path().join(LEGACY_FILE), b"{not json").unwrap();
        assert!(super::read(dir.path()).is_err());
    }
}
