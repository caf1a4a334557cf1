//! HarborExists: a Ship may only be created in a Harbor that exists.

use std::sync::Arc;

use ::apimachinery::admission::{Attributes, Operation, Plugin, ValidatingPlugin};
use ::apimachinery::status::ApiError;

/// The admission plugins of fleet.example.com.
pub fn admission_plugins() -> Vec<Plugin> {
    vec![Plugin {
        name: "HarborExists",
        default_enabled: true,
        mutating: None,
        validating: Some(Arc::new(HarborExists)),
    }]
}

/// Refuses a Ship whose `spec.harbor` names no Harbor.
pub struct HarborExists;

#[::async_trait::async_trait]
impl ValidatingPlugin for HarborExists {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.operation == Operation::Create && std::ptr::eq(attributes.kind, &super::SHIP_KIND)
    }

    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(ship) = attributes.object().and_then(|o| o.downcast_ref::<v1::Ship>()) else {
            return Ok(());
        };
        let found = attributes
            .objects
            .and_then(|objects| objects.cached("fleet.example.com", "Harbor", "", &ship.spec.harbor));
        match found {
            Some(_) => Ok(()),
            None => Err(attributes.forbidden(&format!("harbor {:?} does not exist", ship.spec.harbor))),
        }
    }
}
