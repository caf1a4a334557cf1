//! [`RequestScope`]: one resource request resolved against the scheme — what it is about
//! (kind, requested version, namespace, name), who sent it, its query, headers and body, and
//! what serves its kind (its store, or a user's storage).

use std::sync::Arc;

use apimachinery::query::Query;
use apimachinery::runtime::{Kind, Object};
use apimachinery::scheme::CodecError;
use apimachinery::status::ApiError;
use apimachinery::{ResourceInfo, Scheme};
use axum::body::{Body, Bytes};
use http::HeaderMap;

use super::ApiContext;
use crate::authn::UserInfo;
use crate::authz::AuthorizerRef;
use crate::registry::KindStorage;
use crate::request_info::RequestInfo;

/// One request, resolved against the scheme.
pub struct RequestScope {
    /// The parsed request facts.
    pub info: RequestInfo,
    /// The authenticated user.
    pub user: Arc<UserInfo>,
    /// The authorizer (review kinds ask it).
    pub authorizer: Option<AuthorizerRef>,
    /// The query, parsed as Go's `url.ParseQuery` does (every value of a repeated key kept).
    pub query: Query<'static>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The raw body.
    pub body: Bytes,
    /// The kind addressed.
    pub kind: &'static Kind,
    /// The facts of the requested version.
    pub version: &'static ResourceInfo,
    /// What serves the kind: its store, or a user's storage.
    pub storage: KindStorage,
    /// Every kind served (a body naming another kind is told apart from an unknown one).
    pub scheme: Arc<Scheme>,
    /// The audit record's note of the request object, when the request is recorded.
    pub audit_note: Option<crate::audit::ObjectNote>,
}

