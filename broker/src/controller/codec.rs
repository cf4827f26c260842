//! The metadata log's [`Batch`] as bytes: one Kafka record batch v2 per `Batch`
//! (`partition_leader_epoch` = the batch's epoch, the control attribute for control batches,
//! producer id -1, every record stamped with the batch's append time, no compression), and back.
//!
//! Invariants: decoding checks each batch's CRC and that its records are dense (offset delta
//! `i` for record `i`, as the metadata log is never compacted), so a decoded `Batch` covers
//! exactly `base_offset..=last_offset()`; decoded keys and values are slices of the input
//! `Bytes` (no copy) unless the batch was compressed (Kafka may write compressed batches).

use bytes::Bytes;
use samsa_cluster::quorum::{Batch, Record};
use samsa_storage::batch::{self, BatchFields, Compression};
use samsa_storage::{compression, records};

/// Kafka's control-batch attribute bit.
const CONTROL_ATTRIBUTE: i16 = 0x20;
/// Decompressed bytes one batch may expand to (Kafka's largest KRaft batch is 8 MiB).
const DECOMPRESSED_BATCH_BYTES_MAX: usize = 64 << 20;

/// Encodes `b` at its own base offset and epoch.
pub fn encode(b: &Batch) -> Bytes {
    assert!(!b.records.is_empty(), "a metadata batch holds records");
    let mut payload = Vec::with_capacity(b.size_bytes());
    for (i, r) in b.records.iter().enumerate() {
        records::encode_record(
            &mut payload,
            0,
            0,
            i as i32,
            r.key.as_deref(),
            r.value.as_deref(),
            &[],
        );
    }
    let n = b.records.len() as i32;
    batch::encode_batch(
        &BatchFields {
            base_offset: b.base_offset,
            leader_epoch: b.epoch,
            attributes: if b.control { CONTROL_ATTRIBUTE } else { 0 },
            last_offset_delta: n - 1,
            base_timestamp: b.append_time_ms,
            max_timestamp: b.append_time_ms,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            record_count: n,
        },
        &payload,
    )
}

/// Decodes every batch in `bytes` (whole batches back to back); the error says which batch is
/// wrong and why.
pub fn decode_all(bytes: &Bytes) -> Result<Vec<Batch>, String> {
    let mut out = Vec::new();
    let mut it = batch::batches(bytes);
    loop {
        let position = it.position();
        let Some(item) = it.next() else { break };
        let b = item.map_err(|e| format!("at position {position}: {e}"))?;
        out.push(decode_one(bytes, &b).map_err(|e| {
            format!(
                "batch at offset {} (position {position}): {e}",
                b.header().base_offset
            )
        })?);
    }
    Ok(out)
}

/// Decodes one batch of `whole` (its bytes are a slice of `whole`).
fn decode_one(whole: &Bytes, b: &batch::RecordBatch<'_>) -> Result<Batch, String> {
    b.validate_integrity().map_err(|e| e.to_string())?;
    let h = *b.header();
    if h.record_count < 1 || h.last_offset_delta != h.record_count - 1 {
        return Err(format!(
            "{} records over {} offsets: metadata batches are dense and not empty",
            h.record_count,
            h.last_offset_delta as i64 + 1
        ));
    }
    let payload = match h.compression() {
        Some(Compression::None) => whole.slice_ref(b.records_bytes()),
        Some(codec) => Bytes::from(
            compression::decompress(codec, b.records_bytes(), DECOMPRESSED_BATCH_BYTES_MAX)
                .map_err(|e| format!("cannot decompress: {e}"))?,
        ),
        None => return Err("unknown compression codec".into()),
    };
    let mut recs = Vec::with_capacity(h.record_count as usize);
    let mut it = records::records(&payload, h.record_count);
    for (i, r) in it.by_ref().enumerate() {
        let r = r.map_err(|e| e.to_string())?;
        if r.offset_delta != i as i32 {
            return Err(format!("record {i} has offset delta {}", r.offset_delta));
        }
        recs.push(Record {
            key: r.key.map(|k| payload.slice_ref(k)),
            value: r.value.map(|v| payload.slice_ref(v)),
        });
    }
    if recs.len() != h.record_count as usize || !it.is_exhausted() {
        return Err(format!(
            "holds {} readable records, its header says {}",
            recs.len(),
            h.record_count
        ));
    }
    Ok(Batch {
        base_offset: h.base_offset,
        epoch: h.partition_leader_epoch,
        control: h.is_control(),
        append_time_ms: h.max_timestamp,
        records: recs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use samsa_cluster::quorum::ControlType;

    #[test]
    fn batches_round_trip_and_a_flipped_byte_is_caught() {
        let data = Batch {
            base_offset: 7,
            epoch: 3,
            control: false,
            append_time_ms: 1_700_000_000_123,
            records: vec![
                Record::value(Bytes::from_static(b"one")),
                Record {
                    key: None,
                    value: None,
                },
            ],
        };
        let control = Batch {
            base_offset: 9,
            epoch: 3,
            control: true,
            append_time_ms: 1_700_000_000_124,
            records: vec![Record {
                key: Some(ControlType::LeaderChange.key()),
                value: Some(Bytes::from_static(b"\x00\x00")),
            }],
        };
        let mut bytes = encode(&data).to_vec();
        bytes.extend_from_slice(&encode(&control));
        let bytes = Bytes::from(bytes);
        assert_eq!(decode_all(&bytes).unwrap(), vec![data, control]);
        let mut bad = bytes.to_vec();
        bad[70] ^= 1;
        let err = decode_all(&Bytes::from(bad)).unwrap_err();
        assert!(err.contains("batch at offset 7"), "{err}");
    }
}
