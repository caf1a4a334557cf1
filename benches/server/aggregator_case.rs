//! API aggregation (`APIARY_BENCH_ONLY=aggregator`, issue 26): the release wardle example as an
//! aggregated API server behind the release `apiary` binary (`aggregator_setup`), in one run:
//!
//! 1. GETs of one flunder and flunder creates over HTTP/1.1 by `system:masters` admins, straight
//!    to wardle against through the aggregator, interleaved per connection count (1, 16, 64):
//!    requests/s, and the CPU per request of main and of wardle (`/proc/<pid>/stat`) and of the
//!    load generator, with the cores all three kept busy (2 of 2: CPU-bound).
//! 2. A watch of flunders straight to wardle against one through the aggregator, both open at
//!    the same time on the same events (flunders created straight at wardle at a fixed rate):
//!    the lag from each create's response to the event's arrival, p50/p99/max.
//! 3. wardle's CPU per GET by `jane` (x509, no group that is allowed before authorization)
//!    when its authorizer is the delegated one (a SubjectAccessReview to main, cached: warm)
//!    against the standalone wardle authorizing the same request with its own RBAC (an
//!    aggregated wardle has no local RBAC: it serves no RBAC objects), each beside the same
//!    GET by its `system:masters` admin (allowed before either authorizer is asked), and
//!    `jane`'s GET through the aggregator (request-header authentication, delegated
//!    authorization).
//!
//! `APIARY_BENCH_ONLY=aggregator-callgrind` instead runs main under callgrind
//! (`aggregator_callgrind`). `APIARY_BENCH_WARDLE_BIN` names a built `wardle-apiserver`
//! (default: `examples/wardle` built with `cargo build --release`);
//! `APIARY_BENCH_AGG_WATCHERS` (default 10 each way) and `APIARY_BENCH_AGG_WATCH_RATE`
//! (creates per second, default 200) change the watch load.
//!
//! With `APIARY_BENCH_AGG_PIN=1` the processes are pinned (`taskset`): main alone on CPU 0,
//! both wardles and the load generator (this process) on CPU 1. The aggregator then has a core
//! of its own, as where kube runs it (kube-apiserver on the control plane, aggregated servers
//! in pods on the nodes), and wardle and its clients get the same single core whether the
//! requests go straight or through the aggregator.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::aggregator_setup::{
    self, Aggregation, FLUNDERS, MainRun, flunder, jane_at_wardle, wait_allowed,
};
use crate::client::{Endpoint, Proto};
use crate::load::{Limit, Outcome, quantile};
use crate::process::{Process, cpu_time, run_tool};
use crate::rbac_case::user_credentials;
use crate::watch_case::{self, Creator, Tally, WatchShared, create_at_rate, since};
use crate::workload::{CONNECTIONS, http_gets_of, http_posts};

/// Connection counts of the authorization comparison.
const AUTHZ_CONNECTIONS: [usize; 2] = [1, 16];
/// Watchers each way unless `APIARY_BENCH_AGG_WATCHERS` says otherwise.
const WATCHERS: usize = 10;
/// Creates per second of the watch comparison unless `APIARY_BENCH_AGG_WATCH_RATE` says.
const WATCH_RATE: u64 = 200;
/// Creates before the watch's measured events.
const WARMUP: Duration = Duration::from_secs(1);
/// How long watchers may take to receive the last events after the creates stop.
const DRAIN: Duration = Duration::from_secs(20);
/// The name of the flunder the GETs read.
const TARGET: &str = "target";

/// Whether `APIARY_BENCH_AGG_PIN=1` asks for pinned processes (see the module).
fn pinned() -> bool {
    std::env::var_os("APIARY_BENCH_AGG_PIN").is_some_and(|v| v == "1")
}

/// Runs every thread of process `pid` (and the threads it starts later) on CPU `cpu` only.
fn pin(pid: u32, cpu: usize) -> anyhow::Result<()> {
    let (cpu, pid) = (cpu.to_string(), pid.to_string());
    run_tool("taskset", &["-a", "-p", "-c", &cpu, &pid])
}