impl RequestScope {
    /// Resolves a request for `kind` (looked up from the request's group and resource); an
    /// unserved version or a path of the wrong scope is 404. The body is read (bounded) for
    /// writes.
    pub async fn from_request(
        ctx: &ApiContext,
        kind: &'static Kind,
        req: http::Request<Body>,
    ) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        // The extensions are not needed after this: take them instead of copying.
        let info = parts
            .extensions
            .remove::<RequestInfo>()
            .ok_or_else(ApiError::not_found_path)?;
        let user = parts
            .extensions
            .remove::<Arc<UserInfo>>()
            .unwrap_or_else(|| Arc::new(UserInfo::anonymous()));
        let authorizer = parts.extensions.remove::<AuthorizerRef>();
        let audit_note = parts.extensions.remove::<crate::audit::ObjectNote>();
        let version = kind
            .info(&info.api_version)
            .ok_or_else(ApiError::not_found_path)?;
        // `/namespaces/{ns}/...` paths address namespaced kinds; `/namespaces/{name}` itself is
        // the cluster-scoped Namespace.
        let namespaced_path = !info.namespace.is_empty() && info.resource != "namespaces";
        let collection = matches!(
            info.verb.as_str(),
            "list" | "watch" | "create" | "deletecollection"
        );
        if namespaced_path != version.namespaced() && !(version.namespaced() && collection) {
            return Err(ApiError::not_found_path());
        }
        let query = Query::parse(crate::request_target::of(&parts.uri, &parts.extensions).query())
            .into_owned();
        let body = if matches!(
            parts.method,
            http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
        ) {
            crate::filters::body_limit::read_body(body).await?
        } else {
            Bytes::new()
        };
        let storage = ctx.registry.kind_storage(kind)?;
        Ok(Self {
            info,
            user,
            authorizer,
            query,
            headers: parts.headers,
            body,
            kind,
            version,
            storage,
            scheme: ctx.scheme.clone(),
            audit_note,
        })
    }

    /// A query parameter (its first value).
    pub fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key)
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The authorizer the request went through, if any.
    pub fn authorizer(
        &self,
    ) -> Option<&std::sync::Arc<dyn apimachinery::authorization::Authorizer>> {
        self.authorizer.as_ref().map(|a| &a.0)
    }

    /// The namespace of the request (empty for cluster scope).
    pub fn namespace(&self) -> &str {
        if self.version.namespaced() {
            &self.info.namespace
        } else {
            ""
        }
    }

    /// The name in the URL (empty for collections).
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The subresource in the URL (empty for the main resource).
    pub fn subresource(&self) -> &str {
        &self.info.subresource
    }

    /// Whether the kind has protobuf encodings.
    pub fn protobuf(&self) -> bool {
        !self.version.proto_package.is_empty()
    }

    /// Whether the requested version is the storage version.
    pub fn is_storage_version(&self) -> bool {
        self.version.version == self.storage.info().version
    }

    /// Converts an object to the requested version (a failed conversion webhook is answered
    /// as kube-apiserver answers it: [`CodecError::into_api_error`]).
    pub fn to_request_version(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        self.kind
            .convert(object, self.version.version)
            .map_err(CodecError::into_api_error)
    }

    /// Converts a list's items to the requested version, together (one conversion webhook
    /// review for a list of custom resources).
    pub fn to_request_version_all(
        &self,
        objects: Vec<Box<dyn Object>>,
    ) -> Result<Vec<Box<dyn Object>>, ApiError> {
        self.kind
            .convert_all(objects, self.version.version)
            .map_err(CodecError::into_api_error)
    }

    /// Converts an object to the storage version.
    pub fn to_storage_version(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        self.kind
            .convert(object, self.storage.info().version)
            .map_err(CodecError::into_api_error)
    }

    /// Converts a decoded object to the version it is admitted and validated in: the storage
    /// version, unless the kind's strategy writes in the request's version (custom resources),
    /// whose store converts the object when it stores it.
    pub fn to_write_version(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        if self.kind.strategy().writes_in_request_version() {
            Ok(object)
        } else {
            self.to_storage_version(object)
        }
    }

    /// The old object admission sees beside a new one of [`RequestScope::to_write_version`]:
    /// `stored` (as read, in the storage version), or `requested` (the same converted to the
    /// request's version) for a kind that writes in the request's version.
    pub fn admitted_old<'a>(
        &self,
        stored: &'a dyn Object,
        requested: &'a dyn Object,
    ) -> &'a dyn Object {
        if self.kind.strategy().writes_in_request_version() {
            requested
        } else {
            stored
        }
    }

    /// The field manager of a write: the `fieldManager` option, else the User-Agent's first
    /// segment (the options' validation has checked it).
    pub fn manager(&self, field_manager: &str) -> String {
        if field_manager.is_empty() {
            crate::apply::manager_from_user_agent(self.header("user-agent").unwrap_or(""))
        } else {
            field_manager.to_string()
        }
    }

    /// Sets an object's namespace from the URL; a different one in the body is 400. A
    /// cluster-scoped object has none.
    pub fn set_namespace(&self, object: &mut dyn Object) -> Result<(), ApiError> {
        let url = self.namespace();
        let meta = object.metadata_mut();
        if !self.version.namespaced() {
            meta.namespace = None;
            return Ok(());
        }
        match meta.namespace.as_deref() {
            Some(ns) if !ns.is_empty() && ns != url => Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )),
            Some(ns) if ns == url => Ok(()),
            _ => {
                meta.namespace = Some(url.to_string());
                Ok(())
            }
        }
    }

    /// Sets an object's name from the URL; a different one in the body is 400.
    pub fn set_name(&self, object: &mut dyn Object) -> Result<(), ApiError> {
        let url = self.name();
        let meta = object.metadata_mut();
        match meta.name.as_deref() {
            Some(n) if !n.is_empty() && n != url => Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({url})"
            ))),
            _ => {
                meta.name = Some(url.to_string());
                Ok(())
            }
        }
    }

    /// The shape of the requested version, for patches and server-side apply.
    pub fn shape(&self) -> &'static apimachinery::structure::StructShape {
        self.kind
            .codec(self.version.version)
            .map(|c| c.shape())
            .unwrap_or(self.kind.storage().shape())
    }

    /// The 404 of the object the URL names.
    pub fn not_found(&self) -> ApiError {
        ApiError::not_found(self.storage.resource(), self.name())
    }
}
