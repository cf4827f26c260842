//! Leader elections the controller makes when asked or on its own timers: ElectLeaders (KIP-460,
//! Kafka's `ReplicationControlManager.electLeaders`), preferred-leader rebalancing every
//! `leader.imbalance.check.interval.seconds` while `auto.leader.rebalance.enable`
//! (`maybeBalancePartitionLeaders`), and unclean elections for leaderless partitions of topics
//! that allow them, every `unclean.leader.election.interval.ms` (`maybeElectUncleanLeaders`: a
//! topic whose `unclean.leader.election.enable` was turned on after it lost its ISR gets a
//! leader then). The rules for one partition are [`pc::elect_leaders`].
//!
//! Every preferred and every unclean election the controller decides, whatever asked for it
//! (fencing and controlled shutdown elect uncleanly where the topic allows it), is noted as a
//! [`LeaderElection`] for the runtime to count and log ([`Controller::take_elections`]): an
//! unclean one gives leadership to a replica outside the ISR, and the records only the former
//! ISR had are lost. An election is unclean exactly when its leader was not in the ISR before,
//! Kafka's `PartitionRegistration.electionWasClean`, which its
//! `ControllerStats.UncleanLeaderElectionsPerSec` counts.

use std::collections::HashMap;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::partitions::{
    change_record, partition_state, unclean_leader_election_enabled, ImageLiveness,
};
use super::{Controller, ControllerConfig, ControllerError, MAX_RECORDS_PER_USER_OP};
use crate::metadata::image::{PartitionRegistration, TopicImage};
use crate::metadata::records::{MetadataRecord, NO_LEADER_CHANGE};
use crate::metadata::MetadataImage;
use crate::partition_change::{self as pc, ElectLeadersError, ElectionType, NO_LEADER};
use crate::NodeId;

/// ElectLeaders' `election_type` codes (v1+; v0 means PREFERRED).
pub const ELECTION_TYPE_PREFERRED: i8 = 0;
pub const ELECTION_TYPE_UNCLEAN: i8 = 1;

/// An ElectLeaders request as the controller takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectLeadersRequest {
    /// [`ELECTION_TYPE_PREFERRED`] or [`ELECTION_TYPE_UNCLEAN`]; any other is refused whole
    /// with INVALID_REQUEST.
    pub election_type: i8,
    /// The partitions to elect for; `None`: every partition of every topic, and the answer
    /// leaves out those that needed no election.
    pub topic_partitions: Option<Vec<ElectLeadersTopic>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectLeadersTopic {
    pub topic: String,
    pub partitions: Vec<i32>,
}

/// One topic of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaElectionResult {
    pub topic: String,
    pub partitions: Vec<PartitionElectionResult>,
}

/// One partition of the answer: 0 when a leader was elected, else ELECTION_NOT_NEEDED,
/// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionElectionResult {
    pub partition_id: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// What kind of election a [`LeaderElection`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionKind {
    /// Leadership moved back to the preferred replica (ElectLeaders PREFERRED, or rebalancing).
    Preferred,
    /// A replica outside the ISR was made leader.
    Unclean,
}

impl ElectionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ElectionKind::Preferred => "preferred",
            ElectionKind::Unclean => "unclean",
        }
    }
}

/// A preferred or unclean election the controller decided (the records are being proposed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    pub topic: String,
    pub partition: i32,
    pub kind: ElectionKind,
    pub leader: NodeId,
    /// [`NO_LEADER`] if the partition had none.
    pub previous_leader: NodeId,
    /// The ISR before the election: after an unclean one, the replicas that may have had
    /// records the new leader lacks.
    pub previous_isr: Vec<NodeId>,
}

