//! The GET baseline: a minimal axum handler returning fixed bytes, served over the same TLS
//! setup as apiary (its `server_config`: rustls, TLS 1.3/1.2, ALPN h2 and http/1.1, client
//! certificates verified against the apiary CA) and the same hyper connection builder.
//!
//! It runs as a child process (this bench binary started with [`MODE`] as its first argument)
//! so that it, like apiary, has a process and runtime of its own. It prints its port, then
//! serves until its stdin closes.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use bytes::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use server::genericserver::tls::{ReloadingCert, server_config};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The first argument that selects the serving mode.
pub const MODE: &str = "baseline-serve";

/// The path the baseline answers (any namespace and name).
const ROUTE: &str = "/api/v1/namespaces/{namespace}/configmaps/{name}";

/// Serves with `args` = certificate, key, client CA, body file. Returns when stdin closes.
pub fn serve(args: &[String]) -> anyhow::Result<()> {
    let [cert, key, ca, body] = args else {
        return Err(anyhow!("usage: {MODE} CERT KEY CA BODY"));
    };
    let body = Bytes::from(std::fs::read(body).with_context(|| format!("reading {body}"))?);
    let tls = server_config(
        ReloadingCert::load(PathBuf::from(cert), PathBuf::from(key))?,
        &PathBuf::from(ca),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?.port());
        let app = Router::new().route(
            ROUTE,
            get(move || {
                let body = body.clone();
                async move { ([(CONTENT_TYPE, "application/json")], body) }
            }),
        );
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        });
        tokio::select! {
            r = accept_loop(listener, Arc::new(tls), app) => r,
            _ = stdin_closed => Ok(()),
        }
    })
}

async fn accept_loop(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
) -> anyhow::Result<()> {
    let acceptor = TlsAcceptor::from(tls);
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http2().max_concurrent_streams(1000);
    let builder = Arc::new(builder);
    loop {
        let (tcp, _) = listener.accept().await?;
        tcp.set_nodelay(true)?;
        let (acceptor, builder, app) = (acceptor.clone(), Arc::clone(&builder), app.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = TowerToHyperService::new(app);
            let _ = builder
                .serve_connection_with_upgrades(TokioIo::new(tls), service)
                .await;
        });
    }
}
