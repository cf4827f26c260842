//! The records of KIP-848 consumer groups in `__consumer_offsets`, byte for byte as Kafka 4.4
//! writes them. A key is an int16 record type then its fields in the classic encoding (int16
//! string lengths); a value is an int16 version (0: the only one Kafka 4.4 knows) then its
//! fields in the flexible encoding (compact strings and arrays, each struct ending with its
//! tagged fields). A null value is a tombstone.
//!
//! | type | key                       | value (v0)                                              |
//! |------|---------------------------|---------------------------------------------------------|
//! | 3    | group                     | epoch; tag 0: metadata hash (KIP-1101)                  |
//! | 4    | group                     | topics and partition racks (4.4 writes only tombstones) |
//! | 5    | group, member             | the member's subscription; tag 0: classic metadata      |
//! | 6    | group                     | assignment epoch; tag 0: assignment timestamp           |
//! | 7    | group, member             | the member's target partitions                          |
//! | 8    | group, member             | epochs, state, partitions; per topic, tag 0: the        |
//! |      |                           | partitions' assignment epochs (KIP-1251)                |
//! | 16   | group, regular expression | the topics it matched, metadata version, timestamp      |
//!
//! Tagged fields this broker does not know are skipped. Kafka keeps them on the message it
//! reads but rebuilds every record it writes from its in-memory group, so they do not survive a
//! rewrite there either.
//!
//! Decoding checks every length against the bytes present: a damaged record is an error,
//! never a panic or an oversized allocation. Like Kafka, it ignores bytes after a value's last
//! field.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes};
use uuid::Uuid;

use super::reconcile::{MemberState, Partitions};
use crate::group::records::RecordError;

/// Kafka 4.4's record types (`CoordinatorRecordType`) of consumer group records.
pub const METADATA: i16 = 3;
pub const PARTITION_METADATA: i16 = 4;
pub const MEMBER_METADATA: i16 = 5;
pub const TARGET_ASSIGNMENT_METADATA: i16 = 6;
pub const TARGET_ASSIGNMENT_MEMBER: i16 = 7;
pub const CURRENT_MEMBER_ASSIGNMENT: i16 = 8;
pub const REGULAR_EXPRESSION: i16 = 16;

/// Whether `record_type` is one of the consumer group record types above.
pub fn is_consumer_record_type(record_type: i16) -> bool {
    matches!(record_type, 3..=8 | REGULAR_EXPRESSION)
}

fn err<T>(what: impl Into<String>) -> Result<T, RecordError> {
    Err(RecordError(what.into()))
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConsumerRecordKey {
    /// `ConsumerGroupMetadataKey`: the group exists, with its epoch.
    Metadata { group: String },
    /// `ConsumerGroupPartitionMetadataKey`: the subscribed topics' metadata, replaced by the
    /// metadata hash in Kafka 4.1+, which only writes tombstones of it.
    PartitionMetadata { group: String },
    /// `ConsumerGroupMemberMetadataKey`: a member's subscription.
    MemberMetadata { group: String, member_id: String },
    /// `ConsumerGroupTargetAssignmentMetadataKey`: the target assignment's epoch.
    TargetAssignmentMetadata { group: String },
    /// `ConsumerGroupTargetAssignmentMemberKey`: a member's target partitions.
    TargetAssignmentMember { group: String, member_id: String },
    /// `ConsumerGroupCurrentMemberAssignmentKey`: a member's epoch, state and partitions.
    CurrentMemberAssignment { group: String, member_id: String },
    /// `ConsumerGroupRegularExpressionKey`: a subscribed regular expression's resolution.
    RegularExpression { group: String, regex: String },
}

impl ConsumerRecordKey {
    pub fn record_type(&self) -> i16 {
        match self {
            ConsumerRecordKey::Metadata { .. } => METADATA,
            ConsumerRecordKey::PartitionMetadata { .. } => PARTITION_METADATA,
            ConsumerRecordKey::MemberMetadata { .. } => MEMBER_METADATA,
            ConsumerRecordKey::TargetAssignmentMetadata { .. } => TARGET_ASSIGNMENT_METADATA,
            ConsumerRecordKey::TargetAssignmentMember { .. } => TARGET_ASSIGNMENT_MEMBER,
            ConsumerRecordKey::CurrentMemberAssignment { .. } => CURRENT_MEMBER_ASSIGNMENT,
            ConsumerRecordKey::RegularExpression { .. } => REGULAR_EXPRESSION,
        }
    }

    pub fn group(&self) -> &str {
        match self {
            ConsumerRecordKey::Metadata { group }
            | ConsumerRecordKey::PartitionMetadata { group }
            | ConsumerRecordKey::MemberMetadata { group, .. }
            | ConsumerRecordKey::TargetAssignmentMetadata { group }
            | ConsumerRecordKey::TargetAssignmentMember { group, .. }
            | ConsumerRecordKey::CurrentMemberAssignment { group, .. }
            | ConsumerRecordKey::RegularExpression { group, .. } => group,
        }
    }
}

/// `ConsumerGroupMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataValue {
    /// The group epoch.
    pub epoch: i32,
    /// The hash of the subscribed topics' metadata (KIP-1101); 0, and then not written, when
    /// unknown.
    pub metadata_hash: i64,
}

/// `ConsumerGroupPartitionMetadataValue`: what a group's subscribed topics looked like when its
/// target assignment was computed (before Kafka 4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadataValue {
    pub topics: Vec<TopicMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub topic_id: Uuid,
    pub name: String,
    pub partitions: i32,
    /// The racks of each partition's replicas, in record order (deprecated: unused since 4.0).
    pub racks: Vec<(i32, Vec<String>)>,
}

/// `ConsumerGroupMemberMetadataValue`: a member's subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSubscriptionValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Written sorted, as Kafka does.
    pub subscribed_topic_names: BTreeSet<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// Set for a member that joined with the classic protocol (tagged field 0). Kafka's
    /// generated code writes `None` explicitly (as a null) and leaves the field out when it
    /// equals `ClassicMemberMetadata::default()`, so a record without the field reads as
    /// `Some(default)`, as it does in Kafka.
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// (protocol name, protocol metadata) in the member's order of preference.
    pub supported_protocols: Vec<(String, Bytes)>,
}

/// `ConsumerGroupTargetAssignmentMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
    /// When the target assignment was computed; 0, and then not written, when unknown.
    pub assignment_timestamp_ms: i64,
}

/// Partitions by topic id, each with its assignment epoch: the member epoch at which the
/// member was given it (KIP-1251; offset commits from an older epoch are refused).
pub type PartitionEpochs = BTreeMap<Uuid, BTreeMap<i32, i32>>;

/// `ConsumerGroupCurrentMemberAssignmentValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Written as its code; a code this broker does not know reads as `Unknown` (127), as in
    /// Kafka.
    pub state: MemberState,
    pub assigned: PartitionEpochs,
    pub pending_revocation: PartitionEpochs,
}

impl CurrentAssignmentValue {
    pub fn assigned_partitions(&self) -> Partitions {
        without_epochs(&self.assigned)
    }

    pub fn pending_revocation_partitions(&self) -> Partitions {
        without_epochs(&self.pending_revocation)
    }
}

/// `partitions`, each with assignment epoch `epoch`.
pub fn with_epoch(partitions: &Partitions, epoch: i32) -> PartitionEpochs {
    partitions
        .iter()
        .map(|(t, ps)| (*t, ps.iter().map(|p| (*p, epoch)).collect()))
        .collect()
}

pub fn without_epochs(partitions: &PartitionEpochs) -> Partitions {
    partitions
        .iter()
        .map(|(t, ps)| (*t, ps.keys().copied().collect()))
        .collect()
}

/// `ConsumerGroupRegularExpressionValue`: the topics a regular expression matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegularExpressionValue {
    /// Written sorted.
    pub topics: BTreeSet<String>,
    /// The metadata image version the expression was resolved against.
    pub version: i64,
    pub timestamp_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerRecordValue {
    Metadata(MetadataValue),
    PartitionMetadata(PartitionMetadataValue),
    MemberMetadata(MemberSubscriptionValue),
    TargetAssignmentMetadata(TargetAssignmentMetadataValue),
    TargetAssignmentMember(Partitions),
    CurrentMemberAssignment(CurrentAssignmentValue),
    RegularExpression(RegularExpressionValue),
}

// ---- encoding ----

/// A classic (int16-length) string, for keys. Group ids, member ids and regular expressions
/// reach here through the request codec, which bounds them well below i16::MAX; clamp
/// defensively rather than wrap.
fn put_key_string(out: &mut Vec<u8>, s: &str) {
    let len = s.len().min(i16::MAX as usize);
    out.put_i16(len as i16);
    out.put_slice(&s.as_bytes()[..len]);
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// A compact length: the count plus one, so that 0 can stand for null.
fn put_len(out: &mut Vec<u8>, len: usize) {
    put_uvarint(out, u32::try_from(len + 1).unwrap_or(u32::MAX));
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.put_slice(s.as_bytes());
}

fn put_nullable_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_string(out, s),
        None => out.put_u8(0),
    }
}

fn put_strings<'a>(out: &mut Vec<u8>, items: impl ExactSizeIterator<Item = &'a String>) {
    put_len(out, items.len());
    for s in items {
        put_string(out, s);
    }
}

fn put_uuid(out: &mut Vec<u8>, id: &Uuid) {
    out.put_slice(id.as_bytes());
}

/// Tagged fields, given as (tag, encoded field) in ascending tag order.
fn put_tagged(out: &mut Vec<u8>, fields: &[(u32, Vec<u8>)]) {
    put_uvarint(out, fields.len() as u32);
    for (tag, data) in fields {
        put_uvarint(out, *tag);
        put_uvarint(out, data.len() as u32);
        out.put_slice(data);
    }
}

fn no_tagged_fields(out: &mut Vec<u8>) {
    out.put_u8(0);
}

/// An int64 tagged field 0 that is left out at its default, 0.
fn put_tagged_i64(out: &mut Vec<u8>, v: i64) {
    if v == 0 {
        no_tagged_fields(out);
    } else {
        put_tagged(out, &[(0, v.to_be_bytes().to_vec())]);
    }
}

/// Topics and partitions as `[TopicPartition]`: topic id, partitions, then what `tags` writes.
fn put_topic_partitions<P>(
    out: &mut Vec<u8>,
    topics: &BTreeMap<Uuid, P>,
    partitions: impl Fn(&P) -> Vec<i32>,
    tags: impl Fn(&mut Vec<u8>, &P),
) {
    put_len(out, topics.len());
    for (topic, ps) in topics {
        put_uuid(out, topic);
        let ids = partitions(ps);
        put_len(out, ids.len());
        for p in ids {
            out.put_i32(p);
        }
        tags(out, ps);
    }
}

/// A key, starting with its record type.
pub fn encode_key(key: &ConsumerRecordKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.put_i16(key.record_type());
    put_key_string(&mut out, key.group());
    match key {
        ConsumerRecordKey::Metadata { .. }
        | ConsumerRecordKey::PartitionMetadata { .. }
        | ConsumerRecordKey::TargetAssignmentMetadata { .. } => {}
        ConsumerRecordKey::MemberMetadata { member_id, .. }
        | ConsumerRecordKey::TargetAssignmentMember { member_id, .. }
        | ConsumerRecordKey::CurrentMemberAssignment { member_id, .. } => {
            put_key_string(&mut out, member_id)
        }
        ConsumerRecordKey::RegularExpression { regex, .. } => put_key_string(&mut out, regex),
    }
    out
}

