//! Shared harness of the integration tests: starts the real `apiary` binary on a free loopback
//! port with a temporary `--data-dir`, and builds clients from the kubeconfig it writes.

#![allow(dead_code)]

pub mod admission;
pub mod aggregated_server;
pub mod history;
pub mod raw;
pub mod tls;
pub mod tmpfs;
pub mod webhook_server;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `apiary` process.
pub struct Server {
    child: Option<Child>,
    /// The data directory (kept when the server stops, for restarts).
    pub data_dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    /// Lines the server printed on stdout.
    pub stdout: Vec<String>,
}

fn server_from_kubeconfig(path: &Path) -> String {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no server in {}", path.display()))
}

impl Server {
    /// Starts a server in a fresh temporary data directory.
    pub fn start(args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let dir = tmp.path().join("data");
        let mut s = Self::start_in(&dir, args);
        s._tmp = Some(tmp);
        s
    }

    /// Starts a server on `data_dir` (reused across restarts).
    pub fn start_in(data_dir: &Path, args: &[&str]) -> Server {
        Self::start_in_with_env(data_dir, args, &[])
    }

    /// Starts a server on `data_dir` with extra environment variables (such as `LD_PRELOAD`).
    pub fn start_in_with_env(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        Self::start_binary_in(Path::new(env!("CARGO_BIN_EXE_apiary")), data_dir, args, env)
    }

    /// Starts another server built on apiary (a user's crate, an example) in a fresh temporary
    /// data directory; it must take apiary's flags and print one line once it listens.
    pub fn start_binary(binary: &Path, args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let dir = tmp.path().join("data");
        let mut s = Self::start_binary_in(binary, &dir, args, &[]);
        s._tmp = Some(tmp);
        s
    }

