//! Hand-written defaulting of the core group: what markers cannot express.

/// Every namespace carries the immutable label `kubernetes.io/metadata.name` set to its name,
/// as Kubernetes defaults it (so that namespace selectors can select namespaces by name).
pub fn default_v1_namespace(obj: &mut v1::Namespace) {
    if let Some(name) = obj.metadata.name.clone().filter(|n| !n.is_empty()) {
        obj.metadata.labels.insert("kubernetes.io/metadata.name".to_string(), name);
    }
}

/// `stringData` is write-only: its values are merged into `data` (replacing values of the
/// same key) and it is never stored or returned.
pub fn default_v1_secret(obj: &mut v1::Secret) {
    for (key, value) in std::mem::take(&mut obj.string_data) {
        obj.data.insert(key, ::apimachinery::meta::Bytes(value.into_bytes()));
    }
}

/// The most bytes the values of a ConfigMap or Secret may hold together.
const MAX_DATA_BYTES: usize = 1024 * 1024;

/// Kubernetes' `IsConfigMapKey`: the problems of a ConfigMap or Secret key.
fn config_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if key.len() > 253 {
        problems.push("must be no more than 253 characters".to_string());
    }
    let valid_chars = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    if !valid_chars {
        problems.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or \
             'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    if key == "." {
        problems.push("must not be '.'".to_string());
    } else if key == ".." {
        problems.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        problems.push("must not start with '..'".to_string());
    }
    problems
}

fn check_keys<'a>(field: &str, keys: impl Iterator<Item = &'a String>, errors: &mut Vec<FieldError>) {
    for key in keys {
        for problem in config_key_problems(key) {
            errors.push(FieldError::invalid(format!("{field}[{key}]"), &serde_json::Value::from(key.as_str()), problem));
        }
    }
}

/// ConfigMap keys are config keys, no key is in both `data` and `binaryData`, and the values
/// hold at most 1 MiB together.
pub fn validate_v1_config_map(obj: &v1::ConfigMap, errors: &mut Vec<FieldError>) {
    check_keys("data", obj.data.keys(), errors);
    for key in obj.data.keys().filter(|k| obj.binary_data.contains_key(*k)) {
        errors.push(FieldError::invalid(
            format!("data[{key}]"),
            &serde_json::Value::from(key.as_str()),
            "duplicate of key present in binaryData",
        ));
    }
    check_keys("binaryData", obj.binary_data.keys(), errors);
    let total: usize = obj.data.values().map(String::len).sum::<usize>() + obj.binary_data.values().map(|b| b.0.len()).sum::<usize>();
    if total > MAX_DATA_BYTES {
        errors.push(FieldError::new(
            ::apimachinery::errors::FieldErrorType::TooLong,
            "",
            None,
            format!("may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
}

/// Secret keys are config keys, the values hold at most 1 MiB together, and the well-known
/// types carry their required keys.
pub fn validate_v1_secret(obj: &v1::Secret, errors: &mut Vec<FieldError>) {
    check_keys("data", obj.data.keys(), errors);
    let total: usize = obj.data.values().map(|b| b.0.len()).sum();
    if total > MAX_DATA_BYTES {
        errors.push(FieldError::new(
            ::apimachinery::errors::FieldErrorType::TooLong,
            "data",
            None,
            format!("may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
    let require = |key: &str, errors: &mut Vec<FieldError>| {
        if !obj.data.contains_key(key) {
            errors.push(FieldError::required(format!("data[{key}]"), ""));
        }
    };
    match obj.r#type.as_deref().unwrap_or("Opaque") {
        "kubernetes.io/service-account-token" => {
            if !obj.metadata.annotations.contains_key("kubernetes.io/service-account.name") {
                errors.push(FieldError::required("metadata.annotations[kubernetes.io/service-account.name]", ""));
            }
        }
        "kubernetes.io/dockercfg" => require(".dockercfg", errors),
        "kubernetes.io/dockerconfigjson" => require(".dockerconfigjson", errors),
        "kubernetes.io/basic-auth" => {
            if !obj.data.contains_key("username") && !obj.data.contains_key("password") {
                require("username", errors);
                require("password", errors);
            }
        }
        "kubernetes.io/ssh-auth" => require("ssh-privatekey", errors),
        "kubernetes.io/tls" => {
            require("tls.crt", errors);
            require("tls.key", errors);
        }
        _ => {}
    }
}

/// Kubernetes' `SetDefaults_ServicePort`: the protocol is `TCP` and the target port the port,
/// when not given.
pub fn default_v1_service_port(obj: &mut v1::ServicePort) {
    if obj.protocol.as_deref().unwrap_or("").is_empty() {
        obj.protocol = Some("TCP".to_string());
    }
    let unset = match &obj.target_port {
        None => true,
        Some(::apimachinery::meta::IntOrString::Int(0)) => true,
        Some(::apimachinery::meta::IntOrString::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if unset {
        obj.target_port = Some(::apimachinery::meta::IntOrString::Int(obj.port));
    }
}

/// Kubernetes' `SetDefaults_Service`: type `ClusterIP`, session affinity `None` (with no
/// configuration; `ClientIP` gets a 10800-second timeout), the `Cluster` external traffic
/// policy for externally accessible services, the `Cluster` internal traffic policy for every
/// type but `ExternalName`, and node ports for a `LoadBalancer`.
pub fn default_v1_service(obj: &mut v1::Service) {
    let spec = &mut obj.spec;
    if spec.session_affinity.as_deref().unwrap_or("").is_empty() {
        spec.session_affinity = Some("None".to_string());
    }
    match spec.session_affinity.as_deref() {
        Some("None") => spec.session_affinity_config = None,
        Some("ClientIP") => {
            let has_timeout = spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .is_some_and(|c| c.timeout_seconds.is_some());
            if !has_timeout {
                spec.session_affinity_config = Some(v1::SessionAffinityConfig {
                    client_ip: Some(v1::ClientIPConfig {
                        timeout_seconds: Some(crate::services::DEFAULT_CLIENT_IP_AFFINITY_SECONDS),
                    }),
                });
            }
        }
        _ => {}
    }
    if spec.r#type.as_deref().unwrap_or("").is_empty() {
        spec.r#type = Some("ClusterIP".to_string());
    }
    let ty = spec.r#type.clone().unwrap_or_default();
    let externally_accessible =
        ty == "NodePort" || ty == "LoadBalancer" || (ty == "ClusterIP" && !spec.external_ips.is_empty());
    if externally_accessible && spec.external_traffic_policy.as_deref().unwrap_or("").is_empty() {
        spec.external_traffic_policy = Some("Cluster".to_string());
    }
    if spec.internal_traffic_policy.is_none() && ["NodePort", "LoadBalancer", "ClusterIP"].contains(&ty.as_str()) {
        spec.internal_traffic_policy = Some("Cluster".to_string());
    }
    if ty == "LoadBalancer" {
        if spec.allocate_load_balancer_node_ports.is_none() {
            spec.allocate_load_balancer_node_ports = Some(true);
        }
        for ingress in &mut obj.status.load_balancer.ingress {
            if ingress.ip.as_deref().is_some_and(|ip| !ip.is_empty()) && ingress.ip_mode.is_none() {
                ingress.ip_mode = Some("VIP".to_string());
            }
        }
    }
}

/// Kubernetes' `SetDefaults_Endpoints`: a port's protocol is `TCP` when not given.
pub fn default_v1_endpoint_port(obj: &mut v1::EndpointPort) {
    if obj.protocol.as_deref().unwrap_or("").is_empty() {
        obj.protocol = Some("TCP".to_string());
    }
}
