//! The primitive encoding under every metadata record: Kafka's flexible-version ("compact",
//! KIP-482) message encoding, on top of kafka-protocol's primitive encoders.
//!
//! Invariants of [`Reader`]: it never reads past its slice, never panics, and never allocates
//! more than the bytes it has left justify: every length read from the input is checked against
//! the remaining bytes *before* anything is allocated for it.
//!
//! Why not kafka-protocol's `protocol::types` encoders: in 0.18 their `Encoder`/`Decoder`
//! traits are `pub(crate)`, so the types cannot be called from outside the crate; and its
//! `CompactArray`/`CompactString` decoders allocate the declared length before checking that the
//! bytes exist, which a hostile length would turn into a multi-GiB allocation. So the fixed-size
//! primitives go through `bytes::{Buf, BufMut}` and the varint is the 7-bits-per-byte encoding
//! of Kafka's `ByteUtils.writeUnsignedVarint`, here.

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

/// Tagged fields a record's schema version does not know, by tag, each holding its raw bytes.
/// They are kept so that a record written by a newer Kafka survives a decode/encode round trip.
pub type UnknownTaggedFields = BTreeMap<u32, Bytes>;

/// Why bytes could not be decoded as a metadata record (or a record could not be encoded at the
/// version asked for). Every variant names the record and/or field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("truncated record: {field} needs {needed} byte(s) but only {remaining} remain")]
    Truncated {
        field: &'static str,
        needed: usize,
        remaining: usize,
    },
    #[error("{field}: unsigned varint longer than 5 bytes")]
    VarintTooLong { field: &'static str },
    #[error("{field}: value {value} does not fit (limit {limit})")]
    ValueTooLarge {
        field: &'static str,
        value: u64,
        limit: u64,
    },
    #[error("{field}: length {length} exceeds the {remaining} byte(s) left in the record")]
    LengthTooLarge {
        field: &'static str,
        length: u64,
        remaining: usize,
    },
    #[error("{field} is null, but the schema does not allow null")]
    UnexpectedNull { field: &'static str },
    #[error("{field} is not valid UTF-8")]
    InvalidUtf8 { field: &'static str },
    #[error("frame version {0} is not supported (only frame version 1 exists; 0 was KRaft's 2.8 preview)")]
    UnsupportedFrameVersion(u32),
    #[error("metadata record type (api key) {0} is unknown or not supported by Samsa")]
    UnknownRecordType(u16),
    #[error("{record} version {version} is not a valid version (valid: 0..={latest})")]
    UnsupportedVersion {
        record: &'static str,
        version: u16,
        latest: u16,
    },
    #[error("{record} version {version} cannot carry a non-default {field}")]
    FieldNotInVersion {
        record: &'static str,
        version: u16,
        field: &'static str,
    },
    #[error("tagged field {tag} ({field}) declared {declared} byte(s) but its value used {used}")]
    TaggedFieldSize {
        field: &'static str,
        tag: u32,
        declared: usize,
        used: usize,
    },
    #[error("{count} byte(s) of garbage after {record}")]
    TrailingBytes { record: &'static str, count: usize },
}

/// Reads the compact encoding from a byte slice. See the module doc for its invariants.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn need(&self, field: &'static str, needed: usize) -> Result<(), RecordError> {
        if self.buf.len() < needed {
            return Err(RecordError::Truncated {
                field,
                needed,
                remaining: self.buf.len(),
            });
        }
        Ok(())
    }

    /// Takes exactly `n` bytes (already checked by the caller or checked here).
    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], RecordError> {
        self.need(field, n)?;
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn i8(&mut self, field: &'static str) -> Result<i8, RecordError> {
        self.need(field, 1)?;
        Ok(self.buf.get_i8())
    }
    pub(crate) fn i16(&mut self, field: &'static str) -> Result<i16, RecordError> {
        self.need(field, 2)?;
        Ok(self.buf.get_i16())
    }
    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, RecordError> {
        self.need(field, 2)?;
        Ok(self.buf.get_u16())
    }
    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, RecordError> {
        self.need(field, 4)?;
        Ok(self.buf.get_i32())
    }
    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, RecordError> {
        self.need(field, 8)?;
        Ok(self.buf.get_i64())
    }
    pub(crate) fn f64(&mut self, field: &'static str) -> Result<f64, RecordError> {
        self.need(field, 8)?;
        Ok(self.buf.get_f64())
    }
    /// Kafka reads a boolean as "any non-zero byte is true".
    pub(crate) fn bool(&mut self, field: &'static str) -> Result<bool, RecordError> {
        Ok(self.i8(field)? != 0)
    }
    pub(crate) fn uuid(&mut self, field: &'static str) -> Result<Uuid, RecordError> {
        let raw = self.take(field, 16)?;
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(raw);
        Ok(Uuid::from_bytes(bytes))
    }

    /// An unsigned varint of at most 5 bytes, as Kafka's `readUnsignedVarint` accepts (bits
    /// beyond 32 in the 5th byte are dropped, as Java's shift drops them).
    pub(crate) fn uvarint(&mut self, field: &'static str) -> Result<u32, RecordError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let Some((&b, rest)) = self.buf.split_first() else {
                return Err(RecordError::Truncated {
                    field,
                    needed: 1,
                    remaining: 0,
                });
            };
            self.buf = rest;
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordError::VarintTooLong { field })
    }

    /// An unsigned varint that must fit in an `i16` (api keys and versions, as Kafka checks).
    pub(crate) fn uvarint_u16(&mut self, field: &'static str) -> Result<u16, RecordError> {
        let v = self.uvarint(field)?;
        if v > i16::MAX as u32 {
            return Err(RecordError::ValueTooLarge {
                field,
                value: v.into(),
                limit: i16::MAX as u64,
            });
        }
        Ok(v as u16)
    }

    /// A compact length: `None` for null, else the length, checked so that `length *
    /// min_element_size` bytes are actually left.
    fn compact_len(
        &mut self,
        field: &'static str,
        min_element_size: usize,
    ) -> Result<Option<usize>, RecordError> {
        let n = self.uvarint(field)?;
        if n == 0 {
            return Ok(None);
        }
        let len = (n - 1) as usize;
        if len.saturating_mul(min_element_size.max(1)) > self.buf.len() {
            return Err(RecordError::LengthTooLarge {
                field,
                length: len as u64,
                remaining: self.buf.len(),
            });
        }
        Ok(Some(len))
    }

    pub(crate) fn nullable_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, RecordError> {
        match self.compact_len(field, 1)? {
            None => Ok(None),
            Some(len) => {
                let raw = self.take(field, len)?;
                let s = std::str::from_utf8(raw).map_err(|_| RecordError::InvalidUtf8 { field })?;
                Ok(Some(s.to_owned()))
            }
        }
    }

    pub(crate) fn string(&mut self, field: &'static str) -> Result<String, RecordError> {
        self.nullable_string(field)?
            .ok_or(RecordError::UnexpectedNull { field })
    }

    pub(crate) fn bytes(&mut self, field: &'static str) -> Result<Bytes, RecordError> {
        match self.compact_len(field, 1)? {
            None => Err(RecordError::UnexpectedNull { field }),
            Some(len) => Ok(Bytes::copy_from_slice(self.take(field, len)?)),
        }
    }

    /// A compact array whose elements take at least `min_element_size` bytes each; the
    /// allocation is bounded by the bytes left.
    pub(crate) fn nullable_array<T>(
        &mut self,
        field: &'static str,
        min_element_size: usize,
        mut element: impl FnMut(&mut Self) -> Result<T, RecordError>,
    ) -> Result<Option<Vec<T>>, RecordError> {
        match self.compact_len(field, min_element_size)? {
            None => Ok(None),
            Some(len) => {
                let mut out = Vec::with_capacity(len);
                for _ in 0..len {
                    out.push(element(self)?);
                }
                Ok(Some(out))
            }
        }
    }

    pub(crate) fn array<T>(
        &mut self,
        field: &'static str,
        min_element_size: usize,
        element: impl FnMut(&mut Self) -> Result<T, RecordError>,
    ) -> Result<Vec<T>, RecordError> {
        self.nullable_array(field, min_element_size, element)?
            .ok_or(RecordError::UnexpectedNull { field })
    }

    pub(crate) fn nullable_i32_array(
        &mut self,
        field: &'static str,
    ) -> Result<Option<Vec<i32>>, RecordError> {
        self.nullable_array(field, 4, |r| r.i32(field))
    }
    pub(crate) fn i32_array(&mut self, field: &'static str) -> Result<Vec<i32>, RecordError> {
        self.array(field, 4, |r| r.i32(field))
    }
    pub(crate) fn nullable_uuid_array(
        &mut self,
        field: &'static str,
    ) -> Result<Option<Vec<Uuid>>, RecordError> {
        self.nullable_array(field, 16, |r| r.uuid(field))
    }
    pub(crate) fn uuid_array(&mut self, field: &'static str) -> Result<Vec<Uuid>, RecordError> {
        self.array(field, 16, |r| r.uuid(field))
    }

    /// Reads a tagged-field section. `known(tag, reader)` decodes a tag the schema version
    /// knows from a sub-reader holding exactly that field's bytes and returns `Ok(true)`, or
    /// returns `Ok(false)` for a tag it does not know, which is then kept raw. A known field
    /// must use exactly its declared size. A repeated tag overwrites (as Kafka's reader does).
    pub(crate) fn tagged_fields(
        &mut self,
        mut known: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, RecordError>,
    ) -> Result<UnknownTaggedFields, RecordError> {
        let count = self.uvarint("tagged field count")?;
        let mut unknown = UnknownTaggedFields::new();
        // Each iteration consumes at least two bytes or fails, so `count` cannot make this
        // loop run longer than the input allows.
        for _ in 0..count {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tagged field size")? as usize;
            let data = self.take("tagged field data", size)?;
            let mut sub = Reader::new(data);
            if known(tag, &mut sub)? {
                if sub.remaining() != 0 {
                    return Err(RecordError::TaggedFieldSize {
                        field: "known tagged field",
                        tag,
                        declared: size,
                        used: size - sub.remaining(),
                    });
                }
            } else {
                unknown.insert(tag, Bytes::copy_from_slice(data));
            }
        }
        Ok(unknown)
    }

    pub(crate) fn finish(self, record: &'static str) -> Result<(), RecordError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(RecordError::TrailingBytes {
                record,
                count: self.buf.len(),
            })
        }
    }
}

