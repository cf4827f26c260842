//! The active controller inside the runtime: `samsa_cluster::controller::Controller` (the
//! decisions) fed with `latest`, the committed image plus every record this leader proposed
//! and has not seen committed. Requests that reach a node which does not lead are answered
//! NOT_CONTROLLER with the leader to ask (the handle forwards them).
//!
//! The preferred and unclean leader elections the decisions note are counted here
//! ([`ElectionCounts`], which the metrics endpoint reports) and logged, an unclean one as a
//! warning: it may lose records.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use samsa_cluster::acl::{AclBinding, AclFilter};
use samsa_cluster::controller::{
    AlterClientQuotaResult, AlterConfigsResource, AlterConfigsResult,
    AlterPartitionReassignmentsRequest, AlterPartitionRequest, AlterPartitionTopicResult,
    AlterScramCredentialResult, BrokerHeartbeatReply, BrokerHeartbeatRequest,
    BrokerRegistrationReply, BrokerRegistrationRequest, ClientQuotaAlteration, ConfigValidator,
    Controller as Decisions, ControllerConfig, CreatableTopic, CreateAclResult,
    CreatePartitionsResult, CreatePartitionsTopic, CreateTopicResult, DeleteAclsFilterResult,
    DeleteTopicResult, ElectLeadersRequest, ElectionKind, FeatureUpdate,
    IncrementalAlterConfigsResource, ProducerIdsBlock, ReassignmentTopicResult,
    ReplicaElectionResult, ScramCredentialDeletion, ScramCredentialUpsertion, TopicRef,
    UpdateFeaturesResult,
};
use samsa_cluster::metadata::{MetadataImage, MetadataRecord};
use samsa_cluster::quorum::Quorum;

/// A request for the active controller.
#[derive(Debug, Clone)]
pub enum ControllerRequest {
    RegisterBroker(BrokerRegistrationRequest),
    BrokerHeartbeat(BrokerHeartbeatRequest),
    CreateTopics {
        topics: Vec<CreatableTopic>,
        validate_only: bool,
    },
    DeleteTopics(Vec<TopicRef>),
    CreatePartitions {
        topics: Vec<CreatePartitionsTopic>,
        validate_only: bool,
    },
    /// A block of producer ids for a broker registered at `broker_epoch`.
    AllocateProducerIds {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// A partition leader's ISR changes.
    AlterPartition(AlterPartitionRequest),
    IncrementalAlterConfigs {
        resources: Vec<IncrementalAlterConfigsResource>,
        validate_only: bool,
    },
    /// The legacy AlterConfigs: each resource's configs become exactly the ones given.
    AlterConfigs {
        resources: Vec<AlterConfigsResource>,
        validate_only: bool,
    },
    CreateAcls(Vec<AclBinding>),
    DeleteAcls(Vec<AclFilter>),
    AlterUserScramCredentials {
        deletions: Vec<ScramCredentialDeletion>,
        upsertions: Vec<ScramCredentialUpsertion>,
    },
    UpdateFeatures {
        updates: Vec<FeatureUpdate>,
        validate_only: bool,
    },
    AlterClientQuotas {
        alterations: Vec<ClientQuotaAlteration>,
        validate_only: bool,
    },
    ElectLeaders(ElectLeadersRequest),
    AlterPartitionReassignments(AlterPartitionReassignmentsRequest),
    /// Removes a broker's registration (Kafka's `UnregisterBroker`, `kafka-cluster.sh
    /// unregister`).
    UnregisterBroker {
        broker_id: i32,
    },
}

/// Its answer, or a Kafka error code and message.
#[derive(Debug, Clone)]
pub enum ControllerReply {
    RegisterBroker(BrokerRegistrationReply),
    BrokerHeartbeat(BrokerHeartbeatReply),
    CreateTopics(Vec<CreateTopicResult>),
    DeleteTopics(Vec<DeleteTopicResult>),
    CreatePartitions(Vec<CreatePartitionsResult>),
    AllocateProducerIds(ProducerIdsBlock),
    AlterPartition(Vec<AlterPartitionTopicResult>),
    /// IncrementalAlterConfigs' and AlterConfigs' results, one per resource in request order.
    AlterConfigs(Vec<AlterConfigsResult>),
    CreateAcls(Vec<CreateAclResult>),
    DeleteAcls(Vec<DeleteAclsFilterResult>),
    AlterUserScramCredentials(Vec<AlterScramCredentialResult>),
    UpdateFeatures(UpdateFeaturesResult),
    AlterClientQuotas(Vec<AlterClientQuotaResult>),
    ElectLeaders(Vec<ReplicaElectionResult>),
    AlterPartitionReassignments(Vec<ReassignmentTopicResult>),
    UnregisterBroker,
}

pub type ControllerResult = Result<ControllerReply, ReplyError>;

/// Why the active controller did not do what was asked, or could not be asked: the Kafka error
/// code its answer carries, and the message for people (the text of Kafka's exception).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReplyError {
    pub code: i16,
    pub message: String,
}

