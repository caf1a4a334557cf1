//! A certificate as Go's crypto/x509 verification looks at it: the raw names and keys chains
//! are built from, the validity period, basic constraints, key usages, SANs and name
//! constraints, read once with x509-parser into owned values.

use std::net::IpAddr;

use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The extensions Go's parser handles when they are marked critical (any other critical
/// extension makes a certificate unusable: `x509: unhandled critical extension`).
const HANDLED_CRITICAL: &[&str] = &[
    "2.5.29.14", // subjectKeyIdentifier
    "2.5.29.15", // keyUsage
    "2.5.29.17", // subjectAltName
    "2.5.29.19", // basicConstraints
    "2.5.29.30", // nameConstraints
    "2.5.29.32", // certificatePolicies
    "2.5.29.33", // policyMappings
    "2.5.29.35", // authorityKeyIdentifier
    "2.5.29.36", // policyConstraints
    "2.5.29.37", // extKeyUsage
    "2.5.29.54", // inhibitAnyPolicy
];

/// The extended key usages that also allow serving TLS (Go accepts the old server-gated
/// crypto usages of Netscape and Microsoft as `serverAuth`).
const SERVER_GATED_CRYPTO: &[&str] = &["2.16.840.1.113730.4.1", "1.3.6.1.4.1.311.10.3.3"];

/// A certificate, or a trust anchor that only names a subject and a key (the system roots).
#[derive(Debug, Clone)]
pub(crate) struct Cert {
    /// The whole certificate (empty for a bare trust anchor).
    pub der: Vec<u8>,
    /// The DER of the subject name.
    pub subject: Vec<u8>,
    /// The DER of the issuer name.
    pub issuer: Vec<u8>,
    /// The DER of the SubjectPublicKeyInfo.
    pub spki: Vec<u8>,
    /// The signed part, the signature's AlgorithmIdentifier (its contents) and the signature.
    pub tbs: Vec<u8>,
    pub signature_algorithm: Vec<u8>,
    pub signature: Vec<u8>,
    /// The validity period in seconds since the epoch (none for a bare trust anchor).
    pub validity: Option<(i64, i64)>,
    /// Version 3 (extensions possible).
    pub v3: bool,
    /// `cA` and `pathLenConstraint` when the basic constraints extension is present.
    pub basic_constraints: Option<(bool, Option<u32>)>,
    /// The key usage bits, when the extension is present.
    pub key_usage: Option<u16>,
    /// The extended key usages, when the extension is present.
    pub eku: Option<Eku>,
    /// Whether a subjectAltName extension is present.
    pub has_san: bool,
    /// The DER of the subjectAltName extension's value (for loops in chains).
    pub san_raw: Option<Vec<u8>>,
    /// DNS SANs, IP SANs.
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    /// The subject's first common name and organization, and the serial number (decimal).
    pub common_name: String,
    pub organization: Option<String>,
    pub serial: String,
    /// The subject and authority key identifiers.
    pub subject_key_id: Option<Vec<u8>>,
    pub authority_key_id: Option<Vec<u8>>,
    /// A critical extension Go does not handle.
    pub unhandled_critical: bool,
    /// The DNS and IP name constraints: permitted and excluded.
    pub permitted: Constraints,
    pub excluded: Constraints,
    /// Constraints of other name types (e-mail, URI, directory names), which are not checked:
    /// a CA with them cannot be used.
    pub other_constraints: bool,
}

/// The extended key usages of a certificate.
#[derive(Debug, Clone, Default)]
pub(crate) struct Eku {
    /// `anyExtendedKeyUsage`.
    pub any: bool,
    /// `serverAuth`, or one of the server-gated crypto usages.
    pub server_auth: bool,
}

/// Name constraints of one kind (permitted or excluded).
#[derive(Debug, Clone, Default)]
pub(crate) struct Constraints {
    /// DNS name constraints (`example.com`, `.example.com`).
    pub dns: Vec<String>,
    /// IP ranges: address and mask.
    pub ip: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Constraints {
    fn is_empty(&self) -> bool {
        self.dns.is_empty() && self.ip.is_empty()
    }
}

impl Cert {
    /// Whether the certificate constrains names.
    pub fn has_name_constraints(&self) -> bool {
        !self.permitted.is_empty() || !self.excluded.is_empty() || self.other_constraints
    }

