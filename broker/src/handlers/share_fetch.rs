//! ShareFetch (KIP-932): a share group member acknowledges what it processed and acquires new
//! records from the partitions this broker leads, within its share session.
//!
//! Share sessions: epoch 0 opens one (its partitions are the request's; acknowledgements are
//! not allowed then), a positive epoch continues it (SHARE_SESSION_NOT_FOUND without one,
//! INVALID_SHARE_SESSION_EPOCH for another epoch) adding the request's partitions and dropping
//! the forgotten ones, and -1 closes it: its acknowledgements apply, then every record the
//! member still holds in the session's partitions is released. An incremental fetch reads
//! every partition of its session and answers those with records, errors or acknowledgement
//! results.
//!
//! Reading: each share-partition says where its next acquisition starts (the first released
//! record, else its end); the log is read there up to the high watermark (the last stable
//! offset for `share.isolation.level=read_committed`) and the whole batches go to the client
//! with the offset ranges it acquired (`acquired_records`); records of control batches and of
//! aborted transactions are never acquired. A fetch that acquires nothing waits up to
//! `max_wait_ms` for an append or a release.
//!
//! ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED for the whole request) and READ on each
//! topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
//!
//! Version 2 (translated, `samsa_protocol::newer`) adds ShareAcquireMode (KIP-1206):
//! `record_limit` (1) acquires at most MaxRecords records, ending inside a batch where the limit
//! falls; `batch_optimized` (0, and every v1 fetch) finishes the batch where the limit falls, as
//! Kafka does, so a fetch may hold more than MaxRecords records; any other mode is UNKNOWN_SERVER_ERROR, as Kafka fails on it. And IsRenewAck
//! (KIP-1222): only a request that says so may carry RENEW acknowledgements (INVALID_REQUEST for
//! the partition otherwise, and for RENEW in v1), and such a request fetches nothing: it must
//! ask for no bytes, records or wait (INVALID_REQUEST for the request), and it is answered with
//! its acknowledgement results only.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, NodeEndpoint, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{BrokerId, ShareFetchRequest, ShareFetchResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_protocol::newer::{Record, Value};
use uuid::Uuid;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::cluster_view::LeaderHints;
use crate::partition::Partition;
use crate::share::partition::{acknowledgements_valid, Limit, MemberId};
use crate::share::{GroupSettings, ShareKey, SharePartitionHandle, ShareSession};

/// Longest long poll honoured.
const MAX_WAIT_MS_LIMIT: i32 = 60_000;
/// Bytes read from a partition's log per share fetch (at least one whole batch).
const SHARE_READ_BYTES: usize = 1 << 20;
/// How often a fetch tries again to reach a share-partition's state.
const STATE_RETRY: Duration = Duration::from_millis(100);
/// Records acquired per fetch when the client does not say.
const DEFAULT_MAX_RECORDS: i32 = 500;
/// The first version with acquire modes and RENEW acknowledgements.
pub const RENEW_VERSION: i16 = 2;

