//! kube-openapi's v2 aggregation (`pkg/aggregator`), which kube-aggregator applies to every
//! aggregated server's spec: a spec is first filtered to its APIService's paths
//! (`FilterSpecByPathsWithoutSideEffects`), then merged into the server's own
//! (`MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`): a path the merged spec
//! already has keeps its first owner; a definition (or parameter) of the same name that differs
//! is renamed `<name>_v2`, `<name>_v3`, … (reusing an earlier rename with the same content)
//! and every reference to it follows; equal definitions differing only in
//! `x-kubernetes-group-version-kind` keep one copy listing both kinds.
//!
//! One difference: Go walks maps in random order, so which of two conflicting definitions gets
//! which suffix can change from one run to the next; here names are taken in sorted order.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

const DEFINITION_PREFIX: &str = "#/definitions/";
const PARAMETER_PREFIX: &str = "#/parameters/";
const GVK_KEY: &str = "x-kubernetes-group-version-kind";

/// The parts of an OpenAPI v2 spec that aggregation merges.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Spec {
    /// `paths`.
    pub paths: Map<String, Value>,
    /// `definitions`.
    pub definitions: Map<String, Value>,
    /// `parameters` (shared parameters referenced as `#/parameters/<name>`).
    pub parameters: Map<String, Value>,
}

fn section(doc: &Value, name: &str) -> Map<String, Value> {
    match doc.get(name) {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    }
}

impl Spec {
    /// The merged parts of a whole v2 document.
    pub fn of(doc: &Value) -> Self {
        Self {
            paths: section(doc, "paths"),
            definitions: section(doc, "definitions"),
            parameters: section(doc, "parameters"),
        }
    }
}

/// Every `$ref` string under `value`.
fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r);
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// The definitions reachable from `paths` (through parameters and other definitions), as
/// kube-openapi's `walkOnAllReferences` finds them.
fn used_definitions(
    paths: &Map<String, Value>,
    definitions: &Map<String, Value>,
    parameters: &Map<String, Value>,
) -> BTreeSet<String> {
    let mut pending: Vec<&str> = Vec::new();
    paths.values().for_each(|p| refs(p, &mut pending));
    let mut used = BTreeSet::new();
    let mut params_seen = BTreeSet::new();
    while let Some(r) = pending.pop() {
        if let Some(name) = r.strip_prefix(DEFINITION_PREFIX) {
            if used.insert(name.to_string())
                && let Some(def) = definitions.get(name)
            {
                refs(def, &mut pending);
            }
        } else if let Some(name) = r.strip_prefix(PARAMETER_PREFIX)
            && params_seen.insert(name.to_string())
            && let Some(param) = parameters.get(name)
        {
            refs(param, &mut pending);
        }
    }
    used
}

/// The spec with only the paths that start with one of `prefixes`, and without the
/// definitions only the removed paths used (definitions no path used stay).
pub(super) fn filter_by_paths(spec: &Spec, prefixes: &[&str]) -> Spec {
    let initially_used = used_definitions(&spec.paths, &spec.definitions, &spec.parameters);
    let paths: Map<String, Value> = spec
        .paths
        .iter()
        .filter(|(p, _)| prefixes.iter().any(|prefix| p.starts_with(prefix)))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    let used = used_definitions(&paths, &spec.definitions, &spec.parameters);
    let definitions = spec
        .definitions
        .iter()
        .filter(|(k, _)| used.contains(*k) || !initially_used.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Spec {
        paths,
        definitions,
        parameters: spec.parameters.clone(),
    }
}

/// Whether two definitions are equal but for their `x-kubernetes-group-version-kind`.
fn equal_modulo_gvks(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let a = a.iter().filter(|(k, _)| *k != GVK_KEY);
            let b: Vec<_> = b.iter().filter(|(k, _)| *k != GVK_KEY).collect();
            let a: Vec<_> = a.collect();
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && v == v2))
        }
        _ => a == b,
    }
}

