//! The typed operations of a kind on JSON values, as the tests check them
//! (`apimachinery::testing`).

#![allow(dead_code)]

pub use apimachinery::testing::KindOps as Ops;

/// The operations of `group`'s `kind`.
pub fn ops(group: &str, kind: &str) -> Ops {
    Ops(kubernetes_api::scheme()
        .by_kind(group, kind)
        .unwrap_or_else(|| panic!("{kind} registered")))
}
