//! Child processes of the bench: the real `apiary` binary and the minimal baseline server (this
//! bench binary re-executed in its serving mode). Both are stopped when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

/// A child process that is killed if it is still running when dropped.
pub struct Process {
    child: Child,
    /// Closing the child's stdin tells the baseline server to exit.
    _stdin: Option<ChildStdin>,
    /// The first line the child printed.
    pub first_line: String,
}

impl Process {
    /// Starts `cmd` with piped stdin/stdout and waits (up to `timeout`) for its first line.
    pub fn spawn(mut cmd: Command, timeout: Duration) -> anyhow::Result<Self> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().with_context(|| format!("starting {cmd:?}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut process = Self {
            child,
            _stdin: stdin,
            first_line: String::new(),
        };
        match rx.recv_timeout(timeout) {
            Ok(line) => process.first_line = line,
            Err(e) => bail!("{cmd:?} printed nothing within {timeout:?}: {e}"),
        }
        Ok(process)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The resident set size in bytes (`VmRSS` of `/proc/<pid>/status`).
    pub fn rss(&self) -> anyhow::Result<u64> {
        status_kib(self.pid(), "VmRSS").map(|kib| kib * 1024)
    }

    /// The peak resident set size in bytes (`VmHWM`).
    pub fn peak_rss(&self) -> anyhow::Result<u64> {
        status_kib(self.pid(), "VmHWM").map(|kib| kib * 1024)
    }

    /// Sends SIGTERM and waits up to `timeout` for the exit.
    pub fn terminate(mut self, timeout: Duration) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()?;
        if !status.success() {
            bail!("kill -TERM {} failed", self.pid());
        }
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("process {} did not exit within {timeout:?}", self.pid())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// CPU time (user + system) a process has used so far, from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow!("malformed /proc/{pid}/stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(i)
            .ok_or_else(|| anyhow!("short /proc/{pid}/stat"))?
            .parse()?)
    };
    // `rest` starts at field 3 (state), so field N is at index N - 3.
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 1000 / clock_ticks()))
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 when that cannot be asked).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100)
    })
}

fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow!("no {field} in /proc/{pid}/status"))
}

/// Starts the `apiary` binary of this build on a free loopback port with the embedded store in
/// `data_dir`. Returns the process and the path of the admin kubeconfig it wrote.
pub fn start_apiary(data_dir: &Path, extra_args: &[String]) -> anyhow::Result<(Process, PathBuf)> {
    start_apiary_bin(&apiary_bin(), data_dir, extra_args)
}

/// The `apiary` binary the bench runs: this build's, or `APIARY_BENCH_BIN` (another build, for
/// an A/B comparison of two trees).
pub fn apiary_bin() -> PathBuf {
    std::env::var_os("APIARY_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_apiary")),
        PathBuf::from,
    )
}

/// Like [`start_apiary`] with the binary `bin`.
pub fn start_apiary_bin(
    bin: &Path,
    data_dir: &Path,
    extra_args: &[String],
) -> anyhow::Result<(Process, PathBuf)> {
    let mut cmd = Command::new(bin);
    cmd.args(server_args(data_dir, extra_args))
        .env("RUST_LOG", "warn");
    let process = Process::spawn(cmd, Duration::from_secs(60))?;
    Ok((process, data_dir.join("admin.kubeconfig")))
}

/// The arguments the bench starts a server with: the data directory `data_dir`, a free port, no
/// shutdown delay, then `extra_args`.
pub fn server_args(data_dir: &Path, extra_args: &[String]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["--data-dir".into(), data_dir.into()];
    args.extend([
        "--secure-port=0".into(),
        "--shutdown-delay-duration=0s".into(),
    ]);
    args.extend(extra_args.iter().map(Into::into));
    args
}

/// Starts the baseline server (this executable in `baseline-serve` mode) with the apiary TLS
/// material under `pki` and the body to serve; with `store`, it also serves durable creates into
/// a fresh embedded store there. Returns the process and its port.
pub fn start_baseline(
    pki: &Path,
    body: &Path,
    store: Option<&Path>,
) -> anyhow::Result<(Process, u16)> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg(crate::baseline::MODE)
        .arg(pki.join("apiserver.crt"))
        .arg(pki.join("apiserver.key"))
        .arg(pki.join("ca.crt"))
        .arg(body);
    if let Some(store) = store {
        cmd.arg(store);
    }
    let process = Process::spawn(cmd, Duration::from_secs(30))?;
    let port = process
        .first_line
        .trim()
        .parse()
        .with_context(|| format!("baseline printed {:?}, not a port", process.first_line))?;
    Ok((process, port))
}

/// Runs the tool `program` with `args`, its standard output discarded, and fails unless it
/// exits successfully (`callgrind_control`, `taskset`).
pub fn run_tool(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("running {program}"))?;
    if !status.success() {
        bail!("{program} {} failed", args.join(" "));
    }
    Ok(())
}
