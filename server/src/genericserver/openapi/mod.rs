//! `/openapi/v2` (JSON, or gnostic protobuf by `Accept`) and `/openapi/v3` (an index of
//! per-group-version documents addressed by content hash), built once from the scheme's
//! generated documents, with the documents of kinds defined at run time ([`OpenApiSource`]) and
//! of group versions other servers serve ([`RemoteOpenApiSource`], see [`remote`]).

mod merge;
pub mod remote;

pub use remote::{RemoteOpenApi, RemoteOpenApiSource};

use std::collections::BTreeMap;

use apimachinery::Scheme;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use super::runtime_config::RuntimeConfig;
use crate::filters::status_response;

/// The protobuf media type of `/openapi/v2` as client-go asks for it (kube-openapi calls this
/// spelling deprecated; Go's `mime.ParseMediaType` rejects the `@`, so it is never sent back).
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The parseable spelling of the same media type: accepted, and the `Content-Type` of every
/// protobuf response, as kube-openapi answers.
pub const V2_PROTOBUF_OLD: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

fn etag(bytes: &[u8]) -> String {
    format!("{:X}", Sha512::digest(bytes))
}

/// The OpenAPI documents of the server.
pub struct OpenApi {
    v2_json: Bytes,
    v2_proto: Bytes,
    v2_etag: String,
    v3_index: Bytes,
    v3: BTreeMap<String, (Bytes, String)>,
}