impl Controller {
    /// ElectLeaders: a leader election for each partition named (for every partition with
    /// `None`), each answered as Kafka's controller answers (`electLeader`): a topic or
    /// partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION; PREFERRED is
    /// ELECTION_NOT_NEEDED where the preferred replica leads, and elects it where it is a live
    /// ISR member, else PREFERRED_LEADER_NOT_AVAILABLE; UNCLEAN is ELECTION_NOT_NEEDED where
    /// the partition has a leader, and elects the first live ISR member in replica order, else
    /// the first live replica (whatever `unclean.leader.election.enable` says: the caller
    /// asked), else ELIGIBLE_LEADERS_NOT_AVAILABLE. A partition named twice is elected once.
    ///
    /// With `None`, every topic is answered, in name order, listing only the partitions whose
    /// answer is not ELECTION_NOT_NEEDED, as Kafka does. Refused whole: an unknown election
    /// type (INVALID_REQUEST), more than [`MAX_RECORDS_PER_USER_OP`] elections (POLICY_VIOLATION).
    #[allow(clippy::type_complexity)]
    pub fn elect_leaders(
        &mut self,
        image: &MetadataImage,
        request: &ElectLeadersRequest,
    ) -> Result<(Vec<MetadataRecord>, Vec<ReplicaElectionResult>), ControllerError> {
        self.check_active()?;
        let election_type = match request.election_type {
            ELECTION_TYPE_PREFERRED => ElectionType::Preferred,
            ELECTION_TYPE_UNCLEAN => ElectionType::Unclean,
            other => return Err(ControllerError::UnknownElectionType(other)),
        };
        let mut election = Election {
            image,
            liveness: ImageLiveness(image),
            election_type,
            elected: HashMap::new(),
            records: Vec::new(),
        };
        let results: Vec<ReplicaElectionResult> = match &request.topic_partitions {
            Some(topics) => topics
                .iter()
                .map(|t| ReplicaElectionResult {
                    topic: t.topic.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|&p| election.elect(&t.topic, p))
                        .collect(),
                })
                .collect(),
            None => {
                let mut topics: Vec<_> = image.topics().collect();
                topics.sort_by(|a, b| a.name.cmp(&b.name));
                topics
                    .into_iter()
                    .map(|t| ReplicaElectionResult {
                        topic: t.name.to_string(),
                        partitions: t
                            .partitions()
                            .iter()
                            .map(|p| election.elect(&t.name, p.partition_id))
                            .filter(|r| r.error_code != ResponseError::ElectionNotNeeded.code())
                            .collect(),
                    })
                    .collect()
            }
        };
        let records = election.records;
        if records.len() > MAX_RECORDS_PER_USER_OP {
            return Err(ControllerError::BatchTooLarge {
                records: records.len(),
            });
        }
        self.note_elections(image, &records, election_type == ElectionType::Preferred);
        Ok((records, results))
    }

    /// The elections decided since the last call, oldest first. The runtime takes them after
    /// every call that returned records (the list grows until it does).
    pub fn take_elections(&mut self) -> Vec<LeaderElection> {
        std::mem::take(&mut self.elections)
    }

    /// Notes the preferred and unclean elections among `records`, which were decided against
    /// `image`: a new leader outside the old ISR is unclean; with `preferred` (the records move
    /// leadership back to preferred replicas), a new leader that is the first replica is
    /// preferred. Other leader changes (a clean failover) are not noted.
    pub(super) fn note_elections(
        &mut self,
        image: &MetadataImage,
        records: &[MetadataRecord],
        preferred: bool,
    ) {
        for r in records {
            let MetadataRecord::PartitionChange(c) = r else {
                continue;
            };
            if c.leader == NO_LEADER_CHANGE || c.leader == NO_LEADER {
                continue;
            }
            let Some(topic) = image.topic_by_id(&c.topic_id) else {
                continue;
            };
            let Some(old) = topic.partition(c.partition_id) else {
                continue;
            };
            let kind = if !old.isr.contains(&c.leader) {
                ElectionKind::Unclean
            } else if preferred && old.replicas.first() == Some(&c.leader) {
                ElectionKind::Preferred
            } else {
                continue;
            };
            self.elections.push(LeaderElection {
                topic: topic.name.to_string(),
                partition: c.partition_id,
                kind,
                leader: c.leader,
                previous_leader: old.leader,
                previous_isr: old.isr.to_vec(),
            });
        }
    }
}

/// One ElectLeaders request's elections so far.
struct Election<'a> {
    image: &'a MetadataImage,
    liveness: ImageLiveness<'a>,
    election_type: ElectionType,
    /// The partitions elected earlier in this request, and their new leaders.
    elected: HashMap<(Uuid, i32), NodeId>,
    records: Vec<MetadataRecord>,
}

