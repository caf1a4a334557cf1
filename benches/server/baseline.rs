//! The baselines served over HTTPS: minimal axum handlers on the same TLS setup as apiary (its
//! `TlsReloader`: rustls, TLS 1.3/1.2, ALPN h2 and http/1.1, client certificates verified
//! against the apiary CA) and the same hyper connection builder.
//!
//! - GET of any ConfigMap path returns fixed bytes (the GET baseline).
//! - With a store directory, POST to a ConfigMap collection is the thinnest durable create
//!   server: it stores the request body as it came, with [`Condition::Absent`], in the embedded
//!   engine apiary uses (same options), and answers 201 with the fixed bytes. No decoding,
//!   validation, metadata or watch cache: what any server must at least pay per create on this
//!   machine (TLS, HTTP, the durable write).
//!
//! It runs as a child process (this bench binary started with [`MODE`] as its first argument)
//! so that it, like apiary, has a process and runtime of its own. It prints its port, then
//! serves until its stdin closes.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::routing::{get, post};
use bytes::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use server::genericserver::tls::{TlsOptions, TlsReloader};
use std::sync::atomic::{AtomicU64, Ordering};
use storage::backend::{Backend, Condition, TxnOutcome};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The first argument that selects the serving mode.
pub const MODE: &str = "baseline-serve";

/// The path the GET baseline answers (any namespace and name).
const ROUTE: &str = "/api/v1/namespaces/{namespace}/configmaps/{name}";
/// The collection the create baseline answers (any namespace).
const COLLECTION: &str = "/api/v1/namespaces/{namespace}/configmaps";

/// What the create handler shares.
#[derive(Clone)]
struct Durable {
    store: Arc<EmbeddedBackend>,
    next: Arc<AtomicU64>,
    answer: Bytes,
}

/// Stores the body under a fresh key and answers 201 with the fixed bytes.
async fn create(
    State(d): State<Durable>,
    UrlPath(namespace): UrlPath<String>,
    body: Bytes,
) -> Result<
    (
        StatusCode,
        [(axum::http::HeaderName, &'static str); 1],
        Bytes,
    ),
    StatusCode,
> {
    let n = d.next.fetch_add(1, Ordering::Relaxed);
    let key = format!("/registry/configmaps/{namespace}/min-{n}");
    match d.store.put(&key, body, Condition::Absent, None).await {
        Ok(TxnOutcome::Committed { .. }) => Ok((
            StatusCode::CREATED,
            [(CONTENT_TYPE, "application/json")],
            d.answer.clone(),
        )),
        Ok(TxnOutcome::Failed { .. }) => Err(StatusCode::CONFLICT),
        Err(_) => Err(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

/// Serves with `args` = certificate, key, client CA, body file and, for the create baseline, a
/// store directory. Returns when stdin closes.
pub fn serve(args: &[String]) -> anyhow::Result<()> {
    let (cert, key, ca, body, store) = match args {
        [cert, key, ca, body] => (cert, key, ca, body, None),
        [cert, key, ca, body, store] => (cert, key, ca, body, Some(store)),
        _ => return Err(anyhow!("usage: {MODE} CERT KEY CA BODY [STORE-DIR]")),
    };
    let body = Bytes::from(std::fs::read(body).with_context(|| format!("reading {body}"))?);
    let tls = TlsReloader::new(&TlsOptions::new(
        PathBuf::from(cert),
        PathBuf::from(key),
        PathBuf::from(ca),
    ))?
    .config_for(None)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?.port());
        let answer = body.clone();
        let mut app = Router::new().route(
            ROUTE,
            get(move || {
                let body = body.clone();
                async move { ([(CONTENT_TYPE, "application/json")], body) }
            }),
        );
        if let Some(dir) = store {
            let store = Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir))?);
            let durable = Durable {
                store,
                next: Arc::new(AtomicU64::new(0)),
                answer,
            };
            app = app.merge(
                Router::new()
                    .route(COLLECTION, post(create))
                    .with_state(durable),
            );
        }
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        });
        tokio::select! {
            r = accept_loop(listener, tls, app) => r,
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
