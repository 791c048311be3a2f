//! The bounded pool the envelope's key derivations run on. argon2id holds
//! the memory its parameters ask for until it finishes (19 MiB for the
//! envelopes we seal, up to 256 MiB for one sealed elsewhere), so a handful
//! of parallel imports could take most of a Raspberry Pi's memory. At most
//! `workers` derivations run at once, each on a blocking thread (never on
//! the runtime's threads, which answer every other request); up to `queue`
//! more wait their turn; a request beyond that is answered 429 at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, Result};

/// Requests that may wait for a derivation by default: enough for a family
/// exporting on two phones at once, few enough that the bodies they hold
/// (up to 32 MiB each) stay bounded.
pub const DEFAULT_QUEUE: usize = 4;
/// What a refused request is told to wait: a derivation with our own
/// parameters takes well under a second on a Pi, an import a few more.
const RETRY_AFTER_SECS: u64 = 5;

/// Derivations at once by default: half the cores, one on a two-core
/// machine, at most two (each may take 256 MiB).
pub fn default_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (cores / 2).clamp(1, 2)
}

pub struct KdfPool {
    slots: Arc<Semaphore>,
    queue: usize,
    waiting: AtomicUsize,
    started: AtomicU64,
}

/// A turn on the pool, taken before the work it is for begins: the turn
/// is given back when the job run with it ends, or when it is dropped.
pub struct Slot<'p> {
    pool: &'p KdfPool,
    permit: OwnedSemaphorePermit,
}

/// Counts a request in the queue while it waits (also when it is dropped
/// waiting: its client went away).
struct Waiting<'p>(&'p AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl KdfPool {
    pub fn new(workers: usize, queue: usize) -> KdfPool {
        KdfPool {
            slots: Arc::new(Semaphore::new(workers.max(1))),
            queue,
            waiting: AtomicUsize::new(0),
            started: AtomicU64::new(0),
        }
    }

    /// Waits for a turn; 429 with Retry-After when the queue is full.
    pub async fn slot(&self) -> Result<Slot<'_>> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(Slot { pool: self, permit });
        }
        self.waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.queue).then_some(n + 1)
            })
            .map_err(|_| ApiError::RateLimited {
                retry_after_secs: RETRY_AFTER_SECS,
            })?;
        let _waiting = Waiting(&self.waiting);
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::internal("the key derivation pool is closed"))?;
        Ok(Slot { pool: self, permit })
    }

    /// Runs `job` (a key derivation and the cipher work around it) in its
    /// turn on a blocking thread.
    pub async fn run<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        self.slot().await?.run(job).await
    }

    /// Jobs started so far: what a test reads to know no derivation ran.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Acquire)
    }

    /// Requests waiting for a turn now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

impl Slot<'_> {
    /// Runs `job` on a blocking thread, holding the turn until it ends
    /// (even if the request is dropped meanwhile: the memory is in use
    /// until the derivation returns).
    pub async fn run<T, F>(self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        self.pool.started.fetch_add(1, Ordering::AcqRel);
        let permit = self.permit;
        tokio::task::spawn_blocking(move || {
            let _turn = permit;
            job()
        })
        .await
        .map_err(|e| ApiError::internal(format!("key derivation task failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_is_refused_and_a_waiter_that_leaves_frees_its_place() {
        let pool = Arc::new(KdfPool::new(1, 1));
        let held = pool.slot().await.unwrap();
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.slot().await.map(drop) })
        };
        while pool.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            pool.slot().await.map(drop),
            Err(ApiError::RateLimited { .. })
        ));
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(pool.waiting(), 0);
        drop(held);
        assert_eq!(pool.run(|| Ok(7)).await.unwrap(), 7);
        assert_eq!(pool.started(), 1);
    }
}
