//! ACLs (KIP-140; prefixed patterns from KIP-290): the bindings CreateAcls creates and the
//! filters DescribeAcls and DeleteAcls select them with, validated and matched as Kafka's
//! `AclBinding`, `ResourcePatternFilter` and `AccessControlEntryFilter` are.
//!
//! One copy for everyone who needs them: the active controller (CreateAcls and DeleteAcls,
//! `controller/acls.rs`), every broker answering DescribeAcls from its metadata image
//! ([`describe_acls`]), and the broker's authorizer. Enums carry Kafka's wire codes; a code
//! this version does not know reads as `Unknown`, which validation refuses.

use kafka_protocol::ResponseError;
use uuid::Uuid;

use crate::metadata::image::Acl;
use crate::metadata::records::AccessControlEntryRecord;
use crate::metadata::MetadataImage;

/// The name of the one CLUSTER resource (Kafka's `Resource.CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal resource name, or a host, that matches every name (Kafka's `WILDCARD`).
pub const WILDCARD: &str = "*";
/// Longest resource name an ACL may name (Kafka has no limit; group and transactional ids
/// can be long, so this is generous).
pub const RESOURCE_NAME_BYTES_MAX: usize = 4096;
/// Longest principal (`Type:name`).
pub const PRINCIPAL_BYTES_MAX: usize = 1024;
/// Longest host (an IP address, or `*`; room for anything a later listener might report).
pub const HOST_BYTES_MAX: usize = 256;

/// One of Kafka's ACL enums: its variants with their wire codes and Kafka's names.
macro_rules! kafka_enum {
    (
        $(#[$doc:meta])*
        $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal => $text:literal,)+ }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i8)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $code,)+
        }

        impl $name {
            pub fn from_code(code: i8) -> $name {
                match code {
                    $($code => $name::$variant,)+
                    _ => $name::Unknown,
                }
            }

            pub fn code(self) -> i8 {
                self as i8
            }

            /// Kafka's name (`TOPIC`, `PREFIXED`, `DESCRIBE_CONFIGS`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }
    };
}

kafka_enum! {
    /// Kafka's `ResourceType`.
    ResourceType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Topic = 2 => "TOPIC",
        Group = 3 => "GROUP",
        Cluster = 4 => "CLUSTER",
        TransactionalId = 5 => "TRANSACTIONAL_ID",
        DelegationToken = 6 => "DELEGATION_TOKEN",
        User = 7 => "USER",
    }
}

kafka_enum! {
    /// Kafka's `PatternType`. `Any` and `Match` exist only in filters.
    PatternType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Match = 2 => "MATCH",
        Literal = 3 => "LITERAL",
        Prefixed = 4 => "PREFIXED",
    }
}

kafka_enum! {
    /// Kafka's `AclOperation`. `Any` exists only in filters; `All` matches every operation.
    AclOperation {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        All = 2 => "ALL",
        Read = 3 => "READ",
        Write = 4 => "WRITE",
        Create = 5 => "CREATE",
        Delete = 6 => "DELETE",
        Alter = 7 => "ALTER",
        Describe = 8 => "DESCRIBE",
        ClusterAction = 9 => "CLUSTER_ACTION",
        DescribeConfigs = 10 => "DESCRIBE_CONFIGS",
        AlterConfigs = 11 => "ALTER_CONFIGS",
        IdempotentWrite = 12 => "IDEMPOTENT_WRITE",
        CreateTokens = 13 => "CREATE_TOKENS",
        DescribeTokens = 14 => "DESCRIBE_TOKENS",
        /// KIP-939 (Kafka 4.1): two-phase commit with a transactional id.
        TwoPhaseCommit = 15 => "TWO_PHASE_COMMIT",
    }
}

kafka_enum! {
    /// Kafka's `AclPermissionType`. `Any` exists only in filters.
    PermissionType {
        Unknown = 0 => "UNKNOWN",
        Any = 1 => "ANY",
        Deny = 2 => "DENY",
        Allow = 3 => "ALLOW",
    }
}

impl ResourceType {
    /// The operations that mean something on this resource type (Kafka's
    /// `AclEntry.supportedOperations`): what `*_authorized_operations` fields are made of.
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }

    /// The error a request gets when an operation on this resource type is denied.
    pub fn authorization_error(self) -> ResponseError {
        match self {
            ResourceType::Topic => ResponseError::TopicAuthorizationFailed,
            ResourceType::Group => ResponseError::GroupAuthorizationFailed,
            ResourceType::TransactionalId => ResponseError::TransactionalIdAuthorizationFailed,
            ResourceType::DelegationToken => ResponseError::DelegationTokenAuthorizationFailed,
            _ => ResponseError::ClusterAuthorizationFailed,
        }
    }
}

/// A binding or filter Kafka would refuse with INVALID_REQUEST (a filter value in a binding, an
/// empty name, a principal without a type, an unknown code, ...), and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidAcl(pub String);

