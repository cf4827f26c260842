//! One file per Kafka API: each parses nothing itself (the codec did), applies the request to
//! the broker and builds the response. This module only routes a decoded request to its file
//! and frames the answer.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod add_raft_voter;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_partition_reassignments;
pub mod alter_replica_log_dirs;
pub mod alter_share_group_offsets;
pub mod alter_user_scram_credentials;
pub mod api_versions;
mod authorize;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_acls;
pub mod create_delegation_token;
pub mod create_partitions;
pub mod create_topics;
pub mod ctx;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_share_group_offsets;
pub mod delete_share_group_state;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_delegation_token;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_share_group_offsets;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod expire_delegation_token;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod quotas;
pub mod read_share_group_state;
pub mod remove_raft_voter;
pub mod renew_delegation_token;
pub mod sasl_authenticate;
pub mod sasl_handshake;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod streams_dispatch;
pub mod streams_group_describe;
pub mod streams_group_heartbeat;
pub mod streams_group_topology_description_update;
pub mod sync_group;
pub mod txn_offset_commit;
pub mod unregister_broker;
pub mod update_features;
pub mod write_share_group_state;
pub mod write_txn_markers;

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::{RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use samsa_protocol::{Chunk, DecodedRequest};

use crate::broker::Broker;

pub use ctx::{topic_id_by_name, topic_name_by_id, AuthState, Connection, Ctx, Reply};

/// Handles one request and appends its response frame to `out` (nothing for acks=0 produce),
/// waiting for deferred responses in place.
pub async fn handle(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    req: DecodedRequest,
    out: &mut Vec<Chunk>,
) -> Result<(), String> {
    match handle_request(broker, conn, req).await? {
        Reply::Ready(chunks) => out.extend(chunks),
        Reply::Deferred(later) => out.extend(later.await?),
    }
    Ok(())
}

/// Handles one request. Everything that orders requests (appends, group and transaction
/// state changes) happens before this returns; only waiting may be deferred.
pub async fn handle_request(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    mut req: DecodedRequest,
) -> Result<Reply, String> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    // The decoded client id is a slice of the request frame; an owned copy keeps the header
    // from sharing the frame's buffer, so the log can rewrite a Produce's batches in place.
    // Clients send the same id on every request: the connection's copy is shared.
    req.header.client_id = req.header.client_id.take().map(|id| {
        let mut known = conn.client_id.borrow_mut();
        match &*known {
            Some(k) if **k == *id => k.clone(),
            _ => {
                let owned = StrBytes::from_string(id.to_string());
                *known = Some(owned.clone());
                owned
            }
        }
    });
    let key = req.api_key;
    let version = req.api_version();
    let started = std::time::Instant::now();
    // One line per request at trace level (`log.level=trace`), for following a client's
    // conversation; the default level logs nothing per request.
    tracing::trace!(
        peer = %conn.peer,
        api = ?key,
        version,
        correlation_id = req.header.correlation_id,
        client_id = req.header.client_id.as_deref().unwrap_or(""),
        "request"
    );
    // What the request's version adds beyond `kafka-protocol`'s struct, by the schema's field
    // names (empty below the versions `samsa_protocol::newer` translates), for the handlers
    // that read such a field.
    let added = std::mem::take(&mut req.added);
    let ctx = Ctx {
        broker,
        conn,
        header: &req.header,
        version,
    };
    // The fields a response's version adds beyond `kafka-protocol`'s struct, where a handler
    // has values for them (samsa_protocol::newer).
    let mut response_added: Option<samsa_protocol::newer::Record> = None;
    // A client under a `request_percentage` quota is charged the time its request keeps this
    // shard busy (Kafka charges its request handler thread time): the handler's polls, not
    // its waits. Timed only while the image has client quotas.
    let timing = broker.node.client_quotas.is_enabled();
    let exempt = timing && quotas::exempt_from_request_quota(&req.body);
    let mut busy = std::time::Duration::ZERO;
    let dispatched = {
        let dispatch = std::pin::pin!(async {
            Ok::<_, String>(Dispatched::Response(match req.body {
                RequestKind::ApiVersions(r) => Some(ResponseKind::ApiVersions(
                    api_versions::handle_addressed(&ctx, r, &added),
                )),
                RequestKind::Metadata(r) => {
                    Some(ResponseKind::Metadata(metadata::handle(&ctx, r).await))
                }
                RequestKind::SaslHandshake(r) => {
                    Some(ResponseKind::SaslHandshake(sasl_handshake::handle(&ctx, r)))
                }
                RequestKind::SaslAuthenticate(r) => Some(ResponseKind::SaslAuthenticate(
                    sasl_authenticate::handle(&ctx, r).await,
                )),
                RequestKind::Produce(r) => match produce::handle(&ctx, r).await? {
                    produce::Produced::Nothing => {
                        // acks=0: no answer to carry the throttle, but the connection is muted.
                        quotas::after_produce(&ctx);
                        None
                    }
                    produce::Produced::Now(mut resp) => {
                        resp.throttle_time_ms = quotas::after_produce(&ctx);
                        Some(ResponseKind::Produce(resp))
                    }
                    produce::Produced::Later(later) => {
                        let throttle_time_ms = quotas::after_produce(&ctx);
                        // acks=all in durable mode: answered when its fsync lands.
                        let broker = broker.clone();
                        let conn = conn.clone();
                        let correlation_id = req.header.correlation_id;
                        return Ok(Dispatched::Reply(Reply::Deferred(Box::pin(async move {
                            let mut resp = later.await;
                            resp.throttle_time_ms = throttle_time_ms;
                            let response = Some(ResponseKind::Produce(resp));
                            broker.node.metrics.request(
                                key,
                                version,
                                started.elapsed(),
                                response.as_ref(),
                            );
                            let mut chunks = Vec::new();
                            encode(
                                response,
                                Vec::new(),
                                None,
                                key,
                                version,
                                correlation_id,
                                &mut conn.encode_buf.borrow_mut(),
                                &mut chunks,
                            )?;
                            Ok(chunks)
                        }))));
                    }
                },
                RequestKind::Fetch(r) => {
                    let (resp, ranges) = fetch::handle(&ctx, r).await;
                    files = ranges;
                    Some(ResponseKind::Fetch(resp))
                }
                RequestKind::ListOffsets(r) => {
                    Some(ResponseKind::ListOffsets(list_offsets::handle(&ctx, r)))
                }
                RequestKind::CreateTopics(r) => Some(ResponseKind::CreateTopics(
                    create_topics::handle(&ctx, r).await,
                )),
                RequestKind::DeleteTopics(r) => Some(ResponseKind::DeleteTopics(
                    delete_topics::handle(&ctx, r).await,
                )),
                RequestKind::CreatePartitions(r) => Some(ResponseKind::CreatePartitions(
                    create_partitions::handle(&ctx, r).await,
                )),
                RequestKind::DescribeConfigs(r) => Some(ResponseKind::DescribeConfigs(
                    describe_configs::handle(&ctx, r),
                )),
                RequestKind::AlterConfigs(r) => Some(ResponseKind::AlterConfigs(
                    alter_configs::handle(&ctx, r).await,
                )),
                RequestKind::IncrementalAlterConfigs(r) => {
                    Some(ResponseKind::IncrementalAlterConfigs(
                        incremental_alter_configs::handle(&ctx, r).await,
                    ))
                }
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
                RequestKind::InitProducerId(r) => Some(ResponseKind::InitProducerId(
                    init_producer_id::handle(&ctx, r).await,
                )),
                RequestKind::AddPartitionsToTxn(r) => Some(ResponseKind::AddPartitionsToTxn(
                    add_partitions_to_txn::handle(&ctx, r).await,
                )),
                RequestKind::EndTxn(r) => {
                    Some(ResponseKind::EndTxn(end_txn::handle(&ctx, r).await))
                }
                RequestKind::AddOffsetsToTxn(r) => Some(ResponseKind::AddOffsetsToTxn(
                    add_offsets_to_txn::handle(&ctx, r).await,
                )),
                RequestKind::TxnOffsetCommit(r) => {
                    let (resp, ids) = txn_offset_commit::handle(&ctx, r, &added).await;
                    response_added = ids;
                    Some(ResponseKind::TxnOffsetCommit(resp))
                }
                RequestKind::UnregisterBroker(r) => Some(ResponseKind::UnregisterBroker(
                    unregister_broker::handle(&ctx, r).await,
                )),
                RequestKind::DescribeTransactions(r) => Some(ResponseKind::DescribeTransactions(
                    describe_transactions::handle(&ctx, r).await,
                )),
                RequestKind::ListTransactions(r) => Some(ResponseKind::ListTransactions(
                    list_transactions::handle(&ctx, r).await,
                )),
                RequestKind::DescribeProducers(r) => Some(ResponseKind::DescribeProducers(
                    describe_producers::handle(&ctx, r),
                )),
                RequestKind::FindCoordinator(r) => Some(ResponseKind::FindCoordinator(
                    find_coordinator::handle(&ctx, r).await,
                )),
                RequestKind::JoinGroup(r) => {
                    Some(ResponseKind::JoinGroup(join_group::handle(&ctx, r).await))
                }
                RequestKind::SyncGroup(r) => {
                    Some(ResponseKind::SyncGroup(sync_group::handle(&ctx, r).await))
                }
                RequestKind::Heartbeat(r) => {
                    Some(ResponseKind::Heartbeat(heartbeat::handle(&ctx, r)))
                }
                RequestKind::OffsetCommit(r) => Some(ResponseKind::OffsetCommit(
                    offset_commit::handle(&ctx, r).await,
                )),
                RequestKind::OffsetFetch(r) => {
                    Some(ResponseKind::OffsetFetch(offset_fetch::handle(&ctx, r)))
                }
                RequestKind::DescribeGroups(r) => Some(ResponseKind::DescribeGroups(
                    describe_groups::handle(&ctx, r),
                )),
                RequestKind::ListGroups(r) => {
                    Some(ResponseKind::ListGroups(list_groups::handle(&ctx, r)))
                }
                RequestKind::DeleteGroups(r) => Some(ResponseKind::DeleteGroups(
                    delete_groups::handle(&ctx, r).await,
                )),
                RequestKind::OffsetDelete(r) => Some(ResponseKind::OffsetDelete(
                    offset_delete::handle(&ctx, r).await,
                )),
                RequestKind::DescribeAcls(r) => {
                    Some(ResponseKind::DescribeAcls(describe_acls::handle(&ctx, r)))
                }
                RequestKind::CreateAcls(r) => {
                    Some(ResponseKind::CreateAcls(create_acls::handle(&ctx, r).await))
                }
                RequestKind::DeleteAcls(r) => {
                    Some(ResponseKind::DeleteAcls(delete_acls::handle(&ctx, r).await))
                }
                RequestKind::CreateDelegationToken(r) => Some(ResponseKind::CreateDelegationToken(
                    create_delegation_token::handle(&ctx, r),
                )),
                RequestKind::RenewDelegationToken(r) => Some(ResponseKind::RenewDelegationToken(
                    renew_delegation_token::handle(&ctx, r),
                )),
                RequestKind::ExpireDelegationToken(r) => Some(ResponseKind::ExpireDelegationToken(
                    expire_delegation_token::handle(&ctx, r),
                )),
                RequestKind::DescribeDelegationToken(r) => {
                    Some(ResponseKind::DescribeDelegationToken(
                        describe_delegation_token::handle(&ctx, r),
                    ))
                }
                RequestKind::DescribeUserScramCredentials(r) => {
                    Some(ResponseKind::DescribeUserScramCredentials(
                        describe_user_scram_credentials::handle(&ctx, r),
                    ))
                }
                RequestKind::AlterUserScramCredentials(r) => {
                    Some(ResponseKind::AlterUserScramCredentials(
                        alter_user_scram_credentials::handle(&ctx, r).await,
                    ))
                }
                RequestKind::DescribeClientQuotas(r) => Some(ResponseKind::DescribeClientQuotas(
                    describe_client_quotas::handle(&ctx, r),
                )),
                RequestKind::AlterClientQuotas(r) => Some(ResponseKind::AlterClientQuotas(
                    alter_client_quotas::handle(&ctx, r).await,
                )),
                RequestKind::AlterReplicaLogDirs(r) => Some(ResponseKind::AlterReplicaLogDirs(
                    alter_replica_log_dirs::handle(&ctx, r),
                )),
                RequestKind::ElectLeaders(r) => Some(ResponseKind::ElectLeaders(
                    elect_leaders::handle(&ctx, r).await,
                )),
                RequestKind::AlterPartitionReassignments(r) => {
                    Some(ResponseKind::AlterPartitionReassignments(
                        alter_partition_reassignments::handle(&ctx, r).await,
                    ))
                }
                RequestKind::ListPartitionReassignments(r) => {
                    Some(ResponseKind::ListPartitionReassignments(
                        list_partition_reassignments::handle(&ctx, r),
                    ))
                }
                RequestKind::ListConfigResources(r) => Some(ResponseKind::ListConfigResources(
                    list_config_resources::handle(&ctx, r),
                )),
                RequestKind::DescribeQuorum(r) => Some(ResponseKind::DescribeQuorum(
                    describe_quorum::handle(&ctx, r).await,
                )),
                RequestKind::AddRaftVoter(r) => Some(ResponseKind::AddRaftVoter(
                    add_raft_voter::handle(&ctx, r).await,
                )),
                RequestKind::RemoveRaftVoter(r) => Some(ResponseKind::RemoveRaftVoter(
                    remove_raft_voter::handle(&ctx, r).await,
                )),
                RequestKind::WriteTxnMarkers(r) => Some(ResponseKind::WriteTxnMarkers(
                    write_txn_markers::handle(&ctx, r).await,
                )),
                RequestKind::UpdateFeatures(r) => Some(ResponseKind::UpdateFeatures(
                    update_features::handle(&ctx, r).await,
                )),
                RequestKind::LeaveGroup(r) => {
                    Some(ResponseKind::LeaveGroup(leave_group::handle(&ctx, r).await))
                }
                RequestKind::ConsumerGroupHeartbeat(r) => {
                    Some(ResponseKind::ConsumerGroupHeartbeat(
                        consumer_group_heartbeat::handle(&ctx, r).await,
                    ))
                }
                RequestKind::ConsumerGroupDescribe(r) => Some(ResponseKind::ConsumerGroupDescribe(
                    consumer_group_describe::handle(&ctx, r),
                )),
                RequestKind::ShareGroupHeartbeat(r) => Some(ResponseKind::ShareGroupHeartbeat(
                    share_group_heartbeat::handle(&ctx, r).await,
                )),
                RequestKind::ShareGroupDescribe(r) => Some(ResponseKind::ShareGroupDescribe(
                    share_group_describe::handle(&ctx, r),
                )),
                RequestKind::ShareFetch(r) => Some(ResponseKind::ShareFetch(
                    share_fetch::handle(&ctx, r, &added).await,
                )),
                RequestKind::ShareAcknowledge(r) => {
                    let (resp, lock) = share_acknowledge::handle(&ctx, r, &added).await;
                    response_added = lock;
                    Some(ResponseKind::ShareAcknowledge(resp))
                }
                RequestKind::ReadShareGroupState(r) => Some(ResponseKind::ReadShareGroupState(
                    read_share_group_state::handle(&ctx, r).await,
                )),
                RequestKind::WriteShareGroupState(r) => Some(ResponseKind::WriteShareGroupState(
                    write_share_group_state::handle(&ctx, r).await,
                )),
                RequestKind::DeleteShareGroupState(r) => Some(ResponseKind::DeleteShareGroupState(
                    delete_share_group_state::handle(&ctx, r).await,
                )),
                RequestKind::DescribeShareGroupOffsets(r) => {
                    let (resp, lags) = describe_share_group_offsets::handle(&ctx, r).await;
                    response_added = lags;
                    Some(ResponseKind::DescribeShareGroupOffsets(resp))
                }
                RequestKind::AlterShareGroupOffsets(r) => {
                    Some(ResponseKind::AlterShareGroupOffsets(
                        alter_share_group_offsets::handle(&ctx, r).await,
                    ))
                }
                RequestKind::DeleteShareGroupOffsets(r) => {
                    Some(ResponseKind::DeleteShareGroupOffsets(
                        delete_share_group_offsets::handle(&ctx, r).await,
                    ))
                }
                RequestKind::DescribeTopicPartitions(r) => {
                    Some(ResponseKind::DescribeTopicPartitions(
                        describe_topic_partitions::handle(&ctx, r),
                    ))
                }
                other => {
                    return Err(format!(
                        "{key:?} is advertised but has no handler ({})",
                        variant_name(&other)
                    ))
                }
            }))
        });
        let mut dispatch = dispatch;
        std::future::poll_fn(|cx| {
            if !timing {
                return dispatch.as_mut().poll(cx);
            }
            let start = std::time::Instant::now();
            let polled = dispatch.as_mut().poll(cx);
            busy += start.elapsed();
            polled
        })
        .await?
    };
    let mut response = match dispatched {
        Dispatched::Reply(reply) => return Ok(reply),
        Dispatched::Response(response) => response,
    };
    if timing && !exempt {
        if let Some(r) = response.as_mut() {
            quotas::charge_request_time(&ctx, busy, r);
        }
    }
    broker
        .node
        .metrics
        .request(key, version, started.elapsed(), response.as_ref());
    encode(
        response,
        files,
        response_added.as_ref(),
        key,
        version,
        req.header.correlation_id,
        &mut conn.encode_buf.borrow_mut(),
        &mut out,
    )?;
    Ok(Reply::Ready(out))
}

