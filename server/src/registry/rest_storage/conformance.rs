//! The conformance suite of a [`RestStorage`]: the semantics the traits' docs state, checked
//! against a user's implementation, after the storage backends' suite (`storage::testing`).
//!
//! A [`Factory`] gives each case a fresh [`Fixture`]: the storage under test, the kind it
//! stores, and a way to make it forget its history (to check the 410 for a watch from a
//! resourceVersion too old). [`run`] runs every case in turn;
//! [`rest_storage_conformance_tests!`](crate::rest_storage_conformance_tests) generates one
//! `#[tokio::test]` per case. A case panics, naming what it expected, on a
//! violation. The cases build objects of the kind with its empty storage-version object and
//! change them through labels, so they fit any kind.
//!
//! ```
//! use std::sync::Arc;
//! use futures::FutureExt;
//! use server::registry::rest_storage::conformance::{self, Factory, Fixture};
//! use server::registry::rest_storage::{RestStorage, memory::InMemory};
//!
//! let factory: Factory = Arc::new(|| {
//!     async {
//!         let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
//!         let memory = Arc::new(InMemory::new(kind));
//!         let forget = memory.clone();
//!         Fixture::new(kind, RestStorage::read_write(memory))
//!             .with_compact(move || forget.compact())
//!     }
//!     .boxed()
//! });
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! conformance::run(&factory).await;
//! # });
//! ```
//!
//! A read-only storage is checked the same way, with the writes made through
//! [`Fixture::with_writer`] (whatever changes the data it serves: its database's own client,
//! wrapped in the write traits).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::{Kind, Object};
use apimachinery::selectors::{FieldSelector, LabelSelector};
use apimachinery::status::{ApiError, StatusReason};
use futures::StreamExt;
use futures::future::BoxFuture;

use super::{Event, EventStream, ListOptions, Preconditions, RestStorage};

/// How long a case waits for an expected watch event.
pub const WAIT: Duration = Duration::from_secs(10);

/// What one case runs against.
pub struct Fixture {
    /// The kind stored.
    pub kind: &'static Kind,
    /// The storage under test: every verb the cases check must be in it.
    pub storage: RestStorage,
    /// The writes the cases make changes with: the storage itself unless
    /// [`Fixture::with_writer`] says otherwise.
    pub writer: RestStorage,
    /// Makes the storage forget every change so far, so a watch from an earlier
    /// resourceVersion must be 410 Gone.
    pub compact: Arc<dyn Fn() + Send + Sync>,
    /// Keeps whatever the storage needs alive (temporary directories, tasks).
    pub guard: Box<dyn std::any::Any + Send + Sync>,
}

impl Fixture {
    /// `storage` of `kind`'s objects, changed through its own write verbs; it cannot forget
    /// history until [`Fixture::with_compact`] says how.
    pub fn new(kind: &'static Kind, storage: RestStorage) -> Self {
        Self {
            kind,
            writer: storage.clone(),
            storage,
            compact: Arc::new(|| panic!("the fixture has no compact: use Fixture::with_compact")),
            guard: Box::new(()),
        }
    }

    /// Makes changes through `writer` (for a storage without write verbs).
    pub fn with_writer(mut self, writer: RestStorage) -> Self {
        self.writer = writer;
        self
    }

    /// Forgets history with `compact`.
    pub fn with_compact(mut self, compact: impl Fn() + Send + Sync + 'static) -> Self {
        self.compact = Arc::new(compact);
        self
    }

    /// Keeps `guard` alive as long as the fixture.
    pub fn with_guard(mut self, guard: impl std::any::Any + Send + Sync) -> Self {
        self.guard = Box::new(guard);
        self
    }

    fn namespaced(&self) -> bool {
        self.kind.storage_info().namespaced()
    }

