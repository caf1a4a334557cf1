//! The keys of service-account tokens: the signing key (`--service-account-signing-key-file`,
//! RSA or ECDSA, or an ECDSA P-256 key generated under `--data-dir` on first start and reused),
//! the verifying public keys (`--service-account-key-file`: PEM public keys, certificates or
//! private keys, as kube-apiserver accepts them), their key ids (Kubernetes'
//! `keyIDFromPublicKey`: base64url of the SHA-256 of the PKIX DER) and the JWKS document.
//!
//! RSA keys sign RS256; ECDSA keys on P-256 and P-384 sign ES256 and ES384 (the curves the
//! JWT library implements; kube-apiserver also takes P-521).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::der::asn1::{AnyRef, BitStringRef};
use rsa::pkcs8::der::{Decode as _, Encode as _};
use rsa::pkcs8::{
    AlgorithmIdentifierRef, DecodePrivateKey, DecodePublicKey, EncodePublicKey, ObjectIdentifier,
    PrivateKeyInfo, SubjectPublicKeyInfoRef,
};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The algorithm identifier of RSA keys (`rsaEncryption`).
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// The algorithm identifier of elliptic-curve keys (`id-ecPublicKey`).
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");

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

/// An elliptic curve of the ECDSA keys that sign and verify tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// NIST P-256 (`prime256v1`), signing ES256.
    P256,
    /// NIST P-384 (`secp384r1`), signing ES384.
    P384,
}

impl Curve {
    /// Every supported curve.
    const ALL: [Curve; 2] = [Curve::P256, Curve::P384];

    /// The curve's object identifier (the parameters of an EC key's algorithm identifier).
    fn oid(self) -> ObjectIdentifier {
        match self {
            Curve::P256 => ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7"),
            Curve::P384 => ObjectIdentifier::new_unwrap("1.3.132.0.34"),
        }
    }

    /// The curve of an object identifier, if supported.
    fn of_oid(oid: ObjectIdentifier) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.oid() == oid)
    }

    /// The JWS algorithm of the curve.
    pub fn algorithm(self) -> Algorithm {
        match self {
            Curve::P256 => Algorithm::ES256,
            Curve::P384 => Algorithm::ES384,
        }
    }

    /// The curve's name in a JSON Web Key (`crv`).
    fn jwk_name(self) -> &'static str {
        match self {
            Curve::P256 => "P-256",
            Curve::P384 => "P-384",
        }
    }

    /// The size of a coordinate, in bytes.
    fn coordinate_len(self) -> usize {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
        }
    }

    /// The key-pair algorithm with which rcgen parses and generates keys of the curve.
    fn key_pair_algorithm(self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            Curve::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            Curve::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
        }
    }
}

/// The name of a JWS algorithm, as a token's header and the discovery document write it.
pub fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        Algorithm::RS256 => "RS256",
        Algorithm::RS384 => "RS384",
        Algorithm::RS512 => "RS512",
        Algorithm::PS256 => "PS256",
        Algorithm::PS384 => "PS384",
        Algorithm::PS512 => "PS512",
        Algorithm::EdDSA => "EdDSA",
    }
}

/// A public key that verifies tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyingKey {
    /// An RSA key.
    Rsa(RsaPublicKey),
    /// An ECDSA key.
    Ec {
        /// Its curve.
        curve: Curve,
        /// The point, uncompressed (`04 || x || y`).
        point: Vec<u8>,
    },
}

impl VerifyingKey {
    /// An ECDSA key from its uncompressed point.
    fn ec(curve: Curve, point: &[u8]) -> Result<Self, String> {
        if point.first() != Some(&4) || point.len() != 1 + 2 * curve.coordinate_len() {
            return Err(format!(
                "the {} public key is not an uncompressed point",
                curve.jwk_name()
            ));
        }
        Ok(Self::Ec {
            curve,
            point: point.to_vec(),
        })
    }

