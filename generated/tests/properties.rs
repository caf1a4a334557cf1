//! Property tests over every registered kind and version, with objects drawn from the
//! generated `Sample` impls: conversions through the hub are the identity, the JSON encoding
//! round-trips and names only known fields, and defaulting is idempotent.

use apimachinery::runtime::{Kind, Object};
use apimachinery::sample::Sampler;
use proptest::prelude::*;
use serde_json::Value;

/// Every (kind, version) pair with a sampled object of that version.
fn samples(seed: u64) -> Vec<(&'static Kind, &'static str, Value)> {
    let scheme = generated::scheme();
    let mut out = Vec::new();
    for &ops in scheme.kinds() {
        for info in ops.versions() {
            let mut sampler = Sampler::new(seed);
            let obj = generated::sample_object(info.group, info.version, info.kind, &mut sampler)
                .or_else(|| {
                    kubernetes_api::sample_object(info.group, info.version, info.kind, &mut sampler)
                })
                .unwrap_or_else(|| {
                    panic!(
                        "no sample for {}/{} {}",
                        info.group, info.version, info.kind
                    )
                });
            out.push((ops, info.version, obj));
        }
    }
    out
}

/// The typed object of a sampled JSON object.
fn typed(kind: &Kind, version: &str, value: &Value) -> Result<Box<dyn Object>, TestCaseError> {
    kind.codec(version)
        .expect("served")
        .decode_value(value)
        .map(|d| d.object)
        .map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn version_to_hub_to_version_is_identity(seed in any::<u64>()) {
        for (kind, version, obj) in samples(seed) {
            let name = kind.storage_info().kind;
            let object = typed(kind, version, &obj)?;
            for other in kind.versions() {
                let there = kind.convert(object.clone(), other.version).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(there.info().version, other.version);
                let again = kind.convert(there, version).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(again.eq_object(&*object), "{} {} -> {} -> {}", name, version, other.version, version);
            }
        }
    }

    #[test]
    fn encoding_names_only_known_fields(seed in any::<u64>()) {
        for (kind, version, obj) in samples(seed) {
            let decoded = kind.codec(version).expect("served").decode_value(&obj).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(decoded.tracker.unknown_fields().is_empty(), "{} {}: {:?}", kind.storage_info().kind, version, decoded.tracker.unknown_fields());
            // The typed JSON decodes to the same object.
            let json = decoded.object.to_json().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let again = kind.codec(version).expect("served").decode_json(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(again.object.eq_object(&*decoded.object), "{} {}", kind.storage_info().kind, version);
            prop_assert!(again.tracker.unknown_fields().is_empty());
        }
    }

    #[test]
    fn defaulting_is_idempotent(seed in any::<u64>()) {
        for (kind, version, obj) in samples(seed) {
            let once = typed(kind, version, &obj)?;
            let mut twice = once.clone();
            twice.run_default_hooks();
            prop_assert!(twice.eq_object(&*once), "{} {}", kind.storage_info().kind, version);
            let tree = once.to_value().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let again = typed(kind, version, &tree)?;
            prop_assert!(again.eq_object(&*once), "{} {}", kind.storage_info().kind, version);
        }
    }
}
