//! Produce: append each partition's record batches to its log, as the bytes the client sent
//! (the storage engine validates them and rewrites only base offset and leader epoch), then
//! answer per partition. acks=0 gets no response; an error under acks=0 closes the
//! connection, which is the only way Kafka can tell such a producer something went wrong.
//! In durable mode acks=all waits for the group-commit fsync of its batches.
//!
//! Idempotent producers: the log answers a retried batch with its original offsets and writes
//! nothing (see `samsa_storage::producer_state`). Transactional batches are verified against
//! the transaction coordinator first (KIP-890 part 1): the partition must be in the
//! producer's ongoing transaction, else INVALID_TXN_STATE; the transactional id stays locked
//! until the batches are appended, so the transaction cannot end in between. A keyless record
//! on a compacted topic is reported per record in `record_errors` (KIP-467, v8+).
//!
//! ACLs: WRITE on the transactional id for transactional records (else every partition gets
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic (TOPIC_AUTHORIZATION_FAILED).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ApiKey, BrokerId, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::replication::leader::AcksAll;
use samsa_storage::LogError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::cluster_view::LeaderHints;
use crate::partition::Partition;
use crate::txn::state::TxnError;
use crate::txn::TxnGuard;

/// Record errors reported per partition (KIP-467); a batch with more keyless records is still
/// refused as a whole, and the message says how many there were.
const RECORD_ERRORS_MAX: usize = 1_000;

/// The producer of a partition's batches, when they are transactional.
fn transactional_producer(records: Option<&Bytes>) -> Option<(i64, i16)> {
    let h = samsa_storage::batch::BatchHeader::parse(records?).ok()?;
    h.is_transactional()
        .then_some((h.producer_id, h.producer_epoch))
}

/// Errors the storage engine reports, as Kafka error codes.
pub fn log_error_code(e: &LogError) -> ResponseError {
    match e {
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        LogError::CorruptBatch(_) => ResponseError::CorruptMessage,
        LogError::InvalidRecord { .. } => ResponseError::InvalidRecord,
        LogError::MessageTooLarge { .. } => ResponseError::MessageTooLarge,
        LogError::Storage(_) => ResponseError::KafkaStorageError,
        LogError::InvalidRequest(_) => ResponseError::InvalidRequest,
        LogError::InvalidProducerEpoch(_) => ResponseError::InvalidProducerEpoch,
        LogError::OutOfOrderSequence(_) => ResponseError::OutOfOrderSequenceNumber,
        LogError::InvalidTxnState(_) => ResponseError::InvalidTxnState,
        LogError::CoordinatorFenced(_) => ResponseError::TransactionCoordinatorFenced,
    }
}

/// What a Produce request gets back.
pub enum Produced {
    /// acks=0 and nothing went wrong: no response.
    Nothing,
    Now(ProduceResponse),
    /// acks=all in durable mode: the response, once the batches' fsync has landed. The appends
    /// are done; the connection awaits this while it handles the requests behind it, so one
    /// producer's pipelined requests share fsyncs instead of waiting for one each.
    Later(std::pin::Pin<Box<dyn std::future::Future<Output = ProduceResponse>>>),
}

