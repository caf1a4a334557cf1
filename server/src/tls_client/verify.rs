//! Go's `(*x509.Certificate).Verify` with `KeyUsages: [ServerAuth]`, as crypto/tls calls it
//! for a client: the leaf's validity and name first, then a chain of one when the leaf itself
//! is a root, else chains built to the roots through the intermediates the server sent, then
//! the extended key usages of each chain.

use std::net::IpAddr;

use rustls::crypto::WebPkiSupportedAlgorithms;

use super::VerifyError;
use super::cert::Cert;

/// Go's bound on the signatures checked while building chains.
const MAX_SIGNATURE_CHECKS: usize = 100;

/// What a leaf is verified against.
pub(crate) struct Verification<'a> {
    /// The roots.
    pub roots: &'a [Cert],
    /// The certificates the server sent after its leaf.
    pub intermediates: &'a [Cert],
    /// The name the leaf must be valid for.
    pub name: &'a str,
    /// The time, in seconds since the epoch.
    pub now: i64,
    /// The signature algorithms.
    pub algorithms: &'a WebPkiSupportedAlgorithms,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CertType {
    Leaf,
    Intermediate,
    Root,
}

impl Verification<'_> {
    /// Verifies `leaf` as Go does (see the module documentation).
    pub fn verify(&self, leaf: &Cert) -> Result<(), VerifyError> {
        self.is_valid(leaf, CertType::Leaf, &[])?;
        verify_hostname(leaf, self.name)?;
        let chains: Vec<Vec<&Cert>> = if self.roots.iter().any(|r| r.der == leaf.der) {
            vec![vec![leaf]]
        } else {
            let mut checks = 0;
            self.build_chains(vec![leaf], &mut checks)?
        };
        if chains.iter().any(|chain| allows_server_auth(chain)) {
            Ok(())
        } else {
            Err(VerifyError::IncompatibleUsage)
        }
    }

    /// Go's `isValid`: the validity period, unhandled critical extensions, name constraints,
    /// basic constraints of intermediates and path lengths.
    fn is_valid(&self, c: &Cert, kind: CertType, chain: &[&Cert]) -> Result<(), VerifyError> {
        if c.unhandled_critical {
            return Err(VerifyError::UnhandledCriticalExtension);
        }
        if let Some((not_before, not_after)) = c.validity {
            if self.now < not_before {
                return Err(VerifyError::Expired(format!(
                    "current time {} is before {}",
                    rfc3339(self.now),
                    rfc3339(not_before)
                )));
            }
            if self.now > not_after {
                return Err(VerifyError::Expired(format!(
                    "current time {} is after {}",
                    rfc3339(self.now),
                    rfc3339(not_after)
                )));
            }
        }
        if kind != CertType::Leaf && c.has_name_constraints() {
            if c.other_constraints {
                return Err(VerifyError::UnconstrainedName(
                    "apiary checks DNS and IP name constraints only".into(),
                ));
            }
            if let Some(leaf) = chain.first() {
                check_name_constraints(c, leaf)?;
            }
        }
        if kind == CertType::Intermediate && !c.is_ca() {
            return Err(VerifyError::NotAuthorizedToSign);
        }
        if let Some((_, Some(max))) = c.basic_constraints
            && chain.len().saturating_sub(1) > max as usize
        {
            return Err(VerifyError::TooManyIntermediates);
        }
        Ok(())
    }

    /// Go's `buildChains`: every chain from the end of `chain` to a root.
    fn build_chains<'c>(
        &'c self,
        chain: Vec<&'c Cert>,
        checks: &mut usize,
    ) -> Result<Vec<Vec<&'c Cert>>, VerifyError> {
        let c = *chain.last().expect("a chain starts with its leaf");
        let mut chains = Vec::new();
        let mut hint: Option<(String, String)> = None;
        let mut error = None;
        let candidates = potential_parents(self.roots, c)
            .into_iter()
            .map(|p| (CertType::Root, p))
            .chain(
                potential_parents(self.intermediates, c)
                    .into_iter()
                    .map(|p| (CertType::Intermediate, p)),
            );
        for (kind, candidate) in candidates {
            if candidate.public_key().is_none() || already_in_chain(candidate, &chain) {
                continue;
            }
            *checks += 1;
            if *checks > MAX_SIGNATURE_CHECKS {
                error = Some(VerifyError::SignatureCheckLimit);
                continue;
            }
            if let Err(e) = check_signature_from(c, candidate, self.algorithms) {
                hint.get_or_insert((e, candidate.hint_name()));
                continue;
            }
            if let Err(e) = self.is_valid(candidate, kind, &chain) {
                hint.get_or_insert((e.to_string(), candidate.hint_name()));
                continue;
            }
            let mut longer = chain.clone();
            longer.push(candidate);
            match kind {
                CertType::Root => chains.push(longer),
                _ => match self.build_chains(longer, checks) {
                    Ok(found) => chains.extend(found),
                    Err(e) => error = Some(e),
                },
            }
        }
        if !chains.is_empty() {
            return Ok(chains);
        }
        Err(error.unwrap_or(VerifyError::UnknownAuthority { hint }))
    }
}

