//! Request metrics in Prometheus text form at `/metrics`: `apiserver_request_total` and
//! `apiserver_request_duration_seconds` labelled by verb, group, version, resource and code.
//! Label values come from fixed sets (known verbs, installed resources, numeric codes), so a
//! client cannot grow the series count with made-up paths.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use http::Response;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::filters::ChainConfig;
use crate::request_info::RequestInfo;

type Labels = Vec<(&'static str, String)>;

fn new_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The metric families and the set of resources that may appear as label values.
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    known: HashSet<(String, String, String)>,
}

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

impl Metrics {
    /// Creates the metrics; `known` lists (group, version, resource) triples served.
    pub fn new(known: HashSet<(String, String, String)>) -> Self {
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
        Self {
            registry,
            requests,
            durations,
            known,
        }
    }

    fn labels(&self, info: Option<&RequestInfo>, method: &http::Method, apply: bool) -> Labels {
        let (verb, group, version, resource) = match info {
            Some(i) if i.is_resource_request => {
                let verb = match i.verb.as_str() {
                    "create" => "POST".to_string(),
                    "update" => "PUT".to_string(),
                    "patch" if apply => "APPLY".to_string(),
                    other => other.to_ascii_uppercase(),
                };
                let key = (
                    i.api_group.clone(),
                    i.api_version.clone(),
                    i.resource.clone(),
                );
                if self.known.contains(&key) {
                    (verb, key.0, key.1, key.2)
                } else {
                    (verb, String::new(), String::new(), String::new())
                }
            }
            _ => (
                method.as_str().to_string(),
                String::new(),
                String::new(),
                String::new(),
            ),
        };
        let verb = if VERBS.contains(&verb.as_str()) {
            verb
        } else {
            "other".to_string()
        };
        vec![
            ("verb", verb),
            ("group", group),
            ("version", version),
            ("resource", resource),
        ]
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
        let labels = self.labels(info, method, apply);
        self.durations.get_or_create(&labels).observe(seconds);
        let mut with_code = labels;
        with_code.push(("code", code.to_string()));
        self.requests.get_or_create(&with_code).inc();
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

/// The filter that records every request.
pub async fn filter(
    State(config): State<Arc<ChainConfig>>,
    req: Request,
    next: Next,
) -> Response<Body> {
    let started = Instant::now();
    let info = req.extensions().get::<RequestInfo>().cloned();
    let method = req.method().clone();
    let apply = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/apply-patch"));
    let resp = next.run(req).await;
    config.metrics.observe(
        info.as_ref(),
        &method,
        apply,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    resp
}
