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
//!
//! Names follow Prometheus conventions with a `samsa_` prefix; the exposition is OpenMetrics
//! text (counters end in `_total`), which Prometheus scrapes natively.

pub mod errors;
pub mod http;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ResponseKind};
use parking_lot::RwLock;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::server::Broker;

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
struct AuthLabels {
    listener: String,
    result: &'static str,
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
        }
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
    fn forget_deleted_topics(&self, broker: &Broker) {
        let gone: Vec<String> = self
            .topics
            .read()
            .keys()
            .filter(|t| broker.topics.get(t).is_none())
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

    /// The whole exposition: counted metrics plus a sample of the broker's state now.
    pub fn render(&self, broker: &Broker) -> String {
        self.forget_deleted_topics(broker);
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail.
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_registry(&mut out, &sample(broker));
        let _ = encode_eof(&mut out);
        out
    }
}

/// A registry of gauges read from the broker's state at this moment.
fn sample(broker: &Broker) -> Registry {
    let mut r = Registry::with_prefix("samsa");
    let connections = Gauge::<i64>::default();
    connections.set(
        broker
            .connections
            .load(std::sync::atomic::Ordering::Relaxed) as i64,
    );
    r.register("connections", "Open client connections", connections);
    let allocations = Counter::<u64>::default();
    allocations.inc_by(crate::alloc_count::allocations());
    r.register(
        "heap_allocations",
        "Heap allocations made by the broker process (counted by its allocator, reported in \
         batches of 64 per thread)",
        allocations,
    );

    let log_end = Family::<PartitionLabels, Gauge>::default();
    let log_start = Family::<PartitionLabels, Gauge>::default();
    let high_watermark = Family::<PartitionLabels, Gauge>::default();
    let in_sync = Family::<PartitionLabels, Gauge>::default();
    let follower_lag = Family::<ReplicaLabels, Gauge>::default();
    let (mut leading, mut following, mut offline, mut under_replicated) = (0i64, 0i64, 0i64, 0i64);
    // metrics.partition.level=topic: the same figures summed per topic (a scrape then grows
    // with topics, not partitions).
    let per_topic = broker.config.get("metrics.partition.level").as_deref() == Some("topic");
    let topic_sums = TopicSums::default();
    for topic in broker.topics.all() {
        let topic_labels = TopicLabels {
            topic: topic.name.clone(),
        };
        let mut sums = [0i64; 5];
        for p in &topic.partitions {
            let (leo, start, hw) = (p.log_end_offset(), p.log_start_offset(), p.high_watermark());
            let labels = PartitionLabels {
                topic: topic.name.clone(),
                partition: p.tp.partition,
            };
            p.with_replica(|r| match r {
                crate::partition::Replica::Leader(l) => {
                    leading += 1;
                    let isr = l.isr().committed();
                    let under = isr.len() < l.replicas().len();
                    under_replicated += i64::from(under);
                    sums[3] += i64::from(under);
                    if !per_topic {
                        in_sync.get_or_create(&labels).set(isr.len() as i64);
                    }
                    for &replica in l.replicas() {
                        if let Some(f) = l.follower(replica) {
                            let lag = (l.log_end_offset() - f.log_end_offset.max(0)).max(0);
                            sums[4] += lag;
                            if !per_topic {
                                follower_lag
                                    .get_or_create(&ReplicaLabels {
                                        topic: topic.name.clone(),
                                        partition: p.tp.partition,
                                        replica,
                                    })
                                    .set(lag);
                            }
                        }
                    }
                }
                crate::partition::Replica::Follower { leader, .. } if *leader >= 0 => {
                    following += 1
                }
                crate::partition::Replica::Follower { .. } => offline += 1,
            });
            if per_topic {
                sums[0] += leo;
                sums[1] += start;
                sums[2] += hw;
            } else {
                log_end.get_or_create(&labels).set(leo);
                log_start.get_or_create(&labels).set(start);
                high_watermark.get_or_create(&labels).set(hw);
            }
        }
        if per_topic {
            topic_sums.set(&topic_labels, sums);
        }
    }
    if per_topic {
        topic_sums.register(&mut r);
    }
    r.register(
        "partition_log_end_offset",
        "Offset after the last record, per partition",
        log_end,
    );
    r.register(
        "partition_log_start_offset",
        "First offset still in the log, per partition",
        log_start,
    );
    r.register(
        "partition_high_watermark",
        "Offset up to which records are replicated and visible to consumers, per partition",
        high_watermark,
    );
    r.register(
        "partition_in_sync_replicas",
        "Size of the ISR of each partition led by this broker",
        in_sync,
    );
    r.register(
        "follower_lag_offsets",
        "How far each follower of a partition led here is behind the leader's log end",
        follower_lag,
    );
    // "online": led here; "follower": replicated here from another broker's leader;
    // "offline": hosted here with no leader anywhere.
    let states = Family::<StateLabels, Gauge>::default();
    for (state, n) in [
        ("online", leading),
        ("follower", following),
        ("offline", offline),
    ] {
        states.get_or_create(&StateLabels { state }).set(n);
    }
    r.register(
        "partitions",
        "Partitions hosted by this broker, per state",
        states,
    );
    sample_groups(broker, &mut r);
    sample_share_groups(broker, &mut r);
    sample_open_files(&mut r);
    sample_quorum(broker, &mut r);
    sample_fetch_sessions(broker, &mut r);
    let under = Gauge::<i64>::default();
    under.set(under_replicated);
    r.register(
        "under_replicated_partitions",
        "Partitions led here whose ISR is smaller than their replica set",
        under,
    );
    r
}

