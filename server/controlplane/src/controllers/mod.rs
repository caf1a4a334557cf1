//! Controllers the control plane runs in-process, through the same stores (and strategies) as
//! every request: the system namespaces every cluster has ([`bootstrap`]), and ([`start`]) the
//! namespace controller that empties a terminating namespace and then lets it go, the quota
//! controller that keeps every ResourceQuota's status counted, the cluster role aggregation
//! controller, and the ValidatingAdmissionPolicy type-checking controller. Both run as
//! post-start hooks of the generic server ([`crate::KubernetesApis`] installs them); the four
//! controllers run on the generic server's controller runtime ([`server::controller`]), as a
//! user's controllers do.

pub mod cluster_authentication;
pub mod cluster_role_aggregation;
pub mod namespace;
pub mod policy_type_checking;
pub mod resource_quota;
pub mod system_namespaces;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use server::endpoints::ApiContext;

/// Creates the namespaces every cluster has (`default`, `kube-system`, `kube-public`) if they
/// are missing, when the scheme serves namespaces. Idempotent; run as a post-start hook.
pub async fn bootstrap(api: &ApiContext) -> Result<(), ApiError> {
    if api.scheme.by_kind("", "Namespace").is_none() {
        return Ok(());
    }
    let namespaces = api.store(&kubernetes_api::core::NAMESPACE_KIND)?;
    system_namespaces::ensure(&namespaces).await
}

/// Starts, in the background, the controllers of the kinds the scheme serves: namespaces,
/// cluster role aggregation, ValidatingAdmissionPolicy type checking and resource quotas. Each
/// runs on the controller runtime ([`server::controller`]) and stops with the server.
pub fn start(api: &ApiContext) -> Result<(), ApiError> {
    let scheme = &api.scheme;
    if scheme.by_kind("", "Namespace").is_some() {
        api.spawn_controller(namespace::NamespaceController::new(
            api.registry.clone(),
            scheme.clone(),
        )?);
    }
    if scheme
        .by_kind("rbac.authorization.k8s.io", "ClusterRole")
        .is_some()
    {
        api.spawn_controller(cluster_role_aggregation::AggregationController::new(
            &api.registry,
        )?);
    }
    if scheme
        .by_kind("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
        .is_some()
    {
        api.spawn_controller(policy_type_checking::TypeCheckingController::new(
            &api.registry,
            scheme.clone(),
        )?);
    }
    if scheme.by_kind("", "ResourceQuota").is_some() {
        api.spawn_controller(resource_quota::QuotaController::new(
            api.registry.clone(),
            scheme.clone(),
        )?);
    }
    Ok(())
}

/// An update that writes a whole object computed beforehand, on the condition that the stored
/// object is still at the object's resourceVersion (a conflict otherwise).
pub struct Replace(pub Box<dyn Object>);

#[async_trait]
impl server::registry::UpdatedObjectInfo for Replace {
    async fn updated_object(&self, _old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        Ok(self.0.clone_object())
    }
}

/// What the controllers' unit tests share.
#[cfg(test)]
mod test_support {
    use std::future::Future;
    use std::sync::Arc;
    use std::time::Duration;

    use server::registry::Registry;

    /// Calls `check` every 20 ms until it returns `Ok`, and returns that value; panics with
    /// the last `Err` (what was seen instead) after 5 s.
    pub async fn eventually<T, F, Fut>(check: F) -> T
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            match check().await {
                Ok(value) => return value,
                Err(seen) => assert!(tokio::time::Instant::now() < deadline, "{seen}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A registry over a fresh embedded store in a temporary directory (kept while the
    /// directory lives).
    pub fn registry() -> (tempfile::TempDir, Arc<Registry>) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let backend = storage::embedded::EmbeddedBackend::open_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"));
        let registry = Arc::new(Registry::new(Arc::new(backend), "/registry".to_string()));
        (dir, registry)
    }
}