    /// A key from its PKIX DER (`SubjectPublicKeyInfo`).
    pub fn from_pkix_der(der: &[u8]) -> Result<Self, String> {
        let info = SubjectPublicKeyInfoRef::from_der(der).map_err(|e| e.to_string())?;
        match info.algorithm.oid {
            RSA_ENCRYPTION => RsaPublicKey::from_public_key_der(der)
                .map(Self::Rsa)
                .map_err(|e| e.to_string()),
            EC_PUBLIC_KEY => {
                let curve = ec_curve(&info.algorithm)?;
                let point = info
                    .subject_public_key
                    .as_bytes()
                    .ok_or("the ECDSA public key is not a whole number of bytes")?;
                Self::ec(curve, point)
            }
            other => Err(format!("unsupported public key algorithm {other}")),
        }
    }

    /// The JWS algorithm tokens verified with the key are signed with.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Self::Rsa(_) => Algorithm::RS256,
            Self::Ec { curve, .. } => curve.algorithm(),
        }
    }

    /// The key's PKIX DER, as Go's `x509.MarshalPKIXPublicKey` writes it.
    pub fn to_pkix_der(&self) -> Result<Vec<u8>, String> {
        match self {
            Self::Rsa(key) => key
                .to_public_key_der()
                .map(|der| der.as_bytes().to_vec())
                .map_err(|e| e.to_string()),
            Self::Ec { curve, point } => {
                let oid = curve.oid();
                let info = SubjectPublicKeyInfoRef {
                    algorithm: AlgorithmIdentifierRef {
                        oid: EC_PUBLIC_KEY,
                        parameters: Some(AnyRef::from(&oid)),
                    },
                    subject_public_key: BitStringRef::from_bytes(point)
                        .map_err(|e| e.to_string())?,
                };
                info.to_der().map_err(|e| e.to_string())
            }
        }
    }

    /// The key's coordinates as a JSON Web Key writes them: (`n`, `e`) of an RSA key, (`x`,
    /// `y`) of an ECDSA key, base64url without padding.
    fn components(&self) -> (String, String) {
        match self {
            Self::Rsa(key) => (
                URL_SAFE_NO_PAD.encode(key.n().to_bytes_be()),
                URL_SAFE_NO_PAD.encode(key.e().to_bytes_be()),
            ),
            Self::Ec { curve, point } => {
                let (x, y) = point[1..].split_at(curve.coordinate_len());
                (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y))
            }
        }
    }
}

/// The curve an EC key's algorithm identifier names.
fn ec_curve(algorithm: &AlgorithmIdentifierRef<'_>) -> Result<Curve, String> {
    let oid = algorithm.parameters_oid().map_err(|e| e.to_string())?;
    Curve::of_oid(oid).ok_or_else(|| {
        format!("unsupported ECDSA curve {oid}: only P-256 and P-384 keys are supported")
    })
}

/// A verifying key and its id.
#[derive(Clone)]
pub struct PublicKey {
    /// The key id (`kid`).
    pub kid: String,
    /// The key.
    pub key: VerifyingKey,
    /// The key, as jsonwebtoken verifies with it.
    pub decoding: jsonwebtoken::DecodingKey,
}

impl PublicKey {
    /// Wraps a key, deriving its id.
    pub fn new(key: VerifyingKey) -> Result<Self, String> {
        let kid = key_id(&key)?;
        let (a, b) = key.components();
        let decoding = match &key {
            VerifyingKey::Rsa(_) => jsonwebtoken::DecodingKey::from_rsa_components(&a, &b),
            VerifyingKey::Ec { .. } => jsonwebtoken::DecodingKey::from_ec_components(&a, &b),
        }
        .map_err(|e| e.to_string())?;
        Ok(Self { kid, key, decoding })
    }

    /// The JWS algorithm of the tokens the key verifies.
    pub fn algorithm(&self) -> Algorithm {
        self.key.algorithm()
    }

    /// The key as a JSON Web Key (kube-apiserver's JWKS entry).
    pub fn jwk(&self) -> Value {
        let alg = algorithm_name(self.algorithm());
        let (a, b) = self.key.components();
        match &self.key {
            VerifyingKey::Rsa(_) => json!({
                "use": "sig",
                "kty": "RSA",
                "kid": self.kid,
                "alg": alg,
                "n": a,
                "e": b,
            }),
            VerifyingKey::Ec { curve, .. } => json!({
                "use": "sig",
                "kty": "EC",
                "kid": self.kid,
                "crv": curve.jwk_name(),
                "alg": alg,
                "x": a,
                "y": b,
            }),
        }
    }
}

