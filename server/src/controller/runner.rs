//! [`Controller`]: a [`Reconciler`] with the informers that feed it keys, its work queue and
//! its workers.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::Object;
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, watch};

use super::informer::{Informer, Notification};
use super::queue::{ExponentialBackoff, WorkQueue};
use super::{Action, ObjectKey, Reconciler};
use crate::registry::Store;

/// Maps a change of a secondary kind's object to the primary keys it concerns.
type Mapper = Arc<dyn Fn(Notification) -> BoxFuture<'static, Vec<ObjectKey>> + Send + Sync>;

/// A secondary kind a controller watches.
struct Secondary {
    store: Arc<Store>,
    map: Mapper,
}

/// A controller: reconciles the objects of one primary kind, on their changes, on the
/// changes of secondary kinds mapped to them, and at every resync.
///
/// Built with [`Controller::new`] and the builder methods, then run with
/// [`Controller::run`] (or started by the server: see the [module docs](super)).
pub struct Controller<R> {
    name: String,
    primary: Arc<Store>,
    reconciler: Arc<R>,
    secondaries: Vec<Secondary>,
    workers: usize,
    resync: Option<Duration>,
    backoff: ExponentialBackoff,
    queue: Option<WorkQueue<ObjectKey>>,
}

impl<R: Reconciler> Controller<R> {
    /// A controller named `name` (for logs) reconciling the objects of `primary` with
    /// `reconciler`: one worker, no resync, client-go's default backoff.
    pub fn new(name: impl Into<String>, primary: Arc<Store>, reconciler: R) -> Self {
        Self {
            name: name.into(),
            primary,
            reconciler: Arc::new(reconciler),
            secondaries: Vec::new(),
            workers: 1,
            resync: None,
            backoff: ExponentialBackoff::default(),
            queue: None,
        }
    }

    /// Also watches the objects of `store`: each change of one calls `map`
    /// with the object (its last state when deleted), and the primary keys it returns are
    /// reconciled (controller-runtime's `Watches` with `EnqueueRequestsFromMapFunc`).
    /// `store` may be the primary store itself, to reconcile other primary objects when one
    /// changes.
    pub fn watches<F, Fut>(self, store: Arc<Store>, map: F) -> Self
    where
        F: Fn(Box<dyn Object>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<ObjectKey>> + Send + 'static,
    {
        let name = self.name.clone();
        let decoder = store.clone();
        self.watches_changes(store, move |n: Notification| match decoder.decode(&n.object) {
            Ok(object) => map(object).boxed(),
            Err(error) => {
                tracing::warn!(controller = %name, key = %n.key, %error, "decoding a watched object");
                futures::future::ready(Vec::new()).boxed()
            }
        })
    }

    /// Also watches the objects of `store`, as [`watches`](Self::watches) does, but hands
    /// `map` each change as the informer reports it: what happened ([`Change`]), the
    /// object's key and the object as stored, not decoded ([`Store::decode`] decodes it).
    /// For a mapping that depends on the kind of change (only deletions, say), or that needs
    /// only the key and so decodes nothing. The initial list reports every object as
    /// [`Change::Added`], and a list after a broken watch reports what changed meanwhile.
    ///
    /// [`Change`]: super::Change
    /// [`Change::Added`]: super::Change::Added
    pub fn watches_changes<F, Fut>(mut self, store: Arc<Store>, map: F) -> Self
    where
        F: Fn(Notification) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<ObjectKey>> + Send + 'static,
    {
        self.secondaries.push(Secondary {
            store,
            map: Arc::new(move |notification| map(notification).boxed()),
        });
        self
    }

    /// The number of keys reconciled concurrently (at least one).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Reconciles every object of the primary kind again every `period`.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// The backoff of a key whose reconcile failed.
    pub fn backoff(mut self, backoff: ExponentialBackoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The controller's work queue, for adding keys from outside (created on first call; the
    /// controller processes what is added before and after it runs).
    pub fn queue(&mut self) -> WorkQueue<ObjectKey> {
        self.queue
            .get_or_insert_with(|| WorkQueue::new(self.backoff))
            .clone()
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the controller until `stop` completes: then its informers stop, its queue shuts
    /// down, and `run` returns once every worker finished the key it held.
    pub async fn run(mut self, stop: impl Future<Output = ()> + Send) {
        let queue = self.queue();
        let (stopped_tx, stopped) = watch::channel(false);
        let until_stopped = move || {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            }
        };
        let mut tasks = Vec::new();

        let mut informer = Informer::new(self.primary.clone());
        if let Some(period) = self.resync {
            informer = informer.with_resync(period);
        }
        let primary_queue = queue.clone();
        tasks.push(tokio::spawn(informer.run(
            move |n: Notification| primary_queue.add(n.key),
            until_stopped(),
        )));

        for secondary in std::mem::take(&mut self.secondaries) {
            let (tx, rx) = mpsc::unbounded_channel();
            // No resync here: the primary kind's resync reconciles every key already.
            let informer = Informer::new(secondary.store.clone());
            tasks.push(tokio::spawn(informer.run(
                move |n: Notification| {
                    let _ = tx.send(n);
                },
                until_stopped(),
            )));
            let mapping = map_secondary(secondary.map, rx, queue.clone());
            let stop = until_stopped();
            tasks.push(tokio::spawn(async move {
                tokio::select! {
                    () = mapping => {}
                    () = stop => {}
                }
            }));
        }

        let workers: Vec<_> = (0..self.workers)
            .map(|_| {
                tokio::spawn(work(
                    self.name.clone(),
                    self.reconciler.clone(),
                    queue.clone(),
                ))
            })
            .collect();
        tracing::info!(controller = %self.name, workers = self.workers, "controller started");

        stop.await;
        stopped_tx.send_replace(true);
        queue.shutdown();
        for task in tasks {
            let _ = task.await;
        }
        for worker in workers {
            let _ = worker.await;
        }
        tracing::info!(controller = %self.name, "controller stopped");
    }
}

/// Maps the changes a secondary informer reports to primary keys, in order.
async fn map_secondary(
    map: Mapper,
    mut changes: mpsc::UnboundedReceiver<Notification>,
    queue: WorkQueue<ObjectKey>,
) {
    while let Some(notification) = changes.recv().await {
        for key in map(notification).await {
            queue.add(key);
        }
    }
}

/// One worker: reconciles keys until the queue shuts down.
async fn work<R: Reconciler>(name: String, reconciler: Arc<R>, queue: WorkQueue<ObjectKey>) {
    while let Some(key) = queue.get().await {
        let outcome = AssertUnwindSafe(reconciler.reconcile(&key))
            .catch_unwind()
            .await;
        match outcome {
            Ok(Ok(Action::Done)) => queue.forget(&key),
            Ok(Ok(Action::RequeueAfter(after))) => {
                queue.forget(&key);
                queue.add_after(key.clone(), after);
            }
            Ok(Err(error)) => {
                tracing::warn!(controller = %name, %key, %error, retries = queue.num_requeues(&key), "reconcile failed; retrying");
                queue.add_rate_limited(key.clone());
            }
            Err(_) => {
                tracing::error!(controller = %name, %key, "reconcile panicked; retrying");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
}
