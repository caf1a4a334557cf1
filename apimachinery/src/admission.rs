//! Admission's vocabulary (Kubernetes' `admission` package): the [`Attributes`] of a write,
//! and the [`MutatingPlugin`] and [`ValidatingPlugin`] traits every admission plugin
//! implements — the server's built-in ones and those a definition ships beside its kind.
//!
//! Mutating plugins run first, in order, each seeing the changes of the ones before; then
//! validating plugins run on the final object. Objects are of the kind's storage version.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::authorization::Authorizer;
use crate::gvk::GroupResource;
use crate::rbac::RuleResolver;
use crate::resource::ResourceInfo;
use crate::runtime::{Kind, Object};
use crate::status::ApiError;
use crate::user::UserInfo;

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `create` (also an apply or update that creates).
    Create,
    /// `update` and `patch`.
    Update,
    /// `delete` and each object of a `deletecollection`.
    Delete,
    /// A connect subresource.
    Connect,
}

impl Operation {
    /// The name Kubernetes uses (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// The options of the operation (Kubernetes' `CreateOptions`, `UpdateOptions`,
/// `PatchOptions` or `DeleteOptions` as far as admission reads them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperationOptions {
    /// The field manager of a create, update or patch.
    pub field_manager: String,
    /// Whether this is a patch (and of which type: its media type).
    pub patch_type: Option<String>,
    /// Whether an apply forces conflicts.
    pub force: bool,
    /// The delete's `propagationPolicy`, if any.
    pub propagation_policy: Option<String>,
}

/// Work a plugin registers to run once the write it admitted has been stored (`true`; for a
/// delete: the object is gone) or has not (`false`: it failed, or, on a conflict, is tried
/// again and admitted anew), such as a quota giving back what it charged.
pub type OutcomeHook = Box<dyn FnOnce(bool) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// What a strategy's checks may read of the server beyond the write itself, as Kubernetes'
/// strategies hold a REST mapper and getters (a policy binding's check reads its policy).
pub trait ObjectReader: Send + Sync {
    /// The resource of `kind` in `group`/`version`, if the server serves it (Kubernetes'
    /// `RESTMapper`).
    fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<&'static ResourceInfo>;

