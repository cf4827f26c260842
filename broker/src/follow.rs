//! What follows the metadata image besides topics and coordinators: the effective broker
//! configuration (the dynamic layers of this broker and of the cluster default, applied to
//! every log that does not override them, Kafka's `DynamicConfigPublisher`) and the
//! authorizer's ACLs (Kafka's `AclPublisher`). The publisher calls [`configs_and_acls`] on
//! every image it publishes, before it installs topics, so that new logs open with the
//! configuration of the same image.

use std::sync::Arc;

use samsa_cluster::metadata::MetadataImage;

use crate::acl::Authorizer;
use crate::node::Node;

/// Makes this broker's configuration and ACLs follow `image` (cheap when neither changed).
pub fn configs_and_acls(node: &Node, authorizer: Option<&Authorizer>, image: &Arc<MetadataImage>) {
    if let Some(effective) = node.dynamic_configs.follow(image) {
        node.topics.set_broker_config((*effective).clone());
        if let Some(listeners) = node.listeners.get() {
            crate::security::reload_all(listeners, &effective);
        }
        crate::security::outbound::reload(&node.inter_broker.security, &effective);
    }
    if let Some(authorizer) = authorizer {
        authorizer.follow(image);
    }
    node.client_quotas.follow(image.client_quotas());
}
