use std::borrow::Cow;

use super::*;

fn resource(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes<'static> {
    Attributes {
        verb: Cow::Owned(verb.into()),
        is_resource_request: true,
        api_group: Cow::Owned(group.into()),
        resource: Cow::Owned(resource.into()),
        subresource: Cow::Owned(sub.into()),
        name: Cow::Owned(name.into()),
        namespace: Cow::Borrowed("ns"),
        ..Attributes::default()
    }
}

fn path(verb: &str, p: &str) -> Attributes<'static> {
    Attributes {
        verb: Cow::Owned(verb.into()),
        path: Cow::Owned(p.into()),
        ..Attributes::default()
    }
}

#[test]
fn rule_allows_table() {
    let pods = PolicyRule::resources(&["get", "list"], &[""], &["pods"]);
    let pods_log = PolicyRule::resources(&["get"], &[""], &["pods/log"]);
    let any_scale = PolicyRule::resources(&["update"], &["*"], &["*/scale"]);
    let named = PolicyRule::resources(&["get"], &[""], &["configmaps"]).named(&["a", "b"]);
    let all = PolicyRule::resources(&["*"], &["*"], &["*"]);
    let health = PolicyRule::urls(&["get"], &["/healthz", "/readyz*"]);
    let star_url = PolicyRule::urls(&["*"], &["*"]);
    let cases: Vec<(&str, &PolicyRule, Attributes<'static>, bool)> = vec![
        ("exact", &pods, resource("get", "", "pods", "", "p"), true),
        (
            "other verb",
            &pods,
            resource("delete", "", "pods", "", "p"),
            false,
        ),
        (
            "other group",
            &pods,
            resource("get", "apps", "pods", "", ""),
            false,
        ),
        (
            "subresource not granted by resource",
            &pods,
            resource("get", "", "pods", "log", "p"),
            false,
        ),
        (
            "resource/subresource",
            &pods_log,
            resource("get", "", "pods", "log", "p"),
            true,
        ),
        (
            "resource/subresource is not the resource",
            &pods_log,
            resource("get", "", "pods", "", "p"),
            false,
        ),
        (
            "*/subresource",
            &any_scale,
            resource("update", "apps", "deployments", "scale", "d"),
            true,
        ),
        (
            "*/subresource other sub",
            &any_scale,
            resource("update", "apps", "deployments", "status", "d"),
            false,
        ),
        (
            "*/subresource needs a subresource",
            &any_scale,
            resource("update", "apps", "deployments", "", "d"),
            false,
        ),
        (
            "resourceNames listed",
            &named,
            resource("get", "", "configmaps", "", "b"),
            true,
        ),
        (
            "resourceNames unlisted",
            &named,
            resource("get", "", "configmaps", "", "c"),
            false,
        ),
        (
            "resourceNames and list (no name)",
            &named,
            resource("get", "", "configmaps", "", ""),
            false,
        ),
        (
            "* everything",
            &all,
            resource("deletecollection", "x.io", "things", "status", ""),
            true,
        ),
        (
            "resource rule never allows a path",
            &all,
            path("get", "/healthz"),
            false,
        ),
        ("url exact", &health, path("get", "/healthz"), true),
        (
            "url exact only",
            &health,
            path("get", "/healthz/ping"),
            false,
        ),
        ("url prefix *", &health, path("get", "/readyz/etcd"), true),
        ("url prefix * itself", &health, path("get", "/readyz"), true),
        ("url verb", &health, path("post", "/healthz"), false),
        ("url *", &star_url, path("put", "/anything/at/all"), true),
        (
            "url rule never allows a resource",
            &star_url,
            resource("get", "", "pods", "", ""),
            false,
        ),
    ];
    for (name, rule, attrs, want) in cases {
        assert_eq!(rule.allows(&attrs), want, "{name}");
    }
}

#[test]
fn covers_table() {
    let owner = vec![
        PolicyRule::resources(&["get", "list"], &[""], &["pods", "*/status"]),
        PolicyRule::resources(&["update"], &[""], &["configmaps"]).named(&["a"]),
        PolicyRule::urls(&["get"], &["/api/*"]),
    ];
    let cases: Vec<(&str, PolicyRule, bool)> = vec![
        (
            "same",
            PolicyRule::resources(&["get"], &[""], &["pods"]),
            true,
        ),
        (
            "more verbs",
            PolicyRule::resources(&["get", "delete"], &[""], &["pods"]),
            false,
        ),
        (
            "*/status covers x/status",
            PolicyRule::resources(&["get"], &[""], &["services/status"]),
            true,
        ),
        (
            "named covered",
            PolicyRule::resources(&["update"], &[""], &["configmaps"]).named(&["a"]),
            true,
        ),
        (
            "all names not covered by named",
            PolicyRule::resources(&["update"], &[""], &["configmaps"]),
            false,
        ),
        (
            "url under prefix",
            PolicyRule::urls(&["get"], &["/api/v1"]),
            true,
        ),
        (
            "url outside prefix",
            PolicyRule::urls(&["get"], &["/apis"]),
            false,
        ),
        (
            "star verb not covered",
            PolicyRule::resources(&["*"], &[""], &["pods"]),
            false,
        ),
    ];
    for (name, servant, want) in cases {
        assert_eq!(covers(&owner, &[servant]).0, want, "{name}");
    }
    let admin = vec![
        PolicyRule::resources(&["*"], &["*"], &["*"]),
        PolicyRule::urls(&["*"], &["*"]),
    ];
    assert!(covers(&admin, &owner).0);
}

#[test]
fn compact_and_message() {
    let missing = covers(
        &[],
        &[
            PolicyRule::resources(&["get", "list"], &[""], &["pods"]),
            PolicyRule::resources(&["get"], &[""], &["secrets"]).named(&["s1", "s2"]),
            PolicyRule::urls(&["get"], &["/metrics"]),
        ],
    )
    .1;
    let mut texts: Vec<String> = compact(&missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    texts.sort();
    assert_eq!(
        texts,
        vec![
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}",
            "{APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"s1\"], Verbs:[\"get\"]}",
            "{APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"s2\"], Verbs:[\"get\"]}",
            "{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}",
        ]
    );

    struct Fixed(Vec<PolicyRule>);
    impl RuleResolver for Fixed {
        fn rules_for(&self, _: &UserInfo, _: &str) -> (Vec<PolicyRule>, Vec<String>) {
            (self.0.clone(), Vec::new())
        }
        fn role_reference_rules(
            &self,
            _: &str,
            _: &str,
            _: &str,
        ) -> Result<Vec<PolicyRule>, ApiError> {
            Ok(Vec::new())
        }
    }
    let user = UserInfo {
        name: "jane".into(),
        groups: vec!["devs".into(), "system:authenticated".into()],
        ..UserInfo::default()
    };
    let resolver = Fixed(vec![PolicyRule::resources(&["get"], &[""], &["pods"])]);
    assert!(
        confirm_no_escalation(
            &resolver,
            &user,
            "ns",
            &[PolicyRule::resources(&["get"], &[""], &["pods"])]
        )
        .is_ok()
    );
    let err = confirm_no_escalation(
        &resolver,
        &user,
        "ns",
        &[PolicyRule::resources(
            &["get", "list", "watch"],
            &[""],
            &["pods"],
        )],
    )
    .unwrap_err();
    assert_eq!(
        err,
        "user \"jane\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\" \"watch\"]}"
    );
}
