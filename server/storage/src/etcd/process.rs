//! A throwaway etcd server process for tests and benchmarks.
//!
//! [`EtcdProcess`] runs `/usr/bin/etcd` (or `$ETCD_BIN`, or `etcd` from `PATH`) as a plain
//! process on loopback with free client and peer ports and a temporary data directory, waits
//! until it reports healthy, and kills it (and removes the directory) when dropped. It can be
//! stopped and restarted on the same data directory and ports, which the etcd-restart tests use.
//!
//! [`TestEtcd`] is what tests should call: it connects to `$APIARY_TEST_ETCD` when set (CI starts
//! one etcd with `tools/etcd-test-server`) and otherwise starts its own [`EtcdProcess`]. A missing
//! etcd binary is an error, never a reason to skip.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable naming an already running etcd client endpoint for tests.
pub const TEST_ETCD_ENV: &str = "APIARY_TEST_ETCD";

/// The server-side watch progress notification interval of test etcds.
pub const PROGRESS_NOTIFY_INTERVAL: &str = "100ms";

/// How long [`EtcdProcess`] waits for etcd to report healthy.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// A failure to start or stop an etcd process.
#[derive(Debug, thiserror::Error)]
pub enum EtcdProcessError {
    /// No etcd binary was found.
    #[error(
        "etcd binary not found (looked at $ETCD_BIN, /usr/bin/etcd and PATH); install it with \
         `apt-get install -y etcd-server`"
    )]
    BinaryMissing,
    /// An I/O operation (spawn, temp dir, port probe) failed.
    #[error("etcd process: {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// etcd exited or did not become healthy in time.
    #[error("etcd did not become healthy: {message}; log tail:\n{log_tail}")]
    Unhealthy {
        /// Why the wait ended.
        message: String,
        /// The last lines of etcd's log.
        log_tail: String,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> EtcdProcessError {
    let context = context.into();
    move |source| EtcdProcessError::Io { context, source }
}

/// Locates the etcd binary: `$ETCD_BIN`, then `/usr/bin/etcd`, then `etcd` on `PATH`.
pub fn etcd_binary() -> Result<PathBuf, EtcdProcessError> {
    if let Some(path) = std::env::var_os("ETCD_BIN") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(EtcdProcessError::BinaryMissing)
        };
    }
    let default = PathBuf::from("/usr/bin/etcd");
    if default.is_file() {
        return Ok(default);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .ok_or(EtcdProcessError::BinaryMissing)
}

/// A port on 127.0.0.1 that was free a moment ago (the OS picked it).
fn free_port() -> Result<u16, EtcdProcessError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io_error("probing for a free port"))?;
    let port = listener
        .local_addr()
        .map_err(io_error("probing for a free port"))?
        .port();
    Ok(port)
}

/// A fresh, empty directory under the system temp dir.
fn temp_dir() -> Result<PathBuf, EtcdProcessError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "apiary-etcd-{}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    );
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).map_err(io_error(format!("creating {}", dir.display())))?;
    Ok(dir)
}

/// True when etcd's plain-HTTP `/health` endpoint on `port` answers healthy.
fn healthy(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = stream.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// TLS material for an etcd server that requires client certificates (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdServerTls {
    /// The serving certificate (it must name `127.0.0.1`).
    pub cert_file: PathBuf,
    /// The serving certificate's key.
    pub key_file: PathBuf,
    /// The CA that client certificates must chain to.
    pub trusted_ca_file: PathBuf,
}

/// A running (or stopped, restartable) etcd server owned by this process.
#[derive(Debug)]
pub struct EtcdProcess {
    binary: PathBuf,
    data_dir: PathBuf,
    log_path: PathBuf,
    client_port: u16,
    peer_port: u16,
    /// Plain-HTTP port serving `/health` (and `/metrics`), also when clients must use TLS.
    metrics_port: u16,
    tls: Option<EtcdServerTls>,
    /// Further flags given to etcd.
    extra_args: Box<[String]>,
    child: Option<Child>,
    watchdog: Option<Child>,
    started_once: bool,
}

