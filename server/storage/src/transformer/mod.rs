//! Value transformers: encryption at rest.
//!
//! A [`Transformer`] turns plaintext encoded objects into stored bytes and back. The key of the
//! object is passed as context and authenticated by the AEAD providers, so a value copied to
//! another key does not decrypt.

mod chain;
mod config;
mod providers;

pub use chain::{ENCRYPTED_PREFIX, PrefixChain};
pub use config::{EncryptionConfig, EncryptionConfigError};

use crate::errors::Result;

/// The result of reading a stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    /// The plaintext encoded object.
    pub data: Vec<u8>,
    /// True when the value was not written by the current write provider/key, so rewriting the
    /// object would re-encrypt it.
    pub stale: bool,
}

/// Transforms values on their way to and from storage.
pub trait Transformer: Send + Sync {
    /// Decodes a stored value of `key`. A value no configured provider can read is an error
    /// (`StorageError::Decrypt`), never "missing".
    fn transform_from_storage(&self, key: &str, stored: &[u8]) -> Result<Plain>;

    /// Encodes a plaintext value of `key` for storage.
    fn transform_to_storage(&self, key: &str, plain: &[u8]) -> Result<Vec<u8>>;
}

/// The transformer that stores plaintext unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdentityTransformer;

impl Transformer for IdentityTransformer {
    fn transform_from_storage(&self, _key: &str, stored: &[u8]) -> Result<Plain> {
        Ok(Plain {
            data: stored.to_vec(),
            stale: false,
        })
    }

    fn transform_to_storage(&self, _key: &str, plain: &[u8]) -> Result<Vec<u8>> {
        Ok(plain.to_vec())
    }
}
