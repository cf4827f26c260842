//! The discard sink's request handling: a frame in, a response frame out, no sockets here.
//!
//! It serves just what a load generator needs, with the same version ranges the broker
//! advertises for the same APIs (so the client negotiates the same request versions against
//! both): ApiVersions, Metadata (every topic asked for exists, with the partition count given
//! to CreateTopics or the default), CreateTopics, Produce (acknowledged with increasing
//! offsets, nothing stored), Fetch (served from one prebuilt in-memory batch whose base
//! offset is patched to the offset asked for), ListOffsets, and FindCoordinator (itself:
//! librdkafka compresses with LZ4 only when FindCoordinator is advertised).
//!
//! Invariants: bad input is an error for the connection, never a panic; the topic table is
//! bounded ([`TOPICS_MAX`], [`PARTITIONS_MAX`]) whatever clients ask for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, CreateTopicsRequest, CreateTopicsResponse, FetchRequest,
    FetchResponse, FindCoordinatorRequest, FindCoordinatorResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
    RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol::ResponseError;
use samsa_protocol::api_table::ApiRange;
use samsa_protocol::header::{decode_request_served, RequestError};
use samsa_protocol::response::encode_response;
use uuid::Uuid;

/// Most topics the sink keeps track of; CreateTopics beyond this is refused.
pub const TOPICS_MAX: usize = 10_000;
/// Most partitions one topic may have here (the broker's own limit).
pub const PARTITIONS_MAX: i32 = 10_000;
/// Largest batch template: a Fetch never carries more than this per partition.
pub const FETCH_TEMPLATE_BYTES_MAX: usize = 16 << 20;

// Offsets within a v2 RecordBatch header (Kafka's DefaultRecordBatch layout).
const BATCH_LENGTH_OFFSET: usize = 8;
const LAST_OFFSET_DELTA_OFFSET: usize = 23;
const BATCH_HEADER_BYTES: usize = 61;

/// Why a request could not be answered: the connection is closed with this reason.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("{api_key:?} v{version} is not answered by the discard sink")]
    NotServed { api_key: ApiKey, version: i16 },
    #[error("cannot encode {0}")]
    Encode(String),
    #[error("produce to {topic}-{partition}: {reason}")]
    BadBatch {
        topic: String,
        partition: i32,
        reason: String,
    },
}

/// What the sink is told at start.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// Host and port that Metadata and FindCoordinator send clients to.
    pub advertised_host: String,
    pub advertised_port: i32,
    pub node_id: i32,
    /// Partitions of a topic nobody created explicitly.
    pub default_partitions: i32,
    /// Value size of the records Fetch serves.
    pub fetch_record_bytes: usize,
    /// Records in each batch of the Fetch template.
    pub fetch_batch_records: i32,
    /// Bytes of batches prebuilt for Fetch (at least one batch).
    pub fetch_template_bytes: usize,
}

impl Default for SinkConfig {
    fn default() -> Self {
        Self {
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            node_id: 1,
            default_partitions: 1,
            fetch_record_bytes: 1024,
            fetch_batch_records: 100,
            fetch_template_bytes: 1 << 20,
        }
    }
}

struct TopicState {
    id: Uuid,
    /// Next offset per partition: what Produce hands out and ListOffsets(latest) reports.
    log_end_offsets: Vec<AtomicI64>,
}

/// Shared state of one sink: the topic table and the Fetch template.
pub struct Sink {
    config: SinkConfig,
    served: Vec<ApiRange>,
    topics: Mutex<HashMap<String, Arc<TopicState>>>,
    /// Whole batches, back to back, each of `fetch_batch_records` records; base offsets 0.
    fetch_template: Bytes,
    /// Byte length of one batch in the template (all are the same size).
    fetch_batch_bytes: usize,
}

