//! ElectLeaders (KIP-460): elect the preferred (or, unclean, any) replica as leader. Every
//! partition has one replica until replication is built, so an election can never change a
//! leader, and the answers follow from the metadata image as Kafka's controller gives them: a
//! partition led by its preferred replica is ELECTION_NOT_NEEDED; one whose only replica is
//! not live is PREFERRED_LEADER_NOT_AVAILABLE (preferred) or ELIGIBLE_LEADERS_NOT_AVAILABLE
//! (unclean). A request for every partition (null list) lists only partitions whose election
//! did something, as Kafka's controller does: here, none. ACLs: ALTER on the cluster, else
//! CLUSTER_AUTHORIZATION_FAILED (top level from v1, and per partition).

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::cluster_view::ClusterView;
use super::Ctx;
use crate::acl::AclOperation;

/// `election_type` values (v1+; v0 means preferred).
const PREFERRED: i8 = 0;
const UNCLEAN: i8 = 1;

pub fn handle(ctx: &Ctx<'_>, req: ElectLeadersRequest) -> ElectLeadersResponse {
    let mut resp = ElectLeadersResponse::default();
    let known_type = matches!(req.election_type, PREFERRED | UNCLEAN);
    let refused = ctx.authorize_cluster(AclOperation::Alter).err();
    if refused.is_some() && ctx.version >= 1 {
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
    } else if !known_type && ctx.version >= 1 {
        resp.error_code = ResponseError::InvalidRequest.code();
    }
    // Null: every partition. None needs an election, and Kafka leaves those out.
    let Some(topics) = req.topic_partitions else {
        return resp;
    };
    let view = ClusterView::new(ctx.broker);
    for t in topics {
        let topic = view.topic(t.topic.as_str());
        let mut result = ReplicaElectionResult::default();
        result.topic = t.topic.clone();
        for partition_id in t.partitions {
            let mut p = PartitionResult::default();
            p.partition_id = partition_id;
            let (code, message) = if let Some(refusal) = &refused {
                refusal.clone()
            } else if !known_type {
                (
                    ResponseError::InvalidRequest,
                    format!("unknown election type {}", req.election_type),
                )
            } else {
                match topic.as_ref().and_then(|t| view.partition(t, partition_id)) {
                    None => (
                        ResponseError::UnknownTopicOrPartition,
                        format!("no partition {}-{partition_id}", t.topic.as_str()),
                    ),
                    Some(p) if p.leader.is_some() && p.leader == p.replicas.first().copied() => (
                        ResponseError::ElectionNotNeeded,
                        format!(
                            "the partition is led by its preferred replica, broker {}",
                            p.replicas[0]
                        ),
                    ),
                    Some(p) if req.election_type == UNCLEAN => (
                        ResponseError::EligibleLeadersNotAvailable,
                        format!("no live replica among {:?}", p.replicas),
                    ),
                    Some(p) => (
                        ResponseError::PreferredLeaderNotAvailable,
                        format!("the preferred replica {:?} is not live", p.replicas.first()),
                    ),
                }
            };
            p.error_code = code.code();
            p.error_message = Some(StrBytes::from_string(message));
            result.partition_result.push(p);
        }
        resp.replica_election_results.push(result);
    }
    resp
}
