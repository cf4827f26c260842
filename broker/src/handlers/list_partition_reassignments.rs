//! ListPartitionReassignments (KIP-455): the reassignments in progress. A single node never
//! has one (see alter_partition_reassignments.rs), so the list is always empty; Kafka's
//! controller likewise skips named topics and partitions that do not exist.

use kafka_protocol::messages::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};

use super::Ctx;

pub fn handle(
    _ctx: &Ctx<'_>,
    _req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let mut resp = ListPartitionReassignmentsResponse::default();
    resp.error_message = None;
    resp
}
