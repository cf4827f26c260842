//! ACLs: the bindings an operator creates with CreateAcls (KIP-140, prefixed patterns from
//! KIP-290), their persistence, and the authorizer that checks every request against them with
//! the rules of Kafka's `StandardAuthorizer`.
//!
//! The authorizer exists only when `authorizer.class.name` is set (to any Kafka class name:
//! Samsa always uses its own, built in). Without it every check is one branch that allows, and
//! the ACL APIs answer SECURITY_DISABLED, as Kafka does.
//!
//! Every connection has a principal and a host. Without authentication (SASL/TLS) the principal
//! is `User:ANONYMOUS` and the host the peer's IP address; an authentication layer only has to
//! set them on the connection (`Connection::set_principal`).
//!
//! Handlers call [`Ctx::authorize`](crate::handlers::Ctx) at their boundary and answer Kafka's
//! error code for the resource type (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
//! ...) when it says no.

pub mod authorizer;
pub mod binding;
pub mod store;

pub use authorizer::Authorizer;
pub use binding::{AclBinding, AclFilter};

use kafka_protocol::ResponseError;
use serde::{Deserialize, Serialize};

use crate::handlers::Ctx;

/// The name of the one CLUSTER resource (Kafka's `Resource.CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal resource name, or a host, that matches every name (Kafka's `WILDCARD`).
pub const WILDCARD: &str = "*";
/// The principal that matches every principal in an ACL.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The principal of a connection that did not authenticate.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// Kafka's `ResourceType`, with its wire codes. Codes Samsa does not know read as `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(i8)]
pub enum ResourceType {
    Unknown = 0,
    Any = 1,
    Topic = 2,
    Group = 3,
    Cluster = 4,
    TransactionalId = 5,
    DelegationToken = 6,
    User = 7,
}

