//! The authentication reviews are answered, never stored; a `TokenRequest` (the body of a
//! ServiceAccount's `token` subresource) is answered with a signed token.

use ::apimachinery::authentication::{BoundObject, ServiceAccountToken, TokenOutcome};
use ::apimachinery::gvk::GroupResource;
use ::apimachinery::errors::FieldError;
use ::apimachinery::meta::{ObjectMeta, Time};
use ::apimachinery::runtime::Object;
use ::apimachinery::status::ApiError;
use ::apimachinery::strategy::{ReviewContext, Strategy, SubresourceBody};
use ::serde_json::{Value, json};

/// The review form of a user.
fn user_info(user: &::apimachinery::user::UserInfo) -> v1::UserInfo {
    v1::UserInfo {
        username: Some(user.name.clone()),
        uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
    }
}

/// `SelfSubjectReview` (`kubectl auth whoami`): who am I?
pub struct SelfSubjectReviewStrategy;

impl Strategy for SelfSubjectReviewStrategy {
    fn review(&self, object: &mut dyn Object, context: &dyn ReviewContext) -> Result<(), ApiError> {
        if let Some(review) = object.downcast_mut::<v1::SelfSubjectReview>() {
            review.status.user_info = user_info(context.user());
        }
        Ok(())
    }
}

/// `TokenReview`: whose is this token? Answered by the server's token authenticators, as a
/// request carrying the token as its bearer token would be.
pub struct TokenReviewStrategy;

#[::async_trait::async_trait]
impl Strategy for TokenReviewStrategy {
    async fn review_async(
        &self,
        object: &mut dyn Object,
        context: &dyn ReviewContext,
    ) -> Result<(), ApiError> {
        let Some(review) = object.downcast_mut::<v1::TokenReview>() else {
            return Ok(());
        };
        let token = review.spec.token.clone().unwrap_or_default();
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication.k8s.io",
            ));
        }
        let outcome = match context.token_authenticator() {
            Some(authenticator) => {
                authenticator
                    .authenticate_token(&token, &review.spec.audiences)
                    .await
            }
            None => TokenOutcome::Unrecognized,
        };
        review.status = match outcome {
            TokenOutcome::Authenticated {
                user, audiences, ..
            } => v1::TokenReviewStatus {
                authenticated: Some(true),
                user: user_info(&user),
                audiences,
                error: None,
            },
            // A token no authenticator recognises fails as a bearer token does.
            TokenOutcome::Unrecognized => v1::TokenReviewStatus {
                authenticated: Some(false),
                error: Some("invalid bearer token".to_string()),
                ..Default::default()
            },
            TokenOutcome::Invalid(error) => v1::TokenReviewStatus {
                authenticated: Some(false),
                error: Some(error),
                ..Default::default()
            },
        };
        Ok(())
    }
}

/// The shortest lifetime a requested token may have (Kubernetes' ten minutes).
const MIN_TOKEN_SECONDS: i64 = 600;
/// The longest lifetime a requested token may have (2^32 seconds).
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

