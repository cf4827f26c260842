//! Replica fetchers (Kafka's `ReplicaFetcherManager` and `ReplicaFetcherThread`): for each
//! broker this one follows partitions of, a task that sends Fetch requests as a follower
//! (`replica_id` = this broker) for all of them, over a connection of its own (a fetch
//! long-polls at the leader and would hold up any request queued behind it), and applies the
//! answers through each partition's [`FollowerPartition`]: truncate where the logs diverge,
//! append the leader's batches at the leader's offsets, take the leader's high watermark.
//! The tasks run on one thread of their own.
//!
//! Each task keeps a fetch session (KIP-227) with its leader ([`FetchSessionHandler`]): once the
//! leader has made one, a fetch names only the partitions whose fetch position changed (or that
//! were added or are forgotten), and the answer holds only those with news, so an idle follower's
//! fetches stay small however many partitions it follows. A leader that makes no session gets
//! full fetches, as before.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, RequestKind, ResponseKind};
use kafka_protocol::ResponseError;
use parking_lot::Mutex;
use samsa_cluster::replication::follower::{
    FetchAnswer, FetchError, FollowerPartition, Records, Step,
};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::cluster_view::ClusterView;
use crate::fetch_session::client::FetchSessionHandler;
use crate::fetch_session::{FetchParams, PartitionKey, TopicKey};
use crate::net::peer::Peer;
use crate::node::Node;
use crate::partition::{Partition, Transition};
use crate::quota::replication::{ReplicationQuota, ReplicationQuotas};

/// The Fetch version followers send: topics by id (v13), the diverging epoch (KIP-320), and
/// the follower's broker epoch in `replica_state` (v15, KIP-903), which keeps a leader from
/// counting toward the ISR what a former incarnation of this broker fetched.
const FETCH_VERSION: i16 = 15;

/// A partition this broker follows, with its fetch state.
struct Followed {
    partition: Arc<Partition>,
    state: FollowerPartition,
    /// Not fetched before this instant (after an error).
    paused_until: Option<tokio::time::Instant>,
    /// An fsync of what it appended failed (durable mode): the log takes no appends until it
    /// is reopened, and its fetch offset would name records that may not be on disk, so it is
    /// not fetched again (it drops out of the ISR, as Kafka's replica on a failed log dir).
    disk_failed: bool,
    /// How far its fetch offset trailed the leader's high watermark at the last answer
    /// without error (Kafka's fetcher lag); `None` before one. At 0 the replica is in sync and
    /// the follower's replication throttle never holds it back.
    lag: Option<i64>,
}

/// The partitions followed from one leader, shared by the manager and that leader's task.
#[derive(Default)]
struct LeaderSet {
    partitions: Mutex<BTreeMap<(String, i32), Followed>>,
    changed: Notify,
}

/// Settings of the fetchers (Kafka's names).
#[derive(Debug, Clone, Copy)]
pub struct FetcherConfig {
    pub node_id: i32,
    pub fetch_max_bytes: i32,
    pub response_max_bytes: i32,
    pub wait_max_ms: i32,
    pub backoff_ms: u64,
}

