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

unsafe extern "C" {
    /// mimalloc's `mi_collect`: frees what the calling thread's heap holds unused; with `force`,
    /// returns it to the kernel now.
    fn mi_collect(force: bool);
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
