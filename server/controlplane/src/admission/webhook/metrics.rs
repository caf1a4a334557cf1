//! The webhook metrics kube-apiserver exports, by webhook name, type (`admit` for mutating,
//! `validating`) and operation: calls with their latency, and rejections.
//!
//! They are process-wide, as kube-apiserver's legacy registry is; the server's `/metrics`
//! registers them beside its own.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

fn new_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The webhook metric families.
pub struct WebhookMetrics {
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    rejections: Family<Labels, Counter>,
}

/// The process's webhook metrics.
pub static METRICS: LazyLock<WebhookMetrics> = LazyLock::new(|| WebhookMetrics {
    requests: Family::default(),
    durations: Family::new_with_constructor(new_histogram),
    rejections: Family::default(),
});

/// How one call ended, for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The webhook allowed the request.
    Allowed,
    /// The webhook denied it with this code.
    Denied(u16),
    /// The call failed and the webhook fails closed.
    FailedClosed,
    /// The call failed and the webhook fails open.
    FailedOpen,
}

impl WebhookMetrics {
    /// Registers the families in a server's registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code.",
            self.requests.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validating or admit).",
            self.durations.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_rejection",
            "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400).",
            self.rejections.clone(),
        );
    }

    /// Records one call of webhook `name`.
    pub fn record(
        &self,
        name: &str,
        mutating: bool,
        operation: &str,
        outcome: Outcome,
        took: Duration,
    ) {
        let kind = if mutating { "admit" } else { "validating" };
        let rejected = matches!(outcome, Outcome::Denied(_) | Outcome::FailedClosed);
        let code = match outcome {
            Outcome::Allowed | Outcome::Denied(_) => "200",
            Outcome::FailedClosed | Outcome::FailedOpen => "0",
        };
        let base = || -> Labels {
            vec![
                ("name", name.to_string()),
                ("type", kind.to_string()),
                ("operation", operation.to_string()),
            ]
        };
        let mut labels = base();
        labels.push(("rejected", rejected.to_string()));
        self.durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        labels.push(("code", code.to_string()));
        self.requests.get_or_create(&labels).inc();
        let rejection = match outcome {
            Outcome::Denied(code) => Some(("no_error", code)),
            Outcome::FailedClosed => Some(("calling_webhook_error", 0)),
            _ => None,
        };
        if let Some((error_type, code)) = rejection {
            let mut labels = base();
            labels.push(("error_type", error_type.to_string()));
            labels.push(("rejection_code", code.to_string()));
            self.rejections.get_or_create(&labels).inc();
        }
    }
}
