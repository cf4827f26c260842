//! Zero-copy views of Kafka RecordBatch v2 (magic 2) headers, their validation, and the two
//! in-place header rewrites the log performs on append.
//!
//! Layout (big-endian), as in Kafka's `DefaultRecordBatch`:
//!
//! ```text
//!  0 baseOffset int64          27 baseTimestamp int64
//!  8 batchLength int32         35 maxTimestamp int64
//! 12 partitionLeaderEpoch int32 43 producerId int64
//! 16 magic int8                51 producerEpoch int16
//! 17 crc uint32 (crc32c)       53 baseSequence int32
//! 21 attributes int16          57 recordCount int32
//! 23 lastOffsetDelta int32     61 records...
//! ```
//!
//! `batchLength` counts the bytes after itself, so a batch occupies `batchLength + 12` bytes.
//! The CRC covers `attributes` to the end of the batch; it does not cover `baseOffset` or
//! `partitionLeaderEpoch`, which is why the broker can assign offsets without re-encoding.
//!
//! Invariant: every accessor reads only inside the 61-byte header, which `BatchHeader::parse`
//! checked is present; nothing here allocates based on a count read from the bytes.

use std::fmt;

/// CRC-32C (Castagnoli), the checksum of v2 batches and of our snapshot files: see
/// `crate::crc32c` for which implementation a machine gets.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crate::crc32c::crc32c(bytes)
}

/// `LOG_OVERHEAD`: baseOffset + batchLength.
pub const LOG_OVERHEAD: usize = 12;
/// Size of the v2 batch header, up to and including `recordCount`.
pub const HEADER_BYTES: usize = 61;
/// Smallest legal `batchLength` (a header with no records).
pub const BATCH_LENGTH_MIN: i32 = (HEADER_BYTES - LOG_OVERHEAD) as i32;
/// Smallest encoding of one record: length, attributes, timestampDelta, offsetDelta, keyLength,
/// valueLength and headerCount, one byte each. Bounds `recordCount` by the bytes present.
pub const RECORD_BYTES_MIN: usize = 7;

pub const MAGIC_V2: i8 = 2;

pub(crate) const BASE_OFFSET_AT: usize = 0;
pub(crate) const BATCH_LENGTH_AT: usize = 8;
pub(crate) const LEADER_EPOCH_AT: usize = 12;
pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17;
pub(crate) const ATTRIBUTES_AT: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_AT: usize = 23;
pub(crate) const BASE_TIMESTAMP_AT: usize = 27;
pub(crate) const MAX_TIMESTAMP_AT: usize = 35;
pub(crate) const PRODUCER_ID_AT: usize = 43;
pub(crate) const PRODUCER_EPOCH_AT: usize = 51;
pub(crate) const BASE_SEQUENCE_AT: usize = 53;
pub(crate) const RECORD_COUNT_AT: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

/// Compression codec, attributes bits 0-2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    pub fn from_attributes(attributes: i16) -> Option<Compression> {
        match attributes & COMPRESSION_MASK {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    pub fn id(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }
}

/// Why a batch was refused. `is_corrupt` separates CORRUPT_MESSAGE from INVALID_RECORD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// Fewer bytes than a header, or than `batchLength` promises.
    Truncated {
        needed: usize,
        available: usize,
    },
    /// `batchLength` below the header size.
    BadLength(i32),
    BadMagic(i8),
    BadCrc {
        stored: u32,
        computed: u32,
    },
    /// Unknown compression codec bits.
    BadCompression(i16),
    /// `recordCount` is not positive, disagrees with `lastOffsetDelta`, or cannot fit in the
    /// bytes present.
    BadRecordCount {
        record_count: i32,
        last_offset_delta: i32,
    },
    TooLarge {
        size_bytes: usize,
        max_bytes: usize,
    },
}

impl BatchError {
    /// CORRUPT_MESSAGE (true) or INVALID_RECORD (false), as Kafka's `LogValidator` decides.
    pub fn is_corrupt(&self) -> bool {
        !matches!(
            self,
            BatchError::BadRecordCount { .. } | BatchError::TooLarge { .. }
        )
    }
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::Truncated { needed, available } => {
                write!(f, "batch needs {needed} bytes but only {available} are present")
            }
            BatchError::BadLength(l) => {
                write!(f, "batchLength {l} is below the minimum {BATCH_LENGTH_MIN}")
            }
            BatchError::BadMagic(m) => write!(f, "magic {m} is not supported (only magic 2)"),
            BatchError::BadCrc { stored, computed } => {
                write!(f, "crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
            BatchError::BadCompression(a) => write!(f, "unknown compression codec in attributes {a:#06x}"),
            BatchError::BadRecordCount { record_count, last_offset_delta } => write!(
                f,
                "recordCount {record_count} is inconsistent with lastOffsetDelta {last_offset_delta} or the batch size"
            ),
            BatchError::TooLarge { size_bytes, max_bytes } => {
                write!(f, "batch of {size_bytes} bytes exceeds the limit of {max_bytes} bytes")
            }
        }
    }
}

