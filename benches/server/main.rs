//! Server benchmarks of issue 4, all in one run on one machine, over HTTPS with keep-alive and
//! the admin client certificate, each figure beside a baseline measured in the same run:
//!
//! 1. ConfigMap creates/s through the real `apiary` binary (this build's profile, embedded
//!    store in a temporary `--data-dir`) at 1, 16 and 64 connections, against durable creates
//!    straight into the embedded engine at the same concurrency.
//! 2. GETs/s of one ConfigMap against a minimal axum handler returning the same bytes over the
//!    same TLS setup, over HTTP/1.1 and HTTP/2, at 1, 16 and 64 connections.
//! 3. Lists of 10,000 ConfigMaps: full (`resourceVersion` unset and `0`) and `limit=500` pages.
//! 4. Server RSS idle and with 100,000 ConfigMaps stored, against the stored value bytes.
//! 5. Watch fan-out: 1,000 watchers over HTTP/1.1 and HTTP/2 while ConfigMaps are created at
//!    1,000/s: deliveries/s, server CPU per delivery, delivery lag (`watch_case`).
//! 6. Creates with a Metadata-level audit policy against creates without audit, two servers in
//!    the same run (`audit_case`; issue 10).
//! 7. API aggregation (issue 26): the wardle example behind the aggregator against wardle
//!    straight, only with `APIARY_BENCH_ONLY=aggregator` (`aggregator_case`; main under
//!    callgrind with `APIARY_BENCH_ONLY=aggregator-callgrind`, `aggregator_callgrind`).
//! 8. With `APIARY_BENCH_ETCD=1`: consistent GETs over etcd against the embedded store
//!    (`reads_case`) and creates over etcd (`etcd_case`).
//!
//! Run: `cargo bench -p apiary --bench server -- [seconds per throughput case]` (default 4).
//! The report is printed as Markdown tables. With `APIARY_BENCH_KEEP=1` the filled data directory
//! (100k ConfigMaps) is kept and its path printed, for profiling a server over it. With
//! `APIARY_BENCH_ONLY=creates` only the create case runs (`core`: creates, GETs and lists,
//! the A/B figures of two builds; `reads`: only consistent GETs over
//! etcd and embedded; `watch`: only the watch fan-out; `audit`: only the audit case; `rbac`:
//! GETs and creates by a user authorized through one RoleBinding among 1,000 against
//! `system:masters`; `tokens`: token authentication against x509; `webhooks`: creates with one
//! matching validating webhook and with 100 unmatched configurations against none;
//! `aggregator`: the API aggregation case; `aggregator-callgrind`: its instruction counts);
//! `APIARY_BENCH_BIN=<path>` benchmarks another build of the `apiary` binary
//! (for A/B comparisons of two trees), and
//! `APIARY_BENCH_AB_BIN=<path>` runs another build beside this one in the reads case;
//! `APIARY_BENCH_ETCD=1` adds the etcd cases (a fresh etcd, etcd on PATH).

mod aggregator_callgrind;
mod aggregator_case;
mod aggregator_setup;
mod audit_case;
mod baseline;
mod client;
/// Builds the crates outside the workspace (the wardle example) as the tests build them.
#[path = "../../tests/common/crates.rs"]
mod crates;
mod etcd_case;
mod load;
mod process;
mod raw;
mod rbac_case;
mod reads_case;
mod report;
mod token_case;
mod watch_case;
mod webhook_case;
mod workload;

use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some(baseline::MODE) {
        baseline::serve(&args[1..])
    } else {
        let seconds = args.iter().find_map(|a| a.parse::<u64>().ok()).unwrap_or(4);
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(workload::run(Duration::from_secs(seconds))))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
