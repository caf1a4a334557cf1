//! The conditions of a CustomResourceDefinition's status and how its names are accepted
//! (kube-apiserver's naming controller): reasons and messages are Kubernetes'.

use apiextensions_api::apiextensions_k8s_io::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
};
use apimachinery::meta::Time;

/// `NamesAccepted`: whether the requested names conflict with another CRD's of the group.
pub const NAMES_ACCEPTED: &str = "NamesAccepted";
/// `Established`: whether the resource is served.
pub const ESTABLISHED: &str = "Established";
/// `Terminating`: whether the CRD is being deleted and how the cleanup of its objects goes.
pub const TERMINATING: &str = "Terminating";
/// `NonStructuralSchema`: the CRD's schemas break the rules of structural schemas (only a CRD
/// kept from before those rules, with `spec.preserveUnknownFields: true`, can).
pub const NON_STRUCTURAL_SCHEMA: &str = "NonStructuralSchema";

/// One condition's new state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionState {
    /// The type.
    pub type_: &'static str,
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// The reason.
    pub reason: &'static str,
    /// The message.
    pub message: String,
}

impl ConditionState {
    /// A condition's state.
    pub fn new(
        type_: &'static str,
        status: &'static str,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

/// The condition of `type_`, if the CRD has it.
pub fn condition<'a>(
    crd: &'a CustomResourceDefinition,
    type_: &str,
) -> Option<&'a CustomResourceDefinitionCondition> {
    crd.status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is `True`.
pub fn is_true(crd: &CustomResourceDefinition, type_: &str) -> bool {
    condition(crd, type_).is_some_and(|c| c.status == "True")
}

/// Whether the condition of `type_` already says `state`.
pub fn says(crd: &CustomResourceDefinition, state: &ConditionState) -> bool {
    condition(crd, state.type_).is_some_and(|c| {
        c.status == state.status
            && c.reason.as_deref() == Some(state.reason)
            && c.message.as_deref() == Some(state.message.as_str())
    })
}

/// Kubernetes' `SetCRDCondition`: a new type is appended; an existing one takes the status,
/// reason and message, and a new transition time only when its status changes.
pub fn set(
    conditions: &mut Option<Vec<CustomResourceDefinitionCondition>>,
    state: &ConditionState,
) {
    let list = conditions.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|c| c.type_ == state.type_) {
        Some(c) => {
            if c.status != state.status || c.last_transition_time.is_none() {
                c.last_transition_time = Some(Time::now());
            }
            c.status = state.status.to_string();
            c.reason = Some(state.reason.to_string());
            c.message = Some(state.message.clone());
        }
        None => list.push(CustomResourceDefinitionCondition {
            type_: state.type_.to_string(),
            status: state.status.to_string(),
            last_transition_time: Some(Time::now()),
            reason: Some(state.reason.to_string()),
            message: Some(state.message.clone()),
            ..Default::default()
        }),
    }
}

/// Kubernetes' `RemoveCRDCondition`: the condition of `type_` goes.
pub fn remove(conditions: &mut Option<Vec<CustomResourceDefinitionCondition>>, type_: &str) {
    if let Some(list) = conditions {
        list.retain(|c| c.type_ != type_);
    }
}

/// The `NonStructuralSchema` condition the CRD should have (kube-apiserver's
/// nonstructuralschema controller), or `None` when it should have none. Validation lets a
/// schema break the structural rules only on an update of a CRD whose schema already did with
/// `spec.preserveUnknownFields: true`, so a CRD without that setting is not read.
pub fn non_structural(crd: &CustomResourceDefinition) -> Option<ConditionState> {
    if crd.spec.preserve_unknown_fields != Some(true) {
        return None;
    }
    let schemas: Vec<(&str, Option<serde_json::Value>)> = crd
        .spec
        .versions
        .iter()
        .map(|v| {
            let schema = v
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref());
            (
                v.name.as_str(),
                schema.map(|s| serde_json::to_value(s).unwrap_or_default()),
            )
        })
        .collect();
    let versions: Vec<(&str, Option<&serde_json::Value>)> =
        schemas.iter().map(|(n, s)| (*n, s.as_ref())).collect();
    let condition = apimachinery::schema::nonstructural_condition(true, &versions)?;
    Some(ConditionState::new(
        NON_STRUCTURAL_SCHEMA,
        condition.status,
        condition.reason,
        condition.message,
    ))
}