impl InvalidAcl {
    pub fn error_code(&self) -> i16 {
        ResponseError::InvalidRequest.code()
    }
}

/// One ACL: who (principal, host) may or may not (permission) do what (operation) to which
/// resources (type, name, pattern). Ordered by resource first, so that the bindings of one
/// resource type are contiguous.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let invalid = |m: String| Err(InvalidAcl(m));
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

    /// The record that creates this binding with `id`.
    pub fn to_record(&self, id: Uuid) -> AccessControlEntryRecord {
        AccessControlEntryRecord {
            id,
            resource_type: self.resource_type.code(),
            resource_name: self.resource_name.clone(),
            pattern_type: self.pattern_type.code(),
            principal: self.principal.clone(),
            host: self.host.clone(),
            operation: self.operation.code(),
            permission_type: self.permission_type.code(),
            ..Default::default()
        }
    }
}

impl From<&Acl> for AclBinding {
    /// Kafka's `StandardAcl.toBinding`: the image keeps the record's codes.
    fn from(a: &Acl) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::from_code(a.resource_type),
            resource_name: a.resource_name.clone(),
            pattern_type: PatternType::from_code(a.pattern_type),
            principal: a.principal.clone(),
            host: a.host.clone(),
            operation: AclOperation::from_code(a.operation),
            permission_type: PermissionType::from_code(a.permission_type),
        }
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

    /// Refuses filters with values that cannot be interpreted (Kafka's
    /// `AclControlManager.validateFilter`: an UNKNOWN field makes the filter indefinite).
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let unknown = |what: &str| Err(InvalidAcl(format!("Unknown {what} in the ACL filter")));
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

/// The image's ACLs that `filter` selects, with their ids, in binding order (ties by id).
/// O(ACLs).
pub fn matching_acls(image: &MetadataImage, filter: &AclFilter) -> Vec<(Uuid, AclBinding)> {
    let mut out: Vec<(Uuid, AclBinding)> = image
        .acls()
        .map(|(id, acl)| (*id, AclBinding::from(&**acl)))
        .filter(|(_, b)| filter.matches(b))
        .collect();
    out.sort_by(|(a_id, a), (b_id, b)| a.cmp(b).then(a_id.cmp(b_id)));
    out
}

