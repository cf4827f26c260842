//! Records inside a v2 batch: varint decoding and encoding, and a bounded iterator over the
//! records of an uncompressed payload. Compaction and the compacted-topic key check use it;
//! the ordinary append path never looks inside a batch.
//!
//! Record layout (Kafka's `DefaultRecord`): length varint, attributes int8, timestampDelta
//! varlong, offsetDelta varint, keyLength varint (-1 = null), key, valueLength varint
//! (-1 = null), value, headerCount varint, then per header: keyLength varint, key,
//! valueLength varint, value.
//!
//! Invariant: every length is checked against the bytes that remain before it is used, and
//! the iterator never yields more than the batch's `recordCount`.

use std::fmt;

use crate::batch::{Compression, RecordBatch};
use crate::compression;
use crate::log::DECOMPRESSED_BYTES_MAX;

/// A malformed record payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError(pub String);

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RecordError {}

fn err<T>(what: &str) -> Result<T, RecordError> {
    Err(RecordError(what.to_string()))
}

/// Reads a zig-zag varint (at most 5 bytes) from `buf[*pos..]`.
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, RecordError> {
    let raw = read_unsigned(buf, pos, 5)?;
    if raw > u32::MAX as u64 {
        return err("varint overflows 32 bits");
    }
    let raw = raw as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zig-zag varlong (at most 10 bytes) from `buf[*pos..]`.
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, RecordError> {
    let raw = read_unsigned(buf, pos, 10)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

fn read_unsigned(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Result<u64, RecordError> {
    let mut value: u64 = 0;
    for i in 0..max_bytes {
        let Some(&b) = buf.get(*pos) else {
            return err("varint runs past the end of the record");
        };
        *pos += 1;
        value |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    err("varint is too long")
}

/// Appends a zig-zag varint.
pub fn write_varint(out: &mut Vec<u8>, v: i32) {
    write_unsigned(out, ((v << 1) ^ (v >> 31)) as u32 as u64);
}

/// Appends a zig-zag varlong.
pub fn write_varlong(out: &mut Vec<u8>, v: i64) {
    write_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One record, borrowed from its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// The encoded headers (count varint and entries), kept as bytes.
    pub headers: &'a [u8],
    /// The whole encoding of this record, length prefix included.
    pub encoded: &'a [u8],
}

/// Iterates over at most `record_count` records in an uncompressed payload.
pub fn records(payload: &[u8], record_count: i32) -> Records<'_> {
    Records {
        buf: payload,
        pos: 0,
        left: record_count.max(0) as u32,
    }
}

pub struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
    left: u32,
}

impl<'a> Records<'a> {
    /// True when every record promised was read and no bytes are left over.
    pub fn is_exhausted(&self) -> bool {
        self.left == 0 && self.pos == self.buf.len()
    }

    fn next_record(&mut self) -> Result<Record<'a>, RecordError> {
        let start = self.pos;
        let length = read_varint(self.buf, &mut self.pos)?;
        if length < 0 || length as usize > self.buf.len() - self.pos {
            return err("record length runs past the end of the batch");
        }
        let end = self.pos + length as usize;
        let body = &self.buf[..end];
        let mut p = self.pos;
        let attributes = *body.get(p).ok_or(RecordError("empty record".into()))? as i8;
        p += 1;
        let timestamp_delta = read_varlong(body, &mut p)?;
        let offset_delta = read_varint(body, &mut p)?;
        let key = read_bytes(body, &mut p)?;
        let value = read_bytes(body, &mut p)?;
        let headers_start = p;
        let header_count = read_varint(body, &mut p)?;
        if header_count < 0 || header_count as usize > (end - p) / 2 + 1 {
            return err("record header count is inconsistent with the record length");
        }
        for _ in 0..header_count {
            if read_bytes(body, &mut p)?.is_none() {
                return err("record header key is null");
            }
            read_bytes(body, &mut p)?;
        }
        if p != end {
            return err("record length disagrees with its fields");
        }
        self.pos = end;
        Ok(Record {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers: &body[headers_start..end],
            encoded: &self.buf[start..end],
        })
    }
}

fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, RecordError> {
    let len = read_varint(buf, pos)?;
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    if len > buf.len() - *pos {
        return err("record field length runs past the end of the record");
    }
    let bytes = &buf[*pos..*pos + len];
    *pos += len;
    Ok(Some(bytes))
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, RecordError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = self.next_record();
        if r.is_err() {
            self.left = 0;
        }
        Some(r)
    }
}

