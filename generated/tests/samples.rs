//! JSON round trips of a representative document of every shipped kind (written by hand after
//! the upstream Go types): decoding knows every field, re-encoding gives semantically equal
//! JSON, the documents validate, and unknown fields are reported with their paths.

use std::collections::BTreeSet;
use std::path::Path;

mod support;

use apimachinery::GroupVersion;
use serde_json::Value;
use support::Ops;

fn load_samples() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("samples dir") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read sample");
        let value: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            value,
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn ops_for(doc: &Value) -> (Ops, String) {
    let gv = GroupVersion::parse(doc["apiVersion"].as_str().expect("apiVersion"));
    let kind = doc["kind"].as_str().expect("kind");
    (support::ops(&gv.group, kind), gv.version)
}

#[test]
fn every_registered_kind_and_version_has_a_sample() {
    let have: BTreeSet<(String, String)> = load_samples()
        .iter()
        .map(|(_, d)| {
            (
                d["apiVersion"].as_str().unwrap_or("").to_string(),
                d["kind"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for info in generated::resources() {
        assert!(
            have.contains(&(info.api_version(), info.kind.to_string())),
            "no sample for {} {}",
            info.api_version(),
            info.kind
        );
    }
}

#[test]
fn samples_round_trip_with_all_fields_known() {
    for (name, doc) in load_samples() {
        let (ops, version) = ops_for(&doc);
        let decoded = ops
            .decode(&version, doc.clone())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(decoded.unknown_fields, Vec::<String>::new(), "{name}");
        // Decoding applies the defaults; the defaulted object re-encodes to itself.
        let again = ops
            .convert(decoded.object.clone(), &version, &version)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(again, decoded.object, "{name}: re-encoding differs");
        let defaulted = ops
            .default(&version, doc.clone())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            defaulted, decoded.object,
            "{name}: decode applies the defaulters"
        );
    }
}

#[test]
fn samples_validate() {
    for (name, doc) in load_samples() {
        let (ops, version) = ops_for(&doc);
        let errors = ops
            .validate_create(&version, &doc)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(messages.is_empty(), "{name}: {messages:#?}");
    }
}

#[test]
fn unknown_fields_are_reported_with_paths() {
    for (name, mut doc) in load_samples() {
        let (ops, version) = ops_for(&doc);
        let map = doc.as_object_mut().expect("object");
        map.insert("topLevelTypo".into(), Value::Bool(true));
        let nested = ["spec", "status", "roleRef", "involvedObject"]
            .into_iter()
            .find(|k| map.get(*k).is_some_and(Value::is_object))
            .map(str::to_string);
        if let Some(n) = &nested
            && let Some(o) = map.get_mut(n).and_then(Value::as_object_mut)
        {
            o.insert("nestedTypo".into(), Value::from(1));
        }
        map.get_mut("metadata")
            .and_then(Value::as_object_mut)
            .expect("metadata")
            .insert("nmae".into(), Value::from("x"));
        let mut found = ops
            .decode(&version, doc)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unknown_fields;
        found.sort();
        let mut expected = vec!["metadata.nmae".to_string(), "topLevelTypo".to_string()];
        if let Some(n) = nested {
            expected.push(format!("{n}.nestedTypo"));
        }
        expected.sort();
        assert_eq!(found, expected, "{name}");
    }
}
