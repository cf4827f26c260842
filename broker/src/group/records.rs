//! The records of `__consumer_offsets`, in Kafka's binary schemas, so that the topic holds
//! Kafka-shaped data: a record key starts with an int16 that names its type (0 or 1: an offset
//! commit, 2: group metadata), followed by the key fields; a value starts with its own schema
//! version. A null value is a tombstone: the compactor eventually drops the key.
//!
//! - `OffsetCommitKey`: group string, topic string, partition int32 (written with type 1).
//! - `OffsetCommitValue` v0-4: offset int64, leaderEpoch int32 (v3+), metadata string,
//!   commitTimestamp int64, expireTimestamp int64 (v1 only); v4 is flexible. Written as v1 when
//!   the commit carried a retention time (OffsetCommit v2-4), else v3, as Kafka does.
//! - `GroupMetadataKey`: group string (type 2).
//! - `GroupMetadataValue` v0-4: protocolType, generation, protocol (nullable), leader
//!   (nullable), currentStateTimestamp (v2+), members (memberId, groupInstanceId (v3+),
//!   clientId, clientHost, rebalanceTimeout (v1+), sessionTimeout, subscription, assignment);
//!   v4 is flexible. Written as v3, Kafka's highest non-flexible version.
//! - The KIP-848 consumer group records (types 3-8 and 16), whose codec is
//!   [`crate::group::consumer::records`].
//!
//! Decoding checks every length against the bytes present: a damaged record is an error,
//! never a panic or an oversized allocation.

use bytes::{BufMut, Bytes};
use kafka_protocol::records::{
    Compression as WireCompression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::consumer::records::{self as consumer, ConsumerRecordKey, ConsumerRecordValue};
use samsa_streams_group::records::{StreamsRecordKey, StreamsRecordValue};

/// Key type prefixes (Kafka's coordinator record types).
const OFFSET_COMMIT_KEY_V0: i16 = 0;
const OFFSET_COMMIT_KEY_V1: i16 = 1;
const GROUP_METADATA_KEY: i16 = 2;
/// Kafka's `ShareGroupMetadataKey` record type (KIP-932).
const SHARE_GROUP_METADATA_KEY: i16 = 11;

/// A record of `__consumer_offsets` that this broker cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed __consumer_offsets record: {0}")]
pub struct RecordError(pub String);

fn err<T>(what: impl Into<String>) -> Result<T, RecordError> {
    Err(RecordError(what.into()))
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RecordKey {
    OffsetCommit {
        group: String,
        topic: String,
        partition: i32,
    },
    GroupMetadata {
        group: String,
    },
    /// A share group (KIP-932): that the id is a share group's, and its epoch.
    ShareGroupMetadata {
        group: String,
    },
    /// A KIP-848 consumer group record.
    Consumer(ConsumerRecordKey),
    /// A KIP-1071 streams group record (types 17, 19-23).
    Streams(StreamsRecordKey),
}

/// A committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    pub offset: i64,
    /// -1 when the client did not send one.
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
    /// Set only by OffsetCommit v2-4 requests that carried `retention_time_ms`.
    pub expire_timestamp_ms: Option<i64>,
}

/// One member as stored in the group metadata record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadataValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's selected protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// The group as stored after each completed rebalance (and when it becomes empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// -1 when unknown.
    pub current_state_timestamp_ms: i64,
    pub members: Vec<MemberMetadataValue>,
}

/// A record value; `None` in a [`CoordinatorRecord`] is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordValue {
    OffsetCommit(OffsetCommitValue),
    GroupMetadata(GroupMetadataValue),
    /// `ShareGroupMetadataValue` v0: the group epoch.
    ShareGroupMetadata {
        epoch: i32,
    },
    /// A KIP-848 consumer group record's value.
    Consumer(ConsumerRecordValue),
    /// A KIP-1071 streams group record's value.
    Streams(StreamsRecordValue),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorRecord {
    pub key: RecordKey,
    pub value: Option<RecordValue>,
}

