//! Discovery of remote resources and the metadata client over a recorded fake.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::status::StatusReason;
use apimachinery::user::UserInfo;
use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;
use crate::genericserver::discovery::{Priority, RemoteVersion};

fn resource(name: &str, scope: &str, verbs: &[&str]) -> Value {
    json!({
        "resource": name,
        "scope": scope,
        "responseKind": {"group": "w.example", "version": "", "kind": "Thing"},
        "verbs": verbs,
    })
}

fn remote(version: &str, freshness: Freshness, resources: Option<Vec<Value>>) -> RemoteVersion {
    RemoteVersion {
        group: "w.example".into(),
        version: version.into(),
        discovery: resources.map(|r| json!({"version": version, "resources": r})),
        freshness,
    }
}

#[test]
fn each_resource_goes_through_the_first_version_in_the_groups_order() {
    let mut priorities = BTreeMap::new();
    for (version, priority) in [("v1beta1", 200), ("v1", 100)] {
        priorities.insert(
            ("w.example".to_string(), version.to_string()),
            Priority {
                group_priority_minimum: 2000,
                version_priority: priority,
            },
        );
    }
    let snapshot = DirectorySnapshot {
        priorities,
        remote: vec![
            remote(
                "v1",
                Freshness::Current,
                Some(vec![
                    resource("things", "Namespaced", &["delete", "list"]),
                    resource("others", "Cluster", &["delete"]),
                ]),
            ),
            remote(
                "v1beta1",
                Freshness::Current,
                Some(vec![
                    resource("things", "Namespaced", &["delete", "deletecollection"]),
                    resource("things/status", "Namespaced", &["get"]),
                    json!({"resource": "kindless", "scope": "Namespaced", "verbs": ["delete"]}),
                    json!({"resource": "emptykind", "scope": "Namespaced", "verbs": ["delete"],
                        "responseKind": {"group": "", "version": "", "kind": ""}}),
                ]),
            ),
        ],
    };
    let found = discover(&snapshot);
    let seen: Vec<(&str, &str, bool, Vec<String>)> = found
        .resources
        .iter()
        .map(|r| {
            (
                r.version.as_str(),
                r.resource.as_str(),
                r.namespaced,
                r.verbs.clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "v1beta1",
                "things",
                true,
                vec!["delete".to_string(), "deletecollection".to_string()]
            ),
            ("v1", "others", false, vec!["delete".to_string()]),
        ]
    );
    assert_eq!(found.error(), None);
    let namespaced: Vec<&str> = found.namespaced().map(|r| r.resource.as_str()).collect();
    assert_eq!(namespaced, ["things"]);
    assert_eq!(
        found.resources[0].collection_path("doomed"),
        "/apis/w.example/v1beta1/namespaces/doomed/things"
    );
    assert_eq!(
        found.resources[1].collection_path("doomed"),
        "/apis/w.example/v1/others"
    );
    assert_eq!(
        found.resources[0].gvr_string(),
        "w.example/v1beta1, Resource=things"
    );
}

#[test]
fn stale_group_versions_fail_as_client_go_reports_them() {
    let snapshot = DirectorySnapshot {
        priorities: BTreeMap::new(),
        remote: vec![
            // Stale with what was fetched before: left out all the same.
            remote(
                "v1",
                Freshness::Stale,
                Some(vec![resource("things", "Namespaced", &["delete"])]),
            ),
            remote("v2", Freshness::Stale, None),
            RemoteVersion {
                group: "a.example".into(),
                version: "v1".into(),
                discovery: None,
                freshness: Freshness::Stale,
            },
        ],
    };
    let found = discover(&snapshot);
    assert!(found.resources.is_empty());
    assert_eq!(found.failed.len(), 3);
    assert_eq!(
        found.error().as_deref(),
        Some(
            "unable to retrieve the complete list of server APIs: \
             a.example/v1: stale GroupVersion discovery: a.example/v1, \
             w.example/v1: stale GroupVersion discovery: w.example/v1, \
             w.example/v2: stale GroupVersion discovery: w.example/v2"
        )
    );
}

/// One request as the fake saw it: method, URI, `Accept`, body, and the user's name and groups.
type Seen = (String, String, Option<String>, String, Vec<String>);

/// A remote server that records its requests and answers from a list.
#[derive(Default)]
struct Recorded {
    seen: Mutex<Vec<Seen>>,
    answers: Mutex<Vec<(u16, &'static str)>>,
}

#[async_trait]
impl RemoteResources for Recorded {
    fn discover(&self) -> RemoteDiscovery {
        RemoteDiscovery::default()
    }

