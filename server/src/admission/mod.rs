//! The admission chain (Kubernetes' admission control): after a write's object is decoded and
//! defaulted, every enabled mutating plugin runs in order, each seeing the changes of the ones
//! before; then, inside the registry's write and after the kind's own validation, every
//! validating plugin runs on the final object. A denial is the plugin's `Status` (403
//! Forbidden, 422 Invalid, 404 for a missing namespace, ...); warnings reach the client as
//! `Warning` headers.
//!
//! The generic server has no plugin of its own. Plugins are those the installed API groups
//! bring ([`ApiGroups::admission_plugins`](crate::genericserver::groups::ApiGroups::admission_plugins):
//! the control plane's NamespaceLifecycle, webhooks, policies and ResourceQuota), those the
//! definitions ship beside their kinds (`admission.rs`) and an embedder's own
//! ([`ApiContextBuilder::plugin`](crate::endpoints::ApiContextBuilder::plugin)), chosen with
//! `--enable-admission-plugins` / `--disable-admission-plugins` by name and run in the
//! [`AdmissionOrder`] the groups declare whatever the flags' order.

use std::sync::Arc;

use apimachinery::ResourceInfo;
use apimachinery::admission::{
    Attributes, MutatingPlugin, ObjectReader, Operation, OperationOptions, OutcomeHook, Plugin,
    Request,
};
use apimachinery::authorization::Authorizer;
use apimachinery::rbac::RuleResolver;
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::user::UserInfo;
use async_trait::async_trait;
use parking_lot::Mutex;

use crate::registry::ValidateObject;

/// The order plugins run in, whatever the order of the flags (kube-apiserver's
/// `AllOrderedPlugins`): the plugins named in [`first`](Self::first) run first, in that order;
/// those named in [`last`](Self::last) run last, in that order; every other plugin (those the
/// definitions ship, an embedder's own) runs in between, in registration order. The installed
/// API groups declare theirs
/// ([`ApiGroups::admission_order`](crate::genericserver::groups::ApiGroups::admission_order));
/// the orders of several groups are joined in installation order.
///
/// ```
/// use server::admission::AdmissionOrder;
///
/// let mut order = AdmissionOrder {
///     first: vec!["NamespaceLifecycle"],
///     last: vec!["ResourceQuota"],
/// };
/// order.extend(AdmissionOrder { first: vec![], last: vec!["MyAudit"] });
/// assert_eq!(order.last, ["ResourceQuota", "MyAudit"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionOrder {
    /// The plugins that run before all others, in order.
    pub first: Vec<&'static str>,
    /// The plugins that run after all others, in order.
    pub last: Vec<&'static str>,
}

impl AdmissionOrder {
    /// Appends `other`'s names after this order's, in each half.
    pub fn extend(&mut self, other: AdmissionOrder) {
        self.first.extend(other.first);
        self.last.extend(other.last);
    }

    /// Where a plugin sorts: the first ones, then the unlisted ones, then the last ones.
    fn rank(&self, name: &str) -> (u8, usize) {
        if let Some(i) = self.first.iter().position(|n| *n == name) {
            (0, i)
        } else if let Some(i) = self.last.iter().position(|n| *n == name) {
            (2, i)
        } else {
            (1, 0)
        }
    }
}

/// `--enable-admission-plugins` and `--disable-admission-plugins`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionOptions {
    /// Plugins to turn on beyond the default ones.
    pub enable: Vec<String>,
    /// Plugins to turn off (wins over `enable`).
    pub disable: Vec<String>,
}

/// Why the admission flags cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionConfigError {
    /// A flag names a plugin this server does not have.
    #[error("admission plugin {name:?} is unknown; the known plugins are {known}")]
    UnknownPlugin {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
}

/// The enabled plugins, in the order they run.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<Plugin>,
    /// What the kinds' strategies may read of the server in their checks.
    objects: Option<Arc<dyn ObjectReader>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.plugins.iter().map(|p| p.name))
            .finish()
    }
}