/// Whether the CRD's conversion webhook `caBundle` (if any) holds certificates: PEM
/// `CERTIFICATE` blocks, each of base64 (Kubernetes' establishing controller refuses to
/// establish a CRD whose bundle has none).
pub fn conversion_ca_bundle_is_valid(crd: &CustomResourceDefinition) -> bool {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let bundle = crd
        .spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref())
        .and_then(|c| c.ca_bundle.as_ref())
        .map(|b| b.0.as_slice())
        .unwrap_or_default();
    if bundle.is_empty() {
        return true;
    }
    let Ok(mut rest) = std::str::from_utf8(bundle) else {
        return false;
    };
    let mut found = false;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let Some(end) = after.find(END) else {
            return false;
        };
        let body: String = after[..end].split_whitespace().collect();
        if base64::Engine::decode(&base64::engine::general_purpose::STANDARD, body).is_err() {
            return false;
        }
        found = true;
        rest = &after[end + END.len()..];
    }
    found
}

/// What the naming controller decides for one CRD: the names it accepts and the
/// `NamesAccepted` condition.
#[derive(Clone, Debug, PartialEq)]
pub struct Naming {
    /// The names accepted (each requested name that conflicts with no other CRD of the group;
    /// the accepted one kept otherwise).
    pub accepted: CustomResourceDefinitionNames,
    /// `NamesAccepted`.
    pub condition: ConditionState,
}

