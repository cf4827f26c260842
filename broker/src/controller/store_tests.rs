//! Tests of `MetadataLogStore` (a file beside `store.rs` to keep that one readable).

use super::*;
use samsa_cluster::quorum::{ControlType, Record};
use uuid::Uuid;

const T0: i64 = 1_700_000_000_000;

fn data(base_offset: i64, epoch: i32, n: usize) -> Batch {
    Batch {
        base_offset,
        epoch,
        control: false,
        append_time_ms: T0 + base_offset,
        records: (0..n)
            .map(|i| Record::value(Bytes::from(format!("record {}", base_offset + i as i64))))
            .collect(),
    }
}

fn leader_change(base_offset: i64, epoch: i32) -> Batch {
    Batch {
        base_offset,
        epoch,
        control: true,
        append_time_ms: T0 + base_offset,
        records: vec![Record {
            key: Some(ControlType::LeaderChange.key()),
            value: Some(Bytes::from_static(b"\x00\x00\x00\x01")),
        }],
    }
}

fn open(dir: &Path) -> (MetadataLogStore, Loaded) {
    MetadataLogStore::open(dir, MetadataLogConfig::default()).expect("open")
}

fn small_segments() -> MetadataLogConfig {
    MetadataLogConfig {
        segment_bytes: 300,
        ..MetadataLogConfig::default()
    }
}

fn meta_dir(dir: &Path) -> PathBuf {
    dir.join("__cluster_metadata-0")
}

/// Appends `n` batches of 3 records from offset 0, epochs 1 then 2.
fn some_batches(n: i64) -> Vec<Batch> {
    (0..n)
        .map(|i| {
            if i == 0 {
                leader_change(0, 1)
            } else {
                data(1 + (i - 1) * 3, if i < n / 2 { 1 } else { 2 }, 3)
            }
        })
        .collect()
}

#[test]
fn append_flush_reopen_returns_the_same_batches() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(6);
    {
        let (mut s, loaded) = open(dir.path());
        assert!(loaded.batches.is_empty() && loaded.quorum_state.is_none());
        assert!(loaded.snapshot.is_none());
        s.append(&batches[..2]).unwrap();
        s.append(&batches[2..]).unwrap();
        assert_eq!(s.log_end_offset(), batches.last().unwrap().next_offset());
        assert_eq!(s.flush().unwrap(), s.log_end_offset());
        assert_eq!(s.read(4, 1).unwrap(), vec![batches[2].clone()]);
    }
    let (s, loaded) = open(dir.path());
    assert_eq!(loaded.batches, batches);
    assert_eq!((loaded.log_start_offset, loaded.log_end_offset), (0, 16));
    assert_eq!(loaded.leader_epochs, vec![(1, 0), (2, 7)]);
    assert_eq!(s.flushed_offset(), 16);
    // Kafka's layout: the first segment of the partition directory.
    assert!(meta_dir(dir.path())
        .join("00000000000000000000.log")
        .exists());
}

#[test]
#[should_panic(expected = "must follow on from offset")]
fn a_gap_in_offsets_is_a_bug() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, _) = open(dir.path());
    s.append(&[data(5, 1, 1)]).unwrap();
}

#[test]
fn a_torn_tail_is_truncated_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(4);
    {
        let (mut s, _) = open(dir.path());
        s.append(&batches).unwrap();
        s.flush().unwrap();
    }
    let seg = meta_dir(dir.path()).join("00000000000000000000.log");
    let len = fs::metadata(&seg).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len - 5).unwrap();
    drop(f);
    let (mut s, loaded) = open(dir.path());
    assert_eq!(loaded.batches, batches[..3]);
    assert_eq!(s.log_end_offset(), batches[2].next_offset());
    // The log goes on from the cut.
    s.append(&[data(batches[2].next_offset(), 2, 2)]).unwrap();
}

#[test]
fn truncate_then_append() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(5);
    let (mut s, _) = open(dir.path());
    s.append(&batches).unwrap();
    // Into the middle of batch 2 (offsets 4..=6): the whole batch goes, as in Kafka.
    assert_eq!(s.truncate_to(5).unwrap(), 4);
    let new = data(4, 3, 2);
    s.append(std::slice::from_ref(&new)).unwrap();
    s.flush().unwrap();
    drop(s);
    let (_s, loaded) = open(dir.path());
    let mut want = batches[..2].to_vec();
    want.push(new);
    assert_eq!(loaded.batches, want);
    assert_eq!(loaded.leader_epochs, vec![(1, 0), (3, 4)]);
}

