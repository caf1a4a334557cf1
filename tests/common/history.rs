//! The history recorder of the fault tests (issue 11): concurrent clients drive real servers over
//! HTTPS with ConfigMap operations on a small contended key set, watchers open watches at many
//! points, and every call, answer and delivered event is recorded with real times into a
//! [`checker::history::History`] for `checker::check`.
//!
//! Each client is one sequential actor (a tokio task) that picks its next operation at random
//! from a seeded generator (the seed is printed; `APIARY_HISTORY_SEED` replays the choices,
//! though not the interleaving). Every written value is unique (`c{client}-{seq}` in
//! `data.v`), so a read or an event names the write it shows. Clients are spread over the
//! [`Targets`] (replicas); a test replaces a target when it restarts a server.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use checker::history::{
    ChangeKind, History, Input, Operation, Output, Rv, WatchEvent, WatchRecord, WatchStart,
};
use serde_json::{Value, json};

use super::Server;

pub mod report;
mod watch;

use report::Counts;

/// How long one request may take before it is recorded as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client waits after an operation without an answer (the server or its storage is
/// away), so a fault does not fill the history with failed calls.
const BACKOFF: Duration = Duration::from_millis(250);

/// The annotation on the bookmark that ends a watch's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// A small deterministic generator (SplitMix64): the operation choices of a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A duration in `0..max`.
    pub fn duration(&mut self, max: Duration) -> Duration {
        Duration::from_micros(self.below(max.as_micros().max(1) as u64))
    }
}

/// The run's seed: `APIARY_HISTORY_SEED` if set, otherwise from the clock; printed either way.
pub fn seed() -> u64 {
    let seed = match std::env::var("APIARY_HISTORY_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("APIARY_HISTORY_SEED={s}: {e}")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default(),
    };
    println!("history seed {seed} (replay the choices with APIARY_HISTORY_SEED={seed})");
    seed
}

/// One server the recorder talks to: its URL and an admin client for it.
#[derive(Clone)]
pub struct Endpoint {
    client: reqwest::Client,
    base: String,
}

impl Endpoint {
    /// The admin client and URL of `server`.
    pub fn of(server: &Server) -> Endpoint {
        Endpoint {
            client: server.admin(),
            base: server.url(""),
        }
    }
}

/// The servers (replicas) the recorder's clients and watchers are spread over; a test replaces
/// one when it restarts that server (which comes back on a new port).
#[derive(Clone)]
pub struct Targets(Arc<RwLock<Vec<Endpoint>>>);

impl Targets {
    /// The targets `servers`, in order.
    pub fn new(servers: &[&Server]) -> Targets {
        Targets(Arc::new(RwLock::new(
            servers.iter().map(|s| Endpoint::of(s)).collect(),
        )))
    }

    /// Points target `index` at `server` (after a restart).
    pub fn replace(&self, index: usize, server: &Server) {
        let mut targets = self.0.write().unwrap_or_else(|e| e.into_inner());
        targets[index] = Endpoint::of(server);
    }

    fn len(&self) -> usize {
        self.0.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The endpoint of target `index` (modulo the number of targets).
    fn get(&self, index: usize) -> Endpoint {
        let targets = self.0.read().unwrap_or_else(|e| e.into_inner());
        targets[index % targets.len()].clone()
    }
}

/// The shape of a recorded run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Concurrent clients (each a sequential actor).
    pub clients: usize,
    /// Concurrent watchers (each opens one watch after another).
    pub watchers: usize,
    /// The contended ConfigMap names (`k0`, `k1`, …).
    pub keys: usize,
    /// The namespace of every object.
    pub namespace: String,
    /// A client waits a random time below this between two operations.
    pub pace: Duration,
    /// Each watch is read for a random time below this (at least a second).
    pub watch_for: Duration,
    /// Whether any resourceVersion seen before the end may have expired by then: the storage
    /// compacts during the run, or a storage fault may make a watch cache relist (and so
    /// forget its history) at a time the test cannot observe. The history then records as
    /// compacted the resourceVersion of the final list.
    pub expires: bool,
    /// Bytes of padding (`data.pad`, not part of the recorded value) in the padded creates,
    /// updates and patches, to fill a disk; 0 for none.
    pub padding: usize,
    /// The percentage of a client's creates, updates and patches that carry the padding.
    pub padded_percent: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            clients: 6,
            watchers: 6,
            keys: 12,
            namespace: "default".into(),
            pace: Duration::from_millis(20),
            watch_for: Duration::from_secs(5),
            expires: false,
            padding: 0,
            padded_percent: 0,
        }
    }
}

