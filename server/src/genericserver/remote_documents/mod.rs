//! The client side of aggregation: fetching another API server's discovery and OpenAPI
//! documents, as kube-aggregator's discovery manager (`handler_discovery.go`) and OpenAPI
//! downloaders (`controllers/openapi/aggregator/downloader.go`, `openapiv3`) fetch them.
//!
//! A [`RemoteServer`] is one server (a base URL and a `reqwest::Client` that already trusts it
//! and presents the aggregator's client certificate). It remembers each document's `ETag` and
//! sends `If-None-Match`, so an unchanged document costs a 304; OpenAPI v3 documents are
//! fetched from the `serverRelativeURL` the `/openapi/v3` index gives (with its `hash`), and a
//! URL seen before is not fetched again. Every answer is bounded in size and time.
//!
//! ```no_run
//! # async fn example(client: reqwest::Client) {
//! use server::genericserver::remote_documents::RemoteServer;
//!
//! let wardle = RemoteServer::new(client, "https://wardle.example.svc:443");
//! let docs = wardle.fetch("wardle.example.com", "v1alpha1").await;
//! match &docs.discovery {
//!     Ok(entry) => println!("resources: {}", entry["resources"]),
//!     Err(e) => println!("stale: {e}"),
//! }
//! # }
//! ```

mod legacy;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::discovery::AGGREGATED_V2;

pub use legacy::resource_list_to_discovery;

/// Why a document could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The request failed before an answer (refused, unreachable, TLS).
    #[error("Get {url:?}: {message}")]
    Request {
        /// The URL.
        url: String,
        /// Why, with its causes.
        message: String,
    },
    /// No whole answer came within the timeout.
    #[error("Get {url:?}: context deadline exceeded (no answer within {timeout:?})")]
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The server answered with a status other than 200 (or 304 to a conditional request).
    #[error("Get {url:?}: the server responded with the status code {status}: {body}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The first 256 bytes of the body, as text.
        body: String,
    },
    /// The answer was longer than the limit.
    #[error("Get {url:?}: the response is longer than {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// The answer was not the document expected.
    #[error("Get {url:?}: {message}")]
    Decode {
        /// The URL.
        url: String,
        /// What was wrong.
        message: String,
    },
}

/// The bounds of each fetch.
#[derive(Clone, Debug)]
pub struct FetchLimits {
    /// The time a discovery document may take (kube-aggregator: 5 s).
    pub discovery_timeout: Duration,
    /// The time an OpenAPI document may take (kube-aggregator: one minute).
    pub openapi_timeout: Duration,
    /// The largest answer read (a whole kube-apiserver's `/openapi/v2` is about 4 MiB).
    pub max_bytes: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            discovery_timeout: Duration::from_secs(5),
            openapi_timeout: Duration::from_secs(60),
            max_bytes: 64 * 1024 * 1024,
        }
    }
}

/// One group version's documents from one fetch round: each part fetched or why not.
#[derive(Clone, Debug)]
pub struct GroupVersionDocuments {
    /// The group version's `APIVersionDiscovery` (aggregated discovery v2): from the server's
    /// aggregated discovery, or converted from its legacy `/apis/<group>/<version>` when it
    /// serves no aggregated discovery. A server that answers but does not list the group
    /// version gives an entry with no resources, as kube-aggregator records it.
    pub discovery: Result<Value, FetchError>,
    /// The server's whole `/openapi/v2` (JSON).
    pub openapi_v2: Result<Arc<Value>, FetchError>,
    /// The server's OpenAPI v3 document of `apis/<group>/<version>`; `None` when its
    /// `/openapi/v3` index does not list it (or it serves no `/openapi/v3`).
    pub openapi_v3: Result<Option<Bytes>, FetchError>,
}

/// A server's aggregated discovery: each group version's `APIVersionDiscovery` by
/// `(group, version)`.
pub type VersionEntries = BTreeMap<(String, String), Value>;

/// A document remembered with its `ETag`.
#[derive(Clone)]
struct Cached<T> {
    etag: String,
    value: T,
}

#[derive(Default)]
struct Cache {
    aggregated: Option<Cached<Arc<VersionEntries>>>,
    openapi_v2: Option<Cached<Arc<Value>>>,
    /// `serverRelativeURL` → the document it gave.
    openapi_v3: BTreeMap<String, Bytes>,
}

