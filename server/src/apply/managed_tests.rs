//! Tests of `managedFields` recording (updates, the cap on updaters, manager names, requested
//! entries) and of apply with its conflicts.

use super::*;
use serde_json::json;

fn req<'a>(manager: &'a str, force: bool) -> ApplyRequest<'a> {
    ApplyRequest {
        manager,
        api_version: "example.dev/v1",
        force,
        subresource: "",
        status_subresource: true,
    }
}

#[test]
fn apply_creates_then_conflicts_then_forces() {
    let schema = SchemaNode::untyped();
    let cfg = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 1, "color": "blue"}});
    let created = apply(None, &cfg, &req("kubectl", false), &schema).unwrap();
    assert_eq!(
        created["metadata"]["managedFields"][0]["manager"],
        "kubectl"
    );
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:color": {}, "f:replicas": {}}})
    );
    // Another manager updates replicas with a plain write.
    let mut updated = created.clone();
    updated["spec"]["replicas"] = json!(5);
    record_update(
        Some(&created),
        &mut updated,
        "kubectl-edit",
        "example.dev/v1",
        "",
        true,
        &schema,
    );
    let mf = updated["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(mf.len(), 2);
    assert_eq!(mf[1]["operation"], "Update");
    // Re-applying replicas 1 conflicts.
    let err = apply(Some(&updated), &cfg, &req("kubectl", false), &schema).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using example.dev/v1: .spec.replicas"
    );
    let cause = &err.details().unwrap().causes[0];
    assert_eq!(
        (
            cause.reason.as_str(),
            cause.message.as_str(),
            cause.field.as_str()
        ),
        (
            "FieldManagerConflict",
            "conflict with \"kubectl-edit\" using example.dev/v1",
            ".spec.replicas"
        )
    );
    let forced = apply(Some(&updated), &cfg, &req("kubectl", true), &schema).unwrap();
    assert_eq!(forced["spec"]["replicas"], 1);
    assert_eq!(
        forced["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn apply_removes_fields_no_longer_applied() {
    let schema = SchemaNode::untyped();
    let cfg = json!({"spec": {"replicas": 1, "color": "blue"}});
    let live = apply(None, &cfg, &req("a", false), &schema).unwrap();
    let next = apply(
        Some(&live),
        &json!({"spec": {"replicas": 2}}),
        &req("a", false),
        &schema,
    )
    .unwrap();
    assert_eq!(next["spec"], json!({"replicas": 2}));
}

/// Past ten `Update` managers the oldest are merged, per apiVersion, into
/// `ancient-changes`, which keeps their fields and the newest time merged.
#[test]
fn update_managers_are_capped_at_ten() {
    let entry = |i: usize, version: &str| ManagedEntry {
        manager: format!("m{i}"),
        operation: "Update".into(),
        api_version: version.into(),
        time: format!("2026-01-01T00:00:{i:02}Z"),
        subresource: String::new(),
        fields: FieldSet::from_fields_v1(&json!({"f:data": {format!("f:k{i}"): {}}})),
    };
    let applier = ManagedEntry {
        operation: "Apply".into(),
        ..entry(99, "v1")
    };
    // m1 is of another version: it is kept, and the bucket of v1 starts from m0.
    let mut list: Vec<ManagedEntry> = (0..12)
        .map(|i| entry(i, if i == 1 { "v1beta1" } else { "v1" }))
        .collect();
    list.push(applier.clone());
    cap_update_managers(&mut list);
    let names: Vec<&str> = list.iter().map(|e| e.manager.as_str()).collect();
    assert_eq!(
        names,
        [
            "ancient-changes",
            "m1",
            "m4",
            "m5",
            "m6",
            "m7",
            "m8",
            "m9",
            "m10",
            "m11",
            "m99"
        ]
    );
    let bucket = &list[0];
    assert_eq!(
        bucket.fields,
        FieldSet::from_fields_v1(&json!({"f:data": {"f:k0": {}, "f:k2": {}, "f:k3": {}}}))
    );
    assert_eq!(bucket.time, "2026-01-01T00:00:03Z");
    assert_eq!(
        (bucket.api_version.as_str(), bucket.operation.as_str()),
        ("v1", "Update")
    );
    // Ten updaters or fewer are left alone; a later overflow joins the existing bucket.
    let before = list.clone();
    cap_update_managers(&mut list);
    assert_eq!(list, before);
    list.push(entry(12, "v1"));
    cap_update_managers(&mut list);
    assert_eq!(list.len(), 11);
    assert!(list[0].fields.0.len() == 4 && list[0].manager == "ancient-changes");
}

#[test]
fn manager_from_agent() {
    assert_eq!(
        manager_from_user_agent("kubectl/v1.33.0 (linux/amd64) kubernetes/abc"),
        "kubectl"
    );
    assert_eq!(manager_from_user_agent(""), "unknown");
}

/// The create path (no old object) records what an update from an empty object records.
#[test]
fn record_update_without_old_matches_an_empty_old_object() {
    let schema = SchemaNode::untyped();
    let object = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}},
        "data": {"payload": "x", "other": "y"}, "list": [1, 2],
    });
    let drop_time = |mut v: Value| {
        for e in v["metadata"]["managedFields"].as_array_mut().unwrap() {
            e.as_object_mut().unwrap().remove("time");
        }
        v
    };
    let mut created = object.clone();
    record_update(None, &mut created, "m", "v1", "", false, &schema);
    let mut updated = object.clone();
    record_update(
        Some(&json!({})),
        &mut updated,
        "m",
        "v1",
        "",
        false,
        &schema,
    );
    assert_eq!(drop_time(created.clone()), drop_time(updated));
    assert_eq!(
        created["metadata"]["managedFields"][0]["fieldsV1"],
        json!({
            "f:data": {"f:other": {}, "f:payload": {}},
            "f:list": {},
            "f:metadata": {"f:labels": {"f:app": {}}},
        })
    );
}

