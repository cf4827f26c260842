//! Kafka's connection quotas (`kafka.network.ConnectionQuotas`), sans-IO with the clock as
//! input: what the accept loop does with each new connection.
//!
//! In Kafka's order, for a connection from `ip` on `listener`:
//! 1. The broker-wide and the listener's `max.connection.creation.rate` (KIP-612) record it
//!    once; over either, the acceptor waits the throttle time (at most one quota window).
//!    The acceptor also waits while the listener has `listener.name.X.max.connections` open, or
//!    the broker `max.connections`. The inter-broker listener, when there is more than one
//!    listener, is held to its own listener limits only (Kafka's "protected" listener).
//! 2. The IP's `connection_creation_rate` client quota (KIP-612; the IP's own entity, else the
//!    default IP entity) records it; over it, the connection is accepted but never served and
//!    closed once the throttle time has passed, and nothing counts it (Kafka's
//!    `ConnectionThrottledException` and delayed close).
//! 3. The IP's `max.connections.per.ip` (or its `max.connections.per.ip.overrides` entry): an IP
//!    that already has that many connections has this one closed at once.
//!
//! Invariants: the counts are of connections answered [`Decision::Accept`] and not yet given
//! to [`ConnectionQuotas::on_close`]; a rate is recorded once per connection, and a connection
//! the IP quota throttles is taken back from every rate it was recorded in.

use std::collections::HashMap;
use std::net::IpAddr;

use super::rate::{Rate, Windows};

/// Kafka's "no limit" for the connection counts and rates (`Int.MaxValue`).
pub const UNLIMITED: i64 = i32::MAX as i64;

/// Idle per-IP rates are dropped once this many are kept (and then at twice what remains).
const IP_RATES_SWEEP_AT: usize = 1_024;

/// The limits in force (the broker configs and the `ip` client quotas).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// `max.connections`: open connections on every listener but the protected one.
    pub max_connections: i64,
    /// `max.connection.creation.rate`: new connections per second, broker-wide.
    pub max_connection_creation_rate: i64,
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: i64,
    /// `max.connections.per.ip.overrides`, resolved to addresses.
    pub max_connections_per_ip_overrides: HashMap<IpAddr, i64>,
    /// `listener.name.<listener>.max.connections` and `.max.connection.creation.rate`, by
    /// listener name as the listeners are registered.
    pub listeners: HashMap<String, ListenerLimits>,
    /// `quota.window.num` windows of `quota.window.size.seconds`: the rates' windows, and the
    /// longest throttle (one window, as Kafka bounds it).
    pub windows: Windows,
    /// The `connection_creation_rate` quotas of `ip` client quota entities.
    pub ip_rates: IpRateQuotas,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: UNLIMITED,
            max_connection_creation_rate: UNLIMITED,
            max_connections_per_ip: UNLIMITED,
            max_connections_per_ip_overrides: HashMap::new(),
            listeners: HashMap::new(),
            windows: Windows::KAFKA_DEFAULT,
            ip_rates: IpRateQuotas::default(),
        }
    }
}

impl Limits {
    fn max_for_ip(&self, ip: &IpAddr) -> i64 {
        self.max_connections_per_ip_overrides
            .get(ip)
            .copied()
            .unwrap_or(self.max_connections_per_ip)
    }

    fn listener(&self, listener: &str) -> ListenerLimits {
        self.listeners.get(listener).copied().unwrap_or_default()
    }

    fn max_throttle_ms(&self) -> i64 {
        self.windows.window_ms
    }
}

/// One listener's own limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenerLimits {
    pub max_connections: i64,
    pub max_connection_creation_rate: i64,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        ListenerLimits {
            max_connections: UNLIMITED,
            max_connection_creation_rate: UNLIMITED,
        }
    }
}

/// `connection_creation_rate` of the `ip` client quota entities (KIP-612): an IP's own quota
/// wins over the default IP entity's. Kafka takes the integer part of the stored value and
/// treats `Int.MaxValue` as no quota.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IpRateQuotas {
    pub default: Option<i64>,
    pub by_ip: HashMap<IpAddr, i64>,
}

