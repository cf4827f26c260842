//! The gauges sampled from the broker's state at scrape time (connections, partitions,
//! offsets, groups, share groups, the quorum, fetch sessions, quotas): above the coordinators, so
//! that the counters in [`super::Metrics`], which every service records into, depend on none
//! of them.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::*;
use crate::broker::Broker;

/// The whole exposition of `broker`'s metrics: its counters and a sample of its state now.
pub fn render(broker: &Broker) -> String {
    let node = &broker.node;
    node.metrics
        .render(|t| node.topics.get(t).is_some(), &sample(broker))
}

/// A registry of gauges read from the broker's state at this moment.
fn sample(broker: &Broker) -> Registry {
    let mut r = Registry::with_prefix("samsa");
    let connections = Gauge::<i64>::default();
    connections.set(broker.connections.open());
    r.register("connections", "Open client connections", connections);
    let pool = &broker.node.limits.request_memory;
    let held = Gauge::<i64>::default();
    held.set((pool.bytes() - pool.available()) as i64);
    r.register(
        "request_memory_held_bytes",
        "Bytes the buffers of large requests (over 64 KiB) hold now, of queued.max.request.bytes",
        held,
    );
    let waits = Counter::<u64>::default();
    waits.inc_by(pool.waits());
    r.register(
        "request_memory_waits",
        "Large requests that waited for queued.max.request.bytes to have room before being read",
        waits,
    );
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
    let per_topic = broker.node.config.get("metrics.partition.level").as_deref() == Some("topic");
    let topic_sums = TopicSums::default();
    for topic in broker.node.topics.all() {
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
    sample_replication_quotas(broker, &mut r);
    super::client_quotas::sample(&broker.node.client_quotas, crate::util::now_ms(), &mut r);
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
    let tail = Gauge::<i64>::default();
    tail.set(samsa_storage::process_cached_bytes().min(i64::MAX as u64) as i64);
    r.register(
        "log_tail_cache_bytes",
        "Bytes of produced batches the partitions' tail caches hold (log.tail.cache.bytes bounds them)",
        tail,
    );
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
    let status = broker.node.controller.status();
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
    let counts = broker.node.controller.elections();
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
    let membership = *broker.node.membership.borrow();
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    direction: &'static str,
}

/// The replication throttles (KIP-73), per direction (`leader`: what this broker sends to
/// followers, `follower`: what it fetches): the bytes of throttled replicas recorded against
/// the quota, the rate the quota measures now (Kafka's `LeaderReplication` and
/// `FollowerReplication` `byte-rate`), and the partition fetches it held back.
fn sample_replication_quotas(broker: &Broker, r: &mut Registry) {
    let bytes = Family::<DirectionLabels, Counter>::default();
    let rate = Family::<DirectionLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let held_back = Family::<DirectionLabels, Counter>::default();
    let now_ms = crate::util::now_ms();
    let quotas = &broker.node.replication_quotas;
    for (direction, quota) in [("leader", &quotas.leader), ("follower", &quotas.follower)] {
        let mut q = quota.lock();
        let labels = DirectionLabels { direction };
        let (recorded, held) = q.totals();
        bytes.get_or_create(&labels).inc_by(recorded);
        // An empty sum of f64 is -0.0: shown as 0.
        let measured = q.rate(now_ms);
        rate.get_or_create(&labels)
            .set(if measured > 0.0 { measured } else { 0.0 });
        held_back.get_or_create(&labels).inc_by(held);
    }
    r.register(
        "replication_throttled_bytes",
        "Bytes of replicas named by a throttled-replicas list, recorded against the replication quota",
        bytes,
    );
    r.register(
        "replication_throttled_byte_rate",
        "The replication quota's measured rate of throttled replicas' bytes, bytes per second",
        rate,
    );
    r.register(
        "replication_throttle_held_back",
        "Partition fetches the replication quota held back (leader: answered without records; follower: left out)",
        held_back,
    );
}

/// Group states (per type), and per group (classic and consumer) and partition the committed offset and the lag behind the
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
    // Every group by type (Kafka's group-count per protocol) and state.
    let by_type = Family::<TypeStateLabels, Gauge>::default();
    for (kind, states) in [
        (
            "classic",
            &[
                "Empty",
                "PreparingRebalance",
                "CompletingRebalance",
                "Stable",
                "Dead",
            ][..],
        ),
        (
            "consumer",
            &["Empty", "Assigning", "Reconciling", "Stable"][..],
        ),
        (
            "streams",
            &["Empty", "NotReady", "Assigning", "Reconciling", "Stable"][..],
        ),
        ("share", &["Empty", "Stable"][..]),
    ] {
        for state in states {
            by_type
                .get_or_create(&TypeStateLabels {
                    r#type: kind,
                    state,
                })
                .set(0);
        }
    }
    let consumer_groups = broker.groups.consumer_group_states();
    let mut ids: Vec<String> = Vec::with_capacity(groups.len() + consumer_groups.len());
    for g in &groups {
        states
            .get_or_create(&StateLabels {
                state: g.state.as_str(),
            })
            .inc();
        by_type
            .get_or_create(&TypeStateLabels {
                r#type: "classic",
                state: g.state.as_str(),
            })
            .inc();
        ids.push(g.group_id.clone());
    }
    for (id, state) in consumer_groups {
        by_type
            .get_or_create(&TypeStateLabels {
                r#type: "consumer",
                state,
            })
            .inc();
        ids.push(id);
    }
    for (id, state) in broker.groups.streams_group_states() {
        by_type
            .get_or_create(&TypeStateLabels {
                r#type: "streams",
                state,
            })
            .inc();
        ids.push(id);
    }
    for group in broker.shares.known_groups() {
        if let Some(state) = broker.shares.with_group(&group, false, |g| g.state()) {
            by_type
                .get_or_create(&TypeStateLabels {
                    r#type: "share",
                    state,
                })
                .inc();
        }
    }
    let committed = Family::<GroupPartitionLabels, Gauge>::default();
    let lag = Family::<GroupPartitionLabels, Gauge>::default();
    for group_id in &ids {
        let Ok(offsets) = broker.groups.fetch_offsets(group_id, None) else {
            continue;
        };
        for (topic, partitions) in offsets {
            let Some(t) = broker.node.topics.get(&topic) else {
                continue;
            };
            for (partition, value) in partitions {
                let (Some(value), Some(p)) = (value, t.partition(partition)) else {
                    continue;
                };
                let labels = GroupPartitionLabels {
                    group: group_id.clone(),
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
        "Classic groups coordinated here, per state",
        states,
    );
    r.register(
        "groups",
        "Groups coordinated here, per type (classic, consumer, share) and state",
        by_type,
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
