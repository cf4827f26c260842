//! The controller's rules, one test per rule, driven through [`Harness`], which plays the
//! runtime: it applies every record list returned to its image (panicking if one does not
//! apply or does not survive the wire format) and advances the log end offset.

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::*;
use crate::metadata::image::PartitionRegistration;
use crate::metadata::records::*;
use crate::partition_change::IsrMember;

pub(super) const CLUSTER: &str = "test-cluster";

pub(super) fn cfg() -> ControllerConfig {
    let mut c = ControllerConfig::new(CLUSTER);
    c.no_op_interval_ms = None;
    c.leader_imbalance_check_interval_ms = None;
    c.unclean_leader_election_interval_ms = None;
    c
}

pub(super) fn log_dir(broker: NodeId, incarnation: u128) -> Uuid {
    Uuid::from_u128(0xd1d1_0000_0000 + ((broker as u128) << 16) + incarnation)
}

pub(super) fn registration(broker: NodeId, incarnation: u128) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest {
        broker_id: broker,
        cluster_id: CLUSTER.into(),
        incarnation_id: Uuid::from_u128(0x1c00 + ((broker as u128) << 32) + incarnation),
        listeners: vec![BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9092 + broker as u16,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![BrokerFeature {
            name: METADATA_VERSION_FEATURE.into(),
            min_supported_version: METADATA_VERSION_MINIMUM,
            max_supported_version: METADATA_VERSION_4_0_IV3,
            ..Default::default()
        }],
        rack: None,
        is_migrating_zk_broker: false,
        log_dirs: vec![log_dir(broker, incarnation)],
    }
}

pub(super) fn topic(name: &str, num_partitions: i32, replication_factor: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions,
        replication_factor,
        assignments: Vec::new(),
        configs: Vec::new(),
        topic_id: None,
    }
}

/// The runtime's side: `latest`, the log end offset and the clock.
pub(super) struct Harness {
    pub ctl: Controller,
    pub image: MetadataImage,
    /// The log end offset: the offset the next record gets.
    pub offset: i64,
    pub now: u64,
    /// Every record applied, in log order.
    pub log: Vec<MetadataRecord>,
}

impl Harness {
    pub fn new(cfg: ControllerConfig) -> Self {
        let mut h = Harness {
            ctl: Controller::new(cfg),
            image: MetadataImage::new(),
            offset: 0,
            now: 1_000,
            log: Vec::new(),
        };
        let boot = h.ctl.activate(h.now, &h.image, h.offset);
        h.apply(&boot);
        h
    }

    /// Applies records as the runtime does after proposing them; they must apply and must
    /// survive encoding.
    pub fn apply(&mut self, records: &[MetadataRecord]) {
        for r in records {
            let wire = MetadataRecord::decode(&r.encode()).expect("decodes");
            assert_eq!(&wire, r, "record changed over the wire");
            self.image
                .apply(r)
                .unwrap_or_else(|e| panic!("{} does not apply: {e}\n{r:?}", r.name()));
            self.log.push(r.clone());
            self.offset += 1;
        }
        self.check_invariants();
    }

    /// What holds after every batch: leaders lead from the ISR, the ISR is a set of replicas,
    /// and every leader is a registered, unfenced broker not shutting down.
    pub fn check_invariants(&self) {
        for t in self.image.topics() {
            for p in t.partitions() {
                let ctx = || format!("{}-{}: {p:?}", t.name, p.partition_id);
                assert!(!p.isr.is_empty(), "{}", ctx());
                for (i, r) in p.replicas.iter().enumerate() {
                    assert!(!p.replicas[..i].contains(r), "replicas repeat: {}", ctx());
                }
                for (i, r) in p.isr.iter().enumerate() {
                    assert!(
                        p.replicas.contains(r) && !p.isr[..i].contains(r),
                        "{}",
                        ctx()
                    );
                }
                if p.leader != NO_LEADER {
                    assert!(p.isr.contains(&p.leader), "leader outside ISR: {}", ctx());
                    let b = self.image.broker(p.leader).expect("leader registered");
                    assert!(!b.fenced && !b.in_controlled_shutdown, "{}", ctx());
                }
            }
        }
    }

    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }

    pub fn register(
        &mut self,
        req: BrokerRegistrationRequest,
    ) -> Result<BrokerRegistrationReply, ControllerError> {
        let (records, reply) = self
            .ctl
            .register_broker(self.now, &self.image, self.offset, req)?;
        self.apply(&records);
        Ok(reply)
    }

    pub fn heartbeat_with(
        &mut self,
        req: BrokerHeartbeatRequest,
    ) -> Result<(Vec<MetadataRecord>, BrokerHeartbeatReply), ControllerError> {
        let (records, reply) =
            self.ctl
                .broker_heartbeat(self.now, &self.image, self.offset, req)?;
        self.apply(&records);
        Ok((records, reply))
    }

    /// A heartbeat from a broker that has applied everything so far.
    pub fn heartbeat(&mut self, broker: NodeId) -> BrokerHeartbeatReply {
        let epoch = self.image.broker(broker).expect("registered").epoch;
        self.heartbeat_with(BrokerHeartbeatRequest {
            broker_id: broker,
            broker_epoch: epoch,
            current_metadata_offset: self.offset - 1,
            want_fence: false,
            want_shut_down: false,
        })
        .expect("heartbeat accepted")
        .1
    }

    /// Registers and heartbeats the broker until it is unfenced; returns its epoch.
    pub fn start_broker(&mut self, broker: NodeId, incarnation: u128) -> i64 {
        let epoch = self
            .register(registration(broker, incarnation))
            .expect("registered")
            .broker_epoch;
        let reply = self.heartbeat(broker);
        assert!(reply.is_caught_up && !reply.is_fenced, "{reply:?}");
        epoch
    }

    pub fn tick(&mut self) -> Vec<MetadataRecord> {
        let records = self.ctl.tick(self.now, &self.image);
        self.apply(&records);
        records
    }

    pub fn create_topics(&mut self, topics: Vec<CreatableTopic>) -> Vec<CreateTopicResult> {
        let seed = self.offset as u64;
        let (records, results) = self
            .ctl
            .create_topics(&self.image, topics, false, seed)
            .expect("active");
        self.apply(&records);
        results
    }

    pub fn partition(&self, name: &str, partition: i32) -> PartitionRegistration {
        self.image
            .topic_by_name(name)
            .and_then(|t| t.partition(partition))
            .cloned()
            .unwrap_or_else(|| panic!("no partition {name}-{partition}"))
    }
}

