//! KIP-1071 streams group APIs, which `kafka-protocol` 0.18 does not know (not even their keys
//! in its `ApiKey` enum): StreamsGroupHeartbeat (88), StreamsGroupDescribe (89) and
//! StreamsGroupTopologyDescriptionUpdate (93). Their bodies are read and written by the
//! generic codec ([`crate::newer::codec`]) over Kafka 4.4's schemas
//! ([`crate::newer::streams_schemas`]), and mapped to the typed structs here (snake_case
//! names, `Option` for what is nullable).
//!
//! The frame path: [`crate::header::decode_request`] still refuses these keys as unknown, so
//! the connection peeks the key ([`is_streams_api`]) and hands such a frame to
//! [`decode_frame`], which reads the request header (v2: every version of the three is
//! flexible), checks the version against [`served_versions`] and decodes the body. The answer
//! goes through [`encode_response`] (response header v1 and body) or [`write_response`] (with
//! the size prefix).
//!
//! Invariant: decoding Kafka's bytes and encoding the struct again gives Kafka's bytes, at
//! every version (`tests/streams_vectors.rs`, with bodies Kafka's own classes wrote).

mod common;
pub mod describe;
pub mod heartbeat;
pub mod topology_update;

pub use common::{
    Endpoint, KeyValue, TaskIds, TaskOffset, TopicInfo, TopologyDescription,
    TopologyDescriptionGlobalStore, TopologyDescriptionNode, TopologyDescriptionSubtopology,
};
pub use describe::{
    description_status, Assignment, DescribedGroup, DescribedMember, DescribedSubtopology,
    DescribedTopology, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
};
pub use heartbeat::{
    CopartitionGroup, EndpointToPartitions, HeartbeatStatus, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse, Subtopology, TopicPartitions, Topology,
};
pub use topology_update::{
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
};

use bytes::{BufMut, BytesMut};

use crate::newer::codec::CodecError;

/// `decode(body, version)` and `encode(version)` of a typed message over its schema.
macro_rules! codec_methods {
    ($ty:ident, $schema:expr) => {
        impl $ty {
            /// Reads a body of this message at `version`; bytes after it are ignored, as
            /// Kafka ignores them.
            pub fn decode(
                body: &[u8],
                version: i16,
            ) -> Result<Self, $crate::newer::codec::CodecError> {
                $crate::newer::codec::read(&$schema, body, version)
                    .map(|r| <Self as $crate::streams::common::Wire>::from_record(&r))
            }

            /// Writes the body at `version`; fields the version lacks are left out. Strings
            /// are cut to 32767 bytes (see `common::bounded`), so this cannot fail.
            pub fn encode(&self, version: i16) -> Vec<u8> {
                let record = <Self as $crate::streams::common::Wire>::to_record(self);
                $crate::newer::codec::write(&$schema, &record, version)
                    .expect("a typed struct fits its schema")
            }
        }
    };
}
pub(crate) use codec_methods;

/// API keys (Kafka 4.4's `ApiKeys`).
pub const STREAMS_GROUP_HEARTBEAT: i16 = 88;
pub const STREAMS_GROUP_DESCRIBE: i16 = 89;
pub const STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: i16 = 93;

/// The versions served, Kafka 4.4's: (min, max).
pub const STREAMS_GROUP_HEARTBEAT_VERSIONS: (i16, i16) = (0, 1);
pub const STREAMS_GROUP_DESCRIBE_VERSIONS: (i16, i16) = (0, 1);
pub const STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_VERSIONS: (i16, i16) = (0, 0);

/// Whether `api_key` is one of the three streams group APIs.
pub fn is_streams_api(api_key: i16) -> bool {
    served_versions(api_key).is_some()
}

/// The (min, max) versions served of a streams group API, `None` for any other key.
pub fn served_versions(api_key: i16) -> Option<(i16, i16)> {
    match api_key {
        STREAMS_GROUP_HEARTBEAT => Some(STREAMS_GROUP_HEARTBEAT_VERSIONS),
        STREAMS_GROUP_DESCRIBE => Some(STREAMS_GROUP_DESCRIBE_VERSIONS),
        STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE => {
            Some(STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE_VERSIONS)
        }
        _ => None,
    }
}

