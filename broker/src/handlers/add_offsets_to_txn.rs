//! AddOffsetsToTxn: adds the group's partition of `__consumer_offsets` to the producer's
//! transaction, so that the offsets it then commits with TxnOffsetCommit are committed or
//! aborted with the transaction's data (Kafka's `sendOffsetsToTransaction`, first step).
//! ACLs: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the
//! group (GROUP_AUTHORIZATION_FAILED).

use std::collections::BTreeSet;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::group::OFFSETS_TOPIC;
use kafka_protocol::ResponseError;

pub async fn handle(ctx: &Ctx<'_>, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let mut resp = AddOffsetsToTxnResponse::default();
    let group_id = req.group_id.as_str();
    let transactional_id = req.transactional_id.as_str();
    if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        transactional_id,
    ) {
        resp.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return resp;
    }
    if !ctx.authorize(AclOperation::Read, ResourceType::Group, group_id) {
        resp.error_code = ResponseError::GroupAuthorizationFailed.code();
        return resp;
    }
    // The group's partition of __consumer_offsets must exist to be part of a transaction.
    let spec = ctx.groups().offsets_topic_spec();
    if let Err(e) = crate::internal_topics::ensure(ctx.node(), &spec).await {
        resp.error_code = e.code();
        return resp;
    }
    let partition = ctx.groups().partition_for(group_id);
    let partitions = BTreeSet::from([(OFFSETS_TOPIC.to_string(), partition)]);
    if let Err(e) = ctx
        .txn()
        .add_partitions(
            ctx.node(),
            req.transactional_id.as_str(),
            req.producer_id.0,
            req.producer_epoch,
            &partitions,
            false,
        )
        .await
    {
        resp.error_code = e.code_for(ctx.version, 2);
    }
    resp
}
