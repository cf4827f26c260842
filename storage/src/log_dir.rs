//! `LogDir`: one log directory (a `log.dirs` entry) — its partition directories, its three
//! offset checkpoints and its clean-shutdown marker — as Kafka lays them out.
//!
//! Invariants: one process at a time owns a directory (an exclusive `flock` on `.lock`);
//! the clean-shutdown marker exists only between `mark_clean_shutdown` and the next open,
//! which removes it before any log is modified; a deleted partition's directory is first
//! renamed to `<dir>.<nonce>-delete` (a name no partition parses to), so a crash midway
//! leaves nothing that could be reloaded as data.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::checkpoint::{
    self, LOG_START_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT,
};
use crate::config::{LogConfig, TopicPartition};
use crate::error::LogError;
use crate::log::{Log, OpenHints, PartitionCheckpoint};

/// Kafka's clean-shutdown marker file name.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
const LOCK_FILE: &str = ".lock";
const DELETE_SUFFIX: &str = "-delete";
/// KRaft's metadata topic. Its log (`__cluster_metadata-0`) may live in a log directory but is
/// the controller's, opened with [`Log::open_standalone`]: `LogDir::open` leaves it alone, as
/// Kafka's `LogManager` does.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// Partitions one log directory may hold.
pub const PARTITIONS_PER_DIR_MAX: usize = 1 << 20;

/// One log directory.
#[derive(Debug)]
pub struct LogDir {
    path: PathBuf,
    _lock: File,
}

fn dir_io(path: &Path, what: &str, e: io::Error) -> LogError {
    LogError::Storage(io::Error::new(
        e.kind(),
        format!("{what} in log dir {}: {e}", path.display()),
    ))
}

fn read_checkpoint(path: &Path, name: &str) -> HashMap<TopicPartition, i64> {
    match checkpoint::read_offsets(&path.join(name)) {
        Ok(m) => m,
        Err(e) => {
            // A damaged checkpoint only costs a longer recovery: the logs themselves are truth.
            tracing::warn!(file = name, error = %e, "ignoring an unreadable checkpoint");
            HashMap::new()
        }
    }
}

/// A partition directory found at start and not opened yet: what opening it needs.
#[derive(Debug)]
pub struct UnopenedLog {
    pub tp: TopicPartition,
    path: PathBuf,
    hints: OpenHints,
}

impl LogDir {
    /// Opens (creating if missing) a log directory and recovers every partition in it.
    pub fn open(
        path: &Path,
        configs: impl Fn(&TopicPartition) -> LogConfig,
    ) -> Result<(LogDir, Vec<(TopicPartition, Log)>), LogError> {
        let (dir, logs, unopened) = LogDir::open_some(path, configs, |_| true)?;
        debug_assert!(unopened.is_empty());
        Ok((dir, logs))
    }

