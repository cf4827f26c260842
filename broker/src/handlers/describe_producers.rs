//! DescribeProducers: the producers a partition knows (id, epoch, last sequence and
//! timestamp, coordinator epoch, and the first offset of an open transaction), from the
//! partition's producer state, for operators looking for hanging transactions
//! (`kafka-transactions.sh describe-producers`). An illegal topic name is INVALID_TOPIC_EXCEPTION,
//! a topic the cluster lacks UNKNOWN_TOPIC_OR_PARTITION, a partition without a replica here
//! NOT_LEADER_OR_FOLLOWER. A follower answers from its own replica's producer state, as Kafka's
//! `ReplicaManager.activeProducerState` does (`kafka-transactions.sh find-hanging --broker-id N`
//! asks broker N about every partition it holds a replica of). ACLs: READ on the topic, else
//! TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::cluster_view::ClusterView;
use crate::topics::replica_partition;

pub fn handle(ctx: &Ctx<'_>, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let mut resp = DescribeProducersResponse::default();
    let view = ClusterView::new(ctx.node());
    for t in req.topics {
        // Refusals of the whole topic come with a message, as Kafka's (an illegal name says
        // why, the others repeat their error's description); a partition's own carry none.
        let topic_error = if !samsa_storage::is_valid_topic_name(t.name.as_str()) {
            Some((
                ResponseError::InvalidTopicException,
                format!("Topic name \"{}\" is illegal", t.name.as_str()),
            ))
        } else if !ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.name) {
            Some((
                ResponseError::TopicAuthorizationFailed,
                ctx.denied(AclOperation::Read, ResourceType::Topic, &t.name),
            ))
        } else if view.topic(t.name.as_str()).is_none() {
            Some((
                ResponseError::UnknownTopicOrPartition,
                "This server does not host this topic-partition.".to_string(),
            ))
        } else {
            None
        };
        let topic = ctx.topics().get(t.name.as_str());
        let mut tr = TopicResponse::default();
        tr.name = t.name.clone();
        for index in t.partition_indexes {
            let mut pr = PartitionResponse::default();
            pr.partition_index = index;
            if let Some((code, message)) = &topic_error {
                pr.error_code = code.code();
                pr.error_message = Some(StrBytes::from_string(message.clone()));
                tr.partitions.push(pr);
                continue;
            }
            match replica_partition(topic.as_ref(), index) {
                // A partition of the cluster without a replica here, or one it lacks.
                Err(_) if topic.is_none() => {
                    let in_cluster = view
                        .topic(t.name.as_str())
                        .is_some_and(|t| (0..t.partition_count()).contains(&index));
                    pr.error_code = if in_cluster {
                        ResponseError::NotLeaderOrFollower.code()
                    } else {
                        ResponseError::UnknownTopicOrPartition.code()
                    };
                }
                Err(e) => pr.error_code = e.code(),
                Ok(p) => {
                    for e in p.active_producers() {
                        let mut s = ProducerState::default();
                        s.producer_id = ProducerId(e.producer_id);
                        s.producer_epoch = e.producer_epoch as i32;
                        s.last_sequence = e.last_seq();
                        s.last_timestamp = e.last_timestamp_ms;
                        s.coordinator_epoch = e.coordinator_epoch;
                        s.current_txn_start_offset = e.current_txn_first_offset.unwrap_or(-1);
                        pr.active_producers.push(s);
                    }
                }
            }
            tr.partitions.push(pr);
        }
        resp.topics.push(tr);
    }
    resp
}