pub struct ReplicaFetchers {
    runtime: tokio::runtime::Handle,
    config: FetcherConfig,
    leaders: Mutex<HashMap<i32, Arc<LeaderSet>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ReplicaFetchers {
    /// Starts the fetchers' thread (a task per leader starts when a partition follows it).
    pub fn start(config: FetcherConfig) -> std::io::Result<ReplicaFetchers> {
        let (runtime, stop) = crate::util::runtime_thread("replica-fetchers")?;
        Ok(ReplicaFetchers {
            runtime,
            config,
            leaders: Mutex::new(HashMap::new()),
            _stop: stop,
        })
    }

    /// Starts, moves or stops the fetching of partitions whose role changed.
    pub fn apply(&self, node: &Arc<Node>, transitions: Vec<(Arc<Partition>, Transition)>) {
        for (p, t) in transitions {
            let key = (p.tp.topic.clone(), p.tp.partition);
            let mut leaders = self.leaders.lock();
            for set in leaders.values() {
                if set.partitions.lock().remove(&key).is_some() {
                    set.changed.notify_one();
                }
            }
            let Transition::Follow {
                leader,
                leader_epoch,
            } = t
            else {
                continue;
            };
            let state = FollowerPartition::new(
                leader,
                leader_epoch,
                p.log_end_offset(),
                p.latest_epoch().unwrap_or(-1),
                p.high_watermark(),
            );
            tracing::info!(partition = %p.tp, leader, leader_epoch, fetch_offset = state.fetch_offset, "following the partition's leader");
            let set = leaders.entry(leader).or_insert_with(|| {
                let set = Arc::new(LeaderSet::default());
                let task = run(
                    Arc::downgrade(node),
                    self.config,
                    leader,
                    Arc::downgrade(&set),
                );
                self.runtime.spawn(task);
                set
            });
            set.partitions.lock().insert(
                key,
                Followed {
                    partition: p,
                    state,
                    paused_until: None,
                    disk_failed: false,
                    lag: None,
                },
            );
            set.changed.notify_one();
        }
    }

    /// How many partitions this broker follows (for metrics and tests).
    pub fn followed(&self) -> usize {
        self.leaders
            .lock()
            .values()
            .map(|s| s.partitions.lock().len())
            .sum()
    }
}

/// The fetch loop of one leader, until the broker or the set is gone.
async fn run(weak_node: Weak<Node>, config: FetcherConfig, leader: i32, set: Weak<LeaderSet>) {
    let mut peer: Option<Peer> = None;
    let mut session = FetchSessionHandler::new();
    loop {
        let (Some(node), Some(set)) = (weak_node.upgrade(), set.upgrade()) else {
            return;
        };
        if node.is_shutting_down() {
            return;
        }
        let syncs = follower_syncs(&node, &set);
        if !syncs.is_empty() {
            drop(node);
            await_syncs(&set, syncs).await;
            continue;
        }
        let broker_epoch = node.membership.borrow().broker_epoch.unwrap_or(-1);
        let request = build_request(
            &config,
            &set,
            &mut session,
            broker_epoch,
            &node.replication_quotas.follower,
        );
        let Some(request) = request else {
            // Nothing to fetch now: wait for a partition, or the end of the first pause (a
            // partition waiting 200 ms for its new leader to know it leads must not wait out
            // the whole backoff: that was a second's gap in every controlled shutdown).
            let changed = set.changed.notified();
            let resume = next_resume(&set).unwrap_or_else(|| {
                tokio::time::Instant::now() + Duration::from_millis(config.backoff_ms)
            });
            drop(node);
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(resume) => {}
            }
            continue;
        };
        let Some(addr) = leader_address(&node, leader) else {
            drop(node);
            drop(set);
            tokio::time::sleep(Duration::from_millis(config.backoff_ms)).await;
            continue;
        };
        let p = match &peer {
            Some(p) if p.addr == addr => p.clone(),
            _ => {
                let timeout = Duration::from_millis(config.wait_max_ms as u64 + 30_000);
                let p = Peer::spawn(
                    addr,
                    format!("samsa-replica-fetcher-{}", config.node_id),
                    timeout,
                    node.inter_broker.security.clone(),
                );
                peer = Some(p.clone());
                p
            }
        };
        drop(node);
        let answer = p
            .send(ApiKey::Fetch, FETCH_VERSION, RequestKind::Fetch(request))
            .await;
        match answer {
            Ok(Ok(ResponseKind::Fetch(resp))) if is_session_error(resp.error_code) => {
                // The next fetch is a full one that starts a new session: at once.
                session.handle_response(resp.error_code, resp.session_id, []);
                tracing::debug!(
                    leader,
                    error = resp.error_code,
                    "the fetch session ended; starting another"
                );
            }
            Ok(Ok(ResponseKind::Fetch(resp))) if resp.error_code == 0 => {
                let keys: Vec<PartitionKey> = resp
                    .responses
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().map(|p| PartitionKey {
                            topic: TopicKey::Id(t.topic_id),
                            partition: p.partition_index,
                        })
                    })
                    .collect();
                let Some(node) = weak_node.upgrade() else {
                    return;
                };
                if session.handle_response(resp.error_code, resp.session_id, &keys) {
                    let quotas = &node.replication_quotas;
                    let throttled_bytes = apply_response(&set, resp, quotas);
                    quotas
                        .follower
                        .lock()
                        .record(throttled_bytes, crate::util::now_ms());
                }
                drop(node);
            }
            other => {
                session.handle_error();
                let why = match other {
                    Ok(Ok(ResponseKind::Fetch(r))) => format!("error {}", r.error_code),
                    Ok(Ok(_)) => "an answer of the wrong type".into(),
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => "the connection is gone".into(),
                };
                tracing::debug!(leader, %why, "replica fetch failed; backing off");
                tokio::time::sleep(Duration::from_millis(config.backoff_ms)).await;
            }
        }
    }
}

