//! Table-driven tests of binding resolution and rule matching over a snapshot.

use std::borrow::Cow;

use apimachinery::authorization::{Attributes, Authorizer, Decision};
use apimachinery::rbac::{PolicyRule, RuleResolver};

use super::snapshot::{Binding, Sources, Subject};
use super::*;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

fn subject(kind: &str, name: &str, namespace: &str) -> Subject {
    Subject {
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.into(),
    }
}

fn binding(ns: &str, name: &str, role_kind: &str, role: &str, subjects: Vec<Subject>) -> Binding {
    Binding {
        name: name.into(),
        namespace: ns.into(),
        role_kind: role_kind.into(),
        role_name: role.into(),
        subjects,
    }
}

fn sources() -> Sources {
    let mut s = Sources::default();
    let mut cluster_role = |name: &str, rules: Vec<PolicyRule>| {
        s.cluster_roles.insert(name.into(), Arc::new(rules));
    };
    cluster_role(
        "pod-reader",
        vec![PolicyRule::resources(
            &["get", "list"],
            &[""],
            &["pods", "pods/log"],
        )],
    );
    cluster_role(
        "scaler",
        vec![PolicyRule::resources(&["update"], &["*"], &["*/scale"])],
    );
    cluster_role(
        "health",
        vec![PolicyRule::urls(&["get"], &["/healthz", "/logs/*"])],
    );
    cluster_role(
        "everything",
        vec![PolicyRule::resources(&["*"], &["*"], &["*"])],
    );
    s.roles.insert(
        ("team".into(), "cm-one".into()),
        Arc::new(vec![
            PolicyRule::resources(&["get", "update"], &[""], &["configmaps"]).named(&["one"]),
        ]),
    );
    let mut crb = |b: Binding| {
        s.cluster_bindings.insert(b.name.clone(), Arc::new(b));
    };
    crb(binding(
        "",
        "health",
        "ClusterRole",
        "health",
        vec![subject("Group", "watchers", "")],
    ));
    crb(binding(
        "",
        "scalers",
        "ClusterRole",
        "scaler",
        vec![
            subject("ServiceAccount", "autoscaler", "kube-system"),
            subject("ServiceAccount", "no-namespace", ""),
        ],
    ));
    crb(binding(
        "",
        "dangling",
        "ClusterRole",
        "missing",
        vec![subject("User", "lost", "")],
    ));
    let mut rb = |b: Binding| {
        s.bindings
            .insert((b.namespace.clone(), b.name.clone()), Arc::new(b));
    };
    rb(binding(
        "team",
        "readers",
        "ClusterRole",
        "pod-reader",
        vec![
            subject("User", "alice", ""),
            subject("ServiceAccount", "robot", ""),
        ],
    ));
    rb(binding(
        "team",
        "cm",
        "Role",
        "cm-one",
        vec![subject("Group", "devs", "")],
    ));
    rb(binding(
        "other",
        "all",
        "ClusterRole",
        "everything",
        vec![subject("User", "bob", "")],
    ));
    s
}

fn authorizer() -> Arc<RbacAuthorizer> {
    let a = RbacAuthorizer::new();
    a.publish(Snapshot::build(&sources()));
    a
}

fn res(
    u: &UserInfo,
    verb: &str,
    ns: &str,
    group: &str,
    r: &str,
    sub: &str,
    name: &str,
) -> Attributes<'static> {
    Attributes {
        user: Cow::Owned(u.clone()),
        verb: Cow::Owned(verb.into()),
        is_resource_request: true,
        namespace: Cow::Owned(ns.into()),
        api_group: Cow::Owned(group.into()),
        resource: Cow::Owned(r.into()),
        subresource: Cow::Owned(sub.into()),
        name: Cow::Owned(name.into()),
        ..Attributes::default()
    }
}

fn url(u: &UserInfo, verb: &str, path: &str) -> Attributes<'static> {
    Attributes {
        user: Cow::Owned(u.clone()),
        verb: Cow::Owned(verb.into()),
        path: Cow::Owned(path.into()),
        ..Attributes::default()
    }
}

