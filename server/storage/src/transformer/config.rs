//! Kubernetes' `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`), as given to
//! `--encryption-provider-config`.
//!
//! ```yaml
//! apiVersion: apiserver.config.k8s.io/v1
//! kind: EncryptionConfiguration
//! resources:
//!   - resources: [secrets, widgets.example.dev, "*.apps", "*.", "*.*"]
//!     providers:
//!       - aesgcm: {keys: [{name: key1, secret: <base64>}]}
//!       - identity: {}
//! ```
//!
//! For each resource the first matching `resources` entry applies; a resource no entry matches
//! is stored in plaintext.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::chain::{Entry, PrefixChain};
use super::providers::{Cipher, Kind};
use super::{IdentityTransformer, Transformer};

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EncryptionConfigError {
    /// The file could not be read.
    #[error("reading encryption configuration {path}: {source}")]
    Read {
        /// The path given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The document is not valid YAML/JSON of the expected shape.
    #[error("parsing encryption configuration: {0}")]
    Parse(String),
    /// The document is well-formed but invalid; the message names the field.
    #[error("invalid encryption configuration: {0}")]
    Invalid(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    api_version: String,
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    resources: Vec<String>,
    providers: Vec<ProviderConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    aesgcm: Option<KeysConfiguration>,
    aescbc: Option<KeysConfiguration>,
    secretbox: Option<KeysConfiguration>,
    identity: Option<serde_yaml_ng::Value>,
    kms: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysConfiguration {
    keys: Vec<KeyConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyConfiguration {
    name: String,
    secret: String,
}

/// A resource pattern: `resource.group`, `resource` (core), `*.group`, `*.` (all core) or
/// `*.*` (everything).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    resource: Option<String>,
    group: Option<String>,
}

impl Pattern {
    fn parse(text: &str) -> Result<Self, EncryptionConfigError> {
        let invalid = || {
            EncryptionConfigError::Invalid(format!(
                "resources: {text:?} must be a resource, resource.group, *.group, *. or *.*"
            ))
        };
        if text.is_empty() || text == "*" {
            return Err(invalid());
        }
        let (resource, group) = match text.split_once('.') {
            Some((r, g)) => (r, g),
            None => (text, ""),
        };
        if resource.is_empty()
            || (resource != "*" && resource.contains('*'))
            || group.contains('*') && group != "*"
        {
            return Err(invalid());
        }
        Ok(Self {
            resource: (resource != "*").then(|| resource.to_string()),
            group: (group != "*").then(|| group.to_string()),
        })
    }

    fn matches(&self, group: &str, resource: &str) -> bool {
        self.resource.as_deref().is_none_or(|r| r == resource)
            && self.group.as_deref().is_none_or(|g| g == group)
    }
}

/// A parsed encryption configuration: the transformer of every resource.
#[derive(Default)]
pub struct EncryptionConfig {
    rules: Vec<(Vec<Pattern>, Arc<PrefixChain>)>,
}

impl std::fmt::Debug for EncryptionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncryptionConfig")
            .field("rules", &self.rules.len())
            .finish()
    }
}

impl EncryptionConfig {
    /// Reads and parses the file given to `--encryption-provider-config`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, EncryptionConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| EncryptionConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml(&text)
    }

    /// Parses a configuration document (YAML or JSON).
    pub fn from_yaml(text: &str) -> Result<Self, EncryptionConfigError> {
        let doc: Document = serde_yaml_ng::from_str(text)
            .map_err(|e| EncryptionConfigError::Parse(e.to_string()))?;
        if doc.api_version != "apiserver.config.k8s.io/v1" {
            return Err(EncryptionConfigError::Invalid(format!(
                "apiVersion: unsupported {:?}, expected \"apiserver.config.k8s.io/v1\"",
                doc.api_version
            )));
        }
        if doc.kind != "EncryptionConfiguration" {
            return Err(EncryptionConfigError::Invalid(format!(
                "kind: unsupported {:?}, expected \"EncryptionConfiguration\"",
                doc.kind
            )));
        }
        let mut rules = Vec::new();
        for (i, rc) in doc.resources.iter().enumerate() {
            if rc.resources.is_empty() {
                return Err(EncryptionConfigError::Invalid(format!(
                    "resources[{i}].resources: must name at least one resource"
                )));
            }
            if rc.providers.is_empty() {
                return Err(EncryptionConfigError::Invalid(format!(
                    "resources[{i}].providers: must contain at least one provider"
                )));
            }
            let patterns = rc
                .resources
                .iter()
                .map(|r| Pattern::parse(r))
                .collect::<Result<Vec<_>, _>>()?;
            let mut entries = Vec::new();
            for (j, provider) in rc.providers.iter().enumerate() {
                entries.extend(provider_entries(
                    provider,
                    &format!("resources[{i}].providers[{j}]"),
                )?);
            }
            rules.push((patterns, Arc::new(PrefixChain::new(entries))));
        }
        Ok(Self { rules })
    }

    /// The transformer for `group`/`resource` (core group: `""`). Resources no rule matches
    /// are stored as plaintext.
    pub fn transformer_for(&self, group: &str, resource: &str) -> Arc<dyn Transformer> {
        for (patterns, chain) in &self.rules {
            if patterns.iter().any(|p| p.matches(group, resource)) {
                return chain.clone();
            }
        }
        Arc::new(IdentityTransformer)
    }
}

