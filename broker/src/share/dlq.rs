//! Dead-letter queues for share groups (KIP-1191): a record a share group archives (REJECTed,
//! or released after its last allowed delivery) is written to the group's
//! `errors.deadletterqueue.topic.name`, exactly once, before it counts as archived.
//!
//! The share-partition holds such a record in the Archiving state, which is persisted with the
//! acknowledgement that caused it; one task per broker then writes the dead letter and moves the
//! record to Archived (persisted again). The write goes to partition `source partition mod
//! partitions` of the dead-letter topic, with the headers below and, when
//! `errors.deadletterqueue.copy.record.enable`, the record's key, value and headers. Before each
//! write the share-partition persists where a scan of that partition would find it
//! (`dlq_scan_from`); after a crash, the Archiving records are looked for from there and only
//! those not found are written, so none is written twice and none is lost.
//!
//! The dead-letter topic must start with `errors.deadletterqueue.topic.name.prefix` (checked when
//! the group config is set) and allow it with the topic config
//! `errors.deadletterqueue.group.enable=true`; it is created with that config on first use when
//! `errors.deadletterqueue.auto.create.topics.enable`. A partition led by another broker gets
//! its dead letters by Produce (acks=all) through the inter-broker channel, and is scanned
//! there by Fetch (from its high watermark when the scan start was taken, by ListOffsets). A
//! letter whose write failed is looked for before it is tried again, since a write that timed
//! out may have landed. A record whose dead letter cannot be written (the topic refuses it, or
//! a minute of attempts failed) is archived without one, logged at warn and counted.
//!
//! Headers (string values): `__dlq.errors.topic`, `__dlq.errors.partition`,
//! `__dlq.errors.offset`, `__dlq.errors.group`, `__dlq.errors.delivery.count`,
//! `__dlq.errors.message` (for people) and `__dlq.errors.cause` (`REJECTED` or
//! `DELIVERY_COUNT_LIMIT`, for programs).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Record, RecordBatchDecoder};
use kafka_protocol::ResponseError;

use super::partition::{ArchiveReason, State};
use super::{ShareCoordinator, ShareKey};
use crate::config::topic::TopicOverrides;
use crate::coordinator_write::CoordinatorWrite;
use crate::inter_broker::SendError;
use crate::internal_topics::InternalTopicSpec;
use crate::node::Node;
use crate::partition::Partition;

/// One archived record to dead-letter.
#[derive(Debug, Clone)]
pub struct Letter {
    pub key: ShareKey,
    pub offset: i64,
    pub delivery_count: i16,
    /// `None` after a restart (the cause was not persisted).
    pub reason: Option<ArchiveReason>,
    /// Found Archiving after a restart: look for it in the topic before writing it.
    pub recovered: bool,
    /// Attempts that failed for a reason that may pass (topic being created, leadership).
    pub attempts: u32,
}

/// Attempts before a dead letter is given up (about a minute at one a second).
const ATTEMPTS_MAX: u32 = 60;

#[derive(Default)]
pub struct DeadLetters {
    queue: parking_lot::Mutex<VecDeque<Letter>>,
    wake: tokio::sync::Notify,
}

impl DeadLetters {
    pub fn push(&self, letter: Letter) {
        self.queue.lock().push_back(letter);
        self.wake.notify_one();
    }

    pub fn pending(&self) -> usize {
        self.queue.lock().len()
    }
}

/// What became of one letter.
enum Outcome {
    /// Written now, or found written before a crash.
    Written,
    /// Not to be written (the record is no longer archiving, or the group has no DLQ now).
    Nothing,
    /// Archived without a dead letter, for this reason.
    GaveUp(String),
    /// Try again later.
    Retry(String),
}

