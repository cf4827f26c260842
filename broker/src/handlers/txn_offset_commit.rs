//! TxnOffsetCommit: commits a group's offsets inside a producer's transaction (Kafka's
//! `sendOffsetsToTransaction`, second step). The offsets are written to `__consumer_offsets`
//! as a transactional batch of the producer and become the group's committed offsets only
//! when the transaction commits (an abort drops them).
//!
//! The group's offsets partition must be in the producer's ongoing transaction (added by
//! AddOffsetsToTxn; KIP-890 verification, with Produce's errors); the transactional id stays
//! locked until the offsets are written, so the transaction cannot end in between. v3+
//! (KIP-447) carry the consumer's member id, instance id and generation, checked like an
//! OffsetCommit's so that a zombie consumer cannot commit. Partitions of unknown topics get
//! UNKNOWN_TOPIC_OR_PARTITION.
//!
//! v6 (KIP-1319) names topics by id, a field `kafka-protocol` 0.18 does not have: the ids come
//! beside the request and go back beside the answer (`samsa_protocol::newer`); an id no topic has
//! answers its partitions UNKNOWN_TOPIC_ID, as Kafka's `KafkaApis` does.
//!
//! ACLs: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the
//! group (GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED).

use std::collections::HashMap;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TopicName, TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_protocol::newer::{Record, Value};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::{CommitRequest, OffsetToCommit, OFFSETS_TOPIC};
use crate::txn::state::TxnError;

/// The first version that names topics by id.
const TOPIC_IDS_VERSION: i16 = 6;

/// The answer, with the topic ids a v6 answer names its topics by (in the answer's order);
/// `added`: v6's topic ids.
pub async fn handle(
    ctx: &Ctx<'_>,
    mut req: TxnOffsetCommitRequest,
    added: &Record,
) -> (TxnOffsetCommitResponse, Option<Record>) {
    let by_id = ctx.version >= TOPIC_IDS_VERSION;
    let ids: Vec<uuid::Uuid> = (0..req.topics.len())
        .map(|i| {
            added
                .item("Topics", i)
                .and_then(|t| t.get("TopicId"))
                .and_then(Value::as_uuid)
                .unwrap_or_default()
        })
        .collect();
    if by_id {
        // An unknown id leaves the name empty: UNKNOWN_TOPIC_ID below.
        for (t, id) in req.topics.iter_mut().zip(&ids) {
            let name = super::ctx::topic_name_by_id(ctx.node(), id).unwrap_or_default();
            t.name = TopicName(StrBytes::from_string(name));
        }
    }
    let mut codes: HashMap<(String, i32), i16> = HashMap::new();
    let mut valid: Vec<(String, Vec<OffsetToCommit>)> = Vec::new();
    // WRITE on the transactional id, then READ on the group; a refusal applies to every
    // partition. Then READ on each topic.
    let refused_all = if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.transactional_id,
    ) {
        Some(ResponseError::TransactionalIdAuthorizationFailed)
    } else if !ctx.authorize(AclOperation::Read, ResourceType::Group, &req.group_id) {
        Some(ResponseError::GroupAuthorizationFailed)
    } else {
        None
    };
    // Known partitions: this broker's, or the metadata image's (see offset_commit).
    let image = ctx.controller().image();
    for t in &req.topics {
        let topic = ctx.topics().get(t.name.as_str());
        let refused = refused_all.or_else(|| {
            if by_id && t.name.is_empty() {
                return Some(ResponseError::UnknownTopicId);
            }
            (!ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.name))
                .then_some(ResponseError::TopicAuthorizationFailed)
        });
        let mut ok = Vec::new();
        for p in &t.partitions {
            if let Some(e) = refused {
                codes.insert((t.name.to_string(), p.partition_index), e.code());
            } else if !topic
                .as_ref()
                .is_some_and(|tp| tp.has_partition(p.partition_index))
                && !image
                    .topic_by_name(t.name.as_str())
                    .is_some_and(|ti| ti.partition(p.partition_index).is_some())
            {
                codes.insert(
                    (t.name.to_string(), p.partition_index),
                    ResponseError::UnknownTopicOrPartition.code(),
                );
            } else {
                ok.push(OffsetToCommit {
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if ctx.version >= 2 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                });
            }
        }
        if !ok.is_empty() {
            valid.push((t.name.to_string(), ok));
        }
    }
    let result = if valid.is_empty() {
        Ok(Vec::new())
    } else {
        commit(ctx, &req, valid.clone()).await
    };
    match result {
        Ok(results) => {
            for (topic, ps) in results {
                for (p, r) in ps {
                    codes.insert((topic.clone(), p), r.err().map_or(0, |e| e.code()));
                }
            }
        }
        Err(code) => {
            for (topic, ps) in &valid {
                for p in ps {
                    codes.insert((topic.clone(), p.partition), code);
                }
            }
        }
    }
    let mut resp = TxnOffsetCommitResponse::default();
    for t in &req.topics {
        let mut tr = TxnOffsetCommitResponseTopic::default();
        tr.name = t.name.clone();
        for p in &t.partitions {
            let mut pr = TxnOffsetCommitResponsePartition::default();
            pr.partition_index = p.partition_index;
            pr.error_code = codes
                .get(&(t.name.to_string(), p.partition_index))
                .copied()
                .unwrap_or(0);
            tr.partitions.push(pr);
        }
        resp.topics.push(tr);
    }
    let added = by_id.then(|| {
        Record::new().with(
            "Topics",
            Value::records(
                ids.iter()
                    .map(|id| Record::new().with("TopicId", Value::Uuid(*id))),
            ),
        )
    });
    (resp, added)
}

