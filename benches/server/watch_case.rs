//! Watch fan-out end to end (`APIARY_BENCH_ONLY=watch`, also part of a full run): 1,000
//! watchers of one namespace's ConfigMaps on the real binary (embedded store), over HTTP/1.1
//! (one connection each) and over HTTP/2 (one connection each, and all multiplexed on a few
//! connections), while ConfigMaps are created at a fixed rate. Reported per row: the creates
//! achieved, deliveries/s (events received by all watchers), the server's CPU per delivered
//! event (from `/proc/<pid>/stat`, with and without the CPU its creates cost, measured alone
//! first), deliveries per server core, and the delivery lag (from the create's response to the
//! event's arrival at a watcher; an event that arrives before its create's response counts as
//! 0) at p50/p99. Every watcher must receive every event exactly once; a watch that ends early
//! or misses events fails the run.
//!
//! The load generator is native (hyper on tokio, the bench's own runtime): each watcher reads
//! its body frames and only looks for the object name (`ev-<n>`) in each JSON line.
//! `APIARY_BENCH_WATCHERS` (default 1000) and `APIARY_BENCH_WATCH_RATE` (creates per second,
//! default 1000) change the load; `APIARY_BENCH_WATCH_ROWS` selects rows (`h1`, `h2`, `h2mux`,
//! comma-separated; default all).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;

use crate::client::{Conn, Endpoint, Kubeconfig, Proto};
use crate::load::quantile;
use crate::process::{cpu_time, start_apiary};
use crate::workload::{configmap, namespace, wait_ready};

/// Watchers per row unless `APIARY_BENCH_WATCHERS` says otherwise.
const WATCHERS: usize = 1_000;
/// Creates per second unless `APIARY_BENCH_WATCH_RATE` says otherwise.
const RATE: u64 = 1_000;
/// Connections the multiplexed HTTP/2 row spreads its watchers over, at least.
const MUX_CONNECTIONS: usize = 4;
/// The concurrent streams apiary allows per HTTP/2 connection by default (kube-apiserver's
/// `--http2-max-streams-per-connection` default); the multiplexed row opens enough connections
/// for its watchers within it.
const MUX_STREAMS_PER_CONNECTION: usize = 100;
/// Connections the creates are sent over.
const CREATORS: usize = 8;
/// Creates before the measured window (not measured).
const WARMUP: Duration = Duration::from_secs(1);
/// How long watchers may take to receive the last events after the creates stop.
const DRAIN: Duration = Duration::from_secs(20);
/// p99 delivery lag target at 1,000 events/s.
pub const LAG_TARGET: Duration = Duration::from_millis(20);
/// Deliveries per second per server core target.
pub const PER_CORE_TARGET: f64 = 200_000.0;

/// How one row connects its watchers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One HTTP/1.1 connection per watcher.
    H1,
    /// One HTTP/2 connection per watcher.
    H2,
    /// Every watcher a stream of a few HTTP/2 connections (at least [`MUX_CONNECTIONS`], and
    /// at most [`MUX_STREAMS_PER_CONNECTION`] watchers each).
    H2Mux,
}

