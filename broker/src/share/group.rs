//! A share group's membership (KIP-932's ShareGroupHeartbeat), sans-IO: members join with
//! epoch 0 and the topics they subscribe to, heartbeat with the epoch they were given, and
//! leave with -1 or by missing their session timeout. The clock and the topics' metadata are
//! inputs.
//!
//! Assignment: every member gets every partition of the topics it subscribes to. Records are
//! shared by acquisition locks in each share-partition, not by partition ownership, so members
//! never wait for a revocation and a topic of one partition is consumed by all members at once
//! (Kafka's `SimpleAssignor` spreads partitions across members when there are more of them;
//! Samsa's choice is in docs/design-notes.md).
//!
//! The group epoch rises when a member joins, leaves or changes its subscription, and when a
//! subscribed topic appears or gains partitions; each member takes the group epoch at its next
//! heartbeat and is sent its assignment with it.

use std::collections::BTreeMap;

use uuid::Uuid;

/// A topic as the metadata image knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicMeta {
    pub id: Uuid,
    pub partitions: i32,
}

/// What a heartbeat carries.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    /// `None`: unchanged since the last heartbeat.
    pub topics: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// The heartbeat's answer: the member's epoch and, when it changed, its whole assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatReply {
    pub member_epoch: i32,
    pub assignment: Option<Vec<(Uuid, Vec<i32>)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareGroupError {
    InvalidRequest(&'static str),
    UnknownMemberId,
    FencedMemberEpoch,
    GroupMaxSizeReached,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub id: String,
    pub epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topics: Vec<String>,
    pub deadline_ms: i64,
}

pub struct ShareGroup {
    pub id: String,
    epoch: i32,
    members: BTreeMap<String, Member>,
    /// The subscribed topics as they were at the last epoch: a change bumps the epoch.
    seen: BTreeMap<String, Option<TopicMeta>>,
}

impl ShareGroup {
    pub fn new(id: &str) -> ShareGroup {
        ShareGroup {
            id: id.to_string(),
            epoch: 0,
            members: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// A share group read back from its coordinator's log: no members, at `epoch`.
    pub fn restored(id: &str, epoch: i32) -> ShareGroup {
        ShareGroup {
            epoch: epoch.max(0),
            ..ShareGroup::new(id)
        }
    }

    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's share group states: Empty or Stable (no rebalance is ever in progress).
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    /// Every topic some member subscribes to.
    pub fn subscribed_topics(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .members
            .values()
            .flat_map(|m| m.topics.iter().cloned())
            .collect();
        t.sort();
        t.dedup();
        t
    }

    /// One heartbeat at `now_ms`. `session_ms` is the group's session timeout, `max_size` its
    /// member limit; `topic` resolves a topic name in the current metadata.
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topic: &dyn Fn(&str) -> Option<TopicMeta>,
        session_ms: i64,
        max_size: usize,
        now_ms: i64,
    ) -> Result<HeartbeatReply, ShareGroupError> {
        if hb.member_id.is_empty() {
            return Err(ShareGroupError::InvalidRequest("MemberId can't be empty."));
        }
        let deadline_ms = now_ms.saturating_add(session_ms);
        let mut changed = false;
        match hb.member_epoch {
            -1 => {
                if self.members.remove(&hb.member_id).is_none() {
                    return Err(ShareGroupError::UnknownMemberId);
                }
                self.refresh(topic);
                self.bump();
                return Ok(HeartbeatReply {
                    member_epoch: -1,
                    assignment: None,
                });
            }
            0 => {
                let topics = match &hb.topics {
                    Some(t) if !t.is_empty() => t.clone(),
                    _ => {
                        return Err(ShareGroupError::InvalidRequest(
                            "SubscribedTopicNames must be set in first request.",
                        ))
                    }
                };
                if !self.members.contains_key(&hb.member_id) && self.members.len() >= max_size {
                    return Err(ShareGroupError::GroupMaxSizeReached);
                }
                // A member joining again (epoch 0 with a known id) starts over.
                self.members.insert(
                    hb.member_id.clone(),
                    Member {
                        id: hb.member_id.clone(),
                        epoch: 0,
                        rack_id: hb.rack_id.clone(),
                        client_id: hb.client_id.clone(),
                        client_host: hb.client_host.clone(),
                        topics,
                        deadline_ms,
                    },
                );
                changed = true;
            }
            e if e < -1 => {
                return Err(ShareGroupError::InvalidRequest("MemberEpoch is invalid."));
            }
            e => {
                let m = self
                    .members
                    .get_mut(&hb.member_id)
                    .ok_or(ShareGroupError::UnknownMemberId)?;
                if e != m.epoch {
                    return Err(ShareGroupError::FencedMemberEpoch);
                }
                m.deadline_ms = deadline_ms;
                if hb.rack_id.is_some() {
                    m.rack_id = hb.rack_id.clone();
                }
                if let Some(t) = &hb.topics {
                    if t.is_empty() {
                        return Err(ShareGroupError::InvalidRequest(
                            "SubscribedTopicNames must not be empty.",
                        ));
                    }
                    if *t != m.topics {
                        m.topics = t.clone();
                        changed = true;
                    }
                }
            }
        }
        if self.refresh(topic) || changed {
            self.bump();
        }
        let epoch = self.epoch;
        let m = self
            .members
            .get_mut(&hb.member_id)
            .expect("the member joined or was found above");
        if m.epoch == epoch {
            return Ok(HeartbeatReply {
                member_epoch: epoch,
                assignment: None,
            });
        }
        m.epoch = epoch;
        let assignment = assignment_of(&m.topics, topic);
        assert!(epoch > 0, "a member's epoch starts at 1");
        Ok(HeartbeatReply {
            member_epoch: epoch,
            assignment: Some(assignment),
        })
    }

    /// A member's current assignment (for ShareGroupDescribe).
    pub fn assignment(
        &self,
        member_id: &str,
        topic: &dyn Fn(&str) -> Option<TopicMeta>,
    ) -> Vec<(Uuid, Vec<i32>)> {
        self.members
            .get(member_id)
            .map(|m| assignment_of(&m.topics, topic))
            .unwrap_or_default()
    }

    /// Removes the members whose session expired by `now_ms`; returns their ids.
    pub fn expire(&mut self, now_ms: i64) -> Vec<String> {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.deadline_ms <= now_ms)
            .map(|m| m.id.clone())
            .collect();
        for id in &gone {
            self.members.remove(id);
        }
        if !gone.is_empty() {
            self.bump();
        }
        gone
    }

    /// Whether a subscribed topic was created, deleted or grew since it was last seen (or the
    /// subscribed set changed); remembers what it sees.
    fn refresh(&mut self, topic: &dyn Fn(&str) -> Option<TopicMeta>) -> bool {
        let now: BTreeMap<String, Option<TopicMeta>> = self
            .subscribed_topics()
            .into_iter()
            .map(|t| {
                let meta = topic(&t);
                (t, meta)
            })
            .collect();
        if now == self.seen {
            return false;
        }
        self.seen = now;
        true
    }

    fn bump(&mut self) {
        self.epoch = self.epoch.checked_add(1).expect("group epoch overflow");
    }
}

fn assignment_of(
    topics: &[String],
    topic: &dyn Fn(&str) -> Option<TopicMeta>,
) -> Vec<(Uuid, Vec<i32>)> {
    let mut out: Vec<(Uuid, Vec<i32>)> = topics
        .iter()
        .filter_map(|t| topic(t))
        .map(|m| (m.id, (0..m.partitions).collect()))
        .collect();
    out.sort_by_key(|(id, _)| *id);
    out.dedup_by_key(|(id, _)| *id);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(member: &str, epoch: i32, topics: Option<&[&str]>) -> Heartbeat {
        Heartbeat {
            member_id: member.into(),
            member_epoch: epoch,
            rack_id: None,
            topics: topics.map(|t| t.iter().map(|s| s.to_string()).collect()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn meta(name: &str) -> Option<TopicMeta> {
        match name {
            "t" => Some(TopicMeta {
                id: id(1),
                partitions: 2,
            }),
            "u" => Some(TopicMeta {
                id: id(2),
                partitions: 1,
            }),
            _ => None,
        }
    }

    #[test]
    fn members_join_get_every_partition_and_heartbeat_with_their_epoch() {
        let mut g = ShareGroup::new("g");
        let a = g
            .heartbeat(hb("a", 0, Some(&["t"])), &meta, 45_000, 10, 0)
            .unwrap();
        assert_eq!(a.member_epoch, 1);
        assert_eq!(a.assignment, Some(vec![(id(1), vec![0, 1])]));
        let b = g
            .heartbeat(
                hb("b", 0, Some(&["t", "u", "missing"])),
                &meta,
                45_000,
                10,
                0,
            )
            .unwrap();
        assert_eq!(b.member_epoch, 2);
        assert_eq!(
            b.assignment,
            Some(vec![(id(1), vec![0, 1]), (id(2), vec![0])])
        );
        // a takes the new epoch at its next heartbeat, with its (same) assignment.
        let a = g.heartbeat(hb("a", 1, None), &meta, 45_000, 10, 1).unwrap();
        assert_eq!(a.member_epoch, 2);
        assert_eq!(a.assignment, Some(vec![(id(1), vec![0, 1])]));
        // What ShareGroupDescribe shows.
        assert_eq!(
            g.assignment("b", &meta),
            vec![(id(1), vec![0, 1]), (id(2), vec![0])]
        );
        assert!(g.assignment("nobody", &meta).is_empty());
        // Nothing changed since: no assignment sent.
        let a = g.heartbeat(hb("a", 2, None), &meta, 45_000, 10, 2).unwrap();
        assert_eq!(
            a,
            HeartbeatReply {
                member_epoch: 2,
                assignment: None
            }
        );
        assert_eq!(g.state(), "Stable");
    }

    #[test]
    fn wrong_epochs_and_unknown_members_are_refused() {
        let mut g = ShareGroup::new("g");
        g.heartbeat(hb("a", 0, Some(&["t"])), &meta, 45_000, 10, 0)
            .unwrap();
        assert_eq!(
            g.heartbeat(hb("a", 7, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::FencedMemberEpoch)
        );
        assert_eq!(
            g.heartbeat(hb("x", 1, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::UnknownMemberId)
        );
        assert!(matches!(
            g.heartbeat(hb("", 0, Some(&["t"])), &meta, 45_000, 10, 0),
            Err(ShareGroupError::InvalidRequest(_))
        ));
        assert!(matches!(
            g.heartbeat(hb("b", 0, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::InvalidRequest(_))
        ));
        assert!(matches!(
            g.heartbeat(hb("b", 0, Some(&[])), &meta, 45_000, 10, 0),
            Err(ShareGroupError::InvalidRequest(_))
        ));
        assert!(matches!(
            g.heartbeat(hb("a", -2, None), &meta, 45_000, 10, 0),
            Err(ShareGroupError::InvalidRequest(_))
        ));
        assert!(matches!(
            g.heartbeat(hb("a", 1, Some(&[])), &meta, 45_000, 10, 0),
            Err(ShareGroupError::InvalidRequest(_))
        ));
        // Refused heartbeats changed nothing.
        assert_eq!(
            g.members().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(g.epoch(), 1);
        assert!(!g.is_empty());
        assert_eq!(
            g.heartbeat(hb("b", 0, Some(&["t"])), &meta, 45_000, 1, 0),
            Err(ShareGroupError::GroupMaxSizeReached)
        );
    }

    #[test]
    fn leaving_and_expiring_remove_members_and_bump_the_epoch() {
        let mut g = ShareGroup::new("g");
        g.heartbeat(hb("a", 0, Some(&["t"])), &meta, 1_000, 10, 0)
            .unwrap();
        g.heartbeat(hb("b", 0, Some(&["t"])), &meta, 1_000, 10, 500)
            .unwrap();
        assert_eq!(g.epoch(), 2);
        let left = g
            .heartbeat(hb("b", -1, None), &meta, 1_000, 10, 600)
            .unwrap();
        assert_eq!(left.member_epoch, -1);
        assert_eq!(g.epoch(), 3);
        assert_eq!(g.expire(999), Vec::<String>::new());
        assert_eq!(g.epoch(), 3, "nothing expired: no new epoch");
        assert_eq!(g.expire(1_000), vec!["a".to_string()]);
        assert_eq!(g.epoch(), 4);
        assert!(g.is_empty());
        assert_eq!(g.state(), "Empty");
        assert_eq!(
            g.heartbeat(hb("a", -1, None), &meta, 1_000, 10, 0),
            Err(ShareGroupError::UnknownMemberId)
        );
    }

    #[test]
    fn a_changed_subscription_bumps_the_epoch_and_the_assignment() {
        let mut g = ShareGroup::new("g");
        g.heartbeat(hb("a", 0, Some(&["t"])), &meta, 45_000, 10, 0)
            .unwrap();
        // The same list again changes nothing.
        let same = g
            .heartbeat(hb("a", 1, Some(&["t"])), &meta, 45_000, 10, 1)
            .unwrap();
        assert_eq!(
            same,
            HeartbeatReply {
                member_epoch: 1,
                assignment: None
            }
        );
        let moved = g
            .heartbeat(hb("a", 1, Some(&["u"])), &meta, 45_000, 10, 2)
            .unwrap();
        assert_eq!(moved.member_epoch, 2);
        assert_eq!(moved.assignment, Some(vec![(id(2), vec![0])]));
        assert_eq!(g.subscribed_topics(), vec!["u".to_string()]);
    }

    #[test]
    fn a_topic_that_appears_or_grows_bumps_the_epoch() {
        let mut g = ShareGroup::new("g");
        let a = g
            .heartbeat(hb("a", 0, Some(&["v"])), &meta, 45_000, 10, 0)
            .unwrap();
        assert_eq!(a.assignment, Some(vec![]));
        let parts = std::cell::Cell::new(1);
        let with_v = |name: &str| {
            (name == "v").then(|| TopicMeta {
                id: id(3),
                partitions: parts.get(),
            })
        };
        let a = g
            .heartbeat(hb("a", 1, None), &with_v, 45_000, 10, 1)
            .unwrap();
        assert_eq!(a.member_epoch, 2);
        assert_eq!(a.assignment, Some(vec![(id(3), vec![0])]));
        parts.set(3);
        let a = g
            .heartbeat(hb("a", 2, None), &with_v, 45_000, 10, 2)
            .unwrap();
        assert_eq!(a.assignment, Some(vec![(id(3), vec![0, 1, 2])]));
        assert_eq!(a.member_epoch, 3);
    }
}
