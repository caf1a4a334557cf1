//! Storage key layout: `<prefix>/<group>/<resource>/<namespace>/<name>`.
//!
//! The core group (`""`) omits its segment, as Kubernetes does (`/registry/configmaps/...`).
//! Every collection prefix returned here ends with `/`, so listing namespace `ns1` never sees
//! `ns10`. Segments that are empty, `.` or `..`, or that contain `/`, are rejected.

use crate::errors::{Result, StorageError};

/// The default key prefix (as kube-apiserver's `--etcd-prefix`).
pub const DEFAULT_PREFIX: &str = "/registry";

/// Builds the keys of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceKeys {
    /// The resource prefix, always ending with `/`, for example `/registry/example.dev/widgets/`.
    resource_prefix: String,
}

impl ResourceKeys {
    /// Creates the key builder for `group`/`resource` under `prefix` (for example `/registry`).
    /// An empty `group` means the core group.
    pub fn new(prefix: &str, group: &str, resource: &str) -> Result<Self> {
        let mut resource_prefix = normalize_prefix(prefix)?;
        if !group.is_empty() {
            validate_segment(group)?;
            resource_prefix.push_str(group);
            resource_prefix.push('/');
        }
        validate_segment(resource)?;
        resource_prefix.push_str(resource);
        resource_prefix.push('/');
        Ok(Self { resource_prefix })
    }

    /// The prefix of every key of the resource, ending with `/`.
    pub fn resource_prefix(&self) -> &str {
        &self.resource_prefix
    }

    /// The prefix of the keys in one namespace, ending with `/`.
    pub fn namespace_prefix(&self, namespace: &str) -> Result<String> {
        validate_segment(namespace)?;
        // Built in one allocation of the final size, without `format!` (read by quota
        // admission on every create: ≈0.6k instructions less per ConfigMap create).
        let mut prefix = String::with_capacity(self.resource_prefix.len() + namespace.len() + 1);
        prefix.push_str(&self.resource_prefix);
        prefix.push_str(namespace);
        prefix.push('/');
        Ok(prefix)
    }

    /// The key of one object; `namespace` is `None` for cluster-scoped resources.
    pub fn object_key(&self, namespace: Option<&str>, name: &str) -> Result<String> {
        validate_segment(name)?;
        // Built in one allocation of the final size (what `format!` yields, without it).
        let ns_len = namespace.map_or(0, |ns| ns.len() + 1);
        let mut key = String::with_capacity(self.resource_prefix.len() + ns_len + name.len());
        key.push_str(&self.resource_prefix);
        if let Some(ns) = namespace {
            validate_segment(ns)?;
            key.push_str(ns);
            key.push('/');
        }
        key.push_str(name);
        Ok(key)
    }
}

/// Normalizes a configurable prefix: ensures a leading `/` and exactly one trailing `/`, and
/// validates each segment. The empty prefix becomes `/`.
pub fn normalize_prefix(prefix: &str) -> Result<String> {
    let mut out = String::from("/");
    for segment in prefix.split('/').filter(|s| !s.is_empty()) {
        validate_segment(segment)?;
        out.push_str(segment);
        out.push('/');
    }
    Ok(out)
}

/// Rejects segments that would make keys ambiguous or escape their collection: the empty
/// string, `.`, `..`, and anything containing `/` or a NUL byte.
pub fn validate_segment(segment: &str) -> Result<()> {
    // One pass over the bytes clears the common segment; one that fails it, or is short
    // enough to be `.` or `..`, takes the checks below, which word the error.
    if segment.len() > 2 && !segment.bytes().any(|b| b == b'/' || b == 0) {
        return Ok(());
    }
    let reason = if segment.is_empty() {
        Some("segment must not be empty")
    } else if segment == "." || segment == ".." {
        Some("segment must not be \".\" or \"..\"")
    } else if segment.contains('/') {
        Some("segment must not contain \"/\"")
    } else if segment.contains('\0') {
        Some("segment must not contain NUL")
    } else {
        None
    };
    match reason {
        Some(message) => Err(StorageError::InvalidKey {
            key: segment.to_string(),
            message: message.to_string(),
        }),
        None => Ok(()),
    }
}

