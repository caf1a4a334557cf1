//! The request headers the aggregator sends to an aggregated API server: the caller's identity
//! as client-go's `transport.SetAuthProxyHeaders` writes it, after removing every header of
//! the client that could forge an identity or that belongs to one hop only; the client's
//! address appended to `X-Forwarded-For` and the `X-Forwarded-*` headers of apimachinery's
//! proxy transport; and the CORS headers removed from the answer.
//!
//! Every rewrite is one pass over the header names, compared with names known at build time:
//! removing each of a dozen fixed names one by one (`HeaderMap::remove(&str)` parses and hashes
//! the name every time) cost main about 15,000 instructions per proxied request, a tenth of
//! all it spent on a proxied GET (BENCHMARKS.md, "API aggregation").

use std::net::IpAddr;

use apimachinery::user::UserInfo;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// The user name header.
pub const REMOTE_USER: &str = "x-remote-user";
/// The user uid header.
pub const REMOTE_UID: &str = "x-remote-uid";
/// The group header (one per group).
pub const REMOTE_GROUP: &str = "x-remote-group";
/// The prefix of the extra headers (`X-Remote-Extra-<escaped key>`, one per value).
pub const REMOTE_EXTRA_PREFIX: &str = "x-remote-extra-";

/// The client addresses the request passed through, the last one the aggregator's client.
pub const FORWARDED_FOR: &str = "x-forwarded-for";
/// The path the client asked for.
pub const FORWARDED_URI: &str = "x-forwarded-uri";
/// The host the request was sent to.
pub const FORWARDED_HOST: &str = "x-forwarded-host";
/// The scheme the request was sent with.
pub const FORWARDED_PROTO: &str = "x-forwarded-proto";

/// [`REMOTE_USER`] as a header name.
const REMOTE_USER_NAME: HeaderName = HeaderName::from_static(REMOTE_USER);
/// [`REMOTE_UID`] as a header name.
const REMOTE_UID_NAME: HeaderName = HeaderName::from_static(REMOTE_UID);
/// [`REMOTE_GROUP`] as a header name.
const REMOTE_GROUP_NAME: HeaderName = HeaderName::from_static(REMOTE_GROUP);
/// [`FORWARDED_FOR`] as a header name.
const FORWARDED_FOR_NAME: HeaderName = HeaderName::from_static(FORWARDED_FOR);
/// [`FORWARDED_URI`] as a header name.
const FORWARDED_URI_NAME: HeaderName = HeaderName::from_static(FORWARDED_URI);
/// [`FORWARDED_HOST`] as a header name.
const FORWARDED_HOST_NAME: HeaderName = HeaderName::from_static(FORWARDED_HOST);
/// [`FORWARDED_PROTO`] as a header name.
const FORWARDED_PROTO_NAME: HeaderName = HeaderName::from_static(FORWARDED_PROTO);

/// The CORS headers of an aggregated server's answer, removed (apimachinery's
/// `removeCORSHeaders`: the aggregator answers CORS itself).
const CORS: [HeaderName; 4] = [
    header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
    header::ACCESS_CONTROL_ALLOW_HEADERS,
    header::ACCESS_CONTROL_ALLOW_METHODS,
    header::ACCESS_CONTROL_ALLOW_ORIGIN,
];

/// Whether `name` describes one connection and is never forwarded (RFC 7230 §6.1, as Go's
/// `httputil.ReverseProxy` removes them): `Connection` and `Upgrade` too unless `upgrade`
/// passes them on.
fn is_hop_by_hop(name: &HeaderName, upgrade: bool) -> bool {
    if *name == header::CONNECTION || *name == header::UPGRADE {
        return !upgrade;
    }
    *name == header::TE
        || *name == header::TRAILER
        || *name == header::TRANSFER_ENCODING
        || *name == header::PROXY_AUTHENTICATE
        || *name == header::PROXY_AUTHORIZATION
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

/// The names a request's or response's `Connection` headers list (hop-by-hop too), except
/// `upgrade` when an upgrade passes it on.
fn connection_named(headers: &HeaderMap, upgrade: bool) -> Vec<HeaderName> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !(s.is_empty() || upgrade && s.eq_ignore_ascii_case("upgrade")))
        .filter_map(|s| HeaderName::from_bytes(s.as_bytes()).ok())
        .collect()
}

