//! Hand-written strategies of rbac.authorization.k8s.io: a binding's `roleRef` never changes;
//! bindings print their role and subjects, roles their name and creation time (kube-apiserver's
//! default convertor).

use ::apimachinery::errors::{FieldError, FieldErrorType};
use ::apimachinery::resource::PrinterColumn;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::{
    self, AGE_COLUMN, DefaultTableConvertor, NAME_COLUMN, TypedTable, column,
};
use ::chrono::{DateTime, Utc};
use ::serde_json::Value;
use ::apimachinery::admission::{Attributes, Operation};
use ::apimachinery::rbac::{self as rbac, PolicyRule};
use ::apimachinery::status::ApiError;

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

/// A Role prints its name and creation time; it is written only by users who hold its rules
/// or may `escalate` roles.
pub struct RoleStrategy;

impl Strategy for RoleStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(role) = written::<v1::Role>(attributes) else {
            return Ok(());
        };
        if attributes.escalation_allowed() || role_escalation_authorized(attributes) {
            return Ok(());
        }
        confirm_no_escalation(attributes, &role.metadata, &rules_of(&role.rules))
    }
}

/// A ClusterRole prints its name and creation time; it is written only by users who hold its
/// rules (every permission, when it has or had an aggregation rule) or may `escalate` cluster
/// roles.
pub struct ClusterRoleStrategy;

impl Strategy for ClusterRoleStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
    }

    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(role) = written::<v1::ClusterRole>(attributes) else {
            return Ok(());
        };
        if attributes.escalation_allowed() || role_escalation_authorized(attributes) {
            return Ok(());
        }
        confirm_no_escalation(attributes, &role.metadata, &rules_of(&role.rules))?;
        // An aggregation rule can gather anything: setting, keeping or dropping one needs
        // every permission.
        let aggregates = |r: &v1::ClusterRole| {
            r.aggregation_rule
                .as_ref()
                .is_some_and(|a| !a.cluster_role_selectors.is_empty())
        };
        let old_aggregates = attributes
            .old_object
            .and_then(|o| o.downcast_ref::<v1::ClusterRole>())
            .is_some_and(aggregates);
        if aggregates(role) || old_aggregates {
            let full = [
                PolicyRule::resources(&["*"], &["*"], &["*"]),
                PolicyRule::urls(&["*"], &["*"]),
            ];
            if confirm_no_escalation(attributes, &role.metadata, &full).is_err() {
                return Err(attributes.forbidden(
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
        }
        Ok(())
    }
}

/// The columns of a binding: its role, age and (with `-o wide`) its subjects by kind.
const fn binding_columns(
    role: &'static str,
    users: &'static str,
    groups: &'static str,
    service_accounts: &'static str,
) -> [PrinterColumn; 6] {
    [
        NAME_COLUMN,
        column("Role", "string", 0, role),
        AGE_COLUMN,
        column("Users", "string", 1, users),
        column("Groups", "string", 1, groups),
        column("ServiceAccounts", "string", 1, service_accounts),
    ]
}

static ROLE_BINDING_COLUMNS: [PrinterColumn; 6] = binding_columns(
    "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
    "Users in the roleBinding",
    "Groups in the roleBinding",
    "ServiceAccounts in the roleBinding",
);

static CLUSTER_ROLE_BINDING_COLUMNS: [PrinterColumn; 6] = binding_columns(
    "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
    "Users in the clusterRoleBinding",
    "Groups in the clusterRoleBinding",
    "ServiceAccounts in the clusterRoleBinding",
);

static ROLE_BINDING_TABLE: TypedTable<v1::RoleBinding> =
    TypedTable::new(&ROLE_BINDING_COLUMNS, |b, now| {
        binding_cells(&b.metadata, &b.role_ref, &b.subjects, now)
    });

static CLUSTER_ROLE_BINDING_TABLE: TypedTable<v1::ClusterRoleBinding> =
    TypedTable::new(&CLUSTER_ROLE_BINDING_COLUMNS, |b, now| {
        binding_cells(&b.metadata, &b.role_ref, &b.subjects, now)
    });

/// A binding's cells: `Kind/name` of the role, the age, then the users, groups and service
/// accounts (`namespace/name`) among the subjects, each joined with `, `.
fn binding_cells(
    meta: &::apimachinery::meta::ObjectMeta,
    role_ref: &v1::RoleRef,
    subjects: &[v1::Subject],
    now: DateTime<Utc>,
) -> Vec<Value> {
    let of_kind = |kind: &str| -> Value {
        let names: Vec<String> = subjects
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| match kind {
                "ServiceAccount" => {
                    format!("{}/{}", s.namespace.as_deref().unwrap_or(""), s.name)
                }
                _ => s.name.clone(),
            })
            .collect();
        Value::from(names.join(", "))
    };
    vec![
        table::name(meta),
        Value::from(format!("{}/{}", role_ref.kind, role_ref.name)),
        table::age(meta, now),
        of_kind("User"),
        of_kind("Group"),
        of_kind("ServiceAccount"),
    ]
}

