//! [`ApiGroups`]: how a bundle of API groups installs itself into the generic server.
//!
//! The generic server knows no kind. Everything kind-specific comes from the bundles of API
//! groups it is configured with ([`Config::groups`](super::Config::groups)), as the Kubernetes
//! control plane (`pkg/controlplane`) brings its groups, admission plugins, authorizers,
//! controllers and bootstrap to `k8s.io/apiserver`: the `controlplane` crate's
//! `KubernetesApis` is one such bundle, and a user's crate installs its own groups the same
//! way. Each method has a default that adds nothing, so a bundle implements only what it
//! brings.
//!
//! The server calls the methods in this order, for each bundle in installation order:
//! [`register`](ApiGroups::register) while the scheme is built (see [`scheme_of`]);
//! [`authorization_modes`](ApiGroups::authorization_modes) and
//! [`authenticators`](ApiGroups::authenticators) when the configuration is completed;
//! [`admission_order`](ApiGroups::admission_order),
//! [`admission_plugins`](ApiGroups::admission_plugins) and
//! [`rule_resolver`](ApiGroups::rule_resolver) when the [`ApiContext`] is built; and
//! [`install`](ApiGroups::install) once the server exists, to add post-start hooks (controllers,
//! bootstrap), health checks and metrics.
//!
//! ```
//! use std::sync::Arc;
//!
//! use apimachinery::Scheme;
//! use apimachinery::admission::Plugin;
//! use server::admission::AdmissionOrder;
//! use server::genericserver::GenericServer;
//! use server::genericserver::groups::{ApiGroups, scheme_of};
//! use server::registry::Registry;
//!
//! /// A bundle that serves no kind and orders a plugin of its own last.
//! struct MyGroups;
//!
//! impl ApiGroups for MyGroups {
//!     fn register(&self, _scheme: &mut Scheme) {
//!         // my_groups::register(scheme);
//!     }
//!
//!     fn admission_order(&self) -> AdmissionOrder {
//!         AdmissionOrder { first: Vec::new(), last: vec!["MyQuota"] }
//!     }
//!
//!     fn admission_plugins(&self, _registry: &Arc<Registry>, _scheme: &Arc<Scheme>) -> Vec<Plugin> {
//!         // The plugins read the registry's stores when they admit a write.
//!         Vec::new()
//!     }
//!
//!     fn install(&self, server: &mut GenericServer) {
//!         let api = Arc::clone(server.api());
//!         server.add_post_start_hook(
//!             "my-controllers",
//!             Arc::new(move || {
//!                 let _api = Arc::clone(&api);
//!                 Box::pin(async move { Ok(()) })
//!             }),
//!         );
//!     }
//! }
//!
//! let groups: Vec<Arc<dyn ApiGroups>> = vec![Arc::new(MyGroups)];
//! assert!(scheme_of(&groups).kinds().is_empty());
//! ```

use std::sync::Arc;

use apimachinery::Scheme;
use apimachinery::admission::Plugin;
use apimachinery::rbac::RuleResolver;

use super::GenericServer;
use crate::admission::AdmissionOrder;
use crate::authn::Authenticator;
use crate::authz::AuthorizationModes;
#[cfg(doc)]
use crate::endpoints::ApiContext;
use crate::registry::Registry;

/// A bundle of API groups and everything that comes with them: kinds, admission plugins and
/// their order, authorization modes, authenticators, the RBAC rule resolver, post-start hooks
/// (controllers, bootstrap), health checks and metrics. See the [module](self) for when each
/// method is called and an example.
pub trait ApiGroups: Send + Sync + 'static {
    /// Adds the bundle's kinds (with their OpenAPI documents and the admission plugins their
    /// definitions ship) to `scheme`.
    fn register(&self, scheme: &mut Scheme);

    /// The bundle's part of the order admission plugins run in. Default: none.
    fn admission_order(&self) -> AdmissionOrder {
        AdmissionOrder::default()
    }

    /// The bundle's admission plugins, built over the registry whose stores they read and the
    /// scheme served. Default: none.
    fn admission_plugins(&self, registry: &Arc<Registry>, scheme: &Arc<Scheme>) -> Vec<Plugin> {
        let _ = (registry, scheme);
        Vec::new()
    }

    /// Adds the bundle's `--authorization-mode` names to `modes`. Default: none.
    fn authorization_modes(&self, modes: &mut AuthorizationModes) {
        let _ = modes;
    }

    /// Authenticators the bundle adds, tried after x509 client certificates, bearer tokens and
    /// the configuration's own. Default: none.
    fn authenticators(&self) -> Vec<Box<dyn Authenticator>> {
        Vec::new()
    }

    /// The RBAC rules users hold, which the escalation checks of the kinds' strategies and
    /// admission consult. The first bundle that has one provides it. Default: none.
    fn rule_resolver(&self) -> Option<Arc<dyn RuleResolver>> {
        None
    }

    /// Adds the bundle's post-start hooks (controllers, bootstrap), pre-shutdown hooks, health
    /// checks, metrics and delegates to `server`, whose [`ApiContext`] now exists. Default:
    /// nothing.
    fn install(&self, server: &mut GenericServer) {
        let _ = server;
    }
}

/// A generated crate's registration function is a bundle of API groups: its kinds, OpenAPI
/// documents and the admission plugins its definitions ship (`my_api::register_all`, or one
/// group's `my_api::my_group::register`).
impl<F> ApiGroups for F
where
    F: Fn(&mut Scheme) + Send + Sync + 'static,
{
    fn register(&self, scheme: &mut Scheme) {
        self(scheme)
    }
}

/// The `--authorization-mode` names the server offers with `groups` installed: the generic
/// server's ([`AuthorizationModes::builtin`]) and each bundle's, in order.
pub fn authorization_modes_of(groups: &[Arc<dyn ApiGroups>]) -> AuthorizationModes {
    let mut modes = AuthorizationModes::builtin();
    for group in groups {
        group.authorization_modes(&mut modes);
    }
    modes
}

/// The scheme of `groups`: each bundle registers its kinds, in order.
pub fn scheme_of(groups: &[Arc<dyn ApiGroups>]) -> Scheme {
    let mut scheme = Scheme::new();
    for group in groups {
        group.register(&mut scheme);
    }
    scheme
}
