//! CustomResourceDefinition conversion strategy `Webhook` (kube-apiserver's
//! `apiserver/conversion/webhook_converter.go`): objects change version through the CRD's
//! conversion webhook, one `ConversionReview` per object, or per list for a list's items.
//!
//! [`WebhookConverter`] is the [`UnstructuredConverter`] of every served version of such a CRD,
//! built with the definition (so an edit of the webhook serves new requests as soon as the
//! controller has rebuilt the definition). The review itself, and the checks of the answer
//! with kube-apiserver's messages, are in [`review`]; the HTTPS call is the server's generic
//! webhook client ([`server::webhook`]). A failure reaches the client as kube-apiserver's does:
//! a 500 without a reason whose message is `conversion webhook for <group>/<version>,
//! Kind=<Kind> failed: …` ([`CodecError::ConversionFailed`]).
//!
//! # Blocking
//!
//! Conversion is synchronous ([`apimachinery::runtime::Kind::convert`], called by every
//! handler, the list and the watch), and a webhook call is I/O. Making every caller async
//! would change the whole generic server for one strategy; instead the call runs as a task on
//! a small runtime of its own ([`webhook_runtime`], one worker thread, created on the first
//! call) and the converting thread waits for its answer:
//!
//! - on a worker of a multi-threaded tokio runtime (the server's), inside
//!   [`tokio::task::block_in_place`], so the worker's other tasks move to another thread while
//!   it waits;
//! - anywhere else (a plain thread, a blocking task, a current-thread runtime) by blocking the
//!   thread, which cannot deadlock: the call never needs the waiting thread's runtime.
//!
//! The HTTPS clients live in that runtime too, so their pooled connections never outlive the
//! runtime that drives them.
//!
//! Every review is counted in kube-apiserver's conversion metrics ([`metrics`]).

pub mod metrics;
pub mod review;

use std::future::Future;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant};

use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinition;
use apimachinery::runtime::Object;
use apimachinery::runtime::unstructured::{
    Unstructured, UnstructuredConverter, UnstructuredVersion,
};
use apimachinery::scheme::CodecError;
use server::registry::Registry;
use server::webhook::{Clients, Endpoint, ServiceReference, WebhookError};

use metrics::{Failure, METRICS};

/// How long a conversion webhook has to answer. kube-apiserver sets no timeout of its own on
/// the call (the request's deadline bounds it); apiary bounds it below the default request
/// timeout of 60 s, so a hung webhook fails the request with the conversion's message.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The webhook clients of conversions, by trust bundle and verified name (they belong to
/// [`webhook_runtime`]).
static CLIENTS: LazyLock<Clients> = LazyLock::new(Clients::default);

/// The runtime conversion webhook calls run on (see the module documentation), created on
/// the first call.
fn webhook_runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(r) = RUNTIME.get() {
        return Ok(r);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("apiary-conversion-webhooks")
        .enable_all()
        .build()
        .map_err(|e| format!("the conversion webhook runtime did not start: {e}"))?;
    // Two first calls at once: one runtime is kept, the other shut down without blocking.
    if let Err(spare) = RUNTIME.set(runtime) {
        spare.shutdown_background();
    }
    Ok(RUNTIME.get().expect("set above"))
}

/// Runs `call` on [`webhook_runtime`] and waits for it without stalling an async worker.
fn wait_for<T: Send + 'static>(
    call: impl Future<Output = T> + Send + 'static,
) -> Result<T, String> {
    let runtime = webhook_runtime()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(call.await);
    });
    let wait = move || rx.recv();
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let answer = if on_worker {
        tokio::task::block_in_place(wait)
    } else {
        wait()
    };
    answer.map_err(|_| "the conversion webhook call was abandoned".to_string())
}

/// The converter of a CRD whose `spec.conversion.strategy` is `Webhook` (see the module
/// documentation).
pub struct WebhookConverter {
    /// The CRD's name, for the metrics.
    crd_name: String,
    /// The `kind` of the objects (the accepted name).
    kind: &'static str,
    /// The kind of their lists.
    list_kind: &'static str,
    /// Where the webhook is (a service is resolved at each call), or why it cannot be called.
    endpoint: Result<Endpoint, String>,
    /// The registry whose service resolver finds a service's address.
    registry: Arc<Registry>,
    /// The PEM bundle the webhook's certificate must chain to (empty: the system roots).
    ca_bundle: Vec<u8>,
    /// `conversionReviewVersions`, in the CRD's order.
    review_versions: Vec<String>,
}

impl std::fmt::Debug for WebhookConverter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConverter")
            .field("crd_name", &self.crd_name)
            .field("kind", &self.kind)
            .field("endpoint", &self.endpoint)
            .field("review_versions", &self.review_versions)
            .finish_non_exhaustive()
    }
}

impl WebhookConverter {
    /// The converter of `crd`, or `None` when its conversion strategy is not `Webhook`. `kind`
    /// and `list_kind` are the accepted names the objects are served under; a `service`
    /// reference is resolved at each call by `registry`'s service resolver.
    pub fn of(
        crd: &CustomResourceDefinition,
        kind: &'static str,
        list_kind: &'static str,
        registry: &Arc<Registry>,
    ) -> Option<Self> {
        let conversion = crd.spec.conversion.as_ref()?;
        if conversion.strategy != "Webhook" {
            return None;
        }
        let webhook = conversion.webhook.as_ref();
        let client = webhook.and_then(|w| w.client_config.as_ref());
        let endpoint = match client {
            None => Err("the CRD has no conversion webhook clientConfig".to_string()),
            Some(c) => {
                let service = c.service.as_ref().map(|s| ServiceReference {
                    namespace: &s.namespace,
                    name: &s.name,
                    path: s.path.as_deref(),
                    port: s.port,
                });
                Endpoint::of(c.url.as_deref(), service)
            }
        };
        Some(Self {
            crd_name: crd.metadata.name.clone().unwrap_or_default(),
            kind,
            list_kind,
            endpoint,
            registry: registry.clone(),
            ca_bundle: client
                .and_then(|c| c.ca_bundle.as_ref())
                .map(|b| b.0.clone())
                .unwrap_or_default(),
            review_versions: webhook
                .and_then(|w| w.conversion_review_versions.clone())
                .unwrap_or_default(),
        })
    }

