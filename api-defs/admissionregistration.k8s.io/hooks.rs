//! Hand-written defaulting of admissionregistration.k8s.io: what markers cannot express.

/// An absent namespace or object selector of a validating webhook becomes the empty selector,
/// which matches everything, as Kubernetes defaults it.
pub fn default_v1_validating_webhook(obj: &mut v1::ValidatingWebhook) {
    obj.namespace_selector.get_or_insert_with(Default::default);
    obj.object_selector.get_or_insert_with(Default::default);
}

/// An absent namespace or object selector of a mutating webhook becomes the empty selector,
/// which matches everything, as Kubernetes defaults it.
pub fn default_v1_mutating_webhook(obj: &mut v1::MutatingWebhook) {
    obj.namespace_selector.get_or_insert_with(Default::default);
    obj.object_selector.get_or_insert_with(Default::default);
}