/// The per-partition figures summed per topic (`metrics.partition.level=topic`).
#[derive(Default)]
struct TopicSums {
    log_end: Family<TopicLabels, Gauge>,
    log_start: Family<TopicLabels, Gauge>,
    high_watermark: Family<TopicLabels, Gauge>,
    under_replicated: Family<TopicLabels, Gauge>,
    follower_lag: Family<TopicLabels, Gauge>,
}

impl TopicSums {
    /// `sums`: log end, log start, high watermark, under-replicated partitions, follower lag.
    fn set(&self, labels: &TopicLabels, sums: [i64; 5]) {
        self.log_end.get_or_create(labels).set(sums[0]);
        self.log_start.get_or_create(labels).set(sums[1]);
        self.high_watermark.get_or_create(labels).set(sums[2]);
        self.under_replicated.get_or_create(labels).set(sums[3]);
        self.follower_lag.get_or_create(labels).set(sums[4]);
    }

    fn register(self, r: &mut Registry) {
        r.register(
            "topic_log_end_offset_sum",
            "Sum over the topic's partitions hosted here of the offset after the last record",
            self.log_end,
        );
        r.register(
            "topic_log_start_offset_sum",
            "Sum over the topic's partitions hosted here of the first offset still in the log",
            self.log_start,
        );
        r.register(
            "topic_high_watermark_sum",
            "Sum over the topic's partitions hosted here of the high watermark",
            self.high_watermark,
        );
        r.register(
            "topic_under_replicated_partitions",
            "Partitions of the topic led here whose ISR is smaller than their replica set",
            self.under_replicated,
        );
        r.register(
            "topic_follower_lag_offsets_sum",
            "Sum over the topic's partitions led here of how far their followers are behind",
            self.follower_lag,
        );
    }
}

/// The process-wide cache of open segment files (`log.open.files.max`).
fn sample_open_files(r: &mut Registry) {
    let stats = samsa_storage::file_cache::FileCache::global().stats();
    let open = Gauge::<i64>::default();
    open.set(stats.open as i64);
    r.register(
        "log_open_files",
        "Segment files the broker holds open now (bounded by log.open.files.max)",
        open,
    );
    let max = Gauge::<i64>::default();
    max.set(stats.capacity as i64);
    r.register(
        "log_open_files_max",
        "The bound on open segment files (log.open.files.max)",
        max,
    );
    let opens = Counter::<u64>::default();
    opens.inc_by(stats.opens);
    r.register(
        "log_file_opens",
        "Segment files opened, first use or reopen after the bound closed them",
        opens,
    );
    let evictions = Counter::<u64>::default();
    evictions.inc_by(stats.evictions);
    r.register(
        "log_file_evictions",
        "Idle segment files closed to stay within log.open.files.max",
        evictions,
    );
}