/// Encodes one record (with its length prefix) onto `out`.
pub fn encode_record(
    out: &mut Vec<u8>,
    attributes: i8,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[u8],
) {
    let mut body =
        Vec::with_capacity(16 + key.map_or(0, |k| k.len()) + value.map_or(0, |v| v.len()));
    body.push(attributes as u8);
    write_varlong(&mut body, timestamp_delta);
    write_varint(&mut body, offset_delta);
    for field in [key, value] {
        match field {
            Some(b) => {
                write_varint(&mut body, b.len() as i32);
                body.extend_from_slice(b);
            }
            None => write_varint(&mut body, -1),
        }
    }
    if headers.is_empty() {
        write_varint(&mut body, 0);
    } else {
        body.extend_from_slice(headers);
    }
    write_varint(out, body.len() as i32);
    out.extend_from_slice(&body);
}

/// Calls `f(offset, timestamp, record)` for each record of a batch (decompressing if needed)
/// until it returns `Some`.
pub(crate) fn for_each_record<T>(
    b: &RecordBatch<'_>,
    mut f: impl FnMut(i64, i64, &Record<'_>) -> Option<T>,
) -> Result<Option<T>, String> {
    let h = b.header();
    let codec = h.compression().ok_or("unknown compression codec")?;
    let decompressed;
    let payload = if codec == Compression::None {
        b.records_bytes()
    } else {
        decompressed = compression::decompress(codec, b.records_bytes(), DECOMPRESSED_BYTES_MAX)
            .map_err(|e| e.to_string())?;
        &decompressed[..]
    };
    for r in records(payload, h.record_count) {
        let r = r.map_err(|e| e.to_string())?;
        let timestamp = if h.is_log_append_time() {
            h.max_timestamp
        } else {
            h.base_timestamp.saturating_add(r.timestamp_delta)
        };
        if let Some(t) = f(h.base_offset + r.offset_delta as i64, timestamp, &r) {
            return Ok(Some(t));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [0, 1, -1, 63, -64, 64, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            let mut p = 0;
            assert_eq!(read_varint(&out, &mut p).unwrap(), v);
            assert_eq!(p, out.len());
        }
        for v in [0i64, -1, i64::MAX, i64::MIN, 1 << 40] {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            let mut p = 0;
            assert_eq!(read_varlong(&out, &mut p).unwrap(), v);
        }
    }

    #[test]
    fn records_round_trip_and_bad_lengths_are_refused() {
        let mut payload = Vec::new();
        encode_record(&mut payload, 0, 5, 0, Some(b"key"), None, &[]);
        encode_record(&mut payload, 0, 6, 1, None, Some(b"value"), &[]);
        let rs: Vec<_> = records(&payload, 2).map(Result::unwrap).collect();
        assert_eq!(rs[0].key, Some(&b"key"[..]));
        assert_eq!(rs[0].value, None);
        assert_eq!(rs[1].offset_delta, 1);
        assert_eq!(rs[1].value, Some(&b"value"[..]));
        // A count larger than the payload ends in an error, not a huge loop or allocation.
        let all: Vec<_> = records(&payload, i32::MAX).collect();
        assert_eq!(all.len(), 3);
        assert!(all[2].is_err());
        payload[0] = 0x7e; // a record length far past the end
        assert!(records(&payload, 1).next().unwrap().is_err());
    }
}
