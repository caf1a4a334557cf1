//! The [`ServiceLister`] of a server that serves core `v1` Services and `discovery.k8s.io/v1`
//! EndpointSlices: reads them from their stores' watch caches, as kube-aggregator reads its
//! informers.

use std::sync::Arc;

use async_trait::async_trait;
use kubernetes_api::core::v1::Service;
use kubernetes_api::discovery_k8s_io::v1::EndpointSlice;
use server::registry::Store;
use storage::interface::ListOptions;

use crate::availability::{EndpointSliceSummary, ServiceLister, ServicePort, ServiceSummary};

/// The label naming the Service an EndpointSlice belongs to.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Services and EndpointSlices read from their stores.
pub struct StoreServiceLister {
    services: Arc<Store>,
    endpoint_slices: Arc<Store>,
}

impl StoreServiceLister {
    /// A lister over the Service and EndpointSlice stores.
    pub fn new(services: Arc<Store>, endpoint_slices: Arc<Store>) -> Self {
        Self {
            services,
            endpoint_slices,
        }
    }
}

/// What the availability check needs of a Service (a Service without a type is a
/// `ClusterIP` one, Kubernetes' default).
pub fn summarize_service(service: &Service) -> ServiceSummary {
    ServiceSummary {
        cluster_ip: service
            .spec
            .r#type
            .as_deref()
            .is_none_or(|t| t == "ClusterIP"),
        ports: service
            .spec
            .ports
            .iter()
            .map(|p| ServicePort {
                name: p.name.clone().unwrap_or_default(),
                port: p.port,
            })
            .collect(),
    }
}

/// What the availability check needs of an EndpointSlice: whether an endpoint is ready
/// (no condition counts as ready) and the names of its ports that have a number.
pub fn summarize_slice(slice: &EndpointSlice) -> EndpointSliceSummary {
    EndpointSliceSummary {
        has_ready_endpoint: slice
            .endpoints
            .iter()
            .any(|e| e.conditions.ready.unwrap_or(true)),
        port_names: slice
            .ports
            .iter()
            .filter(|p| p.port.is_some())
            .filter_map(|p| p.name.clone())
            .collect(),
    }
}

#[async_trait]
impl ServiceLister for StoreServiceLister {
    async fn service(&self, namespace: &str, name: &str) -> Result<Option<ServiceSummary>, String> {
        let found = self
            .services
            .try_get(namespace, name)
            .await
            .map_err(|e| e.message().to_string())?;
        Ok(found
            .as_deref()
            .and_then(|o| o.downcast_ref::<Service>())
            .map(summarize_service))
    }

    async fn endpoint_slices(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<EndpointSliceSummary>, String> {
        let opts = ListOptions {
            resource_version: "0".to_string(),
            ..Default::default()
        };
        let (all, _) = self
            .endpoint_slices
            .list(namespace, opts)
            .await
            .map_err(|e| e.message().to_string())?;
        Ok(all
            .iter()
            .filter_map(|o| o.downcast_ref::<EndpointSlice>())
            .filter(|s| {
                s.metadata
                    .labels
                    .get(SERVICE_NAME_LABEL)
                    .map(String::as_str)
                    == Some(name)
            })
            .map(summarize_slice)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn services_and_slices_are_summarized_as_kube_aggregator_reads_them() {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "api", "namespace": "wardle"},
            "spec": {"ports": [{"name": "https", "port": 443}, {"port": 80}]}
        }))
        .unwrap();
        let s = summarize_service(&svc);
        assert!(s.cluster_ip);
        assert_eq!(
            s.ports[0],
            ServicePort {
                name: "https".into(),
                port: 443
            }
        );
        assert_eq!(s.ports[1].name, "");
        let ext: Service = serde_json::from_value(json!({
            "metadata": {"name": "api", "namespace": "wardle"},
            "spec": {"type": "ExternalName", "externalName": "localhost"}
        }))
        .unwrap();
        assert!(!summarize_service(&ext).cluster_ip);
        let slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "api-1", "namespace": "wardle"},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": false}},
                          {"addresses": ["10.0.0.2"]}],
            "ports": [{"name": "https", "port": 8443}, {"name": "nope"}]
        }))
        .unwrap();
        let e = summarize_slice(&slice);
        assert!(e.has_ready_endpoint);
        assert_eq!(e.port_names, ["https"]);
    }
}
