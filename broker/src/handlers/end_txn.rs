//! EndTxn: commits or aborts a producer's ongoing transaction. The coordinator writes
//! PrepareCommit/PrepareAbort to `__transaction_state`, then a COMMIT or ABORT marker to every
//! partition of the transaction, then CompleteCommit/CompleteAbort, before answering, so a
//! read_committed consumer sees the outcome as soon as the producer does. A retry of an
//! EndTxn that already completed the same way is answered with success (Kafka's behaviour).
//! From v5 (transaction version 2) every commit and abort bumps the producer epoch, and the
//! answer names the producer id and epoch to use next.
//! ACLs: WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use kafka_protocol::ResponseError;

pub async fn handle(ctx: &Ctx<'_>, req: EndTxnRequest) -> EndTxnResponse {
    let mut resp = EndTxnResponse::default();
    if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &req.transactional_id,
    ) {
        resp.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return resp;
    }
    let result = ctx
        .txn()
        .end_txn(
            ctx.node(),
            req.transactional_id.0.as_str(),
            req.producer_id.0,
            req.producer_epoch,
            req.committed,
            // EndTxn v5+ is sent only by clients of transaction version 2 (KIP-890).
            ctx.version >= 5,
        )
        .await;
    match result {
        Ok((producer_id, producer_epoch)) => {
            // v5 (KIP-890) reports the producer id and epoch to use next.
            if ctx.version >= 5 {
                resp.producer_id = ProducerId(producer_id);
                resp.producer_epoch = producer_epoch;
            }
        }
        Err(e) => resp.error_code = e.code_for(ctx.version, 2),
    }
    resp
}
