//! `ObjectMeta` rules common to every kind: what create and update may set, how generation
//! moves, and the validation of names, labels, annotations and finalizers.

use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::json::{get, get_mut};
use apimachinery::selectors::{is_dns1123_subdomain, label_value_errors, qualified_name_errors};
use serde_json::{Map, Value, json};

/// The largest total size of annotations (keys plus values).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// The current time as Kubernetes serializes `metav1.Time` (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    // `to_rfc3339_opts` writes `%Y-%m-%dT%H:%M:%SZ` without parsing a format string.
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Returns `metadata` as a mutable map, creating it when missing.
pub fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    // The common case, an object with a `metadata` object, takes a scanning lookup.
    if get(object, "metadata").is_some_and(Value::is_object) {
        return get_mut(object, "metadata")
            .and_then(Value::as_object_mut)
            .expect("metadata was just seen");
    }
    if !object.is_object() {
        *object = json!({});
    }
    let map = object.as_object_mut().expect("object was just ensured");
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut().expect("metadata was just ensured")
}

/// Reads a member of `metadata`: what `object.pointer("/metadata/<key>")` returns, without
/// parsing a pointer (which allocates for every token).
pub fn meta_get<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    get(object, "metadata").and_then(|m| get(m, key))
}

/// Reads a string member of `metadata`.
pub fn meta_str<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    meta_get(object, key).and_then(Value::as_str)
}