/// Durable mode: the fsyncs to wait for before the next fetch, of every partition of `set`
/// with appended records not yet on disk (see [`Partition::follower_sync`]). One group commit
/// serves them all.
fn follower_syncs(node: &Node, set: &LeaderSet) -> Vec<PendingSync> {
    set.partitions
        .lock()
        .values()
        .filter(|f| !f.disk_failed)
        .filter_map(|f| {
            let rx = f.partition.follower_sync(&node.group_commit)?;
            Some((f.partition.clone(), rx))
        })
        .collect()
}

/// A follower's fsync under way.
type PendingSync = (
    Arc<Partition>,
    tokio::sync::oneshot::Receiver<Result<(), samsa_storage::LogError>>,
);

async fn await_syncs(set: &LeaderSet, syncs: Vec<PendingSync>) {
    for (partition, rx) in syncs {
        let failure = match rx.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some("group commit is shut down".to_string()),
        };
        partition.synced();
        if let Some(why) = failure {
            tracing::error!(partition = %partition.tp, error = %why, "fsync of replicated records failed; this follower stops fetching the partition");
            let key = (partition.tp.topic.clone(), partition.tp.partition);
            if let Some(f) = set.partitions.lock().get_mut(&key) {
                f.disk_failed = true;
            }
        }
    }
}

/// When the first paused partition of `set` may be fetched again, if one is paused.
fn next_resume(set: &LeaderSet) -> Option<tokio::time::Instant> {
    set.partitions
        .lock()
        .values()
        .filter(|f| !f.disk_failed)
        .filter_map(|f| f.paused_until)
        .min()
}

/// The leader's endpoint on the inter-broker listener, from the metadata image.
fn leader_address(node: &Node, leader: i32) -> Option<SocketAddr> {
    let view = ClusterView::new(node);
    let endpoint = view.node(leader)?;
    crate::net::peer::resolve(&endpoint.host, endpoint.port as u16)
}

/// The next Fetch of the partitions of `set` not paused, through the session: all of them in a
/// full fetch, else those that changed and those to forget. `None` if no partition is to be
/// fetched now. A partition the follower's replication throttle holds back (Kafka's
/// `shouldFollowerThrottle`: named for this broker by its topic's
/// `follower.replication.throttled.replicas`, out of sync, the quota exceeded) is left out, as
/// Kafka's fetcher leaves it out (the session forgets it until it is fetched again).
fn build_request(
    config: &FetcherConfig,
    set: &LeaderSet,
    session: &mut FetchSessionHandler,
    broker_epoch: i64,
    quota: &Mutex<ReplicationQuota>,
) -> Option<FetchRequest> {
    let now = tokio::time::Instant::now();
    let now_ms = crate::util::now_ms();
    let mut quota = quota.lock();
    let throttles = quota.throttles_any();
    let mut wanted = Vec::new();
    for ((topic, index), f) in set.partitions.lock().iter() {
        if f.paused_until.is_some_and(|t| t > now) || f.disk_failed {
            continue;
        }
        let in_sync = f.lag.is_some_and(|lag| lag <= 0);
        if throttles && quota.should_throttle(topic, *index, in_sync, now_ms) {
            continue;
        }
        let key = PartitionKey {
            topic: TopicKey::Id(f.partition.topic_id),
            partition: *index,
        };
        let params = FetchParams {
            fetch_offset: f.state.fetch_offset,
            log_start_offset: f.partition.log_start_offset(),
            partition_max_bytes: config.fetch_max_bytes,
            current_leader_epoch: f.state.leader_epoch,
            last_fetched_epoch: f.state.last_fetched_epoch,
        };
        wanted.push((key, params));
    }
    drop(quota);
    if wanted.is_empty() {
        return None;
    }
    let data = session.build(wanted);
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1); // from v15 in replica_state
    req.replica_state.replica_id = BrokerId(config.node_id);
    req.replica_state.replica_epoch = broker_epoch;
    req.max_wait_ms = config.wait_max_ms;
    req.min_bytes = 1;
    req.max_bytes = config.response_max_bytes;
    req.isolation_level = 0;
    req.session_id = data.session_id;
    req.session_epoch = data.epoch;
    // The partitions come in topic order (the set is sorted by name), so a topic's are
    // consecutive.
    for (key, params) in data.to_send {
        let TopicKey::Id(id) = key.topic else {
            unreachable!("followers name topics by id")
        };
        if req
            .topics
            .last()
            .is_none_or(|t: &FetchTopic| t.topic_id != id)
        {
            let mut t = FetchTopic::default();
            t.topic_id = id;
            req.topics.push(t);
        }
        let mut p = FetchPartition::default();
        p.partition = key.partition;
        p.current_leader_epoch = params.current_leader_epoch;
        p.fetch_offset = params.fetch_offset;
        p.last_fetched_epoch = params.last_fetched_epoch;
        p.log_start_offset = params.log_start_offset;
        p.partition_max_bytes = params.partition_max_bytes;
        req.topics
            .last_mut()
            .expect("pushed above")
            .partitions
            .push(p);
    }
    let mut forgotten: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
    for key in data.to_forget {
        if let TopicKey::Id(id) = key.topic {
            forgotten.entry(id).or_default().push(key.partition);
        }
    }
    req.forgotten_topics_data = forgotten
        .into_iter()
        .map(|(id, partitions)| {
            let mut t = ForgottenTopic::default();
            t.topic_id = id;
            t.partitions = partitions;
            t
        })
        .collect();
    Some(req)
}

