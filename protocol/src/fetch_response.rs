//! Fetch responses encoded as chunks, so record bytes go from the log to the socket without
//! being copied into a response buffer: the small fields are written into head buffers and
//! each partition's records are passed through as the `Bytes` the log returned, or as the
//! range of a segment file the log found them in (`Chunk::File`, sent with sendfile); the
//! connection writes the chunks in order.
//!
//! The layout is Kafka's FetchResponse v4-18. Fields this encoder does not write itself
//! (tagged fields other than empty ones) make it fall back to `kafka-protocol`'s encoder, so
//! the output is always what that encoder would produce; a test checks the two byte for byte.

use std::io;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseKind};

use crate::chunk::{Chunk, FileRange};
use crate::response::{encode_response, EncodeError};

/// Records shorter than this are copied into the head buffer: a separate iovec (or sendfile
/// call) costs more than copying a few kilobytes.
const INLINE_RECORDS_BYTES: usize = 16 * 1024;

/// Encodes a whole Fetch response frame (size prefix, header, body) as chunks appended to
/// `out`. `files` holds, for each partition in the response's order (topics, then their
/// partitions), the file range of its records where they were not loaded; such a partition's
/// `records` must be `None`. Partitions past the end of `files` have none. The head bytes are
/// written into `buf` (empty on entry, and again on return) and split off it: a connection that
/// keeps one `buf` for its responses reuses that memory once the chunks are written, so a fetch
/// answered from one file range allocates nothing here. Returns how many bytes of `buf` the
/// response took, so that the caller can let go of a buffer one large response made large.
pub fn encode_fetch_response(
    resp: FetchResponse,
    files: Vec<Option<FileRange>>,
    version: i16,
    correlation_id: i32,
    buf: &mut BytesMut,
    out: &mut Vec<Chunk>,
) -> Result<usize, EncodeError> {
    debug_assert!(buf.is_empty(), "a response starts in an empty buffer");
    let start = out.len();
    let result = encode_chunks(resp, files, version, correlation_id, Chunks::new(buf, out));
    if result.is_err() {
        // Nothing of a response that failed halfway stays behind for the next one.
        out.truncate(start);
        buf.clear();
    }
    result
}

fn encode_chunks(
    mut resp: FetchResponse,
    files: Vec<Option<FileRange>>,
    version: i16,
    correlation_id: i32,
    mut w: Chunks<'_>,
) -> Result<usize, EncodeError> {
    if !(4..=18).contains(&version) || needs_full_encoder(&resp, version) {
        load_files(&mut resp, files)
            .map_err(|e| EncodeError(format!("Fetch v{version} records: {e}")))?;
        encode_response(
            w.head,
            ApiKey::Fetch,
            version,
            correlation_id,
            &ResponseKind::Fetch(resp),
        )?;
        let frame = w.head.split().freeze();
        let taken = frame.len();
        w.out.push(Chunk::Bytes(frame));
        return Ok(taken);
    }
    let flexible = version >= 12;
    let mut files = files.into_iter();
    w.head.reserve(HEAD_CAPACITY_GUESS);
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
    put_array_len(w.head, flexible, Some(resp.responses.len()));
    for topic in resp.responses {
        if version < 13 {
            put_string(w.head, flexible, topic.topic.as_str());
        } else {
            w.head.put_slice(topic.topic_id.as_bytes());
        }
        put_array_len(w.head, flexible, Some(topic.partitions.len()));
        for p in topic.partitions {
            let file = files.next().flatten();
            put_partition(&mut w, p, file, version)
                .map_err(|e| EncodeError(format!("Fetch v{version} records: {e}")))?;
        }
        if flexible {
            w.head.put_u8(0);
        }
    }
    if flexible {
        w.head.put_u8(0);
    }
    w.finish()
}

/// Room reserved for a response's head bytes up front: one allocation (or none, in a reused
/// buffer) instead of a doubling from a few bytes upwards.
const HEAD_CAPACITY_GUESS: usize = 512;

