//! The active controller's decisions, sans-IO: Kafka's `QuorumController` with its
//! `ClusterControlManager` and `BrokerHeartbeatManager` (`brokers.rs`),
//! `ReplicationControlManager` (`topics.rs`, `partitions.rs`, `elections.rs`), `ProducerIdControlManager`
//! (`producer_ids.rs`), `ConfigurationControlManager` (`configs.rs`), `AclControlManager`
//! (`acls.rs`, with the bindings and filters of [`crate::acl`]), `ScramControlManager`
//! (`scram.rs`), `ClientQuotaControlManager` (`client_quotas.rs`) and `FeatureControlManager`
//! (`features.rs`; its bootstrap half is
//! [`Controller::activate`]).
//!
//! What the controller needs to know about config keys (valid values, list types, defaults) is
//! the broker's: it comes in through a [`ConfigValidator`] ([`Controller::set_config_validator`]).
//! What this node supports of each feature is in [`ControllerConfig`]. DescribeAcls and
//! DescribeUserScramCredentials are not decisions: any broker answers them from its image
//! ([`crate::acl::describe_acls`], [`describe_user_scram_credentials`]).
//!
//! ## The contract with the runtime
//! The runtime keeps `latest`: the committed [`MetadataImage`] plus every record proposed but not
//! yet committed. It passes `latest` to each call here, proposes the records returned (in order,
//! as one batch: they get consecutive offsets from `next_offset`, the quorum's log end offset),
//! applies them to `latest` before the next call, and sends the reply once the last record is
//! committed (or NOT_CONTROLLER if leadership is lost first, then calls
//! [`Controller::deactivate`]). Every record list returned applies to `latest` without error.
//!
//! The controller holds only soft state, as Kafka's does: per broker the last heartbeat time,
//! the last metadata offset it reported, the offset of its `RegisterBrokerRecord` and of the end
//! of its controlled-shutdown batch; and the times of the periodic tasks. Everything else is read
//! from the image, so a new active controller starts from the log alone ([`Controller::activate`]
//! restarts every session, so no broker is fenced before it has had a session timeout to
//! heartbeat).
//!
//! Timers: [`Controller::next_deadline`] is the earliest `now_ms` at which [`Controller::tick`]
//! has work (fence a broker whose session expired, rebalance leaders, elect uncleanly where a
//! topic allows it, write a `NoOpRecord`). A
//! tick does one such step, like Kafka's event queue, so that the next step sees its effects:
//! call it again while the deadline is not in the future.
//!
//! Elections: every preferred and unclean leader election decided is noted for the runtime to
//! count and log ([`Controller::take_elections`], see `elections.rs`).
//!
//! Cost: there is no broker-to-partitions index (Kafka's `BrokersToIsrs`); fencing, unfencing,
//! controlled shutdown, leader rebalancing, unclean elections of leaderless partitions and
//! ElectLeaders for every partition scan the image's partitions, O(partitions) each.
//! Heartbeats, registrations and UpdateFeatures are O(brokers). CreateAcls and DeleteAcls scan
//! the image's ACLs (O(ACLs), per filter for DeleteAcls), AlterUserScramCredentials its
//! credentials.

use std::collections::BTreeMap;
use std::fmt;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use crate::metadata::image::METADATA_VERSION_FEATURE;
use crate::metadata::records::{FeatureLevelRecord, MetadataRecord, NoOpRecord};
use crate::metadata::MetadataImage;
use crate::placement::SplitMix64;
use crate::NodeId;

mod acls;
mod brokers;
mod client_quotas;
mod configs;
mod elections;
mod features;
mod partitions;
mod producer_ids;
mod reassignments;
mod scram;
mod topics;

pub use acls::{CreateAclResult, DeleteAclsFilterResult, ACLS_MAX};
pub use brokers::{
    BrokerHeartbeatReply, BrokerHeartbeatRequest, BrokerRegistrationReply,
    BrokerRegistrationRequest,
};
pub use client_quotas::{
    describe_client_quotas, AlterClientQuotaResult, ClientQuotaAlteration,
    ClientQuotaFilterComponent, ClientQuotaOp, DescribedClientQuota, CLIENT_QUOTA_ENTITIES_MAX,
    CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, ENTITY_CLIENT_ID,
    ENTITY_IP, ENTITY_USER, MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT, MATCH_TYPE_SPECIFIED,
    PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};
