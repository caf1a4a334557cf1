//! The benchmark run: starts apiary and the baseline, drives each workload and prints the
//! report.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::client::{Conn, Endpoint, Kubeconfig, Proto};
use crate::etcd_case;
use crate::load::{Limit, Outcome, drive_processes, quantile};
use crate::process::{self, start_apiary, start_baseline};
use crate::raw;
use crate::report::{self, CreateRow, GetRow, ListRow, Machine, MemoryRow};
use crate::{
    aggregator_callgrind, aggregator_case, audit_case, rbac_case, reads_case, token_case,
    watch_case, webhook_case,
};

/// Connection counts of the throughput cases.
pub(crate) const CONNECTIONS: [usize; 3] = [1, 16, 64];
/// Objects in the listed namespace.
const LIST_OBJECTS: u64 = 10_000;
/// Objects stored for the memory figure.
const STORED_OBJECTS: u64 = 100_000;
/// Bytes of `data.payload` in every ConfigMap.
const PAYLOAD: usize = 256;
/// When this environment variable is set, the filled apiary data directory is kept (for
/// profiling a server over it) instead of being deleted.
const KEEP_ENV: &str = "APIARY_BENCH_KEEP";
/// When this environment variable is `creates`, only the create case runs (for profiling and
/// quick A/B comparisons); its table is printed and the run ends. `reads` runs only the
/// consistent reads over etcd, `watch` only the watch fan-out, `audit` only the creates with and
/// without a Metadata-level audit policy, `rbac` only RBAC-authorized requests against
/// `system:masters`, `tokens` only token authentication against x509, `webhooks` only creates
/// with admission webhooks against none, `aggregator` only the API aggregation case and
/// `aggregator-callgrind` only its instruction counts.
const ONLY_ENV: &str = "APIARY_BENCH_ONLY";
/// Upper bound of any bulk-loading phase.
const LOAD_TIMEOUT: Duration = Duration::from_secs(150);

/// The JSON of a ConfigMap named `name` in `namespace`.
pub(crate) fn configmap(namespace: &str, name: &str) -> Bytes {
    let payload = "x".repeat(PAYLOAD);
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{namespace}","labels":{{"app":"bench"}}}},"data":{{"payload":"{payload}"}}}}"#
    ))
}

pub(crate) fn namespace(name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
    ))
}

async fn connections(ep: &Endpoint, n: usize) -> anyhow::Result<Vec<Conn>> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(ep.connect().await?);
    }
    Ok(conns)
}

/// Creates ConfigMaps named `<tag><n>` in `ns` over `conns` connections to server `pid`.
pub(crate) async fn http_creates(
    pid: u32,
    ep: &Arc<Endpoint>,
    ns: &str,
    tag: &str,
    conns: usize,
    limit: Limit,
) -> anyhow::Result<Outcome> {
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let (ns, tag) = (ns.to_string(), tag.to_string());
    http_posts(&[pid], ep, &path, conns, limit, move |n| {
        configmap(&ns, &format!("{tag}{n}"))
    })
    .await
}

/// POSTs `body(n)` to `path` (the `n`th operation's object) over `conns` connections, each
/// answered `201 Created`, measuring the CPU of the processes `pids`.
pub(crate) async fn http_posts(
    pids: &[u32],
    ep: &Arc<Endpoint>,
    path: &str,
    conns: usize,
    limit: Limit,
    body: impl Fn(u64) -> Bytes + Send + Sync + 'static,
) -> anyhow::Result<Outcome> {
    let (ep2, path) = (Arc::clone(ep), path.to_string());
    drive_processes(
        pids,
        connections(ep, conns).await?,
        limit,
        move |mut conn, n| {
            let req = ep2.request(Method::POST, &path, body(n));
            async move {
                conn.expect(req, StatusCode::CREATED).await?;
                Ok(conn)
            }
        },
    )
    .await
}

/// GETs `path` over `conns` connections to server `pid`; every answer must be `want`.
pub(crate) async fn http_gets(
    pid: u32,
    ep: &Arc<Endpoint>,
    path: &str,
    want: &Bytes,
    conns: usize,
    limit: Limit,
) -> anyhow::Result<Outcome> {
    http_gets_of(&[pid], ep, path, want, conns, limit).await
}

