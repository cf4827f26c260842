//! A global allocator wrapper that counts heap allocations, so that "no allocation per request
//! in steady state" is a number the metrics endpoint shows (`samsa_heap_allocations_total`,
//! beside `samsa_requests_total`) rather than a hope.
//!
//! Each thread counts in a thread-local cell and adds its count to the shared total every
//! [`FLUSH_EVERY`] allocations, so the hot path is a thread-local increment and the shared
//! cache line is touched once per batch. The total therefore lags by less than `FLUSH_EVERY`
//! per thread: exact enough for per-request figures over thousands of requests.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

const FLUSH_EVERY: u64 = 64;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and without a destructor: touching it never allocates, which an allocator
    // must not do.
    static PENDING: Cell<u64> = const { Cell::new(0) };
}

/// Heap allocations (including reallocations) made by the process so far, as far as the
/// threads have reported them.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

fn count_one() {
    // A thread being torn down may no longer have its cell: those allocations go uncounted.
    let _ = PENDING.try_with(|p| {
        let n = p.get() + 1;
        if n >= FLUSH_EVERY {
            ALLOCATIONS.fetch_add(n, Ordering::Relaxed);
            p.set(0);
        } else {
            p.set(n);
        }
    });
}

/// Wraps the allocator `A`, counting every allocation it makes.
pub struct Counting<A>(pub A);

// SAFETY: every call is forwarded unchanged to `A`, which upholds GlobalAlloc's contract;
// counting touches only a thread-local cell and an atomic, and never allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) }
    }
}

/// Allocations in one second below which a shard counts as idle (a broker serving nothing
/// makes a few hundred: timers, heartbeats, scrapes).
const IDLE_ALLOCATIONS_PER_SECOND: u64 = 2_000;

// mimalloc's `mi_collect` (frees what the calling thread's heap holds unused; with `force`,
// returns it to the kernel now) and `mi_option_set`, through libmimalloc-sys, which also links
// mimalloc into every binary that calls them (the test binaries allocate with the system's).
use libmimalloc_sys::{mi_collect, mi_option_set};

/// mimalloc 3's `mi_option_purge_delay` and `mi_option_allow_thp` (`mi_option_t` in its
/// `mimalloc.h`; mimalloc keeps an option's number for good, retired ones as `deprecated_*`
/// slots, and libmimalloc-sys is pinned to the 3.x it builds).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Sets the process's memory behaviour before the broker allocates much; called first thing in
/// `main`. Measured on the 64-producer and 10,000-partition benchmark rows (issue 46):
/// - Transparent huge pages off for the process (`PR_SET_THP_DISABLE`): mimalloc 3 asks for
///   them on its arenas, and on a kernel that grants them (`madvise` mode) a partly used 2 MiB
///   page is resident whole. With 10,000 partitions the heap's small objects are spread over
///   many pages (40-50 MB of `AnonHugePages`; a node with 10,000 empty partitions held 73-102
///   MB instead of 38-45). mimalloc's own `allow_thp` option is read when it initializes,
///   before `main`, so the process-wide switch is what takes effect.
/// - Freed pages purged after 10 ms (mimalloc 2's default) instead of mimalloc 3's 1 s: the
///   request buffers of a burst otherwise stay resident for a second after they are freed
///   (64 producers' burst ended at 55-80 MB of anonymous memory instead of 35-45); a purged
///   page costs a page fault when it is reused.
///
/// mimalloc's own environment variables win: with `MIMALLOC_ALLOW_THP` or
/// `MIMALLOC_PURGE_DELAY` set, that setting is left as mimalloc read it.
pub fn tune_memory() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: prctl with integer arguments only; failure (an old kernel) changes nothing.
        let thp = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        debug_assert!(thp == 0 || thp == -1);
        // SAFETY: a plain integer option; mimalloc reads it on use.
        unsafe { mi_option_set(MI_OPTION_ALLOW_THP, 0) };
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: as above.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    }
}

/// Gives what this thread's heap holds freed back to the kernel now. For threads that work in
/// bursts and then wait (the metadata publisher, which opens a log for every new partition):
/// mimalloc purges a thread's freed pages only when that thread allocates again, so a burst's
/// temporary memory otherwise stays resident for as long as the thread waits. Not for hot
/// paths: it walks the thread's whole heap.
pub fn give_back_this_threads_memory() {
    // SAFETY: as in `give_back_memory_when_idle`.
    unsafe { mi_collect(true) };
}

/// Runs on each shard: once the process has been idle for a second, gives the memory this
/// thread's heap freed back to the kernel. mimalloc purges freed pages lazily, when the thread
/// allocates again, so a burst (64 producers' request buffers) otherwise stays in the RSS of an
/// idle broker (measured: 115 MB of anonymous memory as the burst ended, 37 MB a few seconds
/// later with this). Purging
/// eagerly under load costs much more: mimalloc's purge delay set to 0 tripled the broker's
/// CPU per produced record.
pub async fn give_back_memory_when_idle() {
    let mut last = allocations();
    let mut busy = true;
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let now = allocations();
        let idle = now.saturating_sub(last) < IDLE_ALLOCATIONS_PER_SECOND;
        if idle && busy {
            // SAFETY: mimalloc's collect takes no pointers; it is safe to call from any thread
            // at any time (whatever the global allocator is, it touches mimalloc's heaps only).
            unsafe { mi_collect(true) };
        }
        busy = !idle;
        last = allocations();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SYSTEM: Counting<std::alloc::System> = Counting(std::alloc::System);

    #[test]
    fn counts_allocations_in_batches_per_thread() {
        // Driven directly (the test binary's global allocator is not this one): on a fresh
        // thread, FLUSH_EVERY allocations reach the total, and fewer stay pending.
        std::thread::spawn(|| {
            let layout = Layout::from_size_align(32, 8).unwrap();
            let before = allocations();
            for _ in 0..FLUSH_EVERY - 1 {
                // SAFETY: a valid layout; the block is freed right away with the same layout.
                unsafe { SYSTEM.dealloc(SYSTEM.alloc(layout), layout) };
            }
            assert_eq!(allocations(), before, "a partial batch is not reported yet");
            // SAFETY: as above.
            unsafe { SYSTEM.dealloc(SYSTEM.alloc_zeroed(layout), layout) };
            assert!(allocations() >= before + FLUSH_EVERY);
        })
        .join()
        .unwrap();
    }
}
