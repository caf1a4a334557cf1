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
//!
//! With `APIARY_BENCH_CALLGRIND_SIDE=wardle` it is wardle's instructions that are counted
//! instead: the aggregated wardle and the standalone one (its own RBAC) both run under
//! callgrind, main natively, and the rows are GETs of one flunder by `jane` (whom an
//! authorizer must allow) and by each wardle's `system:masters` admin (allowed before any
//! authorizer is asked), straight to each wardle, and by main's admin and by `jane` through the
//! aggregator. The difference of the `jane` and admin rows of one wardle is what its authorizer
//! costs: the delegated one with a warm cache (answers kept 10 s, so about one review per 10 s
//! of the row is sent) against local RBAC.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::aggregator_setup::{self, FLUNDERS, MainRun, flunder, jane_at_wardle, wait_allowed};
use crate::client::{Conn, Endpoint, Proto};
use crate::process::run_tool;
use crate::rbac_case::user_credentials;

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
    let pid = pid.to_string();
    let args: Vec<&str> = args.iter().copied().chain([pid.as_str()]).collect();
    run_tool("callgrind_control", &args)
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

/// Counts the instructions of process `pid` (under callgrind, writing into `dir`) over
/// `requests` requests `make(n)` sent on `conn` after [`WARMUP`] uncounted ones, each answered
/// `want`; the row's files are moved into `dir/<key>`.
#[allow(clippy::too_many_arguments)]
async fn count(
    conn: &mut Conn,
    pid: u32,
    dir: &Path,
    key: &str,
    label: &'static str,
    requests: u64,
    want: StatusCode,
    make: &dyn Fn(u64) -> http::Request<http_body_util::Full<Bytes>>,
) -> anyhow::Result<CountRow> {
    eprintln!("aggregator callgrind: {label}");
    send(conn, WARMUP, 0, want, make).await?;
    callgrind_control(&["-z"], pid)?;
    callgrind_control(&["-i", "on"], pid)?;
    send(conn, requests, WARMUP, want, make).await?;
    callgrind_control(&["-i", "off"], pid)?;
    callgrind_control(&["-d"], pid)?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let total = collect(dir, key)?;
    Ok(CountRow {
        label,
        requests,
        per_request: total / requests.max(1),
    })
}

/// Which process the count is of (`APIARY_BENCH_CALLGRIND_SIDE`: `main`, the default, or
/// `wardle`).
fn wardle_side() -> anyhow::Result<bool> {
    match std::env::var("APIARY_BENCH_CALLGRIND_SIDE").as_deref() {
        Err(_) | Ok("main") => Ok(false),
        Ok("wardle") => Ok(true),
        Ok(other) => bail!("APIARY_BENCH_CALLGRIND_SIDE={other}: expected main or wardle"),
    }
}

/// Runs the count in `tmp`.
pub async fn run(tmp: &Path) -> anyhow::Result<Vec<CountRow>> {
    let requests: u64 = std::env::var("APIARY_BENCH_CALLGRIND_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let out: PathBuf = std::env::var_os("APIARY_BENCH_CALLGRIND_KEEP")
        .map_or_else(|| tmp.join("callgrind"), PathBuf::from);
    if wardle_side()? {
        return run_wardle(tmp, &out, requests).await;
    }
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
        let key = format!("row{i}");
        let row = count(
            &mut conn,
            pid,
            &out,
            &key,
            label,
            requests,
            *want,
            make.as_ref(),
        );
        counted.push(row.await?);
    }
    drop(conn);
    agg.wardle.terminate(Duration::from_secs(30))?;
    agg.main.terminate(Duration::from_secs(120))?;
    Ok(counted)
}

/// A script running the wardle binary `bin` under callgrind (instrumentation off until the
/// bench turns it on), its files written into `dir`; `exec` keeps the process id, so
/// `callgrind_control` reaches it by the id the bench started.
fn under_callgrind(bin: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let script = dir.join("wardle-under-callgrind.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
             --callgrind-out-file='{}' '{}' \"$@\"\n",
            dir.join("cg.out").display(),
            bin.display()
        ),
    )?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    Ok(script)
}