    /// Sends one review and returns the answer's converted objects (checked as a review; the
    /// error is what follows `failed: `, with what kind of failure it is).
    fn call(
        &self,
        objects: &[Unstructured],
        desired: &str,
    ) -> Result<Vec<serde_json::Value>, (Failure, String)> {
        let call_failure = |e: String| (Failure::Call, e);
        let endpoint = self
            .endpoint
            .as_ref()
            .map_err(|e| call_failure(e.clone()))?;
        let client = CLIENTS
            .get(&self.ca_bundle, endpoint.server_name().as_deref())
            .map_err(|e| call_failure(e.to_string()))?;
        // A service is resolved on every call, so a changed Service serves the next one.
        let url = endpoint
            .resolve(&*self.registry.service_resolver())
            .map_err(|e| call_failure(e.to_string()))?;
        let version = review::review_version(&self.review_versions).map_err(call_failure)?;
        let uid = uuid::Uuid::new_v4().to_string();
        let body = review::request(version, &uid, desired, objects);
        let answer =
            wait_for(async move { server::webhook::post_json(&client, &url, TIMEOUT, body).await })
                .map_err(call_failure)?
                .map_err(|e| match e {
                    WebhookError::Status { code, body } => call_failure(status_error(code, &body)),
                    other => call_failure(other.to_string()),
                })?;
        review::converted_objects(&answer, version, &uid)
            .map_err(|e| (Failure::MalformedResponse, e))
    }
}

/// What client-go's REST client reports of a webhook's answer that is not 200 (its `Status`
/// message when the body is one, else the generic text of the code).
fn status_error(code: u16, body: &str) -> String {
    if let Ok(status) = serde_json::from_str::<serde_json::Value>(body)
        && status.get("kind").and_then(|k| k.as_str()) == Some("Status")
        && let Some(message) = status.get("message").and_then(|m| m.as_str())
        && !message.is_empty()
    {
        return message.to_string();
    }
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        404 => "the server could not find the requested resource".into(),
        409 => "the server reported a conflict".into(),
        503 => "the server is currently unable to handle the request".into(),
        500.. => format!(
            "an error on the server ({:?}) has prevented the request from succeeding",
            body.trim()
        ),
        _ => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}

impl UnstructuredConverter for WebhookConverter {
    fn convert(
        &self,
        objects: Vec<Unstructured>,
        to: &Arc<UnstructuredVersion>,
        list: bool,
    ) -> Result<Vec<Unstructured>, CodecError> {
        let Some(first) = objects.first() else {
            return Ok(Vec::new());
        };
        let desired = to.info().api_version();
        // kube-apiserver names the object converted, or the list (in the version asked for).
        let gvk = if list {
            review::gvk_string(&desired, self.list_kind)
        } else {
            review::gvk_string(&first.info().api_version(), self.kind)
        };
        let started = Instant::now();
        let from_version = first.info().version;
        let to_version = to.info().version;
        let outcome = self.call(&objects, &desired).and_then(|converted| {
            if converted.len() != objects.len() {
                return Err((
                    Failure::PartialResponse,
                    format!(
                        "conversion webhook for {gvk} returned {} objects, expected {}",
                        converted.len(),
                        objects.len()
                    ),
                ));
            }
            let expect = review::Expectation {
                desired_api_version: &desired,
                gvk: &gvk,
                list,
            };
            review::restore(&objects, converted, &expect)
                .map_err(|e| (Failure::InvalidConvertedObject, e))
        });
        let took = started.elapsed();
        METRICS.record_review(outcome.as_ref().map(|_| ()).map_err(|(f, _)| *f), took);
        if from_version != to_version {
            METRICS.record_conversion(
                &self.crd_name,
                from_version,
                to_version,
                outcome.is_ok(),
                took,
            );
        }
        let restored = outcome.map_err(|(failure, e)| {
            CodecError::ConversionFailed(match failure {
                Failure::Call | Failure::MalformedResponse => {
                    format!("conversion webhook for {gvk} failed: {e}")
                }
                Failure::PartialResponse | Failure::InvalidConvertedObject => e,
            })
        })?;
        Ok(restored
            .into_iter()
            .map(|(metadata, fields)| Unstructured::new(to.clone(), metadata, fields))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_200_answers_read_as_client_go_reports_them() {
        assert_eq!(
            status_error(400, "nope"),
            "the server rejected our request for an unknown reason"
        );
        assert_eq!(
            status_error(500, "boom\n"),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(
            status_error(
                403,
                r#"{"kind":"Status","apiVersion":"v1","message":"go away","code":403}"#
            ),
            "go away"
        );
    }

    #[test]
    fn waiting_works_from_any_thread() {
        // A plain thread, a current-thread runtime and a multi-threaded runtime's worker.
        assert_eq!(wait_for(async { 1 }), Ok(1));
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(current.block_on(async { wait_for(async { 2 }) }), Ok(2));
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let on_worker = multi.block_on(async {
            tokio::spawn(async {
                wait_for(async {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    3
                })
            })
            .await
            .unwrap()
        });
        assert_eq!(on_worker, Ok(3));
    }
}