    /// Opens (creating if missing) a log directory and recovers the partitions `open_now`
    /// names; the others are listed unopened, to be opened ([`LogDir::open_unopened`]) when
    /// something claims them, or removed as strays ([`LogDir::remove_stray`]) without their
    /// files ever being read.
    pub fn open_some(
        path: &Path,
        configs: impl Fn(&TopicPartition) -> LogConfig,
        open_now: impl Fn(&TopicPartition) -> bool,
    ) -> Result<(LogDir, Vec<(TopicPartition, Log)>, Vec<UnopenedLog>), LogError> {
        fs::create_dir_all(path).map_err(|e| dir_io(path, "create", e))?;
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path.join(LOCK_FILE))
            .map_err(|e| dir_io(path, "open .lock", e))?;
        // SAFETY: flock on a valid open descriptor has no memory-safety preconditions.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(dir_io(
                path,
                "lock (is another broker using it?)",
                io::Error::last_os_error(),
            ));
        }
        let dir = LogDir {
            path: path.to_path_buf(),
            _lock: lock,
        };
        let clean_marker = path.join(CLEAN_SHUTDOWN_FILE);
        let clean_shutdown = clean_marker.exists();
        let recovery_points = read_checkpoint(path, RECOVERY_POINT_CHECKPOINT);
        let high_watermarks = read_checkpoint(path, REPLICATION_CHECKPOINT);
        let log_starts = read_checkpoint(path, LOG_START_CHECKPOINT);
        if clean_shutdown {
            // Remove the marker before touching any log, so a crash during this run is seen
            // as unclean next time.
            fs::remove_file(&clean_marker)
                .map_err(|e| dir_io(path, "remove the clean-shutdown marker", e))?;
            checkpoint::sync_dir(path).map_err(|e| dir_io(path, "sync", e))?;
        }
        let mut logs = Vec::new();
        let mut unopened = Vec::new();
        let mut entries: Vec<(String, PathBuf)> = Vec::new();
        for entry in fs::read_dir(path).map_err(|e| dir_io(path, "list", e))? {
            let entry = entry.map_err(|e| dir_io(path, "list", e))?;
            if !entry
                .file_type()
                .map_err(|e| dir_io(path, "list", e))?
                .is_dir()
            {
                continue;
            }
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            entries.push((name, entry.path()));
        }
        entries.sort();
        for (name, p) in entries {
            if name.ends_with(DELETE_SUFFIX) {
                if let Err(e) = fs::remove_dir_all(&p) {
                    tracing::warn!(dir = %p.display(), error = %e, "could not remove a deleted partition");
                }
                continue;
            }
            let Some(tp) = TopicPartition::parse_dir_name(&name) else {
                tracing::warn!(dir = %p.display(), "skipping a directory that is not a partition");
                continue;
            };
            if tp.topic == METADATA_TOPIC {
                continue;
            }
            if logs.len() + unopened.len() >= PARTITIONS_PER_DIR_MAX {
                return Err(LogError::InvalidRequest(format!(
                    "log dir {} holds more than {PARTITIONS_PER_DIR_MAX} partitions",
                    path.display()
                )));
            }
            let hints = OpenHints {
                recovery_point: recovery_points.get(&tp).copied(),
                log_start_offset: log_starts.get(&tp).copied(),
                high_watermark: high_watermarks.get(&tp).copied(),
                clean_shutdown,
            };
            if !open_now(&tp) {
                unopened.push(UnopenedLog { tp, path: p, hints });
                continue;
            }
            let config = configs(&tp);
            let log = Log::open(&p, tp.clone(), config, hints)?;
            logs.push((tp, log));
        }
        Ok((dir, logs, unopened))
    }

    /// Opens and recovers a partition [`LogDir::open_some`] left unopened.
    pub fn open_unopened(&self, unopened: UnopenedLog, config: LogConfig) -> Result<Log, LogError> {
        Log::open(&unopened.path, unopened.tp, config, unopened.hints)
    }

    /// Takes a stray partition directory (one no topic claims) out of the log directory at
    /// once: renamed to a name no partition parses to, so nothing reloads it, and a restart
    /// deletes it at open. Returns the new name, for [`LogDir::delete_later`].
    pub fn remove_stray(&self, unopened: UnopenedLog) -> Result<PathBuf, LogError> {
        let tp = unopened.tp;
        let doomed = self.doomed_name(&tp);
        fs::rename(&unopened.path, &doomed)
            .map_err(|e| LogError::io(&tp, "rename a stray for deletion", e))?;
        checkpoint::sync_dir(&self.path).map_err(|e| LogError::io(&tp, "sync the log dir", e))?;
        Ok(doomed)
    }

    /// Deletes `dirs` after `delay`, on one background thread.
    pub fn delete_later(dirs: Vec<PathBuf>, delay: std::time::Duration) -> io::Result<()> {
        std::thread::Builder::new()
            .name("stray-delete".into())
            .spawn(move || {
                std::thread::sleep(delay);
                for dir in dirs {
                    if let Err(e) = fs::remove_dir_all(&dir) {
                        tracing::warn!(dir = %dir.display(), error = %e, "could not delete a stray partition");
                    }
                }
            })
            .map(|_| ())
    }

    /// The name a partition directory takes when it is deleted: `<dir>.<nonce>-delete`.
    fn doomed_name(&self, tp: &TopicPartition) -> PathBuf {
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        self.path
            .join(format!("{}.{nonce:x}{DELETE_SUFFIX}", tp.dir_name()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates an empty log for a new partition (or opens it if its directory exists).
    pub fn create_log(&self, tp: &TopicPartition, config: LogConfig) -> Result<Log, LogError> {
        if !crate::config::is_valid_topic_name(&tp.topic) || tp.partition < 0 {
            return Err(LogError::InvalidRequest(format!(
                "{tp} is not a valid topic partition"
            )));
        }
        let p = self.path.join(tp.dir_name());
        let existed = p.exists();
        let log = match Log::open(&p, tp.clone(), config, OpenHints::default()) {
            Ok(log) => log,
            Err(e) => {
                // Leave no half-made partition behind (a stray at the next start).
                if !existed {
                    let _ = fs::remove_dir_all(&p);
                }
                return Err(e);
            }
        };
        if !existed {
            checkpoint::sync_dir(&self.path).map_err(|e| dir_io(&self.path, "sync", e))?;
        }
        Ok(log)
    }

    /// Records in a partition's directory the id of the topic it belongs to (Kafka's
    /// `partition.metadata`), so that a directory left behind by a deleted topic is never taken
    /// for a new topic of the same name.
    pub fn write_partition_metadata(
        &self,
        tp: &TopicPartition,
        topic_id: [u8; 16],
    ) -> Result<(), LogError> {
        let dir = self.path.join(tp.dir_name());
        let text = format!("version: 0\ntopic_id: {}\n", kafka_uuid_string(topic_id));
        checkpoint::write_atomic(&dir.join(PARTITION_METADATA_FILE), text.as_bytes())
            .map_err(|e| LogError::io(tp, "write partition.metadata", e))
    }

    /// The topic id a partition's directory records, if it has `partition.metadata`.
    pub fn read_partition_metadata(
        &self,
        tp: &TopicPartition,
    ) -> Result<Option<[u8; 16]>, LogError> {
        let path = self.path.join(tp.dir_name()).join(PARTITION_METADATA_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LogError::io(tp, "read partition.metadata", e)),
        };
        let corrupt = || {
            LogError::io(
                tp,
                "read partition.metadata",
                io::Error::other(format!("{} is malformed", path.display())),
            )
        };
        let mut lines = text.lines();
        if lines.next().map(str::trim) != Some("version: 0") {
            return Err(corrupt());
        }
        lines
            .next()
            .and_then(|l| l.trim().strip_prefix("topic_id: "))
            .and_then(parse_kafka_uuid)
            .map(Some)
            .ok_or_else(corrupt)
    }

    /// Deletes a partition's log and directory.
    pub fn delete_log(&self, tp: &TopicPartition, log: Log) -> Result<(), LogError> {
        drop(log);
        self.delete_partition_dir(tp)
    }

    /// Deletes a partition's directory while its `Log` may still be open elsewhere (the broker
    /// keeps it behind a shared handle until in-flight requests finish). Open handles keep
    /// reading the unlinked files; nothing new is written under the partition's name.
    pub fn delete_partition_dir(&self, tp: &TopicPartition) -> Result<(), LogError> {
        let p = self.path.join(tp.dir_name());
        let doomed = self.doomed_name(tp);
        match fs::rename(&p, &doomed) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(LogError::io(tp, "rename for deletion", e)),
        }
        checkpoint::sync_dir(&self.path).map_err(|e| LogError::io(tp, "sync the log dir", e))?;
        fs::remove_dir_all(&doomed).map_err(|e| LogError::io(tp, "delete", e))
    }

    /// Writes the three offset checkpoints for `parts` (every partition in this directory).
    pub fn write_checkpoints(
        &self,
        parts: &[(TopicPartition, PartitionCheckpoint)],
    ) -> Result<(), LogError> {
        let pick = |f: fn(&PartitionCheckpoint) -> i64| -> Vec<(TopicPartition, i64)> {
            parts.iter().map(|(tp, c)| (tp.clone(), f(c))).collect()
        };
        let contents: Vec<(std::path::PathBuf, Vec<u8>)> = [
            (RECOVERY_POINT_CHECKPOINT, pick(|c| c.recovery_point)),
            (REPLICATION_CHECKPOINT, pick(|c| c.high_watermark)),
            (LOG_START_CHECKPOINT, pick(|c| c.log_start_offset)),
        ]
        .into_iter()
        .map(|(name, offsets)| (self.path.join(name), checkpoint::encode_offsets(&offsets)))
        .collect();
        let files: Vec<(&Path, &[u8])> = contents
            .iter()
            .map(|(p, c)| (p.as_path(), c.as_slice()))
            .collect();
        checkpoint::write_atomic_all(&files)
            .map_err(|e| dir_io(&self.path, "write the offset checkpoints", e))?;
        Ok(())
    }

    /// Reads back the checkpoints (for tools and tests).
    pub fn read_checkpoints(
        &self,
    ) -> Result<HashMap<TopicPartition, PartitionCheckpoint>, LogError> {
        let rp = read_checkpoint(&self.path, RECOVERY_POINT_CHECKPOINT);
        let hw = read_checkpoint(&self.path, REPLICATION_CHECKPOINT);
        let ls = read_checkpoint(&self.path, LOG_START_CHECKPOINT);
        Ok(rp
            .into_iter()
            .map(|(tp, recovery_point)| {
                let c = PartitionCheckpoint {
                    recovery_point,
                    high_watermark: hw.get(&tp).copied().unwrap_or(0),
                    log_start_offset: ls.get(&tp).copied().unwrap_or(0),
                };
                (tp, c)
            })
            .collect())
    }

    /// Writes the clean-shutdown marker. Call after every log was `close`d and the checkpoints
    /// written: the next open then skips recovery scans.
    pub fn mark_clean_shutdown(&self) -> Result<(), LogError> {
        checkpoint::write_atomic(&self.path.join(CLEAN_SHUTDOWN_FILE), b"")
            .map_err(|e| dir_io(&self.path, "write the clean-shutdown marker", e))
    }
}

