//! Hand-written strategies of the core group: what namespaces and events do beyond their
//! markers.

use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::Strategy;

/// The finalizer every namespace carries until the server has deleted everything in it.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// The namespaces every cluster has from its first start; they cannot be deleted.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// How long Events live (their storage TTL), as kube-apiserver's `--event-ttl` default.
pub const EVENT_TTL_SECONDS: u64 = 3600;

/// A namespace starts `Active` with the `kubernetes` finalizer; deleting it makes it
/// `Terminating` until the server has deleted its contents and removed the finalizer (through
/// the `finalize` subresource), and only then is it removed.
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, object: &mut dyn Object) {
        let Some(ns) = object.downcast_mut::<v1::Namespace>() else {
            return;
        };
        if !ns.spec.finalizers.iter().any(|f| f == KUBERNETES_FINALIZER) {
            ns.spec.finalizers.push(KUBERNETES_FINALIZER.to_string());
        }
        ns.status = v1::NamespaceStatus {
            phase: Some("Active".to_string()),
            ..Default::default()
        };
    }

    fn prepare_for_update(&self, object: &mut dyn Object, old: &dyn Object, subresource: &str) {
        let (Some(ns), Some(old)) = (
            object.downcast_mut::<v1::Namespace>(),
            old.downcast_ref::<v1::Namespace>(),
        ) else {
            return;
        };
        // Only `finalize` changes the finalizers; the status comes from `/status` alone (the
        // registry has kept it already).
        if subresource != "finalize" {
            ns.spec.finalizers.clone_from(&old.spec.finalizers);
        }
        if let Some(name) = ns.metadata.name.clone() {
            ns.metadata
                .labels
                .insert("kubernetes.io/metadata.name".to_string(), name);
        }
    }

    fn has_pending_finalizers(&self, object: &dyn Object) -> bool {
        object
            .downcast_ref::<v1::Namespace>()
            .is_some_and(|ns| !ns.spec.finalizers.is_empty())
    }

    fn prepare_for_delete(&self, object: &mut dyn Object) {
        if let Some(ns) = object.downcast_mut::<v1::Namespace>() {
            ns.status.phase = Some("Terminating".to_string());
        }
    }
}

/// Events expire an hour after they were last written; `source` selects on the reporting
/// component (`source.component`, or `reportingComponent` when that is empty), as in
/// Kubernetes.
pub struct EventStrategy;

impl Strategy for EventStrategy {
    fn ttl(&self, _object: &dyn Object, _existing: bool) -> Option<u64> {
        Some(EVENT_TTL_SECONDS)
    }

    fn selectable_fields(&self, object: &dyn Object, out: &mut Vec<(&'static str, String)>) {
        if let Some(event) = object.downcast_ref::<v1::Event>() {
            let source = event
                .source
                .component
                .clone()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| event.reporting_controller.clone());
            out.push(("source", source));
        }
    }

    fn field_labels(&self) -> &'static [&'static str] {
        &["source"]
    }
}

/// A ResourceQuota's limits are non-negative quantities, whole numbers for object counts; its
/// status is the server's (kept by the quota controller and the admission plugin).
pub struct ResourceQuotaStrategy;

impl ResourceQuotaStrategy {
    fn validate_hard(quota: &v1::ResourceQuota) -> Vec<::apimachinery::errors::FieldError> {
        use ::apimachinery::errors::FieldError;
        let mut errors = Vec::new();
        for (name, quantity) in &quota.spec.hard {
            let path = format!("spec.hard[{name}]");
            let bad = ::serde_json::Value::from(quantity.0.as_str());
            match quantity.value() {
                Err(e) => errors.push(FieldError::invalid(path, &bad, e.to_string())),
                Ok(v) if v < 0 => errors.push(FieldError::invalid(
                    path,
                    &bad,
                    "must be greater than or equal to 0",
                )),
                Ok(v) if name.starts_with("count/") && quantity.0.trim() != v.to_string() => {
                    errors.push(FieldError::invalid(path, &bad, "must be an integer"))
                }
                Ok(_) => {}
            }
        }
        errors
    }
}

impl Strategy for ResourceQuotaStrategy {
    fn validate(&self, object: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        object
            .downcast_ref::<v1::ResourceQuota>()
            .map(Self::validate_hard)
            .unwrap_or_default()
    }

    fn validate_update(
        &self,
        object: &dyn Object,
        _old: &dyn Object,
    ) -> Vec<::apimachinery::errors::FieldError> {
        self.validate(object)
    }
}
