//! The broker process: shared state every handler sees, start-up and orderly shutdown.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use samsa_storage::GroupCommit;
use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::group::GroupCoordinator;
use crate::net::{self, IoEngine};
use crate::node::Node;
use crate::topics::TopicRegistry;
use crate::txn::{TransactionCoordinator, TRANSACTION_STATE_TOPIC};

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
    pub connections: AtomicUsize,
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
    tracing::info!(
        open_files_max = capacity,
        file_handle_limit = limit.map_or("unlimited".to_string(), |l| l.to_string()),
        "segment files: at most this many held open, idle ones closed and reopened on use"
    );
    Ok(())
}

impl Broker {
    /// Opens the log directory (recovering every partition) and builds the shared state,
    /// without any network. `run` serves it; tests drive handlers on it directly.
    pub fn open(config: BrokerConfig, io_engine: IoEngine) -> anyhow::Result<Arc<Broker>> {
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
        tracing::info!(log_dir = %dir.display(), "opening log directory");
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
        // The coordinators hash keys over the partition count their topic has in the cluster
        // (this node's registry, else the metadata image as far as this node has it).
        let image = controller.image();
        let partition_count = |name: &str| {
            topics.get(name).map(|t| t.partition_count).or_else(|| {
                image
                    .topic_by_name(name)
                    .map(|t| t.partitions().len() as i32)
            })
        };
        let txn_partitions = partition_count(TRANSACTION_STATE_TOPIC);
        // Groups in an existing __consumer_offsets are "loading" until `run` replays them.
        let offsets_partitions = partition_count(crate::group::OFFSETS_TOPIC);
        let groups = Arc::new(GroupCoordinator::new(&config, offsets_partitions));
        let txn = Arc::new(TransactionCoordinator::new(
            &config,
            &dir,
            txn_partitions,
            groups.clone(),
        )?);
        tracing::info!(
            topics = topics.all().len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "log directory ready"
        );
        let (shutdown, _) = watch::channel(false);
        let authorizer = crate::acl::Authorizer::from_config(&config);
        let controller_listener =
            crate::controller::settings::KraftConfig::from_config(&config)?.listener_name;
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
                node_id,
                fetch_max_bytes: config.int("replica.fetch.max.bytes").max(1),
                response_max_bytes: config.int("replica.fetch.response.max.bytes").max(1),
                wait_max_ms: config.int("replica.fetch.wait.max.ms").max(0),
                backoff_ms: config.int("replica.fetch.backoff.ms").max(1) as u64,
            },
        )
        .map_err(|e| anyhow::anyhow!("cannot start the replica fetchers: {e}"))?;
        let inter_broker = crate::inter_broker::InterBroker::start(node_id, inter_broker_security)
            .map_err(|e| anyhow::anyhow!("cannot start the inter-broker thread: {e}"))?;
        let node = Arc::new(Node {
            limits: Limits {
                socket_request_max_bytes: config.int("socket.request.max.bytes") as usize,
                connections_max_idle_ms: config.long("connections.max.idle.ms").max(1) as u64,
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
            config,
        });
        let broker = Arc::new(Broker {
            node,
            txn,
            groups,
            shares: Arc::new(crate::share::ShareCoordinator::new()),
            connections: AtomicUsize::new(0),
            io_engine,
            authorizer,
            replica_selector,
            fetch_sessions: parking_lot::Mutex::new(fetch_sessions),
            replica_fetchers,
        });
        // The topics of the metadata image as far as this node has it, before anything is
        // served; the publisher follows the image from here on.
        let mut published = crate::publisher::Published::default();
        crate::publisher::publish(
            &broker,
            &broker.node.controller.image(),
            false,
            &mut published,
        );
        crate::publisher::spawn(&broker, published)
            .map_err(|e| anyhow::anyhow!("cannot start the metadata publisher: {e}"))?;
        Ok(broker)
    }
}

