//! crontab-apiserver: the Kubernetes groups and stable.example.com (CronTabs, imported from
//! their CustomResourceDefinition), served by apiary with compiled types.
use clap::Parser;

/// The CronTab CustomResourceDefinition's API, served by apiary with compiled types.
#[derive(Parser)]
#[command(name = "crontab-apiserver", version)]
struct Cli {
    #[command(flatten)]
    server: server::ServerOptions,
}

fn main() -> std::process::ExitCode {
    server::Server::new(Cli::parse().server)
        .version(server::version_info!())
        .install(controlplane::KubernetesApis::default())
        .install(crontab::register_all)
        .kubectl_hint("get crontabs")
        .main()
}
