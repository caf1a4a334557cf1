//! BanFlunder, sample-apiserver's admission plugin: a Flunder may not be created with a name
//! that any Fischer lists in `disallowedFlunders`.

use std::sync::Arc;

use ::apimachinery::admission::{Attributes, MutatingPlugin, Operation, Plugin};
use ::apimachinery::status::ApiError;

/// The admission plugins wardle.example.com ships.
pub fn admission_plugins() -> Vec<Plugin> {
    vec![Plugin {
        name: "BanFlunder",
        default_enabled: true,
        mutating: Some(Arc::new(BanFlunder)),
        validating: None,
    }]
}

/// Refuses the creation of a Flunder whose name a Fischer disallows.
pub struct BanFlunder;

#[::async_trait::async_trait]
impl MutatingPlugin for BanFlunder {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.operation == Operation::Create && std::ptr::eq(attributes.kind, &super::FLUNDER_KIND)
    }

    async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
        let name = attributes.object_name().to_string();
        let Some(objects) = attributes.objects else {
            return Err(attributes.forbidden("not yet ready to handle request"));
        };
        let banned = objects
            .cached_list("wardle.example.com", "Fischer", "")
            .iter()
            .filter_map(|o| o.downcast_ref::<v1alpha1::Fischer>())
            .any(|f| f.disallowed_flunders.contains(&name));
        if banned {
            return Err(attributes.forbidden("this name may not be used, please change the resource name"));
        }
        Ok(())
    }
}