/// Removes every header whose name `doomed` picks, in one pass over the names.
fn remove_where(headers: &mut HeaderMap, doomed: impl Fn(&HeaderName) -> bool) {
    let names: Vec<HeaderName> = headers.keys().filter(|n| doomed(n)).cloned().collect();
    for name in names {
        headers.remove(&name);
    }
}

/// Whether a byte may appear unescaped in a header name (an RFC 7230 `tchar`), except `%`,
/// which client-go escapes so that the key can be unescaped again.
fn legal_header_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b)
}

/// client-go's `headerKeyEscape`: every byte that is no header `tchar`, and `%`, as `%XX`
/// (upper-case hex), so a key such as `example.com/scopes` or a non-ASCII key survives as a
/// header name.
pub fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for &b in key.as_bytes() {
        if legal_header_byte(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether `name` is one of the headers that carry an identity to an aggregated server or to
/// this server (`X-Remote-*`, `Authorization`, `Impersonate-*`).
fn is_identity_header(name: &str) -> bool {
    name == REMOTE_USER
        || name == REMOTE_UID
        || name == REMOTE_GROUP
        || name.starts_with(REMOTE_EXTRA_PREFIX)
        || name == "authorization"
        || name.starts_with("impersonate-")
}

/// Rewrites the client's `headers` for the aggregated server: hop-by-hop headers (and those
/// the `Connection` header names) go, unless `upgrade` keeps `Connection` and `Upgrade`;
/// every identity header of the client (`X-Remote-*`, `Authorization`, `Impersonate-*`)
/// goes; then `user` is written as `X-Remote-User`, `X-Remote-Uid` (when it has one),
/// `X-Remote-Group` per group and `X-Remote-Extra-<escaped key>` per extra value. `Host` goes
/// too (the client sets it from the upstream address).
pub fn proxy_request_headers(headers: &mut HeaderMap, user: &UserInfo, upgrade: bool) {
    let named = connection_named(headers, upgrade);
    remove_where(headers, |name| {
        is_hop_by_hop(name, upgrade)
            || *name == header::HOST
            || is_identity_header(name.as_str())
            || named.contains(name)
    });
    set_identity(headers, user);
}

/// Writes `user` as client-go's `SetAuthProxyHeaders` does (after removing any identity
/// headers present). A value that is no valid header value (a control character) is left
/// out.
pub fn set_identity(headers: &mut HeaderMap, user: &UserInfo) {
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        headers.insert(REMOTE_USER_NAME, v);
    }
    if !user.uid.is_empty()
        && let Ok(v) = HeaderValue::from_str(&user.uid)
    {
        headers.insert(REMOTE_UID_NAME, v);
    }
    for group in &user.groups {
        if let Ok(v) = HeaderValue::from_str(group) {
            headers.append(REMOTE_GROUP_NAME, v);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) = HeaderName::from_bytes(
            format!("{REMOTE_EXTRA_PREFIX}{}", escape_extra_key(key)).as_bytes(),
        ) else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append(name.clone(), v);
            }
        }
    }
}

/// Removes the hop-by-hop headers of a request or response, and those its `Connection` header
/// names; `upgrade` keeps `Connection` and `Upgrade` (a protocol upgrade passes them on).
pub fn strip_hop_by_hop(headers: &mut HeaderMap, upgrade: bool) {
    let named = connection_named(headers, upgrade);
    remove_where(headers, |name| {
        is_hop_by_hop(name, upgrade) || named.contains(name)
    });
}

/// Whether a request asks for a protocol upgrade (`Connection: upgrade` with an `Upgrade`
/// header), as `httpstream.IsUpgradeRequest` decides.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|s| s.trim().eq_ignore_ascii_case("upgrade"))
}

/// Appends the client's address to `X-Forwarded-For` as Go's `httputil.ReverseProxy` and
/// apimachinery's `AppendForwardedForHeader` do: earlier values are kept, several headers
/// folded into one, joined by `, `. Without a client address the header is left as it is.
pub fn append_forwarded_for(headers: &mut HeaderMap, client: Option<IpAddr>) {
    let Some(client) = client else {
        return;
    };
    let mut value = String::new();
    for earlier in headers.get_all(&FORWARDED_FOR_NAME) {
        value.push_str(&String::from_utf8_lossy(earlier.as_bytes()));
        value.push_str(", ");
    }
    use std::fmt::Write;
    let _ = write!(value, "{client}");
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(FORWARDED_FOR_NAME, v);
    }
}

