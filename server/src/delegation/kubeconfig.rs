//! A client of the main API server from a kubeconfig file (client-go's `clientcmd` for what a
//! delegating server needs): the current context's cluster (`server`,
//! `certificate-authority(-data)`, `insecure-skip-tls-verify`, `tls-server-name`) and user
//! (`client-certificate(-data)` and `client-key(-data)`, `token`, `tokenFile`), relative file
//! paths taken from the kubeconfig's directory. [`KubeClient`] POSTs reviews, GETs objects and
//! watches one object.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;

/// How long one request (not a watch) may take, as the webhook clients' default.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a kubeconfig cannot be used, or a request failed.
#[derive(Debug, thiserror::Error)]
pub enum KubeClientError {
    /// The file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The kubeconfig is malformed or incomplete.
    #[error("invalid kubeconfig {path}: {reason}")]
    Invalid {
        /// The kubeconfig.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The request could not be sent or its answer read.
    #[error("{0}")]
    Transport(String),
    /// The server answered with an unexpected status.
    #[error("the server answered {code}: {message}")]
    Status {
        /// The HTTP status.
        code: u16,
        /// The `Status` message, or the start of the body.
        message: String,
    },
}

/// The parts of a kubeconfig file a client needs (client-go's `clientcmdapi.Config`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    /// The clusters, by name.
    #[serde(default)]
    pub clusters: Vec<Named<Cluster>>,
    /// The users, by name.
    #[serde(default)]
    pub users: Vec<Named<User>>,
    /// The contexts, by name.
    #[serde(default)]
    pub contexts: Vec<Named<Context>>,
    /// The context used.
    #[serde(default)]
    pub current_context: String,
}

/// A named entry of a kubeconfig list.
#[derive(Debug, Default, Deserialize)]
pub struct Named<T> {
    /// The name.
    #[serde(default)]
    pub name: String,
    /// The entry (under the key `cluster`, `user` or `context`).
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    pub value: T,
}

/// A kubeconfig cluster.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// The server URL.
    #[serde(default)]
    pub server: String,
    /// A CA bundle file.
    #[serde(default)]
    pub certificate_authority: Option<PathBuf>,
    /// A CA bundle, base64.
    #[serde(default)]
    pub certificate_authority_data: Option<String>,
    /// Skip verifying the server's certificate.
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
    /// The name the server's certificate is verified for (and sent as SNI).
    #[serde(default)]
    pub tls_server_name: Option<String>,
}

/// A kubeconfig user.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct User {
    /// A client certificate file.
    #[serde(default)]
    pub client_certificate: Option<PathBuf>,
    /// A client certificate, base64.
    #[serde(default)]
    pub client_certificate_data: Option<String>,
    /// A client key file.
    #[serde(default)]
    pub client_key: Option<PathBuf>,
    /// A client key, base64.
    #[serde(default)]
    pub client_key_data: Option<String>,
    /// A bearer token.
    #[serde(default)]
    pub token: Option<String>,
    /// A file holding a bearer token (read for every request).
    #[serde(default, rename = "tokenFile")]
    pub token_file: Option<PathBuf>,
}

/// A kubeconfig context.
#[derive(Debug, Default, Deserialize)]
pub struct Context {
    /// The cluster's name.
    #[serde(default)]
    pub cluster: String,
    /// The user's name.
    #[serde(default)]
    pub user: String,
}

/// An HTTPS client of the server a kubeconfig names, with its credentials.
#[derive(Clone, Debug)]
pub struct KubeClient {
    base: reqwest::Url,
    http: reqwest::Client,
    token: Option<String>,
    token_file: Option<PathBuf>,
}

