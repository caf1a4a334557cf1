//! The control plane's admission plugins (Kubernetes' `plugin/pkg/admission` and the
//! admission webhooks and policies of `k8s.io/apiserver`): [`namespace_lifecycle`], the
//! [`webhook`]s, the admission [`policy`] plugins and [`resource_quota`], in kube-apiserver's
//! order ([`order`]).

pub mod namespace_lifecycle;
pub mod policy;
pub mod resource_quota;
pub mod review;
pub mod webhook;

use std::sync::Arc;

use apimachinery::Scheme;
use apimachinery::admission::Plugin;
use server::admission::AdmissionOrder;
use server::registry::Registry;

/// The order the control plane's plugins run in, before and after those the definitions ship:
/// as kube-apiserver orders them, NamespaceLifecycle first, then the policies and webhooks,
/// ResourceQuota last.
pub fn order() -> AdmissionOrder {
    AdmissionOrder {
        first: vec![namespace_lifecycle::NAME],
        last: vec![
            policy::mutating::NAME,
            webhook::MUTATING_NAME,
            policy::validating::NAME,
            webhook::VALIDATING_NAME,
            resource_quota::NAME,
        ],
    }
}

/// The control plane's plugins, over the registry they read (those whose kinds `scheme` does
/// not serve are left out).
pub fn plugins(registry: &Arc<Registry>, scheme: &Scheme) -> Vec<Plugin> {
    namespace_lifecycle::plugin(registry, scheme)
        .into_iter()
        .chain(webhook::plugins(registry, scheme))
        .chain(policy::mutating::plugin(registry, scheme))
        .chain(policy::validating::plugin(registry, scheme))
        .chain(resource_quota::plugin(registry, scheme))
        .collect()
}
