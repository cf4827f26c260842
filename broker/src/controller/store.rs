//! `MetadataLogStore`: the disk side of the KRaft quorum. It executes the quorum's actions
//! (append, flush, truncate, persist the election state, write and prune snapshots) on the
//! metadata log `__cluster_metadata-0`, laid out as Kafka lays it out, so `samsa dump-log`
//! and Kafka's own tools read it:
//!
//! ```text
//! <log dir>/__cluster_metadata-0/
//!     00000000000000000000.log .index .timeindex   segments (the storage crate's `Log`)
//!     leader-epoch-checkpoint  <offset>.snapshot   (the `Log`'s own files)
//!     quorum-state                                 election state (`quorum_state.rs`)
//!     <end offset>-<epoch>.checkpoint              KIP-630 snapshots (`snapshot.rs`)
//! ```
//!
//! Invariants:
//! - the log start offset is the latest snapshot's end offset (Kafka's `deleteBeforeSnapshot`
//!   moves it there, and `open` restores it), and every offset below it is covered by a
//!   snapshot: a log that starts above 0 without one is refused;
//! - appends are contiguous with the log end and keep each batch's own offsets and epoch;
//! - `persist_quorum_state` and `write_snapshot` return only once the file and its directory
//!   entry are durable (the quorum votes, or reports a snapshot, only after);
//! - nothing corrupt is reset: a bad quorum-state or latest snapshot fails `open` with an
//!   error naming the file; only a torn log tail is cut (the storage crate's recovery), and
//!   `.checkpoint.part` files (a snapshot write cut short) are removed;
//! - one process owns the directory (an exclusive `flock` on the directory itself, which does
//!   not clash with the log directory's `.lock`).

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use samsa_cluster::quorum::{Batch, SnapshotId, VoterSet};
use samsa_storage::{Log, LogConfig, LogError, TopicPartition, METADATA_TOPIC};

use super::codec;
use super::quorum_state::{QuorumStateFile, QUORUM_STATE_BYTES_MAX, QUORUM_STATE_FILE};
use super::snapshot::{self, Snapshot, SnapshotFile, SNAPSHOT_BYTES_MAX};

/// The metadata log's only partition.
pub const METADATA_PARTITION: i32 = 0;
/// Bytes read per `Log::read` while loading or reading.
const READ_CHUNK_BYTES: usize = 8 << 20;

/// How the metadata log is kept (Kafka's `metadata.log.*` settings and their defaults).
#[derive(Debug, Clone)]
pub struct MetadataLogConfig {
    /// `metadata.log.segment.bytes`.
    pub segment_bytes: u64,
    /// `metadata.log.segment.ms`.
    pub segment_ms: i64,
    /// Largest batch accepted (Kafka's `KafkaRaftClient.MAX_BATCH_SIZE_BYTES`).
    pub max_batch_size_bytes: u32,
    /// Bytes of log after the latest snapshot that `open` loads into memory; beyond it `open`
    /// refuses (snapshots keep the log far smaller: `metadata.log.max.record.bytes.between.
    /// snapshots` is 20 MiB by default).
    pub loaded_log_bytes_max: usize,
}

impl Default for MetadataLogConfig {
    fn default() -> Self {
        MetadataLogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            max_batch_size_bytes: 8 << 20,
            loaded_log_bytes_max: 256 << 20,
        }
    }
}

/// What a node finds on disk at startup.
#[derive(Debug)]
pub struct Loaded {
    pub quorum_state: Option<QuorumStateFile>,
    /// The latest snapshot.
    pub snapshot: Option<Snapshot>,
    /// Every batch from the log start offset (the snapshot's end) to the log end; the first
    /// is the one holding the log start offset.
    pub batches: Vec<Batch>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The leader-epoch cache: (epoch, its start offset), oldest first.
    pub leader_epochs: Vec<(i32, i64)>,
    /// The voters this directory was formatted with (`samsa storage format --standalone`):
    /// the bootstrap checkpoint `00000000000000000000-0000000000.checkpoint`, Kafka's
    /// `Snapshots.BOOTSTRAP_SNAPSHOT_ID`, which is no snapshot of the log.
    pub bootstrap_voters: Option<VoterSet>,
}

/// The bootstrap checkpoint's id (Kafka's `BOOTSTRAP_SNAPSHOT_ID`): a real snapshot always
/// ends past offset 0.
pub const BOOTSTRAP_CHECKPOINT: SnapshotId = SnapshotId {
    end_offset: 0,
    epoch: 0,
};

