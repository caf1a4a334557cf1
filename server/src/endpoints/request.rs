//! The per-request context: what the request is about, who sent it, its query, headers and
//! body, and the kind it addresses.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apimachinery::{GroupVersion, KindOps, ResourceInfo};
use axum::body::{Body, Bytes};
use http::HeaderMap;
use serde_json::Value;

use super::ApiContext;
use crate::authn::UserInfo;
use crate::authz::AuthorizerRef;
use crate::negotiate::body::{BodyFormat, body_format, decode_body};
use crate::patch::SchemaNode;
use crate::registry::ResourceStore;
use crate::request_info::RequestInfo;

/// One request, resolved against the scheme.
pub struct RequestContext {
    /// The parsed request facts.
    pub info: RequestInfo,
    /// The authenticated user.
    pub user: UserInfo,
    /// The authorizer (review kinds ask it).
    pub authorizer: Option<AuthorizerRef>,
    /// The query parameters (first value of each).
    pub query: HashMap<String, String>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The raw body.
    pub body: Bytes,
    /// The kind's operations.
    pub ops: Arc<dyn KindOps>,
    /// The facts of the requested version.
    pub version_info: ResourceInfo,
    /// The store of the kind.
    pub store: Arc<ResourceStore>,
    /// The schema of the kind at the requested version.
    pub schema: Arc<SchemaNode>,
}