#[test]
fn decisions_table() {
    let a = authorizer();
    let alice = user("alice", &["system:authenticated"]);
    let dev = user("dan", &["devs"]);
    let robot = user(
        "system:serviceaccount:team:robot",
        &["system:serviceaccounts"],
    );
    let robot_elsewhere = user("system:serviceaccount:other:robot", &[]);
    let autoscaler = user("system:serviceaccount:kube-system:autoscaler", &[]);
    let nons = user("system:serviceaccount:team:no-namespace", &[]);
    let watcher = user("w", &["watchers"]);
    let bob = user("bob", &[]);
    let cases: Vec<(&str, Attributes<'static>, bool)> = vec![
        (
            "RoleBinding to ClusterRole in its namespace",
            res(&alice, "get", "team", "", "pods", "", "p"),
            true,
        ),
        (
            "resource/subresource rule",
            res(&alice, "get", "team", "", "pods", "log", "p"),
            true,
        ),
        (
            "subresource not granted",
            res(&alice, "get", "team", "", "pods", "exec", "p"),
            false,
        ),
        (
            "RoleBinding to ClusterRole not in another namespace",
            res(&alice, "get", "other", "", "pods", "", "p"),
            false,
        ),
        (
            "RoleBinding to ClusterRole not at cluster scope",
            res(&alice, "list", "", "", "pods", "", ""),
            false,
        ),
        (
            "verb not granted",
            res(&alice, "delete", "team", "", "pods", "", "p"),
            false,
        ),
        (
            "Role by group, listed name",
            res(&dev, "update", "team", "", "configmaps", "", "one"),
            true,
        ),
        (
            "Role by group, other name",
            res(&dev, "update", "team", "", "configmaps", "", "two"),
            false,
        ),
        (
            "Role by group, no name (list)",
            res(&dev, "get", "team", "", "configmaps", "", ""),
            false,
        ),
        (
            "SA subject defaults to the binding's namespace",
            res(&robot, "list", "team", "", "pods", "", ""),
            true,
        ),
        (
            "SA of another namespace",
            res(&robot_elsewhere, "list", "team", "", "pods", "", ""),
            false,
        ),
        (
            "SA in a ClusterRoleBinding, */scale",
            res(
                &autoscaler,
                "update",
                "any",
                "apps",
                "deployments",
                "scale",
                "d",
            ),
            true,
        ),
        (
            "*/scale at cluster scope",
            res(
                &autoscaler,
                "update",
                "",
                "apps",
                "deployments",
                "scale",
                "d",
            ),
            true,
        ),
        (
            "*/scale is not the resource",
            res(&autoscaler, "update", "any", "apps", "deployments", "", "d"),
            false,
        ),
        (
            "SA without namespace in a ClusterRoleBinding never matches",
            res(&nons, "update", "team", "apps", "deployments", "scale", "d"),
            false,
        ),
        (
            "nonResourceURL exact",
            url(&watcher, "get", "/healthz"),
            true,
        ),
        (
            "nonResourceURL prefix *",
            url(&watcher, "get", "/logs/kube/x"),
            true,
        ),
        (
            "nonResourceURL other",
            url(&watcher, "get", "/metrics"),
            false,
        ),
        (
            "nonResourceURL verb",
            url(&watcher, "post", "/healthz"),
            false,
        ),
        (
            "* in one namespace",
            res(&bob, "deletecollection", "other", "x.io", "things", "", ""),
            true,
        ),
        (
            "* not elsewhere",
            res(&bob, "get", "team", "", "pods", "", ""),
            false,
        ),
    ];
    for (name, attrs, want) in cases {
        let verdict = a.authorize(&attrs);
        assert_eq!(
            verdict.decision == Decision::Allow,
            want,
            "{name}: {verdict:?}"
        );
    }
}

