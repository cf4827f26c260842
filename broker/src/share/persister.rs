//! Where a share-partition's state is read and written (Kafka's share persister): in
//! `__share_group_state` through its partition's leader (the share coordinator of the key),
//! this broker's own [`StateStore`] when it leads that partition, else the leader's, through the
//! share coordinator RPCs ReadShareGroupState, WriteShareGroupState and DeleteShareGroupState.
//!
//! Samsa sends the whole state in every write (Kafka's leaders send what changed), with
//! tagged fields of its own on each partition (Kafka brokers skip unknown tags): 0, the snapshot
//! epoch (an i32: the receiver drops a write older than what it holds), 1, the dead-letter
//! scan start (i32 partition, i64 offset; see [`super::dlq`]), and 2 (empty), "initialize unless
//! initialized" (the group coordinator's InitializeShareGroupState, which keeps a state that
//! exists).
//!
//! A share-partition the group coordinator has not initialized has no state: its coordinator
//! answers INVALID_REQUEST ("uninitialized share partition"), read here as `None`.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::partition::{PersistedState, StateBatch};
use super::state_store::{state_partition, topic_spec, Snapshot, StateStore, SHARE_STATE_TOPIC};
use super::ShareKey;
use crate::node::Node;

pub const TAG_SNAPSHOT_EPOCH: i32 = 0;
pub const TAG_DLQ_SCAN_FROM: i32 = 1;
pub const TAG_INITIALIZE: i32 = 2;

/// Who holds `key`'s state: this broker (`None`) or the leader of its state partition.
async fn coordinator(node: &Node, key: &ShareKey) -> Result<Option<i32>, ResponseError> {
    crate::internal_topics::ensure(node, &topic_spec(node)).await?;
    let image = node.controller.image();
    let topic = image
        .topic_by_name(SHARE_STATE_TOPIC)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    let index = state_partition(key, topic.partitions().len() as i32);
    let leader = topic
        .partition(index)
        .map(|p| p.leader)
        .filter(|l| *l >= 0)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    Ok((leader != node.node_id).then_some(leader))
}

fn remote_error(peer: i32, e: impl std::fmt::Display) -> ResponseError {
    tracing::warn!(broker = peer, "share coordinator request failed: {e}");
    ResponseError::CoordinatorNotAvailable
}

/// Sends one share coordinator request to broker `peer`.
async fn call(
    node: &Node,
    peer: i32,
    key: ApiKey,
    body: RequestKind,
) -> Result<ResponseKind, ResponseError> {
    crate::inter_broker::send(node, peer, key, 0, body)
        .await
        .map_err(|e| remote_error(peer, e))
}

/// A partition's error code in an answer (none found: the coordinator is not available).
fn outcome(code: Option<i16>) -> Result<(), ResponseError> {
    match code {
        Some(0) => Ok(()),
        Some(c) => {
            Err(ResponseError::try_from_code(c).unwrap_or(ResponseError::CoordinatorNotAvailable))
        }
        None => Err(ResponseError::CoordinatorNotAvailable),
    }
}

/// `key`'s persisted state, if any.
pub async fn read(
    store: &StateStore,
    node: &Node,
    key: &ShareKey,
) -> Result<Option<Snapshot>, ResponseError> {
    let Some(peer) = coordinator(node, key).await? else {
        return store.read(node, key).await;
    };
    use kafka_protocol::messages::read_share_group_state_request::{PartitionData, ReadStateData};
    let mut p = PartitionData::default();
    p.partition = key.partition;
    p.leader_epoch = -1;
    let mut t = ReadStateData::default();
    t.topic_id = key.topic_id;
    t.partitions = vec![p];
    let mut req = kafka_protocol::messages::ReadShareGroupStateRequest::default();
    req.group_id = StrBytes::from_string(key.group.to_string());
    req.topics = vec![t];
    let resp = call(
        node,
        peer,
        ApiKey::ReadShareGroupState,
        RequestKind::ReadShareGroupState(req),
    )
    .await?;
    let ResponseKind::ReadShareGroupState(resp) = resp else {
        return Err(remote_error(
            peer,
            crate::inter_broker::SendError::WrongAnswer,
        ));
    };
    let r = resp
        .results
        .into_iter()
        .flat_map(|t| t.partitions)
        .find(|p| p.partition == key.partition)
        .ok_or_else(|| remote_error(peer, "no answer for the partition"))?;
    if r.error_code == ResponseError::InvalidRequest.code() {
        return Ok(None);
    }
    outcome(Some(r.error_code))?;
    let batches = r
        .state_batches
        .iter()
        .filter_map(|b| {
            Some(StateBatch {
                first: b.first_offset,
                last: b.last_offset,
                state: persisted_state(b.delivery_state)?,
                delivery_count: b.delivery_count,
            })
        })
        .collect();
    let (snapshot_epoch, dlq_scan_from) = tags(&r.unknown_tagged_fields);
    Ok(Some(Snapshot {
        snapshot_epoch: snapshot_epoch.unwrap_or(0),
        state_epoch: r.state_epoch,
        leader_epoch: -1,
        start_offset: r.start_offset,
        create_timestamp: 0,
        write_timestamp: 0,
        batches,
        dlq_scan_from,
    }))
}