impl EtcdProcess {
    /// Starts etcd on free loopback ports with a new temporary data directory and waits until it
    /// is healthy.
    pub fn start() -> Result<Self, EtcdProcessError> {
        Self::start_with(None, &[])
    }

    /// Like [`EtcdProcess::start`], with further etcd flags (for example `--max-txn-ops=8`).
    pub fn start_with_args(args: &[&str]) -> Result<Self, EtcdProcessError> {
        Self::start_with(None, args)
    }

    /// Like [`EtcdProcess::start`], but clients must connect over TLS with a certificate signed
    /// by `tls.trusted_ca_file`.
    pub fn start_tls(tls: EtcdServerTls) -> Result<Self, EtcdProcessError> {
        Self::start_with(Some(tls), &[])
    }

    fn start_with(tls: Option<EtcdServerTls>, args: &[&str]) -> Result<Self, EtcdProcessError> {
        let binary = etcd_binary()?;
        let mut last_error = None;
        for _ in 0..3 {
            let data_dir = temp_dir()?;
            let log_path = data_dir.with_extension("log");
            let mut process = Self {
                binary: binary.clone(),
                data_dir,
                log_path,
                client_port: free_port()?,
                peer_port: free_port()?,
                metrics_port: free_port()?,
                tls: tls.clone(),
                extra_args: args.iter().map(|a| a.to_string()).collect(),
                child: None,
                watchdog: None,
                started_once: false,
            };
            let ports = [process.client_port, process.peer_port, process.metrics_port];
            if ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
                continue;
            }
            match process.spawn_and_wait() {
                Ok(()) => return Ok(process),
                // A port taken between the probe and etcd's bind: retry with new ports.
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or(EtcdProcessError::Unhealthy {
            message: "no distinct free ports".into(),
            log_tail: String::new(),
        }))
    }