/// The AlterPartition request in which the leader of `topic`-`partition` asks for `isr`, as
/// replication does when a follower falls behind or catches up.
pub(super) fn alter_request(
    h: &Harness,
    topic: &str,
    partition: i32,
    isr: &[NodeId],
) -> AlterPartitionRequest {
    let p = h.partition(topic, partition);
    AlterPartitionRequest {
        broker_id: p.leader,
        broker_epoch: h.image.broker(p.leader).unwrap().epoch,
        version: 3,
        topics: vec![AlterPartitionTopic {
            topic_id: h.image.topic_by_name(topic).unwrap().id,
            topic_name: topic.into(),
            partitions: vec![AlterPartitionData {
                partition_index: partition,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                new_isr: isr
                    .iter()
                    .map(|&b| IsrMember {
                        broker_id: b,
                        broker_epoch: h.image.broker(b).unwrap().epoch,
                    })
                    .collect(),
                leader_recovery_state: 0,
            }],
        }],
    }
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

/// Three unfenced brokers 1, 2, 3.
/// A config schema for tests, with rules of the kinds Kafka's have: `*.ms` keys take integers;
/// `remote.storage.enable` cannot go back from true; `cleanup.policy` (default "delete") and
/// `leader.replication.throttled.replicas` (no default) are lists; client-metrics resources take
/// only `metrics`, `interval.ms` and `match`, and refuse others with INVALID_REQUEST.
pub(super) struct TestSchema;

impl ConfigValidator for TestSchema {
    fn validate(
        &self,
        resource_type: i8,
        _resource_name: &str,
        resulting: &BTreeMap<String, String>,
        existing: &BTreeMap<String, String>,
    ) -> Result<(), ConfigRefusal> {
        for (key, value) in resulting {
            if resource_type == crate::metadata::image::CONFIG_RESOURCE_CLIENT_METRICS
                && !["metrics", "interval.ms", "match"].contains(&key.as_str())
            {
                return Err(ConfigRefusal::invalid_request(format!(
                    "Unknown client metrics configuration: {key}"
                )));
            }
            if key.ends_with(".ms") && value.parse::<i64>().is_err() {
                return Err(ConfigRefusal::invalid_config(format!(
                    "Invalid value {value} for configuration {key}"
                )));
            }
        }
        let remote = |m: &BTreeMap<String, String>| {
            m.get("remote.storage.enable").map(String::as_str) == Some("true")
        };
        if remote(existing) && !remote(resulting) {
            return Err(ConfigRefusal::invalid_config(
                "It is invalid to disable remote storage without deleting remote data.",
            ));
        }
        Ok(())
    }

    fn is_list(&self, _: i8, key: &str) -> bool {
        [
            "cleanup.policy",
            "leader.replication.throttled.replicas",
            "metrics",
        ]
        .contains(&key)
    }

    fn default_value(&self, _: i8, key: &str) -> Option<String> {
        (key == "cleanup.policy").then(|| "delete".to_string())
    }
}

pub(super) fn three_brokers() -> Harness {
    three_brokers_with(cfg())
}

/// Three unfenced brokers 1, 2, 3 under a controller configured by `c`.
pub(super) fn three_brokers_with(c: ControllerConfig) -> Harness {
    let mut h = Harness::new(c);
    for b in 1..=3 {
        h.start_broker(b, 1);
    }
    h
}

// ----- activation -----

#[test]
fn activation_on_an_empty_log_bootstraps_metadata_version_4_0_iv3() {
    let mut ctl = Controller::new(cfg());
    let records = ctl.activate(0, &MetadataImage::new(), 0);
    assert_eq!(
        records,
        vec![MetadataRecord::from(FeatureLevelRecord {
            name: "metadata.version".into(),
            feature_level: 25,
            ..Default::default()
        })]
    );
    let mut c = cfg();
    c.bootstrap_features = vec![("group.version".into(), 1)];
    let records = Controller::new(c).activate(0, &MetadataImage::new(), 0);
    assert_eq!(records.len(), 2);
}

#[test]
fn activation_on_a_bootstrapped_log_writes_nothing_and_restarts_every_session() {
    let mut h = three_brokers();
    h.advance(8_000);
    // A new controller takes over: the brokers' last heartbeats (8 s ago) are not held
    // against them.
    let mut ctl = Controller::new(cfg());
    assert!(ctl.activate(h.now, &h.image, h.offset).is_empty());
    assert_eq!(ctl.next_deadline(), Some(h.now + 9_001));
    h.ctl = ctl;
    h.advance(9_000);
    assert!(h.tick().is_empty());
    h.advance(1);
    assert!(
        !h.tick().is_empty(),
        "fenced a broker once a full session passed"
    );
}

/// A metadata log bootstrapped before a feature existed (here `share.version`, which Samsa
/// finalizes on new clusters only) keeps it at 0: activation adds nothing, as Kafka leaves a
/// cluster upgraded from an older release at its levels until `kafka-features upgrade`.
#[test]
fn activation_on_a_log_from_before_a_feature_leaves_it_at_0() {
    let h = three_brokers();
    let mut c = cfg();
    c.bootstrap_features = vec![(SHARE_VERSION_FEATURE.into(), SHARE_VERSION_MAX)];
    let mut ctl = Controller::new(c);
    assert!(ctl.activate(h.now, &h.image, h.offset).is_empty());
    assert_eq!(h.image.features().get(SHARE_VERSION_FEATURE), None);
}

#[test]
fn an_inactive_controller_refuses_everything_with_not_controller() {
    let mut h = three_brokers();
    h.ctl.deactivate();
    let e = h.register(registration(4, 1)).unwrap_err();
    assert_eq!(e.error_code(), code(ResponseError::NotController));
    assert_eq!(h.ctl.next_deadline(), None);
    assert!(h.ctl.tick(h.now, &h.image).is_empty());
    assert!(h.ctl.create_topics(&h.image, vec![], false, 0).is_err());
}

// ----- registration -----

#[test]
fn a_new_broker_registers_fenced_with_the_offset_of_its_record_as_epoch() {
    let mut h = Harness::new(cfg());
    let offset = h.offset;
    let reply = h.register(registration(1, 1)).unwrap();
    assert_eq!(reply.broker_epoch, offset);
    let b = h.image.broker(1).unwrap();
    assert!(b.fenced && !b.in_controlled_shutdown);
    assert_eq!(b.epoch, offset);
    assert_eq!(b.directories, vec![log_dir(1, 1)]);
    assert!(
        b.supported_features
            .iter()
            .any(|f| f.name == "metadata.version" && f.max_supported_version == 25),
        "the broker's feature ranges are recorded"
    );
}

#[test]
fn re_registering_the_same_incarnation_keeps_the_epoch_and_the_state() {
    let mut h = three_brokers();
    let before = h.image.broker(2).unwrap().clone();
    let mut again = registration(2, 1);
    again.rack = Some("r2".into());
    let reply = h.register(again).unwrap();
    let after = h.image.broker(2).unwrap();
    assert_eq!(reply.broker_epoch, before.epoch);
    assert_eq!((after.epoch, after.fenced), (before.epoch, false));
    assert_eq!(after.rack.as_deref(), Some("r2"));
}

#[test]
fn another_incarnation_is_refused_while_the_registered_session_is_live() {
    let mut h = three_brokers();
    h.advance(9_000);
    let e = h.register(registration(2, 2)).unwrap_err();
    assert!(matches!(
        e,
        ControllerError::DuplicateBrokerRegistration { broker_id: 2, .. }
    ));
    assert_eq!(e.error_code(), 101);
}

#[test]
fn a_combined_nodes_own_broker_registers_again_at_once_after_a_restart() {
    // This controller runs in node 2's process, which is also its broker: the incarnation
    // registered before is the process this one replaced.
    let mut c = cfg();
    c.node_id = 2;
    c.local_broker = true;
    let mut h = three_brokers_with(c);
    h.advance(1_000);
    let reply = h.register(registration(2, 2)).unwrap();
    assert!(reply.broker_epoch > 0);
    // Another broker's new incarnation still waits out the live session.
    assert!(matches!(
        h.register(registration(3, 2)).unwrap_err(),
        ControllerError::DuplicateBrokerRegistration { broker_id: 3, .. }
    ));
    // And a controller-only node with that id (no local broker) waits as well.
    let mut c = cfg();
    c.node_id = 2;
    let mut h = three_brokers_with(c);
    h.advance(1_000);
    assert!(h.register(registration(2, 2)).is_err());
}

#[test]
fn another_incarnation_replaces_an_expired_session_and_leaves_leadership_and_isrs() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 3, 3)]);
    let old_epoch = h.image.broker(2).unwrap().epoch;
    for _ in 0..3 {
        h.advance(3_000);
        h.heartbeat(1);
        h.heartbeat(3);
    }
    h.advance(1);
    // Broker 2's session has expired but no tick has fenced it yet.
    let offset = h.offset;
    let (records, reply) = h
        .ctl
        .register_broker(h.now, &h.image, offset, registration(2, 2))
        .unwrap();
    assert_eq!(
        reply.broker_epoch, offset,
        "a new incarnation gets a new epoch"
    );
    assert!(reply.broker_epoch > old_epoch);
    let last = records.last().unwrap();
    assert!(
        matches!(last, MetadataRecord::RegisterBroker(r) if r.fenced && r.broker_epoch == offset)
    );
    assert!(records[..records.len() - 1]
        .iter()
        .all(|r| matches!(r, MetadataRecord::PartitionChange(_))));
    h.apply(&records);
    for p in 0..3 {
        let p = h.partition("t", p);
        assert!(!p.isr.contains(&2) && p.leader != 2, "{p:?}");
    }
}

