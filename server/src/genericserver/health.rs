//! `/healthz`, `/livez` and `/readyz`: named checks, each also served at its own path
//! (`/readyz/etcd`), with `?verbose` listings, `?exclude=<name>` and Kubernetes' texts.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};

/// A check's outcome: `Err` carries the reason (which is withheld from listings).
pub type CheckResult = Result<(), String>;

/// A health check.
pub type CheckFn = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = CheckResult> + Send>> + Send + Sync>;

/// A named check.
#[derive(Clone)]
pub struct HealthCheck {
    /// The name, such as `ping`, `etcd` or `poststarthook/apiary-bootstrap-namespaces`.
    pub name: String,
    /// The check.
    pub check: CheckFn,
}

impl HealthCheck {
    /// Creates a check from an async closure.
    pub fn new<F, Fut>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CheckResult> + Send + 'static,
    {
        Self {
            name: name.into(),
            check: Arc::new(move || Box::pin(f())),
        }
    }

    /// The `ping` check, which always passes.
    pub fn ping() -> Self {
        Self::new("ping", || async { Ok(()) })
    }

    /// The `log` check, which always passes.
    pub fn log() -> Self {
        Self::new("log", || async { Ok(()) })
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Serves `/<endpoint>` (all checks) or `/<endpoint>/<check>` (one check). `rest` is the path
/// after `/<endpoint>`, empty or starting with `/`.
pub async fn serve(
    endpoint: &str,
    checks: &[HealthCheck],
    rest: &str,
    query: &str,
) -> Response<Body> {
    let sub = rest.trim_start_matches('/');
    if !sub.is_empty() {
        let Some(check) = checks.iter().find(|c| c.name == sub) else {
            return crate::filters::status_response(
                &apimachinery::status::ApiError::not_found_path(),
            );
        };
        return match (check.check)().await {
            Ok(()) => text(StatusCode::OK, "ok".to_string()),
            Err(e) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {e}\n"),
            ),
        };
    }
    let query = apimachinery::query::Query::parse(query);
    let verbose = query.contains_key("verbose");
    // A set, as Kubernetes keeps it: the unmatched names are listed sorted, once each.
    let excluded: BTreeSet<&str> = query.get_all("exclude").collect();
    let mut listing = String::new();
    let mut failed = false;
    for check in checks {
        if excluded.contains(check.name.as_str()) {
            listing.push_str(&format!("[+]{} excluded: ok\n", check.name));
            continue;
        }
        match (check.check)().await {
            Ok(()) => listing.push_str(&format!("[+]{} ok\n", check.name)),
            Err(e) => {
                tracing::info!(check = %check.name, endpoint, error = %e, "health check failed");
                listing.push_str(&format!("[-]{} failed: reason withheld\n", check.name));
                failed = true;
            }
        }
    }
    let unknown: Vec<&str> = excluded
        .iter()
        .copied()
        .filter(|e| !checks.iter().any(|c| c.name == *e))
        .collect();
    if !unknown.is_empty() {
        let names: Vec<String> = unknown.iter().map(|n| format!("{n:?}")).collect();
        listing.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            names.join(",")
        ));
    }
    if failed {
        listing.push_str(&format!("{endpoint} check failed\n"));
        return text(StatusCode::INTERNAL_SERVER_ERROR, listing);
    }
    if verbose {
        listing.push_str(&format!("{endpoint} check passed\n"));
        return text(StatusCode::OK, listing);
    }
    text(StatusCode::OK, "ok".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(endpoint: &str, query: &str) -> (StatusCode, String) {
        let checks = [
            HealthCheck::ping(),
            HealthCheck::new("etcd", || async { Err("down".to_string()) }),
        ];
        let resp = serve(endpoint, &checks, "", query).await;
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, String::from_utf8(bytes.to_vec()).expect("utf-8"))
    }

    #[tokio::test]
    async fn query_parameters_are_read_as_kubernetes_reads_them() {
        let (status, text) = body("readyz", "exclude=etcd").await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "ok"));
        // `verbose` with any value, and escaped names.
        let (_, text) = body("readyz", "verbose=0&exclude=%65tcd").await;
        assert_eq!(
            text,
            "[+]ping ok\n[+]etcd excluded: ok\nreadyz check passed\n"
        );
        // Unmatched names are listed sorted, once each.
        let (status, text) = body("livez", "exclude=z&exclude=b+c&exclude=z").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            text,
            "[+]ping ok\n[-]etcd failed: reason withheld\nwarn: some health checks cannot be excluded: no matches for \"b c\",\"z\"\nlivez check failed\n"
        );
    }
}
