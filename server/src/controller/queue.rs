//! [`WorkQueue`]: client-go's rate-limited work queue. Keys wait in order of arrival; a key
//! waiting already is not added twice; a key being processed is handed to no other worker, and
//! if it is added meanwhile it is processed once more after [`WorkQueue::done`]. Failed keys
//! come back after a per-key exponential backoff ([`ExponentialBackoff`]) until
//! [`WorkQueue::forget`] resets it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// Per-key exponential backoff (client-go's `ItemExponentialFailureRateLimiter`): the n-th
/// consecutive failure of a key waits `base * 2^(n-1)`, at most `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExponentialBackoff {
    /// The wait after the first failure.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for ExponentialBackoff {
    /// client-go's controller default: 5 ms doubling up to 1000 s.
    fn default() -> Self {
        Self {
            base: Duration::from_millis(5),
            max: Duration::from_secs(1000),
        }
    }
}

impl ExponentialBackoff {
    /// The wait after a key failed `failures` times before (0 for its first failure).
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = 2u32.checked_pow(failures).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

struct State<K> {
    /// Keys ready to be processed, in order.
    queue: VecDeque<K>,
    /// Keys that need processing: those in `queue`, and those added while being processed.
    dirty: HashSet<K>,
    /// Keys a worker holds.
    processing: HashSet<K>,
    /// Keys to be added later, with when (the earliest asked for).
    waiting: HashMap<K, Instant>,
    /// Consecutive failures per key.
    failures: HashMap<K, u32>,
    shutting_down: bool,
}

struct Shared<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    shutdown: watch::Sender<bool>,
    backoff: ExponentialBackoff,
}

/// A rate-limited work queue of keys, shared by cloning.
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> Default for WorkQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new(ExponentialBackoff::default())
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An empty queue whose failed keys back off by `backoff`.
    pub fn new(backoff: ExponentialBackoff) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    waiting: HashMap::new(),
                    failures: HashMap::new(),
                    shutting_down: false,
                }),
                ready: Notify::new(),
                shutdown: watch::channel(false).0,
                backoff,
            }),
        }
    }

    /// Adds `key`, unless it is waiting already; a key being processed is processed again once
    /// it is [`done`](Self::done). Does nothing once the queue is shut down.
    pub fn add(&self, key: K) {
        let mut state = self.shared.state.lock();
        if Self::add_locked(&mut state, key) {
            drop(state);
            self.shared.ready.notify_one();
        }
    }

    /// Whether the key was put in the ready queue (a worker should be woken).
    fn add_locked(state: &mut State<K>, key: K) -> bool {
        if state.shutting_down || state.dirty.contains(&key) {
            return false;
        }
        state.dirty.insert(key.clone());
        if state.processing.contains(&key) {
            return false;
        }
        state.queue.push_back(key);
        true
    }

    /// Adds `key` after `delay` (at once for a zero delay). A key already waiting for an earlier
    /// time keeps it. Must be called within a Tokio runtime.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let at = Instant::now() + delay;
        {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            match state.waiting.get(&key) {
                Some(earlier) if *earlier <= at => return,
                _ => {
                    state.waiting.insert(key.clone(), at);
                }
            }
        }
        let queue = self.clone();
        let mut shutdown = self.shared.shutdown.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = shutdown.wait_for(|down| *down) => return,
            }
            let mut state = queue.shared.state.lock();
            // A later call may have asked for an earlier time; that one's task adds it.
            if state.waiting.get(&key) != Some(&at) {
                return;
            }
            state.waiting.remove(&key);
            if Self::add_locked(&mut state, key) {
                drop(state);
                queue.shared.ready.notify_one();
            }
        });
    }

    /// Adds `key` after its backoff, and counts one more failure of it.
    pub fn add_rate_limited(&self, key: K) {
        let delay = {
            let mut state = self.shared.state.lock();
            let failures = state.failures.entry(key.clone()).or_insert(0);
            let delay = self.shared.backoff.delay(*failures);
            *failures = failures.saturating_add(1);
            delay
        };
        self.add_after(key, delay);
    }

    /// Resets the failures of `key` (after it was processed successfully).
    pub fn forget(&self, key: &K) {
        self.shared.state.lock().failures.remove(key);
    }

    /// How many times in a row `key` has failed.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.shared
            .state
            .lock()
            .failures
            .get(key)
            .copied()
            .unwrap_or(0)
    }

    /// Waits for the next key to process and marks it as being processed; the caller must call
    /// [`done`](Self::done) with it. `None` once the queue is shut down.
    pub async fn get(&self) -> Option<K> {
        loop {
            let notified = self.shared.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.shared.state.lock();
                if state.shutting_down {
                    return None;
                }
                if let Some(key) = state.queue.pop_front() {
                    state.dirty.remove(&key);
                    state.processing.insert(key.clone());
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Ends the processing of `key`; if it was added meanwhile, it is ready again.
    pub fn done(&self, key: &K) {
        let mut state = self.shared.state.lock();
        state.processing.remove(key);
        if state.dirty.contains(key) && !state.shutting_down {
            state.queue.push_back(key.clone());
            drop(state);
            self.shared.ready.notify_one();
        }
    }

    /// The number of keys ready to be processed.
    pub fn len(&self) -> usize {
        self.shared.state.lock().queue.len()
    }

    /// Whether no key is ready to be processed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down: [`get`](Self::get) returns `None` from now on, additions are
    /// ignored and delayed additions are dropped. Keys being processed may still be marked
    /// [`done`](Self::done).
    pub fn shutdown(&self) {
        self.shared.state.lock().shutting_down = true;
        self.shared.shutdown.send_replace(true);
        self.shared.ready.notify_waiters();
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }
}
