//! Hand-written hooks of apiextensions.k8s.io: the JSON encodings of the "either" types of a
//! JSON schema (`JSON`, `JSONSchemaPropsOrBool`, `JSONSchemaPropsOrArray`,
//! `JSONSchemaPropsOrStringArray`, as Kubernetes' `marshal.go` writes and reads them), and the
//! defaulting of a CustomResourceDefinition.

use ::apimachinery::__private::serde::de::{
    self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor,
};
use ::apimachinery::__private::serde::{Serialize, Serializer};
use ::apimachinery::__private::serde_json;

/// The `Visitor` methods of a value Kubernetes reads as empty when it is neither an object
/// nor an array (`null`, booleans, numbers, strings).
macro_rules! other_values_read_as_empty {
    () => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

impl v1::JSON {
    /// The value, parsed from its JSON text (`null` when it has none).
    pub fn value(&self) -> serde_json::Value {
        self.raw
            .as_ref()
            .and_then(|raw| serde_json::from_slice(&raw.0).ok())
            .unwrap_or(serde_json::Value::Null)
    }

    /// A value holding `value` as its JSON text.
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self {
            raw: Some(::apimachinery::meta::Bytes(
                serde_json::to_vec(value).unwrap_or_default(),
            )),
        }
    }
}

/// `JSON` writes its text as it is (`null` when it has none).
impl Serialize for v1::JSON {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

/// `JSON` reads any value; `null` leaves it without text, as Go's `JSON.UnmarshalJSON` does.
impl<'de> Deserialize<'de> for v1::JSON {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(if value.is_null() {
            Self::default()
        } else {
            Self::from_value(&value)
        })
    }
}

/// `JSONSchemaPropsOrBool` writes its schema when it has one, else `allows`.
impl Serialize for v1::JSONSchemaPropsOrBool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.schema {
            Some(schema) => schema.serialize(serializer),
            None => serializer.serialize_bool(self.allows),
        }
    }
}

/// Reads a schema object (`allows` is then true) or a boolean; anything else is Kubernetes'
/// error `boolean or JSON schema expected`.
impl<'de> Deserialize<'de> for v1::JSONSchemaPropsOrBool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrBool;
        impl<'de> Visitor<'de> for OrBool {
            type Value = v1::JSONSchemaPropsOrBool;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("boolean or JSON schema expected")
            }
            fn visit_bool<E: de::Error>(self, allows: bool) -> Result<Self::Value, E> {
                Ok(v1::JSONSchemaPropsOrBool {
                    allows,
                    schema: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let schema =
                    v1::JSONSchemaProps::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(v1::JSONSchemaPropsOrBool {
                    allows: true,
                    schema: Some(Box::new(schema)),
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(v1::JSONSchemaPropsOrBool::default())
            }
        }
        deserializer.deserialize_any(OrBool)
    }
}

/// `JSONSchemaPropsOrArray` writes its schemas as an array when it has any, else its schema
/// (`null` when it has none).
impl Serialize for v1::JSONSchemaPropsOrArray {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.json_schemas.is_empty() {
            return self.json_schemas.serialize(serializer);
        }
        match &self.schema {
            Some(schema) => schema.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// Reads a schema object or an array of schemas; any other value reads as empty, without an
/// error, as Kubernetes reads it.
impl<'de> Deserialize<'de> for v1::JSONSchemaPropsOrArray {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrArray;
        impl<'de> Visitor<'de> for OrArray {
            type Value = v1::JSONSchemaPropsOrArray;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON schema or an array of JSON schemas")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let schema =
                    v1::JSONSchemaProps::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(v1::JSONSchemaPropsOrArray {
                    schema: Some(Box::new(schema)),
                    json_schemas: Vec::new(),
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let json_schemas = Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(v1::JSONSchemaPropsOrArray {
                    schema: None,
                    json_schemas,
                })
            }
            other_values_read_as_empty!();
        }
        deserializer.deserialize_any(OrArray)
    }
}

/// `JSONSchemaPropsOrStringArray` writes its property names as an array when it has any,
/// else its schema (`null` when it has none).
impl Serialize for v1::JSONSchemaPropsOrStringArray {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.property.is_empty() {
            return self.property.serialize(serializer);
        }
        match &self.schema {
            Some(schema) => schema.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// Reads a schema object or an array of property names; any other value reads as empty,
/// without an error, as Kubernetes reads it.
impl<'de> Deserialize<'de> for v1::JSONSchemaPropsOrStringArray {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrStrings;
        impl<'de> Visitor<'de> for OrStrings {
            type Value = v1::JSONSchemaPropsOrStringArray;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON schema or an array of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let schema =
                    v1::JSONSchemaProps::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(v1::JSONSchemaPropsOrStringArray {
                    schema: Some(Box::new(schema)),
                    property: Vec::new(),
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let property = Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(v1::JSONSchemaPropsOrStringArray {
                    schema: None,
                    property,
                })
            }
            other_values_read_as_empty!();
        }
        deserializer.deserialize_any(OrStrings)
    }
}

/// Kubernetes' `SetDefaults_CustomResourceDefinitionSpec`: `singular` is the lowercase kind,
/// `listKind` is `<kind>List` (when there is a kind), and `conversion` is `None`.
pub fn default_v1_custom_resource_definition_spec(spec: &mut v1::CustomResourceDefinitionSpec) {
    let names = &mut spec.names;
    if names.singular.as_deref().unwrap_or_default().is_empty() {
        let singular = names.kind.to_lowercase();
        names.singular = (!singular.is_empty()).then_some(singular);
    }
    if names.list_kind.as_deref().unwrap_or_default().is_empty() && !names.kind.is_empty() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    if spec.conversion.is_none() {
        spec.conversion = Some(v1::CustomResourceConversion {
            strategy: "None".to_string(),
            webhook: None,
        });
    }
}

/// Kubernetes' `SetDefaults_CustomResourceDefinition`: an empty `status.storedVersions` holds
/// the storage version (the first version with `storage: true`).
pub fn default_v1_custom_resource_definition(crd: &mut v1::CustomResourceDefinition) {
    default_v1_custom_resource_definition_spec(&mut crd.spec);
    if crd
        .status
        .stored_versions
        .as_ref()
        .is_none_or(Vec::is_empty)
        && let Some(storage) = crd.spec.versions.iter().find(|v| v.storage)
    {
        crd.status.stored_versions = Some(vec![storage.name.clone()]);
    }
}
