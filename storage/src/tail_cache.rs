//! The tail cache: the most recently appended batches of one log, kept as the `Bytes` that
//! were written, so that consumers and followers reading at the tail cost no syscall.
//!
//! Invariants: entries are contiguous and end at the log end offset (every append pushes one
//! entry; truncation clears the cache); the cached bytes never exceed the configured limit
//! except for the newest entry, which is kept unless the process-wide budget is spent.
//!
//! The budget: every log's cache is also held to an equal share of one process-wide limit
//! ([`set_process_budget`], the broker's `log.tail.cache.bytes`), the limit divided by the
//! number of caches holding anything. Without it a broker with many active partitions kept
//! 4 MiB of produced batches for each (measured: 64 producers to 64 partitions took the
//! broker from 34 MB to 295 MB of RSS), which page-cache reads of the same bytes do not need:
//! consumers a little behind the tail read the segment file at nearly the same CPU. The budget
//! counts the cached batches, but each pins the request buffer it was received in (64 KiB or
//! more): 16 MiB of cached batches held about 55 MB of buffers in that test, hence a default
//! of 4 MiB, what one partition kept before.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};

use crate::batch::BatchHeader;

struct Entry {
    base_offset: i64,
    bytes: Bytes,
}

/// The largest append the cache keeps (see `push`).
pub(crate) const APPEND_MAX_BYTES: usize = 256 * 1024;

/// The tail caches of one process share this budget (bytes; `u64::MAX` until set).
static BUDGET_BYTES: AtomicU64 = AtomicU64::new(u64::MAX);
/// Bytes held by every tail cache of the process.
static USED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Tail caches of the process holding at least one entry.
static HOLDING: AtomicU64 = AtomicU64::new(0);

/// Sets the memory all tail caches of this process share (the broker's
/// `log.tail.cache.bytes`); 0 turns the caches off. Caches over their share shrink at their
/// next append or maintenance tick.
pub fn set_process_budget(bytes: u64) {
    BUDGET_BYTES.store(bytes, Ordering::Relaxed);
}

/// Bytes held by every tail cache of this process (a metric).
pub fn process_cached_bytes() -> u64 {
    USED_BYTES.load(Ordering::Relaxed)
}

/// One cache's share of the process budget: the budget over the caches holding something.
fn process_share() -> u64 {
    let budget = BUDGET_BYTES.load(Ordering::Relaxed);
    if budget == u64::MAX {
        return u64::MAX;
    }
    budget / HOLDING.load(Ordering::Relaxed).max(1)
}

#[derive(Default)]
pub(crate) struct TailCache {
    entries: VecDeque<Entry>,
    bytes: u64,
    limit_bytes: u64,
}

impl Drop for TailCache {
    fn drop(&mut self) {
        self.clear();
    }
}

/// What a read asks for (shared by the cache and the file path).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadBounds {
    pub from_offset: i64,
    pub max_bytes: usize,
    pub max_offset: i64,
    pub min_one_batch: bool,
}

impl TailCache {
    pub fn new(limit_bytes: u64) -> TailCache {
        TailCache {
            entries: VecDeque::new(),
            bytes: 0,
            limit_bytes,
        }
    }

    pub fn set_limit(&mut self, limit_bytes: u64) {
        self.limit_bytes = limit_bytes;
        self.evict();
    }

    pub fn clear(&mut self) {
        if !self.entries.is_empty() {
            HOLDING.fetch_sub(1, Ordering::Relaxed);
        }
        USED_BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
        self.entries.clear();
        self.bytes = 0;
    }

    /// Adds the whole batches appended at `base_offset`. An append larger than
    /// [`APPEND_MAX_BYTES`] empties the cache instead: holding it would pin the request buffer
    /// it lies in, and a producer sending large requests would then have every one received
    /// into fresh, cache-cold memory (1 KiB records at full rate cost the broker about a fifth
    /// more CPU that way). Consumers at the tail of such a log read from the page cache.
    pub fn push(&mut self, base_offset: i64, bytes: Bytes) {
        if self.limit_bytes == 0 {
            return;
        }
        if bytes.len() > APPEND_MAX_BYTES {
            self.clear();
            return;
        }
        if self.entries.is_empty() {
            HOLDING.fetch_add(1, Ordering::Relaxed);
        }
        USED_BYTES.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.bytes += bytes.len() as u64;
        self.entries.push_back(Entry { base_offset, bytes });
        self.evict();
    }

    fn evict(&mut self) {
        while self.bytes > self.limit_bytes && self.entries.len() > 1 {
            self.pop_oldest();
        }
        let share = process_share();
        while self.bytes > share && !self.entries.is_empty() {
            self.pop_oldest();
        }
        if self.limit_bytes == 0 {
            self.clear();
        }
        debug_assert_eq!(
            self.bytes,
            self.entries
                .iter()
                .map(|e| e.bytes.len() as u64)
                .sum::<u64>()
        );
    }

    /// Gives back what is over this cache's share of the process budget (an idle log's cache
    /// filled while fewer caches held anything).
    pub fn shrink_to_share(&mut self) {
        self.evict();
    }

    fn pop_oldest(&mut self) {
        let e = self.entries.pop_front().expect("non-empty");
        self.bytes -= e.bytes.len() as u64;
        USED_BYTES.fetch_sub(e.bytes.len() as u64, Ordering::Relaxed);
        if self.entries.is_empty() {
            HOLDING.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// First offset the cache can serve, if any.
    pub fn first_offset(&self) -> Option<i64> {
        self.entries.front().map(|e| e.base_offset)
    }

    /// Serves a read entirely from memory, or `None` if `from_offset` is older than the cache.
    /// Applies the same rules as a file read: whole batches from the one holding `from_offset`,
    /// none with an offset at or past `max_offset`, within `max_bytes` unless `min_one_batch`.
    pub fn read(&self, b: ReadBounds) -> Option<Bytes> {
        if self
            .first_offset()
            .is_none_or(|first| b.from_offset < first)
        {
            return None;
        }
        let i = self
            .entries
            .partition_point(|e| e.base_offset <= b.from_offset)
            - 1;
        let mut ranges: Vec<(usize, usize, usize)> = Vec::new(); // (entry, start, end)
        let mut total = 0usize;
        let mut started = false;
        'entries: for (idx, e) in self.entries.iter().enumerate().skip(i) {
            let mut pos = 0usize;
            while pos < e.bytes.len() {
                let h = BatchHeader::parse(&e.bytes[pos..]).expect("the cache holds whole batches");
                let size = h.size_bytes();
                if !started {
                    if h.last_offset() < b.from_offset {
                        pos += size;
                        continue;
                    }
                    started = true;
                }
                if h.last_offset() >= b.max_offset {
                    break 'entries;
                }
                if total + size > b.max_bytes && !(total == 0 && b.min_one_batch) {
                    break 'entries;
                }
                match ranges.last_mut() {
                    Some(r) if r.0 == idx && r.2 == pos => r.2 = pos + size,
                    _ => ranges.push((idx, pos, pos + size)),
                }
                total += size;
                pos += size;
                if total >= b.max_bytes {
                    break 'entries;
                }
            }
        }
        Some(match ranges.len() {
            0 => Bytes::new(),
            1 => {
                let (idx, s, e) = ranges[0];
                self.entries[idx].bytes.slice(s..e)
            }
            _ => {
                let mut out = BytesMut::with_capacity(total);
                for (idx, s, e) in ranges {
                    out.extend_from_slice(&self.entries[idx].bytes[s..e]);
                }
                out.freeze()
            }
        })
    }
}
