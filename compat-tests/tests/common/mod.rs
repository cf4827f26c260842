//! Client helpers shared by the compatibility tests (rdkafka = librdkafka through Rust).
#![allow(dead_code, unused_imports)]

pub mod acked;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{
    metadata_request, ApiKey, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

pub use compat_tests::{Broker, BrokerOptions};

pub fn client_config(broker: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", broker.bootstrap());
    c
}

pub fn producer(broker: &Broker, extra: &[(&str, &str)]) -> FutureProducer {
    let mut c = client_config(broker);
    c.set("message.timeout.ms", "30000").set("linger.ms", "5");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().expect("producer")
}

pub fn admin(broker: &Broker) -> AdminClient<DefaultClientContext> {
    client_config(broker).create().expect("admin client")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub fn create_topic(broker: &Broker, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    create_topic_in(
        &broker.bootstrap(),
        name,
        partitions,
        TopicReplication::Fixed(1),
        configs,
    );
}

/// Creates `name` through the brokers of `bootstrap` with `partitions` partitions placed as
/// `replication` says (a replication factor, or each partition's replicas).
pub fn create_topic_in(
    bootstrap: &str,
    name: &str,
    partitions: i32,
    replication: TopicReplication<'_>,
    configs: &[(&str, &str)],
) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client");
    let mut t = NewTopic::new(name, partitions, replication);
    for (k, v) in configs {
        t = t.set(k, v);
    }
    let res = runtime()
        .block_on(admin.create_topics(&[t], &AdminOptions::new()))
        .expect("create_topics");
    for r in res {
        r.unwrap_or_else(|(t, e)| panic!("create topic {t}: {e}"));
    }
}

/// Produces `(key, value)` pairs to `topic`, waiting for every acknowledgement; returns
/// (partition, offset) per record.
pub fn produce_all(
    producer: &FutureProducer,
    topic: &str,
    records: &[(Option<Vec<u8>>, Vec<u8>)],
    partition: Option<i32>,
) -> Vec<(i32, i64)> {
    runtime().block_on(async {
        let futures: Vec<_> = records
            .iter()
            .map(|(k, v)| {
                let mut rec: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic).payload(&v[..]);
                if let Some(k) = k {
                    rec = rec.key(&k[..]);
                }
                if let Some(p) = partition {
                    rec = rec.partition(p);
                }
                producer.send(rec, Duration::from_secs(30))
            })
            .collect();
        // Polled together: a send future enqueues its record only when first polled, so
        // awaiting them one by one would wait out linger.ms for every record.
        futures::future::join_all(futures)
            .await
            .into_iter()
            .map(|r| {
                let d = r.unwrap_or_else(|(e, _)| panic!("produce failed: {e}"));
                (d.partition, d.offset)
            })
            .collect()
    })
}

/// A consumer with no group, for assigned-partition reads.
pub fn assigned_consumer(
    broker: &Broker,
    topic: &str,
    partitions: &[i32],
    from: Offset,
) -> BaseConsumer {
    assigned_consumer_with(broker, topic, partitions, from, &[])
}

/// `assigned_consumer` with more client settings (`fetch.wait.max.ms`, `isolation.level`, ...).
pub fn assigned_consumer_with(
    broker: &Broker,
    topic: &str,
    partitions: &[i32],
    from: Offset,
    extra: &[(&str, &str)],
) -> BaseConsumer {
    let mut c = client_config(broker);
    c.set("group.id", "unused-assign-only")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    let consumer: BaseConsumer = c.create().expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in partitions {
        tpl.add_partition_offset(topic, *p, from).unwrap();
    }
    consumer.assign(&tpl).expect("assign");
    consumer
}

/// A consumed record, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    pub timestamp: Option<i64>,
}

impl Got {
    pub fn from(m: &BorrowedMessage<'_>) -> Got {
        Got {
            partition: m.partition(),
            offset: m.offset(),
            key: m.key().map(|k| k.to_vec()),
            value: m.payload().unwrap_or_default().to_vec(),
            timestamp: m.timestamp().to_millis(),
        }
    }
}

