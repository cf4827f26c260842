//! ElectLeaders, preferred rebalancing and unclean elections: each election type and each of
//! Kafka's answers, and which elections are noted for the runtime to count and log.

use kafka_protocol::ResponseError;

use super::tests::{alter_request, cfg, three_brokers, three_brokers_with, topic, Harness};
use super::*;
use crate::metadata::image::{CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC};
use crate::partition_change::NO_LEADER;

const UNCLEAN_KEY: &str = "unclean.leader.election.enable";

fn request(election_type: i8, partitions: &[(&str, &[i32])]) -> ElectLeadersRequest {
    ElectLeadersRequest {
        election_type,
        topic_partitions: Some(
            partitions
                .iter()
                .map(|(t, ps)| ElectLeadersTopic {
                    topic: t.to_string(),
                    partitions: ps.to_vec(),
                })
                .collect(),
        ),
    }
}

/// Runs ElectLeaders and applies its records; the answers as (topic, partition, code).
fn elect(h: &mut Harness, request: &ElectLeadersRequest) -> Vec<(String, i32, i16)> {
    let (records, results) = h.ctl.elect_leaders(&h.image, request).expect("active");
    h.apply(&records);
    results
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.topic.clone(), p.partition_id, p.error_code))
        })
        .collect()
}

/// An election for partition 0 of `t` that changes nothing: its (code, message).
fn refused(h: &mut Harness, election_type: i8, t: &str) -> (i16, String) {
    let (records, results) = h
        .ctl
        .elect_leaders(&h.image, &request(election_type, &[(t, &[0])]))
        .unwrap();
    assert!(records.is_empty(), "{records:?}");
    let p = &results[0].partitions[0];
    (p.error_code, p.error_message.clone().unwrap_or_default())
}

fn preferred(h: &mut Harness, t: &str, p: i32) -> i16 {
    elect(h, &request(ELECTION_TYPE_PREFERRED, &[(t, &[p])]))[0].2
}

fn unclean(h: &mut Harness, t: &str, p: i32) -> i16 {
    elect(h, &request(ELECTION_TYPE_UNCLEAN, &[(t, &[p])]))[0].2
}

/// Creates `name` with one partition on `replicas` (the first preferred), and `configs`.
fn create(h: &mut Harness, name: &str, replicas: &[NodeId], configs: &[(&str, &str)]) {
    let mut t = topic(name, -1, -1);
    t.assignments = vec![(0, replicas.to_vec())];
    t.configs = configs
        .iter()
        .map(|(k, v)| (k.to_string(), Some(v.to_string())))
        .collect();
    assert_eq!(h.create_topics(vec![t])[0].error_code, 0);
}

/// The partition's leader asks for `isr` (AlterPartition).
fn set_isr(h: &mut Harness, name: &str, isr: &[NodeId]) {
    let request = alter_request(h, name, 0, isr);
    let (records, results) = h.ctl.alter_partition(&h.image, &request).unwrap();
    assert_eq!(results[0].partitions[0].error_code, 0, "{results:?}");
    h.apply(&records);
}

fn heartbeat(h: &mut Harness, broker: NodeId, want_fence: bool, want_shut_down: bool) {
    let req = BrokerHeartbeatRequest {
        broker_id: broker,
        broker_epoch: h.image.broker(broker).unwrap().epoch,
        current_metadata_offset: h.offset - 1,
        want_fence,
        want_shut_down,
    };
    h.heartbeat_with(req).expect("heartbeat accepted");
}

/// Broker 1 is fenced and comes back; partition 0 of `name` (replicas `[1, 2, 3]`) is then led
/// by another broker with 1 back in the ISR.
fn led_elsewhere(h: &mut Harness, name: &str) {
    create(h, name, &[1, 2, 3], &[]);
    heartbeat(h, 1, true, false);
    heartbeat(h, 1, false, false);
    let p = h.partition(name, 0);
    assert_ne!(p.leader, 1);
    let mut isr = p.isr.to_vec();
    isr.push(1);
    set_isr(h, name, &isr);
    h.ctl.take_elections();
}

