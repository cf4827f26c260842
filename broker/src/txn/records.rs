//! Records of `__transaction_state`, in Kafka's formats, so that the topic holds what a Kafka
//! broker would write and read:
//!
//! - key: version int16 (0), then `TransactionLogKey` v0: `TransactionalId` string;
//! - value: version int16, then `TransactionLogValue` v0 (`ProducerId` int64, `ProducerEpoch`
//!   int16, `TransactionTimeoutMs` int32, `TransactionStatus` int8, `TransactionPartitions`
//!   nullable array of (`Topic` string, `PartitionIds` int32 array),
//!   `TransactionLastUpdateTimestampMs` int64, `TransactionStartTimestampMs` int64), or v1, the
//!   same fields in flexible encoding (compact strings and arrays, tagged fields; tags 0
//!   PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion);
//! - a null value (tombstone) forgets the transactional id.
//!
//! Samsa writes value version 0 for transactions of clients that do not use transaction version
//! 2 and version 1 for those that do (it keeps the previous and next producer ids and the
//! client's transaction version, which a new coordinator needs to answer their retries), and
//! reads both.
//!
//! The partition of a transactional id is `abs(javaStringHashCode(id)) % partitions`, as
//! Kafka's `TransactionStateManager.partitionFor` (the same function as a group's).

use std::collections::BTreeMap;

use super::state::{TxnMetadata, TxnState};

/// Bounds on what a decoded value may claim, so a damaged record cannot allocate without end.
const TOPICS_PER_RECORD_MAX: usize = 100_000;

/// The partition of `__transaction_state` that owns a transactional id: Kafka computes it
/// like a group's partition of `__consumer_offsets`.
pub use crate::group::records::partition_for;

pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The value for a transaction's state: version 1 (flexible, with Kafka's tagged fields) for a
/// client of transaction version 2, else version 0.
pub fn encode_value(m: &TxnMetadata) -> Vec<u8> {
    if m.tv2 {
        return encode_value_v1(m);
    }
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&m.producer_id.to_be_bytes());
    out.extend_from_slice(&m.producer_epoch.to_be_bytes());
    out.extend_from_slice(&m.txn_timeout_ms.to_be_bytes());
    out.push(m.state.id() as u8);
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in &m.partitions {
        by_topic.entry(t.as_str()).or_default().push(*p);
    }
    out.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
    for (topic, parts) in by_topic {
        put_string(&mut out, topic);
        out.extend_from_slice(&(parts.len() as i32).to_be_bytes());
        for p in parts {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&m.txn_last_update_ms.to_be_bytes());
    out.extend_from_slice(&m.txn_start_ms.to_be_bytes());
    out
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed __transaction_state record: {0}")]
pub struct RecordError(pub String);

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| RecordError("record ends early".into()))?;
        let b = &self.buf[self.pos..end];
        self.pos = end;
        Ok(b)
    }
    fn i8(&mut self) -> Result<i8, RecordError> {
        Ok(self.bytes(1)?[0] as i8)
    }
    fn i16(&mut self) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.bytes(2)?.try_into().expect("2")))
    }
    fn i32(&mut self) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.bytes(4)?.try_into().expect("4")))
    }
    fn i64(&mut self) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.bytes(8)?.try_into().expect("8")))
    }
    fn uvarint(&mut self) -> Result<u64, RecordError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.bytes(1)?[0];
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordError("varint too long".into()))
    }
    fn string(&mut self, compact: bool) -> Result<String, RecordError> {
        let len = if compact {
            (self.uvarint()? as i64) - 1
        } else {
            self.i16()? as i64
        };
        if len < 0 {
            return Err(RecordError("null string".into()));
        }
        let b = self.bytes(len as usize)?;
        String::from_utf8(b.to_vec()).map_err(|_| RecordError("string is not UTF-8".into()))
    }
    /// An array length (`None` for null), bounded by the bytes left.
    fn array_len(
        &mut self,
        compact: bool,
        item_bytes_min: usize,
    ) -> Result<Option<usize>, RecordError> {
        let len = if compact {
            (self.uvarint()? as i64) - 1
        } else {
            self.i32()? as i64
        };
        if len < 0 {
            return Ok(None);
        }
        let len = len as usize;
        if len > (self.buf.len() - self.pos) / item_bytes_min.max(1) {
            return Err(RecordError(format!("array of {len} items cannot fit")));
        }
        Ok(Some(len))
    }
    fn skip_tagged_fields(&mut self) -> Result<(), RecordError> {
        self.tagged_fields(|_, _| {})
    }

    /// Reads a tagged-field section, handing each (tag, value bytes) to `f`.
    fn tagged_fields(&mut self, mut f: impl FnMut(u32, &[u8])) -> Result<(), RecordError> {
        let n = self.uvarint()?;
        for _ in 0..n {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            f(u32::try_from(tag).unwrap_or(u32::MAX), self.bytes(size)?);
        }
        Ok(())
    }
}

