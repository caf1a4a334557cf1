//! The establishing controller (Kubernetes' `EstablishingController`): a CRD whose names are
//! accepted (`NamesAccepted=True`) and that is not yet `Established` becomes
//! `Established=True` (`InitialNamesAccepted`, "the initial names have been accepted"), unless
//! its conversion webhook's `caBundle` holds no certificate (`Established=False`,
//! `InvalidCABundle`, "The conversion webhook CABundle is invalid"). Written through `/status`.

use std::sync::Arc;

use apiextensions_api::apiextensions_k8s_io::CUSTOM_RESOURCE_DEFINITION_KIND;
use apiextensions_api::apiextensions_k8s_io::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use apimachinery::status::ApiError;
use async_trait::async_trait;
use base64::Engine as _;
use server::controller::{Action, Controller, ObjectKey, Reconciler};
use server::registry::{Registry, Store};

use crate::conditions::{self, ESTABLISHED, NAMES_ACCEPTED};
use crate::naming::write_status;

/// The controller's name and the field manager of its writes.
const MANAGER: &str = "EstablishingController";

/// The reconciler of CRDs' `Established` condition.
pub struct EstablishingController {
    crds: Arc<Store>,
}

impl EstablishingController {
    /// The controller over the CRDs of `registry`, ready to be started (one worker).
    pub fn new(registry: &Registry) -> Result<Controller<Self>, ApiError> {
        let crds = registry.store(&CUSTOM_RESOURCE_DEFINITION_KIND)?;
        Ok(Controller::new(MANAGER, crds.clone(), Self { crds }))
    }
}

/// The `Established` condition a CRD gets once its names are accepted, or `None` when it is
/// not to be established now (names not accepted, or already established).
pub fn established(crd: &CustomResourceDefinition) -> Option<CustomResourceDefinitionCondition> {
    if !conditions::is_true(crd, NAMES_ACCEPTED) || conditions::is_true(crd, ESTABLISHED) {
        return None;
    }
    let ca_bundle = crd
        .spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref())
        .and_then(|c| c.ca_bundle.as_ref())
        .map(|b| b.0.as_slice())
        .unwrap_or_default();
    if !ca_bundle.is_empty() && !has_certificates(ca_bundle) {
        return Some(conditions::condition(
            ESTABLISHED,
            "False",
            "InvalidCABundle",
            "The conversion webhook CABundle is invalid",
        ));
    }
    Some(conditions::condition(
        ESTABLISHED,
        "True",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    ))
}

/// Whether a PEM bundle holds at least one certificate block, and every certificate block's
/// body is base64 (Kubernetes' `ValidateCABundle` parses the certificates; a bundle without one
/// is invalid).
fn has_certificates(pem: &[u8]) -> bool {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let Ok(text) = std::str::from_utf8(pem) else {
        return false;
    };
    let mut rest = text;
    let mut found = false;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let Some(end) = after.find(END) else {
            return false;
        };
        let body: String = after[..end].split_whitespace().collect();
        if base64::engine::general_purpose::STANDARD
            .decode(body)
            .is_err()
        {
            return false;
        }
        found = true;
        rest = &after[end + END.len()..];
    }
    found
}

#[async_trait]
impl Reconciler for EstablishingController {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.crds.try_get("", &key.name).await? else {
            return Ok(Action::Done);
        };
        let Some(crd) = object.downcast_ref::<CustomResourceDefinition>() else {
            return Ok(Action::Done);
        };
        let Some(condition) = established(crd) else {
            return Ok(Action::Done);
        };
        let mut updated = crd.clone();
        conditions::set(&mut updated, condition);
        write_status(&self.crds, crd, updated, MANAGER).await?;
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use apiextensions_api::apiextensions_k8s_io::v1::{
        CustomResourceConversion, WebhookClientConfig, WebhookConversion,
    };
    use apimachinery::meta::Bytes;

    use super::*;

    fn accepted() -> CustomResourceDefinition {
        let mut crd = CustomResourceDefinition::default();
        conditions::set(
            &mut crd,
            conditions::condition(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"),
        );
        crd
    }

    #[test]
    fn a_crd_with_accepted_names_is_established_once() {
        assert_eq!(established(&CustomResourceDefinition::default()), None);
        let mut crd = accepted();
        let condition = established(&crd).unwrap();
        assert_eq!(
            condition,
            conditions::condition(
                ESTABLISHED,
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted"
            )
        );
        conditions::set(&mut crd, condition);
        assert_eq!(established(&crd), None);
    }

    #[test]
    fn an_invalid_ca_bundle_keeps_it_from_being_established() {
        let mut crd = accepted();
        crd.spec.conversion = Some(CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: Some(WebhookConversion {
                client_config: Some(WebhookClientConfig {
                    url: Some("https://example.dev".into()),
                    ca_bundle: Some(Bytes(b"not a certificate".to_vec())),
                    ..WebhookClientConfig::default()
                }),
                conversion_review_versions: Some(vec!["v1".into()]),
            }),
        });
        assert_eq!(
            established(&crd),
            Some(conditions::condition(
                ESTABLISHED,
                "False",
                "InvalidCABundle",
                "The conversion webhook CABundle is invalid"
            ))
        );
        assert!(has_certificates(
            b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        ));
    }
}
