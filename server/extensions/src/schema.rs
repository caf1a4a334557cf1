//! A version's `openAPIV3Schema` compiled for its custom resources: an
//! [`apimachinery::schema::Structural`], which prunes, defaults and validates them (it is the
//! codec's [`UnstructuredSchema`]).

use std::sync::Arc;

use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinitionVersion;
use apimachinery::runtime::unstructured::UnstructuredSchema;
use apimachinery::schema::Structural;

/// Compiles the schema of `version`; `None` when it has none or it cannot be compiled (a CRD is
/// validated before it is stored, so only one stored by another server could fail here: its
/// objects are then kept as sent).
pub fn compile(version: &CustomResourceDefinitionVersion) -> Option<Arc<dyn UnstructuredSchema>> {
    let schema = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    let value = serde_json::to_value(schema).ok()?;
    match Structural::new(&value) {
        Ok(structural) => Some(Arc::new(structural)),
        Err(e) => {
            tracing::warn!(version = %version.name, error = %e, "a CRD schema that does not compile");
            None
        }
    }
}
