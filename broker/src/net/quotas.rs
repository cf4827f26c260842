//! The shell of the connection quotas ([`crate::quota::connections`]): their state behind one
//! lock the shards share, the limits as the configuration in force and the metadata image's
//! `ip` client quotas set them (remade when either changes, so dynamic updates apply to the
//! next connection), the clock, and the wait of a held connection. The accept loop applies
//! what [`ConnectionGate::admit`] answers.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use samsa_cluster::metadata::image::{ClientQuotaEntity, QuotaValue};
use tokio::sync::{watch, Notify};

use crate::config::BrokerConfig;
use crate::node::Node;
use crate::quota::connections::{
    parse_overrides, ConnectionQuotas, Decision, IpRateQuotas, Limit, Limits, ListenerLimits,
    UNLIMITED,
};
use crate::quota::rate::Windows;

/// How often a connection waiting for a slot looks again besides when one closes (a close on
/// another shard may slip between its look and its wait; a dynamic update raises no event).
const SLOT_RECHECK: Duration = Duration::from_millis(100);

/// The client quota key of KIP-612's per-IP connection rate.
const IP_CONNECTION_RATE_KEY: &str = "connection_creation_rate";

type ClientQuotas = Arc<BTreeMap<ClientQuotaEntity, BTreeMap<String, QuotaValue>>>;

/// What the accept loop does with a new connection.
pub enum Admission {
    /// Serve it; the slot is given back when dropped.
    Serve(ConnectionSlot),
    /// Read nothing from it and close it after this long.
    CloseAfter(Duration),
    /// Close it now.
    Close,
    /// The broker is shutting down.
    Shutdown,
}

struct State {
    quotas: ConnectionQuotas,
    /// What the limits were made from: they are remade when either is another.
    config: Option<Arc<BrokerConfig>>,
    client_quotas: Option<ClientQuotas>,
}

/// The connection quotas of this broker's client listeners.
pub struct ConnectionGate {
    listeners: Vec<String>,
    state: Mutex<State>,
    closed: Notify,
    epoch: Instant,
}

impl ConnectionGate {
    /// The gate of the client listeners `listeners` (their names), `inter_broker` naming the
    /// inter-broker one.
    pub fn new(listeners: Vec<String>, inter_broker: &str) -> Arc<ConnectionGate> {
        let quotas = ConnectionQuotas::new(Limits::default(), &listeners, inter_broker);
        Arc::new(ConnectionGate {
            listeners,
            state: Mutex::new(State {
                quotas,
                config: None,
                client_quotas: None,
            }),
            closed: Notify::new(),
            epoch: Instant::now(),
        })
    }

    /// Open client connections.
    pub fn open(&self) -> i64 {
        self.state.lock().quotas.open()
    }

    fn now_ms(&self) -> i64 {
        self.epoch.elapsed().as_millis() as i64
    }

