//! Configs, ACLs, SCRAM credentials and feature levels on a cluster of three real `samsa`
//! processes: what one broker changes (forwarded to the active controller, which is another
//! node) every broker then describes and applies alike, and a restart of every node keeps it.
//! One cluster for the whole file (each start costs seconds on two cores): the steps run in
//! order in one test.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{BrokerOptions, Cluster};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;

const TIMEOUT: Duration = Duration::from_secs(20);

/// An authorizer that allows what no ACL names (so the steps need no ACLs of their own),
/// quick fencing, and retention checked every 100 ms.
fn options() -> BrokerOptions {
    BrokerOptions::default()
        .prop(
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        )
        .prop("allow.everyone.if.no.acl.found", "true")
        .prop("broker.session.timeout.ms", 3000)
        .prop("broker.heartbeat.interval.ms", 500)
        .prop("log.retention.check.interval.ms", 100)
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Polls `f` until it gives `Some`, for at most [`TIMEOUT`]; `what` names it on failure.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} within {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// DescribeConfigs of one resource as `node` answers it: name -> (value, source).
fn describe_configs(
    node: &Broker,
    resource_type: i8,
    name: &str,
) -> BTreeMap<String, (Option<String>, i8)> {
    let mut res = describe_configs_request::DescribeConfigsResource::default();
    res.resource_type = resource_type;
    res.resource_name = s(name);
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![res];
    let resp: DescribeConfigsResponse = raw_request(node, ApiKey::DescribeConfigs, 4, &req);
    let r = &resp.results[0];
    assert_eq!(
        r.error_code, 0,
        "{resource_type}/{name} from node {}: {r:?}",
        node.port
    );
    r.configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                (c.value.as_ref().map(|v| v.to_string()), c.config_source),
            )
        })
        .collect()
}

/// The leader of partition 0 of `topic`, as `node` says.
fn leader(node: &Broker, topic: &str) -> i32 {
    let m = metadata(node, Some(&[topic]));
    m.topics[0].partitions[0].leader_id.0
}

/// The SCRAM credentials `node` describes for `user`: (mechanism, iterations), or the error.
fn scram_credentials(node: &Broker, user: &str) -> Result<Vec<(i8, i32)>, i16> {
    let mut u = describe_user_scram_credentials_request::UserName::default();
    u.name = s(user);
    let mut req = DescribeUserScramCredentialsRequest::default();
    req.users = Some(vec![u]);
    let resp: DescribeUserScramCredentialsResponse =
        raw_request(node, ApiKey::DescribeUserScramCredentials, 0, &req);
    let r = &resp.results[0];
    if r.error_code != 0 {
        return Err(r.error_code);
    }
    Ok(r.credential_infos
        .iter()
        .map(|i| (i.mechanism, i.iterations))
        .collect())
}

/// The `metadata.version` `node`'s ApiVersions reports as finalized.
fn metadata_version(node: &Broker) -> Option<i16> {
    let r: ApiVersionsResponse = raw_request(node, ApiKey::ApiVersions, 3, &api_versions_request());
    r.finalized_features
        .iter()
        .find(|f| f.name.as_str() == "metadata.version")
        .map(|f| f.max_version_level)
}

/// Every node has the state of the steps below (after they ran, and after a restart of all).
fn every_node_has_it(cluster: &Cluster, guarded_leader: usize) {
    let topic = describe_configs(&cluster.nodes[0], 2, "configured");
    assert_eq!(
        topic["retention.ms"],
        (Some("3600000".into()), 1),
        "DYNAMIC_TOPIC_CONFIG"
    );
    assert_eq!(topic["cleanup.policy"], (Some("compact".into()), 1));
    for node in &cluster.nodes {
        eventually(
            &format!("node {} describes the topic alike", node.port),
            || (describe_configs(node, 2, "configured") == topic).then_some(()),
        );
        eventually(
            &format!("node {} knows alice's credential", node.port),
            || (scram_credentials(node, "alice") == Ok(vec![(1, 8192)])).then_some(()),
        );
        // The cluster-wide default reaches each broker's own configuration.
        let id = (cluster
            .nodes
            .iter()
            .position(|n| n.port == node.port)
            .unwrap()
            + 1)
        .to_string();
        eventually(&format!("node {id} takes the cluster default"), || {
            let own = describe_configs(node, 4, &id);
            (own["log.retention.ms"] == (Some("3600000".into()), 3)).then_some(())
        });
    }
    // The ACL is enforced where the partition's leader is.
    eventually("the DENY is enforced by the topic's leader", || {
        (produce_one(&cluster.nodes[guarded_leader], "guarded")
            == Err(RDKafkaErrorCode::TopicAuthorizationFailed))
        .then_some(())
    });
}

