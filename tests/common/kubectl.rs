//! Drives real kubectl binaries against a running `apiary`: every invocation uses the written
//! admin kubeconfig and a temporary `--cache-dir`, is bounded by a timeout, and captures exit
//! code, stdout and stderr. A journey runs once per installed kubectl (the one on PATH,
//! `kubectl.1.27` and `kubectl.1.33`), in parallel threads, and records every failed check so a
//! report names each failing version and check instead of stopping at the first.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Server, kubectls};

/// How long one kubectl invocation may take before it is killed and the check fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The outcome of one kubectl invocation.
#[derive(Debug)]
pub struct Run {
    /// The command line, for messages.
    pub cmd: String,
    /// The exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Everything printed on stdout.
    pub stdout: String,
    /// Everything printed on stderr.
    pub stderr: String,
}

impl Run {
    /// Whether the process exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// A description of the invocation and its output, for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "`{}` exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmd, self.code, self.stdout, self.stderr
        )
    }
}

/// One kubectl binary bound to a server's kubeconfig, with its own cache and work directories.
pub struct Kubectl {
    /// The binary.
    pub path: PathBuf,
    /// A short name for namespaces and messages: `k` (the one on PATH), `k127`, `k133`.
    pub label: String,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    work: tempfile::TempDir,
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

/// Collects stdout or stderr of a child on a thread.
fn collect(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

impl Kubectl {
    /// Binds `path` to `server`.
    pub fn new(server: &Server, path: &Path) -> Kubectl {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let label = match file.strip_prefix("kubectl.") {
            Some(version) => format!("k{}", version.replace('.', "")),
            None => "k".to_string(),
        };
        Kubectl {
            path: path.to_path_buf(),
            label,
            kubeconfig: server.kubeconfig(),
            cache: tempdir(),
            work: tempdir(),
        }
    }

    /// The same binary with another kubeconfig (another user), its own cache and work
    /// directories, and the same label.
    pub fn with_kubeconfig(&self, kubeconfig: &Path) -> Kubectl {
        Kubectl {
            path: self.path.clone(),
            label: self.label.clone(),
            kubeconfig: kubeconfig.to_path_buf(),
            cache: tempdir(),
            work: tempdir(),
        }
    }

    /// The namespace name `base-<label>`, unique per kubectl.
    pub fn ns(&self, base: &str) -> String {
        format!("{base}-{}", self.label)
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .current_dir(self.work.path())
            .env_remove("KUBECONFIG")
            .env_remove("KUBE_EDITOR")
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .env("HOME", self.work.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    fn cmdline(&self, args: &[&str]) -> String {
        format!(
            "{} {}",
            self.path
                .file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default(),
            args.join(" ")
        )
    }

    /// Runs kubectl with `args`, environment additions `env` and `stdin`, bounded by a timeout.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
        let mut child = self
            .command(args, env)
            .spawn()
            .unwrap_or_else(|e| panic!("running {}: {e}", self.path.display()));
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin.as_bytes());
        }
        let out = collect(child.stdout.take().unwrap_or_else(|| panic!("no stdout")));
        let err = collect(child.stderr.take().unwrap_or_else(|| panic!("no stderr")));
        let deadline = Instant::now() + RUN_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let run = Run {
            cmd: self.cmdline(args),
            code: status.and_then(|s| s.code()),
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        };
        assert!(
            status.is_some(),
            "timed out after {RUN_TIMEOUT:?}: {}",
            run.describe()
        );
        run
    }

    /// Runs kubectl with `args`.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[], "")
    }

    /// Runs `args` until its stdout (trimmed) is `want`, for at most 15 s (a change reaches
    /// what reads the watch cache a moment after the write); returns the last stdout.
    pub fn until(&self, args: &[&str], want: &str) -> String {
        let mut last = String::new();
        for _ in 0..150 {
            last = self.run(args).stdout.trim().to_string();
            if last == want {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        last
    }

    /// Runs kubectl with `args` and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(run.success(), "{}", run.describe());
        run.stdout
    }

    /// Runs kubectl with `args` and `stdin`, and requires success; returns stdout.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        let run = self.run_with(args, &[], stdin);
        assert!(run.success(), "{}", run.describe());
        run.stdout
    }

    /// Runs kubectl with `args` (which should ask for `-o json`) and parses stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.ok(args);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{}: stdout is not JSON ({e}):\n{out}", self.cmdline(args)))
    }

    /// Runs kubectl with `args` and requires failure; returns the run.
    pub fn fails(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert!(!run.success(), "expected failure: {}", run.describe());
        run
    }

    /// Writes `content` to `name` in this kubectl's work directory and returns the path.
    pub fn write(&self, name: &str, content: &str) -> String {
        let path = self.work.path().join(name);
        std::fs::write(&path, content)
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path.to_string_lossy().into_owned()
    }

    /// The work directory (kubectl's current directory).
    pub fn work_dir(&self) -> &Path {
        self.work.path()
    }

    /// Starts kubectl in the background (for `get -w` and `wait`); its output is collected.
    pub fn spawn(&self, args: &[&str]) -> Background {
        let mut child = self
            .command(args, &[])
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("running {}: {e}", self.path.display()));
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        for (pipe, sink) in [
            (
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
                stdout.clone(),
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
                stderr.clone(),
            ),
        ] {
            let Some(mut pipe) = pipe else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut s) = sink.lock() {
                        s.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            });
        }
        Background {
            child: Some(child),
            cmd: self.cmdline(args),
            stdout,
            stderr,
        }
    }
}

