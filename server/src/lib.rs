//! The apiary runtime: the generic API server (options, lifecycle, TLS, the filter chain,
//! discovery, OpenAPI, health and metrics), authentication and authorization, and the REST
//! endpoints and registry that serve every kind of the scheme.

pub mod authn;
pub mod authz;
pub mod apply;
pub mod endpoints;
pub mod negotiate;
pub mod patch;
pub mod registry;
pub mod table;
pub mod request_info;
pub mod filters;
pub mod genericserver;
pub mod pki;
