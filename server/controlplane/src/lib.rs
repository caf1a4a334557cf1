//! The Kubernetes control plane of apiary (Kubernetes' `pkg/controlplane`, `plugin/pkg/admission`
//! and `plugin/pkg/auth/authorizer/rbac`): what the Kubernetes API groups bring to the generic
//! server, which knows no kind.
//!
//! - [`admission`]: the NamespaceLifecycle, admission webhook, admission policy and
//!   ResourceQuota plugins, and kube-apiserver's order of them.
//! - [`controllers`]: the system namespaces' bootstrap and the namespace, resource quota,
//!   cluster role aggregation and policy type-checking controllers.
//! - [`rbac`]: the RBAC authorizer (the `--authorization-mode=RBAC` mode and the rule resolver
//!   of escalation checks), its informer and the bootstrap policy.
//! - [`services`]: cluster IP and node port allocation, the `default/kubernetes` Service and
//!   its endpoints, and the service resolver of webhooks and aggregated APIs.
//!
//! [`KubernetesApis`] installs all of it through the generic server's
//! [`server::genericserver::groups::ApiGroups`] trait, the way a user's crate
//! installs its own groups:
//!
//! ```
//! use std::sync::Arc;
//!
//! use controlplane::KubernetesApis;
//! use server::genericserver::groups::{ApiGroups, scheme_of};
//!
//! let groups: Vec<Arc<dyn ApiGroups>> = vec![Arc::new(KubernetesApis::default())];
//! let scheme = scheme_of(&groups);
//! assert!(scheme.by_kind("", "Namespace").is_some());
//! assert!(scheme.by_kind("example.dev", "Widget").is_none());
//! ```

pub mod admission;
pub mod controllers;
pub mod rbac;
pub mod services;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use apimachinery::Scheme;
use apimachinery::admission::Plugin;
use apimachinery::rbac::RuleResolver;
use server::admission::AdmissionOrder;
use server::authz::{AuthorizationModes, Authorizer};
use server::genericserver::GenericServer;
use server::genericserver::groups::ApiGroups;
use server::registry::Registry;

use self::rbac::RbacAuthorizer;

/// The name of the RBAC authorization mode (`--authorization-mode=RBAC`).
pub const RBAC_MODE: &str = "RBAC";

/// The Kubernetes API groups (core, admissionregistration, authentication, authorization,
/// coordination, rbac) with their admission plugins, the `RBAC` authorization mode, the
/// ServiceAccount and Secret lookups of service-account tokens, the bootstrap of the system
/// namespaces and of the RBAC policy, and the controllers.
///
/// The bundle owns the RBAC authorizer: the same index answers `--authorization-mode=RBAC`,
/// the escalation checks of the RBAC kinds and `SelfSubjectRulesReview`, and is kept current
/// by the informer the `rbac/bootstrap-roles` hook starts whatever the modes.
#[derive(Clone, Default)]
pub struct KubernetesApis {
    rbac: Arc<RbacAuthorizer>,
    /// Whether the RBAC informer was started (the bootstrap hook runs until it succeeds).
    informer_started: Arc<AtomicBool>,
}

impl std::fmt::Debug for KubernetesApis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesApis").finish_non_exhaustive()
    }
}

impl KubernetesApis {
    /// The RBAC authorizer of the bundle.
    pub fn rbac(&self) -> &Arc<RbacAuthorizer> {
        &self.rbac
    }
}

impl ApiGroups for KubernetesApis {
    /// Registers the Kubernetes groups, core first, then by name.
    fn register(&self, scheme: &mut Scheme) {
        kubernetes_api::core::register(scheme);
        kubernetes_api::admissionregistration_k8s_io::register(scheme);
        kubernetes_api::authentication_k8s_io::register(scheme);
        kubernetes_api::authorization_k8s_io::register(scheme);
        kubernetes_api::coordination_k8s_io::register(scheme);
        kubernetes_api::discovery_k8s_io::register(scheme);
        kubernetes_api::rbac_authorization_k8s_io::register(scheme);
    }

    fn admission_order(&self) -> AdmissionOrder {
        admission::order()
    }

    fn admission_plugins(&self, registry: &Arc<Registry>, scheme: &Arc<Scheme>) -> Vec<Plugin> {
        admission::plugins(registry, scheme)
    }

    fn authorization_modes(&self, modes: &mut AuthorizationModes) {
        modes.add(RBAC_MODE, Arc::clone(&self.rbac) as Arc<dyn Authorizer>);
    }

    fn rule_resolver(&self) -> Option<Arc<dyn RuleResolver>> {
        Some(Arc::clone(&self.rbac) as Arc<dyn RuleResolver>)
    }

    /// Sets the ServiceAccount and Secret stores service-account tokens are checked against,
    /// adds the `apiary-bootstrap-namespaces`, `rbac/bootstrap-roles` and `apiary-controllers`
    /// post-start hooks and the admission webhook metrics.
    fn install(&self, server: &mut GenericServer) {
        let api = Arc::clone(server.api());
        // Service-account tokens are checked against the ServiceAccounts (and the Secrets
        // they may be bound to) of the registry.
        let lookup = server.service_account_lookup();
        for (kind, slot) in [
            ("ServiceAccount", &lookup.accounts),
            ("Secret", &lookup.secrets),
        ] {
            if let Some(kind) = api.scheme.by_kind("", kind)
                && let Ok(store) = api.store(kind)
            {
                let _ = slot.set(store);
            }
        }
        let bootstrap_api = Arc::clone(&api);
        server.add_post_start_hook(
            "apiary-bootstrap-namespaces",
            Arc::new(move || {
                let api = Arc::clone(&bootstrap_api);
                Box::pin(async move {
                    controllers::bootstrap(&api)
                        .await
                        .map_err(|e| e.to_string())
                })
            }),
        );
        let rbac_api = Arc::clone(&api);
        let rbac = Arc::clone(&self.rbac);
        let informer_started = Arc::clone(&self.informer_started);
        server.add_post_start_hook(
            "rbac/bootstrap-roles",
            Arc::new(move || {
                let api = Arc::clone(&rbac_api);
                let rbac = Arc::clone(&rbac);
                let started = Arc::clone(&informer_started);
                Box::pin(async move {
                    rbac::bootstrap::start(&api, &rbac, &started)
                        .await
                        .map_err(|e| e.to_string())
                })
            }),
        );
        let controllers_api = Arc::clone(&api);
        server.add_post_start_hook(
            "apiary-controllers",
            Arc::new(move || {
                let api = Arc::clone(&controllers_api);
                Box::pin(async move { controllers::start(&api).map_err(|e| e.to_string()) })
            }),
        );
        server.add_metrics(|registry| admission::webhook::metrics::METRICS.register(registry));
        if let Err(e) = services::install(server) {
            tracing::error!(error = %e, "installing Services failed");
        }
    }
}
