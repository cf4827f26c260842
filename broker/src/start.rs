//! Starting a node: its log directory, identity and file-handle bounds, its controller (the
//! KRaft quorum), the [`Node`] and the services built over it, and the publisher that makes
//! them follow the metadata image. Nothing here listens for clients (`server.rs` does).

use std::sync::Arc;
use std::time::Duration;

use samsa_storage::GroupCommit;
use tokio::sync::watch;

use crate::broker::{Broker, Limits};
use crate::config::BrokerConfig;
use crate::group::GroupCoordinator;
use crate::net::{self, IoEngine};
use crate::node::Node;
use crate::topics::TopicRegistry;
use crate::txn::{TransactionCoordinator, TRANSACTION_STATE_TOPIC};

/// Sizes the process-wide cache of open segment files (`log.open.files.max`, else a share of
/// the file-handle limit) and says so. A bound the process limit cannot hold stops the start:
/// the broker would otherwise fail later, partition by partition, with "Too many open files".
/// Below this file-handle limit a node refuses to start rather than fail request by request.
const DESCRIPTOR_LIMIT_MIN: u64 = 256;

fn open_files_bound(config: &BrokerConfig) -> anyhow::Result<()> {
    use samsa_storage::file_cache::{self, FileCache, CAPACITY_MIN};
    let limit = file_cache::raise_descriptor_limit();
    if let Some(limit) = limit.filter(|&l| l < DESCRIPTOR_LIMIT_MIN) {
        let partitions = std::fs::read_dir(config.log_dir())
            .map(|d| {
                d.filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
                    .count()
            })
            .unwrap_or(0);
        anyhow::bail!(
            "this process's file-handle limit (RLIMIT_NOFILE {limit}) is too low to serve: at \
             least {DESCRIPTOR_LIMIT_MIN} are needed, for connections, checkpoints and a cache \
             of segment files whatever the number of partitions ({partitions} in {}); raise it \
             (ulimit -n)",
            config.log_dir().display()
        );
    }
    let capacity = if config.is_set("log.open.files.max") {
        let asked = config.long("log.open.files.max");
        if asked < CAPACITY_MIN as i64 {
            anyhow::bail!("log.open.files.max={asked}: at least {CAPACITY_MIN} files are needed");
        }
        if let Some(limit) = limit.filter(|&l| asked as u64 >= l) {
            anyhow::bail!(
                "log.open.files.max={asked} is not below this process's file-handle limit \
                 (RLIMIT_NOFILE {limit}): sockets and checkpoints need handles too; lower it or \
                 raise the limit (ulimit -n)"
            );
        }
        asked as usize
    } else {
        file_cache::default_capacity(limit.unwrap_or(u64::MAX))
    };
    FileCache::global().set_capacity(capacity);
    tracing::debug!(
        open_files_max = capacity,
        file_handle_limit = limit.map_or("unlimited".to_string(), |l| l.to_string()),
        "segment files: at most this many held open, idle ones closed and reopened on use"
    );
    Ok(())
}

