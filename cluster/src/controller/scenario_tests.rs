//! The controller and the image together, as the runtime drives them: a whole cluster's life
//! (bootstrap, brokers joining, a topic, a broker lost and replaced, a controlled shutdown),
//! and random sequences of requests and clock advances that must keep every record list
//! applicable and every partition consistent.

use proptest::prelude::*;

use super::tests::{alter_request, cfg, registration, topic, Harness};
use super::*;
use crate::partition_change::IsrMember;

/// `broker.heartbeat.interval.ms`.
const HEARTBEAT_INTERVAL_MS: u64 = 2_000;

impl Harness {
    /// Runs the clock to `until`, heartbeating `alive` brokers every interval (caught up) and
    /// running the controller's timers as the runtime would.
    fn run_until(&mut self, until: u64, alive: &[NodeId]) {
        let mut next_heartbeat = self.now + HEARTBEAT_INTERVAL_MS;
        loop {
            while self.ctl.next_deadline().is_some_and(|d| d <= self.now) {
                self.tick();
            }
            let deadline = self.ctl.next_deadline().unwrap_or(u64::MAX);
            let next = deadline.min(next_heartbeat).min(until);
            if next > self.now {
                self.now = next;
            }
            if self.now == next_heartbeat {
                for &b in alive {
                    self.heartbeat(b);
                }
                next_heartbeat += HEARTBEAT_INTERVAL_MS;
            }
            if self.now >= until && self.ctl.next_deadline().is_none_or(|d| d > self.now) {
                return;
            }
        }
    }

    /// The leader of `topic-partition` adds `broker` back to its ISR, as replication does once
    /// the follower has caught up.
    fn rejoin_isr(&mut self, topic: &str, partition: i32, broker: NodeId) {
        let p = self.partition(topic, partition);
        let mut isr = p.isr.to_vec();
        if !isr.contains(&broker) {
            isr.push(broker);
        }
        let req = alter_request(self, topic, partition, &isr);
        let (records, results) = self.ctl.alter_partition(&self.image, &req).unwrap();
        assert_eq!(results[0].partitions[0].error_code, 0, "{results:?}");
        self.apply(&records);
    }
}

#[test]
fn a_cluster_lives_through_a_lost_broker_and_a_controlled_shutdown() {
    let mut c = cfg();
    c.no_op_interval_ms = Some(500);
    let mut h = Harness::new(c);
    assert_eq!(h.image.metadata_version(), Some(METADATA_VERSION_4_0_IV3));

    // Three brokers register; each is unfenced once it has applied its own registration.
    let mut epochs = Vec::new();
    for b in 1..=3 {
        let mut r = registration(b, 1);
        r.rack = Some(format!("rack-{b}"));
        let epoch = h.register(r).unwrap().broker_epoch;
        let lagging = BrokerHeartbeatRequest {
            broker_id: b,
            broker_epoch: epoch,
            current_metadata_offset: epoch - 1,
            want_fence: false,
            want_shut_down: false,
        };
        let (_, reply) = h.heartbeat_with(lagging).unwrap();
        assert!(reply.is_fenced && !reply.is_caught_up);
        epochs.push(epoch);
    }
    h.run_until(h.now + 1, &[]);
    for b in 1..=3 {
        assert!(!h.heartbeat(b).is_fenced);
    }

    // A topic with replication factor 3: every replica in sync, leaders spread.
    let created = h.create_topics(vec![topic("events", 6, 3)]);
    assert_eq!(created[0].error_code, 0);
    for p in 0..6 {
        let p = h.partition("events", p);
        assert_eq!(p.isr.len(), 3);
        assert_eq!(p.leader, p.replicas[0]);
    }
    let led_by_2: Vec<i32> = (0..6)
        .filter(|&p| h.partition("events", p).leader == 2)
        .collect();
    assert_eq!(led_by_2.len(), 2);

    // Broker 2 stops heartbeating. It stays in until its session times out...
    let lost_at = h.now;
    h.run_until(lost_at + 9_000, &[1, 3]);
    assert!(!h.image.broker(2).unwrap().fenced);
    // ...and is fenced right after: leadership moves, ISRs shrink.
    h.run_until(lost_at + 9_001, &[1, 3]);
    assert!(h.image.broker(2).unwrap().fenced);
    for p in 0..6 {
        let part = h.partition("events", p);
        assert!(part.leader != 2 && !part.isr.contains(&2), "{part:?}");
        assert_eq!(part.isr.len(), 2);
        let moved = led_by_2.contains(&p);
        assert_eq!(
            part.leader_epoch,
            i32::from(moved),
            "only moved leaders bump"
        );
        assert_eq!(part.partition_epoch, 1);
    }

    // It restarts as a new incarnation: a new, larger epoch; fenced until caught up.
    h.run_until(h.now + 4_000, &[1, 3]);
    let reply = h.register(registration(2, 2)).unwrap();
    assert!(reply.broker_epoch > epochs[1]);
    let lagging = BrokerHeartbeatRequest {
        broker_id: 2,
        broker_epoch: reply.broker_epoch,
        current_metadata_offset: reply.broker_epoch - 1,
        want_fence: false,
        want_shut_down: false,
    };
    assert!(h.heartbeat_with(lagging).unwrap().1.is_fenced);
    let reply = h.heartbeat(2);
    assert!(reply.is_caught_up && !reply.is_fenced);
    // Replication brings it back into every ISR.
    for p in 0..6 {
        h.rejoin_isr("events", p, 2);
        assert_eq!(h.partition("events", p).isr.len(), 3);
    }
    h.run_until(h.now + 20_000, &[1, 2, 3]);
    assert!((1..=3).all(|b| !h.image.broker(b).unwrap().fenced));

    // Broker 3 shuts down cleanly: it leaves leadership first, then is told to go once the
    // others have seen that.
    let epoch3 = h.image.broker(3).unwrap().epoch;
    let shutdown = |h: &Harness| BrokerHeartbeatRequest {
        broker_id: 3,
        broker_epoch: epoch3,
        current_metadata_offset: h.offset - 1,
        want_fence: false,
        want_shut_down: true,
    };
    let (_, reply) = h.heartbeat_with(shutdown(&h)).unwrap();
    assert!(reply.in_controlled_shutdown && !reply.should_shut_down);
    for p in 0..6 {
        let part = h.partition("events", p);
        assert!(part.leader != 3 && !part.isr.contains(&3), "{part:?}");
    }
    h.run_until(h.now + HEARTBEAT_INTERVAL_MS, &[1, 2]);
    let (_, reply) = h.heartbeat_with(shutdown(&h)).unwrap();
    assert!(reply.should_shut_down && reply.is_fenced);
    assert!(h.image.broker(3).unwrap().fenced);

    // The log rebuilds the image from nothing.
    let rebuilt = MetadataImage::new().with_records(h.log.iter()).unwrap();
    assert_eq!(rebuilt, h.image);
}

