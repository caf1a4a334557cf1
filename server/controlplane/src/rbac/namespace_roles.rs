//! The default roles of particular namespaces (kube-apiserver's `NamespaceRoles()`, those this
//! server's API makes meaningful): `kube-system/extension-apiserver-authentication-reader`,
//! which lets an aggregated API server read the `extension-apiserver-authentication`
//! ConfigMap. Reconciled as the cluster roles are (created when missing; the rules, labels
//! and annotations a role lacks added unless its `autoupdate` annotation is `false`).

use apimachinery::rbac::{PolicyRule, covers};
use apimachinery::runtime::TypedObject;
use apimachinery::status::ApiError;
use kubernetes_api::rbac_authorization_k8s_io::ROLE_KIND;
use kubernetes_api::rbac_authorization_k8s_io::v1::Role;
use server::registry::Registry;

use super::bootstrap::{autoupdate, create, merge_meta, meta, update};
use super::informer;

/// The default namespaced roles.
pub fn namespace_roles() -> Vec<Role> {
    let mut reader = Role {
        metadata: meta("extension-apiserver-authentication-reader", &[]),
        rules: vec![
            (&PolicyRule::resources(&["get", "list", "watch"], &[""], &["configmaps"])
                .named(&["extension-apiserver-authentication"]))
                .into(),
        ],
    };
    reader.metadata.namespace = Some("kube-system".to_string());
    vec![reader]
}

/// The role with what `existing` lacks of `expected`, or `None` when nothing is missing.
pub fn reconcile_role(existing: &Role, expected: &Role) -> Option<Role> {
    if !autoupdate(&existing.metadata) {
        return None;
    }
    let mut out = existing.clone();
    let mut changed = merge_meta(&mut out.metadata, &expected.metadata);
    let have = informer::rules(&existing.rules);
    let (_, missing) = covers(&have, &informer::rules(&expected.rules));
    if !missing.is_empty() {
        out.rules.extend(missing.iter().map(Into::into));
        changed = true;
    }
    changed.then_some(out)
}

/// Creates or completes every default namespaced role (when the scheme serves Roles).
pub async fn reconcile(registry: &Registry) -> Result<(), ApiError> {
    let Ok(roles) = registry.store(&ROLE_KIND) else {
        return Ok(());
    };
    for mut expected in namespace_roles() {
        TypedObject::run_default_hooks(&mut expected);
        let namespace = expected.metadata.namespace.clone().unwrap_or_default();
        let name = expected.metadata.name.clone().unwrap_or_default();
        match roles.try_get(&namespace, &name).await? {
            None => create(&roles, Box::new(expected)).await?,
            Some(existing) => {
                if let Some(existing) = existing.downcast_ref::<Role>()
                    && let Some(reconciled) = reconcile_role(existing, &expected)
                {
                    update(&roles, &namespace, &name, Box::new(reconciled)).await?;
                }
            }
        }
    }
    Ok(())
}
