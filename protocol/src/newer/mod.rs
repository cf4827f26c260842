//! Versions newer than `kafka-protocol` knows. Kafka 4.4 serves newer versions of some APIs
//! than `kafka-protocol` 0.18 can read or write; this module serves them by translation, so
//! that handlers keep working with `kafka-protocol`'s structs:
//!
//! - a request of a newer version is re-encoded as the newest version the crate knows (its
//!   *codec version*) and decoded by the crate; the fields the newer version adds are handed
//!   to the handler beside the struct, as a [`Record`] (`DecodedRequest::added`), and where
//!   the crate's struct already has the field (a topic id it cannot yet read), it is filled in;
//! - a response is encoded by the crate at the codec version and re-encoded as the newer
//!   version, the fields that version adds taking the values the handler gave (again a
//!   [`Record`], by name and position) or the schema's defaults.
//!
//! The re-encoding is one generic walk ([`codec`]) over field descriptions written from Kafka
//! 4.4's schemas ([`schemas`]): read a body at one version, write it at another. Where two
//! versions of a body are byte for byte the same (ListOffsets 11 is 10 with one more timestamp
//! value allowed; ApiVersions 5's response is 4's), the table says so and nothing is
//! translated. Clients (tests, tools) use the same translation the other way round:
//! [`request_up`] and [`response_down`].
//!
//! Invariant: for every entry of [`NEWER`], a body of the newer version translated down and
//! back up with what was dropped is the same bytes (tested with Kafka's own encodings in
//! `tests/newer_vectors.rs`).

pub mod codec;
pub mod schemas;
pub mod streams_schemas;

pub use codec::{CodecError, Record, Value};

use kafka_protocol::messages::{ApiKey, RequestKind};

use codec::Message;

/// An API whose newest served version is beyond `kafka-protocol`'s.
#[derive(Debug)]
pub struct Newer {
    pub key: ApiKey,
    /// The newest version served (Kafka 4.4's).
    pub max_version: i16,
    /// The newest request version `kafka-protocol` decodes.
    pub request_codec: i16,
    /// The newest response version `kafka-protocol` encodes.
    pub response_codec: i16,
    /// The request's schema, or `None` where the newer versions' bodies are the codec
    /// version's bytes.
    pub request: Option<&'static Message>,
    /// The same for the response.
    pub response: Option<&'static Message>,
}

const fn newer(
    key: ApiKey,
    max_version: i16,
    request_codec: i16,
    response_codec: i16,
    request: Option<&'static Message>,
    response: Option<&'static Message>,
) -> Newer {
    Newer {
        key,
        max_version,
        request_codec,
        response_codec,
        request,
        response,
    }
}

/// Every API served beyond `kafka-protocol`'s versions, with how.
pub static NEWER: &[Newer] = &[
    // v11 allows timestamp -6 (earliest pending upload, KIP-1023); the layout is v10's.
    newer(ApiKey::ListOffsets, 11, 10, 10, None, None),
    // v10 names topics by id; the crate has v10 responses, and the id field in its request
    // structs (filled in here) though it cannot read v10 requests.
    newer(
        ApiKey::OffsetCommit,
        10,
        9,
        10,
        Some(&schemas::OFFSET_COMMIT_REQUEST),
        None,
    ),
    newer(
        ApiKey::OffsetFetch,
        10,
        9,
        10,
        Some(&schemas::OFFSET_FETCH_REQUEST),
        None,
    ),
    // v5 adds ClusterId and NodeId to the request (KIP-1242); the response is v4's.
    newer(
        ApiKey::ApiVersions,
        5,
        4,
        4,
        Some(&schemas::API_VERSIONS_REQUEST),
        None,
    ),
    newer(
        ApiKey::WriteTxnMarkers,
        2,
        1,
        1,
        Some(&schemas::WRITE_TXN_MARKERS_REQUEST),
        None,
    ),
    newer(
        ApiKey::TxnOffsetCommit,
        6,
        5,
        5,
        Some(&schemas::TXN_OFFSET_COMMIT_REQUEST),
        Some(&schemas::TXN_OFFSET_COMMIT_RESPONSE),
    ),
    newer(
        ApiKey::DescribeLogDirs,
        5,
        4,
        4,
        None,
        Some(&schemas::DESCRIBE_LOG_DIRS_RESPONSE),
    ),
    newer(
        ApiKey::DeleteGroups,
        3,
        2,
        2,
        None,
        Some(&schemas::DELETE_GROUPS_RESPONSE),
    ),
    newer(
        ApiKey::BrokerHeartbeat,
        2,
        1,
        1,
        Some(&schemas::BROKER_HEARTBEAT_REQUEST),
        None,
    ),
    newer(
        ApiKey::AddRaftVoter,
        1,
        0,
        0,
        Some(&schemas::ADD_RAFT_VOTER_REQUEST),
        None,
    ),
    newer(
        ApiKey::WriteShareGroupState,
        1,
        0,
        0,
        Some(&schemas::WRITE_SHARE_GROUP_STATE_REQUEST),
        None,
    ),
    newer(
        ApiKey::ReadShareGroupStateSummary,
        1,
        0,
        0,
        None,
        Some(&schemas::READ_SHARE_GROUP_STATE_SUMMARY_RESPONSE),
    ),
    // v2 adds the acquire mode (KIP-1206) and the renew flag (KIP-1222) to the request; the
    // response is v1's.
    newer(
        ApiKey::ShareFetch,
        2,
        1,
        1,
        Some(&schemas::SHARE_FETCH_REQUEST),
        None,
    ),
    newer(
        ApiKey::ShareAcknowledge,
        2,
        1,
        1,
        Some(&schemas::SHARE_ACKNOWLEDGE_REQUEST),
        Some(&schemas::SHARE_ACKNOWLEDGE_RESPONSE),
    ),
    newer(
        ApiKey::DescribeShareGroupOffsets,
        1,
        0,
        0,
        None,
        Some(&schemas::DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE),
    ),
];