/// Reads the file ranges into the partitions' `records` (for the full encoder).
fn load_files(resp: &mut FetchResponse, files: Vec<Option<FileRange>>) -> io::Result<()> {
    let mut files = files.into_iter();
    for t in &mut resp.responses {
        for p in &mut t.partitions {
            if let Some(r) = files.next().flatten() {
                p.records = Some(r.read()?);
            }
        }
    }
    Ok(())
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

fn put_partition(
    w: &mut Chunks,
    p: PartitionData,
    file: Option<FileRange>,
    version: i16,
) -> io::Result<()> {
    let flexible = version >= 12;
    let h = &mut *w.head;
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
    let len = match (&file, &p.records) {
        (Some(r), _) => Some(r.len),
        (None, records) => records.as_ref().map(Bytes::len),
    };
    match len {
        None if flexible => put_uvarint(h, 0),
        None => h.put_i32(-1),
        Some(len) => {
            if flexible {
                put_uvarint(h, len as u32 + 1);
            } else {
                h.put_i32(len as i32);
            }
        }
    }
    match (file, p.records) {
        (Some(r), _) => w.file(r)?,
        (None, Some(records)) => w.records(records),
        (None, None) => {}
    }
    if flexible {
        w.head.put_u8(0);
    }
    Ok(())
}

/// A response being cut into chunks: head bytes accumulate in `head` and are split off before
/// each large piece of records. The first piece stays mutable until the end, when the frame's
/// size is known and written into its first four bytes.
struct Chunks<'a> {
    head: &'a mut BytesMut,
    out: &'a mut Vec<Chunk>,
    first: Option<BytesMut>,
    /// Where this response's chunks start in `out`.
    start: usize,
    /// Bytes split off `head` so far.
    taken: usize,
}