    /// Decides what becomes of a connection from `peer` on `listener`: at once, or after
    /// holding it (and this shard's accepts on `listener`) while a limit says wait.
    pub async fn admit(
        self: &Arc<Self>,
        node: &Node,
        peer: SocketAddr,
        listener: &str,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Admission {
        let ip = peer.ip().to_canonical();
        let mut held: Option<i64> = None;
        loop {
            // Listening for closes before looking, so that none is missed in between.
            let closed = self.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            let decision = self.decide(node, |q, now_ms| match held {
                None => q.on_accept(ip, listener, now_ms),
                Some(until_ms) => q.resume(ip, listener, until_ms, now_ms),
            });
            match decision {
                Decision::Accept => {
                    return Admission::Serve(ConnectionSlot {
                        gate: self.clone(),
                        ip,
                        listener: listener.to_string(),
                    })
                }
                Decision::Reject { limit, max } => {
                    tracing::info!(
                        listener,
                        "Rejected connection from /{ip}, address already has the configured \
                         maximum of {max} connections."
                    );
                    node.metrics.connection_rejected(listener, limit.label());
                    return Admission::Close;
                }
                Decision::AcceptThenCloseAfter { throttle_ms } => {
                    tracing::debug!(
                        listener,
                        "Delaying closing of connection from /{ip} for {throttle_ms} ms \
                         (its {IP_CONNECTION_RATE_KEY} quota)"
                    );
                    node.metrics
                        .connection_throttled(listener, Limit::IpConnectionCreationRate.label());
                    return Admission::CloseAfter(Duration::from_millis(throttle_ms.max(0) as u64));
                }
                Decision::WaitUntil { until_ms, limit } => {
                    if held.is_none() {
                        tracing::debug!(%peer, listener, "holding a new connection: {}", limit.label());
                        node.metrics.connection_throttled(listener, limit.label());
                    }
                    held = Some(until_ms);
                    let now_ms = self.now_ms();
                    let for_slot = until_ms <= now_ms;
                    let wait = if for_slot {
                        SLOT_RECHECK
                    } else {
                        Duration::from_millis((until_ms - now_ms) as u64)
                    };
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = &mut closed, if for_slot => {}
                        _ = shutdown.changed() => return Admission::Shutdown,
                    }
                    if *shutdown.borrow() {
                        return Admission::Shutdown;
                    }
                }
            }
        }
    }

    /// Runs `f` on the quotas at the current time, with the limits in force.
    fn decide(
        &self,
        node: &Node,
        f: impl FnOnce(&mut ConnectionQuotas, i64) -> Decision,
    ) -> Decision {
        let config = node.dynamic_configs.effective();
        let client_quotas = node.controller.image().client_quotas().clone();
        let mut s = self.state.lock();
        let same = s.config.as_ref().is_some_and(|c| Arc::ptr_eq(c, &config))
            && s.client_quotas
                .as_ref()
                .is_some_and(|q| Arc::ptr_eq(q, &client_quotas));
        if !same {
            // Made outside the lock: an override may name a host to resolve.
            drop(s);
            let limits = limits_from(&config, &self.listeners, &client_quotas);
            s = self.state.lock();
            if s.quotas.limits() != &limits {
                // The first limits (at the first connection) are the configuration's, which
                // start-up logged; a change is worth a line, as Kafka logs a reconfiguration.
                if s.config.is_some() {
                    tracing::info!(?limits, "connection limits changed");
                }
                s.quotas.set_limits(limits);
            }
            s.config = Some(config);
            s.client_quotas = Some(client_quotas);
        }
        let now_ms = self.now_ms();
        f(&mut s.quotas, now_ms)
    }

    fn release(&self, ip: IpAddr, listener: &str) {
        self.state.lock().quotas.on_close(ip, listener);
        self.closed.notify_waiters();
    }
}

/// An accepted connection's place in the counts, given back on drop.
pub struct ConnectionSlot {
    gate: Arc<ConnectionGate>,
    ip: IpAddr,
    listener: String,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.gate.release(self.ip, &self.listener);
    }
}

/// The limits `cfg` and the `ip` client quotas set for `listeners`.
fn limits_from(cfg: &BrokerConfig, listeners: &[String], client_quotas: &ClientQuotas) -> Limits {
    let number = |key: &str| -> Option<i64> { cfg.get(key)?.trim().parse().ok() };
    let overrides = parse_overrides(
        &cfg.get("max.connections.per.ip.overrides")
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| {
        // Checked at start and before a dynamic update is committed.
        tracing::warn!("ignoring max.connections.per.ip.overrides: {e}");
        Vec::new()
    });
    let listener_limits = listeners
        .iter()
        .map(|l| {
            let key = |k: &str| format!("listener.name.{}.{k}", l.to_ascii_lowercase());
            let limits = ListenerLimits {
                max_connections: number(&key("max.connections")).unwrap_or(UNLIMITED),
                max_connection_creation_rate: number(&key("max.connection.creation.rate"))
                    .unwrap_or(UNLIMITED),
            };
            (l.clone(), limits)
        })
        .collect();
    Limits {
        max_connections: number("max.connections").unwrap_or(UNLIMITED),
        max_connection_creation_rate: number("max.connection.creation.rate").unwrap_or(UNLIMITED),
        max_connections_per_ip: number("max.connections.per.ip").unwrap_or(UNLIMITED),
        max_connections_per_ip_overrides: overrides
            .into_iter()
            .filter_map(|(host, count)| Some((resolve(&host)?, count)))
            .collect(),
        listeners: listener_limits,
        windows: Windows::new(
            number("quota.window.num").unwrap_or(11).clamp(1, 1_000) as u32,
            number("quota.window.size.seconds")
                .unwrap_or(1)
                .clamp(1, 3_600)
                * 1_000,
        ),
        ip_rates: ip_rates(client_quotas),
    }
}

