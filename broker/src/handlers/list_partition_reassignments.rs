//! ListPartitionReassignments (KIP-455): the reassignments in progress (replicas, adding and
//! removing ones), every one (null topics) or those of the partitions named, from this broker's
//! metadata image (`samsa_cluster::controller::list_partition_reassignments`, Kafka's
//! controller rules: unknown topics and partitions are left out, as are topics with none).
//! Topics only this broker knows never move. ACLs: DESCRIBE on the cluster, else
//! CLUSTER_AUTHORIZATION_FAILED.

use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    BrokerId, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::list_partition_reassignments;

use super::ctx::Ctx;
use crate::acl::AclOperation;

pub fn handle(
    ctx: &Ctx<'_>,
    req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let mut resp = ListPartitionReassignmentsResponse::default();
    resp.error_message = None;
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Describe) {
        resp.error_code = code.code();
        resp.error_message = Some(StrBytes::from_string(message));
        return resp;
    }
    let asked: Option<Vec<(String, Vec<i32>)>> = req.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name.to_string(), t.partition_indexes))
            .collect()
    });
    let image = ctx.controller().image();
    let ids = |v: Vec<i32>| v.into_iter().map(BrokerId).collect();
    resp.topics = list_partition_reassignments(&image, asked.as_deref())
        .into_iter()
        .map(|(name, partitions)| {
            let mut t = OngoingTopicReassignment::default();
            t.name = TopicName(StrBytes::from_string(name));
            t.partitions = partitions
                .into_iter()
                .map(|p| {
                    let mut x = OngoingPartitionReassignment::default();
                    x.partition_index = p.partition_index;
                    x.replicas = ids(p.replicas);
                    x.adding_replicas = ids(p.adding_replicas);
                    x.removing_replicas = ids(p.removing_replicas);
                    x
                })
                .collect();
            t
        })
        .collect();
    resp
}