/// A value, starting with its version (0). Strings longer than i16::MAX bytes are written as
/// they are, though Kafka would refuse to read them: callers bound them, as requests do.
pub fn encode_value(value: &ConsumerRecordValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.put_i16(0);
    match value {
        ConsumerRecordValue::Metadata(v) => {
            out.put_i32(v.epoch);
            put_tagged_i64(&mut out, v.metadata_hash);
        }
        ConsumerRecordValue::PartitionMetadata(v) => {
            put_len(&mut out, v.topics.len());
            for t in &v.topics {
                put_uuid(&mut out, &t.topic_id);
                put_string(&mut out, &t.name);
                out.put_i32(t.partitions);
                put_len(&mut out, t.racks.len());
                for (partition, racks) in &t.racks {
                    out.put_i32(*partition);
                    put_strings(&mut out, racks.iter());
                    no_tagged_fields(&mut out);
                }
                no_tagged_fields(&mut out);
            }
            no_tagged_fields(&mut out);
        }
        ConsumerRecordValue::MemberMetadata(v) => {
            put_nullable_string(&mut out, v.instance_id.as_deref());
            put_nullable_string(&mut out, v.rack_id.as_deref());
            put_string(&mut out, &v.client_id);
            put_string(&mut out, &v.client_host);
            put_strings(&mut out, v.subscribed_topic_names.iter());
            put_nullable_string(&mut out, v.subscribed_topic_regex.as_deref());
            out.put_i32(v.rebalance_timeout_ms);
            put_nullable_string(&mut out, v.server_assignor.as_deref());
            // Kafka's rule for this nullable struct: null is written (a 0 marker), the
            // default struct is not, anything else is a 1 marker then the struct.
            match &v.classic_member_metadata {
                None => put_tagged(&mut out, &[(0, vec![0])]),
                Some(c) if *c == ClassicMemberMetadata::default() => no_tagged_fields(&mut out),
                Some(c) => {
                    let mut data = vec![1];
                    data.put_i32(c.session_timeout_ms);
                    put_len(&mut data, c.supported_protocols.len());
                    for (name, metadata) in &c.supported_protocols {
                        put_string(&mut data, name);
                        put_len(&mut data, metadata.len());
                        data.put_slice(metadata);
                        no_tagged_fields(&mut data);
                    }
                    no_tagged_fields(&mut data);
                    put_tagged(&mut out, &[(0, data)]);
                }
            }
        }
        ConsumerRecordValue::TargetAssignmentMetadata(v) => {
            out.put_i32(v.assignment_epoch);
            put_tagged_i64(&mut out, v.assignment_timestamp_ms);
        }
        ConsumerRecordValue::TargetAssignmentMember(partitions) => {
            put_topic_partitions(
                &mut out,
                partitions,
                |ps| ps.iter().copied().collect(),
                |o, _| no_tagged_fields(o),
            );
            no_tagged_fields(&mut out);
        }
        ConsumerRecordValue::CurrentMemberAssignment(v) => {
            out.put_i32(v.member_epoch);
            out.put_i32(v.previous_member_epoch);
            out.put_i8(v.state.code());
            for topics in [&v.assigned, &v.pending_revocation] {
                put_topic_partitions(
                    &mut out,
                    topics,
                    |ps| ps.keys().copied().collect(),
                    |o, ps| {
                        // The assignment epochs, in the partitions' order; Kafka leaves an
                        // empty list out.
                        if ps.is_empty() {
                            no_tagged_fields(o);
                        } else {
                            let mut data = Vec::with_capacity(1 + 4 * ps.len());
                            put_len(&mut data, ps.len());
                            for epoch in ps.values() {
                                data.put_i32(*epoch);
                            }
                            put_tagged(o, &[(0, data)]);
                        }
                    },
                );
            }
            no_tagged_fields(&mut out);
        }
        ConsumerRecordValue::RegularExpression(v) => {
            put_strings(&mut out, v.topics.iter());
            out.put_i64(v.version);
            out.put_i64(v.timestamp_ms);
            no_tagged_fields(&mut out);
        }
    }
    out
}

// ---- decoding ----

/// The assignment epochs of one topic's partitions as read, if any.
type Epochs = Option<Vec<i32>>;

/// A bounds-checked reader over one key, value or tagged field.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        if self.left() < n {
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

    fn i8(&mut self) -> Result<i8, RecordError> {
        Ok(self.take(1)?[0] as i8)
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
    fn uuid(&mut self) -> Result<Uuid, RecordError> {
        Ok(Uuid::from_bytes(self.take(16)?.try_into().unwrap()))
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

    /// A key's int16-length string (never null in a key).
    fn key_string(&mut self) -> Result<String, RecordError> {
        let len = self.i16()?;
        if len < 0 {
            return err("a key string is null");
        }
        self.utf8(len as usize)
    }

    /// A compact length; `None` for null.
    fn compact_len(&mut self) -> Result<Option<usize>, RecordError> {
        Ok(match self.uvarint()? {
            0 => None,
            n => Some(n as usize - 1),
        })
    }

    fn nullable_string(&mut self, field: &str) -> Result<Option<String>, RecordError> {
        match self.compact_len()? {
            None => Ok(None),
            // Kafka's readers refuse longer strings.
            Some(len) if len > i16::MAX as usize => err(format!(
                "{field} is {len} bytes long, more than a string may be"
            )),
            Some(len) => self.utf8(len).map(Some),
        }
    }

    fn string(&mut self, field: &str) -> Result<String, RecordError> {
        self.nullable_string(field)?
            .map_or_else(|| err(format!("{field} is null")), Ok)
    }

    fn bytes(&mut self, field: &str) -> Result<Bytes, RecordError> {
        match self.compact_len()? {
            None => err(format!("{field} is null")),
            Some(len) => Ok(Bytes::copy_from_slice(self.take(len)?)),
        }
    }

    /// A non-nullable compact array's length, capped by what the remaining bytes could hold:
    /// no allocation bombs.
    fn array_len(&mut self, field: &str, min_entry_bytes: usize) -> Result<usize, RecordError> {
        let Some(len) = self.compact_len()? else {
            return err(format!("{field} is null"));
        };
        let left = self.left();
        if len > left / min_entry_bytes.max(1) {
            return err(format!("{field}: {len} entries cannot fit in {left} bytes"));
        }
        Ok(len)
    }

    fn strings(&mut self, field: &str) -> Result<Vec<String>, RecordError> {
        let n = self.array_len(field, 1)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.string(field)?);
        }
        Ok(out)
    }

    fn i32s(&mut self, field: &str) -> Result<Vec<i32>, RecordError> {
        let n = self.array_len(field, 4)?;
        (0..n).map(|_| self.i32()).collect()
    }

    /// A struct's tagged fields: `known` reads the field of a tag it knows from a reader over
    /// exactly that field's bytes and says whether it knew the tag; the others are skipped.
    fn tagged_fields(
        &mut self,
        mut known: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, RecordError>,
    ) -> Result<(), RecordError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            let mut field = Reader::new(self.take(size)?);
            if known(tag, &mut field)? && field.left() != 0 {
                return err(format!(
                    "tagged field {tag} has {} bytes after its value",
                    field.left()
                ));
            }
        }
        Ok(())
    }

    fn skip_tagged_fields(&mut self) -> Result<(), RecordError> {
        self.tagged_fields(|_, _| Ok(false))
    }

    /// `[TopicPartition]`: topic id, partitions, then the entry's tagged fields read by
    /// `tags`; `each` gets every topic with its partitions.
    fn topic_partitions(
        &mut self,
        field: &str,
        mut tags: impl FnMut(u32, &mut Reader<'a>, &mut Epochs) -> Result<bool, RecordError>,
        mut each: impl FnMut(Uuid, Vec<i32>, Epochs),
    ) -> Result<(), RecordError> {
        // A topic takes at least its id, an array length and a tag count.
        let n = self.array_len(field, 18)?;
        for _ in 0..n {
            let topic = self.uuid()?;
            let partitions = self.i32s(field)?;
            let mut extra = None;
            self.tagged_fields(|tag, r| tags(tag, r, &mut extra))?;
            each(topic, partitions, extra);
        }
        Ok(())
    }
}

