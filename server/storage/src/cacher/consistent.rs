//! Consistent reads from the cache: one linearizable read of the storage's current revision
//! serves every consistent read that was waiting when it started.
//!
//! A consistent read (resourceVersion `""`) must observe every write acknowledged before it
//! started. The cache can answer it once it has applied every event up to a revision `R` read
//! from the storage *after* the request started (kube-apiserver's "consistent reads from
//! cache": `getCurrentRV`, then wait until the cache is that fresh). Reading `R` once per
//! request costs a round trip to etcd per read; [`RevisionBatcher`] shares one round trip among
//! all the requests that arrived before it was sent:
//!
//! - a request registers for the *next* round trip to start (generation `started + 1`);
//! - with no round trip in flight the request makes one itself; requests that arrive while one
//!   is in flight get one driver task, which runs round trips back to back while requests are
//!   registered, each answering every request registered before it started;
//! - a request arriving while a round trip is in flight waits for the following one, because
//!   the one in flight may have read the revision before that request's preceding writes.
//!
//! So every answer is a revision read after the request registered, hence at least the revision
//! of every write acknowledged before the request started, and at most one round trip is in
//! flight per cache however many reads arrive.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::errors::{Result, Revision, StorageError};
use crate::interface::Interface;

/// The registration state of the batcher.
#[derive(Debug, Default)]
struct Registry {
    /// The generation of the last round trip started.
    started: u64,
    /// True when a request is registered for the next round trip.
    wanted: bool,
    /// True while a round trip is in flight or the driver task runs.
    running: bool,
    /// How many requests registered for a later round trip (for tests).
    #[cfg(test)]
    registered: usize,
}

/// Hands off to the next round trip when a leading request's round trip ends, also when the
/// request is cancelled in the middle of it.
struct Handoff<'a>(&'a Arc<RevisionBatcher>);

impl Drop for Handoff<'_> {
    fn drop(&mut self) {
        self.0.hand_off();
    }
}

/// The answer of one round trip.
type Answer = Option<(u64, std::result::Result<Revision, StorageError>)>;

/// Shares linearizable reads of the current revision among concurrent consistent reads.
pub(crate) struct RevisionBatcher {
    storage: Arc<dyn Interface>,
    registry: Mutex<Registry>,
    answers: watch::Sender<Answer>,
}

impl RevisionBatcher {
    /// A batcher reading the current revision of `storage`.
    pub(crate) fn new(storage: Arc<dyn Interface>) -> Arc<Self> {
        Arc::new(Self {
            storage,
            registry: Mutex::new(Registry::default()),
            answers: watch::Sender::new(None),
        })
    }

    /// A revision of the storage read after this call started (see the module documentation).
    /// Must be called inside a Tokio runtime.
    pub(crate) async fn current(self: &Arc<Self>) -> Result<Revision> {
        let mut answers = self.answers.subscribe();
        let lead = {
            let mut registry = self.registry.lock();
            if registry.running {
                registry.wanted = true;
                #[cfg(test)]
                {
                    registry.registered += 1;
                }
                Err(registry.started + 1)
            } else {
                // No round trip in flight: this request makes one itself, without a task.
                registry.running = true;
                registry.started += 1;
                Ok(registry.started)
            }
        };
        let target = match lead {
            Ok(generation) => {
                let handoff = Handoff(self);
                let result = self.storage.current_resource_version().await;
                self.answers
                    .send_replace(Some((generation, result.clone())));
                drop(handoff);
                return result;
            }
            Err(target) => target,
        };
        let answer = answers
            .wait_for(|answer| answer.as_ref().is_some_and(|(g, _)| *g >= target))
            .await
            .map_err(|_| StorageError::unavailable("the watch cache stopped"))?;
        match answer.as_ref() {
            Some((_, result)) => result.clone(),
            None => Err(StorageError::internal("revision batcher answered nothing")),
        }
    }

    /// After a request's own round trip (or its cancellation): the requests that registered
    /// meanwhile get a driver task, else the batcher is idle again.
    fn hand_off(self: &Arc<Self>) {
        let mut registry = self.registry.lock();
        if registry.wanted {
            tokio::spawn(Arc::clone(self).drive());
        } else {
            registry.running = false;
        }
    }

