//! Hand-written strategies of the core group: what namespaces and events do beyond their
//! markers, and how every core kind prints as a `Table` (kube-apiserver's printers:
//! `pkg/printers/internalversion/printers.go`).

use ::apimachinery::resource::PrinterColumn;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::{self, AGE_COLUMN, NAME_COLUMN, TypedTable, column};
use ::chrono::{DateTime, Utc};
use ::serde_json::Value;

/// The finalizer every namespace carries until the server has deleted everything in it.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// The namespaces every cluster has from its first start; they cannot be deleted.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// How long Events live (their storage TTL), as kube-apiserver's `--event-ttl` default.
pub const EVENT_TTL_SECONDS: u64 = 3600;

/// A namespace starts `Active` with the `kubernetes` finalizer; deleting it makes it
/// `Terminating` until the server has deleted its contents and removed the finalizer (through
/// the `finalize` subresource), and only then is it removed.
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, object: &mut dyn Object) {
        let Some(ns) = object.downcast_mut::<v1::Namespace>() else {
            return;
        };
        if !ns.spec.finalizers.iter().any(|f| f == KUBERNETES_FINALIZER) {
            ns.spec.finalizers.push(KUBERNETES_FINALIZER.to_string());
        }
        ns.status = v1::NamespaceStatus {
            phase: Some("Active".to_string()),
            ..Default::default()
        };
    }

    fn prepare_for_update(&self, object: &mut dyn Object, old: &dyn Object, subresource: &str) {
        let (Some(ns), Some(old)) = (
            object.downcast_mut::<v1::Namespace>(),
            old.downcast_ref::<v1::Namespace>(),
        ) else {
            return;
        };
        // Only `finalize` changes the finalizers; the status comes from `/status` alone (the
        // registry has kept it already).
        if subresource != "finalize" {
            ns.spec.finalizers.clone_from(&old.spec.finalizers);
        }
        if let Some(name) = ns.metadata.name.clone() {
            ns.metadata
                .labels
                .insert("kubernetes.io/metadata.name".to_string(), name);
        }
    }

    fn has_pending_finalizers(&self, object: &dyn Object) -> bool {
        object
            .downcast_ref::<v1::Namespace>()
            .is_some_and(|ns| !ns.spec.finalizers.is_empty())
    }

    fn prepare_for_delete(&self, object: &mut dyn Object) {
        if let Some(ns) = object.downcast_mut::<v1::Namespace>() {
            ns.status.phase = Some("Terminating".to_string());
        }
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&NAMESPACE_TABLE)
    }
}

/// A namespace prints its name, phase and age.
static NAMESPACE_TABLE: TypedTable<v1::Namespace> = TypedTable::new(
    &[
        NAME_COLUMN,
        column("Status", "string", 0, "The status of the namespace"),
        AGE_COLUMN,
    ],
    namespace_cells,
);

fn namespace_cells(ns: &v1::Namespace, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        table::name(&ns.metadata),
        Value::from(ns.status.phase.clone().unwrap_or_default()),
        table::age(&ns.metadata, now),
    ]
}

/// A ConfigMap prints how many keys it holds (`data` and `binaryData` together).
pub struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&CONFIG_MAP_TABLE)
    }
}

static CONFIG_MAP_TABLE: TypedTable<v1::ConfigMap> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "Data",
            "string",
            0,
            "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        ),
        AGE_COLUMN,
    ],
    config_map_cells,
);

fn config_map_cells(cm: &v1::ConfigMap, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        table::name(&cm.metadata),
        table::count(cm.data.len() + cm.binary_data.len()),
        table::age(&cm.metadata, now),
    ]
}

/// A Secret prints its type and how many keys it holds.
pub struct SecretStrategy;

impl Strategy for SecretStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&SECRET_TABLE)
    }
}

static SECRET_TABLE: TypedTable<v1::Secret> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "Type",
            "string",
            0,
            "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        ),
        column(
            "Data",
            "string",
            0,
            "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        ),
        AGE_COLUMN,
    ],
    secret_cells,
);

fn secret_cells(secret: &v1::Secret, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        table::name(&secret.metadata),
        Value::from(secret.r#type.clone().unwrap_or_default()),
        table::count(secret.data.len()),
        table::age(&secret.metadata, now),
    ]
}

/// A ServiceAccount prints how many secrets it lists, and answers its `token` subresource
/// (a `TokenRequest`) with a signed token.
pub struct ServiceAccountStrategy;