pub use configs::{
    AlterConfigOp, AlterConfigsResource, AlterConfigsResult, AlterableConfig,
    IncrementalAlterConfigsResource,
};
pub use elections::{
    ElectLeadersRequest, ElectLeadersTopic, ElectionKind, LeaderElection, PartitionElectionResult,
    ReplicaElectionResult, ELECTION_TYPE_PREFERRED, ELECTION_TYPE_UNCLEAN,
};
pub use features::{
    samsa_supported_features, FeatureDependency, FeatureUpdate, FeatureUpgradeType,
    UpdateFeaturesResult, GROUP_VERSION_FEATURE, GROUP_VERSION_MAX, KRAFT_VERSION_FEATURE,
    METADATA_VERSION_CONTROLLER_REGISTRATION, SHARE_VERSION_FEATURE, SHARE_VERSION_MAX,
    STREAMS_VERSION_FEATURE, STREAMS_VERSION_MAX, TRANSACTION_VERSION_FEATURE,
    TRANSACTION_VERSION_MAX,
};
pub use partitions::{
    AlterPartitionData, AlterPartitionPartitionResult, AlterPartitionRequest, AlterPartitionTopic,
    AlterPartitionTopicResult,
};
pub use producer_ids::{ProducerIdsBlock, PRODUCER_ID_BLOCK_SIZE};
pub use reassignments::{
    list_partition_reassignments, AlterPartitionReassignmentsRequest, OngoingReassignment,
    ReassignablePartition, ReassignableTopic, ReassignmentResult, ReassignmentTopicResult,
};
pub use scram::{
    describe_user_scram_credentials, AlterScramCredentialResult, ScramCredentialDeletion,
    ScramCredentialDescription, ScramCredentialUpsertion, ScramMechanism, METADATA_VERSION_SCRAM,
    SCRAM_ITERATIONS_MAX, SCRAM_ITERATIONS_MIN, SCRAM_SALTED_PASSWORD_BYTES_MAX,
    SCRAM_SALT_BYTES_MAX, SCRAM_USERS_MAX, SCRAM_USER_BYTES_MAX,
};
pub use topics::{
    CreatableTopic, CreatePartitionsResult, CreatePartitionsTopic, CreateTopicResult,
    DeleteTopicResult, TopicRef, MAX_PARTITIONS_PER_REQUEST,
};

#[cfg(test)]
mod acls_tests;
#[cfg(test)]
mod client_quotas_tests;
#[cfg(test)]
mod configs_tests;
#[cfg(test)]
mod elections_tests;
#[cfg(test)]
mod features_tests;
#[cfg(test)]
mod reassignments_tests;
#[cfg(test)]
mod scenario_tests;
#[cfg(test)]
mod scram_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod topics_tests;

/// `metadata.version` 4.0-IV3, Kafka 4.0's latest production level and what a new cluster starts
/// at. Every record version the codec writes is valid at it (`PartitionRecord` and
/// `PartitionChangeRecord` v2 need 4.0-IV1, `RegisterBrokerRecord` v3 needs 3.7-IV2).
pub const METADATA_VERSION_4_0_IV3: i16 = 25;
/// `metadata.version` 3.3-IV3, the oldest Kafka 4.x supports: what a broker that sends no
/// `metadata.version` range is assumed to support.
pub const METADATA_VERSION_MINIMUM: i16 = 7;
/// `metadata.version` 3.7-IV2: brokers register their log directories (KIP-858).
pub const METADATA_VERSION_DIRECTORY_ASSIGNMENT: i16 = 17;
/// Kafka's `MAX_ELECTIONS_PER_IMBALANCE`: preferred-leader elections per rebalance step, and
/// unclean elections per step of electing leaderless partitions.
pub const MAX_ELECTIONS_PER_IMBALANCE: usize = 1_000;
/// Kafka's `MAX_RECORDS_PER_USER_OP`: an admin request that would write more records (configs,
/// ACLs) is refused whole with POLICY_VIOLATION ([`ControllerError::BatchTooLarge`]).
pub const MAX_RECORDS_PER_USER_OP: usize = 10_000;

