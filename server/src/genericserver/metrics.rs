//! Request metrics in Prometheus text form at `/metrics`: `apiserver_request_total` and
//! `apiserver_request_duration_seconds` labelled by verb, group, version, resource and code.
//! Two gauges are read when `/metrics` is rendered: `apiserver_registered_watchers` (as
//! kube-apiserver's: the watchers the watch caches serve, labelled with group, version and kind;
//! here the version is the kind's storage version, the cache's), and
//! `apiary_runtime_alive_tasks` (the Tokio runtime's alive tasks, apiary's own: a leak of tasks
//! shows as a count that does not return to its idle value).
//! Label values come from fixed sets (known verbs, installed resources, numeric codes), so a
//! client cannot grow the series count with made-up paths.
//!
//! Every (verb, resource) pair has a precomputed slot that holds handles to its series once they
//! exist, so recording a request neither formats labels nor hashes them; a series still appears in
//! the output only after its first observation.

use std::sync::OnceLock;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::request_info::RequestInfo;

type Labels = Vec<(&'static str, String)>;

/// Registers an installed group's metrics (see
/// [`GenericServer::add_metrics`](super::GenericServer::add_metrics)).
pub type MetricsFn = std::sync::Arc<dyn Fn(&mut Registry) + Send + Sync>;

fn new_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The verb label values; any other verb is recorded as `other` (the last slot).
const VERBS: [&str; 12] = [
    "GET",
    "LIST",
    "WATCH",
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
    "HEAD",
    "OPTIONS",
    "CONNECT",
];
/// The verb label of requests whose verb is not in [`VERBS`].
const OTHER_VERB: &str = "other";

/// Response codes whose request counters are kept in every slot; other codes look their series
/// up by label.
const CODES: [u16; 16] = [
    200, 201, 202, 204, 400, 401, 403, 404, 405, 406, 409, 410, 413, 415, 422, 429,
];

/// The handles of one (verb, resource) pair, filled on first use.
#[derive(Default)]
struct Slot {
    duration: OnceLock<Histogram>,
    requests: [OnceLock<Counter>; CODES.len()],
}

/// Where a request's observation goes: its slot in the table. Computed before the request is
/// handled, from facts that do not change while it is.
#[derive(Clone, Copy, Debug)]
pub struct Series {
    verb: usize,
    resource: Option<usize>,
}

/// The metric families and the set of resources that may appear as label values.
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    /// The (resource, group, version) triples served, sorted (resource first: it tells most
    /// entries apart at the first comparison).
    known: Vec<(String, String, String)>,
    /// `(VERBS.len() + 1) × (known.len() + 1)` slots, verb-major; the last resource column is
    /// for requests without a known resource.
    slots: Box<[Slot]>,
    /// The audit log's counters (`apiserver_audit_event_total`,
    /// `apiserver_audit_error_total{plugin="log"}`).
    pub audit: crate::audit::log::LogCounters,
    watchers: Family<Labels, Gauge>,
    alive_tasks: Gauge,
}

impl Metrics {
    /// Creates the metrics; `known` lists (group, version, resource) triples served.
    pub fn new(known: impl IntoIterator<Item = (String, String, String)>) -> Self {
        Self::with_extra(known, &[])
    }