/// The top-level errors that end a fetch session (the next fetch starts a new one).
fn is_session_error(code: i16) -> bool {
    [
        ResponseError::FetchSessionIdNotFound,
        ResponseError::InvalidFetchSessionEpoch,
        ResponseError::FetchSessionTopicIdError,
    ]
    .iter()
    .any(|e| e.code() == code)
}

/// The error classes a follower treats alike.
fn classify(code: i16) -> FetchError {
    match ResponseError::try_from_code(code) {
        None if code == 0 => FetchError::None,
        Some(ResponseError::OffsetOutOfRange) => FetchError::OffsetOutOfRange,
        Some(
            ResponseError::NotLeaderOrFollower
            | ResponseError::FencedLeaderEpoch
            | ResponseError::UnknownLeaderEpoch
            | ResponseError::UnknownTopicOrPartition
            | ResponseError::UnknownTopicId
            | ResponseError::InconsistentTopicId,
        ) => FetchError::LeadershipChanged,
        _ => FetchError::Retriable,
    }
}

/// Applies a leader's Fetch answer to the partitions of `set`. Returns the record bytes it
/// brought for partitions the follower's replication throttle names (in sync or not, as
/// Kafka's `processPartitionData` records them), for the caller to record.
fn apply_response(
    set: &LeaderSet,
    resp: kafka_protocol::messages::FetchResponse,
    quotas: &ReplicationQuotas,
) -> u64 {
    let now_ms = crate::util::now_ms();
    // The answer names topics by id; the set holds them by name. Only the topics answered
    // are looked up (an idle follower's incremental answer names none).
    if resp.responses.is_empty() {
        return 0;
    }
    let mut throttled: Vec<(String, i32, u64)> = Vec::new();
    let mut partitions = set.partitions.lock();
    let answered: HashSet<Uuid> = resp.responses.iter().map(|t| t.topic_id).collect();
    let mut names: HashMap<Uuid, String> = HashMap::with_capacity(answered.len());
    for ((name, _), f) in partitions.iter() {
        let id = f.partition.topic_id;
        if answered.contains(&id) && !names.contains_key(&id) {
            names.insert(id, name.clone());
        }
    }
    for t in resp.responses {
        let Some(name) = names.get(&t.topic_id) else {
            continue;
        };
        for pd in t.partitions {
            let key = (name.clone(), pd.partition_index);
            let Some(f) = partitions.get_mut(&key) else {
                continue;
            };
            let records = pd.records.as_ref().and_then(batch_span);
            let answer = FetchAnswer {
                error: classify(pd.error_code),
                high_watermark: pd.high_watermark,
                log_start_offset: pd.log_start_offset,
                diverging_epoch: (pd.diverging_epoch.epoch >= 0)
                    .then_some((pd.diverging_epoch.epoch, pd.diverging_epoch.end_offset)),
                records,
            };
            let bytes = pd.records.as_ref().map_or(0, |b| b.len() as u64);
            if bytes > 0 {
                throttled.push((name.clone(), pd.partition_index, bytes));
            }
            let partition = f.partition.clone();
            let (leader, leader_epoch) = (f.state.leader, f.state.leader_epoch);
            // What this fetch asked with, for the log line of a truncation.
            let asked = (f.state.fetch_offset, f.state.last_fetched_epoch);
            let steps = f
                .state
                .on_answer(&answer, |epoch| partition.end_offset_for_epoch(epoch));
            for step in steps {
                let done = match step {
                    Step::Truncate(offset) => {
                        let done = partition.with_log_as_follower(leader, leader_epoch, |log| {
                            log.truncate_to(offset)
                        });
                        f.state.resync(
                            partition.log_end_offset(),
                            partition.latest_epoch().unwrap_or(-1),
                        );
                        tracing::info!(partition = %partition.tp, offset, log_end_offset = partition.log_end_offset(), fetch_offset = asked.0, last_fetched_epoch = asked.1, diverging_epoch = ?answer.diverging_epoch, "truncated where this follower's log diverged from its leader's");
                        done
                    }
                    Step::TruncateFullyAndStartAt(offset) => {
                        let done = partition.with_log_as_follower(leader, leader_epoch, |log| {
                            log.truncate_fully_and_start_at(offset)
                        });
                        f.state.resync(partition.log_end_offset(), -1);
                        tracing::info!(partition = %partition.tp, offset, "this follower is behind its leader's log start: starting over there");
                        done
                    }
                    Step::Append => match &pd.records {
                        Some(b) => partition
                            .append_as_follower(leader, leader_epoch, b.clone(), now_ms)
                            .map(|done| done.map(|_| ())),
                        None => Ok(Some(())),
                    },
                    Step::HighWatermark(hw) => {
                        partition.set_follower_high_watermark(hw);
                        Ok(Some(()))
                    }
                    // The leader may not know yet that it leads (this broker's image is ahead of
                    // its), or leads no more (the image will say who does, and the publisher
                    // moves the partition then): ask again after a pause.
                    Step::AwaitLeadership => {
                        f.paused_until =
                            Some(tokio::time::Instant::now() + Duration::from_millis(200));
                        Ok(Some(()))
                    }
                    Step::Backoff => {
                        f.paused_until =
                            Some(tokio::time::Instant::now() + Duration::from_millis(1_000));
                        Ok(Some(()))
                    }
                };
                if let Ok(None) = done {
                    // This broker no longer follows that leader at that epoch: the answer is
                    // stale, and the publisher is moving the partition to its new role.
                    tracing::debug!(partition = %partition.tp, leader, leader_epoch, "dropped a fetch answer from before a change of role");
                    f.paused_until = Some(tokio::time::Instant::now() + Duration::from_millis(200));
                    break;
                }
                if let Err(e) = done {
                    tracing::warn!(partition = %partition.tp, error = %e, "cannot apply what the leader sent; fetching again from this follower's log end");
                    // Start over from what the log really holds.
                    f.state = FollowerPartition::new(
                        f.state.leader,
                        f.state.leader_epoch,
                        partition.log_end_offset(),
                        partition.latest_epoch().unwrap_or(-1),
                        partition.high_watermark(),
                    );
                    f.paused_until =
                        Some(tokio::time::Instant::now() + Duration::from_millis(1_000));
                    break;
                }
            }
            if answer.error == FetchError::None {
                f.lag = Some((answer.high_watermark - f.state.fetch_offset).max(0));
            }
        }
    }
    drop(partitions);
    if throttled.is_empty() {
        return 0;
    }
    let quota = quotas.follower.lock();
    throttled
        .iter()
        .filter(|(topic, partition, _)| quota.is_throttled(topic, *partition))
        .map(|(_, _, bytes)| bytes)
        .sum()
}

/// The first base offset, the offset after the last batch and the last batch's epoch of a
/// fetched record set (whole batches; a trailing partial batch is ignored).
fn batch_span(bytes: &bytes::Bytes) -> Option<Records> {
    let mut first = None;
    let mut next = 0;
    let mut last_epoch = -1;
    for b in samsa_storage::batch::batches(bytes) {
        let Ok(b) = b else { break };
        let h = b.header();
        first.get_or_insert(h.base_offset);
        next = h.next_offset();
        last_epoch = h.partition_leader_epoch;
    }
    first.map(|base_offset| Records {
        base_offset,
        next_offset: next,
        last_epoch,
    })
}
