//! What a request is about, parsed from its method, path and query exactly as Kubernetes'
//! `RequestInfoFactory` does (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`).
//!
//! The filter chain parses every request once and stores the [`RequestInfo`] as a request
//! extension; authorization, the REST handlers and metrics read it from there.

use std::borrow::Cow;

use apimachinery::meta::options::ListOptions;
use apimachinery::query::{Query, first_value, query_bool};
use apimachinery::validation::is_path_segment_name;
use http::Method;

/// Path prefixes under which resource requests live.
const API_PREFIXES: [&str; 2] = ["api", "apis"];
/// The prefix whose group is implicit (the core group).
const GROUPLESS_PREFIX: &str = "api";
/// Path segments that act as verbs (`/api/v1/watch/...`, `/api/v1/proxy/...`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Subresources of a namespace, which keep `/namespaces/{ns}/{sub}` a namespaces request.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// The parsed facts of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether the path addresses an API resource (under `/api/{v}` or `/apis/{g}/{v}`).
    pub is_resource_request: bool,
    /// The URL path.
    pub path: String,
    /// The verb: for resource requests `get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection` or `proxy`; for other paths the lowercase HTTP method.
    pub verb: String,
    /// `api` or `apis` for resource requests.
    pub api_prefix: String,
    /// The group; empty for the core group.
    pub api_group: String,
    /// The version.
    pub api_version: String,
    /// The namespace; empty for cluster-scoped requests.
    pub namespace: String,
    /// The resource (plural), such as `widgets`.
    pub resource: String,
    /// The subresource, such as `status`.
    pub subresource: String,
    /// The object name; empty for collections.
    pub name: String,
    /// The path segments from the resource on.
    pub parts: Vec<String>,
}

/// Why a request path could not be interpreted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to determine kind and namespace from url {0}")]
pub struct RequestInfoError(pub String);

/// Returns the first value of a query parameter as `URL.Query().Get` finds it
/// ([`apimachinery::query::first_value`]).
pub fn query_param(query: &str, key: &str) -> Option<String> {
    first_value(query, key).map(Cow::into_owned)
}

/// Decodes `%XX` escapes and `+` (as space) of a query component.
pub fn percent_decode(s: &str) -> String {
    decode_escapes(s, true).into_owned()
}

/// Decodes the `%XX` escapes of a URL path, as Go's `url.URL.Path` holds it (which is what
/// Kubernetes' request info, routing and handlers read): `marker%2D1` is `marker-1`, and an
/// escaped `/` (`%2F`) becomes a path separator like any other. `+` stays `+`. An escape that
/// is not two hex digits stays as written (Go's server refuses such a request line).
pub fn percent_decode_path(path: &str) -> std::borrow::Cow<'_, str> {
    decode_escapes(path, false)
}

fn decode_escapes(s: &str, plus_is_space: bool) -> std::borrow::Cow<'_, str> {
    if !(s.contains('%') || plus_is_space && s.contains('+')) {
        return std::borrow::Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The `/`-separated segments of a path without its leading and trailing slashes (none for
/// `/`); inner empty segments are kept.
fn path_segments(path: &str) -> Vec<&str> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return Vec::new();
    }
    let mut segments = Vec::with_capacity(8);
    let mut start = 0;
    for (i, b) in trimmed.bytes().enumerate() {
        if b == b'/' {
            segments.push(&trimmed[start..i]);
            start = i + 1;
        }
    }
    segments.push(&trimmed[start..]);
    segments
}

/// Whether a collection `get` is a watch, and the object name its field selector requires, as
/// Kubernetes' `RequestInfoFactory` reads them: the query decoded as `ListOptions` (selectors
/// included); when that fails, only `watch` is read and no name is taken.
fn watch_and_name(query: &str) -> (bool, Option<String>) {
    if query.is_empty() {
        return (false, None);
    }
    let q = Query::parse(query);
    let decoded = ListOptions::from_query(&q).ok().and_then(|o| {
        o.parse_label_selector().ok()?;
        Some((o.watch, o.parse_field_selector().ok()?))
    });
    match decoded {
        Some((watch, fields)) => {
            let name = fields
                .exact("metadata.name")
                .filter(|n| is_path_segment_name(n).is_empty())
                .map(str::to_string);
            (watch, name)
        }
        None => (q.get("watch").is_some_and(query_bool), None),
    }
}