impl IpRateQuotas {
    /// The quota on `ip`'s new connections per second, `None` when it has none.
    pub fn for_ip(&self, ip: &IpAddr) -> Option<i64> {
        self.by_ip
            .get(ip)
            .copied()
            .or(self.default)
            .filter(|r| *r != UNLIMITED)
    }
}

/// The limit a connection met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `max.connections` or `listener.name.X.max.connections`: waits for a slot.
    MaxConnections,
    /// `max.connection.creation.rate` (broker or listener): waits the throttle time.
    MaxConnectionCreationRate,
    /// The IP's `connection_creation_rate` quota: closed after the throttle time.
    IpConnectionCreationRate,
    /// `max.connections.per.ip` or its override: closed at once.
    MaxConnectionsPerIp,
}

impl Limit {
    /// The label metrics count it under.
    pub fn label(self) -> &'static str {
        match self {
            Limit::MaxConnections => "max_connections",
            Limit::MaxConnectionCreationRate => "max_connection_creation_rate",
            Limit::IpConnectionCreationRate => "connection_creation_rate",
            Limit::MaxConnectionsPerIp => "max_connections_per_ip",
        }
    }
}

/// What to do with a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Serve it; give it to [`ConnectionQuotas::on_close`] when it closes.
    Accept,
    /// Close it now: its IP already has `max` connections.
    Reject { limit: Limit, max: i64 },
    /// Serve nothing on it and close it after `throttle_ms` (the IP's connection rate quota).
    AcceptThenCloseAfter { throttle_ms: i64 },
    /// Hold it (and accept nothing else on this listener meanwhile): ask again with
    /// [`ConnectionQuotas::resume`] at `until_ms`, or, when that has passed (the wait is for a
    /// slot), once a connection closes.
    WaitUntil { until_ms: i64, limit: Limit },
}

#[derive(Debug, Default)]
struct ListenerState {
    open: i64,
    rate: Rate,
}

/// The connection counts and creation rates of a broker.
#[derive(Debug)]
pub struct ConnectionQuotas {
    limits: Limits,
    /// The listener held to its own limits only (the inter-broker one, when there are others).
    protected: Option<String>,
    listeners: HashMap<String, ListenerState>,
    open_total: i64,
    open_by_ip: HashMap<IpAddr, i64>,
    broker_rate: Rate,
    ip_rates: HashMap<IpAddr, Rate>,
    ip_rates_sweep_at: usize,
}

impl ConnectionQuotas {
    /// Quotas over `listeners` (their names), `inter_broker` being the inter-broker listener's.
    pub fn new(limits: Limits, listeners: &[String], inter_broker: &str) -> ConnectionQuotas {
        let protected = (listeners.len() > 1 && listeners.iter().any(|l| l == inter_broker))
            .then(|| inter_broker.to_string());
        ConnectionQuotas {
            limits,
            protected,
            listeners: listeners
                .iter()
                .map(|l| (l.clone(), ListenerState::default()))
                .collect(),
            open_total: 0,
            open_by_ip: HashMap::new(),
            broker_rate: Rate::new(),
            ip_rates: HashMap::new(),
            ip_rates_sweep_at: IP_RATES_SWEEP_AT,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// New limits (a dynamic config or a client quota changed); counts and rates are kept.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Open connections, on every listener.
    pub fn open(&self) -> i64 {
        self.open_total
    }

    /// Open connections from `ip`.
    pub fn open_from(&self, ip: &IpAddr) -> i64 {
        self.open_by_ip.get(ip).copied().unwrap_or(0)
    }

    /// A new connection from `ip` on `listener` at `now_ms`.
    pub fn on_accept(&mut self, ip: IpAddr, listener: &str, now_ms: i64) -> Decision {
        let throttle_ms = self.record_listener_and_broker(listener, now_ms);
        self.resume(ip, listener, now_ms + throttle_ms, now_ms)
    }

    /// A held connection ([`Decision::WaitUntil`] with `until_ms`) asks again at `now_ms`.
    pub fn resume(&mut self, ip: IpAddr, listener: &str, until_ms: i64, now_ms: i64) -> Decision {
        if now_ms < until_ms {
            return Decision::WaitUntil {
                until_ms,
                limit: Limit::MaxConnectionCreationRate,
            };
        }
        if !self.slot_available(listener) {
            return Decision::WaitUntil {
                until_ms,
                limit: Limit::MaxConnections,
            };
        }
        if let Some(throttle_ms) = self.record_ip(ip, listener, now_ms) {
            return Decision::AcceptThenCloseAfter { throttle_ms };
        }
        let max = self.limits.max_for_ip(&ip);
        if self.open_from(&ip) >= max {
            return Decision::Reject {
                limit: Limit::MaxConnectionsPerIp,
                max,
            };
        }
        *self.open_by_ip.entry(ip).or_insert(0) += 1;
        self.open_total += 1;
        if let Some(l) = self.listeners.get_mut(listener) {
            l.open += 1;
        }
        Decision::Accept
    }

    /// An accepted connection closed.
    pub fn on_close(&mut self, ip: IpAddr, listener: &str) {
        match self.open_by_ip.get_mut(&ip) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.open_by_ip.remove(&ip);
            }
            None => {
                debug_assert!(false, "a close from {ip}, which has no connection");
                return;
            }
        }
        self.open_total -= 1;
        if let Some(l) = self.listeners.get_mut(listener) {
            l.open -= 1;
        }
        debug_assert!(self.open_total >= 0);
    }