impl KubeClient {
    /// The client of the kubeconfig file at `path` (its current context).
    pub fn from_file(path: &Path) -> Result<Self, KubeClientError> {
        let text = std::fs::read_to_string(path).map_err(|source| KubeClientError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let invalid = |reason: String| KubeClientError::Invalid {
            path: path.display().to_string(),
            reason,
        };
        let config: Kubeconfig =
            serde_yaml_ng::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::from_config(&config, dir).map_err(|e| match e {
            KubeClientError::Invalid { reason, .. } => invalid(reason),
            other => other,
        })
    }

    /// The client of `config`'s current context; relative paths are taken from `dir`.
    pub fn from_config(config: &Kubeconfig, dir: &Path) -> Result<Self, KubeClientError> {
        let invalid = |reason: String| KubeClientError::Invalid {
            path: String::new(),
            reason,
        };
        let context = config
            .contexts
            .iter()
            .find(|c| c.name == config.current_context)
            .or_else(|| {
                (config.current_context.is_empty())
                    .then(|| config.contexts.first())
                    .flatten()
            })
            .ok_or_else(|| invalid(format!("context {:?} not found", config.current_context)))?;
        let cluster = config
            .clusters
            .iter()
            .find(|c| c.name == context.value.cluster)
            .ok_or_else(|| invalid(format!("cluster {:?} not found", context.value.cluster)))?;
        let user = config
            .users
            .iter()
            .find(|u| u.name == context.value.user)
            .map(|u| &u.value);
        let cluster = &cluster.value;
        let read = |file: &Option<PathBuf>, data: &Option<String>, what: &str| {
            read_pem(dir, file, data).map_err(|e| invalid(format!("{what}: {e}")))
        };
        let mut base = reqwest::Url::parse(&cluster.server)
            .map_err(|e| invalid(format!("server {:?}: {e}", cluster.server)))?;
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none());
        if cluster.insecure_skip_tls_verify {
            builder = builder.danger_accept_invalid_certs(true);
        } else if let Some(ca) = read(
            &cluster.certificate_authority,
            &cluster.certificate_authority_data,
            "certificate-authority",
        )? {
            let certs = reqwest::Certificate::from_pem_bundle(&ca)
                .map_err(|e| invalid(format!("certificate-authority: {e}")))?;
            builder = builder.tls_built_in_root_certs(false);
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let Some(name) = cluster.tls_server_name.as_deref().filter(|n| !n.is_empty()) {
            // The certificate is verified for `name` (and SNI says it) while the connection
            // goes to the server's address.
            let host = base.host_str().unwrap_or_default().to_string();
            let port = base.port_or_known_default().unwrap_or(443);
            let addrs: Vec<std::net::SocketAddr> =
                std::net::ToSocketAddrs::to_socket_addrs(&(host.trim_matches(['[', ']']), port))
                    .map_err(|e| invalid(format!("server {host:?}: {e}")))?
                    .collect();
            builder = builder.resolve_to_addrs(name, &addrs);
            base.set_host(Some(name))
                .map_err(|e| invalid(format!("tls-server-name {name:?}: {e}")))?;
        }
        let (mut token, mut token_file) = (None, None);
        if let Some(user) = user {
            let cert = read(
                &user.client_certificate,
                &user.client_certificate_data,
                "client-certificate",
            )?;
            let key = read(&user.client_key, &user.client_key_data, "client-key")?;
            match (cert, key) {
                (Some(mut cert), Some(key)) => {
                    cert.push(b'\n');
                    cert.extend(key);
                    let identity = reqwest::Identity::from_pem(&cert)
                        .map_err(|e| invalid(format!("client certificate: {e}")))?;
                    builder = builder.identity(identity);
                }
                (None, None) => {}
                _ => {
                    return Err(invalid(
                        "client-certificate and client-key must be given together".into(),
                    ));
                }
            }
            token = user.token.clone().filter(|t| !t.is_empty());
            token_file = user.token_file.as_ref().map(|f| dir.join(f));
        }
        let http = builder
            .build()
            .map_err(|e| invalid(crate::webhook::error_chain(&e)))?;
        Ok(Self {
            base,
            http,
            token,
            token_file,
        })
    }

    /// The server's URL.
    pub fn base(&self) -> &reqwest::Url {
        &self.base
    }

    /// A request to `path` (with its query) on the server, with the user's token.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut url = self.base.clone();
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let prefix = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{prefix}{path}"));
        url.set_query((!query.is_empty()).then_some(query));
        let mut request = self.http.request(method, url);
        let token = match &self.token_file {
            Some(file) => std::fs::read_to_string(file)
                .ok()
                .map(|t| t.trim().to_string()),
            None => self.token.clone(),
        };
        if let Some(token) = token.filter(|t| !t.is_empty()) {
            request = request.bearer_auth(token);
        }
        request
    }

