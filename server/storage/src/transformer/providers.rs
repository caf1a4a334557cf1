//! The ciphers of the encryption providers, in Kubernetes' stored formats.
//!
//! - `aesgcm`: 12-byte random nonce, then AES-GCM ciphertext and tag; the storage key is the
//!   additional authenticated data. Keys of 16, 24 or 32 bytes.
//! - `aescbc`: 16-byte random IV, then AES-256-CBC ciphertext with PKCS#7 padding. 32-byte keys.
//! - `secretbox`: 24-byte random nonce, then the XSalsa20-Poly1305 box (tag first). 32-byte keys.

use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use crypto_secretbox::XSalsa20Poly1305;
use rand::RngCore;

type Aes192Gcm = AesGcm<aes::Aes192, U12>;

const GCM_NONCE: usize = 12;
const CBC_IV: usize = 16;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;

/// A configured cipher with one key.
pub(crate) enum Cipher {
    Gcm128(Box<Aes128Gcm>),
    Gcm192(Box<Aes192Gcm>),
    Gcm256(Box<Aes256Gcm>),
    Cbc([u8; 32]),
    SecretBox(Box<XSalsa20Poly1305>),
}

/// The kind of provider, as named in the configuration and in stored prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    AesGcm,
    AesCbc,
    SecretBox,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::AesGcm => "aesgcm",
            Kind::AesCbc => "aescbc",
            Kind::SecretBox => "secretbox",
        }
    }
}

fn random<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    rand::rng().fill_bytes(&mut out);
    out
}

impl Cipher {
    /// Builds a cipher from raw key bytes, validating the key length.
    pub fn new(kind: Kind, key: &[u8]) -> Result<Self, String> {
        let bad = || {
            format!(
                "invalid key length {} for {} (expected {})",
                key.len(),
                kind.name(),
                match kind {
                    Kind::AesGcm => "16, 24 or 32 bytes",
                    Kind::AesCbc | Kind::SecretBox => "32 bytes",
                }
            )
        };
        match kind {
            Kind::AesGcm => match key.len() {
                16 => Aes128Gcm::new_from_slice(key).map(|c| Self::Gcm128(Box::new(c))),
                24 => Aes192Gcm::new_from_slice(key).map(|c| Self::Gcm192(Box::new(c))),
                32 => Aes256Gcm::new_from_slice(key).map(|c| Self::Gcm256(Box::new(c))),
                _ => return Err(bad()),
            }
            .map_err(|_| bad()),
            Kind::AesCbc => <[u8; 32]>::try_from(key).map(Self::Cbc).map_err(|_| bad()),
            Kind::SecretBox => XSalsa20Poly1305::new_from_slice(key)
                .map(|c| Self::SecretBox(Box::new(c)))
                .map_err(|_| bad()),
        }
    }

    /// Encrypts `plain`; `context` (the storage key) is authenticated by AES-GCM.
    pub fn encrypt(&self, context: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Self::Gcm128(c) => gcm_seal(c.as_ref(), context, plain),
            Self::Gcm192(c) => gcm_seal(c.as_ref(), context, plain),
            Self::Gcm256(c) => gcm_seal(c.as_ref(), context, plain),
            Self::Cbc(key) => {
                let iv = random::<CBC_IV>();
                let encryptor = cbc::Encryptor::<aes::Aes256>::new(key.into(), &iv.into());
                let mut out = iv.to_vec();
                out.extend_from_slice(&encryptor.encrypt_padded_vec_mut::<Pkcs7>(plain));
                Ok(out)
            }
            Self::SecretBox(c) => {
                let nonce = random::<SECRETBOX_NONCE>();
                let sealed = c
                    .encrypt(&nonce.into(), plain)
                    .map_err(|_| "secretbox encryption failed".to_string())?;
                let mut out = nonce.to_vec();
                out.extend_from_slice(&sealed);
                Ok(out)
            }
        }
    }

    /// Decrypts `data` (the bytes after the provider and key prefix).
    pub fn decrypt(&self, context: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Self::Gcm128(c) => gcm_open(c.as_ref(), context, data),
            Self::Gcm192(c) => gcm_open(c.as_ref(), context, data),
            Self::Gcm256(c) => gcm_open(c.as_ref(), context, data),
            Self::Cbc(key) => {
                if data.len() <= CBC_IV || !(data.len() - CBC_IV).is_multiple_of(16) {
                    return Err("the stored data is not a multiple of the block size".to_string());
                }
                let (iv, body) = data.split_at(CBC_IV);
                let mut iv_arr = [0u8; CBC_IV];
                iv_arr.copy_from_slice(iv);
                cbc::Decryptor::<aes::Aes256>::new(key.into(), &iv_arr.into())
                    .decrypt_padded_vec_mut::<Pkcs7>(body)
                    .map_err(|_| "invalid PKCS#7 padding".to_string())
            }
            Self::SecretBox(c) => {
                if data.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
                    return Err("the stored data was shorter than the required size".to_string());
                }
                let (nonce, body) = data.split_at(SECRETBOX_NONCE);
                let mut nonce_arr = [0u8; SECRETBOX_NONCE];
                nonce_arr.copy_from_slice(nonce);
                c.decrypt(&nonce_arr.into(), body)
                    .map_err(|_| "output array was not large enough for encryption".to_string())
            }
        }
    }
}

fn gcm_seal<C: Aead>(cipher: &C, context: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
    let nonce = random::<GCM_NONCE>();
    let sealed = cipher
        .encrypt(
            aes_gcm::Nonce::from_slice(&nonce),
            Payload {
                msg: plain,
                aad: context,
            },
        )
        .map_err(|_| "AES-GCM encryption failed".to_string())?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    Ok(out)
}

fn gcm_open<C: Aead>(cipher: &C, context: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    if data.len() < GCM_NONCE {
        return Err("the stored data was shorter than the required size".to_string());
    }
    let (nonce, body) = data.split_at(GCM_NONCE);
    cipher
        .decrypt(
            aes_gcm::Nonce::from_slice(nonce),
            Payload {
                msg: body,
                aad: context,
            },
        )
        .map_err(|_| "cipher: message authentication failed".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_formats() {
        let plain = b"hello world, this is a secret";
        for (kind, len) in [
            (Kind::AesGcm, 16),
            (Kind::AesGcm, 24),
            (Kind::AesGcm, 32),
            (Kind::AesCbc, 32),
            (Kind::SecretBox, 32),
        ] {
            let c = Cipher::new(kind, &vec![7u8; len]).expect("cipher");
            let sealed = c
                .encrypt(b"/registry/secrets/ns/a", plain)
                .expect("encrypt");
            let expected_len = match kind {
                Kind::AesGcm => 12 + plain.len() + 16,
                Kind::AesCbc => 16 + (plain.len() / 16 + 1) * 16,
                Kind::SecretBox => 24 + 16 + plain.len(),
            };
            assert_eq!(sealed.len(), expected_len, "{kind:?}");
            assert_eq!(
                c.decrypt(b"/registry/secrets/ns/a", &sealed)
                    .expect("decrypt"),
                plain
            );
            if kind == Kind::AesGcm {
                assert!(
                    c.decrypt(b"/registry/secrets/ns/b", &sealed).is_err(),
                    "key is AAD"
                );
            }
            assert!(c.decrypt(b"/registry/secrets/ns/a", &sealed[..10]).is_err());
        }
        assert!(Cipher::new(Kind::AesCbc, &[0u8; 16]).is_err());
        assert!(Cipher::new(Kind::AesGcm, &[0u8; 20]).is_err());
    }
}
