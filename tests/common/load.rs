//! Load through the aggregator for `tests/aggregator_kill.rs`: concurrent admin clients on
//! kept-alive HTTP/1.1 and HTTP/2 connections creating, getting and listing wardle's flunders,
//! watchers keeping watches of flunders open (listing, then watching from the list's
//! resourceVersion, as informers do), and clients of main's own groups (ConfigMaps and
//! discovery). Every request is bounded in time and recorded with how it ended; every watch
//! with its events and how it ended. Also the `/proc` views the test takes of a process: its
//! file descriptors and its TCP connections to a port.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::common::Server;

/// wardle's flunders in `default`, through the aggregator (the preferred version).
pub const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";

/// The same flunders in wardle's other version.
pub const FLUNDERS_BETA: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";

/// How long one request (its answer and whole body) may take: longer is a hang.
pub const REQUEST_BOUND: Duration = Duration::from_secs(20);

/// How long the load's tasks may take to stop once told.
const STOP_BOUND: Duration = Duration::from_secs(30);

/// How a request ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A 2xx answer with a complete JSON body of the expected kind.
    Ok,
    /// A `503` answered with a JSON `Status` (`ServiceUnavailable`) with a message: the message.
    Unavailable(String),
    /// No answer, or a body cut short: the connection broke (the error).
    Broken(String),
    /// Anything else (another code, a body that is not what it should be, no answer within
    /// [`REQUEST_BOUND`]): what was wrong.
    Wrong(String),
}

/// One request of the load.
#[derive(Clone, Debug)]
pub struct Record {
    /// The client (`worker-3`, `watcher-1`, `own-h2`).
    pub client: String,
    /// What the request did.
    pub op: &'static str,
    /// Whether it went through the aggregator's proxy (else to main's own groups).
    pub proxied: bool,
    /// Whether the client negotiates HTTP/2 (else HTTP/1.1 only).
    pub http2: bool,
    /// When it was sent.
    pub started: Instant,
    /// When it ended.
    pub ended: Instant,
    /// How it ended.
    pub outcome: Outcome,
}

impl Record {
    /// The record for messages, its times in seconds since `t0`.
    pub fn describe(&self, t0: Instant) -> String {
        let at = |t: Instant| t.saturating_duration_since(t0).as_secs_f64();
        format!(
            "{} {} ({}, HTTP/{}) sent at {:.3}s, ended at {:.3}s: {:?}",
            self.client,
            self.op,
            if self.proxied {
                "proxied"
            } else {
                "main's own"
            },
            if self.http2 { "2" } else { "1.1" },
            at(self.started),
            at(self.ended),
            self.outcome
        )
    }
}

/// How a watch ended.
#[derive(Clone, Debug)]
pub enum WatchEnd {
    /// The stream ended cleanly.
    Closed,
    /// The stream broke (the error).
    Broken(String),
    /// An `ERROR` event came (its object).
    ErrorEvent(String),
    /// The load was stopped.
    Stopped,
}

/// One watch of the load.
#[derive(Clone, Debug)]
pub struct WatchRecord {
    /// The watcher's number.
    pub watcher: usize,
    /// Whether the watcher negotiates HTTP/2.
    pub http2: bool,
    /// When its answer's headers came.
    pub opened: Instant,
    /// When it ended.
    pub ended: Option<Instant>,
    /// How it ended.
    pub end: Option<WatchEnd>,
    /// The events seen (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`).
    pub events: usize,
    /// Lines of the stream that were not a watch event of a flunder.
    pub bad_events: Vec<String>,
}

#[derive(Default)]
struct Shared {
    records: Mutex<Vec<Record>>,
    acknowledged: Mutex<BTreeSet<String>>,
    watches: Mutex<Vec<WatchRecord>>,
}

