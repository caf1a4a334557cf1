//! The grants Kubernetes' bootstrap policy gives every authenticated user through the
//! `system:basic-user` and `system:discovery` ClusterRoles (bound to `system:authenticated`):
//! creating `selfsubjectreviews`, `selfsubjectaccessreviews` and `selfsubjectrulesreviews`
//! (`kubectl auth whoami`, `kubectl auth can-i`), and reading the discovery, OpenAPI, health
//! and version paths. Without them an impersonated or non-admin user could not even ask what it
//! may do.

use super::{Attributes, Authorization, Authorizer};
use crate::authn::AUTHENTICATED_GROUP;

/// The self-review resources of `system:basic-user`, as (API group, resource).
const SELF_REVIEWS: [(&str, &str); 3] = [
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

/// The non-resource paths of `system:discovery`: exact paths, and prefixes ending in `/*`.
const DISCOVERY_PATHS: [&str; 11] = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];

/// Allows members of `system:authenticated` what `system:basic-user` and `system:discovery`
/// allow.
#[derive(Debug, Default, Clone, Copy)]
pub struct BasicUserAuthorizer;

impl Authorizer for BasicUserAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        if !attributes.user.in_group(AUTHENTICATED_GROUP) {
            return Authorization::no_opinion();
        }
        let allowed = if attributes.is_resource_request {
            attributes.verb == "create"
                && attributes.subresource.is_empty()
                && SELF_REVIEWS
                    .iter()
                    .any(|(g, r)| attributes.api_group == *g && attributes.resource == *r)
        } else {
            attributes.verb == "get"
                && DISCOVERY_PATHS.iter().any(|p| match p.strip_suffix('*') {
                    Some(prefix) => attributes.path.starts_with(prefix),
                    None => attributes.path == *p,
                })
        };
        if allowed {
            Authorization::allow("")
        } else {
            Authorization::no_opinion()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::UserInfo;
    use crate::authz::{Decision, request_attributes};
    use crate::request_info::RequestInfo;

    fn decide(user: &UserInfo, method: http::Method, path: &str) -> Decision {
        let info = RequestInfo::parse(&method, path, "").unwrap_or_default();
        BasicUserAuthorizer
            .authorize(&request_attributes(user, &info))
            .decision
    }

    #[test]
    fn authenticated_users_may_review_themselves_and_discover() {
        let jane = UserInfo {
            name: "jane".into(),
            groups: vec![AUTHENTICATED_GROUP.into()],
            ..UserInfo::default()
        };
        let post = http::Method::POST;
        let get = http::Method::GET;
        for (method, path) in [
            (
                &post,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ),
            (
                &post,
                "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            ),
            (&post, "/apis/authentication.k8s.io/v1/selfsubjectreviews"),
            (&get, "/api"),
            (&get, "/apis/example.dev/v1"),
            (&get, "/openapi/v3"),
            (&get, "/version"),
        ] {
            assert_eq!(
                decide(&jane, method.clone(), path),
                Decision::Allow,
                "{path}"
            );
        }
        for (method, path) in [
            (&post, "/apis/authorization.k8s.io/v1/subjectaccessreviews"),
            (
                &get,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ),
            (&get, "/api/v1/namespaces/default/configmaps"),
            (&get, "/metrics"),
            (&post, "/api"),
        ] {
            assert_eq!(
                decide(&jane, method.clone(), path),
                Decision::NoOpinion,
                "{path}"
            );
        }
        assert_eq!(
            decide(
                &UserInfo::anonymous(),
                post,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
            ),
            Decision::NoOpinion
        );
    }
}