/// The controller's static configuration (Kafka's names and defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// The cluster id brokers must register with (`meta.properties`).
    pub cluster_id: String,
    /// `broker.session.timeout.ms` (9000): a broker that has not heartbeated for longer is
    /// fenced.
    pub session_timeout_ms: u64,
    /// `num.partitions` (1), for CreateTopics with `num_partitions` -1.
    pub default_num_partitions: i32,
    /// `default.replication.factor` (1), for CreateTopics with `replication_factor` -1.
    pub default_replication_factor: i16,
    /// `unclean.leader.election.enable` (false), unless the topic or the cluster-wide broker
    /// config (`ConfigRecord` for broker "") sets it.
    pub unclean_leader_election_enable: bool,
    /// `delete.topic.enable` (true).
    pub delete_topic_enable: bool,
    /// `metadata.max.idle.interval.ms` (500): how often to write a `NoOpRecord` so that the
    /// high watermark moves and brokers can tell they are caught up (KIP-835). `None`: never.
    pub no_op_interval_ms: Option<u64>,
    /// `leader.imbalance.check.interval.seconds` (300 s) when `auto.leader.rebalance.enable`
    /// (true): how often to move leadership back to preferred replicas. `None`: never.
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// `unclean.leader.election.interval.ms` (300 000): how often to elect leaders uncleanly
    /// for leaderless partitions of topics with `unclean.leader.election.enable`. `None`: never
    /// (fencing and controlled shutdown still elect uncleanly where a topic allows it).
    pub unclean_leader_election_interval_ms: Option<u64>,
    /// The `metadata.version` written when the log is empty.
    pub bootstrap_metadata_version: i16,
    /// Other features finalized when the log is empty (e.g. `group.version`), level > 0.
    pub bootstrap_features: Vec<(String, i16)>,
    /// This node's `node.id` (-1 until the runtime sets it): UpdateFeatures names it, and does
    /// not check its registration as another controller's.
    pub node_id: NodeId,
    /// Whether this controller's node is also a broker (`process.roles=broker,controller`):
    /// then a registration of broker `node_id` comes from this very process, so any former
    /// incarnation of it is gone (its process held the node's log directory, which this one
    /// has locked) and need not be waited out.
    pub local_broker: bool,
    /// The feature levels this controller supports, `(name, min, max)` (Kafka's
    /// `QuorumFeatures.localSupportedFeatures`); a feature not listed is supported at level 0
    /// only, and UpdateFeatures refuses to change it. Default: `metadata.version`
    /// [`METADATA_VERSION_MINIMUM`] to [`METADATA_VERSION_4_0_IV3`].
    pub supported_features: Vec<(String, i16, i16)>,
    /// What the supported features' levels need of others (Kafka's
    /// `FeatureVersion.dependencies`). Default: none.
    pub feature_dependencies: Vec<FeatureDependency>,
}

impl ControllerConfig {
    /// Kafka's defaults for `cluster_id`.
    pub fn new(cluster_id: impl Into<String>) -> Self {
        ControllerConfig {
            cluster_id: cluster_id.into(),
            session_timeout_ms: 9_000,
            default_num_partitions: 1,
            default_replication_factor: 1,
            unclean_leader_election_enable: false,
            delete_topic_enable: true,
            no_op_interval_ms: Some(500),
            leader_imbalance_check_interval_ms: Some(300_000),
            unclean_leader_election_interval_ms: Some(300_000),
            bootstrap_metadata_version: METADATA_VERSION_4_0_IV3,
            bootstrap_features: Vec::new(),
            node_id: -1,
            local_broker: false,
            supported_features: ControllerConfig::default_supported_features(),
            feature_dependencies: Vec::new(),
        }
    }
}