impl ReplyError {
    pub fn new(code: i16, message: String) -> ReplyError {
        ReplyError { code, message }
    }
}

impl From<samsa_cluster::controller::ControllerError> for ReplyError {
    fn from(e: samsa_cluster::controller::ControllerError) -> ReplyError {
        ReplyError::new(e.error_code(), e.to_string())
    }
}

/// NOT_CONTROLLER.
pub const NOT_CONTROLLER: i16 = 41;

/// Leader elections this node decided while it was the active controller, by kind.
#[derive(Debug, Default)]
pub struct ElectionCounts {
    /// Leadership moved back to preferred replicas (ElectLeaders PREFERRED, or
    /// `auto.leader.rebalance.enable`).
    pub preferred: AtomicU64,
    /// Replicas outside the ISR made leader (ElectLeaders UNCLEAN, or
    /// `unclean.leader.election.enable`): Kafka's `UncleanLeaderElectionsPerSec`.
    pub unclean: AtomicU64,
}

pub(super) struct Active {
    decisions: Decisions,
    /// The committed image plus this leader's uncommitted records (only while active).
    latest: MetadataImage,
    elections: Arc<ElectionCounts>,
}

/// What a request decided: records to propose as one batch, and the reply to send once they
/// are committed.
pub(super) type Decided = (Vec<MetadataRecord>, ControllerReply);

impl Active {
    /// `validator`: the broker's config knowledge, for the config APIs and CreateTopics
    /// (without one every config is accepted).
    pub(super) fn new(
        cfg: ControllerConfig,
        validator: Option<Box<dyn ConfigValidator>>,
        elections: Arc<ElectionCounts>,
    ) -> Active {
        let mut decisions = Decisions::new(cfg);
        if let Some(v) = validator {
            decisions.set_config_validator(v);
        }
        Active {
            decisions,
            latest: MetadataImage::new(),
            elections,
        }
    }

    pub(super) fn is_active(&self) -> bool {
        self.decisions.is_active()
    }

    /// On winning an election: `latest` is the committed image plus every uncommitted data
    /// batch of the log (a leader's log holds everything committed, and what it will commit).
    /// Returns the records the new leader writes first.
    pub(super) fn activate(
        &mut self,
        now: u64,
        committed: &MetadataImage,
        applied_offset: i64,
        quorum: &Quorum,
    ) -> Vec<MetadataRecord> {
        self.rebuild(committed, applied_offset, quorum);
        let records = self
            .decisions
            .activate(now, &self.latest, quorum.log_end_offset());
        self.apply(&records);
        records
    }

