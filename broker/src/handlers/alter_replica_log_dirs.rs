//! AlterReplicaLogDirs: move replicas between this broker's log directories. Samsa uses one
//! log directory, so the only move there is is to where a replica already lives, which Kafka
//! answers with NONE; any other path is LOG_DIR_NOT_FOUND, and a partition this broker does not
//! have is NOT_LEADER_OR_FOLLOWER when the cluster has it and UNKNOWN_TOPIC_OR_PARTITION when
//! not, as in Kafka's ReplicaManager. ACLs: ALTER on the cluster, else
//! CLUSTER_AUTHORIZATION_FAILED for every partition.

use std::path::Path;

use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::cluster_view::ClusterView;

pub fn handle(ctx: &Ctx<'_>, req: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse {
    let dir = ctx.topics().dir();
    // DescribeLogDirs reports the canonical path; the configured one is accepted too.
    let canonical = std::fs::canonicalize(dir).ok();
    let is_ours = |path: &str| {
        let p = Path::new(path);
        p == dir || canonical.as_deref() == Some(p)
    };
    let view = ClusterView::new(ctx.node());
    let mut resp = AlterReplicaLogDirsResponse::default();
    let authorized = ctx.authorize(AclOperation::Alter, ResourceType::Cluster, CLUSTER_NAME);
    for d in req.dirs {
        let dir_known = is_ours(d.path.as_str());
        for t in d.topics {
            let topic = ctx.topics().get(t.name.as_str());
            let mut result = AlterReplicaLogDirTopicResult::default();
            result.topic_name = t.name.clone();
            for partition_index in t.partitions {
                let mut p = AlterReplicaLogDirPartitionResult::default();
                p.partition_index = partition_index;
                let code = if !authorized {
                    ResponseError::ClusterAuthorizationFailed.code()
                } else if !dir_known {
                    ResponseError::LogDirNotFound.code()
                } else if topic
                    .as_ref()
                    .and_then(|t| t.partition(partition_index))
                    .is_none()
                {
                    // Kafka's `getPartitionOrException`: a partition of the cluster that is
                    // not here is NOT_LEADER_OR_FOLLOWER, one the cluster lacks is unknown.
                    let in_cluster = view
                        .topic(t.name.as_str())
                        .is_some_and(|t| (0..t.partition_count()).contains(&partition_index));
                    if in_cluster {
                        ResponseError::NotLeaderOrFollower.code()
                    } else {
                        ResponseError::UnknownTopicOrPartition.code()
                    }
                } else {
                    0
                };
                p.error_code = code;
                result.partitions.push(p);
            }
            resp.results.push(result);
        }
    }
    resp
}