/// Why a whole request was refused. Per-topic and per-partition errors are in the replies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    #[error("this controller is not active")]
    NotController,
    #[error("expected cluster id {expected:?}, but got cluster id {got:?}")]
    InconsistentClusterId { expected: String, got: String },
    #[error(
        "broker {broker_id} is registered with incarnation {registered}, whose session is still \
         live; incarnation {requested} cannot replace it until the session expires"
    )]
    DuplicateBrokerRegistration {
        broker_id: NodeId,
        registered: Uuid,
        requested: Uuid,
    },
    #[error("broker {broker_id}: {reason}")]
    BrokerIdNotRegistered {
        broker_id: NodeId,
        reason: &'static str,
    },
    /// UnregisterBroker of a broker the image does not hold, in Kafka's words.
    #[error("Broker ID {0} is not currently registered")]
    NotRegistered(NodeId),
    #[error("broker {broker_id}: expected broker epoch {expected:?}, but got broker epoch {got}")]
    StaleBrokerEpoch {
        broker_id: NodeId,
        /// `None`: the broker is not registered.
        expected: Option<i64>,
        got: i64,
    },
    #[error("invalid registration of broker {broker_id}: {reason}")]
    InvalidRegistration { broker_id: NodeId, reason: String },
    #[error(
        "broker {broker_id} does not support finalized level {finalized} of {feature}: it \
         supports {min} to {max}"
    )]
    UnsupportedFeatureLevel {
        broker_id: NodeId,
        feature: String,
        finalized: i16,
        min: i16,
        max: i16,
    },
    #[error("producer ids are exhausted: the next block would pass i64::MAX")]
    ProducerIdsExhausted,
    /// ElectLeaders with an `election_type` other than 0 (PREFERRED) and 1 (UNCLEAN).
    #[error("Unknown election type {0}")]
    UnknownElectionType(i8),
    /// Kafka's answer to a `BoundedListTooLongException`: the whole request is refused.
    #[error(
        "Unable to perform excessively large batch operation: {records} records, at most \
         {MAX_RECORDS_PER_USER_OP} per request."
    )]
    BatchTooLarge { records: usize },
}

impl ControllerError {
    /// The request's error code, as Kafka's controller answers.
    pub fn error_code(&self) -> i16 {
        let e = match self {
            Self::NotController => ResponseError::NotController,
            Self::InconsistentClusterId { .. } => ResponseError::InconsistentClusterId,
            Self::DuplicateBrokerRegistration { .. } => ResponseError::DuplicateBrokerRegistration,
            Self::BrokerIdNotRegistered { .. } | Self::NotRegistered(_) => {
                ResponseError::BrokerIdNotRegistered
            }
            Self::StaleBrokerEpoch { .. } => ResponseError::StaleBrokerEpoch,
            Self::InvalidRegistration { .. } => ResponseError::InvalidRegistration,
            Self::UnsupportedFeatureLevel { .. } => ResponseError::UnsupportedVersion,
            Self::ProducerIdsExhausted => ResponseError::UnknownServerError,
            Self::UnknownElectionType(_) => ResponseError::InvalidRequest,
            Self::BatchTooLarge { .. } => ResponseError::PolicyViolation,
        };
        e.code()
    }
}

/// What the controller asks of the broker's config definitions, which live in the broker crate
/// (Kafka's `ConfigurationValidator` together with the two questions `ConfigurationControlManager`
/// asks of `KafkaConfigSchema`). Resource types are Kafka's `ConfigResource.Type` ids
/// (`CONFIG_RESOURCE_*` in [`crate::metadata::image`]). Without one, every config is accepted,
/// no key is a list and none has a default.
pub trait ConfigValidator: Send + Sync {
    /// Checks a resource's dynamic configs as a change would leave them (`resulting`), given
    /// what they are now (`existing`; some rules compare the two, e.g. remote storage cannot be
    /// turned off once on). Used by CreateTopics (with `existing` empty), IncrementalAlterConfigs
    /// and AlterConfigs. The resource's name has been checked already (a valid topic name, a
    /// broker id, ...), but not that the resource exists.
    fn validate(
        &self,
        resource_type: i8,
        resource_name: &str,
        resulting: &BTreeMap<String, String>,
        existing: &BTreeMap<String, String>,
    ) -> Result<(), ConfigRefusal>;