    /// Starts `binary` on `data_dir` with extra environment variables. It listens on a free
    /// port unless `args` name one (`--secure-port=<port>`, as for a restart on the same port).
    pub fn start_binary_in(
        binary: &Path,
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::new(binary);
        cmd.arg("--data-dir").arg(data_dir);
        if !args.iter().any(|a| a.starts_with("--secure-port")) {
            cmd.arg("--secure-port=0");
        }
        cmd.args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("apiary printed nothing within 120s: {e}"));
        let kubeconfig = data_dir.join("admin.kubeconfig");
        let base = server_from_kubeconfig(&kubeconfig);
        let server = Server {
            child: Some(child),
            data_dir: data_dir.to_path_buf(),
            _tmp: None,
            base,
            stdout: vec![line],
        };
        server.wait_ready();
        server
    }

    /// A server started some other way (in process, by the test) on `data_dir`: waits for its
    /// admin kubeconfig and for `/readyz`; nothing is killed when it is dropped.
    pub fn attach(data_dir: &Path) -> Server {
        let kubeconfig = data_dir.join("admin.kubeconfig");
        let deadline = Instant::now() + Duration::from_secs(120);
        let base = loop {
            let written = std::fs::read_to_string(&kubeconfig).ok().and_then(|text| {
                text.lines()
                    .find_map(|l| l.trim().strip_prefix("server: "))
                    .map(str::to_string)
            });
            if let Some(base) = written {
                break base;
            }
            assert!(
                Instant::now() < deadline,
                "no admin kubeconfig in {} within 120s",
                data_dir.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let server = Server {
            child: None,
            data_dir: data_dir.to_path_buf(),
            _tmp: None,
            base,
            stdout: Vec::new(),
        };
        server.wait_ready();
        server
    }

    /// Path of the admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or_default()
    }

    /// The file `name` of the server's `pki` directory.
    pub fn pem(&self, name: &str) -> Vec<u8> {
        let p = self.data_dir.join("pki").join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
    }

    /// The CA the written kubeconfig trusts (`certificate-authority-data`).
    pub fn kubeconfig_ca(&self) -> Vec<u8> {
        use base64::Engine;
        let text = std::fs::read_to_string(self.kubeconfig())
            .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
        let data = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
            .unwrap_or_else(|| panic!("no certificate-authority-data in the kubeconfig"));
        base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .unwrap_or_else(|e| panic!("ca data: {e}"))
    }

    /// A client builder that trusts the server's CA (no identity yet).
    pub fn builder(&self) -> reqwest::ClientBuilder {
        let ca = reqwest::Certificate::from_pem(&self.kubeconfig_ca())
            .unwrap_or_else(|e| panic!("ca: {e}"));
        reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(ca)
            .timeout(Duration::from_secs(60))
    }

    /// A client authenticated with the admin certificate (group `system:masters`).
    pub fn admin(&self) -> reqwest::Client {
        let mut pem = self.pem("admin.crt");
        pem.extend_from_slice(&self.pem("admin.key"));
        let id = reqwest::Identity::from_pem(&pem).unwrap_or_else(|e| panic!("identity: {e}"));
        self.builder()
            .identity(id)
            .build()
            .unwrap_or_else(|e| panic!("client: {e}"))
    }

    /// Sets the embedded writer's commit delay with the fault header
    /// (`X-Apiary-Fault: fsync-delay=<delay>`, a Go duration; `0` clears it) as the admin, as
    /// on a slow disk (`server/src/fault.rs`; honoured only with the `fault-injection` feature).
    pub async fn set_fsync_delay(&self, delay: &str) {
        let r = self
            .admin()
            .get(self.url("/version"))
            .header("X-Apiary-Fault", format!("fsync-delay={delay}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("setting fsync-delay={delay}: {e}"));
        assert_eq!(r.status().as_u16(), 200, "setting fsync-delay={delay}");
    }

    /// A client presenting no certificate.
    pub fn anonymous(&self) -> reqwest::Client {
        self.builder()
            .build()
            .unwrap_or_else(|e| panic!("client: {e}"))
    }

    /// A client presenting `cert_pem` + `key_pem`.
    pub fn with_identity(&self, cert_pem: &str, key_pem: &str) -> reqwest::Client {
        let id = reqwest::Identity::from_pem(format!("{cert_pem}{key_pem}").as_bytes())
            .unwrap_or_else(|e| panic!("identity: {e}"));
        self.builder()
            .identity(id)
            .build()
            .unwrap_or_else(|e| panic!("client: {e}"))
    }

    /// A client certificate and key (PEM) for user `cn` in group `org` (none when empty),
    /// signed by the server's CA under the data directory.
    pub fn user_cert(&self, cn: &str, org: &str) -> (String, String) {
        use rcgen::{CertificateParams, DnType, Issuer, KeyPair};
        let ca_pem = String::from_utf8_lossy(&self.pem("ca.crt")).into_owned();
        let ca_key = KeyPair::from_pem(&String::from_utf8_lossy(&self.pem("ca.key")))
            .unwrap_or_else(|e| panic!("ca key: {e}"));
        let issuer =
            Issuer::from_ca_cert_pem(&ca_pem, ca_key).unwrap_or_else(|e| panic!("issuer: {e}"));
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params.distinguished_name.push(DnType::CommonName, cn);
        if !org.is_empty() {
            params
                .distinguished_name
                .push(DnType::OrganizationName, org);
        }
        let cert = params
            .signed_by(&key, &issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        (cert.pem(), key.serialize_pem())
    }

    /// A kubeconfig (written beside the admin one) for user `cn` in group `org`, authenticated
    /// by a client certificate from the server's CA.
    pub fn user_kubeconfig(&self, cn: &str, org: &str) -> PathBuf {
        use base64::Engine;
        let (cert, key) = self.user_cert(cn, org);
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let admin = std::fs::read_to_string(self.kubeconfig())
            .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
        let text: Vec<String> = admin
            .lines()
            .map(|l| {
                let indent = &l[..l.len() - l.trim_start().len()];
                if l.trim().starts_with("client-certificate-data: ") {
                    format!("{indent}client-certificate-data: {}", b64(&cert))
                } else if l.trim().starts_with("client-key-data: ") {
                    format!("{indent}client-key-data: {}", b64(&key))
                } else {
                    l.to_string()
                }
            })
            .collect();
        let safe: String = cn
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = self.data_dir.join(format!("user-{safe}.kubeconfig"));
        std::fs::write(&path, text.join("\n") + "\n")
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn wait_ready(&self) {
        let url = self.url("/readyz");
        let client = self.admin();
        // A separate thread with its own runtime, so this works from sync and async tests alike.
        let waiter = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let ok = rt.block_on(async {
                    client
                        .get(&url)
                        .send()
                        .await
                        .map(|r| r.status().as_u16() == 200)
                });
                if matches!(ok, Ok(true)) {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "apiary did not become ready: {ok:?}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        if let Err(e) = waiter.join() {
            std::panic::resume_unwind(e);
        }
    }

    /// Sends SIGTERM and waits (up to `timeout`) for the process to exit.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let mut child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("server already stopped"));
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        assert!(status.is_ok_and(|s| s.success()), "kill -TERM failed");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("apiary did not exit within {timeout:?} after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the process with SIGKILL (a crash: no shutdown, nothing flushed) and reaps it.
    pub fn kill(&mut self) {
        let mut child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("server already stopped"));
        child
            .kill()
            .unwrap_or_else(|e| panic!("kill -9 apiary: {e}"));
        child.wait().unwrap_or_else(|e| panic!("wait: {e}"));
    }

    /// Runs a kubectl binary with the written kubeconfig and a temporary cache directory.
    pub fn kubectl(&self, kubectl: &Path, args: &[&str]) -> Output {
        let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--cache-dir")
            .arg(cache.path())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", kubectl.display()))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The kubectl binaries to test with: the one on PATH and `kubectl.1.27`/`kubectl.1.33` beside
/// the file it links to. Panics if any is missing.
pub fn kubectls() -> Vec<PathBuf> {
    let which = Command::new("sh")
        .args(["-c", "command -v kubectl"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let on_path = String::from_utf8_lossy(&which.stdout).trim().to_string();
    assert!(!on_path.is_empty(), "kubectl is not on PATH");
    let real =
        std::fs::canonicalize(&on_path).unwrap_or_else(|e| panic!("resolving {on_path}: {e}"));
    let dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut all = vec![PathBuf::from(on_path)];
    for v in ["kubectl.1.27", "kubectl.1.33"] {
        let p = dir.join(v);
        assert!(p.exists(), "{} is missing", p.display());
        all.push(p);
    }
    all
}

/// A throwaway etcd, stopped on drop.
pub struct Etcd {
    env: tempfile::TempDir,
    /// The client URL.
    pub endpoint: String,
}

impl Etcd {
    /// Starts one (fails loudly without etcd).
    pub fn start() -> Etcd {
        let env = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = env.path().join("etcd.env");
        let script = Self::script();
        let out = Command::new(&script)
            .arg("start")
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "etcd did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let endpoint = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Etcd { env, endpoint }
    }

    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/etcd-test-server")
    }

    fn env_file(&self) -> PathBuf {
        self.env.path().join("etcd.env")
    }

    /// The process id of the etcd running now (a restart changes it).
    pub fn pid(&self) -> u32 {
        let text = std::fs::read_to_string(self.env_file()).unwrap_or_else(|e| panic!("{e}"));
        text.lines()
            .find_map(|l| l.strip_prefix("APIARY_TEST_ETCD_PID="))
            .and_then(|pid| pid.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in the etcd env file: {text}"))
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "kill {signal} of etcd failed"
        );
    }

    /// Freezes etcd (SIGSTOP): its connections stay open and nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused etcd run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Kills etcd with SIGKILL and starts it again on the same ports and data directory,
    /// returning once it is healthy (`tools/etcd-test-server restart`). `down` is how long it
    /// stays dead.
    pub fn crash_and_restart(&self, down: Duration) {
        self.signal("-KILL");
        std::thread::sleep(down);
        let out = Command::new(Self::script())
            .arg("restart")
            .arg(self.env_file())
            .output()
            .unwrap_or_else(|e| panic!("running etcd-test-server restart: {e}"));
        assert!(
            out.status.success(),
            "etcd did not restart: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = Command::new(Self::script())
            .arg("stop")
            .arg(self.env_file())
            .status();
    }
}

/// Copies the files of a directory (a replica's PKI).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(from)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Sends one request with an optional JSON body; returns the status, the JSON answer (`null`
/// when there is none) and the `Warning` headers.
pub async fn send_json(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value, Vec<String>) {
    let mut req = client.request(method, url);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_string())
        .collect();
    let body = resp
        .json::<serde_json::Value>()
        .await
        .unwrap_or(serde_json::Value::Null);
    (status, body, warnings)
}

/// POSTs `body` as JSON with `client`: the status code and the answer (`Null` when it is not
/// JSON).
pub async fn post_json(
    client: &reqwest::Client,
    url: String,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let resp = client
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let code = resp.status().as_u16();
    (code, resp.json().await.unwrap_or(serde_json::Value::Null))
}

/// GETs `path` as the admin, which must answer 200: the answer as JSON.
pub async fn get_json(server: &Server, path: &str) -> serde_json::Value {
    let resp = server
        .admin()
        .get(server.url(path))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200, "GET {path}");
    resp.json().await.unwrap_or(serde_json::Value::Null)
}
