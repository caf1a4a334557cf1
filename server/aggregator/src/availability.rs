//! The availability controller: kube-aggregator's local and remote availability controllers
//! in one reconciler. Every APIService gets its `Available` condition — `Local` for one
//! without a Service; for one with a Service the Service must exist (`ServiceNotFound`), a
//! `ClusterIP` Service must have the port (`ServicePortError`) and ready endpoints
//! (`EndpointsNotFound`, `MissingEndpoints`), and a `GET /apis/<group>/<version>` through the
//! proxy's transport must answer 2xx (`FailedDiscoveryCheck`); then `Passed`. The status is
//! written (through `/status`) only when it changes; the [`ApiServiceTable`] is kept in step.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use apimachinery::user::UserInfo;
use apiregistration_api::apiregistration_k8s_io::v1::{APIService, APIServiceCondition};
use apiregistration_api::conditions::{available, local_available, set_condition};
use async_trait::async_trait;
use axum::body::Body;
use server::controller::{Action, Mutate, ObjectKey, Reconciler};
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};

use crate::table::{ApiServiceEntry, ApiServiceTable, ServiceTarget};
use crate::transport::ProxyTransport;

/// How long the discovery check's request may take (kube-aggregator's client timeout).
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one attempt of the discovery check is waited for.
pub const DISCOVERY_ATTEMPT_WAIT: Duration = Duration::from_secs(6);

/// How many discovery requests are sent at once; one success is enough.
pub const DISCOVERY_ATTEMPTS: usize = 5;

/// How often an available remote APIService is checked again (kube-aggregator's resync).
pub const RECHECK_AVAILABLE: Duration = Duration::from_secs(30);

/// How often an unavailable remote APIService is checked again (kube-aggregator retries a
/// failing one with backoff; a fixed short period finds a server that came back as soon).
pub const RECHECK_UNAVAILABLE: Duration = Duration::from_secs(5);

/// A port of a Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServicePort {
    /// The port's name (empty when unnamed).
    pub name: String,
    /// The port number.
    pub port: i32,
}

/// What the availability check reads of a Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceSummary {
    /// Whether the Service is of type `ClusterIP` (only those have their ports and endpoints
    /// checked, as in kube-aggregator).
    pub cluster_ip: bool,
    /// The Service's ports.
    pub ports: Vec<ServicePort>,
}

/// What the availability check reads of one EndpointSlice of a Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointSliceSummary {
    /// Whether some endpoint is ready (an endpoint without the condition counts as ready).
    pub has_ready_endpoint: bool,
    /// The names of the slice's ports that have a number (empty for an unnamed port).
    pub port_names: Vec<String>,
}

/// The Services and EndpointSlices of the cluster, as the availability check reads them
/// (kube-aggregator's Service and EndpointSlice listers). Errors are worded for the
/// condition's message.
#[async_trait]
pub trait ServiceLister: Send + Sync + 'static {
    /// The Service `namespace/name`, or `None` when it does not exist.
    async fn service(&self, namespace: &str, name: &str) -> Result<Option<ServiceSummary>, String>;

    /// The EndpointSlices of the Service `namespace/name`.
    async fn endpoint_slices(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<EndpointSliceSummary>, String>;
}

/// The condition of the Service checks, or `None` when they pass (kube-aggregator's
/// messages). `service` is the lookup's result for `target`.
pub async fn service_condition(
    lister: &dyn ServiceLister,
    target: &ServiceTarget,
) -> Option<APIServiceCondition> {
    let (ns, name, port) = (&target.namespace, &target.name, target.port);
    let service = match lister.service(ns, name).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Some(available(
                false,
                "ServiceNotFound",
                format!("service/{name} in {ns:?} is not present"),
            ));
        }
        Err(e) => {
            return Some(unknown(
                "ServiceAccessError",
                format!("service/{name} in {ns:?} cannot be checked due to: {e}"),
            ));
        }
    };
    if !service.cluster_ip {
        return None;
    }
    let Some(port_name) = service
        .ports
        .iter()
        .find(|p| p.port == port)
        .map(|p| p.name.clone())
    else {
        return Some(available(
            false,
            "ServicePortError",
            format!("service/{name} in {ns:?} is not listening on port {port}"),
        ));
    };
    let slices = match lister.endpoint_slices(ns, name).await {
        Ok(s) => s,
        Err(e) => {
            return Some(unknown(
                "EndpointsAccessError",
                format!("service/{name} in {ns:?} cannot be checked due to: {e}"),
            ));
        }
    };
    if slices.is_empty() {
        return Some(available(
            false,
            "EndpointsNotFound",
            format!("cannot find endpointslices for service/{name} in {ns:?}"),
        ));
    }
    let active = slices
        .iter()
        .any(|s| s.has_ready_endpoint && s.port_names.contains(&port_name));
    if !active {
        return Some(available(
            false,
            "MissingEndpoints",
            format!(
                "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
            ),
        ));
    }
    None
}

fn unknown(reason: &str, message: String) -> APIServiceCondition {
    let mut c = available(false, reason, message);
    c.status = "Unknown".into();
    c
}

