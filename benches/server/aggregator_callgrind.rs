//! Instructions the aggregator spends per proxied request (`APIARY_BENCH_ONLY=aggregator-callgrind`):
//! main's `apiary` runs under callgrind with instrumentation off (`--instr-atstart=no
//! --separate-threads=yes`, as `tools/callgrind-requests` runs it), wardle natively behind it
//! (`aggregator_setup`). For each row, 100 warm-up requests and then
//! `APIARY_BENCH_CALLGRIND_REQUESTS` (default 1,000) counted ones go over one keep-alive
//! HTTP/1.1 connection with main's admin certificate; the instructions of every thread of main
//! are summed (`callgrind_control -z`, `-i on`, the requests, `-i off`, `-d`) and divided by
//! the requests. Rows: a GET of one flunder and a flunder create through the aggregator, and
//! for scale a GET and a create of a ConfigMap main serves itself. With
//! `APIARY_BENCH_CALLGRIND_KEEP=<dir>` the callgrind files are kept in `<dir>/<row>/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::aggregator_setup::{self, FLUNDERS, MainRun, flunder};
use crate::client::{Conn, Endpoint};

/// Makes the `n`th request of a row.
type Make<'a> = Box<dyn Fn(u64) -> http::Request<http_body_util::Full<Bytes>> + 'a>;

/// A row of GETs of `path` by `ep`.
fn gets(ep: &Endpoint, path: String) -> Make<'_> {
    Box::new(move |_| ep.request(Method::GET, &path, Bytes::new()))
}
use crate::workload::configmap;

/// Warm-up requests before each counted row.
const WARMUP: u64 = 100;

/// One counted row.
pub struct CountRow {
    /// What was sent.
    pub label: &'static str,
    /// Requests counted.
    pub requests: u64,
    /// Instructions of every thread of main per request.
    pub per_request: u64,
}

fn callgrind_control(args: &[&str], pid: u32) -> anyhow::Result<()> {
    let status = Command::new("callgrind_control")
        .args(args)
        .arg(pid.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .context("running callgrind_control")?;
    if !status.success() {
        bail!("callgrind_control {args:?} {pid} failed");
    }
    Ok(())
}

/// The `totals:` of every callgrind dump file (`cg.out.*`) in `dir`, moved into `dir/<label>`.
fn collect(dir: &Path, label: &str) -> anyhow::Result<u64> {
    let into = dir.join(label);
    std::fs::create_dir_all(&into)?;
    let mut total = 0u64;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !name.starts_with("cg.out.") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        if let Some(t) = text
            .lines()
            .find_map(|l| l.strip_prefix("totals: "))
            .and_then(|t| t.split_whitespace().next())
            .and_then(|t| t.parse::<u64>().ok())
        {
            total += t;
        }
        std::fs::rename(&path, into.join(name))?;
    }
    Ok(total)
}

/// Sends `count` requests `make(n)` on `conn`, each answered `want`.
async fn send(
    conn: &mut Conn,
    count: u64,
    first: u64,
    want: StatusCode,
    make: &dyn Fn(u64) -> http::Request<http_body_util::Full<Bytes>>,
) -> anyhow::Result<()> {
    for n in first..first + count {
        conn.expect(make(n), want).await?;
    }
    Ok(())
}

/// Runs the count in `tmp`.
pub async fn run(tmp: &Path) -> anyhow::Result<Vec<CountRow>> {
    let requests: u64 = std::env::var("APIARY_BENCH_CALLGRIND_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let out: PathBuf = std::env::var_os("APIARY_BENCH_CALLGRIND_KEEP")
        .map_or_else(|| tmp.join("callgrind"), PathBuf::from);
    let wardle_bin = aggregator_setup::wardle_binary()?;
    let agg = aggregator_setup::start(tmp, &wardle_bin, &MainRun::Callgrind(out.clone())).await?;
    let (main, wardle) = (&agg.main_admin, &agg.wardle_admin);
    let mut conn = wardle.connect().await?;
    conn.expect(
        wardle.request(Method::POST, FLUNDERS, flunder("target")),
        StatusCode::CREATED,
    )
    .await?;
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let mut conn = main.connect().await?;
    conn.expect(
        main.request(Method::POST, configmaps, configmap("default", "target")),
        StatusCode::CREATED,
    )
    .await?;

    let flunder_get = format!("{FLUNDERS}/target");
    let configmap_get = format!("{configmaps}/target");
    let rows: Vec<(&'static str, StatusCode, Make<'_>)> = vec![
        (
            "GET of a flunder through the aggregator",
            StatusCode::OK,
            gets(main, flunder_get),
        ),
        (
            "flunder create through the aggregator",
            StatusCode::CREATED,
            Box::new(|n| main.request(Method::POST, FLUNDERS, flunder(&format!("cg-{n}")))),
        ),
        (
            "GET of a ConfigMap main serves",
            StatusCode::OK,
            gets(main, configmap_get),
        ),
        (
            "ConfigMap create main serves",
            StatusCode::CREATED,
            Box::new(|n| {
                main.request(
                    Method::POST,
                    configmaps,
                    configmap("default", &format!("cg-{n}")),
                )
            }),
        ),
    ];
    let pid = agg.main.pid();
    let mut counted = Vec::new();
    for (i, (label, want, make)) in rows.iter().enumerate() {
        eprintln!("aggregator callgrind: {label}");
        send(&mut conn, WARMUP, 0, *want, make.as_ref()).await?;
        callgrind_control(&["-z"], pid)?;
        callgrind_control(&["-i", "on"], pid)?;
        send(&mut conn, requests, WARMUP, *want, make.as_ref()).await?;
        callgrind_control(&["-i", "off"], pid)?;
        callgrind_control(&["-d"], pid)?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let total = collect(&out, &format!("row{i}"))?;
        counted.push(CountRow {
            label,
            requests,
            per_request: total / requests.max(1),
        });
    }
    drop(conn);
    agg.wardle.terminate(Duration::from_secs(30))?;
    agg.main.terminate(Duration::from_secs(120))?;
    Ok(counted)
}

/// Prints the counts.
pub fn print(rows: &[CountRow]) {
    println!("\n## Instructions of main (every thread) per request, callgrind\n");
    println!("| request | requests counted | instructions per request |");
    println!("|---|---:|---:|");
    for row in rows {
        println!("| {} | {} | {} |", row.label, row.requests, row.per_request);
    }
}