/// A private key that signs tokens.
#[derive(Clone, PartialEq, Eq)]
pub enum PrivateKey {
    /// An RSA key (boxed: it is several times the size of the other variant).
    Rsa(Box<RsaPrivateKey>),
    /// An ECDSA key.
    Ec {
        /// Its PKCS#8 DER, as the signer reads it.
        pkcs8: Vec<u8>,
        /// Its public half.
        public: VerifyingKey,
    },
}

impl PrivateKey {
    /// An ECDSA key from its PKCS#8 DER, on a curve rcgen (that is, ring) accepts.
    fn ec_from_pkcs8(der: &[u8], curve: Curve) -> Result<Self, String> {
        let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
            &rustls_pki_types::PrivatePkcs8KeyDer::from(der),
            curve.key_pair_algorithm(),
        )
        .map_err(|e| e.to_string())?;
        Ok(Self::Ec {
            pkcs8: der.to_vec(),
            public: VerifyingKey::ec(curve, pair.public_key_raw())?,
        })
    }

    /// A key from its PKCS#8 DER (`PRIVATE KEY`), RSA or ECDSA.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, String> {
        let info = PrivateKeyInfo::from_der(der).map_err(|e| e.to_string())?;
        match info.algorithm.oid {
            RSA_ENCRYPTION => RsaPrivateKey::from_pkcs8_der(der)
                .map(|key| Self::Rsa(Box::new(key)))
                .map_err(|e| e.to_string()),
            EC_PUBLIC_KEY => Self::ec_from_pkcs8(der, ec_curve(&info.algorithm)?),
            other => Err(format!("unsupported private key algorithm {other}")),
        }
    }

    /// An ECDSA key from its SEC 1 DER (`EC PRIVATE KEY`). The structure names its curve only
    /// optionally, so it is wrapped as PKCS#8 for each supported curve in turn: ring takes it
    /// only for its own curve (it checks the curve named, the scalar's size and that the
    /// public key matches the private one).
    pub fn from_sec1_der(der: &[u8]) -> Result<Self, String> {
        for curve in Curve::ALL {
            let oid = curve.oid();
            let algorithm = AlgorithmIdentifierRef {
                oid: EC_PUBLIC_KEY,
                parameters: Some(AnyRef::from(&oid)),
            };
            let pkcs8 = PrivateKeyInfo::new(algorithm, der)
                .to_der()
                .map_err(|e| e.to_string())?;
            if let Ok(key) = Self::ec_from_pkcs8(&pkcs8, curve) {
                return Ok(key);
            }
        }
        Err("not a P-256 or P-384 ECDSA private key (with its public key)".to_string())
    }

    /// The public half.
    pub fn public_key(&self) -> VerifyingKey {
        match self {
            Self::Rsa(key) => VerifyingKey::Rsa(key.to_public_key()),
            Self::Ec { public, .. } => public.clone(),
        }
    }
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private half is a secret: only the public one is printed.
        f.debug_tuple("PrivateKey")
            .field(&self.public_key())
            .finish_non_exhaustive()
    }
}

/// The signing key and its id.
pub struct SigningKey {
    /// The key id put in every token's header.
    pub kid: String,
    /// The algorithm put in every token's header.
    pub algorithm: Algorithm,
    /// The key, as jsonwebtoken signs with it.
    pub encoding: jsonwebtoken::EncodingKey,
    /// The public half.
    pub public: VerifyingKey,
}

impl SigningKey {
    /// Wraps a private key.
    pub fn new(key: &PrivateKey) -> Result<Self, String> {
        let public = key.public_key();
        let encoding = match key {
            PrivateKey::Rsa(key) => {
                let der = rsa::pkcs1::EncodeRsaPrivateKey::to_pkcs1_der(key.as_ref())
                    .map_err(|e| e.to_string())?;
                jsonwebtoken::EncodingKey::from_rsa_der(der.as_bytes())
            }
            PrivateKey::Ec { pkcs8, .. } => jsonwebtoken::EncodingKey::from_ec_der(pkcs8),
        };
        Ok(Self {
            kid: key_id(&public)?,
            algorithm: public.algorithm(),
            encoding,
            public,
        })
    }
}