#[test]
fn reasons_as_kubernetes_words_them() {
    let a = authorizer();
    let robot = user("system:serviceaccount:team:robot", &[]);
    assert_eq!(
        a.authorize(&res(&robot, "get", "team", "", "pods", "", "p"))
            .reason,
        "RBAC: allowed by RoleBinding \"readers/team\" of ClusterRole \"pod-reader\" to ServiceAccount \"robot/team\""
    );
    let autoscaler = user("system:serviceaccount:kube-system:autoscaler", &[]);
    assert_eq!(
        a.authorize(&res(
            &autoscaler,
            "update",
            "x",
            "apps",
            "deployments",
            "scale",
            "d"
        ))
        .reason,
        "RBAC: allowed by ClusterRoleBinding \"scalers\" of ClusterRole \"scaler\" to ServiceAccount \"autoscaler/kube-system\""
    );
    let dev = user("dan", &["devs"]);
    assert_eq!(
        a.authorize(&res(&dev, "get", "team", "", "configmaps", "", "one"))
            .reason,
        "RBAC: allowed by RoleBinding \"cm/team\" of Role \"cm-one\" to Group \"devs\""
    );
    let lost = user("lost", &[]);
    let verdict = a.authorize(&res(&lost, "get", "team", "", "pods", "", ""));
    assert_eq!(verdict.decision, Decision::NoOpinion);
    assert_eq!(
        verdict.reason,
        "RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found"
    );
    let nobody = user("nobody", &[]);
    assert_eq!(
        a.authorize(&res(&nobody, "get", "team", "", "pods", "", ""))
            .reason,
        ""
    );
}

#[test]
fn rules_for_and_role_references() {
    let a = authorizer();
    let alice = user("alice", &["watchers"]);
    let info = Authorizer::rules_for(&*a, &alice, "team").unwrap_or_default();
    assert_eq!(
        info.resource_rules,
        vec![PolicyRule::resources(
            &["get", "list"],
            &[""],
            &["pods", "pods/log"]
        )]
    );
    assert_eq!(
        info.non_resource_rules,
        vec![PolicyRule::urls(&["get"], &["/healthz", "/logs/*"])]
    );
    assert!(!info.incomplete);
    let (cluster_only, _) = RuleResolver::rules_for(&*a, &alice, "");
    assert_eq!(cluster_only.len(), 1);
    assert!(a.role_reference_rules("Role", "cm-one", "team").is_ok());
    let err = a
        .role_reference_rules("Role", "cm-one", "other")
        .unwrap_err();
    assert_eq!(err.code(), 404);
    assert_eq!(
        err.message(),
        "roles.rbac.authorization.k8s.io \"cm-one\" not found"
    );
}

#[test]
fn bootstrap_policy_aggregates_and_binds() {
    let a = RbacAuthorizer::new();
    a.publish(Snapshot::build(&bootstrap::sources()));
    let view = a
        .role_reference_rules("ClusterRole", "view", "")
        .unwrap_or_default();
    let edit = a
        .role_reference_rules("ClusterRole", "edit", "")
        .unwrap_or_default();
    let admin = a
        .role_reference_rules("ClusterRole", "admin", "")
        .unwrap_or_default();
    let allows = |rules: &[PolicyRule], verb: &str, resource: &str| {
        let u = user("u", &[]);
        let attrs = res(
            &u,
            verb,
            "ns",
            if resource.contains('.') {
                "rbac.authorization.k8s.io"
            } else {
                ""
            },
            resource.split('.').next().unwrap_or(""),
            "",
            "",
        );
        rules.iter().any(|r| r.allows(&attrs))
    };
    assert!(allows(&view, "list", "configmaps"));
    assert!(!allows(&view, "get", "secrets"));
    assert!(!allows(&view, "create", "configmaps"));
    assert!(allows(&edit, "create", "configmaps"));
    assert!(allows(&edit, "get", "secrets"));
    assert!(allows(&edit, "list", "configmaps"), "edit aggregates view");
    assert!(!allows(&edit, "create", "roles.rbac"));
    assert!(allows(&admin, "create", "roles.rbac"));
    assert!(allows(&admin, "create", "secrets"), "admin aggregates edit");
    let authenticated = user("jane", &["system:authenticated"]);
    for path in ["/api", "/apis/apps", "/version", "/openapi/v3"] {
        assert_eq!(
            a.authorize(&url(&authenticated, "get", path)).decision,
            Decision::Allow,
            "{path}"
        );
    }
    assert_eq!(
        a.authorize(&url(&authenticated, "get", "/metrics"))
            .decision,
        Decision::NoOpinion
    );
    let ssar = res(
        &authenticated,
        "create",
        "",
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "",
        "",
    );
    assert_eq!(a.authorize(&ssar).decision, Decision::Allow);
}

