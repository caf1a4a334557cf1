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

/// The facts of one webhook that Kubernetes validates the same way for both kinds.
struct Hook<'a> {
    client_config: &'a v1::WebhookClientConfig,
    side_effects: Option<&'a str>,
    timeout_seconds: Option<i32>,
}

/// Kubernetes' webhook checks: exactly one of url and service, a side-effect class and a
/// timeout between 1 and 30 seconds. (Unique names are checked by the list-map marker.)
fn validate_hooks(hooks: &[Hook<'_>], errors: &mut Vec<FieldError>) {
    for (i, hook) in hooks.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        if hook.side_effects.is_none() {
            errors.push(FieldError::required(format!("{path}.sideEffects"), "must specify one of None, NoneOnDryRun"));
        }
        if let Some(t) = hook.timeout_seconds.filter(|t| !(1..=30).contains(t)) {
            errors.push(FieldError::invalid(
                format!("{path}.timeoutSeconds"),
                &serde_json::Value::from(t),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        if hook.client_config.url.is_none() == hook.client_config.service.is_none() {
            errors.push(FieldError::required(format!("{path}.clientConfig"), "exactly one of url or service is required"));
        }
    }
}

/// A ValidatingWebhookConfiguration's webhooks, as Kubernetes validates them.
pub fn validate_v1_validating_webhook_configuration(obj: &v1::ValidatingWebhookConfiguration, errors: &mut Vec<FieldError>) {
    let hooks: Vec<Hook<'_>> = obj
        .webhooks
        .iter()
        .map(|w| Hook {
            client_config: &w.client_config,
            side_effects: w.side_effects.as_deref(),
            timeout_seconds: w.timeout_seconds,
        })
        .collect();
    validate_hooks(&hooks, errors);
}

/// A MutatingWebhookConfiguration's webhooks, as Kubernetes validates them.
pub fn validate_v1_mutating_webhook_configuration(obj: &v1::MutatingWebhookConfiguration, errors: &mut Vec<FieldError>) {
    let hooks: Vec<Hook<'_>> = obj
        .webhooks
        .iter()
        .map(|w| Hook {
            client_config: &w.client_config,
            side_effects: w.side_effects.as_deref(),
            timeout_seconds: w.timeout_seconds,
        })
        .collect();
    validate_hooks(&hooks, errors);
}
