//! The conversions between v1alpha1's single `reference` and the hub's two references, the
//! v1alpha1 default of the reference type, and the Flunder validation of sample-apiserver.

/// v1alpha1's `reference` becomes the hub's flunder or fischer reference, by its type.
pub fn v1alpha1_flunder_spec_to_internal(src: &v1alpha1::FlunderSpec, dst: &mut internal::FlunderSpec) {
    match src.reference_type.as_deref() {
        Some("Flunder") => dst.flunder_reference = src.reference.clone(),
        Some("Fischer") => dst.fischer_reference = src.reference.clone(),
        _ => {}
    }
}

/// The hub's reference of the spec's type becomes v1alpha1's `reference`.
pub fn internal_flunder_spec_to_v1alpha1(src: &internal::FlunderSpec, dst: &mut v1alpha1::FlunderSpec) {
    dst.reference = match src.reference_type.as_deref() {
        Some("Flunder") => src.flunder_reference.clone(),
        Some("Fischer") => src.fischer_reference.clone(),
        _ => None,
    };
}

/// A v1alpha1 reference without a type refers to a Flunder.
pub fn default_v1alpha1_flunder_spec(obj: &mut v1alpha1::FlunderSpec) {
    if obj.reference_type.as_deref().unwrap_or("").is_empty()
        && !obj.reference.as_deref().unwrap_or("").is_empty()
    {
        obj.reference_type = Some("Flunder".to_string());
    }
}

/// A Flunder refers to one thing, of the type its spec says.
pub fn validate_v1beta1_flunder(obj: &v1beta1::Flunder, errors: &mut Vec<FieldError>) {
    let spec = &obj.spec;
    let flunder = spec.flunder_reference.as_deref().unwrap_or("");
    let fischer = spec.fischer_reference.as_deref().unwrap_or("");
    let kind = spec.reference_type.as_deref().unwrap_or("");
    let invalid = |path: &str, value: &str, detail: &str| {
        FieldError::invalid(path, &value.into(), detail)
    };
    if !flunder.is_empty() && !fischer.is_empty() {
        errors.push(invalid("spec.fischerReference", fischer, "cannot be set with flunderReference at the same time"));
    } else if !flunder.is_empty() && kind != "Flunder" {
        errors.push(invalid("spec.flunderReference", flunder, "cannot be set if referenceType is not Flunder"));
    } else if !fischer.is_empty() && kind != "Fischer" {
        errors.push(invalid("spec.fischerReference", fischer, "cannot be set if referenceType is not Fischer"));
    } else if fischer.is_empty() && kind == "Fischer" {
        errors.push(invalid("spec.fischerReference", fischer, "cannot be empty if referenceType is Fischer"));
    } else if flunder.is_empty() && kind == "Flunder" {
        errors.push(invalid("spec.flunderReference", flunder, "cannot be empty if referenceType is Flunder"));
    }
    if !kind.is_empty() && kind != "Flunder" && kind != "Fischer" {
        errors.push(invalid("spec.referenceType", kind, "must be Flunder or Fischer"));
    }
}
