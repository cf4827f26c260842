//! StreamsGroupTopologyDescriptionUpdate (API key 93, v0; KIP-1331): a member sends its
//! topology's description, which StreamsGroupDescribe v1 gives back.

use super::common::*;
use crate::newer::codec::{Record, Value};
use crate::newer::streams_schemas::{
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_REQUEST as REQUEST,
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_RESPONSE as RESPONSE,
};

/// `StreamsGroupTopologyDescriptionUpdateRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsGroupTopologyDescriptionUpdateRequest {
    pub group_id: String,
    pub member_id: String,
    pub topology_epoch: i32,
    pub topology_description: TopologyDescription,
}

impl Wire for StreamsGroupTopologyDescriptionUpdateRequest {
    fn from_record(r: &Record) -> Self {
        StreamsGroupTopologyDescriptionUpdateRequest {
            group_id: r.string("GroupId"),
            member_id: r.string("MemberId"),
            topology_epoch: r.int("TopologyEpoch", 0) as i32,
            topology_description: one(r, "TopologyDescription"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("GroupId", string(&self.group_id))
            .with("MemberId", string(&self.member_id))
            .with("TopologyEpoch", int(self.topology_epoch))
            .with(
                "TopologyDescription",
                Value::Struct(self.topology_description.to_record()),
            )
    }
}

/// `StreamsGroupTopologyDescriptionUpdateResponse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsGroupTopologyDescriptionUpdateResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl Wire for StreamsGroupTopologyDescriptionUpdateResponse {
    fn from_record(r: &Record) -> Self {
        StreamsGroupTopologyDescriptionUpdateResponse {
            throttle_time_ms: r.int("ThrottleTimeMs", 0) as i32,
            error_code: r.int("ErrorCode", 0) as i16,
            error_message: r.opt_string("ErrorMessage"),
        }
    }
    fn to_record(&self) -> Record {
        Record::new()
            .with("ThrottleTimeMs", int(self.throttle_time_ms))
            .with("ErrorCode", int(self.error_code))
            .with("ErrorMessage", opt_string(&self.error_message))
    }
}

super::codec_methods!(StreamsGroupTopologyDescriptionUpdateRequest, REQUEST);
super::codec_methods!(StreamsGroupTopologyDescriptionUpdateResponse, RESPONSE);
