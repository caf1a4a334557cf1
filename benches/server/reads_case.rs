//! Consistent reads over etcd (`APIARY_BENCH_ONLY=reads`, or with `APIARY_BENCH_ETCD=1`): GETs
//! of one ConfigMap with no resourceVersion — a consistent read, which must observe every write
//! acknowledged before it — from apiary over a fresh etcd and from apiary on its embedded store,
//! interleaved per protocol and connection count in one run. With `APIARY_BENCH_AB_BIN=<path>`
//! another build of apiary (for example the tree before a change) is run over the same etcd
//! (its own key prefix) and on its own embedded store beside them, for same-run before/after
//! ratios. etcd runs on the same
//! cores as everything else; its CPU per GET is reported.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use storage::etcd::process::EtcdProcess;

use crate::client::{Endpoint, Kubeconfig, Proto};
use crate::load::{Limit, Outcome};
use crate::process::{Process, apiary_bin, cpu_time, start_apiary_bin};
use crate::workload::{CONNECTIONS, configmap, http_gets, namespace, wait_ready};

/// The environment variable naming the other build of the A/B comparison.
const AB_ENV: &str = "APIARY_BENCH_AB_BIN";
/// The object every GET reads.
const GET_PATH: &str = "/api/v1/namespaces/get/configmaps/target";

/// One GET measured on one server.
pub struct Measured {
    /// The GETs.
    pub outcome: Outcome,
    /// etcd's CPU during the run (zero on the embedded store).
    pub etcd_cpu: Duration,
}

impl Measured {
    /// etcd CPU microseconds per GET.
    pub fn etcd_cpu_per_op(&self) -> f64 {
        self.etcd_cpu.as_secs_f64() * 1e6 / self.outcome.ops.max(1) as f64
    }
}

/// One protocol and connection count.
pub struct ReadRow {
    /// HTTP version.
    pub proto: Proto,
    /// Connections.
    pub connections: usize,
    /// This build over etcd.
    pub etcd: Measured,
    /// This build on the embedded store.
    pub embedded: Measured,
    /// The other build over etcd, when asked for.
    pub other: Option<Measured>,
    /// The other build on the embedded store, when asked for.
    pub other_embedded: Option<Measured>,
}

/// What the run compared.
pub struct Reads {
    /// The rows.
    pub rows: Vec<ReadRow>,
    /// The other build, when there was one.
    pub other_bin: Option<PathBuf>,
    /// Bytes of the GET answer.
    pub body_size: usize,
}

/// Whether the reads case runs in a full run.
pub fn wanted() -> bool {
    crate::etcd_case::wanted()
}

/// A started apiary with its endpoints and the GET answer it gives.
struct Server {
    process: Process,
    h1: Arc<Endpoint>,
    h2: Arc<Endpoint>,
    body: Bytes,
}

async fn start(bin: &Path, data_dir: &Path, args: &[String]) -> anyhow::Result<Server> {
    let (process, kubeconfig) = start_apiary_bin(bin, data_dir, args)?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let h1 = Endpoint::new(creds.addr()?, Proto::H1, &creds)?;
    let h2 = Endpoint::new(creds.addr()?, Proto::H2, &creds)?;
    wait_ready(&h1).await?;
    let mut conn = h1.connect().await?;
    let req = h1.request(Method::POST, "/api/v1/namespaces", namespace("get"));
    conn.expect(req, StatusCode::CREATED).await?;
    let req = h1.request(
        Method::POST,
        "/api/v1/namespaces/get/configmaps",
        configmap("get", "target"),
    );
    conn.expect(req, StatusCode::CREATED).await?;
    let body = conn
        .expect(
            h1.request(Method::GET, GET_PATH, Bytes::new()),
            StatusCode::OK,
        )
        .await?;
    Ok(Server {
        process,
        h1,
        h2,
        body,
    })
}

async fn measure(
    server: &Server,
    proto: Proto,
    connections: usize,
    case: Duration,
    etcd_pid: Option<u32>,
) -> anyhow::Result<Measured> {
    let ep = if proto == Proto::H1 {
        &server.h1
    } else {
        &server.h2
    };
    let before = etcd_pid.map(cpu_time).transpose()?;
    let outcome = http_gets(
        server.process.pid(),
        ep,
        GET_PATH,
        &server.body,
        connections,
        Limit::time(case),
    )
    .await?;
    let etcd_cpu = match (etcd_pid, before) {
        (Some(pid), Some(before)) => cpu_time(pid)?.saturating_sub(before),
        _ => Duration::ZERO,
    };
    Ok(Measured { outcome, etcd_cpu })
}

/// Runs the reads case in `tmp`.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<Reads> {
    let etcd = EtcdProcess::start()?;
    let endpoint = etcd.endpoint();
    let etcd_pid = etcd
        .pid()
        .ok_or_else(|| anyhow::anyhow!("etcd has no pid"))?;
    let this = apiary_bin();
    let over_etcd = |prefix: &str| {
        vec![
            format!("--etcd-servers={endpoint}"),
            format!("--etcd-prefix={prefix}"),
        ]
    };
    let etcd_server = start(&this, &tmp.join("reads-etcd"), &over_etcd("/apiary")).await?;
    let embedded = start(&this, &tmp.join("reads-embedded"), &[]).await?;
    let other_bin = std::env::var_os(AB_ENV).map(PathBuf::from);
    let other = match &other_bin {
        Some(bin) => Some(start(bin, &tmp.join("reads-other"), &over_etcd("/apiary-ab")).await?),
        None => None,
    };
    let other_embedded = match &other_bin {
        Some(bin) => Some(start(bin, &tmp.join("reads-other-embedded"), &[]).await?),
        None => None,
    };
    if embedded.body.len() != etcd_server.body.len() {
        anyhow::bail!(
            "the embedded store answers {} bytes, etcd {}",
            embedded.body.len(),
            etcd_server.body.len()
        );
    }
    // Let the watch caches settle (initial lists, first progress notifications).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut rows = Vec::new();
    for proto in [Proto::H1, Proto::H2] {
        for connections in CONNECTIONS {
            eprintln!(
                "consistent GETs at {connections} connections over {}",
                proto.label()
            );
            let etcd_row = measure(&etcd_server, proto, connections, case, Some(etcd_pid)).await?;
            let embedded_row = measure(&embedded, proto, connections, case, None).await?;
            let other_row = match &other {
                Some(server) => {
                    Some(measure(server, proto, connections, case, Some(etcd_pid)).await?)
                }
                None => None,
            };
            let other_embedded_row = match &other_embedded {
                Some(server) => Some(measure(server, proto, connections, case, None).await?),
                None => None,
            };
            rows.push(ReadRow {
                proto,
                connections,
                etcd: etcd_row,
                embedded: embedded_row,
                other: other_row,
                other_embedded: other_embedded_row,
            });
        }
    }
    let body_size = etcd_server.body.len();
    let servers = [Some(etcd_server), Some(embedded), other, other_embedded];
    for server in servers.into_iter().flatten() {
        server.process.terminate(Duration::from_secs(30))?;
    }
    drop(etcd);
    Ok(Reads {
        rows,
        other_bin,
        body_size,
    })
}
