//! The process-wide bound on open segment files.
//!
//! A partition's active segment used to hold its `.log`, `.index` and `.timeindex` open for
//! as long as the partition existed, so the file-handle limit, not the disk, bounded how many
//! partitions a broker could hold (about 6,600 under a 20,000 limit, and then it could not
//! start). Now index files are opened only for the moment they are written (their entries
//! live in memory), and every segment's `.log` is a [`CachedFile`]: a path plus, while it is
//! in the cache, an open descriptor. The cache holds at most [`FileCache::capacity`]
//! descriptors; opening one more closes the least recently used idle one (the CLOCK
//! approximation of LRU: a use sets a bit, the sweeping hand clears it and closes files whose
//! bit is already clear). A closed file is reopened by path at its next use.
//!
//! What stays safe: users get an `Arc<File>`, so a file taken for a read, a sendfile range or
//! a group commit's fdatasync stays open until they drop it, even if the cache has let go of
//! it (the count of descriptors can exceed the capacity by those in flight, never by idle
//! ones). A reopened descriptor reaches the same inode, so an fdatasync through it makes the
//! writes made through the old one durable (and Linux reports a writeback error to the next
//! fsync of the file whoever opens it, since 4.16).
//!
//! Invariants: a `CachedFile` is in the ring at most once (`in_ring` under its lock); the ring
//! never holds more live open files than the capacity after `insert` returns, unless every
//! one of them is in use at that moment; the cache never takes a lock it could wait for while
//! holding the ring (eviction uses `try_lock`), so no lock order can deadlock.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

/// The smallest capacity the cache accepts: a handful of partitions must always be writable.
pub const CAPACITY_MIN: usize = 16;
/// The default capacity is this fraction of the soft `RLIMIT_NOFILE`: the rest is for
/// sockets, checkpoints, index writes and files in flight.
const DEFAULT_SHARE_OF_LIMIT: usize = 4;
/// ... and never more than this, however high the limit: a few thousand descriptors serve
/// any number of partitions, and the kernel's per-process file table stays small.
pub const DEFAULT_CAPACITY_MAX: usize = 8192;

/// The default capacity for a process whose soft descriptor limit is `limit`.
pub fn default_capacity(limit: u64) -> usize {
    let share = usize::try_from(limit / DEFAULT_SHARE_OF_LIMIT as u64).unwrap_or(usize::MAX);
    share.clamp(CAPACITY_MIN, DEFAULT_CAPACITY_MAX)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard one (as the JVM does for Kafka at start), and
/// returns the soft limit now in force (`None` when unlimited or unreadable).
pub fn raise_descriptor_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write one rlimit struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &raised);
        }
    }
    descriptor_limit()
}

/// The soft `RLIMIT_NOFILE` of this process (`None` when unlimited or unreadable).
pub fn descriptor_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// The bound on open files, shared by every log of the process.
pub struct FileCache {
    capacity: AtomicUsize,
    ring: Mutex<Ring>,
    opens: AtomicU64,
    evictions: AtomicU64,
}

#[derive(Default)]
struct Ring {
    slots: Vec<Weak<CachedFile>>,
    hand: usize,
}

/// Counters for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileCacheStats {
    pub capacity: usize,
    /// Files the cache holds open now.
    pub open: usize,
    /// Files opened (first use or reopen after eviction) since start.
    pub opens: u64,
    /// Files the cache closed to stay within its capacity since start.
    pub evictions: u64,
}

impl FileCache {
    pub fn new(capacity: usize) -> Arc<FileCache> {
        Arc::new(FileCache {
            capacity: AtomicUsize::new(capacity.max(CAPACITY_MIN)),
            ring: Mutex::new(Ring::default()),
            opens: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        })
    }