/// Writes the compact encoding. Lengths above `u32::MAX - 1` (a >4 GiB string in memory) are a
/// caller bug and panic; nothing else can fail.
pub(crate) struct Writer {
    pub(crate) buf: BytesMut,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Writer {
            buf: BytesMut::with_capacity(64),
        }
    }

    pub(crate) fn i8(&mut self, v: i8) {
        self.buf.put_i8(v);
    }
    pub(crate) fn i16(&mut self, v: i16) {
        self.buf.put_i16(v);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }
    pub(crate) fn i32(&mut self, v: i32) {
        self.buf.put_i32(v);
    }
    pub(crate) fn i64(&mut self, v: i64) {
        self.buf.put_i64(v);
    }
    pub(crate) fn f64(&mut self, v: f64) {
        self.buf.put_f64(v);
    }
    pub(crate) fn bool(&mut self, v: bool) {
        self.buf.put_u8(v as u8);
    }
    pub(crate) fn uuid(&mut self, v: Uuid) {
        self.buf.put_slice(v.as_bytes());
    }
    pub(crate) fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }
    fn compact_len(&mut self, len: usize) {
        let n = u32::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(1))
            .expect("a field longer than u32::MAX - 1 bytes or elements");
        self.uvarint(n);
    }
    pub(crate) fn string(&mut self, v: &str) {
        self.compact_len(v.len());
        self.buf.put_slice(v.as_bytes());
    }
    pub(crate) fn nullable_string(&mut self, v: Option<&str>) {
        match v {
            None => self.uvarint(0),
            Some(v) => self.string(v),
        }
    }
    pub(crate) fn bytes(&mut self, v: &[u8]) {
        self.compact_len(v.len());
        self.buf.put_slice(v);
    }
    pub(crate) fn array<T>(&mut self, v: &[T], mut element: impl FnMut(&mut Self, &T)) {
        self.compact_len(v.len());
        for e in v {
            element(self, e);
        }
    }
    pub(crate) fn i32_array(&mut self, v: &[i32]) {
        self.array(v, |w, x| w.i32(*x));
    }
    pub(crate) fn uuid_array(&mut self, v: &[Uuid]) {
        self.array(v, |w, x| w.uuid(*x));
    }
    pub(crate) fn freeze(self) -> Bytes {
        self.buf.freeze()
    }
}

