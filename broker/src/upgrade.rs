//! What a node kept in files of its own before the metadata log held it, imported into the
//! metadata log on its first start under a release that has the log, so that no user loses a
//! topic, a config, an ACL or a credential to the upgrade.
//!
//! - Topics (`samsa-topics.json`: the user's, and the internal `__consumer_offsets` and
//!   `__transaction_state`) become topics of the cluster with the same ids, names, partition
//!   counts and configs, every partition placed on this node; the publisher then adopts the logs
//!   already on disk. Idempotent: a topic the image already has under the same id is not asked
//!   for again, and one whose name the cluster already uses for another topic stays this node's
//!   own, with a warning, until an operator deletes one of them.
//! - Dynamic configs (`samsa-dynamic-configs.json`): this node's broker layer, the cluster-wide
//!   default and the group configs, as IncrementalAlterConfigs SETs.
//! - ACLs (`samsa-acls.json`), as CreateAcls.
//! - SCRAM credentials (`samsa-scram-credentials.json`, which kept the salted passwords), as
//!   AlterUserScramCredentials upsertions: the controller derives the StoredKey and ServerKey
//!   from each salted password as it does for a client's.
//!
//! Producer ids this node handed out itself are skipped by the blocks the controller gives
//! (`txn::producer_ids`).
//!
//! Each file is imported once: `samsa-metadata-imported.json` names the files whose contents
//! the metadata log took, so that a restart does not bring back what was changed or deleted
//! since (an ACL an operator removed must stay removed). The files are never written again, only
//! read by the import (left for a downgrade); a file whose import failed (no controller within
//! the timeout) is tried again on the next start. With several nodes, each imports its own files
//! and the last one wins where they disagree.
//!
//! The import runs once the broker is registered and unfenced (placement needs a live broker),
//! before a single node serves and in the background on a node of a larger cluster.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use samsa_cluster::controller::{
    AlterConfigOp, AlterableConfig, CreatableTopic, IncrementalAlterConfigsResource,
    ScramCredentialUpsertion, ScramMechanism, MAX_PARTITIONS_PER_REQUEST, MAX_RECORDS_PER_USER_OP,
};
use samsa_cluster::metadata::image::{CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_GROUP};
use serde::{Deserialize, Serialize};

use crate::acl::AclBinding;
use crate::config::dynamic::LegacyDynamicConfigs;
use crate::controller::active::{ControllerReply, ControllerRequest, ControllerResult, ReplyError};
use crate::node::Node;

/// How long one import request may take.
const IMPORT_TIMEOUT: Duration = Duration::from_secs(30);
/// The files whose contents the metadata log took.
const IMPORTED_FILE: &str = "samsa-metadata-imported.json";

/// Imports everything this node kept in its own files that the metadata log does not have yet.
pub async fn import(node: &Node) {
    if node.topics.all().iter().any(|t| !t.managed) {
        import_topics(node).await;
    }
    let dir = node.log_dir();
    let mut imported = Imported::read(&dir);
    let before = imported.files.len();
    imported
        .import_file(
            crate::config::dynamic::LEGACY_FILE,
            "dynamic configs",
            || LegacyDynamicConfigs::read(&dir, &node.config),
            |configs| import_dynamic_configs(node, configs),
        )
        .await;
    imported
        .import_file(
            crate::acl::legacy::LEGACY_FILE,
            "ACLs",
            || crate::acl::legacy::read(&dir),
            |bindings| import_acls(node, bindings),
        )
        .await;
    imported
        .import_file(
            crate::scram::LEGACY_FILE,
            "SCRAM credentials",
            || crate::scram::read_legacy(&dir),
            |upsertions| import_scram_credentials(node, upsertions),
        )
        .await;
    if imported.files.len() > before {
        if let Err(e) = imported.write(&dir) {
            tracing::warn!(error = %e, "cannot record which files were imported; the next start imports them again");
        }
        // Answered once this broker follows what it imported.
        crate::metadata_wait::caught_up(node, IMPORT_TIMEOUT).await;
    }
}

/// `samsa-metadata-imported.json`.
#[derive(Serialize, Deserialize, Default)]
struct Imported {
    files: BTreeSet<String>,
}