    /// Whether `key` is a LIST-type config of this resource type (Kafka's `isSplittable`): only
    /// those take IncrementalAlterConfigs' APPEND and SUBTRACT.
    fn is_list(&self, resource_type: i8, key: &str) -> bool;

    /// The default of `key` as a string (Kafka's `getDefault`): the list APPEND and SUBTRACT
    /// start from when the resource does not set the key.
    fn default_value(&self, resource_type: i8, key: &str) -> Option<String>;
}

/// A [`ConfigValidator`]'s refusal: the error code the resource gets (INVALID_CONFIG for a bad
/// value; Kafka answers INVALID_REQUEST for some, e.g. an unknown client-metrics key) and the
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRefusal {
    pub error: ResponseError,
    pub message: String,
}

impl ConfigRefusal {
    pub fn invalid_config(message: impl Into<String>) -> Self {
        ConfigRefusal {
            error: ResponseError::InvalidConfig,
            message: message.into(),
        }
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        ConfigRefusal {
            error: ResponseError::InvalidRequest,
            message: message.into(),
        }
    }
}

/// The validator of a controller that was given none.
struct AcceptAnyConfig;

impl ConfigValidator for AcceptAnyConfig {
    fn validate(
        &self,
        _: i8,
        _: &str,
        _: &BTreeMap<String, String>,
        _: &BTreeMap<String, String>,
    ) -> Result<(), ConfigRefusal> {
        Ok(())
    }

    fn is_list(&self, _: i8, _: &str) -> bool {
        false
    }

    fn default_value(&self, _: i8, _: &str) -> Option<String> {
        None
    }
}

/// A random id as Kafka's `Uuid.randomUuid` makes them: version-4 bits, and never nil, the
/// metadata topic's id (0, 1), or one whose base64 form starts with '-' (it would read as a
/// command-line option). Topic and ACL ids.
fn random_uuid(rng: &mut SplitMix64) -> Uuid {
    loop {
        let bytes: [u8; 16] = {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            let mut out = [0; 16];
            out[..8].copy_from_slice(&a.to_be_bytes());
            out[8..].copy_from_slice(&b.to_be_bytes());
            out
        };
        let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
        let (hi, lo) = id.as_u64_pair();
        let reserved = hi == 0 && lo <= 1;
        // Base64 '-' is 62: the first six bits of the first byte.
        let dash = id.as_bytes()[0] >> 2 == 62;
        if !reserved && !dash {
            return id;
        }
    }
}

/// A broker's session (Kafka's `BrokerHeartbeatState`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct BrokerSession {
    last_contact_ms: u64,
    /// The last `current_metadata_offset` it reported; -1 before its first heartbeat.
    metadata_offset: i64,
    /// The offset of its `RegisterBrokerRecord`, which it must have applied to be unfenced. For
    /// a registration this controller did not write, the last offset before it became active
    /// (an upper bound: the record is at or before it).
    register_record_offset: i64,
    /// Set once it entered controlled shutdown: the offset of the last record of that batch,
    /// which every active broker must reach before it may shut down.
    controlled_shutdown_offset: Option<i64>,
    /// Mirrors the image's `fenced` (as of the records returned so far).
    fenced: bool,
}

impl BrokerSession {
    fn new(now_ms: u64, register_record_offset: i64, fenced: bool) -> Self {
        BrokerSession {
            last_contact_ms: now_ms,
            metadata_offset: -1,
            register_record_offset,
            controlled_shutdown_offset: None,
            fenced,
        }
    }
}

