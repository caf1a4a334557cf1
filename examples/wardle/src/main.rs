//! wardle-apiserver: the Kubernetes groups and wardle.example.com, served by apiary.
use clap::Parser;

/// k8s.io/sample-apiserver's wardle.example.com, served by apiary.
#[derive(Parser)]
#[command(name = "wardle-apiserver", version)]
struct Cli {
    #[command(flatten)]
    server: server::ServerOptions,
}

fn main() -> std::process::ExitCode {
    let options = Cli::parse().server;
    // Behind an aggregator (`--authentication-kubeconfig`/`--authorization-kubeconfig`), the
    // main server owns namespaces, RBAC and the other Kubernetes groups: wardle serves its
    // own group only (see the README's "As an aggregated API server").
    let aggregated = options.delegation.is_delegating();
    let mut server = server::Server::new(options).version(server::version_info!());
    if !aggregated {
        server = server.install(controlplane::KubernetesApis::default());
    }
    server
        .install(wardle::register_all)
        .kubectl_hint("get flunders,fischers")
        .main()
}
