//! The generic server in-process: hooks, lifecycle signals, the delegation chain and graceful
//! shutdown, over real TLS on a loopback port.

mod https_common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use server::genericserver::Config;
use server::genericserver::director::{Delegate, DelegateFuture};
use server::genericserver::runtime_config::RuntimeConfig;
use server::genericserver::tls::TlsOptions;

/// Answers `/delegated` and hands everything else back.
struct Next;

impl Delegate for Next {
    fn handle(&self, req: http::Request<Body>) -> DelegateFuture {
        Box::pin(async move {
            if req.uri().path() == "/delegated" {
                Ok(http::Response::new(Body::from("from the next server")))
            } else {
                Err(req)
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_delegation_and_shutdown_order() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let localhost = IpAddr::from([127, 0, 0, 1]);
    let paths = server::pki::ensure(dir.path(), localhost, true).unwrap_or_else(|e| panic!("{e}"));
    let backend = storage::embedded::EmbeddedBackend::open(
        storage::embedded::EmbeddedOptions::new(dir.path().join("store")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tls = TlsOptions::new(
        paths.serving_cert.clone(),
        paths.serving_key.clone(),
        paths.ca_cert.clone(),
    );
    let groups: Vec<Arc<dyn server::ApiGroups>> =
        vec![Arc::new(controlplane::KubernetesApis::default())];
    let config = Config {
        scheme: Arc::new(demo_api::scheme()),
        request_timeout: Duration::from_secs(10),
        shutdown_delay: Duration::from_millis(300),
        runtime_config: RuntimeConfig::new(vec![("example.dev/v1alpha1".into(), false)]),
        max_requests_inflight: 0,
        max_mutating_requests_inflight: 0,
        authorization_modes: vec![controlplane::RBAC_MODE.to_string()],
        ..Config::new(
            groups,
            Arc::new(backend),
            SocketAddr::new(localhost, 0),
            tls,
        )
    };
    let mut server = config
        .complete()
        .and_then(|c| c.new_server())
        .unwrap_or_else(|e| panic!("{e}"));
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = Arc::clone(&release);
    server.add_post_start_hook(
        "test-gate",
        Arc::new(move || {
            let gate = Arc::clone(&gate);
            Box::pin(async move {
                gate.notified().await;
                Ok(())
            })
        }),
    );
    let pre_shutdown_ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&pre_shutdown_ran);
    let signals = server.signals().clone();
    let listening_when_hook_ran = Arc::new(AtomicBool::new(false));
    let listening = Arc::clone(&listening_when_hook_ran);
    let sig = signals.clone();
    server.add_pre_shutdown_hook(
        "test-pre-shutdown",
        Arc::new(move || {
            let flag = Arc::clone(&flag);
            let listening = Arc::clone(&listening);
            let sig = sig.clone();
            Box::pin(async move {
                flag.store(true, Ordering::SeqCst);
                listening.store(!sig.listener_stopped.is_signaled(), Ordering::SeqCst);
                Ok(())
            })
        }),
    );
    server.add_delegate(Arc::new(Next));
    let prepared = server.prepare_run().await.unwrap_or_else(|e| panic!("{e}"));
    let base = format!("https://127.0.0.1:{}", prepared.local_addr().port());
    server::pki::write_kubeconfig(&paths, localhost, prepared.local_addr().port(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(prepared.run(async move {
        let _ = stop_rx.await;
    }));
    let c = https_common::admin_client(dir.path());

    // Not ready until every post-start hook has finished.
    let mut readyz = c
        .get(format!("{base}/readyz?verbose"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(readyz.status().as_u16(), 500);
    let text = readyz.text().await.unwrap_or_default();
    assert!(
        text.contains("[-]poststarthook/test-gate failed: reason withheld"),
        "{text}"
    );
    assert!(!signals.has_been_ready.is_signaled());
    release.notify_one();
    signals.has_been_ready.wait().await;
    readyz = c
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(readyz.status().as_u16(), 200);

    // The delegation chain: unmatched paths reach the next server, then 404.
    let resp = c
        .get(format!("{base}/delegated"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        resp.text().await.unwrap_or_default(),
        "from the next server"
    );
    let resp = c
        .get(format!("{base}/not-here"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 404);

    // --runtime-config disabled example.dev/v1alpha1: not discovered and not served.
    let resp = c
        .get(format!("{base}/apis/example.dev/v1alpha1"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 404);
    let resp = c
        .get(format!(
            "{base}/apis/example.dev/v1alpha1/namespaces/default/widgets"
        ))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 404);
    let resp = c
        .get(format!(
            "{base}/apis/example.dev/v1/namespaces/default/widgets"
        ))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);

    let _ = stop_tx.send(());
    signals.shutdown_initiated.wait().await;
    let resp = c
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        resp.status().as_u16(),
        500,
        "readyz fails during the shutdown delay"
    );
    assert!(
        !signals.not_accepting_new_requests.is_signaled(),
        "the delay keeps serving"
    );
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .unwrap_or_else(|e| panic!("shutdown took too long: {e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(pre_shutdown_ran.load(Ordering::SeqCst));
    assert!(
        listening_when_hook_ran.load(Ordering::SeqCst),
        "pre-shutdown hooks run before the listener stops"
    );
    for s in [
        &signals.not_accepting_new_requests,
        &signals.listener_stopped,
        &signals.in_flight_drained,
    ] {
        assert!(s.is_signaled(), "{} not signaled", s.name());
    }
    assert!(
        c.get(format!("{base}/healthz")).send().await.is_err(),
        "listener still open"
    );
}