/// Accepts the names `crd` asks for against the accepted names of `others` (the other CRDs of
/// its group), as kube-apiserver's naming controller: plural, singular, short names, kind and
/// list kind in turn, a later conflict's reason winning.
pub fn accept_names(
    crd: &CustomResourceDefinition,
    others: &[&CustomResourceDefinition],
) -> Naming {
    let requested = &crd.spec.names;
    let current = &crd.status.accepted_names;
    let mut resources: Vec<&str> = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    for other in others {
        let n = &other.status.accepted_names;
        resources.push(&n.plural);
        resources.extend(n.singular.as_deref());
        resources.extend(n.short_names.iter().map(String::as_str));
        kinds.push(&n.kind);
        kinds.extend(n.list_kind.as_deref());
    }
    let resources: Vec<&str> = resources.into_iter().filter(|r| !r.is_empty()).collect();
    let kinds: Vec<&str> = kinds.into_iter().filter(|k| !k.is_empty()).collect();
    let mut accepted = current.clone();
    let mut conflict: Option<(&'static str, String)> = None;
    let in_use = |name: &str| format!("{name:?} is already in use");

    if requested.plural == current.plural || !resources.contains(&requested.plural.as_str()) {
        accepted.plural = requested.plural.clone();
    } else {
        conflict = Some(("PluralConflict", in_use(&requested.plural)));
    }
    let singular = requested.singular.as_deref().unwrap_or_default();
    if requested.singular == current.singular || !resources.contains(&singular) {
        accepted.singular = requested.singular.clone();
    } else {
        conflict = Some(("SingularConflict", in_use(singular)));
    }
    if requested.short_names != current.short_names {
        let errors: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| !current.short_names.contains(s) && resources.contains(&s.as_str()))
            .map(|s| in_use(s))
            .collect();
        match errors.len() {
            0 => accepted.short_names = requested.short_names.clone(),
            1 => conflict = Some(("ShortNamesConflict", errors[0].clone())),
            _ => conflict = Some(("ShortNamesConflict", format!("[{}]", errors.join(", ")))),
        }
    }
    if requested.kind == current.kind || !kinds.contains(&requested.kind.as_str()) {
        accepted.kind = requested.kind.clone();
    } else {
        conflict = Some(("KindConflict", in_use(&requested.kind)));
    }
    let list_kind = requested.list_kind.as_deref().unwrap_or_default();
    if requested.list_kind == current.list_kind || !kinds.contains(&list_kind) {
        accepted.list_kind = requested.list_kind.clone();
    } else {
        conflict = Some(("ListKindConflict", in_use(list_kind)));
    }
    accepted.categories = requested.categories.clone();
    let condition = match conflict {
        None => ConditionState::new(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => ConditionState::new(NAMES_ACCEPTED, "False", reason, message),
    };
    Naming {
        accepted,
        condition,
    }
}

/// The `Established` condition the naming controller writes beside `NamesAccepted`: kept when
/// present, `NotAccepted` when absent, `Installing` once the names are accepted and it is not
/// yet `True`.
pub fn established_while_naming(
    crd: &CustomResourceDefinition,
    names: &ConditionState,
) -> Option<ConditionState> {
    let current = condition(crd, ESTABLISHED);
    if current.is_some_and(|c| c.status == "True") {
        return None;
    }
    if names.status == "True" {
        return Some(ConditionState::new(
            ESTABLISHED,
            "False",
            "Installing",
            "the initial names have been accepted",
        ));
    }
    match current {
        Some(_) => None,
        None => Some(ConditionState::new(
            ESTABLISHED,
            "False",
            "NotAccepted",
            "not all names are accepted",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(plural: &str, kind: &str, short: &[&str]) -> CustomResourceDefinition {
        let mut crd = CustomResourceDefinition::default();
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

    #[test]
    fn a_schema_kept_with_preserve_unknown_fields_gets_non_structural_schema() {
        use apiextensions_api::apiextensions_k8s_io::v1::{
            CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
        };
        let mut c = crd("widgets", "Widget", &[]);
        // No type at the root: not structural.
        let schema: JSONSchemaProps = serde_json::from_value(serde_json::json!({
            "properties": {"spec": {"type": "object"}}
        }))
        .unwrap();
        c.spec.versions = vec![CustomResourceDefinitionVersion {
            name: "v1".into(),
            served: true,
            storage: true,
            schema: Some(CustomResourceValidation {
                open_api_v3_schema: Some(schema),
            }),
            ..Default::default()
        }];
        assert_eq!(non_structural(&c), None, "only with preserveUnknownFields");
        c.spec.preserve_unknown_fields = Some(true);
        let state = non_structural(&c).expect("a NonStructuralSchema condition");
        assert_eq!(
            (state.type_, state.status, state.reason),
            (NON_STRUCTURAL_SCHEMA, "True", "Violations")
        );
        assert_eq!(
            state.message,
            "[spec.preserveUnknownFields: Invalid value: true: must be false, spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root]"
        );
        let mut conditions = None;
        set(&mut conditions, &state);
        remove(&mut conditions, NON_STRUCTURAL_SCHEMA);
        assert_eq!(conditions, Some(vec![]));
    }

    fn accepted(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
        crd.status.accepted_names = crd.spec.names.clone();
        crd
    }

    #[test]
    fn free_names_are_accepted() {
        let other = accepted(crd("gizmos", "Gizmo", &["gz"]));
        let naming = accept_names(&crd("gadgets", "Gadget", &["gd"]), &[&other]);
        assert_eq!(
            naming.condition,
            ConditionState::new(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found")
        );
        assert_eq!(naming.accepted.plural, "gadgets");
        assert_eq!(naming.accepted.short_names, vec!["gd".to_string()]);
        assert_eq!(naming.accepted.categories, vec!["all".to_string()]);
    }

    #[test]
    fn conflicts_name_the_name_and_the_last_reason_wins() {
        let other = accepted(crd("gizmos", "Gizmo", &["gz", "gd"]));
        let naming = accept_names(&crd("gizmos", "Gizmo", &["gz", "gd"]), &[&other]);
        assert_eq!(naming.condition.status, "False");
        assert_eq!(naming.condition.reason, "ListKindConflict");
        assert_eq!(naming.condition.message, "\"GizmoList\" is already in use");
        assert_eq!(
            naming.accepted.plural, "",
            "a conflicting plural is not accepted"
        );

        let naming = accept_names(&crd("gadgets", "Gadget", &["gz", "gd"]), &[&other]);
        assert_eq!(naming.condition.reason, "ShortNamesConflict");
        assert_eq!(
            naming.condition.message,
            "[\"gz\" is already in use, \"gd\" is already in use]"
        );
        assert_eq!(naming.accepted.plural, "gadgets");
        assert!(naming.accepted.short_names.is_empty());
    }

    #[test]
    fn established_follows_the_names() {
        let fresh = crd("gadgets", "Gadget", &[]);
        let ok = ConditionState::new(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found");
        let bad = ConditionState::new(NAMES_ACCEPTED, "False", "KindConflict", "x");
        assert_eq!(
            established_while_naming(&fresh, &bad).map(|c| c.reason),
            Some("NotAccepted")
        );
        assert_eq!(
            established_while_naming(&fresh, &ok).map(|c| c.reason),
            Some("Installing")
        );
        let mut established = fresh.clone();
        set(
            &mut established.status.conditions,
            &ConditionState::new(ESTABLISHED, "True", "InitialNamesAccepted", "x"),
        );
        assert_eq!(established_while_naming(&established, &bad), None);
    }

    #[test]
    fn set_moves_the_transition_time_only_on_a_status_change() {
        let mut conditions = None;
        let state = ConditionState::new(TERMINATING, "True", "A", "a");
        set(&mut conditions, &state);
        let first = conditions.as_ref().unwrap()[0].last_transition_time;
        set(
            &mut conditions,
            &ConditionState::new(TERMINATING, "True", "B", "b"),
        );
        let list = conditions.as_ref().unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].reason.as_deref(), Some("B"));
        assert_eq!(list[0].last_transition_time, first);
    }
}