/// Partition 0 of `name` on `[leader, follower]` with only the leader in sync, then the leader
/// fenced: no leader (unless the topic allows unclean elections), and the follower live but
/// out of sync.
fn isr_lost(
    h: &mut Harness,
    name: &str,
    [leader, follower]: [NodeId; 2],
    configs: &[(&str, &str)],
) {
    create(h, name, &[leader, follower], configs);
    set_isr(h, name, &[leader]);
    heartbeat(h, leader, true, false);
}

#[test]
fn preferred_election_moves_leadership_back_and_bumps_the_leader_epoch() {
    let mut h = three_brokers();
    led_elsewhere(&mut h, "t");
    let before = h.partition("t", 0);
    assert_eq!(preferred(&mut h, "t", 0), 0);
    let after = h.partition("t", 0);
    assert_eq!(after.leader, 1);
    assert_eq!(after.leader_epoch, before.leader_epoch + 1);
    assert_eq!(after.isr, before.isr, "the ISR is unchanged");
    assert_eq!(
        h.ctl.take_elections(),
        vec![LeaderElection {
            topic: "t".into(),
            partition: 0,
            kind: ElectionKind::Preferred,
            leader: 1,
            previous_leader: before.leader,
            previous_isr: before.isr.to_vec(),
        }]
    );
    // Asked again: the preferred replica already leads.
    assert_eq!(
        refused(&mut h, ELECTION_TYPE_PREFERRED, "t"),
        (
            ResponseError::ElectionNotNeeded.code(),
            "t-0: leader election not needed: broker 1 already leads".into()
        )
    );
    assert!(h.ctl.take_elections().is_empty());
}

#[test]
fn preferred_election_needs_the_preferred_replica_live_and_in_sync() {
    let mut h = three_brokers();
    led_elsewhere(&mut h, "t");
    // Out of the ISR: not available, whatever its liveness.
    let isr: Vec<NodeId> = h
        .partition("t", 0)
        .isr
        .iter()
        .copied()
        .filter(|&b| b != 1)
        .collect();
    set_isr(&mut h, "t", &isr);
    assert_eq!(
        refused(&mut h, ELECTION_TYPE_PREFERRED, "t"),
        (
            ResponseError::PreferredLeaderNotAvailable.code(),
            "t-0: the preferred replica 1 cannot lead: it is not in the ISR".into()
        )
    );
    // In the ISR (its last member) but fenced: not available either.
    let mut h = three_brokers();
    isr_lost(&mut h, "u", [1, 2], &[]);
    assert_eq!(
        refused(&mut h, ELECTION_TYPE_PREFERRED, "u").1,
        "u-0: the preferred replica 1 cannot lead: it is fenced, shutting down or not registered"
    );
}

#[test]
fn unknown_topics_and_partitions_get_kafkas_answer() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2, 3], &[]);
    for election_type in [ELECTION_TYPE_PREFERRED, ELECTION_TYPE_UNCLEAN] {
        let (records, results) = h
            .ctl
            .elect_leaders(
                &h.image,
                &request(election_type, &[("nope", &[0]), ("t", &[7])]),
            )
            .unwrap();
        assert!(records.is_empty());
        let unknown = ResponseError::UnknownTopicOrPartition.code();
        let answers: Vec<(i16, Option<&str>)> = results
            .iter()
            .map(|t| {
                let p = &t.partitions[0];
                (p.error_code, p.error_message.as_deref())
            })
            .collect();
        assert_eq!(
            answers,
            vec![
                (unknown, Some("No such topic as nope")),
                (unknown, Some("No such partition as t-7")),
            ]
        );
    }
}

#[test]
fn an_unknown_election_type_is_refused_whole_with_invalid_request() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2, 3], &[]);
    let e = h
        .ctl
        .elect_leaders(&h.image, &request(2, &[("t", &[0])]))
        .unwrap_err();
    assert_eq!(e, ControllerError::UnknownElectionType(2));
    assert_eq!(e.error_code(), ResponseError::InvalidRequest.code());
    assert_eq!(e.to_string(), "Unknown election type 2");
}