/// State shared by the recorder's tasks.
struct Shared {
    origin: Instant,
    targets: Targets,
    config: Config,
    operations: Mutex<Vec<Operation>>,
    watches: Mutex<Vec<WatchRecord>>,
    /// Every resourceVersion returned or delivered so far (watches resume from them).
    seen: Mutex<Vec<Rv>>,
    /// The resourceVersions of delivered bookmarks.
    bookmarks: Mutex<Vec<Rv>>,
    compacted: Mutex<Option<Rv>>,
    /// Answers the recorder could not map (a server or recorder bug); the run fails on any.
    unexpected: Mutex<Vec<String>>,
    /// The statuses of the answers that said nothing certain (5xx), by code.
    failures: Mutex<BTreeMap<u16, usize>>,
    /// Watch requests that got no answer at all (not recorded: nothing was delivered).
    unopened: AtomicUsize,
    next_watch: AtomicUsize,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    fn now(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.config.namespace)
    }

    fn collection(&self, endpoint: &Endpoint) -> String {
        format!(
            "{}/api/v1/namespaces/{}/configmaps",
            endpoint.base, self.config.namespace
        )
    }

    fn saw(&self, rv: Rv) {
        lock(&self.seen).push(rv);
    }

    fn unexpected(&self, what: String) {
        lock(&self.unexpected).push(what);
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// A resourceVersion picked from those seen, or `None` before any.
    fn seen_rv(&self, rng: &mut Rng) -> Option<Rv> {
        let seen = lock(&self.seen);
        (!seen.is_empty()).then(|| seen[rng.below(seen.len() as u64) as usize])
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records one run: start it, inject faults while it runs, [`Recorder::finish`] it.
pub struct Recorder {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// The object name of a key `namespace/name`.
fn name_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// The `data` of a write of `value`, with `pad` bytes of padding beside it (none when 0).
fn data(value: &str, pad: usize) -> Value {
    if pad == 0 {
        json!({ "v": value })
    } else {
        json!({ "v": value, "pad": "p".repeat(pad) })
    }
}

/// The HTTP request of an operation, its writes padded with `pad` bytes.
fn request(
    shared: &Shared,
    endpoint: &Endpoint,
    input: &Input,
    pad: usize,
) -> reqwest::RequestBuilder {
    let collection = shared.collection(endpoint);
    let client = &endpoint.client;
    let builder = match input {
        Input::Create { key, value } => client.post(&collection).json(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name_of(key)}, "data": data(value, pad),
        })),
        Input::Get { key, from_cache } => {
            let query = if *from_cache {
                "?resourceVersion=0"
            } else {
                ""
            };
            client.get(format!("{collection}/{}{query}", name_of(key)))
        }
        Input::Update {
            key,
            value,
            precondition,
        } => {
            let mut metadata = json!({"name": name_of(key)});
            if let Some(rv) = precondition {
                metadata["resourceVersion"] = json!(rv.to_string());
            }
            client
                .put(format!("{collection}/{}", name_of(key)))
                .json(&json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": metadata, "data": data(value, pad),
                }))
        }
        Input::Patch { key, value } => client
            .patch(format!("{collection}/{}", name_of(key)))
            .header("content-type", "application/merge-patch+json")
            .body(json!({ "data": data(value, pad) }).to_string()),
        Input::Delete { key, precondition } => {
            let mut options = json!({"apiVersion": "v1", "kind": "DeleteOptions"});
            if let Some(rv) = precondition {
                options["preconditions"] = json!({"resourceVersion": rv.to_string()});
            }
            client
                .delete(format!("{collection}/{}", name_of(key)))
                .json(&options)
        }
        Input::List { from_cache, .. } => {
            let query = if *from_cache {
                "?resourceVersion=0"
            } else {
                ""
            };
            client.get(format!("{collection}{query}"))
        }
    };
    builder.timeout(REQUEST_TIMEOUT)
}

fn resource_version(object: &Value) -> Option<Rv> {
    object["metadata"]["resourceVersion"].as_str()?.parse().ok()
}

fn value_of(object: &Value) -> String {
    object["data"]["v"].as_str().unwrap_or_default().to_string()
}