    /// POSTs `body` as JSON to `path` and returns the answer (201 or 200).
    pub async fn post_json(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, KubeClientError> {
        let request = self
            .request(reqwest::Method::POST, path)
            .timeout(REQUEST_TIMEOUT)
            .json(body);
        match self.send(request).await? {
            (200 | 201, value) => Ok(value),
            (code, value) => Err(status_error(code, &value)),
        }
    }

    /// GETs the object at `path`: `None` when it does not exist (404).
    pub async fn get_json(&self, path: &str) -> Result<Option<serde_json::Value>, KubeClientError> {
        let request = self
            .request(reqwest::Method::GET, path)
            .timeout(REQUEST_TIMEOUT);
        match self.send(request).await? {
            (200, value) => Ok(Some(value)),
            (404, _) => Ok(None),
            (code, value) => Err(status_error(code, &value)),
        }
    }

    /// Sends a request; the status and the JSON body (null when it is not JSON).
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(u16, serde_json::Value), KubeClientError> {
        let response = request
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| KubeClientError::Transport(crate::webhook::error_chain(&e)))?;
        let code = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| KubeClientError::Transport(crate::webhook::error_chain(&e)))?;
        let value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            serde_json::Value::String(
                String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).into_owned(),
            )
        });
        Ok((code, value))
    }

    /// Watches the object `name` of the collection at `collection` (such as
    /// `/api/v1/namespaces/kube-system/configmaps`): `changed` gets the object (`None` while it
    /// does not exist) once read, then on every change. A failed read or an ended watch is
    /// retried after a second, reading the object again. Runs until dropped.
    pub async fn watch_object(
        &self,
        collection: &str,
        name: &str,
        mut changed: impl FnMut(Option<&serde_json::Value>) + Send,
    ) {
        loop {
            if let Err(e) = self.watch_once(collection, name, &mut changed).await {
                tracing::debug!(%collection, %name, error = %e, "watch ended");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// One read and watch of the object, until the watch ends.
    async fn watch_once(
        &self,
        collection: &str,
        name: &str,
        changed: &mut (impl FnMut(Option<&serde_json::Value>) + Send),
    ) -> Result<(), KubeClientError> {
        let selector = format!("fieldSelector=metadata.name%3D{name}");
        let list = self
            .get_json(&format!("{collection}?{selector}"))
            .await?
            .unwrap_or_default();
        let object = list["items"].as_array().and_then(|items| items.first());
        changed(object);
        let version = list["metadata"]["resourceVersion"].as_str().unwrap_or("");
        let request = self.request(
            reqwest::Method::GET,
            &format!(
                "{collection}?{selector}&watch=true&allowWatchBookmarks=false&resourceVersion={version}"
            ),
        );
        let mut response = request
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| KubeClientError::Transport(crate::webhook::error_chain(&e)))?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(KubeClientError::Status {
                code: response.status().as_u16(),
                message: "watch refused".into(),
            });
        }
        let mut buffer: Vec<u8> = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| KubeClientError::Transport(crate::webhook::error_chain(&e)))?
        {
            buffer.extend_from_slice(&chunk);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<serde_json::Value>(&line) else {
                    continue;
                };
                match event["type"].as_str() {
                    Some("ADDED" | "MODIFIED") => changed(Some(&event["object"])),
                    Some("DELETED") => changed(None),
                    Some("ERROR") => {
                        return Err(status_error(410, &event["object"]));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The error of an unexpected answer: its `Status` message, or the body.
fn status_error(code: u16, body: &serde_json::Value) -> KubeClientError {
    let message = match body {
        serde_json::Value::String(text) => text.clone(),
        other => other["message"].as_str().unwrap_or_default().to_string(),
    };
    KubeClientError::Status { code, message }
}

/// The PEM of a `file` (relative to `dir`) or of base64 `data` (which wins, as in client-go).
fn read_pem(
    dir: &Path,
    file: &Option<PathBuf>,
    data: &Option<String>,
) -> Result<Option<Vec<u8>>, String> {
    if let Some(data) = data.as_deref().filter(|d| !d.is_empty()) {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| format!("invalid base64: {e}"));
    }
    match file {
        Some(file) if !file.as_os_str().is_empty() => {
            let path = dir.join(file);
            std::fs::read(&path)
                .map(Some)
                .map_err(|e| format!("reading {}: {e}", path.display()))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_context_names_the_cluster_and_user() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("token"), "secret\n").unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: one\n  cluster:\n    server: https://127.0.0.1:1/base\n    insecure-skip-tls-verify: true\ncontexts:\n- name: a\n  context: {cluster: none, user: u}\n- name: b\n  context: {cluster: one, user: u}\nusers:\n- name: u\n  user:\n    tokenFile: token\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let client = KubeClient::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(client.base().as_str(), "https://127.0.0.1:1/base");
        assert_eq!(client.token_file, Some(dir.path().join("token")));
        let request = client
            .request(reqwest::Method::GET, "/api/v1/x?watch=true")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            request.url().as_str(),
            "https://127.0.0.1:1/base/api/v1/x?watch=true"
        );
        assert_eq!(
            request.headers().get("authorization").map(|v| v.as_bytes()),
            Some(&b"Bearer secret"[..])
        );
    }

    #[test]
    fn mistakes_are_named() {
        let config = |text: &str| -> Kubeconfig {
            serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("{e}"))
        };
        let err = KubeClient::from_config(&config("current-context: x\n"), Path::new("."))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("context \"x\" not found"), "{err}");
        let err = KubeClient::from_config(
            &config("current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: 'https://h', certificate-authority: /nonexistent}\n"),
            Path::new("."),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            err.contains("certificate-authority: reading /nonexistent"),
            "{err}"
        );
    }
}
