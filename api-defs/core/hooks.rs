//! Hand-written defaulting of the core group: what markers cannot express.

/// Every namespace carries the immutable label `kubernetes.io/metadata.name` set to its name,
/// as Kubernetes defaults it (so that namespace selectors can select namespaces by name).
pub fn default_v1_namespace(obj: &mut v1::Namespace) {
    if let Some(name) = obj.metadata.name.clone().filter(|n| !n.is_empty()) {
        obj.metadata.labels.insert("kubernetes.io/metadata.name".to_string(), name);
    }
}

/// `stringData` is write-only: its values are merged into `data` (replacing values of the
/// same key) and it is never stored or returned.
pub fn default_v1_secret(obj: &mut v1::Secret) {
    for (key, value) in std::mem::take(&mut obj.string_data) {
        obj.data.insert(key, ::apimachinery::meta::Bytes(value.into_bytes()));
    }
}