    /// The namespace objects of the case go in (empty for a cluster-scoped kind).
    fn ns(&self, namespace: &'static str) -> &'static str {
        if self.namespaced() { namespace } else { "" }
    }

    /// A new object of the kind.
    fn object(&self, namespace: &str, name: &str, labels: &[(&str, &str)]) -> Box<dyn Object> {
        let mut object = self.kind.storage().new_object();
        let meta = object.metadata_mut();
        meta.name = Some(name.to_string());
        if self.namespaced() {
            meta.namespace = Some(namespace.to_string());
        }
        meta.uid = Some(format!("uid-{namespace}-{name}"));
        for (k, v) in labels {
            meta.labels.insert((*k).to_string(), (*v).to_string());
        }
        object
    }

    async fn create(
        &self,
        namespace: &str,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Box<dyn Object> {
        let creater = self.writer.creater().expect("the writer creates");
        creater
            .create(self.object(namespace, name, labels))
            .await
            .unwrap_or_else(|e| panic!("create {namespace}/{name}: {e:?}"))
    }

    async fn get(&self, namespace: &str, name: &str) -> Result<Box<dyn Object>, ApiError> {
        self.storage
            .getter()
            .expect("the storage gets")
            .get(namespace, name)
            .await
    }

    /// Sets a label on the stored object through the writer.
    async fn relabel(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
        value: &str,
    ) -> Box<dyn Object> {
        let getter = self
            .writer
            .getter()
            .or(self.storage.getter())
            .expect("a getter");
        let mut object = getter
            .get(namespace, name)
            .await
            .expect("the object to change");
        object
            .metadata_mut()
            .labels
            .insert(key.to_string(), value.to_string());
        self.writer
            .updater()
            .expect("the writer updates")
            .update(object)
            .await
            .unwrap_or_else(|e| panic!("update {namespace}/{name}: {e:?}"))
    }

    async fn delete(&self, namespace: &str, name: &str) -> Box<dyn Object> {
        self.writer
            .deleter()
            .expect("the writer deletes")
            .delete(namespace, name, &Preconditions::default())
            .await
            .unwrap_or_else(|e| panic!("delete {namespace}/{name}: {e:?}"))
    }

    async fn list(&self, options: ListOptions) -> super::ObjectList {
        self.storage
            .lister()
            .expect("the storage lists")
            .list(&options)
            .await
            .unwrap_or_else(|e| panic!("list: {e:?}"))
    }

    async fn watch(&self, options: ListOptions) -> Result<EventStream, ApiError> {
        self.storage
            .watcher()
            .expect("the storage watches")
            .watch(&options)
            .await
    }
}

/// Creates a fresh [`Fixture`] per case.
pub type Factory = Arc<dyn Fn() -> BoxFuture<'static, Fixture> + Send + Sync>;

/// A resourceVersion as a number: the server parses them as decimal integers.
fn revision(object: &dyn Object) -> u64 {
    let rv = object.metadata().resource_version.as_deref().unwrap_or("");
    rv.parse()
        .unwrap_or_else(|_| panic!("resourceVersion {rv:?} is not a decimal integer"))
}

fn assert_status(
    result: Result<impl std::fmt::Debug, ApiError>,
    code: u16,
    reason: StatusReason,
) -> ApiError {
    match result {
        Ok(v) => panic!("expected {code} {reason:?}, got {v:?}"),
        Err(e) => {
            assert_eq!((e.code(), e.reason()), (code, reason), "{e:?}");
            e
        }
    }
}

/// The next event of a watch that is not a bookmark, failing after [`WAIT`].
pub async fn next_event(stream: &mut EventStream) -> Event {
    loop {
        match tokio::time::timeout(WAIT, stream.next()).await {
            Ok(Some(Event::Bookmark { .. })) => continue,
            Ok(Some(event)) => return event,
            Ok(None) => panic!("the watch ended"),
            Err(_) => panic!("no watch event within {WAIT:?}"),
        }
    }
}

/// Asserts that no event but bookmarks arrives within `wait`.
pub async fn expect_no_event(stream: &mut EventStream, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return,
            Ok(Some(Event::Bookmark { .. })) => continue,
            Ok(other) => panic!("unexpected watch event {other:?}"),
        }
    }
}

/// What an event is and the name and resourceVersion of its object.
fn describe(event: &Event) -> (&'static str, String, u64) {
    match event {
        Event::Added(o) => ("ADDED", o.name().to_string(), revision(&**o)),
        Event::Modified(o) => ("MODIFIED", o.name().to_string(), revision(&**o)),
        Event::Deleted(o) => ("DELETED", o.name().to_string(), revision(&**o)),
        other => panic!("expected an object event, got {other:?}"),
    }
}