impl Layout {
    /// The label used in the report.
    pub fn label(self) -> String {
        match self {
            Layout::H1 => "HTTP/1.1, a connection per watcher".into(),
            Layout::H2 => "HTTP/2, a connection per watcher".into(),
            Layout::H2Mux => {
                format!(
                    "HTTP/2, multiplexed (<= {MUX_STREAMS_PER_CONNECTION} streams a connection)"
                )
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Layout::H1 => "h1",
            Layout::H2 => "h2",
            Layout::H2Mux => "h2mux",
        }
    }

    fn proto(self) -> Proto {
        match self {
            Layout::H1 => Proto::H1,
            Layout::H2 | Layout::H2Mux => Proto::H2,
        }
    }
}

/// One measured row.
pub struct WatchRow {
    /// How the watchers were connected.
    pub layout: Layout,
    /// Watchers.
    pub watchers: usize,
    /// Creates per second asked for.
    pub rate: u64,
    /// Creates per second achieved in the window.
    pub creates_per_s: f64,
    /// Events received by all watchers per second in the window.
    pub deliveries_per_s: f64,
    /// Server CPU seconds per wall second in the window.
    pub server_cores: f64,
    /// Server CPU per delivered event, µs.
    pub cpu_per_delivery_us: f64,
    /// The same without the CPU of the creates themselves, µs.
    pub net_cpu_per_delivery_us: f64,
    /// Load generator CPU seconds per wall second in the window.
    pub client_cores: f64,
    /// Delivery lag quantiles over the events created in the window.
    pub lag_p50: Duration,
    /// p99 of the same.
    pub lag_p99: Duration,
    /// Max of the same.
    pub lag_max: Duration,
    /// Events that arrived before their create's response.
    pub early: u64,
    /// Watches the server closed before the end (their events are not counted).
    pub closed: usize,
    /// Why the first of them was closed.
    pub closed_reason: Option<String>,
}

/// What the watch case measured.
pub struct Watches {
    /// Server CPU per create with no watcher, µs.
    pub create_cpu_us: f64,
    /// The rows.
    pub rows: Vec<WatchRow>,
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn layouts() -> Vec<Layout> {
    let all = [Layout::H1, Layout::H2, Layout::H2Mux];
    match std::env::var("APIARY_BENCH_WATCH_ROWS") {
        Ok(list) => all
            .into_iter()
            .filter(|l| list.split(',').any(|n| n.trim() == l.name()))
            .collect(),
        Err(_) => all.to_vec(),
    }
}

/// Nanoseconds since `t0`.
pub(crate) fn since(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The `<n>` of the first `"name":"ev-<n>"` in `line`.
fn event_number(line: &[u8]) -> Option<u32> {
    const NEEDLE: &[u8] = b"\"name\":\"ev-";
    let at = line.windows(NEEDLE.len()).position(|w| w == NEEDLE)? + NEEDLE.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit());
    let mut n: u32 = 0;
    let mut any = false;
    for d in digits {
        n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
        any = true;
    }
    any.then_some(n)
}

/// What every watcher of one row shares.
pub(crate) struct WatchShared {
    t0: Instant,
    /// Watches answered with 200.
    pub(crate) opened: AtomicUsize,
    /// Watchers that received the row's last event.
    pub(crate) finished: AtomicUsize,
    /// The number of the row's last event.
    last: u32,
    /// Set to end the row's watches.
    pub(crate) stop: tokio::sync::watch::Sender<bool>,
}

impl WatchShared {
    /// The shared state of watchers timing events from `t0` whose last event is `ev-<last>`.
    pub(crate) fn new(t0: Instant, last: u32) -> Arc<Self> {
        Arc::new(Self {
            t0,
            opened: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            last,
            stop: tokio::sync::watch::Sender::new(false),
        })
    }
}

/// One watcher's stream: records the arrival time of every event, in order, until told to stop.
pub(crate) async fn watch(
    mut conn: Conn,
    ep: Arc<Endpoint>,
    path: String,
    shared: Arc<WatchShared>,
) -> anyhow::Result<Vec<(u32, u64)>> {
    let mut stop = shared.stop.subscribe();
    let req = ep.request(Method::GET, &path, Bytes::new());
    let response = conn.open(req).await?;
    if response.status() != StatusCode::OK {
        bail!("watch answered {}", response.status());
    }
    shared.opened.fetch_add(1, Ordering::Relaxed);
    let mut body = response.into_body();
    let mut arrivals = Vec::with_capacity(8192);
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            _ = stop.wait_for(|s| *s) => return Ok(arrivals),
        };
        let Some(frame) = frame else {
            bail!("the server ended a watch");
        };
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        let now = since(shared.t0);
        let mut rest: &[u8] = &data;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let line = if carry.is_empty() {
                &rest[..end]
            } else {
                carry.extend_from_slice(&rest[..end]);
                &carry[..]
            };
            if line.starts_with(b"{\"type\":\"ERROR\"") {
                bail!("watch error: {}", String::from_utf8_lossy(line));
            }
            if let Some(n) = event_number(line) {
                arrivals.push((n, now));
                if n == shared.last {
                    shared.finished.fetch_add(1, Ordering::Relaxed);
                }
            }
            carry.clear();
            rest = &rest[end + 1..];
        }
        carry.extend_from_slice(rest);
    }
}