    /// Runs round trips while requests are registered.
    async fn drive(self: Arc<Self>) {
        loop {
            let generation = {
                let mut registry = self.registry.lock();
                if !registry.wanted {
                    registry.running = false;
                    return;
                }
                registry.wanted = false;
                registry.started += 1;
                registry.started
            };
            let result = self.storage.current_resource_version().await;
            self.answers.send_replace(Some((generation, result)));
        }
    }

    /// How many round trips were started (for tests).
    #[cfg(test)]
    fn round_trips(&self) -> u64 {
        self.registry.lock().started
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;
    use bytes::Bytes;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::interface::{
        GetOptions, ListOptions, ListResult, Preconditions, StoredObject, UpdateFn,
        ValidateDeletionFn, WatchEventStream,
    };

    /// How the fake storage's revision reads behave.
    enum Mode {
        /// Each read waits for a permit.
        Gated(Semaphore),
        /// Each read takes this long.
        Slow(Duration),
        /// The first read fails.
        FailFirst,
    }

    /// A storage that only answers revision reads; a read takes the revision at the moment it
    /// starts (that is when it linearizes) and counts itself.
    struct Fake {
        revision: AtomicI64,
        reads: AtomicUsize,
        mode: Mode,
    }

    #[async_trait]
    impl Interface for Fake {
        async fn create(&self, _: &str, _: Bytes, _: Option<u64>) -> Result<StoredObject> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn delete(
            &self,
            _: &str,
            _: Option<Preconditions>,
            _: Option<ValidateDeletionFn<'_>>,
            _: Option<StoredObject>,
        ) -> Result<StoredObject> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn watch(&self, _: &str, _: ListOptions) -> Result<WatchEventStream> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn get(&self, _: &str, _: GetOptions) -> Result<Option<StoredObject>> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn get_list(&self, _: &str, _: ListOptions) -> Result<ListResult> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn guaranteed_update(
            &self,
            _: &str,
            _: bool,
            _: Option<Preconditions>,
            _: UpdateFn<'_>,
            _: Option<StoredObject>,
        ) -> Result<StoredObject> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn count(&self, _: &str) -> Result<i64> {
            unreachable!("the consistent-read tests only read revisions")
        }
        async fn current_resource_version(&self) -> Result<Revision> {
            let revision = self.revision.load(Ordering::SeqCst);
            let reads = self.reads.fetch_add(1, Ordering::SeqCst);
            match &self.mode {
                Mode::Gated(gate) => gate.acquire().await.expect("gate open").forget(),
                Mode::Slow(delay) => tokio::time::sleep(*delay).await,
                Mode::FailFirst if reads == 0 => {
                    return Err(StorageError::unavailable("etcd is down"));
                }
                Mode::FailFirst => {}
            }
            Ok(revision)
        }
    }

    fn fake(revision: Revision, mode: Mode) -> Arc<Fake> {
        Arc::new(Fake {
            revision: AtomicI64::new(revision),
            reads: AtomicUsize::new(0),
            mode,
        })
    }

    /// Awaits `future`, failing the test (rather than hanging it) after 10 s.
    async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(10), future)
            .await
            .unwrap_or_else(|_| panic!("timed out: {what}"))
    }

    async fn until(what: &str, condition: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_during_a_round_trip_wait_for_the_next_one() {
        let storage = fake(10, Mode::Gated(Semaphore::new(0)));
        let Mode::Gated(gate) = &storage.mode else {
            unreachable!()
        };
        let batcher = RevisionBatcher::new(storage.clone());
        // The first request starts round trip 1, which reads revision 10.
        let first = tokio::spawn({
            let b = Arc::clone(&batcher);
            async move { b.current().await }
        });
        until("round trip 1 started", || {
            storage.reads.load(Ordering::SeqCst) == 1
        })
        .await;
        // A write is acknowledged (revision 11), then two reads start while round trip 1 is in
        // flight: it must not answer them.
        storage.revision.store(11, Ordering::SeqCst);
        let later: Vec<_> = (0..2)
            .map(|_| {
                let b = Arc::clone(&batcher);
                tokio::spawn(async move { b.current().await })
            })
            .collect();
        // Both of them: a request registering after round trip 2 started would wait for a
        // round trip 3.
        until("later requests registered", || {
            batcher.registry.lock().registered == 2
        })
        .await;
        gate.add_permits(1);
        let first = within("the first request", first).await;
        assert_eq!(first.expect("join").expect("rv"), 10);
        // Round trip 2 starts for both later requests, reads 11 and answers both.
        until("round trip 2 started", || {
            storage.reads.load(Ordering::SeqCst) == 2
        })
        .await;
        for request in &later {
            assert!(!request.is_finished(), "answered by the stale round trip");
        }
        gate.add_permits(1);
        for request in later {
            let answer = within("a later request", request).await;
            assert_eq!(answer.expect("join").expect("rv"), 11);
        }
        assert_eq!(batcher.round_trips(), 2, "one round trip per batch");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_leading_request_hands_off_to_the_waiting_ones() {
        let storage = fake(3, Mode::Gated(Semaphore::new(0)));
        let Mode::Gated(gate) = &storage.mode else {
            unreachable!()
        };
        let batcher = RevisionBatcher::new(storage.clone());
        let leader = tokio::spawn({
            let b = Arc::clone(&batcher);
            async move { b.current().await }
        });
        until("round trip 1 started", || {
            storage.reads.load(Ordering::SeqCst) == 1
        })
        .await;
        storage.revision.store(4, Ordering::SeqCst);
        let follower = tokio::spawn({
            let b = Arc::clone(&batcher);
            async move { b.current().await }
        });
        until("follower registered", || batcher.registry.lock().wanted).await;
        // The client of the leading request goes away in the middle of its round trip.
        leader.abort();
        let aborted = within("the aborted leader", leader).await;
        assert!(aborted.expect_err("aborted").is_cancelled());
        gate.add_permits(1);
        let answer = within("the follower", follower)
            .await
            .expect("join")
            .expect("rv");
        assert_eq!(answer, 4, "by a round trip started after it registered");
        assert_eq!(batcher.round_trips(), 2);
        until("idle again", || !batcher.registry.lock().running).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_round_trips_and_see_prior_writes() {
        let storage = fake(0, Mode::Slow(Duration::from_millis(1)));
        let batcher = RevisionBatcher::new(storage.clone());
        let (tasks, per_task) = (64, 20);
        let mut handles = Vec::new();
        for i in 0..tasks {
            let (b, s) = (Arc::clone(&batcher), Arc::clone(&storage));
            handles.push(tokio::spawn(async move {
                for j in 0..per_task {
                    // A write acknowledged before the read starts.
                    let written = s.revision.fetch_add(1, Ordering::SeqCst) + 1;
                    let read = b.current().await.expect("rv");
                    assert!(read >= written, "task {i} read {j}: {read} < {written}");
                }
            }));
        }
        for handle in handles {
            within("a reading task", handle).await.expect("task");
        }
        let (trips, requests) = (batcher.round_trips(), (tasks * per_task) as u64);
        assert_eq!(storage.reads.load(Ordering::SeqCst) as u64, trips);
        // 64 readers against 1 ms round trips: each round trip serves many of them.
        assert!(
            trips * 4 <= requests,
            "{trips} round trips for {requests} reads"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_round_trip_fails_its_batch_and_the_next_one_recovers() {
        let storage = fake(7, Mode::FailFirst);
        let batcher = RevisionBatcher::new(storage.clone());
        let error = within("round trip 1", batcher.current())
            .await
            .expect_err("first round trip fails");
        assert!(
            matches!(error, StorageError::Unavailable { .. }),
            "{error:?}"
        );
        let recovered = within("round trip 2", batcher.current()).await;
        assert_eq!(recovered.expect("recovered"), 7);
        assert_eq!(storage.reads.load(Ordering::SeqCst), 2);
    }
}
