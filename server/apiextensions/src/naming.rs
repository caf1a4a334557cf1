//! The naming controller (Kubernetes' `NamingConditionController`): a CRD whose `spec.names`
//! differ from its `status.acceptedNames` gets each requested name accepted unless another CRD
//! of its group has accepted it already, and the conditions `NamesAccepted` (`NoConflicts`, or
//! the reason of the last conflict: `PluralConflict`, `SingularConflict`,
//! `ShortNamesConflict`, `KindConflict`, `ListKindConflict`, with the message `"<name>" is
//! already in use`) and `Established` (`NotAccepted` until the names are accepted, then
//! `Installing` until the establishing controller sets it), written through `/status`.
//!
//! Every change of a CRD (a write that may release names, a deletion) reconciles every CRD of
//! its group again. Only CRDs are compared with each other, not built-in resources.

use std::collections::BTreeSet;
use std::sync::Arc;

use apiextensions_api::apiextensions_k8s_io::CUSTOM_RESOURCE_DEFINITION_KIND;
use apiextensions_api::apiextensions_k8s_io::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
};
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use server::controller::{Action, Controller, ObjectKey, Reconciler};
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};
use storage::interface::ListOptions;

use crate::conditions::{self, ESTABLISHED, NAMES_ACCEPTED};

/// The controller's name and the field manager of its writes.
const MANAGER: &str = "NamingConditionController";

/// The reconciler of CRDs' accepted names.
pub struct NamingController {
    crds: Arc<Store>,
}

impl NamingController {
    /// The controller over the CRDs of `registry`, ready to be started: one worker, as
    /// Kubernetes runs it, and every change of a CRD reconciles the CRDs of its group.
    pub fn new(registry: &Registry) -> Result<Controller<Self>, ApiError> {
        let crds = registry.store(&CUSTOM_RESOURCE_DEFINITION_KIND)?;
        let lister = crds.clone();
        Ok(
            Controller::new(MANAGER, crds.clone(), Self { crds: crds.clone() }).watches(
                crds,
                move |changed: Box<dyn Object>| {
                    let lister = lister.clone();
                    async move {
                        let Some(group) = changed
                            .downcast_ref::<CustomResourceDefinition>()
                            .map(|c| c.spec.group.clone())
                        else {
                            return Vec::new();
                        };
                        group_crds(&lister, &group)
                            .await
                            .unwrap_or_default()
                            .iter()
                            .filter_map(|c| c.metadata.name.clone())
                            .map(ObjectKey::cluster)
                            .collect()
                    }
                },
            ),
        )
    }
}

/// The CRDs of `group`.
async fn group_crds(crds: &Store, group: &str) -> Result<Vec<CustomResourceDefinition>, ApiError> {
    let (items, _) = crds.list("", ListOptions::default()).await?;
    Ok(items
        .iter()
        .filter_map(|o| o.downcast_ref::<CustomResourceDefinition>())
        .filter(|c| c.spec.group == group)
        .cloned()
        .collect())
}

/// Kubernetes' `equalToAcceptedOrFresh`: a requested name is fine if it is the accepted one,
/// or if no CRD of the group has accepted it.
fn accepted_or_fresh(
    requested: &str,
    accepted: &str,
    used: &BTreeSet<String>,
) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// The names the CRD may have, and its `NamesAccepted` and `Established` conditions, given the
/// CRDs of its group (itself included), as Kubernetes' `calculateNamesAndConditions`.
pub fn calculate(
    crd: &CustomResourceDefinition,
    group: &[CustomResourceDefinition],
) -> (
    CustomResourceDefinitionNames,
    CustomResourceDefinitionCondition,
    CustomResourceDefinitionCondition,
) {
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for other in group {
        let names = &other.status.accepted_names;
        resources.insert(names.plural.clone());
        resources.insert(names.singular.clone().unwrap_or_default());
        resources.extend(names.short_names.iter().cloned());
        kinds.insert(names.kind.clone());
        kinds.insert(names.list_kind.clone().unwrap_or_default());
    }
    let requested = &crd.spec.names;
    let accepted = &crd.status.accepted_names;
    let mut names = accepted.clone();
    let mut conflict: Option<(&str, String)> = None;
    let text = |s: &Option<String>| s.clone().unwrap_or_default();

    match accepted_or_fresh(&requested.plural, &accepted.plural, &resources) {
        Ok(()) => names.plural = requested.plural.clone(),
        Err(e) => conflict = Some(("PluralConflict", e)),
    }
    match accepted_or_fresh(
        &text(&requested.singular),
        &text(&accepted.singular),
        &resources,
    ) {
        Ok(()) => names.singular = requested.singular.clone(),
        Err(e) => conflict = Some(("SingularConflict", e)),
    }
    if requested.short_names != accepted.short_names {
        let errors: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| !accepted.short_names.contains(s))
            .filter_map(|s| accepted_or_fresh(s, "", &resources).err())
            .collect();
        match errors.as_slice() {
            [] => names.short_names = requested.short_names.clone(),
            [one] => conflict = Some(("ShortNamesConflict", one.clone())),
            many => conflict = Some(("ShortNamesConflict", format!("[{}]", many.join(", ")))),
        }
    }
    match accepted_or_fresh(&requested.kind, &accepted.kind, &kinds) {
        Ok(()) => names.kind = requested.kind.clone(),
        Err(e) => conflict = Some(("KindConflict", e)),
    }
    match accepted_or_fresh(
        &text(&requested.list_kind),
        &text(&accepted.list_kind),
        &kinds,
    ) {
        Ok(()) => names.list_kind = requested.list_kind.clone(),
        Err(e) => conflict = Some(("ListKindConflict", e)),
    }
    names.categories = requested.categories.clone();

    let naming = match &conflict {
        None => conditions::condition(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => conditions::condition(NAMES_ACCEPTED, "False", reason, message),
    };
    let mut established = conditions::find(crd, ESTABLISHED)
        .cloned()
        .unwrap_or_else(|| {
            conditions::condition(
                ESTABLISHED,
                "False",
                "NotAccepted",
                "not all names are accepted",
            )
        });
    if established.status != "True" && conflict.is_none() {
        established = conditions::condition(
            ESTABLISHED,
            "False",
            "Installing",
            "the initial names have been accepted",
        );
    }
    (names, naming, established)
}

