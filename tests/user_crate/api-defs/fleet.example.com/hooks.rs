//! v1beta1's `sailors` is v1's `crew`.

/// v1beta1 `spec.sailors` becomes v1 `spec.crew`.
pub fn v1beta1_ship_spec_to_v1(src: &v1beta1::ShipSpec, dst: &mut v1::ShipSpec) {
    dst.crew = src.sailors;
}

/// v1 `spec.crew` becomes v1beta1 `spec.sailors`.
pub fn v1_ship_spec_to_v1beta1(src: &v1::ShipSpec, dst: &mut v1beta1::ShipSpec) {
    dst.sailors = src.crew;
}
