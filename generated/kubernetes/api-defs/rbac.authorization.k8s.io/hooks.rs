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

/// The RBAC group, the only one role references and user or group subjects may name.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Renders a list as Go renders a `[]string` in a field error.
fn go_strings(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn not_supported(field: String, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    FieldError::new(
        ::apimachinery::errors::FieldErrorType::NotSupported,
        field,
        Some(format!("{value:?}")),
        format!("supported values: {}", list.join(", ")),
    )
}

/// Kubernetes' `ValidatePolicyRule`: verbs are required; non-resource URLs only in cluster
/// roles and never with resources; resource rules name groups and resources.
fn validate_rules(rules: &[v1::PolicyRule], namespaced: bool, errors: &mut Vec<FieldError>) {
    for (i, rule) in rules.iter().enumerate() {
        let path = format!("rules[{i}]");
        if rule.verbs.is_empty() {
            errors.push(FieldError::required(format!("{path}.verbs"), "verbs must contain at least one value"));
        }
        if !rule.non_resource_urls.is_empty() {
            let bad = Some(go_strings(&rule.non_resource_urls));
            if namespaced {
                errors.push(FieldError::new(
                    ::apimachinery::errors::FieldErrorType::Invalid,
                    format!("{path}.nonResourceURLs"),
                    bad.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !rule.api_groups.is_empty() || !rule.resources.is_empty() || !rule.resource_names.is_empty() {
                errors.push(FieldError::new(
                    ::apimachinery::errors::FieldErrorType::Invalid,
                    format!("{path}.nonResourceURLs"),
                    bad,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if rule.api_groups.is_empty() {
            errors.push(FieldError::required(format!("{path}.apiGroups"), "resource rules must supply at least one api group"));
        }
        if rule.resources.is_empty() {
            errors.push(FieldError::required(format!("{path}.resources"), "resource rules must supply at least one resource"));
        }
    }
}

/// Kubernetes' `ValidateRoleBindingSubject`.
fn validate_subjects(subjects: &[v1::Subject], namespaced: bool, errors: &mut Vec<FieldError>) {
    for (i, subject) in subjects.iter().enumerate() {
        let path = format!("subjects[{i}]");
        let group = subject.api_group.as_deref().unwrap_or("");
        match subject.kind.as_str() {
            "ServiceAccount" => {
                // A ServiceAccount's name is a DNS subdomain (`ValidateServiceAccountName`).
                if !subject.name.is_empty() {
                    for msg in ::apimachinery::validation::is_dns1123_subdomain(&subject.name) {
                        errors.push(FieldError::invalid(
                            format!("{path}.name"),
                            &::serde_json::Value::from(subject.name.as_str()),
                            msg,
                        ));
                    }
                }
                if !group.is_empty() {
                    errors.push(not_supported(format!("{path}.apiGroup"), group, &[""]));
                }
                if !namespaced && subject.namespace.as_deref().unwrap_or("").is_empty() {
                    errors.push(FieldError::required(format!("{path}.namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != RBAC_GROUP {
                    errors.push(not_supported(format!("{path}.apiGroup"), group, &[RBAC_GROUP]));
                }
            }
            other => errors.push(not_supported(format!("{path}.kind"), other, &["ServiceAccount", "User", "Group"])),
        }
    }
}

fn validate_role_ref(role_ref: &v1::RoleRef, kinds: &[&str], errors: &mut Vec<FieldError>) {
    if role_ref.api_group != RBAC_GROUP {
        errors.push(not_supported("roleRef.apiGroup".to_string(), &role_ref.api_group, &[RBAC_GROUP]));
    }
    if !kinds.contains(&role_ref.kind.as_str()) {
        errors.push(not_supported("roleRef.kind".to_string(), &role_ref.kind, kinds));
    }
}

/// A Role's rules, which may not name non-resource URLs.
pub fn validate_v1_role(obj: &v1::Role, errors: &mut Vec<FieldError>) {
    validate_rules(&obj.rules, true, errors);
}

/// A ClusterRole's rules.
pub fn validate_v1_cluster_role(obj: &v1::ClusterRole, errors: &mut Vec<FieldError>) {
    validate_rules(&obj.rules, false, errors);
}

/// A RoleBinding refers to a Role or ClusterRole of the RBAC group; its subjects are valid.
pub fn validate_v1_role_binding(obj: &v1::RoleBinding, errors: &mut Vec<FieldError>) {
    validate_role_ref(&obj.role_ref, &["Role", "ClusterRole"], errors);
    validate_subjects(&obj.subjects, true, errors);
}

/// A ClusterRoleBinding refers to a ClusterRole of the RBAC group; service account subjects
/// name their namespace.
pub fn validate_v1_cluster_role_binding(obj: &v1::ClusterRoleBinding, errors: &mut Vec<FieldError>) {
    validate_role_ref(&obj.role_ref, &["ClusterRole"], errors);
    validate_subjects(&obj.subjects, false, errors);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(kind: &str, name: &str) -> v1::Subject {
        ::serde_json::from_value(::serde_json::json!({"kind": kind, "name": name, "namespace": "team"})).unwrap()
    }

    #[test]
    fn a_service_account_subject_is_named_as_a_dns_subdomain() {
        let mut errors = Vec::new();
        validate_subjects(&[subject("ServiceAccount", "robot"), subject("ServiceAccount", "x:y")], true, &mut errors);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "subjects[1].name");
        assert!(errors[0].to_string().contains("a lowercase RFC 1123 subdomain"), "{}", errors[0]);
        // Users and groups may be named anything.
        let mut errors = Vec::new();
        let mut user = subject("User", "x:y");
        user.api_group = Some(RBAC_GROUP.to_string());
        validate_subjects(&[user], true, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
    }
}
