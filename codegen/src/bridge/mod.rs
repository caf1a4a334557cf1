//! The bridge between definitions and CustomResourceDefinitions: [`import`] turns a CRD into
//! the definitions of its group, for a user who starts with a CRD and wants an API server with
//! compiled types.

pub mod import;