impl ResourceType {
    pub fn from_code(code: i8) -> ResourceType {
        use ResourceType::*;
        match code {
            1 => Any,
            2 => Topic,
            3 => Group,
            4 => Cluster,
            5 => TransactionalId,
            6 => DelegationToken,
            7 => User,
            _ => Unknown,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    /// Kafka's name (`TOPIC`, `TRANSACTIONAL_ID`, ...).
    pub fn name(self) -> &'static str {
        use ResourceType::*;
        match self {
            Unknown => "UNKNOWN",
            Any => "ANY",
            Topic => "TOPIC",
            Group => "GROUP",
            Cluster => "CLUSTER",
            TransactionalId => "TRANSACTIONAL_ID",
            DelegationToken => "DELEGATION_TOKEN",
            User => "USER",
        }
    }

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

/// Kafka's `PatternType`. `Any` and `Match` exist only in filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(i8)]
pub enum PatternType {
    Unknown = 0,
    Any = 1,
    Match = 2,
    Literal = 3,
    Prefixed = 4,
}

impl PatternType {
    pub fn from_code(code: i8) -> PatternType {
        use PatternType::*;
        match code {
            1 => Any,
            2 => Match,
            3 => Literal,
            4 => Prefixed,
            _ => Unknown,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    pub fn name(self) -> &'static str {
        use PatternType::*;
        match self {
            Unknown => "UNKNOWN",
            Any => "ANY",
            Match => "MATCH",
            Literal => "LITERAL",
            Prefixed => "PREFIXED",
        }
    }
}

/// Kafka's `AclOperation`. `Any` exists only in filters; `All` matches every operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(i8)]
pub enum AclOperation {
    Unknown = 0,
    Any = 1,
    All = 2,
    Read = 3,
    Write = 4,
    Create = 5,
    Delete = 6,
    Alter = 7,
    Describe = 8,
    ClusterAction = 9,
    DescribeConfigs = 10,
    AlterConfigs = 11,
    IdempotentWrite = 12,
    CreateTokens = 13,
    DescribeTokens = 14,
    /// KIP-939 (Kafka 4.1): two-phase commit with a transactional id.
    TwoPhaseCommit = 15,
}

impl AclOperation {
    pub fn from_code(code: i8) -> AclOperation {
        use AclOperation::*;
        match code {
            1 => Any,
            2 => All,
            3 => Read,
            4 => Write,
            5 => Create,
            6 => Delete,
            7 => Alter,
            8 => Describe,
            9 => ClusterAction,
            10 => DescribeConfigs,
            11 => AlterConfigs,
            12 => IdempotentWrite,
            13 => CreateTokens,
            14 => DescribeTokens,
            15 => TwoPhaseCommit,
            _ => Unknown,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    pub fn name(self) -> &'static str {
        use AclOperation::*;
        match self {
            Unknown => "UNKNOWN",
            Any => "ANY",
            All => "ALL",
            Read => "READ",
            Write => "WRITE",
            Create => "CREATE",
            Delete => "DELETE",
            Alter => "ALTER",
            Describe => "DESCRIBE",
            ClusterAction => "CLUSTER_ACTION",
            DescribeConfigs => "DESCRIBE_CONFIGS",
            AlterConfigs => "ALTER_CONFIGS",
            IdempotentWrite => "IDEMPOTENT_WRITE",
            CreateTokens => "CREATE_TOKENS",
            DescribeTokens => "DESCRIBE_TOKENS",
            TwoPhaseCommit => "TWO_PHASE_COMMIT",
        }
    }
}

/// Kafka's `AclPermissionType`. `Any` exists only in filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[repr(i8)]
pub enum PermissionType {
    Unknown = 0,
    Any = 1,
    Deny = 2,
    Allow = 3,
}

impl PermissionType {
    pub fn from_code(code: i8) -> PermissionType {
        use PermissionType::*;
        match code {
            1 => Any,
            2 => Deny,
            3 => Allow,
            _ => Unknown,
        }
    }

    pub fn code(self) -> i8 {
        self as i8
    }

    pub fn name(self) -> &'static str {
        use PermissionType::*;
        match self {
            Unknown => "UNKNOWN",
            Any => "ANY",
            Deny => "DENY",
            Allow => "ALLOW",
        }
    }
}

/// Why an ACL operation was refused; each maps to one Kafka error code.
#[derive(Debug, thiserror::Error)]
pub enum AclError {
    /// A binding or filter Kafka would refuse (bad enum, ANY/MATCH in a binding, empty name,
    /// principal without a type, ...).
    #[error("{0}")]
    InvalidRequest(String),
    /// The broker holds as many ACLs as it allows.
    #[error("cannot create {wanted} more ACLs: the broker holds {existing} of at most {limit}")]
    TooMany {
        wanted: usize,
        existing: usize,
        limit: usize,
    },
    #[error("cannot write the ACL file: {0}")]
    Storage(#[from] std::io::Error),
}

impl AclError {
    pub fn response_error(&self) -> ResponseError {
        match self {
            AclError::InvalidRequest(_) => ResponseError::InvalidRequest,
            // A configured limit the request would break, like Kafka's create policies.
            AclError::TooMany { .. } => ResponseError::PolicyViolation,
            // Kafka answers what is not an API error as UNKNOWN_SERVER_ERROR.
            AclError::Storage(_) => ResponseError::UnknownServerError,
        }
    }
}

/// The authorization check handlers make at their boundary.
impl Ctx<'_> {
    /// Whether this connection's principal may perform `operation` on the resource. Always
    /// true without an authorizer (a single branch: nothing else is paid).
    #[inline]
    pub fn authorize(
        &self,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        match &self.broker.authorizer {
            None => true,
            Some(a) => a.authorize(
                &self.conn.principal(),
                self.conn.host(),
                operation,
                resource_type,
                name,
            ),
        }
    }

    /// Whether the principal may perform `operation` on at least one resource of the type
    /// (Kafka's `authorizeByResourceType`, KIP-679: an idempotent producer needs WRITE on some
    /// topic, not IDEMPOTENT_WRITE on the cluster).
    pub fn authorize_any(&self, operation: AclOperation, resource_type: ResourceType) -> bool {
        match &self.broker.authorizer {
            None => true,
            Some(a) => a.authorize_by_resource_type(
                &self.conn.principal(),
                self.conn.host(),
                operation,
                resource_type,
            ),
        }
    }

    /// The operations the principal may perform on the resource, as the bit field of the
    /// `*_authorized_operations` response fields (bit n = operation code n). Without an
    /// authorizer: every operation the resource type supports, as Kafka answers.
    pub fn authorized_operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|op| self.authorize(**op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    /// The message that goes with a refusal: who may not do what to which resource.
    pub fn denied(
        &self,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> String {
        format!(
            "principal {} is not authorized to {} {} '{name}'",
            self.conn.principal().as_str(),
            operation.name(),
            resource_type.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(AclOperation::from_code(15), AclOperation::TwoPhaseCommit);
        assert_eq!(AclOperation::from_code(16), AclOperation::Unknown);
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
    }
}