/// Answers a `TokenRequest` for `service_account` (the `serviceaccounts/token` subresource, as
/// kube-apiserver's `TokenREST`): the body's name and namespace must match the URL's, audiences
/// default to the API server's, the lifetime is checked, a bound object must exist (with the
/// uid given, if any), and the issued token and its expiry fill the status. Kubernetes binds
/// tokens to Pods, Secrets and Nodes; those of the three kinds the server does not serve are
/// refused as kinds that cannot be bound.
pub async fn answer_token_request(
    service_account: &ObjectMeta,
    body: SubresourceBody,
    context: &dyn ReviewContext,
) -> Result<Value, ApiError> {
    const GROUP: &str = "authentication.k8s.io";
    const KIND: &str = "TokenRequest";
    let name = service_account.name.clone().unwrap_or_default();
    let namespace = service_account.namespace.clone().unwrap_or_default();
    let issuer = context
        .token_issuer()
        .ok_or_else(|| ApiError::internal("no service-account token issuer is configured"))?;
    let unrecognized = || {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {KIND})"
        ))
    };
    let mut request = match body {
        SubresourceBody::Json(body) => {
            if body.get("kind").and_then(Value::as_str).is_some_and(|k| k != KIND) {
                return Err(unrecognized());
            }
            ::serde_json::from_value::<v1::TokenRequest>(body)
                .map_err(|e| ApiError::bad_request(format!("unable to decode {KIND}: {e}")))?
        }
        SubresourceBody::Protobuf { kind, raw, .. } => {
            if !kind.is_empty() && kind != KIND {
                return Err(unrecognized());
            }
            let mut request = v1::TokenRequest::default();
            ::apimachinery::protobuf::Decoder::new(&raw)
                .merge_all(&mut request)
                .map_err(|e| ApiError::bad_request(format!("unable to decode {KIND}: {e}")))?;
            request
        }
    };
    let field_mismatch = |field: &str, value: &str, what: &str| {
        ApiError::invalid(
            GROUP,
            KIND,
            &name,
            &[FieldError::invalid(
                field,
                &json!(value),
                format!("must match the service account {what} if specified"),
            )],
        )
    };
    match request.metadata.name.as_deref() {
        Some(n) if !n.is_empty() && n != name => {
            return Err(field_mismatch("metadata.name", n, "name"));
        }
        _ => {}
    }
    match request.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() && ns != namespace => {
            return Err(field_mismatch("metadata.namespace", ns, "namespace"));
        }
        _ => {}
    }
    if request.spec.audiences.is_empty() {
        request.spec.audiences = issuer.api_audiences().to_vec();
    }
    request.metadata.name = Some(name.clone());
    request.metadata.namespace = Some(namespace.clone());
    request.metadata.creation_timestamp = Some(Time(::chrono::Utc::now()));
    request.status = v1::TokenRequestStatus::default();
    let seconds = request.spec.expiration_seconds.unwrap_or(3600);
    let mut errors = Vec::new();
    if seconds < MIN_TOKEN_SECONDS {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_TOKEN_SECONDS {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid(GROUP, KIND, "", &errors));
    }
    // A validity above the server's maximum is lowered to it (Kubernetes'
    // `--service-account-max-token-expiration`).
    let seconds = issuer
        .max_expiration_seconds()
        .map_or(seconds, |max| seconds.min(max));
    let bound_object = match &request.spec.bound_object_ref {
        Some(bound) => Some(bound_object(bound, &name, &namespace, context).await?),
        None => None,
    };
    let issued = issuer
        .issue(&ServiceAccountToken {
            namespace,
            name,
            uid: service_account.uid.clone().unwrap_or_default(),
            audiences: request.spec.audiences.clone(),
            expiration_seconds: seconds,
            bound_object,
        })
        .map_err(ApiError::internal)?;
    request.spec.expiration_seconds = Some(seconds);
    request.status = v1::TokenRequestStatus {
        token: Some(issued.token),
        expiration_timestamp: ::chrono::DateTime::from_timestamp(issued.expires_at, 0).map(Time),
    };
    let mut out = json!({"kind": KIND, "apiVersion": "authentication.k8s.io/v1"});
    if let (Value::Object(out), Ok(Value::Object(fields))) =
        (&mut out, ::serde_json::to_value(&request))
    {
        out.extend(fields);
    }
    Ok(out)
}

/// Checks the object a token is to be bound to and returns its kind, name and uid (Kubernetes'
/// `TokenREST`: a Pod or Secret of the ServiceAccount's namespace, or a Node; it must exist, and
/// match the uid the reference gives).
async fn bound_object(
    bound: &v1::BoundObjectReference,
    service_account: &str,
    namespace: &str,
    context: &dyn ReviewContext,
) -> Result<BoundObject, ApiError> {
    let api_version = bound.api_version.as_deref().unwrap_or("");
    let (group, _) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let version = api_version.rsplit('/').next().unwrap_or("");
    let kind = bound.kind.as_deref().unwrap_or("");
    let name = bound.name.as_deref().unwrap_or("");
    let unbindable = || {
        ApiError::bad_request(format!(
            "cannot bind token for serviceaccount {service_account:?} to object of type {group}/{version}, Kind={kind}"
        ))
    };
    let scope = match (group, kind) {
        ("", "Pod" | "Secret") => namespace,
        ("", "Node") => "",
        _ => return Err(unbindable()),
    };
    let Some(found) = context.objects() else {
        return Err(unbindable());
    };
    let Some(meta) = found.metadata(group, kind, scope, name).await else {
        return Err(unbindable());
    };
    let uid = meta?.uid.unwrap_or_default();
    if let Some(expected) = bound.uid.as_deref().filter(|u| !u.is_empty())
        && expected != uid
    {
        return Err(ApiError::conflict(
            &GroupResource::new(group, kind),
            name,
            &format!(
                "the UID in the bound object reference ({expected}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(BoundObject {
        kind: kind.to_string(),
        name: name.to_string(),
        uid,
    })
}