/// Opens the log directory (recovering every partition) and builds the [`Node`] over it: the
/// identity, dynamic configs, topics, the controller (a quorum of one elects itself before
/// this returns), the inter-broker connections, metrics, membership and shutdown signal. No
/// service and no network for clients: [`Broker::open`] builds the services over it, and tests
/// of one coordinator use it alone (`testing::NodeHarness`).
pub fn open_node(config: BrokerConfig) -> anyhow::Result<Arc<Node>> {
    // Before anything is written: a node that cannot reach its peers as configured stops.
    let kraft = crate::controller::settings::KraftConfig::from_config(&config)?;
    let inter_broker_security = peer_security(
        &config,
        &kraft,
        &config.inter_broker_listener_name(),
        crate::security::outbound::Channel::InterBroker,
    )?;
    let dir = config.log_dir();
    open_files_bound(&config)?;
    tracing::debug!(log_dir = %dir.display(), "opening log directory");
    let started = std::time::Instant::now();
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create log.dirs {}: {e}", dir.display()))?;
    let (node_id, cluster_id, directory_id) = crate::meta::load_identity(&dir, &config)?;
    // The dynamic configs' topic defaults reach the logs when the image is first published.
    let dynamic_configs = Arc::new(crate::config::dynamic::DynamicConfigs::new(
        &config, node_id,
    ));
    let topics = TopicRegistry::open(&dir, &dynamic_configs.effective())?;
    let controller = start_controller(&config, node_id, &cluster_id, &dir, &dynamic_configs)?;
    tracing::info!(
        topics = topics.all().len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "log directory ready"
    );
    let (shutdown, _) = watch::channel(false);
    let controller_listener = kraft.listener_name;
    let inter_broker =
        crate::inter_broker::connections::InterBroker::start(node_id, inter_broker_security)
            .map_err(|e| anyhow::anyhow!("cannot start the inter-broker thread: {e}"))?;
    let replication_quotas = crate::follow::replication_quotas(&dynamic_configs.effective());
    Ok(Arc::new(Node {
        replication_quotas,
        limits: Limits {
            socket_request_max_bytes: config.int("socket.request.max.bytes") as usize,
            connections_max_idle_ms: config.long("connections.max.idle.ms").max(1) as u64,
            request_memory: crate::net::request_memory::RequestMemory::from_config(
                config.long("queued.max.request.bytes"),
            ),
        },
        dynamic_configs,
        node_id,
        cluster_id,
        directory_id,
        topics,
        group_commit: GroupCommit::shared(),
        metrics: crate::metrics::Metrics::new(),
        controller,
        membership: watch::channel(Default::default()).0,
        published: watch::channel(Default::default()).0,
        inter_broker,
        listeners: std::sync::OnceLock::new(),
        controller_listener,
        shutdown,
        client_quotas: Arc::new(crate::quota::client::ClientQuotas::new(
            crate::quota::rate::Windows::new(
                config.int("quota.window.num") as u32,
                config.long("quota.window.size.seconds") * 1000,
            ),
            crate::quota::rate::Windows::new(
                config.int("controller.quota.window.num") as u32,
                config.long("controller.quota.window.size.seconds") * 1000,
            ),
        )),
        config,
    }))
}

/// The partition count `name` has in the cluster: this node's registry, else the metadata
/// image as far as this node has it. The coordinators hash their keys over it.
fn partition_count(node: &Node, name: &str) -> Option<i32> {
    node.topics
        .get(name)
        .map(|t| t.partition_count)
        .or_else(|| {
            node.controller
                .image()
                .topic_by_name(name)
                .map(|t| t.partitions().len() as i32)
        })
}

/// The group coordinator of `node`. Groups in an existing `__consumer_offsets` are "loading"
/// until the publisher has the coordinator follow the partitions' leadership and replay them.
pub fn group_coordinator(node: &Node) -> Arc<GroupCoordinator> {
    let offsets_partitions = partition_count(node, crate::group::OFFSETS_TOPIC);
    Arc::new(GroupCoordinator::new(&node.config, offsets_partitions))
}

/// The transaction coordinator of `node`, over the producer-id claims of its log directory,
/// with the group coordinator that takes the markers of transactional offsets.
pub fn txn_coordinator(
    node: &Node,
    groups: Arc<GroupCoordinator>,
) -> anyhow::Result<Arc<TransactionCoordinator>> {
    let txn_partitions = partition_count(node, TRANSACTION_STATE_TOPIC);
    Ok(Arc::new(TransactionCoordinator::new(
        &node.config,
        &node.log_dir(),
        txn_partitions,
        groups,
    )?))
}