#[test]
fn an_inactive_controller_elects_nothing() {
    let mut h = three_brokers();
    h.ctl.deactivate();
    let e = h
        .ctl
        .elect_leaders(&h.image, &request(ELECTION_TYPE_PREFERRED, &[]))
        .unwrap_err();
    assert_eq!(e, ControllerError::NotController);
}

#[test]
fn unclean_election_is_not_needed_while_the_partition_has_a_leader() {
    let mut h = three_brokers();
    create(&mut h, "t", &[1, 2], &[]);
    set_isr(&mut h, "t", &[1]);
    assert_eq!(
        unclean(&mut h, "t", 0),
        ResponseError::ElectionNotNeeded.code()
    );
    assert_eq!(h.partition("t", 0).leader, 1);
}

#[test]
fn unclean_election_elects_a_live_replica_outside_the_isr_when_asked() {
    let mut h = three_brokers();
    isr_lost(&mut h, "t", [1, 2], &[]);
    let lost = h.partition("t", 0);
    assert_eq!((lost.leader, &lost.isr[..]), (NO_LEADER, &[1][..]));
    assert!(
        h.ctl.take_elections().is_empty(),
        "unclean elections are off: fencing left the partition without a leader"
    );
    // PREFERRED cannot help: broker 1 is fenced.
    assert_eq!(
        preferred(&mut h, "t", 0),
        ResponseError::PreferredLeaderNotAvailable.code()
    );
    // UNCLEAN can, though the topic does not allow unclean elections: the caller asked.
    assert_eq!(unclean(&mut h, "t", 0), 0);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, &p.isr[..]), (2, &[2][..]));
    assert_eq!(p.leader_epoch, lost.leader_epoch + 1);
    assert_eq!(
        p.leader_recovery_state, 1,
        "recovering from an unclean election"
    );
    assert_eq!(
        h.ctl.take_elections(),
        vec![LeaderElection {
            topic: "t".into(),
            partition: 0,
            kind: ElectionKind::Unclean,
            leader: 2,
            previous_leader: NO_LEADER,
            previous_isr: vec![1],
        }]
    );
    assert_eq!(
        unclean(&mut h, "t", 0),
        ResponseError::ElectionNotNeeded.code()
    );
}

#[test]
fn unclean_election_with_no_live_replica_is_eligible_leaders_not_available() {
    let mut h = three_brokers();
    isr_lost(&mut h, "t", [1, 2], &[]);
    heartbeat(&mut h, 2, true, false);
    assert_eq!(
        refused(&mut h, ELECTION_TYPE_UNCLEAN, "t"),
        (
            ResponseError::EligibleLeadersNotAvailable.code(),
            "t-0: no eligible leader: none of the 2 replica(s) is live".into()
        )
    );
}

#[test]
fn every_partition_lists_only_those_that_needed_an_election() {
    let mut h = three_brokers();
    led_elsewhere(&mut h, "moved");
    create(&mut h, "home", &[2, 3, 1], &[]);
    isr_lost(&mut h, "lost", [3, 2], &[]);
    let all = ElectLeadersRequest {
        election_type: ELECTION_TYPE_PREFERRED,
        topic_partitions: None,
    };
    let answers = elect(&mut h, &all);
    // Every topic is answered, in name order; "home" needed nothing, "lost" cannot be helped.
    assert_eq!(
        answers,
        vec![
            (
                "lost".into(),
                0,
                ResponseError::PreferredLeaderNotAvailable.code()
            ),
            ("moved".into(), 0, 0),
        ]
    );
    let (_, results) = h.ctl.elect_leaders(&h.image, &all).unwrap();
    let topics: Vec<(&str, usize)> = results
        .iter()
        .map(|t| (t.topic.as_str(), t.partitions.len()))
        .collect();
    assert_eq!(topics, vec![("home", 0), ("lost", 1), ("moved", 0)]);
    assert_eq!(h.partition("moved", 0).leader, 1);
    // UNCLEAN for everything: only the leaderless partition.
    let answers = elect(
        &mut h,
        &ElectLeadersRequest {
            election_type: ELECTION_TYPE_UNCLEAN,
            topic_partitions: None,
        },
    );
    assert_eq!(answers, vec![("lost".into(), 0, 0)]);
    let p = h.partition("lost", 0);
    assert_eq!((p.leader, &p.isr[..]), (2, &[2][..]));
}

