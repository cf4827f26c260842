//! Client quotas (KIP-13, KIP-55, KIP-124): which quota a request's user and client id fall
//! under, and the per-broker rates that decide how long it is throttled.
//!
//! A quota of one kind (`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`,
//! `controller_mutation_rate`) comes from the most specific entity of the metadata image that
//! sets that key, in Kafka's order: user and client id; user and default client id; user;
//! default user and client id; default user and default client id; default user; client id;
//! default client id. Its rate is kept per *metric entity*: the user and client id as far as
//! the matching entity names them (a user quota is shared by every client id of the user, a
//! client-id quota by every user of the client id, a default is per user or client id, as
//! Kafka's `DefaultQuotaCallback.quotaMetricTags`). Rates are per broker, as in Kafka.
//!
//! [`resolve`] is a pure function of the image's quotas; [`ClientQuotas`] keeps the rates
//! behind one lock, touched only by clients that have a quota (no quota in the image: nothing
//! is recorded, as Kafka records nothing while `quotaTypesEnabled` is 0).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use samsa_cluster::controller::{
    CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, ENTITY_CLIENT_ID, ENTITY_USER,
    PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};
use samsa_cluster::metadata::image::{ClientQuotaEntity, QuotaValue};

use super::rate::{Rate, TokenBucket, Windows};

/// The image's client quotas.
pub type QuotaMap = BTreeMap<ClientQuotaEntity, BTreeMap<String, QuotaValue>>;

/// The kinds of client quota, each measured on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    Produce,
    Fetch,
    Request,
    ControllerMutation,
}

impl QuotaKind {
    pub const ALL: [QuotaKind; 4] = [
        QuotaKind::Produce,
        QuotaKind::Fetch,
        QuotaKind::Request,
        QuotaKind::ControllerMutation,
    ];

    /// The quota key that sets it.
    pub fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => PRODUCER_BYTE_RATE,
            QuotaKind::Fetch => CONSUMER_BYTE_RATE,
            QuotaKind::Request => REQUEST_PERCENTAGE,
            QuotaKind::ControllerMutation => CONTROLLER_MUTATION_RATE,
        }
    }

    /// Kafka's quota type name, as its metrics group them.
    pub fn name(self) -> &'static str {
        match self {
            QuotaKind::Produce => "Produce",
            QuotaKind::Fetch => "Fetch",
            QuotaKind::Request => "Request",
            QuotaKind::ControllerMutation => "ControllerMutation",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The quota a client falls under for one kind: its bound and the metric entity its rate is
/// kept for.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub bound: f64,
    pub user: Arc<str>,
    pub client_id: Arc<str>,
}

/// The quota of `kind` for a request of `user` (the principal's name, `ANONYMOUS` without
/// authentication) and `client_id`, or `None` when no entity sets it.
pub fn resolve(
    quotas: &QuotaMap,
    kind: QuotaKind,
    user: &str,
    client_id: &str,
) -> Option<Resolved> {
    if quotas.is_empty() {
        return None;
    }
    let key = kind.key();
    let entity = |u: Option<Option<&str>>, c: Option<Option<&str>>| {
        let mut e = ClientQuotaEntity::new();
        if let Some(u) = u {
            e.insert(ENTITY_USER.to_string(), u.map(str::to_string));
        }
        if let Some(c) = c {
            e.insert(ENTITY_CLIENT_ID.to_string(), c.map(str::to_string));
        }
        e
    };
    // (entity, whether the metric entity names the user, and the client id).
    let levels = [
        (entity(Some(Some(user)), Some(Some(client_id))), true, true),
        (entity(Some(Some(user)), Some(None)), true, true),
        (entity(Some(Some(user)), None), true, false),
        (entity(Some(None), Some(Some(client_id))), true, true),
        (entity(Some(None), Some(None)), true, true),
        (entity(Some(None), None), true, false),
        (entity(None, Some(Some(client_id))), false, true),
        (entity(None, Some(None)), false, true),
    ];
    levels.into_iter().find_map(|(e, by_user, by_client)| {
        let bound = quotas.get(&e)?.get(key)?.0;
        Some(Resolved {
            bound,
            user: if by_user { user.into() } else { "".into() },
            client_id: if by_client {
                client_id.into()
            } else {
                "".into()
            },
        })
    })
}