    /// The client endpoint, `http://127.0.0.1:PORT` (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The data directory (kept across [`EtcdProcess::restart`]).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The process id of the running etcd, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills etcd with SIGKILL (as a crash would) and waits for it to exit.
    pub fn kill(&mut self) -> Result<(), EtcdProcessError> {
        self.stop_watchdog();
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            child.wait().map_err(io_error("waiting for etcd to exit"))?;
        }
        Ok(())
    }

    /// Stops etcd with SIGTERM (a graceful shutdown) and waits for it to exit, falling back to
    /// SIGKILL after ten seconds.
    pub fn terminate(&mut self) -> Result<(), EtcdProcessError> {
        self.stop_watchdog();
        if let Some(mut child) = self.child.take() {
            let status = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .map_err(io_error("running kill -TERM"))?;
            let deadline = Instant::now() + Duration::from_secs(10);
            if status.success() {
                while Instant::now() < deadline {
                    if child
                        .try_wait()
                        .map_err(io_error("waiting for etcd"))?
                        .is_some()
                    {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            let _ = child.kill();
            child.wait().map_err(io_error("waiting for etcd to exit"))?;
        }
        Ok(())
    }

    /// Starts etcd again on the same data directory and ports (after [`EtcdProcess::kill`] or
    /// [`EtcdProcess::terminate`]) and waits until it is healthy.
    pub fn restart(&mut self) -> Result<(), EtcdProcessError> {
        if self.child.is_some() {
            self.kill()?;
        }
        self.spawn_and_wait()
    }

    fn spawn_and_wait(&mut self) -> Result<(), EtcdProcessError> {
        let client = self.endpoint();
        let metrics = format!("http://127.0.0.1:{}", self.metrics_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(io_error(format!("opening {}", self.log_path.display())))?;
        let log_err = log
            .try_clone()
            .map_err(io_error("duplicating log handle"))?;
        let cluster_state = if self.started_once { "existing" } else { "new" };
        let mut command = Command::new(&self.binary);
        // etcd treats ETCD_* environment variables as flags; only our flags may apply.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ETCD_") {
                command.env_remove(name);
            }
        }
        if let Some(tls) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.cert_file)
                .arg("--key-file")
                .arg(&tls.key_file)
                .arg("--trusted-ca-file")
                .arg(&tls.trusted_ca_file)
                .arg("--client-cert-auth");
        }
        let child = command
            .arg("--name")
            .arg("apiary-test")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--listen-client-urls", &client])
            .args(["--listen-metrics-urls", &metrics])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("apiary-test={peer}")])
            .args(["--initial-cluster-state", cluster_state])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            // Idle watches get progress notifications quickly, so watch caches over etcd
            // versions without ordered progress requests (before 3.4.25 / 3.5.8) stay fresh.
            .arg(format!(
                "--experimental-watch-progress-notify-interval={PROGRESS_NOTIFY_INTERVAL}"
            ))
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(io_error(format!("spawning {}", self.binary.display())))?;
        let pid = child.id();
        self.child = Some(child);
        self.started_once = true;
        self.start_watchdog(pid);
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if healthy(self.metrics_port) {
                return Ok(());
            }
            let exited = match self.child.as_mut() {
                Some(child) => child
                    .try_wait()
                    .map_err(io_error("polling etcd"))?
                    .map(|status| status.to_string()),
                None => Some("no process".into()),
            };
            if let Some(status) = exited {
                self.child = None;
                self.stop_watchdog();
                return Err(EtcdProcessError::Unhealthy {
                    message: format!("etcd exited ({status})"),
                    log_tail: log_tail(&self.log_path),
                });
            }
            if Instant::now() > deadline {
                let _ = self.kill();
                return Err(EtcdProcessError::Unhealthy {
                    message: format!("not healthy after {STARTUP_TIMEOUT:?}"),
                    log_tail: log_tail(&self.log_path),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts a small shell loop that kills etcd if this (test) process dies without running
    /// destructors, for example when the etcd handle lives in a `static`.
    fn start_watchdog(&mut self, etcd_pid: u32) {
        let script = format!(
            "while kill -0 {parent} 2>/dev/null; do sleep 0.5; done; kill -9 {etcd_pid} 2>/dev/null",
            parent = std::process::id()
        );
        self.watchdog = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
    }

    fn stop_watchdog(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        let _ = self.kill();
        let _ = std::fs::remove_dir_all(&self.data_dir);
        let _ = std::fs::remove_file(&self.log_path);
    }
}

/// The etcd a test talks to: the shared one named by `$APIARY_TEST_ETCD`, or one it started.
#[derive(Debug)]
pub enum TestEtcd {
    /// An etcd started by someone else (CI), reached at this endpoint.
    External(String),
    /// An etcd process this test owns; it is killed when this value is dropped.
    Owned(EtcdProcess),
}

impl TestEtcd {
    /// Uses `$APIARY_TEST_ETCD` when set and non-empty, otherwise starts an [`EtcdProcess`].
    pub fn get() -> Result<Self, EtcdProcessError> {
        match std::env::var(TEST_ETCD_ENV) {
            Ok(endpoint) if !endpoint.trim().is_empty() => {
                Ok(Self::External(endpoint.trim().to_string()))
            }
            _ => EtcdProcess::start().map(Self::Owned),
        }
    }

    /// The client endpoint.
    pub fn endpoint(&self) -> String {
        match self {
            Self::External(endpoint) => endpoint.clone(),
            Self::Owned(process) => process.endpoint(),
        }
    }
}

/// A key prefix no other test uses, so tests can share one etcd: `/apiary-test/<pid>-<n>-<nanos>`.
pub fn unique_test_prefix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "/apiary-test/{}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}
