//! The report: machine facts and Markdown tables of the figures, ratios and targets.

use std::time::Duration;

use crate::client::Proto;
use crate::etcd_case::EtcdCreateRow;
use crate::load::{Outcome, quantile};
use crate::raw::Census;
use crate::workload::median;

/// Creates must reach this fraction of raw storage at 64 connections.
const CREATE_TARGET: f64 = 0.8;
/// GETs must reach this fraction of the minimal handler.
const GET_TARGET: f64 = 0.5;
/// A full list of 10k objects from the cache must take at most this long.
const LIST_TARGET: Duration = Duration::from_millis(50);
/// RSS with 100k objects may be at most this multiple of the stored bytes.
const RSS_TARGET: f64 = 3.0;

/// Facts about the machine at one moment.
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// `model name` of `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `/proc/loadavg` (1, 5, 15 minutes).
    pub loadavg: String,
}

impl Machine {
    /// Reads the facts now.
    pub fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let loadavg = std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            cpu_model,
            loadavg,
        }
    }
}

/// One create concurrency level.
pub struct CreateRow {
    /// Connections (and raw storage writers).
    pub connections: usize,
    /// Creates through apiary.
    pub server: Outcome,
    /// Creates straight into the embedded engine.
    pub raw: Outcome,
    /// Creates through the thinnest durable HTTPS server over the same engine.
    pub thinnest: Outcome,
}

/// One GET protocol and concurrency level.
pub struct GetRow {
    /// HTTP version.
    pub proto: Proto,
    /// Connections.
    pub connections: usize,
    /// GETs from apiary.
    pub server: Outcome,
    /// GETs from the minimal axum handler.
    pub baseline: Outcome,
}

/// One list workload.
pub struct ListRow {
    label: &'static str,
    samples: Vec<Duration>,
    targeted: bool,
}

impl ListRow {
    /// A row of sorted latency samples; `targeted` rows are held to the 50 ms target.
    pub fn new(label: &'static str, samples: Vec<Duration>, targeted: bool) -> Self {
        Self {
            label,
            samples,
            targeted,
        }
    }
}

/// The memory figures.
pub struct MemoryRow {
    /// RSS after start, before any object was written.
    pub idle_rss: u64,
    /// RSS after a restart on the filled store, once the watch cache holds every object.
    pub restarted_rss: u64,
    /// RSS with every object stored, after a short settle.
    pub loaded_rss: u64,
    /// Peak RSS over the run.
    pub peak_rss: u64,
    /// The ConfigMaps in the store.
    pub configmaps: Census,
    /// Every key in the store.
    pub everything: Census,
    /// Size of the store's files on disk.
    pub file_bytes: u64,
}

/// Everything measured in one run.
pub struct Report {
    /// The machine before the run.
    pub machine: Machine,
    /// The machine after the run.
    pub machine_after: Machine,
    /// Bytes of one created ConfigMap as apiary returns it (the raw storage value size).
    pub value_size: usize,
    /// Create figures.
    pub creates: Vec<CreateRow>,
    /// GET figures.
    pub gets: Vec<GetRow>,
    /// List figures.
    pub lists: Vec<ListRow>,
    /// Memory figures.
    pub memory: MemoryRow,
    /// Wall time of the whole run.
    pub total: Duration,
    /// Duration of each throughput case.
    pub case: Duration,
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// Prints the report as Markdown.
pub fn print(r: &Report) {
    println!("# apiary server benchmarks\n");
    println!(
        "Machine: {} CPUs, {}; load average before {} / after {}; run took {:.0} s, {} s per throughput case.\n",
        r.machine.cpus,
        r.machine.cpu_model,
        r.machine.loadavg,
        r.machine_after.loadavg,
        r.total.as_secs_f64(),
        r.case.as_secs()
    );

    print_creates(&r.creates, r.value_size);

    println!(
        "\n## GETs/s of one ConfigMap: apiary vs a minimal axum handler (same bytes, same TLS)\n"
    );
    println!(
        "| protocol | connections | apiary GET/s | p50 ms | p99 ms | apiary CPU µs/op | axum GET/s | p50 ms | p99 ms | axum CPU µs/op | ratio | target ≥ {GET_TARGET}× |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in &r.gets {
        let ratio = row.server.rate() / row.baseline.rate().max(1e-9);
        println!(
            "| {} | {} | {:.0} | {} | {} | {:.0} | {:.0} | {} | {} | {:.0} | {ratio:.2}× | {} |",
            row.proto.label(),
            row.connections,
            row.server.rate(),
            ms(row.server.quantile(0.5)),
            ms(row.server.quantile(0.99)),
            row.server.cpu_per_op(),
            row.baseline.rate(),
            ms(row.baseline.quantile(0.5)),
            ms(row.baseline.quantile(0.99)),
            row.baseline.cpu_per_op(),
            verdict(ratio >= GET_TARGET),
        );
    }

    println!("\n## Lists of 10,000 ConfigMaps (one HTTP/1.1 connection, JSON)\n");
    println!("| request | samples | median ms | p99 ms | target ≤ 50 ms |");
    println!("|---|---:|---:|---:|---|");
    for row in &r.lists {
        let med = median(&row.samples);
        let target = if row.targeted {
            verdict(med <= LIST_TARGET).to_string()
        } else {
            "-".into()
        };
        println!(
            "| {} | {} | {} | {} | {target} |",
            row.label,
            row.samples.len(),
            ms(med),
            ms(quantile(&row.samples, 0.99)),
        );
    }

    let m = &r.memory;
    let ratio = m.loaded_rss as f64 / m.everything.value_bytes.max(1) as f64;
    println!("\n## Server memory\n");
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| RSS idle (after start, empty store) | {} |",
        mib(m.idle_rss)
    );
    println!(
        "| ConfigMaps stored | {} ({} of values, {} of keys) |",
        m.configmaps.keys,
        mib(m.configmaps.value_bytes),
        mib(m.configmaps.key_bytes)
    );
    println!(
        "| all keys stored | {} ({} of values) |",
        m.everything.keys,
        mib(m.everything.value_bytes)
    );
    println!("| store files on disk | {} |", mib(m.file_bytes));
    println!("| RSS with them stored (VmRSS) | {} |", mib(m.loaded_rss));
    println!("| peak RSS over the run (VmHWM) | {} |", mib(m.peak_rss));
    println!(
        "| RSS after a restart on the filled store, cache loaded | {} ({:.2}× the stored values) |",
        mib(m.restarted_rss),
        m.restarted_rss as f64 / m.everything.value_bytes.max(1) as f64
    );
    println!(
        "| RSS / stored value bytes | {ratio:.2}× (target ≤ {RSS_TARGET}×: {}) |",
        verdict(ratio <= RSS_TARGET)
    );
}

