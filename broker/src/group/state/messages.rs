//! What goes into and comes out of a [`Group`](super::Group): the requests it takes, the
//! replies it gives parked requests, the records it asks to have written, the events worth a
//! log line, and [`Effects`], which gathers all of them for one operation.

use std::collections::HashMap;

use bytes::Bytes;

use super::{GroupState, StaticReplace};
use crate::group::records::GroupMetadataValue;

/// Identifies a parked JoinGroup or SyncGroup request; chosen by the caller.
pub type WaiterId = u64;

/// The protocol type of Kafka consumers (KIP-62's embedded consumer protocol).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Why a group operation was refused; each is one Kafka error code (mapped at the handler
/// boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
    #[error("the coordinator is loading the group's partition of __consumer_offsets")]
    CoordinatorLoadInProgress,
    #[error("this broker is not the group's coordinator")]
    NotCoordinator,
    #[error("the group id is empty")]
    InvalidGroupId,
    #[error("the member id is not a member of the group")]
    UnknownMemberId,
    #[error("a member id is required: rejoin with the id assigned")]
    MemberIdRequired,
    #[error("the generation id is not the group's")]
    IllegalGeneration,
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    #[error("the member's protocol type or protocols do not match the group's")]
    InconsistentGroupProtocol,
    #[error(
        "the session timeout is outside group.min.session.timeout.ms..group.max.session.timeout.ms"
    )]
    InvalidSessionTimeout,
    #[error("the group has reached group.max.size members")]
    GroupMaxSizeReached,
    #[error("another member with the same group.instance.id has replaced this one")]
    FencedInstanceId,
    #[error("the group does not exist")]
    GroupIdNotFound,
    #[error("the group has members")]
    NonEmptyGroup,
    #[error("the member epoch is not the member's current epoch")]
    StaleMemberEpoch,
    #[error("members of a consumer group commit with OffsetCommit version 9 or above")]
    UnsupportedVersion,
    #[error("the group is subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("the offset metadata is larger than offset.metadata.max.bytes")]
    OffsetMetadataTooLarge,
    #[error("the topic or partition does not exist")]
    UnknownTopicOrPartition,
    #[error("the request is invalid")]
    InvalidRequest,
    #[error("the producer's epoch is older than its transaction's")]
    InvalidProducerEpoch,
    #[error("unexpected server error")]
    UnknownServerError,
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

/// A JoinGroup, as the state machine needs it.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// Empty for a member joining for the first time.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    /// JoinGroup v4+: a new dynamic member must first get its id (KIP-394).
    pub require_known_member_id: bool,
    /// JoinGroup v9+: a static leader rejoining a stable group may skip the assignment.
    pub supports_skip_assignment: bool,
    /// The id the member gets if it is new (the caller generates it:
    /// `<client.id or group.instance.id>-<uuid>`, as Kafka does).
    pub new_member_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinReply {
    pub error: Option<GroupError>,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub skip_assignment: bool,
    /// Every member's metadata for the selected protocol, for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinReply {
    pub fn error(member_id: &str, error: GroupError) -> JoinReply {
        JoinReply {
            error: Some(error),
            member_id: member_id.to_string(),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReply {
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncReply {
    pub fn error(error: GroupError) -> SyncReply {
        SyncReply {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// A group metadata record the caller must append to `__consumer_offsets`, then report with
/// [`Group::stored`].
#[derive(Debug, Clone)]
pub struct Store {
    pub value: GroupMetadataValue,
    pub then: AfterStore,
}

/// What the group does once its record is (or failed to be) written.
#[derive(Debug, Clone)]
pub enum AfterStore {
    /// The group became empty: nothing waits on it (a failure is only logged, as in Kafka:
    /// the previous generation would come back after a crash, with no members to use it).
    Nothing,
    /// The leader's SyncGroup: on success every member gets its assignment and the group is
    /// Stable.
    Assignment {
        generation_id: i32,
        assignment: HashMap<String, Bytes>,
    },
    /// A static member rejoined a stable group under a new member id (KIP-345): on success it
    /// gets the current generation without a rebalance; on failure the old id is restored.
    StaticReplace(Box<StaticReplace>),
}

/// Something worth a line in the broker's log (the coordinator logs them; tests read them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEvent {
    PreparingRebalance {
        reason: &'static str,
    },
    /// The join phase completed: the members wait for the leader's assignment.
    Stabilized {
        generation_id: i32,
        members: usize,
    },
    /// The join phase completed with nobody left.
    Emptied {
        generation_id: i32,
    },
    MemberRemoved {
        member_id: String,
        reason: &'static str,
    },
    StaticMemberReplaced {
        group_instance_id: String,
        old_member_id: String,
        new_member_id: String,
    },
}

impl std::fmt::Display for GroupEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupEvent::PreparingRebalance { reason } => {
                write!(f, "preparing to rebalance: {reason}")
            }
            GroupEvent::Stabilized {
                generation_id,
                members,
            } => write!(
                f,
                "stabilized generation {generation_id} with {members} members"
            ),
            GroupEvent::Emptied { generation_id } => {
                write!(f, "generation {generation_id} is empty")
            }
            GroupEvent::MemberRemoved { member_id, reason } => {
                write!(f, "removed member {member_id}: {reason}")
            }
            GroupEvent::StaticMemberReplaced {
                group_instance_id,
                old_member_id,
                new_member_id,
            } => write!(
                f,
                "static member {group_instance_id} rejoined as {new_member_id}, fencing {old_member_id}"
            ),
        }
    }
}

/// What an operation asks the caller to do.
#[derive(Debug, Default)]
pub struct Effects {
    pub join_replies: Vec<(WaiterId, JoinReply)>,
    pub sync_replies: Vec<(WaiterId, SyncReply)>,
    pub store: Vec<Store>,
    pub events: Vec<GroupEvent>,
}

impl Effects {
    pub(super) fn join(&mut self, waiter: WaiterId, reply: JoinReply) {
        self.join_replies.push((waiter, reply));
    }
    pub fn is_empty(&self) -> bool {
        self.join_replies.is_empty()
            && self.sync_replies.is_empty()
            && self.store.is_empty()
            && self.events.is_empty()
    }

    pub fn merge(&mut self, other: Effects) {
        self.join_replies.extend(other.join_replies);
        self.sync_replies.extend(other.sync_replies);
        self.store.extend(other.store);
        self.events.extend(other.events);
    }
    pub(super) fn removed(&mut self, member_id: &str, reason: &'static str) {
        self.events.push(GroupEvent::MemberRemoved {
            member_id: member_id.to_string(),
            reason,
        });
    }
}
/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol_data: String,
    pub members: Vec<DescribedMember>,
}
