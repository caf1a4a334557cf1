//! Authorization: may this user do this verb on this resource or path?
//!
//! An [`Authorizer`] looks at [`Attributes`] built from the request's `UserInfo` and
//! `RequestInfo` and answers Allow, Deny or NoOpinion with a reason. The filter chain denies
//! unless some authorizer allows. The active authorizer is also stored on every request as an
//! [`AuthorizerRef`] extension, so handlers such as `SelfSubjectAccessReview` can ask it.

use std::borrow::Cow;
use std::sync::Arc;

use apimachinery::authorization::RulesInfo;
use apimachinery::rbac::PolicyRule;

use crate::authn::{MASTERS_GROUP, UserInfo};
use crate::request_info::RequestInfo;

pub use apimachinery::authorization::{Attributes, Authorization, Authorizer, Decision, Reason};

/// Builds the [`Attributes`] of a request, borrowed from its user and request info.
pub fn request_attributes<'a>(user: &'a UserInfo, info: &'a RequestInfo) -> Attributes<'a> {
    Attributes {
        user: Cow::Borrowed(user),
        verb: Cow::Borrowed(&info.verb),
        is_resource_request: info.is_resource_request,
        path: Cow::Borrowed(&info.path),
        namespace: Cow::Borrowed(&info.namespace),
        api_group: Cow::Borrowed(&info.api_group),
        api_version: Cow::Borrowed(&info.api_version),
        resource: Cow::Borrowed(&info.resource),
        subresource: Cow::Borrowed(&info.subresource),
        name: Cow::Borrowed(&info.name),
    }
}

/// A shared handle to the server's authorizer, stored as a request extension.
#[derive(Clone)]
pub struct AuthorizerRef(pub Arc<dyn Authorizer>);

/// Allows every request by members of `system:masters`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemMastersAuthorizer;

impl Authorizer for SystemMastersAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        if attributes.user.in_group(MASTERS_GROUP) {
            Authorization::allow("")
        } else {
            Authorization::no_opinion()
        }
    }
}

/// `AlwaysAllow`: allows every request (kube-apiserver's `alwaysAllowAuthorizer`).
#[derive(Debug, Default, Clone, Copy)]
pub struct AlwaysAllowAuthorizer;

impl Authorizer for AlwaysAllowAuthorizer {
    fn authorize(&self, _: &Attributes<'_>) -> Authorization {
        Authorization::allow("")
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Option<RulesInfo> {
        Some(RulesInfo {
            resource_rules: vec![PolicyRule::resources(&["*"], &["*"], &["*"])],
            non_resource_rules: vec![PolicyRule::urls(&["*"], &["*"])],
            ..RulesInfo::default()
        })
    }
}

/// `AlwaysDeny`: has no opinion on anything, with kube-apiserver's reason, so that a request
/// no earlier authorizer allows is forbidden.
#[derive(Debug, Default, Clone, Copy)]
pub struct AlwaysDenyAuthorizer;

impl Authorizer for AlwaysDenyAuthorizer {
    fn authorize(&self, _: &Attributes<'_>) -> Authorization {
        Authorization {
            decision: Decision::NoOpinion,
            reason: "Everything is forbidden.".into(),
            error: None,
        }
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Option<RulesInfo> {
        Some(RulesInfo::default())
    }
}

/// Why `--authorization-mode` is refused, worded as kube-apiserver words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorizationModeError {
    /// No mode.
    #[error("at least one authorization-mode must be passed")]
    Empty,
    /// A mode this server does not have.
    #[error("authorization-mode {0:?} is not a valid mode")]
    Invalid(String),
    /// A mode given twice.
    #[error("authorization-mode {} has mode specified more than once", apimachinery::rbac::go_quoted(.0))]
    Repeated(Vec<String>),
}

/// The authorizers `--authorization-mode` can name, by name (kube-apiserver's
/// `authorizer/modes`). The generic server knows `AlwaysAllow` and `AlwaysDeny`; the API groups
/// installed add theirs (the control plane adds `RBAC`) through
/// [`ApiGroups::authorization_modes`](crate::genericserver::groups::ApiGroups::authorization_modes).
///
/// ```
/// use std::sync::Arc;
/// use server::authz::{AlwaysAllowAuthorizer, AuthorizationModes};
///
/// let mut modes = AuthorizationModes::builtin();
/// modes.add("Mine", Arc::new(AlwaysAllowAuthorizer));
/// assert_eq!(modes.names(), ["AlwaysAllow", "AlwaysDeny", "Mine"]);
/// let chosen = modes.parse(&["Mine".to_string(), "AlwaysDeny".to_string()]);
/// assert_eq!(chosen.map(|c| c.len()), Ok(2));
/// ```
#[derive(Clone)]
pub struct AuthorizationModes {
    modes: Vec<(String, Arc<dyn Authorizer>)>,
}

impl std::fmt::Debug for AuthorizationModes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl AuthorizationModes {
    /// The generic server's modes: `AlwaysAllow` and `AlwaysDeny`.
    pub fn builtin() -> Self {
        let mut modes = Self { modes: Vec::new() };
        modes.add("AlwaysAllow", Arc::new(AlwaysAllowAuthorizer));
        modes.add("AlwaysDeny", Arc::new(AlwaysDenyAuthorizer));
        modes
    }

