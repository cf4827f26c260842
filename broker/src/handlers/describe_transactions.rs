//! DescribeTransactions: the coordinator's view of each named transactional id (state,
//! producer id and epoch, timeout, start time and partitions), for operators
//! (`kafka-transactions.sh describe`). Unknown ids get TRANSACTIONAL_ID_NOT_FOUND. ACLs: DESCRIBE
//! on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); partitions of topics the
//! caller may not DESCRIBE are left out.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use kafka_protocol::ResponseError;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let mut resp = DescribeTransactionsResponse::default();
    for id in req.transactional_ids {
        let mut s = TransactionState::default();
        s.transactional_id = id.clone();
        if !ctx.authorize(AclOperation::Describe, ResourceType::TransactionalId, &id.0) {
            s.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
            resp.transaction_states.push(s);
            continue;
        }
        match ctx.txn().describe(id.0.as_str()).await {
            Ok(m) => {
                s.transaction_state = StrBytes::from_static_str(m.state.name());
                s.transaction_timeout_ms = m.txn_timeout_ms;
                s.transaction_start_time_ms = m.txn_start_ms;
                s.producer_id = ProducerId(m.producer_id);
                s.producer_epoch = m.producer_epoch;
                let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                // Only the partitions of topics the caller may describe are shown.
                for (t, p) in m.partitions {
                    if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, &t) {
                        continue;
                    }
                    by_topic.entry(t).or_default().push(p);
                }
                for (topic, partitions) in by_topic {
                    let mut td = TopicData::default();
                    td.topic = TopicName(StrBytes::from_string(topic));
                    td.partitions = partitions;
                    s.topics.push(td);
                }
            }
            Err(e) => s.error_code = e.code(),
        }
        resp.transaction_states.push(s);
    }
    resp
}