impl RequestContext {
    /// Resolves a request for the kind `ops` (looked up from the request's group and resource);
    /// an unserved version or a path of the wrong scope is 404.
    pub async fn from_request(
        ctx: &ApiContext,
        ops: Arc<dyn KindOps>,
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
            .remove::<UserInfo>()
            .unwrap_or_else(UserInfo::anonymous);
        let authorizer = parts.extensions.remove::<AuthorizerRef>();
        let version_info = ops
            .version(&info.api_version)
            .cloned()
            .ok_or_else(ApiError::not_found_path)?;
        // `/namespaces/{ns}/...` paths address namespaced kinds; `/namespaces/{name}` itself is
        // the cluster-scoped Namespace.
        let namespaced_path = !info.namespace.is_empty() && info.resource != "namespaces";
        let collection = matches!(
            info.verb.as_str(),
            "list" | "watch" | "create" | "deletecollection"
        );
        if namespaced_path != version_info.namespaced()
            && !(version_info.namespaced() && collection)
        {
            return Err(ApiError::not_found_path());
        }
        let mut query = HashMap::new();
        for pair in parts
            .uri
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = crate::request_info::percent_decode(&k.replace('+', " "));
            let v = crate::request_info::percent_decode(&v.replace('+', " "));
            query.entry(k).or_insert(v);
        }
        let body = if matches!(
            parts.method,
            http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
        ) {
            crate::filters::body_limit::read_body(body).await?
        } else {
            Bytes::new()
        };
        let store = ctx.store(&ops)?;
        let schema = ctx.schema(version_info.group, version_info.version, version_info.kind);
        Ok(Self {
            info,
            user,
            authorizer,
            query,
            headers: parts.headers,
            body,
            ops,
            version_info,
            store,
            schema,
        })
    }

    /// A query parameter.
    pub fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The requested version.
    pub fn version(&self) -> &'static str {
        self.version_info.version
    }

    /// The storage version.
    pub fn storage_version(&self) -> &'static str {
        self.store.info.version
    }

    /// The namespace of the request (empty for cluster scope).
    pub fn namespace(&self) -> &str {
        if self.version_info.namespaced() {
            &self.info.namespace
        } else {
            ""
        }
    }

    /// Whether the kind has protobuf encodings.
    pub fn protobuf(&self) -> bool {
        !self.version_info.proto_package.is_empty()
    }

    /// Converts a storage-version object to the requested version.
    pub fn to_request_version(&self, object: Value) -> Result<Value, ApiError> {
        convert(&self.ops, object, self.storage_version(), self.version())
    }

    /// Converts a requested-version object to the storage version.
    pub fn to_storage_version(&self, object: Value) -> Result<Value, ApiError> {
        convert(&self.ops, object, self.version(), self.storage_version())
    }

    /// Decodes the body into an object of the requested version: checks apiVersion/kind,
    /// drops unknown fields per `fieldValidation` (returning warnings) and applies defaults.
    pub fn decode_object(&self, value: Option<Value>) -> Result<(Value, Vec<String>), ApiError> {
        let mut value = match value {
            Some(v) => v,
            None => self.body_value()?,
        };
        let kind = self.version_info.kind;
        let expected = self.version_info.api_version();
        if !value.is_object() {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {kind})"
            )));
        }
        let body_kind = apimachinery::json::get(&value, "kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !body_kind.is_empty() && body_kind != kind {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({expected})",
                apimachinery::json::get(&value, "apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )));
        }
        let body_av = apimachinery::json::get(&value, "apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let from_version = if body_av.is_empty() {
            self.version().to_string()
        } else {
            let gv = GroupVersion::parse(body_av);
            if gv.group != self.version_info.group || self.ops.version(&gv.version).is_none() {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({body_av}) does not match the expected API version ({expected})"
                )));
            }
            gv.version
        };
        if let Some(m) = value.as_object_mut() {
            apimachinery::json::map_set(
                m,
                "apiVersion",
                Value::from(
                    self.ops
                        .version(&from_version)
                        .map(|v| v.api_version())
                        .unwrap_or_else(|| expected.clone()),
                ),
            );
            apimachinery::json::map_set(m, "kind", Value::from(kind));
        }
        let decoded = self.ops.decode(&from_version, value).map_err(|e| {
            ApiError::bad_request(format!(
                "{kind} in version {from_version:?} cannot be handled as a {kind}: {e}"
            ))
        })?;
        let mut warnings = Vec::new();
        let mode = match self.q("fieldValidation").unwrap_or("") {
            "" => "Warn",
            m @ ("Ignore" | "Warn" | "Strict") => m,
            other => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
                )));
            }
        };
        match mode {
            "Strict" if !decoded.unknown_fields.is_empty() => {
                let list: Vec<String> = decoded
                    .unknown_fields
                    .iter()
                    .map(|f| format!("unknown field {f:?}"))
                    .collect();
                return Err(ApiError::bad_request(format!(
                    "{kind} in version {from_version:?} cannot be handled as a {kind}: strict decoding error: {}",
                    list.join(", ")
                )));
            }
            "Warn" | "Strict" => warnings.extend(
                decoded
                    .unknown_fields
                    .iter()
                    .map(|f| format!("unknown field {f:?}")),
            ),
            _ => {}
        }
        // `decode` has applied the defaulters already (defaulting is idempotent, a property
        // the generated crate's tests check), so the object is converted as it is.
        let object = convert(&self.ops, decoded.object, &from_version, self.version())?;
        Ok((object, warnings))
    }

    /// Parses the body as JSON or YAML (or protobuf for kinds that have it).
    pub fn body_value(&self) -> Result<Value, ApiError> {
        let format = body_format(self.header("content-type"), self.protobuf())?;
        if format == BodyFormat::Protobuf {
            let unknown = apimachinery::protobuf::decode_envelope(&self.body)
                .map_err(|e| ApiError::bad_request(format!("protobuf: {e}")))?;
            let v = self
                .ops
                .decode_protobuf(self.version(), unknown.raw.as_deref().unwrap_or(&[]))
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            return Ok(v);
        }
        if self.body.is_empty() {
            return Err(ApiError::bad_request("the body of the request was empty"));
        }
        decode_body(format, &self.body)
    }

    /// Parses `dryRun`: only `All` is accepted.
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        super::params::dry_run(self.q("dryRun"))
    }

    /// The field manager of a write: `fieldManager`, else the User-Agent's first segment.
    pub fn field_manager(&self) -> Result<String, ApiError> {
        super::params::field_manager(self.q("fieldManager"), self.header("user-agent"))
    }
}

/// Converts between versions of a kind.
pub fn convert(
    ops: &Arc<dyn KindOps>,
    object: Value,
    from: &str,
    to: &str,
) -> Result<Value, ApiError> {
    if from == to {
        return Ok(object);
    }
    ops.convert(object, from, to).map_err(ApiError::internal)
}
