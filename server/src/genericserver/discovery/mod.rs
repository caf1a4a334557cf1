//! Discovery documents built once from the scheme: legacy `/api`, `/apis`, `/apis/{g}`,
//! `/apis/{g}/{v}`, `/api/v1`, and aggregated discovery (`apidiscovery.k8s.io` v2 and v2beta1)
//! on `/api` and `/apis`, chosen by `Accept`, with `Vary: Accept` and an `ETag`; with an
//! [`ApiGroupDirectory`] (an aggregator's APIServices), ordered by their priorities and
//! merged with the group versions other servers serve (see [`directory`]).

pub mod directory;
mod render;

pub use directory::{ApiGroupDirectory, DirectorySnapshot, Freshness, Priority, RemoteVersion};

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::runtime::Kind;
use apimachinery::{ResourceInfo, Scheme};
use axum::body::Body;
use base64::Engine;
use http::{HeaderMap, Response};
use serde_json::{Value, json};
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

/// One version of a group as the documents list it.
struct VersionEntry {
    version: String,
    /// Its `APIVersionDiscovery` (with `freshness`).
    aggregated: Value,
    /// Its `APIResourceList`, when it is served here (not for a remote version).
    resource_list: Option<Document>,
}

/// One group as the documents list it.
struct GroupEntry {
    name: String,
    versions: Vec<VersionEntry>,
}

impl GroupEntry {
    fn version_names(&self) -> Vec<String> {
        self.versions.iter().map(|v| v.version.clone()).collect()
    }
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
    directory: Option<Arc<dyn ApiGroupDirectory>>,
    /// The documents and the sum of the sources' (and directory's) generations they were
    /// built at.
    current: RwLock<(u64, Arc<Discovery>)>,
}

impl LiveDiscovery {
    /// The documents of the scheme's kinds (see [`Discovery::new`]) and of the sources',
    /// ordered and completed by `directory` when there is one.
    pub fn new(
        scheme: Arc<Scheme>,
        runtime: RuntimeConfig,
        server_address: String,
        registry: Arc<Registry>,
        sources: Vec<Arc<dyn KindSource>>,
        directory: Option<Arc<dyn ApiGroupDirectory>>,
    ) -> Self {
        let live = Self {
            scheme,
            runtime,
            server_address,
            registry,
            sources,
            directory,
            current: RwLock::new((0, Arc::new(Discovery::empty()))),
        };
        let generation = live.generation();
        *live.current.write() = (generation, Arc::new(live.build()));
        live
    }

    fn generation(&self) -> u64 {
        self.sources.iter().map(|s| s.generation()).sum::<u64>()
            + self.directory.as_ref().map_or(0, |d| d.generation())
    }