    fn is_protected(&self, listener: &str) -> bool {
        self.protected.as_deref() == Some(listener)
    }

    fn slot_available(&self, listener: &str) -> bool {
        let open = self.listeners.get(listener).map_or(0, |l| l.open);
        if open >= self.limits.listener(listener).max_connections {
            return false;
        }
        self.is_protected(listener) || self.open_total < self.limits.max_connections
    }

    /// Records the connection in the broker's and the listener's rates: the longer of their
    /// throttle times (0 within both).
    fn record_listener_and_broker(&mut self, listener: &str, now_ms: i64) -> i64 {
        let w = self.limits.windows;
        let max_ms = self.limits.max_throttle_ms();
        let mut throttle_ms = 0;
        if !self.is_protected(listener) {
            let bound = self.limits.max_connection_creation_rate;
            throttle_ms = bounded(
                self.broker_rate
                    .record_and_throttle_ms(w, bound as f64, 1.0, now_ms),
                bound,
                max_ms,
            );
        }
        let bound = self.limits.listener(listener).max_connection_creation_rate;
        if let Some(l) = self.listeners.get_mut(listener) {
            let t = l.rate.record_and_throttle_ms(w, bound as f64, 1.0, now_ms);
            throttle_ms = throttle_ms.max(bounded(t, bound, max_ms));
        }
        throttle_ms
    }

    /// Records the connection in its IP's rate when the IP has a quota: the throttle time when
    /// over it (the connection then taken back from every rate), else `None`.
    fn record_ip(&mut self, ip: IpAddr, listener: &str, now_ms: i64) -> Option<i64> {
        let bound = self.limits.ip_rates.for_ip(&ip)?;
        let w = self.limits.windows;
        let max_ms = self.limits.max_throttle_ms();
        if !self.ip_rates.contains_key(&ip) && self.ip_rates.len() >= self.ip_rates_sweep_at {
            self.ip_rates.retain(|_, r| !r.is_idle(w, now_ms));
            self.ip_rates_sweep_at = (self.ip_rates.len() * 2).max(IP_RATES_SWEEP_AT);
        }
        let rate = self.ip_rates.entry(ip).or_default();
        let throttle_ms = bounded(
            rate.record_and_throttle_ms(w, bound as f64, 1.0, now_ms),
            bound,
            max_ms,
        );
        if throttle_ms == 0 {
            return None;
        }
        rate.record(w, -1.0, now_ms);
        if !self.is_protected(listener) {
            self.broker_rate.record(w, -1.0, now_ms);
        }
        if let Some(l) = self.listeners.get_mut(listener) {
            l.rate.record(w, -1.0, now_ms);
        }
        Some(throttle_ms)
    }
}