#[test]
fn manager_from_agent_fast_path_agrees_with_the_filter() {
    let filtered = |ua: &str| filtered_manager(ua.split('/').next().unwrap_or("").trim());
    let long = "a".repeat(MAX_MANAGER_LEN);
    let longer = "a".repeat(MAX_MANAGER_LEN + 1);
    let long_utf8 = "é".repeat(MAX_MANAGER_LEN);
    for ua in [
        "perfh1/1.0",
        " kubectl /v1",
        "a\tb/1",
        "a\u{7f}b",
        "a\u{85}b",
        "é-client/2",
        "\u{1}",
        "~ !/x",
        long.as_str(),
        longer.as_str(),
        long_utf8.as_str(),
    ] {
        assert_eq!(manager_from_user_agent(ua), filtered(ua), "{ua:?}");
    }
}

#[test]
fn requested_managed_fields_as_kubernetes_takes_them() {
    let entry = json!({"manager": "kubectl", "operation": "Apply", "apiVersion": "example.dev/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:color": {}}}});
    let list = json!([entry]);
    assert_eq!(
        requested_managed_fields(Some(&list), ""),
        Some(list.clone())
    );
    // Through a subresource the request's list never counts.
    assert_eq!(requested_managed_fields(Some(&list), "status"), None);
    // `[{}]` resets; absent, empty or malformed lists keep the live ones.
    assert_eq!(
        requested_managed_fields(Some(&json!([{}])), ""),
        Some(json!([]))
    );
    assert_eq!(requested_managed_fields(None, ""), None);
    assert_eq!(requested_managed_fields(Some(&json!([])), ""), None);
    assert_eq!(
        requested_managed_fields(Some(&json!([{"manager": "m", "operation": "Delete"}])), ""),
        None
    );
    assert_eq!(requested_managed_fields(Some(&json!("x")), ""), None);
}

#[test]
fn record_update_starts_from_the_new_objects_managed_fields() {
    let schema = SchemaNode::untyped();
    let old = json!({"metadata": {"name": "w", "managedFields": [
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "example.dev/v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:color": {}}}}]}, "spec": {"color": "blue"}});
    let mut new = old.clone();
    new["metadata"]["managedFields"] = json!([
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "example.dev/v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:color": {}}}}]);
    record_update(
        Some(&old),
        &mut new,
        "kubectl",
        "example.dev/v1",
        "",
        true,
        &schema,
    );
    let mf = new["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(mf.len(), 1, "{mf:?}");
    assert_eq!(
        (mf[0]["manager"].as_str(), mf[0]["operation"].as_str()),
        (Some("kubectl"), Some("Apply"))
    );
}
