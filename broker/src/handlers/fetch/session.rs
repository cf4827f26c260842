//! Fetch's side of fetch sessions (KIP-227): the request's partitions as a session keeps them,
//! and at the answer either the new session a full fetch asked for or, for an incremental one,
//! which of the session's partitions the answer includes. The rules are the cache's
//! ([`crate::fetch_session::cache`]).

use kafka_protocol::messages::FetchRequest;
use kafka_protocol::ResponseError;

use super::{Answer, Wanted};
use crate::fetch_session::cache::{Answered, Context};
use crate::fetch_session::{FetchParams, PartitionKey, TopicKey, INVALID_SESSION_ID};
use crate::handlers::ctx::Ctx;

/// The partitions a request names, with what it asks of each, and those it forgets.
pub(super) fn request_partitions(
    req: &FetchRequest,
    by_id: bool,
) -> (Vec<(PartitionKey, FetchParams)>, Vec<PartitionKey>) {
    let topic_key = |name: &kafka_protocol::messages::TopicName, id: &uuid::Uuid| {
        if by_id {
            TopicKey::Id(*id)
        } else {
            TopicKey::Name(name.0.clone())
        }
    };
    let mut asked = Vec::new();
    for t in &req.topics {
        let topic = topic_key(&t.topic, &t.topic_id);
        asked.extend(t.partitions.iter().map(|p| {
            let key = PartitionKey {
                topic: topic.clone(),
                partition: p.partition,
            };
            let params = FetchParams {
                fetch_offset: p.fetch_offset,
                log_start_offset: p.log_start_offset,
                partition_max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: p.last_fetched_epoch,
            };
            (key, params)
        }));
    }
    let mut forgotten = Vec::new();
    for t in &req.forgotten_topics_data {
        let topic = topic_key(&t.topic, &t.topic_id);
        forgotten.extend(t.partitions.iter().map(|&partition| PartitionKey {
            topic: topic.clone(),
            partition,
        }));
    }
    (asked, forgotten)
}

/// What the session says of an answer.
pub(super) struct Verdict {
    /// The session id to answer with (0: none).
    pub(super) session_id: i32,
    /// For an incremental fetch, whether each partition is included (`None`: all are).
    pub(super) included: Option<Vec<bool>>,
}

/// The session's verdict on an answer; or the top-level error and session id to answer with
/// instead of any partition.
pub(super) fn conclude(
    ctx: &Ctx<'_>,
    context: &Context,
    wanted: &[Wanted<'_>],
    answers: &[Answer],
    follower: bool,
    by_id: bool,
) -> Result<Verdict, (i16, i32)> {
    let answered = || answers.iter().map(answered);
    match context {
        Context::Sessionless => Ok(Verdict {
            session_id: INVALID_SESSION_ID,
            included: None,
        }),
        Context::Full => {
            let partitions = wanted
                .iter()
                .zip(answered())
                .map(|(w, a)| (w.key.clone(), *w.params, a))
                .collect();
            let now_ms = crate::util::now_ms() as u64;
            let id = ctx
                .fetch_sessions()
                .lock()
                .create(now_ms, follower, by_id, partitions);
            Ok(Verdict {
                session_id: id,
                included: None,
            })
        }
        Context::Incremental { id, epoch, .. } => {
            let answered: Vec<Answered> = answered().collect();
            match ctx.fetch_sessions().lock().complete(*id, *epoch, &answered) {
                Ok(included) => Ok(Verdict {
                    session_id: *id,
                    included: Some(included),
                }),
                Err(e @ ResponseError::InvalidFetchSessionEpoch) => Err((e.code(), *id)),
                Err(e) => Err((e.code(), INVALID_SESSION_ID)),
            }
        }
        Context::Error(e) => Err((e.code(), INVALID_SESSION_ID)),
    }
}

/// What a partition's answer tells, as far as its session cares.
fn answered(a: &Answer) -> Answered {
    let d = &a.data;
    Answered {
        high_watermark: d.high_watermark,
        last_stable_offset: d.last_stable_offset,
        log_start_offset: d.log_start_offset,
        error_code: d.error_code,
        has_records: a.file.as_ref().is_some_and(|(r, _)| r.len > 0)
            || d.records.as_ref().is_some_and(|r| !r.is_empty()),
        diverging_epoch: d.diverging_epoch.epoch >= 0,
        preferred_read_replica: d.preferred_read_replica.0 >= 0,
    }
}