    /// Adds the mode `name`, answered by `authorizer`; a mode of the same name is replaced.
    pub fn add(&mut self, name: &str, authorizer: Arc<dyn Authorizer>) {
        match self.modes.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = authorizer,
            None => self.modes.push((name.to_string(), authorizer)),
        }
    }

    /// The names of the modes, in the order they were added.
    pub fn names(&self) -> Vec<&str> {
        self.modes.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The authorizers of `--authorization-mode`, in its order; every problem is returned.
    pub fn parse(
        &self,
        modes: &[String],
    ) -> Result<Vec<Arc<dyn Authorizer>>, Vec<AuthorizationModeError>> {
        // `--authorization-mode=` is an empty list, as pflag reads it.
        let modes = if modes.len() == 1 && modes[0].is_empty() {
            &[]
        } else {
            modes
        };
        let mut errors = Vec::new();
        if modes.is_empty() {
            errors.push(AuthorizationModeError::Empty);
        }
        let mut out = Vec::new();
        for mode in modes {
            match self.modes.iter().find(|(n, _)| n == mode) {
                Some((_, authorizer)) => out.push(Arc::clone(authorizer)),
                None => errors.push(AuthorizationModeError::Invalid(mode.clone())),
            }
        }
        let mut distinct = modes.to_vec();
        distinct.sort();
        distinct.dedup();
        if distinct.len() != modes.len() {
            errors.push(AuthorizationModeError::Repeated(modes.to_vec()));
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }
}

/// kube-apiserver's authorizer: `system:masters` first, then each mode's authorizer in order.
pub fn build(modes: Vec<Arc<dyn Authorizer>>) -> UnionAuthorizer {
    let mut authorizers: Vec<Arc<dyn Authorizer>> = vec![Arc::new(SystemMastersAuthorizer)];
    authorizers.extend(modes);
    UnionAuthorizer(authorizers)
}

/// Asks authorizers in order; the first Allow or Deny wins. When none decides, the reasons are
/// joined by newlines and the errors aggregated as Kubernetes' union authorizer aggregates them
/// (one error's text, or `[a, b]`).
pub struct UnionAuthorizer(pub Vec<Arc<dyn Authorizer>>);

impl Authorizer for UnionAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for a in &self.0 {
            let verdict = a.authorize(attributes);
            match verdict.decision {
                Decision::Allow | Decision::Deny => return verdict,
                Decision::NoOpinion => {
                    if !verdict.reason.is_empty() {
                        reasons.push(verdict.reason.to_string());
                    }
                    errors.extend(verdict.error);
                }
            }
        }
        Authorization {
            decision: Decision::NoOpinion,
            reason: reasons.join("\n").into(),
            error: match errors.len() {
                0 => None,
                1 => errors.pop(),
                _ => Some(format!("[{}]", errors.join(", "))),
            },
        }
    }

    /// The rules of every member that can list them (Kubernetes' union of rule resolvers).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Option<RulesInfo> {
        let mut all = RulesInfo::default();
        for a in &self.0 {
            if let Some(rules) = a.rules_for(user, namespace) {
                all.extend(rules);
            }
        }
        Some(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(user: UserInfo, path: &str, method: http::Method) -> Attributes<'static> {
        let info = RequestInfo::parse(&method, path, "").unwrap_or_default();
        request_attributes(&user, &info).into_owned()
    }