/// What a handler gave: the response to encode (none for acks=0), or a reply of its own.
enum Dispatched {
    Response(Option<ResponseKind>),
    Reply(Reply),
}

/// Encodes a response frame into `out`: Fetch as chunks so the records are not copied into a
/// response buffer (and records still in a segment, given in `files`, not read at all),
/// everything else as one chunk. The bytes are written into `buf` (the connection's, empty
/// between responses) and split off it.
fn encode(
    mut response: Option<ResponseKind>,
    files: Vec<Option<samsa_protocol::FileRange>>,
    added: Option<&samsa_protocol::newer::Record>,
    key: kafka_protocol::messages::ApiKey,
    version: i16,
    correlation_id: i32,
    buf: &mut BytesMut,
    out: &mut Vec<Chunk>,
) -> Result<(), String> {
    if let Some(r) = response.as_mut() {
        samsa_protocol::nulls::null_where_kafka_does(r, version);
    }
    let taken = match response {
        Some(ResponseKind::Fetch(fetch)) => samsa_protocol::fetch_response::encode_fetch_response(
            fetch,
            files,
            version,
            correlation_id,
            buf,
            out,
        )
        .map_err(|e| e.to_string())?,
        Some(response) => {
            let encoded = samsa_protocol::response::encode_response_with(
                buf,
                key,
                version,
                correlation_id,
                &response,
                added,
            );
            if let Err(e) = encoded {
                buf.clear();
                return Err(e.to_string());
            }
            let frame = buf.split().freeze();
            let taken = frame.len();
            out.push(Chunk::Bytes(frame));
            taken
        }
        None => 0,
    };
    // A response larger than this leaves the buffer it grew to the response alone (freed once
    // sent), so that a connection holds at most about this much between responses.
    if taken > ENCODE_BUFFER_KEEP_BYTES {
        *buf = BytesMut::new();
    }
    Ok(())
}

