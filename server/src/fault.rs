//! Fault injection for tests: failures that the default build cannot produce, so that the
//! server's recovery from them can be tested against the real binary.
//!
//! Every fault point lives here and is compiled only with the `fault-injection` cargo feature
//! (of this crate, forwarded by the `apiary` binary crate). The feature is never in the default
//! build; `--all-features` (how `tools/test` builds every test) turns it on. Without it each
//! function below is empty and the triggers are ordinary, ignored request headers.
//!
//! The triggers:
//!
//! - [`FAULT_HEADER`]`: panic` on a request of an authenticated member of `system:masters`
//!   (after impersonation): the request's handler panics once the request has been
//!   authorized, which the panic filter turns into a 500 `Status` (and the audit log into a
//!   `Panic` event).
//! - [`FAULT_HEADER`]`: fsync-delay=<duration>` (a Go duration such as `200ms`; `0` clears it)
//!   on any request of a member of `system:masters`: from then on every commit of the embedded
//!   store's writer waits that long before its durable commit (its fsync), as on a slow disk,
//!   until another such request changes it (`storage::fault::set_commit_delay`; the setting is
//!   process-wide and the request itself is served as usual). The etcd backend has no such
//!   point. A malformed value is ignored.

use http::HeaderMap;

use crate::authn::{MASTERS_GROUP, UserInfo};

/// The request header that asks for a fault (honoured only with the `fault-injection`
/// feature).
pub const FAULT_HEADER: &str = "x-apiary-fault";

/// Whether this build honours the fault triggers.
pub const ENABLED: bool = cfg!(feature = "fault-injection");

/// Applies the fault the request asks for with [`FAULT_HEADER`] (see the module docs) when its
/// user is in `system:masters` and the build has the `fault-injection` feature: panics for
/// `panic`, sets the embedded writer's commit delay for `fsync-delay=<duration>`; does nothing
/// otherwise.
#[inline(always)]
pub fn handler(headers: &HeaderMap, user: &UserInfo) {
    if ENABLED && !headers.is_empty() {
        handler_fault(headers, user);
    }
}

#[cold]
fn handler_fault(headers: &HeaderMap, user: &UserInfo) {
    let Some(asked) = headers.get(FAULT_HEADER).and_then(|v| v.to_str().ok()) else {
        return;
    };
    if !user.in_group(MASTERS_GROUP) {
        return;
    }
    if asked.eq_ignore_ascii_case("panic") {
        panic!("fault injected by the {FAULT_HEADER} request header");
    }
    if let Some(value) = asked.strip_prefix("fsync-delay=")
        && let Ok(nanos) = apimachinery::duration::parse_go_duration(value.trim())
    {
        let delay = std::time::Duration::from_nanos(nanos.max(0) as u64);
        tracing::warn!(?delay, "fault injected: embedded commits are delayed");
        storage::fault::set_commit_delay(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(group: &str) -> UserInfo {
        UserInfo {
            name: "u".into(),
            groups: vec![group.into()],
            ..UserInfo::default()
        }
    }

    fn asking() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(FAULT_HEADER, http::HeaderValue::from_static("panic"));
        headers
    }

    #[test]
    fn only_masters_may_ask_and_only_in_the_fault_build() {
        let masters = std::panic::catch_unwind(|| handler(&asking(), &user(MASTERS_GROUP)));
        assert_eq!(masters.is_err(), ENABLED);
        // Anyone else, or a request without the header, is served as usual.
        handler(&asking(), &user("system:authenticated"));
        handler(&HeaderMap::new(), &user(MASTERS_GROUP));
    }
}