/// The active controller's state machine. See the module doc.
pub struct Controller {
    cfg: ControllerConfig,
    active: bool,
    sessions: BTreeMap<NodeId, BrokerSession>,
    /// The highest offset known to be in the log (from the `next_offset`s passed in): the
    /// registration offset assumed for a broker the controller has no session for.
    known_end_offset: i64,
    next_no_op_ms: Option<u64>,
    next_rebalance_ms: Option<u64>,
    next_unclean_election_ms: Option<u64>,
    config_validator: Box<dyn ConfigValidator>,
    /// Preferred and unclean elections decided and not yet taken by the runtime.
    elections: Vec<LeaderElection>,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("cfg", &self.cfg)
            .field("active", &self.active)
            .field("sessions", &self.sessions)
            .field("next_no_op_ms", &self.next_no_op_ms)
            .field("next_rebalance_ms", &self.next_rebalance_ms)
            .field("next_unclean_election_ms", &self.next_unclean_election_ms)
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// An inactive controller: every request is refused with NOT_CONTROLLER until
    /// [`Self::activate`].
    pub fn new(cfg: ControllerConfig) -> Controller {
        assert!(
            cfg.session_timeout_ms > 0,
            "broker.session.timeout.ms must be positive"
        );
        Controller {
            cfg,
            active: false,
            sessions: BTreeMap::new(),
            known_end_offset: -1,
            next_no_op_ms: None,
            next_rebalance_ms: None,
            next_unclean_election_ms: None,
            config_validator: Box::new(AcceptAnyConfig),
            elections: Vec::new(),
        }
    }

    /// Sets what CreateTopics, IncrementalAlterConfigs and AlterConfigs ask about configs (see
    /// [`ConfigValidator`]).
    pub fn set_config_validator(&mut self, validator: Box<dyn ConfigValidator>) {
        self.config_validator = validator;
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.cfg
    }

    pub fn is_active(&self) -> bool {
        self.active
    }