/// The path the discovery check asks: `/api/<version>` for `v1.`, else
/// `/apis/<group>/<version>`.
pub fn discovery_path(entry: &ApiServiceEntry) -> String {
    if entry.name == "v1." {
        format!("/api/{}", entry.version)
    } else {
        format!("/apis/{}/{}", entry.group, entry.version)
    }
}

/// The identity the discovery check is sent as.
fn checker() -> UserInfo {
    UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    }
}

/// One discovery request: `Ok` on a 2xx answer, else kube-aggregator's message.
async fn discovery_attempt(
    transport: &ProxyTransport,
    registry: &Registry,
    entry: &ApiServiceEntry,
    target: &ServiceTarget,
) -> Result<(), String> {
    let resolver = registry.service_resolver();
    let resolved = resolver.resolve(&target.namespace, &target.name, target.port)?;
    let authority = crate::proxy::authority_of(&resolved)
        .ok_or_else(|| format!("invalid address {resolved}"))?;
    // Written as Go writes the URL (the port kept even when it is 443).
    let url = format!("https://{authority}{}", discovery_path(entry));
    let client = transport
        .client(&authority, target)
        .map_err(|e| e.to_string())?;
    let mut req = http::Request::get(url.as_str())
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    crate::headers::set_identity(req.headers_mut(), &checker());
    let call = async {
        match tokio::time::timeout(DISCOVERY_TIMEOUT, client.request(req)).await {
            Err(_) => Err(format!(
                "failing or missing response from {url}: Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                url
            )),
            Ok(Err(e)) => Err(format!(
                "failing or missing response from {url}: Get {:?}: {}",
                url.as_str(),
                crate::transport::describe_error(&e)
            )),
            Ok(Ok(resp)) if !resp.status().is_success() => {
                Err(format!("bad status from {url}: {}", resp.status().as_u16()))
            }
            Ok(Ok(_)) => Ok(()),
        }
    };
    match tokio::time::timeout(DISCOVERY_ATTEMPT_WAIT, call).await {
        Ok(result) => result,
        Err(_) => Err(format!("timed out waiting for {url}")),
    }
}

/// kube-aggregator's discovery check: [`DISCOVERY_ATTEMPTS`] requests at once; the check
/// passes when one succeeds, else fails with the last error.
pub async fn discovery_check(
    transport: &ProxyTransport,
    registry: &Registry,
    entry: &ApiServiceEntry,
    target: &ServiceTarget,
) -> Result<(), String> {
    let attempts =
        (0..DISCOVERY_ATTEMPTS).map(|_| discovery_attempt(transport, registry, entry, target));
    let mut last = Err("no attempt made".to_string());
    for result in futures::future::join_all(attempts).await {
        if result.is_ok() {
            return Ok(());
        }
        last = result;
    }
    last
}

/// The availability reconciler (see the module).
pub struct AvailabilityReconciler {
    store: Arc<Store>,
    table: Arc<ApiServiceTable>,
    transport: Arc<ProxyTransport>,
    registry: Arc<Registry>,
    services: Option<Arc<dyn ServiceLister>>,
}

impl AvailabilityReconciler {
    /// A reconciler of the APIServices in `store`, keeping `table`, checking Services through
    /// `services` (none: the Service checks are skipped and the discovery check decides).
    pub fn new(
        store: Arc<Store>,
        table: Arc<ApiServiceTable>,
        transport: Arc<ProxyTransport>,
        registry: Arc<Registry>,
        services: Option<Arc<dyn ServiceLister>>,
    ) -> Self {
        Self {
            store,
            table,
            transport,
            registry,
            services,
        }
    }

    /// The `Available` condition `service` should have now.
    async fn condition(&self, entry: &ApiServiceEntry) -> APIServiceCondition {
        let Some(target) = &entry.service else {
            return local_available();
        };
        if let Some(lister) = &self.services
            && let Some(failed) = service_condition(&**lister, target).await
        {
            return failed;
        }
        match discovery_check(&self.transport, &self.registry, entry, target).await {
            Ok(()) => available(true, "Passed", "all checks passed"),
            Err(message) => available(false, "FailedDiscoveryCheck", message),
        }
    }
}

