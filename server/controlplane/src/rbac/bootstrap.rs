//! The default roles and bindings every cluster has (kube-apiserver's `bootstrappolicy`), and
//! their reconciliation at start (its `rbac/bootstrap-roles` post-start hook): a missing object
//! is created; an existing one whose `rbac.authorization.kubernetes.io/autoupdate` annotation is
//! not `false` gets the rules, aggregation selectors, subjects, labels and annotations it lacks
//! (a binding whose role changed is recreated). Every write goes through the kind's store.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::meta::{LabelSelector, ObjectMeta};
use apimachinery::rbac::{PolicyRule, covers};
use apimachinery::runtime::{Object, TypedObject};
use apimachinery::status::ApiError;
use apimachinery::user::{AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP};
use kubernetes_api::rbac_authorization_k8s_io::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, RoleRef, Subject,
};
use kubernetes_api::rbac_authorization_k8s_io::{CLUSTER_ROLE_BINDING_KIND, CLUSTER_ROLE_KIND};

use super::informer;
use super::snapshot::Sources;
use crate::controllers::Replace;
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};

/// The label of every bootstrap object.
pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
/// Its value.
pub const BOOTSTRAPPING_VALUE: &str = "rbac-defaults";
/// The annotation that, set to `false`, keeps reconciliation away from an object.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The label of cluster roles aggregated into `admin`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// The label of cluster roles aggregated into `edit`.
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// The label of cluster roles aggregated into `view`.
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

pub(super) fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    let mut all: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    all.insert(BOOTSTRAPPING_LABEL.into(), BOOTSTRAPPING_VALUE.into());
    ObjectMeta {
        name: Some(name.to_string()),
        labels: all,
        annotations: [(AUTOUPDATE_ANNOTATION.to_string(), "true".to_string())].into(),
        ..ObjectMeta::default()
    }
}

pub(super) fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: meta(name, labels),
        rules: rules.iter().map(Into::into).collect(),
        ..ClusterRole::default()
    }
}

fn aggregated(name: &str, labels: &[(&str, &str)], selector_label: &str) -> ClusterRole {
    ClusterRole {
        metadata: meta(name, labels),
        rules: Vec::new(),
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: vec![LabelSelector {
                match_labels: [(selector_label.to_string(), "true".to_string())].into(),
                ..LabelSelector::default()
            }],
        }),
    }
}

pub(super) fn r(verbs: &[&str], group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule::resources(verbs, &[group], resources)
}