    fn build(&self) -> Discovery {
        let runtime_kinds: Vec<ServedKind> =
            self.sources.iter().flat_map(|s| s.served_kinds()).collect();
        let directory = self
            .directory
            .as_ref()
            .map(|d| d.snapshot())
            .unwrap_or_default();
        Discovery::with_runtime_kinds(
            &self.scheme,
            &runtime_kinds,
            &directory,
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
        Self::with_runtime_kinds(
            scheme,
            &[],
            &DirectorySnapshot::default(),
            runtime,
            server_address,
            verbs_of,
        )
    }

    /// [`Discovery::new`] with the kinds defined at run time (a [`KindSource`]'s) after the
    /// scheme's, each with the verbs it serves when they are not its own, and with the
    /// priorities and remote group versions of `directory` (see [`directory`]).
    pub fn with_runtime_kinds(
        scheme: &Scheme,
        runtime_kinds: &[ServedKind],
        directory: &DirectorySnapshot,
        runtime: &RuntimeConfig,
        server_address: &str,
        verbs_of: &VerbsOf<'_>,
    ) -> Self {
        let mut groups = local_groups(scheme, runtime_kinds, runtime, verbs_of);
        add_remote(&mut groups, directory);
        for g in &mut groups {
            let mut names = g.version_names();
            directory.sort_versions(&g.name, &mut names);
            g.versions.sort_by_key(|v| {
                names
                    .iter()
                    .position(|n| *n == v.version)
                    .unwrap_or(usize::MAX)
            });
        }
        let core: Vec<&GroupEntry> = groups.iter().filter(|g| g.name.is_empty()).collect();
        let named: Vec<&GroupEntry> = groups.iter().filter(|g| !g.name.is_empty()).collect();
        let names: Vec<Vec<String>> = named.iter().map(|g| g.version_names()).collect();
        let keys: Vec<(&str, &[String])> = named
            .iter()
            .zip(&names)
            .map(|(g, v)| (g.name.as_str(), v.as_slice()))
            .collect();
        let aggregated_named: Vec<&GroupEntry> = directory
            .aggregated_order(&keys)
            .into_iter()
            .map(|i| named[i])
            .collect();
        let legacy_named: Vec<&GroupEntry> = directory
            .legacy_order(&keys)
            .into_iter()
            .map(|i| named[i])
            .collect();

        let core_versions: Vec<&String> = core
            .iter()
            .flat_map(|g| g.versions.iter().map(|v| &v.version))
            .collect();
        let api_versions = Document::new(&json!({"kind": "APIVersions", "versions": core_versions,
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}));
        let api_group = |g: &GroupEntry| {
            let versions: Vec<&str> = g.versions.iter().map(|v| v.version.as_str()).collect();
            render::api_group(&g.name, &versions)
        };
        let api_group_list = Document::new(&json!({"kind": "APIGroupList", "apiVersion": "v1",
            "groups": legacy_named.iter().map(|g| api_group(g)).collect::<Vec<_>>()}));
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
            for v in &g.versions {
                if let Some(doc) = &v.resource_list {
                    resource_lists.insert((g.name.clone(), v.version.clone()), doc.clone());
                }
            }
        }
        let agg = |list: &[&GroupEntry]| {
            let entries: Vec<(&str, Vec<&Value>)> = list
                .iter()
                .map(|g| {
                    (
                        g.name.as_str(),
                        g.versions.iter().map(|v| &v.aggregated).collect(),
                    )
                })
                .collect();
            [
                Document::new(&render::aggregated_list(&entries, "apidiscovery.k8s.io/v2")),
                Document::new(&render::aggregated_list(
                    &entries,
                    "apidiscovery.k8s.io/v2beta1",
                )),
            ]
        };
        Self {
            api_versions,
            api_group_list,
            groups: group_docs,
            resource_lists,
            aggregated_api: agg(&core),
            aggregated_apis: agg(&aggregated_named),
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

    /// Serves a discovery path, or returns `None` if `path` is not one this server answers
    /// (a remote group version's `/apis/<group>/<version>` included: its server answers it).
    pub fn serve(&self, path: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        let trimmed = path.trim_end_matches('/');
        let parts: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            ["api"] => Some(self.root(headers, &self.api_versions, &self.aggregated_api)),
            ["apis"] => Some(self.root(headers, &self.api_group_list, &self.aggregated_apis)),
            ["api", v] => self
                .resource_lists
                .get(&(String::new(), v.to_string()))
                .map(|d| render::legacy(headers, d)),
            ["apis", g] => self.groups.get(*g).map(|d| render::legacy(headers, d)),
            ["apis", g, v] => self
                .resource_lists
                .get(&(g.to_string(), v.to_string()))
                .map(|d| render::legacy(headers, d)),
            _ => None,
        }
    }

    fn root(
        &self,
        headers: &HeaderMap,
        legacy_doc: &Document,
        aggregated: &[Document; 2],
    ) -> Response<Body> {
        use render::{Choice, respond};
        match render::choose(headers) {
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

/// The groups of the scheme's kinds and of the run-time kinds, in the scheme's order and then
/// by name, each version in Kubernetes' order with its documents.
fn local_groups(
    scheme: &Scheme,
    runtime_kinds: &[ServedKind],
    runtime: &RuntimeConfig,
    verbs_of: &VerbsOf<'_>,
) -> Vec<GroupEntry> {
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
    let mut groups = Vec::new();
    for group in &names {
        let mut versions: Vec<String> = Vec::new();
        let mut resources: BTreeMap<String, Vec<Served>> = BTreeMap::new();
        for (kind, verbs) in &kinds {
            let storage = kind.storage_info().clone();
            for r in kind.versions() {
                if r.group != group.as_str() || !runtime.enabled(r.group, r.version) {
                    continue;
                }
                if !versions.iter().any(|v| v == r.version) {
                    versions.push(r.version.to_string());
                }
                let verbs = match verbs {
                    Some(verbs) => verbs.to_vec(),
                    None => verbs_of(kind, r).unwrap_or_else(|| r.verbs.to_vec()),
                };
                resources.entry(r.version.to_string()).or_default().push((
                    r.clone(),
                    storage.clone(),
                    verbs,
                ));
            }
        }
        versions.sort_by(|a, b| compare_kube_versions(a, b));
        if versions.is_empty() {
            continue;
        }
        let versions = versions
            .into_iter()
            .map(|v| {
                let items = resources.get(&v).map(Vec::as_slice).unwrap_or(&[]);
                let aggregated = json!({"version": v,
                    "resources": render::aggregated_resources(items), "freshness": "Current"});
                let list = json!({"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": group_version(group, &v),
                    "resources": render::resource_list_entries(group, items)});
                VersionEntry {
                    version: v,
                    aggregated,
                    resource_list: Some(Document::new(&list)),
                }
            })
            .collect();
        groups.push(GroupEntry {
            name: group.clone(),
            versions,
        });
    }
    groups
}

/// Adds the directory's remote group versions: a remote version replaces a local one of the
/// same name; groups served only elsewhere follow the local ones, by name.
fn add_remote(groups: &mut Vec<GroupEntry>, directory: &DirectorySnapshot) {
    let mut remote: Vec<&RemoteVersion> = directory
        .remote
        .iter()
        .filter(|r| !r.group.is_empty() && !r.version.is_empty())
        .collect();
    remote.sort_by(|a, b| (&a.group, &a.version).cmp(&(&b.group, &b.version)));
    for r in remote {
        let mut entry = match &r.discovery {
            Some(Value::Object(m)) => m.clone(),
            _ => serde_json::Map::new(),
        };
        entry.insert("version".into(), json!(r.version));
        entry.insert("freshness".into(), json!(r.freshness.as_str()));
        let entry = VersionEntry {
            version: r.version.clone(),
            aggregated: Value::Object(entry),
            resource_list: None,
        };
        let index = match groups.iter().position(|g| g.name == r.group) {
            Some(i) => i,
            None => {
                groups.push(GroupEntry {
                    name: r.group.clone(),
                    versions: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let versions = &mut groups[index].versions;
        match versions.iter_mut().find(|v| v.version == r.version) {
            Some(existing) => *existing = entry,
            None => versions.push(entry),
        }
    }
}

#[cfg(test)]
mod remote_tests;

#[cfg(test)]
mod tests {
    use super::render::{Choice, choose};
    use super::*;
    use http::{HeaderValue, header};

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