/// The object's `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<String> {
    meta_get(object, "finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the object's deletion has started.
pub fn is_deleting(object: &Value) -> bool {
    meta_get(object, "deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// The system metadata a client may not set on create; `prepare_create` removes it.
const WIPED: [&str; 7] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "resourceVersion",
    "generation",
];

/// Prepares an object for create: wipes what clients may not set, sets uid, creation time
/// and, for kinds that track it, generation 1 (kinds that do not never carry a generation).
pub fn prepare_create(object: &mut Value, tracks_generation: bool) {
    let meta = meta_mut(object);
    // Scanning the few members is cheaper than hashing every key to remove, which most
    // requests do not set.
    if meta.keys().any(|k| WIPED.contains(&k.as_str())) {
        for k in WIPED {
            meta.remove(k);
        }
    }
    meta.insert("uid".into(), Value::from(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), Value::from(now_rfc3339()));
    if tracks_generation {
        meta.insert("generation".into(), Value::from(1));
    }
}

/// The part of an object that drives `metadata.generation`: everything except metadata (and
/// status when the kind has a status subresource).
fn spec_part(object: &Value, status_subresource: bool) -> Value {
    let mut v = object.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if status_subresource {
            m.remove("status");
        }
    }
    v
}

/// Prepares an update of the main resource: keeps the system-owned metadata of `old`, keeps
/// `old`'s status when the kind has a status subresource, and bumps generation when the spec
/// changed.
pub fn prepare_update(new: &mut Value, old: &Value, status_subresource: bool) {
    if status_subresource {
        match old.get("status") {
            Some(s) => {
                if let Some(m) = new.as_object_mut() {
                    m.insert("status".into(), s.clone());
                }
            }
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    copy_system_meta(new, old);
    // Only kinds that track generation have one (set on create); the others never get one.
    let Some(old_gen) = meta_get(old, "generation").and_then(Value::as_i64) else {
        return;
    };
    let changed = spec_part(new, status_subresource) != spec_part(old, status_subresource);
    meta_mut(new).insert(
        "generation".into(),
        Value::from(if changed { old_gen + 1 } else { old_gen }),
    );
}

/// Prepares a `/status` write: everything but `status` (and managedFields) comes from `old`.
pub fn prepare_status_update(new: &mut Value, old: &Value) {
    let status = new.get("status").cloned();
    let managed = meta_get(new, "managedFields").cloned();
    let mut out = old.clone();
    if let Some(m) = out.as_object_mut() {
        match status {
            Some(s) => {
                m.insert("status".into(), s);
            }
            None => {
                m.remove("status");
            }
        }
    }
    if let Some(mf) = managed {
        meta_mut(&mut out).insert("managedFields".into(), mf);
    }
    *new = out;
}

fn copy_system_meta(new: &mut Value, old: &Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
    let meta = meta_mut(new);
    for k in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(k) {
            Some(v) => {
                meta.insert(k.into(), v.clone());
            }
            None => {
                meta.remove(k);
            }
        }
    }
    meta.remove("selfLink");
}

/// Validates a name: DNS-1123 subdomain (or label for namespaces).
pub fn validate_name(name: &str, dns_label: bool) -> Option<FieldError> {
    if dns_label {
        let ok = !name.is_empty()
            && name.len() <= 63
            && is_dns1123_subdomain(name)
            && !name.contains('.');
        if !ok {
            let detail = if name.len() > 63 {
                "must be no more than 63 characters".to_string()
            } else {
                DNS1123_LABEL_MSG.to_string()
            };
            return Some(FieldError::invalid(
                "metadata.name",
                &Value::from(name),
                detail,
            ));
        }
    } else if !is_dns1123_subdomain(name) {
        let detail = if name.len() > 253 {
            "must be no more than 253 characters".to_string()
        } else {
            DNS1123_SUBDOMAIN_MSG.to_string()
        };
        return Some(FieldError::invalid(
            "metadata.name",
            &Value::from(name),
            detail,
        ));
    }
    None
}

/// Validates the metadata of an object being created or updated.
pub fn validate_object_meta(
    object: &Value,
    namespaced: bool,
    dns_label_name: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // `metadata` is looked up once for all its members.
    let meta = get(object, "metadata");
    let get = |key: &str| meta.and_then(|m| get(m, key));
    let get_str = |key: &str| get(key).and_then(Value::as_str);
    match get_str("name") {
        Some(name) if !name.is_empty() => errs.extend(validate_name(name, dns_label_name)),
        _ => {
            if get_str("generateName").is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    "metadata.name",
                    "name or generateName is required",
                ));
            }
        }
    }
    let ns = get_str("namespace").unwrap_or("");
    if namespaced && ns.is_empty() {
        errs.push(FieldError::required("metadata.namespace", ""));
    }
    if !namespaced && !ns.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(labels) = get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            for e in qualified_name_errors(k) {
                errs.push(FieldError::invalid(
                    "metadata.labels",
                    &Value::from(k.as_str()),
                    e,
                ));
            }
            let v = v.as_str().unwrap_or("");
            for e in label_value_errors(v) {
                errs.push(FieldError::invalid("metadata.labels", &Value::from(v), e));
            }
        }
    }
    if let Some(ann) = get("annotations").and_then(Value::as_object) {
        let mut total = 0;
        for (k, v) in ann {
            for e in qualified_name_errors(&k.to_ascii_lowercase()) {
                errs.push(FieldError::invalid(
                    "metadata.annotations",
                    &Value::from(k.as_str()),
                    e,
                ));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > MAX_ANNOTATIONS_BYTES {
            errs.push(FieldError::new(
                FieldErrorType::TooLong,
                "metadata.annotations",
                None,
                format!("must have at most {MAX_ANNOTATIONS_BYTES} bytes"),
            ));
        }
    }
    // As `finalizers` reads them: the strings, numbered without the other values.
    let finalizers = get("finalizers").and_then(Value::as_array);
    for (i, f) in finalizers
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .enumerate()
    {
        for e in qualified_name_errors(f) {
            errs.push(FieldError::invalid(
                format!("metadata.finalizers[{i}]"),
                &Value::from(f),
                e,
            ));
        }
    }
    errs
}

/// Validates what an update may not change.
pub fn validate_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for k in ["name", "namespace"] {
        let (n, o) = (
            meta_str(new, k).unwrap_or(""),
            meta_str(old, k).unwrap_or(""),
        );
        if n != o {
            errs.push(FieldError::invalid(
                format!("metadata.{k}"),
                &Value::from(n),
                "field is immutable",
            ));
        }
    }
    if is_deleting(old) {
        let old_f = finalizers(old);
        let added: Vec<String> = finalizers(new)
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        if !added.is_empty() {
            let list = added
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            errs.push(FieldError::forbidden("metadata.finalizers", format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}")));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_rfc3339_in_whole_seconds_utc() {
        let now = now_rfc3339();
        assert_eq!(now.len(), "2026-01-02T03:04:05Z".len(), "{now}");
        assert!(chrono::NaiveDateTime::parse_from_str(&now, "%Y-%m-%dT%H:%M:%SZ").is_ok());
    }

    #[test]
    fn create_wipes_and_sets_system_fields() {
        let mut o = json!({"metadata": {"name": "a", "uid": "x", "selfLink": "/x", "deletionTimestamp": "2020-01-01T00:00:00Z"}});
        prepare_create(&mut o, true);
        assert_ne!(o["metadata"]["uid"], "x");
        assert_eq!(o["metadata"]["generation"], 1);
        assert!(o["metadata"].get("selfLink").is_none());
        assert!(o["metadata"].get("deletionTimestamp").is_none());
    }

    #[test]
    fn create_keeps_member_order_as_removing_every_system_field_does() {
        for meta in [
            json!({"name": "a", "labels": {"x": "y"}, "namespace": "n"}),
            json!({"name": "a", "resourceVersion": "5", "labels": {}, "generation": 3, "b": 1}),
        ] {
            let mut got = json!({"metadata": meta.clone()});
            prepare_create(&mut got, true);
            let mut want = meta;
            for k in WIPED {
                want.as_object_mut().unwrap().remove(k);
            }
            let keys = |m: &Value| m.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            let mut want_keys = keys(&want);
            want_keys.extend(["uid", "creationTimestamp", "generation"].map(String::from));
            assert_eq!(keys(&got["metadata"]), want_keys);
        }
    }

    #[test]
    fn kinds_without_generation_never_carry_one() {
        let mut o = json!({"metadata": {"name": "a", "generation": 7}, "data": {"k": "v"}});
        prepare_create(&mut o, false);
        assert!(o["metadata"].get("generation").is_none());
        let mut changed = json!({"metadata": {"name": "a", "generation": 3}, "data": {"k": "w"}});
        prepare_update(&mut changed, &o, false);
        assert!(changed["metadata"].get("generation").is_none());
    }

    #[test]
    fn generation_bumps_on_spec_change_only() {
        let old = json!({"metadata": {"name": "a", "generation": 1, "uid": "u"}, "spec": {"r": 1}, "status": {"s": 1}});
        let mut same = json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"r": 1}, "status": {"s": 2}});
        prepare_update(&mut same, &old, true);
        assert_eq!(same["metadata"]["generation"], 1);
        assert_eq!(same["status"]["s"], 1);
        assert_eq!(same["metadata"]["uid"], "u");
        let mut changed = json!({"metadata": {"name": "a"}, "spec": {"r": 2}});
        prepare_update(&mut changed, &old, true);
        assert_eq!(changed["metadata"]["generation"], 2);
    }

    #[test]
    fn validation_messages() {
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "Bad_Name", "namespace": "d"}}),
            true,
            false,
        );
        assert_eq!(
            errs[0].to_string(),
            format!("metadata.name: Invalid value: \"Bad_Name\": {DNS1123_SUBDOMAIN_MSG}")
        );
        let errs = validate_object_meta(&json!({"metadata": {}}), false, false);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        // Finalizers are numbered among the strings only, as `finalizers` reads them.
        let errs = validate_object_meta(
            &json!({"metadata": {"generateName": "g-", "namespace": "d",
                "labels": {"ok": "v", "bad key!": "v"},
                "finalizers": ["ok/x", 5, "bad/x/y"]}}),
            true,
            false,
        );
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.labels", "metadata.finalizers[1]"]);
        let errs = validate_meta_update(
            &json!({"metadata": {"name": "b"}}),
            &json!({"metadata": {"name": "a"}}),
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Invalid value: \"b\": field is immutable"
        );
    }
}