impl Broker {
    /// Opens the log directory (recovering every partition) and builds the shared state,
    /// without any network. `run` serves it; tests drive handlers on it directly.
    pub fn open(config: BrokerConfig, io_engine: IoEngine) -> anyhow::Result<Arc<Broker>> {
        let tail_cache = config.long("log.tail.cache.bytes");
        if tail_cache < 0 {
            anyhow::bail!("log.tail.cache.bytes={tail_cache}: must be 0 (no cache) or more");
        }
        // Before the logs open: one budget for every partition's tail cache in this process.
        samsa_storage::set_tail_cache_budget(tail_cache as u64);
        let node = open_node(config)?;
        let config = &node.config;
        let groups = group_coordinator(&node);
        let txn = txn_coordinator(&node, groups.clone())?;
        let authorizer = crate::acl::Authorizer::from_config(config);
        let replica_selector =
            samsa_cluster::replication::selector::ReplicaSelector::from_class_name(
                config.get("replica.selector.class").as_deref(),
            )
            .map_err(|e| anyhow::anyhow!(e))?;
        let fetch_sessions = crate::fetch_session::cache::FetchSessionCache::new(
            crate::fetch_session::cache::CacheConfig {
                max_sessions: config
                    .int("max.incremental.fetch.session.cache.slots")
                    .max(0) as usize,
                eviction_ms: crate::fetch_session::cache::EVICTION_MS,
            },
            rand::random(),
        );
        let replica_fetchers = crate::replication::fetcher::ReplicaFetchers::start(
            crate::replication::fetcher::FetcherConfig {
                node_id: node.node_id,
                fetch_max_bytes: config.int("replica.fetch.max.bytes").max(1),
                response_max_bytes: config.int("replica.fetch.response.max.bytes").max(1),
                wait_max_ms: config.int("replica.fetch.wait.max.ms").max(0),
                backoff_ms: config.int("replica.fetch.backoff.ms").max(1) as u64,
            },
        )
        .map_err(|e| anyhow::anyhow!("cannot start the replica fetchers: {e}"))?;
        let client_listeners = config
            .listeners()
            .into_iter()
            .map(|l| l.name)
            .filter(|l| !l.eq_ignore_ascii_case(&node.controller_listener))
            .collect();
        let connections = crate::net::quotas::ConnectionGate::new(
            client_listeners,
            &config.inter_broker_listener_name(),
        );
        let broker = Arc::new(Broker {
            node,
            txn,
            groups,
            shares: Arc::new(crate::share::ShareCoordinator::new()),
            connections,
            io_engine,
            authorizer,
            replica_selector,
            fetch_sessions: parking_lot::Mutex::new(fetch_sessions),
            replica_fetchers,
        });
        // The topics of the metadata image as far as this node has it, before anything is
        // served; the publisher follows the image from here on.
        crate::publisher::start(&broker)
            .map_err(|e| anyhow::anyhow!("cannot start the metadata publisher: {e}"))?;
        Ok(broker)
    }
}