impl CoordinatorRecord {
    pub fn offset_commit(group: &str, topic: &str, partition: i32, v: OffsetCommitValue) -> Self {
        CoordinatorRecord {
            key: RecordKey::OffsetCommit {
                group: group.to_string(),
                topic: topic.to_string(),
                partition,
            },
            value: Some(RecordValue::OffsetCommit(v)),
        }
    }

    pub fn offset_tombstone(group: &str, topic: &str, partition: i32) -> Self {
        CoordinatorRecord {
            key: RecordKey::OffsetCommit {
                group: group.to_string(),
                topic: topic.to_string(),
                partition,
            },
            value: None,
        }
    }

    pub fn group_metadata(group: &str, v: GroupMetadataValue) -> Self {
        CoordinatorRecord {
            key: RecordKey::GroupMetadata {
                group: group.to_string(),
            },
            value: Some(RecordValue::GroupMetadata(v)),
        }
    }

    pub fn share_group(group: &str, epoch: Option<i32>) -> Self {
        CoordinatorRecord {
            key: RecordKey::ShareGroupMetadata {
                group: group.to_string(),
            },
            value: epoch.map(|epoch| RecordValue::ShareGroupMetadata { epoch }),
        }
    }

    /// A KIP-848 consumer group record; `None` is its tombstone.
    pub fn consumer(key: ConsumerRecordKey, value: Option<ConsumerRecordValue>) -> Self {
        CoordinatorRecord {
            key: RecordKey::Consumer(key),
            value: value.map(RecordValue::Consumer),
        }
    }

    /// A KIP-1071 streams group record; `None` is its tombstone.
    pub fn streams(key: StreamsRecordKey, value: Option<StreamsRecordValue>) -> Self {
        CoordinatorRecord {
            key: RecordKey::Streams(key),
            value: value.map(RecordValue::Streams),
        }
    }

    pub fn group_tombstone(group: &str) -> Self {
        CoordinatorRecord {
            key: RecordKey::GroupMetadata {
                group: group.to_string(),
            },
            value: None,
        }
    }
}

// ---- encoding ----

fn put_string(out: &mut Vec<u8>, s: &str) {
    // Group ids, topics and member ids are bounded well below i16::MAX by the request codec
    // (a protocol string cannot be longer); clamp defensively rather than wrap.
    let len = s.len().min(i16::MAX as usize);
    out.put_i16(len as i16);
    out.put_slice(&s.as_bytes()[..len]);
}

fn put_nullable_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_string(out, s),
        None => out.put_i16(-1),
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.put_i32(b.len() as i32);
    out.put_slice(b);
}

pub fn encode_key(key: &RecordKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    match key {
        RecordKey::OffsetCommit {
            group,
            topic,
            partition,
        } => {
            out.put_i16(OFFSET_COMMIT_KEY_V1);
            put_string(&mut out, group);
            put_string(&mut out, topic);
            out.put_i32(*partition);
        }
        RecordKey::GroupMetadata { group } => {
            out.put_i16(GROUP_METADATA_KEY);
            put_string(&mut out, group);
        }
        RecordKey::ShareGroupMetadata { group } => {
            out.put_i16(SHARE_GROUP_METADATA_KEY);
            put_string(&mut out, group);
        }
        RecordKey::Consumer(key) => return consumer::encode_key(key),
        RecordKey::Streams(key) => return key.encode(),
    }
    out
}

