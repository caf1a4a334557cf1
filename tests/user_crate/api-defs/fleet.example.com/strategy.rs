//! A Ship may not move to another harbor once it berths.

use ::apimachinery::errors::FieldError;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::Strategy;

/// A Ship's harbor is fixed at creation.
pub struct ShipStrategy;

impl Strategy for ShipStrategy {
    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        let (Some(new), Some(old)) = (object.downcast_ref::<v1::Ship>(), old.downcast_ref::<v1::Ship>()) else {
            return Vec::new();
        };
        if new.spec.harbor == old.spec.harbor {
            return Vec::new();
        }
        vec![FieldError::invalid(
            "spec.harbor",
            &new.spec.harbor.as_str().into(),
            "a ship may not change harbors",
        )]
    }
}