#[test]
fn a_partition_named_twice_is_elected_once() {
    let mut h = three_brokers();
    led_elsewhere(&mut h, "t");
    let (records, results) = h
        .ctl
        .elect_leaders(
            &h.image,
            &request(ELECTION_TYPE_PREFERRED, &[("t", &[0, 0]), ("t", &[0])]),
        )
        .unwrap();
    assert_eq!(records.len(), 1);
    let codes: Vec<i16> = results
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect();
    let not_needed = ResponseError::ElectionNotNeeded.code();
    assert_eq!(codes, vec![0, not_needed, not_needed]);
    h.apply(&records);
}

#[test]
fn fencing_elects_uncleanly_only_where_the_topic_allows_it() {
    let mut h = three_brokers();
    isr_lost(&mut h, "strict", [1, 2], &[]);
    assert!(h.ctl.take_elections().is_empty());
    assert_eq!(h.partition("strict", 0).leader, NO_LEADER);

    let mut h = three_brokers();
    isr_lost(&mut h, "lenient", [1, 2], &[(UNCLEAN_KEY, "true")]);
    let p = h.partition("lenient", 0);
    assert_eq!((p.leader, &p.isr[..]), (2, &[2][..]));
    let noted = h.ctl.take_elections();
    assert_eq!(noted.len(), 1);
    assert_eq!(
        (noted[0].kind, noted[0].leader, noted[0].previous_leader),
        (ElectionKind::Unclean, 2, 1)
    );
}

#[test]
fn the_cluster_wide_broker_default_enables_unclean_elections_unless_the_topic_says_no() {
    let mut h = three_brokers();
    let set = |resource_type, name: &str, value: &str| IncrementalAlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs: vec![AlterableConfig {
            name: UNCLEAN_KEY.into(),
            operation: AlterConfigOp::Set as i8,
            value: Some(value.into()),
        }],
    };
    let (records, _) = h
        .ctl
        .incremental_alter_configs(
            &h.image,
            vec![set(CONFIG_RESOURCE_BROKER, "", "true")],
            false,
        )
        .unwrap();
    h.apply(&records);
    create(&mut h, "default", &[1, 2], &[]);
    create(&mut h, "strict", &[1, 2], &[(UNCLEAN_KEY, "false")]);
    for t in ["default", "strict"] {
        set_isr(&mut h, t, &[1]);
    }
    heartbeat(&mut h, 1, true, false);
    assert_eq!(h.partition("default", 0).leader, 2);
    assert_eq!(h.partition("strict", 0).leader, NO_LEADER);
    let noted: Vec<String> = h
        .ctl
        .take_elections()
        .into_iter()
        .map(|e| e.topic)
        .collect();
    assert_eq!(noted, vec!["default".to_string()]);
    // The active controller's own broker config comes before the cluster-wide default.
    let mut c = cfg();
    c.node_id = 3;
    let mut h = three_brokers_with(c);
    let (records, _) = h
        .ctl
        .incremental_alter_configs(
            &h.image,
            vec![
                set(CONFIG_RESOURCE_BROKER, "", "true"),
                set(CONFIG_RESOURCE_BROKER, "3", "false"),
            ],
            false,
        )
        .unwrap();
    h.apply(&records);
    isr_lost(&mut h, "node", [1, 2], &[]);
    assert_eq!(h.partition("node", 0).leader, NO_LEADER);
    // The static default (`unclean.leader.election.enable` in the controller's config).
    let mut c = cfg();
    c.unclean_leader_election_enable = true;
    let mut h = three_brokers_with(c);
    isr_lost(&mut h, "static", [1, 2], &[]);
    assert_eq!(h.partition("static", 0).leader, 2);
}