impl std::error::Error for BatchError {}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A parsed copy of one batch header. Cheap (`Copy`), so scans over files can keep it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl BatchHeader {
    /// Parses the header at the start of `buf`. Checks only that the header is present and
    /// that `batchLength` is at least a header; `size_bytes()` may exceed `buf.len()`.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, BatchError> {
        if buf.len() < HEADER_BYTES {
            return Err(BatchError::Truncated {
                needed: HEADER_BYTES,
                available: buf.len(),
            });
        }
        let batch_length = be_i32(buf, BATCH_LENGTH_AT);
        if batch_length < BATCH_LENGTH_MIN {
            return Err(BatchError::BadLength(batch_length));
        }
        Ok(BatchHeader {
            base_offset: be_i64(buf, BASE_OFFSET_AT),
            batch_length,
            partition_leader_epoch: be_i32(buf, LEADER_EPOCH_AT),
            magic: buf[MAGIC_AT] as i8,
            crc: be_i32(buf, CRC_AT) as u32,
            attributes: be_i16(buf, ATTRIBUTES_AT),
            last_offset_delta: be_i32(buf, LAST_OFFSET_DELTA_AT),
            base_timestamp: be_i64(buf, BASE_TIMESTAMP_AT),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP_AT),
            producer_id: be_i64(buf, PRODUCER_ID_AT),
            producer_epoch: be_i16(buf, PRODUCER_EPOCH_AT),
            base_sequence: be_i32(buf, BASE_SEQUENCE_AT),
            record_count: be_i32(buf, RECORD_COUNT_AT),
        })
    }

    /// Bytes the whole batch occupies: `batchLength + 12`.
    pub fn size_bytes(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(self.last_offset_delta as i64)
    }
    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_attributes(self.attributes)
    }
    /// Attributes bit 3: the batch's timestamps are LogAppendTime.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_BIT != 0
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }
    /// Attributes bit 6 (KIP-534): `baseTimestamp` holds the compaction delete horizon.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & DELETE_HORIZON_BIT != 0
    }
    /// Last sequence number in the batch, wrapping as Kafka does (`DefaultRecordBatch.lastSequence`).
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        let last = self.base_sequence as i64 + self.last_offset_delta as i64;
        (last % (i32::MAX as i64 + 1)) as i32
    }
}

/// A view of exactly one whole batch.
#[derive(Clone, Copy)]
pub struct RecordBatch<'a> {
    bytes: &'a [u8],
    header: BatchHeader,
}

impl<'a> RecordBatch<'a> {
    /// The batch at the start of `buf`; `buf` must hold all of it (trailing bytes are ignored).
    pub fn parse(buf: &'a [u8]) -> Result<RecordBatch<'a>, BatchError> {
        let header = BatchHeader::parse(buf)?;
        let size = header.size_bytes();
        if buf.len() < size {
            return Err(BatchError::Truncated {
                needed: size,
                available: buf.len(),
            });
        }
        Ok(RecordBatch {
            bytes: &buf[..size],
            header,
        })
    }

    pub fn header(&self) -> &BatchHeader {
        &self.header
    }
    /// All bytes of the batch, header included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The encoded (possibly compressed) records after the header.
    pub fn records_bytes(&self) -> &'a [u8] {
        &self.bytes[HEADER_BYTES..]
    }
    pub fn size_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// CRC-32C over attributes..end, the value the `crc` field must hold.
    pub fn compute_crc(&self) -> u32 {
        crc32c(&self.bytes[ATTRIBUTES_AT..])
    }

    /// Full validation of a batch as a producer sent it: magic 2, a known codec, CRC-32C,
    /// `recordCount` positive and equal to `lastOffsetDelta + 1` (Kafka's `LogValidator`
    /// "inconsistent batch offset range and record count"), at most one record per
    /// `RECORD_BYTES_MIN` bytes when uncompressed, and size within `max_bytes`.
    pub fn validate(&self, max_bytes: usize) -> Result<(), BatchError> {
        self.validate_integrity()?;
        let h = &self.header;
        if self.size_bytes() > max_bytes {
            return Err(BatchError::TooLarge {
                size_bytes: self.size_bytes(),
                max_bytes,
            });
        }
        let count_ok = h.record_count > 0
            && h.last_offset_delta >= 0
            && h.record_count as i64 == h.last_offset_delta as i64 + 1
            && (h.compression() != Some(Compression::None)
                || (h.record_count as usize).saturating_mul(RECORD_BYTES_MIN)
                    <= self.records_bytes().len());
        if !count_ok {
            return Err(BatchError::BadRecordCount {
                record_count: h.record_count,
                last_offset_delta: h.last_offset_delta,
            });
        }
        Ok(())
    }

