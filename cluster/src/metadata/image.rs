//! The metadata image: the cluster's state as of some offset of `__cluster_metadata`, built by
//! applying records in log order, and what every broker serves Metadata (and the rest) from.
//!
//! Semantics follow Kafka's `MetadataDelta` and the `image` classes (`ClusterDelta`,
//! `TopicsDelta`/`TopicDelta`, `PartitionRegistration.merge`, `ConfigurationsDelta`,
//! `FeaturesDelta`, `AclsDelta`, `ScramDelta`, `ProducerIdsDelta`):
//! - a `PartitionChangeRecord` field that is absent leaves that part of the partition unchanged;
//!   a leader change (anything but `NO_LEADER_CHANGE`, -2) bumps the leader epoch, and every
//!   change bumps the partition epoch;
//! - `RemoveTopicRecord` removes the topic, its partitions and its topic configs;
//! - a `ConfigRecord` with a null value deletes the key; a resource left with no keys goes;
//! - `FeatureLevelRecord` level 0 removes a feature other than `metadata.version`;
//! - fence/unfence/registration-change records must name a registered broker at its epoch.
//!
//! A record that references something missing (or is otherwise inconsistent with the image) is
//! an [`ImageError`] and leaves the image unchanged: [`MetadataImage::apply`] validates before
//! it mutates.
//!
//! Transactions (KIP-868, `BeginTransactionRecord` .. `EndTransactionRecord`/
//! `AbortTransactionRecord`) are markers here: making a transaction's records visible at once, or
//! not at all, is the loader's job (it applies them to a clone and publishes on end).
//!
//! ## Sharing and memory
//! Every large collection is a [`PersistentMap`] of `Arc`s and the small ones are `Arc`ed, so
//! cloning an image is O(shards) and building the next image from a batch of records copies
//! only the shards and topics the batch touches. A broker holds an `Arc<MetadataImage>`, builds
//! the next with [`MetadataImage::with_records`], and swaps the `Arc`; a Metadata request for
//! all topics iterates the image it holds without copying it.
//!
//! Measured (`bytes_per_partition_of_100_000_single_partition_topics`, run with `--ignored`):
//! 375 heap bytes per single-partition, 3-replica topic with an 11-byte name (the topic, its
//! partition and both indexes), i.e. ~37.5 MB for 100,000 topics.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use super::pmap::PersistentMap;
use super::records::*;

/// `ConfigResource.Type` id of a topic (Kafka's `ConfigResource.Type.TOPIC`).
pub const CONFIG_RESOURCE_TOPIC: i8 = 2;
/// `ConfigResource.Type` id of a broker; the name "" is the cluster-wide broker default.
pub const CONFIG_RESOURCE_BROKER: i8 = 4;
/// `ConfigResource.Type` id of a broker's log4j loggers (KIP-412): set on the broker itself,
/// never in the metadata log.
pub const CONFIG_RESOURCE_BROKER_LOGGER: i8 = 8;
/// `ConfigResource.Type` id of a client-metrics subscription (KIP-714).
pub const CONFIG_RESOURCE_CLIENT_METRICS: i8 = 16;
/// `ConfigResource.Type` id of a consumer or share group (KIP-848, KIP-932).
pub const CONFIG_RESOURCE_GROUP: i8 = 32;
/// The feature whose level is the metadata version (KIP-778).
pub const METADATA_VERSION_FEATURE: &str = "metadata.version";

