//! Hand-written strategies of admissionregistration.k8s.io: webhook configurations print how
//! many webhooks they register.

use ::apimachinery::resource::PrinterColumn;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::{self, AGE_COLUMN, NAME_COLUMN, TypedTable, column};

/// The columns of a webhook configuration.
static WEBHOOK_COLUMNS: [PrinterColumn; 3] = [
    NAME_COLUMN,
    column(
        "Webhooks",
        "integer",
        0,
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE_COLUMN,
];

static VALIDATING_TABLE: TypedTable<v1::ValidatingWebhookConfiguration> =
    TypedTable::new(&WEBHOOK_COLUMNS, |c, now| {
        vec![
            table::name(&c.metadata),
            table::count(c.webhooks.len()),
            table::age(&c.metadata, now),
        ]
    });

static MUTATING_TABLE: TypedTable<v1::MutatingWebhookConfiguration> =
    TypedTable::new(&WEBHOOK_COLUMNS, |c, now| {
        vec![
            table::name(&c.metadata),
            table::count(c.webhooks.len()),
            table::age(&c.metadata, now),
        ]
    });

/// A ValidatingWebhookConfiguration prints its number of webhooks.
pub struct ValidatingWebhookConfigurationStrategy;

impl Strategy for ValidatingWebhookConfigurationStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&VALIDATING_TABLE)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

/// A MutatingWebhookConfiguration prints its number of webhooks.
pub struct MutatingWebhookConfigurationStrategy;

impl Strategy for MutatingWebhookConfigurationStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&MUTATING_TABLE)
    }

    fn exempt_from_admission_webhooks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::chrono::{DateTime, Utc};
    use ::serde_json::json;

    #[test]
    fn webhook_configurations_print_their_webhook_count() {
        let now = DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let webhook = |name: &str| {
            json!({
                "name": name, "clientConfig": {"url": "https://example.com"},
                "sideEffects": "None", "admissionReviewVersions": ["v1"]
            })
        };
        let v: v1::ValidatingWebhookConfiguration = ::serde_json::from_value(json!({
            "metadata": {"name": "policy", "creationTimestamp": "2024-05-01T11:59:30Z"},
            "webhooks": [webhook("a.example.com"), webhook("b.example.com")]
        }))
        .unwrap();
        let table = ValidatingWebhookConfigurationStrategy.table().unwrap();
        assert_eq!(
            table.cells(&v, now),
            vec![json!("policy"), json!(2), json!("30s")]
        );
        let m: v1::MutatingWebhookConfiguration =
            ::serde_json::from_value(json!({"metadata": {"name": "none"}})).unwrap();
        let table = MutatingWebhookConfigurationStrategy.table().unwrap();
        assert_eq!(
            table.cells(&m, now),
            vec![json!("none"), json!(0), json!("<unknown>")]
        );
        let names: Vec<_> = table.columns().iter().map(|c| (c.name, c.type_)).collect();
        assert_eq!(
            names,
            [
                ("Name", "string"),
                ("Webhooks", "integer"),
                ("Age", "string")
            ]
        );
    }
}
