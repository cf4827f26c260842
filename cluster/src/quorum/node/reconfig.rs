//! The leader's side of AddRaftVoter and RemoveRaftVoter (KIP-853): one voter change at a
//! time, each a `KRaftVoters` control batch that takes effect where it is appended and is done
//! once committed. A leader that removed itself leads until that commit, then resigns.

use super::*;
use crate::quorum::voters::{voters_record, VoterNode};
use uuid::Uuid;

/// Why a voter change was refused, as AddRaftVoter / RemoveRaftVoter answer it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VoterChangeError {
    /// NOT_LEADER_OR_FOLLOWER (6): ask the leader.
    #[error(
        "this node is not the metadata quorum's leader (leader {leader_id:?} in epoch {epoch})"
    )]
    NotLeader {
        leader_id: Option<NodeId>,
        epoch: i32,
    },
    /// UNSUPPORTED_VERSION (35): the voters are fixed (kraft.version 0).
    #[error("the voters of this quorum are fixed by controller.quorum.voters (kraft.version is 0): voters cannot be added or removed")]
    Fixed,
    /// REQUEST_TIMED_OUT (7): not now (another change, or no commit in this epoch yet); retry.
    #[error("{0}")]
    NotNow(String),
    /// DUPLICATE_VOTER (126).
    #[error("{0}")]
    DuplicateVoter(String),
    /// VOTER_NOT_FOUND (127).
    #[error("{0}")]
    VoterNotFound(String),
    /// INVALID_REQUEST (42).
    #[error("{0}")]
    Invalid(String),
}

impl VoterChangeError {
    /// Kafka's error code.
    pub fn code(&self) -> i16 {
        match self {
            VoterChangeError::NotLeader { .. } => 6,
            VoterChangeError::Fixed => 35,
            VoterChangeError::NotNow(_) => 7,
            VoterChangeError::DuplicateVoter(_) => 126,
            VoterChangeError::VoterNotFound(_) => 127,
            VoterChangeError::Invalid(_) => 42,
        }
    }
}

impl Quorum {
    /// Adds `voter`, an observer that fetches from this leader and has caught up. Returns the
    /// offset of the voter set's record: the change is done once the high watermark passes it
    /// and [`Quorum::epoch_at`] still names this epoch there (as for [`Quorum::propose`]).
    pub fn add_voter(&mut self, now: u64, voter: VoterNode) -> Result<i64, VoterChangeError> {
        let mut set = self.change_allowed()?;
        if set.contains_key(&voter.id) {
            return Err(VoterChangeError::DuplicateVoter(format!(
                "node {} is already a voter of the metadata quorum (voters {:?})",
                voter.id,
                set.keys().collect::<Vec<_>>()
            )));
        }
        if voter.endpoints.is_empty() {
            return Err(VoterChangeError::Invalid(format!(
                "node {} has no controller listener to be reached at",
                voter.id
            )));
        }
        let State::Leader(l) = &self.state else {
            unreachable!("checked by change_allowed")
        };
        // Caught up: it fetches from this leader and has reached the log end within a fetch
        // timeout, so that adding it does not hold the high watermark back (Kafka asks less:
        // a fetch within the hour).
        let horizon = now.saturating_sub(self.cfg.fetch_timeout_ms);
        let caught_up = l.observers.get(&voter.id).is_some_and(|o| {
            o.last_fetch_ms.is_some_and(|t| t >= horizon)
                && o.last_caught_up_ms.is_some_and(|t| t >= horizon)
        });
        if !caught_up {
            return Err(VoterChangeError::NotNow(format!(
                "node {} is not a caught-up observer of this leader: start it (with \
                 controller.quorum.bootstrap.servers) and let it fetch the metadata log first",
                voter.id
            )));
        }
        set.insert(voter.id, voter);
        Ok(self.append_voters(now, &set))
    }

    /// Removes voter `id` (whose metadata directory is `directory_id`, when given). Returns
    /// the offset of the voter set's record, as [`Quorum::add_voter`] does.
    pub fn remove_voter(
        &mut self,
        now: u64,
        id: NodeId,
        directory_id: Option<Uuid>,
    ) -> Result<i64, VoterChangeError> {
        let mut set = self.change_allowed()?;
        let Some(v) = set.get(&id) else {
            return Err(VoterChangeError::VoterNotFound(format!(
                "node {id} is not a voter of the metadata quorum (voters {:?})",
                set.keys().collect::<Vec<_>>()
            )));
        };
        if let Some(d) = directory_id {
            if d != v.directory_id && !d.is_nil() {
                return Err(VoterChangeError::VoterNotFound(format!(
                    "voter {id} has metadata directory {}, not {d}",
                    v.directory_id
                )));
            }
        }
        if set.len() == 1 {
            return Err(VoterChangeError::Invalid(format!(
                "node {id} is the only voter: a quorum needs one"
            )));
        }
        set.remove(&id);
        Ok(self.append_voters(now, &set))
    }