impl Imported {
    fn read(dir: &Path) -> Imported {
        match std::fs::read(dir.join(IMPORTED_FILE)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "{IMPORTED_FILE} is corrupt: importing every file again");
                Imported::default()
            }),
            Err(_) => Imported::default(),
        }
    }

    fn write(&self, dir: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).expect("serialisable");
        crate::util::write_atomically(dir, IMPORTED_FILE, &bytes)
    }

    /// Imports `file` unless it was: `read` gives its contents (`None` without a file) and
    /// `import` hands them to the controller, returning how many items the metadata log took
    /// (those it refused are logged and left out), or why it must be tried again.
    async fn import_file<T, F>(
        &mut self,
        file: &str,
        what: &str,
        read: impl FnOnce() -> anyhow::Result<Option<T>>,
        import: impl FnOnce(T) -> F,
    ) where
        F: std::future::Future<Output = Result<usize, String>>,
    {
        if self.files.contains(file) {
            return;
        }
        let outcome = match read() {
            Ok(Some(contents)) => import(contents).await.map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(None) => {}
            Ok(Some(items)) => {
                tracing::info!(
                    file,
                    items,
                    "{what} imported into the metadata log: they are the cluster's now, and the file is only read from now on (never written; left for a downgrade)"
                );
                self.files.insert(file.to_string());
            }
            Err(e) => {
                tracing::warn!(file, error = %e, "cannot import {what} into the metadata log now; the next start tries again");
            }
        }
    }
}

/// Asks the controller, with the import's patience.
async fn ask(node: &Node, request: ControllerRequest) -> ControllerResult {
    node.controller
        .request_retrying(request, IMPORT_TIMEOUT)
        .await
}

/// `samsa-acls.json`: CreateAcls of at most `MAX_RECORDS_PER_USER_OP` bindings a request (one
/// that exists already is created once, as CreateAcls does).
async fn import_acls(node: &Node, bindings: Vec<AclBinding>) -> Result<usize, String> {
    let mut imported = 0;
    for batch in bindings.chunks(MAX_RECORDS_PER_USER_OP) {
        match ask(node, ControllerRequest::CreateAcls(batch.to_vec())).await {
            Ok(ControllerReply::CreateAcls(results)) => {
                for (b, r) in batch.iter().zip(results) {
                    if r.error_code == 0 {
                        imported += 1;
                    } else {
                        tracing::warn!(acl = ?b, code = r.error_code, message = ?r.error_message, "the metadata log refused an imported ACL; it is left out");
                    }
                }
            }
            Ok(other) => return Err(format!("unexpected answer {other:?}")),
            Err(ReplyError { code, message }) => return Err(format!("error {code}: {message}")),
        }
    }
    Ok(imported)
}

/// Users per AlterUserScramCredentials request of the import.
const SCRAM_USERS_PER_REQUEST: usize = 1_000;

/// `samsa-scram-credentials.json`: upsertions of at most `SCRAM_USERS_PER_REQUEST` users a
/// request, each request with one mechanism (a user may be altered once per request).
async fn import_scram_credentials(
    node: &Node,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Result<usize, String> {
    let mut imported = 0;
    for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        let of_mechanism: Vec<ScramCredentialUpsertion> = upsertions
            .iter()
            .filter(|u| u.mechanism == mechanism.code())
            .cloned()
            .collect();
        for batch in of_mechanism.chunks(SCRAM_USERS_PER_REQUEST) {
            let request = ControllerRequest::AlterUserScramCredentials {
                deletions: Vec::new(),
                upsertions: batch.to_vec(),
            };
            match ask(node, request).await {
                Ok(ControllerReply::AlterUserScramCredentials(results)) => {
                    for r in results {
                        if r.error_code == 0 {
                            imported += 1;
                        } else {
                            tracing::warn!(user = %r.user, mechanism = mechanism.name(), code = r.error_code, message = ?r.error_message, "the metadata log refused an imported SCRAM credential; it is left out");
                        }
                    }
                }
                Ok(other) => return Err(format!("unexpected answer {other:?}")),
                Err(ReplyError { code, message }) => {
                    return Err(format!("error {code}: {message}"))
                }
            }
        }
    }
    Ok(imported)
}

