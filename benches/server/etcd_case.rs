//! The create case over etcd (`APIARY_BENCH_ETCD=1`): apiary started with `--etcd-servers`
//! against a fresh etcd, beside apiary's etcd backend driven directly, at the same concurrency,
//! interleaved per level. etcd runs on the same 2 cores as everything else; its CPU per create
//! is reported for both sides.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use storage::etcd::process::EtcdProcess;

use crate::client::{Endpoint, Kubeconfig, Proto};
use crate::load::{Limit, Outcome};
use crate::process::{cpu_time, start_apiary};
use crate::raw;
use crate::workload::{CONNECTIONS, configmap, http_creates, namespace, wait_ready};

/// One concurrency level of the etcd case.
pub struct EtcdCreateRow {
    /// Connections (and raw writers).
    pub connections: usize,
    /// Creates through apiary over etcd.
    pub server: Outcome,
    /// etcd's CPU during the apiary run.
    pub server_etcd_cpu: Duration,
    /// Creates straight into etcd through apiary's backend.
    pub raw: Outcome,
    /// etcd's CPU during the raw run.
    pub raw_etcd_cpu: Duration,
}

/// Whether the etcd case was asked for.
pub fn wanted() -> bool {
    std::env::var_os("APIARY_BENCH_ETCD").is_some_and(|v| v == "1")
}

/// Runs the etcd create case in `tmp`; returns the rows and the stored value size.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<(Vec<EtcdCreateRow>, usize)> {
    let etcd = EtcdProcess::start()?;
    let endpoint = etcd.endpoint();
    let etcd_pid = etcd
        .pid()
        .ok_or_else(|| anyhow::anyhow!("etcd has no pid"))?;
    let data_dir = tmp.join("apiary-etcd");
    let (apiary, kubeconfig) = start_apiary(
        &data_dir,
        &[
            format!("--etcd-servers={endpoint}"),
            "--etcd-prefix=/apiary".to_string(),
        ],
    )?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let ep = Arc::new(Endpoint::new(creds.addr()?, Proto::H1, &creds)?);
    wait_ready(&ep).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut conn = ep.connect().await?;
    let req = ep.request(Method::POST, "/api/v1/namespaces", namespace("bench"));
    conn.expect(req, StatusCode::CREATED).await?;
    let probe = ep.request(
        Method::POST,
        "/api/v1/namespaces/bench/configmaps",
        configmap("bench", "probe"),
    );
    let value_size = conn.expect(probe, StatusCode::CREATED).await?.len();
    drop(conn);
    let mut rows = Vec::new();
    for c in CONNECTIONS {
        eprintln!("creates over etcd at {c} connections");
        let before = cpu_time(etcd_pid)?;
        let server = http_creates(
            apiary.pid(),
            &ep,
            "bench",
            &format!("c{c}-"),
            c,
            Limit::time(case),
        )
        .await?;
        let server_etcd_cpu = cpu_time(etcd_pid)?.saturating_sub(before);
        let before = cpu_time(etcd_pid)?;
        let raw = raw::etcd_creates(
            &endpoint,
            &format!("/raw-{c}"),
            c,
            value_size,
            Limit::time(case),
        )
        .await?;
        let raw_etcd_cpu = cpu_time(etcd_pid)?.saturating_sub(before);
        rows.push(EtcdCreateRow {
            connections: c,
            server,
            server_etcd_cpu,
            raw,
            raw_etcd_cpu,
        });
    }
    apiary.terminate(Duration::from_secs(30))?;
    drop(etcd);
    Ok((rows, value_size))
}