impl ShareCoordinator {
    /// Writes dead letters as they come, until shutdown.
    pub async fn run_dead_letters(self: Arc<Self>, node: Arc<Node>) {
        loop {
            let next = self.dead_letters.queue.lock().pop_front();
            let Some(mut letter) = next else {
                tokio::select! {
                    _ = self.dead_letters.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                continue;
            };
            let outcome = self.dead_letter(&node, &letter).await;
            let key = letter.key.clone();
            let finish = match outcome {
                Outcome::Written => {
                    self.count_dead_lettered(&key.group);
                    true
                }
                Outcome::Nothing => false,
                Outcome::GaveUp(why) => {
                    tracing::warn!(group = %key.group, topic_id = %key.topic_id, partition = key.partition, offset = letter.offset, "archived without a dead letter: {why}");
                    self.count_dead_letter_failed(&key.group);
                    true
                }
                Outcome::Retry(why) => {
                    letter.attempts += 1;
                    if letter.attempts >= ATTEMPTS_MAX {
                        tracing::warn!(group = %key.group, topic_id = %key.topic_id, partition = key.partition, offset = letter.offset, "archived without a dead letter after {} attempts: {why}", letter.attempts);
                        self.count_dead_letter_failed(&key.group);
                        true
                    } else {
                        tracing::debug!(group = %key.group, offset = letter.offset, "dead letter postponed: {why}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        self.dead_letters.push(letter.clone());
                        false
                    }
                }
            };
            if finish {
                self.finish_archiving(&node, &key, letter.offset).await;
            }
        }
    }

    /// The record is archived for good: no longer held for its dead letter.
    async fn finish_archiving(&self, node: &Node, key: &ShareKey, offset: i64) {
        let Some(h) = self.existing(key) else {
            return;
        };
        {
            let mut st = h.lock();
            st.finish_archiving(offset);
            if st.archiving().is_empty() {
                st.dlq_scan_from = None;
            }
        }
        if let Err(e) = self.persist(node, key).await {
            tracing::warn!(group = %key.group, partition = key.partition, offset, "cannot write the share-partition state after a dead letter: {e:?}");
        }
    }

    async fn dead_letter(&self, node: &Node, letter: &Letter) -> Outcome {
        let key = &letter.key;
        let Some(h) = self.existing(key) else {
            return Outcome::Nothing;
        };
        if h.lock().record(letter.offset).map(|r| &r.state) != Some(&State::Archiving) {
            return Outcome::Nothing;
        }
        let settings = self.settings(node, &key.group);
        let Some(dlq) = settings.dlq_topic.clone() else {
            return Outcome::GaveUp(
                "the group no longer names errors.deadletterqueue.topic.name".into(),
            );
        };
        let Some(source) = node.topics.get_by_id(&key.topic_id) else {
            return Outcome::GaveUp("the record's topic was deleted".into());
        };
        let dlq_topic = match dlq_topic(node, &dlq).await {
            Ok(t) => t,
            Err(e) if e.may_pass() => return Outcome::Retry(e.to_string()),
            Err(e) => return Outcome::GaveUp(e.to_string()),
        };
        let index = key.partition.rem_euclid(dlq_topic.partition_count.max(1));
        // The dead letter goes to the partition's leader: here, or another broker (a Produce
        // with acks=all through the inter-broker channel).
        let target = match dlq_topic.led_partition(index) {
            Ok(p) => Target::Local(p.clone()),
            Err(ResponseError::NotLeaderOrFollower) => {
                let image = node.controller.image();
                match image
                    .topic_by_name(&dlq)
                    .and_then(|t| t.partition(index))
                    .map(|p| p.leader)
                    .filter(|l| *l >= 0 && *l != node.node_id)
                {
                    Some(leader) => Target::Remote(leader),
                    None => {
                        return Outcome::Retry(format!("partition {index} of {dlq} has no leader"))
                    }
                }
            }
            Err(e) => return Outcome::Retry(format!("partition {index} of {dlq}: {e:?}")),
        };
        // Written already? A letter found Archiving after a crash, or whose write failed (it
        // may have landed all the same: a timeout, a leader that moved), is looked for from
        // the persisted scan start, in the partition here or at its leader.
        let scan_from = h.lock().dlq_scan_from;
        if letter.recovered || letter.attempts > 0 {
            if let Some((_, from)) = scan_from.filter(|(p, _)| *p == index) {
                let found = match &target {
                    Target::Local(p) => find_letter(p, from, key, &source.name, letter.offset),
                    Target::Remote(leader) => {
                        find_letter_remote(
                            node,
                            *leader,
                            &dlq,
                            index,
                            from,
                            key,
                            &source.name,
                            letter.offset,
                        )
                        .await
                    }
                };
                match found {
                    Ok(true) => {
                        tracing::info!(group = %key.group, topic = %source.name, partition = key.partition, offset = letter.offset, "dead letter found already written to {dlq}-{index}; not writing it again");
                        return Outcome::Written;
                    }
                    Ok(false) => {}
                    Err(e) => return Outcome::Retry(format!("cannot scan {dlq}-{index}: {e}")),
                }
            }
        }
        // Where a scan would find this write, persisted before it: the partition's end here,
        // or its leader's high watermark (a write lands at or above both).
        if scan_from.is_none_or(|(sp, _)| sp != index) {
            let from = match &target {
                Target::Local(p) => p.log_end_offset(),
                Target::Remote(leader) => {
                    match remote_high_watermark(node, *leader, &dlq, index).await {
                        Ok(o) => o,
                        Err(e) => {
                            return Outcome::Retry(format!(
                                "cannot read where {dlq}-{index} ends at broker {leader}: {e}"
                            ))
                        }
                    }
                }
            };
            h.lock().dlq_scan_from = Some((index, from));
            if let Err(e) = self.persist(node, key).await {
                return Outcome::Retry(format!("cannot persist the scan start: {e:?}"));
            }
        }
        let original = if settings.dlq_copy {
            match source.led_partition(key.partition) {
                Ok(p) => read_record(p, letter.offset),
                Err(_) => None,
            }
        } else {
            None
        };
        let batch = encode_letter(
            &key.group,
            &source.name,
            key.partition,
            letter.offset,
            letter.delivery_count,
            letter.reason,
            settings.limits.delivery_limit,
            original,
        );
        match target {
            Target::Local(p) => {
                let now = crate::util::now_ms();
                let write = CoordinatorWrite::append(p.clone(), |p| {
                    p.append(batch, now, &node.group_commit)
                });
                match write {
                    Ok(w) => match w.replicated().await {
                        Ok(()) => Outcome::Written,
                        Err(e) => Outcome::Retry(format!("dead letter not replicated: {e}")),
                    },
                    Err(e) => Outcome::Retry(format!("cannot append the dead letter: {e}")),
                }
            }
            Target::Remote(leader) => {
                match produce_remote(node, leader, &dlq, index, batch).await {
                    Ok(()) => Outcome::Written,
                    Err(e) => Outcome::Retry(format!("dead letter to broker {leader}: {e}")),
                }
            }
        }
    }
}

/// Why the dead-letter topic takes no letter now.
#[derive(Debug, thiserror::Error)]
enum TopicError {
    #[error(
        "dead-letter topic {0} does not exist and errors.deadletterqueue.auto.create.topics.enable is false"
    )]
    NoAutoCreate(String),
    #[error("cannot create dead-letter topic {name}: {error:?}")]
    NotCreated { name: String, error: ResponseError },
    #[error("dead-letter topic {0} is not installed here yet")]
    NotInstalled(String),
    #[error(
        "topic {0} does not allow dead letters (errors.deadletterqueue.group.enable is not true)"
    )]
    NotAllowed(String),
}