/// Where the paced creates go: the collection's path and the object named `ev-<n>`.
pub(crate) struct Creator {
    /// The endpoint the creates are sent to.
    pub(crate) ep: Arc<Endpoint>,
    /// The collection POSTed to.
    pub(crate) collection: String,
    /// The JSON of the object of a name.
    pub(crate) body: fn(&str) -> Bytes,
}

/// Creates `ev-<n>` at `rate` per second from `first` for `duration` over `CREATORS`
/// connections; records each create's response time (ns since `t0`) in `acks[n]`. Returns the
/// number of creates answered.
pub(crate) async fn create_at_rate(
    creator: &Creator,
    first: u32,
    rate: u64,
    duration: Duration,
    t0: Instant,
    acks: &Arc<Vec<AtomicU64>>,
) -> anyhow::Result<u64> {
    let count = (rate as f64 * duration.as_secs_f64()) as u32;
    let (tx, rx) = tokio::sync::mpsc::channel::<u32>(count.max(1) as usize);
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let mut workers = Vec::new();
    for _ in 0..CREATORS {
        let mut conn = creator.ep.connect().await?;
        let (ep, rx, acks) = (Arc::clone(&creator.ep), Arc::clone(&rx), Arc::clone(acks));
        let (collection, body) = (creator.collection.clone(), creator.body);
        workers.push(tokio::spawn(async move {
            let mut done = 0u64;
            loop {
                let Some(n) = rx.lock().await.recv().await else {
                    break;
                };
                let req = ep.request(Method::POST, &collection, body(&format!("ev-{n}")));
                conn.expect(req, StatusCode::CREATED).await?;
                acks[n as usize].store(since(t0), Ordering::Release);
                done += 1;
            }
            anyhow::Ok(done)
        }));
    }
    drop(rx);
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    for n in first..first + count {
        ticker.tick().await;
        tx.send(n).await?;
    }
    drop(tx);
    let mut done = 0;
    for worker in workers {
        done += worker.await??;
    }
    Ok(done)
}

/// What the watchers of one row received.
pub(crate) struct Tally {
    /// The delivery lag of every measured event at every watcher, sorted.
    pub(crate) lags: Vec<Duration>,
    /// Events that arrived before their create's response.
    pub(crate) early: u64,
    /// Events that arrived in the measured window.
    pub(crate) in_window: u64,
    /// Watches the server closed before the end.
    pub(crate) closed: usize,
    /// Why the first of them was closed.
    pub(crate) closed_reason: Option<String>,
}

