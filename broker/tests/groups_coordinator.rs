//! The group coordinator on a real log directory, without sockets: groups and offsets are
//! written to `__consumer_offsets` and come back after a restart, compaction keeps only what matters,
//! offsets expire by Kafka's rules, and the memory budget holds.

use std::sync::Arc;

use bytes::Bytes;
use samsa_broker::broker::Broker;
use samsa_broker::config::BrokerConfig;
use samsa_broker::group::{
    CommitRequest, GroupError, GroupState, JoinReply, JoinRequest, OffsetToCommit, Protocol,
    SyncRequest, OFFSETS_TOPIC,
};
use samsa_broker::testing::JoinedBroker;

/// A broker that has joined its cluster, with `__consumer_offsets` created as a client's first
/// FindCoordinator creates it.
fn open(dir: &std::path::Path, extra: &[(&str, &str)]) -> JoinedBroker {
    let mut flags = vec![
        ("log.dirs".to_string(), dir.display().to_string()),
        (
            "group.initial.rebalance.delay.ms".to_string(),
            "0".to_string(),
        ),
        ("offsets.topic.num.partitions".to_string(), "3".to_string()),
    ];
    for (k, v) in extra {
        flags.push((k.to_string(), v.to_string()));
    }
    let config = BrokerConfig::load(None, vec![], flags).unwrap();
    let broker = samsa_broker::testing::open_joined(config).unwrap();
    runtime()
        .block_on(samsa_broker::internal_topics::ensure(
            &broker.node,
            &broker.groups.offsets_topic_spec(),
        ))
        .unwrap();
    broker
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A consumer-protocol subscription (version 0) to `topic`.
fn subscription(topic: &str) -> Bytes {
    let mut b = vec![0, 0, 0, 0, 0, 1];
    b.extend_from_slice(&(topic.len() as i16).to_be_bytes());
    b.extend_from_slice(topic.as_bytes());
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    Bytes::from(b)
}

fn join_request(member_id: &str, new_id: &str) -> JoinRequest {
    JoinRequest {
        member_id: member_id.into(),
        group_instance_id: None,
        client_id: "test".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![Protocol {
            name: "range".into(),
            metadata: subscription("t"),
        }],
        require_known_member_id: false,
        supports_skip_assignment: false,
        new_member_id: new_id.into(),
    }
}

/// A join as the server runs it, with the group coordinator's timer task beside it: a join
/// phase completes when its deadline fires there (at once with an initial rebalance delay of 0,
/// as Kafka's timer fires it).
async fn join(broker: &Arc<Broker>, group: &str, req: JoinRequest) -> JoinReply {
    let timers = tokio::spawn(broker.groups.clone().run_timers(broker.node.clone()));
    let joined = broker.groups.join(&broker.node, group, req).await;
    timers.abort();
    // Dropped before the join answers: the task holds the broker, whose directory lock a
    // restart in the same test takes again.
    let _ = timers.await;
    joined
}

/// One member, Stable in generation 1 with assignment "A".
async fn form_group(broker: &Arc<Broker>, group: &str) -> String {
    let joined = join(broker, group, join_request("", &format!("{group}-m1"))).await;
    assert_eq!(joined.error, None);
    let member = joined.member_id.clone();
    let synced = broker
        .groups
        .sync(
            &broker.node,
            group,
            SyncRequest {
                member_id: member.clone(),
                group_instance_id: None,
                generation_id: joined.generation_id,
                protocol_type: None,
                protocol_name: None,
                assignments: vec![(member.clone(), Bytes::from_static(b"A"))],
            },
        )
        .await;
    assert_eq!(synced.error, None);
    assert_eq!(synced.assignment, Bytes::from_static(b"A"));
    member
}

async fn commit(
    broker: &Arc<Broker>,
    group: &str,
    member: &str,
    generation: i32,
    partition: i32,
    offset: i64,
    metadata: &str,
) -> Result<(), GroupError> {
    let results = broker
        .groups
        .commit_offsets(
            &broker.node,
            CommitRequest {
                group_id: group.into(),
                generation_id: generation,
                member_id: member.into(),
                group_instance_id: None,
                retention_time_ms: -1,
                topics: vec![(
                    "t".into(),
                    vec![OffsetToCommit {
                        partition,
                        offset,
                        leader_epoch: 3,
                        metadata: Some(metadata.into()),
                    }],
                )],
                api_version: 8,
            },
        )
        .await?;
    results[0].1[0].1
}

fn fetched(broker: &Broker, group: &str, partition: i32) -> Option<(i64, String)> {
    let found = broker
        .groups
        .fetch_offsets(group, Some(vec![("t".into(), vec![partition])]))
        .unwrap();
    found[0].1[0]
        .1
        .as_ref()
        .map(|v| (v.offset, v.metadata.clone()))
}

#[test]
fn groups_and_offsets_come_back_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let member = {
        let broker = open(dir.path(), &[]);
        broker
            .node
            .topics
            .create("t", 2, 1, Default::default())
            .unwrap();
        rt.block_on(async {
            let member = form_group(&broker, "g").await;
            commit(&broker, "g", &member, 1, 0, 42, "meta")
                .await
                .unwrap();
            // A consumer without group management (generation -1) in another group.
            commit(&broker, "simple", "", -1, 1, 7, "").await.unwrap();
            member
        })
    };

    // The restarted broker has replayed its partitions before it is caught up (and serves).
    let broker = open(dir.path(), &[]);
    assert!(broker.node.topics.get(OFFSETS_TOPIC).unwrap().is_internal());
    let d = broker.groups.describe("g").unwrap();
    assert_eq!(d.state, GroupState::Stable);
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].member_id, member);
    assert_eq!(d.members[0].assignment, Bytes::from_static(b"A"));
    assert_eq!(fetched(&broker, "g", 0), Some((42, "meta".into())));
    assert_eq!(fetched(&broker, "g", 1), None);
    assert_eq!(fetched(&broker, "simple", 1), Some((7, String::new())));
    // The member carries on in its generation after the restart.
    assert_eq!(broker.groups.heartbeat("g", &member, None, 1), Ok(()));
    assert_eq!(
        broker.groups.heartbeat("g", &member, None, 2),
        Err(GroupError::IllegalGeneration)
    );
    let groups: Vec<String> = broker
        .groups
        .list()
        .unwrap()
        .into_iter()
        .map(|g| g.group_id)
        .collect();
    assert_eq!(groups, vec!["g".to_string(), "simple".to_string()]);
}

