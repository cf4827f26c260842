//! One file per Kafka API: each parses nothing itself (the codec did), applies the request to
//! the broker and builds the response. This module only routes a decoded request to its file
//! and frames the answer.

pub mod alter_configs;
pub mod alter_partition_reassignments;
pub mod alter_replica_log_dirs;
pub mod api_versions;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_topic_partitions;
pub mod elect_leaders;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod sync_group;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::{RequestHeader, RequestKind, ResponseKind};
use samsa_protocol::DecodedRequest;

use crate::server::Broker;

/// Per-connection state a handler may read or change.
pub struct Connection {
    pub peer: SocketAddr,
    client_id: RefCell<Option<String>>,
}

impl Connection {
    pub fn new(peer: SocketAddr) -> Connection {
        Connection {
            peer,
            client_id: RefCell::new(None),
        }
    }
    pub fn client_id(&self) -> Option<String> {
        self.client_id.borrow().clone()
    }
}

/// What every handler gets besides its request.
pub struct Ctx<'a> {
    pub broker: &'a Arc<Broker>,
    pub conn: &'a Rc<Connection>,
    pub header: &'a RequestHeader,
    pub version: i16,
}

/// Handles one request and appends its response frame to `out` (nothing for acks=0 produce).
pub async fn handle(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    req: DecodedRequest,
    out: &mut Vec<bytes::Bytes>,
) -> Result<(), String> {
    if conn.client_id.borrow().is_none() {
        if let Some(id) = &req.header.client_id {
            *conn.client_id.borrow_mut() = Some(id.to_string());
        }
    }
    let key = req.api_key;
    let version = req.api_version();
    let started = std::time::Instant::now();
    let ctx = Ctx {
        broker,
        conn,
        header: &req.header,
        version,
    };
    let response = match req.body {
        RequestKind::ApiVersions(r) => {
            Some(ResponseKind::ApiVersions(api_versions::handle(&ctx, r)))
        }
        RequestKind::Metadata(r) => Some(ResponseKind::Metadata(metadata::handle(&ctx, r))),
        RequestKind::Produce(r) => produce::handle(&ctx, r).await?.map(ResponseKind::Produce),
        RequestKind::Fetch(r) => Some(ResponseKind::Fetch(fetch::handle(&ctx, r).await)),
        RequestKind::ListOffsets(r) => {
            Some(ResponseKind::ListOffsets(list_offsets::handle(&ctx, r)))
        }
        RequestKind::CreateTopics(r) => {
            Some(ResponseKind::CreateTopics(create_topics::handle(&ctx, r)))
        }
        RequestKind::DeleteTopics(r) => {
            Some(ResponseKind::DeleteTopics(delete_topics::handle(&ctx, r)))
        }
        RequestKind::CreatePartitions(r) => Some(ResponseKind::CreatePartitions(
            create_partitions::handle(&ctx, r),
        )),
        RequestKind::DescribeConfigs(r) => Some(ResponseKind::DescribeConfigs(
            describe_configs::handle(&ctx, r),
        )),
        RequestKind::AlterConfigs(r) => {
            Some(ResponseKind::AlterConfigs(alter_configs::handle(&ctx, r)))
        }
        RequestKind::IncrementalAlterConfigs(r) => Some(ResponseKind::IncrementalAlterConfigs(
            incremental_alter_configs::handle(&ctx, r),
        )),
        RequestKind::DeleteRecords(r) => {
            Some(ResponseKind::DeleteRecords(delete_records::handle(&ctx, r)))
        }
        RequestKind::DescribeCluster(r) => Some(ResponseKind::DescribeCluster(
            describe_cluster::handle(&ctx, r),
        )),
        RequestKind::DescribeLogDirs(r) => Some(ResponseKind::DescribeLogDirs(
            describe_log_dirs::handle(&ctx, r),
        )),
        RequestKind::OffsetForLeaderEpoch(r) => Some(ResponseKind::OffsetForLeaderEpoch(
            offset_for_leader_epoch::handle(&ctx, r),
        )),
        RequestKind::FindCoordinator(r) => Some(ResponseKind::FindCoordinator(
            find_coordinator::handle(&ctx, r),
        )),
        RequestKind::JoinGroup(r) => {
            Some(ResponseKind::JoinGroup(join_group::handle(&ctx, r).await))
        }
        RequestKind::SyncGroup(r) => {
            Some(ResponseKind::SyncGroup(sync_group::handle(&ctx, r).await))
        }
        RequestKind::Heartbeat(r) => Some(ResponseKind::Heartbeat(heartbeat::handle(&ctx, r))),
        RequestKind::LeaveGroup(r) => Some(ResponseKind::LeaveGroup(leave_group::handle(&ctx, r))),
        RequestKind::OffsetCommit(r) => Some(ResponseKind::OffsetCommit(
            offset_commit::handle(&ctx, r).await,
        )),
        RequestKind::OffsetFetch(r) => {
            Some(ResponseKind::OffsetFetch(offset_fetch::handle(&ctx, r)))
        }
        RequestKind::DescribeGroups(r) => Some(ResponseKind::DescribeGroups(
            describe_groups::handle(&ctx, r),
        )),
        RequestKind::ListGroups(r) => Some(ResponseKind::ListGroups(list_groups::handle(&ctx, r))),
        RequestKind::DeleteGroups(r) => Some(ResponseKind::DeleteGroups(
            delete_groups::handle(&ctx, r).await,
        )),
        RequestKind::OffsetDelete(r) => Some(ResponseKind::OffsetDelete(
            offset_delete::handle(&ctx, r).await,
        )),
        RequestKind::AlterReplicaLogDirs(r) => Some(ResponseKind::AlterReplicaLogDirs(
            alter_replica_log_dirs::handle(&ctx, r),
        )),
        RequestKind::ElectLeaders(r) => {
            Some(ResponseKind::ElectLeaders(elect_leaders::handle(&ctx, r)))
        }
        RequestKind::AlterPartitionReassignments(r) => {
            Some(ResponseKind::AlterPartitionReassignments(
                alter_partition_reassignments::handle(&ctx, r),
            ))
        }
        RequestKind::ListPartitionReassignments(r) => Some(
            ResponseKind::ListPartitionReassignments(list_partition_reassignments::handle(&ctx, r)),
        ),
        RequestKind::ListConfigResources(r) => Some(ResponseKind::ListConfigResources(
            list_config_resources::handle(&ctx, r),
        )),
        RequestKind::DescribeTopicPartitions(r) => Some(ResponseKind::DescribeTopicPartitions(
            describe_topic_partitions::handle(&ctx, r),
        )),
        other => {
            return Err(format!(
                "{key:?} is advertised but has no handler ({})",
                variant_name(&other)
            ))
        }
    };
    broker
        .metrics
        .request(key, version, started.elapsed(), response.as_ref());
    match response {
        // Fetch goes out as chunks so the records are not copied into a response buffer.
        Some(ResponseKind::Fetch(fetch)) => {
            let chunks = samsa_protocol::fetch_response::encode_fetch_response(
                fetch,
                version,
                req.header.correlation_id,
            )
            .map_err(|e| e.to_string())?;
            out.extend(chunks);
        }
        Some(response) => {
            let mut buf = BytesMut::new();
            samsa_protocol::encode_response(
                &mut buf,
                key,
                version,
                req.header.correlation_id,
                &response,
            )
            .map_err(|e| e.to_string())?;
            out.push(buf.freeze());
        }
        None => {}
    }
    Ok(())
}

fn variant_name(r: &RequestKind) -> String {
    let s = format!("{r:?}");
    s.split('(').next().unwrap_or("").to_string()
}
