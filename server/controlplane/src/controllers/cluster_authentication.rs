//! kube-apiserver's `start-cluster-authentication-info-controller` post-start hook: the
//! `kube-system/extension-apiserver-authentication` ConfigMap tells aggregated API servers
//! whom to trust (the client CA and the request-header settings, see
//! [`server::delegation::authinfo`]). It is written when the server starts and then kept
//! current: a rotated CA file, or a ConfigMap edited or deleted by someone, is set right again
//! within [`RESYNC`].

use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta::ObjectMeta;
use apimachinery::runtime::{Object, TypedObject};
use apimachinery::status::ApiError;
use kubernetes_api::core::CONFIG_MAP_KIND;
use kubernetes_api::core::v1::ConfigMap;
use server::delegation::authinfo::{AuthenticationInfoSource, NAME, NAMESPACE};
use server::registry::{NoAdmission, Registry, UpdateOptions};

use super::Replace;

/// How often the ConfigMap is compared with the server's settings.
pub const RESYNC: Duration = Duration::from_secs(10);

/// Writes the ConfigMap if it is missing or says something else than `source`. Idempotent.
pub async fn sync(registry: &Registry, source: &AuthenticationInfoSource) -> Result<(), ApiError> {
    let store = registry.store(&CONFIG_MAP_KIND)?;
    let data = source.current().to_data();
    match store.try_get(NAMESPACE, NAME).await? {
        None => {
            let mut object: Box<dyn Object> = Box::new(ConfigMap {
                metadata: ObjectMeta {
                    name: Some(NAME.to_string()),
                    namespace: Some(NAMESPACE.to_string()),
                    ..ObjectMeta::default()
                },
                data,
                ..ConfigMap::default()
            });
            object.run_default_hooks();
            server::apply::update_managed_fields(None, &mut *object, "kube-apiserver", "")?;
            match store.create(object, &NoAdmission, false).await {
                Ok(_) => Ok(()),
                // Another replica wrote it first.
                Err(e) if e.code() == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Some(existing) => {
            let Some(existing) = existing.downcast_ref::<ConfigMap>() else {
                return Ok(());
            };
            if existing.data == data {
                return Ok(());
            }
            let mut updated = existing.clone();
            updated.data = data;
            TypedObject::run_default_hooks(&mut updated);
            match store
                .update(
                    NAMESPACE,
                    NAME,
                    &Replace(Box::new(updated)),
                    &NoAdmission,
                    &NoAdmission,
                    UpdateOptions::default(),
                )
                .await
            {
                Ok(_) => Ok(()),
                // Changed meanwhile: the next pass looks again.
                Err(e) if e.code() == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

/// The hook: writes the ConfigMap (once the `kube-system` namespace exists), then keeps it
/// current in the background.
pub async fn start(
    registry: &Arc<Registry>,
    source: &AuthenticationInfoSource,
) -> Result<(), ApiError> {
    sync(registry, source).await?;
    let registry = Arc::clone(registry);
    let source = source.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(RESYNC).await;
            if let Err(e) = sync(&registry, &source).await {
                tracing::warn!(error = %e, "keeping configmap/extension-apiserver-authentication current");
            }
        }
    });
    Ok(())
}