impl Chain {
    /// A chain of no plugins.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The chain the flags select from `available` (the groups', the definitions' and an
    /// embedder's plugins), sorted by `order`.
    pub fn build(
        available: Vec<Plugin>,
        options: &AdmissionOptions,
        order: &AdmissionOrder,
    ) -> Result<Self, AdmissionConfigError> {
        let known: Vec<&'static str> = available.iter().map(|p| p.name).collect();
        for name in options.enable.iter().chain(&options.disable) {
            if !known.contains(&name.as_str()) {
                return Err(AdmissionConfigError::UnknownPlugin {
                    name: name.clone(),
                    known: known.join(", "),
                });
            }
        }
        let on = |p: &Plugin| {
            !options.disable.iter().any(|d| d == p.name)
                && (p.default_enabled || options.enable.iter().any(|e| e == p.name))
        };
        let mut plugins: Vec<Plugin> = available.into_iter().filter(on).collect();
        // Stable: the unlisted plugins keep their registration order.
        plugins.sort_by_key(|p| order.rank(p.name));
        Ok(Self {
            plugins,
            objects: None,
        })
    }

    /// The same chain, handing the kinds' strategies `objects` to read in their checks.
    pub fn with_objects(mut self, objects: Arc<dyn ObjectReader>) -> Self {
        self.objects = Some(objects);
        self
    }

    /// The names of the enabled plugins, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name).collect()
    }

    /// Runs every mutating plugin that handles the operation, in order; then, once, the
    /// reinvocable ones (webhooks, mutating policies) that a later plugin's change followed,
    /// as kube-apiserver's reinvoker does.
    pub async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
        // The reinvocable plugins that ran, with the change count when each finished.
        let mut ran: Vec<(&Arc<dyn MutatingPlugin>, u64)> = Vec::new();
        for plugin in &self.plugins {
            if let Some(m) = &plugin.mutating
                && m.handles(attributes)
            {
                m.admit(attributes).await?;
                if m.reinvocable() {
                    ran.push((m, attributes.changes()));
                }
            }
        }
        let changed_after: Vec<&Arc<dyn MutatingPlugin>> = ran
            .iter()
            .filter(|(_, at)| *at < attributes.changes())
            .map(|(m, _)| *m)
            .collect();
        if !changed_after.is_empty() {
            attributes.set_reinvocation(true);
            for m in changed_after {
                m.admit(attributes).await?;
            }
            attributes.set_reinvocation(false);
        }
        Ok(())
    }

    /// Runs every validating plugin that handles the operation, in order.
    pub async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            if let Some(v) = &plugin.validating
                && v.handles(attributes)
            {
                v.validate(attributes).await?;
            }
        }
        Ok(())
    }
}

/// The admission of one write: the chain with the facts of the request, collecting the
/// plugins' warnings. Its validating half is what the registry store runs inside the write.
pub struct RequestAdmission<'a> {
    chain: &'a Chain,
    operation: Operation,
    kind: &'static Kind,
    version: &'static ResourceInfo,
    subresource: &'a str,
    namespace: &'a str,
    name: &'a str,
    dry_run: bool,
    options: OperationOptions,
    user: &'a UserInfo,
    authorizer: Option<&'a Arc<dyn Authorizer>>,
    rule_resolver: Option<&'a dyn RuleResolver>,
    warnings: Mutex<Vec<String>>,
    /// Where the plugins' audit annotations go: the request's audit note, when the request
    /// is recorded.
    audit: Option<crate::audit::ObjectNote>,
    /// What the validating plugins asked to run once the write's outcome is known.
    outcome_hooks: Mutex<Vec<OutcomeHook>>,
}

