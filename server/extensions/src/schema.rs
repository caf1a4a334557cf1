//! A version's `openAPIV3Schema` compiled for its custom resources: [`CompiledSchema`] prunes,
//! drops disallowed nulls, defaults and validates them through
//! [`apimachinery::schema::Structural`], in kube-apiserver's order (decode → prune → embedded
//! resources coerced → nulls dropped → defaults → … → validation).

use std::sync::Arc;

use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinitionVersion;
use apimachinery::errors::FieldError;
use apimachinery::runtime::unstructured::{Unstructured, UnstructuredSchema};
use apimachinery::schema::Structural;
use serde_json::Value;

/// The compiled schema of one version of a CRD.
#[derive(Debug)]
pub struct CompiledSchema {
    structural: Structural,
}

impl CompiledSchema {
    /// Compiles the schema of `version`; `None` when it has none or it cannot be compiled
    /// (a CRD is validated before it is stored, so only one stored by another server could
    /// fail here: its objects are then kept as sent).
    pub fn of(version: &CustomResourceDefinitionVersion) -> Option<Arc<dyn UnstructuredSchema>> {
        let schema = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
        let value = serde_json::to_value(schema).ok()?;
        match Structural::new(&value) {
            Ok(structural) => Some(Arc::new(CompiledSchema { structural })),
            Err(e) => {
                tracing::warn!(version = %version.name, error = %e, "a CRD schema that does not compile");
                None
            }
        }
    }
}

impl UnstructuredSchema for CompiledSchema {
    fn prune(&self, fields: &mut Value, pruned: &mut Vec<String>) {
        pruned.extend(self.structural.prune(fields));
        // Embedded resources' metadata becomes what ObjectMeta holds; a malformed one is
        // dropped (what kube-apiserver does on reads from storage).
        if let Ok(unknown) = self.structural.coerce_embedded(fields, true) {
            pruned.extend(unknown);
        }
        self.structural.drop_nulls(fields);
    }

    fn default(&self, fields: &mut Value) {
        self.structural.default(fields);
    }

    fn validate(&self, object: &Unstructured) -> Vec<FieldError> {
        self.structural.validate(object.fields_value())
    }

    fn validate_update(&self, object: &Unstructured, old: &Unstructured) -> Vec<FieldError> {
        self.structural
            .validate_update(object.fields_value(), old.fields_value())
    }
}