    /// This node became the active controller; `image` is `latest` and `next_offset` the log end
    /// offset. Returns the records it must write first: on a log that has never been bootstrapped
    /// (no `metadata.version`), the `FeatureLevelRecord`s of the bootstrap (Kafka's
    /// `ActivationRecordsGenerator`, one atomic batch); else none. Every registered broker gets a
    /// fresh session starting now, as Kafka's heartbeat manager does on activation.
    pub fn activate(
        &mut self,
        now_ms: u64,
        image: &MetadataImage,
        next_offset: i64,
    ) -> Vec<MetadataRecord> {
        self.active = true;
        self.known_end_offset = next_offset - 1;
        self.sessions = image
            .brokers()
            .values()
            .map(|b| (b.id, BrokerSession::new(now_ms, next_offset - 1, b.fenced)))
            .collect();
        self.next_no_op_ms = self.cfg.no_op_interval_ms.map(|i| now_ms + i);
        self.next_rebalance_ms = self
            .cfg
            .leader_imbalance_check_interval_ms
            .map(|i| now_ms + i);
        self.next_unclean_election_ms = self
            .cfg
            .unclean_leader_election_interval_ms
            .map(|i| now_ms + i);
        if image.metadata_version().is_some() {
            return Vec::new();
        }
        let mut records: Vec<MetadataRecord> = vec![FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: self.cfg.bootstrap_metadata_version,
            ..Default::default()
        }
        .into()];
        for (name, level) in &self.cfg.bootstrap_features {
            assert!(
                name != METADATA_VERSION_FEATURE && *level > 0,
                "bootstrap feature {name}={level}: use bootstrap_metadata_version, and levels > 0"
            );
            records.push(
                FeatureLevelRecord {
                    name: name.clone(),
                    feature_level: *level,
                    ..Default::default()
                }
                .into(),
            );
        }
        records
    }

    /// This node is no longer the active controller: drop the soft state.
    pub fn deactivate(&mut self) {
        self.active = false;
        self.sessions.clear();
        self.next_no_op_ms = None;
        self.next_rebalance_ms = None;
        self.next_unclean_election_ms = None;
    }

    /// The earliest time at which [`Self::tick`] has something to do, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        if !self.active {
            return None;
        }
        let expiry = self
            .sessions
            .values()
            .filter(|s| !s.fenced)
            .map(|s| self.session_expiry_ms(s))
            .min();
        [
            expiry,
            self.next_no_op_ms,
            self.next_rebalance_ms,
            self.next_unclean_election_ms,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Does the first of these that is due: fence the broker whose session expired longest ago
    /// (Kafka's `maybeFenceOneStaleBroker`: the `PartitionChangeRecord`s that move leadership
    /// off it and take it out of ISRs, then a `BrokerRegistrationChangeRecord`); rebalance up to
    /// [`MAX_ELECTIONS_PER_IMBALANCE`] partitions to their preferred leaders; elect as many
    /// leaderless partitions uncleanly where their topics allow it; write a `NoOpRecord`. The
    /// records need not be one atomic batch.
    pub fn tick(&mut self, now_ms: u64, image: &MetadataImage) -> Vec<MetadataRecord> {
        if !self.active {
            return Vec::new();
        }
        self.sync(now_ms, image);
        let stale = self
            .sessions
            .iter()
            .filter(|(_, s)| !s.fenced && self.session_expiry_ms(s) <= now_ms)
            .min_by_key(|(id, s)| (s.last_contact_ms, **id))
            .map(|(id, _)| *id);
        if let Some(broker_id) = stale {
            let records = self.fence_records(image, broker_id);
            if let Some(s) = self.sessions.get_mut(&broker_id) {
                s.fenced = true;
            }
            self.note_elections(image, &records, false);
            return records;
        }
        let records = elections::periodic(
            now_ms,
            &mut self.next_rebalance_ms,
            self.cfg.leader_imbalance_check_interval_ms,
            |out| elections::preferred_elections(image, MAX_ELECTIONS_PER_IMBALANCE, out),
        );
        if !records.is_empty() {
            self.note_elections(image, &records, true);
            return records;
        }
        let records = elections::periodic(
            now_ms,
            &mut self.next_unclean_election_ms,
            self.cfg.unclean_leader_election_interval_ms,
            |out| elections::unclean_elections(image, &self.cfg, MAX_ELECTIONS_PER_IMBALANCE, out),
        );
        if !records.is_empty() {
            self.note_elections(image, &records, false);
            return records;
        }
        if let (Some(at), Some(interval)) = (self.next_no_op_ms, self.cfg.no_op_interval_ms) {
            if at <= now_ms {
                self.next_no_op_ms = Some(now_ms + interval);
                return vec![NoOpRecord::default().into()];
            }
        }
        Vec::new()
    }

    // ----- shared helpers -----

    fn check_active(&self) -> Result<(), ControllerError> {
        if self.active {
            Ok(())
        } else {
            Err(ControllerError::NotController)
        }
    }

    /// The first `now_ms` at which the session is no longer valid (Kafka:
    /// `lastContact + sessionTimeout >= now` is valid).
    fn session_expiry_ms(&self, s: &BrokerSession) -> u64 {
        s.last_contact_ms + self.cfg.session_timeout_ms + 1
    }

    fn has_valid_session(&self, now_ms: u64, broker_id: NodeId) -> bool {
        self.sessions
            .get(&broker_id)
            .is_some_and(|s| !s.fenced && now_ms < self.session_expiry_ms(s))
    }

    /// Reconciles the sessions with `image`: a session per registered broker, `fenced`
    /// mirroring the image. Only a runtime that applied records this controller did not return
    /// makes this change anything.
    fn sync(&mut self, now_ms: u64, image: &MetadataImage) {
        let brokers = image.brokers();
        if self.sessions.len() != brokers.len()
            || self
                .sessions
                .keys()
                .zip(brokers.keys())
                .any(|(a, b)| a != b)
        {
            self.sessions.retain(|id, _| brokers.contains_key(id));
            for b in brokers.values() {
                let bound = self.known_end_offset;
                self.sessions
                    .entry(b.id)
                    .or_insert_with(|| BrokerSession::new(now_ms, bound, b.fenced));
            }
        }
        for (id, s) in self.sessions.iter_mut() {
            s.fenced = brokers[id].fenced;
        }
    }

    fn note_offset(&mut self, next_offset: i64) {
        self.known_end_offset = self.known_end_offset.max(next_offset - 1);
    }
}
