//! kube-rs against the real binary: the `generated` crate's example client
//! (`generated/examples/widget_client.rs`, compiled into this test) lists, creates and watches
//! Widgets, while a `kube::runtime::watcher` started here sees its Widget arrive; then this
//! test drives `kube::Api<KubeObject<Widget>>` itself (create, list, get, merge patch,
//! server-side apply, status, scale, delete) and checks what watchers (a plain one and one on
//! streaming lists) report. A second test runs kube-rs discovery (legacy and aggregated),
//! `Api<DynamicObject>` at both Widget versions, a reflector store and a `Controller` that
//! reconciles `status` from `spec`.

mod common;

#[allow(dead_code)]
#[path = "../generated/examples/widget_client.rs"]
mod widget_client;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use generated::example_dev::v1::{Widget, WidgetSpec, WidgetStatus};
use generated::kube::KubeObject;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use kubernetes_api::core::v1::Namespace;
use tokio::sync::mpsc;

use common::Server;

/// The name the example creates.
const DEMO: &str = "widget-client-demo";

/// One watcher event, reduced to what the test compares.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Init,
    InitApply(String),
    InitDone,
    Apply(String, i32),
    Delete(String),
}

fn seen(event: watcher::Event<KubeObject<Widget>>) -> Seen {
    match event {
        watcher::Event::Init => Seen::Init,
        watcher::Event::InitApply(w) => Seen::InitApply(w.name_any()),
        watcher::Event::InitDone => Seen::InitDone,
        watcher::Event::Apply(w) => Seen::Apply(w.name_any(), w.spec.replicas),
        watcher::Event::Delete(w) => Seen::Delete(w.name_any()),
    }
}

/// Runs a watcher in the background, forwarding its events (or its error, as a panic message).
fn spawn_watcher(
    api: Api<KubeObject<Widget>>,
    config: watcher::Config,
) -> mpsc::UnboundedReceiver<Result<Seen, String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = watcher(api, config).boxed();
        loop {
            let item = match stream.try_next().await {
                Ok(Some(event)) => Ok(seen(event)),
                Ok(None) => break,
                Err(e) => Err(e.to_string()),
            };
            if tx.send(item).is_err() {
                break;
            }
        }
    });
    rx
}

/// Receives events until `want` is among them; returns everything received.
async fn until(rx: &mut mpsc::UnboundedReceiver<Result<Seen, String>>, want: &Seen) -> Vec<Seen> {
    let mut got = Vec::new();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = rx.recv().await {
            let event = item.unwrap_or_else(|e| panic!("watcher error after {got:?}: {e}"));
            let done = &event == want;
            got.push(event);
            if done {
                return;
            }
        }
    })
    .await;
    assert!(waited.is_ok(), "no {want:?} within 30s; saw {got:?}");
    got
}

async fn client(server: &Server) -> Client {
    let kubeconfig =
        Kubeconfig::read_from(server.kubeconfig()).unwrap_or_else(|e| panic!("kubeconfig: {e}"));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("config: {e}"));
    Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"))
}

