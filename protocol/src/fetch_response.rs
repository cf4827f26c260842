//! Fetch responses encoded as chunks, so record bytes go from the log to the socket without
//! being copied into a response buffer: the small fields are written into head buffers and
//! each partition's records are passed through as the `Bytes` the log returned; the
//! connection writes the chunks with one vectored write.
//!
//! The layout is Kafka's FetchResponse v4-18. Fields this encoder does not write itself
//! (tagged fields other than empty ones) make it fall back to `kafka-protocol`'s encoder, so
//! the output is always what that encoder would produce; a test checks the two byte for byte.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseKind};

use crate::response::{encode_response, EncodeError};

/// Records shorter than this are copied into the head buffer: a separate iovec costs more
/// than copying a few kilobytes.
const INLINE_RECORDS_BYTES: usize = 16 * 1024;

/// Encodes a whole Fetch response frame (size prefix, header, body) as chunks.
pub fn encode_fetch_response(
    resp: FetchResponse,
    version: i16,
    correlation_id: i32,
) -> Result<Vec<Bytes>, EncodeError> {
    if !(4..=18).contains(&version) || needs_full_encoder(&resp, version) {
        let mut out = BytesMut::new();
        encode_response(
            &mut out,
            ApiKey::Fetch,
            version,
            correlation_id,
            &ResponseKind::Fetch(resp),
        )?;
        return Ok(vec![out.freeze()]);
    }
    let flexible = version >= 12;
    let mut w = Chunks::default();
    w.head.put_i32(0); // size, patched below
    w.head.put_i32(correlation_id);
    if flexible {
        w.head.put_u8(0); // response header v1: no tagged fields
    }
    w.head.put_i32(resp.throttle_time_ms);
    if version >= 7 {
        w.head.put_i16(resp.error_code);
        w.head.put_i32(resp.session_id);
    }
    put_array_len(&mut w.head, flexible, Some(resp.responses.len()));
    for topic in resp.responses {
        if version < 13 {
            put_string(&mut w.head, flexible, topic.topic.as_str());
        } else {
            w.head.put_slice(topic.topic_id.as_bytes());
        }
        put_array_len(&mut w.head, flexible, Some(topic.partitions.len()));
        for p in topic.partitions {
            put_partition(&mut w, p, version);
        }
        if flexible {
            w.head.put_u8(0);
        }
    }
    if flexible {
        w.head.put_u8(0);
    }
    let mut chunks = w.finish();
    let total: usize = chunks.iter().map(Bytes::len).sum();
    let size = i32::try_from(total - 4)
        .map_err(|_| EncodeError(format!("Fetch response of {total} bytes is too large")))?;
    let mut first = BytesMut::from(&chunks[0][..]);
    first[..4].copy_from_slice(&size.to_be_bytes());
    chunks[0] = first.freeze();
    Ok(chunks)
}

/// True when the response carries something only the full encoder writes.
fn needs_full_encoder(resp: &FetchResponse, version: i16) -> bool {
    if !resp.unknown_tagged_fields.is_empty() || (version >= 16 && !resp.node_endpoints.is_empty())
    {
        return true;
    }
    if version < 7 && resp.session_id != 0 {
        return true; // let the full encoder refuse it
    }
    resp.responses.iter().any(|t| {
        !t.unknown_tagged_fields.is_empty()
            || t.partitions.iter().any(|p| {
                !p.unknown_tagged_fields.is_empty()
                    || p.diverging_epoch != Default::default()
                    || p.current_leader != Default::default()
                    || p.snapshot_id != Default::default()
                    || (version < 11 && p.preferred_read_replica.0 != -1)
                    || (version < 5 && p.log_start_offset != -1)
                    || p.aborted_transactions
                        .as_ref()
                        .is_some_and(|a| a.iter().any(|t| !t.unknown_tagged_fields.is_empty()))
            })
    })
}

fn put_partition(w: &mut Chunks, p: PartitionData, version: i16) {
    let flexible = version >= 12;
    let h = &mut w.head;
    h.put_i32(p.partition_index);
    h.put_i16(p.error_code);
    h.put_i64(p.high_watermark);
    h.put_i64(p.last_stable_offset);
    if version >= 5 {
        h.put_i64(p.log_start_offset);
    }
    put_array_len(h, flexible, p.aborted_transactions.as_ref().map(Vec::len));
    for t in p.aborted_transactions.iter().flatten() {
        h.put_i64(t.producer_id.0);
        h.put_i64(t.first_offset);
        if flexible {
            h.put_u8(0);
        }
    }
    if version >= 11 {
        h.put_i32(p.preferred_read_replica.0);
    }
    match p.records {
        None if flexible => put_uvarint(h, 0),
        None => h.put_i32(-1),
        Some(records) => {
            if flexible {
                put_uvarint(h, records.len() as u32 + 1);
            } else {
                h.put_i32(records.len() as i32);
            }
            w.records(records);
        }
    }
    if flexible {
        w.head.put_u8(0);
    }
}