/// Whether a v2 request (`added`: the fields v1 lacks) carries RENEW acknowledgements.
pub fn renew_ack(added: &Record) -> bool {
    added
        .get("IsRenewAck")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The share-partition's state could not be read or written for now (its share coordinator is
/// moving or busy): LEADER_NOT_AVAILABLE, which clients retry after refreshing metadata, as
/// Kafka maps its persister's errors.
pub fn retriable(e: ResponseError) -> ResponseError {
    match e {
        ResponseError::CoordinatorNotAvailable
        | ResponseError::CoordinatorLoadInProgress
        | ResponseError::NotCoordinator => ResponseError::LeaderNotAvailable,
        e => e,
    }
}

fn top_error(e: ResponseError, message: &str) -> ShareFetchResponse {
    let mut resp = ShareFetchResponse::default();
    resp.error_code = e.code();
    // Kafka answers request-level errors without a message; the reason goes to the log.
    tracing::debug!(error = ?e, "{message}");
    resp
}

/// One partition of the answer, as it is built.
#[derive(Default)]
struct Answer {
    data: PartitionData,
    /// Whether it must be in an incremental answer (records, an error, acknowledgement results).
    news: bool,
}

pub async fn handle(ctx: &Ctx<'_>, req: ShareFetchRequest, added: &Record) -> ShareFetchResponse {
    let node = ctx.node();
    if !crate::share::enabled(&node.controller.image()) {
        return top_error(
            ResponseError::UnsupportedVersion,
            "share groups are off: share.version is below 1",
        );
    }
    let (Some(group_id), Some(member_id)) = (req.group_id.as_ref(), req.member_id.as_ref()) else {
        return top_error(
            ResponseError::InvalidRequest,
            "GroupId and MemberId are required",
        );
    };
    let group_id = group_id.as_str().to_string();
    if member_id.is_empty() {
        return top_error(ResponseError::InvalidRequest, "MemberId can't be empty.");
    }
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, &group_id) {
        return top_error(
            ResponseError::GroupAuthorizationFailed,
            "not authorized to read the group",
        );
    }
    let renew_ack = renew_ack(added);
    let acquire_mode = added
        .get("ShareAcquireMode")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if renew_ack
        && (req.max_bytes != 0
            || req.min_bytes != 0
            || req.max_records != 0
            || req.max_wait_ms != 0)
    {
        return top_error(
            ResponseError::InvalidRequest,
            "maxBytes, minBytes, maxRecords and maxWaitMs must be 0 if isRenewAck is true",
        );
    }
    let member: MemberId = Arc::from(member_id.as_str());
    let epoch = req.share_session_epoch;
    let has_acks = req
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| !p.acknowledgement_batches.is_empty());
    if epoch == 0 && has_acks {
        return top_error(
            ResponseError::InvalidRequest,
            "acknowledgements in a ShareFetch that opens a share session",
        );
    }
    // The session: which partitions this fetch reads.
    let session_key = (group_id.clone(), member.to_string());
    let wanted: Vec<(Uuid, i32)> = {
        let mut sessions = ctx.shares().sessions();
        let requested = req.topics.iter().flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        });
        match epoch {
            0 => {
                let max = node
                    .dynamic_configs
                    .effective()
                    .long("group.share.max.share.sessions")
                    .max(1) as usize;
                if sessions.len() >= max && !sessions.contains_key(&session_key) {
                    return top_error(
                        ResponseError::ShareSessionLimitReached,
                        "group.share.max.share.sessions share sessions are open on this broker",
                    );
                }
                let s = ShareSession {
                    epoch: 1,
                    partitions: requested.collect(),
                    used_ms: crate::util::now_ms(),
                };
                let wanted = s.partitions.iter().copied().collect();
                sessions.insert(session_key.clone(), s);
                wanted
            }
            -1 => match sessions.remove(&session_key) {
                Some(_) => Vec::new(),
                None => {
                    return top_error(
                        ResponseError::ShareSessionNotFound,
                        "no share session to close",
                    )
                }
            },
            e => {
                let s = match crate::share::continue_session(&mut sessions, &session_key, e) {
                    Ok(s) => s,
                    Err((code, m)) => return top_error(code, &m),
                };
                s.partitions.extend(requested);
                for f in &req.forgotten_topics_data {
                    for p in &f.partitions {
                        s.partitions.remove(&(f.topic_id, *p));
                    }
                }
                s.partitions.iter().copied().collect()
            }
        }
    };

    let settings = ctx.shares().settings(node, &group_id);
    let mut answers: BTreeMap<(Uuid, i32), Answer> = BTreeMap::new();
    // Acknowledgements first: what they release may be acquired by this same fetch.
    for t in &req.topics {
        for p in &t.partitions {
            if p.acknowledgement_batches.is_empty() {
                continue;
            }
            let a = answers.entry((t.topic_id, p.partition_index)).or_default();
            a.data.partition_index = p.partition_index;
            a.news = true;
            let batches: Vec<(i64, i64, &[i8])> = p
                .acknowledgement_batches
                .iter()
                .map(|b| {
                    (
                        b.first_offset,
                        b.last_offset,
                        b.acknowledge_types.as_slice(),
                    )
                })
                .collect();
            if !acknowledgements_valid(&batches, ctx.version >= RENEW_VERSION, renew_ack) {
                a.data.acknowledge_error_code = ResponseError::InvalidRequest.code();
                continue;
            }
            let key = ShareKey {
                group: Arc::from(group_id.as_str()),
                topic_id: t.topic_id,
                partition: p.partition_index,
            };
            let led = match node.topics.get_by_id(&t.topic_id) {
                None => Err(ResponseError::UnknownTopicId),
                Some(topic) => topic
                    .led_partition(p.partition_index)
                    .map(|p| p.leader_epoch()),
            };
            let acked = match led {
                Ok(leader_epoch) => {
                    ctx.shares()
                        .acknowledge_durably(node, &key, leader_epoch, &member, &batches)
                        .await
                }
                Err(e) => Err((e, "this broker does not lead the partition".to_string())),
            };
            if let Err((e, m)) = acked.map_err(|(e, m)| (retriable(e), m)) {
                a.data.acknowledge_error_code = e.code();
                a.data.acknowledge_error_message =
                    (!m.is_empty()).then(|| StrBytes::from_string(m));
            }
        }
    }
    if epoch == -1 {
        // The member is done here: what it still holds goes back to the group.
        ctx.shares().release_member(node, &group_id, &member).await;
    }
    // A renewal fetches nothing: it is answered with its acknowledgements' results.
    let wanted = if renew_ack { Vec::new() } else { wanted };
    if !renew_ack && !(0..=1).contains(&acquire_mode) {
        return top_error(
            ResponseError::UnknownServerError,
            &format!("unknown share acquire mode {acquire_mode}"),
        );
    }

    // Resolve the partitions to read.
    let mut hints = LeaderHints::new(node, &ctx.conn.listener.name);
    let mut readable: Vec<((Uuid, i32), Arc<Partition>)> = Vec::new();
    for (topic_id, index) in &wanted {
        let a = answers.entry((*topic_id, *index)).or_default();
        a.data.partition_index = *index;
        if epoch == 0 {
            a.news = true;
        }
        let topic = node.topics.get_by_id(topic_id);
        let refused = match &topic {
            None => Some(ResponseError::UnknownTopicId),
            Some(t) if !ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.name) => {
                Some(ResponseError::TopicAuthorizationFailed)
            }
            Some(t) => match t.led_partition(*index) {
                Ok(p) => {
                    readable.push(((*topic_id, *index), p.clone()));
                    None
                }
                Err(e) => {
                    if let Some((leader, leader_epoch)) = hints.leader(&t.name, *index) {
                        a.data.current_leader.leader_id = leader;
                        a.data.current_leader.leader_epoch = leader_epoch;
                    }
                    Some(e)
                }
            },
        };
        if let Some(e) = refused {
            a.data.error_code = e.code();
            a.news = true;
        }
    }

    // Open (load or create) the share-partitions of the readable partitions. Their state may
    // be out of reach for a moment (the state topic being created, its leader moving): tried
    // again until the fetch's wait is over, then the partition is left out of this answer
    // (librdkafka's share consumer takes an error there as fatal), and the next fetch tries
    // again.
    let open_until = tokio::time::Instant::now()
        + Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_MS_LIMIT) as u64);
    let mut open: Vec<((Uuid, i32), Arc<Partition>, SharePartitionHandle)> = Vec::new();
    for (tp, p) in readable {
        let key = ShareKey {
            group: Arc::from(group_id.as_str()),
            topic_id: tp.0,
            partition: tp.1,
        };
        let start = || {
            if settings.earliest {
                p.log_start_offset()
            } else {
                p.high_watermark()
            }
        };
        loop {
            match ctx
                .shares()
                .open_partition(node, &key, settings.limits, p.leader_epoch(), start)
                .await
            {
                Ok(h) => {
                    open.push((tp, p, h));
                    break;
                }
                Err(e) if retriable(e) == ResponseError::LeaderNotAvailable => {
                    if tokio::time::Instant::now() + STATE_RETRY < open_until {
                        tokio::time::sleep(STATE_RETRY).await;
                        continue;
                    }
                    tracing::debug!(group = %group_id, partition = tp.1, "share-partition state not reachable yet: {e:?}");
                    break;
                }
                Err(e) => {
                    let a = answers.entry(tp).or_default();
                    a.data.error_code = e.code();
                    a.news = true;
                    break;
                }
            }
        }
    }
    let readable = open;
    let max_wait = Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_MS_LIMIT) as u64);
    let deadline = tokio::time::Instant::now() + max_wait;
    let max_records = if req.max_records > 0 {
        req.max_records
    } else {
        DEFAULT_MAX_RECORDS
    } as usize;
    let limit = if acquire_mode == 1 {
        Limit::Records
    } else {
        Limit::Batches
    };
    let mut shutdown = node.shutdown_signal();
    let mut waiting = false;
    loop {
        let mut wakers: Vec<Pin<Box<dyn std::future::Future<Output = ()> + '_>>> = Vec::new();
        if waiting {
            for (_, p, _) in &readable {
                let mut n = Box::pin(p.data_arrived());
                n.as_mut().enable();
                wakers.push(n);
            }
            let mut r = Box::pin(ctx.shares().released());
            r.as_mut().enable();
            wakers.push(r);
        }
        let acquired = acquire_all(
            &member,
            &settings,
            &readable,
            &mut answers,
            max_records,
            limit,
            req.max_bytes,
        );
        let now = tokio::time::Instant::now();
        if acquired > 0
            || readable.is_empty()
            || epoch == -1
            || now >= deadline
            || *shutdown.borrow()
        {
            break;
        }
        if !waiting {
            waiting = true;
            continue;
        }
        tokio::select! {
            _ = futures::future::select_all(wakers) => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = shutdown.changed() => {}
        }
    }

    let mut resp = ShareFetchResponse::default();
    resp.acquisition_lock_timeout_ms = settings.limits.lock_ms.min(i32::MAX as i64) as i32;
    let mut by_topic: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    for ((topic_id, _), a) in answers {
        if a.news {
            by_topic.entry(topic_id).or_default().push(a.data);
        }
    }
    resp.responses = by_topic
        .into_iter()
        .map(|(topic_id, partitions)| {
            let mut t = ShareFetchableTopicResponse::default();
            t.topic_id = topic_id;
            t.partitions = partitions;
            t
        })
        .collect();
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
    resp
}

