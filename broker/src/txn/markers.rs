//! Transaction markers (Kafka's `TransactionMarkerChannelManager`): a transaction is complete
//! once every partition it wrote to has its COMMIT or ABORT marker. The coordinator writes the
//! markers of the partitions this broker leads itself and sends the others to their leaders in
//! one WriteTxnMarkers per broker; a leader writes them with [`write_local`], which the
//! WriteTxnMarkers handler runs too.

use std::collections::BTreeMap;

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    ApiKey, ProducerId, RequestKind, ResponseKind, TopicName, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_storage::{EndTxnMarker, LogError};

use crate::coordinator_write::CoordinatorWrite;
use crate::group::GroupCoordinator;
use crate::node::Node;

/// WriteTxnMarkers as Kafka 4.x sends it.
const WRITE_TXN_MARKERS_VERSION: i16 = 1;

/// What became of the markers of a transaction.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Partitions whose leader could not write its marker now (no leader, not reachable,
    /// a storage error): the coordinator tries again later.
    pub retry: Vec<(String, i32)>,
}

/// A marker refusal that ends the attempt for good: the producer or the coordinator was
/// fenced, so nothing this transaction does can change that partition any more (as Kafka's
/// coordinator stops sending then).
fn fenced(code: i16) -> bool {
    code == ResponseError::InvalidProducerEpoch.code()
        || code == ResponseError::TransactionCoordinatorFenced.code()
        || code == ResponseError::ProducerFenced.code()
}

/// Writes the marker of `producer_id`/`producer_epoch` to each of `partitions` that this broker
/// leads and waits until they are durable where the partition asks for it and in every in-sync
/// replica's log (Kafka writes markers with acks=all: one lost with its leader would leave the
/// transaction open in that partition, and its readers at the last stable offset). Returns each
/// partition's error code (0: written). A marker in a partition of `__consumer_offsets` also
/// makes the group coordinator apply (or drop) the transaction's offsets there.
pub async fn write_local(
    node: &Node,
    groups: &GroupCoordinator,
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    partitions: &[(String, i32)],
) -> Vec<i16> {
    let now = crate::util::now_ms();
    let mut codes = vec![0i16; partitions.len()];
    let mut waits = Vec::new();
    for (i, (topic, index)) in partitions.iter().enumerate() {
        let t = node.topics.get(topic);
        let p = match crate::topics::led_partition(t.as_ref(), *index) {
            Ok(p) => p.clone(),
            Err(e) => {
                codes[i] = e.code();
                continue;
            }
        };
        let tp = p.tp.clone();
        match CoordinatorWrite::append(p, |p| {
            p.append_marker(producer_id, producer_epoch, marker, now, &node.group_commit)
        }) {
            Ok(write) => waits.push((i, write)),
            Err(LogError::Storage(e)) => {
                tracing::error!(partition = %tp, "cannot write a transaction marker: {e}");
                codes[i] = ResponseError::KafkaStorageError.code();
            }
            Err(e) => {
                tracing::warn!(partition = %tp, "transaction marker refused: {e}");
                codes[i] = match e {
                    LogError::InvalidProducerEpoch(_) => ResponseError::InvalidProducerEpoch,
                    _ => ResponseError::TransactionCoordinatorFenced,
                }
                .code();
            }
        }
    }
    for (i, write) in waits {
        let tp = write.partition.tp.clone();
        if let Err(e) = write.replicated().await {
            tracing::warn!(partition = %tp, "a transaction marker was written but not replicated: {e}");
            codes[i] = e.response_error().code();
            continue;
        }
        // The group coordinator makes the transaction's offsets visible (or drops them) once
        // the marker is in its partition, as Kafka's does.
        if partitions[i].0 == crate::group::OFFSETS_TOPIC {
            groups.complete_txn(producer_id, partitions[i].1, marker.commit);
        }
    }
    codes
}

