//! Kinds defined while the server runs (custom resources): [`RuntimeKinds`] serves them through
//! the same handlers, stores, watch caches, admission and strategies as the compiled kinds, as
//! a server in the delegation chain behind the main one (kube-apiserver's extension server:
//! main → extensions → 404).
//!
//! The server's tables are `'static` ([`Kind`], [`ResourceInfo`] and the codecs they name), so
//! a run-time kind's tables are allocated once per definition and kept for the life of the
//! process: [`intern`] keeps one copy of each distinct string, and [`keep`] one of each
//! table. They are small (the names, columns and flags of a resource: a few hundred bytes per
//! definition). What is large about a definition — its schemas and what is compiled from them —
//! is held by reference count by the codecs
//! ([`apimachinery::runtime::unstructured::UnstructuredCodec`]) and freed when the definition's
//! owner retires them.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use server::runtime_kinds::RuntimeKinds;
//! # fn kind() -> &'static apimachinery::runtime::Kind { &kubernetes_api::core::CONFIG_MAP_KIND }
//! # async fn example(server: &mut server::genericserver::GenericServer) {
//! let kinds = Arc::new(RuntimeKinds::new(server.api().clone()));
//! server.add_delegate(kinds.clone());
//! server.add_kind_source(kinds.clone());
//! // Later, when a definition is accepted:
//! kinds.serve(kind()).unwrap();
//! # }
//! ```

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use apimachinery::ResourceInfo;
use apimachinery::runtime::Kind;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::Request;
use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use crate::endpoints::{self, ApiContext};
use crate::genericserver::director::{Delegate, DelegateFuture};
use crate::genericserver::discovery::{KindSource, ServedKind};
use crate::registry::Store;
use crate::request_info::RequestInfo;

/// The one copy of `text` kept for the life of the process (the same reference for equal
/// texts), for the `'static` tables of kinds defined at run time.
pub fn intern(text: &str) -> &'static str {
    static INTERNED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut interned = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    let set = interned.get_or_insert_with(HashSet::new);
    if let Some(kept) = set.get(text) {
        return kept;
    }
    let kept: &'static str = Box::leak(text.to_owned().into_boxed_str());
    set.insert(kept);
    kept
}

/// [`intern`] of every text, as a kept list.
pub fn intern_all<S: AsRef<str>>(texts: &[S]) -> &'static [&'static str] {
    if texts.is_empty() {
        return &[];
    }
    keep_slice(texts.iter().map(|t| intern(t.as_ref())).collect())
}

/// Keeps `value` for the life of the process: a table of a kind defined at run time.
pub fn keep<T: Send + Sync + 'static>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Keeps a list for the life of the process.
pub fn keep_slice<T: Send + Sync + 'static>(values: Vec<T>) -> &'static [T] {
    Box::leak(values.into_boxed_slice())
}

/// A served kind defined at run time.
#[derive(Clone)]
struct Served {
    kind: &'static Kind,
    /// Whether creates are refused (the definition is being deleted).
    terminating: bool,
    /// The `Warning` of every request to a version, by version (a deprecated version's).
    warnings: Arc<Vec<(String, String)>>,
}

/// The kinds defined at run time, served as a delegate of the main server (see the module
/// documentation).
pub struct RuntimeKinds {
    api: Arc<ApiContext>,
    /// By group and resource (the plural).
    served: RwLock<FxHashMap<(String, String), Served>>,
    /// Moves with every change of what is served (discovery is built again).
    generation: AtomicU64,
}

impl std::fmt::Debug for RuntimeKinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeKinds")
            .field("served", &self.served.read().len())
            .finish_non_exhaustive()
    }
}

impl RuntimeKinds {
    /// No kinds yet, over the server's handlers and registry.
    pub fn new(api: Arc<ApiContext>) -> Self {
        Self {
            api,
            served: RwLock::new(FxHashMap::default()),
            generation: AtomicU64::new(0),
        }
    }

    /// Serves `kind` from now on, replacing an earlier definition of its group and resource
    /// (whose watch cache stops and whose open watches end); returns its new store, whose watch
    /// cache loads in the background.
    pub fn serve(&self, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        self.serve_with_warnings(kind, Vec::new())
    }

    /// [`RuntimeKinds::serve`], with a `Warning` header on every response to a request for
    /// some versions: `(version, text)` pairs (kube-apiserver warns so of a deprecated version
    /// of a custom resource).
    pub fn serve_with_warnings(
        &self,
        kind: &'static Kind,
        warnings: Vec<(String, String)>,
    ) -> Result<Arc<Store>, ApiError> {
        let info = kind.storage_info();
        let store = self.api.registry.install_store(kind)?;
        self.served.write().insert(
            (info.group.to_string(), info.plural.to_string()),
            Served {
                kind,
                terminating: false,
                warnings: Arc::new(warnings),
            },
        );
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(store)
    }

