//! The roles of the controllers this server runs in-process, under kube-controller-manager's
//! service accounts (kube-apiserver's bootstrap `controller_policy.go`): each
//! `system:controller:<name>` ClusterRole is bound to the service account `kube-system/<name>`,
//! with the labels and annotation of every bootstrap object.
//!
//! The controllers write through the stores, which authorize nothing; the roles matter where a
//! controller's request is authorized elsewhere: the namespace controller's lists and deletes
//! on an aggregated API server, which authorizes them by `SubjectAccessReview` back to this
//! server.

use kubernetes_api::rbac_authorization_k8s_io::v1::{
    ClusterRole, ClusterRoleBinding, RoleRef, Subject,
};

use super::bootstrap::{meta, r, role};

/// The prefix of a controller's role (kube's `saRolePrefix`).
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

/// The namespace of the controllers' service accounts.
pub const CONTROLLER_NAMESPACE: &str = "kube-system";

/// The controllers' cluster roles (kube's `ControllerRoles()`, for the controllers this
/// server runs whose requests leave it).
pub fn cluster_roles() -> Vec<ClusterRole> {
    vec![role(
        &format!("{CONTROLLER_ROLE_PREFIX}namespace-controller"),
        &[],
        vec![
            r(&["get", "list", "watch", "delete"], "", &["namespaces"]),
            r(
                &["update"],
                "",
                &["namespaces/finalize", "namespaces/status"],
            ),
            r(&["get", "list", "delete", "deletecollection"], "*", &["*"]),
        ],
    )]
}

/// The binding of each controller role to its service account (kube's
/// `ControllerRoleBindings()`: `NewClusterBinding(role).SAs("kube-system", <name>)`).
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    cluster_roles()
        .iter()
        .filter_map(|role| {
            let name = role.metadata.name.clone()?;
            let account = name.strip_prefix(CONTROLLER_ROLE_PREFIX)?.to_string();
            Some(ClusterRoleBinding {
                metadata: meta(&name, &[]),
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "ClusterRole".into(),
                    name,
                },
                subjects: vec![Subject {
                    kind: "ServiceAccount".into(),
                    api_group: None,
                    name: account,
                    namespace: Some(CONTROLLER_NAMESPACE.into()),
                }],
            })
        })
        .collect()
}
