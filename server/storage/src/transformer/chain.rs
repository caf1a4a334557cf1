//! The prefix chain of one resource: the ordered providers and keys of its configuration.
//!
//! The first entry writes; every entry reads values carrying its prefix
//! (`k8s:enc:<provider>:v1:<key name>:`, or no prefix for `identity`). A value read by any
//! entry other than the first is reported stale, so rewriting it re-encrypts it with the
//! current key.

use super::providers::{Cipher, Kind};
use super::{Plain, Transformer};
use crate::errors::{Result, StorageError};

/// The prefix every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &str = "k8s:enc:";

/// One provider key, or identity.
pub(crate) enum Entry {
    Identity,
    Key {
        prefix: Vec<u8>,
        cipher: Box<Cipher>,
    },
}

impl Entry {
    /// A keyed entry for provider `kind` and key `name`.
    pub fn key(kind: Kind, name: &str, cipher: Cipher) -> Self {
        Self::Key {
            prefix: format!("{ENCRYPTED_PREFIX}{}:v1:{name}:", kind.name()).into_bytes(),
            cipher: Box::new(cipher),
        }
    }
}

/// The transformer of one resource.
pub struct PrefixChain {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for PrefixChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .entries
            .iter()
            .map(|e| match e {
                Entry::Identity => "identity".to_string(),
                Entry::Key { prefix, .. } => String::from_utf8_lossy(prefix).into_owned(),
            })
            .collect();
        f.debug_struct("PrefixChain")
            .field("entries", &names)
            .finish()
    }
}

impl PrefixChain {
    /// A chain of entries; the first one writes. An empty chain behaves as identity.
    pub(crate) fn new(entries: Vec<Entry>) -> Self {
        Self { entries }
    }
}

/// The `k8s:enc:<provider>:v1:<key>:` prefix found on a value, if it has one.
fn found_prefix(stored: &[u8]) -> Option<String> {
    if !stored.starts_with(ENCRYPTED_PREFIX.as_bytes()) {
        return None;
    }
    let mut colons = 0;
    for (i, b) in stored.iter().enumerate() {
        if *b == b':' {
            colons += 1;
            if colons == 5 {
                return Some(String::from_utf8_lossy(&stored[..=i]).into_owned());
            }
        }
        if i > 256 {
            break;
        }
    }
    None
}

impl Transformer for PrefixChain {
    fn transform_from_storage(&self, key: &str, stored: &[u8]) -> Result<Plain> {
        let encrypted = stored.starts_with(ENCRYPTED_PREFIX.as_bytes());
        if self.entries.is_empty() {
            if encrypted {
                return Err(StorageError::Decrypt {
                    key: key.to_string(),
                    prefix: found_prefix(stored),
                    message: "value is encrypted but no encryption provider is configured"
                        .to_string(),
                });
            }
            return Ok(Plain {
                data: stored.to_vec(),
                stale: false,
            });
        }
        for (index, entry) in self.entries.iter().enumerate() {
            match entry {
                Entry::Identity => {
                    if !encrypted {
                        return Ok(Plain {
                            data: stored.to_vec(),
                            stale: index != 0,
                        });
                    }
                }
                Entry::Key { prefix, cipher } => {
                    if let Some(body) = stored.strip_prefix(prefix.as_slice()) {
                        return cipher
                            .decrypt(key.as_bytes(), body)
                            .map(|data| Plain {
                                data,
                                stale: index != 0,
                            })
                            .map_err(|message| StorageError::Decrypt {
                                key: key.to_string(),
                                prefix: Some(String::from_utf8_lossy(prefix).into_owned()),
                                message,
                            });
                    }
                }
            }
        }
        Err(StorageError::Decrypt {
            key: key.to_string(),
            prefix: found_prefix(stored),
            message: if encrypted {
                "no configured provider key matches the value's prefix".to_string()
            } else {
                "value is not encrypted and identity is not a configured provider".to_string()
            },
        })
    }

    fn transform_to_storage(&self, key: &str, plain: &[u8]) -> Result<Vec<u8>> {
        match self.entries.first() {
            None | Some(Entry::Identity) => Ok(plain.to_vec()),
            Some(Entry::Key { prefix, cipher }) => {
                let body = cipher.encrypt(key.as_bytes(), plain).map_err(|message| {
                    StorageError::internal(format!("encrypting {key}: {message}"))
                })?;
                let mut out = Vec::with_capacity(prefix.len() + body.len());
                out.extend_from_slice(prefix);
                out.extend_from_slice(&body);
                Ok(out)
            }
        }
    }
}