/// The default cluster roles (kube-apiserver's `ClusterRoles()`, those this server's API makes
/// meaningful), then the controllers' ([`super::controller_roles`]).
pub fn cluster_roles() -> Vec<ClusterRole> {
    let mut roles = vec![
        role(
            "cluster-admin",
            &[],
            vec![
                PolicyRule::resources(&["*"], &["*"], &["*"]),
                PolicyRule::urls(&["*"], &["*"]),
            ],
        ),
        role(
            "system:discovery",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        role(
            "system:monitoring",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        role(
            "system:basic-user",
            &[],
            vec![
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                r(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        role(
            "system:public-info-viewer",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        role(
            "system:service-account-issuer-discovery",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        // What an aggregated API server needs to delegate authentication and authorization
        // (kube-apiserver's `system:auth-delegator`; these creates do not mutate).
        role(
            "system:auth-delegator",
            &[],
            vec![
                r(&["create"], "authentication.k8s.io", &["tokenreviews"]),
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        aggregated("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        aggregated("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            vec![
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["localsubjectaccessreviews"],
                ),
                r(READ_WRITE, RBAC_GROUP, &["roles", "rolebindings"]),
            ],
        ),
        role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            vec![
                r(
                    READ,
                    "",
                    &[
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                r(&["impersonate"], "", &["serviceaccounts"]),
                r(
                    WRITE,
                    "",
                    &[
                        "pods",
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                    ],
                ),
                r(&["create"], "", &["pods/eviction"]),
                r(
                    WRITE,
                    "",
                    &[
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                        "events",
                    ],
                ),
                r(&["create"], "", &["serviceaccounts/token"]),
                r(
                    WRITE,
                    "apps",
                    &[
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ],
                ),
                r(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
                r(WRITE, "batch", &["jobs", "cronjobs"]),
                r(
                    WRITE,
                    "extensions",
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "ingresses",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                r(WRITE, "policy", &["poddisruptionbudgets"]),
                r(
                    WRITE,
                    "networking.k8s.io",
                    &["networkpolicies", "ingresses"],
                ),
            ],
        ),
        role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            vec![
                r(
                    READ,
                    "",
                    &[
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ],
                ),
                r(
                    READ,
                    "",
                    &[
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ],
                ),
                r(READ, "", &["namespaces"]),
                r(READ, "discovery.k8s.io", &["endpointslices"]),
                r(
                    READ,
                    "apps",
                    &[
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ],
                ),
                r(
                    READ,
                    "autoscaling",
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                r(
                    READ,
                    "batch",
                    &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
                ),
                r(
                    READ,
                    "extensions",
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                r(
                    READ,
                    "policy",
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                r(
                    READ,
                    "networking.k8s.io",
                    &["networkpolicies", "ingresses", "ingresses/status"],
                ),
            ],
        ),
    ];
    roles.extend(super::controller_roles::cluster_roles());
    roles
}

fn cluster_binding(role: &str, groups: &[&str]) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(role, &[]),
        role_ref: RoleRef {
            api_group: RBAC_GROUP.into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: groups
            .iter()
            .map(|g| Subject {
                kind: "Group".into(),
                api_group: Some(RBAC_GROUP.into()),
                name: g.to_string(),
                namespace: None,
            })
            .collect(),
    }
}

/// The default cluster role bindings (kube-apiserver's `ClusterRoleBindings()`), then the
/// controllers' ([`super::controller_roles`]).
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    let mut bindings = vec![
        cluster_binding("cluster-admin", &[MASTERS_GROUP]),
        cluster_binding("system:monitoring", &["system:monitoring"]),
        cluster_binding("system:discovery", &[AUTHENTICATED_GROUP]),
        cluster_binding("system:basic-user", &[AUTHENTICATED_GROUP]),
        cluster_binding(
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
        cluster_binding(
            "system:public-info-viewer",
            &[AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP],
        ),
    ];
    bindings.extend(super::controller_roles::cluster_role_bindings());
    bindings
}

/// The bootstrap policy as index sources, with aggregated roles filled (for tests and for
/// reasoning about the defaults without a store).
pub fn sources() -> Sources {
    let mut roles = cluster_roles();
    // Aggregation feeds aggregated roles into others (view into edit into admin): repeat until
    // nothing changes, as the controller's passes do.
    loop {
        let mut changed = false;
        for i in 0..roles.len() {
            let Some(rule) = &roles[i].aggregation_rule else {
                continue;
            };
            let name = roles[i].metadata.name.clone().unwrap_or_default();
            let rules =
                crate::controllers::cluster_role_aggregation::aggregate(&name, rule, &roles)
                    .unwrap_or_default();
            if rules != roles[i].rules {
                roles[i].rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut sources = Sources::default();
    for role in &roles {
        sources.cluster_roles.insert(
            role.metadata.name.clone().unwrap_or_default(),
            Arc::new(informer::rules(&role.rules)),
        );
    }
    for b in cluster_role_bindings() {
        let name = b.metadata.name.clone().unwrap_or_default();
        let binding = super::snapshot::Binding {
            name: name.clone(),
            namespace: String::new(),
            role_kind: b.role_ref.kind.clone(),
            role_name: b.role_ref.name.clone(),
            subjects: b
                .subjects
                .iter()
                .map(|s| super::snapshot::Subject {
                    kind: s.kind.clone(),
                    name: s.name.clone(),
                    namespace: s.namespace.clone().unwrap_or_default(),
                })
                .collect(),
        };
        sources.cluster_bindings.insert(name, Arc::new(binding));
    }
    sources
}

pub(super) fn autoupdate(meta: &ObjectMeta) -> bool {
    meta.annotations
        .get(AUTOUPDATE_ANNOTATION)
        .map(String::as_str)
        != Some("false")
}

/// Adds the labels and annotations of `expected` that `existing` lacks; true if any was.
pub(super) fn merge_meta(existing: &mut ObjectMeta, expected: &ObjectMeta) -> bool {
    let mut changed = false;
    for (map, want) in [
        (&mut existing.labels, &expected.labels),
        (&mut existing.annotations, &expected.annotations),
    ] {
        for (k, v) in want {
            if !map.contains_key(k) {
                map.insert(k.clone(), v.clone());
                changed = true;
            }
        }
    }
    changed
}

/// kube-apiserver's `ReconcileClusterRole` without removal: the reconciled role, or `None`
/// when nothing is missing.
pub fn reconcile_role(existing: &ClusterRole, expected: &ClusterRole) -> Option<ClusterRole> {
    if !autoupdate(&existing.metadata) {
        return None;
    }
    let mut out = existing.clone();
    let mut changed = merge_meta(&mut out.metadata, &expected.metadata);
    match (&expected.aggregation_rule, &mut out.aggregation_rule) {
        (Some(want), Some(have)) => {
            for selector in &want.cluster_role_selectors {
                if !have.cluster_role_selectors.contains(selector) {
                    have.cluster_role_selectors.push(selector.clone());
                    changed = true;
                }
            }
        }
        (Some(want), None) => {
            out.aggregation_rule = Some(want.clone());
            changed = true;
        }
        (None, _) => {
            let have = informer::rules(&existing.rules);
            let (_, missing) = covers(&have, &informer::rules(&expected.rules));
            if !missing.is_empty() {
                out.rules.extend(missing.iter().map(Into::into));
                changed = true;
            }
        }
    }
    changed.then_some(out)
}

/// What reconciling a binding needs.
pub enum BindingReconcile {
    /// Nothing is missing.
    Unchanged,
    /// The binding with the missing subjects, labels and annotations added.
    Update(ClusterRoleBinding),
    /// The role changed: the binding must be deleted and created again.
    Recreate(ClusterRoleBinding),
}

/// kube-apiserver's `ReconcileRoleBinding` without removal.
pub fn reconcile_binding(
    existing: &ClusterRoleBinding,
    expected: &ClusterRoleBinding,
) -> BindingReconcile {
    if !autoupdate(&existing.metadata) {
        return BindingReconcile::Unchanged;
    }
    let mut out = existing.clone();
    let mut changed = merge_meta(&mut out.metadata, &expected.metadata);
    for s in &expected.subjects {
        if !out.subjects.contains(s) {
            out.subjects.push(s.clone());
            changed = true;
        }
    }
    if existing.role_ref != expected.role_ref {
        out.role_ref = expected.role_ref.clone();
        return BindingReconcile::Recreate(out);
    }
    if changed {
        BindingReconcile::Update(out)
    } else {
        BindingReconcile::Unchanged
    }
}

pub(super) async fn create(store: &Store, mut object: Box<dyn Object>) -> Result<(), ApiError> {
    object.run_default_hooks();
    server::apply::update_managed_fields(None, &mut *object, "apiary", "")?;
    match store.create(object, &NoAdmission, false).await {
        Ok(_) => Ok(()),
        // Another replica created it first.
        Err(e) if e.code() == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

pub(super) async fn update(
    store: &Store,
    namespace: &str,
    name: &str,
    object: Box<dyn Object>,
) -> Result<(), ApiError> {
    store
        .update(
            namespace,
            name,
            &Replace(object),
            &NoAdmission,
            &NoAdmission,
            UpdateOptions::default(),
        )
        .await
        .map(|_| ())
}

/// Creates or completes every bootstrap role and binding. Idempotent; run as the
/// `rbac/bootstrap-roles` post-start hook.
pub async fn reconcile(registry: &Registry) -> Result<(), ApiError> {
    let roles = registry.store(&CLUSTER_ROLE_KIND)?;
    for mut expected in cluster_roles() {
        TypedObject::run_default_hooks(&mut expected);
        let name = expected.metadata.name.clone().unwrap_or_default();
        match roles.try_get("", &name).await? {
            None => create(&roles, Box::new(expected)).await?,
            Some(existing) => {
                if let Some(existing) = existing.downcast_ref::<ClusterRole>()
                    && let Some(reconciled) = reconcile_role(existing, &expected)
                {
                    update(&roles, "", &name, Box::new(reconciled)).await?;
                }
            }
        }
    }
    super::namespace_roles::reconcile(registry).await?;
    let bindings = registry.store(&CLUSTER_ROLE_BINDING_KIND)?;
    for mut expected in cluster_role_bindings() {
        TypedObject::run_default_hooks(&mut expected);
        let name = expected.metadata.name.clone().unwrap_or_default();
        let Some(existing) = bindings.try_get("", &name).await? else {
            create(&bindings, Box::new(expected)).await?;
            continue;
        };
        let Some(existing) = existing.downcast_ref::<ClusterRoleBinding>() else {
            continue;
        };
        match reconcile_binding(existing, &expected) {
            BindingReconcile::Unchanged => {}
            BindingReconcile::Update(b) => update(&bindings, "", &name, Box::new(b)).await?,
            BindingReconcile::Recreate(mut b) => {
                bindings
                    .delete(
                        "",
                        &name,
                        &NoAdmission,
                        &server::registry::DeleteOptions::default(),
                    )
                    .await?;
                b.metadata.resource_version = None;
                b.metadata.uid = None;
                b.metadata.creation_timestamp = None;
                b.metadata.managed_fields.clear();
                create(&bindings, Box::new(b)).await?;
            }
        }
    }
    Ok(())
}

/// The names of the bootstrap cluster roles and bindings, which the authorizer's index must
/// hold before the server reports ready.
pub fn names() -> (Vec<String>, Vec<String>) {
    (
        cluster_roles()
            .iter()
            .map(|r| r.metadata.name.clone().unwrap_or_default())
            .collect(),
        cluster_role_bindings()
            .iter()
            .map(|b| b.metadata.name.clone().unwrap_or_default())
            .collect(),
    )
}

/// The `rbac/bootstrap-roles` post-start hook: starts the authorizer's informer (once),
/// reconciles the bootstrap policy, and finishes once the index holds every bootstrap role and
/// binding, so that a ready server already authorizes by them.
pub async fn start(
    api: &server::endpoints::ApiContext,
    rbac: &Arc<super::RbacAuthorizer>,
    started: &std::sync::atomic::AtomicBool,
) -> Result<(), ApiError> {
    if api
        .scheme
        .by_kind(RBAC_GROUP, "ClusterRoleBinding")
        .is_none()
    {
        rbac.mark_synced();
        return Ok(());
    }
    if !started.swap(true, std::sync::atomic::Ordering::SeqCst) {
        informer::spawn(&api.registry, Arc::clone(rbac))?;
    }
    reconcile(&api.registry).await?;
    rbac.wait_synced().await;
    let (roles, bindings) = names();
    loop {
        let snapshot = rbac.snapshot();
        if roles.iter().all(|r| snapshot.has_cluster_role(r))
            && bindings.iter().all(|b| snapshot.has_cluster_binding(b))
        {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
