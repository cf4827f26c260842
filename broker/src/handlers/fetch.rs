//! Fetch: whole record batches from each partition's log, bounded by the high watermark, with
//! a long poll. The answer goes out as soon as `min_bytes` are available (woken by appends,
//! not by polling) or when `max_wait_ms` passes. Record bytes are the log's bytes: from the
//! tail cache as they are in memory, from a segment as a file range that the connection
//! sends with sendfile, so they are never read into the broker.
//!
//! `isolation_level=1` (read_committed) stops at the last stable offset and lists the aborted
//! transactions overlapping the returned batches (from the `.txnindex` files), which the
//! client uses to drop their records; markers themselves are never shown to applications.
//!
//! ACLs: READ on each topic; the partitions of others get TOPIC_AUTHORIZATION_FAILED.
//!
//! Fetch sessions (KIP-227, [`crate::fetch_session`]): a fetch that asks for one gets a session
//! id; an incremental fetch in it names only what changed, reads every partition of the session
//! (a long poll waits on all of them) and is answered with only those that have something new
//! ([`session`] is the glue). A fetch at epoch -1, or before v7, is served without one.
//!
//! A follower's fetch (`replica_id`, or from v15 `replica_state.replica_id`, of a broker) is
//! the leader's news of that follower: its fetch offset is its log end, which may move the
//! high watermark and the ISR. It reads up to the log end rather than the high watermark, and
//! a follower whose last fetched epoch ended earlier here (or never was) is told where, as the
//! diverging epoch (KIP-320), instead of records. ACLs: CLUSTER_ACTION on the cluster, as
//! Kafka requires of followers.
//!
//! Fetch from follower (KIP-392): a consumer's fetch of v11+ (which carries the client's
//! metadata, its `rack_id`) may read from any replica here, leader or follower, up to that
//! replica's high watermark; older ones only from the leader (Kafka's `fetchOnlyLeader`). With
//! `replica.selector.class` set, the leader answers such a fetch with the replica the selector
//! prefers for the client's rack (`preferred_read_replica`) and, when that is another replica,
//! with no records, at once: the client fetches from that replica next.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::replication::leader::FetchedBy;
use samsa_protocol::FileRange;
use samsa_storage::LogError;

use super::ctx::Ctx;
use super::produce::log_error_code;
use crate::acl::{AclOperation, ResourceType};
use crate::cluster_view::LeaderHints;
use crate::fetch_session::cache::Context;
use crate::fetch_session::{FetchParams, PartitionKey, TopicKey};
use crate::partition::Partition;
use crate::quota::client::QuotaKind;
use crate::topics::Topic;

mod session;

/// Longest long poll we honour, whatever the client asks.
const MAX_WAIT_MS_LIMIT: i32 = 60_000;

struct Wanted<'a> {
    key: &'a PartitionKey,
    params: &'a FetchParams,
    /// `None` for an unknown or unauthorized partition, answered with `refused`.
    partition: Option<Arc<Partition>>,
    refused: ResponseError,
    /// The topic's name, when known (for leader hints).
    topic_name: Option<StrBytes>,
    /// A follower's: where its log diverges from this leader's (epoch, end offset).
    diverging: Option<(i32, i64)>,
    /// A consumer's: the replica the leader sends it to read from instead (KIP-392).
    preferred_read_replica: Option<i32>,
}

