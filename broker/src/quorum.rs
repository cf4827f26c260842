//! The metadata quorum of a single node: the node is the only voter of `__cluster_metadata`
//! and so its leader. Like a KRaft node that elects itself whenever it starts, its leader
//! epoch grows by one per start (kept in `samsa-quorum-state.json`); the metadata log's end
//! offset and high watermark are the number of topic metadata changes the node has committed
//! (`TopicRegistry::metadata_changes`), so they only grow. What DescribeQuorum reports.

use std::path::Path;

use serde::{Deserialize, Serialize};

const FILE: &str = "samsa-quorum-state.json";

/// The name and only partition of the metadata log, as Kafka names them.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
pub const METADATA_PARTITION: i32 = 0;

#[derive(Serialize, Deserialize)]
struct StateFile {
    leader_id: i32,
    leader_epoch: i32,
}

pub struct Quorum {
    pub leader_id: i32,
    pub leader_epoch: i32,
}

impl Quorum {
    /// Elects this node for a new epoch and records it before the node serves anything.
    pub fn elect_self(dir: &Path, node_id: i32) -> anyhow::Result<Quorum> {
        let path = dir.join(FILE);
        let previous = match std::fs::read(&path) {
            Ok(bytes) => {
                let s: StateFile = serde_json::from_slice(&bytes)
                    .map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display()))?;
                s.leader_epoch
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        let state = StateFile {
            leader_id: node_id,
            leader_epoch: previous
                .checked_add(1)
                .ok_or_else(|| anyhow::anyhow!("{}: leader epoch exhausted", path.display()))?,
        };
        let bytes = serde_json::to_vec_pretty(&state).expect("serialisable");
        crate::topics::write_atomically(dir, FILE, &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        Ok(Quorum {
            leader_id: state.leader_id,
            leader_epoch: state.leader_epoch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_start_is_a_new_epoch_and_a_corrupt_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Quorum::elect_self(dir.path(), 3).unwrap().leader_epoch, 1);
        let q = Quorum::elect_self(dir.path(), 3).unwrap();
        assert_eq!((q.leader_id, q.leader_epoch), (3, 2));
        std::fs::write(dir.path().join(FILE), b"{").unwrap();
        let e = Quorum::elect_self(dir.path(), 3).err().unwrap().to_string();
        assert!(e.contains("is corrupt"), "{e}");
    }
}
