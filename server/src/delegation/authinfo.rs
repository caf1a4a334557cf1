//! The `kube-system/extension-apiserver-authentication` ConfigMap: how the main server tells
//! aggregated servers whom to trust (kube-apiserver's `ClusterAuthenticationInfo`): the client
//! CA (`client-ca-file`) and the request-header settings (`requestheader-client-ca-file`, and
//! `requestheader-allowed-names`, `requestheader-username-headers`,
//! `requestheader-uid-headers`, `requestheader-group-headers` and
//! `requestheader-extra-headers-prefix` as JSON arrays).

use std::collections::BTreeMap;

use crate::authn::requestheader::RequestHeaderConfig;

/// The ConfigMap's namespace.
pub const NAMESPACE: &str = "kube-system";
/// The ConfigMap's name.
pub const NAME: &str = "extension-apiserver-authentication";
/// The collection path of the ConfigMap's namespace.
pub const CONFIGMAPS: &str = "/api/v1/namespaces/kube-system/configmaps";

/// What the ConfigMap says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterAuthenticationInfo {
    /// The CA bundle (PEM) client certificates are verified against; empty: none.
    pub client_ca: String,
    /// The request-header settings; `None` without a request-header CA.
    pub request_header: Option<RequestHeaderConfig>,
}

/// A JSON array of strings, as kube writes the list keys.
fn json_list(values: &[String]) -> String {
    serde_json::to_string(values).unwrap_or_else(|_| "[]".to_string())
}

/// A list key's values (a malformed value reads as empty).
fn parse_list(value: Option<&String>) -> Vec<String> {
    value
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

impl ClusterAuthenticationInfo {
    /// The ConfigMap's `data`: the keys of what is known (no key for a missing CA).
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let mut data = BTreeMap::new();
        if !self.client_ca.is_empty() {
            data.insert("client-ca-file".to_string(), self.client_ca.clone());
        }
        if let Some(rh) = &self.request_header
            && !rh.client_ca.is_empty()
        {
            data.insert(
                "requestheader-client-ca-file".to_string(),
                String::from_utf8_lossy(&rh.client_ca).into_owned(),
            );
            for (key, values) in [
                ("requestheader-allowed-names", &rh.allowed_names),
                ("requestheader-username-headers", &rh.username_headers),
                ("requestheader-uid-headers", &rh.uid_headers),
                ("requestheader-group-headers", &rh.group_headers),
                (
                    "requestheader-extra-headers-prefix",
                    &rh.extra_headers_prefix,
                ),
            ] {
                // The UID headers are newer: without any, the key is left out, as the six
                // keys of older servers are what aggregated servers expect.
                if key == "requestheader-uid-headers" && values.is_empty() {
                    continue;
                }
                data.insert(key.to_string(), json_list(values));
            }
        }
        data
    }

    /// Reads a ConfigMap's `data` (a JSON object of strings).
    pub fn from_data(data: &serde_json::Value) -> Self {
        let data: BTreeMap<String, String> = data
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let request_header = data
            .get("requestheader-client-ca-file")
            .filter(|ca| !ca.trim().is_empty())
            .map(|ca| RequestHeaderConfig {
                client_ca: ca.clone().into_bytes(),
                allowed_names: parse_list(data.get("requestheader-allowed-names")),
                username_headers: parse_list(data.get("requestheader-username-headers")),
                uid_headers: parse_list(data.get("requestheader-uid-headers")),
                group_headers: parse_list(data.get("requestheader-group-headers")),
                extra_headers_prefix: parse_list(data.get("requestheader-extra-headers-prefix")),
            });
        Self {
            client_ca: data.get("client-ca-file").cloned().unwrap_or_default(),
            request_header,
        }
    }
}

/// Where a server's current authentication settings come from, for the ConfigMap it publishes:
/// its client CA file (read again on every call, so a rotated file is published) and its
/// request-header authenticator.
#[derive(Clone, Debug)]
pub struct AuthenticationInfoSource {
    /// The client CA file TLS verifies client certificates against.
    pub client_ca_file: std::path::PathBuf,
    /// The request-header authenticator, if any.
    pub request_header:
        Option<std::sync::Arc<crate::authn::requestheader::RequestHeaderAuthenticator>>,
}

impl AuthenticationInfoSource {
    /// What the ConfigMap should say now (an unreadable client CA file publishes none).
    pub fn current(&self) -> ClusterAuthenticationInfo {
        ClusterAuthenticationInfo {
            client_ca: std::fs::read_to_string(&self.client_ca_file).unwrap_or_default(),
            request_header: self
                .request_header
                .as_ref()
                .map(|rh| rh.config())
                .filter(|rh| !rh.client_ca.is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configmap_round_trips_with_json_lists() {
        let info = ClusterAuthenticationInfo {
            client_ca: "CA".into(),
            request_header: Some(RequestHeaderConfig::with_default_headers(
                b"FP".to_vec(),
                vec!["front-proxy-client".into()],
            )),
        };
        let data = info.to_data();
        assert_eq!(
            data["requestheader-allowed-names"],
            "[\"front-proxy-client\"]"
        );
        assert_eq!(
            data["requestheader-username-headers"],
            "[\"X-Remote-User\"]"
        );
        assert_eq!(data["requestheader-group-headers"], "[\"X-Remote-Group\"]");
        assert_eq!(
            data["requestheader-extra-headers-prefix"],
            "[\"X-Remote-Extra-\"]"
        );
        assert!(!data.contains_key("requestheader-uid-headers"));
        assert_eq!(data.len(), 6);
        assert_eq!(data["client-ca-file"], "CA");
        let read = ClusterAuthenticationInfo::from_data(&serde_json::json!(data));
        assert_eq!(read, info);
        let only_ca =
            ClusterAuthenticationInfo::from_data(&serde_json::json!({"client-ca-file": "CA"}));
        assert_eq!(only_ca.request_header, None);
        assert_eq!(ClusterAuthenticationInfo::default().to_data().len(), 0);
    }
}
