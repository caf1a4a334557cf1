//! Authentication checks, version v1: review objects that ask the server who a token or the
//! requester is. They are created and answered, never stored. Shapes and protobuf numbers
//! follow Kubernetes' `k8s.io/api/authentication/v1`.
#![group = "authentication.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.authentication.v1"]

/// Asks the server to authenticate a token; the answer may be cached by the caller.
#[kind(cluster, create_only, strategic_merge_patch)]
pub struct TokenReview {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The token to check.
    #[proto(2)]
    pub spec: TokenReviewSpec,
    /// The answer, filled in by the server.
    #[proto(3)]
    pub status: TokenReviewStatus,
}

/// The token to authenticate.
pub struct TokenReviewSpec {
    /// The opaque bearer token.
    #[proto(1, by_value)]
    pub token: Option<String>,
    /// The audiences the caller accepts; the token must be valid for at least one of them.
    /// Empty means the server's own audiences.
    #[proto(2)]
    #[list(type = "atomic")]
    pub audiences: Vec<String>,
}

/// The result of authenticating a token.
pub struct TokenReviewStatus {
    /// Whether the token identifies a user.
    #[proto(1, by_value)]
    pub authenticated: Option<bool>,
    /// The user the token belongs to.
    #[proto(2)]
    pub user: UserInfo,
    /// The audiences, among those asked for, the token is valid for. When the request named
    /// none, the server's own audiences.
    #[proto(4)]
    #[list(type = "atomic")]
    pub audiences: Vec<String>,
    /// Why authentication failed, if it did.
    #[proto(3, by_value)]
    pub error: Option<String>,
}

/// The identity of an authenticated user.
pub struct UserInfo {
    /// The name that uniquely identifies the user over time.
    #[proto(1, by_value)]
    pub username: Option<String>,
    /// A unique value that tells apart users who have had the same name over time.
    #[proto(2, by_value)]
    pub uid: Option<String>,
    /// The groups the user belongs to.
    #[proto(3)]
    #[list(type = "atomic")]
    pub groups: Vec<String>,
    /// Extra attributes provided by the authenticator.
    #[proto(4)]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Returns the user attributes the server authenticated the requester as.
#[kind(cluster, create_only, strategic_merge_patch)]
pub struct SelfSubjectReview {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The requester's identity, filled in by the server.
    #[proto(2)]
    pub status: SelfSubjectReviewStatus,
}

/// The identity of the requester of a SelfSubjectReview.
pub struct SelfSubjectReviewStatus {
    /// The user attributes of the requester.
    #[proto(1)]
    pub user_info: UserInfo,
}

/// Requests a token for a ServiceAccount: the body and answer of the ServiceAccount's `token`
/// subresource (it is not a resource of its own).
#[gvk(group = "authentication.k8s.io", version = "v1")]
pub struct TokenRequest {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// What the token is for.
    #[proto(2)]
    pub spec: TokenRequestSpec,
    /// The token, filled in by the server.
    #[proto(3)]
    pub status: TokenRequestStatus,
}

/// The audiences, lifetime and binding of a requested token.
pub struct TokenRequestSpec {
    /// The intended audiences of the token; empty means the API server's own.
    #[proto(1)]
    #[list(type = "atomic")]
    pub audiences: Vec<String>,
    /// The requested duration of validity, in seconds; at least 600.
    #[proto(4)]
    #[default(3600)]
    pub expiration_seconds: Option<i64>,
    /// The object the token is bound to: the token stops working when it is deleted.
    #[proto(3)]
    pub bound_object_ref: Option<BoundObjectReference>,
}

/// A reference to the object a token is bound to.
pub struct BoundObjectReference {
    /// The referent's kind: `Pod`, `Secret` or `Node`.
    #[proto(1, by_value)]
    pub kind: Option<String>,
    /// The referent's API version.
    #[proto(2, by_value)]
    pub api_version: Option<String>,
    /// The referent's name.
    #[proto(3, by_value)]
    pub name: Option<String>,
    /// The referent's uid.
    #[proto(4, by_value)]
    pub uid: Option<String>,
}

/// The issued token.
pub struct TokenRequestStatus {
    /// The opaque bearer token.
    #[proto(1, by_value)]
    #[json(keep_zero)]
    pub token: Option<String>,
    /// When the token expires.
    #[proto(2, by_value)]
    #[json(always)]
    pub expiration_timestamp: Option<Time>,
}