/// Kubernetes' key id: base64url (unpadded) of the SHA-256 of the key's PKIX DER.
pub fn key_id(key: &VerifyingKey) -> Result<String, String> {
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(key.to_pkix_der()?)))
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

/// The DER inside a PEM block.
fn pem_der(block: &str) -> Result<Vec<u8>, String> {
    rsa::pkcs8::der::pem::decode_vec(block.as_bytes())
        .map(|(_, der)| der)
        .map_err(|e| e.to_string())
}

/// The private key of a PEM block, if the block holds one: `RSA PRIVATE KEY` (PKCS#1),
/// `EC PRIVATE KEY` (SEC 1) or `PRIVATE KEY` (PKCS#8, RSA or ECDSA).
fn private_key_of(label: &str, block: &str) -> Option<Result<PrivateKey, String>> {
    let key = match label {
        "RSA PRIVATE KEY" => RsaPrivateKey::from_pkcs1_pem(block)
            .map(|key| PrivateKey::Rsa(Box::new(key)))
            .map_err(|e| e.to_string()),
        "EC PRIVATE KEY" => pem_der(block).and_then(|der| PrivateKey::from_sec1_der(&der)),
        "PRIVATE KEY" => pem_der(block).and_then(|der| PrivateKey::from_pkcs8_der(&der)),
        _ => return None,
    };
    Some(key)
}

/// Reads the private key of a PEM file, RSA or ECDSA (kube-apiserver's
/// `keyutil.PrivateKeyFromFile`: the first private key block).
pub fn load_private_key(path: &Path) -> Result<PrivateKey, KeyError> {
    let text = read(path)?;
    pem_blocks(&text)
        .iter()
        .find_map(|(label, block)| private_key_of(label, block))
        .unwrap_or_else(|| Err("data does not contain a valid RSA or ECDSA private key".into()))
        .map_err(|e| invalid(path, e))
}

