//! The leader-epoch cache of one partition (Kafka's `LeaderEpochFileCache`): the start offset
//! of every leader epoch that wrote to the log, persisted in `leader-epoch-checkpoint`.
//! OffsetForLeaderEpoch answers from it, and followers use it to truncate correctly.
//!
//! Invariants: epochs and start offsets strictly increase; at most `EPOCH_ENTRIES_MAX` entries
//! (the oldest are dropped first, as they can only describe deleted data); every change is
//! written to the checkpoint before the call returns.

use std::io;
use std::path::PathBuf;

use crate::checkpoint;

pub const EPOCH_ENTRIES_MAX: usize = 4096;

pub(crate) struct LeaderEpochCache {
    path: PathBuf,
    entries: Vec<(i32, i64)>,
}

impl LeaderEpochCache {
    /// Loads the checkpoint, dropping entries that break the ordering invariant.
    pub fn load(path: PathBuf) -> io::Result<LeaderEpochCache> {
        let raw = match checkpoint::read_epochs(&path) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                tracing::warn!(error = %e, "ignoring a malformed leader-epoch-checkpoint");
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        let mut entries: Vec<(i32, i64)> = Vec::with_capacity(raw.len());
        for (epoch, offset) in raw {
            if entries.last().is_none_or(|&(e, o)| epoch > e && offset > o)
                && epoch >= 0
                && offset >= 0
            {
                entries.push((epoch, offset));
            }
        }
        Ok(LeaderEpochCache { path, entries })
    }

    pub fn entries(&self) -> &[(i32, i64)] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|&(e, _)| e)
    }

    fn persist(&self) -> io::Result<()> {
        checkpoint::write_epochs(&self.path, &self.entries)
    }

    /// Records that `epoch` starts at `start_offset`, if it is newer than the latest epoch
    /// (older or equal epochs are ignored, as Kafka's `assign` does). Returns whether it changed.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> io::Result<bool> {
        if epoch < 0 || self.latest_epoch().is_some_and(|e| epoch <= e) {
            return Ok(false);
        }
        // An entry at or after this offset belongs to a truncated-away history.
        while self.entries.last().is_some_and(|&(_, o)| o >= start_offset) {
            self.entries.pop();
        }
        self.entries.push((epoch, start_offset));
        if self.entries.len() > EPOCH_ENTRIES_MAX {
            self.entries.remove(0);
        }
        self.persist()?;
        Ok(true)
    }

    /// Kafka's `endOffsetFor`: the epoch at or below `epoch` that the log knows and the offset
    /// where the epoch after it starts (the log end offset for the latest epoch). `None` is
    /// Kafka's (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
    pub fn end_offset_for(&self, epoch: i32, log_end_offset: i64) -> Option<(i32, i64)> {
        if epoch < 0 {
            return None;
        }
        if self.latest_epoch() == Some(epoch) {
            return Some((epoch, log_end_offset));
        }
        let higher = self.entries.partition_point(|&(e, _)| e <= epoch);
        let &(_, higher_start) = self.entries.get(higher)?;
        match higher.checked_sub(1) {
            // Older than anything we know: Kafka answers with the requested epoch.
            None => Some((epoch, higher_start)),
            Some(floor) => Some((self.entries[floor].0, higher_start)),
        }
    }

    /// Drops entries that start at or after `end_offset` (the log was truncated there).
    pub fn truncate_from_end(&mut self, end_offset: i64) -> io::Result<()> {
        let before = self.entries.len();
        self.entries.retain(|&(_, o)| o < end_offset);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// Moves the first epoch's start up to `start_offset` and drops epochs wholly before it.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> io::Result<()> {
        let covering = self.entries.partition_point(|&(_, o)| o <= start_offset);
        if covering == 0 {
            return Ok(());
        }
        let (epoch, offset) = self.entries[covering - 1];
        if covering == 1 && offset == start_offset {
            return Ok(());
        }
        self.entries.drain(..covering - 1);
        self.entries[0] = (epoch, start_offset);
        self.persist()
    }

    pub fn clear(&mut self) -> io::Result<()> {
        self.entries.clear();
        self.persist()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, LeaderEpochCache) {
        let dir = tempfile::tempdir().unwrap();
        let c = LeaderEpochCache::load(dir.path().join("leader-epoch-checkpoint")).unwrap();
        (dir, c)
    }

    #[test]
    fn end_offset_for_epoch_follows_kafka() {
        let (_d, mut c) = cache();
        c.assign(1, 0).unwrap();
        c.assign(3, 100).unwrap();
        c.assign(5, 250).unwrap();
        assert!(!c.assign(4, 300).unwrap());
        assert_eq!(c.end_offset_for(5, 400), Some((5, 400)));
        assert_eq!(c.end_offset_for(3, 400), Some((3, 250)));
        assert_eq!(c.end_offset_for(4, 400), Some((3, 250)));
        assert_eq!(c.end_offset_for(0, 400), Some((0, 0)));
        assert_eq!(c.end_offset_for(6, 400), None);
        assert_eq!(c.end_offset_for(-1, 400), None);
    }

    #[test]
    fn truncation_and_reload() {
        let (d, mut c) = cache();
        c.assign(1, 0).unwrap();
        c.assign(2, 10).unwrap();
        c.assign(3, 20).unwrap();
        c.truncate_from_end(20).unwrap();
        assert_eq!(c.entries(), &[(1, 0), (2, 10)]);
        c.truncate_from_start(15).unwrap();
        assert_eq!(c.entries(), &[(2, 15)]);
        let again = LeaderEpochCache::load(d.path().join("leader-epoch-checkpoint")).unwrap();
        assert_eq!(again.entries(), &[(2, 15)]);
    }
}
