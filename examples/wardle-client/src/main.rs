//! Lists the Flunders of a namespace and creates one, through kube-rs, with the `wardle`
//! crate's types (without its server):
//!
//! ```text
//! cargo run -- <kubeconfig> [namespace] [name]
//! ```
//!
//! It prints `<n> flunders in <namespace>` and one line per Flunder, then creates the Flunder
//! `name` (default `client-flunder`) referring to the Fischer `fischer-1` if it does not exist
//! and prints `created <name>`.

use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use wardle::kube::KubeObject;
use wardle::wardle_example_com::v1beta1::{Flunder, FlunderSpec};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let kubeconfig = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: wardle-client <kubeconfig> [namespace] [name]"))?;
    let namespace = args.next().unwrap_or_else(|| "default".to_string());
    let name = args.next().unwrap_or_else(|| "client-flunder".to_string());

    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    let flunders: Api<KubeObject<Flunder>> = Api::namespaced(Client::try_from(config)?, &namespace);

    let list = flunders.list(&ListParams::default()).await?;
    println!("{} flunders in {namespace}", list.items.len());
    for f in &list.items {
        let spec = &f.spec;
        println!(
            "  {} referenceType={}",
            f.name_any(),
            spec.reference_type.as_deref().unwrap_or("-")
        );
    }

    if flunders.get_opt(&name).await?.is_none() {
        let mut flunder = Flunder {
            spec: FlunderSpec {
                fischer_reference: Some("fischer-1".to_string()),
                reference_type: Some("Fischer".to_string()),
                ..FlunderSpec::default()
            },
            ..Flunder::default()
        };
        flunder.metadata.name = Some(name.clone());
        let created = flunders
            .create(&PostParams::default(), &KubeObject::new(flunder)?)
            .await?;
        println!("created {}", created.name_any());
    }
    Ok(())
}
