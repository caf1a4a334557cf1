//! Discovery documents built once from the scheme: legacy `/api`, `/apis`, `/apis/{g}`,
//! `/apis/{g}/{v}`, `/api/v1`, and aggregated discovery (`apidiscovery.k8s.io` v2 and v2beta1)
//! on `/api` and `/apis`, chosen by `Accept`, with `Vary: Accept` and an `ETag`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::runtime::Kind;
use apimachinery::{ResourceInfo, Scheme};
use axum::body::Body;
use base64::Engine;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::runtime_config::RuntimeConfig;
use crate::registry::Registry;
use parking_lot::RwLock;

/// The media type of aggregated discovery v2.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The media type of aggregated discovery v2beta1.
pub const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Kubernetes' version ordering: GA before beta before alpha, higher numbers first, then
/// other strings alphabetically.
pub fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    fn key(v: &str) -> Option<(u32, u8, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u32 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, level, num.parse().ok()?))
    }
    match (key(a), key(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// `storageVersionHash`: base64 of the first 8 bytes of sha256("group/version/kind").
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// One served resource: its version's facts, its storage version's facts, and the verbs
/// served.
type Served = (ResourceInfo, ResourceInfo, Vec<&'static str>);

/// The verbs a kind's storage serves when they are not the kind's own (a kind served from a
/// user's storage): given the kind and the facts of one version, `None` for the kind's.
pub type VerbsOf<'a> = dyn Fn(&Kind, &ResourceInfo) -> Option<Vec<&'static str>> + 'a;

struct Group {
    name: String,
    versions: Vec<String>,
    resources: BTreeMap<String, Vec<Served>>,
}

/// A rendered document with its ETag.
#[derive(Clone, Debug)]
pub struct Document {
    /// JSON bytes.
    pub body: Vec<u8>,
    /// The quoted ETag.
    pub etag: String,
}

impl Document {
    fn new(value: &Value) -> Self {
        let body = serde_json::to_vec(value).unwrap_or_default();
        let etag = format!("\"{}\"", hex::encode(Sha256::digest(&body)));
        Self { body, etag }
    }
}

/// A kind defined at run time, as discovery lists it.
#[derive(Clone, Debug)]
pub struct ServedKind {
    /// The kind.
    pub kind: &'static Kind,
    /// The verbs served when they are not the kind's own (a terminating custom resource
    /// serves only `delete`, `deletecollection`, `get`, `list` and `watch`).
    pub verbs: Option<Vec<&'static str>>,
}

/// Kinds defined while the server runs (such as `crate::runtime_kinds::RuntimeKinds`), which
/// discovery lists beside the scheme's: the documents are built again on the first discovery
/// request after the source's generation moves.
pub trait KindSource: Send + Sync + 'static {
    /// A number that increases whenever the kinds served change.
    fn generation(&self) -> u64;

    /// The kinds served now.
    fn served_kinds(&self) -> Vec<ServedKind>;
}

/// The server's discovery documents, kept current with its [`KindSource`]s.
pub struct LiveDiscovery {
    scheme: Arc<Scheme>,
    runtime: RuntimeConfig,
    server_address: String,
    registry: Arc<Registry>,
    sources: Vec<Arc<dyn KindSource>>,
    /// The documents and the sum of the sources' generations they were built at.
    current: RwLock<(u64, Arc<Discovery>)>,
}

impl LiveDiscovery {
    /// The documents of the scheme's kinds (see [`Discovery::new`]) and of the sources'.
    pub fn new(
        scheme: Arc<Scheme>,
        runtime: RuntimeConfig,
        server_address: String,
        registry: Arc<Registry>,
        sources: Vec<Arc<dyn KindSource>>,
    ) -> Self {
        let live = Self {
            scheme,
            runtime,
            server_address,
            registry,
            sources,
            current: RwLock::new((0, Arc::new(Discovery::empty()))),
        };
        let generation = live.generation();
        *live.current.write() = (generation, Arc::new(live.build()));
        live
    }

    fn generation(&self) -> u64 {
        self.sources.iter().map(|s| s.generation()).sum()
    }

    fn build(&self) -> Discovery {
        let runtime_kinds: Vec<ServedKind> =
            self.sources.iter().flat_map(|s| s.served_kinds()).collect();
        Discovery::with_runtime_kinds(
            &self.scheme,
            &runtime_kinds,
            &self.runtime,
            &self.server_address,
            &|kind, r| self.registry.custom_verbs(kind, r.verbs),
        )
    }

    /// The current documents (built again if a source changed since).
    pub fn current(&self) -> Arc<Discovery> {
        let generation = self.generation();
        {
            let current = self.current.read();
            if current.0 == generation {
                return current.1.clone();
            }
        }
        let built = Arc::new(self.build());
        let mut current = self.current.write();
        if current.0 < generation {
            *current = (generation, built.clone());
        }
        current.1.clone()
    }

    /// Serves a discovery path (see [`Discovery::serve`]).
    pub fn serve(&self, path: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        self.current().serve(path, headers)
    }
}

/// Every discovery document of the server.
pub struct Discovery {
    api_versions: Document,
    api_group_list: Document,
    groups: BTreeMap<String, Document>,
    resource_lists: BTreeMap<(String, String), Document>,
    aggregated_api: [Document; 2],
    aggregated_apis: [Document; 2],
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn resource_list_entries(group: &str, items: &[Served]) -> Vec<Value> {
    let mut out = Vec::new();
    for (r, storage, verbs) in items {
        let mut main = Map::new();
        main.insert("name".into(), json!(r.plural));
        main.insert("singularName".into(), json!(r.singular));
        main.insert("namespaced".into(), json!(r.namespaced()));
        main.insert("kind".into(), json!(r.kind));
        main.insert("verbs".into(), json!(verbs));
        if !r.short_names.is_empty() {
            main.insert("shortNames".into(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            main.insert("categories".into(), json!(r.categories));
        }
        if !r.create_only {
            main.insert(
                "storageVersionHash".into(),
                json!(storage_version_hash(group, storage.version, storage.kind)),
            );
        }
        out.push(Value::Object(main));
        if r.scale.is_some() {
            out.push(json!({"name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced(),
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
        if r.status_subresource {
            out.push(json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced(),
                "kind": r.kind, "verbs": ["get", "patch", "update"]}));
        }
        for sub in r.subresources {
            let mut entry = json!({"name": format!("{}/{}", r.plural, sub.name), "singularName": "",
                "namespaced": r.namespaced(), "kind": sub.kind, "verbs": sub.verbs});
            // Only a body of another group version names it, as kube-apiserver's do.
            if (sub.group, sub.version) != (r.group, r.version) {
                entry["group"] = json!(sub.group);
                entry["version"] = json!(sub.version);
            }
            out.push(entry);
        }
    }
    out.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    out
}

fn aggregated_resources(items: &[Served]) -> Vec<Value> {
    let mut out = Vec::new();
    for (r, _, verbs) in items {
        let mut entry = Map::new();
        entry.insert("resource".into(), json!(r.plural));
        entry.insert(
            "responseKind".into(),
            json!({"group": r.group, "version": r.version, "kind": r.kind}),
        );
        entry.insert(
            "scope".into(),
            json!(if r.namespaced() {
                "Namespaced"
            } else {
                "Cluster"
            }),
        );
        entry.insert("singularResource".into(), json!(r.singular));
        entry.insert("verbs".into(), json!(verbs));
        if !r.short_names.is_empty() {
            entry.insert("shortNames".into(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            entry.insert("categories".into(), json!(r.categories));
        }
        let mut subs = Vec::new();
        if r.scale.is_some() {
            subs.push(json!({"subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"]}));
        }
        if r.status_subresource {
            subs.push(json!({"subresource": "status",
                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                "verbs": ["get", "patch", "update"]}));
        }
        for sub in r.subresources {
            subs.push(json!({"subresource": sub.name,
                "responseKind": {"group": sub.group, "version": sub.version, "kind": sub.kind},
                "verbs": sub.verbs}));
        }
        // By name, as kube-apiserver lists them.
        subs.sort_by(|a, b| a["subresource"].as_str().cmp(&b["subresource"].as_str()));
        if !subs.is_empty() {
            entry.insert("subresources".into(), Value::Array(subs));
        }
        out.push(Value::Object(entry));
    }
    out.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
    out
}

fn aggregated_list(groups: &[&Group], api_version: &str) -> Value {
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let versions: Vec<Value> = g
                .versions
                .iter()
                .map(|v| {
                    json!({"version": v, "resources": aggregated_resources(g.resources.get(v).map(Vec::as_slice).unwrap_or(&[])),
                        "freshness": "Current"})
                })
                .collect();
            let mut metadata = Map::new();
            if !g.name.is_empty() {
                metadata.insert("name".into(), json!(g.name));
            }
            metadata.insert("creationTimestamp".into(), Value::Null);
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
}

fn api_group(g: &Group) -> Value {
    let versions: Vec<Value> = g
        .versions
        .iter()
        .map(|v| json!({"groupVersion": group_version(&g.name, v), "version": v}))
        .collect();
    let preferred = g
        .versions
        .first()
        .map(|v| json!({"groupVersion": group_version(&g.name, v), "version": v}));
    json!({"name": g.name, "versions": versions, "preferredVersion": preferred})
}

impl Discovery {
    /// Builds every document from the scheme, honouring `--runtime-config`. `server_address` is
    /// the `host:port` clients reach the server at; `verbs_of` gives the verbs of a kind served
    /// from a user's storage (`Registry::custom_verbs`), which are not the kind's own.
    pub fn new(
        scheme: &Scheme,
        runtime: &RuntimeConfig,
        server_address: &str,
        verbs_of: &VerbsOf<'_>,
    ) -> Self {
        Self::with_runtime_kinds(scheme, &[], runtime, server_address, verbs_of)
    }

    /// [`Discovery::new`] with the kinds defined at run time (a [`KindSource`]'s) after the
    /// scheme's, each with the verbs it serves when they are not its own.
    pub fn with_runtime_kinds(
        scheme: &Scheme,
        runtime_kinds: &[ServedKind],
        runtime: &RuntimeConfig,
        server_address: &str,
        verbs_of: &VerbsOf<'_>,
    ) -> Self {
        let mut names: Vec<String> = scheme.groups().to_vec();
        let mut extra: Vec<String> = runtime_kinds
            .iter()
            .map(|k| k.kind.storage_info().group.to_string())
            .filter(|g| !names.contains(g))
            .collect();
        extra.sort();
        extra.dedup();
        names.extend(extra);
        let kinds: Vec<(&Kind, Option<&[&'static str]>)> = scheme
            .kinds()
            .iter()
            .map(|k| (*k, None))
            .chain(runtime_kinds.iter().map(|k| (k.kind, k.verbs.as_deref())))
            .collect();
        let mut groups: Vec<Group> = Vec::new();
        for group in &names {
            let mut g = Group {
                name: group.clone(),
                versions: Vec::new(),
                resources: BTreeMap::new(),
            };
            for (kind, verbs) in &kinds {
                let storage = kind.storage_info().clone();
                for r in kind.versions() {
                    if r.group != group.as_str() || !runtime.enabled(r.group, r.version) {
                        continue;
                    }
                    if !g.versions.iter().any(|v| v == r.version) {
                        g.versions.push(r.version.to_string());
                    }
                    let verbs = match verbs {
                        Some(verbs) => verbs.to_vec(),
                        None => verbs_of(kind, r).unwrap_or_else(|| r.verbs.to_vec()),
                    };
                    g.resources.entry(r.version.to_string()).or_default().push((
                        r.clone(),
                        storage.clone(),
                        verbs,
                    ));
                }
            }
            g.versions.sort_by(|a, b| compare_kube_versions(a, b));
            if !g.versions.is_empty() {
                groups.push(g);
            }
        }
        let core: Vec<&Group> = groups.iter().filter(|g| g.name.is_empty()).collect();
        let named: Vec<&Group> = groups.iter().filter(|g| !g.name.is_empty()).collect();

        let core_versions: Vec<&String> = core.iter().flat_map(|g| g.versions.iter()).collect();
        let api_versions = Document::new(&json!({"kind": "APIVersions", "versions": core_versions,
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}));
        let api_group_list = Document::new(&json!({"kind": "APIGroupList", "apiVersion": "v1",
            "groups": named.iter().map(|g| api_group(g)).collect::<Vec<_>>()}));
        let mut group_docs = BTreeMap::new();
        let mut resource_lists = BTreeMap::new();
        for g in &groups {
            if !g.name.is_empty() {
                let mut doc = api_group(g);
                if let Value::Object(m) = &mut doc {
                    m.insert("kind".into(), json!("APIGroup"));
                    m.insert("apiVersion".into(), json!("v1"));
                }
                group_docs.insert(g.name.clone(), Document::new(&doc));
            }
            for (v, items) in &g.resources {
                let doc = json!({"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": group_version(&g.name, v), "resources": resource_list_entries(&g.name, items)});
                resource_lists.insert((g.name.clone(), v.clone()), Document::new(&doc));
            }
        }
        let agg = |list: &[&Group]| {
            [
                Document::new(&aggregated_list(list, "apidiscovery.k8s.io/v2")),
                Document::new(&aggregated_list(list, "apidiscovery.k8s.io/v2beta1")),
            ]
        };
        Self {
            api_versions,
            api_group_list,
            groups: group_docs,
            resource_lists,
            aggregated_api: agg(&core),
            aggregated_apis: agg(&named),
        }
    }

    fn empty() -> Self {
        let empty = Document::new(&Value::Null);
        Self {
            api_versions: empty.clone(),
            api_group_list: empty.clone(),
            groups: BTreeMap::new(),
            resource_lists: BTreeMap::new(),
            aggregated_api: [empty.clone(), empty.clone()],
            aggregated_apis: [empty.clone(), empty],
        }
    }

    /// Serves a discovery path, or returns `None` if `path` is not one.
    pub fn serve(&self, path: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        let trimmed = path.trim_end_matches('/');
        let parts: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            ["api"] => Some(self.root(headers, &self.api_versions, &self.aggregated_api)),
            ["apis"] => Some(self.root(headers, &self.api_group_list, &self.aggregated_apis)),
            ["api", v] => self
                .resource_lists
                .get(&(String::new(), v.to_string()))
                .map(|d| legacy(headers, d)),
            ["apis", g] => self.groups.get(*g).map(|d| legacy(headers, d)),
            ["apis", g, v] => self
                .resource_lists
                .get(&(g.to_string(), v.to_string()))
                .map(|d| legacy(headers, d)),
            _ => None,
        }
    }

    fn root(
        &self,
        headers: &HeaderMap,
        legacy_doc: &Document,
        aggregated: &[Document; 2],
    ) -> Response<Body> {
        match choose(headers) {
            Choice::AggregatedV2 => respond(headers, &aggregated[0], AGGREGATED_V2),
            Choice::AggregatedV2Beta1 => respond(headers, &aggregated[1], AGGREGATED_V2BETA1),
            Choice::Legacy => respond(headers, legacy_doc, "application/json"),
            Choice::None => {
                crate::filters::status_response(&apimachinery::status::ApiError::not_acceptable(&[
                    "application/json",
                    AGGREGATED_V2,
                    AGGREGATED_V2BETA1,
                ]))
            }
        }
    }
}

enum Choice {
    AggregatedV2,
    AggregatedV2Beta1,
    Legacy,
    None,
}

/// Picks the response form from `Accept`: the first acceptable entry (by `q`, then order).
fn choose(headers: &HeaderMap) -> Choice {
    let accept: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if accept.is_empty() {
        return Choice::Legacy;
    }
    let mut entries: Vec<(f32, usize, String)> = Vec::new();
    for (i, entry) in accept.iter().flat_map(|v| v.split(',')).enumerate() {
        let mut params = entry.split(';').map(str::trim);
        let media = params.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0f32;
        let mut g = None;
        let mut v = None;
        let mut as_ = None;
        for p in params {
            let (k, val) = p.split_once('=').unwrap_or((p, ""));
            match k.trim() {
                "q" => q = val.trim().parse().unwrap_or(1.0),
                "g" => g = Some(val.trim().to_string()),
                "v" => v = Some(val.trim().to_string()),
                "as" => as_ = Some(val.trim().to_string()),
                _ => {}
            }
        }
        if q <= 0.0 {
            continue;
        }
        let kind = match (media.as_str(), g.as_deref(), v.as_deref(), as_.as_deref()) {
            (
                "application/json",
                Some("apidiscovery.k8s.io"),
                Some("v2"),
                Some("APIGroupDiscoveryList"),
            ) => "v2",
            (
                "application/json",
                Some("apidiscovery.k8s.io"),
                Some("v2beta1"),
                Some("APIGroupDiscoveryList"),
            ) => "v2beta1",
            ("application/json" | "application/*" | "*/*", None, None, None) => "legacy",
            _ => continue,
        };
        entries.push((q, i, kind.to_string()));
    }
    entries.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    match entries.first().map(|e| e.2.as_str()) {
        Some("v2") => Choice::AggregatedV2,
        Some("v2beta1") => Choice::AggregatedV2Beta1,
        Some(_) => Choice::Legacy,
        None => Choice::None,
    }
}

fn legacy(headers: &HeaderMap, doc: &Document) -> Response<Body> {
    respond(headers, doc, "application/json")
}

fn respond(headers: &HeaderMap, doc: &Document, content_type: &'static str) -> Response<Body> {
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == doc.etag));
    let mut resp = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(Body::from(doc.body.clone()))
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if let Ok(v) = HeaderValue::from_str(&doc.etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_order() {
        let mut v = vec![
            "v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo", "v1beta1",
        ];
        v.sort_by(|a, b| compare_kube_versions(a, b));
        assert_eq!(
            v,
            vec![
                "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
            ]
        );
    }

    #[test]
    fn hash_is_8_bytes_base64() {
        assert_eq!(
            storage_version_hash("example.dev", "v1", "Widget").len(),
            12
        );
    }

    #[test]
    fn accept_choice() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
            ),
        );
        assert!(matches!(choose(&h), Choice::AggregatedV2));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, */*"),
        );
        assert!(matches!(choose(&h), Choice::Legacy));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/yaml"));
        assert!(matches!(choose(&h), Choice::None));
    }
}