/// A RoleBinding's `roleRef` is fixed at creation; it is written only by users who hold the
/// role's rules in the namespace or may `bind` it.
pub struct RoleBindingStrategy;

impl Strategy for RoleBindingStrategy {
    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(binding) = written::<v1::RoleBinding>(attributes) else {
            return Ok(());
        };
        authorize_binding(attributes, &binding.metadata, &binding.role_ref)
    }

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

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&ROLE_BINDING_TABLE)
    }
}

/// A ClusterRoleBinding's `roleRef` is fixed at creation; it is written only by users who
/// hold the cluster role's rules everywhere or may `bind` it.
pub struct ClusterRoleBindingStrategy;

impl Strategy for ClusterRoleBindingStrategy {
    fn authorize_write(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(binding) = written::<v1::ClusterRoleBinding>(attributes) else {
            return Ok(());
        };
        authorize_binding(attributes, &binding.metadata, &binding.role_ref)
    }

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

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&CLUSTER_ROLE_BINDING_TABLE)
    }
}

impl From<&v1::PolicyRule> for PolicyRule {
    fn from(rule: &v1::PolicyRule) -> Self {
        PolicyRule {
            verbs: rule.verbs.clone(),
            api_groups: rule.api_groups.clone(),
            resources: rule.resources.clone(),
            resource_names: rule.resource_names.clone(),
            non_resource_urls: rule.non_resource_urls.clone(),
        }
    }
}

impl From<&PolicyRule> for v1::PolicyRule {
    fn from(rule: &PolicyRule) -> Self {
        v1::PolicyRule {
            verbs: rule.verbs.clone(),
            api_groups: rule.api_groups.clone(),
            resources: rule.resources.clone(),
            resource_names: rule.resource_names.clone(),
            non_resource_urls: rule.non_resource_urls.clone(),
        }
    }
}

/// The rules of a role in the authorizer's form.
pub fn rules_of(rules: &[v1::PolicyRule]) -> Vec<PolicyRule> {
    rules.iter().map(PolicyRule::from).collect()
}

/// The object of a create or update of the main resource, as a `T`.
fn written<'a, T: Object>(attributes: &'a Attributes<'_>) -> Option<&'a T> {
    if !matches!(attributes.operation, Operation::Create | Operation::Update)
        || !attributes.subresource.is_empty()
    {
        return None;
    }
    let object = attributes.object()?.downcast_ref::<T>()?;
    if only_garbage_collection_fields(attributes, object) {
        return None;
    }
    Some(object)
}

/// Kubernetes' `IsOnlyMutatingGCFields`: an update that changes nothing but owner references
/// and finalizers (and what the server maintains) needs no escalation check.
fn only_garbage_collection_fields<T: Object>(attributes: &Attributes<'_>, object: &T) -> bool {
    let Some(old) = attributes.old_object else {
        return false;
    };
    let mut normalized = object.clone_object();
    let old_meta = old.metadata();
    let meta = normalized.metadata_mut();
    meta.owner_references = old_meta.owner_references.clone();
    meta.finalizers = old_meta.finalizers.clone();
    meta.managed_fields = old_meta.managed_fields.clone();
    meta.resource_version = old_meta.resource_version.clone();
    meta.generation = old_meta.generation;
    normalized.eq_object(old)
}

