//! Legacy discovery (`APIResourceList`) converted to aggregated discovery's
//! `APIVersionDiscovery` resources, as k8s.io/apiserver's `ConvertGroupVersionIntoToDiscovery`
//! converts it for kube-aggregator when a server serves no aggregated discovery.

use serde_json::{Map, Value, json};

fn gvk(r: &Value) -> Value {
    let f = |k: &str| r.get(k).cloned().unwrap_or_else(|| json!(""));
    json!({"group": f("group"), "version": f("version"), "kind": f("kind")})
}

fn scope(r: &Value) -> &'static str {
    if r.get("namespaced").and_then(Value::as_bool) == Some(true) {
        "Namespaced"
    } else {
        "Cluster"
    }
}

/// The `resources` of an `APIVersionDiscovery` from an `APIResourceList`: a resource per
/// top-level entry, `<resource>/<sub>` entries as its subresources (a parent missing from the
/// list is made with no verbs). Fails, with kube-apiserver's message, when a subresource's
/// scope differs from its parent's.
pub fn resource_list_to_discovery(list: &Value) -> Result<Vec<Value>, String> {
    let empty = Vec::new();
    let entries = list
        .get("resources")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut out: Vec<Map<String, Value>> = Vec::new();
    for r in entries {
        let Some(name) = r.get("name").and_then(Value::as_str) else {
            continue;
        };
        if name.contains('/') {
            continue;
        }
        let mut entry = Map::new();
        entry.insert("resource".into(), json!(name));
        entry.insert("responseKind".into(), gvk(r));
        entry.insert("scope".into(), json!(scope(r)));
        entry.insert(
            "singularResource".into(),
            r.get("singularName").cloned().unwrap_or_else(|| json!("")),
        );
        entry.insert(
            "verbs".into(),
            r.get("verbs").cloned().unwrap_or_else(|| json!([])),
        );
        for (from, to) in [("shortNames", "shortNames"), ("categories", "categories")] {
            if let Some(v) = r
                .get(from)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                entry.insert(to.into(), v.clone());
            }
        }
        out.push(entry);
    }
    for r in entries {
        let Some((parent, sub)) = r
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| n.split_once('/'))
        else {
            continue;
        };
        let scope = scope(r);
        let index = match out.iter().position(|e| e["resource"] == parent) {
            Some(i) => i,
            None => {
                let mut entry = Map::new();
                entry.insert("resource".into(), json!(parent));
                entry.insert(
                    "responseKind".into(),
                    json!({"group": "", "version": "", "kind": ""}),
                );
                entry.insert("scope".into(), json!(scope));
                entry.insert("singularResource".into(), json!(""));
                entry.insert("verbs".into(), json!([]));
                out.push(entry);
                out.len() - 1
            }
        };
        let parent_scope = out[index]["scope"].as_str().unwrap_or("").to_string();
        if parent_scope != scope {
            return Err(format!(
                "Error: Parent {parent} (scope: {parent_scope}) and subresource {sub} (scope: {scope}) scope do not match"
            ));
        }
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
        let response_kind = if kind.is_empty() {
            json!({"group": "", "version": "", "kind": ""})
        } else {
            gvk(r)
        };
        let subresource = json!({"subresource": sub, "responseKind": response_kind,
            "verbs": r.get("verbs").cloned().unwrap_or_else(|| json!([]))});
        let subs = out[index]
            .entry("subresources")
            .or_insert_with(|| json!([]));
        if let Value::Array(subs) = subs {
            subs.push(subresource);
        }
    }
    Ok(out.into_iter().map(Value::Object).collect())
}