#[test]
fn the_namespace_controllers_account_may_empty_any_namespace_of_anything() {
    let a = RbacAuthorizer::new();
    a.publish(Snapshot::build(&bootstrap::sources()));
    let controller = user(
        "system:serviceaccount:kube-system:namespace-controller",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated",
        ],
    );
    for verb in ["get", "list", "delete", "deletecollection"] {
        let attrs = res(
            &controller,
            verb,
            "doomed",
            "wardle.example.com",
            "flunders",
            "",
            "",
        );
        assert_eq!(a.authorize(&attrs).decision, Decision::Allow, "{verb}");
    }
    for (verb, sub) in [("update", "finalize"), ("update", "status")] {
        let attrs = res(&controller, verb, "", "", "namespaces", sub, "doomed");
        assert_eq!(a.authorize(&attrs).decision, Decision::Allow, "{sub}");
    }
    let create = res(
        &controller,
        "create",
        "doomed",
        "wardle.example.com",
        "flunders",
        "",
        "",
    );
    assert_eq!(a.authorize(&create).decision, Decision::NoOpinion);
    // The binding is to that account alone.
    let other = user(
        "system:serviceaccount:default:namespace-controller",
        &["system:serviceaccounts", "system:authenticated"],
    );
    let attrs = res(&other, "delete", "doomed", "", "configmaps", "", "");
    assert_eq!(a.authorize(&attrs).decision, Decision::NoOpinion);
    let binding = controller_roles::cluster_role_bindings();
    assert_eq!(
        binding[0].metadata.name.as_deref(),
        Some("system:controller:namespace-controller")
    );
}

#[test]
fn incremental_updates_rebuild_only_what_changed() {
    let mut s = sources();
    let first = Snapshot::build(&s);
    let carol = user("carol", &[]);
    let get_pods = |snap: &Snapshot, ns: &str| {
        let a = RbacAuthorizer::new();
        a.publish(Snapshot::update(
            snap,
            &Sources::default(),
            &snapshot::Dirty::default(),
        ));
        a.authorize(&res(&carol, "get", ns, "", "pods", "", "p"))
            .decision
    };
    assert_eq!(get_pods(&first, "team"), Decision::NoOpinion);
    s.bindings.insert(
        ("team".into(), "carol".into()),
        Arc::new(binding(
            "team",
            "carol",
            "ClusterRole",
            "pod-reader",
            vec![subject("User", "carol", "")],
        )),
    );
    let dirty = snapshot::Dirty {
        namespaces: ["team".to_string()].into(),
        ..snapshot::Dirty::default()
    };
    let second = Snapshot::update(&first, &s, &dirty);
    assert_eq!(get_pods(&second, "team"), Decision::Allow);
    assert_eq!(get_pods(&second, "other"), Decision::NoOpinion);
    assert!(second.shares_namespace_with(&first, "other"));
    assert!(!second.shares_namespace_with(&first, "team"));
    s.bindings
        .remove(&("team".to_string(), "carol".to_string()));
    let third = Snapshot::update(&second, &s, &dirty);
    assert_eq!(get_pods(&third, "team"), Decision::NoOpinion);
}

