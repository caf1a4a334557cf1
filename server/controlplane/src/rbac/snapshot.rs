//! The RBAC index: an immutable snapshot of every role and binding, with the bindings indexed
//! by subject (user name, group, service account user name), so resolving a user's rules
//! reads only the bindings that name one of them. Resolution follows Kubernetes'
//! `DefaultRuleResolver.VisitRulesFor`: cluster role bindings, then the role bindings of the
//! request's namespace; a binding applies through its first subject that matches the user.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use apimachinery::rbac::PolicyRule;
use apimachinery::user::UserInfo;
// Every request looks its user's name and groups up in two scopes. foldhash, still seeded per
// process, hashes them for far fewer instructions than SipHash: ≈ 0.9k fewer per GET for a
// service-account user (five lookups per scope), ≈ 0.4k for a certificate user
// (tools/callgrind-requests, `sa-admin` and `x509-admin`).
use foldhash::HashMap;

/// The prefix of service-account user names (`system:serviceaccount:<ns>:<name>`).
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// One subject of a binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// The name.
    pub name: String,
    /// The namespace of a service account (may be empty in a role binding).
    pub namespace: String,
}

/// A RoleBinding or ClusterRoleBinding, as the index keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The binding's name.
    pub name: String,
    /// Its namespace (empty for a ClusterRoleBinding).
    pub namespace: String,
    /// `Role` or `ClusterRole`.
    pub role_kind: String,
    /// The role's name.
    pub role_name: String,
    /// The subjects.
    pub subjects: Vec<Subject>,
}

/// Rules of roles, by name (ClusterRoles) or by namespace and name (Roles).
pub type RulesBy<K> = BTreeMap<K, Arc<Vec<PolicyRule>>>;

/// The objects the index is built from, keyed by namespace and name.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// ClusterRoles' rules by name.
    pub cluster_roles: RulesBy<String>,
    /// Roles' rules by (namespace, name).
    pub roles: RulesBy<(String, String)>,
    /// ClusterRoleBindings by name.
    pub cluster_bindings: BTreeMap<String, Arc<Binding>>,
    /// RoleBindings by (namespace, name).
    pub bindings: BTreeMap<(String, String), Arc<Binding>>,
}

/// Binding positions by subject.
#[derive(Debug, Default)]
struct SubjectIndex {
    users: HashMap<String, Vec<u32>>,
    groups: HashMap<String, Vec<u32>>,
    /// Service accounts by user name (`system:serviceaccount:<ns>:<name>`).
    service_accounts: HashMap<String, Vec<u32>>,
}

impl SubjectIndex {
    fn add(&mut self, position: u32, binding: &Binding) {
        for s in &binding.subjects {
            let (map, key) = match s.kind.as_str() {
                "User" => (&mut self.users, s.name.clone()),
                "Group" => (&mut self.groups, s.name.clone()),
                "ServiceAccount" => {
                    let ns = if s.namespace.is_empty() {
                        &binding.namespace
                    } else {
                        &s.namespace
                    };
                    if ns.is_empty() {
                        continue;
                    }
                    (
                        &mut self.service_accounts,
                        format!("{SERVICE_ACCOUNT_PREFIX}{ns}:{}", s.name),
                    )
                }
                _ => continue,
            };
            let list = map.entry(key).or_default();
            if list.last() != Some(&position) {
                list.push(position);
            }
        }
    }