/// The response, and for each of its partitions in order the segment range holding its
/// records when they were not loaded (that partition's `records` is then `None`).
pub async fn handle(ctx: &Ctx<'_>, req: FetchRequest) -> (FetchResponse, Vec<Option<FileRange>>) {
    let by_id = ctx.version >= 13;
    let follower = if ctx.version >= 15 {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    };
    let follower = (follower >= 0).then_some(follower);
    // The broker epoch of the follower's incarnation (KIP-903), -1 when not named.
    let follower_epoch = if ctx.version >= 15 {
        req.replica_state.replica_epoch
    } else {
        -1
    };
    let (asked, forgotten) = session::request_partitions(&req, by_id);
    let context = ctx.fetch_sessions().lock().new_context(
        ctx.version,
        req.session_id,
        req.session_epoch,
        &asked,
        &forgotten,
        crate::util::now_ms() as u64,
    );
    // An incremental fetch reads every partition of its session, whatever it named.
    let partitions = match &context {
        Context::Error(e) => {
            let mut resp = FetchResponse::default();
            resp.error_code = e.code();
            return (resp, Vec::new());
        }
        Context::Incremental { partitions, .. } => partitions.as_slice(),
        Context::Sessionless | Context::Full => asked.as_slice(),
    };
    let wanted = resolve(
        ctx,
        partitions,
        by_id,
        follower,
        follower_epoch,
        req.rack_id.as_str(),
    );
    // A consumer under a `consumer_byte_rate` quota reads at most what the quota allows in
    // its window at once (Kafka's `maxValueInQuotaWindow`), so that it is served at its rate
    // in slices rather than throttled for long after one large answer.
    let quota = follower
        .is_none()
        .then(|| ctx.client_quota(QuotaKind::Fetch))
        .flatten();
    let max_bytes = match &quota {
        Some(q) => {
            let window = ctx.node().client_quotas.max_in_quota_window(q);
            req.max_bytes.min(window.min(f64::from(i32::MAX)) as i32)
        }
        None => req.max_bytes,
    };
    let min_bytes = req.min_bytes.min(max_bytes);
    let read_committed = req.isolation_level == 1;
    let max_wait = Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_MS_LIMIT) as u64);
    let deadline = tokio::time::Instant::now() + max_wait;
    let mut shutdown = ctx.node().shutdown_signal();
    let nothing_to_wait_for = wanted.iter().all(|w| w.partition.is_none());
    // The first read registers for nothing: most fetches are answered by it. One that has to
    // wait registers for wake-ups and reads again, so an append in between is not missed.
    let mut waiting = false;
    loop {
        let mut arrivals: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> = Vec::new();
        if waiting {
            arrivals.extend(
                wanted
                    .iter()
                    .filter_map(|w| w.partition.as_ref())
                    .map(|p| Box::pin(p.data_arrived())),
            );
            for a in &mut arrivals {
                a.as_mut().enable();
            }
        }
        let held_back = follower.map_or_else(Vec::new, |f| throttled_now(ctx, &wanted, f));
        let (answers, bytes, at_once) = read_all(
            &wanted,
            &held_back,
            max_bytes,
            read_committed,
            follower.is_some(),
            ctx.version,
        );
        let now = tokio::time::Instant::now();
        if bytes >= min_bytes.max(0) as usize
            || at_once
            || now >= deadline
            || nothing_to_wait_for
            || *shutdown.borrow()
        {
            if let Some(q) = &quota {
                let throttle_ms = super::quotas::fetched(ctx, q, bytes);
                if throttle_ms > 0 {
                    return (throttled(&context, throttle_ms), Vec::new());
                }
            }
            return respond(ctx, &context, &wanted, answers, follower.is_some(), by_id);
        }
        if !waiting {
            waiting = true;
            continue;
        }
        tokio::select! {
            _ = futures::future::select_all(arrivals) => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// The answer of a fetch over its client's quota (Kafka's `getThrottledResponse`): nothing,
/// the throttle time, and the session id of an incremental fetch (whose epoch has moved on, as
/// for any answer); a full fetch's session is not created (id 0), the client asks again.
fn throttled(context: &Context, throttle_ms: i64) -> FetchResponse {
    let mut resp = FetchResponse::default();
    resp.throttle_time_ms = super::quotas::as_field(throttle_ms);
    if let Context::Incremental { id, .. } = context {
        resp.session_id = *id;
    }
    resp
}

/// The leader's replication throttle (KIP-73, Kafka's `shouldLeaderThrottle`): for each
/// partition a follower asks for, whether to answer it without records now: the topic's
/// `leader.replication.throttled.replicas` names it on this broker, `follower` is not in its
/// ISR, and this broker's `leader.replication.throttled.rate` is exceeded. Empty when nothing
/// is throttled. The quota does not change while one response is read (bytes are recorded once
/// it is built), so it is looked at once per read, not per partition.
fn throttled_now(ctx: &Ctx<'_>, wanted: &[Wanted<'_>], follower: i32) -> Vec<bool> {
    let mut quota = ctx.node().replication_quotas.leader.lock();
    if !quota.throttles_any() {
        return Vec::new();
    }
    let now_ms = crate::util::now_ms();
    wanted
        .iter()
        .map(|w| {
            w.partition.as_ref().is_some_and(|p| {
                quota.is_throttled(&p.tp.topic, p.tp.partition)
                    && !p.isr_contains(follower)
                    && quota.should_throttle(&p.tp.topic, p.tp.partition, false, now_ms)
            })
        })
        .collect()
}

/// Looks up each partition to read (consecutive partitions of one topic share the lookup and
/// the ACL check) and, for a follower, records its fetch; for a consumer in `client_rack`, the
/// replica it should read from instead of this leader, if any.
fn resolve<'a>(
    ctx: &Ctx<'_>,
    partitions: &'a [(PartitionKey, FetchParams)],
    by_id: bool,
    follower: Option<i32>,
    follower_epoch: i64,
    client_rack: &str,
) -> Vec<Wanted<'a>> {
    // Kafka's `FetchParams.fetchOnlyLeader`: a consumer's fetch without client metadata (before
    // v11) reads only from the leader.
    let any_replica = follower.is_none() && ctx.version >= 11;
    // Kafka's rack-aware selector sends a client without a rack to the leader: no need to ask.
    let selector = ctx
        .replica_selector()
        .copied()
        .filter(|_| any_replica && !client_rack.is_empty());
    let image = selector.map(|_| ctx.controller().image());
    let now_ms = crate::util::now_ms() as u64;
    let cluster_action = follower.is_some()
        && ctx.authorize(
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            crate::acl::CLUSTER_NAME,
        );
    // Whether the follower may join ISRs (KIP-841, KIP-903): its broker registered (at the
    // epoch the fetch names, if it names one), unfenced and not shutting down, as this broker's
    // image says; and whether the fetch comes from an incarnation that has registered again
    // since (Kafka's `Replica.updateFetchStateOrThrow`), whose progress must not count. Once per
    // request, not per partition.
    let (fetched_by, stale) = match follower {
        Some(replica) => {
            let image = ctx.controller().image();
            let registered = image.broker(replica);
            let stale = follower_epoch >= 0 && registered.is_some_and(|b| b.epoch > follower_epoch);
            let isr_eligible = registered.is_some_and(|b| {
                !b.fenced
                    && !b.in_controlled_shutdown
                    && (follower_epoch < 0 || b.epoch == follower_epoch)
            });
            (
                FetchedBy {
                    broker_epoch: follower_epoch,
                    isr_eligible,
                },
                stale,
            )
        }
        None => (FetchedBy::eligible(-1), false),
    };
    let mut wanted = Vec::with_capacity(partitions.len());
    let mut current: Option<(&TopicKey, Option<Arc<Topic>>, ResponseError)> = None;
    for (key, params) in partitions {
        if current.as_ref().is_none_or(|(k, _, _)| *k != &key.topic) {
            let (topic, asked_name) = match &key.topic {
                TopicKey::Id(id) => (ctx.topics().get_by_id(id), ""),
                TopicKey::Name(name) => (ctx.topics().get(name.as_str()), name.as_str()),
            };
            // By name the check comes before the lookup, so that an unauthorized client cannot
            // learn which topics exist; an unknown topic id names nothing to check.
            let name = topic.as_ref().map_or(asked_name, |tp| tp.name.as_str());
            let authorized_here = match follower {
                Some(_) => cluster_action,
                None => ctx.authorize(AclOperation::Read, ResourceType::Topic, name),
            };
            let refused = if (topic.is_some() || !by_id) && !authorized_here {
                ResponseError::TopicAuthorizationFailed
            } else if by_id {
                ResponseError::UnknownTopicId
            } else {
                ResponseError::UnknownTopicOrPartition
            };
            current = Some((&key.topic, topic, refused));
        }
        let (_, topic, refused) = current.as_ref().expect("set above");
        let authorized = *refused != ResponseError::TopicAuthorizationFailed;
        // A partition of a known topic that another broker leads (or none does) is
        // NOT_LEADER_OR_FOLLOWER, with the leader where this broker knows it (KIP-951).
        let led = match topic.as_ref().filter(|_| authorized) {
            Some(tp) if any_replica => tp.replica_partition(key.partition).cloned(),
            Some(tp) => tp.led_partition(key.partition).cloned(),
            None => Err(*refused),
        };
        let (mut partition, mut refused) = match led {
            Ok(partition) => (Some(partition), *refused),
            // A known topic (by name or id) without that partition: Kafka names the partition
            // unknown, not the topic id.
            Err(ResponseError::UnknownTopicOrPartition) if topic.is_some() && authorized => {
                (None, ResponseError::UnknownTopicOrPartition)
            }
            Err(ResponseError::UnknownTopicOrPartition) => (None, *refused),
            Err(e) => (None, e),
        };
        let mut diverging = None;
        if stale && partition.is_some() {
            refused = ResponseError::NotLeaderOrFollower;
            partition = None;
        }
        let mut preferred_read_replica = None;
        if let (Some(selector), Some(image), Some(part)) = (&selector, &image, &partition) {
            // Kafka's `findPreferredReadReplica`: a live broker's rack (an empty endpoint
            // otherwise, which matches no rack).
            let rack_of = |id: i32| {
                image
                    .broker(id)
                    .filter(|b| !b.fenced)
                    .and_then(|b| b.rack.as_deref())
            };
            preferred_read_replica = part.preferred_read_replica(
                selector,
                ctx.node().node_id,
                client_rack,
                params.fetch_offset,
                now_ms,
                rack_of,
            );
        }
        if let (Some(replica), Some(part)) = (follower, &partition) {
            // Every partition of a follower's session counts as fetched, named in this request
            // or not (as in Kafka), or an idle follower would fall out of the ISR.
            match follower_fetched(ctx, part, replica, fetched_by, params) {
                Ok(d) => diverging = d,
                Err(e) => {
                    refused = e;
                    partition = None;
                }
            }
        }
        wanted.push(Wanted {
            key,
            params,
            partition,
            refused,
            topic_name: topic.as_ref().map(|tp| tp.wire_name.clone()),
            diverging,
            preferred_read_replica,
        });
    }
    wanted
}