/// Kubernetes' `RoleEscalationAuthorized`: the `escalate` verb on the role being written (the
/// request's name: none for a create).
fn role_escalation_authorized(attributes: &Attributes<'_>) -> bool {
    let name = if attributes.operation == Operation::Create {
        ""
    } else {
        attributes.name
    };
    attributes.user_may(
        "escalate",
        attributes.version.group,
        "*",
        attributes.version.plural,
        attributes.namespace,
        name,
    )
}

/// Kubernetes' `ConfirmNoEscalation` as a 403 of the written object.
fn confirm_no_escalation(
    attributes: &Attributes<'_>,
    meta: &::apimachinery::meta::ObjectMeta,
    rules: &[PolicyRule],
) -> Result<(), ApiError> {
    let resolver = attributes.rule_resolver.unwrap_or(&NoRules);
    rbac::confirm_no_escalation(resolver, attributes.user, attributes.namespace, rules).map_err(|message| {
        ApiError::forbidden(
            &attributes.resource(),
            meta.name.as_deref().unwrap_or(""),
            &message,
        )
    })
}

/// The resolver of a server that resolves no RBAC rules: nobody holds anything.
struct NoRules;

impl rbac::RuleResolver for NoRules {
    fn rules_for(&self, _: &::apimachinery::user::UserInfo, _: &str) -> (Vec<PolicyRule>, Vec<String>) {
        (Vec::new(), Vec::new())
    }

    fn role_reference_rules(&self, _: &str, _: &str, _: &str) -> Result<Vec<PolicyRule>, ApiError> {
        Ok(Vec::new())
    }
}

