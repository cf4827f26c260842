//! CreateTopics, DeleteTopics and CreatePartitions: Kafka's `ReplicationControlManager`
//! (`createTopics`, `deleteTopics`, `createPartitions`) together with the request-level checks
//! of `ControllerApis` (duplicates, `__cluster_metadata`, `delete.topic.enable`).
//!
//! Each returns its records as one atomic batch and one result per topic, in request order
//! (a name given twice gets one INVALID_REQUEST result). A topic that fails produces no records;
//! the others go ahead. A new partition's ISR is its active replicas in replica order and its
//! leader the first of them, with epochs 0 (`PartitionState::new_partition`).

use std::collections::{BTreeMap, HashMap, HashSet};

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::partitions::ImageLiveness;
use super::{
    random_uuid, Controller, ControllerError, MAX_RECORDS_PER_USER_OP,
    METADATA_VERSION_DIRECTORY_ASSIGNMENT,
};
use crate::metadata::image::{TopicImage, CONFIG_RESOURCE_TOPIC};
use crate::metadata::records::{
    ConfigRecord, MetadataRecord, PartitionRecord, RemoveTopicRecord, TopicRecord,
};
use crate::metadata::MetadataImage;
use crate::partition_change::PartitionState;
use crate::placement::{self, PlacementSpec, SplitMix64, UsableBroker};
use crate::NodeId;

/// Kafka's `MAX_PARTITIONS_PER_BATCH`: a CreateTopics asking for more partitions in total is
/// refused whole with POLICY_VIOLATION; a CreatePartitions topic that would take the request
/// past it is refused.
pub const MAX_PARTITIONS_PER_REQUEST: usize = 10_000;
/// What Kafka's controller answers a request whose records overflow its bounded list
/// (`BoundedListTooLongException`, [`MAX_RECORDS_PER_USER_OP`]).
const EXCESSIVE_BATCH_MESSAGE: &str = "Unable to perform excessively large batch operation.";
/// Kafka's `Topic.MAX_NAME_LENGTH`.
const TOPIC_NAME_LENGTH_MAX: usize = 249;
/// The metadata log's own topic, which cannot be created (`Topic.CLUSTER_METADATA_TOPIC_NAME`).
const CLUSTER_METADATA_TOPIC: &str = "__cluster_metadata";
/// Kafka's `DirectoryId.UNASSIGNED`: a replica whose directory the broker will choose.
pub(super) const DIRECTORY_UNASSIGNED: Uuid = Uuid::from_u64_pair(0, 1);

/// One topic of a CreateTopics request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopic {
    pub name: String,
    /// -1: `num.partitions`.
    pub num_partitions: i32,
    /// -1: `default.replication.factor`.
    pub replication_factor: i16,
    /// Manual assignment, `(partition_index, broker_ids)`; needs both counts at -1.
    pub assignments: Vec<(i32, Vec<NodeId>)>,
    /// Topic configs; a `None` value is refused with INVALID_CONFIG.
    pub configs: Vec<(String, Option<String>)>,
    /// The id the topic must have, or `None` for a new random one. Not Kafka's: Samsa sets
    /// it when a node imports a topic it had before the metadata log held topics, so that the
    /// topic keeps its id. An id in use (or reserved) is TOPIC_ALREADY_EXISTS.
    pub topic_id: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicResult {
    pub name: String,
    /// Nil on error.
    pub topic_id: Uuid,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// -1 on error.
    pub num_partitions: i32,
    /// -1 on error.
    pub replication_factor: i16,
}