    /// The positions of the bindings naming the user, one of its groups or its service account,
    /// in order.
    fn candidates(&self, user: &UserInfo) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        if let Some(p) = self.users.get(&user.name) {
            out.extend(p);
        }
        for g in &user.groups {
            if let Some(p) = self.groups.get(g) {
                out.extend(p);
            }
        }
        if user.name.starts_with(SERVICE_ACCOUNT_PREFIX)
            && let Some(p) = self.service_accounts.get(&user.name)
        {
            out.extend(p);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// A binding's role rules, or why they could not be resolved.
type Resolved = Result<Arc<Vec<PolicyRule>>, RoleRefError>;

/// The bindings of one scope (cluster or one namespace), ordered by name, their index, and
/// each binding's role resolved when the snapshot was built, so a request looks no role up
/// (≈ 1.3k instructions per GET of a user with four candidate bindings, measured with
/// tools/callgrind-requests `x509-rbac`).
#[derive(Debug, Default)]
struct Scope {
    bindings: Vec<Arc<Binding>>,
    index: Arc<SubjectIndex>,
    rules: Vec<Resolved>,
}

impl Scope {
    fn new(bindings: Vec<Arc<Binding>>, namespace: &str, roles: &Roles<'_>) -> Self {
        let mut index = SubjectIndex::default();
        for (i, b) in bindings.iter().enumerate() {
            index.add(i as u32, b);
        }
        Self::resolve(bindings, Arc::new(index), namespace, roles)
    }

    /// The same bindings and index with their roles resolved again.
    fn rebind(&self, namespace: &str, roles: &Roles<'_>) -> Self {
        Self::resolve(
            self.bindings.clone(),
            Arc::clone(&self.index),
            namespace,
            roles,
        )
    }

    fn resolve(
        bindings: Vec<Arc<Binding>>,
        index: Arc<SubjectIndex>,
        namespace: &str,
        roles: &Roles<'_>,
    ) -> Self {
        let rules = bindings
            .iter()
            .map(|b| {
                roles
                    .resolve(&b.role_kind, &b.role_name, namespace)
                    .cloned()
            })
            .collect();
        Self {
            bindings,
            index,
            rules,
        }
    }
}

/// The roles a binding's `roleRef` resolves against.
struct Roles<'a> {
    cluster_roles: &'a RulesBy<String>,
    roles: &'a RulesBy<(String, String)>,
}

impl<'a> Roles<'a> {
    /// Kubernetes' `GetRoleReferenceRules`: the rules of a binding's role, or the NotFound
    /// text.
    fn resolve(
        &self,
        kind: &str,
        name: &str,
        binding_namespace: &str,
    ) -> Result<&'a Arc<Vec<PolicyRule>>, RoleRefError> {
        match kind {
            "Role" => self
                .roles
                .get(&(binding_namespace.to_string(), name.to_string()))
                .ok_or(RoleRefError::NotFound("roles", name.to_string())),
            "ClusterRole" => self
                .cluster_roles
                .get(name)
                .ok_or(RoleRefError::NotFound("clusterroles", name.to_string())),
            other => Err(RoleRefError::UnsupportedKind(other.to_string())),
        }
    }
}

/// Where a rule came from: the binding and which of its subjects applies.
#[derive(Clone, Copy)]
pub struct RuleSource<'a> {
    binding: &'a Arc<Binding>,
    subject: usize,
}

impl RuleSource<'_> {
    /// The same source owning its binding, to be described later.
    pub fn owned(&self) -> OwnedRuleSource {
        OwnedRuleSource {
            binding: Arc::clone(self.binding),
            subject: self.subject,
        }
    }
}

/// A [`RuleSource`] that owns its binding.
#[derive(Clone, Debug)]
pub struct OwnedRuleSource {
    binding: Arc<Binding>,
    subject: usize,
}

/// A rule's source worded as Kubernetes' describers word it.
impl std::fmt::Display for OwnedRuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = &self.binding;
        let s = &b.subjects[self.subject];
        let subject = match s.kind.as_str() {
            "ServiceAccount" => {
                let ns = if s.namespace.is_empty() {
                    &b.namespace
                } else {
                    &s.namespace
                };
                format!("{} {:?}", s.kind, format!("{}/{ns}", s.name))
            }
            _ => format!("{} {:?}", s.kind, s.name),
        };
        if b.namespace.is_empty() {
            write!(
                f,
                "ClusterRoleBinding {:?} of {} {:?} to {subject}",
                b.name, b.role_kind, b.role_name
            )
        } else {
            write!(
                f,
                "RoleBinding {:?} of {} {:?} to {subject}",
                format!("{}/{}", b.name, b.namespace),
                b.role_kind,
                b.role_name
            )
        }
    }
}