#[test]
fn quorum_state_survives_reopen_and_a_corrupt_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = QuorumStateFile {
        leader_id: -1,
        leader_epoch: 4,
        voted_id: 2,
        voted_directory_id: Uuid::from_u128(42),
    };
    {
        let (mut s, _) = open(dir.path());
        s.persist_quorum_state(&state).unwrap();
    }
    let path = meta_dir(dir.path()).join("quorum-state");
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""leaderEpoch":4"#) && text.contains(r#""data_version":1"#));
    assert!(!meta_dir(dir.path()).join("quorum-state.tmp").exists());
    assert_eq!(open(dir.path()).1.quorum_state, Some(state));
    fs::write(&path, &text[..text.len() - 3]).unwrap();
    let err = MetadataLogStore::open(dir.path(), MetadataLogConfig::default())
        .err()
        .expect("a corrupt quorum-state is refused")
        .to_string();
    assert!(
        err.contains("__cluster_metadata-0/quorum-state is corrupt: not JSON"),
        "{err}"
    );
}

#[test]
fn a_second_owner_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path());
    let err = MetadataLogStore::open(dir.path(), MetadataLogConfig::default())
        .err()
        .expect("locked")
        .to_string();
    assert!(err.contains("lock"), "{err}");
}

fn values(n: usize) -> Vec<Bytes> {
    (0..n).map(|i| Bytes::from(format!("image {i}"))).collect()
}

#[test]
fn snapshot_round_trip_delete_before_and_reopen_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let batches = some_batches(12);
    let (mut s, _) = MetadataLogStore::open(dir.path(), small_segments()).unwrap();
    for b in &batches {
        // One append is one write into one segment: append one by one for several segments.
        s.append(std::slice::from_ref(b)).unwrap();
    }
    s.flush().unwrap();
    assert!(s.log.segment_count() > 3, "small segments roll");
    let first = SnapshotId {
        end_offset: 7,
        epoch: 2,
    };
    let second = SnapshotId {
        end_offset: 19,
        epoch: 2,
    };
    s.write_snapshot(first, &values(3), T0).unwrap();
    s.write_snapshot(second, &values(5), T0).unwrap();
    let name = "00000000000000000019-0000000002.checkpoint";
    assert!(meta_dir(dir.path()).join(name).exists());
    let snap = s.read_snapshot(second).unwrap();
    assert_eq!(snap.records, values(5));
    // The header names the append time of the last batch it covers (offsets 16..=18).
    assert_eq!(snap.last_contained_log_timestamp_ms, T0 + 16);
    let segments_before = s.log.segment_count();
    assert!(s.delete_before(second).unwrap());
    assert_eq!(s.log_start_offset(), 19);
    assert!(s.log.segment_count() < segments_before);
    assert!(s.log.segment_base_offsets()[0] <= 19);
    assert_eq!(s.snapshot_ids().collect::<Vec<_>>(), vec![second]);
    assert!(!meta_dir(dir.path())
        .join(snapshot::file_name(first))
        .exists());
    assert!(!s.delete_before(second).unwrap(), "nothing left to do");
    drop(s);
    let (s, loaded) = MetadataLogStore::open(dir.path(), small_segments()).unwrap();
    assert_eq!(
        loaded.snapshot.map(|s| (s.id, s.records)),
        Some((second, values(5)))
    );
    assert_eq!(loaded.log_start_offset, 19);
    assert_eq!(loaded.batches[0].base_offset, 19);
    assert_eq!(loaded.batches.last(), batches.last());
    assert_eq!(s.latest_snapshot_id(), Some(second));
}

#[test]
fn a_partial_snapshot_left_by_a_crash_is_ignored_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut s, _) = open(dir.path());
        s.append(&some_batches(3)).unwrap();
        s.flush().unwrap();
    }
    let part = meta_dir(dir.path()).join("00000000000000000004-0000000001-12345.checkpoint.part");
    fs::write(&part, b"half a snapshot").unwrap();
    let (s, loaded) = open(dir.path());
    assert!(loaded.snapshot.is_none());
    assert_eq!(s.snapshot_ids().count(), 0);
    assert!(!part.exists());
}

#[test]
fn a_corrupt_snapshot_is_refused_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let id = SnapshotId {
        end_offset: 4,
        epoch: 1,
    };
    {
        let (mut s, _) = open(dir.path());
        s.append(&some_batches(3)).unwrap();
        s.write_snapshot(id, &values(2), T0).unwrap();
    }
    let path = meta_dir(dir.path()).join(snapshot::file_name(id));
    let mut bytes = fs::read(&path).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 10);
    fs::write(&path, bytes).unwrap();
    let err = MetadataLogStore::open(dir.path(), MetadataLogConfig::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("00000000000000000004-0000000001.checkpoint is corrupt"),
        "{err}"
    );
}