/// Checks that every watcher that was not closed received each of the events `events` exactly
/// once, and measures the lag (arrival minus the create's response time in `acks`) of those
/// from `measured_from` on; `window` is the measured window (ns since `t0`).
pub(crate) fn tally(
    results: Vec<anyhow::Result<Vec<(u32, u64)>>>,
    events: std::ops::RangeInclusive<u32>,
    measured_from: u32,
    acks: &[AtomicU64],
    window: std::ops::RangeInclusive<u64>,
) -> anyhow::Result<Tally> {
    let count = events.end() - events.start() + 1;
    let mut tally = Tally {
        lags: Vec::new(),
        early: 0,
        in_window: 0,
        closed: 0,
        closed_reason: None,
    };
    for result in results {
        let arrivals = match result {
            Ok(arrivals) => arrivals,
            Err(error) => {
                // The server closed this watch (for example for falling behind its buffer).
                tally.closed += 1;
                tally
                    .closed_reason
                    .get_or_insert_with(|| format!("{error:#}"));
                continue;
            }
        };
        let ours: Vec<_> = arrivals
            .iter()
            .filter(|(n, _)| events.contains(n))
            .collect();
        // Creates run on several connections, so events arrive in revision order, not in
        // the order of their numbers: each must arrive exactly once.
        let mut numbers: Vec<u32> = ours.iter().map(|(n, _)| *n).collect();
        numbers.sort_unstable();
        numbers.dedup();
        if ours.len() != count as usize || numbers.len() != count as usize {
            bail!(
                "a watcher received {} events ({} distinct) of {count}",
                ours.len(),
                numbers.len()
            );
        }
        for &&(n, at) in &ours {
            if window.contains(&at) {
                tally.in_window += 1;
            }
            if n >= measured_from {
                let ack = acks[n as usize].load(Ordering::Acquire);
                if at < ack {
                    tally.early += 1;
                }
                tally
                    .lags
                    .push(Duration::from_nanos(at.saturating_sub(ack)));
            }
        }
    }
    tally.lags.sort();
    Ok(tally)
}