    #[test]
    fn messages() {
        let u = UserInfo {
            name: "x".into(),
            ..UserInfo::default()
        };
        assert_eq!(
            attrs(
                u.clone(),
                "/api/v1/namespaces/default/configmaps",
                http::Method::GET
            )
            .forbidden_message(),
            "User \"x\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(
            attrs(u.clone(), "/apis/example.dev/v1/widgets", http::Method::GET).forbidden_message(),
            "User \"x\" cannot list resource \"widgets\" in API group \"example.dev\" at the cluster scope"
        );
        assert_eq!(
            attrs(u, "/", http::Method::GET).forbidden_message(),
            "User \"x\" cannot get path \"/\""
        );
    }

    /// A stand-in for a mode an installed group adds.
    fn modes() -> AuthorizationModes {
        let mut modes = AuthorizationModes::builtin();
        modes.add("RBAC", Arc::new(AlwaysDenyAuthorizer));
        modes
    }

    #[test]
    fn modes_parse_with_kube_apiserver_errors() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            modes()
                .parse(&list(&["RBAC", "AlwaysDeny"]))
                .map(|m| m.len()),
            Ok(2)
        );
        let errs = modes()
            .parse(&list(&["RBAC", "Foo", "RBAC"]))
            .err()
            .unwrap_or_default();
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            vec![
                "authorization-mode \"Foo\" is not a valid mode",
                "authorization-mode [\"RBAC\" \"Foo\" \"RBAC\"] has mode specified more than once",
            ]
        );
        for empty in [list(&[]), list(&[""])] {
            assert_eq!(
                modes().parse(&empty).err().unwrap_or_default()[0].to_string(),
                "at least one authorization-mode must be passed"
            );
        }
        assert_eq!(
            AuthorizationModes::builtin()
                .parse(&list(&["RBAC"]))
                .err()
                .unwrap_or_default(),
            vec![AuthorizationModeError::Invalid("RBAC".to_string())]
        );
    }

    #[test]
    fn masters_then_modes() {
        let anon = UserInfo::anonymous();
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec![MASTERS_GROUP.into()],
            ..UserInfo::default()
        };
        let pick = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            build(
                AuthorizationModes::builtin()
                    .parse(&names)
                    .unwrap_or_default(),
            )
        };
        let verdict =
            pick(&["AlwaysDeny"]).authorize(&attrs(admin.clone(), "/api", http::Method::GET));
        assert_eq!(verdict, Authorization::allow(""));
        let deny = pick(&["AlwaysDeny"]);
        let verdict = deny.authorize(&attrs(anon.clone(), "/healthz", http::Method::GET));
        assert_eq!(verdict.decision, Decision::NoOpinion);
        assert_eq!(verdict.reason, "Everything is forbidden.");
        let allow = pick(&["AlwaysDeny", "AlwaysAllow"]);
        assert_eq!(
            allow
                .authorize(&attrs(anon, "/api", http::Method::GET))
                .decision,
            Decision::Allow
        );
    }

    /// An authorizer that could not decide.
    struct Unreachable(&'static str);

    impl Authorizer for Unreachable {
        fn authorize(&self, _: &Attributes<'_>) -> Authorization {
            Authorization::failed(self.0)
        }
    }

    #[test]
    fn a_union_aggregates_the_errors_unless_someone_allows() {
        let anon = UserInfo::anonymous();
        let a = attrs(anon, "/api", http::Method::GET);
        let one = UnionAuthorizer(vec![
            Arc::new(Unreachable("down")),
            Arc::new(AlwaysDenyAuthorizer),
        ]);
        let verdict = one.authorize(&a);
        assert_eq!(verdict.decision, Decision::NoOpinion);
        assert_eq!(verdict.reason, "Everything is forbidden.");
        assert_eq!(verdict.error.as_deref(), Some("down"));
        let two = UnionAuthorizer(vec![Arc::new(Unreachable("a")), Arc::new(Unreachable("b"))]);
        assert_eq!(two.authorize(&a).error.as_deref(), Some("[a, b]"));
        let allowed = UnionAuthorizer(vec![
            Arc::new(Unreachable("a")),
            Arc::new(AlwaysAllowAuthorizer),
        ]);
        assert_eq!(allowed.authorize(&a), Authorization::allow(""));
    }
}
