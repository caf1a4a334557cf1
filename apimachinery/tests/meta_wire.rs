//! The JSON and protobuf behaviour of the meta structs on edge cases (empty and zero values,
//! `null`s, wrong types, unknown fields, by-value fields, raw field sets, truncated messages),
//! pinned by a golden file: each JSON document is decoded (from a tree and from text),
//! re-encoded to JSON and protobuf, and decoded back; each protobuf message is decoded and
//! re-encoded. The structs are generated from `api-defs/meta.k8s.io/v1.rs`, so a change of the
//! definitions or the generator that changes what goes over the wire shows here.
//!
//! Run with `UPDATE_GOLDEN=1` to rewrite `tests/golden/meta_wire.txt` after an intended change,
//! then review the diff.
use apimachinery::meta::*;
use apimachinery::protobuf::ProtoMessage;
use serde_json::{Value, json};
use std::fmt::Write as _;

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join("")
}

fn run<T>(name: &str, docs: &[Value], protos: &[&[u8]], out: &mut String)
where
    T: serde::de::DeserializeOwned + serde::Serialize + ProtoMessage + Default + std::fmt::Debug,
{
    for d in docs {
        let _ = writeln!(out, "{name} json {d}");
        match serde_json::from_value::<T>(d.clone()) {
            Err(e) => {
                let _ = writeln!(out, "  err {e}");
            }
            Ok(t) => {
                let _ = writeln!(out, "  json {}", serde_json::to_string(&t).unwrap());
                let b = t.encode_to_vec();
                let _ = writeln!(out, "  proto {}", hex(&b));
                match T::decode(&b) {
                    Ok(t2) => {
                        let _ = writeln!(out, "  back {}", serde_json::to_string(&t2).unwrap());
                    }
                    Err(e) => {
                        let _ = writeln!(out, "  backerr {e}");
                    }
                }
            }
        }
        // also via from_str (streaming deserializer)
        match serde_json::from_str::<T>(&d.to_string()) {
            Err(e) => {
                let _ = writeln!(out, "  strerr {e}");
            }
            Ok(t) => {
                let _ = writeln!(out, "  str {}", serde_json::to_string(&t).unwrap());
            }
        }
    }
    for p in protos {
        let _ = writeln!(out, "{name} proto {}", hex(p));
        match T::decode(p) {
            Ok(t) => {
                let _ = writeln!(
                    out,
                    "  json {}\n  proto {}",
                    serde_json::to_string(&t).unwrap(),
                    hex(&t.encode_to_vec())
                );
            }
            Err(e) => {
                let _ = writeln!(out, "  err {e}");
            }
        }
    }
}

