//! A single node's data directory written by the release before the metadata log held topics,
//! configs, ACLs and credentials (each in a JSON file of the node's own) starts under this one
//! with everything intact: its topics are imported into the metadata log with their ids,
//! records, configs, the group's offsets and the transactional id all survive, its ACLs, SCRAM
//! credential and dynamic configs are imported once, and a restart after the import finds
//! everything again (from the metadata log: the files are not read again).
//!
//! The fixture `compat-tests/fixtures/single-node-before-cluster-metadata` was made by that
//! release (commit 25e3a54) with `compat-tests/python/upgrade_fixture.py BOOTSTRAP populate`,
//! the broker started with `--node.id=1`, an authorizer, `--super.users=User:ANONYMOUS`,
//! `--offsets.topic.num.partitions=2` and `--transaction.state.log.num.partitions=2`, then
//! stopped with SIGTERM.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn check(broker: &Broker) {
    let script = compat_tests::workspace_root().join("compat-tests/python/upgrade_fixture.py");
    let mut cmd = Command::new(compat_tests::python());
    cmd.arg(&script).arg(broker.bootstrap()).arg("check");
    let (status, out, err) =
        compat_tests::run_with_timeout(&mut cmd, Duration::from_secs(120)).unwrap();
    assert!(
        status.success(),
        "upgrade_fixture.py check failed ({status}):\n{out}\n{err}\nbroker log:\n{}",
        broker.log_lines().join("\n")
    );
}

/// The topic ids the old release kept in `samsa-topics.json`.
fn ids_on_disk(dir: &Path) -> Vec<(String, uuid::Uuid)> {
    let text = std::fs::read_to_string(dir.join("samsa-topics.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["id"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_data_directory_of_the_release_before_the_metadata_log_starts_with_everything_intact() {
    let fixture = compat_tests::workspace_root()
        .join("compat-tests/fixtures/single-node-before-cluster-metadata");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let old_ids = ids_on_disk(dir.path());
    assert_eq!(old_ids.len(), 4, "{old_ids:?}");
    let options = BrokerOptions {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    }
    .prop("node.id", 1)
    .prop(
        "authorizer.class.name",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    )
    .prop("super.users", "User:ANONYMOUS");
    let mut broker = Broker::start_with(options);
    let imported = broker
        .log_lines()
        .iter()
        .filter(|l| l.contains("imported this node's topic into the metadata log"))
        .count();
    assert_eq!(imported, 4, "{}", broker.log_lines().join("\n"));
    // The node's ACLs, credentials and dynamic configs too, each file once.
    for what in ["dynamic configs", "ACLs", "SCRAM credentials"] {
        let lines = broker
            .log_lines()
            .iter()
            .filter(|l| l.contains(&format!("{what} imported into the metadata log")))
            .count();
        assert_eq!(lines, 1, "{what}:\n{}", broker.log_lines().join("\n"));
    }
    check(&broker);

    // Every topic keeps its id, now from the metadata image.
    let mut req = MetadataRequest::default();
    req.topics = None;
    let m: MetadataResponse = raw_request(&broker, ApiKey::Metadata, 12, &req);
    for (name, id) in &old_ids {
        let t = m
            .topics
            .iter()
            .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some(name))
            .unwrap_or_else(|| panic!("{name} in {m:?}"));
        assert_eq!(&t.topic_id, id, "{name}");
    }

    // A restart imports nothing more and finds everything again.
    broker.stop();
    broker.restart();
    let again = broker
        .log_lines()
        .iter()
        .filter(|l| {
            l.contains("imported this node's topic") || l.contains("imported into the metadata log")
        })
        .count();
    assert_eq!(again, 0);
    let mut req = MetadataRequest::default();
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_static_str("orders")));
    req.topics = Some(vec![t]);
    let m: MetadataResponse = raw_request(&broker, ApiKey::Metadata, 12, &req);
    assert_eq!(m.topics[0].partitions.len(), 3);
    check(&broker);
}
