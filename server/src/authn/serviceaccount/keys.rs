//! The keys of service-account tokens: the RSA signing key (`--service-account-signing-key-file`,
//! or generated under `--data-dir` on first start and reused), the verifying public keys
//! (`--service-account-key-file`: PEM public keys, certificates or private keys, as
//! kube-apiserver accepts them), their key ids (Kubernetes' `keyIDFromPublicKey`: base64url of
//! the SHA-256 of the PKIX DER) and the JWKS document.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The size of a generated signing key, in bits.
const GENERATED_KEY_BITS: usize = 2048;

/// Why the service-account keys could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file held no usable key.
    #[error("{path}: {what}")]
    Invalid {
        /// The file.
        path: String,
        /// What was wrong.
        what: String,
    },
    /// Key generation failed.
    #[error("generating the service-account signing key: {0}")]
    Generate(String),
}

/// A verifying key and its id.
#[derive(Clone)]
pub struct PublicKey {
    /// The key id (`kid`).
    pub kid: String,
    /// The key.
    pub key: RsaPublicKey,
    /// The key, as jsonwebtoken verifies with it.
    pub decoding: jsonwebtoken::DecodingKey,
}

impl PublicKey {
    /// Wraps a key, deriving its id.
    pub fn new(key: RsaPublicKey) -> Result<Self, String> {
        let kid = key_id(&key)?;
        let decoding = jsonwebtoken::DecodingKey::from_rsa_raw_components(
            &key.n().to_bytes_be(),
            &key.e().to_bytes_be(),
        );
        Ok(Self { kid, key, decoding })
    }

    /// The key as a JSON Web Key (kube-apiserver's JWKS entry).
    pub fn jwk(&self) -> Value {
        json!({
            "use": "sig",
            "kty": "RSA",
            "kid": self.kid,
            "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(self.key.n().to_bytes_be()),
            "e": URL_SAFE_NO_PAD.encode(self.key.e().to_bytes_be()),
        })
    }
}

/// The signing key and its id.
pub struct SigningKey {
    /// The key id put in every token's header.
    pub kid: String,
    /// The key, as jsonwebtoken signs with it.
    pub encoding: jsonwebtoken::EncodingKey,
    /// The public half.
    pub public: RsaPublicKey,
}

impl SigningKey {
    /// Wraps a private key.
    pub fn new(key: &RsaPrivateKey) -> Result<Self, String> {
        let public = key.to_public_key();
        let der = key.to_pkcs1_der().map_err(|e| e.to_string())?;
        Ok(Self {
            kid: key_id(&public)?,
            encoding: jsonwebtoken::EncodingKey::from_rsa_der(der.as_bytes()),
            public,
        })
    }
}

/// Kubernetes' key id: base64url (unpadded) of the SHA-256 of the key's PKIX DER.
pub fn key_id(key: &RsaPublicKey) -> Result<String, String> {
    let der = key.to_public_key_der().map_err(|e| e.to_string())?;
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(der.as_bytes())))
}

fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn invalid(path: &Path, what: impl Into<String>) -> KeyError {
    KeyError::Invalid {
        path: path.display().to_string(),
        what: what.into(),
    }
}

/// The PEM blocks of a file: (label, whole block text).
fn pem_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = after[..label_end].to_string();
        let end_marker = format!("-----END {label}-----");
        let Some(end) = rest[start..].find(&end_marker) else {
            break;
        };
        let stop = start + end + end_marker.len();
        blocks.push((label, rest[start..stop].to_string()));
        rest = &rest[stop..];
    }
    blocks
}

/// Reads the RSA private key of a PEM file (`RSA PRIVATE KEY` or `PRIVATE KEY`).
pub fn load_private_key(path: &Path) -> Result<RsaPrivateKey, KeyError> {
    let text = read(path)?;
    for (label, block) in pem_blocks(&text) {
        match label.as_str() {
            "RSA PRIVATE KEY" => {
                return RsaPrivateKey::from_pkcs1_pem(&block)
                    .map_err(|e| invalid(path, e.to_string()));
            }
            "PRIVATE KEY" => {
                return RsaPrivateKey::from_pkcs8_pem(&block)
                    .map_err(|e| invalid(path, e.to_string()));
            }
            "EC PRIVATE KEY" => {
                return Err(invalid(path, "ECDSA keys are not supported, only RSA keys"));
            }
            _ => {}
        }
    }
    Err(invalid(
        path,
        "data does not contain a valid RSA private key",
    ))
}