/// The current resourceVersion of the collection at `collection`.
pub(crate) async fn list_revision(ep: &Endpoint, collection: &str) -> anyhow::Result<String> {
    let mut conn = ep.connect().await?;
    let body = conn
        .expect(
            ep.request(Method::GET, &format!("{collection}?limit=1"), Bytes::new()),
            StatusCode::OK,
        )
        .await?;
    let list: serde_json::Value = serde_json::from_slice(&body)?;
    list["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_string)
        .context("list without resourceVersion")
}

/// Runs the watch case in `tmp`.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<Watches> {
    let watchers = env_number("APIARY_BENCH_WATCHERS", WATCHERS);
    let rate = env_number("APIARY_BENCH_WATCH_RATE", RATE).max(1);
    let (apiary, kubeconfig) = start_apiary(&tmp.join("watch"), &[])?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let addr = creds.addr()?;
    let h1 = Endpoint::new(addr, Proto::H1, &creds)?;
    let h2 = Endpoint::new(addr, Proto::H2, &creds)?;
    wait_ready(&h1).await?;
    eprintln!("watch case: apiary pid {}", apiary.pid());
    let mut conn = h1.connect().await?;
    let req = h1.request(Method::POST, "/api/v1/namespaces", namespace("watch"));
    conn.expect(req, StatusCode::CREATED).await?;
    drop(conn);
    let t0 = Instant::now();
    let per_row = (rate as f64 * (WARMUP + case).as_secs_f64()) as usize + 1;
    let rows_wanted = layouts();
    let total = per_row * (rows_wanted.len() + 1);
    let acks: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());

    let creator = Arc::new(Creator {
        ep: Arc::clone(&h1),
        collection: "/api/v1/namespaces/watch/configmaps".into(),
        body: |name| configmap("watch", name),
    });

    // The creates alone, for their share of the server's CPU.
    eprintln!("watch case: creates alone at {rate}/s");
    let before = cpu_time(apiary.pid())?;
    let alone = create_at_rate(&creator, 0, rate, case, t0, &acks).await?;
    let create_cpu = cpu_time(apiary.pid())?.saturating_sub(before);
    let create_cpu_us = create_cpu.as_secs_f64() * 1e6 / alone.max(1) as f64;
    let mut next = per_row as u32;

    let mut rows = Vec::new();
    for layout in rows_wanted {
        eprintln!(
            "watch case: {watchers} watchers, {}, creates at {rate}/s",
            layout.label()
        );
        let ep = if layout.proto() == Proto::H1 {
            &h1
        } else {
            &h2
        };
        let revision = list_revision(&h1, "/api/v1/namespaces/watch/configmaps").await?;
        let path = format!(
            "/api/v1/namespaces/watch/configmaps?watch=true&resourceVersion={revision}&timeoutSeconds=600"
        );
        let first = next;
        let warm = (rate as f64 * WARMUP.as_secs_f64()) as u32;
        let measured_from = first + warm;
        let count = (rate as f64 * (WARMUP + case).as_secs_f64()) as u32;
        let last = first + count - 1;
        next += per_row as u32;
        let shared = WatchShared::new(t0, last);
        let mut mux: Vec<Conn> = Vec::new();
        let mux_connections = watchers
            .div_ceil(MUX_STREAMS_PER_CONNECTION)
            .max(MUX_CONNECTIONS);
        if layout == Layout::H2Mux {
            for _ in 0..mux_connections {
                mux.push(h2.connect().await?);
            }
        }
        let mut tasks = Vec::with_capacity(watchers);
        for i in 0..watchers {
            let conn = match layout {
                Layout::H2Mux => mux[i % mux_connections]
                    .share()
                    .context("an HTTP/2 connection shares")?,
                _ => ep.connect().await?,
            };
            tasks.push(tokio::spawn(watch(
                conn,
                Arc::clone(ep),
                path.clone(),
                Arc::clone(&shared),
            )));
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while shared.opened.load(Ordering::Relaxed) < watchers {
            if Instant::now() > deadline {
                bail!(
                    "only {} of {watchers} watches opened",
                    shared.opened.load(Ordering::Relaxed)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;

        // Warm-up creates, then the measured window, both from one paced run; the window's
        // CPU and deliveries are taken between its start and the last create.
        let creates = {
            let (creator, acks) = (Arc::clone(&creator), Arc::clone(&acks));
            tokio::spawn(async move {
                create_at_rate(&creator, first, rate, WARMUP + case, t0, &acks).await
            })
        };
        tokio::time::sleep(WARMUP).await;
        let window_start = since(t0);
        let server_before = cpu_time(apiary.pid())?;
        let client_before = cpu_time(std::process::id())?;
        let wall = Instant::now();
        let created = creates.await??;
        let window = wall.elapsed();
        let window_end = since(t0);
        let server_cpu = cpu_time(apiary.pid())?.saturating_sub(server_before);
        let client_cpu = cpu_time(std::process::id())?.saturating_sub(client_before);
        if created != u64::from(count) {
            bail!("{created} of {count} creates answered");
        }
        // Let every watcher receive the last event, then end the watches.
        let drain_deadline = Instant::now() + DRAIN;
        while shared.finished.load(Ordering::Relaxed)
            + tasks.iter().filter(|t| t.is_finished()).count()
            < watchers
            && Instant::now() < drain_deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shared.stop.send_replace(true);
        let mut results = Vec::with_capacity(watchers);
        for task in tasks {
            results.push(task.await?);
        }
        drop(mux);
        let Tally {
            lags,
            early,
            in_window,
            closed,
            closed_reason,
        } = tally(
            results,
            first..=last,
            measured_from,
            &acks,
            window_start..=window_end,
        )?;
        let secs = window.as_secs_f64();
        let deliveries_per_s = in_window as f64 / secs;
        let server_cores = server_cpu.as_secs_f64() / secs;
        let creates_in_window = rate as f64 * case.as_secs_f64();
        let cpu_per_delivery_us = server_cpu.as_secs_f64() * 1e6 / in_window.max(1) as f64;
        let net = (server_cpu.as_secs_f64() * 1e6 - creates_in_window * create_cpu_us).max(0.0);
        rows.push(WatchRow {
            layout,
            watchers,
            rate,
            creates_per_s: creates_in_window / secs,
            deliveries_per_s,
            server_cores,
            cpu_per_delivery_us,
            net_cpu_per_delivery_us: net / in_window.max(1) as f64,
            client_cores: client_cpu.as_secs_f64() / secs,
            lag_p50: quantile(&lags, 0.5),
            lag_p99: quantile(&lags, 0.99),
            lag_max: lags.last().copied().unwrap_or_default(),
            early,
            closed,
            closed_reason,
        });
        // Let the server drop the closed watches before the next row.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    apiary.terminate(Duration::from_secs(30))?;
    Ok(Watches {
        create_cpu_us,
        rows,
    })
}