/// A topic of a DeleteTopics request, by name (versions 0-5) or by id (6+).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TopicRef {
    Name(String),
    Id(Uuid),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTopicResult {
    pub name: Option<String>,
    pub topic_id: Uuid,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// One topic of a CreatePartitions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsTopic {
    pub name: String,
    /// The new total partition count.
    pub count: i32,
    /// One replica list per new partition, or `None` to place them.
    pub assignments: Option<Vec<Vec<NodeId>>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsResult {
    pub name: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// A per-topic refusal: code and message.
pub(super) type TopicError = (i16, String);

pub(super) fn error(e: ResponseError, message: impl Into<String>) -> TopicError {
    (e.code(), message.into())
}

/// Kafka's `Topic.validate`.
pub(super) fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let invalid = |m: String| error(ResponseError::InvalidTopicException, m);
    if name.is_empty() {
        return Err(invalid("Topic name is illegal, it can't be empty".into()));
    }
    if name == "." || name == ".." {
        return Err(invalid("Topic name cannot be \".\" or \"..\"".into()));
    }
    if name.len() > TOPIC_NAME_LENGTH_MAX {
        return Err(invalid(format!(
            "Topic name is illegal, it can't be longer than {TOPIC_NAME_LENGTH_MAX} \
             characters, topic name: {name}"
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(invalid(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        )));
    }
    Ok(())
}

/// '.' and '_' collide in metric names, so Kafka refuses a topic that differs from an existing
/// one only by them (`Topic.hasCollisionChars` / `unifyCollisionChars`). O(topics), and only for
/// names that have one.
/// A CreateTopics refused whole: POLICY_VIOLATION with `message` for every topic named, once.
fn refused_whole(topics: &[CreatableTopic], message: &str) -> Vec<CreateTopicResult> {
    let mut seen = HashSet::new();
    topics
        .iter()
        .filter(|t| seen.insert(t.name.as_str()))
        .map(|t| {
            failed_topic(
                t.name.clone(),
                error(ResponseError::PolicyViolation, message),
            )
        })
        .collect()
}

fn colliding_topic<'a>(image: &'a MetadataImage, name: &str) -> Option<&'a TopicImage> {
    if !name.contains(['.', '_']) {
        return None;
    }
    let unify = |s: &str| s.replace('.', "_");
    let unified = unify(name);
    image
        .topics()
        .find(|t| &*t.name != name && t.name.len() == name.len() && unify(&t.name) == unified)
        .map(|t| &**t)
}

/// Kafka's `usableBrokers`: registered and not in controlled shutdown, fenced or not.
fn usable_brokers(image: &MetadataImage) -> Vec<UsableBroker> {
    image
        .brokers()
        .values()
        .filter(|b| !b.in_controlled_shutdown)
        .map(|b| UsableBroker {
            id: b.id,
            rack: b.rack.clone(),
            fenced: b.fenced,
        })
        .collect()
}

/// Kafka's `ClusterDescriber.defaultDir`: a broker's only log directory, MIGRATING (nil) if
/// it registered none, else UNASSIGNED for the broker to choose.
pub(super) fn default_dir(image: &MetadataImage, broker: NodeId) -> Uuid {
    match image.broker(broker).map(|b| b.directories.as_slice()) {
        Some([]) => Uuid::nil(),
        Some([only]) => *only,
        _ => DIRECTORY_UNASSIGNED,
    }
}

/// A random topic id (see [`random_uuid`]) that no topic has.
fn topic_id(rng: &mut SplitMix64, image: &MetadataImage, taken: &HashSet<Uuid>) -> Uuid {
    loop {
        let id = random_uuid(rng);
        if !taken.contains(&id) && image.topic_by_id(&id).is_none() {
            return id;
        }
    }
}

/// The id `topic` asks for if it is free, else a new random one.
fn chosen_topic_id(
    topic: &CreatableTopic,
    rng: &mut SplitMix64,
    image: &MetadataImage,
    taken: &HashSet<Uuid>,
) -> Result<Uuid, TopicError> {
    match topic.topic_id {
        None => Ok(topic_id(rng, image, taken)),
        Some(id) => {
            let (hi, lo) = id.as_u64_pair();
            if hi == 0 && lo <= 1 || taken.contains(&id) || image.topic_by_id(&id).is_some() {
                Err(error(
                    ResponseError::TopicAlreadyExists,
                    format!("Topic id {id} is reserved or already in use."),
                ))
            } else {
                Ok(id)
            }
        }
    }
}

fn placement_seed(id: Uuid) -> u64 {
    let (hi, lo) = id.as_u64_pair();
    hi ^ lo
}

/// The `PartitionRecord`s of new partitions `first..` of `topic_id` with these replica lists.
/// `Err(partition)` if one has no active replica.
fn partition_records(
    image: &MetadataImage,
    topic_id: Uuid,
    first: i32,
    assignments: Vec<Vec<NodeId>>,
) -> Result<Vec<MetadataRecord>, i32> {
    let liveness = ImageLiveness(image);
    let directories = image
        .metadata_version()
        .is_some_and(|v| v >= METADATA_VERSION_DIRECTORY_ASSIGNMENT);
    let mut out = Vec::with_capacity(assignments.len());
    for (i, replicas) in assignments.into_iter().enumerate() {
        let partition_id = first + i as i32;
        let state = PartitionState::new_partition(replicas, &liveness).ok_or(partition_id)?;
        debug_assert!(state
            .replicas
            .iter()
            .enumerate()
            .all(|(j, r)| !state.replicas[..j].contains(r)));
        out.push(
            PartitionRecord {
                partition_id,
                topic_id,
                directories: if directories {
                    state
                        .replicas
                        .iter()
                        .map(|&r| default_dir(image, r))
                        .collect()
                } else {
                    Vec::new()
                },
                replicas: state.replicas,
                isr: state.isr,
                leader: state.leader,
                leader_epoch: state.leader_epoch,
                partition_epoch: state.partition_epoch,
                ..Default::default()
            }
            .into(),
        );
    }
    Ok(out)
}

impl Controller {
    /// CreateTopics. `seed` is the caller's randomness (topic ids and replica placement derive
    /// from it). With `validate_only` the results are the same but there are no records.
    ///
    /// Checks, in Kafka's order: more than [`MAX_PARTITIONS_PER_REQUEST`] partitions in all
    /// (POLICY_VIOLATION for every topic); a name given twice or `__cluster_metadata`
    /// (INVALID_REQUEST); an illegal name or one colliding with an existing topic over '.'/'_'
    /// (INVALID_TOPIC_EXCEPTION); an existing name (TOPIC_ALREADY_EXISTS); a null or refused
    /// config (INVALID_CONFIG); manual assignments with counts other than -1 (INVALID_REQUEST) or
    /// invalid (INVALID_REPLICA_ASSIGNMENT); a replication factor below -1 or 0
    /// (INVALID_REPLICATION_FACTOR) or one larger than the usable brokers (registered, not
    /// shutting down; fenced ones count, as in Kafka), or every usable broker fenced
    /// (INVALID_REPLICATION_FACTOR); a partition count below -1 or 0 (INVALID_PARTITIONS).
    pub fn create_topics(
        &self,
        image: &MetadataImage,
        topics: Vec<CreatableTopic>,
        validate_only: bool,
        seed: u64,
    ) -> Result<(Vec<MetadataRecord>, Vec<CreateTopicResult>), ControllerError> {
        self.check_active()?;
        let total: u64 = topics
            .iter()
            .map(|t| {
                if !t.assignments.is_empty() {
                    t.assignments.len() as u64
                } else if t.num_partitions == -1 {
                    self.cfg.default_num_partitions.max(0) as u64
                } else {
                    t.num_partitions.max(0) as u64
                }
            })
            .sum();
        if total > MAX_PARTITIONS_PER_REQUEST as u64 {
            let message = "Excessively large number of partitions per request.";
            return Ok((Vec::new(), refused_whole(&topics, message)));
        }

        let mut rng = SplitMix64(seed);
        let mut taken = HashSet::new();
        let usable = usable_brokers(image);
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(topics.len());
        let counts = name_counts(topics.iter().map(|t| t.name.as_str()));
        let mut seen = HashSet::new();
        for topic in &topics {
            if !seen.insert(topic.name.as_str()) {
                continue;
            }
            let outcome = if counts[&*topic.name] > 1 {
                Err(error(
                    ResponseError::InvalidRequest,
                    "Duplicate topic name.",
                ))
            } else {
                self.create_topic(image, topic, &usable, &mut rng, &mut taken)
            };
            results.push(match outcome {
                Ok((topic_records, result)) => {
                    records.extend(topic_records);
                    result
                }
                Err(e) => failed_topic(topic.name.clone(), e),
            });
        }
        // Kafka's controller collects the records in a list bounded at MAX_RECORDS_PER_USER_OP
        // (a topic's record, its configs' and its partitions'), validate-only too: one more
        // refuses the whole request, so 10,000 partitions in one topic already are too many.
        if records.len() > MAX_RECORDS_PER_USER_OP {
            return Ok((Vec::new(), refused_whole(&topics, EXCESSIVE_BATCH_MESSAGE)));
        }
        if validate_only {
            records.clear();
        }
        Ok((records, results))
    }

    fn create_topic(
        &self,
        image: &MetadataImage,
        topic: &CreatableTopic,
        usable: &[UsableBroker],
        rng: &mut SplitMix64,
        taken: &mut HashSet<Uuid>,
    ) -> Result<(Vec<MetadataRecord>, CreateTopicResult), TopicError> {
        let name = topic.name.as_str();
        if name == CLUSTER_METADATA_TOPIC {
            return Err(error(
                ResponseError::InvalidRequest,
                format!("Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."),
            ));
        }
        validate_topic_name(name)?;
        if let Some(other) = colliding_topic(image, name) {
            return Err(error(
                ResponseError::InvalidTopicException,
                format!(
                    "Topic '{name}' collides with existing topic: {}",
                    other.name
                ),
            ));
        }
        if image.topic_by_name(name).is_some() {
            return Err(error(
                ResponseError::TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ));
        }
        let configs = self.topic_configs(topic)?;

        let assignments = if !topic.assignments.is_empty() {
            if topic.replication_factor != -1 {
                return Err(error(
                    ResponseError::InvalidRequest,
                    "A manual partition assignment was specified, but replication factor was \
                     not set to -1.",
                ));
            }
            if topic.num_partitions != -1 {
                return Err(error(
                    ResponseError::InvalidRequest,
                    "A manual partition assignment was specified, but numPartitions was not \
                     set to -1.",
                ));
            }
            let liveness = ImageLiveness(image);
            placement::validate_create_topic_assignments(
                &topic.assignments,
                |b| image.broker(b).is_some(),
                |b| crate::partition_change::BrokerLiveness::is_active(&liveness, b),
            )
            .map_err(|e| (e.error_code(), e.to_string()))?
        } else if topic.replication_factor < -1 || topic.replication_factor == 0 {
            return Err(error(
                ResponseError::InvalidReplicationFactor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            ));
        } else if topic.num_partitions < -1 || topic.num_partitions == 0 {
            return Err(error(
                ResponseError::InvalidPartitions,
                "Number of partitions was set to an invalid non-positive value.",
            ));
        } else {
            let num_partitions = match topic.num_partitions {
                -1 => self.cfg.default_num_partitions,
                n => n,
            };
            let replication_factor = match topic.replication_factor {
                -1 => self.cfg.default_replication_factor,
                n => n,
            };
            let spec = PlacementSpec {
                num_partitions,
                replication_factor,
            };
            // Drawn before placement so that the id, which seeds placement, does not depend on
            // whether placement succeeds.
            let id = chosen_topic_id(topic, rng, image, taken)?;
            taken.insert(id);
            return self.finish_topic(
                image,
                name,
                id,
                configs,
                placement::place(usable, &[], spec, placement_seed(id)).map_err(|e| {
                    (
                        e.error_code(),
                        format!(
                            "Unable to replicate the partition {replication_factor} time(s): {e}"
                        ),
                    )
                })?,
            );
        };
        let id = chosen_topic_id(topic, rng, image, taken)?;
        taken.insert(id);
        self.finish_topic(image, name, id, configs, assignments)
    }

    fn finish_topic(
        &self,
        image: &MetadataImage,
        name: &str,
        id: Uuid,
        configs: BTreeMap<String, String>,
        assignments: Vec<Vec<NodeId>>,
    ) -> Result<(Vec<MetadataRecord>, CreateTopicResult), TopicError> {
        let replication_factor = assignments[0].len() as i16;
        let num_partitions = assignments.len() as i32;
        let partitions = partition_records(image, id, 0, assignments).map_err(|p| {
            error(
                ResponseError::InvalidReplicationFactor,
                format!(
                    "Unable to replicate partition {p} {replication_factor} time(s): all its \
                     brokers are fenced or in controlled shutdown."
                ),
            )
        })?;
        let mut records: Vec<MetadataRecord> =
            Vec::with_capacity(1 + configs.len() + partitions.len());
        records.push(
            TopicRecord {
                name: name.to_owned(),
                topic_id: id,
                ..Default::default()
            }
            .into(),
        );
        // ConfigRecords go after the TopicRecord and before the PartitionRecords, as in Kafka.
        records.extend(configs.into_iter().map(|(key, value)| {
            MetadataRecord::from(ConfigRecord {
                resource_type: CONFIG_RESOURCE_TOPIC,
                resource_name: name.to_owned(),
                name: key,
                value: Some(value),
                ..Default::default()
            })
        }));
        records.extend(partitions);
        Ok((
            records,
            CreateTopicResult {
                name: name.to_owned(),
                topic_id: id,
                error_code: 0,
                error_message: None,
                num_partitions,
                replication_factor,
            },
        ))
    }

    /// Kafka's `computeConfigChanges` plus the validator: null values are refused together.
    fn topic_configs(
        &self,
        topic: &CreatableTopic,
    ) -> Result<BTreeMap<String, String>, TopicError> {
        let nulls: Vec<&str> = topic
            .configs
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.as_str())
            .collect();
        if !nulls.is_empty() {
            return Err(error(
                ResponseError::InvalidConfig,
                format!(
                    "Null value not supported for topic configs: {}",
                    nulls.join(",")
                ),
            ));
        }
        let out: BTreeMap<String, String> = topic
            .configs
            .iter()
            .map(|(key, value)| {
                let value = value.as_deref().expect("nulls refused above");
                (key.clone(), value.to_owned())
            })
            .collect();
        // Kafka validates a new topic's configs as an alteration of a resource with none.
        self.config_validator
            .validate(CONFIG_RESOURCE_TOPIC, &topic.name, &out, &BTreeMap::new())
            .map_err(|r| (r.error.code(), r.message))?;
        Ok(out)
    }

    /// DeleteTopics: a `RemoveTopicRecord` per topic (the image drops its partitions and
    /// configs with it). Unknown names answer UNKNOWN_TOPIC_OR_PARTITION, unknown ids
    /// UNKNOWN_TOPIC_ID, a reference given twice INVALID_REQUEST, everything
    /// TOPIC_DELETION_DISABLED without `delete.topic.enable` (Kafka answers INVALID_REQUEST to
    /// requests before version 3: the handler's mapping). A name and an id of the same topic
    /// both succeed, with one record.
    pub fn delete_topics(
        &self,
        image: &MetadataImage,
        topics: Vec<TopicRef>,
    ) -> Result<(Vec<MetadataRecord>, Vec<DeleteTopicResult>), ControllerError> {
        self.check_active()?;
        let mut counts: HashMap<&TopicRef, usize> = HashMap::new();
        for t in &topics {
            *counts.entry(t).or_default() += 1;
        }
        let mut records = Vec::new();
        let mut removed = HashSet::new();
        let mut results = Vec::with_capacity(topics.len());
        let mut seen = HashSet::new();
        for t in &topics {
            if !seen.insert(t) {
                continue;
            }
            let (name, id) = match t {
                TopicRef::Name(n) => (Some(n.clone()), Uuid::nil()),
                TopicRef::Id(id) => (None, *id),
            };
            let fail = |(code, message): TopicError| DeleteTopicResult {
                name: name.clone(),
                topic_id: id,
                error_code: code,
                error_message: Some(message),
            };
            if !self.cfg.delete_topic_enable {
                results.push(fail(error(
                    ResponseError::TopicDeletionDisabled,
                    "Topic deletion is disabled.",
                )));
                continue;
            }
            if counts[t] > 1 {
                let what = if name.is_some() { "name" } else { "id" };
                results.push(fail(error(
                    ResponseError::InvalidRequest,
                    format!("Duplicate topic {what}."),
                )));
                continue;
            }
            let topic = match t {
                TopicRef::Name(n) => image.topic_by_name(n).ok_or_else(|| {
                    error(
                        ResponseError::UnknownTopicOrPartition,
                        format!("Topic '{n}' does not exist."),
                    )
                }),
                TopicRef::Id(id) if id.is_nil() => Err(error(
                    ResponseError::InvalidRequest,
                    "Neither topic name nor id were specified.",
                )),
                TopicRef::Id(id) => image.topic_by_id(id).ok_or_else(|| {
                    error(
                        ResponseError::UnknownTopicId,
                        format!("Topic id {id} does not exist."),
                    )
                }),
            };
            match topic {
                Err(e) => results.push(fail(e)),
                Ok(topic) => {
                    if removed.insert(topic.id) {
                        records.push(
                            RemoveTopicRecord {
                                topic_id: topic.id,
                                ..Default::default()
                            }
                            .into(),
                        );
                    }
                    results.push(DeleteTopicResult {
                        name: Some(topic.name.to_string()),
                        topic_id: topic.id,
                        error_code: 0,
                        error_message: None,
                    });
                }
            }
        }
        Ok((records, results))
    }

    /// CreatePartitions: `PartitionRecord`s for partitions `current..count`, placed continuing
    /// the topic's spread or as assigned. Refused per topic: a name given twice
    /// (INVALID_REQUEST), an unknown topic (UNKNOWN_TOPIC_OR_PARTITION), a count that is not an
    /// increase (INVALID_PARTITIONS), assignments of the wrong number or shape
    /// (INVALID_REPLICA_ASSIGNMENT), placement failure or no active replica
    /// (INVALID_REPLICATION_FACTOR), more than [`MAX_PARTITIONS_PER_REQUEST`] new partitions
    /// so far in the request (POLICY_VIOLATION).
    pub fn create_partitions(
        &self,
        image: &MetadataImage,
        topics: Vec<CreatePartitionsTopic>,
        validate_only: bool,
        seed: u64,
    ) -> Result<(Vec<MetadataRecord>, Vec<CreatePartitionsResult>), ControllerError> {
        self.check_active()?;
        let counts = name_counts(topics.iter().map(|t| t.name.as_str()));
        let usable = usable_brokers(image);
        let mut rng = SplitMix64(seed);
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(topics.len());
        let mut seen = HashSet::new();
        let mut added = 0usize;
        for t in &topics {
            if !seen.insert(t.name.as_str()) {
                continue;
            }
            let outcome = if counts[&*t.name] > 1 {
                Err(error(
                    ResponseError::InvalidRequest,
                    "Duplicate topic name.",
                ))
            } else {
                self.create_partitions_for(image, t, &usable, rng.next_u64(), &mut added)
            };
            let (error_code, error_message) = match outcome {
                Ok(r) => {
                    records.extend(r);
                    (0, None)
                }
                Err((code, message)) => (code, (!message.is_empty()).then_some(message)),
            };
            results.push(CreatePartitionsResult {
                name: t.name.clone(),
                error_code,
                error_message,
            });
        }
        if validate_only {
            records.clear();
        }
        Ok((records, results))
    }

    fn create_partitions_for(
        &self,
        image: &MetadataImage,
        t: &CreatePartitionsTopic,
        usable: &[UsableBroker],
        seed: u64,
        added: &mut usize,
    ) -> Result<Vec<MetadataRecord>, TopicError> {
        // Kafka answers an unknown topic here without a message.
        let topic = image
            .topic_by_name(&t.name)
            .ok_or_else(|| error(ResponseError::UnknownTopicOrPartition, ""))?;
        let current = topic.partitions().len() as i32;
        if t.count == current {
            return Err(error(
                ResponseError::InvalidPartitions,
                format!("Topic already has {current} partition(s)."),
            ));
        }
        if t.count < current {
            return Err(error(
                ResponseError::InvalidPartitions,
                format!(
                    "The topic {} currently has {current} partition(s); {} would not be an \
                     increase.",
                    t.name, t.count
                ),
            ));
        }
        let additional = (t.count - current) as usize;
        if *added + additional > MAX_PARTITIONS_PER_REQUEST {
            return Err(error(
                ResponseError::PolicyViolation,
                "Excessively large number of partitions per request.",
            ));
        }
        // The topic's partitions are numbered 0..current (creation and this keep them so).
        debug_assert!(topic
            .partitions()
            .iter()
            .enumerate()
            .all(|(i, p)| p.partition_id == i as i32));
        let replication_factor = topic.partitions().first().map_or(0, |p| p.replicas.len());
        let assignments = match &t.assignments {
            Some(assignments) => {
                let liveness = ImageLiveness(image);
                placement::validate_create_partitions_assignments(
                    current,
                    additional,
                    replication_factor,
                    assignments,
                    |b| image.broker(b).is_some(),
                    |b| crate::partition_change::BrokerLiveness::is_active(&liveness, b),
                )
                .map_err(|e| (e.error_code(), e.to_string()))?;
                assignments.clone()
            }
            None => {
                let existing: Vec<Vec<NodeId>> = topic
                    .partitions()
                    .iter()
                    .map(|p| p.replicas.to_vec())
                    .collect();
                let spec = PlacementSpec {
                    num_partitions: additional as i32,
                    replication_factor: replication_factor as i16,
                };
                placement::place(usable, &existing, spec, seed).map_err(|e| {
                    (
                        e.error_code(),
                        format!(
                            "Unable to replicate the partition {replication_factor} time(s): {e}"
                        ),
                    )
                })?
            }
        };
        let records = partition_records(image, topic.id, current, assignments).map_err(|p| {
            error(
                ResponseError::InvalidReplicationFactor,
                format!(
                    "Unable to replicate partition {p} {replication_factor} time(s): all its \
                     brokers are fenced or in controlled shutdown."
                ),
            )
        })?;
        *added += additional;
        Ok(records)
    }
}

fn failed_topic(name: String, (code, message): TopicError) -> CreateTopicResult {
    CreateTopicResult {
        name,
        topic_id: Uuid::nil(),
        error_code: code,
        error_message: Some(message),
        num_partitions: -1,
        replication_factor: -1,
    }
}

/// How many times each name appears in the request (for Kafka's "Duplicate topic name.").
fn name_counts<'a>(names: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut counts = HashMap::new();
    for n in names {
        *counts.entry(n).or_insert(0) += 1;
    }
    counts
}
