//! Hand-written strategies of rbac.authorization.k8s.io: a binding's `roleRef` never changes.

use ::apimachinery::errors::{FieldError, FieldErrorType};
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::Strategy;

/// The error for a changed `roleRef`, worded as Kubernetes words it.
fn role_ref_changed(role_ref: &v1::RoleRef) -> FieldError {
    FieldError::new(
        FieldErrorType::Invalid,
        "roleRef",
        Some(format!(
            "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
            role_ref.api_group, role_ref.kind, role_ref.name
        )),
        "cannot change roleRef",
    )
}

/// A RoleBinding's `roleRef` is fixed at creation.
pub struct RoleBindingStrategy;

impl Strategy for RoleBindingStrategy {
    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        match (
            object.downcast_ref::<v1::RoleBinding>(),
            old.downcast_ref::<v1::RoleBinding>(),
        ) {
            (Some(new), Some(old)) if new.role_ref != old.role_ref => {
                vec![role_ref_changed(&new.role_ref)]
            }
            _ => Vec::new(),
        }
    }
}

/// A ClusterRoleBinding's `roleRef` is fixed at creation.
pub struct ClusterRoleBindingStrategy;

impl Strategy for ClusterRoleBindingStrategy {
    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        match (
            object.downcast_ref::<v1::ClusterRoleBinding>(),
            old.downcast_ref::<v1::ClusterRoleBinding>(),
        ) {
            (Some(new), Some(old)) if new.role_ref != old.role_ref => {
                vec![role_ref_changed(&new.role_ref)]
            }
            _ => Vec::new(),
        }
    }
}
