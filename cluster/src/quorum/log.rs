//! The quorum's view of the metadata log: the batches after the latest snapshot, held in memory
//! (the metadata log is small and kept so by snapshots; the metadata image is in memory anyway),
//! with the leader-epoch cache that answers "where does epoch E end?" — the question behind
//! Fetch validation and follower truncation (KIP-595, as KIP-101 asks it for partitions).
//!
//! Invariants: batches are contiguous from `start_offset` to `end_offset`; their epochs never
//! decrease; `epochs` has one `(epoch, start_offset)` entry per epoch present, strictly
//! increasing in both, with the snapshot's epoch first when there is a snapshot.

use super::batch::{Batch, SnapshotId};

#[derive(Debug, Clone)]
pub struct MemLog {
    /// The snapshot every record below `start_offset` is folded into, if any.
    snapshot: Option<SnapshotId>,
    batches: std::collections::VecDeque<Batch>,
    start_offset: i64,
    end_offset: i64,
    epochs: Vec<(i32, i64)>,
}

impl MemLog {
    /// A log that starts at `snapshot` (or offset 0) and holds `batches`, which must follow it
    /// contiguously with non-decreasing epochs (what the disk held).
    pub fn new(snapshot: Option<SnapshotId>, batches: Vec<Batch>) -> MemLog {
        let start = snapshot.map_or(0, |s| s.end_offset);
        let mut log = MemLog {
            snapshot,
            batches: Default::default(),
            start_offset: start,
            end_offset: start,
            epochs: snapshot
                .map(|s| vec![(s.epoch, s.end_offset)])
                .unwrap_or_default(),
        };
        for b in batches {
            log.append(b);
        }
        log
    }

    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    pub fn snapshot(&self) -> Option<SnapshotId> {
        self.snapshot
    }

    /// The epoch of the last record, or of the snapshot; 0 for an empty log.
    pub fn last_epoch(&self) -> i32 {
        self.epochs.last().map_or(0, |e| e.0)
    }

    pub fn batches(&self) -> impl Iterator<Item = &Batch> {
        self.batches.iter()
    }

    pub fn append(&mut self, batch: Batch) {
        assert_eq!(
            batch.base_offset, self.end_offset,
            "metadata log append not at the log end"
        );
        assert!(!batch.records.is_empty(), "empty batch in the metadata log");
        let last = self.last_epoch();
        assert!(
            batch.epoch >= last,
            "batch of epoch {} after epoch {last} at offset {}",
            batch.epoch,
            batch.base_offset
        );
        if self.epochs.is_empty() || batch.epoch > last {
            self.epochs.push((batch.epoch, batch.base_offset));
        }
        self.end_offset = batch.next_offset();
        self.batches.push_back(batch);
    }

    /// Removes every record at or above `offset`, which must be a batch boundary at or above
    /// the log start.
    pub fn truncate_to(&mut self, offset: i64) {
        assert!(
            offset >= self.start_offset,
            "truncation to {offset} below the log start {}",
            self.start_offset
        );
        while let Some(b) = self.batches.back() {
            if b.base_offset < offset {
                assert_eq!(
                    b.next_offset(),
                    offset.min(self.end_offset),
                    "truncation inside a batch"
                );
                break;
            }
            self.batches.pop_back();
        }
        self.end_offset = offset.min(self.end_offset);
        // An epoch whose first record is gone goes too; the snapshot's entry stays.
        while let Some(&(_, start)) = self.epochs.last() {
            if start >= self.end_offset && !(self.snapshot.is_some() && self.epochs.len() == 1) {
                self.epochs.pop();
            } else {
                break;
            }
        }
    }

    /// Folds everything below `id.end_offset` into the snapshot `id` (a batch boundary at or
    /// below the log end).
    pub fn compact_to(&mut self, id: SnapshotId) {
        assert!(id.end_offset <= self.end_offset && id.end_offset >= self.start_offset);
        while let Some(b) = self.batches.front() {
            if b.base_offset >= id.end_offset {
                break;
            }
            assert!(b.next_offset() <= id.end_offset, "snapshot inside a batch");
            self.batches.pop_front();
        }
        self.snapshot = Some(id);
        self.start_offset = id.end_offset;
        let keep: Vec<(i32, i64)> = self
            .epochs
            .iter()
            .copied()
            .filter(|&(e, s)| s >= id.end_offset && e > id.epoch)
            .collect();
        self.epochs = std::iter::once((id.epoch, id.end_offset))
            .chain(keep)
            .collect();
    }

    /// Replaces the whole log by an installed snapshot: empty, starting at its end offset.
    pub fn reset_to_snapshot(&mut self, id: SnapshotId) {
        self.batches.clear();
        self.snapshot = Some(id);
        self.start_offset = id.end_offset;
        self.end_offset = id.end_offset;
        self.epochs = vec![(id.epoch, id.end_offset)];
    }

