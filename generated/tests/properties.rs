//! Property tests over every registered kind and version, with objects drawn from the
//! generated `Sample` impls: conversions through the hub are the identity, the JSON encoding
//! round-trips and names only known fields, and defaulting is idempotent.

use apimachinery::sample::Sampler;
use proptest::prelude::*;
use serde_json::Value;

/// Every (kind ops, version) pair with a sampled object of that version.
fn samples(
    seed: u64,
) -> Vec<(
    std::sync::Arc<dyn apimachinery::KindOps>,
    &'static str,
    Value,
)> {
    let scheme = generated::scheme();
    let mut out = Vec::new();
    for ops in scheme.kinds() {
        for info in ops.versions() {
            let mut sampler = Sampler::new(seed);
            let obj = generated::sample_object(info.group, info.version, info.kind, &mut sampler)
                .unwrap_or_else(|| {
                    panic!(
                        "no sample for {}/{} {}",
                        info.group, info.version, info.kind
                    )
                });
            out.push((ops.clone(), info.version, obj));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn version_to_hub_to_version_is_identity(seed in any::<u64>()) {
        for (ops, version, obj) in samples(seed) {
            let kind = ops.versions()[0].kind;
            let back = ops.convert(obj.clone(), version, version).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&back, &obj, "{} {} through the hub", kind, version);
            for other in ops.versions() {
                let there = ops.convert(obj.clone(), version, other.version).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let api_version = other.api_version();
                prop_assert_eq!(there["apiVersion"].as_str(), Some(api_version.as_str()));
                let again = ops.convert(there, other.version, version).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&again, &obj, "{} {} -> {} -> {}", kind, version, other.version, version);
            }
        }
    }

    #[test]
    fn encoding_names_only_known_fields(seed in any::<u64>()) {
        for (ops, version, obj) in samples(seed) {
            let decoded = ops.decode(version, obj.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(decoded.unknown_fields.is_empty(), "{} {}: {:?}", ops.versions()[0].kind, version, decoded.unknown_fields);
        }
    }

    #[test]
    fn defaulting_is_idempotent(seed in any::<u64>()) {
        for (ops, version, obj) in samples(seed) {
            let once = ops.default(version, obj).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let twice = ops.default(version, once.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(once, twice, "{} {}", ops.versions()[0].kind, version);
        }
    }
}
