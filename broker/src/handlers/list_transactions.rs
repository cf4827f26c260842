//! ListTransactions: every transactional id the coordinator knows, filtered by state names,
//! producer ids and (v1+) by how long the transaction has been running
//! (`kafka-transactions.sh list`, `find-hanging`). State names the broker does not know are
//! echoed in `unknown_state_filters`, as Kafka does; expired (Dead) ids are never listed. v2
//! (KIP-1152) adds a regular expression the whole transactional id must match (Kafka's
//! `TransactionStateManager` with RE2/J; the `regex` crate is of the same RE2 family), an empty
//! or null one filtering nothing and one that does not compile answering
//! INVALID_REGULAR_EXPRESSION with nothing listed. ACLs: only the transactional ids the caller
//! may DESCRIBE are listed.

use std::collections::HashSet;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
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
    let pattern = match transactional_id_pattern(ctx.version, &req) {
        Ok(p) => p,
        Err(e) => {
            let mut resp = ListTransactionsResponse::default();
            resp.error_code = e.code();
            return resp;
        }
    };
    let now = crate::util::now_ms();
    for m in ctx.txn().list().await {
        let listed = m.state != TxnState::Dead
            && ctx.authorize(
                AclOperation::Describe,
                ResourceType::TransactionalId,
                &m.transactional_id,
            )
            && (producer_ids.is_empty() || producer_ids.contains(&m.producer_id))
            && (req.state_filters.is_empty() || states.contains(&m.state))
            && (min_duration_ms < 0 || now - m.txn_start_ms > min_duration_ms)
            && pattern
                .as_ref()
                .is_none_or(|p| p.is_match(&m.transactional_id));
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

/// The v2 pattern, anchored at both ends (Kafka's `Pattern.matcher(id).matches()`); `None`
/// below v2 and for an empty or null pattern.
fn transactional_id_pattern(
    version: i16,
    req: &ListTransactionsRequest,
) -> Result<Option<regex::Regex>, ResponseError> {
    match req.transactional_id_pattern.as_deref() {
        Some(p) if version >= 2 && !p.is_empty() => regex::Regex::new(&format!("^(?:{p})$"))
            .map(Some)
            .map_err(|_| ResponseError::InvalidRegularExpression),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(pattern: Option<&str>) -> ListTransactionsRequest {
        let mut r = ListTransactionsRequest::default();
        r.transactional_id_pattern = pattern.map(|p| StrBytes::from_string(p.to_string()));
        r
    }

    #[test]
    fn the_v2_pattern_must_match_the_whole_transactional_id() {
        let p = transactional_id_pattern(2, &req(Some("tx-[0-9]+")))
            .unwrap()
            .unwrap();
        assert!(p.is_match("tx-12"));
        assert!(!p.is_match("tx-12-b"));
        assert!(!p.is_match("my-tx-12"));
        assert!(transactional_id_pattern(2, &req(Some("")))
            .unwrap()
            .is_none());
        assert!(transactional_id_pattern(2, &req(None)).unwrap().is_none());
        assert!(transactional_id_pattern(1, &req(Some("x")))
            .unwrap()
            .is_none());
        assert_eq!(
            transactional_id_pattern(2, &req(Some("(unclosed"))).unwrap_err(),
            ResponseError::InvalidRegularExpression
        );
    }
}
