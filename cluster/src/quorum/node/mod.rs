//! One node of the KRaft metadata quorum as a sans-IO state machine.
//!
//! The caller feeds it messages ([`Quorum::receive`]), the time ([`Quorum::tick`] at
//! [`Quorum::next_deadline`]), disk completions ([`Quorum::flushed`]) and proposals, and
//! executes the [`Action`]s it queues, in order: `PersistState` and `Truncate` must be durable
//! before the next action runs (a vote is sent only after it is recorded), `Append` need not be
//! until its `Flush` completes. Time is the caller's milliseconds; randomness (election jitter)
//! comes from the seed passed in, so a run is a function of its inputs.
//!
//! The protocol is KIP-595's: voters elect a leader per epoch with Vote (after a KIP-996
//! pre-vote round, so a node that was cut off cannot depose a healthy leader when it returns);
//! the leader announces itself with BeginQuorumEpoch and appends a LeaderChange control batch;
//! followers and observers pull with Fetch, which the leader validates against its epoch cache
//! and answers with records, a diverging epoch to truncate to, or a snapshot to fetch
//! (KIP-630). The high watermark is the largest offset a majority of voters hold on disk,
//! once the leader's own epoch has an entry there; a leader that hears from no majority
//! within 1.5 fetch timeouts resigns (check-quorum); a leader that shuts down sends
//! EndQuorumEpoch so the next election starts at once.
//!
//! Invariants, asserted where they are cheap: one leader per epoch as far as this node can
//! see; the epoch and the high watermark never go back; nothing at or below the high
//! watermark is truncated; a leader is elected only by a majority of the voters; the log's
//! batches are contiguous with non-decreasing epochs.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::leader_change_message::{LeaderChangeMessage, Voter};
use kafka_protocol::protocol::Encodable;

use super::batch::{Batch, ControlType, Record, SnapshotId};

mod fetch;
mod reconfig;
use super::log::MemLog;
use super::messages::*;
use super::voters::{VoterSet, Voters};
use crate::NodeId;
pub use reconfig::VoterChangeError;

/// The quorum's settings, with Kafka's names and defaults (`controller.quorum.*`).
#[derive(Debug, Clone)]
pub struct QuorumConfig {
    pub node_id: NodeId,
    /// `controller.quorum.voters`: the voter ids, fixed (kraft.version 0). A node outside the
    /// set is an observer. Empty under kraft.version 1 ([`Self::dynamic`]), and for an
    /// observer given only [`Self::bootstrap`], which learns the leader from them.
    pub voters: BTreeSet<NodeId>,
    /// kraft.version 1 (KIP-853): the voters are in the log, changed by AddRaftVoter and
    /// RemoveRaftVoter; until the log or a snapshot names some, the set this node was
    /// formatted with (`--standalone`, `--initial-controllers`), if any.
    pub dynamic: Option<Option<VoterSet>>,
    /// The voter set a snapshot's bytes hold (the caller's snapshot format), if any.
    pub snapshot_voters: fn(&[u8]) -> Option<VoterSet>,
    /// `controller.quorum.bootstrap.servers` (KIP-853), as the ids the caller gave them
    /// (Kafka numbers them -2, -3, ...): an observer without a leader probes these instead of
    /// the voters. A bootstrap server that does not lead answers with the leader it knows.
    pub bootstrap: Vec<NodeId>,
    /// `controller.quorum.election.timeout.ms` (1000).
    pub election_timeout_ms: u64,
    /// `controller.quorum.election.backoff.max.ms` (1000).
    pub election_backoff_max_ms: u64,
    /// `controller.quorum.fetch.timeout.ms` (2000).
    pub fetch_timeout_ms: u64,
    /// `controller.quorum.request.timeout.ms` (2000).
    pub request_timeout_ms: u64,
    /// `controller.quorum.retry.backoff.ms` (20).
    pub retry_backoff_ms: u64,
    /// How long a leader holds a fetch that has nothing new (KRaft's 500 ms).
    pub fetch_max_wait_ms: u64,
    /// Records per fetch response, beyond the first batch (8 MiB, Kafka's KRaft fetch size).
    pub fetch_max_bytes: usize,
    /// Snapshot bytes per FetchSnapshot response.
    pub snapshot_chunk_bytes: usize,
}

impl QuorumConfig {
    pub fn new(node_id: NodeId, voters: impl IntoIterator<Item = NodeId>) -> QuorumConfig {
        QuorumConfig {
            node_id,
            voters: voters.into_iter().collect(),
            dynamic: None,
            snapshot_voters: |_| None,
            bootstrap: Vec::new(),
            election_timeout_ms: 1000,
            election_backoff_max_ms: 1000,
            fetch_timeout_ms: 2000,
            request_timeout_ms: 2000,
            retry_backoff_ms: 20,
            fetch_max_wait_ms: 500,
            fetch_max_bytes: 8 * 1024 * 1024,
            snapshot_chunk_bytes: 1024 * 1024,
        }
    }

    /// A node of a kraft.version 1 quorum: formatted with `voters` (None: one that joins, an
    /// observer until added).
    pub fn dynamic(node_id: NodeId, voters: Option<VoterSet>) -> QuorumConfig {
        let mut c = QuorumConfig::new(node_id, []);
        c.dynamic = Some(voters);
        c
    }
}

/// What must survive a restart besides the log (Kafka's `quorum-state` file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PersistedState {
    pub epoch: i32,
    pub voted_id: Option<NodeId>,
    pub leader_id: Option<NodeId>,
}

