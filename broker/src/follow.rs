//! What follows the metadata image besides topics and coordinators: the effective broker
//! configuration (the dynamic layers of this broker and of the cluster default, applied to
//! every log that does not override them, Kafka's `DynamicConfigPublisher`, and the replication
//! throttles' rates) and the authorizer's ACLs (Kafka's `AclPublisher`). The publisher calls [`configs_and_acls`] on
//! every image it publishes, before it installs topics, so that new logs open with the
//! configuration of the same image.

use std::sync::Arc;

use samsa_cluster::metadata::MetadataImage;

use crate::acl::Authorizer;
use crate::config::BrokerConfig;
use crate::node::Node;
use crate::quota::rate::Windows;
use crate::quota::replication::ReplicationQuotas;

/// Makes this broker's configuration and ACLs follow `image` (cheap when neither changed).
pub fn configs_and_acls(node: &Node, authorizer: Option<&Authorizer>, image: &Arc<MetadataImage>) {
    if let Some(effective) = node.dynamic_configs.follow(image) {
        node.topics.set_broker_config((*effective).clone());
        replication_rates(&node.replication_quotas, &effective);
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

/// The replication quotas of a broker starting with `config`: `replication.quota.window.num`
/// windows of `replication.quota.window.size.seconds` (read at start only, as in Kafka), and
/// the two rates.
pub fn replication_quotas(config: &BrokerConfig) -> ReplicationQuotas {
    let windows = Windows::new(
        config.int("replication.quota.window.num").max(1) as u32,
        i64::from(config.int("replication.quota.window.size.seconds").max(1)) * 1000,
    );
    let quotas = ReplicationQuotas::new(windows);
    replication_rates(&quotas, config);
    quotas
}

/// `leader.replication.throttled.rate` and `follower.replication.throttled.rate` as `config`
/// has them (this broker's dynamic layer, else the cluster default, else unthrottled).
fn replication_rates(quotas: &ReplicationQuotas, config: &BrokerConfig) {
    quotas.set_bounds(
        config.long("leader.replication.throttled.rate"),
        config.long("follower.replication.throttled.rate"),
    );
}
