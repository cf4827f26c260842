//! Group commit: one background thread that fdatasyncs segment files for every log, so that
//! fsync never blocks a thread serving sockets and one fdatasync acknowledges every append
//! that was waiting when it started.
//!
//! The thread takes everything queued, fdatasyncs each distinct file once, then advances each
//! log's flushed offset and completes every waiter. A request names every file it needs —
//! segments that rolled while unflushed as well as the active one — so a flushed offset never
//! passes data that is not on disk.
//!
//! A new segment's files are durable only once their names are, so a request also names the
//! log's directory while files were created in it since its last fsync (Kafka's `LocalLog.flush`
//! flushes the directory for new segments): without that, a power cut after a roll could take
//! fdatasync'd records with the segment's directory entry.
//!
//! Invariants: a flushed offset only moves forward within one log generation (truncation
//! starts a new generation, and completions from an older one are ignored); the queue holds at
//! most `QUEUE_DEPTH_MAX` waiters, beyond which `submit` fails at once instead of growing.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use crate::error::LogError;
use crate::file_cache::CachedFile;

/// Waiters the queue may hold.
pub const QUEUE_DEPTH_MAX: usize = 1 << 20;

/// The flushed offset of one log, shared with the group-commit thread.
#[derive(Debug)]
pub(crate) struct FlushState {
    inner: Mutex<FlushInner>,
}

#[derive(Debug)]
struct FlushInner {
    generation: u64,
    flushed: i64,
    /// A failed fdatasync: the page cache may have dropped data, so the log takes no more
    /// appends until it is reopened and recovered (fsync errors are not retried: after one,
    /// Linux may report later fsyncs as successful although the data is gone).
    failure: Option<String>,
    /// Files created in the log's directory so far, and how many of them an fsync of the
    /// directory covered (neither is reset by truncation: names outlive generations).
    names_created: u64,
    names_synced: u64,
}

impl FlushState {
    pub fn new(flushed: i64) -> Arc<FlushState> {
        Arc::new(FlushState {
            inner: Mutex::new(FlushInner {
                generation: 0,
                flushed,
                failure: None,
                names_created: 0,
                names_synced: 0,
            }),
        })
    }
    pub fn flushed(&self) -> i64 {
        self.inner.lock().flushed
    }
    pub fn generation(&self) -> u64 {
        self.inner.lock().generation
    }
    /// Everything below `up_to` is durable (if the log was not truncated since `generation`).
    pub fn advance(&self, generation: u64, up_to: i64) {
        let mut g = self.inner.lock();
        if g.generation == generation && up_to > g.flushed {
            g.flushed = up_to;
        }
    }
    pub fn failure(&self) -> Option<String> {
        self.inner.lock().failure.clone()
    }
    pub(crate) fn fail(&self, why: String) {
        self.inner.lock().failure.get_or_insert(why);
    }
    /// A file was created in the log's directory (a segment): its name is not durable yet.
    pub fn name_created(&self) {
        self.inner.lock().names_created += 1;
    }
    /// The names created so far, if an fsync of the directory has not covered them all.
    pub fn names_unsynced(&self) -> Option<u64> {
        let g = self.inner.lock();
        (g.names_synced < g.names_created).then_some(g.names_created)
    }
    /// An fsync of the directory covered the first `created` names.
    pub fn names_synced(&self, created: u64) {
        let mut g = self.inner.lock();
        g.names_synced = g.names_synced.max(created);
    }
    /// The log was truncated or reset: start a new generation with `flushed`.
    pub fn reset(&self, flushed: i64) {
        let mut g = self.inner.lock();
        g.generation += 1;
        g.flushed = flushed;
    }
}

/// A file a sync request names. Neither form holds a descriptor while queued (see
/// `file_cache.rs`): a segment's `.log` is opened through the file cache at sync time, an
/// index by its path. An fdatasync through any descriptor of the file makes it durable.
#[derive(Clone, Debug)]
pub(crate) enum SyncFile {
    Log(Arc<CachedFile>),
    Index(Arc<Path>),
}

