//! DescribeQuorum's answer, which a broker (forwarding to the leader) and the controller
//! listener both give: here, below both, so the controller needs no handler.

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use samsa_cluster::quorum::{QuorumDescription, METADATA_PARTITION, METADATA_TOPIC};

use crate::controller::runtime::{Describe, VoterEndpoint};

/// The answer to `req` from what the controller said (shared with the controller listener).
pub async fn answer(
    describe: Describe,
    req: DescribeQuorumRequest,
    version: i16,
) -> DescribeQuorumResponse {
    let asks_for_metadata_log = req.topics.len() == 1
        && req.topics[0].topic_name.0.as_str() == METADATA_TOPIC
        && req.topics[0].partitions.len() == 1
        && req.topics[0].partitions[0].partition_index == METADATA_PARTITION;
    if !asks_for_metadata_log {
        return partition_errors(
            &req,
            version,
            ResponseError::UnknownTopicOrPartition.code(),
            &format!("the metadata quorum serves {METADATA_TOPIC}-{METADATA_PARTITION} only"),
        );
    }
    match describe {
        Describe::Local(d, endpoints) => describe_response(&req, &d, &endpoints, version),
        Describe::Forward(peer, patience) => {
            let answer = peer.send(
                ApiKey::DescribeQuorum,
                version,
                RequestKind::DescribeQuorum(req.clone()),
            );
            match tokio::time::timeout(patience, answer).await {
                Ok(Ok(Ok(ResponseKind::DescribeQuorum(r)))) => r,
                Ok(Ok(Ok(_))) | Ok(Ok(Err(_))) | Ok(Err(_)) | Err(_) => partition_errors(
                    &req,
                    version,
                    ResponseError::NotLeaderOrFollower.code(),
                    "the metadata quorum's leader did not answer; retry",
                ),
            }
        }
        Describe::NotLeader => partition_errors(
            &req,
            version,
            ResponseError::NotLeaderOrFollower.code(),
            "this controller is not the metadata quorum's leader: ask the active controller, or a broker",
        ),
        Describe::NoLeader => partition_errors(
            &req,
            version,
            ResponseError::NotLeaderOrFollower.code(),
            "the metadata quorum has no leader (is a majority of the voters running?)",
        ),
    }
}

fn partition_errors(
    req: &DescribeQuorumRequest,
    version: i16,
    code: i16,
    message: &str,
) -> DescribeQuorumResponse {
    let mut resp = DescribeQuorumResponse::default();
    if version >= 2 {
        resp.error_message = Some(StrBytes::default());
    }
    for t in &req.topics {
        let mut topic = TopicData::default();
        topic.topic_name = t.topic_name.clone();
        for p in &t.partitions {
            let mut part = PartitionData::default();
            part.partition_index = p.partition_index;
            part.error_code = code;
            if version >= 2 {
                part.error_message = Some(StrBytes::from_string(message.to_string()));
            }
            topic.partitions.push(part);
        }
        resp.topics.push(topic);
    }
    resp
}

fn describe_response(
    req: &DescribeQuorumRequest,
    d: &QuorumDescription,
    endpoints: &[VoterEndpoint],
    version: i16,
) -> DescribeQuorumResponse {
    let replica = |r: &samsa_cluster::quorum::ReplicaState| {
        let mut s = ReplicaState::default();
        s.replica_id = BrokerId(r.node_id);
        s.log_end_offset = r.log_end_offset.unwrap_or(-1);
        if version >= 1 {
            s.last_fetch_timestamp = r.last_fetch_ms.map_or(-1, |t| t as i64);
            s.last_caught_up_timestamp = r.last_caught_up_ms.map_or(-1, |t| t as i64);
        }
        s
    };
    let mut part = PartitionData::default();
    part.partition_index = METADATA_PARTITION;
    part.leader_id = BrokerId(d.leader_id.unwrap_or(-1));
    part.leader_epoch = d.epoch;
    part.high_watermark = d.high_watermark;
    part.current_voters = d.voters.iter().map(replica).collect();
    part.observers = d.observers.iter().map(replica).collect();
    // Where nothing went wrong Kafka leaves the messages at their schema default, "".
    if version >= 2 {
        part.error_message = Some(StrBytes::default());
    }
    let mut topic = TopicData::default();
    topic.topic_name = req.topics[0].topic_name.clone();
    topic.partitions = vec![part];
    let mut resp = DescribeQuorumResponse::default();
    resp.topics = vec![topic];
    if version >= 2 {
        resp.error_message = Some(StrBytes::default());
        resp.nodes = endpoints
            .iter()
            .map(|e| {
                let mut node = Node::default();
                node.node_id = BrokerId(e.node_id);
                let mut listener = Listener::default();
                listener.name = StrBytes::from_string(e.listener.clone());
                listener.host = StrBytes::from_string(e.host.clone());
                listener.port = e.port;
                node.listeners = vec![listener];
                node
            })
            .collect();
    }
    resp
}
