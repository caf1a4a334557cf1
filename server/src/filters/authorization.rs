//! Authorization: lets the request through only if the authorizer allows it; otherwise 403
//! with Kubernetes' message. The chain stores an [`AuthorizerRef`](crate::authz::AuthorizerRef)
//! for handlers that ask the authorizer themselves (access reviews).

use super::ChainConfig;
use crate::authn::UserInfo;
use crate::authz::{Decision, Reason};
use crate::request_info::RequestInfo;
use apimachinery::GroupResource;
use apimachinery::status::ApiError;

/// Asks the authorizer; `Err` is the 403 error of a request no authorizer allows.
pub fn authorize(
    config: &ChainConfig,
    user: &UserInfo,
    info: &RequestInfo,
) -> Result<(), ApiError> {
    decide(config, user, info).1
}

/// What the authorizer answered a request, for the audit annotations and the response.
pub enum Verdict {
    /// Allowed, with the reason.
    Allowed(Reason),
    /// Not allowed (403), with the reason.
    Forbidden(Reason),
    /// No authorizer allowed it and one could not decide (500; kube-apiserver's audit reason
    /// `internal error`).
    Failed,
}

/// Asks the authorizer: the verdict (for the audit annotations) and `Err` with the 403 error of
/// a request no authorizer allows, or the 500 error of one that an authorizer failed to decide
/// (kube-apiserver's `InternalError` there).
pub fn decide(
    config: &ChainConfig,
    user: &UserInfo,
    info: &RequestInfo,
) -> (Verdict, Result<(), ApiError>) {
    let attrs = crate::authz::request_attributes(user, info);
    let verdict = config.authorizer.authorize(&attrs);
    if verdict.decision == Decision::Allow {
        return (Verdict::Allowed(verdict.reason), Ok(()));
    }
    if let Some(error) = verdict.error {
        return (Verdict::Failed, Err(ApiError::internal(error)));
    }
    let mut message = attrs.forbidden_message();
    if !verdict.reason.is_empty() {
        message = format!("{message}: {}", verdict.reason);
    }
    let resource = GroupResource::new(attrs.api_group.clone(), attrs.resource.clone());
    (
        Verdict::Forbidden(verdict.reason),
        Err(ApiError::forbidden(&resource, &attrs.name, &message)),
    )
}

/// A cluster-scoped kind has no namespaced path: such a request is answered 404 before it is
/// authorized (kube-apiserver installs no such route), so a grant in one namespace never
/// reaches cluster-scoped objects.
pub fn check_scope(config: &ChainConfig, info: &RequestInfo) -> Result<(), ApiError> {
    let Some(scheme) = &config.scheme else {
        return Ok(());
    };
    if !info.is_resource_request || !info.is_namespaced_path() {
        return Ok(());
    }
    match scheme.by_resource(&info.api_group, &info.resource) {
        Some(kind) if !kind.storage_info().namespaced() => Err(ApiError::not_found_path()),
        _ => Ok(()),
    }
}