    /// The current voter set, if a change may be made now.
    fn change_allowed(&self) -> Result<VoterSet, VoterChangeError> {
        let State::Leader(l) = &self.state else {
            return Err(VoterChangeError::NotLeader {
                leader_id: self.leader_id,
                epoch: self.epoch,
            });
        };
        if !self.voters.is_dynamic() {
            return Err(VoterChangeError::Fixed);
        }
        if self.high_watermark <= l.epoch_start_offset {
            return Err(VoterChangeError::NotNow(
                "the leader has not committed anything in its epoch yet; retry".into(),
            ));
        }
        match self.voters.latest() {
            Some((offset, set)) if *offset >= 0 && *offset < self.high_watermark => Ok(set.clone()),
            Some((offset, _)) => Err(VoterChangeError::NotNow(format!(
                "the last voter change (at offset {offset}) is not committed yet (high watermark \
                 {}); retry",
                self.high_watermark
            ))),
            None => Err(VoterChangeError::NotNow("no voter set yet; retry".into())),
        }
    }

    fn append_voters(&mut self, now: u64, set: &VoterSet) -> i64 {
        let last = self.append_as_leader(now, true, vec![voters_record(set)]);
        self.answer_parked(now, |_, _| true);
        // A quorum of one (or a leader whose own disk completes a majority) may already be
        // done; otherwise the followers' fetches move the high watermark.
        self.maybe_advance_high_watermark(now);
        last
    }

    /// A batch joined the log (appended as leader or fetched): a voter set in it takes effect.
    pub(super) fn voters_appended(&mut self, _now: u64, batch: &Batch) {
        let before = self.voters.version();
        self.voters.appended(batch);
        if self.voters.version() != before {
            self.voters_changed();
        }
    }

    /// The voter set changed: a leader moves replicas between its voters and observers.
    pub(super) fn voters_changed(&mut self) {
        let ids = self.voters.ids().clone();
        let State::Leader(l) = &mut self.state else {
            return;
        };
        let gone: Vec<NodeId> = l
            .replicas
            .keys()
            .copied()
            .filter(|id| !ids.contains(id))
            .collect();
        for id in gone {
            let r = l.replicas.remove(&id).expect("listed");
            l.observers.insert(id, r);
            l.begin_pending.remove(&id);
        }
        for id in ids {
            if !l.replicas.contains_key(&id) {
                let r = l.observers.remove(&id).unwrap_or(ReplicaState {
                    node_id: id,
                    ..Default::default()
                });
                l.replicas.insert(id, r);
            }
        }
    }

