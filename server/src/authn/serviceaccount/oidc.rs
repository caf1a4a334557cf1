//! The service-account issuer's discovery documents, as kube-apiserver serves them:
//! `/.well-known/openid-configuration` and the key set at `/openid/v1/jwks` (non-resource paths,
//! authorized as `get`).

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};
use serde_json::json;

use super::ServiceAccountTokens;
use super::keys::algorithm_name;
use crate::genericserver::director::{Delegate, DelegateFuture};

/// The discovery document's path.
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";
/// The key set's path.
pub const JWKS_PATH: &str = "/openid/v1/jwks";

/// Serves the two documents, rendered once.
pub struct OidcDiscovery {
    configuration: Bytes,
    jwks: Bytes,
}

impl OidcDiscovery {
    /// The documents of `tokens`' issuer; `jwks_uri` is where clients fetch the key set
    /// (`https://<the server's address>/openid/v1/jwks`).
    pub fn new(tokens: &ServiceAccountTokens, jwks_uri: &str) -> Self {
        // The algorithms of the verifying keys, sorted and once each (kube-apiserver's
        // `getAlgs`).
        let mut algorithms: Vec<&str> = tokens
            .public_keys()
            .iter()
            .map(|k| algorithm_name(k.algorithm()))
            .collect();
        algorithms.sort_unstable();
        algorithms.dedup();
        let configuration = json!({
            "issuer": tokens.issuer(),
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algorithms,
        });
        let mut keys: Vec<_> = tokens.public_keys().iter().map(|k| k.jwk()).collect();
        keys.dedup();
        let jwks = json!({ "keys": keys });
        Self {
            configuration: Bytes::from(configuration.to_string()),
            jwks: Bytes::from(jwks.to_string()),
        }
    }

    fn respond(body: &Bytes, content_type: &'static str) -> Response<Body> {
        let mut resp = Response::new(Body::from(body.clone()));
        let headers = resp.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=3600"),
        );
        resp
    }
}

impl Delegate for OidcDiscovery {
    fn handle(&self, req: Request<Body>) -> DelegateFuture {
        let read = matches!(*req.method(), Method::GET | Method::HEAD);
        let resp = match crate::request_target::of(req.uri(), req.extensions()).path() {
            DISCOVERY_PATH if read => Some(OidcDiscovery::respond(
                &self.configuration,
                "application/json",
            )),
            JWKS_PATH if read => Some(OidcDiscovery::respond(
                &self.jwks,
                "application/jwk-set+json",
            )),
            _ => None,
        };
        Box::pin(async move { resp.ok_or(req) })
    }

    fn root_paths(&self) -> Vec<String> {
        vec![DISCOVERY_PATH.to_string(), JWKS_PATH.to_string()]
    }
}