/// The names `source`'s entries take in `dest`: a conflicting entry (same name, other content
/// as `same` judges) is renamed `<name>_v<i>`.
fn renames(
    dest: &Map<String, Value>,
    source: &Map<String, Value>,
    same: fn(&Value, &Value) -> bool,
) -> BTreeMap<String, String> {
    let mut used: BTreeSet<String> = dest.keys().cloned().collect();
    let mut out = BTreeMap::new();
    let mut names: Vec<&String> = source.keys().collect();
    names.sort();
    'names: for k in names {
        let v = &source[k.as_str()];
        match dest.get(k.as_str()) {
            None => continue,
            Some(existing) if same(existing, v) => continue,
            Some(_) => {}
        }
        let mut i = 1;
        let mut new_name;
        loop {
            i += 1;
            new_name = format!("{k}_v{i}");
            match dest.get(&new_name) {
                Some(existing) if same(existing, v) => {
                    out.insert(k.clone(), new_name);
                    continue 'names;
                }
                Some(_) => {}
                None => break,
            }
        }
        while used.contains(&new_name) || source.contains_key(&new_name) {
            i += 1;
            new_name = format!("{k}_v{i}");
        }
        used.insert(new_name.clone());
        out.insert(k.clone(), new_name);
    }
    out
}

/// Rewrites every `$ref` to `<prefix><old>` into `<prefix><new>`.
fn rename_refs(value: &mut Value, prefix: &str, renames: &BTreeMap<String, String>) {
    match value {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(new) = r.strip_prefix(prefix).and_then(|name| renames.get(name))
            {
                *r = format!("{prefix}{new}");
            }
            m.values_mut().for_each(|v| rename_refs(v, prefix, renames));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| rename_refs(v, prefix, renames)),
        _ => {}
    }
}

fn apply_renames(spec: &mut Spec, prefix: &str, renames: &BTreeMap<String, String>, defs: bool) {
    if renames.is_empty() {
        return;
    }
    for section in [&mut spec.paths, &mut spec.definitions, &mut spec.parameters] {
        section
            .values_mut()
            .for_each(|v| rename_refs(v, prefix, renames));
    }
    let target = if defs {
        &mut spec.definitions
    } else {
        &mut spec.parameters
    };
    *target = std::mem::take(target)
        .into_iter()
        .map(|(k, v)| (renames.get(&k).cloned().unwrap_or(k), v))
        .collect();
}

/// The `group/version.kind` key kube-openapi sorts kinds by.
fn gvk_key(gvk: &Value) -> String {
    let f = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    format!("{}/{}.{}", f("group"), f("version"), f("kind"))
}

/// Adds `source`'s kinds to `dest`'s `x-kubernetes-group-version-kind`, sorted, if it lacks
/// any.
fn merge_gvks(dest: &mut Value, source: &Value) {
    let Some(from) = source.get(GVK_KEY) else {
        return;
    };
    let Some(dest) = dest.as_object_mut() else {
        return;
    };
    let Some(Value::Array(into)) = dest.get_mut(GVK_KEY) else {
        dest.insert(GVK_KEY.to_string(), from.clone());
        return;
    };
    let Value::Array(from) = from else {
        return;
    };
    let seen: BTreeSet<String> = into.iter().map(gvk_key).collect();
    let mut changed = false;
    for gvk in from {
        if !seen.contains(&gvk_key(gvk)) {
            into.push(gvk.clone());
            changed = true;
        }
    }
    if changed {
        into.sort_by_key(gvk_key);
    }
}