/// Collects the tagged fields of one (sub)message and writes them, known and unknown merged in
/// ascending tag order, as Kafka's writer does.
pub(crate) struct TaggedFields {
    fields: Vec<(u32, Bytes)>,
}

impl TaggedFields {
    pub(crate) fn new() -> Self {
        TaggedFields { fields: Vec::new() }
    }

    pub(crate) fn field(&mut self, tag: u32, write: impl FnOnce(&mut Writer)) {
        let mut w = Writer::new();
        write(&mut w);
        self.fields.push((tag, w.freeze()));
    }

    /// Writes the section. An unknown field whose tag is also a known one (possible when a
    /// record decoded at an older version is re-encoded at a newer one) yields to the known one.
    pub(crate) fn write(mut self, w: &mut Writer, unknown: &UnknownTaggedFields) {
        for (tag, data) in unknown {
            if !self.fields.iter().any(|(t, _)| t == tag) {
                self.fields.push((*tag, data.clone()));
            }
        }
        self.fields.sort_by_key(|(t, _)| *t);
        let count = u32::try_from(self.fields.len()).expect("fewer than 2^32 tagged fields");
        w.uvarint(count);
        for (tag, data) in &self.fields {
            w.uvarint(*tag);
            // The size is a plain unsigned varint, not a compact (length + 1) one.
            w.uvarint(u32::try_from(data.len()).expect("a tagged field under 4 GiB"));
            w.buf.extend_from_slice(data);
        }
    }
}