/// Why a record could not be applied to the image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("cannot {action} broker {broker_id}: it is not registered")]
    BrokerNotRegistered {
        broker_id: i32,
        action: &'static str,
    },
    #[error("cannot {action} broker {broker_id}: record epoch {record_epoch}, registered epoch {broker_epoch}")]
    BrokerEpochMismatch {
        broker_id: i32,
        action: &'static str,
        record_epoch: i64,
        broker_epoch: i64,
    },
    #[error("BrokerRegistrationChangeRecord: unknown {field} value {value}")]
    InvalidBrokerChange { field: &'static str, value: i8 },
    #[error("topic id {0} already exists")]
    TopicIdExists(Uuid),
    #[error("topic name {0:?} already exists with another id")]
    TopicNameExists(String),
    #[error("no topic with id {0}")]
    UnknownTopicId(Uuid),
    #[error("no topic named {0:?}")]
    UnknownTopicName(String),
    #[error("topic {topic_id} has no partition {partition_id}")]
    UnknownPartition { topic_id: Uuid, partition_id: i32 },
    #[error("partition {topic_id}:{partition_id}: invalid leader recovery state {value}")]
    InvalidLeaderRecoveryState {
        topic_id: Uuid,
        partition_id: i32,
        value: i8,
    },
    #[error(
        "partition {topic_id}:{partition_id}: {directories} directories for {replicas} replicas"
    )]
    DirectoriesMismatch {
        topic_id: Uuid,
        partition_id: i32,
        replicas: usize,
        directories: usize,
    },
    #[error("no ACL with id {0}")]
    UnknownAcl(Uuid),
    #[error("no SCRAM credential for user {name:?} mechanism {mechanism}")]
    UnknownScramCredential { name: String, mechanism: i8 },
    #[error("next producer id {next} is below the current {current}")]
    ProducerIdWentBackwards { current: i64, next: i64 },
}

/// A registered broker (Kafka's `BrokerRegistration`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistration {
    pub id: i32,
    pub epoch: i64,
    pub incarnation_id: Uuid,
    pub listeners: Vec<BrokerEndpoint>,
    pub supported_features: Vec<BrokerFeature>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
    pub is_migrating_zk_broker: bool,
    /// Online log directories (KIP-858).
    pub directories: Vec<Uuid>,
}

/// A registered controller (Kafka's `ControllerRegistration`, KIP-919).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRegistration {
    pub id: i32,
    pub incarnation_id: Uuid,
    pub zk_migration_ready: bool,
    pub listeners: Vec<ControllerEndpoint>,
    pub supported_features: Vec<ControllerFeature>,
}

/// One partition's state (Kafka's `PartitionRegistration`). Boxed slices rather than `Vec`s:
/// 16 bytes each, and empty ones do not allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRegistration {
    pub partition_id: i32,
    pub replicas: Box<[i32]>,
    /// One per replica; empty means every replica's directory is `MIGRATING` (nil uuid), which
    /// is what Kafka fills in for a record without directories (pre-KIP-858).
    pub directories: Box<[Uuid]>,
    pub isr: Box<[i32]>,
    pub removing_replicas: Box<[i32]>,
    pub adding_replicas: Box<[i32]>,
    pub leader: i32,
    /// 0 recovered, 1 recovering from an unclean election.
    pub leader_recovery_state: i8,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// Eligible leader replicas (KIP-966).
    pub elr: Box<[i32]>,
    pub last_known_elr: Box<[i32]>,
}

/// A topic and its partitions, sorted by partition id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: Arc<str>,
    pub id: Uuid,
    partitions: Vec<PartitionRegistration>,
}

impl TopicImage {
    pub fn partitions(&self) -> &[PartitionRegistration] {
        &self.partitions
    }

    pub fn partition(&self, partition_id: i32) -> Option<&PartitionRegistration> {
        self.partitions
            .binary_search_by_key(&partition_id, |p| p.partition_id)
            .ok()
            .map(|i| &self.partitions[i])
    }

    fn upsert(&mut self, p: PartitionRegistration) {
        match self
            .partitions
            .binary_search_by_key(&p.partition_id, |q| q.partition_id)
        {
            Ok(i) => self.partitions[i] = p,
            Err(i) => {
                // Single-partition topics dominate a 100k-topic cluster: do not let the first
                // push reserve room for four.
                if self.partitions.len() < 4 {
                    self.partitions.reserve_exact(1);
                }
                self.partitions.insert(i, p);
            }
        }
    }
}

/// The resource a config belongs to (Kafka's `ConfigResource`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfigResource {
    pub resource_type: i8,
    pub resource_name: String,
}

/// An ACL (Kafka's `StandardAcl`), with the byte codes of its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

/// A user's SCRAM credential for one mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Bytes,
    pub stored_key: Bytes,
    pub server_key: Bytes,
    pub iterations: i32,
}

