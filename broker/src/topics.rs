//! The topics this broker hosts: names, ids, partitions and per-topic config overrides,
//! persisted in `samsa-topics.json` in the log directory (written atomically: temp file,
//! fsync, rename, fsync the directory), beside the partition logs themselves.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use parking_lot::{Mutex, RwLock};
use samsa_storage::{LogDir, TopicPartition};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::config::topic::{self as topic_config, TopicOverrides};
use crate::config::BrokerConfig;
use crate::partition::{Partition, Transition};

const METADATA_FILE: &str = "samsa-topics.json";
/// Upper bound on partitions of one topic (Kafka has none, but a typo must not create a
/// million directories).
pub const PARTITIONS_PER_TOPIC_MAX: i32 = 10_000;

pub struct Topic {
    pub name: String,
    /// `name` as responses carry it: clones share one buffer instead of copying the name.
    pub wire_name: StrBytes,
    pub id: Uuid,
    /// The partitions this node hosts, in index order: all of them for a topic only this node
    /// knows, those placed on this node for a topic of the metadata image.
    pub partitions: Vec<Arc<Partition>>,
    /// How many partitions the topic has in the cluster (at least `partitions.len()`).
    pub partition_count: i32,
    pub overrides: RwLock<TopicOverrides>,
    /// Whether the topic comes from the metadata image (created through the controller), so
    /// that it follows the image; else only this node knows it (internal topics, topics
    /// created before the metadata log held topics).
    pub managed: bool,
}

/// The share coordinator's topic (KIP-932), where share-partitions' delivery states are kept.
pub const SHARE_STATE_TOPIC: &str = "__share_group_state";

/// Kafka's internal topics: created by their coordinators, never by a client's Metadata request.
/// Other names starting with `__` are ordinary topics to Kafka (`Topic.isInternal`).
pub fn is_internal_topic(name: &str) -> bool {
    name.starts_with("__consumer_offsets")
        || name == "__transaction_state"
        || name == SHARE_STATE_TOPIC
}

impl Topic {
    pub fn is_internal(&self) -> bool {
        is_internal_topic(&self.name)
    }
    /// The hosted partition `index`, if this node has it.
    pub fn partition(&self, index: i32) -> Option<&Arc<Partition>> {
        if self.partitions.len() == self.partition_count as usize {
            return usize::try_from(index)
                .ok()
                .and_then(|i| self.partitions.get(i));
        }
        self.partitions
            .binary_search_by_key(&index, |p| p.tp.partition)
            .ok()
            .map(|i| &self.partitions[i])
    }

    /// Whether the topic has partition `index` in the cluster (hosted here or not).
    pub fn has_partition(&self, index: i32) -> bool {
        (0..self.partition_count).contains(&index)
    }

    /// The partition `index` if this node leads it, else why not: a partition the topic does
    /// not have is UNKNOWN_TOPIC_OR_PARTITION, one another broker leads (or none does)
    /// NOT_LEADER_OR_FOLLOWER, which clients answer by refreshing their metadata.
    pub fn led_partition(&self, index: i32) -> Result<&Arc<Partition>, ResponseError> {
        match self.partition(index) {
            Some(p) if p.is_leader() => Ok(p),
            Some(_) => Err(ResponseError::NotLeaderOrFollower),
            None if (0..self.partition_count).contains(&index) => {
                Err(ResponseError::NotLeaderOrFollower)
            }
            None => Err(ResponseError::UnknownTopicOrPartition),
        }
    }

    /// The partition `index` if this node hosts one of its replicas, leader or follower (a
    /// consumer's fetch of Fetch v11+ may read from any, KIP-392), else why not, as
    /// [`Topic::led_partition`] says it.
    pub fn replica_partition(&self, index: i32) -> Result<&Arc<Partition>, ResponseError> {
        match self.partition(index) {
            Some(p) if p.is_replica() => Ok(p),
            _ => self.led_partition(index),
        }
    }
}