/// Polls until `n` records arrived (or panics after `timeout`).
pub fn consume_n(consumer: &BaseConsumer, n: usize, timeout: Duration) -> Vec<Got> {
    let deadline = std::time::Instant::now() + timeout;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "consumed {} of {n} records before the timeout",
            out.len()
        );
        if let Some(r) = consumer.poll(Duration::from_millis(100)) {
            let m = r.unwrap_or_else(|e| panic!("consume error: {e}"));
            out.push(Got::from(&m));
        }
    }
    out
}

/// A librdkafka consumer in `group`, subscribed to `topic`, committing only by hand.
pub fn group_consumer(
    broker: &Broker,
    group: &str,
    topic: &str,
) -> rdkafka::consumer::BaseConsumer {
    use rdkafka::consumer::Consumer;
    let mut c = client_config(broker);
    c.set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("enable.partition.eof", "false");
    let consumer: rdkafka::consumer::BaseConsumer = c.create().expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    consumer
}

/// Sends one request on a fresh connection and decodes the answer: for the APIs the client
/// libraries do not wrap, and for asserting exact error codes and messages.
pub fn raw_request<Req: Encodable, Resp: Decodable>(
    broker: &Broker,
    key: ApiKey,
    version: i16,
    body: &Req,
) -> Resp {
    raw_request_to(&broker.bootstrap(), key, version, body)
}

/// [`raw_request`] to a broker known only by its address (`host:port`).
pub fn raw_request_to<Req: Encodable, Resp: Decodable>(
    addr: &str,
    key: ApiKey,
    version: i16,
    body: &Req,
) -> Resp {
    try_raw_request_to(addr, key, version, body)
        .unwrap_or_else(|e| panic!("{key:?} v{version} to {addr}: {e}"))
}

/// [`raw_request_to`] that says when the broker does not answer (stopped, paused, cut off by a
/// partition) instead of panicking: each step, connecting included, waits at most 10 s.
pub fn try_raw_request_to<Req: Encodable, Resp: Decodable>(
    addr: &str,
    key: ApiKey,
    version: i16,
    body: &Req,
) -> anyhow::Result<Resp> {
    use std::net::ToSocketAddrs;
    let timeout = Duration::from_secs(10);
    let to = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow::anyhow!("no address for {addr}"))?;
    let mut s = TcpStream::connect_timeout(&to, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.write_all(&encode_request(key, version, body)?)?;
    read_response(&mut s, key, version)
}

/// A request frame (size, header with correlation id 1, body).
pub fn encode_request<Req: Encodable>(
    key: ApiKey,
    version: i16,
    body: &Req,
) -> anyhow::Result<BytesMut> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    let mut h = RequestHeader::default();
    h.request_api_key = key as i16;
    h.request_api_version = version;
    h.correlation_id = 1;
    h.client_id = Some(StrBytes::from_static_str("compat-test"));
    h.encode(&mut buf, key.request_header_version(version))?;
    body.encode(&mut buf, version)?;
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// Reads and decodes the response to one request sent on `s` (within its read timeout).
pub fn read_response<Resp: Decodable>(
    s: &mut TcpStream,
    key: ApiKey,
    version: i16,
) -> anyhow::Result<Resp> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame)?;
    let mut frame = bytes::Bytes::from(frame);
    ResponseHeader::decode(&mut frame, key.response_header_version(version))?;
    let resp = Resp::decode(&mut frame, version)?;
    anyhow::ensure!(frame.remaining() == 0, "response not decoded whole");
    Ok(resp)
}

/// DescribeQuorum of `__cluster_metadata`-0, as kafka-python's admin client sends it.
pub fn describe_quorum_request() -> kafka_protocol::messages::DescribeQuorumRequest {
    use kafka_protocol::messages::{describe_quorum_request, DescribeQuorumRequest, TopicName};
    let mut p = describe_quorum_request::PartitionData::default();
    p.partition_index = 0;
    let mut t = describe_quorum_request::TopicData::default();
    t.topic_name = TopicName(StrBytes::from_static_str("__cluster_metadata"));
    t.partitions = vec![p];
    let mut r = DescribeQuorumRequest::default();
    r.topics = vec![t];
    r
}