/// Starts the controller thread: the KRaft quorum over `__cluster_metadata-0`, listening on
/// the controller listener when there are other voters.
pub(crate) fn start_controller(
    config: &BrokerConfig,
    node_id: i32,
    cluster_id: &str,
    dir: &std::path::Path,
    dynamic_configs: &Arc<crate::config::dynamic::DynamicConfigs>,
) -> anyhow::Result<crate::controller::runtime::Controller> {
    use crate::controller::runtime::{Controller, ControllerSettings};
    let kraft = crate::controller::settings::KraftConfig::from_config(config)?;
    let peer_security = peer_security(
        config,
        &kraft,
        &kraft.listener_name,
        crate::security::outbound::Channel::Controller,
    )?;
    let listen = match &kraft.listener {
        Some(l) => {
            let security = crate::security::ListenerSecurity::from_config(config, l)
                .map_err(anyhow::Error::msg)?;
            if let Some(m) = security
                .sasl
                .as_ref()
                .and_then(|s| s.mechanisms.iter().find(|m| m.scram().is_some()).copied())
            {
                anyhow::bail!(
                    "listener {}: sasl.enabled.mechanisms: {} cannot authenticate nodes to \
                     controllers (SCRAM credentials live in the metadata the controllers \
                     serve), as in Kafka: enable PLAIN or OAUTHBEARER on the controller listener",
                    l.name,
                    m.name()
                );
            }
            let addr = l.socket_addr().map_err(anyhow::Error::msg)?;
            let socket = bind_with_patience(addr)
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr} ({}): {e}", l.name))?;
            tracing::info!(listener = %l.name, address = %addr, security = security.protocol.name(), "controller listening");
            Some((socket, Arc::new(security)))
        }
        None => None,
    };
    let settings = ControllerSettings {
        node_id,
        cluster_id: cluster_id.to_string(),
        log_dir: dir.to_path_buf(),
        voters: kraft
            .voters
            .iter()
            .filter_map(|(&id, a)| a.map(|a| (id, a)))
            .collect(),
        bootstrap: kraft.bootstrap_servers.clone(),
        listen,
        peer_security,
        listener_name: kraft.listener_name.clone(),
        quorum: kraft.quorum.clone(),
        log: kraft.log.clone(),
        snapshot_after_bytes: kraft.snapshot_after_bytes,
        snapshot_interval_ms: config.long("metadata.log.max.snapshot.interval.ms").max(0) as u64,
        controller: samsa_cluster::controller::ControllerConfig {
            local_broker: kraft.roles.broker,
            ..controller_config(config, cluster_id)
        },
        // The active controller checks configs against this node's configuration, and the
        // controller listener describes it (KIP-919).
        config_validator: Some(Box::new(
            crate::config::validator::BrokerConfigValidator::new(dynamic_configs.clone()),
        )),
        configs: dynamic_configs.clone(),
    };
    let single = settings.quorum.voters.len() == 1 && settings.quorum.voters.contains(&node_id);
    let controller = Controller::start(settings)
        .map_err(|e| anyhow::anyhow!("cannot start the controller: {e}"))?;
    if single {
        // A quorum of one elects itself at once: serve only once it leads, so that the first
        // request already sees a leader.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while controller.status().role != samsa_cluster::quorum::Role::Leader {
            if std::time::Instant::now() > deadline {
                anyhow::bail!("the metadata quorum of one did not elect this node within 10 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(controller)
}

/// The active controller's settings, from the broker keys Kafka's controller reads.
fn controller_config(
    config: &BrokerConfig,
    cluster_id: &str,
) -> samsa_cluster::controller::ControllerConfig {
    let mut c = samsa_cluster::controller::ControllerConfig::new(cluster_id);
    c.session_timeout_ms = config.long("broker.session.timeout.ms").max(1) as u64;
    c.default_num_partitions = config.int("num.partitions");
    c.default_replication_factor = config.int("default.replication.factor") as i16;
    c.unclean_leader_election_enable = config.bool("unclean.leader.election.enable");
    c.unclean_leader_election_interval_ms =
        Some(config.long("unclean.leader.election.interval.ms").max(1) as u64);
    // Kafka's ControllerServer: no rebalancing at all unless auto.leader.rebalance.enable.
    c.leader_imbalance_check_interval_ms = config.bool("auto.leader.rebalance.enable").then(|| {
        config
            .long("leader.imbalance.check.interval.seconds")
            .max(1) as u64
            * 1_000
    });
    c.delete_topic_enable = config.bool("delete.topic.enable");
    // A new cluster starts with group version 1 (KIP-848 consumer groups), streams version 1
    // (KIP-1071 streams groups), transaction version 2 and share version 2 (share groups with
    // dead-letter queues), as Kafka 4.4 formats one.
    c.bootstrap_features = vec![
        (
            samsa_cluster::controller::GROUP_VERSION_FEATURE.to_string(),
            samsa_cluster::controller::GROUP_VERSION_MAX,
        ),
        (
            samsa_cluster::controller::SHARE_VERSION_FEATURE.to_string(),
            samsa_cluster::controller::SHARE_VERSION_MAX,
        ),
        (
            samsa_cluster::controller::STREAMS_VERSION_FEATURE.to_string(),
            samsa_cluster::controller::STREAMS_VERSION_MAX,
        ),
        (
            samsa_cluster::controller::TRANSACTION_VERSION_FEATURE.to_string(),
            samsa_cluster::controller::TRANSACTION_VERSION_MAX,
        ),
    ];
    c.no_op_interval_ms = match config.long("metadata.max.idle.interval.ms") {
        v if v > 0 => Some(v as u64),
        _ => None,
    };
    c
}

/// How long start-up waits for a busy port. A process killed while it had io_uring operations
/// pending keeps its listening socket until the kernel tears the ring down, which can take a
/// moment after the process is gone; a restart right after a crash must not fail for that.
const BIND_PATIENCE: Duration = Duration::from_secs(10);

pub(crate) fn bind_with_patience(
    addr: std::net::SocketAddr,
) -> std::io::Result<std::net::TcpListener> {
    let deadline = std::time::Instant::now() + BIND_PATIENCE;
    let mut warned = false;
    loop {
        match net::bind(addr) {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && std::time::Instant::now() < deadline =>
            {
                if !warned {
                    tracing::warn!(%addr, "address in use; retrying for up to {} s", BIND_PATIENCE.as_secs());
                    warned = true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Whether this node has no other node to reach: the only voter of its quorum, with no
/// bootstrap servers (a single node, the quick start).
fn alone(kraft: &crate::controller::settings::KraftConfig) -> bool {
    kraft.roles.controller && kraft.voters.len() <= 1 && kraft.bootstrap_servers.is_empty()
}

/// How this node secures its connections of `channel` to `listener` of the other nodes; a
/// start-up error when that cannot be done as configured (and the node has peers).
fn peer_security(
    config: &BrokerConfig,
    kraft: &crate::controller::settings::KraftConfig,
    listener: &str,
    channel: crate::security::outbound::Channel,
) -> anyhow::Result<Arc<crate::security::outbound::PeerSecurity>> {
    use crate::security::outbound::PeerSecurity;
    let security = if alone(kraft) {
        PeerSecurity::for_node_alone(config, listener, channel)
    } else {
        PeerSecurity::from_config(config, listener, channel).map_err(anyhow::Error::msg)?
    };
    if !alone(kraft) {
        tracing::info!(?channel, listener, security = %security.describe(), "connections to other nodes");
    }
    Ok(security)
}