fn widget(name: &str, replicas: i32) -> KubeObject<Widget> {
    let mut w = Widget {
        spec: WidgetSpec {
            replicas,
            color: None,
        },
        ..Widget::default()
    };
    w.metadata.name = Some(name.to_string());
    KubeObject::new(w).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn kube_rs_example_and_watchers() {
    let server = Server::start(&[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        let client = client(&server).await;
        let namespaces: Api<KubeObject<Namespace>> = Api::all(client.clone());
        let mut ns = Namespace::default();
        ns.metadata.name = Some("kube-rs".to_string());
        namespaces
            .create(&PostParams::default(), &KubeObject::new(ns).unwrap_or_else(|e| panic!("{e}")))
            .await
            .unwrap_or_else(|e| panic!("creating the namespace: {e}"));
        let widgets: Api<KubeObject<Widget>> = Api::namespaced(client.clone(), "kube-rs");

        // The example client, watched from here.
        let mut plain = spawn_watcher(widgets.clone(), watcher::Config::default());
        let initial = until(&mut plain, &Seen::InitDone).await;
        assert_eq!(initial, vec![Seen::Init, Seen::InitDone], "the namespace starts empty");
        let kubeconfig = server.kubeconfig().to_string_lossy().into_owned();
        widget_client::run(&kubeconfig, "kube-rs").await.unwrap_or_else(|e| panic!("widget_client example: {e:#}"));
        let created = until(&mut plain, &Seen::Apply(DEMO.to_string(), 2)).await;
        assert_eq!(created, vec![Seen::Apply(DEMO.to_string(), 2)]);
        let demo = widgets.get(DEMO).await.unwrap_or_else(|e| panic!("get {DEMO}: {e}"));
        assert_eq!(demo.spec.replicas, 2);
        assert_eq!(demo.spec.color.as_deref(), Some("blue"));
        assert!(demo.uid().is_some_and(|u| !u.is_empty()), "{demo:?}");
        // Run again: the Widget exists, and the example's watcher finds it in its initial list.
        widget_client::run(&kubeconfig, "kube-rs").await.unwrap_or_else(|e| panic!("widget_client example, second run: {e:#}"));

        // The typed Api directly.
        let mut streaming = spawn_watcher(widgets.clone(), watcher::Config::default().streaming_lists());
        let initial = until(&mut streaming, &Seen::InitDone).await;
        assert_eq!(initial, vec![Seen::Init, Seen::InitApply(DEMO.to_string()), Seen::InitDone], "streaming list");
        let mut selected = spawn_watcher(widgets.clone(), watcher::Config::default().labels("team=kube"));
        assert_eq!(until(&mut selected, &Seen::InitDone).await, vec![Seen::Init, Seen::InitDone]);

        let mut kr = widget("kr", 1);
        kr.metadata.labels = Some([("team".to_string(), "kube".to_string())].into_iter().collect());
        let made = widgets.create(&PostParams::default(), &kr).await.unwrap_or_else(|e| panic!("create: {e}"));
        assert_eq!(made.metadata.generation, Some(1));
        let list = widgets.list(&ListParams::default()).await.unwrap_or_else(|e| panic!("list: {e}"));
        let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
        names.sort();
        assert_eq!(names, vec!["kr".to_string(), DEMO.to_string()]);
        let labelled = widgets.list(&ListParams::default().labels("team=kube")).await.unwrap_or_else(|e| panic!("list -l: {e}"));
        assert_eq!(labelled.items.len(), 1);
        let dup = widgets.create(&PostParams::default(), &kr).await;
        assert!(matches!(&dup, Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists"), "{dup:?}");

        let patched = widgets
            .patch("kr", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})))
            .await
            .unwrap_or_else(|e| panic!("merge patch: {e}"));
        assert_eq!(patched.spec.replicas, 3);
        let applied = widgets
            .patch(
                "kr",
                &PatchParams::apply("kube-rs-test").force(),
                &Patch::Apply(serde_json::json!({
                    "apiVersion": "example.dev/v1", "kind": "Widget",
                    "metadata": {"name": "kr"}, "spec": {"replicas": 4, "color": "green"}
                })),
            )
            .await
            .unwrap_or_else(|e| panic!("server-side apply: {e}"));
        assert_eq!((applied.spec.replicas, applied.spec.color.as_deref()), (4, Some("green")));
        let managers: Vec<String> = applied.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
        assert!(managers.contains(&"kube-rs-test".to_string()), "{managers:?}");

        let with_status = widgets
            .patch_status(
                "kr",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"status": {"replicas": 4, "selector": "team=kube"}})),
            )
            .await
            .unwrap_or_else(|e| panic!("patch status: {e}"));
        assert_eq!(with_status.status, Some(WidgetStatus { replicas: 4, selector: Some("team=kube".to_string()) }));
        let scale = widgets.get_scale("kr").await.unwrap_or_else(|e| panic!("get scale: {e}"));
        assert_eq!(scale.spec.and_then(|s| s.replicas), Some(4));
        assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(4));
        assert_eq!(scale.status.and_then(|s| s.selector).as_deref(), Some("team=kube"));
        widgets
            .patch_scale("kr", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"replicas": 6}})))
            .await
            .unwrap_or_else(|e| panic!("patch scale: {e}"));
        let invalid = widgets.patch("kr", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"replicas": -1}}))).await;
        assert!(matches!(&invalid, Err(kube::Error::Api(s)) if s.code == 422 && s.reason == "Invalid"), "{invalid:?}");

        widgets.delete("kr", &DeleteParams::default()).await.unwrap_or_else(|e| panic!("delete: {e}"));
        let gone = widgets.get_opt("kr").await.unwrap_or_else(|e| panic!("get_opt: {e}"));
        assert!(gone.is_none(), "{gone:?}");

        let expected = vec![
            Seen::Apply("kr".to_string(), 1),
            Seen::Apply("kr".to_string(), 3),
            Seen::Apply("kr".to_string(), 4),
            Seen::Apply("kr".to_string(), 4),
            Seen::Apply("kr".to_string(), 6),
            Seen::Delete("kr".to_string()),
        ];
        for (name, rx) in [("plain", &mut plain), ("streaming", &mut streaming), ("selected", &mut selected)] {
            let got = until(rx, &Seen::Delete("kr".to_string())).await;
            assert_eq!(got, expected, "{name} watcher");
        }
    });
}