/// Sets the headers of apimachinery's proxy `Transport` on a request sent to `host` (the
/// backend's `host:port`) over HTTPS: `X-Forwarded-Uri` (the request's path, cleaned as Go's
/// `path.Join` cleans it, its trailing slash kept), `X-Forwarded-Host` and
/// `X-Forwarded-Proto`.
pub fn set_forwarded(headers: &mut HeaderMap, host: &str, path: &str) {
    let uri = if is_clean(path) {
        HeaderValue::from_str(path)
    } else {
        let mut uri = clean_path(path);
        if path.ends_with('/') && !uri.ends_with('/') {
            uri.push('/');
        }
        HeaderValue::from_str(&uri)
    };
    if let Ok(v) = uri {
        headers.insert(FORWARDED_URI_NAME, v);
    }
    if let Ok(v) = HeaderValue::from_str(host) {
        headers.insert(FORWARDED_HOST_NAME, v);
    }
    headers.insert(FORWARDED_PROTO_NAME, HeaderValue::from_static("https"));
}

/// Whether [`clean_path`] leaves the rooted `path` as it is, its trailing slash aside: no
/// empty, `.` or `..` element (what a client's request path nearly always is).
fn is_clean(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    rest.is_empty() || rest.split('/').all(|part| !matches!(part, "" | "." | ".."))
}