#[test]
fn a_fenced_broker_can_be_replaced_at_once() {
    let mut h = three_brokers();
    let epoch = h.image.broker(3).unwrap().epoch;
    h.heartbeat_with(BrokerHeartbeatRequest {
        broker_id: 3,
        broker_epoch: epoch,
        current_metadata_offset: h.offset - 1,
        want_fence: true,
        want_shut_down: false,
    })
    .unwrap();
    assert!(h.image.broker(3).unwrap().fenced);
    assert!(h.register(registration(3, 2)).is_ok());
}

#[test]
fn registration_checks_cluster_id_zk_and_log_directories() {
    let mut h = three_brokers();
    let mut r = registration(4, 1);
    r.cluster_id = "other".into();
    assert_eq!(h.register(r).unwrap_err().error_code(), 104);
    let mut r = registration(4, 1);
    r.is_migrating_zk_broker = true;
    assert_eq!(h.register(r).unwrap_err().error_code(), 102);
    let invalid = ResponseError::InvalidRegistration.code();
    for dirs in [
        vec![],
        vec![Uuid::from_u64_pair(0, 2)],
        vec![log_dir(4, 1), log_dir(4, 1)],
        vec![log_dir(1, 1)],
    ] {
        let mut r = registration(4, 1);
        r.log_dirs = dirs.clone();
        let e = h.register(r).unwrap_err();
        assert_eq!(e.error_code(), invalid, "{dirs:?}: {e}");
    }
    assert!(h.image.broker(4).is_none());
}

