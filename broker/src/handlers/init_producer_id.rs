//! InitProducerId: a producer id and epoch for an idempotent or transactional producer.
//!
//! Without a transactional id (an idempotent producer) every call gets a fresh producer id with
//! epoch 0, as Kafka does; such a producer recovers from errors by bumping its epoch itself
//! (KIP-360), which the partitions accept when the new epoch starts at sequence 0. With a
//! transactional id the transaction coordinator bumps the id's epoch (fencing any older
//! producer of that id), aborts a transaction it left open (answering CONCURRENT_TRANSACTIONS
//! so the client retries), and rotates to a new producer id once the epoch is exhausted.
//! v3+ may name the producer id and epoch the client holds, to recover without being fenced.
//!
//! ACLs: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one,
//! IDEMPOTENT_WRITE on the cluster or WRITE on at least one topic (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::txn::state::TxnError;

pub async fn handle(ctx: &Ctx<'_>, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let mut resp = InitProducerIdResponse::default();
    let result = match unauthorized(ctx, &req) {
        Some(e) => Err(e.code()),
        None => init(ctx, &req)
            .await
            .map_err(|e| e.code_for(ctx.version, 4)),
    };
    match result {
        Ok((producer_id, producer_epoch)) => {
            resp.producer_id = ProducerId(producer_id);
            resp.producer_epoch = producer_epoch;
        }
        Err(code) => {
            resp.error_code = code;
            resp.producer_id = ProducerId(-1);
            resp.producer_epoch = -1;
        }
    }
    resp
}

/// A transactional producer needs WRITE on its transactional id; an idempotent one
/// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), as in Kafka.
fn unauthorized(ctx: &Ctx<'_>, req: &InitProducerIdRequest) -> Option<ResponseError> {
    match &req.transactional_id {
        Some(id) if !ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id) => {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        }
        None if !ctx.authorize(
            AclOperation::IdempotentWrite,
            ResourceType::Cluster,
            CLUSTER_NAME,
        ) && !ctx.authorize_any(AclOperation::Write, ResourceType::Topic) =>
        {
            Some(ResponseError::ClusterAuthorizationFailed)
        }
        _ => None,
    }
}

async fn init(ctx: &Ctx<'_>, req: &InitProducerIdRequest) -> Result<(i64, i16), TxnError> {
    // Kafka's KafkaApis: both or neither of producer id and epoch.
    let expected = match (req.producer_id.0, req.producer_epoch) {
        (-1, -1) => None,
        (-1, _) | (_, -1) => return Err(TxnError::InvalidRequest),
        (pid, epoch) => Some((pid, epoch)),
    };
    let txn = &ctx.txn();
    match &req.transactional_id {
        None => Ok((txn.new_producer_id(ctx.node()).await?, 0)),
        Some(id) => {
            // A client finds the coordinator first, which creates `__transaction_state`; one
            // that comes straight here gets it created too (and NOT_COORDINATOR if another
            // broker coordinates the id).
            crate::internal_topics::ensure(ctx.node(), &txn.state_topic_spec())
                .await
                .map_err(|_| TxnError::CoordinatorNotAvailable)?;
            txn.init_producer_id(
                ctx.node(),
                id.0.as_str(),
                req.transaction_timeout_ms,
                expected,
            )
            .await
        }
    }
}
