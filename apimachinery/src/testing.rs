//! What a kind's definitions do to objects, through its [`Kind`] table as the server uses it:
//! decode (with defaults), convert between versions, validate as the registry does on create
//! and update (object metadata, the definitions' markers and rules, the hooks, the kind's
//! strategy), and protobuf. For a crate's own tests of its kinds, hooks and strategies, on
//! JSON values:
//!
//! ```text
//! use apimachinery::testing::KindOps;
//! use serde_json::json;
//!
//! let ships = KindOps(&my_api::fleet_example_com::SHIP_KIND);
//! let v1 = ships.convert(json!({"apiVersion": "fleet.example.com/v1beta1", "kind": "Ship",
//!     "metadata": {"name": "a"}, "spec": {"sailors": 3}}), "v1beta1", "v1").unwrap();
//! assert_eq!(v1["spec"]["crew"], 3);
//! ```

use serde_json::Value;

use crate::errors::FieldError;
use crate::runtime::{Kind, Object};

/// A kind's operations on JSON values; errors are their messages.
pub struct KindOps(pub &'static Kind);

/// A decode's canonical JSON and its unknown fields.
pub struct Decoded {
    /// The typed object re-encoded.
    pub object: Value,
    /// The unknown fields' paths.
    pub unknown_fields: Vec<String>,
}

impl KindOps {
    fn typed(&self, version: &str, value: &Value) -> Result<Box<dyn Object>, String> {
        self.0
            .codec(version)
            .ok_or_else(|| format!("no version {version}"))?
            .decode_value(value)
            .map(|d| d.object)
            .map_err(|e| e.to_string())
    }

    fn json(object: &dyn Object) -> Value {
        object
            .to_value()
            .unwrap_or_else(|e| panic!("a typed object encodes as JSON: {e}"))
    }

    /// The served versions, preferred first.
    pub fn versions(&self) -> Vec<&'static crate::ResourceInfo> {
        self.0.versions().collect()
    }

    /// The storage version's facts.
    pub fn storage_version(&self) -> &'static crate::ResourceInfo {
        self.0.storage_info()
    }

    /// Decodes (and defaults) a JSON object of `version`.
    pub fn decode(&self, version: &str, value: Value) -> Result<Decoded, String> {
        let d = self
            .0
            .codec(version)
            .ok_or_else(|| format!("no version {version}"))?
            .decode_value(&value)
            .map_err(|e| e.to_string())?;
        Ok(Decoded {
            object: Self::json(&*d.object),
            unknown_fields: d
                .tracker
                .unknown_fields()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        })
    }

    /// Defaults a JSON object of `version`.
    pub fn default(&self, version: &str, value: Value) -> Result<Value, String> {
        Ok(Self::json(&*self.typed(version, &value)?))
    }

    /// Converts a JSON object between versions.
    pub fn convert(&self, value: Value, from: &str, to: &str) -> Result<Value, String> {
        let object = self.typed(from, &value)?;
        let converted = self.0.convert(object, to).map_err(|e| e.to_string())?;
        Ok(Self::json(&*converted))
    }

    /// The create errors: metadata, the definition's checks, the strategy's.
    pub fn validate_create(&self, version: &str, value: &Value) -> Result<Vec<FieldError>, String> {
        let object = self.typed(version, value)?;
        let info = object.info();
        let mut errors = Vec::new();
        if !info.create_only {
            crate::validation::validate_object_meta(
                object.metadata(),
                info.namespaced(),
                info.name_format,
                &mut errors,
            );
        }
        errors.extend(object.validate());
        if version == self.0.storage_info().version {
            errors.extend(self.0.strategy().validate(&*object));
        }
        Ok(errors)
    }

    /// The update errors of `value` replacing `old`.
    pub fn validate_update(
        &self,
        version: &str,
        value: &Value,
        old: &Value,
    ) -> Result<Vec<FieldError>, String> {
        let (new, old) = (self.typed(version, value)?, self.typed(version, old)?);
        let info = new.info();
        let mut errors = Vec::new();
        crate::validation::validate_object_meta(
            new.metadata(),
            info.namespaced(),
            info.name_format,
            &mut errors,
        );
        crate::validation::validate_object_meta_update(new.metadata(), old.metadata(), &mut errors);
        errors.extend(new.validate_update(&*old));
        if version == self.0.storage_info().version {
            errors.extend(self.0.strategy().validate_update(&*new, &*old));
        }
        Ok(errors)
    }

    /// The protobuf message of a JSON object of `version`.
    pub fn encode_protobuf(&self, version: &str, value: &Value) -> Result<Vec<u8>, String> {
        let object = self.typed(version, value)?;
        let mut out = Vec::new();
        object.write_protobuf(&mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// The JSON of a protobuf message of `version`.
    pub fn decode_protobuf(&self, version: &str, bytes: &[u8]) -> Result<Value, String> {
        let object = self
            .0
            .codec(version)
            .ok_or_else(|| format!("no version {version}"))?
            .decode_protobuf(bytes)
            .map_err(|e| e.to_string())?;
        Ok(Self::json(&*object))
    }
}