pub fn encode_value(value: &RecordValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    match value {
        RecordValue::Consumer(v) => return consumer::encode_value(v),
        RecordValue::Streams(v) => return v.encode(),
        RecordValue::OffsetCommit(v) => {
            if let Some(expire) = v.expire_timestamp_ms {
                out.put_i16(1);
                out.put_i64(v.offset);
                put_string(&mut out, &v.metadata);
                out.put_i64(v.commit_timestamp_ms);
                out.put_i64(expire);
            } else {
                out.put_i16(3);
                out.put_i64(v.offset);
                out.put_i32(v.leader_epoch);
                put_string(&mut out, &v.metadata);
                out.put_i64(v.commit_timestamp_ms);
            }
        }
        RecordValue::ShareGroupMetadata { epoch } => {
            // Version 0, flexible: the epoch, then no tagged fields.
            out.put_i16(0);
            out.put_i32(*epoch);
            out.put_u8(0);
        }
        RecordValue::GroupMetadata(v) => {
            out.put_i16(3);
            put_string(&mut out, &v.protocol_type);
            out.put_i32(v.generation);
            put_nullable_string(&mut out, v.protocol.as_deref());
            put_nullable_string(&mut out, v.leader.as_deref());
            out.put_i64(v.current_state_timestamp_ms);
            out.put_i32(v.members.len() as i32);
            for m in &v.members {
                put_string(&mut out, &m.member_id);
                put_nullable_string(&mut out, m.group_instance_id.as_deref());
                put_string(&mut out, &m.client_id);
                put_string(&mut out, &m.client_host);
                out.put_i32(m.rebalance_timeout_ms);
                out.put_i32(m.session_timeout_ms);
                put_bytes(&mut out, &m.subscription);
                put_bytes(&mut out, &m.assignment);
            }
        }
    }
    out
}

/// Encodes `records` as one uncompressed RecordBatch v2 (offsets are assigned by the log).
pub fn encode_batch(records: &[CoordinatorRecord], now_ms: i64) -> Bytes {
    encode_producer_batch(records, now_ms, None)
}

/// `encode_batch`, as a transactional batch of `producer` (id, epoch) when given: a
/// TxnOffsetCommit's records, which stay pending until the transaction's marker (Kafka writes
/// them the same way, without sequence numbers).
pub fn encode_producer_batch(
    records: &[CoordinatorRecord],
    now_ms: i64,
    producer: Option<(i64, i16)>,
) -> Bytes {
    let (producer_id, producer_epoch) = producer.unwrap_or((-1, -1));
    let wire: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            transactional: producer.is_some(),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1,
            timestamp: now_ms,
            key: Some(Bytes::from(encode_key(&r.key))),
            value: r.value.as_ref().map(|v| Bytes::from(encode_value(v))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        wire.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: WireCompression::None,
        },
    )
    .expect("an uncompressed v2 batch of in-memory records always encodes");
    buf.freeze()
}

// ---- decoding ----

/// A bounds-checked reader over one key or value.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        if self.buf.len() - self.pos < n {
            return err(format!(
                "needs {n} bytes at position {} of {}",
                self.pos,
                self.buf.len()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn i16(&mut self) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }

    fn uvarint(&mut self) -> Result<u32, RecordError> {
        let mut value: u64 = 0;
        for i in 0..5 {
            let b = self.take(1)?[0];
            value |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(value).or_else(|_| err("varint overflows 32 bits"));
            }
        }
        err("varint is too long")
    }

    fn utf8(&mut self, len: usize) -> Result<String, RecordError> {
        let raw = self.take(len)?;
        String::from_utf8(raw.to_vec()).or_else(|_| err("string is not UTF-8"))
    }

    /// A string in the classic (`flexible == false`) or compact encoding; `None` for null.
    fn nullable_string(&mut self, flexible: bool) -> Result<Option<String>, RecordError> {
        let len: i64 = if flexible {
            self.uvarint()? as i64 - 1
        } else {
            self.i16()? as i64
        };
        if len < 0 {
            return Ok(None);
        }
        self.utf8(len as usize).map(Some)
    }

    fn string(&mut self, flexible: bool) -> Result<String, RecordError> {
        self.nullable_string(flexible)?
            .map_or_else(|| err("a non-nullable string is null"), Ok)
    }

    fn bytes(&mut self, flexible: bool) -> Result<Bytes, RecordError> {
        let len: i64 = if flexible {
            self.uvarint()? as i64 - 1
        } else {
            self.i32()? as i64
        };
        if len < 0 {
            return Ok(Bytes::new());
        }
        Ok(Bytes::copy_from_slice(self.take(len as usize)?))
    }

    fn array_len(&mut self, flexible: bool, min_entry_bytes: usize) -> Result<usize, RecordError> {
        let len: i64 = if flexible {
            self.uvarint()? as i64 - 1
        } else {
            self.i32()? as i64
        };
        if len < 0 {
            return Ok(0);
        }
        // Cap the count by what the remaining bytes could hold: no allocation bombs.
        let left = self.buf.len() - self.pos;
        if len as usize > left / min_entry_bytes.max(1) {
            return err(format!("array of {len} entries cannot fit in {left} bytes"));
        }
        Ok(len as usize)
    }

    /// Skips the tagged fields of a flexible struct (none are known to this broker).
    fn skip_tagged_fields(&mut self) -> Result<(), RecordError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