/// A client quota entity (KIP-546): its parts by entity type (`client-id`, `ip`, `user`),
/// each named or, as `None`, that type's default. Kafka orders nothing here; a map makes the
/// same entity one key however a request listed its parts.
pub type ClientQuotaEntity = BTreeMap<String, Option<String>>;

/// The record that sets (or, with `remove`, removes) `key` of `entity`.
pub fn client_quota_record(
    entity: &ClientQuotaEntity,
    key: &str,
    value: f64,
    remove: bool,
) -> ClientQuotaRecord {
    ClientQuotaRecord {
        entity: entity
            .iter()
            .map(|(t, n)| ClientQuotaEntityData {
                entity_type: t.clone(),
                entity_name: n.clone(),
            })
            .collect(),
        key: key.to_string(),
        value,
        remove,
        ..Default::default()
    }
}

/// A quota's value; equal by its bits, so images compare.
#[derive(Debug, Clone, Copy)]
pub struct QuotaValue(pub f64);

impl PartialEq for QuotaValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for QuotaValue {}

/// The metadata image. See the module doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataImage {
    metadata_version: Option<i16>,
    features: Arc<BTreeMap<String, i16>>,
    brokers: Arc<BTreeMap<i32, BrokerRegistration>>,
    controllers: Arc<BTreeMap<i32, ControllerRegistration>>,
    topics_by_id: PersistentMap<Uuid, Arc<TopicImage>>,
    topic_ids_by_name: PersistentMap<Arc<str>, Uuid>,
    configs: PersistentMap<ConfigResource, Arc<BTreeMap<String, String>>>,
    acls: PersistentMap<Uuid, Arc<Acl>>,
    scram: Arc<BTreeMap<(i8, String), ScramCredential>>,
    client_quotas: Arc<BTreeMap<ClientQuotaEntity, BTreeMap<String, QuotaValue>>>,
    next_producer_id: i64,
}

impl Default for MetadataImage {
    fn default() -> Self {
        MetadataImage {
            metadata_version: None,
            features: Arc::default(),
            brokers: Arc::default(),
            controllers: Arc::default(),
            topics_by_id: PersistentMap::default(),
            topic_ids_by_name: PersistentMap::default(),
            configs: PersistentMap::default(),
            acls: PersistentMap::default(),
            scram: Arc::default(),
            client_quotas: Arc::default(),
            // Kafka's ProducerIdsImage.EMPTY: no block handed out yet.
            next_producer_id: -1,
        }
    }
}

fn boxed(v: &[i32]) -> Box<[i32]> {
    v.into()
}

/// Kafka's `defaultToMigrating`: no directories, or all `MIGRATING`, is stored as empty.
fn directories(v: &[Uuid]) -> Box<[Uuid]> {
    if v.iter().all(|d| d.is_nil()) {
        Box::default()
    } else {
        v.into()
    }
}

fn check_leader_recovery_state(
    topic_id: Uuid,
    partition_id: i32,
    value: i8,
) -> Result<(), ImageError> {
    if value == 0 || value == 1 {
        Ok(())
    } else {
        Err(ImageError::InvalidLeaderRecoveryState {
            topic_id,
            partition_id,
            value,
        })
    }
}

impl MetadataImage {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new image: this one with `records` applied in order. `self` is untouched (and stays
    /// valid for readers); the result shares everything the records did not change.
    pub fn with_records<'a>(
        &self,
        records: impl IntoIterator<Item = &'a MetadataRecord>,
    ) -> Result<MetadataImage, ImageError> {
        let mut next = self.clone();
        for r in records {
            next.apply(r)?;
        }
        Ok(next)
    }

    // ----- reads -----

