//! The namespaced resources other servers serve behind this one (an aggregator's remote
//! APIServices, [`server::genericserver::remote_resources`]), emptied as Kubernetes' namespace
//! deleter empties every resource it discovers (`deleteAllContentForGroupVersionResource`):
//! as the namespace controller's service account, each resource that supports `delete` is
//! deleted with one `deletecollection` when it supports that (else listed and deleted one by
//! one), with background propagation, then listed again to count what is left and the
//! finalizers holding it. A group version whose discovery failed is reported, and keeps the
//! namespace from being finalized until it is discovered again (or its APIService goes).

use std::sync::Arc;

use apimachinery::status::ApiError;
use apimachinery::user::{AUTHENTICATED_GROUP, UserInfo};
use serde_json::{Value, json};
use server::genericserver::remote_resources::{RemoteClient, RemoteResource, RemoteResources};

use super::conditions::Contents;

/// The namespace controller's user (kube-controller-manager's service account
/// `kube-system/namespace-controller`), which the bootstrap policy's
/// `system:controller:namespace-controller` role lets list and delete everything.
pub(super) fn controller_user() -> UserInfo {
    UserInfo {
        name: "system:serviceaccount:kube-system:namespace-controller".into(),
        uid: String::new(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            AUTHENTICATED_GROUP.into(),
        ],
        extra: Default::default(),
    }
}

/// The options of every delete: the garbage collector deletes dependents in the background
/// (no orphan finalizer).
fn delete_options() -> Value {
    json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
}

/// Whether an error means the operation is not served there (kube's `IsMethodNotSupported ||
/// IsNotFound`).
fn not_supported(e: &ApiError) -> bool {
    e.code() == 405 || e.code() == 404
}

/// One pass over `namespace`'s remote contents (see the [module docs](self)), recorded in
/// `contents`.
pub(super) async fn delete_contents(
    remote: Arc<dyn RemoteResources>,
    namespace: &str,
    contents: &mut Contents,
) {
    let discovery = remote.discover();
    if let Some(error) = discovery.error() {
        contents.discovery = Some((discovery.failed.len(), error));
    }
    let client = RemoteClient::new(Arc::clone(&remote), Arc::new(controller_user()));
    for resource in discovery.namespaced().filter(|r| r.supports("delete")) {
        if let Err(e) = delete_resource(&client, resource, namespace, contents).await {
            contents.found += 1;
            contents.failures.push(e);
        }
    }
}

/// Empties one resource in `namespace` and counts what is left; an error is the message
/// Kubernetes' deleter records for it.
async fn delete_resource(
    client: &RemoteClient,
    resource: &RemoteResource,
    namespace: &str,
    contents: &mut Contents,
) -> Result<(), String> {
    let options = delete_options();
    let mut collection = resource.supports("deletecollection");
    if collection {
        match client
            .delete_collection(resource, namespace, &options)
            .await
        {
            Ok(()) => {}
            Err(e) if not_supported(&e) => collection = false,
            Err(e) => return Err(e.to_string()),
        }
    }
    if !collection {
        for item in list(client, resource, namespace).await?.unwrap_or_default() {
            match client
                .delete(resource, namespace, &item.name, &options)
                .await
            {
                Ok(()) => {}
                Err(e) if not_supported(&e) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    let Some(left) = list(client, resource, namespace).await? else {
        return Ok(());
    };
    if left.is_empty() {
        return Ok(());
    }
    contents.found += left.len();
    contents.remain(
        &resource.resource,
        &resource.group,
        left.len(),
        left.iter().flat_map(|item| &item.finalizers),
    );
    if left.iter().all(|item| item.finalizers.is_empty()) {
        return Err(format!(
            "unexpected items still remain in namespace: {namespace} for gvr: {}",
            resource.gvr_string()
        ));
    }
    Ok(())
}

/// The objects of `resource` in `namespace`, or `None` when it cannot be listed.
async fn list(
    client: &RemoteClient,
    resource: &RemoteResource,
    namespace: &str,
) -> Result<Option<Vec<server::genericserver::remote_resources::RemoteItem>>, String> {
    if !resource.supports("list") {
        return Ok(None);
    }
    match client.list(resource, namespace).await {
        Ok(items) => Ok(Some(items)),
        Err(e) if not_supported(&e) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}