/// One connection count: the same requests straight to wardle and through the aggregator.
pub struct PairRow {
    /// Connections.
    pub connections: usize,
    /// Straight to wardle (CPU of main, then wardle).
    pub direct: Outcome,
    /// Through main's aggregator (CPU of main, then wardle).
    pub proxied: Outcome,
}

/// One connection count of the authorization comparison (wardle's CPU only).
pub struct AuthzRow {
    /// Connections.
    pub connections: usize,
    /// `jane` at the aggregated wardle: delegated authorization, warm cache.
    pub delegated: Outcome,
    /// The aggregated wardle's admin (`system:masters`).
    pub delegated_masters: Outcome,
    /// `jane` at the standalone wardle: its own RBAC.
    pub local: Outcome,
    /// The standalone wardle's admin (`system:masters`).
    pub local_masters: Outcome,
    /// `jane` through the aggregator (CPU of main, then wardle).
    pub proxied: Outcome,
}

/// The watch comparison.
pub struct WatchLags {
    /// Watchers each way.
    pub watchers: usize,
    /// Creates per second asked for.
    pub rate: u64,
    /// Creates per second achieved in the window.
    pub creates_per_s: f64,
    /// The watches straight to wardle.
    pub direct: Tally,
    /// The watches through the aggregator.
    pub proxied: Tally,
    /// Main's CPU per event it relayed in the window, µs.
    pub main_cpu_per_event_us: f64,
    /// wardle's CPU seconds per wall second in the window.
    pub wardle_cores: f64,
}

/// What the aggregator case measured.
pub struct Aggregated {
    /// Bytes of the flunder the GETs read.
    pub get_bytes: usize,
    /// GETs per connection count.
    pub gets: Vec<PairRow>,
    /// Creates per connection count.
    pub creates: Vec<PairRow>,
    /// The watch comparison.
    pub watch: WatchLags,
    /// The authorization comparison.
    pub authz: Vec<AuthzRow>,
    /// Whether main had CPU 0 to itself and everything else ran on CPU 1.
    pub pinned: bool,
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Creates the flunder the GETs read through `ep` and returns its JSON as GET answers it.
async fn target(ep: &Endpoint) -> anyhow::Result<Bytes> {
    let mut conn = ep.connect().await?;
    let req = ep.request(Method::POST, FLUNDERS, flunder(TARGET));
    conn.expect(req, StatusCode::CREATED).await?;
    let req = ep.request(Method::GET, &format!("{FLUNDERS}/{TARGET}"), Bytes::new());
    conn.expect(req, StatusCode::OK).await
}

/// Runs the case in `tmp`.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<Aggregated> {
    let wardle_bin = aggregator_setup::wardle_binary()?;
    let agg = aggregator_setup::start(tmp, &wardle_bin, &MainRun::Native).await?;
    let pinned = pinned();
    if pinned {
        pin(agg.main.pid(), 0)?;
        pin(agg.wardle.pid(), 1)?;
        pin(std::process::id(), 1)?;
        eprintln!("aggregator case: main on CPU 0; wardle and the load generator on CPU 1");
    }
    let body = target(&agg.wardle_admin).await?;
    let get_path = format!("{FLUNDERS}/{TARGET}");
    let pids = [agg.main.pid(), agg.wardle.pid()];
    let limit = Limit::time(case);
    let (direct_ep, proxied_ep) = (&agg.wardle_admin, &agg.main_admin);

    let mut gets = Vec::new();
    let mut creates = Vec::new();
    for conns in CONNECTIONS {
        eprintln!("aggregator case: GETs and creates at {conns} connections");
        let direct = http_gets_of(&pids, direct_ep, &get_path, &body, conns, limit).await?;
        let proxied = http_gets_of(&pids, proxied_ep, &get_path, &body, conns, limit).await?;
        gets.push(PairRow {
            connections: conns,
            direct,
            proxied,
        });
        let direct = http_posts(&pids, direct_ep, FLUNDERS, conns, limit, move |n| {
            flunder(&format!("d{conns}-{n}"))
        })
        .await?;
        let proxied = http_posts(&pids, proxied_ep, FLUNDERS, conns, limit, move |n| {
            flunder(&format!("p{conns}-{n}"))
        })
        .await?;
        creates.push(PairRow {
            connections: conns,
            direct,
            proxied,
        });
    }