#[::async_trait::async_trait]
impl Strategy for ServiceAccountStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&SERVICE_ACCOUNT_TABLE)
    }

    async fn create_subresource(
        &self,
        subresource: &str,
        parent: &dyn Object,
        body: ::apimachinery::strategy::SubresourceBody,
        context: &dyn ::apimachinery::strategy::ReviewContext,
    ) -> Result<Value, ::apimachinery::status::ApiError> {
        match subresource {
            "token" => {
                crate::authentication_k8s_io::strategy::answer_token_request(
                    parent.metadata(),
                    body,
                    context,
                )
                .await
            }
            _ => Err(::apimachinery::status::ApiError::not_found_path()),
        }
    }
}

static SERVICE_ACCOUNT_TABLE: TypedTable<v1::ServiceAccount> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "Secrets",
            "string",
            0,
            "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret",
        ),
        AGE_COLUMN,
    ],
    service_account_cells,
);

fn service_account_cells(sa: &v1::ServiceAccount, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        table::name(&sa.metadata),
        table::count(sa.secrets.len()),
        table::age(&sa.metadata, now),
    ]
}

/// Events expire an hour after they were last written; `source` selects on the reporting
/// component (`source.component`, or `reportingComponent` when that is empty), as in
/// Kubernetes.
pub struct EventStrategy;

impl Strategy for EventStrategy {
    fn ttl(&self, _object: &dyn Object, _existing: bool) -> Option<u64> {
        Some(EVENT_TTL_SECONDS)
    }

    fn selectable_fields(&self, object: &dyn Object, out: &mut Vec<(&'static str, String)>) {
        if let Some(event) = object.downcast_ref::<v1::Event>() {
            let source = event
                .source
                .component
                .clone()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| event.reporting_controller.clone());
            out.push(("source", source));
        }
    }

    fn field_labels(&self) -> &'static [&'static str] {
        &["source"]
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&EVENT_TABLE)
    }
}

/// The columns of `kubectl get events`; `-o wide` adds Subobject, Source, First Seen, Count and
/// Name.
static EVENT_COLUMNS: [PrinterColumn; 10] = [
    column(
        "Last Seen",
        "string",
        0,
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    column(
        "Type",
        "string",
        0,
        "Type of this event (Normal, Warning), new types could be added in the future",
    ),
    column(
        "Reason",
        "string",
        0,
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    column(
        "Object",
        "string",
        0,
        "The object that this event is about.",
    ),
    column(
        "Subobject",
        "string",
        1,
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
    ),
    column(
        "Source",
        "string",
        1,
        "The component reporting this event. Should be a short machine understandable string.",
    ),
    column(
        "Message",
        "string",
        0,
        "A human-readable description of the status of this operation.",
    ),
    column(
        "First Seen",
        "string",
        1,
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    column(
        "Count",
        "string",
        1,
        "The number of times this event has occurred.",
    ),
    PrinterColumn {
        priority: 1,
        ..NAME_COLUMN
    },
];

static EVENT_TABLE: TypedTable<v1::Event> = TypedTable::new(&EVENT_COLUMNS, event_cells);

/// The first of `values` that is not empty.
fn first_non_empty<'a>(values: &[&'a str]) -> &'a str {
    values.iter().copied().find(|v| !v.is_empty()).unwrap_or("")
}

/// An event's source as `component, host`: `source.component` or else `reportingComponent`,
/// then `source.host` or else `reportingInstance` (left out when both are empty).
fn event_source(event: &v1::Event) -> String {
    let component = first_non_empty(&[
        event.source.component.as_deref().unwrap_or(""),
        &event.reporting_controller,
    ]);
    let instance = first_non_empty(&[
        event.source.host.as_deref().unwrap_or(""),
        &event.reporting_instance,
    ]);
    if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    }
}