/// The metadata quorum as this node sees it (Kafka's `raft-metrics`), the leader elections
/// its controller decided, and this broker's standing with the active controller.
fn sample_quorum(broker: &Broker, r: &mut Registry) {
    let status = broker.controller.status();
    let gauge = |v: i64| {
        let g = Gauge::<i64>::default();
        g.set(v);
        g
    };
    r.register(
        "raft_current_leader",
        "The metadata quorum's leader as this node knows it (-1: none)",
        gauge(status.leader_id.map_or(-1, i64::from)),
    );
    r.register(
        "raft_current_epoch",
        "The metadata quorum's epoch as this node knows it",
        gauge(status.epoch as i64),
    );
    r.register(
        "raft_high_watermark",
        "Offset below which the metadata log is committed, as this node knows it",
        gauge(status.high_watermark),
    );
    r.register(
        "metadata_applied_offset",
        "Offset after the last metadata record this node applied to its image",
        gauge(status.applied_offset),
    );
    let states = Family::<StateLabels, Gauge>::default();
    use samsa_cluster::quorum::Role;
    for (role, name) in [
        (Role::Leader, "leader"),
        (Role::Follower, "follower"),
        (Role::Candidate, "candidate"),
        (Role::Prospective, "prospective"),
        (Role::Unattached, "unattached"),
        (Role::Resigned, "resigned"),
    ] {
        states
            .get_or_create(&StateLabels { state: name })
            .set(i64::from(status.role == role));
    }
    r.register(
        "raft_current_state",
        "This node's role in the metadata quorum (1 for the current one)",
        states,
    );
    let elections = Family::<ElectionLabels, Counter>::default();
    let counts = broker.controller.elections();
    for (election_type, n) in [
        ("preferred", &counts.preferred),
        ("unclean", &counts.unclean),
    ] {
        elections
            .get_or_create(&ElectionLabels { election_type })
            .inc_by(n.load(std::sync::atomic::Ordering::Relaxed));
    }
    r.register(
        "leader_elections",
        "Leader elections this node decided as the active controller, per type: preferred \
         (ElectLeaders PREFERRED, auto.leader.rebalance.enable) and unclean, a leader from \
         outside the ISR, which loses the records only the former ISR had (Kafka's \
         kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec)",
        elections,
    );
    let membership = *broker.membership.borrow();
    r.register(
        "broker_fenced",
        "1 while the active controller has this broker fenced (or it is not registered yet)",
        gauge(i64::from(
            membership.fenced || membership.broker_epoch.is_none(),
        )),
    );
}

/// The fetch session cache (KIP-227; Kafka's `NumIncrementalFetchSessions`,
/// `NumIncrementalFetchPartitionsCached` and `IncrementalFetchSessionEvictionsPerSec`).
fn sample_fetch_sessions(broker: &Broker, r: &mut Registry) {
    let (sessions, partitions, evictions) = {
        let cache = broker.fetch_sessions.lock();
        (cache.len(), cache.partitions(), cache.evictions())
    };
    let gauge = |v: usize| {
        let g = Gauge::<i64>::default();
        g.set(v as i64);
        g
    };
    r.register(
        "fetch_sessions",
        "Fetch sessions (KIP-227) cached by this broker",
        gauge(sessions),
    );
    r.register(
        "fetch_session_partitions",
        "Partitions over all cached fetch sessions",
        gauge(partitions),
    );
    let evicted = Counter::<u64>::default();
    evicted.inc_by(evictions);
    r.register(
        "fetch_session_evictions",
        "Fetch sessions evicted to make room for new ones",
        evicted,
    );
}