pub async fn handle(ctx: &Ctx<'_>, req: ProduceRequest) -> Result<Produced, String> {
    // Names are copied out of the request: a slice of the frame would share its buffer with
    // the records, and the log rewrites a batch's offsets in place only when nothing else
    // holds that buffer (otherwise it copies the batch). The records of the last partition
    // of a request are then the buffer's only holder.
    let ProduceRequest {
        transactional_id,
        acks,
        timeout_ms,
        topic_data,
        ..
    } = req;
    let transactional_id = transactional_id.map(|id| id.to_string());
    let version = ctx.version;
    let now = crate::util::now_ms();
    let mut resp = ProduceResponse::default();
    let mut waits = Vec::new();
    // acks=all writes waiting for the high watermark: (topic index, partition index,
    // partition, end offset, min.insync.replicas).
    let mut replication_waits = Vec::new();
    let mut first_error: Option<String> = None;
    let mut hints = LeaderHints::new(ctx.node(), &ctx.conn.listener.name);
    let transactional = topic_data.iter().any(|t| {
        t.partition_data
            .iter()
            .any(|p| transactional_producer(p.records.as_ref()).is_some())
    });
    // Kafka refuses transactional records without a transactional id, or with one the
    // principal may not WRITE, as unauthorized.
    let refuse_all = match (&transactional_id, transactional) {
        (None, true) => Some("transactional records without a transactional id".to_string()),
        (Some(id), true)
            if !ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id) =>
        {
            Some(ctx.denied(AclOperation::Write, ResourceType::TransactionalId, id))
        }
        _ => None,
    };
    // The coordinator verifies transactional batches (KIP-890): under its lock when it is this
    // broker, with one question per request when it is another.
    let remote = match (&transactional_id, transactional) {
        (Some(id), true) if refuse_all.is_none() => {
            crate::txn::verification::remote_coordinator(ctx.node(), ctx.txn(), id)
        }
        _ => None,
    };
    let mut txn_guard = match (&transactional_id, transactional) {
        (Some(id), true) if refuse_all.is_none() && remote.is_none() => {
            Some(ctx.txn().lock(ctx.node(), id).await)
        }
        _ => None,
    };
    // Transaction version 2 (Produce v12+, KIP-890 part 2): the partitions join the
    // transaction through the produce itself, in one write before the appends.
    let added_refused = match txn_guard.as_mut() {
        Some(Ok(guard)) if version >= ADD_PARTITION_VERSION => {
            add_to_transaction(ctx, guard, &topic_data).await
        }
        _ => None,
    };
    let remote_refused = match (remote, &transactional_id) {
        (Some(coordinator), Some(id)) => {
            let add = version >= ADD_PARTITION_VERSION;
            Some(verify_remotely(ctx, coordinator, id, &topic_data, add).await)
        }
        _ => None,
    };
    for topic_data in topic_data {
        let topic_id = topic_data.topic_id;
        let partition_data = last_per_partition(topic_data.partition_data);
        let topic = if ctx.version >= 13 {
            ctx.topics().get_by_id(&topic_id)
        } else {
            ctx.topics().get(topic_data.name.as_str())
        };
        // The name as requested is copied only when no topic answers to it (for the errors
        // and the response); a known topic's own name serves otherwise.
        let unknown_name = topic.is_none().then(|| topic_data.name.to_string());
        drop(topic_data.name);
        let mut tr = TopicProduceResponse::default();
        tr.topic_id = topic_id;
        // By name the check comes first, so that an unauthorized client cannot learn which
        // topics exist; an unknown topic id names nothing to check.
        let name = match (&topic, &unknown_name) {
            (Some(t), _) => t.name.as_str(),
            (None, n) => n.as_deref().unwrap_or_default(),
        };
        let unauthorized = (topic.is_some() || ctx.version < 13)
            && !ctx.authorize(AclOperation::Write, ResourceType::Topic, name);
        let min_insync = match (&topic, acks) {
            (Some(t), -1) => min_insync_replicas(ctx, t),
            _ => 1,
        };
        for pd in partition_data {
            let mut pr = PartitionProduceResponse::default();
            pr.index = pd.index;
            pr.base_offset = -1;
            pr.log_append_time_ms = -1;
            pr.log_start_offset = -1;
            let led = topic.as_ref().map(|t| t.led_partition(pd.index));
            // Kafka's order: the request's acks, authorization, the partition's existence and
            // the record set's shape (KafkaApis), then the transaction's verification, internal
            // topics, leadership and the ISR (ReplicaManager), then the log's own checks.
            let result = if !(-1..=1).contains(&acks) {
                Err(Refusal::new(
                    ResponseError::InvalidRequiredAcks,
                    format!("acks={acks} is not -1, 0 or 1"),
                ))
            } else if let Some(why) = &refuse_all {
                Err(Refusal::new(
                    ResponseError::TransactionalIdAuthorizationFailed,
                    why.clone(),
                ))
            } else if unauthorized {
                Err(Refusal::new(
                    ResponseError::TopicAuthorizationFailed,
                    ctx.denied(AclOperation::Write, ResourceType::Topic, name),
                ))
            } else if led.is_none() {
                // An unknown topic id is UNKNOWN_TOPIC_ID; a known topic without the partition
                // is UNKNOWN_TOPIC_OR_PARTITION, by id too.
                let unknown = if ctx.version >= 13 {
                    ResponseError::UnknownTopicId
                } else {
                    ResponseError::UnknownTopicOrPartition
                };
                Err(Refusal::new(unknown, format!("unknown topic {name}")))
            } else if let Some(Err(ResponseError::UnknownTopicOrPartition)) = led {
                Err(Refusal::new(
                    ResponseError::UnknownTopicOrPartition,
                    format!("unknown partition {name}-{}", pd.index),
                ))
            } else if let Err(e) =
                check_record_set(version, pd.records.as_deref().unwrap_or_default())
            {
                Err(e)
            } else if let Some(refusal) = added_refused
                .as_ref()
                .filter(|_| transactional_producer(pd.records.as_ref()).is_some())
            {
                // Kafka says why only when the coordinator could not add them now.
                let r = Refusal::new(refusal.0, refusal.1.clone());
                Err(match refusal.0 {
                    ResponseError::NotEnoughReplicas => r.said(),
                    _ => r,
                })
            } else if let Some((e, why)) = remote_refused
                .as_ref()
                .and_then(|r| r.get(&(name.to_string(), pd.index)))
            {
                // Produce v11 knows TRANSACTION_ABORTABLE, which Kafka answers it for a
                // partition outside the transaction (without a message).
                let e = match *e {
                    ResponseError::InvalidTxnState if version == ABORTABLE_VERSION => {
                        ResponseError::TransactionAbortable
                    }
                    e => e,
                };
                let refusal = Refusal::new(e, why.clone());
                // Kafka says why when verification refuses or cannot be done.
                Err(match e {
                    ResponseError::NotEnoughReplicas | ResponseError::InvalidTxnState => {
                        refusal.said()
                    }
                    _ => refusal,
                })
            } else if let Err(e) = remote_refused
                .is_none()
                .then(|| {
                    verify_transactional(
                        txn_guard.as_ref(),
                        version,
                        name,
                        pd.index,
                        pd.records.as_ref(),
                    )
                })
                .unwrap_or(Ok(()))
            {
                Err(e)
            } else if crate::topics::is_internal_topic(name)
                && ctx.header.client_id.as_deref() != Some(ADMIN_CLIENT_ID)
            {
                // Only the coordinators write their topics (Kafka lets an admin client with
                // Kafka's own client id through, for its tools).
                Err(Refusal::new(
                    ResponseError::InvalidTopicException,
                    format!("cannot append to internal topic {name}"),
                ))
            } else {
                match led.expect("checked above") {
                    Err(e) => Err(Refusal::new(
                        e,
                        format!("this broker does not lead {name}-{}", pd.index),
                    )),
                    // Kafka refuses an acks=all write before appending it when the ISR is
                    // smaller than min.insync.replicas.
                    Ok(p) if acks == -1 && !p.enough_replicas(min_insync) => Err(Refusal::new(
                        ResponseError::NotEnoughReplicas,
                        format!(
                            "{name}-{} has fewer in-sync replicas than min.insync.replicas={min_insync}",
                            pd.index
                        ),
                    )
                    .with_log_start(p.log_start_offset())),
                    Ok(p) => append(ctx, p, pd.records.unwrap_or_default(), now),
                }
            };
            match result {
                Ok((info, wait, partition)) => {
                    pr.base_offset = info.base_offset;
                    pr.log_append_time_ms = info.log_append_time_ms;
                    if ctx.version >= 5 {
                        pr.log_start_offset = partition.log_start_offset();
                    }
                    if acks == -1 {
                        replication_waits.push(ReplicationWait {
                            topic_index: resp.responses.len(),
                            partition_index: tr.partition_responses.len(),
                            partition: partition.clone(),
                            end: info.last_offset + 1,
                            min_insync,
                            leader_epoch: partition.leader_epoch(),
                        });
                    }
                    if let Some(rx) = wait {
                        waits.push((
                            resp.responses.len(),
                            tr.partition_responses.len(),
                            partition,
                            rx,
                        ));
                    }
                }
                Err(Refusal {
                    error: code,
                    message,
                    on_wire,
                    record_errors,
                    log_start_offset,
                }) => {
                    pr.error_code = code.code();
                    if ctx.version >= 5 {
                        pr.log_start_offset = log_start_offset;
                    }
                    if version >= 10
                        && matches!(
                            code,
                            ResponseError::NotLeaderOrFollower | ResponseError::FencedLeaderEpoch
                        )
                    {
                        if let Some((leader, epoch)) = hints.leader(name, pd.index) {
                            pr.current_leader.leader_id = BrokerId(leader);
                            pr.current_leader.leader_epoch = epoch;
                        }
                    }
                    if ctx.version >= 8 {
                        pr.error_message = on_wire.then(|| StrBytes::from_string(message.clone()));
                        pr.record_errors = record_errors;
                    }
                    first_error.get_or_insert(message);
                }
            }
            tr.partition_responses.push(pr);
        }
        tr.name = kafka_protocol::messages::TopicName(match (&topic, unknown_name) {
            (Some(t), _) => t.wire_name.clone(),
            (None, n) => StrBytes::from_string(n.unwrap_or_default()),
        });
        resp.responses.push(tr);
    }
    drop(txn_guard);
    if version >= 10 {
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
    drop(hints);
    // Durable mode: acks=all answers after the shared fsync; other acks only move the high
    // watermark when it lands.
    if acks != -1 {
        for (_, _, partition, rx) in waits {
            tokio::task::spawn_local(async move {
                let _ = rx.await;
                partition.synced();
            });
        }
    } else if !waits.is_empty() || replication_waits.iter().any(|w| !replicated(w)) {
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
        return Ok(Produced::Later(Box::pin(async move {
            for (topic_index, partition_index, partition, rx) in waits {
                let synced = rx.await;
                partition.synced();
                if let Some(e) = sync_failure(synced) {
                    let pr = &mut resp.responses[topic_index].partition_responses[partition_index];
                    pr.error_code = ResponseError::KafkaStorageError.code();
                    if version >= 8 {
                        pr.error_message = Some(StrBytes::from_string(e));
                    }
                }
            }
            // acks=all: answered once the high watermark passes each write (every in-sync
            // replica has it), within the request's timeout.
            for w in replication_waits {
                let ReplicationWait {
                    topic_index,
                    partition_index,
                    partition,
                    end,
                    min_insync,
                    leader_epoch,
                } = w;
                let pr = &mut resp.responses[topic_index].partition_responses[partition_index];
                if pr.error_code != 0 {
                    continue;
                }
                let refusal = loop {
                    let arrived = partition.data_arrived();
                    match partition.acks_all(end, min_insync, leader_epoch) {
                        // Kafka's answer when the leadership moves under a waiting write: the
                        // producer refreshes its metadata and sends the batch to the new
                        // leader (idempotence keeps it from being written twice).
                        None => break Some((
                            ResponseError::NotLeaderOrFollower,
                            format!("{} was written, but this broker stopped leading the partition (epoch {leader_epoch}) before it was replicated", partition.tp),
                        )),
                        Some(AcksAll::Done) => break None,
                        Some(AcksAll::NotEnoughReplicasAfterAppend) => break Some((
                            ResponseError::NotEnoughReplicasAfterAppend,
                            format!("{} was written, but its in-sync replicas fell below min.insync.replicas={min_insync} before it was replicated", partition.tp),
                        )),
                        Some(AcksAll::Waiting) => {}
                    }
                    if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                        break Some((
                            ResponseError::RequestTimedOut,
                            format!("{} was written, but not replicated to every in-sync replica within the request's timeout_ms={timeout_ms}", partition.tp),
                        ));
                    }
                };
                if let Some((code, message)) = refusal {
                    pr.error_code = code.code();
                    if version >= 8 {
                        pr.error_message = Some(StrBytes::from_string(message));
                    }
                }
            }
            resp
        })));
    }
    if acks == 0 {
        return match first_error {
            Some(e) => Err(format!(
                "acks=0 produce failed ({e}); closing the connection so the producer notices"
            )),
            None => Ok(Produced::Nothing),
        };
    }
    Ok(Produced::Now(resp))
}

