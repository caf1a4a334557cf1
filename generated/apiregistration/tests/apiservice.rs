//! APIService validation (kube-aggregator's messages), table cells and conditions.

use apimachinery::strategy::Strategy;
use apiregistration_api::apiregistration_k8s_io::strategy::ApiServiceStrategy;
use apiregistration_api::apiregistration_k8s_io::v1::APIService;
use apiregistration_api::conditions;
use apiregistration_api::validation::{validate_api_service, validate_api_service_status};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

fn service(value: Value) -> APIService {
    serde_json::from_value(value).unwrap()
}

fn messages(s: &APIService) -> Vec<String> {
    validate_api_service(s)
        .iter()
        .map(|e| e.to_string())
        .collect()
}

fn remote(spec: Value) -> APIService {
    let mut base = json!({
        "metadata": {"name": "v1alpha1.wardle.example.com"},
        "spec": {
            "group": "wardle.example.com", "version": "v1alpha1",
            "groupPriorityMinimum": 2000, "versionPriority": 200,
            "service": {"namespace": "wardle", "name": "api", "port": 443}
        }
    });
    for (k, v) in spec.as_object().unwrap() {
        base["spec"][k] = v.clone();
    }
    service(base)
}

#[test]
fn a_valid_remote_and_local_api_service_pass() {
    assert!(messages(&remote(json!({}))).is_empty());
    let local = service(json!({
        "metadata": {"name": "v1."},
        "spec": {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    }));
    assert!(messages(&local).is_empty());
}

#[test]
fn the_name_must_be_version_dot_group() {
    let mut s = remote(json!({}));
    s.metadata.name = Some("wrong".into());
    assert_eq!(
        messages(&s),
        [
            "metadata.name: Invalid value: \"wrong\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\""
        ]
    );
}

#[test]
fn priorities_are_bounded() {
    let s = remote(json!({"groupPriorityMinimum": 0, "versionPriority": 1001}));
    assert_eq!(
        messages(&s),
        [
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
            "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
        ]
    );
    let s = remote(json!({"groupPriorityMinimum": 20000, "versionPriority": 1000}));
    assert!(messages(&s).is_empty());
    let s = remote(json!({"groupPriorityMinimum": 20001}));
    assert_eq!(
        messages(&s),
        ["spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000"]
    );
}

#[test]
fn group_and_version_are_checked() {
    let s = service(json!({
        "metadata": {"name": "v2."},
        "spec": {"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1}
    }));
    assert_eq!(
        messages(&s),
        [
            "spec.group: Required value: only v1 may have an empty group and it better be legacy kube"
        ]
    );
    let s = service(json!({
        "metadata": {"name": "V1.Foo"},
        "spec": {"group": "Foo", "version": "V1", "groupPriorityMinimum": 1, "versionPriority": 1}
    }));
    let m = messages(&s);
    assert!(
        m[0].starts_with("spec.group: Invalid value: \"Foo\": a lowercase RFC 1123 subdomain"),
        "{m:?}"
    );
    assert!(
        m[1].starts_with("spec.version: Invalid value: \"V1\": a DNS-1035 label"),
        "{m:?}"
    );
}

#[test]
fn tls_settings_of_local_and_remote_services() {
    let local = service(json!({
        "metadata": {"name": "v1.foo.io"},
        "spec": {"group": "foo.io", "version": "v1", "groupPriorityMinimum": 1,
                 "versionPriority": 1, "caBundle": "YWJjZGU=", "insecureSkipTLSVerify": true}
    }));
    assert_eq!(
        messages(&local),
        [
            "spec.caBundle: Invalid value: \"5 bytes\": local APIServices may not have a caBundle",
            "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
        ]
    );
    let both = remote(json!({"caBundle": "YWJjZGU=", "insecureSkipTLSVerify": true}));
    assert_eq!(
        messages(&both),
        ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"]
    );
}

#[test]
fn the_service_reference_is_complete() {
    let s = remote(json!({"service": {"port": 70000}}));
    assert_eq!(
        messages(&s),
        [
            "spec.service.namespace: Required value",
            "spec.service.name: Required value",
            "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
        ]
    );
}

#[test]
fn the_port_defaults_to_443() {
    let s = remote(json!({"service": {"namespace": "a", "name": "b"}}));
    assert_eq!(s.spec.service.unwrap().port, Some(443));
}

#[test]
fn condition_statuses_are_checked() {
    let mut s = remote(json!({}));
    s.status.conditions = Some(vec![conditions::available(
        true,
        "Passed",
        "all checks passed",
    )]);
    assert!(validate_api_service_status(&s.status).is_empty());
    s.status.conditions.as_mut().unwrap()[0].status = "Maybe".into();
    let m: Vec<_> = validate_api_service_status(&s.status)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        m,
        [
            "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""
        ]
    );
}

#[test]
fn a_local_api_service_is_available_on_create_and_a_remote_one_unknown() {
    let mut local = service(json!({
        "metadata": {"name": "v1.foo.io"},
        "spec": {"group": "foo.io", "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1},
        "status": {"conditions": [{"type": "Available", "status": "False"}]}
    }));
    ApiServiceStrategy.prepare_for_create(&mut local);
    let c = conditions::condition(&local, "Available").unwrap();
    assert_eq!(c.status, "True");
    assert_eq!(c.reason.as_deref(), Some("Local"));
    assert_eq!(
        c.message.as_deref(),
        Some("Local APIServices are always available")
    );
    let mut far = remote(json!({}));
    far.status.conditions = Some(vec![conditions::available(true, "Passed", "x")]);
    ApiServiceStrategy.prepare_for_create(&mut far);
    assert!(far.status.conditions.is_none());
}

#[test]
fn set_condition_moves_the_transition_time_only_on_a_status_change() {
    let mut s = remote(json!({}));
    let mut first = conditions::available(false, "MissingEndpoints", "a");
    first.last_transition_time = Some(apimachinery::meta::Time(
        DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc),
    ));
    conditions::set_condition(&mut s, first.clone());
    conditions::set_condition(
        &mut s,
        conditions::available(false, "FailedDiscoveryCheck", "b"),
    );
    let c = conditions::condition(&s, "Available").unwrap();
    assert_eq!(c.last_transition_time, first.last_transition_time);
    assert_eq!(c.reason.as_deref(), Some("FailedDiscoveryCheck"));
    conditions::set_condition(
        &mut s,
        conditions::available(true, "Passed", "all checks passed"),
    );
    let c = conditions::condition(&s, "Available").unwrap();
    assert_ne!(c.last_transition_time, first.last_transition_time);
    assert!(conditions::is_available(&s));
}

#[test]
fn the_table_prints_service_and_availability() {
    let now = DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let table = ApiServiceStrategy.table().unwrap();
    let names: Vec<_> = table.columns().iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Service", "Available", "Age"]);
    let mut s = remote(json!({}));
    s.metadata.creation_timestamp = Some(apimachinery::meta::Time(
        DateTime::parse_from_rfc3339("2024-05-01T11:00:00Z")
            .unwrap()
            .with_timezone(&Utc),
    ));
    assert_eq!(
        table.cells(&s, now),
        vec![
            json!("v1alpha1.wardle.example.com"),
            json!("wardle/api"),
            json!("Unknown"),
            json!("60m")
        ]
    );
    conditions::set_condition(
        &mut s,
        conditions::available(false, "MissingEndpoints", "m"),
    );
    assert_eq!(table.cells(&s, now)[2], json!("False (MissingEndpoints)"));
    s.status.conditions.as_mut().unwrap()[0].reason = None;
    assert_eq!(table.cells(&s, now)[2], json!("False"));
    let mut local = service(json!({"metadata": {"name": "v1."}, "spec": {"version": "v1"}}));
    conditions::set_condition(&mut local, conditions::local_available());
    assert_eq!(
        table.cells(&local, now)[1..3],
        [json!("Local"), json!("True")]
    );
}

#[test]
fn json_keeps_kubernetes_field_names() {
    let s = remote(json!({"insecureSkipTLSVerify": true}));
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["spec"]["insecureSkipTLSVerify"], json!(true));
    assert_eq!(v["spec"]["groupPriorityMinimum"], json!(2000));
    assert_eq!(v["spec"]["versionPriority"], json!(200));
    assert_eq!(v["apiVersion"], json!("apiregistration.k8s.io/v1"));
    assert_eq!(v["kind"], json!("APIService"));
}
