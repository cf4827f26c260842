//! ReadShareGroupState (KIP-932, broker to broker): the share coordinator's answer with a
//! share-partition's persisted state, from the partition of `__share_group_state` this broker
//! leads (NOT_COORDINATOR otherwise). A share-partition whose state the group coordinator never
//! initialized is INVALID_REQUEST, as Kafka's share coordinator answers; one initialized and not
//! used yet has start offset -1. A topic or partition the metadata does not know is
//! UNKNOWN_TOPIC_OR_PARTITION. Samsa's tagged fields carry the snapshot epoch and dead-letter scan start (see
//! [`crate::share::persister`]). ACLs: CLUSTER_ACTION on the cluster.

use std::sync::Arc;

use kafka_protocol::messages::read_share_group_state_response::{
    PartitionResult, ReadStateResult, StateBatch,
};
use kafka_protocol::messages::{ReadShareGroupStateRequest, ReadShareGroupStateResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::share::ShareKey;

/// Whether the metadata knows `key`'s topic and partition.
pub fn known_partition(node: &crate::node::Node, key: &ShareKey) -> bool {
    node.topics
        .get_by_id(&key.topic_id)
        .is_some_and(|t| key.partition >= 0 && key.partition < t.partition_count)
}

pub async fn handle(ctx: &Ctx<'_>, req: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse {
    let authorized = ctx.authorize(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    let mut resp = ReadShareGroupStateResponse::default();
    for t in req.topics {
        let mut out = ReadStateResult::default();
        out.topic_id = t.topic_id;
        for p in t.partitions {
            let mut r = PartitionResult::default();
            r.partition = p.partition;
            let key = ShareKey {
                group: Arc::from(req.group_id.as_str()),
                topic_id: t.topic_id,
                partition: p.partition,
            };
            let read = if authorized {
                ctx.shares().store().read(ctx.node(), &key).await
            } else {
                Err(ResponseError::ClusterAuthorizationFailed)
            };
            match read {
                Ok(None) => {
                    r.error_code = ResponseError::InvalidRequest.code();
                    r.error_message = Some(StrBytes::from_static_str(
                        "Read operation on uninitialized share partition not allowed.",
                    ));
                }
                Ok(Some(_)) if !known_partition(ctx.node(), &key) => {
                    r.error_code = ResponseError::UnknownTopicOrPartition.code();
                    r.error_message = Some(StrBytes::from_static_str(
                        "This server does not host this topic-partition.",
                    ));
                }
                Ok(Some(s)) => {
                    r.state_epoch = s.state_epoch;
                    r.start_offset = s.start_offset;
                    r.state_batches = s
                        .batches
                        .iter()
                        .map(|b| {
                            let mut w = StateBatch::default();
                            w.first_offset = b.first;
                            w.last_offset = b.last;
                            w.delivery_state = b.state as i8;
                            w.delivery_count = b.delivery_count;
                            w
                        })
                        .collect();
                    crate::share::persister::put_tags(&mut r.unknown_tagged_fields, &s);
                }
                Err(e) => r.error_code = e.code(),
            }
            out.partitions.push(r);
        }
        resp.results.push(out);
    }
    resp
}
