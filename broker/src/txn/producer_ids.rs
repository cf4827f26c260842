//! Producer ids: handed out from blocks of `BLOCK_SIZE` (Kafka's `ProducerIdsBlock`), each
//! block claimed durably before any id of it is used, so an id is never given twice, even
//! across crashes (a crash wastes the rest of the block, as in Kafka).
//!
//! The claim is the file `samsa-producer-ids` in the log directory: a version line and the
//! first id no block has claimed yet, written atomically (temp file, fsync, rename, fsync of
//! the directory).

use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::topics::write_atomically;

pub const FILE_NAME: &str = "samsa-producer-ids";
/// Ids per claimed block (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const BLOCK_SIZE: i64 = 1000;
const VERSION: &str = "1";

#[derive(Debug, thiserror::Error)]
pub enum ProducerIdError {
    #[error("cannot claim a block of producer ids in {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is malformed: {what}")]
    Malformed { path: PathBuf, what: String },
    #[error("producer ids are exhausted")]
    Exhausted,
}

struct Blocks {
    /// Next id to hand out.
    next: i64,
    /// End (exclusive) of the claimed block.
    block_end: i64,
}

pub struct ProducerIdManager {
    dir: PathBuf,
    blocks: Mutex<Blocks>,
}

impl ProducerIdManager {
    /// Reads the claim file of `dir` (none: ids start at 0). No block is claimed until the
    /// first id is asked for.
    pub fn open(dir: &Path) -> Result<ProducerIdManager, ProducerIdError> {
        let path = dir.join(FILE_NAME);
        let unclaimed = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut lines = text.lines();
                if lines.next().map(str::trim) != Some(VERSION) {
                    return Err(ProducerIdError::Malformed {
                        path,
                        what: "unknown version".into(),
                    });
                }
                lines
                    .next()
                    .and_then(|l| l.trim().parse::<i64>().ok())
                    .filter(|&n| n >= 0)
                    .ok_or_else(|| ProducerIdError::Malformed {
                        path: path.clone(),
                        what: "no next block start".into(),
                    })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(ProducerIdError::Io { path, source: e }),
        };
        Ok(ProducerIdManager {
            dir: dir.to_path_buf(),
            blocks: Mutex::new(Blocks {
                next: unclaimed,
                block_end: unclaimed,
            }),
        })
    }

    /// A producer id never handed out before.
    pub fn generate(&self) -> Result<i64, ProducerIdError> {
        let mut b = self.blocks.lock();
        if b.next >= b.block_end {
            let end = b
                .block_end
                .checked_add(BLOCK_SIZE)
                .ok_or(ProducerIdError::Exhausted)?;
            let contents = format!("{VERSION}\n{end}\n");
            write_atomically(&self.dir, FILE_NAME, contents.as_bytes()).map_err(|e| {
                ProducerIdError::Io {
                    path: self.dir.join(FILE_NAME),
                    source: e,
                }
            })?;
            b.next = b.block_end;
            b.block_end = end;
            tracing::debug!(
                block_start = b.next,
                block_end = end,
                "claimed a block of producer ids"
            );
        }
        let id = b.next;
        b.next += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused_across_restarts_even_mid_block() {
        let dir = tempfile::tempdir().unwrap();
        let m = ProducerIdManager::open(dir.path()).unwrap();
        let first: Vec<i64> = (0..3).map(|_| m.generate().unwrap()).collect();
        assert_eq!(first, vec![0, 1, 2]);
        drop(m);
        // A restart (clean or not) continues after the whole claimed block.
        let m = ProducerIdManager::open(dir.path()).unwrap();
        assert_eq!(m.generate().unwrap(), BLOCK_SIZE);
        for _ in 0..BLOCK_SIZE {
            m.generate().unwrap();
        }
        let m = ProducerIdManager::open(dir.path()).unwrap();
        assert_eq!(m.generate().unwrap(), 3 * BLOCK_SIZE);
    }

    #[test]
    fn a_damaged_claim_file_is_refused_rather_than_reset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "1\nbanana\n").unwrap();
        assert!(matches!(
            ProducerIdManager::open(dir.path()),
            Err(ProducerIdError::Malformed { .. })
        ));
    }
}
