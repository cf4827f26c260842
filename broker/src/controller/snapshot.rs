//! KIP-630 snapshot files: `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint` in the
//! metadata log's directory, holding record batches like a segment. As Kafka's
//! `RecordsSnapshotWriter` writes them: offsets count from 0 within the file, every batch
//! carries the snapshot's epoch, the first batch is a control batch whose first record is a
//! `SnapshotHeaderRecord` (it may also hold `KRaftVersion` / `KRaftVoters` records), then data
//! batches, and the last batch is a control batch holding the `SnapshotFooterRecord`.
//!
//! Invariants: a file decodes only if every batch passes its CRC, offsets run on densely, and
//! the header and footer are where they belong; a `.checkpoint.part` (a write cut short) or
//! `.checkpoint.deleted` file is never read as a snapshot.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{SnapshotFooterRecord, SnapshotHeaderRecord};
use kafka_protocol::protocol::{Decodable, Encodable};
use samsa_cluster::quorum::{Batch, ControlType, Record, SnapshotId, VoterSet};

use super::codec;

pub const SNAPSHOT_SUFFIX: &str = ".checkpoint";
pub const PARTIAL_SUFFIX: &str = ".checkpoint.part";
pub const DELETED_SUFFIX: &str = ".checkpoint.deleted";
/// Largest snapshot read into memory; the metadata image of a large cluster is tens of MiB.
pub const SNAPSHOT_BYTES_MAX: u64 = 256 << 20;
/// Data bytes per batch written (Kafka's KRaft batches are at most 8 MiB).
const SNAPSHOT_BATCH_BYTES: usize = 1 << 20;
/// The header and footer record versions Kafka writes (and the only ones defined).
const HEADER_VERSION: i16 = 0;
const FOOTER_VERSION: i16 = 0;

/// What a file in the metadata log directory is, as a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotFile {
    Complete(SnapshotId),
    /// A write that did not finish (`.checkpoint.part`).
    Partial(SnapshotId),
    /// Marked for deletion by Kafka (`.checkpoint.deleted`).
    Deleted(SnapshotId),
}

/// Kafka's `Snapshots.filenameFromSnapshotId` plus the suffix.
pub fn file_name(id: SnapshotId) -> String {
    assert!(
        id.end_offset >= 0 && id.epoch >= 0,
        "bad snapshot id {id:?}"
    );
    format!("{:020}-{:010}{SNAPSHOT_SUFFIX}", id.end_offset, id.epoch)
}

/// Kafka's `Snapshots.parse`: the id is in the first 31 characters whatever follows (Kafka's
/// temporary files add a random part before `.checkpoint.part`).
pub fn parse_file_name(name: &str) -> Option<SnapshotFile> {
    let (kind, suffix): (fn(SnapshotId) -> SnapshotFile, _) = if name.ends_with(PARTIAL_SUFFIX) {
        (SnapshotFile::Partial, PARTIAL_SUFFIX)
    } else if name.ends_with(DELETED_SUFFIX) {
        (SnapshotFile::Deleted, DELETED_SUFFIX)
    } else if name.ends_with(SNAPSHOT_SUFFIX) {
        (SnapshotFile::Complete, SNAPSHOT_SUFFIX)
    } else {
        return None;
    };
    fn digits(s: Option<&str>) -> Option<&str> {
        s.filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
    }
    let end_offset = digits(name.get(0..20))?.parse().ok()?;
    if name.get(20..21) != Some("-") {
        return None;
    }
    let epoch = digits(name.get(21..31))?.parse().ok()?;
    // Only Kafka's temporary `.part` files carry more between the id and the suffix.
    if suffix != PARTIAL_SUFFIX && name.len() != 31 + suffix.len() {
        return None;
    }
    Some(kind(SnapshotId { end_offset, epoch }))
}

