//! The generic registry: a [`store::ResourceStore`] per kind over the storage interface, plus
//! the metadata rules every kind shares ([`meta`]) and per-kind behaviour.

pub mod codec;
pub mod encoding;
pub mod errors;
pub mod generate_name;
pub mod json_memo;
pub mod meta;
pub mod namespace;
pub mod store;
pub mod transcode;

pub use store::{DeleteOptions, DeleteOutcome, ResourceStore};