impl<'a> Chunks<'a> {
    fn new(head: &'a mut BytesMut, out: &'a mut Vec<Chunk>) -> Chunks<'a> {
        let start = out.len();
        Chunks {
            head,
            out,
            first: None,
            start,
            taken: 0,
        }
    }

    fn records(&mut self, records: Bytes) {
        if records.len() < INLINE_RECORDS_BYTES {
            self.head.put_slice(&records);
        } else {
            self.cut();
            self.out.push(Chunk::Bytes(records));
        }
    }

    fn file(&mut self, r: FileRange) -> io::Result<()> {
        if r.len < INLINE_RECORDS_BYTES {
            r.read_into(self.head)?;
        } else {
            self.cut();
            self.out.push(Chunk::File(r));
        }
        Ok(())
    }

    /// Ends the current run of head bytes (the first run is held back, a placeholder in its
    /// place, until the size is known).
    fn cut(&mut self) {
        let run = self.head.split();
        self.taken += run.len();
        if self.first.is_none() {
            self.first = Some(run);
            self.out.push(Chunk::Bytes(Bytes::new()));
        } else {
            self.out.push(Chunk::Bytes(run.freeze()));
        }
    }

    fn finish(mut self) -> Result<usize, EncodeError> {
        if !self.head.is_empty() || self.first.is_none() {
            self.cut();
        }
        let mut first = self.first.take().expect("cut() set the first run");
        let total: usize = first.len()
            + self.out[self.start + 1..]
                .iter()
                .map(Chunk::len)
                .sum::<usize>();
        let size = i32::try_from(total - 4)
            .map_err(|_| EncodeError(format!("Fetch response of {total} bytes is too large")))?;
        first[..4].copy_from_slice(&size.to_be_bytes());
        self.out[self.start] = Chunk::Bytes(first.freeze());
        Ok(self.taken)
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
    use crate::chunk::concat;
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

    /// The response's chunks, through a buffer of its own.
    fn chunks_of(
        resp: FetchResponse,
        files: Vec<Option<FileRange>>,
        version: i16,
        correlation_id: i32,
    ) -> Result<Vec<Chunk>, EncodeError> {
        let mut out = Vec::new();
        encode_fetch_response(
            resp,
            files,
            version,
            correlation_id,
            &mut BytesMut::new(),
            &mut out,
        )?;
        Ok(out)
    }

    /// The frame kafka-protocol's own encoder writes for `resp`.
    fn full_encoding(resp: &FetchResponse, version: i16, correlation_id: i32) -> BytesMut {
        let mut out = BytesMut::new();
        let body = ResponseKind::Fetch(resp.clone());
        encode_response(&mut out, ApiKey::Fetch, version, correlation_id, &body).unwrap();
        out
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
            let expected = full_encoding(&resp, version, 99);
            let chunks = chunks_of(resp.clone(), Vec::new(), version, 99).unwrap();
            assert!(
                chunks.len() > 1,
                "v{version}: large records travel as their own chunks"
            );
            assert_eq!(concat(&chunks).unwrap(), &expected[..], "v{version}");
            // The same records given as ranges of a file instead: the same bytes, the large
            // ranges as file chunks.
            let (without, files, _dir) = as_file_ranges(resp);
            let chunks = chunks_of(without, files, version, 99).unwrap();
            assert!(
                chunks.iter().any(|c| matches!(c, Chunk::File(_))),
                "v{version}"
            );
            assert_eq!(concat(&chunks).unwrap(), &expected[..], "v{version}, files");
        }
    }

    #[test]
    fn tagged_fields_fall_back_to_the_full_encoder() {
        let mut resp = sample(12, &[Some(10)]);
        resp.responses[0].partitions[0].current_leader.leader_id = BrokerId(1);
        let expected = full_encoding(&resp, 12, 5);
        let chunks = chunks_of(resp.clone(), Vec::new(), 12, 5).unwrap();
        assert_eq!(chunks.len(), 1);
        assert_eq!(concat(&chunks).unwrap(), &expected[..]);
        // File ranges are read in for the full encoder.
        let (without, files, _dir) = as_file_ranges(resp);
        let chunks = chunks_of(without, files, 12, 5).unwrap();
        assert_eq!(chunks.len(), 1);
        assert_eq!(concat(&chunks).unwrap(), &expected[..]);
    }

    #[test]
    fn a_range_the_file_no_longer_holds_is_an_error_not_a_short_frame() {
        let resp = sample(12, &[Some(100)]);
        let (without, files, _dir) = as_file_ranges(resp);
        files[0].as_ref().unwrap().file.set_len(50).unwrap();
        let err = chunks_of(without, files, 12, 5).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
    }

    #[test]
    fn one_buffer_serves_response_after_response_and_a_failed_one_leaves_nothing() {
        let sizes = [Some(100), Some(INLINE_RECORDS_BYTES + 5)];
        let resp = sample(12, &sizes);
        let expected = full_encoding(&resp, 12, 5);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let (without, files, _dir) = as_file_ranges(resp.clone());
        let taken = encode_fetch_response(without, files, 12, 5, &mut buf, &mut out).unwrap();
        assert!(buf.is_empty());
        let head_bytes: usize = out
            .iter()
            .filter(|c| matches!(c, Chunk::Bytes(_)))
            .map(Chunk::len)
            .sum();
        assert_eq!(taken, head_bytes, "what the response took from the buffer");
        let first = out.len();
        assert_eq!(concat(&out).unwrap(), &expected[..]);

        // A range cut short under the second response: an error, and neither `out` nor the
        // buffer keeps any of it.
        let (without, files, _dir2) = as_file_ranges(resp.clone());
        files[0].as_ref().unwrap().file.set_len(50).unwrap();
        assert!(encode_fetch_response(without, files, 12, 5, &mut buf, &mut out).is_err());
        assert_eq!(out.len(), first);
        assert!(buf.is_empty());

        // The third, through the same buffer, is whole and follows the first.
        let (without, files, _dir3) = as_file_ranges(resp);
        encode_fetch_response(without, files, 12, 5, &mut buf, &mut out).unwrap();
        assert!(buf.is_empty());
        assert_eq!(concat(&out[first..]).unwrap(), &expected[..]);
        assert_eq!(concat(&out[..first]).unwrap(), &expected[..]);
    }

    /// Moves every partition's records into one file and gives them back as ranges of it.
    fn as_file_ranges(
        mut resp: FetchResponse,
    ) -> (FetchResponse, Vec<Option<FileRange>>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let file = std::sync::Arc::new(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.path().join("records"))
                .unwrap(),
        );
        let mut files = Vec::new();
        let mut position = 7u64; // not at the start, so positions matter
        for t in &mut resp.responses {
            for p in &mut t.partitions {
                files.push(p.records.take().map(|r| {
                    use std::os::unix::fs::FileExt;
                    file.write_all_at(&r, position).unwrap();
                    let range = FileRange {
                        file: file.clone(),
                        position,
                        len: r.len(),
                    };
                    position += r.len() as u64 + 3;
                    range
                }));
            }
        }
        (resp, files, dir)
    }
}