impl Sink {
    pub fn new(config: SinkConfig) -> anyhow::Result<Self> {
        anyhow::ensure!(
            (1..=PARTITIONS_MAX).contains(&config.default_partitions),
            "default partitions {} outside 1..={PARTITIONS_MAX}",
            config.default_partitions
        );
        anyhow::ensure!(
            config.fetch_batch_records >= 1,
            "fetch batch records must be at least 1"
        );
        let one = fetch_batch(config.fetch_record_bytes, config.fetch_batch_records)?;
        let batches =
            (config.fetch_template_bytes.min(FETCH_TEMPLATE_BYTES_MAX) / one.len()).max(1);
        let mut template = BytesMut::with_capacity(one.len() * batches);
        for _ in 0..batches {
            template.extend_from_slice(&one);
        }
        Ok(Self {
            served: served_apis(),
            fetch_batch_bytes: one.len(),
            fetch_template: template.freeze(),
            topics: Mutex::new(HashMap::new()),
            config,
        })
    }

    /// Handles one frame body (size prefix removed) and appends the response frame to `out`.
    /// Nothing is appended for acks=0 produces, which get no response.
    pub fn handle(&self, frame: Bytes, out: &mut BytesMut) -> Result<(), SinkError> {
        let request = match decode_request_served(frame, &self.served) {
            Ok(r) => r,
            // KIP-511: a newer ApiVersions gets the v0 body with UNSUPPORTED_VERSION and our
            // ranges, so the client can retry with a version we know.
            Err(RequestError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => {
                let mut resp = self.api_versions();
                resp.error_code = ResponseError::UnsupportedVersion.code();
                return self.encode(out, ApiKey::ApiVersions, 0, correlation_id, resp.into());
            }
            Err(e) => return Err(e.into()),
        };
        let version = request.api_version();
        let correlation_id = request.correlation_id();
        let api_key = request.api_key;
        let body: ResponseKind = match request.body {
            RequestKind::ApiVersions(_) => self.api_versions().into(),
            RequestKind::Metadata(r) => self.metadata(r, version).into(),
            RequestKind::CreateTopics(r) => self.create_topics(r, version).into(),
            RequestKind::Produce(r) => {
                let acks = r.acks;
                let resp = self.produce(r, version)?;
                if acks == 0 {
                    return Ok(());
                }
                resp.into()
            }
            RequestKind::Fetch(r) => self.fetch(r, version).into(),
            RequestKind::ListOffsets(r) => self.list_offsets(r, version).into(),
            RequestKind::FindCoordinator(r) => self.find_coordinator(r, version).into(),
            _ => return Err(SinkError::NotServed { api_key, version }),
        };
        self.encode(out, api_key, version, correlation_id, body)
    }

    fn encode(
        &self,
        out: &mut BytesMut,
        key: ApiKey,
        version: i16,
        correlation_id: i32,
        body: ResponseKind,
    ) -> Result<(), SinkError> {
        encode_response(out, key, version, correlation_id, &body)
            .map_err(|e| SinkError::Encode(e.to_string()))
    }

    fn api_versions(&self) -> ApiVersionsResponse {
        let mut resp = ApiVersionsResponse::default();
        resp.api_keys = samsa_protocol::api_table::api_versions(&self.served);
        resp
    }

    /// The topic, created with the default partition count on first mention (auto-creation),
    /// unless the table is full.
    fn topic(&self, name: &str) -> Option<Arc<TopicState>> {
        self.create(name, self.config.default_partitions).ok()
    }

    fn create(&self, name: &str, partitions: i32) -> Result<Arc<TopicState>, ResponseError> {
        let mut topics = self.topics.lock().expect("topic table lock");
        if let Some(t) = topics.get(name) {
            return Ok(t.clone());
        }
        if topics.len() >= TOPICS_MAX {
            return Err(ResponseError::PolicyViolation);
        }
        if !(1..=PARTITIONS_MAX).contains(&partitions) {
            return Err(ResponseError::InvalidPartitions);
        }
        let t = Arc::new(TopicState {
            id: Uuid::from_u128(topics.len() as u128 + 1),
            log_end_offsets: (0..partitions).map(|_| AtomicI64::new(0)).collect(),
        });
        topics.insert(name.to_string(), t.clone());
        Ok(t)
    }

    fn topic_by_id(&self, id: &Uuid) -> Option<(String, Arc<TopicState>)> {
        let topics = self.topics.lock().expect("topic table lock");
        topics
            .iter()
            .find(|(_, t)| t.id == *id)
            .map(|(n, t)| (n.clone(), t.clone()))
    }

    fn metadata(&self, req: MetadataRequest, version: i16) -> MetadataResponse {
        let node = BrokerId(self.config.node_id);
        let mut resp = MetadataResponse::default();
        let mut b = MetadataResponseBroker::default();
        b.node_id = node;
        b.host = StrBytes::from_string(self.config.advertised_host.clone());
        b.port = self.config.advertised_port;
        resp.brokers = vec![b];
        if version >= 2 {
            resp.cluster_id = Some(StrBytes::from_static_str("samsa-discard-sink"));
        }
        if version >= 1 {
            resp.controller_id = node;
        }
        let wanted: Vec<(String, Option<Arc<TopicState>>)> = match req.topics {
            // v0: empty means all; v1+: null means all.
            None => self.all_topics(),
            Some(t) if t.is_empty() && version == 0 => self.all_topics(),
            Some(t) => t
                .into_iter()
                .filter_map(|w| match w.name {
                    Some(n) => {
                        let n = n.to_string();
                        let state = self.topic(&n);
                        Some((n, state))
                    }
                    None => self.topic_by_id(&w.topic_id).map(|(n, t)| (n, Some(t))),
                })
                .collect(),
        };
        for (name, state) in wanted {
            let mut t = MetadataResponseTopic::default();
            t.name = Some(TopicName(StrBytes::from_string(name)));
            t.topic_authorized_operations = i32::MIN;
            match state {
                None => t.error_code = ResponseError::PolicyViolation.code(),
                Some(state) => {
                    if version >= 10 {
                        t.topic_id = state.id;
                    }
                    t.partitions = (0..state.log_end_offsets.len() as i32)
                        .map(|i| {
                            let mut p = MetadataResponsePartition::default();
                            p.partition_index = i;
                            p.leader_id = node;
                            if version >= 7 {
                                p.leader_epoch = 0;
                            }
                            p.replica_nodes = vec![node];
                            p.isr_nodes = vec![node];
                            p
                        })
                        .collect();
                }
            }
            resp.topics.push(t);
        }
        resp
    }

    fn all_topics(&self) -> Vec<(String, Option<Arc<TopicState>>)> {
        let topics = self.topics.lock().expect("topic table lock");
        topics
            .iter()
            .map(|(n, t)| (n.clone(), Some(t.clone())))
            .collect()
    }

    fn create_topics(&self, req: CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
        let mut resp = CreateTopicsResponse::default();
        for t in req.topics {
            let mut r = CreatableTopicResult::default();
            r.name = t.name.clone();
            let partitions = if t.num_partitions == -1 {
                self.config.default_partitions
            } else {
                t.num_partitions
            };
            let exists = self
                .topics
                .lock()
                .expect("topic table lock")
                .contains_key(t.name.as_str());
            let result = if exists {
                Err(ResponseError::TopicAlreadyExists)
            } else if req.validate_only {
                Ok(None)
            } else {
                self.create(t.name.as_str(), partitions).map(Some)
            };
            match result {
                Ok(state) => {
                    if version >= 5 {
                        r.num_partitions = partitions;
                        r.replication_factor = 1;
                    }
                    if let (Some(state), true) = (state, version >= 7) {
                        r.topic_id = state.id;
                    }
                }
                Err(e) => {
                    r.error_code = e.code();
                    if version >= 5 {
                        r.num_partitions = -1;
                        r.replication_factor = -1;
                    }
                }
            }
            resp.topics.push(r);
        }
        resp
    }

    fn produce(&self, req: ProduceRequest, version: i16) -> Result<ProduceResponse, SinkError> {
        let mut resp = ProduceResponse::default();
        for td in req.topic_data {
            let (name, state) = if version >= 13 {
                match self.topic_by_id(&td.topic_id) {
                    Some((n, t)) => (n, Some(t)),
                    None => (String::new(), None),
                }
            } else {
                let n = td.name.to_string();
                let t = self.topic(&n);
                (n, t)
            };
            let mut tr = TopicProduceResponse::default();
            tr.name = td.name.clone();
            tr.topic_id = td.topic_id;
            for pd in td.partition_data {
                let mut pr = PartitionProduceResponse::default();
                pr.index = pd.index;
                pr.log_append_time_ms = -1;
                let end = state
                    .as_ref()
                    .and_then(|s| s.log_end_offsets.get(pd.index.max(0) as usize));
                match end {
                    None if pd.index < 0 || state.is_some() => {
                        pr.base_offset = -1;
                        pr.error_code = ResponseError::UnknownTopicOrPartition.code();
                    }
                    None => {
                        pr.base_offset = -1;
                        pr.error_code = if version >= 13 {
                            ResponseError::UnknownTopicId.code()
                        } else {
                            ResponseError::UnknownTopicOrPartition.code()
                        };
                    }
                    Some(end) => {
                        let records = pd.records.unwrap_or_default();
                        let count =
                            count_records(&records).map_err(|reason| SinkError::BadBatch {
                                topic: name.clone(),
                                partition: pd.index,
                                reason,
                            })?;
                        pr.base_offset = end.fetch_add(count, Ordering::Relaxed);
                        if version >= 5 {
                            pr.log_start_offset = 0;
                        }
                    }
                }
                tr.partition_responses.push(pr);
            }
            resp.responses.push(tr);
        }
        Ok(resp)
    }

    fn fetch(&self, req: FetchRequest, version: i16) -> FetchResponse {
        let mut resp = FetchResponse::default();
        // The response budget: the first partition always gets one whole batch (KIP-74).
        let mut budget = req.max_bytes.max(0) as usize;
        for t in req.topics {
            let state = if version >= 13 {
                self.topic_by_id(&t.topic_id).map(|(_, s)| s)
            } else {
                self.topic(t.topic.as_str())
            };
            let mut tr = FetchableTopicResponse::default();
            tr.topic = t.topic.clone();
            tr.topic_id = t.topic_id;
            for p in t.partitions {
                let mut pd = PartitionData::default();
                pd.partition_index = p.partition;
                pd.preferred_read_replica = BrokerId(-1);
                let known = state
                    .as_ref()
                    .is_some_and(|s| (0..s.log_end_offsets.len() as i32).contains(&p.partition));
                if !known || p.fetch_offset < 0 {
                    pd.error_code = if !known {
                        ResponseError::UnknownTopicOrPartition.code()
                    } else {
                        ResponseError::OffsetOutOfRange.code()
                    };
                    pd.high_watermark = -1;
                    pd.last_stable_offset = -1;
                    tr.partitions.push(pd);
                    continue;
                }
                let limit = (p.partition_max_bytes.max(0) as usize).min(budget);
                let (records, count) = self.records_from(p.fetch_offset, limit);
                budget = budget.saturating_sub(records.len());
                pd.high_watermark = p.fetch_offset + count;
                pd.last_stable_offset = pd.high_watermark;
                if version >= 5 {
                    pd.log_start_offset = 0;
                }
                pd.records = Some(records);
                tr.partitions.push(pd);
            }
            resp.responses.push(tr);
        }
        resp
    }

    /// Whole template batches that fit in `limit` bytes (at least one), renumbered to start
    /// at `fetch_offset`, and the number of records in them.
    fn records_from(&self, fetch_offset: i64, limit: usize) -> (Bytes, i64) {
        let batches = (limit / self.fetch_batch_bytes)
            .clamp(1, self.fetch_template.len() / self.fetch_batch_bytes);
        let mut out = BytesMut::from(&self.fetch_template[..batches * self.fetch_batch_bytes]);
        let per_batch = self.config.fetch_batch_records as i64;
        for (i, batch) in out.chunks_mut(self.fetch_batch_bytes).enumerate() {
            // The base offset is outside the CRC, so renumbering keeps the batch valid.
            let base = fetch_offset + i as i64 * per_batch;
            batch[..8].copy_from_slice(&base.to_be_bytes());
        }
        (out.freeze(), batches as i64 * per_batch)
    }

    fn list_offsets(&self, req: ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
        let mut resp = ListOffsetsResponse::default();
        for t in req.topics {
            let state = self.topic(t.name.as_str());
            let mut tr = ListOffsetsTopicResponse::default();
            tr.name = t.name.clone();
            for p in t.partitions {
                let mut pr = ListOffsetsPartitionResponse::default();
                pr.partition_index = p.partition_index;
                pr.timestamp = -1;
                match state
                    .as_ref()
                    .and_then(|s| s.log_end_offsets.get(p.partition_index.max(0) as usize))
                {
                    None => {
                        pr.offset = -1;
                        pr.error_code = ResponseError::UnknownTopicOrPartition.code();
                    }
                    Some(end) => {
                        // Latest (-1) is what was produced; anything else is the start.
                        pr.offset = if p.timestamp == -1 {
                            end.load(Ordering::Relaxed)
                        } else {
                            0
                        };
                        if version >= 4 {
                            pr.leader_epoch = 0;
                        }
                    }
                }
                tr.partitions.push(pr);
            }
            resp.topics.push(tr);
        }
        resp
    }

    fn find_coordinator(
        &self,
        req: FindCoordinatorRequest,
        version: i16,
    ) -> FindCoordinatorResponse {
        let mut resp = FindCoordinatorResponse::default();
        let host = StrBytes::from_string(self.config.advertised_host.clone());
        if version >= 4 {
            resp.coordinators = req
                .coordinator_keys
                .into_iter()
                .map(|key| {
                    let mut c =
                        kafka_protocol::messages::find_coordinator_response::Coordinator::default();
                    c.key = key;
                    c.node_id = BrokerId(self.config.node_id);
                    c.host = host.clone();
                    c.port = self.config.advertised_port;
                    c
                })
                .collect();
        } else {
            resp.node_id = BrokerId(self.config.node_id);
            resp.host = host;
            resp.port = self.config.advertised_port;
        }
        resp
    }
}

/// The sink's table: the broker's ranges for the APIs both serve, so that a client negotiates
/// the same request versions with both, plus FindCoordinator (see the module comment).
pub fn served_apis() -> Vec<ApiRange> {
    let mut served: Vec<ApiRange> = [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::ListOffsets,
        ApiKey::Metadata,
        ApiKey::ApiVersions,
        ApiKey::CreateTopics,
    ]
    .into_iter()
    .filter_map(samsa_protocol::supported_range)
    .collect();
    served.push(ApiRange {
        key: ApiKey::FindCoordinator,
        min_version: 0,
        max_version: 4,
    });
    served
}

/// Records in a produce payload, from each v2 batch's last offset delta. Checks only what it
/// reads: lengths, so a hostile payload is an error, never an out-of-bounds read.
pub fn count_records(records: &[u8]) -> Result<i64, String> {
    let mut at = 0usize;
    let mut count = 0i64;
    while at < records.len() {
        let rest = &records[at..];
        if rest.len() < BATCH_HEADER_BYTES {
            return Err(format!(
                "{} trailing bytes are shorter than a batch header",
                rest.len()
            ));
        }
        let length = be_i32(rest, BATCH_LENGTH_OFFSET);
        let total = 12usize.saturating_add(length.max(0) as usize);
        if length < (BATCH_HEADER_BYTES - 12) as i32 || total > rest.len() {
            return Err(format!(
                "batch length {length} does not fit the {} bytes left",
                rest.len()
            ));
        }
        let last_offset_delta = be_i32(rest, LAST_OFFSET_DELTA_OFFSET);
        if last_offset_delta < 0 {
            return Err(format!("last offset delta {last_offset_delta} is negative"));
        }
        count += last_offset_delta as i64 + 1;
        at += total;
    }
    Ok(count)
}

/// The big-endian i32 at `at`; callers have checked that the header is whole.
fn be_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// One uncompressed v2 batch of `records` records, each a value of `value_bytes` bytes.
fn fetch_batch(value_bytes: usize, records: i32) -> anyhow::Result<Bytes> {
    let value = Bytes::from(vec![b'x'; value_bytes]);
    let list: Vec<Record> = (0..records)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder keeps records in one batch while offset - sequence stays constant;
            // this makes the header's base sequence -1, as for a non-idempotent producer.
            sequence: i - 1,
            timestamp: 0,
            key: None,
            value: Some(value.clone()),
            headers: Default::default(),
        })
        .collect();
    let mut out = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut out,
        list.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .map_err(|e| anyhow::anyhow!("cannot build the fetch batch: {e}"))?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{RequestHeader, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, Encodable};
    use kafka_protocol::records::RecordBatchDecoder;

    fn request(key: ApiKey, version: i16, body: &impl Encodable) -> Bytes {
        let mut buf = BytesMut::new();
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = 42;
        header
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    /// Sends one request through the sink and decodes the response body.
    fn roundtrip<R: Decodable>(sink: &Sink, key: ApiKey, version: i16, body: &impl Encodable) -> R {
        let mut out = BytesMut::new();
        sink.handle(request(key, version, body), &mut out).unwrap();
        let mut frame = out.freeze();
        let size = i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(size, frame.len() - 4, "one whole frame");
        let _ = bytes::Buf::get_i32(&mut frame);
        let header = ResponseHeader::decode(
            &mut frame,
            samsa_protocol::response::response_header_version(key, version),
        )
        .unwrap();
        assert_eq!(header.correlation_id, 42);
        R::decode(&mut frame, version).unwrap()
    }

    fn small_sink() -> Sink {
        Sink::new(SinkConfig {
            fetch_record_bytes: 10,
            fetch_batch_records: 5,
            fetch_template_bytes: 1000,
            ..SinkConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn produce_is_acknowledged_with_increasing_offsets_and_fetch_serves_renumbered_batches() {
        let sink = small_sink();
        let batch = fetch_batch(10, 3).unwrap();
        for (version, expected_base) in [(9, 0), (11, 3)] {
            let mut pd = PartitionProduceData::default();
            pd.index = 0;
            pd.records = Some(batch.clone());
            let mut td = TopicProduceData::default();
            td.name = TopicName(StrBytes::from_static_str("t"));
            td.partition_data = vec![pd];
            let mut req = ProduceRequest::default();
            req.acks = -1;
            req.timeout_ms = 1000;
            req.topic_data = vec![td];
            let resp: ProduceResponse = roundtrip(&sink, ApiKey::Produce, version, &req);
            let pr = &resp.responses[0].partition_responses[0];
            assert_eq!(pr.error_code, 0);
            assert_eq!(pr.base_offset, expected_base);
        }

        let mut fp = FetchPartition::default();
        fp.partition = 0;
        fp.fetch_offset = 7;
        fp.partition_max_bytes = 1 << 20;
        let mut ft = FetchTopic::default();
        ft.topic = TopicName(StrBytes::from_static_str("t"));
        ft.partitions = vec![fp];
        let mut req = FetchRequest::default();
        req.max_bytes = 1 << 20;
        req.topics = vec![ft];
        let resp: FetchResponse = roundtrip(&sink, ApiKey::Fetch, 12, &req);
        let pd = &resp.responses[0].partitions[0];
        assert_eq!(pd.error_code, 0);
        let mut records = pd.records.clone().unwrap();
        let batches = RecordBatchDecoder::decode_all(&mut records).unwrap();
        assert!(!batches.is_empty());
        let offsets: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.records.iter().map(|r| r.offset))
            .collect();
        let expected: Vec<i64> = (7..7 + offsets.len() as i64).collect();
        assert_eq!(
            offsets, expected,
            "consecutive offsets from the one asked for"
        );
        assert_eq!(pd.high_watermark, 7 + offsets.len() as i64);
        assert!(batches[0]
            .records
            .iter()
            .all(|r| r.value.as_ref().unwrap().len() == 10));
    }

    #[test]
    fn created_topics_have_their_partition_count_in_metadata() {
        let sink = small_sink();
        let mut ct = kafka_protocol::messages::create_topics_request::CreatableTopic::default();
        ct.name = TopicName(StrBytes::from_static_str("eight"));
        ct.num_partitions = 8;
        ct.replication_factor = 1;
        let mut req = CreateTopicsRequest::default();
        req.topics = vec![ct];
        let resp: CreateTopicsResponse = roundtrip(&sink, ApiKey::CreateTopics, 7, &req);
        assert_eq!(resp.topics[0].error_code, 0);
        let again: CreateTopicsResponse = roundtrip(&sink, ApiKey::CreateTopics, 7, &req);
        assert_eq!(
            again.topics[0].error_code,
            ResponseError::TopicAlreadyExists.code()
        );

        let mut all = MetadataRequest::default();
        all.topics = None;
        let resp: MetadataResponse = roundtrip(&sink, ApiKey::Metadata, 12, &all);
        assert_eq!(resp.topics.len(), 1, "null topics lists every topic");
        assert_eq!(resp.topics[0].partitions.len(), 8);
        assert_eq!(resp.brokers[0].port, 9092);
    }

    #[test]
    fn api_versions_lists_what_the_sink_serves_and_answers_newer_versions_with_v0() {
        let sink = small_sink();
        let resp: ApiVersionsResponse = roundtrip(
            &sink,
            ApiKey::ApiVersions,
            3,
            &kafka_protocol::messages::ApiVersionsRequest::default(),
        );
        let keys: Vec<i16> = resp.api_keys.iter().map(|a| a.api_key).collect();
        assert!(keys.contains(&(ApiKey::Produce as i16)));
        assert!(keys.contains(&(ApiKey::FindCoordinator as i16)));
        assert!(!keys.contains(&(ApiKey::JoinGroup as i16)));

        let mut frame = request(
            ApiKey::ApiVersions,
            3,
            &kafka_protocol::messages::ApiVersionsRequest::default(),
        )
        .to_vec();
        frame[3] = 99; // api version 99
        let mut out = BytesMut::new();
        sink.handle(Bytes::from(frame), &mut out).unwrap();
        let mut body = out.freeze().slice(8..);
        let v0 = ApiVersionsResponse::decode(&mut body, 0).unwrap();
        assert_eq!(v0.error_code, ResponseError::UnsupportedVersion.code());
    }

    #[test]
    fn hostile_batches_are_errors_not_panics() {
        assert_eq!(count_records(&[]), Ok(0));
        assert!(count_records(&[0u8; 10]).is_err());
        let mut batch = fetch_batch(4, 2).unwrap().to_vec();
        assert_eq!(count_records(&batch), Ok(2), "one batch of two records");
        assert_eq!(i32::from_be_bytes(batch[57..61].try_into().unwrap()), 2);
        batch[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(count_records(&batch).is_err());
        batch[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(count_records(&batch).is_err());
        let sink = small_sink();
        let mut out = BytesMut::new();
        assert!(sink.handle(Bytes::from_static(&[0, 18]), &mut out).is_err());
        assert!(
            sink.handle(Bytes::from_static(&[0, 11, 0, 5, 0, 0, 0, 1]), &mut out)
                .is_err(),
            "JoinGroup is not served"
        );
    }
}
