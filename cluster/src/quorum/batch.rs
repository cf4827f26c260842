//! The unit of the metadata log: a batch of records appended by one leader in one epoch, which
//! is exactly a Kafka record batch (`partition_leader_epoch` = `epoch`, the control attribute
//! for KRaft's control records). The quorum treats record values as opaque bytes; what they
//! mean (metadata records, `ApiMessageAndVersion`) is [`crate::metadata`]'s business.

use bytes::Bytes;

/// One record of a batch. Data records carry a metadata record as their value and no key;
/// control records carry Kafka's control key (version `0`, then the [`ControlType`]) and the
/// control message as value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

impl Record {
    pub fn value(value: Bytes) -> Record {
        Record {
            key: None,
            value: Some(value),
        }
    }
}

/// Kafka's `ControlRecordType` values used by KRaft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlType {
    LeaderChange = 2,
    SnapshotHeader = 3,
    SnapshotFooter = 4,
    KRaftVersion = 5,
    KRaftVoters = 6,
}

impl ControlType {
    /// The control record key: `version: int16 = 0, type: int16`.
    pub fn key(self) -> Bytes {
        let t = self as i16;
        Bytes::from(vec![0, 0, (t >> 8) as u8, t as u8])
    }

    pub fn from_key(key: &[u8]) -> Option<ControlType> {
        if key.len() < 4 || key[0..2] != [0, 0] {
            return None;
        }
        match i16::from_be_bytes([key[2], key[3]]) {
            2 => Some(ControlType::LeaderChange),
            3 => Some(ControlType::SnapshotHeader),
            4 => Some(ControlType::SnapshotFooter),
            5 => Some(ControlType::KRaftVersion),
            6 => Some(ControlType::KRaftVoters),
            _ => None,
        }
    }
}

/// A batch of the metadata log. Invariant: `records` is not empty; the batch covers offsets
/// `base_offset..=last_offset()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub base_offset: i64,
    /// The leader epoch of the leader that appended it (`partition_leader_epoch`).
    pub epoch: i32,
    /// A control batch (KRaft's LeaderChange and the like), not application data.
    pub control: bool,
    /// When the leader appended it (the caller's clock, milliseconds since the Unix epoch).
    pub append_time_ms: i64,
    pub records: Vec<Record>,
}

impl Batch {
    pub fn last_offset(&self) -> i64 {
        debug_assert!(!self.records.is_empty());
        self.base_offset + self.records.len() as i64 - 1
    }

    pub fn next_offset(&self) -> i64 {
        self.base_offset + self.records.len() as i64
    }

    /// Bytes this batch holds in memory (keys and values), for fetch size limits.
    pub fn size_bytes(&self) -> usize {
        self.records
            .iter()
            .map(|r| {
                16 + r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len())
            })
            .sum::<usize>()
            + 61
    }
}

/// A snapshot's identity (KIP-630): it holds every record below `end_offset`, the last of which
/// was appended in `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SnapshotId {
    pub end_offset: i64,
    pub epoch: i32,
}
