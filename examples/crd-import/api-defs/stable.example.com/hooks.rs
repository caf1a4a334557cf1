//! Conversions of the structs whose fields differ between versions, imported by `codegen
//! import-crd`: as kube-apiserver converts a custom resource whose CRD has conversion
//! strategy `None`, the JSON is kept and what the target version does not declare is
//! dropped. Replace them with conversions of your own where the versions mean different
//! things.

/// Decodes `dst` from the JSON of `src`; `dst` keeps the fields converted by name when the
/// JSON does not decode.
fn convert_json<S, D>(src: &S, dst: &mut D)
where
    S: ::apimachinery::__private::serde::Serialize,
    D: ::apimachinery::__private::serde::de::DeserializeOwned,
{
    let json = ::apimachinery::__private::serde_json::to_value(src);
    if let Ok(value) = json.and_then(::apimachinery::__private::serde_json::from_value) {
        *dst = value;
    }
}

/// `v1beta1`'s `CronTabSpec` to `v1`'s, through JSON (the versions differ in `concurrency_policy`, `env`, `min_replicas`, `ports`, `tags`, `timeout`).
pub fn v1beta1_cron_tab_spec_to_v1(src: &v1beta1::CronTabSpec, dst: &mut v1::CronTabSpec) {
    convert_json(src, dst);
}

/// `v1`'s `CronTabSpec` to `v1beta1`'s, through JSON (the versions differ in `concurrency_policy`, `env`, `min_replicas`, `ports`, `tags`, `timeout`).
pub fn v1_cron_tab_spec_to_v1beta1(src: &v1::CronTabSpec, dst: &mut v1beta1::CronTabSpec) {
    convert_json(src, dst);
}

/// `v1beta1`'s `CronTabStatus` to `v1`'s, through JSON (the versions differ in `label_selector`, `last_schedule_time`).
pub fn v1beta1_cron_tab_status_to_v1(src: &v1beta1::CronTabStatus, dst: &mut v1::CronTabStatus) {
    convert_json(src, dst);
}

/// `v1`'s `CronTabStatus` to `v1beta1`'s, through JSON (the versions differ in `label_selector`, `last_schedule_time`).
pub fn v1_cron_tab_status_to_v1beta1(src: &v1::CronTabStatus, dst: &mut v1beta1::CronTabStatus) {
    convert_json(src, dst);
}