#[test]
fn controlled_shutdown_elects_uncleanly_where_the_topic_allows_it() {
    let mut h = three_brokers();
    create(&mut h, "lenient", &[1, 2], &[(UNCLEAN_KEY, "true")]);
    create(&mut h, "strict", &[1, 3], &[]);
    set_isr(&mut h, "lenient", &[1]);
    set_isr(&mut h, "strict", &[1]);
    heartbeat(&mut h, 1, false, true);
    assert!(h.image.broker(1).unwrap().in_controlled_shutdown);
    let p = h.partition("lenient", 0);
    assert_eq!((p.leader, &p.isr[..]), (2, &[2][..]));
    let p = h.partition("strict", 0);
    assert_eq!((p.leader, &p.isr[..]), (NO_LEADER, &[1][..]));
    let noted = h.ctl.take_elections();
    assert_eq!(noted.len(), 1);
    assert_eq!(
        (noted[0].topic.as_str(), noted[0].kind),
        ("lenient", ElectionKind::Unclean)
    );
}

#[test]
fn leaderless_partitions_get_unclean_leaders_on_the_interval_once_their_topic_allows_it() {
    let mut c = cfg();
    c.unclean_leader_election_interval_ms = Some(60_000);
    let mut h = three_brokers_with(c);
    isr_lost(&mut h, "t", [1, 2], &[]);
    h.advance(60_000);
    for b in 2..=3 {
        heartbeat(&mut h, b, false, false);
    }
    assert!(h.tick().is_empty(), "the topic does not allow it yet");
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    let (records, _) = h
        .ctl
        .incremental_alter_configs(
            &h.image,
            vec![IncrementalAlterConfigsResource {
                resource_type: CONFIG_RESOURCE_TOPIC,
                resource_name: "t".into(),
                configs: vec![AlterableConfig {
                    name: UNCLEAN_KEY.into(),
                    operation: AlterConfigOp::Set as i8,
                    value: Some("true".into()),
                }],
            }],
            false,
        )
        .unwrap();
    h.apply(&records);
    assert!(h.tick().is_empty(), "not before the interval");
    assert!(h.ctl.next_deadline().unwrap() > h.now);
    h.advance(60_000);
    for b in 2..=3 {
        heartbeat(&mut h, b, false, false);
    }
    assert_eq!(h.tick().len(), 1);
    assert_eq!(h.partition("t", 0).leader, 2);
    assert_eq!(h.ctl.take_elections()[0].kind, ElectionKind::Unclean);
}

#[test]
fn rebalancing_notes_its_elections_as_preferred() {
    let mut c = cfg();
    c.leader_imbalance_check_interval_ms = Some(1_000);
    let mut h = three_brokers_with(c);
    led_elsewhere(&mut h, "t");
    h.advance(1_000);
    for b in 1..=3 {
        heartbeat(&mut h, b, false, false);
    }
    assert_eq!(h.tick().len(), 1);
    assert_eq!(h.partition("t", 0).leader, 1);
    let noted = h.ctl.take_elections();
    assert_eq!(noted.len(), 1);
    assert_eq!(
        (noted[0].kind, noted[0].leader),
        (ElectionKind::Preferred, 1)
    );
}

#[test]
fn without_auto_rebalance_leadership_stays_where_failover_put_it() {
    let mut h = three_brokers();
    assert_eq!(h.ctl.config().leader_imbalance_check_interval_ms, None);
    led_elsewhere(&mut h, "t");
    let leader = h.partition("t", 0).leader;
    h.advance(3_600_000);
    for b in 1..=3 {
        heartbeat(&mut h, b, false, false);
    }
    while !h.tick().is_empty() {}
    assert_eq!(h.partition("t", 0).leader, leader);
}
