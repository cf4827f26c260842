//! Deterministic simulation of a streams group, seed by seed: Kafka Streams instances (processes
//! of one or two threads, each a member) join, heartbeat, leave, crash (stop heartbeating and
//! are fenced at their session timeout) and come back; answers are lost (the client heartbeats
//! again with its old epoch); the coordinator moves (a new group is rebuilt from the records
//! written so far, as a load does, and must equal the old one); topics gain partitions;
//! standby replicas and the assignment's timing settings vary per seed. The group checks its
//! invariants after every change; the simulation checks, after every step, that no task runs
//! active in two live clients at once (revoke before assign, as clients see it), and at the end,
//! with the faults stopped, that the group converges: Stable, every task active on exactly one
//! member, standbys only of stateful tasks and never where the task is active, every client
//! running exactly what the group says.
//!
//! `SAMSA_SIM_SEEDS=5000 cargo test -p samsa-streams-group sim_tests` runs more seeds;
//! `SAMSA_SIM_SEED=17` runs one and prints its trace.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::{Heartbeat, HeartbeatError, Record, Settings, State, StreamsGroup, LEAVE_EPOCH};
use crate::{assignor, Subtopology, Tasks, TopicInfo, TopicView, Topology};

/// xorshift64*: deterministic per seed, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

struct Topics(BTreeMap<String, i32>);

