//! Lists, creates and watches Widgets through kube-rs against the cluster (or apiary server)
//! of a kubeconfig file.
//!
//! ```text
//! cargo run -p generated --features kube --example widget_client -- <kubeconfig> [namespace]
//! ```
//!
//! It lists the Widgets of the namespace (default `default`), creates `widget-client-demo`
//! (replicas 2, color blue) if it does not exist, then watches Widgets with
//! `kube::runtime::watcher` and prints each event until the first event that shows the new
//! Widget; it fails when no such event arrives within 30 seconds. The root package's
//! `tests/kube_rs_client.rs` compiles this file and calls [`run`] against the apiary binary.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use generated::example_dev::v1::{Widget, WidgetSpec};
use generated::kube::KubeObject;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};

const NAME: &str = "widget-client-demo";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let kubeconfig_path = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: widget_client <kubeconfig> [namespace]"))?;
    let namespace = args.next().unwrap_or_else(|| "default".to_string());
    run(&kubeconfig_path, &namespace).await
}

/// Lists, creates and watches Widgets in `namespace` of the cluster of the kubeconfig file
/// `kubeconfig_path`.
pub async fn run(kubeconfig_path: &str, namespace: &str) -> anyhow::Result<()> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig_path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;
    let widgets: Api<KubeObject<Widget>> = Api::namespaced(client, namespace);

    let list = widgets.list(&ListParams::default()).await?;
    println!("{} widgets in {namespace}", list.items.len());
    for w in &list.items {
        println!(
            "  {} replicas={} color={}",
            w.name_any(),
            w.spec.replicas,
            w.spec.color.as_deref().unwrap_or("-")
        );
    }

    if widgets.get_opt(NAME).await?.is_none() {
        let mut widget = Widget {
            spec: WidgetSpec {
                replicas: 2,
                color: Some("blue".to_string()),
            },
            ..Widget::default()
        };
        widget.metadata.name = Some(NAME.to_string());
        let created = widgets
            .create(&PostParams::default(), &KubeObject::new(widget)?)
            .await?;
        println!(
            "created {} (uid {})",
            created.name_any(),
            created.uid().unwrap_or_default()
        );
    }

    let stream = watcher(widgets, watcher::Config::default()).boxed();
    let watched = tokio::time::timeout(Duration::from_secs(30), async {
        let mut stream = stream;
        while let Some(event) = stream.try_next().await? {
            match event {
                watcher::Event::Apply(w) | watcher::Event::InitApply(w) => {
                    println!("event: {} replicas={}", w.name_any(), w.spec.replicas);
                    if w.name_any() == NAME {
                        return Ok::<_, anyhow::Error>(());
                    }
                }
                watcher::Event::Delete(w) => println!("deleted: {}", w.name_any()),
                watcher::Event::Init | watcher::Event::InitDone => {}
            }
        }
        Ok(())
    })
    .await;
    match watched {
        Ok(result) => result?,
        Err(_) => anyhow::bail!("no watch event for {NAME} within 30s"),
    }
    Ok(())
}
