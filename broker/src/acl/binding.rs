//! An ACL binding (resource pattern + access control entry) and the filters DescribeAcls and
//! DeleteAcls select bindings with, validated and matched as Kafka's `AclBinding`,
//! `ResourcePatternFilter` and `AccessControlEntryFilter` are.

use serde::{Deserialize, Serialize};

use super::{
    AclError, AclOperation, PatternType, PermissionType, ResourceType, CLUSTER_NAME, WILDCARD,
};

/// Longest resource name an ACL may name (Kafka has no limit; group and transactional ids
/// can be long, so this is generous).
pub const RESOURCE_NAME_BYTES_MAX: usize = 4096;
/// Longest principal (`Type:name`).
pub const PRINCIPAL_BYTES_MAX: usize = 1024;
/// Longest host (an IP address, or `*`; room for anything a later listener might report).
pub const HOST_BYTES_MAX: usize = 256;

/// One ACL: who (principal, host) may or may not (permission) do what (operation) to which
/// resources (type, name, pattern). Ordered by resource first, so that the bindings of one
/// resource type are contiguous.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    pub principal: String,
    pub host: String,
    pub operation: AclOperation,
    pub permission_type: PermissionType,
}

impl AclBinding {
    /// Checks a binding to be created: Kafka's checks (`AclApis.handleCreateAcls`, then
    /// `AclControlManager.validateNewAcl`), in Kafka's order, then Samsa's size limits.
    pub fn validate(&self) -> Result<(), AclError> {
        let invalid = |m: String| Err(AclError::InvalidRequest(m));
        if self.resource_type == ResourceType::Cluster && self.resource_name != CLUSTER_NAME {
            return invalid(format!(
                "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            ));
        }
        if self.resource_name.is_empty() {
            return invalid("Invalid empty resource name".into());
        }
        if matches!(
            self.resource_type,
            ResourceType::Unknown | ResourceType::Any
        ) {
            return invalid(format!(
                "Invalid resourceType {}",
                self.resource_type.name()
            ));
        }
        if !matches!(
            self.pattern_type,
            PatternType::Literal | PatternType::Prefixed
        ) {
            return invalid(format!("Invalid patternType {}", self.pattern_type.name()));
        }
        if matches!(self.operation, AclOperation::Unknown | AclOperation::Any) {
            return invalid(format!("Invalid operation {}", self.operation.name()));
        }
        if !matches!(
            self.permission_type,
            PermissionType::Allow | PermissionType::Deny
        ) {
            return invalid(format!(
                "Invalid permissionType {}",
                self.permission_type.name()
            ));
        }
        if !self.principal.contains(':') {
            return invalid(format!(
                "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
                self.principal
            ));
        }
        for (what, value, max) in [
            (
                "resource name",
                &self.resource_name,
                RESOURCE_NAME_BYTES_MAX,
            ),
            ("principal", &self.principal, PRINCIPAL_BYTES_MAX),
            ("host", &self.host, HOST_BYTES_MAX),
        ] {
            if value.len() > max {
                return invalid(format!(
                    "ACL {what} of {} bytes exceeds the limit of {max} bytes",
                    value.len()
                ));
            }
        }
        Ok(())
    }
}

/// Selects bindings: a `None` field and the `Any` values match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    pub resource_name: Option<String>,
    /// `Any`: any pattern type, the name compared exactly. `Match`: the bindings that would
    /// apply to a resource of that name (its literal, the `*` literal, prefixes of it).
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission_type: PermissionType,
}

impl AclFilter {
    /// The filter that matches every binding.
    pub fn any() -> AclFilter {
        AclFilter {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission_type: PermissionType::Any,
        }
    }

    /// A filter as DescribeAcls and DeleteAcls carry it: Kafka's codes, `None` for null.
    pub fn from_wire(
        resource_type: i8,
        resource_name: Option<&str>,
        pattern_type: i8,
        principal: Option<&str>,
        host: Option<&str>,
        operation: i8,
        permission_type: i8,
    ) -> AclFilter {
        AclFilter {
            resource_type: ResourceType::from_code(resource_type),
            resource_name: resource_name.map(str::to_string),
            pattern_type: PatternType::from_code(pattern_type),
            principal: principal.map(str::to_string),
            host: host.map(str::to_string),
            operation: AclOperation::from_code(operation),
            permission_type: PermissionType::from_code(permission_type),
        }
    }