    /// Where the largest epoch not above `epoch` ends in this log: that epoch and the offset
    /// just past its last record (the next epoch's start, or the log end). `None` when the log
    /// holds no epoch that old.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        let i = self.epochs.partition_point(|&(e, _)| e <= epoch);
        if i == 0 {
            return None;
        }
        let end = self.epochs.get(i).map_or(self.end_offset, |&(_, s)| s);
        Some((self.epochs[i - 1].0, end))
    }

    /// The epoch of the record at `offset` (a snapshot's epoch for its last offset).
    pub fn epoch_at(&self, offset: i64) -> Option<i32> {
        if offset < self.start_offset - 1 || offset >= self.end_offset || offset < 0 {
            return None;
        }
        if offset == self.start_offset - 1 {
            return self.snapshot.map(|s| s.epoch);
        }
        let i = self.epochs.partition_point(|&(_, s)| s <= offset);
        (i > 0).then(|| self.epochs[i - 1].0)
    }

    /// Whole batches from `offset` (a batch boundary), at least one, then up to `max_bytes`.
    pub fn read(&self, offset: i64, max_bytes: usize) -> Vec<Batch> {
        let first = self.batches.partition_point(|b| b.next_offset() <= offset);
        let mut out = Vec::new();
        let mut bytes = 0;
        for b in self.batches.iter().skip(first) {
            if !out.is_empty() && bytes + b.size_bytes() > max_bytes {
                break;
            }
            debug_assert!(out.is_empty() || b.base_offset > offset);
            bytes += b.size_bytes();
            out.push(b.clone());
        }
        if let Some(b) = out.first() {
            assert_eq!(b.base_offset, offset, "fetch offset inside a batch");
        }
        out
    }

    /// Whether `offset` is a batch boundary of this log (or its start or end).
    pub fn is_boundary(&self, offset: i64) -> bool {
        offset == self.start_offset
            || offset == self.end_offset
            || self
                .batches
                .binary_search_by(|b| b.base_offset.cmp(&offset))
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quorum::batch::Record;
    use bytes::Bytes;

    fn batch(base: i64, epoch: i32, n: usize) -> Batch {
        Batch {
            base_offset: base,
            epoch,
            control: false,
            append_time_ms: 0,
            records: (0..n)
                .map(|_| Record::value(Bytes::from_static(b"x")))
                .collect(),
        }
    }

    #[test]
    fn end_offset_for_epoch_answers_where_each_epoch_ends() {
        let log = MemLog::new(None, vec![batch(0, 1, 2), batch(2, 1, 1), batch(3, 3, 2)]);
        assert_eq!(log.end_offset_for_epoch(0), None);
        assert_eq!(log.end_offset_for_epoch(1), Some((1, 3)));
        assert_eq!(log.end_offset_for_epoch(2), Some((1, 3)));
        assert_eq!(log.end_offset_for_epoch(3), Some((3, 5)));
        assert_eq!(log.end_offset_for_epoch(9), Some((3, 5)));
        assert_eq!(log.epoch_at(2), Some(1));
        assert_eq!(log.epoch_at(3), Some(3));
        assert_eq!(log.epoch_at(5), None);
    }

    #[test]
    fn truncation_drops_epochs_that_start_above_it() {
        let mut log = MemLog::new(None, vec![batch(0, 1, 2), batch(2, 3, 2)]);
        log.truncate_to(2);
        assert_eq!(log.end_offset(), 2);
        assert_eq!(log.last_epoch(), 1);
        assert_eq!(log.end_offset_for_epoch(3), Some((1, 2)));
        log.truncate_to(0);
        assert_eq!(log.last_epoch(), 0);
        assert_eq!(log.end_offset_for_epoch(1), None);
    }

    #[test]
    fn a_snapshot_keeps_its_epoch_as_the_first_entry() {
        let mut log = MemLog::new(None, vec![batch(0, 1, 2), batch(2, 2, 2), batch(4, 2, 1)]);
        log.compact_to(SnapshotId {
            end_offset: 4,
            epoch: 2,
        });
        assert_eq!(log.start_offset(), 4);
        assert_eq!(log.end_offset_for_epoch(2), Some((2, 5)));
        assert_eq!(log.end_offset_for_epoch(1), None);
        assert_eq!(log.epoch_at(3), Some(2));
        log.truncate_to(4);
        assert_eq!(log.last_epoch(), 2);
        assert_eq!(log.read(4, 100), vec![]);
    }

    #[test]
    fn read_returns_whole_batches_and_at_least_one() {
        let log = MemLog::new(None, vec![batch(0, 1, 2), batch(2, 1, 2), batch(4, 1, 2)]);
        assert_eq!(log.read(2, 0).len(), 1);
        assert_eq!(log.read(0, 1 << 20).len(), 3);
        assert!(log.read(6, 100).is_empty());
        assert!(log.is_boundary(4) && !log.is_boundary(3));
    }

    #[test]
    #[should_panic(expected = "inside a batch")]
    fn truncation_inside_a_batch_is_refused() {
        let mut log = MemLog::new(None, vec![batch(0, 1, 3)]);
        log.truncate_to(1);
    }
}
