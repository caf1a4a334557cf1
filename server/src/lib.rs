//! The apiary runtime: the generic API server (options, lifecycle, TLS, the filter chain,
//! discovery, OpenAPI, health and metrics), authentication and authorization, the REST
//! endpoints, the admission chain and the registry that serves every kind of the scheme. It
//! knows no kind: the API groups installed into it bring their kinds, admission plugins,
//! authorizers, controllers and bootstrap (`genericserver::groups::ApiGroups`; the Kubernetes
//! control plane is the `controlplane` crate).

pub mod admission;
pub mod apply;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod builder;
pub mod controller;
pub mod delegation;
pub mod endpoints;
pub mod fault;
pub mod filters;
pub mod genericserver;
pub mod held_body;
pub mod negotiate;
pub mod patch;
pub mod pki;
pub mod registry;
pub mod request_info;
pub mod request_target;
pub mod runtime_kinds;
pub mod table;
pub mod tls_client;
pub mod webhook;

pub use builder::Server;
pub use genericserver::groups::ApiGroups;
pub use genericserver::options::ServerOptions;
