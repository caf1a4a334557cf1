//! kube-rs integration (cargo feature `kube` of this crate; a generated crate's own `kube`
//! feature turns it on and makes every generated kind a [`KubeKind`]).
//!
//! `kube::Resource` hands out k8s-openapi's `ObjectMeta`, while the generated kinds carry
//! `apimachinery::meta::ObjectMeta` (the same JSON). The generated types keep apimachinery's
//! type on purpose: cargo features must be additive, and switching a field's type under a
//! feature would change it for the server as soon as any crate in the build enabled `kube`;
//! `apimachinery` also stays free of the k8s-openapi dependency. Instead, [`KubeObject<T>`]
//! wraps any generated kind `T` with a k8s-openapi `ObjectMeta` and implements
//! `kube::Resource`, so `kube::Api<KubeObject<Widget>>`, watchers and controllers work; it
//! dereferences to `T` for `spec`/`status`, and [`KubeObject::into_inner`] gives the plain
//! kind back with its metadata converted. Each kind also exposes its
//! `kube::core::ApiResource` ([`api_resource`]) and converts to and from
//! `kube::core::DynamicObject` ([`to_dynamic`], [`from_dynamic`]).

use std::borrow::Cow;
use std::ops::{Deref, DerefMut};

use kube_core::{ApiResource, DynamicObject};

use crate::object::Object;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as K8sObjectMeta;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// k8s-openapi, whose scope marker types (`NamespaceResourceScope`, `ClusterResourceScope`) the
/// generated [`KubeKind`] impls name, re-exported so a generated crate needs no dependency of
/// its own on it.
pub use k8s_openapi;

/// The kube-rs facts of a generated kind that `apimachinery::object::Object` does not carry.
pub trait KubeKind: Object {
    /// `k8s_openapi::NamespaceResourceScope` or `k8s_openapi::ClusterResourceScope`.
    type Scope;
    /// The plural resource name, such as `widgets`.
    const PLURAL: &'static str;
}

/// Why a conversion between a generated kind and a kube-rs type failed.
#[derive(Debug, thiserror::Error)]
#[error("converting {kind} for kube-rs: {source}")]
pub struct ConvertError {
    /// The kind.
    pub kind: &'static str,
    /// The JSON error.
    #[source]
    pub source: serde_json::Error,
}

/// Converts apimachinery's `ObjectMeta` to k8s-openapi's (same JSON shape).
pub fn meta_to_k8s(meta: &crate::meta::ObjectMeta) -> Result<K8sObjectMeta, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(meta)?)
}

/// Converts k8s-openapi's `ObjectMeta` to apimachinery's.
pub fn meta_from_k8s(meta: &K8sObjectMeta) -> Result<crate::meta::ObjectMeta, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(meta)?)
}

/// The `ApiResource` of a generated kind.
pub fn api_resource<T: KubeKind>() -> ApiResource {
    ApiResource {
        group: T::GROUP.to_string(),
        version: T::VERSION.to_string(),
        api_version: T::API_VERSION.to_string(),
        kind: T::KIND.to_string(),
        plural: T::PLURAL.to_string(),
    }
}

/// Converts a generated object to a `DynamicObject`.
pub fn to_dynamic<T: KubeKind + Serialize>(obj: &T) -> Result<DynamicObject, ConvertError> {
    serde_json::to_value(obj)
        .and_then(serde_json::from_value)
        .map_err(|source| ConvertError {
            kind: T::KIND,
            source,
        })
}

/// Converts a `DynamicObject` to a generated object.
pub fn from_dynamic<T: KubeKind + DeserializeOwned>(
    obj: &DynamicObject,
) -> Result<T, ConvertError> {
    serde_json::to_value(obj)
        .and_then(serde_json::from_value)
        .map_err(|source| ConvertError {
            kind: T::KIND,
            source,
        })
}

/// A generated kind with k8s-openapi metadata, implementing `kube::Resource`.
///
/// `metadata` is authoritative; the inner object's own `metadata` is replaced by it when the
/// object is serialized or unwrapped with [`KubeObject::into_inner`].
#[derive(Clone, Debug, PartialEq)]
pub struct KubeObject<T> {
    /// The metadata kube-rs reads and writes.
    pub metadata: K8sObjectMeta,
    /// The generated object (its `spec`, `status`, …).
    pub object: T,
}

impl<T: KubeKind> KubeObject<T> {
    /// Wraps a generated object, converting its metadata.
    pub fn new(object: T) -> Result<Self, ConvertError> {
        let metadata = meta_to_k8s(object.metadata()).map_err(|source| ConvertError {
            kind: T::KIND,
            source,
        })?;
        Ok(Self { metadata, object })
    }

    /// The generated object with this wrapper's metadata.
    pub fn into_inner(mut self) -> Result<T, ConvertError> {
        *self.object.metadata_mut() =
            meta_from_k8s(&self.metadata).map_err(|source| ConvertError {
                kind: T::KIND,
                source,
            })?;
        Ok(self.object)
    }
}

impl<T> Deref for KubeObject<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.object
    }
}

impl<T> DerefMut for KubeObject<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.object
    }
}

impl<T: Serialize> Serialize for KubeObject<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let mut value = serde_json::to_value(&self.object).map_err(S::Error::custom)?;
        let meta = serde_json::to_value(&self.metadata).map_err(S::Error::custom)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("metadata".to_string(), meta);
        }
        value.serialize(s)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for KubeObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_json::Value::deserialize(d)?;
        let metadata = match value.get("metadata") {
            Some(m) => K8sObjectMeta::deserialize(m).map_err(D::Error::custom)?,
            None => K8sObjectMeta::default(),
        };
        let object = T::deserialize(value).map_err(D::Error::custom)?;
        Ok(Self { metadata, object })
    }
}

impl<T: KubeKind> kube_core::Resource for KubeObject<T> {
    type DynamicType = ();
    type Scope = T::Scope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(T::KIND)
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(T::GROUP)
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(T::VERSION)
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(T::API_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(T::PLURAL)
    }
    fn meta(&self) -> &K8sObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut K8sObjectMeta {
        &mut self.metadata
    }
}