/// Create returns the object with a new resourceVersion, and get agrees; a missing object is
/// 404 NotFound.
pub async fn create_and_get(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    let created = f.create(ns, "a", &[("app", "web")]).await;
    assert_eq!(created.name(), "a");
    assert!(
        revision(&*created) > 0,
        "a created object has a resourceVersion"
    );
    let got = f.get(ns, "a").await.expect("get what was created");
    assert_eq!(got.name(), "a");
    assert_eq!(
        got.metadata().labels.get("app").map(String::as_str),
        Some("web")
    );
    assert_eq!(revision(&*got), revision(&*created));
    assert_status(f.get(ns, "missing").await, 404, StatusReason::NotFound);
}

/// A second create of the same namespace and name is 409 AlreadyExists and writes nothing.
pub async fn create_existing_is_already_exists(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    let first = f.create(ns, "a", &[]).await;
    let creater = f.writer.creater().expect("the writer creates");
    assert_status(
        creater
            .create(f.object(ns, "a", &[("second", "true")]))
            .await,
        409,
        StatusReason::AlreadyExists,
    );
    let got = f.get(ns, "a").await.expect("get");
    assert_eq!(revision(&*got), revision(&*first));
    assert!(got.metadata().labels.is_empty(), "the first object stays");
}

/// Every write gets a resourceVersion greater than every earlier one, across objects.
pub async fn resource_versions_strictly_increase(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    let mut last = 0;
    for name in ["a", "b", "c"] {
        let rv = revision(&*f.create(ns, name, &[]).await);
        assert!(rv > last, "{rv} after {last}");
        last = rv;
    }
    let rv = revision(&*f.relabel(ns, "a", "k", "v").await);
    assert!(rv > last, "an update's {rv} after {last}");
    last = rv;
    f.delete(ns, "b").await;
    let rv = revision(&*f.create(ns, "d", &[]).await);
    assert!(
        rv > last + 1,
        "a delete takes a resourceVersion of its own: {rv} after {last}"
    );
}

/// A list holds every object of the namespace asked for (all when empty), in namespace then
/// name order, and a resourceVersion at least every item's.
pub async fn list_objects_and_resource_version(factory: &Factory) {
    let f = factory().await;
    let (one, two) = (f.ns("one"), f.ns("two"));
    f.create(two, "b", &[]).await;
    f.create(one, "c", &[]).await;
    f.create(one, "a", &[]).await;
    let all = f.list(ListOptions::default()).await;
    let names: Vec<(String, String)> = all
        .items
        .iter()
        .map(|o| (o.namespace().to_string(), o.name().to_string()))
        .collect();
    let mut expected = vec![
        (one.to_string(), "a".to_string()),
        (one.to_string(), "c".to_string()),
        (two.to_string(), "b".to_string()),
    ];
    expected.sort();
    assert_eq!(names, expected);
    let list_rv: u64 = all
        .resource_version
        .parse()
        .expect("the list's resourceVersion");
    assert!(all.items.iter().all(|o| revision(&**o) <= list_rv));
    if f.namespaced() {
        let in_one = f
            .list(ListOptions {
                namespace: one.to_string(),
                ..ListOptions::default()
            })
            .await;
        let names: Vec<&str> = in_one.items.iter().map(|o| o.name()).collect();
        assert_eq!(names, ["a", "c"]);
    }
}

/// Label and field selectors filter a list.
pub async fn list_selectors(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    f.create(ns, "a", &[("app", "web")]).await;
    f.create(ns, "b", &[("app", "db")]).await;
    f.create(ns, "c", &[]).await;
    let names = |list: super::ObjectList| -> Vec<String> {
        list.items.iter().map(|o| o.name().to_string()).collect()
    };
    let web = f
        .list(ListOptions {
            labels: LabelSelector::parse("app=web").expect("selector"),
            ..ListOptions::default()
        })
        .await;
    assert_eq!(names(web), ["a"]);
    let labelled = f
        .list(ListOptions {
            labels: LabelSelector::parse("app").expect("selector"),
            ..ListOptions::default()
        })
        .await;
    assert_eq!(names(labelled), ["a", "b"]);
    let by_name = f
        .list(ListOptions {
            fields: FieldSelector::parse("metadata.name=b").expect("selector"),
            ..ListOptions::default()
        })
        .await;
    assert_eq!(names(by_name), ["b"]);
    let not_c = f
        .list(ListOptions {
            fields: FieldSelector::parse("metadata.name!=c").expect("selector"),
            labels: LabelSelector::parse("app!=db").expect("selector"),
            ..ListOptions::default()
        })
        .await;
    assert_eq!(names(not_c), ["a"]);
}

