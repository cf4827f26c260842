//! Dynamic voter sets (KIP-853, `kraft.version` 1): the quorum's voters live in the metadata
//! log as `KRaftVoters` control records (Kafka's `VotersRecord`), and in every snapshot, so
//! that controllers are added and removed with AddRaftVoter / RemoveRaftVoter while the
//! quorum runs. A voter set takes effect on every node as soon as its record is in that
//! node's log, committed or not (Raft's single-server membership change), and is undone by a
//! truncation that removes the record. The leader allows one change at a time: a new one only
//! once the last is committed, so any majority of the old set and any majority of the new one
//! share a node.
//!
//! With `kraft.version` 0 the voters are `controller.quorum.voters`, fixed for good.
//!
//! Invariants: the history's offsets strictly increase; no set is empty.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::voters_record::{self, KRaftVersionFeature, VotersRecord};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use uuid::Uuid;

use super::batch::{Batch, ControlType, Record};
use crate::NodeId;

/// The `VotersRecord` version Kafka writes.
const VOTERS_RECORD_VERSION: i16 = 0;
/// The `KRaftVersionRecord` version Kafka writes (`version: int16, kraft_version: int16`).
const KRAFT_VERSION_RECORD_VERSION: i16 = 0;

/// One controller endpoint of a voter: its listener name, host and port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct VoterEndpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// One voter of a dynamic set: its node id, the id of its metadata log directory (so that a
/// node whose disk was replaced is not taken for the voter it was), and where to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoterNode {
    pub id: NodeId,
    pub directory_id: Uuid,
    pub endpoints: Vec<VoterEndpoint>,
}

/// The voters by id.
pub type VoterSet = BTreeMap<NodeId, VoterNode>;

/// The value of a `KRaftVoters` control record holding `voters`.
pub fn encode_voters(voters: &VoterSet) -> Bytes {
    assert!(!voters.is_empty(), "a voter set with no voter");
    let record = VotersRecord::default()
        .with_version(VOTERS_RECORD_VERSION)
        .with_voters(
            voters
                .values()
                .map(|v| {
                    voters_record::Voter::default()
                        .with_voter_id(v.id.into())
                        .with_voter_directory_id(v.directory_id)
                        .with_endpoints(
                            v.endpoints
                                .iter()
                                .map(|e| {
                                    voters_record::Endpoint::default()
                                        .with_name(StrBytes::from_string(e.name.clone()))
                                        .with_host(StrBytes::from_string(e.host.clone()))
                                        .with_port(e.port)
                                })
                                .collect(),
                        )
                        .with_k_raft_version_feature(
                            KRaftVersionFeature::default()
                                .with_min_supported_version(0)
                                .with_max_supported_version(1),
                        )
                })
                .collect(),
        );
    let mut buf = BytesMut::new();
    record
        .encode(&mut buf, VOTERS_RECORD_VERSION)
        .expect("VotersRecord v0 encodes");
    buf.freeze()
}

/// The voter set a `KRaftVoters` control record's value holds.
pub fn decode_voters(value: &[u8]) -> Result<VoterSet, String> {
    let mut buf = Bytes::copy_from_slice(value);
    if buf.len() < 2 {
        return Err("a VotersRecord shorter than its version".into());
    }
    let version = i16::from_be_bytes([buf[0], buf[1]]);
    if version != VOTERS_RECORD_VERSION {
        return Err(format!("VotersRecord version {version} is not known"));
    }
    let record = VotersRecord::decode(&mut buf, version)
        .map_err(|e| format!("a VotersRecord that does not decode: {e}"))?;
    let mut set = VoterSet::new();
    for v in record.voters {
        let node = VoterNode {
            id: v.voter_id.0,
            directory_id: v.voter_directory_id,
            endpoints: v
                .endpoints
                .into_iter()
                .map(|e| VoterEndpoint {
                    name: e.name.to_string(),
                    host: e.host.to_string(),
                    port: e.port,
                })
                .collect(),
        };
        if set.insert(node.id, node).is_some() {
            return Err(format!("voter {} is listed twice", v.voter_id.0));
        }
    }
    if set.is_empty() {
        return Err("a VotersRecord with no voter".into());
    }
    Ok(set)
}

/// The value of a `KRaftVersion` control record naming `kraft_version`.
pub fn encode_kraft_version(kraft_version: i16) -> Bytes {
    let mut v = Vec::with_capacity(4);
    v.extend_from_slice(&KRAFT_VERSION_RECORD_VERSION.to_be_bytes());
    v.extend_from_slice(&kraft_version.to_be_bytes());
    Bytes::from(v)
}

/// The control records that state `voters` under kraft.version 1: `KRaftVersion`, then
/// `KRaftVoters` (what Kafka writes at the start of a bootstrapped log and of a snapshot).
pub fn voters_records(voters: &VoterSet) -> Vec<Record> {
    vec![
        Record {
            key: Some(ControlType::KRaftVersion.key()),
            value: Some(encode_kraft_version(1)),
        },
        voters_record(voters),
    ]
}

