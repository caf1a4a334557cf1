//! The apiary runtime: the generic API server (options, lifecycle, TLS, the filter chain,
//! discovery, OpenAPI, health and metrics), authentication and authorization, the REST
//! endpoints, the admission chain, the registry that serves every kind of the scheme, and the
//! in-process controllers.

pub mod admission;
pub mod apply;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod controller;
pub mod controllers;
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
pub mod table;
