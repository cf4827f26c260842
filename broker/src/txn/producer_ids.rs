//! Producer ids: handed out from blocks that the active controller allocates
//! (AllocateProducerIds, Kafka's `RPCProducerIdManager`), each block committed to the metadata
//! log before any id of it is used, so that no id is given twice in the cluster, even across
//! crashes (a crash wastes the rest of the block, as in Kafka).
//!
//! Before the metadata log held them, a node claimed blocks itself in the file
//! `samsa-producer-ids` in its log directory (a version line and the first id no block had
//! claimed). That file is only read now: ids below its value were handed out by this node, so
//! blocks below it are skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;

use crate::controller::active::{ControllerReply, ControllerRequest, ReplyError};
use crate::node::Node;

pub const FILE_NAME: &str = "samsa-producer-ids";
const VERSION: &str = "1";
/// How long a request for a block may take before the client is told to retry.
const BLOCK_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ProducerIdError {
    #[error("cannot read the producer-id claims in {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is malformed: {what}")]
    Malformed { path: PathBuf, what: String },
    #[error("producer ids are exhausted")]
    Exhausted,
    #[error("no block of producer ids from the controller: {0}")]
    Unavailable(String),
}

#[derive(Debug, Clone, Copy)]
struct Block {
    /// Next id to hand out.
    next: i64,
    /// End (exclusive) of the block.
    end: i64,
}

pub struct ProducerIdManager {
    /// Ids below this were handed out by this node from its own claims (the legacy file).
    legacy_floor: i64,
    block: Mutex<Block>,
    /// Serialises requests for a new block.
    fetching: tokio::sync::Mutex<()>,
}

impl ProducerIdManager {
    /// Reads the legacy claim file of `dir`, if any. No block is asked for until the first id
    /// is.
    pub fn open(dir: &Path) -> Result<ProducerIdManager, ProducerIdError> {
        let path = dir.join(FILE_NAME);
        let legacy_floor = match std::fs::read_to_string(&path) {
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
            legacy_floor,
            block: Mutex::new(Block { next: 0, end: 0 }),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// An id of the current block, if it has one left.
    pub fn try_generate(&self) -> Option<i64> {
        let mut b = self.block.lock();
        (b.next < b.end).then(|| {
            let id = b.next;
            b.next += 1;
            id
        })
    }

    /// A producer id never handed out before in the cluster.
    pub async fn generate(&self, node: &Node) -> Result<i64, ProducerIdError> {
        loop {
            if let Some(id) = self.try_generate() {
                return Ok(id);
            }
            self.refill(node).await?;
        }
    }

    /// Makes sure the current block has an id left (so that [`try_generate`] succeeds unless
    /// another request takes it first).
    ///
    /// [`try_generate`]: ProducerIdManager::try_generate
    pub async fn ensure_available(&self, node: &Node) -> Result<(), ProducerIdError> {
        loop {
            {
                let b = self.block.lock();
                if b.next < b.end {
                    return Ok(());
                }
            }
            self.refill(node).await?;
        }
    }

    /// Asks the active controller for a new block, unless another request did meanwhile.
    async fn refill(&self, node: &Node) -> Result<(), ProducerIdError> {
        let _one_at_a_time = self.fetching.lock().await;
        {
            let b = self.block.lock();
            if b.next < b.end {
                return Ok(());
            }
        }
        let Some(broker_epoch) = node.membership.borrow().broker_epoch else {
            return Err(ProducerIdError::Unavailable(
                "this broker is not registered with the controller yet".into(),
            ));
        };
        let request = ControllerRequest::AllocateProducerIds {
            broker_id: node.node_id,
            broker_epoch,
        };
        let block = match node
            .controller
            .request_retrying(request, BLOCK_REQUEST_TIMEOUT)
            .await
        {
            Ok(ControllerReply::AllocateProducerIds(b)) => b,
            Ok(_) => {
                return Err(ProducerIdError::Unavailable(
                    "an answer of the wrong type".into(),
                ))
            }
            Err(ReplyError { code, message: why })
                if code == kafka_protocol::ResponseError::UnknownServerError.code() =>
            {
                return Err(ProducerIdError::Unavailable(why))
            }
            Err(ReplyError { code, message: why }) => {
                return Err(ProducerIdError::Unavailable(format!(
                    "{why} (error {code})"
                )))
            }
        };
        let start = block.first_producer_id.max(self.legacy_floor);
        let end = block
            .first_producer_id
            .saturating_add(i64::from(block.size));
        // Blocks only grow: a block below the one in use would hand out ids again.
        let mut b = self.block.lock();
        assert!(
            block.first_producer_id >= b.end,
            "the controller handed out block {} after block ending at {}",
            block.first_producer_id,
            b.end
        );
        // A block wholly below the legacy floor is empty here (next >= end): the caller asks
        // for the next one.
        *b = Block { next: start, end };
        tracing::debug!(
            block_start = start,
            block_end = end,
            "received a block of producer ids"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_claim_file_is_refused_rather_than_reset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "1\nbanana\n").unwrap();
        assert!(matches!(
            ProducerIdManager::open(dir.path()),
            Err(ProducerIdError::Malformed { .. })
        ));
    }

    #[test]
    fn the_legacy_claim_is_the_floor_and_no_id_is_given_before_a_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "1\n3000\n").unwrap();
        let m = ProducerIdManager::open(dir.path()).unwrap();
        assert_eq!(m.legacy_floor, 3000);
        assert_eq!(m.try_generate(), None);
    }
}
