//! Which requests a webhook is called for: its `rules` (operations, groups, versions,
//! resources with subresources, scope), as kube-apiserver's rule matcher reads them.

use apimachinery::ResourceInfo;
use apimachinery::admission::{Attributes, Operation};
use apimachinery::runtime::Object;
use apimachinery::selectors::LabelSelector;
use kubernetes_api::admissionregistration_k8s_io::v1::RuleWithOperations;
use kubernetes_api::core::NAMESPACE_KIND;

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

/// A rule compiled for matching: the operations as a bit set, `*` lists as "any", and each
/// resource pattern split at its `/` once, so that a request is compared without parsing and
/// a rule that cannot match is left at its first, cheapest test (100 webhook configurations
/// that match nothing cost 61k instructions per create before; see BENCHMARKS.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledRule {
    operations: u8,
    groups: Names,
    versions: Names,
    resources: Vec<(Names, Subresource)>,
    scope: Option<bool>,
}

/// A list of names where `*` stands for every name.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Names {
    Any,
    Some(Vec<String>),
}

impl Names {
    fn of<'a>(list: impl IntoIterator<Item = &'a str>) -> Names {
        let mut names = Vec::new();
        for n in list {
            if n == "*" {
                return Names::Any;
            }
            names.push(n.to_string());
        }
        Names::Some(names)
    }

    fn contains(&self, name: &str) -> bool {
        match self {
            Names::Any => true,
            Names::Some(names) => names.iter().any(|n| n == name),
        }
    }
}

/// The subresource part of a resource pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Subresource {
    /// `pods`: the resource itself only.
    None,
    /// `pods/*`.
    Any,
    /// `pods/status`.
    Is(String),
}

fn operation_bit(op: Operation) -> u8 {
    match op {
        Operation::Create => 1,
        Operation::Update => 2,
        Operation::Delete => 4,
        Operation::Connect => 8,
    }
}

impl CompiledRule {
    /// Compiles a rule.
    pub fn compile(rule: &RuleWithOperations) -> CompiledRule {
        let operations = rule.operations.iter().fold(0u8, |bits, op| {
            bits | match op.as_str() {
                "*" => 0xf,
                "CREATE" => operation_bit(Operation::Create),
                "UPDATE" => operation_bit(Operation::Update),
                "DELETE" => operation_bit(Operation::Delete),
                "CONNECT" => operation_bit(Operation::Connect),
                _ => 0,
            }
        });
        let resources = rule
            .rule
            .resources
            .iter()
            .map(|pattern| match pattern.split_once('/') {
                None => (Names::of([pattern.as_str()]), Subresource::None),
                Some((res, "*")) => (Names::of([res]), Subresource::Any),
                Some((res, sub)) => (Names::of([res]), Subresource::Is(sub.to_string())),
            })
            .collect();
        CompiledRule {
            operations,
            groups: Names::of(rule.rule.api_groups.iter().map(String::as_str)),
            versions: Names::of(rule.rule.api_versions.iter().map(String::as_str)),
            resources,
            scope: match rule.rule.scope.as_deref() {
                Some("Cluster") => Some(false),
                Some("Namespaced") => Some(true),
                _ => None,
            },
        }
    }

    /// Whether the rule matches: every one of its lists names the target (or `*`).
    pub fn matches(&self, target: &Target<'_>) -> bool {
        self.operations & operation_bit(target.operation) != 0
            && self.resources.iter().any(|(res, sub)| {
                res.contains(target.resource)
                    && match sub {
                        Subresource::None => target.subresource.is_empty(),
                        Subresource::Any => true,
                        Subresource::Is(s) => s == target.subresource,
                    }
            })
            && self.groups.contains(target.group)
            && self.versions.contains(target.version)
            && self
                .scope
                .is_none_or(|namespaced| namespaced == target.namespaced)
    }
}

impl CompiledRule {
    /// The resources (without subresource) the rule can match; `None` when `*` is among them.
    pub fn resources(&self) -> Option<Vec<&str>> {
        self.resources
            .iter()
            .map(|(names, _)| match names {
                Names::Any => None,
                Names::Some(n) => Some(n.iter().map(String::as_str)),
            })
            .try_fold(Vec::new(), |mut all, names| {
                all.extend(names?);
                Some(all)
            })
    }
}

/// Which entries (webhooks, bindings) can match a resource at all, so that a request is
/// compared only with those: the entries naming it plus those whose rules say `*`, in their
/// original order.
#[derive(Debug, Default)]
pub struct ResourceIndex {
    named: std::collections::HashMap<String, Vec<usize>>,
    any: Vec<usize>,
}

