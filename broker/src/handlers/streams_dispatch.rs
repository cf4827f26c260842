//! The streams group APIs (KIP-1071: StreamsGroupHeartbeat 88, StreamsGroupDescribe 89,
//! StreamsGroupTopologyDescriptionUpdate 93), whose keys `kafka-protocol` 0.18 does not know:
//! the connection routes their frames here by key before the generic decoder
//! (`samsa_protocol::streams` reads and writes them), and this builds the handler's [`Ctx`]
//! from their header as for every other request.

use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::StrBytes;
use samsa_protocol::streams::{StreamsRequest, StreamsResponse};
use samsa_protocol::Chunk;

use super::ctx::{Connection, Ctx, Reply};
use super::{
    streams_group_describe, streams_group_heartbeat, streams_group_topology_description_update,
};
use crate::broker::Broker;

/// The streams APIs this broker serves, `(key, min, max)`, for ApiVersions.
pub const SERVED: [(i16, i16, i16); 3] = [
    (samsa_protocol::streams::STREAMS_GROUP_HEARTBEAT, 0, 1),
    (samsa_protocol::streams::STREAMS_GROUP_DESCRIBE, 0, 1),
    (
        samsa_protocol::streams::STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
        0,
        0,
    ),
];

/// Whether a frame of `key` is one of the streams APIs served here.
pub fn serves(key: i16) -> bool {
    SERVED.iter().any(|(k, _, _)| *k == key)
}

/// Decodes and handles one streams API frame. A malformed frame or an unsupported version
/// closes the connection, as for every API but ApiVersions.
pub async fn handle_frame(
    broker: &Arc<Broker>,
    conn: &Rc<Connection>,
    frame: &[u8],
) -> Result<Reply, String> {
    let req = samsa_protocol::streams::decode_frame(frame).map_err(|e| e.to_string())?;
    let h = req.header().clone();
    let mut header = RequestHeader::default();
    header.request_api_key = h.api_key;
    header.request_api_version = h.api_version;
    header.correlation_id = h.correlation_id;
    header.client_id = h.client_id.clone().map(StrBytes::from_string);
    tracing::trace!(peer = %conn.peer, api = h.api_key, version = h.api_version, correlation_id = h.correlation_id, "request");
    let ctx = Ctx {
        broker,
        conn,
        header: &header,
        version: h.api_version,
    };
    let response = match req {
        StreamsRequest::Heartbeat(_, r) => {
            StreamsResponse::Heartbeat(streams_group_heartbeat::handle(&ctx, r).await)
        }
        StreamsRequest::Describe(_, r) => {
            StreamsResponse::Describe(streams_group_describe::handle(&ctx, r))
        }
        StreamsRequest::TopologyDescriptionUpdate(_, r) => {
            StreamsResponse::TopologyDescriptionUpdate(
                streams_group_topology_description_update::handle(&ctx, r),
            )
        }
    };
    let mut out = BytesMut::new();
    samsa_protocol::streams::write_response(&mut out, h.correlation_id, h.api_version, &response);
    Ok(Reply::Ready(vec![Chunk::Bytes(out.freeze())]))
}