#[test]
fn configs_acls_and_credentials_changed_through_one_broker_hold_on_every_broker_and_across_a_restart(
) {
    let mut cluster = Cluster::start_with(3, options());
    let (controller, _, _) = settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    // Changes go through brokers that are not the active controller: they are forwarded.
    let others: Vec<usize> = (0..3).filter(|&i| i + 1 != controller as usize).collect();
    let (through, other) = (others[0], others[1]);

    // A topic config altered through one broker: every broker describes it alike.
    create_topic(&cluster.nodes[0], "configured", 3, &[]);
    assert_eq!(
        set_configs(
            &cluster.nodes[through],
            2,
            "configured",
            &[("retention.ms", "3600000"), ("cleanup.policy", "compact")]
        ),
        (0, String::new())
    );
    // Answered once that broker's own image has it.
    let described = describe_configs(&cluster.nodes[through], 2, "configured");
    assert_eq!(described["retention.ms"], (Some("3600000".into()), 1));

    // An ACL created through one broker is enforced by another: the leader of "guarded".
    create_topic(&cluster.nodes[0], "guarded", 1, &[]);
    let guarded_leader = (leader(&cluster.nodes[0], "guarded") - 1) as usize;
    assert_eq!(
        produce_one(&cluster.nodes[guarded_leader], "guarded"),
        Ok(())
    );
    let creator = (0..3).find(|&i| i != guarded_leader).unwrap();
    let mut deny = create_acls_request::AclCreation::default();
    deny.resource_type = 2; // TOPIC
    deny.resource_name = s("guarded");
    deny.resource_pattern_type = 3; // LITERAL
    deny.principal = s("User:ANONYMOUS");
    deny.host = s("*");
    deny.operation = 4; // WRITE
    deny.permission_type = 2; // DENY
    let mut req = CreateAclsRequest::default();
    req.creations = vec![deny];
    let resp: CreateAclsResponse =
        raw_request(&cluster.nodes[creator], ApiKey::CreateAcls, 3, &req);
    assert_eq!(resp.results[0].error_code, 0, "{resp:?}");

    // A SCRAM credential altered through one broker is described by the others.
    let mut alice = alter_user_scram_credentials_request::ScramCredentialUpsertion::default();
    alice.name = s("alice");
    alice.mechanism = 1; // SCRAM-SHA-256
    alice.iterations = 8192;
    alice.salt = bytes::Bytes::from_static(b"alice-salt");
    alice.salted_password = bytes::Bytes::from_static(&[7; 32]);
    let mut req = AlterUserScramCredentialsRequest::default();
    req.upsertions = vec![alice];
    let resp: AlterUserScramCredentialsResponse = raw_request(
        &cluster.nodes[through],
        ApiKey::AlterUserScramCredentials,
        0,
        &req,
    );
    assert_eq!(resp.results[0].error_code, 0, "{resp:?}");

    // The cluster-wide default log.retention.ms (the empty BROKER name, which librdkafka and
    // kafka-python refuse to send: on the wire) deletes old segments on every broker.
    create_topic(&cluster.nodes[0], "aged", 3, &[("segment.bytes", "1024")]);
    let m = metadata(&cluster.nodes[0], Some(&["aged"]));
    let mut leaders: Vec<i32> = m.topics[0]
        .partitions
        .iter()
        .map(|p| p.leader_id.0)
        .collect();
    leaders.sort();
    assert_eq!(leaders, vec![1, 2, 3], "a partition on each broker");
    produce_old_records(&cluster.nodes[0], "aged", 3, 20);
    assert_eq!(
        set_configs(
            &cluster.nodes[other],
            4,
            "",
            &[("log.retention.ms", "3600000")]
        ),
        (0, String::new())
    );
    let consumer: BaseConsumer = client_config(&cluster.nodes[0]).create().unwrap();
    for p in 0..3 {
        eventually(
            &format!("retention deletes old segments of partition {p}"),
            || {
                let (low, _) = consumer
                    .fetch_watermarks("aged", p, Duration::from_secs(5))
                    .ok()?;
                (low > 0).then_some(())
            },
        );
    }

    // Feature levels finalized through one broker are reported by the others.
    let mut update = update_features_request::FeatureUpdateKey::default();
    update.feature = s("metadata.version");
    update.max_version_level = 24; // 4.0-IV2: a safe downgrade from 4.0-IV3
    update.upgrade_type = 2;
    let mut req = UpdateFeaturesRequest::default();
    req.timeout_ms = 10_000;
    req.feature_updates = vec![update];
    let resp: UpdateFeaturesResponse =
        raw_request(&cluster.nodes[through], ApiKey::UpdateFeatures, 1, &req);
    assert_eq!(resp.error_code, 0, "{resp:?}");
    for node in &cluster.nodes {
        eventually("every broker reports metadata.version 24", || {
            (metadata_version(node) == Some(24)).then_some(())
        });
    }

    every_node_has_it(&cluster, guarded_leader);
    // And the refusals are still the forwarding broker's or the controller's, per resource.
    let (code, message) = set_configs(
        &cluster.nodes[through],
        2,
        "no-such-topic",
        &[("retention.ms", "1")],
    );
    assert_eq!(
        code,
        ResponseError::UnknownTopicOrPartition.code(),
        "{message}"
    );

    // A restart of every node (SIGKILL: nothing but the metadata log keeps it).
    for node in &mut cluster.nodes {
        node.kill();
    }
    // Together: a voter serves once a majority of voters runs and it has caught up.
    Broker::restart_together(&mut cluster.nodes.iter_mut().collect::<Vec<_>>());
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(30));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(30));
    }
    every_node_has_it(&cluster, guarded_leader);
    for node in &cluster.nodes {
        assert_eq!(metadata_version(node), Some(24));
    }
}
