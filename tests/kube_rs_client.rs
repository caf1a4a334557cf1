//! kube-rs against the real binary: the `generated` crate's example client
//! (`generated/examples/widget_client.rs`, compiled into this test) lists, creates and watches
//! Widgets, while a `kube::runtime::watcher` started here sees its Widget arrive; then this
//! test drives `kube::Api<KubeObject<Widget>>` itself (create, list, get, merge patch,
//! server-side apply, status, scale, delete) and checks what watchers (a plain one and one on
//! streaming lists) report.

mod common;

#[allow(dead_code)]
#[path = "../generated/examples/widget_client.rs"]
mod widget_client;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use generated::core::v1::Namespace;
use generated::example_dev::v1::{Widget, WidgetSpec, WidgetStatus};
use generated::kube::KubeObject;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
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
