//! Autoregistration (kube-aggregator's autoregister controller with kube-apiserver's
//! `apiServicesToRegister` and CRD registration controller): a local APIService for every
//! group/version the chain serves — the scheme's, created once at start (label
//! `kube-aggregator.kubernetes.io/automanaged: onstart`), and the served versions of every
//! CustomResourceDefinition, kept in step as CRDs come and go (label `true`). An APIService
//! without the label (one a user created) is never touched.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinition;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use apiregistration_api::apiregistration_k8s_io::v1::{APIService, APIServiceSpec};
use async_trait::async_trait;
use parking_lot::Mutex;
use server::controller::{Action, ObjectKey, Reconciler};
use server::registry::{DeleteOptions, NoAdmission, Store};
use tokio::sync::OnceCell;

/// The label that marks an APIService as managed by autoregistration.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The label value of an APIService registered once, when the server starts.
pub const MANAGE_ON_START: &str = "onstart";

/// The label value of an APIService kept in step continuously.
pub const MANAGE_CONTINUOUSLY: &str = "true";

/// The priority of a CustomResourceDefinition's group (kube-apiserver's CRD registration).
pub const CRD_GROUP_PRIORITY_MINIMUM: i32 = 1000;

/// The priority of a CustomResourceDefinition's versions (kube-apiserver's CRD registration:
/// they sort by Kubernetes' version order among themselves).
pub const CRD_VERSION_PRIORITY: i32 = 100;

/// The group and version priorities of a built-in group/version (kube-apiserver's
/// `DefaultGenericAPIServicePriorities`, with `apiregistration.k8s.io` as kube-apiserver
/// registers it); `None` for a group/version the table does not know.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i32, i32)> {
    Some(match (group, version) {
        ("", "v1") => (18000, 1),
        ("apiregistration.k8s.io", "v1") => (18000, 15),
        ("events.k8s.io", "v1") => (17750, 15),
        ("events.k8s.io", "v1beta1") => (17750, 5),
        ("authentication.k8s.io", "v1") => (17700, 15),
        ("authentication.k8s.io", "v1beta1") => (17700, 9),
        ("authentication.k8s.io", "v1alpha1") => (17700, 1),
        ("authorization.k8s.io", "v1") => (17600, 15),
        ("certificates.k8s.io", "v1") => (17300, 15),
        ("certificates.k8s.io", "v1beta1") => (17300, 9),
        ("certificates.k8s.io", "v1alpha1") => (17300, 1),
        ("rbac.authorization.k8s.io", "v1") => (17000, 15),
        ("apiextensions.k8s.io", "v1") => (16700, 15),
        ("admissionregistration.k8s.io", "v1") => (16700, 15),
        ("admissionregistration.k8s.io", "v1beta1") => (16700, 12),
        ("admissionregistration.k8s.io", "v1alpha1") => (16700, 9),
        ("coordination.k8s.io", "v1") => (16500, 15),
        ("coordination.k8s.io", "v1beta1") => (16500, 13),
        ("coordination.k8s.io", "v1alpha2") => (16500, 12),
        ("discovery.k8s.io", "v1") => (16200, 15),
        ("discovery.k8s.io", "v1beta1") => (16200, 12),
        ("flowcontrol.apiserver.k8s.io", "v1") => (16100, 21),
        ("flowcontrol.apiserver.k8s.io", "v1beta3") => (16100, 18),
        ("flowcontrol.apiserver.k8s.io", "v1beta2") => (16100, 15),
        ("flowcontrol.apiserver.k8s.io", "v1beta1") => (16100, 12),
        ("flowcontrol.apiserver.k8s.io", "v1alpha1") => (16100, 9),
        ("internal.apiserver.k8s.io", "v1alpha1") => (16000, 9),
        ("resource.k8s.io", "v1alpha3") => (15900, 9),
        ("storagemigration.k8s.io", "v1beta1") => (15800, 9),
        _ => return None,
    })
}

/// The local APIService of `group`/`version` with these priorities and management label.
pub fn local_api_service(
    group: &str,
    version: &str,
    (group_priority_minimum, version_priority): (i32, i32),
    manage: &str,
) -> APIService {
    let mut service = APIService::default();
    service.metadata.name = Some(format!("{version}.{group}"));
    service
        .metadata
        .labels
        .insert(AUTOMANAGED_LABEL.to_string(), manage.to_string());
    service.spec = APIServiceSpec {
        group: (!group.is_empty()).then(|| group.to_string()),
        version: Some(version.to_string()),
        group_priority_minimum,
        version_priority,
        ..Default::default()
    };
    service
}

/// The APIServices of the group/versions a server's scheme serves, registered on start: the
/// built-in ones with kube-apiserver's priorities, any other (a compiled-in group such as
/// `example.dev`) with the priorities of a CRD's group, so that every group the chain serves
/// is listed.
pub fn on_start_services<'a>(
    group_versions: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, APIService> {
    group_versions
        .into_iter()
        .map(|(g, v)| {
            let priority = builtin_priority(g, v)
                .unwrap_or((CRD_GROUP_PRIORITY_MINIMUM, CRD_VERSION_PRIORITY));
            let service = local_api_service(g, v, priority, MANAGE_ON_START);
            (format!("{v}.{g}"), service)
        })
        .collect()
}

