//! What this node's services may see of it: its identity, configuration, topics, metadata
//! quorum, membership, connections to the other brokers, metrics and shutdown signal.
//!
//! The coordinators (groups, transactions, share groups), replication, internal topics,
//! maintenance and the node's lifecycle take a [`Node`], never the whole
//! [`Broker`](crate::broker::Broker): what one coordinator needs of another is an explicit
//! argument. A `Node` is built first, at start-up (`start::open_node`); the services are built
//! over it and the `Broker` holds both for the handlers and the network layer above them.

use std::path::PathBuf;
use std::sync::Arc;

use samsa_storage::GroupCommit;
use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::topics::TopicRegistry;

/// Limits read on every request, copied out of the configuration once.
#[derive(Debug, Clone)]
pub struct Limits {
    pub socket_request_max_bytes: usize,
    pub connections_max_idle_ms: u64,
    /// `queued.max.request.bytes`: what large requests' buffers may hold at once.
    pub request_memory: crate::net::request_memory::RequestMemory,
}

/// What the broker last heard from the controller about itself (kept by `lifecycle.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Membership {
    pub broker_epoch: Option<i64>,
    pub fenced: bool,
}

/// One node's shared state below the coordinators.
pub struct Node {
    /// The static configuration, as the broker started with it.
    pub config: BrokerConfig,
    /// Dynamic broker configs (KIP-226) as the metadata image has them: `effective()` is the
    /// configuration in force now, for the keys that may change while the broker runs.
    pub dynamic_configs: Arc<crate::config::dynamic::DynamicConfigs>,
    pub limits: Limits,
    pub node_id: i32,
    pub cluster_id: String,
    /// The log directory's id (`directory.id` in meta.properties, KIP-858).
    pub directory_id: uuid::Uuid,
    pub topics: TopicRegistry,
    pub group_commit: Arc<GroupCommit>,
    /// Prometheus metrics (served on `metrics.listener`).
    pub metrics: crate::metrics::Metrics,
    /// The replication throttles (KIP-73): the leader's and the follower's byte rates and the
    /// replicas they throttle, following the dynamic broker configs and the topics' configs.
    pub replication_quotas: crate::quota::replication::ReplicationQuotas,
    /// This node's controller: the KRaft metadata quorum and the image of what it committed.
    pub controller: crate::controller::runtime::Controller,
    /// This broker's registration with the active controller (`lifecycle.rs` keeps it).
    pub membership: watch::Sender<Membership>,
    /// Connections to the other brokers (transaction markers, KIP-890 verification).
    pub inter_broker: crate::inter_broker::connections::InterBroker,
    /// The metadata image the publisher last made this broker's state follow, with whether its
    /// partitions took their roles (see `publisher::publish`).
    pub published: watch::Sender<(Arc<samsa_cluster::metadata::MetadataImage>, bool)>,
    /// The client listeners with their TLS and SASL settings (set once they are bound).
    pub listeners: std::sync::OnceLock<Vec<Arc<crate::security::ListenerSecurity>>>,
    /// The controller listener's name, which clients are never given.
    pub(crate) controller_listener: String,
    pub(crate) shutdown: watch::Sender<bool>,
    /// The client quotas' rates (KIP-13, KIP-55, KIP-599), per broker.
    pub client_quotas: Arc<crate::quota::client::ClientQuotas>,
}

impl Node {
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Tells every service waiting on [`shutdown_signal`](Self::shutdown_signal) that the
    /// node is going.
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    pub fn log_dir(&self) -> PathBuf {
        self.config.log_dir()
    }

    pub fn is_controller_listener(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case(&self.controller_listener)
    }
}