/// The certificates of `pool` that may have issued `c`, as Go's `findPotentialParents`
/// orders them: those whose subject is `c`'s issuer, key identifiers matching first.
fn potential_parents<'p>(pool: &'p [Cert], c: &Cert) -> Vec<&'p Cert> {
    let mut by_rank: [Vec<&Cert>; 3] = Default::default();
    for candidate in pool.iter().filter(|p| p.subject == c.issuer) {
        let rank = match (&candidate.subject_key_id, &c.authority_key_id) {
            (s, a) if s == a => 0,
            (None, Some(_)) | (Some(_), None) => 1,
            _ => 2,
        };
        by_rank[rank].push(candidate);
    }
    by_rank.into_iter().flatten().collect()
}

/// Whether `candidate` (same subject, key and SANs) is already in `chain`.
fn already_in_chain(candidate: &Cert, chain: &[&Cert]) -> bool {
    chain.iter().any(|c| {
        c.subject == candidate.subject && c.spki == candidate.spki && c.san_raw == candidate.san_raw
    })
}

/// Go's `CheckSignatureFrom`: `parent` may sign certificates and its key signed `c`. The error
/// is Go's text (it becomes the hint of an unknown authority).
fn check_signature_from(
    c: &Cert,
    parent: &Cert,
    algorithms: &WebPkiSupportedAlgorithms,
) -> Result<(), String> {
    let violation =
        "x509: invalid signature: parent certificate cannot sign this kind of certificate";
    if (parent.v3 && parent.basic_constraints.is_none())
        || matches!(parent.basic_constraints, Some((false, _)))
    {
        return Err(violation.into());
    }
    // keyCertSign is bit 5 (x509-parser numbers the bits from digitalSignature = 1 << 0).
    if let Some(flags) = parent.key_usage
        && flags != 0
        && flags & (1 << 5) == 0
    {
        return Err(violation.into());
    }
    let Some((key_algorithm, key)) = parent.public_key() else {
        return Err("x509: cannot verify signature: algorithm unimplemented".into());
    };
    let mut matched = false;
    for alg in algorithms.all {
        if alg.public_key_alg_id().as_ref() != key_algorithm
            || alg.signature_alg_id().as_ref() != c.signature_algorithm.as_slice()
        {
            continue;
        }
        matched = true;
        if alg.verify_signature(key, &c.tbs, &c.signature).is_ok() {
            return Ok(());
        }
    }
    if !matched {
        return Err("x509: cannot verify signature: algorithm unimplemented".into());
    }
    Err(signature_failure(key_algorithm).into())
}

/// Go's text of a signature that does not verify, by the key's algorithm.
fn signature_failure(key_algorithm: &[u8]) -> &'static str {
    // The DER of the OIDs id-ecPublicKey (1.2.840.10045.2.1) and id-Ed25519 (1.3.101.112).
    const EC: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    const ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];
    if key_algorithm.starts_with(EC) {
        "x509: ECDSA verification failure"
    } else if key_algorithm.starts_with(ED25519) {
        "x509: Ed25519 verification failure"
    } else {
        "crypto/rsa: verification error"
    }
}

/// Go's `checkChainForKeyUsage` for `serverAuth`: every certificate of the chain that lists
/// extended key usages allows it (or any usage).
fn allows_server_auth(chain: &[&Cert]) -> bool {
    chain
        .iter()
        .all(|c| c.eku.as_ref().is_none_or(|e| e.any || e.server_auth))
}

/// Go's `VerifyHostname`: an IP against the IP SANs, a name against the DNS SANs (wildcards
/// in the leftmost label of valid names), never the common name.
pub(crate) fn verify_hostname(c: &Cert, host: &str) -> Result<(), VerifyError> {
    let candidate_ip = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = candidate_ip.parse::<IpAddr>() {
        if c.ip_addresses.iter().any(|a| same_ip(a, &ip)) {
            return Ok(());
        }
        return Err(hostname_error(c, candidate_ip));
    }
    let name = host.to_ascii_lowercase();
    let valid_name = valid_hostname(&name, false);
    for pattern in &c.dns_names {
        let matched = if valid_name && valid_hostname(pattern, true) {
            match_hostnames(pattern, &name)
        } else {
            match_exactly(pattern, &name)
        };
        if matched {
            return Ok(());
        }
    }
    Err(hostname_error(c, host))
}

fn same_ip(a: &IpAddr, b: &IpAddr) -> bool {
    let v6 = |ip: &IpAddr| match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => *v6,
    };
    v6(a) == v6(b)
}

