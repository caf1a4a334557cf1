//! The audit case (`APIARY_BENCH_ONLY=audit`, and part of the full run): ConfigMap creates
//! through two `apiary` processes in the same run, one without audit and one with an audit
//! policy recording every request at `Metadata` level into a log file in the temporary
//! directory, interleaved per concurrency level so drifting background load hits both alike.
//! Target: Metadata-level audit costs at most 10% of create throughput (issue 10).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};

use crate::client::{Endpoint, Kubeconfig, Proto};
use crate::load::{Limit, Outcome};
use crate::process::{Process, start_apiary};
use crate::workload::{CONNECTIONS, http_creates, namespace, wait_ready};

/// Audited creates must reach this fraction of creates without audit.
pub const AUDIT_TARGET: f64 = 0.9;

/// The policy of the audited server: every request at Metadata level.
const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n";

/// One concurrency level.
pub struct AuditRow {
    /// Connections.
    pub connections: usize,
    /// Creates without audit.
    pub plain: Outcome,
    /// Creates with the Metadata-level policy.
    pub audited: Outcome,
}

/// Starts one server and makes its `bench` namespace; returns it with its endpoint.
async fn server(data_dir: &Path, args: &[String]) -> anyhow::Result<(Process, Arc<Endpoint>)> {
    let (process, kubeconfig) = start_apiary(data_dir, args)?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let ep = Endpoint::new(creds.addr()?, Proto::H1, &creds)?;
    wait_ready(&ep).await?;
    let mut conn = ep.connect().await?;
    let req = ep.request(Method::POST, "/api/v1/namespaces", namespace("bench"));
    conn.expect(req, StatusCode::CREATED).await?;
    Ok((process, ep))
}

/// Runs the audit case in `tmp`; returns the rows and the size of the audit log written.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<(Vec<AuditRow>, u64)> {
    let policy = tmp.join("audit-policy.yaml");
    std::fs::write(&policy, POLICY)?;
    let log = tmp.join("audit").join("audit.log");
    let (plain, plain_ep) = server(&tmp.join("apiary-plain"), &[]).await?;
    let (audited, audited_ep) = server(
        &tmp.join("apiary-audited"),
        &[
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
        ],
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut rows = Vec::new();
    for c in CONNECTIONS {
        eprintln!("creates with and without audit at {c} connections");
        let without = http_creates(
            plain.pid(),
            &plain_ep,
            "bench",
            &format!("c{c}-"),
            c,
            Limit::time(case),
        )
        .await?;
        let with = http_creates(
            audited.pid(),
            &audited_ep,
            "bench",
            &format!("c{c}-"),
            c,
            Limit::time(case),
        )
        .await?;
        rows.push(AuditRow {
            connections: c,
            plain: without,
            audited: with,
        });
    }
    plain.terminate(Duration::from_secs(30))?;
    audited.terminate(Duration::from_secs(30))?;
    let log_bytes = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    Ok((rows, log_bytes))
}

/// Prints the table of the audit case.
pub fn print(rows: &[AuditRow], log_bytes: u64) {
    println!(
        "\n## Creates/s with a Metadata-level audit policy vs without audit (HTTPS, HTTP/1.1 keep-alive; {log_bytes} bytes of audit log written)\n"
    );
    println!(
        "| connections | without audit creates/s | p50 ms | CPU µs/op | with audit creates/s | p50 ms | CPU µs/op | audited / plain | target |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    for row in rows {
        let ratio = row.audited.rate() / row.plain.rate().max(1e-9);
        let met = if ratio >= AUDIT_TARGET {
            "met"
        } else {
            "MISSED"
        };
        println!(
            "| {} | {:.0} | {} | {:.0} | {:.0} | {} | {:.0} | {ratio:.2}× | ≥ {AUDIT_TARGET}×: {met} |",
            row.connections,
            row.plain.rate(),
            ms(row.plain.quantile(0.5)),
            row.plain.cpu_per_op(),
            row.audited.rate(),
            ms(row.audited.quantile(0.5)),
            row.audited.cpu_per_op(),
        );
    }
}