/// An update at the stored resourceVersion is written with a greater one; at a stale one it
/// is 409 Conflict with Kubernetes' message, and writes nothing; of a missing object, 404.
pub async fn update_optimistic_concurrency(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    let created = f.create(ns, "a", &[]).await;
    let updater = f.storage.updater().expect("the storage updates");
    let mut change = created.clone_object();
    change
        .metadata_mut()
        .labels
        .insert("step".into(), "one".into());
    let updated = updater
        .update(change)
        .await
        .expect("an update at the current resourceVersion");
    assert!(revision(&*updated) > revision(&*created));
    assert_eq!(
        updated.metadata().labels.get("step").map(String::as_str),
        Some("one")
    );
    let mut stale = created.clone_object();
    stale
        .metadata_mut()
        .labels
        .insert("step".into(), "stale".into());
    let e = assert_status(updater.update(stale).await, 409, StatusReason::Conflict);
    let resource = f.kind.storage_info();
    let qualified = if resource.group.is_empty() {
        resource.plural.to_string()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    };
    assert_eq!(
        e.message(),
        format!(
            "Operation cannot be fulfilled on {qualified} \"a\": the object has been modified; please apply your changes to the latest version and try again"
        )
    );
    let got = f.get(ns, "a").await.expect("get");
    assert_eq!(revision(&*got), revision(&*updated));
    assert_eq!(
        got.metadata().labels.get("step").map(String::as_str),
        Some("one")
    );
    assert_status(
        updater.update(f.object(ns, "missing", &[])).await,
        404,
        StatusReason::NotFound,
    );
}

/// A delete returns the last state and the object is gone; preconditions that do not hold
/// are 409 Conflict with Kubernetes' messages; a missing object is 404.
pub async fn delete_and_preconditions(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    let created = f.create(ns, "a", &[("app", "web")]).await;
    let deleter = f.storage.deleter().expect("the storage deletes");
    let uid = created.metadata().uid.clone().unwrap_or_default();
    let e = assert_status(
        deleter
            .delete(
                ns,
                "a",
                &Preconditions {
                    uid: Some("other".into()),
                    resource_version: None,
                },
            )
            .await,
        409,
        StatusReason::Conflict,
    );
    assert!(
        e.message().ends_with(&format!(
            "Precondition failed: UID in precondition: other, UID in object meta: {uid}"
        )),
        "{}",
        e.message()
    );
    let rv = revision(&*created);
    let e = assert_status(
        deleter
            .delete(
                ns,
                "a",
                &Preconditions {
                    uid: None,
                    resource_version: Some((rv + 100).to_string()),
                },
            )
            .await,
        409,
        StatusReason::Conflict,
    );
    assert!(
        e.message().ends_with(&format!(
            "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in meta: {rv}",
            rv + 100
        )),
        "{}",
        e.message()
    );
    f.get(ns, "a")
        .await
        .expect("still there after failed preconditions");
    let deleted = deleter
        .delete(
            ns,
            "a",
            &Preconditions {
                uid: Some(uid),
                resource_version: Some(rv.to_string()),
            },
        )
        .await
        .expect("a delete whose preconditions hold");
    assert_eq!(deleted.name(), "a");
    assert_eq!(
        deleted.metadata().labels.get("app").map(String::as_str),
        Some("web")
    );
    assert_status(f.get(ns, "a").await, 404, StatusReason::NotFound);
    assert_status(
        deleter.delete(ns, "a", &Preconditions::default()).await,
        404,
        StatusReason::NotFound,
    );
}