/// One pass over the readable partitions: acquires what each share-partition allows, within
/// `max_records` and `max_bytes` overall (the first partition with records may exceed the
/// bytes by one batch, as Fetch does). Returns the records acquired.
fn acquire_all(
    member: &MemberId,
    settings: &GroupSettings,
    readable: &[((Uuid, i32), Arc<Partition>, SharePartitionHandle)],
    answers: &mut BTreeMap<(Uuid, i32), Answer>,
    max_records: usize,
    mode: Limit,
    max_bytes: i32,
) -> usize {
    let now = crate::util::now_ms();
    let mut budget = max_bytes.max(0) as usize;
    let mut taken = 0usize;
    for ((topic_id, index), p, sp) in readable {
        if taken >= max_records {
            break;
        }
        let mut sp = sp.lock();
        // The log may have dropped what the share-partition still waits for (retention).
        let log_start = p.log_start_offset();
        if sp.start_offset() < log_start {
            sp.move_start(log_start);
        }
        let Some(offset) = sp.next_fetch_offset() else {
            continue;
        };
        let min_one = taken == 0;
        // A share fetch takes at most `max_records` (and the window): reading the client's whole
        // `max_bytes` (50 MiB from librdkafka) to acquire 500 records would copy and send the
        // rest for nothing.
        let limit = budget.min(SHARE_READ_BYTES);
        let read = match p.read(offset, limit, min_one, settings.read_committed) {
            Ok(r) => r,
            Err(e) => {
                let a = answers.entry((*topic_id, *index)).or_default();
                a.data.error_code = super::produce::log_error_code(&e).code();
                a.news = true;
                continue;
            }
        };
        if read.slice.is_empty() {
            continue;
        }
        let bytes = match read.slice.load() {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(partition = %p.tp, "share fetch read failed: {e}");
                let a = answers.entry((*topic_id, *index)).or_default();
                a.data.error_code = ResponseError::KafkaStorageError.code();
                a.news = true;
                continue;
            }
        };
        let aborted = if settings.read_committed {
            match read.slice.offsets() {
                Some((from, upper)) => p.aborted_transactions(from, upper).unwrap_or_default(),
                None => Vec::new(),
            }
        } else {
            Vec::new()
        };
        let spans =
            crate::share::batch_spans(&bytes, settings.read_committed.then_some(&aborted[..]));
        let batches: Vec<_> = spans.iter().map(|(s, _)| *s).collect();
        let acquired = sp.acquire(member, &batches, max_records - taken, mode, now);
        drop(sp);
        if acquired.is_empty() {
            continue;
        }
        let bytes = crate::share::acquired_bytes(&bytes, &spans, &acquired);
        let n: usize = acquired
            .iter()
            .map(|a| (a.last - a.first + 1) as usize)
            .sum();
        taken += n;
        budget = budget.saturating_sub(bytes.len());
        let a = answers.entry((*topic_id, *index)).or_default();
        a.news = true;
        a.data.records = Some(bytes);
        a.data.acquired_records = acquired
            .iter()
            .map(|r| {
                let mut ar = AcquiredRecords::default();
                ar.first_offset = r.first;
                ar.last_offset = r.last;
                ar.delivery_count = r.delivery_count;
                ar
            })
            .collect();
    }
    taken
}