impl RequestInfo {
    /// Parses a request as Kubernetes does. `path` is the path as sent (its escapes are
    /// decoded here, see [`percent_decode_path`]); `query` is the raw query string (without
    /// `?`).
    pub fn parse(method: &Method, path: &str, query: &str) -> Result<Self, RequestInfoError> {
        let decoded = percent_decode_path(path);
        let path: &str = &decoded;
        let segments = path_segments(path);
        let [prefix, second, _, ..] = segments[..] else {
            return Ok(Self::non_resource(method, path));
        };
        if !API_PREFIXES.contains(&prefix) {
            return Ok(Self::non_resource(method, path));
        }
        // The segments after the prefix (and the group, for `/apis`).
        let (api_group, rest) = if prefix == GROUPLESS_PREFIX {
            ("", &segments[1..])
        } else if segments.len() < 4 {
            return Ok(Self::non_resource(method, path));
        } else {
            (second, &segments[2..])
        };
        let [api_version, ref rest @ ..] = rest[..] else {
            return Ok(Self::non_resource(method, path));
        };
        let mut via_special_verb = false;
        let (verb, mut parts) = match rest {
            [first, more @ ..] if SPECIAL_VERBS.contains(first) => {
                if more.is_empty() {
                    return Err(RequestInfoError(path.to_string()));
                }
                via_special_verb = true;
                (*first, more)
            }
            _ => {
                let verb = match *method {
                    Method::POST => "create",
                    Method::GET | Method::HEAD => "get",
                    Method::PUT => "update",
                    Method::PATCH => "patch",
                    Method::DELETE => "delete",
                    _ => "",
                };
                (verb, rest)
            }
        };

        // `/namespaces/{ns}/...`: the namespace, and the parts start after it unless the path is
        // the namespace itself or one of its subresources.
        let mut namespace = "";
        if let [first, ns, more @ ..] = parts
            && *first == "namespaces"
        {
            namespace = ns;
            if more
                .first()
                .is_some_and(|sub| !NAMESPACE_SUBRESOURCES.contains(sub))
            {
                parts = more;
            }
        }
        let mut info = RequestInfo {
            is_resource_request: true,
            path: path.to_string(),
            verb: verb.to_string(),
            api_prefix: prefix.to_string(),
            api_group: api_group.to_string(),
            api_version: api_version.to_string(),
            namespace: namespace.to_string(),
            resource: parts.first().map(|s| s.to_string()).unwrap_or_default(),
            subresource: parts
                .get(2)
                .filter(|_| !via_special_verb)
                .map(|s| s.to_string())
                .unwrap_or_default(),
            name: parts.get(1).map(|s| s.to_string()).unwrap_or_default(),
            parts: parts.iter().map(|s| s.to_string()).collect(),
        };

        if info.name.is_empty() && info.verb == "get" {
            let (watch, name) = watch_and_name(query);
            info.verb = if watch { "watch" } else { "list" }.to_string();
            if let Some(name) = name {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        Ok(info)
    }

    /// The facts of a request outside the API resource paths: its path and lowercase method.
    fn non_resource(method: &Method, path: &str) -> Self {
        RequestInfo {
            path: path.to_string(),
            verb: method.as_str().to_ascii_lowercase(),
            ..RequestInfo::default()
        }
    }

    /// Whether the path names a namespace before its resource (`/namespaces/{ns}/{resource}`),
    /// as opposed to the namespace object itself and its subresources
    /// (`/namespaces/{ns}[/status|/finalize]`).
    pub fn is_namespaced_path(&self) -> bool {
        if self.namespace.is_empty() {
            return false;
        }
        // The parts start after `namespaces/{ns}` exactly when the path was of the namespaced
        // form: the two segments before them are then `namespaces` and the namespace.
        let segments: Vec<&str> = self.path.split('/').filter(|s| !s.is_empty()).collect();
        segments
            .len()
            .checked_sub(self.parts.len() + 2)
            .is_some_and(|i| segments[i] == "namespaces")
    }

    /// Whether the request is long-running (watch, proxy, or a `watch=true` request), which
    /// exempts it from the request timeout.
    pub fn is_long_running(&self) -> bool {
        self.is_resource_request && matches!(self.verb.as_str(), "watch" | "proxy")
            || matches!(
                self.subresource.as_str(),
                "proxy" | "log" | "exec" | "attach" | "portforward"
            )
    }

    /// Whether the request only reads.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "get" | "list" | "watch" | "head" | "options"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(m: Method, p: &str, q: &str) -> RequestInfo {
        RequestInfo::parse(&m, p, q).unwrap_or_default()
    }

    #[test]
    fn resources() {
        let r = parse(
            Method::GET,
            "/apis/example.dev/v1/namespaces/default/widgets/foo",
            "",
        );
        assert!(r.is_resource_request);
        assert_eq!(
            (
                r.verb.as_str(),
                r.api_group.as_str(),
                r.api_version.as_str(),
                r.namespace.as_str()
            ),
            ("get", "example.dev", "v1", "default")
        );
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.subresource.as_str()),
            ("widgets", "foo", "")
        );