/// Kafka's `partition.metadata` file name.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A 16-byte id as Kafka writes ids (`Uuid.toString`, cluster ids): URL-safe base64 without
/// padding, 22 characters.
pub fn kafka_uuid_string(bytes: [u8; 16]) -> String {
    let mut out = String::with_capacity(22);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in bytes {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 6 {
            bits -= 6;
            out.push(BASE64_URL[((acc >> bits) & 63) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(BASE64_URL[((acc << (6 - bits)) & 63) as usize] as char);
    }
    out
}

/// The id [`kafka_uuid_string`] wrote, or `None` if `text` is not one.
pub fn parse_kafka_uuid(text: &str) -> Option<[u8; 16]> {
    if text.len() != 22 {
        return None;
    }
    let mut out = [0u8; 16];
    let (mut acc, mut bits, mut n) = (0u32, 0, 0);
    for c in text.bytes() {
        let v = BASE64_URL.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            if n < 16 {
                out[n] = (acc >> bits) as u8;
                n += 1;
            }
        }
    }
    // The last character carries 2 bits of the id and 4 that must be zero.
    (n == 16 && acc & ((1 << bits) - 1) == 0).then_some(out)
}

#[cfg(test)]
mod partition_metadata_tests {
    use super::*;

    #[test]
    fn ids_round_trip_as_kafka_writes_them() {
        // Kafka's Uuid.toString of 0x0102..0f10.
        let id: [u8; 16] = std::array::from_fn(|i| i as u8 + 1);
        let text = kafka_uuid_string(id);
        assert_eq!(text, "AQIDBAUGBwgJCgsMDQ4PEA");
        assert_eq!(parse_kafka_uuid(&text), Some(id));
        assert_eq!(
            parse_kafka_uuid("AQIDBAUGBwgJCgsMDQ4PEB"),
            None,
            "stray low bits"
        );
        assert_eq!(parse_kafka_uuid("AQIDBAUGBwgJCgsMDQ4PE"), None, "short");
        assert_eq!(
            parse_kafka_uuid("AQIDBAUGBwgJCgsMDQ4P+A"),
            None,
            "not URL-safe base64"
        );
    }

    #[test]
    fn a_partition_directory_remembers_its_topic_id() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, _) = LogDir::open(tmp.path(), |_| LogConfig::default()).unwrap();
        let tp = TopicPartition::new("orders", 2);
        let log = dir.create_log(&tp, LogConfig::default()).unwrap();
        assert_eq!(dir.read_partition_metadata(&tp).unwrap(), None);
        dir.write_partition_metadata(&tp, [7; 16]).unwrap();
        assert_eq!(dir.read_partition_metadata(&tp).unwrap(), Some([7; 16]));
        std::fs::write(
            tmp.path().join("orders-2").join(PARTITION_METADATA_FILE),
            "junk",
        )
        .unwrap();
        assert!(dir.read_partition_metadata(&tp).is_err());
        drop(log);
    }
}