/// A snapshot read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub id: SnapshotId,
    /// The header's `LastContainedLogTimestamp`: append time of the last record it covers.
    pub last_contained_log_timestamp_ms: i64,
    /// The data records' values, in order (metadata records, opaque here).
    pub records: Vec<Bytes>,
    /// Control records besides the header and footer (`KRaftVersion`, `KRaftVoters`), with
    /// their values.
    pub control: Vec<(ControlType, Bytes)>,
    /// The whole file (what FetchSnapshot serves).
    pub bytes: Bytes,
}

fn control_record(t: ControlType, value: Bytes) -> Record {
    Record {
        key: Some(t.key()),
        value: Some(value),
    }
}

fn encoded<M: Encodable>(m: &M, version: i16) -> Bytes {
    let mut b = BytesMut::new();
    m.encode(&mut b, version)
        .expect("a snapshot control record encodes");
    b.freeze()
}

/// The batches of a snapshot of `records`, as Kafka lays them out.
pub fn encode(id: SnapshotId, records: &[Bytes], last_contained_ms: i64, now_ms: i64) -> Bytes {
    encode_with_voters(id, records, last_contained_ms, now_ms, None)
}

/// [`encode`], with the quorum's voter set (kraft.version 1) as `KRaftVersion` and
/// `KRaftVoters` records after the header, in its batch, where Kafka writes them.
pub fn encode_with_voters(
    id: SnapshotId,
    records: &[Bytes],
    last_contained_ms: i64,
    now_ms: i64,
    voters: Option<&VoterSet>,
) -> Bytes {
    let header = SnapshotHeaderRecord::default()
        .with_version(HEADER_VERSION)
        .with_last_contained_log_timestamp(last_contained_ms);
    let footer = SnapshotFooterRecord::default().with_version(FOOTER_VERSION);
    let mut out = BytesMut::new();
    let mut next = 0i64;
    let mut push = |control: bool, recs: Vec<Record>, out: &mut BytesMut| {
        let b = Batch {
            base_offset: next,
            epoch: id.epoch,
            control,
            append_time_ms: now_ms,
            records: recs,
        };
        next = b.next_offset();
        out.extend_from_slice(&codec::encode(&b));
    };
    let header = control_record(
        ControlType::SnapshotHeader,
        encoded(&header, HEADER_VERSION),
    );
    let mut first = vec![header];
    if let Some(v) = voters {
        first.extend(samsa_cluster::quorum::voters_records(v));
    }
    push(true, first, &mut out);
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    for r in records {
        batch_bytes += r.len() + 16;
        batch.push(Record::value(r.clone()));
        if batch_bytes >= SNAPSHOT_BATCH_BYTES {
            push(false, std::mem::take(&mut batch), &mut out);
            batch_bytes = 0;
        }
    }
    if !batch.is_empty() {
        push(false, batch, &mut out);
    }
    let footer = control_record(
        ControlType::SnapshotFooter,
        encoded(&footer, FOOTER_VERSION),
    );
    push(true, vec![footer], &mut out);
    out.freeze()
}

/// The voter set a snapshot holds (kraft.version 1), if any and if it decodes: what the
/// quorum restarts its voters from when it installs or loads the snapshot.
pub fn voters_of(bytes: &[u8]) -> Option<VoterSet> {
    let id = SnapshotId {
        end_offset: 0,
        epoch: 0,
    };
    let snapshot = decode(id, Bytes::copy_from_slice(bytes)).ok()?;
    let (_, value) = snapshot
        .control
        .iter()
        .rev()
        .find(|(t, _)| *t == ControlType::KRaftVoters)?;
    samsa_cluster::quorum::decode_voters(value).ok()
}

