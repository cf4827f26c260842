//! Power loss on one node. First the shim itself (`compat_tests::power_loss`): a small program
//! writes, fsyncs, writes more, renames, and after a "power loss" (SIGKILL, then the journals
//! applied) only what a disk would keep is left; a SIGKILL alone keeps everything. Then the
//! broker: without `log.durable`, records acknowledged with acks=1 sit in the page cache and a
//! power cut takes them (the test asserts that it does: proof that the shim bites); with
//! `log.durable=true`, acks=all is answered after the fsync and nothing acknowledged is lost.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use compat_tests::power_loss;
use rdkafka::consumer::Consumer;
use rdkafka::topic_partition_list::Offset;

/// Runs the `power_loss` program's steps in a fresh directory under the shim, then SIGKILLs it
/// (or lets it end, with a final `exit` step). Returns the temporary directory and the root.
fn run_steps(steps: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("data");
    std::fs::create_dir(&root).unwrap();
    run_steps_in(&root, steps);
    (t, root)
}

fn run_steps_in(root: &Path, steps: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_power_loss"))
        .arg("run")
        .arg(root)
        .args(steps)
        .envs(power_loss::env(root, &power_loss::journal_dir(root)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    if steps.last() == Some(&"exit") {
        assert!(child.wait().unwrap().success(), "steps {steps:?} failed");
        return;
    }
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "done", "steps {steps:?} failed");
    child.kill().unwrap();
    child.wait().unwrap();
}

fn power_loss(root: &Path) -> power_loss::Lost {
    power_loss::apply(root, &power_loss::journal_dir(root)).unwrap()
}

fn read(root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(root.join(name)).ok()
}

#[test]
fn only_what_was_fsynced_survives_a_power_loss() {
    let (_t, root) = run_steps(&["write:seg:aaaa", "syncdir:.", "fsync:seg", "write:seg:bbbb"]);
    // SIGKILL keeps the page cache.
    assert_eq!(read(&root, "seg").as_deref(), Some("aaaabbbb"));
    let lost = power_loss(&root);
    assert_eq!(read(&root, "seg").as_deref(), Some("aaaa"));
    assert_eq!(lost.bytes_cut, 4, "{lost:?}");
}

#[test]
fn fdatasync_counts_like_fsync() {
    let (_t, root) = run_steps(&[
        "write:seg:aaaa",
        "syncdir:.",
        "fdatasync:seg",
        "write:seg:bbbb",
        "fdatasync:seg",
        "write:seg:cccc",
    ]);
    power_loss(&root);
    assert_eq!(read(&root, "seg").as_deref(), Some("aaaabbbb"));
}

#[test]
fn overwritten_and_truncated_synced_bytes_come_back() {
    let (_t, root) = run_steps(&[
        "write:f:0123456789",
        "syncdir:.",
        "fsync:f",
        "pwrite:f:2:XY",
        "truncate:f:5",
        "write:f:zz",
        "pwrite:f:8:QQQQ",
    ]);
    assert_eq!(read(&root, "f").as_deref(), Some("01XY4zz\0QQQQ"));
    let lost = power_loss(&root);
    assert_eq!(read(&root, "f").as_deref(), Some("0123456789"));
    assert!(lost.bytes_restored >= 7, "{lost:?}");
}

#[test]
fn a_created_file_needs_its_directory_fsynced() {
    // Synced data, but the name never made durable: the file vanishes.
    let (_t, root) = run_steps(&["write:new:data", "fsync:new"]);
    power_loss(&root);
    assert_eq!(read(&root, "new"), None);
    // A durable name, but data never synced: the file is empty.
    let (_t, root) = run_steps(&["write:new:data", "syncdir:.", "write:new:more"]);
    power_loss(&root);
    assert_eq!(read(&root, "new").as_deref(), Some(""));
}

#[test]
fn a_directory_needs_its_parent_fsynced() {
    let steps = ["mkdir:d", "write:d/f:x", "syncdir:d", "fsync:d/f"];
    let (_t, root) = run_steps(&steps);
    power_loss(&root);
    assert!(!root.join("d").exists());
    let (_t, root) = run_steps(&[&steps[..], &["syncdir:."]].concat());
    power_loss(&root);
    assert_eq!(read(&root, "d/f").as_deref(), Some("x"));
}

#[test]
fn a_rename_needs_its_directory_fsynced() {
    let old = ["write:cp:old", "syncdir:.", "fsync:cp"];
    // Written and fsynced under a temporary name, renamed, the directory not fsynced: the old
    // file comes back and the temporary name, never made durable, is gone.
    let (_t, root) = run_steps(
        &[
            &old[..],
            &["write:cp.tmp:new", "fsync:cp.tmp", "rename:cp.tmp:cp"],
        ]
        .concat(),
    );
    assert_eq!(read(&root, "cp").as_deref(), Some("new"));
    let lost = power_loss(&root);
    assert_eq!(read(&root, "cp").as_deref(), Some("old"));
    assert_eq!(read(&root, "cp.tmp"), None);
    assert_eq!(lost.names_undone, 2, "{lost:?}");
    // A checkpoint written as Samsa writes them (temp, fsync, rename, fsync the directory).
    let (_t, root) = run_steps(&[&old[..], &["replace:cp:new"]].concat());
    power_loss(&root);
    assert_eq!(read(&root, "cp").as_deref(), Some("new"));
    // Renamed without fsyncing the data first: the name is durable, the bytes are not.
    let (_t, root) = run_steps(
        &[
            &old[..],
            &["write:cp.tmp:new", "rename:cp.tmp:cp", "syncdir:."],
        ]
        .concat(),
    );
    power_loss(&root);
    assert_eq!(read(&root, "cp").as_deref(), Some(""));
}

#[test]
fn unsynced_writes_of_an_earlier_process_are_lost_too() {
    // A SIGKILL and a restart do not make anything durable: the journals outlive the process.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("data");
    std::fs::create_dir(&root).unwrap();
    run_steps_in(
        &root,
        &[
            "write:seg:aaaa",
            "syncdir:.",
            "fsync:seg",
            "write:seg:bbbb",
            "exit",
        ],
    );
    run_steps_in(&root, &["write:seg:cccc", "write:other:x", "syncdir:."]);
    assert_eq!(read(&root, "seg").as_deref(), Some("aaaabbbbcccc"));
    power_loss(&root);
    assert_eq!(read(&root, "seg").as_deref(), Some("aaaa"));
    assert_eq!(read(&root, "other").as_deref(), Some(""));
}

const TOPIC: &str = "power";
const RECORDS: usize = 2_000;

/// One node under the shim, checkpoints (which flush every log) out of the way, segments
/// small enough that the records span several (a roll creates files, whose names are durable
/// only once the partition's directory is fsynced).
fn node(durable: bool) -> compat_tests::Broker {
    let mut options = BrokerOptions::default()
        .prop("log.durable", durable)
        .prop("log.flush.offset.checkpoint.interval.ms", 3_600_000)
        .prop("log.segment.bytes", 4096);
    options.power_loss = true;
    let broker = compat_tests::Broker::start_with(options);
    create_topic(&broker, TOPIC, 1, &[]);
    broker
}

/// Produces RECORDS numbered records with `acks`; all must be acknowledged.
fn produce(broker: &compat_tests::Broker, acks: &str) {
    let p = producer(
        broker,
        &[
            ("acks", acks),
            ("linger.ms", "2"),
            ("batch.num.messages", "50"),
        ],
    );
    let records: Vec<(Option<Vec<u8>>, Vec<u8>)> = (0..RECORDS)
        .map(|i| (None, i.to_string().into_bytes()))
        .collect();
    let acked = produce_all(&p, TOPIC, &records, Some(0));
    assert_eq!(acked.len(), RECORDS);
}

/// The partition's (log start, high watermark) as the restarted node reports them.
fn watermarks(broker: &compat_tests::Broker) -> (i64, i64) {
    let c = assigned_consumer(broker, TOPIC, &[0], Offset::Beginning);
    c.fetch_watermarks(TOPIC, 0, Duration::from_secs(10))
        .unwrap()
}

#[test]
fn acks_1_records_in_the_page_cache_are_lost_to_a_power_cut() {
    let mut broker = node(false);
    produce(&broker, "1");
    let lost = broker.power_off();
    assert_ne!(
        lost,
        power_loss::Lost::default(),
        "the power cut took nothing"
    );
    broker.restart();
    let (_, high) = watermarks(&broker);
    assert!(
        (high as usize) < RECORDS,
        "all {RECORDS} acknowledged records survived a power cut without fsync ({lost:?}): the shim did not bite"
    );
    println!("without log.durable, {high} of {RECORDS} acknowledged records survived the power cut ({lost:?})");
}

#[test]
fn durable_acks_all_records_survive_a_power_cut() {
    let mut broker = node(true);
    produce(&broker, "all");
    let lost = broker.power_off();
    broker.restart();
    let (_, high) = watermarks(&broker);
    assert!(
        high as usize >= RECORDS,
        "with log.durable=true only {high} of {RECORDS} acknowledged records survived ({lost:?})"
    );
    let c = assigned_consumer(&broker, TOPIC, &[0], Offset::Beginning);
    let got = consume_n(&c, RECORDS, Duration::from_secs(30));
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.offset, i as i64);
        assert_eq!(g.value, i.to_string().into_bytes());
    }
}
