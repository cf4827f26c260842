//! ListPartitionReassignments (KIP-455): the reassignments in progress. A single node never
//! has one (see alter_partition_reassignments.rs), so the list is always empty; Kafka's
//! controller likewise skips named topics and partitions that do not exist. ACLs: DESCRIBE on
//! the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};

use kafka_protocol::protocol::StrBytes;

use super::Ctx;
use crate::acl::AclOperation;

pub fn handle(
    ctx: &Ctx<'_>,
    _req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let mut resp = ListPartitionReassignmentsResponse::default();
    resp.error_message = None;
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Describe) {
        resp.error_code = code.code();
        resp.error_message = Some(StrBytes::from_string(message));
    }
    resp
}
