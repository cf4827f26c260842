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
//! Handlers call `Ctx::authorize` (`handlers/authorize.rs`) at their boundary and answer Kafka's
//! error code for the resource type (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
//! ...) when it says no.

pub mod authorizer;
pub mod legacy;

pub use authorizer::Authorizer;
pub use samsa_cluster::acl::{
    AclBinding, AclFilter, AclOperation, InvalidAcl, PatternType, PermissionType, ResourceType,
    CLUSTER_NAME, WILDCARD,
};

/// The principal that matches every principal in an ACL.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The principal of a connection that did not authenticate.
pub const ANONYMOUS: &str = "User:ANONYMOUS";
