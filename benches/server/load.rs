//! The load loop: a fixed set of workers (connections or storage writers), each issuing one
//! operation at a time until a deadline or an operation budget runs out.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::process::cpu_time;

/// When a run stops: whichever comes first.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// Wall-clock budget.
    pub duration: Duration,
    /// Operation budget (shared by all workers).
    pub max_ops: u64,
}

impl Limit {
    /// Runs for `duration` (with an operation cap no run reaches).
    pub fn time(duration: Duration) -> Self {
        Self {
            duration,
            max_ops: u64::MAX,
        }
    }

    /// Runs `max_ops` operations, giving up after `duration`.
    pub fn ops(max_ops: u64, duration: Duration) -> Self {
        Self { duration, max_ops }
    }
}

/// What a run achieved.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Completed operations.
    pub ops: u64,
    /// Time from the first operation to the last worker stopping.
    pub elapsed: Duration,
    /// Every operation's latency, sorted.
    pub latencies: Vec<Duration>,
    /// CPU time the serving process (or, for raw storage, this process) spent during the run;
    /// with several serving processes, their sum.
    pub cpu: Duration,
    /// Each serving process's CPU time during the run, in the order they were given.
    pub cpu_by_process: Vec<Duration>,
    /// CPU time this process (the load generator) spent during the run.
    pub client_cpu: Duration,
}

impl Outcome {
    /// Operations per second.
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// CPU microseconds spent per operation.
    pub fn cpu_per_op(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.ops.max(1) as f64
    }

    /// CPU microseconds the `i`th serving process spent per operation.
    pub fn process_cpu_per_op(&self, i: usize) -> f64 {
        self.cpu_by_process
            .get(i)
            .map_or(0.0, |c| c.as_secs_f64() * 1e6 / self.ops.max(1) as f64)
    }

    /// CPU microseconds the load generator spent per operation.
    pub fn client_cpu_per_op(&self) -> f64 {
        self.client_cpu.as_secs_f64() * 1e6 / self.ops.max(1) as f64
    }

    /// The latency at quantile `q` (0..=1), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        quantile(&self.latencies, q)
    }
}

/// The value at quantile `q` of sorted samples (nearest rank), zero when there are none.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs one worker per element of `states`. Each worker repeatedly claims the next operation
/// number `n` (unique across workers, from 0) and runs `op(state, n)`, which hands the state
/// back. The first failing operation fails the run. The CPU time of process `pid` over the run
/// is recorded.
pub async fn drive<S, F, Fut>(
    pid: u32,
    states: Vec<S>,
    limit: Limit,
    op: F,
) -> anyhow::Result<Outcome>
where
    S: Send + 'static,
    F: Fn(S, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<S>> + Send + 'static,
{
    drive_processes(&[pid], states, limit, op).await
}

/// [`drive`] with several serving processes (a request crossing an aggregator and the server
/// behind it): the CPU time of each of `pids` over the run is recorded, and their sum.
pub async fn drive_processes<S, F, Fut>(
    pids: &[u32],
    states: Vec<S>,
    limit: Limit,
    op: F,
) -> anyhow::Result<Outcome>
where
    S: Send + 'static,
    F: Fn(S, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<S>> + Send + 'static,
{
    let op = Arc::new(op);
    let cpu_before = pids
        .iter()
        .map(|&pid| cpu_time(pid))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let client_before = cpu_time(std::process::id())?;
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + limit.duration;
    let workers: Vec<_> = states
        .into_iter()
        .map(|mut state| {
            let (op, next) = (Arc::clone(&op), Arc::clone(&next));
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while Instant::now() < deadline {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= limit.max_ops {
                        break;
                    }
                    let t = Instant::now();
                    state = op(state, n).await?;
                    samples.push(t.elapsed());
                }
                anyhow::Ok(samples)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await??);
    }
    let elapsed = start.elapsed();
    let mut cpu_by_process = Vec::with_capacity(pids.len());
    for (&pid, before) in pids.iter().zip(cpu_before) {
        cpu_by_process.push(cpu_time(pid)?.saturating_sub(before));
    }
    let cpu = cpu_by_process.iter().sum();
    let client_cpu = cpu_time(std::process::id())?.saturating_sub(client_before);
    latencies.sort();
    Ok(Outcome {
        ops: latencies.len() as u64,
        elapsed,
        latencies,
        cpu,
        cpu_by_process,
        client_cpu,
    })
}
