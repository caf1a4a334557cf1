//! Hand-written defaulting of discovery.k8s.io: what markers cannot express.

/// Kubernetes' `SetDefaults_EndpointPort`: a port's name is empty and its protocol `TCP` when
/// not given.
pub fn default_v1_endpoint_port(obj: &mut v1::EndpointPort) {
    if obj.name.is_none() {
        obj.name = Some(String::new());
    }
    if obj.protocol.is_none() {
        obj.protocol = Some("TCP".to_string());
    }
}
