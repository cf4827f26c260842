//! `meta.properties`: the identity of a log directory (cluster id, node id), in Kafka's format,
//! so that a directory is never silently served under another cluster or node id.

use std::path::Path;

use crate::config::{parse_properties, BrokerConfig};

const FILE: &str = "meta.properties";

/// Reads the directory's identity, creating it on first start. Returns (node id, cluster id).
pub fn load_or_init(dir: &Path, config: &BrokerConfig) -> anyhow::Result<(i32, String)> {
    load_identity(dir, config).map(|(n, c, _)| (n, c))
}

/// As [`load_or_init`], with the directory's id (KIP-858), which a broker registers with the
/// controller. A directory formatted before Samsa wrote one gets a new id per start.
pub fn load_identity(
    dir: &Path,
    config: &BrokerConfig,
) -> anyhow::Result<(i32, String, uuid::Uuid)> {
    let path = dir.join(FILE);
    let node_id = config.node_id();
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let props = parse_properties(&text);
            let get = |k: &str| {
                props
                    .iter()
                    .find(|(_, key, _)| key == k)
                    .map(|(_, _, v)| v.clone())
            };
            let stored_cluster = get("cluster.id")
                .ok_or_else(|| anyhow::anyhow!("{} has no cluster.id", path.display()))?;
            let stored_node: i32 = get("node.id")
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| anyhow::anyhow!("{} has no valid node.id", path.display()))?;
            if let Some(want) = config.get("cluster.id") {
                if want != stored_cluster {
                    anyhow::bail!(
                        "cluster.id={want} does not match cluster.id={stored_cluster} stored in {}; point log.dirs at another directory or drop the setting",
                        path.display()
                    );
                }
            }
            if stored_node != node_id {
                anyhow::bail!(
                    "node.id={node_id} does not match node.id={stored_node} stored in {}; start with --node.id={stored_node} or use another log.dirs",
                    path.display()
                );
            }
            let directory_id = get("directory.id")
                .and_then(|d| crate::controller::quorum_state::parse_kafka_uuid(&d))
                .unwrap_or_else(uuid::Uuid::new_v4);
            Ok((node_id, stored_cluster, directory_id))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let several_voters = config
                .list("controller.quorum.voters")
                .iter()
                .filter(|v| !v.trim().is_empty())
                .count()
                > 1;
            let cluster_id = match config.get("cluster.id") {
                Some(id) => id,
                // Kafka formats every node of a cluster with one id; a node that made up its
                // own would be refused by every other (INCONSISTENT_CLUSTER_ID).
                None if several_voters => anyhow::bail!(
                    "cluster.id: a new node of a cluster of several voters needs the cluster's id; start every node with the same --cluster.id (a new one: --cluster.id={})",
                    new_cluster_id()
                ),
                None => new_cluster_id(),
            };
            let directory = uuid::Uuid::new_v4();
            let directory_id = crate::controller::quorum_state::kafka_uuid_string(&directory);
            let text = format!(
                "#\n#Written by samsa {}\ncluster.id={cluster_id}\ndirectory.id={directory_id}\nnode.id={node_id}\nversion=1\n",
                env!("CARGO_PKG_VERSION")
            );
            crate::topics::write_atomically(dir, FILE, text.as_bytes())?;
            tracing::info!(cluster_id = %cluster_id, node_id, "formatted new log directory");
            Ok((node_id, cluster_id, directory))
        }
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

/// A Kafka-style cluster id: a random UUID in URL-safe base64 without padding (22 characters).
pub fn new_cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut out = String::with_capacity(22);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in bytes {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 6 {
            bits -= 6;
            out.push(ALPHABET[((acc >> bits) & 63) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((acc << (6 - bits)) & 63) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_ids_look_like_kafkas() {
        let id = new_cluster_id();
        assert_eq!(id.len(), 22);
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    }

    #[test]
    fn a_directory_keeps_its_identity_and_refuses_another_node_id() {
        let dir = tempfile::tempdir().unwrap();
        let c = BrokerConfig::load(None, vec![], vec![]).unwrap();
        let (node, cluster) = load_or_init(dir.path(), &c).unwrap();
        assert_eq!(load_or_init(dir.path(), &c).unwrap(), (node, cluster));
        let other = BrokerConfig::load(None, vec![], vec![("node.id".into(), "7".into())]).unwrap();
        let err = load_or_init(dir.path(), &other).unwrap_err().to_string();
        assert!(err.contains("node.id=7"), "{err}");
    }
}