impl<'a> RequestAdmission<'a> {
    /// The admission of `operation` on an object of `kind`, requested in `version`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        chain: &'a Chain,
        operation: Operation,
        kind: &'static Kind,
        version: &'static ResourceInfo,
        subresource: &'a str,
        namespace: &'a str,
        name: &'a str,
        dry_run: bool,
        options: OperationOptions,
        user: &'a UserInfo,
    ) -> Self {
        Self {
            chain,
            operation,
            kind,
            version,
            subresource,
            namespace,
            name,
            dry_run,
            options,
            user,
            authorizer: None,
            rule_resolver: None,
            warnings: Mutex::new(Vec::new()),
            audit: None,
            outcome_hooks: Mutex::new(Vec::new()),
        }
    }

    /// The same admission recording the plugins' audit annotations in the request's audit
    /// event (`note`: the request's audit note, when it is recorded).
    pub fn with_audit(mut self, note: Option<&crate::audit::ObjectNote>) -> Self {
        self.audit = note.cloned();
        self
    }

    /// Passes the audit annotations the plugins added to the audit event.
    fn record_audit_annotations(&self, attributes: &Attributes<'_>) {
        let annotations = attributes.take_audit_annotations();
        if let Some(note) = &self.audit {
            note.annotate(annotations);
        }
    }

    /// The same admission with the request's authorizer and the server's RBAC rules, which
    /// the kind's strategy consults to refuse privilege escalation.
    pub fn with_authorization(
        mut self,
        authorizer: Option<&'a Arc<dyn Authorizer>>,
        rule_resolver: Option<&'a dyn RuleResolver>,
    ) -> Self {
        self.authorizer = authorizer;
        self.rule_resolver = rule_resolver;
        self
    }

    /// Runs the outcome hooks registered so far.
    async fn settle(&self, succeeded: bool) {
        let hooks = std::mem::take(&mut *self.outcome_hooks.lock());
        for hook in hooks {
            hook(succeeded).await;
        }
    }

    /// The same request as another operation (an update that creates is admitted as a
    /// create).
    pub fn as_operation(&self, operation: Operation) -> RequestAdmission<'a> {
        RequestAdmission {
            operation,
            options: self.options.clone(),
            warnings: Mutex::new(Vec::new()),
            audit: self.audit.clone(),
            outcome_hooks: Mutex::new(Vec::new()),
            ..*self
        }
    }

    fn request(&self) -> Request<'_> {
        Request {
            operation: self.operation,
            kind: self.kind,
            version: self.version,
            subresource: self.subresource,
            namespace: self.namespace,
            name: self.name,
            dry_run: self.dry_run,
            options: &self.options,
            user: self.user,
            authorizer: self.authorizer,
            rule_resolver: self.rule_resolver,
            objects: self.chain.objects.as_deref(),
        }
    }

    /// Runs the mutating plugins on `object` (`old` is the stored object of an update).
    pub async fn mutate(
        &self,
        object: &mut Box<dyn Object>,
        old: Option<&dyn Object>,
    ) -> Result<(), ApiError> {
        let mut attributes = Attributes::mutable(self.request(), Some(object), old);
        let result = self.chain.admit(&mut attributes).await;
        self.warnings.lock().extend(attributes.take_warnings());
        self.record_audit_annotations(&attributes);
        result
    }

    /// The warnings the plugins added.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().clone()
    }
}

impl Clone for RequestAdmission<'_> {
    fn clone(&self) -> Self {
        Self {
            options: self.options.clone(),
            warnings: Mutex::new(self.warnings.lock().clone()),
            audit: self.audit.clone(),
            outcome_hooks: Mutex::new(Vec::new()),
            ..*self
        }
    }
}

#[async_trait]
impl ValidateObject for RequestAdmission<'_> {
    async fn validate(
        &self,
        object: Option<&dyn Object>,
        old: Option<&dyn Object>,
    ) -> Result<(), ApiError> {
        // A write tried again after a conflict is admitted anew: what the last attempt's
        // plugins did is undone first.
        self.settle(false).await;
        let attributes = Attributes::read_only(self.request(), object, old);
        let result = self.chain.validate(&attributes).await;
        self.warnings.lock().extend(attributes.take_warnings());
        self.record_audit_annotations(&attributes);
        self.outcome_hooks
            .lock()
            .extend(attributes.take_outcome_hooks());
        if result.is_err() {
            self.settle(false).await;
        }
        result
    }

    async fn committed(&self, succeeded: bool) {
        self.settle(succeeded).await;
    }

    /// The kind's own check of the requester's permissions (the RBAC kinds' escalation
    /// checks), before the kind's rules and validation.
    fn authorize(&self, object: &dyn Object, old: Option<&dyn Object>) -> Result<(), ApiError> {
        let attributes = Attributes::read_only(self.request(), Some(object), old);
        self.kind.strategy().authorize_write(&attributes)
    }
}
