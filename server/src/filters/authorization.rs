//! Authorization: lets the request through only if the authorizer allows it; otherwise 403
//! with Kubernetes' message. Stores an [`AuthorizerRef`] for handlers that ask the authorizer
//! themselves (access reviews).

use std::sync::Arc;

use apimachinery::GroupResource;
use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use http::Response;

use super::{ChainConfig, status_response};
use crate::authn::UserInfo;
use crate::authz::{Attributes, AuthorizerRef, Decision};
use crate::request_info::RequestInfo;

/// The filter.
pub async fn filter(
    State(config): State<Arc<ChainConfig>>,
    mut req: Request,
    next: Next,
) -> Response<Body> {
    let (Some(user), Some(info)) = (
        req.extensions().get::<UserInfo>(),
        req.extensions().get::<RequestInfo>(),
    ) else {
        return status_response(&ApiError::internal(
            "no user or request info in the request context",
        ));
    };
    let attrs = Attributes::from_request(user, info);
    let verdict = config.authorizer.authorize(&attrs);
    if verdict.decision != Decision::Allow {
        let mut message = attrs.forbidden_message();
        if !verdict.reason.is_empty() {
            message = format!("{message}: {}", verdict.reason);
        }
        let resource = GroupResource::new(attrs.api_group.clone(), attrs.resource.clone());
        return status_response(&ApiError::forbidden(&resource, &attrs.name, &message));
    }
    req.extensions_mut()
        .insert(AuthorizerRef(Arc::clone(&config.authorizer)));
    next.run(req).await
}
