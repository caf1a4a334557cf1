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

/// A Role prints its name and creation time.
pub struct RoleStrategy;

impl Strategy for RoleStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
    }
}

/// A ClusterRole prints its name and creation time.
pub struct ClusterRoleStrategy;

impl Strategy for ClusterRoleStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
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

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&ROLE_BINDING_TABLE)
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

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&CLUSTER_ROLE_BINDING_TABLE)
    }
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
}
