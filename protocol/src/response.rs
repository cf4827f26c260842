//! Response framing: size prefix, response header, body.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;

use crate::newer::{self, Record};

/// A response the codec refused to encode (a field the version lacks, a size overflow).
#[derive(Debug, thiserror::Error)]
#[error("cannot encode response: {0}")]
pub struct EncodeError(pub String);

/// The response header version for `key` at `version`. ApiVersions always answers with header
/// v0, even in its flexible versions, because a client cannot know the broker's header
/// version before it has the answer (KIP-511); kcat fails with "Bad message format" otherwise.
pub fn response_header_version(key: ApiKey, version: i16) -> i16 {
    if key == ApiKey::ApiVersions {
        0
    } else {
        key.response_header_version(version)
    }
}

/// What [`encode_response`] reserves before encoding.
const RESPONSE_CAPACITY_GUESS: usize = 256;

/// Encodes a whole response frame, size prefix included, into `out`.
pub fn encode_response(
    out: &mut BytesMut,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
) -> Result<(), EncodeError> {
    encode_response_with(out, key, version, correlation_id, body, None)
}

/// [`encode_response`] for any served version: one newer than `kafka-protocol` encodes is
/// encoded at the newest it knows and translated, the fields that version adds taking their
/// values from `added` (see [`crate::newer`]).
pub fn encode_response_with(
    out: &mut BytesMut,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
    added: Option<&Record>,
) -> Result<(), EncodeError> {
    // Most responses fit: one allocation instead of a doubling from eight bytes upwards
    // (about four reallocations per Produce response).
    out.reserve(RESPONSE_CAPACITY_GUESS);
    let start = out.len();
    out.put_i32(0);
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation_id;
    header
        .encode(out, response_header_version(key, version))
        .map_err(|e| EncodeError(format!("{key:?} v{version} header: {e}")))?;
    let codec_version = newer::response_codec_version(key, version);
    if codec_version == version {
        body.encode(out, version)
            .map_err(|e| EncodeError(format!("{key:?} v{version} body: {e}")))?;
    } else {
        let mut codec_body = BytesMut::new();
        body.encode(&mut codec_body, codec_version)
            .map_err(|e| EncodeError(format!("{key:?} v{codec_version} body: {e}")))?;
        let translated = newer::response_up(key, version, &codec_body, added)
            .map_err(|e| EncodeError(format!("{key:?} v{version} body: {e}")))?;
        out.put_slice(&translated);
    }
    let size = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&size.to_be_bytes());
    Ok(())
}

/// Encodes a response frame whose body was already encoded by hand (fast paths).
pub fn frame_raw(out: &mut BytesMut, key: ApiKey, version: i16, correlation_id: i32, body: &[u8]) {
    let header_bytes = if response_header_version(key, version) >= 1 {
        5
    } else {
        4
    };
    out.reserve(4 + header_bytes + body.len());
    out.put_i32((header_bytes + body.len()) as i32);
    out.put_i32(correlation_id);
    if header_bytes == 5 {
        out.put_u8(0); // empty tagged fields
    }
    out.put_slice(body);
}

/// Convenience for tests and tools: one encoded frame as `Bytes`.
pub fn encode_response_bytes(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
) -> Result<Bytes, EncodeError> {
    let mut out = BytesMut::new();
    encode_response(&mut out, key, version, correlation_id, body)?;
    Ok(out.freeze())
}

/// [`encode_response_bytes`] with the fields a newer version adds (see [`crate::newer`]).
pub fn encode_response_bytes_with(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
    added: Option<&Record>,
) -> Result<Bytes, EncodeError> {
    let mut out = BytesMut::new();
    encode_response_with(&mut out, key, version, correlation_id, body, added)?;
    Ok(out.freeze())
}