/// An answer: its status, headers and body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

/// Another API server whose documents are fetched (see the [module docs](self)).
pub struct RemoteServer {
    client: reqwest::Client,
    base: String,
    headers: HeaderMap,
    openapi_headers: Option<HeaderMap>,
    limits: FetchLimits,
    cache: Mutex<Cache>,
}

impl RemoteServer {
    /// The server at `base` (`https://host:port`, no trailing path), reached with `client`
    /// (which trusts its serving certificate and presents the caller's credentials; build it
    /// with `redirect(reqwest::redirect::Policy::none())` to refuse redirects, as
    /// kube-aggregator refuses forwarding redirects by default).
    pub fn new(client: reqwest::Client, base: impl Into<String>) -> Self {
        Self {
            client,
            base: base.into().trim_end_matches('/').to_string(),
            headers: HeaderMap::new(),
            openapi_headers: None,
            limits: FetchLimits::default(),
            cache: Mutex::new(Cache::default()),
        }
    }

    /// Sends `headers` with every request (kube-aggregator fetches as `system:kube-aggregator`
    /// in group `system:masters` through its proxy: `X-Remote-User`/`X-Remote-Group` for a
    /// server that trusts the front proxy's certificate).
    pub fn with_headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    /// Sends `headers` with the OpenAPI requests instead (kube-aggregator downloads OpenAPI as
    /// `system:aggregator`, with no group).
    pub fn with_openapi_headers(mut self, headers: HeaderMap) -> Self {
        self.openapi_headers = Some(headers);
        self
    }