type Appended = (
    samsa_storage::AppendInfo,
    Option<tokio::sync::oneshot::Receiver<Result<(), LogError>>>,
    Arc<Partition>,
);

/// An acks=all write waiting for its in-sync replicas.
struct ReplicationWait {
    topic_index: usize,
    partition_index: usize,
    partition: Arc<Partition>,
    /// The offset after the write.
    end: i64,
    min_insync: usize,
    /// The leader epoch the write was appended in.
    leader_epoch: i32,
}

/// Whether an acks=all write is already replicated as far as it must be.
fn replicated(w: &ReplicationWait) -> bool {
    w.partition.acks_all(w.end, w.min_insync, w.leader_epoch) != Some(AcksAll::Waiting)
}

/// The topic's `min.insync.replicas` (its override, else the broker's).
fn min_insync_replicas(ctx: &Ctx<'_>, topic: &crate::topics::Topic) -> usize {
    let broker = ctx.node().dynamic_configs.effective();
    let (value, _) =
        crate::config::topic::effective(&broker, &topic.overrides.read(), "min.insync.replicas");
    value
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

/// Produce v11: the first version whose clients know TRANSACTION_ABORTABLE (KIP-890 part 1).
const ABORTABLE_VERSION: i16 = 11;
/// Produce v12+: transaction version 2 clients, whose partitions join the transaction through
/// the produce (KIP-890 part 2; Kafka's `ADD_PARTITION` operation).
const ADD_PARTITION_VERSION: i16 = 12;

/// Adds the partitions of a transaction version 2 produce that are not in the producer's
/// ongoing transaction (starting one after a commit or abort), under the transactional id's
/// lock. Returns the refusal for every transactional partition when the coordinator refuses,
/// as Kafka's `AddPartitionsToTxnManager` maps it (a fenced producer INVALID_PRODUCER_EPOCH, a
/// coordinator busy with the transaction NOT_ENOUGH_REPLICAS, which producers retry).
async fn add_to_transaction(
    ctx: &Ctx<'_>,
    guard: &mut TxnGuard,
    topic_data: &[kafka_protocol::messages::produce_request::TopicProduceData],
) -> Option<(ResponseError, String)> {
    let mut needed = std::collections::BTreeSet::new();
    let mut producer = None;
    for t in topic_data {
        let topic = if ctx.version >= 13 {
            ctx.topics().get_by_id(&t.topic_id)
        } else {
            ctx.topics().get(t.name.as_str())
        };
        let Some(topic) = topic else { continue };
        for pd in &t.partition_data {
            let Some(p) = transactional_producer(pd.records.as_ref()) else {
                continue;
            };
            producer = Some(p);
            if topic.has_partition(pd.index) {
                needed.insert((topic.name.clone(), pd.index));
            }
        }
    }
    let (producer_id, producer_epoch) = producer?;
    let result = ctx
        .txn()
        .add_partitions_locked(
            ctx.node(),
            guard,
            producer_id,
            producer_epoch,
            &needed,
            true,
        )
        .await;
    let e = result.err()?;
    let code = match e {
        TxnError::ProducerFenced => ResponseError::InvalidProducerEpoch,
        TxnError::ConcurrentTransactions
        | TxnError::CoordinatorLoadInProgress
        | TxnError::CoordinatorNotAvailable
        | TxnError::NotCoordinator
        | TxnError::StorageError => ResponseError::NotEnoughReplicas,
        other => other.response_error(),
    };
    Some((
        code,
        format!("the transaction coordinator cannot add the partitions to the transaction of producer {producer_id}: {e}"),
    ))
}

/// Kafka's own admin client id (`AdminUtils.ADMIN_CLIENT_ID`): its Produce requests may write
/// internal topics.
const ADMIN_CLIENT_ID: &str = "__admin_client";

/// A partition's refusal, as Kafka answers it.
struct Refusal {
    error: ResponseError,
    /// Why, for the log and for an acks=0 producer's closed connection.
    message: String,
    /// Whether `message` is the answer's `error_message`: Kafka sends one only where it has a
    /// message of its own for the client (a record the log refused, a record set it cannot
    /// read); every other error goes out with none.
    on_wire: bool,
    /// KIP-467's per-record errors.
    record_errors: Vec<BatchIndexAndErrorMessage>,
    /// The partition's log start offset where the log itself refused the write (Kafka's
    /// `processFailedRecord`), else -1.
    log_start_offset: i64,
}

impl Refusal {
    fn new(error: ResponseError, message: String) -> Refusal {
        Refusal {
            error,
            message,
            on_wire: false,
            record_errors: Vec::new(),
            log_start_offset: -1,
        }
    }

    fn said(mut self) -> Refusal {
        self.on_wire = true;
        self
    }

    fn with_log_start(mut self, log_start_offset: i64) -> Refusal {
        self.log_start_offset = log_start_offset;
        self
    }
}

/// The shape Kafka demands of a partition's record set before anything else looks at it
/// (`ProduceRequest.validateRecords`, reading batches as `ByteBufferLogInputStream` does):
/// exactly one whole batch, of magic 2, not zstd-compressed before Produce v7. A length below
/// a record's minimum is a corrupt set, answered with why; everything else is INVALID_RECORD
/// without a message. CRCs and record counts are the log's to check.
fn check_record_set(version: i16, records: &[u8]) -> Result<(), Refusal> {
    const LENGTH_AT: usize = 8;
    const MAGIC_AT: usize = 16;
    const ATTRIBUTES_AT: usize = 21;
    // Kafka's smallest record of any format (`LegacyRecord.RECORD_OVERHEAD_V0`).
    const RECORD_OVERHEAD_MIN: i32 = 14;
    const ZSTD: i16 = 4;
    let log_overhead = samsa_storage::batch::LOG_OVERHEAD;
    let invalid = |why: &str| Err(Refusal::new(ResponseError::InvalidRecord, why.to_string()));
    // A batch's size, or None where no whole batch starts at `at` (Kafka's iterator ends).
    let batch_at = |at: usize| -> Result<Option<usize>, Refusal> {
        let rest = &records[at.min(records.len())..];
        if rest.len() < log_overhead {
            return Ok(None);
        }
        let length =
            i32::from_be_bytes(rest[LENGTH_AT..LENGTH_AT + 4].try_into().expect("4 bytes"));
        if length < RECORD_OVERHEAD_MIN {
            return Err(Refusal::new(
                ResponseError::CorruptMessage,
                format!("record size {length} is less than the minimum record overhead ({RECORD_OVERHEAD_MIN})"),
            )
            .said());
        }
        let size = log_overhead + length as usize;
        Ok((rest.len() >= size).then_some(size))
    };
    let Some(first) = batch_at(0)? else {
        return invalid("a Produce request must carry one record batch per partition");
    };
    let magic = records[MAGIC_AT] as i8;
    if magic != samsa_storage::batch::MAGIC_V2 {
        return invalid("Produce requests may only carry record batches of magic 2");
    }
    let attributes = i16::from_be_bytes([records[ATTRIBUTES_AT], records[ATTRIBUTES_AT + 1]]);
    if version < 7 && attributes & 0x07 == ZSTD {
        return Err(Refusal::new(
            ResponseError::UnsupportedCompressionType,
            format!("Produce v{version} may not carry zstd-compressed batches (v7+)"),
        ));
    }
    if batch_at(first)?.is_some() {
        return invalid("a Produce request may carry only one record batch per partition");
    }
    Ok(())
}

/// A topic's partition data with each partition once, its last occurrence kept: Kafka keys
/// a request's partitions by name, so a later entry replaces an earlier one.
fn last_per_partition(
    partition_data: Vec<kafka_protocol::messages::produce_request::PartitionProduceData>,
) -> Vec<kafka_protocol::messages::produce_request::PartitionProduceData> {
    if partition_data.len() < 2 {
        return partition_data;
    }
    let mut seen = std::collections::HashSet::with_capacity(partition_data.len());
    let mut kept: Vec<_> = partition_data
        .into_iter()
        .rev()
        .filter(|pd| seen.insert(pd.index))
        .collect();
    kept.reverse();
    kept
}

/// The transactional batches of a request whose coordinator is another broker, verified there
/// (skipping partitions where the producer's transaction is already open): the refused ones.
async fn verify_remotely(
    ctx: &Ctx<'_>,
    coordinator: i32,
    transactional_id: &str,
    topic_data: &[kafka_protocol::messages::produce_request::TopicProduceData],
    add: bool,
) -> std::collections::HashMap<(String, i32), crate::txn::verification::Refused> {
    let mut needed = Vec::new();
    let mut producer = None;
    for t in topic_data {
        let topic = if ctx.version >= 13 {
            ctx.topics().get_by_id(&t.topic_id)
        } else {
            ctx.topics().get(t.name.as_str())
        };
        let Some(topic) = topic else { continue };
        for pd in &t.partition_data {
            let Some((pid, epoch)) = transactional_producer(pd.records.as_ref()) else {
                continue;
            };
            producer = Some((pid, epoch));
            let open = topic
                .led_partition(pd.index)
                .is_ok_and(|p| p.in_transaction(pid, epoch));
            if !open {
                needed.push((topic.name.clone(), pd.index));
            }
        }
    }
    match producer {
        Some((pid, epoch)) if !needed.is_empty() => {
            crate::txn::verification::verify(
                ctx.node(),
                coordinator,
                transactional_id,
                pid,
                epoch,
                &needed,
                add,
            )
            .await
        }
        _ => Default::default(),
    }
}

/// KIP-890 part 1: a transactional batch is written only to a partition of its producer's
/// ongoing transaction. Errors as Kafka's `AddPartitionsToTxnManager` hands them to Produce.
fn verify_transactional(
    guard: Option<&Result<TxnGuard, TxnError>>,
    version: i16,
    topic: &str,
    partition: i32,
    records: Option<&Bytes>,
) -> Result<(), Refusal> {
    let Some((producer_id, producer_epoch)) = transactional_producer(records) else {
        return Ok(());
    };
    let refuse = |e: ResponseError, why: String| Err(Refusal::new(e, why));
    let m = match guard {
        Some(Ok(m)) => m,
        // A coordinator still loading its partition of `__transaction_state` (after a restart)
        // or no longer coordinating the id cannot verify now: Kafka answers NOT_ENOUGH_REPLICAS,
        // which producers retry, and says why.
        Some(Err(
            e @ (TxnError::CoordinatorLoadInProgress
            | TxnError::NotCoordinator
            | TxnError::CoordinatorNotAvailable),
        )) => {
            return refuse(
                ResponseError::NotEnoughReplicas,
                format!("the transaction coordinator cannot verify {topic}-{partition} now: {e}"),
            )
            .map_err(Refusal::said)
        }
        _ => {
            return refuse(
                ResponseError::InvalidProducerIdMapping,
                "the transactional id is not known to the coordinator".into(),
            )
        }
    };
    let tp = (topic.to_string(), partition);
    match m.verify_partitions(producer_id, producer_epoch, [&tp]) {
        Ok(found) if found == [true] => Ok(()),
        // Kafka's verification says why, in the answer too; Produce v11 knows
        // TRANSACTION_ABORTABLE, which Kafka answers it instead (without a message).
        Ok(_) if version == ABORTABLE_VERSION => refuse(
            ResponseError::TransactionAbortable,
            format!("{topic}-{partition} is not part of an ongoing transaction of producer {producer_id}"),
        ),
        Ok(_) => refuse(
            ResponseError::InvalidTxnState,
            format!("{topic}-{partition} is not part of an ongoing transaction of producer {producer_id}"),
        )
        .map_err(Refusal::said),
        // Producers expect INVALID_PRODUCER_EPOCH here, not PRODUCER_FENCED (Kafka maps it).
        Err(TxnError::ProducerFenced) => refuse(
            ResponseError::InvalidProducerEpoch,
            format!("producer {producer_id} epoch {producer_epoch} is fenced"),
        ),
        Err(e) => refuse(e.response_error(), e.to_string()),
    }
}

fn append(
    ctx: &Ctx<'_>,
    p: &Arc<Partition>,
    records: Bytes,
    now: i64,
) -> Result<Appended, Refusal> {
    let bytes = records.len();
    match p.append(records, now, &ctx.node().group_commit) {
        Ok((info, wait)) => {
            ctx.node()
                .metrics
                .produced(&p.tp.topic, bytes, info.record_count as u64);
            Ok((info, wait, p.clone()))
        }
        Err(e) => {
            if matches!(e, LogError::Storage(_)) {
                tracing::error!(partition = %p.tp, "append failed: {e}");
            } else {
                tracing::debug!(partition = %p.tp, "append refused: {e}");
            }
            let record_errors = match &e {
                LogError::InvalidRecord { record_errors, .. } => record_errors
                    .iter()
                    .take(RECORD_ERRORS_MAX)
                    .map(|r| {
                        let mut b = BatchIndexAndErrorMessage::default();
                        b.batch_index = r.batch_index;
                        b.batch_index_error_message =
                            Some(StrBytes::from_string(r.message.clone()));
                        b
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let code = log_error_code(&e);
            let mut refusal = Refusal::new(code, e.to_string());
            refusal.record_errors = record_errors;
            // Kafka's log answers a record it refuses with its own message and the log start
            // offset (a `RecordValidationException`); its producer-state and transaction
            // refusals with the log start offset only; size, corruption and disk errors with
            // neither.
            if matches!(e, LogError::InvalidRecord { .. }) {
                refusal = refusal.said();
            }
            if !matches!(
                e,
                LogError::MessageTooLarge { .. } | LogError::CorruptBatch(_) | LogError::Storage(_)
            ) {
                refusal = refusal.with_log_start(p.log_start_offset());
            }
            Err(refusal)
        }
    }
}

fn sync_failure(
    r: Result<Result<(), LogError>, tokio::sync::oneshot::error::RecvError>,
) -> Option<String> {
    match r {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("fsync failed: {e}")),
        Err(_) => Some("fsync was abandoned (shutting down)".into()),
    }
}

/// Produce v0-2 are advertised (librdkafka keys compression off the advertised minimum) but
/// carry pre-v2 message sets that Kafka 4 no longer stores: every partition is answered with
/// UNSUPPORTED_VERSION, in the version's own response layout (KAFKA-18659).
pub fn refuse_legacy_version(
    frame: &Bytes,
    version: i16,
    correlation_id: i32,
    out: &mut BytesMut,
) -> Result<(), String> {
    let mut buf = frame.clone();
    let malformed =
        || format!("malformed Produce v{version} request (correlation id {correlation_id})");
    let need = |buf: &Bytes, n: usize| {
        if buf.remaining() >= n {
            Ok(())
        } else {
            Err(malformed())
        }
    };
    need(&buf, 8)?;
    buf.advance(8);
    let read_string = |buf: &mut Bytes| -> Result<Bytes, String> {
        need(buf, 2)?;
        let len = buf.get_i16();
        if len < 0 {
            return Ok(Bytes::new());
        }
        need(buf, len as usize)?;
        Ok(buf.split_to(len as usize))
    };
    read_string(&mut buf)?; // client id
    need(&buf, 6)?;
    buf.advance(6); // acks, timeout
    need(&buf, 4)?;
    let topics = buf.get_i32();
    let mut body = BytesMut::new();
    body.put_i32(topics.max(0));
    for _ in 0..topics.max(0) {
        let name = read_string(&mut buf)?;
        need(&buf, 4)?;
        let partitions = buf.get_i32();
        body.put_i16(name.len() as i16);
        body.put_slice(&name);
        body.put_i32(partitions.max(0));
        for _ in 0..partitions.max(0) {
            need(&buf, 8)?;
            let index = buf.get_i32();
            let size = buf.get_i32();
            need(&buf, size.max(0) as usize)?;
            buf.advance(size.max(0) as usize);
            body.put_i32(index);
            body.put_i16(ResponseError::UnsupportedVersion.code());
            body.put_i64(-1);
            if version >= 2 {
                body.put_i64(-1);
            }
        }
    }
    if version >= 1 {
        body.put_i32(0);
    }
    samsa_protocol::response::frame_raw(out, ApiKey::Produce, version, correlation_id, &body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    fn batch(values: &[&str], compression: Compression) -> Vec<u8> {
        let records: Vec<Record> = values
            .iter()
            .enumerate()
            .map(|(i, v)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // offset - sequence constant: kafka-protocol's encoder keeps them in one batch.
                sequence: i as i32 - 1,
                timestamp: 1_700_000_000_000,
                key: None,
                value: Some(Bytes::copy_from_slice(v.as_bytes())),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            records.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .unwrap();
        buf.to_vec()
    }

    fn refusal(version: i16, records: &[u8]) -> Option<(ResponseError, bool)> {
        check_record_set(version, records)
            .err()
            .map(|r| (r.error, r.on_wire))
    }

    #[test]
    fn a_record_set_must_be_one_whole_batch_of_magic_2() {
        let one = batch(&["a", "b"], Compression::None);
        assert_eq!(refusal(9, &one), None);
        // A corrupt CRC is the log's to find: the shape is right.
        let mut crc = one.clone();
        *crc.last_mut().unwrap() ^= 0xff;
        assert_eq!(refusal(9, &crc), None);
        let invalid = Some((ResponseError::InvalidRecord, false));
        assert_eq!(refusal(9, &[]), invalid);
        assert_eq!(refusal(9, &one[..30]), invalid);
        assert_eq!(refusal(9, &[one.clone(), one.clone()].concat()), invalid);
        let mut magic_1 = one.clone();
        magic_1[16] = 1;
        assert_eq!(refusal(9, &magic_1), invalid);
        // Fewer bytes after the batch than a batch header: Kafka's reader sees no second batch.
        assert_eq!(refusal(9, &[one.clone(), vec![0; 11]].concat()), None);
        // A length below any record's is corrupt, and Kafka says so.
        assert_eq!(
            refusal(9, &[0; 70]),
            Some((ResponseError::CorruptMessage, true))
        );
        assert_eq!(
            refusal(9, &[one.clone(), vec![0; 20]].concat()),
            Some((ResponseError::CorruptMessage, true))
        );
    }

    #[test]
    fn zstd_needs_produce_v7() {
        let zstd = batch(&["a"], Compression::Zstd);
        assert_eq!(
            refusal(6, &zstd),
            Some((ResponseError::UnsupportedCompressionType, false))
        );
        assert_eq!(refusal(7, &zstd), None);
        assert_eq!(refusal(3, &batch(&["a"], Compression::Lz4)), None);
    }

    #[test]
    fn a_partition_named_twice_keeps_its_last_data() {
        use kafka_protocol::messages::produce_request::PartitionProduceData;
        let pd = |index: i32, len: usize| {
            let mut p = PartitionProduceData::default();
            p.index = index;
            p.records = Some(Bytes::from(vec![0; len]));
            p
        };
        let kept = last_per_partition(vec![pd(0, 1), pd(1, 2), pd(0, 3)]);
        let seen: Vec<_> = kept
            .iter()
            .map(|p| (p.index, p.records.as_ref().unwrap().len()))
            .collect();
        assert_eq!(seen, vec![(1, 2), (0, 3)]);
    }
}