    async fn send(
        &self,
        user: Arc<UserInfo>,
        request: http::Request<Bytes>,
    ) -> http::Response<Bytes> {
        let accept = request
            .headers()
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        self.seen.lock().push((
            request.method().to_string(),
            request.uri().to_string(),
            accept,
            String::from_utf8_lossy(request.body()).into_owned(),
            std::iter::once(user.name.clone())
                .chain(user.groups.iter().cloned())
                .collect(),
        ));
        let (code, body) = self.answers.lock().remove(0);
        http::Response::builder()
            .status(code)
            .body(Bytes::from_static(body.as_bytes()))
            .unwrap_or_default()
    }
}

fn things() -> RemoteResource {
    RemoteResource {
        group: "w.example".into(),
        version: "v1".into(),
        resource: "things".into(),
        namespaced: true,
        verbs: vec!["delete".into(), "list".into()],
    }
}

#[tokio::test]
async fn the_client_lists_metadata_and_deletes_as_its_user() {
    let remote = Arc::new(Recorded::default());
    *remote.answers.lock() = vec![
        (
            200,
            r#"{"kind":"PartialObjectMetadataList","items":[
                {"metadata":{"name":"a"}},
                {"metadata":{"name":"b","finalizers":["x/y"],"deletionTimestamp":"2026-01-01T00:00:00Z"}}]}"#,
        ),
        (200, r#"{"kind":"Status","status":"Success"}"#),
        (200, r#"{"kind":"Thing"}"#),
    ];
    let user = Arc::new(UserInfo {
        name: "system:serviceaccount:kube-system:namespace-controller".into(),
        groups: vec!["system:serviceaccounts".into()],
        ..UserInfo::default()
    });
    let client = RemoteClient::new(remote.clone(), user);
    let items = client
        .list(&things(), "doomed")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        items,
        [
            RemoteItem {
                name: "a".into(),
                finalizers: vec![],
                deleting: false
            },
            RemoteItem {
                name: "b".into(),
                finalizers: vec!["x/y".into()],
                deleting: true
            },
        ]
    );
    let options =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
    client
        .delete_collection(&things(), "doomed", &options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    client
        .delete(&things(), "doomed", "a", &options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let seen = remote.seen.lock().clone();
    let who = vec![
        "system:serviceaccount:kube-system:namespace-controller".to_string(),
        "system:serviceaccounts".to_string(),
    ];
    let body = options.to_string();
    assert_eq!(
        seen,
        [
            (
                "GET".to_string(),
                "/apis/w.example/v1/namespaces/doomed/things".to_string(),
                Some(ACCEPT.to_string()),
                String::new(),
                who.clone()
            ),
            (
                "DELETE".to_string(),
                "/apis/w.example/v1/namespaces/doomed/things".to_string(),
                Some("application/json".to_string()),
                body.clone(),
                who.clone()
            ),
            (
                "DELETE".to_string(),
                "/apis/w.example/v1/namespaces/doomed/things/a".to_string(),
                Some("application/json".to_string()),
                body,
                who
            ),
        ]
    );
}

const ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

#[tokio::test]
async fn errors_are_the_status_sent_or_client_gos_generic_ones() {
    let remote = Arc::new(Recorded::default());
    *remote.answers.lock() = vec![
        (
            503,
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"service unavailable","reason":"ServiceUnavailable","code":503}"#,
        ),
        (405, "method not allowed"),
        (404, ""),
        (502, "bad gateway"),
    ];
    let client = RemoteClient::new(remote, Arc::new(UserInfo::default()));
    let options = json!({});
    let unavailable = client
        .delete_collection(&things(), "doomed", &options)
        .await
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(
        (
            unavailable.code(),
            unavailable.reason(),
            unavailable.message()
        ),
        (503, StatusReason::ServiceUnavailable, "service unavailable")
    );
    let not_allowed = client
        .delete_collection(&things(), "doomed", &options)
        .await
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(
        (
            not_allowed.code(),
            not_allowed.reason(),
            not_allowed.message()
        ),
        (
            405,
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource (delete things.w.example)"
        )
    );
    let not_found = client
        .delete(&things(), "doomed", "a", &options)
        .await
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(
        not_found.message(),
        "the server could not find the requested resource (delete things.w.example a)"
    );
    let failed = client
        .list(&things(), "doomed")
        .await
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(
        (failed.code(), failed.message()),
        (
            502,
            "an error on the server (\"bad gateway\") has prevented the request from succeeding (get things.w.example)"
        )
    );
}
