//! The work queue's semantics: deduplication, one worker per key, re-processing of a key added
//! while processed, backoff growth, forget, delayed adds and shutdown.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::{Instant, timeout};

use super::{ExponentialBackoff, WorkQueue};

/// Waits briefly for a key; `None` if none comes.
async fn next(queue: &WorkQueue<&'static str>) -> Option<&'static str> {
    timeout(Duration::from_millis(50), queue.get())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn a_key_waiting_already_is_not_added_twice() {
    let queue = WorkQueue::default();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    assert_eq!(queue.len(), 2);
    assert_eq!(next(&queue).await, Some("a"));
    assert_eq!(next(&queue).await, Some("b"));
    assert_eq!(next(&queue).await, None);
}

#[tokio::test]
async fn a_key_being_processed_is_handed_out_again_only_after_done() {
    let queue = WorkQueue::default();
    queue.add("a");
    assert_eq!(next(&queue).await, Some("a"));
    // Added twice while processed: not ready, and once afterwards.
    queue.add("a");
    queue.add("a");
    assert!(queue.is_empty());
    assert_eq!(
        next(&queue).await,
        None,
        "a second worker got a key being processed"
    );
    queue.done(&"a");
    assert_eq!(queue.len(), 1);
    assert_eq!(next(&queue).await, Some("a"));
    queue.done(&"a");
    assert_eq!(
        next(&queue).await,
        None,
        "done without a new add requeued the key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_never_process_one_key_at_the_same_time() {
    let queue: WorkQueue<u32> = WorkQueue::default();
    let busy = Arc::new(Mutex::new(HashSet::new()));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let processed = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, busy) = (queue.clone(), busy.clone());
            let (overlaps, processed) = (overlaps.clone(), processed.clone());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    if !busy.lock().insert(key) {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    busy.lock().remove(&key);
                    processed.fetch_add(1, Ordering::SeqCst);
                    queue.done(&key);
                }
            })
        })
        .collect();
    for round in 0..200u32 {
        queue.add(round % 3);
        if round % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    // Everything added is processed.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(queue.is_empty() && busy.lock().is_empty()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    queue.shutdown();
    for worker in workers {
        worker.await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    let processed = processed.load(Ordering::SeqCst);
    assert!((3..=200).contains(&processed), "{processed} keys processed");
}

#[test]
fn backoff_doubles_from_the_base_up_to_the_max() {
    let backoff = ExponentialBackoff::default();
    assert_eq!(backoff.delay(0), Duration::from_millis(5));
    assert_eq!(backoff.delay(1), Duration::from_millis(10));
    assert_eq!(backoff.delay(2), Duration::from_millis(20));
    assert_eq!(backoff.delay(10), Duration::from_millis(5 * 1024));
    // 5 ms * 2^18 = 1310.72 s, over the max.
    assert_eq!(backoff.delay(17), Duration::from_micros(655_360_000));
    assert_eq!(backoff.delay(18), Duration::from_secs(1000));
    assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(1000));
}

#[tokio::test]
async fn failed_keys_come_back_after_a_growing_backoff_until_forgotten() {
    let queue = WorkQueue::new(ExponentialBackoff {
        base: Duration::from_millis(40),
        max: Duration::from_secs(10),
    });
    let mut waits = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        queue.add_rate_limited("a");
        assert!(queue.is_empty(), "a failed key is not ready at once");
        let key = timeout(Duration::from_secs(2), queue.get()).await;
        assert_eq!(key.ok().flatten(), Some("a"));
        waits.push(start.elapsed());
        queue.done(&"a");
    }
    assert_eq!(queue.num_requeues(&"a"), 3);
    assert!(waits[0] >= Duration::from_millis(40), "{waits:?}");
    assert!(waits[1] >= Duration::from_millis(80), "{waits:?}");
    assert!(waits[2] >= Duration::from_millis(160), "{waits:?}");

    queue.forget(&"a");
    assert_eq!(queue.num_requeues(&"a"), 0);
    let start = Instant::now();
    queue.add_rate_limited("a");
    let key = timeout(Duration::from_secs(2), queue.get()).await;
    assert_eq!(key.ok().flatten(), Some("a"));
    let wait = start.elapsed();
    assert!(
        wait >= Duration::from_millis(40) && wait < Duration::from_millis(160),
        "after forget the backoff starts again at the base: {wait:?}"
    );
}

#[tokio::test]
async fn a_delayed_add_keeps_the_earliest_time() {
    let queue = WorkQueue::default();
    let start = Instant::now();
    queue.add_after("a", Duration::from_millis(30));
    queue.add_after("a", Duration::from_secs(60));
    let key = timeout(Duration::from_secs(2), queue.get()).await;
    assert_eq!(key.ok().flatten(), Some("a"));
    assert!(start.elapsed() >= Duration::from_millis(30));
    queue.done(&"a");
    // A later, earlier add replaces a later one.
    queue.add_after("b", Duration::from_secs(60));
    queue.add_after("b", Duration::from_millis(10));
    let key = timeout(Duration::from_secs(2), queue.get()).await;
    assert_eq!(key.ok().flatten(), Some("b"));
    queue.done(&"b");
    // Each delayed add gives one key.
    assert_eq!(
        timeout(Duration::from_millis(100), queue.get()).await.ok(),
        None
    );
}

#[tokio::test]
async fn shutdown_wakes_waiting_workers_and_ignores_adds() {
    let queue: WorkQueue<&'static str> = WorkQueue::default();
    let waiting = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.get().await })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    queue.shutdown();
    let got = timeout(Duration::from_secs(1), waiting).await;
    assert!(matches!(got, Ok(Ok(None))), "{got:?}");
    queue.add("a");
    queue.add_after("b", Duration::from_millis(1));
    assert!(queue.is_shutting_down());
    assert!(queue.is_empty());
    assert_eq!(queue.get().await, None);
}
