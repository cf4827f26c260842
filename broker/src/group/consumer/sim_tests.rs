//! A deterministic simulation of a KIP-848 consumer group, one seed at a time: clients behaving
//! as Kafka's Java consumer does, a network that loses and delays requests and replies, a
//! coordinator that crashes and comes back from the records it wrote, topics that appear and
//! grow, subscriptions (names and regexes) that change, clients that leave, crash, hang in a
//! revocation or are merely slow.
//!
//! After every step: the group's own invariants; the live group equals the group its records
//! rebuild; member, group and assignment epochs never go backwards; and the safety property of
//! the protocol: a partition a live client thinks it owns is in its member's assigned or
//! pending-revocation partitions at the coordinator, unless the coordinator no longer knows the
//! member or will fence its next heartbeat (the client then learns it lost them). So no two
//! clients the coordinator still accepts ever own the same partition.
//!
//! Once the faults stop, the group must settle within a bounded time: Stable, each live client
//! owning exactly its assignment, every partition of the topics the clients subscribe to owned
//! by exactly one of them, and the assignment balanced (uniform with identical subscriptions:
//! counts within one; range: within one per topic).
//!
//! The network keeps one client's requests in order (a request arrives before its client gives
//! up on it, as on one connection); replies may come late, after the coordinator's timer fired,
//! or never. Requests of one member handled out of order are left out on purpose: a stale
//! heartbeat handled after a newer one can undo what the newer one said (a subscription, a
//! revocation), which Kafka's protocol does not guard against either.
//!
//! `SAMSA_SIM_SEEDS=5000 cargo test -p samsa-broker --lib group::consumer::sim_tests` runs more
//! seeds; `SAMSA_SIM_SEED=17` runs one and prints its trace.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignor::Assignor;
use super::group::{
    ConsumerGroup, Heartbeat, HeartbeatError, Member, Record, Reply, Settings, State, TopicMeta,
    TopicView, LEAVE_EPOCH, LEAVE_STATIC_EPOCH,
};
use super::reconcile::{MemberState, Partitions};

const SESSION_MS: i32 = 3_000;
const INTERVAL_MS: i32 = 500;
const REQUEST_TIMEOUT_MS: i64 = 1_000;
const MAX_REBALANCE_MS: i32 = 4_000;
const MAX_RESTART_MS: i64 = 3_000;
const MAX_DOWNTIME_MS: i64 = 2_000;
const MAX_CLIENTS: usize = 6;
/// Time the group gets to settle once the faults stop: a session and a rebalance timeout for
/// crashed and hung members to be fenced, restarts and a coordinator coming back, then plenty
/// of heartbeats.
const QUIET_MS: i64 = SESSION_MS as i64
    + MAX_REBALANCE_MS as i64
    + MAX_RESTART_MS
    + MAX_DOWNTIME_MS
    + 16 * INTERVAL_MS as i64;

/// SplitMix64: deterministic whatever the version of any crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn between(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

// ---- topics ----

/// Topic names: plain ones, ones the regexes match, one nobody subscribes to.
const NAMES: [&str; 8] = ["a", "b", "c", "x", "orders-1", "orders-2", "orders-3", "zz"];

struct Topics {
    topics: BTreeMap<String, TopicMeta>,
    version: u64,
}

impl TopicView for Topics {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.topics.get(name).copied()
    }
    fn names(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }
    fn version(&self) -> u64 {
        self.version
    }
}

impl Topics {
    fn id(name: &str) -> Uuid {
        let i = NAMES.iter().position(|n| *n == name).expect("a known name");
        Uuid::from_u128(i as u128 + 1)
    }

    /// The partitions of the topics a subscription names or matches, as they exist now.
    fn partitions_of(&self, sub: &Sub) -> Partitions {
        self.topics
            .iter()
            .filter(|(n, _)| {
                sub.names.contains(n) || sub.regex.as_deref().is_some_and(|r| matches(r, n))
            })
            .map(|(_, t)| (t.id, (0..t.partitions).collect()))
            .collect()
    }
}

// ---- clients ----

#[derive(Debug, Clone, PartialEq, Eq)]
struct Sub {
    names: Vec<String>,
    regex: Option<String>,
}

const SUBSCRIPTIONS: usize = 7;

