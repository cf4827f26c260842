//! Record batches as the CLI reads them, from a fetch response or a segment file: the
//! storage crate's bounded batch and record views, with decompression capped so that a
//! hostile or corrupt batch cannot make the CLI allocate without limit.

use samsa_storage::batch::{Compression, RecordBatch};
use samsa_storage::{compression, records};

/// Largest decompressed payload of one batch the CLI accepts.
pub const DECOMPRESSED_BYTES_MAX: usize = 256 * 1024 * 1024;

/// A record's headers: name and value (null allowed), in order.
pub type Headers = Vec<(String, Option<Vec<u8>>)>;

/// One record with its absolute offset and timestamp.
#[derive(Debug, Clone)]
pub struct Record {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Headers,
}

/// The records of one batch (decompressed as needed). Control batches (transaction markers)
/// hold no user records; callers skip them by `header().is_control()`.
pub fn decode(batch: &RecordBatch<'_>) -> Result<Vec<Record>, String> {
    let h = batch.header();
    let codec = h
        .compression()
        .ok_or_else(|| format!("unknown compression in attributes {:#06x}", h.attributes))?;
    let owned;
    let payload: &[u8] = if codec == Compression::None {
        batch.records_bytes()
    } else {
        owned = compression::decompress(codec, batch.records_bytes(), DECOMPRESSED_BYTES_MAX)
            .map_err(|e| format!("cannot decompress {codec:?} records: {e}"))?;
        &owned
    };
    // At most one record per RECORD_BYTES_MIN bytes, whatever recordCount claims.
    let mut out = Vec::with_capacity(
        (h.record_count.max(0) as usize)
            .min(payload.len() / samsa_storage::batch::RECORD_BYTES_MIN + 1),
    );
    for r in records::records(payload, h.record_count) {
        let r = r.map_err(|e| format!("malformed record: {e}"))?;
        let timestamp = if h.is_log_append_time() {
            h.max_timestamp
        } else {
            h.base_timestamp.saturating_add(r.timestamp_delta)
        };
        out.push(Record {
            offset: h.base_offset.saturating_add(r.offset_delta as i64),
            timestamp,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            headers: headers(r.headers)?,
        });
    }
    Ok(out)
}

/// Decodes a record's header block: count varint, then key and value per header.
fn headers(buf: &[u8]) -> Result<Headers, String> {
    let mut pos = 0;
    let count = records::read_varint(buf, &mut pos).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for _ in 0..count.max(0) {
        let key = field(buf, &mut pos)?.ok_or("record header key is null")?;
        let value = field(buf, &mut pos)?;
        out.push((
            String::from_utf8_lossy(key).into_owned(),
            value.map(<[u8]>::to_vec),
        ));
    }
    Ok(out)
}

fn field<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, String> {
    let len = records::read_varint(buf, pos).map_err(|e| e.to_string())?;
    if len < 0 {
        return Ok(None);
    }
    let end = pos
        .checked_add(len as usize)
        .filter(|&e| e <= buf.len())
        .ok_or("record header runs past the end of the record")?;
    let bytes = &buf[*pos..end];
    *pos = end;
    Ok(Some(bytes))
}

/// Bytes as text for people: UTF-8 when it is, hex-escaped otherwise.
pub fn show(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes
            .iter()
            .map(|b| {
                if b.is_ascii_graphic() || *b == b' ' {
                    (*b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect(),
    }
}

/// A record's fields as JSON (text when UTF-8, else escaped as [`show`] does).
pub fn to_json(topic: Option<&str>, partition: Option<i32>, r: &Record) -> serde_json::Value {
    let mut v = serde_json::json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": r.key.as_deref().map(show),
        "value": r.value.as_deref().map(show),
        "headers": r.headers.iter().map(|(k, v)| (k.clone(), serde_json::json!(v.as_deref().map(show)))).collect::<serde_json::Map<_, _>>(),
    });
    if let Some(t) = topic {
        v["topic"] = t.into();
    }
    if let Some(p) = partition {
        v["partition"] = p.into();
    }
    v
}