/// Decodes and checks a snapshot file's contents.
pub fn decode(id: SnapshotId, bytes: Bytes) -> Result<Snapshot, String> {
    let batches = codec::decode_all(&bytes)?;
    let (Some(first), Some(last)) = (batches.first(), batches.last()) else {
        return Err("holds no record batches".into());
    };
    if batches.len() < 2 {
        return Err("holds one batch; a header and a footer batch are needed".into());
    }
    let mut next = first.base_offset;
    for b in &batches {
        if b.base_offset != next {
            return Err(format!(
                "batch at offset {} does not follow on from offset {next}",
                b.base_offset
            ));
        }
        next = b.next_offset();
    }
    let kind = |r: &Record| r.key.as_deref().and_then(ControlType::from_key);
    let header_record = &first.records[0];
    if !first.control || kind(header_record) != Some(ControlType::SnapshotHeader) {
        return Err("the first record is not a SnapshotHeader control record".into());
    }
    let mut value = header_record.value.clone().unwrap_or_default();
    let header = SnapshotHeaderRecord::decode(&mut value, HEADER_VERSION)
        .map_err(|e| format!("the SnapshotHeader does not decode: {e}"))?;
    let footer_record = last.records.last().expect("batches are not empty");
    if !last.control || kind(footer_record) != Some(ControlType::SnapshotFooter) {
        return Err("the last record is not a SnapshotFooter control record (cut short?)".into());
    }
    let mut records = Vec::new();
    let mut control = Vec::new();
    for b in &batches {
        for r in &b.records {
            if b.control {
                match kind(r) {
                    Some(ControlType::SnapshotHeader) if std::ptr::eq(r, header_record) => {}
                    Some(ControlType::SnapshotFooter) if std::ptr::eq(r, footer_record) => {}
                    Some(t @ (ControlType::KRaftVersion | ControlType::KRaftVoters)) => {
                        control.push((t, r.value.clone().unwrap_or_default()))
                    }
                    other => {
                        return Err(format!("unexpected control record {other:?} in a snapshot"))
                    }
                }
            } else {
                records.push(r.value.clone().ok_or("a data record has no value")?);
            }
        }
    }
    Ok(Snapshot {
        id,
        last_contained_log_timestamp_ms: header.last_contained_log_timestamp,
        records,
        control,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kafka() {
        let id = SnapshotId {
            end_offset: 1234,
            epoch: 5,
        };
        let name = file_name(id);
        assert_eq!(name, "00000000000000001234-0000000005.checkpoint");
        assert_eq!(parse_file_name(&name), Some(SnapshotFile::Complete(id)));
        assert_eq!(
            parse_file_name("00000000000000001234-0000000005-8812.checkpoint.part"),
            Some(SnapshotFile::Partial(id))
        );
        assert_eq!(
            parse_file_name("00000000000000001234-0000000005.checkpoint.deleted"),
            Some(SnapshotFile::Deleted(id))
        );
        for other in [
            "00000000000000001234.log",
            "00000000000000001234.snapshot",
            "0000000000000000123x-0000000005.checkpoint",
            "00000000000000001234-0000000005x.checkpoint",
            "quorum-state",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_snapshot_round_trips_and_a_cut_one_is_refused() {
        let id = SnapshotId {
            end_offset: 10,
            epoch: 2,
        };
        // Enough records for several data batches.
        let records: Vec<Bytes> = (0..3000u32)
            .map(|i| Bytes::from(vec![(i % 251) as u8; 1000]))
            .collect();
        let bytes = encode(id, &records, 111, 222);
        let batches = codec::decode_all(&bytes).unwrap();
        assert!(batches.len() > 3);
        assert!(batches
            .iter()
            .all(|b| b.epoch == 2 && b.append_time_ms == 222));
        assert_eq!(batches[0].base_offset, 0);
        let s = decode(id, bytes.clone()).unwrap();
        assert_eq!(s.records, records);
        assert_eq!(s.last_contained_log_timestamp_ms, 111);
        assert!(s.control.is_empty());
        let empty = decode(id, encode(id, &[], 0, 0)).unwrap();
        assert!(empty.records.is_empty());
        // Without its footer batch.
        let cut = batches.len() - 1;
        let mut without_footer = Vec::new();
        for b in &batches[..cut] {
            without_footer.extend_from_slice(&codec::encode(b));
        }
        let err = decode(id, Bytes::from(without_footer)).unwrap_err();
        assert!(err.contains("SnapshotFooter"), "{err}");
    }
}
