//! The controller that turns CustomResourceDefinitions into served resources, doing in one
//! reconcile per CRD what kube-apiserver's naming, nonstructuralschema, establishing and
//! finalizer controllers and its CRD handler do: accept the names (`NamesAccepted`), mark a
//! schema kept from before the structural rules (`NonStructuralSchema`), establish the resource
//! (`Established`), serve it from the accepted names (built again when the CRD changes), and
//! when the CRD is deleted refuse new objects, delete every object and release the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer (`Terminating`).

use std::sync::Arc;
use std::time::Duration;

use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinition;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use parking_lot::Mutex;
use server::controller::{Action, Mutate, ObjectKey, Reconciler};
use server::registry::{DeleteOptions, NoAdmission, Store, UpdateOptions};
use server::runtime_kinds::RuntimeKinds;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use server::genericserver::openapi::{OpenApiSource, OwnedOpenApiDocs};

use crate::conditions::{
    self, ConditionState, ESTABLISHED, NAMES_ACCEPTED, NON_STRUCTURAL_SCHEMA, TERMINATING,
};
use crate::definition::{self, SchemaOf, ServedDefinition};

/// The finalizer that holds a deleted CRD until its objects are gone.
pub use apiextensions_api::apiextensions_k8s_io::strategy::CUSTOM_RESOURCE_CLEANUP_FINALIZER as CLEANUP_FINALIZER;

/// How long a replaced definition's codecs keep decoding for requests already in flight.
const RETIRE_AFTER: Duration = Duration::from_secs(120);

/// How often a deleted CRD's remaining objects are looked at again while they go.
const CLEANUP_RECHECK: Duration = Duration::from_secs(1);

/// The OpenAPI documents of the served CRDs, which the server publishes beside its own.
#[derive(Debug, Default)]
pub struct CrdDocuments {
    /// By CRD name.
    documents: Mutex<HashMap<String, Vec<OwnedOpenApiDocs>>>,
    generation: AtomicU64,
}