/// A watch from a list's resourceVersion sees every later change, in order, each with its
/// own greater resourceVersion; one from a later resourceVersion sees only what came after.
pub async fn watch_from_resource_version(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    f.create(ns, "before", &[]).await;
    let start = f.list(ListOptions::default()).await.resource_version;
    let mut from_list = f
        .watch(ListOptions {
            resource_version: start.clone(),
            ..ListOptions::default()
        })
        .await
        .expect("watch from the list's resourceVersion");
    let created = f.create(ns, "a", &[]).await;
    f.relabel(ns, "a", "k", "v").await;
    f.delete(ns, "a").await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&next_event(&mut from_list).await));
    }
    let kinds: Vec<(&str, &str)> = seen.iter().map(|(t, n, _)| (*t, n.as_str())).collect();
    assert_eq!(kinds, [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]);
    assert!(seen[0].2 > start.parse::<u64>().expect("resourceVersion"));
    assert!(seen[0].2 < seen[1].2 && seen[1].2 < seen[2].2, "{seen:?}");
    expect_no_event(&mut from_list, Duration::from_millis(200)).await;
    let mut from_create = f
        .watch(ListOptions {
            resource_version: revision(&*created).to_string(),
            ..ListOptions::default()
        })
        .await
        .expect("watch from the create's resourceVersion");
    let later: Vec<&str> = [
        next_event(&mut from_create).await,
        next_event(&mut from_create).await,
    ]
    .iter()
    .map(|e| describe(e).0)
    .collect();
    assert_eq!(later, ["MODIFIED", "DELETED"]);
}

/// A watch from `""` or `"0"` starts with an ADDED event for every existing object, then
/// every change.
pub async fn watch_from_now_starts_with_added(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    f.create(ns, "a", &[]).await;
    f.create(ns, "b", &[]).await;
    for rv in ["", "0"] {
        let existing: Vec<String> = f
            .list(ListOptions::default())
            .await
            .items
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let mut watch = f
            .watch(ListOptions {
                resource_version: rv.to_string(),
                ..ListOptions::default()
            })
            .await
            .expect("watch from now");
        let mut initial = Vec::new();
        for _ in 0..existing.len() {
            let (t, n, _) = describe(&next_event(&mut watch).await);
            assert_eq!(t, "ADDED", "resourceVersion {rv:?}: {n}");
            initial.push(n);
        }
        initial.sort();
        assert_eq!(initial, existing, "resourceVersion {rv:?}");
        let name = format!("after{}", rv.len());
        f.create(ns, &name, &[]).await;
        let (t, n, _) = describe(&next_event(&mut watch).await);
        assert_eq!((t, n.as_str()), ("ADDED", name.as_str()));
    }
}

/// A filtered watch: a change that makes an object match is ADDED, one that makes it stop
/// matching DELETED, and objects it does not select (or of another namespace) are not seen.
pub async fn watch_selectors(factory: &Factory) {
    let f = factory().await;
    let (ns, other) = (f.ns("ns"), f.ns("other"));
    let start = f.list(ListOptions::default()).await.resource_version;
    let mut watch = f
        .watch(ListOptions {
            namespace: ns.to_string(),
            labels: LabelSelector::parse("app=web").expect("selector"),
            resource_version: start,
            ..ListOptions::default()
        })
        .await
        .expect("filtered watch");
    f.create(ns, "plain", &[]).await;
    if f.namespaced() {
        f.create(other, "elsewhere", &[("app", "web")]).await;
    }
    f.create(ns, "web", &[("app", "web")]).await;
    let (t, n, _) = describe(&next_event(&mut watch).await);
    assert_eq!((t, n.as_str()), ("ADDED", "web"));
    f.relabel(ns, "plain", "app", "web").await;
    let (t, n, _) = describe(&next_event(&mut watch).await);
    assert_eq!(
        (t, n.as_str()),
        ("ADDED", "plain"),
        "starting to match is ADDED"
    );
    let stopped = f.relabel(ns, "web", "app", "db").await;
    let (t, n, rv) = describe(&next_event(&mut watch).await);
    assert_eq!(
        (t, n.as_str()),
        ("DELETED", "web"),
        "stopping to match is DELETED"
    );
    assert_eq!(rv, revision(&*stopped), "with the change's resourceVersion");
    f.delete(ns, "web").await;
    f.delete(ns, "plain").await;
    let (t, n, _) = describe(&next_event(&mut watch).await);
    assert_eq!((t, n.as_str()), ("DELETED", "plain"));
    expect_no_event(&mut watch, Duration::from_millis(200)).await;
}