    /// Refuses filters with values the broker cannot interpret (Kafka's
    /// `AclControlManager.validateFilter`: an UNKNOWN field makes the filter indefinite).
    pub fn validate(&self) -> Result<(), AclError> {
        let unknown = |what: &str| {
            Err(AclError::InvalidRequest(format!(
                "Unknown {what} in the ACL filter"
            )))
        };
        if self.resource_type == ResourceType::Unknown {
            return unknown("resource type");
        }
        if self.pattern_type == PatternType::Unknown {
            return unknown("pattern type");
        }
        if self.operation == AclOperation::Unknown {
            return unknown("operation");
        }
        if self.permission_type == PermissionType::Unknown {
            return unknown("permission type");
        }
        Ok(())
    }

    pub fn matches(&self, b: &AclBinding) -> bool {
        self.matches_pattern(b) && self.matches_entry(b)
    }

    /// Kafka's `ResourcePatternFilter.matches`.
    fn matches_pattern(&self, b: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != b.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != b.pattern_type
        {
            return false;
        }
        let Some(name) = &self.resource_name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == b.pattern_type {
            return *name == b.resource_name;
        }
        // MATCH: the bindings that apply to a resource called `name`.
        match b.pattern_type {
            PatternType::Literal => *name == b.resource_name || b.resource_name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&b.resource_name),
            _ => false,
        }
    }

    /// Kafka's `AccessControlEntryFilter.matches`.
    fn matches_entry(&self, b: &AclBinding) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == b.principal)
            && self.host.as_ref().is_none_or(|h| *h == b.host)
            && (self.operation == AclOperation::Any || self.operation == b.operation)
            && (self.permission_type == PermissionType::Any
                || self.permission_type == b.permission_type)
    }
}