/// What a connection resolved, kept while the image's quotas and its client id stay the same
/// (resolving builds a few map keys; a connection's requests mostly share both).
#[derive(Debug, Clone)]
pub struct Resolution {
    quotas: Arc<QuotaMap>,
    user: String,
    client_id: String,
    pub kinds: [Option<Resolved>; 4],
}

impl Resolution {
    /// The resolution for `user` and `client_id` under `quotas`, reusing `previous` when it was
    /// made for the same.
    pub fn of(
        previous: Option<Resolution>,
        quotas: &Arc<QuotaMap>,
        user: &str,
        client_id: &str,
    ) -> Resolution {
        if let Some(p) = previous {
            if Arc::ptr_eq(&p.quotas, quotas) && p.user == user && p.client_id == client_id {
                return p;
            }
        }
        Resolution {
            quotas: quotas.clone(),
            user: user.to_string(),
            client_id: client_id.to_string(),
            kinds: QuotaKind::ALL.map(|k| resolve(quotas, k, user, client_id)),
        }
    }

    pub fn get(&self, kind: QuotaKind) -> Option<&Resolved> {
        self.kinds[kind.index()].as_ref()
    }
}

#[derive(Debug, Default)]
struct Sensor {
    rate: Rate,
    bucket: TokenBucket,
    throttled_ms: u64,
    throttles: u64,
    last_ms: i64,
}

type SensorKey = (QuotaKind, Arc<str>, Arc<str>);

/// The rates of every metric entity that has a quota, per broker.
pub struct ClientQuotas {
    /// Whether the image has any client quota (read first on every request: without one
    /// nothing else here is touched).
    enabled: AtomicBool,
    /// The image's quotas, as last published.
    quotas: Mutex<Arc<QuotaMap>>,
    windows: Windows,
    controller_windows: Windows,
    sensors: Mutex<HashMap<SensorKey, Sensor>>,
    /// Throttle time given, per kind, in ms (for the metrics).
    throttle_ms_total: [AtomicU64; 4],
}

/// A metric entity's figures, for the metrics endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorSample {
    pub kind: QuotaKind,
    pub user: Arc<str>,
    pub client_id: Arc<str>,
    pub rate: f64,
    pub throttle_ms_total: u64,
    pub throttles: u64,
}

/// How long an idle entity's rate is kept (Kafka expires quota sensors after an hour).
const IDLE_EXPIRY_MS: i64 = 3_600_000;
/// Past this many entities a new one first makes the idle ones go (a scrape does it too), so
/// that a default quota over many short-lived client ids does not grow the map while nobody
/// scrapes.
const SENSORS_PURGE_AT: usize = 10_000;

/// The entity's sensor, made if new, marked used at `now_ms`.
fn sensor(sensors: &mut HashMap<SensorKey, Sensor>, key: SensorKey, now_ms: i64) -> &mut Sensor {
    if sensors.len() >= SENSORS_PURGE_AT && !sensors.contains_key(&key) {
        sensors.retain(|_, s| now_ms - s.last_ms < IDLE_EXPIRY_MS);
    }
    let s = sensors.entry(key).or_default();
    s.last_ms = now_ms;
    s
}

impl ClientQuotas {
    /// `windows`: `quota.window.num` and `quota.window.size.seconds`; `controller_windows`:
    /// `controller.quota.window.*`.
    pub fn new(windows: Windows, controller_windows: Windows) -> ClientQuotas {
        ClientQuotas {
            enabled: AtomicBool::new(false),
            quotas: Mutex::new(Arc::default()),
            windows,
            controller_windows,
            sensors: Mutex::new(HashMap::new()),
            throttle_ms_total: Default::default(),
        }
    }