/// [`http_gets`] measuring the CPU of the processes `pids` (a request crossing several).
pub(crate) async fn http_gets_of(
    pids: &[u32],
    ep: &Arc<Endpoint>,
    path: &str,
    want: &Bytes,
    conns: usize,
    limit: Limit,
) -> anyhow::Result<Outcome> {
    let (ep2, path, want) = (Arc::clone(ep), path.to_string(), want.clone());
    drive_processes(
        pids,
        connections(ep, conns).await?,
        limit,
        move |mut conn, _| {
            let req = ep2.request(Method::GET, &path, Bytes::new());
            let want = want.clone();
            async move {
                let body = conn.expect(req, StatusCode::OK).await?;
                if body.len() != want.len() {
                    bail!("GET returned {} bytes, wanted {}", body.len(), want.len());
                }
                Ok(conn)
            }
        },
    )
    .await
}

pub(crate) async fn wait_ready(ep: &Endpoint) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut conn) = ep.connect().await {
            let req = ep.request(Method::GET, "/readyz", Bytes::new());
            if matches!(conn.send(req).await, Ok((StatusCode::OK, _))) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("apiary did not become ready within 60s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sorted latencies of sequential list requests, and the server's CPU time per request over
/// them (user + system of the whole process, background work included).
struct ListSamples {
    latencies: Vec<Duration>,
    server_cpu: Duration,
}

/// `used` CPU time shared among `requests` requests.
fn per_request(used: Duration, requests: usize) -> Duration {
    used / u32::try_from(requests.max(1)).unwrap_or(u32::MAX)
}

/// Timed sequential GETs of one list URL (at most `max` samples or `budget`) served by the
/// process `pid`, checking the item count of the first answer.
async fn list_samples(
    conn: &mut Conn,
    ep: &Endpoint,
    pid: u32,
    path: &str,
    items: usize,
    max: usize,
    budget: Duration,
) -> anyhow::Result<ListSamples> {
    let start = Instant::now();
    let cpu_before = process::cpu_time(pid)?;
    let mut samples = Vec::new();
    while samples.len() < max && start.elapsed() < budget {
        let req = ep.request(Method::GET, path, Bytes::new());
        let t = Instant::now();
        let body = conn.expect(req, StatusCode::OK).await?;
        samples.push(t.elapsed());
        if samples.len() == 1 {
            let list: serde_json::Value = serde_json::from_slice(&body)?;
            let n = list["items"].as_array().map_or(0, Vec::len);
            if n != items {
                bail!("{path} returned {n} items, wanted {items}");
            }
        }
    }
    let used = process::cpu_time(pid)?.saturating_sub(cpu_before);
    let server_cpu = per_request(used, samples.len());
    samples.sort();
    Ok(ListSamples {
        latencies: samples,
        server_cpu,
    })
}

/// Walks the collection in `limit=500` pages (at most `max_walks` or `budget`) served by the
/// process `pid`; returns the page latencies and the walk durations, each with the server's
/// CPU time per page or per walk.
async fn paged_samples(
    conn: &mut Conn,
    ep: &Endpoint,
    pid: u32,
    base: &str,
    items: usize,
    max_walks: usize,
    budget: Duration,
) -> anyhow::Result<(ListSamples, ListSamples)> {
    let start = Instant::now();
    let cpu_before = process::cpu_time(pid)?;
    let (mut pages, mut walks) = (Vec::new(), Vec::new());
    while walks.len() < max_walks && start.elapsed() < budget {
        let mut page_time = Duration::ZERO;
        let (mut token, mut seen) = (String::new(), 0usize);
        loop {
            let path = if token.is_empty() {
                format!("{base}?limit=500")
            } else {
                format!("{base}?limit=500&continue={token}")
            };
            let req = ep.request(Method::GET, &path, Bytes::new());
            let t = Instant::now();
            let body = conn.expect(req, StatusCode::OK).await?;
            let took = t.elapsed();
            pages.push(took);
            page_time += took;
            let list: serde_json::Value = serde_json::from_slice(&body)?;
            seen += list["items"].as_array().map_or(0, Vec::len);
            token = list["metadata"]["continue"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if token.is_empty() {
                break;
            }
        }
        if seen != items {
            bail!("paging {base} saw {seen} items, wanted {items}");
        }
        // A walk's time is the sum of its requests (the client's JSON parsing excluded).
        walks.push(page_time);
    }
    let used = process::cpu_time(pid)?.saturating_sub(cpu_before);
    let (page_cpu, walk_cpu) = (
        per_request(used, pages.len()),
        per_request(used, walks.len()),
    );
    pages.sort();
    walks.sort();
    Ok((
        ListSamples {
            latencies: pages,
            server_cpu: page_cpu,
        },
        ListSamples {
            latencies: walks,
            server_cpu: walk_cpu,
        },
    ))
}

/// Runs every benchmark and prints the report.
pub async fn run(case: Duration) -> anyhow::Result<()> {
    let machine = Machine::read();
    let started = Instant::now();
    let tmp = tempfile::Builder::new()
        .prefix("apiary-bench-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    match std::env::var(ONLY_ENV).as_deref() {
        Ok("reads") => {
            let reads = reads_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            report::print_reads(&reads);
            return Ok(());
        }
        Ok("rbac") => {
            let rows = rbac_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            report::print_rbac(&rows);
            return Ok(());
        }
        Ok("tokens") => {
            let rows = token_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            token_case::print(&rows);
            return Ok(());
        }
        Ok("watch") => {
            let watches = watch_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            report::print_watches(&watches);
            return Ok(());
        }
        Ok("webhooks") => {
            let rows = webhook_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            webhook_case::print(&rows);
            return Ok(());
        }
        Ok("aggregator") => {
            let aggregated = aggregator_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            aggregator_case::print(&aggregated);
            return Ok(());
        }
        Ok("aggregator-callgrind") => {
            let rows = aggregator_callgrind::run(tmp.path()).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            aggregator_callgrind::print(&rows);
            return Ok(());
        }
        Ok("audit") => {
            let (rows, log_bytes) = audit_case::run(tmp.path(), case).await?;
            report::print_machine(&machine, &Machine::read(), started.elapsed(), case);
            audit_case::print(&rows, log_bytes);
            return Ok(());
        }
        _ => {}
    }
    let data_dir = tmp.path().join("apiary");
    let (apiary, kubeconfig) = start_apiary(&data_dir, &[])?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let addr = creds.addr()?;
    let h1 = Endpoint::new(addr, Proto::H1, &creds)?;
    let h2 = Endpoint::new(addr, Proto::H2, &creds)?;
    wait_ready(&h1).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_rss = apiary.rss()?;
    eprintln!(
        "apiary pid {} ready; idle RSS {idle_rss} bytes",
        apiary.pid()
    );

    let mut conn = h1.connect().await?;
    for ns in ["bench", "get", "list", "fill"] {
        let req = h1.request(Method::POST, "/api/v1/namespaces", namespace(ns));
        conn.expect(req, StatusCode::CREATED).await?;
    }
    let mut stored: u64 = 0;

    // 1. Creates against raw storage, interleaved per concurrency so drifting background load
    // hits both sides alike.
    let probe = h1.request(
        Method::POST,
        "/api/v1/namespaces/bench/configmaps",
        configmap("bench", "probe"),
    );
    let created = conn.expect(probe, StatusCode::CREATED).await?;
    let value_size = created.len();
    let created_file = tmp.path().join("created.json");
    std::fs::write(&created_file, &created)?;
    stored += 1;
    let mut creates = Vec::new();
    for c in CONNECTIONS {
        eprintln!("creates at {c} connections");
        let server = http_creates(
            apiary.pid(),
            &h1,
            "bench",
            &format!("c{c}-"),
            c,
            Limit::time(case),
        )
        .await?;
        stored += server.ops;
        let raw_dir = tmp.path().join(format!("raw-{c}"));
        let raw = raw::creates(&raw_dir, c, value_size, Limit::time(case)).await?;
        std::fs::remove_dir_all(&raw_dir).with_context(|| format!("removing {raw_dir:?}"))?;
        let thin_dir = tmp.path().join(format!("thinnest-{c}"));
        let (thin, port) = start_baseline(&data_dir.join("pki"), &created_file, Some(&thin_dir))?;
        let thin_ep = Arc::new(Endpoint::new(
            std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            Proto::H1,
            &creds,
        )?);
        let thinnest =
            http_creates(thin.pid(), &thin_ep, "bench", "t-", c, Limit::time(case)).await?;
        drop(thin);
        std::fs::remove_dir_all(&thin_dir).with_context(|| format!("removing {thin_dir:?}"))?;
        creates.push(CreateRow {
            connections: c,
            server,
            raw,
            thinnest,
        });
    }

    let over_etcd = if etcd_case::wanted() {
        Some(etcd_case::run(tmp.path(), case).await?)
    } else {
        None
    };
    if std::env::var(ONLY_ENV).is_ok_and(|v| v == "creates") {
        report::print_creates(&creates, value_size);
        if let Some((rows, size)) = &over_etcd {
            report::print_etcd_creates(rows, *size);
        }
        return Ok(());
    }

    // 2. GETs of one object against the minimal handler returning the same bytes.
    let req = h1.request(
        Method::POST,
        "/api/v1/namespaces/get/configmaps",
        configmap("get", "target"),
    );
    conn.expect(req, StatusCode::CREATED).await?;
    stored += 1;
    let get_path = "/api/v1/namespaces/get/configmaps/target";
    let object = conn
        .expect(
            h1.request(Method::GET, get_path, Bytes::new()),
            StatusCode::OK,
        )
        .await?;
    let body_file = tmp.path().join("object.json");
    std::fs::write(&body_file, &object)?;
    let (baseline, port) = start_baseline(&data_dir.join("pki"), &body_file, None)?;
    let base_addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut gets = Vec::new();
    for proto in [Proto::H1, Proto::H2] {
        let server_ep = if proto == Proto::H1 { &h1 } else { &h2 };
        let base_ep = Endpoint::new(base_addr, proto, &creds)?;
        for c in CONNECTIONS {
            eprintln!("GETs at {c} connections over {}", proto.label());
            let server = http_gets(
                apiary.pid(),
                server_ep,
                get_path,
                &object,
                c,
                Limit::time(case),
            )
            .await?;
            let minimal = http_gets(
                baseline.pid(),
                &base_ep,
                get_path,
                &object,
                c,
                Limit::time(case),
            )
            .await?;
            gets.push(GetRow {
                proto,
                connections: c,
                server,
                baseline: minimal,
            });
        }
    }
    drop(baseline);

    // 3. Lists of 10k objects.
    eprintln!("loading {LIST_OBJECTS} objects to list");
    let loaded = http_creates(
        apiary.pid(),
        &h1,
        "list",
        "l-",
        64,
        Limit::ops(LIST_OBJECTS, LOAD_TIMEOUT),
    )
    .await?;
    stored += loaded.ops;
    if loaded.ops != LIST_OBJECTS {
        bail!(
            "created only {} of {LIST_OBJECTS} objects to list",
            loaded.ops
        );
    }
    let list_path = "/api/v1/namespaces/list/configmaps";
    let items = LIST_OBJECTS as usize;
    let budget = Duration::from_secs(20);
    eprintln!("listing");
    let pid = apiary.pid();
    let full = list_samples(&mut conn, &h1, pid, list_path, items, 50, budget).await?;
    let full_rv0 = list_samples(
        &mut conn,
        &h1,
        pid,
        &format!("{list_path}?resourceVersion=0"),
        items,
        50,
        budget,
    )
    .await?;
    let (pages, walks) = paged_samples(&mut conn, &h1, pid, list_path, items, 5, budget).await?;
    let lists = vec![
        ListRow::new(
            "full list, resourceVersion unset (consistent, from the watch cache)",
            full.latencies,
            full.server_cpu,
            true,
        ),
        ListRow::new(
            "full list, resourceVersion=0 (watch cache)",
            full_rv0.latencies,
            full_rv0.server_cpu,
            true,
        ),
        ListRow::new(
            "one limit=500 page (delegated to storage)",
            pages.latencies,
            pages.server_cpu,
            false,
        ),
        ListRow::new(
            "all 20 limit=500 pages, summed",
            walks.latencies,
            walks.server_cpu,
            false,
        ),
    ];

    // The report of the cases so far, with the memory figures when they are measured.
    let report = move |memory| report::Report {
        machine,
        machine_after: Machine::read(),
        value_size,
        creates,
        gets,
        lists,
        memory,
        total: started.elapsed(),
        case,
    };
    if std::env::var(ONLY_ENV).is_ok_and(|v| v == "core") {
        report::print(&report(None));
        return Ok(());
    }
    let watches = watch_case::run(tmp.path(), case).await?;
    let audit = audit_case::run(tmp.path(), case).await?;
    let reads = if reads_case::wanted() {
        Some(reads_case::run(tmp.path(), case).await?)
    } else {
        None
    };

    // 4. Memory with 100k objects stored.
    let remaining = STORED_OBJECTS.saturating_sub(stored);
    eprintln!("loading {remaining} more objects for the memory figure");
    let filled = http_creates(
        apiary.pid(),
        &h1,
        "fill",
        "f-",
        64,
        Limit::ops(remaining, LOAD_TIMEOUT),
    )
    .await?;
    stored += filled.ops;
    if filled.ops != remaining {
        bail!("created only {} of {remaining} filler objects", filled.ops);
    }
    drop(conn);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let loaded_rss = apiary.rss()?;
    let peak_rss = apiary.peak_rss()?;
    apiary.terminate(Duration::from_secs(30))?;
    let store_dir = data_dir.join("store");
    let configmaps = raw::census(&store_dir, "/registry/configmaps/").await?;
    let everything = raw::census(&store_dir, "/").await?;
    let file_bytes = dir_bytes(&store_dir)?;
    if configmaps.keys < stored {
        bail!(
            "the store holds {} ConfigMaps, {stored} were created",
            configmaps.keys
        );
    }
    let restarted_rss = restarted_rss(&data_dir, &creds).await?;
    let memory = MemoryRow {
        idle_rss,
        restarted_rss,
        loaded_rss,
        peak_rss,
        configmaps,
        everything,
        file_bytes,
    };

    report::print(&report(Some(memory)));
    report::print_watches(&watches);
    audit_case::print(&audit.0, audit.1);
    if let Some(reads) = &reads {
        report::print_reads(reads);
    }
    if let Some((rows, size)) = &over_etcd {
        report::print_etcd_creates(rows, *size);
    }
    if std::env::var_os(KEEP_ENV).is_some() {
        let kept = tmp.keep();
        eprintln!(
            "{KEEP_ENV}: kept the filled data directory {}",
            kept.join("apiary").display()
        );
    }
    Ok(())
}

/// Restarts apiary on the filled data directory, waits until the ConfigMap watch cache answers
/// a consistent list, and returns the settled RSS.
async fn restarted_rss(data_dir: &Path, creds: &Kubeconfig) -> anyhow::Result<u64> {
    eprintln!("restarting apiary on the filled store");
    let (apiary, kubeconfig) = start_apiary(data_dir, &[])?;
    let addr = Kubeconfig::read(&kubeconfig)?.addr()?;
    let ep = Endpoint::new(addr, Proto::H1, creds)?;
    wait_ready(&ep).await?;
    let mut conn = ep.connect().await?;
    let path = "/api/v1/namespaces/list/configmaps";
    list_samples(
        &mut conn,
        &ep,
        apiary.pid(),
        path,
        LIST_OBJECTS as usize,
        1,
        Duration::from_secs(60),
    )
    .await?;
    drop(conn);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss = apiary.rss()?;
    apiary.terminate(Duration::from_secs(30))?;
    Ok(rss)
}

fn dir_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let meta = entry?.metadata()?;
        if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

/// The median of sorted samples.
pub fn median(sorted: &[Duration]) -> Duration {
    quantile(sorted, 0.5)
}