/// Merges `source` into `dest` as kube-aggregator merges an aggregated server's spec: paths
/// `dest` has are left out (with the definitions only they used), conflicting definitions and
/// parameters renamed.
pub(super) fn merge_into(dest: &mut Spec, mut source: Spec) {
    let keep: Vec<String> = source
        .paths
        .keys()
        .filter(|p| !dest.paths.contains_key(*p))
        .cloned()
        .collect();
    if keep.is_empty() {
        return;
    }
    if keep.len() < source.paths.len() {
        let prefixes: Vec<&str> = keep.iter().map(String::as_str).collect();
        source = filter_by_paths(&source, &prefixes);
        source.paths.retain(|p, _| !dest.paths.contains_key(p));
    }
    let definition_renames = renames(&dest.definitions, &source.definitions, equal_modulo_gvks);
    apply_renames(&mut source, DEFINITION_PREFIX, &definition_renames, true);
    let parameter_renames = renames(&dest.parameters, &source.parameters, |a, b| a == b);
    apply_renames(&mut source, PARAMETER_PREFIX, &parameter_renames, false);
    for (k, v) in source.definitions {
        match dest.definitions.get_mut(&k) {
            None => {
                dest.definitions.insert(k, v);
            }
            Some(existing) => merge_gvks(existing, &v),
        }
    }
    for (k, v) in source.parameters {
        dest.parameters.entry(k).or_insert(v);
    }
    for (k, v) in source.paths {
        dest.paths.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(doc: Value) -> Spec {
        Spec::of(&doc)
    }

    #[test]
    fn filter_keeps_the_prefix_paths_and_what_they_use() {
        let s = spec(json!({
            "paths": {
                "/apis/a.example/v1/things": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/a.Thing"}}}}},
                "/apis/b.example/v1/others": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/b.Other"}}}}},
                "/apis/a.example/v1": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/meta.List"}}}}}
            },
            "definitions": {
                "a.Thing": {"properties": {"metadata": {"$ref": "#/definitions/meta.Object"}}},
                "meta.Object": {"type": "object"},
                "b.Other": {"properties": {"metadata": {"$ref": "#/definitions/meta.Object"}}},
                "meta.List": {"type": "object"},
                "orphan": {"type": "string"}
            }
        }));
        let f = filter_by_paths(&s, &["/apis/a.example/v1/"]);
        assert_eq!(
            f.paths.keys().collect::<Vec<_>>(),
            vec!["/apis/a.example/v1/things"]
        );
        let mut defs: Vec<&String> = f.definitions.keys().collect();
        defs.sort();
        assert_eq!(defs, vec!["a.Thing", "meta.Object", "orphan"]);
    }

    #[test]
    fn conflicting_definitions_are_renamed_and_refs_follow() {
        let mut dest = spec(json!({
            "paths": {"/apis/local/v1/x": {"get": {}}},
            "definitions": {
                "shared.Meta": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "kind": "A", "version": "v1"}]},
                "clash.Thing": {"type": "string"},
                "clash.Thing_v2": {"type": "integer"}
            }
        }));
        let source = spec(json!({
            "paths": {
                "/apis/local/v1/x": {"get": {"description": "theirs"}},
                "/apis/remote/v1/things": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/clash.Thing"}}}}},
                "/apis/remote/v1/ints": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/clash.Int"}}}}}
            },
            "definitions": {
                "shared.Meta": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "kind": "B", "version": "v1"}]},
                "clash.Thing": {"type": "object", "properties": {"m": {"$ref": "#/definitions/shared.Meta"}}},
                "clash.Int": {"$ref": "#/definitions/clash.Thing"}
            }
        }));
        merge_into(&mut dest, source);
        // The path the server had keeps its own operation.
        assert_eq!(dest.paths["/apis/local/v1/x"], json!({"get": {}}));
        // The differing definition takes the first free suffix (_v2 is taken by other content).
        assert_eq!(
            dest.definitions["clash.Thing_v3"],
            json!({"type": "object", "properties": {"m": {"$ref": "#/definitions/shared.Meta"}}})
        );
        assert_eq!(dest.definitions["clash.Thing"], json!({"type": "string"}));
        assert_eq!(
            dest.paths["/apis/remote/v1/things"]["get"]["responses"]["200"]["schema"]["$ref"],
            json!("#/definitions/clash.Thing_v3")
        );
        assert_eq!(
            dest.definitions["clash.Int"],
            json!({"$ref": "#/definitions/clash.Thing_v3"})
        );
        // Equal but for their kinds: one definition listing both.
        assert_eq!(
            dest.definitions["shared.Meta"][GVK_KEY],
            json!([{"group": "", "kind": "A", "version": "v1"}, {"group": "", "kind": "B", "version": "v1"}])
        );
    }

    #[test]
    fn an_earlier_rename_with_the_same_content_is_reused() {
        let mut dest = spec(json!({
            "paths": {"/a": {}},
            "definitions": {"T": {"type": "string"}, "T_v2": {"type": "object"}}
        }));
        merge_into(
            &mut dest,
            spec(json!({
                "paths": {"/b": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/T"}}}}}},
                "definitions": {"T": {"type": "object"}}
            })),
        );
        assert_eq!(dest.definitions.len(), 2);
        assert_eq!(
            dest.paths["/b"]["get"]["responses"]["200"]["schema"]["$ref"],
            json!("#/definitions/T_v2")
        );
    }

    #[test]
    fn only_conflicting_paths_merge_nothing() {
        let mut dest = spec(json!({"paths": {"/a": {}}, "definitions": {}}));
        merge_into(
            &mut dest,
            spec(json!({"paths": {"/a": {"get": {}}}, "definitions": {"X": {}}})),
        );
        assert!(dest.definitions.is_empty());
    }
}
