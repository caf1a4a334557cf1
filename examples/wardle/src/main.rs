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
    server::Server::new(Cli::parse().server)
        .version(server::version_info!())
        .install(controlplane::KubernetesApis::default())
        .install(wardle::register_all)
        .kubectl_hint("get flunders,fischers")
        .main()
}