impl ResourceIndex {
    /// Indexes entries by the resources their rules can match (`None`: any resource).
    pub fn build<'a>(entries: impl IntoIterator<Item = Option<Vec<&'a str>>>) -> Self {
        let mut index = ResourceIndex::default();
        for (i, resources) in entries.into_iter().enumerate() {
            match resources {
                None => index.any.push(i),
                Some(names) => {
                    for name in names {
                        let list = index.named.entry(name.to_string()).or_default();
                        if list.last() != Some(&i) {
                            list.push(i);
                        }
                    }
                }
            }
        }
        index
    }

    /// The entries that may match `resource`, in ascending order.
    pub fn candidates(&self, resource: &str) -> Vec<usize> {
        let named = self.named.get(resource).map(Vec::as_slice).unwrap_or(&[]);
        if self.any.is_empty() {
            return named.to_vec();
        }
        let mut out: Vec<usize> = named.iter().chain(&self.any).copied().collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The resources any of `rules` can match; `None` when one says `*`.
pub fn resources_of<'a>(rules: impl IntoIterator<Item = &'a CompiledRule>) -> Option<Vec<&'a str>> {
    rules.into_iter().try_fold(Vec::new(), |mut all, r| {
        all.extend(r.resources()?);
        Some(all)
    })
}

/// Whether any of `rules` matches `target`.
pub fn any_matches(rules: &[CompiledRule], target: &Target<'_>) -> bool {
    rules.iter().any(|r| r.matches(target))
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
    attributes
        .kind
        .versions()
        .find(|v| !std::ptr::eq(*v, attributes.version) && matches(&target(v)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use kubernetes_api::admissionregistration_k8s_io::v1::Rule;

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
        assert!(CompiledRule::compile(&r).matches(&target(Operation::Create, "widgets", "")));
        assert!(!CompiledRule::compile(&r).matches(&target(Operation::Update, "widgets", "")));
        assert!(!CompiledRule::compile(&r).matches(&target(Operation::Create, "gadgets", "")));
        assert!(!CompiledRule::compile(&r).matches(&target(
            Operation::Create,
            "widgets",
            "status"
        )));
        let any = rule(&["*"], &["*"], &["*"], &["*"]);
        assert!(CompiledRule::compile(&any).matches(&target(Operation::Delete, "widgets", "")));
        assert!(!CompiledRule::compile(&any).matches(&target(
            Operation::Update,
            "widgets",
            "status"
        )));
    }

    #[test]
    fn subresource_patterns() {
        let resource_matches = |pattern: &str, resource: &str, sub: &str| {
            let r = rule(&["*"], &["*"], &["*"], &[pattern]);
            CompiledRule::compile(&r).matches(&target(Operation::Create, resource, sub))
        };
        assert!(resource_matches("widgets/status", "widgets", "status"));
        assert!(!resource_matches("widgets/status", "widgets", "scale"));
        assert!(resource_matches("widgets/*", "widgets", "scale"));
        assert!(resource_matches("*/status", "gadgets", "status"));
        assert!(!resource_matches("*/status", "gadgets", ""));
        assert!(resource_matches("*/*", "gadgets", ""));
        assert!(resource_matches("*/*", "gadgets", "scale"));
    }

    #[test]
    fn the_index_finds_the_entries_that_name_a_resource_or_any() {
        let named = CompiledRule::compile(&rule(
            &["*"],
            &["*"],
            &["*"],
            &["widgets", "gadgets/status"],
        ));
        let any = CompiledRule::compile(&rule(&["*"], &["*"], &["*"], &["*/status"]));
        let other = CompiledRule::compile(&rule(&["*"], &["*"], &["*"], &["secrets"]));
        let index = ResourceIndex::build([
            resources_of([&named]),
            resources_of([&other]),
            resources_of([&any]),
            resources_of([&other, &named]),
        ]);
        assert_eq!(index.candidates("widgets"), vec![0, 2, 3]);
        assert_eq!(index.candidates("gadgets"), vec![0, 2, 3]);
        assert_eq!(index.candidates("secrets"), vec![1, 2, 3]);
        assert_eq!(index.candidates("configmaps"), vec![2]);
    }

    #[test]
    fn scope_compares_with_the_kind() {
        let mut r = rule(&["*"], &["*"], &["*"], &["*"]);
        r.rule.scope = Some("Cluster".into());
        assert!(!CompiledRule::compile(&r).matches(&target(Operation::Create, "widgets", "")));
        r.rule.scope = Some("Namespaced".into());
        assert!(CompiledRule::compile(&r).matches(&target(Operation::Create, "widgets", "")));
    }
}
