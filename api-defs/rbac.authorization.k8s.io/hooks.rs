//! Hand-written defaulting of rbac.authorization.k8s.io: defaults that depend on another field.

/// The API group of a subject defaults by its kind: `""` for service accounts,
/// `rbac.authorization.k8s.io` for users and groups.
pub fn default_v1_subject(obj: &mut v1::Subject) {
    if obj.api_group.as_deref().unwrap_or("").is_empty() {
        match obj.kind.as_str() {
            "User" | "Group" => obj.api_group = Some("rbac.authorization.k8s.io".to_string()),
            "ServiceAccount" => obj.api_group = None,
            _ => {}
        }
    }
}

/// The API group of a role reference defaults to `rbac.authorization.k8s.io`.
pub fn default_v1_role_ref(obj: &mut v1::RoleRef) {
    if obj.api_group.is_empty() {
        obj.api_group = "rbac.authorization.k8s.io".to_string();
    }
}
