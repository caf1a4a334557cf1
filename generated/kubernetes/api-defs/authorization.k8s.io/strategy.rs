//! The access reviews are answered, never stored: each strategy asks the server's authorizer
//! the question its object asks and writes the verdict into the status.

use std::borrow::Cow;

use ::apimachinery::authorization::{Attributes, Decision, RulesInfo};
use ::apimachinery::errors::FieldError;
use ::apimachinery::runtime::Object;
use ::apimachinery::status::ApiError;
use ::apimachinery::strategy::{ReviewContext, Strategy};
use ::apimachinery::user::UserInfo;

/// The authorizer's attributes for a review's resource or non-resource attributes.
fn attributes(
    user: UserInfo,
    resource: Option<&v1::ResourceAttributes>,
    non_resource: Option<&v1::NonResourceAttributes>,
) -> Attributes<'static> {
    let text = |s: &Option<String>| Cow::Owned(s.clone().unwrap_or_default());
    match (resource, non_resource) {
        (Some(r), _) => Attributes {
            user: Cow::Owned(user),
            verb: text(&r.verb),
            is_resource_request: true,
            path: Cow::Borrowed(""),
            namespace: text(&r.namespace),
            api_group: text(&r.group),
            api_version: text(&r.version),
            resource: text(&r.resource),
            subresource: text(&r.subresource),
            name: text(&r.name),
        },
        (None, n) => Attributes {
            user: Cow::Owned(user),
            verb: n.map(|n| text(&n.verb)).unwrap_or_default(),
            is_resource_request: false,
            path: n.map(|n| text(&n.path)).unwrap_or_default(),
            ..Attributes::default()
        },
    }
}

/// The user a `SubjectAccessReview` asks about.
fn subject(spec: &v1::SubjectAccessReviewSpec) -> UserInfo {
    UserInfo {
        name: spec.user.clone().unwrap_or_default(),
        uid: spec.uid.clone().unwrap_or_default(),
        groups: spec.groups.clone(),
        extra: spec.extra.clone(),
    }
}

/// The verdict of the server's authorizer, as a review's status.
fn answer(context: &dyn ReviewContext, attributes: &Attributes<'_>) -> v1::SubjectAccessReviewStatus {
    let verdict = context.authorizer().authorize(attributes);
    v1::SubjectAccessReviewStatus {
        allowed: verdict.decision == Decision::Allow,
        denied: (verdict.decision == Decision::Deny).then_some(true),
        reason: Some(verdict.reason.to_string()).filter(|r| !r.is_empty()),
        evaluation_error: verdict.error,
    }
}

/// `SubjectAccessReview`: may the given user do this?
pub struct SubjectAccessReviewStrategy;

impl Strategy for SubjectAccessReviewStrategy {
    fn review(&self, object: &mut dyn Object, context: &dyn ReviewContext) -> Result<(), ApiError> {
        let Some(review) = object.downcast_mut::<v1::SubjectAccessReview>() else {
            return Ok(());
        };
        let spec = &review.spec;
        let attrs = attributes(
            subject(spec),
            spec.resource_attributes.as_ref(),
            spec.non_resource_attributes.as_ref(),
        );
        review.status = answer(context, &attrs);
        Ok(())
    }
}

/// `SelfSubjectAccessReview`: may I do this?
pub struct SelfSubjectAccessReviewStrategy;

impl Strategy for SelfSubjectAccessReviewStrategy {
    fn review(&self, object: &mut dyn Object, context: &dyn ReviewContext) -> Result<(), ApiError> {
        let Some(review) = object.downcast_mut::<v1::SelfSubjectAccessReview>() else {
            return Ok(());
        };
        let spec = &review.spec;
        let attrs = attributes(
            context.user().clone(),
            spec.resource_attributes.as_ref(),
            spec.non_resource_attributes.as_ref(),
        );
        review.status = answer(context, &attrs);
        Ok(())
    }
}

/// `LocalSubjectAccessReview`: may the given user do this in the review's namespace?
pub struct LocalSubjectAccessReviewStrategy;

impl Strategy for LocalSubjectAccessReviewStrategy {
    fn review(&self, object: &mut dyn Object, context: &dyn ReviewContext) -> Result<(), ApiError> {
        let Some(review) = object.downcast_mut::<v1::LocalSubjectAccessReview>() else {
            return Ok(());
        };
        let spec = &review.spec;
        let namespace = spec
            .resource_attributes
            .as_ref()
            .and_then(|r| r.namespace.as_deref())
            .unwrap_or("");
        if spec.resource_attributes.is_none() || namespace != context.namespace() {
            let err = FieldError::invalid(
                "spec.resourceAttributes.namespace",
                &::serde_json::Value::from(namespace),
                "must match metadata.namespace",
            );
            return Err(ApiError::invalid(
                "authorization.k8s.io",
                "LocalSubjectAccessReview",
                "",
                &[err],
            ));
        }
        let attrs = attributes(
            subject(spec),
            spec.resource_attributes.as_ref(),
            spec.non_resource_attributes.as_ref(),
        );
        review.status = answer(context, &attrs);
        Ok(())
    }
}

/// `SelfSubjectRulesReview`: what may I do in this namespace? Answered from the rules the
/// server's authorizers can list (RBAC's bindings, `AlwaysAllow`'s everything); an authorizer
/// that cannot list rules makes the answer incomplete.
pub struct SelfSubjectRulesReviewStrategy;

impl Strategy for SelfSubjectRulesReviewStrategy {
    fn review(&self, object: &mut dyn Object, context: &dyn ReviewContext) -> Result<(), ApiError> {
        let Some(review) = object.downcast_mut::<v1::SelfSubjectRulesReview>() else {
            return Ok(());
        };
        let namespace = review.spec.namespace.clone().unwrap_or_default();
        if namespace.is_empty() {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        let info = context
            .authorizer()
            .rules_for(context.user(), &namespace)
            .unwrap_or(RulesInfo {
                incomplete: true,
                ..RulesInfo::default()
            });
        review.status = v1::SubjectRulesReviewStatus {
            resource_rules: info
                .resource_rules
                .iter()
                .map(|r| v1::ResourceRule {
                    verbs: r.verbs.clone(),
                    api_groups: r.api_groups.clone(),
                    resources: r.resources.clone(),
                    resource_names: r.resource_names.clone(),
                })
                .collect(),
            non_resource_rules: info
                .non_resource_rules
                .iter()
                .map(|r| v1::NonResourceRule {
                    verbs: r.verbs.clone(),
                    non_resource_urls: r.non_resource_urls.clone(),
                })
                .collect(),
            incomplete: info.incomplete,
            evaluation_error: info.evaluation_error(),
        };
        Ok(())
    }
}
