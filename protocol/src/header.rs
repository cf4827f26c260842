//! Request headers, and the order of checks that keeps a hostile frame from reaching a decoder
//! that trusts it: length first, then api key against the served table, then version, and
//! only then `kafka-protocol`'s header and body decoders.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::api_table::{ApiRange, SUPPORTED_APIS};
use crate::newer::{self, Record};

/// The fixed prefix every request header starts with: api key, api version, correlation id.
pub const HEADER_PREFIX_BYTES: usize = 8;

/// Why a frame could not be turned into a request. Every variant closes the connection,
/// except [`RequestError::UnsupportedVersion`] for ApiVersions, which is answered (KIP-511).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("frame of {len} bytes is shorter than a request header")]
    TooShort { len: usize },
    #[error("unknown or unsupported api key {api_key} (correlation id {correlation_id})")]
    UnknownApiKey { api_key: i16, correlation_id: i32 },
    #[error(
        "{api_key:?} version {api_version} is not supported (served: {min_version}-{max_version})"
    )]
    UnsupportedVersion {
        api_key: ApiKey,
        api_version: i16,
        correlation_id: i32,
        min_version: i16,
        max_version: i16,
    },
    #[error(
        "malformed {api_key:?} v{api_version} request (correlation id {correlation_id}): {reason}"
    )]
    Malformed {
        api_key: ApiKey,
        api_version: i16,
        correlation_id: i32,
        reason: String,
    },
}

/// A request ready for its handler.
#[derive(Debug)]
pub struct DecodedRequest {
    pub api_key: ApiKey,
    pub header: RequestHeader,
    /// The body, decoded at `header.request_api_version` or, for a version newer than
    /// `kafka-protocol` knows, at the newest it knows (see [`crate::newer`]).
    pub body: RequestKind,
    /// What the request's version adds beyond the version `body` was decoded at (empty for
    /// versions `kafka-protocol` decodes itself).
    pub added: Record,
}

impl DecodedRequest {
    pub fn api_version(&self) -> i16 {
        self.header.request_api_version
    }
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }
}

/// The api key, version and correlation id of a frame, read without trusting anything else.
pub fn peek_prefix(frame: &[u8]) -> Option<(i16, i16, i32)> {
    if frame.len() < HEADER_PREFIX_BYTES {
        return None;
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    Some((key, version, correlation_id))
}

/// Decodes a whole frame body (size prefix already removed). `records` fields of Produce stay
/// zero-copy slices of `frame`.
pub fn decode_request(frame: Bytes) -> Result<DecodedRequest, RequestError> {
    decode_request_served(frame, SUPPORTED_APIS)
}

/// [`decode_request`] against another table of served APIs, for servers that answer a
/// different set than the broker (the benchmark's discard sink).
pub fn decode_request_served(
    mut frame: Bytes,
    served: &[ApiRange],
) -> Result<DecodedRequest, RequestError> {
    let (raw_key, api_version, correlation_id) =
        peek_prefix(&frame).ok_or(RequestError::TooShort { len: frame.len() })?;
    let range = ApiKey::try_from(raw_key)
        .ok()
        .and_then(|k| served.iter().copied().find(|a| a.key == k))
        .ok_or(RequestError::UnknownApiKey {
            api_key: raw_key,
            correlation_id,
        })?;
    let api_key = range.key;
    let decodable = api_key.valid_versions();
    if api_version < range.min_version
        || api_version > range.max_version
        || api_version < decodable.min
        || api_version > newer::max_version(api_key)
    {
        return Err(RequestError::UnsupportedVersion {
            api_key,
            api_version,
            correlation_id,
            min_version: range.min_version,
            max_version: range.max_version,
        });
    }
    let malformed = |reason: String| RequestError::Malformed {
        api_key,
        api_version,
        correlation_id,
        reason,
    };
    let header_version = api_key.request_header_version(api_version);
    let header =
        RequestHeader::decode(&mut frame, header_version).map_err(|e| malformed(e.to_string()))?;
    // A version newer than the codec's is read as the codec's newest (crate::newer).
    let (body, added) = match newer::request_down(api_key, api_version, &frame)
        .map_err(|e| malformed(e.to_string()))?
    {
        None => (
            RequestKind::decode(api_key, &mut frame, api_version)
                .map_err(|e| malformed(e.to_string()))?,
            Record::new(),
        ),
        Some((bytes, codec_version, added)) => {
            let mut body = RequestKind::decode(api_key, &mut Bytes::from(bytes), codec_version)
                .map_err(|e| malformed(e.to_string()))?;
            newer::fill_request(&mut body, &added);
            (body, added)
        }
    };
    // Bytes after the body are ignored, as Kafka ignores them: librdkafka 2.12 sends
    // Metadata v13 with fields that version no longer has.
    Ok(DecodedRequest {
        api_key,
        header,
        body,
        added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::MetadataRequest;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn encode(key: ApiKey, version: i16, body: &impl Encodable) -> Bytes {
        let mut buf = BytesMut::new();
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = 7;
        header.client_id = Some(StrBytes::from_static_str("test"));
        header
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn decodes_a_flexible_metadata_request() {
        let frame = encode(ApiKey::Metadata, 12, &MetadataRequest::default());
        let req = decode_request(frame).unwrap();
        assert_eq!(req.api_key, ApiKey::Metadata);
        assert_eq!(req.correlation_id(), 7);
        assert_eq!(req.header.client_id.as_deref(), Some("test"));
    }

    #[test]
    fn refuses_unknown_keys_short_frames_and_unsupported_versions() {
        assert!(matches!(
            decode_request(Bytes::from_static(&[0, 1])),
            Err(RequestError::TooShort { .. })
        ));
        let unknown = Bytes::from_static(&[0x7f, 0, 0, 0, 0, 0, 0, 9]);
        assert!(matches!(
            decode_request(unknown),
            Err(RequestError::UnknownApiKey {
                api_key: 0x7f00,
                correlation_id: 9
            })
        ));
        let produce_v2 = Bytes::from_static(&[0, 0, 0, 2, 0, 0, 0, 1, 0, 0]);
        assert!(matches!(
            decode_request(produce_v2),
            Err(RequestError::UnsupportedVersion { .. })
        ));
        let too_new = Bytes::from_static(&[0, 3, 0, 99, 0, 0, 0, 1, 0, 0]);
        assert!(matches!(
            decode_request(too_new),
            Err(RequestError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn truncated_body_is_malformed_not_a_panic() {
        let frame = encode(ApiKey::Metadata, 12, &MetadataRequest::default());
        for cut in HEADER_PREFIX_BYTES..frame.len() {
            let _ = decode_request(frame.slice(..cut));
        }
    }
}
