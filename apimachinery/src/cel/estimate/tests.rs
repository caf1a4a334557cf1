//! The arithmetic of the estimate (the figures against Kubernetes' are with the schema
//! checks, which build the declarations).

use super::{Est, by_factor};

#[test]
fn factors_round_up_and_saturate() {
    assert_eq!(by_factor(3_145_727, 0.1), 314_573);
    assert_eq!(by_factor(4, 0.25), 1);
    assert_eq!(by_factor(0, 0.1), 0);
    assert_eq!(by_factor(u64::MAX, 0.1), 1_844_674_407_370_955_264);
    assert_eq!(by_factor(u64::MAX, 2.0), u64::MAX);
    let big = Est::fixed(u64::MAX);
    assert_eq!(big.add(Est::fixed(1)), big);
    assert_eq!(big.mul(Est::fixed(2)), big);
}