/// One step of a random run.
#[derive(Debug, Clone)]
enum Op {
    Register {
        broker: NodeId,
        incarnation: u128,
    },
    Heartbeat {
        broker: NodeId,
        lag: i64,
        want_fence: bool,
        want_shut_down: bool,
    },
    Advance {
        ms: u64,
    },
    CreateTopic {
        name: u8,
        partitions: i32,
        replication_factor: i16,
    },
    DeleteTopic {
        name: u8,
    },
    CreatePartitions {
        name: u8,
        more: i32,
    },
    AlterIsr {
        name: u8,
        partition: i32,
        keep: u8,
    },
    AllocateProducerIds {
        broker: NodeId,
    },
    Unregister {
        broker: NodeId,
    },
    Failover,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (1..=4, 1u128..=3).prop_map(|(broker, incarnation)| Op::Register { broker, incarnation }),
        6 => (1..=4, prop_oneof![4 => Just(0i64), 1 => 1i64..3], 0u8..8).prop_map(
            |(broker, lag, wants)| Op::Heartbeat {
                broker,
                lag,
                want_fence: wants == 0 || wants == 2,
                want_shut_down: wants == 1 || wants == 2,
            }
        ),
        3 => (0u64..4_000).prop_map(|ms| Op::Advance { ms }),
        2 => (0u8..4, 1..4, 1i16..4).prop_map(|(name, partitions, replication_factor)| {
            Op::CreateTopic { name, partitions, replication_factor }
        }),
        1 => (0u8..4).prop_map(|name| Op::DeleteTopic { name }),
        1 => (0u8..4, 1..3).prop_map(|(name, more)| Op::CreatePartitions { name, more }),
        3 => (0u8..4, 0..4, any::<u8>()).prop_map(|(name, partition, keep)| Op::AlterIsr {
            name,
            partition,
            keep
        }),
        1 => (1..=4).prop_map(|broker| Op::AllocateProducerIds { broker }),
        1 => (1..=4).prop_map(|broker| Op::Unregister { broker }),
        1 => (0..1).prop_map(|_| Op::Failover),
    ]
}