    /// The finalized `metadata.version` level, if one has been set.
    pub fn metadata_version(&self) -> Option<i16> {
        self.metadata_version
    }
    /// Finalized levels of features other than `metadata.version`.
    pub fn features(&self) -> &BTreeMap<String, i16> {
        &self.features
    }
    pub fn brokers(&self) -> &BTreeMap<i32, BrokerRegistration> {
        &self.brokers
    }
    pub fn broker(&self, id: i32) -> Option<&BrokerRegistration> {
        self.brokers.get(&id)
    }
    pub fn controllers(&self) -> &BTreeMap<i32, ControllerRegistration> {
        &self.controllers
    }
    pub fn topic_count(&self) -> usize {
        self.topics_by_id.len()
    }
    /// Every topic, in no particular order, without copying.
    pub fn topics(&self) -> impl Iterator<Item = &Arc<TopicImage>> {
        self.topics_by_id.values()
    }
    pub fn topic_by_id(&self, id: &Uuid) -> Option<&Arc<TopicImage>> {
        self.topics_by_id.get(id)
    }
    pub fn topic_by_name(&self, name: &str) -> Option<&Arc<TopicImage>> {
        self.topic_ids_by_name
            .get(name)
            .and_then(|id| self.topics_by_id.get(id))
    }
    /// The config keys set on `resource` (empty if none).
    pub fn configs(
        &self,
        resource_type: i8,
        resource_name: &str,
    ) -> Option<&BTreeMap<String, String>> {
        self.configs
            .get(&ConfigResource {
                resource_type,
                resource_name: resource_name.to_owned(),
            })
            .map(|m| &**m)
    }
    /// Every resource that has configs, with them, in no particular order. O(resources).
    pub fn config_resources(
        &self,
    ) -> impl Iterator<Item = (&ConfigResource, &BTreeMap<String, String>)> {
        self.configs.iter().map(|(r, m)| (r, &**m))
    }
    pub fn acls(&self) -> impl Iterator<Item = (&Uuid, &Arc<Acl>)> {
        self.acls.iter()
    }
    /// Whether `other` has the same ACLs: cheap when one image was made from the other by
    /// records that left the ACLs alone (their shards are shared).
    pub fn same_acls(&self, other: &MetadataImage) -> bool {
        self.acls == other.acls
    }
    pub fn scram_credential(&self, mechanism: i8, name: &str) -> Option<&ScramCredential> {
        self.scram.get(&(mechanism, name.to_owned()))
    }
    /// Every SCRAM credential as `(mechanism, user, credential)`, by mechanism then user.
    pub fn scram_credentials(&self) -> impl Iterator<Item = (i8, &str, &ScramCredential)> {
        self.scram.iter().map(|((m, u), c)| (*m, u.as_str(), c))
    }
    /// The client quotas (KIP-546): each entity with at least one quota, and its quotas by key.
    pub fn client_quotas(&self) -> &Arc<BTreeMap<ClientQuotaEntity, BTreeMap<String, QuotaValue>>> {
        &self.client_quotas
    }
    /// The first producer id of the next block to hand out, or -1 before the first block.
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }

    // ----- apply -----

    fn broker_at_epoch(
        &self,
        broker_id: i32,
        epoch: i64,
        action: &'static str,
    ) -> Result<&BrokerRegistration, ImageError> {
        let b = self
            .brokers
            .get(&broker_id)
            .ok_or(ImageError::BrokerNotRegistered { broker_id, action })?;
        if b.epoch != epoch {
            return Err(ImageError::BrokerEpochMismatch {
                broker_id,
                action,
                record_epoch: epoch,
                broker_epoch: b.epoch,
            });
        }
        Ok(b)
    }

    fn topic_mut(&mut self, id: &Uuid) -> Result<&mut TopicImage, ImageError> {
        self.topics_by_id
            .get_mut(id)
            .map(Arc::make_mut)
            .ok_or(ImageError::UnknownTopicId(*id))
    }

    /// Applies one record. On error the image is unchanged.
    pub fn apply(&mut self, record: &MetadataRecord) -> Result<(), ImageError> {
        use MetadataRecord as M;
        match record {
            M::RegisterBroker(r) => {
                let b = BrokerRegistration {
                    id: r.broker_id,
                    epoch: r.broker_epoch,
                    incarnation_id: r.incarnation_id,
                    listeners: r.end_points.iter().map(strip_endpoint).collect(),
                    supported_features: r.features.iter().map(strip_feature).collect(),
                    rack: r.rack.clone(),
                    fenced: r.fenced,
                    in_controlled_shutdown: r.in_controlled_shutdown,
                    is_migrating_zk_broker: r.is_migrating_zk_broker,
                    directories: r.log_dirs.clone(),
                };
                Arc::make_mut(&mut self.brokers).insert(r.broker_id, b);
            }
            M::UnregisterBroker(r) => {
                self.broker_at_epoch(r.broker_id, r.broker_epoch, "unregister")?;
                Arc::make_mut(&mut self.brokers).remove(&r.broker_id);
            }
            M::FenceBroker(r) => {
                self.broker_at_epoch(r.id, r.epoch, "fence")?;
                if let Some(b) = Arc::make_mut(&mut self.brokers).get_mut(&r.id) {
                    b.fenced = true;
                }
            }
            M::UnfenceBroker(r) => {
                self.broker_at_epoch(r.id, r.epoch, "unfence")?;
                if let Some(b) = Arc::make_mut(&mut self.brokers).get_mut(&r.id) {
                    b.fenced = false;
                }
            }
            M::BrokerRegistrationChange(r) => {
                self.broker_at_epoch(r.broker_id, r.broker_epoch, "change")?;
                // BrokerRegistrationFencingChange: -1 unfence, 0 none, 1 fence.
                let fenced = match r.fenced {
                    -1 => Some(false),
                    0 => None,
                    1 => Some(true),
                    value => {
                        return Err(ImageError::InvalidBrokerChange {
                            field: "Fenced",
                            value,
                        })
                    }
                };
                // BrokerRegistrationInControlledShutdownChange: 0 none, 1 in shutdown.
                let ics = match r.in_controlled_shutdown {
                    0 => None,
                    1 => Some(true),
                    value => {
                        return Err(ImageError::InvalidBrokerChange {
                            field: "InControlledShutdown",
                            value,
                        })
                    }
                };
                if let Some(b) = Arc::make_mut(&mut self.brokers).get_mut(&r.broker_id) {
                    if let Some(f) = fenced {
                        b.fenced = f;
                    }
                    if let Some(i) = ics {
                        b.in_controlled_shutdown = i;
                    }
                    if !r.log_dirs.is_empty() {
                        b.directories = r.log_dirs.clone();
                    }
                }
            }
            M::RegisterController(r) => {
                let c = ControllerRegistration {
                    id: r.controller_id,
                    incarnation_id: r.incarnation_id,
                    zk_migration_ready: r.zk_migration_ready,
                    listeners: r.end_points.iter().map(strip_endpoint).collect(),
                    supported_features: r.features.iter().map(strip_feature).collect(),
                };
                Arc::make_mut(&mut self.controllers).insert(r.controller_id, c);
            }
            M::Topic(r) => {
                if self.topics_by_id.contains_key(&r.topic_id) {
                    return Err(ImageError::TopicIdExists(r.topic_id));
                }
                if self.topic_ids_by_name.contains_key(r.name.as_str()) {
                    return Err(ImageError::TopicNameExists(r.name.clone()));
                }
                let name: Arc<str> = r.name.as_str().into();
                self.topic_ids_by_name.insert(name.clone(), r.topic_id);
                self.topics_by_id.insert(
                    r.topic_id,
                    Arc::new(TopicImage {
                        name,
                        id: r.topic_id,
                        partitions: Vec::new(),
                    }),
                );
            }
            M::Partition(r) => {
                check_leader_recovery_state(r.topic_id, r.partition_id, r.leader_recovery_state)?;
                if !r.directories.is_empty() && r.directories.len() != r.replicas.len() {
                    return Err(ImageError::DirectoriesMismatch {
                        topic_id: r.topic_id,
                        partition_id: r.partition_id,
                        replicas: r.replicas.len(),
                        directories: r.directories.len(),
                    });
                }
                let p = PartitionRegistration {
                    partition_id: r.partition_id,
                    replicas: boxed(&r.replicas),
                    directories: directories(&r.directories),
                    isr: boxed(&r.isr),
                    removing_replicas: boxed(&r.removing_replicas),
                    adding_replicas: boxed(&r.adding_replicas),
                    leader: r.leader,
                    leader_recovery_state: r.leader_recovery_state,
                    leader_epoch: r.leader_epoch,
                    partition_epoch: r.partition_epoch,
                    elr: boxed(r.eligible_leader_replicas.as_deref().unwrap_or(&[])),
                    last_known_elr: boxed(r.last_known_elr.as_deref().unwrap_or(&[])),
                };
                self.topic_mut(&r.topic_id)?.upsert(p);
            }
            M::PartitionChange(r) => self.apply_partition_change(r)?,
            M::RemoveTopic(r) => {
                let topic = self
                    .topics_by_id
                    .remove(&r.topic_id)
                    .ok_or(ImageError::UnknownTopicId(r.topic_id))?;
                self.topic_ids_by_name.remove(&*topic.name);
                self.configs.remove(&ConfigResource {
                    resource_type: CONFIG_RESOURCE_TOPIC,
                    resource_name: topic.name.to_string(),
                });
            }
            M::ClearElr(r) => {
                let ids: Vec<Uuid> = if r.topic_name.is_empty() {
                    self.topics_by_id
                        .iter()
                        .filter(|(_, t)| {
                            t.partitions
                                .iter()
                                .any(|p| !p.elr.is_empty() || !p.last_known_elr.is_empty())
                        })
                        .map(|(id, _)| *id)
                        .collect()
                } else {
                    vec![*self
                        .topic_ids_by_name
                        .get(r.topic_name.as_str())
                        .ok_or_else(|| ImageError::UnknownTopicName(r.topic_name.clone()))?]
                };
                for id in ids {
                    let topic = self.topic_mut(&id)?;
                    for p in &mut topic.partitions {
                        // As a PartitionChangeRecord clearing both would: bump the epoch.
                        if !p.elr.is_empty() || !p.last_known_elr.is_empty() {
                            p.elr = Box::default();
                            p.last_known_elr = Box::default();
                            p.partition_epoch = p.partition_epoch.wrapping_add(1);
                        }
                    }
                }
            }
            M::Config(r) => {
                let key = ConfigResource {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                };
                match &r.value {
                    Some(v) => {
                        let mut m = self.configs.get(&key).cloned().unwrap_or_default();
                        Arc::make_mut(&mut m).insert(r.name.clone(), v.clone());
                        self.configs.insert(key, m);
                    }
                    None => {
                        if let Some(m) = self.configs.get_mut(&key) {
                            Arc::make_mut(m).remove(&r.name);
                            if m.is_empty() {
                                self.configs.remove(&key);
                            }
                        }
                    }
                }
            }
            M::AccessControlEntry(r) => {
                let acl = Acl {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                    pattern_type: r.pattern_type,
                    principal: r.principal.clone(),
                    host: r.host.clone(),
                    operation: r.operation,
                    permission_type: r.permission_type,
                };
                self.acls.insert(r.id, Arc::new(acl));
            }
            M::RemoveAccessControlEntry(r) => {
                self.acls
                    .remove(&r.id)
                    .ok_or(ImageError::UnknownAcl(r.id))?;
            }
            M::UserScramCredential(r) => {
                let c = ScramCredential {
                    salt: r.salt.clone(),
                    stored_key: r.stored_key.clone(),
                    server_key: r.server_key.clone(),
                    iterations: r.iterations,
                };
                Arc::make_mut(&mut self.scram).insert((r.mechanism, r.name.clone()), c);
            }
            M::RemoveUserScramCredential(r) => {
                let key = (r.mechanism, r.name.clone());
                if !self.scram.contains_key(&key) {
                    return Err(ImageError::UnknownScramCredential {
                        name: r.name.clone(),
                        mechanism: r.mechanism,
                    });
                }
                Arc::make_mut(&mut self.scram).remove(&key);
            }
            M::ClientQuota(r) => {
                let entity: ClientQuotaEntity = r
                    .entity
                    .iter()
                    .map(|e| (e.entity_type.clone(), e.entity_name.clone()))
                    .collect();
                let quotas = Arc::make_mut(&mut self.client_quotas);
                if r.remove {
                    // Removing a quota that is not set is no error (Kafka's ClientQuotasDelta).
                    if let Some(keys) = quotas.get_mut(&entity) {
                        keys.remove(&r.key);
                        if keys.is_empty() {
                            quotas.remove(&entity);
                        }
                    }
                } else {
                    quotas
                        .entry(entity)
                        .or_default()
                        .insert(r.key.clone(), QuotaValue(r.value));
                }
            }
            M::FeatureLevel(r) => {
                if r.name == METADATA_VERSION_FEATURE {
                    self.metadata_version = Some(r.feature_level);
                } else if r.feature_level == 0 {
                    Arc::make_mut(&mut self.features).remove(&r.name);
                } else {
                    Arc::make_mut(&mut self.features).insert(r.name.clone(), r.feature_level);
                }
            }
            M::ProducerIds(r) => {
                // The controller only hands out blocks upwards (ProducerIdControlManager).
                if r.next_producer_id < self.next_producer_id {
                    return Err(ImageError::ProducerIdWentBackwards {
                        current: self.next_producer_id,
                        next: r.next_producer_id,
                    });
                }
                self.next_producer_id = r.next_producer_id;
            }
            M::NoOp(_)
            | M::ZkMigrationState(_)
            | M::BeginTransaction(_)
            | M::EndTransaction(_)
            | M::AbortTransaction(_) => {}
        }
        Ok(())
    }

    /// `PartitionRegistration.merge`: absent fields keep their value.
    fn apply_partition_change(&mut self, r: &PartitionChangeRecord) -> Result<(), ImageError> {
        let missing = ImageError::UnknownPartition {
            topic_id: r.topic_id,
            partition_id: r.partition_id,
        };
        let topic = self
            .topics_by_id
            .get(&r.topic_id)
            .ok_or(ImageError::UnknownTopicId(r.topic_id))?;
        let old = topic.partition(r.partition_id).ok_or(missing)?;
        if r.leader_recovery_state != NO_LEADER_RECOVERY_STATE_CHANGE {
            check_leader_recovery_state(r.topic_id, r.partition_id, r.leader_recovery_state)?;
        }
        let replicas = r
            .replicas
            .as_deref()
            .map(boxed)
            .unwrap_or_else(|| old.replicas.clone());
        let dirs = match &r.directories {
            None => old.directories.clone(),
            Some(d) => {
                if r.replicas.is_some() && !d.is_empty() && d.len() != replicas.len() {
                    return Err(ImageError::DirectoriesMismatch {
                        topic_id: r.topic_id,
                        partition_id: r.partition_id,
                        replicas: replicas.len(),
                        directories: d.len(),
                    });
                }
                directories(d)
            }
        };
        let (leader, leader_epoch) = if r.leader == NO_LEADER_CHANGE {
            (old.leader, old.leader_epoch)
        } else {
            (r.leader, old.leader_epoch.wrapping_add(1))
        };
        let pick = |new: &Option<Vec<i32>>, old: &[i32]| {
            new.as_deref().map(boxed).unwrap_or_else(|| old.into())
        };
        let p = PartitionRegistration {
            partition_id: r.partition_id,
            replicas,
            directories: dirs,
            isr: pick(&r.isr, &old.isr),
            removing_replicas: pick(&r.removing_replicas, &old.removing_replicas),
            adding_replicas: pick(&r.adding_replicas, &old.adding_replicas),
            leader,
            leader_recovery_state: if r.leader_recovery_state == NO_LEADER_RECOVERY_STATE_CHANGE {
                old.leader_recovery_state
            } else {
                r.leader_recovery_state
            },
            leader_epoch,
            partition_epoch: old.partition_epoch.wrapping_add(1),
            elr: pick(&r.eligible_leader_replicas, &old.elr),
            last_known_elr: pick(&r.last_known_elr, &old.last_known_elr),
        };
        self.topic_mut(&r.topic_id)?.upsert(p);
        Ok(())
    }

    // ----- snapshot -----

    /// The whole image as records, in the order Kafka's image writer uses (features first, with
    /// `metadata.version` leading, then cluster, topics, configs, producer ids, ACLs, SCRAM):
    /// what a KIP-630 snapshot holds. Applying them to an empty image gives this image back.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        if let Some(level) = self.metadata_version {
            out.push(
                FeatureLevelRecord {
                    name: METADATA_VERSION_FEATURE.into(),
                    feature_level: level,
                    ..Default::default()
                }
                .into(),
            );
        }
        for (name, level) in self.features.iter() {
            out.push(
                FeatureLevelRecord {
                    name: name.clone(),
                    feature_level: *level,
                    ..Default::default()
                }
                .into(),
            );
        }
        for b in self.brokers.values() {
            out.push(
                RegisterBrokerRecord {
                    broker_id: b.id,
                    is_migrating_zk_broker: b.is_migrating_zk_broker,
                    incarnation_id: b.incarnation_id,
                    broker_epoch: b.epoch,
                    end_points: b.listeners.clone(),
                    features: b.supported_features.clone(),
                    rack: b.rack.clone(),
                    fenced: b.fenced,
                    in_controlled_shutdown: b.in_controlled_shutdown,
                    log_dirs: b.directories.clone(),
                    unknown_tagged_fields: Default::default(),
                }
                .into(),
            );
        }
        for c in self.controllers.values() {
            out.push(
                RegisterControllerRecord {
                    controller_id: c.id,
                    incarnation_id: c.incarnation_id,
                    zk_migration_ready: c.zk_migration_ready,
                    end_points: c.listeners.clone(),
                    features: c.supported_features.clone(),
                    unknown_tagged_fields: Default::default(),
                }
                .into(),
            );
        }
        for t in self.topics_by_id.values() {
            out.push(
                TopicRecord {
                    name: t.name.to_string(),
                    topic_id: t.id,
                    ..Default::default()
                }
                .into(),
            );
            for p in &t.partitions {
                let opt = |v: &[i32]| (!v.is_empty()).then(|| v.to_vec());
                out.push(
                    PartitionRecord {
                        partition_id: p.partition_id,
                        topic_id: t.id,
                        replicas: p.replicas.to_vec(),
                        isr: p.isr.to_vec(),
                        removing_replicas: p.removing_replicas.to_vec(),
                        adding_replicas: p.adding_replicas.to_vec(),
                        leader: p.leader,
                        leader_recovery_state: p.leader_recovery_state,
                        leader_epoch: p.leader_epoch,
                        partition_epoch: p.partition_epoch,
                        directories: p.directories.to_vec(),
                        eligible_leader_replicas: opt(&p.elr),
                        last_known_elr: opt(&p.last_known_elr),
                        unknown_tagged_fields: Default::default(),
                    }
                    .into(),
                );
            }
        }
        for (resource, keys) in self.configs.iter() {
            for (name, value) in keys.iter() {
                out.push(
                    ConfigRecord {
                        resource_type: resource.resource_type,
                        resource_name: resource.resource_name.clone(),
                        name: name.clone(),
                        value: Some(value.clone()),
                        ..Default::default()
                    }
                    .into(),
                );
            }
        }
        if self.next_producer_id >= 0 {
            out.push(
                ProducerIdsRecord {
                    broker_id: -1,
                    broker_epoch: -1,
                    next_producer_id: self.next_producer_id,
                    ..Default::default()
                }
                .into(),
            );
        }
        for (id, acl) in self.acls.iter() {
            out.push(
                AccessControlEntryRecord {
                    id: *id,
                    resource_type: acl.resource_type,
                    resource_name: acl.resource_name.clone(),
                    pattern_type: acl.pattern_type,
                    principal: acl.principal.clone(),
                    host: acl.host.clone(),
                    operation: acl.operation,
                    permission_type: acl.permission_type,
                    ..Default::default()
                }
                .into(),
            );
        }
        for ((mechanism, name), c) in self.scram.iter() {
            out.push(
                UserScramCredentialRecord {
                    name: name.clone(),
                    mechanism: *mechanism,
                    salt: c.salt.clone(),
                    stored_key: c.stored_key.clone(),
                    server_key: c.server_key.clone(),
                    iterations: c.iterations,
                    ..Default::default()
                }
                .into(),
            );
        }
        for (entity, keys) in self.client_quotas.iter() {
            for (key, value) in keys {
                out.push(client_quota_record(entity, key, value.0, false).into());
            }
        }
        out
    }
}

/// The image keeps no unknown tagged fields: they belong to the log, not the state.
fn strip_endpoint(e: &BrokerEndpoint) -> BrokerEndpoint {
    BrokerEndpoint {
        unknown_tagged_fields: Default::default(),
        ..e.clone()
    }
}

fn strip_feature(f: &BrokerFeature) -> BrokerFeature {
    BrokerFeature {
        unknown_tagged_fields: Default::default(),
        ..f.clone()
    }
}
