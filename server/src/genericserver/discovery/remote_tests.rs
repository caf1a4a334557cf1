//! Discovery with a directory: priorities and group versions served elsewhere.

use serde_json::{Value, json};

use super::*;

fn scheme() -> Scheme {
    kubernetes_api::scheme()
}

fn build(directory: &DirectorySnapshot) -> Discovery {
    Discovery::with_runtime_kinds(
        &scheme(),
        &[],
        directory,
        &RuntimeConfig::default(),
        "127.0.0.1:6443",
        &|_, _| None,
    )
}

fn body(doc: &Document) -> Value {
    serde_json::from_slice(&doc.body).expect("JSON")
}

fn priority(g: i32, v: i32) -> Priority {
    Priority {
        group_priority_minimum: g,
        version_priority: v,
    }
}

fn flunders(kind_version: &str) -> Value {
    json!({"version": kind_version, "resources": [{"resource": "flunders",
        "responseKind": {"group": "wardle.example.com", "version": kind_version, "kind": "Flunder"},
        "scope": "Namespaced", "singularResource": "flunder", "verbs": ["get", "list"]}],
        "freshness": "Current"})
}

fn directory() -> DirectorySnapshot {
    let mut priorities = BTreeMap::new();
    for (g, v, p) in [
        ("rbac.authorization.k8s.io", "v1", priority(17000, 15)),
        ("coordination.k8s.io", "v1", priority(16500, 15)),
        ("wardle.example.com", "v1alpha1", priority(2000, 200)),
        ("wardle.example.com", "v1beta1", priority(2000, 100)),
        // A priority of a group nobody serves lists nothing.
        ("apiregistration.k8s.io", "v1", priority(20001, 0)),
    ] {
        priorities.insert((g.to_string(), v.to_string()), p);
    }
    DirectorySnapshot {
        priorities,
        remote: vec![
            RemoteVersion {
                group: "wardle.example.com".into(),
                version: "v1alpha1".into(),
                discovery: Some(flunders("v1alpha1")),
                freshness: Freshness::Current,
            },
            RemoteVersion {
                group: "wardle.example.com".into(),
                version: "v1beta1".into(),
                discovery: None,
                freshness: Freshness::Stale,
            },
        ],
    }
}

fn group_names(list: &Value, field: &str) -> Vec<String> {
    list[field]
        .as_array()
        .expect("list")
        .iter()
        .map(|g| {
            g.pointer("/metadata/name")
                .or_else(|| g.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn groups_ordered_by_priority_then_unlisted_in_scheme_order() {
    let plain = build(&DirectorySnapshot::default());
    let d = build(&directory());
    let unlisted: Vec<String> = group_names(&body(&plain.aggregated_apis[0]), "items")
        .into_iter()
        .filter(|g| g != "rbac.authorization.k8s.io" && g != "coordination.k8s.io")
        .collect();
    let mut expected = vec![
        "rbac.authorization.k8s.io".to_string(),
        "coordination.k8s.io".to_string(),
        "wardle.example.com".to_string(),
    ];
    expected.extend(unlisted);
    assert_eq!(group_names(&body(&d.aggregated_apis[0]), "items"), expected);
    assert_eq!(group_names(&body(&d.aggregated_apis[1]), "items"), expected);
    assert_eq!(group_names(&body(&d.api_group_list), "groups"), expected);
}

#[test]
fn remote_versions_by_version_priority_with_freshness() {
    let d = build(&directory());
    let list = body(&d.aggregated_apis[0]);
    let wardle = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "wardle.example.com")
        .expect("wardle listed");
    assert_eq!(wardle["versions"][0], flunders("v1alpha1"));
    assert_eq!(
        wardle["versions"][1],
        json!({"version": "v1beta1", "freshness": "Stale"})
    );
    let legacy = body(&d.api_group_list);
    let wardle = legacy["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "wardle.example.com")
        .expect("wardle listed");
    assert_eq!(
        wardle["preferredVersion"],
        json!({"groupVersion": "wardle.example.com/v1alpha1", "version": "v1alpha1"})
    );
    assert_eq!(wardle["versions"].as_array().unwrap().len(), 2);
}

#[test]
fn remote_group_document_served_and_version_left_to_its_server() {
    let d = build(&directory());
    let headers = HeaderMap::new();
    let group = d.groups.get("wardle.example.com").expect("group document");
    assert_eq!(body(group)["kind"], "APIGroup");
    assert_eq!(body(group)["preferredVersion"]["version"], "v1alpha1");
    assert!(d.serve("/apis/wardle.example.com", &headers).is_some());
    assert!(
        d.serve("/apis/wardle.example.com/v1alpha1", &headers)
            .is_none()
    );
    assert!(d.serve("/apis/coordination.k8s.io/v1", &headers).is_some());
}

#[test]
fn a_remote_version_replaces_the_local_one() {
    let mut dir = directory();
    dir.remote.push(RemoteVersion {
        group: "coordination.k8s.io".into(),
        version: "v1".into(),
        discovery: Some(json!({"version": "v1", "resources": []})),
        freshness: Freshness::Current,
    });
    let d = build(&dir);
    let list = body(&d.aggregated_apis[0]);
    let coordination = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "coordination.k8s.io")
        .unwrap();
    let v1 = coordination["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "v1")
        .unwrap();
    assert_eq!(v1["resources"], json!([]));
    assert!(
        d.serve("/apis/coordination.k8s.io/v1", &HeaderMap::new())
            .is_none()
    );
}

#[test]
fn etags_follow_the_remote_documents() {
    let before = build(&directory());
    let mut dir = directory();
    dir.remote[0].discovery = Some(flunders("v1alpha1")).map(|mut f| {
        f["resources"][0]["verbs"] = json!(["get", "list", "watch"]);
        f
    });
    let changed = build(&dir);
    assert_ne!(
        before.aggregated_apis[0].etag,
        changed.aggregated_apis[0].etag
    );
    // The legacy list names the same groups and versions.
    assert_eq!(before.api_group_list.etag, changed.api_group_list.etag);
    let same = build(&directory());
    assert_eq!(before.aggregated_apis[0].etag, same.aggregated_apis[0].etag);

    // Stale now: the entry stays, marked.
    let mut stale = directory();
    stale.remote[0].freshness = Freshness::Stale;
    let stale = build(&stale);
    assert_ne!(
        before.aggregated_apis[0].etag,
        stale.aggregated_apis[0].etag
    );
    assert!(
        String::from_utf8_lossy(&stale.aggregated_apis[0].body)
            .contains(r#""resource":"flunders""#)
    );
}

#[test]
fn removed_remote_versions_leave_every_document() {
    let mut dir = directory();
    dir.remote.clear();
    let d = build(&dir);
    let text = String::from_utf8_lossy(&d.aggregated_apis[0].body).into_owned();
    assert!(!text.contains("wardle"));
    assert!(!String::from_utf8_lossy(&d.api_group_list.body).contains("wardle"));
    assert!(!d.groups.contains_key("wardle.example.com"));
    // The core group is never reordered or joined by remote entries.
    assert_eq!(
        body(&d.aggregated_api[0])["items"][0]["versions"][0]["version"],
        "v1"
    );
}

#[test]
fn entries_with_an_empty_group_are_ignored() {
    let mut dir = directory();
    dir.remote.push(RemoteVersion {
        group: String::new(),
        version: "v2".into(),
        discovery: None,
        freshness: Freshness::Stale,
    });
    let d = build(&dir);
    assert_eq!(
        body(&d.api_versions)["versions"],
        json!(["v1"]),
        "the legacy core group stays local"
    );
}