fn merge_object(into: &mut Map<String, Value>, from: Option<&Value>) {
    if let Some(Value::Object(m)) = from {
        for (k, v) in m {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// Whether an operation on a kind is served, given the kind's group and name and the
/// operation's Kubernetes verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
/// `deletecollection`): false for a verb a kind's user storage lacks.
pub type ServedOperation<'a> = dyn Fn(&str, &str, &str) -> bool + Send + Sync + 'a;

/// The Kubernetes verb of an operation's `x-kubernetes-action`.
fn action_verb(action: &str) -> &str {
    match action {
        "post" => "create",
        "put" => "update",
        "watchlist" => "watch",
        other => other,
    }
}

/// Removes from `paths` the operations on kinds that `served` says are not served, and the
/// paths left without operations.
fn drop_unserved(paths: &mut Map<String, Value>, served: &ServedOperation<'_>) {
    paths.retain(|_, item| {
        let Some(item) = item.as_object_mut() else {
            return true;
        };
        item.retain(|_, op| {
            let Some(action) = op.get("x-kubernetes-action").and_then(Value::as_str) else {
                return true;
            };
            let gvk = op.get("x-kubernetes-group-version-kind");
            let field = |f: &str| gvk.and_then(|g| g.get(f)).and_then(Value::as_str);
            match (field("group"), field("kind")) {
                (Some(group), Some(kind)) => served(group, kind, action_verb(action)),
                _ => true,
            }
        });
        item.keys().any(|k| k != "parameters")
    });
}

/// The OpenAPI documents of one group version built at run time (a custom resource's): the v3
/// document, and the v2 document's `paths` and `definitions`.
#[derive(Clone, Debug)]
pub struct OwnedOpenApiDocs {
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The OpenAPI v3 document (`components.schemas` and `paths`); a `$ref` to a schema the
    /// compiled documents define (`ObjectMeta`, `Status`, …) is completed from them.
    pub v3: Value,
    /// The v2 `paths` and `definitions`.
    pub v2: Value,
}

/// Documents of kinds defined at run time (such as custom resources'), served beside the
/// scheme's: the documents are built again on the first OpenAPI request after the source's
/// generation moves.
pub trait OpenApiSource: Send + Sync + 'static {
    /// A number that increases whenever the documents change.
    fn generation(&self) -> u64;

    /// The documents now, one per group version.
    fn documents(&self) -> Vec<OwnedOpenApiDocs>;
}

/// The server's OpenAPI documents, kept current with its [`OpenApiSource`]s.
pub struct LiveOpenApi {
    scheme: std::sync::Arc<Scheme>,
    runtime: RuntimeConfig,
    version: String,
    served: Box<ServedOperation<'static>>,
    sources: Vec<std::sync::Arc<dyn OpenApiSource>>,
    remote: Vec<std::sync::Arc<dyn RemoteOpenApiSource>>,
    current: parking_lot::RwLock<(u64, std::sync::Arc<OpenApi>)>,
}

impl LiveOpenApi {
    /// The documents of the scheme (see [`OpenApi::new`]), of the sources and of the remote
    /// sources.
    pub fn new(
        scheme: std::sync::Arc<Scheme>,
        runtime: RuntimeConfig,
        version: String,
        served: Box<ServedOperation<'static>>,
        sources: Vec<std::sync::Arc<dyn OpenApiSource>>,
        remote: Vec<std::sync::Arc<dyn RemoteOpenApiSource>>,
    ) -> Self {
        let live = Self {
            scheme,
            runtime,
            version,
            served,
            sources,
            remote,
            current: parking_lot::RwLock::new((0, std::sync::Arc::new(OpenApi::empty()))),
        };
        let generation = live.generation();
        *live.current.write() = (generation, std::sync::Arc::new(live.build()));
        live
    }

    fn generation(&self) -> u64 {
        self.sources.iter().map(|s| s.generation()).sum::<u64>()
            + self.remote.iter().map(|s| s.generation()).sum::<u64>()
    }

    fn build(&self) -> OpenApi {
        OpenApi::with_runtime_documents(
            &self.scheme,
            &self.runtime,
            &self.version,
            &*self.served,
            self.sources.iter().flat_map(|s| s.documents()).collect(),
            self.remote.iter().flat_map(|s| s.documents()).collect(),
        )
    }

    /// The current documents (built again if a source changed since).
    pub fn current(&self) -> std::sync::Arc<OpenApi> {
        let generation = self.generation();
        {
            let current = self.current.read();
            if current.0 == generation {
                return current.1.clone();
            }
        }
        let built = std::sync::Arc::new(self.build());
        let mut current = self.current.write();
        if current.0 < generation {
            *current = (generation, built);
        }
        current.1.clone()
    }

    /// Serves `/openapi/...` (see [`OpenApi::serve`]).
    pub fn serve(&self, path: &str, query: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        self.current().serve(path, query, headers)
    }
}

/// Adds to `doc`'s `components.schemas` every schema it references (transitively) that it does
/// not define and `known` does.
fn complete_refs(doc: &mut Value, known: &Map<String, Value>) {
    fn refs(value: &Value, out: &mut Vec<String>, depth: usize) {
        if depth > 256 {
            return;
        }
        match value {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref")
                    && let Some(name) = r.strip_prefix("#/components/schemas/")
                {
                    out.push(name.to_string());
                }
                m.values().for_each(|v| refs(v, out, depth + 1));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out, depth + 1)),
            _ => {}
        }
    }
    let mut wanted = Vec::new();
    refs(doc, &mut wanted, 0);
    let Some(schemas) = doc
        .as_object_mut()
        .map(|d| d.entry("components").or_insert_with(|| json!({})))
        .and_then(|c| c.as_object_mut())
        .map(|c| c.entry("schemas").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    while let Some(name) = wanted.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        if let Some(schema) = known.get(&name) {
            refs(schema, &mut wanted, 0);
            schemas.insert(name, schema.clone());
        }
    }
}

impl OpenApi {
    /// Builds the documents; group versions disabled by `runtime` are left out, and so are
    /// the operations `served` refuses (the verbs a kind's user storage lacks). Empty or
    /// malformed generated documents are skipped with a warning.
    pub fn new(
        scheme: &Scheme,
        runtime: &RuntimeConfig,
        version: &str,
        served: &ServedOperation<'_>,
    ) -> Self {
        Self::with_runtime_documents(scheme, runtime, version, served, Vec::new(), Vec::new())
    }

    fn empty() -> Self {
        Self {
            v2_json: Bytes::new(),
            v2_proto: Bytes::new(),
            v2_etag: String::new(),
            v3_index: Bytes::new(),
            v3: BTreeMap::new(),
        }
    }

