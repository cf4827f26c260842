//! The tail cache: the most recently appended batches of one log, kept as the `Bytes` that
//! were written, so that consumers and followers reading at the tail cost no syscall.
//!
//! Invariants: entries are contiguous and end at the log end offset (every append pushes one
//! entry; truncation clears the cache); the cached bytes never exceed the configured limit
//! except for the newest entry, which is always kept.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use crate::batch::BatchHeader;

struct Entry {
    base_offset: i64,
    bytes: Bytes,
}

/// The largest append the cache keeps (see `push`).
pub(crate) const APPEND_MAX_BYTES: usize = 256 * 1024;

#[derive(Default)]
pub(crate) struct TailCache {
    entries: VecDeque<Entry>,
    bytes: u64,
    limit_bytes: u64,
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
        self.bytes += bytes.len() as u64;
        self.entries.push_back(Entry { base_offset, bytes });
        self.evict();
    }

    fn evict(&mut self) {
        while self.bytes > self.limit_bytes && self.entries.len() > 1 {
            let e = self.entries.pop_front().expect("non-empty");
            self.bytes -= e.bytes.len() as u64;
        }
        if self.limit_bytes == 0 {
            self.clear();
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