/// Prints the table of create rates (`value_size`: bytes of one stored ConfigMap).
pub fn print_creates(creates: &[CreateRow], value_size: usize) {
    println!(
        "## Creates/s: ConfigMaps through apiary (HTTPS, HTTP/1.1 keep-alive) vs raw embedded storage ({value_size}-byte values)\n"
    );
    println!(
        "| connections | apiary creates/s | p50 ms | p99 ms | apiary CPU µs/op | load generator CPU µs/op | thinnest durable server creates/s | its CPU µs/op | raw creates/s | raw p50 ms | raw p99 ms | raw CPU µs/op | apiary / raw | thinnest / raw | apiary / thinnest | target |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in creates {
        let ratio = row.server.rate() / row.raw.rate().max(1e-9);
        let thin_ratio = row.thinnest.rate() / row.raw.rate().max(1e-9);
        let vs_thin = row.server.rate() / row.thinnest.rate().max(1e-9);
        let target = if row.connections == 64 {
            format!("≥ {CREATE_TARGET}×: {}", verdict(ratio >= CREATE_TARGET))
        } else {
            "-".into()
        };
        println!(
            "| {} | {:.0} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {:.0} | {ratio:.2}× | {thin_ratio:.2}× | {vs_thin:.2}× | {target} |",
            row.connections,
            row.server.rate(),
            ms(row.server.quantile(0.5)),
            ms(row.server.quantile(0.99)),
            row.server.cpu_per_op(),
            row.server.client_cpu_per_op(),
            row.thinnest.rate(),
            row.thinnest.cpu_per_op(),
            row.raw.rate(),
            ms(row.raw.quantile(0.5)),
            ms(row.raw.quantile(0.99)),
            row.raw.cpu_per_op(),
        );
    }
}

/// Prints the table of create rates over etcd (`value_size`: bytes of one stored ConfigMap).
pub fn print_etcd_creates(rows: &[EtcdCreateRow], value_size: usize) {
    println!(
        "\n## Creates/s over etcd: apiary `--etcd-servers` vs apiary's etcd backend driven directly ({value_size}-byte values)\n"
    );
    println!(
        "| connections | apiary creates/s | p50 ms | p99 ms | apiary CPU µs/op | etcd CPU µs/op | load generator CPU µs/op | raw creates/s | raw p50 ms | raw p99 ms | raw CPU µs/op | etcd CPU µs/op | apiary / raw |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let per_op = |cpu: Duration, ops: u64| cpu.as_secs_f64() * 1e6 / ops.max(1) as f64;
        let ratio = row.server.rate() / row.raw.rate().max(1e-9);
        println!(
            "| {} | {:.0} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {:.0} | {:.0} | {ratio:.2}× |",
            row.connections,
            row.server.rate(),
            ms(row.server.quantile(0.5)),
            ms(row.server.quantile(0.99)),
            row.server.cpu_per_op(),
            per_op(row.server_etcd_cpu, row.server.ops),
            row.server.client_cpu_per_op(),
            row.raw.rate(),
            ms(row.raw.quantile(0.5)),
            ms(row.raw.quantile(0.99)),
            row.raw.cpu_per_op(),
            per_op(row.raw_etcd_cpu, row.raw.ops),
        );
    }
}
