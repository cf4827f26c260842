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
                // The voters name the cluster; bootstrap servers are only some of its
                // controllers, so the id must come from the user (Kafka formats every node
                // with it).
                None if !config
                    .list("controller.quorum.bootstrap.servers")
                    .iter()
                    .all(|s| s.trim().is_empty())
                    && config.list("controller.quorum.voters").is_empty() =>
                {
                    anyhow::bail!(
                        "cluster.id: a new node given controller.quorum.bootstrap.servers must be given the cluster's id (`samsa cluster info` shows it; it is in meta.properties of every node)"
                    )
                }
                // Kafka formats every node of a cluster with one id first; here the nodes
                // that share a voter set derive the same one from it, so that the start
                // command is the only step (a node that made up its own would be refused by
                // every other with INCONSISTENT_CLUSTER_ID).
                None if several_voters => {
                    cluster_id_for_voters(&config.list("controller.quorum.voters"))
                }
                None => new_cluster_id(),
            };
            let directory = uuid::Uuid::new_v4();
            let directory_id = crate::controller::quorum_state::kafka_uuid_string(&directory);
            let text = format!(
                "#\n#Written by samsa {}\ncluster.id={cluster_id}\ndirectory.id={directory_id}\nnode.id={node_id}\nversion=1\n",
                env!("CARGO_PKG_VERSION")
            );
            crate::util::write_atomically(dir, FILE, text.as_bytes())?;
            tracing::info!(cluster_id = %cluster_id, node_id, "formatted new log directory");
            Ok((node_id, cluster_id, directory))
        }
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

/// A Kafka-style cluster id: a random UUID in URL-safe base64 without padding (22 characters).
pub fn new_cluster_id() -> String {
    encode_cluster_id(uuid::Uuid::new_v4().into_bytes())
}

/// The cluster id every node of a voter set derives alike: a hash of the voters (sorted,
/// spaces removed), as a version-8 UUID in Kafka's cluster-id form. Not secret and not meant to
/// be: it only keeps nodes of different clusters from talking to each other.
pub fn cluster_id_for_voters(voters: &[String]) -> String {
    let mut entries: Vec<String> = voters
        .iter()
        .map(|v| {
            v.chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_lowercase()
        })
        .filter(|v| !v.is_empty())
        .collect();
    entries.sort();
    let text = entries.join(",");
    // Two FNV-1a hashes with different offset bases: 128 bits, stable across builds.
    let fnv = |basis: u64| {
        text.bytes().fold(basis, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let (hi, lo) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142));
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_be_bytes());
    bytes[8..].copy_from_slice(&lo.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8: custom
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    encode_cluster_id(bytes)
}

fn encode_cluster_id(bytes: [u8; 16]) -> String {
    samsa_storage::kafka_uuid_string(bytes)
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
    fn the_nodes_of_a_voter_set_derive_one_cluster_id() {
        let a = cluster_id_for_voters(&["1@h:1".into(), "2@h:2".into(), "3@h:3".into()]);
        let b = cluster_id_for_voters(&["3@h:3".into(), " 1@H:1".into(), "2@h:2".into()]);
        assert_eq!(a, b, "order, case and spaces do not matter");
        assert_eq!(a.len(), 22);
        let c = cluster_id_for_voters(&["1@h:1".into(), "2@h:2".into(), "3@h:4".into()]);
        assert_ne!(a, c);
        let dir = tempfile::tempdir().unwrap();
        let voters = (
            "controller.quorum.voters".to_string(),
            "1@h:1,2@h:2,3@h:3".to_string(),
        );
        let c = BrokerConfig::load(None, vec![], vec![voters]).unwrap();
        assert_eq!(load_or_init(dir.path(), &c).unwrap().1, a);
    }

    #[test]
    fn a_node_that_knows_only_bootstrap_servers_needs_the_cluster_id() {
        let dir = tempfile::tempdir().unwrap();
        let bootstrap = (
            "controller.quorum.bootstrap.servers".to_string(),
            "127.0.0.1:9093".to_string(),
        );
        let c = BrokerConfig::load(None, vec![], vec![bootstrap.clone()]).unwrap();
        let err = load_or_init(dir.path(), &c).unwrap_err().to_string();
        assert!(err.contains("must be given the cluster's id"), "{err}");
        let id = (
            "cluster.id".to_string(),
            "MkU3OEVBNTcwNTJENDM2Qg".to_string(),
        );
        let c = BrokerConfig::load(None, vec![], vec![bootstrap, id]).unwrap();
        assert_eq!(
            load_or_init(dir.path(), &c).unwrap().1,
            "MkU3OEVBNTcwNTJENDM2Qg"
        );
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