/// Verifies the transaction and writes the offsets; an error applies to every partition.
async fn commit(
    ctx: &Ctx<'_>,
    req: &TxnOffsetCommitRequest,
    topics: Vec<(String, Vec<OffsetToCommit>)>,
) -> Result<crate::group::PartitionResults, i16> {
    let group_id = req.group_id.to_string();
    let (producer_id, producer_epoch) = (req.producer_id.0, req.producer_epoch);
    let transactional_id = req.transactional_id.as_str();
    let offsets_partition = (
        OFFSETS_TOPIC.to_string(),
        ctx.groups().partition_for(&group_id),
    );
    // The transaction coordinator verifies the offsets partition is in the transaction
    // (KIP-890): under its lock when it is this broker, with a question when it is another.
    // From v5 (transaction version 2) the commit adds the partition itself, as a v12 produce
    // does; v4 clients know TRANSACTION_ABORTABLE (Kafka's
    // `txnOffsetCommitRequestVersionToTransactionSupportedOperation`).
    let add = ctx.version >= 5;
    let not_in_txn = if ctx.version == 4 {
        ResponseError::TransactionAbortable
    } else {
        ResponseError::InvalidTxnState
    };
    let txn =
        match crate::txn::verification::remote_coordinator(ctx.node(), ctx.txn(), transactional_id)
        {
            Some(coordinator) => {
                let refused = crate::txn::verification::verify(
                    ctx.node(),
                    coordinator,
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    std::slice::from_ref(&offsets_partition),
                    add,
                )
                .await;
                if let Some((e, why)) = refused.get(&offsets_partition) {
                    tracing::debug!(transactional_id, %why, "transactional offset commit refused");
                    return Err(match e {
                        ResponseError::InvalidTxnState => not_in_txn.code(),
                        e => e.code(),
                    });
                }
                None
            }
            None => {
                let mut txn = match ctx.txn().lock(ctx.node(), transactional_id).await {
                    Ok(txn) => txn,
                    Err(e) => return Err(e.code()),
                };
                if add {
                    let tv2 = txn.tv2;
                    let partitions = std::collections::BTreeSet::from([offsets_partition.clone()]);
                    match ctx
                        .txn()
                        .add_partitions_locked(
                            ctx.node(),
                            &mut txn,
                            producer_id,
                            producer_epoch,
                            &partitions,
                            tv2,
                        )
                        .await
                    {
                        Ok(()) => {}
                        Err(TxnError::ProducerFenced) => {
                            return Err(ResponseError::InvalidProducerEpoch.code())
                        }
                        Err(e) => return Err(e.code()),
                    }
                }
                match txn.verify_partitions(producer_id, producer_epoch, [&offsets_partition]) {
                    Ok(found) if found == [true] => {}
                    Ok(_) => return Err(not_in_txn.code()),
                    // As for Produce: a stale producer is told INVALID_PRODUCER_EPOCH.
                    Err(TxnError::ProducerFenced) => {
                        return Err(ResponseError::InvalidProducerEpoch.code())
                    }
                    Err(e) => return Err(e.code()),
                }
                Some(txn)
            }
        };
    let request = CommitRequest {
        group_id,
        generation_id: if ctx.version >= 3 {
            req.generation_id
        } else {
            -1
        },
        member_id: if ctx.version >= 3 {
            req.member_id.to_string()
        } else {
            String::new()
        },
        group_instance_id: if ctx.version >= 3 {
            req.group_instance_id.as_ref().map(|s| s.to_string())
        } else {
            None
        },
        retention_time_ms: -1,
        topics,
        api_version: ctx.version,
    };
    let result = ctx
        .groups()
        .commit_txn_offsets(ctx.node(), request, (producer_id, producer_epoch))
        .await
        .map_err(|e| e.code());
    drop(txn);
    result
}
