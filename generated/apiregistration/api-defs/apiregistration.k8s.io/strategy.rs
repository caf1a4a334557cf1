//! Hand-written strategy of apiregistration.k8s.io: an APIService's registry behaviour
//! (kube-aggregator's `pkg/registry/apiservice`): a local APIService is available from its
//! creation, the main resource never writes the status, `kubectl get` prints the service and
//! availability, and writes are validated by the crate's `validation` module.

use ::apimachinery::errors::FieldError;
use ::apimachinery::resource::PrinterColumn;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::{self, AGE_COLUMN, NAME_COLUMN, TypedTable, column};
use ::serde_json::Value;

use crate::conditions::{AVAILABLE, condition, local_available, set_condition};
use crate::validation::{validate_api_service, validate_api_service_status};

/// kube-aggregator's columns: `Name`, `Service`, `Available`, `Age`.
static API_SERVICE_COLUMNS: [PrinterColumn; 4] = [
    NAME_COLUMN,
    column(
        "Service",
        "string",
        0,
        "The reference to the service that hosts this API endpoint.",
    ),
    column("Available", "string", 0, "Whether this service is available."),
    AGE_COLUMN,
];

static API_SERVICE_TABLE: TypedTable<v1::APIService> =
    TypedTable::new(&API_SERVICE_COLUMNS, |s, now| {
        vec![
            table::name(&s.metadata),
            Value::from(service_cell(s)),
            Value::from(available_cell(s)),
            table::age(&s.metadata, now),
        ]
    });

/// The `Service` cell: `Local`, or `<namespace>/<name>` of the service.
pub fn service_cell(service: &v1::APIService) -> String {
    match &service.spec.service {
        None => "Local".to_string(),
        Some(s) => format!(
            "{}/{}",
            s.namespace.as_deref().unwrap_or(""),
            s.name.as_deref().unwrap_or("")
        ),
    }
}

/// The `Available` cell: `True`, `False (<reason>)` (the status alone without a reason), or
/// `Unknown` without the condition.
pub fn available_cell(service: &v1::APIService) -> String {
    match condition(service, AVAILABLE) {
        None => "Unknown".to_string(),
        Some(c) if c.status == "True" => c.status.clone(),
        Some(c) => match c.reason.as_deref().filter(|r| !r.is_empty()) {
            Some(reason) => format!("{} ({reason})", c.status),
            None => c.status.clone(),
        },
    }
}

/// An APIService's registry behaviour (see the module documentation).
pub struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    /// A created APIService starts without status; a local one is marked available at once.
    fn prepare_for_create(&self, object: &mut dyn Object) {
        if let Some(service) = object.downcast_mut::<v1::APIService>() {
            service.status = v1::APIServiceStatus::default();
            if service.spec.service.is_none() {
                set_condition(service, local_available());
            }
        }
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        object
            .downcast_ref::<v1::APIService>()
            .map(validate_api_service)
            .unwrap_or_default()
    }

    fn validate_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        self.validate(object)
    }

    /// Only the conditions' statuses are checked (`ValidateAPIServiceStatusUpdate`).
    fn validate_status_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        object
            .downcast_ref::<v1::APIService>()
            .map(|s| validate_api_service_status(&s.status))
            .unwrap_or_default()
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&API_SERVICE_TABLE)
    }
}
