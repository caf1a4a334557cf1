//! The admission plugins example.dev ships beside Widget: the pattern to copy for a kind of
//! your own. A plugin is a type implementing `MutatingPlugin` (it may change the object before
//! it is validated and stored) and/or `ValidatingPlugin` (it may refuse the final object);
//! `admission_plugins()` registers them under the names `--enable-admission-plugins` and
//! `--disable-admission-plugins` take. Objects are of the kind's storage version.

use std::sync::Arc;

use ::apimachinery::admission::{Attributes, MutatingPlugin, Operation, Plugin};
use ::apimachinery::status::ApiError;

/// The label `WidgetColorLabel` keeps equal to a Widget's `spec.color`.
pub const COLOR_LABEL: &str = "example.dev/color";

/// The admission plugins of example.dev.
pub fn admission_plugins() -> Vec<Plugin> {
    vec![Plugin {
        name: "WidgetColorLabel",
        default_enabled: true,
        mutating: Some(Arc::new(WidgetColorLabel)),
        validating: None,
    }]
}

/// Labels every Widget with its color (`example.dev/color: <spec.color>`), and removes the
/// label from a Widget without one, on every create and update of the main resource, so that
/// Widgets can be selected by color (`kubectl get widgets -l example.dev/color=blue`).
pub struct WidgetColorLabel;

#[::async_trait::async_trait]
impl MutatingPlugin for WidgetColorLabel {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        matches!(attributes.operation, Operation::Create | Operation::Update)
            && attributes.subresource.is_empty()
            && std::ptr::eq(attributes.kind, &super::WIDGET_KIND)
    }

    async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
        let Some(widget) = attributes
            .object_mut()
            .and_then(|o| o.downcast_mut::<v1::Widget>())
        else {
            return Ok(());
        };
        match widget.spec.color.clone().filter(|c| !c.is_empty()) {
            Some(color) => {
                widget.metadata.labels.insert(COLOR_LABEL.to_string(), color);
            }
            None => {
                widget.metadata.labels.remove(COLOR_LABEL);
            }
        }
        Ok(())
    }
}