/// Partition `index` of `topic` if this node leads it, else why not (see
/// [`Topic::led_partition`]; no topic is UNKNOWN_TOPIC_OR_PARTITION).
pub fn led_partition(
    topic: Option<&Arc<Topic>>,
    index: i32,
) -> Result<&Arc<Partition>, ResponseError> {
    topic
        .ok_or(ResponseError::UnknownTopicOrPartition)
        .and_then(|t| t.led_partition(index))
}

/// Partition `index` of `topic` if this node hosts one of its replicas (see
/// [`Topic::replica_partition`]; no topic is UNKNOWN_TOPIC_OR_PARTITION). For the requests
/// that check the client's leader epoch before they require the leader, as Kafka's
/// `Partition.getLocalLog` does: a follower answers a stale epoch FENCED_LEADER_EPOCH, not
/// NOT_LEADER_OR_FOLLOWER.
pub fn replica_partition(
    topic: Option<&Arc<Topic>>,
    index: i32,
) -> Result<&Arc<Partition>, ResponseError> {
    topic
        .ok_or(ResponseError::UnknownTopicOrPartition)
        .and_then(|t| t.replica_partition(index))
}

/// A topic as the metadata image has it, for this node: what [`TopicRegistry::install`] makes
/// the local state match.
#[derive(Debug, Clone)]
pub struct ImageTopic {
    pub name: String,
    pub id: Uuid,
    pub partition_count: i32,
    /// The partitions placed on this node, by index, with their leadership.
    pub hosted: Vec<(i32, crate::partition::Leadership)>,
    pub overrides: TopicOverrides,
}

