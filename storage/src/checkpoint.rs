//! Kafka's checkpoint files, in Kafka's text formats, written atomically.
//!
//! Offset checkpoints of a log directory (`recovery-point-offset-checkpoint`,
//! `replication-offset-checkpoint`, `log-start-offset-checkpoint`):
//!
//! ```text
//! 0                 <- version
//! 2                 <- entry count
//! orders 0 1200     <- topic partition offset
//! orders 1 980
//! ```
//!
//! The per-partition `leader-epoch-checkpoint` has the same shape with `epoch start_offset`
//! entries.
//!
//! Atomic write (Kafka's `CheckpointFile`): write `<name>.tmp`, fsync it, rename over the
//! target, fsync the directory. A reader therefore sees the old or the new file, never a mix.
//! Invariant: a reader refuses a file whose version is unknown, whose count disagrees with
//! its lines, or that has more than `CHECKPOINT_ENTRIES_MAX` entries.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use crate::config::TopicPartition;

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const REPLICATION_CHECKPOINT: &str = "replication-offset-checkpoint";
pub const LOG_START_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// Limit on entries in one checkpoint file (partitions in a log dir, epochs in a partition).
pub const CHECKPOINT_ENTRIES_MAX: usize = 1 << 20;
/// Limit on the size of a checkpoint file we are willing to read.
pub const CHECKPOINT_BYTES_MAX: u64 = 256 << 20;

const VERSION: u32 = 0;

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed checkpoint {}: {what}", path.display()),
    )
}

/// fsyncs a directory so that a rename or create inside it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `contents` to `path` atomically (temp file, fsync, rename, fsync the directory).
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomic_all(&[(path, contents)])
}

/// `write_atomic` for several files of one directory, sharing the directory fsync: each file
/// is replaced atomically (readers see old or new), and all are durable on return.
pub fn write_atomic_all(files: &[(&Path, &[u8])]) -> io::Result<()> {
    let Some((first, _)) = files.first() else {
        return Ok(());
    };
    let dir = first
        .parent()
        .ok_or_else(|| io::Error::other("checkpoint path has no parent"))?;
    let mut renames = Vec::with_capacity(files.len());
    for (path, contents) in files {
        debug_assert_eq!(path.parent(), Some(dir), "one directory per call");
        let mut tmp_name = path
            .file_name()
            .expect("checkpoint file name")
            .to_os_string();
        tmp_name.push(".tmp");
        let tmp = dir.join(tmp_name);
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        renames.push((tmp, *path));
    }
    for (tmp, path) in renames {
        fs::rename(&tmp, path)?;
    }
    sync_dir(dir)
}

fn encode<T: std::fmt::Display>(entries: impl ExactSizeIterator<Item = T>) -> Vec<u8> {
    let mut out = format!("{VERSION}\n{}\n", entries.len());
    for e in entries {
        out.push_str(&e.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// Reads the entry lines of a checkpoint; `Ok(None)` if the file does not exist.
fn read_lines(path: &Path) -> io::Result<Option<Vec<String>>> {
    let len = match fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if len > CHECKPOINT_BYTES_MAX {
        return Err(invalid(path, "file is too large"));
    }
    let text = fs::read_to_string(path)?;
    let mut lines = text.lines();
    let version: u32 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| invalid(path, "no version"))?;
    if version != VERSION {
        return Err(invalid(path, &format!("unknown version {version}")));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| invalid(path, "no entry count"))?;
    if count > CHECKPOINT_ENTRIES_MAX {
        return Err(invalid(
            path,
            &format!("{count} entries exceed the limit of {CHECKPOINT_ENTRIES_MAX}"),
        ));
    }
    let entries: Vec<String> = lines
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if entries.len() != count {
        return Err(invalid(
            path,
            &format!("expected {count} entries, found {}", entries.len()),
        ));
    }
    Ok(Some(entries))
}

/// Writes an offset checkpoint of a log directory.
#[cfg(test)]
pub fn write_offsets(path: &Path, offsets: &[(TopicPartition, i64)]) -> io::Result<()> {
    write_atomic(path, &encode_offsets(offsets))
}

/// The text of an offset checkpoint.
pub fn encode_offsets(offsets: &[(TopicPartition, i64)]) -> Vec<u8> {
    let lines = offsets
        .iter()
        .map(|(tp, o)| format!("{} {} {}", tp.topic, tp.partition, o));
    encode(lines.collect::<Vec<_>>().into_iter())
}

/// Reads an offset checkpoint; a missing file is an empty map.
pub fn read_offsets(path: &Path) -> io::Result<HashMap<TopicPartition, i64>> {
    let mut out = HashMap::new();
    for line in read_lines(path)?.unwrap_or_default() {
        let mut parts = line.split_whitespace();
        let (Some(topic), Some(p), Some(o), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid(path, &format!("bad line {line:?}")));
        };
        let partition: i32 = p
            .parse()
            .map_err(|_| invalid(path, &format!("bad partition in {line:?}")))?;
        let offset: i64 = o
            .parse()
            .map_err(|_| invalid(path, &format!("bad offset in {line:?}")))?;
        out.insert(TopicPartition::new(topic, partition), offset);
    }
    Ok(out)
}

/// Writes a partition's `leader-epoch-checkpoint`.
pub fn write_epochs(path: &Path, epochs: &[(i32, i64)]) -> io::Result<()> {
    let lines = epochs.iter().map(|(e, o)| format!("{e} {o}"));
    write_atomic(path, &encode(lines.collect::<Vec<_>>().into_iter()))
}

/// Reads a `leader-epoch-checkpoint`; a missing file is an empty list.
pub fn read_epochs(path: &Path) -> io::Result<Vec<(i32, i64)>> {
    let mut out = Vec::new();
    for line in read_lines(path)?.unwrap_or_default() {
        let mut parts = line.split_whitespace();
        let (Some(e), Some(o), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(invalid(path, &format!("bad line {line:?}")));
        };
        let epoch: i32 = e
            .parse()
            .map_err(|_| invalid(path, &format!("bad epoch in {line:?}")))?;
        let offset: i64 = o
            .parse()
            .map_err(|_| invalid(path, &format!("bad offset in {line:?}")))?;
        out.push((epoch, offset));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_use_kafkas_text_format_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECOVERY_POINT_CHECKPOINT);
        let tp = TopicPartition::new("orders", 3);
        write_offsets(&path, &[(tp.clone(), 1200)]).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "0\n1\norders 3 1200\n");
        assert_eq!(read_offsets(&path).unwrap()[&tp], 1200);
        assert!(!dir
            .path()
            .join("recovery-point-offset-checkpoint.tmp")
            .exists());
    }

    #[test]
    fn epochs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        write_epochs(&path, &[(0, 0), (3, 120)]).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "0\n2\n0 0\n3 120\n");
        assert_eq!(read_epochs(&path).unwrap(), vec![(0, 0), (3, 120)]);
    }

    #[test]
    fn malformed_files_are_refused_and_missing_ones_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        assert!(read_offsets(&path).unwrap().is_empty());
        fs::write(&path, "0\n2\norders 3 1200\n").unwrap();
        assert!(read_offsets(&path).is_err());
        fs::write(&path, "1\n0\n").unwrap();
        assert!(read_offsets(&path).is_err());
        fs::write(&path, "0\n99999999999\n").unwrap();
        assert!(read_offsets(&path).is_err());
    }
}