/// Writes the bootstrap checkpoint of a new dynamic quorum into `log_dir`'s metadata log
/// directory: the first voter set (kraft.version 1). Refused where a metadata log or a
/// checkpoint already is, so that formatting twice cannot start a second quorum on a node's
/// data.
pub fn write_bootstrap_checkpoint(
    log_dir: &Path,
    voters: &VoterSet,
) -> Result<PathBuf, StoreError> {
    let tp = TopicPartition::new(METADATA_TOPIC, METADATA_PARTITION);
    let dir = log_dir.join(tp.dir_name());
    fs::create_dir_all(&dir).map_err(io_err(&dir, "create the directory"))?;
    let taken = fs::read_dir(&dir)
        .map_err(io_err(&dir, "list the directory"))?
        .filter_map(|e| e.ok())
        .any(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.ends_with(".log") || name.ends_with(snapshot::SNAPSHOT_SUFFIX)
        });
    if taken {
        return Err(StoreError::Refused {
            path: dir,
            why: "this node already holds a metadata log or checkpoint: it was formatted or ran before (use an empty log directory)"
                .into(),
        });
    }
    let bytes = snapshot::encode_with_voters(BOOTSTRAP_CHECKPOINT, &[], 0, 0, Some(voters));
    let name = snapshot::file_name(BOOTSTRAP_CHECKPOINT);
    let part = dir.join(format!("{name}.part"));
    let path = dir.join(&name);
    let write = || -> io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&part)?;
        f.write_all(&bytes)?;
        f.sync_all()
    };
    write().map_err(io_err(&part, "write"))?;
    fs::rename(&part, &path).map_err(io_err(&path, "rename into place"))?;
    sync_dir(&dir)?;
    Ok(path)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: cannot {what}: {source}", .path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        source: io::Error,
    },
    #[error("{} is corrupt: {why}", .path.display())]
    Corrupt { path: PathBuf, why: String },
    #[error("{}: cannot {what}: {source}", .path.display())]
    Log {
        path: PathBuf,
        what: &'static str,
        source: LogError,
    },
    #[error("{}: {what} exceeds the {limit}-byte limit for reading it into memory", .path.display())]
    TooLarge {
        path: PathBuf,
        what: String,
        limit: u64,
    },
    #[error("{}: inconsistent: {why}", .path.display())]
    Inconsistent { path: PathBuf, why: String },
    #[error("{}: no snapshot {}-{} (end offset, epoch)", .path.display(), .id.end_offset, .id.epoch)]
    NoSnapshot { path: PathBuf, id: SnapshotId },
    #[error("{}: refused: {why}", .path.display())]
    Refused { path: PathBuf, why: String },
}

/// The metadata log, its snapshots and the quorum state of one node.
pub struct MetadataLogStore {
    /// `<log dir>/__cluster_metadata-0`.
    dir: PathBuf,
    log: Log,
    /// Complete snapshots on disk.
    snapshots: BTreeSet<SnapshotId>,
    max_batch_size_bytes: u32,
    /// Holds the directory's `flock` for the store's lifetime.
    _lock: File,
}

fn io_err<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir, "fsync the directory"))
}