        let r = parse(
            Method::PUT,
            "/apis/example.dev/v1/namespaces/default/widgets/foo/status",
            "",
        );
        assert_eq!(
            (r.verb.as_str(), r.subresource.as_str()),
            ("update", "status")
        );

        let r = parse(Method::GET, "/api/v1/namespaces/default", "");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "default", "default")
        );
        assert!(!r.is_namespaced_path());
        assert!(!parse(Method::PUT, "/api/v1/namespaces/x/finalize", "").is_namespaced_path());
        assert!(parse(Method::GET, "/api/v1/namespaces/x/configmaps", "").is_namespaced_path());
        assert!(parse(Method::GET, "/api/v1/namespaces/x/namespaces/y", "").is_namespaced_path());
        assert!(
            parse(
                Method::GET,
                "/apis/rbac.authorization.k8s.io/v1/namespaces/x/clusterroles",
                ""
            )
            .is_namespaced_path()
        );
        assert!(!parse(Method::GET, "/api/v1/configmaps", "").is_namespaced_path());

        let r = parse(Method::PUT, "/api/v1/namespaces/x/finalize", "");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.subresource.as_str()),
            ("namespaces", "x", "finalize")
        );

        let r = parse(Method::GET, "/api/v1/namespaces", "");
        assert_eq!(
            (r.verb.as_str(), r.resource.as_str()),
            ("list", "namespaces")
        );

        let r = parse(Method::GET, "/api/v1/configmaps", "watch=true");
        assert_eq!(r.verb, "watch");
        let r = parse(Method::GET, "/api/v1/configmaps", "watch=0");
        assert_eq!(r.verb, "list");
        let r = parse(
            Method::GET,
            "/api/v1/namespaces/d/configmaps",
            "fieldSelector=metadata.name%3Dabc&watch=1",
        );
        assert_eq!((r.verb.as_str(), r.name.as_str()), ("watch", "abc"));
        let r = parse(Method::GET, "/api/v1/watch/namespaces/d/configmaps", "");
        assert_eq!(
            (r.verb.as_str(), r.resource.as_str(), r.namespace.as_str()),
            ("watch", "configmaps", "d")
        );

        let r = parse(Method::GET, "/api/v1/proxy/namespaces/d/pods/p/x", "");
        assert_eq!(
            (
                r.verb.as_str(),
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str(),
                r.subresource.as_str()
            ),
            ("proxy", "d", "pods", "p", "")
        );
        assert_eq!(r.parts, ["pods", "p", "x"]);
        let r = parse(Method::PUT, "/api/v1/namespaces/d/status", "");
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.subresource.as_str()),
            ("namespaces", "d", "status")
        );
        let r = parse(Method::GET, "//apis/g/v1/widgets/", "");
        assert_eq!(
            (
                r.api_prefix.as_str(),
                r.api_group.as_str(),
                r.verb.as_str(),
                r.resource.as_str()
            ),
            ("apis", "g", "list", "widgets")
        );
        assert_eq!(r.path, "//apis/g/v1/widgets/");

        let r = parse(
            Method::DELETE,
            "/apis/example.dev/v1/namespaces/d/widgets",
            "",
        );
        assert_eq!(r.verb, "deletecollection");
        let r = parse(
            Method::POST,
            "/apis/example.dev/v1/namespaces/d/widgets",
            "",
        );
        assert_eq!(r.verb, "create");
    }

    #[test]
    fn collection_gets_read_the_query_as_list_options() {
        let get = |q: &str| parse(Method::GET, "/api/v1/namespaces/d/configmaps", q);
        // Booleans are the parameter codec's: only `0` and `false` are false.
        for (q, verb) in [
            ("watch=f", "watch"),
            ("watch=", "watch"),
            ("watch", "watch"),
            ("watch=FALSE", "list"),
            ("watch=0", "list"),
            ("", "list"),
        ] {
            assert_eq!(get(q).verb, verb, "{q}");
        }
        // The first exact name term counts; `!=` terms and invalid path segments do not.
        let r = get("fieldSelector=metadata.name%3Da,metadata.name%3Db");
        assert_eq!(r.name, "a");
        assert_eq!(get("fieldSelector=metadata.name!%3Da").name, "");
        assert_eq!(get("fieldSelector=metadata.name%3D..").name, "");
        assert_eq!(get("fieldSelector=metadata.name%3Da%20b").name, "a b");
        assert_eq!(get("fieldSelector=metadata.name%3D%2520").name, "");
        assert_eq!(get("fieldSelector=metadata.name%3D%25").name, "");
        // A query that does not decode keeps only `watch`.
        for q in [
            "fieldSelector=metadata.name%3Dabc&watch=true&limit=x",
            "fieldSelector=metadata.name%3Dabc&watch=true&labelSelector=a%20b",
        ] {
            let r = get(q);
            assert_eq!((r.verb.as_str(), r.name.as_str()), ("watch", ""), "{q}");
        }
        // Malformed pairs are dropped as `URL.Query()` drops them.
        assert_eq!(get("watch=%zz&watch=1").verb, "watch");
        assert_eq!(query_param("a=%zz&a=2", "a").as_deref(), Some("2"));
        assert_eq!(query_param("x+y=1", "x y").as_deref(), Some("1"));
    }

    #[test]
    fn non_resources() {
        for p in [
            "/",
            "/api",
            "/api/v1",
            "/apis",
            "/apis/example.dev",
            "/apis/example.dev/v1",
            "/healthz",
            "/openapi/v2",
        ] {
            let r = parse(Method::GET, p, "");
            assert!(!r.is_resource_request, "{p}");
            assert_eq!(r.verb, "get");
        }
        assert_eq!(parse(Method::POST, "/foo", "").verb, "post");
        assert!(RequestInfo::parse(&Method::GET, "/api/v1/watch", "").is_err());
    }

    /// The path is read decoded, as Go's `URL.Path`: escapes in any segment are decoded, an
    /// escaped slash separates segments, `+` is literal and a broken escape stays as sent.
    #[test]
    fn escaped_paths_are_decoded() {
        let r = parse(
            Method::GET,
            "/api/v1/namespaces/de%66ault/config%6Daps/marker%2D1",
            "",
        );
        assert_eq!(
            (r.namespace.as_str(), r.resource.as_str(), r.name.as_str()),
            ("default", "configmaps", "marker-1")
        );
        assert_eq!(r.path, "/api/v1/namespaces/default/configmaps/marker-1");
        let r = parse(Method::GET, "/api/v1/namespaces/d/configmaps/a%2Fb", "");
        assert_eq!((r.name.as_str(), r.subresource.as_str()), ("a", "b"));
        assert_eq!(r.parts, ["configmaps", "a", "b"]);
        let r = parse(Method::GET, "/api/v1/namespaces/d/configmaps/a+b%zz%4", "");
        assert_eq!(r.name, "a+b%zz%4");
        let r = parse(Method::GET, "/%61pis/example.dev/v1/widgets", "");
        assert_eq!((r.api_prefix.as_str(), r.verb.as_str()), ("apis", "list"));
        assert_eq!(percent_decode_path("/a%20b+c"), "/a b+c");
        assert_eq!(percent_decode("a%20b+c"), "a b c");
    }
}
