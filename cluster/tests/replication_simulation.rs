//! Deterministic simulation of one partition's replication: its replicas on 3 (or 5) simulated
//! brokers, each driving the sans-IO [`LeaderPartition`] and [`FollowerPartition`] as the
//! broker does (`broker/src/partition.rs`, `broker/src/replication/`, the Fetch handler's
//! follower path, acks=all produce), and a simulated controller that keeps the partition's
//! leader, leader epoch, ISR and partition epoch with the controller's own rules
//! ([`samsa_cluster::partition_change`]: AlterPartition refused at a stale partition epoch,
//! clean elections from the ISR when a leader is fenced, a new incarnation taken out of the ISR
//! when it registers). Brokers learn the partition's state from the metadata log, pulled in
//! order and late. The network drops, delays, duplicates and reorders messages and cuts links;
//! brokers crash and restart; messages to the controller are now and then held up for seconds
//! (a metadata quorum electing a leader). A broker's link with the controller keeps its order,
//! a hold-up delaying what follows, as one connection into the controller's queue does (and a
//! request a failed-over controller took is committed before its successor serves anything, or
//! never): a later AlterPartition attempt is never taken before an earlier one, which is what
//! lets INELIGIBLE_REPLICA prove that no attempt was made. Everything random comes from the
//! seed, so a failing seed replays exactly:
//!
//! ```sh
//! SAMSA_SIM_SEED=1234 cargo test -p samsa-cluster --test replication_simulation -- --nocapture
//! SAMSA_SIM_SEEDS=5000 cargo test -p samsa-cluster --release --test replication_simulation
//! ```
//!
//! Crashes are process crashes (SIGKILL): the log, the leader-epoch cache and the last
//! checkpointed high watermark survive, as the page cache does, because Samsa, like Kafka,
//! answers acks=all without an fsync by default and so promises nothing when every in-sync
//! replica loses its unflushed tail at once.
//!
//! A restarted broker takes the roles its metadata image gives only once it has registered
//! again and its image holds that registration, as Kafka's brokers do (the publishers are
//! installed after the initial catch-up); by then the controller has taken the old incarnation
//! out of leadership and the ISR. Samsa's broker publishes the image it had at once, before it
//! registers (`server.rs`, `publisher.rs`): `SAMSA_SIM_EAGER_PUBLISH=1` models that. Then a
//! leader that restarts before its image shows the last change of its partition (an ISR
//! expansion of its own, committed or still on its way; the controller electing another
//! leader) leads its old epoch again with an ISR smaller than the controller's, and its high
//! watermark passes replicas the controller counts on: 29 of the first 10,000 seeds fail, 28
//! with an ISR member lacking committed records (3000432, 5000343...), which electing it would
//! lose, and one (5003948) where the restarted leader, its followers not yet told of the new
//! epoch, commits a batch that the new leader's followers then truncate: what consumers read
//! disappears.
//!
//! `SAMSA_SIM_KEEP_GOING=1` runs every seed of a sweep and lists the failing ones.
//!
//! Checked as it runs: at most one leader per leader epoch; a leader's high watermark never
//! moves back within its epoch (a restarted broker that leads its old epoch again from its
//! image starts from its checkpointed one, as the broker does); every batch below any
//! replica's high watermark (what consumers may read) is the batch committed at that offset,
//! forever; one batch per (offset, epoch); two replicas holding the same batch agree on
//! everything before it (log matching, each second); each replica's epoch cache gives each
//! batch its epoch (each second); every member of the controller's ISR holds every committed
//! batch (each 100 ms, and when a replica joins the ISR and when a leader is elected: Kafka's
//! expansion rule, follower caught up to the high watermark and the leader's epoch start, is
//! what makes that true); an acks=all write is answered only when it is committed where it
//! was written. After the faults stop: one leader, a full ISR, every replica with the same log
//! and high watermark, and every acknowledged write there.

use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

use kafka_protocol::ResponseError;
use samsa_cluster::partition_change::{
    self as pc, AlterPartitionRequest, BrokerLiveness, IsrMember, PartitionState, NO_LEADER,
};
use samsa_cluster::replication::follower::{
    FetchAnswer, FetchError, FollowerPartition, Records, Step,
};
use samsa_cluster::replication::leader::{
    AcksAll, AlterIsr, AlterIsrFailure, IsrState, LeaderConfig, LeaderPartition,
};
use samsa_cluster::NodeId;

const SECOND: u64 = 1000;
/// The topic's `min.insync.replicas`.
const MIN_INSYNC_REPLICAS: usize = 2;
/// `replica.lag.time.max.ms`, scaled down from Kafka's 30 s like the other timeouts.
const REPLICA_LAG_TIME_MAX_MS: u64 = 3_000;
/// `replica.fetch.wait.max.ms`: how long a leader holds a follower's fetch that finds nothing.
const FETCH_WAIT_MAX_MS: u64 = 500;
/// How long a follower waits for a fetch's answer before it gives up on the connection.
const FETCH_TIMEOUT_MS: u64 = FETCH_WAIT_MAX_MS + 1_000;
/// `replica.fetch.backoff.ms`, after a fetch that failed.
const FETCH_BACKOFF_MS: u64 = 200;
/// The fetcher's pauses (`broker/src/replication/fetcher.rs`).
const AWAIT_LEADERSHIP_PAUSE_MS: u64 = 200;
const BACKOFF_PAUSE_MS: u64 = 1_000;
/// The batches one fetch returns at most (its `partition_max_bytes`).
const FETCH_MAX_BATCHES: usize = 4;
const HEARTBEAT_INTERVAL_MS: u64 = 300;
/// `broker.session.timeout.ms`: a broker not heard from for this long is fenced.
const SESSION_TIMEOUT_MS: u64 = 1_500;
/// How long a leader waits for the controller to answer an AlterPartition
/// (`ALTER_PARTITION_TIMEOUT` in `broker/src/replication/mod.rs`, scaled).
const ALTER_PARTITION_TIMEOUT_MS: u64 = 3_000;
/// A produce request's `timeout_ms`.
const PRODUCE_TIMEOUT_MS: u64 = 3_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

fn id(i: usize) -> NodeId {
    i as NodeId + 1
}
fn index(id: NodeId) -> usize {
    (id - 1) as usize
}

/// A record batch as the log keeps it: where it starts, how many records, the leader epoch it
/// was written in, and which produce request wrote it (the identity of its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Batch {
    base: i64,
    count: i64,
    epoch: i32,
    id: u64,
}

impl Batch {
    fn next(&self) -> i64 {
        self.base + self.count
    }
}

/// A replica's log, with the storage crate's semantics (`storage/src/log.rs`,
/// `leader_epoch.rs`): whole batches, a leader-epoch cache, truncation that removes whole
/// batches, the recovery at start.
#[derive(Debug, Clone, Default)]
struct Log {
    start: i64,
    batches: Vec<Batch>,
    /// The leader-epoch cache: (epoch, start offset), epochs increasing.
    epochs: Vec<(i32, i64)>,
    /// The high watermark the last checkpoint wrote.
    hw_checkpoint: i64,
}

impl Log {
    fn end(&self) -> i64 {
        self.batches.last().map_or(self.start, |b| b.next())
    }

    fn latest_epoch(&self) -> Option<i32> {
        self.epochs.last().map(|&(e, _)| e)
    }

    /// `LeaderEpochCache::assign`: only a newer epoch, dropping entries at or after its start.
    fn assign_epoch(&mut self, epoch: i32, start: i64) {
        if epoch < 0 || self.latest_epoch().is_some_and(|e| epoch <= e) {
            return;
        }
        while self.epochs.last().is_some_and(|&(_, o)| o >= start) {
            self.epochs.pop();
        }
        self.epochs.push((epoch, start));
    }

    /// `LeaderEpochCache::end_offset_for` (Kafka's `endOffsetFor`).
    fn end_offset_for(&self, epoch: i32) -> Option<(i32, i64)> {
        if epoch < 0 {
            return None;
        }
        if self.latest_epoch() == Some(epoch) {
            return Some((epoch, self.end()));
        }
        let higher = self.epochs.partition_point(|&(e, _)| e <= epoch);
        let &(_, higher_start) = self.epochs.get(higher)?;
        match higher.checked_sub(1) {
            None => Some((epoch, higher_start)),
            Some(floor) => Some((self.epochs[floor].0, higher_start)),
        }
    }

    fn truncate_epochs_from_end(&mut self) {
        let end = self.end();
        self.epochs.retain(|&(_, o)| o < end);
    }

    fn append_as_leader(&mut self, b: Batch) {
        assert_eq!(b.base, self.end());
        self.batches.push(b);
        self.assign_epoch(b.epoch, b.base);
    }