#[test]
fn registration_needs_every_finalized_feature_level_in_the_brokers_range() {
    let mut h = Harness::new(cfg());
    let mut r = registration(1, 1);
    r.features[0].max_supported_version = 24;
    let e = h.register(r).unwrap_err();
    assert_eq!(e.error_code(), ResponseError::UnsupportedVersion.code());
    assert_eq!(
        e.to_string(),
        "broker 1 does not support finalized level 25 of metadata.version: it supports 7 to 24"
    );
    let mut r = registration(1, 1);
    r.features.clear();
    assert!(h.register(r).is_err(), "no range means only the minimum");

    let mut c = cfg();
    c.bootstrap_features = vec![("group.version".into(), 1)];
    let mut h = Harness::new(c);
    assert!(
        h.register(registration(1, 1)).is_err(),
        "group.version=1 is unsupported"
    );
    let mut r = registration(1, 1);
    r.features.push(BrokerFeature {
        name: "group.version".into(),
        min_supported_version: 0,
        max_supported_version: 1,
        ..Default::default()
    });
    assert!(h.register(r).is_ok());
}

// ----- heartbeats -----

#[test]
fn heartbeats_from_unregistered_brokers_or_old_epochs_are_stale_broker_epoch() {
    let mut h = three_brokers();
    let epoch = h.image.broker(1).unwrap().epoch;
    for (broker_id, broker_epoch) in [(9, 0), (1, epoch - 1)] {
        let e = h
            .heartbeat_with(BrokerHeartbeatRequest {
                broker_id,
                broker_epoch,
                current_metadata_offset: 0,
                want_fence: false,
                want_shut_down: false,
            })
            .unwrap_err();
        assert_eq!(e.error_code(), 77);
    }
}

#[test]
fn a_broker_is_unfenced_once_it_has_applied_its_registration() {
    let mut h = Harness::new(cfg());
    h.register(registration(1, 1)).unwrap();
    let register_offset = h.offset - 1;
    let mut hb = BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: register_offset,
        current_metadata_offset: register_offset - 1,
        want_fence: false,
        want_shut_down: false,
    };
    let (records, reply) = h.heartbeat_with(hb).unwrap();
    assert!(records.is_empty());
    assert!(!reply.is_caught_up && reply.is_fenced);
    // Caught up, but still recovering its logs.
    hb.current_metadata_offset = register_offset;
    hb.want_fence = true;
    let (records, reply) = h.heartbeat_with(hb).unwrap();
    assert!(records.is_empty() && reply.is_caught_up && reply.is_fenced);
    hb.want_fence = false;
    let (records, reply) = h.heartbeat_with(hb).unwrap();
    assert_eq!(
        records,
        vec![MetadataRecord::from(BrokerRegistrationChangeRecord {
            broker_id: 1,
            broker_epoch: register_offset,
            fenced: -1,
            ..Default::default()
        })]
    );
    assert!(reply.is_caught_up && !reply.is_fenced && !reply.should_shut_down);
    assert!(!h.image.broker(1).unwrap().fenced);
}

