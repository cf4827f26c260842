//! WriteTxnMarkers: a transaction coordinator on another broker has decided a transaction and
//! asks this broker, the leader of some of its partitions, to write the COMMIT or ABORT marker
//! there (Kafka's inter-broker RPC; clients never send it). Each partition answers on its own:
//! NOT_LEADER_OR_FOLLOWER where this broker does not lead it, so that the coordinator retries
//! with the new leader. ACLs: CLUSTER_ACTION on the cluster, as Kafka requires of brokers.

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kafka_protocol::ResponseError;
use samsa_storage::EndTxnMarker;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::txn::markers::write_local;

pub async fn handle(ctx: &Ctx<'_>, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let mut resp = WriteTxnMarkersResponse::default();
    let authorized = ctx.authorize(
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    for m in req.markers {
        let partitions: Vec<(String, i32)> = m
            .topics
            .iter()
            .flat_map(|t| {
                t.partition_indexes
                    .iter()
                    .map(move |p| (t.name.to_string(), *p))
            })
            .collect();
        let codes = if authorized {
            let marker = EndTxnMarker {
                commit: m.transaction_result,
                coordinator_epoch: m.coordinator_epoch,
            };
            write_local(
                ctx.node(),
                ctx.groups(),
                m.producer_id.0,
                m.producer_epoch,
                marker,
                &partitions,
            )
            .await
        } else {
            vec![ResponseError::ClusterAuthorizationFailed.code(); partitions.len()]
        };
        let mut r = WritableTxnMarkerResult::default();
        r.producer_id = m.producer_id;
        let mut codes = codes.into_iter();
        r.topics = m
            .topics
            .into_iter()
            .map(|t| {
                let mut tr = WritableTxnMarkerTopicResult::default();
                tr.partitions = t
                    .partition_indexes
                    .iter()
                    .map(|&p| {
                        let mut pr = WritableTxnMarkerPartitionResult::default();
                        pr.partition_index = p;
                        pr.error_code = codes.next().unwrap_or_default();
                        pr
                    })
                    .collect();
                tr.name = t.name;
                tr
            })
            .collect();
        resp.markers.push(r);
    }
    resp
}
