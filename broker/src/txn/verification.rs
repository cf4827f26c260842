//! KIP-890 part 1 across brokers: before a partition leader appends a transactional batch it
//! asks the transaction coordinator, when that is another broker, whether the partition is part
//! of the producer's ongoing transaction (AddPartitionsToTxn v4 with `verify_only`, as Kafka's
//! `AddPartitionsToTxnManager` does). A partition whose producer already has a transaction open
//! in it at the same epoch needs no question: the coordinator added it before the first batch.
//!
//! Unlike Kafka, no verification guard is kept in the partition's producer state between the
//! answer and the append, so a batch delayed past the end of its transaction by more than the
//! coordinator's answer takes can still open a new one there; it is aborted by the transaction
//! timeout of the producer's next transaction or by a new epoch.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, ProducerId, RequestKind, ResponseKind, TopicName,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster_view::ClusterView;
use crate::node::Node;

/// AddPartitionsToTxn as Kafka 4.x brokers send it to verify.
const VERIFY_VERSION: i16 = 5;

/// A partition's refusal: its error and why.
pub type Refused = (ResponseError, String);

/// The coordinator of `transactional_id` when it is another broker: its id (None when this
/// broker coordinates it, or no broker does yet).
pub fn remote_coordinator(
    node: &Node,
    txn: &super::TransactionCoordinator,
    transactional_id: &str,
) -> Option<i32> {
    let view = ClusterView::new(node);
    let topic = view.topic(crate::txn::TRANSACTION_STATE_TOPIC)?;
    let index = txn.partition_for(transactional_id);
    let leader = view.partition(&topic, index)?.leader?;
    (leader != node.node_id).then_some(leader)
}

/// Asks `coordinator` whether each of `partitions` is in the ongoing transaction of
/// `producer_id`/`producer_epoch`, or with `add` (a transaction version 2 produce, KIP-890
/// part 2) to add those that are not; the refused ones with their error (as Kafka hands them to
/// Produce: a coordinator that cannot be asked is NOT_ENOUGH_REPLICAS, which producers retry).
pub async fn verify(
    node: &Node,
    coordinator: i32,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partitions: &[(String, i32)],
    add: bool,
) -> HashMap<(String, i32), Refused> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        topics.entry(t).or_default().push(*p);
    }
    let mut t = AddPartitionsToTxnTransaction::default();
    t.transactional_id = TransactionalId(StrBytes::from_string(transactional_id.to_string()));
    t.producer_id = ProducerId(producer_id);
    t.producer_epoch = producer_epoch;
    t.verify_only = !add;
    t.topics = topics
        .into_iter()
        .map(|(name, indexes)| {
            let mut x = AddPartitionsToTxnTopic::default();
            x.name = TopicName(StrBytes::from_string(name.to_string()));
            x.partitions = indexes;
            x
        })
        .collect();
    let mut req = AddPartitionsToTxnRequest::default();
    req.transactions = vec![t];
    let unavailable = |why: String| -> HashMap<(String, i32), Refused> {
        partitions
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    (
                        ResponseError::NotEnoughReplicas,
                        format!("the transaction coordinator (broker {coordinator}) cannot verify the partition now: {why}"),
                    ),
                )
            })
            .collect()
    };
    let answer = crate::inter_broker::send(
        node,
        coordinator,
        ApiKey::AddPartitionsToTxn,
        VERIFY_VERSION,
        RequestKind::AddPartitionsToTxn(req),
    )
    .await;
    let resp = match answer {
        Ok(ResponseKind::AddPartitionsToTxn(r)) => r,
        Ok(_) => return unavailable(crate::inter_broker::SendError::WrongAnswer.to_string()),
        Err(why) => return unavailable(why.to_string()),
    };
    if resp.error_code != 0 {
        return unavailable(format!("error {}", resp.error_code));
    }
    let mut refused = HashMap::new();
    for r in resp.results_by_transaction {
        for t in r.topic_results {
            for p in t.results_by_partition {
                let code = p.partition_error_code;
                if code == 0 {
                    continue;
                }
                let key = (t.name.to_string(), p.partition_index);
                let e =
                    ResponseError::try_from_code(code).unwrap_or(ResponseError::UnknownServerError);
                let refusal = match e {
                    ResponseError::NotCoordinator
                    | ResponseError::CoordinatorNotAvailable
                    | ResponseError::CoordinatorLoadInProgress
                    | ResponseError::ConcurrentTransactions => (
                        ResponseError::NotEnoughReplicas,
                        format!(
                            "the transaction coordinator cannot verify {}-{} now ({e:?})",
                            key.0, key.1
                        ),
                    ),
                    // Producers expect INVALID_PRODUCER_EPOCH here, not PRODUCER_FENCED.
                    ResponseError::ProducerFenced => (
                        ResponseError::InvalidProducerEpoch,
                        format!("producer {producer_id} epoch {producer_epoch} is fenced"),
                    ),
                    // Kafka's coordinators answer TRANSACTION_ABORTABLE for a partition outside
                    // the transaction; the produce maps it by its version.
                    ResponseError::InvalidTxnState | ResponseError::TransactionAbortable => (
                        ResponseError::InvalidTxnState,
                        format!(
                            "{}-{} is not part of an ongoing transaction of producer {producer_id}",
                            key.0, key.1
                        ),
                    ),
                    other => (
                        other,
                        format!(
                            "the transaction coordinator refused {}-{}: {other:?}",
                            key.0, key.1
                        ),
                    ),
                };
                refused.insert(key, refusal);
            }
        }
    }
    refused
}