    /// Whether `cA` is asserted in valid basic constraints.
    pub fn is_ca(&self) -> bool {
        matches!(self.basic_constraints, Some((true, _)))
    }

    /// Parses a DER certificate; the error is Go's wording of a malformed certificate.
    pub fn parse(der: &[u8]) -> Result<Cert, String> {
        let (rest, x) = X509Certificate::from_der(der)
            .map_err(|e| format!("x509: malformed certificate: {e}"))?;
        if !rest.is_empty() {
            return Err("x509: trailing data".into());
        }
        let (tbs, signature_algorithm) = signed_parts(der)?;
        let mut cert = Cert {
            der: der.to_vec(),
            subject: x.subject().as_raw().to_vec(),
            issuer: x.issuer().as_raw().to_vec(),
            spki: x.public_key().raw.to_vec(),
            tbs: tbs.to_vec(),
            signature_algorithm: signature_algorithm.to_vec(),
            signature: x.signature_value.data.to_vec(),
            validity: Some((
                x.validity().not_before.timestamp(),
                x.validity().not_after.timestamp(),
            )),
            v3: x.version().0 >= 2,
            basic_constraints: None,
            key_usage: None,
            eku: None,
            has_san: false,
            san_raw: None,
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            common_name: x
                .subject()
                .iter_common_name()
                .next()
                .and_then(|a| a.as_str().ok())
                .unwrap_or_default()
                .to_string(),
            organization: x
                .subject()
                .iter_organization()
                .next()
                .and_then(|a| a.as_str().ok())
                .map(str::to_string),
            serial: x.serial.to_string(),
            subject_key_id: None,
            authority_key_id: None,
            unhandled_critical: false,
            permitted: Constraints::default(),
            excluded: Constraints::default(),
            other_constraints: false,
        };
        for ext in x.extensions() {
            let oid = ext.oid.to_id_string();
            if ext.critical && !HANDLED_CRITICAL.contains(&oid.as_str()) {
                cert.unhandled_critical = true;
            }
            match ext.parsed_extension() {
                ParsedExtension::BasicConstraints(b) => {
                    cert.basic_constraints = Some((b.ca, b.path_len_constraint));
                }
                ParsedExtension::KeyUsage(k) => cert.key_usage = Some(k.flags),
                ParsedExtension::ExtendedKeyUsage(e) => {
                    cert.eku = Some(Eku {
                        any: e.any,
                        server_auth: e.server_auth
                            || e.other
                                .iter()
                                .any(|o| SERVER_GATED_CRYPTO.contains(&o.to_id_string().as_str())),
                    });
                }
                ParsedExtension::SubjectAlternativeName(san) => {
                    cert.has_san = true;
                    cert.san_raw = Some(ext.value.to_vec());
                    for name in &san.general_names {
                        match name {
                            GeneralName::DNSName(d) => cert.dns_names.push(d.to_string()),
                            GeneralName::IPAddress(ip) => {
                                if let Some(ip) = ip_of(ip) {
                                    cert.ip_addresses.push(ip);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                ParsedExtension::SubjectKeyIdentifier(k) => {
                    cert.subject_key_id = Some(k.0.to_vec());
                }
                ParsedExtension::AuthorityKeyIdentifier(a) => {
                    cert.authority_key_id = a.key_identifier.as_ref().map(|k| k.0.to_vec());
                }
                ParsedExtension::NameConstraints(nc) => {
                    let mut other = false;
                    if let Some(p) = &nc.permitted_subtrees {
                        cert.permitted = constraints(p.iter().map(|s| &s.base), &mut other);
                    }
                    if let Some(e) = &nc.excluded_subtrees {
                        cert.excluded = constraints(e.iter().map(|s| &s.base), &mut other);
                    }
                    cert.other_constraints = other;
                }
                ParsedExtension::ParseError { error } => {
                    return Err(format!("x509: malformed extension {oid}: {error}"));
                }
                _ => {}
            }
        }
        Ok(cert)
    }

    /// A trust anchor of the system roots: a subject, a key and maybe name constraints.
    pub fn anchor(anchor: &rustls_pki_types::TrustAnchor<'_>) -> Cert {
        let subject = sequence(anchor.subject.as_ref());
        let mut other = false;
        let (permitted, excluded) = anchor
            .name_constraints
            .as_ref()
            .and_then(|nc| {
                let der = sequence(nc.as_ref());
                x509_parser::extensions::NameConstraints::from_der(&der)
                    .ok()
                    .map(|(_, nc)| {
                        let p = nc
                            .permitted_subtrees
                            .as_ref()
                            .map(|p| constraints(p.iter().map(|s| &s.base), &mut other));
                        let e = nc
                            .excluded_subtrees
                            .as_ref()
                            .map(|e| constraints(e.iter().map(|s| &s.base), &mut other));
                        (p.unwrap_or_default(), e.unwrap_or_default())
                    })
            })
            .unwrap_or_default();
        Cert {
            der: Vec::new(),
            issuer: subject.clone(),
            subject,
            spki: sequence(anchor.subject_public_key_info.as_ref()),
            tbs: Vec::new(),
            signature_algorithm: Vec::new(),
            signature: Vec::new(),
            validity: None,
            v3: true,
            basic_constraints: Some((true, None)),
            key_usage: None,
            eku: None,
            has_san: false,
            san_raw: None,
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            common_name: String::new(),
            organization: None,
            serial: String::new(),
            subject_key_id: None,
            authority_key_id: None,
            unhandled_critical: false,
            permitted,
            excluded,
            other_constraints: other,
        }
    }

    /// The name Go gives a candidate authority in its hint: the common name, else the first
    /// organization, else `serial:<n>`.
    pub fn hint_name(&self) -> String {
        if !self.common_name.is_empty() {
            return self.common_name.clone();
        }
        match &self.organization {
            Some(o) => o.clone(),
            None => format!("serial:{}", self.serial),
        }
    }

    /// The public key's AlgorithmIdentifier (contents) and the key's bits.
    pub fn public_key(&self) -> Option<(&[u8], &[u8])> {
        let (tag, contents, _) = tlv(&self.spki)?;
        if tag != 0x30 {
            return None;
        }
        let (0x30, algorithm, rest) = tlv(contents)? else {
            return None;
        };
        let (0x03, bits, _) = tlv(rest)? else {
            return None;
        };
        let (0, key) = bits.split_first()? else {
            return None;
        };
        Some((algorithm, key))
    }
}

fn constraints<'a>(
    names: impl Iterator<Item = &'a GeneralName<'a>>,
    other: &mut bool,
) -> Constraints {
    let mut out = Constraints::default();
    for name in names {
        match name {
            GeneralName::DNSName(d) => out.dns.push(d.to_string()),
            GeneralName::IPAddress(b) if b.len() == 8 || b.len() == 32 => {
                let (ip, mask) = b.split_at(b.len() / 2);
                out.ip.push((ip.to_vec(), mask.to_vec()));
            }
            _ => *other = true,
        }
    }
    out
}

fn ip_of(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

/// The signed TBSCertificate (whole TLV) and the signature's AlgorithmIdentifier (contents)
/// of a certificate's DER.
fn signed_parts(der: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let malformed = || "x509: malformed certificate".to_string();
    let (0x30, body, _) = tlv(der).ok_or_else(malformed)? else {
        return Err(malformed());
    };
    let tbs_len = body.len() - tlv(body).ok_or_else(malformed)?.2.len();
    let (tbs, rest) = body.split_at(tbs_len);
    let (0x30, algorithm, _) = tlv(rest).ok_or_else(malformed)? else {
        return Err(malformed());
    };
    Ok((tbs, algorithm))
}

/// One DER tag-length-value: the tag, the contents and what follows.
pub(crate) fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, b| (l << 8) | *b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// `contents` wrapped in a DER SEQUENCE.
fn sequence(contents: &[u8]) -> Vec<u8> {
    let mut out = vec![0x30];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}