impl TopicError {
    /// Whether a later attempt may find the topic ready (being created, or not installed here
    /// yet); otherwise the topic refuses dead letters and the letter is given up.
    fn may_pass(&self) -> bool {
        matches!(
            self,
            TopicError::NotCreated { .. } | TopicError::NotInstalled(_)
        )
    }
}

/// Why a dead letter could not be written to, or looked for in, a partition.
#[derive(Debug, thiserror::Error)]
pub enum DlqError {
    /// The request to the partition's leader has no answer.
    #[error(transparent)]
    Send(#[from] SendError),
    /// The leader's answer has no result for the partition.
    #[error("an answer without the partition")]
    NoPartition,
    /// The leader answered the partition with this error.
    #[error("{0:?}")]
    Refused(ResponseError),
    /// The partition's records could not be read or decoded.
    #[error("{0}")]
    Records(String),
}

impl DlqError {
    /// The leader's error `code` (an unknown code as UNKNOWN_SERVER_ERROR).
    fn refused(code: i16) -> DlqError {
        DlqError::Refused(
            ResponseError::try_from_code(code).unwrap_or(ResponseError::UnknownServerError),
        )
    }
}

/// Where a dead letter is written.
enum Target {
    Local(Arc<Partition>),
    Remote(i32),
}

/// Produces `batch` to `topic`-`partition` at its leader `peer`, acks=all.
async fn produce_remote(
    node: &Node,
    peer: i32,
    topic: &str,
    partition: i32,
    batch: Bytes,
) -> Result<(), DlqError> {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ApiKey, ProduceRequest, RequestKind, ResponseKind, TopicName};
    let mut pd = PartitionProduceData::default();
    pd.index = partition;
    pd.records = Some(batch);
    let mut td = TopicProduceData::default();
    td.name = TopicName(StrBytes::from_string(topic.to_string()));
    td.partition_data = vec![pd];
    let mut req = ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 30_000;
    req.topic_data = vec![td];
    let resp = crate::inter_broker::send(node, peer, ApiKey::Produce, 9, RequestKind::Produce(req))
        .await?;
    let ResponseKind::Produce(resp) = resp else {
        return Err(SendError::WrongAnswer.into());
    };
    let code = resp
        .responses
        .iter()
        .flat_map(|t| &t.partition_responses)
        .map(|p| p.error_code)
        .next()
        .unwrap_or(ResponseError::UnknownServerError.code());
    match code {
        0 => Ok(()),
        c => Err(DlqError::refused(c)),
    }
}