/// Decodes a key of `record_type` from `rest`, the bytes after its int16 type. Enough on its
/// own for a tombstone.
pub fn decode_key(record_type: i16, rest: &[u8]) -> Result<ConsumerRecordKey, RecordError> {
    let mut r = Reader::new(rest);
    let group = r.key_string()?;
    Ok(match record_type {
        METADATA => ConsumerRecordKey::Metadata { group },
        PARTITION_METADATA => ConsumerRecordKey::PartitionMetadata { group },
        MEMBER_METADATA => ConsumerRecordKey::MemberMetadata {
            group,
            member_id: r.key_string()?,
        },
        TARGET_ASSIGNMENT_METADATA => ConsumerRecordKey::TargetAssignmentMetadata { group },
        TARGET_ASSIGNMENT_MEMBER => ConsumerRecordKey::TargetAssignmentMember {
            group,
            member_id: r.key_string()?,
        },
        CURRENT_MEMBER_ASSIGNMENT => ConsumerRecordKey::CurrentMemberAssignment {
            group,
            member_id: r.key_string()?,
        },
        REGULAR_EXPRESSION => ConsumerRecordKey::RegularExpression {
            group,
            regex: r.key_string()?,
        },
        other => return err(format!("record type {other} is not a consumer group's")),
    })
}

/// Decodes the value of a record whose key is `key`.
pub fn decode_value(
    key: &ConsumerRecordKey,
    buf: &[u8],
) -> Result<ConsumerRecordValue, RecordError> {
    let mut r = Reader::new(buf);
    let version = r.i16()?;
    if version != 0 {
        return err(format!(
            "record type {} has value version {version}; Kafka 4.4 knows only 0",
            key.record_type()
        ));
    }
    Ok(match key {
        ConsumerRecordKey::Metadata { .. } => {
            let epoch = r.i32()?;
            let mut metadata_hash = 0;
            r.tagged_fields(|tag, f| {
                if tag == 0 {
                    metadata_hash = f.i64()?;
                }
                Ok(tag == 0)
            })?;
            ConsumerRecordValue::Metadata(MetadataValue {
                epoch,
                metadata_hash,
            })
        }
        ConsumerRecordKey::PartitionMetadata { .. } => {
            // A topic takes at least its id, a name length, its partition count, an array length
            // and a tag count.
            let n = r.array_len("topics", 23)?;
            let mut topics = Vec::with_capacity(n);
            for _ in 0..n {
                let topic_id = r.uuid()?;
                let name = r.string("topic name")?;
                let partitions = r.i32()?;
                let m = r.array_len("partition metadata", 6)?;
                let mut racks = Vec::with_capacity(m);
                for _ in 0..m {
                    let partition = r.i32()?;
                    racks.push((partition, r.strings("racks")?));
                    r.skip_tagged_fields()?;
                }
                r.skip_tagged_fields()?;
                topics.push(TopicMetadata {
                    topic_id,
                    name,
                    partitions,
                    racks,
                });
            }
            r.skip_tagged_fields()?;
            ConsumerRecordValue::PartitionMetadata(PartitionMetadataValue { topics })
        }
        ConsumerRecordKey::MemberMetadata { .. } => {
            let instance_id = r.nullable_string("instance id")?;
            let rack_id = r.nullable_string("rack id")?;
            let client_id = r.string("client id")?;
            let client_host = r.string("client host")?;
            let subscribed_topic_names = r.strings("subscribed topic names")?.into_iter().collect();
            let subscribed_topic_regex = r.nullable_string("subscribed topic regex")?;
            let rebalance_timeout_ms = r.i32()?;
            let server_assignor = r.nullable_string("server assignor")?;
            let mut classic_member_metadata = Some(ClassicMemberMetadata::default());
            r.tagged_fields(|tag, f| {
                if tag != 0 {
                    return Ok(false);
                }
                classic_member_metadata = if f.uvarint()? == 0 {
                    None
                } else {
                    Some(decode_classic(f)?)
                };
                Ok(true)
            })?;
            ConsumerRecordValue::MemberMetadata(MemberSubscriptionValue {
                instance_id,
                rack_id,
                client_id,
                client_host,
                subscribed_topic_names,
                subscribed_topic_regex,
                rebalance_timeout_ms,
                server_assignor,
                classic_member_metadata,
            })
        }
        ConsumerRecordKey::TargetAssignmentMetadata { .. } => {
            let assignment_epoch = r.i32()?;
            let mut assignment_timestamp_ms = 0;
            r.tagged_fields(|tag, f| {
                if tag == 0 {
                    assignment_timestamp_ms = f.i64()?;
                }
                Ok(tag == 0)
            })?;
            ConsumerRecordValue::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                assignment_epoch,
                assignment_timestamp_ms,
            })
        }
        ConsumerRecordKey::TargetAssignmentMember { .. } => {
            let mut partitions = Partitions::new();
            r.topic_partitions(
                "topic partitions",
                |_, _, _| Ok(false),
                |topic, ps, _| partitions.entry(topic).or_default().extend(ps),
            )?;
            r.skip_tagged_fields()?;
            ConsumerRecordValue::TargetAssignmentMember(partitions)
        }
        ConsumerRecordKey::CurrentMemberAssignment { .. } => {
            let member_epoch = r.i32()?;
            let previous_member_epoch = r.i32()?;
            let state = MemberState::from_code(r.i8()?);
            // Records written before KIP-1251 have no assignment epochs (and a list of the
            // wrong length is taken as none): Kafka then gives every partition the member
            // epoch, or 0 when that is negative.
            let default_epoch = member_epoch.max(0);
            let mut lists = [PartitionEpochs::new(), PartitionEpochs::new()];
            for (list, field) in lists
                .iter_mut()
                .zip(["assigned partitions", "partitions pending revocation"])
            {
                r.topic_partitions(
                    field,
                    |tag, f, epochs| {
                        if tag != 0 {
                            return Ok(false);
                        }
                        *epochs = match f.compact_len()? {
                            None => None,
                            Some(n) if n > f.left() / 4 => {
                                return err(format!(
                                    "{n} assignment epochs cannot fit in {} bytes",
                                    f.left()
                                ))
                            }
                            Some(n) => Some((0..n).map(|_| f.i32()).collect::<Result<_, _>>()?),
                        };
                        Ok(true)
                    },
                    |topic, ps, epochs| {
                        let entry = list.entry(topic).or_default();
                        match epochs.filter(|e| e.len() == ps.len()) {
                            Some(epochs) => entry.extend(ps.into_iter().zip(epochs)),
                            None => entry.extend(ps.into_iter().map(|p| (p, default_epoch))),
                        }
                    },
                )?;
            }
            r.skip_tagged_fields()?;
            let [assigned, pending_revocation] = lists;
            ConsumerRecordValue::CurrentMemberAssignment(CurrentAssignmentValue {
                member_epoch,
                previous_member_epoch,
                state,
                assigned,
                pending_revocation,
            })
        }
        ConsumerRecordKey::RegularExpression { .. } => {
            let topics = r.strings("topics")?.into_iter().collect();
            let version = r.i64()?;
            let timestamp_ms = r.i64()?;
            r.skip_tagged_fields()?;
            ConsumerRecordValue::RegularExpression(RegularExpressionValue {
                topics,
                version,
                timestamp_ms,
            })
        }
    })
}