/// The reconciler of the test controller: copies `spec.replicas` to `status.replicas` and sets
/// the selector, through the status subresource.
async fn reconcile(
    widget: std::sync::Arc<KubeObject<Widget>>,
    api: std::sync::Arc<Api<KubeObject<Widget>>>,
) -> Result<kube::runtime::controller::Action, kube::Error> {
    let want = widget.spec.replicas;
    if widget.status.as_ref().map(|s| s.replicas) != Some(want) {
        let status = serde_json::json!({"status": {"replicas": want, "selector": format!("widget={}", widget.name_any())}});
        api.patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(status),
        )
        .await?;
    }
    Ok(kube::runtime::controller::Action::await_change())
}

fn error_policy(
    _: std::sync::Arc<KubeObject<Widget>>,
    _: &kube::Error,
    _: std::sync::Arc<Api<KubeObject<Widget>>>,
) -> kube::runtime::controller::Action {
    kube::runtime::controller::Action::requeue(Duration::from_millis(200))
}

/// Polls `get` until `done` holds for the Widget `name`.
async fn eventually(
    api: &Api<KubeObject<Widget>>,
    name: &str,
    done: impl Fn(&KubeObject<Widget>) -> bool,
) -> KubeObject<Widget> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let w = api
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("get {name}: {e}"));
        if done(&w) {
            return w;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never reached the state: {w:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn kube_rs_discovery_dynamic_reflector_and_controller() {
    use kube::core::{DynamicObject, GroupVersionKind};
    use kube::discovery::{Discovery, Scope};
    use kube::runtime::{Controller, WatchStreamExt, reflector};

    let server = Server::start(&[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        let client = client(&server).await;
        let gvk = GroupVersionKind::gvk("example.dev", "v1", "Widget");
        for aggregated in [false, true] {
            let discovery = Discovery::new(client.clone());
            let discovery = if aggregated {
                discovery.run_aggregated().await
            } else {
                discovery.run().await
            };
            let discovery =
                discovery.unwrap_or_else(|e| panic!("discovery (aggregated: {aggregated}): {e}"));
            let (ar, caps) = discovery
                .resolve_gvk(&gvk)
                .unwrap_or_else(|| panic!("Widget not discovered (aggregated: {aggregated})"));
            assert_eq!(ar.plural, "widgets");
            assert!(matches!(caps.scope, Scope::Namespaced), "{caps:?}");
            let group = discovery
                .groups()
                .find(|g| g.name() == "example.dev")
                .unwrap_or_else(|| panic!("no example.dev group"));
            assert_eq!(
                group.versions().collect::<Vec<_>>(),
                vec!["v1", "v1alpha1"],
                "versions in preference order"
            );
            assert_eq!(group.preferred_version_or_latest(), "v1");
        }

        // DynamicObject through the discovered ApiResource.
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .unwrap_or_else(|e| panic!("discovery: {e}"));
        let (ar, _) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("Widget not discovered"));
        let dynamic: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
        let mut obj = DynamicObject::new("dyn", &ar);
        obj.data = serde_json::json!({"spec": {"replicas": 2, "color": "green"}});
        let made = dynamic
            .create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("dynamic create: {e}"));
        assert_eq!(made.data["spec"]["replicas"], 2);
        let listed = dynamic
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("dynamic list: {e}"));
        assert_eq!(
            listed
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect::<Vec<_>>(),
            vec!["dyn".to_string()]
        );
        let alpha = GroupVersionKind::gvk("example.dev", "v1alpha1", "Widget");
        let (alpha_ar, _) = discovery
            .resolve_gvk(&alpha)
            .unwrap_or_else(|| panic!("v1alpha1 Widget not discovered"));
        let old: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &alpha_ar);
        let at_alpha = old
            .get("dyn")
            .await
            .unwrap_or_else(|e| panic!("v1alpha1 get: {e}"));
        assert_eq!(at_alpha.data["spec"]["size"], 2, "{at_alpha:?}");

        // A reflector's store follows the Widgets.
        let widgets: Api<KubeObject<Widget>> = Api::namespaced(client.clone(), "default");
        let (reader, writer) = reflector::store::<KubeObject<Widget>>();
        let stream = reflector(writer, watcher(widgets.clone(), watcher::Config::default()))
            .applied_objects();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(Ok(_)) = stream.next().await {}
        });
        tokio::time::timeout(Duration::from_secs(30), reader.wait_until_ready())
            .await
            .unwrap_or_else(|_| panic!("the reflector never became ready"))
            .unwrap_or_else(|e| panic!("reflector: {e}"));
        assert_eq!(
            reader
                .state()
                .iter()
                .map(|w| w.name_any())
                .collect::<Vec<_>>(),
            vec!["dyn".to_string()]
        );

        // A controller reconciles status from spec.
        let api = std::sync::Arc::new(widgets.clone());
        tokio::spawn(
            Controller::new(widgets.clone(), watcher::Config::default())
                .run(reconcile, error_policy, api)
                .for_each(|_| async {}),
        );
        let reconciled = eventually(&widgets, "dyn", |w| {
            w.status.as_ref().is_some_and(|s| s.replicas == 2)
        })
        .await;
        assert_eq!(
            reconciled
                .status
                .as_ref()
                .and_then(|s| s.selector.as_deref()),
            Some("widget=dyn")
        );
        widgets
            .create(&PostParams::default(), &widget("ctl", 5))
            .await
            .unwrap_or_else(|e| panic!("create ctl: {e}"));
        eventually(&widgets, "ctl", |w| {
            w.status.as_ref().is_some_and(|s| s.replicas == 5)
        })
        .await;
        widgets
            .patch_scale(
                "ctl",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {"replicas": 9}})),
            )
            .await
            .unwrap_or_else(|e| panic!("scale ctl: {e}"));
        eventually(&widgets, "ctl", |w| {
            w.status.as_ref().is_some_and(|s| s.replicas == 9)
        })
        .await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while reader.state().len() != 2
            || reader
                .get(&reflector::ObjectRef::new("ctl").within("default"))
                .is_none_or(|w| w.spec.replicas != 9)
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "reflector state: {:?}",
                reader.state()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        dynamic
            .delete("dyn", &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("dynamic delete: {e}"));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while reader.state().len() != 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "reflector kept a deleted Widget: {:?}",
                reader.state()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