/// The entry for `key`, if it is served beyond `kafka-protocol`'s versions.
pub fn find(key: ApiKey) -> Option<&'static Newer> {
    NEWER.iter().find(|n| n.key == key)
}

/// The newest version of `key` that can be decoded, directly or by translation.
pub fn max_version(key: ApiKey) -> i16 {
    find(key).map_or(key.valid_versions().max, |n| n.max_version)
}

/// The version `kafka-protocol` decodes a request of `key` at `version` as.
pub fn request_codec_version(key: ApiKey, version: i16) -> i16 {
    find(key).map_or(version, |n| version.min(n.request_codec))
}

/// The version `kafka-protocol` encodes a response of `key` at `version` as.
pub fn response_codec_version(key: ApiKey, version: i16) -> i16 {
    find(key).map_or(version, |n| version.min(n.response_codec))
}

/// Translates a body between `version` and `codec` by `schema` (None: the same bytes).
fn translate(
    schema: Option<&'static Message>,
    body: &[u8],
    from: i16,
    to: i16,
    added: Option<&Record>,
) -> Result<(Vec<u8>, Record), CodecError> {
    match schema {
        Some(m) if from != to => codec::translate(m, body, from, to, added),
        _ => Ok((body.to_vec(), Record::new())),
    }
}

/// A request body of `key` at `version` as the codec version's bytes, with the fields the
/// codec version lacks. `None` when `kafka-protocol` reads `version` itself.
pub fn request_down(
    key: ApiKey,
    version: i16,
    body: &[u8],
) -> Result<Option<(Vec<u8>, i16, Record)>, CodecError> {
    let Some(n) = find(key).filter(|n| version > n.request_codec) else {
        return Ok(None);
    };
    let (bytes, added) = translate(n.request, body, version, n.request_codec, None)?;
    Ok(Some((bytes, n.request_codec, added)))
}

/// A response body `kafka-protocol` encoded at the codec version, as the bytes of `version`,
/// with `added` for the fields the codec version lacks (defaults for those it does not name).
pub fn response_up(
    key: ApiKey,
    version: i16,
    codec_body: &[u8],
    added: Option<&Record>,
) -> Result<Vec<u8>, CodecError> {
    match find(key).filter(|n| version > n.response_codec) {
        Some(n) => Ok(translate(n.response, codec_body, n.response_codec, version, added)?.0),
        None => Ok(codec_body.to_vec()),
    }
}

/// For clients: a request body encoded by `kafka-protocol` at the codec version, as the bytes
/// of `version`, with `added` for the fields it adds.
pub fn request_up(
    key: ApiKey,
    version: i16,
    codec_body: &[u8],
    added: Option<&Record>,
) -> Result<Vec<u8>, CodecError> {
    match find(key).filter(|n| version > n.request_codec) {
        Some(n) => Ok(translate(n.request, codec_body, n.request_codec, version, added)?.0),
        None => Ok(codec_body.to_vec()),
    }
}

/// For clients: a response body of `version` as the codec version's bytes, with the fields
/// the codec version lacks.
pub fn response_down(
    key: ApiKey,
    version: i16,
    body: &[u8],
) -> Result<(Vec<u8>, Record), CodecError> {
    match find(key).filter(|n| version > n.response_codec) {
        Some(n) => translate(n.response, body, version, n.response_codec, None),
        None => Ok((body.to_vec(), Record::new())),
    }
}

/// Puts the fields a newer request version added into `kafka-protocol`'s struct where it has
/// a field for them: the topic ids of OffsetCommit v10 and OffsetFetch v10.
pub fn fill_request(body: &mut RequestKind, added: &Record) {
    match body {
        RequestKind::OffsetCommit(r) => {
            for (i, t) in r.topics.iter_mut().enumerate() {
                if let Some(id) = added
                    .item("Topics", i)
                    .and_then(|t| t.get("TopicId"))
                    .and_then(Value::as_uuid)
                {
                    t.topic_id = id;
                }
            }
        }
        RequestKind::OffsetFetch(r) => {
            for (g, group) in r.groups.iter_mut().enumerate() {
                let Some(added) = added.item("Groups", g) else {
                    continue;
                };
                for (i, t) in group.topics.iter_mut().flatten().enumerate() {
                    if let Some(id) = added
                        .item("Topics", i)
                        .and_then(|t| t.get("TopicId"))
                        .and_then(Value::as_uuid)
                    {
                        t.topic_id = id;
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_beyond_the_codec_and_its_schemas_reach_the_newer_version() {
        for n in NEWER {
            assert!(n.max_version > n.request_codec || n.max_version > n.response_codec);
            assert!(n.request_codec <= n.key.valid_versions().max, "{:?}", n.key);
            for m in n.request.iter().chain(n.response.iter()) {
                assert!(
                    m.fields.iter().any(|f| f.versions.contains(n.max_version)),
                    "{}",
                    m.name
                );
            }
        }
        for w in NEWER.windows(2) {
            assert_ne!(w[0].key, w[1].key);
        }
    }
}