/// An event's cells as kube-apiserver prints them: First Seen is `firstTimestamp`, else
/// `eventTime`; Last Seen is `series.lastObservedTime` for a series, else `lastTimestamp`, else
/// First Seen; Count is `series.count` for a series, else `count`, else 1; Object is the
/// lowercase kind and name of the involved object.
fn event_cells(event: &v1::Event, now: DateTime<Utc>) -> Vec<Value> {
    let first_seen = if table::time_is_zero(event.first_timestamp.as_ref()) {
        table::micro_since(event.event_time.as_ref(), now)
    } else {
        table::since(event.first_timestamp.as_ref(), now)
    };
    let mut last_seen = if table::time_is_zero(event.last_timestamp.as_ref()) {
        first_seen.clone()
    } else {
        table::since(event.last_timestamp.as_ref(), now)
    };
    let mut count = event.count.unwrap_or(0);
    if let Some(series) = &event.series {
        last_seen = table::micro_since(series.last_observed_time.as_ref(), now);
        count = series.count.unwrap_or(0);
    } else if count == 0 {
        // Singleton events of the events.k8s.io API have no count.
        count = 1;
    }
    let kind = event
        .involved_object
        .kind
        .as_deref()
        .unwrap_or("")
        .to_lowercase();
    let object = match event.involved_object.name.as_deref() {
        Some(name) if !name.is_empty() => format!("{kind}/{name}"),
        _ => kind,
    };
    vec![
        Value::from(last_seen),
        Value::from(event.r#type.clone().unwrap_or_default()),
        Value::from(event.reason.clone().unwrap_or_default()),
        Value::from(object),
        Value::from(event.involved_object.field_path.clone().unwrap_or_default()),
        Value::from(event_source(event)),
        Value::from(event.message.as_deref().unwrap_or("").trim()),
        Value::from(first_seen),
        Value::from(i64::from(count)),
        table::name(&event.metadata),
    ]
}


/// A ResourceQuota's limits are non-negative quantities, whole numbers for object counts; its
/// status is the server's (kept by the quota controller and the admission plugin).
pub struct ResourceQuotaStrategy;

impl ResourceQuotaStrategy {
    fn validate_hard(quota: &v1::ResourceQuota) -> Vec<::apimachinery::errors::FieldError> {
        use ::apimachinery::errors::FieldError;
        let mut errors = Vec::new();
        for (name, quantity) in &quota.spec.hard {
            let path = format!("spec.hard[{name}]");
            let bad = ::serde_json::Value::from(quantity.0.as_str());
            match quantity.value() {
                Err(e) => errors.push(FieldError::invalid(path, &bad, e.to_string())),
                Ok(v) if v < 0 => errors.push(FieldError::invalid(
                    path,
                    &bad,
                    "must be greater than or equal to 0",
                )),
                Ok(v) if name.starts_with("count/") && quantity.0.trim() != v.to_string() => {
                    errors.push(FieldError::invalid(path, &bad, "must be an integer"))
                }
                Ok(_) => {}
            }
        }
        errors
    }
}

impl Strategy for ResourceQuotaStrategy {
    fn validate(&self, object: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        object
            .downcast_ref::<v1::ResourceQuota>()
            .map(Self::validate_hard)
            .unwrap_or_default()
    }

    fn validate_update(
        &self,
        object: &dyn Object,
        _old: &dyn Object,
    ) -> Vec<::apimachinery::errors::FieldError> {
        self.validate(object)
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&RESOURCE_QUOTA_TABLE)
    }
}

static RESOURCE_QUOTA_TABLE: TypedTable<v1::ResourceQuota> = TypedTable::new(
    &[
        NAME_COLUMN,
        AGE_COLUMN,
        column(
            "Request",
            "string",
            0,
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        column(
            "Limit",
            "string",
            0,
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
    ],
    resource_quota_cells,
);

/// A quota's row: each enforced resource as `name: used/hard`, in name order, the `limits.*`
/// resources in the `Limit` cell and the rest in `Request` (kube-apiserver's
/// `printResourceQuota`).
fn resource_quota_cells(quota: &v1::ResourceQuota, now: DateTime<Utc>) -> Vec<Value> {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    for (resource, hard) in &quota.status.hard {
        let used = quota.status.used.get(resource).map_or("0", |q| q.0.as_str());
        let cell = format!("{resource}: {used}/{}", hard.0);
        match resource.split_once('.') {
            Some(("limits", _)) => limit.push(cell),
            _ => request.push(cell),
        }
    }
    vec![
        table::name(&quota.metadata),
        table::age(&quota.metadata, now),
        Value::from(request.join(", ")),
        Value::from(limit.join(", ")),
    ]
}

/// A Service: its status is the server's (cleared on create), its cluster IPs stay in step
/// with `clusterIP`, an update keeps what the server allocated and drops what a new type does
/// not use; validation is Kubernetes' (`crate::services`). The cluster IP and node ports are
/// allocated by the control plane's storage hooks, before these rules run.
pub struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    fn prepare_for_create(&self, object: &mut dyn Object) {
        if let Some(svc) = object.downcast_mut::<v1::Service>() {
            svc.status = v1::ServiceStatus::default();
            crate::services::normalize_cluster_ips(svc, None);
        }
    }

    fn prepare_for_update(&self, object: &mut dyn Object, old: &dyn Object, subresource: &str) {
        let (Some(svc), Some(old)) = (object.downcast_mut::<v1::Service>(), old.downcast_ref::<v1::Service>()) else {
            return;
        };
        if subresource.is_empty() {
            crate::services::patch_allocated_values(svc, old);
            crate::services::normalize_cluster_ips(svc, Some(old));
            crate::services::drop_type_dependent_fields(svc, old);
        }
    }

    fn validate(&self, object: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        object.downcast_ref::<v1::Service>().map(crate::services::validate_service).unwrap_or_default()
    }

    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        match (object.downcast_ref::<v1::Service>(), old.downcast_ref::<v1::Service>()) {
            (Some(svc), Some(old)) => crate::services::validate_service_update(svc, old),
            _ => Vec::new(),
        }
    }

    fn validate_status_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        object.downcast_ref::<v1::Service>().map(crate::services::validate_service_status_update).unwrap_or_default()
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&crate::services::SERVICE_TABLE)
    }
}

