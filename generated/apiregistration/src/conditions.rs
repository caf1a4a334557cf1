//! The `Available` condition of an APIService, as kube-aggregator's helpers set it
//! (`pkg/apis/apiregistration/helpers.go`).

use apimachinery::meta::Time;

use crate::apiregistration_k8s_io::v1::{APIService, APIServiceCondition};

/// The condition type the aggregator maintains.
pub const AVAILABLE: &str = "Available";

/// The reason of a local APIService's `Available` condition.
pub const LOCAL_REASON: &str = "Local";

/// The message of a local APIService's `Available` condition.
pub const LOCAL_MESSAGE: &str = "Local APIServices are always available";

/// An `Available` condition with this status, reason and message, transitioned now.
pub fn available(status: bool, reason: &str, message: impl Into<String>) -> APIServiceCondition {
    APIServiceCondition {
        type_: AVAILABLE.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        last_transition_time: Some(Time::now()),
        reason: Some(reason.to_string()),
        message: Some(message.into()),
    }
}

/// The condition of a local APIService (`NewLocalAvailableAPIServiceCondition`): available,
/// reason `Local`.
pub fn local_available() -> APIServiceCondition {
    available(true, LOCAL_REASON, LOCAL_MESSAGE)
}

/// The condition of type `type_`, if the APIService has one.
pub fn condition<'a>(service: &'a APIService, type_: &str) -> Option<&'a APIServiceCondition> {
    service
        .status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// Sets a condition (`SetAPIServiceCondition`): a new type is appended; an existing one takes
/// the new reason and message, and the new transition time only when its status changes.
pub fn set_condition(service: &mut APIService, new: APIServiceCondition) {
    let conditions = service.status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => conditions.push(new),
        Some(existing) => {
            if existing.status != new.status {
                existing.status = new.status;
                existing.last_transition_time = new.last_transition_time;
            }
            existing.reason = new.reason;
            existing.message = new.message;
        }
    }
}

/// Whether the APIService's `Available` condition is present and `True`
/// (`IsAPIServiceConditionTrue`).
pub fn is_available(service: &APIService) -> bool {
    condition(service, AVAILABLE).is_some_and(|c| c.status == "True")
}