/// The request header fields a handler needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
}

/// A decoded streams group request, with its header. (A heartbeat is the large variant and
/// the common one: boxing it would only add an allocation per request.)
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum StreamsRequest {
    Heartbeat(StreamsHeader, StreamsGroupHeartbeatRequest),
    Describe(StreamsHeader, StreamsGroupDescribeRequest),
    TopologyDescriptionUpdate(StreamsHeader, StreamsGroupTopologyDescriptionUpdateRequest),
}

impl StreamsRequest {
    pub fn header(&self) -> &StreamsHeader {
        match self {
            StreamsRequest::Heartbeat(h, _)
            | StreamsRequest::Describe(h, _)
            | StreamsRequest::TopologyDescriptionUpdate(h, _) => h,
        }
    }
    pub fn api_key(&self) -> i16 {
        self.header().api_key
    }
    pub fn api_version(&self) -> i16 {
        self.header().api_version
    }
    pub fn correlation_id(&self) -> i32 {
        self.header().correlation_id
    }
    pub fn client_id(&self) -> Option<&str> {
        self.header().client_id.as_deref()
    }
}

/// A streams group response body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum StreamsResponse {
    Heartbeat(StreamsGroupHeartbeatResponse),
    Describe(StreamsGroupDescribeResponse),
    TopologyDescriptionUpdate(StreamsGroupTopologyDescriptionUpdateResponse),
}

impl StreamsResponse {
    pub fn api_key(&self) -> i16 {
        match self {
            StreamsResponse::Heartbeat(_) => STREAMS_GROUP_HEARTBEAT,
            StreamsResponse::Describe(_) => STREAMS_GROUP_DESCRIBE,
            StreamsResponse::TopologyDescriptionUpdate(_) => {
                STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE
            }
        }
    }

    /// The body at `version`.
    pub fn encode_body(&self, version: i16) -> Vec<u8> {
        match self {
            StreamsResponse::Heartbeat(r) => r.encode(version),
            StreamsResponse::Describe(r) => r.encode(version),
            StreamsResponse::TopologyDescriptionUpdate(r) => r.encode(version),
        }
    }
}

/// Why a frame could not be turned into a streams group request. As for
/// [`crate::header::RequestError`], every variant closes the connection: Kafka answers only
/// ApiVersions with UNSUPPORTED_VERSION, and closes on an unsupported version of anything
/// else (a client negotiates versions through ApiVersions first). `UnsupportedVersion` still
/// carries what an answer would need, should the broker choose to answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamsFrameError {
    #[error("frame of {len} bytes is shorter than a request header")]
    TooShort { len: usize },
    #[error("api key {api_key} is not a streams group API (correlation id {correlation_id})")]
    NotStreams { api_key: i16, correlation_id: i32 },
    #[error(
        "api key {api_key} version {api_version} is not supported (served: {min_version}-{max_version})"
    )]
    UnsupportedVersion {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
        min_version: i16,
        max_version: i16,
    },
    #[error(
        "malformed api key {api_key} v{api_version} request (correlation id {correlation_id}): {reason}"
    )]
    Malformed {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
        reason: String,
    },
}

/// A bounds-checked reader of the request header's client id and tagged fields.
struct HeaderReader<'a> {
    buf: &'a [u8],
}

impl<'a> HeaderReader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Some(head)
    }
    fn uvarint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let b = self.take(1)?[0];
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    /// The client id: a nullable string with an int16 length, even in header v2 (KIP-482
    /// kept it so, for brokers to read it before they know the version).
    fn client_id(&mut self) -> Result<Option<String>, String> {
        let len = i16::from_be_bytes(
            self.take(2)
                .ok_or("header ends in the client id")?
                .try_into()
                .expect("2 bytes"),
        );
        if len < 0 {
            return Ok(None);
        }
        let bytes = self
            .take(len as usize)
            .ok_or("header ends in the client id")?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| "client id is not UTF-8".to_string())
    }
    /// Skips the header's tagged fields (Kafka defines none in header v2).
    fn skip_tagged_fields(&mut self) -> Result<(), String> {
        let bad = || "header ends in its tagged fields".to_string();
        let count = self.uvarint().ok_or_else(bad)?;
        for _ in 0..count {
            self.uvarint().ok_or_else(bad)?;
            let size = self.uvarint().ok_or_else(bad)?;
            let size = usize::try_from(size).map_err(|_| bad())?;
            self.take(size).ok_or_else(bad)?;
        }
        Ok(())
    }
}