impl Shared {
    fn record(&self, record: Record) {
        lock(&self.records).push(record);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the load did, once stopped.
pub struct Report {
    /// Every request.
    pub records: Vec<Record>,
    /// Every watch.
    pub watches: Vec<WatchRecord>,
    /// The flunders whose create was answered `201`.
    pub acknowledged: BTreeSet<String>,
}

/// The running load (see the module).
pub struct Load {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// A client with main's admin certificate, HTTP/2 when `http2` (negotiated by ALPN), else
/// HTTP/1.1 only; connections are kept alive and reused.
pub fn admin_client(server: &Server, http2: bool) -> reqwest::Client {
    let mut id = server.pem("admin.crt");
    id.extend(server.pem("admin.key"));
    let ca = reqwest::Certificate::from_pem(&server.kubeconfig_ca())
        .unwrap_or_else(|e| panic!("ca: {e}"));
    let mut b = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(ca)
        .identity(reqwest::Identity::from_pem(&id).unwrap_or_else(|e| panic!("identity: {e}")));
    if !http2 {
        b = b.http1_only();
    }
    b.build().unwrap_or_else(|e| panic!("client: {e}"))
}

/// An error with its sources, for messages.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// An answer: how it ended, its code (0 without one) and its JSON body.
struct Answer {
    outcome: Outcome,
    code: u16,
    body: Value,
}

/// Reads `resp` whole and classifies it; a 2xx answer's body must be a `kind`.
async fn classify(resp: reqwest::Response, kind: &str, http2: bool) -> Answer {
    let code = resp.status().as_u16();
    if http2 && resp.version() != reqwest::Version::HTTP_2 {
        return Answer {
            outcome: Outcome::Wrong(format!("{:?} on an HTTP/2 client", resp.version())),
            code,
            body: Value::Null,
        };
    }
    let json_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let bytes = match resp.bytes().await {
        Ok(b) => b,
        Err(e) => {
            return Answer {
                outcome: Outcome::Broken(format!("{code} with its body cut short: {}", chain(&e))),
                code,
                body: Value::Null,
            };
        }
    };
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or("").to_string();
    let outcome = match code {
        200..=299 if body["kind"] == kind => Outcome::Ok,
        503 if json_type
            && body["kind"] == "Status"
            && body["code"] == 503
            && body["reason"] == "ServiceUnavailable"
            && !message.is_empty() =>
        {
            Outcome::Unavailable(message)
        }
        _ => Outcome::Wrong(format!(
            "{code}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
        )),
    };
    Answer {
        outcome,
        code,
        body,
    }
}

/// Sends `req` and classifies the answer (see [`classify`]), within [`REQUEST_BOUND`].
async fn call(req: reqwest::RequestBuilder, kind: &str, http2: bool) -> Answer {
    let exchange = async {
        match req.send().await {
            Ok(resp) => classify(resp, kind, http2).await,
            Err(e) => Answer {
                outcome: Outcome::Broken(chain(&e)),
                code: 0,
                body: Value::Null,
            },
        }
    };
    tokio::time::timeout(REQUEST_BOUND, exchange)
        .await
        .unwrap_or_else(|_| Answer {
            outcome: Outcome::Wrong(format!("no answer within {REQUEST_BOUND:?}")),
            code: 0,
            body: Value::Null,
        })
}

/// A task's view of the load: its client and where it records.
struct Ctx {
    name: String,
    client: reqwest::Client,
    base: String,
    http2: bool,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
}

impl Ctx {
    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Sends, classifies and records one request; `check` may turn a success wrong.
    async fn request(
        &self,
        op: &'static str,
        proxied: bool,
        req: reqwest::RequestBuilder,
        kind: &str,
        check: impl FnOnce(u16, &Value) -> Result<(), String>,
    ) -> Answer {
        let started = Instant::now();
        let mut answer = call(req, kind, self.http2).await;
        if matches!(answer.outcome, Outcome::Ok)
            && let Err(why) = check(answer.code, &answer.body)
        {
            answer.outcome = Outcome::Wrong(why);
        }
        self.shared.record(Record {
            client: self.name.clone(),
            op,
            proxied,
            http2: self.http2,
            started,
            ended: Instant::now(),
            outcome: answer.outcome.clone(),
        });
        if !matches!(answer.outcome, Outcome::Ok) {
            // Failures come fast while wardle is down: do not spin on them.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        answer
    }
}

fn no_check(_: u16, _: &Value) -> Result<(), String> {
    Ok(())
}

/// Creates, gets (in the other version) and lists flunders until stopped.
async fn worker(id: usize, ctx: Ctx) {
    let mut mine: Vec<String> = Vec::new();
    let mut i = 0usize;
    while !ctx.stopped() {
        i += 1;
        match i % 3 {
            0 => {
                let name = format!("load-{id}-{i}");
                let flunder = json!({
                    "apiVersion": "wardle.example.com/v1alpha1",
                    "kind": "Flunder",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"reference": format!("fischer-{i}"), "referenceType": "Fischer"},
                });
                let url = format!("{}{FLUNDERS}", ctx.base);
                let answer = ctx
                    .request(
                        "create",
                        true,
                        ctx.client.post(url).json(&flunder),
                        "Flunder",
                        |code, body| {
                            if code != 201 || body["metadata"]["name"] != name.as_str() {
                                return Err(format!("create answered {code}: {body}"));
                            }
                            Ok(())
                        },
                    )
                    .await;
                if matches!(answer.outcome, Outcome::Ok) {
                    lock(&ctx.shared.acknowledged).insert(name.clone());
                    mine.push(name);
                }
            }
            1 if !mine.is_empty() => {
                let name = mine[i % mine.len()].clone();
                let url = format!("{}{FLUNDERS_BETA}/{name}", ctx.base);
                ctx.request("get", true, ctx.client.get(url), "Flunder", |_, body| {
                    if body["metadata"]["name"] != name.as_str() {
                        return Err(format!("get {name} answered {body}"));
                    }
                    Ok(())
                })
                .await;
            }
            _ => {
                // Every other list is whole (a body that grows with the creates, long enough
                // for the kill to cut it short), the others a page.
                let limit = if i.is_multiple_of(2) { "" } else { "?limit=50" };
                let url = format!("{}{FLUNDERS}{limit}", ctx.base);
                ctx.request("list", true, ctx.client.get(url), "FlunderList", no_check)
                    .await;
            }
        }
    }
}

/// The events in the complete lines of `buf` (the rest kept for the next chunk), counted into
/// `watch`; an `ERROR` event ends the watch.
fn take_events(buf: &mut Vec<u8>, watch: &mut WatchRecord) -> Option<WatchEnd> {
    while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = buf.drain(..=pos).collect();
        let event: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
        let kind = event["object"]["kind"].as_str().unwrap_or("");
        match event["type"].as_str() {
            Some("ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK") if kind == "Flunder" => {
                watch.events += 1
            }
            Some("ERROR") => return Some(WatchEnd::ErrorEvent(event["object"].to_string())),
            _ => watch
                .bad_events
                .push(String::from_utf8_lossy(&line).into_owned()),
        }
    }
    None
}

/// Lists then watches flunders from the list's resourceVersion, again whenever a watch ends,
/// until stopped.
async fn watcher(id: usize, mut ctx: Ctx) {
    while !ctx.stopped() {
        let url = format!("{}{FLUNDERS}?limit=1", ctx.base);
        let list = ctx
            .request("list", true, ctx.client.get(url), "FlunderList", no_check)
            .await;
        let Some(rv) = list.body["metadata"]["resourceVersion"].as_str() else {
            continue;
        };
        let url = format!(
            "{}{FLUNDERS}?watch=true&resourceVersion={rv}&timeoutSeconds=600",
            ctx.base
        );
        let started = Instant::now();
        let sent = tokio::time::timeout(REQUEST_BOUND, ctx.client.get(url).send()).await;
        let failed = |outcome| Record {
            client: ctx.name.clone(),
            op: "watch",
            proxied: true,
            http2: ctx.http2,
            started,
            ended: Instant::now(),
            outcome,
        };
        let mut resp = match sent {
            Err(_) => {
                let why = format!("no watch answer within {REQUEST_BOUND:?}");
                ctx.shared.record(failed(Outcome::Wrong(why)));
                continue;
            }
            Ok(Err(e)) => {
                ctx.shared.record(failed(Outcome::Broken(chain(&e))));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Ok(Ok(resp)) if resp.status().as_u16() != 200 => {
                let answer = classify(resp, "", ctx.http2).await;
                ctx.shared.record(failed(answer.outcome));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Ok(Ok(resp)) => resp,
        };
        let outcome = if ctx.http2 && resp.version() != reqwest::Version::HTTP_2 {
            Outcome::Wrong(format!("{:?} on an HTTP/2 client", resp.version()))
        } else {
            Outcome::Ok
        };
        ctx.shared.record(failed(outcome));
        let mut record = WatchRecord {
            watcher: id,
            http2: ctx.http2,
            opened: Instant::now(),
            ended: None,
            end: None,
            events: 0,
            bad_events: Vec::new(),
        };
        let index = {
            let mut watches = lock(&ctx.shared.watches);
            watches.push(record.clone());
            watches.len() - 1
        };
        let mut buf = Vec::new();
        let end = loop {
            let chunk = tokio::select! {
                _ = ctx.stop.changed() => break WatchEnd::Stopped,
                chunk = resp.chunk() => chunk,
            };
            match chunk {
                Ok(Some(bytes)) => {
                    buf.extend_from_slice(&bytes);
                    let end = take_events(&mut buf, &mut record);
                    lock(&ctx.shared.watches)[index].events = record.events;
                    if let Some(end) = end {
                        break end;
                    }
                }
                Ok(None) => break WatchEnd::Closed,
                Err(e) => break WatchEnd::Broken(chain(&e)),
            }
        };
        record.ended = Some(Instant::now());
        record.end = Some(end);
        lock(&ctx.shared.watches)[index] = record;
    }
}

/// Reads main's own groups and discovery and writes ConfigMaps until stopped.
async fn own_groups(ctx: Ctx) {
    let mut i = 0usize;
    let groups = |_: u16, body: &Value| {
        let names: Vec<&str> = body["groups"]
            .as_array()
            .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
            .unwrap_or_default();
        for want in [
            "rbac.authorization.k8s.io",
            "apiregistration.k8s.io",
            "discovery.k8s.io",
        ] {
            if !names.contains(&want) {
                return Err(format!("{want} is missing from /apis: {names:?}"));
            }
        }
        Ok(())
    };
    while !ctx.stopped() {
        i += 1;
        let url = |path: &str| format!("{}{path}", ctx.base);
        let configmap = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": format!("own-{}-{i}", ctx.name), "namespace": "default"},
            "data": {"i": i.to_string()},
        });
        let c = &ctx.client;
        ctx.request(
            "create configmap",
            false,
            c.post(url("/api/v1/namespaces/default/configmaps"))
                .json(&configmap),
            "ConfigMap",
            |code, body| match code {
                201 => Ok(()),
                _ => Err(format!("create answered {code}: {body}")),
            },
        )
        .await;
        ctx.request(
            "list configmaps",
            false,
            c.get(url("/api/v1/namespaces/default/configmaps")),
            "ConfigMapList",
            no_check,
        )
        .await;
        ctx.request("/apis", false, c.get(url("/apis")), "APIGroupList", groups)
            .await;
        ctx.request("/api", false, c.get(url("/api")), "APIVersions", no_check)
            .await;
        ctx.request(
            "/apis/rbac.authorization.k8s.io/v1",
            false,
            c.get(url("/apis/rbac.authorization.k8s.io/v1")),
            "APIResourceList",
            no_check,
        )
        .await;
        ctx.request(
            "aggregated discovery",
            false,
            c.get(url("/apis")).header(
                "Accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            ),
            "APIGroupDiscoveryList",
            no_check,
        )
        .await;
    }
}

impl Load {
    /// Starts `workers` workers and `watchers` watchers through `server`'s aggregator, half of
    /// each on HTTP/1.1 and half on HTTP/2, and a client of main's own groups on each.
    pub fn start(
        rt: &tokio::runtime::Handle,
        server: &Server,
        workers: usize,
        watchers: usize,
    ) -> Load {
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = watch::channel(false);
        let ctx = |name: String, http2: bool| Ctx {
            name,
            client: admin_client(server, http2),
            base: server.base.clone(),
            http2,
            shared: Arc::clone(&shared),
            stop: stopped.clone(),
        };
        let mut tasks = Vec::new();
        for id in 0..workers {
            let c = ctx(format!("worker-{id}"), id % 2 == 1);
            tasks.push(rt.spawn(worker(id, c)));
        }
        for id in 0..watchers {
            let c = ctx(format!("watcher-{id}"), id % 2 == 1);
            tasks.push(rt.spawn(watcher(id, c)));
        }
        for (name, http2) in [("own-h1", false), ("own-h2", true)] {
            tasks.push(rt.spawn(own_groups(ctx(name.into(), http2))));
        }
        Load {
            shared,
            stop,
            tasks,
        }
    }

    /// The flunders whose create was answered `201` so far.
    pub fn acknowledged(&self) -> BTreeSet<String> {
        lock(&self.shared.acknowledged).clone()
    }

    /// Every request so far.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.shared.records).clone()
    }

    /// Every watch so far.
    pub fn watches(&self) -> Vec<WatchRecord> {
        lock(&self.shared.watches).clone()
    }

    /// How many watches are open now.
    pub fn open_watches(&self) -> usize {
        lock(&self.shared.watches)
            .iter()
            .filter(|w| w.ended.is_none())
            .count()
    }

    /// Stops the load (every task within a bound; a task's panic fails the test) and reports
    /// what it did.
    pub fn stop(self, rt: &tokio::runtime::Runtime) -> Report {
        let _ = self.stop.send(true);
        rt.block_on(async {
            for task in self.tasks {
                match tokio::time::timeout(STOP_BOUND, task).await {
                    Err(_) => panic!("a task of the load did not stop within {STOP_BOUND:?}"),
                    Ok(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Ok(_) => {}
                }
            }
        });
        Report {
            records: lock(&self.shared.records).clone(),
            watches: lock(&self.shared.watches).clone(),
            acknowledged: lock(&self.shared.acknowledged).clone(),
        }
    }
}

/// Waits (polling, up to `bound`) until `done` holds; fails naming `what` after that.
pub fn wait_until(bound: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + bound;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {bound:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many file descriptors process `pid` has open.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/fd: {e}"))
        .count()
}

/// The TCP connections process `pid` holds to remote port `port`, by state (`01` established,
/// `08` close-wait, … as `/proc/net/tcp` writes them).
pub fn sockets_to(pid: u32, port: u16) -> Vec<String> {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/fd: {e}"))
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            link.strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
                .map(str::to_string)
        })
        .collect();
    let port = format!("{port:04X}");
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9
                && fields[2].rsplit(':').next() == Some(port.as_str())
                && inodes.contains(fields[9])
            {
                out.push(fields[3].to_string());
            }
        }
    }
    out
}
