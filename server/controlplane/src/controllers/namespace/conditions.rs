//! What one pass over a namespace's contents found ([`Contents`]) and the status conditions it
//! writes, as Kubernetes' namespace deleter writes them (its `namespaceConditionUpdater`,
//! `status_condition_utils.go`): the same types, reasons and messages.

use std::collections::BTreeMap;

use kubernetes_api::core::v1::NamespaceCondition;

/// What one pass over a namespace's contents found.
#[derive(Debug, Default)]
pub(super) struct Contents {
    /// Objects found (a kind that could not be listed, or whose deletion failed, counts as
    /// one).
    pub(super) found: usize,
    /// The objects still there after the pass, by resource and group.
    pub(super) remaining: BTreeMap<(String, String), usize>,
    /// The finalizers those objects hold, with how many hold each.
    pub(super) finalizers: BTreeMap<String, usize>,
    /// Lists and deletes that failed.
    pub(super) failures: Vec<String>,
    /// Why the discovery of some group versions failed (client-go's `ErrGroupDiscoveryFailed`:
    /// how many failed, and its message), if it did.
    pub(super) discovery: Option<(usize, String)>,
}

impl Contents {
    /// Whether the namespace may be finalized: nothing found, and every group discovered.
    pub(super) fn done(&self) -> bool {
        self.found == 0 && self.discovery.is_none()
    }

    /// Counts `count` objects of `resource` in `group` still there, and the finalizers they
    /// hold.
    pub(super) fn remain<'a>(
        &mut self,
        resource: &str,
        group: &str,
        count: usize,
        finalizers: impl IntoIterator<Item = &'a String>,
    ) {
        if count == 0 {
            return;
        }
        *self
            .remaining
            .entry((resource.to_string(), group.to_string()))
            .or_default() += count;
        for finalizer in finalizers {
            *self.finalizers.entry(finalizer.clone()).or_default() += 1;
        }
    }

    /// The deletion conditions of what was found, in Kubernetes' order and words (its
    /// `namespaceConditionUpdater`): each is `True` with what went wrong, or `False` with its
    /// "ok" reason and message. Group versions never fail to parse here: discovery gives them
    /// split.
    pub(super) fn conditions(&self) -> Vec<NamespaceCondition> {
        let discovery = self.discovery.as_ref().map(|(failing, error)| {
            let message = format!("Discovery failed for some groups, {failing} failing: {error}");
            ("DiscoveryFailed", message)
        });
        let content_failure = (!self.failures.is_empty()).then(|| {
            let mut failures = self.failures.clone();
            failures.sort();
            let message = format!(
                "Failed to delete all resource types, {} remaining: {}",
                failures.len(),
                failures.join(", ")
            );
            ("ContentDeletionFailed", message)
        });
        let remaining = (!self.remaining.is_empty()).then(|| {
            let left: Vec<String> = self
                .remaining
                .iter()
                .map(|((resource, group), n)| {
                    format!("{resource}.{group} has {n} resource instances")
                })
                .collect();
            let message = format!("Some resources are remaining: {}", left.join(", "));
            ("SomeResourcesRemain", message)
        });
        let finalizers = (!self.finalizers.is_empty()).then(|| {
            let left: Vec<String> = self
                .finalizers
                .iter()
                .map(|(finalizer, n)| format!("{finalizer} in {n} resource instances"))
                .collect();
            let message = format!("Some finalizers are remaining: {}", left.join(", "));
            ("SomeFinalizerRemain", message)
        });
        vec![
            condition(
                "NamespaceDeletionDiscoveryFailure",
                discovery,
                (
                    "ResourcesDiscovered",
                    "All resources successfully discovered",
                ),
            ),
            condition(
                "NamespaceDeletionGroupVersionParsingFailure",
                None,
                (
                    "ParsedGroupVersions",
                    "All legacy kube types successfully parsed",
                ),
            ),
            condition(
                "NamespaceDeletionContentFailure",
                content_failure,
                (
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization",
                ),
            ),
            condition(
                "NamespaceContentRemaining",
                remaining,
                ("ContentRemoved", "All content successfully removed"),
            ),
            condition(
                "NamespaceFinalizersRemaining",
                finalizers,
                ("ContentRemoved", "All content successfully removed"),
            ),
        ]
    }
}

/// A condition of type `kind`, as of now: `True` with the reason and message of `failing`,
/// else `False` with those of `ok`.
fn condition(kind: &str, failing: Option<(&str, String)>, ok: (&str, &str)) -> NamespaceCondition {
    let (status, reason, message) = match failing {
        Some((reason, message)) => ("True", reason, message),
        None => ("False", ok.0, ok.1.to_string()),
    };
    NamespaceCondition {
        r#type: kind.into(),
        status: status.into(),
        last_transition_time: Some(apimachinery::meta::Time::now()),
        reason: Some(reason.into()),
        message: Some(message),
    }
}

/// Sets each of `wanted` in `conditions` (Kubernetes' `updateConditions`): a missing type is
/// added, a changed one takes the new status, reason and message (and the new transition time
/// only when its status changed). Returns whether anything changed.
pub(super) fn merge_conditions(
    conditions: &mut Vec<NamespaceCondition>,
    wanted: &[NamespaceCondition],
) -> bool {
    let mut changed = false;
    for new in wanted {
        match conditions.iter_mut().find(|c| c.r#type == new.r#type) {
            None => {
                conditions.push(new.clone());
                changed = true;
            }
            Some(old)
                if old.status != new.status
                    || old.reason != new.reason
                    || old.message != new.message =>
            {
                if old.status != new.status {
                    old.last_transition_time = new.last_transition_time;
                }
                old.status = new.status.clone();
                old.reason = new.reason.clone();
                old.message = new.message.clone();
                changed = true;
            }
            Some(_) => {}
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_transition_time_until_its_status_changes() {
        let condition = |status: &str, message: &str, at: i64| NamespaceCondition {
            r#type: "NamespaceContentRemaining".into(),
            status: status.into(),
            last_transition_time: Some(apimachinery::meta::Time::from_timestamp(at)),
            reason: Some("SomeResourcesRemain".into()),
            message: Some(message.into()),
        };
        let mut conditions = vec![condition("True", "two left", 100)];
        assert!(!merge_conditions(
            &mut conditions,
            &[condition("True", "two left", 200)]
        ));
        assert!(merge_conditions(
            &mut conditions,
            &[condition("True", "one left", 300)]
        ));
        assert_eq!(conditions, [condition("True", "one left", 100)]);
        assert!(merge_conditions(
            &mut conditions,
            &[condition("False", "one left", 400)]
        ));
        assert_eq!(conditions, [condition("False", "one left", 400)]);
    }

    #[test]
    fn a_discovery_failure_is_reported_in_kubes_words() {
        let contents = Contents {
            discovery: Some((
                1,
                "unable to retrieve the complete list of server APIs: w.example/v1: stale GroupVersion discovery: w.example/v1".into(),
            )),
            ..Contents::default()
        };
        assert!(!contents.done());
        let conditions = contents.conditions();
        let discovery = &conditions[0];
        assert_eq!(
            (
                discovery.r#type.as_str(),
                discovery.status.as_str(),
                discovery.reason.as_deref(),
                discovery.message.as_deref()
            ),
            (
                "NamespaceDeletionDiscoveryFailure",
                "True",
                Some("DiscoveryFailed"),
                Some(
                    "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: w.example/v1: stale GroupVersion discovery: w.example/v1"
                )
            )
        );
        assert!(conditions[1..].iter().all(|c| c.status == "False"));
        assert!(Contents::default().done());
    }
}
