//! `create` of a kind that is answered, never stored (`create_only`: access reviews, token
//! and self-subject reviews): the body is decoded, the kind's strategy answers it with the
//! request's user and the server's authorizer, and the answer is returned with 201.

use apimachinery::authentication::{ObjectReader, TokenAuthenticator, TokenIssuer};
use apimachinery::authorization::{Attributes, Authorization, Authorizer};
use apimachinery::meta::ObjectMeta;
use apimachinery::status::ApiError;
use apimachinery::strategy::ReviewContext;
use axum::body::Body;
use http::{Response, StatusCode};

use super::ApiContext;
use super::decode::decode_body;
use super::response;
use super::scope::RequestScope;
use crate::authn::UserInfo;

/// An authorizer with no opinion on anything (no authorizer attached to the request).
struct NoAuthorizer;

impl Authorizer for NoAuthorizer {
    fn authorize(&self, _: &Attributes<'_>) -> Authorization {
        Authorization::no_opinion()
    }
}

/// What a review may consult: the request's user, namespace, the server's authorizer and its
/// token services.
pub(super) struct Context<'a> {
    pub(super) ctx: &'a ApiContext,
    pub(super) scope: &'a RequestScope,
}

impl ReviewContext for Context<'_> {
    fn user(&self) -> &UserInfo {
        &self.scope.user
    }

    fn authorizer(&self) -> &dyn Authorizer {
        match &self.scope.authorizer {
            Some(a) => &*a.0,
            None => &NoAuthorizer,
        }
    }

    fn namespace(&self) -> &str {
        self.scope.namespace()
    }

    fn token_authenticator(&self) -> Option<&dyn TokenAuthenticator> {
        self.ctx.tokens.authenticator.as_deref()
    }

    fn token_issuer(&self) -> Option<&dyn TokenIssuer> {
        self.ctx.tokens.issuer.as_deref()
    }

    fn objects(&self) -> Option<&dyn ObjectReader> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl ObjectReader for Context<'_> {
    async fn metadata(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Result<ObjectMeta, ApiError>> {
        let kind = self.ctx.scheme.by_kind(group, kind)?;
        let read = async {
            let storage = self.ctx.registry.kind_storage(kind)?;
            let object = storage.get(namespace, name, "").await?;
            Ok(object.metadata().clone())
        };
        Some(read.await)
    }
}

/// `POST` of a review kind.
pub async fn create(ctx: &ApiContext, scope: RequestScope) -> Result<Response<Body>, ApiError> {
    let options = apimachinery::meta::options::CreateOptions::parse(&scope.query)?;
    let body = decode_body(&scope, options.field_validation_directive())?;
    let mut object = scope.to_storage_version(body.object)?;
    scope.set_namespace(&mut *object)?;
    scope
        .kind
        .strategy()
        .review_async(&mut *object, &Context { ctx, scope: &scope })
        .await?;
    let meta = object.metadata_mut();
    meta.creation_timestamp = None;
    meta.managed_fields.clear();
    let out = scope.to_request_version(object)?;
    response::object(&scope, StatusCode::CREATED, &*out, &body.warnings)
}
