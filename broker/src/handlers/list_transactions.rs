//! ListTransactions: every transactional id the coordinator knows, filtered by state names,
//! producer ids and (v1+) by how long the transaction has been running
//! (`kafka-transactions.sh list`, `find-hanging`). State names the broker does not know are
//! echoed in `unknown_state_filters`, as Kafka does; expired (Dead) ids are never listed. ACLs:
//! only the transactional ids the caller may DESCRIBE are listed.

use std::collections::HashSet;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::txn::state::TxnState;

pub async fn handle(ctx: &Ctx<'_>, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let mut resp = ListTransactionsResponse::default();
    let mut states: HashSet<TxnState> = HashSet::new();
    for name in &req.state_filters {
        match TxnState::from_name(name.as_str()) {
            Some(s) => {
                states.insert(s);
            }
            None => resp.unknown_state_filters.push(name.clone()),
        }
    }
    let producer_ids: HashSet<i64> = req.producer_id_filters.iter().map(|p| p.0).collect();
    // duration_filter exists from v1; below, -1 (no filter).
    let min_duration_ms = if ctx.version >= 1 {
        req.duration_filter
    } else {
        -1
    };
    let now = crate::util::now_ms();
    for m in ctx.broker.txn.list().await {
        let listed = m.state != TxnState::Dead
            && ctx.authorize(
                AclOperation::Describe,
                ResourceType::TransactionalId,
                &m.transactional_id,
            )
            && (producer_ids.is_empty() || producer_ids.contains(&m.producer_id))
            && (req.state_filters.is_empty() || states.contains(&m.state))
            && (min_duration_ms < 0 || now - m.txn_start_ms > min_duration_ms);
        if listed {
            let mut s = TransactionState::default();
            s.transactional_id = kafka_protocol::messages::TransactionalId(StrBytes::from_string(
                m.transactional_id.clone(),
            ));
            s.producer_id = ProducerId(m.producer_id);
            s.transaction_state = StrBytes::from_static_str(m.state.name());
            resp.transaction_states.push(s);
        }
    }
    resp
}
