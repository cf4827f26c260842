//! ACLs: the bindings an operator creates with CreateAcls (KIP-140, prefixed patterns from
//! KIP-290) and the authorizer that checks every request against them with the rules of Kafka's
//! `StandardAuthorizer`.
//!
//! ACLs belong to the cluster: the active controller commits them to the metadata log, and each
//! broker's authorizer follows its image (`Authorizer::follow`, called by the metadata
//! publisher). The bindings, filters and their validation are `samsa_cluster::acl`'s, re-exported
//! here; a node's `samsa-acls.json` from before the metadata log held ACLs is imported once
//! ([`legacy`], `upgrade.rs`).
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
pub mod legacy;

pub use authorizer::Authorizer;
pub use samsa_cluster::acl::{
    AclBinding, AclFilter, AclOperation, InvalidAcl, PatternType, PermissionType, ResourceType,
    CLUSTER_NAME, WILDCARD,
};

use kafka_protocol::ResponseError;

use crate::handlers::Ctx;

/// The principal that matches every principal in an ACL.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The principal of a connection that did not authenticate.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

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
        match self.authorizer() {
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
        match self.authorizer() {
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
        let Some(authorizer) = self.authorizer() else {
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
