//! Controllers the server runs in-process, through the same stores (and strategies) as every
//! request: the system namespaces every cluster has, and the namespace controller that empties
//! a terminating namespace and then lets it go, and the quota controller that keeps every
//! ResourceQuota's status counted.

pub mod namespace;
pub mod resource_quota;
pub mod system_namespaces;
