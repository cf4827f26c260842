//! Hostile and broken input: each gets its documented treatment (the connection is closed, or
//! the partition answers with an error) while another client keeps working.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use common::*;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

fn connect(broker: &Broker) -> TcpStream {
    let s = TcpStream::connect(broker.bootstrap()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// True when the broker closed the connection (EOF or reset) without answering.
fn closed_without_answer(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
    }
}

fn request(key: ApiKey, version: i16, correlation_id: i32, body: &impl Encodable) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    let mut h = RequestHeader::default();
    h.request_api_key = key as i16;
    h.request_api_version = version;
    h.correlation_id = correlation_id;
    h.client_id = Some(StrBytes::from_static_str("bad-input-test"));
    h.encode(&mut buf, key.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.to_vec()
}

fn read_response(s: &mut TcpStream) -> Bytes {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).expect("response size");
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut body).expect("response body");
    Bytes::from(body)
}

/// Another client still produces and reads metadata.
fn broker_still_serves(broker: &Broker, topic: &str) {
    let producer = producer(broker, &[]);
    let acks = produce_all(
        &producer,
        topic,
        &[(None, b"still alive".to_vec())],
        Some(0),
    );
    assert_eq!(acks.len(), 1);
}

#[test]
fn broken_frames_close_only_their_connection() {
    let broker = Broker::start();
    create_topic(&broker, "ok", 1, &[]);
    let mut bystander = connect(&broker);

    // A 2 GB size prefix: refused before anything is buffered.
    let mut s = connect(&broker);
    s.write_all(&(2_000_000_000i32).to_be_bytes()).unwrap();
    assert!(closed_without_answer(&mut s), "2 GB frame");

    // A negative size.
    let mut s = connect(&broker);
    s.write_all(&(-1i32).to_be_bytes()).unwrap();
    assert!(closed_without_answer(&mut s), "negative size");

    // Garbage inside a well-sized frame.
    let mut s = connect(&broker);
    let mut garbage = (40i32).to_be_bytes().to_vec();
    garbage.extend((0..40u8).map(|i| i.wrapping_mul(37).wrapping_add(11)));
    s.write_all(&garbage).unwrap();
    assert!(closed_without_answer(&mut s), "garbage frame");

    // A frame too short to hold a request header.
    let mut s = connect(&broker);
    s.write_all(&[0, 0, 0, 3, 0, 18, 0]).unwrap();
    assert!(closed_without_answer(&mut s), "short frame");

    // An unknown API key.
    let mut s = connect(&broker);
    s.write_all(&[0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff])
        .unwrap();
    assert!(closed_without_answer(&mut s), "unknown api key");

    // A Metadata version we do not serve.
    let mut s = connect(&broker);
    s.write_all(&[0, 0, 0, 10, 0, 3, 0, 99, 0, 0, 0, 1, 0xff, 0xff])
        .unwrap();
    assert!(closed_without_answer(&mut s), "unsupported version");

    // The bystander connection was never disturbed.
    bystander
        .write_all(&request(ApiKey::ApiVersions, 3, 5, &api_versions_request()))
        .unwrap();
    let mut resp = read_response(&mut bystander);
    assert_eq!(
        ResponseHeader::decode(&mut resp, 0).unwrap().correlation_id,
        5
    );
    broker_still_serves(&broker, "ok");
    let log = broker.log_lines().join("\n");
    assert!(
        log.contains("closing connection"),
        "the reason is logged:\n{log}"
    );
}

#[test]
fn too_new_api_versions_gets_error_35_and_its_own_supported_range() {
    let broker = Broker::start();
    let mut s = connect(&broker);
    // ApiVersions v99 with a body the broker cannot know.
    s.write_all(&[0, 0, 0, 12, 0, 18, 0, 99, 0, 0, 0, 9, 0xff, 0xff, 0, 0])
        .unwrap();
    let mut resp = read_response(&mut s);
    assert_eq!(resp.get_i32(), 9, "correlation id (header v0)");
    let body = ApiVersionsResponse::decode(&mut resp, 0).unwrap();
    assert_eq!(body.error_code, 35);
    // As Kafka 4.4 answers (the differential run compares it): ApiVersions' own range only,
    // for the client to retry at a version both know.
    let ranges: Vec<(i16, i16, i16)> = body
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    assert_eq!(ranges, vec![(18, 0, 5)]);
}

