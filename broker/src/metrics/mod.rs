//! The broker's Prometheus metrics, served on `metrics.listener` at `/metrics` (see [`http`]).
//!
//! Two kinds:
//! - Counted on the request path: requests per API and version, errors per API and error
//!   code, latency per API, bytes and records in and out per topic. Handles are made once
//!   (per API and version at start, per topic on first use) and cached, so a request costs a
//!   table lookup and a few atomic increments, with no allocation for labels.
//! - Sampled at scrape time from the broker's state: connections, partitions per state,
//!   log start/end offsets and high watermark per partition, under-replicated partitions,
//!   consumer group states, and each group's committed offset and lag per partition; and
//!   counters kept elsewhere (the leader elections the controller thread decided).
//!   Sampling means deleted topics and partitions disappear from the output by themselves.
//!   Client quotas per quota entity are sampled too ([`client_quotas`]).
//!
//! Names follow Prometheus conventions with a `samsa_` prefix; the exposition is OpenMetrics
//! text (counters end in `_total`), which Prometheus scrapes natively.

pub mod client_quotas;
pub mod errors;
pub mod http;
pub mod sample;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ResponseKind};
use parking_lot::RwLock;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    api: String,
    version: i16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    api: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    api: String,
    version: i16,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    topic: String,
    partition: i32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupPartitionLabels {
    group: String,
    topic: String,
    partition: i32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TypeStateLabels {
    r#type: &'static str,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AuthLabels {
    listener: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectionLimitLabels {
    listener: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ElectionLabels {
    election_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReplicaLabels {
    topic: String,
    partition: i32,
    replica: i32,
}

/// Cached handles of one API, made on first use so that APIs nobody calls add no series.
struct ApiHandles {
    name: String,
    min_version: i16,
    /// Indexed by `version - min_version`.
    requests: Vec<OnceLock<Counter>>,
    latency: OnceLock<Histogram>,
}

/// Cached handles of one topic.
struct TopicHandles {
    bytes_in: Counter,
    records_in: Counter,
    bytes_out: Counter,
    records_out: Counter,
}

/// Highest API key the handle table has room for (Kafka's keys are below 100).
const API_KEYS_MAX: usize = 128;

/// Latency buckets: 50 µs to about 13 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 19))
}

pub struct Metrics {
    registry: Registry,
    apis: Vec<Option<ApiHandles>>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<ApiLabels, Histogram, fn() -> Histogram>,
    errors: Family<ErrorLabels, Counter>,
    topics: RwLock<HashMap<String, TopicHandles>>,
    bytes_in: Family<TopicLabels, Counter>,
    records_in: Family<TopicLabels, Counter>,
    bytes_out: Family<TopicLabels, Counter>,
    records_out: Family<TopicLabels, Counter>,
    /// ISR changes this broker's leaders asked for and the controller made, by kind.
    isr_changes: Family<StateLabels, Counter>,
    /// Consumer fetches of a partition this leader answered with another replica to read from.
    preferred_read_replicas: Counter,
    /// SASL authentications and TLS handshakes by listener and outcome.
    authentications: Family<AuthLabels, Counter>,
    /// New connections closed at once by a connection limit, by listener and limit.
    connections_rejected: Family<ConnectionLimitLabels, Counter>,
    /// New connections held or closed after a delay by a connection limit or quota.
    connections_throttled: Family<ConnectionLimitLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("samsa");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<ApiLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        let mut apis: Vec<Option<ApiHandles>> = (0..API_KEYS_MAX).map(|_| None).collect();
        for a in samsa_protocol::SUPPORTED_APIS {
            let name = format!("{:?}", a.key);
            let handles = ApiHandles {
                min_version: a.min_version,
                requests: (a.min_version..=a.max_version)
                    .map(|_| OnceLock::new())
                    .collect(),
                latency: OnceLock::new(),
                name,
            };
            if let Some(slot) = apis.get_mut(a.key as i16 as usize) {
                *slot = Some(handles);
            }
        }
        registry.register(
            "requests",
            "Requests handled, per API and version",
            requests.clone(),
        );
        registry.register(
            "request_errors",
            "Error codes in responses (per partition or resource where the API has them), per API, version and Kafka error name",
            errors.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from a decoded request to its encoded response, per API",
            latency.clone(),
        );
        let bytes_in = Family::<TopicLabels, Counter>::default();
        let records_in = Family::<TopicLabels, Counter>::default();
        let bytes_out = Family::<TopicLabels, Counter>::default();
        let records_out = Family::<TopicLabels, Counter>::default();
        registry.register(
            "topic_bytes_in",
            "Record batch bytes appended by producers, per topic",
            bytes_in.clone(),
        );
        registry.register(
            "topic_records_in",
            "Records appended by producers, per topic",
            records_in.clone(),
        );
        registry.register(
            "topic_bytes_out",
            "Record batch bytes returned to fetchers, per topic",
            bytes_out.clone(),
        );
        registry.register(
            "topic_records_out",
            "Records in batches returned to fetchers, per topic",
            records_out.clone(),
        );
        let isr_changes = Family::<StateLabels, Counter>::default();
        registry.register(
            "isr_changes",
            "ISR shrinks and expansions of partitions led here that the controller made (Kafka's IsrShrinksPerSec, IsrExpandsPerSec)",
            isr_changes.clone(),
        );
        let preferred_read_replicas = Counter::default();
        registry.register(
            "preferred_read_replicas",
            "Partitions of consumer fetches that this leader answered with another replica to read from (KIP-392, replica.selector.class)",
            preferred_read_replicas.clone(),
        );
        let authentications = Family::<AuthLabels, Counter>::default();
        registry.register(
            "authentications",
            "SASL authentications (result success, failure or reauthenticated) and TLS handshakes that failed (tls_failure), by listener (Kafka's successful-authentication-total, failed-authentication-total)",
            authentications.clone(),
        );
        let connections_rejected = Family::<ConnectionLimitLabels, Counter>::default();
        registry.register(
            "connections_rejected",
            "New connections closed at once, by listener and the limit they met (max_connections_per_ip: max.connections.per.ip or its override)",
            connections_rejected.clone(),
        );
        let connections_throttled = Family::<ConnectionLimitLabels, Counter>::default();
        registry.register(
            "connections_throttled",
            "New connections held before being served (max_connections, max_connection_creation_rate: the broker's or the listener's) or closed unserved after the throttle time (connection_creation_rate: the IP's quota, KIP-612), by listener and limit",
            connections_throttled.clone(),
        );
        Metrics {
            registry,
            apis,
            requests,
            latency,
            errors,
            topics: RwLock::new(HashMap::new()),
            bytes_in,
            records_in,
            bytes_out,
            records_out,
            isr_changes,
            preferred_read_replicas,
            authentications,
            connections_rejected,
            connections_throttled,
        }
    }

    /// A new connection on `listener` was closed at once by the limit `reason`.
    pub fn connection_rejected(&self, listener: &str, reason: &'static str) {
        self.connections_rejected
            .get_or_create(&ConnectionLimitLabels {
                listener: listener.to_string(),
                reason,
            })
            .inc();
    }

    /// A new connection on `listener` was held, or closed after a delay, by `reason`.
    pub fn connection_throttled(&self, listener: &str, reason: &'static str) {
        self.connections_throttled
            .get_or_create(&ConnectionLimitLabels {
                listener: listener.to_string(),
                reason,
            })
            .inc();
    }

    /// One authentication outcome on `listener`: `success`, `reauthenticated`, `failure` (SASL)
    /// or `tls_failure` (a TLS handshake that failed).
    pub fn authentication(&self, listener: &str, result: &'static str) {
        self.authentications
            .get_or_create(&AuthLabels {
                listener: listener.to_string(),
                result,
            })
            .inc();
    }

    /// A consumer's fetch of a partition led here was answered with another replica to read
    /// from.
    pub fn preferred_read_replica_named(&self) {
        self.preferred_read_replicas.inc();
    }

    /// The controller shrank (`expanded` false) or expanded an ISR this broker asked it to.
    pub fn isr_changed(&self, expanded: bool) {
        let state = if expanded { "expand" } else { "shrink" };
        self.isr_changes.get_or_create(&StateLabels { state }).inc();
    }

    /// Counts one handled request: its API and version, its latency and the error codes in
    /// its response (`None` for an acks=0 produce, which gets no response).
    pub fn request(
        &self,
        key: ApiKey,
        version: i16,
        elapsed: Duration,
        response: Option<&ResponseKind>,
    ) {
        let Some(Some(api)) = self.apis.get(key as i16 as usize) else {
            return;
        };
        if let Some(c) = usize::try_from(version - api.min_version)
            .ok()
            .and_then(|i| api.requests.get(i))
        {
            c.get_or_init(|| {
                self.requests
                    .get_or_create(&RequestLabels {
                        api: api.name.clone(),
                        version,
                    })
                    .clone()
            })
            .inc();
        }
        api.latency
            .get_or_init(|| {
                self.latency
                    .get_or_create(&ApiLabels {
                        api: api.name.clone(),
                    })
                    .clone()
            })
            .observe(elapsed.as_secs_f64());
        if let Some(response) = response {
            errors::for_each_error(response, |code| {
                // Errors are the rare path: the label allocation is acceptable here.
                self.errors
                    .get_or_create(&ErrorLabels {
                        api: api.name.clone(),
                        version,
                        error: crate::util::error_name(code),
                    })
                    .inc();
            });
        }
    }

    /// Runs `f` on the topic's cached handles (made on first use), under the read lock so the
    /// common case clones nothing.
    fn with_topic(&self, topic: &str, f: impl FnOnce(&TopicHandles)) {
        if let Some(h) = self.topics.read().get(topic) {
            return f(h);
        }
        let labels = TopicLabels {
            topic: topic.to_string(),
        };
        let h = TopicHandles {
            bytes_in: self.bytes_in.get_or_create(&labels).clone(),
            records_in: self.records_in.get_or_create(&labels).clone(),
            bytes_out: self.bytes_out.get_or_create(&labels).clone(),
            records_out: self.records_out.get_or_create(&labels).clone(),
        };
        f(&h);
        self.topics.write().insert(topic.to_string(), h);
    }

    /// A producer's batches were appended to `topic`.
    pub fn produced(&self, topic: &str, bytes: usize, records: u64) {
        self.with_topic(topic, |h| {
            h.bytes_in.inc_by(bytes as u64);
            h.records_in.inc_by(records);
        });
    }

    /// Batches of `topic` went out in a fetch response. Counts records from the batch
    /// headers (one read per batch, never per record).
    pub fn fetched(&self, topic: &str, batches: &[u8]) {
        if batches.is_empty() {
            return;
        }
        let records: u64 = samsa_storage::batch::batches(batches)
            .map_while(Result::ok)
            .map(|b| b.header().record_count.max(0) as u64)
            .sum();
        self.with_topic(topic, |h| {
            h.bytes_out.inc_by(batches.len() as u64);
            h.records_out.inc_by(records);
        });
    }

    /// `records` records in `bytes` bytes of `topic` went out as a segment range, unread (the
    /// count is the batches' offset span: exact unless compaction left gaps).
    pub fn fetched_range(&self, topic: &str, bytes: usize, records: u64) {
        if bytes == 0 {
            return;
        }
        self.with_topic(topic, |h| {
            h.bytes_out.inc_by(bytes as u64);
            h.records_out.inc_by(records);
        });
    }

    /// Drops the per-topic series of topics that no longer exist.
    fn forget_deleted_topics(&self, exists: impl Fn(&str) -> bool) {
        let gone: Vec<String> = self
            .topics
            .read()
            .keys()
            .filter(|t| !exists(t))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        let mut topics = self.topics.write();
        for t in gone {
            topics.remove(&t);
            let labels = TopicLabels { topic: t };
            for f in [
                &self.bytes_in,
                &self.records_in,
                &self.bytes_out,
                &self.records_out,
            ] {
                f.remove(&labels);
            }
        }
    }

    /// The whole exposition: counted metrics (without the topics `exists` denies) plus
    /// `sampled`, the gauges read from the broker's state now (see [`sample`]).
    pub fn render(&self, exists: impl Fn(&str) -> bool, sampled: &Registry) -> String {
        self.forget_deleted_topics(exists);
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail.
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_registry(&mut out, sampled);
        let _ = encode_eof(&mut out);
        out
    }
}