/// An override's host as an address: an IP address as written, else the first address the
/// name resolves to (Kafka's `InetAddress.getByName`); `None`, logged, when it resolves to none.
fn resolve(host: &str) -> Option<IpAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    match (host, 0).to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(addr)) => Some(addr.ip().to_canonical()),
        Ok(None) | Err(_) => {
            tracing::warn!(
                "max.connections.per.ip.overrides: cannot resolve {host}; its override is ignored"
            );
            None
        }
    }
}

/// The `connection_creation_rate` quotas of the `ip` entities (KIP-612), as whole connections
/// per second (Kafka's `toInt`).
fn ip_rates(client_quotas: &ClientQuotas) -> IpRateQuotas {
    let mut rates = IpRateQuotas {
        default: None,
        by_ip: HashMap::new(),
    };
    for (entity, quotas) in client_quotas.iter() {
        let Some(QuotaValue(rate)) = quotas.get(IP_CONNECTION_RATE_KEY) else {
            continue;
        };
        let rate = rate.clamp(i32::MIN as f64, i32::MAX as f64) as i64;
        match (entity.len(), entity.get("ip")) {
            (1, Some(None)) => rates.default = Some(rate),
            (1, Some(Some(ip))) => match ip.parse::<IpAddr>() {
                Ok(ip) => {
                    rates.by_ip.insert(ip.to_canonical(), rate);
                }
                Err(_) => {
                    tracing::warn!("ignoring the connection quota of ip {ip}: not an IP address")
                }
            },
            _ => {}
        }
    }
    rates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Arc<BrokerConfig> {
        let layer = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Arc::new(BrokerConfig::default().with_dynamic(layer, BTreeMap::new()))
    }

    #[test]
    fn limits_come_from_the_configuration_and_the_ip_quotas() {
        let cfg = config(&[
            ("max.connections.per.ip", "3"),
            ("max.connections.per.ip.overrides", "127.0.0.1:5,::1:2"),
            ("listener.name.plaintext.max.connections", "7"),
            ("quota.window.size.seconds", "2"),
        ]);
        let entity = |ip: Option<&str>| {
            ClientQuotaEntity::from([("ip".to_string(), ip.map(str::to_string))])
        };
        let quota = |v: f64| BTreeMap::from([(IP_CONNECTION_RATE_KEY.to_string(), QuotaValue(v))]);
        let quotas: ClientQuotas = Arc::new(BTreeMap::from([
            (entity(Some("10.0.0.1")), quota(5.7)),
            (entity(None), quota(100.0)),
        ]));
        let l = limits_from(&cfg, &["PLAINTEXT".to_string()], &quotas);
        assert_eq!(l.max_connections_per_ip, 3);
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(l.max_connections_per_ip_overrides[&local], 5);
        assert_eq!(
            l.max_connections_per_ip_overrides[&"::1".parse().unwrap()],
            2
        );
        assert_eq!(l.listeners["PLAINTEXT"].max_connections, 7);
        assert_eq!(
            l.listeners["PLAINTEXT"].max_connection_creation_rate,
            UNLIMITED
        );
        assert_eq!(l.windows, Windows::new(11, 2_000));
        assert_eq!(l.ip_rates.for_ip(&"10.0.0.1".parse().unwrap()), Some(5));
        assert_eq!(l.ip_rates.for_ip(&local), Some(100));
    }
}