#[test]
fn compaction_keeps_the_latest_commit_and_deleted_groups_stay_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let settings = [
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.segment.bytes", "2048"),
    ];
    {
        let broker = open(dir.path(), &settings);
        broker
            .node
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        rt.block_on(async {
            for i in 0..400 {
                commit(&broker, "busy", "", -1, 0, i, "m").await.unwrap();
            }
            commit(&broker, "gone", "", -1, 0, 1, "").await.unwrap();
            broker
                .groups
                .delete_group(&broker.node, "gone")
                .await
                .unwrap();
            assert_eq!(
                broker.groups.delete_group(&broker.node, "gone").await,
                Err(GroupError::GroupIdNotFound)
            );
        });
        let p = broker.node.topics.get(OFFSETS_TOPIC).unwrap().partitions[0].clone();
        let before = p.with_log(|l| l.size_bytes());
        p.with_log(|l| l.compact(samsa_broker::util::now_ms()))
            .unwrap();
        let after = p.with_log(|l| l.size_bytes());
        assert!(
            after * 4 < before,
            "compaction dropped superseded commits: {before} -> {after} bytes"
        );
    }
    let broker = open(dir.path(), &settings);
    assert_eq!(fetched(&broker, "busy", 0), Some((399, "m".into())));
    assert_eq!(
        broker.groups.describe("gone").err(),
        Some(GroupError::GroupIdNotFound)
    );
    assert_eq!(fetched(&broker, "gone", 0), None);
}