/// Tagged fields of `TransactionLogValue` v1.
const TAG_PREVIOUS_PRODUCER_ID: u32 = 0;
const TAG_NEXT_PRODUCER_ID: u32 = 1;
const TAG_CLIENT_TRANSACTION_VERSION: u32 = 2;

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_compact_string(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u32 + 1);
    out.extend_from_slice(s.as_bytes());
}

/// Version 1: the same fields as version 0 in flexible encoding, with the tagged fields Kafka
/// writes for transaction version 2.
fn encode_value_v1(m: &TxnMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&m.producer_id.to_be_bytes());
    out.extend_from_slice(&m.producer_epoch.to_be_bytes());
    out.extend_from_slice(&m.txn_timeout_ms.to_be_bytes());
    out.push(m.state.id() as u8);
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in &m.partitions {
        by_topic.entry(t.as_str()).or_default().push(*p);
    }
    put_varint(&mut out, by_topic.len() as u32 + 1);
    for (topic, parts) in by_topic {
        put_compact_string(&mut out, topic);
        put_varint(&mut out, parts.len() as u32 + 1);
        for p in parts {
            out.extend_from_slice(&p.to_be_bytes());
        }
        put_varint(&mut out, 0); // the entry's tagged fields
    }
    out.extend_from_slice(&m.txn_last_update_ms.to_be_bytes());
    out.extend_from_slice(&m.txn_start_ms.to_be_bytes());
    let tags: [(u32, Vec<u8>); 3] = [
        (
            TAG_PREVIOUS_PRODUCER_ID,
            m.last_producer_id.to_be_bytes().to_vec(),
        ),
        (
            TAG_NEXT_PRODUCER_ID,
            m.next_producer_id.to_be_bytes().to_vec(),
        ),
        (TAG_CLIENT_TRANSACTION_VERSION, 2i16.to_be_bytes().to_vec()),
    ];
    put_varint(&mut out, tags.len() as u32);
    for (tag, bytes) in tags {
        put_varint(&mut out, tag);
        put_varint(&mut out, bytes.len() as u32);
        out.extend_from_slice(&bytes);
    }
    out
}

/// Reads a key: the transactional id.
pub fn decode_key(bytes: &[u8]) -> Result<String, RecordError> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let version = r.i16()?;
    if version != 0 {
        return Err(RecordError(format!("unknown key version {version}")));
    }
    r.string(false)
}

