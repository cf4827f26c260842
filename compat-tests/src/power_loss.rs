//! Power loss for tests: the shim (`powerloss/powerloss.c`, an LD_PRELOAD library) journals,
//! while a process runs, what a power cut would take from the files under one directory;
//! [`apply`] rolls that directory back once the process is gone (SIGKILL first: a process that
//! still runs would keep writing). A SIGKILL alone keeps the page cache, so everything written
//! survives it; a power loss keeps only what was fsynced, and names only once their directory
//! was fsynced. The shim's header comment states the model and its limits.
//!
//! C rather than a Rust cdylib: the shim must define C's variadic `open(const char *, int, ...)`
//! and `fcntl`, which stable Rust cannot, and `cc` is on every machine; it is built once per
//! test process into the target directory.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The environment variables that put a process under the shim, watching `root` and keeping
/// its journals in `journal` (outside `root`, on the same filesystem).
pub fn env(root: &Path, journal: &Path) -> Vec<(String, String)> {
    vec![
        ("LD_PRELOAD".into(), shim().display().to_string()),
        ("POWERLOSS_ROOT".into(), root.display().to_string()),
        ("POWERLOSS_JOURNAL".into(), journal.display().to_string()),
    ]
}

/// Where the journals of a data directory go: beside it (`<dir>.powerloss`).
pub fn journal_dir(root: &Path) -> PathBuf {
    let mut name = root.file_name().unwrap_or_default().to_os_string();
    name.push(".powerloss");
    root.with_file_name(name)
}

/// The shim, compiled with `cc` (or `$CC`) into the target directory once per process, and
/// again whenever its source is newer than the library.
pub fn shim() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source = crate::workspace_root().join("compat-tests/powerloss/powerloss.c");
            let out_dir = std::env::var("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|_| crate::workspace_root().join("target"))
                .join("powerloss");
            fs::create_dir_all(&out_dir).expect("create the shim's build directory");
            let lib = out_dir.join("libsamsa_powerloss.so");
            let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
            if modified(&lib).is_some() && modified(&lib) >= modified(&source) {
                return lib;
            }
            // Built under a name of its own and renamed: test processes may build at once.
            let tmp = out_dir.join(format!("libsamsa_powerloss.so.{}", std::process::id()));
            let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
            let status = Command::new(&cc)
                .args([
                    "-shared",
                    "-fPIC",
                    "-O2",
                    "-Wall",
                    "-Wno-format-truncation",
                    "-o",
                ])
                .arg(&tmp)
                .arg(&source)
                .args(["-ldl", "-lpthread"])
                .status()
                .unwrap_or_else(|e| panic!("cannot run {cc} to build the power-loss shim: {e}"));
            assert!(
                status.success(),
                "{cc} failed to build {}",
                source.display()
            );
            fs::rename(&tmp, &lib).expect("move the power-loss shim into place");
            lib
        })
        .clone()
}

/// What a power loss took away.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lost {
    /// Files whose contents went back to their last sync.
    pub files_rolled_back: usize,
    /// Bytes past the synced size that were cut off.
    pub bytes_cut: u64,
    /// Bytes of synced ranges that were overwritten and are restored.
    pub bytes_restored: u64,
    /// Creates, mkdirs and renames undone (their directory was not fsynced after them).
    pub names_undone: usize,
}

/// One line of the name journal.
enum NameOp {
    Create(PathBuf),
    Mkdir(PathBuf),
    Rename {
        from: PathBuf,
        to: PathBuf,
        kept: Option<PathBuf>,
    },
    /// An fsync of the directory that covers the name journal's first `covered` lines.
    Sync {
        dir: PathBuf,
        covered: usize,
    },
}

fn parse_name_op(line: &str) -> Option<NameOp> {
    let fields: Vec<&str> = line.split('\t').collect();
    Some(match fields.as_slice() {
        ["C", p] => NameOp::Create(p.into()),
        ["D", p] => NameOp::Mkdir(p.into()),
        ["R", from, to, kept] => NameOp::Rename {
            from: from.into(),
            to: to.into(),
            kept: (*kept != "-").then(|| kept.into()),
        },
        ["S", dir, covered] => NameOp::Sync {
            dir: dir.into(),
            covered: covered.parse().ok()?,
        },
        _ => return None, // a line torn by a SIGKILL: its operation never returned
    })
}

fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Rolls `root` back to what a disk keeps through a power cut, by the journals in `journal`,
/// then empties `journal`. Every process writing under `root` must be gone.
pub fn apply(root: &Path, journal: &Path) -> io::Result<Lost> {
    let mut lost = Lost::default();
    let names = match fs::read_to_string(journal.join("ns")) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let ops: Vec<Option<NameOp>> = names.lines().map(parse_name_op).collect();
    // For each directory, how many of the first lines its last fsync covers.
    let mut synced: HashMap<PathBuf, usize> = HashMap::new();
    for op in ops.iter().flatten() {
        if let NameOp::Sync { dir, covered } = op {
            let c = synced.entry(dir.clone()).or_default();
            *c = (*c).max(*covered);
        }
    }
    let durable = |line: usize, dir: &Path| synced.get(dir).is_some_and(|&c| c > line);
    // Undone newest first, so that each sees the names as they were when it was made.
    for (line, op) in ops.iter().enumerate().rev() {
        match op {
            Some(NameOp::Create(p)) if !durable(line, &parent(p)) => {
                lost.names_undone += 1;
                if fs::symlink_metadata(p).is_ok_and(|m| m.is_file()) {
                    fs::remove_file(p)?;
                }
            }
            Some(NameOp::Mkdir(p)) if !durable(line, &parent(p)) => {
                lost.names_undone += 1;
                if p.is_dir() {
                    fs::remove_dir_all(p)?;
                }
            }
            Some(NameOp::Rename { from, to, kept })
                if !(durable(line, &parent(from)) && durable(line, &parent(to))) =>
            {
                lost.names_undone += 1;
                if fs::symlink_metadata(to).is_ok() && parent(from).is_dir() {
                    fs::rename(to, from)?;
                }
                if let Some(kept) = kept {
                    if parent(to).is_dir() {
                        fs::rename(kept, to)?;
                    }
                }
            }
            _ => {}
        }
    }
    // Contents: every file under root with a journal goes back to its last sync.
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                let j = journal.join(format!("j-{}-{}", meta.dev(), meta.ino()));
                if let Ok(bytes) = fs::read(&j) {
                    roll_back(&entry.path(), meta.len(), &bytes, &mut lost)?;
                }
            }
        }
    }
    for entry in fs::read_dir(journal)? {
        let p = entry?.path();
        if p.is_dir() {
            fs::remove_dir_all(p)?;
        } else {
            fs::remove_file(p)?;
        }
    }
    Ok(lost)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Applies one content journal: the synced size, then the saved old bytes, newest first.
fn roll_back(path: &Path, len: u64, journal: &[u8], lost: &mut Lost) -> io::Result<()> {
    if journal.len() < 24 || &journal[..4] != b"SPLJ" {
        return Err(io::Error::other(format!(
            "malformed power-loss journal for {}",
            path.display()
        )));
    }
    let synced = u64_at(journal, 8);
    let mut records = Vec::new();
    let mut at = 24;
    while at + 16 <= journal.len() {
        let (off, n) = (u64_at(journal, at), u64_at(journal, at + 8) as usize);
        if n > journal.len() - at - 16 {
            break; // torn by a SIGKILL: the write it protected never happened
        }
        records.push((off, &journal[at + 16..at + 16 + n]));
        at += 16 + n;
    }
    let f = fs::OpenOptions::new().write(true).open(path)?;
    f.set_len(synced)?;
    let restored_before = lost.bytes_restored;
    for (off, old) in records.into_iter().rev() {
        if off >= synced {
            continue;
        }
        let keep = &old[..old.len().min((synced - off) as usize)];
        f.write_all_at(keep, off)?;
        lost.bytes_restored += keep.len() as u64;
    }
    lost.bytes_cut += len.saturating_sub(synced);
    if len != synced || lost.bytes_restored != restored_before {
        lost.files_rolled_back += 1;
    }
    Ok(())
}