/// What a node starts from: its persisted state, its latest snapshot and the log after it.
#[derive(Debug, Clone, Default)]
pub struct Durable {
    pub state: PersistedState,
    pub snapshot: Option<(SnapshotId, Bytes)>,
    pub batches: Vec<Batch>,
}

/// What the caller must do, in the order queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Send {
        to: NodeId,
        message: Message,
    },
    /// Write the quorum state durably before the next action.
    PersistState(PersistedState),
    /// Append at the log end; durable once a later `Flush` completes.
    Append(Vec<Batch>),
    /// Make the log durable up to `end_offset` and report it with [`Quorum::flushed`].
    Flush {
        end_offset: i64,
    },
    /// Remove every record at or above `end_offset`, durably, before the next action.
    Truncate {
        end_offset: i64,
    },
    /// Store this snapshot durably, replace the log with an empty one starting at its end
    /// offset, and load the application's state from it.
    InstallSnapshot {
        id: SnapshotId,
        data: Bytes,
    },
    /// Log records below the snapshot's end offset, and older snapshots, may be deleted.
    DeleteBefore(SnapshotId),
    /// Records below `high_watermark` are committed: the application may apply them
    /// ([`Quorum::committed_batches`]).
    Committed {
        high_watermark: i64,
    },
    /// This node's role, epoch or leader changed.
    RoleChanged {
        role: Role,
        epoch: i32,
        leader_id: Option<NodeId>,
    },
}

/// A node's role, as DescribeQuorum and the logs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Unattached,
    Prospective,
    Candidate,
    Leader,
    Follower,
    Resigned,
}

/// Why a proposal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    #[error("this node is not the active controller (leader {leader_id:?} in epoch {epoch})")]
    NotLeader {
        leader_id: Option<NodeId>,
        epoch: i32,
    },
    #[error("a metadata batch of {records} records exceeds the limit of {max}")]
    TooLarge { records: usize, max: usize },
    #[error("a metadata batch needs at least one record")]
    Empty,
}

/// How long the leader keeps an observer that stopped fetching (Kafka's
/// `OBSERVER_SESSION_TIMEOUT_MS`).
pub const OBSERVER_SESSION_MS: u64 = 5 * 60 * 1000;

/// Records per proposed batch (a CreateTopics of many partitions is one atomic batch).
pub const RECORDS_PER_BATCH_MAX: usize = 100_000;

/// What the leader knows of one replica, as DescribeQuorum reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplicaState {
    pub node_id: NodeId,
    pub log_end_offset: Option<i64>,
    pub last_fetch_ms: Option<u64>,
    pub last_caught_up_ms: Option<u64>,
}

/// DescribeQuorum's answer, from the leader's view (on other nodes only the node itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumDescription {
    pub leader_id: Option<NodeId>,
    pub epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
}

#[derive(Debug)]
struct Election {
    round: u64,
    granted: BTreeSet<NodeId>,
    rejected: BTreeSet<NodeId>,
    election_at: u64,
    resend_at: u64,
}

#[derive(Debug)]
struct Download {
    id: SnapshotId,
    buf: BytesMut,
}

#[derive(Debug, Default)]
struct FetchLoop {
    /// The fetch in flight: its id and when to give up on it.
    in_flight: Option<(u64, u64)>,
    next_fetch_at: u64,
    download: Option<Download>,
}

#[derive(Debug)]
struct LeaderState {
    /// The offset of this epoch's LeaderChange batch: the high watermark may only pass it.
    epoch_start_offset: i64,
    replicas: BTreeMap<NodeId, ReplicaState>,
    observers: BTreeMap<NodeId, ReplicaState>,
    begin_pending: BTreeSet<NodeId>,
    begin_resend_at: u64,
    parked: BTreeMap<NodeId, (u64, FetchRequest)>,
    check_quorum_at: u64,
}

#[derive(Debug)]
enum State {
    /// No leader known (or the leader resigned). Voters stand at `election_at`; observers look
    /// for the leader by fetching from the voters in turn.
    Unattached {
        election_at: u64,
        probe: FetchLoop,
        probe_index: usize,
    },
    Prospective(Election),
    Candidate(Election),
    Leader(Box<LeaderState>),
    Follower {
        leader: NodeId,
        fetch_timeout_at: u64,
        fetch: FetchLoop,
    },
    Resigned {
        election_at: u64,
    },
}

pub struct Quorum {
    cfg: QuorumConfig,
    rng: u64,
    next_id: u64,
    epoch: i32,
    voted_id: Option<NodeId>,
    leader_id: Option<NodeId>,
    /// Who votes, as this node's log says (kraft.version 1) or as configured (0).
    voters: Voters,
    state: State,
    log: MemLog,
    flushed_offset: i64,
    high_watermark: i64,
    snapshot_data: Option<(SnapshotId, Bytes)>,
    /// The snapshot before it, still served to a follower that began downloading it, so that a
    /// leader that snapshots often does not restart every slow follower's download.
    previous_snapshot: Option<(SnapshotId, Bytes)>,
    /// The leader this node stopped following for want of answers, and its epoch: another
    /// node's word that it still leads is not taken (only its own), or two followers that
    /// time out at different moments would hand each other back to a dead leader forever.
    /// Until when (the third field): after two more fetch timeouts the other followers have
    /// timed out on a dead leader too, so another node's word can be taken again; a node
    /// outside the live leader's voter set (one a change removed), to which that leader never
    /// speaks, would otherwise never follow it.
    timed_out_leader: Option<(i32, NodeId, u64)>,
    actions: VecDeque<Action>,
}