/// The dead-letter topic, created when absent and allowed.
async fn dlq_topic(node: &Node, name: &str) -> Result<Arc<crate::topics::Topic>, TopicError> {
    if node.topics.get(name).is_none() {
        let cfg = node.dynamic_configs.effective();
        if !cfg.bool("errors.deadletterqueue.auto.create.topics.enable") {
            return Err(TopicError::NoAutoCreate(name.to_string()));
        }
        let mut configs = TopicOverrides::new();
        configs.insert("errors.deadletterqueue.group.enable".into(), "true".into());
        let spec = InternalTopicSpec {
            name: name.to_string(),
            partitions: cfg.int("num.partitions").max(1),
            replication_factor: cfg.int("default.replication.factor").max(1) as i16,
            configs,
        };
        if let Err(error) = crate::internal_topics::ensure(node, &spec).await {
            return Err(TopicError::NotCreated {
                name: name.to_string(),
                error,
            });
        }
        tracing::info!(topic = name, "created a share group dead-letter topic");
    }
    let topic = node
        .topics
        .get(name)
        .ok_or_else(|| TopicError::NotInstalled(name.to_string()))?;
    let allowed = topic
        .overrides
        .read()
        .get("errors.deadletterqueue.group.enable")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !allowed {
        return Err(TopicError::NotAllowed(name.to_string()));
    }
    Ok(topic)
}

