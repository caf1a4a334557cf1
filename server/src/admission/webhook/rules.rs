//! Which requests a webhook is called for: its `rules` (operations, groups, versions,
//! resources with subresources, scope), as kube-apiserver's rule matcher reads them.

use apimachinery::ResourceInfo;
use apimachinery::admission::{Attributes, Operation};
use apimachinery::runtime::Object;
use apimachinery::selectors::LabelSelector;
use generated::admissionregistration_k8s_io::v1::RuleWithOperations;
use generated::core::NAMESPACE_KIND;

/// What a rule is compared with: the request's operation and resource, in one version.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The operation.
    pub operation: Operation,
    /// The API group (empty for the core group).
    pub group: &'a str,
    /// The version.
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource, or empty.
    pub subresource: &'a str,
    /// Whether the object is namespaced (its kind, not the request's namespace).
    pub namespaced: bool,
}

/// Whether any of `rules` matches `target`.
pub fn any_matches(rules: &[RuleWithOperations], target: &Target<'_>) -> bool {
    rules.iter().any(|r| matches(r, target))
}

/// Whether one rule matches: every one of its lists names the target (or `*`).
pub fn matches(rule: &RuleWithOperations, target: &Target<'_>) -> bool {
    let op = target.operation.as_str();
    let star_or = |list: &[String], want: &str| list.iter().any(|v| v == "*" || v == want);
    star_or(&rule.operations, op)
        && star_or(&rule.rule.api_groups, target.group)
        && star_or(&rule.rule.api_versions, target.version)
        && rule
            .rule
            .resources
            .iter()
            .any(|r| resource_matches(r, target.resource, target.subresource))
        && scope_matches(rule.rule.scope.as_deref(), target.namespaced)
}

/// The version in which `matches` holds for the request: the request's own, or, unless
/// `exact` (`matchPolicy: Exact`), another served version of the same kind (`Equivalent`).
pub fn matching_version(
    attributes: &Attributes<'_>,
    exact: bool,
    matches: impl Fn(&Target<'_>) -> bool,
) -> Option<&'static ResourceInfo> {
    let target = |info: &'static ResourceInfo| Target {
        operation: attributes.operation,
        group: info.group,
        version: info.version,
        resource: info.plural,
        subresource: attributes.subresource,
        namespaced: info.namespaced(),
    };
    if matches(&target(attributes.version)) {
        return Some(attributes.version);
    }
    if exact {
        return None;
    }
    attributes.kind.versions().find(|v| matches(&target(v)))
}

/// A `namespaceSelector` against the request: a Namespace request is matched by the labels
/// of the namespace itself (new, else old), a namespaced request by those of its namespace
/// (`namespace`, `None` when it does not exist: no labels), a cluster-scoped one always.
pub fn namespace_matches(
    selector: &LabelSelector,
    attributes: &Attributes<'_>,
    namespace: Option<&dyn Object>,
) -> bool {
    if selector.is_empty() {
        return true;
    }
    if std::ptr::eq(attributes.kind, &NAMESPACE_KIND) {
        let object = attributes.object().or(attributes.old_object);
        return match object {
            Some(o) => selector.matches(&o.metadata().labels),
            None => selector.matches(&Default::default()),
        };
    }
    if attributes.namespace.is_empty() {
        return true;
    }
    match namespace {
        Some(ns) => selector.matches(&ns.metadata().labels),
        None => selector.matches(&Default::default()),
    }
}

/// `pods`, `pods/status`, `pods/*`, `*`, `*/status` and `*/*` against a resource and
/// subresource.
fn resource_matches(pattern: &str, resource: &str, subresource: &str) -> bool {
    let (res, sub) = match pattern.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (pattern, None),
    };
    let res_ok = res == "*" || res == resource;
    let sub_ok = match sub {
        // Without a subresource part, only the resource itself matches.
        None => subresource.is_empty(),
        Some("*") => true,
        Some(s) => s == subresource,
    };
    res_ok && sub_ok
}

/// `Cluster`, `Namespaced` or `*` (the default) against the kind's scope.
fn scope_matches(scope: Option<&str>, namespaced: bool) -> bool {
    match scope.unwrap_or("*") {
        "Cluster" => !namespaced,
        "Namespaced" => namespaced,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use generated::admissionregistration_k8s_io::v1::Rule;

    fn rule(
        ops: &[&str],
        groups: &[&str],
        versions: &[&str],
        resources: &[&str],
    ) -> RuleWithOperations {
        let s = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        RuleWithOperations {
            operations: s(ops),
            rule: Rule {
                api_groups: s(groups),
                api_versions: s(versions),
                resources: s(resources),
                scope: None,
            },
        }
    }

    fn target<'a>(op: Operation, resource: &'a str, sub: &'a str) -> Target<'a> {
        Target {
            operation: op,
            group: "example.dev",
            version: "v1",
            resource,
            subresource: sub,
            namespaced: true,
        }
    }

    #[test]
    fn operations_groups_versions_and_resources_must_all_match() {
        let r = rule(&["CREATE"], &["example.dev"], &["v1"], &["widgets"]);
        assert!(matches(&r, &target(Operation::Create, "widgets", "")));
        assert!(!matches(&r, &target(Operation::Update, "widgets", "")));
        assert!(!matches(&r, &target(Operation::Create, "gadgets", "")));
        assert!(!matches(
            &r,
            &target(Operation::Create, "widgets", "status")
        ));
        let any = rule(&["*"], &["*"], &["*"], &["*"]);
        assert!(matches(&any, &target(Operation::Delete, "widgets", "")));
        assert!(!matches(
            &any,
            &target(Operation::Update, "widgets", "status")
        ));
    }

    #[test]
    fn subresource_patterns() {
        assert!(resource_matches("widgets/status", "widgets", "status"));
        assert!(!resource_matches("widgets/status", "widgets", "scale"));
        assert!(resource_matches("widgets/*", "widgets", "scale"));
        assert!(resource_matches("*/status", "gadgets", "status"));
        assert!(!resource_matches("*/status", "gadgets", ""));
        assert!(resource_matches("*/*", "gadgets", ""));
        assert!(resource_matches("*/*", "gadgets", "scale"));
    }

    #[test]
    fn scope_compares_with_the_kind() {
        let mut r = rule(&["*"], &["*"], &["*"], &["*"]);
        r.rule.scope = Some("Cluster".into());
        assert!(!matches(&r, &target(Operation::Create, "widgets", "")));
        r.rule.scope = Some("Namespaced".into());
        assert!(matches(&r, &target(Operation::Create, "widgets", "")));
    }
}
