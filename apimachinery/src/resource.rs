//! The REST-mapping and discovery facts of one resource at one version.
//!
//! The generated crate emits one [`ResourceInfo`] per served (group, version, kind); the server
//! installs routes, discovery documents and printers from them and nothing else.

/// Whether objects of a kind live in a namespace or at cluster scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects live in a namespace (`/namespaces/{ns}/...`).
    Namespaced,
    /// Objects live at cluster scope.
    Cluster,
}

/// A column of `kubectl get` output (a `TableColumnDefinition` plus how to fill it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    /// The column header, such as `Replicas`.
    pub name: &'static str,
    /// The OpenAPI type of the cell: `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: &'static str,
    /// An optional OpenAPI format, such as `name` or `date-time`.
    pub format: &'static str,
    /// A human description of the column.
    pub description: &'static str,
    /// 0 for columns always shown; greater for `-o wide` only.
    pub priority: i32,
    /// The simple JSONPath (`.spec.replicas`) that selects the cell from the object.
    pub json_path: &'static str,
}

/// A subresource a kind declares (`#[subresource]`) with a body of another kind, such as a
/// ServiceAccount's `token` (an `authentication.k8s.io/v1` `TokenRequest`); its strategy's
/// `create_subresource` answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubresourceInfo {
    /// The path segment, such as `token`.
    pub name: &'static str,
    /// The group of the body's kind.
    pub group: &'static str,
    /// The version of the body's kind.
    pub version: &'static str,
    /// The body's kind, such as `TokenRequest`.
    pub kind: &'static str,
    /// The verbs served (only `create` is).
    pub verbs: &'static [&'static str],
}

/// Where the scale subresource reads and writes its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleInfo {
    /// JSONPath of the desired replicas, such as `.spec.replicas`.
    pub spec_replicas_path: &'static str,
    /// JSONPath of the observed replicas, such as `.status.replicas`.
    pub status_replicas_path: &'static str,
    /// JSONPath of the label selector string, such as `.status.selector`; may be empty.
    pub label_selector_path: &'static str,
}

/// Everything the server needs to serve and describe one kind at one version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The group; empty for core.
    pub group: &'static str,
    /// The version of this entry.
    pub version: &'static str,
    /// The kind, such as `Widget`.
    pub kind: &'static str,
    /// The list kind, such as `WidgetList`.
    pub list_kind: &'static str,
    /// The plural resource name used in URLs, such as `widgets`.
    pub plural: &'static str,
    /// The singular resource name, such as `widget`.
    pub singular: &'static str,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Short names accepted by kubectl, such as `wd`.
    pub short_names: &'static [&'static str],
    /// Categories, such as `all`.
    pub categories: &'static [&'static str],
    /// The verbs of the main resource, in Kubernetes' order (create, delete, deletecollection,
    /// get, list, patch, update, watch).
    pub verbs: &'static [&'static str],
    /// Whether the kind has a `/status` subresource.
    pub status_subresource: bool,
    /// The scale subresource, if any.
    pub scale: Option<ScaleInfo>,
    /// The kind's own subresources (`#[subresource]`), answered by its strategy.
    pub subresources: &'static [SubresourceInfo],
    /// Printer columns after `Name` and before `Age`.
    pub printer_columns: &'static [PrinterColumn],
    /// Extra field selector labels beyond `metadata.name` and `metadata.namespace`, as JSONPaths
    /// without the leading dot (for example `type` on Secrets, `involvedObject.name` on Events).
    pub field_selectors: &'static [&'static str],
    /// Whether this version is the storage version of its kind.
    pub storage_version: bool,
    /// Whether the kind accepts strategic merge patch (Kubernetes' built-in kinds do; custom
    /// kinds such as Widget do not and answer 415).
    pub strategic_merge_patch: bool,
    /// Whether objects may be updated without a resourceVersion (`AllowUnconditionalUpdate`).
    pub allow_unconditional_update: bool,
    /// Whether a `PUT` of a missing object creates it (`AllowCreateOnUpdate`), answering 201;
    /// otherwise such a `PUT` is 404. Kubernetes allows it for Events, Leases and the RBAC
    /// kinds; `/status` and other subresources never create.
    pub allow_create_on_update: bool,
    /// Whether the kind sets `metadata.generation` (1 on create, bumped when the spec changes
    /// or deletion starts). Custom kinds do; most of Kubernetes' built-in kinds do not.
    pub tracks_generation: bool,
    /// Whether the kind is a "virtual" request/response kind that is created but never stored
    /// (SubjectAccessReview, TokenReview, ...): only `create` is served.
    pub create_only: bool,
    /// The protobuf package of the group version, such as `k8s.io.api.core.v1`.
    pub proto_package: &'static str,
    /// How `metadata.name` is validated: `dns1123-subdomain`, `dns1123-label` or
    /// `path-segment`.
    pub name_format: &'static str,
}

impl ResourceInfo {
    /// Returns true for namespaced kinds.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// Returns the `apiVersion` string of this entry.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether `api_version` is this entry's `apiVersion` string (without building it).
    pub fn is_api_version(&self, api_version: &str) -> bool {
        if self.group.is_empty() {
            api_version == self.version
        } else {
            api_version
                .strip_prefix(self.group)
                .and_then(|rest| rest.strip_prefix('/'))
                == Some(self.version)
        }
    }
}