/// Group states, and per group and partition the committed offset and the lag behind the
/// high watermark: the number Kafka needs an external exporter for. Skipped (for this scrape)
/// while the coordinator is still loading `__consumer_offsets`.
fn sample_groups(broker: &Broker, r: &mut Registry) {
    use crate::group::GroupState;
    let Ok(groups) = broker.groups.list() else {
        return;
    };
    let states = Family::<StateLabels, Gauge>::default();
    for s in [
        GroupState::Empty,
        GroupState::PreparingRebalance,
        GroupState::CompletingRebalance,
        GroupState::Stable,
        GroupState::Dead,
    ] {
        states
            .get_or_create(&StateLabels { state: s.as_str() })
            .set(0);
    }
    let committed = Family::<GroupPartitionLabels, Gauge>::default();
    let lag = Family::<GroupPartitionLabels, Gauge>::default();
    for g in &groups {
        states
            .get_or_create(&StateLabels {
                state: g.state.as_str(),
            })
            .inc();
        let Ok(offsets) = broker.groups.fetch_offsets(&g.group_id, None) else {
            continue;
        };
        for (topic, partitions) in offsets {
            let Some(t) = broker.topics.get(&topic) else {
                continue;
            };
            for (partition, value) in partitions {
                let (Some(value), Some(p)) = (value, t.partition(partition)) else {
                    continue;
                };
                let labels = GroupPartitionLabels {
                    group: g.group_id.clone(),
                    topic: topic.clone(),
                    partition,
                };
                committed.get_or_create(&labels).set(value.offset);
                lag.get_or_create(&labels)
                    .set((p.high_watermark() - value.offset).max(0));
            }
        }
    }
    r.register(
        "consumer_groups",
        "Consumer groups coordinated here, per state",
        states,
    );
    r.register(
        "consumer_group_committed_offset",
        "Committed offset per group and partition",
        committed,
    );
    r.register(
        "consumer_group_lag",
        "High watermark minus committed offset, per group and partition",
        lag,
    );
}

/// Share groups (KIP-932): members per group coordinated here, and per group the records this
/// broker's share-partitions archived and dead-lettered (KIP-1191), with the dead letters
/// that could not be written, and the records acquired (in flight) now.
fn sample_share_groups(broker: &Broker, r: &mut Registry) {
    let members = Family::<GroupLabels, Gauge>::default();
    let archived = Family::<GroupLabels, Counter>::default();
    let dead_lettered = Family::<GroupLabels, Counter>::default();
    let dead_letter_failed = Family::<GroupLabels, Counter>::default();
    let acquired = Family::<GroupLabels, Gauge>::default();
    for group in broker.shares.known_groups() {
        let labels = GroupLabels {
            group: group.clone(),
        };
        if let Some(n) = broker
            .shares
            .with_group(&group, false, |g| g.members().count())
        {
            members.get_or_create(&labels).set(n as i64);
        }
        let c = broker.shares.counters(&group);
        archived.get_or_create(&labels).inc_by(c.archived);
        dead_lettered.get_or_create(&labels).inc_by(c.dead_lettered);
        dead_letter_failed
            .get_or_create(&labels)
            .inc_by(c.dead_letter_failed);
        let in_flight: usize = broker
            .shares
            .partitions_of(&group)
            .iter()
            .map(|(_, h)| h.lock().counts().0)
            .sum();
        acquired.get_or_create(&labels).set(in_flight as i64);
    }
    r.register(
        "share_group_members",
        "Members of each share group coordinated here",
        members,
    );
    r.register(
        "share_group_records_archived",
        "Records archived (rejected, or released at the delivery count limit) by this broker's share-partitions, per group",
        archived,
    );
    r.register(
        "share_group_records_dead_lettered",
        "Archived records written to the group's dead-letter topic, per group",
        dead_lettered,
    );
    r.register(
        "share_group_dead_letters_failed",
        "Archived records whose dead letter could not be written (the topic refused it, or attempts ran out), per group",
        dead_letter_failed,
    );
    r.register(
        "share_group_records_acquired",
        "Records acquired by members now (in flight), per group",
        acquired,
    );
}
