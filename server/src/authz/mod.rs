//! Authorization: may this user do this verb on this resource or path?
//!
//! An [`Authorizer`] looks at [`Attributes`] built from the request's `UserInfo` and
//! `RequestInfo` and answers Allow, Deny or NoOpinion with a reason. The filter chain denies
//! unless some authorizer allows. The active authorizer is also stored on every request as an
//! [`AuthorizerRef`] extension, so handlers such as `SelfSubjectAccessReview` can ask it.

pub mod rbac;

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
        }
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Option<RulesInfo> {
        Some(RulesInfo::default())
    }
}

/// One entry of `--authorization-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// `AlwaysAllow`.
    AlwaysAllow,
    /// `AlwaysDeny`.
    AlwaysDeny,
    /// `RBAC`.
    Rbac,
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

impl AuthorizationMode {
    /// The modes of `--authorization-mode`, in order; every problem is returned.
    pub fn parse_list(modes: &[String]) -> Result<Vec<Self>, Vec<AuthorizationModeError>> {
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
            match mode.as_str() {
                "AlwaysAllow" => out.push(Self::AlwaysAllow),
                "AlwaysDeny" => out.push(Self::AlwaysDeny),
                "RBAC" => out.push(Self::Rbac),
                other => errors.push(AuthorizationModeError::Invalid(other.to_string())),
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

/// kube-apiserver's authorizer: `system:masters` first, then each mode in order. RBAC's
/// authorizer is shared (it is also the rule resolver of escalation checks).
pub fn build(modes: &[AuthorizationMode], rbac: &Arc<rbac::RbacAuthorizer>) -> UnionAuthorizer {
    let mut authorizers: Vec<Arc<dyn Authorizer>> = vec![Arc::new(SystemMastersAuthorizer)];
    for mode in modes {
        authorizers.push(match mode {
            AuthorizationMode::AlwaysAllow => Arc::new(AlwaysAllowAuthorizer),
            AuthorizationMode::AlwaysDeny => Arc::new(AlwaysDenyAuthorizer),
            AuthorizationMode::Rbac => Arc::clone(rbac) as Arc<dyn Authorizer>,
        });
    }
    UnionAuthorizer(authorizers)
}

/// Asks authorizers in order; the first Allow or Deny wins.
pub struct UnionAuthorizer(pub Vec<Arc<dyn Authorizer>>);

impl Authorizer for UnionAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        let mut reasons = Vec::new();
        for a in &self.0 {
            let verdict = a.authorize(attributes);
            match verdict.decision {
                Decision::Allow | Decision::Deny => return verdict,
                Decision::NoOpinion => {
                    if !verdict.reason.is_empty() {
                        reasons.push(verdict.reason.to_string());
                    }
                }
            }
        }
        Authorization {
            decision: Decision::NoOpinion,
            reason: reasons.join("\n").into(),
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

    #[test]
    fn modes_parse_with_kube_apiserver_errors() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            AuthorizationMode::parse_list(&list(&["RBAC", "AlwaysDeny"])),
            Ok(vec![AuthorizationMode::Rbac, AuthorizationMode::AlwaysDeny])
        );
        let errs = AuthorizationMode::parse_list(&list(&["RBAC", "Foo", "RBAC"])).unwrap_err();
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
                AuthorizationMode::parse_list(&empty).unwrap_err()[0].to_string(),
                "at least one authorization-mode must be passed"
            );
        }
    }

    #[test]
    fn masters_then_modes() {
        let rbac = rbac::RbacAuthorizer::new();
        rbac.publish(rbac::Snapshot::build(&rbac::bootstrap::sources()));
        let anon = UserInfo::anonymous();
        let with_anon_groups = UserInfo {
            groups: vec![apimachinery::user::UNAUTHENTICATED_GROUP.into()],
            ..anon.clone()
        };
        let union = build(&[AuthorizationMode::Rbac], &rbac);
        for p in ["/healthz", "/readyz", "/version", "/livez"] {
            let verdict = union.authorize(&attrs(with_anon_groups.clone(), p, http::Method::GET));
            assert_eq!(verdict.decision, Decision::Allow, "{p}");
            assert_eq!(
                verdict.reason,
                "RBAC: allowed by ClusterRoleBinding \"system:public-info-viewer\" of ClusterRole \"system:public-info-viewer\" to Group \"system:unauthenticated\""
            );
        }
        for p in ["/api", "/versionx", "/metrics", "/readyz/ping"] {
            assert_eq!(
                union
                    .authorize(&attrs(anon.clone(), p, http::Method::GET))
                    .decision,
                Decision::NoOpinion,
                "{p}"
            );
        }
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec![MASTERS_GROUP.into()],
            ..UserInfo::default()
        };
        let verdict = union.authorize(&attrs(admin.clone(), "/api", http::Method::GET));
        assert_eq!(verdict, Authorization::allow(""));
        let deny = build(&[AuthorizationMode::AlwaysDeny], &rbac);
        let verdict = deny.authorize(&attrs(anon.clone(), "/healthz", http::Method::GET));
        assert_eq!(verdict.decision, Decision::NoOpinion);
        assert_eq!(verdict.reason, "Everything is forbidden.");
        assert_eq!(
            deny.authorize(&attrs(admin, "/api", http::Method::GET))
                .decision,
            Decision::Allow
        );
        let allow = build(
            &[
                AuthorizationMode::AlwaysDeny,
                AuthorizationMode::AlwaysAllow,
            ],
            &rbac,
        );
        assert_eq!(
            allow
                .authorize(&attrs(anon, "/api", http::Method::GET))
                .decision,
            Decision::Allow
        );
    }
}