impl CrdDocuments {
    fn set(&self, name: &str, documents: Option<Vec<OwnedOpenApiDocs>>) {
        let mut all = self.documents.lock();
        match documents {
            Some(d) => {
                all.insert(name.to_string(), d);
            }
            None => {
                if all.remove(name).is_none() {
                    return;
                }
            }
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

impl OpenApiSource for CrdDocuments {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn documents(&self) -> Vec<OwnedOpenApiDocs> {
        let all = self.documents.lock();
        let mut names: Vec<&String> = all.keys().collect();
        names.sort();
        names.into_iter().flat_map(|n| all[n].clone()).collect()
    }
}

/// The names of the CRDs the controller has reconciled at least once (successfully or not):
/// the extension server's paths are all installed once every CRD that exists is among them.
#[derive(Debug, Default)]
pub struct Reconciled(Mutex<HashSet<String>>);

impl Reconciled {
    /// Whether the CRD `name` has been reconciled at least once.
    pub fn contains(&self, name: &str) -> bool {
        self.0.lock().contains(name)
    }
}

/// The reconciler of CustomResourceDefinitions (see the module documentation).
pub struct CrdController {
    crds: Arc<Store>,
    kinds: Arc<RuntimeKinds>,
    documents: Arc<CrdDocuments>,
    schema_of: Box<SchemaOf<'static>>,
    /// What is served, by CRD name.
    served: Mutex<HashMap<String, Arc<ServedDefinition>>>,
    /// The resourceVersion each served CRD was last looked at in, by name.
    seen: Mutex<HashMap<String, String>>,
    reconciled: Arc<Reconciled>,
}

impl CrdController {
    /// A controller over the CRDs' store serving through `kinds`, publishing the served CRDs'
    /// OpenAPI documents in `documents`, compiling each version's schema with `schema_of`.
    pub fn new(
        crds: Arc<Store>,
        kinds: Arc<RuntimeKinds>,
        documents: Arc<CrdDocuments>,
        schema_of: Box<SchemaOf<'static>>,
    ) -> Self {
        Self {
            crds,
            kinds,
            documents,
            schema_of,
            served: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            reconciled: Arc::default(),
        }
    }

    /// The CRDs this controller has reconciled at least once (shared, live).
    pub fn reconciled(&self) -> Arc<Reconciled> {
        self.reconciled.clone()
    }

    /// Writes the status of `crd` through `/status` with `change` applied (to the latest
    /// object).
    async fn write_status(
        &self,
        crd: &CustomResourceDefinition,
        change: impl Fn(&mut CustomResourceDefinition) + Send + Sync,
    ) -> Result<(), ApiError> {
        self.write(crd, "status", change).await
    }

    /// Writes `crd` through `subresource` (empty: the main resource) with `change` applied
    /// to the latest object; a CRD gone meanwhile is no error.
    async fn write(
        &self,
        crd: &CustomResourceDefinition,
        subresource: &str,
        change: impl Fn(&mut CustomResourceDefinition) + Send + Sync,
    ) -> Result<(), ApiError> {
        let write = Mutate(move |o: &mut dyn Object| {
            if let Some(crd) = o.downcast_mut::<CustomResourceDefinition>() {
                change(crd);
            }
        });
        let options = UpdateOptions {
            subresource,
            force_allow_create: false,
            dry_run: false,
        };
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        match self
            .crds
            .update("", name, &write, &NoAdmission, &NoAdmission, options)
            .await
        {
            Err(e) if e.code() == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Accepts the names; true when the status was written (the CRD comes back to the queue).
    async fn name(&self, crd: &CustomResourceDefinition) -> Result<bool, ApiError> {
        // Names already accepted as requested conflict with nothing: no need to read the other
        // CRDs (a resync would otherwise read every CRD once per CRD).
        let accepted =
            ConditionState::new(NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found");
        if crd.spec.names == crd.status.accepted_names && conditions::says(crd, &accepted) {
            return Ok(false);
        }
        let all = self.crds.list("", Default::default()).await?.0;
        let others: Vec<&CustomResourceDefinition> = all
            .iter()
            .filter_map(|o| o.downcast_ref::<CustomResourceDefinition>())
            .filter(|o| o.spec.group == crd.spec.group && o.metadata.name != crd.metadata.name)
            .collect();
        let naming = conditions::accept_names(crd, &others);
        let established = conditions::established_while_naming(crd, &naming.condition);
        if naming.accepted == crd.status.accepted_names && conditions::says(crd, &naming.condition)
        {
            return Ok(false);
        }
        self.write_status(crd, move |c| {
            c.status.accepted_names = naming.accepted.clone();
            conditions::set(&mut c.status.conditions, &naming.condition);
            if let Some(established) = &established {
                conditions::set(&mut c.status.conditions, established);
            }
        })
        .await?;
        Ok(true)
    }

    /// Writes or removes the `NonStructuralSchema` condition; true when the status was
    /// written (the CRD comes back to the queue).
    async fn mark_non_structural(&self, crd: &CustomResourceDefinition) -> Result<bool, ApiError> {
        match conditions::non_structural(crd) {
            Some(state) if !conditions::says(crd, &state) => {
                self.write_status(crd, move |c| {
                    conditions::set(&mut c.status.conditions, &state)
                })
                .await?;
                Ok(true)
            }
            None if conditions::condition(crd, NON_STRUCTURAL_SCHEMA).is_some() => {
                self.write_status(crd, |c| {
                    conditions::remove(&mut c.status.conditions, NON_STRUCTURAL_SCHEMA)
                })
                .await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Serves the CRD's resource from its current definition (built again when it changed).
    fn serve(&self, name: &str, crd: &CustomResourceDefinition) -> Result<(), ApiError> {
        // A resync finds most CRDs unchanged: the same resourceVersion needs no fingerprint
        // (which serializes the whole spec).
        let resource_version = crd.metadata.resource_version.clone().unwrap_or_default();
        if self.served.lock().contains_key(name)
            && self.seen.lock().get(name) == Some(&resource_version)
        {
            return Ok(());
        }
        let fingerprint = definition::fingerprint(crd);
        if let Some(current) = self.served.lock().get(name)
            && current.fingerprint == fingerprint
        {
            self.seen.lock().insert(name.to_string(), resource_version);
            return Ok(());
        }
        let Some(built) = definition::build(crd, &*self.schema_of, &self.kinds.api().registry)
        else {
            self.withdraw(name);
            return Ok(());
        };
        let built = Arc::new(built);
        let previous = self.served.lock().get(name).cloned();
        if let Some(previous) = &previous {
            let (old, new) = (previous.kind.storage_info(), built.kind.storage_info());
            if (old.group, old.plural) != (new.group, new.plural) {
                self.kinds.withdraw(old.group, old.plural);
            }
        }
        // Recorded as served only once it is (a failure is tried again from the start).
        self.kinds
            .serve_with_warnings(built.kind, definition::deprecation_warnings(crd))?;
        self.served.lock().insert(name.to_string(), built.clone());
        self.documents
            .set(name, Some(crate::openapi::documents(crd)));
        if let Some(previous) = previous {
            retire_later(previous);
        }
        self.seen.lock().insert(name.to_string(), resource_version);
        Ok(())
    }

    /// Stops serving the resource of the CRD `name`.
    fn withdraw(&self, name: &str) {
        self.documents.set(name, None);
        self.seen.lock().remove(name);
        if let Some(previous) = self.served.lock().remove(name) {
            let info = previous.kind.storage_info();
            self.kinds.withdraw(info.group, info.plural);
            retire_later(previous);
        }
    }

    /// A deleted CRD: creates refused, every object deleted, then the finalizer released.
    async fn clean_up(
        &self,
        name: &str,
        crd: &CustomResourceDefinition,
    ) -> Result<Action, ApiError> {
        if let Some(served) = self.served.lock().get(name) {
            let info = served.kind.storage_info();
            self.kinds.terminate(info.group, info.plural);
            served.strategy.terminate();
        }
        if !crd
            .metadata
            .finalizers
            .iter()
            .any(|f| f == CLEANUP_FINALIZER)
        {
            return Ok(Action::Done);
        }
        let done = conditions::condition(crd, TERMINATING).is_some_and(|c| {
            c.status == "False"
                && matches!(
                    c.reason.as_deref(),
                    Some("InstanceDeletionCompleted" | "NeverEstablished")
                )
        });
        if !done {
            let in_progress = ConditionState::new(
                TERMINATING,
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            );
            if !conditions::says(crd, &in_progress) {
                self.write_status(crd, move |c| {
                    conditions::set(&mut c.status.conditions, &in_progress)
                })
                .await?;
                return Ok(Action::Done);
            }
            let outcome = if !conditions::is_true(crd, ESTABLISHED) {
                ConditionState::new(
                    TERMINATING,
                    "False",
                    "NeverEstablished",
                    "resource was never established",
                )
            } else {
                match self.delete_instances(name).await {
                    Ok(true) => ConditionState::new(
                        TERMINATING,
                        "False",
                        "InstanceDeletionCompleted",
                        "removed all instances",
                    ),
                    Ok(false) => return Ok(Action::RequeueAfter(CLEANUP_RECHECK)),
                    Err(failed) => {
                        let state = failed.clone();
                        self.write_status(crd, move |c| {
                            conditions::set(&mut c.status.conditions, &state)
                        })
                        .await?;
                        return Err(ApiError::internal(failed.message));
                    }
                }
            };
            self.write_status(crd, move |c| {
                conditions::set(&mut c.status.conditions, &outcome)
            })
            .await?;
            return Ok(Action::Done);
        }
        // The finalizer goes through the main resource (a write of `/status` keeps the
        // metadata); the store then removes the CRD.
        self.write(crd, "", |c| {
            c.metadata.finalizers.retain(|f| f != CLEANUP_FINALIZER)
        })
        .await?;
        Ok(Action::Done)
    }

    /// Deletes every object of the CRD's resource: true once none is left.
    async fn delete_instances(&self, name: &str) -> Result<bool, ConditionState> {
        let served = self.served.lock().get(name).cloned();
        let failed = |reason: &'static str, message: String| {
            ConditionState::new(TERMINATING, "True", reason, message)
        };
        let Some(served) = served else {
            return Ok(true);
        };
        let store = self.kinds_store(&served).map_err(|e| {
            failed(
                "InstanceDeletionFailed",
                format!(
                    "could not list instances: unable to find a custom resource client for {}: {}",
                    served.kind.storage_info().plural,
                    e.message()
                ),
            )
        })?;
        let objects = store.list_uncached("").await.map_err(|e| {
            failed(
                "InstanceDeletionFailed",
                format!("could not list instances: {}", e.message()),
            )
        })?;
        if objects.is_empty() {
            return Ok(true);
        }
        let mut errors = Vec::new();
        for object in &objects {
            if object.metadata().deletion_timestamp.is_some() {
                continue;
            }
            let deleted = store
                .delete(
                    object.namespace(),
                    object.name(),
                    &NoAdmission,
                    &DeleteOptions::default(),
                )
                .await;
            match deleted {
                Ok(_) => {}
                Err(e) if e.code() == 404 => {}
                Err(e) => errors.push(e.message().to_string()),
            }
        }
        if !errors.is_empty() {
            return Err(failed(
                "InstanceDeletionFailed",
                format!(
                    "could not issue all deletes: {}",
                    apimachinery::status::aggregate_messages(&errors)
                ),
            ));
        }
        Ok(false)
    }

    fn kinds_store(&self, served: &ServedDefinition) -> Result<Arc<Store>, ApiError> {
        self.kinds.store(served.kind)
    }
}

/// Retires a replaced definition's codecs once requests already holding them are done.
fn retire_later(previous: Arc<ServedDefinition>) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move {
                tokio::time::sleep(RETIRE_AFTER).await;
                previous.retire();
            });
        }
        Err(_) => previous.retire(),
    }
}

#[async_trait]
impl Reconciler for CrdController {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let result = self.reconcile_once(key).await;
        // Looked at once, whatever came of it: a CRD whose reconcile keeps failing is retried
        // with backoff, and must not keep the server from ever becoming ready.
        self.reconciled.0.lock().insert(key.name.clone());
        result
    }
}

impl CrdController {
    /// One pass over the CRD `key` (see the module documentation).
    async fn reconcile_once(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.crds.try_get("", &key.name).await? else {
            self.withdraw(&key.name);
            return Ok(Action::Done);
        };
        let Some(crd) = object.downcast_ref::<CustomResourceDefinition>() else {
            return Ok(Action::Done);
        };
        if crd.metadata.deletion_timestamp.is_none()
            && (self.name(crd).await? || self.mark_non_structural(crd).await?)
        {
            return Ok(Action::Done);
        }
        let names_accepted = conditions::is_true(crd, NAMES_ACCEPTED);
        if names_accepted || conditions::is_true(crd, ESTABLISHED) {
            self.serve(&key.name, crd)?;
        }
        if crd.metadata.deletion_timestamp.is_some() {
            return self.clean_up(&key.name, crd).await;
        }
        if names_accepted && !conditions::is_true(crd, ESTABLISHED) {
            let established = if conditions::conversion_ca_bundle_is_valid(crd) {
                ConditionState::new(
                    ESTABLISHED,
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                )
            } else {
                ConditionState::new(
                    ESTABLISHED,
                    "False",
                    "InvalidCABundle",
                    "The conversion webhook CABundle is invalid",
                )
            };
            if conditions::says(crd, &established) {
                return Ok(Action::Done);
            }
            self.write_status(crd, move |c| {
                conditions::set(&mut c.status.conditions, &established)
            })
            .await?;
        }
        Ok(Action::Done)
    }
}