fn batch(values: &[&str]) -> Bytes {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // offset - sequence constant: kafka-protocol's encoder keeps them in one batch.
            sequence: i as i32 - 1,
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(Bytes::copy_from_slice(v.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    buf.freeze()
}

fn produce_request(topic: &str, records: Bytes) -> ProduceRequest {
    let mut pd = PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(records);
    let mut td = TopicProduceData::default();
    td.name = TopicName(StrBytes::from_string(topic.into()));
    td.partition_data = vec![pd];
    let mut req = ProduceRequest::default();
    req.acks = 1;
    req.timeout_ms = 5000;
    req.topic_data = vec![td];
    req
}

fn produce_error(s: &mut TcpStream, version: i16, req: &ProduceRequest) -> i16 {
    s.write_all(&request(ApiKey::Produce, version, 77, req))
        .unwrap();
    let mut resp = read_response(s);
    let header =
        ResponseHeader::decode(&mut resp, ApiKey::Produce.response_header_version(version))
            .unwrap();
    assert_eq!(header.correlation_id, 77);
    let body = ProduceResponse::decode(&mut resp, version).unwrap();
    body.responses[0].partition_responses[0].error_code
}

#[test]
fn a_corrupt_crc_is_corrupt_message_for_that_partition_only() {
    let broker = Broker::start();
    create_topic(&broker, "crc", 1, &[]);
    let mut s = connect(&broker);
    let good = batch(&["a", "b", "c"]);
    let mut bad = good.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0xff; // inside the CRC-covered part
    assert_eq!(
        produce_error(&mut s, 9, &produce_request("crc", Bytes::from(bad))),
        2,
        "CORRUPT_MESSAGE"
    );
    // Same connection, a good batch: accepted at offset 0 (nothing of the bad one was kept).
    assert_eq!(produce_error(&mut s, 9, &produce_request("crc", good)), 0);
    let consumer = assigned_consumer(
        &broker,
        "crc",
        &[0],
        rdkafka::topic_partition_list::Offset::Beginning,
    );
    let got = consume_n(&consumer, 3, Duration::from_secs(20));
    assert_eq!(
        got.iter().map(|g| g.offset).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    // A record set that holds no whole batch, or is not one batch of magic 2, is
    // INVALID_RECORD (which producers do not retry), as Kafka 4.4 answers: truncated bytes, an
    // empty set, two batches, a magic 1 message set. A length below any record's is corrupt.
    let two = [batch(&["x"]).to_vec(), batch(&["y"]).to_vec()].concat();
    let mut magic_1 = batch(&["x"]).to_vec();
    magic_1[16] = 1;
    for (what, records, code) in [
        ("truncated", batch(&["x"]).slice(..30), 87),
        ("empty", Bytes::new(), 87),
        ("two batches", Bytes::from(two), 87),
        ("magic 1", Bytes::from(magic_1), 87),
        ("length 0", Bytes::from(vec![0u8; 70]), 2),
    ] {
        assert_eq!(
            produce_error(&mut s, 9, &produce_request("crc", records)),
            code,
            "{what}"
        );
    }
}

/// Kafka's internal topics are written by their coordinators only: a client's Produce to
/// `__consumer_offsets` is INVALID_TOPIC_EXCEPTION and nothing lands in the group log.
#[test]
fn produce_into_an_internal_topic_is_refused() {
    let broker = Broker::start();
    // A group's coordinator lookup creates __consumer_offsets.
    let mut find = kafka_protocol::messages::FindCoordinatorRequest::default();
    find.key = StrBytes::from_static_str("g");
    let _: kafka_protocol::messages::FindCoordinatorResponse =
        raw_request(&broker, ApiKey::FindCoordinator, 3, &find);
    let mut s = connect(&broker);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let code = produce_error(
            &mut s,
            9,
            &produce_request("__consumer_offsets", batch(&["x"])),
        );
        // Until the coordinator's topic exists, it is unknown; then it is refused.
        if code != 3 || std::time::Instant::now() > deadline {
            assert_eq!(code, 17, "INVALID_TOPIC_EXCEPTION");
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn legacy_produce_versions_are_answered_unsupported_version() {
    let broker = Broker::start();
    create_topic(&broker, "legacy", 1, &[]);
    let mut s = connect(&broker);
    // Produce v2: acks, timeout, [topic, [partition, message set]].
    let mut body = BytesMut::new();
    body.put_i16(1);
    body.put_i32(1000);
    body.put_i32(1);
    body.put_i16(6);
    body.put_slice(b"legacy");
    body.put_i32(1);
    body.put_i32(0);
    body.put_i32(4);
    body.put_slice(&[1, 2, 3, 4]);
    let mut frame = BytesMut::new();
    frame.put_i32(0);
    frame.put_i16(0);
    frame.put_i16(2);
    frame.put_i32(31);
    frame.put_i16(-1);
    frame.put_slice(&body);
    let len = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    s.write_all(&frame).unwrap();
    let mut resp = read_response(&mut s);
    assert_eq!(resp.get_i32(), 31);
    assert_eq!(resp.get_i32(), 1, "one topic");
    let name_len = resp.get_i16() as usize;
    assert_eq!(&resp.split_to(name_len)[..], b"legacy");
    assert_eq!(resp.get_i32(), 1, "one partition");
    assert_eq!(resp.get_i32(), 0);
    assert_eq!(resp.get_i16(), 35, "UNSUPPORTED_VERSION");
}

/// A listener that asks for TLS or SASL without the settings Samsa can serve it with is refused
/// at start, naming it, and nothing listens on its port: Samsa must never serve in plaintext
/// what the user configured as secure.
#[test]
fn a_tls_or_sasl_listener_without_its_settings_is_refused_at_start_and_nothing_listens() {
    // Kafka's defaults (a JKS keystore, GSSAPI) are what Samsa cannot serve: each is refused,
    // naming the listener and the key, before anything listens.
    for (proto, key) in [
        ("SSL", "ssl.keystore"),
        ("SASL_PLAINTEXT", "sasl.enabled.mechanisms"),
        ("SASL_SSL", "ssl.keystore"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let port = compat_tests::free_port();
        let mut cmd = std::process::Command::new(compat_tests::samsa_bin());
        cmd.arg(format!("--log.dirs={}", dir.path().display()))
            .arg(format!("--listeners={proto}://127.0.0.1:{port}"))
            .arg("--metrics.listener=")
            .arg("--console.listener=");
        let (status, _, err) =
            compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
        assert!(!status.success(), "{proto}: {err}");
        assert!(
            err.contains(&format!("listener {proto}")) && err.contains(key),
            "{proto}: {err}"
        );
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{proto}: something listens on {port}"
        );
    }
    // A SASL listener that asks for signed OAUTHBEARER tokens (a validator class, KIP-768),
    // which Samsa does not validate, through a properties file.
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("server.properties");
    std::fs::write(
        &props,
        format!(
            "listeners=CLIENT://127.0.0.1:{}\nlistener.security.protocol.map=CLIENT:SASL_PLAINTEXT\n\
             listener.name.client.sasl.enabled.mechanisms=OAUTHBEARER\n\
             listener.name.client.oauthbearer.sasl.server.callback.handler.class=\
             org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n\
             log.dirs={}\nmetrics.listener=\n",
            compat_tests::free_port(),
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(compat_tests::samsa_bin());
    cmd.arg("--config").arg(&props);
    let (status, _, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
    assert!(!status.success(), "{err}");
    assert!(
        err.contains("listener CLIENT") && err.contains("(KIP-768) is not implemented"),
        "{err}"
    );
    // Between nodes: a secured controller listener or inter-broker listener whose settings
    // cannot be honoured stops the start, naming the listener and the key.
    let refused = |extra: &[String], says: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let (client, controller) = (compat_tests::free_port(), compat_tests::free_port());
        let mut cmd = std::process::Command::new(compat_tests::samsa_bin());
        cmd.arg(format!("--log.dirs={}", dir.path().display()))
            .arg(format!(
                "--listeners=PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}"
            ))
            .arg("--controller.listener.names=CONTROLLER")
            .arg("--metrics.listener=")
            .arg("--console.listener=")
            .args(
                extra
                    .iter()
                    .map(|a| a.replace("{controller}", &controller.to_string())),
            );
        let (status, _, err) =
            compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
        assert!(!status.success(), "{err}");
        assert!(says.iter().all(|s| err.contains(s)), "{says:?}: {err}");
    };
    // TLS on the controller listener without a keystore.
    refused(
        &["--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL".into()],
        &["listener CONTROLLER", "ssl.keystore.location"],
    );
    // SCRAM on the controller listener (its credentials are in the metadata it serves).
    refused(
        &[
            "--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT".into(),
            "--listener.name.controller.sasl.enabled.mechanisms=SCRAM-SHA-256".into(),
        ],
        &[
            "listener CONTROLLER",
            "SCRAM-SHA-256 cannot authenticate nodes to controllers",
        ],
    );
    // A cluster of several whose inter-broker listener is SASL without a mechanism for it
    // (Kafka's default, GSSAPI, is Kerberos).
    let other = compat_tests::free_port();
    refused(
        &[
            "--listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
            "--sasl.enabled.mechanisms=PLAIN".into(),
            "--listener.name.plaintext.plain.sasl.jaas.config=org.apache.kafka.common.\
             security.plain.PlainLoginModule required user_admin=\"x\";"
                .into(),
            "--node.id=1".into(),
            format!("--controller.quorum.voters=1@127.0.0.1:{{controller}},2@127.0.0.1:{other}"),
        ],
        &[
            "sasl.mechanism.inter.broker.protocol=GSSAPI",
            "Kerberos is not implemented",
        ],
    );
}

/// A request frame (size, header v1 or v2 with client id "x", body) by hand.
fn hand_frame(api: i16, version: i16, flexible: bool, body: &[u8]) -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend_from_slice(&api.to_be_bytes());
    msg.extend_from_slice(&version.to_be_bytes());
    msg.extend_from_slice(&7i32.to_be_bytes());
    msg.extend_from_slice(&1i16.to_be_bytes());
    msg.push(b'x');
    if flexible {
        msg.push(0); // no tagged fields
    }
    msg.extend_from_slice(body);
    let mut frame = (msg.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&msg);
    frame
}

/// Found by the request_frame fuzz target: a frame of a few bytes can declare an array of 2^31
/// or 2^32 entries, and the codec reserves room for all of them before it finds the frame
/// ends. The broker closes that connection and goes on serving (the allocator reserves address
/// space without touching it); it must never abort.
#[test]
fn arrays_declaring_billions_of_entries_close_only_their_connection() {
    let broker = Broker::start();
    let huge_compact = [0xff, 0xff, 0xff, 0xff, 0x0f]; // unsigned varint 2^32 - 1
    let mut produce = vec![0u8]; // null transactional id (compact)
    produce.extend_from_slice(&1i16.to_be_bytes());
    produce.extend_from_slice(&1000i32.to_be_bytes());
    produce.extend_from_slice(&huge_compact);
    let mut fetch = Vec::new();
    for v in [-1i32, 100, 1, 1000] {
        fetch.extend_from_slice(&v.to_be_bytes());
    }
    fetch.push(0);
    fetch.extend_from_slice(&i32::MAX.to_be_bytes());
    let cases = [
        ("Metadata v12", hand_frame(3, 12, true, &huge_compact)),
        (
            "Metadata v4",
            hand_frame(3, 4, false, &i32::MAX.to_be_bytes()),
        ),
        ("Produce v9", hand_frame(0, 9, true, &produce)),
        ("Fetch v4", hand_frame(1, 4, false, &fetch)),
        (
            "DeleteGroups v0",
            hand_frame(42, 0, false, &i32::MAX.to_be_bytes()),
        ),
        ("CreateTopics v5", hand_frame(19, 5, true, &huge_compact)),
    ];
    for (what, frame) in cases {
        let mut s = TcpStream::connect(("127.0.0.1", broker.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&frame).unwrap();
        let mut buf = [0u8; 64];
        assert!(
            matches!(s.read(&mut buf), Ok(0)),
            "{what}: the connection should be closed"
        );
        assert!(broker.is_running(), "{what}: samsa died");
        // And it still serves.
        let _: kafka_protocol::messages::MetadataResponse =
            raw_request(&broker, ApiKey::Metadata, 12, &metadata_request(None));
    }
    // Each close is logged; the broker's stderr reaches us a moment later.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let log = broker.log_lines().join("\n");
        let closed = log.matches("closing connection: malformed").count();
        if closed >= 6 || std::time::Instant::now() > deadline {
            assert_eq!(closed, 6, "{log}");
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