#[test]
fn a_snapshot_ahead_of_the_log_restarts_the_log_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let id = SnapshotId {
        end_offset: 100,
        epoch: 5,
    };
    {
        let (mut s, _) = open(dir.path());
        s.append(&some_batches(3)).unwrap();
        // A follower stores the snapshot it fetched; a crash before the log is reset.
        s.write_snapshot(id, &values(2), T0).unwrap();
    }
    let (mut s, loaded) = open(dir.path());
    assert_eq!((loaded.log_start_offset, loaded.log_end_offset), (100, 100));
    assert!(loaded.batches.is_empty());
    s.append(&[data(100, 5, 1)]).unwrap();
}

#[test]
fn a_log_beyond_the_load_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut s, _) = open(dir.path());
        s.append(&some_batches(20)).unwrap();
    }
    let config = MetadataLogConfig {
        loaded_log_bytes_max: 200,
        ..MetadataLogConfig::default()
    };
    let err = MetadataLogStore::open(dir.path(), config)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("exceeds the 200-byte limit"), "{err}");
}

#[test]
fn a_snapshot_from_the_leader_replaces_the_log_and_a_corrupt_one_changes_nothing() {
    let leader_dir = tempfile::tempdir().unwrap();
    let (mut leader, _) = open(leader_dir.path());
    leader.append(&some_batches(5)).unwrap();
    leader.flush().unwrap();
    let id = SnapshotId {
        end_offset: 7,
        epoch: 1,
    };
    leader
        .write_snapshot(
            id,
            &[Bytes::from_static(b"r1"), Bytes::from_static(b"r2")],
            T0,
        )
        .unwrap();
    let bytes = leader.read_snapshot(id).unwrap().bytes;

    let dir = tempfile::tempdir().unwrap();
    {
        let (mut follower, _) = open(dir.path());
        follower.append(&[leader_change(0, 1)]).unwrap();
        follower.flush().unwrap();
        let mut cut = bytes.to_vec();
        cut.truncate(cut.len() - 3);
        let e = follower.install_snapshot(id, Bytes::from(cut)).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert_eq!(follower.latest_snapshot_id(), None);
        assert_eq!(follower.log_end_offset(), 1, "the log is untouched");

        let s = follower.install_snapshot(id, bytes.clone()).unwrap();
        assert_eq!(
            s.records,
            vec![Bytes::from_static(b"r1"), Bytes::from_static(b"r2")]
        );
        assert_eq!(
            (follower.log_start_offset(), follower.log_end_offset()),
            (7, 7)
        );
    }
    let (_, loaded) = open(dir.path());
    assert_eq!(loaded.snapshot.map(|s| s.id), Some(id));
    assert_eq!(loaded.log_start_offset, 7);
    assert!(loaded.batches.is_empty());
}

fn one_voter(id: i32) -> VoterSet {
    let v = samsa_cluster::quorum::VoterNode {
        id,
        directory_id: Uuid::from_u128(77),
        endpoints: vec![samsa_cluster::quorum::VoterEndpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port: 9093,
        }],
    };
    [(id, v)].into_iter().collect()
}

#[test]
fn the_bootstrap_checkpoint_holds_the_first_voters_and_is_no_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let set = one_voter(4);
    write_bootstrap_checkpoint(dir.path(), &set).unwrap();
    let again = write_bootstrap_checkpoint(dir.path(), &set).unwrap_err();
    assert!(again.to_string().contains("already holds"), "{again}");
    let (mut s, loaded) = open(dir.path());
    assert_eq!(loaded.bootstrap_voters, Some(set.clone()));
    assert!(loaded.snapshot.is_none());
    assert_eq!(s.latest_snapshot_id(), None);
    // A snapshot written with the voters gives them back.
    s.append(&[leader_change(0, 1), data(1, 1, 3)]).unwrap();
    s.flush().unwrap();
    let id = SnapshotId {
        end_offset: 4,
        epoch: 1,
    };
    s.write_snapshot_with_voters(id, &[Bytes::from_static(b"r")], T0, Some(&set))
        .unwrap();
    let snap = s.read_snapshot(id).unwrap();
    assert_eq!(snapshot::voters_of(&snap.bytes), Some(set));
    assert_eq!(snap.records.len(), 1);
    drop(s);
    let (_, loaded) = open(dir.path());
    assert_eq!(
        loaded.snapshot.unwrap().id,
        id,
        "the bootstrap checkpoint is not the latest"
    );
    assert!(loaded.bootstrap_voters.is_some());
}

#[test]
fn the_metadata_log_directory_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(meta_dir(dir.path())).unwrap();
    std::fs::set_permissions(meta_dir(dir.path()), std::fs::Permissions::from_mode(0o755)).unwrap();
    let _open = open(dir.path());
    let mode = std::fs::metadata(meta_dir(dir.path()))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o700,
        "SCRAM keys and dynamic secrets live there"
    );
}