#[test]
fn an_unfenced_broker_asking_to_be_fenced_is_fenced_and_leaves_isrs() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 1, 3)]);
    let leader = h.partition("t", 0).leader;
    let epoch = h.image.broker(leader).unwrap().epoch;
    let (records, reply) = h
        .heartbeat_with(BrokerHeartbeatRequest {
            broker_id: leader,
            broker_epoch: epoch,
            current_metadata_offset: h.offset - 1,
            want_fence: true,
            want_shut_down: false,
        })
        .unwrap();
    assert!(reply.is_fenced && !reply.should_shut_down);
    assert!(matches!(records[0], MetadataRecord::PartitionChange(_)));
    assert!(matches!(
        records.last(),
        Some(MetadataRecord::BrokerRegistrationChange(r)) if r.fenced == 1
    ));
    let p = h.partition("t", 0);
    assert!(p.leader != leader && !p.isr.contains(&leader));
    assert_eq!(p.isr.len(), 2);
}

#[test]
fn unfencing_elects_the_broker_where_it_is_the_last_isr_member() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("solo", 1, 1)]);
    let b = h.partition("solo", 0).leader;
    // Fenced by a session timeout: the partition loses its leader but keeps b in its ISR.
    let others: Vec<NodeId> = (1..=3).filter(|&x| x != b).collect();
    for _ in 0..4 {
        h.advance(3_000);
        for &o in &others {
            h.heartbeat(o);
        }
    }
    assert!(!h.tick().is_empty());
    let p = h.partition("solo", 0);
    assert_eq!((p.leader, &p.isr[..]), (NO_LEADER, &[b][..]));
    assert_eq!(p.leader_epoch, 1);
    // It comes back within the same incarnation (a long GC pause) and catches up.
    let reply = h.heartbeat(b);
    assert!(!reply.is_fenced);
    let p = h.partition("solo", 0);
    assert_eq!((p.leader, p.leader_epoch), (b, 2));
}

#[test]
fn a_fenced_broker_wanting_to_shut_down_is_told_to_at_once() {
    let mut h = Harness::new(cfg());
    let epoch = h.register(registration(1, 1)).unwrap().broker_epoch;
    let (_, reply) = h
        .heartbeat_with(BrokerHeartbeatRequest {
            broker_id: 1,
            broker_epoch: epoch,
            current_metadata_offset: 0,
            want_fence: false,
            want_shut_down: true,
        })
        .unwrap();
    assert!(reply.should_shut_down && reply.is_fenced);
}

#[test]
fn a_broker_leading_nothing_shuts_down_at_once() {
    let mut h = three_brokers();
    let epoch = h.image.broker(2).unwrap().epoch;
    let (records, reply) = h
        .heartbeat_with(BrokerHeartbeatRequest {
            broker_id: 2,
            broker_epoch: epoch,
            current_metadata_offset: h.offset - 1,
            want_fence: false,
            want_shut_down: true,
        })
        .unwrap();
    assert!(reply.should_shut_down && reply.is_fenced && !reply.in_controlled_shutdown);
    assert!(h.image.broker(2).unwrap().fenced);
    assert_eq!(records.len(), 1);
}

#[test]
fn controlled_shutdown_moves_leaders_and_waits_for_active_brokers_to_see_it() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 6, 3)]);
    let epoch = h.image.broker(1).unwrap().epoch;
    let shut = BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: epoch,
        current_metadata_offset: h.offset - 1,
        want_fence: false,
        want_shut_down: true,
    };
    let (records, reply) = h.heartbeat_with(shut).unwrap();
    assert!(reply.in_controlled_shutdown && !reply.should_shut_down && !reply.is_fenced);
    assert!(matches!(
        &records[0],
        MetadataRecord::BrokerRegistrationChange(r) if r.in_controlled_shutdown == 1
    ));
    let end = h.offset - 1;
    assert!(h.image.broker(1).unwrap().in_controlled_shutdown);
    for p in 0..6 {
        let p = h.partition("t", p);
        assert!(p.leader != 1 && !p.isr.contains(&1), "{p:?}");
    }
    // Brokers 2 and 3 have not yet reported the shutdown batch: wait.
    let (records, reply) = h.heartbeat_with(shut).unwrap();
    assert!(records.is_empty() && reply.in_controlled_shutdown && !reply.should_shut_down);
    for b in [2, 3] {
        h.heartbeat_with(BrokerHeartbeatRequest {
            broker_id: b,
            broker_epoch: h.image.broker(b).unwrap().epoch,
            current_metadata_offset: end - 1,
            want_fence: false,
            want_shut_down: false,
        })
        .unwrap();
    }
    assert!(!h.heartbeat_with(shut).unwrap().1.should_shut_down);
    h.heartbeat(2);
    h.heartbeat(3);
    let (records, reply) = h.heartbeat_with(shut).unwrap();
    assert!(reply.should_shut_down && reply.is_fenced);
    assert!(matches!(
        records.last(),
        Some(MetadataRecord::BrokerRegistrationChange(r)) if r.fenced == 1
    ));
    // New partitions are not placed on a broker in controlled shutdown, nor on a fenced one
    // as leader.
    let r = h.create_topics(vec![topic("u", 4, 2)]);
    assert_eq!(r[0].error_code, 0);
    for p in 0..4 {
        assert_ne!(h.partition("u", p).leader, 1);
    }
}

// ----- sessions and timers -----