    /// `Log::append_as_follower`: batches at the leader's offsets, none below the log end.
    fn append_as_follower(&mut self, batches: &[Batch]) -> Result<(), String> {
        let mut expected = self.end();
        for b in batches {
            if b.base < expected {
                return Err(format!(
                    "replicated batch at offset {} is below the expected offset {expected}",
                    b.base
                ));
            }
            expected = b.next();
        }
        let mut epochs: Vec<(i32, i64)> = Vec::new();
        for b in batches {
            if b.base != self.end() {
                // Storage accepts a gap (a compacted leader); nothing here compacts.
                return Err(format!(
                    "GAP: replicated batch at {} after a log ending at {}",
                    b.base,
                    self.end()
                ));
            }
            self.batches.push(*b);
            if epochs.last().is_none_or(|&(e, _)| b.epoch > e) {
                epochs.push((b.epoch, b.base));
            }
        }
        for (e, s) in epochs {
            self.assign_epoch(e, s);
        }
        Ok(())
    }

    /// `Log::truncate_to`: removes every batch whose last offset is at or above `offset`, and
    /// the epochs that start at the log end then (at or past the end, only those).
    fn truncate_to(&mut self, offset: i64) -> Result<(), String> {
        if offset < 0 {
            return Err(format!("cannot truncate to negative offset {offset}"));
        }
        if offset >= self.end() {
            self.truncate_epochs_from_end();
            return Ok(());
        }
        if offset < self.start {
            return self.truncate_fully_and_start_at(offset);
        }
        self.batches.retain(|b| b.next() <= offset);
        self.start = self.start.min(self.end());
        self.truncate_epochs_from_end();
        self.hw_checkpoint = self.hw_checkpoint.clamp(self.start, self.end());
        Ok(())
    }

    fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<(), String> {
        if offset < 0 {
            return Err(format!("cannot start at negative offset {offset}"));
        }
        self.batches.clear();
        self.start = offset;
        self.epochs.clear();
        self.hw_checkpoint = offset;
        Ok(())
    }

    /// Whole batches from the one holding `offset`, at most `max`.
    fn read(&self, offset: i64, max: usize) -> Vec<Batch> {
        let from = self.batches.partition_point(|b| b.next() <= offset);
        self.batches[from..].iter().take(max).copied().collect()
    }

    fn batch_at(&self, base: i64) -> Option<&Batch> {
        let i = self.batches.partition_point(|b| b.base < base);
        self.batches.get(i).filter(|b| b.base == base)
    }

    /// What opening the log after a crash does to the epoch cache.
    fn recover(&mut self) {
        self.truncate_epochs_from_end();
        self.hw_checkpoint = self.hw_checkpoint.clamp(self.start, self.end());
    }

    fn summary(&self) -> String {
        let tail: Vec<String> = self
            .batches
            .iter()
            .rev()
            .take(6)
            .rev()
            .map(|b| format!("{}+{}@e{}#{}", b.base, b.count, b.epoch, b.id))
            .collect();
        format!(
            "log {}..{} epochs {:?} last batches [{}]",
            self.start,
            self.end(),
            self.epochs,
            tail.join(" ")
        )
    }
}

/// The partition's state and the brokers' epochs as of one offset of the metadata log.
#[derive(Debug, Clone)]
struct Meta {
    state: PartitionState,
    broker_epochs: Vec<Option<i64>>,
}

/// A broker's registration with the controller.
#[derive(Debug, Clone)]
struct Registration {
    incarnation: u64,
    epoch: i64,
    fenced: bool,
    last_heartbeat_ms: u64,
    /// The metadata offset of the registration, which the broker must reach to be unfenced.
    offset: usize,
}

struct Controller {
    /// The metadata log, as far as this partition and the brokers' epochs go.
    log: Vec<Meta>,
    brokers: Vec<Option<Registration>>,
}

impl Controller {
    fn state(&self) -> &PartitionState {
        &self.log.last().unwrap().state
    }
}

struct Liveness<'a>(&'a [Option<Registration>]);

impl Liveness<'_> {
    fn get(&self, b: NodeId) -> Option<&Registration> {
        if b < 1 {
            return None;
        }
        self.0.get(index(b)).and_then(|r| r.as_ref())
    }
}

impl BrokerLiveness for Liveness<'_> {
    fn is_active(&self, b: NodeId) -> bool {
        self.get(b).is_some_and(|r| !r.fenced)
    }
    fn broker_epoch(&self, b: NodeId) -> Option<i64> {
        self.get(b).map(|r| r.epoch)
    }
}

#[derive(Debug, Clone)]
enum Msg {
    Fetch {
        req: u64,
        current_leader_epoch: i32,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    },
    FetchResponse {
        req: u64,
        error: FetchError,
        high_watermark: i64,
        log_start_offset: i64,
        diverging_epoch: Option<(i32, i64)>,
        batches: Vec<Batch>,
    },
    Produce {
        count: i64,
    },
    AlterPartition {
        req: u64,
        broker_epoch: i64,
        alter: AlterIsr,
        new_isr: Vec<IsrMember>,
    },
    AlterPartitionResponse {
        req: u64,
        error_code: i16,
    },
    Register {
        incarnation: u64,
    },
    RegisterResponse {
        incarnation: u64,
        broker_epoch: Option<i64>,
    },
    Heartbeat {
        broker_epoch: i64,
        metadata_offset: usize,
    },
    /// Only the answer that matters here: STALE_BROKER_EPOCH, which makes the broker register
    /// again (`broker/src/lifecycle.rs`).
    StaleBrokerEpoch {
        broker_epoch: i64,
    },
    MetadataFetch {
        offset: usize,
    },
    MetadataUpdate {
        offset: usize,
        meta: Meta,
    },
}

#[derive(Debug, Clone, Copy)]
enum Timer {
    Fetch,
    FetchTimeout { leader: NodeId, req: u64 },
    IsrCheck,
    Heartbeat,
    MetadataPoll,
    Checkpoint,
    Register,
    Waiters,
    Parked,
    AlterTimeout { req: u64 },
}

#[derive(Debug)]
enum Event {
    Deliver {
        to: usize,
        from: usize,
        msg: Msg,
    },
    Timer {
        node: usize,
        incarnation: u64,
        timer: Timer,
    },
    Restart {
        node: usize,
    },
    ControllerTick,
}

struct Scheduled {
    at: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq)) // a min-heap
    }
}

/// The broker's part in the partition (`broker/src/partition.rs`'s `Replica`).
#[derive(Debug)]
enum Replica {
    Leader(LeaderPartition),
    Follower { leader: NodeId, high_watermark: i64 },
}

/// The replica fetcher's state of the partition (`fetcher.rs`'s `Followed`).
struct Fetcher {
    state: FollowerPartition,
    paused_until: u64,
}

/// A follower's fetch the leader holds until records arrive or its wait ends.
struct Parked {
    from: usize,
    req: u64,
    current_leader_epoch: i32,
    fetch_offset: i64,
    deadline: u64,
}

/// An acks=all write waiting for the high watermark.
struct Waiter {
    batch: Batch,
    deadline: u64,
}

struct Node {
    up: bool,
    incarnation: u64,
    log: Log,
    /// The metadata this broker applied last (offset and content); kept across restarts, as
    /// the broker's copy of the metadata log is.
    image: (usize, Meta),
    /// `Partition::leader_epoch`: the largest leader epoch the image gave.
    leader_epoch: i32,
    is_leader: bool,
    replica: Replica,
    /// `Partition::high_watermark`: what readers and fetch answers see.
    high_watermark: i64,
    fetcher: Option<Fetcher>,
    /// The fetch in flight on the connection to each leader.
    in_flight: BTreeMap<NodeId, u64>,
    fetch_timer_at: Option<u64>,
    /// The registration epoch of this incarnation, once registered.
    broker_epoch: Option<i64>,
    /// Whether this incarnation takes the roles of its image yet.
    publishing: bool,
    waiters: Vec<Waiter>,
    /// AlterPartition requests this broker waits on.
    alters: Vec<(u64, AlterIsr)>,
    parked: Vec<Parked>,
    /// The log's batches below this offset are the committed ones.
    matched_to: i64,
}

struct Settings {
    nodes: usize,
    drop_per_mille: u64,
    duplicate_per_mille: u64,
    delay_max_ms: u64,
    /// A link with the controller held up for up to `stall_max_ms`, and what follows on it.
    stall_per_mille_per_s: u64,
    stall_max_ms: u64,
    crash_per_mille_per_s: u64,
    partition_per_mille_per_s: u64,
    chaos_ms: u64,
    calm_ms: u64,
    /// A restarted broker takes the roles of the image it had before it registers again
    /// (Samsa's broker today) rather than after (Kafka's).
    eager_publish: bool,
}

fn settings(nodes: usize) -> Settings {
    Settings {
        nodes,
        drop_per_mille: 50,
        duplicate_per_mille: 20,
        delay_max_ms: 30,
        stall_per_mille_per_s: 300,
        stall_max_ms: 8 * SECOND,
        crash_per_mille_per_s: 300,
        partition_per_mille_per_s: 200,
        chaos_ms: 30 * SECOND,
        calm_ms: 20 * SECOND,
        eager_publish: std::env::var("SAMSA_SIM_EAGER_PUBLISH").is_ok_and(|v| v == "1"),
    }
}