/// Why a topic operation was refused; each maps to one Kafka error code.
#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("topic '{0}' already exists")]
    AlreadyExists(String),
    #[error("topic '{0}' does not exist")]
    Unknown(String),
    #[error("{0}")]
    InvalidName(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidConfig(String),
    #[error("{0}")]
    Storage(#[from] samsa_storage::LogError),
    #[error("cannot write topic metadata: {0}")]
    Io(#[from] std::io::Error),
}

impl TopicError {
    pub fn code(&self) -> i16 {
        use kafka_protocol::ResponseError as E;
        let e = match self {
            TopicError::AlreadyExists(_) => E::TopicAlreadyExists,
            TopicError::Unknown(_) => E::UnknownTopicOrPartition,
            TopicError::InvalidName(_) => E::InvalidTopicException,
            TopicError::InvalidPartitions(_) => E::InvalidPartitions,
            TopicError::InvalidReplicationFactor(_) => E::InvalidReplicationFactor,
            TopicError::InvalidConfig(_) => E::InvalidConfig,
            TopicError::Storage(_) | TopicError::Io(_) => E::KafkaStorageError,
        };
        e.code()
    }
}

#[derive(Serialize, Deserialize, Default)]
struct MetadataFile {
    version: u32,
    /// How many metadata changes this file has taken since the directory was formatted: the
    /// offset a single node's metadata quorum reports (DescribeQuorum).
    #[serde(default)]
    changes: i64,
    topics: Vec<TopicRecord>,
}

#[derive(Serialize, Deserialize, Clone)]
struct TopicRecord {
    name: String,
    id: Uuid,
    /// The topic's partition count.
    partitions: i32,
    #[serde(default)]
    configs: TopicOverrides,
}

pub struct TopicRegistry {
    topics: RwLock<HashMap<String, Arc<Topic>>>,
    by_id: RwLock<HashMap<Uuid, Arc<Topic>>>,
    log_dir: LogDir,
    dir: PathBuf,
    /// The effective broker configuration (static and dynamic): topic defaults come from it.
    broker: RwLock<BrokerConfig>,
    /// Serialises create/delete/alter so the metadata file and the logs agree.
    admin: Mutex<()>,
    /// Metadata changes committed to the file (`MetadataFile::changes`).
    changes: AtomicI64,
    /// Bumped after every change, for those waiting for one (a CreateTopics waits for the
    /// controller's topics to be installed here).
    generation: tokio::sync::watch::Sender<u64>,
    /// Partition logs found on disk that no topic of the file claims: those of the metadata
    /// image's topics, which the publisher claims as it installs them (their
    /// `partition.metadata` names the topic id), until the image is known complete; what is
    /// left then is a stray.
    orphans: Mutex<HashMap<TopicPartition, samsa_storage::UnopenedLog>>,
    /// Topics of the metadata image this node hosts partitions of but could not create their
    /// logs for (a storage error, say): id -> why. CreateTopics reports it per topic.
    install_failures: Mutex<HashMap<Uuid, String>>,
}

impl TopicRegistry {
    /// Opens the log directory, recovering every partition log, and matches logs to topics.
    /// `broker` is the effective configuration (dynamic broker configs included).
    pub fn open(dir: &Path, broker: &BrokerConfig) -> anyhow::Result<TopicRegistry> {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create log.dirs {}: {e}", dir.display()))?;
        let meta: MetadataFile = match std::fs::read(dir.join(METADATA_FILE)) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                anyhow::anyhow!("{} is corrupt: {e}", dir.join(METADATA_FILE).display())
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => MetadataFile {
                version: 1,
                changes: 0,
                topics: vec![],
            },
            Err(e) => anyhow::bail!("cannot read {}: {e}", dir.join(METADATA_FILE).display()),
        };
        let records: HashMap<String, TopicRecord> = meta
            .topics
            .into_iter()
            .map(|t| (t.name.clone(), t))
            .collect();
        // The logs of the topics in the file are opened now; the others wait, unopened, for
        // the metadata image to claim them (a stray is never read).
        let (log_dir, logs, unopened) = LogDir::open_some(
            dir,
            |tp| match records.get(&tp.topic) {
                Some(r) => topic_config::log_config(broker, &r.configs),
                None => topic_config::log_config(broker, &TopicOverrides::new()),
            },
            |tp| records.contains_key(&tp.topic),
        )?;
        let mut found: HashMap<TopicPartition, samsa_storage::Log> = logs.into_iter().collect();
        let registry = TopicRegistry {
            topics: RwLock::new(HashMap::new()),
            by_id: RwLock::new(HashMap::new()),
            log_dir,
            dir: dir.to_path_buf(),
            broker: RwLock::new(broker.clone()),
            admin: Mutex::new(()),
            changes: AtomicI64::new(meta.changes),
            generation: tokio::sync::watch::channel(0).0,
            orphans: Mutex::new(HashMap::new()),
            install_failures: Mutex::new(HashMap::new()),
        };
        for r in records.values() {
            let config = topic_config::log_config(broker, &r.configs);
            let mut partitions = Vec::with_capacity(r.partitions.max(0) as usize);
            for i in 0..r.partitions {
                let tp = TopicPartition::new(r.name.clone(), i);
                let log = match found.remove(&tp) {
                    Some(log) => log,
                    None => {
                        tracing::warn!(
                            "partition {tp} has no log directory; creating an empty one"
                        );
                        registry.log_dir.create_log(&tp, config.clone())?
                    }
                };
                partitions.push(Arc::new(Partition::new(tp, r.id, log, 0)));
            }
            let topic = Arc::new(Topic {
                name: r.name.clone(),
                wire_name: StrBytes::from_string(r.name.clone()),
                id: r.id,
                partitions,
                partition_count: r.partitions,
                overrides: RwLock::new(r.configs.clone()),
                managed: false,
            });
            registry.insert(topic);
        }
        for (tp, _) in found {
            // A partition directory of a topic in the file beyond its partition count.
            tracing::warn!(partition = %tp, "the log directory belongs to no partition of its topic; left untouched");
        }
        if !unopened.is_empty() {
            tracing::info!(
                partitions = unopened.len(),
                "partition logs wait for the metadata image to name their topics"
            );
        }
        *registry.orphans.lock() = unopened.into_iter().map(|u| (u.tp.clone(), u)).collect();
        Ok(registry)
    }

    fn insert(&self, topic: Arc<Topic>) {
        self.by_id.write().insert(topic.id, topic.clone());
        self.topics.write().insert(topic.name.clone(), topic);
    }

    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().get(name).cloned()
    }

    pub fn get_by_id(&self, id: &Uuid) -> Option<Arc<Topic>> {
        self.by_id.read().get(id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Topic>> {
        let mut v: Vec<_> = self.topics.read().values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Changes whenever a topic is created, deleted or changed here.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    pub fn log_dir(&self) -> &LogDir {
        &self.log_dir
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Checks a CreateTopics request without creating anything.
    pub fn validate_new(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        overrides: &TopicOverrides,
    ) -> Result<(), TopicError> {
        if !samsa_storage::is_valid_topic_name(name) {
            return Err(TopicError::InvalidName(format!(
                "topic name '{name}' is illegal: it must be 1 to 249 characters of [a-zA-Z0-9._-] and not '.' or '..'"
            )));
        }
        if self.topics.read().contains_key(name) {
            return Err(TopicError::AlreadyExists(name.to_string()));
        }
        if let Some(other) = self
            .topics
            .read()
            .keys()
            .find(|t| t.as_str() != name && t.replace('.', "_") == name.replace('.', "_"))
        {
            return Err(TopicError::InvalidName(format!(
                "topic '{name}' collides with existing topic '{other}' ('.' and '_' are interchangeable in metric names)"
            )));
        }
        if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(&partitions) {
            return Err(TopicError::InvalidPartitions(format!(
                "number of partitions must be between 1 and {PARTITIONS_PER_TOPIC_MAX}, got {partitions}"
            )));
        }
        if replication_factor != 1 {
            return Err(TopicError::InvalidReplicationFactor(format!(
                "replication factor: {replication_factor} larger than available brokers: 1"
            )));
        }
        topic_config::validate_overrides(&self.broker.read(), overrides)
            .map_err(TopicError::InvalidConfig)?;
        Ok(())
    }

    /// Creates a topic (after [`validate_new`](Self::validate_new)'s checks).
    pub fn create(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        overrides: TopicOverrides,
    ) -> Result<Arc<Topic>, TopicError> {
        let _admin = self.admin.lock();
        self.validate_new(name, partitions, replication_factor, &overrides)?;
        let id = Uuid::new_v4();
        let config = topic_config::log_config(&self.broker.read(), &overrides);
        let mut parts = Vec::with_capacity(partitions as usize);
        for i in 0..partitions {
            let tp = TopicPartition::new(name, i);
            let log = self.log_dir.create_log(&tp, config.clone())?;
            parts.push(Arc::new(Partition::new(tp, id, log, 0)));
        }
        let topic = Arc::new(Topic {
            name: name.to_string(),
            wire_name: StrBytes::from_string(name.to_string()),
            id,
            partitions: parts,
            partition_count: partitions,
            overrides: RwLock::new(overrides),
            managed: false,
        });
        self.insert(topic.clone());
        self.persist()?;
        tracing::info!(topic = name, partitions, "created topic");
        Ok(topic)
    }

    /// The topic `name`, created with `partitions` and `overrides` if it does not exist yet
    /// (internal topics, which Kafka creates on first use). Concurrent callers get the same
    /// topic.
    pub fn get_or_create(
        &self,
        name: &str,
        partitions: i32,
        overrides: TopicOverrides,
    ) -> Result<Arc<Topic>, TopicError> {
        if let Some(t) = self.get(name) {
            return Ok(t);
        }
        match self.create(name, partitions, 1, overrides) {
            Err(TopicError::AlreadyExists(_)) => self
                .get(name)
                .ok_or_else(|| TopicError::Unknown(name.to_string())),
            other => other,
        }
    }

    /// Deletes a topic and its logs.
    pub fn delete(&self, name: &str) -> Result<Uuid, TopicError> {
        let _admin = self.admin.lock();
        let topic = self
            .topics
            .write()
            .remove(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        self.by_id.write().remove(&topic.id);
        self.persist()?;
        for p in &topic.partitions {
            p.delete_log(&self.log_dir)?;
        }
        tracing::info!(topic = name, "deleted topic");
        Ok(topic.id)
    }

    /// Grows a topic to `total` partitions.
    pub fn add_partitions(
        &self,
        name: &str,
        total: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _admin = self.admin.lock();
        let topic = self
            .get(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        if topic.managed {
            return Err(TopicError::InvalidPartitions(format!(
                "topic '{name}' belongs to the metadata log: its partitions are added through the controller"
            )));
        }
        let current = topic.partition_count;
        if total <= current {
            return Err(TopicError::InvalidPartitions(format!(
                "topic '{name}' currently has {current} partitions, {total} would not be an increase"
            )));
        }
        if total > PARTITIONS_PER_TOPIC_MAX {
            return Err(TopicError::InvalidPartitions(format!(
                "number of partitions must be at most {PARTITIONS_PER_TOPIC_MAX}"
            )));
        }
        if validate_only {
            return Ok(());
        }
        let overrides = topic.overrides.read().clone();
        let config = topic_config::log_config(&self.broker.read(), &overrides);
        let mut parts = topic.partitions.clone();
        for i in current..total {
            let tp = TopicPartition::new(name, i);
            let log = self.log_dir.create_log(&tp, config.clone())?;
            parts.push(Arc::new(Partition::new(tp, topic.id, log, 0)));
        }
        let grown = Arc::new(Topic {
            name: topic.name.clone(),
            wire_name: topic.wire_name.clone(),
            id: topic.id,
            partitions: parts,
            partition_count: total,
            overrides: RwLock::new(overrides),
            managed: false,
        });
        self.insert(grown);
        self.persist()?;
        tracing::info!(topic = name, partitions = total, "added partitions");
        Ok(())
    }

    /// Makes the local state of a topic of the metadata image match it: creates the topic or
    /// the logs of partitions newly placed here, and takes each hosted partition's leadership
    /// and the topic's configs. A topic of the same name but another id, which the image
    /// replaced while this node was away, is deleted first. A topic only this node knows is
    /// left alone and refused (an image topic cannot take its name).
    /// A partition no longer placed here (a reassignment moved it away) stops following and,
    /// with `delete_moved`, is deleted with its log, as Kafka's `StopReplica` with
    /// `deletePartition` does; without it (the image may be older than what this node last
    /// knew, see `publisher::publish`), it is kept, inactive, until a complete image says.
    /// Returns the hosted partitions whose replica fetching must change.
    pub fn install(
        &self,
        want: &ImageTopic,
        me: i32,
        replica_lag_time_max_ms: u64,
        now_ms: u64,
        delete_moved: bool,
    ) -> Result<Vec<(Arc<Partition>, Transition)>, TopicError> {
        let mut transitions = Vec::new();
        let _admin = self.admin.lock();
        let existing = self.get(&want.name);
        let adopted = existing
            .as_ref()
            .is_some_and(|t| !t.managed && t.id == want.id);
        let current = match existing {
            Some(t) if !t.managed && t.id != want.id => {
                return Err(TopicError::AlreadyExists(format!(
                "{} (a topic only this node knows has the name of the metadata image's topic {})",
                want.name, want.id
            )))
            }
            // This node's own topic, imported into the metadata log (`upgrade.rs`): its logs
            // are the cluster topic's now.
            Some(t) if !t.managed => Some(t),
            Some(t) if t.id != want.id => {
                tracing::info!(topic = %want.name, old = %t.id, new = %want.id, "the topic was replaced while this node was away: deleting the old one");
                self.remove_locked(&t)?;
                None
            }
            other => other,
        };
        let config = topic_config::log_config(&self.broker.read(), &want.overrides);
        let mut parts: Vec<Arc<Partition>> = Vec::with_capacity(want.hosted.len());
        let mut changed = current.is_none() || adopted;
        if adopted {
            // The file stops holding the topic: its directories say whose they are.
            for p in current.iter().flat_map(|t| t.partitions.iter()) {
                self.log_dir
                    .write_partition_metadata(&p.tp, want.id.into_bytes())?;
            }
        }
        // All of the partitions new here or none: a storage failure midway (a full disk, no
        // file handles) removes the directories this call made, so no stray is left behind,
        // and says which partition failed and why. Logs are opened and leaderships applied on
        // a few threads (`num.recovery.threads.per.data.dir`): at start, or for a topic of
        // thousands of partitions, that is fsyncs of leader-epoch checkpoints one after another.
        let threads = self
            .broker
            .read()
            .int("num.recovery.threads.per.data.dir")
            .max(1) as usize;
        let outcomes = crate::util::parallel_map(&want.hosted, threads, |(index, role)| {
            let index = *index;
            debug_assert!((0..want.partition_count).contains(&index));
            let existing = current.as_ref().and_then(|t| t.partition(index)).cloned();
            let (p, new, fresh) = match existing {
                Some(p) => (p, false, false),
                None => {
                    let tp = TopicPartition::new(want.name.as_str(), index);
                    let (log, fresh) = self
                        .claim_log(&tp, want.id, config.clone())
                        .map_err(|e| (tp.clone(), e))?;
                    let p = Arc::new(Partition::new_replica(tp, want.id, log, role.leader_epoch));
                    (p, true, fresh)
                }
            };
            let t = p
                .apply_leadership(me, role, replica_lag_time_max_ms, now_ms)
                .map_err(TopicError::from);
            Ok((p, new, fresh, t))
        });
        let mut created: Vec<Arc<Partition>> = Vec::new();
        let mut failed: Option<(TopicPartition, TopicError)> = None;
        for outcome in outcomes {
            match outcome {
                Ok((p, new, fresh, t)) => {
                    changed |= new;
                    if fresh {
                        created.push(p.clone());
                    }
                    match t {
                        Ok(Transition::Unchanged) => {}
                        Ok(t) => transitions.push((p.clone(), t)),
                        Err(e) => {
                            failed.get_or_insert((p.tp.clone(), e));
                        }
                    }
                    parts.push(p);
                }
                Err((tp, e)) => {
                    failed.get_or_insert((tp, e));
                }
            }
        }
        if let Some((tp, e)) = failed {
            self.undo_created(&tp, &created, &e);
            return Err(e);
        }
        parts.sort_by_key(|p| p.tp.partition);
        if let Some(t) = &current {
            // Partitions no longer placed here: a reassignment moved them away (the image
            // never removes a partition from a topic).
            for p in &t.partitions {
                if parts
                    .binary_search_by_key(&p.tp.partition, |x| x.tp.partition)
                    .is_err()
                {
                    p.resign();
                    transitions.push((p.clone(), Transition::StoppedFollowing));
                    if delete_moved && t.managed {
                        p.delete_log(&self.log_dir)?;
                        tracing::info!(partition = %p.tp, "deleted the partition: a reassignment moved it off this broker");
                    } else {
                        parts.push(p.clone());
                    }
                }
            }
            parts.sort_by_key(|p| p.tp.partition);
            if *t.overrides.read() != want.overrides {
                *t.overrides.write() = want.overrides.clone();
                for p in &parts {
                    p.set_config(config.clone());
                }
                changed = true;
            }
            changed |=
                t.partition_count != want.partition_count || t.partitions.len() != parts.len();
        }
        if !changed {
            return Ok(transitions);
        }
        let created = current.is_none();
        self.insert(Arc::new(Topic {
            name: want.name.clone(),
            wire_name: StrBytes::from_string(want.name.clone()),
            id: want.id,
            partitions: parts,
            partition_count: want.partition_count,
            overrides: RwLock::new(want.overrides.clone()),
            managed: true,
        }));
        if adopted {
            self.persist()?;
        } else {
            self.changed();
        }
        if created {
            tracing::info!(topic = %want.name, id = %want.id, partitions = want.partition_count, hosted = want.hosted.len(), "created topic");
        }
        Ok(transitions)
    }

    /// Records that installing the image's topic `id` here failed (`Some(why)`) or worked.
    pub fn note_install(&self, id: Uuid, failure: Option<String>) {
        let mut failures = self.install_failures.lock();
        let changed = match failure {
            Some(why) => failures.insert(id, why).is_none(),
            None => failures.remove(&id).is_some(),
        };
        drop(failures);
        if changed {
            self.changed();
        }
    }

    pub fn has_install_failures(&self) -> bool {
        !self.install_failures.lock().is_empty()
    }

    /// Why installing the image's topic `id` here failed, if it did.
    pub fn install_failure(&self, id: &Uuid) -> Option<String> {
        self.install_failures.lock().get(id).cloned()
    }

    /// Removes the partitions one `install` created before `failed` failed with `e`.
    fn undo_created(&self, failed: &TopicPartition, created: &[Arc<Partition>], e: &TopicError) {
        tracing::warn!(partition = %failed, error = %e, removed = created.len(), "cannot create the partition's log here: removing the partitions of its topic created with it");
        for p in created {
            if let Err(e) = p.delete_log(&self.log_dir) {
                tracing::warn!(partition = %p.tp, error = %e, "cannot remove a partition created with one that failed");
            }
        }
    }

    /// The topics this node has from the metadata image: (name, id).
    pub fn managed(&self) -> Vec<(String, Uuid)> {
        self.topics
            .read()
            .values()
            .filter(|t| t.managed)
            .map(|t| (t.name.clone(), t.id))
            .collect()
    }

    /// Deletes the metadata image's topic `id` here (the image removed it).
    pub fn remove_managed(&self, id: &Uuid) -> Result<(), TopicError> {
        let _admin = self.admin.lock();
        let Some(topic) = self.get_by_id(id).filter(|t| t.managed) else {
            return Ok(());
        };
        self.remove_locked(&topic)?;
        tracing::info!(topic = %topic.name, id = %id, "deleted topic");
        Ok(())
    }

    /// The log of partition `tp` of the metadata image's topic `id`: the one on disk if its
    /// `partition.metadata` names that topic, else a new one (a directory of another topic of
    /// the same name, deleted while this node was away, is deleted first).
    fn claim_log(
        &self,
        tp: &TopicPartition,
        id: Uuid,
        config: samsa_storage::LogConfig,
    ) -> Result<(samsa_storage::Log, bool), TopicError> {
        let orphan = self.orphans.lock().remove(tp);
        if let Some(unopened) = orphan {
            match self.log_dir.read_partition_metadata(tp) {
                Ok(Some(found)) if found == id.into_bytes() => {
                    let log = self.log_dir.open_unopened(unopened, config)?;
                    return Ok((log, false));
                }
                found => {
                    let found = found
                        .ok()
                        .flatten()
                        .map(|b| Uuid::from_bytes(b).to_string())
                        .unwrap_or_else(|| "none".into());
                    tracing::warn!(partition = %tp, topic_id = %id, found_topic_id = %found, "the log on disk belongs to another topic of that name: deleting it");
                    self.log_dir.delete_partition_dir(tp)?;
                }
            }
        }
        // Fresh: made by this call, so its removal on a failure loses nothing (a directory
        // already there, from an earlier attempt whose log was dropped, may hold records).
        let fresh = !self.log_dir.path().join(tp.dir_name()).exists();
        let log = self.log_dir.create_log(tp, config)?;
        if let Err(e) = self.log_dir.write_partition_metadata(tp, id.into_bytes()) {
            if fresh {
                let _ = self.log_dir.delete_log(tp, log);
            }
            return Err(e.into());
        }
        Ok((log, fresh))
    }

    /// Partition directories on disk that no topic has claimed once the metadata image is
    /// complete: strays (a topic deleted, or a partition moved, while this node was away, or
    /// a directory made by hand). Never opened; each is logged once, taken out of the log
    /// directory at once and deleted after `file.delete.delay.ms`, as Kafka deletes strays.
    pub fn release_strays(&self) {
        let strays: Vec<samsa_storage::UnopenedLog> =
            self.orphans.lock().drain().map(|(_, u)| u).collect();
        if strays.is_empty() {
            return;
        }
        let delay_ms = topic_config::log_config(&self.broker.read(), &TopicOverrides::new())
            .file_delete_delay_ms
            .max(0) as u64;
        let mut doomed = Vec::with_capacity(strays.len());
        for stray in strays {
            let tp = stray.tp.clone();
            match self.log_dir.remove_stray(stray) {
                Ok(dir) => {
                    tracing::warn!(partition = %tp, delete_in_ms = delay_ms, "the log directory belongs to no topic of this node (a stray): deleting it");
                    doomed.push(dir);
                }
                Err(e) => {
                    tracing::warn!(partition = %tp, error = %e, "the log directory belongs to no topic of this node (a stray), and cannot be removed")
                }
            }
        }
        let delay = std::time::Duration::from_millis(delay_ms);
        if let Err(e) = samsa_storage::LogDir::delete_later(doomed, delay) {
            tracing::warn!(error = %e, "cannot start deleting strays; the next start deletes them");
        }
    }

    /// Tells those waiting that the topics changed.
    fn changed(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    /// Drops `topic` and deletes its logs; callers hold `admin`.
    fn remove_locked(&self, topic: &Arc<Topic>) -> Result<(), TopicError> {
        self.topics.write().remove(&topic.name);
        self.by_id.write().remove(&topic.id);
        if topic.managed {
            self.changed();
        } else {
            self.persist()?;
        }
        for p in &topic.partitions {
            p.delete_log(&self.log_dir)?;
        }
        Ok(())
    }

    /// Replaces a topic's overrides (validated) and applies them to its logs.
    pub fn set_overrides(
        &self,
        name: &str,
        overrides: TopicOverrides,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _admin = self.admin.lock();
        // Kafka validates the configs before it checks that the topic exists.
        topic_config::validate_overrides(&self.broker.read(), &overrides)
            .map_err(TopicError::InvalidConfig)?;
        let topic = self
            .get(name)
            .ok_or_else(|| TopicError::Unknown(name.to_string()))?;
        if validate_only {
            return Ok(());
        }
        let config = topic_config::log_config(&self.broker.read(), &overrides);
        *topic.overrides.write() = overrides;
        for p in &topic.partitions {
            p.set_config(config.clone());
        }
        self.persist()?;
        Ok(())
    }

    /// Takes a new effective broker configuration (a dynamic broker config changed, KIP-226)
    /// and applies the topic defaults it implies to every partition whose topic does not
    /// override them, as Kafka's `DynamicLogConfig` reconfigures every log.
    pub fn set_broker_config(&self, broker: BrokerConfig) {
        let _admin = self.admin.lock();
        *self.broker.write() = broker;
        let broker = self.broker.read();
        for topic in self.all() {
            let config = topic_config::log_config(&broker, &topic.overrides.read());
            for p in &topic.partitions {
                p.set_config(config.clone());
            }
        }
    }

    /// How many topic metadata changes (creations, deletions, new partitions, config
    /// overrides) this node has committed since its directory was formatted.
    pub fn metadata_changes(&self) -> i64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Writes the file with one more change; callers hold `admin`. It holds only the topics
    /// this node alone knows: the metadata image's come back from the metadata log.
    fn persist(&self) -> std::io::Result<()> {
        let mut topics: Vec<TopicRecord> = self
            .topics
            .read()
            .values()
            .filter(|t| !t.managed)
            .map(|t| TopicRecord {
                name: t.name.clone(),
                id: t.id,
                partitions: t.partition_count,
                configs: t.overrides.read().clone(),
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let changes = self.changes.load(Ordering::Acquire) + 1;
        let bytes = serde_json::to_vec_pretty(&MetadataFile {
            version: 1,
            changes,
            topics,
        })
        .expect("serialisable");
        crate::util::write_atomically(&self.dir, METADATA_FILE, &bytes)?;
        self.changes.store(changes, Ordering::Release);
        self.changed();
        Ok(())
    }
}