impl Quorum {
    /// A node starting from what its disk holds. A node that led in its last epoch starts
    /// resigned; one that followed a leader starts following it.
    pub fn new(cfg: QuorumConfig, durable: Durable, now: u64, seed: u64) -> Quorum {
        assert!(
            cfg.dynamic.is_none() || cfg.voters.is_empty(),
            "kraft.version 1 takes its voters from the log, not controller.quorum.voters"
        );
        assert!(
            cfg.bootstrap
                .iter()
                .all(|b| *b < 0 && !cfg.voters.contains(b)),
            "bootstrap servers have ids of their own, below zero: {:?}",
            cfg.bootstrap
        );
        let snapshot_id = durable.snapshot.as_ref().map(|s| s.0);
        let mut voters = match &cfg.dynamic {
            None => Voters::fixed(cfg.voters.clone()),
            Some(formatted) => {
                let mut v = Voters::dynamic(formatted.clone());
                if let Some((id, data)) = &durable.snapshot {
                    v.reset_to_snapshot(id.end_offset, (cfg.snapshot_voters)(data));
                }
                v
            }
        };
        for b in &durable.batches {
            voters.appended(b);
        }
        assert!(
            !voters.ids().is_empty() || !cfg.bootstrap.is_empty(),
            "a quorum needs at least one voter, or an observer bootstrap servers to ask"
        );
        let log = MemLog::new(snapshot_id, durable.batches);
        let flushed_offset = log.end_offset();
        let mut q = Quorum {
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            next_id: 0,
            epoch: durable.state.epoch,
            voted_id: durable.state.voted_id,
            leader_id: durable.state.leader_id,
            voters,
            state: State::Resigned { election_at: now },
            high_watermark: snapshot_id.map_or(0, |s| s.end_offset),
            log,
            flushed_offset,
            snapshot_data: durable.snapshot,
            timed_out_leader: None,
            previous_snapshot: None,
            actions: VecDeque::new(),
            cfg,
        };
        q.next_id = q.random() >> 16;
        let me = q.cfg.node_id;
        q.state = match q.leader_id {
            // A quorum of one has nobody to hand over to: it stands again at once.
            Some(l) if l == me => State::Resigned {
                election_at: if q.voters.ids().len() == 1 {
                    now
                } else {
                    now + q.cfg.election_timeout_ms
                },
            },
            Some(l) => State::Follower {
                leader: l,
                fetch_timeout_at: now + q.cfg.fetch_timeout_ms,
                fetch: FetchLoop::default(),
            },
            None => State::Unattached {
                // A quorum of one elects itself at once.
                election_at: if q.voters.ids().len() == 1 {
                    now
                } else {
                    now + q.election_timeout()
                },
                probe: FetchLoop::default(),
                probe_index: 0,
            },
        };
        if matches!(q.state, State::Resigned { .. }) {
            // It led this epoch before it stopped: say it leads no more, so the others stand
            // now rather than after their fetch timeout.
            q.leader_id = None;
            q.persist();
            q.send_end_quorum_epoch(Vec::new());
        }
        q.notify_role();
        q
    }

    // ----- what the caller reads -----