/// The answer: with a session's partitions those its rules include, with the leader hints of
/// the partitions that moved; the session made or updated.
fn respond(
    ctx: &Ctx<'_>,
    context: &Context,
    wanted: &[Wanted<'_>],
    answers: Vec<Answer>,
    follower: bool,
    by_id: bool,
) -> (FetchResponse, Vec<Option<FileRange>>) {
    let mut resp = FetchResponse::default();
    let included = match session::conclude(ctx, context, wanted, &answers, follower, by_id) {
        Ok(verdict) => {
            resp.session_id = verdict.session_id;
            verdict.included
        }
        Err((code, session_id)) => {
            resp.error_code = code;
            resp.session_id = session_id;
            return (resp, Vec::new());
        }
    };
    let mut files = Vec::new();
    let mut hints = LeaderHints::new(ctx.node(), &ctx.conn.listener.name);
    // A follower's bytes of throttled partitions count against the leader's replication quota,
    // in sync or not (Kafka's `sizeOfThrottledPartitions`; here the record bytes).
    let mut throttled_bytes = 0u64;
    let quota = follower.then(|| ctx.node().replication_quotas.leader.lock());
    let quota = quota.filter(|q| q.throttles_any());
    let mut last_topic: Option<&TopicKey> = None;
    for (i, (w, mut a)) in wanted.iter().zip(answers).enumerate() {
        if !included.as_ref().is_none_or(|inc| inc[i]) {
            continue;
        }
        let moved = [
            ResponseError::NotLeaderOrFollower.code(),
            ResponseError::FencedLeaderEpoch.code(),
        ];
        if ctx.version >= 12 && moved.contains(&a.data.error_code) {
            let leader = w
                .topic_name
                .as_ref()
                .and_then(|name| hints.leader(name, w.key.partition));
            if let Some((leader, epoch)) = leader {
                a.data.current_leader.leader_id = BrokerId(leader);
                a.data.current_leader.leader_epoch = epoch;
            }
        }
        if a.data.preferred_read_replica.0 >= 0 {
            ctx.node().metrics.preferred_read_replica_named();
        }
        if let Some(p) = &w.partition {
            if quota
                .as_ref()
                .is_some_and(|q| q.is_throttled(&p.tp.topic, p.tp.partition))
            {
                throttled_bytes += a.records_len() as u64;
            }
            match (&a.file, &a.data.records) {
                (Some((r, records)), _) => {
                    ctx.node()
                        .metrics
                        .fetched_range(&p.tp.topic, r.len, *records)
                }
                (None, Some(records)) => ctx.node().metrics.fetched(&p.tp.topic, records),
                (None, None) => {}
            }
        }
        // Consecutive partitions of a topic share its entry.
        if last_topic != Some(&w.key.topic) {
            let mut tr = FetchableTopicResponse::default();
            match &w.key.topic {
                TopicKey::Id(id) => tr.topic_id = *id,
                TopicKey::Name(name) => tr.topic = TopicName(name.clone()),
            }
            resp.responses.push(tr);
            last_topic = Some(&w.key.topic);
        }
        files.push(a.file.map(|(r, _)| r));
        resp.responses
            .last_mut()
            .expect("pushed above")
            .partitions
            .push(a.data);
    }
    if let Some(mut quota) = quota {
        quota.record(throttled_bytes, crate::util::now_ms());
    }
    if ctx.version >= 16 {
        resp.node_endpoints = hints
            .endpoints()
            .map(|n| {
                let mut e = NodeEndpoint::default();
                e.node_id = BrokerId(n.id);
                e.host = StrBytes::from_string(n.host.clone());
                e.port = n.port;
                e.rack = n.rack.clone().map(StrBytes::from_string);
                e
            })
            .collect();
    }
    (resp, files)
}

/// A follower's fetch of `partition` at this leader: where its log diverges from this one's
/// (KIP-320), or else the follower's progress recorded (which may move the high watermark and
/// start an ISR expansion, sent to the controller in the background). Refused when the
/// follower's leader epoch is not this leader's, or it is no replica. `by`: the follower's
/// broker epoch and whether it may join the ISR.
fn follower_fetched(
    ctx: &Ctx<'_>,
    partition: &Arc<Partition>,
    replica: i32,
    by: FetchedBy,
    p: &FetchParams,
) -> Result<Option<(i32, i64)>, ResponseError> {
    let epoch = partition.leader_epoch();
    // Only -1 means "no epoch": any other value is compared, as Kafka does.
    if p.current_leader_epoch != -1 && p.current_leader_epoch != epoch {
        return Err(if p.current_leader_epoch > epoch {
            ResponseError::UnknownLeaderEpoch
        } else {
            ResponseError::FencedLeaderEpoch
        });
    }
    if p.last_fetched_epoch >= 0 {
        // Kafka's `Partition.fetchRecords`: the follower's last epoch must end here at or past
        // its fetch offset; else it learns the largest epoch this log has up to its last one,
        // and where that ends (with none, the log start: nothing before it is shared).
        match partition.end_offset_for_epoch(p.last_fetched_epoch) {
            Some((e, end)) if e == p.last_fetched_epoch && end >= p.fetch_offset => {}
            Some((e, end)) => return Ok(Some((e, end))),
            None => return Ok(Some((p.last_fetched_epoch, partition.log_start_offset()))),
        }
    }
    if p.fetch_offset > partition.log_end_offset() || p.fetch_offset < partition.log_start_offset()
    {
        // Not progress: the read answers OFFSET_OUT_OF_RANGE with this log's start and high
        // watermark, which tell the follower where to go.
        return Ok(None);
    }
    let now = crate::util::now_ms() as u64;
    match partition.on_follower_fetch(replica, p.fetch_offset, p.log_start_offset, now, by) {
        Ok(Some(alter)) => {
            tracing::info!(partition = %partition.tp, isr = ?alter.new_isr, "a follower caught up; asking the controller to expand the ISR");
            let node = ctx.node().clone();
            let partition = partition.clone();
            tokio::task::spawn_local(async move {
                crate::replication::alter_isr(&node, &partition, alter).await
            });
            Ok(None)
        }
        Ok(None) => Ok(None),
        Err(_) => Err(ResponseError::NotLeaderOrFollower),
    }
}

/// A consumer's last fetched epoch checked against this log (KIP-320, Kafka's
/// `Partition.readRecords`): an epoch this log cannot place is OFFSET_OUT_OF_RANGE, as is an
/// offset before the log start; one that ends before the fetch offset, or is not in the log,
/// answers with the largest epoch up to it and where that ends, so the consumer truncates.
fn consumer_divergence(
    partition: &Arc<Partition>,
    p: &FetchParams,
) -> Result<Option<(i32, i64)>, ResponseError> {
    if p.last_fetched_epoch < 0 {
        return Ok(None);
    }
    let Some((epoch, end)) = partition.end_offset_for_epoch(p.last_fetched_epoch) else {
        return Err(ResponseError::OffsetOutOfRange);
    };
    if p.fetch_offset < partition.log_start_offset() {
        return Err(ResponseError::OffsetOutOfRange);
    }
    Ok((epoch < p.last_fetched_epoch || end < p.fetch_offset).then_some((epoch, end)))
}

/// One partition's answer: its data, and the segment range of its records (with their count)
/// when they stay in the file.
struct Answer {
    data: PartitionData,
    file: Option<(FileRange, u64)>,
}

impl Answer {
    /// The record bytes it carries, in memory or as a file range.
    fn records_len(&self) -> usize {
        match (&self.file, &self.data.records) {
            (Some((r, _)), _) => r.len,
            (None, Some(b)) => b.len(),
            (None, None) => 0,
        }
    }
}

/// Reads every partition once. Returns the answers, the record bytes found and whether to answer
/// at once, as Kafka does when a partition has an error, a diverging epoch or a preferred read
/// replica. The partitions `held_back` marks (by index; none when empty) are answered with
/// their offsets and no records (the replication throttle), and their bytes are not counted
/// toward `min_bytes`, so a follower's fetch of only those waits out its `max_wait_ms` as at
/// Kafka's leader.
fn read_all(
    wanted: &[Wanted<'_>],
    held_back: &[bool],
    max_bytes: i32,
    read_committed: bool,
    follower: bool,
    version: i16,
) -> (Vec<Answer>, usize, bool) {
    // log_start_offset exists from v5; older versions must leave it at its default.
    let has_log_start = version >= 5;
    let mut budget = max_bytes.max(0) as usize;
    let mut total = 0usize;
    let mut at_once = false;
    let mut out = Vec::with_capacity(wanted.len());
    for (i, w) in wanted.iter().enumerate() {
        let mut pd = PartitionData::default();
        pd.partition_index = w.key.partition;
        pd.high_watermark = -1;
        pd.last_stable_offset = -1;
        pd.log_start_offset = -1;
        pd.preferred_read_replica = BrokerId(-1);
        pd.aborted_transactions = if read_committed {
            Some(Vec::new())
        } else {
            None
        };
        let mut file = None;
        let Some(p) = &w.partition else {
            pd.error_code = w.refused.code();
            // Kafka answers the partitions it refuses before reading (unknown, unauthorized)
            // with an empty aborted-transaction list, those its log refuses with none.
            if matches!(
                w.refused,
                ResponseError::UnknownTopicOrPartition
                    | ResponseError::UnknownTopicId
                    | ResponseError::TopicAuthorizationFailed
            ) {
                pd.aborted_transactions = Some(Vec::new());
            }
            at_once = true;
            out.push(Answer { data: pd, file });
            continue;
        };
        // A partition refused by its log carries no offsets (-1), as Kafka answers.
        // Only -1 means "no epoch": any other value is compared, as Kafka does.
        if w.params.current_leader_epoch != -1 && w.params.current_leader_epoch != p.leader_epoch()
        {
            let e = if w.params.current_leader_epoch > p.leader_epoch() {
                ResponseError::UnknownLeaderEpoch
            } else {
                ResponseError::FencedLeaderEpoch
            };
            pd.error_code = e.code();
            at_once = true;
            out.push(Answer { data: pd, file });
            continue;
        }
        let consumer_diverging = if follower {
            Ok(None)
        } else {
            consumer_divergence(p, &w.params)
        };
        let diverging = match consumer_diverging {
            Ok(d) => d.or(w.diverging),
            Err(e) => {
                pd.error_code = e.code();
                at_once = true;
                out.push(Answer { data: pd, file });
                continue;
            }
        };
        pd.high_watermark = p.high_watermark();
        pd.last_stable_offset = p.last_stable_offset();
        if has_log_start {
            pd.log_start_offset = p.log_start_offset();
        }
        if let Some((epoch, end_offset)) = diverging {
            // The follower (or the consumer, KIP-320) truncates first and fetches again: no
            // records now, at once.
            pd.diverging_epoch.epoch = epoch;
            pd.diverging_epoch.end_offset = end_offset;
            at_once = true;
            out.push(Answer { data: pd, file });
            continue;
        }
        if let Some(replica) = w.preferred_read_replica {
            // The consumer reads from `replica` next: no records from here (Kafka skips the
            // read), but this leader's offsets, as Kafka answers.
            pd.preferred_read_replica = BrokerId(replica);
            at_once = true;
            out.push(Answer { data: pd, file });
            continue;
        }
        if held_back.get(i).copied().unwrap_or(false) {
            out.push(Answer { data: pd, file });
            continue;
        }
        // KIP-74: the first partition with data returns at least one whole batch, even past
        // the limits; after that the response budget bounds what is added.
        let limit = (w.params.partition_max_bytes.max(0) as usize).min(budget);
        if budget == 0 {
            out.push(Answer { data: pd, file });
            continue;
        }
        // Only while nothing has been added yet may a batch exceed the limit (Kafka's
        // `minOneMessage`): a later partition whose next batch does not fit the remaining
        // budget returns nothing this time, so the response stays within `max_bytes` plus at
        // most one batch.
        let min_one = total == 0;
        let read = if follower {
            p.read_for_follower(w.params.fetch_offset, limit, min_one)
        } else {
            p.read(w.params.fetch_offset, limit, min_one, read_committed)
        };
        match read.and_then(|r| {
            // A segment range stays in the file (its length and offsets are exact);
            // memory from the tail cache is used as it is.
            let (records, range) = match r.slice.file_range() {
                Some((f, position, len)) => {
                    let count = r
                        .slice
                        .offsets()
                        .map_or(0, |(base, next)| (next - base).max(0) as u64);
                    let range = FileRange {
                        file: f.clone(),
                        position,
                        len,
                    };
                    (None, Some((range, count)))
                }
                None => (Some(r.slice.load().map_err(LogError::Storage)?), None),
            };
            // The upper bound of the aborted transactions to list: the offset after the
            // last batch returned.
            let aborted = match read_committed.then(|| r.slice.offsets()).flatten() {
                Some((_, upper)) => p.aborted_transactions(w.params.fetch_offset, upper)?,
                None => Vec::new(),
            };
            Ok((r, records, range, aborted))
        }) {
            Ok((r, records, range, aborted)) => {
                pd.high_watermark = r.high_watermark;
                pd.last_stable_offset = r.last_stable_offset;
                if read_committed {
                    pd.aborted_transactions = Some(
                        aborted
                            .into_iter()
                            .map(|t| {
                                let mut a = AbortedTransaction::default();
                                a.producer_id = ProducerId(t.producer_id);
                                a.first_offset = t.first_offset;
                                a
                            })
                            .collect(),
                    );
                }
                if has_log_start {
                    pd.log_start_offset = r.log_start_offset;
                }
                let len = range
                    .as_ref()
                    .map_or_else(|| records.as_ref().map_or(0, |b| b.len()), |(f, _)| f.len);
                total += len;
                budget = budget.saturating_sub(len);
                pd.records = records;
                file = range;
            }
            Err(e) => {
                if matches!(e, LogError::Storage(_)) {
                    tracing::error!(partition = %p.tp, "read failed: {e}");
                }
                pd.error_code = log_error_code(&e).code();
                // Kafka's answer to a refused read carries no offsets; Samsa's followers are
                // told this log's start and high watermark, which say where to go.
                if !follower {
                    pd.high_watermark = -1;
                    pd.last_stable_offset = -1;
                    pd.log_start_offset = -1;
                }
                at_once = true;
            }
        }
        out.push(Answer { data: pd, file });
    }
    (out, total, at_once)
}