pub fn decode_key(buf: &[u8]) -> Result<RecordKey, RecordError> {
    let mut r = Reader::new(buf);
    match r.i16()? {
        OFFSET_COMMIT_KEY_V0 | OFFSET_COMMIT_KEY_V1 => Ok(RecordKey::OffsetCommit {
            group: r.string(false)?,
            topic: r.string(false)?,
            partition: r.i32()?,
        }),
        GROUP_METADATA_KEY => Ok(RecordKey::GroupMetadata {
            group: r.string(false)?,
        }),
        SHARE_GROUP_METADATA_KEY => Ok(RecordKey::ShareGroupMetadata {
            group: r.string(false)?,
        }),
        t if consumer::is_consumer_record_type(t) => {
            consumer::decode_key(t, &buf[2..]).map(RecordKey::Consumer)
        }
        t if samsa_streams_group::records::is_streams_record_type(t) => {
            StreamsRecordKey::decode(buf)
                .map(RecordKey::Streams)
                .map_err(|e| RecordError(e.to_string()))
        }
        other => err(format!("unknown record type {other}")),
    }
}

pub fn decode_offset_commit_value(buf: &[u8]) -> Result<OffsetCommitValue, RecordError> {
    let mut r = Reader::new(buf);
    let version = r.i16()?;
    if !(0..=4).contains(&version) {
        return err(format!("OffsetCommitValue version {version} is unknown"));
    }
    let flexible = version >= 4;
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string(flexible)?;
    let commit_timestamp_ms = r.i64()?;
    let expire_timestamp_ms = if version == 1 {
        Some(r.i64()?).filter(|t| *t >= 0)
    } else {
        None
    };
    if flexible {
        r.skip_tagged_fields()?;
    }
    Ok(OffsetCommitValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp_ms,
        expire_timestamp_ms,
    })
}