/// Reads every RSA public key of a PEM file: public keys (PKIX or PKCS#1), certificates and
/// private keys (their public halves), as kube-apiserver's `--service-account-key-file`.
pub fn load_public_keys(path: &Path) -> Result<Vec<RsaPublicKey>, KeyError> {
    let text = read(path)?;
    let mut keys = Vec::new();
    for (label, block) in pem_blocks(&text) {
        let key = match label.as_str() {
            "PUBLIC KEY" => RsaPublicKey::from_public_key_pem(&block).map_err(|e| e.to_string()),
            "RSA PUBLIC KEY" => RsaPublicKey::from_pkcs1_pem(&block).map_err(|e| e.to_string()),
            "RSA PRIVATE KEY" => RsaPrivateKey::from_pkcs1_pem(&block)
                .map(|k| k.to_public_key())
                .map_err(|e| e.to_string()),
            "PRIVATE KEY" => RsaPrivateKey::from_pkcs8_pem(&block)
                .map(|k| k.to_public_key())
                .map_err(|e| e.to_string()),
            "CERTIFICATE" => certificate_key(&block),
            _ => continue,
        };
        keys.push(key.map_err(|e| invalid(path, e))?);
    }
    if keys.is_empty() {
        return Err(invalid(
            path,
            "data does not contain any valid RSA or ECDSA public keys",
        ));
    }
    Ok(keys)
}

/// The RSA public key of a PEM certificate.
fn certificate_key(block: &str) -> Result<RsaPublicKey, String> {
    let mut reader = block.as_bytes();
    let der = rustls_pemfile::certs(&mut reader)
        .next()
        .ok_or("no certificate")?
        .map_err(|e| e.to_string())?;
    let (_, cert) = X509Certificate::from_der(der.as_ref()).map_err(|e| e.to_string())?;
    RsaPublicKey::from_public_key_der(cert.public_key().raw).map_err(|e| e.to_string())
}

/// Where the generated key pair lives under `--data-dir`.
pub fn generated_key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("pki").join("sa.key")
}

/// Loads the key pair generated under `data_dir`, generating it (RSA 2048, `sa.key` private
/// and `sa.pub` public, as kubeadm names them) on first start. Blocking: run it off the
/// async workers.
pub fn ensure_generated(data_dir: &Path) -> Result<RsaPrivateKey, KeyError> {
    let key_path = generated_key_path(data_dir);
    if key_path.exists() {
        return load_private_key(&key_path);
    }
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| KeyError::Io { path, source }
    };
    let dir = key_path.parent().unwrap_or(data_dir);
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let key = RsaPrivateKey::new(&mut rsa::rand_core::OsRng, GENERATED_KEY_BITS)
        .map_err(|e| KeyError::Generate(e.to_string()))?;
    let private_pem = key
        .to_pkcs1_pem(LineEnding::LF)
        .map_err(|e| KeyError::Generate(e.to_string()))?;
    let public_pem = key
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| KeyError::Generate(e.to_string()))?;
    let pub_path = dir.join("sa.pub");
    std::fs::write(&pub_path, public_pem).map_err(io(&pub_path))?;
    // The private key is written under a temporary name, readable by the owner only, then
    // renamed, so a crash never leaves half a key behind.
    let tmp = dir.join("sa.key.tmp");
    write_private(&tmp, private_pem.as_bytes()).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &key_path).map_err(io(&key_path))?;
    tracing::info!(path = %key_path.display(), "generated the service-account signing key");
    Ok(key)
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(data)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_load_in_every_accepted_form() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = ensure_generated(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        // Reused on the next start.
        let again = ensure_generated(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key, again);
        let public = key.to_public_key();
        let pkcs8 = dir.path().join("pkcs8.pem");
        std::fs::write(
            &pkcs8,
            rsa::pkcs8::EncodePrivateKey::to_pkcs8_pem(&key, LineEnding::LF)
                .unwrap_or_else(|e| panic!("{e}"))
                .as_bytes(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for path in [
            generated_key_path(dir.path()),
            dir.path().join("pki").join("sa.pub"),
            pkcs8.clone(),
        ] {
            let keys = load_public_keys(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(keys, vec![public.clone()], "{}", path.display());
        }
        assert_eq!(
            load_private_key(&pkcs8).unwrap_or_else(|e| panic!("{e}")),
            key
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing").unwrap_or_else(|e| panic!("{e}"));
        assert!(load_public_keys(&empty).is_err());
        // The key id is the base64url SHA-256 of the PKIX DER: 43 characters.
        let kid = key_id(&public).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kid.len(), 43);
        assert!(!kid.contains('='));
    }
}