    /// Marks a served kind as terminating (its definition is being deleted): creates are
    /// refused with 403 `Forbidden`, everything else is served. Nothing when it is not served.
    pub fn terminate(&self, group: &str, resource: &str) {
        if let Some(served) = self
            .served
            .write()
            .get_mut(&(group.to_string(), resource.to_string()))
        {
            served.terminating = true;
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Stops serving a kind: its requests reach the next server (404), its watch cache stops.
    /// Returns the kind that was served.
    pub fn withdraw(&self, group: &str, resource: &str) -> Option<&'static Kind> {
        let served = self
            .served
            .write()
            .remove(&(group.to_string(), resource.to_string()))?;
        self.api.registry.remove_store(group, resource);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Some(served.kind)
    }

    /// The API context the kinds are served in (its registry, scheme, admission).
    pub fn api(&self) -> &Arc<ApiContext> {
        &self.api
    }

    /// The store of a served kind.
    pub fn store(&self, kind: &'static Kind) -> Result<Arc<Store>, ApiError> {
        self.api.registry.store(kind)
    }

    /// The kind served for a group and resource.
    pub fn kind(&self, group: &str, resource: &str) -> Option<&'static Kind> {
        self.served
            .read()
            .get(&(group.to_string(), resource.to_string()))
            .map(|s| s.kind)
    }

    /// Every kind served, in no particular order.
    pub fn kinds(&self) -> Vec<&'static Kind> {
        self.served.read().values().map(|s| s.kind).collect()
    }

    /// The kind and version a resource request addresses, if served here.
    fn route(&self, info: &RequestInfo) -> Option<(Served, &'static ResourceInfo)> {
        if !info.is_resource_request {
            return None;
        }
        let served = self
            .served
            .read()
            .get(&(info.api_group.clone(), info.resource.clone()))
            .cloned()?;
        let version = served.kind.info(&info.api_version)?;
        Some((served, version))
    }
}

/// The verbs discovery lists for a terminating kind.
const TERMINATING_VERBS: [&str; 5] = ["delete", "deletecollection", "get", "list", "watch"];

impl KindSource for RuntimeKinds {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn served_kinds(&self) -> Vec<ServedKind> {
        let mut kinds: Vec<ServedKind> = self
            .served
            .read()
            .values()
            .map(|s| ServedKind {
                kind: s.kind,
                verbs: s.terminating.then(|| TERMINATING_VERBS.to_vec()),
            })
            .collect();
        kinds.sort_by_key(|k| {
            let info = k.kind.storage_info();
            (info.group, info.plural)
        });
        kinds
    }
}

/// What a create of a terminating kind gets (kube-apiserver's 403 while a CRD is deleted):
/// the delegate answers it to `POST`s before decoding, and a kind's strategy to creates that
/// come through a patch or an update.
pub fn terminating_create_refused(resource: &apimachinery::GroupResource, name: &str) -> ApiError {
    ApiError::forbidden(
        resource,
        name,
        "create not allowed while custom resource definition is terminating",
    )
}

impl Delegate for RuntimeKinds {
    fn handle(&self, req: Request<Body>) -> DelegateFuture {
        let routed = req
            .extensions()
            .get::<RequestInfo>()
            .and_then(|info| Some((self.route(info)?, info.verb == "create")));
        let Some(((served, version), create)) = routed else {
            return Box::pin(async move { Err(req) });
        };
        let api = self.api.clone();
        Box::pin(async move {
            if served.terminating && create {
                let info = req.extensions().get::<RequestInfo>();
                let name = info.map(|i| i.name.clone()).unwrap_or_default();
                let resource =
                    apimachinery::GroupResource::new(version.group.to_string(), version.plural);
                return Ok(crate::filters::status_response(
                    &terminating_create_refused(&resource, &name),
                ));
            }
            let warning = served
                .warnings
                .iter()
                .find(|(v, _)| v == version.version)
                .map(|(_, text)| endpoints::response::warning_header(text));
            let mut resp = endpoints::serve_kind(api, served.kind, req).await;
            if let Some(warning) = warning
                && let Ok(value) = http::HeaderValue::from_str(&warning)
            {
                resp.headers_mut().append(http::header::WARNING, value);
            }
            Ok(resp)
        })
    }
}
