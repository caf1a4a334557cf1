//! Hand-written strategies of coordination.k8s.io: a Lease prints its holder.

use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::{self, AGE_COLUMN, NAME_COLUMN, TypedTable, column};
use ::serde_json::Value;

static LEASE_TABLE: TypedTable<v1::Lease> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "Holder",
            "string",
            0,
            "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        ),
        AGE_COLUMN,
    ],
    |lease, now| {
        vec![
            table::name(&lease.metadata),
            Value::from(lease.spec.holder_identity.clone().unwrap_or_default()),
            table::age(&lease.metadata, now),
        ]
    },
);

/// A Lease prints its holder (empty when none holds it) and age.
pub struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&LEASE_TABLE)
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
    fn a_lease_prints_its_holder() {
        let now = DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let lease: v1::Lease = ::serde_json::from_value(json!({
            "metadata": {"name": "leader", "creationTimestamp": "2024-05-01T04:00:00Z"},
            "spec": {"holderIdentity": "cm-1", "leaseDurationSeconds": 15}
        }))
        .unwrap();
        let table = LeaseStrategy.table().unwrap();
        assert_eq!(
            table.cells(&lease, now),
            vec![json!("leader"), json!("cm-1"), json!("8h")]
        );
        let free: v1::Lease =
            ::serde_json::from_value(json!({"metadata": {"name": "free"}, "spec": {}})).unwrap();
        assert_eq!(
            table.cells(&free, now),
            vec![json!("free"), json!(""), json!("<unknown>")]
        );
        let names: Vec<_> = table.columns().iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Holder", "Age"]);
    }
}