    pub fn node_id(&self) -> NodeId {
        self.cfg.node_id
    }

    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    pub fn leader_id(&self) -> Option<NodeId> {
        self.leader_id
    }

    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log.start_offset()
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log.end_offset()
    }

    pub fn is_voter(&self) -> bool {
        self.voters.ids().contains(&self.cfg.node_id)
    }

    /// The voters' ids: the configured ones, or under kraft.version 1 the latest set this
    /// node's log holds, committed or not.
    pub fn voters(&self) -> &BTreeSet<NodeId> {
        self.voters.ids()
    }

    /// Whether this node stands in elections: a voter does; so does a node that an uncommitted
    /// change removed (kraft.version 1), for the set that removed it may need it to elect a
    /// leader that commits the change: a leader that removed itself and crashed holds the
    /// change, while the voter left may not, and will only vote for a log as long as its own
    /// (Raft's rule for a server outside its latest configuration). Its own vote then does not
    /// count, and once it sees the change committed it stands no more.
    pub fn may_stand(&self) -> bool {
        self.is_voter()
            || self
                .voters
                .removed_uncommitted(self.cfg.node_id, self.high_watermark)
    }

    /// The votes a new election starts with: this node's own, if it is a voter.
    fn own_vote(&self) -> BTreeSet<NodeId> {
        if self.is_voter() {
            BTreeSet::from([self.cfg.node_id])
        } else {
            BTreeSet::new()
        }
    }

    /// kraft.version 1: the latest voter set, with directory ids and endpoints, and the offset
    /// of the record that set it (-1: the set this node was formatted with).
    pub fn voter_set(&self) -> Option<(i64, &VoterSet)> {
        self.voters.latest().map(|(o, s)| (*o, s))
    }

    /// kraft.version 1: the voter set a snapshot ending at `end_offset` must hold.
    pub fn voter_set_at(&self, end_offset: i64) -> Option<&VoterSet> {
        self.voters.at(end_offset)
    }

    /// The quorum's kraft.version: 1 when its voters are in the log (KIP-853).
    pub fn kraft_version(&self) -> i16 {
        if self.voters.is_dynamic() {
            1
        } else {
            0
        }
    }

    /// Counts every change of the voter set: a driver reconnects when it moves.
    pub fn voters_version(&self) -> u64 {
        self.voters.version()
    }

    pub fn role(&self) -> Role {
        match self.state {
            State::Unattached { .. } => Role::Unattached,
            State::Prospective(_) => Role::Prospective,
            State::Candidate(_) => Role::Candidate,
            State::Leader(_) => Role::Leader,
            State::Follower { .. } => Role::Follower,
            State::Resigned { .. } => Role::Resigned,
        }
    }

    /// The leader's epoch-start offset, once this node leads: the controller may act on the
    /// image only after it has applied everything below it.
    pub fn epoch_start_offset(&self) -> Option<i64> {
        match &self.state {
            State::Leader(l) => Some(l.epoch_start_offset),
            _ => None,
        }
    }

    /// The latest snapshot this node holds.
    pub fn snapshot(&self) -> Option<&(SnapshotId, Bytes)> {
        self.snapshot_data.as_ref()
    }

    /// The committed batches from `offset` (a batch boundary at or above the log start).
    pub fn committed_batches(&self, offset: i64) -> impl Iterator<Item = &Batch> {
        let hw = self.high_watermark;
        self.log
            .batches()
            .skip_while(move |b| b.next_offset() <= offset)
            .take_while(move |b| b.next_offset() <= hw)
    }

    /// Every batch this node holds (committed or not), for tests and tools.
    pub fn batches(&self) -> impl Iterator<Item = &Batch> {
        self.log.batches()
    }

    /// The epoch of the batch holding `offset`, if this node holds it.
    pub fn epoch_at(&self, offset: i64) -> Option<i32> {
        self.log.epoch_at(offset)
    }

    pub fn describe(&self) -> QuorumDescription {
        let (voters, observers) = match &self.state {
            State::Leader(l) => (
                l.replicas.values().copied().collect(),
                l.observers.values().copied().collect(),
            ),
            _ => (
                self.voters
                    .ids()
                    .iter()
                    .map(|&v| ReplicaState {
                        node_id: v,
                        log_end_offset: (v == self.cfg.node_id).then_some(self.log.end_offset()),
                        ..Default::default()
                    })
                    .collect(),
                Vec::new(),
            ),
        };
        QuorumDescription {
            leader_id: self.leader_id,
            epoch: self.epoch,
            high_watermark: self.high_watermark,
            voters,
            observers,
        }
    }

    /// The next action to execute, in order.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Quorum::tick`] must be called next.
    pub fn next_deadline(&self) -> u64 {
        let fetch_loop = |f: &FetchLoop| match f.in_flight {
            Some((_, expires)) => expires,
            None => f.next_fetch_at,
        };
        match &self.state {
            State::Unattached {
                election_at, probe, ..
            } => {
                if self.may_stand() {
                    *election_at
                } else {
                    fetch_loop(probe)
                }
            }
            State::Prospective(e) | State::Candidate(e) => e.election_at.min(e.resend_at),
            State::Leader(l) => {
                let mut t = l.check_quorum_at;
                if !l.begin_pending.is_empty() {
                    t = t.min(l.begin_resend_at);
                }
                l.parked.values().fold(t, |t, (d, _)| t.min(*d))
            }
            State::Follower {
                fetch_timeout_at,
                fetch,
                ..
            } => {
                let f = if fetch.in_flight.is_none() && self.flushed_offset < self.log.end_offset()
                {
                    u64::MAX // waits for its flush
                } else {
                    fetch_loop(fetch)
                };
                f.min(*fetch_timeout_at)
            }
            State::Resigned { election_at } => *election_at,
        }
    }

    // ----- inputs -----

    /// Timers: elections, fetch timeouts, retries, parked fetches, check-quorum.
    pub fn tick(&mut self, now: u64) {
        let voter = self.may_stand();
        match &mut self.state {
            State::Unattached {
                election_at, probe, ..
            } => {
                if voter {
                    if now >= *election_at {
                        self.become_prospective(now);
                    }
                } else if probe.in_flight.is_some_and(|(_, t)| now >= t)
                    || (probe.in_flight.is_none() && now >= probe.next_fetch_at)
                {
                    probe.in_flight = None;
                    self.send_probe(now);
                }
            }
            State::Prospective(e) | State::Candidate(e) => {
                if now >= e.election_at {
                    // Lost or split: back off a random while, then try again (KIP-595).
                    let backoff = self.election_backoff();
                    self.become_unattached_same_epoch(now, now + backoff);
                } else if now >= e.resend_at {
                    e.resend_at = now
                        + self
                            .cfg
                            .retry_backoff_ms
                            .max(self.cfg.election_timeout_ms / 4);
                    self.send_votes();
                }
            }
            State::Leader(l) => {
                if now >= l.check_quorum_at {
                    let horizon = now.saturating_sub(self.cfg.fetch_timeout_ms * 3 / 2);
                    let heard = l
                        .replicas
                        .values()
                        .filter(|r| {
                            r.node_id == self.cfg.node_id
                                || r.last_fetch_ms.is_some_and(|t| t >= horizon)
                        })
                        .count();
                    if heard < self.voters.majority() {
                        self.resign(now);
                        return;
                    }
                    // A voter silent that long may have restarted without a leader, or moved
                    // to a higher epoch this leader never heard of (a candidacy whose votes
                    // were lost) while its log fell behind: pre-votes cannot elect it, and it
                    // ignores this lower epoch, so it would never fetch again. BeginQuorumEpoch
                    // goes to it again: it follows, or answers with its epoch, on which this
                    // leader steps down and a new election (at a higher epoch) includes it.
                    let me = self.cfg.node_id;
                    let silent: Vec<NodeId> = l
                        .replicas
                        .values()
                        .filter(|r| {
                            r.node_id != me && !r.last_fetch_ms.is_some_and(|t| t >= horizon)
                        })
                        .map(|r| r.node_id)
                        .collect();
                    l.begin_pending.extend(silent);
                    // Observers silent for long (stopped brokers, removed voters) leave
                    // DescribeQuorum, as Kafka's leader forgets them after 5 minutes.
                    l.observers.retain(|_, o| {
                        o.last_fetch_ms
                            .is_some_and(|t| now.saturating_sub(t) < OBSERVER_SESSION_MS)
                    });
                    l.check_quorum_at = now + self.cfg.fetch_timeout_ms * 3 / 2;
                }
                if !l.begin_pending.is_empty() && now >= l.begin_resend_at {
                    l.begin_resend_at = now
                        + self
                            .cfg
                            .request_timeout_ms
                            .min(self.cfg.election_timeout_ms / 2)
                            .max(1);
                    let pending: Vec<NodeId> = l.begin_pending.iter().copied().collect();
                    for to in pending {
                        self.send_begin_quorum_epoch(to);
                    }
                }
                self.answer_parked(now, |deadline, _| now >= deadline);
            }
            State::Follower {
                fetch_timeout_at,
                fetch,
                ..
            } => {
                if now >= *fetch_timeout_at {
                    if voter {
                        // A node that stands only because an uncommitted change removed it
                        // takes anyone's word for the leader: the leader no longer talks to
                        // it (no BeginQuorumEpoch), and hearing the change committed is what
                        // ends its candidacy.
                        if self.is_voter() {
                            let until = now + 2 * self.cfg.fetch_timeout_ms;
                            self.timed_out_leader = self.leader_id.map(|l| (self.epoch, l, until));
                        }
                        self.become_prospective(now);
                    } else {
                        self.become_unattached_same_epoch(now, now);
                    }
                    return;
                }
                if fetch.in_flight.is_some_and(|(_, t)| now >= t) {
                    fetch.in_flight = None;
                    fetch.download = None;
                }
                // Not before what the last answer brought is on disk: the fetch offset tells
                // the leader this voter holds everything below it, and the leader commits on
                // it (KRaft's followers flush before fetching again). A timer due for another
                // reason must not send it early.
                if fetch.in_flight.is_none()
                    && now >= fetch.next_fetch_at
                    && self.flushed_offset == self.log.end_offset()
                {
                    self.send_fetch(now);
                }
            }
            State::Resigned { election_at } => {
                if now >= *election_at {
                    if voter {
                        self.become_prospective(now);
                    } else {
                        // A leader that removed itself: an observer now, it looks for the
                        // leader the others elect.
                        self.become_unattached_same_epoch(now, now);
                    }
                }
            }
        }
    }

    /// A message from `from`.
    pub fn receive(&mut self, now: u64, from: NodeId, message: Message) {
        match message {
            Message::Vote(r) => self.on_vote(now, from, r),
            Message::VoteResponse(r) => self.on_vote_response(now, from, r),
            Message::BeginQuorumEpoch(r) => self.on_begin_quorum_epoch(now, from, r),
            Message::BeginQuorumEpochResponse(r) => {
                if !self.observe_epoch(now, from, r.epoch, r.leader_id) {
                    if let State::Leader(l) = &mut self.state {
                        if r.error.is_none() && r.epoch == self.epoch {
                            l.begin_pending.remove(&from);
                        }
                    }
                }
            }
            Message::EndQuorumEpoch(r) => self.on_end_quorum_epoch(now, from, r),
            Message::EndQuorumEpochResponse(r) => {
                self.observe_epoch(now, from, r.epoch, r.leader_id);
            }
            Message::Fetch(r) => self.on_fetch(now, from, r),
            Message::FetchResponse(r) => self.on_fetch_response(now, from, r),
            Message::FetchSnapshot(r) => self.on_fetch_snapshot(now, from, r),
            Message::FetchSnapshotResponse(r) => self.on_fetch_snapshot_response(now, from, r),
        }
    }

    /// The log is durable up to `end_offset`.
    pub fn flushed(&mut self, now: u64, end_offset: i64) {
        let end = end_offset.min(self.log.end_offset());
        if end <= self.flushed_offset {
            return;
        }
        self.flushed_offset = end;
        match &mut self.state {
            State::Leader(l) => {
                let me = self.cfg.node_id;
                if let Some(r) = l.replicas.get_mut(&me) {
                    r.log_end_offset = Some(end);
                    r.last_caught_up_ms = Some(now);
                    r.last_fetch_ms = Some(now);
                }
                self.maybe_advance_high_watermark(now);
            }
            State::Follower { fetch, .. }
                if fetch.in_flight.is_none() && self.flushed_offset == self.log.end_offset() =>
            {
                fetch.next_fetch_at = now;
                self.send_fetch(now);
            }
            _ => {}
        }
    }

    /// Appends `records` as one batch of the current epoch (atomically committed or not).
    /// Returns the batch's last offset: it is committed once the high watermark passes it and
    /// [`Quorum::epoch_at`] still names this epoch there.
    pub fn propose(&mut self, now: u64, records: Vec<Record>) -> Result<i64, ProposeError> {
        if !matches!(self.state, State::Leader(_)) {
            return Err(ProposeError::NotLeader {
                leader_id: self.leader_id,
                epoch: self.epoch,
            });
        }
        if records.is_empty() {
            return Err(ProposeError::Empty);
        }
        if records.len() > RECORDS_PER_BATCH_MAX {
            return Err(ProposeError::TooLarge {
                records: records.len(),
                max: RECORDS_PER_BATCH_MAX,
            });
        }
        let last = self.append_as_leader(now, false, records);
        self.answer_parked(now, |_, _| true);
        Ok(last)
    }

    /// The application wrote a snapshot of everything below `end_offset` (a committed batch
    /// boundary); the log before it may go.
    pub fn snapshot_created(&mut self, end_offset: i64, data: Bytes) -> SnapshotId {
        assert!(
            end_offset <= self.high_watermark && end_offset > self.log.start_offset(),
            "snapshot at {end_offset} outside the committed log {}..{}",
            self.log.start_offset(),
            self.high_watermark
        );
        assert!(self.log.is_boundary(end_offset), "snapshot inside a batch");
        let epoch = self
            .log
            .epoch_at(end_offset - 1)
            .expect("offset is in the log");
        let id = SnapshotId { end_offset, epoch };
        self.log.compact_to(id);
        self.voters.compacted(end_offset);
        self.previous_snapshot = self.snapshot_data.replace((id, data));
        self.actions.push_back(Action::DeleteBefore(id));
        id
    }

    /// A graceful shutdown of the leader: EndQuorumEpoch to the voters, most caught up first,
    /// so that one of them stands at once.
    pub fn resign(&mut self, now: u64) {
        let State::Leader(l) = &self.state else {
            return;
        };
        let me = self.cfg.node_id;
        let mut successors: Vec<(i64, NodeId)> = l
            .replicas
            .values()
            .filter(|r| r.node_id != me)
            .map(|r| (r.log_end_offset.unwrap_or(-1), r.node_id))
            .collect();
        successors.sort_by(|a, b| b.cmp(a));
        let preferred: Vec<NodeId> = successors.into_iter().map(|(_, id)| id).collect();
        self.leader_id = None;
        self.persist();
        self.send_end_quorum_epoch(preferred);
        self.state = State::Resigned {
            election_at: now + self.election_timeout(),
        };
        self.notify_role();
    }

    /// EndQuorumEpoch to every other voter; `preferred` ranks the successors (empty: none).
    fn send_end_quorum_epoch(&mut self, preferred: Vec<NodeId>) {
        let me = self.cfg.node_id;
        let voters: Vec<NodeId> = self
            .voters
            .ids()
            .iter()
            .copied()
            .filter(|&v| v != me)
            .collect();
        for to in voters {
            let id = self.new_id();
            self.send(
                to,
                Message::EndQuorumEpoch(EndQuorumEpochRequest {
                    id,
                    epoch: self.epoch,
                    leader_id: me,
                    preferred_successors: preferred.clone(),
                }),
            );
        }
    }

    // ----- elections -----

    fn become_prospective(&mut self, now: u64) {
        debug_assert!(self.may_stand());
        let round = self.new_id();
        let mut e = Election {
            round,
            granted: self.own_vote(),
            rejected: BTreeSet::new(),
            election_at: now + self.election_timeout(),
            resend_at: now
                + self
                    .cfg
                    .retry_backoff_ms
                    .max(self.cfg.election_timeout_ms / 4),
        };
        if e.granted.len() >= self.voters.majority() {
            e.granted.clear();
            return self.become_candidate(now);
        }
        self.state = State::Prospective(e);
        self.notify_role();
        self.send_votes();
    }

    fn become_candidate(&mut self, now: u64) {
        let epoch = self.epoch.checked_add(1).expect("leader epoch exhausted");
        self.epoch = epoch;
        self.voted_id = Some(self.cfg.node_id);
        self.leader_id = None;
        self.persist();
        let e = Election {
            round: self.new_id(),
            granted: self.own_vote(),
            rejected: BTreeSet::new(),
            election_at: now + self.election_timeout(),
            resend_at: now
                + self
                    .cfg
                    .retry_backoff_ms
                    .max(self.cfg.election_timeout_ms / 4),
        };
        if e.granted.len() >= self.voters.majority() {
            return self.become_leader(now, e.granted);
        }
        self.state = State::Candidate(e);
        self.notify_role();
        self.send_votes();
    }

    fn become_leader(&mut self, now: u64, granted: BTreeSet<NodeId>) {
        assert!(
            granted.len() >= self.voters.majority()
                && granted.iter().all(|g| self.voters.ids().contains(g)),
            "leader of epoch {} without a majority of voters: {granted:?}",
            self.epoch
        );
        let me = self.cfg.node_id;
        self.leader_id = Some(me);
        self.persist();
        let epoch_start_offset = self.log.end_offset();
        let replicas = self
            .voters
            .ids()
            .iter()
            .map(|&v| {
                (
                    v,
                    ReplicaState {
                        node_id: v,
                        ..Default::default()
                    },
                )
            })
            .collect();
        let begin_pending: BTreeSet<NodeId> = self
            .voters
            .ids()
            .iter()
            .copied()
            .filter(|&v| v != me)
            .collect();
        self.state = State::Leader(Box::new(LeaderState {
            epoch_start_offset,
            replicas,
            observers: BTreeMap::new(),
            begin_pending: begin_pending.clone(),
            begin_resend_at: now + self.cfg.election_timeout_ms / 2,
            parked: BTreeMap::new(),
            check_quorum_at: now + self.cfg.fetch_timeout_ms * 3 / 2,
        }));
        self.notify_role();
        for to in begin_pending {
            self.send_begin_quorum_epoch(to);
        }
        // The epoch's first batch: what the high watermark must pass before anything of an
        // earlier epoch counts as committed (Raft's rule, KRaft's LeaderChange record).
        let message = LeaderChangeMessage::default()
            .with_version(0)
            .with_leader_id(me.into())
            .with_voters(
                self.voters
                    .ids()
                    .iter()
                    .map(|&v| Voter::default().with_voter_id(v))
                    .collect(),
            )
            .with_granting_voters(
                granted
                    .iter()
                    .map(|&v| Voter::default().with_voter_id(v))
                    .collect(),
            );
        let mut value = BytesMut::new();
        message
            .encode(&mut value, 0)
            .expect("LeaderChangeMessage v0 encodes");
        let mut records = vec![Record {
            key: Some(ControlType::LeaderChange.key()),
            value: Some(value.freeze()),
        }];
        // A quorum still on the set it was formatted with writes it into the log, so that
        // nodes that join (and snapshots) learn it from there (Kafka's start-of-epoch records).
        if let Some((-1, set)) = self.voters.latest() {
            records.extend(super::voters::voters_records(set));
        }
        self.append_as_leader(now, true, records);
    }

    /// Leaves a failed election (or a leaderless follower) for Unattached in the same epoch,
    /// to stand again at `election_at`.
    fn become_unattached_same_epoch(&mut self, now: u64, election_at: u64) {
        self.leader_id = None;
        self.state = State::Unattached {
            election_at,
            probe: FetchLoop {
                next_fetch_at: now,
                ..Default::default()
            },
            probe_index: 0,
        };
        self.notify_role();
        if !self.may_stand() {
            self.send_probe(now);
        }
    }

    /// Moves to `epoch` (not older than ours) with `leader` as its leader if known.
    fn transition(&mut self, now: u64, epoch: i32, leader: Option<NodeId>) {
        assert!(
            epoch >= self.epoch,
            "epoch went back from {} to {epoch}",
            self.epoch
        );
        let me = self.cfg.node_id;
        if epoch == self.epoch {
            if let (Some(l), Some(known)) = (leader, self.leader_id) {
                assert_eq!(l, known, "two leaders in epoch {epoch}: {known} and {l}");
            }
        }
        assert!(
            leader != Some(me),
            "told that this node leads epoch {epoch}"
        );
        if epoch > self.epoch {
            self.voted_id = None;
            self.timed_out_leader = None;
        }
        self.epoch = epoch;
        self.leader_id = leader;
        self.persist();
        match leader {
            Some(l) => {
                self.state = State::Follower {
                    leader: l,
                    fetch_timeout_at: now + self.cfg.fetch_timeout_ms,
                    fetch: FetchLoop {
                        next_fetch_at: now,
                        ..Default::default()
                    },
                };
                self.notify_role();
                if self.flushed_offset == self.log.end_offset() {
                    self.send_fetch(now);
                }
            }
            None => {
                let election_at = now + self.election_timeout();
                self.become_unattached_same_epoch(now, election_at);
            }
        }
    }

    /// Acts on the epoch and leader a peer reports. Returns true when the message is from an
    /// older epoch and must be ignored otherwise.
    fn observe_epoch(
        &mut self,
        now: u64,
        from: NodeId,
        epoch: i32,
        leader: Option<NodeId>,
    ) -> bool {
        if epoch < self.epoch {
            return true;
        }
        let me = self.cfg.node_id;
        if epoch > self.epoch {
            self.transition(now, epoch, leader.filter(|&l| l != me));
        } else if let Some(l) = leader {
            let hearsay = self
                .timed_out_leader
                .is_some_and(|(e, t, until)| (e, t) == (epoch, l) && now < until)
                && from != l;
            if l != me
                && !hearsay
                && !matches!(self.state, State::Follower { leader, .. } if leader == l)
            {
                self.transition(now, epoch, Some(l));
            }
        }
        false
    }

    fn send_votes(&mut self) {
        let (round, pre_vote, epoch, waiting): (u64, bool, i32, Vec<NodeId>) = match &self.state {
            State::Prospective(e) => (e.round, true, self.epoch + 1, self.unanswered(e)),
            State::Candidate(e) => (e.round, false, self.epoch, self.unanswered(e)),
            _ => return,
        };
        for to in waiting {
            self.send(
                to,
                Message::Vote(VoteRequest {
                    id: round,
                    epoch,
                    candidate_id: self.cfg.node_id,
                    last_offset_epoch: self.log.last_epoch(),
                    last_offset: self.log.end_offset(),
                    pre_vote,
                }),
            );
        }
    }

    fn unanswered(&self, e: &Election) -> Vec<NodeId> {
        self.voters
            .ids()
            .iter()
            .copied()
            .filter(|v| !e.granted.contains(v) && !e.rejected.contains(v))
            .collect()
    }

    fn on_vote(&mut self, now: u64, from: NodeId, r: VoteRequest) {
        let me = self.cfg.node_id;
        let reply = |q: &mut Quorum, granted: bool, error: Option<QuorumError>| {
            let msg = Message::VoteResponse(VoteResponse {
                id: r.id,
                error,
                epoch: q.epoch,
                leader_id: q.leader_id,
                granted,
            });
            q.send(from, msg);
        };
        // A fixed voter set is the same everywhere: a stranger, or a vote asked of a node that
        // is no voter, is misconfiguration. A dynamic one may be behind here: the candidate,
        // or this node, may be a voter in a set this node has not fetched yet (KIP-853), and
        // refusing could leave the quorum with nobody able to win (a leader that added this
        // node, restarted, needs its vote). The candidate counts only its own voters' votes,
        // and the log comparison keeps a stale candidate from winning, as in Kafka.
        if !self.voters.is_dynamic()
            && (!self.voters.ids().contains(&r.candidate_id) || !self.is_voter())
        {
            return reply(self, false, Some(QuorumError::InconsistentVoterSet));
        }
        let log_ok =
            (r.last_offset_epoch, r.last_offset) >= (self.log.last_epoch(), self.log.end_offset());
        if r.pre_vote {
            // KIP-996: grant if the candidate's log is as good as ours and we know of no live
            // leader; change nothing either way.
            let leader_alive = match &self.state {
                State::Leader(_) => true,
                State::Follower {
                    fetch_timeout_at, ..
                } => now < *fetch_timeout_at,
                _ => false,
            };
            let granted = r.epoch > self.epoch && log_ok && !leader_alive;
            return reply(self, granted, None);
        }
        if r.epoch < self.epoch {
            return reply(self, false, Some(QuorumError::FencedLeaderEpoch));
        }
        if r.epoch > self.epoch {
            self.transition(now, r.epoch, None);
        }
        let free = match self.voted_id {
            None => self.leader_id.is_none() && !matches!(self.state, State::Leader(_)),
            Some(v) => v == r.candidate_id,
        };
        let granted = free && log_ok && r.candidate_id != me;
        if granted && self.voted_id.is_none() {
            self.voted_id = Some(r.candidate_id);
            self.persist();
            // A vote resets the election timer: give the candidate time to win.
            let election_at = now + self.election_timeout();
            if let State::Unattached {
                election_at: at, ..
            } = &mut self.state
            {
                *at = election_at;
            } else {
                self.become_unattached_same_epoch(now, election_at);
            }
        }
        reply(self, granted, None)
    }

    fn on_vote_response(&mut self, now: u64, from: NodeId, r: VoteResponse) {
        if self.observe_epoch(now, from, r.epoch, r.leader_id) {
            return;
        }
        let majority = self.voters.majority();
        let voters = self.voters.ids().len();
        let (e, prospective) = match &mut self.state {
            State::Prospective(e) if e.round == r.id => (e, true),
            State::Candidate(e) if e.round == r.id && r.epoch == self.epoch => (e, false),
            _ => return,
        };
        if !self.voters.ids().contains(&from) {
            return;
        }
        if r.granted {
            e.rejected.remove(&from);
            e.granted.insert(from);
        } else {
            e.rejected.insert(from);
        }
        if e.granted.len() >= majority {
            if prospective {
                self.become_candidate(now);
            } else {
                let granted = std::mem::take(&mut e.granted);
                self.become_leader(now, granted);
            }
        } else if e.rejected.len() > voters - majority {
            let backoff = self.election_backoff();
            self.become_unattached_same_epoch(now, now + backoff);
        }
    }

    fn on_begin_quorum_epoch(&mut self, now: u64, from: NodeId, r: BeginQuorumEpochRequest) {
        let error = if r.epoch < self.epoch {
            Some(QuorumError::FencedLeaderEpoch)
        } else {
            self.observe_epoch(now, from, r.epoch, Some(r.leader_id));
            if let State::Follower {
                fetch_timeout_at, ..
            } = &mut self.state
            {
                *fetch_timeout_at = now + self.cfg.fetch_timeout_ms;
            }
            None
        };
        let msg = Message::BeginQuorumEpochResponse(EpochResponse {
            id: r.id,
            error,
            epoch: self.epoch,
            leader_id: self.leader_id,
        });
        self.send(from, msg);
    }

    fn on_end_quorum_epoch(&mut self, now: u64, from: NodeId, r: EndQuorumEpochRequest) {
        let error = if r.epoch < self.epoch {
            Some(QuorumError::FencedLeaderEpoch)
        } else {
            if r.epoch > self.epoch {
                self.transition(now, r.epoch, None);
            }
            if self.leader_id == Some(r.leader_id) || self.leader_id.is_none() {
                // Stand soon, the most caught-up successor first (KIP-595's backoff by rank).
                let rank = r
                    .preferred_successors
                    .iter()
                    .position(|&v| v == self.cfg.node_id);
                let delay = match rank {
                    Some(rank) => {
                        let base = self.cfg.retry_backoff_ms.saturating_mul(1 << rank.min(10));
                        base.min(self.cfg.election_backoff_max_ms)
                            + self.random() % (self.cfg.retry_backoff_ms + 1)
                    }
                    None => self.election_timeout(),
                };
                if self.may_stand() {
                    self.become_unattached_same_epoch(now, now + delay);
                } else {
                    self.become_unattached_same_epoch(now, now);
                }
            }
            None
        };
        let msg = Message::EndQuorumEpochResponse(EpochResponse {
            id: r.id,
            error,
            epoch: self.epoch,
            leader_id: self.leader_id,
        });
        self.send(from, msg);
    }

    // ----- plumbing -----

    fn send(&mut self, to: NodeId, message: Message) {
        debug_assert_ne!(to, self.cfg.node_id);
        self.actions.push_back(Action::Send { to, message });
    }

    fn persist(&mut self) {
        self.actions.push_back(Action::PersistState(PersistedState {
            epoch: self.epoch,
            voted_id: self.voted_id,
            leader_id: self.leader_id,
        }));
    }

    fn notify_role(&mut self) {
        self.actions.push_back(Action::RoleChanged {
            role: self.role(),
            epoch: self.epoch,
            leader_id: self.leader_id,
        });
    }

    fn new_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// splitmix64 over the caller's seed: deterministic, and enough for election jitter.
    fn random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An election timeout with Kafka's jitter: between one and two timeouts.
    fn election_timeout(&mut self) -> u64 {
        self.cfg.election_timeout_ms + self.random() % (self.cfg.election_timeout_ms + 1)
    }

    fn election_backoff(&mut self) -> u64 {
        self.random() % (self.cfg.election_backoff_max_ms + 1)
    }
}
