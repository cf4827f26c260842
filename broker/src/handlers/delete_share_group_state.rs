//! DeleteShareGroupState (KIP-932, broker to broker): the share coordinator removes a
//! share-partition's state (a tombstone in the partition of `__share_group_state` this broker
//! leads; NOT_COORDINATOR otherwise). ACLs: CLUSTER_ACTION on the cluster.

use std::sync::Arc;

use kafka_protocol::messages::delete_share_group_state_response::{
    DeleteStateResult, PartitionResult,
};
use kafka_protocol::messages::{DeleteShareGroupStateRequest, DeleteShareGroupStateResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::share::ShareKey;

pub async fn handle(
    ctx: &Ctx<'_>,
    req: DeleteShareGroupStateRequest,
) -> DeleteShareGroupStateResponse {
    let authorized = ctx.authorize(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    let mut resp = DeleteShareGroupStateResponse::default();
    for t in req.topics {
        let mut out = DeleteStateResult::default();
        out.topic_id = t.topic_id;
        for p in t.partitions {
            let mut r = PartitionResult::default();
            r.partition = p.partition;
            let key = ShareKey {
                group: Arc::from(req.group_id.as_str()),
                topic_id: t.topic_id,
                partition: p.partition,
            };
            let result = if authorized {
                ctx.shares().store().delete(ctx.node(), &key).await
            } else {
                Err(ResponseError::ClusterAuthorizationFailed)
            };
            if let Err(e) = result {
                r.error_code = e.code();
            }
            out.partitions.push(r);
        }
        resp.results.push(out);
    }
    resp
}
