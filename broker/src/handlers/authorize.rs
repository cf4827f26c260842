//! The authorization checks handlers make at their boundary, as methods of [`Ctx`]: here, in
//! the handlers, so that `acl/` (the bindings and the authorizer) knows nothing of requests.

use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, Authorizer, ResourceType, CLUSTER_NAME};

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