/// A kubectl running in the background.
pub struct Background {
    child: Option<Child>,
    /// The command line, for messages.
    pub cmd: String,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Background {
    /// What it printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until `pred(stdout)` holds; false after `timeout`.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if pred(&self.stdout()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        pred(&self.stdout())
    }

    /// Waits up to `timeout` for the process to exit; returns its exit code, or `None` if it
    /// is still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    // Let the reader threads drain the pipes.
                    std::thread::sleep(Duration::from_millis(100));
                    return Some(status.code().unwrap_or(-1));
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => return None,
            }
        }
    }

    /// A description of the process output, for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "`{}`\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmd,
            self.stdout(),
            self.stderr()
        )
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The failed checks of one journey on one kubectl.
#[derive(Default)]
pub struct Checks {
    failures: Vec<String>,
}

impl Checks {
    /// Records `message` as a failure unless `cond` holds.
    pub fn check(&mut self, cond: bool, message: impl FnOnce() -> String) {
        if !cond {
            self.failures.push(message());
        }
    }

    /// Records a failure unless `haystack` contains `needle`.
    pub fn contains(&mut self, what: &str, haystack: &str, needle: &str) {
        self.check(haystack.contains(needle), || {
            format!("{what}: expected to contain {needle:?}, got:\n{haystack}")
        });
    }

    /// Records a failure unless `actual == expected`.
    pub fn eq<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, actual: T, expected: T) {
        self.check(actual == expected, || {
            format!("{what}: expected {expected:?}, got {actual:?}")
        });
    }

    /// Runs kubectl and records a failure unless it succeeds; returns the run.
    pub fn run_ok(&mut self, k: &Kubectl, args: &[&str]) -> Run {
        let run = k.run(args);
        self.check(run.success(), || run.describe());
        run
    }

    /// Runs kubectl and records a failure unless it exits with `code`; returns the run.
    pub fn run_code(&mut self, k: &Kubectl, args: &[&str], code: i32) -> Run {
        let run = k.run(args);
        self.check(run.code == Some(code), || {
            format!("expected exit code {code}: {}", run.describe())
        });
        run
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "panic".to_string()
    }
}

/// The kubectl binaries to run journeys with: those of `common::kubectls()` (the one on PATH,
/// `kubectl.1.27`, `kubectl.1.33`; missing ones fail), and with `APIARY_TEST_KUBECTL_ALL=1`
/// also every other `kubectl.1.*` beside them.
pub fn journey_kubectls() -> Vec<PathBuf> {
    let mut all = kubectls();
    if std::env::var("APIARY_TEST_KUBECTL_ALL").is_ok_and(|v| v == "1") {
        let dir = all
            .last()
            .and_then(|p| p.parent())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut more: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with("kubectl.1."))
            })
            .filter(|p| !all.contains(p))
            .collect();
        more.sort();
        all.extend(more);
    }
    all
}

/// Runs `journey` once for every installed kubectl (in parallel threads) against `server`, and
/// panics with a per-version report if any check failed. A panic inside the journey (a hard
/// precondition failing) is recorded as a failure of that version.
pub fn each_kubectl(server: &Server, journey: impl Fn(&Kubectl, &mut Checks) + Sync) {
    let kubectls: Vec<Kubectl> = journey_kubectls()
        .iter()
        .map(|p| Kubectl::new(server, p))
        .collect();
    let results: Vec<(String, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = kubectls
            .iter()
            .map(|k| {
                let journey = &journey;
                scope.spawn(move || {
                    let mut checks = Checks::default();
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| journey(k, &mut checks)))
                    {
                        checks
                            .failures
                            .push(format!("aborted: {}", panic_message(payload.as_ref())));
                    }
                    (
                        format!("{} ({})", k.label, k.path.display()),
                        checks.failures,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| ("?".into(), vec!["thread panicked".into()]))
            })
            .collect()
    });
    let mut report = String::new();
    for (who, failures) in &results {
        if failures.is_empty() {
            println!("PASS {who}");
        } else {
            println!("FAIL {who}");
            report.push_str(&format!(
                "\n===== {who}: {} failed check(s)\n",
                failures.len()
            ));
            for f in failures {
                report.push_str(&format!("- {f}\n"));
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

/// The items of a `-o json` list.
pub fn items(list: &serde_json::Value) -> Vec<serde_json::Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The names of the items of a `-o json` list, in order.
pub fn names(list: &serde_json::Value) -> Vec<String> {
    items(list)
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// A Widget manifest at `example.dev/v1`.
pub fn widget_v1(name: &str, ns: &str, replicas: i64, color: Option<&str>) -> String {
    let color = color.map(|c| format!("\n  color: {c}")).unwrap_or_default();
    format!(
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  replicas: {replicas}{color}\n"
    )
}