    /// The process's cache, sized from the descriptor limit on first use unless
    /// [`FileCache::set_capacity`] says otherwise.
    pub fn global() -> &'static Arc<FileCache> {
        static GLOBAL: OnceLock<Arc<FileCache>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| FileCache::new(default_capacity(descriptor_limit().unwrap_or(1 << 20))))
    }

    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Changes the bound; files beyond it are closed at the next open.
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity
            .store(capacity.max(CAPACITY_MIN), Ordering::Relaxed);
    }

    pub fn stats(&self) -> FileCacheStats {
        FileCacheStats {
            capacity: self.capacity(),
            open: self.ring.lock().slots.len(),
            opens: self.opens.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// Registers a file that was just opened, then closes idle ones until the ring is within
    /// the capacity. Called with `file`'s own lock held (so it cannot be chosen).
    fn insert(&self, file: Weak<CachedFile>) {
        self.opens.fetch_add(1, Ordering::Relaxed);
        let capacity = self.capacity();
        let mut ring = self.ring.lock();
        ring.slots.push(file);
        // Two passes of the hand clear every use bit once and then find any idle file; if
        // every file is in use the ring stays over capacity until the next insert.
        let mut budget = 2 * ring.slots.len();
        while ring.slots.len() > capacity && budget > 0 {
            budget -= 1;
            if ring.hand >= ring.slots.len() {
                ring.hand = 0;
            }
            let hand = ring.hand;
            let Some(f) = ring.slots[hand].upgrade() else {
                ring.slots.swap_remove(hand);
                continue;
            };
            if f.used.swap(false, Ordering::Relaxed) {
                ring.hand += 1;
                continue;
            }
            let Some(mut state) = f.state.try_lock() else {
                ring.hand += 1;
                continue;
            };
            if state.file.take().is_some() {
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
            state.in_ring = false;
            ring.slots.swap_remove(hand);
        }
    }
}

struct State {
    file: Option<Arc<File>>,
    in_ring: bool,
}

/// A segment's `.log`: its path, and a descriptor while the cache holds one.
pub struct CachedFile {
    path: PathBuf,
    /// The file's identity when first opened: a reopen that finds another file at the path
    /// (the partition deleted and a topic of the same name created since) fails instead of
    /// writing into the newcomer.
    identity: Identity,
    cache: Arc<FileCache>,
    used: AtomicBool,
    state: Mutex<State>,
    this: Weak<CachedFile>,
}

impl std::fmt::Debug for CachedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedFile")
            .field("path", &self.path)
            .field("open", &self.is_open())
            .finish()
    }
}

/// Device, inode and birth time (statx; `None` where the file system does not keep it): an
/// inode number alone is reused at once by ext4 for a file created after a deletion.
type Identity = (u64, u64, Option<std::time::SystemTime>);

fn identity(f: &File) -> io::Result<Identity> {
    use std::os::unix::fs::MetadataExt;
    let m = f.metadata()?;
    Ok((m.dev(), m.ino(), m.created().ok()))
}

fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

