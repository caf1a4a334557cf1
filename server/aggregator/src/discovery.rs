//! Merged discovery and OpenAPI: keeps the generic server's [`AggregatedApis`] (the table its
//! discovery documents and OpenAPI read, see `server::genericserver::aggregated`) in step with
//! the [`ApiServiceTable`], as kube-aggregator's discovery manager and OpenAPI controllers do.
//!
//! Every APIService sets the priorities of its group/version, which order `/apis` and the
//! versions of a group (local APIServices order the server's own groups). The documents of a
//! remote APIService's server — its aggregated discovery entry for the group/version (or the
//! legacy `/apis/<group>/<version>`), `/openapi/v2` and its `/openapi/v3` document — are
//! fetched through the same Service resolution and TLS as the proxy's, discovery as
//! `system:kube-aggregator` in group `system:masters` and OpenAPI as `system:aggregator`
//! (request-header identities over the front-proxy client certificate), right after the APIService changes and every
//! [`REFRESH_INTERVAL`] after that. A failed fetch keeps what was fetched last and marks the
//! group/version `Stale` in aggregated discovery; an APIService deleted or made local takes its
//! documents with it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue};
use server::genericserver::aggregated::AggregatedApis;
use server::genericserver::discovery::Priority;
use server::genericserver::remote_documents::{FetchError, GroupVersionDocuments, RemoteServer};
use server::registry::Registry;
use server::tls_client::{ClientCertificate, ClientTls, Trust};

use crate::table::{ApiServiceEntry, ApiServiceTable, ServiceTarget};
use crate::transport::ProxyTransport;

/// How often the documents of every remote APIService are fetched again (kube-aggregator's
/// discovery manager refreshes every minute).
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// The user the aggregator fetches discovery as (kube-aggregator's discovery identity, in
/// group `system:masters`).
pub const DISCOVERY_USER: &str = "system:kube-aggregator";

/// The user the aggregator fetches OpenAPI documents as, with no group (kube-aggregator's
/// OpenAPI downloader).
pub const OPENAPI_USER: &str = "system:aggregator";

/// A remote server's documents, reached through one client: kept while its Service, address
/// and trust stay the same, so its ETags spare unchanged documents.
struct Fetcher {
    target: ServiceTarget,
    base: String,
    server: Arc<RemoteServer>,
}

/// Keeps [`AggregatedApis`] in step with the APIServices (see the [module docs](self)).
pub struct DiscoveryAggregator {
    table: Arc<ApiServiceTable>,
    apis: Arc<AggregatedApis>,
    transport: Arc<ProxyTransport>,
    registry: Arc<Registry>,
    started: std::sync::atomic::AtomicBool,
}

