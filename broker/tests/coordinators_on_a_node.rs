//! The coordinators' shells over a `Node` alone (`testing::NodeHarness`), without a `Broker`:
//! the group coordinator keeps its groups and offsets across a restart of the node, the
//! transaction coordinator built with a group coordinator makes a transactional offset
//! visible once the transaction commits, and the share coordinator keeps a share-partition's
//! state across a restart.

use std::collections::BTreeSet;
use std::path::Path;

use bytes::Bytes;
use samsa_broker::config::BrokerConfig;
use samsa_broker::group::{
    CommitRequest, GroupState, JoinRequest, OffsetToCommit, Protocol, SyncRequest, OFFSETS_TOPIC,
};
use samsa_broker::share::partition::{BatchSpan, Limit, ShareLimits};
use samsa_broker::share::ShareKey;
use samsa_broker::testing::{NodeHarness, Services};

/// A node on `dir` with `services`, and `__consumer_offsets` created (as a client's first
/// FindCoordinator creates it) when it runs the group coordinator.
fn open(dir: &Path, services: Services) -> NodeHarness {
    let flags = [
        ("log.dirs", dir.display().to_string()),
        ("group.initial.rebalance.delay.ms", "0".into()),
        ("offsets.topic.num.partitions", "3".into()),
        ("transaction.state.log.num.partitions", "3".into()),
    ];
    let flags = flags.map(|(k, v)| (k.to_string(), v)).to_vec();
    let config = BrokerConfig::load(None, vec![], flags).unwrap();
    let node = NodeHarness::open(config, services).unwrap();
    if services.groups || services.txn {
        runtime()
            .block_on(samsa_broker::internal_topics::ensure(
                node.node(),
                &node.groups().offsets_topic_spec(),
            ))
            .unwrap();
    }
    node
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const GROUPS: Services = Services {
    groups: true,
    txn: false,
    shares: false,
};

/// A consumer-protocol subscription (version 0) to `t`.
fn subscription() -> Bytes {
    let mut b = vec![0, 0, 0, 0, 0, 1, 0, 1, b't'];
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    Bytes::from(b)
}

/// A commit of `offset` for `t-0` in `group`, by `member` of `generation` (-1 and an empty
/// member: a consumer without group management).
fn commit_request(group: &str, member: &str, generation: i32, offset: i64) -> CommitRequest {
    CommitRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![(
            "t".into(),
            vec![OffsetToCommit {
                partition: 0,
                offset,
                leader_epoch: -1,
                metadata: Some("m".into()),
            }],
        )],
        api_version: 8,
    }
}

/// The offset `group` has committed for `t-0`, if any is visible.
fn committed(node: &NodeHarness, group: &str) -> Option<i64> {
    let found = node
        .groups()
        .fetch_offsets(group, Some(vec![("t".into(), vec![0])]))
        .unwrap();
    found[0].1[0].1.as_ref().map(|v| v.offset)
}

#[test]
fn the_group_coordinator_on_a_node_keeps_groups_and_offsets_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let member = {
        let node = open(dir.path(), GROUPS);
        node.node()
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        let groups = node.groups();
        rt.block_on(async {
            // The harness runs the coordinator's timers: the join completes by itself.
            let joined = groups
                .join(
                    node.node(),
                    "g",
                    JoinRequest {
                        member_id: String::new(),
                        group_instance_id: None,
                        client_id: "test".into(),
                        client_host: "/127.0.0.1".into(),
                        session_timeout_ms: 30_000,
                        rebalance_timeout_ms: 30_000,
                        protocol_type: "consumer".into(),
                        protocols: vec![Protocol {
                            name: "range".into(),
                            metadata: subscription(),
                        }],
                        require_known_member_id: false,
                        supports_skip_assignment: false,
                        new_member_id: "g-m1".into(),
                    },
                )
                .await;
            assert_eq!(joined.error, None);
            let member = joined.member_id.clone();
            let synced = groups
                .sync(
                    node.node(),
                    "g",
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
            let results = groups
                .commit_offsets(
                    node.node(),
                    commit_request("g", &member, joined.generation_id, 42),
                )
                .await
                .unwrap();
            assert_eq!(results[0].1[0].1, Ok(()));
            member
        })
    };

    // A new node on the same directory has replayed `__consumer_offsets` once it serves.
    let node = open(dir.path(), GROUPS);
    assert!(node.node().topics.get(OFFSETS_TOPIC).unwrap().is_internal());
    let d = node.groups().describe("g").unwrap();
    assert_eq!(d.state, GroupState::Stable);
    assert_eq!(d.members.len(), 1);
    assert_eq!(d.members[0].member_id, member);
    assert_eq!(d.members[0].assignment, Bytes::from_static(b"A"));
    assert_eq!(committed(&node, "g"), Some(42));
    assert_eq!(node.groups().heartbeat("g", &member, None, 1), Ok(()));
}