#[derive(Default, Debug, Clone, Copy)]
struct Stats {
    acknowledged: usize,
    elections: usize,
    isr_changes: usize,
    truncations: usize,
    crashes: usize,
}

struct Sim {
    seed: u64,
    rng: Rng,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Scheduled>,
    nodes: Vec<Node>,
    controller: Controller,
    /// Links cut, between brokers and the controller (index `nodes`).
    cut: Vec<Vec<bool>>,
    /// The last delivery time on each link with the controller, which keeps its order.
    link_clock: HashMap<(usize, usize), u64>,
    s: Settings,
    /// Every batch below some replica's high watermark, in offset order from 0.
    committed: Vec<Batch>,
    /// (base offset, epoch) -> the batch ever written there.
    written: HashMap<(i64, i32), u64>,
    /// Leader epoch -> the broker that led in it.
    leaders: BTreeMap<i32, NodeId>,
    /// (broker, incarnation, epoch) -> the last high watermark it published as leader.
    leader_hw: HashMap<(usize, u64, i32), i64>,
    acknowledged: Vec<Batch>,
    next_id: u64,
    next_req: u64,
    stats: Stats,
    trace: VecDeque<String>,
    verbose: bool,
}

impl Sim {
    fn new(seed: u64, s: Settings) -> Sim {
        let n = s.nodes;
        let brokers: Vec<Option<Registration>> = (0..n)
            .map(|_| {
                Some(Registration {
                    incarnation: 1,
                    epoch: 0,
                    fenced: false,
                    last_heartbeat_ms: 0,
                    offset: 0,
                })
            })
            .collect();
        let replicas: Vec<NodeId> = (0..n).map(id).collect();
        let state = PartitionState::new_partition(replicas, &Liveness(&brokers)).unwrap();
        let meta = Meta {
            state,
            broker_epochs: vec![Some(0); n],
        };
        let mut sim = Sim {
            seed,
            rng: Rng(seed),
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            nodes: Vec::new(),
            controller: Controller {
                log: vec![meta.clone()],
                brokers,
            },
            cut: vec![vec![false; n + 1]; n + 1],
            link_clock: HashMap::new(),
            committed: Vec::new(),
            written: HashMap::new(),
            leaders: BTreeMap::new(),
            leader_hw: HashMap::new(),
            acknowledged: Vec::new(),
            next_id: 0,
            next_req: 0,
            stats: Stats::default(),
            trace: VecDeque::new(),
            verbose: std::env::var("SAMSA_SIM_SEED").is_ok(),
            s,
        };
        for _ in 0..n {
            sim.nodes.push(Node {
                up: true,
                incarnation: 1,
                log: Log::default(),
                image: (0, meta.clone()),
                leader_epoch: 0,
                is_leader: false,
                replica: Replica::Follower {
                    leader: NO_LEADER,
                    high_watermark: 0,
                },
                high_watermark: 0,
                fetcher: None,
                in_flight: BTreeMap::new(),
                fetch_timer_at: None,
                broker_epoch: Some(0),
                publishing: true,
                waiters: Vec::new(),
                alters: Vec::new(),
                parked: Vec::new(),
                matched_to: 0,
            });
        }
        for i in 0..n {
            sim.start_timers(i);
            sim.publish(i);
        }
        sim.schedule(100, Event::ControllerTick);
        sim
    }