    /// Fetches within `limits` instead of [`FetchLimits::default`].
    pub fn with_limits(mut self, limits: FetchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// One GET of `path`, bounded, with `accept` and `If-None-Match: etag` (and the OpenAPI
    /// headers when `openapi`).
    async fn get(
        &self,
        openapi: bool,
        path: &str,
        accept: &str,
        etag: Option<&str>,
        timeout: Duration,
    ) -> Result<Answer, FetchError> {
        let url = format!("{}{path}", self.base);
        let limit = self.limits.max_bytes;
        let send = async {
            let mut request = self
                .client
                .get(&url)
                .headers(match (&self.openapi_headers, openapi) {
                    (Some(headers), true) => headers.clone(),
                    _ => self.headers.clone(),
                })
                .header(header::ACCEPT, accept);
            if let Some(etag) = etag {
                request = request.header(header::IF_NONE_MATCH, etag);
            }
            let mut response = request.send().await.map_err(|e| FetchError::Request {
                url: url.clone(),
                message: crate::webhook::error_chain(&e),
            })?;
            let status = response.status();
            let headers = response.headers().clone();
            if response.content_length().is_some_and(|n| n > limit as u64) {
                return Err(FetchError::TooLarge {
                    url: url.clone(),
                    limit,
                });
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| FetchError::Request {
                url: url.clone(),
                message: crate::webhook::error_chain(&e),
            })? {
                if body.len() + chunk.len() > limit {
                    return Err(FetchError::TooLarge {
                        url: url.clone(),
                        limit,
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Answer {
                status,
                headers,
                body: Bytes::from(body),
            })
        };
        match tokio::time::timeout(timeout, send).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Timeout {
                url: url.clone(),
                timeout,
            }),
        }
    }

    fn status_error(&self, path: &str, answer: &Answer) -> FetchError {
        let body = &answer.body[..answer.body.len().min(256)];
        FetchError::Status {
            url: format!("{}{path}", self.base),
            status: answer.status.as_u16(),
            body: String::from_utf8_lossy(body).into_owned(),
        }
    }

    fn decode_error(&self, path: &str, message: impl std::fmt::Display) -> FetchError {
        FetchError::Decode {
            url: format!("{}{path}", self.base),
            message: message.to_string(),
        }
    }

    /// The server's aggregated discovery (`/apis`, v2), each group version's
    /// `APIVersionDiscovery` by `(group, version)`; `None` when the server does not serve it
    /// (it answers another form, or 404/406).
    pub async fn aggregated_discovery(&self) -> Result<Option<Arc<VersionEntries>>, FetchError> {
        let cached = self.cache.lock().aggregated.clone();
        let answer = self
            .get(
                false,
                "/apis",
                AGGREGATED_V2,
                cached.as_ref().map(|c| c.etag.as_str()),
                self.limits.discovery_timeout,
            )
            .await?;
        if answer.status == StatusCode::NOT_MODIFIED
            && let Some(cached) = cached
        {
            return Ok(Some(cached.value));
        }
        let content_type = answer
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let is_v2 = content_type.contains("g=apidiscovery.k8s.io")
            && content_type.contains("v=v2")
            && !content_type.contains("v=v2beta1")
            && content_type.contains("as=APIGroupDiscoveryList");
        if answer.status == StatusCode::OK && is_v2 {
            let list: Value =
                serde_json::from_slice(&answer.body).map_err(|e| self.decode_error("/apis", e))?;
            let versions = Arc::new(split_aggregated(&list));
            if let Some(etag) = etag_of(&answer.headers) {
                self.cache.lock().aggregated = Some(Cached {
                    etag,
                    value: Arc::clone(&versions),
                });
            }
            return Ok(Some(versions));
        }
        match answer.status {
            StatusCode::OK | StatusCode::NOT_FOUND | StatusCode::NOT_ACCEPTABLE => Ok(None),
            _ => Err(self.status_error("/apis", &answer)),
        }
    }

    /// `/apis/<group>/<version>` (or `/api/<version>`), converted to an `APIVersionDiscovery`
    /// as kube-apiserver's `ConvertGroupVersionIntoToDiscovery` converts it.
    pub async fn legacy_version(&self, group: &str, version: &str) -> Result<Value, FetchError> {
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let answer = self
            .get(
                false,
                &path,
                "application/json",
                None,
                self.limits.discovery_timeout,
            )
            .await?;
        if answer.status != StatusCode::OK {
            return Err(self.status_error(&path, &answer));
        }
        let list: Value =
            serde_json::from_slice(&answer.body).map_err(|e| self.decode_error(&path, e))?;
        let resources =
            legacy::resource_list_to_discovery(&list).map_err(|e| self.decode_error(&path, e))?;
        Ok(json!({"version": version, "resources": resources}))
    }

    /// The group version's `APIVersionDiscovery`: from aggregated discovery, else from legacy
    /// discovery (see [`GroupVersionDocuments::discovery`]).
    pub async fn version_discovery(&self, group: &str, version: &str) -> Result<Value, FetchError> {
        match self.aggregated_discovery().await? {
            Some(versions) => Ok(versions
                .get(&(group.to_string(), version.to_string()))
                .cloned()
                .unwrap_or_else(|| json!({"version": version}))),
            None => self.legacy_version(group, version).await,
        }
    }

    /// The server's `/openapi/v2` (JSON).
    pub async fn openapi_v2(&self) -> Result<Arc<Value>, FetchError> {
        let cached = self.cache.lock().openapi_v2.clone();
        let answer = self
            .get(
                true,
                "/openapi/v2",
                "application/json",
                cached.as_ref().map(|c| c.etag.as_str()),
                self.limits.openapi_timeout,
            )
            .await?;
        if answer.status == StatusCode::NOT_MODIFIED
            && let Some(cached) = cached
        {
            return Ok(cached.value);
        }
        if answer.status != StatusCode::OK {
            return Err(self.status_error("/openapi/v2", &answer));
        }
        let doc: Value = serde_json::from_slice(&answer.body)
            .map_err(|e| self.decode_error("/openapi/v2", e))?;
        if !doc.is_object() {
            return Err(self.decode_error("/openapi/v2", "not a JSON object"));
        }
        let doc = Arc::new(doc);
        if let Some(etag) = etag_of(&answer.headers) {
            self.cache.lock().openapi_v2 = Some(Cached {
                etag,
                value: Arc::clone(&doc),
            });
        }
        Ok(doc)
    }

    /// The server's `/openapi/v3` index: each key (`apis/<group>/<version>`, `api/v1`, …) with
    /// its `serverRelativeURL`; empty when the server serves no `/openapi/v3` (404).
    pub async fn openapi_v3_index(&self) -> Result<BTreeMap<String, String>, FetchError> {
        let path = "/openapi/v3";
        let answer = self
            .get(
                true,
                path,
                "application/json",
                None,
                self.limits.openapi_timeout,
            )
            .await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(BTreeMap::new());
        }
        if answer.status != StatusCode::OK {
            return Err(self.status_error(path, &answer));
        }
        let index: Value =
            serde_json::from_slice(&answer.body).map_err(|e| self.decode_error(path, e))?;
        let Some(paths) = index.get("paths").and_then(Value::as_object) else {
            return Err(self.decode_error(path, "no paths in the OpenAPI v3 index"));
        };
        Ok(paths
            .iter()
            .filter_map(|(k, v)| {
                let url = v.get("serverRelativeURL")?.as_str()?;
                Some((k.clone(), url.to_string()))
            })
            .collect())
    }

    /// The server's OpenAPI v3 document of `apis/<group>/<version>` (`api/<version>` for the
    /// core group), or `None` when its index does not list it. A document whose URL (with its
    /// content hash) was fetched before is not fetched again.
    pub async fn openapi_v3(
        &self,
        group: &str,
        version: &str,
    ) -> Result<Option<Bytes>, FetchError> {
        let key = if group.is_empty() {
            format!("api/{version}")
        } else {
            format!("apis/{group}/{version}")
        };
        let index = self.openapi_v3_index().await?;
        let Some(url) = index.get(&key) else {
            return Ok(None);
        };
        if !url.starts_with('/') {
            return Err(self.decode_error(
                "/openapi/v3",
                format!("serverRelativeURL {url:?} is not a path"),
            ));
        }
        if let Some(doc) = self.cache.lock().openapi_v3.get(url) {
            return Ok(Some(doc.clone()));
        }
        let answer = self
            .get(
                true,
                url,
                "application/json",
                None,
                self.limits.openapi_timeout,
            )
            .await?;
        if answer.status != StatusCode::OK {
            return Err(self.status_error(url, &answer));
        }
        let doc: Value =
            serde_json::from_slice(&answer.body).map_err(|e| self.decode_error(url, e))?;
        if !doc.is_object() {
            return Err(self.decode_error(url, "not a JSON object"));
        }
        let mut cache = self.cache.lock();
        // Only this group version's current URL is worth keeping.
        let prefix = format!("/openapi/v3/{key}");
        cache
            .openapi_v3
            .retain(|u, _| u.split('?').next() != Some(prefix.as_str()));
        cache.openapi_v3.insert(url.clone(), answer.body.clone());
        Ok(Some(answer.body))
    }

    /// Every document of one group version (the three fetches run together).
    pub async fn fetch(&self, group: &str, version: &str) -> GroupVersionDocuments {
        let (discovery, openapi_v2, openapi_v3) = tokio::join!(
            self.version_discovery(group, version),
            self.openapi_v2(),
            self.openapi_v3(group, version),
        );
        GroupVersionDocuments {
            discovery,
            openapi_v2,
            openapi_v3,
        }
    }
}

/// The `ETag` header's value, if any.
fn etag_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::ETAG)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// An `APIGroupDiscoveryList`'s versions by `(group, version)`.
fn split_aggregated(list: &Value) -> VersionEntries {
    let mut out = BTreeMap::new();
    for group in list
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = group
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        for version in group
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(v) = version.get("version").and_then(Value::as_str) {
                let mut version = version.clone();
                fill_response_kinds(&mut version);
                out.insert((name.to_string(), v.to_string()), version);
            }
        }
    }
    out
}

/// Gives every resource and subresource without a `responseKind` an empty one, as
/// kube-aggregator does ("avoid nil panics in v0.26.0-v0.26.3 client-go clients").
fn fill_response_kinds(version: &mut Value) {
    let empty = || json!({"group": "", "version": "", "kind": ""});
    let Some(resources) = version.get_mut("resources").and_then(Value::as_array_mut) else {
        return;
    };
    for r in resources {
        let Some(r) = r.as_object_mut() else { continue };
        r.entry("responseKind").or_insert_with(empty);
        if let Some(subs) = r.get_mut("subresources").and_then(Value::as_array_mut) {
            for s in subs.iter_mut().filter_map(Value::as_object_mut) {
                s.entry("responseKind").or_insert_with(empty);
            }
        }
    }
}

#[cfg(test)]
mod tests;