/// A binding, for the ACL module's tests.
#[cfg(test)]
pub fn acl(
    resource_type: ResourceType,
    name: &str,
    pattern_type: PatternType,
    principal: &str,
    host: &str,
    operation: AclOperation,
    permission_type: PermissionType,
) -> AclBinding {
    AclBinding {
        resource_type,
        resource_name: name.into(),
        pattern_type,
        principal: principal.into(),
        host: host.into(),
        operation,
        permission_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, pt: PatternType) -> AclBinding {
        acl(
            ResourceType::Topic,
            name,
            pt,
            "User:alice",
            "*",
            AclOperation::Read,
            PermissionType::Allow,
        )
    }

    fn invalid_message(b: AclBinding) -> String {
        match b.validate() {
            Err(AclError::InvalidRequest(m)) => m,
            other => panic!("{b:?} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn bindings_with_filter_values_or_bad_fields_are_invalid_requests() {
        assert!(topic("orders", PatternType::Literal).validate().is_ok());
        assert!(topic("ord", PatternType::Prefixed).validate().is_ok());
        assert_eq!(
            invalid_message(topic("orders", PatternType::Any)),
            "Invalid patternType ANY"
        );
        assert_eq!(
            invalid_message(topic("orders", PatternType::Match)),
            "Invalid patternType MATCH"
        );
        assert_eq!(
            invalid_message(topic("", PatternType::Literal)),
            "Invalid empty resource name"
        );
        let mut b = topic("orders", PatternType::Literal);
        b.resource_type = ResourceType::Any;
        assert_eq!(invalid_message(b), "Invalid resourceType ANY");
        let mut b = topic("orders", PatternType::Literal);
        b.operation = AclOperation::Any;
        assert_eq!(invalid_message(b), "Invalid operation ANY");
        let mut b = topic("orders", PatternType::Literal);
        b.operation = AclOperation::Unknown;
        assert_eq!(invalid_message(b), "Invalid operation UNKNOWN");
        let mut b = topic("orders", PatternType::Literal);
        b.permission_type = PermissionType::Any;
        assert_eq!(invalid_message(b), "Invalid permissionType ANY");
        let mut b = topic("orders", PatternType::Literal);
        b.principal = "alice".into();
        assert!(invalid_message(b).contains("no colon"));
        let mut b = topic("orders", PatternType::Literal);
        b.resource_type = ResourceType::Cluster;
        assert_eq!(
            invalid_message(b),
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );
        let mut b = topic("orders", PatternType::Literal);
        b.host = "h".repeat(HOST_BYTES_MAX + 1);
        assert!(invalid_message(b).contains("host of 257 bytes exceeds the limit of 256"));
        let mut b = topic("orders", PatternType::Literal);
        b.principal = format!("User:{}", "p".repeat(PRINCIPAL_BYTES_MAX));
        assert!(invalid_message(b).contains("principal"));
    }

    #[test]
    fn filters_with_unknown_values_are_invalid_and_any_matches_everything() {
        let any = AclFilter::any();
        assert!(any.validate().is_ok());
        for b in [
            topic("orders", PatternType::Literal),
            topic("ord", PatternType::Prefixed),
        ] {
            assert!(any.matches(&b));
        }
        let mut f = AclFilter::any();
        f.resource_type = ResourceType::Unknown;
        assert!(f.validate().is_err());
        let mut f = AclFilter::any();
        f.pattern_type = PatternType::Unknown;
        assert!(f.validate().is_err());
        let mut f = AclFilter::any();
        f.operation = AclOperation::Unknown;
        assert!(f.validate().is_err());
        let mut f = AclFilter::any();
        f.permission_type = PermissionType::Unknown;
        assert!(f.validate().is_err());
    }

    #[test]
    fn a_match_filter_selects_the_bindings_that_apply_to_a_resource() {
        let literal = topic("orders", PatternType::Literal);
        let wildcard = topic("*", PatternType::Literal);
        let prefix = topic("ord", PatternType::Prefixed);
        let other_prefix = topic("pay", PatternType::Prefixed);
        let other_literal = topic("orders2", PatternType::Literal);
        let mut f = AclFilter::any();
        f.pattern_type = PatternType::Match;
        f.resource_name = Some("orders".into());
        assert!(f.matches(&literal));
        assert!(f.matches(&wildcard));
        assert!(f.matches(&prefix));
        assert!(!f.matches(&other_prefix));
        assert!(!f.matches(&other_literal));
        // ANY compares the name exactly, whatever the pattern type.
        f.pattern_type = PatternType::Any;
        assert!(f.matches(&literal));
        assert!(!f.matches(&wildcard));
        assert!(!f.matches(&prefix));
        // A concrete pattern type selects that type only, by exact name.
        f.pattern_type = PatternType::Prefixed;
        f.resource_name = Some("ord".into());
        assert!(f.matches(&prefix));
        assert!(!f.matches(&literal));
        // A literal "*" filter is the wildcard binding, not every literal.
        f.pattern_type = PatternType::Literal;
        f.resource_name = Some("*".into());
        assert!(f.matches(&wildcard));
        assert!(!f.matches(&literal));
    }

    #[test]
    fn entry_fields_filter_by_principal_host_operation_and_permission() {
        let b = topic("orders", PatternType::Literal);
        let mut f = AclFilter::any();
        f.principal = Some("User:alice".into());
        f.host = Some("*".into());
        f.operation = AclOperation::Read;
        f.permission_type = PermissionType::Allow;
        assert!(f.matches(&b));
        f.principal = Some("User:bob".into());
        assert!(!f.matches(&b));
        f.principal = None;
        f.host = Some("10.0.0.1".into());
        assert!(!f.matches(&b), "a filter's host is compared exactly");
        f.host = None;
        f.operation = AclOperation::Write;
        assert!(!f.matches(&b));
        f.operation = AclOperation::Any;
        f.permission_type = PermissionType::Deny;
        assert!(!f.matches(&b));
        f.permission_type = PermissionType::Any;
        f.resource_type = ResourceType::Group;
        assert!(!f.matches(&b));
    }
}