impl MetadataLogStore {
    /// Opens (creating if needed) `<log_dir>/__cluster_metadata-0`, recovers the log (a torn
    /// tail is cut), removes unfinished snapshot writes, and loads what the quorum starts from.
    pub fn open(
        log_dir: &Path,
        config: MetadataLogConfig,
    ) -> Result<(MetadataLogStore, Loaded), StoreError> {
        let tp = TopicPartition::new(METADATA_TOPIC, METADATA_PARTITION);
        let dir = log_dir.join(tp.dir_name());
        fs::create_dir_all(&dir).map_err(io_err(&dir, "create the directory"))?;
        // The metadata log holds SCRAM keys and dynamic configs (JAAS configs, key passwords):
        // readable by this user only.
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
                .map_err(io_err(&dir, "restrict the directory to its owner"))?;
        }
        let lock = File::open(&dir).map_err(io_err(&dir, "open the directory"))?;
        // SAFETY: flock on a valid open descriptor has no memory-safety preconditions.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(StoreError::Io {
                path: dir,
                what: "lock the directory (is another node using it?)",
                source: io::Error::last_os_error(),
            });
        }
        let mut snapshots = Self::scan_snapshots(&dir)?;
        let bootstrap_voters = if snapshots.remove(&BOOTSTRAP_CHECKPOINT) {
            let checkpoint = read_snapshot_file(&dir, BOOTSTRAP_CHECKPOINT)?;
            let path = dir.join(snapshot::file_name(BOOTSTRAP_CHECKPOINT));
            Some(
                snapshot::voters_of(&checkpoint.bytes).ok_or_else(|| StoreError::Corrupt {
                    path,
                    why: "the bootstrap checkpoint holds no voter set".into(),
                })?,
            )
        } else {
            None
        };
        let quorum_state = Self::read_quorum_state(&dir)?;
        let latest = snapshots.last().copied();
        // Read the latest snapshot before anything is deleted: if it is bad, refuse with the
        // older ones still on disk.
        let snapshot = latest.map(|id| read_snapshot_file(&dir, id)).transpose()?;
        let log_config = LogConfig {
            segment_bytes: config.segment_bytes,
            segment_ms: config.segment_ms,
            max_message_bytes: config.max_batch_size_bytes,
            // The metadata log is pruned by snapshots only (Kafka rejects retention settings
            // for it), and flushed when the quorum asks.
            retention_ms: -1,
            retention_bytes: -1,
            flush_messages: u64::MAX,
            flush_ms: i64::MAX,
            ..LogConfig::default()
        };
        let log = Log::open_standalone(&dir, tp, log_config, latest.map(|s| s.end_offset))
            .map_err(|source| StoreError::Log {
                path: dir.clone(),
                what: "open the log",
                source,
            })?;
        let mut store = MetadataLogStore {
            dir,
            log,
            snapshots,
            max_batch_size_bytes: config.max_batch_size_bytes,
            _lock: lock,
        };
        store.truncate_to_latest_snapshot()?;
        let start = store.log.log_start_offset();
        // Kafka's `recoverSnapshots` check: the offsets below the log start must be covered.
        if start > latest.map_or(0, |s| s.end_offset) {
            return Err(StoreError::Inconsistent {
                path: store.dir.clone(),
                why: format!(
                    "the log starts at offset {start} but no snapshot covers the offsets below it \
                     (latest snapshot: {latest:?})"
                ),
            });
        }
        // Kafka's `recoverSnapshots`: snapshots below the log start offset are not needed.
        if let Some(latest) = latest {
            store.delete_snapshots_before(latest)?;
        }
        let batches =
            store.read_range(start, store.log_end_offset(), config.loaded_log_bytes_max)?;
        let loaded = Loaded {
            quorum_state,
            snapshot,
            batches,
            log_start_offset: start,
            log_end_offset: store.log_end_offset(),
            leader_epochs: store.log.leader_epochs().to_vec(),
            bootstrap_voters,
        };
        tracing::debug!(
            dir = %store.dir.display(),
            log_start_offset = loaded.log_start_offset,
            log_end_offset = loaded.log_end_offset,
            snapshot = ?latest,
            "opened the metadata log"
        );
        Ok((store, loaded))
    }

    /// Lists complete snapshots; removes partial and deleted ones (Kafka does the same).
    fn scan_snapshots(dir: &Path) -> Result<BTreeSet<SnapshotId>, StoreError> {
        let mut ids = BTreeSet::new();
        let mut removed = false;
        for entry in fs::read_dir(dir).map_err(io_err(dir, "list the directory"))? {
            let entry = entry.map_err(io_err(dir, "list the directory"))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            match snapshot::parse_file_name(&name) {
                Some(SnapshotFile::Complete(id)) => {
                    ids.insert(id);
                }
                Some(SnapshotFile::Partial(_) | SnapshotFile::Deleted(_)) => {
                    let p = entry.path();
                    tracing::info!(file = %p.display(), "removing an unfinished or deleted snapshot");
                    fs::remove_file(&p).map_err(io_err(&p, "remove"))?;
                    removed = true;
                }
                None => {}
            }
        }
        if removed {
            sync_dir(dir)?;
        }
        Ok(ids)
    }

    fn read_quorum_state(dir: &Path) -> Result<Option<QuorumStateFile>, StoreError> {
        let path = dir.join(QUORUM_STATE_FILE);
        let len = match fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path, "read")(e)),
        };
        if len > QUORUM_STATE_BYTES_MAX {
            return Err(StoreError::Corrupt {
                path,
                why: format!("{len} bytes, more than a quorum state ever takes"),
            });
        }
        let bytes = fs::read(&path).map_err(io_err(&path, "read"))?;
        let text = std::str::from_utf8(&bytes).map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            why: format!("not UTF-8: {e}"),
        })?;
        QuorumStateFile::decode(text)
            .map(Some)
            .map_err(|why| StoreError::Corrupt { path, why })
    }

    fn log_err(&self, what: &'static str) -> impl FnOnce(LogError) -> StoreError + '_ {
        move |source| StoreError::Log {
            path: self.dir.clone(),
            what,
            source,
        }
    }

    // ------------------------------------------------------------------ the log

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }
    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }
    /// Everything below is on disk.
    pub fn flushed_offset(&self) -> i64 {
        self.log.flushed_offset()
    }
    /// (epoch, start offset) of every epoch in the log, oldest first.
    pub fn leader_epochs(&self) -> &[(i32, i64)] {
        self.log.leader_epochs()
    }

    /// Appends `batches` with their own offsets and epochs (one write). The quorum assigns
    /// offsets, so they must follow on from the log end; epochs never go back.
    pub fn append(&mut self, batches: &[Batch]) -> Result<(), StoreError> {
        let Some(last) = batches.last() else {
            return Ok(());
        };
        let mut next = self.log_end_offset();
        let mut epoch = self.log.latest_epoch().unwrap_or(-1);
        let mut bytes = BytesMut::new();
        for b in batches {
            assert_eq!(
                b.base_offset, next,
                "metadata batches must follow on from offset {next}"
            );
            assert!(
                b.epoch >= epoch,
                "metadata batch epoch {} below epoch {epoch}",
                b.epoch
            );
            let encoded = codec::encode(b);
            if encoded.len() > self.max_batch_size_bytes as usize {
                return Err(StoreError::Refused {
                    path: self.dir.clone(),
                    why: format!(
                        "batch at offset {} is {} bytes, above the {}-byte batch limit",
                        b.base_offset,
                        encoded.len(),
                        self.max_batch_size_bytes
                    ),
                });
            }
            bytes.extend_from_slice(&encoded);
            next = b.next_offset();
            epoch = b.epoch;
        }
        self.log
            .append_as_follower(bytes.freeze(), last.append_time_ms)
            .map_err(self.log_err("append"))?;
        assert_eq!(
            self.log_end_offset(),
            next,
            "the log end follows the append"
        );
        Ok(())
    }

    /// Makes everything appended durable; returns the flushed end offset.
    pub fn flush(&mut self) -> Result<i64, StoreError> {
        self.log.sync_now().map_err(self.log_err("flush"))?;
        Ok(self.flushed_offset())
    }

    /// Removes every batch at or after `offset` (the quorum found a divergence). A batch
    /// straddling `offset` goes entirely, as in Kafka; returns the new log end offset.
    /// Truncating below the log start would drop what a snapshot stands for: a quorum bug.
    pub fn truncate_to(&mut self, offset: i64) -> Result<i64, StoreError> {
        assert!(
            offset >= self.log_start_offset(),
            "truncating the metadata log to {offset}, below its start {}",
            self.log_start_offset()
        );
        self.log
            .truncate_to(offset)
            .map_err(self.log_err("truncate"))?;
        Ok(self.log_end_offset())
    }

    /// Batches from the one holding `from_offset` on, at least one and about `max_bytes`
    /// (what a Fetch from a follower reads).
    pub fn read(&mut self, from_offset: i64, max_bytes: usize) -> Result<Vec<Batch>, StoreError> {
        let bytes = self
            .log
            .read(from_offset, max_bytes, i64::MAX, true)
            .map_err(self.log_err("read"))?
            .load()
            .map_err(io_err(&self.dir, "read"))?;
        codec::decode_all(&bytes).map_err(|why| StoreError::Corrupt {
            path: self.dir.clone(),
            why,
        })
    }

    /// Every batch of `[from, to)`, refusing more than `limit` bytes.
    fn read_range(&mut self, from: i64, to: i64, limit: usize) -> Result<Vec<Batch>, StoreError> {
        let mut out = Vec::new();
        let mut next = from;
        let mut total = 0usize;
        while next < to {
            let bytes = self
                .log
                .read(next, READ_CHUNK_BYTES, to, true)
                .map_err(self.log_err("read"))?
                .load()
                .map_err(io_err(&self.dir, "read"))?;
            if bytes.is_empty() {
                break;
            }
            total += bytes.len();
            if total > limit {
                return Err(StoreError::TooLarge {
                    path: self.dir.clone(),
                    what: format!("the log from offset {from} to {to}"),
                    limit: limit as u64,
                });
            }
            let batches = codec::decode_all(&bytes).map_err(|why| StoreError::Corrupt {
                path: self.dir.clone(),
                why,
            })?;
            next = batches.last().map_or(to, Batch::next_offset);
            out.extend(batches);
        }
        Ok(out)
    }

    // ------------------------------------------------------------------ quorum state

    /// Writes `__cluster_metadata-0/quorum-state` atomically and durably (temporary file,
    /// fsync, rename, fsync of the directory) before returning.
    pub fn persist_quorum_state(&mut self, state: &QuorumStateFile) -> Result<(), StoreError> {
        let path = self.dir.join(QUORUM_STATE_FILE);
        crate::util::write_atomically(&self.dir, QUORUM_STATE_FILE, state.encode().as_bytes())
            .map_err(io_err(&path, "write"))
    }

    // ------------------------------------------------------------------ snapshots

    /// Complete snapshots on disk, oldest first.
    pub fn snapshot_ids(&self) -> impl Iterator<Item = SnapshotId> + '_ {
        self.snapshots.iter().copied()
    }
    pub fn latest_snapshot_id(&self) -> Option<SnapshotId> {
        self.snapshots.last().copied()
    }

    /// Writes snapshot `id` holding `records` (opaque metadata record values) as Kafka does:
    /// to `<id>.checkpoint.part`, fsync, rename to `<id>.checkpoint`, fsync of the directory.
    /// Writing an id that exists is a no-op (snapshots are immutable). Refused below the log
    /// start: the log no longer holds what such a snapshot would stand for.
    pub fn write_snapshot(
        &mut self,
        id: SnapshotId,
        records: &[Bytes],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.write_snapshot_with_voters(id, records, now_ms, None)
    }

    /// [`Self::write_snapshot`] holding the quorum's voter set too (kraft.version 1).
    pub fn write_snapshot_with_voters(
        &mut self,
        id: SnapshotId,
        records: &[Bytes],
        now_ms: i64,
        voters: Option<&VoterSet>,
    ) -> Result<(), StoreError> {
        if self.snapshots.contains(&id) {
            return Ok(());
        }
        if id.end_offset < self.log_start_offset() || id.epoch < 0 {
            return Err(StoreError::Refused {
                path: self.dir.clone(),
                why: format!(
                    "snapshot {id:?} below the log start offset {}",
                    self.log_start_offset()
                ),
            });
        }
        let last_contained_ms = self.append_time_of(id.end_offset - 1)?;
        let bytes = snapshot::encode_with_voters(id, records, last_contained_ms, now_ms, voters);
        self.write_snapshot_file(id, &bytes)
    }

    /// `<id>.checkpoint.part`, fsync, rename to `<id>.checkpoint`, fsync of the directory.
    fn write_snapshot_file(&mut self, id: SnapshotId, bytes: &[u8]) -> Result<(), StoreError> {
        let name = snapshot::file_name(id);
        let part = self.dir.join(format!("{name}.part"));
        let path = self.dir.join(&name);
        let write = || -> io::Result<()> {
            let _ = fs::remove_file(&part);
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&part)?;
            f.write_all(bytes)?;
            f.sync_all()
        };
        write().map_err(io_err(&part, "write"))?;
        fs::rename(&part, &path).map_err(io_err(&path, "rename into place"))?;
        sync_dir(&self.dir)?;
        self.snapshots.insert(id);
        Ok(())
    }

    /// The append time of the batch holding `offset`, if the log still holds it, else 0
    /// (Kafka's default for `LastContainedLogTimestamp`).
    fn append_time_of(&mut self, offset: i64) -> Result<i64, StoreError> {
        if offset < self.log_start_offset() || offset >= self.log_end_offset() {
            return Ok(0);
        }
        let batches = self.read(offset, 1)?;
        Ok(batches.first().map_or(0, |b| b.append_time_ms))
    }

    /// Reads and checks snapshot `id`.
    pub fn read_snapshot(&self, id: SnapshotId) -> Result<Snapshot, StoreError> {
        if !self.snapshots.contains(&id) {
            return Err(StoreError::NoSnapshot {
                path: self.dir.clone(),
                id,
            });
        }
        read_snapshot_file(&self.dir, id)
    }

    /// Kafka's `deleteBeforeSnapshot`: once snapshot `id` exists, moves the log start offset
    /// up to its end offset, deletes the segments wholly below it and the older snapshots.
    /// Returns whether anything changed. Does nothing unless `id` is a snapshot above the log
    /// start and within the log (a snapshot past the log end first needs
    /// [`Self::truncate_to_latest_snapshot`]).
    pub fn delete_before(&mut self, id: SnapshotId) -> Result<bool, StoreError> {
        if !self.snapshots.contains(&id)
            || id.end_offset <= self.log_start_offset()
            || id.end_offset > self.log_end_offset()
        {
            return Ok(false);
        }
        self.log
            .delete_records_before(id.end_offset)
            .map_err(self.log_err("move the log start offset"))?;
        assert_eq!(self.log_start_offset(), id.end_offset);
        self.delete_snapshots_before(id)?;
        Ok(true)
    }

    fn delete_snapshots_before(&mut self, id: SnapshotId) -> Result<(), StoreError> {
        let older: Vec<SnapshotId> = self.snapshots.range(..id).copied().collect();
        for old in &older {
            let p = self.dir.join(snapshot::file_name(*old));
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&p, "delete")(e)),
            }
            self.snapshots.remove(old);
        }
        if !older.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// A snapshot fetched from the leader (the whole `.checkpoint` file as FetchSnapshot
    /// served it): checked, written durably as `write_snapshot` writes, and then the log
    /// restarts empty at its end offset and older snapshots go (what the quorum's
    /// `InstallSnapshot` asks for). Returns the snapshot as read.
    pub fn install_snapshot(
        &mut self,
        id: SnapshotId,
        bytes: Bytes,
    ) -> Result<Snapshot, StoreError> {
        let path = self.dir.join(snapshot::file_name(id));
        let decoded = snapshot::decode(id, bytes).map_err(|why| StoreError::Corrupt {
            path: path.clone(),
            why: format!("snapshot fetched from the leader: {why}"),
        })?;
        if !self.snapshots.contains(&id) {
            let bytes = decoded.bytes.clone();
            self.write_snapshot_file(id, &bytes)?;
        }
        self.log
            .truncate_fully_and_start_at(id.end_offset)
            .map_err(self.log_err("restart the log at the snapshot"))?;
        self.delete_snapshots_before(id)?;
        Ok(decoded)
    }

    /// Kafka's `truncateToLatestSnapshot`: when the latest snapshot is ahead of the log (a
    /// follower that fetched a snapshot and had not yet reset its log), the log restarts
    /// empty at the snapshot's end. Returns whether it did.
    pub fn truncate_to_latest_snapshot(&mut self) -> Result<bool, StoreError> {
        let Some(s) = self.latest_snapshot_id() else {
            return Ok(false);
        };
        let latest_epoch = self.log.latest_epoch().unwrap_or(0);
        let leo = self.log_end_offset();
        let ahead = s.epoch > latest_epoch || (s.epoch == latest_epoch && s.end_offset > leo);
        let already_there = self.log_start_offset() == s.end_offset && leo == s.end_offset;
        if !ahead || already_there {
            return Ok(false);
        }
        tracing::info!(dir = %self.dir.display(), snapshot = ?s, log_end_offset = leo,
            "the latest snapshot is ahead of the log: restarting the log at its end");
        self.log
            .truncate_fully_and_start_at(s.end_offset)
            .map_err(self.log_err("restart the log at the snapshot"))?;
        self.delete_snapshots_before(s)?;
        Ok(true)
    }
}

fn read_snapshot_file(dir: &Path, id: SnapshotId) -> Result<Snapshot, StoreError> {
    let path = dir.join(snapshot::file_name(id));
    let len = fs::metadata(&path).map_err(io_err(&path, "read"))?.len();
    if len > SNAPSHOT_BYTES_MAX {
        return Err(StoreError::TooLarge {
            path,
            what: format!("the snapshot's {len} bytes"),
            limit: SNAPSHOT_BYTES_MAX,
        });
    }
    let bytes = Bytes::from(fs::read(&path).map_err(io_err(&path, "read"))?);
    snapshot::decode(id, bytes).map_err(|why| StoreError::Corrupt { path, why })
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