/// DescribeQuorum asked of `node`.
pub fn describe(node: &Broker) -> kafka_protocol::messages::DescribeQuorumResponse {
    raw_request(node, ApiKey::DescribeQuorum, 2, &describe_quorum_request())
}

/// The quorum as `node` reports it once it has a leader and `voters` voters hold the log up
/// to at least `offset` (the leader writes a no-op record every 500 ms, so "equal to the high
/// watermark" would be a race): (leader, epoch, high watermark).
pub fn settled(node: &Broker, voters: usize, offset: i64, timeout: Duration) -> (i32, i32, i64) {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let r = describe(node);
        let p = &r.topics[0].partitions[0];
        let caught_up = p
            .current_voters
            .iter()
            .filter(|v| v.log_end_offset >= offset.max(1) && v.last_caught_up_timestamp > 0)
            .count();
        if p.error_code == 0 && p.leader_id.0 >= 0 && p.high_watermark > 0 && caught_up >= voters {
            return (p.leader_id.0, p.leader_epoch, p.high_watermark);
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "no settled quorum via node {} after {timeout:?}: {r:?}\nlog:\n{}",
                node.port,
                node.log_lines().join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Metadata request for `topics` (`None`: all), without auto-creation.
pub fn metadata_request(topics: Option<&[&str]>) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    r.topics = topics.map(|ts| {
        ts.iter()
            .map(|t| {
                let mut x = metadata_request::MetadataRequestTopic::default();
                x.name = Some(TopicName(StrBytes::from_string(t.to_string())));
                x
            })
            .collect()
    });
    r.allow_auto_topic_creation = false;
    r
}

/// Metadata v12 asked of `node`.
pub fn metadata(node: &Broker, topics: Option<&[&str]>) -> MetadataResponse {
    raw_request(node, ApiKey::Metadata, 12, &metadata_request(topics))
}

/// Waits until `node` reports `brokers` live brokers.
pub fn wait_for_brokers(node: &Broker, brokers: usize, timeout: Duration) {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let m = metadata(node, Some(&[]));
        if m.brokers.len() == brokers {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node {} reports brokers {:?}, not {brokers}",
            node.port,
            m.brokers.iter().map(|b| b.node_id.0).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// IncrementalAlterConfigs SETs on one resource sent to `broker` (the raw wire: clients cannot
/// name the cluster-wide default, the empty BROKER name): the answer's code and message.
pub fn set_configs(
    broker: &Broker,
    resource_type: i8,
    name: &str,
    configs: &[(&str, &str)],
) -> (i16, String) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{
        IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    };
    let s = |v: &str| StrBytes::from_string(v.to_string());
    let mut res = AlterConfigsResource::default();
    res.resource_type = resource_type;
    res.resource_name = s(name);
    res.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = AlterableConfig::default();
            c.name = s(k);
            c.config_operation = 0; // SET
            c.value = Some(s(v));
            c
        })
        .collect();
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![res];
    let resp: IncrementalAlterConfigsResponse =
        raw_request(broker, ApiKey::IncrementalAlterConfigs, 1, &req);
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_deref().unwrap_or("").to_string(),
    )
}

/// Produces one record with a fresh producer (fresh metadata; librdkafka sends it to the
/// partition's leader); the delivery error, if any.
pub fn produce_one(broker: &Broker, topic: &str) -> Result<(), rdkafka::error::RDKafkaErrorCode> {
    let producer = producer(broker, &[("message.timeout.ms", "10000")]);
    let delivery = runtime().block_on(producer.send(
        FutureRecord::<(), str>::to(topic).payload("v"),
        Duration::from_secs(10),
    ));
    match delivery {
        Ok(_) => Ok(()),
        Err((rdkafka::error::KafkaError::MessageProduction(code), _)) => Err(code),
        Err((e, _)) => panic!("unexpected produce error: {e}"),
    }
}

