//! DescribeQuorum (KIP-595, KIP-836, KIP-853): the state of the metadata quorum. A single node
//! is its only voter and leader (`crate::quorum`); no observers. Needs DESCRIBE on the cluster;
//! any partition but `__cluster_metadata`-0 is UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers.

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{BrokerId, DescribeQuorumRequest, DescribeQuorumResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::AclOperation;
use crate::quorum::{METADATA_PARTITION, METADATA_TOPIC};

pub fn handle(ctx: &Ctx<'_>, req: DescribeQuorumRequest) -> DescribeQuorumResponse {
    let mut resp = DescribeQuorumResponse::default();
    if let Err((code, message)) = ctx.authorize_cluster(AclOperation::Describe) {
        resp.error_code = code.code();
        if ctx.version >= 2 {
            resp.error_message = Some(StrBytes::from_string(message));
        }
        return resp;
    }
    let asks_for_metadata_log = req.topics.len() == 1
        && req.topics[0].topic_name.0.as_str() == METADATA_TOPIC
        && req.topics[0].partitions.len() == 1
        && req.topics[0].partitions[0].partition_index == METADATA_PARTITION;
    if !asks_for_metadata_log {
        for t in &req.topics {
            let mut topic = TopicData::default();
            topic.topic_name = t.topic_name.clone();
            for p in &t.partitions {
                let mut part = PartitionData::default();
                part.partition_index = p.partition_index;
                part.error_code = ResponseError::UnknownTopicOrPartition.code();
                if ctx.version >= 2 {
                    part.error_message = Some(StrBytes::from_string(format!(
                        "the metadata quorum serves {METADATA_TOPIC}-{METADATA_PARTITION} only"
                    )));
                }
                topic.partitions.push(part);
            }
            resp.topics.push(topic);
        }
        return resp;
    }

    let broker = ctx.broker;
    let offset = broker.topics.metadata_changes();
    let now_ms = crate::util::now_ms();
    let mut me = ReplicaState::default();
    me.replica_id = BrokerId(broker.quorum.leader_id);
    me.log_end_offset = offset;
    if ctx.version >= 1 {
        // The leader is always caught up with itself.
        me.last_fetch_timestamp = now_ms;
        me.last_caught_up_timestamp = now_ms;
    }
    let mut part = PartitionData::default();
    part.partition_index = METADATA_PARTITION;
    part.leader_id = BrokerId(broker.quorum.leader_id);
    part.leader_epoch = broker.quorum.leader_epoch;
    part.high_watermark = offset;
    part.current_voters = vec![me];
    let mut topic = TopicData::default();
    topic.topic_name = req.topics[0].topic_name.clone();
    topic.partitions = vec![part];
    resp.topics = vec![topic];
    if ctx.version >= 2 {
        let mut node = Node::default();
        node.node_id = BrokerId(broker.quorum.leader_id);
        node.listeners = broker
            .config
            .advertised_listeners()
            .into_iter()
            .map(|l| {
                let mut listener = Listener::default();
                listener.name = StrBytes::from_string(l.name);
                listener.host = StrBytes::from_string(l.host);
                listener.port = l.port;
                listener
            })
            .collect();
        resp.nodes = vec![node];
    }
    resp
}