/// Runs a broker until SIGTERM or SIGINT, then shuts it down cleanly.
pub fn run(config: BrokerConfig) -> anyhow::Result<()> {
    let kraft = crate::controller::settings::KraftConfig::from_config(&config)?;
    if !kraft.roles.broker {
        return run_controller_only(config);
    }
    let engine = net::engine::choose(&config.get("io.engine").unwrap_or_default())
        .map_err(anyhow::Error::msg)?;
    let listeners: Vec<_> = config
        .listeners()
        .into_iter()
        .filter(|l| !kraft.is_controller_listener(l))
        .collect();
    if listeners.is_empty() {
        anyhow::bail!("listeners: no listener for clients besides the controller listener");
    }
    // TLS and SASL settings first: a listener that cannot be served as configured stops the
    // start before anything listens.
    let mut security = Vec::new();
    for l in &listeners {
        let s = crate::security::ListenerSecurity::from_config(&config, l)
            .map_err(anyhow::Error::msg)?;
        security.push(Arc::new(s));
    }
    let mut sockets = Vec::new();
    for l in &listeners {
        let addr = l.socket_addr().map_err(anyhow::Error::msg)?;
        let socket = bind_with_patience(addr)
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr} ({}): {e}", l.name))?;
        sockets.push((l.clone(), socket));
    }
    let metrics_socket = bind_metrics_listener(&config)?;
    let shards = match config.int("num.shards") {
        n if n > 0 => n as usize,
        _ => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let broker = Broker::open(config, engine)?;
    let _ = broker.node.listeners.set(security.clone());
    // Dynamic TLS settings already in the metadata log (a keystore rotated before a restart).
    crate::security::reload_all(&security, &broker.node.dynamic_configs.effective());
    crate::security::outbound::reload(
        &broker.node.inter_broker.security,
        &broker.node.dynamic_configs.effective(),
    );

    let control = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("samsa-control")
        .enable_all()
        .build()?;
    let (leaving, leave) = watch::channel(false);
    let lifecycle = control.spawn(crate::lifecycle::run(
        broker.node.clone(),
        broker.node.membership.clone(),
        leave,
    ));
    // What this node kept in its own files before the metadata log held it (topics, configs,
    // ACLs, credentials) is imported once it is unfenced (`upgrade.rs`).
    let importer = {
        let broker = broker.clone();
        let mut membership = broker.node.membership.subscribe();
        control.spawn(async move {
            if membership
                .wait_for(|m| m.broker_epoch.is_some() && !m.fenced)
                .await
                .is_ok()
            {
                crate::upgrade::import(&broker.node).await;
            }
        })
    };
    // Requests are served only once this node is ready, as Kafka enables its listeners only
    // then: connections wait in the listen backlog meanwhile.
    control.block_on(until_ready(&broker, importer));

    let raw: Vec<(
        std::net::TcpListener,
        Arc<crate::security::ListenerSecurity>,
    )> = sockets
        .iter()
        .zip(&security)
        .map(|((_, s), sec)| Ok((s.try_clone()?, sec.clone())))
        .collect::<std::io::Result<_>>()?;
    let handles = net::start_shards(broker.clone(), engine, shards, &raw)?;
    drop(raw);
    for ((l, s), sec) in sockets.iter().zip(&security) {
        let mut sasl = sec
            .sasl
            .as_ref()
            .map(|s| s.mechanism_names().join(","))
            .unwrap_or_default();
        if sasl.is_empty() {
            sasl = "-".into();
        }
        tracing::info!(
            listener = %l.name,
            address = %s.local_addr()?,
            protocol = sec.protocol.name(),
            sasl_mechanisms = %sasl,
            "listening"
        );
    }
    if security.iter().any(|s| s.tls.is_some()) {
        if crate::security::tls::ktls_available() {
            tracing::info!("TLS: rustls; this kernel has kernel TLS, but Samsa does not use it yet: fetches over TLS are read and encrypted");
        } else {
            tracing::info!("TLS: rustls; this kernel has no kernel TLS (TCP_ULP tls): fetches over TLS are read and encrypted instead of sent with sendfile");
        }
    }
    if let Some(m) = &metrics_socket {
        tracing::info!(address = %m.local_addr()?, path = "/metrics", "metrics listening");
    }
    tracing::info!(engine = %engine, shards, node_id = broker.node.node_id, cluster_id = %broker.node.cluster_id, "samsa is serving");

    let controller_failed = control.block_on(async {
        let maintenance = tokio::spawn(crate::maintenance::run(broker.node.clone()));
        let txn_timers = tokio::spawn(broker.txn.clone().run_timers(broker.node.clone()));
        let metrics =
            metrics_socket.map(|s| tokio::spawn(crate::metrics::http::serve(s, broker.clone())));
        let group_timers = tokio::spawn(broker.groups.clone().run_timers(broker.node.clone()));
        let share_timers = tokio::spawn(broker.shares.clone().run_timers(broker.node.clone()));
        let dead_letters =
            tokio::spawn(broker.shares.clone().run_dead_letters(broker.node.clone()));
        let isr_checks = tokio::spawn(crate::replication::run_isr_checks(broker.node.clone()));
        let offset_expiry =
            tokio::spawn(broker.groups.clone().run_offset_expiry(broker.node.clone()));
        let mut failed = false;
        tokio::select! {
            _ = wait_for_signal() => {}
            why = broker.node.controller.failed() => {
                tracing::error!(error = %why, "shutting down: the controller failed");
                failed = true;
            }
        }
        // Leave the cluster first: the controller moves leadership off this broker while it
        // still serves (bounded inside the lifecycle task).
        leaving.send_replace(true);
        let _ = lifecycle.await;
        tracing::info!("shutting down: no new connections; finishing in-flight requests");
        broker.node.begin_shutdown();
        maintenance.abort();
        txn_timers.abort();
        if let Some(m) = metrics {
            m.abort();
        }
        group_timers.abort();
        share_timers.abort();
        dead_letters.abort();
        isr_checks.abort();
        offset_expiry.abort();
        failed
    });
    drop(sockets);
    for h in handles {
        let _ = h.join();
    }
    let closed = crate::maintenance::write_checkpoints(&broker.node);
    match closed.and_then(|()| {
        broker
            .node
            .topics
            .log_dir()
            .mark_clean_shutdown()
            .map_err(anyhow::Error::from)
    }) {
        Ok(()) => tracing::info!("logs flushed, checkpoints written; clean shutdown"),
        Err(e) => {
            tracing::error!("shutdown could not flush everything: {e}; the next start will recover")
        }
    }
    control.shutdown_timeout(Duration::from_secs(1));
    if controller_failed {
        anyhow::bail!("the controller could not write the metadata log (see the error above)");
    }
    Ok(())
}

