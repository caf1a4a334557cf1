//! OpenAPI emission: v3 and v2 documents of one group version.
//!
//! Contract with the rest of the generator:
//!
//! - [`emit_openapi_v3`] returns the OpenAPI v3 document of the group version served at
//!   `/openapi/v3/apis/<group>/<version>` (`/openapi/v3/api/v1` for core): `openapi`, `info`,
//!   `paths` (the operations the server serves for each kind, with
//!   `x-kubernetes-group-version-kind` and the PATCH operation's `fieldValidation` parameter and
//!   patch media types) and `components.schemas` keyed by Kubernetes-style definition names.
//! - [`emit_openapi_v2`] returns an object `{"definitions": {…}, "paths": {…}}` for this group
//!   version, which the server merges into `/openapi/v2`.
//!
//! The generator serializes both to `OUT_DIR/openapi/<group-module>_<version>.v3.json` and
//! `.v2.json` and registers them in `generated::scheme()` as `apimachinery::scheme::OpenApiDocs`.
//! `Value::Null` is written as an empty object `{}`.

use serde_json::Value;

use crate::model::{GroupModel, VersionModel};

/// Returns the OpenAPI v3 document of one group version (`Null` until emitted).
pub fn emit_openapi_v3(group: &GroupModel, version: &VersionModel) -> Value {
    let _ = (group, version);
    Value::Null
}

/// Returns the OpenAPI v2 `{definitions, paths}` of one group version (`Null` until emitted).
pub fn emit_openapi_v2(group: &GroupModel, version: &VersionModel) -> Value {
    let _ = (group, version);
    Value::Null
}