/// The largest response whose buffer a connection keeps for the next one.
const ENCODE_BUFFER_KEEP_BYTES: usize = 64 * 1024;

fn variant_name(r: &RequestKind) -> String {
    let s = format!("{r:?}");
    s.split('(').next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
    use kafka_protocol::messages::{ApiKey, MetadataResponse, TopicName};

    use super::*;

    fn metadata_with_topics(n: usize) -> Option<ResponseKind> {
        let mut resp = MetadataResponse::default();
        for i in 0..n {
            let mut t = MetadataResponseTopic::default();
            t.name = Some(TopicName(StrBytes::from_string(format!("topic-{i:06}"))));
            resp.topics.push(t);
        }
        Some(ResponseKind::Metadata(resp))
    }

    /// Encodes a Metadata response naming `topics` topics through `buf` into `out`.
    fn encode_metadata(topics: usize, buf: &mut BytesMut, out: &mut Vec<Chunk>) {
        let resp = metadata_with_topics(topics);
        encode(resp, Vec::new(), None, ApiKey::Metadata, 12, 1, buf, out).unwrap();
    }

    #[test]
    fn the_connection_buffer_is_kept_for_small_responses_and_let_go_after_a_large_one() {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        encode_metadata(3, &mut buf, &mut out);
        assert!(buf.is_empty());
        assert!(buf.capacity() > 0, "kept for the next response");
        encode_metadata(5000, &mut buf, &mut out);
        assert!(out[1].len() > ENCODE_BUFFER_KEEP_BYTES);
        assert_eq!(buf.capacity(), 0, "a large response's buffer goes with it");
        // Each frame is whole and says its own size.
        for c in &out {
            let Chunk::Bytes(b) = c else {
                panic!("one buffer each")
            };
            assert_eq!(
                i32::from_be_bytes(b[..4].try_into().unwrap()) as usize,
                b.len() - 4
            );
        }
    }
}