/// What the subscriptions' regexes match, written out (the simulation's own oracle).
fn matches(regex: &str, name: &str) -> bool {
    match regex {
        "orders-[0-9]+" => name
            .strip_prefix("orders-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        "orders-1|b" => name == "orders-1" || name == "b",
        _ => panic!("a regex the simulation does not know: {regex}"),
    }
}

fn subscription(k: usize) -> Sub {
    let names = |ns: &[&str]| ns.iter().map(|s| s.to_string()).collect();
    let (names, regex) = match k {
        0 => (names(&["a"]), None),
        1 => (names(&["a", "b"]), None),
        2 => (vec![], Some("orders-[0-9]+")),
        3 => (names(&["a"]), Some("orders-[0-9]+")),
        4 => (names(&["c", "x"]), None),
        5 => (vec![], Some("orders-1|b")),
        _ => (names(&["a", "b", "c"]), None),
    };
    Sub {
        names,
        regex: regex.map(str::to_string),
    }
}

/// What the client last sent, as the Java consumer's `HeartbeatState.SentFields`: a field goes
/// out again only when it changed, and everything after a failure.
#[derive(Debug, Default)]
struct Sent {
    rebalance: bool,
    sub: Option<Sub>,
    assignor: Option<String>,
    owned: Option<Partitions>,
}

#[derive(Debug)]
struct Client {
    member_id: String,
    instance_id: Option<String>,
    rack: Option<String>,
    /// The process runs (not crashed, not closed).
    alive: bool,
    /// It sent its leave heartbeat and waits for the answer (it owns nothing any more).
    leaving: bool,
    epoch: i32,
    /// The partitions it consumes.
    owned: Partitions,
    /// The latest assignment received and not reconciled yet.
    target: Option<Partitions>,
    /// A revocation is under way (it ends with a `Reconciled` event, or never when stuck).
    reconciling: bool,
    reconcile_gen: u64,
    /// Its next revocation never ends (a callback hangs) until the coordinator fences it.
    stuck: bool,
    /// How long its revocations take.
    slow_ms: i64,
    sub: Sub,
    assignor: Option<String>,
    /// It subscribed with a regex at some point (and then clears it when it no longer does).
    had_regex: bool,
    /// It sends its owned partitions in every heartbeat, not only when they changed.
    always_owned: bool,
    rebalance_timeout_ms: i32,
    sent: Sent,
    in_flight: Option<u64>,
    next_hb: i64,
    /// It reconciled and must tell the coordinator at once.
    ack: bool,
    interval: i64,
    partitioned_until: i64,
}

impl Client {
    fn live(&self) -> bool {
        self.alive && !self.leaving
    }
}

// ---- the simulation ----

enum Ev {
    /// A client may be due to heartbeat.
    Wake(usize),
    Arrive(usize, u64, Heartbeat),
    Reply(usize, u64, Result<Reply, HeartbeatError>),
    Timeout(usize, u64),
    Reconciled(usize, u64),
    /// The coordinator's timer.
    Timer,
    Chaos,
    /// The coordinator comes back (elsewhere) and loads the group.
    Up,
    /// A static member's process comes back under a new member id.
    Restart(String),
    /// The faults stop.
    Calm,
}

/// The operation that wrote the last batch, while nothing has happened since (its write may
/// then be lost with the coordinator: no client saw its effect).
enum Last {
    Heartbeat(u64),
    Tick,
}

#[derive(Debug, Default)]
struct Stats {
    heartbeats: u64,
    /// Errors answered (fencing ones included).
    errors: u64,
    /// FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID received.
    fenced: u64,
    /// Members the coordinator removed for their session, or for not revoking in time.
    expired: u64,
    not_revoked: u64,
    /// Coordinator crashes, and those that lost the last write.
    crashes: u64,
    dropped: u64,
    /// Checks that found a client owning partitions its member no longer has (a zombie the
    /// coordinator will fence).
    zombies: u64,
    epoch: i32,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.heartbeats += o.heartbeats;
        self.errors += o.errors;
        self.fenced += o.fenced;
        self.expired += o.expired;
        self.not_revoked += o.not_revoked;
        self.crashes += o.crashes;
        self.dropped += o.dropped;
        self.zombies += o.zombies;
        self.epoch = self.epoch.max(o.epoch);
    }
}

struct Knobs {
    loss_pct: u64,
    long_delay_pct: u64,
    coordinator_crashes: bool,
    homogeneous: bool,
    static_pct: u64,
    fault_ms: i64,
    call_metadata_changed: bool,
}

struct Sim {
    seed: u64,
    trace: bool,
    rng: Rng,
    k: Knobs,
    now: i64,
    seq: u64,
    queue: BTreeMap<(i64, u64), Ev>,
    topics: Topics,
    settings: Settings,
    group: ConsumerGroup,
    /// The group its records rebuild, record by record.
    shadow: ConsumerGroup,
    up: bool,
    /// Whether the crash lost the last batch.
    lost_write: bool,
    written: Vec<Vec<Record>>,
    last: Option<Last>,
    /// Replies on their way.
    replies: BTreeSet<u64>,
    clients: Vec<Client>,
    next_req: u64,
    next_id: u64,
    epochs: BTreeMap<String, i32>,
    group_epochs: (i32, i32),
    faults: bool,
    group_sub: usize,
    group_assignor: Option<String>,
    /// The group changed (or may have) since the last check.
    group_changed: bool,
    /// The assignor of each target assignment, by assignment epoch.
    assignors: BTreeMap<i32, Assignor>,
    stats: Stats,
}

fn subset(a: &Partitions, b: &Partitions) -> bool {
    a.iter()
        .all(|(t, ps)| ps.is_empty() || b.get(t).is_some_and(|bs| ps.is_subset(bs)))
}

fn contains(p: &Partitions, t: &Uuid, n: i32) -> bool {
    p.get(t).is_some_and(|s| s.contains(&n))
}

fn count(p: &Partitions) -> usize {
    p.values().map(BTreeSet::len).sum()
}

fn without_empty(p: Option<&Partitions>) -> Partitions {
    p.map(|p| {
        p.iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(t, s)| (*t, s.clone()))
            .collect()
    })
    .unwrap_or_default()
}

/// Whether the coordinator will fence the client's next heartbeat (Kafka's epoch checks), so
/// the client is bound to learn it lost its partitions.
fn doomed(c: &Client, m: &Member) -> bool {
    let known = m.current.member_epoch;
    if known < 0 || c.epoch > known {
        return true;
    }
    c.epoch < known
        && (c.epoch != m.current.previous_member_epoch || !subset(&c.owned, &m.current.assigned))
}