    /// The object of `kind` in `group` named `name` in `namespace` (empty at cluster scope) as
    /// the server's watch cache holds it now; `None` when there is none.
    fn cached(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Box<dyn Object>>;

    /// Every object of `kind` in `group` in `namespace` (every namespace when empty; empty
    /// for a cluster-scoped kind) as the server's watch cache holds it now, in key order
    /// (namespace, then name), without waiting for the cache to catch up — what a plugin
    /// reads of another kind (sample-apiserver's `BanFlunder` lists the Fischers from its
    /// informer the same way). Empty when the server does not serve the kind, before its cache
    /// has loaded, and for a kind served from a user's storage, which has no watch cache (as
    /// [`ObjectReader::cached`]).
    fn cached_list(&self, group: &str, kind: &str, namespace: &str) -> Vec<Box<dyn Object>>;

    /// The resourceVersion of the object [`ObjectReader::cached`] returns now, without
    /// decoding it, so that a reader of the same object on every request (the service
    /// resolver, once per proxied request) can keep what it decoded until the object changes.
    /// `None` when there is no such object, or when the reader cannot tell without decoding
    /// (the default).
    ///
    /// ```
    /// # use apimachinery::admission::ObjectReader;
    /// fn changed(reader: &dyn ObjectReader, seen: u64) -> bool {
    ///     reader.cached_resource_version("", "Service", "default", "api") != Some(seen)
    /// }
    /// ```
    fn cached_resource_version(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<u64> {
        let _ = (group, kind, namespace, name);
        None
    }
}

/// The new object of an operation, as a plugin sees it: changeable by mutating plugins,
/// read-only for validating ones.
enum NewObject<'a> {
    None,
    Shared(&'a dyn Object),
    Exclusive(&'a mut Box<dyn Object>),
}

/// Everything an admission plugin may read of one operation, and the object it may change.
pub struct Attributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// The kind's table (versions and conversion).
    pub kind: &'static Kind,
    /// The REST facts of the version the request was made in (its group, version, kind and
    /// resource are the request's).
    pub version: &'static ResourceInfo,
    /// The subresource (`status`, `scale`), or empty.
    pub subresource: &'a str,
    /// The namespace (empty at cluster scope).
    pub namespace: &'a str,
    /// The object's name (may be empty for a create with `generateName`).
    pub name: &'a str,
    object: NewObject<'a>,
    /// The current object (update, delete); `None` for create.
    pub old_object: Option<&'a dyn Object>,
    /// Whether the request is a dry run (plugins with side effects must not act on it).
    pub dry_run: bool,
    /// The options of the operation.
    pub options: &'a OperationOptions,
    /// The user making the request.
    pub user: &'a UserInfo,
    /// The server's authorizer, when the request went through one.
    pub authorizer: Option<&'a std::sync::Arc<dyn Authorizer>>,
    /// The RBAC rules users hold, for escalation checks.
    pub rule_resolver: Option<&'a dyn RuleResolver>,
    /// The server's kinds and cached objects, for checks that read other objects.
    pub objects: Option<&'a dyn ObjectReader>,
    warnings: Mutex<Vec<String>>,
    audit_annotations: Mutex<Vec<(String, String)>>,
    outcome_hooks: Mutex<Vec<OutcomeHook>>,
    /// How many times mutating plugins changed the object.
    changes: u64,
    /// Whether the mutating plugins run again because a later one changed the object.
    reinvocation: bool,
}

/// What is the same for every plugin call of one request.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// The operation.
    pub operation: Operation,
    /// The kind's table.
    pub kind: &'static Kind,
    /// The REST facts of the version the request was made in.
    pub version: &'static ResourceInfo,
    /// The subresource, or empty.
    pub subresource: &'a str,
    /// The namespace (empty at cluster scope).
    pub namespace: &'a str,
    /// The object's name, or empty.
    pub name: &'a str,
    /// Whether the request is a dry run.
    pub dry_run: bool,
    /// The options of the operation.
    pub options: &'a OperationOptions,
    /// The user making the request.
    pub user: &'a UserInfo,
    /// The server's authorizer, when the request went through one.
    pub authorizer: Option<&'a std::sync::Arc<dyn Authorizer>>,
    /// The RBAC rules users hold, for escalation checks.
    pub rule_resolver: Option<&'a dyn RuleResolver>,
    /// The server's kinds and cached objects, for checks that read other objects.
    pub objects: Option<&'a dyn ObjectReader>,
}

impl<'a> Attributes<'a> {
    fn with(
        request: Request<'a>,
        object: NewObject<'a>,
        old_object: Option<&'a dyn Object>,
    ) -> Self {
        Self {
            operation: request.operation,
            kind: request.kind,
            version: request.version,
            subresource: request.subresource,
            namespace: request.namespace,
            name: request.name,
            object,
            old_object,
            dry_run: request.dry_run,
            options: request.options,
            user: request.user,
            authorizer: request.authorizer,
            rule_resolver: request.rule_resolver,
            objects: request.objects,
            warnings: Mutex::new(Vec::new()),
            audit_annotations: Mutex::new(Vec::new()),
            outcome_hooks: Mutex::new(Vec::new()),
            changes: 0,
            reinvocation: false,
        }
    }

    /// The attributes mutating plugins get: the new object may be changed or replaced.
    pub fn mutable(
        request: Request<'a>,
        object: Option<&'a mut Box<dyn Object>>,
        old_object: Option<&'a dyn Object>,
    ) -> Self {
        let object = match object {
            Some(o) => NewObject::Exclusive(o),
            None => NewObject::None,
        };
        Self::with(request, object, old_object)
    }

    /// The attributes validating plugins get: everything read-only.
    pub fn read_only(
        request: Request<'a>,
        object: Option<&'a dyn Object>,
        old_object: Option<&'a dyn Object>,
    ) -> Self {
        let object = match object {
            Some(o) => NewObject::Shared(o),
            None => NewObject::None,
        };
        Self::with(request, object, old_object)
    }

    /// The new object, if any.
    pub fn object(&self) -> Option<&dyn Object> {
        match &self.object {
            NewObject::None => None,
            NewObject::Shared(o) => Some(*o),
            NewObject::Exclusive(o) => Some(&***o),
        }
    }

    /// The new object, to change or replace; `None` when there is none or the plugin only
    /// validates.
    pub fn object_mut(&mut self) -> Option<&mut Box<dyn Object>> {
        match &mut self.object {
            NewObject::Exclusive(o) => Some(&mut **o),
            _ => None,
        }
    }

    /// Records that a mutating plugin changed the object (what decides reinvocation).
    pub fn object_changed(&mut self) {
        self.changes += 1;
    }

    /// How many times mutating plugins changed the object so far.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Whether this is the second run of the reinvocable plugins (Kubernetes'
    /// `reinvocationPolicy: IfNeeded`), after a later plugin changed the object.
    pub fn is_reinvocation(&self) -> bool {
        self.reinvocation
    }