/// The record at `offset` of `p`, if the log still has it.
fn read_record(p: &Partition, offset: i64) -> Option<Record> {
    let read = p.read_for_follower(offset, 1 << 20, true).ok()?;
    let mut bytes = read.slice.load().ok()?;
    let sets = RecordBatchDecoder::decode_all(&mut bytes).ok()?;
    sets.into_iter()
        .flat_map(|s| s.records)
        .find(|r| r.offset == offset && !r.control)
}

fn header(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// The dead letter's batch: context headers, and the original record's key, value and headers
/// when given.
#[allow(clippy::too_many_arguments)]
fn encode_letter(
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    delivery_count: i16,
    reason: Option<ArchiveReason>,
    delivery_limit: i16,
    original: Option<Record>,
) -> Bytes {
    let (cause, message) = match reason {
        Some(ArchiveReason::Rejected) => ("REJECTED", "rejected by a share consumer".to_string()),
        Some(ArchiveReason::DeliveryLimit) => (
            "DELIVERY_COUNT_LIMIT",
            format!("delivered {delivery_count} times, the group's limit of {delivery_limit}"),
        ),
        None => (
            "UNKNOWN",
            "archived before a broker restart; the cause was not kept".to_string(),
        ),
    };
    let mut headers = kafka_protocol::indexmap::IndexMap::new();
    if let Some(o) = &original {
        for (k, v) in &o.headers {
            headers.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in [
        ("__dlq.errors.topic", topic.to_string()),
        ("__dlq.errors.partition", partition.to_string()),
        ("__dlq.errors.offset", offset.to_string()),
        ("__dlq.errors.group", group.to_string()),
        ("__dlq.errors.delivery.count", delivery_count.to_string()),
        ("__dlq.errors.message", message),
        ("__dlq.errors.cause", cause.to_string()),
    ] {
        headers.insert(header(k), Some(Bytes::from(v)));
    }
    crate::coordinator_write::one_record_batch(
        original
            .as_ref()
            .map_or_else(crate::util::now_ms, |o| o.timestamp),
        original.as_ref().and_then(|o| o.key.clone()),
        original.as_ref().and_then(|o| o.value.clone()),
        headers,
    )
}

/// The headers that name the dead letter of `offset` of `topic`'s partition `key.partition`
/// for `key.group`.
fn letter_names(key: &ShareKey, topic: &str, offset: i64) -> [(&'static str, String); 4] {
    [
        ("__dlq.errors.group", key.group.to_string()),
        ("__dlq.errors.topic", topic.to_string()),
        ("__dlq.errors.partition", key.partition.to_string()),
        ("__dlq.errors.offset", offset.to_string()),
    ]
}

/// Whether the batches in `bytes` hold a record with the headers `want`, and the offset after
/// the last record in them.
fn holds_letter(
    mut bytes: Bytes,
    want: &[(&'static str, String); 4],
    at: i64,
) -> Result<(bool, i64), DlqError> {
    let sets =
        RecordBatchDecoder::decode_all(&mut bytes).map_err(|e| DlqError::Records(e.to_string()))?;
    let mut next = at;
    for r in sets.into_iter().flat_map(|s| s.records) {
        next = next.max(r.offset + 1);
        let matches = want.iter().all(|(k, v)| {
            r.headers
                .get(&header(k))
                .and_then(|x| x.as_ref())
                .is_some_and(|x| x.as_ref() == v.as_bytes())
        });
        if matches {
            return Ok((true, next));
        }
    }
    Ok((false, next))
}

/// Whether `p` holds, from `from` to its end, the dead letter of `offset` of `topic`'s
/// partition `key.partition` for `key.group`.
fn find_letter(
    p: &Partition,
    from: i64,
    key: &ShareKey,
    topic: &str,
    offset: i64,
) -> Result<bool, DlqError> {
    let want = letter_names(key, topic, offset);
    let mut at = from.max(p.log_start_offset());
    let end = p.log_end_offset();
    while at < end {
        let read = p
            .read_for_follower(at, 1 << 20, true)
            .map_err(|e| DlqError::Records(e.to_string()))?;
        if read.slice.is_empty() {
            break;
        }
        let bytes = read
            .slice
            .load()
            .map_err(|e| DlqError::Records(e.to_string()))?;
        let (found, next) = holds_letter(bytes, &want, at)?;
        if found {
            return Ok(true);
        }
        if next <= at {
            break;
        }
        at = next;
    }
    Ok(false)
}

/// The same as [`find_letter`] for a partition led by broker `peer`: Fetch (as a consumer,
/// so up to its high watermark) from `from` until the end.
#[allow(clippy::too_many_arguments)]
async fn find_letter_remote(
    node: &Node,
    peer: i32,
    dlq: &str,
    partition: i32,
    from: i64,
    key: &ShareKey,
    topic: &str,
    offset: i64,
) -> Result<bool, DlqError> {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{ApiKey, FetchRequest, RequestKind, ResponseKind, TopicName};
    let want = letter_names(key, topic, offset);
    let mut at = from;
    loop {
        let mut fp = FetchPartition::default();
        fp.partition = partition;
        fp.fetch_offset = at;
        fp.partition_max_bytes = 1 << 20;
        fp.log_start_offset = -1;
        fp.current_leader_epoch = -1;
        let mut ft = FetchTopic::default();
        ft.topic = TopicName(StrBytes::from_string(dlq.to_string()));
        ft.partitions = vec![fp];
        let mut req = FetchRequest::default();
        req.replica_id = kafka_protocol::messages::BrokerId(-1);
        req.max_wait_ms = 0;
        req.min_bytes = 0;
        req.max_bytes = 1 << 20;
        req.isolation_level = 0;
        req.session_epoch = -1;
        req.topics = vec![ft];
        let resp =
            crate::inter_broker::send(node, peer, ApiKey::Fetch, 12, RequestKind::Fetch(req))
                .await?;
        let ResponseKind::Fetch(resp) = resp else {
            return Err(SendError::WrongAnswer.into());
        };
        let Some(p) = resp.responses.into_iter().flat_map(|t| t.partitions).next() else {
            return Err(DlqError::NoPartition);
        };
        match p.error_code {
            0 => {}
            c if c == ResponseError::OffsetOutOfRange.code() && at < p.log_start_offset => {
                at = p.log_start_offset;
                continue;
            }
            c => return Err(DlqError::refused(c)),
        }
        let bytes = p.records.unwrap_or_default();
        if bytes.is_empty() {
            return Ok(false);
        }
        let (found, next) = holds_letter(bytes, &want, at)?;
        if found {
            return Ok(true);
        }
        if next <= at || next >= p.high_watermark {
            return Ok(false);
        }
        at = next;
    }
}

/// The high watermark of `dlq`-`partition` at its leader `peer` (ListOffsets, latest).
pub(crate) async fn remote_high_watermark(
    node: &Node,
    peer: i32,
    dlq: &str,
    partition: i32,
) -> Result<i64, DlqError> {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, RequestKind, ResponseKind};
    let mut lp = ListOffsetsPartition::default();
    lp.partition_index = partition;
    lp.timestamp = -1;
    lp.current_leader_epoch = -1;
    let mut lt = ListOffsetsTopic::default();
    lt.name = TopicName(StrBytes::from_string(dlq.to_string()));
    lt.partitions = vec![lp];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.isolation_level = 0;
    req.topics = vec![lt];
    let resp = crate::inter_broker::send(
        node,
        peer,
        ApiKey::ListOffsets,
        7,
        RequestKind::ListOffsets(req),
    )
    .await?;
    let ResponseKind::ListOffsets(resp) = resp else {
        return Err(SendError::WrongAnswer.into());
    };
    let Some(p) = resp.topics.into_iter().flat_map(|t| t.partitions).next() else {
        return Err(DlqError::NoPartition);
    };
    match p.error_code {
        0 => Ok(p.offset),
        c => Err(DlqError::refused(c)),
    }
}