#[test]
fn a_changed_role_reaches_the_bindings_that_name_it() {
    let mut s = sources();
    s.bindings.insert(
        ("team".into(), "dave".into()),
        Arc::new(binding(
            "team",
            "dave",
            "Role",
            "readers",
            vec![subject("User", "dave", "")],
        )),
    );
    s.cluster_bindings.insert(
        "erin".into(),
        Arc::new(binding(
            "",
            "erin",
            "ClusterRole",
            "pod-reader",
            vec![subject("User", "erin", "")],
        )),
    );
    let first = Snapshot::build(&s);
    let decide = |snap: &Snapshot, who: &str| {
        let a = RbacAuthorizer::new();
        a.publish(Snapshot::update(
            snap,
            &Sources::default(),
            &snapshot::Dirty::default(),
        ));
        let decision = a.authorize(&res(&user(who, &[]), "get", "team", "", "pods", "", "p"));
        (decision.decision, decision.reason.to_string())
    };
    assert_eq!(
        decide(&first, "dave"),
        (
            Decision::NoOpinion,
            "RBAC: role.rbac.authorization.k8s.io \"readers\" not found".to_string()
        )
    );
    assert_eq!(decide(&first, "erin").0, Decision::Allow);

    // The Role appears: only `roles` is dirty, and the binding made before it now grants.
    s.roles.insert(
        ("team".into(), "readers".into()),
        Arc::new(vec![PolicyRule::resources(&["get"], &[""], &["pods"])]),
    );
    let roles = snapshot::Dirty {
        roles: true,
        ..snapshot::Dirty::default()
    };
    let second = Snapshot::update(&first, &s, &roles);
    assert_eq!(decide(&second, "dave").0, Decision::Allow);

    // The ClusterRole loses `get`: the cluster binding stops granting it.
    s.cluster_roles.insert(
        "pod-reader".into(),
        Arc::new(vec![PolicyRule::resources(&["list"], &[""], &["pods"])]),
    );
    let cluster_roles = snapshot::Dirty {
        cluster_roles: true,
        ..snapshot::Dirty::default()
    };
    let third = Snapshot::update(&second, &s, &cluster_roles);
    assert_eq!(decide(&third, "erin").0, Decision::NoOpinion);
    assert_eq!(decide(&third, "dave").0, Decision::Allow);
}

/// The `RBAC` mode the control plane adds, after `system:masters` and beside the generic
/// server's modes, over the bootstrap policy.
#[test]
fn masters_then_modes() {
    use server::genericserver::groups::{ApiGroups, authorization_modes_of};
    let apis = crate::KubernetesApis::default();
    apis.rbac().publish(Snapshot::build(&bootstrap::sources()));
    let groups: Vec<Arc<dyn ApiGroups>> = vec![Arc::new(apis)];
    let modes = authorization_modes_of(&groups);
    let pick = |names: &[&str]| {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        server::authz::build(modes.parse(&names).unwrap_or_default())
    };
    let anon = UserInfo::anonymous();
    let with_anon_groups = UserInfo {
        groups: vec![apimachinery::user::UNAUTHENTICATED_GROUP.into()],
        ..anon.clone()
    };
    let union = pick(&["RBAC"]);
    for p in ["/healthz", "/readyz", "/version", "/livez"] {
        let verdict = union.authorize(&url(&with_anon_groups, "get", p));
        assert_eq!(verdict.decision, Decision::Allow, "{p}");
        assert_eq!(
            verdict.reason,
            "RBAC: allowed by ClusterRoleBinding \"system:public-info-viewer\" of ClusterRole \"system:public-info-viewer\" to Group \"system:unauthenticated\""
        );
    }
    for p in ["/api", "/versionx", "/metrics", "/readyz/ping"] {
        assert_eq!(
            union.authorize(&url(&anon, "get", p)).decision,
            Decision::NoOpinion,
            "{p}"
        );
    }
    let admin = user("admin", &[apimachinery::user::MASTERS_GROUP]);
    let verdict = union.authorize(&url(&admin, "get", "/api"));
    assert_eq!(verdict, Authorization::allow(""));
    let deny = pick(&["AlwaysDeny"]);
    let verdict = deny.authorize(&url(&anon, "get", "/healthz"));
    assert_eq!(verdict.decision, Decision::NoOpinion);
    assert_eq!(verdict.reason, "Everything is forbidden.");
    assert_eq!(
        deny.authorize(&url(&admin, "get", "/api")).decision,
        Decision::Allow
    );
    let allow = pick(&["AlwaysDeny", "AlwaysAllow"]);
    assert_eq!(
        allow.authorize(&url(&anon, "get", "/api")).decision,
        Decision::Allow
    );
}