#[test]
fn a_transactional_offset_on_a_node_becomes_visible_when_its_transaction_commits() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(
        dir.path(),
        Services {
            txn: true,
            ..Services::default()
        },
    );
    node.node()
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    let (txn, groups) = (node.txn(), node.groups());
    runtime().block_on(async {
        samsa_broker::internal_topics::ensure(node.node(), &txn.state_topic_spec())
            .await
            .unwrap();
        let (pid, epoch) = txn
            .init_producer_id(node.node(), "app", 60_000, None)
            .await
            .unwrap();
        // AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
        let offsets: BTreeSet<(String, i32)> =
            [(OFFSETS_TOPIC.to_string(), groups.partition_for("g"))]
                .into_iter()
                .collect();
        txn.add_partitions(node.node(), "app", pid, epoch, &offsets, false)
            .await
            .unwrap();
        let results = groups
            .commit_txn_offsets(node.node(), commit_request("g", "", -1, 7), (pid, epoch))
            .await
            .unwrap();
        assert!(results[0].1[0].1.is_ok());
        assert_eq!(committed(&node, "g"), None, "pending until the commit");
        txn.end_txn(node.node(), "app", pid, epoch, true, false)
            .await
            .unwrap();
    });
    // The commit's marker in `__consumer_offsets` made the offset visible.
    assert_eq!(committed(&node, "g"), Some(7));
    let found = groups.fetch_offsets("g", None).unwrap();
    assert!(groups.unstable_partitions("g", &found).is_empty());
}

#[test]
fn the_share_coordinator_on_a_node_keeps_a_share_partitions_state_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let shares_only = Services {
        shares: true,
        ..Services::default()
    };
    let limits = ShareLimits {
        lock_ms: 30_000,
        delivery_limit: 5,
        max_in_flight: 100,
        dead_letter: false,
    };
    let (key, before) = {
        let node = open(dir.path(), shares_only);
        let topic = node
            .node()
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        let key = ShareKey {
            group: "sg".into(),
            topic_id: topic.id,
            partition: 0,
        };
        let leader_epoch = topic.partitions[0].leader_epoch();
        let shares = node.shares();
        let before = rt.block_on(async {
            // As the group coordinator does before it assigns the share-partition.
            shares.initialize_state(node.node(), &key, 0).await.unwrap();
            let h = shares
                .open_partition(node.node(), &key, limits, leader_epoch, || 3)
                .await
                .unwrap();
            {
                let now = samsa_broker::util::now_ms();
                let mut st = h.lock();
                let span = BatchSpan {
                    first: 3,
                    last: 6,
                    skip: false,
                };
                let acquired = st.sp.acquire(&"m".into(), &[span], 10, Limit::Batches, now);
                assert!(!acquired.is_empty());
                // Accept 3 and 4, reject 5; 6 stays acquired (persisted as available).
                st.sp.acknowledge("m", 3, 5, &[1, 1, 3], now).unwrap();
            }
            shares.persist(node.node(), &key).await.unwrap();
            let snapshot = h.lock().sp.snapshot();
            snapshot
        });
        (key, before)
    };

    let node = open(dir.path(), shares_only);
    let leader_epoch = node.node().topics.get("t").unwrap().partitions[0].leader_epoch();
    let after = rt.block_on(async {
        let h = node
            .shares()
            .open_partition(node.node(), &key, limits, leader_epoch, || {
                panic!("the start offset comes from the persisted state")
            })
            .await
            .unwrap();
        let snapshot = h.lock().sp.snapshot();
        snapshot
    });
    assert_eq!(after, before);
    assert_eq!(
        after.0, 6,
        "3 and 4 accepted, 5 rejected (archived): the start moved past them"
    );
}

#[test]
fn a_deleted_topics_committed_offsets_go_with_it_also_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    {
        let node = open(dir.path(), GROUPS);
        node.node()
            .topics
            .create("t", 1, 1, Default::default())
            .unwrap();
        let groups = node.groups();
        let results = rt
            .block_on(groups.commit_offsets(node.node(), commit_request("g", "", -1, 7)))
            .unwrap();
        assert_eq!(results[0].1[0].1, Ok(()));
        assert_eq!(committed(&node, "g"), Some(7));
        node.node().topics.delete("t").unwrap();
        // Kafka's onPartitionsDeleted: the offsets go, tombstoned; other topics' stay.
        assert_eq!(groups.delete_topic_offsets(node.node(), "t"), 1);
        assert_eq!(groups.delete_topic_offsets(node.node(), "t"), 0);
        assert_eq!(committed(&node, "g"), None);
    }
    // A topic made again under the name starts without them, also after a restart.
    let node = open(dir.path(), GROUPS);
    node.node()
        .topics
        .create("t", 1, 1, Default::default())
        .unwrap();
    assert_eq!(committed(&node, "g"), None);
}