/// Produces `n` records of 200 bytes to each of `partitions` partitions of `topic`, one batch
/// each, timestamped two hours ago (for retention to delete).
pub fn produce_old_records(broker: &Broker, topic: &str, partitions: i32, n: usize) {
    let producer = producer(broker, &[("batch.num.messages", "1"), ("linger.ms", "0")]);
    let two_hours_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 2 * 3_600_000;
    let value = vec![b'x'; 200];
    runtime().block_on(async {
        for p in 0..partitions {
            for _ in 0..n {
                producer
                    .send(
                        FutureRecord::<(), _>::to(topic)
                            .partition(p)
                            .payload(&value)
                            .timestamp(two_hours_ago),
                        Duration::from_secs(10),
                    )
                    .await
                    .expect("delivered");
            }
        }
    });
}

/// One acks=all Produce of a single record to `partition`, answered by `node`.
/// An ApiVersions request for v3+, naming this client's software as Kafka requires (a name
/// and version of letters, digits, '.' and '-').
pub fn api_versions_request() -> kafka_protocol::messages::ApiVersionsRequest {
    let mut req = kafka_protocol::messages::ApiVersionsRequest::default();
    req.client_software_name = StrBytes::from_static_str("compat-tests");
    req.client_software_version = StrBytes::from_static_str("1.0");
    req
}

/// A valid record batch of one record ("x"), as the raw requests of tests send it.
pub fn one_record_batch() -> bytes::Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(bytes::Bytes::from_static(b"x")),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, [record].iter(), &options).unwrap();
    buf.freeze()
}

pub fn produce_raw(node: &Broker, topic: &str, partition: i32) -> i16 {
    let mut pd = kafka_protocol::messages::produce_request::PartitionProduceData::default();
    pd.index = partition;
    pd.records = Some(one_record_batch());
    let mut td = kafka_protocol::messages::produce_request::TopicProduceData::default();
    td.name = TopicName(StrBytes::from_string(topic.to_string()));
    td.partition_data = vec![pd];
    let mut req = kafka_protocol::messages::ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 5_000;
    req.topic_data = vec![td];
    let resp: kafka_protocol::messages::ProduceResponse =
        raw_request(node, ApiKey::Produce, 9, &req);
    resp.responses[0].partition_responses[0].error_code
}