    /// The checks recovery applies to bytes already in the log: magic, codec and CRC. Batches
    /// written by compaction may legitimately have fewer records than their offset range.
    pub fn validate_integrity(&self) -> Result<(), BatchError> {
        let h = &self.header;
        if h.magic != MAGIC_V2 {
            return Err(BatchError::BadMagic(h.magic));
        }
        if h.compression().is_none() {
            return Err(BatchError::BadCompression(h.attributes));
        }
        if h.last_offset_delta < 0 {
            return Err(BatchError::BadRecordCount {
                record_count: h.record_count,
                last_offset_delta: h.last_offset_delta,
            });
        }
        let computed = self.compute_crc();
        if computed != h.crc {
            return Err(BatchError::BadCrc {
                stored: h.crc,
                computed,
            });
        }
        Ok(())
    }
}

impl fmt::Debug for RecordBatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordBatch")
            .field("header", &self.header)
            .finish()
    }
}

/// Iterates over back-to-back batches in `buf`. Yields an error (once, then stops) at the
/// first batch that is not whole; it does not validate CRCs (call `validate`).
pub fn batches(buf: &[u8]) -> Batches<'_> {
    Batches {
        buf,
        pos: 0,
        failed: false,
    }
}

pub struct Batches<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Batches<'a> {
    /// Byte position of the next batch in the buffer.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Batches<'a> {
    type Item = Result<RecordBatch<'a>, BatchError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        match RecordBatch::parse(&self.buf[self.pos..]) {
            Ok(b) => {
                self.pos += b.size_bytes();
                Some(Ok(b))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Length of the longest prefix of `buf` made of whole batches (headers only are checked).
pub fn whole_batches_len(buf: &[u8]) -> usize {
    let mut it = batches(buf);
    while let Some(Ok(_)) = it.next() {}
    // On failure `pos` still points at the start of the batch that did not fit.
    it.pos
}

/// Rewrites `baseOffset` in place. Not covered by the CRC.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[BASE_OFFSET_AT..BASE_OFFSET_AT + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Rewrites `partitionLeaderEpoch` in place. Not covered by the CRC.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[LEADER_EPOCH_AT..LEADER_EPOCH_AT + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Marks a whole batch as LogAppendTime with `max_timestamp`, and recomputes the CRC, as
/// Kafka's `DefaultRecordBatch.setMaxTimestamp` does. `batch` must be exactly one batch.
pub fn set_log_append_time(batch: &mut [u8], max_timestamp: i64) {
    let attributes = be_i16(batch, ATTRIBUTES_AT) | TIMESTAMP_TYPE_BIT;
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Recomputes and stores the CRC of one whole batch (after any change to attributes..end).
pub fn update_crc(batch: &mut [u8]) {
    let crc = crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Header fields of a batch to encode (the CRC is computed by [`encode_batch`]).
#[derive(Clone, Copy, Debug)]
pub struct BatchFields {
    pub base_offset: i64,
    pub leader_epoch: i32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

/// Encodes a v2 batch from header fields and an already-encoded (maybe compressed) payload
/// (records as [`crate::records::encode_record`] writes them).
pub fn encode_batch(f: &BatchFields, payload: &[u8]) -> bytes::Bytes {
    let mut b = Vec::with_capacity(HEADER_BYTES + payload.len());
    b.extend_from_slice(&f.base_offset.to_be_bytes());
    let batch_length = (HEADER_BYTES - LOG_OVERHEAD + payload.len()) as i32;
    b.extend_from_slice(&batch_length.to_be_bytes());
    b.extend_from_slice(&f.leader_epoch.to_be_bytes());
    b.push(2);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&f.attributes.to_be_bytes());
    b.extend_from_slice(&f.last_offset_delta.to_be_bytes());
    b.extend_from_slice(&f.base_timestamp.to_be_bytes());
    b.extend_from_slice(&f.max_timestamp.to_be_bytes());
    b.extend_from_slice(&f.producer_id.to_be_bytes());
    b.extend_from_slice(&f.producer_epoch.to_be_bytes());
    b.extend_from_slice(&f.base_sequence.to_be_bytes());
    b.extend_from_slice(&f.record_count.to_be_bytes());
    b.extend_from_slice(payload);
    update_crc(&mut b);
    bytes::Bytes::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::BatchBuilder;

    #[test]
    fn header_fields_are_read_at_kafkas_positions() {
        let bytes = BatchBuilder::new()
            .base_offset(7)
            .producer(42, 3, 100)
            .timestamps(1000)
            .record(Some(b"k"), Some(b"v"))
            .record(None, Some(b"v2"))
            .build();
        let b = RecordBatch::parse(&bytes).unwrap();
        let h = b.header();
        assert_eq!(h.base_offset, 7);
        assert_eq!(h.magic, 2);
        assert_eq!(h.record_count, 2);
        assert_eq!(h.last_offset_delta, 1);
        assert_eq!(h.last_offset(), 8);
        assert_eq!(h.producer_id, 42);
        assert_eq!(h.producer_epoch, 3);
        assert_eq!(h.base_sequence, 100);
        assert_eq!(h.last_sequence(), 101);
        assert_eq!(h.base_timestamp, 1000);
        assert_eq!(h.max_timestamp, 1001);
        assert_eq!(h.size_bytes(), bytes.len());
        b.validate(1 << 20).unwrap();
    }

    #[test]
    fn crc_mismatch_is_corrupt() {
        let mut bytes = BatchBuilder::new()
            .record(Some(b"k"), Some(b"v"))
            .build()
            .to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let err = RecordBatch::parse(&bytes)
            .unwrap()
            .validate(1 << 20)
            .unwrap_err();
        assert!(matches!(err, BatchError::BadCrc { .. }));
        assert!(err.is_corrupt());
    }

    #[test]
    fn offset_and_epoch_rewrites_keep_the_crc_valid() {
        let mut bytes = BatchBuilder::new()
            .record(Some(b"k"), Some(b"v"))
            .build()
            .to_vec();
        set_base_offset(&mut bytes, 1234);
        set_partition_leader_epoch(&mut bytes, 9);
        let b = RecordBatch::parse(&bytes).unwrap();
        b.validate(1 << 20).unwrap();
        assert_eq!(b.header().base_offset, 1234);
        assert_eq!(b.header().partition_leader_epoch, 9);
    }

    #[test]
    fn log_append_time_rewrite_recomputes_the_crc() {
        let mut bytes = BatchBuilder::new()
            .record(Some(b"k"), Some(b"v"))
            .build()
            .to_vec();
        set_log_append_time(&mut bytes, 99_999);
        let b = RecordBatch::parse(&bytes).unwrap();
        b.validate(1 << 20).unwrap();
        assert!(b.header().is_log_append_time());
        assert_eq!(b.header().max_timestamp, 99_999);
    }

    #[test]
    fn hostile_record_count_is_refused_without_allocating() {
        let mut bytes = BatchBuilder::new()
            .record(Some(b"k"), Some(b"v"))
            .build()
            .to_vec();
        bytes[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        bytes[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
            .copy_from_slice(&(i32::MAX - 1).to_be_bytes());
        update_crc(&mut bytes);
        let err = RecordBatch::parse(&bytes)
            .unwrap()
            .validate(1 << 20)
            .unwrap_err();
        assert!(matches!(err, BatchError::BadRecordCount { .. }));
        assert!(!err.is_corrupt());
    }

    #[test]
    fn wrong_magic_and_short_lengths_are_refused() {
        let mut bytes = BatchBuilder::new()
            .record(Some(b"k"), Some(b"v"))
            .build()
            .to_vec();
        assert!(matches!(
            RecordBatch::parse(&bytes[..bytes.len() - 1]),
            Err(BatchError::Truncated { .. })
        ));
        bytes[MAGIC_AT] = 1;
        assert_eq!(
            RecordBatch::parse(&bytes).unwrap().validate(1 << 20),
            Err(BatchError::BadMagic(1))
        );
        bytes[BATCH_LENGTH_AT..BATCH_LENGTH_AT + 4].copy_from_slice(&10i32.to_be_bytes());
        assert_eq!(BatchHeader::parse(&bytes), Err(BatchError::BadLength(10)));
    }

    #[test]
    fn size_limit_is_enforced() {
        let bytes = BatchBuilder::new()
            .record(Some(b"k"), Some(&[0u8; 100]))
            .build();
        let err = RecordBatch::parse(&bytes)
            .unwrap()
            .validate(50)
            .unwrap_err();
        assert!(matches!(err, BatchError::TooLarge { .. }));
    }

    #[test]
    fn iterates_back_to_back_batches_and_stops_at_a_partial_one() {
        let a = BatchBuilder::new().record(Some(b"a"), None).build();
        let b = BatchBuilder::new()
            .base_offset(1)
            .record(Some(b"b"), None)
            .build();
        let mut buf = a.to_vec();
        buf.extend_from_slice(&b);
        buf.extend_from_slice(&a[..20]);
        let items: Vec<_> = batches(&buf).collect();
        assert_eq!(items.len(), 3);
        assert!(items[2].is_err());
        assert_eq!(whole_batches_len(&buf), a.len() + b.len());
    }
}
