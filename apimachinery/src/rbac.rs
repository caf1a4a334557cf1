//! RBAC's rule semantics (Kubernetes' `rbac/v1` helpers and `pkg/registry/rbac/validation`):
//! whether a [`PolicyRule`] allows a request, whether one set of rules covers another (the
//! escalation check), the compaction and compact text of rules in escalation errors, and the
//! [`RuleResolver`] escalation checks ask for a user's rules.
//!
//! [`PolicyRule`] has the fields of `rbac.authorization.k8s.io/v1` `PolicyRule`; the typed
//! objects of that group convert into it, so the server's authorizer and the group's strategies
//! share one implementation of every rule.

use crate::authorization::Attributes;
use crate::status::ApiError;
use crate::user::UserInfo;

/// `*`: every verb.
pub const VERB_ALL: &str = "*";
/// `*`: every API group.
pub const API_GROUP_ALL: &str = "*";
/// `*`: every resource.
pub const RESOURCE_ALL: &str = "*";
/// `*`: every non-resource URL.
pub const NON_RESOURCE_ALL: &str = "*";

/// One rule of a role, with the fields of `rbac.authorization.k8s.io/v1` `PolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PolicyRule {
    /// The verbs (`*`: all).
    pub verbs: Vec<String>,
    /// The API groups (`""`: core, `*`: all).
    pub api_groups: Vec<String>,
    /// The resources (`*`: all; `pods/log`; `*/scale`).
    pub resources: Vec<String>,
    /// The object names (empty: all).
    pub resource_names: Vec<String>,
    /// The non-resource URLs (a trailing `*` matches any suffix).
    pub non_resource_urls: Vec<String>,
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| s.to_string()).collect()
}

impl PolicyRule {
    /// A resource rule: `verbs` on `resources` of `groups`.
    pub fn resources(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..Self::default()
        }
    }

    /// A non-resource rule: `verbs` on `urls`.
    pub fn urls(verbs: &[&str], urls: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..Self::default()
        }
    }

    /// The same rule limited to the objects named `names`.
    pub fn named(mut self, names: &[&str]) -> Self {
        self.resource_names = strings(names);
        self
    }

    /// Kubernetes' `RuleAllows`: whether this rule allows the request.
    pub fn allows(&self, attributes: &Attributes<'_>) -> bool {
        if !verb_matches(self, &attributes.verb) {
            return false;
        }
        if !attributes.is_resource_request {
            return non_resource_url_matches(self, &attributes.path);
        }
        api_group_matches(self, &attributes.api_group)
            && resource_matches(self, &attributes.resource, &attributes.subresource)
            && resource_name_matches(self, &attributes.name)
    }

    /// Kubernetes' `CompactString`: the rule as escalation errors print it, such as
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        let fields: [(&str, &Vec<String>); 5] = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        for (name, values) in fields {
            if !values.is_empty() {
                parts.push(format!("{name}:{}", go_quoted(values)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quoted(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

fn has(set: &[String], value: &str) -> bool {
    set.iter().any(|s| s == value)
}

fn has_all(set: &[String], values: &[String]) -> bool {
    values.iter().all(|v| has(set, v))
}

/// Kubernetes' `VerbMatches`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == VERB_ALL || v == verb)
}

/// Kubernetes' `APIGroupMatches`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups
        .iter()
        .any(|g| g == API_GROUP_ALL || g == group)
}

/// Kubernetes' `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/subresource`.
pub fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    let combined_len = resource.len()
        + if subresource.is_empty() {
            0
        } else {
            subresource.len() + 1
        };
    rule.resources.iter().any(|r| {
        if r == RESOURCE_ALL {
            return true;
        }
        let exact = if subresource.is_empty() {
            r == resource
        } else {
            r.len() == combined_len
                && r.strip_prefix(resource)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|sub| sub == subresource)
        };
        exact
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// Kubernetes' `ResourceNameMatches`: no names, or the name is listed.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || has(&rule.resource_names, name)
}

/// Kubernetes' `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls
        .iter()
        .any(|u| non_resource_url_covers(u, path))
}

fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == NON_RESOURCE_ALL
        || owner == path
        || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

/// Kubernetes' `BreakdownRule`: the rule as rules of one group, resource, verb and name (or one
/// URL and verb).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let one = |names: Vec<String>| PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    resource_names: names,
                    non_resource_urls: Vec::new(),
                };
                if rule.resource_names.is_empty() {
                    out.push(one(Vec::new()));
                } else {
                    for name in &rule.resource_names {
                        out.push(one(vec![name.clone()]));
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: vec![url.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, RESOURCE_ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

fn non_resource_urls_cover_all(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|path| owner.iter().any(|o| non_resource_url_covers(o, path)))
}

/// Kubernetes' `ruleCovers`: whether `owner` covers `sub`, a rule of at most one verb, resource
/// and name.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, VERB_ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups =
        has(&owner.api_groups, API_GROUP_ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = non_resource_urls_cover_all(&owner.non_resource_urls, &sub.non_resource_urls);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// Kubernetes' `Covers`: whether `owner` grants everything `servant` does; otherwise the
/// broken-down rules it lacks.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// Kubernetes' `CompactRules`: rules of one group and one resource (and at most one name) are
/// merged into one rule with all their verbs.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule.clone());
            continue;
        }
        match simple.iter_mut().find(|s| {
            s.api_groups == rule.api_groups
                && s.resources == rule.resources
                && s.resource_names == rule.resource_names
        }) {
            Some(existing) => existing.verbs.extend(rule.verbs.iter().cloned()),
            None => simple.push(rule.clone()),
        }
    }
    out.extend(simple);
    out
}

/// Kubernetes' `ConfirmNoEscalation`: `Err` with the message of the 403 when `user` does not
/// hold every rule of `rules` in `namespace` (`""`: cluster-wide rules only).
pub fn confirm_no_escalation(
    resolver: &dyn RuleResolver,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = resolver.rules_for(user, namespace);
    let (ok, missing) = covers(&owner, rules);
    if ok {
        return Ok(());
    }
    let mut descriptions: Vec<String> = compact(&missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    descriptions.sort();
    descriptions.dedup();
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted(&user.groups),
        descriptions.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(", ")));
    }
    Err(message)
}

/// Kubernetes' `AuthorizationRuleResolver`: the RBAC rules a user holds, for escalation checks.
pub trait RuleResolver: Send + Sync {
    /// The rules granting `user` access in `namespace` (cluster role bindings, then role
    /// bindings of the namespace), and the errors met resolving bindings (a missing role).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>);

    /// The rules of the role a binding in `binding_namespace` refers to (`kind` `Role` or
    /// `ClusterRole`); `Err` is the NotFound of a missing role.
    fn role_reference_rules(
        &self,
        kind: &str,
        name: &str,
        binding_namespace: &str,
    ) -> Result<Vec<PolicyRule>, ApiError>;
}

#[cfg(test)]
mod tests;