/// Validates a full key passed to the storage interface: it must start with `/`, and no
/// segment may be `.` or `..`.
pub fn validate_key(key: &str) -> Result<()> {
    if !key.starts_with('/') {
        return Err(StorageError::InvalidKey {
            key: key.to_string(),
            message: "key must start with \"/\"".to_string(),
        });
    }
    if has_dot_segment_or_nul(key) {
        return Err(StorageError::InvalidKey {
            key: key.to_string(),
            message: "key must not contain \".\" or \"..\" segments or NUL".to_string(),
        });
    }
    Ok(())
}

/// Whether a segment of `key` is `.` or `..`, or `key` holds a NUL: what
/// `key.split('/').any(|s| s == "." || s == "..") || key.contains('\0')` tells, in one pass.
fn has_dot_segment_or_nul(key: &str) -> bool {
    let dots = |segment: &[u8]| segment == b"." || segment == b"..";
    let bytes = key.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            0 => return true,
            b'/' => {
                if dots(&bytes[start..i]) {
                    return true;
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    dots(&bytes[start..])
}

/// Returns the collection prefix for a recursive operation on `key`: the key itself with a
/// trailing `/` added when missing (so `/ns1` never matches `/ns10`).
pub fn collection_prefix(key: &str) -> String {
    if key.ends_with('/') {
        key.to_string()
    } else {
        format!("{key}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_trailing_slashes() {
        let k = ResourceKeys::new("/registry", "example.dev", "widgets").expect("keys");
        assert_eq!(k.resource_prefix(), "/registry/example.dev/widgets/");
        assert_eq!(
            k.namespace_prefix("ns1").expect("ns"),
            "/registry/example.dev/widgets/ns1/"
        );
        assert_eq!(
            k.object_key(Some("ns1"), "a").expect("key"),
            "/registry/example.dev/widgets/ns1/a"
        );
        let core = ResourceKeys::new("custom/", "", "namespaces").expect("keys");
        assert_eq!(
            core.object_key(None, "n").expect("key"),
            "/custom/namespaces/n"
        );
    }

    #[test]
    fn rejects_dot_segments() {
        let k = ResourceKeys::new("/registry", "", "configmaps").expect("keys");
        assert!(k.object_key(Some(".."), "a").is_err());
        assert!(k.object_key(Some("ns"), ".").is_err());
        assert!(k.object_key(Some("ns"), "a/b").is_err());
        assert!(k.object_key(Some(""), "a").is_err());
        assert!(validate_key("/registry/../x").is_err());
        assert!(validate_key("relative").is_err());
        assert!(ResourceKeys::new("/a/../b", "", "x").is_err());
    }

    #[test]
    fn one_pass_key_check_agrees_with_split() {
        let split = |k: &str| k.split('/').any(|s| s == "." || s == "..") || k.contains('\0');
        for k in [
            "",
            "/",
            ".",
            "..",
            "...",
            "/.",
            "/..",
            "/...",
            "/./",
            "/../",
            "/a/./b",
            "/a/../b",
            "/a/.../b",
            "/a.b/c",
            "/a/b.",
            "/a/.b",
            "/a/b/.",
            "/a/b/..",
            "//",
            "/a//b",
            "/a\0b",
            "\0",
            "/registry/configmaps/bench/cm-1",
            "/registry/example.dev/widgets/ns/w.1",
            "a/..",
            "../a",
            "/é/./",
        ] {
            assert_eq!(has_dot_segment_or_nul(k), split(k), "{k:?}");
        }
    }

    #[test]
    fn segment_fast_path_agrees_with_the_checks() {
        let slow = |s: &str| {
            if s.is_empty() || s == "." || s == ".." || s.contains('/') || s.contains('\0') {
                Err(())
            } else {
                Ok(())
            }
        };
        for s in [
            "", ".", "..", "...", "a", "ab", "abc", "a/b", "/", "//", "a\0b", "\0", "ab\0", "abc/",
            "/abc", "a.b", "ns-1", "é", "éé/", "x/\0",
        ] {
            assert_eq!(validate_segment(s).map_err(drop), slow(s), "{s:?}");
        }
        let both = validate_segment("a/\0").unwrap_err().to_string();
        assert!(both.contains("must not contain \"/\""), "{both}");
        let keys = ResourceKeys::new("/registry", "", "configmaps").unwrap();
        assert_eq!(
            keys.object_key(Some("ns"), "name").unwrap(),
            "/registry/configmaps/ns/name"
        );
        assert_eq!(
            keys.object_key(None, "name").unwrap(),
            "/registry/configmaps/name"
        );
        assert!(keys.object_key(Some("a/b"), "name").is_err());
        assert!(keys.object_key(Some("ns"), "..").is_err());
    }
}
