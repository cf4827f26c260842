//! The shell of classic members inside consumer groups (KIP-848's online migration): JoinGroup,
//! SyncGroup, Heartbeat and LeaveGroup to the id of a consumer group with members go to the
//! group's state machine ([`ConsumerGroup::classic_join`] and the others), as Kafka's
//! coordinator routes them. The consumer protocol's embedded bytes (ConsumerProtocolSubscription,
//! ConsumerProtocolAssignment) are read and written here.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::{consumer_settings, NodeTopics};
use crate::group::consumer::group::classic::{
    ClassicError, ClassicGroupMember, ClassicJoin, ClassicJoined,
};
use crate::group::consumer::group::TopicView;
use crate::group::consumer::reconcile::Partitions;
use crate::group::{replicated, GroupCoordinator, GroupError};
use crate::group::{JoinReply, JoinRequest, SyncReply, SyncRequest};
use crate::node::Node;

/// The highest ConsumerProtocolSubscription/Assignment version this broker reads and writes.
const CONSUMER_PROTOCOL_MAX_VERSION: i16 = 3;

fn group_error(e: &ClassicError) -> GroupError {
    use crate::group::consumer::group::HeartbeatError as H;
    match e {
        ClassicError::UnknownMemberId(_) => GroupError::UnknownMemberId,
        ClassicError::FencedInstanceId(_) => GroupError::FencedInstanceId,
        ClassicError::IllegalGeneration(_) => GroupError::IllegalGeneration,
        ClassicError::InconsistentGroupProtocol(_) => GroupError::InconsistentGroupProtocol,
        ClassicError::RebalanceInProgress(_) => GroupError::RebalanceInProgress,
        ClassicError::GroupMaxSizeReached(_) => GroupError::GroupMaxSizeReached,
        ClassicError::Heartbeat(H::FencedInstanceId(_) | H::UnreleasedInstanceId(_)) => {
            GroupError::FencedInstanceId
        }
        ClassicError::Heartbeat(H::GroupMaxSizeReached(_)) => GroupError::GroupMaxSizeReached,
        ClassicError::Heartbeat(_) => GroupError::UnknownMemberId,
    }
}

/// A ConsumerProtocolSubscription (its version first), read as Kafka's `ConsumerProtocol` reads
/// it: a newer version than known is read as the newest known.
fn subscription(metadata: &[u8]) -> Option<ConsumerProtocolSubscription> {
    let mut b = Bytes::copy_from_slice(metadata);
    if b.len() < 2 {
        return None;
    }
    let version = b.get_i16();
    if version < 0 {
        return None;
    }
    ConsumerProtocolSubscription::decode(&mut b, version.min(CONSUMER_PROTOCOL_MAX_VERSION)).ok()
}

/// The members of a classic group as a consumer group takes them (the upgrade), their
/// subscriptions and assignments read from the group's protocol; `Err` when one does not parse
/// (Kafka refuses the upgrade then).
pub(super) fn classic_group_members(
    node: &Node,
    g: &crate::group::Group,
) -> Result<Vec<ClassicGroupMember>, ()> {
    let topics = NodeTopics(node);
    let protocol = g.protocol_name().unwrap_or_default().to_string();
    g.members()
        .map(|m| {
            let sub = subscription(&m.metadata(&protocol)).ok_or(())?;
            let mut b = m.assignment.clone();
            let mut assigned = Partitions::new();
            if b.len() >= 2 {
                let version = b.get_i16().clamp(0, CONSUMER_PROTOCOL_MAX_VERSION);
                let a = ConsumerProtocolAssignment::decode(&mut b, version).map_err(|_| ())?;
                for tp in &a.assigned_partitions {
                    if let Some(t) = topics.topic(tp.topic.as_str()) {
                        assigned
                            .entry(t.id)
                            .or_default()
                            .extend(tp.partitions.iter().copied().filter(|p| *p < t.partitions));
                    }
                }
            }
            Ok(ClassicGroupMember {
                member_id: m.member_id.clone(),
                instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                session_timeout_ms: m.session_timeout_ms,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                protocols: m
                    .protocols
                    .iter()
                    .map(|p| (p.name.clone(), p.metadata.clone()))
                    .collect(),
                topics: sub.topics.iter().map(|t| t.to_string()).collect(),
                rack: sub.rack_id.as_ref().map(|r| r.to_string()),
                assigned,
            })
        })
        .collect()
}