#[derive(Default)]
struct Chunks {
    done: Vec<Bytes>,
    head: BytesMut,
}

impl Chunks {
    fn records(&mut self, records: Bytes) {
        if records.len() < INLINE_RECORDS_BYTES {
            self.head.put_slice(&records);
        } else {
            self.done.push(self.head.split().freeze());
            self.done.push(records);
        }
    }

    fn finish(mut self) -> Vec<Bytes> {
        if !self.head.is_empty() || self.done.is_empty() {
            self.done.push(self.head.split().freeze());
        }
        self.done
    }
}

fn put_uvarint(b: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

fn put_array_len(b: &mut BytesMut, flexible: bool, len: Option<usize>) {
    match (flexible, len) {
        (true, None) => put_uvarint(b, 0),
        (true, Some(n)) => put_uvarint(b, n as u32 + 1),
        (false, None) => b.put_i32(-1),
        (false, Some(n)) => b.put_i32(n as i32),
    }
}

fn put_string(b: &mut BytesMut, flexible: bool, s: &str) {
    if flexible {
        put_uvarint(b, s.len() as u32 + 1);
    } else {
        b.put_i16(s.len() as i16);
    }
    b.put_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchableTopicResponse};
    use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
    use kafka_protocol::protocol::StrBytes;

    fn sample(version: i16, record_sizes: &[Option<usize>]) -> FetchResponse {
        let mut r = FetchResponse::default();
        r.throttle_time_ms = 3;
        if version >= 7 {
            r.error_code = 0;
            r.session_id = 0;
        }
        for t in 0..2 {
            let mut topic = FetchableTopicResponse::default();
            if version >= 13 {
                topic.topic_id = uuid::Uuid::from_u128(0x1234_5678_9abc_def0 + t);
            } else {
                topic.topic = TopicName(StrBytes::from_string(format!("topic-{t}")));
            }
            for (i, size) in record_sizes.iter().enumerate() {
                let mut p = PartitionData::default();
                p.partition_index = i as i32;
                p.error_code = if i == 1 { 1 } else { 0 };
                p.high_watermark = 1000 + i as i64;
                p.last_stable_offset = 990;
                if version >= 5 {
                    p.log_start_offset = 7;
                }
                if version >= 11 {
                    p.preferred_read_replica = BrokerId(-1);
                }
                p.aborted_transactions = match i % 3 {
                    0 => None,
                    1 => Some(vec![]),
                    _ => {
                        let mut a = AbortedTransaction::default();
                        a.producer_id = ProducerId(42);
                        a.first_offset = 17;
                        Some(vec![a.clone(), a])
                    }
                };
                p.records = size.map(|n| Bytes::from((0..n).map(|b| b as u8).collect::<Vec<u8>>()));
                topic.partitions.push(p);
            }
            r.responses.push(topic);
        }
        r
    }

    #[test]
    fn chunked_encoding_is_byte_identical_to_kafka_protocol_for_every_version() {
        let sizes = [
            None,
            Some(0),
            Some(100),
            Some(INLINE_RECORDS_BYTES + 5),
            Some(200_000),
        ];
        for version in 4..=18 {
            let resp = sample(version, &sizes);
            let mut expected = BytesMut::new();
            encode_response(
                &mut expected,
                ApiKey::Fetch,
                version,
                99,
                &ResponseKind::Fetch(resp.clone()),
            )
            .unwrap();
            let chunks = encode_fetch_response(resp, version, 99).unwrap();
            assert!(
                chunks.len() > 1,
                "v{version}: large records travel as their own chunks"
            );
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            assert_eq!(joined, &expected[..], "v{version}");
        }
    }

    #[test]
    fn tagged_fields_fall_back_to_the_full_encoder() {
        let mut resp = sample(12, &[Some(10)]);
        resp.responses[0].partitions[0].current_leader.leader_id = BrokerId(1);
        let mut expected = BytesMut::new();
        encode_response(
            &mut expected,
            ApiKey::Fetch,
            12,
            5,
            &ResponseKind::Fetch(resp.clone()),
        )
        .unwrap();
        let chunks = encode_fetch_response(resp, 12, 5).unwrap();
        assert_eq!(chunks.len(), 1);
        assert_eq!(&chunks[0][..], &expected[..]);
    }
}