/// wardle's instructions per GET under delegated and local authorization (see the module).
async fn run_wardle(tmp: &Path, out: &Path, requests: u64) -> anyhow::Result<Vec<CountRow>> {
    let wardle_bin = aggregator_setup::wardle_binary()?;
    let (aggregated_dir, standalone_dir) = (out.join("aggregated"), out.join("standalone"));
    let aggregated_bin = under_callgrind(&wardle_bin, &aggregated_dir)?;
    let standalone_bin = under_callgrind(&wardle_bin, &standalone_dir)?;
    let agg = aggregator_setup::start(tmp, &aggregated_bin, &MainRun::Native).await?;
    let (standalone, local_admin, local_jane) =
        aggregator_setup::start_standalone(tmp, &standalone_bin).await?;
    for ep in [&agg.wardle_admin, &local_admin] {
        let mut conn = ep.connect().await?;
        let req = ep.request(Method::POST, FLUNDERS, flunder("target"));
        conn.expect(req, StatusCode::CREATED).await?;
    }
    let delegated_jane = jane_at_wardle(&agg)?;
    let proxied_jane = Endpoint::new(
        agg.main_creds.addr()?,
        Proto::H1,
        &user_credentials(&agg.main_dir, &agg.main_creds, aggregator_setup::USER)?,
    )?;
    let get = format!("{FLUNDERS}/target");
    for ep in [&delegated_jane, &local_jane, &proxied_jane] {
        wait_allowed(ep, &get).await?;
    }
    let (aggregated, local) = (agg.wardle.pid(), standalone.pid());
    let rows: [(&'static str, &Endpoint, u32, &Path); 6] = [
        (
            "GET by jane straight to the aggregated wardle (delegated authorization, warm cache)",
            &delegated_jane,
            aggregated,
            &aggregated_dir,
        ),
        (
            "GET by the aggregated wardle's admin (system:masters, no authorizer asked)",
            &agg.wardle_admin,
            aggregated,
            &aggregated_dir,
        ),
        (
            "GET by jane at the standalone wardle (local RBAC)",
            &local_jane,
            local,
            &standalone_dir,
        ),
        (
            "GET by the standalone wardle's admin (system:masters, no authorizer asked)",
            &local_admin,
            local,
            &standalone_dir,
        ),
        (
            "GET by main's admin through the aggregator (wardle's share)",
            &agg.main_admin,
            aggregated,
            &aggregated_dir,
        ),
        (
            "GET by jane through the aggregator (wardle's share: delegated authorization)",
            &proxied_jane,
            aggregated,
            &aggregated_dir,
        ),
    ];
    let mut counted = Vec::new();
    for (i, (label, ep, pid, dir)) in rows.into_iter().enumerate() {
        let mut conn = ep.connect().await?;
        let make = gets(ep, get.clone());
        let key = format!("row{i}");
        let row = count(
            &mut conn,
            pid,
            dir,
            &key,
            label,
            requests,
            StatusCode::OK,
            &make,
        );
        counted.push(row.await?);
    }
    standalone.terminate(Duration::from_secs(120))?;
    agg.wardle.terminate(Duration::from_secs(120))?;
    agg.main.terminate(Duration::from_secs(30))?;
    Ok(counted)
}

/// Prints the counts.
pub fn print(rows: &[CountRow]) {
    let side = if wardle_side().unwrap_or(false) {
        "wardle"
    } else {
        "main"
    };
    println!("\n## Instructions of {side} (every thread) per request, callgrind\n");
    println!("| request | requests counted | instructions per request |");
    println!("|---|---:|---:|");
    for row in rows {
        println!("| {} | {} | {} |", row.label, row.requests, row.per_request);
    }
}