    pub fn windows(&self) -> Windows {
        self.windows
    }

    /// Takes the quotas of a published image.
    pub fn follow(&self, quotas: &Arc<QuotaMap>) {
        let mut current = self.quotas.lock();
        if !Arc::ptr_eq(&current, quotas) {
            *current = quotas.clone();
            self.enabled.store(!quotas.is_empty(), Ordering::Release);
        }
    }

    /// Whether the image has any client quota.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// The quotas in force, `None` when there are none (the common case, one atomic load).
    pub fn current(&self) -> Option<Arc<QuotaMap>> {
        if !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        Some(self.quotas.lock().clone())
    }

    /// Records `value` for the client's entity and answers the throttle time in ms (0 when
    /// within its quota): Kafka's `recordAndGetThrottleTimeMs`.
    pub fn record(&self, kind: QuotaKind, r: &Resolved, value: f64, now_ms: i64) -> i64 {
        let mut sensors = self.sensors.lock();
        let s = sensor(
            &mut sensors,
            (kind, r.user.clone(), r.client_id.clone()),
            now_ms,
        );
        let throttle_ms = s
            .rate
            .record_and_throttle_ms(self.windows, r.bound, value, now_ms);
        // Kafka bounds the request quota's throttle to one window
        // (`ClientRequestQuotaManager.throttleTime`); the byte rates' are not bounded.
        if kind == QuotaKind::Request {
            throttle_ms.min(self.windows.window_ms)
        } else {
            throttle_ms
        }
    }

    /// Takes back a value recorded at `now_ms` (a throttled fetch sends nothing).
    pub fn unrecord(&self, kind: QuotaKind, r: &Resolved, value: f64, now_ms: i64) {
        if let Some(s) = self
            .sensors
            .lock()
            .get_mut(&(kind, r.user.clone(), r.client_id.clone()))
        {
            s.rate.record(self.windows, -value, now_ms);
        }
    }

    /// The most a client may take at once under `r` (Kafka's `maxValueInQuotaWindow`).
    pub fn max_in_quota_window(&self, r: &Resolved) -> f64 {
        self.windows.max_in_quota_window(r.bound)
    }

    /// Notes a throttle given (metrics).
    pub fn throttled(&self, kind: QuotaKind, r: &Resolved, throttle_ms: i64) {
        if throttle_ms <= 0 {
            return;
        }
        self.throttle_ms_total[kind.index()].fetch_add(throttle_ms as u64, Ordering::Relaxed);
        if let Some(s) = self
            .sensors
            .lock()
            .get_mut(&(kind, r.user.clone(), r.client_id.clone()))
        {
            s.throttled_ms += throttle_ms as u64;
            s.throttles += 1;
        }
    }

    /// The controller mutation quota (KIP-599) for `r`: the throttle time if its token bucket
    /// is already below zero (then nothing more may be done), else 0.
    pub fn mutation_throttle_ms(&self, r: &Resolved, now_ms: i64) -> i64 {
        self.record_mutations(r, 0.0, now_ms)
    }

    /// Takes `partitions` mutations from `r`'s bucket (it may go below zero) and answers the
    /// throttle time that leaves.
    pub fn record_mutations(&self, r: &Resolved, partitions: f64, now_ms: i64) -> i64 {
        let mut sensors = self.sensors.lock();
        let key = (
            QuotaKind::ControllerMutation,
            r.user.clone(),
            r.client_id.clone(),
        );
        let s = sensor(&mut sensors, key, now_ms);
        s.bucket
            .record(self.controller_windows, r.bound, partitions, now_ms);
        s.bucket
            .throttle_ms(self.controller_windows, r.bound, now_ms)
    }

    /// Throttle time given per kind since start, in ms.
    pub fn throttle_ms_totals(&self) -> [(QuotaKind, u64); 4] {
        QuotaKind::ALL.map(|k| (k, self.throttle_ms_total[k.index()].load(Ordering::Relaxed)))
    }

