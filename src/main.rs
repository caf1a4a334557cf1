//! The `apiary` binary: the Kubernetes groups, CustomResourceDefinitions (the extension
//! server), APIServices (the aggregator) and the example.dev Widgets over the public builder, with the embedded store under `--data-dir` (or etcd with `--etcd-servers`) and a
//! CA, serving certificate and admin kubeconfig created on first start.

use clap::Parser;

/// mimalloc serves the many small per-request allocations faster than glibc malloc; built
/// without transparent huge pages (`no_thp`), which kept about 20 MiB more resident at idle.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Kubernetes-style declarative API server generated from API definitions.
#[derive(Parser)]
#[command(name = "apiary", version)]
struct Cli {
    #[command(flatten)]
    server: server::ServerOptions,
}

fn main() -> std::process::ExitCode {
    server::Server::new(Cli::parse().server)
        .version(server::version_info!())
        .install(controlplane::KubernetesApis::default())
        .install(apiextensions_server::ApiExtensions::default())
        .install(aggregator::Aggregator::default())
        .install(generated::example_dev::register)
        .kubectl_hint("get widgets")
        .main()
}