#[async_trait]
impl Reconciler for AvailabilityReconciler {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.store.try_get("", &key.name).await? else {
            self.table.remove(&key.name);
            return Ok(Action::Done);
        };
        let Some(service) = object.downcast_ref::<APIService>() else {
            return Ok(Action::Done);
        };
        let entry = ApiServiceEntry::of(service);
        let condition = self.condition(&entry).await;
        let mut wanted = service.clone();
        set_condition(&mut wanted, condition.clone());
        let current = if wanted.status != service.status {
            if entry.available != (condition.status == "True") {
                tracing::info!(
                    apiservice = %key.name,
                    status = %condition.status,
                    reason = condition.reason.as_deref().unwrap_or(""),
                    message = condition.message.as_deref().unwrap_or(""),
                    "changing APIService availability"
                );
            }
            let set = Mutate(move |o: &mut dyn Object| {
                if let Some(s) = o.downcast_mut::<APIService>() {
                    set_condition(s, condition.clone());
                }
            });
            let opts = UpdateOptions {
                subresource: "status",
                ..Default::default()
            };
            match self
                .store
                .update("", &key.name, &set, &NoAdmission, &NoAdmission, opts)
                .await
            {
                Ok(updated) => updated
                    .object
                    .downcast_ref::<APIService>()
                    .map(ApiServiceEntry::of)
                    .unwrap_or(entry),
                Err(e) if e.code() == 404 => {
                    self.table.remove(&key.name);
                    return Ok(Action::Done);
                }
                Err(e) => return Err(e),
            }
        } else {
            entry
        };
        let remote = current.is_remote();
        let up = current.available;
        self.table.set(current);
        Ok(match (remote, up) {
            (false, _) => Action::Done,
            (true, true) => Action::RequeueAfter(RECHECK_AVAILABLE),
            (true, false) => Action::RequeueAfter(RECHECK_UNAVAILABLE),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Fake {
        services: HashMap<(String, String), ServiceSummary>,
        slices: Vec<EndpointSliceSummary>,
        fail: Option<String>,
    }

    #[async_trait]
    impl ServiceLister for Fake {
        async fn service(&self, ns: &str, name: &str) -> Result<Option<ServiceSummary>, String> {
            if let Some(e) = &self.fail {
                return Err(e.clone());
            }
            Ok(self
                .services
                .get(&(ns.to_string(), name.to_string()))
                .cloned())
        }
        async fn endpoint_slices(
            &self,
            _: &str,
            _: &str,
        ) -> Result<Vec<EndpointSliceSummary>, String> {
            Ok(self.slices.clone())
        }
    }

    fn target() -> ServiceTarget {
        ServiceTarget {
            namespace: "wardle".into(),
            name: "api".into(),
            port: 443,
            ca_bundle: Arc::from(Vec::new()),
            insecure_skip_tls_verify: true,
        }
    }

    fn reason_and_message(c: Option<APIServiceCondition>) -> Option<(String, String, String)> {
        c.map(|c| {
            (
                c.status,
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default(),
            )
        })
    }

    fn cluster_ip(port: i32, name: &str) -> ServiceSummary {
        ServiceSummary {
            cluster_ip: true,
            ports: vec![ServicePort {
                name: name.into(),
                port,
            }],
        }
    }

    #[tokio::test]
    async fn service_checks_have_kube_aggregators_reasons_and_messages() {
        let mut fake = Fake::default();
        assert_eq!(
            reason_and_message(service_condition(&fake, &target()).await),
            Some((
                "False".into(),
                "ServiceNotFound".into(),
                "service/api in \"wardle\" is not present".into()
            ))
        );
        fake.fail = Some("boom".into());
        assert_eq!(
            reason_and_message(service_condition(&fake, &target()).await),
            Some((
                "Unknown".into(),
                "ServiceAccessError".into(),
                "service/api in \"wardle\" cannot be checked due to: boom".into()
            ))
        );
        fake.fail = None;
        let key = ("wardle".to_string(), "api".to_string());
        fake.services.insert(key.clone(), cluster_ip(8443, "https"));
        assert_eq!(
            reason_and_message(service_condition(&fake, &target()).await),
            Some((
                "False".into(),
                "ServicePortError".into(),
                "service/api in \"wardle\" is not listening on port 443".into()
            ))
        );
        fake.services.insert(key.clone(), cluster_ip(443, "https"));
        assert_eq!(
            reason_and_message(service_condition(&fake, &target()).await),
            Some((
                "False".into(),
                "EndpointsNotFound".into(),
                "cannot find endpointslices for service/api in \"wardle\"".into()
            ))
        );
        fake.slices = vec![EndpointSliceSummary {
            has_ready_endpoint: false,
            port_names: vec!["https".into()],
        }];
        assert_eq!(
            reason_and_message(service_condition(&fake, &target()).await),
            Some(("False".into(), "MissingEndpoints".into(), "endpointslices for service/api in \"wardle\" have no addresses with port name \"https\"".into()))
        );
        fake.slices[0].has_ready_endpoint = true;
        assert_eq!(service_condition(&fake, &target()).await, None);
        fake.services.insert(
            key,
            ServiceSummary {
                cluster_ip: false,
                ports: vec![],
            },
        );
        fake.slices.clear();
        assert_eq!(
            service_condition(&fake, &target()).await,
            None,
            "an ExternalName Service is not checked"
        );
    }

    #[test]
    fn the_legacy_group_is_discovered_under_api() {
        let mut entry = ApiServiceEntry {
            name: "v1.".into(),
            group: String::new(),
            version: "v1".into(),
            service: None,
            group_priority_minimum: 18000,
            version_priority: 1,
            available: true,
            reason: String::new(),
            message: String::new(),
        };
        assert_eq!(discovery_path(&entry), "/api/v1");
        entry.name = "v1alpha1.wardle.example.com".into();
        entry.group = "wardle.example.com".into();
        entry.version = "v1alpha1".into();
        assert_eq!(discovery_path(&entry), "/apis/wardle.example.com/v1alpha1");
    }
}