    /// [`OpenApi::new`] with the documents of kinds defined at run time after the scheme's,
    /// then those of group versions served elsewhere (see [`remote`]).
    pub fn with_runtime_documents(
        scheme: &Scheme,
        runtime: &RuntimeConfig,
        version: &str,
        served: &ServedOperation<'_>,
        runtime_documents: Vec<OwnedOpenApiDocs>,
        remote_documents: Vec<RemoteOpenApi>,
    ) -> Self {
        let mut paths = Map::new();
        let mut definitions = Map::new();
        let mut v3 = BTreeMap::new();
        // Every schema the compiled v3 documents define, to complete the run-time ones.
        let mut known_schemas = Map::new();
        for docs in scheme.openapi() {
            if !runtime.enabled(docs.group, docs.version) {
                continue;
            }
            let key = if docs.group.is_empty() {
                format!("api/{}", docs.version)
            } else {
                format!("apis/{}/{}", docs.group, docs.version)
            };
            if !docs.v2.trim().is_empty() {
                match serde_json::from_str::<Value>(docs.v2) {
                    Ok(mut v) => {
                        if let Some(Value::Object(p)) = v.get_mut("paths") {
                            drop_unserved(p, served);
                        }
                        merge_object(&mut paths, v.get("paths"));
                        merge_object(&mut definitions, v.get("definitions"));
                    }
                    Err(e) => {
                        tracing::warn!(group_version = %key, error = %e, "invalid OpenAPI v2 fragment")
                    }
                }
            }
            if !docs.v3.trim().is_empty() {
                match serde_json::from_str::<Value>(docs.v3) {
                    Ok(mut v) => {
                        if let Some(Value::Object(p)) = v.get_mut("paths") {
                            drop_unserved(p, served);
                        }
                        if !runtime_documents.is_empty() {
                            merge_object(&mut known_schemas, v.pointer("/components/schemas"));
                        }
                        let bytes = serde_json::to_vec(&v).unwrap_or_default();
                        let hash = etag(&bytes);
                        v3.insert(key, (Bytes::from(bytes), hash));
                    }
                    Err(e) => {
                        tracing::warn!(group_version = %key, error = %e, "invalid OpenAPI v3 document")
                    }
                }
            }
        }
        for mut docs in runtime_documents {
            if !runtime.enabled(&docs.group, &docs.version) {
                continue;
            }
            let key = format!("apis/{}/{}", docs.group, docs.version);
            merge_object(&mut paths, docs.v2.get("paths"));
            merge_object(&mut definitions, docs.v2.get("definitions"));
            // Several kinds of one group version (several CRDs) share its document.
            if let Some((bytes, _)) = v3.get(&key)
                && let Ok(existing) = serde_json::from_slice::<Value>(bytes)
            {
                for section in ["paths", "components"] {
                    let (Some(Value::Object(into)), Some(Value::Object(from))) =
                        (docs.v3.get_mut(section), existing.get(section))
                    else {
                        continue;
                    };
                    for (k, v) in from {
                        match (into.get_mut(k), v) {
                            (Some(Value::Object(a)), Value::Object(b))
                                if section == "components" =>
                            {
                                for (name, schema) in b {
                                    a.entry(name.clone()).or_insert_with(|| schema.clone());
                                }
                            }
                            (None, _) => {
                                into.insert(k.clone(), v.clone());
                            }
                            _ => {}
                        }
                    }
                }
            }
            complete_refs(&mut docs.v3, &known_schemas);
            let bytes = serde_json::to_vec(&docs.v3).unwrap_or_default();
            let hash = etag(&bytes);
            v3.insert(key, (Bytes::from(bytes), hash));
        }
        let mut spec = merge::Spec {
            paths,
            definitions,
            parameters: Map::new(),
        };
        remote::merge_v2(&mut spec, &remote_documents);
        // A remote group version's document replaces a local one of the same group version, as
        // its requests go to the remote server.
        for r in remote_documents.iter().filter(|r| !r.group.is_empty()) {
            if let Some(bytes) = &r.v3 {
                v3.insert(r.v3_key(), (bytes.clone(), etag(bytes)));
            }
        }
        let mut doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version},
            "paths": spec.paths, "definitions": spec.definitions});
        if !spec.parameters.is_empty() {
            doc["parameters"] = Value::Object(spec.parameters);
        }
        let v2_json = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
        let v2_proto = Bytes::from(super::gnostic::encode_document(&doc));
        let v2_etag = etag(&v2_json);
        let index_paths: Map<String, Value> = v3
            .iter()
            .map(|(k, (_, hash))| {
                (
                    k.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{k}?hash={hash}")}),
                )
            })
            .collect();
        let v3_index =
            Bytes::from(serde_json::to_vec(&json!({"paths": index_paths})).unwrap_or_default());
        Self {
            v2_json,
            v2_proto,
            v2_etag,
            v3_index,
            v3,
        }
    }

    /// Serves `/openapi/...`, or returns `None` for other paths.
    pub fn serve(&self, path: &str, query: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        let path = path.trim_end_matches('/');
        if path == "/openapi/v2" {
            return Some(self.serve_v2(headers));
        }
        if path == "/openapi/v3" {
            return Some(bytes_response(
                self.v3_index.clone(),
                "application/json",
                None,
            ));
        }
        let key = path.strip_prefix("/openapi/v3/")?;
        let (bytes, hash) = self.v3.get(key)?;
        if !accepts(headers, &["application/json"]) {
            return Some(status_response(
                &apimachinery::status::ApiError::not_acceptable(&["application/json"]),
            ));
        }
        let requested = crate::request_info::query_param(query, "hash");
        let mut resp = match requested {
            Some(h) if &h != hash => {
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
                if let Ok(v) = HeaderValue::from_str(&format!("/openapi/v3/{key}?hash={hash}")) {
                    r.headers_mut().insert(header::LOCATION, v);
                }
                return Some(r);
            }
            Some(_) => {
                let mut r = bytes_response(bytes.clone(), "application/json", Some(hash));
                r.headers_mut().insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, immutable"),
                );
                r
            }
            None => {
                let mut r = bytes_response(bytes.clone(), "application/json", Some(hash));
                r.headers_mut().insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("no-cache, private"),
                );
                r
            }
        };
        resp.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        Some(resp)
    }

    fn serve_v2(&self, headers: &HeaderMap) -> Response<Body> {
        let accept = accept_list(headers);
        for media in &accept {
            match media.as_str() {
                V2_PROTOBUF | V2_PROTOBUF_OLD => {
                    return bytes_response(
                        self.v2_proto.clone(),
                        V2_PROTOBUF_OLD,
                        Some(&self.v2_etag),
                    );
                }
                "application/json" | "*/*" | "application/*" => {
                    return bytes_response(
                        self.v2_json.clone(),
                        "application/json",
                        Some(&self.v2_etag),
                    );
                }
                _ => {}
            }
        }
        if accept.is_empty() {
            return bytes_response(
                self.v2_json.clone(),
                "application/json",
                Some(&self.v2_etag),
            );
        }
        status_response(&apimachinery::status::ApiError::not_acceptable(&[
            "application/json",
            V2_PROTOBUF,
        ]))
    }
}

fn accept_list(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|e| !e.split(';').any(|p| p.trim() == "q=0"))
        .map(|e| {
            e.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|e| !e.is_empty())
        .collect()
}

fn accepts(headers: &HeaderMap, types: &[&str]) -> bool {
    let list = accept_list(headers);
    list.is_empty()
        || list
            .iter()
            .any(|m| m == "*/*" || m == "application/*" || types.contains(&m.as_str()))
}

fn bytes_response(body: Bytes, content_type: &'static str, etag: Option<&str>) -> Response<Body> {
    let mut resp = Response::new(Body::from(body));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(tag) = etag.and_then(|t| HeaderValue::from_str(&format!("\"{t}\"")).ok()) {
        resp.headers_mut().insert(header::ETAG, tag);
    }
    resp
}