    // ---- plumbing -------------------------------------------------------------------------

    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at,
            seq: self.seq,
            event,
        });
    }

    fn timer(&mut self, node: usize, at: u64, timer: Timer) {
        let incarnation = self.nodes[node].incarnation;
        self.schedule(
            at,
            Event::Timer {
                node,
                incarnation,
                timer,
            },
        );
    }

    fn controller_index(&self) -> usize {
        self.s.nodes
    }

    fn client_index(&self) -> usize {
        self.s.nodes + 1
    }

    fn send(&mut self, from: usize, to: usize, msg: Msg) {
        let client = self.client_index();
        if from != client && to != client && self.cut[from][to] {
            return;
        }
        if self.rng.chance(self.s.drop_per_mille) {
            return;
        }
        let copies = if self.rng.chance(self.s.duplicate_per_mille) {
            2
        } else {
            1
        };
        let controller = self.controller_index();
        for _ in 0..copies {
            let mut at = self.now + 1 + self.rng.below(self.s.delay_max_ms);
            if from == controller || to == controller {
                let last = self.link_clock.entry((from, to)).or_insert(0);
                at = at.max(*last);
                *last = at;
            }
            self.schedule(
                at,
                Event::Deliver {
                    to,
                    from,
                    msg: msg.clone(),
                },
            );
        }
    }

    fn log(&mut self, line: String) {
        if self.verbose {
            eprintln!("{line}");
        }
        self.trace.push_back(line);
        if self.trace.len() > 80 {
            self.trace.pop_front();
        }
    }

    fn fail(&self, what: String) -> ! {
        let trace: Vec<&str> = self.trace.iter().map(|s| s.as_str()).collect();
        panic!(
            "seed {} at {} ms: {what}\n--- last events\n{}\n--- state\n{}",
            self.seed,
            self.now,
            trace.join("\n"),
            self.describe()
        );
    }

    fn describe(&self) -> String {
        let mut out = format!("controller {:?}\n", self.controller.state());
        for (i, n) in self.nodes.iter().enumerate() {
            let role = match &n.replica {
                Replica::Leader(l) => format!(
                    "leader e{} hw {} isr {:?} followers {:?}",
                    l.leader_epoch(),
                    l.high_watermark(),
                    l.isr(),
                    l.replicas()
                        .iter()
                        .filter_map(|&r| l.follower(r).map(|f| (r, f.log_end_offset)))
                        .collect::<Vec<_>>()
                ),
                Replica::Follower { leader, .. } => format!(
                    "follower of {leader} e{} fetch {:?}",
                    n.leader_epoch,
                    n.fetcher.as_ref().map(|f| &f.state)
                ),
            };
            out += &format!(
                "node {} {} inc {} hw {} {} | {}\n",
                id(i),
                if n.up { "up" } else { "DOWN" },
                n.incarnation,
                n.high_watermark,
                n.log.summary(),
                role
            );
        }
        out += &format!(
            "committed to {} ({} batches), {} acknowledged",
            self.committed_end(),
            self.committed.len(),
            self.acknowledged.len()
        );
        out
    }

    fn committed_end(&self) -> i64 {
        self.committed.last().map_or(0, |b| b.next())
    }

    fn committed_at(&self, base: i64) -> Option<&Batch> {
        let i = self.committed.partition_point(|b| b.base < base);
        self.committed.get(i).filter(|b| b.base == base)
    }

    // ---- the broker: roles from the metadata image (Partition::apply_leadership) -----------

    fn config() -> LeaderConfig {
        LeaderConfig {
            replica_lag_time_max_ms: REPLICA_LAG_TIME_MAX_MS,
        }
    }

    /// Takes the role the broker's image gives it, as `Partition::apply_leadership` and the
    /// replica fetchers' `apply` do.
    fn publish(&mut self, i: usize) {
        let me = id(i);
        let now = self.now;
        let st = self.nodes[i].image.1.state.clone();
        let n = &mut self.nodes[i];
        if st.leader_epoch < n.leader_epoch {
            return;
        }
        let mut became_leader = false;
        if st.leader == me {
            match &mut n.replica {
                Replica::Leader(l)
                    if l.leader_epoch() == st.leader_epoch && l.replicas().contains(&me) =>
                {
                    l.on_partition_change(
                        st.replicas.clone(),
                        st.isr.clone(),
                        st.leader_epoch,
                        st.partition_epoch,
                    );
                }
                _ => {
                    let end = n.log.end();
                    n.log.assign_epoch(st.leader_epoch, end);
                    n.replica = Replica::Leader(LeaderPartition::new(
                        me,
                        Self::config(),
                        st.replicas.clone(),
                        st.isr.clone(),
                        st.leader_epoch,
                        st.partition_epoch,
                        end,
                        n.high_watermark.min(end),
                        now,
                    ));
                    n.fetcher = None;
                    became_leader = true;
                }
            }
        } else {
            match &n.replica {
                Replica::Follower { leader, .. }
                    if *leader == st.leader && n.leader_epoch == st.leader_epoch => {}
                _ => {
                    n.replica = Replica::Follower {
                        leader: st.leader,
                        high_watermark: n.high_watermark,
                    };
                    n.fetcher = (st.leader != NO_LEADER).then(|| Fetcher {
                        state: FollowerPartition::new(
                            st.leader,
                            st.leader_epoch,
                            n.log.end(),
                            n.log.latest_epoch().unwrap_or(-1),
                            n.high_watermark,
                        ),
                        paused_until: 0,
                    });
                }
            }
        }
        n.leader_epoch = n.leader_epoch.max(st.leader_epoch);
        n.is_leader = st.leader == me;
        if became_leader {
            let end = n.log.end();
            let hw = n.high_watermark;
            self.log(format!(
                "{now} node {me} leads epoch {} (log end {end}, hw {hw}, isr {:?})",
                st.leader_epoch, st.isr
            ));
            match self.leaders.get(&st.leader_epoch) {
                Some(&other) if other != me => self.fail(format!(
                    "two leaders in epoch {}: {other} and {me}",
                    st.leader_epoch
                )),
                _ => {
                    self.leaders.insert(st.leader_epoch, me);
                }
            }
        }
        self.leader_progress(i);
        self.data_arrived(i);
        self.maybe_fetch(i);
    }

    /// `Partition::leader_progress`: the high watermark after the log moved.
    fn leader_progress(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        let end = n.log.end();
        let hw = match &mut n.replica {
            Replica::Leader(l) => {
                if end > l.log_end_offset() {
                    l.on_append(end, end);
                }
                l.high_watermark()
            }
            Replica::Follower { high_watermark, .. } => (*high_watermark).min(end),
        };
        self.store_hw(i, hw);
    }

    /// `Partition::store_high_watermark`, and the checks of what it makes readable.
    fn store_hw(&mut self, i: usize, hw: i64) {
        let n = &mut self.nodes[i];
        let hw = hw.max(n.log.start).min(n.log.end());
        n.high_watermark = hw;
        if let Replica::Leader(l) = &n.replica {
            let key = (i, n.incarnation, l.leader_epoch());
            let last = self.leader_hw.entry(key).or_insert(hw);
            if hw < *last {
                let was = *last;
                self.fail(format!(
                    "the high watermark of leader {} went back from {was} to {hw} in epoch {}",
                    id(i),
                    key.2
                ));
            }
            *last = hw;
        }
        self.observe_hw(i);
    }

    /// Wakes what waits on the partition (`data_arrived.notify_waiters()`): acks=all writes,
    /// soon after, and held fetches, which read again.
    fn data_arrived(&mut self, i: usize) {
        if !self.nodes[i].waiters.is_empty() {
            let at = self.now + self.rng.below(3);
            self.timer(i, at, Timer::Waiters);
        }
        self.answer_parked(i, false);
    }

    // ---- the leader's side of a follower's fetch (handlers/fetch.rs) -----------------------

    fn on_fetch(
        &mut self,
        i: usize,
        from: usize,
        req: u64,
        current_leader_epoch: i32,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    ) {
        let now = self.now;
        let refused = |error| Msg::FetchResponse {
            req,
            error,
            high_watermark: -1,
            log_start_offset: -1,
            diverging_epoch: None,
            batches: Vec::new(),
        };
        let n = &mut self.nodes[i];
        if !n.is_leader {
            self.send(i, from, refused(FetchError::LeadershipChanged));
            return;
        }
        // follower_fetched
        if current_leader_epoch >= 0 && current_leader_epoch != n.leader_epoch {
            self.send(i, from, refused(FetchError::LeadershipChanged));
            return;
        }
        let mut diverging = None;
        if last_fetched_epoch >= 0 {
            match n.log.end_offset_for(last_fetched_epoch) {
                Some((e, end)) if e == last_fetched_epoch && end >= fetch_offset => {}
                Some(d) => diverging = Some(d),
                None => diverging = Some((last_fetched_epoch, n.log.start)),
            }
        }
        if diverging.is_none() {
            if fetch_offset > n.log.end() || fetch_offset < n.log.start {
                self.send(i, from, refused(FetchError::OffsetOutOfRange));
                return;
            }
            let Replica::Leader(l) = &mut n.replica else {
                self.send(i, from, refused(FetchError::LeadershipChanged));
                return;
            };
            match l.on_follower_fetch(id(from), fetch_offset, now) {
                Err(_) => {
                    self.send(i, from, refused(FetchError::LeadershipChanged));
                    return;
                }
                Ok((moved, alter)) => {
                    if let Some(hw) = moved {
                        self.store_hw(i, hw);
                        self.data_arrived(i);
                    }
                    if let Some(alter) = alter {
                        self.log(format!(
                            "{now} node {} asks to expand the ISR to {:?} (partition epoch {})",
                            id(i),
                            alter.new_isr,
                            alter.partition_epoch
                        ));
                        self.alter_isr(i, alter);
                    }
                }
            }
        }
        // read_all
        let n = &self.nodes[i];
        if let Some(d) = diverging {
            let msg = Msg::FetchResponse {
                req,
                error: FetchError::None,
                high_watermark: n.high_watermark,
                log_start_offset: n.log.start,
                diverging_epoch: Some(d),
                batches: Vec::new(),
            };
            self.send(i, from, msg);
            return;
        }
        let p = Parked {
            from,
            req,
            current_leader_epoch,
            fetch_offset,
            deadline: now + FETCH_WAIT_MAX_MS,
        };
        match self.read_for_follower(i, &p, false) {
            Some(msg) => self.send(i, from, msg),
            None => {
                let at = p.deadline;
                self.nodes[i].parked.push(p);
                self.timer(i, at, Timer::Parked);
            }
        }
    }

    /// One read of a held fetch: its answer, or `None` to keep holding it.
    fn read_for_follower(&self, i: usize, p: &Parked, deadline_passed: bool) -> Option<Msg> {
        let n = &self.nodes[i];
        let answer = |error, batches| Msg::FetchResponse {
            req: p.req,
            error,
            high_watermark: n.high_watermark,
            log_start_offset: n.log.start,
            diverging_epoch: None,
            batches,
        };
        if p.current_leader_epoch >= 0 && p.current_leader_epoch != n.leader_epoch {
            return Some(answer(FetchError::LeadershipChanged, Vec::new()));
        }
        if p.fetch_offset < n.log.start || p.fetch_offset > n.log.end() {
            return Some(answer(FetchError::OffsetOutOfRange, Vec::new()));
        }
        let batches = n.log.read(p.fetch_offset, FETCH_MAX_BATCHES);
        if batches.is_empty() && !deadline_passed {
            return None;
        }
        Some(answer(FetchError::None, batches))
    }

    fn answer_parked(&mut self, i: usize, deadline: bool) {
        let parked = std::mem::take(&mut self.nodes[i].parked);
        let now = self.now;
        for p in parked {
            match self.read_for_follower(i, &p, deadline && p.deadline <= now) {
                Some(msg) => self.send(i, p.from, msg),
                None => self.nodes[i].parked.push(p),
            }
        }
    }

    // ---- the follower's side (replication/fetcher.rs) ---------------------------------------

    fn maybe_fetch(&mut self, j: usize) {
        let now = self.now;
        let n = &mut self.nodes[j];
        if !n.up {
            return;
        }
        let Some(f) = &n.fetcher else { return };
        let leader = f.state.leader;
        if n.in_flight.contains_key(&leader) {
            return;
        }
        if f.paused_until > now {
            let at = f.paused_until;
            if n.fetch_timer_at.is_none_or(|t| t > at || t < now) {
                n.fetch_timer_at = Some(at);
                self.timer(j, at, Timer::Fetch);
            }
            return;
        }
        self.next_req += 1;
        let req = self.next_req;
        let msg = Msg::Fetch {
            req,
            current_leader_epoch: f.state.leader_epoch,
            fetch_offset: f.state.fetch_offset,
            last_fetched_epoch: f.state.last_fetched_epoch,
        };
        n.in_flight.insert(leader, req);
        self.send(j, index(leader), msg);
        self.timer(
            j,
            now + FETCH_TIMEOUT_MS,
            Timer::FetchTimeout { leader, req },
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn on_fetch_response(
        &mut self,
        j: usize,
        from: usize,
        req: u64,
        error: FetchError,
        high_watermark: i64,
        log_start_offset: i64,
        diverging_epoch: Option<(i32, i64)>,
        batches: Vec<Batch>,
    ) {
        let leader = id(from);
        let now = self.now;
        let n = &mut self.nodes[j];
        if n.in_flight.get(&leader) != Some(&req) {
            return; // an answer on a connection given up
        }
        n.in_flight.remove(&leader);
        let Some(f) = n.fetcher.as_mut() else {
            return;
        };
        if f.state.leader != leader {
            self.maybe_fetch(j);
            return;
        }
        let records = match (batches.first(), batches.last()) {
            (Some(first), Some(last)) => Some(Records {
                base_offset: first.base,
                next_offset: last.next(),
                last_epoch: last.epoch,
            }),
            _ => None,
        };
        let answer = FetchAnswer {
            error,
            high_watermark,
            log_start_offset,
            diverging_epoch,
            records,
        };
        let log = &n.log;
        let steps = f.state.on_answer(&answer, |e| log.end_offset_for(e));
        for step in steps {
            let n = &mut self.nodes[j];
            let done = match step {
                Step::Truncate(offset) => {
                    let before = n.log.end();
                    let done = n.log.truncate_to(offset);
                    let (end, epoch) = (n.log.end(), n.log.latest_epoch().unwrap_or(-1));
                    n.fetcher.as_mut().unwrap().state.resync(end, epoch);
                    if end < before {
                        self.stats.truncations += 1;
                    }
                    self.log(format!(
                        "{now} node {} truncates to {offset} (log end {before} -> {end}) on diverging epoch {diverging_epoch:?} from {leader}",
                        id(j)
                    ));
                    self.after_truncation(j);
                    done
                }
                Step::TruncateFullyAndStartAt(offset) => {
                    let before = n.log.end();
                    let done = n.log.truncate_fully_and_start_at(offset);
                    let end = n.log.end();
                    n.fetcher.as_mut().unwrap().state.resync(end, -1);
                    self.log(format!(
                        "{now} node {} truncates fully (log end {before}) and starts at {offset}: {done:?}",
                        id(j)
                    ));
                    self.after_truncation(j);
                    done
                }
                Step::Append => {
                    let done = n.log.append_as_follower(&batches);
                    if done.is_ok() {
                        for b in &batches {
                            self.wrote(j, b);
                        }
                        self.leader_progress(j);
                    }
                    done
                }
                Step::HighWatermark(hw) => {
                    if let Replica::Follower { high_watermark, .. } = &mut n.replica {
                        *high_watermark = hw;
                    }
                    self.leader_progress(j);
                    self.data_arrived(j);
                    Ok(())
                }
                Step::AwaitLeadership => {
                    n.fetcher.as_mut().unwrap().paused_until = now + AWAIT_LEADERSHIP_PAUSE_MS;
                    Ok(())
                }
                Step::Backoff => {
                    n.fetcher.as_mut().unwrap().paused_until = now + BACKOFF_PAUSE_MS;
                    Ok(())
                }
            };
            if let Err(e) = done {
                if e.starts_with("GAP") {
                    self.fail(format!("node {}: {e}", id(j)));
                }
                self.log(format!(
                    "{now} node {} cannot apply what {leader} sent ({e}); starting over from its log end",
                    id(j)
                ));
                let n = &mut self.nodes[j];
                let f = n.fetcher.as_mut().unwrap();
                f.state = FollowerPartition::new(
                    f.state.leader,
                    f.state.leader_epoch,
                    n.log.end(),
                    n.log.latest_epoch().unwrap_or(-1),
                    n.high_watermark,
                );
                f.paused_until = now + BACKOFF_PAUSE_MS;
                break;
            }
        }
        self.maybe_fetch(j);
    }

    /// `Partition::with_log`'s refresh after a truncation, and the check that an in-sync
    /// replica kept every committed batch.
    fn after_truncation(&mut self, j: usize) {
        let n = &mut self.nodes[j];
        n.matched_to = n.matched_to.min(n.log.end());
        if n.log.start > 0 {
            n.matched_to = 0;
        }
        self.leader_progress(j);
    }

    // ---- produce with acks=all (handlers/produce.rs) ---------------------------------------

    fn on_produce(&mut self, i: usize, count: i64) {
        let now = self.now;
        let n = &mut self.nodes[i];
        if !n.is_leader {
            return; // NOT_LEADER_OR_FOLLOWER
        }
        let enough = match &n.replica {
            Replica::Leader(l) => l.enough_replicas(MIN_INSYNC_REPLICAS),
            Replica::Follower { .. } => false,
        };
        if !enough {
            return; // NOT_ENOUGH_REPLICAS
        }
        self.next_id += 1;
        let batch = Batch {
            base: n.log.end(),
            count,
            epoch: n.leader_epoch,
            id: self.next_id,
        };
        n.log.append_as_leader(batch);
        n.waiters.push(Waiter {
            batch,
            deadline: now + PRODUCE_TIMEOUT_MS,
        });
        self.wrote(i, &batch);
        self.timer(i, now + PRODUCE_TIMEOUT_MS, Timer::Waiters);
        self.leader_progress(i);
        self.data_arrived(i);
    }

    fn check_waiters(&mut self, i: usize) {
        let now = self.now;
        let n = &mut self.nodes[i];
        let mut done = Vec::new();
        let mut keep = Vec::new();
        for w in std::mem::take(&mut n.waiters) {
            let state = match &n.replica {
                Replica::Leader(l) => l.acks_all(w.batch.next(), MIN_INSYNC_REPLICAS),
                Replica::Follower { .. } => AcksAll::NotEnoughReplicasAfterAppend,
            };
            match state {
                AcksAll::Done => done.push(w.batch),
                AcksAll::NotEnoughReplicasAfterAppend => {}
                AcksAll::Waiting if now >= w.deadline => {}
                AcksAll::Waiting => keep.push(w),
            }
        }
        n.waiters = keep;
        for b in done {
            self.acknowledge(i, b);
        }
    }

    /// The leader answers an acks=all write: it must be committed where it was written.
    fn acknowledge(&mut self, i: usize, b: Batch) {
        if self.nodes[i].log.batch_at(b.base) != Some(&b) {
            self.fail(format!(
                "node {} acknowledged batch #{} at {} that its log does not hold there",
                id(i),
                b.id,
                b.base
            ));
        }
        if self.committed_at(b.base) != Some(&b) {
            self.fail(format!(
                "node {} acknowledged batch #{} at {} below its high watermark {}, but it is not the committed batch there ({:?})",
                id(i),
                b.id,
                b.base,
                self.nodes[i].high_watermark,
                self.committed_at(b.base)
            ));
        }
        self.acknowledged.push(b);
        self.stats.acknowledged += 1;
    }

    // ---- ISR changes through the controller (replication/mod.rs alter_isr) -----------------

    fn alter_isr(&mut self, i: usize, alter: AlterIsr) {
        let now = self.now;
        let n = &mut self.nodes[i];
        let Some(broker_epoch) = n.broker_epoch else {
            self.alter_isr_failed(i, &alter, AlterIsrFailure::Refused);
            return;
        };
        let new_isr = alter
            .new_isr
            .iter()
            .map(|&b| IsrMember {
                broker_id: b,
                broker_epoch: n.image.1.broker_epochs[index(b)].unwrap_or(-1),
            })
            .collect();
        self.next_req += 1;
        let req = self.next_req;
        n.alters.push((req, alter.clone()));
        let controller = self.controller_index();
        self.send(
            i,
            controller,
            Msg::AlterPartition {
                req,
                broker_epoch,
                alter,
                new_isr,
            },
        );
        self.timer(
            i,
            now + ALTER_PARTITION_TIMEOUT_MS,
            Timer::AlterTimeout { req },
        );
    }

    fn alter_isr_failed(&mut self, i: usize, alter: &AlterIsr, failure: AlterIsrFailure) {
        if let Replica::Leader(l) = &mut self.nodes[i].replica {
            l.on_alter_isr_failed(alter, failure);
        }
    }

    fn on_alter_answer(&mut self, i: usize, req: u64, error_code: Option<i16>) {
        let n = &mut self.nodes[i];
        let Some(k) = n.alters.iter().position(|(r, _)| *r == req) else {
            return;
        };
        let (_, alter) = n.alters.remove(k);
        if error_code != Some(0) {
            // No answer in time is REQUEST_TIMED_OUT from `request_retrying`.
            let code = error_code.unwrap_or(ResponseError::RequestTimedOut.code());
            let failure = AlterIsrFailure::from_error_code(code);
            let now = self.now;
            self.log(format!(
                "{now} node {} ISR change {:?} not made: {code} ({failure:?})",
                id(i),
                alter.new_isr
            ));
            self.alter_isr_failed(i, &alter, failure);
        }
    }

    // ---- broker lifecycle ------------------------------------------------------------------

    fn start_timers(&mut self, i: usize) {
        let now = self.now;
        let phase = self.rng.below(REPLICA_LAG_TIME_MAX_MS / 2);
        self.timer(i, now + phase, Timer::IsrCheck);
        self.timer(i, now + 1, Timer::Heartbeat);
        self.timer(i, now + 1, Timer::MetadataPoll);
        let at = now + 500 + self.rng.below(1500);
        self.timer(i, at, Timer::Checkpoint);
    }

    fn crash(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        if !n.up {
            return;
        }
        n.up = false;
        n.fetcher = None;
        n.in_flight.clear();
        n.waiters.clear();
        n.alters.clear();
        n.parked.clear();
        n.fetch_timer_at = None;
        self.stats.crashes += 1;
        let line = format!(
            "{} crash node {} (log end {}, hw {})",
            self.now,
            id(i),
            self.nodes[i].log.end(),
            self.nodes[i].high_watermark
        );
        self.log(line);
    }

    fn restart(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        if n.up {
            return;
        }
        n.up = true;
        n.incarnation += 1;
        n.log.recover();
        let hw = n.log.hw_checkpoint;
        n.high_watermark = hw;
        n.replica = Replica::Follower {
            leader: NO_LEADER,
            high_watermark: hw,
        };
        n.leader_epoch = n.image.1.state.leader_epoch;
        n.is_leader = false;
        n.broker_epoch = None;
        n.publishing = self.s.eager_publish;
        n.matched_to = n.matched_to.min(n.log.end());
        let line = format!(
            "{} restart node {} (log end {}, hw {}, image at {})",
            self.now,
            id(i),
            n.log.end(),
            hw,
            n.image.0
        );
        self.log(line);
        self.start_timers(i);
        self.timer(i, self.now, Timer::Register);
        if self.nodes[i].publishing {
            self.publish(i);
        }
    }

    /// Starts taking the image's roles once registered and caught up with the registration.
    fn maybe_start_publishing(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        if n.publishing || n.broker_epoch.is_none_or(|e| (n.image.0 as i64) < e) {
            return;
        }
        n.publishing = true;
        let line = format!(
            "{} node {} caught up with its registration at {}: takes its roles",
            self.now,
            id(i),
            n.image.0
        );
        self.log(line);
        self.publish(i);
    }

    fn on_timer(&mut self, i: usize, timer: Timer) {
        let now = self.now;
        match timer {
            Timer::Fetch => {
                if self.nodes[i].fetch_timer_at == Some(now) {
                    self.nodes[i].fetch_timer_at = None;
                }
                self.maybe_fetch(i);
            }
            Timer::FetchTimeout { leader, req } => {
                let n = &mut self.nodes[i];
                if n.in_flight.get(&leader) == Some(&req) {
                    n.in_flight.remove(&leader);
                    if let Some(f) = n.fetcher.as_mut() {
                        f.paused_until = f.paused_until.max(now + FETCH_BACKOFF_MS);
                    }
                    self.maybe_fetch(i);
                }
            }
            Timer::IsrCheck => {
                if let Replica::Leader(l) = &mut self.nodes[i].replica {
                    if let Some(alter) = l.tick(now) {
                        self.log(format!(
                            "{now} node {} asks to change the ISR to {:?} (partition epoch {})",
                            id(i),
                            alter.new_isr,
                            alter.partition_epoch
                        ));
                        self.alter_isr(i, alter);
                    }
                }
                self.timer(i, now + REPLICA_LAG_TIME_MAX_MS / 2, Timer::IsrCheck);
            }
            Timer::Heartbeat => {
                let n = &self.nodes[i];
                if let Some(broker_epoch) = n.broker_epoch {
                    let msg = Msg::Heartbeat {
                        broker_epoch,
                        metadata_offset: n.image.0,
                    };
                    let c = self.controller_index();
                    self.send(i, c, msg);
                }
                self.timer(i, now + HEARTBEAT_INTERVAL_MS, Timer::Heartbeat);
            }
            Timer::MetadataPoll => {
                let msg = Msg::MetadataFetch {
                    offset: self.nodes[i].image.0,
                };
                let c = self.controller_index();
                self.send(i, c, msg);
                let at = now + 50 + self.rng.below(150);
                self.timer(i, at, Timer::MetadataPoll);
            }
            Timer::Checkpoint => {
                let n = &mut self.nodes[i];
                n.log.hw_checkpoint = n.high_watermark;
                let at = now + 500 + self.rng.below(1500);
                self.timer(i, at, Timer::Checkpoint);
            }
            Timer::Register => {
                let n = &self.nodes[i];
                if n.broker_epoch.is_none() {
                    let msg = Msg::Register {
                        incarnation: n.incarnation,
                    };
                    let c = self.controller_index();
                    self.send(i, c, msg);
                    self.timer(i, now + 300, Timer::Register);
                }
            }
            Timer::Waiters => self.check_waiters(i),
            Timer::Parked => self.answer_parked(i, true),
            Timer::AlterTimeout { req } => self.on_alter_answer(i, req, None),
        }
    }

    fn on_metadata(&mut self, i: usize, offset: usize, meta: Meta) {
        if offset <= self.nodes[i].image.0 {
            return;
        }
        self.nodes[i].image = (offset, meta);
        if self.nodes[i].publishing {
            self.publish(i);
        } else {
            self.maybe_start_publishing(i);
        }
    }

    fn deliver_to_broker(&mut self, i: usize, from: usize, msg: Msg) {
        match msg {
            Msg::Fetch {
                req,
                current_leader_epoch,
                fetch_offset,
                last_fetched_epoch,
            } => self.on_fetch(
                i,
                from,
                req,
                current_leader_epoch,
                fetch_offset,
                last_fetched_epoch,
            ),
            Msg::FetchResponse {
                req,
                error,
                high_watermark,
                log_start_offset,
                diverging_epoch,
                batches,
            } => self.on_fetch_response(
                i,
                from,
                req,
                error,
                high_watermark,
                log_start_offset,
                diverging_epoch,
                batches,
            ),
            Msg::Produce { count } => self.on_produce(i, count),
            Msg::AlterPartitionResponse { req, error_code } => {
                self.on_alter_answer(i, req, Some(error_code))
            }
            Msg::RegisterResponse {
                incarnation,
                broker_epoch,
            } => {
                let n = &mut self.nodes[i];
                if n.incarnation == incarnation && n.broker_epoch.is_none() {
                    n.broker_epoch = broker_epoch;
                    self.maybe_start_publishing(i);
                }
            }
            Msg::MetadataUpdate { offset, meta } => self.on_metadata(i, offset, meta),
            Msg::StaleBrokerEpoch { broker_epoch } => {
                if self.nodes[i].broker_epoch == Some(broker_epoch) {
                    let line = format!(
                        "{} node {} registers again: epoch {broker_epoch} is stale",
                        self.now,
                        id(i)
                    );
                    self.log(line);
                    self.nodes[i].broker_epoch = None;
                    self.timer(i, self.now, Timer::Register);
                }
            }
            other => unreachable!("a broker got {other:?}"),
        }
    }

    // ---- the controller ----------------------------------------------------------------------

    /// Appends the partition's next state (or the same one, for a change of the brokers'
    /// registrations) to the metadata log, checking elections and ISR expansions.
    fn commit(&mut self, next: Option<PartitionState>, why: &str) {
        let prev = self.controller.state().clone();
        let state = next.unwrap_or_else(|| prev.clone());
        if state != prev {
            self.log(format!(
                "{} controller ({why}): leader {} epoch {} isr {:?} partition epoch {}",
                self.now, state.leader, state.leader_epoch, state.isr, state.partition_epoch
            ));
            if state.isr != prev.isr {
                self.stats.isr_changes += 1;
            }
        }
        if state.leader != prev.leader && state.leader != NO_LEADER {
            self.stats.elections += 1;
            let l = index(state.leader);
            if !self.holds_committed(l) {
                self.fail(format!(
                    "broker {} elected in epoch {} without every committed batch",
                    state.leader, state.leader_epoch
                ));
            }
        }
        for &m in &state.isr {
            if !prev.isr.contains(&m) && !self.holds_committed(index(m)) {
                self.fail(format!(
                    "broker {m} joined the ISR {:?} without every committed batch",
                    state.isr
                ));
            }
        }
        let broker_epochs = self
            .controller
            .brokers
            .iter()
            .map(|r| r.as_ref().map(|r| r.epoch))
            .collect();
        self.controller.log.push(Meta {
            state,
            broker_epochs,
        });
    }

    fn controller_receive(&mut self, b: usize, msg: Msg) {
        let now = self.now;
        let c = self.controller_index();
        match msg {
            Msg::Register { incarnation } => {
                let answer = match &self.controller.brokers[b] {
                    Some(r) if r.incarnation == incarnation => Some(r.epoch),
                    // DUPLICATE_BROKER_REGISTRATION while the old incarnation's session lives.
                    Some(r) if !r.fenced && now < r.last_heartbeat_ms + SESSION_TIMEOUT_MS => None,
                    old => {
                        if old.is_some() {
                            // A new incarnation leaves leadership and the ISR as fencing would.
                            let state = self.controller.state().clone();
                            let next = pc::handle_broker_fenced(
                                &state,
                                id(b),
                                false,
                                &Liveness(&self.controller.brokers),
                            );
                            if next.is_some() {
                                self.commit(next, "new incarnation");
                            }
                        }
                        let offset = self.controller.log.len();
                        self.controller.brokers[b] = Some(Registration {
                            incarnation,
                            epoch: offset as i64,
                            fenced: true,
                            last_heartbeat_ms: now,
                            offset,
                        });
                        self.commit(None, "register");
                        self.log(format!(
                            "{now} controller registers {} incarnation {incarnation} at epoch {offset}",
                            id(b)
                        ));
                        Some(offset as i64)
                    }
                };
                self.send(
                    c,
                    b,
                    Msg::RegisterResponse {
                        incarnation,
                        broker_epoch: answer,
                    },
                );
            }
            Msg::Heartbeat {
                broker_epoch,
                metadata_offset,
            } => {
                let Some(r) = self.controller.brokers[b].as_mut() else {
                    return;
                };
                if r.epoch != broker_epoch {
                    self.send(c, b, Msg::StaleBrokerEpoch { broker_epoch });
                    return;
                }
                r.last_heartbeat_ms = now;
                if r.fenced && metadata_offset >= r.offset {
                    r.fenced = false;
                    let state = self.controller.state().clone();
                    let next = pc::handle_broker_unfenced(
                        &state,
                        id(b),
                        false,
                        &Liveness(&self.controller.brokers),
                    );
                    self.log(format!("{now} controller unfences {}", id(b)));
                    self.commit(next, "unfence");
                }
            }
            Msg::AlterPartition {
                req,
                broker_epoch,
                alter,
                new_isr,
            } => {
                let registered = self.controller.brokers[b].as_ref().map(|r| r.epoch);
                let error_code = if registered != Some(broker_epoch) {
                    ResponseError::StaleBrokerEpoch.code()
                } else {
                    let state = self.controller.state().clone();
                    let request = AlterPartitionRequest {
                        broker_id: id(b),
                        version: 3,
                        leader_epoch: alter.leader_epoch,
                        partition_epoch: alter.partition_epoch,
                        new_isr,
                    };
                    match pc::alter_partition(&state, &request, &Liveness(&self.controller.brokers))
                    {
                        Err(e) => e.error_code(),
                        Ok(next) => {
                            if next.is_some() {
                                self.commit(next, "AlterPartition");
                            }
                            0
                        }
                    }
                };
                self.send(c, b, Msg::AlterPartitionResponse { req, error_code });
            }
            Msg::MetadataFetch { offset } => {
                let latest = self.controller.log.len() - 1;
                if offset < latest {
                    // Usually all of it, now and then only part of the way.
                    let to = if self.rng.chance(300) {
                        offset + 1 + self.rng.below((latest - offset) as u64) as usize
                    } else {
                        latest
                    };
                    let meta = self.controller.log[to].clone();
                    self.send(c, b, Msg::MetadataUpdate { offset: to, meta });
                }
            }
            other => unreachable!("the controller got {other:?}"),
        }
    }

    /// Fences the brokers whose sessions expired (Kafka's `BrokerHeartbeatManager`).
    fn controller_tick(&mut self) {
        let now = self.now;
        for b in 0..self.s.nodes {
            let Some(r) = self.controller.brokers[b].as_mut() else {
                continue;
            };
            if r.fenced || now <= r.last_heartbeat_ms + SESSION_TIMEOUT_MS {
                continue;
            }
            r.fenced = true;
            let state = self.controller.state().clone();
            let next =
                pc::handle_broker_fenced(&state, id(b), false, &Liveness(&self.controller.brokers));
            self.log(format!("{now} controller fences {}", id(b)));
            self.commit(next, "fence");
        }
        self.schedule(now + 100, Event::ControllerTick);
    }

    // ---- invariants --------------------------------------------------------------------------

    /// Every batch ever written at an offset in an epoch is the same one.
    fn wrote(&mut self, i: usize, b: &Batch) {
        let prior = *self.written.entry((b.base, b.epoch)).or_insert(b.id);
        if prior != b.id {
            self.fail(format!(
                "node {} holds batch #{} at {} in epoch {}, where batch #{prior} was written in that epoch",
                id(i),
                b.id,
                b.base,
                b.epoch
            ));
        }
    }

    /// How far node `i`'s log is the committed log.
    fn extend_match(&mut self, i: usize) -> i64 {
        let n = &self.nodes[i];
        let mut m = n.matched_to.min(n.log.end());
        if n.log.start > 0 {
            return 0;
        }
        while let (Some(b), Some(c)) = (n.log.batch_at(m), self.committed_at(m)) {
            if b != c {
                break;
            }
            m = b.next();
        }
        self.nodes[i].matched_to = m;
        m
    }

    fn holds_committed(&mut self, i: usize) -> bool {
        self.extend_match(i) >= self.committed_end()
    }

    /// What is below node `i`'s high watermark is readable, so committed: it must be the
    /// committed log, or extend it.
    fn observe_hw(&mut self, i: usize) {
        let hw = self.nodes[i].high_watermark;
        let mut m = self.extend_match(i);
        if m >= hw {
            return;
        }
        let end = self.committed_end();
        if m < end {
            let mine = self.nodes[i].log.batch_at(m).copied();
            let theirs = self.committed_at(m).copied();
            self.fail(format!(
                "node {} has {mine:?} at {m}, below its high watermark {hw}, where {theirs:?} was committed",
                id(i)
            ));
        }
        let from = self.nodes[i].log.batches.partition_point(|b| b.base < m);
        let new: Vec<Batch> = self.nodes[i].log.batches[from..]
            .iter()
            .take_while(|b| b.next() <= hw)
            .copied()
            .collect();
        self.committed.extend(new);
        m = self.extend_match(i);
        let straddles = self.nodes[i].log.batch_at(m).is_some_and(|b| b.next() > hw);
        if m < hw && !straddles {
            self.fail(format!(
                "node {} publishes high watermark {hw} past its committed log end {m}",
                id(i)
            ));
        }
    }

    /// Every member of the controller's ISR holds every committed batch.
    fn check_isr_holds_committed(&mut self) {
        let isr = self.controller.state().isr.clone();
        for m in isr {
            if !self.holds_committed(index(m)) {
                self.fail(format!(
                    "ISR member {m} lacks committed batches (its log matches to {}, committed to {})",
                    self.nodes[index(m)].matched_to,
                    self.committed_end()
                ));
            }
        }
    }

    /// Every replica's leader-epoch cache tells the epoch of each of its batches: the entry
    /// starting at or before a batch is the batch's epoch, and none starts past the log end
    /// (one may start at the end: an epoch its broker leads and has not written in yet).
    fn check_epoch_caches(&self) {
        for (i, n) in self.nodes.iter().enumerate() {
            let log = &n.log;
            if let Some(&(e, start)) = log.epochs.iter().find(|&&(_, s)| s > log.end()) {
                self.fail(format!(
                    "node {} has epoch {e} starting at {start}, past its log end {}",
                    id(i),
                    log.end()
                ));
            }
            for b in &log.batches {
                let k = log.epochs.partition_point(|&(_, s)| s <= b.base);
                let cached = k.checked_sub(1).map(|k| log.epochs[k].0);
                if cached != Some(b.epoch) {
                    self.fail(format!(
                        "node {}'s epoch cache gives epoch {cached:?} to its batch {b:?}",
                        id(i)
                    ));
                }
            }
        }
    }

    /// Two replicas holding the same batch agree on everything before it.
    fn check_log_matching(&self) {
        for a in 0..self.s.nodes {
            for b in a + 1..self.s.nodes {
                let (la, lb) = (&self.nodes[a].log, &self.nodes[b].log);
                if la.start != 0 || lb.start != 0 {
                    continue;
                }
                let common = la.batches.len().min(lb.batches.len());
                let Some(last_same) = (0..common).rev().find(|&k| la.batches[k] == lb.batches[k])
                else {
                    continue;
                };
                if la.batches[..last_same] != lb.batches[..last_same] {
                    let k = (0..last_same)
                        .find(|&k| la.batches[k] != lb.batches[k])
                        .unwrap();
                    self.fail(format!(
                        "nodes {} and {} share batch {:?} but differ before it: {:?} vs {:?}",
                        id(a),
                        id(b),
                        la.batches[last_same],
                        la.batches[k],
                        lb.batches[k]
                    ));
                }
            }
        }
    }

    // ---- the run -----------------------------------------------------------------------------

    fn chaos(&mut self) {
        let n = self.s.nodes;
        if self.rng.chance(self.s.crash_per_mille_per_s / 10) {
            // Half the crashes hit the leader, where they do the most harm.
            let leader = self.controller.state().leader;
            let i = if leader != NO_LEADER && self.rng.chance(500) {
                index(leader)
            } else {
                self.rng.below(n as u64) as usize
            };
            if self.nodes[i].up {
                self.crash(i);
                let at = self.now + 50 + self.rng.below(3 * SECOND);
                self.schedule(at, Event::Restart { node: i });
            }
        }
        if self.rng.chance(self.s.stall_per_mille_per_s / 10) {
            // A link with the controller holds up what it carries (a controller failing over,
            // a connection stuck): what is sent on it arrives late, in order.
            let b = self.rng.below(n as u64) as usize;
            let link = if self.rng.chance(500) { (b, n) } else { (n, b) };
            let until = self.now + self.rng.below(self.s.stall_max_ms);
            let last = self.link_clock.entry(link).or_insert(0);
            *last = (*last).max(until);
            let line = format!("{} link {link:?} held up until {until}", self.now);
            self.log(line);
        }
        if self.rng.chance(self.s.partition_per_mille_per_s / 10) {
            match self.rng.below(3) {
                0 => self.heal(),
                1 => {
                    // Isolate one broker, from the controller too half the time.
                    let i = self.rng.below(n as u64) as usize;
                    let reach = if self.rng.chance(500) { n + 1 } else { n };
                    for j in 0..reach {
                        if j != i {
                            self.cut[i][j] = true;
                            self.cut[j][i] = true;
                        }
                    }
                    let line = format!("{} isolate node {}", self.now, id(i));
                    self.log(line);
                }
                _ => {
                    // A random split, possibly one-way, the controller included.
                    for a in 0..=n {
                        for b in 0..=n {
                            if a != b && self.rng.chance(250) {
                                self.cut[a][b] = true;
                            }
                        }
                    }
                    let line = format!("{} random cuts", self.now);
                    self.log(line);
                }
            }
        }
    }

    fn heal(&mut self) {
        for row in self.cut.iter_mut() {
            row.iter_mut().for_each(|c| *c = false);
        }
        let line = format!("{} heal", self.now);
        self.log(line);
    }

    /// A client's acks=all write, to the broker its metadata names the leader, or a stale one.
    fn produce(&mut self) {
        let leader = self.controller.state().leader;
        let to = if leader != NO_LEADER && self.rng.chance(800) {
            index(leader)
        } else {
            self.rng.below(self.s.nodes as u64) as usize
        };
        let count = 1 + self.rng.below(3) as i64;
        let client = self.client_index();
        self.send(client, to, Msg::Produce { count });
    }

    fn run(&mut self) {
        let end = self.s.chaos_ms + self.s.calm_ms;
        let chaos_end = self.s.chaos_ms;
        let mut next_step = 0;
        let mut next_matching_check = 0;
        while self.now < end {
            if self.now >= next_step {
                next_step = self.now + 100;
                if self.now < chaos_end {
                    self.chaos();
                } else if self.now < chaos_end + 100 {
                    self.heal();
                    self.s.drop_per_mille = 0;
                    self.s.duplicate_per_mille = 0;
                    self.s.stall_per_mille_per_s = 0;
                    for i in 0..self.s.nodes {
                        self.restart(i);
                    }
                }
                if self.now + 3 * SECOND < end {
                    self.produce();
                }
                self.check_isr_holds_committed();
                if self.now >= next_matching_check {
                    next_matching_check = self.now + SECOND;
                    self.check_log_matching();
                    self.check_epoch_caches();
                }
            }
            let Some(top) = self.queue.peek() else {
                self.now = next_step;
                continue;
            };
            if top.at > next_step {
                self.now = next_step;
                continue;
            }
            let e = self.queue.pop().unwrap();
            self.now = self.now.max(e.at);
            match e.event {
                Event::Deliver { to, from, msg } => {
                    if to == self.controller_index() {
                        self.controller_receive(from, msg);
                    } else if self.nodes[to].up {
                        self.deliver_to_broker(to, from, msg);
                    }
                }
                Event::Timer {
                    node,
                    incarnation,
                    timer,
                } => {
                    let n = &self.nodes[node];
                    if n.up && n.incarnation == incarnation {
                        self.on_timer(node, timer);
                    }
                }
                Event::Restart { node } => self.restart(node),
                Event::ControllerTick => self.controller_tick(),
            }
        }
    }

    /// After the calm phase: one leader with every replica in its ISR, every replica with the
    /// leader's log and high watermark, every acknowledged write there.
    fn check_converged(&mut self) {
        let st = self.controller.state().clone();
        if st.leader == NO_LEADER {
            self.fail("no leader after the faults stopped".into());
        }
        if st.isr.len() != self.s.nodes {
            self.fail(format!("the ISR {:?} is not full after calm", st.isr));
        }
        let l = index(st.leader);
        let leader_isr = match &self.nodes[l].replica {
            Replica::Leader(p) if p.leader_epoch() == st.leader_epoch => p.isr().clone(),
            _ => self.fail(format!(
                "broker {} does not lead epoch {}",
                st.leader, st.leader_epoch
            )),
        };
        let mut committed_isr = match leader_isr {
            IsrState::Committed(isr) => isr,
            pending => self.fail(format!("the leader's ISR is {pending:?} after calm")),
        };
        committed_isr.sort();
        if committed_isr.len() != self.s.nodes {
            self.fail(format!("the leader's ISR is {committed_isr:?} after calm"));
        }
        let leader_log = self.nodes[l].log.batches.clone();
        let leader_end = self.nodes[l].log.end();
        for i in 0..self.s.nodes {
            let n = &self.nodes[i];
            if n.log.batches != leader_log {
                self.fail(format!(
                    "node {} has a log other than the leader's after calm",
                    id(i)
                ));
            }
            if n.high_watermark != leader_end {
                self.fail(format!(
                    "node {} has high watermark {} after calm, the leader's log ends at {leader_end}",
                    id(i),
                    n.high_watermark
                ));
            }
        }
        if !self.holds_committed(l) {
            self.fail("the final log lacks committed batches".into());
        }
        for b in &self.acknowledged {
            if self.nodes[l].log.batch_at(b.base) != Some(b) {
                self.fail(format!("acknowledged batch {b:?} was lost"));
            }
        }
        if self.acknowledged.len() < 20 {
            self.fail(format!(
                "only {} writes acknowledged",
                self.acknowledged.len()
            ));
        }
    }
}

fn run_one(seed: u64, s: Settings) -> Stats {
    let mut sim = Sim::new(seed, s);
    sim.run();
    sim.check_converged();
    sim.stats
}

fn run_seeds(nodes: usize, default_seeds: u64) {
    if let Ok(seed) = std::env::var("SAMSA_SIM_SEED") {
        let seed: u64 = seed.parse().expect("SAMSA_SIM_SEED is a number");
        // A seed of the sweeps names its replica count; run it with that one only.
        if seed >= 1_000_000 && seed / 1_000_000 != nodes as u64 {
            return;
        }
        let stats = run_one(seed, settings(nodes));
        println!("seed {seed}: {stats:?}");
        return;
    }
    let seeds: u64 = std::env::var("SAMSA_SIM_SEEDS")
        .ok()
        .map_or(default_seeds, |s| {
            s.parse().expect("SAMSA_SIM_SEEDS is a number")
        });
    // SAMSA_SIM_KEEP_GOING=1 runs every seed and lists the failing ones at the end.
    let keep_going = std::env::var("SAMSA_SIM_KEEP_GOING").is_ok_and(|v| v == "1");
    let mut failed = Vec::new();
    let mut total = Stats::default();
    for seed in 0..seeds {
        let seed = seed + nodes as u64 * 1_000_000;
        let Ok(stats) = std::panic::catch_unwind(|| run_one(seed, settings(nodes))) else {
            if keep_going {
                failed.push(seed);
                continue;
            }
            panic!("seed {seed} failed: rerun it with SAMSA_SIM_SEED={seed}");
        };
        total.acknowledged += stats.acknowledged;
        total.elections += stats.elections;
        total.isr_changes += stats.isr_changes;
        total.truncations += stats.truncations;
        total.crashes += stats.crashes;
    }
    assert!(
        failed.is_empty(),
        "{} of {seeds} seeds failed: {failed:?}",
        failed.len()
    );
    println!("{nodes} replicas, {seeds} seeds: {total:?}, no acknowledged write lost");
}

#[test]
fn three_replicas_keep_every_acknowledged_write_through_faults() {
    run_seeds(3, 300);
}

#[test]
fn five_replicas_keep_every_acknowledged_write_through_faults() {
    run_seeds(5, 150);
}

#[test]
fn a_calm_cluster_keeps_its_leader_and_a_full_isr_and_acknowledges_what_reaches_the_leader() {
    for seed in 0..20 {
        let mut s = settings(3);
        s.drop_per_mille = 0;
        s.duplicate_per_mille = 0;
        s.stall_per_mille_per_s = 0;
        s.crash_per_mille_per_s = 0;
        s.partition_per_mille_per_s = 0;
        s.chaos_ms = 0;
        let mut sim = Sim::new(seed, s);
        sim.run();
        sim.check_converged();
        assert_eq!(
            sim.stats.elections, 0,
            "seed {seed}: an election without a fault"
        );
        assert_eq!(
            sim.stats.isr_changes, 0,
            "seed {seed}: the ISR changed without a fault"
        );
        // Every write sent to the leader (the client's metadata is right 80% of the time) in
        // the first 17 s, one each 100 ms, is acknowledged.
        assert!(
            sim.stats.acknowledged >= 120,
            "seed {seed}: {} acknowledged",
            sim.stats.acknowledged
        );
    }
}