pub fn decode_group_metadata_value(buf: &[u8]) -> Result<GroupMetadataValue, RecordError> {
    let mut r = Reader::new(buf);
    let version = r.i16()?;
    if !(0..=4).contains(&version) {
        return err(format!("GroupMetadataValue version {version} is unknown"));
    }
    let flexible = version >= 4;
    let protocol_type = r.string(flexible)?;
    let generation = r.i32()?;
    let protocol = r.nullable_string(flexible)?;
    let leader = r.nullable_string(flexible)?;
    let current_state_timestamp_ms = if version >= 2 { r.i64()? } else { -1 };
    // A member takes at least 4 string lengths, 2 timeouts and 2 byte lengths.
    let count = r.array_len(flexible, 8)?;
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let member_id = r.string(flexible)?;
        let group_instance_id = if version >= 3 {
            r.nullable_string(flexible)?
        } else {
            None
        };
        let client_id = r.string(flexible)?;
        let client_host = r.string(flexible)?;
        let session_then_rebalance = version < 1;
        let (rebalance_timeout_ms, session_timeout_ms) = if session_then_rebalance {
            let s = r.i32()?;
            (s, s)
        } else {
            let rebalance = r.i32()?;
            (rebalance, r.i32()?)
        };
        let subscription = r.bytes(flexible)?;
        let assignment = r.bytes(flexible)?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        members.push(MemberMetadataValue {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    if flexible {
        r.skip_tagged_fields()?;
    }
    Ok(GroupMetadataValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp_ms,
        members,
    })
}

/// Decodes one record of `__consumer_offsets`.
pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<CoordinatorRecord, RecordError> {
    let key = decode_key(key)?;
    let value = match (&key, value) {
        (_, None) => None,
        (RecordKey::OffsetCommit { .. }, Some(v)) => {
            Some(RecordValue::OffsetCommit(decode_offset_commit_value(v)?))
        }
        (RecordKey::GroupMetadata { .. }, Some(v)) => {
            Some(RecordValue::GroupMetadata(decode_group_metadata_value(v)?))
        }
        (RecordKey::ShareGroupMetadata { .. }, Some(v)) => {
            let mut r = Reader::new(v);
            let version = r.i16()?;
            if version != 0 {
                return err(format!(
                    "ShareGroupMetadataValue version {version} is unknown"
                ));
            }
            Some(RecordValue::ShareGroupMetadata { epoch: r.i32()? })
        }
        (RecordKey::Consumer(k), Some(v)) => {
            Some(RecordValue::Consumer(consumer::decode_value(k, v)?))
        }
        (RecordKey::Streams(k), Some(v)) => Some(RecordValue::Streams(
            StreamsRecordValue::decode(k.record_type(), v)
                .map_err(|e| RecordError(e.to_string()))?,
        )),
    };
    Ok(CoordinatorRecord { key, value })
}

/// Kafka's `String.hashCode()` of a group id (UTF-16 code units, wrapping), made non-negative
/// with `Utils.abs` semantics, modulo the partition count: the partition of
/// `__consumer_offsets` that owns the group, the same one Kafka would pick.
pub fn partition_for(group_id: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in group_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str) -> MemberMetadataValue {
        MemberMetadataValue {
            member_id: id.into(),
            group_instance_id: Some("instance-1".into()),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 300_000,
            session_timeout_ms: 45_000,
            subscription: Bytes::from_static(b"sub"),
            assignment: Bytes::from_static(b"assign"),
        }
    }

    #[test]
    fn offset_commit_records_round_trip_in_versions_1_and_3() {
        for expire in [None, Some(1_700_000_100_000)] {
            let v = OffsetCommitValue {
                offset: 42,
                leader_epoch: if expire.is_some() { -1 } else { 7 },
                metadata: "meta".into(),
                commit_timestamp_ms: 1_700_000_000_000,
                expire_timestamp_ms: expire,
            };
            let r = CoordinatorRecord::offset_commit("g", "t", 3, v.clone());
            let key = encode_key(&r.key);
            assert_eq!(
                &key[..2],
                &[0, 1],
                "offset commit keys are written as type 1"
            );
            let value = encode_value(r.value.as_ref().unwrap());
            let expected_version = if expire.is_some() { 1 } else { 3 };
            assert_eq!(i16::from_be_bytes([value[0], value[1]]), expected_version);
            assert_eq!(decode_record(&key, Some(&value)).unwrap(), r);
        }
    }

    #[test]
    fn group_metadata_records_round_trip_as_version_3() {
        let v = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp_ms: 1_700_000_000_000,
            members: vec![member("m1"), member("m2")],
        };
        let r = CoordinatorRecord::group_metadata("g", v);
        let key = encode_key(&r.key);
        let value = encode_value(r.value.as_ref().unwrap());
        assert_eq!(&key[..2], &[0, 2]);
        assert_eq!(&value[..2], &[0, 3]);
        assert_eq!(decode_record(&key, Some(&value)).unwrap(), r);
        let tomb = CoordinatorRecord::group_tombstone("g");
        assert_eq!(decode_record(&encode_key(&tomb.key), None).unwrap(), tomb);
    }

    #[test]
    fn share_group_records_round_trip_as_kafkas_type_11() {
        let r = CoordinatorRecord::share_group("sg", Some(7));
        let key = encode_key(&r.key);
        let value = encode_value(r.value.as_ref().unwrap());
        assert_eq!(&key[..2], &[0, 11]);
        assert_eq!(value, vec![0, 0, 0, 0, 0, 7, 0]);
        assert_eq!(decode_record(&key, Some(&value)).unwrap(), r);
        let tomb = CoordinatorRecord::share_group("sg", None);
        assert_eq!(decode_record(&encode_key(&tomb.key), None).unwrap(), tomb);
        assert!(decode_record(&key, Some(&[0, 1, 0, 0, 0, 7, 0])).is_err());
    }

    #[test]
    fn group_metadata_version_0_has_no_rebalance_timeout_or_state_timestamp() {
        let mut v = Vec::new();
        v.put_i16(0);
        put_string(&mut v, "consumer");
        v.put_i32(2);
        put_nullable_string(&mut v, Some("range"));
        put_nullable_string(&mut v, None);
        v.put_i32(1);
        put_string(&mut v, "m1");
        put_string(&mut v, "c");
        put_string(&mut v, "/h");
        v.put_i32(10_000);
        put_bytes(&mut v, b"s");
        put_bytes(&mut v, b"a");
        let g = decode_group_metadata_value(&v).unwrap();
        assert_eq!(g.generation, 2);
        assert_eq!(g.leader, None);
        assert_eq!(g.current_state_timestamp_ms, -1);
        assert_eq!(g.members[0].session_timeout_ms, 10_000);
        assert_eq!(g.members[0].rebalance_timeout_ms, 10_000);
    }

    #[test]
    fn flexible_version_4_values_decode() {
        // OffsetCommitValue v4: compact string metadata and an empty tagged-field section.
        let mut v = Vec::new();
        v.put_i16(4);
        v.put_i64(9);
        v.put_i32(2);
        v.push(3); // compact length 2 + 1
        v.extend_from_slice(b"md");
        v.put_i64(123);
        v.push(0);
        let o = decode_offset_commit_value(&v).unwrap();
        assert_eq!(
            (o.offset, o.leader_epoch, o.metadata.as_str()),
            (9, 2, "md")
        );
        assert_eq!(o.commit_timestamp_ms, 123);
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let v = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 1,
            protocol: None,
            leader: None,
            current_state_timestamp_ms: -1,
            members: vec![member("m1")],
        };
        let bytes = encode_value(&RecordValue::GroupMetadata(v));
        for cut in 0..bytes.len() {
            assert!(
                decode_group_metadata_value(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut huge = Vec::new();
        huge.put_i16(3);
        put_string(&mut huge, "consumer");
        huge.put_i32(1);
        huge.put_i16(-1);
        huge.put_i16(-1);
        huge.put_i64(-1);
        huge.put_i32(i32::MAX); // a member count no buffer can hold
        assert!(decode_group_metadata_value(&huge).is_err());
        assert!(decode_key(&[0, 9, 0, 0]).is_err());
        assert!(decode_key(&[0]).is_err());
    }

    #[test]
    fn consumer_group_records_pass_through_the_coordinator_record_codec() {
        use crate::group::consumer::records::MetadataValue;
        let r = CoordinatorRecord::consumer(
            ConsumerRecordKey::Metadata { group: "g".into() },
            Some(ConsumerRecordValue::Metadata(MetadataValue {
                epoch: 3,
                metadata_hash: 0,
            })),
        );
        let key = encode_key(&r.key);
        let value = encode_value(r.value.as_ref().unwrap());
        assert_eq!(key, vec![0, 3, 0, 1, b'g']);
        assert_eq!(value, vec![0, 0, 0, 0, 0, 3, 0]);
        assert_eq!(decode_record(&key, Some(&value)).unwrap(), r);
        let tomb = CoordinatorRecord::consumer(
            ConsumerRecordKey::TargetAssignmentMember {
                group: "g".into(),
                member_id: "m".into(),
            },
            None,
        );
        assert_eq!(decode_record(&encode_key(&tomb.key), None).unwrap(), tomb);
        // A damaged value is an error, as is a key of a type this broker does not know (18;
        // 17 is a streams group's metadata, which it knows).
        assert!(decode_record(&key, Some(&value[..4])).is_err());
        assert!(decode_record(&[0, 18, 0, 1, b'g'], None).is_err());
        assert!(decode_record(&[0, 17, 0, 1, b'g'], None).is_ok());
        assert!(!encode_batch(&[r, tomb], 0).is_empty());
    }

    #[test]
    fn partition_for_matches_kafkas_string_hash() {
        // Java: "test-group".hashCode() == 627841412.
        assert_eq!(partition_for("test-group", 50), 627841412 % 50);
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("", 50), 0);
        // A negative hash is made positive before the modulo: "my-group" hashes to
        // -1906497762 in Java.
        assert_eq!(partition_for("my-group", 50), 1906497762 % 50);
    }
}