    /// Rebuilds `latest` from the committed image and the log (after a proposal the quorum
    /// refused, whose records `latest` already holds).
    pub(super) fn rebuild(
        &mut self,
        committed: &MetadataImage,
        applied_offset: i64,
        quorum: &Quorum,
    ) {
        let mut latest = committed.clone();
        for batch in quorum.batches().filter(|b| b.base_offset >= applied_offset) {
            if batch.control {
                continue;
            }
            for r in &batch.records {
                let Some(v) = &r.value else { continue };
                match MetadataRecord::decode(v) {
                    Ok(record) => {
                        if let Err(e) = latest.apply(&record) {
                            tracing::error!(error = %e, "uncommitted metadata record does not apply");
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "uncommitted metadata record cannot be decoded")
                    }
                }
            }
        }
        self.latest = latest;
    }

    pub(super) fn deactivate(&mut self) {
        self.decisions.deactivate();
        self.latest = MetadataImage::new();
    }

    pub(super) fn next_deadline(&self) -> Option<u64> {
        self.decisions.next_deadline()
    }

    /// Periodic work due at `now` (fencing expired sessions, no-op records, rebalancing), one
    /// step per call, as Kafka's event queue runs them.
    pub(super) fn tick(&mut self, now: u64) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        // Bounded: each step does one thing, and a step that finds nothing ends the loop.
        for _ in 0..64 {
            if self.decisions.next_deadline().is_none_or(|d| d > now) {
                break;
            }
            let records = self.decisions.tick(now, &self.latest);
            if records.is_empty() {
                break;
            }
            self.apply(&records);
            out.extend(records);
        }
        self.report_elections();
        out
    }

    pub(super) fn decide(
        &mut self,
        now: u64,
        next_offset: i64,
        request: ControllerRequest,
    ) -> Result<Decided, ReplyError> {
        let err = ReplyError::from;
        let decided = match request {
            ControllerRequest::RegisterBroker(r) => {
                let (records, reply) = self
                    .decisions
                    .register_broker(now, &self.latest, next_offset, r)
                    .map_err(err)?;
                (records, ControllerReply::RegisterBroker(reply))
            }
            ControllerRequest::BrokerHeartbeat(r) => {
                let (records, reply) = self
                    .decisions
                    .broker_heartbeat(now, &self.latest, next_offset, r)
                    .map_err(err)?;
                (records, ControllerReply::BrokerHeartbeat(reply))
            }
            ControllerRequest::CreateTopics {
                topics,
                validate_only,
            } => {
                let (records, results) = self
                    .decisions
                    .create_topics(&self.latest, topics, validate_only, rand::random())
                    .map_err(err)?;
                (records, ControllerReply::CreateTopics(results))
            }
            ControllerRequest::DeleteTopics(topics) => {
                let (records, results) = self
                    .decisions
                    .delete_topics(&self.latest, topics)
                    .map_err(err)?;
                (records, ControllerReply::DeleteTopics(results))
            }
            ControllerRequest::CreatePartitions {
                topics,
                validate_only,
            } => {
                let (records, results) = self
                    .decisions
                    .create_partitions(&self.latest, topics, validate_only, rand::random())
                    .map_err(err)?;
                (records, ControllerReply::CreatePartitions(results))
            }
            ControllerRequest::AllocateProducerIds {
                broker_id,
                broker_epoch,
            } => {
                let (records, block) = self
                    .decisions
                    .allocate_producer_ids(&self.latest, broker_id, broker_epoch)
                    .map_err(err)?;
                (records, ControllerReply::AllocateProducerIds(block))
            }
            ControllerRequest::AlterPartition(r) => {
                let (records, results) = self
                    .decisions
                    .alter_partition(&self.latest, &r)
                    .map_err(err)?;
                (records, ControllerReply::AlterPartition(results))
            }
            ControllerRequest::IncrementalAlterConfigs {
                resources,
                validate_only,
            } => {
                let (records, results) = self
                    .decisions
                    .incremental_alter_configs(&self.latest, resources, validate_only)
                    .map_err(err)?;
                (records, ControllerReply::AlterConfigs(results))
            }
            ControllerRequest::AlterConfigs {
                resources,
                validate_only,
            } => {
                let (records, results) = self
                    .decisions
                    .alter_configs(&self.latest, resources, validate_only)
                    .map_err(err)?;
                (records, ControllerReply::AlterConfigs(results))
            }
            ControllerRequest::CreateAcls(bindings) => {
                let (records, results) = self
                    .decisions
                    .create_acls(&self.latest, bindings, rand::random())
                    .map_err(err)?;
                (records, ControllerReply::CreateAcls(results))
            }
            ControllerRequest::DeleteAcls(filters) => {
                let (records, results) = self
                    .decisions
                    .delete_acls(&self.latest, filters)
                    .map_err(err)?;
                (records, ControllerReply::DeleteAcls(results))
            }
            ControllerRequest::AlterUserScramCredentials {
                deletions,
                upsertions,
            } => {
                let (records, results) = self
                    .decisions
                    .alter_user_scram_credentials(&self.latest, deletions, upsertions)
                    .map_err(err)?;
                (records, ControllerReply::AlterUserScramCredentials(results))
            }
            ControllerRequest::AlterClientQuotas {
                alterations,
                validate_only,
            } => {
                let (records, results) = self
                    .decisions
                    .alter_client_quotas(&self.latest, &alterations, validate_only)
                    .map_err(err)?;
                (records, ControllerReply::AlterClientQuotas(results))
            }
            ControllerRequest::UpdateFeatures {
                updates,
                validate_only,
            } => {
                let (records, result) = self
                    .decisions
                    .update_features(&self.latest, updates, validate_only)
                    .map_err(err)?;
                (records, ControllerReply::UpdateFeatures(result))
            }
            ControllerRequest::ElectLeaders(r) => {
                let (records, results) = self
                    .decisions
                    .elect_leaders(&self.latest, &r)
                    .map_err(err)?;
                (records, ControllerReply::ElectLeaders(results))
            }
            ControllerRequest::AlterPartitionReassignments(r) => {
                let (records, results) = self
                    .decisions
                    .alter_partition_reassignments(&self.latest, &r)
                    .map_err(err)?;
                (
                    records,
                    ControllerReply::AlterPartitionReassignments(results),
                )
            }
            ControllerRequest::UnregisterBroker { broker_id } => {
                let records = self
                    .decisions
                    .unregister_broker(&self.latest, broker_id)
                    .map_err(err)?;
                (records, ControllerReply::UnregisterBroker)
            }
        };
        self.apply(&decided.0);
        self.report_elections();
        Ok(decided)
    }

    /// Counts and logs the elections decided since the last report.
    fn report_elections(&mut self) {
        for e in self.decisions.take_elections() {
            match e.kind {
                ElectionKind::Unclean => {
                    self.elections.unclean.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        topic = %e.topic,
                        partition = e.partition,
                        leader = e.leader,
                        previous_leader = e.previous_leader,
                        previous_isr = ?e.previous_isr,
                        "unclean leader election: broker {} now leads {}-{} from outside the ISR {:?}; records that only the former ISR had are lost",
                        e.leader,
                        e.topic,
                        e.partition,
                        e.previous_isr
                    );
                }
                ElectionKind::Preferred => {
                    self.elections.preferred.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        topic = %e.topic,
                        partition = e.partition,
                        leader = e.leader,
                        previous_leader = e.previous_leader,
                        "preferred leader election: leadership of {}-{} back to broker {}",
                        e.topic,
                        e.partition,
                        e.leader
                    );
                }
            }
        }
    }

    /// Records this leader proposes, applied to `latest` at once (the next decision sees them).
    fn apply(&mut self, records: &[MetadataRecord]) {
        for r in records {
            if let Err(e) = self.latest.apply(r) {
                // The decisions promise records that apply; a failure is a bug there.
                debug_assert!(false, "a controller record does not apply: {e}");
                tracing::error!(error = %e, record = r.name(), "a controller record does not apply");
            }
        }
    }
}