#[test]
fn meta_wire_behaviour_matches_the_golden_file() {
    let mut out = String::new();
    let common_bad = vec![
        json!(null),
        json!(5),
        json!("x"),
        json!([]),
        json!({"unknown": 1}),
    ];
    let mut om = vec![
        json!({}),
        json!({"name": "", "generateName": "", "namespace": "", "selfLink": "", "uid": "", "resourceVersion": "", "generation": 0}),
        json!({"name": null, "labels": null, "annotations": null, "ownerReferences": null, "finalizers": null, "managedFields": null, "creationTimestamp": null, "deletionTimestamp": null, "generation": null}),
        json!({"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "5", "generation": 2,
            "creationTimestamp": "2024-01-01T00:00:00Z", "deletionTimestamp": "1970-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0,
            "labels": {"b": "2", "a": "1"}, "annotations": {"x": ""},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x", "controller": true, "blockOwnerDeletion": false}, {}],
            "finalizers": ["f", "f", ""],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}, "f:a": {}}}, "subresource": ""}, {}, {"fieldsV1": {}}, {"fieldsV1": null}, {"time": null}]}),
        json!({"creationTimestamp": "1970-01-01T00:00:00Z"}),
        json!({"creationTimestamp": "2024-05-01T10:00:00.987+02:00"}),
        json!({"creationTimestamp": "bad"}),
        json!({"generation": -0}),
        json!({"generation": 1.5}),
        json!({"labels": {"a": null}}),
        json!({"labels": {"a": 1}}),
        json!({"ownerReferences": [{"apiVersion": null}]}),
        json!({"ownerReferences": [{"kind": 5}]}),
        json!({"ownerReferences": [{"controller": null}]}),
        json!({"managedFields": [{"fieldsV1": "str"}]}),
        json!({"managedFields": [{"fieldsV1": [1, 2]}]}),
        json!({"name": "a", "name2": "b"}),
    ];
    om.extend(common_bad.clone());
    run::<ObjectMeta>(
        "ObjectMeta",
        &om,
        &[
            b"",
            b"\x0a\x00",
            b"\x38\x00",
            b"\x42\x00",
            b"\x42\x02\x08\x00",
            b"\x4a\x00",
            b"\x4a\x02\x08\x00",
            b"\x8a\x01\x02\x3a\x00",
            b"\x8a\x01\x04\x3a\x02\x0a\x00",
            b"\x8a\x01\x05\x3a\x03\x0a\x01\x7b",
            b"\x6a\x00",
        ],
        &mut out,
    );
    let mut lm = vec![
        json!({}),
        json!({"selfLink": "", "resourceVersion": "", "continue": "", "remainingItemCount": 0}),
        json!({"continue": "c", "remainingItemCount": 3}),
        json!({"remainingItemCount": null, "continue": null}),
    ];
    lm.extend(common_bad.clone());
    run::<ListMeta>(
        "ListMeta",
        &lm,
        &[b"", b"\x20\x00", b"\x0a\x00\x12\x00\x1a\x00"],
        &mut out,
    );
    let mut or = vec![
        json!({}),
        json!({"apiVersion": "", "kind": "", "name": "", "uid": "", "controller": false, "blockOwnerDeletion": null}),
        json!({"apiVersion": null, "kind": null, "name": null, "uid": null}),
    ];
    or.extend(common_bad.clone());
    run::<OwnerReference>("OwnerReference", &or, &[b"", b"\x30\x00"], &mut out);
    let mut mf = vec![
        json!({}),
        json!({"manager": "", "operation": "", "apiVersion": "", "time": "1970-01-01T00:00:00Z", "fieldsType": "", "fieldsV1": {}, "subresource": ""}),
        json!({"fieldsV1": {"b": 1, "a": [1, {"c": null}]}}),
        json!({"fieldsV1": 5}),
    ];
    mf.extend(common_bad.clone());
    run::<ManagedFieldsEntry>(
        "ManagedFieldsEntry",
        &mf,
        &[
            b"",
            b"\x3a\x00",
            b"\x3a\x02\x0a\x00",
            b"\x3a\x03\x0a\x01\x7b",
            b"\x3a\x04\x0a\x02\x7b\x7d",
            b"\x22\x00",
        ],
        &mut out,
    );
    let mut ls = vec![
        json!({}),
        json!({"matchLabels": {}, "matchExpressions": []}),
        json!({"matchLabels": null, "matchExpressions": null}),
        json!({"matchExpressions": [{}, {"key": "k", "operator": "In", "values": ["a", "b"]}, {"key": null, "operator": null, "values": null}]}),
    ];
    ls.extend(common_bad.clone());
    run::<LabelSelector>("LabelSelector", &ls, &[b"", b"\x12\x00"], &mut out);
    let mut lsr = vec![json!({}), json!({"key": "", "operator": "", "values": []})];
    lsr.extend(common_bad.clone());
    run::<LabelSelectorRequirement>("LabelSelectorRequirement", &lsr, &[b""], &mut out);
    let mut c = vec![
        json!({}),
        json!({"type": "", "status": "", "observedGeneration": 0, "lastTransitionTime": "1970-01-01T00:00:00Z", "reason": "", "message": ""}),
        json!({"type": "Ready", "status": "True", "observedGeneration": 2, "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Ok", "message": "fine"}),
        json!({"lastTransitionTime": null}),
        json!({"type": null}),
        json!({"observedGeneration": null}),
    ];
    c.extend(common_bad.clone());
    run::<Condition>("Condition", &c, &[b"", b"\x18\x00", b"\x22\x00"], &mut out);
    let mut tm = vec![
        json!({}),
        json!({"apiVersion": "", "kind": ""}),
        json!({"apiVersion": "v1", "kind": "Pod"}),
    ];
    tm.extend(common_bad.clone());
    run::<TypeMeta>("TypeMeta", &tm, &[b"", b"\x0a\x00\x12\x00"], &mut out);
    let mut st = vec![
        json!({}),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "gone", "reason": "NotFound", "details": {"name": "x", "kind": "cm", "causes": [{"reason": "r", "message": "m", "field": "f"}, {}], "retryAfterSeconds": 0, "uid": "", "group": ""}, "code": 404}),
        json!({"metadata": null, "code": 0, "status": "", "message": "", "reason": "", "details": null}),
        json!({"details": {}}),
        json!({"code": "x"}),
        json!({"details": {"causes": null, "retryAfterSeconds": null}}),
    ];
    st.extend(common_bad.clone());
    run::<Status>(
        "Status",
        &st,
        &[
            b"",
            b"\x30\x00",
            b"\x0a\x00",
            b"\x2a\x00",
            b"\x2a\x02\x28\x00",
        ],
        &mut out,
    );
    let mut sd = vec![
        json!({}),
        json!({"name": "", "group": "", "kind": "", "uid": "", "causes": [], "retryAfterSeconds": 0}),
    ];
    sd.extend(common_bad.clone());
    run::<StatusDetails>(
        "StatusDetails",
        &sd,
        &[b"", b"\x28\x00", b"\x22\x00"],
        &mut out,
    );
    let mut sc = vec![json!({}), json!({"reason": "", "message": "", "field": ""})];
    sc.extend(common_bad.clone());
    run::<StatusCause>("StatusCause", &sc, &[b"", b"\x0a\x00"], &mut out);
    // Default values.
    let _ = writeln!(
        out,
        "defaults {} {} {} {} {} {}",
        serde_json::to_string(&ObjectMeta::default()).unwrap(),
        serde_json::to_string(&Condition::default()).unwrap(),
        serde_json::to_string(&Status::default()).unwrap(),
        serde_json::to_string(&OwnerReference::default()).unwrap(),
        serde_json::to_string(&ManagedFieldsEntry::default()).unwrap(),
        serde_json::to_string(&ListMeta::default()).unwrap()
    );
    // Some(zero) constructed values.
    let om = ObjectMeta {
        name: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(Time::from_timestamp(0)),
        ..Default::default()
    };
    let _ = writeln!(
        out,
        "somezero {} {}",
        serde_json::to_string(&om).unwrap(),
        hex(&om.encode_to_vec())
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/meta_wire.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &out).expect("write golden file");
        return;
    }
    let golden = std::fs::read_to_string(&path).expect("golden file; run with UPDATE_GOLDEN=1");
    for (i, (want, got)) in golden.lines().zip(out.lines()).enumerate() {
        assert_eq!(got, want, "line {} of {} differs", i + 1, path.display());
    }
    assert_eq!(golden.lines().count(), out.lines().count(), "line count");
}
