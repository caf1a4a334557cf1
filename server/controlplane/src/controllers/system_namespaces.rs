//! The namespaces every cluster has from its first start (`default`, `kube-system`,
//! `kube-public`), created through the Namespace store like any other namespace.

use apimachinery::meta::ObjectMeta;
use apimachinery::status::ApiError;
use kubernetes_api::core::strategy::SYSTEM_NAMESPACES;
use kubernetes_api::core::v1::Namespace;

use server::registry::{NoAdmission, Store};

/// Creates the system namespaces that are missing. Idempotent.
pub async fn ensure(namespaces: &Store) -> Result<(), ApiError> {
    for name in SYSTEM_NAMESPACES {
        if namespaces.try_get("", name).await?.is_some() {
            continue;
        }
        let mut namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        apimachinery::runtime::TypedObject::run_default_hooks(&mut namespace);
        let mut object: Box<dyn apimachinery::runtime::Object> = Box::new(namespace);
        server::apply::update_managed_fields(None, &mut *object, "apiary", "")?;
        match namespaces.create(object, &NoAdmission, false).await {
            Ok(_) => {}
            // Another replica created it first.
            Err(e) if e.code() == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