/// The sum of the samples of `node`'s metrics whose line starts with `series` (a name, or a
/// name and the first labels), 0 when there is none.
pub fn metric(node: &Broker, series: &str) -> f64 {
    let text = node.scrape_metrics().unwrap();
    text.lines()
        // The series itself, not another whose name starts with it.
        .filter(|l| {
            l.strip_prefix(series).is_some_and(|rest| {
                series.ends_with([' ', '{', ',', '}']) || rest.starts_with([' ', '{', ',', '}'])
            })
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Three nodes with `options` that notice a dead peer quickly (fenced after 3 s, out of the ISR
/// after 3 s behind), once the quorum has settled and every node lists every broker: the start
/// of the three-node fault tests.
pub fn start_quick_cluster(options: compat_tests::BrokerOptions) -> compat_tests::Cluster {
    let options = options
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("replica.lag.time.max.ms", 3000);
    let cluster = compat_tests::Cluster::start_with(3, options);
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    cluster
}

/// `samsa ARGS -b NODE` (the admin CLI against one node): (success, stdout, stderr).
pub fn samsa_on(node: &Broker, args: &[&str]) -> (bool, String, String) {
    let mut cmd = std::process::Command::new(compat_tests::samsa_bin());
    cmd.args(args).args(["-b", &node.bootstrap()]);
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(30)).unwrap();
    (status.success(), out, err)
}

/// Polls `pending` every 100 ms until it answers `None`; panics with `what` and the last state
/// it described after `timeout`.
pub fn wait_until_none(what: &str, timeout: Duration, mut pending: impl FnMut() -> Option<String>) {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let Some(state) = pending() else { return };
        assert!(std::time::Instant::now() < deadline, "{what}: {state}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// AlterClientQuotas v1 of one entity (`(type, name)` parts, a `None` name being the default
/// entity: `kafka-configs --entity-default`) sent to `node`: each op sets its key to the value,
/// or removes it when the value is `None`. Panics unless the entity's answer is a success.
pub fn alter_client_quotas(
    node: &Broker,
    entity: &[(&str, Option<&str>)],
    ops: &[(&str, Option<f64>)],
) {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
    let s = |v: &str| StrBytes::from_string(v.to_string());
    let mut entry = EntryData::default();
    entry.entity = entity
        .iter()
        .map(|(t, n)| {
            let mut e = EntityData::default();
            e.entity_type = s(t);
            e.entity_name = n.map(s);
            e
        })
        .collect();
    entry.ops = ops
        .iter()
        .map(|(k, v)| {
            let mut op = OpData::default();
            op.key = s(k);
            op.value = v.unwrap_or(0.0);
            op.remove = v.is_none();
            op
        })
        .collect();
    let mut req = AlterClientQuotasRequest::default();
    req.entries = vec![entry];
    let resp: AlterClientQuotasResponse = raw_request(node, ApiKey::AlterClientQuotas, 1, &req);
    let e = &resp.entries[0];
    assert_eq!(
        e.error_code, 0,
        "AlterClientQuotas {entity:?} {ops:?}: {:?}",
        e.error_message
    );
}

/// Every client quota `node` describes (DescribeClientQuotas v1, no filter component, not
/// strict): (entity as sorted `(type, name)` parts, its `(key, value)`s sorted).
pub type DescribedQuota = (Vec<(String, Option<String>)>, Vec<(String, f64)>);

pub fn describe_client_quotas(node: &Broker) -> Vec<DescribedQuota> {
    use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
    let req = DescribeClientQuotasRequest::default();
    let resp: DescribeClientQuotasResponse =
        raw_request(node, ApiKey::DescribeClientQuotas, 1, &req);
    assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
    let mut out: Vec<DescribedQuota> = resp
        .entries
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let mut entity: Vec<(String, Option<String>)> = e
                .entity
                .iter()
                .map(|p| {
                    (
                        p.entity_type.to_string(),
                        p.entity_name.as_deref().map(str::to_string),
                    )
                })
                .collect();
            entity.sort();
            let mut values: Vec<(String, f64)> = e
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect();
            values.sort_by(|a, b| a.0.cmp(&b.0));
            (entity, values)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Runs compat-tests/python/quotas.py: the librdkafka clients of `plan` side by side (see the
/// script for the plan's form) against `bootstrap`; what each achieved, in plan order.
pub fn quota_clients(bootstrap: &str, plan: &serde_json::Value) -> Vec<serde_json::Value> {
    let script = compat_tests::workspace_root().join("compat-tests/python/quotas.py");
    let seconds = plan
        .as_array()
        .expect("a plan is a list of clients")
        .iter()
        .filter_map(|c| c["seconds"].as_f64())
        .fold(0.0, f64::max);
    let mut cmd = std::process::Command::new(compat_tests::python());
    cmd.arg(&script).arg(bootstrap).arg(plan.to_string());
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs_f64(seconds + 60.0)).unwrap();
    assert!(
        status.success(),
        "quotas.py failed ({status}):\nstdout:\n{out}\nstderr:\n{err}"
    );
    let line = out.lines().last().unwrap_or("");
    serde_json::from_str::<Vec<serde_json::Value>>(line)
        .unwrap_or_else(|e| panic!("quotas.py printed {out:?}: {e}\nstderr:\n{err}"))
}

/// Allows `principal` an `operation` (Kafka's AclOperation code: 3 read, 4 write, 8 describe)
/// on the topic `topic`, through CreateAcls v3 on `broker`.
pub fn create_acl(broker: &Broker, principal: &str, topic: &str, operation: i8) {
    let mut c = kafka_protocol::messages::create_acls_request::AclCreation::default();
    c.resource_type = 2; // topic
    c.resource_name = kafka_protocol::protocol::StrBytes::from_string(topic.into());
    c.resource_pattern_type = 3; // literal
    c.principal = kafka_protocol::protocol::StrBytes::from_string(principal.into());
    c.host = kafka_protocol::protocol::StrBytes::from_static_str("*");
    c.operation = operation;
    c.permission_type = 3; // allow
    let mut req = kafka_protocol::messages::CreateAclsRequest::default();
    req.creations = vec![c];
    let resp: kafka_protocol::messages::CreateAclsResponse =
        raw_request(broker, ApiKey::CreateAcls, 3, &req);
    assert!(resp.results.iter().all(|r| r.error_code == 0), "{resp:?}");
}
