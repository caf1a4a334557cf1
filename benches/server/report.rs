//! The report: machine facts and Markdown tables of the figures, ratios and targets.

use std::time::Duration;

use crate::client::Proto;
use crate::etcd_case::EtcdCreateRow;
use crate::load::{Outcome, quantile};
use crate::raw::Census;
use crate::reads_case::Reads;
use crate::watch_case::{LAG_TARGET, PER_CORE_TARGET, Watches};
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
    server_cpu: Duration,
    targeted: bool,
}

impl ListRow {
    /// A row of sorted latency samples and the server's CPU time per request; `targeted` rows
    /// are held to the 50 ms target.
    pub fn new(
        label: &'static str,
        samples: Vec<Duration>,
        server_cpu: Duration,
        targeted: bool,
    ) -> Self {
        Self {
            label,
            samples,
            server_cpu,
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
    /// Memory figures (none in a `core` run).
    pub memory: Option<MemoryRow>,
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

/// Prints the machine line: CPUs, load before and after, the run's duration.
pub fn print_machine(before: &Machine, after: &Machine, total: Duration, case: Duration) {
    println!(
        "Machine: {} CPUs, {}; load average before {} / after {}; run took {:.0} s, {} s per throughput case.\n",
        before.cpus,
        before.cpu_model,
        before.loadavg,
        after.loadavg,
        total.as_secs_f64(),
        case.as_secs()
    );
}

/// Prints the report as Markdown.
pub fn print(r: &Report) {
    println!("# apiary server benchmarks\n");
    print_machine(&r.machine, &r.machine_after, r.total, r.case);

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
    println!("| request | samples | median ms | p99 ms | apiary CPU ms/request | target ≤ 50 ms |");
    println!("|---|---:|---:|---:|---:|---|");
    for row in &r.lists {
        let med = median(&row.samples);
        let target = if row.targeted {
            verdict(med <= LIST_TARGET).to_string()
        } else {
            "-".into()
        };
        println!(
            "| {} | {} | {} | {} | {} | {target} |",
            row.label,
            row.samples.len(),
            ms(med),
            ms(quantile(&row.samples, 0.99)),
            ms(row.server_cpu),
        );
    }

    let Some(m) = &r.memory else {
        return;
    };
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

/// Prints the table of consistent GETs over etcd and on the embedded store.
pub fn print_reads(reads: &Reads) {
    println!(
        "\n## Consistent GETs/s (no resourceVersion) of one ConfigMap: apiary over etcd vs on its embedded store ({} bytes)\n",
        reads.body_size
    );
    let other = reads
        .other_bin
        .as_ref()
        .map(|bin| bin.display().to_string());
    if let Some(bin) = &other {
        println!("The other build over etcd: `{bin}`.\n");
    }
    let mut header = "| protocol | connections | over etcd GET/s | p50 ms | p99 ms | apiary CPU µs/op | etcd CPU µs/op | embedded GET/s | p50 ms | p99 ms | apiary CPU µs/op | etcd / embedded |".to_string();
    let mut rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|".to_string();
    if other.is_some() {
        header.push_str(" other build over etcd GET/s | p50 ms | p99 ms | apiary CPU µs/op | etcd CPU µs/op | this / other | other build embedded GET/s | apiary CPU µs/op | this / other |");
        rule.push_str("---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    }
    println!("{header}\n{rule}");
    for row in &reads.rows {
        let (e, m) = (&row.etcd.outcome, &row.embedded.outcome);
        let mut line = format!(
            "| {} | {} | {:.0} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {} | {:.0} | {:.2}× |",
            row.proto.label(),
            row.connections,
            e.rate(),
            ms(e.quantile(0.5)),
            ms(e.quantile(0.99)),
            e.cpu_per_op(),
            row.etcd.etcd_cpu_per_op(),
            m.rate(),
            ms(m.quantile(0.5)),
            ms(m.quantile(0.99)),
            m.cpu_per_op(),
            e.rate() / m.rate().max(1e-9),
        );
        if let Some(o) = &row.other {
            line.push_str(&format!(
                " {:.0} | {} | {} | {:.0} | {:.0} | {:.2}× |",
                o.outcome.rate(),
                ms(o.outcome.quantile(0.5)),
                ms(o.outcome.quantile(0.99)),
                o.outcome.cpu_per_op(),
                o.etcd_cpu_per_op(),
                e.rate() / o.outcome.rate().max(1e-9),
            ));
        }
        if let Some(o) = &row.other_embedded {
            line.push_str(&format!(
                " {:.0} | {:.0} | {:.2}× |",
                o.outcome.rate(),
                o.outcome.cpu_per_op(),
                m.rate() / o.outcome.rate().max(1e-9),
            ));
        }
        println!("{line}");
    }
}

/// Prints the watch fan-out table.
pub fn print_watches(w: &Watches) {
    println!(
        "\n## Watch fan-out: watchers of one namespace's ConfigMaps while ConfigMaps are created at a fixed rate (JSON, embedded store)\n"
    );
    println!(
        "Server CPU per create with no watcher: {:.0} µs (subtracted in the net column).\n",
        w.create_cpu_us
    );
    println!(
        "| watchers | layout | creates/s asked | achieved | deliveries/s | server cores busy | server CPU µs/delivery | net of creates | deliveries/s per server core | target ≥ {:.0}k | load generator cores | lag p50 ms | p99 ms | max ms | target p99 ≤ {} ms | arrived before the create's response | watches closed by the server |",
        PER_CORE_TARGET / 1000.0,
        LAG_TARGET.as_millis()
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|");
    for row in &w.rows {
        if row.closed == row.watchers {
            println!(
                "| {} | {} | {} | {:.0} | - | {:.2} | - | - | - | MISSED | {:.2} | - | - | - | MISSED | - | {} |",
                row.watchers,
                row.layout.label(),
                row.rate,
                row.creates_per_s,
                row.server_cores,
                row.client_cores,
                row.closed,
            );
            continue;
        }
        let per_core = row.deliveries_per_s / row.server_cores.max(1e-9);
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.0} | {} | {:.2} | {} | {} | {} | {} | {} | {} |",
            row.watchers,
            row.layout.label(),
            row.rate,
            row.creates_per_s,
            row.deliveries_per_s,
            row.server_cores,
            row.cpu_per_delivery_us,
            row.net_cpu_per_delivery_us,
            per_core,
            verdict(per_core >= PER_CORE_TARGET),
            row.client_cores,
            ms(row.lag_p50),
            ms(row.lag_p99),
            ms(row.lag_max),
            verdict(row.lag_p99 <= LAG_TARGET),
            row.early,
            row.closed,
        );
    }
    for row in &w.rows {
        if let Some(reason) = &row.closed_reason {
            println!(
                "\n{} watches of the {} row were closed: {reason}",
                row.closed,
                row.layout.label()
            );
        }
    }
}

/// The RBAC case: the same GETs and creates by `system:masters` and by a user authorized
/// through one RoleBinding among 1,000.
pub fn print_rbac(rows: &[crate::rbac_case::RbacRow]) {
    println!(
        "\n## RBAC-authorized requests (one RoleBinding among 1,000) vs system:masters, HTTP/1.1\n"
    );
    println!(
        "| request | connections | masters/s | p99 ms | RBAC user/s | p99 ms | RBAC / masters |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        for (what, m, r) in [
            ("GET", &row.masters_gets, &row.rbac_gets),
            ("create", &row.masters_creates, &row.rbac_creates),
        ] {
            println!(
                "| {what} | {} | {:.0} | {} | {:.0} | {} | {:.2}× |",
                row.connections,
                m.rate(),
                ms(m.quantile(0.99)),
                r.rate(),
                ms(r.quantile(0.99)),
                r.rate() / m.rate().max(1e-9),
            );
        }
    }
}