/// The APIServices of the served versions of `crds` (continuously managed).
pub fn crd_services<'a>(
    crds: impl IntoIterator<Item = &'a CustomResourceDefinition>,
) -> BTreeMap<String, APIService> {
    let mut out = BTreeMap::new();
    for crd in crds {
        for version in crd.spec.versions.iter().filter(|v| v.served) {
            let service = local_api_service(
                &crd.spec.group,
                &version.name,
                (CRD_GROUP_PRIORITY_MINIMUM, CRD_VERSION_PRIORITY),
                MANAGE_CONTINUOUSLY,
            );
            out.insert(format!("{}.{}", version.name, crd.spec.group), service);
        }
    }
    out
}

/// What autoregistration does about one APIService name.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Nothing.
    Nothing,
    /// Create the desired APIService.
    Create(Box<APIService>),
    /// Delete the managed APIService that is no longer wanted (with this uid as precondition).
    Delete(String),
    /// Give the existing APIService the desired spec.
    UpdateSpec(Box<APIServiceSpec>),
}

fn label(service: &APIService) -> Option<&str> {
    service
        .metadata
        .labels
        .get(AUTOMANAGED_LABEL)
        .map(String::as_str)
}

fn managed(service: &APIService) -> bool {
    matches!(label(service), Some(MANAGE_ON_START | MANAGE_CONTINUOUSLY))
}

fn managed_on_start(service: &APIService) -> bool {
    label(service) == Some(MANAGE_ON_START)
}

/// kube-aggregator's `checkAPIService` decision: `desired` is what autoregistration wants
/// under the name (if anything), `current` what exists; `synced` says the name was handled
/// successfully before, `at_start` that it existed (as an on-start APIService) when the
/// controller started.
pub fn decide(
    desired: Option<&APIService>,
    current: Option<&APIService>,
    synced: bool,
    at_start: bool,
) -> Decision {
    match (desired, current) {
        (None, None) => Decision::Nothing,
        (Some(d), _) if managed_on_start(d) && synced => Decision::Nothing,
        (Some(d), None) => Decision::Create(Box::new(d.clone())),
        (_, Some(c)) if !managed(c) => Decision::Nothing,
        (_, Some(c)) if managed_on_start(c) && !at_start => Decision::Nothing,
        (_, Some(c)) if managed_on_start(c) && synced => Decision::Nothing,
        (None, Some(c)) => Decision::Delete(c.metadata.uid.clone().unwrap_or_default()),
        (Some(d), Some(c)) if d.spec == c.spec => Decision::Nothing,
        (Some(d), Some(_)) => Decision::UpdateSpec(Box::new(d.spec.clone())),
    }
}

/// The autoregistration reconciler: keys are APIService names.
pub struct AutoRegister {
    api_services: Arc<Store>,
    crds: Option<Arc<Store>>,
    on_start: BTreeMap<String, APIService>,
    synced: Mutex<HashSet<String>>,
    at_start: OnceCell<HashSet<String>>,
}

impl AutoRegister {
    /// Registers `on_start` once and the served versions of the CRDs in `crds` (when the
    /// server has CRDs) continuously, as APIServices in `api_services`.
    pub fn new(
        api_services: Arc<Store>,
        crds: Option<Arc<Store>>,
        on_start: BTreeMap<String, APIService>,
    ) -> Self {
        Self {
            api_services,
            crds,
            on_start,
            synced: Mutex::default(),
            at_start: OnceCell::new(),
        }
    }

    /// The names of every APIService registered on start (to queue when the controller starts).
    pub fn on_start_names(&self) -> Vec<String> {
        self.on_start.keys().cloned().collect()
    }

    async fn desired(&self, name: &str) -> Result<Option<APIService>, ApiError> {
        if let Some(s) = self.on_start.get(name) {
            return Ok(Some(s.clone()));
        }
        let Some(crds) = &self.crds else {
            return Ok(None);
        };
        let (all, _) = crds.list("", Default::default()).await?;
        let crds = all
            .iter()
            .filter_map(|o| o.downcast_ref::<CustomResourceDefinition>());
        Ok(crd_services(crds).remove(name))
    }

    async fn at_start(&self) -> Result<&HashSet<String>, ApiError> {
        self.at_start
            .get_or_try_init(|| async {
                let (all, _) = self.api_services.list("", Default::default()).await?;
                Ok(all
                    .iter()
                    .filter_map(|o| o.downcast_ref::<APIService>())
                    .filter(|s| managed_on_start(s))
                    .filter_map(|s| s.metadata.name.clone())
                    .collect())
            })
            .await
    }
}

