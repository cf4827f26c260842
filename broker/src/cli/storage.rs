//! `samsa storage format --standalone`: prepares the log directory of the first controller of
//! a dynamic metadata quorum (KIP-853, kraft.version 1), as Kafka's `kafka-storage format
//! --standalone` does: `meta.properties` (cluster id, node id, directory id) and the bootstrap
//! checkpoint naming this node the only voter, with its controller listener. The node is then
//! started with `controller.quorum.bootstrap.servers`; other controllers start the same way
//! without formatting, follow as observers, and join with `samsa cluster add-controller`.
//!
//! Nothing else needs a format step: a node with `controller.quorum.voters` (a fixed voter
//! set) or none (a quorum of one) formats itself at its first start.

use samsa_cluster::quorum::{VoterEndpoint, VoterNode, VoterSet};

use crate::config::BrokerConfig;
use crate::controller::settings::KraftConfig;

/// Formats the node `config` describes; returns what was done, for the user.
pub fn format_standalone(config: &BrokerConfig) -> anyhow::Result<String> {
    let kraft = KraftConfig::from_config(config)?;
    if kraft.quorum.dynamic.is_none() {
        anyhow::bail!(
            "format --standalone starts a dynamic metadata quorum (KIP-853): give this node \
             process.roles with controller, its controller listener, and \
             controller.quorum.bootstrap.servers (its own controller address), not \
             controller.quorum.voters"
        );
    }
    let listener = kraft
        .listener
        .clone()
        .ok_or_else(|| anyhow::anyhow!("controller.listener.names: no controller listener"))?;
    // Where the others reach it: the advertised address of the controller listener, if any.
    let listener = config
        .advertised_listeners()
        .into_iter()
        .find(|l| l.name.eq_ignore_ascii_case(&listener.name))
        .unwrap_or(listener);
    if listener.host.is_empty() || listener.host == "0.0.0.0" || listener.host == "::" {
        anyhow::bail!(
            "the {} listener's host '{}' cannot be reached by other controllers: give it a \
             host in listeners or advertised.listeners",
            listener.name,
            listener.host
        );
    }
    let dir = config.log_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create log.dirs {}: {e}", dir.display()))?;
    let mut config = config.clone();
    if config.get("cluster.id").is_none() && !dir.join("meta.properties").exists() {
        config.set(
            "cluster.id",
            &crate::meta::new_cluster_id(),
            "format --standalone",
        )?;
    }
    let (node_id, cluster_id, directory_id) = crate::meta::load_identity(&dir, &config)?;
    let voter = VoterNode {
        id: node_id,
        directory_id,
        endpoints: vec![VoterEndpoint {
            name: listener.name.clone(),
            host: listener.host.clone(),
            port: listener.port,
        }],
    };
    let set: VoterSet = [(node_id, voter)].into_iter().collect();
    let path = crate::controller::store::write_bootstrap_checkpoint(&dir, &set)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(format!(
        "formatted {} for cluster {cluster_id}: node {node_id} (directory {}) is the only voter \
         of a new dynamic metadata quorum, at {}://{}:{} ({})",
        dir.display(),
        crate::controller::quorum_state::kafka_uuid_string(&directory_id),
        listener.name,
        listener.host,
        listener.port,
        path.display()
    ))
}
