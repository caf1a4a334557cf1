//! Authorization's vocabulary (Kubernetes' `authorizer` package): the [`Attributes`] of a
//! request, an [`Authorizer`]'s verdict, and the trait itself. The server's authorizers and
//! the access-review kinds use the same types.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

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

/// Why an authorizer decided as it did (may be empty). Most reasons are text; an authorizer may
/// instead give a description that is rendered only when something reads it (the audit's
/// annotation, an access review, a 403 message), since most allowed requests never do: RBAC's
/// allow reason names the binding, role and subject, and formatting it for every request was
/// ≈ 0.3k instructions per GET in the profile of tools/callgrind-requests `x509-admin` (an A/B
/// of whole requests does not resolve it: runs spread by ±3–5k).
#[derive(Clone, Default)]
pub struct Reason(ReasonText);

#[derive(Clone)]
enum ReasonText {
    Text(Cow<'static, str>),
    Described(Arc<dyn fmt::Display + Send + Sync>),
}

impl Default for ReasonText {
    fn default() -> Self {
        Self::Text(Cow::Borrowed(""))
    }
}

impl Reason {
    /// A reason rendered from `description` when it is read.
    pub fn described(description: impl fmt::Display + Send + Sync + 'static) -> Self {
        Self(ReasonText::Described(Arc::new(description)))
    }

    /// Whether there is no reason. A described reason is never empty.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            ReasonText::Text(text) => text.is_empty(),
            ReasonText::Described(_) => false,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ReasonText::Text(text) => f.write_str(text),
            ReasonText::Described(description) => description.fmt(f),
        }
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Reason {}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.to_string().as_str() == *other
    }
}

impl From<String> for Reason {
    fn from(text: String) -> Self {
        Self(ReasonText::Text(Cow::Owned(text)))
    }
}

impl From<&'static str> for Reason {
    fn from(text: &'static str) -> Self {
        Self(ReasonText::Text(Cow::Borrowed(text)))
    }
}

/// A verdict with its reason (may be empty), and the error met on the way if any.
///
/// An authorizer that could not decide (a webhook or `SubjectAccessReview` that could not be
/// asked) answers no opinion with an `error`: a request that no authorizer allows is then
/// answered 500, not 403, and an access review reports the error as its `evaluationError`, as
/// kube-apiserver does.
///
/// ```
/// use apimachinery::authorization::{Authorization, Decision};
///
/// let verdict = Authorization::failed("connection refused");
/// assert_eq!(verdict.decision, Decision::NoOpinion);
/// assert_eq!(verdict.error.as_deref(), Some("connection refused"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorization {
    /// The verdict.
    pub decision: Decision,
    /// Why, for 403 messages, audit annotations and access reviews.
    pub reason: Reason,
    /// The error that kept the authorizer from deciding (its verdict is then no opinion).
    pub error: Option<String>,
}

impl Authorization {
    /// Allow with a reason.
    pub fn allow(reason: impl Into<Reason>) -> Self {
        Self {
            decision: Decision::Allow,
            reason: reason.into(),
            error: None,
        }
    }

    /// No opinion.
    pub fn no_opinion() -> Self {
        Self {
            decision: Decision::NoOpinion,
            reason: Reason::default(),
            error: None,
        }
    }

    /// Deny with a reason.
    pub fn deny(reason: impl Into<Reason>) -> Self {
        Self {
            decision: Decision::Deny,
            reason: reason.into(),
            error: None,
        }
    }

    /// No opinion, because of `error` (the authorizer could not decide).
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            decision: Decision::NoOpinion,
            reason: Reason::default(),
            error: Some(error.into()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts how often it is rendered.
    struct Counted(Arc<AtomicUsize>);

    impl fmt::Display for Counted {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.fetch_add(1, Ordering::Relaxed);
            f.write_str("allowed by a binding")
        }
    }

    #[test]
    fn a_described_reason_is_rendered_only_when_read() {
        let renders = Arc::new(AtomicUsize::new(0));
        let verdict = Authorization::allow(Reason::described(Counted(Arc::clone(&renders))));
        let copy = verdict.clone();
        assert!(!verdict.reason.is_empty());
        assert_eq!(renders.load(Ordering::Relaxed), 0);
        assert_eq!(copy.reason.to_string(), "allowed by a binding");
        assert_eq!(renders.load(Ordering::Relaxed), 1);
        assert_eq!(verdict, Authorization::allow("allowed by a binding"));
    }

    #[test]
    fn text_reasons() {
        assert!(Authorization::no_opinion().reason.is_empty());
        assert!(Authorization::allow("").reason.is_empty());
        let deny = Authorization::deny(String::from("no"));
        assert_eq!(deny.reason, "no");
        assert_ne!(deny, Authorization::deny("yes"));
        assert_eq!(format!("{:?}", deny.reason), "\"no\"");
    }
}