impl Election<'_> {
    fn elect(&mut self, topic_name: &str, partition_id: i32) -> PartitionElectionResult {
        let answer = |code: ResponseError, message: String| PartitionElectionResult {
            partition_id,
            error_code: code.code(),
            error_message: Some(message),
        };
        // Kafka's messages for a topic or partition that does not exist.
        let Some(topic) = self.image.topic_by_name(topic_name) else {
            return answer(
                ResponseError::UnknownTopicOrPartition,
                format!("No such topic as {topic_name}"),
            );
        };
        let Some(partition) = topic.partition(partition_id) else {
            return answer(
                ResponseError::UnknownTopicOrPartition,
                format!("No such partition as {topic_name}-{partition_id}"),
            );
        };
        let key = (topic.id, partition_id);
        let outcome = match self.elected.get(&key) {
            Some(&leader) => Err(ElectLeadersError::ElectionNotNeeded { leader }),
            None => pc::elect_leaders(
                &partition_state(partition),
                self.election_type,
                &self.liveness,
            ),
        };
        match outcome {
            Ok(next) => {
                self.elected.insert(key, next.leader);
                self.records
                    .push(change_record(self.image, topic.id, partition, &next).into());
                PartitionElectionResult {
                    partition_id,
                    error_code: 0,
                    error_message: None,
                }
            }
            Err(e) => PartitionElectionResult {
                partition_id,
                error_code: e.error_code(),
                error_message: Some(format!("{topic_name}-{partition_id}: {e}")),
            },
        }
    }
}

/// A periodic election step (rebalancing, unclean elections of leaderless partitions) due at
/// `next` and every `interval` after (`None`: never): if due at `now_ms`, runs `step`, which
/// appends its records and says whether it stopped at its cap, and sets the next time (10 ms
/// later at the cap, as Kafka comes back then). The records, or none.
pub(super) fn periodic(
    now_ms: u64,
    next: &mut Option<u64>,
    interval: Option<u64>,
    step: impl FnOnce(&mut Vec<MetadataRecord>) -> bool,
) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    if let (Some(at), Some(interval)) = (*next, interval) {
        if at <= now_ms {
            let more = step(&mut records);
            *next = Some(now_ms + if more { 10 } else { interval });
        }
    }
    records
}

/// Preferred-leader elections for partitions whose preferred replica does not lead but could
/// (Kafka's `maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader`), at most `max`.
/// Returns whether it stopped at `max`.
pub(super) fn preferred_elections(
    image: &MetadataImage,
    max: usize,
    out: &mut Vec<MetadataRecord>,
) -> bool {
    elect_each(image, ElectionType::Preferred, max, out, |_, p| {
        p.leader == NO_LEADER || p.replicas.first() != Some(&p.leader)
    })
}

/// Unclean elections for leaderless partitions of topics with `unclean.leader.election.enable`
/// (Kafka's `maybeTriggerUncleanLeaderElectionForLeaderlessPartitions`), at most `max`: the
/// first live ISR member if one came back, else the first live replica. Returns whether it
/// stopped at `max`.
pub(super) fn unclean_elections(
    image: &MetadataImage,
    cfg: &ControllerConfig,
    max: usize,
    out: &mut Vec<MetadataRecord>,
) -> bool {
    // Whether the topic last asked about allows unclean elections.
    let mut enabled: Option<(Uuid, bool)> = None;
    elect_each(image, ElectionType::Unclean, max, out, |topic, p| {
        if p.leader != NO_LEADER {
            return false;
        }
        match enabled {
            Some((id, e)) if id == topic.id => e,
            _ => {
                let e = unclean_leader_election_enabled(image, cfg, &topic.name);
                enabled = Some((topic.id, e));
                e
            }
        }
    })
}

/// Runs `election_type` on every partition `select` picks, appending a record for each that
/// gets a new leader, at most `max`. Returns whether it stopped at `max`.
fn elect_each(
    image: &MetadataImage,
    election_type: ElectionType,
    max: usize,
    out: &mut Vec<MetadataRecord>,
    mut select: impl FnMut(&TopicImage, &PartitionRegistration) -> bool,
) -> bool {
    let liveness = ImageLiveness(image);
    let start = out.len();
    for topic in image.topics() {
        for p in topic.partitions() {
            if !select(topic, p) {
                continue;
            }
            if out.len() - start >= max {
                return true;
            }
            if let Ok(next) = pc::elect_leaders(&partition_state(p), election_type, &liveness) {
                out.push(change_record(image, topic.id, p, &next).into());
            }
        }
    }
    false
}