/// The checks of a binding write: members of `system:masters`, users who may `bind` the role
/// (Kubernetes' `BindingAuthorized`, in the binding's namespace), and users who hold every rule
/// of the role pass.
fn authorize_binding(
    attributes: &Attributes<'_>,
    meta: &::apimachinery::meta::ObjectMeta,
    role_ref: &v1::RoleRef,
) -> Result<(), ApiError> {
    if attributes.escalation_allowed() {
        return Ok(());
    }
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => Some("clusterroles"),
        "Role" => Some("roles"),
        _ => None,
    };
    if let Some(resource) = resource
        && attributes.user_may("bind", &role_ref.api_group, "*", resource, attributes.namespace, &role_ref.name)
    {
        return Ok(());
    }
    let resolver = attributes.rule_resolver.unwrap_or(&NoRules);
    let rules = resolver.role_reference_rules(&role_ref.kind, &role_ref.name, attributes.namespace)?;
    confirm_no_escalation(attributes, meta, &rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn typed<T: ::serde::de::DeserializeOwned>(value: Value) -> T {
        ::serde_json::from_value(value).unwrap()
    }

    fn header(strategy: &dyn Strategy) -> Vec<(&'static str, &'static str, i32)> {
        let table = strategy.table().unwrap();
        table
            .columns()
            .iter()
            .map(|c| (c.name, c.type_, c.priority))
            .collect()
    }

    const SUBJECTS: &str = r#"[
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
        {"kind": "ServiceAccount", "name": "bare"}
    ]"#;

    #[test]
    fn bindings_print_role_and_subjects() {
        let subjects: Value = ::serde_json::from_str(SUBJECTS).unwrap();
        let rb: v1::RoleBinding = typed(json!({
            "metadata": {"name": "read", "creationTimestamp": "2024-05-01T11:00:00Z"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": subjects
        }));
        let expected = vec![
            json!("read"),
            json!("Role/reader"),
            json!("60m"),
            json!("alice, bob"),
            json!("devs"),
            json!("ci/builder, /bare"),
        ];
        let cells = RoleBindingStrategy.table().unwrap().cells(&rb, now());
        assert_eq!(cells, expected);
        let crb: v1::ClusterRoleBinding = typed(json!({
            "metadata": {"name": "read", "creationTimestamp": "2024-05-01T11:00:00Z"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": subjects
        }));
        let cells = ClusterRoleBindingStrategy
            .table()
            .unwrap()
            .cells(&crb, now());
        assert_eq!(cells[1], json!("ClusterRole/view"));
        assert_eq!(cells[3..], expected[3..]);
        let want = vec![
            ("Name", "string", 0),
            ("Role", "string", 0),
            ("Age", "string", 0),
            ("Users", "string", 1),
            ("Groups", "string", 1),
            ("ServiceAccounts", "string", 1),
        ];
        assert_eq!(header(&RoleBindingStrategy), want);
        assert_eq!(header(&ClusterRoleBindingStrategy), want);
        assert_eq!(
            CLUSTER_ROLE_BINDING_COLUMNS[3].description,
            "Users in the clusterRoleBinding"
        );
    }

    #[test]
    fn a_binding_without_subjects_prints_empty_cells() {
        let rb: v1::RoleBinding = typed(json!({
            "metadata": {"name": "none"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
        }));
        let cells = RoleBindingStrategy.table().unwrap().cells(&rb, now());
        assert_eq!(
            cells,
            vec![
                json!("none"),
                json!("ClusterRole/edit"),
                json!("<unknown>"),
                json!(""),
                json!(""),
                json!("")
            ]
        );
    }

    #[test]
    fn roles_print_name_and_created_at() {
        let role: v1::Role = typed(json!({
            "metadata": {"name": "reader", "creationTimestamp": "2024-05-01T11:00:00Z"}
        }));
        assert_eq!(
            RoleStrategy.table().unwrap().cells(&role, now()),
            vec![json!("reader"), json!("2024-05-01T11:00:00Z")]
        );
        let role: v1::ClusterRole = typed(json!({"metadata": {"name": "view"}}));
        assert_eq!(
            ClusterRoleStrategy.table().unwrap().cells(&role, now()),
            vec![json!("view"), json!("0001-01-01T00:00:00Z")]
        );
        assert_eq!(
            header(&ClusterRoleStrategy),
            vec![("Name", "string", 0), ("Created At", "date", 0)]
        );
    }

    mod escalation {
        use super::*;
        use ::apimachinery::admission::{Attributes, Operation, OperationOptions, Request};
        use ::apimachinery::authorization::{self as authz, Authorization, Authorizer};
        use ::apimachinery::user::MASTERS_GROUP;
        use ::apimachinery::rbac::RuleResolver;
        use ::apimachinery::runtime::Kind;
        use ::apimachinery::user::UserInfo;
        use ::serde_json::json;

        /// A resolver granting every user `held`; roles by name.
        struct Fixed {
            held: Vec<PolicyRule>,
        }

        impl RuleResolver for Fixed {
            fn rules_for(&self, _: &UserInfo, _: &str) -> (Vec<PolicyRule>, Vec<String>) {
                (self.held.clone(), Vec::new())
            }

            fn role_reference_rules(&self, kind: &str, name: &str, _: &str) -> Result<Vec<PolicyRule>, ApiError> {
                match (kind, name) {
                    ("ClusterRole", "view" | "edit") => Ok(vec![PolicyRule::resources(&["get"], &[""], &["secrets"])]),
                    _ => Err(ApiError::not_found(
                        &::apimachinery::GroupResource::new("rbac.authorization.k8s.io", "roles"),
                        name,
                    )),
                }
            }
        }

        /// Allows `escalate` on roles and `bind` on the cluster role `view`.
        struct Verbs;

        impl Authorizer for Verbs {
            fn authorize(&self, a: &authz::Attributes<'_>) -> Authorization {
                let ok = (a.verb == "escalate" && a.resource == "roles")
                    || (a.verb == "bind" && a.resource == "clusterroles" && a.name == "view");
                if ok { Authorization::allow("") } else { Authorization::no_opinion() }
            }
        }

        fn user(groups: &[&str]) -> UserInfo {
            UserInfo {
                name: "jane".into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..UserInfo::default()
            }
        }

        fn check(
            kind: &'static Kind,
            object: &dyn Object,
            old: Option<&dyn Object>,
            user: &UserInfo,
            authorizer: Option<::std::sync::Arc<dyn Authorizer>>,
            held: Vec<PolicyRule>,
        ) -> Result<(), ApiError> {
            let resolver = Fixed { held };
            let options = OperationOptions::default();
            let request = Request {
                operation: if old.is_some() { Operation::Update } else { Operation::Create },
                kind,
                version: kind.storage_info(),
                subresource: "",
                namespace: object.namespace(),
                name: object.name(),
                dry_run: false,
                options: &options,
                user,
                authorizer: authorizer.as_ref(),
                rule_resolver: Some(&resolver),
                objects: None,
            };
            let attributes = Attributes::read_only(request, Some(object), old);
            kind.strategy().authorize_write(&attributes)
        }

        fn role(rules: ::serde_json::Value) -> v1::Role {
            typed(json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": rules}))
        }

        #[test]
        fn roles_need_the_rules_or_escalate() {
            let kind = &super::super::super::ROLE_KIND;
            let secrets = role(json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]));
            let jane = user(&["devs"]);
            let err = check(kind, &secrets, None, &jane, None, Vec::new()).unwrap_err();
            assert_eq!(err.code(), 403);
            assert_eq!(
                err.message(),
                "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"jane\" (groups=[\"devs\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
            );
            let held = vec![PolicyRule::resources(&["*"], &[""], &["secrets"])];
            assert!(check(kind, &secrets, None, &jane, None, held).is_ok());
            assert!(check(kind, &secrets, None, &jane, Some(::std::sync::Arc::new(Verbs)), Vec::new()).is_ok());
            let admin = user(&[MASTERS_GROUP]);
            assert!(check(kind, &secrets, None, &admin, None, Vec::new()).is_ok());
            // Only owner references or finalizers changed: no check.
            let mut owned = secrets.clone();
            owned.metadata.finalizers = vec!["example.com/keep".into()];
            assert!(check(kind, &owned, Some(&secrets), &jane, None, Vec::new()).is_ok());
            let mut more = secrets.clone();
            more.rules[0].verbs.push("delete".into());
            assert!(check(kind, &more, Some(&secrets), &jane, None, Vec::new()).is_err());
        }

        #[test]
        fn aggregation_rules_need_everything() {
            let kind = &super::super::super::CLUSTER_ROLE_KIND;
            let role: v1::ClusterRole = typed(json!({
                "metadata": {"name": "agg"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
            }));
            let err = check(kind, &role, None, &user(&[]), None, Vec::new()).unwrap_err();
            assert_eq!(
                err.message(),
                "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
            );
            let all = vec![
                PolicyRule::resources(&["*"], &["*"], &["*"]),
                PolicyRule::urls(&["*"], &["*"]),
            ];
            assert!(check(kind, &role, None, &user(&[]), None, all).is_ok());
        }

        #[test]
        fn bindings_need_the_role_or_bind() {
            let kind = &super::super::super::ROLE_BINDING_KIND;
            let binding = |role_kind: &str, name: &str| -> v1::RoleBinding {
                typed(json!({
                    "metadata": {"name": "b", "namespace": "ns"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
                    "subjects": [{"kind": "User", "name": "bob"}]
                }))
            };
            let jane = user(&[]);
            assert!(check(kind, &binding("ClusterRole", "view"), None, &jane, Some(::std::sync::Arc::new(Verbs)), Vec::new()).is_ok());
            let err = check(kind, &binding("ClusterRole", "edit"), None, &jane, Some(::std::sync::Arc::new(Verbs)), Vec::new()).unwrap_err();
            assert_eq!(err.code(), 403);
            assert!(err.message().starts_with("rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"jane\""), "{}", err.message());
            let held = vec![PolicyRule::resources(&["get"], &[""], &["secrets"])];
            assert!(check(kind, &binding("ClusterRole", "edit"), None, &jane, None, held).is_ok());
            let err = check(kind, &binding("Role", "missing"), None, &jane, None, Vec::new()).unwrap_err();
            assert_eq!(err.code(), 404);
        }
    }
}
