//! DeleteRecords: move a partition's log start offset forward (offset -1 means the high
//! watermark). Whole segments below the new start go; readers below it get
//! OFFSET_OUT_OF_RANGE. An offset above the high watermark is OFFSET_OUT_OF_RANGE. ACLs: DELETE
//! on the topic, else TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use super::produce::log_error_code;
use crate::acl::{AclOperation, ResourceType};
use crate::topics::led_partition;

pub fn handle(ctx: &Ctx<'_>, req: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let mut resp = DeleteRecordsResponse::default();
    for t in req.topics {
        let authorized = ctx.authorize(AclOperation::Delete, ResourceType::Topic, &t.name);
        let topic = ctx.topics().get(t.name.as_str());
        let mut tr = DeleteRecordsTopicResult::default();
        tr.name = t.name.clone();
        for p in t.partitions {
            let mut pr = DeleteRecordsPartitionResult::default();
            pr.partition_index = p.partition_index;
            pr.low_watermark = -1;
            match led_partition(topic.as_ref(), p.partition_index) {
                _ if !authorized => pr.error_code = ResponseError::TopicAuthorizationFailed.code(),
                Err(e) => pr.error_code = e.code(),
                Ok(part) => {
                    let hw = part.high_watermark();
                    let target = if p.offset == -1 { hw } else { p.offset };
                    if target < 0 || target > hw {
                        pr.error_code = ResponseError::OffsetOutOfRange.code();
                    } else {
                        match part.with_log(|log| log.delete_records_before(target)) {
                            Ok(start) => pr.low_watermark = start,
                            Err(e) => pr.error_code = log_error_code(&e).code(),
                        }
                    }
                }
            }
            tr.partitions.push(pr);
        }
        resp.topics.push(tr);
    }
    resp
}