/// The two groups hold the same state (what the records carry).
fn same_state(a: &ConsumerGroup, b: &ConsumerGroup, ids: &[&str], what: &str) {
    assert_eq!(a.group_epoch(), b.group_epoch(), "{what}: group epoch");
    assert_eq!(
        a.assignment_epoch(),
        b.assignment_epoch(),
        "{what}: assignment epoch"
    );
    let ma: Vec<&Member> = a.members().collect();
    let mb: Vec<&Member> = b.members().collect();
    assert_eq!(ma, mb, "{what}: members");
    // Targets of members and of every member id a client ever had (no target left behind).
    for id in ma
        .iter()
        .map(|m| m.member_id.as_str())
        .chain(ids.iter().copied())
    {
        assert_eq!(
            without_empty(a.target_of(id)),
            without_empty(b.target_of(id)),
            "{what}: target of {id}"
        );
    }
    assert_eq!(a.state(), b.state(), "{what}: state");
}

impl Sim {
    fn new(seed: u64, trace: bool) -> Sim {
        let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5a5a);
        let mut topics = Topics {
            topics: BTreeMap::new(),
            version: 1,
        };
        for (i, name) in NAMES.iter().enumerate() {
            if i == 0 || rng.chance(55) {
                topics.topics.insert(
                    name.to_string(),
                    TopicMeta {
                        id: Topics::id(name),
                        partitions: rng.between(1, 6) as i32,
                    },
                );
            }
        }
        let assignors = match rng.below(3) {
            0 => vec![Assignor::Uniform, Assignor::Range],
            1 => vec![Assignor::Range, Assignor::Uniform],
            _ => vec![Assignor::Uniform],
        };
        let group_assignor = match rng.below(4) {
            0 => Some(
                assignors[rng.below(assignors.len() as u64) as usize]
                    .name()
                    .to_string(),
            ),
            _ => None,
        };
        let k = Knobs {
            loss_pct: [0, 2, 5, 10, 20][rng.below(5) as usize],
            long_delay_pct: [0, 3, 10][rng.below(3) as usize],
            coordinator_crashes: rng.chance(70),
            homogeneous: rng.chance(70),
            static_pct: [0, 30, 70][rng.below(3) as usize],
            fault_ms: rng.between(8_000, 25_000),
            call_metadata_changed: rng.chance(50),
        };
        let settings = Settings {
            session_timeout_ms: SESSION_MS,
            heartbeat_interval_ms: INTERVAL_MS,
            max_size: 1_000,
            assignors,
            // KIP-1263's batching: Kafka's default (1 s), off, or shorter than a heartbeat.
            assignment_interval_ms: [0, 300, 1_000][rng.below(3) as usize],
            downgrade_max_size: None,
        };
        let group_sub = rng.below(SUBSCRIPTIONS as u64) as usize;
        let mut sim = Sim {
            seed,
            trace,
            rng,
            k,
            now: 0,
            seq: 0,
            queue: BTreeMap::new(),
            topics,
            settings,
            group: ConsumerGroup::new("g"),
            shadow: ConsumerGroup::new("g"),
            up: true,
            lost_write: false,
            written: Vec::new(),
            last: None,
            replies: BTreeSet::new(),
            clients: Vec::new(),
            next_req: 0,
            next_id: 0,
            epochs: BTreeMap::new(),
            group_epochs: (0, 0),
            faults: true,
            group_sub,
            group_assignor,
            group_changed: false,
            assignors: BTreeMap::new(),
            stats: Stats::default(),
        };
        for _ in 0..sim.rng.between(1, 4) {
            sim.new_client(None);
        }
        sim.push(0, Ev::Timer);
        let first = sim.rng.between(100, 1_000);
        sim.push(first, Ev::Chaos);
        sim.push(sim.k.fault_ms, Ev::Calm);
        sim
    }

    fn log(&self, f: impl FnOnce() -> String) {
        if self.trace {
            println!("{:>7} {}", self.now, f());
        }
    }

    fn push(&mut self, at: i64, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at.max(self.now), self.seq), ev);
    }

    fn delay(&mut self) -> i64 {
        if self.faults && self.rng.chance(self.k.long_delay_pct) {
            self.rng.between(150, 1_500)
        } else if self.faults {
            self.rng.between(0, 150)
        } else {
            self.rng.between(0, 60)
        }
    }

    fn lost(&mut self, c: usize) -> bool {
        self.faults
            && (self.now < self.clients[c].partitioned_until || self.rng.chance(self.k.loss_pct))
    }

    // ---- clients ----

    fn new_client(&mut self, instance: Option<String>) {
        self.next_id += 1;
        let n = self.next_id;
        let instance =
            instance.or_else(|| self.rng.chance(self.k.static_pct).then(|| format!("i{n}")));
        let member_id = match &instance {
            Some(i) => format!("{i}-{n}"),
            None => format!("m{n}"),
        };
        let sub = if self.k.homogeneous {
            subscription(self.group_sub)
        } else {
            subscription(self.rng.below(SUBSCRIPTIONS as u64) as usize)
        };
        let assignor = if self.k.homogeneous || self.rng.chance(50) {
            self.group_assignor.clone()
        } else {
            let names: Vec<&str> = self.settings.assignors.iter().map(|a| a.name()).collect();
            Some(names[self.rng.below(names.len() as u64) as usize].to_string())
        };
        let slow_ms = if self.rng.chance(30) {
            self.rng.between(50, 1_500)
        } else {
            0
        };
        let client = Client {
            member_id,
            instance_id: instance,
            rack: self.rng.chance(30).then(|| "r1".to_string()),
            alive: true,
            leaving: false,
            epoch: 0,
            owned: Partitions::new(),
            target: None,
            reconciling: false,
            reconcile_gen: 0,
            stuck: false,
            slow_ms,
            sub,
            assignor,
            had_regex: false,
            always_owned: self.rng.chance(30),
            rebalance_timeout_ms: self.rng.between(1_500, MAX_REBALANCE_MS as i64) as i32,
            sent: Sent::default(),
            in_flight: None,
            next_hb: self.now,
            ack: false,
            interval: INTERVAL_MS as i64,
            partitioned_until: 0,
        };
        self.log(|| format!("client {} starts", client.member_id));
        self.clients.push(client);
        let c = self.clients.len() - 1;
        self.push(self.now, Ev::Wake(c));
    }

    /// The heartbeat the client sends now, as the Java consumer builds it.
    fn build(&mut self, c: usize) -> Heartbeat {
        let cl = &mut self.clients[c];
        if cl.epoch == 0 {
            cl.sent = Sent::default();
        }
        let mut hb = Heartbeat {
            member_id: cl.member_id.clone(),
            member_epoch: cl.epoch,
            instance_id: cl.instance_id.clone(),
            rack_id: cl.rack.clone(),
            rebalance_timeout_ms: -1,
            subscribed_names: None,
            subscribed_regex: None,
            server_assignor: None,
            owned: None,
            client_id: "sim".into(),
            client_host: "/10.0.0.1".into(),
        };
        if !cl.sent.rebalance {
            hb.rebalance_timeout_ms = cl.rebalance_timeout_ms;
            cl.sent.rebalance = true;
        }
        if cl.sent.sub.as_ref() != Some(&cl.sub) {
            hb.subscribed_names = Some(cl.sub.names.clone());
            // An empty regex clears one the member had (or, joining, one the static member it
            // replaces had).
            cl.had_regex |= cl.sub.regex.is_some();
            if cl.had_regex || (cl.epoch == 0 && cl.instance_id.is_some()) {
                hb.subscribed_regex = Some(cl.sub.regex.clone().unwrap_or_default());
            }
            cl.sent.sub = Some(cl.sub.clone());
        }
        if let Some(a) = &cl.assignor {
            if cl.sent.assignor.as_ref() != Some(a) {
                hb.server_assignor = Some(a.clone());
                cl.sent.assignor = Some(a.clone());
            }
        }
        if cl.always_owned || cl.sent.owned.as_ref() != Some(&cl.owned) {
            hb.owned = Some(cl.owned.clone());
            cl.sent.owned = Some(cl.owned.clone());
        }
        hb
    }

    fn send(&mut self, c: usize, hb: Heartbeat) {
        self.next_req += 1;
        let req = self.next_req;
        self.stats.heartbeats += 1;
        let cl = &mut self.clients[c];
        cl.in_flight = Some(req);
        cl.ack = false;
        self.log(|| {
            format!(
                "{} sends #{req} epoch {} owned {:?}{}",
                hb.member_id,
                hb.member_epoch,
                hb.owned.as_ref().map(count),
                if hb.rebalance_timeout_ms != -1 {
                    " (full)"
                } else {
                    ""
                }
            )
        });
        self.push(self.now + REQUEST_TIMEOUT_MS, Ev::Timeout(c, req));
        if !self.lost(c) {
            // A request arrives before the client gives up on it: requests of one client are
            // handled in the order it sent them (one connection; Kafka's protocol assumes it
            // too: a stale heartbeat handled after a newer one could undo what the newer one
            // said).
            let d = self.delay().min(REQUEST_TIMEOUT_MS - 1);
            self.push(self.now + d, Ev::Arrive(c, req, hb));
        }
    }

    fn wake(&mut self, c: usize) {
        let cl = &self.clients[c];
        if !cl.live() || cl.in_flight.is_some() || self.now < cl.next_hb {
            return;
        }
        let hb = self.build(c);
        self.send(c, hb);
    }

    /// After a failed request the client sends everything again, after a backoff.
    fn retry(&mut self, c: usize, backoff: i64) {
        let cl = &mut self.clients[c];
        cl.sent = Sent::default();
        cl.next_hb = self.now + backoff;
        let at = cl.next_hb;
        self.push(at, Ev::Wake(c));
    }

    fn timeout(&mut self, c: usize, req: u64) {
        if !self.clients[c].alive || self.clients[c].in_flight != Some(req) {
            return;
        }
        self.log(|| format!("{} #{req} timed out", self.clients[c].member_id));
        self.clients[c].in_flight = None;
        if self.clients[c].leaving {
            self.clients[c].alive = false;
            return;
        }
        let backoff = self.rng.between(50, 400);
        self.retry(c, backoff);
    }

    fn reply(&mut self, c: usize, req: u64, result: Result<Reply, HeartbeatError>) {
        if !self.replies.remove(&req) {
            return;
        }
        if matches!(self.last, Some(Last::Heartbeat(r)) if r == req) {
            // A client saw it: the write cannot be lost any more.
            self.last = None;
        }
        if !self.clients[c].alive || self.clients[c].in_flight != Some(req) {
            return;
        }
        self.clients[c].in_flight = None;
        self.log(|| format!("{} #{req} answered {result:?}", self.clients[c].member_id));
        if self.clients[c].leaving {
            self.clients[c].alive = false;
            return;
        }
        match result {
            Ok(reply) => {
                let cl = &mut self.clients[c];
                assert_eq!(reply.member_id, cl.member_id);
                assert!(reply.member_epoch > 0, "{reply:?}");
                cl.epoch = reply.member_epoch;
                cl.interval = reply.heartbeat_interval_ms as i64;
                if let Some(a) = reply.assignment {
                    cl.target = Some(a);
                    self.reconcile(c);
                }
                let cl = &mut self.clients[c];
                cl.next_hb = if cl.ack {
                    self.now
                } else {
                    self.now + cl.interval
                };
                let at = cl.next_hb;
                self.push(at, Ev::Wake(c));
                // The client now knows its assignment as the coordinator has it.
                if self.up {
                    let cl = &self.clients[c];
                    if let Some(m) = self.group.member(&cl.member_id) {
                        let view = cl.target.as_ref().unwrap_or(&cl.owned);
                        assert_eq!(
                            without_empty(Some(view)),
                            without_empty(Some(&m.current.assigned)),
                            "{} does not know its assignment",
                            cl.member_id
                        );
                    }
                }
            }
            Err(HeartbeatError::FencedMemberEpoch(_) | HeartbeatError::UnknownMemberId(_)) => {
                self.stats.fenced += 1;
                // It loses everything at once and rejoins with epoch 0 (the same member id).
                let cl = &mut self.clients[c];
                cl.owned.clear();
                cl.target = None;
                cl.reconciling = false;
                cl.reconcile_gen += 1;
                cl.stuck = false;
                cl.epoch = 0;
                self.retry(c, 0);
            }
            Err(HeartbeatError::UnreleasedInstanceId(_)) => {
                // The previous process of the instance is still a member: try again later (the
                // Java consumer fails; whoever runs it starts it again).
                assert_eq!(self.clients[c].epoch, 0);
                self.stats.errors += 1;
                self.retry(c, 1_000);
            }
            Err(HeartbeatError::FencedInstanceId(_)) => {
                // Another process took the instance over: this one stops.
                self.stats.errors += 1;
                let cl = &mut self.clients[c];
                cl.owned.clear();
                cl.alive = false;
            }
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }

    /// Starts or goes on with reconciling towards the latest assignment: revoke first, then own.
    fn reconcile(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        if cl.reconciling {
            return;
        }
        let Some(target) = &cl.target else {
            return;
        };
        if *target == cl.owned {
            cl.target = None;
            return;
        }
        let revoking = !subset(&cl.owned, target);
        if revoking && (cl.stuck || cl.slow_ms > 0) {
            cl.reconciling = true;
            if !cl.stuck {
                let (at, gen) = (self.now + cl.slow_ms, cl.reconcile_gen);
                self.push(at, Ev::Reconciled(c, gen));
            }
            return;
        }
        self.finish_reconcile(c);
    }

    fn finish_reconcile(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        cl.reconciling = false;
        let Some(target) = cl.target.take() else {
            return;
        };
        cl.owned = target;
        cl.ack = true;
        if cl.in_flight.is_none() {
            cl.next_hb = self.now;
            self.push(self.now, Ev::Wake(c));
        }
        self.log(|| {
            format!(
                "{} owns {:?}",
                self.clients[c].member_id, self.clients[c].owned
            )
        });
    }

    fn reconciled(&mut self, c: usize, gen: u64) {
        let cl = &self.clients[c];
        if !cl.alive || cl.reconcile_gen != gen || !cl.reconciling {
            return;
        }
        self.finish_reconcile(c);
    }

    /// Closes a client: it revokes everything, then sends its leave heartbeat.
    fn close(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        cl.owned.clear();
        cl.target = None;
        cl.reconciling = false;
        cl.reconcile_gen += 1;
        cl.in_flight = None;
        if cl.epoch == 0 {
            cl.alive = false;
        } else {
            cl.leaving = true;
            let epoch = if cl.instance_id.is_some() {
                LEAVE_STATIC_EPOCH
            } else {
                LEAVE_EPOCH
            };
            let hb = Heartbeat {
                member_id: cl.member_id.clone(),
                member_epoch: epoch,
                instance_id: cl.instance_id.clone(),
                rebalance_timeout_ms: -1,
                client_id: "sim".into(),
                client_host: "/10.0.0.1".into(),
                ..Heartbeat::default()
            };
            self.send(c, hb);
        }
        if let Some(i) = self.clients[c].instance_id.clone() {
            let at = self.now + self.rng.between(100, MAX_RESTART_MS);
            self.push(at, Ev::Restart(i));
        }
    }

    fn crash_client(&mut self, c: usize) {
        self.log(|| format!("{} crashes", self.clients[c].member_id));
        let cl = &mut self.clients[c];
        cl.alive = false;
        cl.owned.clear();
        if let Some(i) = cl.instance_id.clone() {
            let at = self.now + self.rng.between(100, MAX_RESTART_MS);
            self.push(at, Ev::Restart(i));
        }
    }

    fn member_ids(&self) -> Vec<&str> {
        self.clients.iter().map(|c| c.member_id.as_str()).collect()
    }

    fn live_clients(&self) -> Vec<usize> {
        (0..self.clients.len())
            .filter(|&c| self.clients[c].live())
            .collect()
    }

    // ---- the coordinator ----

    fn write(&mut self, records: Vec<Record>, op: Last) {
        if records.is_empty() {
            self.last = None;
            return;
        }
        for r in &records {
            self.shadow.replay(r.clone());
        }
        self.log(|| format!("  writes {records:?}"));
        self.written.push(records);
        self.last = Some(op);
    }

    fn arrive(&mut self, c: usize, req: u64, hb: Heartbeat) {
        if !self.up {
            return;
        }
        let rejoin = (hb.member_epoch == 0).then(|| hb.member_id.clone());
        let leave = hb.member_epoch < 0;
        let member_id = hb.member_id.clone();
        self.group_changed = true;
        let result = self
            .group
            .heartbeat(hb, &self.topics, &self.settings, self.now);
        let result = match result {
            Ok((reply, records)) => {
                self.write(records, Last::Heartbeat(req));
                if !leave {
                    let m = self
                        .group
                        .member(&member_id)
                        .expect("a member after its heartbeat");
                    assert_eq!(reply.member_epoch, m.current.member_epoch);
                    if let Some(a) = &reply.assignment {
                        assert_eq!(*a, m.current.assigned);
                    }
                }
                Ok(reply)
            }
            Err(e) => {
                self.stats.errors += 1;
                self.last = None;
                Err(e)
            }
        };
        self.track_epochs(rejoin.as_deref());
        if self.lost(c) {
            return;
        }
        let d = self.delay();
        self.replies.insert(req);
        self.push(self.now + d, Ev::Reply(c, req, result));
    }

    /// The coordinator's timer: fires due deadlines (and now and then finds none due).
    fn timer(&mut self) -> bool {
        let mut ticked = false;
        if self.up {
            let due = self.group.next_deadline().is_some_and(|d| d <= self.now);
            if due || self.rng.chance(5) {
                self.group_changed = true;
                let (records, fenced) = self.group.tick(&self.topics, &self.settings, self.now);
                if fenced.is_empty() {
                    assert!(
                        records.is_empty(),
                        "a tick without fencing wrote {records:?}"
                    );
                }
                for (m, why) in &fenced {
                    self.log(|| format!("coordinator fences {m}: {why}"));
                    if why.contains("session") {
                        self.stats.expired += 1;
                    } else {
                        self.stats.not_revoked += 1;
                    }
                }
                self.write(records, Last::Tick);
                self.track_epochs(None);
                ticked = true;
            }
        }
        let at = self.now + self.rng.between(20, 200);
        self.push(at, Ev::Timer);
        ticked
    }

    fn crash_coordinator(&mut self) {
        self.stats.crashes += 1;
        self.up = false;
        self.lost_write = false;
        if let Some(last) = self.last.take() {
            if self.rng.chance(50) {
                // The last write did not reach the other replicas: it never happened.
                self.stats.dropped += 1;
                self.lost_write = true;
                let batch = self.written.pop();
                self.log(|| format!("coordinator crashes, losing {batch:?}"));
                if let Last::Heartbeat(req) = last {
                    self.replies.remove(&req);
                }
            }
        }
        self.log(|| "coordinator crashes".to_string());
        // Replies of the old coordinator may still come, or go with its connections.
        let on_the_way: Vec<u64> = self.replies.iter().copied().collect();
        for r in on_the_way {
            if self.rng.chance(40) {
                self.replies.remove(&r);
            }
        }
        let at = self.now + self.rng.between(0, MAX_DOWNTIME_MS);
        self.push(at, Ev::Up);
    }

    fn rebuild(&self) -> ConsumerGroup {
        let mut g = ConsumerGroup::new("g");
        for r in self.written.iter().flatten() {
            g.replay(r.clone());
        }
        g
    }

    fn coordinator_up(&mut self) {
        let mut g = self.rebuild();
        g.loaded(&self.topics, self.settings.session_timeout_ms, self.now);
        g.check_invariants();
        if !self.lost_write {
            same_state(&self.group, &g, &self.member_ids(), "reloaded group");
        }
        self.log(|| {
            format!(
                "coordinator loads the group at epoch {} ({} members)",
                g.group_epoch(),
                g.members().count()
            )
        });
        self.group = g;
        self.shadow = self.rebuild();
        self.group_changed = true;
        self.up = true;
        self.last = None;
        self.epochs = self
            .group
            .members()
            .map(|m| (m.member_id.clone(), m.current.member_epoch))
            .collect();
        self.group_epochs = (self.group.group_epoch(), self.group.assignment_epoch());
    }

    /// Member epochs never go backwards (but for a static member leaving to come back, and a
    /// member rejoining); nor do the group's.
    fn track_epochs(&mut self, rejoin: Option<&str>) {
        let g = &self.group;
        assert!(
            g.group_epoch() >= self.group_epochs.0,
            "group epoch went back"
        );
        assert!(
            g.assignment_epoch() >= self.group_epochs.1,
            "assignment epoch went back"
        );
        if g.assignment_epoch() != self.group_epochs.1 {
            // The members of a heartbeat that computes a target are those the assignor saw.
            self.assignors
                .insert(g.assignment_epoch(), g.assignor(&self.settings));
        }
        self.group_epochs = (g.group_epoch(), g.assignment_epoch());
        let mut epochs = BTreeMap::new();
        for m in g.members() {
            let e = m.current.member_epoch;
            if let Some(&before) = self.epochs.get(&m.member_id) {
                assert!(
                    e >= before || e == LEAVE_STATIC_EPOCH || rejoin == Some(&m.member_id),
                    "member {} went from epoch {before} to {e}",
                    m.member_id
                );
            }
            epochs.insert(m.member_id.clone(), e);
        }
        self.epochs = epochs;
    }

    // ---- faults ----

    fn chaos(&mut self) {
        if !self.faults {
            return;
        }
        let live = self.live_clients();
        let pick = |rng: &mut Rng| -> Option<usize> {
            (!live.is_empty()).then(|| live[rng.below(live.len() as u64) as usize])
        };
        match self.rng.below(100) {
            0..=9 if live.len() < MAX_CLIENTS => self.new_client(None),
            10..=16 => {
                if let Some(c) = pick(&mut self.rng) {
                    self.log(|| format!("{} closes", self.clients[c].member_id));
                    self.close(c);
                }
            }
            17..=22 => {
                if let Some(c) = pick(&mut self.rng) {
                    self.crash_client(c);
                }
            }
            23..=32 => {
                if let Some(c) = pick(&mut self.rng) {
                    let d = self.rng.between(300, 2 * SESSION_MS as i64);
                    self.log(|| format!("{} cut off for {d} ms", self.clients[c].member_id));
                    self.clients[c].partitioned_until = self.now + d;
                }
            }
            33..=42 => {
                if self.k.homogeneous {
                    self.group_sub = self.rng.below(SUBSCRIPTIONS as u64) as usize;
                    for &c in &live {
                        self.clients[c].sub = subscription(self.group_sub);
                    }
                } else if let Some(c) = pick(&mut self.rng) {
                    self.clients[c].sub =
                        subscription(self.rng.below(SUBSCRIPTIONS as u64) as usize);
                }
            }
            43..=54 => self.change_topics(),
            55..=61 if self.up && self.k.coordinator_crashes => self.crash_coordinator(),
            62..=65 => {
                if let Some(c) = pick(&mut self.rng) {
                    self.log(|| {
                        format!(
                            "{} will hang in its next revocation",
                            self.clients[c].member_id
                        )
                    });
                    self.clients[c].stuck = true;
                }
            }
            66..=72 => {
                if let Some(c) = pick(&mut self.rng) {
                    self.clients[c].slow_ms = match self.rng.below(3) {
                        0 => 0,
                        1 => self.rng.between(50, 1_000),
                        // Slower than its rebalance timeout: fenced for it.
                        _ => self.rng.between(1_000, 6_000),
                    };
                }
            }
            _ => {}
        }
        let at = self.now + self.rng.between(100, 1_200);
        self.push(at, Ev::Chaos);
    }

    fn change_topics(&mut self) {
        let name = NAMES[self.rng.below(NAMES.len() as u64) as usize];
        let grow = self.rng.between(1, 3) as i32;
        let t = self
            .topics
            .topics
            .entry(name.to_string())
            .or_insert(TopicMeta {
                id: Topics::id(name),
                partitions: 0,
            });
        if t.partitions + grow > 12 {
            return;
        }
        t.partitions += grow;
        self.topics.version += 1;
        self.log(|| {
            format!(
                "topic {name} has {} partitions",
                self.topics.topics[name].partitions
            )
        });
        if self.up && self.k.call_metadata_changed && self.rng.chance(50) {
            self.group_changed = true;
            let records = self.group.metadata_changed(&self.topics);
            self.write(records, Last::Tick);
            self.track_epochs(None);
        }
    }

    fn calm(&mut self) {
        self.log(|| "the faults stop".to_string());
        self.faults = false;
        for cl in &mut self.clients {
            cl.partitioned_until = 0;
            cl.slow_ms = cl.slow_ms.min(cl.rebalance_timeout_ms as i64 / 3);
        }
        while self.live_clients().len() < 2 {
            self.new_client(None);
        }
    }

    // ---- checks ----

    fn check(&mut self) {
        if !self.up {
            return;
        }
        if std::mem::take(&mut self.group_changed) {
            // (Debug builds check the group's invariants after every change already.)
            if !cfg!(debug_assertions) {
                self.group.check_invariants();
            }
            same_state(
                &self.group,
                &self.shadow,
                &self.member_ids(),
                "group and its records",
            );
        }
        // Safety: what a client the coordinator still accepts owns is its member's.
        let mut holders: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
        for cl in self.clients.iter().filter(|c| c.alive) {
            if cl.owned.is_empty() {
                continue;
            }
            let Some(m) = self.group.member(&cl.member_id) else {
                self.stats.zombies += 1;
                continue;
            };
            if doomed(cl, m) {
                self.stats.zombies += 1;
                continue;
            }
            for (t, ps) in &cl.owned {
                for &p in ps {
                    assert!(
                        contains(&m.current.assigned, t, p)
                            || contains(&m.current.pending_revocation, t, p),
                        "{} (epoch {}) owns {t}-{p}, which the coordinator does not give it: {:?}",
                        cl.member_id,
                        cl.epoch,
                        m.current
                    );
                    if let Some(other) = holders.insert((*t, p), &cl.member_id) {
                        panic!("{other} and {} both own {t}-{p}", cl.member_id);
                    }
                }
            }
        }
    }

    fn dump(&self) {
        if !self.trace {
            return;
        }
        println!(
            "group epoch {} assignment epoch {} state {:?} next deadline {:?} assignor {:?} of {:?}",
            self.group.group_epoch(),
            self.group.assignment_epoch(),
            self.group.state(),
            self.group.next_deadline(),
            self.group.assignor(&self.settings),
            self.settings.assignors
        );
        for m in self.group.members() {
            println!(
                "  member {}: {:?} target {:?}",
                m.member_id,
                m.current,
                self.group.target_of(&m.member_id)
            );
        }
        for c in &self.clients {
            println!("  client {c:?}");
        }
    }

    /// Once the faults have stopped long enough: the group is settled and balanced.
    fn check_settled(&self) {
        self.dump();
        assert!(self.up, "the coordinator is down");
        let g = &self.group;
        let live = self.live_clients();
        let ids: BTreeSet<&str> = live
            .iter()
            .map(|&c| self.clients[c].member_id.as_str())
            .collect();
        let members: BTreeSet<&str> = g.members().map(|m| m.member_id.as_str()).collect();
        assert_eq!(ids, members, "the members are the live clients");
        if live.is_empty() {
            assert_eq!(g.state(), State::Empty);
            return;
        }
        assert_eq!(g.state(), State::Stable, "the group is stable");
        assert_eq!(g.group_epoch(), g.assignment_epoch());
        let mut owners: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
        let mut expected = BTreeSet::new();
        for &c in &live {
            let cl = &self.clients[c];
            let m = g.member(&cl.member_id).unwrap();
            assert_eq!(cl.epoch, g.assignment_epoch(), "{} epoch", cl.member_id);
            assert_eq!(m.current.state, MemberState::Stable);
            assert!(m.current.pending_revocation.is_empty());
            assert!(
                cl.target.is_none() && !cl.reconciling,
                "{} reconciles",
                cl.member_id
            );
            assert_eq!(
                without_empty(Some(&cl.owned)),
                without_empty(g.target_of(&cl.member_id)),
                "{} owns its target",
                cl.member_id
            );
            assert_eq!(cl.owned, m.current.assigned);
            let mine = self.topics.partitions_of(&cl.sub);
            for (t, ps) in &mine {
                expected.extend(ps.iter().map(|p| (*t, *p)));
            }
            for (t, ps) in &cl.owned {
                for &p in ps {
                    assert!(
                        contains(&mine, t, p),
                        "{} owns {t}-{p} it does not subscribe to",
                        cl.member_id
                    );
                    if let Some(o) = owners.insert((*t, p), &cl.member_id) {
                        panic!("{o} and {} both own {t}-{p}", cl.member_id);
                    }
                }
            }
        }
        let owned: BTreeSet<(Uuid, i32)> = owners.keys().copied().collect();
        assert_eq!(owned, expected, "every subscribed partition has one owner");
        // Balance.
        // The assignor of the last target (which the one the members prefer now may not be:
        // as on Kafka, a change of preference alone computes no new target).
        match self.assignors.get(&g.assignment_epoch()) {
            None => {}
            Some(Assignor::Uniform) => {
                let subs: BTreeSet<Vec<Uuid>> = live
                    .iter()
                    .map(|&c| {
                        self.topics
                            .partitions_of(&self.clients[c].sub)
                            .into_keys()
                            .collect()
                    })
                    .collect();
                if subs.len() == 1 {
                    let counts: Vec<usize> = live
                        .iter()
                        .map(|&c| count(&self.clients[c].owned))
                        .collect();
                    let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                    assert!(hi - lo <= 1, "uniform is unbalanced: {counts:?}");
                }
            }
            Some(Assignor::Range) => {
                for (t, _) in self.topics.topics.values().map(|t| (t.id, ())) {
                    let counts: Vec<usize> = live
                        .iter()
                        .filter(|&&c| {
                            self.topics
                                .partitions_of(&self.clients[c].sub)
                                .contains_key(&t)
                        })
                        .map(|&c| self.clients[c].owned.get(&t).map_or(0, BTreeSet::len))
                        .collect();
                    if let (Some(lo), Some(hi)) = (counts.iter().min(), counts.iter().max()) {
                        assert!(hi - lo <= 1, "range is unbalanced on {t}: {counts:?}");
                    }
                }
            }
        }
    }

    /// Runs one event; true when it may have changed what the checks look at.
    fn step(&mut self, ev: Ev) -> bool {
        match ev {
            Ev::Wake(c) => {
                self.wake(c);
                false
            }
            Ev::Arrive(c, req, hb) => {
                self.arrive(c, req, hb);
                true
            }
            Ev::Reply(c, req, r) => {
                self.reply(c, req, r);
                true
            }
            Ev::Timeout(c, req) => {
                self.timeout(c, req);
                false
            }
            Ev::Reconciled(c, gen) => {
                self.reconciled(c, gen);
                true
            }
            Ev::Timer => self.timer(),
            Ev::Chaos => {
                self.chaos();
                true
            }
            Ev::Up => {
                self.coordinator_up();
                true
            }
            Ev::Restart(i) => {
                self.log(|| format!("instance {i} restarts"));
                self.new_client(Some(i));
                false
            }
            Ev::Calm => {
                self.calm();
                true
            }
        }
    }

    fn run_until(&mut self, end: i64) {
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > end {
                break;
            }
            let ((at, _), ev) = entry.remove_entry();
            self.now = at;
            if self.step(ev) {
                self.check();
            }
        }
        self.now = end;
    }
}