    let watch = watch_lags(&agg, case).await?;
    let (standalone, authz) = authorization(tmp, &wardle_bin, &agg, &get_path, case).await?;
    standalone.terminate(Duration::from_secs(30))?;
    agg.wardle.terminate(Duration::from_secs(30))?;
    agg.main.terminate(Duration::from_secs(30))?;
    Ok(Aggregated {
        get_bytes: body.len(),
        gets,
        creates,
        watch,
        authz,
        pinned,
    })
}

/// Watches straight to wardle and through the aggregator, open together, while flunders are
/// created straight at wardle at a fixed rate.
async fn watch_lags(agg: &Aggregation, case: Duration) -> anyhow::Result<WatchLags> {
    let watchers = env_number("APIARY_BENCH_AGG_WATCHERS", WATCHERS).max(1);
    let rate = env_number("APIARY_BENCH_AGG_WATCH_RATE", WATCH_RATE).max(1);
    eprintln!("aggregator case: {watchers} watches each way, creates at {rate}/s");
    let count = (rate as f64 * (WARMUP + case).as_secs_f64()) as u32;
    let warm = (rate as f64 * WARMUP.as_secs_f64()) as u32;
    let acks: Arc<Vec<AtomicU64>> = Arc::new((0..count).map(|_| AtomicU64::new(0)).collect());
    let revision = watch_case::list_revision(&agg.wardle_admin, FLUNDERS).await?;
    let path = format!("{FLUNDERS}?watch=true&resourceVersion={revision}&timeoutSeconds=600");
    let t0 = Instant::now();
    let direct = WatchShared::new(t0, count - 1);
    let proxied = WatchShared::new(t0, count - 1);
    let mut tasks = Vec::new();
    for (ep, shared) in [(&agg.wardle_admin, &direct), (&agg.main_admin, &proxied)] {
        let mut side = Vec::with_capacity(watchers);
        for _ in 0..watchers {
            side.push(tokio::spawn(watch_case::watch(
                ep.connect().await?,
                Arc::clone(ep),
                path.clone(),
                Arc::clone(shared),
            )));
        }
        tasks.push(side);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while direct.opened.load(Ordering::Relaxed) + proxied.opened.load(Ordering::Relaxed)
        < 2 * watchers
    {
        if Instant::now() > deadline {
            bail!("the watches did not all open within 60s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let creator = Creator {
        ep: Arc::clone(&agg.wardle_admin),
        collection: FLUNDERS.to_string(),
        body: flunder,
    };
    let creates = {
        let acks = Arc::clone(&acks);
        tokio::spawn(
            async move { create_at_rate(&creator, 0, rate, WARMUP + case, t0, &acks).await },
        )
    };
    tokio::time::sleep(WARMUP).await;
    let window_start = since(t0);
    let (main_before, wardle_before) = (cpu_time(agg.main.pid())?, cpu_time(agg.wardle.pid())?);
    let wall = Instant::now();
    let created = creates.await??;
    let window = wall.elapsed();
    let window_end = since(t0);
    let main_cpu = cpu_time(agg.main.pid())?.saturating_sub(main_before);
    let wardle_cpu = cpu_time(agg.wardle.pid())?.saturating_sub(wardle_before);
    if created != u64::from(count) {
        bail!("{created} of {count} creates answered");
    }
    let drain_deadline = Instant::now() + DRAIN;
    while direct.finished.load(Ordering::Relaxed) + proxied.finished.load(Ordering::Relaxed)
        < 2 * watchers
        && Instant::now() < drain_deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    direct.stop.send_replace(true);
    proxied.stop.send_replace(true);
    let mut tallies = Vec::new();
    for side in tasks {
        let mut results = Vec::with_capacity(watchers);
        for task in side {
            results.push(task.await?);
        }
        tallies.push(watch_case::tally(
            results,
            0..=count - 1,
            warm,
            &acks,
            window_start..=window_end,
        )?);
    }
    let proxied_tally = tallies.pop().unwrap_or_else(empty_tally);
    let direct_tally = tallies.pop().unwrap_or_else(empty_tally);
    let secs = window.as_secs_f64();
    Ok(WatchLags {
        watchers,
        rate,
        creates_per_s: rate as f64 * case.as_secs_f64() / secs,
        main_cpu_per_event_us: main_cpu.as_secs_f64() * 1e6 / proxied_tally.in_window.max(1) as f64,
        wardle_cores: wardle_cpu.as_secs_f64() / secs,
        direct: direct_tally,
        proxied: proxied_tally,
    })
}

fn empty_tally() -> Tally {
    Tally {
        lags: Vec::new(),
        early: 0,
        in_window: 0,
        closed: 0,
        closed_reason: None,
    }
}

/// wardle's CPU per GET by `jane` under delegated and local authorization (see the module).
async fn authorization(
    tmp: &Path,
    wardle_bin: &Path,
    agg: &Aggregation,
    get_path: &str,
    case: Duration,
) -> anyhow::Result<(Process, Vec<AuthzRow>)> {
    let delegated_jane = jane_at_wardle(agg)?;
    let proxied_jane = Endpoint::new(
        agg.main_creds.addr()?,
        Proto::H1,
        &user_credentials(&agg.main_dir, &agg.main_creds, aggregator_setup::USER)?,
    )?;
    let (standalone, local_admin, local_jane) =
        aggregator_setup::start_standalone(tmp, wardle_bin).await?;
    if pinned() {
        pin(standalone.pid(), 1)?;
    }
    let local_body = target(&local_admin).await?;
    let mut conn = agg.wardle_admin.connect().await?;
    let body = conn
        .expect(
            agg.wardle_admin
                .request(Method::GET, get_path, Bytes::new()),
            StatusCode::OK,
        )
        .await?;
    for ep in [&delegated_jane, &local_jane, &proxied_jane] {
        wait_allowed(ep, get_path).await?;
    }
    let (wardle_pid, local_pid, both_pids) = (
        [agg.wardle.pid()],
        [standalone.pid()],
        [agg.main.pid(), agg.wardle.pid()],
    );
    let limit = Limit::time(case);
    let mut rows = Vec::new();
    for conns in AUTHZ_CONNECTIONS {
        eprintln!("aggregator case: authorization at {conns} connections");
        let delegated = http_gets_of(&wardle_pid, &delegated_jane, get_path, &body, conns, limit);
        let delegated = delegated.await?;
        let delegated_masters = http_gets_of(
            &wardle_pid,
            &agg.wardle_admin,
            get_path,
            &body,
            conns,
            limit,
        )
        .await?;
        let local =
            http_gets_of(&local_pid, &local_jane, get_path, &local_body, conns, limit).await?;
        let local_masters = http_gets_of(
            &local_pid,
            &local_admin,
            get_path,
            &local_body,
            conns,
            limit,
        )
        .await?;
        let proxied =
            http_gets_of(&both_pids, &proxied_jane, get_path, &body, conns, limit).await?;
        rows.push(AuthzRow {
            connections: conns,
            delegated,
            delegated_masters,
            local,
            local_masters,
            proxied,
        });
    }
    Ok((standalone, rows))
}

/// Cores kept busy by the servers and the load generator during a run.
fn cores(outcome: &Outcome) -> f64 {
    (outcome.cpu + outcome.client_cpu).as_secs_f64() / outcome.elapsed.as_secs_f64().max(1e-9)
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// Prints the case's tables.
pub fn print(r: &Aggregated) {
    println!("\n## API aggregation: wardle straight and through the aggregator (HTTP/1.1)\n");
    println!(
        "The GETs read one flunder of {} bytes; the requests are the `system:masters` admins' \
         (main's through the aggregator, wardle's straight). CPU is µs per request from \
         /proc/<pid>/stat; \"cores\" counts main, wardle and the load generator together \
         (2 of 2: CPU-bound).\n",
        r.get_bytes
    );
    if r.pinned {
        println!(
            "Pinned (`APIARY_BENCH_AGG_PIN=1`): main alone on CPU 0; wardle and the load \
             generator on CPU 1, straight or proxied.\n"
        );
    }
    println!(
        "| request | connections | direct /s | proxied /s | proxied / direct (≥ 0.8×) | direct CPU: wardle (main) | proxied CPU: main + wardle = sum | client CPU direct / proxied | cores direct / proxied | p50 ms direct / proxied |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, rows) in [("GET", &r.gets), ("create", &r.creates)] {
        for row in rows {
            let (d, p) = (&row.direct, &row.proxied);
            println!(
                "| {label} | {} | {:.0} | {:.0} | {:.2}× | {:.0} ({:.0}) | {:.0} + {:.0} = {:.0} | {:.0} / {:.0} | {:.2} / {:.2} | {} / {} |",
                row.connections,
                d.rate(),
                p.rate(),
                p.rate() / d.rate().max(1e-9),
                d.process_cpu_per_op(1),
                d.process_cpu_per_op(0),
                p.process_cpu_per_op(0),
                p.process_cpu_per_op(1),
                p.cpu_per_op(),
                d.client_cpu_per_op(),
                p.client_cpu_per_op(),
                cores(d),
                cores(p),
                ms(d.quantile(0.5)),
                ms(p.quantile(0.5)),
            );
        }
    }

    let w = &r.watch;
    println!(
        "\n### Watch lag: {} watches straight to wardle and {} through the aggregator, open together; flunders created straight at wardle at {}/s ({:.0}/s achieved)\n",
        w.watchers, w.watchers, w.rate, w.creates_per_s
    );
    println!("| watch | events measured | lag p50 ms | lag p99 ms | lag max ms | early | closed |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (label, t) in [
        ("direct", &w.direct),
        ("through the aggregator", &w.proxied),
    ] {
        println!(
            "| {label} | {} | {} | {} | {} | {} | {} |",
            t.lags.len(),
            ms(quantile(&t.lags, 0.5)),
            ms(quantile(&t.lags, 0.99)),
            ms(t.lags.last().copied().unwrap_or_default()),
            t.early,
            t.closed,
        );
        if let Some(reason) = &t.closed_reason {
            println!("\n(first closed watch: {reason})\n");
        }
    }
    let (dp99, pp99) = (
        quantile(&w.direct.lags, 0.99),
        quantile(&w.proxied.lags, 0.99),
    );
    println!(
        "\np99 through the aggregator / direct: {:.2}× (target ≤ 2×); main's CPU per relayed event: {:.1} µs; wardle busy {:.2} cores.",
        pp99.as_secs_f64() / dp99.as_secs_f64().max(1e-9),
        w.main_cpu_per_event_us,
        w.wardle_cores
    );

    println!("\n### wardle's CPU per GET: delegated authorization (warm cache) vs local RBAC\n");
    println!(
        "`jane` (x509) straight to the aggregated wardle (SubjectAccessReview to main, cached) and to the standalone wardle (its own RBAC); each beside its server's `system:masters` admin (allowed before any authorizer). µs of wardle CPU per GET; GETs/s in brackets.\n"
    );
    println!(
        "| connections | delegated, jane | delegated, masters | local RBAC, jane | local RBAC, masters | delegated / local (jane; ≤ 1.10×) | authz share delegated / local (jane − masters) | jane through the aggregator: wardle (main) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &r.authz {
        let c = |o: &Outcome| format!("{:.0} ({:.0}/s)", o.cpu_per_op(), o.rate());
        println!(
            "| {} | {} | {} | {} | {} | {:.2}× | {:.0} / {:.0} | {:.0} ({:.0}) |",
            row.connections,
            c(&row.delegated),
            c(&row.delegated_masters),
            c(&row.local),
            c(&row.local_masters),
            row.delegated.cpu_per_op() / row.local.cpu_per_op().max(1e-9),
            row.delegated.cpu_per_op() - row.delegated_masters.cpu_per_op(),
            row.local.cpu_per_op() - row.local_masters.cpu_per_op(),
            row.proxied.process_cpu_per_op(1),
            row.proxied.process_cpu_per_op(0),
        );
    }
}
