//! The pieces of the discovery documents: resource lists, aggregated discovery entries, the
//! `APIGroup` objects, and the negotiation and ETag handling of a response.

use std::cmp::Ordering;

use axum::body::Body;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};

use super::{Document, Served, group_version, storage_version_hash};

pub(super) fn resource_list_entries(group: &str, items: &[Served]) -> Vec<Value> {
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

pub(super) fn aggregated_resources(items: &[Served]) -> Vec<Value> {
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

/// An `APIGroupDiscoveryList` of `groups` (each a name and its versions' `APIVersionDiscovery`
/// entries, in order) in `api_version` (v2 and v2beta1 entries have the same fields).
pub(super) fn aggregated_list(groups: &[(&str, Vec<&Value>)], api_version: &str) -> Value {
    let items: Vec<Value> = groups
        .iter()
        .map(|(name, versions)| {
            let mut metadata = Map::new();
            if !name.is_empty() {
                metadata.insert("name".into(), json!(name));
            }
            metadata.insert("creationTimestamp".into(), Value::Null);
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
}

/// The `APIGroup` of `name` with `versions` in order: the first is the preferred one.
pub(super) fn api_group(name: &str, versions: &[&str]) -> Value {
    let entries: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": group_version(name, v), "version": v}))
        .collect();
    let preferred = versions
        .first()
        .map(|v| json!({"groupVersion": group_version(name, v), "version": v}));
    json!({"name": name, "versions": entries, "preferredVersion": preferred})
}

pub(super) enum Choice {
    AggregatedV2,
    AggregatedV2Beta1,
    Legacy,
    None,
}

/// Picks the response form from `Accept`: the first acceptable entry (by `q`, then order).
pub(super) fn choose(headers: &HeaderMap) -> Choice {
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

pub(super) fn legacy(headers: &HeaderMap, doc: &Document) -> Response<Body> {
    respond(headers, doc, "application/json")
}

pub(super) fn respond(
    headers: &HeaderMap,
    doc: &Document,
    content_type: &'static str,
) -> Response<Body> {
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