/// A watch from a resourceVersion whose later changes the storage no longer has is 410
/// Expired: the error of `watch`, or a first `Error` event.
pub async fn watch_too_old_resource_version_is_gone(factory: &Factory) {
    let f = factory().await;
    let ns = f.ns("ns");
    let created = f.create(ns, "a", &[]).await;
    f.relabel(ns, "a", "k", "v").await;
    (f.compact)();
    f.relabel(ns, "a", "k", "w").await;
    let error = match f
        .watch(ListOptions {
            resource_version: revision(&*created).to_string(),
            ..ListOptions::default()
        })
        .await
    {
        Err(e) => e,
        Ok(mut stream) => match tokio::time::timeout(WAIT, stream.next()).await {
            Ok(Some(Event::Error(e))) => e,
            other => panic!("expected a 410 error event, got {other:?}"),
        },
    };
    assert_eq!(
        (error.code(), error.reason()),
        (410, StatusReason::Expired),
        "{error:?}"
    );
    let now = f.list(ListOptions::default()).await.resource_version;
    let mut current = f
        .watch(ListOptions {
            resource_version: now,
            ..ListOptions::default()
        })
        .await
        .expect("a watch from the current resourceVersion still starts");
    f.relabel(ns, "a", "k", "x").await;
    assert_eq!(describe(&next_event(&mut current).await).0, "MODIFIED");
}

/// Every case, by name.
pub const CASES: &[&str] = &[
    "create_and_get",
    "create_existing_is_already_exists",
    "resource_versions_strictly_increase",
    "list_objects_and_resource_version",
    "list_selectors",
    "update_optimistic_concurrency",
    "delete_and_preconditions",
    "watch_from_resource_version",
    "watch_from_now_starts_with_added",
    "watch_selectors",
    "watch_too_old_resource_version_is_gone",
];

/// Runs one case by name; false for an unknown name.
pub async fn run_case(name: &str, factory: &Factory) -> bool {
    match name {
        "create_and_get" => create_and_get(factory).await,
        "create_existing_is_already_exists" => create_existing_is_already_exists(factory).await,
        "resource_versions_strictly_increase" => resource_versions_strictly_increase(factory).await,
        "list_objects_and_resource_version" => list_objects_and_resource_version(factory).await,
        "list_selectors" => list_selectors(factory).await,
        "update_optimistic_concurrency" => update_optimistic_concurrency(factory).await,
        "delete_and_preconditions" => delete_and_preconditions(factory).await,
        "watch_from_resource_version" => watch_from_resource_version(factory).await,
        "watch_from_now_starts_with_added" => watch_from_now_starts_with_added(factory).await,
        "watch_selectors" => watch_selectors(factory).await,
        "watch_too_old_resource_version_is_gone" => {
            watch_too_old_resource_version_is_gone(factory).await
        }
        _ => return false,
    }
    true
}

/// Runs every case in turn, each on a fresh fixture.
pub async fn run(factory: &Factory) {
    for case in CASES {
        assert!(run_case(case, factory).await, "unknown case {case}");
    }
}

/// Generates one `#[tokio::test]` per conformance case for a factory expression of type
/// [`Factory`]; put it in a test module of the crate that implements the storage.
///
/// ```no_run
/// mod conformance {
///     use std::sync::Arc;
///     use futures::FutureExt;
///     use server::registry::rest_storage::conformance::{Factory, Fixture};
///     use server::registry::rest_storage::{RestStorage, memory::InMemory};
///
///     fn factory() -> Factory {
///         Arc::new(|| {
///             async {
///                 let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
///                 let memory = Arc::new(InMemory::new(kind));
///                 let forget = memory.clone();
///                 Fixture::new(kind, RestStorage::read_write(memory))
///                     .with_compact(move || forget.compact())
///             }
///             .boxed()
///         })
///     }
///
///     server::rest_storage_conformance_tests!(factory());
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! rest_storage_conformance_tests {
    ($factory:expr) => {
        $crate::rest_storage_conformance_tests!(@cases $factory;
            create_and_get,
            create_existing_is_already_exists,
            resource_versions_strictly_increase,
            list_objects_and_resource_version,
            list_selectors,
            update_optimistic_concurrency,
            delete_and_preconditions,
            watch_from_resource_version,
            watch_from_now_starts_with_added,
            watch_selectors,
            watch_too_old_resource_version_is_gone,
        );
    };
    (@cases $factory:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let factory: $crate::registry::rest_storage::conformance::Factory = $factory;
                $crate::registry::rest_storage::conformance::$case(&factory).await;
            }
        )*
    };
}
