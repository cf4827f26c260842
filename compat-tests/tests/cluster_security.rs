//! TLS and SASL between the nodes of a real three-node cluster: brokers replicate over an
//! inter-broker listener that is SASL_SSL with SCRAM-SHA-512, and the quorum, brokers'
//! registrations and heartbeats and forwarded admin requests go over a controller listener that
//! is SASL_SSL with PLAIN and mutual TLS; clients use a plaintext listener. Certificates are made
//! here (rcgen): a CA and one certificate per node, SANs 127.0.0.1 and localhost, checked by the
//! connecting node (Kafka's default `ssl.endpoint.identification.algorithm=https`).
//!
//! With an authorizer, follower fetches are served to the brokers' SASL principal (a super
//! user) and refused to an anonymous client that claims to be a follower.
//!
//! SCRAM credentials live in the metadata, so the brokers' own credential is created once the
//! cluster runs (as Kafka's `kafka-storage format --add-scram` would have done it before): until
//! then followers are refused, say so in the log, and catch up as soon as it exists.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use compat_tests::{Broker, BrokerOptions, Cluster};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateAclsRequest, CreateAclsResponse, FetchRequest, FetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rdkafka::admin::TopicReplication;
use rdkafka::topic_partition_list::Offset;

const CONTROLLER_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"controller\" password=\"controller-secret\" user_controller=\"controller-secret\";";

fn broker_jaas(password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\" \
         password=\"{password}\";"
    )
}