#[test]
fn a_broker_is_fenced_when_its_session_times_out_and_not_before() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 3, 3)]);
    let start = h.now;
    assert_eq!(h.ctl.next_deadline(), Some(start + 9_001));
    h.advance(5_000);
    h.heartbeat(1);
    h.heartbeat(2);
    h.advance(4_000);
    assert!(
        h.tick().is_empty(),
        "broker 3's session is valid for the full 9 s"
    );
    assert_eq!(h.ctl.next_deadline(), Some(start + 9_001));
    h.advance(1);
    let records = h.tick();
    assert!(matches!(
        records.last(),
        Some(MetadataRecord::BrokerRegistrationChange(r)) if r.broker_id == 3 && r.fenced == 1
    ));
    assert!(h.image.broker(3).unwrap().fenced);
    for p in 0..3 {
        let p = h.partition("t", p);
        assert!(p.leader != 3 && !p.isr.contains(&3));
    }
    assert_eq!(h.ctl.next_deadline(), Some(start + 5_000 + 9_001));
}

#[test]
fn one_stale_broker_is_fenced_per_tick() {
    let mut h = three_brokers();
    h.advance(10_000);
    let fenced_by = |records: &[MetadataRecord]| match records.last() {
        Some(MetadataRecord::BrokerRegistrationChange(r)) => r.broker_id,
        other => panic!("{other:?}"),
    };
    let first = h.tick();
    let second = h.tick();
    let third = h.tick();
    let mut ids = vec![fenced_by(&first), fenced_by(&second), fenced_by(&third)];
    ids.sort();
    assert_eq!(ids, vec![1, 2, 3]);
    assert!(h.tick().is_empty());
    assert_eq!(h.ctl.next_deadline(), None);
}

#[test]
fn no_op_records_are_written_on_the_idle_interval() {
    let mut c = cfg();
    c.no_op_interval_ms = Some(500);
    let mut h = Harness::new(c);
    let start = h.now;
    assert_eq!(h.ctl.next_deadline(), Some(start + 500));
    h.advance(499);
    assert!(h.tick().is_empty());
    h.advance(1);
    assert_eq!(h.tick(), vec![MetadataRecord::from(NoOpRecord::default())]);
    assert_eq!(h.ctl.next_deadline(), Some(start + 1_000));
}

#[test]
fn leadership_returns_to_preferred_replicas_on_the_imbalance_interval() {
    let mut c = cfg();
    c.leader_imbalance_check_interval_ms = Some(300_000);
    let mut h = three_brokers_with(c);
    h.create_topics(vec![topic("t", 3, 3)]);
    let preferred: Vec<NodeId> = (0..3).map(|p| h.partition("t", p).replicas[0]).collect();
    let epoch = h.image.broker(1).unwrap().epoch;
    let fence = BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: epoch,
        current_metadata_offset: h.offset - 1,
        want_fence: true,
        want_shut_down: false,
    };
    h.heartbeat_with(fence).unwrap();
    let unfence = BrokerHeartbeatRequest {
        want_fence: false,
        current_metadata_offset: h.offset - 1,
        ..fence
    };
    assert!(!h.heartbeat_with(unfence).unwrap().1.is_fenced);
    let p = preferred.iter().position(|&b| b == 1).unwrap() as i32;
    let part = h.partition("t", p);
    assert_ne!(part.leader, 1, "unfencing does not take leadership back");
    // Broker 1 catches up and its leader adds it back to the ISR.
    let mut isr: Vec<crate::partition_change::IsrMember> = part
        .isr
        .iter()
        .map(|&b| crate::partition_change::IsrMember {
            broker_id: b,
            broker_epoch: -1,
        })
        .collect();
    isr.push(crate::partition_change::IsrMember {
        broker_id: 1,
        broker_epoch: epoch,
    });
    let expand = AlterPartitionRequest {
        broker_id: part.leader,
        broker_epoch: h.image.broker(part.leader).unwrap().epoch,
        version: 3,
        topics: vec![AlterPartitionTopic {
            topic_id: h.image.topic_by_name("t").unwrap().id,
            topic_name: String::new(),
            partitions: vec![AlterPartitionData {
                partition_index: p,
                leader_epoch: part.leader_epoch,
                partition_epoch: part.partition_epoch,
                new_isr: isr,
                leader_recovery_state: 0,
            }],
        }],
    };
    let (records, results) = h.ctl.alter_partition(&h.image, &expand).unwrap();
    assert_eq!(results[0].partitions[0].error_code, 0);
    h.apply(&records);
    assert!(h.partition("t", p).isr.contains(&1));
    assert!(h.tick().is_empty(), "not before the interval");
    h.advance(300_000);
    for b in 1..=3 {
        h.heartbeat(b);
    }
    let records = h.tick();
    assert_eq!(records.len(), 1);
    assert_eq!(h.partition("t", p).leader, 1);
    assert!(h.ctl.next_deadline().unwrap() > h.now);
}