    /// Creates the metrics with those the installed groups register (`extra`, after the
    /// request and audit metrics).
    pub fn with_extra(
        known: impl IntoIterator<Item = (String, String, String)>,
        extra: &[MetricsFn],
    ) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<Labels, Counter>::default();
        let durations =
            Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(new_histogram);
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, group, version, resource and HTTP response code",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version and resource",
            durations.clone(),
        );
        let audit = crate::audit::log::LogCounters::default();
        registry.register(
            "apiserver_audit_event",
            "Counter of audit events generated and sent to the audit backend",
            audit.events.clone(),
        );
        let audit_errors = Family::<Labels, Counter>::default();
        registry.register(
            "apiserver_audit_error",
            "Counter of audit events that failed to be audited properly, by plugin",
            audit_errors.clone(),
        );
        let audit = crate::audit::log::LogCounters {
            errors: audit_errors
                .get_or_create(&vec![("plugin", "log".to_string())])
                .clone(),
            ..audit
        };
        for register in extra {
            register(&mut registry);
        }
        let watchers = Family::<Labels, Gauge>::default();
        registry.register(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            watchers.clone(),
        );
        let alive_tasks = Gauge::default();
        registry.register(
            "apiary_runtime_alive_tasks",
            "Number of alive tasks of the server's Tokio runtime",
            alive_tasks.clone(),
        );
        let mut known: Vec<_> = known
            .into_iter()
            .map(|(group, version, resource)| (resource, group, version))
            .collect();
        known.sort();
        known.dedup();
        let slots = (0..(VERBS.len() + 1) * (known.len() + 1))
            .map(|_| Slot::default())
            .collect();
        Self {
            registry,
            requests,
            durations,
            known,
            slots,
            audit,
            watchers,
            alive_tasks,
        }
    }

    /// Sets the gauges read at render time: the watchers of each kind's watch cache, and the
    /// runtime's alive tasks.
    pub fn set_gauges<'a>(
        &self,
        watchers: impl IntoIterator<Item = (&'a apimachinery::resource::ResourceInfo, usize)>,
        alive_tasks: usize,
    ) {
        for (info, count) in watchers {
            let labels = vec![
                ("group", info.group.to_string()),
                ("version", info.version.to_string()),
                ("kind", info.kind.to_string()),
            ];
            self.watchers
                .get_or_create(&labels)
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        self.alive_tasks
            .set(i64::try_from(alive_tasks).unwrap_or(i64::MAX));
    }

    /// The index in [`VERBS`] (or `VERBS.len()` for `other`) of a verb label.
    fn verb_index(label: &str) -> usize {
        VERBS
            .iter()
            .position(|v| *v == label)
            .unwrap_or(VERBS.len())
    }

    /// The series of a request: a resource request of a served resource is labelled with its
    /// verb (`create` → `POST`, `update` → `PUT`, an apply patch → `APPLY`, others upper-cased)
    /// and resource; any other request with its HTTP method and empty resource labels.
    pub fn series(&self, info: &RequestInfo, method: &http::Method, apply: bool) -> Series {
        if !info.is_resource_request {
            return Series {
                verb: Self::verb_index(method.as_str()),
                resource: None,
            };
        }
        let verb = match info.verb.as_str() {
            "get" => 0,
            "list" => 1,
            "watch" => 2,
            "create" => 3,
            "update" => 4,
            "patch" if apply => 6,
            "patch" => 5,
            "delete" => 7,
            "deletecollection" => 8,
            other => Self::verb_index(&other.to_ascii_uppercase()),
        };
        let key = (
            info.resource.as_str(),
            info.api_group.as_str(),
            info.api_version.as_str(),
        );
        let resource = self
            .known
            .binary_search_by(|(r, g, v)| (r.as_str(), g.as_str(), v.as_str()).cmp(&key))
            .ok();
        Series { verb, resource }
    }

    fn labels(&self, series: Series) -> Labels {
        let verb = VERBS.get(series.verb).copied().unwrap_or(OTHER_VERB);
        let (group, version, resource) = series
            .resource
            .and_then(|i| self.known.get(i))
            .map(|(r, g, v)| (g.clone(), v.clone(), r.clone()))
            .unwrap_or_default();
        vec![
            ("verb", verb.to_string()),
            ("group", group),
            ("version", version),
            ("resource", resource),
        ]
    }

    fn slot(&self, series: Series) -> Option<&Slot> {
        let column = series.resource.unwrap_or(self.known.len());
        self.slots
            .get(series.verb.min(VERBS.len()) * (self.known.len() + 1) + column)
    }

    /// Records one finished request of `series`.
    pub fn record(&self, series: Series, code: u16, seconds: f64) {
        let Some(slot) = self.slot(series) else {
            return;
        };
        slot.duration
            .get_or_init(|| self.durations.get_or_create(&self.labels(series)).clone())
            .observe(seconds);
        let with_code = || {
            let mut labels = self.labels(series);
            labels.push(("code", code.to_string()));
            labels
        };
        match CODES.iter().position(|c| *c == code) {
            Some(i) => slot.requests[i]
                .get_or_init(|| self.requests.get_or_create(&with_code()).clone())
                .inc(),
            None => self.requests.get_or_create(&with_code()).inc(),
        };
    }

    /// Records one finished request.
    pub fn observe(
        &self,
        info: Option<&RequestInfo>,
        method: &http::Method,
        apply: bool,
        code: u16,
        seconds: f64,
    ) {
        let series = match info {
            Some(info) => self.series(info, method, apply),
            None => self.series(&RequestInfo::default(), method, apply),
        };
        self.record(series, code, seconds);
    }

    /// Renders every metric in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Whether a request is a server-side apply patch (`application/apply-patch+yaml`), which the
/// metrics label `APPLY`.
pub fn is_apply(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/apply-patch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: http::Method, path: &str) -> RequestInfo {
        RequestInfo::parse(&method, path, "").unwrap_or_default()
    }

    #[test]
    fn series_are_labelled_as_before() {
        let m = Metrics::new([(String::new(), "v1".to_string(), "configmaps".to_string())]);
        let get = info(http::Method::GET, "/api/v1/namespaces/a/configmaps/b");
        for _ in 0..3 {
            m.observe(Some(&get), &http::Method::GET, false, 200, 0.001);
        }
        m.observe(Some(&get), &http::Method::GET, false, 404, 0.001);
        m.observe(Some(&get), &http::Method::GET, false, 599, 0.001);
        let patch = info(http::Method::PATCH, "/api/v1/namespaces/a/configmaps/b");
        m.observe(Some(&patch), &http::Method::PATCH, true, 200, 0.001);
        let unknown = info(http::Method::POST, "/api/v1/namespaces/a/madeup");
        m.observe(Some(&unknown), &http::Method::POST, false, 404, 0.001);
        let path = info(http::Method::GET, "/healthz");
        m.observe(Some(&path), &http::Method::GET, false, 200, 0.001);
        m.observe(None, &http::Method::TRACE, false, 405, 0.001);
        let text = m.render();
        for line in [
            r#"apiserver_request_total{verb="GET",group="",version="v1",resource="configmaps",code="200"} 3"#,
            r#"apiserver_request_total{verb="GET",group="",version="v1",resource="configmaps",code="404"} 1"#,
            r#"apiserver_request_total{verb="GET",group="",version="v1",resource="configmaps",code="599"} 1"#,
            r#"apiserver_request_total{verb="APPLY",group="",version="v1",resource="configmaps",code="200"} 1"#,
            r#"apiserver_request_total{verb="POST",group="",version="",resource="",code="404"} 1"#,
            r#"apiserver_request_total{verb="GET",group="",version="",resource="",code="200"} 1"#,
            r#"apiserver_request_total{verb="other",group="",version="",resource="",code="405"} 1"#,
            r#"apiserver_request_duration_seconds_count{verb="GET",group="",version="v1",resource="configmaps"} 5"#,
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        assert!(!text.contains("LIST"), "{text}");
    }
}