    /// Every metric entity's rate now; forgets those idle for an hour.
    pub fn samples(&self, now_ms: i64) -> Vec<SensorSample> {
        let mut sensors = self.sensors.lock();
        sensors.retain(|_, s| now_ms - s.last_ms < IDLE_EXPIRY_MS);
        let mut out: Vec<SensorSample> = sensors
            .iter_mut()
            .map(|((kind, user, client_id), s)| SensorSample {
                kind: *kind,
                user: user.clone(),
                client_id: client_id.clone(),
                rate: if *kind == QuotaKind::ControllerMutation {
                    0.0
                } else {
                    s.rate.measure(self.windows, now_ms)
                },
                throttle_ms_total: s.throttled_ms,
                throttles: s.throttles,
            })
            .collect();
        out.sort_by(|a, b| (a.kind, &a.user, &a.client_id).cmp(&(b.kind, &b.user, &b.client_id)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entity's parts, a quota key and its value.
    type Entry<'a> = (&'a [(&'a str, Option<&'a str>)], &'a str, f64);

    fn quotas(entries: &[Entry<'_>]) -> QuotaMap {
        let mut m = QuotaMap::new();
        for (parts, key, v) in entries {
            let e: ClientQuotaEntity = parts
                .iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect();
            m.entry(e)
                .or_default()
                .insert(key.to_string(), QuotaValue(*v));
        }
        m
    }

    fn bound(
        q: &QuotaMap,
        kind: QuotaKind,
        user: &str,
        client: &str,
    ) -> Option<(f64, String, String)> {
        resolve(q, kind, user, client)
            .map(|r| (r.bound, r.user.to_string(), r.client_id.to_string()))
    }

    #[test]
    fn the_most_specific_entity_setting_the_key_wins_in_kafkas_order() {
        let p = PRODUCER_BYTE_RATE;
        let all: Vec<Entry<'_>> = vec![
            (&[("user", Some("u")), ("client-id", Some("c"))], p, 1.0),
            (&[("user", Some("u")), ("client-id", None)], p, 2.0),
            (&[("user", Some("u"))], p, 3.0),
            (&[("user", None), ("client-id", Some("c"))], p, 4.0),
            (&[("user", None), ("client-id", None)], p, 5.0),
            (&[("user", None)], p, 6.0),
            (&[("client-id", Some("c"))], p, 7.0),
            (&[("client-id", None)], p, 8.0),
        ];
        // Take the levels away one by one, most specific first: each time the next applies.
        for i in 0..all.len() {
            let q = quotas(&all[i..]);
            let got = bound(&q, QuotaKind::Produce, "u", "c").unwrap();
            assert_eq!(got.0, (i + 1) as f64, "level {i}");
        }
        // The metric entity: who shares the rate.
        let q = quotas(&all[2..3]);
        assert_eq!(
            bound(&q, QuotaKind::Produce, "u", "c").unwrap(),
            (3.0, "u".into(), "".into())
        );
        let q = quotas(&all[6..]);
        assert_eq!(
            bound(&q, QuotaKind::Produce, "u", "c").unwrap(),
            (7.0, "".into(), "c".into())
        );
        assert_eq!(
            bound(&q, QuotaKind::Produce, "v", "d").unwrap(),
            (8.0, "".into(), "d".into())
        );
        let q = quotas(&all[4..5]);
        assert_eq!(
            bound(&q, QuotaKind::Produce, "v", "d").unwrap(),
            (5.0, "v".into(), "d".into())
        );
    }

    #[test]
    fn each_kind_is_resolved_on_its_own_key() {
        let q = quotas(&[
            (&[("user", Some("u"))], PRODUCER_BYTE_RATE, 100.0),
            (&[("client-id", None)], CONSUMER_BYTE_RATE, 200.0),
        ]);
        assert_eq!(bound(&q, QuotaKind::Produce, "u", "c").unwrap().0, 100.0);
        assert_eq!(bound(&q, QuotaKind::Fetch, "u", "c").unwrap().0, 200.0);
        assert_eq!(bound(&q, QuotaKind::Request, "u", "c"), None);
        assert_eq!(bound(&q, QuotaKind::Produce, "other", "c"), None);
        assert_eq!(bound(&QuotaMap::new(), QuotaKind::Produce, "u", "c"), None);
    }

    #[test]
    fn a_resolution_is_reused_only_for_the_same_quotas_and_client() {
        let q = Arc::new(quotas(&[(&[("user", None)], PRODUCER_BYTE_RATE, 1.0)]));
        let r = Resolution::of(None, &q, "u", "c");
        assert!(r.get(QuotaKind::Produce).is_some());
        let same = Resolution::of(Some(r.clone()), &q, "u", "c");
        assert!(Arc::ptr_eq(&same.quotas, &q));
        let q2 = Arc::new(QuotaMap::new());
        assert!(Resolution::of(Some(r), &q2, "u", "c")
            .get(QuotaKind::Produce)
            .is_none());
    }

    #[test]
    fn clients_sharing_a_metric_entity_share_its_rate() {
        let q = quotas(&[(&[("user", Some("u"))], PRODUCER_BYTE_RATE, 1_000.0)]);
        let cq = ClientQuotas::new(Windows::KAFKA_DEFAULT, Windows::KAFKA_DEFAULT);
        let a = resolve(&q, QuotaKind::Produce, "u", "a").unwrap();
        let b = resolve(&q, QuotaKind::Produce, "u", "b").unwrap();
        assert_eq!(cq.record(QuotaKind::Produce, &a, 9_000.0, 0), 0);
        // 10,000 + 5,000 over 10 s: 1,500/s, half again over the bound: 5 s.
        assert_eq!(cq.record(QuotaKind::Produce, &b, 6_000.0, 0), 5_000);
        cq.throttled(QuotaKind::Produce, &b, 5_000);
        let s = cq.samples(0);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].throttles, s[0].throttle_ms_total), (1, 5_000));
        assert_eq!(
            cq.samples(IDLE_EXPIRY_MS).len(),
            0,
            "idle entities are forgotten"
        );
    }