#[test]
fn unclean_elections_mark_the_leader_recovering_until_it_says_recovered() {
    let mut h = three_brokers();
    let mut t = topic("u", -1, -1);
    t.assignments = vec![(0, vec![1, 2])];
    t.configs = vec![("unclean.leader.election.enable".into(), Some("true".into()))];
    assert_eq!(h.create_topics(vec![t])[0].error_code, 0);
    // Broker 2 leaves the ISR; then broker 1, the last member, is fenced: 2 leads uncleanly.
    let alter = AlterPartitionRequest {
        broker_id: 1,
        broker_epoch: h.image.broker(1).unwrap().epoch,
        version: 3,
        topics: vec![AlterPartitionTopic {
            topic_id: h.image.topic_by_name("u").unwrap().id,
            topic_name: String::new(),
            partitions: vec![AlterPartitionData {
                partition_index: 0,
                leader_epoch: 0,
                partition_epoch: 0,
                new_isr: vec![crate::partition_change::IsrMember {
                    broker_id: 1,
                    broker_epoch: -1,
                }],
                leader_recovery_state: 0,
            }],
        }],
    };
    let (records, _) = h.ctl.alter_partition(&h.image, &alter).unwrap();
    h.apply(&records);
    let fence = h.ctl.fence_records(&h.image, 1);
    h.apply(&fence);
    let p = h.partition("u", 0);
    assert_eq!(
        (p.leader, &p.isr[..], p.leader_recovery_state),
        (2, &[2][..], 1)
    );
    // The new leader may not grow the ISR while recovering, and then reports RECOVERED.
    let mut recovered = alter.clone();
    recovered.broker_id = 2;
    recovered.broker_epoch = h.image.broker(2).unwrap().epoch;
    let data = &mut recovered.topics[0].partitions[0];
    data.leader_epoch = p.leader_epoch;
    data.partition_epoch = p.partition_epoch;
    data.new_isr = vec![crate::partition_change::IsrMember {
        broker_id: 2,
        broker_epoch: -1,
    }];
    data.leader_recovery_state = 1;
    data.new_isr.push(crate::partition_change::IsrMember {
        broker_id: 3,
        broker_epoch: -1,
    });
    let (records, results) = h.ctl.alter_partition(&h.image, &recovered).unwrap();
    assert!(records.is_empty());
    assert_eq!(
        results[0].partitions[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    let data = &mut recovered.topics[0].partitions[0];
    data.new_isr.pop();
    data.leader_recovery_state = 0;
    let (records, results) = h.ctl.alter_partition(&h.image, &recovered).unwrap();
    h.apply(&records);
    let p = h.partition("u", 0);
    assert_eq!(p.leader_recovery_state, 0);
    assert_eq!(results[0].partitions[0].partition_epoch, p.partition_epoch);
    assert_eq!(results[0].partitions[0].leader_recovery_state, 0);
}

#[test]
fn unregistering_a_broker_takes_it_out_of_isrs_then_removes_it() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 2, 3)]);
    let records = h.ctl.unregister_broker(&h.image, 3).unwrap();
    assert!(matches!(
        records.last(),
        Some(MetadataRecord::UnregisterBroker(_))
    ));
    h.apply(&records);
    assert!(h.image.broker(3).is_none());
    assert!(!h.partition("t", 0).isr.contains(&3));
    assert_eq!(
        h.ctl
            .unregister_broker(&h.image, 3)
            .unwrap_err()
            .error_code(),
        102
    );
}

#[test]
fn unregistering_an_unknown_broker_is_refused_in_kafkas_words() {
    let mut h = three_brokers();
    let e = h.ctl.unregister_broker(&h.image, 9).unwrap_err();
    assert_eq!(e.error_code(), code(ResponseError::BrokerIdNotRegistered));
    assert_eq!(e.to_string(), "Broker ID 9 is not currently registered");
    let mut passive = Controller::new(cfg());
    assert_eq!(
        passive.unregister_broker(&h.image, 1).unwrap_err(),
        ControllerError::NotController
    );
}

#[test]
fn an_unregistered_live_broker_loses_its_leaderships_and_session_until_it_registers_again() {
    let mut h = three_brokers();
    h.create_topics(vec![topic("rf3", 3, 3), topic("rf1", 3, 1)]);
    let led_by_2 = |h: &Harness, t: &str| {
        (0..3)
            .filter(|&p| h.partition(t, p).leader == 2)
            .collect::<Vec<_>>()
    };
    let alone: Vec<i32> = led_by_2(&h, "rf1");
    assert!(!led_by_2(&h, "rf3").is_empty() || !alone.is_empty());
    let epoch = h.image.broker(2).unwrap().epoch;
    let records = h.ctl.unregister_broker(&h.image, 2).unwrap();
    h.apply(&records);
    assert!(h.image.broker(2).is_none());
    assert!(led_by_2(&h, "rf3").is_empty() && led_by_2(&h, "rf1").is_empty());
    for p in 0..3 {
        let rf3 = h.partition("rf3", p);
        assert!(!rf3.isr.contains(&2) && rf3.leader != NO_LEADER, "{rf3:?}");
    }
    // A partition whose only replica was broker 2 keeps it as its last ISR member, leaderless.
    for p in alone {
        let rf1 = h.partition("rf1", p);
        assert_eq!((rf1.leader, rf1.isr.to_vec()), (NO_LEADER, vec![2]));
    }
    // Its session is gone: no fencing of a broker that is not there, and its heartbeats are
    // stale (Kafka's brokers go on sending them; Samsa's register again).
    h.advance(60_000);
    h.heartbeat(1);
    h.heartbeat(3);
    h.tick();
    let stale = h
        .heartbeat_with(BrokerHeartbeatRequest {
            broker_id: 2,
            broker_epoch: epoch,
            current_metadata_offset: h.offset - 1,
            want_fence: false,
            want_shut_down: false,
        })
        .unwrap_err();
    assert_eq!(stale.error_code(), code(ResponseError::StaleBrokerEpoch));
    // Registering again (the same incarnation or a new one) makes a new registration.
    let again = h.start_broker(2, 1);
    assert!(again > epoch);
    assert_eq!(h.image.brokers().len(), 3);
}