/// Kubernetes' `appliesToUser`.
fn applies_to(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                namespace
            } else {
                &subject.namespace
            };
            !ns.is_empty()
                && user
                    .name
                    .strip_prefix(SERVICE_ACCOUNT_PREFIX)
                    .and_then(|rest| rest.strip_prefix(ns))
                    .and_then(|rest| rest.strip_prefix(':'))
                    == Some(subject.name.as_str())
        }
        _ => false,
    }
}

/// An immutable view of every role and binding. Parts that did not change are shared with
/// the previous snapshot ([`Snapshot::update`]).
#[derive(Debug, Default)]
pub struct Snapshot {
    cluster_roles: Arc<RulesBy<String>>,
    roles: Arc<RulesBy<(String, String)>>,
    cluster: Arc<Scope>,
    namespaces: HashMap<String, Arc<Scope>>,
}

/// What changed in the [`Sources`] since the last snapshot.
#[derive(Debug, Default, Clone)]
pub struct Dirty {
    /// Everything (a kind was listed again).
    pub all: bool,
    /// Some ClusterRole.
    pub cluster_roles: bool,
    /// Some Role.
    pub roles: bool,
    /// Some ClusterRoleBinding.
    pub cluster_bindings: bool,
    /// The namespaces of the RoleBindings that changed.
    pub namespaces: BTreeSet<String>,
}

impl Dirty {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        !self.all
            && !self.cluster_roles
            && !self.roles
            && !self.cluster_bindings
            && self.namespaces.is_empty()
    }
}

/// What a visitor is shown: a rule and where it came from, or a resolution error.
pub enum Visit<'a> {
    /// A rule granted through a binding.
    Rule(&'a RuleSource<'a>, &'a PolicyRule),
    /// A binding whose role could not be resolved.
    Error(String),
}

/// The role bindings of `namespace`, in name order.
fn namespace_bindings(sources: &Sources, namespace: &str) -> Vec<Arc<Binding>> {
    sources
        .bindings
        .range((namespace.to_string(), String::new())..)
        .take_while(|((ns, _), _)| ns == namespace)
        .map(|(_, b)| Arc::clone(b))
        .collect()
}

impl Snapshot {
    /// The snapshot of `sources`.
    pub fn build(sources: &Sources) -> Self {
        Self::update(
            &Self::default(),
            sources,
            &Dirty {
                all: true,
                ..Dirty::default()
            },
        )
    }

    /// The snapshot of `sources`, rebuilding only what `dirty` names and sharing the rest
    /// with `previous`.
    pub fn update(previous: &Snapshot, sources: &Sources, dirty: &Dirty) -> Self {
        let cluster_roles = if dirty.all || dirty.cluster_roles {
            Arc::new(sources.cluster_roles.clone())
        } else {
            Arc::clone(&previous.cluster_roles)
        };
        let roles = if dirty.all || dirty.roles {
            Arc::new(sources.roles.clone())
        } else {
            Arc::clone(&previous.roles)
        };
        let resolver = Roles {
            cluster_roles: &cluster_roles,
            roles: &roles,
        };
        // A changed role changes the resolved rules of every binding that may name it; the
        // subject indexes stay.
        let rebind = dirty.cluster_roles || dirty.roles;
        let cluster = if dirty.all || dirty.cluster_bindings {
            Arc::new(Scope::new(
                sources.cluster_bindings.values().cloned().collect(),
                "",
                &resolver,
            ))
        } else if dirty.cluster_roles {
            Arc::new(previous.cluster.rebind("", &resolver))
        } else {
            Arc::clone(&previous.cluster)
        };
        let namespaces = if dirty.all {
            let mut by_ns: HashMap<String, Vec<Arc<Binding>>> = HashMap::default();
            // BTreeMap order: namespace, then name.
            for ((ns, _), b) in &sources.bindings {
                by_ns.entry(ns.clone()).or_default().push(Arc::clone(b));
            }
            by_ns
                .into_iter()
                .map(|(ns, bindings)| {
                    let scope = Scope::new(bindings, &ns, &resolver);
                    (ns, Arc::new(scope))
                })
                .collect()
        } else {
            let mut namespaces = previous.namespaces.clone();
            if rebind {
                for (ns, scope) in namespaces.iter_mut() {
                    if !dirty.namespaces.contains(ns) {
                        *scope = Arc::new(scope.rebind(ns, &resolver));
                    }
                }
            }
            for ns in &dirty.namespaces {
                let bindings = namespace_bindings(sources, ns);
                if bindings.is_empty() {
                    namespaces.remove(ns);
                } else {
                    let scope = Scope::new(bindings, ns, &resolver);
                    namespaces.insert(ns.clone(), Arc::new(scope));
                }
            }
            namespaces
        };
        Self {
            cluster_roles,
            roles,
            cluster,
            namespaces,
        }
    }