/// Endpoints: Kubernetes' validation (no loopback or link-local addresses) and printer.
pub struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    fn validate(&self, object: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        object.downcast_ref::<v1::Endpoints>().map(crate::services::validate_endpoints).unwrap_or_default()
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<::apimachinery::errors::FieldError> {
        self.validate(object)
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&crate::services::ENDPOINTS_TABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::serde_json::json;

    /// The instant the tests measure ages at.
    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    /// A typed object of the storage version from its JSON.
    fn typed<T: ::serde::de::DeserializeOwned>(value: Value) -> T {
        ::serde_json::from_value(value).unwrap()
    }

    /// The cells a kind's strategy gives an object.
    fn cells_of(strategy: &dyn Strategy, object: &dyn Object) -> Vec<Value> {
        let table = strategy.table().unwrap();
        let cells = table.cells(object, now());
        assert_eq!(cells.len(), table.columns().len());
        cells
    }

    /// The (name, type, priority) of a strategy's columns.
    fn columns(strategy: &dyn Strategy) -> Vec<(&'static str, &'static str, i32)> {
        let table = strategy.table().unwrap();
        table
            .columns()
            .iter()
            .map(|c| (c.name, c.type_, c.priority))
            .collect()
    }

    #[test]
    fn event_with_first_and_last_timestamps() {
        let event: v1::Event = typed(json!({
            "metadata": {"name": "web.17a", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
            "reason": "BackOff", "message": "  Back-off restarting failed container \n",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T11:55:00Z",
            "count": 7, "type": "Warning"
        }));
        assert_eq!(
            cells_of(&EventStrategy, &event),
            vec![
                json!("5m"),
                json!("Warning"),
                json!("BackOff"),
                json!("pod/web"),
                json!("spec.containers{app}"),
                json!("kubelet, node-1"),
                json!("Back-off restarting failed container"),
                json!("120m"),
                json!(7),
                json!("web.17a"),
            ]
        );
        assert_eq!(
            columns(&EventStrategy),
            vec![
                ("Last Seen", "string", 0),
                ("Type", "string", 0),
                ("Reason", "string", 0),
                ("Object", "string", 0),
                ("Subobject", "string", 1),
                ("Source", "string", 1),
                ("Message", "string", 0),
                ("First Seen", "string", 1),
                ("Count", "string", 1),
                ("Name", "string", 1),
            ]
        );
        assert_eq!(EVENT_COLUMNS[9].format, "name");
    }

    #[test]
    fn event_with_only_event_time_and_series() {
        let event: v1::Event = typed(json!({
            "metadata": {"name": "lease.1"},
            "involvedObject": {"kind": "Lease"},
            "reason": "LeaderElection", "message": "became leader",
            "reportingComponent": "kube-controller-manager", "reportingInstance": "cm-1",
            "eventTime": "2024-05-01T08:59:59.250000Z",
            "series": {"count": 4, "lastObservedTime": "2024-05-01T11:59:15.000000Z"},
            "type": "Normal"
        }));
        let cells = cells_of(&EventStrategy, &event);
        assert_eq!(
            cells[0],
            json!("45s"),
            "Last Seen from series.lastObservedTime"
        );
        assert_eq!(
            cells[3],
            json!("lease"),
            "Object without a name is the kind alone"
        );
        assert_eq!(cells[5], json!("kube-controller-manager, cm-1"));
        assert_eq!(cells[7], json!("3h"), "First Seen from eventTime");
        assert_eq!(cells[8], json!(4), "Count from series.count");
    }

    #[test]
    fn event_fallbacks_without_series() {
        // Only eventTime: Last Seen is First Seen, a singleton counts once.
        let event: v1::Event = typed(json!({
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "Node", "name": "n1"},
            "reportingComponent": "scheduler",
            "eventTime": "2024-05-01T11:58:00.000000Z"
        }));
        let cells = cells_of(&EventStrategy, &event);
        assert_eq!(cells[0], json!("2m"));
        assert_eq!(cells[5], json!("scheduler"));
        assert_eq!(cells[7], json!("2m"));
        assert_eq!(cells[8], json!(1));
        // Nothing set: both ages unknown, source.host without a component.
        let event: v1::Event = typed(json!({
            "metadata": {"name": "bare"}, "involvedObject": {}, "source": {"host": "node-2"}
        }));
        let cells = cells_of(&EventStrategy, &event);
        assert_eq!(cells[0], json!("<unknown>"));
        assert_eq!(cells[1], json!(""));
        assert_eq!(cells[3], json!(""));
        assert_eq!(cells[5], json!(", node-2"));
        assert_eq!(cells[7], json!("<unknown>"));
        assert_eq!(cells[8], json!(1));
        // A series without a last observation is unknown, even with lastTimestamp.
        let event: v1::Event = typed(json!({
            "metadata": {"name": "s"}, "involvedObject": {"kind": "Pod", "name": "p"},
            "lastTimestamp": "2024-05-01T11:00:00Z", "series": {"count": 2}
        }));
        let cells = cells_of(&EventStrategy, &event);
        assert_eq!(cells[0], json!("<unknown>"));
        assert_eq!(cells[8], json!(2));
    }

    #[test]
    fn event_source_field_label() {
        let mut out = Vec::new();
        let event: v1::Event = typed(json!({
            "metadata": {"name": "e"}, "involvedObject": {},
            "source": {"component": ""}, "reportingComponent": "kubelet"
        }));
        EventStrategy.selectable_fields(&event, &mut out);
        assert_eq!(out, vec![("source", "kubelet".to_string())]);
    }

    #[test]
    fn namespace_config_map_secret_service_account() {
        let meta = json!({"name": "x", "creationTimestamp": "2024-04-29T12:00:00Z"});
        let ns: v1::Namespace =
            typed(json!({"metadata": meta, "status": {"phase": "Terminating"}}));
        assert_eq!(
            cells_of(&NamespaceStrategy, &ns),
            vec![json!("x"), json!("Terminating"), json!("2d")]
        );
        assert_eq!(
            columns(&NamespaceStrategy),
            vec![
                ("Name", "string", 0),
                ("Status", "string", 0),
                ("Age", "string", 0)
            ]
        );
        let cm: v1::ConfigMap = typed(json!({
            "metadata": meta, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}
        }));
        assert_eq!(
            cells_of(&ConfigMapStrategy, &cm),
            vec![json!("x"), json!(3), json!("2d")]
        );
        assert_eq!(
            columns(&ConfigMapStrategy),
            vec![
                ("Name", "string", 0),
                ("Data", "string", 0),
                ("Age", "string", 0)
            ]
        );
        let secret: v1::Secret = typed(json!({
            "metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "AA==", "tls.key": "AA=="}
        }));
        assert_eq!(
            cells_of(&SecretStrategy, &secret),
            vec![
                json!("s"),
                json!("kubernetes.io/tls"),
                json!(2),
                json!("<unknown>")
            ]
        );
        assert_eq!(
            columns(&SecretStrategy),
            vec![
                ("Name", "string", 0),
                ("Type", "string", 0),
                ("Data", "string", 0),
                ("Age", "string", 0)
            ]
        );
        let sa: v1::ServiceAccount = typed(json!({
            "metadata": meta, "secrets": [{"name": "a"}, {"name": "b"}]
        }));
        assert_eq!(
            cells_of(&ServiceAccountStrategy, &sa),
            vec![json!("x"), json!(2), json!("2d")]
        );
        assert_eq!(
            columns(&ServiceAccountStrategy),
            vec![
                ("Name", "string", 0),
                ("Secrets", "string", 0),
                ("Age", "string", 0)
            ]
        );
    }

    #[test]
    fn an_object_of_another_kind_gets_its_name_and_empty_cells() {
        let cm: v1::ConfigMap = typed(json!({"metadata": {"name": "c"}}));
        assert_eq!(
            cells_of(&SecretStrategy, &cm),
            vec![json!("c"), Value::Null, Value::Null, Value::Null]
        );
    }
}