/// Runs a `process.roles=controller` node until SIGTERM or SIGINT: the KRaft quorum over its
/// controller listener and, while it leads, the active controller. Nothing else: no client
/// listener, no partitions, no coordinators, and no broker registration, so that it never
/// appears among the brokers in Metadata or DescribeCluster (Kafka's controller-only nodes
/// the same). The Prometheus endpoint is a broker's and is not served here.
fn run_controller_only(config: BrokerConfig) -> anyhow::Result<()> {
    let dir = config.log_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create log.dirs {}: {e}", dir.display()))?;
    let (node_id, cluster_id, _) = crate::meta::load_identity(&dir, &config)?;
    // The active controller checks configs against this node's configuration as the metadata
    // image has it (static keys, and the cluster's dynamic defaults as they change).
    let dynamic_configs = Arc::new(crate::config::dynamic::DynamicConfigs::new(
        &config, node_id,
    ));
    let controller = start_controller(&config, node_id, &cluster_id, &dir, &dynamic_configs)?;
    if config.is_set("metrics.listener") {
        tracing::info!(
            "metrics.listener is a broker's endpoint: a controller-only node does not serve it"
        );
    }
    let control = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tracing::info!(
        node_id,
        cluster_id = %cluster_id,
        roles = "controller",
        voters = ?controller.voters().keys().collect::<Vec<_>>(),
        "samsa is serving (controller only: the metadata quorum on the controller listener)"
    );
    let failed = control.block_on(async {
        let mut images = controller.subscribe();
        let follow = tokio::spawn(async move {
            loop {
                let image = images.borrow_and_update().clone();
                dynamic_configs.follow(&image);
                if images.changed().await.is_err() {
                    return;
                }
            }
        });
        let failed = tokio::select! {
            _ = wait_for_signal() => None,
            why = controller.failed() => Some(why),
        };
        follow.abort();
        failed
    });
    // A leader hands over with EndQuorumEpoch before it goes.
    controller.shutdown();
    match failed {
        Some(why) => {
            anyhow::bail!("the controller could not write the metadata log: {why}")
        }
        None => {
            tracing::info!("controller stopped; clean shutdown");
            Ok(())
        }
    }
}