/// DescribeAcls, answered by any broker from its image: the bindings `filter` selects, each
/// once, in binding order; INVALID_REQUEST for a filter with an unknown code.
pub fn describe_acls(
    image: &MetadataImage,
    filter: &AclFilter,
) -> Result<Vec<AclBinding>, InvalidAcl> {
    filter.validate()?;
    let mut bindings: Vec<AclBinding> = matching_acls(image, filter)
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    bindings.dedup();
    Ok(bindings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::{MetadataRecord, RemoveAccessControlEntryRecord};

    pub(crate) fn acl(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        operation: AclOperation,
    ) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: principal.into(),
            host: "*".into(),
            operation,
            permission_type: PermissionType::Allow,
        }
    }

    fn topic(name: &str, pt: PatternType) -> AclBinding {
        acl(
            ResourceType::Topic,
            name,
            pt,
            "User:alice",
            AclOperation::Read,
        )
    }

    fn invalid_message(b: AclBinding) -> String {
        match b.validate() {
            Err(InvalidAcl(m)) => m,
            other => panic!("{b:?} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn enum_codes_round_trip_and_unknown_codes_read_as_unknown() {
        for code in -1..20i8 {
            let r = ResourceType::from_code(code);
            assert!(r == ResourceType::Unknown || r.code() == code);
            let p = PatternType::from_code(code);
            assert!(p == PatternType::Unknown || p.code() == code);
            let o = AclOperation::from_code(code);
            assert!(o == AclOperation::Unknown || o.code() == code);
            let t = PermissionType::from_code(code);
            assert!(t == PermissionType::Unknown || t.code() == code);
        }
        assert_eq!(ResourceType::from_code(7), ResourceType::User);
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(PatternType::from_code(4), PatternType::Prefixed);
        assert_eq!(PermissionType::from_code(3), PermissionType::Allow);
        assert_eq!(AclOperation::from_code(15), AclOperation::TwoPhaseCommit);
        assert_eq!(AclOperation::from_code(16), AclOperation::Unknown);
        assert_eq!(AclOperation::DescribeConfigs.name(), "DESCRIBE_CONFIGS");
    }

    #[test]
    fn supported_operations_give_kafkas_bit_fields() {
        let bits = |rt: ResourceType| {
            rt.supported_operations()
                .iter()
                .fold(0i32, |b, op| b | (1 << op.code()))
        };
        // Values a Kafka 4 broker without an authorizer reports.
        assert_eq!(bits(ResourceType::Topic), 3576);
        assert_eq!(bits(ResourceType::Group), 3400);
        assert_eq!(bits(ResourceType::Cluster), 8096);
        for (rt, e) in [
            (ResourceType::Topic, ResponseError::TopicAuthorizationFailed),
            (ResourceType::Group, ResponseError::GroupAuthorizationFailed),
            (
                ResourceType::TransactionalId,
                ResponseError::TransactionalIdAuthorizationFailed,
            ),
            (
                ResourceType::DelegationToken,
                ResponseError::DelegationTokenAuthorizationFailed,
            ),
            (
                ResourceType::Cluster,
                ResponseError::ClusterAuthorizationFailed,
            ),
            (
                ResourceType::User,
                ResponseError::ClusterAuthorizationFailed,
            ),
        ] {
            assert_eq!(rt.authorization_error(), e, "{rt:?}");
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
        b.resource_type = ResourceType::Unknown;
        assert_eq!(invalid_message(b), "Invalid resourceType UNKNOWN");
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
        let mut b = topic(CLUSTER_NAME, PatternType::Literal);
        b.resource_type = ResourceType::Cluster;
        assert!(b.validate().is_ok());
        let mut b = topic("orders", PatternType::Literal);
        b.host = "h".repeat(HOST_BYTES_MAX + 1);
        assert!(invalid_message(b).contains("host of 257 bytes exceeds the limit of 256"));
        let mut b = topic("orders", PatternType::Literal);
        b.host = "h".repeat(HOST_BYTES_MAX);
        assert!(b.validate().is_ok());
        let mut b = topic("orders", PatternType::Literal);
        b.principal = format!("User:{}", "p".repeat(PRINCIPAL_BYTES_MAX));
        assert!(invalid_message(b).contains("principal"));
        let b = topic(
            &"n".repeat(RESOURCE_NAME_BYTES_MAX + 1),
            PatternType::Literal,
        );
        assert!(invalid_message(b).contains("resource name of 4097 bytes"));
        assert_eq!(InvalidAcl(String::new()).error_code(), 42);
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
        let refused = |f: AclFilter| f.validate().unwrap_err().0;
        let mut f = AclFilter::any();
        f.resource_type = ResourceType::Unknown;
        assert_eq!(refused(f), "Unknown resource type in the ACL filter");
        let mut f = AclFilter::any();
        f.pattern_type = PatternType::Unknown;
        assert_eq!(refused(f), "Unknown pattern type in the ACL filter");
        let mut f = AclFilter::any();
        f.operation = AclOperation::Unknown;
        assert_eq!(refused(f), "Unknown operation in the ACL filter");
        let mut f = AclFilter::any();
        f.permission_type = PermissionType::Unknown;
        assert_eq!(refused(f), "Unknown permission type in the ACL filter");
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
        f.resource_name = None;
        assert!(f.matches(&prefix) && f.matches(&other_prefix));
        assert!(!f.matches(&literal), "a pattern type without a name");
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
        f.resource_type = ResourceType::Topic;
        assert!(f.matches(&b));
    }

    #[test]
    fn from_wire_reads_kafkas_codes_and_nulls() {
        let f = AclFilter::from_wire(2, Some("orders"), 3, Some("User:a"), None, 3, 1);
        assert_eq!(
            f,
            AclFilter {
                resource_type: ResourceType::Topic,
                resource_name: Some("orders".into()),
                pattern_type: PatternType::Literal,
                principal: Some("User:a".into()),
                host: None,
                operation: AclOperation::Read,
                permission_type: PermissionType::Any,
            }
        );
    }

    #[test]
    fn describe_acls_answers_from_the_image_each_binding_once_in_order() {
        let a = topic("b-orders", PatternType::Literal);
        let b = topic("a-orders", PatternType::Literal);
        let mut c = topic("a-orders", PatternType::Literal);
        c.resource_type = ResourceType::Group;
        let records: Vec<MetadataRecord> = vec![
            a.to_record(Uuid::from_u128(1)).into(),
            b.to_record(Uuid::from_u128(2)).into(),
            c.to_record(Uuid::from_u128(3)).into(),
            // The same binding under a second id (a log no controller of ours wrote).
            b.to_record(Uuid::from_u128(4)).into(),
        ];
        let image = MetadataImage::new().with_records(&records).unwrap();
        assert_eq!(
            describe_acls(&image, &AclFilter::any()).unwrap(),
            vec![b.clone(), a.clone(), c.clone()]
        );
        let mut topics = AclFilter::any();
        topics.resource_type = ResourceType::Topic;
        assert_eq!(
            matching_acls(&image, &topics),
            vec![
                (Uuid::from_u128(2), b.clone()),
                (Uuid::from_u128(4), b.clone()),
                (Uuid::from_u128(1), a.clone())
            ]
        );
        let mut broken = AclFilter::any();
        broken.operation = AclOperation::Unknown;
        assert!(describe_acls(&image, &broken).is_err());
        // Removing one id leaves the binding under the other.
        let image = image
            .with_records(&[RemoveAccessControlEntryRecord {
                id: Uuid::from_u128(2),
                ..Default::default()
            }
            .into()])
            .unwrap();
        assert_eq!(describe_acls(&image, &topics).unwrap(), vec![b, a]);
    }
}
