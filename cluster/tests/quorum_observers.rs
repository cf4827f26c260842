//! Observers of the KRaft quorum that know only `controller.quorum.bootstrap.servers`
//! (KIP-853): they probe a bootstrap server with Fetch, learn the leader from its answer, and
//! follow the leader like an observer configured with the voters. Three voters and one
//! observer over an instant, lossless network; the network maps the bootstrap ids (-2, -3, as
//! Kafka numbers them) to the voters they stand for, as the broker's driver maps them to
//! addresses, and the answer to a request sent to a bootstrap id comes back from that id.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use samsa_cluster::quorum::{Action, Durable, Message, Quorum, QuorumConfig, Record, Role};

const OBSERVER: i32 = 10;

struct Net {
    now: u64,
    nodes: BTreeMap<i32, Quorum>,
    /// Bootstrap id -> the voter behind that address.
    bootstrap: BTreeMap<i32, i32>,
    /// (to, from as the receiver sees it, message).
    queue: VecDeque<(i32, i32, Message)>,
    /// Requests the observer sent to a bootstrap id, by quorum id: their answers come back
    /// from that id.
    sent_to_bootstrap: BTreeMap<u64, i32>,
    /// Who the observer fetched from, in order.
    observer_fetched_from: Vec<i32>,
}

fn id_of(m: &Message) -> u64 {
    match m {
        Message::Fetch(r) => r.id,
        Message::FetchResponse(r) => r.id,
        Message::FetchSnapshot(r) => r.id,
        Message::FetchSnapshotResponse(r) => r.id,
        _ => 0,
    }
}

impl Net {
    fn new(bootstrap_to: &[i32]) -> Net {
        let voters = [1, 2, 3];
        let mut nodes = BTreeMap::new();
        for (i, v) in voters.iter().enumerate() {
            let cfg = QuorumConfig::new(*v, voters);
            nodes.insert(*v, Quorum::new(cfg, Durable::default(), 0, 7 + i as u64));
        }
        let bootstrap: BTreeMap<i32, i32> = bootstrap_to
            .iter()
            .enumerate()
            .map(|(i, v)| (-2 - i as i32, *v))
            .collect();
        let mut cfg = QuorumConfig::new(OBSERVER, []);
        cfg.bootstrap = bootstrap.keys().copied().collect();
        nodes.insert(OBSERVER, Quorum::new(cfg, Durable::default(), 0, 99));
        Net {
            now: 0,
            nodes,
            bootstrap,
            queue: VecDeque::new(),
            sent_to_bootstrap: BTreeMap::new(),
            observer_fetched_from: Vec::new(),
        }
    }

    /// Delivers every message until none is left; what goes to a crashed node (or a
    /// bootstrap id that no longer stands for a node) is lost.
    fn drain(&mut self) {
        loop {
            let mut progress = false;
            let ids: Vec<i32> = self.nodes.keys().copied().collect();
            for id in ids {
                while let Some(action) = self.nodes.get_mut(&id).unwrap().poll_action() {
                    progress = true;
                    match action {
                        Action::Send { to, message } => self.send(id, to, message),
                        Action::Flush { end_offset } => {
                            let now = self.now;
                            self.nodes.get_mut(&id).unwrap().flushed(now, end_offset);
                        }
                        _ => {}
                    }
                }
            }
            while let Some((to, from, message)) = self.queue.pop_front() {
                progress = true;
                let now = self.now;
                if let Some(q) = self.nodes.get_mut(&to) {
                    q.receive(now, from, message);
                }
            }
            if !progress {
                return;
            }
        }
    }

    fn send(&mut self, from: i32, to: i32, message: Message) {
        let target = if from == OBSERVER {
            self.observer_fetched_from.push(to);
            if to < 0 {
                let Some(&voter) = self.bootstrap.get(&to) else {
                    return;
                };
                self.sent_to_bootstrap.insert(id_of(&message), to);
                voter
            } else {
                to
            }
        } else {
            to
        };
        let seen_from = if target == OBSERVER {
            self.sent_to_bootstrap
                .remove(&id_of(&message))
                .unwrap_or(from)
        } else {
            from
        };
        self.queue.push_back((target, seen_from, message));
    }

    fn run_for(&mut self, ms: u64) {
        let end = self.now + ms;
        while self.now < end {
            self.now += 5;
            let now = self.now;
            for q in self.nodes.values_mut() {
                if q.next_deadline() <= now {
                    q.tick(now);
                }
            }
            self.drain();
        }
    }

    /// SIGKILL: the node and every bootstrap id naming it stop answering.
    fn crash(&mut self, id: i32) {
        self.nodes.remove(&id);
        self.bootstrap.retain(|_, v| *v != id);
    }

    fn leader(&self) -> Option<i32> {
        self.nodes
            .iter()
            .find(|(_, q)| q.role() == Role::Leader)
            .map(|(id, _)| *id)
    }
}

fn propose(net: &mut Net, value: &'static str) {
    let leader = net.leader().expect("a leader");
    let now = net.now;
    net.nodes
        .get_mut(&leader)
        .unwrap()
        .propose(
            now,
            vec![Record::value(Bytes::from_static(value.as_bytes()))],
        )
        .unwrap();
    net.drain();
}

#[test]
fn an_observer_with_bootstrap_servers_follows_a_new_leader_after_the_old_one_dies() {
    let mut net = Net::new(&[1, 2, 3]);
    net.run_for(10_000);
    let leader = net.leader().expect("three voters elect a leader");
    propose(&mut net, "one");
    net.run_for(2_000);
    let observer = &net.nodes[&OBSERVER];
    assert_eq!(observer.role(), Role::Follower);
    assert_eq!(observer.leader_id(), Some(leader));
    assert!(!observer.is_voter());
    let leader_hw = net.nodes[&leader].high_watermark();
    assert_eq!(observer.high_watermark(), leader_hw);
    assert!(
        net.observer_fetched_from.contains(&leader),
        "fetched from {:?}",
        net.observer_fetched_from
    );
    // The leader lists it among its observers.
    let d = net.nodes[&leader].describe();
    assert!(d.observers.iter().any(|o| o.node_id == OBSERVER), "{d:?}");
    assert!(d.voters.iter().all(|v| v.node_id != OBSERVER));

    // The leader goes: the observer times out, probes the bootstrap servers again and follows
    // whoever leads next.
    net.crash(leader);
    net.run_for(15_000);
    let new_leader = net.leader().expect("two voters elect a new leader");
    assert_ne!(new_leader, leader);
    propose(&mut net, "two");
    net.run_for(3_000);
    let observer = &net.nodes[&OBSERVER];
    assert_eq!(observer.leader_id(), Some(new_leader));
    assert_eq!(
        observer.high_watermark(),
        net.nodes[&new_leader].high_watermark()
    );
}

#[test]
fn an_observer_finds_and_follows_the_leader_through_any_one_bootstrap_server() {
    // Each voter in turn as the only bootstrap server: the leader, and followers that answer
    // with the leader they know.
    for voter in [1, 2, 3] {
        let mut net = Net::new(&[voter]);
        net.run_for(10_000);
        let leader = net.leader().expect("a leader");
        propose(&mut net, "x");
        net.run_for(2_000);
        let observer = &net.nodes[&OBSERVER];
        assert_eq!(observer.leader_id(), Some(leader), "bootstrap {voter}");
        assert_eq!(
            observer.high_watermark(),
            net.nodes[&leader].high_watermark(),
            "bootstrap {voter}"
        );
    }
}