impl SyncFile {
    pub(crate) fn path(&self) -> &Path {
        match self {
            SyncFile::Log(f) => f.path(),
            SyncFile::Index(p) => p,
        }
    }

    /// fdatasyncs the file. A file that no longer exists has nothing left to make durable:
    /// retention, DeleteRecords, truncation and partition deletion remove segments on purpose
    /// (a removed segment's offsets are gone for readers too), and a request made before that
    /// is answered as the old descriptor would have been.
    pub(crate) fn sync_data(&self) -> std::io::Result<()> {
        let result = match self {
            SyncFile::Log(f) => f.get().and_then(|f| f.sync_data()),
            SyncFile::Index(p) => OpenOptions::new()
                .write(true)
                .open(p)
                .and_then(|f| f.sync_data()),
        };
        match result {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// What must be fdatasync'd so that every offset below `up_to` of one log is durable.
pub struct SyncRequest {
    pub(crate) partition: String,
    pub(crate) files: Vec<SyncFile>,
    /// The log's directory, when files were created in it since its last fsync, with the
    /// count of names created so far.
    pub(crate) dir: Option<(Arc<Path>, u64)>,
    pub(crate) up_to: i64,
    pub(crate) generation: u64,
    pub(crate) state: Arc<FlushState>,
}

impl SyncRequest {
    /// The offset below which everything is durable once this request completes.
    pub fn up_to(&self) -> i64 {
        self.up_to
    }
    /// Whether the log's directory is fsynced too (files were created in it since its last).
    pub fn syncs_dir(&self) -> bool {
        self.dir.is_some()
    }
    /// True when nothing needs syncing (already flushed).
    pub fn is_noop(&self) -> bool {
        (self.files.is_empty() && self.dir.is_none()) || self.up_to <= self.state.flushed()
    }
}

impl std::fmt::Debug for SyncRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncRequest")
            .field("partition", &self.partition)
            .field("files", &self.files.len())
            .field("dir", &self.dir.as_ref().map(|(d, _)| d))
            .field("up_to", &self.up_to)
            .finish()
    }
}

type Waiter = (SyncRequest, oneshot::Sender<Result<(), LogError>>);

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

struct Queue {
    waiters: Vec<Waiter>,
    shutdown: bool,
    /// fdatasync calls made so far (for tests and metrics).
    syncs: u64,
    /// Test hook: fail every file of the next round with EIO.
    fail_next_round: bool,
    /// Rounds (drains of the queue) so far.
    rounds: u64,
}

/// The group-commit thread. Dropping the last handle drains the queue and stops the thread.
pub struct GroupCommit {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl GroupCommit {
    pub fn new() -> Arc<GroupCommit> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                waiters: Vec::new(),
                shutdown: false,
                syncs: 0,
                fail_next_round: false,
                rounds: 0,
            }),
            wake: Condvar::new(),
        });
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("samsa-group-commit".into())
            .spawn(move || run(&for_thread))
            .expect("spawn the group-commit thread");
        Arc::new(GroupCommit {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A process-wide instance, used by logs that were not given one (flush.messages and
    /// flush.ms flushes).
    pub fn shared() -> Arc<GroupCommit> {
        static SHARED: OnceLock<Arc<GroupCommit>> = OnceLock::new();
        SHARED.get_or_init(GroupCommit::new).clone()
    }

    /// Queues `req`; the receiver completes once its files are fdatasync'd (or at once when
    /// nothing needs syncing).
    pub fn submit(&self, req: SyncRequest) -> oneshot::Receiver<Result<(), LogError>> {
        let (tx, rx) = oneshot::channel();
        if req.is_noop() {
            // No file holds what lies between the flushed offset and `up_to` (the log restarted
            // past it, or it rolled an empty segment there): it is as durable as it will be.
            if req.files.is_empty() && req.dir.is_none() {
                req.state.advance(req.generation, req.up_to);
            }
            let _ = tx.send(Ok(()));
            return rx;
        }
        let mut q = self.shared.queue.lock();
        if q.shutdown || q.waiters.len() >= QUEUE_DEPTH_MAX {
            let why = if q.shutdown {
                "group commit is shut down"
            } else {
                "group commit queue is full"
            };
            let _ = tx.send(Err(LogError::Storage(std::io::Error::other(format!(
                "{why} (limit {QUEUE_DEPTH_MAX} waiters) for {}",
                req.partition
            )))));
            return rx;
        }
        q.waiters.push((req, tx));
        drop(q);
        self.shared.wake.notify_one();
        rx
    }

    /// Test hook: the next round's fdatasyncs all fail with EIO.
    #[doc(hidden)]
    pub fn inject_sync_failure(&self) {
        self.shared.queue.lock().fail_next_round = true;
    }

    /// fdatasync calls made so far.
    pub fn syncs(&self) -> u64 {
        self.shared.queue.lock().syncs
    }
    /// Queue drains (group commits) so far.
    pub fn rounds(&self) -> u64 {
        self.shared.queue.lock().rounds
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        self.shared.queue.lock().shutdown = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

fn run(shared: &Shared) {
    loop {
        let batch = {
            let mut q = shared.queue.lock();
            while q.waiters.is_empty() && !q.shutdown {
                shared.wake.wait(&mut q);
            }
            if q.waiters.is_empty() && q.shutdown {
                return;
            }
            (
                std::mem::take(&mut q.waiters),
                std::mem::take(&mut q.fail_next_round),
            )
        };
        let (batch, inject_failure) = batch;
        // Each distinct file once, in the order first seen (a log's rolled segments first), then
        // each directory with new names once.
        let mut seen: HashSet<&Path> = HashSet::new();
        let mut failed: Vec<(&Path, std::io::Error)> = Vec::new();
        let mut dirs_seen: HashSet<&Path> = HashSet::new();
        let mut dirs_failed: Vec<(&Path, std::io::Error)> = Vec::new();
        let mut syncs = 0u64;
        for (req, _) in &batch {
            if req.up_to <= req.state.flushed() {
                continue;
            }
            for f in &req.files {
                let ptr = f.path();
                if seen.insert(ptr) {
                    syncs += 1;
                    let result = if inject_failure {
                        Err(std::io::Error::from_raw_os_error(libc::EIO))
                    } else {
                        f.sync_data()
                    };
                    if let Err(e) = result {
                        failed.push((ptr, e));
                    }
                }
            }
        }
        for (req, _) in &batch {
            if let Some((dir, _)) = &req.dir {
                if req.up_to > req.state.flushed() && dirs_seen.insert(&**dir) {
                    syncs += 1;
                    if let Err(e) = crate::checkpoint::sync_dir(dir) {
                        dirs_failed.push((dir, e));
                    }
                }
            }
        }
        let dirs_failed: Vec<(Arc<Path>, std::io::Error)> = dirs_failed
            .into_iter()
            .map(|(d, e)| (Arc::from(d), e))
            .collect();
        let failed: Vec<(std::path::PathBuf, std::io::Error)> = failed
            .into_iter()
            .map(|(p, e)| (p.to_path_buf(), e))
            .collect();
        for (req, tx) in batch {
            let error = req
                .files
                .iter()
                .find_map(|f| failed.iter().find(|(p, _)| p == f.path()))
                .map(|(_, e)| e)
                .or_else(|| {
                    let (dir, _) = req.dir.as_ref()?;
                    dirs_failed.iter().find(|(d, _)| d == dir).map(|(_, e)| e)
                });
            let result = match error {
                None => {
                    if let Some((_, created)) = req.dir {
                        req.state.names_synced(created);
                    }
                    req.state.advance(req.generation, req.up_to);
                    Ok(())
                }
                Some(e) => {
                    let why = format!("fdatasync for {}: {e}", req.partition);
                    req.state.fail(why.clone());
                    Err(LogError::Storage(std::io::Error::new(e.kind(), why)))
                }
            };
            let _ = tx.send(result);
        }
        let mut q = shared.queue.lock();
        q.syncs += syncs;
        q.rounds += 1;
    }
}
