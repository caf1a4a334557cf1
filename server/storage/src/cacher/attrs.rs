//! [`CachedAttrs`]: the attributes the cache filters on, kept compactly per cached object.
//!
//! The cache holds every object of a resource, so per-object overhead counts. Of the
//! [`ObjectAttrs`] a codec extracts, the cache keeps the labels and the selectable fields other
//! than `metadata.name` and `metadata.namespace`, which it reads back from the object's storage
//! key (`…/<namespace>/<name>` or `…/<name>`) whenever they agree with it; the uid is not kept
//! (filters never look at it).

use crate::interface::{AttrMap, ObjectAttrs, Predicate};

const NAME: &str = "metadata.name";
const NAMESPACE: &str = "metadata.namespace";

/// Where `metadata.name` and `metadata.namespace` come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyFields {
    /// Both are in `fields` (they did not match the key).
    Stored,
    /// The name is the key's last segment; the namespace is empty.
    Name,
    /// The name is the key's last segment, the namespace the one before it.
    NameAndNamespace,
}

/// The filterable attributes of one cached object.
#[derive(Debug, Clone)]
pub(crate) struct CachedAttrs {
    labels: AttrMap,
    /// The selectable fields, without name and namespace unless `key_fields` is `Stored`.
    fields: AttrMap,
    key_fields: KeyFields,
}

/// The last two segments of a key: `(second to last, last)`.
fn key_segments(key: &str) -> (&str, &str) {
    let (rest, name) = key.rsplit_once('/').unwrap_or(("", key));
    let namespace = rest.rsplit_once('/').map_or(rest, |(_, ns)| ns);
    (namespace, name)
}

impl CachedAttrs {
    /// Keeps what `attrs` adds to the object's storage key `key`.
    pub(crate) fn new(key: &str, attrs: ObjectAttrs) -> Self {
        let (key_namespace, key_name) = key_segments(key);
        let name = attrs.fields.get(NAME).unwrap_or("");
        let namespace = attrs.fields.get(NAMESPACE).unwrap_or("");
        let key_fields = match (name == key_name, namespace) {
            (true, "") => KeyFields::Name,
            (true, ns) if ns == key_namespace => KeyFields::NameAndNamespace,
            _ => KeyFields::Stored,
        };
        let fields = if key_fields == KeyFields::Stored {
            attrs.fields
        } else {
            attrs
                .fields
                .iter()
                .filter(|(k, _)| *k != NAME && *k != NAMESPACE)
                .collect()
        };
        Self {
            labels: attrs.labels,
            fields,
            key_fields,
        }
    }

    /// The attributes of the object stored under `key` (uid left empty).
    pub(crate) fn to_attrs(&self, key: &str) -> ObjectAttrs {
        let fields = match self.key_fields {
            KeyFields::Stored => self.fields.clone(),
            KeyFields::Name | KeyFields::NameAndNamespace => {
                let (key_namespace, name) = key_segments(key);
                let namespace = if self.key_fields == KeyFields::Name {
                    ""
                } else {
                    key_namespace
                };
                self.fields
                    .iter()
                    .chain([(NAME, name), (NAMESPACE, namespace)])
                    .collect()
            }
        };
        ObjectAttrs {
            uid: String::new(),
            labels: self.labels.clone(),
            fields,
        }
    }

    /// Whether the object stored under `key` matches `predicate`.
    pub(crate) fn matches(&self, key: &str, predicate: &Predicate) -> bool {
        predicate.is_everything() || predicate.matches(&self.to_attrs(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(name: &str, namespace: &str, extra: &[(&str, &str)]) -> ObjectAttrs {
        ObjectAttrs {
            uid: "u".to_string(),
            labels: [("app", "x")].into_iter().collect(),
            fields: [(NAME, name), (NAMESPACE, namespace)]
                .into_iter()
                .chain(extra.iter().copied())
                .collect(),
        }
    }

    #[test]
    fn name_and_namespace_come_back_from_the_key() {
        let key = "/registry/configmaps/ns1/cm";
        let original = attrs("cm", "ns1", &[("type", "t")]);
        let cached = CachedAttrs::new(key, original.clone());
        assert_eq!(cached.key_fields, KeyFields::NameAndNamespace);
        assert_eq!(cached.fields.len(), 1);
        let back = cached.to_attrs(key);
        assert_eq!(back.fields, original.fields);
        assert_eq!(back.labels, original.labels);

        let key = "/registry/namespaces/ns1";
        let original = attrs("ns1", "", &[]);
        let cached = CachedAttrs::new(key, original.clone());
        assert_eq!(cached.key_fields, KeyFields::Name);
        assert!(cached.fields.is_empty());
        assert_eq!(cached.to_attrs(key).fields, original.fields);
    }

    #[test]
    fn fields_that_disagree_with_the_key_are_kept() {
        let key = "/registry/configmaps/ns1/cm";
        let original = attrs("other", "ns1", &[]);
        let cached = CachedAttrs::new(key, original.clone());
        assert_eq!(cached.key_fields, KeyFields::Stored);
        assert_eq!(cached.to_attrs(key).fields, original.fields);
    }

    #[test]
    fn predicates_see_the_rebuilt_attributes() {
        let key = "/registry/configmaps/ns1/cm";
        let cached = CachedAttrs::new(key, attrs("cm", "ns1", &[]));
        let by_name = Predicate::new(|a| a.fields.get(NAME) == Some("cm"));
        let by_label = Predicate::new(|a| a.labels.get("app") == Some("y"));
        assert!(cached.matches(key, &by_name));
        assert!(!cached.matches(key, &by_label));
        assert!(cached.matches(key, &Predicate::everything()));
    }
}
