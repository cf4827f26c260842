//! Builds valid v2 record batches by hand (varints, crc32c), for tests, benches and fuzzing.
//! Not part of the storage API; hidden from the docs.

use bytes::Bytes;

use crate::batch::{encode_batch, BatchFields, Compression};
use crate::compression;
use crate::records::encode_record;

struct TestRecord {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    timestamp: Option<i64>,
    offset_delta: Option<i32>,
}

/// A builder of one RecordBatch v2.
pub struct BatchBuilder {
    base_offset: i64,
    leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    base_timestamp: i64,
    compression: Compression,
    transactional: bool,
    control: bool,
    records: Vec<TestRecord>,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        BatchBuilder::new()
    }
}

impl BatchBuilder {
    pub fn new() -> BatchBuilder {
        BatchBuilder {
            base_offset: 0,
            leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            base_timestamp: 1_700_000_000_000,
            compression: Compression::None,
            transactional: false,
            control: false,
            records: Vec::new(),
        }
    }
    pub fn base_offset(mut self, o: i64) -> Self {
        self.base_offset = o;
        self
    }
    pub fn leader_epoch(mut self, e: i32) -> Self {
        self.leader_epoch = e;
        self
    }
    pub fn producer(mut self, id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = base_sequence;
        self
    }
    /// Record `i` gets timestamp `base + i` unless given one.
    pub fn timestamps(mut self, base: i64) -> Self {
        self.base_timestamp = base;
        self
    }
    pub fn compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self
    }
    pub fn transactional(mut self, t: bool) -> Self {
        self.transactional = t;
        self
    }
    pub fn control(mut self, c: bool) -> Self {
        self.control = c;
        self
    }
    pub fn record(mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        self.records.push(TestRecord {
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            timestamp: None,
            offset_delta: None,
        });
        self
    }
    pub fn record_at(mut self, key: Option<&[u8]>, value: Option<&[u8]>, timestamp: i64) -> Self {
        self.records.push(TestRecord {
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            timestamp: Some(timestamp),
            offset_delta: None,
        });
        self
    }
    /// A record with an explicit offset delta (compacted batches have gaps).
    pub fn record_with_delta(
        mut self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        offset_delta: i32,
    ) -> Self {
        self.records.push(TestRecord {
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            timestamp: None,
            offset_delta: Some(offset_delta),
        });
        self
    }
    /// `n` records with keys `k<i>` and `value_bytes`-byte values.
    pub fn records(mut self, n: usize, value_bytes: usize) -> Self {
        for i in 0..n {
            let key = format!("k{i}");
            let value = vec![(i % 251) as u8; value_bytes];
            self = self.record(Some(key.as_bytes()), Some(&value));
        }
        self
    }

    pub fn build(&self) -> Bytes {
        let mut payload = Vec::new();
        let mut max_ts = i64::MIN;
        let mut last_delta = 0;
        for (i, r) in self.records.iter().enumerate() {
            let ts = r.timestamp.unwrap_or(self.base_timestamp + i as i64);
            max_ts = max_ts.max(ts);
            let delta = r.offset_delta.unwrap_or(i as i32);
            last_delta = delta;
            encode_record(
                &mut payload,
                0,
                ts - self.base_timestamp,
                delta,
                r.key.as_deref(),
                r.value.as_deref(),
                &[],
            );
        }
        if self.records.is_empty() {
            max_ts = self.base_timestamp;
        }
        let payload = compression::compress(self.compression, &payload).expect("compress");
        let mut attributes = self.compression.id();
        if self.transactional {
            attributes |= 0x10;
        }
        if self.control {
            attributes |= 0x20;
        }
        encode_batch(
            &BatchFields {
                base_offset: self.base_offset,
                leader_epoch: self.leader_epoch,
                attributes,
                last_offset_delta: last_delta,
                base_timestamp: self.base_timestamp,
                max_timestamp: max_ts,
                producer_id: self.producer_id,
                producer_epoch: self.producer_epoch,
                base_sequence: self.base_sequence,
                record_count: self.records.len() as i32,
            },
            &payload,
        )
    }
}

/// Opens `dir` as a log directory and returns its only log, creating the log for `tp` with
/// `config` if the directory holds none. Every partition found is opened with `config`.
pub fn open_log(
    dir: &std::path::Path,
    tp: &crate::TopicPartition,
    config: crate::LogConfig,
) -> (crate::LogDir, crate::Log) {
    let c = config.clone();
    let (d, mut logs) = crate::LogDir::open(dir, move |_| c.clone()).expect("open the log dir");
    let log = match logs.pop() {
        Some((_, log)) => log,
        None => d.create_log(tp, config).expect("create the log"),
    };
    (d, log)
}

/// Every offset the log holds, read batch by batch from its start (each read must progress).
pub fn offsets_read(log: &mut crate::Log) -> Vec<i64> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let bytes = log
            .read(next, 1 << 20, i64::MAX, true)
            .unwrap()
            .load()
            .unwrap();
        let mut last = None;
        for b in crate::batch::batches(&bytes) {
            let h = *b.unwrap().header();
            for o in h.base_offset..=h.last_offset() {
                if o >= next {
                    out.push(o);
                }
            }
            last = Some(h);
        }
        next = last.expect("progress").next_offset();
    }
    out
}

/// A keyed record as read back: (offset, key, value; `None` is a tombstone).
pub type KeyedRecord = (i64, Vec<u8>, Option<Vec<u8>>);

/// Every record in the log from its start, decompressing as needed; every batch read must pass
/// the integrity check and every record must have a key (compacted-topic tests).
pub fn read_keyed_records(log: &mut crate::Log) -> Vec<KeyedRecord> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let bytes = log
            .read(next, 1 << 20, i64::MAX, true)
            .expect("read")
            .load()
            .expect("load");
        if bytes.is_empty() {
            break;
        }
        for b in crate::batch::batches(&bytes) {
            let b = b.expect("whole batch");
            b.validate_integrity().expect("valid batch");
            let h = *b.header();
            let codec = h.compression().expect("known codec");
            let payload =
                compression::decompress(codec, b.records_bytes(), 1 << 24).expect("decompress");
            for r in crate::records::records(&payload, h.record_count) {
                let r = r.expect("record");
                out.push((
                    h.base_offset + r.offset_delta as i64,
                    r.key.expect("keyed record").to_vec(),
                    r.value.map(<[u8]>::to_vec),
                ));
            }
            next = h.next_offset();
        }
    }
    out
}

/// Property-test cases: `SAMSA_PROPTEST_CASES`, else `default`.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("SAMSA_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Wall-clock milliseconds (producer expiry compares batch timestamps with the clock at open).
pub fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}
