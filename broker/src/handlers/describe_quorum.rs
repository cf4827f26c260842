//! DescribeQuorum (KIP-595, KIP-836, KIP-853): the state of the metadata quorum as its leader
//! sees it: every voter's log end offset and last fetch and caught-up times, and observers. A
//! broker that does not lead forwards the request to the leader's controller listener, as a
//! Kafka broker forwards it to the active controller; a controller listener answers only on
//! the leader, as Kafka's `KafkaRaftClient` does; otherwise, and with no leader, the partition
//! answers NOT_LEADER_OR_FOLLOWER. Needs DESCRIBE on the cluster; any partition but
//! `__cluster_metadata`-0 is UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers.

use kafka_protocol::messages::{DescribeQuorumRequest, DescribeQuorumResponse};
use kafka_protocol::protocol::StrBytes;

use super::ctx::Ctx;
use crate::acl::AclOperation;
use crate::controller::answers::describe_quorum::answer;

pub async fn handle(ctx: &Ctx<'_>, req: DescribeQuorumRequest) -> DescribeQuorumResponse {
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Describe) {
        let mut resp = DescribeQuorumResponse::default();
        resp.error_code = code.code();
        if ctx.version >= 2 {
            resp.error_message = Some(StrBytes::from_string(message));
        }
        return resp;
    }
    let describe = ctx.controller().describe().await;
    answer(describe, req, ctx.version).await
}
