//! The path and query of a request, wherever its request-target travelled.
//!
//! The `http` crate's URIs stop at 64 KiB, Go's at the 1 MiB request head. A request-target
//! longer than a URI holds is read by the listener's adapters (`genericserver::serve::
//! long_target` for HTTP/1.1, `long_target_h2` for h2), which hand hyper the request with the
//! short target [`LONG_TARGET_PATH`]; the full target becomes the request's [`LongTarget`]
//! extension. Every
//! reader of a request's path or query goes through [`of`], so it sees the full target either
//! way.

use std::sync::Arc;

use http::{Extensions, Uri};

/// The request-target the listener gives a request whose own target is carried in its
/// [`LongTarget`] extension. Without that extension it is an ordinary path, which no handler
/// serves (404).
pub const LONG_TARGET_PATH: &str = "/.apiary/long-request-target";

/// The header in which the listener's h2 adapter (`genericserver::serve::long_target_h2`)
/// carries the full target of a request it gave [`LONG_TARGET_PATH`]. The adapter removes it
/// from every header block a client sends, so on an h2 connection it only ever comes from the
/// adapter; the connection's service turns it into the request's [`LongTarget`].
pub const LONG_TARGET_HEADER: &str = "apiary-long-request-target";

/// The full origin-form request-target (path and query) of a request that is too
/// long for `http::Uri`, checked with the `http` crate's rules for the characters of a path and
/// a query.
#[derive(Clone, Debug)]
pub struct LongTarget {
    target: Arc<str>,
    /// Where the query starts (after `?`), if there is one.
    query: Option<usize>,
}

impl LongTarget {
    /// Checks `target` as `http::uri::PathAndQuery` does for a short one (an origin-form
    /// target: a `/` first, the characters a path and a query may have, no fragment); `None`
    /// when it does not pass.
    pub fn parse(target: &[u8]) -> Option<LongTarget> {
        let target = std::str::from_utf8(target).ok()?;
        if !target.starts_with('/') || target.contains('#') {
            return None;
        }
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        // The same checks as a URI's, in pieces a URI holds (they look at one character at a
        // time): the path, then the query.
        if !pieces_pass(path, "") || !query.is_none_or(|q| pieces_pass(q, "/?")) {
            return None;
        }
        Some(LongTarget {
            query: query.map(|_| path.len() + 1),
            target: target.into(),
        })
    }

    /// The whole target.
    pub fn as_str(&self) -> &str {
        &self.target
    }
}

/// Whether `part` passes `http::uri::PathAndQuery`'s checks a piece at a time, each piece
/// after `prefix`.
fn pieces_pass(part: &str, prefix: &str) -> bool {
    const PIECE: usize = 32 * 1024;
    let mut rest = part;
    let mut first = true;
    while !rest.is_empty() {
        let mut end = rest.len().min(PIECE);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (piece, tail) = rest.split_at(end);
        // A path's later pieces follow a `/` of their own.
        let lead = if first || !prefix.is_empty() {
            prefix
        } else {
            "/"
        };
        if http::uri::PathAndQuery::try_from(format!("{lead}{piece}")).is_err() {
            return false;
        }
        rest = tail;
        first = false;
    }
    true
}

/// A request's path and query, borrowed from its URI or its [`LongTarget`].
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    path: &'a str,
    query: Option<&'a str>,
    whole: &'a str,
}

impl<'a> Target<'a> {
    /// The path.
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// The query without `?` (empty when there is none).
    pub fn query(&self) -> &'a str {
        self.query.unwrap_or("")
    }

    /// The path and query as sent (Kubernetes' `requestURI`).
    pub fn path_and_query(&self) -> &'a str {
        self.whole
    }
}

/// The target of a request with `uri` and `extensions`.
#[inline]
pub fn of<'a>(uri: &'a Uri, extensions: &'a Extensions) -> Target<'a> {
    let long = if uri.path() == LONG_TARGET_PATH {
        extensions.get::<LongTarget>()
    } else {
        None
    };
    with(uri, long)
}

/// The target of a request with `uri` whose [`LongTarget`] extension, if any, is `long`.
pub fn with<'a>(uri: &'a Uri, long: Option<&'a LongTarget>) -> Target<'a> {
    if uri.path() == LONG_TARGET_PATH
        && let Some(long) = long
    {
        let whole = long.as_str();
        return Target {
            path: &whole[..long.query.map_or(whole.len(), |q| q - 1)],
            query: long.query.map(|q| &whole[q..]),
            whole,
        };
    }
    Target {
        path: uri.path(),
        query: uri.query(),
        whole: uri
            .path_and_query()
            .map_or_else(|| uri.path(), |p| p.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_query(len: usize) -> String {
        format!("/api/v1/configmaps?labelSelector={}", "a".repeat(len))
    }

    #[test]
    fn a_long_target_is_read_whole() {
        let raw = long_query(100_000);
        let long = LongTarget::parse(raw.as_bytes()).unwrap_or_else(|| panic!("refused"));
        let mut ext = Extensions::new();
        ext.insert(long);
        let uri = Uri::from_static(LONG_TARGET_PATH);
        let t = of(&uri, &ext);
        assert_eq!(t.path(), "/api/v1/configmaps");
        assert_eq!(t.query().len(), "labelSelector=".len() + 100_000);
        assert_eq!(t.path_and_query(), raw);
        // Only the listener's short target reads the extension.
        let other = Uri::from_static("/api/v1/secrets?x=1");
        let t = of(&other, &ext);
        assert_eq!((t.path(), t.query()), ("/api/v1/secrets", "x=1"));
        assert_eq!(t.path_and_query(), "/api/v1/secrets?x=1");
        // Without the extension the short target is an ordinary path.
        let none = Extensions::new();
        let t = of(&uri, &none);
        assert_eq!((t.path(), t.query()), (LONG_TARGET_PATH, ""));
    }

    #[test]
    fn a_long_target_has_the_characters_of_a_uri() {
        let no_query = format!("/{}", "p".repeat(70_000));
        let t = LongTarget::parse(no_query.as_bytes()).unwrap_or_else(|| panic!("refused"));
        assert_eq!(t.query, None);
        for bad in [
            format!("{}\"", long_query(70_000)),
            format!("{}<", long_query(70_000)),
            format!("{}#frag", long_query(70_000)),
            format!("api{}", long_query(70_000)),
            format!("/a\x7f{}", long_query(70_000)),
        ] {
            assert!(LongTarget::parse(bad.as_bytes()).is_none(), "{bad:.20}");
        }
        let mut bytes = long_query(70_000).into_bytes();
        bytes.push(0xff);
        assert!(LongTarget::parse(&bytes).is_none());
        // Non-ASCII UTF-8 passes, as in a URI, also across the pieces it is checked in.
        let utf8 = format!("{}{}", long_query(32 * 1024 - 20), "é".repeat(40_000));
        assert!(LongTarget::parse(utf8.as_bytes()).is_some());
    }
}