/// Reads every public key of a PEM file, RSA or ECDSA: public keys (PKIX or PKCS#1),
/// certificates and private keys (their public halves), as kube-apiserver's
/// `--service-account-key-file`.
pub fn load_public_keys(path: &Path) -> Result<Vec<VerifyingKey>, KeyError> {
    let text = read(path)?;
    let mut keys = Vec::new();
    for (label, block) in pem_blocks(&text) {
        let key = match label.as_str() {
            "PUBLIC KEY" => pem_der(&block).and_then(|der| VerifyingKey::from_pkix_der(&der)),
            "RSA PUBLIC KEY" => RsaPublicKey::from_pkcs1_pem(&block)
                .map(VerifyingKey::Rsa)
                .map_err(|e| e.to_string()),
            "CERTIFICATE" => certificate_key(&block),
            label => match private_key_of(label, &block) {
                Some(key) => key.map(|k| k.public_key()),
                None => continue,
            },
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

/// The public key of a PEM certificate.
fn certificate_key(block: &str) -> Result<VerifyingKey, String> {
    let mut reader = block.as_bytes();
    let der = rustls_pemfile::certs(&mut reader)
        .next()
        .ok_or("no certificate")?
        .map_err(|e| e.to_string())?;
    let (_, cert) = X509Certificate::from_der(der.as_ref()).map_err(|e| e.to_string())?;
    VerifyingKey::from_pkix_der(cert.public_key().raw)
}

/// Where the generated key pair lives under `--data-dir`.
pub fn generated_key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("pki").join("sa.key")
}

/// A new ECDSA P-256 key pair: the key (ES256 signatures are 86 characters in a token where
/// RS256's are 342) and its PEM texts, the private key as PKCS#8, the public one as PKIX.
fn generate() -> Result<(PrivateKey, String, String), String> {
    let pair = rcgen::KeyPair::generate_for(Curve::P256.key_pair_algorithm())
        .map_err(|e| e.to_string())?;
    let key = PrivateKey::from_pkcs8_der(pair.serialized_der())?;
    Ok((key, pair.serialize_pem(), pair.public_key_pem()))
}

/// Loads the key pair generated under `data_dir`, generating it (ECDSA P-256, `sa.key` private
/// and `sa.pub` public, as kubeadm names them) on first start. A key found there is used
/// whatever its kind, so a data directory keeps the RSA key an earlier version generated.
/// Blocking: run it off the async workers.
pub fn ensure_generated(data_dir: &Path) -> Result<PrivateKey, KeyError> {
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
    let (key, private_pem, public_pem) = generate().map_err(KeyError::Generate)?;
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
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::pkcs8::{EncodePrivateKey, LineEnding};

    /// Test keys made with `openssl ecparam -genkey -noout -name <curve>`: SEC 1 private keys
    /// naming their curve, and the P-384 key's PKIX public half (`openssl ec -pubout`).
    const P384_SEC1: &str = "-----BEGIN EC PRIVATE KEY-----
MIGkAgEBBDAV+envZByhq4RpL2ddqsGdqvQpQs2CS9RidoTWGX4Pvi0HNF4EigVU
mrI7Oj7A69igBwYFK4EEACKhZANiAASQjuthT0HUXyhWG+ZOvnBWcDEgnhJIRdA0
ZRUjOUY9NArtoBOVrCuLdkm6oc3/9dhvxtQwOSR4/J1gnOfLVyfEpe+JHtIa27Qf
ruKistuwraBl1VRHyvx81Y3OPgUtn6A=
-----END EC PRIVATE KEY-----
";
    const P384_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEkI7rYU9B1F8oVhvmTr5wVnAxIJ4SSEXQ
NGUVIzlGPTQK7aATlawri3ZJuqHN//XYb8bUMDkkePydYJzny1cnxKXviR7SGtu0
H67iorLbsK2gZdVUR8r8fNWNzj4FLZ+g
-----END PUBLIC KEY-----
";
    const P256_SEC1: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEII8UythjYznHtEjwugzwt6isfr7/xeAUSl94GssAy2hnoAoGCCqGSM49
AwEHoUQDQgAE5Y2n4xjGPW4UaI+Hgp9lh8255KtS421zDHXkJY+xKWciSAWhrs0G
C0FJoUrZLBXX2hGZJvzj/DJ2fx8yDSo+VQ==
-----END EC PRIVATE KEY-----
";
    const P521_SEC1: &str = "-----BEGIN EC PRIVATE KEY-----
MIHcAgEBBEIACJHevlTsuqgf0wYauvIUbwmaFQwG8gyVtaXCiVgo/7KMmPaCY/jq
bT/oji2I5wtx3SNDpP0gngKrc25Xg5E3GLOgBwYFK4EEACOhgYkDgYYABADP3gmI
ybjuojjmWLgXXyy2qmVpxQ3vsM5FYFjPiq1r95//VxSB/2Q+iNCF5yrczORR8Qfv
rytQFQJ5NjNYgf4gJwC8SLl48BllBXE68bcb2K6vDN6wgO3m5cBqunYJkpW6+Rc+
JQ40TR9w7wNg7pEyca3Ue9ph54fNT9y5cTq0Z+8gvA==
-----END EC PRIVATE KEY-----
";

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        path
    }

    fn rsa_key() -> RsaPrivateKey {
        RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_generated_key_is_ecdsa_p256_and_reused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = ensure_generated(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let public = key.public_key();
        assert!(
            matches!(
                public,
                VerifyingKey::Ec {
                    curve: Curve::P256,
                    ..
                }
            ),
            "{public:?}"
        );
        assert_eq!(public.algorithm(), Algorithm::ES256);
        // Reused on the next start.
        let again = ensure_generated(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key, again);
        // sa.key (PKCS#8) and sa.pub (PKIX) both give the public key.
        for name in ["sa.key", "sa.pub"] {
            let path = dir.path().join("pki").join(name);
            let keys = load_public_keys(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(keys, vec![public.clone()], "{name}");
        }
        // The key id hashes the PKIX DER that sa.pub holds: 43 characters.
        let pem = std::fs::read_to_string(dir.path().join("pki").join("sa.pub"))
            .unwrap_or_else(|e| panic!("{e}"));
        let der = pem_der(&pem).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(public.to_pkix_der(), Ok(der.clone()));
        let kid = key_id(&public).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kid, URL_SAFE_NO_PAD.encode(Sha256::digest(&der)));
        assert_eq!(kid.len(), 43);
        // Its JWK names the curve and the algorithm.
        let jwk = PublicKey::new(public)
            .unwrap_or_else(|e| panic!("{e}"))
            .jwk();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["x"].as_str().map(str::len), Some(43));
        assert_eq!(jwk["y"].as_str().map(str::len), Some(43));
    }

    #[test]
    fn an_rsa_key_under_the_data_dir_is_kept() {
        // A data directory an earlier version generated an RSA key in.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let rsa = rsa_key();
        std::fs::create_dir_all(dir.path().join("pki")).unwrap_or_else(|e| panic!("{e}"));
        let pem = rsa
            .to_pkcs1_pem(LineEnding::LF)
            .unwrap_or_else(|e| panic!("{e}"));
        write(dir.path(), "pki/sa.key", &pem);
        let key = ensure_generated(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key, PrivateKey::Rsa(Box::new(rsa)));
        assert_eq!(key.public_key().algorithm(), Algorithm::RS256);
    }

    #[test]
    fn rsa_keys_load_in_every_accepted_form() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = rsa_key();
        let public = VerifyingKey::Rsa(key.to_public_key());
        let pkcs1 = write(
            dir.path(),
            "pkcs1.pem",
            &key.to_pkcs1_pem(LineEnding::LF)
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let pkcs8 = write(
            dir.path(),
            "pkcs8.pem",
            &key.to_pkcs8_pem(LineEnding::LF)
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let pkix = write(
            dir.path(),
            "pkix.pem",
            &key.to_public_key()
                .to_public_key_pem(LineEnding::LF)
                .unwrap_or_else(|e| panic!("{e}")),
        );
        for path in [&pkcs1, &pkcs8] {
            let loaded = load_private_key(path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                loaded,
                PrivateKey::Rsa(Box::new(key.clone())),
                "{}",
                path.display()
            );
        }
        for path in [&pkcs1, &pkcs8, &pkix] {
            let keys = load_public_keys(path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(keys, vec![public.clone()], "{}", path.display());
        }
        let empty = write(dir.path(), "empty.pem", "nothing");
        assert!(load_public_keys(&empty).is_err());
        assert!(load_private_key(&empty).is_err());
        let public_key = PublicKey::new(public).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(public_key.jwk()["kty"], "RSA");
        assert_eq!(public_key.jwk()["alg"], "RS256");
    }

    #[test]
    fn ecdsa_keys_load_in_every_accepted_form() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p384 = write(dir.path(), "p384.pem", P384_SEC1);
        let key = load_private_key(&p384).unwrap_or_else(|e| panic!("{e}"));
        let public = key.public_key();
        assert_eq!(public.algorithm(), Algorithm::ES384);
        let pkix = write(dir.path(), "p384.pub", P384_PUBLIC);
        for path in [&p384, &pkix] {
            let keys = load_public_keys(path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(keys, vec![public.clone()], "{}", path.display());
        }
        // The PKIX DER written for the key id is openssl's.
        assert_eq!(public.to_pkix_der(), pem_der(P384_PUBLIC));
        // The same key as PKCS#8.
        let PrivateKey::Ec { pkcs8, .. } = &key else {
            panic!("{key:?}");
        };
        let pem = rsa::pkcs8::der::pem::encode_string("PRIVATE KEY", LineEnding::LF, pkcs8)
            .unwrap_or_else(|e| panic!("{e}"));
        let as_pkcs8 = write(dir.path(), "p384-pkcs8.pem", &pem);
        assert_eq!(load_private_key(&as_pkcs8).ok(), Some(key.clone()));
        let p256 = write(dir.path(), "p256.pem", P256_SEC1);
        let p256 = load_private_key(&p256).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p256.public_key().algorithm(), Algorithm::ES256);
        // Several keys in one file, each read.
        let both = write(dir.path(), "both.pem", &format!("{P256_SEC1}{P384_PUBLIC}"));
        let keys = load_public_keys(&both).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(keys, vec![p256.public_key(), public]);
        // P-521 is not supported.
        let p521 = write(dir.path(), "p521.pem", P521_SEC1);
        assert!(load_private_key(&p521).is_err());
        assert!(load_public_keys(&p521).is_err());
    }
}
