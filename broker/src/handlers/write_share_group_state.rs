//! WriteShareGroupState (KIP-932, broker to node): a share-partition leader's state, written
//! by the share coordinator to the partition of `__share_group_state` this broker leads
//! (NOT_COORDINATOR otherwise) and answered once replicated. Samsa's leaders send the whole
//! state with its snapshot epoch as tagged field 0; a write without one (a Kafka leader's) takes
//! the stored epoch plus one. As Kafka's share coordinator: a share-partition the group
//! coordinator never initialized is INVALID_REQUEST, a state epoch below the stored one
//! FENCED_STATE_EPOCH, a topic or partition the metadata does not know
//! UNKNOWN_TOPIC_OR_PARTITION. Samsa's tagged field 2 asks for the group coordinator's
//! initialization instead (the state is created unless it exists; see
//! [`crate::share::persister`]). ACLs: CLUSTER_ACTION on the cluster.

use std::sync::Arc;

use kafka_protocol::messages::write_share_group_state_response::{
    PartitionResult, WriteStateResult,
};
use kafka_protocol::messages::{WriteShareGroupStateRequest, WriteShareGroupStateResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::share::partition::StateBatch;
use crate::share::persister::{persisted_state, tags, TAG_INITIALIZE};
use crate::share::state_store::Snapshot;
use crate::share::ShareKey;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: WriteShareGroupStateRequest,
) -> WriteShareGroupStateResponse {
    let node = ctx.node();
    let authorized = ctx.authorize(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    let mut resp = WriteShareGroupStateResponse::default();
    for t in req.topics {
        let mut out = WriteStateResult::default();
        out.topic_id = t.topic_id;
        for p in t.partitions {
            let mut r = PartitionResult::default();
            r.partition = p.partition;
            let key = ShareKey {
                group: Arc::from(req.group_id.as_str()),
                topic_id: t.topic_id,
                partition: p.partition,
            };
            let result = async {
                if !authorized {
                    return Err((ResponseError::ClusterAuthorizationFailed, None));
                }
                if p.unknown_tagged_fields.contains_key(&TAG_INITIALIZE) {
                    return ctx
                        .shares()
                        .store()
                        .initialize(node, &key, p.state_epoch)
                        .await
                        .map_err(|e| (e, None));
                }
                let stored = ctx
                    .shares()
                    .store()
                    .read(node, &key)
                    .await
                    .map_err(|e| (e, None))?;
                let Some(stored) = stored else {
                    return Err((
                        ResponseError::InvalidRequest,
                        Some("Write operation on uninitialized share partition not allowed."),
                    ));
                };
                if stored.state_epoch > p.state_epoch {
                    return Err((
                        ResponseError::FencedStateEpoch,
                        Some("The state epoch is stale."),
                    ));
                }
                if !super::read_share_group_state::known_partition(node, &key) {
                    return Err((ResponseError::UnknownTopicOrPartition, None));
                }
                let mut batches = Vec::with_capacity(p.state_batches.len());
                for b in &p.state_batches {
                    let state = persisted_state(b.delivery_state)
                        .ok_or((ResponseError::InvalidRequest, None))?;
                    if b.last_offset < b.first_offset {
                        return Err((ResponseError::InvalidRequest, None));
                    }
                    batches.push(StateBatch {
                        first: b.first_offset,
                        last: b.last_offset,
                        state,
                        delivery_count: b.delivery_count,
                    });
                }
                let (epoch, dlq_scan_from) = tags(&p.unknown_tagged_fields);
                let snapshot_epoch = epoch.unwrap_or(stored.snapshot_epoch + 1);
                let now = crate::util::now_ms();
                let snapshot = Snapshot {
                    snapshot_epoch,
                    state_epoch: p.state_epoch,
                    leader_epoch: p.leader_epoch,
                    start_offset: p.start_offset,
                    create_timestamp: now,
                    write_timestamp: now,
                    batches,
                    dlq_scan_from,
                };
                ctx.shares()
                    .store()
                    .write(node, &key, snapshot)
                    .await
                    .map_err(|e| (e, None))
            }
            .await;
            if let Err((e, message)) = result {
                r.error_code = e.code();
                r.error_message = Some(match message {
                    Some(m) => StrBytes::from_static_str(m),
                    None => StrBytes::from_string(e.to_string()),
                });
            }
            out.partitions.push(r);
        }
        resp.results.push(out);
    }
    resp
}