/// `assigned` as a ConsumerProtocolAssignment at the version of `first_metadata` (the member's
/// first protocol's subscription), as Kafka answers a classic member's SyncGroup.
pub(super) fn assignment_bytes(node: &Node, assigned: &Partitions, first_metadata: &[u8]) -> Bytes {
    let version = match first_metadata {
        [a, b, ..] => i16::from_be_bytes([*a, *b]).clamp(0, CONSUMER_PROTOCOL_MAX_VERSION),
        _ => 0,
    };
    let mut a = ConsumerProtocolAssignment::default();
    for (topic_id, ps) in assigned {
        let Some(topic) = node.topics.get_by_id(topic_id) else {
            continue;
        };
        let mut tp = TopicPartition::default();
        tp.topic = StrBytes::from_string(topic.name.clone()).into();
        tp.partitions = ps.iter().copied().collect();
        a.assigned_partitions.push(tp);
    }
    let mut out = BytesMut::new();
    out.put_i16(version);
    a.encode(&mut out, version)
        .expect("an assignment of known topics encodes");
    out.freeze()
}

impl GroupCoordinator {
    /// JoinGroup to the id of a consumer group with members: the member joins it with the
    /// classic protocol. `None` when the id is not such a group (the classic path takes it).
    pub(in crate::group) async fn classic_join_consumer(
        &self,
        node: &Node,
        group_id: &str,
        req: &JoinRequest,
    ) -> Option<JoinReply> {
        let group = self.consumer_group(group_id)?;
        let now = crate::util::now_ms();
        let settings = consumer_settings(node, group_id);
        let topics = NodeTopics(node);
        let sub = req
            .protocols
            .first()
            .and_then(|p| subscription(&p.metadata));
        let mut owned = Partitions::new();
        for tp in sub.iter().flat_map(|s| &s.owned_partitions) {
            if let Some(t) = topics.topic(tp.topic.as_str()) {
                owned
                    .entry(t.id)
                    .or_default()
                    .extend(tp.partitions.iter().copied());
            }
        }
        let join = ClassicJoin {
            member_id: req.member_id.clone(),
            new_member_id: req.new_member_id.clone(),
            instance_id: req.group_instance_id.clone(),
            // Kafka's `JoinGroupRequest.requiresKnownMemberId`: v4+, a dynamic member, no id.
            requires_known_member_id: req.require_known_member_id
                && req.member_id.is_empty()
                && req.group_instance_id.is_none(),
            session_timeout_ms: req.session_timeout_ms,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols: req
                .protocols
                .iter()
                .map(|p| (p.name.clone(), p.metadata.clone()))
                .collect(),
            topics: sub
                .as_ref()
                .map(|s| s.topics.iter().map(|t| t.to_string()).collect())
                .unwrap_or_default(),
            owned,
            rack: sub
                .as_ref()
                .and_then(|s| s.rack_id.as_ref())
                .map(|r| r.to_string()),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
        };
        let refuse = |e: GroupError| Some(JoinReply::error(&req.member_id, e));
        let (joined, write) = {
            let mut g = group.lock();
            if g.is_empty() || !self.is_current(group_id, &group) {
                // An empty consumer group gives way to a classic group instead; a downgraded
                // one is a classic group already.
                return None;
            }
            if sub.is_none() && req.protocol_type == "consumer" {
                return refuse(GroupError::InconsistentGroupProtocol);
            }
            let before = g.bytes();
            let result = g.classic_join(join, &topics, &settings, now);
            self.account(before, g.bytes());
            let (joined, records) = match result {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(group = group_id, "classic JoinGroup refused: {e}");
                    return refuse(group_error(&e));
                }
            };
            self.schedule_consumer(&g);
            match self.write_consumer_records(node, &mut g, records, now) {
                Ok(w) => (joined, w),
                Err(e) => return refuse(e),
            }
        };
        if let Some(w) = write {
            if let Err(e) = replicated(group_id, w).await {
                return refuse(e);
            }
        }
        Some(match joined {
            ClassicJoined::MemberIdRequired(id) => {
                JoinReply::error(&id, GroupError::MemberIdRequired)
            }
            ClassicJoined::Joined {
                member_id,
                generation,
                protocol_name,
            } => {
                tracing::info!(group = group_id, member = %member_id, generation, "classic member joined the consumer group");
                JoinReply {
                    error: None,
                    member_id,
                    generation_id: generation,
                    protocol_type: Some("consumer".to_string()),
                    protocol_name: Some(protocol_name),
                    leader: String::new(),
                    skip_assignment: false,
                    members: Vec::new(),
                }
            }
        })
    }

    /// SyncGroup of a classic member of a consumer group (`None`: not a consumer group).
    pub(in crate::group) fn classic_sync_consumer(
        &self,
        node: &Node,
        group_id: &str,
        req: &SyncRequest,
    ) -> Option<SyncReply> {
        let group = self.consumer_group(group_id)?;
        let mut g = group.lock();
        if !self.is_current(group_id, &group) {
            return None;
        }
        let result = g.classic_sync(
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            (req.protocol_type.as_deref(), req.protocol_name.as_deref()),
            crate::util::now_ms(),
        );
        self.schedule_consumer(&g);
        Some(match result {
            Ok(s) => SyncReply {
                error: None,
                protocol_type: req.protocol_type.clone(),
                protocol_name: req.protocol_name.clone(),
                assignment: assignment_bytes(node, &s.assigned, &s.first_protocol_metadata),
            },
            Err(e) => SyncReply::error(group_error(&e)),
        })
    }

    /// Heartbeat of a classic member of a consumer group (`None`: not a consumer group).
    pub(in crate::group) fn classic_heartbeat_consumer(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Option<Result<(), GroupError>> {
        let group = self.consumer_group(group_id)?;
        let mut g = group.lock();
        if !self.is_current(group_id, &group) {
            return None;
        }
        let result = g.classic_heartbeat(member_id, instance_id, generation, crate::util::now_ms());
        self.schedule_consumer(&g);
        Some(result.map_err(|e| group_error(&e)))
    }

    /// LeaveGroup for members of a consumer group (`None`: not a consumer group).
    pub async fn classic_leave_consumer(
        &self,
        node: &Node,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Option<Result<Vec<Result<(), GroupError>>, GroupError>> {
        let group = self.consumer_group(group_id)?;
        let now = crate::util::now_ms();
        let settings = consumer_settings(node, group_id);
        let (results, write) = {
            let mut g = group.lock();
            if !self.is_current(group_id, &group) {
                return None;
            }
            let before = g.bytes();
            let (results, records) = g.classic_leave(members, &NodeTopics(node), &settings);
            self.account(before, g.bytes());
            for id in results.iter().flatten() {
                tracing::info!(group = group_id, member = %id, "classic member left the consumer group");
            }
            self.schedule_consumer(&g);
            match self.write_consumer_records(node, &mut g, records, now) {
                Ok(w) => (results, w),
                Err(e) => return Some(Err(e)),
            }
        };
        if let Some(w) = write {
            if let Err(e) = replicated(group_id, w).await {
                return Some(Err(e));
            }
        }
        Some(Ok(results
            .into_iter()
            .map(|r| r.map(|_| ()).map_err(|e| group_error(&e)))
            .collect()))
    }
}
