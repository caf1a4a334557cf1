//! The conditions of a CustomResourceDefinition's status, set as Kubernetes'
//! `apihelpers.SetCRDCondition` sets them.

use apiextensions_api::apiextensions_k8s_io::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use apimachinery::meta::Time;

/// `NamesAccepted`: the naming controller accepted the CRD's names.
pub const NAMES_ACCEPTED: &str = "NamesAccepted";
/// `Established`: the CRD's resources are served.
pub const ESTABLISHED: &str = "Established";

/// A condition of `type_` with `status`, `reason` and `message` (no transition time yet).
pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> CustomResourceDefinitionCondition {
    CustomResourceDefinitionCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then(|| message.to_string()),
        ..CustomResourceDefinitionCondition::default()
    }
}

/// The condition of `type_`, if the CRD has one.
pub fn find<'a>(
    crd: &'a CustomResourceDefinition,
    type_: &str,
) -> Option<&'a CustomResourceDefinitionCondition> {
    crd.status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// Whether the CRD's condition of `type_` is `True`.
pub fn is_true(crd: &CustomResourceDefinition, type_: &str) -> bool {
    find(crd, type_).is_some_and(|c| c.status == "True")
}

/// Whether two conditions say the same (type, status, reason and message), as Kubernetes'
/// `IsCRDConditionEquivalent` compares them.
pub fn equivalent(
    a: &CustomResourceDefinitionCondition,
    b: Option<&CustomResourceDefinitionCondition>,
) -> bool {
    b.is_some_and(|b| {
        a.type_ == b.type_ && a.status == b.status && a.reason == b.reason && a.message == b.message
    })
}

/// Sets a condition: a new type is appended; an existing one takes the new status, reason,
/// message and observed generation, and its `lastTransitionTime` changes only when the status
/// does (or when it had none).
pub fn set(crd: &mut CustomResourceDefinition, mut new: CustomResourceDefinitionCondition) {
    let now = Time::now();
    new.last_transition_time = Some(now);
    let conditions = crd.status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => conditions.push(new),
        Some(existing) => {
            if existing.status != new.status || existing.last_transition_time.is_none() {
                existing.last_transition_time = Some(now);
            }
            existing.status = new.status;
            existing.reason = new.reason;
            existing.message = new.message;
            existing.observed_generation = new.observed_generation;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_type_is_appended_and_an_existing_one_keeps_its_time_unless_its_status_changes() {
        let mut crd = CustomResourceDefinition::default();
        set(
            &mut crd,
            condition(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"),
        );
        set(
            &mut crd,
            condition(
                ESTABLISHED,
                "False",
                "Installing",
                "the initial names have been accepted",
            ),
        );
        let types: Vec<&str> = crd
            .status
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(types, [NAMES_ACCEPTED, ESTABLISHED]);

        let old = Time::from_timestamp(1);
        crd.status.conditions.as_mut().unwrap()[1].last_transition_time = Some(old);
        set(
            &mut crd,
            condition(ESTABLISHED, "False", "Other", "same status"),
        );
        let established = find(&crd, ESTABLISHED).unwrap();
        assert_eq!(established.last_transition_time, Some(old));
        assert_eq!(established.reason.as_deref(), Some("Other"));
        set(
            &mut crd,
            condition(
                ESTABLISHED,
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
        );
        assert_ne!(
            find(&crd, ESTABLISHED).unwrap().last_transition_time,
            Some(old)
        );
        assert!(is_true(&crd, ESTABLISHED));
    }
}
