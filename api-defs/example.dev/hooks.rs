//! Hand-written conversions for fields that differ between a version and the hub.
//!
//! The generator converts every field whose name and type match; for a struct with a field that
//! does not match, it calls a function here named `<version>_<struct>_to_internal` /
//! `internal_<struct>_to_<version>` (snake case) after converting the matching fields. A missing
//! function fails the build with the name and signature to write. This file is included into the
//! generated crate, where `v1alpha1` and `internal` are the generated modules of this group.

/// v1alpha1 `spec.size` is the hub's `spec.replicas`.
pub fn v1alpha1_widget_spec_to_internal(src: &v1alpha1::WidgetSpec, dst: &mut internal::WidgetSpec) {
    dst.replicas = src.size;
}

/// The hub's `spec.replicas` is v1alpha1 `spec.size`.
pub fn internal_widget_spec_to_v1alpha1(src: &internal::WidgetSpec, dst: &mut v1alpha1::WidgetSpec) {
    dst.size = src.replicas;
}

/// A v1 Widget's observed replica count is never negative (checked after the field markers).
pub fn validate_v1_widget(obj: &v1::Widget, errors: &mut Vec<FieldError>) {
    if let Some(status) = &obj.status {
        if status.replicas < 0 {
            errors.push(FieldError::invalid(
                "status.replicas",
                &serde_json::Value::from(status.replicas),
                "must be greater than or equal to 0",
            ));
        }
    }
}
