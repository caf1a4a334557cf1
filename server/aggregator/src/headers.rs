//! The request headers the aggregator sends to an aggregated API server: the caller's identity
//! as client-go's `transport.SetAuthProxyHeaders` writes it, after removing every header of
//! the client that could forge an identity or that belongs to one hop only.

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

/// Headers that describe one connection, never forwarded (RFC 7230 §6.1, as Go's
/// `httputil.ReverseProxy` removes them).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

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
    strip_hop_by_hop(headers, upgrade);
    headers.remove(header::HOST);
    let forged: Vec<HeaderName> = headers
        .keys()
        .filter(|k| is_identity_header(k.as_str()))
        .cloned()
        .collect();
    for name in forged {
        headers.remove(name);
    }
    set_identity(headers, user);
}

/// Writes `user` as client-go's `SetAuthProxyHeaders` does (after removing any identity
/// headers present). A value that is no valid header value (a control character) is left
/// out.
pub fn set_identity(headers: &mut HeaderMap, user: &UserInfo) {
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        headers.insert(REMOTE_USER, v);
    }
    if !user.uid.is_empty()
        && let Ok(v) = HeaderValue::from_str(&user.uid)
    {
        headers.insert(REMOTE_UID, v);
    }
    for group in &user.groups {
        if let Ok(v) = HeaderValue::from_str(group) {
            headers.append(REMOTE_GROUP, v);
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
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !(s.is_empty() || upgrade && s == "upgrade"))
        .collect();
    for name in named {
        headers.remove(name.as_str());
    }
    for name in HOP_BY_HOP {
        if upgrade && name == "connection" {
            continue;
        }
        headers.remove(name);
    }
    if !upgrade {
        headers.remove(header::UPGRADE);
    }
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
}