/// How long a node waits to be ready before it serves anyway: Kafka's default
/// `initial.broker.registration.timeout.ms`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a node with other voters waits for a quorum leader to appear before it serves what
/// it has: the voters of a new cluster start one after another, and a majority that is down
/// leaves nothing to catch up with.
const NO_LEADER_GRACE: Duration = Duration::from_secs(3);

/// Waits until this node is ready to answer clients, as Kafka's `BrokerServer.startup` does
/// before it enables its listeners: registered and unfenced by the active controller (which
/// unfences a broker only once it has caught up with the metadata log), its topics and
/// partitions in the roles the image gives them, its legacy files imported. Coordinators may
/// still be loading their partitions; they answer COORDINATOR_LOAD_IN_PROGRESS meanwhile.
/// Without a quorum leader for a while (a new multi-voter cluster whose other voters are not up
/// yet), or after `READY_TIMEOUT`, it serves what it has and says so.
async fn until_ready(broker: &Arc<Broker>, importer: tokio::task::JoinHandle<()>) {
    let started = tokio::time::Instant::now();
    let mut leaderless_since: Option<tokio::time::Instant> = None;
    let mut membership = broker.node.membership.subscribe();
    loop {
        let unfenced = {
            let m = membership.borrow_and_update();
            m.broker_epoch.is_some() && !m.fenced
        };
        if unfenced && crate::metadata_wait::serving(&broker.node, Duration::from_millis(100)).await
        {
            if tokio::time::timeout(READY_TIMEOUT, importer).await.is_err() {
                tracing::warn!("importing this node's legacy files takes long; serving meanwhile");
            }
            return;
        }
        let now = tokio::time::Instant::now();
        if broker.node.controller.status().leader_id.is_some() {
            leaderless_since = None;
        } else if leaderless_since.get_or_insert(now).elapsed() >= NO_LEADER_GRACE {
            tracing::warn!(
                "no metadata quorum leader yet (other voters not up?): serving the metadata this node has; it catches up once a quorum forms"
            );
            return;
        }
        if now.duration_since(started) >= READY_TIMEOUT {
            tracing::warn!(
                "not registered and unfenced by the controller within {} s; serving anyway",
                READY_TIMEOUT.as_secs()
            );
            return;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), membership.changed()).await;
    }
}

/// Starts the controller thread: the KRaft quorum over `__cluster_metadata-0`, listening on
/// the controller listener when there are other voters.
fn start_controller(
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
    // A new cluster starts with transaction version 2 and share version 2 (share groups with
    // dead-letter queues), as Kafka 4.4 formats one.
    c.bootstrap_features = vec![
        (
            samsa_cluster::controller::SHARE_VERSION_FEATURE.to_string(),
            samsa_cluster::controller::SHARE_VERSION_MAX,
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

/// The Prometheus endpoint's socket, bound at start so that a taken port fails the start
/// with a clear message; `None` when `metrics.listener` is empty (disabled).
fn bind_metrics_listener(config: &BrokerConfig) -> anyhow::Result<Option<std::net::TcpListener>> {
    let value = config.get("metrics.listener").unwrap_or_default();
    let value = value.trim();
    if value.is_empty() {
        tracing::info!("metrics.listener is empty: no Prometheus endpoint");
        return Ok(None);
    }
    use std::net::ToSocketAddrs;
    let addr = value
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| anyhow::anyhow!("metrics.listener '{value}' is not host:port"))?;
    // No patience here: the metrics endpoint is a plain socket, released as soon as its
    // process is gone, so a taken port is another process's (typically a second node on
    // this machine with the default port) and waiting would only delay the message.
    let socket = net::bind(addr).map_err(|e| {
        anyhow::anyhow!("cannot listen on {addr} (metrics.listener): {e}; choose another port or set metrics.listener= to disable it")
    })?;
    Ok(Some(socket))
}

/// How long start-up waits for a busy port. A process killed while it had io_uring operations
/// pending keeps its listening socket until the kernel tears the ring down, which can take a
/// moment after the process is gone; a restart right after a crash must not fail for that.
const BIND_PATIENCE: Duration = Duration::from_secs(10);

fn bind_with_patience(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpListener> {
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

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => tracing::info!("received SIGTERM"),
        _ = int.recv() => tracing::info!("received SIGINT"),
    }
}