/// Writes `key`'s state and waits until its coordinator has it replicated.
pub async fn write(
    store: &StateStore,
    node: &Node,
    key: &ShareKey,
    snapshot: Snapshot,
) -> Result<(), ResponseError> {
    let Some(peer) = coordinator(node, key).await? else {
        return store.write(node, key, snapshot).await;
    };
    use kafka_protocol::messages::write_share_group_state_request::{
        PartitionData, StateBatch as WireBatch, WriteStateData,
    };
    let mut p = PartitionData::default();
    p.partition = key.partition;
    p.state_epoch = snapshot.state_epoch;
    p.leader_epoch = snapshot.leader_epoch;
    p.start_offset = snapshot.start_offset;
    p.state_batches = snapshot
        .batches
        .iter()
        .map(|b| {
            let mut w = WireBatch::default();
            w.first_offset = b.first;
            w.last_offset = b.last;
            w.delivery_state = b.state as i8;
            w.delivery_count = b.delivery_count;
            w
        })
        .collect();
    put_tags(&mut p.unknown_tagged_fields, &snapshot);
    let mut t = WriteStateData::default();
    t.topic_id = key.topic_id;
    t.partitions = vec![p];
    let mut req = kafka_protocol::messages::WriteShareGroupStateRequest::default();
    req.group_id = StrBytes::from_string(key.group.to_string());
    req.topics = vec![t];
    let resp = call(
        node,
        peer,
        ApiKey::WriteShareGroupState,
        RequestKind::WriteShareGroupState(req),
    )
    .await?;
    let ResponseKind::WriteShareGroupState(resp) = resp else {
        return Err(remote_error(
            peer,
            crate::inter_broker::SendError::WrongAnswer,
        ));
    };
    outcome(
        resp.results
            .iter()
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition == key.partition)
            .map(|p| p.error_code),
    )
}

/// Initializes `key`'s state at `state_epoch` unless it has one (see
/// [`StateStore::initialize`]).
pub async fn initialize(
    store: &StateStore,
    node: &Node,
    key: &ShareKey,
    state_epoch: i32,
) -> Result<(), ResponseError> {
    let Some(peer) = coordinator(node, key).await? else {
        return store.initialize(node, key, state_epoch).await;
    };
    use kafka_protocol::messages::write_share_group_state_request::{
        PartitionData, WriteStateData,
    };
    let mut p = PartitionData::default();
    p.partition = key.partition;
    p.state_epoch = state_epoch;
    p.leader_epoch = 0;
    p.start_offset = -1;
    p.unknown_tagged_fields.insert(TAG_INITIALIZE, Bytes::new());
    let mut t = WriteStateData::default();
    t.topic_id = key.topic_id;
    t.partitions = vec![p];
    let mut req = kafka_protocol::messages::WriteShareGroupStateRequest::default();
    req.group_id = StrBytes::from_string(key.group.to_string());
    req.topics = vec![t];
    let resp = call(
        node,
        peer,
        ApiKey::WriteShareGroupState,
        RequestKind::WriteShareGroupState(req),
    )
    .await?;
    let ResponseKind::WriteShareGroupState(resp) = resp else {
        return Err(remote_error(
            peer,
            crate::inter_broker::SendError::WrongAnswer,
        ));
    };
    outcome(
        resp.results
            .iter()
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition == key.partition)
            .map(|p| p.error_code),
    )
}

/// Removes `key`'s state.
pub async fn delete(store: &StateStore, node: &Node, key: &ShareKey) -> Result<(), ResponseError> {
    let Some(peer) = coordinator(node, key).await? else {
        return store.delete(node, key).await;
    };
    use kafka_protocol::messages::delete_share_group_state_request::{
        DeleteStateData, PartitionData,
    };
    let mut p = PartitionData::default();
    p.partition = key.partition;
    let mut t = DeleteStateData::default();
    t.topic_id = key.topic_id;
    t.partitions = vec![p];
    let mut req = kafka_protocol::messages::DeleteShareGroupStateRequest::default();
    req.group_id = StrBytes::from_string(key.group.to_string());
    req.topics = vec![t];
    let resp = call(
        node,
        peer,
        ApiKey::DeleteShareGroupState,
        RequestKind::DeleteShareGroupState(req),
    )
    .await?;
    let ResponseKind::DeleteShareGroupState(resp) = resp else {
        return Err(remote_error(
            peer,
            crate::inter_broker::SendError::WrongAnswer,
        ));
    };
    outcome(
        resp.results
            .iter()
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition == key.partition)
            .map(|p| p.error_code),
    )
}

pub fn persisted_state(s: i8) -> Option<PersistedState> {
    Some(match s {
        0 => PersistedState::Available,
        2 => PersistedState::Acknowledged,
        3 => PersistedState::Archiving,
        4 => PersistedState::Archived,
        _ => return None,
    })
}

/// Samsa's tagged fields of a state partition: snapshot epoch and dead-letter scan start.
pub fn tags(t: &std::collections::BTreeMap<i32, Bytes>) -> (Option<i32>, Option<(i32, i64)>) {
    let epoch = t
        .get(&TAG_SNAPSHOT_EPOCH)
        .filter(|b| b.len() == 4)
        .map(|b| (&b[..]).get_i32());
    let scan = t
        .get(&TAG_DLQ_SCAN_FROM)
        .filter(|b| b.len() == 12)
        .map(|b| {
            let mut b = &b[..];
            (b.get_i32(), b.get_i64())
        });
    (epoch, scan)
}

pub fn put_tags(t: &mut std::collections::BTreeMap<i32, Bytes>, s: &Snapshot) {
    let mut e = BytesMut::with_capacity(4);
    e.put_i32(s.snapshot_epoch);
    t.insert(TAG_SNAPSHOT_EPOCH, e.freeze());
    if let Some((p, o)) = s.dlq_scan_from {
        let mut b = BytesMut::with_capacity(12);
        b.put_i32(p);
        b.put_i64(o);
        t.insert(TAG_DLQ_SCAN_FROM, b.freeze());
    }
}