/// What a 200, 201 or 202 says, for the operation asked; `None` when the body is not what that
/// operation answers.
fn success(shared: &Shared, input: &Input, body: &Value) -> Option<Output> {
    match input {
        Input::Create { .. } | Input::Update { .. } | Input::Patch { .. } => {
            Some(Output::Written {
                rv: resource_version(body)?,
            })
        }
        Input::Get { .. } => Some(Output::Found {
            rv: resource_version(body)?,
            value: value_of(body),
        }),
        Input::List { .. } => {
            let items = body["items"]
                .as_array()?
                .iter()
                .map(|item| {
                    let name = item["metadata"]["name"].as_str()?;
                    Some((shared.key(name), resource_version(item)?, value_of(item)))
                })
                .collect::<Option<Vec<_>>>()?;
            Some(Output::Listed {
                rv: resource_version(body)?,
                items,
            })
        }
        Input::Delete { .. } => {
            if let Some(rv) = resource_version(body) {
                // The deleted object, as kube-apiserver answers for kinds that return it.
                return Some(Output::Written { rv });
            }
            // A ConfigMap's delete is answered, as by kube-apiserver (its store does not set
            // ReturnDeletedObject), with a success Status that carries no resourceVersion:
            // the delete took effect between call and return, at a resourceVersion it does
            // not tell.
            (body["kind"] == "Status" && body["status"] == "Success").then_some(Output::Deleted)
        }
    }
}

/// Sends an operation (its write padded with `pad` bytes) and records it; returns its output.
async fn perform(
    shared: &Shared,
    client: usize,
    endpoint: &Endpoint,
    input: Input,
    pad: usize,
) -> Output {
    let call = shared.now();
    let answer = match request(shared, endpoint, &input, pad).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            response.bytes().await.ok().map(|body| (status, body))
        }
        Err(_) => None,
    };
    let (ret, output) = match answer {
        // No answer (or not all of it): the operation may take effect at any time.
        None => (None, Output::Unknown),
        Some((status, body)) => {
            let ret = shared.now();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let output = match status {
                200..=202 => success(shared, &input, &body),
                404 => Some(Output::NotFound),
                409 => match body["reason"].as_str() {
                    Some("AlreadyExists") => Some(Output::AlreadyExists),
                    Some("Conflict") => Some(Output::Conflict),
                    _ => None,
                },
                400 | 403 | 422 | 429 => Some(Output::Rejected),
                500..=599 => {
                    *lock(&shared.failures).entry(status).or_default() += 1;
                    Some(Output::Unknown)
                }
                _ => None,
            };
            let output = output.unwrap_or_else(|| {
                shared.unexpected(format!("{input:?} answered {status}: {body}"));
                Output::Unknown
            });
            (Some(ret), output)
        }
    };
    match &output {
        Output::Written { rv } | Output::Found { rv, .. } => shared.saw(*rv),
        Output::Listed { rv, items } => {
            shared.saw(*rv);
            for (_, rv, _) in items {
                shared.saw(*rv);
            }
        }
        _ => {}
    }
    lock(&shared.operations).push(Operation {
        client,
        call,
        ret,
        input,
        output: output.clone(),
    });
    output
}

/// One client: operations one after another until the run stops.
async fn run_client(shared: Arc<Shared>, client: usize, mut rng: Rng) {
    // The resourceVersion this client last saw of each key (its update and delete
    // preconditions).
    let mut last: HashMap<String, Rv> = HashMap::new();
    let mut seq = 0u64;
    while !shared.stopped() {
        let endpoint = shared.targets.get(client);
        let key = shared.key(&format!("k{}", rng.below(shared.config.keys as u64)));
        seq += 1;
        let value = format!("c{client}-{seq}");
        let precondition = last.get(&key).copied().or_else(|| shared.seen_rv(&mut rng));
        let input = match rng.below(100) {
            0..15 => Input::Create { key, value },
            15..27 => Input::Get {
                key,
                from_cache: false,
            },
            27..35 => Input::Get {
                key,
                from_cache: true,
            },
            35..47 => Input::Update {
                key,
                value,
                precondition,
            },
            47..55 => Input::Update {
                key,
                value,
                precondition: None,
            },
            55..67 => Input::Patch { key, value },
            67..73 => Input::Delete { key, precondition },
            73..79 => Input::Delete {
                key,
                precondition: None,
            },
            79..90 => Input::List {
                prefix: shared.key(""),
                from_cache: false,
            },
            _ => Input::List {
                prefix: shared.key(""),
                from_cache: true,
            },
        };
        let key = input.key().map(str::to_string);
        let padded = shared.config.padding > 0 && rng.below(100) < shared.config.padded_percent;
        let pad = if padded { shared.config.padding } else { 0 };
        let output = perform(&shared, client, &endpoint, input, pad).await;
        match (&output, key) {
            (Output::Written { rv } | Output::Found { rv, .. }, Some(key)) => {
                last.insert(key, *rv);
            }
            (Output::NotFound, Some(key)) => {
                last.remove(&key);
            }
            (Output::Listed { items, .. }, None) => {
                for (key, rv, _) in items {
                    last.insert(key.clone(), *rv);
                }
            }
            _ => {}
        }
        let pause = if output == Output::Unknown {
            BACKOFF
        } else {
            rng.duration(shared.config.pace)
        };
        tokio::time::sleep(pause).await;
    }
}

