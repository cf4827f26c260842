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

/// One of Kafka's ACL enums: its variants with their wire codes and Kafka's names. A code the
/// broker does not know reads as `Unknown`, which validation then refuses.
macro_rules! kafka_enum {
    (
        $(#[$doc:meta])*
        $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal => $text:literal,)+ }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
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

    /// The authorizer an ACL API works on, after Kafka's checks (`AclApis`): SECURITY_DISABLED
    /// without one (with `disabled_message`: Kafka words it differently per API), and
    /// CLUSTER_AUTHORIZATION_FAILED without `operation` on the cluster.
    pub fn acl_admin(
        &self,
        operation: AclOperation,
        disabled_message: &str,
    ) -> Result<&Authorizer, (ResponseError, String)> {
        let Some(authorizer) = &self.broker.authorizer else {
            return Err((ResponseError::SecurityDisabled, disabled_message.into()));
        };
        self.authorize_cluster(operation)?;
        Ok(authorizer)
    }

    /// `operation` on the cluster, else CLUSTER_AUTHORIZATION_FAILED with the refusal message.
    pub fn authorize_cluster(
        &self,
        operation: AclOperation,
    ) -> Result<(), (ResponseError, String)> {
        if self.authorize(operation, ResourceType::Cluster, CLUSTER_NAME) {
            return Ok(());
        }
        Err((
            ResponseError::ClusterAuthorizationFailed,
            self.denied(operation, ResourceType::Cluster, CLUSTER_NAME),
        ))
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
