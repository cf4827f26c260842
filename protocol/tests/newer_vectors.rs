//! The translation of versions newer than `kafka-protocol` knows, against Kafka 4.4's own
//! encodings: `newer_vectors.txt` holds bodies Kafka's generated classes wrote from the same
//! data at the codec's version and at the newer one
//! (`scripts/reference/vectors/NewerVersionVectors.java` prints them). The newer body
//! translated down must be Kafka's older body, which `kafka-protocol` must decode; the older
//! body translated up with what was dropped must be Kafka's newer body.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use samsa_protocol::newer::{self, Record, Value};

struct Vector {
    message: String,
    version: i16,
    body: Vec<u8>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn vectors() -> Vec<Vector> {
    include_str!("newer_vectors.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split(' ');
            Vector {
                message: parts.next().unwrap().to_string(),
                version: parts.next().unwrap().parse().unwrap(),
                body: hex(parts.next().unwrap_or("")),
            }
        })
        .collect()
}

/// The api key of `XxxRequest` / `XxxResponse`, and whether it is a request.
fn api(message: &str) -> (ApiKey, bool) {
    let (name, request) = match message.strip_suffix("Request") {
        Some(n) => (n, true),
        None => (message.strip_suffix("Response").unwrap(), false),
    };
    let key = newer::NEWER
        .iter()
        .map(|n| n.key)
        .find(|k| format!("{k:?}") == name)
        .unwrap_or_else(|| panic!("{name} is not served beyond the codec"));
    (key, request)
}

#[test]
fn kafkas_newer_bodies_translate_to_its_older_ones_and_back() {
    let vectors = vectors();
    let mut pairs = 0;
    for pair in vectors.chunks(2) {
        let [older, newer_body] = pair else {
            panic!("vectors come in pairs")
        };
        assert_eq!(older.message, newer_body.message);
        let (key, request) = api(&older.message);
        let what = format!("{} v{}", older.message, newer_body.version);
        let n = newer_body.version;
        if request {
            let (down, codec_version, added) = newer::request_down(key, n, &newer_body.body)
                .unwrap()
                .unwrap_or_else(|| panic!("{what} is not translated"));
            assert_eq!(codec_version, older.version, "{what}");
            assert_eq!(down, older.body, "{what} translated down");
            RequestKind::decode(key, &mut Bytes::from(down), codec_version)
                .unwrap_or_else(|e| panic!("{what}: kafka-protocol cannot decode it: {e}"));
            let up = newer::request_up(key, n, &older.body, Some(&added)).unwrap();
            assert_eq!(up, newer_body.body, "{what} translated up");
        } else {
            let (down, dropped) = newer::response_down(key, n, &newer_body.body).unwrap();
            assert_eq!(down, older.body, "{what} translated down");
            ResponseKind::decode(key, &mut Bytes::from(down), older.version)
                .unwrap_or_else(|e| panic!("{what}: kafka-protocol cannot decode it: {e}"));
            let up = newer::response_up(key, n, &older.body, Some(&dropped)).unwrap();
            assert_eq!(up, newer_body.body, "{what} translated up");
        }
        pairs += 1;
    }
    assert!(pairs >= newer::NEWER.len(), "a vector for every API");
}

fn vector(message: &str, version: i16) -> Vec<u8> {
    vectors()
        .into_iter()
        .find(|v| v.message == message && v.version == version)
        .unwrap()
        .body
}

fn frame(key: ApiKey, version: i16, body: &[u8]) -> Bytes {
    let mut buf = BytesMut::new();
    let mut h = RequestHeader::default();
    h.request_api_key = key as i16;
    h.request_api_version = version;
    h.correlation_id = 5;
    h.client_id = Some(StrBytes::from_static_str("vectors"));
    h.encode(&mut buf, key.request_header_version(version))
        .unwrap();
    buf.extend_from_slice(body);
    buf.freeze()
}

#[test]
fn a_newer_request_reaches_its_handler_with_the_fields_it_adds() {
    let id = uuid::Uuid::from_slice(b"abcdefghijklmnop").unwrap();
    let req = samsa_protocol::decode_request(frame(
        ApiKey::OffsetCommit,
        10,
        &vector("OffsetCommitRequest", 10),
    ))
    .unwrap();
    assert_eq!(req.api_version(), 10);
    let RequestKind::OffsetCommit(body) = req.body else {
        panic!("an OffsetCommit")
    };
    // kafka-protocol's struct has the id field though it cannot read v10: filled in.
    assert_eq!(body.topics[0].topic_id, id);
    assert_eq!(body.topics[0].partitions[0].committed_offset, 42);

    let req = samsa_protocol::decode_request(frame(
        ApiKey::ApiVersions,
        5,
        &vector("ApiVersionsRequest", 5),
    ))
    .unwrap();
    assert_eq!(
        req.added.get("ClusterId"),
        Some(&Value::string(Some("MkU3OEVBNTcwNTJENDM2Qg")))
    );
    assert_eq!(req.added.get("NodeId"), Some(&Value::Int(3)));

    let req = samsa_protocol::decode_request(frame(
        ApiKey::TxnOffsetCommit,
        6,
        &vector("TxnOffsetCommitRequest", 6),
    ))
    .unwrap();
    let topic: &Record = req.added.item("Topics", 0).unwrap();
    assert_eq!(topic.get("TopicId").and_then(Value::as_uuid), Some(id));

    // ShareFetch v2: the acquire mode and the renew flag beside v1's struct.
    let req = samsa_protocol::decode_request(frame(
        ApiKey::ShareFetch,
        2,
        &vector("ShareFetchRequest", 2),
    ))
    .unwrap();
    assert_eq!(req.added.get("ShareAcquireMode"), Some(&Value::Int(1)));
    assert_eq!(req.added.get("IsRenewAck"), Some(&Value::Bool(true)));
    let RequestKind::ShareFetch(body) = req.body else {
        panic!("a ShareFetch")
    };
    let batch = &body.topics[0].partitions[0].acknowledgement_batches[0];
    assert_eq!(batch.acknowledge_types, vec![4, 1, 4]);

    let req = samsa_protocol::decode_request(frame(
        ApiKey::ShareAcknowledge,
        2,
        &vector("ShareAcknowledgeRequest", 2),
    ))
    .unwrap();
    assert_eq!(req.added.get("IsRenewAck"), Some(&Value::Bool(true)));
}

#[test]
fn a_response_gets_the_fields_its_handler_adds_or_their_defaults() {
    use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
    use kafka_protocol::messages::DeleteGroupsResponse;
    let mut resp = DeleteGroupsResponse::default();
    let mut g = DeletableGroupResult::default();
    g.group_id = kafka_protocol::messages::GroupId(StrBytes::from_static_str("g"));
    resp.results = vec![g.clone(), g];
    let added = Record::new().with(
        "Results",
        Value::records([
            Record::new(),
            Record::new().with("ErrorMessage", Value::string(Some("why"))),
        ]),
    );
    let frame = samsa_protocol::response::encode_response_bytes_with(
        ApiKey::DeleteGroups,
        3,
        9,
        &ResponseKind::DeleteGroups(resp),
        Some(&added),
    )
    .unwrap();
    // size, correlation id, header tags; throttle; two results: "g", 0, null | "g", 0, "why"
    let body = &frame[9..];
    assert_eq!(
        body,
        [0, 0, 0, 0, 3, 2, b'g', 0, 0, 0, 0, 2, b'g', 0, 0, 4, b'w', b'h', b'y', 0, 0]
    );
}