/// Go's `HostnameError.Error`.
fn hostname_error(c: &Cert, host: &str) -> VerifyError {
    if !c.has_san && match_hostnames(&c.common_name, host) {
        return VerifyError::LegacyCommonName;
    }
    let valid = if host.parse::<IpAddr>().is_ok() {
        if c.ip_addresses.is_empty() {
            return VerifyError::NoIpSans(host.to_string());
        }
        c.ip_addresses
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        c.dns_names.join(", ")
    };
    if valid.is_empty() {
        return VerifyError::NoNames(host.to_string());
    }
    VerifyError::Hostname {
        valid,
        host: host.to_string(),
    }
}

fn match_exactly(a: &str, b: &str) -> bool {
    if a.is_empty() || a == "." || b.is_empty() || b == "." {
        return false;
    }
    a.eq_ignore_ascii_case(b)
}

/// Go's `matchHostnames`: same number of labels, a `*` leftmost label matches any label.
fn match_hostnames(pattern: &str, host: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host);
    if pattern.is_empty() || host.is_empty() {
        return false;
    }
    let pattern_parts: Vec<&str> = pattern.split('.').collect();
    let host_parts: Vec<&str> = host.split('.').collect();
    if pattern_parts.len() != host_parts.len() {
        return false;
    }
    pattern_parts
        .iter()
        .zip(&host_parts)
        .enumerate()
        .all(|(i, (p, h))| (i == 0 && *p == "*") || p == h)
}

/// Go's `validHostname`: labels of letters, digits, `-` (not first) and `_`; a pattern may
/// start with a `*` label.
fn valid_hostname(host: &str, pattern: bool) -> bool {
    let host = if pattern {
        host
    } else {
        host.strip_suffix('.').unwrap_or(host)
    };
    if host.is_empty() || host == "*" {
        return false;
    }
    host.split('.').enumerate().all(|(i, part)| {
        !part.is_empty()
            && ((pattern && i == 0 && part == "*")
                || part
                    .chars()
                    .enumerate()
                    .all(|(j, c)| c.is_ascii_alphanumeric() || (c == '-' && j != 0) || c == '_'))
    })
}

/// Go's name constraint checks of the leaf's DNS and IP SANs against `ca`.
fn check_name_constraints(ca: &Cert, leaf: &Cert) -> Result<(), VerifyError> {
    for name in &leaf.dns_names {
        let excluded = ca
            .excluded
            .dns
            .iter()
            .find(|c| match_domain_constraint(name, c));
        if let Some(c) = excluded {
            return Err(VerifyError::NameConstraint(format!(
                "DNS name {name:?} is excluded by constraint {c:?}"
            )));
        }
        if !ca.permitted.dns.is_empty()
            && !ca
                .permitted
                .dns
                .iter()
                .any(|c| match_domain_constraint(name, c))
        {
            return Err(VerifyError::NameConstraint(format!(
                "DNS name {name:?} is not permitted by any constraint"
            )));
        }
    }
    for ip in &leaf.ip_addresses {
        let text = ip.to_string();
        if ca.excluded.ip.iter().any(|c| match_ip_constraint(ip, c)) {
            return Err(VerifyError::NameConstraint(format!(
                "IP address {text:?} is excluded by constraint"
            )));
        }
        if !ca.permitted.ip.is_empty()
            && !ca.permitted.ip.iter().any(|c| match_ip_constraint(ip, c))
        {
            return Err(VerifyError::NameConstraint(format!(
                "IP address {text:?} is not permitted by any constraint"
            )));
        }
    }
    Ok(())
}

/// Go's `matchDomainConstraint` (a leading `.` requires at least one more label).
fn match_domain_constraint(domain: &str, constraint: &str) -> bool {
    if constraint.is_empty() {
        return true;
    }
    let (must_have_subdomains, constraint) = match constraint.strip_prefix('.') {
        Some(c) => (true, c),
        None => (false, constraint),
    };
    let reverse = |d: &str| -> Vec<String> {
        d.trim_end_matches('.')
            .rsplit('.')
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let (domain, constraint) = (reverse(domain), reverse(constraint));
    if domain.len() < constraint.len() || (must_have_subdomains && domain.len() == constraint.len())
    {
        return false;
    }
    constraint.iter().zip(&domain).all(|(c, d)| c == d)
}

fn match_ip_constraint(ip: &IpAddr, (net, mask): &(Vec<u8>, Vec<u8>)) -> bool {
    let bytes = match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    bytes.len() == net.len()
        && bytes
            .iter()
            .zip(net)
            .zip(mask)
            .all(|((b, n), m)| b & m == n & m)
}

/// A time as Go's `time.RFC3339` prints a UTC time.
fn rfc3339(seconds: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp(seconds, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| seconds.to_string())
}