/// Go's `path.Clean`: repeated slashes, `.` and `..` elements removed (`..` at the root
/// stays at the root); an empty path is `.`.
pub fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Removes the CORS headers of an aggregated server's answer (see [`CORS`]).
pub fn remove_cors(headers: &mut HeaderMap) {
    remove_where(headers, |name| CORS.contains(name));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn user() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: BTreeMap::from([
                ("scopes".into(), vec!["a".into(), "b".into()]),
                ("example.com/ticket id%".into(), vec!["7".into()]),
            ]),
        }
    }

    #[test]
    fn extra_keys_are_escaped_as_client_go_does() {
        assert_eq!(escape_extra_key("scopes"), "scopes");
        assert_eq!(
            escape_extra_key("example.com/scopes"),
            "example.com%2Fscopes"
        );
        assert_eq!(escape_extra_key("a b%c"), "a%20b%25c");
        assert_eq!(escape_extra_key("ключ"), "%D0%BA%D0%BB%D1%8E%D1%87");
        assert_eq!(escape_extra_key("x!#$&'*+-.^_`|~9"), "x!#$&'*+-.^_`|~9");
    }

    #[test]
    fn the_callers_identity_replaces_forged_headers() {
        let mut h = HeaderMap::new();
        h.insert("x-remote-user", HeaderValue::from_static("mallory"));
        h.append("x-remote-group", HeaderValue::from_static("system:masters"));
        h.insert("x-remote-extra-foo", HeaderValue::from_static("bar"));
        h.insert("X-Remote-Uid", HeaderValue::from_static("0"));
        h.insert("authorization", HeaderValue::from_static("Bearer secret"));
        h.insert("impersonate-user", HeaderValue::from_static("root"));
        h.insert("accept", HeaderValue::from_static("application/json"));
        h.insert("audit-id", HeaderValue::from_static("abc"));
        proxy_request_headers(&mut h, &user(), false);
        assert_eq!(h.get("x-remote-user").unwrap(), "alice");
        assert_eq!(h.get("x-remote-uid").unwrap(), "u-1");
        let groups: Vec<_> = h.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, ["devs", "system:authenticated"]);
        assert!(h.get("x-remote-extra-foo").is_none());
        let scopes: Vec<_> = h.get_all("x-remote-extra-scopes").iter().collect();
        assert_eq!(scopes, ["a", "b"]);
        assert_eq!(
            h.get("x-remote-extra-example.com%2Fticket%20id%25")
                .unwrap(),
            "7"
        );
        assert!(h.get("authorization").is_none());
        assert!(h.get("impersonate-user").is_none());
        assert_eq!(h.get("accept").unwrap(), "application/json");
        assert_eq!(h.get("audit-id").unwrap(), "abc");
    }

    #[test]
    fn no_uid_header_without_a_uid() {
        let mut h = HeaderMap::new();
        let mut u = user();
        u.uid.clear();
        proxy_request_headers(&mut h, &u, false);
        assert!(h.get("x-remote-uid").is_none());
    }

    #[test]
    fn hop_by_hop_headers_go_and_upgrades_keep_theirs() {
        let mut h = HeaderMap::new();
        h.insert(
            "connection",
            HeaderValue::from_static("keep-alive, x-private"),
        );
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        h.insert("upgrade", HeaderValue::from_static("websocket"));
        h.insert("host", HeaderValue::from_static("client.example"));
        assert!(!is_upgrade(&h));
        proxy_request_headers(&mut h, &user(), false);
        for gone in [
            "connection",
            "x-private",
            "keep-alive",
            "transfer-encoding",
            "upgrade",
            "host",
        ] {
            assert!(h.get(gone).is_none(), "{gone}");
        }
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("Upgrade"));
        h.insert("upgrade", HeaderValue::from_static("SPDY/3.1"));
        assert!(is_upgrade(&h));
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h.get("upgrade").unwrap(), "SPDY/3.1");
        assert_eq!(h.get("connection").unwrap(), "Upgrade");
    }

    #[test]
    fn the_client_is_appended_to_x_forwarded_for() {
        let client: IpAddr = "10.0.0.9".parse().unwrap();
        let mut h = HeaderMap::new();
        append_forwarded_for(&mut h, Some(client));
        assert_eq!(h.get(FORWARDED_FOR).unwrap(), "10.0.0.9");
        let mut h = HeaderMap::new();
        h.append(FORWARDED_FOR, HeaderValue::from_static("203.0.113.7"));
        h.append(
            FORWARDED_FOR,
            HeaderValue::from_static("198.51.100.1, 192.0.2.4"),
        );
        append_forwarded_for(&mut h, Some("::1".parse().unwrap()));
        let all: Vec<_> = h.get_all(FORWARDED_FOR).iter().collect();
        assert_eq!(all, ["203.0.113.7, 198.51.100.1, 192.0.2.4, ::1"]);
        let mut h = HeaderMap::new();
        append_forwarded_for(&mut h, None);
        assert!(h.is_empty());
    }

    #[test]
    fn forwarded_headers_are_those_of_apimachinerys_transport() {
        let mut h = HeaderMap::new();
        h.insert(FORWARDED_PROTO, HeaderValue::from_static("http"));
        set_forwarded(&mut h, "api.wardle.svc:443", "/apis/w/v1//a/./b/../c/");
        assert_eq!(h.get(FORWARDED_URI).unwrap(), "/apis/w/v1/a/c/");
        assert_eq!(h.get(FORWARDED_HOST).unwrap(), "api.wardle.svc:443");
        assert_eq!(h.get(FORWARDED_PROTO).unwrap(), "https");
        for (path, clean) in [
            ("", "."),
            ("/", "/"),
            ("/..", "/"),
            ("a/../..", ".."),
            ("/apis/x/v1", "/apis/x/v1"),
            ("//apis///x", "/apis/x"),
        ] {
            assert_eq!(clean_path(path), clean, "{path:?}");
        }
        // A path already clean is sent as it is, its trailing slash kept.
        for (path, sent) in [
            ("/apis/x/v1/flunders", "/apis/x/v1/flunders"),
            ("/apis/x/v1/", "/apis/x/v1/"),
            ("/", "/"),
            ("/apis/x/..", "/apis"),
            ("/apis/./x/", "/apis/x/"),
            ("/apis//x", "/apis/x"),
            ("/apis/x//", "/apis/x/"),
        ] {
            let mut h = HeaderMap::new();
            set_forwarded(&mut h, "h:1", path);
            assert_eq!(h.get(FORWARDED_URI).unwrap(), sent, "{path:?}");
        }
    }

    #[test]
    fn cors_headers_of_the_answer_go() {
        let mut h = HeaderMap::new();
        for name in CORS {
            h.insert(name, HeaderValue::from_static("*"));
        }
        h.insert("content-type", HeaderValue::from_static("application/json"));
        h.insert(
            "access-control-expose-headers",
            HeaderValue::from_static("x"),
        );
        remove_cors(&mut h);
        assert_eq!(h.len(), 2);
        assert!(h.contains_key("access-control-expose-headers"));
    }
}
