//! The scheme: every kind the binary knows (as the generated [`Kind`] tables), the OpenAPI
//! documents of every group version, and the admission plugins the definitions ship.

use std::collections::BTreeMap;

use crate::admission::Plugin;
use crate::runtime::Kind;

/// Why a value could not be decoded into, or encoded from, a typed object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The JSON did not match the type (wrong type of a field, bad time, ...).
    #[error("{0}")]
    Json(String),
    /// The protobuf bytes were malformed or did not match the type.
    #[error("protobuf: {0}")]
    Protobuf(String),
    /// The requested version is not served for this kind.
    #[error("no kind {kind} is registered for version {version}")]
    UnknownVersion {
        /// The kind.
        kind: String,
        /// The version asked for.
        version: String,
    },
    /// A conversion between versions failed.
    #[error("conversion: {0}")]
    Conversion(String),
    /// A conversion failed with a message the client sees as it is: a CustomResourceDefinition's
    /// conversion webhook failed or answered wrongly (`conversion webhook for … failed: …`).
    #[error("{0}")]
    ConversionFailed(String),
}

impl CodecError {
    /// The error a request gets when converting its object failed: a
    /// [`CodecError::ConversionFailed`] as kube-apiserver answers a conversion webhook's failure
    /// (500 without a reason, the message as it is), anything else a 500 `InternalError`.
    pub fn into_api_error(self) -> crate::status::ApiError {
        use crate::status::{ApiError, StatusReason};
        match self {
            CodecError::ConversionFailed(message) => {
                ApiError::new(500, StatusReason::Unknown, message, None)
            }
            other => ApiError::internal(other),
        }
    }
}

/// OpenAPI documents of one group version, as produced by the generator.
#[derive(Debug, Clone)]
pub struct OpenApiDocs {
    /// The group (empty for core).
    pub group: &'static str,
    /// The version.
    pub version: &'static str,
    /// The OpenAPI v3 document of this group version (JSON text): `components.schemas` plus
    /// the path operations the server serves.
    pub v3: &'static str,
    /// The OpenAPI v2 `definitions` and `paths` of this group version (JSON text: an object
    /// with those two members), merged into `/openapi/v2` by the server.
    pub v2: &'static str,
}

/// Every kind the binary serves, keyed for the lookups the server makes.
#[derive(Clone, Default)]
pub struct Scheme {
    kinds: Vec<&'static Kind>,
    /// Group → kind → index into `kinds` (nested so lookups borrow the names, no allocation).
    by_group_kind: BTreeMap<String, BTreeMap<String, usize>>,
    /// Group → plural resource → index into `kinds`.
    by_group_resource: BTreeMap<String, BTreeMap<String, usize>>,
    openapi: Vec<OpenApiDocs>,
    group_order: Vec<String>,
    plugins: Vec<Plugin>,
}

impl Scheme {
    /// Creates an empty scheme.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a kind. Groups are listed in discovery in the order they are first added.
    pub fn add_kind(&mut self, table: &'static Kind) {
        let index = self.kinds.len();
        let first = table.codecs()[0].info();
        let (group, kind, plural) = (
            first.group.to_string(),
            first.kind.to_string(),
            first.plural.to_string(),
        );
        if !self.group_order.contains(&group) {
            self.group_order.push(group.clone());
        }
        self.by_group_kind
            .entry(group.clone())
            .or_default()
            .insert(kind, index);
        self.by_group_resource
            .entry(group)
            .or_default()
            .insert(plural, index);
        self.kinds.push(table);
    }

    /// Registers an admission plugin a definition ships (the generated `register` functions
    /// call it for the plugins named in `api-defs/`). A server's own plugins, beside no
    /// definition, go to the server instead (`server::Server::admission_plugin`, or
    /// `Config::admission_plugins` of the generic server).
    pub fn add_admission_plugin(&mut self, plugin: Plugin) {
        self.plugins.push(plugin);
    }

    /// The admission plugins the definitions ship, in registration order.
    pub fn admission_plugins(&self) -> &[Plugin] {
        &self.plugins
    }

    /// Registers the OpenAPI documents of one group version.
    pub fn add_openapi(&mut self, docs: OpenApiDocs) {
        self.openapi.push(docs);
    }

    /// All registered kinds, in registration order.
    pub fn kinds(&self) -> &[&'static Kind] {
        &self.kinds
    }

    /// Group names in registration order (the core group is `""`).
    pub fn groups(&self) -> &[String] {
        &self.group_order
    }

    /// Looks a kind up by group and kind name.
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&'static Kind> {
        self.by_group_kind
            .get(group)
            .and_then(|kinds| kinds.get(kind))
            .map(|&i| self.kinds[i])
    }

    /// Looks a kind up by group and plural resource name.
    pub fn by_resource(&self, group: &str, resource: &str) -> Option<&'static Kind> {
        self.by_group_resource
            .get(group)
            .and_then(|resources| resources.get(resource))
            .map(|&i| self.kinds[i])
    }

    /// The OpenAPI documents of every group version.
    pub fn openapi(&self) -> &[OpenApiDocs] {
        &self.openapi
    }
}
