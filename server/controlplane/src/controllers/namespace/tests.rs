//! The controller over a real registry: local contents, and remote ones through a fake
//! aggregator.

use apimachinery::meta::ObjectMeta;
use kubernetes_api::core::CONFIG_MAP_KIND;
use kubernetes_api::core::v1::ConfigMap;

use super::*;

/// A hold on a ConfigMap that only this test removes.
const HOLD: &str = "example.com/hold";

fn config_map(name: &str, finalizers: &[&str]) -> Box<dyn Object> {
    Box::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("doomed".into()),
            finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    })
}

/// Waits until `check` holds; panics with `what` after 5 s.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    super::super::test_support::eventually(|| async {
        if check().await {
            Ok(())
        } else {
            Err(what.to_string())
        }
    })
    .await
}

#[tokio::test]
async fn a_terminating_namespace_is_emptied_then_finalized_once_its_contents_are_gone() {
    let (_dir, registry) = super::super::test_support::registry();
    let scheme = Arc::new(kubernetes_api::scheme());
    let namespaces = registry
        .store(&NAMESPACE_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    let config_maps = registry
        .store(&CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    for name in ["doomed", "kept"] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces
            .create(Box::new(ns), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for (name, finalizers) in [("plain", &[][..]), ("held", &[HOLD][..])] {
        config_maps
            .create(config_map(name, finalizers), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let controller =
        NamespaceController::new(registry.clone(), scheme).unwrap_or_else(|e| panic!("{e}"));
    let running = tokio::spawn(controller.run(std::future::pending()));

    // A namespace that is not terminating is left alone.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left = config_maps.list_uncached("doomed").await.map(|l| l.len());
    assert_eq!(left.ok(), Some(2));

    namespaces
        .delete("", "doomed", &NoAdmission, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Its contents are deleted; the held ConfigMap stays, being deleted, and so does the
    // namespace, terminating with its finalizer.
    eventually("the plain ConfigMap was not deleted", || async {
        matches!(config_maps.try_get("doomed", "plain").await, Ok(None))
    })
    .await;
    eventually("the held ConfigMap was not marked deleted", || async {
        matches!(config_maps.try_get("doomed", "held").await,
            Ok(Some(o)) if o.metadata().deletion_timestamp.is_some())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ns = namespaces
        .get("", "doomed", "")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ns = ns.downcast_ref::<Namespace>().cloned().unwrap_or_default();
    assert_eq!(ns.status.phase.as_deref(), Some("Terminating"));
    assert_eq!(ns.spec.finalizers, [KUBERNETES_FINALIZER]);
    // Its status says what is left, as Kubernetes' namespace controller writes it.
    let conditions: Vec<(&str, &str, &str, &str)> = ns
        .status
        .conditions
        .iter()
        .map(|c| {
            (
                c.r#type.as_str(),
                c.status.as_str(),
                c.reason.as_deref().unwrap_or_default(),
                c.message.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            (
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered"
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed"
            ),
            (
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization"
            ),
            (
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances"
            ),
            (
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizerRemain",
                "Some finalizers are remaining: example.com/hold in 1 resource instances"
            ),
        ]
    );
    assert!(
        ns.status
            .conditions
            .iter()
            .all(|c| c.last_transition_time.is_some())
    );

    // Once the held ConfigMap is gone, the namespace is finalized and removed.
    let release = Mutate(|o: &mut dyn Object| o.metadata_mut().finalizers.clear());
    config_maps
        .update(
            "doomed",
            "held",
            &release,
            &NoAdmission,
            &NoAdmission,
            UpdateOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the emptied namespace was not removed", || async {
        matches!(namespaces.try_get("", "doomed").await, Ok(None))
    })
    .await;
    // Another namespace is untouched.
    assert!(matches!(namespaces.try_get("", "kept").await, Ok(Some(_))));
    running.abort();
}

/// One object of the fake remote server.
#[derive(Clone, Debug)]
struct RemoteObject {
    resource: &'static str,
    namespace: &'static str,
    name: &'static str,
    finalizers: Vec<String>,
    deleting: bool,
}

/// A fake aggregator with one remote group version, `w.example/v1`: `things` (which supports
/// `deletecollection`) and `others` (which does not), held in memory; its discovery is stale
/// while `available` is false. It records every request: method, path and user.
#[derive(Default)]
struct FakeRemote {
    available: parking_lot::Mutex<bool>,
    objects: parking_lot::Mutex<Vec<RemoteObject>>,
    requests: parking_lot::Mutex<Vec<(String, String, String)>>,
}

impl FakeRemote {
    fn object(resource: &'static str, namespace: &'static str, name: &'static str) -> RemoteObject {
        RemoteObject {
            resource,
            namespace,
            name,
            finalizers: Vec::new(),
            deleting: false,
        }
    }

    /// The names of the `resource` objects in `namespace`.
    fn names(&self, resource: &str, namespace: &str) -> Vec<&'static str> {
        self.objects
            .lock()
            .iter()
            .filter(|o| o.resource == resource && o.namespace == namespace)
            .map(|o| o.name)
            .collect()
    }

    /// Deletes the matching objects: those with finalizers are only marked.
    fn delete(&self, matches: impl Fn(&RemoteObject) -> bool) {
        let mut objects = self.objects.lock();
        for o in objects.iter_mut().filter(|o| matches(o)) {
            o.deleting = true;
        }
        objects.retain(|o| !(o.deleting && o.finalizers.is_empty()));
    }
}

#[async_trait::async_trait]
impl server::genericserver::remote_resources::RemoteResources for FakeRemote {
    fn discover(&self) -> server::genericserver::remote_resources::RemoteDiscovery {
        use server::genericserver::remote_resources::{RemoteDiscovery, RemoteResource};
        if !*self.available.lock() {
            return RemoteDiscovery {
                resources: Vec::new(),
                failed: [(
                    "w.example/v1".to_string(),
                    "stale GroupVersion discovery: w.example/v1".to_string(),
                )]
                .into(),
            };
        }
        let resource = |name: &str, verbs: &[&str]| RemoteResource {
            group: "w.example".into(),
            version: "v1".into(),
            resource: name.into(),
            namespaced: true,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        };
        RemoteDiscovery {
            resources: vec![
                resource("things", &["delete", "deletecollection", "get", "list"]),
                resource("others", &["delete", "get", "list"]),
                // Not deletable: left alone.
                resource("reports", &["get", "list"]),
            ],
            failed: Default::default(),
        }
    }

    async fn send(
        &self,
        user: Arc<apimachinery::user::UserInfo>,
        request: http::Request<axum::body::Bytes>,
    ) -> http::Response<axum::body::Bytes> {
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        self.requests
            .lock()
            .push((method.clone(), path.clone(), user.name.clone()));
        let parts: Vec<&str> = path.split('/').collect();
        // /apis/w.example/v1/namespaces/<ns>/<resource>[/<name>]
        let (namespace, resource, name) = (parts[5], parts[6], parts.get(7).copied());
        let body = match (method.as_str(), name) {
            ("GET", None) => {
                let items: Vec<serde_json::Value> = self
                    .objects
                    .lock()
                    .iter()
                    .filter(|o| o.resource == resource && o.namespace == namespace)
                    .map(|o| {
                        let mut meta =
                            serde_json::json!({"name": o.name, "finalizers": o.finalizers});
                        if o.deleting {
                            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
                        }
                        serde_json::json!({"metadata": meta})
                    })
                    .collect();
                serde_json::json!({"kind": "PartialObjectMetadataList", "items": items})
            }
            ("DELETE", None) if resource == "things" => {
                self.delete(|o| o.resource == resource && o.namespace == namespace);
                serde_json::json!({"kind": "Status", "status": "Success"})
            }
            ("DELETE", Some(name)) => {
                self.delete(|o| {
                    o.resource == resource && o.namespace == namespace && o.name == name
                });
                serde_json::json!({"kind": "Status", "status": "Success"})
            }
            _ => {
                return http::Response::builder()
                    .status(405)
                    .body(axum::body::Bytes::from(
                        ApiError::method_not_allowed().to_status_bytes(),
                    ))
                    .unwrap_or_default();
            }
        };
        http::Response::new(axum::body::Bytes::from(body.to_string()))
    }
}

/// The conditions of namespace `name`, as (type, status, reason, message).
async fn conditions_of(namespaces: &Store, name: &str) -> Vec<(String, String, String, String)> {
    let ns = namespaces
        .get("", name, "")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ns = ns.downcast_ref::<Namespace>().cloned().unwrap_or_default();
    assert_eq!(ns.status.phase.as_deref(), Some("Terminating"));
    assert_eq!(ns.spec.finalizers, [KUBERNETES_FINALIZER]);
    ns.status
        .conditions
        .iter()
        .map(|c| {
            (
                c.r#type.clone(),
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Calls `check` every 20 ms until it holds; panics with `what` after 20 s (a namespace whose
/// pass failed waits for its backoff or the 5 s resync).
async fn eventually_slow<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A registry with namespaces `doomed` and `kept`, a ConfigMap in `doomed`, and `remote` as
/// its remote resources.
async fn registry_with(
    remote: Arc<FakeRemote>,
) -> (tempfile::TempDir, Arc<Registry>, Arc<Store>, Arc<Store>) {
    let (dir, registry) = super::super::test_support::registry();
    let namespaces = registry
        .store(&NAMESPACE_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    let config_maps = registry
        .store(&CONFIG_MAP_KIND)
        .unwrap_or_else(|e| panic!("{e}"));
    for name in ["doomed", "kept"] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces
            .create(Box::new(ns), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    config_maps
        .create(config_map("local", &[]), &NoAdmission, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    registry.set_remote_resources(remote);
    (dir, registry, namespaces, config_maps)
}

#[tokio::test]
async fn remote_contents_are_deleted_as_the_namespace_controller_before_the_namespace_goes() {
    let remote = Arc::new(FakeRemote::default());
    *remote.available.lock() = true;
    let mut held = FakeRemote::object("things", "doomed", "held");
    held.finalizers = vec![HOLD.to_string()];
    *remote.objects.lock() = vec![
        FakeRemote::object("things", "doomed", "t1"),
        FakeRemote::object("things", "kept", "t2"),
        held,
        FakeRemote::object("others", "doomed", "o1"),
        FakeRemote::object("reports", "doomed", "r1"),
    ];
    let (_dir, registry, namespaces, config_maps) = registry_with(remote.clone()).await;
    let controller = NamespaceController::new(registry, Arc::new(kubernetes_api::scheme()))
        .unwrap_or_else(|e| panic!("{e}"));
    let running = tokio::spawn(controller.run(std::future::pending()));
    namespaces
        .delete("", "doomed", &NoAdmission, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // Everything deletable goes (one deletecollection for things, others one by one); the
    // held thing stays, being deleted, and so does the namespace.
    eventually("the remote contents were not deleted", || async {
        remote.names("things", "doomed") == ["held"]
            && remote.names("others", "doomed").is_empty()
            && matches!(config_maps.try_get("doomed", "local").await, Ok(None))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let conditions = conditions_of(&namespaces, "doomed").await;
    let condition = |t: &str| {
        conditions
            .iter()
            .find(|c| c.0 == t)
            .map(|c| (c.1.as_str(), c.2.as_str(), c.3.as_str()))
    };
    assert_eq!(
        condition("NamespaceContentRemaining"),
        Some((
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: things.w.example has 1 resource instances"
        ))
    );
    assert_eq!(
        condition("NamespaceFinalizersRemaining"),
        Some((
            "True",
            "SomeFinalizerRemain",
            "Some finalizers are remaining: example.com/hold in 1 resource instances"
        ))
    );
    assert_eq!(
        condition("NamespaceDeletionDiscoveryFailure"),
        Some((
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered"
        ))
    );
    assert_eq!(
        condition("NamespaceDeletionContentFailure").map(|c| c.0),
        Some("False")
    );
    // Every request was the namespace controller's, and only for `doomed`.
    let requests = remote.requests.lock().clone();
    assert!(
        requests
            .iter()
            .all(|(_, path, user)| path.contains("/namespaces/doomed/")
                && user == "system:serviceaccount:kube-system:namespace-controller"),
        "{requests:?}"
    );
    let kinds: std::collections::BTreeSet<(&str, &str)> = requests
        .iter()
        .map(|(m, p, _)| (m.as_str(), p.as_str()))
        .collect();
    for expected in [
        ("DELETE", "/apis/w.example/v1/namespaces/doomed/things"),
        ("GET", "/apis/w.example/v1/namespaces/doomed/things"),
        ("GET", "/apis/w.example/v1/namespaces/doomed/others"),
        ("DELETE", "/apis/w.example/v1/namespaces/doomed/others/o1"),
    ] {
        assert!(kinds.contains(&expected), "{expected:?} not in {kinds:?}");
    }
    assert!(
        !kinds
            .iter()
            .any(|(m, p)| *m == "DELETE" && p.ends_with("/others")),
        "{kinds:?}"
    );
    assert!(
        !kinds.iter().any(|(_, p)| p.contains("reports")),
        "{kinds:?}"
    );

    // Released, the held thing goes, and so does the namespace; the rest is untouched.
    remote.objects.lock().retain(|o| o.name != "held");
    eventually("the emptied namespace was not removed", || async {
        matches!(namespaces.try_get("", "doomed").await, Ok(None))
    })
    .await;
    assert_eq!(remote.names("things", "kept"), ["t2"]);
    assert_eq!(remote.names("reports", "doomed"), ["r1"]);
    running.abort();
}

#[tokio::test]
async fn a_failed_discovery_keeps_the_namespace_terminating_until_it_succeeds() {
    let remote = Arc::new(FakeRemote::default());
    *remote.objects.lock() = vec![FakeRemote::object("things", "doomed", "t1")];
    let (_dir, registry, namespaces, config_maps) = registry_with(remote.clone()).await;
    let controller = NamespaceController::new(registry, Arc::new(kubernetes_api::scheme()))
        .unwrap_or_else(|e| panic!("{e}"));
    let running = tokio::spawn(controller.run(std::future::pending()));
    namespaces
        .delete("", "doomed", &NoAdmission, &DeleteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // The local contents go all the same; the namespace stays, saying why.
    eventually("the local ConfigMap was not deleted", || async {
        matches!(config_maps.try_get("doomed", "local").await, Ok(None))
    })
    .await;
    eventually("the discovery failure was not recorded", || async {
        conditions_of(&namespaces, "doomed")
            .await
            .iter()
            .any(|c| c.0 == "NamespaceDeletionDiscoveryFailure" && c.1 == "True")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let conditions = conditions_of(&namespaces, "doomed").await;
    assert_eq!(
        conditions[0],
        (
            "NamespaceDeletionDiscoveryFailure".to_string(),
            "True".to_string(),
            "DiscoveryFailed".to_string(),
            "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: w.example/v1: stale GroupVersion discovery: w.example/v1".to_string()
        )
    );
    assert!(
        conditions[1..].iter().all(|c| c.1 == "False"),
        "{conditions:?}"
    );
    assert!(remote.requests.lock().is_empty());

    // Discovered again: its contents go, then the namespace.
    *remote.available.lock() = true;
    eventually_slow(
        "the namespace was not removed once discovery worked",
        || async { matches!(namespaces.try_get("", "doomed").await, Ok(None)) },
    )
    .await;
    assert!(remote.names("things", "doomed").is_empty());
    running.abort();
}