    /// Whether this snapshot shares the index of `namespace`'s bindings with `other` (it was
    /// not rebuilt).
    pub fn shares_namespace_with(&self, other: &Snapshot, namespace: &str) -> bool {
        match (
            self.namespaces.get(namespace),
            other.namespaces.get(namespace),
        ) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Whether a ClusterRole named `name` is present.
    pub fn has_cluster_role(&self, name: &str) -> bool {
        self.cluster_roles.contains_key(name)
    }

    /// Whether a ClusterRoleBinding named `name` is present.
    pub fn has_cluster_binding(&self, name: &str) -> bool {
        self.cluster.bindings.iter().any(|b| b.name == name)
    }

    /// Kubernetes' `GetRoleReferenceRules`: the rules of a binding's role, or the NotFound text.
    pub fn role_reference_rules(
        &self,
        kind: &str,
        name: &str,
        binding_namespace: &str,
    ) -> Result<&Arc<Vec<PolicyRule>>, RoleRefError> {
        Roles {
            cluster_roles: &self.cluster_roles,
            roles: &self.roles,
        }
        .resolve(kind, name, binding_namespace)
    }

    /// Kubernetes' `VisitRulesFor`: shows `visit` every rule granted to `user` in `namespace`
    /// until it returns false.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(Visit<'_>) -> bool,
    ) {
        if !self.visit_scope(&self.cluster, user, "", visit) {
            return;
        }
        if namespace.is_empty() {
            return;
        }
        if let Some(scope) = self.namespaces.get(namespace) {
            self.visit_scope(scope, user, namespace, visit);
        }
    }

    fn visit_scope(
        &self,
        scope: &Scope,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(Visit<'_>) -> bool,
    ) -> bool {
        for position in scope.index.candidates(user) {
            let binding = &scope.bindings[position as usize];
            let Some(subject) = binding
                .subjects
                .iter()
                .position(|s| applies_to(user, s, namespace))
            else {
                continue;
            };
            match &scope.rules[position as usize] {
                Ok(rules) => {
                    let source = RuleSource { binding, subject };
                    for rule in rules.iter() {
                        if !visit(Visit::Rule(&source, rule)) {
                            return false;
                        }
                    }
                }
                Err(e) => {
                    if !visit(Visit::Error(e.to_string())) {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// Why a binding's role could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleRefError {
    /// The role does not exist (lister wording: the singular resource).
    #[error("{} {:?} not found", singular(.0), .1)]
    NotFound(&'static str, String),
    /// The roleRef's kind is neither Role nor ClusterRole.
    #[error("unsupported role reference kind: {0:?}")]
    UnsupportedKind(String),
}

fn singular(plural: &str) -> &'static str {
    if plural == "roles" {
        "role.rbac.authorization.k8s.io"
    } else {
        "clusterrole.rbac.authorization.k8s.io"
    }
}