/// A throttle time bounded to `max_ms` (Kafka's `QuotaUtils.boundedThrottleTime`). A bound of 0
/// is exceeded by any connection and gives the longest throttle (Kafka divides by it).
fn bounded(throttle_ms: i64, bound: i64, max_ms: i64) -> i64 {
    if bound <= 0 {
        return max_ms;
    }
    throttle_ms.min(max_ms)
}

/// Parses `max.connections.per.ip.overrides` (`host:count,host:count`, Kafka's
/// `Csv.parseCsvMap`: the count after the last colon, so IPv6 addresses need no brackets) into
/// (host, count) pairs, in order.
pub fn parse_overrides(value: &str) -> Result<Vec<(String, i64)>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(str::trim)
        .map(|entry| {
            let (host, count) = entry.rsplit_once(':').ok_or_else(|| {
                format!("Error parsing configuration property 'max.connections.per.ip.overrides': '{entry}' is not host:count")
            })?;
            let host = host.trim().trim_start_matches('[').trim_end_matches(']');
            let count: i32 = count.trim().parse().map_err(|_| {
                format!("Error parsing configuration property 'max.connections.per.ip.overrides': For input string: \"{}\"", count.trim())
            })?;
            if host.is_empty() {
                return Err(format!("Error parsing configuration property 'max.connections.per.ip.overrides': '{entry}' names no host"));
            }
            Ok((host.to_string(), i64::from(count)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 7));

    fn quotas(limits: Limits) -> ConnectionQuotas {
        ConnectionQuotas::new(limits, &["PLAINTEXT".to_string()], "PLAINTEXT")
    }

    #[test]
    fn connections_beyond_max_connections_per_ip_are_rejected_and_others_are_not() {
        let mut q = quotas(Limits {
            max_connections_per_ip: 3,
            ..Limits::default()
        });
        for _ in 0..3 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        }
        assert_eq!(
            q.on_accept(LOCAL, "PLAINTEXT", 0),
            Decision::Reject {
                limit: Limit::MaxConnectionsPerIp,
                max: 3
            }
        );
        assert_eq!(
            q.open_from(&LOCAL),
            3,
            "a rejected connection is not counted"
        );
        assert_eq!(q.on_accept(OTHER, "PLAINTEXT", 0), Decision::Accept);
        q.on_close(LOCAL, "PLAINTEXT");
        assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        assert_eq!(q.open(), 4);
    }

    #[test]
    fn an_override_replaces_the_per_ip_limit_for_its_address() {
        let mut q = quotas(Limits {
            max_connections_per_ip: 0,
            max_connections_per_ip_overrides: HashMap::from([(LOCAL, 5)]),
            ..Limits::default()
        });
        for _ in 0..5 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        }
        assert!(matches!(
            q.on_accept(LOCAL, "PLAINTEXT", 0),
            Decision::Reject { max: 5, .. }
        ));
        assert!(matches!(
            q.on_accept(OTHER, "PLAINTEXT", 0),
            Decision::Reject { max: 0, .. }
        ));
    }

    #[test]
    fn beyond_max_connections_the_acceptor_waits_for_a_close() {
        let mut q = quotas(Limits {
            max_connections: 2,
            ..Limits::default()
        });
        q.on_accept(LOCAL, "PLAINTEXT", 0);
        q.on_accept(OTHER, "PLAINTEXT", 0);
        let held = q.on_accept(LOCAL, "PLAINTEXT", 5);
        assert_eq!(
            held,
            Decision::WaitUntil {
                until_ms: 5,
                limit: Limit::MaxConnections
            }
        );
        assert!(matches!(
            q.resume(LOCAL, "PLAINTEXT", 5, 500),
            Decision::WaitUntil { .. }
        ));
        q.on_close(OTHER, "PLAINTEXT");
        assert_eq!(q.resume(LOCAL, "PLAINTEXT", 5, 600), Decision::Accept);
    }

    #[test]
    fn a_listener_limit_holds_its_listener_only() {
        let limits = Limits {
            listeners: HashMap::from([(
                "CLIENT".to_string(),
                ListenerLimits {
                    max_connections: 1,
                    ..ListenerLimits::default()
                },
            )]),
            ..Limits::default()
        };
        let names = ["CLIENT".to_string(), "INTERNAL".to_string()];
        let mut q = ConnectionQuotas::new(limits, &names, "INTERNAL");
        assert_eq!(q.on_accept(LOCAL, "CLIENT", 0), Decision::Accept);
        assert!(matches!(
            q.on_accept(LOCAL, "CLIENT", 0),
            Decision::WaitUntil { .. }
        ));
        assert_eq!(q.on_accept(LOCAL, "INTERNAL", 0), Decision::Accept);
    }

    #[test]
    fn the_inter_broker_listener_is_not_held_to_the_broker_wide_limits() {
        let limits = Limits {
            max_connections: 1,
            max_connection_creation_rate: 1,
            ..Limits::default()
        };
        let names = ["CLIENT".to_string(), "INTERNAL".to_string()];
        let mut q = ConnectionQuotas::new(limits.clone(), &names, "INTERNAL");
        assert_eq!(q.on_accept(LOCAL, "CLIENT", 0), Decision::Accept);
        for _ in 0..20 {
            assert_eq!(q.on_accept(LOCAL, "INTERNAL", 0), Decision::Accept);
        }
        // With one listener, the inter-broker listener is not protected.
        let mut q = ConnectionQuotas::new(limits, &["INTERNAL".to_string()], "INTERNAL");
        assert_eq!(q.on_accept(LOCAL, "INTERNAL", 0), Decision::Accept);
        assert!(matches!(
            q.on_accept(LOCAL, "INTERNAL", 0),
            Decision::WaitUntil { .. }
        ));
    }

    #[test]
    fn over_max_connection_creation_rate_the_acceptor_waits_the_throttle_time() {
        // 2 per second measured over at least 10 windows of 1 s: the 21st connection at once is
        // 2.1/s, 5% over, so 500 ms; the throttle is bounded to one window.
        let mut q = quotas(Limits {
            max_connection_creation_rate: 2,
            ..Limits::default()
        });
        for _ in 0..20 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 1_000), Decision::Accept);
        }
        let d = q.on_accept(LOCAL, "PLAINTEXT", 1_000);
        assert_eq!(
            d,
            Decision::WaitUntil {
                until_ms: 1_500,
                limit: Limit::MaxConnectionCreationRate
            }
        );
        assert_eq!(q.resume(LOCAL, "PLAINTEXT", 1_500, 1_200), d);
        assert_eq!(q.resume(LOCAL, "PLAINTEXT", 1_500, 1_500), Decision::Accept);
        for _ in 0..20 {
            q.on_accept(LOCAL, "PLAINTEXT", 1_500);
        }
        let Decision::WaitUntil { until_ms, .. } = q.on_accept(LOCAL, "PLAINTEXT", 1_500) else {
            panic!("throttled");
        };
        assert_eq!(until_ms, 2_500, "bounded to quota.window.size.seconds");
    }

    #[test]
    fn a_listener_rate_throttles_its_listener() {
        let mut q = quotas(Limits {
            listeners: HashMap::from([(
                "PLAINTEXT".to_string(),
                ListenerLimits {
                    max_connection_creation_rate: 1,
                    ..ListenerLimits::default()
                },
            )]),
            ..Limits::default()
        });
        for _ in 0..10 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        }
        assert!(matches!(
            q.on_accept(LOCAL, "PLAINTEXT", 0),
            Decision::WaitUntil {
                limit: Limit::MaxConnectionCreationRate,
                ..
            }
        ));
    }

    fn ip_quota(default: Option<i64>, by_ip: &[(IpAddr, i64)]) -> Limits {
        Limits {
            ip_rates: IpRateQuotas {
                default,
                by_ip: by_ip.iter().copied().collect(),
            },
            ..Limits::default()
        }
    }

    #[test]
    fn over_its_ip_quota_a_connection_is_closed_after_the_throttle_time_and_not_counted() {
        // 1 per second over 10 windows: 10 at once are within it, the 11th is 10% over: 1 s
        // (also the bound).
        let mut q = quotas(ip_quota(None, &[(LOCAL, 1)]));
        for _ in 0..10 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        }
        assert_eq!(
            q.on_accept(LOCAL, "PLAINTEXT", 0),
            Decision::AcceptThenCloseAfter { throttle_ms: 1_000 }
        );
        assert_eq!(q.open_from(&LOCAL), 10);
        // Taken back from the IP's rate: still throttled the same, not more.
        assert_eq!(
            q.on_accept(LOCAL, "PLAINTEXT", 0),
            Decision::AcceptThenCloseAfter { throttle_ms: 1_000 }
        );
        // Another address has no quota.
        assert_eq!(q.on_accept(OTHER, "PLAINTEXT", 0), Decision::Accept);
        // Once the burst's window is forgotten the IP may connect again.
        assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 11_000), Decision::Accept);
    }

    #[test]
    fn an_ips_own_quota_wins_over_the_default_ip_entity() {
        let mut q = quotas(ip_quota(Some(1), &[(LOCAL, 100)]));
        for _ in 0..50 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        }
        for _ in 0..10 {
            assert_eq!(q.on_accept(OTHER, "PLAINTEXT", 0), Decision::Accept);
        }
        assert!(matches!(
            q.on_accept(OTHER, "PLAINTEXT", 0),
            Decision::AcceptThenCloseAfter { .. }
        ));
        // Int.MaxValue is no quota, and a quota of 0 refuses every connection for a window.
        let mut q = quotas(ip_quota(Some(0), &[(LOCAL, UNLIMITED)]));
        assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        assert_eq!(
            q.on_accept(OTHER, "PLAINTEXT", 0),
            Decision::AcceptThenCloseAfter { throttle_ms: 1_000 }
        );
    }

    #[test]
    fn an_ip_throttled_connection_is_taken_back_from_the_broker_rate() {
        let mut limits = ip_quota(None, &[(OTHER, 1)]);
        limits.max_connection_creation_rate = 2;
        let mut q = quotas(limits);
        for _ in 0..10 {
            q.on_accept(OTHER, "PLAINTEXT", 0);
        }
        for _ in 0..100 {
            assert!(matches!(
                q.on_accept(OTHER, "PLAINTEXT", 0),
                Decision::AcceptThenCloseAfter { .. }
            ));
        }
        // 10 recorded broker-wide, not 110: ten more fit under 2/s over 10 s.
        for _ in 0..10 {
            assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
        }
    }

    #[test]
    fn new_limits_apply_to_the_next_connection() {
        let mut q = quotas(Limits {
            max_connections_per_ip: 1,
            ..Limits::default()
        });
        q.on_accept(LOCAL, "PLAINTEXT", 0);
        assert!(matches!(
            q.on_accept(LOCAL, "PLAINTEXT", 0),
            Decision::Reject { .. }
        ));
        q.set_limits(Limits {
            max_connections_per_ip: 2,
            ..Limits::default()
        });
        assert_eq!(q.on_accept(LOCAL, "PLAINTEXT", 0), Decision::Accept);
    }

    #[test]
    fn idle_ip_rates_are_forgotten_once_many_are_kept() {
        let mut q = quotas(ip_quota(Some(1_000), &[]));
        for i in 0..IP_RATES_SWEEP_AT as u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            q.on_accept(ip, "PLAINTEXT", 0);
            q.on_close(ip, "PLAINTEXT");
        }
        assert_eq!(q.ip_rates.len(), IP_RATES_SWEEP_AT);
        q.on_accept(LOCAL, "PLAINTEXT", 20_000);
        assert_eq!(q.ip_rates.len(), 1);
    }

    #[test]
    fn overrides_parse_as_kafka_reads_them() {
        assert_eq!(parse_overrides("").unwrap(), vec![]);
        assert_eq!(
            parse_overrides("127.0.0.1:5, hostName:100,::1:7").unwrap(),
            vec![
                ("127.0.0.1".to_string(), 5),
                ("hostName".to_string(), 100),
                ("::1".to_string(), 7)
            ]
        );
        let e = parse_overrides("127.0.0.1:many").unwrap_err();
        assert!(e.contains("For input string: \"many\""), "{e}");
        assert!(parse_overrides("127.0.0.1").is_err());
        assert!(parse_overrides(":5").is_err());
    }
}
