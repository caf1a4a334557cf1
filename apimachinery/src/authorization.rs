//! Authorization's vocabulary (Kubernetes' `authorizer` package): the [`Attributes`] of a
//! request, an [`Authorizer`]'s verdict, and the trait itself. The server's authorizers and
//! the access-review kinds use the same types.

use std::borrow::Cow;

use crate::rbac::PolicyRule;
use crate::user::UserInfo;

/// The facts an authorizer decides on (Kubernetes' `authorizer.Attributes`). The fields borrow
/// from the request they describe (the server's `request_attributes`) or own their values (access
/// reviews).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes<'a> {
    /// The requesting user.
    pub user: Cow<'a, UserInfo>,
    /// The verb (`get`, `list`, `create`, ...; for non-resource paths the lowercase method).
    pub verb: Cow<'a, str>,
    /// Whether this is a resource request.
    pub is_resource_request: bool,
    /// The URL path (for non-resource requests).
    pub path: Cow<'a, str>,
    /// The namespace.
    pub namespace: Cow<'a, str>,
    /// The API group.
    pub api_group: Cow<'a, str>,
    /// The API version.
    pub api_version: Cow<'a, str>,
    /// The resource.
    pub resource: Cow<'a, str>,
    /// The subresource.
    pub subresource: Cow<'a, str>,
    /// The object name.
    pub name: Cow<'a, str>,
}

impl<'a> Attributes<'a> {
    /// The same attributes owning all their values.
    pub fn into_owned(self) -> Attributes<'static> {
        Attributes {
            user: Cow::Owned(self.user.into_owned()),
            verb: Cow::Owned(self.verb.into_owned()),
            is_resource_request: self.is_resource_request,
            path: Cow::Owned(self.path.into_owned()),
            namespace: Cow::Owned(self.namespace.into_owned()),
            api_group: Cow::Owned(self.api_group.into_owned()),
            api_version: Cow::Owned(self.api_version.into_owned()),
            resource: Cow::Owned(self.resource.into_owned()),
            subresource: Cow::Owned(self.subresource.into_owned()),
            name: Cow::Owned(self.name.into_owned()),
        }
    }

    /// The message Kubernetes puts in a 403 (`responsewriters.forbiddenMessage`).
    pub fn forbidden_message(&self) -> String {
        let user = &self.user.name;
        if !self.is_resource_request {
            return format!("User {user:?} cannot {} path {:?}", self.verb, self.path);
        }
        let mut resource = self.resource.to_string();
        if !self.subresource.is_empty() {
            resource = format!("{resource}/{}", self.subresource);
        }
        if self.namespace.is_empty() {
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
                self.verb, self.api_group
            )
        } else {
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
                self.verb, self.api_group, self.namespace
            )
        }
    }
}

/// An authorizer's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The request is allowed.
    Allow,
    /// The request is denied; no later authorizer is asked.
    Deny,
    /// This authorizer has no opinion; the next one is asked.
    NoOpinion,
}

/// A verdict with its reason (may be empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorization {
    /// The verdict.
    pub decision: Decision,
    /// Why, for 403 messages and access reviews.
    pub reason: String,
}

impl Authorization {
    /// Allow with a reason.
    pub fn allow(reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Allow,
            reason: reason.into(),
        }
    }

    /// No opinion.
    pub fn no_opinion() -> Self {
        Self {
            decision: Decision::NoOpinion,
            reason: String::new(),
        }
    }

    /// Deny with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Deny,
            reason: reason.into(),
        }
    }
}

/// The rules an authorizer grants a user in a namespace (Kubernetes' `RuleResolver.RulesFor`
/// answer), for `SelfSubjectRulesReview`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesInfo {
    /// Rules on resources.
    pub resource_rules: Vec<PolicyRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<PolicyRule>,
    /// Whether the lists may miss rules.
    pub incomplete: bool,
    /// Errors met while resolving the rules.
    pub errors: Vec<String>,
}

impl RulesInfo {
    /// Adds another authorizer's rules (Kubernetes' union of rule resolvers).
    pub fn extend(&mut self, other: RulesInfo) {
        self.resource_rules.extend(other.resource_rules);
        self.non_resource_rules.extend(other.non_resource_rules);
        self.incomplete |= other.incomplete;
        self.errors.extend(other.errors);
    }

    /// The errors as Kubernetes aggregates them: one error's text, or `[a, b]`.
    pub fn evaluation_error(&self) -> Option<String> {
        match self.errors.len() {
            0 => None,
            1 => Some(self.errors[0].clone()),
            _ => Some(format!("[{}]", self.errors.join(", "))),
        }
    }
}

/// Decides whether a request may proceed.
pub trait Authorizer: Send + Sync + 'static {
    /// Decides on one set of attributes. Must be cheap: it runs on every request.
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization;

    /// The rules this authorizer grants `user` in `namespace`; `None` when it cannot list
    /// rules (it is then not one of the union's rule resolvers, as kube-apiserver's
    /// privileged-group authorizer is not).
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Option<RulesInfo> {
        None
    }
}
