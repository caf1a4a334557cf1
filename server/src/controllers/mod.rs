//! Controllers the server runs in-process, through the same stores (and strategies) as every
//! request: the system namespaces every cluster has, and the namespace controller that empties
//! a terminating namespace and then lets it go.

pub mod namespace;
pub mod system_namespaces;