/// Writes the markers of a transaction everywhere: the partitions this broker leads itself,
/// the others through their leaders. Partitions of topics deleted meanwhile need none.
pub async fn write_all(
    node: &Node,
    groups: &GroupCoordinator,
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    partitions: &[(String, i32)],
) -> Outcome {
    let image = node.controller.image();
    let mut here = Vec::new();
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    let mut outcome = Outcome::default();
    for (topic, index) in partitions {
        let local = node.topics.get(topic);
        if local.as_ref().is_some_and(|t| !t.managed) {
            here.push((topic.clone(), *index));
            continue;
        }
        let Some(t) = image.topic_by_name(topic) else {
            continue; // deleted: nothing left to mark
        };
        match t.partition(*index).map(|p| p.leader) {
            None => continue,
            Some(leader) if leader == node.node_id => here.push((topic.clone(), *index)),
            Some(leader) if leader < 0 => outcome.retry.push((topic.clone(), *index)),
            Some(leader) => by_leader
                .entry(leader)
                .or_default()
                .push((topic.clone(), *index)),
        }
    }
    let codes = write_local(node, groups, producer_id, producer_epoch, marker, &here).await;
    for (p, code) in here.into_iter().zip(codes) {
        judge(&mut outcome, p, code);
    }
    // One request per leader, all in flight together.
    let sends = by_leader.into_iter().map(|(leader, parts)| async move {
        let answer = send(node, leader, producer_id, producer_epoch, marker, &parts).await;
        (leader, parts, answer)
    });
    for (leader, parts, answer) in futures::future::join_all(sends).await {
        match answer {
            Ok(codes) => {
                for p in parts {
                    let code = codes
                        .get(&p)
                        .copied()
                        .unwrap_or(ResponseError::UnknownServerError.code());
                    judge(&mut outcome, p, code);
                }
            }
            Err(why) => {
                tracing::warn!(broker = leader, %why, "cannot send transaction markers; retrying later");
                outcome.retry.extend(parts);
            }
        }
    }
    outcome
}

fn judge(outcome: &mut Outcome, partition: (String, i32), code: i16) {
    if code == 0 {
        return;
    }
    if fenced(code) {
        tracing::warn!(topic = %partition.0, partition = partition.1, code, "transaction marker refused for good");
    } else if code == ResponseError::UnknownTopicOrPartition.code() {
        // Deleted meanwhile: nothing left to mark.
    } else {
        outcome.retry.push(partition);
    }
}

/// WriteTxnMarkers of one transaction's partitions to their leader `leader`: the error code of
/// each partition.
async fn send(
    node: &Node,
    leader: i32,
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    partitions: &[(String, i32)],
) -> Result<BTreeMap<(String, i32), i16>, crate::inter_broker::SendError> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        topics.entry(t.as_str()).or_default().push(*p);
    }
    let mut m = WritableTxnMarker::default();
    m.producer_id = ProducerId(producer_id);
    m.producer_epoch = producer_epoch;
    m.transaction_result = marker.commit;
    m.coordinator_epoch = marker.coordinator_epoch;
    m.topics = topics
        .into_iter()
        .map(|(name, indexes)| {
            let mut t = WritableTxnMarkerTopic::default();
            t.name = TopicName(StrBytes::from_string(name.to_string()));
            t.partition_indexes = indexes;
            t
        })
        .collect();
    let mut req = WriteTxnMarkersRequest::default();
    req.markers = vec![m];
    let resp = crate::inter_broker::send(
        node,
        leader,
        ApiKey::WriteTxnMarkers,
        WRITE_TXN_MARKERS_VERSION,
        RequestKind::WriteTxnMarkers(req),
    )
    .await?;
    let ResponseKind::WriteTxnMarkers(resp) = resp else {
        return Err(crate::inter_broker::SendError::WrongAnswer);
    };
    let mut codes = BTreeMap::new();
    for m in resp.markers {
        for t in m.topics {
            for p in t.partitions {
                codes.insert((t.name.to_string(), p.partition_index), p.error_code);
            }
        }
    }
    Ok(codes)
}