#[async_trait]
impl Reconciler for AutoRegister {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let name = key.name.as_str();
        let at_start = self.at_start().await?.contains(name);
        let desired = self.desired(name).await?;
        let current = self.api_services.try_get("", name).await?;
        let current = current
            .as_deref()
            .and_then(|o| o.downcast_ref::<APIService>());
        let synced = self.synced.lock().contains(name);
        let result = match decide(desired.as_ref(), current, synced, at_start) {
            Decision::Nothing => Ok(()),
            Decision::Create(service) => {
                match self.api_services.create(service, &NoAdmission, false).await {
                    Err(e) if e.code() != 409 => Err(e),
                    _ => Ok(()),
                }
            }
            Decision::Delete(uid) => {
                let opts = DeleteOptions {
                    uid: Some(uid),
                    ..Default::default()
                };
                match self
                    .api_services
                    .delete("", name, &NoAdmission, &opts)
                    .await
                {
                    Err(e) if e.code() != 404 && e.code() != 409 => Err(e),
                    _ => Ok(()),
                }
            }
            Decision::UpdateSpec(spec) => {
                let set = server::controller::Mutate(move |o: &mut dyn Object| {
                    if let Some(s) = o.downcast_mut::<APIService>() {
                        s.spec = (*spec).clone();
                    }
                });
                match self
                    .api_services
                    .update(
                        "",
                        name,
                        &set,
                        &NoAdmission,
                        &NoAdmission,
                        Default::default(),
                    )
                    .await
                {
                    Err(e) if e.code() != 404 && e.code() != 409 => Err(e),
                    _ => Ok(()),
                }
            }
        };
        result?;
        self.synced.lock().insert(name.to_string());
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, manage: Option<&str>) -> APIService {
        let (v, g) = name.split_once('.').unwrap();
        let mut s = local_api_service(g, v, (100, 10), manage.unwrap_or(""));
        if manage.is_none() {
            s.metadata.labels.clear();
        }
        s.metadata.uid = Some("uid-1".into());
        s
    }

    #[test]
    fn builtin_priorities_follow_kube_apiserver() {
        assert_eq!(builtin_priority("", "v1"), Some((18000, 1)));
        assert_eq!(
            builtin_priority("rbac.authorization.k8s.io", "v1"),
            Some((17000, 15))
        );
        assert_eq!(
            builtin_priority("admissionregistration.k8s.io", "v1beta1"),
            Some((16700, 12))
        );
        assert_eq!(builtin_priority("example.dev", "v1"), None);
        let services = on_start_services([("", "v1"), ("example.dev", "v1")]);
        let core = &services["v1."];
        assert_eq!(core.spec.group, None);
        assert_eq!(core.spec.version.as_deref(), Some("v1"));
        assert_eq!(core.metadata.labels[AUTOMANAGED_LABEL], "onstart");
        assert_eq!(services["v1.example.dev"].spec.group_priority_minimum, 1000);
        assert!(apiregistration_api::validation::validate_api_service(core).is_empty());
    }

    #[test]
    fn crd_versions_are_registered_while_served() {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true},
                                  {"name": "v1beta1", "served": false, "storage": false}]}
        }))
        .unwrap();
        let services = crd_services([&crd]);
        assert_eq!(services.keys().collect::<Vec<_>>(), ["v1.example.com"]);
        let s = &services["v1.example.com"];
        assert_eq!(s.metadata.labels[AUTOMANAGED_LABEL], "true");
        assert_eq!(
            (s.spec.group_priority_minimum, s.spec.version_priority),
            (1000, 100)
        );
    }

    #[test]
    fn decisions_follow_kube_aggregators_table() {
        let onstart = named("v1.a.io", Some(MANAGE_ON_START));
        let always = named("v1.a.io", Some(MANAGE_CONTINUOUSLY));
        let user = named("v1.a.io", None);
        // Nothing wanted, nothing there.
        assert_eq!(decide(None, None, false, false), Decision::Nothing);
        // Wanted and missing: created (an on-start one only until synced once).
        assert!(matches!(
            decide(Some(&onstart), None, false, false),
            Decision::Create(_)
        ));
        assert_eq!(decide(Some(&onstart), None, true, false), Decision::Nothing);
        assert!(matches!(
            decide(Some(&always), None, true, false),
            Decision::Create(_)
        ));
        // A user's APIService is never touched.
        assert_eq!(
            decide(Some(&always), Some(&user), false, false),
            Decision::Nothing
        );
        assert_eq!(decide(None, Some(&user), false, false), Decision::Nothing);
        // A managed one no longer wanted is deleted, with its uid as precondition.
        assert_eq!(
            decide(None, Some(&always), true, false),
            Decision::Delete("uid-1".into())
        );
        // An on-start one found after the start, or synced already, is left alone.
        assert_eq!(
            decide(None, Some(&onstart), false, false),
            Decision::Nothing
        );
        assert_eq!(decide(None, Some(&onstart), true, true), Decision::Nothing);
        assert_eq!(
            decide(None, Some(&onstart), false, true),
            Decision::Delete("uid-1".into())
        );
        // The same spec: nothing; another spec: the desired one.
        assert_eq!(
            decide(Some(&always), Some(&always), true, false),
            Decision::Nothing
        );
        let mut moved = always.clone();
        moved.spec.version_priority = 99;
        assert!(matches!(
            decide(Some(&always), Some(&moved), true, false),
            Decision::UpdateSpec(_)
        ));
    }
}