    #[test]
    fn the_request_quota_throttle_is_bounded_to_one_window_and_byte_rates_are_not() {
        let q = quotas(&[
            (&[("user", None)], REQUEST_PERCENTAGE, 1.0),
            (&[("user", None)], PRODUCER_BYTE_RATE, 1.0),
        ]);
        let cq = ClientQuotas::new(Windows::KAFKA_DEFAULT, Windows::KAFKA_DEFAULT);
        let r = resolve(&q, QuotaKind::Request, "u", "c").unwrap();
        assert_eq!(cq.record(QuotaKind::Request, &r, 1_000.0, 0), 1_000);
        let p = resolve(&q, QuotaKind::Produce, "u", "c").unwrap();
        assert!(cq.record(QuotaKind::Produce, &p, 1_000.0, 0) > 1_000);
    }

    #[test]
    fn the_mutation_bucket_refuses_only_once_below_zero() {
        let q = quotas(&[(&[("user", None)], CONTROLLER_MUTATION_RATE, 2.0)]);
        let cq = ClientQuotas::new(Windows::KAFKA_DEFAULT, Windows::KAFKA_DEFAULT);
        let r = resolve(&q, QuotaKind::ControllerMutation, "u", "c").unwrap();
        // Burst 22: a first request of 30 partitions is taken whole, and leaves 4 s to wait.
        assert_eq!(cq.mutation_throttle_ms(&r, 0), 0);
        assert_eq!(cq.record_mutations(&r, 30.0, 0), 4_000);
        assert_eq!(cq.mutation_throttle_ms(&r, 1_000), 3_000);
        assert_eq!(cq.mutation_throttle_ms(&r, 4_000), 0);
    }
}
