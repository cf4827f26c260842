//! AddPartitionsToTxn: adds partitions to a producer's ongoing transaction (starting one if
//! none is open), which must happen before the producer writes transactional batches to them.
//!
//! v0-3 carry one transaction (what clients send); v4+ carry many and may be `verify_only`
//! (KIP-890's check that partitions are already in the transaction, which Kafka brokers send
//! to the coordinator before a transactional produce). As in Kafka, partitions of unknown
//! topics fail with UNKNOWN_TOPIC_OR_PARTITION and then nothing is added: the others of that
//! transaction get OPERATION_NOT_ATTEMPTED. Otherwise the coordinator's answer applies to every
//! partition.
//!
//! ACLs: WRITE on the transactional id (else every partition gets
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED, the
//! others OPERATION_NOT_ATTEMPTED); v4+ also CLUSTER_ACTION on the cluster, as Kafka requires of
//! the brokers that send it.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};

/// Transactions one v4+ request may carry.
const TRANSACTIONS_PER_REQUEST_MAX: usize = 1_000;

pub async fn handle(ctx: &Ctx<'_>, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let mut resp = AddPartitionsToTxnResponse::default();
    if ctx.version < 4 {
        resp.results_by_topic_v3_and_below = one_transaction(
            ctx,
            req.v3_and_below_transactional_id.0.as_str(),
            req.v3_and_below_producer_id.0,
            req.v3_and_below_producer_epoch,
            &req.v3_and_below_topics,
            false,
        )
        .await;
        return resp;
    }
    // v4+ is sent by brokers (KIP-890 verification): Kafka requires CLUSTER_ACTION.
    if !ctx.authorize(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    ) {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    if req.transactions.len() > TRANSACTIONS_PER_REQUEST_MAX {
        resp.error_code = ResponseError::InvalidRequest.code();
        return resp;
    }
    for t in &req.transactions {
        let mut r = AddPartitionsToTxnResult::default();
        r.transactional_id = t.transactional_id.clone();
        r.topic_results = one_transaction(
            ctx,
            t.transactional_id.0.as_str(),
            t.producer_id.0,
            t.producer_epoch,
            &t.topics,
            t.verify_only,
        )
        .await;
        resp.results_by_transaction.push(r);
    }
    resp
}

async fn one_transaction(
    ctx: &Ctx<'_>,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
    verify_only: bool,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut partitions: Vec<(String, i32)> = Vec::new();
    let mut refused: BTreeMap<(String, i32), ResponseError> = BTreeMap::new();
    let txn_authorized = ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        transactional_id,
    );
    // Topics named with no partition are answered with none, as Kafka does.
    let mut empty_topics: Vec<String> = Vec::new();
    // Known partitions: this broker's, or the metadata image's (see offset_commit).
    let image = ctx.controller().image();
    for t in topics {
        let topic = ctx.topics().get(t.name.as_str());
        // Kafka refuses a client's internal topics as if the topic were not authorized: their
        // partitions join a transaction only through the coordinators (AddOffsetsToTxn); a
        // broker's (v4+) may name them (a transactional offset commit's).
        let topic_authorized = ctx.authorize(AclOperation::Write, ResourceType::Topic, &t.name)
            && (ctx.version >= 4 || !crate::topics::is_internal_topic(&t.name));
        if t.partitions.is_empty() {
            empty_topics.push(t.name.to_string());
        }
        for &p in &t.partitions {
            let key = (t.name.as_str().to_string(), p);
            if !txn_authorized {
                refused.insert(
                    key.clone(),
                    ResponseError::TransactionalIdAuthorizationFailed,
                );
            } else if !topic_authorized {
                refused.insert(key.clone(), ResponseError::TopicAuthorizationFailed);
            } else if !topic.as_ref().is_some_and(|tp| tp.has_partition(p))
                && !image
                    .topic_by_name(t.name.as_str())
                    .is_some_and(|ti| ti.partition(p).is_some())
            {
                refused.insert(key.clone(), ResponseError::UnknownTopicOrPartition);
            }
            partitions.push(key);
        }
    }
    partitions.sort();
    partitions.dedup();
    let codes: Vec<i16> = if !refused.is_empty() {
        partitions
            .iter()
            .map(|p| {
                refused
                    .get(p)
                    .unwrap_or(&ResponseError::OperationNotAttempted)
                    .code()
            })
            .collect()
    } else if verify_only {
        match ctx
            .txn()
            .verify(
                ctx.node(),
                transactional_id,
                producer_id,
                producer_epoch,
                &partitions,
            )
            .await
        {
            // Kafka's coordinator answers a partition outside the transaction
            // TRANSACTION_ABORTABLE; the broker asking maps it for its produce's version.
            Ok(found) => found
                .into_iter()
                .map(|ok| {
                    if ok {
                        0
                    } else {
                        ResponseError::TransactionAbortable.code()
                    }
                })
                .collect(),
            Err(e) => vec![e.code(); partitions.len()],
        }
    } else {
        let set: BTreeSet<(String, i32)> = partitions.iter().cloned().collect();
        let code = match ctx
            .txn()
            .add_partitions(
                ctx.node(),
                transactional_id,
                producer_id,
                producer_epoch,
                &set,
                // v4+ comes from a broker adding a transaction version 2 produce's partition.
                ctx.version >= 4,
            )
            .await
        {
            Ok(()) => 0,
            Err(e) => e.code_for(ctx.version, 2),
        };
        vec![code; partitions.len()]
    };
    let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for topic in empty_topics {
        let mut t = AddPartitionsToTxnTopicResult::default();
        t.name = kafka_protocol::messages::TopicName(topic.into());
        out.push(t);
    }
    for ((topic, index), code) in partitions.into_iter().zip(codes) {
        if out.last().is_none_or(|t| t.name.as_str() != topic) {
            let mut t = AddPartitionsToTxnTopicResult::default();
            t.name = kafka_protocol::messages::TopicName(topic.into());
            out.push(t);
        }
        let mut r = AddPartitionsToTxnPartitionResult::default();
        r.partition_index = index;
        r.partition_error_code = code;
        out.last_mut().expect("pushed").results_by_partition.push(r);
    }
    out
}