impl CachedFile {
    /// A file that exists at `path`, opened now (so that a missing file fails here).
    pub fn open(path: PathBuf, cache: &Arc<FileCache>) -> io::Result<Arc<CachedFile>> {
        let file = Arc::new(open_rw(&path)?);
        let identity = identity(&file)?;
        let cf = Arc::new_cyclic(|this| CachedFile {
            path,
            identity,
            cache: cache.clone(),
            used: AtomicBool::new(true),
            state: Mutex::new(State {
                file: Some(file),
                in_ring: true,
            }),
            this: this.clone(),
        });
        {
            let _held = cf.state.lock();
            cache.insert(cf.this.clone());
        }
        Ok(cf)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the cache holds a descriptor for it now.
    pub fn is_open(&self) -> bool {
        self.state.lock().file.is_some()
    }

    /// The open file, reopened by path if the cache had closed it. The descriptor stays open
    /// while the returned `Arc` lives.
    pub fn get(&self) -> io::Result<Arc<File>> {
        self.used.store(true, Ordering::Relaxed);
        let mut state = self.state.lock();
        if let Some(f) = &state.file {
            return Ok(f.clone());
        }
        let f = Arc::new(open_rw(&self.path)?);
        if identity(&f)? != self.identity {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} was deleted and another file took its name",
                    self.path.display()
                ),
            ));
        }
        state.file = Some(f.clone());
        if !state.in_ring {
            state.in_ring = true;
            self.cache.insert(self.this.clone());
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn files(dir: &Path, n: usize, cache: &Arc<FileCache>) -> Vec<Arc<CachedFile>> {
        (0..n)
            .map(|i| {
                let p = dir.join(format!("{i}.log"));
                std::fs::write(&p, format!("file {i}")).unwrap();
                CachedFile::open(p, cache).unwrap()
            })
            .collect()
    }

    /// One more file in `dir`, opened through `cache`.
    fn one_more(dir: &Path, name: &str, cache: &Arc<FileCache>) -> Arc<CachedFile> {
        let p = dir.join(name);
        std::fs::write(&p, name).unwrap();
        CachedFile::open(p, cache).unwrap()
    }

    fn open_count(fs: &[Arc<CachedFile>]) -> usize {
        fs.iter().filter(|f| f.is_open()).count()
    }

    #[test]
    fn never_more_open_than_the_capacity_and_every_file_stays_usable() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), 100, &cache);
        assert_eq!(open_count(&fs), CAPACITY_MIN);
        assert_eq!(cache.stats().open, CAPACITY_MIN);
        for round in 0..3 {
            for (i, f) in fs.iter().enumerate() {
                let mut b = vec![0u8; format!("file {i}").len()];
                f.get().unwrap().read_exact_at(&mut b, 0).unwrap();
                assert_eq!(b, format!("file {i}").as_bytes(), "round {round}");
                assert!(open_count(&fs) <= CAPACITY_MIN);
            }
        }
        let s = cache.stats();
        assert_eq!(s.open, CAPACITY_MIN);
        assert_eq!(s.opens - s.evictions, CAPACITY_MIN as u64);
        assert!(s.evictions >= 300 - CAPACITY_MIN as u64, "{s:?}");
    }

    #[test]
    fn a_recently_used_file_is_kept_and_an_idle_one_closed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN, &cache);
        // Opening one more makes a full sweep that clears every use bit; then only file 3 is
        // used again.
        let x = one_more(dir.path(), "x.log", &cache);
        // Opening x needed one slot: the hand cleared the bits and closed the first idle file.
        assert_eq!(cache.stats().open, CAPACITY_MIN);
        let closed: Vec<usize> = (0..CAPACITY_MIN).filter(|&i| !fs[i].is_open()).collect();
        assert_eq!(closed.len(), 1);
        fs[3].get().unwrap();
        let _y = one_more(dir.path(), "y.log", &cache);
        assert!(
            fs[3].is_open(),
            "a file used since the last sweep stays open"
        );
        assert!(!x.is_open(), "x, idle since the sweep, was under the hand");
        assert_eq!(cache.stats().open, CAPACITY_MIN);
    }

    #[test]
    fn a_file_in_use_outlives_its_eviction_and_dropped_files_leave_the_ring() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN, &cache);
        let held = fs[0].get().unwrap();
        // Force every file out by opening as many again.
        let others: Vec<Arc<CachedFile>> = (0..CAPACITY_MIN)
            .map(|i| {
                let p = dir.path().join(format!("o{i}.log"));
                std::fs::write(&p, b"o").unwrap();
                CachedFile::open(p, &cache).unwrap()
            })
            .collect();
        assert!(!fs[0].is_open());
        let mut b = [0u8; 6];
        held.read_exact_at(&mut b, 0).unwrap();
        assert_eq!(&b, b"file 0");
        // Dropping files frees their slots at the next sweep.
        drop(others);
        drop(fs);
        let _z = one_more(dir.path(), "z.log", &cache);
        assert!(cache.stats().open <= CAPACITY_MIN);
    }

    #[test]
    fn a_deleted_file_is_not_recreated_by_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN + 1, &cache);
        assert!(!fs[0].is_open());
        std::fs::remove_file(fs[0].path()).unwrap();
        assert_eq!(fs[0].get().unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(!fs[0].path().exists());
    }

    #[test]
    fn a_file_replaced_under_its_name_is_not_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN + 1, &cache);
        assert!(!fs[0].is_open());
        std::fs::remove_file(fs[0].path()).unwrap();
        std::fs::write(fs[0].path(), b"a newcomer").unwrap();
        let e = fs[0].get().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("another file took its name"), "{e}");
        assert_eq!(std::fs::read(fs[0].path()).unwrap(), b"a newcomer");
    }

    #[test]
    fn files_in_use_are_never_closed_and_the_ring_shrinks_once_they_are_idle() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN, &cache);
        // Every file busy (its lock held, as during a get): the sweep gives up and the ring
        // stays one over its capacity.
        let guards: Vec<_> = fs.iter().map(|f| f.state.lock()).collect();
        let busy = one_more(dir.path(), "busy.log", &cache);
        assert_eq!(cache.stats().open, CAPACITY_MIN + 1);
        assert_eq!(cache.stats().evictions, 0);
        drop(guards);
        assert!(fs.iter().all(|f| f.is_open()) && busy.is_open());
        // Idle again: the next open brings the ring back to its capacity.
        let _next = one_more(dir.path(), "next.log", &cache);
        assert_eq!(cache.stats().open, CAPACITY_MIN);
        assert_eq!(cache.stats().evictions, 2);
    }

    #[test]
    fn the_second_pass_reaches_past_busy_files() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN, &cache);
        // The first pass clears every use bit; the second must walk past four busy files to
        // the first idle one.
        let guards: Vec<_> = fs[..4].iter().map(|f| f.state.lock()).collect();
        let _one_more = one_more(dir.path(), "one-more.log", &cache);
        drop(guards);
        assert_eq!(cache.stats().open, CAPACITY_MIN);
        assert_eq!(cache.stats().evictions, 1);
        assert!(fs[..4].iter().all(|f| f.is_open()));
        assert!(!fs[4].is_open());
    }

    #[test]
    fn the_hand_passes_over_a_file_used_since_its_bit_was_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(CAPACITY_MIN);
        let fs = files(dir.path(), CAPACITY_MIN, &cache);
        // x's open sweeps every bit clear and takes the closed file's place under the hand.
        let x = one_more(dir.path(), "x.log", &cache);
        assert!(!fs[0].is_open());
        x.get().unwrap();
        let _y = one_more(dir.path(), "y.log", &cache);
        assert!(x.is_open(), "used again, x keeps its descriptor");
        assert!(!fs[1].is_open(), "the next idle file goes instead");
        assert!(format!("{x:?}").contains("x.log") && format!("{x:?}").contains("open: true"));
    }

    #[test]
    fn a_lower_capacity_applies_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileCache::new(2 * CAPACITY_MIN);
        let fs = files(dir.path(), 2 * CAPACITY_MIN, &cache);
        assert_eq!(cache.stats().open, 2 * CAPACITY_MIN);
        cache.set_capacity(CAPACITY_MIN);
        assert_eq!(cache.capacity(), CAPACITY_MIN);
        fs[0].get().unwrap();
        let _after = one_more(dir.path(), "after.log", &cache);
        assert_eq!(cache.stats().open, CAPACITY_MIN);
        cache.set_capacity(1);
        assert_eq!(cache.capacity(), CAPACITY_MIN, "never below the minimum");
    }

    #[test]
    fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one struct we own.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
        let raised = raise_descriptor_limit();
        assert_eq!(descriptor_limit(), raised);
        if r.rlim_max != libc::RLIM_INFINITY {
            assert_eq!(raised, Some(r.rlim_max));
        }
        assert!(raised.is_none_or(|l| l >= r.rlim_cur));
    }

    #[test]
    fn the_default_capacity_is_a_share_of_the_limit() {
        assert_eq!(default_capacity(20_000), 5_000);
        assert_eq!(default_capacity(1 << 20), DEFAULT_CAPACITY_MAX);
        assert_eq!(default_capacity(10), CAPACITY_MIN);
    }
}