/// Decodes a whole frame (size prefix already removed) of a streams group API: header v2,
/// then the body at the header's version. Checks, in order: a header's fixed prefix is
/// there, the key is one of the three, the version is served, then the header and the body
/// parse. Bytes after the body are ignored, as Kafka ignores them.
pub fn decode_frame(frame: &[u8]) -> Result<StreamsRequest, StreamsFrameError> {
    let (api_key, api_version, correlation_id) = crate::header::peek_prefix(frame)
        .ok_or(StreamsFrameError::TooShort { len: frame.len() })?;
    let (min_version, max_version) =
        served_versions(api_key).ok_or(StreamsFrameError::NotStreams {
            api_key,
            correlation_id,
        })?;
    if api_version < min_version || api_version > max_version {
        return Err(StreamsFrameError::UnsupportedVersion {
            api_key,
            api_version,
            correlation_id,
            min_version,
            max_version,
        });
    }
    let malformed = |reason: String| StreamsFrameError::Malformed {
        api_key,
        api_version,
        correlation_id,
        reason,
    };
    let mut r = HeaderReader {
        buf: &frame[crate::header::HEADER_PREFIX_BYTES..],
    };
    let client_id = r.client_id().map_err(malformed)?;
    r.skip_tagged_fields().map_err(malformed)?;
    let body = r.buf;
    let header = StreamsHeader {
        api_key,
        api_version,
        correlation_id,
        client_id,
    };
    let codec = |e: CodecError| malformed(e.to_string());
    Ok(match api_key {
        STREAMS_GROUP_HEARTBEAT => StreamsRequest::Heartbeat(
            header,
            StreamsGroupHeartbeatRequest::decode(body, api_version).map_err(codec)?,
        ),
        STREAMS_GROUP_DESCRIBE => StreamsRequest::Describe(
            header,
            StreamsGroupDescribeRequest::decode(body, api_version).map_err(codec)?,
        ),
        _ => StreamsRequest::TopologyDescriptionUpdate(
            header,
            StreamsGroupTopologyDescriptionUpdateRequest::decode(body, api_version)
                .map_err(codec)?,
        ),
    })
}

/// A response without its size prefix: header v1 (correlation id, empty tagged fields; every
/// version of the three APIs is flexible), then the body at `version`.
pub fn encode_response(correlation_id: i32, version: i16, response: &StreamsResponse) -> Vec<u8> {
    let body = response.encode_body(version);
    let mut out = Vec::with_capacity(5 + body.len());
    out.put_i32(correlation_id);
    out.put_u8(0);
    out.extend_from_slice(&body);
    out
}

/// [`encode_response`] as a whole frame, size prefix included, appended to `out` (as
/// [`crate::response::encode_response`] writes other responses).
pub fn write_response(
    out: &mut BytesMut,
    correlation_id: i32,
    version: i16,
    response: &StreamsResponse,
) {
    let bytes = encode_response(correlation_id, version, response);
    out.reserve(4 + bytes.len());
    out.put_i32(bytes.len() as i32);
    out.put_slice(&bytes);
}

/// A request frame (size prefix excluded) as a client writes it: header v2, then the body.
/// For tests and tools.
pub fn encode_request_frame(
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + body.len());
    out.put_i16(api_key);
    out.put_i16(api_version);
    out.put_i32(correlation_id);
    match client_id {
        Some(id) => {
            let id = common::bounded(id);
            out.put_i16(id.len() as i16);
            out.put_slice(id.as_bytes());
        }
        None => out.put_i16(-1),
    }
    out.put_u8(0);
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests;