impl Recorder {
    /// Starts the clients and watchers of `config` against `targets`, with choices from
    /// `seed`, once every target's watch cache is warm ([`Recorder::warm`]).
    pub async fn start(targets: Targets, config: Config, seed: u64) -> Recorder {
        let (stop, _) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared {
            origin: Instant::now(),
            targets,
            config,
            operations: Mutex::default(),
            watches: Mutex::default(),
            seen: Mutex::default(),
            bookmarks: Mutex::default(),
            compacted: Mutex::default(),
            unexpected: Mutex::default(),
            failures: Mutex::default(),
            unopened: AtomicUsize::new(0),
            next_watch: AtomicUsize::new(0),
            stop,
        });
        let mut recorder = Recorder {
            shared,
            tasks: Vec::new(),
        };
        recorder.warm().await;
        let shared = recorder.shared.clone();
        let mut rng = Rng::new(seed);
        let mut tasks = Vec::new();
        for client in 0..shared.config.clients {
            let rng = Rng::new(rng.next_u64());
            tasks.push(tokio::spawn(run_client(shared.clone(), client, rng)));
        }
        for watcher in 0..shared.config.watchers {
            let rng = Rng::new(rng.next_u64());
            tasks.push(tokio::spawn(watch::run_watcher(
                shared.clone(),
                watcher,
                rng,
            )));
        }
        recorder.tasks = tasks;
        recorder
    }

    /// The client id of the harness's own operations on target `index` (after the clients').
    fn harness(&self, index: usize) -> usize {
        self.shared.config.clients + index
    }

    /// Performs `input` on target `index` as the harness, retrying (each try recorded) until
    /// it is answered; panics after 30 s without an answer.
    async fn answered(&self, index: usize, input: Input) -> Output {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let endpoint = self.shared.targets.get(index);
            let output = perform(
                &self.shared,
                self.harness(index),
                &endpoint,
                input.clone(),
                0,
            )
            .await;
            if output != Output::Unknown {
                return output;
            }
            assert!(
                Instant::now() < deadline,
                "{input:?} on target {index} got no answer for 30 s"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Lists with `resourceVersion=0` on every target (recorded), which starts each server's
    /// ConfigMap watch cache and returns once it holds its initial list; returns the highest
    /// list resourceVersion. A watch cache that (re)started serves no watch from before its
    /// initial list (410, as kube-apiserver's cacher): see [`Recorder::expired_below`].
    pub async fn warm(&self) -> Rv {
        let mut highest = 0;
        for index in 0..self.shared.targets.len() {
            let list = Input::List {
                prefix: self.shared.key(""),
                from_cache: true,
            };
            match self.answered(index, list).await {
                Output::Listed { rv, .. } => highest = highest.max(rv),
                other => panic!("the warm-up list on target {index} answered {other:?}"),
            }
        }
        highest
    }

    /// The recorder's clock: nanoseconds since the run's origin, as in the history.
    pub fn now(&self) -> u64 {
        self.shared.now()
    }

    /// Records that watches from below `rv` may be refused with 410 Gone from now on (the
    /// storage was compacted there, or a watch cache restarted with its initial list there).
    pub fn expired_below(&self, rv: Rv) {
        let mut compacted = lock(&self.shared.compacted);
        *compacted = Some(compacted.map_or(rv, |c| c.max(rv)));
    }

    /// Stops the clients and watchers, then reads the final state on every target (a
    /// consistent list and a consistent GET of every key, recorded, so a lost acknowledged write
    /// shows as a violation) and returns the history.
    pub async fn finish(mut self) -> History {
        self.shared.stop.send_replace(true);
        for task in std::mem::take(&mut self.tasks) {
            task.await
                .unwrap_or_else(|e| panic!("a recorder task failed: {e}"));
        }
        for index in 0..self.shared.targets.len() {
            let list = Input::List {
                prefix: self.shared.key(""),
                from_cache: false,
            };
            if let Output::Listed { rv, .. } = self.answered(index, list).await
                && self.shared.config.expires
            {
                self.expired_below(rv);
            }
            for k in 0..self.shared.config.keys {
                let get = Input::Get {
                    key: self.shared.key(&format!("k{k}")),
                    from_cache: false,
                };
                self.answered(index, get).await;
            }
        }
        let unexpected = lock(&self.shared.unexpected).clone();
        assert!(
            unexpected.is_empty(),
            "{} answers the recorder could not map:\n{}",
            unexpected.len(),
            unexpected[..unexpected.len().min(20)].join("\n")
        );
        let failures = lock(&self.shared.failures).clone();
        if !failures.is_empty() {
            println!("answers without an outcome, by status: {failures:?}");
        }
        let unopened = self.shared.unopened.load(Ordering::Relaxed);
        if unopened > 0 {
            println!("{unopened} watch requests got no answer (not recorded)");
        }
        History {
            operations: std::mem::take(&mut *lock(&self.shared.operations)),
            watches: std::mem::take(&mut *lock(&self.shared.watches)),
            compacted: *lock(&self.shared.compacted),
        }
    }
}

/// Asserts that a run exercised what it is meant to check: acknowledged writes of every kind,
/// reads that found objects, conflicts, lists, and watches that delivered changes and ended
/// their initial events.
pub fn assert_exercised(counts: &Counts) {
    for output in ["written", "found", "listed", "not-found", "conflict"] {
        assert!(
            counts.output(output) > 0,
            "no {output} operation:\n{counts}"
        );
    }
    for input in ["create", "update rv", "update", "patch"] {
        assert!(
            counts.operations.contains_key(&(input, "written")),
            "no acknowledged {input}:\n{counts}"
        );
    }
    for event in ["added", "modified", "deleted", "initial-events-end"] {
        assert!(counts.event(event) > 0, "no {event} watch event:\n{counts}");
    }
}

/// Asserts that a fault from `from` to `to` (recorder times) was felt by the clients: some
/// operation in flight during it got no answer, was answered only once the fault was over, or
/// failed with a 5xx.
pub fn assert_fault_felt(history: &History, from: u64, to: u64) {
    let during: Vec<&Operation> = history
        .operations
        .iter()
        .filter(|op| op.call < to && op.ret.is_none_or(|ret| ret > from))
        .collect();
    let felt = during
        .iter()
        .filter(|op| op.ret.is_none_or(|ret| ret >= to) || op.output == Output::Unknown)
        .count();
    println!(
        "fault of {:?}: {felt} of the {} operations in flight during it failed or waited for its end",
        Duration::from_nanos(to - from),
        during.len()
    );
    assert!(
        felt > 0,
        "no operation felt the fault from {from} to {to} ns ({} in flight during it)",
        during.len()
    );
}

/// Checks `history` with `checker::check`, printing its counts; on a violation writes the
/// history (Debug) to a file under the system's temporary directory and panics with the
/// violations, the file and the seed.
pub fn check(name: &str, history: &History, seed: u64) -> Counts {
    let counts = Counts::of(history);
    println!("{name}: {counts}");
    match checker::check(history) {
        Ok(summary) => println!("{name}: checked {summary}"),
        Err(failure) => {
            let path: PathBuf =
                std::env::temp_dir().join(format!("apiary-history-{name}-{seed}.txt"));
            let written = std::fs::write(&path, format!("{history:#?}\n"));
            panic!(
                "{name}: the history broke the contract (seed {seed}, replay the choices with \
                 APIARY_HISTORY_SEED={seed}; history in {} {written:?}):\n{failure}",
                path.display()
            );
        }
    }
    counts
}