#[test]
fn producer_ids_are_handed_out_in_blocks_of_1000() {
    let mut h = three_brokers();
    let epoch = h.image.broker(2).unwrap().epoch;
    for first in [0, 1000, 2000] {
        let (records, block) = h.ctl.allocate_producer_ids(&h.image, 2, epoch).unwrap();
        assert_eq!(
            block,
            ProducerIdsBlock {
                first_producer_id: first,
                size: 1000
            }
        );
        h.apply(&records);
        assert_eq!(h.image.next_producer_id(), first + 1000);
    }
    let e = h
        .ctl
        .allocate_producer_ids(&h.image, 2, epoch + 1)
        .unwrap_err();
    assert_eq!(e.error_code(), 77);
}

#[test]
fn directory_ids_below_100_are_reserved_and_100_is_not() {
    let mut h = three_brokers();
    let mut r = registration(4, 1);
    r.log_dirs = vec![Uuid::from_u64_pair(0, 99)];
    let e = h.register(r).unwrap_err();
    assert_eq!(e.error_code(), ResponseError::InvalidRegistration.code());
    let mut r = registration(4, 1);
    r.log_dirs = vec![Uuid::from_u64_pair(0, 100)];
    assert!(h.register(r).is_ok());
}

#[test]
fn a_new_incarnation_is_unfenced_only_once_it_has_applied_its_own_record() {
    // The new registration's record comes after the partition changes that take the old
    // incarnation out of its partitions: the broker must have applied that record itself,
    // not just the batch's first offset.
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 3, 3)]);
    for _ in 0..4 {
        h.advance(3_000);
        h.heartbeat(1);
        h.heartbeat(3);
    }
    let offset = h.offset;
    let (records, reply) = h
        .ctl
        .register_broker(h.now, &h.image, offset, registration(2, 2))
        .unwrap();
    assert!(
        records.len() > 1,
        "partition changes come first: {records:?}"
    );
    let record_offset = offset + records.len() as i64 - 1;
    h.apply(&records);
    let heartbeat = |h: &mut Harness, applied: i64| {
        h.heartbeat_with(BrokerHeartbeatRequest {
            broker_id: 2,
            broker_epoch: reply.broker_epoch,
            current_metadata_offset: applied,
            want_fence: false,
            want_shut_down: false,
        })
        .unwrap()
        .1
    };
    assert!(heartbeat(&mut h, record_offset - 1).is_fenced);
    assert!(!heartbeat(&mut h, record_offset).is_fenced);
}

#[test]
fn an_unfenced_broker_wanting_both_fence_and_shutdown_is_told_to_shut_down_at_once() {
    // Kafka's SHUTDOWN_NOW, even while it leads partitions: it asked to be fenced too.
    let mut h = three_brokers();
    h.create_topics(vec![topic("t", 3, 3)]);
    let leader = h.partition("t", 0).leader;
    let epoch = h.image.broker(leader).unwrap().epoch;
    let (_, reply) = h
        .heartbeat_with(BrokerHeartbeatRequest {
            broker_id: leader,
            broker_epoch: epoch,
            current_metadata_offset: h.offset - 1,
            want_fence: true,
            want_shut_down: true,
        })
        .unwrap();
    assert!(reply.should_shut_down, "{reply:?}");
}

#[test]
fn new_partitions_put_each_replica_in_its_brokers_only_log_directory() {
    let mut h = three_brokers();
    // Broker 4 registers two directories: the broker chooses (UNASSIGNED).
    let mut r = registration(4, 1);
    r.log_dirs = vec![log_dir(4, 1), log_dir(4, 2)];
    h.register(r).unwrap();
    h.heartbeat(4);
    h.heartbeat(4);
    h.create_topics(vec![topic("t", 8, 3)]);
    let mut seen_unassigned = false;
    for p in 0..8 {
        let p = h.partition("t", p);
        assert_eq!(p.directories.len(), p.replicas.len(), "{p:?}");
        for (b, d) in p.replicas.iter().zip(p.directories.iter()) {
            if *b == 4 {
                assert_eq!(*d, super::topics::DIRECTORY_UNASSIGNED);
                seen_unassigned = true;
            } else {
                assert_eq!(*d, log_dir(*b, 1), "broker {b}'s only directory");
            }
        }
    }
    assert!(seen_unassigned, "broker 4 holds a replica somewhere");
}

#[test]
fn topic_ids_are_version_4_never_reserved_never_dash_first_and_unique() {
    let mut h = three_brokers();
    let names: Vec<String> = (0..300).map(|i| format!("t{i}")).collect();
    h.create_topics(names.iter().map(|n| topic(n, 1, 1)).collect());
    let mut ids = std::collections::HashSet::new();
    for n in &names {
        let id = h.image.topic_by_name(n).unwrap().id;
        assert_eq!(id.get_version_num(), 4, "{id}");
        assert!(
            id.as_bytes()[0] >> 2 != 62,
            "base64 would start with '-': {id}"
        );
        assert!(ids.insert(id), "{id} twice");
    }
}