fn decode_classic(r: &mut Reader<'_>) -> Result<ClassicMemberMetadata, RecordError> {
    let session_timeout_ms = r.i32()?;
    // A protocol takes at least a name length, a metadata length and a tag count.
    let n = r.array_len("supported protocols", 3)?;
    let mut supported_protocols = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string("protocol name")?;
        let metadata = r.bytes("protocol metadata")?;
        r.skip_tagged_fields()?;
        supported_protocols.push((name, metadata));
    }
    r.skip_tagged_fields()?;
    Ok(ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const T1: Uuid = Uuid::from_u64_pair(0x0102030405060708, 0x090a0b0c0d0e0f10);
    const T2: Uuid = Uuid::from_u64_pair(0x1112131415161718, 0x191a1b1c1d1e1f20);

    fn key(record_type: i16, member: Option<&str>) -> ConsumerRecordKey {
        let group = "grp".to_string();
        let member_id = member.unwrap_or("").to_string();
        match record_type {
            METADATA => ConsumerRecordKey::Metadata { group },
            PARTITION_METADATA => ConsumerRecordKey::PartitionMetadata { group },
            MEMBER_METADATA => ConsumerRecordKey::MemberMetadata { group, member_id },
            TARGET_ASSIGNMENT_METADATA => ConsumerRecordKey::TargetAssignmentMetadata { group },
            TARGET_ASSIGNMENT_MEMBER => {
                ConsumerRecordKey::TargetAssignmentMember { group, member_id }
            }
            CURRENT_MEMBER_ASSIGNMENT => {
                ConsumerRecordKey::CurrentMemberAssignment { group, member_id }
            }
            _ => ConsumerRecordKey::RegularExpression {
                group,
                regex: member.unwrap().to_string(),
            },
        }
    }

    fn decode_full_key(bytes: &[u8]) -> Result<ConsumerRecordKey, RecordError> {
        let t = i16::from_be_bytes([bytes[0], bytes[1]]);
        decode_key(t, &bytes[2..])
    }

    /// Asserts that `k` and `v` encode to Kafka's bytes and decode back from them.
    fn golden(k: &ConsumerRecordKey, key_hex: &str, v: &ConsumerRecordValue, value_hex: &str) {
        let (kb, vb) = (hex(key_hex), hex(value_hex));
        assert_eq!(encode_key(k), kb, "key {k:?}");
        assert_eq!(encode_value(v), vb, "value {v:?}");
        assert_eq!(&decode_full_key(&kb).unwrap(), k);
        assert_eq!(&decode_value(k, &vb).unwrap(), v);
    }

    // The hex constants below are what Kafka 4.4.0's generated classes write
    // (`MessageUtil.toCoordinatorTypePrefixedBytes` for keys, `toVersionPrefixedBytes(0, ..)`
    // for values), group "grp", member "m-1", topic ids T1 and T2.

    #[test]
    fn group_metadata_matches_kafka() {
        let k = key(METADATA, None);
        golden(
            &k,
            "00030003677270",
            &ConsumerRecordValue::Metadata(MetadataValue {
                epoch: 42,
                metadata_hash: 0x0123456789abcdef,
            }),
            "00000000002a0100080123456789abcdef",
        );
        golden(
            &k,
            "00030003677270",
            &ConsumerRecordValue::Metadata(MetadataValue {
                epoch: 42,
                metadata_hash: 0,
            }),
            "00000000002a00",
        );
    }

    #[test]
    fn unknown_tagged_fields_are_skipped() {
        // Written by Kafka with an unknown tag 7 of three bytes after the metadata hash.
        let v = decode_value(
            &key(METADATA, None),
            &hex("00000000002a02000800000000000000050703010203"),
        )
        .unwrap();
        assert_eq!(
            v,
            ConsumerRecordValue::Metadata(MetadataValue {
                epoch: 42,
                metadata_hash: 5
            })
        );
        // An unknown tag in every struct of a current assignment, nested ones included.
        let mut b = Vec::new();
        b.put_i16(0);
        b.put_i32(3);
        b.put_i32(2);
        b.put_i8(0);
        b.push(2); // one topic
        b.extend_from_slice(T1.as_bytes());
        b.extend_from_slice(&[2, 0, 0, 0, 7]); // partition 7
        b.extend_from_slice(&[2, 5, 1, 0xff, 0, 5, 2, 0, 0, 0, 1]); // tag 5, then epochs [1]
        b.push(1); // no pending revocation
        b.extend_from_slice(&[1, 9, 0]); // top level: tag 9, empty
        let v = decode_value(&key(CURRENT_MEMBER_ASSIGNMENT, Some("m")), &b).unwrap();
        let ConsumerRecordValue::CurrentMemberAssignment(c) = v else {
            panic!("{v:?}")
        };
        assert_eq!(c.assigned, BTreeMap::from([(T1, BTreeMap::from([(7, 1)]))]));
        assert!(c.pending_revocation.is_empty());
    }

    #[test]
    fn partition_metadata_matches_kafka() {
        golden(
            &key(PARTITION_METADATA, None),
            "00040003677270",
            &ConsumerRecordValue::PartitionMetadata(PartitionMetadataValue {
                topics: vec![
                    TopicMetadata {
                        topic_id: T1,
                        name: "foo".into(),
                        partitions: 3,
                        racks: vec![(0, vec!["r1".into(), "r2".into()]), (2, vec![])],
                    },
                    TopicMetadata {
                        topic_id: T2,
                        name: "bar".into(),
                        partitions: 1,
                        racks: vec![],
                    },
                ],
            }),
            "0000030102030405060708090a0b0c0d0e0f1004666f6f000000030300000000030372310372320000\
             0000020100001112131415161718191a1b1c1d1e1f200462617200000001010000",
        );
    }

    fn subscription() -> MemberSubscriptionValue {
        MemberSubscriptionValue {
            instance_id: Some("inst".into()),
            rack_id: Some("rack-a".into()),
            client_id: "cli".into(),
            client_host: "/10.0.0.1".into(),
            subscribed_topic_names: ["foo".to_string(), "bar".to_string()].into(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: 300_000,
            server_assignor: Some("uniform".into()),
            classic_member_metadata: None,
        }
    }

    #[test]
    fn member_metadata_matches_kafka() {
        let k = key(MEMBER_METADATA, Some("m-1"));
        let key_hex = "0005000367727000036d2d31";
        // A consumer-protocol member: Kafka writes the null classic metadata as tag 0.
        golden(
            &k,
            key_hex,
            &ConsumerRecordValue::MemberMetadata(subscription()),
            "000005696e7374077261636b2d6104636c690a2f31302e302e302e31030462617204666f6f000004\
             93e008756e69666f726d01000100",
        );
        // A classic-protocol member.
        golden(
            &k,
            key_hex,
            &ConsumerRecordValue::MemberMetadata(MemberSubscriptionValue {
                instance_id: None,
                rack_id: None,
                subscribed_topic_names: BTreeSet::new(),
                subscribed_topic_regex: Some("foo.*".into()),
                rebalance_timeout_ms: 60_000,
                server_assignor: None,
                classic_member_metadata: Some(ClassicMemberMetadata {
                    session_timeout_ms: 45_000,
                    supported_protocols: vec![
                        ("range".into(), Bytes::from_static(&[0, 3, 9])),
                        ("roundrobin".into(), Bytes::new()),
                    ],
                }),
                ..subscription()
            }),
            "0000000004636c690a2f31302e302e302e310106666f6f2e2a0000ea600001001f010000afc80306\
             72616e676504000309000b726f756e64726f62696e010000",
        );
        // Kafka leaves a default classic metadata out, and reads a missing one as the default.
        golden(
            &k,
            key_hex,
            &ConsumerRecordValue::MemberMetadata(MemberSubscriptionValue {
                instance_id: Some(String::new()),
                rack_id: Some(String::new()),
                client_id: "c".into(),
                client_host: "h".into(),
                subscribed_topic_names: BTreeSet::new(),
                subscribed_topic_regex: Some(String::new()),
                rebalance_timeout_ms: -1,
                server_assignor: Some(String::new()),
                classic_member_metadata: Some(ClassicMemberMetadata::default()),
            }),
            "00000101026302680101ffffffff0100",
        );
    }

    #[test]
    fn target_assignment_matches_kafka() {
        let k = key(TARGET_ASSIGNMENT_METADATA, None);
        golden(
            &k,
            "00060003677270",
            &ConsumerRecordValue::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                assignment_epoch: 7,
                assignment_timestamp_ms: 1_700_000_000_000,
            }),
            "0000000000070100080000018bcfe56800",
        );
        golden(
            &k,
            "00060003677270",
            &ConsumerRecordValue::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                assignment_epoch: 7,
                assignment_timestamp_ms: 0,
            }),
            "00000000000700",
        );
        golden(
            &key(TARGET_ASSIGNMENT_MEMBER, Some("m-1")),
            "0007000367727000036d2d31",
            &ConsumerRecordValue::TargetAssignmentMember(Partitions::from([
                (T1, BTreeSet::from([0, 1, 2])),
                (T2, BTreeSet::from([5])),
            ])),
            "0000030102030405060708090a0b0c0d0e0f10040000000000000001000000020011121314151617\
             18191a1b1c1d1e1f2002000000050000",
        );
    }

    #[test]
    fn current_assignment_matches_kafka() {
        let k = key(CURRENT_MEMBER_ASSIGNMENT, Some("m-1"));
        let v = CurrentAssignmentValue {
            member_epoch: 10,
            previous_member_epoch: 9,
            state: MemberState::UnrevokedPartitions,
            assigned: BTreeMap::from([(T1, BTreeMap::from([(0, 9), (1, 10)]))]),
            pending_revocation: BTreeMap::from([(T2, BTreeMap::from([(3, 8)]))]),
        };
        golden(
            &k,
            "0008000367727000036d2d31",
            &ConsumerRecordValue::CurrentMemberAssignment(v.clone()),
            "00000000000a0000000901020102030405060708090a0b0c0d0e0f10030000000000000001010009\
             03000000090000000a021112131415161718191a1b1c1d1e1f200200000003010005020000000800",
        );
        assert_eq!(
            v.assigned_partitions(),
            Partitions::from([(T1, BTreeSet::from([0, 1]))])
        );
        assert_eq!(
            v.pending_revocation_partitions(),
            Partitions::from([(T2, BTreeSet::from([3]))])
        );

        // Written without epochs (before KIP-1251) and with a null epoch list: every partition
        // takes the member epoch.
        let old = decode_value(
            &k,
            &hex(
                "00000000000a0000000900020102030405060708090a0b0c0d0e0f1003000000040000000600\
                 021112131415161718191a1b1c1d1e1f2002000000010100010000",
            ),
        )
        .unwrap();
        assert_eq!(
            old,
            ConsumerRecordValue::CurrentMemberAssignment(CurrentAssignmentValue {
                member_epoch: 10,
                previous_member_epoch: 9,
                state: MemberState::Stable,
                assigned: with_epoch(&Partitions::from([(T1, BTreeSet::from([4, 6]))]), 10),
                pending_revocation: with_epoch(&Partitions::from([(T2, BTreeSet::from([1]))]), 10),
            })
        );
    }

    #[test]
    fn assignment_epochs_of_the_wrong_length_or_a_negative_member_epoch_default() {
        let v = CurrentAssignmentValue {
            member_epoch: -2,
            previous_member_epoch: 4,
            state: MemberState::Stable,
            assigned: BTreeMap::from([(T1, BTreeMap::from([(0, 3), (1, 4)]))]),
            pending_revocation: PartitionEpochs::new(),
        };
        let mut b = encode_value(&ConsumerRecordValue::CurrentMemberAssignment(v));
        // Drop the second epoch: [tag 0, size 9, len 3, 3, 4] becomes [tag 0, size 5, len 2, 3].
        let at = b.windows(3).position(|w| w == [0, 9, 3]).unwrap();
        b.splice(at..at + 11, [0, 5, 2, 0, 0, 0, 3]);
        let ConsumerRecordValue::CurrentMemberAssignment(c) =
            decode_value(&key(CURRENT_MEMBER_ASSIGNMENT, Some("m")), &b).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            c.assigned,
            BTreeMap::from([(T1, BTreeMap::from([(0, 0), (1, 0)]))])
        );
    }

    #[test]
    fn unknown_member_states_read_as_unknown() {
        let mut b = encode_value(&ConsumerRecordValue::CurrentMemberAssignment(
            CurrentAssignmentValue {
                member_epoch: 1,
                previous_member_epoch: 0,
                state: MemberState::Stable,
                assigned: PartitionEpochs::new(),
                pending_revocation: PartitionEpochs::new(),
            },
        ));
        b[10] = 5;
        let ConsumerRecordValue::CurrentMemberAssignment(c) =
            decode_value(&key(CURRENT_MEMBER_ASSIGNMENT, Some("m")), &b).unwrap()
        else {
            panic!()
        };
        assert_eq!(c.state, MemberState::Unknown);
        assert_eq!(
            encode_value(&ConsumerRecordValue::CurrentMemberAssignment(c))[10],
            127
        );
    }

    #[test]
    fn regular_expression_matches_kafka() {
        golden(
            &key(REGULAR_EXPRESSION, Some("foo.*")),
            "001000036772700005666f6f2e2a",
            &ConsumerRecordValue::RegularExpression(RegularExpressionValue {
                topics: ["foo2".to_string(), "foo1".to_string()].into(),
                version: 17,
                timestamp_ms: 1_700_000_000_123,
            }),
            "00000305666f6f3105666f6f3200000000000000110000018bcfe5687b00",
        );
    }

    #[test]
    fn keys_decode_alone_for_tombstones_and_refuse_other_types() {
        for t in [3, 4, 5, 6, 7, 8, 16] {
            assert!(is_consumer_record_type(t));
            let k = key(t, Some("m-1"));
            assert_eq!(k.record_type(), t);
            assert_eq!(k.group(), "grp");
            let b = encode_key(&k);
            assert_eq!(decode_full_key(&b).unwrap(), k);
            for cut in 2..b.len() {
                assert!(decode_full_key(&b[..cut]).is_err(), "type {t} cut at {cut}");
            }
        }
        for t in [0, 1, 2, 9, 11, 15, 17] {
            assert!(!is_consumer_record_type(t));
            assert!(decode_key(t, &[0, 1, b'g']).is_err());
        }
        assert!(decode_key(METADATA, &[0xff, 0xff]).is_err());
    }

    #[test]
    fn other_value_versions_and_nulls_where_kafka_forbids_them_are_errors() {
        let k = key(METADATA, None);
        assert!(decode_value(&k, &[0, 1, 0, 0, 0, 1, 0]).is_err());
        assert!(decode_value(&k, &[0xff, 0xff, 0, 0, 0, 1, 0]).is_err());
        // A null topic list in a regular expression value.
        let r = key(REGULAR_EXPRESSION, Some("x"));
        let mut b = vec![0, 0, 0];
        b.extend_from_slice(&[0; 16]);
        b.push(0);
        assert!(decode_value(&r, &b).is_err());
        // A null client id.
        let mut m = encode_value(&ConsumerRecordValue::MemberMetadata(
            MemberSubscriptionValue {
                instance_id: None,
                rack_id: None,
                client_id: String::new(),
                ..subscription()
            },
        ));
        assert_eq!(m[4], 1);
        m[4] = 0;
        assert!(decode_value(&key(MEMBER_METADATA, Some("m")), &m).is_err());
    }

    #[test]
    fn a_known_tagged_field_must_fill_its_size() {
        let k = key(METADATA, None);
        // Metadata hash declared as 9 bytes.
        let b = hex("00000000002a010009000000000000000500");
        assert!(decode_value(&k, &b).is_err());
        // And as 7.
        let b = hex("00000000002a0100070000000000000005");
        assert!(decode_value(&k, &b).is_err());
    }

    #[test]
    fn huge_counts_are_errors_not_allocations() {
        // Array lengths of u32::MAX - 1 entries with a few bytes behind them.
        let big = [0xff, 0xff, 0xff, 0xff, 0x0f];
        for k in [
            key(PARTITION_METADATA, None),
            key(TARGET_ASSIGNMENT_MEMBER, Some("m")),
            key(REGULAR_EXPRESSION, Some("x")),
        ] {
            let mut b = vec![0, 0];
            b.extend_from_slice(&big);
            b.extend_from_slice(&[0; 8]);
            assert!(decode_value(&k, &b).is_err(), "{k:?}");
        }
        let mut b = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0];
        b.extend_from_slice(&big);
        assert!(decode_value(&key(CURRENT_MEMBER_ASSIGNMENT, Some("m")), &b).is_err());
        // A tagged field count with nothing behind it.
        assert!(decode_value(&key(METADATA, None), &hex("00000000002affffffff0f")).is_err());
    }

    /// A small deterministic generator (xorshift) for the property tests.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn i32(&mut self) -> i32 {
            self.next() as i32
        }
        fn i64(&mut self) -> i64 {
            self.next() as i64
        }
        fn string(&mut self) -> String {
            let len = self.below(4) as usize * self.below(40) as usize;
            (0..len)
                .map(|_| ['a', 'z', '.', '*', 'é', '字'][self.below(6) as usize])
                .collect()
        }
        fn opt_string(&mut self) -> Option<String> {
            (self.below(3) != 0).then(|| self.string())
        }
        fn strings(&mut self) -> BTreeSet<String> {
            (0..self.below(5)).map(|_| self.string()).collect()
        }
        fn uuid(&mut self) -> Uuid {
            Uuid::from_u64_pair(self.next(), self.next())
        }
        fn epochs(&mut self) -> PartitionEpochs {
            (0..self.below(4))
                .map(|_| {
                    let ps = (0..self.below(6))
                        .map(|_| (self.below(300) as i32, self.i32()))
                        .collect();
                    (self.uuid(), ps)
                })
                .collect()
        }
        fn value(&mut self, record_type: i16) -> ConsumerRecordValue {
            match record_type {
                METADATA => ConsumerRecordValue::Metadata(MetadataValue {
                    epoch: self.i32(),
                    metadata_hash: if self.below(2) == 0 { 0 } else { self.i64() },
                }),
                PARTITION_METADATA => {
                    ConsumerRecordValue::PartitionMetadata(PartitionMetadataValue {
                        topics: (0..self.below(4))
                            .map(|_| TopicMetadata {
                                topic_id: self.uuid(),
                                name: self.string(),
                                partitions: self.i32(),
                                racks: (0..self.below(3))
                                    .map(|_| (self.i32(), self.strings().into_iter().collect()))
                                    .collect(),
                            })
                            .collect(),
                    })
                }
                MEMBER_METADATA => ConsumerRecordValue::MemberMetadata(MemberSubscriptionValue {
                    instance_id: self.opt_string(),
                    rack_id: self.opt_string(),
                    client_id: self.string(),
                    client_host: self.string(),
                    subscribed_topic_names: self.strings(),
                    subscribed_topic_regex: self.opt_string(),
                    rebalance_timeout_ms: self.i32(),
                    server_assignor: self.opt_string(),
                    classic_member_metadata: match self.below(3) {
                        0 => None,
                        1 => Some(ClassicMemberMetadata::default()),
                        _ => Some(ClassicMemberMetadata {
                            session_timeout_ms: self.i32(),
                            supported_protocols: (0..self.below(3))
                                .map(|_| {
                                    let n = self.below(200) as usize;
                                    (self.string(), Bytes::from(vec![7u8; n]))
                                })
                                .collect(),
                        }),
                    },
                }),
                TARGET_ASSIGNMENT_METADATA => {
                    ConsumerRecordValue::TargetAssignmentMetadata(TargetAssignmentMetadataValue {
                        assignment_epoch: self.i32(),
                        assignment_timestamp_ms: self.i64(),
                    })
                }
                TARGET_ASSIGNMENT_MEMBER => {
                    ConsumerRecordValue::TargetAssignmentMember(without_epochs(&self.epochs()))
                }
                CURRENT_MEMBER_ASSIGNMENT => {
                    ConsumerRecordValue::CurrentMemberAssignment(CurrentAssignmentValue {
                        member_epoch: self.i32(),
                        previous_member_epoch: self.i32(),
                        state: MemberState::from_code([0, 1, 2, 127][self.below(4) as usize]),
                        assigned: self.epochs(),
                        pending_revocation: self.epochs(),
                    })
                }
                _ => ConsumerRecordValue::RegularExpression(RegularExpressionValue {
                    topics: self.strings(),
                    version: self.i64(),
                    timestamp_ms: self.i64(),
                }),
            }
        }
    }

    #[test]
    fn generated_records_round_trip_and_every_truncation_is_an_error() {
        let mut g = Gen(0x5eed_1234_abcd_0001);
        for case in 0..400 {
            for t in [3, 4, 5, 6, 7, 8, 16] {
                let (group, second) = (g.string(), g.string());
                let k = match t {
                    3 => ConsumerRecordKey::Metadata { group },
                    4 => ConsumerRecordKey::PartitionMetadata { group },
                    5 => ConsumerRecordKey::MemberMetadata {
                        group,
                        member_id: second,
                    },
                    6 => ConsumerRecordKey::TargetAssignmentMetadata { group },
                    7 => ConsumerRecordKey::TargetAssignmentMember {
                        group,
                        member_id: second,
                    },
                    8 => ConsumerRecordKey::CurrentMemberAssignment {
                        group,
                        member_id: second,
                    },
                    _ => ConsumerRecordKey::RegularExpression {
                        group,
                        regex: second,
                    },
                };
                let kb = encode_key(&k);
                assert_eq!(decode_full_key(&kb).unwrap(), k, "case {case}");
                let v = g.value(t);
                let vb = encode_value(&v);
                assert_eq!(decode_value(&k, &vb).unwrap(), v, "case {case} type {t}");
                for cut in 0..vb.len() {
                    assert!(
                        decode_value(&k, &vb[..cut]).is_err(),
                        "case {case} type {t} cut at {cut} of {}",
                        vb.len()
                    );
                }
                // Damage one byte: an error or some value, never a panic.
                if !vb.is_empty() {
                    let mut d = vb.clone();
                    let at = g.below(d.len() as u64) as usize;
                    d[at] ^= 1 << g.below(8);
                    let _ = decode_value(&k, &d);
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut g = Gen(0xdead_beef_0bad_cafe);
        for _ in 0..20_000 {
            let len = g.below(48) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| g.next() as u8).collect();
            if len >= 2 && g.below(2) == 0 {
                b[0] = 0;
                b[1] = 0;
            }
            for t in [3, 4, 5, 6, 7, 8, 16] {
                if let Ok(k) = decode_key(t, &b) {
                    let _ = decode_value(&k, &b);
                }
                let _ = decode_value(&key(t, Some("m")), &b);
            }
        }
    }
}