impl Harness {
    fn run(&mut self, op: Op) {
        let name = |n: u8| format!("topic-{n}");
        match op {
            Op::Register {
                broker,
                incarnation,
            } => {
                let _ = self.register(registration(broker, incarnation));
            }
            Op::Heartbeat {
                broker,
                lag,
                want_fence,
                want_shut_down,
            } => {
                let Some(b) = self.image.broker(broker) else {
                    return;
                };
                let req = BrokerHeartbeatRequest {
                    broker_id: broker,
                    broker_epoch: b.epoch,
                    current_metadata_offset: self.offset - 1 - lag,
                    want_fence,
                    want_shut_down,
                };
                self.heartbeat_with(req).unwrap();
            }
            Op::Advance { ms } => {
                self.advance(ms);
                while self.ctl.next_deadline().is_some_and(|d| d <= self.now) {
                    self.tick();
                }
            }
            Op::CreateTopic {
                name: n,
                partitions,
                replication_factor,
            } => {
                self.create_topics(vec![topic(&name(n), partitions, replication_factor)]);
            }
            Op::DeleteTopic { name: n } => {
                let (records, _) = self
                    .ctl
                    .delete_topics(&self.image, vec![TopicRef::Name(name(n))])
                    .unwrap();
                self.apply(&records);
            }
            Op::CreatePartitions { name: n, more } => {
                let Some(t) = self.image.topic_by_name(&name(n)) else {
                    return;
                };
                let count = t.partitions().len() as i32 + more;
                let req = CreatePartitionsTopic {
                    name: name(n),
                    count,
                    assignments: None,
                };
                let (records, _) = self
                    .ctl
                    .create_partitions(&self.image, vec![req], false, self.offset as u64)
                    .unwrap();
                self.apply(&records);
            }
            Op::AlterIsr {
                name: n,
                partition,
                keep,
            } => {
                let Some(t) = self.image.topic_by_name(&name(n)) else {
                    return;
                };
                let Some(p) = t.partition(partition).cloned() else {
                    return;
                };
                let Some(leader) = self.image.broker(p.leader) else {
                    return;
                };
                // The leader keeps itself and the replicas `keep`'s bits pick.
                let new_isr = p
                    .replicas
                    .iter()
                    .enumerate()
                    .filter(|&(i, &r)| r == p.leader || keep & (1 << i) != 0)
                    .map(|(_, &r)| IsrMember {
                        broker_id: r,
                        broker_epoch: -1,
                    })
                    .collect();
                let req = AlterPartitionRequest {
                    broker_id: p.leader,
                    broker_epoch: leader.epoch,
                    version: 3,
                    topics: vec![AlterPartitionTopic {
                        topic_id: t.id,
                        topic_name: name(n),
                        partitions: vec![AlterPartitionData {
                            partition_index: partition,
                            leader_epoch: p.leader_epoch,
                            partition_epoch: p.partition_epoch,
                            new_isr,
                            leader_recovery_state: 0,
                        }],
                    }],
                };
                let (records, _) = self.ctl.alter_partition(&self.image, &req).unwrap();
                self.apply(&records);
            }
            Op::AllocateProducerIds { broker } => {
                let Some(b) = self.image.broker(broker) else {
                    return;
                };
                let before = self.image.next_producer_id();
                let (records, block) = self
                    .ctl
                    .allocate_producer_ids(&self.image, broker, b.epoch)
                    .unwrap();
                assert_eq!(block.first_producer_id, before.max(0));
                self.apply(&records);
            }
            Op::Unregister { broker } => {
                if let Ok(records) = self.ctl.unregister_broker(&self.image, broker) {
                    self.apply(&records);
                }
            }
            Op::Failover => {
                let mut next = Controller::new(self.ctl.config().clone());
                assert!(next.activate(self.now, &self.image, self.offset).is_empty());
                self.ctl = next;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever the requests and the clock do, every record list applies (and survives the
    /// wire), partitions stay consistent with their leaders live (checked after every batch),
    /// broker epochs only grow, and the log rebuilds the image.
    #[test]
    fn random_runs_keep_the_image_consistent(ops in proptest::collection::vec(op(), 1..80)) {
        let mut c = cfg();
        c.no_op_interval_ms = Some(500);
        c.leader_imbalance_check_interval_ms = Some(10_000);
        let mut h = Harness::new(c);
        for b in 1..=3 {
            h.start_broker(b, 1);
        }
        let mut epochs: std::collections::BTreeMap<NodeId, i64> = Default::default();
        for op in ops {
            h.run(op);
            for b in h.image.brokers().values() {
                let last = epochs.entry(b.id).or_insert(b.epoch);
                prop_assert!(b.epoch >= *last);
                *last = b.epoch;
            }
        }
        let rebuilt = MetadataImage::new().with_records(h.log.iter()).unwrap();
        prop_assert_eq!(rebuilt, h.image);
    }
}