/// Reads a value into the metadata of `transactional_id`.
pub fn decode_value(transactional_id: &str, bytes: &[u8]) -> Result<TxnMetadata, RecordError> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let version = r.i16()?;
    let compact = match version {
        0 => false,
        1 => true,
        v => return Err(RecordError(format!("unknown value version {v}"))),
    };
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let txn_timeout_ms = r.i32()?;
    let status = r.i8()?;
    let state = TxnState::from_id(status)
        .ok_or_else(|| RecordError(format!("unknown transaction status {status}")))?;
    let mut partitions = std::collections::BTreeSet::new();
    if let Some(topics) = r.array_len(compact, 3)? {
        if topics > TOPICS_PER_RECORD_MAX {
            return Err(RecordError(format!("{topics} topics in one record")));
        }
        for _ in 0..topics {
            let topic = r.string(compact)?;
            let n = r.array_len(compact, 4)?.unwrap_or(0);
            for _ in 0..n {
                partitions.insert((topic.clone(), r.i32()?));
            }
            if compact {
                r.skip_tagged_fields()?;
            }
        }
    }
    let txn_last_update_ms = r.i64()?;
    let txn_start_ms = r.i64()?;
    let (mut last_producer_id, mut next_producer_id, mut tv2) = (-1, -1, false);
    if compact {
        r.tagged_fields(|tag, value| match (tag, value.len()) {
            (TAG_PREVIOUS_PRODUCER_ID, 8) => {
                last_producer_id = i64::from_be_bytes(value.try_into().expect("8 bytes"))
            }
            (TAG_NEXT_PRODUCER_ID, 8) => {
                next_producer_id = i64::from_be_bytes(value.try_into().expect("8 bytes"))
            }
            (TAG_CLIENT_TRANSACTION_VERSION, 2) => {
                tv2 = i16::from_be_bytes(value.try_into().expect("2 bytes")) >= 2
            }
            _ => {}
        })?;
    }
    Ok(TxnMetadata {
        transactional_id: transactional_id.to_string(),
        producer_id,
        last_producer_id,
        producer_epoch,
        last_producer_epoch: -1,
        txn_timeout_ms,
        state,
        partitions,
        txn_start_ms,
        txn_last_update_ms,
        next_producer_id,
        tv2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TxnMetadata {
        let mut m = TxnMetadata::new("orders-app", 4000, 60_000, 1_000);
        m.producer_epoch = 3;
        m.state = TxnState::Ongoing;
        m.partitions.insert(("orders".into(), 1));
        m.partitions.insert(("orders".into(), 0));
        m.partitions.insert(("audit".into(), 7));
        m.txn_start_ms = 900;
        m
    }

    #[test]
    fn values_round_trip_in_kafkas_version_0_layout() {
        let m = sample();
        let bytes = encode_value(&m);
        // version, producer id, epoch, timeout, status.
        assert_eq!(&bytes[0..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &4000i64.to_be_bytes());
        assert_eq!(&bytes[10..12], &3i16.to_be_bytes());
        assert_eq!(&bytes[12..16], &60_000i32.to_be_bytes());
        assert_eq!(bytes[16], 1);
        let back = decode_value("orders-app", &bytes).unwrap();
        assert_eq!(back, m);
        assert_eq!(decode_key(&encode_key("orders-app")).unwrap(), "orders-app");
    }

    #[test]
    fn version_1_values_with_tagged_fields_are_read() {
        // A flexible (v1) value as Kafka writes it for transaction version 2 clients.
        let mut b = Vec::new();
        b.extend_from_slice(&1i16.to_be_bytes());
        b.extend_from_slice(&77i64.to_be_bytes());
        b.extend_from_slice(&2i16.to_be_bytes());
        b.extend_from_slice(&30_000i32.to_be_bytes());
        b.push(TxnState::PrepareCommit.id() as u8);
        b.push(2); // one topic (compact length + 1)
        b.push(3); // "tp" (compact length + 1)
        b.extend_from_slice(b"tp");
        b.push(3); // two partitions
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&5i32.to_be_bytes());
        b.push(0); // topic tagged fields
        b.extend_from_slice(&10i64.to_be_bytes());
        b.extend_from_slice(&5i64.to_be_bytes());
        b.push(1); // one tagged field: ClientTransactionVersion = 2
        b.push(2);
        b.push(2);
        b.extend_from_slice(&2i16.to_be_bytes());
        let m = decode_value("x", &b).unwrap();
        assert_eq!(m.producer_id, 77);
        assert_eq!(m.state, TxnState::PrepareCommit);
        assert_eq!(m.partitions.len(), 2);
        assert_eq!((m.txn_last_update_ms, m.txn_start_ms), (10, 5));
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        let bytes = encode_value(&sample());
        for cut in 0..bytes.len() {
            assert!(decode_value("x", &bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = bytes.clone();
        huge[17..21].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_value("x", &huge).is_err());
        let mut bad_state = bytes;
        bad_state[16] = 42;
        assert!(decode_value("x", &bad_state).is_err());
    }

    #[test]
    fn transaction_version_2_values_are_written_as_version_1_and_read_back() {
        let mut m = sample();
        m.tv2 = true;
        m.last_producer_id = 3999;
        m.next_producer_id = 4001;
        let bytes = encode_value(&m);
        assert_eq!(&bytes[..2], &1i16.to_be_bytes(), "value version 1");
        let back = decode_value("orders-app", &bytes).unwrap();
        assert_eq!(
            (
                back.tv2,
                back.last_producer_id,
                back.next_producer_id,
                back.partitions.clone()
            ),
            (true, 3999, 4001, m.partitions.clone())
        );
        assert_eq!(
            (
                back.producer_id,
                back.producer_epoch,
                back.state,
                back.txn_start_ms
            ),
            (m.producer_id, m.producer_epoch, m.state, m.txn_start_ms)
        );
        // A version 1 client's state stays version 0.
        m.tv2 = false;
        assert_eq!(&encode_value(&m)[..2], &0i16.to_be_bytes());
    }
}