impl TopicView for Topics {
    fn partitions(&self, name: &str) -> Option<i32> {
        self.0.get(name).copied()
    }
    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// Two subtopologies: a stateless one reading `in`, writing a repartition topic; a stateful
/// one reading it, with a changelog.
fn topology() -> Topology {
    Topology {
        epoch: 0,
        subtopologies: vec![
            Subtopology {
                id: "0".into(),
                source_topics: vec!["in".into()],
                repartition_sink_topics: vec!["app-rep".into()],
                ..Default::default()
            },
            Subtopology {
                id: "1".into(),
                repartition_source_topics: vec![TopicInfo {
                    name: "app-rep".into(),
                    ..Default::default()
                }],
                state_changelog_topics: vec![TopicInfo {
                    name: "app-store-changelog".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
    }
}

/// A member as its client keeps it.
#[derive(Debug, Clone)]
struct Client {
    member_id: String,
    process: String,
    epoch: i32,
    /// What the thread runs.
    owned: Tasks,
    alive: bool,
    joined: bool,
}

#[derive(Debug, Default)]
struct Stats {
    heartbeats: u64,
    fenced: u64,
    lost: u64,
    moves: u64,
    crashes: u64,
}

fn actives(c: &Client) -> BTreeSet<(String, i32)> {
    c.owned
        .active
        .iter()
        .flat_map(|(s, p)| p.iter().map(move |p| (s.clone(), *p)))
        .collect()
}

struct Sim {
    rng: Rng,
    group: StreamsGroup,
    log: Vec<Record>,
    topics: Topics,
    settings: Settings,
    clients: Vec<Client>,
    now: i64,
    trace: bool,
    stats: Stats,
}

impl Sim {
    fn heartbeat(&mut self, i: usize, lose: bool) {
        let c = self.clients[i].clone();
        let hb = Heartbeat {
            member_id: c.member_id.clone(),
            member_epoch: if c.joined { c.epoch } else { 0 },
            rebalance_timeout_ms: if c.joined { -1 } else { 30_000 },
            topology: (!c.joined).then(topology),
            owned: Some(c.owned.clone()),
            process_id: (!c.joined).then(|| c.process.clone()),
            client_id: "sim".into(),
            client_host: "/127.0.0.1".into(),
            ..Default::default()
        };
        self.stats.heartbeats += 1;
        match self
            .group
            .heartbeat(hb, &self.topics, &self.settings, self.now)
        {
            Ok((reply, records)) => {
                self.log.extend(records);
                if lose {
                    self.stats.lost += 1;
                    return;
                }
                let c = &mut self.clients[i];
                c.joined = true;
                c.epoch = reply.member_epoch;
                if let Some(t) = reply.tasks {
                    c.owned = t;
                }
                if self.trace {
                    println!(
                        "{} {} epoch {} owns {:?}",
                        self.now, c.member_id, c.epoch, c.owned.active
                    );
                }
            }
            Err(HeartbeatError::FencedMemberEpoch(_)) | Err(HeartbeatError::UnknownMemberId(_)) => {
                // The client drops its tasks and joins again.
                self.stats.fenced += 1;
                let c = &mut self.clients[i];
                c.joined = false;
                c.epoch = 0;
                c.owned = Tasks::default();
                if self.trace {
                    println!("{} {} fenced, rejoins", self.now, c.member_id);
                }
            }
            Err(e) => panic!("unexpected heartbeat error: {e:?}"),
        }
    }

    fn tick(&mut self) {
        let records = self.group.tick(&self.settings, self.now);
        self.log.extend(records);
    }

    /// The coordinator moves: a new group from the records, which must be the same group.
    fn move_coordinator(&mut self) {
        self.stats.moves += 1;
        let mut copy = StreamsGroup::new("app");
        for r in self.log.iter().cloned() {
            copy.replay(r);
        }
        copy.loaded(&self.topics, &self.settings, self.now);
        assert_eq!(copy.group_epoch(), self.group.group_epoch());
        assert_eq!(copy.assignment_epoch(), self.group.assignment_epoch());
        assert_eq!(copy.topology(), self.group.topology());
        for m in self.group.members() {
            assert_eq!(copy.member(&m.member_id), Some(m), "member {}", m.member_id);
            assert_eq!(
                copy.target_of(&m.member_id),
                self.group.target_of(&m.member_id)
            );
        }
        assert_eq!(copy.members().count(), self.group.members().count());
        self.group = copy;
    }

    /// No task is active in two live clients the group counts as members at once (a client
    /// the group fenced runs on until its next heartbeat tells it, as a real one does; the
    /// transactions of exactly-once fence it).
    fn check_clients(&self) {
        let mut seen = BTreeSet::new();
        for c in self
            .clients
            .iter()
            .filter(|c| c.alive && c.joined && self.group.member(&c.member_id).is_some())
        {
            for t in actives(c) {
                assert!(
                    seen.insert(t.clone()),
                    "task {t:?} active in two clients at {}",
                    self.now
                );
            }
        }
    }
}

fn run_one(seed: u64, trace: bool) -> Stats {
    let mut rng = Rng::new(seed);
    let settings = Settings {
        initial_rebalance_delay_ms: [0, 3_000][rng.below(2) as usize],
        assignment_interval_ms: [0, 1_000][rng.below(2) as usize],
        session_timeout_ms: 45_000,
        assignment: assignor::AssignmentConfigs {
            num_standby_replicas: rng.below(3) as i32,
            ..Default::default()
        },
        ..Settings::default()
    };
    let partitions = 1 + rng.below(6) as i32;
    let mut topics = Topics(BTreeMap::new());
    topics.0.insert("in".into(), partitions);
    // The internal topics exist (the broker creates them on the first heartbeat's answer).
    topics.0.insert("app-rep".into(), partitions);
    topics.0.insert("app-store-changelog".into(), partitions);
    let processes = 1 + rng.below(4);
    let mut clients = Vec::new();
    for p in 0..processes {
        for t in 0..1 + rng.below(2) {
            clients.push(Client {
                member_id: format!("p{p}-t{t}"),
                process: format!("p{p}"),
                epoch: 0,
                owned: Tasks::default(),
                alive: true,
                joined: false,
            });
        }
    }
    let mut sim = Sim {
        rng,
        group: StreamsGroup::new("app"),
        log: Vec::new(),
        topics,
        settings,
        clients,
        now: 1_000,
        trace,
        stats: Stats::default(),
    };
    // Faults for a while.
    for _ in 0..300 {
        sim.now += 100 + sim.rng.below(900) as i64;
        let i = sim.rng.below(sim.clients.len() as u64) as usize;
        match sim.rng.below(100) {
            0..=2 if sim.clients[i].alive && sim.clients[i].joined => {
                // Leaves for good, then comes back as a new member of its process later.
                let c = sim.clients[i].clone();
                let hb = Heartbeat {
                    member_id: c.member_id.clone(),
                    member_epoch: LEAVE_EPOCH,
                    owned: Some(Tasks::default()),
                    ..Default::default()
                };
                if let Ok((_, records)) =
                    sim.group.heartbeat(hb, &sim.topics, &sim.settings, sim.now)
                {
                    sim.log.extend(records);
                }
                let c = &mut sim.clients[i];
                c.member_id = format!("{}'", c.member_id);
                c.joined = false;
                c.epoch = 0;
                c.owned = Tasks::default();
            }
            3..=4 if sim.clients[i].alive => {
                sim.stats.crashes += 1;
                sim.clients[i].alive = false;
            }
            5..=7 if !sim.clients[i].alive => {
                // A restart: a new member id, nothing owned.
                let c = &mut sim.clients[i];
                c.alive = true;
                c.joined = false;
                c.epoch = 0;
                c.owned = Tasks::default();
                c.member_id = format!("{}+", c.member_id);
            }
            8 => sim.move_coordinator(),
            9 if sim.rng.chance(20) => {
                // The input topic gains partitions (and the internal ones follow).
                let n = sim.topics.0["in"] + 1;
                for t in ["in", "app-rep", "app-store-changelog"] {
                    sim.topics.0.insert(t.into(), n);
                }
            }
            _ if sim.clients[i].alive => {
                let lose = sim.rng.chance(5);
                sim.heartbeat(i, lose);
            }
            _ => {}
        }
        sim.tick();
        sim.check_clients();
    }
    // Calm: every client alive, heartbeating every second, until the group is stable.
    for c in &mut sim.clients {
        if !c.alive {
            c.alive = true;
            c.joined = false;
            c.epoch = 0;
            c.owned = Tasks::default();
            c.member_id = format!("{}+", c.member_id);
        }
    }
    let mut rounds = 0;
    loop {
        sim.now += 1_000;
        for i in 0..sim.clients.len() {
            sim.heartbeat(i, false);
            sim.check_clients();
        }
        sim.tick();
        let converged = sim.group.state() == State::Stable
            && sim.clients.iter().all(|c| {
                sim.group
                    .member(&c.member_id)
                    .is_some_and(|m| m.current.assigned.tasks() == c.owned)
            });
        if converged {
            break;
        }
        rounds += 1;
        if rounds >= 200 {
            for c in &sim.clients {
                println!(
                    "client {} owns {:?}; group: {:?}",
                    c.member_id,
                    c.owned,
                    sim.group.member(&c.member_id).map(|m| &m.current)
                );
            }
            panic!("seed {seed}: no convergence; state {:?}", sim.group.state());
        }
    }
    // Every task active exactly once; standbys of the stateful subtopology only, never on
    // the process running the task active.
    let n = sim.topics.0["in"];
    let mut active = BTreeMap::new();
    for c in &sim.clients {
        for t in actives(c) {
            assert!(active.insert(t, c.process.clone()).is_none());
        }
    }
    assert_eq!(
        active.len(),
        2 * n as usize,
        "seed {seed}: every task active once"
    );
    for c in &sim.clients {
        assert!(
            !c.owned.standby.contains_key("0"),
            "a stateless task has no standby"
        );
        for (s, ps) in &c.owned.standby {
            for p in ps {
                assert_ne!(active.get(&(s.clone(), *p)), Some(&c.process));
            }
        }
    }
    assert_eq!(sim.group.members().count(), sim.clients.len());
    sim.stats
}

#[test]
fn streams_groups_converge_through_crashes_lost_answers_and_coordinator_moves() {
    if let Ok(seed) = std::env::var("SAMSA_SIM_SEED") {
        let stats = run_one(seed.parse().expect("SAMSA_SIM_SEED is a number"), true);
        println!("{stats:?}");
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
        total.heartbeats += stats.heartbeats;
        total.fenced += stats.fenced;
        total.lost += stats.lost;
        total.moves += stats.moves;
        total.crashes += stats.crashes;
    }
    println!("{seeds} seeds: {total:?}");
}
