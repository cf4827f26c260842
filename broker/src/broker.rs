//! The broker's shared state: the [`Node`] its services see, and the services (coordinators,
//! authorizer, fetch sessions, replica fetchers) that the handlers and the network layer use.
//! Built by [`Broker::open`](crate::start), served by [`crate::server::run`].

use std::sync::Arc;

use crate::group::GroupCoordinator;
use crate::net::engine::IoEngine;
use crate::node::Node;
use crate::txn::TransactionCoordinator;

pub use crate::node::Limits;

/// State shared by every shard and handler: the [`Node`] its services see, and the services.
pub struct Broker {
    /// What this node's services may see of it (identity, configuration, topics, quorum...).
    pub node: Arc<Node>,
    /// Producer ids and transactions.
    pub txn: Arc<TransactionCoordinator>,
    /// Consumer groups and committed offsets.
    pub groups: Arc<GroupCoordinator>,
    /// Share groups (KIP-932): their members and the share-partitions this broker leads.
    pub shares: Arc<crate::share::ShareCoordinator>,
    /// The client connections' limits and quotas (`max.connections`, per IP, rates).
    pub connections: Arc<crate::net::quotas::ConnectionGate>,
    pub io_engine: IoEngine,
    /// ACL authorization; `None` when `authorizer.class.name` is empty.
    pub authorizer: Option<crate::acl::Authorizer>,
    /// `replica.selector.class`: how a leader picks the replica a consumer reads from
    /// (KIP-392); `None`: consumers read from leaders.
    pub replica_selector: Option<samsa_cluster::replication::selector::ReplicaSelector>,
    /// Fetch sessions (KIP-227) of the fetchers of this broker's partitions.
    pub fetch_sessions: parking_lot::Mutex<crate::fetch_session::cache::FetchSessionCache>,
    /// The fetchers copying the partitions this broker follows from their leaders.
    pub replica_fetchers: crate::replication::fetcher::ReplicaFetchers,
}