/// The `KRaftVoters` control record for `voters`.
pub fn voters_record(voters: &VoterSet) -> Record {
    Record {
        key: Some(ControlType::KRaftVoters.key()),
        value: Some(encode_voters(voters)),
    }
}

/// The voter sets a batch holds, with the offset of each record.
fn sets_in(batch: &Batch) -> impl Iterator<Item = (i64, VoterSet)> + '_ {
    let control = batch.control;
    batch
        .records
        .iter()
        .enumerate()
        .filter(move |_| control)
        .filter_map(move |(i, r)| {
            let key = r.key.as_ref()?;
            if ControlType::from_key(key) != Some(ControlType::KRaftVoters) {
                return None;
            }
            // A record that does not decode was checked by its writer; a corrupt one fails
            // the batch's CRC before it gets here. Skipping it keeps the previous set.
            let set = decode_voters(r.value.as_deref()?).ok()?;
            Some((batch.base_offset + i as i64, set))
        })
}

/// Who votes: the static set of kraft.version 0, or the history of kraft.version 1.
#[derive(Debug, Clone)]
pub(crate) struct Voters {
    /// `controller.quorum.voters` (kraft.version 0); empty under kraft.version 1.
    fixed: BTreeSet<NodeId>,
    /// kraft.version 1: each voter set with the offset of the record that set it (-1 for the
    /// set this node was formatted with, which no record of its log holds yet).
    history: Vec<(i64, VoterSet)>,
    /// The ids of the latest set (cached: asked on every message).
    current: BTreeSet<NodeId>,
    /// Counts every change of the latest set, so a driver can tell when to reconnect.
    version: u64,
}

impl Voters {
    pub fn fixed(ids: BTreeSet<NodeId>) -> Voters {
        Voters {
            current: ids.clone(),
            fixed: ids,
            history: Vec::new(),
            version: 0,
        }
    }

    /// kraft.version 1, starting from the set a node was formatted with, if any.
    pub fn dynamic(bootstrap: Option<VoterSet>) -> Voters {
        let mut v = Voters {
            fixed: BTreeSet::new(),
            history: Vec::new(),
            current: BTreeSet::new(),
            version: 0,
        };
        if let Some(set) = bootstrap {
            v.history.push((-1, set));
        }
        v.refresh();
        v
    }

    pub fn is_dynamic(&self) -> bool {
        self.fixed.is_empty()
    }

    pub fn ids(&self) -> &BTreeSet<NodeId> {
        &self.current
    }