fn provider_entries(
    provider: &ProviderConfiguration,
    field: &str,
) -> Result<Vec<Entry>, EncryptionConfigError> {
    let mut set = Vec::new();
    if let Some(keys) = &provider.aesgcm {
        set.push((Kind::AesGcm, keys));
    }
    if let Some(keys) = &provider.aescbc {
        set.push((Kind::AesCbc, keys));
    }
    if let Some(keys) = &provider.secretbox {
        set.push((Kind::SecretBox, keys));
    }
    let count =
        set.len() + usize::from(provider.identity.is_some()) + usize::from(provider.kms.is_some());
    if count != 1 {
        return Err(EncryptionConfigError::Invalid(format!(
            "{field}: exactly one provider must be set, found {count}"
        )));
    }
    if provider.kms.is_some() {
        return Err(EncryptionConfigError::Invalid(format!(
            "{field}.kms: the KMS provider is not supported by apiary; use aesgcm, aescbc, secretbox or identity"
        )));
    }
    if provider.identity.is_some() {
        return Ok(vec![Entry::Identity]);
    }
    let (kind, keys) = set[0];
    if keys.keys.is_empty() {
        return Err(EncryptionConfigError::Invalid(format!(
            "{field}.{}.keys: must contain at least one key",
            kind.name()
        )));
    }
    let mut names = HashSet::new();
    let mut entries = Vec::new();
    for (k, key) in keys.keys.iter().enumerate() {
        let at = format!("{field}.{}.keys[{k}]", kind.name());
        if key.name.is_empty() || key.name.contains(':') {
            return Err(EncryptionConfigError::Invalid(format!(
                "{at}.name: must be non-empty and must not contain ':'"
            )));
        }
        if !names.insert(key.name.clone()) {
            return Err(EncryptionConfigError::Invalid(format!(
                "{at}.name: duplicate key name {:?}",
                key.name
            )));
        }
        let secret = STANDARD.decode(key.secret.trim()).map_err(|e| {
            EncryptionConfigError::Invalid(format!("{at}.secret: not valid base64: {e}"))
        })?;
        let cipher = Cipher::new(kind, &secret)
            .map_err(|e| EncryptionConfigError::Invalid(format!("{at}.secret: {e}")))?;
        entries.push(Entry::key(kind, &key.name, cipher));
    }
    Ok(entries)
}
