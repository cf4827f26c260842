//! The broker process: runs a node until SIGTERM or SIGINT (its client listeners, the
//! background tasks of its services, the signals) and shuts it down in order; a
//! controller-only node runs just its quorum. Start-up itself is `start.rs`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::net;
use crate::start::{bind_with_patience, start_controller};

/// Runs a broker until SIGTERM or SIGINT, then shuts it down cleanly.
pub fn run(config: BrokerConfig) -> anyhow::Result<()> {
    run_then(config, || {})
}

/// [`run`], calling `serving` once the node serves its listeners (not on a controller-only
/// node, which has none).
pub fn run_then(config: BrokerConfig, serving: impl FnOnce()) -> anyhow::Result<()> {
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
    let console_socket = crate::console::bind(&config)?;
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
    let console = match console_socket {
        Some(bound) => {
            let mut endpoints = Vec::new();
            for ((l, s), sec) in sockets.iter().zip(&security) {
                let mechanisms = sec.sasl.as_ref().map(|s| s.mechanism_names());
                endpoints.push(crate::console::endpoint(
                    &l.name,
                    sec.protocol,
                    s.local_addr()?,
                    &mechanisms.unwrap_or_default(),
                ));
            }
            let console = crate::console::Console::new(
                &broker.node.config,
                &broker.node.cluster_id,
                endpoints,
                &bound,
            );
            tracing::info!(
                address = %bound.socket.local_addr()?,
                scheme = bound.scheme(),
                writes = broker.node.config.bool("console.writes.enable"),
                "console API listening (/v3/clusters)"
            );
            Some((bound, Arc::new(console)))
        }
        None => None,
    };
    // Caught before anyone is told the node serves: a SIGTERM sent the moment it does (a test
    // helper's) shuts it down cleanly rather than ending it where it stands.
    let signals = {
        let _runtime = control.enter();
        Signals::install()
    };
    tracing::info!(engine = %engine, shards, node_id = broker.node.node_id, cluster_id = %broker.node.cluster_id, "samsa is serving");
    serving();

    let controller_failed = control.block_on(async {
        let maintenance = tokio::spawn(crate::maintenance::run(broker.node.clone()));
        let txn_timers = tokio::spawn(broker.txn.clone().run_timers(broker.node.clone()));
        let metrics =
            metrics_socket.map(|s| tokio::spawn(crate::metrics::http::serve(s, broker.clone())));
        let console = console.map(|(s, c)| tokio::spawn(crate::console::serve(s, c)));
        let group_timers = tokio::spawn(broker.groups.clone().run_timers(broker.node.clone()));
        let share_timers = tokio::spawn(broker.shares.clone().run_timers(broker.node.clone()));
        let dead_letters =
            tokio::spawn(broker.shares.clone().run_dead_letters(broker.node.clone()));
        let isr_checks = tokio::spawn(crate::replication::run_isr_checks(broker.node.clone()));
        let offset_expiry =
            tokio::spawn(broker.groups.clone().run_offset_expiry(broker.node.clone()));
        let mut failed = false;
        tokio::select! {
            _ = signals.wait() => {}
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
        if let Some(c) = console {
            c.abort();
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
    if config.is_set("console.listener") {
        tracing::info!(
            "console.listener is a broker's endpoint: a controller-only node does not serve it"
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

/// The Prometheus endpoint's socket, bound at start so that a taken port fails the start
/// with a clear message; `None` when `metrics.listener` is empty (disabled).
fn bind_metrics_listener(config: &BrokerConfig) -> anyhow::Result<Option<std::net::TcpListener>> {
    let value = config.get("metrics.listener").unwrap_or_default();
    let value = value.trim();
    if value.is_empty() {
        tracing::debug!("metrics.listener is empty: no Prometheus endpoint");
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

async fn wait_for_signal() {
    Signals::install().wait().await
}

/// SIGTERM and SIGINT, caught from the moment of `install` (within a tokio runtime): until
/// then either ends the process at once.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        Signals {
            term: signal(SignalKind::terminate()).expect("SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("SIGINT handler"),
        }
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => tracing::info!("received SIGTERM"),
            _ = self.int.recv() => tracing::info!("received SIGINT"),
        }
    }
}