    pub fn majority(&self) -> usize {
        self.current.len() / 2 + 1
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// The latest set with its record's offset (kraft.version 1 only).
    pub fn latest(&self) -> Option<&(i64, VoterSet)> {
        self.history.last()
    }

    /// The set in force just after `offset` (for a snapshot ending there).
    pub fn at(&self, end_offset: i64) -> Option<&VoterSet> {
        self.history
            .iter()
            .rev()
            .find(|(o, _)| *o < end_offset)
            .map(|(_, s)| s)
    }

    /// Whether `node` was a voter until the latest set, which is not committed below
    /// `high_watermark` yet.
    pub fn removed_uncommitted(&self, node: NodeId, high_watermark: i64) -> bool {
        match self.history.as_slice() {
            [.., (_, before), (offset, latest)] => {
                *offset >= high_watermark
                    && before.contains_key(&node)
                    && !latest.contains_key(&node)
            }
            _ => false,
        }
    }

    /// The batch is now in the log: any voter set it holds takes effect.
    pub fn appended(&mut self, batch: &Batch) {
        if !self.is_dynamic() || !batch.control {
            return;
        }
        let found: Vec<(i64, VoterSet)> = sets_in(batch).collect();
        if found.is_empty() {
            return;
        }
        for (offset, set) in found {
            if let Some((last, _)) = self.history.last() {
                assert!(
                    offset > *last,
                    "voter set at {offset} not after the one at {last}"
                );
            }
            self.history.push((offset, set));
        }
        self.refresh();
    }

    /// Records at or above `end_offset` are gone: so are the sets they held.
    pub fn truncated(&mut self, end_offset: i64) {
        let before = self.history.len();
        self.history.retain(|(o, _)| *o < end_offset);
        if self.history.len() != before {
            self.refresh();
        }
    }

    /// Records below `end_offset` are folded into a snapshot: only the last set before it is
    /// still needed (the snapshot holds it too).
    pub fn compacted(&mut self, end_offset: i64) {
        if let Some(keep) = self.history.iter().rposition(|(o, _)| *o < end_offset) {
            self.history.drain(..keep);
        }
    }

    /// The log restarts at a snapshot ending at `end_offset` that holds `set` (or none: the
    /// sets before it are kept, e.g. a node still on its formatted set).
    pub fn reset_to_snapshot(&mut self, end_offset: i64, set: Option<VoterSet>) {
        if !self.is_dynamic() {
            return;
        }
        match set {
            Some(set) => self.history = vec![(end_offset - 1, set)],
            None => self.history.retain(|(o, _)| *o < end_offset),
        }
        self.refresh();
    }

    fn refresh(&mut self) {
        let ids: BTreeSet<NodeId> = match self.history.last() {
            Some((_, set)) => set.keys().copied().collect(),
            None => self.fixed.clone(),
        };
        // Counted even when the ids stay: the endpoints may have changed.
        self.current = ids;
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: NodeId) -> VoterNode {
        VoterNode {
            id,
            directory_id: Uuid::from_u128(id as u128 + 100),
            endpoints: vec![VoterEndpoint {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
            }],
        }
    }

    fn set(ids: &[NodeId]) -> VoterSet {
        ids.iter().map(|&i| (i, node(i))).collect()
    }

    fn control_batch(base: i64, records: Vec<Record>) -> Batch {
        Batch {
            base_offset: base,
            epoch: 1,
            control: true,
            append_time_ms: 0,
            records,
        }
    }

    #[test]
    fn a_voters_record_round_trips_and_bad_ones_are_refused() {
        let s = set(&[1, 2, 3]);
        assert_eq!(decode_voters(&encode_voters(&s)).unwrap(), s);
        assert!(decode_voters(&[]).is_err());
        assert!(decode_voters(&[0, 7]).unwrap_err().contains("version 7"));
        assert!(decode_voters(&[0]).unwrap_err().contains("shorter"));
        // KRaftVersion precedes KRaftVoters, naming kraft.version 1 (`version: 0, level: 1`).
        let records = voters_records(&s);
        assert_eq!(
            records[0].key.as_deref().and_then(ControlType::from_key),
            Some(ControlType::KRaftVersion)
        );
        assert_eq!(records[0].value.as_deref(), Some(&[0u8, 0, 0, 1][..]));
        assert_eq!(
            records[1].value.as_deref().map(decode_voters),
            Some(Ok(s.clone()))
        );
        let mut truncated = encode_voters(&s).to_vec();
        truncated.truncate(truncated.len() / 2);
        assert!(decode_voters(&truncated).is_err());
    }

    #[test]
    fn sets_follow_the_log_through_appends_truncation_and_snapshots() {
        let mut v = Voters::dynamic(Some(set(&[1])));
        assert_eq!(v.ids(), &BTreeSet::from([1]));
        v.appended(&control_batch(0, voters_records(&set(&[1]))));
        v.appended(&control_batch(5, vec![voters_record(&set(&[1, 2]))]));
        assert_eq!(v.ids(), &BTreeSet::from([1, 2]));
        assert_eq!(v.majority(), 2);
        // A data batch changes nothing, even with a control key.
        let mut data = control_batch(6, vec![voters_record(&set(&[9]))]);
        data.control = false;
        v.appended(&data);
        assert_eq!(v.ids(), &BTreeSet::from([1, 2]));
        assert_eq!(v.at(5).unwrap().len(), 1, "the record at 5 is not below 5");
        assert_eq!(v.at(6).unwrap().len(), 2);
        v.truncated(5);
        assert_eq!(v.ids(), &BTreeSet::from([1]));
        v.appended(&control_batch(5, vec![voters_record(&set(&[1, 3]))]));
        v.appended(&control_batch(10, vec![voters_record(&set(&[1, 4]))]));
        v.compacted(10);
        // The set a snapshot ending at 10 holds (from 5) stays, with the one at 10.
        assert_eq!(v.history.len(), 2);
        assert_eq!(v.at(10).unwrap(), &set(&[1, 3]));
        assert_eq!(v.ids(), &BTreeSet::from([1, 4]));
        // A snapshot without voters keeps the sets below its end, drops those at or above.
        v.appended(&control_batch(20, vec![voters_record(&set(&[2]))]));
        v.reset_to_snapshot(20, None);
        assert_eq!(v.ids(), &BTreeSet::from([1, 4]));
        assert_eq!(v.latest().unwrap().0, 10);
        v.reset_to_snapshot(20, Some(set(&[2, 3])));
        assert_eq!(v.latest().unwrap().0, 19);
        assert_eq!(v.ids(), &BTreeSet::from([2, 3]));
    }

    #[test]
    fn a_fixed_set_ignores_voters_records() {
        let mut v = Voters::fixed(BTreeSet::from([1, 2, 3]));
        v.appended(&control_batch(0, voters_records(&set(&[1]))));
        assert_eq!(v.ids().len(), 3);
        assert!(v.latest().is_none());
    }
}
