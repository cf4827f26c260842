//! DescribeProducers: the producers a partition knows (id, epoch, last sequence and
//! timestamp, coordinator epoch, and the first offset of an open transaction), from the
//! partition's producer state, for operators looking for hanging transactions
//! (`kafka-transactions.sh describe-producers`). ACLs: READ on the topic, else
//! TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType};
use crate::topics::led_partition;

pub fn handle(ctx: &Ctx<'_>, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let mut resp = DescribeProducersResponse::default();
    for t in req.topics {
        let authorized = ctx.authorize(AclOperation::Read, ResourceType::Topic, &t.name);
        let topic = ctx.broker.topics.get(t.name.as_str());
        let mut tr = TopicResponse::default();
        tr.name = t.name.clone();
        for index in t.partition_indexes {
            let mut pr = PartitionResponse::default();
            pr.partition_index = index;
            match led_partition(topic.as_ref(), index) {
                _ if !authorized => {
                    pr.error_code = ResponseError::TopicAuthorizationFailed.code();
                    pr.error_message = Some(StrBytes::from_string(ctx.denied(
                        AclOperation::Read,
                        ResourceType::Topic,
                        &t.name,
                    )));
                }
                Err(e) => {
                    pr.error_code = e.code();
                    pr.error_message = Some(StrBytes::from_string(format!(
                        "partition {}-{index}: {e}",
                        t.name.as_str()
                    )));
                }
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