#[async_trait]
impl Reconciler for NamingController {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.crds.try_get("", &key.name).await? else {
            return Ok(Action::Done);
        };
        let Some(crd) = object.downcast_ref::<CustomResourceDefinition>() else {
            return Ok(Action::Done);
        };
        if crd.spec.names == crd.status.accepted_names {
            return Ok(Action::Done);
        }
        let group = group_crds(&self.crds, &crd.spec.group).await?;
        let (names, naming, established) = calculate(crd, &group);
        if names == crd.status.accepted_names
            && conditions::equivalent(&naming, conditions::find(crd, NAMES_ACCEPTED))
        {
            return Ok(Action::Done);
        }
        let mut updated = crd.clone();
        updated.status.accepted_names = names;
        conditions::set(&mut updated, naming);
        conditions::set(&mut updated, established);
        write_status(&self.crds, crd, updated, MANAGER).await?;
        Ok(Action::Done)
    }
}

/// Writes `updated` (a changed copy of `crd`) through the status subresource, on the condition
/// that the CRD is unchanged since it was read; a CRD changed or deleted meanwhile is left to
/// the event that follows.
pub(crate) async fn write_status(
    crds: &Store,
    crd: &CustomResourceDefinition,
    updated: CustomResourceDefinition,
    manager: &str,
) -> Result<(), ApiError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let mut object: Box<dyn Object> = Box::new(updated);
    server::apply::update_managed_fields(Some(crd), &mut *object, manager, "status")?;
    match crds
        .update(
            "",
            &name,
            &Replace(object),
            &NoAdmission,
            &NoAdmission,
            UpdateOptions {
                subresource: "status",
                ..UpdateOptions::default()
            },
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 409 || e.code() == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// An update that writes a whole object computed beforehand, on the condition that the stored
/// object is still at the object's resourceVersion.
struct Replace(Box<dyn Object>);

#[async_trait]
impl server::registry::UpdatedObjectInfo for Replace {
    async fn updated_object(&self, _old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        Ok(self.0.clone_object())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str]) -> CustomResourceDefinition {
        let mut crd = CustomResourceDefinition::default();
        crd.metadata.name = Some(name.into());
        crd.spec.group = "example.dev".into();
        crd.spec.names = CustomResourceDefinitionNames {
            plural: plural.into(),
            singular: Some(plural.trim_end_matches('s').into()),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            kind: kind.into(),
            list_kind: Some(format!("{kind}List")),
            categories: vec!["all".into()],
        };
        crd
    }

    fn accepted(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
        crd.status.accepted_names = crd.spec.names.clone();
        crd
    }

    #[test]
    fn fresh_names_are_accepted_and_the_crd_is_installing() {
        let new = crd("widgets.example.dev", "widgets", "Widget", &["wd"]);
        let (names, naming, established) = calculate(&new, std::slice::from_ref(&new));
        assert_eq!(names, new.spec.names);
        assert_eq!(
            naming,
            conditions::condition(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found")
        );
        assert_eq!(
            established,
            conditions::condition(
                ESTABLISHED,
                "False",
                "Installing",
                "the initial names have been accepted"
            )
        );
    }

    #[test]
    fn names_another_crd_accepted_conflict_and_the_rest_are_accepted() {
        let other = accepted(crd(
            "gadgets.example.dev",
            "gadgets",
            "Gadget",
            &["g", "wd"],
        ));
        let mut new = crd(
            "widgets.example.dev",
            "gadgets",
            "Widget",
            &["wd", "g", "w"],
        );
        new.spec.names.singular = Some("widget".into());
        let (names, naming, established) = calculate(&new, &[other, new.clone()]);
        // The short names conflict last among the resource names; kinds are fine.
        assert_eq!(names.plural, "");
        assert_eq!(names.singular.as_deref(), Some("widget"));
        assert!(names.short_names.is_empty());
        assert_eq!(names.kind, "Widget");
        assert_eq!(names.categories, ["all"]);
        assert_eq!(
            naming,
            conditions::condition(
                NAMES_ACCEPTED,
                "False",
                "ShortNamesConflict",
                r#"["wd" is already in use, "g" is already in use]"#
            )
        );
        assert_eq!(
            established,
            conditions::condition(
                ESTABLISHED,
                "False",
                "NotAccepted",
                "not all names are accepted"
            )
        );

        let other = accepted(crd("gadgets.example.dev", "gadgets", "Gadget", &[]));
        let new = crd("widgets.example.dev", "widgets", "Gadget", &[]);
        let (names, naming, _) = calculate(&new, &[other, new.clone()]);
        assert_eq!(names.kind, "");
        assert_eq!(names.list_kind.as_deref(), None);
        assert_eq!(
            naming,
            conditions::condition(
                NAMES_ACCEPTED,
                "False",
                "ListKindConflict",
                r#""GadgetList" is already in use"#
            )
        );
    }
}