#[test]
fn offsets_expire_once_the_group_is_empty_and_the_empty_group_is_then_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let broker = open(dir.path(), &[]);
    broker
        .node
        .topics
        .create("t", 2, 1, Default::default())
        .unwrap();
    const RETENTION_MS: i64 = 60_000;
    let member = rt.block_on(async {
        let member = form_group(&broker, "g").await;
        commit(&broker, "g", &member, 1, 0, 10, "").await.unwrap();
        commit(&broker, "simple", "", -1, 0, 5, "").await.unwrap();
        member
    });
    let now = samsa_broker::util::now_ms();
    // A Stable consumer group subscribed to "t" keeps its offsets of "t".
    assert_eq!(
        broker
            .groups
            .expire_offsets(&broker.node, now + 10 * RETENTION_MS, RETENTION_MS),
        (1, 1)
    );
    assert_eq!(fetched(&broker, "g", 0), Some((10, String::new())));
    // ... the simple group's offset expired with it (retention from its commit), and the
    // group, left empty, was deleted.
    assert_eq!(
        broker.groups.describe("simple").err(),
        Some(GroupError::GroupIdNotFound)
    );

    let results = broker
        .groups
        .leave(&broker.node, "g", &[(member, None)])
        .unwrap();
    assert_eq!(results, vec![Ok(())]);
    let emptied = samsa_broker::util::now_ms();
    assert_eq!(
        broker.groups.describe("g").unwrap().state,
        GroupState::Empty
    );
    assert_eq!(
        broker
            .groups
            .expire_offsets(&broker.node, emptied + RETENTION_MS - 1_000, RETENTION_MS),
        (0, 0)
    );
    assert_eq!(
        broker
            .groups
            .expire_offsets(&broker.node, emptied + RETENTION_MS + 1_000, RETENTION_MS),
        (1, 1)
    );
    assert_eq!(
        broker.groups.describe("g").err(),
        Some(GroupError::GroupIdNotFound)
    );

    // The tombstones make it stick across a restart.
    drop(broker);
    let broker = open(dir.path(), &[]);
    assert!(broker.groups.list().unwrap().is_empty());
}

#[test]
fn the_memory_budget_refuses_new_members_and_new_offsets_but_not_updates() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let broker = open(
        dir.path(),
        &[("group.coordinator.memory.max.bytes", "8000")],
    );
    broker
        .node
        .topics
        .create("t", 150, 1, Default::default())
        .unwrap();
    rt.block_on(async {
        let mut refused = None;
        for p in 0..150 {
            if let Err(e) = commit(&broker, "big", "", -1, p, 1, "").await {
                refused = Some((p, e));
                break;
            }
        }
        let (first_refused, e) = refused.expect("the budget ran out");
        assert_eq!(e, GroupError::CoordinatorNotAvailable);
        assert!(first_refused > 30, "{first_refused} offsets fit in 8 kB");
        // Offsets already held can still move.
        commit(&broker, "big", "", -1, 0, 2, "").await.unwrap();
        // New members (and groups) are refused.
        let joined = join(&broker, "another", join_request("", "x-1")).await;
        assert_eq!(joined.error, Some(GroupError::CoordinatorNotAvailable));
        // Deleting the group gives the memory back.
        broker
            .groups
            .delete_group(&broker.node, "big")
            .await
            .unwrap();
        assert!(
            broker.groups.memory_bytes() < 1_000,
            "{}",
            broker.groups.memory_bytes()
        );
        let joined = join(&broker, "another", join_request("", "x-1")).await;
        assert_eq!(joined.error, None);
    });
}

#[test]
fn durable_mode_acknowledges_group_writes_after_they_are_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let broker = open(dir.path(), &[("log.durable", "true")]);
    broker
        .node
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    rt.block_on(async {
        let member = form_group(&broker, "g").await;
        commit(&broker, "g", &member, 1, 0, 9, "").await.unwrap();
    });
    let p = broker.node.topics.get(OFFSETS_TOPIC).unwrap().partitions
        [broker.groups.partition_for("g") as usize]
        .clone();
    assert_eq!(
        p.high_watermark(),
        p.log_end_offset(),
        "acknowledged group records are flushed"
    );
    assert_eq!(fetched(&broker, "g", 0), Some((9, String::new())));
}