fn run_one(seed: u64, trace: bool) -> Stats {
    let mut sim = Sim::new(seed, trace);
    sim.log(|| format!("seed {}", sim.seed));
    let calm = sim.k.fault_ms;
    sim.run_until(calm + QUIET_MS);
    sim.check_settled();
    // Settled stays settled, even when the coordinator moves (its writes all kept): no epoch
    // moves without a cause.
    let epoch = sim.group.group_epoch();
    sim.last = None;
    sim.crash_coordinator();
    sim.run_until(calm + QUIET_MS + MAX_DOWNTIME_MS + 6 * INTERVAL_MS as i64);
    sim.check_settled();
    assert_eq!(
        sim.group.group_epoch(),
        epoch,
        "the epoch moved in a settled group"
    );
    sim.stats.epoch = epoch;
    sim.stats
}

#[test]
fn consumer_group_simulation() {
    if let Ok(seed) = std::env::var("SAMSA_SIM_SEED") {
        let seed: u64 = seed.parse().expect("SAMSA_SIM_SEED is a number");
        let stats = run_one(seed, true);
        println!("seed {seed}: {stats:?}");
        return;
    }
    let seeds: u64 = std::env::var("SAMSA_SIM_SEEDS")
        .ok()
        .map_or(200, |s| s.parse().expect("SAMSA_SIM_SEEDS is a number"));
    let mut total = Stats::default();
    for seed in 0..seeds {
        let Ok(stats) = std::panic::catch_unwind(|| run_one(seed, false)) else {
            panic!("seed {seed} failed: rerun it with SAMSA_SIM_SEED={seed}");
        };
        total.add(&stats);
    }
    println!("{seeds} seeds: {total:?}");
}