/// A CA, and a keystore (key and certificate, PEM) per node signed by it.
fn pki(dir: &Path, nodes: usize) -> (PathBuf, Vec<PathBuf>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(DnType::CommonName, "samsa cluster CA");
    let ca = p.self_signed(&ca_key).unwrap();
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let stores = (1..=nodes)
        .map(|id| {
            let key = KeyPair::generate().unwrap();
            let mut p =
                CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
            p.distinguished_name = rcgen::DistinguishedName::new();
            p.distinguished_name
                .push(DnType::CommonName, format!("node-{id}"));
            let cert = p.signed_by(&key, &ca, &ca_key).unwrap();
            let path = dir.join(format!("node-{id}.pem"));
            std::fs::write(&path, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
            path
        })
        .collect();
    (ca_path, stores)
}

/// Three nodes (controllers and brokers) with the secured inter-broker and controller
/// listeners; the harness's `port` is the plaintext client listener.
fn start_secured_cluster(dir: &Path) -> (Cluster, Vec<u16>) {
    let n = 3;
    let (ca, stores) = pki(dir, n);
    let ports: Vec<[u16; 3]> = (0..n)
        .map(|_| [(); 3].map(|_| compat_tests::free_port()))
        .collect();
    let voters = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{}", i + 1, p[2]))
        .collect::<Vec<_>>()
        .join(",");
    let nodes: Vec<Broker> = (0..n)
        .map(|i| {
            let [client, internal, controller] = ports[i];
            let o = BrokerOptions {
                port: Some(client),
                ..Default::default()
            }
            .prop("node.id", i + 1)
            .prop(
                "listeners",
                format!(
                    "CLIENT://127.0.0.1:{client},INTERNAL://127.0.0.1:{internal},\
                     CONTROLLER://127.0.0.1:{controller}"
                ),
            )
            .prop(
                "listener.security.protocol.map",
                "CLIENT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL",
            )
            .prop("controller.listener.names", "CONTROLLER")
            .prop("controller.quorum.voters", &voters)
            .prop("inter.broker.listener.name", "INTERNAL")
            .prop("ssl.keystore.type", "PEM")
            .prop("ssl.keystore.location", stores[i].display())
            .prop("ssl.truststore.type", "PEM")
            .prop("ssl.truststore.location", ca.display())
            .prop("listener.name.controller.ssl.client.auth", "required")
            .prop(
                "listener.name.internal.sasl.enabled.mechanisms",
                "SCRAM-SHA-512",
            )
            .prop("listener.name.controller.sasl.enabled.mechanisms", "PLAIN")
            .prop("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512")
            .prop("sasl.mechanism.controller.protocol", "PLAIN")
            .prop(
                "listener.name.internal.scram-sha-512.sasl.jaas.config",
                broker_jaas("broker-secret"),
            )
            .prop(
                "listener.name.controller.plain.sasl.jaas.config",
                CONTROLLER_JAAS,
            )
            // KIP-368: sessions between nodes end every two seconds unless renewed.
            .prop("listener.name.internal.connections.max.reauth.ms", 2000)
            .prop("listener.name.controller.connections.max.reauth.ms", 2000)
            // The brokers' own principal is a super user; clients of the plaintext listener
            // (User:ANONYMOUS) are allowed where no ACL says otherwise.
            .prop(
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            )
            .prop("super.users", "User:broker")
            .prop("allow.everyone.if.no.acl.found", "true")
            .prop("broker.session.timeout.ms", 3000)
            .prop("broker.heartbeat.interval.ms", 500)
            .prop("replica.lag.time.max.ms", 3000);
            Broker::start_with(o)
        })
        .collect();
    let cluster_id = std::fs::read_to_string(nodes[0].data_dir.join("meta.properties"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("cluster.id=").map(str::to_string))
        .unwrap();
    let cluster = Cluster {
        nodes,
        voters,
        cluster_id,
        controller_only: 0,
    };
    (cluster, ports.iter().map(|p| p[2]).collect())
}

fn wait_for_log(cluster: &Cluster, what: &[&str], timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        for n in &cluster.nodes {
            if let Some(l) = n
                .log_lines()
                .into_iter()
                .find(|l| what.iter().all(|w| l.contains(w)))
            {
                return l;
            }
        }
        assert!(Instant::now() < deadline, "no node logged {what:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn deny_cluster_action_to_anonymous(node: &Broker) {
    let mut c = AclCreation::default();
    c.resource_type = 4; // cluster
    c.resource_name = StrBytes::from_static_str("kafka-cluster");
    c.resource_pattern_type = 3; // literal
    c.principal = StrBytes::from_static_str("User:ANONYMOUS");
    c.host = StrBytes::from_static_str("*");
    c.operation = 9; // CLUSTER_ACTION
    c.permission_type = 2; // deny
    let mut req = CreateAclsRequest::default();
    req.creations = vec![c];
    let resp: CreateAclsResponse = raw_request(node, ApiKey::CreateAcls, 3, &req);
    assert!(resp.results.iter().all(|r| r.error_code == 0), "{resp:?}");
}

/// The error of partition 0 of `topic` to a Fetch that names itself broker 3's, sent to
/// partition 0's leader on its plaintext listener (as User:ANONYMOUS), once the ACL is in force
/// there.
fn follower_fetch_error(cluster: &Cluster, topic: &str) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leader = acked::leaders_and_isrs(cluster, topic).expect("partitions")[0].0;
        let node = &cluster.nodes[(leader - 1) as usize];
        let mut p = FetchPartition::default();
        p.partition = 0;
        p.fetch_offset = 0;
        p.partition_max_bytes = 1 << 20;
        let mut t = FetchTopic::default();
        t.topic = TopicName(StrBytes::from_string(topic.into()));
        t.partitions = vec![p];
        let mut req = FetchRequest::default();
        req.replica_id = BrokerId(if leader == 3 { 2 } else { 3 });
        req.max_wait_ms = 0;
        req.max_bytes = 1 << 20;
        req.session_epoch = -1;
        req.topics = vec![t];
        let resp: FetchResponse = raw_request(node, ApiKey::Fetch, 12, &req);
        let code = resp.responses[0].partitions[0].error_code;
        if code != 0 || Instant::now() > deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn nodes_replicate_and_elect_over_sasl_ssl_with_scram_and_reach_controllers_with_plain_and_mtls() {
    let dir = tempfile::tempdir().unwrap();
    let (mut cluster, controller_ports) = start_secured_cluster(dir.path());
    // The quorum formed and every broker registered: over the controller listener.
    settled(&cluster.nodes[0], 3, 1, Duration::from_secs(60));
    for node in &cluster.nodes {
        wait_for_brokers(node, 3, Duration::from_secs(60));
    }
    // The controller listener speaks TLS only: a plaintext request is not answered.
    let mut s = TcpStream::connect(("127.0.0.1", controller_ports[0])).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = encode_request(
        ApiKey::ApiVersions,
        0,
        &kafka_protocol::messages::ApiVersionsRequest::default(),
    )
    .unwrap();
    let _ = s.write_all(&request);
    let mut answer = [0u8; 64];
    let n = s.read(&mut answer).unwrap_or(0);
    assert!(
        n == 0 || answer[..n].starts_with(&[0x15]),
        "a plaintext request on the TLS controller listener was answered: {:?}",
        &answer[..n]
    );

    // Followers of a new topic cannot fetch yet: the brokers' SCRAM credential does not exist.
    let topic = "secured";
    create_topic_in(
        &cluster.nodes[0].bootstrap(),
        topic,
        3,
        TopicReplication::Fixed(3),
        &[("min.insync.replicas", "2")],
    );
    let refused = wait_for_log(
        &cluster,
        &[
            "cannot open a secured connection",
            "refused broker with SCRAM-SHA-512",
        ],
        Duration::from_secs(60),
    );
    assert!(
        !refused.contains("broker-secret"),
        "a password in the log: {refused}"
    );

    // The credential, through the admin API on the client listener (forwarded to the
    // controllers over the secured controller listener).
    let mut cmd = Command::new(compat_tests::samsa_bin());
    cmd.args([
        "user",
        "scram-set",
        "--mechanism",
        "SCRAM-SHA-512",
        "--password",
        "broker-secret",
    ])
    .arg("--bootstrap")
    .arg(cluster.nodes[1].bootstrap())
    .arg("broker");
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(60)).unwrap();
    assert!(status.success(), "{out}\n{err}");
    wait_for_log(
        &cluster,
        &["connected to the other node after all"],
        Duration::from_secs(60),
    );
    // From here on a follower's fetch is served only to a principal with CLUSTER_ACTION: the
    // brokers' SASL principal, a super user. A fetch that claims to be a follower's from the
    // plaintext listener is refused.
    deny_cluster_action_to_anonymous(&cluster.nodes[0]);
    let refused = follower_fetch_error(&cluster, topic);
    assert_eq!(
        refused, 29,
        "TOPIC_AUTHORIZATION_FAILED for an anonymous follower fetch"
    );
    acked::wait_for_full_isr(&cluster, topic, 3, "once the brokers' credential exists");

    // acks=all records are replicated over SASL_SSL, and survive the loss of their leader.
    let records: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..300)
        .map(|i| {
            (
                Some(format!("k{i}").into_bytes()),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    let producer = producer(&cluster.nodes[0], &[("acks", "all")]);
    produce_all(&producer, topic, &records, None);
    drop(producer);
    acked::wait_for_full_isr(&cluster, topic, 3, "after the writes");
    cluster.nodes[0].kill();
    let survivor = &cluster.nodes[1];
    // The consumer hears of the dead node in the metadata and fails to reach it for a while:
    // those errors are expected, records are what counts.
    let consumer = assigned_consumer(survivor, topic, &[0, 1, 2], Offset::Beginning);
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut got = Vec::new();
    while got.len() < records.len() && Instant::now() < deadline {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(500)) {
            got.push(Got::from(&m));
        }
    }
    let mut values: Vec<Vec<u8>> = got.into_iter().map(|g| g.value).collect();
    values.sort();
    let mut expected: Vec<Vec<u8>> = records.into_iter().map(|(_, v)| v).collect();
    expected.sort();
    assert_eq!(
        values, expected,
        "acknowledged records lost or changed after the failover"
    );

    // Sessions between nodes were renewed in time, many times over (each renewal is a new
    // authentication), and no node closed a peer's connection for an expired session.
    // (Counted until there are four: how many fit in the test's own time depends on the load.)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let renewed = metric(
            &cluster.nodes[1],
            "samsa_authentications_total{listener=\"INTERNAL\",result=\"success\"}",
        );
        if renewed >= 4.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {renewed} authentications on INTERNAL"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for n in &cluster.nodes {
        let log = n.log_lines();
        let expired = log.iter().find(|l| {
            l.contains("did not re-authenticate") || l.contains("expired without re-authentication")
        });
        assert!(expired.is_none(), "{expired:?}");
    }
    // Each node said at start how it reaches its peers.
    let log = cluster.nodes[2].log_lines();
    assert!(
        log.iter().any(|l| l.contains("connections to other nodes")
            && l.contains("SASL_SSL (SCRAM-SHA-512 as broker)")),
        "node 3 did not log how it reaches its peers"
    );
}