impl DiscoveryAggregator {
    /// The aggregator of `table`'s APIServices into `apis`, fetching through the proxy's
    /// `transport` identity and the `registry`'s service resolver.
    pub fn new(
        table: Arc<ApiServiceTable>,
        apis: Arc<AggregatedApis>,
        transport: Arc<ProxyTransport>,
        registry: Arc<Registry>,
    ) -> Self {
        Self {
            table,
            apis,
            transport,
            registry,
            started: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Starts [`DiscoveryAggregator::run`] in the background, once (later calls do nothing).
    pub fn start(self: &Arc<Self>) {
        if !self.started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            let this = Arc::clone(self);
            tokio::spawn(async move { this.run().await });
        }
    }

    /// Runs until the table's owner goes away: a round whenever an APIService changes, and
    /// every [`REFRESH_INTERVAL`].
    pub async fn run(&self) {
        let mut changes = self.table.subscribe();
        let mut fetchers: BTreeMap<String, Fetcher> = BTreeMap::new();
        let mut known: BTreeSet<(String, String)> = BTreeSet::new();
        let mut remote: BTreeSet<(String, String)> = BTreeSet::new();
        loop {
            self.round(&mut fetchers, &mut known, &mut remote).await;
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // Several changes at once (autoregistration at start) make one round.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    changes.borrow_and_update();
                }
                _ = tokio::time::sleep(REFRESH_INTERVAL) => {}
            }
        }
    }

    /// One round: every APIService's priorities, every remote one's documents fetched (the
    /// fetches of different servers side by side), what went away removed.
    async fn round(
        &self,
        fetchers: &mut BTreeMap<String, Fetcher>,
        known: &mut BTreeSet<(String, String)>,
        remote: &mut BTreeSet<(String, String)>,
    ) {
        let entries: Vec<ApiServiceEntry> = self.table.snapshot().values().cloned().collect();
        let mut now_known = BTreeSet::new();
        let mut now_remote = BTreeSet::new();
        type Fetched = (String, String, Result<GroupVersionDocuments, FetchError>);
        let mut fetches: Vec<BoxFuture<'static, Fetched>> = Vec::new();
        for entry in &entries {
            if entry.group.is_empty() {
                // The legacy core group is not in `/apis`.
                continue;
            }
            let gv = (entry.group.clone(), entry.version.clone());
            self.apis.set_priority(
                &entry.group,
                &entry.version,
                Priority {
                    group_priority_minimum: entry.group_priority_minimum,
                    version_priority: entry.version_priority,
                },
            );
            now_known.insert(gv.clone());
            let Some(target) = &entry.service else {
                continue;
            };
            now_remote.insert(gv);
            let (group, version) = (entry.group.clone(), entry.version.clone());
            match self.fetcher(fetchers, &entry.name, target) {
                Ok(server) => fetches.push(
                    async move {
                        let docs = server.fetch(&group, &version).await;
                        (group, version, Ok(docs))
                    }
                    .boxed(),
                ),
                Err(e) => fetches.push(async move { (group, version, Err(e)) }.boxed()),
            }
        }
        for (group, version, result) in futures::future::join_all(fetches).await {
            match result {
                Ok(docs) => self.apis.apply(&group, &version, &docs),
                Err(e) => self.apis.mark_stale(&group, &version, e),
            }
        }
        for (group, version) in remote.difference(&now_remote) {
            self.apis.remove(group, version);
        }
        for (group, version) in known.difference(&now_known) {
            self.apis.remove_priority(group, version);
        }
        fetchers.retain(|name, _| entries.iter().any(|e| &e.name == name));
        *known = now_known;
        *remote = now_remote;
    }

    /// The fetcher of APIService `name`'s server: the one kept, when its Service still
    /// resolves to the same address with the same trust; else a new one.
    fn fetcher(
        &self,
        fetchers: &mut BTreeMap<String, Fetcher>,
        name: &str,
        target: &ServiceTarget,
    ) -> Result<Arc<RemoteServer>, FetchError> {
        let service_url = || {
            format!(
                "https://{}:{}",
                server::webhook::service_dns_name(&target.namespace, &target.name),
                target.port
            )
        };
        let failed = |message: String| FetchError::Request {
            url: service_url(),
            message,
        };
        let resolved = self
            .registry
            .service_resolver()
            .resolve(&target.namespace, &target.name, target.port)
            .map_err(failed)?;
        let base = resolved.as_str().trim_end_matches('/').to_string();
        if let Some(f) = fetchers.get(name)
            && f.target == *target
            && f.base == base
        {
            return Ok(Arc::clone(&f.server));
        }
        let trust = if target.insecure_skip_tls_verify {
            Trust::InsecureSkipVerify
        } else {
            Trust::from_ca_bundle(&target.ca_bundle)
        };
        let tls = ClientTls {
            trust,
            server_name: Some(server::webhook::service_dns_name(
                &target.namespace,
                &target.name,
            )),
            client_certificate: self.transport.identity().map(|id| ClientCertificate {
                chain_pem: id.cert_pem,
                key_pem: id.key_pem,
            }),
        }
        .build()
        .map_err(|e| failed(e.to_string()))?;
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .http1_only()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let mut headers = HeaderMap::new();
        headers.insert("x-remote-user", HeaderValue::from_static(DISCOVERY_USER));
        headers.insert("x-remote-group", HeaderValue::from_static("system:masters"));
        let mut openapi_headers = HeaderMap::new();
        openapi_headers.insert("x-remote-user", HeaderValue::from_static(OPENAPI_USER));
        let server = Arc::new(
            RemoteServer::new(client, base.clone())
                .with_headers(headers)
                .with_openapi_headers(openapi_headers),
        );
        fetchers.insert(
            name.to_string(),
            Fetcher {
                target: target.clone(),
                base,
                server: Arc::clone(&server),
            },
        );
        Ok(server)
    }
}
