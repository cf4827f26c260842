//! The memory the connections' buffers for large requests may hold at once
//! (`queued.max.request.bytes`, Kafka's memory pool for requests).
//!
//! A connection reads a request's size before it reserves a buffer for the whole frame; a frame
//! larger than the connection's small read buffer is received only once its bytes are taken
//! from this pool, and they are given back when the request has been handled. While the pool
//! is spent, further large frames wait in the kernel's socket buffers (TCP pushes back on their
//! senders), as Kafka mutes a channel its pool cannot serve.
//!
//! Why Samsa bounds it by default where Kafka's default (-1) does not: Kafka's requests live in
//! a heap of fixed size that its JVM reserves at start (1 GiB from `kafka-server-start.sh`), so
//! the heap bounds them; Samsa allocates what it uses. Without a bound, 64 producers sending
//! 1 MB requests held about 64-90 MB of buffers at once (and the allocator kept them after),
//! although the two request threads append one request at a time each. With -1, the pool holds
//! [`DEFAULT_BYTES`]; a positive value is the pool's size.
//!
//! Invariants: a frame takes at most the whole pool (a frame larger than the pool waits until
//! nothing else is held, then proceeds alone); a permit is held only from the reservation of a
//! frame's buffer until its request has been handled (the deferred part of an answer, which
//! waits for replication or a sync, holds none), so frames never wait on each other in a cycle.
//! Frames up to the read buffer's size, the many small requests, never touch the pool.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The pool's size when `queued.max.request.bytes` is -1 (Kafka's default, no bound of its own).
pub const DEFAULT_BYTES: usize = 16 << 20;

/// The largest pool a semaphore can count (`acquire_many` counts in `u32`).
const MAX_BYTES: usize = u32::MAX as usize;

#[derive(Clone, Debug)]
pub struct RequestMemory {
    permits: Arc<Semaphore>,
    bytes: usize,
    /// Frames that found too few bytes free and waited (a metric).
    waits: Arc<AtomicU64>,
}

impl RequestMemory {
    /// A pool from `queued.max.request.bytes`: -1 (or any value below 1) is [`DEFAULT_BYTES`].
    pub fn from_config(queued_max_request_bytes: i64) -> RequestMemory {
        let bytes = if queued_max_request_bytes < 1 {
            DEFAULT_BYTES
        } else {
            (queued_max_request_bytes as u64).min(MAX_BYTES as u64) as usize
        };
        RequestMemory::new(bytes)
    }

    pub fn new(bytes: usize) -> RequestMemory {
        assert!(
            bytes > 0 && bytes <= MAX_BYTES,
            "request memory pool of {bytes} bytes"
        );
        RequestMemory {
            permits: Arc::new(Semaphore::new(bytes)),
            bytes,
            waits: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The pool's size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes not held by any frame now (a metric).
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }

    /// Frames that have waited for bytes so far.
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// Waits until `frame_bytes` (at most the whole pool) are free and takes them, until the
    /// returned permit is dropped; counted as a wait (call [`RequestMemory::try_take`] first).
    pub async fn take(&self, frame_bytes: usize) -> OwnedSemaphorePermit {
        self.waits.fetch_add(1, Ordering::Relaxed);
        let want = frame_bytes.clamp(1, self.bytes) as u32;
        self.permits
            .clone()
            .acquire_many_owned(want)
            .await
            .expect("the pool's semaphore is never closed")
    }

    /// Takes `frame_bytes` if they are free now.
    pub fn try_take(&self, frame_bytes: usize) -> Option<OwnedSemaphorePermit> {
        let want = frame_bytes.clamp(1, self.bytes) as u32;
        self.permits.clone().try_acquire_many_owned(want).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_one_is_the_default_and_a_value_is_the_size() {
        assert_eq!(RequestMemory::from_config(-1).bytes(), DEFAULT_BYTES);
        assert_eq!(RequestMemory::from_config(0).bytes(), DEFAULT_BYTES);
        assert_eq!(RequestMemory::from_config(1 << 20).bytes(), 1 << 20);
        assert_eq!(RequestMemory::from_config(i64::MAX).bytes(), MAX_BYTES);
    }

    #[test]
    fn frames_wait_for_bytes_and_a_large_one_takes_the_whole_pool() {
        let pool = RequestMemory::new(1000);
        let a = pool.try_take(600).expect("free");
        assert_eq!(pool.available(), 400);
        assert!(pool.try_take(600).is_none(), "only 400 left");
        let b = pool.try_take(400).expect("exactly what is left");
        assert_eq!(pool.available(), 0);
        drop(a);
        drop(b);
        // Larger than the pool: it waits for all of it, then holds all of it.
        let big = pool.try_take(5000).expect("the whole pool is free");
        assert_eq!(pool.available(), 0);
        assert!(pool.try_take(1).is_none());
        drop(big);
        assert_eq!(pool.available(), 1000);
    }

    #[tokio::test]
    async fn a_waiting_frame_proceeds_once_bytes_are_given_back() {
        let pool = RequestMemory::new(100);
        let held = pool.take(100).await;
        let waiting = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.take(50).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the pool is spent");
        drop(held);
        let permit = waiting.await.expect("joined");
        assert_eq!(pool.available(), 50);
        assert_eq!(pool.waits(), 2, "both takes were counted as waits");
        drop(permit);
        assert_eq!(pool.available(), 100);
    }
}