/// `samsa-dynamic-configs.json`: this node's layer (its node id), the cluster default ("") and
/// the group configs, as SETs, at most `MAX_RECORDS_PER_USER_OP` keys a request.
async fn import_dynamic_configs(
    node: &Node,
    configs: LegacyDynamicConfigs,
) -> Result<usize, String> {
    let set = |resource_type, name: &str, layer: &std::collections::BTreeMap<String, String>| {
        IncrementalAlterConfigsResource {
            resource_type,
            resource_name: name.to_string(),
            configs: layer
                .iter()
                .map(|(k, v)| AlterableConfig {
                    name: k.clone(),
                    operation: AlterConfigOp::Set as i8,
                    value: Some(v.clone()),
                })
                .collect(),
        }
    };
    let mut resources = vec![
        set(
            CONFIG_RESOURCE_BROKER,
            &node.node_id.to_string(),
            &configs.broker,
        ),
        set(CONFIG_RESOURCE_BROKER, "", &configs.cluster_default),
    ];
    resources.extend(
        configs
            .groups
            .iter()
            .map(|(g, layer)| set(CONFIG_RESOURCE_GROUP, g, layer)),
    );
    resources.retain(|r| !r.configs.is_empty());
    let mut batches: Vec<Vec<IncrementalAlterConfigsResource>> = vec![Vec::new()];
    let mut keys = 0;
    for r in resources {
        if keys + r.configs.len() > MAX_RECORDS_PER_USER_OP && keys > 0 {
            batches.push(Vec::new());
            keys = 0;
        }
        keys += r.configs.len();
        batches.last_mut().expect("one batch").push(r);
    }
    let mut imported = 0;
    for batch in batches.into_iter().filter(|b| !b.is_empty()) {
        let request = ControllerRequest::IncrementalAlterConfigs {
            resources: batch,
            validate_only: false,
        };
        match ask(node, request).await {
            Ok(ControllerReply::AlterConfigs(results)) => {
                for r in results {
                    if r.error_code == 0 {
                        imported += 1;
                    } else {
                        tracing::warn!(resource_type = r.resource_type, resource = %r.resource_name, code = r.error_code, message = ?r.error_message, "the metadata log refused an imported dynamic config; it is left out");
                    }
                }
            }
            Ok(other) => return Err(format!("unexpected answer {other:?}")),
            Err(ReplyError { code, message }) => return Err(format!("error {code}: {message}")),
        }
    }
    Ok(imported)
}

/// Imports this node's own topics; returns how many the metadata log took.
pub async fn import_topics(node: &Node) -> usize {
    let image = node.controller.image();
    let mut batches: Vec<Vec<CreatableTopic>> = vec![Vec::new()];
    let mut partitions_in_batch = 0usize;
    for t in node.topics.all().into_iter().filter(|t| !t.managed) {
        if image.topic_by_id(&t.id).is_some() {
            continue;
        }
        if let Some(other) = image.topic_by_name(&t.name) {
            tracing::warn!(
                topic = %t.name,
                id = %t.id,
                cluster_id_of_name = %other.id,
                "this node's own topic has the name of another topic of the cluster: it stays this node's alone (delete one of them to resolve it)"
            );
            continue;
        }
        let count = t.partition_count.max(0) as usize;
        if partitions_in_batch + count > MAX_PARTITIONS_PER_REQUEST && partitions_in_batch > 0 {
            batches.push(Vec::new());
            partitions_in_batch = 0;
        }
        partitions_in_batch += count;
        batches.last_mut().expect("one batch").push(CreatableTopic {
            name: t.name.clone(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: (0..t.partition_count)
                .map(|i| (i, vec![node.node_id]))
                .collect(),
            configs: t
                .overrides
                .read()
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
            topic_id: Some(t.id),
        });
    }
    let mut imported = Vec::new();
    for batch in batches.into_iter().filter(|b| !b.is_empty()) {
        let request = ControllerRequest::CreateTopics {
            topics: batch,
            validate_only: false,
        };
        match node
            .controller
            .request_retrying(request, IMPORT_TIMEOUT)
            .await
        {
            Ok(ControllerReply::CreateTopics(results)) => {
                for r in results {
                    if r.error_code == 0 {
                        tracing::info!(topic = %r.name, id = %r.topic_id, partitions = r.num_partitions, "imported this node's topic into the metadata log");
                        imported.push(r.topic_id);
                    } else {
                        tracing::warn!(topic = %r.name, code = r.error_code, message = ?r.error_message, "cannot import this node's topic into the metadata log; it stays this node's alone");
                    }
                }
            }
            other => {
                tracing::warn!(answer = ?other.err(), "cannot import this node's topics into the metadata log now; the next start tries again")
            }
        }
    }
    // Answered once the logs are adopted here, so that the broker serves them as the cluster's.
    crate::metadata_wait::wait_for_image(
        &node.controller,
        IMPORT_TIMEOUT.as_millis() as u64,
        |image| imported.iter().all(|id| image.topic_by_id(id).is_some()),
    )
    .await;
    crate::metadata_wait::caught_up(node, IMPORT_TIMEOUT).await;
    imported.len()
}
