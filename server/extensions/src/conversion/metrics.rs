//! The conversion webhook metrics kube-apiserver exports: every review sent, by result and
//! failure type, with its latency; and per CRD, the latency of each conversion between two
//! versions.
//!
//! They are process-wide, as kube-apiserver's legacy registry is; the extension server
//! registers them in the server's `/metrics` (`ApiExtensions::install`).

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// Why a review failed, as kube-apiserver's metrics name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The webhook could not be called, or did not answer 200 with a review.
    Call,
    /// The answer is not a successful review for the request sent.
    MalformedResponse,
    /// The answer has another number of objects than was sent.
    PartialResponse,
    /// A converted object is not what the request asked for.
    InvalidConvertedObject,
}

impl Failure {
    /// The `failure_type` label.
    fn label(self) -> &'static str {
        match self {
            Failure::Call => "conversion_webhook_call_failure",
            Failure::MalformedResponse => "conversion_webhook_malformed_response_failure",
            Failure::PartialResponse => "conversion_webhook_partial_response_failure",
            Failure::InvalidConvertedObject => {
                "conversion_webhook_invalid_converted_object_failure"
            }
        }
    }
}

/// The conversion metric families.
pub struct ConversionMetrics {
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    crd_durations: Family<Labels, Histogram, fn() -> Histogram>,
}

fn request_histogram() -> Histogram {
    // From 5 ms to 60 s, kube-apiserver's buckets.
    Histogram::new([
        0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0,
    ])
}

fn crd_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The process's conversion metrics.
pub static METRICS: LazyLock<ConversionMetrics> = LazyLock::new(|| ConversionMetrics {
    requests: Family::default(),
    durations: Family::new_with_constructor(request_histogram),
    crd_durations: Family::new_with_constructor(crd_histogram),
});

impl ConversionMetrics {
    /// Registers the families in a server's registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "apiserver_conversion_webhook_request",
            "Counter for conversion webhook requests with success/failure and failure error type",
            self.requests.clone(),
        );
        registry.register(
            "apiserver_conversion_webhook_duration_seconds",
            "Conversion webhook request latency",
            self.durations.clone(),
        );
        registry.register(
            "apiserver_crd_conversion_webhook_duration_seconds",
            "CRD webhook conversion duration in seconds",
            self.crd_durations.clone(),
        );
    }

    /// Records one review sent, and how it ended.
    pub fn record_review(&self, outcome: Result<(), Failure>, took: Duration) {
        let labels: Labels = match outcome {
            Ok(()) => vec![
                ("result", "success".into()),
                ("failure_type", String::new()),
            ],
            Err(f) => vec![
                ("result", "failure".into()),
                ("failure_type", f.label().into()),
            ],
        };
        self.requests.get_or_create(&labels).inc();
        self.durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Records one conversion of the CRD `crd` between two versions.
    pub fn record_conversion(
        &self,
        crd: &str,
        from_version: &str,
        to_version: &str,
        succeeded: bool,
        took: Duration,
    ) {
        let labels: Labels = vec![
            ("crd_name", crd.into()),
            ("from_version", from_version.into()),
            ("to_version", to_version.into()),
            ("succeeded", succeeded.to_string()),
        ];
        self.crd_durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_and_conversions_are_exported_with_kube_apiservers_names_and_labels() {
        let metrics = ConversionMetrics {
            requests: Family::default(),
            durations: Family::new_with_constructor(request_histogram),
            crd_durations: Family::new_with_constructor(crd_histogram),
        };
        metrics.record_review(Ok(()), Duration::from_millis(3));
        metrics.record_review(Err(Failure::PartialResponse), Duration::from_millis(7));
        metrics.record_conversion(
            "widgets.example.dev",
            "v1",
            "v2",
            false,
            Duration::from_millis(7),
        );
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for want in [
            r#"apiserver_conversion_webhook_request_total{result="success",failure_type=""} 1"#,
            r#"apiserver_conversion_webhook_request_total{result="failure",failure_type="conversion_webhook_partial_response_failure"} 1"#,
            r#"apiserver_conversion_webhook_duration_seconds_bucket{le="0.005",result="success",failure_type=""} 1"#,
            r#"apiserver_conversion_webhook_duration_seconds_bucket{le="0.01",result="failure",failure_type="conversion_webhook_partial_response_failure"} 1"#,
            r#"apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="widgets.example.dev",from_version="v1",to_version="v2",succeeded="false"} 1"#,
        ] {
            assert!(text.contains(want), "no {want} in\n{text}");
        }
    }
}
