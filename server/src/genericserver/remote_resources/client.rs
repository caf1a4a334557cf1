//! [`RemoteClient`]: client-go's metadata client over [`RemoteResources::send`], as one user.

use std::sync::Arc;

use apimachinery::status::{ApiError, StatusReason};
use apimachinery::user::UserInfo;
use bytes::Bytes;
use http::{Method, Request, header};
use serde_json::Value;

use super::{RemoteResource, RemoteResources};

/// What a metadata list says of one object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteItem {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

/// What the metadata client accepts: `PartialObjectMetadataList` when the server can send it,
/// else the full list (both are read the same way).
const ACCEPT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// Lists and deletes remote objects as one user (client-go's metadata client).
#[derive(Clone)]
pub struct RemoteClient {
    remote: Arc<dyn RemoteResources>,
    user: Arc<UserInfo>,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient")
            .field("user", &self.user.name)
            .finish_non_exhaustive()
    }
}

impl RemoteClient {
    /// A client sending through `remote` as `user`.
    pub fn new(remote: Arc<dyn RemoteResources>, user: Arc<UserInfo>) -> Self {
        Self { remote, user }
    }

    /// The objects of `resource` in `namespace` (every namespace when empty).
    pub async fn list(
        &self,
        resource: &RemoteResource,
        namespace: &str,
    ) -> Result<Vec<RemoteItem>, ApiError> {
        let body = self
            .call(
                Method::GET,
                resource.collection_path(namespace),
                Some(ACCEPT_METADATA_LIST),
                None,
                (resource, ""),
            )
            .await?;
        let list: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::internal(format!("decoding the list: {e}")))?;
        Ok(list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                let meta = &item["metadata"];
                RemoteItem {
                    name: meta["name"].as_str().unwrap_or_default().to_string(),
                    finalizers: super::string_array(&meta["finalizers"]),
                    deleting: meta["deletionTimestamp"].is_string(),
                }
            })
            .collect())
    }

    /// Deletes every object of `resource` in `namespace` with `options` (a `DeleteOptions`
    /// object).
    pub async fn delete_collection(
        &self,
        resource: &RemoteResource,
        namespace: &str,
        options: &Value,
    ) -> Result<(), ApiError> {
        self.call(
            Method::DELETE,
            resource.collection_path(namespace),
            None,
            Some(options),
            (resource, ""),
        )
        .await
        .map(|_| ())
    }

    /// Deletes object `name` of `resource` in `namespace` with `options` (a `DeleteOptions`
    /// object).
    pub async fn delete(
        &self,
        resource: &RemoteResource,
        namespace: &str,
        name: &str,
        options: &Value,
    ) -> Result<(), ApiError> {
        let path = format!("{}/{name}", resource.collection_path(namespace));
        self.call(Method::DELETE, path, None, Some(options), (resource, name))
            .await
            .map(|_| ())
    }

    /// Sends one request; a status other than 2xx is the error the answer's `Status` says, or
    /// client-go's generic one for the code when the answer is no `Status`.
    async fn call(
        &self,
        method: Method,
        path: String,
        accept: Option<&str>,
        body: Option<&Value>,
        (resource, name): (&RemoteResource, &str),
    ) -> Result<Bytes, ApiError> {
        let mut request = Request::builder().method(method.clone()).uri(path);
        request = request.header(header::ACCEPT, accept.unwrap_or("application/json"));
        let body = match body {
            Some(b) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(b).map_err(ApiError::internal)?)
            }
            None => Bytes::new(),
        };
        let request = request.body(body).map_err(ApiError::internal)?;
        let response = self.remote.send(Arc::clone(&self.user), request).await;
        let status = response.status();
        let body = response.into_body();
        if status.is_success() {
            return Ok(body);
        }
        let status_object = serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(|v| v["kind"] == "Status")
            .and_then(|v| ApiError::from_status_json(&v));
        Err(status_object.unwrap_or_else(|| {
            generic_error(
                status.as_u16(),
                &method,
                resource,
                name,
                &String::from_utf8_lossy(&body),
            )
        }))
    }
}

/// client-go's error for an answer that is no `Status` (apimachinery's
/// `NewGenericServerResponse`): a message by code, then `(<verb> <resource>.<group> [name])`.
fn generic_error(
    code: u16,
    method: &Method,
    resource: &RemoteResource,
    name: &str,
    server_message: &str,
) -> ApiError {
    let (reason, message) = match code {
        409 if *method == Method::POST => (
            StatusReason::AlreadyExists,
            "the server reported a conflict".to_string(),
        ),
        409 => (
            StatusReason::Conflict,
            "the server reported a conflict".to_string(),
        ),
        404 => (
            StatusReason::NotFound,
            "the server could not find the requested resource".to_string(),
        ),
        400 => (
            StatusReason::BadRequest,
            "the server rejected our request for an unknown reason".to_string(),
        ),
        401 => (
            StatusReason::Unauthorized,
            "the server has asked for the client to provide credentials".to_string(),
        ),
        403 => (StatusReason::Forbidden, server_message.to_string()),
        405 => (
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource".to_string(),
        ),
        406 if server_message.is_empty() || server_message == "unknown" => (
            StatusReason::NotAcceptable,
            "the server was unable to respond with a content type that the client supports"
                .to_string(),
        ),
        406 => (StatusReason::NotAcceptable, server_message.to_string()),
        415 => (StatusReason::UnsupportedMediaType, server_message.to_string()),
        422 => (
            StatusReason::Invalid,
            "the server rejected our request due to an error in our request".to_string(),
        ),
        504 => (
            StatusReason::Timeout,
            "the server was unable to return a response in the time allotted, but may still be processing the request"
                .to_string(),
        ),
        503 => (
            StatusReason::ServiceUnavailable,
            "the server is currently unable to handle the request".to_string(),
        ),
        429 => (
            StatusReason::TooManyRequests,
            "the server has received too many requests and has asked us to try again later"
                .to_string(),
        ),
        code if code >= 500 => (
            StatusReason::InternalError,
            format!(
                "an error on the server ({server_message:?}) has prevented the request from succeeding"
            ),
        ),
        code => (
            StatusReason::Unknown,
            format!("the server responded with the status code {code} but did not return more information"),
        ),
    };
    let verb = method.as_str().to_lowercase();
    let qualified = format!("{}.{}", resource.resource, resource.group);
    let message = if name.is_empty() {
        format!("{message} ({verb} {qualified})")
    } else {
        format!("{message} ({verb} {qualified} {name})")
    };
    ApiError::new(code, reason, message, None)
}