    /// Marks the plugins' second run.
    pub fn set_reinvocation(&mut self, on: bool) {
        self.reinvocation = on;
    }

    /// The group and resource of the request.
    pub fn resource(&self) -> GroupResource {
        GroupResource::new(self.version.group, self.version.plural)
    }

    /// Adds a warning for the client (sent as a `Warning` header).
    pub fn warn(&self, text: impl Into<String>) {
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(text.into());
    }

    /// The warnings added so far.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Adds an annotation to the request's audit event (a webhook's or policy's
    /// `auditAnnotations`, a policy's `Audit` action), under a key the plugin qualifies
    /// (`<webhook or policy name>/<key>`).
    pub fn annotate_audit(&self, key: impl Into<String>, value: impl Into<String>) {
        self.audit_annotations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key.into(), value.into()));
    }

    /// The audit annotations added so far.
    pub fn take_audit_annotations(&self) -> Vec<(String, String)> {
        std::mem::take(
            &mut *self
                .audit_annotations
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// Registers work to run once the write's outcome is known (see [`OutcomeHook`]).
    pub fn on_outcome(&self, hook: OutcomeHook) {
        self.outcome_hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(hook);
    }

    /// The outcome hooks registered so far.
    pub fn take_outcome_hooks(&self) -> Vec<OutcomeHook> {
        std::mem::take(&mut *self.outcome_hooks.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The object's name: the request's, else the new object's.
    pub fn object_name(&self) -> &str {
        if !self.name.is_empty() {
            return self.name;
        }
        self.object().map(|o| o.name()).unwrap_or("")
    }

    /// Kubernetes' `EscalationAllowed`: members of `system:masters` may grant anything.
    pub fn escalation_allowed(&self) -> bool {
        self.user.in_group(crate::user::MASTERS_GROUP)
    }

    /// Whether the server's authorizer lets the requesting user `verb` `resource` of `group`
    /// and `version` named `name` in `namespace` (`*` for any); `false` without an
    /// authorizer.
    pub fn user_may(
        &self,
        verb: &str,
        group: &str,
        version: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        let Some(authorizer) = self.authorizer else {
            return false;
        };
        let attrs = crate::authorization::Attributes {
            user: std::borrow::Cow::Borrowed(self.user),
            verb: verb.into(),
            is_resource_request: true,
            path: "".into(),
            namespace: namespace.into(),
            api_group: group.into(),
            api_version: version.into(),
            resource: resource.into(),
            subresource: "".into(),
            name: name.into(),
        };
        authorizer.authorize(&attrs).decision == crate::authorization::Decision::Allow
    }

    /// The 403 a plugin denies with: `<resource> "<name>" is forbidden: <reason>`.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        ApiError::forbidden(&self.resource(), self.object_name(), reason)
    }
}

/// An admission plugin that may change the object (Kubernetes' `MutationInterface`).
#[async_trait]
pub trait MutatingPlugin: Send + Sync {
    /// Whether the plugin acts on this operation at all.
    fn handles(&self, attributes: &Attributes<'_>) -> bool;

    /// Changes the object, or denies the operation.
    async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError>;

    /// Whether the plugin runs again, once, when a later plugin changed the object after it
    /// (the webhooks and policies with `reinvocationPolicy: IfNeeded`); its second run sees
    /// [`Attributes::is_reinvocation`].
    fn reinvocable(&self) -> bool {
        false
    }
}

/// An admission plugin that only decides (Kubernetes' `ValidationInterface`).
#[async_trait]
pub trait ValidatingPlugin: Send + Sync {
    /// Whether the plugin acts on this operation at all.
    fn handles(&self, attributes: &Attributes<'_>) -> bool;

    /// Denies the operation, or lets it pass.
    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError>;
}

/// A plugin as it is registered under its name (`--enable-admission-plugins`), with either or
/// both of its parts.
#[derive(Clone)]
pub struct Plugin {
    /// The name, as the flags spell it (`NamespaceLifecycle`).
    pub name: &'static str,
    /// Whether the plugin is on unless disabled.
    pub default_enabled: bool,
    /// The mutating part.
    pub mutating: Option<std::sync::Arc<dyn MutatingPlugin>>,
    /// The validating part.
    pub validating: Option<std::sync::Arc<dyn ValidatingPlugin>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("default_enabled", &self.default_enabled)
            .field("mutating", &self.mutating.is_some())
            .field("validating", &self.validating.is_some())
            .finish()
    }
}
