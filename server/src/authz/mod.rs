//! Authorization: may this user do this verb on this resource or path?
//!
//! An [`Authorizer`] looks at [`Attributes`] built from the request's `UserInfo` and
//! `RequestInfo` and answers Allow, Deny or NoOpinion with a reason. The filter chain denies
//! unless some authorizer allows. The active authorizer is also stored on every request as an
//! [`AuthorizerRef`] extension, so handlers such as `SelfSubjectAccessReview` can ask it.

pub mod basic_user;

use std::borrow::Cow;
use std::sync::Arc;

use crate::authn::{MASTERS_GROUP, UserInfo};
use crate::request_info::RequestInfo;

pub use apimachinery::authorization::{Attributes, Authorization, Authorizer, Decision};
pub use basic_user::BasicUserAuthorizer;

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

/// Allows anyone to `get` the health and version paths (`/healthz`, `/livez`, `/readyz`,
/// `/version` and their subpaths), like the `system:public-info-viewer` role.
#[derive(Debug, Default, Clone, Copy)]
pub struct PublicInfoAuthorizer;

/// Paths every user may read.
pub const PUBLIC_PATHS: [&str; 4] = ["/healthz", "/livez", "/readyz", "/version"];

impl Authorizer for PublicInfoAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        if attributes.is_resource_request || !matches!(attributes.verb.as_ref(), "get" | "head") {
            return Authorization::no_opinion();
        }
        let path = attributes.path.trim_end_matches('/');
        let public = PUBLIC_PATHS.iter().any(|p| {
            path == *p
                || path
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if public {
            Authorization::allow("")
        } else {
            Authorization::no_opinion()
        }
    }
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
                        reasons.push(verdict.reason);
                    }
                }
            }
        }
        Authorization {
            decision: Decision::NoOpinion,
            reason: reasons.join(", "),
        }
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
    fn public_and_masters() {
        let union = UnionAuthorizer(vec![
            Arc::new(SystemMastersAuthorizer),
            Arc::new(PublicInfoAuthorizer),
        ]);
        let anon = UserInfo::anonymous();
        for p in ["/healthz", "/readyz/ping", "/version", "/livez"] {
            assert_eq!(
                union
                    .authorize(&attrs(anon.clone(), p, http::Method::GET))
                    .decision,
                Decision::Allow
            );
        }
        for p in ["/api", "/versionx", "/metrics"] {
            assert_eq!(
                union
                    .authorize(&attrs(anon.clone(), p, http::Method::GET))
                    .decision,
                Decision::NoOpinion
            );
        }
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec![MASTERS_GROUP.into()],
            ..UserInfo::default()
        };
        assert_eq!(
            union
                .authorize(&attrs(admin, "/api", http::Method::GET))
                .decision,
            Decision::Allow
        );
    }
}