    /// A leader that removed itself stops leading once the removal is committed: the others
    /// elect one of themselves at once (it sends them EndQuorumEpoch).
    pub(super) fn resign_if_removed(&mut self, now: u64) {
        if !matches!(self.state, State::Leader(_)) || self.is_voter() {
            return;
        }
        if self
            .voters
            .latest()
            .is_some_and(|(offset, _)| *offset < self.high_watermark)
        {
            self.resign(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quorum::voters::VoterEndpoint;

    fn node(id: NodeId) -> VoterNode {
        VoterNode {
            id,
            directory_id: Uuid::from_u128(id as u128),
            endpoints: vec![VoterEndpoint {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
            }],
        }
    }

    /// Runs the actions a node's own disk completes (flushes at once); drops the rest.
    fn drive(q: &mut Quorum, now: u64) {
        while let Some(a) = q.poll_action() {
            if let Action::Flush { end_offset } = a {
                q.flushed(now, end_offset);
            }
        }
    }

    /// Node `from` fetches from `q` at `q`'s log end (it holds everything).
    fn fetch_at_end(q: &mut Quorum, now: u64, from: NodeId) {
        let end = q.log_end_offset();
        fetch_at(q, now, from, end);
    }

    /// Node `from` fetches from `q` at `offset` (it holds everything below).
    fn fetch_at(q: &mut Quorum, now: u64, from: NodeId, offset: i64) {
        let r = FetchRequest {
            id: now,
            replica_id: from,
            epoch: q.epoch(),
            fetch_offset: offset,
            last_fetched_epoch: q.epoch(),
            high_watermark: Some(q.high_watermark()),
            max_wait_ms: 0,
        };
        q.receive(now, from, Message::Fetch(r));
        drive(q, now);
    }

    /// A dynamic quorum formatted with node 1 alone, led by it.
    fn standalone() -> Quorum {
        let set: VoterSet = [(1, node(1))].into_iter().collect();
        let mut q = Quorum::new(
            QuorumConfig::dynamic(1, Some(set)),
            Durable::default(),
            0,
            7,
        );
        q.tick(0);
        drive(&mut q, 0);
        assert_eq!(q.role(), Role::Leader);
        q
    }

    #[test]
    fn voters_are_added_one_at_a_time_and_only_caught_up_observers() {
        let mut q = standalone();
        assert_eq!(q.kraft_version(), 1);
        // The formatted set went into the log with the first batch, which is committed.
        assert!(q.voter_set().is_some_and(|(o, _)| o >= 0));
        let e = q.add_voter(10, node(2)).unwrap_err();
        assert!(matches!(e, VoterChangeError::NotNow(_)), "{e}");
        assert_eq!(e.code(), 7);
        fetch_at_end(&mut q, 20, 2);
        let offset = q.add_voter(30, node(2)).unwrap();
        assert_eq!(
            q.voters(),
            &BTreeSet::from([1, 2]),
            "in force once appended"
        );
        assert!(q.high_watermark() <= offset, "not committed without node 2");
        let e = q.add_voter(31, node(3)).unwrap_err();
        assert!(e.to_string().contains("not committed yet"), "{e}");
        fetch_at_end(&mut q, 40, 2);
        assert!(q.high_watermark() > offset);
        let e = q.add_voter(50, node(2)).unwrap_err();
        assert_eq!(e.code(), 126, "{e}");
        let e = q.remove_voter(50, 9, None).unwrap_err();
        assert_eq!(e.code(), 127, "{e}");
        let e = q
            .remove_voter(50, 2, Some(Uuid::from_u128(99)))
            .unwrap_err();
        assert_eq!(e.code(), 127, "another directory: {e}");
        // Fetching, but behind the log end: not caught up.
        let behind = FetchRequest {
            id: 54,
            replica_id: 3,
            epoch: q.epoch(),
            fetch_offset: 0,
            last_fetched_epoch: 0,
            high_watermark: None,
            max_wait_ms: 0,
        };
        q.receive(54, 3, Message::Fetch(behind));
        drive(&mut q, 54);
        assert_eq!(q.add_voter(54, node(3)).unwrap_err().code(), 7, "behind");
        let mut empty = node(3);
        empty.endpoints.clear();
        fetch_at_end(&mut q, 55, 3);
        assert_eq!(q.add_voter(56, empty).unwrap_err().code(), 42);
        // Without a fetch within a fetch timeout, node 3 is no longer caught up.
        let late = 56 + q.cfg.fetch_timeout_ms + 1;
        assert_eq!(q.add_voter(late, node(3)).unwrap_err().code(), 7);
    }

    #[test]
    fn a_leader_that_removes_itself_resigns_once_that_is_committed() {
        let mut q = standalone();
        fetch_at_end(&mut q, 10, 2);
        q.add_voter(11, node(2)).unwrap();
        fetch_at_end(&mut q, 12, 2);
        // A record, then the removal before node 2 has the record: the high watermark reaches
        // the removal's offset (the record commits) without passing it.
        let record = q
            .propose(15, vec![Record::value(Bytes::from_static(b"r"))])
            .unwrap();
        drive(&mut q, 15);
        let offset = q.remove_voter(20, 1, Some(Uuid::from_u128(1))).unwrap();
        assert_eq!(offset, record + 1);
        assert_eq!(q.voters(), &BTreeSet::from([2]));
        fetch_at(&mut q, 25, 2, offset);
        assert_eq!(q.high_watermark(), offset);
        assert_eq!(
            q.role(),
            Role::Leader,
            "leads until the removal is committed"
        );
        fetch_at_end(&mut q, 30, 2);
        assert!(q.high_watermark() > offset);
        assert_eq!(q.role(), Role::Resigned);
        assert!(
            !q.may_stand(),
            "a removed node stands no more once it saw the commit"
        );
        // The last voter cannot go.
        let mut one = standalone();
        assert_eq!(one.remove_voter(5, 1, None).unwrap_err().code(), 42);
    }

    #[test]
    fn a_fixed_voter_set_refuses_changes() {
        let mut q = Quorum::new(QuorumConfig::new(1, [1]), Durable::default(), 0, 7);
        q.tick(0);
        drive(&mut q, 0);
        assert_eq!(q.kraft_version(), 0);
        assert_eq!(q.add_voter(1, node(2)).unwrap_err().code(), 35);
        assert_eq!(q.remove_voter(1, 1, None).unwrap_err().code(), 35);
        let mut follower = Quorum::new(QuorumConfig::new(2, [1, 2]), Durable::default(), 0, 7);
        assert_eq!(follower.add_voter(1, node(3)).unwrap_err().code(), 6);
    }

    #[test]
    fn a_silent_observer_leaves_the_leaders_view_after_its_session() {
        let mut q = standalone();
        fetch_at_end(&mut q, 10, 5);
        assert!(q.describe().observers.iter().any(|o| o.node_id == 5));
        q.tick(OBSERVER_SESSION_MS / 2);
        drive(&mut q, OBSERVER_SESSION_MS / 2);
        assert!(q.describe().observers.iter().any(|o| o.node_id == 5));
        let late = OBSERVER_SESSION_MS + 20;
        q.tick(late);
        drive(&mut q, late);
        assert!(q.describe().observers.is_empty(), "{:?}", q.describe());
    }
}
