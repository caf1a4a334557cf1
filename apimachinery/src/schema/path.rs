//! Field paths as Kubernetes' `field.Path` renders them: `a.b`, `a[0]`, `a[key]`, with the
//! first segment written bare.

/// `parent.name` (`name` alone at the root, `parent` alone for an empty name).
pub(crate) fn child(parent: &str, name: &str) -> String {
    if name.is_empty() {
        parent.to_string()
    } else if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `parent[key]`.
pub(crate) fn key(parent: &str, k: &str) -> String {
    format!("{parent}[{k}]")
}
